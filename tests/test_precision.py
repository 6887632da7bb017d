"""Precision by measurement (lab/device.py choose_precision, explore.choose_bf16, app.py's
banner, the training loop's precision "auto"): bf16 only where it is measurably faster.

Hermetic: the CPU's flags are monkeypatched (this test does not depend on the machine's CPU),
and where a choice must come out one way a fake clock makes each side win."""

import json
from argparse import Namespace
from types import SimpleNamespace

import pytest
import torch
from torch import nn

import app
import lab
from lab import device as lab_device
from lab.data.batch import Batch
from lab.device import PrecisionChoice, autocast_dtype, choose_precision, forget_precision_choices
from lab.inspect import explore
from lab.training import train as train_module
from lab.training.train import TrainConfig, train

CPU = torch.device("cpu")
AVX512_BF16 = frozenset({"avx2", "avx512f", "avx512_bf16"})  # AMD Zen 4: bf16 instructions, no AMX tiles
AMX = frozenset({"avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})
NO_BF16 = frozenset({"avx2", "fma"})


@pytest.fixture(autouse=True)
def fresh_choices():
    forget_precision_choices()
    yield
    forget_precision_choices()
    explore.use_bf16(False)


def with_flags(monkeypatch, flags):
    monkeypatch.setattr(lab_device, "cpu_flags", lambda: flags)


class FakeClock:
    """A clock that run() advances: `fp32` seconds per call without autocast, `bf16` under it."""

    def __init__(self, fp32: float, bf16: float):
        self.now, self.fp32, self.bf16, self.calls = 0.0, fp32, bf16, {"fp32": 0, "bf16": 0}

    def __call__(self) -> float:
        return self.now

    def run(self):
        side = "bf16" if torch.is_autocast_enabled("cpu") else "fp32"
        self.calls[side] += 1
        self.now += getattr(self, side)


@pytest.mark.parametrize(("fp32", "bf16", "chosen"), [(0.030, 0.020, torch.bfloat16), (0.030, 0.090, None)])
def test_the_choice_follows_the_measurement(monkeypatch, fp32, bf16, chosen):
    with_flags(monkeypatch, AVX512_BF16)
    clock = FakeClock(fp32, bf16)
    choice = choose_precision(clock.run, CPU, key=None, budget_s=1.0, clock=clock)
    assert choice.dtype == chosen and "measured" in choice.reason
    assert choice.fp32_ms == pytest.approx(1000 * fp32) and choice.bf16_ms == pytest.approx(1000 * bf16)
    # one warm-up each, then pairs: alternating, as many as fit into the budget (warm-ups included)
    assert clock.calls["fp32"] == clock.calls["bf16"] >= 2
    assert clock.now <= 1.0 + fp32 + bf16


def test_bf16_must_be_faster_by_the_margin_and_a_slow_run_still_gets_one_pair(monkeypatch):
    with_flags(monkeypatch, AVX512_BF16)
    close = FakeClock(0.100, 0.097)  # 3% faster: not enough
    assert choose_precision(close.run, CPU, key=None, clock=close).dtype is None
    slow = FakeClock(2.0, 1.0)  # one call is over the budget: warm-ups and one timed pair, no more
    choice = choose_precision(slow.run, CPU, key=None, budget_s=1.0, clock=slow)
    assert choice.dtype == torch.bfloat16 and slow.calls == {"fp32": 2, "bf16": 2}


def test_known_hardware_needs_no_timing(monkeypatch):
    def never():
        raise AssertionError("timed where the hardware settles it")

    with_flags(monkeypatch, AMX)
    amx = choose_precision(never, CPU, key=None)
    assert amx.dtype == torch.bfloat16 and "AMX" in amx.reason and amx.fp32_ms is None
    assert autocast_dtype("auto", CPU) == torch.bfloat16
    with_flags(monkeypatch, NO_BF16)
    assert choose_precision(never, CPU, key=None).dtype is None
    assert autocast_dtype("auto", CPU) is None and autocast_dtype("bf16", CPU) == torch.bfloat16  # bf16 overrides
    cuda = torch.device("cuda", 0)
    for supported, dtype in ((True, torch.bfloat16), (False, None)):
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, s=supported, **k: s)
        choice = choose_precision(never, cuda, key=None)
        assert choice.dtype == dtype and "CUDA" in choice.reason
        assert autocast_dtype("auto", cuda) == dtype and autocast_dtype("fp32", cuda) is None


def test_a_cpu_without_amx_is_measured_where_there_is_something_to_time(monkeypatch):
    with_flags(monkeypatch, AVX512_BF16)
    assert autocast_dtype("auto", CPU) is None  # nothing measured: fp32
    nothing = choose_precision(None, CPU, key=None)
    assert nothing.dtype is None and nothing.reason == "nothing was timed"


def test_the_choice_is_made_once_per_key(monkeypatch):
    with_flags(monkeypatch, AVX512_BF16)
    clock = FakeClock(0.030, 0.020)
    first = choose_precision(clock.run, CPU, key=("forward", 1), clock=clock)
    calls = dict(clock.calls)
    again = choose_precision(clock.run, CPU, key=("forward", 1), clock=clock)
    assert again is first and clock.calls == calls  # not timed again
    other = FakeClock(0.030, 0.090)
    assert choose_precision(other.run, CPU, key=("forward", 2), clock=other).dtype is None


def test_the_banner_names_the_choice_and_its_timings():
    measured = PrecisionChoice(None, "measured, bf16 not faster", 35.04, 95.0)
    assert measured.describe() == "fp32 (measured, bf16 not faster: fp32 35.0 ms, bf16 95.0 ms)"
    line = app.precision_line("auto", measured, model="models/minilm-squad")
    assert line.startswith("fp32 (measured, bf16 not faster: fp32 35.0 ms, bf16 95.0 ms) on models/minilm-squad")
    known = app.precision_line("auto", PrecisionChoice(torch.bfloat16, "a CPU with AMX tiles"), model="m")
    assert known.startswith("bf16 (a CPU with AMX tiles);")
    assert app.precision_line("fp32") == "fp32 (--precision fp32)"
    assert app.precision_line("bf16", on=True) == "bf16 (--precision bf16)"
    args = Namespace(host="127.0.0.1", port=7860, share=False)
    assert f"  precision: {line}\n" in app.banner(args, downloads=True, local=True, precision=line)
    assert "precision" not in app.banner(args, downloads=True, local=True)


@pytest.fixture(scope="module")
def tiny_mlm():
    torch.manual_seed(0)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "who", "?", "."]
    tok = lab.Tokenizer({w: i for i, w in enumerate(vocab)})
    cfg = lab.BertConfig.preset("tiny", vocab_size=len(vocab))
    return lab.BertForPreTraining(cfg).eval(), tok


