"""Shared fixtures: an oddly sized tiny config (as HF's BertModelTester), paths to shared data, tiny
models, the dashboard, a real browser and stand-in servers (files, the Hugging Face Hub)."""

import contextlib
import functools
import hashlib
import http.server
import importlib
import os
import shutil
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest
import torch

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# prepared corpora and downloads go to a cache of this test session, never the user's
os.environ["BERT_LAB_CACHE"] = tempfile.mkdtemp(prefix="bert-lab-test-cache-")
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("BERT_LAB_DATA", ROOT.parent / "shared" / "data"))


def figure_spec(fig) -> dict:
    """The plotly JSON a figure holds: a handler's output (gr.Plot's PlotData, as the dashboard
    sends it) or a figure of lab.figures.plotly_figures."""
    import json

    return json.loads(fig.plot if hasattr(fig, "plot") else fig.to_json())


def sent_summary(fig) -> str:
    """The sentence saying what a handler's figure shows (its layout.meta, as the page reads it)."""
    from urllib.parse import unquote

    return unquote(figure_spec(fig)["layout"]["meta"]["summary"])


def downloaded_csv(kept) -> str:
    """The CSV file a figure's download button saves, from what its handler kept (dashboard.common.FigureDownloads)."""
    import json

    from dashboard.common import FigureDownloads

    return json.loads(FigureDownloads.text(kept))["csv"]


