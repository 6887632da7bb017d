"""lab.explore on a tiny model: what the dashboard and notebooks call."""
import pytest
import torch

import lab
from lab import explore
from tests.conftest import tiny_config


@pytest.fixture(scope="module")
def mlm():
    tok = lab.Tokenizer.train(iter(["the cat sat on the mat . the dog ran in the park ."] * 30),
                              vocab_size=60, show_progress=False)
    torch.manual_seed(0)
    model = lab.BertForPreTraining(tiny_config(vocab_size=tok.vocab_size)).eval()
    return model, tok


def test_fill_mask_one_list_per_mask_with_probabilities(mlm):
    model, tok = mlm
    result = explore.fill_mask(model, tok, "the [MASK] sat on the [MASK] .", top_k=4)
    assert len(result) == 2 and all(len(r) == 4 for r in result)
    for preds in result:
        probs = [p for _, p in preds]
        assert probs == sorted(probs, reverse=True) and all(0 < p < 1 for p in probs)
    # probabilities are a softmax over the whole vocabulary: top_k = V sums to 1
    full = explore.fill_mask(model, tok, "the [MASK] sat .", top_k=tok.vocab_size)
    assert abs(sum(p for _, p in full[0]) - 1) < 1e-4
    # they equal the model's own MLM logits at that position
    enc = tok.encode("the [MASK] sat .")
    logits = model(torch.tensor([enc.input_ids])).mlm_logits[0, enc.input_ids.index(tok.mask_token_id)]
    best = tok.convert_ids_to_tokens(int(logits.argmax()))
    assert full[0][0][0] == best
    # temperature flattens
    hot = explore.fill_mask(model, tok, "the [MASK] sat .", top_k=1, temperature=10.0)
    assert hot[0][0][1] < full[0][0][1]


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("   \x00\x07 ", "empty"), ("no mask here", "no \\[MASK\\]"),
    (" ".join(["[MASK]"] * 21), "at most 20"),
])
def test_fill_mask_bad_input(mlm, text, message):
    model, tok = mlm
    with pytest.raises(ValueError, match=message):
        explore.fill_mask(model, tok, text)


def test_fill_mask_needs_an_mlm_head_and_truncates_long_text(mlm):
    model, tok = mlm
    with pytest.raises(ValueError, match="no masked-LM head"):
        explore.fill_mask(lab.BertModel(model.config), tok, "the [MASK] .")
    long = "the [MASK] sat . " + "the cat sat on the mat . " * 40         # beyond 64 positions
    result = explore.fill_mask(model, tok, long)
    assert len(result) == 1 and result.truncated > 0 and len(result.tokens) == 64
