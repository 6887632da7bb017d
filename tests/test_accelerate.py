"""`accelerate launch` as a second launcher beside torchrun (docs/deploy.md).

What accelerate 1.x does with the lab's commands, as these tests show:
- `accelerate launch --multi_gpu --num_processes N -m lab ...` runs torchrun's launcher inside
  accelerate: every process gets RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR, lab.device joins
  the process group (gloo where there is no GPU), and the run equals torchrun's.
- `accelerate launch --cpu --num_processes N` starts ONE process (its multi-CPU path is mpirun
  with a host file); the lab refuses that in one line instead of training alone.

Hermetic: a made-up corpus and a tiny random model written here; one thread per process.
"""

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import lab
from lab.device import lone_process_problem
from lab.run_files import read_metrics

ROOT = Path(__file__).resolve().parents[1]
ONE_THREAD = ["--no-progress", "--threads", "1", "--precision", "fp32"]


# ----------------------------------------------------------------------------------------
# Which launches are refused (no process is started: the environment alone)
# ----------------------------------------------------------------------------------------
def test_lone_process_launches_are_named():
    assert lone_process_problem({}) is None  # python -m lab ...
    assert lone_process_problem({"ACCELERATE_USE_CPU": "True"}) is None  # accelerate launch --cpu, 1 process
    assert lone_process_problem({"OMPI_COMM_WORLD_SIZE": "1"}) is None  # mpirun -n 1
    problem = lone_process_problem({"ACCELERATE_USE_CPU": "True", "MASTER_ADDR": "127.0.0.1"})
    assert problem.startswith("accelerate launch --cpu") and "--multi_gpu" in problem and "\n" not in problem
    problem = lone_process_problem({"PMI_SIZE": "4"})
    assert "mpirun (PMI_SIZE=4)" in problem and "torchrun --nproc_per_node" in problem


# ----------------------------------------------------------------------------------------
# Real launches (slow: each process imports torch; 2 processes share 2 cores)
# ----------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args: list[str], tmp: Path, accelerate: list[str] | None = None, torchrun: int | None = None):
    """`python -m lab ARGS` alone, under `accelerate launch ACCELERATE`, or under torchrun with N
    processes, from the repo root. accelerate reads no user config (HF_HOME in tmp)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", "HF_HOME": str(tmp / "hf-home")}
    if accelerate is not None:
        cmd = [sys.executable, "-m", "accelerate.commands.launch", *accelerate, "-m", "lab"]
    elif torchrun:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={torchrun}", "-m"]
        cmd += ["lab"]
    else:
        cmd = [sys.executable, "-m", "lab"]
    return run(cmd + args, env, timeout=240)


def run(cmd: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    """The command from the repo root. One that hangs fails with what it printed so far, and its
    processes go with it: the launcher and every worker (torch's launcher starts each worker in a
    session of its own, so killing the launcher alone would leave them waiting in gloo)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        import psutil

        try:
            family = [*psutil.Process(proc.pid).children(recursive=True), psutil.Process(proc.pid)]
        except psutil.NoSuchProcess:
            family = []
        for p in family:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        out, err = proc.communicate()
        pytest.fail(f"{' '.join(cmd[:8])} ... ran past {timeout:.0f} s\n{out[-3000:]}\n{err[-3000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def two_processes() -> list[str]:
    """accelerate's torchrun-style launch of 2 processes, every default named (no config file)."""
    return [
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(free_port()),
    ]


def ok(proc) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def weights_differ(a: Path, b: Path) -> float:
    sd_a, sd_b = lab.load(a)[0].state_dict(), lab.load(b)[0].state_dict()
    assert sd_a.keys() == sd_b.keys()
    return max((sd_a[k] - sd_b[k]).abs().max().item() for k in sd_a)


@pytest.fixture(scope="module")
def gloo():
    import torch.distributed as tdist

    if not (tdist.is_available() and tdist.is_gloo_available()):
        pytest.skip("torch.distributed with the gloo backend is not available in this torch build")
    pytest.importorskip("accelerate", reason="accelerate comes with the [distributed] extra (in [dev])")


@pytest.mark.slow
def test_accelerate_processes_see_rank_world_size_and_gloo(gloo, tmp_path):
    # the variables each process is given, and the process group lab.device joins with them; an
    # all-reduce of the ranks proves the two processes talk to each other
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "import torch, torch.distributed as tdist\n"
        "from lab.device import init_distributed\n"
        "d = init_distributed(torch.device('cpu'))\n"
        "t = torch.tensor([float(d.rank)]); tdist.all_reduce(t)\n"
        "print(f'rank {d.rank} of {d.world_size} local {d.local_rank} backend {tdist.get_backend()} '\n"
        '      f\'env {os.environ["RANK"]}/{os.environ["WORLD_SIZE"]} sum {t.item():g}\', flush=True)\n'
        "tdist.destroy_process_group()\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HOME": str(tmp_path / "hf-home")}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", *two_processes(), str(probe)]
    proc = ok(run(cmd, env, timeout=120))
    lines = sorted(re.findall(r"rank \d of \d local \d backend \w+ env \d/\d sum \d", proc.stdout))  # may interleave
    assert lines == [
        "rank 0 of 2 local 0 backend gloo env 0/2 sum 1",
        "rank 1 of 2 local 1 backend gloo env 1/2 sum 1",
    ], proc.stdout


