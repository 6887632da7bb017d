"""The repository root is a Hugging Face Space (docs/deploy.md): README.md's front matter says
sdk gradio / app_file app.py / a pinned Gradio, requirements.txt installs what app.py needs (the
CPU build of torch, the lab's dependencies), and `python app.py` serves the page with the
variables Spaces sets, Hub downloads off unless the owner opts in.

The slow test builds what a Space would run: a fresh virtual environment (no system packages)
into which `pip install -r requirements.txt` alone installs, a copy of the tracked tree, `python
app.py` started with Spaces' variables on a free port, driven with gradio_client.
What it proves: the file installs everything the app imports, the tracked tree holds everything it
reads (the bundled models), the app binds where GRADIO_SERVER_NAME/PORT say and keeps Hub downloads
off. What it cannot: no real Space runs here. torch==X+cpu comes from this machine's local wheel
instead of PyTorch's CPU index (which cannot be reached here: pip is told --retries 0 so that the
unreachable index costs one failed lookup per package), and Spaces' own image (its Python, the
`spaces` package it preinstalls, its proxy) is not this machine.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

tomllib = pytest.importorskip("tomllib", reason="Python 3.11's tomllib reads pyproject.toml")

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements.txt"
BUNDLED = "models/bert-lab-classroom"


def front_matter() -> dict:
    """README.md's YAML block between the first two '---' lines: what Spaces reads."""
    text = (ROOT / "README.md").read_text()
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, "README.md does not open with the Space's front matter (--- ... ---)"
    return yaml.safe_load(match.group(1))


def requirement_lines() -> list[str]:
    """requirements.txt without comments, blank lines and pip options."""
    lines = [line.split("#")[0].strip() for line in REQUIREMENTS.read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("-")]


def name(requirement: str) -> str:
    """The normalised project name of a requirement (PEP 503: case and -_. alike)."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", requirement).group(0)).lower()


# ----------------------------------------------------------------------------------------
# The Space's files agree with each other and with pyproject.toml (fast)
# ----------------------------------------------------------------------------------------
def test_front_matter_is_a_gradio_space_on_app_py():
    meta = front_matter()
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py" and (ROOT / meta["app_file"]).is_file()
    assert re.fullmatch(r"\d+\.\d+\.\d+", str(meta["sdk_version"])), meta["sdk_version"]  # pinned
    assert re.fullmatch(r"3\.\d+", str(meta["python_version"]))
    assert len(meta["short_description"]) <= 60  # Spaces refuse longer ones
    colours = {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}  # what Spaces accept
    assert {meta["colorFrom"], meta["colorTo"]} <= colours
    assert f"gradio=={meta['sdk_version']}" in requirement_lines()  # the Gradio the app is installed with


def test_requirements_install_the_cpu_torch_and_every_dependency_of_the_app():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = {name(r) for r in project["dependencies"] + project["optional-dependencies"]["app"]}
    listed = {name(r) for r in requirement_lines()}
    assert listed == needed, f"missing: {needed - listed}, not in pyproject.toml: {listed - needed}"
    make = re.search(r"^TORCH_VERSION \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert f"torch=={make}+cpu" in requirement_lines()  # the Makefile's torch, its CPU build
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in REQUIREMENTS.read_text().splitlines()
    assert not any(line.startswith(("-e", ".")) for line in requirement_lines())  # Spaces install it alone


def test_spaces_variables_set_the_bind_and_downloads_stay_off_unless_the_owner_opts_in(app, monkeypatch):
    from dashboard import Settings

    monkeypatch.setenv("GRADIO_SERVER_NAME", "0.0.0.0")
    monkeypatch.setenv("GRADIO_SERVER_PORT", "7860")
    monkeypatch.delenv("BERT_LAB_ALLOW_DOWNLOADS", raising=False)
    args = app.parser().parse_args([])
    assert (args.host, args.port) == ("0.0.0.0", 7860) and not Settings.from_args(args).downloads
    for value, on in (("1", True), ("true", True), ("YES", True), ("0", False), ("", False), ("no", False)):
        monkeypatch.setenv("BERT_LAB_ALLOW_DOWNLOADS", value)
        assert Settings.from_args(app.parser().parse_args([])).downloads is on, value
    monkeypatch.setenv("GRADIO_SERVER_PORT", "seventy")
    with pytest.raises(SystemExit):  # argparse's one line: "argument --port: invalid int value"
        app.parser().parse_args([])
    for name_ in ("GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT", "BERT_LAB_ALLOW_DOWNLOADS"):
        monkeypatch.delenv(name_)
    args = app.parser().parse_args([])
    assert (args.host, args.port) == ("127.0.0.1", 7860) and Settings.from_args(args).downloads  # a laptop


# ----------------------------------------------------------------------------------------
# The Space built and started as Spaces do (slow: a fresh venv, ~2-3 minutes)
# ----------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tracked_tree(dest: Path) -> None:
    """What `hf upload` sends from a clean checkout: the files git tracks (from the working tree)."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    shutil.copy2(REQUIREMENTS, dest / "requirements.txt")  # also before it is committed


