"""BERT, step by step: one forward pass as the ordered list of its operations, with real numbers.

    from lab.inspect import explore
    t = explore.trace(model, tokenizer, "the cat sat on the [MASK] .")
    t.names()                       # ["bert.embeddings.word_embeddings", ..., "cls.predictions.softmax"]
    step = t.step("bert.encoder.layer.0.attention.self.probs")
    step.shape, step.formula        # (2, 9, 9), "P_h = softmax(S_h + M) over each row's 9 keys"
    step.values                     # a float32 tensor of that shape

Every step is computed here from the model's own modules and weights, in fp32, one operation at a
time, in the paper's order (Section 3: input, encoder layers, the heads of 3.1 and 3.2). A step
named by a module path (Hugging Face layout, `bert.encoder.layer.0.attention.self.query`) is that
module's output: `step.module` names the module, and a forward hook on it during the model's own
forward pass sees the same numbers (tests/test_trace.py). The steps between modules have the
names of STEP_NAMES (docs/inside-bert.md lists them): the embedding sum, each head's scores, the
mask added, the softmax, each head's context, the activation, each residual sum, the softmaxes
of the heads. A model with the switches since BERT (lab.modern) has its own steps: pre-norm moves
the LayerNorms before each sub-layer and ends with `bert.encoder.final_norm`, rotary positions
turn q and k (`...attention.self.rotary_query`), GeGLU gates the feed-forward, and a local layer's
mask keeps a window.

STEPS is the catalogue of what each kind of step computes: its formula in the paper's notation
(written with the real sizes when a trace fills it in), the paper's section and one sentence.
The browser edition reads the same catalogue from the site's manifest, so the page and the lab
say the same thing (window.bertLab.trace returns the same names and values, web/src/trace.js).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from lab.inspect.encoding import MAX_MASKS, encode
from lab.model import ACT
from lab.modern import apply_rotary
from lab.tokenizer import clean_text

# kind -> (formula template, the paper's section, one sentence of what the step does).
# Templates use {T} tokens, {H} hidden, {A} heads, {d} head size, {I} feed-forward width,
# {V} vocabulary, {K} labels, {M} predicted positions, {eps}, {W} local window, {theta}.
STEPS: dict[str, tuple[str, str, str]] = {
    "word_embeddings": (
        "E_tok = W_tok[ids]: {T} rows of the {V}×{H} token table",
        "3, Figure 2",
        "Each WordPiece id picks its row of the token embedding table.",
    ),
    "token_type_embeddings": (
        "E_seg = W_seg[segment]: {T} rows of the 2×{H} segment table",
        "3, Figure 2",
        "Each token gets the vector of its sentence, A or B.",
    ),
    "position_embeddings": (
        "E_pos = W_pos[0 … {last}]: the first {T} rows of the learned position table",
        "3, Figure 2",
        "Each position 0, 1, 2, ... has its own learned vector, so the model knows word order.",
    ),
    "embedding_sum": (
        "E = E_tok + E_seg + E_pos  ({T}×{H})",
        "3, Figure 2",
        "The input representation is the sum of the token, segment and position embeddings.",
    ),
    "embedding_sum_rotary": (
        "E = E_tok + E_seg  ({T}×{H}; positions enter later, as rotary turns of q and k)",
        "3, Figure 2; since BERT: Su et al. 2021",
        "The input representation: token plus segment embeddings; this model has no position table.",
    ),
    "embedding_sum_no_segment": (
        "E = E_tok + E_pos  ({T}×{H}; this model has no segment table)",
        "3, Figure 2",
        "The input representation: token plus position embeddings; this model has no segments.",
    ),
    "layer_norm": (
        "LN(x) = γ ⊙ (x − μ) / √(σ² + {eps}) + β, over each row's {H} numbers",
        "3 (Vaswani et al. 2017, 3.1)",
        "Every token vector is rescaled to mean 0 and variance 1, then stretched and shifted by learned weights.",
    ),
    "query": (
        "Q = X W_Q + b_Q  ({T}×{H} · {H}×{H})",
        "3 (Vaswani et al. 2017, 3.2)",
        "Each token's query: what it is looking for in the other tokens.",
    ),
    "key": (
        "K = X W_K + b_K  ({T}×{H} · {H}×{H})",
        "3 (Vaswani et al. 2017, 3.2)",
        "Each token's key: what it offers to the queries of the others.",
    ),
    "value": (
        "V = X W_V + b_V  ({T}×{H} · {H}×{H})",
        "3 (Vaswani et al. 2017, 3.2)",
        "Each token's value: what it passes on to the tokens that attend to it.",
    ),
    "rotary": (
        "RoPE(x)_t = x_t cos(tθ) + rot(x_t) sin(tθ), θ_i = {theta}^(−2i/{d})  ({A}×{T}×{d})",
        "since BERT: Su et al. 2021",
        "Rotary positions: each pair of numbers of a head's query or key is turned by an angle that grows "
        "with the position.",
    ),
    "scores": (
        "S_h = Q_h K_hᵀ / √{d}  ({A} heads of {T}×{T})",
        "3 (Vaswani et al. 2017, 3.2.1)",
        "How well each query matches each key, for each head, scaled by the square root of the head size.",
    ),
    "mask": (
        "S + M: M = 0 where a key may be seen, −∞ where it may not (padding)",
        "3 (Vaswani et al. 2017, 3.2.3)",
        "Keys a token may not see (padding) get minus infinity, so they get no attention; "
        "every key of one text is seen.",
    ),
    "mask_local": (
        "S + M: M = 0 within {half} positions either side (a {W}-token window), −∞ outside",
        "since BERT: ModernBERT (Warner et al. 2024)",
        "A local layer: each token sees only the keys within its window; the others get minus infinity.",
    ),
    "softmax": (
        "P_h = softmax(S_h + M) over each row's {T} keys",
        "3 (Vaswani et al. 2017, 3.2.1)",
        "Each row of scores becomes probabilities that sum to 1: how much each token attends to each other token.",
    ),
    "context": (
        "C_h = P_h V_h  ({T}×{T} · {T}×{d}, for {A} heads)",
        "3 (Vaswani et al. 2017, 3.2.1)",
        "Each token's new vector in each head: the values of all tokens, weighted by its attention.",
    ),
    "concat": (
        "C = Concat(C_1, …, C_{A})  ({T}×{H})",
        "3 (Vaswani et al. 2017, 3.2.2)",
        "The heads' outputs side by side, one {d}-wide slice per head.",
    ),
    "attention_output": (
        "C W_O + b_O  ({T}×{H} · {H}×{H})",
        "3 (Vaswani et al. 2017, 3.2.2)",
        "A linear layer mixes the heads' outputs back into one vector per token.",
    ),
    "residual": (
        "X + Sublayer(X)  ({T}×{H})",
        "3 (Vaswani et al. 2017, 3.1)",
        "The residual connection: the sub-layer's output is added to its input, so information can skip it.",
    ),
    "ffn_in": (
        "X W_1 + b_1  ({T}×{H} · {H}×{I})",
        "3 (Vaswani et al. 2017, 3.3)",
        "The feed-forward network widens every token vector, each token on its own.",
    ),
    "ffn_in_glu": (
        "X [W_v W_g] + [b_v b_g]  ({T}×{H} · {H}×2·{I}: a value half and a gate half)",
        "since BERT: Shazeer 2020",
        "The gated feed-forward widens every token vector into two halves, a value and a gate.",
    ),
    "gelu": (
        "GELU(x) = x Φ(x) = x · ½(1 + erf(x/√2)), element-wise  ({T}×{I})",
        "3.1 (Hendrycks and Gimpel 2016)",
        "The activation: negative numbers are squashed towards 0, positive ones pass almost unchanged.",
    ),
    "gelu_tanh": (
        "GELU(x) ≈ ½x(1 + tanh(√(2/π)(x + 0.044715x³))), element-wise  ({T}×{I})",
        "3.1 (Hendrycks and Gimpel 2016)",
        "The activation, in its tanh approximation.",
    ),
    "relu": (
        "ReLU(x) = max(0, x), element-wise  ({T}×{I})",
        "3 (Vaswani et al. 2017, 3.3)",
        "The activation: negative numbers become 0.",
    ),
    "geglu": (
        "GELU(X W_v) ⊙ (X W_g), element-wise  ({T}×{I})",
        "since BERT: Shazeer 2020",
        "A gated feed-forward: one half of the widened vector, through GELU, scales the other half.",
    ),
    "ffn_out": (
        "A W_2 + b_2  ({T}×{I} · {I}×{H})",
        "3 (Vaswani et al. 2017, 3.3)",
        "The feed-forward network narrows every token vector back to {H} numbers.",
    ),
    "pooler_dense": (
        "h_[CLS] W_p + b_p  ({H} · {H}×{H})",
        "3, 4.1",
        "The pooler reads only the first token, [CLS], the summary of the whole input.",
    ),
    "tanh": (
        "tanh(x), element-wise  ({H})",
        "3, 4.1",
        "The pooled [CLS] vector, squashed into (−1, 1).",
    ),
    "mlm_dense": (
        "h W_t + b_t at the {M} predicted positions  ({M}×{H} · {H}×{H})",
        "3.1, Task #1 (Masked LM)",
        "The masked-LM head first transforms the final vector of each [MASK].",
    ),
    "mlm_activation": (
        "{act}, element-wise  ({M}×{H})",
        "3.1, Task #1 (Masked LM)",
        "The head's activation.",
    ),
    "decoder": (
        "logits = h W_tokᵀ + b  ({M}×{H} · {H}×{V}; W_tok is the input token table)",
        "3.1, Task #1 (Masked LM)",
        "A score for every word of the vocabulary, using the input embeddings again (tied weights).",
    ),
    "mlm_softmax": (
        "P(word) = softmax(logits) over the {V} words",
        "3.1, Task #1 (Masked LM)",
        "The model's guess at each [MASK]: a probability for every word of the vocabulary.",
    ),
    "nsp_logits": (
        "C W_nsp + b_nsp  ({H} · {H}×2; C the pooled [CLS])",
        "3.1, Task #2 (NSP)",
        "Two scores from the [CLS] vector: IsNext and NotNext.",
    ),
    "nsp_softmax": (
        "P(IsNext), P(NotNext) = softmax(two scores)",
        "3.1, Task #2 (NSP)",
        "How sure the model is that sentence B follows sentence A.",
    ),
    "classifier": (
        "C W + b  ({H} · {H}×{K}; C the pooled [CLS])",
        "3.2, 4.1",
        "Fine-tuning's one new layer: a score for each of the {K} labels from the [CLS] vector.",
    ),
    "classifier_softmax": (
        "P(label) = softmax(C W + b) over the {K} labels",
        "3.2, 4.1",
        "The classifier's answer: a probability for each label.",
    ),
    "tagger": (
        "h_i W + b at every token  ({T}×{H} · {H}×{K})",
        "3.2, 5.3",
        "Fine-tuning's one new layer: a score for each of the {K} tags at every token.",
    ),
    "tagger_softmax": (
        "P(tag) = softmax(h_i W + b) over the {K} tags, at every token",
        "3.2, 5.3",
        "Each token's tag probabilities; a word's tag is read from its first WordPiece.",
    ),
    "span_logits": (
        "h_i S and h_i E at every token  ({T}×{H} · {H}×2)",
        "3.2, 4.2",
        "Fine-tuning's one new layer: a start score and an end score for every token.",
    ),
    "start_softmax": (
        "P_i(start) = e^(S·h_i) / Σ_j e^(S·h_j) over the {T} tokens",
        "3.2, 4.2",
        "How likely the answer starts at each token.",
    ),
    "end_softmax": (
        "P_i(end) = e^(E·h_i) / Σ_j e^(E·h_j) over the {T} tokens",
        "3.2, 4.2",
        "How likely the answer ends at each token.",
    ),
}

# The in-between steps' names (a layer's are under bert.encoder.layer.{i}), documented in
# docs/inside-bert.md; every other step is named by its module path.
STEP_NAMES = {
    "bert.embeddings.sum": "token + segment + position embeddings, before their LayerNorm",
    "attention.self.rotary_query": "the query turned by rotary positions (A, T, d)",
    "attention.self.rotary_key": "the key turned by rotary positions (A, T, d)",
    "attention.self.scores": "each head's Q Kᵀ / √d (A, T, T)",
    "attention.self.masked_scores": "the scores with the mask added (A, T, T)",
    "attention.self.probs": "each head's softmax: the attention probabilities (A, T, T)",
    "attention.self.context": "each head's P V (A, T, d)",
    "attention.output.residual": "the input plus the attention's output (T, H)",
    "intermediate.activation": "the activation of the feed-forward (T, I): module intermediate's output",
    "output.residual": "the attention block's output plus the feed-forward's (T, H)",
    "bert.pooler.activation": "tanh of the pooler's dense layer (H): module bert.pooler's output",
    "cls.predictions.transform.activation": "the masked-LM head's GELU (M, H)",
    "cls.predictions.softmax": "the masked-LM probabilities at each predicted position (M, V)",
    "cls.seq_relationship.softmax": "P(IsNext), P(NotNext) (2)",
    "classifier.softmax": "each label's probability (K), or each token's tag probabilities (T, K)",
    "qa_outputs.start_softmax": "P(start) at every token (T)",
    "qa_outputs.end_softmax": "P(end) at every token (T)",
}

# the kinds whose "+ b" (or LayerNorm's "+ β") a model without biases (BertConfig.bias False) lacks
NO_BIAS_KINDS = {"query", "key", "value", "attention_output", "ffn_in", "ffn_in_glu", "ffn_out", "pooler_dense"}
NO_BIAS_KINDS |= {"mlm_dense", "layer_norm"}

# the masked-LM head's activation (BertConfig.hidden_act), as its formula writes it
MLM_ACTIVATIONS = {"gelu": "GELU(x) = x Φ(x)", "gelu_new": "GELU(x) in its tanh form", "relu": "ReLU(x) = max(0, x)"}

# what the axes of a step's values are, by kind (the page labels its heatmaps with them)
AXES = {
    "token_hidden": ("token", "hidden"),
    "head_token_token": ("head", "query token", "key token"),
    "head_token_dim": ("head", "token", "dim"),
}


@dataclass
class TraceStep:
    """One operation of the forward pass and its output."""

    name: str  # module path (HF layout) or an in-between name of STEP_NAMES
    kind: str  # a key of STEPS
    values: torch.Tensor  # float32, CPU
    axes: tuple[str, ...]  # what each dimension of values is: ("token", "hidden"), ...
    formula: str  # STEPS[kind]'s formula with this input's sizes
    section: str  # where the paper (or the paper it builds on) describes it
    what: str  # one sentence
    module: str | None = None  # the module whose forward output this is (its hook's reference)
    layer: int | None = None  # encoder layer, None outside the encoder

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)


@dataclass
class TraceResult:
    """explore.trace's answer: the input and every step, in the order they are computed."""

    tokens: list[str]
    input_ids: list[int]
    token_type_ids: list[int]
    predicted_positions: list[int]  # where the masked-LM head is read: the [MASK]s, else every token
    steps: list[TraceStep]
    truncated: int = 0  # tokens cut because the text was longer than the model reads

    def names(self) -> list[str]:
        return [s.name for s in self.steps]

    def step(self, name: str) -> TraceStep:
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(f"no step {name!r} in this trace; it has {len(self.steps)} steps, e.g. {self.names()[:3]}")

    def to_json(self) -> dict:
        """Plain JSON (values flattened row-major), the shape window.bertLab.trace returns."""
        return {
            "tokens": self.tokens,
            "input_ids": self.input_ids,
            "token_type_ids": self.token_type_ids,
            "predicted_positions": self.predicted_positions,
            "truncated": self.truncated,
            "steps": [
                {
                    "name": s.name,
                    "kind": s.kind,
                    "shape": list(s.shape),
                    "axes": list(s.axes),
                    "formula": s.formula,
                    "section": s.section,
                    "what": s.what,
                    "module": s.module,
                    "layer": s.layer,
                    "values": s.values.flatten().tolist(),
                }
                for s in self.steps
            ],
        }


