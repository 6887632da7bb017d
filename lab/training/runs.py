"""The run directory: what a training run writes (lab.run_files reads it back).

    runs/NAME/config.json, model.safetensors, vocab.txt   the latest model (lab.load("runs/NAME"))
    runs/NAME/train_config.json                           the loop's settings (+ total steps)
    runs/NAME/pretrain_config.json | task_config.json     the objective's settings
    runs/NAME/metrics.jsonl                               one JSON record per log / evaluation
    runs/NAME/checkpoints/step-0000500/                   the resume point (+ trainer_state.pt)
    runs/NAME/checkpoints/step-0000000/ ...               snapshots kept for "watch BERT learn"
    runs/NAME/phase1-len32/ ...                           earlier phases of a recipe, each a run

Its readers (a run's phases, metrics and checkpoints; a recipe's phases as one run) are in
lab.run_files, which the dashboard imports without the training code; the file names: lab.files.
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
    CHECKPOINTS_DIR,
    STATE_NAME,
    TRAIN_CONFIG_NAME,
    checkpoint_name,
    checkpoint_step,
    phase_name,
)
from lab.run_files import checkpoint_dirs


# ----------------------------------------------------------------------------------------
# What is where
# ----------------------------------------------------------------------------------------
def phase_dirs(out, names: list[str]) -> list[Path]:
    """Where a recipe with these phase names writes: out/phase<i>-<name> for all but the last
    phase, which is the run directory itself (so lab.load(out) gives the final model)."""
    out = Path(out)
    return [out / phase_name(i + 1, name) for i, name in enumerate(names[:-1])] + [out]


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
