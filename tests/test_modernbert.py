"""ModernBERT checkpoints (issue 35, point 3; lab.modernbert): transformers' ModernBertForMaskedLM
and ModernBertModel load in the lab with the same numbers, lab models of ModernBERT's shape save
in ModernBERT's layout and load in transformers with the same numbers, what the lab cannot build
is refused by name, and every view of explore works on such a model.

Random weights (moved off their init, so every norm and bias counts), eval mode, fp32: logits,
every hidden state and every attention map agree within 1e-5 at the real tokens, at lengths
shorter and longer than the local window (8 tokens: a token sees 4 either side), with and
without padding.
"""

import json

import pytest
import torch

import lab
from lab import explore, modernbert
from lab.checkpoint import saved_model_class
from lab.figures import numbers, plotly_figures
from lab.files import CHECKPOINTS_DIR, CONFIG_NAME, checkpoint_name
from lab.inspect import attribution, probing
from tests.conftest import tiny_config

transformers = pytest.importorskip("transformers")

V, WINDOW = 90, 8
LENGTHS = (5, 13, 40)  # within the window, longer than it, five windows


def hf_config(layers=4, every=2, **overrides):
    """A tiny ModernBertConfig; special ids inside the vocabulary; biases off as ModernBERT has them."""
    values = dict(
        vocab_size=V,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=layers,
        num_attention_heads=4,
        global_attn_every_n_layers=every,
        local_attention=WINDOW,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
        cls_token_id=2,
        sep_token_id=3,
        attn_implementation="eager",  # attention maps
    )
    return transformers.ModernBertConfig(**values | overrides)


