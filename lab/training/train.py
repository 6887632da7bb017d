"""The one training loop. Pre-training and every fine-tuning task plug an *objective* into it.

    from lab.training.train import TrainConfig, train
    train(model, objective, TrainConfig(out_dir="runs/x", steps=1000), tokenizer)

An objective supplies the data and the loss (`Objective` below); the loop supplies the rest:
AdamW, warm-up and decay, gradient accumulation and clipping, bf16 autocast, held-out evaluation
into metrics.jsonl, checkpoints that resume exactly, a clean stop on a NaN loss, and DDP under
torchrun (rank 0 writes; the run directory's layout is lab.training.runs'). `train` reads top to
bottom like nanoGPT's: set up, resume, then optimizer steps, with the log / eval / checkpoint steps
in named helpers. The host waits for the device only at log steps.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
import torch.distributed as tdist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from lab.checkpoint import load_weights
from lab.config import setting
from lab.device import Dist, autocast, autocast_dtype, choose_precision, init_distributed, pick_device
from lab.files import METRICS_NAME, STATE_NAME, TRAIN_CONFIG_NAME
from lab.training.fast_dropout import use_fast_dropout
from lab.training.runs import (
    MetricsLog,
    latest_resumable,
    refuse_existing_run,
    snapshot_steps,
    write_checkpoint,
    write_json,
)


@dataclass
class TrainConfig:
    out_dir: str = setting("runs/run", "run directory (checkpoints, metrics.jsonl)")
    steps: int | None = setting(None, "optimizer steps; None -> derived from minutes")
    minutes: float | None = setting(None, "wall-clock budget; sets steps from a speed probe")
    batch_size: int = setting(32, "sequences per micro-batch (per process)")
    grad_accum: int = setting(1, "micro-batches per optimizer step")
    lr: float = setting(1e-4, "peak learning rate")
    weight_decay: float = setting(0.01, "AdamW decay (not on biases / LayerNorm)")
    adam_betas: tuple[float, float] = setting((0.9, 0.999), "AdamW betas (BERT's)")
    adam_eps: float = setting(1e-6, "AdamW epsilon (BERT's)")
    warmup: float = setting(0.1, "warm-up: a fraction of the steps (<1) or a step count")
    min_lr_ratio: float = setting(0.0, "linear decay ends at lr * min_lr_ratio")
    clip_norm: float = setting(1.0, "gradient clipping (global L2 norm); 0 = off")
    precision: str = setting("auto", "auto | bf16 | fp32 (auto: bf16 where a timed step says it is faster)")
    device: str = setting("auto", "auto | cpu | cuda | cuda:N | mps")
    seed: int = setting(0, "one seed for init, data order, masks, dropout")
    eval_every: int = setting(200, "steps between held-out evaluations; 0 = only at the end")
    ckpt_every: int = setting(500, "steps between resume checkpoints; 0 = only at the end")
    snapshots: int = setting(5, "model snapshots kept, spread over the run")
    log_every: int = setting(10, "steps between training records; 0 = only at eval/checkpoints")
    threads: int | None = setting(None, "torch CPU threads (None: torch's default)")
    compile: bool = setting(False, "torch.compile the model (fuses small ops; a compilation warm-up first)")
    progress: bool = setting(True, "tqdm bar")

    def to_dict(self):
        return dataclasses.asdict(self)


class Objective(Protocol):
    """What a task provides to the loop."""

    def train_batch(self, index: int):
        """The micro-batch number `index` (a lab.data.batch.Batch; a pure function of the index, so a
        resumed run sees the same data)."""

    def loss(self, model: nn.Module, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Loss to minimise, and a few detached 0-dim tensors to log (no .item(): the loop
        reads them from the device at log steps only). The loop logs the loss itself as "loss"."""

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Held-out metrics, model in eval mode, no gradients."""


class TrainingError(RuntimeError):
    """A run that cannot go on (a NaN loss, say); the message says what to do."""


# ----------------------------------------------------------------------------------------
# Optimiser and schedule
# ----------------------------------------------------------------------------------------
def make_optimizer(model: nn.Module, cfg: TrainConfig, device: torch.device | None = None) -> torch.optim.AdamW:
    """AdamW; biases and LayerNorm weights are not decayed (as in BERT). The fused kernel
    updates every parameter in one pass (GPU and CPU): faster than the per-tensor ("foreach")
    version, notably on a CPU (compare with fused=False on your machine)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():  # a tied parameter is listed once
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "LayerNorm" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    try:
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=tuple(cfg.adam_betas), eps=cfg.adam_eps, fused=True)
    except RuntimeError:  # a device (or an old PyTorch) without the fused kernel
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=tuple(cfg.adam_betas), eps=cfg.adam_eps)


