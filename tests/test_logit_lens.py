"""explore.logit_lens: the masked-LM head read at every layer (issue 22, point 1). Its last layer
is fill_mask to the bit; ranks and probabilities agree with the top-k lists; models without an
MLM head are refused with a message."""

import pytest
import torch

import lab
from lab import explore
from tests.conftest import BUNDLED, ROOT, downloaded_csv, figure_spec, tiny_config


@pytest.fixture(scope="module")
def classroom():
    return lab.load(ROOT / BUNDLED)


@pytest.mark.parametrize(
    "text", ["it is a truth universally [MASK] .", "she opened the [MASK] and [MASK] into the garden ."]
)
def test_the_last_layer_is_fill_mask(classroom, text):
    model, tok = classroom
    lens = explore.logit_lens(model, tok, text, top_k=5)
    assert [layers[-1] for layers in lens.top] == list(explore.fill_mask(model, tok, text, top_k=5))
    assert lens.final == [layers[-1][0][0] for layers in lens.top]
    assert lens.num_layers == model.config.num_hidden_layers
    assert lens.mask_positions == [i for i, t in enumerate(lens.tokens) if t == "[MASK]"]


def test_ranks_and_probabilities_agree_with_each_layer(classroom):
    model, tok = classroom
    lens = explore.logit_lens(model, tok, "she opened the [MASK] and walked in .", top_k=20)
    for m, layers in enumerate(lens.top):
        assert len(layers) == model.config.num_hidden_layers + 1  # the embeddings, then each layer
        for layer, guesses in enumerate(layers):
            probs = [p for _, p in guesses]
            assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6
            rank, p = lens.final_rank[m][layer], lens.final_probability[m][layer]
            listed = [t for t, _ in guesses]
            if lens.final[m] in listed:  # its place in the list is its rank, with its probability
                assert rank == listed.index(lens.final[m]) + 1
                assert p == pytest.approx(guesses[rank - 1][1])
            else:
                assert rank > len(listed) and p <= probs[-1]
        assert lens.final_rank[m][-1] == 1
        first = lens.first_layer_right(m)
        assert all(r == 1 for r in lens.final_rank[m][first:]) and (first == 0 or lens.final_rank[m][first - 1] > 1)


def test_models_without_a_masked_lm_head_and_texts_without_a_mask(classroom):
    _, tok = classroom
    classifier = lab.BertForSequenceClassification(tiny_config(vocab_size=tok.vocab_size))
    with pytest.raises(ValueError, match="no masked-LM head"):
        explore.logit_lens(classifier, tok, "a [MASK] .")
    model, _ = classroom
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        explore.logit_lens(model, tok, "no mask here .")
    with pytest.raises(ValueError, match="top_k"):
        explore.logit_lens(model, tok, "a [MASK] .", top_k=0)
    model.train()
    explore.logit_lens(model, tok, "a [MASK] .")
    assert model.training  # the mode is put back
    model.eval()
    assert not any(p.grad is not None for p in model.parameters()) and torch.is_grad_enabled()


def test_the_masked_lm_tab_reads_every_layer(dash):
    """The Masked LM tab's "layer by layer" view: the figure (a heatmap per [MASK] with the final
    answer's probability beside it), its CSV, a status saying from which layer the answer leads;
    a model without a masked-LM head gets a one-line message, not a figure."""
    import csv

    from tests.conftest import BUNDLED

    tab = dash.tab("mlm")
    fig, path, status = tab.lens(BUNDLED, "she opened the [MASK] and walked in .")
    spec = figure_spec(fig)
    kinds = [t["type"] for t in spec["data"]]
    assert kinds == ["heatmap", "scatter"], kinds
    heat = spec["data"][0]
    assert len(heat["text"]) == lab.load(ROOT / BUNDLED)[0].config.num_hidden_layers + 1  # a row per layer
    rows = list(csv.DictReader(downloaded_csv(path).splitlines()))
    assert {r["layer"] for r in rows} == {str(i) for i in range(len(heat["text"]))}
    assert "is the top guess from" in status and "[MASK] 1" in status
    fig, path, status = tab.lens("models/bert-lab-sst2", "a [MASK] .")
    assert fig is None and path is None and "has no masked-LM head" in status, status
