"""The house by the data flow, checked from the source with `ast`: the import graph of lab/,
dashboard/ and app.py (function-local imports included) has no cycle and never points against
the flow; no module takes another's private names; a function-local import only defers a
third-party dependency, and says why; the dashboard never imports training code; modules and
functions stay short enough to read; module docstrings say what and why, not a diary."""

import ast
import re
import statistics
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import ROOT

# The flow, top to bottom: a module may import modules of its own rank or of lower ranks only.
RANKS = [
    ("lab.files", 0),
    ("lab.config", 1),
    ("lab.device", 1),
    ("lab.tokenizer", 2),
    ("lab.data", 3),
    ("lab.model", 4),
    ("lab.modern", 4),  # the changes since BERT: pieces lab.model swaps in
    ("lab.modernbert", 4),  # ModernBERT's config and tensor names <-> the lab's
    ("lab.hub", 4),
    ("lab.checkpoint", 5),
    ("lab.run_files", 5),  # a run directory, read (the dashboard's view of training, without its code)
    ("lab.inference", 5),  # a model run over a dataset's windows (lab.data never runs one): above both
    ("lab.training", 6),
    ("lab.inspect", 7),
    ("lab.web", 8),  # the browser edition's export: the models as explore reads them
    ("lab.studies", 8),
    ("lab.figures", 9),
    ("lab.exercises", 10),
    ("lab.notebook_setup", 10),
    ("lab.__main__", 11),
    ("lab", 12),  # lab/__init__.py: the public names
    ("dashboard", 13),
    ("app", 14),
]
ENTRY_POINTS = {"app", "lab"}  # app.py and lab/__init__.py: importing them stays cheap
MODULE_LIMIT, FUNCTION_LIMIT, SCRIPT_FUNCTION_LIMIT, DOCSTRING_MEDIAN = 800, 80, 120, 12


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def sources() -> dict[str, tuple[Path, ast.Module]]:
    paths = sorted((ROOT / "lab").rglob("*.py")) + sorted((ROOT / "dashboard").rglob("*.py")) + [ROOT / "app.py"]
    return {module_name(p): (p, ast.parse(p.read_text(), str(p))) for p in paths}


def rank(module: str) -> int:
    """The rank of the longest prefix in RANKS that names the module or a package holding it."""
    found = [(len(prefix), r) for prefix, r in RANKS if module == prefix or module.startswith(prefix + ".")]
    return max(found, default=(0, -1))[1]


def resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom names (relative imports resolved from `module`)."""
    if not node.level:
        return node.module or ""
    path = sources()[module][0]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str):
    """(target module, ast node, function-local?) for every import of a project module."""
    tree = sources()[module][1]
    local = {
        id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f)
    }
    known = sources()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(module, node)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            if target in known:
                yield target, node, id(node) in local


def graph() -> dict[str, set[str]]:
    return {m: {t for t, _, _ in imports(m) if t != m} for m in sources()}


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as a list of modules, or None."""
    state: dict[str, int] = {}  # 1 = on the path, 2 = done
    path: list[str] = []

    def visit(m: str):
        state[m] = 1
        path.append(m)
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                return path[path.index(t) :] + [t]
            if t not in state and (found := visit(t)):
                return found
        state[m] = 2
        path.pop()
        return None

    for m in sorted(edges):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_every_module_has_a_place_in_the_flow():
    assert [m for m in sources() if rank(m) < 0] == []
    # the longest prefix ranks a module: lab.data.squad is lab.data's 3, not lab/__init__.py's rank
    assert (rank("lab.data.squad"), rank("lab.inference"), rank("lab")) == (3, 5, 12)
    assert {"lab.inspect.explore", "lab.data.instances", "lab.training.train"} <= set(sources())


def test_the_import_graph_has_no_cycle():
    assert cycle(graph()) is None


def test_no_import_points_against_the_flow():
    against = [f"{m} -> {t}" for m, targets in graph().items() for t in targets if rank(t) > rank(m)]
    assert against == [], "\n".join(against)


