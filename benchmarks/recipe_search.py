"""Search for the classroom pre-training recipe: many short runs in parallel, then a table.

    python -m benchmarks.recipe_search --corpus ../shared/data/novels --tokenizer runs/tok8192 \\
        --out runs/search --parallel 2 --device cpu    grid.json

grid.json is a list of {"name": ..., "args": [extra `python -m lab pretrain` options]}. Each run
is a plain `python -m lab pretrain` process, so every row of the table can be re-run alone.
On a GPU machine many CPU-sized runs fit side by side: give each the number of steps that
the same settings reach in 15 minutes on a 2-core CPU (measured with
benchmarks/pretrain_speed.py), and the table predicts the CPU result step for step.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def summarise(run: Path) -> dict:
    evals = (
        [
            json.loads(l)
            for l in (run / "metrics.jsonl").read_text().splitlines()
            if l.strip() and json.loads(l)["split"] == "eval"
        ]
        if (run / "metrics.jsonl").is_file()
        else []
    )
    if not evals:
        return {}
    last = evals[-1]
    curve = " ".join(f"{e['step']}:{e['mlm_acc_masked']:.3f}" for e in evals)
    return {
        "step": last["step"],
        "mlm_acc": last["mlm_acc"],
        "mlm_acc_masked": last["mlm_acc_masked"],
        "nsp_acc": last.get("nsp_acc", float("nan")),
        "mlm_loss": last["mlm_loss"],
        "curve": curve,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("grid", type=Path)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--parallel", type=int, default=1)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    grid = json.loads(args.grid.read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    pending, running = list(grid), []
    t0 = time.time()
    while pending or running:
        while pending and len(running) < args.parallel:
            job = pending.pop(0)
            cmd = [
                sys.executable,
                "-m",
                "lab",
                "pretrain",
                "--corpus",
                args.corpus,
                "--tokenizer",
                args.tokenizer,
                "--out",
                str(args.out / job["name"]),
                "--device",
                args.device,
                "--threads",
                str(args.threads),
                "--no-progress",
                *job["args"],
            ]
            log = open(args.out / f"{job['name']}.log", "w")
            running.append((job, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log))
            print(f"[{time.time() - t0:6.0f}s] start {job['name']}: {' '.join(job['args'])}", flush=True)
        for item in list(running):
            job, proc, log = item
            if proc.poll() is not None:
                log.close()
                running.remove(item)
                print(f"[{time.time() - t0:6.0f}s] done  {job['name']} (exit {proc.returncode})", flush=True)
        time.sleep(1)
    print("\n| run | options | steps | MLM acc | MLM acc at [MASK] | NSP acc | MLM loss |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for job in grid:
        s = summarise(args.out / job["name"])
        if s:
            print(
                f"| {job['name']} | `{' '.join(job['args'])}` | {s['step']} | {s['mlm_acc']:.3f} | "
                f"{s['mlm_acc_masked']:.3f} | {s['nsp_acc']:.3f} | {s['mlm_loss']:.3f} |"
            )
        else:
            print(f"| {job['name']} | `{' '.join(job['args'])}` | failed | | | | |")
    print("\ncurves (step:MLM acc at [MASK]):")
    for job in grid:
        s = summarise(args.out / job["name"])
        if s:
            print(f"  {job['name']}: {s['curve']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
