"""A class playing rounds: who joined, the round being played, its answers, and the export.

    room = Classroom(load_deck(DEFAULT_DECK), answerer, size=200)
    token = room.join(room.code, "Ada")          # a student; ClassError when the room is full
    room.start(room.key, 1)                      # the teacher: the deck's first round (the model answers now)
    room.answer(token, "door")                   # counted once per student; changeable until the reveal
    room.reveal(room.key); room.next(room.key); room.export(room.key)   # -> a CSV file

One object per server, shared by every page (the teacher's, the students'), guarded by one lock.
Memory is bounded by the class: at most `size` students and one round's answers; a round's
answers go to the export file when the next round starts.
"""

from __future__ import annotations

import csv
import io
import secrets
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .deck import Round
from .kinds import AnswerError, ModelAnswer, Tally, answer_words, normalize, round_words

CODE_LETTERS = "ACDEFHJKMNPRTUVWXY"  # no look-alikes (B/8, I/1, O/0, S/5, G/6, L, Q, Z/2)
MAX_NAME = 30
EXPORT_COLUMNS = (
    "round", "deck_round", "kind", "question", "sentence_b", "word", "layer", "head", "model", "model_answer",
    "truth", "student", "answer", "answer_words", "agrees_with_model",
)  # fmt: skip


class ClassError(ValueError):
    """What a student or the teacher is told: the room is full, the round is closed, the key is wrong."""


@dataclass
class Live:
    """The round being played: its number in the class, the deck's round, the model's answer
    (computed when it starts, shown at the reveal) and the answers so far (student -> answer)."""

    number: int
    round: Round
    model_name: str
    model: ModelAnswer
    words: list[str]
    answers: dict[str, str] = field(default_factory=dict)
    tally: Tally | None = None  # set at the reveal
    deck_number: int | None = None  # its number in the deck (from 1); None for a round made in a tab

    @property
    def revealed(self) -> bool:
        return self.tally is not None

    @property
    def label(self) -> str:
        """What the pages call it: the deck's number (the teacher's menu says the same), or a tab's round."""
        return f"Round {self.deck_number}" if self.deck_number else "A round from a tab"


