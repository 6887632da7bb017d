"""Exercise `attention` (notebook 2): scaled dot-product attention with a padding mask,
softmax(q k^T / sqrt(d) + mask) v.

The checker compares with the reference and torch's scaled_dot_product_attention on padded and
unpadded inputs; wrong weights are told apart by their row sums (the softmax's axis), the mass on
[PAD] keys (the mask's mistakes) and the softmax's fitted temperature (the scale's).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import core
from .compare import closest, expect_tensor, first_diff, max_diff
from .core import Fail


def attention(q, k, v, mask):
    """Scaled dot-product attention with a padding mask.

    q, k, v  [B, A, T, d]: queries, keys, values (B sentences, A heads, T tokens, head size d)
    mask     [B, T]: 1 for a real token, 0 for [PAD] (no query may attend to a [PAD] key)
    Returns (context, weights):
      weights  [B, A, T, T]: softmax over the keys of q k^T / sqrt(d); row i = query i
      context  [B, A, T, d]: weights @ v
    """
    d = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, A, T, T): query i (rows) x key j (columns)
    hidden = mask[:, None, None, :] == 0  # (B, 1, 1, T): [PAD] keys, for every head and query
    scores = scores.masked_fill(hidden, torch.finfo(scores.dtype).min)  # before the softmax
    weights = scores.softmax(dim=-1)  # over the keys: every row sums to 1
    return weights @ v, weights  # (B, A, T, d), (B, A, T, T)


def _attention_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    out = []
    for B, A, T, d, pads, what in (
        (2, 3, 6, 64, (2, 0), "2 sentences x 3 heads x 6 tokens, head size 64, the first with 2 [PAD]s"),
        (1, 1, 1, 4, (0,), "one token"),
        (3, 2, 5, 16, (1, 3, 0), "3 sentences with 1, 3 and no [PAD]s, head size 16"),
        (1, 4, 7, 5, (4,), "a batch of one with 4 [PAD]s of 7, head size 5"),
    ):
        q, k, v = (torch.randn(B, A, T, d, generator=g) for _ in range(3))
        mask = torch.ones(B, T, dtype=torch.long)
        for b, n in enumerate(pads):
            if n:
                mask[b, T - n :] = 0
        out.append((what, q, k, v, mask))
    return out


def _fitted_scale(weights, q, k, mask) -> float | None:
    """c in softmax(c * q k^T) that best explains the weights (least squares on the log-weights of
    the real keys, each row centred): 1/sqrt(d) for BERT."""
    s = (q @ k.transpose(-2, -1)).double()  # unscaled scores
    lw = weights.double().clamp_min(1e-300).log()
    keep = (mask[:, None, None, :] != 0).expand_as(s) & (weights > 0)
    num = den = 0.0
    for row_s, row_w, row_k in zip(
        s.reshape(-1, s.shape[-1]), lw.reshape(-1, s.shape[-1]), keep.reshape(-1, s.shape[-1])
    ):
        if row_k.sum() < 2:
            continue
        a, b = row_s[row_k] - row_s[row_k].mean(), row_w[row_k] - row_w[row_k].mean()
        num += float((a * b).sum())
        den += float((a * a).sum())
    return num / den if den > 0 else None


@torch.no_grad()
def check_attention(student, seed: int = 0):
    """Checks attention(q, k, v, mask) -> (context, weights): q, k, v [B, A, T, d], mask [B, T]
    (1 = real token, 0 = [PAD]), against softmax(q k^T / sqrt(d) with [PAD] keys masked) v and
    torch's scaled_dot_product_attention, on sentences with and without padding, one token, a batch
    of one, odd head sizes. A difference is diagnosed from the weights' row sums (which axis the
    softmax normalised), the mass on [PAD] keys (mask missing, inverted, multiplied in, applied after
    the softmax or on the queries) and the softmax's fitted temperature (scale missing or by d).
    Options: seed."""
    worst = 0.0
    for what, q, k, v, mask in _attention_cases(seed):
        B, A, T, d = q.shape
        call = f"your attention(q, k, v, mask) on {what}"
        with torch.no_grad():
            want_ctx, want_w = attention(q, k, v, mask)
            out = core.call(student, q.clone(), k.clone(), v.clone(), mask.clone(), what=call)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise Fail(f"attention should return a pair (context, weights); it returned {type(out).__name__}.")
        ctx, w = out
        w = expect_tensor(w, (B, A, T, T), call, "weights", finite=False).detach()
        details = {"case": what, "mask": mask.tolist()}
        if not torch.isfinite(w).all() or max_diff(w, want_w) > 1e-5:
            _diagnose_weights(w, want_w, q, k, mask, what, details)  # NaNs too: they tell the mistake apart
        ctx = expect_tensor(ctx, (B, A, T, d), call, "context").detach()
        err = max_diff(ctx, want_ctx)
        if err > 1e-5:
            candidates = {"k": w @ k, "transposed weights": w.transpose(-1, -2) @ v, "v alone": v}
            name = closest(ctx, candidates, 1e-4)
            why = {
                "k": "you multiply the weights by k; the context is weights @ v",
                "transposed weights": "you multiply v by the transposed weights; the context is weights @ v "
                "(row i of the weights mixes the values for query i)",
                "v alone": "the context is v itself; it is weights @ v",
            }.get(name, "your weights are right but the context is not weights @ v")
            raise Fail(
                f"On {what}, your context differs by up to {err:.3g}: {why}.", **details, **first_diff(ctx, want_ctx)
            )
        sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=(mask != 0)[:, None, None, :])
        worst = max(worst, err, max_diff(ctx, sdpa))
    return (
        "Your attention gives softmax(q k^T / sqrt(d)) v with [PAD] keys masked, as BERT's (and torch's "
        f"scaled_dot_product_attention) to {worst:.1e}, on padded and unpadded sentences, one token, a batch of one "
        "and odd head sizes.",
        {"largest_difference": worst},
    )


def _diagnose_weights(w, want_w, q, k, mask, what, details):
    """Raise the Fail that says why these attention weights are wrong: the row sums first, then the
    attention on [PAD] keys, then the softmax's temperature."""
    nan = torch.isnan(w)  # a softmax over a line of -inf gives NaN: read what is left
    sums = w.nansum(-1)  # (B, A, T): each query's total attention
    padded = (mask == 0).any(1)  # (B,) sentences with [PAD]s
    pad_keys = (mask == 0)[:, None, None, :].expand_as(w)
    pad_mass = float((w * pad_keys).nansum(-1).mean(dim=(1, 2))[padded].mean()) if padded.any() else 0.0
    details = {**details, "row_sums": [round(float(x), 4) for x in sums.flatten()[:8]]}
    details.update(first_diff(w.nan_to_num(0.0), want_w))
    rows_ok = not nan.any() and (sums - 1).abs().max() < 1e-4
    if not rows_ok:
        _diagnose_row_sums(w, sums, padded, pad_keys, pad_mass, what, details)
    if pad_mass > 1e-5:
        _diagnose_pad_mass(w, q, k, mask, padded, pad_keys, pad_mass, what, details)
    _diagnose_scale(w, q, k, mask, what, details)
    raise Fail(
        f"On {what}, your attention weights differ from softmax(q k^T / sqrt(d)) by up to {max_diff(w, want_w):.3g}, "
        "though their rows sum to 1 and [PAD] keys get nothing: are q and k used as q @ k.transpose(-2, -1)?",
        **details,
    )


