"""Exercise `encoder_layer` (notebook 2): one post-LN Transformer encoder layer with BERT's
parameter names (it calls the student's `multi_head_attention`).

The checker compares with lab.model.BertLayer (and transformers' when installed) with the same
weights; a difference is matched against pre-LN, tanh-GELU, ReLU, missing residuals, one LayerNorm
used twice and a missing mask, or traced to a failing earlier piece; dropout must act in training only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from lab.model import BertLayer

from . import core
from .compare import (
    closest,
    expect_tensor,
    first_diff,
    hf_module,
    load_reference_weights,
    max_diff,
    randomise,
    tiny_config,
)
from .core import Fail
from .multi_head import multi_head_attention


class EncoderLayer(nn.Module):
    """One Transformer encoder layer as in BERT (post-LN), with BERT's parameter names."""

    def __init__(self, config):
        super().__init__()
        H, I, eps = config.hidden_size, config.intermediate_size, config.layer_norm_eps
        self.num_heads = config.num_attention_heads
        p = config.hidden_dropout_prob
        self.attention = nn.ModuleDict(
            {
                "self": nn.ModuleDict({"query": nn.Linear(H, H), "key": nn.Linear(H, H), "value": nn.Linear(H, H)}),
                "output": nn.ModuleDict(
                    {"dense": nn.Linear(H, H), "LayerNorm": nn.LayerNorm(H, eps=eps), "dropout": nn.Dropout(p)}
                ),
            }
        )
        self.intermediate = nn.ModuleDict({"dense": nn.Linear(H, I)})
        self.output = nn.ModuleDict(
            {"dense": nn.Linear(I, H), "LayerNorm": nn.LayerNorm(H, eps=eps), "dropout": nn.Dropout(p)}
        )

    def forward(self, x, mask):
        """x     [B, T, H]: the previous layer's output
        mask  [B, T]: 1 for a real token, 0 for [PAD]
        Returns [B, T, H]. Use your multi_head_attention with self.attention.self.query / key / value;
        then self.attention.output (dense, dropout, + x, LayerNorm); then the feed-forward network:
        self.intermediate.dense, GELU, self.output (dense, dropout, + its input, LayerNorm).
        """
        a = self.attention
        context, _ = multi_head_attention(x, mask, a.self.query, a.self.key, a.self.value, self.num_heads)
        x = a.output.LayerNorm(x + a.output.dropout(a.output.dense(context)))  # add & norm (post-LN)
        h = F.gelu(self.intermediate.dense(x))  # (B, T, I), GELU in its exact (erf) form
        return self.output.LayerNorm(x + self.output.dropout(self.output.dense(h)))  # add & norm


def _layer_variant(ref, x, mask, *, post_ln=True, act=F.gelu, residual=(True, True), shared_ln=None):
    """The reference layer's arithmetic with one thing changed (eval mode: no dropout)."""
    sa = ref.attention.self
    context, _ = multi_head_attention(x, mask, sa.query, sa.key, sa.value, sa.num_heads)
    ln1, ln2 = ref.attention.output.LayerNorm, ref.output.LayerNorm
    if shared_ln == "first":
        ln2 = ln1
    elif shared_ln == "second":
        ln1 = ln2
    dense1, dense_in, dense_out = ref.attention.output.dense, ref.intermediate.dense, ref.output.dense
    if post_ln:
        h = ln1(x * residual[0] + dense1(context))
        return ln2(h * residual[1] + dense_out(act(dense_in(h))))
    context, _ = multi_head_attention(ln1(x), mask, sa.query, sa.key, sa.value, sa.num_heads)
    h = x + dense1(context)
    return h + dense_out(act(dense_in(ln2(h))))


