"""dashboard.model_store.ModelStore: the models the dashboard's server offers, as an object (no module
globals): names and confinement, the tasks each model serves without loading it, the shared LRU
cache and the memory of a failed load."""

import os

import pytest

import dashboard.model_store
import lab
from dashboard.model_store import ModelError, ModelStore
from tests.conftest import ROOT, tiny_config


@pytest.fixture
def root(tmp_path):
    """A models root with a pre-training, a QA and a classification model, sharing a vocabulary."""
    _, tok = lab.load(ROOT / "models/bert-lab-classroom")
    cfg = tiny_config(vocab_size=tok.vocab_size)
    lab.save(lab.BertForPreTraining(cfg), tok, tmp_path / "mine" / "pre")
    lab.save(lab.BertForQuestionAnswering(cfg), tok, tmp_path / "mine" / "qa")
    lab.save(lab.BertForSequenceClassification(cfg), tok, tmp_path / "mine" / "cls")
    return tmp_path / "mine"


def test_names_tasks_and_menus(root):
    store = ModelStore([root], base=ROOT)
    assert store.list_models() == ["@mine/cls", "@mine/pre", "@mine/qa"]
    assert store.models_for("answer") == ["@mine/qa"] and store.models_for("classify") == ["@mine/cls"]
    assert store.models_for("fill_mask") == ["@mine/pre"] == store.models_for("next_sentence")
    assert store.models_for("attention") == store.list_models()
    assert store.loaded() == 0  # menus read config.json, not the weights
    model, _ = store.model_for("@mine/qa", "answer")
    assert type(model) is lab.BertForQuestionAnswering and store.tasks("@mine/qa") >= {"answer", "attention"}
    with pytest.raises(ModelError, match="no question-answering head"):
        store.model_for("@mine/pre", "answer")
    assert store.default_model("answer") == "@mine/qa"


def test_two_stores_share_nothing(root, tmp_path):
    a, b = ModelStore([root], base=ROOT, cache_size=1), ModelStore([root], base=ROOT)
    a.get("@mine/pre")
    a.get("@mine/qa")  # evicts pre (cache of one)
    assert a.loaded() == 1 and b.loaded() == 0
    assert a.get("@mine/qa") is a.get("@mine/qa") and b.get("@mine/qa") is not a.get("@mine/qa")


def test_confinement_and_messages(root, tmp_path):
    store = ModelStore([root], base=ROOT)
    for name, message in [
        ("/etc", "outside the models roots"),
        ("@mine/../..", "outside the models roots"),
        ("@mine/nothing", "no such folder: @mine/nothing"),
        ("", "choose a model first"),
        ("x" * 400, "at most 300"),
    ]:
        with pytest.raises(ModelError, match=message):
            store.get(name)
    os.symlink("/etc/passwd", root / "pre" / "notes.md")
    with pytest.raises(ModelError, match="points outside the models roots"):
        store.get("@mine/pre")
    assert str(tmp_path) not in store.display(root / "pre")  # never a server path


def test_a_failed_load_is_remembered_until_the_files_change(root, monkeypatch):
    store = ModelStore([root], base=ROOT)
    weights = root / "cls" / "model.safetensors"
    good = weights.read_bytes()
    weights.write_bytes(b"not a safetensors file")
    assert store.tasks("@mine/cls") == frozenset()  # a damaged model serves nothing
    calls = []
    real = dashboard.model_store.load
    monkeypatch.setattr(dashboard.model_store, "load", lambda *a, **k: calls.append(a) or real(*a, **k))
    for _ in range(3):
        with pytest.raises(ModelError, match="could not load @mine/cls"):
            store.get("@mine/cls")
    assert len(calls) == 1  # tried once
    weights.write_bytes(good)
    assert store.get("@mine/cls") and len(calls) == 2 and "classify" in store.tasks("@mine/cls")


def test_task_tabs_start_on_the_real_encoder(tmp_path):
    """Classification, QA and tagging start on the MiniLM task model when one is there; the tiny
    lab model of the same task stays in the menu beside it (menus keep list order)."""
    _, tok = lab.load(ROOT / "models/bert-lab-classroom")
    cfg = tiny_config(vocab_size=tok.vocab_size)
    root = tmp_path / "models"
    for name, cls in [
        ("bert-lab-sst2", lab.BertForSequenceClassification),
        ("minilm-sst2", lab.BertForSequenceClassification),
        ("bert-lab-ner", lab.BertForTokenClassification),
        ("minilm-ner", lab.BertForTokenClassification),
        ("bert-lab-squad", lab.BertForQuestionAnswering),
        ("minilm-squad", lab.BertForQuestionAnswering),
    ]:
        lab.save(cls(cfg), tok, root / name)
    store = ModelStore([root], base=ROOT)
    for task, model in [("classify", "sst2"), ("tag", "ner"), ("answer", "squad")]:
        assert store.default_model(task) == f"@models/minilm-{model}"
        assert f"@models/bert-lab-{model}" in store.models_for(task)