def _diagnose_row_sums(w, sums, padded, pad_keys, pad_mass, what, details):
    """Rows that do not sum to 1: the softmax's axis, an inverted mask, NaN, a mask after the softmax."""
    nan = torch.isnan(w)

    def sums_to_one(dim):  # the lines along `dim` that hold a number sum to 1
        valid = ~nan.all(dim)
        return bool(valid.any()) and float((w.nansum(dim)[valid] - 1).abs().max()) < 1e-4

    mean_sum = float(sums.mean())
    for dim, axis in ((-2, "query"), (0, "batch"), (1, "head")):
        if w.shape[dim] > 1 and sums_to_one(dim):
            raise Fail(
                f"On {what}, each row of your attention weights sums to {mean_sum:.2f} on average instead of 1: "
                f"the softmax is taken over the {axis} axis, not the key axis. Use softmax(dim=-1): for each "
                "query, the weights over the keys sum to 1.",
                **details,
            )
    real_mass = float((w * ~pad_keys).nansum(-1).mean(dim=(1, 2))[padded].mean()) if padded.any() else 1.0
    if padded.any() and real_mass < 1e-4:
        raise Fail(
            f"On {what}, [PAD] keys receive {pad_mass:.0%} of the attention in padded sentences, the real tokens "
            "nothing, and sentences without [PAD] get NaN (every key hidden): the mask is inverted. mask is 1 "
            "for a real token and 0 for [PAD]; hide the keys where mask == 0.",
            pad_mass=round(pad_mass, 4),
            **details,
        )
    if nan.any():
        bad = nan.nonzero()[0].tolist()
        raise Fail(
            f"On {what}, your weights hold NaN (first at index {bad}): a row whose every score is -inf gives NaN "
            "after the softmax. Which keys does your mask hide?",
            **details,
        )
    if padded.any() and (sums[~padded] - 1).abs().max() < 1e-4 and pad_mass < 1e-6:
        short = float(sums[padded].mean())
        raise Fail(
            f"On {what}, the rows of padded sentences sum to {short:.2f} instead of 1 and the others to 1: the "
            "mask is applied after the softmax (the [PAD] weights are zeroed, the rest is not renormalised). "
            "Mask the scores before the softmax, as -inf or a large negative number.",
            **details,
        )
    raise Fail(
        f"On {what}, the rows of your attention weights sum to {mean_sum:.2f} on average instead of 1: are the "
        "weights a softmax over the keys (dim=-1)?",
        **details,
    )


