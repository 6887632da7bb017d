"""Faithfulness: the lab's BERT equals transformers' BERT, with checkpoints exchanged both ways.

Random init, eval mode, fp32, inputs with padding and segment-B tokens; logits, every hidden
state and every attention map must agree within 1e-5.
"""

import json

import pytest
import torch

import lab
from tests.conftest import tiny_config
from tests.test_model import batch

transformers = pytest.importorskip("transformers")

PAIRS = [
    ("BertModel", lab.BertModel),
    ("BertForPreTraining", lab.BertForPreTraining),
    ("BertForMaskedLM", lab.BertForMaskedLM),
    ("BertForSequenceClassification", lab.BertForSequenceClassification),
    ("BertForTokenClassification", lab.BertForTokenClassification),
    ("BertForQuestionAnswering", lab.BertForQuestionAnswering),
]
HEAD_OUTPUTS = {
    "BertForPreTraining": [("mlm_logits", "prediction_logits"), ("nsp_logits", "seq_relationship_logits")],
    "BertForMaskedLM": [("mlm_logits", "logits")],
    "BertForSequenceClassification": [("logits", "logits")],
    "BertForTokenClassification": [("logits", "logits")],
    "BertForQuestionAnswering": [("start_logits", "start_logits"), ("end_logits", "end_logits")],
    "BertModel": [("pooler_output", "pooler_output")],
}


def labelled_config(name):
    # three labels for the classifiers; transformers sizes its QA layer by num_labels, so 2 there
    return (
        tiny_config() if name == "BertForQuestionAnswering" else tiny_config(id2label={0: "neg", 1: "pos", 2: "mixed"})
    )


def compare(ours, theirs, name, ids, types, mask):
    a = ours(ids, types, mask, output_attentions=True, output_hidden_states=True)
    b = theirs(
        input_ids=ids, token_type_ids=types, attention_mask=mask, output_attentions=True, output_hidden_states=True
    )
    worst = 0.0
    for mine, hf in HEAD_OUTPUTS[name]:
        torch.testing.assert_close(a[mine], b[hf], atol=1e-5, rtol=1e-5)
        worst = max(worst, (a[mine] - b[hf]).abs().max().item())
    assert len(a.hidden_states) == len(b.hidden_states)
    for x, y in zip(a.hidden_states, b.hidden_states):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)
        worst = max(worst, (x - y).abs().max().item())
    for x, y in zip(a.attentions, b.attentions):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)
    # without attention maps the fast SDPA path gives the same hidden states
    torch.testing.assert_close(ours(ids, types, mask).last_hidden_state, b.hidden_states[-1], atol=1e-5, rtol=1e-5)
    return worst


@pytest.mark.parametrize("name, cls", PAIRS)
def test_lab_checkpoint_loads_in_transformers(tmp_path, name, cls):
    cfg = labelled_config(name)
    torch.manual_seed(0)
    ours = cls(cfg).eval()
    lab.save(ours, None, tmp_path)
    theirs, info = getattr(transformers, name).from_pretrained(
        tmp_path, attn_implementation="eager", output_loading_info=True
    )
    assert not info["missing_keys"] and not info["unexpected_keys"]  # the same tensor names
    ids, types, mask = batch(cfg)
    compare(ours, theirs.eval(), name, ids, types, mask)
    if name in ("BertForSequenceClassification", "BertForTokenClassification"):
        assert theirs.config.id2label == {0: "neg", 1: "pos", 2: "mixed"}


@pytest.mark.parametrize("name, cls", PAIRS)
def test_transformers_checkpoint_loads_in_lab(tmp_path, name, cls):
    cfg = labelled_config(name)
    hf_cfg = transformers.BertConfig(**{k: v for k, v in cfg.to_dict().items() if k != "model_type"})
    torch.manual_seed(1)
    theirs = getattr(transformers, name)(hf_cfg).eval()
    with torch.no_grad():  # non-trivial LayerNorm and bias values, so that every tensor matters
        for n, p in theirs.named_parameters():
            if "LayerNorm" in n or n.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    theirs.save_pretrained(tmp_path)
    ours, tok, report = lab.load(tmp_path, return_report=True)
    assert type(ours) is cls and tok is None
    assert report.missing == [] and report.unexpected == []
    ids, types, mask = batch(cfg)
    compare(ours, theirs.eval(), name, ids, types, mask)


