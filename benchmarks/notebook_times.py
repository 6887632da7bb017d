"""How long each notebook takes at the defaults it ships with, and which cells take long.

    python -m benchmarks.notebook_times                 # every notebook, all cores (THREADS = None)
    python -m benchmarks.notebook_times 02 06           # some of them
    python -m benchmarks.notebook_times --threads 1     # one thread, as tests/test_notebooks.py runs them

Each notebook runs top to bottom in notebooks/ with nbclient, as the test suite runs them but
without its checks, its training runs written to a temporary folder. Prints each notebook's wall
time (kernel start included) and every cell over 20 s, with whether the Markdown before it
announces the time, as the notebooks promise for long cells. The goal: each notebook at most 3
minutes on 2 quiet cores (docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LONG = 20.0  # seconds: cells above this must show progress and say how long they take


def cell_seconds(cell) -> float | None:
    """A cell's execution time from the timestamps nbclient records."""
    timing = cell.metadata.get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return None
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def run(path: Path, threads: int | None) -> tuple[float, list[tuple[int, float, str, bool]]]:
    nb = nbformat.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    with tempfile.TemporaryDirectory() as runs:
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(f"THREADS = {threads!r}\nRUNS = {runs!r}"))
        client = NotebookClient(
            nb,
            kernel_name="python3",
            timeout=1800,
            record_timing=True,
            resources={"metadata": {"path": str(NOTEBOOKS)}},
        )
        t0 = time.perf_counter()
        client.execute()
        total = time.perf_counter() - t0
    long = []
    for i, cell in enumerate(nb.cells):
        seconds = cell_seconds(cell) if cell.cell_type == "code" else None
        if seconds is not None and seconds > LONG:
            before = next((c for c in reversed(nb.cells[:i]) if c.cell_type == "markdown"), None)
            announced = bool(
                before is not None and "about" in before.source.lower() and "here" in before.source.lower()
            )
            # numbered as in the notebook file (the inserted settings cell not counted)
            long.append((i - (i > at), seconds, cell.source.strip().splitlines()[0][:70], announced))
    return total, long


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("which", nargs="*", help="notebook numbers, e.g. 02 06 (default: all)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads in the notebooks (default: all cores)")
    args = ap.parse_args(argv)
    # the kernel is this venv's python (kernel.json says "python": put the venv first on PATH)
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    paths = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if not args.which or p.name[:2] in args.which)
    print(f"threads: {args.threads or 'all cores'} ({os.cpu_count()} here)")
    for path in paths:
        total, long = run(path, args.threads)
        print(f"{path.stem}: {total:.0f} s{'  (over 3 minutes)' if total > 180 else ''}")
        for i, seconds, first, announced in long:
            warning = "" if announced else "   <- no “about ... here” line before it"
            print(f"    cell {i}: {seconds:.0f} s  {first}{warning}")


if __name__ == "__main__":
    main()
