"""The bundled models for the browser edition: ONNX graphs, their tokenizers, one manifest.

    python -m lab export-web --out site                          # every model in models/
    python -m lab export-web --out site --models bert-lab-classroom minilm-sst2

What it writes is the contract the page (web/, onnxruntime-web) reads; a change is a new version:
  DIR/manifest.json   {"version": 1, "models": [entry, ...]}; the page opens on models[0]
  DIR/models/<name>/model.onnx   opset 18, from the lab's own PyTorch model (torch's dynamo exporter)
    inputs   input_ids, token_type_ids, attention_mask: int64 [batch, tokens], both axes dynamic;
             attention_mask 1 = token, 0 = padding; tokens <= config.max_length
    outputs  BertForPreTraining             mlm_logits [B,T,V], nsp_logits [B,2] (0 = IsNext), attentions
             BertForMaskedLM                mlm_logits [B,T,V], attentions
             BertForSequenceClassification  logits [B,K]
             BertForTokenClassification     logits [B,T,K]
             BertForQuestionAnswering       start_logits [B,T], end_logits [B,T]
             attentions [L,B,A,T,T]: every layer's attention probabilities, stacked (the Attention view)
  DIR/models/<name>/tokenizer.json   the lab tokenizer's `tokenizers` JSON (BertNormalizer,
             BertPreTokenizer, WordPiece "##", [CLS] A [SEP] B [SEP]); cutting a long pair is the
             page's: BERT's longest-first rule (lab.tokenizer)
  entry: name, title (the card's heading), card (its two plain-language lines), views (of VIEWS),
         class, precision, bytes (this model's files), files {model, tokenizer} (paths in DIR),
         config {layers, heads, hidden, vocab_size, max_length}, labels (names in id order, or null),
         special {cls, sep, mask, pad, unk} ids, lowercase, task (what a view reads text with:
         QA windows and span limits, a tagger's windows, decoding and scheme, see browser_task),
         trace: what window.bertLab.trace computes the forward pass from, step by step
         (lab.web.trace_export; its own bytes, neither loaded by the first view nor in `bytes`):
           {weights "models/<name>/weights.safetensors" (the state_dict, each tensor once, under the
            lab's module paths; F16 where fp16 holds a tensor exactly, else F32), bytes, dtypes
            {F16: n, F32: n}, linear "models/trace_linear.onnx" (one graph for every model, opset
            18: inputs X float [N, K], W float [M, K], B float [M], all sizes dynamic; output
            Y = Gemm(X, W, B, transB=1) [N, M]: a large model's linear layers in onnxruntime-web),
            config {class, the BertConfig fields the pass reads, labels}, max_masks, catalogue
            {kind: {formula, section, what}} (lab.inspect.trace.catalogue)}; null for a model
            exported without them (--trace small, the default, leaves out weights over 10 MB: the
            MiniLM models; --trace all writes every model's; --trace none, none)
Precision: every graph computes in fp32; its weights are stored as "fp32"; as "fp16-weights", the
weights fp16 holds exactly (all of a checkpoint saved in fp16, as the bundled ones are) in fp16, cast
to fp32 inside the graph: the same numbers in half the bytes; or as "int8-weights", each large
weight matrix in int8 with one scale per output channel, turned back into fp32 inside the graph by
DequantizeLinear (standard ONNX), for a model still over MAX_MODEL_BYTES (the MiniLM ones).
"int8-dynamic" (onnxruntime's quantize_dynamic, activations in int8 too) is written on request only:
benchmarks/web_quantization.py measured it against int8-weights. site_sizes(DIR) sums what a site
holds and what its first view loads.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from lab.checkpoint import load
from lab.data.tagged_files import is_iob2_tag
from lab.files import (
    MANIFEST_NAME,
    MODEL_CARD_NAME,
    ONNX_NAME,
    OPENINGS_NAME,
    PRETRAIN_CONFIG_NAME,
    REPOSITORY,
    SITE_MODELS_DIR,
    TOKENIZER_NAME,
    has_model_files,
)
from lab.inspect.encoding import MAX_MASKS
from lab.inspect.explore import answer_settings, tag_window_settings
from lab.model import ModelOutput
from lab.web.page import copy_page
from lab.web.results import OPENINGS, run_view
from lab.web.space import SPACE_FILES, write_space_files
from lab.web.trace_export import TRACES, trace_entry, traced

VERSION = 1  # the manifest's format
OPSET = 18  # onnxruntime-web 1.30 runs it; LayerNormalization needs >= 17
MB = 1_000_000
MAX_MODEL_BYTES = 25 * MB  # one model's graph: larger ones get int8 weights
PAGE_WEIGHT_TARGET = 5 * MB  # what the page loads before its first view
RUNTIME_DIR = "ort"  # onnxruntime-web's wasm runtime in the site
INPUTS = ("input_ids", "token_type_ids", "attention_mask")
OUTPUTS = {  # the graph's outputs by model class, in order
    "BertForPreTraining": ("mlm_logits", "nsp_logits", "attentions"),
    "BertForMaskedLM": ("mlm_logits", "attentions"),
    "BertForSequenceClassification": ("logits",),
    "BertForTokenClassification": ("logits",),
    "BertForQuestionAnswering": ("start_logits", "end_logits"),
}
VIEWS = ("fill-mask", "next-sentence", "attention", "answer", "classify", "tag")  # the page's order
VIEWS_BY_CLASS = {
    "BertForPreTraining": ("fill-mask", "next-sentence", "attention"),
    "BertForMaskedLM": ("fill-mask", "attention"),
    "BertForSequenceClassification": ("classify",),
    "BertForTokenClassification": ("tag",),
    "BertForQuestionAnswering": ("answer",),
}
PRECISIONS = ("auto", "fp32", "fp16-weights", "int8-weights", "int8-dynamic")
FP16_MIN_ELEMENTS = 16  # smaller initializers (scalars of the graph's arithmetic) stay fp32
INT8_MIN_ELEMENTS = 4096  # smaller weights (biases, LayerNorm, a classifier's few rows) stay fp32
NEEDS = "pip install -e '.[web]' (onnx, onnxruntime, onnxscript)"


# ----------------------------------------------------------------------------------------
# One model -> one ONNX graph
# ----------------------------------------------------------------------------------------
class WebGraph(nn.Module):
    """The model as the page calls it: the three int64 inputs in, OUTPUTS[class] out as plain tensors."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.kind = type(model).__name__
        if self.kind not in OUTPUTS:
            raise ValueError(f"the browser edition exports {', '.join(OUTPUTS)}, not a {self.kind}")

    def forward(self, input_ids, token_type_ids, attention_mask):
        maps = "attentions" in OUTPUTS[self.kind]  # the explicit-softmax path: it returns the maps
        out = self.model(input_ids, token_type_ids, attention_mask, output_attentions=maps)
        if maps:
            out.attentions = torch.stack(out.attentions)  # L x (B, A, T, T) -> (L, B, A, T, T)
        return tuple(out[name] for name in OUTPUTS[self.kind])


