"""The build-it-yourself notebooks (notebooks/exercises/*.ipynb) follow the exercise conventions and run
both ways: as shipped every check says NOT IMPLEMENTED YET, with every stub cell replaced by the
reference solution every check (and the capstone) says PASSED.

Conventions (see lab/exercises/__init__.py): per piece a code cell tagged "exercise:<name>" whose source
is exactly exercises.stub(name), a markdown hint cell holding exactly exercises.hint(name) inside
<details><summary>Hint</summary> ... </details>, and a code cell tagged "check:<name>" whose last line
is exercises.check("<name>", <symbol>). The capstone cell is tagged "capstone". Notebooks are
committed without outputs and run with notebooks/exercises as the working directory.

The executions are slow (nbclient, a python3 kernel on one thread, every notebook twice); each run
prints its time (pytest -s shows them).
"""

import os
import shutil
import sys
import time
from pathlib import Path

import nbformat
import pytest

from lab import exercises
from lab.exercises import core
from tests.conftest import ROOT
from tests.test_notebooks import NOTEBOOK_TIMEOUT

FOLDER = ROOT / "notebooks" / "exercises"
PATHS = sorted(FOLDER.glob("*.ipynb"))
CELL_TIMEOUT = 600  # seconds per cell: the capstone fine-tunes two MiniLM models
HINT_OPEN, HINT_CLOSE = "<details><summary>Hint</summary>", "</details>"


def _tags(cell, prefix):
    return [t.split(":", 1)[1] for t in cell.metadata.get("tags", []) if t.startswith(prefix + ":")]


def _tagged(nb, prefix):
    """[(cell index, name)] of the code cells tagged prefix:<name>."""
    return [(i, name) for i, c in enumerate(nb.cells) if c.cell_type == "code" for name in _tags(c, prefix)]


def _results(nb):
    """[(name, text/plain)] of every check cell and of the capstone cell (tagged "capstone")."""
    cells = _tagged(nb, "check") + [
        (i, "capstone") for i, c in enumerate(nb.cells) if "capstone" in c.metadata.get("tags", [])
    ]
    return [(name, _text(nb.cells[i])) for i, name in sorted(cells)]


def _read(path):
    return nbformat.read(path, as_version=4)


def test_there_are_notebooks():
    assert PATHS, f"no exercise notebooks in {FOLDER}"


def test_every_exercise_is_in_a_notebook_once():
    found = [name for p in PATHS for _, name in _tagged(_read(p), "exercise")]
    assert sorted(found) == sorted(exercises.names()), "each registered exercise has one stub cell"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_follows_the_conventions(path):
    nb = _read(path)
    assert nb.metadata.kernelspec.name == "python3"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.lstrip().startswith("#"), "a title first"
    code = [c for c in nb.cells if c.cell_type == "code"]
    first = next(c for c in code if "setup" not in c.metadata.get("tags", []))  # after a Colab set-up cell, if any
    assert "from lab import exercises" in first.source and "torch.manual_seed" in first.source
    for c in code:  # committed without outputs
        assert not c.outputs and c.execution_count is None, f"outputs in {path.name}: {c.source[:60]!r}"
    stubs = _tagged(nb, "exercise")
    assert stubs, f"{path.name} has no exercise cells"
    checks = dict((name, i) for i, name in _tagged(nb, "check"))
    for k, (i, name) in enumerate(stubs):
        ex = exercises.exercise(name)
        assert nb.cells[i].source == exercises.stub(name), f"{path.name}: the stub cell of {name} is not the stub"
        # the hint right after the stub, then the check before the next piece
        hint = nb.cells[i + 1]
        assert hint.cell_type == "markdown", f"{path.name}: no hint cell after the stub of {name}"
        assert hint.source.strip().startswith(HINT_OPEN) and hint.source.strip().endswith(HINT_CLOSE)
        assert exercises.hint(name) in hint.source
        assert name in checks, f"{path.name}: no check cell for {name}"
        end = stubs[k + 1][0] if k + 1 < len(stubs) else len(nb.cells)
        assert i < checks[name] < end, f"{path.name}: the check of {name} is not between its stub and the next one"
        last = nb.cells[checks[name]].source.strip().splitlines()[-1]
        assert last == f'exercises.check("{name}", {ex.symbol})', last
    # no solution anywhere in the notebook
    for name in exercises.names():
        body = core.source_of(exercises.exercise(name).solution).strip()
        for c in nb.cells:
            assert body not in c.source, f"{path.name} holds the solution of {name}"
        assert "solution_code(" not in "".join(c.source for c in code)


# ----------------------------------------------------------------------------------------------
# executing the notebooks
# ----------------------------------------------------------------------------------------------


def _with_solutions(nb):
    """The notebook with every stub cell's source replaced by the exercise's reference solution."""
    nb = nbformat.from_dict(nb)
    for i, name in _tagged(nb, "exercise"):
        nb.cells[i].source = exercises.solution_code(name)
    return nb


def _text(cell) -> str:
    """The text/plain of a cell's result (its last execute_result / display_data)."""
    texts = [o.data.get("text/plain", "") for o in cell.outputs if o.output_type in ("execute_result", "display_data")]
    return texts[-1] if texts else ""


@pytest.fixture
def kernel_env(monkeypatch):
    # the kernel is this venv's python (kernel.json says "python": put the venv first on PATH), one thread
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")


def _execute(path: Path, folder: Path, how: str):
    """Execute `folder/path.name` with `folder` as the working directory; return the executed notebook."""
    from nbclient import NotebookClient

    nb = _read(folder / path.name)
    client = NotebookClient(
        nb, kernel_name="python3", timeout=CELL_TIMEOUT, resources={"metadata": {"path": str(folder)}}
    )
    t0 = time.perf_counter()
    client.execute()  # raises CellExecutionError on the first cell that fails
    print(f"{path.name} {how}: {time.perf_counter() - t0:.1f} s")
    return nb


def _copy_folder(tmp_path: Path, solved: bool) -> Path:
    """A copy of notebooks/exercises (so that from_notebook reads these siblings), solved or as shipped."""
    folder = tmp_path / "exercises"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    if solved:  # every notebook first, so that notebook 4's capstone reads the filled-in 1 and 2
        for p in PATHS:
            nbformat.write(_with_solutions(_read(p)), folder / p.name)
    return folder


@pytest.mark.slow
@pytest.mark.timeout(NOTEBOOK_TIMEOUT)
@pytest.mark.notebook_run
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_as_shipped_says_not_implemented(path, tmp_path, kernel_env):
    nb = _execute(path, _copy_folder(tmp_path, solved=False), "as shipped")
    results = _results(nb)
    assert results
    for name, text in results:
        assert text.startswith(core.NOT_IMPLEMENTED), f"{path.name}, {name}: {text[:300]}"


@pytest.mark.slow
@pytest.mark.timeout(NOTEBOOK_TIMEOUT)
@pytest.mark.notebook_run
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_with_solutions_passes(path, tmp_path, kernel_env):
    nb = _execute(path, _copy_folder(tmp_path, solved=True), "with solutions")
    results = _results(nb)
    assert results
    for name, text in results:
        assert text.startswith(core.PASSED), f"{path.name}, {name}: {text[:600]}"
        if name == "capstone":
            print(f"{path.name} capstone: {text[:600]}")
