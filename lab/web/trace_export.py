"""What the browser edition needs to trace a model step by step (window.bertLab.trace, web/src/trace.js).

    python -m lab export-web --out site     # writes models/<name>/weights.safetensors beside each graph

The page computes explore.trace's forward pass itself, one operation at a time in plain JavaScript,
so it needs the weights as numbers rather than an ONNX graph: the lab model's state_dict(), each
tensor once (the masked-LM decoder's weight is the word embedding matrix, stored under
`bert.embeddings.word_embeddings.weight` only, as lab.checkpoint stores it), under the lab's module
paths. A tensor that fp16 holds exactly (every tensor of a checkpoint saved in fp16, as the bundled
ones are) is stored in fp16, any other in fp32: the same numbers, half the bytes where possible.
The manifest entry's `trace` object (trace_entry) says where the file is, its bytes (apart from
the entry's `bytes`, which the menus show), the settings the forward pass needs and the step
texts of lab.inspect.trace.catalogue, so the page says what the lab says. The first view never
loads the weights: the page fetches them on the first trace call.

One graph serves every model: models/trace_linear.onnx (write_linear_graph, a few hundred bytes),
Y = X Wᵀ + b with every size dynamic, through which the page computes a large model's linear layers
with onnxruntime-web's WebAssembly kernels instead of JavaScript loops (web/src/trace.js says which
models); the entry's `trace.linear` gives its path.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import save_file

from lab.checkpoint import aliases
from lab.config import SWITCHES
from lab.files import SITE_MODELS_DIR
from lab.inspect.encoding import MAX_MASKS
from lab.inspect.trace import catalogue

WEIGHTS_FILE = "weights.safetensors"  # models/<name>/ in the site
TRACES = ("small", "all", "none")  # which models export-web writes weights for (--trace)
SMALL_BYTES = 10_000_000  # "small": a model whose weights file is at most this (the tiny models, not MiniLM)
LINEAR_FILE = "trace_linear.onnx"  # models/ in the site: one graph for every model
LINEAR_OPSET = 18
# the BertConfig fields the page's forward pass reads (web/src/trace.js), under their config.json names
CONFIG_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "max_position_embeddings",
    "type_vocab_size",
    "layer_norm_eps",
    "classifier_layers",
    *SWITCHES,  # what changed since BERT: norm_position, feed_forward, rotary, bias, local attention
)


def trace_tensors(model) -> dict[str, torch.Tensor]:
    """The model's state_dict for the page: each tensor once, under its first name, fp16 where
    fp16 holds every value exactly, fp32 otherwise (contiguous, on the CPU).

    Example: a checkpoint saved in fp16 and loaded in fp32 -> every tensor back in fp16 (the
    values are fp16 numbers); a weight with 0.1 (not an fp16 number) stays fp32."""
    tied = aliases(model)  # {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight", ...}
    out = {}
    for name, t in model.state_dict().items():
        if name in tied or not t.is_floating_point():
            continue
        t = t.detach().to("cpu", torch.float32)
        half = t.half()
        out[name] = (half if torch.equal(half.float(), t) else t).contiguous().clone()
    return out


def linear_graph():
    """Y = Gemm(X, W, B, transB=1): X float [N, K], W float [M, K] (nn.Linear's layout), B float
    [M] -> Y [N, M], every size dynamic; opset 18, no weights of its own. An onnx.ModelProto."""
    # optional dependency (the [web] extra): `import lab` and the command line work without it
    import onnx
    from onnx import TensorProto, helper

    inputs = [
        helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", "K"]),
        helper.make_tensor_value_info("W", TensorProto.FLOAT, ["M", "K"]),
        helper.make_tensor_value_info("B", TensorProto.FLOAT, ["M"]),
    ]
    output = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", "M"])
    node = helper.make_node("Gemm", ["X", "W", "B"], ["Y"], transB=1)
    graph = helper.make_graph([node], "trace_linear", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", LINEAR_OPSET)], producer_name="bert-lab")
    model.ir_version = 8  # opset 18's own IR version: read by every onnxruntime since 1.14
    onnx.checker.check_model(model, full_check=True)
    return model


def write_linear_graph(out) -> str:
    """Write linear_graph() into out/models/ (once per site; the same bytes each time) and return
    its path in the site."""
    path = f"{SITE_MODELS_DIR}/{LINEAR_FILE}"
    target = Path(out) / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(linear_graph().SerializeToString())
    return path


def traced(model, which: str) -> bool:
    """Whether export-web writes `model`'s weights for the page's trace: which = "all", "none", or
    "small" (the default: weights of at most SMALL_BYTES, so a site of every bundled model stays
    within its size target; a MiniLM model's are 45 MB)."""
    if which not in TRACES:
        raise ValueError(f"trace must be one of {', '.join(TRACES)}, not {which!r}")
    if which != "small":
        return which == "all"
    return sum(t.numel() * t.element_size() for t in trace_tensors(model).values()) <= SMALL_BYTES


def trace_config(model) -> dict:
    """The settings the page's forward pass needs: CONFIG_FIELDS, the model class and its labels."""
    cfg = model.config
    return {
        "class": type(model).__name__,
        **{name: getattr(cfg, name) for name in CONFIG_FIELDS},
        "labels": [cfg.id2label[i] for i in range(cfg.num_labels)],
    }


def trace_entry(model, name: str, out) -> dict:
    """Write the weights of `model` into out/models/<name>/ and return the manifest entry's
    `trace` object: {weights (path in the site), bytes, dtypes ({"F16": n, "F32": n} tensors),
    linear (the path of write_linear_graph's graph, shared by every model), config (trace_config),
    max_masks, catalogue (kind -> formula, section, what; {T}, {M} and {last} left for the input,
    as lab.inspect.trace.fill sets them)}."""
    path = f"{SITE_MODELS_DIR}/{name}/{WEIGHTS_FILE}"
    tensors = trace_tensors(model)
    target = Path(out) / path
    save_file(tensors, str(target), metadata={"format": "pt"})
    dtypes: dict[str, int] = {}
    for t in tensors.values():
        key = "F16" if t.dtype == torch.float16 else "F32"
        dtypes[key] = dtypes.get(key, 0) + 1
    return {
        "weights": path,
        "bytes": target.stat().st_size,
        "dtypes": dtypes,
        "linear": write_linear_graph(out),
        "config": trace_config(model),
        "max_masks": MAX_MASKS,
        "catalogue": catalogue(model.config),
    }