INPUT_SIZES = ("T", "M", "last")  # what one input sets: tokens, predicted positions, the last position


def catalogue(cfg) -> dict[str, dict[str, str]]:
    """STEPS written for one model: {kind: {formula, section, what}}, its sizes filled in (a model
    without biases loses its "+ b" terms) but for the input's own {T}, {M} and {last}, which
    `fill` sets. The site's manifest carries it for each model, so the page says what the lab says.
    Rotary steps come twice: "rotary" (global layers' base) and "rotary_local" (local layers')."""
    labels = len(cfg.id2label) if cfg.id2label else 2
    sizes = {
        "H": cfg.hidden_size,
        "A": cfg.num_attention_heads,
        "d": cfg.head_size,
        "I": cfg.intermediate_size,
        "V": cfg.vocab_size,
        "K": labels,
        "L": cfg.num_hidden_layers,
        "eps": _number(cfg.layer_norm_eps),
        "W": cfg.local_attention or 0,
        "half": (cfg.local_attention or 0) // 2,
        "theta": _number(cfg.rope_theta),
        **{name: "{" + name + "}" for name in INPUT_SIZES},  # left for fill()
        "act": MLM_ACTIVATIONS[cfg.hidden_act],  # the masked-LM head's activation is the model's
    }
    kinds = dict(STEPS, rotary_local=STEPS["rotary"])
    out = {}
    for kind, (formula, section, what) in kinds.items():
        if not cfg.bias and kind in NO_BIAS_KINDS:  # bias=False (lab.modern): no "+ b" terms
            formula = re.sub(r" \+ (\[b_v b_g\]|b_\w|β)", "", formula)
        theta = _number(cfg.local_rope_theta) if kind == "rotary_local" else sizes["theta"]
        out[kind] = {
            "formula": formula.format(**{**sizes, "theta": theta}),
            "section": section,
            "what": what.format(**sizes),
        }
    return out


