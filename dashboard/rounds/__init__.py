"""Class rounds: students guess before the model answers, and the projector shows both.

dashboard/rounds/deck.py        the deck file (YAML or JSON) and its rounds
dashboard/rounds/kinds.py       the four kinds: answers checked, the model's side, the reveal
dashboard/rounds/classroom.py   the class's state: students, the round, its answers, the export
dashboard/rounds/pages.py       the teacher's page, the student's page, the tabs' "Ask the class"
"""

from .classroom import ClassError, Classroom
from .deck import DEFAULT_DECK, DeckError, Round, load_deck
from .pages import Rounds

__all__ = ["DEFAULT_DECK", "ClassError", "Classroom", "DeckError", "Round", "Rounds", "load_deck"]
