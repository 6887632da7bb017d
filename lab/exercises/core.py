"""What every exercise shares: the result a check returns, the registry of exercises, and running a
student's code so that whatever it does (not written yet, an exception, a wrong answer) comes
back as a few plain sentences rather than a stack trace.

A checker is a function `checker(student, **options)` that calls the student's code through
`call(...)`, compares with the reference, and either raises `Fail(message, **details)` with a
diagnosis (what was checked, what differed, the most likely cause) or returns the message to show
on success (a string, or `(message, details)`). `run(exercise, student)` turns all of that into a
`CheckResult`. Each exercise module defines one `EXERCISE = Exercise(...)`; the package registers them.
"""

from __future__ import annotations

import contextlib
import html
import inspect
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .stubs import plain_imports, stub_cell

HERE = Path(__file__).resolve().parent

PASSED, NOT_IMPLEMENTED, NOT_YET = "PASSED", "NOT IMPLEMENTED YET", "NOT YET RIGHT"


@dataclass
class CheckResult:
    """The outcome of one check. `passed`: every comparison held. `message`: a few plain sentences
    (on a failure: what differed and its most likely cause). `details`: the inputs and the first
    differing values, for the curious. `implemented`: False when the student's code still raises
    NotImplementedError (the stub as handed out)."""

    name: str
    passed: bool
    message: str
    details: dict = field(default_factory=dict)
    implemented: bool = True

    def __bool__(self) -> bool:
        return self.passed

    @property
    def status(self) -> str:
        return PASSED if self.passed else (NOT_YET if self.implemented else NOT_IMPLEMENTED)

    def __str__(self) -> str:
        return f"{self.status} [{self.name}] {self.message}"

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:  # a short coloured box in a notebook; everything escaped
        colour = {PASSED: ("#e7f5ea", "#1f7a3a"), NOT_IMPLEMENTED: ("#fff6e0", "#8a5a00")}.get(
            self.status, ("#fdecea", "#a12622")
        )
        rows = "".join(
            f"<tr><td style='padding-right:1em;vertical-align:top'><code>{html.escape(str(k))}</code></td>"
            f"<td><code>{html.escape(short(v))}</code></td></tr>"
            for k, v in self.details.items()
        )
        more = f"<details><summary>details</summary><table>{rows}</table></details>" if rows else ""
        return (
            f"<div style='background:{colour[0]};border-left:6px solid {colour[1]};padding:8px 12px;"
            f"margin:4px 0;color:#111'><b style='color:{colour[1]}'>{self.status}</b> "
            f"<code>{html.escape(self.name)}</code><br>{html.escape(self.message)}{more}</div>"
        )


def short(value, limit: int = 400) -> str:
    """repr(value) (a string as it is), cut to `limit` characters."""
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Fail(Exception):
    """Raised by a checker: the student's code gave a wrong answer. `message` is the diagnosis."""

    def __init__(self, message: str, **details):
        super().__init__(message)
        self.message, self.details = message, details


class NotImplementedYet(Exception):
    """The student's code raised NotImplementedError (the stub as handed out)."""


def call(student: Callable, *args, what: str | None = None, **kwargs):
    """Call the student's function or class with these arguments. NotImplementedError becomes
    NotImplementedYet; any other exception becomes a Fail that names the call, the exception and
    the line of the student's code it came from (not a stack trace)."""
    try:
        return student(*args, **kwargs)
    except NotImplementedError:
        raise NotImplementedYet() from None
    except Fail:
        raise
    except Exception as exc:  # the student's bug, reported in one sentence
        name = what or getattr(student, "__name__", "your code")
        raise Fail(f"Calling {name} raised {type(exc).__name__}: {exc}{student_line(exc)}.", call=name) from None


class _TookTooLong(BaseException):  # a BaseException: `call` must not turn it into a Fail of its own
    pass


