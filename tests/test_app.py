"""The dashboard end to end: build app.py's page, launch it, call every api_name with
gradio_client, good and bad inputs; the server must answer each bad input with a message and
keep serving. And importing app.py is cheap and has no effects.

The bundled pre-trained model (models/bert-lab-classroom) serves the pre-training tabs; tiny
QA and classification models, and a damaged model directory, are written to a temporary
models root that the page is built with (fixtures `app_models_root`, `app`, `app_url` in conftest).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import gradio as gr
import pytest

from tests.conftest import BUNDLED, ROOT, downloaded_csv

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


def squad(app_models_root):
    return str(app_models_root / "tiny-squad")


def plotly(value) -> dict:
    """A gr.Plot value as the client receives it -> the plotly figure's JSON (data, layout), its
    typed arrays ({"dtype", "bdata", "shape"}: how plotly sends numpy data) decoded to lists."""
    import base64

    import numpy as np

    def decode(x):
        if isinstance(x, dict) and "bdata" in x and "dtype" in x:
            a = np.frombuffer(base64.b64decode(x["bdata"]), dtype=x["dtype"])
            shape = x.get("shape")
            return (a.reshape([int(d) for d in str(shape).split(",")]) if shape else a).tolist()
        if isinstance(x, dict):
            return {k: decode(v) for k, v in x.items()}
        return [decode(v) for v in x] if isinstance(x, list) else x

    assert value["type"] == "plotly", value.get("type")
    return decode(json.loads(value["plot"]))


def csv_rows(kept) -> list[list[str]]:
    """The rows of a figure's CSV download (a header first)."""
    import csv

    return list(csv.reader(downloaded_csv(kept).splitlines()))


def python(code: str, *argv: str) -> str:
    """Run code in a fresh interpreter in the repository root; its stdout."""
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"}
    return subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120
    ).stdout


def import_seconds(*modules: str) -> list[float]:
    """The seconds `import module` takes in a fresh interpreter, for each module: the best of 3
    rounds (each round imports every module once, so that all see the same machine load)."""
    code = "import time; t = time.perf_counter(); import {}; print(time.perf_counter() - t)"
    rounds = [[float(python(code.format(m)).split()[-1]) for m in modules] for _ in range(3)]
    return [min(times) for times in zip(*rounds)]


def test_importing_app_is_cheap_and_has_no_effects():
    # every argparse call and every Blocks made while `import app` runs, with argv a real run would reject
    effects = python(
        """
import argparse, json, sys
import gradio as gr
seen = []
parse = argparse.ArgumentParser.parse_known_args
argparse.ArgumentParser.parse_known_args = lambda self, *a, **k: seen.append("argv") or parse(self, *a, **k)
init = gr.Blocks.__init__
gr.Blocks.__init__ = lambda self, *a, **k: seen.append(type(self).__name__) or init(self, *a, **k)
import app
print(json.dumps({"seen": seen, "loaded": "dashboard" in sys.modules or "torch" in sys.modules,
                  "demo": "demo" in vars(app)}))
""",
        "--no-such-option",
    )
    assert json.loads(effects.splitlines()[-1]) == {"seen": [], "loaded": False, "demo": False}
    app_s, gradio_s = import_seconds("app", "gradio")
    assert app_s - gradio_s < 0.5, f"import app {app_s:.2f} s, import gradio {gradio_s:.2f} s"


