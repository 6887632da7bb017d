"""Tests for the training loop (lab/training/train.py) through the pre-training objective and the CLI.

Hermetic and CPU-only: a tiny synthetic corpus of made-up words is written into a temporary
folder (Google's one-sentence-per-line format, blank lines between documents), models use the
"tiny" preset with a 200-token vocabulary, batches hold 4-8 sequences. Where two runs are
compared, the WordPiece vocabulary is trained once and passed to both with --tokenizer
(`Tokenizer.train` is not bit-for-bit reproducible between processes).
"""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import lab
from lab.__main__ import main
from lab.run_files import read_metrics
from lab.training.runs import STATE_NAME, latest_resumable, snapshot_steps
from lab.training.train import TrainConfig, TrainingError, lr_factor, make_optimizer, train

ROOT = Path(__file__).resolve().parents[1]
# the smallest model and data that still exercise everything; one thread per process, as two
# processes (DDP, or a run beside pytest) share this machine's 2 cores
SMALL = ["--preset", "tiny", "--eval-instances", "16", "--no-progress", "--threads", "1"]
EXACT = ["--precision", "fp32"]


@pytest.fixture(autouse=True)
def restore_threads():
    """In-process runs with --threads 1 change torch's global thread count: put it back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


# ----------------------------------------------------------------------------------------
# Fixtures: a corpus of made-up words and a vocabulary trained on it once
# ----------------------------------------------------------------------------------------
def make_sentences(seed: int = 0, documents: int = 30) -> list[list[str]]:
    """Documents of sentences of 8-14 words drawn from ~300 made-up words. Every sentence has at
    least 8 words, so every instance holds well over 14 maskable tokens (see the DDP test)."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "po", "ru", "sa", "ti", "vu", "ze", "ba", "do", "fe", "gi", "hu"]
    words = sorted(
        {rng.choice(syllables) + rng.choice(syllables) + rng.choice(["", "n", "r", "s"]) for _ in range(2000)}
    )[:300]
    return [
        [
            " ".join(rng.choice(words) for _ in range(rng.randint(8, 14))).capitalize() + "."
            for _ in range(rng.randint(6, 12))
        ]
        for _ in range(documents)
    ]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n\n".join("\n".join(doc) for doc in make_sentences()) + "\n")
    return path


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tokenizer")
    sentences = [s for doc in make_sentences() for s in doc]
    lab.Tokenizer.train(iter(sentences), vocab_size=200, show_progress=False).save(out)
    return out