@pytest.mark.slow
def test_accelerate_pretrain_matches_one_process_with_the_global_batch(gloo, tmp_path):
    # the torchrun test's settings (tests/test_train.py): every sequence predicts exactly 2 tokens,
    # so DDP's mean of the two halves' mean gradients is the global batch's mean gradient
    from test_train import make_sentences

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(doc) for doc in make_sentences()) + "\n")
    vocab = tmp_path / "tokenizer"
    lab.Tokenizer.train(iter([s for d in make_sentences() for s in d]), vocab_size=200, show_progress=False).save(vocab)
    common = ["pretrain", "--corpus", str(corpus), "--tokenizer", str(vocab), "--preset", "tiny"]
    common += ["--eval-instances", "16", *ONE_THREAD, "--dropout", "0", "--steps", "4", "--log-every", "1"]
    common += ["--eval-every", "2", "--ckpt-every", "2", "--short-seq-prob", "0", "--max-predictions-per-seq", "2"]
    common += ["--lr", "1e-3"]
    one, two = tmp_path / "one", tmp_path / "two"
    proc = ok(launch(common + ["--out", str(two), "--batch-size", "4"], tmp_path, accelerate=two_processes()))
    assert "2 process(es)" in proc.stdout and "4 steps x 8 sequences" in proc.stdout, proc.stdout[-2000:]
    ok(launch(common + ["--out", str(one), "--batch-size", "8"], tmp_path))

    assert json.loads((two / "train_config.json").read_text())["world_size"] == 2
    rec_1 = [r for r in read_metrics(one) if r["split"] == "train"]
    rec_2 = [r for r in read_metrics(two) if r["split"] == "train"]
    assert [r["step"] for r in rec_2] == [r["step"] for r in rec_1] == [1, 2, 3, 4]  # rank 0 wrote once
    for r1, r2 in zip(rec_1, rec_2):
        for key in ["loss", "mlm_loss", "nsp_loss", "grad_norm"]:
            assert r2[key] == pytest.approx(r1[key], abs=2e-5), (r1["step"], key, r1[key], r2[key])
        assert r2["tokens"] == r1["tokens"]  # both ranks' tokens are counted
    init = one / "checkpoints" / "step-0000000"
    assert weights_differ(one, init) > 1e-3  # the 4 steps did change the weights...
    assert weights_differ(one, two) < 1e-5  # ...the same way under accelerate
    assert sorted(p.name for p in two.iterdir()) == sorted(p.name for p in one.iterdir())  # no per-rank files


@pytest.fixture
def classification(tmp_path) -> tuple[Path, Path]:
    """A tiny random BERT and a sentiment-like task of made-up rows (tests/test_finetune.py's kind)."""
    import random

    rng = random.Random(0)
    good, bad, filler = ["good", "great", "fine"], ["bad", "dull", "awful"], "the film was very a plot it".split()
    data = tmp_path / "task"
    data.mkdir()
    for name, n in (("train.tsv", 64), ("dev.tsv", 32)):
        rows = []
        for _ in range(n):
            label = rng.randint(0, 1)
            words = [rng.choice(filler) for _ in range(rng.randint(3, 7))] + [rng.choice(good if label else bad)]
            rows.append(f"{' '.join(words)}\t{label}\n")
        (data / name).write_text("sentence\tlabel\n" + "".join(rows))
    tok = lab.Tokenizer.train(iter([" ".join(good + bad + filler)] * 20), vocab_size=80, show_progress=False)
    cfg = lab.BertConfig(
        vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37
    )
    torch.manual_seed(0)
    model = tmp_path / "base"
    lab.save(lab.BertForPreTraining(cfg), tok, model)
    return model, data


