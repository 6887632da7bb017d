"""The usual mistakes of a forward pass computed by hand, one list per kind of step (the kinds of
lab.inspect.trace.STEPS): each mistake recomputed from the trace's own input to that step, with the
sentence that explains it. by_hand.check_step compares a wrong step with these.

    variants(ctx)  ->  [(code, tensor or None, message), ...]   # ctx: a StepContext

Example: the scores of layer 0 come from the trace's Q and K (`...attention.self.query`, `.key`),
split into heads; "no_sqrt_d" is Q_h K_hᵀ without the division by √d, so a student's scores that
equal it are told exactly that. A mistake that needs weights the trace does not hold (a Linear's
bias, the decoder's bias) is computed only when the model is given (StepContext.model).
"""

from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

SQRT_2 = math.sqrt(2.0)
TORCH_LN_EPS = inspect.signature(F.layer_norm).parameters["eps"].default  # what F.layer_norm uses when not told
WRONG_EPS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)  # the eps values tried for a LayerNorm (BERT's: 1e-12)
ATTENTION_KINDS = {"scores", "mask", "mask_local", "softmax"}  # (A, T, T): rows are queries, columns keys

Variant = tuple[str, "torch.Tensor | None", str]


@dataclass
class StepContext:
    """One step to diagnose: the trace, the step and its index, the student's values and the
    trace's (both float64, same shape), and the model when given."""

    trace: Any
    step: Any
    index: int
    mine: torch.Tensor
    want: torch.Tensor
    model: Any = None

    def before(self, k: int = 1) -> torch.Tensor:
        """The values of the step k places before this one (float64)."""
        return self.trace.steps[self.index - k].values.double()

    def named(self, name: str) -> torch.Tensor | None:
        names = self.trace.names()
        return self.trace.steps[names.index(name)].values.double() if name in names else None

    def before_named(self, name: str) -> torch.Tensor | None:
        """The values of the step just before the step `name` (that step's input, in the trace's order)."""
        names = self.trace.names()
        return self.trace.steps[names.index(name) - 1].values.double() if name in names else None

    @property
    def prefix(self) -> str:
        """bert.encoder.layer.{i} for a step of the encoder."""
        return f"bert.encoder.layer.{self.step.layer}"

    def module(self, path: str | None = None):
        """The model's module at `path` (the step's own by default), or None without a model."""
        path = path or self.step.module
        if self.model is None or path is None:
            return None
        try:
            return self.model.get_submodule(path)
        except AttributeError:
            return None

    def encoder_output(self) -> torch.Tensor:
        """(T, H): the last step of the encoder (its last LayerNorm, or the final norm)."""
        last = [s for s in self.trace.steps if s.name.startswith("bert.encoder.")][-1]
        return last.values.double()

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        """(T, H) -> (A, T, d), A the trace's number of heads: each head a d-wide slice of every token."""
        A = self.named(f"{self.prefix}.attention.self.scores").shape[0]
        T, H = x.shape
        return x.view(T, A, H // A).transpose(0, 1)


def layer_norm(x, weight, bias, eps, dim=-1, correction=0):
    """γ ⊙ (x − μ) / √(σ² + eps) + β over `dim` (float64)."""
    mu = x.mean(dim, keepdim=True)
    var = x.var(dim, keepdim=True, correction=correction)
    return weight * (x - mu) / torch.sqrt(var + eps) + bias


def gelu(x):
    return x * 0.5 * (1 + torch.erf(x / SQRT_2))


def _linear(module, x, transposed=True, bias=True):
    """x W^T + b with the module's weights (W as stored when transposed is False)."""
    w = module.weight.detach().double()
    out = x @ (w.T if transposed else w)
    if bias and module.bias is not None:
        out = out + module.bias.detach().double()
    return out


# ------------------------------------------------------------------------------------------------
# The input: embeddings, segments, positions
# ------------------------------------------------------------------------------------------------
def _segment_table(ctx) -> dict[int, torch.Tensor]:
    """Segment id -> its row of the segment table: from the model, else from the trace's rows."""
    module = ctx.module("bert.embeddings.token_type_embeddings")
    if module is not None:
        return dict(enumerate(module.weight.detach().double()))
    values = ctx.named("bert.embeddings.token_type_embeddings")
    types = torch.tensor(ctx.trace.token_type_ids)
    return {int(s): values[types == s][0] for s in types.unique()}


def _segment_variants(ctx) -> list[tuple[str, torch.Tensor | None, str]]:
    """Wrong segment vectors (T, H): A and B swapped, one segment for all, a [SEP] on the wrong side."""
    table, types = _segment_table(ctx), torch.tensor(ctx.trace.token_type_ids)

    def rows(ids):  # (T,) segment ids -> (T, H), None when the table lacks a row
        return torch.stack([table[int(s)] for s in ids]) if all(int(s) in table for s in ids) else None

    if int(types.max()) == 0:  # one text: sentence A throughout
        why = "every token has segment B's vector; one text is sentence A, segment 0 throughout (E_A in Figure 2)"
        return [("segments_swapped", rows(1 - types), why)]
    seps = [i for i, tok in enumerate(ctx.trace.tokens) if tok == "[SEP]"]
    out = [
        (
            "segments_swapped",
            rows(1 - types),
            "sentence A's tokens got segment 1 and sentence B's segment 0: the segments are swapped. Sentence A, "
            "from [CLS] to the first [SEP], is segment 0 (E_A in Figure 2); sentence B, to the last [SEP], is "
            "segment 1 (E_B). The tokenizer gives them: token_type_ids",
        ),
        (
            "one_segment",
            rows(torch.zeros_like(types)),
            "every token has segment A's vector: sentence B (after the first [SEP], up to the last) is segment 1",
        ),
    ]
    if len(seps) >= 2 and int(types[seps[0]]) == 0:
        moved = types.clone()
        moved[seps[0]] = 1
        out.append(
            (
                "segment_of_sep",
                rows(moved),
                f"the [SEP] that closes sentence A (token {seps[0]}) has segment B's vector: it belongs to "
                "sentence A, segment 0; segment 1 starts after it",
            )
        )
    return out


def _input_variants(ctx) -> list[Variant]:
    kind, T = ctx.step.kind, ctx.want.shape[0]
    out: list[Variant] = []
    if kind == "token_type_embeddings":
        out += _segment_variants(ctx)
    table = ctx.module("bert.embeddings.position_embeddings")
    shifted = table.weight.detach().double()[1 : T + 1] if table is not None and table.weight.shape[0] > T else None
    if kind == "position_embeddings" and shifted is not None:
        out.append(("positions_from_1", shifted, "your positions start at 1; they start at 0: rows 0 … T−1"))
    if kind == "embedding_sum":
        tok, seg, pos = (ctx.named(f"bert.embeddings.{n}_embeddings") for n in ("word", "token_type", "position"))
        out += [
            ("no_segment", tok + pos, "the segment embeddings are missing: E = E_tok + E_seg + E_pos"),
            ("no_position", tok + seg, "the position embeddings are missing: E = E_tok + E_seg + E_pos"),
        ]
        out += [(code, tok + s + pos, "in the sum, " + why) for code, s, why in _segment_variants(ctx) if s is not None]
        if shifted is not None:
            out.append(("positions_from_1", tok + seg + shifted, "your positions start at 1; they start at 0"))
    return out


# ------------------------------------------------------------------------------------------------
# LayerNorm
# ------------------------------------------------------------------------------------------------
def true_eps(ctx) -> float:
    """The model's eps: its module's, else the one the step's formula states, else BERT's 1e-12."""
    module = ctx.module()
    if module is not None and hasattr(module, "eps"):
        return float(module.eps)
    found = re.search(r"σ² \+ ([0-9.eE+-]+)\)", ctx.step.formula)
    return float(found.group(1)) if found else 1e-12


def _affine(ctx, x, eps):
    """(γ, β) of this LayerNorm: the model's, else fitted column by column from the trace's input and
    output (exact when at least two rows differ); None with one row and no model."""
    module = ctx.module()
    if module is not None and getattr(module, "weight", None) is not None:
        bias = module.bias.detach().double() if module.bias is not None else torch.zeros_like(x[0])
        return module.weight.detach().double(), bias
    if x.dim() != 2 or x.shape[0] < 2:
        return None
    xhat = layer_norm(x, 1.0, 0.0, eps)  # (rows, H)
    xc, yc = xhat - xhat.mean(0), ctx.want - ctx.want.mean(0)
    gamma = (xc * yc).sum(0) / (xc * xc).sum(0).clamp_min(1e-30)
    return gamma, ctx.want.mean(0) - gamma * xhat.mean(0)


def _layer_norm_variants(ctx) -> list[Variant]:
    x, eps = ctx.before(), true_eps(ctx)
    affine = _affine(ctx, x, eps)
    if affine is None:
        return []
    g, b = affine
    H = x.shape[-1]
    out: list[Variant] = [
        (
            "layer_norm_eps",
            layer_norm(x, g, b, wrong),
            f"your LayerNorm matches the one with eps = {wrong:g}, not BERT's eps = {eps:g} (config.layer_norm_eps): "
            f"F.layer_norm and nn.LayerNorm use eps = {TORCH_LN_EPS:g} unless told. Divide by √(σ² + {eps:g})",
        )
        for wrong in WRONG_EPS
        if wrong != eps
    ]
    out += [
        (
            "unbiased_variance",
            layer_norm(x, g, b, eps, correction=1),
            f"your variance divides by H − 1 = {H - 1} (torch.var's default, the unbiased estimate); LayerNorm's "
            f"divides by H = {H}: x.var(-1, keepdim=True, correction=0)",
        ),
        (
            "no_affine",
            layer_norm(x, 1.0, 0.0, eps),
            "you normalised but left out LayerNorm's learned weight γ and bias β: γ ⊙ (x − μ) / √(σ² + eps) + β",
        ),
        ("affine_swapped", layer_norm(x, b, g, eps), "LayerNorm's weight γ and bias β are swapped"),
    ]
    if x.dim() == 2 and x.shape[0] >= 2:
        out.append(
            (
                "layer_norm_axis",
                layer_norm(x, g, b, eps, dim=0),
                "you normalised each hidden unit over the tokens (dim 0); LayerNorm normalises each token over its "
                f"own {H} numbers: mean and variance over the last axis (dim -1, keepdim=True)",
            )
        )
    return out


# ------------------------------------------------------------------------------------------------
# Attention
# ------------------------------------------------------------------------------------------------
def _scores_variants(ctx) -> list[Variant]:
    q, k = ctx.named(f"{ctx.prefix}.attention.self.query"), ctx.named(f"{ctx.prefix}.attention.self.key")
    qh, kh = ctx.heads(q), ctx.heads(k)  # (A, T, d)
    A, T, d = qh.shape
    raw = qh @ kh.transpose(-1, -2)  # (A, T, T) before the scaling
    flat_q, flat_k = q.reshape(A, T, d), k.reshape(A, T, d)  # a reshape without the transpose: heads cut wrongly
    return [
        (
            "no_sqrt_d",
            raw,
            f"your scores are √d = {math.sqrt(d):g} times too large: the division by √d is missing (d = {d}, the "
            "head size). Without it the softmax comes out far too peaked (Vaswani et al. 3.2.1): S = Q Kᵀ / √d",
        ),
        ("divided_by_d", raw / d, f"you divide by d = {d} (or by √d twice); divide Q Kᵀ by √d = {math.sqrt(d):g} once"),
        (
            "divided_by_sqrt_h",
            raw / math.sqrt(A * d),
            f"you divide by √H = √{A * d}, the whole vector's size; divide by √d = √{d}, one head's size",
        ),
        (
            "keys_queries_swapped",
            raw.transpose(-1, -2) / math.sqrt(d),
            "your matrix is K Qᵀ: row i must be query i and column j key j, so S = Q Kᵀ / √d",
        ),
        (
            "heads_cut_wrongly",
            flat_q @ flat_k.transpose(-1, -2) / math.sqrt(d),
            f"your heads are cut wrongly: reshaping (T, H) straight to (A, T, d) gives head 0 the first {T // A or 1} "
            f"tokens' numbers, not the first {d} numbers of every token. A head is a d-wide slice of each token: "
            "x.view(T, A, d).transpose(0, 1)",
        ),
    ]


def _softmax_variants(ctx) -> list[Variant]:
    s = ctx.before()  # (A, T, T): the masked scores
    d = ctx.named(f"{ctx.prefix}.attention.self.value").shape[-1] // s.shape[0]
    A, T, _ = s.shape
    return [
        (
            "softmax_axis",
            s.softmax(-2),
            "each column of your probabilities sums to 1, not each row: the softmax ran over the queries (dim -2). "
            "Take it over the keys, the last axis (dim -1): each query's weights over the keys sum to 1",
        ),
        (
            "softmax_heads",
            s.softmax(0) if A > 1 else None,
            "your softmax ran over the heads (dim 0): take it over the keys, the last axis (dim -1)",
        ),
        (
            "softmax_whole",
            s.reshape(A, T * T).softmax(-1).view(A, T, T),
            "each head's whole matrix sums to 1: take the softmax of each row (dim -1), one per query",
        ),
        (
            "no_sqrt_d",
            (s * math.sqrt(d)).softmax(-1),
            f"your probabilities are the softmax of scores that were not divided by √d = {math.sqrt(d):g}: too "
            "peaked. Divide Q Kᵀ by √d before the softmax",
        ),
    ]


def _context_variants(ctx) -> list[Variant]:
    p = ctx.named(f"{ctx.prefix}.attention.self.probs")  # (A, T, T)
    v = ctx.heads(ctx.named(f"{ctx.prefix}.attention.self.value"))  # (A, T, d)
    k = ctx.heads(ctx.named(f"{ctx.prefix}.attention.self.key"))
    return [
        (
            "probs_transposed",
            p.transpose(-1, -2) @ v,
            "you multiply the values by the transposed probabilities: row i of P (query i's weights over the keys) "
            "mixes the values, C = P V",
        ),
        ("keys_not_values", p @ k, "you weight the keys; the context weights the values: C = P V"),
    ]


def _concat_variants(ctx) -> list[Variant]:
    c = ctx.named(f"{ctx.prefix}.attention.self.context")  # (A, T, d)
    A, T, d = c.shape
    return [
        (
            "concat_order",
            c.reshape(T, A * d),
            "the heads are not put back side by side: a reshape of (A, T, d) straight to (T, H) mixes tokens. "
            "Move the heads next to the token first: C.transpose(0, 1).reshape(T, H)",
        )
    ]


# ------------------------------------------------------------------------------------------------
# Linear layers, residuals, activations
# ------------------------------------------------------------------------------------------------
def _linear_input(ctx) -> torch.Tensor | None:
    """What this Linear step reads, in the trace."""
    kind = ctx.step.kind
    if kind in ("key", "value"):
        return ctx.before_named(f"{ctx.prefix}.attention.self.query")
    if kind == "pooler_dense":
        return ctx.encoder_output()[0]
    if kind == "mlm_dense":
        return ctx.encoder_output()[ctx.trace.predicted_positions]
    if kind == "nsp_logits":
        return ctx.named("bert.pooler.activation")
    return ctx.before()


def _linear_variants(ctx) -> list[Variant]:
    module, x = ctx.module(), _linear_input(ctx)
    if module is None or x is None or not hasattr(module, "weight"):
        return []
    W = module.weight
    out: list[Variant] = []
    if W.shape[0] == W.shape[1]:
        out.append(
            (
                "weight_not_transposed",
                _linear(module, x, transposed=False),
                f"you multiply by {ctx.step.module}.weight as stored; a Linear layer stores W as (out, in), so "
                "y = x @ W.T + b",
            )
        )
    if module.bias is not None:
        out.append(("no_bias", _linear(module, x, bias=False), f"the bias {ctx.step.module}.bias is missing"))
    h = ctx.encoder_output()
    if ctx.step.kind == "pooler_dense":
        out.append(
            (
                "pooled_mean",
                _linear(module, h.mean(0)),
                "you pooled the mean of the tokens; the pooler reads [CLS], row 0",
            )
        )
        out.append(("pooled_last", _linear(module, h[-1]), "you pooled the last token; the pooler reads [CLS], row 0"))
    if ctx.step.kind == "nsp_logits":
        out.append(
            (
                "nsp_without_pooler",
                _linear(module, h[0]),
                "the NSP head reads the pooled [CLS] (tanh of the pooler's dense layer), not [CLS]'s last "
                "hidden vector",
            )
        )
        dense = ctx.named("bert.pooler.dense")
        out.append(("nsp_without_tanh", _linear(module, dense), "the pooler's tanh is missing before the NSP head"))
    return out


def _decoder_variants(ctx) -> list[Variant]:
    decoder = ctx.module()
    head = ctx.module("cls.predictions")
    if decoder is None or head is None:
        return []
    W, b = decoder.weight.detach().double(), head.bias.detach().double()  # (V, H), (V,)
    x = ctx.before()  # (M, H): the transform's LayerNorm
    return [
        (
            "decoder_bias",
            x @ W.T,
            f"your logits lack the decoder's own bias, cls.predictions.bias ({b.numel()} numbers, one per word): "
            "logits = h W_tokᵀ + b. The weights are tied to the token table; the bias is the head's own, and without "
            "it every word's score is off by its own amount",
        ),
        (
            "no_transform",
            ctx.encoder_output()[ctx.trace.predicted_positions] @ W.T + b,
            "you apply the decoder to the encoder's output; the head transforms it first: dense, GELU, LayerNorm",
        ),
    ]


def _mlm_softmax_variants(ctx) -> list[Variant]:
    logits = ctx.before()  # (M, V)
    out: list[Variant] = [
        (
            "softmax_axis",
            logits.softmax(0),
            "your softmax ran over the predicted positions (dim 0); take it over the vocabulary, the last axis",
        )
    ]
    head = ctx.module("cls.predictions")
    if head is not None:
        out.append(
            (
                "decoder_bias",
                (logits - head.bias.detach().double()).softmax(-1),
                "these are the probabilities of logits without the decoder's own bias, cls.predictions.bias: "
                "logits = h W_tokᵀ + b",
            )
        )
    return out


def _activation_variants(ctx) -> list[Variant]:
    x = ctx.before()
    tanh_form = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    if ctx.step.kind == "tanh":
        return [("gelu_not_tanh", gelu(x), "the pooler's activation is tanh, not GELU")]
    gap = float((tanh_form - gelu(x)).abs().max())
    return [
        (
            "gelu_tanh",
            tanh_form,
            "your GELU is the tanh approximation ½x(1 + tanh(√(2/π)(x + 0.044715x³))); BERT's is the exact "
            'x · ½(1 + erf(x/√2)) (hidden_act "gelu"; the tanh form is "gelu_new"). Here they differ by up to '
            f"{gap:.1e}",
        ),
        ("relu", x.clamp_min(0), "you used ReLU; BERT's activation is GELU: x · ½(1 + erf(x/√2))"),
        (
            "gelu_sigmoid",
            x * torch.sigmoid(1.702 * x),
            "you used the sigmoid approximation x σ(1.702x); BERT's GELU is exact: x · ½(1 + erf(x/√2))",
        ),
        (
            "gelu_no_sqrt2",
            x * 0.5 * (1 + torch.erf(x)),
            "erf's argument is x/√2, not x: GELU(x) = x · ½(1 + erf(x/√2))",
        ),
        ("gelu_no_half", x * (1 + torch.erf(x / SQRT_2)), "the ½ is missing: GELU(x) = x · ½(1 + erf(x/√2))"),
    ]


def _residual_variants(ctx) -> list[Variant]:
    """The sub-layer's output (the step before) added to the sum before its LayerNorm, not after."""
    sub = ctx.before()
    x = ctx.want - sub
    steps = ctx.trace.steps[: ctx.index - 1]
    for j in range(len(steps) - 1, 0, -1):
        s = steps[j]
        if s.kind == "layer_norm" and s.shape == tuple(x.shape) and float((s.values.double() - x).abs().max()) < 1e-5:
            pre = steps[j - 1]
            return [
                (
                    "residual_before_norm",
                    pre.values.double() + sub,
                    f"you added the sub-layer's output to {pre.name}, the sum before its LayerNorm; the residual adds "
                    f"that LayerNorm's output, {s.name}",
                )
            ]
    return []


def _nsp_softmax_variants(ctx) -> list[Variant]:
    logits = ctx.before()
    return [
        (
            "nsp_swapped",
            logits.softmax(-1).flip(-1),
            "IsNext and NotNext are swapped: index 0 is IsNext, index 1 NotNext (cls.seq_relationship's rows)",
        ),
        ("sigmoid_not_softmax", torch.sigmoid(logits), "these are sigmoids of each score; use the softmax of the two"),
    ]


KIND_VARIANTS = {
    "token_type_embeddings": _input_variants,
    "position_embeddings": _input_variants,
    "embedding_sum": _input_variants,
    "layer_norm": _layer_norm_variants,
    "scores": _scores_variants,
    "softmax": _softmax_variants,
    "context": _context_variants,
    "concat": _concat_variants,
    "residual": _residual_variants,
    "gelu": _activation_variants,
    "mlm_activation": _activation_variants,
    "tanh": _activation_variants,
    "decoder": _decoder_variants,
    "mlm_softmax": _mlm_softmax_variants,
    "nsp_softmax": _nsp_softmax_variants,
}
for _kind in ("query", "key", "value", "attention_output", "ffn_in", "ffn_out", "pooler_dense", "mlm_dense"):
    KIND_VARIANTS[_kind] = _linear_variants
KIND_VARIANTS["nsp_logits"] = _linear_variants


def variants(ctx: StepContext) -> list[Variant]:
    """The usual mistakes of this step's kind, each recomputed from the trace's input to the step."""
    make = KIND_VARIANTS.get(ctx.step.kind)
    if make is None:
        return []
    with torch.no_grad():
        return [(code, value, why) for code, value, why in make(ctx) if value is not None]
