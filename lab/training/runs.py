"""The run directory: what a training run writes, and how everything else reads it back.

    runs/NAME/config.json, model.safetensors, vocab.txt   the latest model (lab.load("runs/NAME"))
    runs/NAME/train_config.json                           the loop's settings (+ total steps)
    runs/NAME/pretrain_config.json | task_config.json     the objective's settings
    runs/NAME/metrics.jsonl                               one JSON record per log / evaluation
    runs/NAME/checkpoints/step-0000500/                   the resume point (+ trainer_state.pt)
    runs/NAME/checkpoints/step-0000000/ ...               snapshots kept for "watch BERT learn"
    runs/NAME/phase1-len32/ ...                           earlier phases of a recipe, each a run

A recipe's phases are one run to every reader: `read_metrics` and `checkpoints` put the earlier
phases first and shift the later ones by the steps, time and tokens before them. Writers and
readers all go through this module, so the layout is defined once (its file names: lab.files).
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path

import torch

from lab.checkpoint import save as save_model
from lab.files import (
    CHECKPOINT_GLOB,
    CHECKPOINTS_DIR,
    METRICS_NAME,
    PHASE_GLOB,
    STATE_NAME,
    TRAIN_CONFIG_NAME,
    checkpoint_name,
    checkpoint_step,
    has_model_files,
    phase_name,
)

SHIFTED = ("time", "step", "tokens")  # what a later phase continues counting from


# ----------------------------------------------------------------------------------------
# What is where
# ----------------------------------------------------------------------------------------
def is_model_dir(path) -> bool:
    """config.json and weights: something lab.load can read."""
    return has_model_files(path)


def phases(run_dir) -> list[Path]:
    """The parts of a run in order: earlier recipe phases (run/phase<i>-<name>), then the run."""
    run_dir = Path(run_dir)
    return sorted(p for p in run_dir.glob(PHASE_GLOB) if p.is_dir()) + [run_dir]


def phase_dirs(out, names: list[str]) -> list[Path]:
    """Where a recipe with these phase names writes: out/phase<i>-<name> for all but the last
    phase, which is the run directory itself (so lab.load(out) gives the final model)."""
    out = Path(out)
    return [out / phase_name(i + 1, name) for i, name in enumerate(names[:-1])] + [out]


def has_metrics(path) -> bool:
    return any((p / METRICS_NAME).is_file() for p in phases(path))


def checkpoint_dirs(run_dir) -> list[Path]:
    """checkpoints/step-N directories that are complete (not a .tmp being written), in order."""
    d = Path(run_dir) / CHECKPOINTS_DIR
    if not d.is_dir():
        return []
    return sorted(p for p in d.glob(CHECKPOINT_GLOB) if p.is_dir() and not p.name.endswith(".tmp"))


def latest_resumable(run_dir) -> Path | None:
    """The newest checkpoint that holds a trainer state (a resume point), or None."""
    done = [p for p in checkpoint_dirs(run_dir) if (p / STATE_NAME).is_file()]
    return done[-1] if done else None


def is_complete(run_dir) -> bool:
    """True when the run reached its planned number of steps."""
    run_dir = Path(run_dir)
    last, cfg = latest_resumable(run_dir), run_dir / TRAIN_CONFIG_NAME
    return last is not None and cfg.is_file() and checkpoint_step(last) >= json.loads(cfg.read_text())["total_steps"]


def refuse_existing_run(run_dir) -> None:
    """A fresh run must not write into a directory that already holds one: call this before
    anything of the new run is written."""
    if latest_resumable(run_dir) is not None:
        raise FileExistsError(f"{run_dir} already holds a run; pass --resume to continue it or choose another --out")


def new_run_dir(root, name: str) -> Path:
    """A fresh run directory root/name-YYYYmmdd-HHMMSS (a suffix if that exists already):
    the training loop refuses to write over an existing run, so each notebook run gets its own."""
    root = Path(root)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path, k = root / f"{name}-{stamp}", 1
    while path.exists():
        k += 1
        path = root / f"{name}-{stamp}-{k}"
    root.mkdir(parents=True, exist_ok=True)
    return path


def write_json(path, values: dict) -> None:
    """A settings file (train_config.json, task_config.json, ...), written whole or not at all
    (through a temporary file of this process's own: the processes of a distributed run may write
    the same file at once, each whole)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(values, indent=2) + "\n")
    os.replace(tmp, path)


# ----------------------------------------------------------------------------------------
# metrics.jsonl
# ----------------------------------------------------------------------------------------
class MetricsLog:
    """metrics.jsonl: one JSON object per line, appended by rank 0 only."""

    def __init__(self, path: Path, enabled: bool = True):
        self.path, self.enabled = Path(path), enabled

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


def _records(file: Path) -> list[dict]:
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
        mine = _records(file)
        records += [{**r, **{k: r[k] + offset[k] for k in SHIFTED if k in r}, "phase": name} for r in mine]
        if mine:
            offset = {k: max(r.get(k, 0) for r in records) for k in SHIFTED}
    return records


def read_metrics(path) -> list[dict]:
    """Records of a run's metrics.jsonl (a run directory, with its recipe phases, or the file)."""
    path = Path(path)
    if path.is_file():
        return _records(path)
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
        logged = _records(part / METRICS_NAME) if (part / METRICS_NAME).is_file() else []
        offset += max([*steps, *(r.get("step", 0) for r in logged)], default=0)
    return sorted(found.items())


# ----------------------------------------------------------------------------------------
# Checkpoints
# ----------------------------------------------------------------------------------------
def snapshot_steps(total: int, count: int) -> set[int]:
    """Steps whose model is kept for "watch BERT learn": the start, then denser early on,
    where predictions change fastest. count=5, total=1000 -> {0, 50, 200, 500, 1000}."""
    fractions = [0.0, 0.05, 0.2, 0.5, 1.0] if count == 5 else [(i / max(1, count - 1)) ** 2 for i in range(count)]
    return {round(f * total) for f in fractions[:count]} if count > 0 else set()


def write_checkpoint(run_dir, model, tokenizer, state: dict, keep_steps: set[int]) -> Path:
    """Write checkpoints/step-N atomically (a .tmp directory renamed into place), copy the model
    files to the run root, and prune checkpoints that are neither snapshots nor the newest."""
    run_dir = Path(run_dir)
    step = state["step"]
    final = run_dir / CHECKPOINTS_DIR / checkpoint_name(step)
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    save_model(model, tokenizer, tmp)
    torch.save(state, tmp / STATE_NAME)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)  # the checkpoint appears whole
    for f in final.iterdir():  # the run root mirrors the newest model
        if f.name != STATE_NAME:
            part = run_dir / f".{f.name}.part"
            shutil.copyfile(f, part)
            os.replace(part, run_dir / f.name)
    for old in checkpoint_dirs(run_dir):
        if old == final:
            continue
        if checkpoint_step(old) in keep_steps:
            (old / STATE_NAME).unlink(missing_ok=True)  # a snapshot: model only
        else:
            shutil.rmtree(old, ignore_errors=True)
    return final
