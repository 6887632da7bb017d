"""fp32 or bf16 autocast on this machine: the timings behind the lab's precision "auto".

    python -m benchmarks.precision [--threads 1] [--budget 6] [--pairs 15] [--steps-batch 32]

Prints the CPU (model name; whether /proc/cpuinfo lists amx_bf16, amx_tile, avx512_bf16), then
for each workload the median ms per call in fp32 and under bf16 autocast, timed as the lab times
them (lab.device.time_both_ways: one warm-up each, then alternating pairs within --budget
seconds, at most --pairs), and the choice the lab makes on this machine for the dashboard
(explore.choose_bf16 on minilm-squad) and for a training run (choose_precision on one training
step, as lab.training.train does):

- explore.answer on models/minilm-squad (a question and a paragraph of about 100 words);
- explore.attention on the same model's encoder (one sentence, every layer's maps);
- a BERT-Tiny pre-training step (L2 H128, vocab 30522, 32 x 128 tokens, MLM + NSP):
  forward + backward + gradient clipping + AdamW, reported as tokens/s as well.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

import lab
from lab import explore
from lab.data.instances import SpecialIds, mask_tokens
from lab.device import (
    choose_precision,
    cpu_flags,
    forget_precision_choices,
    known_precision,
    time_both_ways,
)
from lab.training.fast_dropout import use_fast_dropout
from lab.training.train import TrainConfig, make_optimizer, training_step

ROOT = Path(__file__).resolve().parents[1]
CPU = torch.device("cpu")
QUESTION = "when did the teacher move to the city ?"
CONTEXT = (
    "the letter was written in the spring by a young teacher who had moved to the city in the autumn "
    "of the year before . she had grown up in a small village by the sea , where her father kept a "
    "boat and her mother taught at the only school . in the city she found work at a large school near "
    "the river , and in the evenings she wrote to her family about the streets , the markets , the "
    "trains and the people she met . the letter was read aloud to the whole class on the first warm "
    "day of the year , and the children asked many questions about the sea ."
)
SENTENCE = "the captain walked along the shore of the little harbour , thinking of the long voyage ahead ."


def cpu_line() -> str:
    name = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        "unknown CPU",
    )
    flags = cpu_flags()
    have = ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in ("amx_bf16", "amx_tile", "avx512_bf16"))
    return f"CPU: {name} ({have}); torch {torch.__version__}, {torch.get_num_threads()} thread(s)"


def row(name: str, fp32_ms: float, bf16_ms: float, unit_tokens: int | None = None) -> None:
    extra = ""
    if unit_tokens:
        extra = f"   ({unit_tokens / fp32_ms * 1000:,.0f} vs {unit_tokens / bf16_ms * 1000:,.0f} tokens/s)"
    print(f"{name:<44} fp32 {fp32_ms:8.1f} ms   bf16 {bf16_ms:8.1f} ms   bf16/fp32 {bf16_ms / fp32_ms:4.2f}{extra}")


def pretraining_step(batch_size: int, seq: int):
    """A BERT-Tiny pre-training step as lab.training.train runs it (FastDropout, fused AdamW)."""
    vocab = 30522
    torch.manual_seed(0)
    model = lab.BertForPreTraining(lab.BertConfig.preset("tiny", vocab_size=vocab)).train()
    use_fast_dropout(model)
    opt = make_optimizer(model, TrainConfig(lr=1e-4))
    g = torch.Generator().manual_seed(0)
    special = SpecialIds(pad_id=0, cls_id=101, sep_id=102, mask_id=103, vocab_size=vocab)
    ids = torch.randint(1000, vocab, (batch_size, seq), generator=g)
    ids[:, 0], ids[:, seq // 2], ids[:, -1] = 101, 102, 102
    types = torch.zeros_like(ids)
    types[:, seq // 2 + 1 :] = 1
    masked, labels = mask_tokens(ids, None, special, g)
    batch = lab.data.batch.Batch(
        input_ids=masked,
        token_type_ids=types,
        attention_mask=torch.ones_like(ids),
        mlm_labels=labels,
        nsp_label=torch.randint(0, 2, (batch_size,), generator=g),
    )

    def step():
        model(**batch).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    return model, batch, step


class MlmObjective:
    """The training loop's view of one batch: what precision "auto" times (training_step)."""

    def __init__(self, batch):
        self.batch = batch

    def train_batch(self, index):
        return self.batch

    def loss(self, model, batch):
        return model(**batch).loss, {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--budget", type=float, default=6.0, help="seconds of timing per workload")
    ap.add_argument("--pairs", type=int, default=15, help="at most this many fp32/bf16 pairs per workload")
    ap.add_argument("--steps-batch", type=int, default=32, help="sequences per pre-training step")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(cpu_line())
    known = known_precision(CPU)
    print(f"without timing: {known.describe() if known else 'nothing is known: the lab measures'}\n")

    qa, tok = lab.load(ROOT / "models" / "minilm-squad")
    qa.eval()
    budget, pairs = args.budget, args.pairs
    with torch.no_grad():
        row(
            "explore.answer, minilm-squad",
            *time_both_ways(lambda: explore.answer(qa, tok, QUESTION, CONTEXT), CPU, budget, max_pairs=pairs),
        )
        row(
            "explore.attention, minilm-squad's encoder",
            *time_both_ways(lambda: explore.attention(qa, tok, SENTENCE), CPU, budget, max_pairs=pairs),
        )
    model, batch, step = pretraining_step(args.steps_batch, 128)
    tokens = batch.input_ids.numel()
    row(
        f"BERT-Tiny pre-training step, {args.steps_batch} x 128",
        *time_both_ways(step, CPU, 3 * budget, max_pairs=pairs),
        tokens,
    )

    forget_precision_choices()
    dashboard = explore.choose_bf16(qa, tok).describe()
    print(f"\nthe lab's choice for the dashboard (explore.choose_bf16, minilm-squad): {dashboard}")
    explore.use_bf16(False)
    training = choose_precision(training_step(model, MlmObjective(batch), batch), CPU, key=None).describe()
    print(f"the lab's choice for training (choose_precision, a BERT-Tiny training step): {training}")


if __name__ == "__main__":
    main()