def wait_until_ready(proc: subprocess.Popen, log: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "BERT Lab is ready" in text:
            return text
        assert proc.poll() is None, f"app.py exited with {proc.returncode}:\n{text[-4000:]}"
        time.sleep(1)
    raise AssertionError(f"app.py was not ready after {timeout:.0f} s:\n{log.read_text()[-4000:]}")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_space_installs_from_requirements_alone_and_serves_with_spaces_variables():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout (the tracked files are what a Space receives)")
    from gradio_client import Client

    # 1.6 GB of venv, removed after: in memory where there is room (deleting it from this machine's
    # disk took about 2 minutes), else in the temporary folder
    shm = Path("/dev/shm")
    where = shm if shm.is_dir() and shutil.disk_usage(shm).free > 8e9 else None
    with tempfile.TemporaryDirectory(prefix="bert-lab-space-", dir=where) as tmp:
        tmp = Path(tmp)
        venv, tree, log = tmp / "venv", tmp / "space", tmp / "app.log"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)  # no system site-packages
        python = venv / "bin" / "python"
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "--retries", "0", "-r", str(REQUIREMENTS)],
            cwd=tmp,  # not the repository: nothing of it is installed
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
        installed = time.perf_counter() - t0
        check = subprocess.run(
            [str(python), "-c", "import torch, gradio; print(torch.__version__, gradio.__version__)"],
            env=env,
            capture_output=True,
            text=True,
        )
        torch_version, gradio_version = check.stdout.split()
        assert torch_version.endswith("+cpu") and gradio_version == str(front_matter()["sdk_version"])
        with pytest.raises(subprocess.CalledProcessError):  # the venv holds no lab: it is imported from the tree
            subprocess.run([str(python), "-c", "import lab"], cwd=tmp, env=env, check=True, capture_output=True)

        tree.mkdir()
        tracked_tree(tree)
        port = free_port()
        spaces_env = {
            **env,
            "GRADIO_SERVER_NAME": "0.0.0.0",  # what Spaces set
            "GRADIO_SERVER_PORT": str(port),  # (7860 there; a free port here)
            "SYSTEM": "spaces",
            "SPACE_ID": "lab-test/bert-lab",
            "SPACE_AUTHOR_NAME": "lab-test",
            "SPACE_REPO_NAME": "bert-lab",
            "SPACE_HOST": "lab-test-bert-lab.hf.space",
            "HF_HOME": str(tmp / "hf-home"),  # an empty Hub cache
            "GRADIO_ANALYTICS_ENABLED": "False",  # no network here
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
        }
        spaces_env.pop("BERT_LAB_ALLOW_DOWNLOADS", None)
        with log.open("w") as out:
            proc = subprocess.Popen(
                [str(python), "app.py"], cwd=tree, env=spaces_env, stdout=out, stderr=subprocess.STDOUT
            )
        try:
            text = wait_until_ready(proc, log, timeout=240)
            started = time.perf_counter() - t0 - installed
            assert "Hugging Face downloads: off" in text
            client = Client(f"http://127.0.0.1:{port}/", verbose=False)
            filled, _, status = client.predict(
                BUNDLED, "the captain of the [MASK] looked at me .", 5, 1.0, api_name="/fill_mask"
            )
            assert status == "1 mask(s) predicted" and any(t["class_or_confidence"] == "guess" for t in filled)
            label, _ = client.predict(
                BUNDLED, "she opened the letter .", "it was from her sister .", api_name="/next_sentence"
            )
            assert {c["label"] for c in label["confidences"]} == {"IsNext", "NotNext"}
            _, status = client.predict("google-bert/bert-base-uncased", api_name="/add_model")
            assert "downloads are off" in status, status  # a public Space: only the cache, which is empty
            assert not list((tmp / "hf-home").rglob("*.safetensors"))  # nothing was fetched
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        text = log.read_text(errors="replace")
        # the one traceback allowed: Gradio's hot-reload watcher on Spaces wants the `spaces`
        # package, which Spaces' image preinstalls and this venv does not have
        assert text.count("Traceback") == text.count("`spaces` package is required"), text[-4000:]
        print(f"Space: venv installed in {installed:.0f} s, app ready {started:.0f} s later")
