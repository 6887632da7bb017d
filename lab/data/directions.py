"""Attention directions as masks: who may attend to whom (the paper's Figure 3: BERT, OpenAI GPT, ELMo).

    visibility_mask(4, "left_to_right")                   # [T, T] bool: what each position sees
    direction_mask(input_ids, "left_to_right", padding)   # [B, T, T] bool, for lab.model

A direction is nothing but an attention mask: lab.model takes a [B, T, T] mask (True = query i
may see key j) as well as a padding mask [B, T]. The masks live here, below the model and the
training code, so that pre-training (`--objective ltr`) and the studies
(lab.studies.directions, lab.studies.language_models) build them the same way.
"""

from __future__ import annotations

import torch

DIRECTIONS = ("bidirectional", "left_to_right", "right_to_left")


def _check(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, not {direction!r}")


def visibility_mask(T: int, direction: str = "bidirectional", device=None) -> torch.Tensor:
    """[T, T] bool: entry (i, j) is True when query position i may attend to key position j.

    T = 4:   bidirectional      left_to_right      right_to_left
             1 1 1 1            1 0 0 0            1 1 1 1
             1 1 1 1            1 1 0 0            0 1 1 1
             1 1 1 1            1 1 1 0            0 0 1 1
             1 1 1 1            1 1 1 1            0 0 0 1
    """
    _check(direction)
    ones = torch.ones(T, T, dtype=torch.bool, device=device)
    if direction == "left_to_right":
        return torch.tril(ones)  # j <= i: the past and the present
    if direction == "right_to_left":
        return torch.triu(ones)  # j >= i: the present and the future
    return ones


def direction_mask(
    input_ids: torch.Tensor, direction: str = "bidirectional", attention_mask: torch.Tensor | None = None
) -> torch.Tensor | None:
    """The attention mask to give the model for `direction`, combined with padding.

    attention_mask [B, T] (1 = real token, 0 = padding) or None. Bidirectional needs no mask
    of its own: the padding mask comes back as it is (None: every key visible). Otherwise
    [B, T, T] bool: query i sees key j when the direction allows it AND j is a real token.
    Example, T = 3, left_to_right, padding [1, 1, 0]:
        1 0 0
        1 1 0
        1 1 0      (the padded key 2 is hidden even from position 2 itself)
    """
    _check(direction)
    if direction == "bidirectional":
        return attention_mask
    B, T = input_ids.shape
    mask = visibility_mask(T, direction, input_ids.device).expand(B, T, T)  # (B, T, T)
    if attention_mask is not None:
        mask = mask & attention_mask.bool()[:, None, :]  # keys (B, 1, T)
    return mask