def test_settings_from_the_command_line_and_the_environment(app, monkeypatch, tmp_path):
    from dashboard import Settings

    monkeypatch.setenv("BERT_LAB_MODELS", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    settings = Settings.from_args(
        app.parser().parse_args(
            ["--models-root", "~/mine", "--model", "runs/x", "--cache-models", "2", "--concurrency", "3"]
        )
    )
    assert settings.model_roots == [
        ROOT / "models",
        ROOT / "runs",
        Path("~/mine").expanduser(),
        tmp_path / "a",
        tmp_path / "b",
    ]
    assert (settings.start_model, settings.cache_models, settings.concurrency) == ("runs/x", 2, 3)


def test_every_event_has_an_api_name(app, client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    expected = {
        "/fill_mask",
        "/words",
        "/mask_word",
        "/corrupt",
        "/next_sentence",
        "/attention",
        "/ablate",
        "/bertviz",
        "/head_stats",
        "/answer",
        "/classify",
        "/training_curves",
        "/watch_learning",
        "/tokenize",
        "/embeddings",
        "/model_info",
        "/add_model",
        "/tag",
        "/logit_lens",
        "/why_fill_mask",
        "/why_classify",
        "/why_answer",
        "/attribution_attention",
        "/probe_layers",
    }
    assert expected <= names, expected - names


def test_default_models_serve_their_tabs(dash, app_models_root):
    assert dash.store.default_model("fill_mask") == BUNDLED
    assert dash.store.default_model("answer") in (
        str(app_models_root / "tiny-squad"),
        "models/bert-lab-squad",
    ) or "squad" in dash.store.default_model("answer")
    assert "sst2" in dash.store.default_model("classify")


def test_fill_mask_good_input(client, dash):
    filled, bars, status = client.predict(
        BUNDLED, "the captain of the [MASK] looked at me .", 5, 1.0, api_name="/fill_mask"
    )
    assert status == "1 mask(s) predicted"
    guesses = [t for t in filled if t["class_or_confidence"] == "guess"]
    assert len(guesses) == 1 and guesses[0]["token"].strip()
    (trace,) = plotly(bars)["data"]  # five bars, drawn by the browser
    assert len(trace["x"]) == 5 and trace["x"][0] == max(trace["x"])
    # the CSV button's numbers (kept in the page, not sent to API clients) are the bars'
    _, _, data, _ = dash.tab("mlm").fill_mask(BUNDLED, "the captain of the [MASK] looked at me .", 5, 1.0)
    rows = csv_rows(data)
    assert len(rows) == 1 + 5 and [float(r[-1]) for r in rows[1:]] == pytest.approx(trace["x"], abs=1e-6)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("\x00\x01\x02", "empty"),
        ("no mask here .", "no [MASK]"),
        ("[MASK] " * 21, "at most 20"),
        ("[CLS] [SEP]", "no [MASK]"),
    ],
)
def test_fill_mask_bad_input_gets_a_message(client, text, message):
    filled, bars, status = client.predict(BUNDLED, text, 5, 1.0, api_name="/fill_mask")
    assert filled is None and bars is None
    assert status.startswith("⚠️") and message in status


def test_long_text_is_truncated_with_a_notice(client):
    text = "the [MASK] sat on the mat . " + "and then the dog barked . " * 200
    filled, bars, status = client.predict(BUNDLED, text, 3, 1.0, api_name="/fill_mask")
    assert "cut" in status and len(plotly(bars)["data"][0]["x"]) == 3


def test_control_characters_are_dropped(client):
    _, bars, status = client.predict(BUNDLED, "the\x07 cat sat on the [MASK]\x1b .", 2, 1.0, api_name="/fill_mask")
    assert not status.startswith("⚠️") and len(plotly(bars)["data"][0]["x"]) == 2


@pytest.mark.parametrize("model", ["/etc", "../..", "models/../..", "models/../app.py", "runs/../../../tmp"])
def test_paths_outside_the_models_roots_are_refused(client, model):
    *_, status = client.predict(model, "a [MASK] .", 5, 1.0, api_name="/fill_mask")
    assert status.startswith("⚠️") and ("outside the models roots" in status or "not a model" in status)


def test_a_damaged_checkpoint_gets_a_message_and_the_server_keeps_serving(client, app_models_root):
    *_, status = client.predict(str(app_models_root / "broken"), "a [MASK] .", 5, 1.0, api_name="/fill_mask")
    assert status.startswith("⚠️") and "could not load" in status and "model.safetensors" in status
    _, status = client.predict(str(app_models_root / "broken"), api_name="/add_model")
    assert status.startswith("⚠️")
    _, bars, status = client.predict(BUNDLED, "a [MASK] .", 5, 1.0, api_name="/fill_mask")
    assert bars and not status.startswith("⚠️")


def test_a_model_without_the_head_explains_why(client, app_models_root):
    _, status = client.predict(BUNDLED, "who?", "nobody", 3, api_name="/answer")[-2:]
    assert "no question-answering head" in status
    _, status = client.predict(BUNDLED, "good", "", api_name="/classify")
    assert "no classification head" in status
    *_, status = client.predict(str(app_models_root / "encoder-only"), "a [MASK] .", 5, 1.0, api_name="/fill_mask")
    assert "masked" in status.lower() and "head" in status


def test_click_to_mask(client):
    words = client.predict("the cat sat .", api_name="/words")
    assert [w["token"] for w in words if w["token"] != " "] == ["the", "cat", "sat", "."]
    text, status = client.predict("the cat sat .", 1, api_name="/mask_word")
    assert text == "the [MASK] sat ." and "cat" in status
    text, status = client.predict("the cat sat .", 9, api_name="/mask_word")
    assert status.startswith("⚠️") and "4 words" in status
    for index in (None, "two", 2**70, 1.5, -1):  # a clear message, never an internal error
        text, status = client.predict("the cat sat .", index, api_name="/mask_word")
        assert status.startswith("⚠️ the word index") and "whole number" in status, (index, status)


