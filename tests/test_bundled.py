"""The bundled models: each loads, has a model card, stays small, and its recorded held-out
metrics are reproduced by `python -m lab eval` on the shared data (skipped when it is absent).

Each models/<name>/ holds metrics.json: {"evaluations": [{"args": [...], "metrics": {...}}]},
the `python -m lab eval` arguments (DATA stands for the data folder, ../shared/data) and what
they printed when the model was made; the model card (README.md) shows the same numbers.
"""

import json

import pytest

import lab
from lab.__main__ import main
from tests.conftest import ROOT, SHARED_DATA

MODELS = sorted(p for p in (ROOT / "models").iterdir() if (p / "config.json").is_file())
EXPECTED_CLASS = {  # the first key in a model's name
    "classroom-modern": lab.BertForMaskedLM,  # pre-trained without NSP: no NSP head
    "classroom": lab.BertForPreTraining,
    "sst2": lab.BertForSequenceClassification,
    "squad": lab.BertForQuestionAnswering,
    "ner": lab.BertForTokenClassification,
}


def test_the_bundled_models_are_there_and_small():
    names = {p.name for p in MODELS}
    assert {
        "bert-lab-classroom",
        "bert-lab-classroom-modern",
        "bert-lab-sst2",
        "bert-lab-squad",
        "minilm-squad",
        "minilm-ner",
        "minilm-sst2",
    } <= names
    total = sum(f.stat().st_size for p in MODELS for f in p.rglob("*") if f.is_file())
    assert total <= 200 * 2**20, f"bundled models take {total / 2**20:.1f} MB (limit 200 MB)"


@pytest.mark.parametrize("model_dir", MODELS, ids=lambda p: p.name)
def test_each_bundled_model_loads_and_has_a_card(model_dir):
    model, tokenizer = lab.load(model_dir)
    kind = next(cls for key, cls in EXPECTED_CLASS.items() if key in model_dir.name)
    assert type(model) is kind and tokenizer is not None
    assert all(p.dtype.is_floating_point and p.dtype == next(model.parameters()).dtype for p in model.parameters())
    card = (model_dir / "README.md").read_text()
    for section in ("data", "command", "steps", "wall time", "hardware"):
        assert section in card.lower(), f"{model_dir.name}/README.md says nothing about {section}"
    recorded = json.loads((model_dir / "metrics.json").read_text())["evaluations"]
    assert recorded
    for entry in recorded:  # the card shows the recorded figures
        for key, value in entry["metrics"].items():
            if key in ("mlm_acc", "mlm_acc_masked", "nsp_acc", "accuracy", "exact_match", "f1"):
                assert f"{100 * value:.1f}" in card, f"{model_dir.name}: {key} {100 * value:.1f} not in its card"


def recorded_evaluations():
    for model_dir in MODELS:
        for i, entry in enumerate(json.loads((model_dir / "metrics.json").read_text())["evaluations"]):
            yield pytest.param(model_dir, entry, id=f"{model_dir.name}-{i}")


@pytest.mark.timeout(600)
@pytest.mark.slow
@pytest.mark.parametrize("model_dir, entry", list(recorded_evaluations()))
def test_recorded_metrics_are_reproduced_by_lab_eval(model_dir, entry, capsys, monkeypatch):
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    monkeypatch.chdir(ROOT)
    args = [a.replace("DATA", str(SHARED_DATA)) for a in entry["args"]]
    assert main(["eval", *args]) == 0
    measured = json.loads(capsys.readouterr().out)
    for key, value in entry["metrics"].items():
        assert measured[key] == pytest.approx(value, abs=2e-3), (key, measured[key], value)


def test_the_real_encoder_task_models_meet_their_targets():
    """Issue 21's targets, as recorded when each was bundled (re-measured above on the shared data):
    minilm-ner >= 0.72 entity F1 on UNER test, minilm-sst2 >= 0.87 on SST-2 dev, above the tiny
    bert-lab-sst2; and on the Classify tab's negations with "not" / "never" minilm-sst2 is right
    where the tiny classifier is wrong ("anything but boring": wrong with both, see
    docs/teaching/prompts.md)."""
    from dashboard.help import CLS_EXAMPLES
    from lab import explore

    def recorded(name):
        return json.loads((ROOT / "models" / name / "metrics.json").read_text())["evaluations"][0]["metrics"]

    assert recorded("minilm-ner")["f1"] >= 0.72
    assert recorded("minilm-sst2")["accuracy"] >= 0.87 > recorded("bert-lab-sst2")["accuracy"]
    big, tiny = lab.load(ROOT / "models/minilm-sst2"), lab.load(ROOT / "models/bert-lab-sst2")
    negations = [text for (text,) in CLS_EXAMPLES if text.startswith(("not ", "never ", "it is not "))]
    assert negations == ["not bad at all .", "it is not boring .", "never dull ."]
    for text in negations:
        assert next(iter(explore.classify(*big, text))) == "positive", text
        assert next(iter(explore.classify(*tiny, text))) == "negative", text


def test_the_modern_classroom_model_meets_its_target():
    """Issue 35's target, as recorded when it was bundled (its held-out figure is re-measured
    above): held-out masked-LM at [MASK] >= 35%, above the 2018 classroom model's with the
    paired 95% interval of the difference above 0 (benchmarks/classroom_models.py, whose
    accuracies are the ones `lab eval` recorded for both models)."""

    def at_mask(name):
        return json.loads((ROOT / "models" / name / "metrics.json").read_text())["evaluations"][0]["metrics"]

    compared = json.loads((ROOT / "benchmarks" / "classroom_models.json").read_text())
    for name in ("bert-lab-classroom", "bert-lab-classroom-modern"):
        assert compared["models"][name]["at_mask"][0] == pytest.approx(at_mask(name)["mlm_acc_masked"], abs=1e-4)
    assert at_mask("bert-lab-classroom-modern")["mlm_acc_masked"] >= 0.35
    e, lo, hi = compared["difference"]["at_mask"]
    assert compared["difference"]["of"] == "bert-lab-classroom-modern - bert-lab-classroom" and lo > 0
    # the docs, the README and the card quote these figures
    delta = f"{100 * e:+.1f} points ({100 * lo:+.1f} to {100 * hi:+.1f})"
    texts = {f: (ROOT / f).read_text() for f in ("docs/pretraining.md", "README.md")}
    texts["card"] = (ROOT / "models" / "bert-lab-classroom-modern" / "README.md").read_text()
    for where, text in texts.items():
        assert delta in text.replace("paired 95% interval ", ""), (where, delta)
    for name in ("bert-lab-classroom", "bert-lab-classroom-modern"):
        e, lo, hi = compared["models"][name]["at_mask"]
        assert f"{100 * e:.1f}% ({100 * lo:.1f} to {100 * hi:.1f})" in texts["docs/pretraining.md"], name
