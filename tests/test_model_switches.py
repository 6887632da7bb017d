"""What changed since BERT, as model settings (issue 35, point 2; lab.modern): pre-norm, GeGLU,
rotary positions, no biases, local attention. Each works alone and combined; the default stays
the paper's model; checkpoints rebuild the right model; impossible combinations are refused."""

import itertools
import json

import pytest
import torch

import lab
from lab import BertConfig
from lab.modern import apply_rotary, local_mask
from tests.test_model import batch

SWITCHES = {
    "pre-norm": {"norm_position": "pre"},
    "geglu": {"feed_forward": "glu"},
    "rotary": {"position_embedding_type": "rotary"},
    "no biases": {"bias": False},
    "local attention": {"local_attention": 4, "global_attn_every_n_layers": 2},
}
# every switch alone, and the combinations of two, three, four and all five
COMBINATIONS = [c for n in range(1, 6) for c in itertools.combinations(SWITCHES, n)]


def switched(names, **extra) -> BertConfig:
    values = dict(vocab_size=99, hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=48)
    for name in names:
        values |= SWITCHES[name]
    return BertConfig(**values | extra)


@pytest.mark.parametrize("names", COMBINATIONS, ids=lambda c: "+".join(c))
def test_each_switch_and_combination_builds_trains_and_counts(names):
    """Forward (both attention paths agree), backward, and the config's parameter formula equals
    the module's own count, with and without the pooler."""
    cfg = switched(names)
    model = lab.BertForPreTraining(cfg).eval()
    ids, types, mask = batch(cfg)
    fast = model(ids, types, mask).mlm_logits
    explicit = model(ids, types, mask, output_attentions=True)
    real = mask.bool()
    torch.testing.assert_close(fast[real], explicit.mlm_logits[real], atol=1e-5, rtol=1e-4)
    labels = torch.where(torch.rand(ids.shape, generator=torch.Generator().manual_seed(0)) < 0.3, ids, -100)
    model.train()
    out = model(ids, types, mask, mlm_labels=labels, nsp_label=torch.tensor([0, 1, 0]))
    out.loss.backward()
    assert torch.isfinite(out.loss)
    assert lab.BertModel(cfg).num_parameters() == cfg.num_parameters()
    assert lab.BertModel(cfg, add_pooling_layer=False).num_parameters() == cfg.num_parameters(pooler=False)


def test_a_config_says_which_changes_it_has():
    """modern.changes_of is changed's inverse, for every combination of the recipe's names."""
    from lab.modern import CHANGES, changed, changes_of

    shape = dict(vocab_size=99, hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=48)
    assert changes_of(BertConfig(**shape)) == []
    for n in range(1, len(CHANGES) + 1):
        for names in itertools.combinations(CHANGES, n):
            assert changes_of(BertConfig(**changed(shape, names, local_window=4))) == list(names), names


def test_the_default_is_the_paper_s_model_with_the_same_names():
    """No switch: the tensors and names transformers' BertModel has, and config.json says 'bert'."""
    cfg = switched([])
    names = set(lab.BertForPreTraining(cfg).state_dict())
    assert "bert.embeddings.position_embeddings.weight" in names
    assert "bert.encoder.layer.0.attention.output.LayerNorm.bias" in names
    assert not any("final_norm" in n for n in names)
    assert cfg.is_bert and cfg.to_dict()["model_type"] == "bert"
    assert not switched(["geglu"]).is_bert and switched(["geglu"]).to_dict()["model_type"] == "bert-lab"


def test_no_biases_leaves_only_the_word_bias():
    names = [n for n, _ in lab.BertForMaskedLM(switched(["no biases"])).named_parameters()]
    assert [n for n in names if n.endswith("bias")] == ["cls.predictions.bias"]


def test_pre_norm_moves_the_norms_and_adds_a_final_one():
    model = lab.BertModel(switched(["pre-norm"])).eval()
    layer0, layer1 = model.encoder.layer[0], model.encoder.layer[1]
    assert isinstance(layer0.attention.output.LayerNorm, torch.nn.Identity)  # the embeddings' norm serves
    assert isinstance(layer1.attention.output.LayerNorm, torch.nn.LayerNorm)
    ids, types, mask = batch(model.config)
    out = model(ids, types, mask, output_hidden_states=True)
    # the last hidden state is the final norm's output: mean 0, variance 1 over H at gain 1
    assert out.hidden_states[-1] is out.last_hidden_state
    torch.testing.assert_close(out.last_hidden_state.mean(-1), torch.zeros(3, 11), atol=1e-5, rtol=0)
    # the residual stream between layers is not normalised (a post-norm layer's output is)
    assert (out.hidden_states[2].std(-1, unbiased=False) - 1).abs().max() > 1e-3


