"""lab.web.export: the models of the browser edition. Each exported graph, run by onnxruntime, gives
the PyTorch model's numbers (and explore's) on padded batches at two lengths; the manifest and the
files follow the contract; the bundled classroom model fits the first view's page weight."""

import dataclasses
import json

import numpy as np
import onnx
import onnxruntime
import pytest
import tokenizers
import torch
from onnx import numpy_helper

import lab
from lab import explore
from lab.__main__ import main
from lab.config import BertConfig
from lab.data.squad import Example, make_features
from lab.modern import CHANGES, changed
from lab.web.export import (
    MAX_MODEL_BYTES,
    PAGE_WEIGHT_TARGET,
    OnnxModel,
    export_site,
    site_sizes,
    store_int8_weights,
)
from tests.conftest import ROOT, need_node, tiny_config

TOL = 1e-4
NER = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
CARD = "# tiny-pretraining\n\nA tiny model for the tests.\nIt is good at nothing.\n\n## More\n\ntext\n"
TEXT = "the cat sat on the mat . the dog ran in the park . a bird sang in the tree ."


def tiny(cls, tok, seed, **overrides):
    torch.manual_seed(seed)
    return cls(tiny_config(vocab_size=tok.vocab_size, **overrides)).eval()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Five tiny models (one per class the page serves), saved as lab.save saves, exported once."""
    tok = lab.Tokenizer.train(iter([TEXT] * 30), vocab_size=60, show_progress=False)
    models = tmp_path_factory.mktemp("models")
    made = {
        "tiny-pretraining": tiny(lab.BertForPreTraining, tok, 0),
        "tiny-mlm": tiny(lab.BertForMaskedLM, tok, 1),
        "tiny-sst": tiny(lab.BertForSequenceClassification, tok, 2, id2label={0: "negative", 1: "positive"}),
        "tiny-ner": tiny(lab.BertForTokenClassification, tok, 3, id2label=dict(enumerate(NER))),
        "tiny-qa": tiny(lab.BertForQuestionAnswering, tok, 4),
    }
    made["tiny-ner"].task_settings = {"max_seq_length": 32, "doc_stride": 16, "decoding": "viterbi", "scheme": "iob2"}
    made["tiny-qa"].task_settings = {"max_seq_length": 48, "doc_stride": 16, "max_query_length": 12}
    made["tiny-sst"].task_settings = {"max_seq_length": 40, "pair": False}
    for name, model in made.items():
        # the pre-training model is stored in fp16, as the bundled models are: its graph stores fp16 weights
        lab.save(model, tok, models / name, dtype=torch.float16 if name == "tiny-pretraining" else None)
    (models / "tiny-pretraining" / "README.md").write_text(CARD)
    out = tmp_path_factory.mktemp("site")
    manifest = export_site(out, models_dir=models, log=lambda _: None, page=False)
    loaded = {name: lab.load(models / name) for name in made}  # the weights the graph was made from
    return out, manifest, loaded


def entry(manifest, name):
    return next(m for m in manifest["models"] if m["name"] == name)


def session(out, manifest, name):
    return onnxruntime.InferenceSession(str(out / entry(manifest, name)["files"]["model"]))


def padded_pair(vocab, T, seed):
    """Batch 2 at length T: a sentence pair, the second row padded after 2/3 of its tokens."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, vocab, (2, T), generator=g)
    types = torch.zeros_like(ids)
    types[:, T // 2 :] = 1
    mask = torch.ones_like(ids)
    mask[1, 2 * T // 3 :] = 0
    ids[1, 2 * T // 3 :] = 0
    return ids, types, mask


def run_both(out, manifest, loaded, name, T):
    model, tok = loaded[name]
    ids, types, mask = padded_pair(tok.vocab_size, T, seed=T)
    with torch.no_grad():
        ref = model(ids, types, mask, output_attentions=True)
    got = session(out, manifest, name).run(
        None, {"input_ids": ids.numpy(), "token_type_ids": types.numpy(), "attention_mask": mask.numpy()}
    )
    return ref, dict(zip([o.name for o in session(out, manifest, name).get_outputs()], got))


def close(a, b):
    a = a.detach().numpy() if torch.is_tensor(a) else np.asarray(a)
    assert a.shape == np.asarray(b).shape
    assert np.abs(a - b).max() < TOL, np.abs(a - b).max()


# ----------------------------------------------------------------------------------------
# The graphs give the PyTorch model's numbers
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("T", [7, 23])
def test_masked_lm_graphs_give_the_models_probabilities_and_attention(site, T):
    out, manifest, loaded = site
    for name in ("tiny-pretraining", "tiny-mlm"):
        ref, got = run_both(out, manifest, loaded, name, T)
        close(ref.mlm_logits.softmax(-1), torch.from_numpy(got["mlm_logits"]).softmax(-1).numpy())  # fill-mask
        close(ref.mlm_logits, got["mlm_logits"])
        close(torch.stack(ref.attentions), got["attentions"])  # (L, B, A, T, T)
        if name == "tiny-pretraining":
            close(ref.nsp_logits.softmax(-1)[:, 0], torch.from_numpy(got["nsp_logits"]).softmax(-1)[:, 0].numpy())
        else:
            assert "nsp_logits" not in got


@pytest.mark.parametrize("T", [7, 23])
def test_task_graphs_give_the_models_logits(site, T):
    out, manifest, loaded = site
    ref, got = run_both(out, manifest, loaded, "tiny-qa", T)
    close(ref.start_logits, got["start_logits"])
    close(ref.end_logits, got["end_logits"])
    for name, shape in (("tiny-sst", (2, 2)), ("tiny-ner", (2, T, len(NER)))):
        ref, got = run_both(out, manifest, loaded, name, T)
        assert list(got) == ["logits"] and got["logits"].shape == shape
        close(ref.logits, got["logits"])


def test_the_views_read_the_same_numbers_from_the_graphs(site):
    """What explore shows (batch 1, no padding) is what the page computes from the graph."""
    out, manifest, loaded = site
    model, tok = loaded["tiny-pretraining"]
    graph = OnnxModel(out / entry(manifest, "tiny-pretraining")["files"]["model"], model.config)
    text = "the [MASK] sat on the [MASK] ."
    shown = explore.fill_mask(model, tok, text, top_k=tok.vocab_size)
    enc = tok.encode(text)
    probs = graph(torch.tensor([enc.input_ids])).mlm_logits[0].softmax(-1)  # (T, V)
    for preds, position in zip(shown, [i for i, t in enumerate(enc.input_ids) if t == tok.mask_token_id]):
        close([p for _, p in preds], probs[position, tok.convert_tokens_to_ids([t for t, _ in preds])].numpy())
    a, b = "the cat sat on the mat .", "the dog ran in the park ."
    enc = tok.encode(a, b)
    ids, types = torch.tensor([enc.input_ids]), torch.tensor([enc.token_type_ids])
    nsp = graph(ids, types).nsp_logits.softmax(-1)[0, 0]
    assert abs(explore.next_sentence(model, tok, a, b) - float(nsp)) < TOL
    maps = explore.attention(model, tok, a, b).attentions
    close(torch.stack(maps), torch.stack(graph(ids, types).attentions).numpy())

    model, tok = loaded["tiny-sst"]
    graph = OnnxModel(out / entry(manifest, "tiny-sst")["files"]["model"], model.config)
    shown = explore.classify(model, tok, a)
    probs = graph(torch.tensor([tok.encode(a).input_ids])).logits.softmax(-1)[0]
    close([shown[label] for label in entry(manifest, "tiny-sst")["labels"]], probs.numpy())


def test_the_answer_view_reads_the_manifests_windows(site):
    """QA windows built from the manifest's task settings give explore.answer's start/end probabilities."""
    out, manifest, loaded = site
    model, tok = loaded["tiny-qa"]
    task = entry(manifest, "tiny-qa")["task"]
    question, context = "where did the dog run ?", " ".join([TEXT] * 3)  # longer than one window
    shown = explore.answer(model, tok, question, context)
    assert shown.num_windows > 1
    example = Example(id="q", title="", context=context, question=question, answers=[])
    features = make_features(
        [example], tok, task["max_seq_length"], task["doc_stride"], task["max_query_length"], training=False
    )
    f = features[shown.window_index]
    graph = OnnxModel(out / entry(manifest, "tiny-qa")["files"]["model"], model.config)
    got = graph(torch.tensor([f.input_ids]), torch.tensor([f.token_type_ids]))
    close(shown.start_probs, got.start_logits[0].softmax(-1).numpy())
    close(shown.end_probs, got.end_logits[0].softmax(-1).numpy())


# ----------------------------------------------------------------------------------------
# The files and the manifest follow the contract
# ----------------------------------------------------------------------------------------
def test_the_manifest_lists_views_files_and_settings(site):
    out, manifest, loaded = site
    assert json.loads((out / "manifest.json").read_text()) == manifest and manifest["version"] == 1
    views = {m["name"]: m["views"] for m in manifest["models"]}
    assert views == {
        "tiny-pretraining": ["fill-mask", "next-sentence", "attention"],
        "tiny-mlm": ["fill-mask", "attention"],
        "tiny-sst": ["classify"],
        "tiny-ner": ["tag"],
        "tiny-qa": ["answer"],
    }
    assert [m["name"] for m in manifest["models"]][:2] == ["tiny-mlm", "tiny-pretraining"]  # fill-mask first
    for m in manifest["models"]:
        model, tok = loaded[m["name"]]
        assert m["files"] == {
            "model": f"models/{m['name']}/model.onnx",
            "tokenizer": f"models/{m['name']}/tokenizer.json",
        }
        assert m["bytes"] == sum((out / f).stat().st_size for f in m["files"].values())
        assert m["class"] == type(model).__name__
        assert m["config"] == {"layers": 2, "heads": 4, "hidden": 32, "vocab_size": tok.vocab_size, "max_length": 64}
        assert m["special"] == {k: tok.vocab[f"[{k.upper()}]"] for k in ("cls", "sep", "mask", "pad", "unk")}
        assert m["lowercase"] is True
    assert entry(manifest, "tiny-pretraining")["title"] == "tiny-pretraining"
    assert entry(manifest, "tiny-pretraining")["card"] == ["A tiny model for the tests.", "It is good at nothing."]
    assert entry(manifest, "tiny-mlm")["card"] == [] and entry(manifest, "tiny-mlm")["labels"] is None
    assert entry(manifest, "tiny-sst")["labels"] == ["negative", "positive"]
    assert entry(manifest, "tiny-sst")["task"] == {"max_seq_length": 40, "pair": False}
    assert entry(manifest, "tiny-ner")["labels"] == NER
    assert entry(manifest, "tiny-ner")["task"] == {
        "max_seq_length": 32,
        "doc_stride": 16,
        "decoding": "viterbi",
        "scheme": "iob2",
    }
    assert entry(manifest, "tiny-qa")["task"] == {
        "max_seq_length": 48,
        "doc_stride": 16,
        "max_query_length": 12,
        "n_best": explore.N_BEST,  # explore.answer's, the one copy
        "max_answer_length": explore.MAX_ANSWER_LENGTH,
    }
    assert entry(manifest, "tiny-mlm")["task"] == {"max_masks": explore.MAX_MASKS}
    for name in ("tiny-qa", "tiny-ner"):  # explore's settings for the model, as it was loaded
        model = loaded[name][0]
        settings = explore.answer_settings(model) if name == "tiny-qa" else explore.tag_window_settings(model)
        assert entry(manifest, name)["task"].items() >= settings.items()


def test_the_graphs_inputs_outputs_and_precision(site):
    out, manifest, _ = site
    for m in manifest["models"]:
        proto = onnx.load(str(out / m["files"]["model"]))
        assert next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")) >= 17
        for i in proto.graph.input:
            assert i.type.tensor_type.elem_type == onnx.TensorProto.INT64
            assert [d.dim_param for d in i.type.tensor_type.shape.dim] == ["batch", "tokens"]
        assert [i.name for i in proto.graph.input] == ["input_ids", "token_type_ids", "attention_mask"]
        halves = [t for t in proto.graph.initializer if t.data_type == onnx.TensorProto.FLOAT16]
        # saved in fp16: its weights are stored in fp16 (and cast inside the graph); the others stay fp32
        assert m["precision"] == ("fp16-weights" if m["name"] == "tiny-pretraining" else "fp32")
        assert bool(halves) == (m["precision"] == "fp16-weights")


def test_the_tokenizer_json_encodes_as_the_lab_does(site):
    out, manifest, loaded = site
    _, tok = loaded["tiny-pretraining"]
    page = tokenizers.Tokenizer.from_file(str(out / entry(manifest, "tiny-pretraining")["files"]["tokenizer"]))
    a, b = "The Cat sat on the [MASK] .", "a dog ran"
    assert page.encode(a, b).ids == tok.encode(a, b).input_ids
    assert page.encode(a, b).type_ids == tok.encode(a, b).token_type_ids


@pytest.fixture(scope="module")
def wide(site, tmp_path_factory):
    """A tagger wide enough for int8 (its matrices over INT8_MIN_ELEMENTS), saved and exported in fp32."""
    _, _, loaded = site
    tok = loaded["tiny-ner"][1]
    model = tiny(
        lab.BertForTokenClassification, tok, 5, hidden_size=64, intermediate_size=80, id2label=dict(enumerate(NER))
    )
    models = tmp_path_factory.mktemp("wide")
    lab.save(model, tok, models / "wide-ner")
    out = tmp_path_factory.mktemp("wide-site")
    manifest = export_site(out, models_dir=models, precision="fp32", log=lambda _: None, page=False)
    return models, out / manifest["models"][0]["files"]["model"], lab.load(models / "wide-ner")


@pytest.mark.parametrize("precision, op", [("int8-weights", "DequantizeLinear"), ("int8-dynamic", "MatMulInteger")])
def test_int8_graphs_run_and_stay_small(tmp_path, wide, precision, op):
    """How close int8 comes is measured by benchmarks/web_quantization.py on real data, not here."""
    models, fp32, (model, tok) = wide
    int8 = export_site(tmp_path, models_dir=models, precision=precision, log=lambda _: None, page=False)
    m = int8["models"][0]
    assert m["precision"] == precision
    path = tmp_path / m["files"]["model"]
    assert path.stat().st_size < min(MAX_MODEL_BYTES, fp32.stat().st_size / 2)
    assert op in {n.op_type for n in onnx.load(str(path)).graph.node}
    ids, types, mask = padded_pair(tok.vocab_size, 11, seed=0)
    assert OnnxModel(path, model.config)(ids, types, mask).logits.shape == (2, 11, len(NER))


def test_int8_weights_are_each_within_half_a_step_of_the_weights(tmp_path, wide):
    """store_int8_weights: every large matrix becomes int8 x a scale per output channel."""
    _, fp32, _ = wide
    path = tmp_path / "int8.onnx"
    path.write_bytes(fp32.read_bytes())
    before = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(fp32)).graph.initializer}
    assert store_int8_weights(path) > 0
    after = onnx.load(str(path))
    dequantized = [n for n in after.graph.node if n.op_type == "DequantizeLinear"]
    arrays = {t.name: numpy_helper.to_array(t) for t in after.graph.initializer}
    assert {n.output[0] for n in dequantized} == {k for k, w in before.items() if w.ndim == 2 and w.size >= 4096}
    for node in dequantized:
        q, scale = arrays[node.input[0]], arrays[node.input[1]]
        axis = next(a.i for a in node.attribute if a.name == "axis")
        w = before[node.output[0]]
        step = np.expand_dims(scale, 1 - axis)  # broadcast over the other axis
        assert q.dtype == np.int8 and np.abs(q.astype(np.float32) * step - w).max() <= step.max() / 2 + 1e-7


def test_a_model_with_every_change_since_bert_exports_with_its_numbers(tmp_path):
    """Pre-norm, GeGLU, rotary positions, no biases and local attention (lab.modern): the graph
    gives the PyTorch model's probabilities and attention maps, past the local window too."""
    _, tok = lab.load(ROOT / "models" / "bert-lab-classroom")
    base = tiny_config(vocab_size=tok.vocab_size)
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    cfg = BertConfig(**changed(values, list(CHANGES), local_window=8, global_every=2))
    torch.manual_seed(0)
    model = lab.BertForMaskedLM(cfg).eval()
    lab.save(model, tok, tmp_path / "models" / "tiny-modern")
    manifest = export_site(tmp_path / "site", models_dir=tmp_path / "models", log=lambda _: None, page=False)
    (entry,) = manifest["models"]
    assert entry["views"] == ["fill-mask", "attention"]
    graph = OnnxModel(tmp_path / "site" / entry["files"]["model"], cfg)
    for T in (7, 23):  # 23: longer than the local window of 8
        ids, types, mask = padded_pair(tok.vocab_size, T, seed=T)
        with torch.no_grad():
            ref = model(ids, types, mask, output_attentions=True)
        got = graph(ids, types, mask)
        close(ref.mlm_logits.softmax(-1), got.mlm_logits.softmax(-1).numpy())
        close(torch.stack(ref.attentions), torch.stack(got.attentions).numpy())


# ----------------------------------------------------------------------------------------
# The bundled classroom model: the page's first view
# ----------------------------------------------------------------------------------------
def test_the_bundled_classroom_model_fits_the_first_views_page_weight(tmp_path, capsys):
    need_node()  # the whole site: the page too
    assert main(["export-web", "--out", str(tmp_path), "--models", "bert-lab-classroom"]) == 0
    printed = capsys.readouterr().out
    assert "bert-lab-classroom" in printed and "site total" in printed and "page weight" in printed
    (m,) = json.loads((tmp_path / "manifest.json").read_text())["models"]
    assert m["views"] == ["fill-mask", "next-sentence", "attention"] and m["precision"] == "fp16-weights"
    assert m["title"] == "bert-lab-classroom" and len(m["card"]) == 2
    sizes = site_sizes(tmp_path)
    assert sizes.first_model == "bert-lab-classroom" and sizes.first_view <= PAGE_WEIGHT_TARGET
    for page_file in ("index.html", "app.js", "style.css", "openings.json"):  # the page, drawn at once
        assert (tmp_path / page_file).is_file()
    (tmp_path / "extra.css").write_text("p {}")  # the page's own files count toward the first view
    assert site_sizes(tmp_path).first_view == sizes.first_view + len("p {}")
    # computing in the browser also needs the runtime (ort/) and the first model's files
    runtime = sum(n for f, n in sizes.files.items() if f.startswith("ort/"))
    assert runtime > 0 and sizes.computing == sizes.first_view + runtime + m["bytes"]
    assert 0 < sizes.computing_gzip < sizes.computing
    assert "page weight until the first view is drawn" in printed and "gzip-compressed" in printed
    model, tok = lab.load(ROOT / "models" / "bert-lab-classroom")
    graph = OnnxModel(tmp_path / m["files"]["model"], model.config)
    for T in (9, 40):
        ids, types, mask = padded_pair(tok.vocab_size, T, seed=T)
        with torch.no_grad():
            ref = model(ids, types, mask, output_attentions=True)
        got = graph(ids, types, mask)
        close(ref.mlm_logits.softmax(-1), got.mlm_logits.softmax(-1).numpy())
        close(ref.nsp_logits.softmax(-1), got.nsp_logits.softmax(-1).numpy())
        close(torch.stack(ref.attentions), torch.stack(got.attentions).numpy())


# ----------------------------------------------------------------------------------------
# Bad input: a clear message, never a traceback
# ----------------------------------------------------------------------------------------
def test_bad_names_and_places_get_a_clear_message(tmp_path, capsys):
    assert main(["export-web", "--out", str(tmp_path / "site"), "--models", "bert-lab-classrom"]) == 2
    err = capsys.readouterr().err
    assert "no model named 'bert-lab-classrom'" in err and "bert-lab-classroom" in err and "Traceback" not in err
    assert not (tmp_path / "site").exists()  # checked before anything is written
    afile = tmp_path / "a-file"
    afile.write_text("x")
    assert main(["export-web", "--out", str(afile), "--models", "bert-lab-classroom"]) == 2
    assert "is a file" in capsys.readouterr().err
    assert main(["export-web", "--out", str(tmp_path / "s"), "--models-dir", str(tmp_path / "nowhere")]) == 2
    assert "no models folder" in capsys.readouterr().err
