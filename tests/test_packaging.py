"""The wheel built from this tree holds the whole library and dashboard: installed in a fresh venv
(not the editable install the other tests import), every module of `lab` and `dashboard` imports
from that venv, and every data file inside those packages is there too.

The wheel is built offline (--no-build-isolation: setuptools from .venv) from a copy of what the
build reads (pyproject.toml, the readme, the license, the top-level packages), so that the build's
build/ and *.egg-info stay out of the repository. The fresh venv cannot download the dependencies:
after the wheel is installed, a deps.pth puts .venv's site-packages on its sys.path. A path line of
a .pth is only appended to sys.path (the .pth files inside that folder are not run), so the editable
install's finder (__editable__.bert_lab-*.pth there) stays off; the child checks that too.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import tomllib

from tests.conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PACKAGES = ("lab", "dashboard")

# Run by the fresh venv's python in an empty folder: every module of PACKAGES imported, and where
# each came from ({"modules": {name: file}, "errors": {name: last line of the error}, ...}).
IMPORT_EVERYTHING = """
import importlib, json, pkgutil, sys, traceback
modules, errors = {}, {}

def load(name):
    try:
        module = importlib.import_module(name)
    except BaseException:
        errors[name] = traceback.format_exc().strip().splitlines()[-1]
        return None
    modules[name] = module.__file__
    return module

for top in PACKAGES:
    package = load(top)
    if package is not None:
        for info in pkgutil.walk_packages(package.__path__, top + ".", onerror=lambda name: None):
            load(info.name)
editable = [m for m in sys.modules if "__editable__" in m]
editable += [repr(f) for f in sys.meta_path if "editable" in type(f).__module__]
print(json.dumps({"modules": modules, "errors": errors, "editable": editable, "prefix": sys.prefix}))
"""


def build_source(to: Path) -> Path:
    """A copy of what the wheel is built from: pyproject.toml, the files it names (readme, license)
    and every top-level package of the tree (what setuptools' package discovery looks at)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    to.mkdir()
    for name in ["pyproject.toml", project["readme"], *project.get("license-files", [])]:
        shutil.copy2(ROOT / name, to / name)
    for folder in ROOT.iterdir():
        if (folder / "__init__.py").is_file():
            shutil.copytree(folder, to / folder.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return to


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """The wheel installed in a fresh venv, and what importing each module there gave."""
    tmp = tmp_path_factory.mktemp("packaging")
    source = build_source(tmp / "source")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV")}

    def run(*argv, cwd=tmp):
        done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, cwd=cwd, env=env)
        assert done.returncode == 0, f"{' '.join(map(str, argv))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    run(*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", tmp / "wheels", source)
    (wheel,) = (tmp / "wheels").glob("bert_lab-*.whl")
    venv = tmp / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)  # pip comes from .venv (below): no ensurepip
    python = venv / "bin" / "python"
    run(*pip, "--python", python, "install", "--no-deps", "--no-index", "-q", wheel)
    # written after the install, so that pip saw no bert-lab (the editable one) already installed
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    empty = tmp / "elsewhere"  # not the repository: nothing importable in the current folder
    empty.mkdir()
    out = run(python, "-c", f"PACKAGES = {PACKAGES!r}\n{IMPORT_EVERYTHING}", cwd=empty)
    return {**json.loads(out.strip().splitlines()[-1]), "site": site, "source": source}


def test_every_module_imports_from_the_installed_wheel(installed):
    assert not installed["errors"], installed["errors"]
    assert not installed["editable"], f"the editable install is active in the fresh venv: {installed['editable']}"
    modules, site = installed["modules"], installed["site"]
    outside = {name: file for name, file in modules.items() if not Path(file).resolve().is_relative_to(site.resolve())}
    assert not outside, f"imported from outside the fresh venv: {outside}"
    source = installed["source"]
    in_the_tree = {
        ".".join(p.relative_to(source).with_suffix("").parts).removesuffix(".__init__")
        for top in PACKAGES
        for p in (source / top).rglob("*.py")
    }
    assert in_the_tree <= set(modules), f"not in the wheel: {sorted(in_the_tree - set(modules))}"
    assert {"dashboard.rounds", "dashboard.tabs", "lab.web"} <= set(modules)
    shipped = {p.name for p in site.iterdir() if p.is_dir() and not p.name.endswith(".dist-info")}
    assert shipped == set(PACKAGES), "the wheel ships other top-level packages (scripts/, benchmarks/...)"


def test_the_packages_data_files_are_installed(installed):
    """Any file other than Python inside lab/ and dashboard/ ships with them (package-data)."""
    source, site = installed["source"], installed["site"]
    data = [p.relative_to(source) for top in PACKAGES for p in (source / top).rglob("*") if p.is_file()]
    missing = [str(p) for p in data if p.suffix != ".py" and not p.name.startswith(".") and not (site / p).is_file()]
    assert not missing, f"not in the wheel: {missing}"
