"""ModernBERT checkpoints (Warner et al. 2024) in Hugging Face's layout, read and written by the lab.

    cfg = config_from_modernbert(json.loads(Path("mb/config.json").read_text()))  # a BertConfig
    sd = state_dict_from_modernbert(load_file("mb/model.safetensors"))            # the lab's names
    config_to_modernbert(cfg), state_dict_to_modernbert(sd)                        # and back

ModernBERT is BERT with every switch of lab.modern on (pre-norm, GeGLU, rotary with a base for
the global and one for the local layers, local attention) and no segments, so its tensors are
the lab's under other names. lab.load and lab.save use this module: a ModernBertForMaskedLM or
ModernBertModel directory loads as a BertForMaskedLM or BertModel, and those two lab classes with
a ModernBERT-shaped config save in this layout, which transformers reads. The names:

    lab                                                  ModernBERT
    bert.embeddings.word_embeddings.weight               model.embeddings.tok_embeddings.weight
    bert.embeddings.LayerNorm.*                          model.embeddings.norm.*
    bert.encoder.layer.N.attention.output.LayerNorm.*    model.layers.N.attn_norm.*   (none in layer 0)
    bert.encoder.layer.N.attention.self.query.*   |
    bert.encoder.layer.N.attention.self.key.*     |--    model.layers.N.attn.Wqkv.*   (stacked: q, k, v)
    bert.encoder.layer.N.attention.self.value.*   |
    bert.encoder.layer.N.attention.output.dense.*        model.layers.N.attn.Wo.*
    bert.encoder.layer.N.output.LayerNorm.*              model.layers.N.mlp_norm.*
    bert.encoder.layer.N.intermediate.dense.*            model.layers.N.mlp.Wi.*      (value, gate)
    bert.encoder.layer.N.output.dense.*                  model.layers.N.mlp.Wo.*
    bert.encoder.final_norm.*                            model.final_norm.*
    cls.predictions.transform.dense.*                    head.dense.*
    cls.predictions.transform.LayerNorm.*                head.norm.*
    cls.predictions.decoder.weight                       decoder.weight   (both tied to the word embeddings)
    cls.predictions.bias                                 decoder.bias

A bare encoder (BertModel, ModernBertModel) has the names without "bert." / "model."; ModernBERT
has no pooler, so a BertModel's is not written. Dropout differs in place (training only):
hidden_dropout_prob is read from embedding_dropout and written to embedding_ and mlp_dropout.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch

from lab.config import BertConfig
from lab.files import CONFIG_NAME

MODEL_TYPE = "modernbert"
ARCHITECTURES = {"BertForMaskedLM": "ModernBertForMaskedLM", "BertModel": "ModernBertModel"}  # lab -> ModernBERT
LAB_CLASSES = {v: k for k, v in ARCHITECTURES.items()}

# ModernBertConfig's defaults (transformers 5; the old names too), for fields a config.json leaves out
DEFAULTS = {
    "vocab_size": 50368,
    "hidden_size": 768,
    "intermediate_size": 1152,
    "num_hidden_layers": 22,
    "num_attention_heads": 12,
    "hidden_activation": "gelu",
    "classifier_activation": "gelu",
    "max_position_embeddings": 8192,
    "initializer_range": 0.02,
    "norm_eps": 1e-5,
    "pad_token_id": 50283,
    "attention_bias": False,
    "mlp_bias": False,
    "norm_bias": False,
    "classifier_bias": False,
    "decoder_bias": True,
    "tie_word_embeddings": True,
    "embedding_dropout": 0.0,
    "attention_dropout": 0.0,
    "classifier_dropout": 0.0,
    "local_attention": 128,
    "global_attn_every_n_layers": 3,
    "global_rope_theta": 160_000.0,
    "local_rope_theta": 10_000.0,
}
BIASES = ("attention_bias", "mlp_bias", "norm_bias", "classifier_bias")  # the lab has one switch for all four
# transformers' activation names -> the lab's (gelu_pytorch_tanh is the lab's gelu_new, to the bit)
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_new", "gelu_pytorch_tanh": "gelu_new", "relu": "relu"}
EXPORTED_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_pytorch_tanh", "relu": "relu"}
ROPE_KINDS = (("full_attention", "global_rope_theta"), ("sliding_attention", "local_rope_theta"))
# what makes a BertConfig ModernBERT's shape: (field, ModernBERT's value)
SHAPE = (
    ("norm_position", "pre"),
    ("feed_forward", "glu"),
    ("position_embedding_type", "rotary"),
    ("type_vocab_size", 0),
)


# ----------------------------------------------------------------------------------------
# config.json
# ----------------------------------------------------------------------------------------
def is_modernbert_dir(directory) -> bool:
    """Does this directory's config.json say model_type "modernbert"?"""
    try:
        return json.loads((Path(directory) / CONFIG_NAME).read_text(encoding="utf-8")).get("model_type") == MODEL_TYPE
    except (OSError, ValueError, AttributeError):
        return False


