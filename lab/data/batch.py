"""Named batches and step-indexed sampling: what every objective hands to the training loop.

    batch = Batch(input_ids=ids, attention_mask=mask, labels=labels)   # HF field names
    out = model(**batch)                                                # a Batch is a dict
    rows = step_indices(n=1000, batch_size=32, step=40, seed=0)        # the examples of step 40

One batch type serves pre-training (input_ids, token_type_ids, attention_mask, mlm_labels,
nsp_label), classification (+ labels), question answering (+ start_positions, end_positions)
and the language-model experiments: a dict of tensors, so `model(**batch)` passes exactly the
fields it holds. `-100` in a label tensor means "ignore this position" (the HF convention).
Sampling is a pure function of the step number, so a killed run resumes on exactly its batches.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Sequence

import torch

IGNORE_INDEX = -100  # label value skipped by every loss (Hugging Face convention)


class Batch(dict):
    """A dict of tensors with Hugging Face field names; `model(**batch)` takes it as it is."""

    def __getattr__(self, name: str) -> torch.Tensor:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"this batch has no field {name!r} (it has {', '.join(self)})") from None

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Batch:
        """The same batch on `device`; non_blocking copies overlap with compute from pinned memory."""
        return Batch({k: v.to(device, non_blocking=non_blocking) for k, v in self.items()})

    def pin_memory(self) -> Batch:
        """Page-locked host memory, so that a copy to the GPU can be asynchronous."""
        return Batch({k: v.pin_memory() for k, v in self.items()})

    def as_dict(self) -> dict[str, torch.Tensor]:
        return dict(self)

    def rows(self, index) -> Batch:
        """A slice of the rows (e.g. this rank's share of a global batch)."""
        return Batch({k: v[index] for k, v in self.items()})

    def __len__(self) -> int:
        """Sequences in the batch (B)."""
        return self["input_ids"].shape[0]

    @property
    def num_tokens(self) -> int:
        """Real (non-pad) tokens; counted on the host before the batch moves to a device."""
        mask = self.get("attention_mask")
        return int(mask.sum()) if mask is not None else self["input_ids"].numel()


def padded_length(longest: int, pad_to_multiple_of: int | None = 8, max_length: int | None = None) -> int:
    """The batch length T for a longest row: rounded up to a multiple (kernels like round sizes),
    never beyond max_length. padded_length(13, 8, 128) -> 16; padded_length(125, 8, 126) -> 126."""
    if max_length is not None and longest > max_length:
        raise ValueError(f"a sequence has {longest} tokens, more than max_length={max_length}")
    T = math.ceil(longest / pad_to_multiple_of) * pad_to_multiple_of if pad_to_multiple_of else longest
    return min(T, max_length) if max_length is not None else T


def pad_rows(
    rows: Sequence[Sequence[int]], pad_id: int, pad_to_multiple_of: int | None = 8, max_length: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of ids -> (ids, attention_mask), both (B, T) long, right-padded with pad_id.

    T = the longest row rounded up to a multiple of `pad_to_multiple_of` (kernels like round
    sizes), never beyond `max_length`: rows [5, 6, 7] and [8] with multiple 4 ->
        ids  [[5, 6, 7, P], [8, P, P, P]]     attention_mask [[1, 1, 1, 0], [1, 0, 0, 0]]
    """
    if not rows:
        raise ValueError("nothing to pad: the batch is empty")
    T = padded_length(max(len(r) for r in rows), pad_to_multiple_of, max_length)
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)  # (B, T)
    mask = torch.zeros((len(rows), T), dtype=torch.long)  # (B, T)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.as_tensor(r, dtype=torch.long)
        mask[i, : len(r)] = 1
    return ids, mask


# ----------------------------------------------------------------------------------------
# Step-indexed sampling
# ----------------------------------------------------------------------------------------
# Step s lives in epoch e = s // steps_per_epoch, the order of epoch e is a permutation seeded by
# (seed, e), and under torchrun rank r takes rows [r * batch_size, (r + 1) * batch_size) of the
# global batch: any step's rows follow from its number alone.
def mix_seed(*parts: object) -> int:
    """A 63-bit seed from a tuple of ints/strings, the same on every machine and Python run.

    (Python's hash() of a string changes between runs; SHA-256 of the repr does not.)
    """
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


@functools.lru_cache(maxsize=2)
def epoch_order(n: int, seed: int, epoch: int, shuffle: bool = True) -> torch.Tensor:
    """The order (a permutation of range(n), int32 [n]) in which epoch `epoch` visits examples.
    Cached: every step of an epoch asks for it (4 bytes per example; read-only)."""
    if not shuffle:
        return torch.arange(n, dtype=torch.int32)
    gen = torch.Generator().manual_seed(mix_seed("order", seed, epoch))
    return torch.randperm(n, generator=gen, dtype=torch.int32)


def steps_per_epoch(n: int, global_batch_size: int, drop_last: bool = True) -> int:
    """Global batches per epoch: n // g (drop_last) or ceil(n / g) (the last one wraps around)."""
    per = n // global_batch_size if drop_last else math.ceil(n / global_batch_size)
    if per == 0:
        raise ValueError(
            f"{n} examples do not fill one global batch of {global_batch_size}: use more data or a smaller batch"
        )
    return per


def step_indices(
    n: int,
    batch_size: int,
    step: int,
    seed: int,
    rank: int = 0,
    world_size: int = 1,
    drop_last: bool = True,
    shuffle: bool = True,
) -> list[int]:
    """The example indices this rank puts in the batch of global step `step`.

    The global batch (batch_size * world_size rows) of step s takes positions
    [i * g, (i + 1) * g) of epoch e's order, with (e, i) = divmod(s, steps_per_epoch);
    rank r keeps rows [r * batch_size, (r + 1) * batch_size). Example: n = 10, batch_size 2,
    world_size 2 -> 2 steps per epoch (drop_last), step 3 = epoch 1, positions 4..7 of its
    order; rank 1 gets positions 6 and 7. Positions past n wrap around (drop_last=False).
    """
    if step < 0:
        raise ValueError(f"step={step} must be >= 0")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank={rank} must be in [0, world_size={world_size})")
    g = batch_size * world_size
    epoch, i = divmod(step, steps_per_epoch(n, g, drop_last))
    order = epoch_order(n, seed, epoch, shuffle)
    first = i * g + rank * batch_size
    return order[torch.arange(first, first + batch_size) % n].tolist()
