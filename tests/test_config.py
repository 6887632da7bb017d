"""BertConfig: presets, validation, config.json round trip, labels as transformers keeps them."""

import json

import pytest

from lab import PRESETS, BertConfig


def test_presets_have_googles_shapes():
    shapes = {
        n: (c.num_hidden_layers, c.hidden_size, c.num_attention_heads) for n in PRESETS for c in [BertConfig.preset(n)]
    }
    assert shapes == {
        "tiny": (2, 128, 2),
        "mini": (4, 256, 4),
        "small": (4, 512, 8),
        "medium": (8, 512, 8),
        "base": (12, 768, 12),
        "large": (24, 1024, 16),
    }
    assert all(BertConfig.preset(n).intermediate_size == 4 * BertConfig.preset(n).hidden_size for n in PRESETS)
    assert BertConfig.preset("mini", vocab_size=8192).vocab_size == 8192
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        BertConfig.preset("huge")


def test_round_trip(tmp_path):
    cfg = BertConfig.preset("tiny", vocab_size=1000).with_labels(["negative", "positive"])
    cfg.save(tmp_path)
    raw = json.loads((tmp_path / "config.json").read_text())
    assert raw["id2label"] == {"0": "negative", "1": "positive"} and raw["model_type"] == "bert"
    back = BertConfig.load(tmp_path)
    assert back == cfg and back.num_labels == 2 and back.label2id == {"negative": 0, "positive": 1}


def test_labels_inferred_like_transformers():
    assert BertConfig().num_labels == 2
    assert BertConfig(label2id={"a": 0, "b": 1, "c": 2}).id2label == {0: "a", 1: "b", 2: "c"}
    assert BertConfig.from_dict({"num_labels": 5}).num_labels == 5
    # unknown transformers keys are ignored
    assert (
        BertConfig.from_dict(
            {"hidden_size": 64, "num_attention_heads": 4, "use_cache": True, "transformers_version": "5.0"}
        ).hidden_size
        == 64
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(hidden_size=100, num_attention_heads=12), "divisible by num_attention_heads"),
        (dict(vocab_size=0), "vocab_size must be a positive integer"),
        (dict(hidden_act="swish"), "hidden_act"),
        (dict(hidden_dropout_prob=1.5), "hidden_dropout_prob"),
        (dict(pad_token_id=40000), "pad_token_id"),
    ],
)
def test_validation_messages(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BertConfig(**kwargs)


def test_bad_config_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        BertConfig.load(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        BertConfig.load(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(ValueError, match="model_type is 'gpt2'; the lab builds BERT"):
        BertConfig.load(tmp_path)