def test_corruption_preview(client):
    text = "it was the best of times , it was the worst of times , it was the age of wisdom ."
    out, status = client.predict(BUNDLED, text, 3, api_name="/corrupt")
    again, _ = client.predict(BUNDLED, text, 3, api_name="/corrupt")
    assert out == again  # the same seed, the same corruption
    chosen = [t for t in out if t["class_or_confidence"]]
    assert len(chosen) == int(status.split()[0]) >= 1


def test_next_sentence(client):
    label, status = client.predict(
        BUNDLED, "she opened the letter .", "it was from her sister .", api_name="/next_sentence"
    )
    probs = {c["label"]: c["confidence"] for c in label["confidences"]}
    assert set(probs) == {"IsNext", "NotNext"} and abs(sum(probs.values()) - 1) < 1e-6
    label, status = client.predict(BUNDLED, "", "it was .", api_name="/next_sentence")
    assert not label and "sentence A is empty" in status


def test_attention_and_bad_layer(client, dash):
    one, grid, table, tokens, status = client.predict(
        BUNDLED, "the cat sat on the mat .", "it was tired .", 1, 1, api_name="/attention"
    )
    heat = plotly(one)["data"][0]  # hover: query, key, weight
    n = len([t for t in tokens if t["token"] != " "])
    assert len(heat["z"]) == n and "query" in heat["hovertemplate"] and "key" in heat["hovertemplate"]
    assert len(plotly(grid)["data"]) == 2  # the layer's two heads
    data = dash.tab("attention").attention(BUNDLED, "the cat sat on the mat .", "it was tired .", 1, 1)[4]
    assert len(csv_rows(data)) == 1 + n * n
    assert len(table["data"]) == 2 * 2 and table["headers"][:2] == ["layer", "head"]
    stats, status = client.predict(BUNDLED, "the cat sat on the mat .", "", api_name="/head_stats")
    assert stats is not None and not status.startswith("⚠️")
    # the sliders are the default model's shape: the page refuses a layer beyond it; the handler
    # checks against the model it is given
    with pytest.raises(Exception, match="greater than maximum value 1"):
        client.predict(BUNDLED, "the cat .", "", 7, 0, api_name="/attention")
    *_, status = dash.tab("attention").attention(BUNDLED, "the cat .", "", 7, 0)
    assert status.startswith("⚠️") and "from 0 to 1" in status


def test_ablation(client, dash):
    fig, status = client.predict(BUNDLED, "she could not help [MASK] at the thought .", api_name="/ablate")
    _, data, _ = dash.tab("attention").ablate(BUNDLED, "she could not help [MASK] at the thought .")
    assert plotly(fig)["data"] and len(csv_rows(data)) == 1 + 2 * 2 and "baseline loss" in status
    fig, status = client.predict(BUNDLED, "no mask", api_name="/ablate")
    assert fig is None and "[MASK]" in status


def test_bertviz_html_is_in_an_iframe(client, dash):
    frame, status = client.predict(BUNDLED, "the cat sat .", "", "head", api_name="/bertviz")
    assert frame.startswith("<iframe") and "srcdoc=" in frame and "offline" in status
    assert "require.min.js" not in frame and "src=&quot;http" not in frame  # nothing from a CDN
    frame, status = client.predict(BUNDLED, "the cat sat .", "it purred .", "neuron", 1, 1, api_name="/bertviz")
    assert frame.startswith("<iframe") and "neuron view" in status and "src=&quot;http" not in frame
    assert "&quot;queries&quot;" in frame  # bertviz's neuron-view data, escaped in srcdoc
    frame, status = dash.tab("attention").bertviz_view(BUNDLED, "the cat sat .", "", "neuron", 9, 0)
    assert "layer" in status and "has 2" in status


def test_question_answering(client, app_models_root):
    context = "The Nautilus was built by Captain Nemo on a desert island. " * 40  # several windows
    span, fig, table, status = client.predict(
        squad(app_models_root), "Who built the Nautilus?", context, 3, api_name="/answer"
    )
    answer = [t["token"] for t in span if t["class_or_confidence"] == "answer"]
    assert len(answer) == 1 and answer[0] in context
    assert "".join(t["token"] for t in span) == context  # the whole context, in order
    assert len(table["data"]) == 3 and table["data"][0][1] == answer[0]
    assert "windows" in status and fig is not None
    *_, status = client.predict(squad(app_models_root), "", context, 3, api_name="/answer")
    assert "question is empty" in status
    *_, status = client.predict(squad(app_models_root), "who?", "  ", 3, api_name="/answer")
    assert "context is empty" in status


