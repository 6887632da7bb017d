"""The notebooks run top to bottom (as papermill would run them) and are committed without outputs.

Each notebook is executed with nbclient on the venv's python3 kernel, in notebooks/, with a cell
of quick settings inserted right after its cell tagged "parameters" (the defaults there are
the student-sized ones: minutes of training). Any cell that raises fails the test.
"""
import os
import sys
import time
from pathlib import Path

import nbformat
import pytest

from tests.conftest import ROOT

NOTEBOOKS = ROOT / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
EXPECTED = ["01_tokens_and_input_embeddings", "02_pretraining_mlm_and_nsp", "03_attention_heads",
            "04_fine_tuning_classification", "05_question_answering", "06_bert_gpt_elmo"]
CELL_TIMEOUT = 240        # seconds per cell; each whole notebook takes about a minute here

# Quick settings per notebook; every notebook also gets THREADS=1 and RUNS=<a temporary directory>.
# Without ../shared/data the notebooks fall back to notebooks/data/ (the CORPUS names then do not matter).
QUICK = {
    "01_tokens_and_input_embeddings": {},
    "02_pretraining_mlm_and_nsp": dict(CORPUS="novels/prideprejudice.txt", TRAIN_SECONDS=20, EVAL_EVERY=25,
                                       SEE_ITSELF_STEPS=150, SEE_ITSELF_VOCAB=512, BASE_BATCH=1, STAT_SENTENCES=300),
    "03_attention_heads": dict(STAT_SENTENCES=20),
    "04_fine_tuning_classification": dict(TRAIN_ROWS=320, EPOCHS=1),
    # QA_MODEL=None: always exercise the fine-tuning path, even once models/bert-lab-squad exists
    "05_question_answering": dict(QA_MODEL=None, TRAIN_ARTICLES=1, EPOCHS=1, EVAL_QUESTIONS=40),
    "06_bert_gpt_elmo": dict(CORPUS="novels/persuasion.txt", STEPS=40, BATCH_SIZE=64, CLOZE_BLANKS=200),
}
COMMON = dict(THREADS=1)


def _read(path: Path):
    return nbformat.read(path, as_version=4)


def _parameters_index(nb) -> int:
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell must be tagged 'parameters'"
    return tagged[0]


def test_every_planned_notebook_is_there():
    assert [p.stem for p in PATHS] == EXPECTED


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_committed_without_outputs(path):
    """Bulky outputs (bertviz embeds every attention weight) never go into the repository."""
    nb = _read(path)
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {i} has outputs: clear them before committing"
            assert cell.execution_count is None, f"cell {i} has an execution count"
    assert nb.metadata.kernelspec.name == "python3"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_cells_call_the_library(path):
    """The parameters cell comes first among the code cells, the lab is imported, and no cell
    defines functions or classes: library logic lives in `lab`, the cells call it."""
    nb = _read(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert any("import lab" in c.source for c in code)
    for c in code:
        lines = c.source.splitlines()
        assert not any(l.lstrip().startswith(("def ", "class ", "async def ")) for l in lines), c.source[:80]


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    from nbclient import NotebookClient

    nb = _read(path)
    values = {**COMMON, "RUNS": str(tmp_path / "runs"), **QUICK[path.stem]}
    at = _parameters_index(nb)
    source = "# quick settings inserted by tests/test_notebooks.py\n" + "\n".join(
        f"{k} = {v!r}" for k, v in values.items())
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(source))
    # the kernel is this venv's python (kernel.json says "python": put the venv first on PATH)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    client = NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT,
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    t0 = time.perf_counter()
    client.execute()                      # raises CellExecutionError on the first failing cell
    print(f"{path.stem}: {time.perf_counter() - t0:.1f} s")
