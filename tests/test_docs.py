"""The documentation stays a map that leads somewhere: README.md is short and links to pages that
exist, every relative link or image in README.md and docs/ resolves to a file, the README names
every notebook and keeps CI's command, no development-diary text creeps back, the model cards
open with plain lines a class can read, and the notebooks' prose-only cells are collapsed.

A *prose-only* cell (see `prose_block`): a code cell whose last statement shows Markdown
(`Markdown(...)` or `display(Markdown(...))`) and whose *prose block* -- that statement plus the
statements just before it that only assemble its text -- is at least PROSE_MIN_LINES non-blank
lines and at least half of the cell's non-blank lines. A statement assembles text when it writes
(assigns, or `.append`s / `.extend`s to) a name that the later prose statements read and it holds an
f-string or a string literal of three words or more; an `if`/`for` block counts when every
statement in it does that. Such cells carry the metadata {"jupyter": {"source_hidden": true}}
(JupyterLab collapses the code and keeps the output prose); no other cell hides its source.
"""

import ast
import re
from pathlib import Path

import nbformat
import pytest

from tests.conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CARDS = sorted((ROOT / "models").glob("*/README.md"))
MAX_README_LINES = 300
PROSE_MIN_LINES = 8
DIARY = ("tried and dropped", "the issue asked", "missed", "as the issue measured", "not yet the targets")

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")  # [text](target) and ![alt](target)
HTML_REF = re.compile(r"""(?:src|href)=["']([^"']+)["']""")


def markdown_files():
    return [README, *sorted(DOCS.rglob("*.md"))]


