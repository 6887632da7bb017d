"""The notebooks' set-up cell: install the lab where it is missing (Colab), get the data a notebook
reads through the corpus catalog, and say which device training will use.

Every notebook's first cell after its parameters is the same short cell (SETUP_CELL, with the
notebook's own catalog names). Its first half is plain Python (the lab is not importable yet);
`prepare` is the rest. Writing the cell into a notebook (replacing an older set-up cell):

    python -m lab.notebook_setup notebooks/04_fine_tuning_classification.ipynb --data sst2:train sst2:dev

The cell carries a copy of the repository's address (it runs before anything is installed): after
changing pyproject.toml's [project.urls] Repository, run the command again for every notebook
(tests/test_colab.py checks that they agree).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

import torch

from lab.data.datasets import default_cache_dir, fill_data_folder, missing_data, parse_need
from lab.device import pick_device
from lab.files import REPOSITORY

__all__ = [
    "SETUP_TAG",
    "SETUP_CELL",
    "in_colab",
    "prepare",
    "describe_device",
    "repository_url",
    "colab_url",
    "setup_cell_source",
    "notebook_folder",
    "write_setup_cell",
]

SETUP_TAG = "setup"  # the set-up cell's tag in the notebook's metadata
PYPROJECT = REPOSITORY / "pyproject.toml"

# The cell's code. {repository}, {folder} and {needs} are filled in by setup_cell_source.
SETUP_CELL = """\
# Set-up: where the lab is not installed (Colab) this clones it and installs it; then it gets the
# data this notebook reads through the lab's corpus catalog. Run locally it changes nothing.
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPOSITORY = "{repository}"  # the lab's address: pyproject.toml [project.urls]
if importlib.util.find_spec("lab") is None:  # not installed: clone the lab here and install it
    clone = Path("bert-lab").resolve()
    if not clone.exists():
        subprocess.run(["git", "clone", "--depth", "1", REPOSITORY, str(clone)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--editable", f"{{clone}}[colab]"], check=True)
    sys.path.insert(0, str(clone))
if Path("bert-lab/{folder}").is_dir():  # in Colab: the notebook's own folder in the clone
    os.chdir("bert-lab/{folder}")  # where its relative paths (data/, ../models) lead
from lab.notebook_setup import prepare

# the corpora this notebook reads (lab.data.datasets.CATALOG names); DEVICE: where training runs
DEVICE = prepare({needs})"""


def in_colab() -> bool:
    """True inside Google Colab (its module is loaded, or its runtime's variable is set)."""
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


def describe_device(device: torch.device) -> str:
    """ "cuda:0 (NVIDIA T4)", "mps", "cpu (2 threads)"."""
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    if device.type == "cpu":
        threads = torch.get_num_threads()
        return f"cpu ({threads} thread{'' if threads == 1 else 's'})"
    return str(device)


def prepare(needs=(), *, fetch: bool | None = None, progress: bool = True, log=print) -> torch.device:
    """Make sure the data folder holds `needs` (catalog names, "name" or "name:split"), then return
    the device training uses (pick_device("auto")).

    fetch: download what is missing (None: only in Colab or with BERT_LAB_FETCH=1). Where nothing
    is missing, or fetch is off, nothing is downloaded and no setting changes:
    - locally (../shared/data or $BERT_LAB_DATA holding the corpora) the notebooks find their data
      with lab.data.datasets.find_data;
    - when fetching, whatever the data folder lacks comes through lab.data.datasets (pooch:
      progress bar, checksums, cache), laid out like shared/data in $BERT_LAB_DATA, or in
      <cache>/data, which then becomes $BERT_LAB_DATA for this kernel;
    - otherwise a missing corpus is only reported: the notebook falls back to its small texts in data/.
    Training runs on the device returned (TrainConfig.device="auto" picks the same); inference on
    the bundled models stays on the CPU (lab.load's default): they are small, and the results stay
    the same."""
    needs = list(needs)
    for need in needs:
        parse_need(need)  # a name the catalog lacks is refused before anything happens
    missing = missing_data(needs)
    if fetch is None:
        fetch = in_colab() or os.environ.get("BERT_LAB_FETCH", "") == "1"
    if missing and fetch:
        env = os.environ.get("BERT_LAB_DATA")
        folder = Path(env).expanduser() if env else default_cache_dir() / "data"
        # a new folder replaces ../shared/data for this kernel: fill it with everything needed
        failed = []
        for need in needs if env is None else missing:
            try:
                fill_data_folder([need], folder, progress=progress)
            except (OSError, ValueError) as err:  # DownloadError, ChecksumError: say it, go on
                failed.append(need)
                log(f"data: {need} could not be fetched: {err}")
        os.environ["BERT_LAB_DATA"] = str(folder)
        got = [need for need in missing if need not in failed]
        log(
            (f"data: {', '.join(got)} downloaded; " if got else "data: ")
            + f"BERT_LAB_DATA={folder}"
            + (f"; without {', '.join(failed)} this notebook uses its own small texts in data/" if failed else "")
        )
    elif missing:
        log(
            f"data: no local copy of {', '.join(missing)}: this notebook uses its own small texts in data/ "
            "(BERT_LAB_FETCH=1 downloads the real ones)"
        )
    device = pick_device("auto")
    log(f"device: {describe_device(device)} (training); inference on the small models runs on the CPU")
    return device


# ---------------------------------------------------------------------------------------------
# The repository's address, the Colab links and the cell itself
# ---------------------------------------------------------------------------------------------


def repository_url(pyproject: str | os.PathLike = PYPROJECT) -> str:
    """pyproject.toml's [project.urls] Repository (the one place that holds the lab's address)."""
    path = Path(pyproject)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: repository_url reads the lab's address from a source checkout")
    found = re.search(r"^\[project\.urls\][^\[]*?^Repository\s*=\s*\"([^\"]+)\"", path.read_text(), re.M | re.S)
    if not found:
        raise ValueError(f'{path} has no Repository = "..." under [project.urls]')
    return found.group(1)


def colab_url(notebook: str, repository: str | None = None, branch: str = "main") -> str:
    """The "Open in Colab" link of notebooks/<notebook> on GitHub."""
    repository = repository or repository_url()
    owner_repo = re.sub(r"^https://github\.com/", "", repository).rstrip("/").removesuffix(".git")
    if owner_repo == repository:
        raise ValueError(f"Colab opens notebooks from GitHub only: {repository!r} is not https://github.com/OWNER/REPO")
    return f"https://colab.research.google.com/github/{owner_repo}/blob/{branch}/notebooks/{notebook}"


def setup_cell_source(needs, repository: str | None = None, folder: str = "notebooks") -> str:
    """The set-up cell's code for a notebook in `folder` (relative to the repository: notebooks,
    notebooks/exercises) reading `needs`."""
    needs = list(needs)
    for need in needs:
        parse_need(need)
    if not re.fullmatch(r"[\w.-]+(/[\w.-]+)*", folder) or ".." in folder.split("/"):
        raise ValueError(f"folder must be a path inside the repository such as notebooks/exercises, not {folder!r}")
    return SETUP_CELL.format(repository=repository or repository_url(), folder=folder, needs=json.dumps(needs))


def notebook_folder(path: str | os.PathLike) -> str:
    """The notebook's folder relative to the repository ("notebooks" for a file outside it)."""
    try:
        return Path(path).resolve().parent.relative_to(PYPROJECT.parent).as_posix()
    except ValueError:
        return "notebooks"


def write_setup_cell(path: str | os.PathLike, needs, repository: str | None = None) -> None:
    """Put the set-up cell into a notebook file: replace the cell tagged "setup", else insert it
    right after the cell tagged "parameters" (without one: before the first code cell). Outputs
    stay cleared."""
    path = Path(path)
    nb = json.loads(path.read_text())
    cells = nb["cells"]
    source = setup_cell_source(needs, repository, notebook_folder(path))
    tags = [c.get("metadata", {}).get("tags", []) for c in cells]
    # a new cell's id: "04-setup" for 04_*.ipynb (the notebooks' ids are "04-00", "04-01", ...)
    prefix = path.stem[:2] if path.stem[:2].isdigit() else re.sub(r"[^A-Za-z0-9_-]", "-", path.stem)[:50]
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "id": f"{prefix}-setup",
        "metadata": {"tags": [SETUP_TAG]},
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }
    at = [i for i, t in enumerate(tags) if SETUP_TAG in t]
    if at:
        cell["id"] = cells[at[0]].get("id", cell["id"])
        cells[at[0]] = cell
    else:
        parameters = [i for i, t in enumerate(tags) if "parameters" in t]
        code = [i for i, c in enumerate(cells) if c.get("cell_type") == "code"]
        cells.insert(parameters[0] + 1 if parameters else code[0] if code else len(cells), cell)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.notebook_setup",
        description="Write (or rewrite) the set-up cell of notebooks: install in Colab, data from the catalog.",
    )
    parser.add_argument("notebooks", nargs="+", help="notebook files (.ipynb)")
    parser.add_argument("--data", nargs="*", default=[], help="catalog names they read: novels, sst2:dev, ...")
    args = parser.parse_args(argv)
    try:
        for notebook in args.notebooks:
            write_setup_cell(notebook, args.data)
            print(f"{notebook}: set-up cell written ({', '.join(args.data) or 'no data'})")
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
