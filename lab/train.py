"""The one training loop. Pre-training and every fine-tuning task plug an *objective* into it.

    from lab.train import TrainConfig, train
    train(model, objective, TrainConfig(out_dir="runs/x", steps=1000), tokenizer)

An objective supplies the data and the loss (see `Objective` below); this module supplies the
rest: AdamW without weight decay on biases and LayerNorm, linear warm-up then linear decay,
gradient accumulation and clipping, bf16 autocast with fp32 master weights, held-out evaluation
every N steps appended to `metrics.jsonl`, a tqdm bar, atomic checkpoints that resume exactly
(model + optimizer + scheduler + RNG + data position), a clean stop on a NaN loss, a handful of
snapshots spread over the run, and DistributedDataParallel under torchrun (gloo on CPU, nccl
on GPU; rank 0 writes). A run directory looks like:

    runs/NAME/config.json, model.safetensors, vocab.txt   the latest model (lab.load(runs/NAME))
    runs/NAME/train_config.json, metrics.jsonl
    runs/NAME/checkpoints/step-0000500/                   the resume point (+ trainer_state.pt)
    runs/NAME/checkpoints/step-0000000/ ...               snapshots for "watch BERT learn"
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
from torch import nn

from .checkpoint import save as save_model


@dataclass
class TrainConfig:
    out_dir: str = "runs/run"              # run directory (checkpoints, metrics.jsonl)
    steps: int | None = None               # optimizer steps; None -> derived from `minutes`
    minutes: float | None = None           # wall-clock budget; sets `steps` from a speed probe
    batch_size: int = 32                   # sequences per micro-batch (per process)
    grad_accum: int = 1                    # micro-batches per optimizer step
    lr: float = 1e-4                       # peak learning rate
    weight_decay: float = 0.01             # AdamW decay (not on biases / LayerNorm)
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-6                 # BERT's epsilon
    warmup: float = 0.1                    # warm-up: a fraction of the steps (<1) or a step count
    min_lr_ratio: float = 0.0              # linear decay ends at lr * min_lr_ratio
    clip_norm: float = 1.0                 # gradient clipping (global L2 norm); 0 = off
    precision: str = "auto"                # auto | bf16 | fp32  (auto: bf16 where it is fast)
    device: str = "auto"                   # auto | cpu | cuda | mps
    seed: int = 0                          # one seed for init, data order, masks, dropout
    eval_every: int = 200                  # steps between held-out evaluations; 0 = only at the end
    ckpt_every: int = 500                  # steps between resume checkpoints
    snapshots: int = 5                     # model snapshots kept, spread over the run
    log_every: int = 10                    # steps between training records in metrics.jsonl
    threads: int | None = None             # torch CPU threads (None: torch's default)
    compile: bool = False                  # torch.compile the model (fuses small CPU ops; ~10-40 s warm-up)
    progress: bool = True                  # tqdm bar

    def to_dict(self):
        return dataclasses.asdict(self)


class Objective(Protocol):
    """What a task provides to the loop."""

    def train_batch(self, index: int):
        """The micro-batch number `index` (a pure function of the index: resumable)."""

    def loss(self, model: nn.Module, batch) -> tuple[torch.Tensor, dict[str, float]]:
        """Loss to minimise and a few numbers to log (floats)."""

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Held-out metrics, model in eval mode, no gradients."""


class TrainingError(RuntimeError):
    """A run that cannot go on (a NaN loss, say); the message says what to do."""