def run_cli(args: list[str], timeout: float = 120, torchrun: int | None = None) -> subprocess.CompletedProcess:
    """`python -m lab ARGS` (or under torchrun with N processes) in a subprocess, from the repo root."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    launcher = [sys.executable, "-m", "lab"]
    if torchrun:
        launcher = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={torchrun}",
            "-m",
            "lab",
        ]
    proc = subprocess.run(launcher + args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def train_records(run: Path) -> list[dict]:
    return [r for r in read_metrics(run) if r["split"] == "train"]


# ----------------------------------------------------------------------------------------
# 1. Schedule, snapshots, optimizer groups
# ----------------------------------------------------------------------------------------
def test_lr_schedule_snapshots_and_weight_decay_groups(tiny_cfg):
    # linear warm-up over 10 steps: 0.1, 0.2, ..., 1.0 (the first step already learns)
    assert [lr_factor(s, 100, 10) for s in range(10)] == pytest.approx([(s + 1) / 10 for s in range(10)])
    assert lr_factor(10, 100, 10) == pytest.approx(1.0)  # peak right after warm-up
    assert lr_factor(55, 100, 10) == pytest.approx(0.5)  # half way down the decay
    assert lr_factor(99, 100, 10) == pytest.approx(1 / 90)  # the last step still learns
    assert lr_factor(100, 100, 10) == pytest.approx(0.0)
    # decay ends at min_ratio: 1 - frac * (1 - min_ratio)
    assert lr_factor(55, 100, 10, min_ratio=0.1) == pytest.approx(0.55)
    assert lr_factor(100, 100, 10, min_ratio=0.1) == pytest.approx(0.1)
    assert lr_factor(150, 100, 10, min_ratio=0.1) == pytest.approx(0.1)  # never below the floor
    assert lr_factor(0, 100, 0) == pytest.approx(1.0)  # no warm-up: start at the peak
    assert all(lr_factor(s, 100, 10) >= lr_factor(s + 1, 100, 10) for s in range(9, 100))

    assert snapshot_steps(1000, 5) == {0, 50, 200, 500, 1000}
    assert snapshot_steps(1000, 0) == set()
    assert snapshot_steps(100, 3) == {0, 25, 100}

    model = lab.BertForPreTraining(tiny_cfg)
    opt = make_optimizer(model, TrainConfig(weight_decay=0.01, lr=3e-4))
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    assert decay["lr"] == no_decay["lr"] == 3e-4
    group_of = {id(p): "decay" for p in decay["params"]} | {id(p): "no_decay" for p in no_decay["params"]}
    named = dict(model.named_parameters())
    assert len(group_of) == len(named)  # every parameter once
    for name, p in named.items():
        expected = "no_decay" if name.endswith(".bias") or "LayerNorm" in name else "decay"
        assert group_of[id(p)] == expected, name
    # the cases that matter, by name
    assert group_of[id(named["bert.encoder.layer.0.attention.output.LayerNorm.weight"])] == "no_decay"
    assert group_of[id(named["bert.encoder.layer.0.attention.self.query.bias"])] == "no_decay"
    assert group_of[id(named["bert.encoder.layer.0.attention.self.query.weight"])] == "decay"
    assert group_of[id(named["bert.embeddings.word_embeddings.weight"])] == "decay"


# ----------------------------------------------------------------------------------------
# 2. CLI smoke run: files, metrics, checkpoints, refusal to overwrite a run
# ----------------------------------------------------------------------------------------
def test_cli_options_and_help_come_from_the_settings_dataclasses(capsys):
    """Every field of the settings dataclasses is an option whose help is its setting(..., help)."""
    import dataclasses

    from lab.__main__ import build_parser
    from lab.training.finetune import ClassificationConfig, QAConfig
    from lab.training.pretrain import PretrainConfig

    for command, classes in (
        ("pretrain", (PretrainConfig, TrainConfig)),
        ("finetune-cls", (ClassificationConfig, TrainConfig)),
        ("finetune-qa", (QAConfig, TrainConfig)),
    ):
        with pytest.raises(SystemExit):
            build_parser().parse_args([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
        for cls in classes:
            for f in dataclasses.fields(cls):
                meaning = f.metadata["help"]
                assert meaning, f"{cls.__name__}.{f.name} has no help"
                flag = "--out" if f.name == "out_dir" else "--" + f.name.replace("_", "-")
                assert flag in text and " ".join(meaning.split()) in text, (command, f.name)
    args = build_parser().parse_args(
        [
            "pretrain",
            "--corpus",
            "c",
            "--out",
            "o",
            "--adam-betas",
            "0.8",
            "0.9",
            "--threads",
            "2",
            "--no-progress",
            "--dropout",
            "0",
        ]
    )
    assert (args.adam_betas, args.threads, args.progress, args.dropout, args.lr) == ([0.8, 0.9], 2, False, 0.0, None)


def test_cli_pretrain_smoke(corpus, tmp_path, capsys):
    run = tmp_path / "run"
    args = [
        "pretrain",
        "--corpus",
        str(corpus),
        "--out",
        str(run),
        *SMALL,
        "--vocab-size",
        "200",
        "--batch-size",
        "4",
        "--steps",
        "6",
        "--eval-every",
        "3",
        "--ckpt-every",
        "3",
        "--log-every",
        "1",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "final held-out evaluation" in out

    for name in [
        "config.json",
        "model.safetensors",
        "vocab.txt",
        "train_config.json",
        "pretrain_config.json",
        "metrics.jsonl",
    ]:
        assert (run / name).is_file(), name
    tc = json.loads((run / "train_config.json").read_text())
    assert tc["total_steps"] == 6 and tc["steps"] == 6 and tc["batch_size"] == 4
    assert json.loads((run / "pretrain_config.json").read_text())["preset"] == "tiny"

    records = read_metrics(run)
    train_recs = [r for r in records if r["split"] == "train"]
    eval_recs = [r for r in records if r["split"] == "eval"]
    assert [r["step"] for r in train_recs] == [1, 2, 3, 4, 5, 6]
    for r in train_recs:
        for key in [
            "step",
            "time",
            "tokens",
            "lr",
            "tokens_per_s",
            "loss",
            "mlm_loss",
            "mlm_acc",
            "mlm_acc_masked",
            "nsp_loss",
            "nsp_acc",
        ]:
            assert key in r, (key, r)
        assert r["loss"] == pytest.approx(r["mlm_loss"] + r["nsp_loss"], abs=1e-4)
        assert 0 <= r["mlm_acc"] <= 1 and 0 <= r["nsp_acc"] <= 1 and r["lr"] > 0
        assert 4 < r["mlm_loss"] < 7  # ln(200) = 5.3: an untrained model guesses
    tokens = [r["tokens"] for r in train_recs]
    assert all(a < b for a, b in zip(tokens, tokens[1:])), tokens
    assert [r["step"] for r in eval_recs] == [3, 6]
    for r in eval_recs:
        for key in ["mlm_loss", "mlm_acc", "mlm_acc_masked", "nsp_acc"]:
            assert key in r, (key, r)
    assert eval_recs[-1]["tokens"] == tokens[-1]

    model, tokenizer = lab.load(run)
    assert isinstance(model, lab.BertForPreTraining)
    assert tokenizer is not None and tokenizer.vocab_size == model.config.vocab_size == 200

    snapshots = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert snapshots[0] == "step-0000000" and snapshots[-1] == "step-0000006"
    assert not [n for n in snapshots if n.endswith(".tmp")]
    with_state = [n for n in snapshots if (run / "checkpoints" / n / STATE_NAME).is_file()]
    assert with_state == ["step-0000006"]  # only the newest resumes
    for n in snapshots:  # every snapshot is a model
        assert (run / "checkpoints" / n / "model.safetensors").is_file()

    # the same --out again without --resume: refused, and the existing run is left alone
    before = {
        n: (run / n).read_bytes() for n in ["pretrain_config.json", "metrics.jsonl", "vocab.txt", "model.safetensors"]
    }
    again = [
        "pretrain",
        "--corpus",
        str(corpus),
        "--out",
        str(run),
        *SMALL,
        "--vocab-size",
        "200",
        "--batch-size",
        "4",
        "--steps",
        "6",
        "--eval-instances",
        "8",
    ]
    assert main(again) == 2
    err = capsys.readouterr().err
    assert "--resume" in err and "error" in err
    assert {n: (run / n).read_bytes() for n in before} == before


# ----------------------------------------------------------------------------------------
# 3. Resume after SIGKILL == an uninterrupted run
# ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_resume_after_sigkill_matches_uninterrupted_run(corpus, tokenizer_dir, tmp_path):
    steps = 60
    common = [
        "pretrain",
        "--corpus",
        str(corpus),
        "--tokenizer",
        str(tokenizer_dir),
        *SMALL,
        *EXACT,
        "--batch-size",
        "4",
        "--steps",
        str(steps),
        "--ckpt-every",
        "10",
        "--log-every",
        "1",
        "--eval-every",
        "1000",
    ]  # dropout stays on: its RNG is resumed too
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "lab"]
    run_a, run_b = tmp_path / "a", tmp_path / "b"

    def logged_past_20() -> bool:
        """step-20 is complete and a few more steps were logged (which the resume must drop)."""
        if not (run_b / "checkpoints" / "step-0000020" / STATE_NAME).is_file():
            return False
        lines = (run_b / "metrics.jsonl").read_text().splitlines()
        return any(json.loads(l)["step"] >= 22 for l in lines[-3:] if l.endswith("}"))

    # A (uninterrupted) runs beside B's first, killed process: one core each
    a = subprocess.Popen(
        cmd + common + ["--out", str(run_a)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    b = subprocess.Popen(
        cmd + common + ["--out", str(run_b)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 90
        while not logged_past_20():
            assert b.poll() is None, "run B ended before the kill"
            assert time.monotonic() < deadline, "run B did not reach step 22 in 90 s"
            time.sleep(0.02)
        os.kill(b.pid, signal.SIGKILL)
        assert b.wait(timeout=30) == -signal.SIGKILL
        killed_at = max(r["step"] for r in train_records(run_b))
        resume_at = int(latest_resumable(run_b).name.split("-")[1])
        # the kill landed mid-run, after records the resumed run must drop (past its checkpoint)
        assert 20 <= resume_at < killed_at < steps, f"logged step {killed_at}, checkpoint {resume_at}"

        resumed = run_cli(common + ["--out", str(run_b), "--resume"])
        assert f"at step {resume_at}" in resumed.stdout, resumed.stdout
        out_a, _ = a.communicate(timeout=120)
        assert a.returncode == 0, out_a[-3000:]
    finally:
        for proc in (a, b):
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    rec_a, rec_b = train_records(run_a), train_records(run_b)
    steps_b = [r["step"] for r in rec_b]
    assert len(steps_b) == len(set(steps_b)), "duplicated steps in the resumed run's metrics"
    assert steps_b == list(range(1, steps + 1)) == [r["step"] for r in rec_a]
    for ra, rb in zip(rec_a, rec_b):
        assert rb["loss"] == pytest.approx(ra["loss"], abs=1e-6), ra["step"]
        assert rb["lr"] == pytest.approx(ra["lr"], rel=1e-12), ra["step"]
        assert rb["tokens"] == ra["tokens"], ra["step"]
    final_a = [r for r in read_metrics(run_a) if r["split"] == "eval"][-1]
    final_b = [r for r in read_metrics(run_b) if r["split"] == "eval"][-1]
    assert final_b["mlm_loss"] == pytest.approx(final_a["mlm_loss"], abs=1e-6)
    sd_a = lab.load(run_a)[0].state_dict()
    sd_b = lab.load(run_b)[0].state_dict()
    assert all(torch.equal(sd_a[k], sd_b[k]) for k in sd_a)


# ----------------------------------------------------------------------------------------
# 4. A NaN loss stops the run cleanly and leaves the last checkpoint intact
# ----------------------------------------------------------------------------------------
class NanAt:
    """Wraps an objective; the loss of micro-batch `index` is NaN."""

    def __init__(self, inner, index: int):
        self.inner, self.index, self.current = inner, index, None

    def train_batch(self, index):
        self.current = index
        return self.inner.train_batch(index)

    def loss(self, model, batch):
        loss, parts = self.inner.loss(model, batch)
        if self.current == self.index:
            return torch.tensor(float("nan"), requires_grad=True), parts
        return loss, parts

    def evaluate(self, model):
        return self.inner.evaluate(model)


def test_nan_loss_stops_with_a_clear_error(corpus, tokenizer_dir, tmp_path):
    from lab.data.instances import PretrainingData, SpecialIds
    from lab.training.pretrain import PretrainConfig, PretrainObjective, fixed_batches, load_corpus

    pc = PretrainConfig(preset="tiny", eval_instances=16)
    tokenizer = lab.Tokenizer.load(tokenizer_dir)
    train_docs, held_inst = load_corpus(corpus, pc, tokenizer, log=lambda *_: None)
    special = SpecialIds.from_vocab(tokenizer.vocab)
    data = PretrainingData(train_docs, special, batch_size=4, seed=0)
    objective = NanAt(PretrainObjective(data, fixed_batches(held_inst, special, pc), special.mask_id), 7)
    torch.manual_seed(0)
    model = lab.BertForPreTraining(lab.BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))
    run = tmp_path / "nan"
    cfg = TrainConfig(
        out_dir=str(run),
        steps=20,
        batch_size=4,
        ckpt_every=5,
        eval_every=0,
        log_every=1,
        precision="fp32",
        progress=False,
        threads=1,
    )
    with pytest.raises(TrainingError) as info:
        train(model, objective, cfg, tokenizer, log=lambda *_: None)
    message = str(info.value)
    # micro-batch 7 is the 8th optimizer step: metrics.jsonl logged steps 1..7 as good
    assert "nan" in message and "step 8" in message, message
    assert "step-0000005" in message, message
    assert [r["step"] for r in train_records(run)] == [1, 2, 3, 4, 5, 6, 7]

    good = run / "checkpoints" / "step-0000005"
    assert good.is_dir() and not (run / "checkpoints" / "step-0000007").exists()
    assert not list((run / "checkpoints").glob("*.tmp"))
    snap, _ = lab.load(good)
    state = torch.load(good / STATE_NAME, map_location="cpu", weights_only=True)
    assert state["step"] == 5 and state["total_steps"] == 20
    root, _ = lab.load(run)  # the run root: step 5's model
    assert all(torch.equal(v, root.state_dict()[k]) for k, v in snap.state_dict().items())
    assert all(torch.isfinite(p).all() for p in root.parameters())


def test_train_swaps_in_fast_dropout_and_checkpoints_stay_plain(corpus, tokenizer_dir, tmp_path):
    """lab.model builds plain nn.Dropout; train() trains with lab.training.fast_dropout.FastDropout (same p),
    and what it saves loads into a plain model with the very same tensors."""
    from torch import nn

    from lab.data.instances import PretrainingData, SpecialIds
    from lab.training.fast_dropout import FastDropout
    from lab.training.pretrain import PretrainConfig, PretrainObjective, fixed_batches, load_corpus

    pc = PretrainConfig(preset="tiny", eval_instances=16)
    tokenizer = lab.Tokenizer.load(tokenizer_dir)
    train_docs, held_inst = load_corpus(corpus, pc, tokenizer, log=lambda *_: None)
    special = SpecialIds.from_vocab(tokenizer.vocab)
    objective = PretrainObjective(
        PretrainingData(train_docs, special, batch_size=4, seed=0),
        fixed_batches(held_inst, special, pc),
        special.mask_id,
    )
    model = lab.BertForPreTraining(lab.BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))

    def dropouts(m):
        return {n: x for n, x in m.named_modules() if isinstance(x, nn.Dropout)}

    before = dropouts(model)
    assert before and all(type(d) is nn.Dropout for d in before.values())
    run = tmp_path / "fast"
    train(
        model,
        objective,
        TrainConfig(
            out_dir=str(run),
            steps=2,
            batch_size=4,
            eval_every=0,
            log_every=1,
            precision="fp32",
            progress=False,
            threads=1,
        ),
        tokenizer,
        log=lambda *_: None,
    )
    after = dropouts(model)
    assert after.keys() == before.keys() and all(type(d) is FastDropout for d in after.values())
    assert [d.p for d in after.values()] == [d.p for d in before.values()]
    saved, _ = lab.load(run)
    assert all(type(d) is nn.Dropout for d in dropouts(saved).values())
    assert saved.state_dict().keys() == model.state_dict().keys()
    assert all(torch.equal(v, model.state_dict()[k].cpu()) for k, v in saved.state_dict().items())


def test_fast_dropout_is_dropout():
    """FastDropout: a p share of zeros, the rest scaled by 1 / (1 - p'), identity in eval mode."""
    from lab.training.fast_dropout import FastDropout, use_fast_dropout

    torch.manual_seed(0)
    drop, x = FastDropout(0.1), torch.ones(400_000)
    y = drop.train()(x)
    zero = (y == 0).float().mean().item()
    assert zero == pytest.approx(0.1, abs=0.003)
    cut = round(0.1 * 65536)
    torch.testing.assert_close(y[y != 0], torch.full_like(y[y != 0], 65536 / (65536 - cut)))
    assert torch.equal(drop.eval()(x), x) and torch.equal(FastDropout(0.0).train()(x), x)
    assert y.dtype == x.dtype and FastDropout(0.5).train()(torch.ones(3, 5, dtype=torch.bfloat16)).shape == (3, 5)
    seq = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.2), torch.nn.Sequential(torch.nn.Dropout(0.3)))
    keys = seq.state_dict().keys()
    assert use_fast_dropout(seq) == 2 and [type(m).__name__ for m in (seq[1], seq[2][0])] == ["FastDropout"] * 2
    assert (seq[1].p, seq[2][0].p) == (0.2, 0.3) and seq.state_dict().keys() == keys


