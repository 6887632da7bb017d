"""Training speed: the lab's training step against transformers', and against this CPU's matmul rate.

    python -m benchmarks.pretrain_speed [--preset tiny] [--batch 32] [--seq 128] [--steps 20]
    python -m benchmarks.pretrain_speed --no-qa        # pre-training rows only

One process, the same batches, alternating blocks of steps so that both see the same machine: the
lab and transformers each at its defaults, then as the classroom recipe runs (no dropout), with
--compile, both in bf16; then QA fine-tuning at the MiniLM shape (`qa_rows`). Every lab row also
gets its model FLOP/s as a fraction of a large bf16 matmul's ("MFU"). A training step = forward +
backward + gradient clipping + AdamW step. docs/performance.md has the table and what each row is.
"""

from __future__ import annotations

import argparse
import contextlib
import time

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

import lab
from lab.data.instances import SpecialIds, mask_tokens
from lab.device import autocast_dtype
from lab.training.fast_dropout import use_fast_dropout
from lab.training.train import TrainConfig, make_optimizer


def make_batches(vocab: int, batch: int, seq: int, n: int, seed: int = 0):
    """Full-length random sequences, masked by the lab's 80/10/10 rule (20 predictions each)."""
    g = torch.Generator().manual_seed(seed)
    special = SpecialIds(pad_id=0, cls_id=101, sep_id=102, mask_id=103, vocab_size=vocab)
    out = []
    for _ in range(n):
        ids = torch.randint(1000, vocab, (batch, seq), generator=g)
        ids[:, 0], ids[:, seq // 2], ids[:, -1] = 101, 102, 102
        types = torch.zeros_like(ids)
        types[:, seq // 2 + 1 :] = 1
        masked, labels = mask_tokens(ids, None, special, g)
        out.append(
            dict(
                input_ids=masked,
                token_type_ids=types,
                attention_mask=torch.ones_like(ids),
                mlm_labels=labels,
                nsp_label=torch.randint(0, 2, (batch,), generator=g),
            )
        )
    return out


class Runner:
    """One model + optimizer + how to call it; `step(batch)` runs one full training step."""

    def __init__(self, name, model, call, dtype):
        self.name, self.model, self.call, self.dtype = name, model.train(), call, dtype
        if isinstance(model, lab.model.BertPreTrainedModel):
            use_fast_dropout(model)  # the lab's models as lab.training.train.train() runs them
        self.opt = make_optimizer(model, TrainConfig(lr=1e-4))
        self.seconds, self.tokens, self.steps, self.flops = 0.0, 0, 0, 0.0

    def step(self, batch):
        ctx = torch.autocast("cpu", dtype=self.dtype) if self.dtype else contextlib.nullcontext()
        t0 = time.perf_counter()
        with ctx:
            loss = self.call(self.model, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return time.perf_counter() - t0

    def measure(self, batches):
        for b in batches:
            self.seconds += self.step(b)
            self.tokens += b["input_ids"].numel()
            self.steps += 1

    @property
    def tokens_per_s(self):
        return self.tokens / self.seconds

    @property
    def steps_per_s(self):
        return self.steps / self.seconds


def lab_call(model, b):
    return model(**b).loss


def qa_call(model, b):
    return model(
        input_ids=b["input_ids"],
        token_type_ids=b["token_type_ids"],
        attention_mask=b["attention_mask"],
        start_positions=b["start_positions"],
        end_positions=b["end_positions"],
    ).loss


def qa_batches(vocab: int, batch: int, seq: int, n: int, seed: int = 0):
    """Question-answering windows: [CLS] 30-token question [SEP] context [SEP], half the rows
    padded from token 200 on (as real SQuAD windows of a batch are), answer positions inside."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        ids = torch.randint(1000, vocab, (batch, seq), generator=g)
        ids[:, 0], ids[:, 31] = 101, 102
        types = torch.zeros_like(ids)
        types[:, 32:] = 1
        mask = torch.ones_like(ids)
        mask[::2, 200:] = 0
        start = torch.randint(32, 190, (batch,), generator=g)
        out.append(
            dict(
                input_ids=ids,
                token_type_ids=types,
                attention_mask=mask,
                start_positions=start,
                end_positions=start + torch.randint(0, 8, (batch,), generator=g),
            )
        )
    return out


def hf_call(model, b):
    return model(
        input_ids=b["input_ids"],
        token_type_ids=b["token_type_ids"],
        attention_mask=b["attention_mask"],
        labels=b["mlm_labels"],
        next_sentence_label=b["nsp_label"],
    ).loss


def compare(runners, batches, rounds):
    for r in runners:  # warm-up: one-off allocations, kernels
        for b in batches[:2]:
            r.step(b)
    per = max(1, len(batches) // rounds)
    for i in range(rounds):  # alternate blocks so both see the same machine state
        chunk = batches[i * per : (i + 1) * per]
        for r in runners:
            r.measure(chunk)


def matmul_flops(dtype=torch.bfloat16, n=4096, reps=5) -> float:
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - t0)


def step_flops(runner, batch) -> float:
    with FlopCounterMode(display=False) as counter:
        ctx = torch.autocast("cpu", dtype=runner.dtype) if runner.dtype else contextlib.nullcontext()
        with ctx:
            loss = runner.call(runner.model, batch)
        loss.backward()
    runner.opt.zero_grad(set_to_none=True)
    return counter.get_total_flops()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20, help="measured steps per model and setting")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile row")
    ap.add_argument("--no-qa", action="store_true", help="skip the MiniLM-shape fine-tuning rows")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    cfg = lab.BertConfig.preset(args.preset, vocab_size=args.vocab)
    hf_cfg = transformers.BertConfig(**{k: v for k, v in cfg.to_dict().items() if k != "model_type"})
    torch.manual_seed(0)
    ours = lab.BertForPreTraining(cfg)
    theirs = transformers.BertForPreTraining(hf_cfg)
    theirs.load_state_dict(ours.state_dict(), strict=False)  # same weights (decoder tied)
    no_dropout = lab.BertForPreTraining(
        lab.BertConfig.preset(
            args.preset, vocab_size=args.vocab, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
        )
    )
    no_dropout.load_state_dict(ours.state_dict())
    batches = make_batches(args.vocab, args.batch, args.seq, args.steps + 2)
    bf16 = autocast_dtype("auto", torch.device("cpu"))
    print(
        f"BERT-{args.preset} shape (L={cfg.num_hidden_layers} H={cfg.hidden_size} A={cfg.num_attention_heads}), "
        f"vocab {args.vocab}, batch {args.batch} x {args.seq} tokens, {torch.get_num_threads()} CPU threads, "
        f"torch {torch.__version__}, transformers {transformers.__version__}"
    )
    print(f"lab default precision on this CPU: {bf16 or 'fp32'}\n")

    hf_default = Runner(
        "transformers at its defaults (fp32, MLM logits at every position, dropout 0.1)", theirs, hf_call, None
    )
    lab_same = Runner("lab, same model (dropout 0.1), its defaults: autocast, sparse MLM", ours, lab_call, bf16)
    lab_recipe = Runner("lab, as the classroom recipe runs it (no dropout)", no_dropout, lab_call, bf16)
    compare([lab_same, lab_recipe, hf_default], batches, rounds=4)
    rows = [(lab_same, hf_default), (lab_recipe, hf_default)]
    if not args.no_compile:
        compiled = lab.BertForPreTraining(no_dropout.config)
        compiled.load_state_dict(ours.state_dict())
        compiled.compile()
        lab_compiled = Runner("lab, no dropout, --compile (torch.compile)", compiled, lab_call, bf16)
        t0 = time.perf_counter()
        for b in batches[:3]:
            lab_compiled.step(b)
        print(f"(torch.compile warm-up: {time.perf_counter() - t0:.0f} s)")
        compare([lab_compiled, hf_default], batches, rounds=4)
        rows.append((lab_compiled, hf_default))
    hf_bf16 = Runner("transformers, bf16 autocast", theirs, hf_call, torch.bfloat16)
    lab_bf16 = Runner("lab, same model (dropout 0.1), bf16 autocast", ours, lab_call, torch.bfloat16)
    compare([lab_bf16, hf_bf16], batches, rounds=4)
    rows.append((lab_bf16, hf_bf16))

    peak = matmul_flops()
    flops = step_flops(lab_recipe, batches[0])  # the same FLOPs for every pre-training row
    for a, _ in rows:
        a.flops = flops
    if not args.no_qa:
        rows += qa_rows(args)
    print(f"bf16 matmul 4096x4096 in this process: {peak / 1e9:.0f} GFLOP/s\n")
    print("| lab | lab tokens/s | MFU | reference | reference tokens/s | ratio |")
    print("|---|---:|---:|---|---:|---:|")
    for a, b in rows:
        achieved = a.flops * a.steps_per_s
        print(
            f"| {a.name} | {a.tokens_per_s:,.0f} | {achieved / peak:.2f} | {b.name} | {b.tokens_per_s:,.0f} | "
            f"{a.tokens_per_s / b.tokens_per_s:.1f}x |"
        )
    print(f"\nMFU = model FLOP/s (FlopCounterMode: {flops / 1e9:.2f} GFLOP per pre-training step) / the matmul rate")


def qa_rows(args):
    """Fine-tuning rows at the MiniLM shape (L=6 H=384 A=12, vocab 30522): question answering on
    16 x 256-token windows (half of them padded from token 200), the lab at its fine-tuning defaults
    (dropout 0.1, bf16 autocast) and without dropout, against transformers'
    BertForQuestionAnswering at its defaults (fp32, dropout 0.1)."""
    torch.manual_seed(0)
    shape = dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
    ours = lab.BertForQuestionAnswering(lab.BertConfig(**shape))
    no_dropout = lab.BertForQuestionAnswering(
        lab.BertConfig(**shape, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    )
    no_dropout.load_state_dict(ours.state_dict())
    theirs = transformers.BertForQuestionAnswering(transformers.BertConfig(**shape))
    theirs.load_state_dict(ours.state_dict(), strict=False)
    batches = qa_batches(30522, 16, 256, max(6, args.steps // 2) + 2)
    bf16 = autocast_dtype("auto", torch.device("cpu"))
    lab_ft = Runner(
        "MiniLM shape, QA fine-tuning, 16 x 256: lab at its defaults (dropout 0.1, bf16)", ours, qa_call, bf16
    )
    lab_nd = Runner("MiniLM shape, QA fine-tuning: lab without dropout", no_dropout, qa_call, bf16)
    hf = Runner("transformers BertForQuestionAnswering at its defaults (fp32, dropout 0.1)", theirs, qa_call, None)
    compare([lab_ft, lab_nd, hf], batches, rounds=2)
    flops = step_flops(lab_ft, batches[0])
    lab_ft.flops = lab_nd.flops = flops
    print(f"MiniLM QA step: {flops / 1e9:.1f} GFLOP (FlopCounterMode)")
    return [(lab_ft, hf), (lab_nd, hf)]


if __name__ == "__main__":
    main()