def load_config(directory) -> BertConfig:
    """A directory's config.json as a BertConfig: ModernBERT's converted (config_from_modernbert),
    BERT's and the lab's as BertConfig.load reads them."""
    if not is_modernbert_dir(directory):
        return BertConfig.load(directory)
    path = Path(directory) / CONFIG_NAME
    return config_from_modernbert(json.loads(path.read_text(encoding="utf-8")), source=str(path))


def global_every(d: dict, layers: int) -> int:
    """N such that layer i attends globally when i % N == 0 (1: every layer global), from
    layer_types (transformers 5) or global_attn_every_n_layers (older config.json files)."""
    types = d.get("layer_types")
    if types is None:
        n = d.get("global_attn_every_n_layers", DEFAULTS["global_attn_every_n_layers"])
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"global_attn_every_n_layers must be a positive integer, got {n!r}")
        return 1 if layers == 1 else n
    full = [i for i, t in enumerate(types) if t == "full_attention"]
    n = full[1] if len(full) > 1 else max(layers, 1)  # the second global layer, or layer 0 alone
    if len(types) != layers or [i % n == 0 for i in range(layers)] != [t == "full_attention" for t in types]:
        raise ValueError(
            f"layer_types {types} is not a pattern the lab has: its layer i is global (full_attention) when "
            f"i % N == 0 and local (sliding_attention) otherwise, for one N, over num_hidden_layers={layers}"
        )
    return n


def rope_thetas(d: dict) -> tuple[float, float]:
    """(global, local) RoPE bases from rope_parameters (transformers 5) or global_/local_rope_theta."""
    if d.get("rope_scaling"):
        raise ValueError(f"rope_scaling {d['rope_scaling']}: the lab has plain RoPE only, no scaling")
    params = d.get("rope_parameters") or {}
    if set(params) - {kind for kind, _ in ROPE_KINDS}:
        raise ValueError(f"rope_parameters {params}: expected the keys full_attention and sliding_attention")
    thetas = []
    for kind, old in ROPE_KINDS:
        p = params.get(kind) or {}
        if p.get("rope_type", "default") != "default" or set(p) - {"rope_type", "rope_theta"}:
            raise ValueError(f"rope_parameters[{kind!r}] = {p}: the lab has plain RoPE only (rope_type 'default')")
        thetas.append(float(p.get("rope_theta", d.get(old, DEFAULTS[old]))))
    return thetas[0], thetas[1]


def _refusals(d: dict) -> list[str]:
    """What in a ModernBERT config.json the lab cannot build, each naming its fields."""
    get = lambda name: d.get(name, DEFAULTS[name])  # noqa: E731
    problems = []
    biases = {name: bool(get(name)) for name in BIASES}
    if len(set(biases.values())) > 1:
        problems.append(
            f"{', '.join(f'{k}={v}' for k, v in biases.items())}: the lab has one bias switch for every "
            f"linear and norm layer (BertConfig.bias), so these must agree"
        )
    if not get("decoder_bias"):
        problems.append("decoder_bias=False: the lab's masked-LM head always has its per-word bias")
    if not get("tie_word_embeddings"):
        problems.append("tie_word_embeddings=False: the lab's masked-LM decoder is the word embedding matrix")
    for name in ("hidden_activation", "classifier_activation"):
        if get(name) not in ACTIVATIONS:
            problems.append(f"{name} {get(name)!r} is not one the lab has ({', '.join(ACTIVATIONS)})")
    if get("classifier_activation") in ACTIVATIONS and get("hidden_activation") in ACTIVATIONS:
        if ACTIVATIONS[get("classifier_activation")] != ACTIVATIONS[get("hidden_activation")]:
            problems.append(
                f"classifier_activation {get('classifier_activation')!r} differs from hidden_activation "
                f"{get('hidden_activation')!r}: the lab's masked-LM head uses the layers' activation"
            )
    if get("pad_token_id") is None:
        problems.append("pad_token_id is null: the lab's word embeddings keep a [PAD] row")
    return problems