# ----------------------------------------------------------------------------------------
# Devices, precision, distribution
# ----------------------------------------------------------------------------------------
def pick_device(name: str = "auto") -> torch.device:
    if name != "auto":
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def cpu_has_fast_bf16() -> bool:
    """bf16 matmuls are fast on CPUs with AVX512-BF16 or AMX (this project's machines have them)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    if precision == "fp32":
        return None
    if precision not in ("auto", "bf16"):
        raise ValueError(f"precision must be auto, bf16 or fp32, not {precision!r}")
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else None
    if device.type == "cpu" and (precision == "bf16" or cpu_has_fast_bf16()):
        return torch.bfloat16
    return None


def autocast(device: torch.device, dtype: torch.dtype | None):
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


@dataclass
class Dist:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0


def init_distributed(device: torch.device) -> Dist:
    """Join the process group torchrun set up (env RANK/WORLD_SIZE); a no-op otherwise."""
    import torch.distributed as tdist
    world = int(os.environ.get("WORLD_SIZE", 1))
    if world <= 1:
        return Dist()
    if not tdist.is_initialized():
        tdist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return Dist(tdist.get_rank(), tdist.get_world_size(), int(os.environ.get("LOCAL_RANK", 0)))


# ----------------------------------------------------------------------------------------
# Optimiser and schedule
# ----------------------------------------------------------------------------------------
def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW; biases and LayerNorm weights are not decayed (as in BERT)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "LayerNorm" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
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


# ----------------------------------------------------------------------------------------
# Checkpoints
# ----------------------------------------------------------------------------------------
STATE_NAME = "trainer_state.pt"


def snapshot_steps(total: int, count: int) -> set[int]:
    """Steps whose model is kept for "watch BERT learn": the start, then denser early on,
    where predictions change fastest. count=5, total=1000 -> {0, 50, 200, 500, 1000}."""
    fractions = [0.0, 0.05, 0.2, 0.5, 1.0] if count == 5 else \
        [(i / max(1, count - 1)) ** 2 for i in range(count)]
    return {round(f * total) for f in fractions[:count]} if count > 0 else set()


def checkpoint_dirs(run_dir: Path) -> list[Path]:
    d = run_dir / "checkpoints"
    return sorted(p for p in d.glob("step-*") if p.is_dir() and not p.name.endswith(".tmp")) if d.is_dir() else []


def latest_resumable(run_dir: Path) -> Path | None:
    done = [p for p in checkpoint_dirs(run_dir) if (p / STATE_NAME).is_file()]
    return done[-1] if done else None


def refuse_existing_run(run_dir) -> None:
    """A fresh run must not write into a directory that already holds one."""
    if latest_resumable(Path(run_dir)) is not None:
        raise FileExistsError(f"{run_dir} already holds a run; pass --resume to continue it or "
                              f"choose another --out")


def write_checkpoint(run_dir: Path, model, tokenizer, state: dict, keep_steps: set[int]) -> Path:
    """Write checkpoints/step-N atomically (a .tmp directory renamed into place), copy the model
    files to the run root, and prune checkpoints that are neither snapshots nor the newest."""
    step = state["step"]
    final = run_dir / "checkpoints" / f"step-{step:07d}"
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    save_model(model, tokenizer, tmp)
    torch.save(state, tmp / STATE_NAME)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)                                   # the checkpoint appears whole
    for f in final.iterdir():                                # the run root mirrors the newest model
        if f.name != STATE_NAME:
            part = run_dir / f".{f.name}.part"
            shutil.copyfile(f, part)
            os.replace(part, run_dir / f.name)
    for old in checkpoint_dirs(run_dir):
        if old == final:
            continue
        old_step = int(old.name.split("-")[1])
        if old_step in keep_steps:
            (old / STATE_NAME).unlink(missing_ok=True)       # a snapshot: model only
        else:
            shutil.rmtree(old, ignore_errors=True)
    return final


def rng_state() -> dict:
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _python_rng_to_tensors(state):
    """random.getstate() is (version, tuple of ints, gauss); store it as tensors+ints so that
    torch.load(weights_only=True) can read it back."""
    version, internal, gauss = state
    return {"version": version, "internal": torch.tensor(internal, dtype=torch.int64), "gauss": gauss}


def _python_rng_from_tensors(d):
    return (d["version"], tuple(int(x) for x in d["internal"].tolist()), d["gauss"])


# ----------------------------------------------------------------------------------------
# The loop
# ----------------------------------------------------------------------------------------
class MetricsLog:
    """metrics.jsonl: one JSON object per line; rank 0 only."""

    def __init__(self, path: Path, enabled: bool):
        self.path, self.enabled = path, enabled

    def truncate_after(self, step: int) -> None:
        """On resume, drop records a killed run wrote past its last checkpoint."""
        if not self.enabled or not self.path.is_file():
            return
        keep = [l for l in self.path.read_text().splitlines() if l.strip() and json.loads(l)["step"] <= step]
        self.path.write_text("".join(l + "\n" for l in keep))

    def write(self, record: dict) -> None:
        if self.enabled:
            with self.path.open("a") as fh:
                fh.write(json.dumps(record) + "\n")


def probe_seconds_per_step(model, objective, cfg: TrainConfig, device, dtype, steps: int = 4) -> float:
    """Time a few optimizer steps on a throwaway copy of the model (for --minutes)."""
    probe = copy.deepcopy(model).train()
    opt = make_optimizer(probe, cfg)
    times = []
    for i in range(steps + 1):
        t0 = time.perf_counter()
        for m in range(cfg.grad_accum):
            batch = objective.train_batch(i * cfg.grad_accum + m).to(device)
            with autocast(device, dtype):
                loss, _ = objective.loss(probe, batch)
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
    del probe, opt
    return sum(times[1:]) / steps                    # the first step pays one-off costs


def train(model: nn.Module, objective: Objective, cfg: TrainConfig, tokenizer=None,
          resume: bool = False, log=print) -> dict:
    """Train `model` on `objective`; returns the last evaluation's metrics."""
    if cfg.steps is None and cfg.minutes is None:
        raise ValueError("give the length of the run: steps or minutes")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    run_dir = Path(cfg.out_dir)
    device = pick_device(cfg.device)
    dist = init_distributed(device)
    dtype = autocast_dtype(cfg.precision, device)
    model.to(device)

    resume_from = latest_resumable(run_dir) if resume else None
    if resume and resume_from is None:
        log(f"--resume: no checkpoint in {run_dir}/checkpoints; starting from scratch")
    if not resume and dist.main:
        refuse_existing_run(run_dir)

    # ---- how long: a fixed number of steps, or as many as fit into the time budget
    state = None
    if resume_from is not None:
        state = torch.load(resume_from / STATE_NAME, map_location="cpu", weights_only=True)
        total = int(state["total_steps"])
    elif cfg.steps is not None:
        total = int(cfg.steps)
    else:
        sec = probe_seconds_per_step(model, objective, cfg, device, dtype)
        total = max(1, int(cfg.minutes * 60 / sec))
        if dist.world_size > 1:                       # every rank must agree on the length
            t = torch.tensor([total], device=device)
            torch.distributed.broadcast(t, 0)
            total = int(t.item())
        log(f"speed probe: {sec:.3f} s/step -> {total} steps in {cfg.minutes} min")
    warm = warmup_steps(cfg, total)
    keep = snapshot_steps(total, cfg.snapshots)

    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)
    optimizer = make_optimizer(model, cfg)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, total, warm, cfg.min_lr_ratio))
    step, elapsed, tokens_seen = 0, 0.0, 0
    if state is not None:
        from .checkpoint import load_weights
        load_weights(model, resume_from)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        rng = state["rng"]
        rng["python"] = _python_rng_from_tensors(rng["python"])
        step, elapsed, tokens_seen = int(state["step"]), float(state["elapsed"]), int(state["tokens"])
        log(f"resumed from {resume_from} at step {step}")

    if cfg.compile:
        model.compile()                        # in place: parameter names stay the same
    wrapped = model
    if dist.world_size > 1:
        from torch.nn.parallel import DistributedDataParallel
        wrapped = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)

    metrics = MetricsLog(run_dir / "metrics.jsonl", dist.main)
    if dist.main:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "train_config.json").write_text(json.dumps(
            {**cfg.to_dict(), "total_steps": total, "warmup_steps": warm, "world_size": dist.world_size,
             "device": str(device), "autocast": str(dtype)}, indent=2) + "\n")
        metrics.truncate_after(step)
        log(f"training {type(model).__name__} on {device} ({dtype or 'fp32'}), {dist.world_size} "
            f"process(es), {total} steps x {cfg.batch_size * cfg.grad_accum * dist.world_size} sequences")

    def checkpoint():
        if dist.main:
            rng = rng_state()
            rng["python"] = _python_rng_to_tensors(rng["python"])
            write_checkpoint(run_dir, model, tokenizer, {
                "step": step, "total_steps": total, "elapsed": elapsed, "tokens": tokens_seen,
                "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "rng": rng}, keep)
        if dist.world_size > 1:
            torch.distributed.barrier()

    def evaluate():
        result = {}
        if dist.main:
            model.eval()
            with torch.no_grad(), autocast(device, dtype):
                result = objective.evaluate(model)
            model.train()
            metrics.write({"split": "eval", "step": step, "time": round(elapsed, 2), "tokens": tokens_seen,
                           **{k: round(v, 5) for k, v in result.items()}})
        if dist.world_size > 1:
            torch.distributed.barrier()
        return result

    def out_of_time(mine: bool) -> bool:
        """Rank 0's clock decides for everyone."""
        if dist.world_size == 1:
            return mine
        flag = torch.tensor([float(mine)], device=device)
        torch.distributed.broadcast(flag, 0)
        return bool(flag.item())

    if state is not None and dist.main:
        set_rng_state(rng)                                   # dropout exactly where it stopped
    else:
        torch.manual_seed(cfg.seed + 1000 * dist.rank + step)   # its own dropout stream per rank
    if step == 0 and state is None:
        checkpoint()                                      # step 0: the untrained model, a snapshot
    bar = None
    if cfg.progress and dist.main:
        from tqdm.auto import tqdm
        bar = tqdm(total=total, initial=step, desc="train", unit="step", dynamic_ncols=True,
                   file=sys.stderr)
    model.train()
    last_eval: dict = {}
    window_tokens, window_t0 = 0, time.perf_counter()
    run_t0 = time.perf_counter() - elapsed
    while step < total:
        logs: dict[str, float] = {}
        for m in range(cfg.grad_accum):
            batch = objective.train_batch(step * cfg.grad_accum + m).to(device)
            sync = m == cfg.grad_accum - 1 or dist.world_size == 1
            ctx = contextlib.nullcontext() if sync else wrapped.no_sync()
            with ctx:
                with autocast(device, dtype):
                    loss, parts = objective.loss(wrapped, batch)
                if not torch.isfinite(loss):
                    last = latest_resumable(run_dir)
                    raise TrainingError(
                        f"the loss became {loss.item()} at step {step + 1} (learning rate "
                        f"{scheduler.get_last_lr()[0]:.2e}); training stopped without saving. The last "
                        f"good checkpoint is {last}. Try a lower learning rate or longer warm-up.")
                (loss / cfg.grad_accum).backward()
            for k, v in parts.items():
                logs[k] = logs.get(k, 0.0) + v / cfg.grad_accum
            n = int(batch.attention_mask.sum()) if hasattr(batch, "attention_mask") else len(batch)
            window_tokens += n                       # this process's; summed over ranks at log time
        if cfg.clip_norm:
            logs["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm))
        lr = scheduler.get_last_lr()[0]
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        elapsed = time.perf_counter() - run_t0
        if cfg.minutes is not None and step < total and out_of_time(elapsed > cfg.minutes * 60 * 1.02):
            log(f"time budget reached at step {step} of {total}")   # slower than the probe said
            total = step
        do_eval = (cfg.eval_every and step % cfg.eval_every == 0) or step == total
        do_ckpt = step % cfg.ckpt_every == 0 or step == total or step in keep

        if step % cfg.log_every == 0 or do_eval or do_ckpt:     # checkpoints hold exact token counts
            if dist.world_size > 1:    # report the mean over all processes, not rank 0's share
                names = sorted(logs)
                t = torch.tensor([logs[k] for k in names] + [window_tokens], dtype=torch.float64, device=device)
                torch.distributed.all_reduce(t)
                window_tokens = int(t[-1].item())
                logs = dict(zip(names, (t[:-1] / dist.world_size).tolist()))
            now = time.perf_counter()
            tps = window_tokens / max(1e-9, now - window_t0)
            tokens_seen += window_tokens
            window_tokens, window_t0 = 0, now
            metrics.write({"split": "train", "step": step, "time": round(elapsed, 2), "tokens": tokens_seen,
                           "lr": lr, "tokens_per_s": round(tps, 1), **{k: round(v, 5) for k, v in logs.items()}})
            if bar is not None:
                bar.set_postfix({k: f"{v:.3f}" for k, v in logs.items() if k in ("loss", "mlm_acc", "nsp_acc", "acc")}
                                | {"tok/s": f"{tps:,.0f}"})
        if bar is not None:
            bar.update(1)
        if do_eval:
            last_eval = evaluate()
        if do_ckpt:
            checkpoint()
    if bar is not None:
        bar.close()
    if dist.world_size > 1:
        torch.distributed.destroy_process_group()
    return last_eval


def read_metrics(path) -> list[dict]:
    """Records of a run's metrics.jsonl (a run directory or the file).

    A recipe run with earlier phases (run/phase1-*/) is read as one run: the earlier phases'
    records come first and the later ones are shifted by the time, steps and tokens before them.
    """
    path = Path(path)
    if path.is_file():
        return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    records, offset = [], {"time": 0.0, "step": 0, "tokens": 0}
    for phase in sorted(path.glob("phase*-*")) + [path]:
        if not (phase / "metrics.jsonl").is_file():
            continue
        part = read_metrics(phase / "metrics.jsonl")
        for r in part:
            records.append({**r, **{k: r[k] + offset[k] for k in offset if k in r},
                            "phase": phase.name if phase != path else "final"})
        if part:
            offset = {k: max(r.get(k, 0) for r in records) for k in offset}
    if not records and not (path / "metrics.jsonl").is_file():
        raise FileNotFoundError(f"no metrics.jsonl in {path}")
    return records
