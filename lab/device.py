"""Where the arithmetic runs: the device, the precision (bf16 autocast) and the processes.

    from lab.device import pick_device, autocast_dtype, autocast, choose_precision, init_distributed
    device = pick_device("auto")                       # cuda:LOCAL_RANK > mps > cpu
    dtype = autocast_dtype("auto", device)             # bf16 where known to be fast (CUDA, AMX), else None
    choice = choose_precision(run, device, key)        # or: time run() both ways, once per key
    with autocast(device, dtype):                      # fp32 weights, bf16 matrix products
        out = model(**batch)
    dist = init_distributed(device)                    # Dist(rank, world_size, local_rank) under torchrun
                                                       # or accelerate launch --multi_gpu (docs/deploy.md)

The training loop, the inspection API (lab.inspect.explore) and the dashboard all take their device and
precision from here, so "bf16 where it is fast" means the same thing everywhere: known without timing
on a CUDA GPU with bf16 and on a CPU with AMX tiles, measured on other CPUs with bf16 instructions
(AVX512-BF16 alone did not make bf16 faster: docs/performance.md, "Precision by measurement").
"""

from __future__ import annotations

import contextlib
import functools
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as tdist

PRECISIONS = ("auto", "bf16", "fp32")


def pick_device(name: str = "auto") -> torch.device:
    """ "auto": the GPU of this process (cuda:LOCAL_RANK), else Apple's mps, else the CPU.
    An explicit device that this machine lacks is refused in one line."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError(f"unknown device {name!r}: use auto, cpu, cuda, cuda:N or mps") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"--device {name}: this machine has no CUDA GPU that PyTorch can use "
            f"(torch {torch.__version__}, CUDA build: {torch.version.cuda is not None}); "
            f"use --device cpu or auto"
        )
    if device.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ValueError(f"--device {name}: Apple's mps backend is not available here; use --device cpu or auto")
    return device


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none: not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    line = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return frozenset(line.partition(":")[2].split())


def cpu_has_amx() -> bool:
    """AMX tiles (Intel Sapphire Rapids and later): bf16 matrix products several times faster
    than fp32, the one CPU kind where the lab turns bf16 on without timing it."""
    return bool({"amx_bf16", "amx_tile"} & cpu_flags())


def cpu_has_bf16_instructions() -> bool:
    """AVX512-BF16 or AMX. Having them does not make bf16 faster: without AMX tiles (AMD Zen 4,
    say) the lab's forward passes were slower in bf16 than in fp32, so there it is measured."""
    return "avx512_bf16" in cpu_flags() or cpu_has_amx()


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype for a precision setting: "fp32" -> None (no autocast); "bf16" -> bf16;
    "auto" -> bf16 where it is known to be fast without timing it (a CUDA GPU with bf16, a CPU
    with AMX tiles), else None: where the answer needs a measurement, choose_precision() makes it."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == "fp32":
        return None
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else None
    if device.type == "cpu" and (precision == "bf16" or cpu_has_amx()):
        return torch.bfloat16
    return None