def test_question_answering_uses_the_models_own_windows_and_says_what_it_read(
    client, dash, app_models_root, tmp_path_factory
):
    """A model's task_config.json (from finetune-qa) gives its window lengths and its training data;
    the status explains the [CLS] probability."""
    import shutil

    qa = app_models_root / "tiny-squad-v11"
    if not qa.exists():
        shutil.copytree(app_models_root / "tiny-squad", qa)
        (qa / "task_config.json").write_text(
            json.dumps(
                {
                    "task": "squad",
                    "model": "/somewhere/bert-lab-classroom",
                    "data": "/data/squad/dev-v1.1.json.zip",
                    "train_articles": 40,
                    "max_seq_length": 32,
                    "doc_stride": 8,
                    "max_query_length": 8,
                }
            )
        )
    lengths, trained = dash.tab("qa").training(str(qa))
    assert lengths == {"max_seq_length": 32, "doc_stride": 8, "max_query_length": 8}
    assert "bert-lab-classroom" in trained and "articles 1-40" in trained and "/somewhere" not in trained
    context = "The Nautilus was built by Captain Nemo on a desert island. " * 4
    *_, status = client.predict(str(qa), "Who built the Nautilus?", context, 3, api_name="/answer")
    assert "windows" in status  # 32-token windows: this context needs several
    assert "P(start = [CLS])" in status and "articles 1-40" in status


def test_classify(client, app_models_root):
    label, status = client.predict(str(app_models_root / "tiny-sst2"), "a charming film .", "", api_name="/classify")
    assert {c["label"] for c in label["confidences"]} == {"negative", "positive"}


def test_model_tab(client, dash, app_models_root):
    info, card, status = client.predict(BUNDLED, api_name="/model_info")
    assert "BertForPreTraining" in info and "1,552,898" in info and "fill_mask" in info
    assert card.startswith("# bert-lab-classroom")
    tokens, status = client.predict(BUNDLED, "The playing children", api_name="/tokenize")
    assert [t["token"] for t in tokens][0] == "[CLS]"
    fig, status = client.predict(BUNDLED, "hello there", api_name="/embeddings")
    assert plotly(fig)["data"] and csv_rows(dash.tab("model").embeddings(BUNDLED, "hello there")[1])[0]
    choice, status = client.predict(str(app_models_root / "tiny-squad"), api_name="/add_model")
    assert status.startswith("added")
    _, status = client.predict("/etc/passwd", api_name="/add_model")
    assert "outside the models roots" in status


def test_training_tab(client, dash, app_models_root):
    # a tiny pre-training run inside a models root (runs/ is not in a fresh clone)
    from lab.training.pretrain import PretrainConfig, pretrain
    from lab.training.train import TrainConfig

    root = app_models_root
    corpus = root / "corpus.txt"
    corpus.write_text(
        "\n\n".join(
            "\n".join(f"The word{(i * 7 + j) % 40} sat on the mat number {j}." for j in range(12)) for i in range(8)
        )
        + "\n"
    )
    run = root / "tiny-run"
    pretrain(
        str(corpus),
        PretrainConfig(preset="tiny", vocab_size=120, max_seq_length=32),
        TrainConfig(out_dir=str(run), steps=4, batch_size=4, eval_every=0, progress=False),
    )
    fig, status = client.predict(str(run), "step", api_name="/training_curves")
    data = dash.tab("training").training_curves(str(run), "step")[1]
    assert plotly(fig)["data"] and len(csv_rows(data)) > 1 and "records" in status
    table, status = client.predict(str(run), "the [MASK] sat on the mat .", api_name="/watch_learning")
    steps = [row[0] for row in table["data"]]
    assert steps == sorted(steps) and steps[0] == 0 and steps[-1] == 4
    *_, status = client.predict("/tmp", "step", api_name="/training_curves")
    assert status.startswith("⚠️")


def test_server_still_serves_after_everything(client):
    _, bars, status = client.predict(BUNDLED, "the [MASK] of the ship .", 5, 1.0, api_name="/fill_mask")
    assert bars and not status.startswith("⚠️")


