"""The stub cell a notebook hands out, derived from the reference solution so that the two cannot
drift apart: the solution's imports, then its signature and docstring with the body replaced by
`raise NotImplementedError`. A class keeps its docstring and the methods named in `given` whole
(an `__init__` that fixes BERT's parameter names); its other methods become stubs, keeping a first
`super().__init__(...)` call.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

MARKER = "raise NotImplementedError"


def stub_cell(imports: str, solution, given: tuple[str, ...] = ()) -> str:
    """The code cell as handed out: the imports (with their notes to the student), then the stub."""
    head = imports + "\n\n" if imports else ""
    return head + stub_code(solution, given)


def plain_imports(imports: str) -> str:
    """The imports without their trailing comments (the notes to the student in the stub cell)."""
    return re.sub(r"[ \t]+#.*$", "", imports, flags=re.MULTILINE)


def stub_code(solution, given: tuple[str, ...] = ()) -> str:
    """The solution's source with every body not in `given` replaced by the not-implemented marker."""
    source = textwrap.dedent(inspect.getsource(solution))
    lines = source.splitlines()
    node = ast.parse(source).body[0]
    if isinstance(node, ast.ClassDef):
        return "\n".join(_class_stub(node, lines, given))
    return "\n".join(_function_stub(node, lines))


def _start(node: ast.stmt) -> int:
    """The 0-based line where a definition starts: its first decorator, else its def/class line."""
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1


def _has_docstring(node) -> bool:
    return ast.get_docstring(node, clean=False) is not None


def _is_super_init(stmt: ast.stmt) -> bool:
    """`super().__init__(...)` as a statement of its own."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "__init__"
        and isinstance(call.func.value, ast.Call)
        and isinstance(call.func.value.func, ast.Name)
        and call.func.value.func.id == "super"
    )


def _header(node, lines: list[str], kept: int) -> list[str]:
    """The definition's lines up to the end of its first `kept` statements (none: its signature)."""
    if kept:
        return lines[_start(node) : node.body[kept - 1].end_lineno]
    head = lines[_start(node) : _start(node.body[0])]
    while head and (not head[-1].strip() or head[-1].lstrip().startswith("#")):
        head.pop()  # comments between the signature and the first statement stay with the body
    return head


def _function_stub(node, lines: list[str]) -> list[str]:
    kept = int(_has_docstring(node))
    if len(node.body) > kept and _is_super_init(node.body[kept]):
        kept += 1
    indent = " " * node.body[0].col_offset
    return _header(node, lines, kept) + [indent + MARKER]


def _class_stub(node: ast.ClassDef, lines: list[str], given: tuple[str, ...]) -> list[str]:
    docstring = int(_has_docstring(node))
    out = _header(node, lines, docstring)
    for item in node.body[docstring:]:
        out.append("")
        if isinstance(item, ast.FunctionDef) and item.name not in given:
            out += _function_stub(item, lines)
        else:
            out += lines[_start(item) : item.end_lineno]
    return out
