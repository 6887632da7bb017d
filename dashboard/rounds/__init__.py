"""Class rounds: students guess before the model answers, and the projector shows both.

dashboard/rounds/deck.py        the deck file (YAML or JSON) and its rounds
dashboard/rounds/registry.py    a round, the kinds' one interface (RoundKind), KINDS and kind_of
dashboard/rounds/kinds.py       the four kinds, one class each: answers checked, the model's side, the reveal
dashboard/rounds/classroom.py   the class's state: students, the round, its answers, the export
dashboard/rounds/pages.py       the teacher's page, the student's page, the tabs' "Ask the class"
"""

from .classroom import ClassError, Classroom
from .deck import DEFAULT_DECK, DeckError, Round, load_deck
from .kinds import AnswerError  # (importing kinds registers the four kinds: registry.KINDS)
from .pages import Rounds
from .registry import KINDS, RoundKind, UnknownKind, kind_of

__all__ = [
    "DEFAULT_DECK", "KINDS", "AnswerError", "ClassError", "Classroom", "DeckError", "Round", "RoundKind", "Rounds",
    "UnknownKind", "kind_of", "load_deck",
]  # fmt: skip