def example_inputs(config, batch: int = 2, tokens: int = 16) -> tuple[torch.Tensor, ...]:
    """A padded batch of valid ids to trace with: (input_ids, token_type_ids, attention_mask), each (B, T).
    Row 1 is padded so that the traced graph keeps the padding mask (never a specialised all-ones one)."""
    tokens = min(tokens, config.max_position_embeddings)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1, config.vocab_size, (batch, tokens), generator=generator)  # (B, T)
    types = torch.zeros_like(ids)
    if config.type_vocab_size > 1:
        types[:, tokens // 2 :] = 1  # (B, T) a sentence pair: A then B
    mask = torch.ones_like(ids)
    mask[1:, tokens - tokens // 4 :] = 0  # (B, T) the rows after the first end in padding
    return ids, types, mask


def export_onnx(model: nn.Module, path, opset: int = OPSET) -> Path:
    """Write `model` (a lab Bert* model) as an ONNX graph in one file: dynamo exporter, batch and
    tokens dynamic (tokens up to the model's positions), fp32."""
    require_web_packages()
    path = Path(path)
    graph = WebGraph(model).eval()
    batch = torch.export.Dim("batch")
    tokens = torch.export.Dim("tokens", max=model.config.max_position_embeddings)
    exporter_log = logging.getLogger("torch.onnx")
    level = exporter_log.level
    exporter_log.setLevel(logging.ERROR)  # e.g. "torchvision is not installed": true and beside the point
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore", (UserWarning, FutureWarning))
            torch.onnx.export(
                graph,
                example_inputs(model.config),
                str(path),
                input_names=list(INPUTS),
                output_names=list(OUTPUTS[graph.kind]),
                opset_version=opset,
                dynamo=True,
                dynamic_shapes={name: {0: batch, 1: tokens} for name in INPUTS},
                external_data=False,  # one file: the page fetches one URL per model
                optimize=True,
                verbose=False,
            )
    finally:
        exporter_log.setLevel(level)
    tidy(path)
    return path


def store_fp16_weights(path, exact_only: bool = True) -> int:
    """Rewrite the graph at `path` with its float weights stored as fp16 and cast back to fp32
    inside the graph (a Cast node per weight, which onnxruntime folds once at load), so that it
    still computes in fp32. exact_only: only the weights fp16 holds exactly (a checkpoint saved in
    fp16: then nothing changes but the size). Returns the number of weights stored as fp16.

    Example: weight W [8192, 128] fp32 (4 MB) -> initializer W.fp16 [8192, 128] fp16 (2 MB) and
    Cast(W.fp16, to=FLOAT) -> W: every node that read W reads the same values as before."""
    # optional dependencies (the [web] extra)
    import onnx
    from onnx import numpy_helper

    proto = onnx.load(str(path))
    keep, casts = [], []
    for init in proto.graph.initializer:
        values = numpy_helper.to_array(init) if init.data_type == onnx.TensorProto.FLOAT else None
        if values is None or values.size < FP16_MIN_ELEMENTS:
            keep.append(init)
            continue
        half = values.astype(np.float16)
        if exact_only and not np.array_equal(half.astype(np.float32), values):
            keep.append(init)
            continue
        keep.append(numpy_helper.from_array(half, init.name + ".fp16"))
        casts.append(onnx.helper.make_node("Cast", [init.name + ".fp16"], [init.name], to=onnx.TensorProto.FLOAT))
    if casts:
        _replace(proto, keep, casts)
        onnx.save(proto, str(path))
    return len(casts)


def store_int8_weights(path) -> int:
    """Rewrite the graph at `path` with its weight matrices stored as int8, one fp32 scale per
    output channel, and turned back into fp32 inside the graph by DequantizeLinear: a quarter of
    the bytes, while every activation stays fp32. A matrix is one that a MatMul multiplies by
    (B [K, N]: a scale per column N), a Gemm multiplies by (its output's axis) or an embedding
    Gather looks up (a scale per row); smaller weights stay fp32. Returns the number stored in int8.

    Example: column n of W holds 0.02, -0.5, 0.1 -> scale 0.5 / 127, int8 5, -127, 25 ->
    DequantizeLinear: 0.0197, -0.5, 0.0984 (each within scale / 2 of the weight)."""
    # optional dependencies (the [web] extra)
    import onnx
    from onnx import numpy_helper

    proto = onnx.load(str(path))
    readers: dict[str, list] = {}
    for node in proto.graph.node:
        for slot, name in enumerate(node.input):
            readers.setdefault(name, []).append((node, slot))
    keep, dequantize = [], []
    for init in proto.graph.initializer:
        axis = _channel_axis(readers.get(init.name, []))
        if init.data_type != onnx.TensorProto.FLOAT or len(init.dims) != 2 or axis is None:
            keep.append(init)
            continue
        w = numpy_helper.to_array(init)  # (K, N) for a MatMul
        if w.size < INT8_MIN_ELEMENTS:
            keep.append(init)
            continue
        scale = np.abs(w).max(axis=1 - axis) / 127.0  # (N,) for axis 1: the largest weight maps to 127
        scale[scale == 0] = 1.0  # an all-zero channel: any scale gives 0
        shape = (1, -1) if axis == 1 else (-1, 1)
        q = np.clip(np.rint(w / scale.reshape(shape)), -127, 127).astype(np.int8)  # (K, N)
        names = [init.name + ".int8", init.name + ".scale", init.name + ".zero"]
        keep += [
            numpy_helper.from_array(q, names[0]),
            numpy_helper.from_array(scale.astype(np.float32), names[1]),
            numpy_helper.from_array(np.zeros(len(scale), np.int8), names[2]),  # symmetric: zero point 0
        ]
        dequantize.append(onnx.helper.make_node("DequantizeLinear", names, [init.name], axis=axis))
    _replace(proto, keep, dequantize)
    onnx.save(proto, str(path))
    return len(dequantize)


def _channel_axis(readers: list) -> int | None:
    """The axis of a weight's output channels, from the nodes that read it, or None (not a matrix
    these read as one): MatMul input 1 [K, N] -> 1; Gather input 0 (a table) [V, H] -> 0 (a row per
    token); Gemm input 1 -> 0 with transB (B is [N, K]), 1 without."""
    axes = set()
    for node, slot in readers:
        if node.op_type == "MatMul" and slot == 1:
            axes.add(1)
        elif node.op_type == "Gather" and slot == 0:
            axes.add(0)
        elif node.op_type == "Gemm" and slot == 1:
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            axes.add(0 if trans_b else 1)
        else:
            return None
    return axes.pop() if len(axes) == 1 else None


def _replace(proto, initializers: list, first_nodes: list) -> None:
    """Set the graph's initializers and put `first_nodes` before its nodes (the graph stays
    topologically sorted: they read initializers only); then check the model."""
    import onnx  # optional dependency (the [web] extra)

    if not first_nodes:
        return
    del proto.graph.initializer[:]
    proto.graph.initializer.extend(initializers)
    nodes = first_nodes + list(proto.graph.node)
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)
    onnx.checker.check_model(proto)


def quantize_dynamic_int8(source, target, per_channel: bool = False) -> Path:
    """onnxruntime's dynamic int8 quantization of an fp32 graph (one export_onnx wrote): MatMul and
    embedding (Gather) weights stored as int8 with a scale, and activations quantized to int8 per
    call (DynamicQuantizeLinear, MatMulInteger)."""
    require_web_packages()
    from onnxruntime.quantization import QuantType, quantize_dynamic  # optional dependency (the [web] extra)

    quiet = logging.getLogger()
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its advice to pre-process the graph first: measured, not needed here
    try:
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=per_channel)
    finally:
        quiet.setLevel(level)
    return Path(target)