class Classroom:
    """The class's state. `answerer(round) -> (model name, ModelAnswer)` computes the model's side."""

    def __init__(self, deck: list[Round], answerer, size: int = 200, code: str | None = None, key: str | None = None):
        self.deck, self.answerer, self.size = list(deck), answerer, size
        self.code = (code or "".join(secrets.choice(CODE_LETTERS) for _ in range(4))).upper()
        self.key = key or secrets.token_urlsafe(9)
        self.students: dict[str, str] = {}  # token -> name
        self.live: Live | None = None
        self.position = 0  # the deck's next round (0-based)
        self.version = 0  # changes whenever what a student's page shows changes
        self.started = 0  # rounds started
        self._lock = threading.Lock()
        self.export_path = Path(tempfile.mkdtemp(prefix="bert-lab-class-")) / "rounds.csv"
        with self.export_path.open("w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerow(EXPORT_COLUMNS)

    # -- students --------------------------------------------------------------------------
    def join(self, code, name="") -> str:
        """A new student's token, given the room code (and a name, optional)."""
        if str(code or "").strip().upper() != self.code:
            raise ClassError("That room code is not this room's: the projector shows the code")
        name = " ".join(str(name or "").split())
        if len(name) > MAX_NAME:
            raise ClassError(f"A name of at most {MAX_NAME} characters, please")
        with self._lock:
            if len(self.students) >= self.size:
                raise ClassError(f"The room is full ({self.size} students): ask the teacher")
            token = secrets.token_urlsafe(12)
            self.students[token] = name or f"student {len(self.students) + 1}"
        return token

    def knows(self, token) -> bool:
        return token in self.students

    def answer(self, token, answer) -> str:
        """Record (or change) a student's answer to the open round; the line their page shows."""
        with self._lock:
            if token not in self.students:
                raise ClassError("Join the room first (the projector shows its code)")
            live = self.live
            if live is None:
                raise ClassError("No round yet: wait for the teacher to start one")
            if live.revealed:
                raise ClassError("This round is closed: the answer is shown")
            value = normalize(live.round, live.words, answer)
            changed = token in live.answers
            live.answers[token] = value
        shown = answer_words(live.round, live.words, value)
        return f"{'Changed to' if changed else 'Sent'}: {shown} (you can change it until the reveal)"

    def mine(self, token) -> str | None:
        live = self.live
        return live.answers.get(token) if live else None

    # -- the teacher -----------------------------------------------------------------------
    def check_key(self, key) -> None:
        if not secrets.compare_digest(str(key or "").strip().encode(), self.key.encode()):
            raise ClassError("Only the teacher can do this: the teacher key is printed where the server started")

    def start(self, key, number: int | None = None, rnd: Round | None = None) -> str:
        """Start the deck's round `number` (from 1), or `rnd` (a round made from a tab)."""
        self.check_key(key)
        if rnd is None:
            if not 1 <= int(number or 0) <= len(self.deck):
                raise ClassError(f"The deck has rounds 1 to {len(self.deck)}, not {number}")
            rnd = self.deck[int(number) - 1]
        model_name, model = self.answerer(rnd)  # outside the lock: answers keep coming meanwhile
        with self._lock:
            self._archive()
            self.started += 1
            self.live = Live(
                self.started, rnd, model_name, model, round_words(rnd), deck_number=int(number) if number else None
            )
            if number:
                self.position = int(number)
            self.version += 1
        return f"{self.live.label} started: {rnd.title}. Reveal when the class has answered."

    def next(self, key) -> str:
        """Start the deck's next round."""
        self.check_key(key)
        if self.position >= len(self.deck):
            raise ClassError(f"That was the deck's last round ({len(self.deck)}): pick one to play again")
        return self.start(key, self.position + 1)

    def reveal(self, key) -> str:
        """Close the round and show the model's answer beside the class's."""
        self.check_key(key)
        with self._lock:
            live = self.live
            if live is None:
                raise ClassError("No round to reveal: start one")
            if not live.revealed:
                live.tally = Tally.of(live.round, live.model, live.answers.values())
                self.version += 1
        return f"Revealed: {plural(live.tally.answered, 'answer')}, {live.tally.agreed} gave the model's answer"

    def export(self, key) -> Path:
        """A CSV of every round played so far and its answers (the round being played included)."""
        self.check_key(key)
        out = self.export_path.with_name(f"class-rounds-{time.strftime('%Y%m%d-%H%M%S')}.csv")
        with self._lock:
            rows = self.export_path.read_text(encoding="utf-8")
            rows += "".join(self._rows(self.live)) if self.live else ""
        out.write_text(rows, encoding="utf-8")
        return out

    def counts(self) -> tuple[int, int]:
        """(students joined, answers to the round being played)."""
        live = self.live
        return len(self.students), len(live.answers) if live else 0

    # -- the export ------------------------------------------------------------------------
    def _archive(self) -> None:
        """The round being played goes to the export file, and its answers out of memory."""
        if self.live is not None:
            with self.export_path.open("a", newline="", encoding="utf-8") as f:
                f.write("".join(self._rows(self.live)))
            self.live = None

    def _rows(self, live: Live) -> list[str]:
        """The round's rows: one per answer, or one with no student when nobody answered (a round
        played is in the export even then)."""
        rnd = live.round
        question = rnd.get("question") or rnd.text
        shared = [
            live.number, live.deck_number or "", rnd.kind, question, rnd.get("next") or "", rnd.get("word") or "",
            _or_blank(rnd.get("layer")), _or_blank(rnd.get("head")), live.model_name, live.model.words, rnd.truth or "",
        ]  # fmt: skip
        answers = [
            [self.students.get(token, ""), answer, answer_words(rnd, live.words, answer), answer == live.model.answer]
            for token, answer in live.answers.items()
        ]
        return [_csv_line([_cell(v) for v in shared + a]) for a in answers or [["", "", "", ""]]]


def plural(n: int, word: str) -> str:
    """ "1 answer", "3 answers"."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def _or_blank(value) -> str:
    return "" if value is None else str(value)


def _cell(value):
    """A CSV cell a spreadsheet shows as text: what starts like a formula gets a leading quote."""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _csv_line(cells) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerow(cells)
    return buf.getvalue()


__all__ = ["AnswerError", "ClassError", "Classroom", "Live", "plural"]
