"""Build it yourself: one checker per piece of the BERT paper, each giving a diagnosis, not a diff.

    from lab import exercises
    exercises.check("attention", attention)   # -> CheckResult(passed, message, details)
    exercises.hint("attention"); exercises.solution("attention"); exercises.names()
    model = exercises.assemble(embeddings=MyEmbeddings, layer=MyLayer, config=cfg)
    exercises.check_step(trace, "bert.embeddings.sum", my_sum, model=model)   # notebook 11, BERT by hand

One module per exercise holds its reference solution (its signature and docstring are the stub the
notebook hands out), its checker, its hint and one `EXERCISE`; EXERCISES registers them in order.
by_hand checks the steps of a forward pass computed by hand (no stub: not in the registry).
"""

from __future__ import annotations

import html

from . import (
    adamw,
    attention,
    classifier,
    core,
    embeddings,
    encoder_layer,
    masking,
    multi_head,
    nsp_pairs,
    pretraining_loss,
    span_decoding,
    squad_metrics,
    wordpiece,
)
from .assembly import assemble, from_notebook
from .by_hand import StepChecker, check_step
from .capstone_sst2 import CapstoneResult, capstone
from .core import CheckResult, Exercise

# the paper's order: WordPiece, Figure 2's input, the encoder, pre-training, fine-tuning
EXERCISES = (
    wordpiece,
    embeddings,
    attention,
    multi_head,
    encoder_layer,
    masking,
    nsp_pairs,
    pretraining_loss,
    adamw,
    classifier,
    span_decoding,
    squad_metrics,
)
for _module in EXERCISES:
    core.register(_module.EXERCISE)


def names() -> list[str]:
    """Every exercise's name, in the paper's order."""
    return list(core.REGISTRY)


def exercise(name: str) -> Exercise:
    if name not in core.REGISTRY:
        raise KeyError(f"no exercise {name!r}; the exercises are: {', '.join(names())}")
    return core.REGISTRY[name]


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
        return f"<pre><code>{html.escape(str(self))}</code></pre>"


def solution(name: str) -> SourceText:
    """The reference implementation's source text (for a teacher to show)."""
    return SourceText(core.source_of(exercise(name).solution))


def solution_code(name: str) -> str:
    """The reference solution as a complete stub-cell replacement: its imports, then its source."""
    return exercise(name).solution_code


def stub(name: str) -> str:
    """The stub cell as handed out in the exercise notebook."""
    return exercise(name).stub


__all__ = [
    "CheckResult",
    "CapstoneResult",
    "names",
    "check",
    "hint",
    "solution",
    "solution_code",
    "stub",
    "assemble",
    "capstone",
    "from_notebook",
    "check_step",
    "StepChecker",
]
