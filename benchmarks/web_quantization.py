"""Which precision the MiniLM task models take to the browser: measured on real data.

    python -m benchmarks.web_quantization [--models minilm-sst2 minilm-squad minilm-ner] [--limit N]
                                          [--data ../shared/data] [--threads 2]

Each model's PyTorch form (lab.load: fp32 compute) is the reference; its exported graph (lab.web.export)
runs in onnxruntime in each precision the export can write, through lab.web.export.OnnxModel, so the
lab's own evaluation code measures every form alike:
  fp32              fp32 weights (the export itself: should agree completely)
  fp16-weights      weights stored fp16 and cast to fp32 in the graph (lossless for these fp16 checkpoints)
  int8-dynamic      onnxruntime's quantize_dynamic: int8 weights, one scale per tensor, and int8
                    activations, quantized per call
  int8-dynamic per-channel   the same with one weight scale per output channel
  int8-weights      int8 weights, one scale per output channel, dequantized in the graph; fp32 activations
Data (read --data's README): minilm-sst2 on SST-2 dev (accuracy; agreement: the same label),
minilm-squad on the SQuAD v1.1 dev articles it did not train on (EM / F1; agreement: the same answer
text), minilm-ner on UNER English-EWT test (entity F1; agreement: the same tag per word). --limit
takes the first N phrases / questions / sentences of each. Prints a Markdown table: the graph's size
against the 25 MB budget, agreement, the metric, and the seconds the evaluation took here.
(A graph computing in fp16 would be the same 45 MB as fp16-weights: over the budget either way.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

import lab
from lab.checkpoint import qa_lengths, tag_settings
from lab.data.squad import load_squad, split_by_article
from lab.data.squad_metrics import evaluate
from lab.data.tag_metrics import entity_scores
from lab.data.tagged_files import read_tagged
from lab.inference import predict_answers, predict_tags
from lab.training.finetune import classification_batch, encode_classification, read_classification
from lab.web.export import (
    MAX_MODEL_BYTES,
    MB,
    OnnxModel,
    export_onnx,
    quantize_dynamic_int8,
    store_fp16_weights,
    store_int8_weights,
)

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("minilm-sst2", "minilm-squad", "minilm-ner")


def graphs(model, folder: Path) -> dict[str, Path]:
    """Every precision's graph of `model`, written into `folder`."""
    fp32 = export_onnx(model, folder / "fp32.onnx")
    fp16, int8 = folder / "fp16-weights.onnx", folder / "int8-weights.onnx"
    fp16.write_bytes(fp32.read_bytes())
    store_fp16_weights(fp16)
    int8.write_bytes(fp32.read_bytes())
    store_int8_weights(int8)
    return {
        "fp32": fp32,
        "fp16-weights": fp16,
        "int8-dynamic": quantize_dynamic_int8(fp32, folder / "int8-dynamic.onnx"),
        "int8-dynamic per-channel": quantize_dynamic_int8(fp32, folder / "int8-dynamic-pc.onnx", per_channel=True),
        "int8-weights": int8,
    }


# Each task: (model, tokenizer, data, limit) -> a function that measures one form of the model:
# form -> (predictions to compare with the reference's, {metric: value})
def sst2_task(model, tokenizer, data: Path, limit):
    dev = read_classification(data / "sst2" / "dev.tsv", limit=limit)
    length = model.task_settings.get("max_seq_length", 128)
    enc = encode_classification(dev, tokenizer, model.config.label2id, length)

    @torch.no_grad()
    def measure(form):
        predicted = []
        for i in range(0, len(enc.labels), 64):
            batch = classification_batch(enc, list(range(i, min(i + 64, len(enc.labels)))), tokenizer.pad_token_id)
            del batch["labels"]
            predicted += form(**batch).logits.argmax(-1).tolist()
        accuracy = sum(p == g for p, g in zip(predicted, enc.labels)) / len(enc.labels)
        return predicted, {"accuracy": accuracy}

    return measure, f"{len(enc.labels)} SST-2 dev phrases"