def fill(text: str, T: int, M: int) -> str:
    """A catalogue text with this input's sizes: {T} tokens, {M} predicted positions, {last} = T - 1.
    (web/src/trace.js does the same three replacements.)"""
    return text.replace("{T}", str(T)).replace("{M}", str(M)).replace("{last}", str(T - 1))


class _Recorder:
    """Collects steps, each with its kind's catalogue texts filled for this input."""

    def __init__(self, texts: dict, T: int, M: int):
        self.texts, self.T, self.M = texts, T, M
        self.steps: list[TraceStep] = []

    def add(self, name, kind, values, axes, module=None, layer=None):
        text = self.texts[kind]
        self.steps.append(
            TraceStep(
                name=name,
                kind=kind,
                values=values.detach().float().cpu().reshape(values.shape).clone(),
                axes=tuple(axes),
                formula=fill(text["formula"], self.T, self.M),
                section=text["section"],
                what=fill(text["what"], self.T, self.M),
                module=module,
                layer=layer,
            )
        )
        return values

    def module(self, path, kind, values, axes, layer=None):
        """A step that is the output of the module at `path` (its name is that path)."""
        return self.add(path, kind, values, axes, path, layer)


def _number(x: float) -> str:
    """1e-12 -> "1e-12", 10000.0 -> "10000", 0.5 -> "0.5": as a formula writes them."""
    return f"{x:g}"