def config_from_modernbert(d: dict, source: str = "config") -> BertConfig:
    """A ModernBERT config.json (a dict) -> the BertConfig of the same model: pre-norm, GeGLU,
    rotary (both bases), bias from the *_bias fields, local attention, no segments. What the lab
    cannot express is refused with a ValueError naming the field."""
    if not isinstance(d, dict) or d.get("model_type") != MODEL_TYPE:
        raise ValueError(f"{source}: not a ModernBERT config (model_type {MODEL_TYPE!r})")
    get = lambda name: d.get(name, DEFAULTS[name])  # noqa: E731
    problems = _refusals(d)
    layers = get("num_hidden_layers")
    try:
        n = global_every(d, layers)
        rope_theta, local_rope_theta = rope_thetas(d)
    except ValueError as e:
        problems.append(str(e))
    if problems:
        raise ValueError(f"{source}: a ModernBERT the lab cannot build: " + "; ".join(problems))
    values = {
        **{k: d[k] for k in ("id2label", "label2id", "num_labels") if k in d},
        "model_type": "bert-lab",
        **{k: get(k) for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads")},
        **{k: get(k) for k in ("intermediate_size", "max_position_embeddings", "initializer_range", "pad_token_id")},
        "hidden_act": ACTIVATIONS[get("hidden_activation")],
        "hidden_dropout_prob": get("embedding_dropout"),
        "attention_probs_dropout_prob": get("attention_dropout"),
        "classifier_dropout": get("classifier_dropout"),
        "type_vocab_size": 0,
        "layer_norm_eps": get("norm_eps"),
        "norm_position": "pre",
        "feed_forward": "glu",
        "position_embedding_type": "rotary",
        "rope_theta": rope_theta,
        "local_rope_theta": local_rope_theta,
        "bias": bool(get("attention_bias")),
        "local_attention": get("local_attention") if n > 1 else 0,
        "global_attn_every_n_layers": n,
    }
    return BertConfig.from_dict(values, source=source)


def differences(cfg: BertConfig) -> list[str]:
    """Where a BertConfig is not ModernBERT's shape, one phrase per switch ([] when it is)."""
    return [f"{k} is {getattr(cfg, k)!r} (ModernBERT: {v!r})" for k, v in SHAPE if getattr(cfg, k) != v]


def config_to_modernbert(cfg: BertConfig, special_ids: dict | None = None) -> dict:
    """A ModernBERT-shaped BertConfig -> ModernBERT's config.json (a dict), in the names of
    transformers 5 (layer_types, rope_parameters) and of older versions (global_attn_every_n_layers,
    global_/local_rope_theta). special_ids: cls/sep/bos/eos token ids (a tokenizer's), else null."""
    off = differences(cfg)
    if off:
        raise ValueError("not a ModernBERT-shaped config, so it keeps the lab's layout: " + "; ".join(off))
    n = cfg.global_attn_every_n_layers if cfg.local_attention else 1
    act = EXPORTED_ACTIVATIONS[cfg.hidden_act]
    ids = {f"{k}_token_id": (special_ids or {}).get(f"{k}_token_id") for k in ("bos", "eos", "cls", "sep")}
    dropout = cfg.classifier_dropout if cfg.classifier_dropout is not None else cfg.hidden_dropout_prob
    return {
        "model_type": MODEL_TYPE,
        **{k: getattr(cfg, k) for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers")},
        **{k: getattr(cfg, k) for k in ("num_attention_heads", "max_position_embeddings", "initializer_range")},
        "hidden_activation": act,
        "classifier_activation": act,
        "norm_eps": cfg.layer_norm_eps,
        **{name: cfg.bias for name in BIASES},
        "decoder_bias": True,
        "tie_word_embeddings": True,
        "pad_token_id": cfg.pad_token_id,
        **ids,
        "embedding_dropout": cfg.hidden_dropout_prob,
        "mlp_dropout": cfg.hidden_dropout_prob,
        "attention_dropout": cfg.attention_probs_dropout_prob,
        "classifier_dropout": dropout,
        "local_attention": cfg.local_attention or DEFAULTS["local_attention"],
        "global_attn_every_n_layers": n,
        "layer_types": ["full_attention" if i % n == 0 else "sliding_attention" for i in range(cfg.num_hidden_layers)],
        "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": cfg.rope_theta},
            "sliding_attention": {"rope_type": "default", "rope_theta": cfg.local_rope_theta},
        },
        "global_rope_theta": cfg.rope_theta,
        "local_rope_theta": cfg.local_rope_theta,
        "id2label": {str(k): v for k, v in cfg.id2label.items()},
        "label2id": dict(cfg.label2id),
    }


