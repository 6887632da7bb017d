"""The notebooks in Colab, offline: the set-up cell's install logic (with a stand-in for
subprocess.run, never a real install), the one repository address (pyproject.toml [project.urls])
in every cell and "Open in Colab" link, each notebook's catalog names, and the data a notebook
reads fetched from a local stand-in for the canonical sites ($BERT_LAB_MIRROR) into a folder
where find_data finds it.

    .venv/bin/python -m pytest tests/test_colab.py
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from lab import notebook_setup
from lab.data import datasets
from lab.data.datasets import CATALOG, find_data, parse_need
from lab.inspect import probing
from lab.notebook_setup import colab_url, prepare, repository_url, setup_cell_source, write_setup_cell
from lab.notebook_setup import notebook_folder as lab_notebook_folder
from tests.conftest import ROOT
from tests.test_datasets import _serve_fixtures

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
    (ROOT / "notebooks" / "exercises").glob("*.ipynb")
)


@pytest.fixture(autouse=True)
def _restore_bert_lab_data():
    """prepare() sets BERT_LAB_DATA for the kernel it runs in: undo that after each test."""
    before = os.environ.get("BERT_LAB_DATA")
    yield
    if before is None:
        os.environ.pop("BERT_LAB_DATA", None)
    else:
        os.environ["BERT_LAB_DATA"] = before


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _setup_cell(path: Path) -> str:
    cells = [c for c in _cells(path) if notebook_setup.SETUP_TAG in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"{path.name}: exactly one cell must be tagged {notebook_setup.SETUP_TAG!r}"
    return "".join(cells[0]["source"])


def _needs(source: str) -> list[str]:
    """The literal list passed to prepare(...) in a set-up cell."""
    calls = [
        n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "prepare"
    ]
    assert len(calls) == 1, "the set-up cell calls prepare once"
    return ast.literal_eval(calls[0].args[0])


def _parameters(path: Path) -> dict:
    """The notebook's parameters cell's assignments ({} for a notebook without one: the exercises)."""
    cell = next((c for c in _cells(path) if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if cell is None:
        return {}
    values: dict = {}
    exec("".join(cell["source"]), values)  # assignments only
    return values


# ---------------------------------------------------------------------------------------------
# One address, every cell, every link
# ---------------------------------------------------------------------------------------------


def test_the_address_lives_in_pyproject():
    import tomllib

    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert repository_url() == urls["Repository"]
    assert urls["Repository"].startswith("https://github.com/")
    assert colab_url("01_x.ipynb", "https://github.com/org/repo.git") == (
        "https://colab.research.google.com/github/org/repo/blob/main/notebooks/01_x.ipynb"
    )
    with pytest.raises(ValueError, match="Colab opens notebooks from GitHub only"):
        colab_url("01_x.ipynb", "https://gitlab.com/org/repo")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_set_up_cell_is_the_one_cell_with_the_one_address(path):
    """The cell right after the parameters is the set-up cell, written by lab.notebook_setup with
    pyproject.toml's address and catalog names that exist."""
    source = _setup_cell(path)
    ast.parse(source)
    needs = _needs(source)
    for need in needs:
        entry, _ = parse_need(need)  # ValueError for a name or split the catalog lacks
        assert entry.name in CATALOG
    assert source == setup_cell_source(needs, repository_url(), notebook_setup.notebook_folder(path))
    assert re.findall(r'REPOSITORY = "([^"]+)"', source) == [repository_url()]
    code = [c for c in _cells(path) if c["cell_type"] == "code"]
    # after the parameters cell (the main notebooks), else the first code cell (the exercises)
    at = 1 if "parameters" in code[0]["metadata"].get("tags", []) else 0
    assert notebook_setup.SETUP_TAG in code[at]["metadata"]["tags"]
    assert code[at]["outputs"] == [] and code[at]["execution_count"] is None


def test_readme_links_every_notebook_to_colab():
    readme = (ROOT / "notebooks" / "README.md").read_text()
    for path in NOTEBOOKS:
        link = colab_url(path.relative_to(ROOT / "notebooks").as_posix())
        assert f"({link})" in readme, f"no Open in Colab link for {path.name}"
    assert len(re.findall(r"colab\.research\.google\.com/github/([^/]+/[^/]+)/", readme)) >= len(NOTEBOOKS)
    assert set(re.findall(r"colab\.research\.google\.com/github/([^/]+/[^/]+)/", readme)) == {
        repository_url().removeprefix("https://github.com/")
    }


