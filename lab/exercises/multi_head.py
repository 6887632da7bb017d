"""Exercise `multi_head` (notebook 2): multi-head attention, splitting the projections into heads
and merging them back (it calls the student's `attention`).

The checker compares with lab.model.BertSelfAttention on odd sizes; wrong weights are traced to the
split (or to the student's own attention), wrong contexts to the merge.
"""

from __future__ import annotations

import torch

from lab.model import BertSelfAttention

from . import core
from .attention import attention
from .compare import closest, expect_tensor, first_diff, max_diff, randomise, tiny_config
from .core import Fail


def multi_head_attention(x, mask, query, key, value, num_heads):
    """Multi-head self-attention: project, split into heads, attend (your `attention`), merge.

    x          [B, T, H]: one vector per token
    mask       [B, T]: 1 for a real token, 0 for [PAD]
    query, key, value   nn.Linear(H, H) layers: they map x to queries, keys, values [B, T, H]
    num_heads  A; each head works on d = H / A of the columns: head a on columns a*d .. a*d+d-1
    Returns (context, weights):
      context  [B, T, H]: every head's context, side by side again (head 0's d columns first)
      weights  [B, A, T, T]: the attention weights of every head
    """
    B, T, H = x.shape
    d = H // num_heads

    def split(t):  # (B, T, H) -> (B, T, A, d) -> (B, A, T, d): head a gets columns a*d .. a*d+d-1
        return t.view(B, T, num_heads, d).transpose(1, 2)

    context, weights = attention(split(query(x)), split(key(x)), split(value(x)), mask)
    context = context.transpose(1, 2).reshape(B, T, H)  # (B, A, T, d) -> (B, T, A, d) -> (B, T, H)
    return context, weights


def _split_mistake(student, ref, x, mask, w, A: int) -> str:
    """Why the weights of each head are wrong: the split of [B, T, H] into heads, else the student's attention."""
    B, T, H = x.shape
    d = H // A
    q, k, v = ref.query(x), ref.key(x), ref.value(x)
    variants = {
        "no transpose": attention(*(t.reshape(B, A, T, d) for t in (q, k, v)), mask)[1],
        "interleaved": attention(*(t.reshape(B, T, d, A).permute(0, 3, 1, 2) for t in (q, k, v)), mask)[1],
    }
    name = closest(w, variants, 1e-4)
    if name == "no transpose":
        why = (
            "you reshape [B, T, H] straight to [B, A, T, d] (view without transpose), so each 'head' gets "
            "pieces of several positions mixed together. Reshape to [B, T, A, d] first, then "
            "transpose(1, 2) to [B, A, T, d]"
        )
    elif name == "interleaved":
        why = (
            f"your heads take every {A}th column (reshape to [B, T, d, A]); head a takes the columns "
            "a*d .. a*d+d-1: reshape to [B, T, A, d], then transpose(1, 2)"
        )
    else:
        why = "the weights differ from those of heads split as [B, T, H] -> [B, T, A, d] -> [B, A, T, d]" + (
            core.earlier_failures(student, ("attention",)) or "; check which projection gives q, k and v"
        )
    return why


def _merge_mistake(student, ref, x, want_w, ctx, A: int) -> str:
    """Why the context is wrong although the weights are right: the merge of the heads."""
    B, T, H = x.shape
    d = H // A
    per_head = want_w @ ref.value(x).view(B, T, A, d).transpose(1, 2)  # (B, A, T, d)
    variants = {
        "no transpose": per_head.reshape(B, T, H),
        "wrong transpose": per_head.transpose(2, 3).reshape(B, T, H),
        "interleaved": per_head.permute(0, 2, 3, 1).reshape(B, T, H),
    }
    name = closest(ctx, variants, 1e-4)
    why = {
        "no transpose": "you merge the heads by reshaping [B, A, T, d] straight to [B, T, H], which mixes "
        "positions; transpose(1, 2) back to [B, T, A, d] first, then reshape to [B, T, H]",
        "wrong transpose": "you swap the last two axes before merging; transpose(1, 2) (heads and positions) "
        "to [B, T, A, d], then reshape to [B, T, H]",
        "interleaved": "you merge with the head axis last ([B, T, d, A]); the heads go side by side: "
        "[B, T, A, d] -> [B, T, H]",
    }.get(
        name,
        "the weights are right but the heads are not merged back as [B, A, T, d] -> [B, T, A, d] -> "
        "[B, T, H]" + core.earlier_failures(student, ("attention",)),
    )
    return why


