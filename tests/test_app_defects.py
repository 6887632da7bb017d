"""The dashboard's defects found by trying it as a teacher and as a student would, one test each
(through gradio_client, as the page calls the server): damaged models, errors that must reach the
page, escaping, confinement to the models roots, bad numbers, and the smaller ones.

Models made here go into the session's temporary models root (conftest `app_models_root`).
"""

import json
import os
import shutil
import time

import pytest
from safetensors.torch import load_file, save_file

from tests.conftest import BUNDLED, ROOT, app_args

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


def copy_model(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("checkpoints", "metrics.jsonl"))
    return dst


def test_1_a_damaged_model_is_refused_naming_what_is_missing(client, app_models_root):
    """bert-lab-classroom without its 16 layer.1 tensors: refused, the message names them."""
    damaged = copy_model(ROOT / BUNDLED, app_models_root / "no-layer-1")
    weights = load_file(str(damaged / "model.safetensors"))
    save_file({k: v for k, v in weights.items() if ".layer.1." not in k}, str(damaged / "model.safetensors"))
    menu, status = client.predict(str(damaged), api_name="/add_model")
    assert status.startswith("⚠️") and "lack 16 of the encoder's" in status and "layer.1" in status
    *_, status = client.predict(str(damaged), "he opened the [MASK] .", 5, 1.0, api_name="/fill_mask")
    assert "damaged or partial" in status
    empty = copy_model(ROOT / BUNDLED, app_models_root / "empty-weights")
    save_file({}, str(empty / "model.safetensors"))  # a valid file holding no tensors
    _, status = client.predict(str(empty), api_name="/add_model")
    assert "damaged or partial" in status


def test_2_a_failed_add_keeps_the_menu_and_its_message(client, dash, app_models_root):
    """Typing /etc and clicking Add: the menu keeps its model and the page shows why."""
    good = str(app_models_root / "tiny-squad")
    menu, status = client.predict(good, api_name="/add_model")
    assert status.startswith("added")
    menu, status = client.predict("/etc", api_name="/add_model")
    assert status.startswith("⚠️") and "outside the models roots" in status
    # the error leaves the menu as it is (an update without a value), not blank
    update = dash.tab("model").add_model("/etc")[0]
    assert isinstance(update, dict) and "value" not in update


def test_3_tokens_are_shown_apart(client):
    tokens, status = client.predict(BUNDLED, "The playing children were unbelievably happy.", api_name="/tokenize")
    shown = [t["token"] for t in tokens]
    assert shown[0] == "[CLS]" and shown[1] == " "  # a space after every token
    assert all(shown[i] == " " for i in range(1, len(shown), 2))
    words = [t for t in shown if t != " "]
    assert "".join(words) != "".join(shown) and len(words) == int(status.split()[0])


def test_4_the_80_10_10_colours_do_not_depend_on_the_seed(app, dash, app_models_root):
    """The legend's colours are fixed: [MASK] is the same colour for every seed."""
    from dashboard.help import CORRUPTION_COLORS

    demo = app.build(app_args(app, app_models_root))
    maps = [c.color_map for c in demo.blocks.values() if getattr(c, "label", "") and "15% chosen" in c.label]
    assert maps == [CORRUPTION_COLORS]
    assert set(CORRUPTION_COLORS) == {"[MASK] (80%)", "random (10%)", "kept (10%)"}
    # and the preview uses exactly those kinds
    for seed in (0, 7):
        out, _ = dash.tab("mlm").corrupt(BUNDLED, "it was the best of times , it was the worst of times .", seed)
        assert {label for _, label in out if label} <= set(CORRUPTION_COLORS)