def test_bare_encoder_checkpoint_feeds_a_new_head(tmp_path):
    """A BertModel directory (no 'bert.' prefix) starts a classifier: encoder loaded, head new."""
    cfg = tiny_config()
    hf = transformers.BertModel(
        transformers.BertConfig(**{k: v for k, v in cfg.to_dict().items() if k != "model_type"})
    ).eval()
    hf.save_pretrained(tmp_path)
    model, _, report = lab.load(tmp_path, lab.BertForSequenceClassification, return_report=True)
    assert sorted(report.missing) == ["classifier.bias", "classifier.weight"]
    ids, types, mask = batch(cfg)
    torch.testing.assert_close(
        model.bert(ids, types, mask).last_hidden_state,
        hf(input_ids=ids, token_type_ids=types, attention_mask=mask).last_hidden_state,
        atol=1e-5,
        rtol=1e-5,
    )


def hf_token_classifier(cfg, seed=1):
    """transformers' BertForTokenClassification with non-trivial LayerNorm and bias values."""
    hf_cfg = transformers.BertConfig(**{k: v for k, v in cfg.to_dict().items() if k != "model_type"})
    torch.manual_seed(seed)
    theirs = transformers.BertForTokenClassification(hf_cfg).eval()
    with torch.no_grad():
        for n, p in theirs.named_parameters():
            if "LayerNorm" in n or n.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    return theirs


def test_token_classifier_loss_equals_transformers(tmp_path):
    """Cross-entropy over the labelled tokens only: -100 (padding, [CLS]/[SEP], a word's later
    pieces) is ignored exactly as transformers ignores it."""
    cfg = labelled_config("BertForTokenClassification")
    theirs = hf_token_classifier(cfg)
    theirs.save_pretrained(tmp_path)
    ours = lab.load(tmp_path)[0]
    ids, types, mask = batch(cfg)
    labels = torch.randint(0, 3, ids.shape, generator=torch.Generator().manual_seed(2))
    labels[mask == 0] = -100  # padding
    labels[:, 0] = -100  # [CLS]
    labels[0, 3:5] = -100  # later pieces of a word
    a = ours(ids, types, mask, labels=labels)
    b = theirs(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels)
    assert a.logits.shape == (3, 11, 3)
    torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(a.loss, b.loss, atol=1e-6, rtol=1e-6)
    assert ours(ids, types, mask).loss is None  # logits only without labels


def test_transformers_token_classifier_has_no_pooler_and_loads_without_architectures(tmp_path):
    """transformers' token classifier saves no bert.pooler.* (add_pooling_layer=False): the tensor
    names alone tell it from a sequence classifier, when config.json names no architecture."""
    from safetensors import safe_open

    cfg = labelled_config("BertForTokenClassification")
    theirs = hf_token_classifier(cfg)
    theirs.save_pretrained(tmp_path)
    with safe_open(str(tmp_path / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    assert not any(k.startswith("bert.pooler.") for k in keys) and "classifier.weight" in keys
    assert lab.checkpoint.infer_model_class(keys) is lab.BertForTokenClassification
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == ["BertForTokenClassification"]
    del config["architectures"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    ours, _, report = lab.load(tmp_path, return_report=True)
    assert type(ours) is lab.BertForTokenClassification and not report.missing and not report.unexpected
    ids, types, mask = batch(cfg)
    torch.testing.assert_close(
        ours(ids, types, mask).logits,
        theirs(input_ids=ids, token_type_ids=types, attention_mask=mask).logits,
        atol=1e-5,
        rtol=1e-5,
    )
    # and transformers' sequence classifier, also without architectures, stays one
    seq = transformers.BertForSequenceClassification(theirs.config)
    seq.save_pretrained(tmp_path / "seq")
    config = json.loads((tmp_path / "seq" / "config.json").read_text())
    del config["architectures"]
    (tmp_path / "seq" / "config.json").write_text(json.dumps(config))
    assert type(lab.load(tmp_path / "seq")[0]) is lab.BertForSequenceClassification