# ----------------------------------------------------------------------------------------
# The tensors
# ----------------------------------------------------------------------------------------
RENAMES = (  # (lab, ModernBERT) name prefixes; {n} is a layer's number. Wqkv: QKV below.
    ("bert.embeddings.word_embeddings.", "model.embeddings.tok_embeddings."),
    ("bert.embeddings.LayerNorm.", "model.embeddings.norm."),
    ("bert.encoder.layer.{n}.attention.output.LayerNorm.", "model.layers.{n}.attn_norm."),
    ("bert.encoder.layer.{n}.attention.output.dense.", "model.layers.{n}.attn.Wo."),
    ("bert.encoder.layer.{n}.output.LayerNorm.", "model.layers.{n}.mlp_norm."),
    ("bert.encoder.layer.{n}.intermediate.dense.", "model.layers.{n}.mlp.Wi."),
    ("bert.encoder.layer.{n}.output.dense.", "model.layers.{n}.mlp.Wo."),
    ("bert.encoder.final_norm.", "model.final_norm."),
    ("cls.predictions.transform.dense.", "head.dense."),
    ("cls.predictions.transform.LayerNorm.", "head.norm."),
    ("cls.predictions.decoder.weight", "decoder.weight"),  # tied: lab.checkpoint keeps one copy
    ("cls.predictions.bias", "decoder.bias"),
)
LAB_QKV = re.compile(r"bert\.encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.(weight|bias)")
MB_QKV = re.compile(r"model\.layers\.(\d+)\.attn\.Wqkv\.(weight|bias)")


def _rename(name: str, pairs) -> str | None:
    """name with the first matching (source, target) prefix swapped; None when none matches."""
    for source, target in pairs:
        m = re.fullmatch(re.escape(source).replace(r"\{n\}", r"(?P<n>\d+)") + r"(?P<rest>.*)", name)
        if m:
            return target.replace("{n}", m.groupdict().get("n") or "") + m["rest"]
    return None


def state_dict_from_modernbert(sd: dict[str, torch.Tensor], where="checkpoint") -> dict[str, torch.Tensor]:
    """ModernBERT's tensors -> the lab's names (bert.*, cls.*), Wqkv split into query, key and
    value. Tensors of a head the lab does not have (a ModernBertForSequenceClassification's
    classifier, ...) are refused, by name."""
    if not any(k.startswith("model.") for k in sd):  # a bare ModernBertModel
        sd = {"model." + k: v for k, v in sd.items()}
    out, unknown = {}, []
    for name, t in sd.items():
        if m := MB_QKV.fullmatch(name):
            for part, piece in zip(("query", "key", "value"), t.chunk(3, dim=0)):
                out[f"bert.encoder.layer.{m[1]}.attention.self.{part}.{m[2]}"] = piece
        elif (lab := _rename(name, [(mb, lab) for lab, mb in RENAMES])) is not None:
            out[lab] = t
        else:
            unknown.append(name)
    if unknown:
        raise ValueError(
            f"{where}: tensors the lab has no place for: {', '.join(sorted(unknown)[:6])}"
            f"{' ...' if len(unknown) > 6 else ''}. The lab reads ModernBERT's encoder (ModernBertModel) "
            f"and its masked-LM head (ModernBertForMaskedLM), not the other heads"
        )
    return out


def state_dict_to_modernbert(sd: dict[str, torch.Tensor], bare: bool = False) -> dict[str, torch.Tensor]:
    """The lab's tensors (a BertForMaskedLM's state_dict, or a BertModel's with bare=True; tied
    names already left out) -> ModernBERT's names, query, key and value stacked into Wqkv."""
    if bare:  # a BertModel: no "bert." of its own, and a pooler ModernBERT does not have
        sd = {"bert." + k: v for k, v in sd.items() if not k.startswith("pooler.")}
    out, qkv = {}, {}
    for name, t in sd.items():
        if m := LAB_QKV.fullmatch(name):
            qkv.setdefault((m[1], m[3]), {})[m[2]] = t
        elif (mb := _rename(name, RENAMES)) is not None:
            out[mb] = t
        else:
            raise ValueError(f"{name} has no place in ModernBERT's layout")
    for (n, kind), parts in qkv.items():
        out[f"model.layers.{n}.attn.Wqkv.{kind}"] = torch.cat([parts["query"], parts["key"], parts["value"]])
    return {k.removeprefix("model."): v for k, v in out.items()} if bare else out