def _diagnose_pad_mass(w, q, k, mask, padded, pad_keys, pad_mass, what, details):
    """[PAD] keys get attention: the mask inverted, missing, multiplied in, or hiding the queries."""
    d = q.shape[-1]
    real_mass = 1 - pad_mass
    s = q @ k.transpose(-2, -1) / math.sqrt(d)
    m = mask[:, None, None, :].to(s.dtype)
    variants = {
        "none": s.softmax(-1),
        "multiplied": (s * m).softmax(-1),
        "queries": s.masked_fill(mask[:, None, :, None] == 0, torch.finfo(s.dtype).min).softmax(-1),
    }
    name = closest(w, variants, 1e-4)
    inverted = float((w * ~pad_keys).sum(-1).mean(dim=(1, 2))[padded].mean()) < 1e-4
    if inverted:
        why = (
            f"[PAD] keys receive {pad_mass:.0%} of the attention and the real tokens {real_mass:.0%}: the mask is "
            "inverted (mask is 1 for a real token and 0 for [PAD]; hide the keys where mask == 0)"
        )
    elif name == "none":
        why = (
            f"[PAD] keys receive {pad_mass:.1%} of the attention: the mask is not applied. Set the scores of the "
            "keys where mask == 0 to -inf or a large negative number before the softmax"
        )
    elif name == "multiplied":
        why = (
            f"[PAD] keys receive {pad_mass:.1%} of the attention: the mask is multiplied into the scores, which "
            "gives a [PAD] key the score 0, not -inf. Use scores.masked_fill(mask == 0, -inf) (or add a large "
            "negative number) before the softmax"
        )
    elif name == "queries":
        why = (
            f"[PAD] keys receive {pad_mass:.1%} of the attention: your mask hides [PAD] queries (rows) instead of "
            "[PAD] keys (columns). Shape the mask [B, 1, 1, T] so that it broadcasts over the key axis"
        )
    else:
        why = (
            f"[PAD] keys receive {pad_mass:.1%} of the attention: apply the mask before the softmax, as -inf or a "
            "large negative number (a small one such as -10 still leaves them some weight)"
        )
    raise Fail(f"On {what}, {why}.", pad_mass=round(pad_mass, 4), **details)


def _diagnose_scale(w, q, k, mask, what, details):
    """The softmax's fitted temperature: scores not scaled, divided by d, or by another factor."""
    d = q.shape[-1]
    c = _fitted_scale(w, q, k, mask)
    if c is not None and abs(c * math.sqrt(d) - 1) > 1e-3:
        ratio = c * math.sqrt(d)
        details["fitted_scale"] = round(c, 5)
        if abs(ratio - math.sqrt(d)) < 1e-2 * math.sqrt(d):
            why = (
                f"your weights are {ratio:.3g}x too peaked: the scores are not scaled. Divide q k^T by "
                f"sqrt(head_dim) = sqrt({d}) = {math.sqrt(d):.3g}"
            )
        elif abs(ratio - 1 / math.sqrt(d)) < 1e-2 / math.sqrt(d):
            why = (
                f"your weights are {1 / ratio:.3g}x too flat: you divide the scores by d = {d}; divide by sqrt(d) = "
                f"{math.sqrt(d):.3g}"
            )
        else:
            why = (
                f"your weights are {'too peaked' if ratio > 1 else 'too flat'} by a factor "
                f"{max(ratio, 1 / ratio):.3g}: "
                f"scale the scores by exactly 1 / sqrt(head_dim) = 1 / {math.sqrt(d):.3g}"
            )
        raise Fail(f"On {what}, {why}.", **details)


EXERCISE = core.Exercise(
    name="attention",
    title="Scaled dot-product attention with a padding mask",
    group="attention",
    checker=check_attention,
    solution=attention,
    imports="import math  # noqa: F401 (math.sqrt: you will need it)\n\nimport torch\n",
    hint=(
        "Three steps. (1) The scores [B, A, T, T]: q times k with k's last two axes swapped, divided by "
        "sqrt(d). (2) The mask is [B, T]; give it the shape [B, 1, 1, T] so that it broadcasts over heads and "
        "queries and picks key COLUMNS, and set the scores of [PAD] keys to -inf (masked_fill) before the "
        "softmax, which runs over the last axis (the keys). (3) The context: the weights times v."
    ),
)