@torch.no_grad()
def check_multi_head(student, seed: int = 0):
    """Checks multi_head_attention(x, mask, query, key, value, num_heads) -> (context [B, T, H],
    weights [B, A, T, T]) against lab.model.BertSelfAttention with the same projections, on odd
    sizes (H 12 in 3 heads, 20 in 5, one head, one token, a batch of one) with padding. Wrong
    weights are traced to the split (a reshape without the transpose, heads interleaved) or to the
    student's own attention function; wrong contexts to the merge (no transpose back, the wrong
    one). Options: seed."""
    g = torch.Generator().manual_seed(seed)
    worst = 0.0
    for B, T, H, A, pads, what in (
        (2, 5, 12, 3, (2, 0), "2 sentences of 5 tokens, hidden 12 in 3 heads, 2 [PAD]s in the first"),
        (1, 1, 8, 2, (0,), "one token, 2 heads"),
        (3, 6, 20, 5, (0, 3, 1), "3 sentences of 6 tokens, hidden 20 in 5 heads, with padding"),
        (1, 4, 6, 1, (1,), "a batch of one, a single head"),
    ):
        cfg = tiny_config(hidden_size=H, num_attention_heads=A, intermediate_size=2 * H)
        ref = randomise(BertSelfAttention(cfg), seed + H, std=0.6).eval()
        x = torch.randn(B, T, H, generator=g)
        mask = torch.ones(B, T, dtype=torch.long)
        for b, n in enumerate(pads):
            if n:
                mask[b, T - n :] = 0
        call = f"your multi_head_attention(x, mask, query, key, value, num_heads={A}) on {what}"
        with torch.no_grad():
            want_ctx, want_w = ref(x, mask.bool()[:, None, None, :], output_attentions=True)
            out = core.call(student, x.clone(), mask.clone(), ref.query, ref.key, ref.value, A, what=call)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise Fail(
                f"multi_head_attention should return a pair (context, weights); it returned {type(out).__name__}."
            )
        ctx, w = out
        if torch.is_tensor(w) and w.dim() == 4 and w.shape[1] == 1 and A > 1:
            raise Fail(
                f"On {what}, your weights have 1 head instead of {A}: split queries, keys and values into "
                f"{A} heads of {H // A} columns, [B, T, H] -> [B, A, T, H/A], before the attention.",
                got_shape=list(w.shape),
            )
        w = expect_tensor(w, (B, A, T, T), call, "weights").detach()
        ctx = expect_tensor(ctx, (B, T, H), call, "context").detach()
        details = {"case": what}
        if max_diff(w, want_w) > 1e-5:
            why = _split_mistake(student, ref, x, mask, w, A)
            raise Fail(f"On {what}, your attention weights are wrong: {why}.", **details, **first_diff(w, want_w))
        err = max_diff(ctx, want_ctx)
        if err > 1e-5:
            why = _merge_mistake(student, ref, x, want_w, ctx, A)
            raise Fail(f"On {what}, your context is wrong: {why}.", **details, **first_diff(ctx, want_ctx))
        worst = max(worst, err)
    return (
        f"Your multi-head attention matches the lab's BertSelfAttention to {worst:.1e} on 4 shapes (3 and 5 heads, one "
        "head, one token, padding): the heads are split and merged in BERT's order.",
        {"largest_difference": worst},
    )


EXERCISE = core.Exercise(
    name="multi_head",
    title="Multi-head attention: split into heads and merge back",
    group="attention",
    checker=check_multi_head,
    solution=multi_head_attention,
    imports="import torch\n",
    uses=("attention",),
    hint=(
        "d = H // num_heads. Split in two moves: view [B, T, H] as [B, T, A, d] (the columns of each head are "
        "contiguous), then swap the axes of positions and heads to get [B, A, T, d]. Merge by the reverse "
        "moves: swap back to [B, T, A, d], then reshape (not view: the tensor is no longer contiguous) to "
        "[B, T, H]."
    ),
)