def squad_task(model, tokenizer, data: Path, limit):
    examples = load_squad(data / "squad" / "dev-v1.1.json.zip")
    _, dev = split_by_article(examples, n_train_articles=model.task_settings.get("train_articles", 40))
    dev = dev[:limit] if limit else dev
    lengths = qa_lengths(model.task_settings)

    def measure(form):
        answers = predict_answers(form, tokenizer, dev, **lengths)
        scores = evaluate(dev, answers)
        return [answers[ex.id] for ex in dev], {"EM": scores["exact_match"] / 100, "F1": scores["f1"] / 100}

    return measure, f"{len(dev)} SQuAD dev questions (held-out articles)"


def ner_task(model, tokenizer, data: Path, limit):
    test = read_tagged(data / "uner-ewt" / "en_ewt-ud-test.iob2", "uner")
    sentences = test.sentences[:limit] if limit else test.sentences
    windows = tag_settings(model.task_settings)

    def measure(form):
        tagged = predict_tags(
            form,
            tokenizer,
            [s.words for s in sentences],
            max_seq_length=windows.get("max_seq_length", 128),
            doc_stride=windows.get("doc_stride", 64),
            decoding=windows.get("decoding", "argmax"),
        )
        predicted = [[w.tag for w in sentence] for sentence in tagged]
        f1 = entity_scores([s.tags for s in sentences], predicted).micro.f1
        return [tag for sentence in predicted for tag in sentence], {"entity F1": f1}

    return measure, f"{len(sentences)} UNER EWT test sentences"


TASKS = {"minilm-sst2": sst2_task, "minilm-squad": squad_task, "minilm-ner": ner_task}


def timed(measure, form):
    start = time.perf_counter()
    predicted, metrics = measure(form)
    return predicted, metrics, time.perf_counter() - start


def fmt(metrics: dict) -> str:
    return ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())


def measure_model(name: str, data: Path, limit, threads) -> list[str]:
    """The table rows of one model: the PyTorch reference, then each graph."""
    model, tokenizer = lab.load(ROOT / "models" / name)
    measure, what = TASKS[name](model, tokenizer, data, limit)
    reference, metrics, seconds = timed(measure, model)
    weights = (ROOT / "models" / name / "model.safetensors").stat().st_size
    rows = [
        f"| {name} | PyTorch (fp16 on disk) | {weights / MB:.1f} | - | reference | {fmt(metrics)} | {seconds:.0f} |"
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for precision, path in graphs(model, Path(tmp)).items():
            predicted, metrics, seconds = timed(measure, OnnxModel(path, model.config, threads=threads))
            agree = sum(a == b for a, b in zip(predicted, reference)) / len(reference)
            size = path.stat().st_size
            fits = "yes" if size <= MAX_MODEL_BYTES else "no"
            rows.append(
                f"| {name} | {precision} | {size / MB:.1f} | {fits} | {agree:.2%} | {fmt(metrics)} | {seconds:.0f} |"
            )
            print(rows[-1], file=sys.stderr, flush=True)  # progress: each row as it is measured
    return [f"| {name}: {what} | | | | | | |"] + rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--limit", type=int, default=None, help="the first N items of each data set (default: all)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--threads", type=int, default=None, help="torch and onnxruntime threads (default: their own)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    data = Path(args.data)
    if not data.is_dir():
        sys.exit(f"error: no data folder at {data} (give --data)")
    budget = f"<= {MAX_MODEL_BYTES / MB:.0f} MB"
    lines = [
        f"| model | precision | graph MB | {budget} | agreement with PyTorch | metric | seconds |",
        "|---|---|---:|---|---:|---|---:|",
    ]
    for name in args.models:
        lines += measure_model(name, data, args.limit, args.threads)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