def lr_factor(step: int, total: int, warmup: int, min_ratio: float = 0.0) -> float:
    """Linear warm-up to 1 over `warmup` steps, then linear decay to `min_ratio` at `total`.

    e.g. total=100, warmup=10: step 0 -> 0.1, step 9 -> 1.0, step 55 -> 0.5, step 99 -> 0.011
    """
    if step < warmup:
        return (step + 1) / warmup
    frac = (step - warmup) / max(1, total - warmup)
    return max(min_ratio, 1.0 - frac * (1.0 - min_ratio))


def warmup_steps(cfg: TrainConfig, total: int) -> int:
    return int(cfg.warmup * total) if cfg.warmup < 1 else int(cfg.warmup)


def every(step: int, interval: int) -> bool:
    """Is `step` a multiple of `interval`? An interval of 0 means "never" (the setting is off)."""
    return interval > 0 and step % interval == 0


# ----------------------------------------------------------------------------------------
# Set-up and resume
# ----------------------------------------------------------------------------------------
def setup(cfg: TrainConfig) -> tuple[torch.device, Dist]:
    """Threads, device and processes for this run (its precision: run_precision, once the model is there)."""
    if cfg.steps is None and cfg.minutes is None:
        raise ValueError("give the length of the run: steps or minutes")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = pick_device(cfg.device)
    return device, init_distributed(device)


def training_step(model, objective, batch):
    """What precision "auto" times: forward + backward on the run's first micro-batch, in train
    mode, without an optimizer step (no weight changes); afterwards the gradients and every
    random stream are as they were before the first call (a timed run trains bit for bit as an
    untimed one)."""
    params = list(model.parameters())
    grads, rng, was_training = [p.grad for p in params], rng_state(), model.training

    def run():
        model.train()
        try:
            loss, _ = objective.loss(model, batch)
            loss.backward()
        finally:
            for p, g in zip(params, grads):
                p.grad = g
            set_rng_state(rng)
            model.train(was_training)

    return run


def run_precision(model, objective, cfg: TrainConfig, device, dist: Dist, run_dir: Path, state, log):
    """The run's autocast dtype and why: --precision bf16 / fp32 as given; "auto": what a resumed
    run recorded in its train_config.json (a resume computes as the run it continues), else
    lab.device.choose_precision (bf16 without timing on a CUDA GPU or an AMX CPU, otherwise one
    training_step timed both ways), rank 0's choice for every process."""
    if cfg.precision != "auto":
        return autocast_dtype(cfg.precision, device), f"--precision {cfg.precision}"
    recorded_path = run_dir / TRAIN_CONFIG_NAME
    if state and recorded_path.is_file():
        recorded = json.loads(recorded_path.read_text()).get("autocast")
        if recorded in ("torch.bfloat16", "None"):
            why = f"as recorded when the run started ({recorded_path})"
            log(f"precision: {'bf16' if recorded != 'None' else 'fp32'} {why}")
            return (torch.bfloat16 if recorded != "None" else None), why
    dtype, why = None, ""
    if dist.main:
        batch = objective.train_batch(0).to(device)
        size = sum(p.numel() for p in model.parameters())
        shape = tuple(getattr(batch, "input_ids", torch.empty(0)).shape)
        key = ("train", type(model).__name__, size, shape, str(device))
        choice = choose_precision(training_step(model, objective, batch), device, key)
        dtype, why = choice.dtype, choice.describe()
        log(f"precision: {why}" + (" (one training step, timed)" if choice.fp32_ms is not None else ""))
    if dist.world_size > 1:  # every process computes as rank 0 chose
        flag = torch.tensor([float(dtype is not None)], device=device)
        tdist.broadcast(flag, 0)
        dtype = torch.bfloat16 if flag.item() else None
    return dtype, why


def find_resume_state(run_dir: Path, resume: bool, dist: Dist, log) -> tuple[Path | None, dict | None]:
    """(checkpoint, trainer state) to continue from, or (None, None) for a fresh run; a fresh
    run refuses a directory that already holds one."""
    if not resume:
        if dist.main:
            refuse_existing_run(run_dir)
        return None, None
    last = latest_resumable(run_dir)
    if last is None:
        log(f"--resume: no checkpoint in {run_dir}/checkpoints; starting from scratch")
        return None, None
    return last, torch.load(last / STATE_NAME, map_location="cpu", weights_only=True)