# ----------------------------------------------------------------------------------------
# 5. torchrun with 2 processes == one process with the global batch
# ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_ddp_two_processes_match_one_process(corpus, tokenizer_dir, tmp_path):
    import torch.distributed as tdist

    if not (tdist.is_available() and tdist.is_gloo_available()):
        pytest.skip("torch.distributed with the gloo backend is not available in this torch build")
    # Every sequence predicts exactly 2 tokens (at most 2 per sequence, every instance has well
    # over 14 maskable tokens, no short sequences): both halves of the global batch hold the same
    # number of predictions, so DDP's mean of per-rank mean gradients IS the global mean gradient
    # and the mean of the ranks' logged losses IS the global loss. What remains is float rounding
    # (sums over 4 rows instead of 8, gloo's all-reduce order). Measured: the logged numbers (5
    # decimals) were identical and the weights after 4 steps differed by at most 1.2e-7; the
    # bounds below allow 2 units in the 5th logged decimal and 1e-5 on a weight.
    # (With BERT's own 15% counts the halves weigh their tokens differently, as each shard of
    # Google's TPU code also averages over its own predictions: then the losses differed by up to
    # 5e-4 relative, grad norms by 3e-3 and weights by 3.6e-3 with these settings.)
    common = [
        "pretrain",
        "--corpus",
        str(corpus),
        "--tokenizer",
        str(tokenizer_dir),
        *SMALL,
        *EXACT,
        "--dropout",
        "0",
        "--steps",
        "4",
        "--log-every",
        "1",
        "--eval-every",
        "2",
        "--ckpt-every",
        "2",
        "--short-seq-prob",
        "0",
        "--max-predictions-per-seq",
        "2",
        "--lr",
        "1e-3",
    ]
    one, two = tmp_path / "one", tmp_path / "two"
    proc = run_cli(common + ["--out", str(two), "--batch-size", "4"], torchrun=2, timeout=180)
    assert "2 process(es)" in proc.stdout and "4 steps x 8 sequences" in proc.stdout
    run_cli(common + ["--out", str(one), "--batch-size", "8"])

    rec_1, rec_2 = train_records(one), train_records(two)
    assert [r["step"] for r in rec_2] == [r["step"] for r in rec_1] == [1, 2, 3, 4]  # rank 0 wrote once
    for r1, r2 in zip(rec_1, rec_2):
        for key in ["loss", "mlm_loss", "nsp_loss", "grad_norm", "mlm_acc", "nsp_acc"]:
            assert r2[key] == pytest.approx(r1[key], abs=2e-5), (r1["step"], key, r1[key], r2[key])
        assert r2["lr"] == r1["lr"]
        assert r2["tokens"] == r1["tokens"]  # every rank's tokens are counted
    ev_1 = [r for r in read_metrics(one) if r["split"] == "eval"]
    ev_2 = [r for r in read_metrics(two) if r["split"] == "eval"]
    assert [r["step"] for r in ev_2] == [2, 4]
    for e1, e2 in zip(ev_1, ev_2):
        assert e2["mlm_loss"] == pytest.approx(e1["mlm_loss"], abs=2e-5)

    sd_1, sd_2 = lab.load(one)[0].state_dict(), lab.load(two)[0].state_dict()
    init = lab.load(one / "checkpoints" / "step-0000000")[0].state_dict()
    moved = max((sd_1[k] - init[k]).abs().max().item() for k in sd_1)
    diff = max((sd_1[k] - sd_2[k]).abs().max().item() for k in sd_1)
    assert moved > 1e-3  # 4 steps at lr 1e-3 did change the weights...
    assert diff < 1e-5, diff  # ...the same way in both runs

    # only rank 0 wrote: one metrics file, one checkpoints folder, no stray per-rank folders
    assert sorted(p.name for p in two.iterdir()) == sorted(p.name for p in one.iterdir())
    assert sorted(p.name for p in (two / "checkpoints").iterdir()) == sorted(
        p.name for p in (one / "checkpoints").iterdir()
    )
    assert len(read_metrics(two)) == len(read_metrics(one))