def test_5_wrong_sizes_fail_fast_and_the_failure_is_remembered(client, app_models_root, monkeypatch):
    """config.json declaring BERT-large sizes over tiny weights: refused from the header (no
    allocation), and not retried until the model's files change."""
    large = copy_model(ROOT / BUNDLED, app_models_root / "claims-to-be-large")
    config = json.loads((large / "config.json").read_text())
    config.update(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
    (large / "config.json").write_text(json.dumps(config))
    t0 = time.perf_counter()
    *_, status = client.predict(str(large), "a [MASK] .", 5, 1.0, api_name="/fill_mask")
    assert "config.json does not match the weights" in status and time.perf_counter() - t0 < 4
    calls = []
    import dashboard.model_store

    real_load = dashboard.model_store.load  # what the model store loads with
    monkeypatch.setattr(dashboard.model_store, "load", lambda *a, **k: calls.append(a) or real_load(*a, **k))
    for _ in range(3):
        *_, again = client.predict(str(large), "a [MASK] .", 5, 1.0, api_name="/fill_mask")
        assert again == status
    assert calls == []  # remembered: no new attempt
    config.update(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512)
    (large / "config.json").write_text(json.dumps(config))  # fixed: its files changed
    os.utime(large / "config.json", ns=(time.time_ns(), time.time_ns()))
    _, bars, status = client.predict(str(large), "a [MASK] .", 5, 1.0, api_name="/fill_mask")
    assert bars and not status.startswith("⚠️") and len(calls) == 1


def test_6_training_tab_messages_use_relative_paths_and_suggest_nothing_harmful(client):
    table, status = client.predict("models/bert-lab-squad", "the [MASK] sat .", api_name="/watch_learning")
    assert status.startswith("⚠️") and "keeps no checkpoints" in status
    assert str(ROOT) not in status and "--out" not in status and "models/bert-lab-classroom" in status


def test_7_model_cards_render_safely():
    from dashboard.common import safe_card

    card = safe_card(
        "| field | value |\n|---|---|\n| a | b |\n\nNSP\n>= 90% is not met.\n"
        "![pixel](https://tracker.example/p.png) <img src=x onerror=alert(1)> <b>bold</b>"
    )
    assert "\n\\&gt;= 90%" in card  # not a quote: a sentence
    assert "![" not in card and "[image: pixel](https://tracker.example/p.png)" in card
    assert "<img" not in card and "&lt;img src=x" in card and "<b>" not in card
    for name in ("bert-lab-classroom", "bert-lab-sst2", "bert-lab-squad"):  # our own cards: a real header row
        text = (ROOT / "models" / name / "README.md").read_text()
        assert "| | |" not in text, name


def test_8_user_and_model_text_is_escaped(client, app_models_root):
    """A QA answer, a label name and a typed model name reach the page as text."""
    context = "The <b>Nautilus</b> was built by <img src=x onerror=alert(1)> on an island."
    *_, status = client.predict(str(app_models_root / "tiny-squad"), "Who built it?", context, 3, api_name="/answer")
    assert "<b>" not in status and "<img" not in status
    _, status = client.predict("<img src=x onerror=alert(1)>", api_name="/add_model")
    assert "<img" not in status and "&lt;img" in status
    from dashboard.common import md_escape

    info = md_escape("![x](http://tracker/p.png) <b>name</b>")
    assert "![" not in info and "<b>" not in info


def test_9_files_of_a_model_folder_are_confined_to_the_roots(client, app_models_root):
    linked = copy_model(app_models_root / "tiny-squad", app_models_root / "linked-card")
    (linked / "README.md").unlink(missing_ok=True)
    os.symlink("/etc/passwd", linked / "README.md")
    info, card, status = client.predict(str(linked), api_name="/model_info")
    assert not card or "root:" not in card
    assert "points outside the models roots" in status and "/etc/passwd" not in status


def test_10_none_wrong_types_and_huge_numbers_get_messages(client, dash):
    text = "it was the best of times , it was the worst of times ."
    for seed in (None, 2**70, -3):  # (the seed box rounds 1.5 itself)
        out, status = client.predict(BUNDLED, text, seed, api_name="/corrupt")
        assert status.startswith("⚠️ the seed") and "whole number" in status, (seed, status)
    *_, status = client.predict("m" * 5000, "a [MASK] .", 5, 1.0, api_name="/fill_mask")
    assert "at most 300" in status and len(status) < 300
    # (the page's sliders refuse values out of their range themselves; the handlers check too)
    fill_mask = dash.tab("mlm").fill_mask
    assert fill_mask(BUNDLED, "a [MASK] .", 10**9, 1.0)[-1].startswith("⚠️ top k")
    assert fill_mask(BUNDLED, "a [MASK] .", 5, None)[-1].startswith("⚠️ the temperature")
    assert fill_mask(BUNDLED, "a [MASK] .", 5, float("nan"))[-1].startswith("⚠️ the temperature")


def test_11_smaller_ones(client, app, app_models_root):
    # lowercase [mask] is a mask
    filled, bars, status = client.predict(
        BUNDLED, "he opened the [mask] and walked in .", 5, 1.0, api_name="/fill_mask"
    )
    assert bars and status == "1 mask(s) predicted"
    # a word-piece guess is marked as one
    assert {t["class_or_confidence"] for t in filled} <= {None, "guess", "guess (word piece)"}
    # the pair box and a single-sentence model: said, not silently used
    single = copy_model(app_models_root / "tiny-sst2", app_models_root / "single-sst2")
    (single / "task_config.json").write_text(json.dumps({"task": "classification", "pair": False}))
    _, status = client.predict(str(single), "a charming film .", "but the second one", api_name="/classify")
    assert "second sentence was not used" in status
    # every plot has a label (its alt text); every text box submits with Enter
    demo = app.build(app_args(app, app_models_root))
    blocks = list(demo.blocks.values())
    import gradio as gr

    assert all(b.label for b in blocks if isinstance(b, gr.Plot))
    submitted = {
        id(t)
        for dep in demo.fns.values()
        for t, event in getattr(dep, "targets", [])
        if event == "submit"
        for t in [demo.blocks.get(t)]
        if t is not None
    }
    boxes = [b for b in blocks if isinstance(b, gr.Textbox) and b.visible and b.interactive is not False]
    assert boxes and all(id(b) in submitted for b in boxes), [b.label for b in boxes if id(b) not in submitted]