def probe_seconds_per_step(model, objective, cfg: TrainConfig, device, dtype, steps: int = 8) -> float:
    """Time a few optimizer steps on a throwaway copy of the model (for --minutes): the median of
    `steps` steps after two warm-up steps (the first steps pay one-off costs: allocations, kernel
    selection), so that the planned steps fill the budget."""
    probe = copy.deepcopy(model).to(device).train()
    opt = make_optimizer(probe, cfg, device)
    times = []
    for i in range(steps + 2):
        t0 = time.perf_counter()
        for m in range(cfg.grad_accum):
            batch = objective.train_batch(i * cfg.grad_accum + m).to(device)
            with autocast(device, dtype):
                loss, _ = objective.loss(probe, batch)
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    del probe, opt
    return statistics.median(times[2:])


def plan_steps(model, objective, cfg: TrainConfig, device, dtype, dist: Dist, log) -> int:
    """The run's length: cfg.steps, or as many steps as fit into cfg.minutes (rank 0 decides)."""
    if cfg.steps is not None:
        return int(cfg.steps)
    sec = probe_seconds_per_step(model, objective, cfg, device, dtype)
    total = max(1, int(cfg.minutes * 60 / sec))
    if dist.world_size > 1:  # every rank must agree on the length
        t = torch.tensor([total], device=device)
        tdist.broadcast(t, 0)
        total = int(t.item())
    log(f"speed probe: {sec:.3f} s/step -> {total} steps in {cfg.minutes} min")
    return total