# ----------------------------------------------------------------------------------------
# 6. A time budget instead of a step count
# ----------------------------------------------------------------------------------------
def test_minutes_budget_sets_steps_and_stops_on_time(corpus, tokenizer_dir, tmp_path, capsys):
    run = tmp_path / "timed"
    budget = 0.05 * 60
    t0 = time.perf_counter()
    assert (
        main(
            [
                "pretrain",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(tokenizer_dir),
                "--out",
                str(run),
                *SMALL,
                "--batch-size",
                "4",
                "--minutes",
                "0.05",
                "--log-every",
                "1",
                "--eval-every",
                "0",
                "--ckpt-every",
                "1000",
            ]
        )
        == 0
    )
    wall = time.perf_counter() - t0
    out = capsys.readouterr().out
    assert "speed probe" in out
    tc = json.loads((run / "train_config.json").read_text())
    assert tc["steps"] is None and tc["minutes"] == 0.05
    total = tc["total_steps"]
    assert total > 1
    recs = train_records(run)
    last = recs[-1]
    if "time budget reached" not in out:  # the probe was right: all its steps ran
        assert last["step"] == total
    assert last["step"] <= total
    assert budget * 0.25 <= last["time"] <= budget + 2.0, last
    assert wall < budget + 20, wall  # start-up + probe + budget + final eval
    assert (run / "checkpoints" / f"step-{last['step']:07d}" / STATE_NAME).is_file()


