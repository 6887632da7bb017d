"""Where the arithmetic runs: the device, the precision (bf16 autocast) and the processes.

    from lab.device import pick_device, autocast_dtype, autocast, init_distributed
    device = pick_device("auto")                       # cuda:LOCAL_RANK > mps > cpu
    dtype = autocast_dtype("auto", device)             # torch.bfloat16 where bf16 is fast, else None
    with autocast(device, dtype):                      # fp32 weights, bf16 matrix products
        out = model(**batch)
    dist = init_distributed(device)                    # Dist(rank, world_size, local_rank) under torchrun
                                                       # or accelerate launch --multi_gpu (docs/deploy.md)

The training loop, the inspection API (lab.inspect.explore) and the dashboard all take their device and
precision from here, so "bf16 where it is fast" means the same thing everywhere.
"""

from __future__ import annotations

import contextlib
import os
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


def cpu_has_fast_bf16() -> bool:
    """bf16 matmuls are fast on CPUs with AVX512-BF16 or AMX (this project's machines have them)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype for a precision setting: "fp32" -> None (no autocast); "bf16" -> bf16;
    "auto" -> bf16 on GPUs that support it and on CPUs where it is fast, else None."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == "fp32":
        return None
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else None
    if device.type == "cpu" and (precision == "bf16" or cpu_has_fast_bf16()):
        return torch.bfloat16
    return None


def autocast(device: torch.device, dtype: torch.dtype | None):
    """torch.autocast for `dtype`, or a no-op context for None (fp32)."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


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