# ---------------------------------------------------------------------------------------------
# The install logic, run with stand-ins (never a real clone or pip install)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def run_cell(tmp_path, monkeypatch):
    """Run a set-up cell in tmp_path with `lab` importable or not; returns (commands, prepared).
    subprocess.run records the command (a clone makes bert-lab/notebooks/data); prepare records
    its needs; sys.path is restored afterwards."""
    commands, prepared = [], []

    def fake_run(command, check=False, **kwargs):
        commands.append(list(command))
        if command[:2] == ["git", "clone"]:
            (Path(command[-1]) / "notebooks" / "data").mkdir(parents=True)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(notebook_setup, "prepare", lambda needs: prepared.append(needs) or torch.device("cpu"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    real_find_spec = importlib.util.find_spec

    def run(source: str, importable: bool):
        def find_spec(name, *args):
            return None if name == "lab" and not importable else real_find_spec(name, *args)

        monkeypatch.setattr(importlib.util, "find_spec", find_spec)
        namespace: dict = {}
        exec(source, namespace)
        return commands, prepared, namespace

    return run


def test_lab_importable_installs_nothing(run_cell, tmp_path):
    (tmp_path / "data").mkdir()  # a notebooks folder: data/ beside the notebook, no bert-lab/ clone
    commands, prepared, namespace = run_cell(setup_cell_source(["sst2:dev"]), importable=True)
    assert commands == [] and prepared == [["sst2:dev"]]
    assert Path.cwd() == tmp_path and namespace["DEVICE"] == torch.device("cpu")


def test_lab_missing_clones_the_address_and_installs_it(run_cell, tmp_path):
    commands, prepared, _ = run_cell(setup_cell_source(["novels"]), importable=False)
    clone = tmp_path / "bert-lab"
    assert commands == [
        ["git", "clone", "--depth", "1", repository_url(), str(clone)],
        [sys.executable, "-m", "pip", "install", "--quiet", "--editable", f"{clone}[colab]"],
    ]
    assert sys.path[0] == str(clone)  # importable in this kernel at once
    assert Path.cwd() == clone / "notebooks"  # where ../models and data/ are
    assert prepared == [["novels"]]


def test_a_notebook_in_a_subfolder_goes_into_that_folder_of_the_clone(run_cell, tmp_path):
    source = setup_cell_source([], folder="notebooks/exercises")
    assert lab_notebook_folder(ROOT / "notebooks" / "exercises" / "x.ipynb") == "notebooks/exercises"
    assert lab_notebook_folder(tmp_path / "elsewhere.ipynb") == "notebooks"
    (tmp_path / "bert-lab" / "notebooks" / "exercises").mkdir(parents=True)  # cloned before
    commands, _, _ = run_cell(source, importable=False)
    assert [c[3] for c in commands] == ["install"]
    assert Path.cwd() == tmp_path / "bert-lab" / "notebooks" / "exercises"
    with pytest.raises(ValueError, match="folder must be a path inside the repository"):
        setup_cell_source([], folder="../elsewhere")


def test_a_second_run_after_a_restart_only_changes_folder(run_cell, tmp_path):
    """Colab's runtime restarted: the clone is there and installed (importable), the kernel is back
    in /content: the cell goes into the notebooks folder and installs nothing."""
    (tmp_path / "bert-lab" / "notebooks" / "data").mkdir(parents=True)
    commands, _, _ = run_cell(setup_cell_source([]), importable=True)
    assert commands == [] and Path.cwd() == tmp_path / "bert-lab" / "notebooks"


def test_an_existing_clone_is_installed_not_cloned_again(run_cell, tmp_path):
    (tmp_path / "bert-lab" / "notebooks" / "data").mkdir(parents=True)
    commands, _, _ = run_cell(setup_cell_source([]), importable=False)
    assert [c[:4] for c in commands] == [[sys.executable, "-m", "pip", "install"]]


def test_the_pip_extra_exists():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "colab" in extras and "bert-lab[colab]" in extras["notebooks"]
    imported = {"pandas", "bertviz", "plotly", "orjson", "mpld3", "xstatic-jquery"}
    assert imported <= {re.split(r"[<>=\[]", d)[0] for d in extras["colab"]}


# ---------------------------------------------------------------------------------------------
# prepare(): nothing changes locally; in Colab the catalog fills a data folder
# ---------------------------------------------------------------------------------------------


def _no_colab(monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    for var in ("COLAB_RELEASE_TAG", "BERT_LAB_FETCH"):
        monkeypatch.delenv(var, raising=False)


def test_prepare_locally_downloads_nothing(tmp_path, monkeypatch):
    _no_colab(monkeypatch)
    monkeypatch.setattr(notebook_setup, "fill_data_folder", lambda *a, **k: pytest.fail("downloaded"))
    data = tmp_path / "data"
    (data / "sst2").mkdir(parents=True)
    (data / "sst2" / "dev.tsv").write_text("sentence\tlabel\ngood .\t1\n")
    monkeypatch.setenv("BERT_LAB_DATA", str(data))
    lines = []
    assert prepare(["sst2:dev"], log=lines.append) == torch.device("cpu")
    assert os.environ["BERT_LAB_DATA"] == str(data)
    assert len(lines) == 1 and lines[0].startswith("device: cpu (")
    # missing, outside Colab: reported, the notebook falls back to data/, nothing set
    monkeypatch.setenv("BERT_LAB_DATA", str(tmp_path / "absent"))
    lines.clear()
    prepare(["sst2:dev", "novels"], log=lines.append)
    assert "no local copy of sst2:dev, novels" in lines[0] and "BERT_LAB_FETCH=1" in lines[0]
    assert os.environ["BERT_LAB_DATA"] == str(tmp_path / "absent")
    with pytest.raises(ValueError, match="unknown corpus 'imdb'"):
        prepare(["imdb"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_in_colab_each_notebook_finds_its_data(path, server, tmp_path, monkeypatch):
    """Colab: no shared/data. prepare(the cell's needs) fetches them from the stand-in (canonical
    paths) and every file the notebook asks find_data for is then found in the filled folder."""
    url, www, requests = server
    needs = _needs(_setup_cell(path))
    for name in {parse_need(n)[0].name for n in needs}:
        served = _serve_fixtures(CATALOG[name], www)
        files = tuple(
            replace(f, sha256=hashlib.sha256(served[f.name]).hexdigest()) if f.sha256 else f
            for f in CATALOG[name].files
        )
        monkeypatch.setitem(CATALOG, name, replace(CATALOG[name], files=files))
    _no_colab(monkeypatch)
    monkeypatch.setitem(sys.modules, "google.colab", sys)  # any module: "we are in Colab"
    monkeypatch.setattr(datasets, "__file__", str(tmp_path / "content" / "bert-lab" / "lab" / "data" / "datasets.py"))
    monkeypatch.delenv("BERT_LAB_DATA", raising=False)
    monkeypatch.setenv("BERT_LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BERT_LAB_MIRROR", url)
    assert datasets.data_dir() is None
    lines = []
    prepare(needs, progress=False, log=lines.append)
    if not needs:
        assert requests == [] and "BERT_LAB_DATA" not in os.environ
        return
    folder = tmp_path / "cache" / "data"
    assert os.environ["BERT_LAB_DATA"] == str(folder) and datasets.data_dir() == folder
    assert f"BERT_LAB_DATA={folder}" in lines[0]
    # what the notebook passes to find_data (its parameters, or a literal)
    params = _parameters(path)
    code = "\n".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code")
    asked = [params[a] if a in params else ast.literal_eval(a) for a in re.findall(r"find_data\(([^,]+),", code)]
    for name in asked:
        found = find_data(name, tmp_path / "absent")
        assert datasets.is_shared(found), (name, found)
    if "ud-ewt:dev" in needs:  # notebook 9's probe looks for UD itself
        assert probing.ud_data_missing() == ""
    # prepared again (the cell run twice): everything is there, nothing is requested
    count = len(requests)
    prepare(needs, progress=False, log=lines.append)
    assert len(requests) == count


def test_bert_lab_fetch_downloads_outside_colab_into_bert_lab_data(server, tmp_path, monkeypatch):
    url, www, requests = server
    entry = CATALOG["uner-ewt"]
    served = _serve_fixtures(entry, www)
    files = tuple(replace(f, sha256=hashlib.sha256(served[f.name]).hexdigest()) for f in entry.files)
    monkeypatch.setitem(CATALOG, "uner-ewt", replace(entry, files=files))
    _no_colab(monkeypatch)
    monkeypatch.setenv("BERT_LAB_FETCH", "1")
    monkeypatch.setenv("BERT_LAB_MIRROR", url)
    monkeypatch.setenv("BERT_LAB_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "mine"
    monkeypatch.setenv("BERT_LAB_DATA", str(mine))
    prepare(["uner-ewt:test"], progress=False, log=lambda line: None)
    assert requests == ["/" + entry.files[2].url.removeprefix("https://")]  # the test split only
    assert (mine / "uner-ewt" / "en_ewt-ud-test.iob2").read_bytes() == served["en_ewt-ud-test.iob2"]
    assert os.environ["BERT_LAB_DATA"] == str(mine)


def test_a_failed_download_is_said_in_a_line_and_the_notebook_goes_on(server, tmp_path, monkeypatch):
    url, www, _ = server  # serves nothing: every request is a 404
    _no_colab(monkeypatch)
    monkeypatch.setenv("COLAB_RELEASE_TAG", "test")
    monkeypatch.setenv("BERT_LAB_MIRROR", url)
    monkeypatch.setenv("BERT_LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BERT_LAB_DATA", str(tmp_path / "data"))
    lines = []
    assert prepare(["sst2:dev"], progress=False, log=lines.append) == torch.device("cpu")
    assert lines[0].startswith("data: sst2:dev could not be fetched: could not download " + url)
    assert "404" in lines[0]
    assert (
        lines[1]
        == f"data: BERT_LAB_DATA={tmp_path / 'data'}; without sst2:dev this notebook uses its own small texts in data/"
    )
    fallback = ROOT / "notebooks" / "data" / "sentiment_dev.tsv"
    assert find_data("sst2/dev.tsv", fallback) == fallback


# ---------------------------------------------------------------------------------------------
# Writing the cell into a notebook (also for notebooks added later)
# ---------------------------------------------------------------------------------------------


def _notebook(cells) -> dict:
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_write_setup_cell_inserts_after_parameters_then_replaces(tmp_path):
    path = tmp_path / "10_new.ipynb"
    cells = [
        {"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# New"]},
        {
            "cell_type": "code",
            "id": "b",
            "metadata": {"tags": ["parameters"]},
            "source": ["X = 1"],
            "outputs": [],
            "execution_count": None,
        },
        {
            "cell_type": "code",
            "id": "c",
            "metadata": {},
            "source": ["import lab"],
            "outputs": [],
            "execution_count": None,
        },
    ]
    path.write_text(json.dumps(_notebook(cells)))
    write_setup_cell(path, ["novels"], "https://github.com/org/repo")
    write_setup_cell(path, ["sst2:dev"], "https://github.com/org/repo")  # rewritten, not added
    written = json.loads(path.read_text())["cells"]
    assert [c["id"] for c in written] == ["a", "b", "10-setup", "c"]
    source = "".join(written[2]["source"])
    assert _needs(source) == ["sst2:dev"] and 'REPOSITORY = "https://github.com/org/repo"' in source
    assert written[2]["outputs"] == [] and written[2]["execution_count"] is None
    # without a parameters cell: before the first code cell, after the title
    other = tmp_path / "exercises" / "e.ipynb"
    other.parent.mkdir()
    other.write_text(json.dumps(_notebook([cells[0], cells[2]])))
    write_setup_cell(other, [], "https://github.com/org/repo")
    assert [c["id"] for c in json.loads(other.read_text())["cells"]] == ["a", "e-setup", "c"]


def test_the_command_line_refuses_unknown_names(tmp_path, capsys):
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(_notebook([])))
    assert notebook_setup.main([str(path), "--data", "sst2:validation"]) == 1
    assert "corpus 'sst2' has no split 'validation'" in capsys.readouterr().err
    assert json.loads(path.read_text())["cells"] == []
    assert notebook_setup.main([str(tmp_path / "missing.ipynb"), "--data", "novels"]) == 1
    assert "missing.ipynb" in capsys.readouterr().err
