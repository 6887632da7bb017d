"""The pre-training ladder at laptop scale: the BERT paper's Tables 5 and 8, RoBERTa's static
masks, and what changed since (lab.modern), one rung at a time, several seeds a rung.

    .venv/bin/python -m benchmarks.ladder --list                      # the rungs
    nohup .venv/bin/python -m benchmarks.ladder --seeds 0 1 2 > ladder.log 2>&1 &
    .venv/bin/python -m benchmarks.ladder --report                    # the table (Markdown)

Every rung pre-trains a BERT-Tiny shape on the ten novels with the lesson recipe (the classroom
recipe's two phases, length 32 then 128, 1,000 steps each): the same tokens for every rung, the bundled
classroom model's vocabulary and the same held-out chapters. Each (rung, seed) then reports:
  - held-out masked-LM accuracy at [MASK] on fixed masks (the paper's 80/10/10 at 15%, whatever
    the rung trained with), per sequence, so intervals cover seeds and sentences;
  - NSP accuracy where the rung trains NSP; next-token accuracy for the left-to-right rung;
  - SST-2 dev accuracy (872 sentences) of a frozen-feature classifier (logistic regression on the
    mean of the last layer's token vectors) and of the whole model fine-tuned, both trained on
    the first 800 training sentences (the capstone's size).
One JSON file per (rung, seed) in benchmarks/ladder/ (committed): a stopped ladder resumes
where it was, across sessions. --jobs 2 runs two single-threaded workers (the tiny model keeps
one core busy better than two). --report bootstraps 95% intervals over seeds and sentences.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import lab
from lab.data.directions import direction_mask
from lab.data.instances import SpecialIds
from lab.inspect.probing import fit_probe
from lab.studies.ladder import Rung, load_results, report, rungs, steps_for
from lab.training import finetune as ft
from lab.training.pretrain import PretrainConfig, fixed_batches, load_corpus, run_recipe
from lab.training.train import train

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "ladder"  # one JSON file per (rung, seed), committed
MODERN_MODEL = ROOT / "models" / "bert-lab-classroom-modern"  # the report names the rung it was pre-trained as

DATA = ROOT.parent / "shared" / "data"
TOKENIZER = ROOT / "models" / "bert-lab-classroom"
STEPS = 2000  # the budget of every rung: half at length 32 (batch 128), half at 128 (batch 32)
SST2_TRAIN = 800


# ----------------------------------------------------------------------------------------
# One (rung, seed)
# ----------------------------------------------------------------------------------------
def pretrain_rung(rung: Rung, seed: int, out: Path, steps: int) -> float:
    """Pre-train with the lesson recipe (the classroom's phases, half and half); returns the seconds."""
    t0 = time.perf_counter()
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):
        run_recipe(
            "lesson",
            DATA / "novels",
            out,
            {**rung.settings, "seed": seed, "split_seed": 0},
            {
                "steps": steps,
                "minutes": None,
                "seed": seed,
                "eval_every": 0,
                "ckpt_every": 0,
                "snapshots": 0,
                "log_every": 0,
            },
            tokenizer_dir=TOKENIZER,
            log=lambda *_: None,
        )
    return time.perf_counter() - t0


class LeftToRight(torch.nn.Module):
    """A model read left to right: every forward pass gets the left-to-right attention mask
    (the paper's LTR model kept the constraint in fine-tuning too)."""

    def __init__(self, model):
        super().__init__()
        self.inner, self.config = model, model.config

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, **rest):
        mask = direction_mask(input_ids, "left_to_right", attention_mask)
        return self.inner(input_ids, token_type_ids, attention_mask=mask, **rest)


