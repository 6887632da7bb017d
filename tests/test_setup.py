"""The project's own set-up files agree with each other."""

import tomllib
import yaml

from tests.conftest import ROOT


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    # every package of the core and of every extra, once (dev names the other extras as bert-lab[...])
    wanted = sorted(
        {d for group in [project["dependencies"], *extras.values()] for d in group if not d.startswith("bert-lab")}
    )
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert sorted(pip_section) == wanted
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    assert python.replace("python", "") == project["requires-python"]


def test_readme_commands_are_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make demo" in readme and "make test" in readme
    assert "\nmake test\n" in ci


def test_the_core_does_not_need_the_extras():
    """The library imports without the dashboard, notebook and test packages: only the core
    dependencies are imported by lab/ (checked in a fresh interpreter)."""
    import subprocess
    import sys

    code = (
        "import sys, lab, lab.inspect.explore, lab.figures.matplotlib_figures, lab.training.train, "
        "lab.training.pretrain, lab.training.finetune, lab.training.runs, "
        "lab.device, lab.data.datasets, lab.__main__\n"
        "extras = {'gradio', 'bertviz', 'transformers', 'jupyterlab', 'pandas', 'pytest', "
        "'huggingface_hub', 'plotly', 'mpld3', 'xstatic', 'onnx', 'onnxruntime', 'onnxscript'}\n"
        "print(sorted(extras & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_make_demo_after_make_test_installs_nothing(tmp_path):
    """[dev] contains [app] and [notebooks]: once `make test` installed it, `make demo` goes
    straight to the app (no pip run, no screens of pip output before the URL). The Makefile's
    own recipes run here, with PIP=true standing in for pip."""
    import os
    import shutil
    import subprocess
    import time

    import pytest

    if not shutil.which("make"):
        pytest.skip("make is not installed")
    venv = tmp_path / "venv"
    venv.mkdir()
    since = (ROOT / "pyproject.toml").stat().st_mtime
    for i, stamp in enumerate((".torch", ".installed")):  # torch and the core, newer than pyproject.toml
        (venv / stamp).touch()
        os.utime(venv / stamp, (since + 0.1 * (i + 1), since + 0.1 * (i + 1)))
    time.sleep(0.5)  # the stamps make writes come later

    def make(*targets, dry=False):
        return subprocess.run(
            ["make", *(["-n"] if dry else []), "-C", str(ROOT), f"VENV={venv}", "PIP=true", *targets],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    make(f"{venv}/.installed-dev")  # what `make test` installs first
    demo, lab = make("demo", dry=True), make("lab", dry=True)
    assert "install" not in demo and "app.py" in demo, demo
    assert "install" not in lab and "jupyter lab" in lab, lab