def tiny_config(**overrides):
    from lab import BertConfig

    values = dict(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
        type_vocab_size=2,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    values.update(overrides)
    return BertConfig(**values)


# `make test` runs the suite in two processes (pytest-xdist, `-n 2 --dist loadgroup`): each
# notebook execution (marked notebook_run: a kernel on one thread) is a unit of its own, handed
# to whichever process is free, and every other test stays in one process, in file order,
# sharing one server and browser as a plain `pytest` run does.
# The executions are handed out longest first (their order in CI's --durations report), so that
# the process that finishes the rest of the suite picks up the short ones at the end.
LONGEST_FIRST = ("[02_", "[10_", "[06_", "[07_", "[08_", "[4_fine_tuning", "[09_", "[04_", "[05_")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("notebook_run") is None:
            item.add_marker(pytest.mark.xdist_group("suite"))

    def rank(item) -> int:
        if item.get_closest_marker("notebook_run") is None:
            return -1  # the suite's tests keep their place, first
        return next((n for n, part in enumerate(LONGEST_FIRST) if part in item.name), len(LONGEST_FIRST))

    items.sort(key=rank)  # stable: the suite's tests in file order, the executions longest first


@pytest.fixture
def tiny_cfg():
    return tiny_config()


@pytest.fixture
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


def tiny_trained_tokenizer():
    """A WordPiece of 60 pieces trained on two sentences (the tiny models' tokenizer)."""
    import lab

    return lab.Tokenizer.train(
        iter(["the cat sat on the mat . the dog ran in the park ."] * 30), vocab_size=60, show_progress=False
    )


@pytest.fixture(scope="module")
def mlm():
    """A tiny BertForPreTraining (eval) and its tokenizer (tests/test_explore.py, test_bertviz_offline.py)."""
    import lab

    tok = tiny_trained_tokenizer()
    torch.manual_seed(0)
    model = lab.BertForPreTraining(tiny_config(vocab_size=tok.vocab_size)).eval()
    return model, tok


@pytest.fixture(scope="module")
def tiny():
    """Tiny BertForPreTraining and BertForQuestionAnswering (eval) and their tokenizer
    (tests/test_plots.py, test_figures.py)."""
    import lab

    tok = tiny_trained_tokenizer()
    torch.manual_seed(0)
    cfg = tiny_config(vocab_size=tok.vocab_size)
    return lab.BertForPreTraining(cfg).eval(), lab.BertForQuestionAnswering(cfg).eval(), tok


# ----------------------------------------------------------------------------------------------
# The dashboard (tests/test_app.py, tests/test_browser.py): app.py imported once per session and
# its page built with a temporary models root holding tiny QA / classification models and a
# damaged checkpoint.
# ----------------------------------------------------------------------------------------------
BUNDLED = "models/bert-lab-classroom"


@pytest.fixture(scope="session")
def app_models_root(tmp_path_factory):
    import lab

    root = tmp_path_factory.mktemp("models-root")
    _, tok = lab.load(ROOT / BUNDLED)
    torch.manual_seed(0)
    cfg = tiny_config(vocab_size=tok.vocab_size)
    lab.save(lab.BertForQuestionAnswering(cfg), tok, root / "tiny-squad")
    lab.save(
        lab.BertForSequenceClassification(
            tiny_config(vocab_size=tok.vocab_size, id2label={0: "negative", 1: "positive"})
        ),
        tok,
        root / "tiny-sst2",
    )
    lab.save(lab.BertModel(cfg), tok, root / "encoder-only")
    broken = root / "broken"
    lab.save(lab.BertForPreTraining(cfg), tok, broken)
    (broken / "model.safetensors").write_bytes(b"this is not a safetensors file")
    return root


def app_args(app, app_models_root):
    """app.py's arguments for the tests: the temporary models root besides models/ and runs/."""
    return app.parser().parse_args(["--models-root", str(app_models_root)])


@pytest.fixture(scope="session")
def app():
    """The app module (app.py: the command line, build(), main())."""
    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module("app")
    finally:
        sys.path.remove(str(ROOT))


def make_dashboard(app, app_models_root, *argv):
    """A dashboard for app.py's command line (the temporary models root besides models/ and
    runs/), its page built: its tabs' handlers are dash.tab("mlm").fill_mask, ..."""
    from dashboard import Dashboard, Settings

    dash = Dashboard(Settings.from_args(app.parser().parse_args(["--models-root", str(app_models_root), *argv])))
    dash.build()
    return dash


@pytest.fixture(scope="session")
def dash(app, app_models_root):
    """The dashboard the tests serve (app_url) and call directly."""
    return make_dashboard(app, app_models_root)


@pytest.fixture(scope="session")
def app_url(dash):
    from dashboard import LAUNCH_OPTIONS

    _, url, _ = dash.demo.launch(
        prevent_thread_lock=True, server_name="127.0.0.1", server_port=None, quiet=True, **LAUNCH_OPTIONS
    )
    yield url
    dash.demo.close()


# ----------------------------------------------------------------------------------------------
# A real browser (tests/test_browser.py, tests/test_bertviz_offline.py): Debian's chromium,
# headless, driven by Playwright (test frameworks cannot download their own browsers here).
# ----------------------------------------------------------------------------------------------
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def need_node() -> None:
    """Node.js and npm build the browser edition's page (lab.web.page): skip without them, except
    under CI (BERT_LAB_REQUIRE_BROWSER=1), where it fails."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        if os.environ.get("BERT_LAB_REQUIRE_BROWSER") == "1":
            pytest.fail("Node.js and npm are required here (BERT_LAB_REQUIRE_BROWSER=1): the page is built by npm")
        pytest.skip("Node.js / npm not installed: the browser edition's page cannot be built")


def site_models(tmp_path_factory, bundled) -> tuple[Path, object]:
    """A models folder for a test site of the browser edition: the named bundled models linked in
    (not copied), and the classroom model's tokenizer, for tiny models the test saves beside them."""
    import lab

    models = tmp_path_factory.mktemp("models")
    for name in bundled:
        (models / name).symlink_to(ROOT / "models" / name)
    _, tok = lab.load(ROOT / BUNDLED)
    return models, tok


@contextlib.contextmanager
def chromium_browser():
    """A headless chromium; the test is skipped when chromium is absent, except under CI
    (BERT_LAB_REQUIRE_BROWSER=1), where it fails."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("BERT_LAB_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is required here (BERT_LAB_REQUIRE_BROWSER=1): install it with `make browser`")
        pytest.skip("chromium not installed (`make browser` installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def browser():
    """A headless chromium for the module (tests/test_browser_rounds.py, test_rounds_a11y.py)."""
    with chromium_browser() as browser:
        yield browser


@pytest.fixture(scope="module")
def shots():
    """Where to save screenshots: BERT_LAB_SCREENSHOTS (a folder; `1` means docs/images), else None."""
    value = os.environ.get("BERT_LAB_SCREENSHOTS")
    if not value:
        return None
    path = ROOT / "docs" / "images" if value == "1" else Path(value)
    path.mkdir(parents=True, exist_ok=True)
    return path


# ----------------------------------------------------------------------------------------------
# axe-core (web/package-lock.json pins it; `make web-page` installs it): WCAG 2.1 A and AA.
# ----------------------------------------------------------------------------------------------
AXE = ROOT / "web" / "node_modules" / "axe-core" / "axe.min.js"
WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def axe_violations(page, context: str = "document") -> list:
    """axe-core's WCAG 2.1 A/AA violations on the page as it is now (`context`: a JS expression for
    the part to check): (rule, help, the first three nodes) for each rule broken, [] when none."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: `make web-page` installs the page's packages (axe-core among them)")
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        f"(tags) => axe.run({context}, {{runOnly: {{type: 'tag', values: tags}}}})",
        WCAG,
    )
    return [(v["id"], v["help"], [n["target"] for n in v["nodes"]][:3]) for v in result["violations"]]


