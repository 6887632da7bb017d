"""The model: shapes, the two attention paths, head masking, sparse MLM, input errors, presets."""

import pytest
import torch

import lab
from lab import BertConfig
from tests.conftest import tiny_config

CLASSES = [
    lab.BertModel,
    lab.BertForPreTraining,
    lab.BertForMaskedLM,
    lab.BertForSequenceClassification,
    lab.BertForTokenClassification,
    lab.BertForQuestionAnswering,
]


def batch(cfg, B=3, T=11, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, cfg.vocab_size, (B, T), generator=g)
    types = torch.zeros(B, T, dtype=torch.long)
    types[:, 6:] = 1  # segment B
    mask = torch.ones(B, T, dtype=torch.long)
    mask[1, 8:] = 0  # padded rows
    mask[2, 4:] = 0
    ids[mask == 0] = 0
    return ids, types, mask


def test_preset_parameter_counts_match_the_paper():
    base = BertConfig.preset("base")
    large = BertConfig.preset("large")
    assert abs(base.num_parameters() - 110e6) / 110e6 < 0.01  # 109.5M
    assert 335e6 <= large.num_parameters() <= 340e6  # 335.1M
    # the formula counts what the module really holds
    for name in ("tiny", "mini"):
        cfg = BertConfig.preset(name)
        assert lab.BertModel(cfg).num_parameters() == cfg.num_parameters()
    assert BertConfig.preset("mini").intermediate_size == 4 * 256


@pytest.mark.parametrize("cls", CLASSES)
def test_output_shapes(cls):
    cfg = tiny_config(id2label={0: "a", 1: "b", 2: "c"})
    model = cls(cfg).eval()
    ids, types, mask = batch(cfg)
    out = model(ids, types, mask, output_attentions=True, output_hidden_states=True)
    assert out.last_hidden_state.shape == (3, 11, 32)
    assert len(out.hidden_states) == cfg.num_hidden_layers + 1
    assert len(out.attentions) == cfg.num_hidden_layers
    assert out.attentions[0].shape == (3, 4, 11, 11)
    torch.testing.assert_close(out.attentions[1].sum(-1), torch.ones(3, 4, 11))
    if cls is lab.BertForPreTraining:
        assert out.mlm_logits.shape == (3, 11, 99) and out.nsp_logits.shape == (3, 2)
    if cls is lab.BertForSequenceClassification:
        assert out.logits.shape == (3, 3)
    if cls is lab.BertForTokenClassification:
        assert out.logits.shape == (3, 11, 3) and out.pooler_output is None  # one tag per token, no pooler
    if cls is lab.BertForQuestionAnswering:
        assert out.start_logits.shape == (3, 11) and out.end_logits.shape == (3, 11)


def test_sdpa_path_equals_explicit_path(tiny_cfg):
    model = lab.BertForPreTraining(tiny_cfg).eval()
    ids, types, mask = batch(tiny_cfg)
    fast = model(ids, types, mask)
    slow = model(ids, types, mask, output_attentions=True)
    torch.testing.assert_close(fast.last_hidden_state, slow.last_hidden_state, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fast.mlm_logits, slow.mlm_logits, atol=1e-5, rtol=1e-5)
    # with a head mask too
    hm = torch.ones(2, 4)
    hm[0, 1] = 0
    torch.testing.assert_close(
        model(ids, types, mask, head_mask=hm).last_hidden_state,
        model(ids, types, mask, head_mask=hm, output_attentions=True).last_hidden_state,
        atol=1e-5,
        rtol=1e-5,
    )


def test_padding_does_not_leak(tiny_cfg):
    """A padded sequence gives the same vectors at its real positions as the unpadded one."""
    model = lab.BertModel(tiny_cfg).eval()
    ids, types, mask = batch(tiny_cfg)
    short = model(ids[2:3, :4], types[2:3, :4]).last_hidden_state
    padded = model(ids[2:3], types[2:3], mask[2:3]).last_hidden_state[:, :4]
    torch.testing.assert_close(short, padded, atol=1e-5, rtol=1e-5)