_LAYER_WHY = {
    "pre-LN": "you normalise before each sublayer (pre-LN, x + f(LN(x)), as GPT-2 does); BERT is post-LN: "
    "LayerNorm(x + f(x)) after each sublayer",
    "tanh GELU": "you use the tanh approximation of GELU (F.gelu(x, approximate='tanh'), GPT-2's 'gelu_new'); BERT "
    "uses the exact form with erf, F.gelu(x). The two differ by up to 5e-4 per value, enough to change the output",
    "ReLU": "you use ReLU in the feed-forward network; BERT uses GELU (F.gelu, the erf form)",
    "no attention residual": "the residual connection around the attention is missing: "
    "LayerNorm(x + dropout(dense(context)))",
    "no feed-forward residual": "the residual connection around the feed-forward network is missing: "
    "LayerNorm(h + dropout(dense(gelu(dense(h)))))",
    "no residuals": "both residual connections are missing: each sublayer's output is added to its input "
    "before the LayerNorm",
    "first LayerNorm twice": "you use attention.output.LayerNorm for both sublayers; the feed-forward sublayer "
    "has its own, output.LayerNorm (different weights)",
    "second LayerNorm twice": "you use output.LayerNorm for both sublayers; the attention sublayer has its own, "
    "attention.output.LayerNorm",
    "no mask": "[PAD] tokens are attended to: pass the mask on to multi_head_attention",
}


def _reference_layer(cfg, seed: int):
    """lab.model.BertLayer with random weights where the mistakes show, in eval mode."""
    torch.manual_seed(seed)
    ref = BertLayer(cfg)
    randomise(ref, seed, std=0.35)
    with torch.no_grad():  # wide pre-activations, where erf and tanh GELU differ most
        ref.intermediate.dense.weight.mul_(2.0)
    return ref.eval()


def _layer_cases(H: int, seed: int) -> list:
    """(description, x [B, T, H], mask [B, T]) of the comparisons."""
    g = torch.Generator().manual_seed(seed)
    cases = []
    mask = torch.ones(3, 7, dtype=torch.long)
    mask[0, 5:] = 0
    mask[2, 2:] = 0
    cases.append(("a batch of 3 x 7 tokens with padding", torch.randn(3, 7, H, generator=g), mask))
    cases.append(("one token", torch.randn(1, 1, H, generator=g), torch.ones(1, 1, dtype=torch.long)))
    cases.append(("a batch of one, no padding", torch.randn(1, 5, H, generator=g), torch.ones(1, 5, dtype=torch.long)))
    return cases


def _layer_mistake(ref, x, mask, got) -> str:
    """The typical mistake whose output `got` matches, said in a sentence."""
    variants = {
        "pre-LN": _layer_variant(ref, x, mask, post_ln=False),
        "tanh GELU": _layer_variant(ref, x, mask, act=lambda t: F.gelu(t, approximate="tanh")),
        "ReLU": _layer_variant(ref, x, mask, act=F.relu),
        "no attention residual": _layer_variant(ref, x, mask, residual=(False, True)),
        "no feed-forward residual": _layer_variant(ref, x, mask, residual=(True, False)),
        "no residuals": _layer_variant(ref, x, mask, residual=(False, False)),
        "first LayerNorm twice": _layer_variant(ref, x, mask, shared_ln="first"),
        "second LayerNorm twice": _layer_variant(ref, x, mask, shared_ln="second"),
        "no mask": _layer_variant(ref, x, torch.ones_like(mask)),
    }
    name = closest(got, variants, 1e-5)
    return _LAYER_WHY.get(name, "the output is none of the usual mistakes; compare with the paper's layer")


def _check_layer_dropout(mine, x, mask, seed: int) -> None:
    """Dropout acts in train mode only."""
    with torch.no_grad():
        first = core.call(mine.eval(), x, mask, what="your EncoderLayer.forward in eval mode")
        second = core.call(mine, x, mask, what="your EncoderLayer.forward in eval mode")
        if max_diff(first, second) > 0:
            raise Fail(
                "In eval mode your layer gives a different output at each call: dropout acts in eval mode. Use the "
                "nn.Dropout modules of __init__ (model.eval() turns them off), not F.dropout(..., training=True)."
            )
        torch.manual_seed(seed)
        noisy = core.call(mine.train(), x, mask, what="your EncoderLayer.forward in train mode")
        mine.eval()
    if max_diff(noisy, first) == 0:
        raise Fail(
            "In train mode (dropout 0.1) your layer gives exactly its eval-mode output: dropout is missing. BERT "
            "applies dropout to each sublayer's output before the residual add: LayerNorm(x + dropout(f(x)))."
        )


