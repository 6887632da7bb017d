"""What a class sees, checked through the page's API (issue 20's items; the visual ones are also
checked in a real browser at 1024 px in tests/test_browser.py): every tab's first view computed
when the page is built, menus that list only the models serving their tab, a confirmation when a
model is added and "no such folder" for a mistyped one, no silent truncation, examples that say
what they are, and the classroom start-up message."""

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import BUNDLED, ROOT

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


def component(demo, **attrs):
    """The one component of the page whose attributes have these values."""
    found = [b for b in demo.blocks.values() if all(getattr(b, k, None) == v for k, v in attrs.items())]
    assert len(found) == 1, (attrs, len(found))
    return found[0]


def test_every_tab_opens_with_its_view_computed(dash):
    """Item 3: the page's initial values already hold each tab's example view."""
    demo = dash.demo
    assert component(demo, elem_id="mlm-bars").value  # the fill-mask bars
    assert "mask(s) predicted" in component(demo, elem_id="mlm-status").value
    assert component(demo, elem_id="att-stats").value  # the head statistics
    assert "answer:" in component(demo, elem_id="qa-status").value
    assert component(demo, elem_id="training-curves").value
    table = component(demo, elem_id="training-watch").value
    # of the two bundled models with snapshots, the 2018 one first (not the newest folder)
    assert component(demo, label="Run").value == BUNDLED
    assert table["headers"][:2] == ["step", "[MASK] 1"] and len(table["data"]) > 2
    labels = [b for b in demo.blocks.values() if type(b).__name__ == "Label"]
    assert len(labels) == 2 and all(b.value and b.value.get("confidences") for b in labels)  # NSP, Classify


def test_menus_list_only_the_models_that_serve_their_tab(dash, app_models_root):
    """Item 4: a QA menu holds QA models only, the Masked LM menu pre-trained ones, ..."""
    store = dash.store
    for menu, task in dash.ctx.menus:  # (other tests add models to the root later: a subset then)
        listed = [c[1] if isinstance(c, (tuple, list)) else c for c in menu.choices]
        assert set(listed) <= set(store.models_for(task)), task  # empty where nothing serves the tab (Tag words)
        if task is not None:
            assert [name for name in listed if task not in store.tasks(name)] == [], task
    qa = store.models_for("answer")
    assert store.display(app_models_root / "tiny-squad") in qa and BUNDLED not in qa
    assert BUNDLED in store.models_for("fill_mask") and "models/bert-lab-squad" not in store.models_for("fill_mask")
    assert store.display(app_models_root / "broken") in store.list_models()
    assert store.display(app_models_root / "broken") not in store.models_for("fill_mask")  # cannot load: serves nothing
    assert store.models_for(None) == store.list_models()
    modern = "models/bert-lab-classroom-modern"  # a class compares the two classroom models on one sentence
    for task in ("fill_mask", "attention"):
        assert {BUNDLED, modern} <= set(store.models_for(task)), task
    assert modern not in store.models_for("next_sentence")  # pre-trained without NSP: stored without the head


def test_adding_a_model_confirms_and_a_mistyped_folder_says_so(client):
    """Item 4: Add says what was added and where it is offered; runs/nonexistent is a missing
    folder, not a Hugging Face id."""
    _, status = client.predict("models/bert-lab-sst2", api_name="/add_model")
    assert status == "added models/bert-lab-sst2: it serves classify; every menu lists it"
    for typo in ("runs/nonexistent", "models/bert-lab-clasroom"):
        _, status = client.predict(typo, api_name="/add_model")
        assert status == f"⚠️ no such folder: {typo}", status
        *_, status = client.predict(typo, "a [MASK] .", 5, 1.0, api_name="/fill_mask")
        assert "no such folder" in status and "Hub" not in status


def test_next_sentence_and_classify_say_when_they_cut(client, app_models_root):
    """Item 5: a 5,000-word input is cut to the model's window, and the status says so."""
    long = "the ship sailed on through the night . " * 625  # 5,000 words
    _, status = client.predict(BUNDLED, long, "it was tired .", api_name="/next_sentence")
    assert "tokens from the end of the longer sentence were cut" in status and "P(IsNext)" in status
    _, status = client.predict(BUNDLED, "she smiled .", "he left .", api_name="/next_sentence")
    assert "cut" not in status
    _, status = client.predict(str(app_models_root / "tiny-sst2"), long, "", api_name="/classify")
    assert "longer than the model's 64 tokens" in status and "at the end were cut" in status
    _, status = client.predict(str(app_models_root / "tiny-sst2"), "a charming film .", "", api_name="/classify")
    assert "cut" not in status


def test_next_sentence_examples_say_what_each_pair_is(dash):
    """Item 7: each example pair is labelled as a real continuation or a random sentence."""
    from dashboard.help import NSP_EXAMPLE_LABELS, NSP_EXAMPLES

    assert len(NSP_EXAMPLE_LABELS) == len(NSP_EXAMPLES)
    assert {label.split(" (")[1] for label in NSP_EXAMPLE_LABELS} == {"IsNext)", "NotNext)"}
    examples = [
        b for b in dash.demo.blocks.values() if type(b).__name__ == "Dataset" and getattr(b, "sample_labels", None)
    ]
    assert any(all(any(label in s for s in b.sample_labels) for label in set(NSP_EXAMPLE_LABELS)) for b in examples)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_classroom_start_up_prints_the_addresses_students_type():
    """Item 9: `python app.py --host 0.0.0.0` says where students connect (every non-loopback
    IPv4 address, each of which answers), that Hub downloads are off, and how to get a public
    link; not Gradio's 0.0.0.0 URL or its share=True hint."""
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(
        [sys.executable, "app.py", "--host", "0.0.0.0", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines, deadline = [], time.time() + 240
        while time.time() < deadline and not any("public link" in line for line in lines):
            line = server.stdout.readline()
            if not line:
                break
            lines.append(line)
        out = "".join(lines)
        assert "Hugging Face downloads: off" in out and "--share" in out and "--allow-downloads" in out, out
        assert "0.0.0.0" not in out and "share=True" not in out and "Running on local URL" not in out, out
        urls = [line.strip() for line in lines if line.strip().startswith("http://")]
        import psutil

        expected = {
            a.address
            for addrs in psutil.net_if_addrs().values()
            for a in addrs
            if a.family == socket.AF_INET and not a.address.startswith("127.")
        }
        assert {u.split("//")[1].split(":")[0] for u in urls} == expected, out
        for url in urls:  # each one answers
            assert urllib.request.urlopen(url, timeout=10).status == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