def test_silenced_head_changes_only_its_own_output(tiny_cfg):
    model = lab.BertModel(tiny_cfg).eval()
    ids, types, mask = batch(tiny_cfg)
    layer0 = model.encoder.layer[0].attention.self
    x = model.embeddings(ids, types)
    keep = torch.ones(4)
    silence = keep.clone()
    silence[2] = 0
    ctx_all, _ = layer0(x, None, keep)
    ctx_cut, _ = layer0(x, None, silence)
    d = tiny_cfg.head_size
    # head 2's slice of the concatenated context is zero; the other heads' slices are untouched
    assert torch.all(ctx_cut[..., 2 * d : 3 * d] == 0)
    torch.testing.assert_close(ctx_cut[..., : 2 * d], ctx_all[..., : 2 * d])
    torch.testing.assert_close(ctx_cut[..., 3 * d :], ctx_all[..., 3 * d :])
    # and the model output as a whole changes
    hm = torch.ones(2, 4)
    hm[0, 2] = 0
    out_cut = model(ids, types, mask, head_mask=hm, output_attentions=True)
    out_all = model(ids, types, mask, output_attentions=True)
    assert not torch.allclose(out_cut.last_hidden_state, out_all.last_hidden_state)
    assert torch.all(out_cut.attentions[0][:, 2] == 0)
    torch.testing.assert_close(out_cut.attentions[0][:, [0, 1, 3]], out_all.attentions[0][:, [0, 1, 3]])


def test_sparse_mlm_logits_match_dense(tiny_cfg):
    model = lab.BertForPreTraining(tiny_cfg).eval()
    ids, types, mask = batch(tiny_cfg)
    labels = torch.full_like(ids, -100)
    labels[0, 2], labels[1, 5], labels[2, 1] = 7, 8, 9
    sparse = model(ids, types, mask, mlm_labels=labels, nsp_label=torch.tensor([0, 1, 0]))
    dense = model(ids, types, mask)
    assert sparse.mlm_logits.shape == (3, 99)
    picked = dense.mlm_logits[labels != -100]
    torch.testing.assert_close(sparse.mlm_logits, picked)
    expected = torch.nn.functional.cross_entropy(picked, labels[labels != -100]) + torch.nn.functional.cross_entropy(
        dense.nsp_logits, torch.tensor([0, 1, 0])
    )
    torch.testing.assert_close(sparse.loss, expected)
    assert dense.loss is None  # logits only, no labels -> no loss


@pytest.mark.parametrize("cls", [lab.BertForPreTraining, lab.BertForMaskedLM])
def test_predict_at_gives_logits_at_those_positions_and_no_loss(tiny_cfg, cls):
    model = cls(tiny_cfg).eval()
    ids, types, mask = batch(tiny_cfg)
    where = torch.zeros_like(ids, dtype=torch.bool)
    where[0, 2] = where[0, 7] = where[2, 1] = True
    sparse = model(ids, types, mask, predict_at=where)
    dense = model(ids, types, mask)
    assert sparse.mlm_logits.shape == (3, 99)
    torch.testing.assert_close(sparse.mlm_logits, dense.mlm_logits[where])  # row-major order
    assert sparse.loss is None and sparse.mlm_loss is None
    with pytest.raises(ValueError, match="not both"):
        model(ids, types, mask, predict_at=where, mlm_labels=torch.where(where, ids, -100))
    with pytest.raises(ValueError, match="predict_at has shape"):
        model(ids, types, mask, predict_at=where[:, :5])
    with pytest.raises(TypeError, match="predict_at"):  # a head without vocabulary logits
        lab.BertForQuestionAnswering(tiny_cfg)(ids, predict_at=where)