class FakeStore:
    def __init__(self, model, tok):
        self.pair, self.asked = (model, tok), []

    def default_model(self, task=None):
        self.asked.append(task)
        return "models/tiny"

    def get(self, name):
        return self.pair


@pytest.mark.parametrize(("flags", "on"), [(AMX, True), (NO_BF16, False)])
def test_the_dashboard_turns_bf16_on_only_where_it_was_chosen(monkeypatch, tiny_mlm, flags, on):
    with_flags(monkeypatch, flags)
    store = FakeStore(*tiny_mlm)
    line = app.set_precision(Namespace(precision="auto", model=None), store, explore)
    assert store.asked == ["answer"] and line.startswith("bf16" if on else "fp32")
    assert (explore.fast_dtype(CPU) is not None) is on
    assert app.set_precision(Namespace(precision="fp32", model=None), store, explore) == "fp32 (--precision fp32)"
    assert explore.fast_dtype(CPU) is None  # the override wins


def test_choose_bf16_times_the_real_forward_and_follows_its_choice(monkeypatch, tiny_mlm):
    with_flags(monkeypatch, AVX512_BF16)
    model, tok = tiny_mlm
    choice = explore.choose_bf16(model, tok, budget_s=0.2)
    assert choice.fp32_ms > 0 and choice.bf16_ms > 0 and "measured" in choice.reason
    assert explore.fast_dtype(CPU) == choice.dtype and not model.training