@pytest.mark.slow
def test_accelerate_finetune_matches_torchrun(gloo, classification, tmp_path):
    # the same fine-tuning command, unchanged, under both launchers with 2 processes: the same run
    model, data = classification
    common = ["finetune-cls", "--model", str(model), "--train", str(data / "train.tsv"), "--dev", str(data / "dev.tsv")]
    common += [*ONE_THREAD, "--dropout", "0", "--batch-size", "8", "--steps", "4", "--lr", "3e-3"]
    common += ["--log-every", "1", "--eval-every", "2"]
    acc, tr = tmp_path / "accelerate", tmp_path / "torchrun"
    proc = ok(launch(common + ["--out", str(acc)], tmp_path, accelerate=two_processes()))
    assert "2 process(es)" in proc.stdout, proc.stdout[-2000:]
    ok(launch(common + ["--out", str(tr)], tmp_path, torchrun=2))
    m_acc, m_tr = read_metrics(acc), read_metrics(tr)
    assert [(r["split"], r["step"]) for r in m_acc] == [(r["split"], r["step"]) for r in m_tr]
    for a, t in zip(m_acc, m_tr):
        for key in ("loss", "grad_norm", "accuracy"):
            if key in t:
                assert a[key] == pytest.approx(t[key], abs=2e-5), (t["step"], key)
    assert weights_differ(acc, tr) < 1e-5


@pytest.mark.slow
def test_finetune_on_two_processes_equals_one_process_with_the_global_batch(gloo, classification, tmp_path):
    # fine-tuning splits each global batch between the processes, as pre-training does: 2 processes
    # of 4 rows a step are one process of 8 (a classifier's loss is a mean over equal halves, so
    # DDP's mean of the two gradients is the whole batch's); --epochs counts passes over the data
    model, data = classification
    common = ["finetune-cls", "--model", str(model), "--train", str(data / "train.tsv"), "--dev", str(data / "dev.tsv")]
    common += [*ONE_THREAD, "--dropout", "0", "--epochs", "1", "--lr", "3e-3", "--log-every", "1"]
    one, two = tmp_path / "one", tmp_path / "two"
    proc = ok(launch(common + ["--out", str(two), "--batch-size", "4"], tmp_path, torchrun=2))
    assert "8 steps x 8 sequences" in proc.stdout, proc.stdout[-2000:]  # 64 rows / (4 x 2 processes)
    ok(launch(common + ["--out", str(one), "--batch-size", "8"], tmp_path))
    rec_1 = [r for r in read_metrics(one) if r["split"] == "train"]
    rec_2 = [r for r in read_metrics(two) if r["split"] == "train"]
    assert [r["step"] for r in rec_2] == [r["step"] for r in rec_1] == list(range(1, 9))
    for r1, r2 in zip(rec_1, rec_2):
        for key in ("loss", "acc", "grad_norm"):
            assert r2[key] == pytest.approx(r1[key], abs=2e-5), (r1["step"], key, r1[key], r2[key])
    assert weights_differ(one, two) < 1e-5


@pytest.mark.slow
def test_accelerate_cpu_flag_with_two_processes_is_refused_in_one_line(gloo, classification, tmp_path):
    # accelerate launch --cpu --num_processes 2 starts one process: the lab says so instead of
    # training alone (with an MPI host file there would be two, each training alone into --out)
    model, data = classification
    args = ["finetune-cls", "--model", str(model), "--train", str(data / "train.tsv"), "--dev", str(data / "dev.tsv")]
    args += [*ONE_THREAD, "--steps", "1", "--out", str(tmp_path / "run")]
    flags = [
        "--cpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
    ]
    proc = launch(args, tmp_path, accelerate=flags)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert errors and "accelerate launch --cpu" in errors[0] and "--multi_gpu" in errors[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr.split("error: ")[0]  # the lab's one line, not a stack trace
    assert not (tmp_path / "run" / "checkpoints").exists()
