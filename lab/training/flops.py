"""FLOP arithmetic of BERT pre-training: what a step costs, what the paper's schedule cost, and
how fast this machine does it.

    from lab.training import flops
    flops.forward_flops(cfg, batch_size=32, seq_len=128, predictions=32 * 20)   # one forward pass
    flops.pretraining_flops(lab.BertConfig.preset("base"))       # the paper's 1M steps, in FLOPs
    flops.measure_flop_rate(model, flops.random_batch(model.config))   # this machine: FLOP/s

`forward_flops` / `training_flops` of a BertForPreTraining step are computed from the shape
(checked against torch's FlopCounterMode in tests/test_flops.py), `pretraining_flops` of a
schedule such as the paper's (PAPER_PRETRAINING), `measure_flop_rate` times forward + backward
on a real batch or on a `random_batch` of the right shape.
"""

from __future__ import annotations

import time

import torch

from lab.config import BertConfig
from lab.data.batch import IGNORE_INDEX, Batch
from lab.device import autocast, autocast_dtype
from lab.training.fast_dropout import use_fast_dropout

# The paper's pre-training (Appendix A.2): batch 256 sequences, 1,000,000 steps, 90% of them at
# length 128 and 10% at 512; Google's scripts predict at most 20 tokens per 128 (80 per 512).
PAPER_PRETRAINING = (  # (steps, batch size, sequence length, predictions per sequence)
    (900_000, 256, 128, 20),
    (100_000, 256, 512, 80),
)


def forward_flops(cfg: BertConfig, batch_size: int, seq_len: int, predictions: int, nsp: bool = True) -> int:
    """FLOPs (2 per multiply-add, matrix products only) of one BertForPreTraining forward pass.

    predictions: MLM positions in the whole batch (the vocabulary projection runs only there).
    Per sequence of T tokens and per layer, with H hidden and I = 4H feed-forward:
        Q, K, V and output projections   4 x 2 T H H
        attention scores and mixing      2 x 2 T T H   (all heads together)
        feed-forward                     2 x 2 T H I
    MLM head per prediction: 2 H H (transform) + 2 H V (tied decoder); NSP: the pooler on [CLS].
    Embedding lookups, LayerNorm, GELU and softmax are left out, as FlopCounterMode leaves them.
    """
    H, I, V, L, T = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size, cfg.num_hidden_layers, seq_len
    layer = 4 * 2 * T * H * H + 2 * 2 * T * T * H + 2 * 2 * T * H * I
    head = predictions * (2 * H * H + 2 * H * V)
    pooler = batch_size * (2 * H * H + 2 * H * 2) if nsp else 0
    return batch_size * L * layer + head + pooler


def training_flops(cfg: BertConfig, batch_size: int, seq_len: int, predictions: int, nsp: bool = True) -> int:
    """One training step: the backward pass costs two forward passes (gradients with respect to
    the inputs and to the weights of every product), so 3 x forward."""
    return 3 * forward_flops(cfg, batch_size, seq_len, predictions, nsp)


def pretraining_flops(cfg: BertConfig, schedule=PAPER_PRETRAINING) -> float:
    """Total FLOPs of a pre-training schedule ((steps, batch, length, predictions per sequence), ...)."""
    return float(sum(steps * training_flops(cfg, batch, T, batch * p) for steps, batch, T, p in schedule))


def random_batch(
    cfg: BertConfig, batch_size: int = 8, seq_len: int = 128, predictions_per_seq: int = 20, seed: int = 0
) -> Batch:
    """A pre-training Batch of random token ids in the shape of real ones ([CLS] A [SEP] B [SEP],
    `predictions_per_seq` masked positions per row): for timing a model whose vocabulary no
    text has been tokenized with (e.g. BERT-base's 30,522 ids)."""
    g = torch.Generator().manual_seed(seed)
    B, T = batch_size, seq_len
    ids = torch.randint(5, cfg.vocab_size, (B, T), generator=g)  # (B, T) no specials
    half = T // 2
    ids[:, 0], ids[:, half], ids[:, -1] = 2, 3, 3  # [CLS] A [SEP] B [SEP]
    types = torch.zeros(B, T, dtype=torch.long)
    types[:, half + 1 :] = 1
    labels = torch.full((B, T), IGNORE_INDEX, dtype=torch.long)
    for row in range(B):
        spots = torch.randperm(T - 2, generator=g)[:predictions_per_seq] + 1  # never [CLS]/last [SEP]
        labels[row, spots] = ids[row, spots]
    return Batch(
        input_ids=ids,
        token_type_ids=types,
        attention_mask=torch.ones(B, T, dtype=torch.long),
        mlm_labels=labels,
        nsp_label=torch.randint(0, 2, (B,), generator=g),
    )


def measure_flop_rate(model, batch: Batch, steps: int = 3, precision: str = "auto", threads: int | None = None) -> dict:
    """Time forward + backward of `batch` (a lab.data.batch.Batch) as the training loop runs it
    (same autocast, the same dropout: lab.training.fast_dropout, swapped into the model here as train()
    does), after one untimed step; FLOPs from `training_flops` of the batch's shape.

    -> {"flops_per_step", "seconds_per_step", "flop_per_s"}. No optimizer step: the model's
    weights are not changed (gradients are cleared afterwards).
    """
    if threads:
        torch.set_num_threads(threads)
    device = next(model.parameters()).device
    dtype = autocast_dtype(precision, device)
    batch = batch.to(device)
    B, T = batch.input_ids.shape
    flops = training_flops(model.config, B, T, int((batch.mlm_labels != IGNORE_INDEX).sum()))
    use_fast_dropout(model)
    was_training = model.training
    model.train()
    times = []
    try:
        for _ in range(steps + 1):
            t0 = time.perf_counter()
            with autocast(device, dtype):
                loss = model(**batch).loss
            loss.backward()
            if device.type == "cuda":  # kernels run asynchronously: wait for them
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - t0)
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was_training)
    sec = sum(times[1:]) / steps  # the first step pays one-off costs
    return {"flops_per_step": flops, "seconds_per_step": sec, "flop_per_s": flops / sec}