# ----------------------------------------------------------------------------------------
# Training: precision "auto" times one step, which leaves no trace, and records its choice
# ----------------------------------------------------------------------------------------
class Toy(nn.Module):
    """A two-layer regression with dropout: a training step in a millisecond."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.drop = nn.Linear(8, 16), nn.Linear(16, 1), nn.Dropout(0.5)
        self.config = SimpleNamespace(to_dict=dict)  # what a checkpoint writes as config.json: {}

    def forward(self, x):
        return self.b(self.drop(torch.relu(self.a(x))))


class ToyObjective:
    def train_batch(self, index):
        g = torch.Generator().manual_seed(index)
        return Batch(input_ids=torch.randn(4, 8, generator=g), labels=torch.randn(4, 1, generator=g))

    def loss(self, model, batch):
        loss = ((model(batch.input_ids).float() - batch.labels) ** 2).mean()
        return loss, {}

    def evaluate(self, model):
        return {"eval_loss": float(self.loss(model, self.train_batch(10_000))[0])}


def test_a_timed_training_step_changes_no_weight_gradient_or_random_stream():
    torch.manual_seed(0)
    model = Toy().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    run = train_module.training_step(model, ToyObjective(), ToyObjective().train_batch(0))
    for dtype in (None, torch.bfloat16):
        with lab_device.autocast(CPU, dtype):
            run()
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    assert all(p.grad is None for p in model.parameters()) and torch.equal(torch.get_rng_state(), rng)


def toy_run(tmp_path, precision="auto", steps=2, resume=False, logs=None):
    torch.manual_seed(0)
    model = Toy()
    cfg = TrainConfig(
        out_dir=str(tmp_path), steps=steps, batch_size=4, precision=precision, eval_every=0, progress=False
    )
    train(model, ToyObjective(), cfg, resume=resume, log=(logs.append if logs is not None else lambda *_: None))
    return json.loads((tmp_path / "train_config.json").read_text()), model


@pytest.mark.parametrize(("fp32", "bf16", "autocast"), [(0.030, 0.020, "torch.bfloat16"), (0.030, 0.090, "None")])
def test_training_auto_times_a_step_and_records_its_choice(monkeypatch, tmp_path, fp32, bf16, autocast):
    with_flags(monkeypatch, AVX512_BF16)
    clock = FakeClock(fp32, bf16)
    real = lab_device.time_both_ways

    def timed(run, device, budget_s, clock_):  # the real step runs; the fake clock says how long it took
        return real(lambda: (run(), clock.run()), device, budget_s, clock)

    monkeypatch.setattr(lab_device, "time_both_ways", timed)
    logs = []
    recorded, timed_model = toy_run(tmp_path / "run", logs=logs)
    assert recorded["autocast"] == autocast and "measured" in recorded["precision_choice"]
    assert f"fp32 {1000 * fp32:.1f} ms, bf16 {1000 * bf16:.1f} ms" in recorded["precision_choice"]
    assert any(line.startswith("precision: ") and "training step" in line for line in logs), logs
    # bit for bit what the run trains with this precision untimed: the timed step left no trace
    _, plain = toy_run(tmp_path / "plain", precision="bf16" if autocast != "None" else "fp32")
    assert all(torch.equal(v, plain.state_dict()[k]) for k, v in timed_model.state_dict().items())


def test_a_resumed_auto_run_keeps_the_precision_it_recorded(monkeypatch, tmp_path):
    with_flags(monkeypatch, AVX512_BF16)
    run_dir = tmp_path / "run"
    (run_dir).mkdir()
    (run_dir / "train_config.json").write_text(json.dumps({"autocast": "torch.bfloat16"}))

    def never(*a, **k):
        raise AssertionError("a resumed run timed again")

    monkeypatch.setattr(lab_device, "time_both_ways", never)
    cfg = TrainConfig(out_dir=str(run_dir), steps=2, precision="auto")
    logs = []
    dtype, why = train_module.run_precision(
        Toy(), ToyObjective(), cfg, CPU, lab_device.Dist(), run_dir, {"step": 1}, logs.append
    )
    assert dtype == torch.bfloat16 and "recorded" in why and "bf16" in logs[0]
    fp32, _ = train_module.run_precision(
        Toy(), ToyObjective(), TrainConfig(precision="fp32"), CPU, lab_device.Dist(), run_dir, {"step": 1}, logs.append
    )
    assert fp32 is None  # an explicit --precision still wins