# ----------------------------------------------------------------------------------------------
# Stand-in servers on 127.0.0.1 (random ports): a folder of files (tests/test_datasets.py,
# tests/test_colab.py) and the Hugging Face Hub (tests/test_hub.py, tests/test_modernbert.py).
# ----------------------------------------------------------------------------------------------
class RecordingHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output clean
        pass

    def do_GET(self):
        self.server.requests.append(self.path)
        super().do_GET()


@pytest.fixture
def server(tmp_path, monkeypatch):
    """Serve tmp_path/www on 127.0.0.1 (free port, background thread): (url, dir, requests)."""
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(RecordingHandler, directory=str(www))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.requests = []
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", www, httpd.requests
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


HUB_ID = "lab-test/tiny"  # the repository FakeHub.downloaded and .asked look at unless told


class FakeHub:
    """The Hub's file endpoints for repositories held in memory, and a log of every request."""

    def __init__(self):
        self.repos = {}  # repo_id -> {"refs": {branch or tag: commit}, "commits": {commit: {file: bytes}}}
        self.requests = []  # (method, repo_id, revision, filename) of the file endpoints
        self.other = []  # any other request (huggingface_hub also asks for /api/agent-harnesses)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def publish(self, repo_id, files, tags=()) -> str:
        """A new commit of repo_id holding `files` ({name: bytes}, or a folder's files); main and
        `tags` point at it. Returns the commit hash."""
        if isinstance(files, Path):
            files = {p.name: p.read_bytes() for p in sorted(files.iterdir()) if p.is_file()}
        repo = self.repos.setdefault(repo_id, {"refs": {}, "commits": {}})
        commit = hashlib.sha1(f"{repo_id} {len(repo['commits'])}".encode()).hexdigest()
        repo["commits"][commit] = dict(files)
        for ref in ("main", *tags):
            repo["refs"][ref] = commit
        return commit

    def downloaded(self, repo_id=HUB_ID) -> list[str]:
        """The files whose bytes were sent (GET), sorted."""
        return sorted(f for m, r, _, f in self.requests if m == "GET" and r == repo_id)

    def asked(self, repo_id=HUB_ID) -> list[str]:
        """Every file asked about (HEAD or GET), in order."""
        return [f for _, r, _, f in self.requests if r == repo_id]

    def _handler(hub):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.answer(send_body=False)

            def do_GET(self):
                self.answer(send_body=True)

            def answer(self, send_body):
                parts = unquote(self.path.split("?")[0]).lstrip("/").split("/", 4)
                if len(parts) < 5 or parts[2] != "resolve":
                    hub.other.append((self.command, self.path))
                    return self.error("EntryNotFound")
                repo_id, revision, filename = "/".join(parts[:2]), parts[3], parts[4]
                hub.requests.append((self.command, repo_id, revision, filename))
                repo = hub.repos.get(repo_id)
                if repo is None:
                    return self.error("RepoNotFound")
                commit = repo["refs"].get(revision) or (revision if revision in repo["commits"] else None)
                if commit is None:
                    return self.error("RevisionNotFound")
                data = repo["commits"][commit].get(filename)
                if data is None:
                    return self.error("EntryNotFound", commit)
                self.send_response(200)
                self.send_header("X-Repo-Commit", commit)
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                if send_body:
                    self.wfile.write(data)

            def error(self, code, commit=None):
                self.send_response(404)
                self.send_header("X-Error-Code", code)
                self.send_header("X-Error-Message", code)
                if commit:
                    self.send_header("X-Repo-Commit", commit)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """A FakeHub as this process's and its subprocesses' Hub, online, with an empty cache."""
    from huggingface_hub import constants

    server = FakeHub()
    home = tmp_path / "hf-home"
    for name in (
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HUGGINGFACE_HUB_CACHE",
        "HF_HUB_DISABLE_PROGRESS_BARS",
    ):
        monkeypatch.delenv(name, raising=False)
    env = {"HF_ENDPOINT": server.url, "HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub")}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # every path under the real HF_HOME (token, stored tokens, agent registry...) moves to the temporary one
    for name, value in vars(constants).copy().items():
        if name.isupper() and isinstance(value, str) and value.startswith(constants.HF_HOME):
            monkeypatch.setattr(constants, name, str(home) + value[len(constants.HF_HOME) :])
    patched = {
        "ENDPOINT": server.url,
        "HUGGINGFACE_CO_URL_TEMPLATE": server.url + "/{repo_id}/resolve/{revision}/{filename}",
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(home / "hub"),
        "HF_HUB_OFFLINE": False,
    }
    for name, value in patched.items():
        monkeypatch.setattr(constants, name, value)
    yield server
    server.close()