# ----------------------------------------------------------------------------------------
# Recipes with phases (sequence-length warm-up)
# ----------------------------------------------------------------------------------------
def test_two_phase_recipe_continues_from_the_first_phase(tmp_path, corpus, tokenizer_dir, monkeypatch):
    from lab.training import pretrain as pt

    monkeypatch.setitem(
        pt.RECIPES,
        "two",
        [
            pt.Phase(
                "short",
                pt.PretrainConfig(preset="tiny", max_seq_length=16, eval_seq_length=32, eval_instances=16),
                TrainConfig(batch_size=8, lr=1e-3, eval_every=2, ckpt_every=2, log_every=1),
                share=0.5,
            ),
            pt.Phase(
                "long",
                pt.PretrainConfig(max_seq_length=32, eval_seq_length=32, eval_instances=16),
                TrainConfig(batch_size=4, lr=1e-3, eval_every=2, ckpt_every=2, log_every=1),
                share=0.5,
            ),
        ],
    )
    out = tmp_path / "run"
    assert (
        main(
            [
                "pretrain",
                "--recipe",
                "two",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(tokenizer_dir),
                "--out",
                str(out),
                "--steps",
                "8",
                "--no-progress",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    first = out / "phase1-short"
    assert json.loads((first / "train_config.json").read_text())["total_steps"] == 4
    assert json.loads((first / "pretrain_config.json").read_text())["max_seq_length"] == 16
    final_cfg = json.loads((out / "pretrain_config.json").read_text())
    assert final_cfg["max_seq_length"] == 32 and final_cfg["init_from"] == str(first)
    # the second phase starts from the first phase's weights, not from a random init
    start, _ = lab.load(out / "checkpoints" / "step-0000000")
    end_of_first, _ = lab.load(first)
    for (name, a), b in zip(start.state_dict().items(), end_of_first.state_dict().values()):
        assert torch.equal(a, b), name
    # one curve across both phases: steps and time keep increasing
    records = [r for r in read_metrics(out) if r["split"] == "train"]
    assert [r["step"] for r in records] == list(range(1, 9))
    assert all(b["time"] >= a["time"] for a, b in zip(records, records[1:]))
    assert {r["phase"] for r in records} == {"phase1-short", "final"}
    # resuming a finished recipe skips both phases and changes nothing
    before = (out / "model.safetensors").read_bytes()
    assert (
        main(
            [
                "pretrain",
                "--recipe",
                "two",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(tokenizer_dir),
                "--out",
                str(out),
                "--steps",
                "8",
                "--no-progress",
                "--threads",
                "1",
                "--resume",
            ]
        )
        == 0
    )
    assert (out / "model.safetensors").read_bytes() == before


def test_eval_fill_mask_and_plot_commands(corpus, tokenizer_dir, tmp_path, capsys):
    """The commands that report on a run: eval reproduces the run's own held-out figures."""
    run = tmp_path / "run"
    assert (
        main(
            [
                "pretrain",
                "--corpus",
                str(corpus),
                "--tokenizer",
                str(tokenizer_dir),
                "--out",
                str(run),
                *SMALL,
                *EXACT,
                "--eval-instances",
                "1000",
                "--batch-size",
                "4",
                "--steps",
                "4",
            ]
        )
        == 0
    )
    last = [r for r in read_metrics(run) if r["split"] == "eval"][-1]
    capsys.readouterr()
    assert main(["eval", "--model", str(run), "--corpus", str(corpus), "--split", "held-out"]) == 0
    held = json.loads(capsys.readouterr().out)
    # the same held-out documents, instances and masks as the run's final evaluation
    assert held["predictions"] == last["predictions"]
    assert held["mlm_acc"] == pytest.approx(last["mlm_acc"], abs=1e-4)
    assert held["nsp_acc"] == pytest.approx(last["nsp_acc"], abs=1e-4)
    assert main(["eval", "--model", str(run), "--corpus", str(corpus)]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 30  # every document
    assert main(["fill-mask", "--model", str(run), "--top-k", "3", "ka [MASK] lo ."]) == 0
    assert "[MASK] 1:" in capsys.readouterr().out
    assert main(["fill-mask", "--model", str(run), "no mask here"]) == 2
    assert main(["plot", str(run), "--out", str(tmp_path / "curve.png")]) == 0
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"
