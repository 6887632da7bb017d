"""A run directory, read: its phases, its metrics and its checkpoints, as every reader sees them
(the dashboard, explore, the figures); lab.training.runs writes the same layout (its file names:
lab.files).

A recipe's phases are one run to every reader: `read_metrics` and `checkpoints` put the earlier
phases first and shift the later ones by the steps, time and tokens before them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lab.files import CHECKPOINT_GLOB, CHECKPOINTS_DIR, METRICS_NAME, PHASE_GLOB, checkpoint_step, has_model_files

SHIFTED = ("time", "step", "tokens")  # what a later phase continues counting from


def is_model_dir(path) -> bool:
    """config.json and weights: something lab.load can read."""
    return has_model_files(path)


def phases(run_dir) -> list[Path]:
    """The parts of a run in order: earlier recipe phases (run/phase<i>-<name>), then the run."""
    run_dir = Path(run_dir)
    return sorted(p for p in run_dir.glob(PHASE_GLOB) if p.is_dir()) + [run_dir]


def has_metrics(path) -> bool:
    return any((p / METRICS_NAME).is_file() for p in phases(path))


def checkpoint_dirs(run_dir) -> list[Path]:
    """checkpoints/step-N directories that are complete (not a .tmp being written), in order."""
    d = Path(run_dir) / CHECKPOINTS_DIR
    if not d.is_dir():
        return []
    return sorted(p for p in d.glob(CHECKPOINT_GLOB) if p.is_dir() and not p.name.endswith(".tmp"))


def read_records(file: Path) -> list[dict]:
    """The JSON records of a metrics.jsonl file, one per line."""
    return [json.loads(l) for l in file.read_text().splitlines() if l.strip()]


def merge_histories(parts: list[Path], names: list[str] | None = None) -> list[dict]:
    """The records of several runs (or phases) as one history: each part's time, step and tokens
    continue from the largest values before it. Example: phase 1 logs steps 10..200, the last
    phase steps 10..100 -> the merged steps are 10..200, 210..300. Each record gets "phase"."""
    names = names or [Path(p).name for p in parts]
    records, offset = [], dict.fromkeys(SHIFTED, 0)
    for part, name in zip(parts, names):
        file = Path(part) / METRICS_NAME if Path(part).is_dir() else Path(part)
        if not file.is_file():
            continue
        mine = read_records(file)
        records += [{**r, **{k: r[k] + offset[k] for k in SHIFTED if k in r}, "phase": name} for r in mine]
        if mine:
            offset = {k: max(r.get(k, 0) for r in records) for k in SHIFTED}
    return records


def read_metrics(path) -> list[dict]:
    """Records of a run's metrics.jsonl (a run directory, with its recipe phases, or the file)."""
    path = Path(path)
    if path.is_file():
        return read_records(path)
    parts = phases(path)
    if not any((p / METRICS_NAME).is_file() for p in parts):
        raise FileNotFoundError(f"no {METRICS_NAME} in {path}")
    return merge_histories(parts, [p.name for p in parts[:-1]] + ["final"])


def checkpoints(parts) -> list[tuple[int, Path]]:
    """(global step, directory) of every checkpoint of a run (its phases) or of a list of runs
    that continue each other, in step order.

    A later part's steps continue after the earlier ones (as read_metrics merges their curves).
    Example: phase 1 with checkpoints 0, 50, 200 and a last phase with 0, 100 -> steps 0, 50,
    200, 300 (the last phase's step 0 is phase 1's step 200: the same weights, listed once).
    """
    parts = phases(parts) if isinstance(parts, (str, os.PathLike)) else [Path(p) for p in parts]
    found: dict[int, Path] = {}
    offset = 0
    for part in parts:
        dirs = checkpoint_dirs(part)
        steps = [checkpoint_step(d) for d in dirs]
        for step, d in zip(steps, dirs):
            found.setdefault(offset + step, d)  # an earlier part wins a tie
        # the next part starts where this one ended: its last logged step, which may lie after
        # its last checkpoint
        logged = read_records(part / METRICS_NAME) if (part / METRICS_NAME).is_file() else []
        offset += max([*steps, *(r.get("step", 0) for r in logged)], default=0)
    return sorted(found.items())