def test_glu_gates_the_feed_forward():
    cfg = switched(["geglu"])
    inter = lab.BertModel(cfg).encoder.layer[0].intermediate
    assert inter.dense.weight.shape == (2 * cfg.intermediate_size, cfg.hidden_size)
    x = torch.randn(2, 5, cfg.hidden_size)
    value, gate = inter.dense(x).chunk(2, dim=-1)
    torch.testing.assert_close(inter(x), torch.nn.functional.gelu(value) * gate)


def test_rotary_scores_depend_on_the_distance_only():
    """q at position t against k at position s scores the same as at t + c, s + c."""
    d, T = 8, 12
    cfg = BertConfig(hidden_size=16, num_attention_heads=2, position_embedding_type="rotary", vocab_size=10)
    cos, sin = lab.modern.Rotary(cfg)(T, "cpu")[True]
    q, k = torch.randn(d), torch.randn(d)
    rows = q.expand(1, 1, T, d), k.expand(1, 1, T, d)
    rq, rk = apply_rotary(*rows, cos, sin)
    scores = rq[0, 0] @ rk[0, 0].T  # (T, T): the same q and k placed at every position
    for c in (1, 5):
        torch.testing.assert_close(scores[: T - c, : T - c], scores[c:, c:], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(scores[0, 1], scores[0, 5])  # but the distance matters
    assert "position_embeddings" not in "".join(lab.BertModel(cfg).state_dict())


def test_local_layers_see_only_their_window():
    cfg = switched(["local attention"], max_position_embeddings=64)
    model = lab.BertModel(cfg).eval()
    ids = torch.randint(5, 99, (2, 20))
    with torch.no_grad():
        out = model(ids, output_attentions=True)
    far = (torch.arange(20)[:, None] - torch.arange(20)[None, :]).abs() > 2  # window 4: +-2
    assert [cfg.is_global_layer(i) for i in range(3)] == [True, False, True]
    assert float(out.attentions[1][:, :, far].abs().max()) == 0.0  # the local layer
    assert float(out.attentions[0][:, :, far].min()) > 0.0  # the global layers see everything
    band = local_mask(5, 2, None, "cpu")[0, 0].int().tolist()
    assert band[0] == [1, 1, 0, 0, 0] and band[2] == [0, 1, 1, 1, 0]


def test_checkpoints_record_the_switches_and_rebuild_the_model(tmp_path):
    cfg = switched(list(SWITCHES))
    model = lab.BertForMaskedLM(cfg).eval()
    lab.save(model, None, tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "bert-lab" and saved["norm_position"] == "pre" and saved["bias"] is False
    loaded, _ = lab.load(tmp_path)
    ids, types, mask = batch(cfg)
    torch.testing.assert_close(loaded(ids, types, mask).mlm_logits, model(ids, types, mask).mlm_logits)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"position_embedding_type": "rotary", "hidden_size": 12, "num_attention_heads": 4},
            "head size .* = 3 must be even",
        ),
        (
            {"local_attention": 600, "global_attn_every_n_layers": 3},
            r"local_attention \(600\) is larger .* max_position_embeddings \(512\)",
        ),
        ({"local_attention": 128}, "global_attn_every_n_layers=1: every layer is global"),
        ({"norm_position": "middle"}, "norm_position 'middle' is not one of"),
        ({"feed_forward": "swiglu"}, "feed_forward 'swiglu' is not one of"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type 'relative_key' is not one of"),
        ({"global_attn_every_n_layers": 0}, "global_attn_every_n_layers must be a positive integer"),
    ],
)
def test_impossible_combinations_are_refused_naming_the_settings(settings, message):
    with pytest.raises(ValueError, match=message):
        BertConfig(**{"hidden_size": 32, "num_attention_heads": 4, **settings})


def test_a_config_for_another_architecture_says_which(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "roberta"}))
    with pytest.raises(ValueError, match="model_type is 'roberta'"):
        BertConfig.load(tmp_path)
