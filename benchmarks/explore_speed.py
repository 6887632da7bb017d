"""Inference speed of the dashboard's core views, in process: fill-mask and attention maps.

    python -m benchmarks.explore_speed [--presets mini base] [--tokens 128] [--repeats 30]

For each model shape (random weights; the speed does not depend on them) and a text of exactly
--tokens WordPiece tokens with one [MASK]: the lab's explore.fill_mask and explore.attention, in
fp32 and with explore.use_bf16() (the dashboard's default), against transformers' fill-mask
pipeline on the same weights (fp32). Medians over --repeats calls after warm-up, alternating lab
and reference. Targets (TARGET_MS, 2 CPU cores): fill-mask + attention <= 20 ms for mini and <= 200
ms for base; the lab's fill-mask no slower than the pipeline.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from functools import partial
from pathlib import Path

import torch

import lab
from lab import explore

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = {"mini": 20.0, "base": 200.0}


def text_of_length(tokenizer, n_tokens: int) -> str:
    """A novel-style text that encodes to exactly n_tokens tokens ([CLS] and [SEP] included), one [MASK]."""
    words = (
        "it was a bright cold day in april and the clocks were striking thirteen while the "
        "captain walked along the shore of the little harbour thinking of the voyage ahead"
    ).split()
    out, i = ["[MASK]"], 0
    while len(tokenizer.encode(" ".join(out)).input_ids) < n_tokens:
        out.append(words[i % len(words)])
        i += 1
    while len(tokenizer.encode(" ".join(out)).input_ids) > n_tokens:
        out.pop()
    return " ".join(out)


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(1000 * (time.perf_counter() - t))
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", nargs="+", default=["mini", "base"])
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    # deferred: transformers is heavy to import; imported after the warnings filter above
    from transformers import BertForMaskedLM, BertTokenizerFast, pipeline
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()

    _, tokenizer = lab.load(ROOT / "models" / "bert-lab-classroom")  # any vocabulary will do
    text = text_of_length(tokenizer, args.tokens)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads; text of "
        f"{len(tokenizer.encode(text).input_ids)} tokens with one [MASK]; medians of {args.repeats} calls"
    )
    print(
        f"{'model, lab':<11} {'params':>7} {'lab fill-mask':>14} {'lab attention':>14} {'lab both':>10} "
        f"{'HF pipeline':>12} {'lab/HF':>7} {'target':>8}"
    )
    for preset in args.presets:
        torch.manual_seed(0)
        cfg = lab.BertConfig.preset(preset, vocab_size=tokenizer.vocab_size)
        model = lab.BertForPreTraining(cfg).eval()
        with tempfile.TemporaryDirectory() as tmp:
            lab.save(model, tokenizer, tmp)
            hf_model = BertForMaskedLM.from_pretrained(tmp).eval()
            vocab = str(Path(tmp) / "vocab.txt")  # transformers 5 takes `vocab=`, 4 `vocab_file=`
            hf_tok = BertTokenizerFast(vocab=vocab, do_lower_case=True)
            if len(hf_tok) != tokenizer.vocab_size:
                hf_tok = BertTokenizerFast(vocab_file=vocab, do_lower_case=True)
        fill = pipeline("fill-mask", model=hf_model, tokenizer=hf_tok, top_k=5, device=-1)
        # the same answer from both (the same weights): a sanity check, not a timing
        hf_best = hf_tok.convert_ids_to_tokens(int(fill(text)[0]["token"]))
        lab_best = explore.fill_mask(model, tokenizer, text)[0][0][0]
        assert hf_best == lab_best, (hf_best, lab_best)

        # partial binds this preset's model now (a lambda would look `model` up when called)
        lab_fill = partial(explore.fill_mask, model, tokenizer, text, top_k=5)
        lab_attention = partial(explore.attention, model, tokenizer, text)
        lab_calls = {
            "fill": lab_fill,
            "attention": lab_attention,
            "both": lambda lab_fill=lab_fill, lab_attention=lab_attention: (lab_fill(), lab_attention()),
        }
        ms = {}
        for precision in ("fp32", "bf16"):
            if not explore.use_bf16(precision == "bf16") and precision == "bf16":
                print(f"{preset:<6} bf16: this machine has no fast bf16, skipped")
                continue
            runs = {**lab_calls, "hf": partial(fill, text)}
            for fn in runs.values():  # warm-up
                for _ in range(3):
                    fn()
            # alternate blocks so that both sides see the same machine state
            results = {k: [] for k in runs}
            for _ in range(3):
                for k, fn in runs.items():
                    results[k].append(median_ms(fn, max(1, args.repeats // 3)))
            ms = {k: statistics.median(v) for k, v in results.items()}
            target = TARGET_MS.get(preset)
            verdict = "" if target is None else f"<= {target:.0f} {'ok' if ms['both'] <= target else 'MISSED'}"
            name = f"{preset} {precision}"
            print(
                f"{name:<11} {cfg.num_parameters() / 1e6:>6.1f}M {ms['fill']:>11.1f} ms {ms['attention']:>11.1f} ms "
                f"{ms['both']:>7.1f} ms {ms['hf']:>9.1f} ms {ms['fill'] / ms['hf']:>7.2f} {verdict:>8}"
            )
        explore.use_bf16(False)


if __name__ == "__main__":
    main()