def trace(model, tokenizer, text_a: str, text_b: str | None = None) -> TraceResult:
    """One forward pass of `model` on `text_a` (and `text_b`) as its ordered steps, in fp32.

    Works on every lab model class (BertForPreTraining, BertForMaskedLM, the fine-tuned heads,
    BertModel) and on the switches since BERT. The masked-LM head is read at the [MASK]s, or at
    every token when the text has none (at most MAX_MASKS [MASK]s). A text longer than the model
    reads is cut at the end (result.truncated says how many tokens went)."""
    text_a = clean_text(text_a, "text_a")
    text_b = clean_text(text_b, "text_b") if text_b is not None and text_b != "" else None
    enc, ids, types = encode(model, tokenizer, text_a, text_b)
    body = getattr(model, "bert", model)
    cfg = model.config
    T = ids.shape[1]
    masks = (ids[0] == tokenizer.mask_token_id).nonzero().flatten().tolist()
    if len(masks) > MAX_MASKS:
        raise ValueError(f"{len(masks)} [MASK] tokens: at most {MAX_MASKS} per text")
    positions = masks or list(range(T))
    rec = _Recorder(catalogue(cfg), T, len(positions))
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    try:
        with torch.no_grad(), torch.autocast(device.type, enabled=False):
            x = _embeddings(rec, body.embeddings, ids.to(device), types.to(device))
            x = _encoder(rec, body.encoder, cfg, x)
            _heads(rec, model, body, x, positions)
    finally:
        model.train(was_training)
    return TraceResult(
        tokens=list(enc.tokens),
        input_ids=list(enc.input_ids),
        token_type_ids=list(enc.token_type_ids),
        predicted_positions=positions,
        steps=rec.steps,
        truncated=enc.num_truncated,
    )