def autocast(device: torch.device, dtype: torch.dtype | None):
    """torch.autocast for `dtype`, or a no-op context for None (fp32)."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


# ----------------------------------------------------------------------------------------
# Precision by measurement: bf16 only where it is faster on the machine at hand
# ----------------------------------------------------------------------------------------
BF16_MARGIN = 0.05  # bf16 must be at least 5% faster than fp32 to be chosen


@dataclass(frozen=True)
class PrecisionChoice:
    """The autocast dtype chosen (None: fp32), why, and the timings behind it (milliseconds per
    call, medians; None where nothing was timed)."""

    dtype: torch.dtype | None
    reason: str
    fp32_ms: float | None = None
    bf16_ms: float | None = None

    @property
    def name(self) -> str:
        return "bf16" if self.dtype is not None else "fp32"

    def describe(self) -> str:
        """One line: "bf16 (measured: fp32 35.1 ms, bf16 30.2 ms)" or "bf16 (a CPU with AMX tiles)"."""
        if self.fp32_ms is None or self.bf16_ms is None:
            return f"{self.name} ({self.reason})"
        return f"{self.name} ({self.reason}: fp32 {self.fp32_ms:.1f} ms, bf16 {self.bf16_ms:.1f} ms)"


def known_precision(device: torch.device) -> PrecisionChoice | None:
    """The choice that needs no timing, or None where only a measurement can tell."""
    if device.type == "cuda":
        if torch.cuda.is_bf16_supported():
            return PrecisionChoice(torch.bfloat16, "a CUDA GPU with bf16 support")
        return PrecisionChoice(None, "this CUDA GPU has no bf16 support")
    if device.type != "cpu":
        return PrecisionChoice(None, f"no autocast on {device.type}")
    if cpu_has_amx():
        return PrecisionChoice(torch.bfloat16, "a CPU with AMX tiles")
    if not cpu_has_bf16_instructions():
        return PrecisionChoice(None, "this CPU has no bf16 instructions: no AVX512-BF16, no AMX")
    return None


def time_both_ways(run, device: torch.device, budget_s: float = 1.0, clock=time.perf_counter, max_pairs: int = 25):
    """Milliseconds per call of run() without autocast and under bf16 autocast: one warm-up
    each, then pairs of calls in alternating order until budget_s (warm-ups included) is spent
    (at least one pair, at most max_pairs); the medians, (fp32_ms, bf16_ms)."""

    def once(dtype) -> float:
        t0 = clock()
        with autocast(device, dtype):
            run()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return clock() - t0

    start = clock()
    once(None)  # warm-ups: the first calls pay one-off costs (allocations, kernel choices)
    once(torch.bfloat16)
    times: dict = {None: [], torch.bfloat16: []}
    while True:
        order = (None, torch.bfloat16) if len(times[None]) % 2 == 0 else (torch.bfloat16, None)
        for dtype in order:
            times[dtype].append(once(dtype))
        pair = times[None][-1] + times[torch.bfloat16][-1]
        if len(times[None]) >= max_pairs or clock() - start + pair > budget_s:
            break
    return 1000 * statistics.median(times[None]), 1000 * statistics.median(times[torch.bfloat16])


_CHOICES: dict = {}  # key -> PrecisionChoice, for the process


def choose_precision(
    run, device: torch.device, key, budget_s: float = 1.0, margin: float = BF16_MARGIN, clock=time.perf_counter
) -> PrecisionChoice:
    """bf16 autocast or fp32 for the work run() stands for, on this machine: without timing where
    the hardware says (known_precision), else by timing run() both ways (time_both_ways) and
    taking bf16 only where it is at least `margin` faster. run=None (nothing to time): fp32.
    Cached per `key` for the process (None: not cached); run() must leave no trace (no_grad, or
    gradients and weights put back)."""
    if key is not None and key in _CHOICES:
        return _CHOICES[key]
    choice = known_precision(device)
    if choice is None and run is None:
        choice = PrecisionChoice(None, "nothing was timed")
    elif choice is None:
        fp32_ms, bf16_ms = time_both_ways(run, device, budget_s, clock)
        faster = bf16_ms <= fp32_ms * (1 - margin)
        reason = "measured, bf16 faster" if faster else "measured, bf16 not faster"
        choice = PrecisionChoice(torch.bfloat16 if faster else None, reason, fp32_ms, bf16_ms)
    if key is not None:
        _CHOICES[key] = choice
    return choice


def forget_precision_choices() -> None:
    """Empty choose_precision's cache (tests; a benchmark that wants to measure again)."""
    _CHOICES.clear()


@dataclass
class Dist:
    """This process's place among the processes torchrun started (one process: rank 0 of 1)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        """Rank 0 writes files and logs; the others compute."""
        return self.rank == 0


MPI_SIZES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE")  # what mpirun/mpiexec give each process


def lone_process_problem(env=os.environ) -> str | None:
    """Why this process, started without torchrun's WORLD_SIZE, is probably one of several that
    would each train alone into the same --out (None when nothing says so):
    - mpirun/mpiexec started it (accelerate launch --cpu --mpirun_hostfile ...): MPI's sizes;
    - accelerate launch --cpu --num_processes N>1 without an MPI host file starts ONE process and
      sets MASTER_ADDR for it (accelerate 1.x's CPU launcher: ACCELERATE_USE_CPU=True)."""
    launch = (
        "use torchrun --nproc_per_node=N, or accelerate launch --multi_gpu --num_processes N "
        "(torchrun's launcher inside accelerate; it runs gloo CPU processes where there is no GPU)"
    )
    for name in MPI_SIZES:
        if env.get(name, "1").strip() not in ("", "0", "1"):
            return f"started by mpirun ({name}={env[name]}), but the lab joins torchrun's process group only: {launch}"
    if env.get("ACCELERATE_USE_CPU", "").lower() in ("true", "1") and env.get("MASTER_ADDR"):
        return f"accelerate launch --cpu with several processes starts one process here (no MPI host file): {launch}"
    return None


def init_distributed(device: torch.device) -> Dist:
    """Join the process group torchrun set up (env RANK/WORLD_SIZE), also when `accelerate launch
    --multi_gpu` started it (accelerate runs torchrun's launcher and passes the same variables):
    NCCL between GPUs, gloo between CPU processes. A no-op in a single process; a launch that
    would run several processes each on its own is refused in one line (lone_process_problem)."""
    world = int(os.environ.get("WORLD_SIZE", 1))
    if world <= 1:
        problem = None if "WORLD_SIZE" in os.environ else lone_process_problem()
        if problem:
            raise ValueError(problem)
        return Dist()
    if not tdist.is_initialized():
        tdist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return Dist(tdist.get_rank(), tdist.get_world_size(), int(os.environ.get("LOCAL_RANK", 0)))