@torch.no_grad()
def held_out(model, batches, mask_id: int, ltr: bool, nsp: bool) -> dict:
    """Per held-out sequence: hits and counts at [MASK] (or next-token for ltr), NSP right."""
    rows = {"hits": [], "counts": [], "nsp": []}
    for batch in batches:
        for i in range(0, len(batch), 16):
            b = batch.rows(slice(i, i + 16))
            if ltr:
                ids = torch.where(b.mlm_labels != -100, b.mlm_labels, b.input_ids)  # the text, unmasked
                real = b.attention_mask.bool()
                labels = torch.full_like(ids, -100)
                labels[:, :-1] = torch.where(real[:, 1:], ids[:, 1:], -100)
                out = LeftToRight(model)(ids, b.token_type_ids, b.attention_mask, mlm_labels=labels)
                picked = labels != -100
                hit = torch.zeros_like(ids, dtype=torch.bool)
                hit[picked] = out.mlm_logits.argmax(-1) == labels[picked]
                counted = picked
            else:
                out = model(**{k: v for k, v in b.items() if k != "nsp_label"})
                picked = b.mlm_labels != -100
                hit = torch.zeros_like(b.input_ids, dtype=torch.bool)
                hit[picked] = out.mlm_logits.argmax(-1) == b.mlm_labels[picked]
                counted = picked & (b.input_ids == mask_id)
            rows["hits"] += (hit & counted).sum(1).tolist()
            rows["counts"] += counted.sum(1).tolist()
            if nsp:
                rows["nsp"] += (out.nsp_logits.argmax(-1) == b.nsp_label).int().tolist()
    return rows


def sst2(run: Path, seed: int, ltr: bool) -> dict:
    """SST-2 dev: frozen-feature and fine-tuned classifiers, right or wrong per dev sentence."""
    train_data = ft.read_classification(DATA / "sst2" / "train.tsv", limit=SST2_TRAIN)
    dev_data = ft.read_classification(DATA / "sst2" / "dev.tsv")
    labels = ft.label_names(train_data.labels)
    overrides = {"id2label": dict(enumerate(labels)), "label2id": {l: i for i, l in enumerate(labels)}}
    torch.manual_seed(seed)
    model, tokenizer = lab.load(run, lab.BertForSequenceClassification, config_overrides=overrides)
    enc = {
        n: ft.encode_classification(d, tokenizer, model.config.label2id, 64)
        for n, d in (("train", train_data), ("dev", dev_data))
    }
    pad = tokenizer.pad_token_id

    def encoder_features(split):
        vectors = []
        for i in range(0, len(enc[split].labels), 64):
            b = ft.classification_batch(enc[split], list(range(i, min(i + 64, len(enc[split].labels)))), pad)
            body = LeftToRight(model.bert) if ltr else model.bert
            h = body(b.input_ids, b.token_type_ids, b.attention_mask).last_hidden_state  # (B, T, H)
            m = b.attention_mask[..., None].float()
            vectors.append((h * m).sum(1) / m.sum(1))
        return torch.cat(vectors)

    with torch.no_grad():
        x_train, x_dev = encoder_features("train"), encoder_features("dev")
    probe = fit_probe(x_train, torch.tensor(enc["train"].labels), len(labels))
    weight, bias, mean, scale = probe
    features_right = (((x_dev - mean) / scale) @ weight + bias).argmax(-1) == torch.tensor(enc["dev"].labels)

    wrapped = LeftToRight(model) if ltr else model
    with tempfile.TemporaryDirectory(prefix="ladder-sst2-") as tmp:
        tc = dataclasses.replace(
            ft.FINETUNE_TRAINING, out_dir=tmp, seed=seed, batch_size=32, lr=1e-3, snapshots=0, ckpt_every=0, log_every=0
        )
        tc, _ = ft.epoch_schedule(tc, SST2_TRAIN, 4)
        tc = dataclasses.replace(tc, eval_every=0)
        objective = ft.ClassificationObjective(enc["train"], enc["dev"], pad, 32, seed)
        with contextlib.redirect_stdout(io.StringIO()):
            train(wrapped.train(), objective, tc, tokenizer, log=lambda *_: None)
    wrapped.eval()
    preds = []
    with torch.no_grad():
        for i in range(0, len(enc["dev"].labels), 64):
            b = ft.classification_batch(enc["dev"], list(range(i, min(i + 64, len(enc["dev"].labels)))), pad)
            preds += wrapped(b.input_ids, b.token_type_ids, b.attention_mask).logits.argmax(-1).tolist()
    tuned_right = [int(p == g) for p, g in zip(preds, enc["dev"].labels)]
    return {"features": features_right.int().tolist(), "finetuned": tuned_right}