def test_each_tab_opens_with_its_example_computed_once(dash, app_models_root):
    """What a page computes when it opens: every tab's example (no error), cached for the next page."""
    store, links = dash.store, dash.ctx.links
    defaults = [
        store.default_model("fill_mask"),
        "he opened the [MASK] .",
        store.default_model("next_sentence"),
        "she sat down .",
        "she read .",
        store.default_model("attention"),
        "the cat sat .",
        "",
        0,
        0,
        str(app_models_root / "tiny-squad"),
        "Who built it?",
        "Nemo built it.",
        str(app_models_root / "tiny-sst2"),
        "a charming film .",
        "",
        "",  # Tag words: its model (none needed for the message), its text
        "Elizabeth walked to London .",
    ]
    views = links.opening_views(*defaults, "light")
    # the status of Masked LM, Next Sentence, Attention (its maps, then the head statistics), QA, Classify
    statuses = [views[i] for i in (3, 5, 11, 18, 20)]
    assert len(views) == 25 and all(s and not s.startswith("⚠️") for s in statuses), statuses
    again = links.opening_views(*defaults, "light")  # the next page: from the cache
    assert all(a is b for a, b in zip(again, views))


def test_help_where_students_look():
    from dashboard.help import HELP

    tabs = ("mlm", "nsp", "attention", "qa", "classify", "tag", "training", "model")  # (HELP also holds
    for tab in tabs:  # the texts of views inside a tab: the logit lens, "why?")
        text = HELP[tab]
        assert "What you are looking at" in text and ("Section" in text or "metrics.jsonl" in text), tab
    assert "Temperature" in HELP["mlm"] and "Entropy" in HELP["attention"]
    assert "[CLS] score" in HELP["qa"] and "Clark et al." in HELP["attention"]


def opening_in_the_browser(links, query: str, values: list, theme: str = "light") -> list:
    """links.opening_js run by node, as the browser runs it when a page opens at ?query."""
    script = (
        f"const window = {{location: {{search: {json.dumps(query)}}}}};\n"
        f"const document = {{body: {{classList: {{contains: (c) => c === {json.dumps(theme)}}}}}}};\n"
        f"const opening = {links.opening_js()};\n"
        f"console.log(JSON.stringify(opening(...{json.dumps(values)})));"
    )
    out = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_shared_link_restores_the_tab_and_its_inputs(dash):
    """A long link of before (every tab's inputs under their full names, as the link button gave
    them until links became short: tests/test_links_short.py) still opens its tab and inputs."""
    from urllib.parse import urlencode

    values = [
        "models/bert-lab-classroom",
        "the [MASK] & the <sea>",
        None,
        "",
        "",
        "",
        "",
        "",
        1,
        0,
        "minilm",
        "Who?",
        "Nemo did.",
        "",
        "",
        "",
    ]
    links = dash.ctx.links
    query = urlencode({"tab": "qa"} | {k: str(v) for k, v in zip(links.inputs, values) if v not in (None, "")})
    page = [c.value for c in links.inputs.values()]  # a new page's own values
    theme, tab, *restored, opening = opening_in_the_browser(links, "?" + query, page)
    restored = dict(zip(links.inputs, restored))
    assert theme == "light" and tab == "qa" and opening  # the views that differ are recomputed
    assert restored["mlm_text"] == "the [MASK] & the <sea>" and restored["att_layer"] == 1
    assert restored["qa_c"] == "Nemo did." and restored["nsp_a"] == links.inputs["nsp_a"].value
    assert links.select_tab("qa").selected == "qa" and links.select_tab("nowhere") == gr.skip()
    # a bad value is ignored, not trusted; a page without a link, in the light theme, asks the server nothing
    assert opening_in_the_browser(links, "?att_head=99999&att_layer=-1&tab=nowhere", page) == ["light", "", *page, ""]
    assert opening_in_the_browser(links, "", page) == ["light", "", *page, ""]
    theme, *_, opening = opening_in_the_browser(links, "", page, theme="dark")
    assert theme == "dark" and opening  # the figures are redrawn in the dark theme


def test_a_repeated_request_is_answered_from_the_handlers_cache(dash):
    """A class clicking the same example: computed once, then kept (the same figure object);
    a refusal is not kept, and another text is computed."""
    cls = dash.tab("classify")
    model = dash.store.default_model("classify")
    first = cls.classify(model, "a charming and often moving film .")
    hits = cls.classify.cache_info().hits
    again = cls.classify(model, "a charming and often moving film .")
    assert again == first and cls.classify.cache_info().hits == hits + 1
    size = cls.classify.cache_info().currsize
    for _ in range(2):
        *_, status = cls.classify(model, "   ")
        assert status.startswith("⚠️")
    assert cls.classify.cache_info().currsize == size  # refusals are not kept
    other = cls.classify(model, "the plot is thin and the acting is worse .")
    assert other != first and cls.classify.cache_info().currsize == size + 1
