"""Build it yourself: one checker per piece of the BERT paper, each giving a diagnosis, not a diff.

    from lab import exercises
    exercises.names()                         # the pieces, in the paper's order
    exercises.check("attention", attention)   # -> CheckResult(passed, message, details)
    exercises.hint("attention")               # a nudge, not the answer
    exercises.solution("attention")           # the reference source (for a teacher to show)
    exercises.solution_code("attention")      # the same, ready to paste into the stub cell
    model = exercises.assemble(embeddings=MyEmbeddings, layer=MyLayer, config=cfg)

The notebooks in notebooks/exercises/ hand out one stub cell per piece; a check cell below it
calls `check`. The modules here hold, per group, the reference solutions, the checkers and their
registration: encoder.py (tokens, embeddings, attention, the layer, the capstone), pretraining.py
(masking, NSP pairs, the loss, AdamW), finetuning.py (the classifier head and step, QA spans,
SQuAD's metrics).
"""

from __future__ import annotations

from . import core
from .core import CheckResult, Exercise

# the paper's order (WordPiece, Figure 2's input, the encoder, pre-training, fine-tuning)
ORDER = (
    "wordpiece",
    "embeddings",
    "attention",
    "multi_head",
    "encoder_layer",
    "masking",
    "nsp_pairs",
    "pretraining_loss",
    "adamw",
    "classifier",
    "span_decoding",
    "squad_metrics",
)

_loaded = False


def _registry() -> dict[str, Exercise]:
    global _loaded
    if not _loaded:  # the groups register themselves on import (torch-heavy: imported on first use)
        from . import encoder, finetuning, pretraining  # noqa: F401

        _loaded = True
    return core.REGISTRY


def names() -> list[str]:
    """Every exercise's name, in the paper's order."""
    reg = _registry()
    return [n for n in ORDER if n in reg] + sorted(n for n in reg if n not in ORDER)


def exercise(name: str) -> Exercise:
    reg = _registry()
    if name not in reg:
        raise KeyError(f"no exercise {name!r}; the exercises are: {', '.join(names())}")
    return reg[name]


def check(name: str, student, **options) -> CheckResult:
    """Check the student's function or class for exercise `name`; options are the checker's own
    (see its docstring: `help(exercises.exercise(name).checker)`)."""
    return core.run(exercise(name), student, **options)


def hint(name: str) -> str:
    return exercise(name).hint


class SourceText(str):
    """Source code that shows as code in a notebook and prints as itself."""

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def _repr_html_(self):
        import html

        return f"<pre><code>{html.escape(str(self))}</code></pre>"


def solution(name: str) -> SourceText:
    """The reference implementation's source text (for a teacher to show)."""
    return SourceText(core.source_of(exercise(name).solution))


def solution_code(name: str) -> str:
    """The reference solution as a complete stub-cell replacement: its imports, then its source."""
    ex = exercise(name)
    return ex.imports.rstrip() + "\n\n\n" + core.source_of(ex.solution)


def stub(name: str) -> str:
    """The stub cell as handed out in the exercise notebook."""
    return exercise(name).stub


def __getattr__(attr):  # assemble / capstone live with the encoder exercises (imported lazily)
    if attr in ("assemble", "capstone", "from_notebook"):
        from . import encoder

        return getattr(encoder, attr)
    raise AttributeError(attr)


__all__ = ["CheckResult", "names", "check", "hint", "solution", "solution_code", "stub", "assemble"]
