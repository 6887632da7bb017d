"""A deck: the rounds a teacher plays with a class, read from a small YAML or JSON file.

    rounds:
      - kind: masked_word                 # masked_word | next_sentence | answer_span | attention
        text: he opened the [MASK] and walked into the garden .
        model: bert-lab-classroom         # optional: the end of a model's name; else the tab's default
        truth: door                       # optional: the right answer, shown at the reveal
        note: Both sides decide.          # optional: one line said at the reveal

What each kind reads besides `text` (the sentence, the first sentence, or the paragraph):
next_sentence `next` (sentence B; truth IsNext or NotNext), answer_span `question` (truth: the
answer's words), attention `word` (the word whose attention row is asked), `layer` and `head`
(counted from 0, as the Attention tab's sliders). docs/teaching/deck.yaml is the default deck.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .registry import KINDS, Round, kind_of

# the kinds, their fields and their checks: registry.RoundKind, one class each in kinds.py
OPTIONAL = ("model", "truth", "note")
MAX_TEXT = 2_000  # characters of a deck's text: a paragraph a phone can show
DEFAULT_DECK = Path(__file__).resolve().parents[2] / "docs" / "teaching" / "deck.yaml"


class DeckError(ValueError):
    """A deck that cannot be read: the message names the file, the round and the field."""


def make_round(entry, where: str = "round") -> Round:
    """A Round from a deck's entry (a mapping); a DeckError saying `where` and what is wrong."""
    if not isinstance(entry, dict):
        raise DeckError(f"{where}: expected a mapping with kind and text, got {type(entry).__name__}")
    kind = entry.get("kind")
    if kind not in KINDS:
        raise DeckError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    spec = KINDS[kind]
    needed = spec.fields
    unknown = sorted(set(entry) - {"kind", *needed, *OPTIONAL})
    if unknown:
        raise DeckError(
            f"{where}: {kind} has no field {', '.join(unknown)} (its fields: {', '.join(needed + OPTIONAL)})"
        )
    values = {}
    for name in needed:
        value = entry.get(name)
        if name in spec.numbers:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise DeckError(f"{where}: {name} must be a whole number from 0, got {value!r}")
        elif not isinstance(value, str) or not value.strip():
            raise DeckError(f"{where}: {name} must be a text, got {value!r}")
        elif len(value) > MAX_TEXT:
            raise DeckError(f"{where}: {name} has {len(value):,} characters, at most {MAX_TEXT:,}")
        values[name] = value.strip() if isinstance(value, str) else value
    for name in OPTIONAL:
        if entry.get(name) is not None and not isinstance(entry[name], (str, int, float)):
            raise DeckError(f"{where}: {name} must be a text, got {entry[name]!r}")
    truth = None if entry.get("truth") is None else str(entry["truth"]).strip()
    problem = spec.problem(values, truth)
    if problem:
        raise DeckError(f"{where}: {problem}")
    text = values.pop("text")
    model, note = (None if entry.get(k) is None else str(entry[k]).strip() for k in ("model", "note"))
    return Round(kind, text, model or None, truth or None, note or None, values)


def load_deck(path) -> list[Round]:
    """The rounds of a deck file (.yaml, .yml or .json): a list of rounds, or a mapping whose
    `rounds` is one. Every problem is a DeckError naming the file's name and the round."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DeckError(f"{path.name}: cannot be read ({type(e).__name__})") from None
    try:
        data = json.loads(raw) if path.suffix.lower() == ".json" else yaml.safe_load(raw)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        mark = getattr(e, "problem_mark", None)
        line = getattr(e, "lineno", None) or (mark.line + 1 if mark else "?")
        raise DeckError(
            f"{path.name}: not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'} (line {line})"
        ) from None
    entries = data.get("rounds") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise DeckError(f"{path.name}: expected a list of rounds (or `rounds:` holding one)")
    return [make_round(e, f"{path.name}, round {n}") for n, e in enumerate(entries, 1)]


def deck_labels(deck: list[Round], width: int = 60) -> list[str]:
    """The teacher's menu: "4. Attention: she opened the letter … (layer 1, head 1)", one per round,
    every label distinct (rounds that ask the same are told apart by their layer and head, then by
    their model)."""

    def label(n: int, rnd: Round, model: bool) -> str:
        extra = kind_of(rnd).label_extra(rnd)
        extra += [rnd.model or "the default model"] if model else []
        asked = " ".join(str(rnd.get("question") or rnd.text).split())
        asked = asked if len(asked) <= width else asked[: width - 1].rsplit(" ", 1)[0] + " …"
        return f"{n}. {rnd.title}: {asked}" + (f" ({', '.join(extra)})" if extra else "")

    plain = [label(n, r, False)[len(str(n)) :] for n, r in enumerate(deck, 1)]
    return [label(n, r, plain.count(plain[n - 1]) > 1) for n, r in enumerate(deck, 1)]