def _embeddings(rec: _Recorder, emb, ids, types):
    """Figure 2: token + segment + position, then LayerNorm. x (1, T, H) -> (1, T, H)."""
    th = AXES["token_hidden"]
    p = "bert.embeddings"
    x = rec.module(f"{p}.word_embeddings", "word_embeddings", emb.word_embeddings(ids)[0], th)
    if emb.token_type_embeddings is not None:
        seg = rec.module(f"{p}.token_type_embeddings", "token_type_embeddings", emb.token_type_embeddings(types)[0], th)
        x = x + seg
    if emb.position_embeddings is not None:
        positions = torch.arange(ids.shape[1], device=ids.device)  # (T,)
        pos = rec.module(f"{p}.position_embeddings", "position_embeddings", emb.position_embeddings(positions), th)
        x = x + pos
    segments, table = emb.token_type_embeddings is not None, emb.position_embeddings is not None
    if segments or table:  # else E = E_tok
        kind = (
            "embedding_sum"
            if segments and table
            else "embedding_sum_rotary"
            if segments
            else "embedding_sum_no_segment"
        )
        rec.add(f"{p}.sum", kind, x, th)
    x = rec.module(f"{p}.LayerNorm", "layer_norm", emb.LayerNorm(x), th)
    return x[None]  # (1, T, H)


