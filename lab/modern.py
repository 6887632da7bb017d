"""What changed in the encoder since BERT: the pieces `lab.model` swaps in when a BertConfig asks
(pre-norm, GeGLU, rotary positions, no biases, local attention). Each works alone; all together
they are ModernBERT's encoder, which is why its checkpoints load (lab.modernbert). BERT's choices
stay the defaults; docs/pretraining.md ("What changed since BERT") describes each switch.

    model = BertForMaskedLM(BertConfig.preset("tiny", norm_position="pre", position_embedding_type="rotary"))
"""

from __future__ import annotations

import torch
from torch import nn

from lab.config import BertConfig


# ----------------------------------------------------------------------------------------
# Rotary position embeddings
# ----------------------------------------------------------------------------------------
def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension: a 90 degree turn of each
    pair (x1[i], x2[i]). Example: [1, 2, 3, 4] -> [-3, -4, 1, 2]."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """q, k (B, A, T, d) turned by position: pair i of position t by the angle t * theta^(-2i/d).
    Computed in fp32 (the angles of far positions need it), returned in q's dtype."""
    dtype = q.dtype
    q, k = q.float(), k.float()
    return (q * cos + rotate_half(q) * sin).to(dtype), (k * cos + rotate_half(k) * sin).to(dtype)


class Rotary(nn.Module):
    """cos and sin tables (T, d) for the global layers' base and for the local layers' base.

    Frequencies theta^(-2i/d), i = 0 .. d/2 - 1: the first pairs turn fast (near neighbours
    differ), the last slowly (far tokens still differ). No parameters: the tables are recomputed
    for the length at hand and are not saved in checkpoints."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        d = cfg.head_size
        for name, theta in (("global_inv_freq", cfg.rope_theta), ("local_inv_freq", cfg.local_rope_theta)):
            inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))  # (d/2,)
            self.register_buffer(name, inv_freq, persistent=False)

    def forward(self, T: int, device) -> dict[bool, tuple[torch.Tensor, torch.Tensor]]:
        """{True: (cos, sin) of the global layers, False: those of the local layers}, each (T, d)."""
        positions = torch.arange(T, device=device, dtype=torch.float32)[:, None]  # (T, 1)
        tables = {}
        for is_global, inv_freq in ((True, self.global_inv_freq), (False, self.local_inv_freq)):
            angles = positions * inv_freq.to(device)  # (T, d/2)
            angles = torch.cat((angles, angles), dim=-1)  # (T, d): pair i is (i, i + d/2)
            tables[is_global] = (angles.cos(), angles.sin())
        return tables


# ----------------------------------------------------------------------------------------
# Local attention
# ----------------------------------------------------------------------------------------
def local_mask(T: int, window: int, mask: torch.Tensor | None, device) -> torch.Tensor:
    """The mask of a local layer: query i sees key j when |i - j| <= window // 2 and `mask`
    (the global layers' mask: None, (B, 1, 1, T) or (B, 1, T, T)) allows it.

    T = 5, window 2:  1 1 0 0 0
                      1 1 1 0 0
                      0 1 1 1 0
                      0 0 1 1 1
                      0 0 0 1 1
    Each token still sees itself, even a padded one: a row with no visible key would give NaN.
    """
    i = torch.arange(T, device=device)
    band = (i[:, None] - i[None, :]).abs() <= window // 2  # (T, T)
    if mask is None:
        return band[None, None]  # (1, 1, T, T)
    return (band & mask) | torch.eye(T, dtype=torch.bool, device=device)  # (B, 1, T, T)


# ----------------------------------------------------------------------------------------
# Pre-norm layer
# ----------------------------------------------------------------------------------------
class PreNormLayer(nn.Module):
    """x = x + Attn(LN1(x)); x = x + FFN(LN2(x)): the norm before each sub-layer (Xiong et al. 2020).

    The parameters are BertLayer's, with the same names; only where the two LayerNorms act has
    moved: `attention.output.LayerNorm` now normalises the attention's input and
    `output.LayerNorm` the feed-forward's input. Layer 0 reads the embeddings' output, already
    normalised, so its first norm is dropped (as in ModernBERT)."""

    def __init__(self, attention: nn.Module, intermediate: nn.Module, output: nn.Module, first: bool):
        super().__init__()
        # BertLayer's three pieces (lab.model builds them: BertAttention, BertIntermediate, BertAddNorm)
        self.attention, self.intermediate, self.output = attention, intermediate, output
        if first:
            self.attention.output.LayerNorm = nn.Identity()

    def forward(self, x, mask=None, head_mask=None, output_attentions=False, rope=None):
        a, f = self.attention.output, self.output
        ctx, probs = self.attention.self(a.LayerNorm(x), mask, head_mask, output_attentions, rope)
        x = x + a.dropout(a.dense(ctx))  # (B, T, H): the residual stream is never normalised
        x = x + f.dropout(f.dense(self.intermediate(f.LayerNorm(x))))
        return x, probs


# ----------------------------------------------------------------------------------------
# The changes by name, as a pre-training recipe asks for them
# ----------------------------------------------------------------------------------------
CHANGES = ("pre-norm", "geglu", "rotary", "no-bias", "local")


def parse_changes(text: str) -> list[str]:
    """ "pre-norm,rotary" -> ["pre-norm", "rotary"]; "" -> [] (BERT). Unknown names are refused."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in CHANGES]
    if unknown:
        raise ValueError(f"changes={text!r}: unknown {unknown}; choose from {', '.join(CHANGES)}")
    return names


def changed(values: dict, names, local_window: int = 64, global_every: int = 2) -> dict:
    """BertConfig keyword values with the named changes applied.

    geglu keeps the parameter count: two matrices of H x I' plus one of I' x H with I' = 2/3 of
    BERT's I (Shazeer 2020 does the same). rotary uses RoPE's base of 10,000 in every layer
    (ModernBERT's 160,000 for global layers is for sequences of 8,192 tokens). local: layer i
    attends globally when i % global_every == 0, the others within local_window tokens."""
    values = dict(values)
    for name in names:
        if name == "pre-norm":
            values["norm_position"] = "pre"
        elif name == "geglu":
            values["feed_forward"] = "glu"
            values["intermediate_size"] = round(2 * values.get("intermediate_size", 3072) / 3)
        elif name == "rotary":
            values["position_embedding_type"] = "rotary"
        elif name == "no-bias":
            values["bias"] = False
        elif name == "local":
            values["local_attention"], values["global_attn_every_n_layers"] = local_window, global_every
    return values


def changes_of(config) -> list[str]:
    """The named changes a BertConfig has on, in CHANGES order ([] for BERT as in 2018): the
    inverse of `changed`, for saying what a saved model is (the dashboard's Model tab)."""
    on = {
        "pre-norm": config.norm_position == "pre",
        "geglu": config.feed_forward == "glu",
        "rotary": config.position_embedding_type == "rotary",
        "no-bias": not config.bias,
        "local": bool(config.local_attention),
    }
    return [name for name in CHANGES if on[name]]