def tidy(path) -> None:
    """Drop what the exporter records for debugging, which every page would download: each node's
    origin (the PyTorch code and stack trace that made it) and the weights' shapes in
    value_info (the quantizer turns a Gemm's weight [K, H] into [H, K] under the same name, and
    its shape check then fails on the stale record)."""
    import onnx  # optional dependency (the [web] extra)

    proto = onnx.load(str(path))
    for node in proto.graph.node:
        del node.metadata_props[:]
    weights = {init.name for init in proto.graph.initializer}
    kept = [v for v in proto.graph.value_info if v.name not in weights]
    del proto.graph.value_info[:]
    proto.graph.value_info.extend(kept)
    onnx.save(proto, str(path))


def require_web_packages() -> None:
    """A clear message when the export's packages (the [web] extra) are missing."""
    for name in ("onnx", "onnxruntime", "onnxscript"):
        try:
            __import__(name)  # optional dependencies: only the export needs them
        except ImportError:
            raise ModuleNotFoundError(f"exporting for the browser needs {name}: {NEEDS}") from None


def fp16_exact(model: nn.Module) -> bool:
    """Whether fp16 holds every weight exactly (a checkpoint saved in fp16, as the bundled ones are)."""
    return all(torch.equal(p, p.half().float()) for p in model.parameters())


