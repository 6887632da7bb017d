"""The real reader behind notebook 4's demonstrations and messages: the bundled minilm-squad and the
SQuAD questions it never trained on, how those questions are described, and calling the student's
function so that a stub or a crash becomes the sentence to print.
"""

from __future__ import annotations

import functools
from pathlib import Path

from lab.checkpoint import bundled_model, load
from lab.data import squad
from lab.data.datasets import find_data
from lab.files import REPOSITORY

from . import core


@functools.lru_cache(maxsize=1)
def reader(name: str = "minilm-squad"):
    """(model, tokenizer, held-out questions, source): a bundled QA model and SQuAD questions it
    did not train on (the last 8 articles of v1.1 dev; the bundled sample without the real data)."""
    folder = bundled_model(name)
    if folder is None:
        raise FileNotFoundError(f"the bundled model models/{name} is not there")
    model, tokenizer = load(folder)
    path = find_data("squad/dev-v1.1.json.zip", REPOSITORY / "notebooks" / "data" / "qa.json")
    examples = squad.load_squad(path)
    held_out = squad.split_by_article(examples, 40)[1] if path.name.startswith("dev-v1.1") else examples
    return model.eval(), tokenizer, held_out, path.name


def questions_of(source: str, held_out: bool = False) -> str:
    """How the questions read from `source` are described in the messages."""
    name = Path(source).name
    if not name.startswith("dev-v1.1"):
        return f"the lab's sample questions in SQuAD's format ({name}; the real SQuAD is not installed)"
    if held_out:
        return f"the SQuAD v1.1 dev questions of the last 8 articles, which the model never trained on ({name})"
    return f"SQuAD v1.1 dev questions ({name})"


def demo_call(student, *args, what: str):
    """The student's result, or the sentence to print instead (not implemented, an exception)."""
    return core.attempt(
        student,
        *args,
        what=what,
        not_implemented=f"{what[0].upper()}{what[1:]} is not implemented yet: fill in its cell above, run it, then "
        "run this cell again.",
    )