def run_one(rung: Rung, seed: int, steps: int) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"ladder-{rung.name}-{seed}-") as tmp:
        out = Path(tmp) / "run"
        cpu0 = time.process_time()
        seconds = pretrain_rung(rung, seed, out, steps)
        model, tokenizer = lab.load(out, lab.BertForPreTraining)
        pc = PretrainConfig(
            **{**dataclasses.asdict(PretrainConfig(preset="tiny")), "seed": 0, "split_seed": 0, "max_seq_length": 128}
        )
        special = SpecialIds.from_vocab(tokenizer.vocab)
        with contextlib.redirect_stdout(io.StringIO()):
            _, held_inst = load_corpus(DATA / "novels", pc, tokenizer, log=lambda *_: None)
        batches = fixed_batches(held_inst, special, pc)
        ltr = rung.settings.get("objective") == "ltr"
        nsp = rung.settings.get("nsp", True)
        rows = held_out(model, batches, special.mask_id, ltr, nsp)
        downstream = sst2(out, seed, ltr)
        return {
            "rung": rung.name,
            "seed": seed,
            "settings": rung.settings,
            "steps": steps,
            "pretrain_seconds": round(seconds, 1),
            "cpu_seconds": round(time.process_time() - cpu0, 1),
            "parameters": model.num_parameters(),
            "held_out": rows,
            "sst2": downstream,
            "commit": subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
            ).stdout.strip(),
            "cpu": _cpu_name(),
            "date": datetime.date.today().isoformat(),
        }


def _cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def result_path(rung: str, seed: int) -> Path:
    return RESULTS / f"{rung.replace('+', '_')}-seed{seed}.json"


def work(jobs: list[tuple[Rung, int]], steps: int) -> None:
    for rung, seed in jobs:
        path = result_path(rung.name, seed)
        if path.exists():
            continue
        own = steps_for(rung, load_results(RESULTS), steps)
        if own is None:
            print(f"{rung.name} seed {seed}: waits for the results of {' and '.join(rung.same_time)}", flush=True)
            continue
        t0 = time.perf_counter()
        result = run_one(rung, seed, own)
        RESULTS.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, separators=(",", ":")) + "\n")
        os.replace(tmp, path)
        print(f"{rung.name} seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)


DOC = ROOT / "docs" / "pretraining.md"
START, END = "<!-- ladder:start -->", "<!-- ladder:end -->"


def write_docs(text: str) -> None:
    doc = DOC.read_text()
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(head + START + "\n" + text + END + tail)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--rungs", nargs="+", help="only these rungs (default: all)")
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes, one thread each")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--list", action="store_true", help="print the rungs and stop")
    ap.add_argument("--report", action="store_true", help="print the table of the results so far")
    ap.add_argument("--write-docs", action="store_true", help="with --report: rewrite the table in docs/pretraining.md")
    args = ap.parse_args(argv)
    ladder = rungs()
    if args.list:
        for r in ladder:
            print(f"{r.name:32} {r.what} [{r.source}] {json.dumps(r.settings)}")
        return 0
    if args.report:
        text = report(load_results(RESULTS), MODERN_MODEL)
        print(text)
        if args.write_docs:
            write_docs(text)
        return 0
    names = {r.name for r in ladder}
    unknown = set(args.rungs or []) - names
    if unknown:
        ap.error(f"unknown rungs {sorted(unknown)}; --list shows them")
    chosen = [r for r in ladder if not args.rungs or r.name in args.rungs]
    jobs = [(r, s) for s in args.seeds for r in chosen]  # every rung at seed 0 first
    if args.worker is not None:
        torch.set_num_threads(1)
        work(jobs[args.worker :: args.jobs], args.steps)
        return 0
    if args.jobs == 1:
        work(jobs, args.steps)
        return 0
    base = [
        sys.executable,
        "-m",
        "benchmarks.ladder",
        "--steps",
        str(args.steps),
        "--jobs",
        str(args.jobs),
        "--seeds",
        *map(str, args.seeds),
    ]
    if args.rungs:
        base += ["--rungs", *args.rungs]
    workers = [subprocess.Popen([*base, "--worker", str(k)]) for k in range(args.jobs)]
    return max(w.wait() for w in workers)


if __name__ == "__main__":
    raise SystemExit(main())
