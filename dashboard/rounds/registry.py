"""The kinds of round behind one interface, found by name: a Round, what a kind does with it
(RoundKind), the model's side and the class's tally they pass around, and the registry.

    kind = kind_of(rnd)                          # the round's kind (an UnknownKind error if none)
    kind.question_html(rnd)                      # ... every per-kind step is a method of RoundKind

dashboard/rounds/kinds.py defines the four kinds (one class each, registered with @register);
the package imports it, so a deck is read with every kind known. A fifth kind is one class there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field

KINDS: dict[str, RoundKind] = {}  # a kind's name (a deck's `kind:`) -> the kind, in the order defined


class UnknownKind(ValueError):
    """A round whose kind no class plays: the message names it and the kinds there are."""


def register(cls: type[RoundKind]) -> type[RoundKind]:
    """A class decorator: the kind (one instance) joins KINDS under its `name`."""
    kind = cls()
    if kind.name in KINDS:
        raise ValueError(f"two kinds of round are named {kind.name!r}")
    KINDS[kind.name] = kind
    return cls


def kind_of(rnd: Round | str) -> RoundKind:
    """The kind of a round (or of a kind's name)."""
    name = rnd if isinstance(rnd, str) else rnd.kind
    try:
        return KINDS[name]
    except (KeyError, TypeError):
        raise UnknownKind(f"no kind of round is called {name!r} (the kinds: {', '.join(KINDS)})") from None


@dataclass(frozen=True)
class Round:
    """One round of a deck: a kind, its text and fields, and optionally a model, a truth and a note."""

    kind: str
    text: str
    model: str | None = None
    truth: str | None = None
    note: str | None = None
    fields: dict = field(default_factory=dict)  # the kind's other fields: next, question, word, layer, head

    @property
    def title(self) -> str:
        return kind_of(self).title

    @property
    def task(self) -> str:
        return kind_of(self).task

    def get(self, name: str):
        return self.text if name == "text" else self.fields.get(name)


@dataclass
class ModelAnswer:
    """The model's side of a round: `options` (answer -> probability; for answer_span the start
    probabilities, `ends` the end ones), its own answer, and how it reads in words."""

    options: dict[str, float]
    answer: str
    words: str
    ends: dict[str, float] | None = None
    other: float = 0.0  # attention: the share on [CLS], [SEP] and words cut off, not on a word


@dataclass
class Tally:
    """The class's answers counted: `counts` (answer -> students; for answer_span, starts), `ends`,
    how many answered, and how many gave the model's own answer."""

    counts: Counter
    answered: int
    agreed: int
    ends: Counter | None = None

    @classmethod
    def of(cls, rnd: Round, model: ModelAnswer, answers) -> Tally:
        answers = list(answers)
        agreed = sum(a == model.answer for a in answers)
        counts, ends = kind_of(rnd).count(answers)
        return cls(counts, len(answers), agreed, ends)


class RoundKind(ABC):
    """One kind of round: its deck fields and checks, the student's answer, the model's, the
    question and the reveal. An answer is one short text (see kinds.py); `words` are the round's
    words a student taps (kinds.round_words). The defaults serve most kinds; a kind overrides them."""

    name: str  # the deck's `kind:`
    title: str  # its words for people ("Masked word")
    task: str  # the explore task whose menu lists its models
    fields: tuple[str, ...]  # what a deck's entry of this kind must give (text first)
    numbers: tuple[str, ...] = ()  # those of its fields that are whole numbers from 0 (the rest: texts)
    # what a student's phone shows to answer: a box for a typed word, IsNext/NotNext buttons, the
    # text's words to tap (then the teacher's page shows the text as well)
    types_a_word = False
    votes = False
    taps_words = False

    # -- the deck ------------------------------------------------------------------------------
    def problem(self, values: dict, truth: str | None) -> str | None:
        """What is wrong with a deck's entry beyond its fields' types (None: nothing)."""
        return None

    def label_extra(self, rnd: Round) -> list[str]:
        """What the teacher's menu adds in brackets to tell this round from others that ask the same."""
        return []

    # -- the answers ---------------------------------------------------------------------------
    @abstractmethod
    def normalize(self, rnd: Round, words: list[str], text: str) -> str:
        """A student's answer (stripped) as the tally counts it, or an AnswerError saying what to send."""

    def answer_words(self, words: list[str], answer: str) -> str:
        """An answer in words, as the reveal and the export show it."""
        return answer

    def tap(self, first: int, i: int) -> str | None:
        """Word `i` tapped (`first`: the word tapped before, or -1): the answer, or None while the
        answer needs another tap. Two taps: the first word, then the last."""
        return None if first < 0 else f"{min(first, i)}-{max(first, i)}"

    def count(self, answers: list[str]) -> tuple[Counter, Counter | None]:
        """The answers counted for the tally: (counts, ends), ends None but for a span's last words."""
        return Counter(answers), None

    @abstractmethod
    def model_answer(self, rnd: Round, model, tokenizer) -> ModelAnswer:
        """What the model says, from the same explore call its tab makes (a ValueError as it says)."""

    # -- what a page shows ---------------------------------------------------------------------
    @abstractmethod
    def question_html(self, rnd: Round) -> str:
        """The round's question as the students read it (HTML, every text escaped)."""

    @abstractmethod
    def question_text(self, rnd: Round) -> str:
        """The round's question in plain words, short: what a screen reader says when it starts."""

    @abstractmethod
    def reveal_summary(self, rnd: Round, words: list[str], model: ModelAnswer, tally: Tally) -> str:
        """The reveal's figure in one sentence, from its numbers."""

    @abstractmethod
    def reveal_body(self, words: list[str], model: ModelAnswer, tally: Tally, n: int) -> str:
        """The reveal's bars (HTML), `n` students making a full bar."""

    @abstractmethod
    def number_rows(self, words: list[str], model: ModelAnswer, tally: Tally) -> tuple[tuple, list]:
        """The reveal's numbers: the table's column heads, and its rows (a name, its cells)."""
