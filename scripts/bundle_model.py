"""Copy a trained model into models/ in fp16 (half the size; lab.load gives fp32 back) and record
its held-out metrics, as scripts/make_models.sh does for every bundled model.

    python -m scripts.bundle_model runs/sst2 models/bert-lab-sst2 \\
        --eval "--data DATA/sst2/dev.tsv"
    python -m scripts.bundle_model runs/long models/bert-lab-classroom --snapshots runs/classroom runs/long \\
        --keep-steps 0 77 308 1532 4408 7292 --eval "--corpus DATA/novels --split held-out"

--eval: arguments of `python -m lab eval --model DST ...` (DATA = the data folder, $BERT_LAB_DATA or
../shared/data), run on the bundled (fp16-stored) copy; what it prints is written to
DST/metrics.json, which tests/test_bundled.py re-checks. --snapshots: pre-training runs whose
checkpoints become DST/checkpoints/step-N (fp16 weights, no optimizer state; later runs' steps
continue after earlier ones), so the dashboard's "watch BERT learn" works on the bundled model.
A run pre-trained without NSP is bundled as BertForMaskedLM: its NSP head was never trained.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shlex
import shutil
from pathlib import Path

import torch

import lab
from lab.__main__ import main as lab_main
from lab.data.datasets import data_dir
from lab.files import (
    CHECKPOINTS_DIR,
    EVALUATIONS_NAME,
    METRICS_NAME,
    MODEL_CARD_NAME,
    PRETRAIN_CONFIG_NAME,
    TASK_CONFIG_NAME,
    checkpoint_name,
)
from lab.run_files import checkpoints, merge_histories, phases

ROOT = Path(__file__).resolve().parents[1]

SIDE_FILES = (PRETRAIN_CONFIG_NAME, TASK_CONFIG_NAME, METRICS_NAME)


def masked_lm_only(src: Path) -> str | None:
    """The class "BertForMaskedLM" for a run pre-trained without NSP (pretrain_config.json's nsp false): its
    NSP head was never trained, so the bundled model leaves it out and no view offers NSP on it."""
    saved = src / PRETRAIN_CONFIG_NAME
    if saved.is_file() and json.loads(saved.read_text()).get("nsp", True) is False:
        print(f"{src} was pre-trained without NSP: bundled as BertForMaskedLM, without the untrained NSP head")
        return "BertForMaskedLM"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--snapshots", type=Path, nargs="*", default=[], help="pre-training runs, in order")
    ap.add_argument("--keep-steps", type=int, nargs="*", help="global steps to keep (default: all)")
    ap.add_argument("--eval", action="append", default=[], help="arguments of python -m lab eval")
    ap.add_argument(
        "--label-names",
        nargs="*",
        help="names for a classifier's labels, in id order (GLUE files use 0, 1, ...; the dashboard shows names)",
    )
    args = ap.parse_args()
    data = data_dir()
    if data is None and any("DATA" in spec for spec in args.eval):
        raise SystemExit(
            "--eval uses DATA, but there is no data folder: set BERT_LAB_DATA or put one at ../shared/data"
        )

    head = masked_lm_only(args.src)
    model, tokenizer = lab.load(args.src, head)
    if args.label_names:
        if len(args.label_names) != model.config.num_labels:
            raise SystemExit(f"{len(args.label_names)} label names for {model.config.num_labels} labels")
        model.config = model.config.with_labels(args.label_names)
    tmp = args.dst.with_name(args.dst.name + ".new")
    shutil.rmtree(tmp, ignore_errors=True)
    lab.save(model, tokenizer, tmp, dtype=torch.float16)
    for name in SIDE_FILES:
        if (args.src / name).is_file():
            shutil.copy(args.src / name, tmp / name)

    parts = [p for run in args.snapshots for p in phases(run)]  # each run with its recipe phases
    if parts:  # one training history for the Training tab
        history = merge_histories(parts)
        (tmp / METRICS_NAME).write_text("".join(json.dumps(r) + "\n" for r in history))
    kept = []
    for global_step, directory in checkpoints(parts):  # later parts continue earlier ones
        if args.keep_steps is None or global_step in args.keep_steps:
            snap, _ = lab.load(directory, head)
            lab.save(snap, None, tmp / CHECKPOINTS_DIR / checkpoint_name(global_step), dtype=torch.float16)
            kept.append(global_step)
    if kept:
        print(f"snapshots at steps {sorted(kept)}")

    evaluations = []
    for spec in args.eval:
        eval_args = ["--model", str(tmp)] + shlex.split(spec.replace("DATA", str(data)))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            if lab_main(["eval", *eval_args]) != 0:
                raise SystemExit(f"eval failed: {spec}")
        metrics = json.loads(out.getvalue())
        evaluations.append(
            {
                "args": [
                    "--model",
                    str(args.dst.relative_to(ROOT) if args.dst.is_absolute() else args.dst),
                    *shlex.split(spec),
                ],
                "metrics": metrics,
            }
        )
        print(f"eval {spec}: {json.dumps(metrics)}")
    (tmp / EVALUATIONS_NAME).write_text(json.dumps({"evaluations": evaluations}, indent=2) + "\n")
    card = args.dst / MODEL_CARD_NAME
    if card.is_file():  # the card is written by hand: keep it
        shutil.copy(card, tmp / MODEL_CARD_NAME)
    shutil.rmtree(args.dst, ignore_errors=True)
    tmp.rename(args.dst)
    size = sum(f.stat().st_size for f in args.dst.rglob("*") if f.is_file())
    print(f"{args.dst}: {size / 2**20:.1f} MB")


if __name__ == "__main__":
    main()