@contextlib.contextmanager
def time_limit(seconds: float, message: str):
    """Stop the student's code after `seconds` (an endless loop) with Fail(message). Works where
    signals do (POSIX, the main thread: a script, pytest, a Jupyter kernel); elsewhere no limit."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def stop(signum, frame):
        raise _TookTooLong()

    previous = signal.signal(signal.SIGALRM, stop)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)  # a timer already running (pytest-timeout's)
    t0 = time.monotonic()
    try:
        yield
    except _TookTooLong:
        raise Fail(message, seconds=seconds) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0:  # give the outer timer back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(1e-3, outer - (time.monotonic() - t0)))


def student_line(exc: BaseException) -> str:
    """' (at line N of your code: `source`)' for the innermost frame outside the lab and torch."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(str(HERE))
        and "site-packages" not in f.filename
        and "/lib/python" not in f.filename
    ]
    if not frames:
        return ""
    f = frames[-1]
    line = (f.line or "").strip()
    return f" (at line {f.lineno} of your code: `{line}`)" if line else f" (at line {f.lineno} of your code)"


@dataclass(frozen=True)
class Exercise:
    """One piece of the paper to build. `solution`: the reference implementation (a function or a
    class defined in this package, self-contained apart from `imports` and the names in `uses`,
    which earlier exercises define); its docstring is the student's contract. `imports`: the stub
    cell's import lines, with their notes to the student. `given`: the methods of a solution class
    that the stub shows whole. `group`: the exercise notebook it belongs to."""

    name: str
    title: str
    group: str
    checker: Callable
    solution: Callable
    hint: str
    imports: str = ""
    uses: tuple[str, ...] = ()
    given: tuple[str, ...] = ()

    @property
    def symbol(self) -> str:
        """The name the stub defines and the check cell passes to `check`."""
        return self.solution.__name__

    @property
    def stub(self) -> str:
        """The code cell handed out: imports, signature, docstring with the shapes, `raise NotImplementedError`."""
        return stub_cell(self.imports, self.solution, self.given)

    @property
    def solution_code(self) -> str:
        """The reference solution as a complete stub-cell replacement: its imports, then its source."""
        return plain_imports(self.imports).rstrip() + "\n\n\n" + source_of(self.solution)


REGISTRY: dict[str, Exercise] = {}


def register(exercise: Exercise) -> Exercise:
    if exercise.name in REGISTRY:
        raise ValueError(f"exercise {exercise.name!r} is registered twice")
    REGISTRY[exercise.name] = exercise
    return exercise


def run(exercise: Exercise, student, **options) -> CheckResult:
    """Run the exercise's checker on the student's code; always returns a CheckResult."""
    try:
        out = exercise.checker(student, **options)
    except NotImplementedYet:
        return CheckResult(
            exercise.name,
            False,
            f"Not implemented yet: {exercise.symbol} still raises NotImplementedError. Fill in the cell above "
            f"(the docstring gives the shapes; exercises.hint({exercise.name!r}) if you are stuck), run it, "
            "then run this check again.",
            implemented=False,
        )
    except Fail as f:
        return CheckResult(exercise.name, False, f.message, dict(f.details))
    message, details = out if isinstance(out, tuple) else (out, {})
    return CheckResult(exercise.name, True, message, dict(details))


def source_of(obj) -> str:
    """The source text of a solution (inspect; the package ships as .py files)."""
    return inspect.getsource(obj)


def by_symbol(symbol: str) -> Exercise | None:
    """The registered exercise whose stub defines `symbol`, or None."""
    return next((e for e in REGISTRY.values() if e.symbol == symbol), None)


def earlier_failures(student, symbols: tuple[str, ...]) -> str:
    """' Your attention does not pass its own check yet: ...' when a function the student's code
    uses (found in its module's namespace: the notebook) fails its own exercise."""
    fn = getattr(student, "forward", student)
    namespace = getattr(fn, "__globals__", {})
    for symbol in symbols:
        exercise = by_symbol(symbol)
        if exercise is None or symbol not in namespace or namespace[symbol] is exercise.solution:
            continue
        result = run(exercise, namespace[symbol])
        if not result.passed:
            return (
                f" Your {symbol} (exercise {exercise.name!r}) does not pass its own check yet, and this piece uses "
                f"it: make exercises.check({exercise.name!r}, {symbol}) pass first ({result.status.lower()})."
            )
    return ""


def attempt(
    student,
    *args,
    not_implemented: str = "not implemented yet: fill in the cell above, then run this one again",
    **kwargs,
):
    """For a notebook's demonstration: (the student's result, None), or (None, the sentence to print
    instead) while the code is a stub (`not_implemented`) or fails (the diagnosis)."""
    try:
        return call(student, *args, **kwargs), None
    except NotImplementedYet:
        return None, not_implemented
    except Fail as f:
        return None, f.message
