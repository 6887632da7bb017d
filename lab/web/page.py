"""The browser edition's page: built from web/ by Node (esbuild bundles web/src/ with its npm
packages into web/dist/), then copied into an exported site beside the models.

    from lab.web.page import build_page, copy_page
    copy_page("site")          # builds web/dist/ first when it is missing or older than web/src/

The npm packages come from the registry through web/package-lock.json (`npm ci`); the built
files are not committed (.gitignore).
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

from lab.files import REPOSITORY

WEB = REPOSITORY / "web"
DIST = WEB / "dist"
SOURCES = ("src", "index.html", "style.css", "build.mjs", "package-lock.json")
PAGE_FILES = ("index.html", "app.js", "style.css")  # the page's own files, besides ort/


def _newest(paths) -> float:
    times = [p.stat().st_mtime for root in paths for p in ([root] if root.is_file() else root.rglob("*")) if p.exists()]
    return max(times, default=0.0)


def page_is_current() -> bool:
    """Whether web/dist/ holds a build at least as new as every source file."""
    if not all((DIST / f).is_file() for f in PAGE_FILES):
        return False
    return _newest([DIST]) >= _newest([WEB / s for s in SOURCES])


def _npm(*args: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise FileNotFoundError(
            "the page is built with Node.js: install Node.js 18 or later (it brings npm), then run make web"
        )
    done = subprocess.run([npm, *args], cwd=WEB, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise ValueError(f"npm {' '.join(args)} failed in web/:\n{tail}")


def build_page(force: bool = False) -> Path:
    """web/dist/, built when missing or out of date (npm ci first when web/node_modules is
    missing); one build at a time across processes (a lock file in web/)."""
    with open(WEB / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if force or not page_is_current():
            if not (WEB / "node_modules").is_dir():
                _npm("ci", "--no-audit", "--no-fund")
            _npm("run", "build")
    return DIST


def copy_page(out) -> list[str]:
    """Copy the built page into the site folder `out`; returns the files copied (relative)."""
    dist = build_page()
    out = Path(out)
    copied = []
    for file in sorted(p for p in dist.rglob("*") if p.is_file()):
        rel = file.relative_to(dist)
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, out / rel)
        copied.append(rel.as_posix())
    return copied