def test_the_dashboard_never_imports_training_code():
    found = [f"{m} -> {t}" for m, targets in graph().items() if rank(m) >= rank("dashboard") for t in targets]
    assert [edge for edge in found if edge.split(" -> ")[1].startswith("lab.training")] == []


def test_no_module_takes_another_modules_private_names():
    taken = []
    for module, (path, tree) in sources().items():
        bound = {}  # local name -> project module it stands for
        for target, node, _ in imports(module):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        taken.append(f"{path.name}:{node.lineno} imports {a.name}")
                    if f"{resolve(module, node)}.{a.name}" == target:
                        bound[a.asname or a.name] = target
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
                if node.attr.startswith("_") and not node.attr.startswith("__"):
                    taken.append(f"{path.name}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert taken == [], "\n".join(taken)


def function_local_imports(tree: ast.Module):
    for f in ast.walk(tree):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(f):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    yield f.name, node


def says_why(lines: list[str], node: ast.stmt) -> bool:
    """A comment on the import's own lines, or on the line above its block of imports."""
    if any("#" in line for line in lines[node.lineno - 1 : node.end_lineno]):
        return True
    above = node.lineno - 2
    while above >= 0 and (not lines[above].strip() or lines[above].strip().startswith(("import ", "from "))):
        above -= 1
    return above >= 0 and lines[above].strip().startswith("#")


def test_a_function_local_import_defers_a_dependency_and_says_why():
    """Exercise solutions are the student's code and import what they use: they are exempt. The
    entry points may defer the project's heavy modules (`import app` must not load torch)."""
    found = []
    for module, (path, tree) in sources().items():
        if module.startswith("lab.exercises"):
            continue
        lines = path.read_text().splitlines()
        project = {id(node) for _, node, local in imports(module) if local}
        for function, node in function_local_imports(tree):
            where = f"{path.relative_to(ROOT)}:{node.lineno} in {function}"
            if id(node) in project and module not in ENTRY_POINTS:
                found.append(f"{where}: imports the project's own code inside a function")
            elif not says_why(lines, node):
                found.append(f"{where}: a function-local import without a comment saying why")
    assert found == [], "\n".join(found)


def functions(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


def test_modules_and_functions_stay_short():
    long_modules = [f"{p.name}: {len(p.read_text().splitlines())}" for p, _ in sources().values()]
    long_modules = [m for m in long_modules if int(m.split(": ")[1]) > MODULE_LIMIT]
    long_functions = [
        f"{p.relative_to(ROOT)}:{line} {name} ({n} lines)"
        for p, tree in sources().values()
        for name, line, n in functions(tree)
        if n > FUNCTION_LIMIT
    ]
    scripts = sorted((ROOT / "benchmarks").glob("*.py")) + sorted((ROOT / "scripts").glob("*.py"))
    long_scripts = [
        f"{p.relative_to(ROOT)}:{line} {name} ({n} lines)"
        for p in scripts
        for name, line, n in functions(ast.parse(p.read_text()))
        if n > SCRIPT_FUNCTION_LIMIT
    ]
    too_long = long_modules + long_functions + long_scripts
    assert too_long == [], "\n".join(too_long)


def sys_path_edits(tree: ast.Module):
    """The lines that call a method of sys.path (insert, append, ...) or add to it."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
        elif isinstance(node, ast.AugAssign):
            target = node.target
        else:
            continue
        if ast.unparse(target) == "sys.path":
            yield node.lineno


def test_benchmarks_and_scripts_run_as_modules_without_path_hacks():
    """benchmarks/ and scripts/ are packages run from the repository root as `python -m
    benchmarks.NAME`: they import the lab and each other as any module does, so none of them
    edits sys.path (and no import needs a `# noqa: E402` for coming after such an edit)."""
    found = []
    for package in ("benchmarks", "scripts"):
        assert (ROOT / package / "__init__.py").is_file(), f"{package}/ is a package: python -m {package}.NAME"
        for path in sorted((ROOT / package).rglob("*.py")):
            text, where = path.read_text(), path.relative_to(ROOT)
            found += [f"{where}:{line}: edits sys.path" for line in sys_path_edits(ast.parse(text, str(path)))]
            found += [
                f"{where}:{i}: # noqa: E402" for i, line in enumerate(text.splitlines(), 1) if "noqa: E402" in line
            ]
    assert found == [], "\n".join(found)


def runs_a_model(tree: ast.Module):
    """(line, what) wherever a module runs a model: a function taking a `model` (or `*_model`)
    parameter, a call of such a name, a call of `.eval()` (a model into eval mode), or torch.no_grad."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            for a in args:
                if a.arg == "model" or a.arg.endswith("_model"):
                    yield node.lineno, f"{node.name}() takes {a.arg}"
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and (f.id == "model" or f.id.endswith("_model")):
                yield node.lineno, f"calls {f.id}(...)"
            elif isinstance(f, ast.Attribute) and f.attr == "eval" and not node.args:
                yield node.lineno, f"calls {ast.unparse(f)}()"
        if isinstance(node, ast.Attribute) and node.attr == "no_grad":
            yield node.lineno, "uses torch.no_grad"


def test_the_data_layer_never_runs_a_model():
    """lab.data cuts windows, batches them and decodes logits; running a model over them (eval mode,
    no gradients, batches through `model(**batch)`) is lab.inference's, a rank above. Docstrings that
    show `model(**batch)` taking a Batch are fine: they are not code."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for module, (path, tree) in sources().items()
        if module == "lab.data" or module.startswith("lab.data.")
        for line, what in runs_a_model(tree)
    ]
    assert found == [], "\n".join(found)


def strings_outside_docstrings(tree: ast.Module):
    """(line, text) of every string constant of a module that is not a docstring (f-strings' parts included)."""
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


BENCHMARKS_FOLDER = re.compile(r"(^|[/\\])benchmarks([/\\]|$)")  # "benchmarks", "benchmarks/ladder", "../benchmarks"


def test_the_library_never_reads_the_repositorys_benchmarks_folder():
    """benchmarks/ is the scripts and the results they commit: a library function reads such a folder
    when its caller names it (benchmarks/ladder.py passes its RESULTS), so no string of lab/ outside a
    docstring names that folder (`python -m benchmarks.ladder` in a message names a module: fine)."""
    assert BENCHMARKS_FOLDER.search("benchmarks") and BENCHMARKS_FOLDER.search("../benchmarks/ladder")
    assert not BENCHMARKS_FOLDER.search("python -m benchmarks.ladder")
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for module, (path, tree) in sources().items()
        if module.startswith("lab")
        for line, text in strings_outside_docstrings(tree)
        if BENCHMARKS_FOLDER.search(text)
    ]
    assert found == [], "\n".join(found)


def test_module_docstrings_are_short():
    """What the module is and why it is shaped so: measurements and history live in docs/."""
    lengths = {}
    for module, (_, tree) in sources().items():
        doc = ast.get_docstring(tree, clean=False)
        lengths[module] = len(doc.strip().splitlines()) if doc else 0
    assert all(lengths[m] > 0 for m in lengths if not m.endswith("__init__")), "every module says what it is"
    assert statistics.median(lengths.values()) <= DOCSTRING_MEDIAN, sorted(lengths.items(), key=lambda kv: -kv[1])[:10]


@pytest.mark.parametrize("package", ["lab", "lab.inspect", "lab.figures", "lab.training", "lab.data", "lab.studies"])
def test_the_public_api_still_reads_as_before(package):
    """`import lab`, `from lab import explore, plots, exercises`: the homes moved, the API did not."""
    import importlib

    import lab

    importlib.import_module(package)
    from lab import exercises, explore, plots

    assert explore.__name__ == "lab.inspect.explore" and plots.__name__ == "lab.figures.matplotlib_figures"
    assert exercises.__name__ == "lab.exercises" and callable(lab.load) and callable(explore.fill_mask)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        lab.nothing  # noqa: B018


def test_the_install_declares_its_licence_as_setuptools_wants_it():
    """project.license as an SPDX string with license-files (a TOML table makes every install
    print setuptools' deprecation warning); the string form needs setuptools >= 77."""
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT" and meta["project"]["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").is_file() and "setuptools>=77" in meta["build-system"]["requires"]
