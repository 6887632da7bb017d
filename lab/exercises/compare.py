"""Comparing a student's tensors and modules with the reference's: the shared tools of the encoder
checkers (embeddings, attention, multi-head attention, the layer) and of the capstone. A check builds
an oddly sized config, draws weights where mistakes show, copies them into the student's module by
BERT's parameter names, and compares outputs with the lab's modules (and transformers' when installed).
"""

from __future__ import annotations

import torch
from torch import nn

from lab.config import BertConfig

from .core import Fail


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max()) if a.numel() else 0.0


def expect_tensor(x, shape, what: str, name: str = "it", finite: bool = True) -> torch.Tensor:
    """x must be a tensor of this shape (and finite); otherwise a Fail that says what came back."""
    if not torch.is_tensor(x):
        raise Fail(f"{what} should return a tensor; {name} is a {type(x).__name__}.", returned=type(x).__name__)
    if tuple(x.shape) != tuple(shape):
        raise Fail(
            f"{what}: {name} has shape {list(x.shape)}, expected {list(shape)}.",
            got_shape=list(x.shape),
            expected_shape=list(shape),
        )
    if finite and not torch.isfinite(x).all():
        bad = (~torch.isfinite(x)).nonzero()[0].tolist()
        raise Fail(
            f"{what}: {name} holds NaN or inf (first at index {bad}). A row whose every score is -inf gives NaN "
            "after the softmax; so does dividing by zero.",
            first_bad_index=bad,
        )
    return x


def first_diff(got: torch.Tensor, want: torch.Tensor) -> dict:
    i = (got.double() - want.double()).abs().flatten().argmax().item()
    idx = list(torch.unravel_index(torch.tensor(i), got.shape)) if got.dim() else []
    idx = [int(j) for j in idx]
    return {
        "largest_difference_at": idx,
        "yours": round(float(got.flatten()[i]), 6),
        "expected": round(float(want.flatten()[i]), 6),
    }


def closest(got: torch.Tensor, variants: dict, tol: float):
    """The name of the altered reference `got` matches (within tol), or None."""
    best, best_err = None, float("inf")
    for name, value in variants.items():
        if value is None or tuple(value.shape) != tuple(got.shape):
            continue
        err = max_diff(got, value)
        if err < best_err:
            best, best_err = name, err
    return best if best_err <= tol else None


def tiny_config(**overrides):
    values = dict(
        vocab_size=53,
        hidden_size=24,
        num_hidden_layers=2,
        num_attention_heads=3,
        intermediate_size=37,
        max_position_embeddings=12,
        type_vocab_size=2,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.0,
    )
    values.update(overrides)
    return BertConfig(**values)


def randomise(module: nn.Module, seed: int, std: float = 1.0) -> nn.Module:
    """Every parameter drawn from N(0, std), LayerNorms around (1, 0): outputs where mistakes show."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "LayerNorm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.3 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(std * torch.randn(p.shape, generator=g))
    return module


def load_reference_weights(student: nn.Module, reference: nn.Module, what: str) -> None:
    """Copy the reference's parameters into the student's module, by name (the stub's names)."""
    if not isinstance(student, nn.Module):
        raise Fail(f"{what} should build an nn.Module; it built a {type(student).__name__}.")
    own = dict(student.named_parameters())
    ref = dict(reference.named_parameters())
    missing, extra = sorted(set(ref) - set(own)), sorted(set(own) - set(ref))
    if missing or extra:
        raise Fail(
            f"{what[0].upper()}{what[1:]} has parameters named differently from BERT's: "
            + (f"missing {', '.join(missing[:6])}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unexpected {', '.join(extra[:6])}" if extra else "")
            + ". Keep __init__ as the stub gives it: these names are how real checkpoints load.",
            missing=missing,
            unexpected=extra,
        )
    for name, p in ref.items():
        if own[name].shape != p.shape:
            raise Fail(
                f"{what}: parameter {name} has shape {list(own[name].shape)}, BERT's is {list(p.shape)}. "
                "Keep __init__ as the stub gives it.",
            )
    with torch.no_grad():
        for name, p in ref.items():
            own[name].copy_(p)


_TRANSFORMERS = None


def _transformers():
    """transformers' BERT modules (the dev extra), or None when it is not installed."""
    global _TRANSFORMERS
    if _TRANSFORMERS is None:
        try:
            from transformers import BertConfig as HFConfig
            from transformers.models.bert import modeling_bert

            _TRANSFORMERS = (HFConfig, modeling_bert)
        except Exception:  # not installed (the core install): the lab's reference alone
            _TRANSFORMERS = False
    return _TRANSFORMERS or None


def hf_module(kind: str, config, state_dict):
    """transformers' BertEmbeddings / BertLayer with these weights, eval mode, eager attention."""
    found = _transformers()
    if found is None:
        return None
    HFConfig, modeling_bert = found
    hc = HFConfig(**config.to_dict())
    hc._attn_implementation = "eager"
    module = getattr(modeling_bert, kind)(hc)
    module.load_state_dict(state_dict, strict=False)
    return module.eval()