def modern_config(vocab_size=V, layers=3, every=3, **overrides) -> lab.BertConfig:
    """A lab BertConfig of ModernBERT's shape: every switch of lab.modern on, no segments."""
    values = dict(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=64,
        type_vocab_size=0,
        layer_norm_eps=1e-5,
        norm_position="pre",
        feed_forward="glu",
        position_embedding_type="rotary",
        rope_theta=160_000.0,
        local_rope_theta=10_000.0,
        bias=False,
        local_attention=WINDOW,
        global_attn_every_n_layers=every,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return lab.BertConfig(**values | overrides)


def scrambled(model, seed=0):
    """Every parameter moved by N(0, 0.1): LayerNorm gains off 1, the word bias off 0."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
    return model.eval()


def inputs(T, padded, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, V, (3, T), generator=g)
    if not padded:
        return ids, None
    mask = torch.ones(3, T, dtype=torch.long)
    mask[1, T // 2 + 1 :] = 0
    mask[2, 3:] = 0
    return ids.masked_fill(mask == 0, 0), mask


def compare(ours, theirs, ids, mask) -> float:
    """Assert the lab's and transformers' outputs equal at the real tokens; the largest difference."""
    with torch.no_grad():
        a = ours(ids, attention_mask=mask, output_attentions=True, output_hidden_states=True)
        b = theirs(input_ids=ids, attention_mask=mask, output_attentions=True, output_hidden_states=True)
        fast = ours(ids, attention_mask=mask)  # PyTorch's fused attention, no maps
    real = torch.ones_like(ids, dtype=torch.bool) if mask is None else mask.bool()
    assert len(a.hidden_states) == len(b.hidden_states) == ours.config.num_hidden_layers + 1
    pairs = [(x[real], y[real]) for x, y in zip(a.hidden_states, b.hidden_states)]
    if a.mlm_logits is not None:
        pairs += [(a.mlm_logits[real], b.logits[real]), (fast.mlm_logits[real], b.logits[real])]
    else:
        pairs += [(a.last_hidden_state[real], b.last_hidden_state[real])]
        pairs += [(fast.last_hidden_state[real], b.last_hidden_state[real])]
    both = real[:, None, :, None] & real[:, None, None, :]  # (B, 1, T, T) a real query and a real key
    pairs += [(x.masked_fill(~both, 0), y.masked_fill(~both, 0)) for x, y in zip(a.attentions, b.attentions)]
    for x, y in pairs:
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)
    return max((x - y).abs().max().item() for x, y in pairs)


# ----------------------------------------------------------------------------------------
# transformers -> the lab
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "hf_class, lab_class, layers, every",
    [("ModernBertForMaskedLM", lab.BertForMaskedLM, 4, 2), ("ModernBertModel", lab.BertModel, 3, 3)],
)
def test_a_modernbert_checkpoint_loads_with_the_same_numbers(tmp_path, hf_class, lab_class, layers, every):
    torch.manual_seed(0)
    theirs = scrambled(getattr(transformers, hf_class)(hf_config(layers, every)))
    theirs.save_pretrained(tmp_path)
    ours, tok, report = lab.load(tmp_path, return_report=True)
    assert type(ours) is lab_class and tok is None and not report.unexpected
    assert saved_model_class(tmp_path) == lab_class.__name__
    assert [k for k in report.missing if not k.startswith("pooler.")] == []  # ModernBERT has no pooler
    cfg = ours.config
    assert (cfg.local_attention, cfg.global_attn_every_n_layers, cfg.type_vocab_size) == (WINDOW, every, 0)
    assert (cfg.rope_theta, cfg.local_rope_theta, cfg.bias, cfg.layer_norm_eps) == (160_000, 10_000, False, 1e-5)
    worst = max(compare(ours, theirs, *inputs(T, padded)) for T in LENGTHS for padded in (False, True))
    assert worst < 1e-5  # measured: about 1e-6 on these scrambled weights


def test_other_modernbert_heads_and_model_types_are_refused_by_name(tmp_path):
    torch.manual_seed(0)
    transformers.ModernBertForSequenceClassification(hf_config()).save_pretrained(tmp_path / "cls")
    with pytest.raises(ValueError, match=r"classifier\.weight.*ModernBertForMaskedLM"):
        lab.load(tmp_path / "cls")
    (tmp_path / "roberta").mkdir()
    (tmp_path / "roberta" / CONFIG_NAME).write_text(json.dumps({"model_type": "roberta", "vocab_size": V}))
    with pytest.raises(ValueError, match="model_type is 'roberta'"):
        lab.load(tmp_path / "roberta")


# ----------------------------------------------------------------------------------------
# the lab -> transformers
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "lab_class, hf_class", [(lab.BertForMaskedLM, "ModernBertForMaskedLM"), (lab.BertModel, "ModernBertModel")]
)
def test_a_lab_model_of_modernbert_s_shape_saves_in_its_layout(tmp_path, lab_class, hf_class):
    torch.manual_seed(0)
    ours = scrambled(lab_class(modern_config(layers=4, every=2)))
    lab.save(ours, None, tmp_path)
    config = json.loads((tmp_path / CONFIG_NAME).read_text())
    assert config["model_type"] == "modernbert" and config["architectures"] == [hf_class]
    assert config["layer_types"] == ["full_attention", "sliding_attention"] * 2
    theirs, info = getattr(transformers, hf_class).from_pretrained(
        tmp_path, attn_implementation="eager", output_loading_info=True
    )
    assert not (info["missing_keys"] or info["unexpected_keys"] or info["mismatched_keys"]), info
    if hf_class == "ModernBertForMaskedLM":
        assert type(transformers.AutoModelForMaskedLM.from_pretrained(tmp_path)).__name__ == hf_class
    worst = max(compare(ours, theirs.eval(), *inputs(T, padded)) for T in LENGTHS for padded in (False, True))
    assert worst < 1e-5
    back = lab.load(tmp_path)[0]  # and back into the lab, tensor for tensor
    mine = {k: v for k, v in ours.state_dict().items() if not k.startswith("pooler.")}
    assert type(back) is lab_class and all(torch.equal(v, back.state_dict()[k]) for k, v in mine.items())


def test_the_config_goes_both_ways_and_only_modernbert_s_shape_leaves_the_lab_layout(tmp_path):
    cfg = modern_config(layers=5, every=2, hidden_act="gelu_new", rope_theta=8000.0, bias=True)
    again = modernbert.config_from_modernbert(modernbert.config_to_modernbert(cfg))
    assert again.to_dict() == {**cfg.to_dict(), "classifier_dropout": 0.0}  # None: hidden_dropout_prob's
    every_layer_global = modern_config(local_attention=0, global_attn_every_n_layers=1)
    exported = modernbert.config_to_modernbert(every_layer_global)
    assert set(exported["layer_types"]) == {"full_attention"}
    assert modernbert.config_from_modernbert(exported).local_attention == 0
    # one switch off, or a head ModernBERT lacks: the lab's own layout, as before
    for name, model in [
        ("pre", lab.BertForMaskedLM(modern_config(norm_position="post"))),
        ("nsp", lab.BertForPreTraining(modern_config())),
    ]:
        lab.save(model, None, tmp_path / name)
        assert json.loads((tmp_path / name / CONFIG_NAME).read_text())["model_type"] == "bert-lab"
        assert type(lab.load(tmp_path / name)[0]) is type(model)
    with pytest.raises(ValueError, match=r"norm_position is 'post' \(ModernBERT: 'pre'\).*type_vocab_size is 2"):
        modernbert.config_to_modernbert(modern_config(norm_position="post", type_vocab_size=2))


@pytest.mark.parametrize(
    "change, named",
    [
        ({"attention_bias": True}, "attention_bias=True, mlp_bias=False"),
        ({"decoder_bias": False}, "decoder_bias=False"),
        ({"tie_word_embeddings": False}, "tie_word_embeddings=False"),
        ({"hidden_activation": "silu"}, "hidden_activation 'silu'"),
        ({"classifier_activation": "relu"}, "classifier_activation 'relu' differs"),
        ({"layer_types": ["full_attention", "full_attention", "sliding_attention"]}, "layer_types"),
        ({"rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 4.0}}}, "rope_parameters"),
        ({"rope_scaling": {"type": "linear", "factor": 2.0}}, "rope_scaling"),
        ({"pad_token_id": None}, "pad_token_id is null"),
        ({"local_attention": 128}, "local_attention"),  # longer than max_position_embeddings
    ],
)
def test_what_the_lab_cannot_build_is_refused_naming_the_field(tmp_path, change, named):
    config = modernbert.config_to_modernbert(modern_config(every=2)) | {"architectures": ["ModernBertModel"]}
    (tmp_path / CONFIG_NAME).write_text(json.dumps(config | change))
    with pytest.raises(ValueError, match="cannot build|invalid BertConfig") as e:
        lab.load(tmp_path)
    assert named in str(e.value) and str(tmp_path) in str(e.value)


def test_the_hub_accepts_modernbert_and_refuses_what_it_cannot_build_before_the_weights(tmp_path, hub):
    torch.manual_seed(0)
    tok = lab.Tokenizer.train(iter(["the cat sat on the mat ."] * 20), vocab_size=50, show_progress=False)
    model = lab.BertForMaskedLM(modern_config(vocab_size=tok.vocab_size)).eval()
    lab.save(model, tok, tmp_path / "mine")
    hub.publish("lab-test/modern", tmp_path / "mine")
    back, tok_back = lab.load("lab-test/modern")
    assert type(back) is lab.BertForMaskedLM and tok_back.vocab_size == tok.vocab_size
    config = json.loads((tmp_path / "mine" / CONFIG_NAME).read_text())
    assert (config["cls_token_id"], config["sep_token_id"]) == (tok.cls_token_id, tok.sep_token_id)
    files = {p.name: p.read_bytes() for p in (tmp_path / "mine").iterdir()}
    hub.publish("lab-test/yarn", files | {CONFIG_NAME: json.dumps(config | {"rope_scaling": {"factor": 2}}).encode()})
    with pytest.raises(ValueError, match="rope_scaling"):
        lab.load("lab-test/yarn")
    assert set(hub.asked("lab-test/yarn")) == {CONFIG_NAME}


# ----------------------------------------------------------------------------------------
# explore and the dashboard's views on a ModernBERT-shaped model
# ----------------------------------------------------------------------------------------
TEXT = "the cat sat on the mat . the dog ran in the park ."


@pytest.fixture(scope="module", name="modern")
def modern_fixture(tmp_path_factory):
    """A lab-saved, lab-loaded ModernBERT-shaped BertForMaskedLM with a lab tokenizer."""
    tok = lab.Tokenizer.train(iter([TEXT] * 30), vocab_size=60, show_progress=False)
    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("modern")
    lab.save(scrambled(lab.BertForMaskedLM(modern_config(vocab_size=tok.vocab_size))), tok, directory)
    model, tok = lab.load(directory)
    return model, tok, directory


def test_the_mlm_views_work_on_a_modernbert_shaped_model(modern):
    model, tok, _ = modern
    assert explore.model_tasks(model) == {"attention", "embeddings", "fill_mask"}
    fill = explore.fill_mask(model, tok, "the [MASK] sat on the mat .", top_k=5)
    lens = explore.logit_lens(model, tok, "the [MASK] sat on the mat .", top_k=5)
    assert lens.num_layers == model.config.num_hidden_layers and len(lens.top[0]) == lens.num_layers + 1
    assert [w for w, _ in lens.top[0][-1]] == [w for w, _ in fill[0]]  # the last layer is fill_mask's answer
    assert [p for _, p in lens.top[0][-1]] == pytest.approx([p for _, p in fill[0]], abs=1e-6)
    ablation = explore.ablate_heads(model, tok, "the [MASK] sat on the mat .")
    assert ablation.effect.shape == (3, 4) and torch.isfinite(ablation.effect).all()
    with pytest.raises(ValueError, match="no next-sentence head"):
        explore.next_sentence(model, tok, "the cat sat .", "the dog ran .")
    masked = TEXT.replace("cat", "[MASK]")
    r = explore.attributions(model, tok, masked)
    assert r.task == "fill_mask" and len(r.scores) == len(r.tokens) and r.completeness_error < 0.05
    compared = attribution.attention_vs_attribution(explore.attention(model, tok, masked), r)
    assert compared.layer == model.config.num_hidden_layers - 1
    preview = explore.corruption_preview(tok, TEXT)
    assert preview and explore.corruption_tally(tok, TEXT, draws=10)["draws"] == 10


def test_attention_and_queries_and_keys_show_the_local_window_and_the_rotation(modern):
    model, tok, _ = modern
    qk = explore.queries_and_keys(model, tok, TEXT)
    T, d = len(qk.tokens), model.config.head_size
    assert T > WINDOW and len(qk.attentions) == 3
    far = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).abs() > WINDOW // 2  # (T, T)
    for layer, (q, k, maps) in enumerate(zip(qk.queries, qk.keys, qk.attentions)):
        torch.testing.assert_close(maps.sum(-1), torch.ones(1, 4, T))
        scores = q @ k.transpose(-1, -2) / d**0.5  # (1, A, T, T): what the layer's softmax read
        if not model.config.is_global_layer(layer):
            assert maps[..., far].abs().max() == 0  # a local layer: nothing beyond +-4 tokens
            scores = scores.masked_fill(far, float("-inf"))
        torch.testing.assert_close(scores.softmax(-1), maps, atol=1e-5, rtol=1e-4)
    plain = explore.attention(model, tok, TEXT)
    assert all(torch.equal(a, b) for a, b in zip(plain.attentions, qk.attentions))


def test_the_embeddings_view_says_what_a_modern_model_does_not_add(modern):
    model, tok, _ = modern
    r = explore.embeddings(model, tok, "the cat sat .", "the dog ran .")
    assert set(r.missing) == {"segment", "position"} and "no position embeddings" in r.note
    assert torch.equal(r.segment, torch.zeros_like(r.token)) and torch.equal(r.total, r.token)
    ids = torch.tensor([tok.encode("the cat sat .", "the dog ran .").input_ids])
    with torch.no_grad():
        torch.testing.assert_close(r.normalized, model.bert.embeddings(ids, None)[0])
    titles = [p.title for p in numbers.embedding_components(r).panels]
    assert "none in this model" in titles[1] and "none in this model" in titles[2] and titles[3] == "sum = token"
    assert plotly_figures.embedding_components(r) is not None
    bert = explore.embeddings(lab.BertForMaskedLM(modern_config(norm_position="post", type_vocab_size=2)), tok, "a")
    assert set(bert.missing) == {"position"}
    assert explore.embeddings(lab.BertForMaskedLM(tiny_config(vocab_size=V)), tok, "a").note == ""


def test_probing_and_snapshots_read_a_modernbert_shaped_model(modern, tmp_path):
    model, tok, directory = modern
    words = [["the", "cat", "sat"], ["the", "dog", "ran"], ["a", "cat", "ran"]] * 4
    tags = [["DET", "NOUN", "VERB"]] * 12
    result = probing.probe_layers(model, tok, words, tags, baselines=True)
    assert len(result.accuracy) == model.config.num_hidden_layers + 1 and result.control is not None
    for step in (0, 10):  # a run's snapshots, each in ModernBERT's layout
        lab.save(model, tok, tmp_path / CHECKPOINTS_DIR / checkpoint_name(step))
    found = explore.checkpoint_predictions(tmp_path, "the [MASK] sat .")
    assert [step for step, _ in found] == [0, 10] and found[0][1][0] == found[1][1][0]


def test_a_modernbert_checkpoint_fine_tunes_as_a_classifier(modern, tmp_path):
    """finetune-cls reads a ModernBERT directory's config.json (converted) and trains a head on it."""
    from lab.training.finetune import ClassificationConfig, finetune_classification
    from lab.training.train import TrainConfig

    _, _, directory = modern
    rows = "sentence\tlabel\n" + "".join(f"{t}\t{i % 2}\n" for i, t in enumerate(TEXT.split(" . ") * 4))
    (tmp_path / "train.tsv").write_text(rows)
    task = ClassificationConfig(
        model=str(directory), train=str(tmp_path / "train.tsv"), dev=str(tmp_path / "train.tsv")
    )
    tc = TrainConfig(out_dir=str(tmp_path / "run"), steps=2, batch_size=4, eval_every=2, log_every=0)
    result = finetune_classification(task, tc, log=lambda *_: None)
    assert 0.0 <= result["accuracy"] <= 1.0
    tuned, _ = lab.load(tmp_path / "run")
    assert type(tuned).__name__ == "BertForSequenceClassification" and tuned.config.norm_position == "pre"
