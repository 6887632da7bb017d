"""lab.studies.directions: visibility masks, encoding under a direction, influence, attention maps."""

import pytest
import torch

import lab
from lab.studies import directions
from tests.conftest import tiny_config

TEXT = [
    "the cat sat on the mat .",
    "the dog ran in the park .",
    "a bird sang in the tree .",
    "the sun was warm and the sky was blue .",
]


@pytest.fixture(scope="module")
def tok():
    return lab.Tokenizer.train(iter(TEXT * 20), vocab_size=80, show_progress=False)


@pytest.fixture(scope="module")
def mlm(tok):
    torch.manual_seed(0)
    return lab.BertForMaskedLM(
        tiny_config(vocab_size=tok.vocab_size, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    ).eval()


def test_visibility_masks():
    assert directions.visibility_mask(3, "bidirectional").all()
    l2r = directions.visibility_mask(3, "left_to_right")
    assert l2r.tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert torch.equal(directions.visibility_mask(3, "right_to_left"), l2r.T)
    with pytest.raises(ValueError, match="direction"):
        directions.visibility_mask(3, "sideways")


def test_direction_mask_combines_direction_and_padding():
    ids = torch.zeros(2, 3, dtype=torch.long)
    padding = torch.tensor([[1, 1, 1], [1, 1, 0]])
    assert directions.direction_mask(ids, "bidirectional") is None
    assert directions.direction_mask(ids, "bidirectional", padding) is padding
    mask = directions.direction_mask(ids, "left_to_right", padding)
    assert mask.shape == (2, 3, 3) and mask.dtype == torch.bool
    assert mask[0].tolist() == directions.visibility_mask(3, "left_to_right").tolist()
    assert mask[1].int().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 0]]  # the padded key is hidden
    with pytest.raises(ValueError, match="direction"):
        directions.direction_mask(ids, "sideways")


def test_encode_bidirectional_is_the_models_own_forward(mlm):
    ids = torch.randint(5, mlm.config.vocab_size, (2, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    ours = directions.encode(mlm, ids, "bidirectional", attention_mask=mask, output_attentions=True)
    ref = mlm(ids, attention_mask=mask, output_attentions=True)
    assert torch.allclose(ours.last_hidden_state, ref.last_hidden_state, atol=1e-6)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(ours.attentions, ref.attentions))


def test_left_to_right_is_causal_and_equals_running_each_prefix(mlm):
    ids = torch.randint(5, mlm.config.vocab_size, (1, 8))
    out = directions.encode(mlm, ids, "left_to_right", output_attentions=True)
    for a in out.attentions:  # no weight on the future
        assert torch.all(a[0].triu(diagonal=1) == 0)
    for t in range(1, 9):  # position t-1 only depends on the prefix:
        prefix = directions.encode(mlm, ids[:, :t], "left_to_right").last_hidden_state  # (1, t, H)
        assert torch.allclose(out.last_hidden_state[0, :t], prefix[0], atol=1e-5)  # the future changes nothing
    # (a bidirectional run of the prefix differs: with 2 layers, earlier positions saw each other)
    # right-to-left mirrors it: changing the first token changes no other position's output
    other = ids.clone()
    other[0, 0] = 5 if int(ids[0, 0]) != 5 else 6
    a = directions.encode(mlm, ids, "right_to_left").last_hidden_state
    b = directions.encode(mlm, other, "right_to_left").last_hidden_state
    assert torch.allclose(a[0, 1:], b[0, 1:]) and not torch.allclose(a[0, 0], b[0, 0])


def test_influence_is_zero_exactly_where_a_position_cannot_see(mlm):
    ids = torch.randint(5, mlm.config.vocab_size, (6,))
    l2r = directions.influence(mlm, ids, "left_to_right")
    seen = directions.visibility_mask(6, "left_to_right")
    assert torch.all(l2r[~seen] == 0) and torch.all(l2r[seen] > 0)
    bi = directions.influence(mlm, ids, "bidirectional")
    assert torch.all(bi > 0) and torch.allclose(bi.sum(1), torch.ones(6))
    r2l = directions.influence(mlm, ids, "right_to_left")
    assert torch.all(r2l[~seen.T] == 0) and torch.all(r2l[seen.T] > 0)
    # the hook is gone and the model untouched: a plain forward pass still runs without gradients
    assert not mlm.bert.embeddings._forward_hooks and not mlm.training
    assert all(p.grad is None for p in mlm.parameters())


def test_directional_attention(tok, mlm):
    ids = torch.randint(5, mlm.config.vocab_size, (7,))
    result = directions.directional_attention(mlm, tok, ids, "left_to_right")
    assert len(result.tokens) == 7 and result.attentions[0].shape == (1, 4, 7, 7)
    stats = result.head_stats()
    assert stats["next"].max() == 0  # a left-to-right head never looks ahead