def relative_targets(text: str) -> list[str]:
    """Relative link and image targets of a Markdown text (code spans and fenced blocks skipped)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    targets = LINK.findall(text) + HTML_REF.findall(text)
    return [t for t in targets if not re.match(r"^(?:[a-z][a-z0-9+.-]*:|#|//)", t, re.I)]


# ------------------------------------------------------------------------------------------------
# README: a map
# ------------------------------------------------------------------------------------------------
def test_readme_is_a_short_map():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, (
        f"README.md has {len(lines)} lines (at most {MAX_README_LINES}): move detail to docs/"
    )


def test_readme_keeps_the_two_commands_ci_runs():
    text = README.read_text()
    assert "make demo" in text and "make test" in text
    ci = ROOT / ".ci" / "run"
    if ci.is_file():
        assert "make test" in ci.read_text(), "CI no longer runs make test: update the README's command"


def test_readme_links_to_the_docs_pages_and_they_exist():
    targets = relative_targets(README.read_text())
    pages = {t.split("#")[0] for t in targets if t.startswith("docs/") and t.split("#")[0].endswith(".md")}
    for page in (
        "docs/dashboard.md",
        "docs/pretraining.md",
        "docs/fine-tuning.md",
        "docs/performance.md",
        "docs/teaching/lesson-plan.md",
        "docs/teaching/worksheet.md",
        "docs/teaching/prompts.md",
    ):
        assert page in pages, f"README.md does not link to {page}"
    for page in pages:
        assert (ROOT / page).is_file(), f"README.md links to {page}, which does not exist"


@pytest.mark.parametrize("md", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_image_resolves(md):
    missing = []
    for target in relative_targets(md.read_text()):
        path = target.split("#")[0].split("?")[0]
        if path and not (md.parent / path).resolve().exists():
            missing.append(target)
    assert not missing, f"{md.relative_to(ROOT)}: links to missing files: {missing}"


def test_relative_targets_finds_links_and_skips_code_and_urls():
    text = (
        'see [a](docs/a.md) and ![b](docs/images/b.png), <img src="c.png">, [web](https://x.org), '
        "[top](#tour), `[code](not/a/link.md)`\n```\n[fenced](no.md)\n```"
    )
    assert relative_targets(text) == ["docs/a.md", "docs/images/b.png", "c.png"]


def test_readme_has_no_development_diary():
    text = README.read_text().lower()
    found = [phrase for phrase in DIARY if phrase in text]
    assert not found, f"README.md reads like a diary again: {found}"


def test_readme_names_all_notebooks_with_links():
    text = README.read_text()
    assert len(NOTEBOOKS) == 11, [p.name for p in NOTEBOOKS]
    for nb in NOTEBOOKS:
        assert f"notebooks/{nb.name}" in text, f"README.md does not link to notebooks/{nb.name}"


def test_readme_shows_the_dashboard_screenshots():
    images = {t for t in relative_targets(README.read_text()) if t.startswith("docs/images/")}
    for png in sorted((DOCS / "images").glob("app_*.png")):
        assert f"docs/images/{png.name}" in images, f"README.md does not show {png.name}"


# ------------------------------------------------------------------------------------------------
# Model cards: two plain lines for a class first
# ------------------------------------------------------------------------------------------------
def opening_lines(card: Path, n: int = 2) -> list[str]:
    """The first n non-blank lines after the title."""
    lines = [line for line in card.read_text().splitlines() if line.strip()]
    assert lines and lines[0].startswith("# "), f"{card} has no title"
    return lines[1 : 1 + n]


@pytest.mark.parametrize("card", CARDS, ids=lambda p: p.parent.name)
def test_model_card_opens_with_plain_lines(card):
    assert len(CARDS) >= 4
    opening = opening_lines(card)
    assert len(opening) == 2
    for line in opening:
        assert not line.startswith(("#", "|", "-", "*", ">", "```", "    ")), f"{card}: not a plain line: {line!r}"
        assert "`" not in line and "python " not in line and "--" not in line, (
            f"{card}: the opening lines are for a class, no code or commands: {line!r}"
        )
    text = " ".join(opening).lower()
    assert "good at" in text and any(w in text for w in ("bad at", "weak at", "poor at")), (
        f"{card}: say what it is good and bad at"
    )


# ------------------------------------------------------------------------------------------------
# Notebooks: prose-only cells collapsed
# ------------------------------------------------------------------------------------------------
def _parse(source: str) -> ast.Module:
    # IPython magics and shell lines are not Python: blank them out
    return ast.parse(
        "\n".join("#" + line if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    )


def _called(node, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _shows_markdown(stmt) -> bool:
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    call = stmt.value
    return _called(call, "Markdown") or (_called(call, "display") and any(_called(a, "Markdown") for a in call.args))


def _has_prose(stmt) -> bool:
    return any(
        isinstance(node, ast.JoinedStr)
        or isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and len(node.value.split()) >= 3
        for node in ast.walk(stmt)
    )


def _written(stmt) -> set[str]:
    names = set()
    for node in ast.walk(stmt):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend")
            and isinstance(node.func.value, ast.Name)
        ):
            names.add(node.func.value.id)
    return names


def _read(stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _leaves(stmt):
    if isinstance(stmt, (ast.If, ast.For)):
        for child in [*stmt.body, *stmt.orelse]:
            yield from _leaves(child)
    else:
        yield stmt


def _assembles_text(stmt, wanted: set[str]) -> bool:
    if isinstance(stmt, (ast.If, ast.For)):
        return all(_has_prose(leaf) and _written(leaf) & wanted for leaf in _leaves(stmt))
    return (
        isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr))
        and _has_prose(stmt)
        and bool(_written(stmt) & wanted)
    )


def prose_block(source: str) -> list[ast.stmt]:
    """The trailing statements of a cell that only produce its Markdown output ([] if none)."""
    body = _parse(source).body
    if not body or not _shows_markdown(body[-1]):
        return []
    block, wanted = [body[-1]], _read(body[-1])
    for stmt in reversed(body[:-1]):
        if not _assembles_text(stmt, wanted):
            break
        block.insert(0, stmt)
        wanted |= _read(stmt)
    return block


def is_prose_only(source: str) -> bool:
    nonblank = {n for n, line in enumerate(source.splitlines(), 1) if line.strip()}
    prose = {n for s in prose_block(source) for n in range(s.lineno, s.end_lineno + 1)} & nonblank
    return len(prose) >= PROSE_MIN_LINES and 2 * len(prose) >= len(nonblank)


def test_prose_only_definition():
    prose = (
        "x = measure()\n"
        + 'lines = [f"it was {x} today"]\n'
        + 'lines.append(f"and {x} more words")\n' * 6
        + 'Markdown("\\n".join(lines))\n'
    )
    assert is_prose_only(prose)
    computing = "x = measure()\n" * 9 + 'Markdown(f"it was {x} today and more")\n'
    assert not is_prose_only(computing)
    no_markdown = 'lines = [f"it was {x} today"]\n' * 9 + "print(lines)\n"
    assert not is_prose_only(no_markdown)
    loop_that_computes = (
        'lines = []\nfor m in models:\n    r = evaluate(m)\n    lines.append(f"{m} scores {r} here")\n' * 3
        + 'Markdown("\\n".join(lines))\n'
    )
    assert not is_prose_only(loop_that_computes)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_prose_only_cells_are_collapsed_and_no_others(path):
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        hidden = bool(cell.metadata.get("jupyter", {}).get("source_hidden"))
        if is_prose_only(cell.source):
            assert hidden, f"{path.name} cell {i} only writes prose: set metadata jupyter.source_hidden"
        else:
            assert not hidden, f"{path.name} cell {i} computes something: do not hide its source"


def test_some_notebook_cells_are_prose_only():
    count = sum(
        is_prose_only(c.source)
        for nb in NOTEBOOKS
        for c in nbformat.read(nb, as_version=4).cells
        if c.cell_type == "code"
    )
    assert count >= 3, count
