"""Corpora of any size: preparation speed, pre-training memory and loader rate at 1x, 8x, 64x.

    python -m benchmarks.data_scale                                  # the ten novels, 1x 8x 64x
    python -m benchmarks.data_scale --corpus ../shared/data/novels --factors 1 8 64

For each factor the corpus folder is repeated that many times (symbolic links), then, each in its
own process: `python -m lab prepare` (time, MB/s); `python -m lab pretrain --preset tiny --steps 2`
on the prepared folder, alone and under torchrun (peak RSS: the figure that must not grow with the
corpus); and the loader alone (sequences/s of PretrainingData.batch). Prints a Markdown table
(docs/performance.md, "Corpora of any size").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from lab.data.instances import PretrainingData, SpecialIds
from lab.data.prepare import PreparedCorpus
from lab.files import META_NAME
from lab.tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parents[1]


def repeated(corpus: Path, factor: int, root: Path) -> Path:
    """root/x<factor>/copy<k>/<file>: symbolic links to the corpus's files, `factor` times."""
    out = root / f"x{factor}"
    files = sorted(p for p in corpus.rglob("*") if p.is_file()) if corpus.is_dir() else [corpus]
    for k in range(factor):
        for f in files:
            link = out / f"copy{k:03d}" / (f.relative_to(corpus) if corpus.is_dir() else f.name)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(f.resolve())
    return out


def peak_rss_mb(cmd: list[str]) -> int:
    """Peak RSS of one command, as GNU time measures it (Debian package `time`)."""
    if not Path("/usr/bin/time").exists():
        raise SystemExit("this benchmark needs GNU time at /usr/bin/time (apt-get install time)")
    proc = subprocess.run(
        ["/usr/bin/time", "-v", *cmd], cwd=ROOT, capture_output=True, text=True, env={**os.environ, "TQDM_DISABLE": "1"}
    )
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    line = next(l for l in proc.stderr.splitlines() if "Maximum resident set size" in l)
    return int(line.split()[-1]) // 1024


def loader_rate(folder: Path, tokenizer: Tokenizer, steps: int = 40, batch: int = 128) -> tuple[float, float, int]:
    """(index build seconds, sequences per second, pairs in the epoch) of the lazy reader."""
    corpus = PreparedCorpus(folder, "train")
    special = SpecialIds.from_vocab(tokenizer.vocab)
    t0 = time.perf_counter()
    data = PretrainingData(corpus, special, batch_size=batch, seed=0)
    build = time.perf_counter() - t0
    data.batch(0)
    t0 = time.perf_counter()
    n = sum(len(data.batch(s)) for s in range(1, steps + 1))
    return build, n / (time.perf_counter() - t0), len(data.pairs(0))


def pretrain_args(folder: Path, out: Path, *extra: str) -> list[str]:
    """`lab pretrain` for two steps of the tiny preset on a prepared folder, without evaluation."""
    common = ["--preset", "tiny", "--steps", "2", "--eval-every", "0"]
    return ["lab", "pretrain", "--corpus", str(folder), *common, *extra, "--out", str(out), "--no-progress"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "data" / "novels")
    ap.add_argument("--tokenizer", type=Path, default=ROOT / "models" / "bert-lab-classroom")
    ap.add_argument("--factors", type=int, nargs="+", default=[1, 8, 64])
    args = ap.parse_args()
    torch.set_num_threads(1)  # the loader is one process's share of a core
    tokenizer = Tokenizer.load(args.tokenizer)
    py = sys.executable
    rows = []
    with tempfile.TemporaryDirectory(prefix="bert-lab-scale-") as tmp:
        tmp = Path(tmp)
        for factor in args.factors:
            corpus = repeated(args.corpus, factor, tmp)
            size = sum(f.stat().st_size for f in corpus.rglob("*") if f.is_file())
            folder = tmp / f"prepared-x{factor}"
            t0 = time.perf_counter()
            subprocess.run(
                [
                    py,
                    "-m",
                    "lab",
                    "prepare",
                    "--corpus",
                    str(corpus),
                    "--tokenizer",
                    str(args.tokenizer),
                    "--out",
                    str(folder),
                ],
                cwd=ROOT,
                check=True,
                capture_output=True,
                env={**os.environ, "TQDM_DISABLE": "1"},
            )
            prep = time.perf_counter() - t0
            meta = json.loads((folder / META_NAME).read_text())
            rss = peak_rss_mb([py, "-m", *pretrain_args(folder, tmp / f"run-x{factor}")])
            torchrun = [py, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m"]
            ddp = peak_rss_mb([*torchrun, *pretrain_args(folder, tmp / f"ddp-x{factor}", "--threads", "1")])
            build, rate, pairs = loader_rate(folder, tokenizer)
            rows.append((factor, size, meta["tokens"], prep, meta["seconds"], rss, ddp, build, rate, pairs))
            print(
                f"x{factor}: {size / 2**20:.1f} MB, prepared in {meta['seconds']:.1f} s ({prep:.1f} s with start-up), "
                f"pretrain peak RSS {rss} MB (2 processes: {ddp} MB each at most), "
                f"index {build:.2f} s for {pairs:,} pairs, loader {rate:,.0f} sequences/s",
                flush=True,
            )
            shutil.rmtree(folder)
    print()
    print(
        "| corpus | text | tokens | preparation (command with start-up) | MB/s | pretrain peak RSS | "
        "torchrun x2: largest process | epoch index build | loader (1 process) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for factor, size, tokens, prep, inside, rss, ddp, build, rate, pairs in rows:
        print(
            f"| {args.corpus.name} x{factor} | {size / 2**20:.1f} MB | {tokens / 1e6:.1f}M | "
            f"{inside:.1f} s ({prep:.1f} s) | "
            f"{size / 2**20 / inside:.1f} | {rss} MB | {ddp} MB | {build:.2f} s ({pairs:,} pairs) | "
            f"{rate:,.0f} sequences/s |"
        )
    print(
        f"\npeak RSS relative to x{rows[0][0]}: "
        + ", ".join(f"x{r[0]} {r[5] / rows[0][5]:.2f}" for r in rows)
        + "; torchrun: "
        + ", ".join(f"x{r[0]} {r[6] / rows[0][6]:.2f}" for r in rows)
    )


if __name__ == "__main__":
    main()