def _encoder(rec: _Recorder, encoder, cfg, x):
    """L layers, post-norm (BERT) or pre-norm (lab.modern), then the final norm of pre-norm."""
    T = x.shape[1]
    rope = encoder.rotary(T, x.device) if encoder.rotary is not None else None
    for i, layer in enumerate(encoder.layer):
        is_global = cfg.is_global_layer(i)
        window = 0 if is_global else cfg.local_attention or 0  # 0: sees every key
        tables = None if rope is None else rope[is_global]
        if cfg.norm_position == "pre":
            x = _pre_norm_layer(rec, layer, i, x, window, tables)
        else:
            x = _post_norm_layer(rec, layer, i, x, window, tables)
    if encoder.final_norm is not None:
        th = AXES["token_hidden"]
        x = rec.module("bert.encoder.final_norm", "layer_norm", encoder.final_norm(x)[0], th)[None]
    return x  # (1, T, H)


def _attention(rec: _Recorder, att, prefix: str, i: int, x, window: int, rope):
    """Multi-head self-attention, one operation a step: x (1, T, H) -> concatenated heads (1, T, H)."""
    th, htt, htd = AXES["token_hidden"], AXES["head_token_token"], AXES["head_token_dim"]
    s, p = att.self, f"{prefix}.attention.self"
    B, T, H = x.shape
    A, d = s.num_heads, s.head_size

    def heads(t):  # (1, T, H) -> (1, A, T, d): each head works on its own d-slice
        return t.view(B, T, A, d).transpose(1, 2)

    q = heads(rec.module(f"{p}.query", "query", s.query(x)[0], th, i)[None])
    k = heads(rec.module(f"{p}.key", "key", s.key(x)[0], th, i)[None])
    v = heads(rec.module(f"{p}.value", "value", s.value(x)[0], th, i)[None])
    if rope is not None:
        q, k = apply_rotary(q, k, *rope)
        kind = "rotary_local" if window else "rotary"  # local layers have their own base
        rec.add(f"{p}.rotary_query", kind, q[0], htd, None, i)
        rec.add(f"{p}.rotary_key", kind, k[0], htd, None, i)
    scores = rec.add(f"{p}.scores", "scores", (q @ k.transpose(-1, -2))[0] / math.sqrt(d), htt, None, i)  # (A, T, T)
    if window:  # the window of lab.modern.local_mask: |i - j| <= W // 2
        n = torch.arange(T, device=x.device)
        allowed = ((n[:, None] - n[None, :]).abs() <= window // 2).expand(A, T, T)
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    scores = rec.add(f"{p}.masked_scores", "mask_local" if window else "mask", scores, htt, None, i)
    probs = rec.add(f"{p}.probs", "softmax", scores.softmax(dim=-1), htt, None, i)  # rows sum to 1
    ctx = rec.add(f"{p}.context", "context", probs @ v[0], htd, None, i)  # (A, T, d)
    ctx = ctx.transpose(0, 1).reshape(T, H)  # (A, T, d) -> (T, A*d): heads side by side
    return rec.module(p, "concat", ctx, th, i)[None]  # (1, T, H)


def _feed_forward(rec: _Recorder, layer, prefix: str, i: int, x):
    """H -> I -> activation -> H, each token on its own. x (1, T, H) -> (1, T, H) (before the residual)."""
    th = AXES["token_hidden"]
    inter = layer.intermediate
    wide = rec.module(
        f"{prefix}.intermediate.dense", "ffn_in_glu" if inter.glu else "ffn_in", inter.dense(x)[0], ("token", "unit"), i
    )
    if inter.glu:
        value, gate = wide.chunk(2, dim=-1)  # (T, I) each
        act, kind = inter.act(value) * gate, "geglu"
    else:
        act = inter.act(wide)
        kind = {"gelu": "gelu", "gelu_new": "gelu_tanh", "relu": "relu"}[layer_act_name(inter)]
    a = rec.add(f"{prefix}.intermediate.activation", kind, act, ("token", "unit"), f"{prefix}.intermediate", i)
    return rec.module(f"{prefix}.output.dense", "ffn_out", layer.output.dense(a[None])[0], th, i)[None]


def layer_act_name(intermediate) -> str:
    """The config name of a BertIntermediate's activation (a key of lab.model.ACT)."""
    for name, fn in ACT.items():
        if fn is intermediate.act:
            return name
    raise ValueError("the feed-forward's activation is not one of lab.model.ACT")


def _post_norm_layer(rec: _Recorder, layer, i: int, x, window: int, rope):
    """BERT's layer: x = LN(x + Attn(x)); x = LN(x + FFN(x))."""
    th, p = AXES["token_hidden"], f"bert.encoder.layer.{i}"
    out = layer.attention.output
    ctx = _attention(rec, layer.attention, p, i, x, window, rope)
    dense = rec.module(f"{p}.attention.output.dense", "attention_output", out.dense(ctx)[0], th, i)
    res = rec.add(f"{p}.attention.output.residual", "residual", x[0] + dense, th, None, i)
    x = rec.module(f"{p}.attention.output.LayerNorm", "layer_norm", out.LayerNorm(res), th, i)
    ffn = _feed_forward(rec, layer, p, i, x[None])[0]
    res = rec.add(f"{p}.output.residual", "residual", x + ffn, th, None, i)
    return rec.module(f"{p}.output.LayerNorm", "layer_norm", layer.output.LayerNorm(res), th, i)[None]


def _pre_norm_layer(rec: _Recorder, layer, i: int, x, window: int, rope):
    """lab.modern.PreNormLayer: x = x + Attn(LN1(x)); x = x + FFN(LN2(x)); layer 0 has no LN1."""
    th, p = AXES["token_hidden"], f"bert.encoder.layer.{i}"
    out = layer.attention.output
    h = x
    if not isinstance(out.LayerNorm, torch.nn.Identity):
        h = rec.module(f"{p}.attention.output.LayerNorm", "layer_norm", out.LayerNorm(x)[0], th, i)[None]
    ctx = _attention(rec, layer.attention, p, i, h, window, rope)
    dense = rec.module(f"{p}.attention.output.dense", "attention_output", out.dense(ctx)[0], th, i)
    x = rec.add(f"{p}.attention.output.residual", "residual", x[0] + dense, th, None, i)[None]
    h = rec.module(f"{p}.output.LayerNorm", "layer_norm", layer.output.LayerNorm(x)[0], th, i)[None]
    ffn = _feed_forward(rec, layer, p, i, h)[0]
    return rec.add(f"{p}.output.residual", "residual", x[0] + ffn, th, None, i)[None]


def _heads(rec: _Recorder, model, body, x, positions: list[int]):
    """The pooler and whatever heads the model has, in the paper's order (3.1, then 3.2)."""
    name = type(model).__name__
    h = x[0]  # (T, H)
    pooled = None
    if getattr(body, "pooler", None) is not None:
        dense = rec.module("bert.pooler.dense", "pooler_dense", body.pooler.dense(h[:1])[0], ("hidden",))
        pooled = rec.add("bert.pooler.activation", "tanh", torch.tanh(dense), ("hidden",), "bert.pooler")
    cls = getattr(model, "cls", None)
    if cls is not None:
        _mlm_head(rec, cls.predictions, h[positions])
        if cls.seq_relationship is not None:
            logits = rec.module(
                "cls.seq_relationship", "nsp_logits", cls.seq_relationship(pooled[None])[0], ("IsNext/NotNext",)
            )
            rec.add("cls.seq_relationship.softmax", "nsp_softmax", logits.softmax(-1), ("IsNext/NotNext",))
    if name == "BertForSequenceClassification":
        _classifier(rec, model, pooled)
    elif name == "BertForTokenClassification":
        if model.config.classifier_layers != 1:
            raise ValueError("trace follows a tagger that reads the last layer only (classifier_layers = 1)")
        logits = rec.module("classifier", "tagger", model.classifier(h), ("token", "label"))
        rec.add("classifier.softmax", "tagger_softmax", logits.softmax(-1), ("token", "label"))
    elif name == "BertForQuestionAnswering":
        logits = rec.module("qa_outputs", "span_logits", model.qa_outputs(h), ("token", "start/end"))
        rec.add("qa_outputs.start_softmax", "start_softmax", logits[:, 0].softmax(-1), ("token",))
        rec.add("qa_outputs.end_softmax", "end_softmax", logits[:, 1].softmax(-1), ("token",))


def _mlm_head(rec: _Recorder, head, h):
    """Masked LM at the predicted positions: dense -> GELU -> LayerNorm -> tied decoder -> softmax."""
    t, mh = head.transform, ("predicted token", "hidden")
    p = "cls.predictions"
    dense = rec.module(f"{p}.transform.dense", "mlm_dense", t.dense(h), mh)
    act = rec.add(f"{p}.transform.activation", "mlm_activation", t.act(dense), mh)
    norm = rec.module(f"{p}.transform.LayerNorm", "layer_norm", t.LayerNorm(act), mh)
    logits = rec.module(f"{p}.decoder", "decoder", head.decoder(norm), ("predicted token", "word"))
    rec.add(f"{p}.softmax", "mlm_softmax", F.softmax(logits, dim=-1), ("predicted token", "word"))


def _classifier(rec: _Recorder, model, pooled):
    """Sequence classification from the pooled [CLS] (or the last N layers' [CLS], concatenated)."""
    if model.config.classifier_layers != 1:
        raise ValueError("trace follows a classifier that reads the pooled [CLS] (classifier_layers = 1)")
    logits = rec.module("classifier", "classifier", model.classifier(pooled[None])[0], ("label",))
    rec.add("classifier.softmax", "classifier_softmax", logits.softmax(-1), ("label",))
