"""A faster dropout for training on a CPU, swapped in for nn.Dropout by lab.training.train.train().

    from lab.training.fast_dropout import use_fast_dropout
    use_fast_dropout(model)        # every nn.Dropout in the model -> FastDropout (same p)

lab/model.py keeps plain `nn.Dropout`, so the model reads as BERT. On a CPU torch draws one
random float per value for a dropout mask, which for attention probabilities can cost more than
the layer's matrix products (docs/performance.md); FastDropout computes the same thing from one
random 32-bit word per two values. Dropout has no parameters or buffers, so checkpoints are the
same with either module; in eval mode both are the identity.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class FastDropout(nn.Dropout):
    """nn.Dropout (zero each value with probability p, scale the rest by 1 / (1 - p)), with a
    faster random mask on the CPU.

    The mask comes from random 32-bit words read as two 16-bit numbers each, a value kept where
    its number is at or above round(p * 65536): p is then exact to 1/65536 (0.1 -> 0.100006),
    and the kept values are scaled by the exact 1 / (1 - p'). Example, p = 0.1: cut = 6554, so
    the numbers -32768..-26215 (6554 of the 65536) drop their value. On a GPU, F.dropout's
    fused kernel is used as it is.
    """

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if x.device.type != "cpu":
            return F.dropout(x, self.p, True, self.inplace)
        n = x.numel()
        words = torch.empty((n + 1) // 2, dtype=torch.int32).random_(-(2**31), 2**31 - 1)
        r = words.view(torch.int16)[:n].view(x.shape)  # uniform in [-32768, 32767]
        cut = round(self.p * 65536)  # values below -32768 + cut are dropped
        scale = (r >= cut - 32768).to(x.dtype).mul_(65536 / (65536 - cut))  # 0 or 1 / (1 - p')
        return x.mul_(scale) if self.inplace else x * scale


def use_fast_dropout(model: nn.Module) -> int:
    """Replace every plain nn.Dropout inside `model` by a FastDropout with the same p (in place);
    returns how many were replaced. Parameters, buffers and state_dict are unchanged."""
    plain = [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if type(child) is nn.Dropout
    ]
    for parent, name, child in plain:
        fast = FastDropout(child.p, child.inplace)
        fast.train(child.training)
        setattr(parent, name, fast)
    return len(plain)