@torch.no_grad()
def check_encoder_layer(student, seed: int = 0):
    """Checks an EncoderLayer module class (post-LN: attention -> dropout -> add & norm ->
    feed-forward with the erf GELU -> dropout -> add & norm) against lab.model.BertLayer and
    transformers' BertLayer (when installed) with the same random weights, in eval mode, on a padded
    batch, one token and a batch of one; then in train mode (dropout must act) and eval mode (it must
    not). A difference is matched against pre-LN, tanh-GELU, ReLU, missing residuals, one LayerNorm
    used twice and a missing mask; a failing earlier piece (attention, multi_head_attention) is named.
    Options: seed."""
    cfg = tiny_config()
    ref = _reference_layer(cfg, seed)
    mine = core.call(student, cfg, what="your EncoderLayer(config)")
    load_reference_weights(mine, ref, "your EncoderLayer")
    mine.eval()
    hf = hf_module("BertLayer", cfg, ref.state_dict())
    cases = _layer_cases(cfg.hidden_size, seed)
    sa = ref.attention.self
    sa.num_heads = cfg.num_attention_heads
    worst, worst_hf = 0.0, 0.0
    for what, x, mask in cases:
        call = f"your EncoderLayer.forward(x, mask) on {what}"
        with torch.no_grad():
            want = ref(x, mask.bool()[:, None, None, :])[0]
            got = expect_tensor(core.call(mine, x.clone(), mask.clone(), what=call), want.shape, call, "the output")
            err = max_diff(got, want)
            if err > 1e-5:
                earlier = core.earlier_failures(student, ("attention", "multi_head_attention"))
                if earlier:
                    raise Fail(f"On {what}, your layer differs from BERT's by up to {err:.3g}.{earlier}")
                why = _layer_mistake(ref, x, mask, got)
                raise Fail(
                    f"On {what}, your layer differs from BERT's by up to {err:.3g}: {why}.",
                    case=what,
                    **first_diff(got, want),
                )
            worst = max(worst, err)
            if hf is not None:
                ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
                theirs = hf(x, ext)
                theirs = theirs[0] if isinstance(theirs, tuple) else theirs
                worst_hf = max(worst_hf, max_diff(got, theirs))
    _check_layer_dropout(mine, cases[0][1], cases[0][2], seed)
    also = f" and transformers' BertLayer to {worst_hf:.1e}" if hf is not None else ""
    return (
        f"Your EncoderLayer matches lab.model.BertLayer to {worst:.1e}{also} on {len(cases)} inputs (padding, one "
        "token, a batch of one): post-LN, erf GELU, both residuals, dropout only in training.",
        {"largest_difference": worst, "largest_difference_transformers": worst_hf if hf is not None else None},
    )


EXERCISE = core.Exercise(
    name="encoder_layer",
    title="One encoder layer: attention, feed-forward, add & norm",
    group="attention",
    checker=check_encoder_layer,
    solution=EncoderLayer,
    imports=(
        "import torch\n"
        "import torch.nn.functional as F  # noqa: F401 (F.gelu: the feed-forward network needs it)\n"
        "from torch import nn\n"
    ),
    given=("__init__",),
    uses=("multi_head_attention", "attention"),
    hint=(
        "Both sublayers have the same shape: out = LayerNorm(inp + dropout(dense(f(inp)))). In the first, f is "
        "your multi_head_attention with the three projections of self.attention.self, and dense, dropout and "
        "LayerNorm are those of self.attention.output. In the second, f is intermediate.dense followed by "
        "F.gelu (the exact erf form, not approximate='tanh'), with output's dense, dropout and LayerNorm."
    ),
)