def write_graph(model, target: Path, precision: str = "auto") -> str:
    """Export `model` to `target` in the precision asked for; "auto": fp16-weights where that is
    lossless (fp16_exact), else fp32; then int8-weights if the file is over MAX_MODEL_BYTES.
    Returns the precision written."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as tmp:
        fp32 = export_onnx(model, Path(tmp) / "fp32.onnx")
        result, chosen = fp32, "fp32"
        if precision == "fp16-weights" or (precision == "auto" and fp16_exact(model)):
            result, chosen = Path(tmp) / "fp16.onnx", "fp16-weights"
            result.write_bytes(fp32.read_bytes())
            store_fp16_weights(result, exact_only=precision == "auto")
        if precision == "int8-weights" or (precision == "auto" and result.stat().st_size > MAX_MODEL_BYTES):
            result, chosen = Path(tmp) / "int8.onnx", "int8-weights"
            result.write_bytes(fp32.read_bytes())
            store_int8_weights(result)
        if precision == "int8-dynamic":
            result, chosen = quantize_dynamic_int8(fp32, Path(tmp) / "int8.onnx"), "int8-dynamic"
        os.replace(result, target)
    return chosen


# ----------------------------------------------------------------------------------------
# What the page needs to know about a model: its manifest entry
# ----------------------------------------------------------------------------------------
def model_card(model_dir) -> tuple[str, list[str]]:
    """(title, the two plain-language lines under it) from a model card (README.md):
        # bert-lab-classroom            -> title "bert-lab-classroom"
        <blank>
        A tiny BERT (2 layers, ...)     -> card line 1
        It is good at ...               -> card line 2
    A directory without a card: (its name, [])."""
    file = Path(model_dir) / MODEL_CARD_NAME
    if not file.is_file():
        return Path(model_dir).name, []
    lines = [line.strip() for line in file.read_text(encoding="utf-8").splitlines()]
    heading = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
    if heading is None:
        return Path(model_dir).name, []
    card = []
    for line in lines[heading + 1 :]:
        if line.startswith("#") or (not line and card):
            break
        if line:
            card.append(line)
    return lines[heading][2:].strip(), card[:2]


def browser_task(model, model_dir) -> dict:
    """The settings a view reads text with, as explore does for this model (from its task_config.json,
    else explore's defaults: explore.answer_settings, explore.tag_window_settings, MAX_MASKS). The
    page keeps no default of its own: a setting missing here is an error there.
    answer    max_seq_length, doc_stride, max_query_length (the windows), n_best, max_answer_length
    tag       max_seq_length, doc_stride, decoding ("argmax" | "viterbi"), scheme ("iob2" | "tags")
    classify  max_seq_length (the length it was fine-tuned with), pair (sentence pairs?)
    fill-mask max_masks (per text), max_seq_length (pre-training's, when known)"""
    kind, cfg = type(model).__name__, model.config
    settings = getattr(model, "task_settings", {}) or {}
    positions = cfg.max_position_embeddings
    if kind == "BertForQuestionAnswering":
        return answer_settings(model)
    if kind == "BertForTokenClassification":
        labels = [cfg.id2label[i] for i in range(cfg.num_labels)]
        scheme = settings.get("scheme") or ("iob2" if all(is_iob2_tag(t) for t in labels) else "tags")
        return {**tag_window_settings(model), "scheme": scheme}
    if kind == "BertForSequenceClassification":
        return {"max_seq_length": int(settings.get("max_seq_length") or positions), "pair": bool(settings.get("pair"))}
    task = {"max_masks": MAX_MASKS}
    pretrain = Path(model_dir) / PRETRAIN_CONFIG_NAME
    if pretrain.is_file():
        task["max_seq_length"] = int(json.loads(pretrain.read_text()).get("max_seq_length") or positions)
    return task


def manifest_entry(name: str, model, tokenizer, model_dir, precision: str, files: dict[str, str], size: int) -> dict:
    kind, cfg = type(model).__name__, model.config
    title, card = model_card(model_dir)
    classifier = kind in ("BertForSequenceClassification", "BertForTokenClassification")
    return {
        "name": name,
        "title": title,
        "card": card,
        "views": list(VIEWS_BY_CLASS[kind]),
        "class": kind,
        "precision": precision,
        "bytes": size,
        "files": files,
        "config": {
            "layers": cfg.num_hidden_layers,
            "heads": cfg.num_attention_heads,
            "hidden": cfg.hidden_size,
            "vocab_size": cfg.vocab_size,
            "max_length": cfg.max_position_embeddings,
        },
        "labels": [cfg.id2label[i] for i in range(cfg.num_labels)] if classifier else None,
        "special": {
            "cls": tokenizer.cls_token_id,
            "sep": tokenizer.sep_token_id,
            "mask": tokenizer.mask_token_id,
            "pad": tokenizer.pad_token_id,
            "unk": tokenizer.unk_token_id,
        },
        "lowercase": tokenizer.lowercase,
        "task": browser_task(model, model_dir),
    }


def export_model(model_dir, out, name: str | None = None, precision: str = "auto", trace: str = "small") -> dict:
    """One model directory -> out/models/<name>/{model.onnx, tokenizer.json, weights.safetensors};
    returns its manifest entry. trace: which models get weights for the page's trace
    (lab.web.trace_export.traced); one without has `"trace": null` and no weights file."""
    model_dir = Path(model_dir)
    name = name or model_dir.name
    model, tokenizer = load(model_dir)  # fp32 in memory, whatever the checkpoint's dtype
    if type(model).__name__ not in OUTPUTS:
        raise ValueError(
            f"{model_dir} holds a {type(model).__name__}: the browser edition exports {', '.join(OUTPUTS)}"
        )
    if tokenizer is None:
        raise ValueError(f"{model_dir} has no tokenizer (vocab.txt or tokenizer.json): the page needs one")
    folder = Path(out) / SITE_MODELS_DIR / name
    folder.mkdir(parents=True, exist_ok=True)
    chosen = write_graph(model, folder / ONNX_NAME, precision)
    (folder / TOKENIZER_NAME).write_text(tokenizer.backend.to_str(pretty=False), encoding="utf-8")
    files = {
        "model": f"{SITE_MODELS_DIR}/{name}/{ONNX_NAME}",
        "tokenizer": f"{SITE_MODELS_DIR}/{name}/{TOKENIZER_NAME}",
    }
    size = sum((Path(out) / f).stat().st_size for f in files.values())
    entry = manifest_entry(name, model, tokenizer, model_dir, chosen, files, size)
    # its own bytes, which the first view never loads
    entry["trace"] = trace_entry(model, name, out) if traced(model, trace) else None
    return entry


# ----------------------------------------------------------------------------------------
# The site: every model, the manifest, the sizes
# ----------------------------------------------------------------------------------------
def available_models(models_dir=None) -> list[str]:
    """The names of the model directories in `models_dir` (default: the repository's models/)."""
    models_dir = Path(models_dir) if models_dir is not None else REPOSITORY / "models"
    if not models_dir.is_dir():
        raise FileNotFoundError(f"no models folder at {models_dir}")
    return sorted(p.name for p in models_dir.iterdir() if has_model_files(p))


def chosen_models(names, models_dir=None) -> list[Path]:
    """The model directories to export: every one in models_dir, or those named (checked first,
    all of them, so that a typo fails before minutes of exporting)."""
    models_dir = Path(models_dir) if models_dir is not None else REPOSITORY / "models"
    known = available_models(models_dir)
    if not names:
        if not known:
            raise FileNotFoundError(f"{models_dir} holds no model directories (config.json + weights)")
        return [models_dir / n for n in known]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            f"no model named {', '.join(map(repr, unknown))} in {models_dir}; choose from: {', '.join(known) or 'none'}"
        )
    return [models_dir / n for n in dict.fromkeys(names)]


def first_view_order(entry: dict) -> tuple[int, bool, str]:
    """Manifest order: by the page's first view a model serves, then, for the task views (answer,
    classify, tag), the real MiniLM encoder's model first (as the dashboard opens them: the tiny ones
    stay in the menu for comparison), then by name (the classroom model first)."""
    first = min(VIEWS.index(v) for v in entry["views"])
    tiny = VIEWS[first] in ("answer", "classify", "tag") and "minilm" not in entry["name"]
    return first, tiny, entry["name"]


def export_site(
    out, names=None, models_dir=None, precision: str = "auto", log=print, page: bool = True, trace: str = "small"
) -> dict:
    """Export the models (all of models_dir, or `names`) into `out` and write its manifest.json;
    returns the manifest. The manifest lists this export's models. page: also the page itself
    (lab.web.page: built from web/ by Node when needed) and the files a static Space needs.
    trace: the models whose weights the Step by step view gets ("small", "all", "none")."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out} is a file: give a folder (it is created if missing)")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if trace not in TRACES:
        raise ValueError(f"trace must be one of {', '.join(TRACES)}, not {trace!r}")
    directories = chosen_models(names, models_dir)
    require_web_packages()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # e.g. a file where a parent folder should be
        raise FileExistsError(f"cannot make the folder --out {out}: {e.strerror}") from None
    entries = []
    for directory in directories:
        log(f"exporting {directory.name} ...")
        entries.append(export_model(directory, out, precision=precision, trace=trace))
    manifest = {"version": VERSION, "models": sorted(entries, key=first_view_order)}
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if page:
        log("computing each view's opening example (openings.json) ...")
        write_openings(out, manifest, {d.name: d for d in directories})
        log("copying the page (web/dist, built by npm when out of date) ...")
        copy_page(out)
        write_space_files(out, manifest)  # README.md (sdk: static), .gitattributes, .nojekyll
    return manifest


def write_openings(out, manifest: dict, directories: dict) -> dict:
    """openings.json: each view's opening example (lab.web.results.OPENINGS) computed by the lab
    with the first model of the manifest that serves the view; the page draws it before its
    runtime and model have loaded. {view: {"model", "inputs", "result"}}."""
    openings = {}
    for view in VIEWS:
        entry = next((m for m in manifest["models"] if view in m["views"]), None)
        if entry is None:
            continue
        model, tokenizer = load(directories[entry["name"]])
        result = run_view(model.float(), tokenizer, view, OPENINGS[view])
        openings[view] = {"model": entry["name"], "inputs": OPENINGS[view], "result": result}
    (Path(out) / OPENINGS_NAME).write_text(json.dumps(openings, ensure_ascii=False), encoding="utf-8")
    return openings


@dataclass
class SiteSizes:
    """What a site folder holds, in bytes. first_view: what the page loads before it shows its
    first view: every file outside models/ (the manifest, and the page's own files when the page
    is built into the same folder) plus the files of the manifest's first model."""

    files: dict[str, int]  # path in the site -> bytes, every file
    total: int
    first_view: int  # first_view_files: the page draws its first view (openings.json)
    first_model: str | None
    computing: int = 0  # computing_files: ... and can compute in the browser
    computing_gzip: int = 0  # the same, as a server that compresses sends them


def site_files(out) -> dict[str, int]:
    """Every file of the site: {path relative to `out` (posix): bytes}."""
    out = Path(out)
    return {p.relative_to(out).as_posix(): p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file()}


def first_view_files(out) -> list[str]:
    """What a student's browser loads before the page draws its first view: the page's own files
    but the runtime (everything outside models/ and ort/: the page, its script and style,
    manifest.json and openings.json, the first view's numbers); paths relative to `out`."""
    skip = (SITE_MODELS_DIR + "/", RUNTIME_DIR + "/")  # the models and the runtime come later
    return [f for f in site_files(out) if not f.startswith(skip) and f not in SPACE_FILES and not f.endswith(".gz")]


def computing_files(out) -> list[str]:
    """What it loads before it computes in the browser: first_view_files, the runtime (ort/) and
    the files of the manifest's first model (the classroom model); paths relative to `out`."""
    out = Path(out)
    manifest = out / MANIFEST_NAME
    models = json.loads(manifest.read_text())["models"] if manifest.is_file() else []
    runtime = [f for f in site_files(out) if f.startswith(RUNTIME_DIR + "/")]
    return first_view_files(out) + runtime + (list(models[0]["files"].values()) if models else [])


def site_sizes(out) -> SiteSizes:
    out = Path(out)
    files = site_files(out)
    manifest = out / MANIFEST_NAME
    models = json.loads(manifest.read_text())["models"] if manifest.is_file() else []
    first = models[0] if models else None
    first_view = sum(files.get(f, 0) for f in first_view_files(out))
    computing = sum(files.get(f, 0) for f in computing_files(out))
    gzipped = sum(gzip_size(out / f) for f in computing_files(out))
    return SiteSizes(files, sum(files.values()), first_view, first["name"] if first else None, computing, gzipped)


def gzip_size(path) -> int:
    """The file's size as a static server sends it gzip-compressed (level 6, as servers do)."""
    return len(gzip.compress(Path(path).read_bytes(), compresslevel=6))


def size_report(manifest: dict, sizes: SiteSizes) -> list[str]:
    """The lines the command prints: each model's files, the site, the first view against its target."""
    lines = []
    for m in manifest["models"]:
        parts = ", ".join(f"{Path(f).name} {sizes.files.get(f, 0) / MB:.2f} MB" for f in m["files"].values())
        lines.append(f"  {m['name']:<22} {m['precision']:<13} {parts}  = {m['bytes'] / MB:.2f} MB")
    lines.append(f"site total: {sizes.total / MB:.2f} MB in {len(sizes.files)} files")
    verdict = "within" if sizes.first_view <= PAGE_WEIGHT_TARGET else "OVER"
    lines.append(
        f"page weight until the first view is drawn (the page, manifest.json, openings.json): "
        f"{sizes.first_view / MB:.2f} MB, {verdict} the {PAGE_WEIGHT_TARGET / MB:.0f} MB target"
    )
    if sizes.computing > sizes.first_view:
        verdict = "within" if sizes.computing_gzip <= PAGE_WEIGHT_TARGET else "over"
        lines.append(
            f"until the page computes in the browser (+ the runtime and {sizes.first_model}): "
            f"{sizes.computing / MB:.2f} MB, {sizes.computing_gzip / MB:.2f} MB gzip-compressed, "
            f"{verdict} the {PAGE_WEIGHT_TARGET / MB:.0f} MB target"
        )
    return lines


# ----------------------------------------------------------------------------------------
# An exported graph behind the lab model's call (measurements and tests)
# ----------------------------------------------------------------------------------------
class OnnxModel(nn.Module):
    """An exported graph run by onnxruntime, called as a lab model is: model(input_ids,
    token_type_ids, attention_mask) -> ModelOutput (attentions as L x (B, A, T, T)). The lab's own
    evaluation code (inference.predict_answers, evaluate_classification, inference.predict_tags)
    then measures the graph exactly as it measures the PyTorch model."""

    def __init__(self, path, config, threads: int | None = None):
        super().__init__()
        require_web_packages()
        import onnxruntime  # optional dependency (the [web] extra)

        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.outputs = [o.name for o in self.session.get_outputs()]
        self.config = config
        self.anchor = nn.Parameter(torch.zeros(0), requires_grad=False)  # next(parameters()): the CPU

    def forward(self, input_ids, token_type_ids=None, attention_mask=None) -> ModelOutput:
        ids = input_ids.cpu().long()
        feed = {
            "input_ids": ids.numpy(),
            "token_type_ids": (token_type_ids if token_type_ids is not None else torch.zeros_like(ids))
            .cpu()
            .long()
            .numpy(),
            "attention_mask": (attention_mask if attention_mask is not None else torch.ones_like(ids))
            .cpu()
            .long()
            .numpy(),
        }
        out = ModelOutput()
        for name, value in zip(self.outputs, self.session.run(self.outputs, feed)):
            value = torch.from_numpy(value)
            setattr(out, name, tuple(value) if name == "attentions" else value)  # (L, B, A, T, T) -> L x (B, A, T, T)
        return out