def test_mlm_decoder_is_tied_to_word_embeddings(tiny_cfg, tmp_path):
    model = lab.BertForMaskedLM(tiny_cfg)
    emb = model.bert.embeddings.word_embeddings.weight
    assert model.cls.predictions.decoder.weight is emb  # one Parameter, two names
    assert model.cls.predictions.decoder.bias is model.cls.predictions.bias
    assert sum(p is emb for p in model.parameters()) == 1  # the optimizer sees it once
    assert torch.count_nonzero(emb[tiny_cfg.pad_token_id]) == 0  # [PAD] row: init ran once
    # a gradient through the decoder reaches the embedding matrix
    model.cls.predictions(torch.randn(3, tiny_cfg.hidden_size)).sum().backward()
    assert emb.grad is not None and emb.grad.abs().sum() > 0
    # saved once (as transformers does), loaded back tied
    from safetensors import safe_open

    lab.save(model, None, tmp_path)
    with safe_open(str(tmp_path / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    assert "bert.embeddings.word_embeddings.weight" in keys and "cls.predictions.bias" in keys
    assert not {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"} & keys
    loaded, _, report = lab.load(tmp_path, return_report=True)
    assert report.missing == [] and report.unexpected == []
    assert loaded.cls.predictions.decoder.weight is loaded.bert.embeddings.word_embeddings.weight
    torch.testing.assert_close(loaded.bert.embeddings.word_embeddings.weight, emb)


@pytest.mark.parametrize(
    "cls",
    [
        lab.BertModel,
        lab.BertForPreTraining,
        lab.BertForMaskedLM,
        lab.BertForSequenceClassification,
        lab.BertForTokenClassification,
        lab.BertForQuestionAnswering,
    ],
)
def test_weights_are_initialised_once(tiny_cfg, cls, monkeypatch):
    """BERT's init runs once per model (at the end of the outermost constructor), not once for
    the encoder and again for the whole model."""
    calls = []
    original = lab.model.BertPreTrainedModel.init_weights
    monkeypatch.setattr(
        lab.model.BertPreTrainedModel, "init_weights", lambda self: (calls.append(type(self).__name__), original(self))
    )
    cls(tiny_cfg)
    assert calls == [cls.__name__]


@pytest.mark.parametrize("shape", ["BTT", "B1TT"])
def test_attention_mask_may_say_which_query_sees_which_key(tiny_cfg, shape):
    """A [B, T, T] (or [B, 1, T, T]) mask runs the model itself left-to-right: position i then
    cannot be influenced by any later token, on both attention paths."""
    model = lab.BertModel(tiny_cfg).eval()
    ids = torch.randint(5, tiny_cfg.vocab_size, (2, 7))
    causal = torch.tril(torch.ones(7, 7, dtype=torch.long)).expand(2, 7, 7)
    mask = causal if shape == "BTT" else causal[:, None]
    changed = ids.clone()
    changed[:, 4:] = torch.randint(5, tiny_cfg.vocab_size, (2, 3))  # the future differs
    for attentions in (False, True):
        a = model(ids, attention_mask=mask, output_attentions=attentions)
        b = model(changed, attention_mask=mask, output_attentions=attentions)
        torch.testing.assert_close(a.last_hidden_state[:, :4], b.last_hidden_state[:, :4])
        assert not torch.allclose(a.last_hidden_state[:, 4:], b.last_hidden_state[:, 4:])
    probs = model(ids, attention_mask=mask, output_attentions=True).attentions[0]  # (B, A, T, T)
    assert torch.all(probs.triu(diagonal=1) == 0)
    # the same [B, T] padding mask through either path agrees with the [B, T, T] form of it
    pad = torch.ones(2, 7, dtype=torch.long)
    pad[1, 5:] = 0
    full = pad[:, None, :].expand(2, 7, 7)
    torch.testing.assert_close(
        model(ids, attention_mask=pad).last_hidden_state, model(ids, attention_mask=full).last_hidden_state
    )
    with pytest.raises(ValueError, match="attention_mask has shape"):
        model(ids, attention_mask=torch.ones(2, 7, 6))


def test_losses_of_the_fine_tuning_heads(tiny_cfg):
    ids, types, mask = batch(tiny_cfg)
    qa = lab.BertForQuestionAnswering(tiny_cfg).eval()
    out = qa(ids, types, mask, start_positions=torch.tensor([1, 2, 0]), end_positions=torch.tensor([3, 2, 0]))
    ce = torch.nn.functional.cross_entropy
    torch.testing.assert_close(
        out.loss, (ce(out.start_logits, torch.tensor([1, 2, 0])) + ce(out.end_logits, torch.tensor([3, 2, 0]))) / 2
    )
    cls = lab.BertForSequenceClassification(tiny_cfg).eval()
    out = cls(ids, types, mask, labels=torch.tensor([0, 1, 1]))
    torch.testing.assert_close(out.loss, ce(out.logits, torch.tensor([0, 1, 1])))
    with pytest.raises(TypeError, match="takes labels"):
        cls(ids, labels_typo=torch.tensor([0]))


def test_token_classifier_loss_ignores_minus_100(tiny_cfg):
    """Mean cross-entropy over the labelled tokens; -100 tokens neither count nor get a gradient."""
    ce = torch.nn.functional.cross_entropy
    model = lab.BertForTokenClassification(tiny_cfg).eval()
    ids, types, mask = batch(tiny_cfg)
    labels = torch.full_like(ids, -100)
    labels[0, 1], labels[0, 4], labels[1, 2] = 1, 0, 1  # three labelled first pieces
    out = model(ids, types, mask, labels=labels)
    picked = labels != -100
    torch.testing.assert_close(out.loss, ce(out.logits[picked], labels[picked]))
    # changing an ignored token's label changes nothing
    other = labels.clone()
    other[2, 3] = -100
    torch.testing.assert_close(model(ids, types, mask, labels=other).loss, out.loss)
    # a batch with no label at all: zero loss (not NaN), and backward still works
    empty = model(ids, types, mask, labels=torch.full_like(ids, -100))
    assert empty.loss.item() == 0.0
    empty.loss.backward()
    with pytest.raises(TypeError, match="takes labels"):
        model(ids, tags=labels)


def test_token_classifier_dropout_and_outputs(tiny_cfg):
    """classifier_dropout, else hidden_dropout_prob (as transformers); attention maps, hidden
    states and a head mask pass through the one return path of every head."""
    assert lab.BertForTokenClassification(tiny_cfg).dropout.p == tiny_cfg.hidden_dropout_prob
    cfg = tiny_config(classifier_dropout=0.3, id2label={0: "O", 1: "B-PER", 2: "I-PER"})
    model = lab.BertForTokenClassification(cfg).eval()
    assert model.dropout.p == 0.3 and model.config.num_labels == 3
    assert "bert.pooler.dense.weight" not in model.state_dict()
    ids, types, mask = batch(cfg)
    out = model(ids, types, mask, output_attentions=True, output_hidden_states=True)
    assert isinstance(out, lab.ModelOutput) and out.loss is None
    assert len(out.attentions) == 2 and len(out.hidden_states) == 3
    torch.testing.assert_close(out.logits, model.classifier(out.last_hidden_state))  # eval: no dropout
    hm = torch.ones(2, 4)
    hm[1, 0] = 0
    cut = model(ids, types, mask, head_mask=hm, output_attentions=True)
    assert torch.all(cut.attentions[1][:, 0] == 0) and not torch.allclose(cut.logits, out.logits)
    # the feature-based variant: each token's vectors of the last N layers, concatenated
    four = lab.BertForTokenClassification(tiny_config(classifier_layers=2)).eval()
    assert four.classifier.in_features == 2 * 32
    out = four(ids, types, mask)
    features = torch.cat(out.hidden_states[-2:], dim=-1)  # (B, T, 2H)
    torch.testing.assert_close(out.logits, four.classifier(features))


def test_each_classifier_serves_its_own_task(tiny_cfg):
    """Both classifiers have a `classifier` layer; the class says which task each serves."""
    from lab import explore

    tagger = lab.BertForTokenClassification(tiny_cfg)
    sentence = lab.BertForSequenceClassification(tiny_cfg)
    assert explore.model_tasks(tagger) == {"tag", "attention", "embeddings"}
    assert explore.model_tasks(sentence) == {"classify", "attention", "embeddings"}
    assert explore.missing_head_message(tagger, "tag") == ""
    assert "finetune-tag --model MODEL --train FILE --eval FILE --out DIR" in explore.missing_head_message(
        sentence, "tag"
    )
    assert "no classification head" in explore.missing_head_message(tagger, "classify")


def test_bad_inputs_give_clear_errors(tiny_cfg):
    model = lab.BertModel(tiny_cfg).eval()
    with pytest.raises(ValueError, match="longer than this model's maximum of 64"):
        model(torch.ones(1, 65, dtype=torch.long))
    with pytest.raises(ValueError, match="empty"):
        model(torch.ones(1, 0, dtype=torch.long))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model(torch.tensor([[2, 150, 3]]))
    with pytest.raises(ValueError, match="2-D"):
        model(torch.tensor([2, 3]))
    with pytest.raises(ValueError, match="token_type_ids has shape"):
        model(torch.ones(1, 5, dtype=torch.long), torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="head_mask"):
        model(torch.ones(1, 5, dtype=torch.long), head_mask=torch.ones(3, 4))


def test_dropout_only_in_training(tiny_cfg):
    model = lab.BertModel(tiny_cfg)
    ids, types, mask = batch(tiny_cfg)
    model.train()
    a, b = model(ids, types, mask).last_hidden_state, model(ids, types, mask).last_hidden_state
    assert not torch.allclose(a, b)
    model.eval()
    torch.testing.assert_close(model(ids, types, mask).last_hidden_state, model(ids, types, mask).last_hidden_state)