def rng_state() -> dict:
    """Every random stream the loop draws from (dropout: torch; Python's for the odd draw), in a
    form torch.load(weights_only=True) reads back: random.getstate()'s tuple as a tensor."""
    version, internal, gauss = random.getstate()
    state = {
        "torch": torch.get_rng_state(),
        "python": {"version": version, "internal": torch.tensor(internal, dtype=torch.int64), "gauss": gauss},
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    py = state["python"]
    random.setstate((py["version"], tuple(int(x) for x in py["internal"].tolist()), py["gauss"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# ----------------------------------------------------------------------------------------
# Logging, evaluation, checkpoints
# ----------------------------------------------------------------------------------------
class Window:
    """What happened since the last log step, kept on the device until it is read: sums of the
    objective's numbers (tensors), the number of optimizer steps and of real tokens."""

    def __init__(self):
        self.sums: dict[str, torch.Tensor] = {}
        self.steps, self.tokens, self.t0 = 0, 0, time.perf_counter()

    def add(self, parts: dict, weight: float = 1.0) -> None:
        for k, v in parts.items():
            v = torch.as_tensor(v).detach().float() * weight
            self.sums[k] = self.sums[k] + v if k in self.sums else v

    def read(self, dist: Dist, device) -> tuple[dict[str, float], int, float]:
        """The one host-device synchronisation: (means per step, tokens, seconds), averaged /
        summed over all processes under torchrun. Starts a new window."""
        names = sorted(self.sums)
        values = torch.stack(
            [self.sums[k].to(device) for k in names] + [torch.tensor(float(self.tokens), device=device)]
        ).double()
        if dist.world_size > 1:  # the mean over all processes, not rank 0's share
            tdist.all_reduce(values)
            values[:-1] /= dist.world_size
        values = values.tolist()
        means = {k: v / max(1, self.steps) for k, v in zip(names, values[:-1])}
        seconds = time.perf_counter() - self.t0
        self.__init__()
        return means, int(values[-1]), seconds


def check_finite(logs: dict[str, float], step: int, run_dir: Path, lr: float) -> None:
    """A NaN or inf loss (or gradient norm) stops the run; the last checkpoint, written before
    it, is still good."""
    bad = {k: v for k, v in logs.items() if not math.isfinite(v)}
    if bad:
        last = latest_resumable(run_dir)
        raise TrainingError(
            f"the loss became {bad} by step {step} (learning rate {lr:.2e}); training stopped "
            f"without saving these weights. The last good checkpoint is {last}. Try a lower "
            f"learning rate or a longer warm-up, and --resume from it or start again."
        )


def evaluate(model, objective, device, dtype, dist: Dist) -> dict[str, float]:
    """Held-out metrics on rank 0 (the others wait), in eval mode, without gradients."""
    result = {}
    if dist.main:
        model.eval()
        with torch.no_grad(), autocast(device, dtype):
            result = objective.evaluate(model)
        model.train()
    if dist.world_size > 1:
        tdist.barrier()
    return result


def save_checkpoint(
    run_dir: Path,
    model,
    tokenizer,
    optimizer,
    scheduler,
    dist: Dist,
    keep: set[int],
    step: int,
    total: int,
    elapsed: float,
    tokens: int,
) -> None:
    """checkpoints/step-N with everything a resume needs (rank 0 writes, the others wait)."""
    if dist.main:
        write_checkpoint(
            run_dir,
            model,
            tokenizer,
            {
                "step": step,
                "total_steps": total,
                "elapsed": elapsed,
                "tokens": tokens,
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "rng": rng_state(),
            },
            keep,
        )
    if dist.world_size > 1:
        tdist.barrier()


def out_of_time(elapsed: float, cfg: TrainConfig, dist: Dist, device) -> bool:
    """Past the --minutes budget (with 2% slack)? Rank 0's clock decides for everyone."""
    mine = cfg.minutes is not None and elapsed > cfg.minutes * 60 * 1.02
    if dist.world_size == 1:
        return mine
    flag = torch.tensor([float(mine)], device=device)
    tdist.broadcast(flag, 0)
    return bool(flag.item())


# ----------------------------------------------------------------------------------------
# The loop
# ----------------------------------------------------------------------------------------
def resume_position(model, optimizer, scheduler, resume_from: Path | None, state: dict | None, log) -> tuple:
    """Weights, optimizer and schedule back where they were; (step, elapsed seconds, tokens seen),
    (0, 0.0, 0) for a fresh run."""
    if not state:
        return 0, 0.0, 0
    load_weights(model, resume_from)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    step, elapsed, tokens_seen = int(state["step"]), float(state["elapsed"]), int(state["tokens"])
    log(f"resumed from {resume_from} at step {step}")
    return step, elapsed, tokens_seen


def wrap_model(model: nn.Module, cfg: TrainConfig, dist: Dist, device) -> nn.Module:
    """The model as it runs: compiled (same parameter names) and wrapped for DDP."""
    if cfg.compile:
        model.compile()
    if dist.world_size > 1:
        return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    return model


def announce_run(
    run_dir: Path, model, cfg: TrainConfig, dist: Dist, device, dtype, why: str, total: int, warm: int, log
):
    """train_config.json for the run (with the precision chosen and why), and one line saying
    what trains where (rank 0)."""
    write_json(
        run_dir / TRAIN_CONFIG_NAME,
        {
            **cfg.to_dict(),
            "total_steps": total,
            "warmup_steps": warm,
            "world_size": dist.world_size,
            "device": str(device),
            "autocast": str(dtype),
            "precision_choice": why,
        },
    )
    log(
        f"training {type(model).__name__} on {device} ({dtype or 'fp32'}), {dist.world_size} "
        f"process(es), {total} steps x {cfg.batch_size * cfg.grad_accum * dist.world_size} sequences"
    )


def progress_bar(cfg: TrainConfig, dist: Dist, total: int, step: int) -> tqdm:
    return tqdm(
        total=total,
        initial=step,
        desc="train",
        unit="step",
        dynamic_ncols=True,
        file=sys.stderr,
        disable=not (cfg.progress and dist.main),
    )


def optimizer_step(
    model, wrapped, objective, optimizer, scheduler, window: Window, cfg: TrainConfig, step: int, device, dtype, dist
) -> float:
    """One optimizer step: grad_accum micro-batches (DDP averages gradients on the last), clip,
    step; returns the learning rate the step used."""
    pin = device.type == "cuda"
    for micro in range(cfg.grad_accum):
        batch = objective.train_batch(step * cfg.grad_accum + micro)
        window.tokens += batch.num_tokens  # counted on the host, before the copy
        batch = (batch.pin_memory() if pin else batch).to(device, non_blocking=True)
        last_micro = micro == cfg.grad_accum - 1
        with contextlib.nullcontext() if last_micro or dist.world_size == 1 else wrapped.no_sync():
            with autocast(device, dtype):
                loss, parts = objective.loss(wrapped, batch)
            (loss / cfg.grad_accum).backward()
        window.add({**parts, "loss": loss.detach()}, 1.0 / cfg.grad_accum)  # the loss it learned from
    if cfg.clip_norm:
        window.add({"grad_norm": nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)})
    lr = scheduler.get_last_lr()[0]
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return lr


def log_train(
    window: Window, metrics: MetricsLog, bar, run_dir: Path, dist: Dist, device, step: int, elapsed, tokens_seen, lr
) -> int:
    """The log step, the only place the host waits for the device: reads the window, stops on a
    NaN, writes a train record and the bar's numbers; returns the tokens seen so far."""
    logs, tokens, seconds = window.read(dist, device)
    check_finite(logs, step, run_dir, lr)
    tokens_seen += tokens
    tps = tokens / max(1e-9, seconds)
    metrics.write(
        {
            "split": "train",
            "step": step,
            "time": round(elapsed, 2),
            "tokens": tokens_seen,
            "lr": lr,
            "tokens_per_s": round(tps, 1),
            **{k: round(v, 5) for k, v in logs.items()},
        }
    )
    bar.set_postfix(
        {k: f"{v:.3f}" for k, v in logs.items() if k in ("loss", "mlm_acc", "nsp_acc", "ltr_acc", "acc")}
        | {"tok/s": f"{tps:,.0f}"}
    )
    return tokens_seen


def train(
    model: nn.Module, objective: Objective, cfg: TrainConfig, tokenizer=None, resume: bool = False, log=print
) -> dict:
    """Train `model` on `objective`; returns the last evaluation's metrics."""
    # ---- set-up: device, processes, precision; the run's length; optimizer and schedule
    run_dir = Path(cfg.out_dir)
    device, dist = setup(cfg)
    resume_from, state = find_resume_state(run_dir, resume, dist, log)
    model.to(device)
    use_fast_dropout(model)  # nn.Dropout -> FastDropout (faster CPU masks; no parameters); it stays after train()
    dtype, why = run_precision(model, objective, cfg, device, dist, run_dir, state, log)
    total = int(state["total_steps"]) if state else plan_steps(model, objective, cfg, device, dtype, dist, log)
    warm, keep = warmup_steps(cfg, total), snapshot_steps(total, cfg.snapshots)
    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)
    optimizer = make_optimizer(model, cfg, device)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, total, warm, cfg.min_lr_ratio))

    # ---- resume: weights, optimizer, schedule, position, clock and RNG exactly where they were
    step, elapsed, tokens_seen = resume_position(model, optimizer, scheduler, resume_from, state, log)
    wrapped = wrap_model(model, cfg, dist, device)
    metrics = MetricsLog(run_dir / METRICS_NAME, dist.main)
    if dist.main:
        metrics.truncate_after(step)
        announce_run(run_dir, model, cfg, dist, device, dtype, why, total, warm, log)
    if state and dist.main:
        set_rng_state(state["rng"])  # dropout exactly where it stopped
    else:
        torch.manual_seed(cfg.seed + 1000 * dist.rank + step)  # its own dropout stream per rank
    if not state:  # step 0: the untrained model
        save_checkpoint(run_dir, model, tokenizer, optimizer, scheduler, dist, keep, 0, total, 0.0, 0)

    bar = progress_bar(cfg, dist, total, step)
    window, last_eval = Window(), {}
    run_t0 = time.perf_counter() - elapsed
    model.train()
    while step < total:
        lr = optimizer_step(model, wrapped, objective, optimizer, scheduler, window, cfg, step, device, dtype, dist)
        step += 1
        window.steps += 1
        bar.update(1)
        elapsed = time.perf_counter() - run_t0

        # ---- the time budget (--minutes) may end the run early
        if cfg.minutes is not None and step < total and out_of_time(elapsed, cfg, dist, device):
            log(f"time budget reached at step {step} of {total}")  # slower than the probe said
            total = step
        do_eval = every(step, cfg.eval_every) or step == total
        do_ckpt = every(step, cfg.ckpt_every) or step == total or step in keep

        # ---- log: the only place the host waits for the device (checkpoints need exact counts)
        if every(step, cfg.log_every) or do_eval or do_ckpt:
            tokens_seen = log_train(window, metrics, bar, run_dir, dist, device, step, elapsed, tokens_seen, lr)
        if do_eval:
            last_eval = evaluate(model, objective, device, dtype, dist)
            record = {"split": "eval", "step": step, "time": round(elapsed, 2), "tokens": tokens_seen}
            metrics.write(record | {k: round(v, 5) for k, v in last_eval.items()})
        if do_ckpt:
            save_checkpoint(
                run_dir, model, tokenizer, optimizer, scheduler, dist, keep, step, total, elapsed, tokens_seen
            )
    bar.close()
    if dist.world_size > 1:
        # DDP's reducer holds the process group: let every rank finish, free the wrapper, then the
        # group (a reducer freed after the group can leave a gloo thread waiting, the run hung)
        tdist.barrier()
        del wrapped
        tdist.destroy_process_group()
    return last_eval
