"""A class playing rounds, in a real browser (Debian's chromium, driven by Playwright; issue 33):
the projector's page (/teacher, 1024 x 768) and three students' pages (/play, a phone's 390 x 844)
play one round of each kind of the default deck (docs/teaching/deck.yaml: each kind's first round).
One student joins by the QR's address (?room=), one types the room code, one joins late, after the
first round started, and sees it. The students answer differently, one changes an answer before
the reveal; then the test checks what both sides show: the live count, every student's own answer
and the model's at the reveal, the class's counts on the projector equal to what was sent, a tap
after the reveal refused with a message, no sideways scrolling on a phone, the teacher key gone
from the projector's address and HTML, a student's `<b>x</b>` and `<img ...>` shown as text, and
the teacher's Export CSV holding the rounds' rows. Every page has the network blocked.

With BERT_LAB_SCREENSHOTS set (a folder; `1` means docs/images) it saves, for each kind,
rounds_teacher_<kind>.png (1024 px, after the reveal) and rounds_student_<kind>.png (390 px, the
question and the reveal):
    BERT_LAB_SCREENSHOTS=1 .venv/bin/python -m pytest tests/test_browser_rounds.py
Marked slow (a browser and a server start): `pytest -m "not slow"` leaves it out.
"""

import csv
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dashboard.rounds import ClassError
from tests.test_browser import OUTSIDE, offline_page

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PROJECTOR = {"width": 1024, "height": 768}
PHONE = {"width": 390, "height": 844}
REVEAL_S = 5  # the reveal reaches a student's page within this (it polls every second; a bound for a busy CI machine)
BOLD = "<b>x</b>"  # typed by students: must show as these characters, never as markup
IMG = "<img/src=x/onerror=alert(1)>"  # one word: a masked-word guess
IMG_NAME = "<img src=x onerror=alert(2)>"  # a name (at most 30 characters)


def text(page, selector: str) -> str:
    return page.locator(selector).inner_text()


def wait_text(page, selector: str, needle: str, timeout: int = 30_000) -> None:
    """Until the element's text holds `needle`."""
    page.wait_for_function(
        "([s, n]) => { const e = document.querySelector(s); return !!e && e.innerText.includes(n); }",
        arg=[selector, needle],
        timeout=timeout,
    )


def no_sideways_scroll(page) -> None:
    extra = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert extra <= 0, f"the phone page scrolls sideways by {extra} px"


def said(page, selector: str, model: str, agreed: int) -> None:
    """The reveal's first line: the model's answer and how many of the three gave it."""
    assert text(page, f"{selector} .bl-said") == f"The model says {model} · {agreed} of 3 gave the model's answer"


def start(teacher, room, number: int) -> int:
    """The teacher picks the deck's round `number` and presses Start: the round's number in the class."""
    teacher.get_by_role("combobox", name="Round of the deck").click()
    teacher.locator(f"ul[role=listbox] li[role=option][aria-label^='{number}. ']").click()
    played = room.started + 1
    teacher.get_by_role("button", name="Start", exact=True).click()
    wait_text(teacher, "#teach-status", f"Round {number} started", timeout=120_000)  # a model loads
    assert room.live.round is room.deck[number - 1] and room.live.number == played
    # the screen calls it by the deck's number, as the menu does, and the menu shows it
    assert f"Round {number} · {room.live.round.title}" in text(teacher, "#teach-question")
    teacher.wait_for_function(
        "n => document.querySelector('#teach-controls input[role=combobox]')?.value.startsWith(n + '. ')", arg=number
    )
    return played


def wait_round(student, played_kind_text: str) -> None:
    """Until the student's page shows the new round's question."""
    wait_text(student, "#play-question", played_kind_text, timeout=15_000)


def reveal(teacher, students) -> float:
    """The teacher presses Reveal; the slowest student's page's delay (s) until it shows the reveal."""
    teacher.locator("#teach-reveal-button").click()
    wait_text(teacher, "#teach-status", "Revealed")
    shown = time.monotonic()
    for s in students:
        s.wait_for_selector("#play-reveal .bl-reveal", timeout=REVEAL_S * 1000 * 4)
    return time.monotonic() - shown


def bars(page, selector: str) -> dict[str, int]:
    """The class's counts in a masked_word or next_sentence reveal: option -> students."""
    rows = page.locator(f"{selector} table.bl-bars tr").all()[1:]
    out = {}
    for row in rows:
        option = row.locator("th").inner_text().strip()
        out[option] = int(row.locator("td").first.locator(".bl-num").inner_text())
    return {k: v for k, v in out.items() if v}


def word_counts(page, selector: str) -> list[dict[int, int]]:
    """The class's counts in an attention or answer_span reveal, as written on its bars: one
    {word number: students} per pair of bars under a word (answer_span: first word, last word)."""
    labels = page.locator(f"{selector} .bl-w").evaluate_all(
        "ws => ws.map(w => [...w.querySelectorAll('.bl-pair')]"
        ".map(p => p.querySelector('.bl-v.class .bl-n').textContent))"
    )
    out = [{} for _ in labels[0]]
    for i, word in enumerate(labels):
        for j, label in enumerate(word):
            if label:
                out[j][i] = int(label)
    return out


def tap(student, i: int, expect: str) -> None:
    student.locator("#play-words .token").nth(i).click()
    wait_text(student, "#play-status", expect)


def check_reveal(student, mine: str, model: str) -> None:
    """The student's page: their own answer and the model's."""
    assert text(student, "#play-reveal .bl-mine") == f"You said {mine}"
    assert student.locator("#play-reveal .bl-said b").inner_text() == model
    assert student.locator("#play-reveal img").count() == 0


def screenshot(page, path) -> None:
    page.mouse.move(0, 0)
    page.screenshot(path=str(path), full_page=True)


@dataclass
class Class:
    """The projector's page, the three students' pages (`names`: page -> the name each joined
    with), the server's Classroom, and how long each reveal took to reach the students."""

    teacher: object
    names: dict
    room: object
    shots: Path | None
    delays: list = field(default_factory=list)

    @property
    def students(self):
        return tuple(self.names)

    def round_of(self, kind: str) -> int:
        """The teacher starts the deck's first round of `kind`; its number in the class."""
        number = next(n for n, r in enumerate(self.room.deck, 1) if r.kind == kind)
        return start(self.teacher, self.room, number)

    def reveal(self) -> None:
        """Once all three answered: the teacher reveals (no phone page scrolls sideways, before or after)."""
        wait_text(self.teacher, "#teach-live", "3 answered")
        assert text(self.teacher, "#teach-live").endswith("· 3 answered")
        for s in self.students:
            no_sideways_scroll(s)
        self.delays.append(reveal(self.teacher, self.students))
        for s in self.students:
            no_sideways_scroll(s)

    def snap(self, student, kind: str) -> None:
        if self.shots:
            screenshot(self.teacher, self.shots / f"rounds_teacher_{kind}.png")
            screenshot(student, self.shots / f"rounds_student_{kind}.png")

    def sent(self, answers: dict) -> dict:
        """{a student's name: their answer in words}, as the export's rows should say."""
        return {self.names[s]: a for s, a in answers.items()}


def masked_word(c: Class, ada, bob, cy) -> dict:
    """Typed guesses: one changed before the reveal, two of them markup, shown as text."""
    model = c.room.live.model.words
    guesses = {ada: "window", bob: BOLD, cy: IMG}
    for s, guess in guesses.items():
        s.fill("#play-guess textarea", guess)
        s.click("#play-send")
        wait_text(s, "#play-status", f"Sent: {guess}")
    wait_text(c.teacher, "#teach-live", "3 answered")
    ada.fill("#play-guess textarea", "door")  # changed before the reveal
    ada.click("#play-send")
    wait_text(ada, "#play-status", "Changed to: door")
    guesses[ada] = "door"
    c.reveal()
    for s, guess in guesses.items():
        check_reveal(s, guess, model)
        assert guess in text(s, "#play-reveal")
        assert not s.locator("#play-guess-row").is_visible()  # no answering after the reveal
    assert bars(c.teacher, "#teach-result") == {"door": 1, BOLD: 1, IMG: 1}
    said(c.teacher, "#teach-result", model, sum(g == model for g in guesses.values()))
    for page in (c.teacher, *c.students):  # the markup shown as text: no image, no bold "x"
        assert page.locator("img[src=x]").count() == 0
        assert page.locator("#teach-result b, #play-reveal b").filter(has_text=re.compile("^x$")).count() == 0
    c.snap(ada, "masked_word")
    return c.sent(guesses)


def next_sentence(c: Class, ada, bob, cy) -> dict:
    model = c.room.live.model.words
    for s in c.students:
        wait_round(s, "Does sentence B follow sentence A?")
    votes = {ada: "IsNext", bob: "NotNext", cy: "IsNext"}
    for s, vote in votes.items():
        s.click("#play-isnext" if vote == "IsNext" else "#play-notnext")
        wait_text(s, "#play-status", f"Sent: {vote}")
    c.reveal()
    for s, vote in votes.items():
        check_reveal(s, vote, model)
        assert not s.locator("#play-vote").is_visible()
    assert bars(c.teacher, "#teach-result") == {"IsNext": 2, "NotNext": 1}
    said(c.teacher, "#teach-result", model, sum(v == model for v in votes.values()))
    c.snap(bob, "next_sentence")
    return c.sent(votes)


def attention(c: Class, ada, bob, cy) -> dict:
    """A word tapped; a tap after the reveal refused, with a message."""
    live = c.room.live
    words, model = live.words, live.model.words
    for s in c.students:
        wait_round(s, "look at most?")
    taps = {ada: 1, bob: 3, cy: 1}  # word numbers
    for s, i in taps.items():
        tap(s, i, f"Sent: {words[i]}")
    c.reveal()
    for s, i in taps.items():
        check_reveal(s, words[i], model)
    assert word_counts(c.teacher, "#teach-result") == [{1: 2, 3: 1}]
    said(c.teacher, "#teach-result", model, sum(str(i) == live.model.answer for i in taps.values()))
    # after the reveal the words are no longer offered, and an answer sent anyway is refused
    assert not bob.locator("#play-words").is_visible()
    with pytest.raises(ClassError, match="This round is closed"):
        c.room.answer(next(iter(live.answers)), "0")
    assert sorted(live.answers.values()) == ["1", "1", "3"]  # unchanged
    c.snap(ada, "attention")
    return c.sent({s: words[i] for s, i in taps.items()})


def answer_span(c: Class, ada, bob, cy) -> dict:
    """The answer's first word tapped, then its last (one student taps one word twice)."""
    live = c.room.live
    words, model = live.words, live.model.words
    for s in c.students:
        wait_round(s, live.round.get("question"))
    spans = {ada: (1, 2), bob: (2, 2), cy: (0, 3)}  # first and last word numbers
    shown = {s: " ".join(words[a : b + 1]) for s, (a, b) in spans.items()}
    for s, (a, b) in spans.items():
        tap(s, a, "Now tap the answer's last word")
        tap(s, b, f"Sent: {shown[s]}")
    c.reveal()
    for s in c.students:
        check_reveal(s, shown[s], model)
    starts, ends = word_counts(c.teacher, "#teach-result")
    assert starts == {1: 1, 2: 1, 0: 1} and ends == {2: 2, 3: 1}
    said(c.teacher, "#teach-result", model, sum(f"{a}-{b}" == live.model.answer for a, b in spans.values()))
    c.snap(cy, "answer_span")
    return c.sent(shown)


def test_a_class_plays_one_round_of_each_kind(browser, app_url, dash, shots):
    room = dash.rounds.room
    key, code = room.key, room.code
    joined_before = len(room.students)
    dialogs: list[str] = []
    pages = []

    def open_page(viewport):
        page = offline_page(browser, app_url, viewport)
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        pages.append(page)
        return page

    def join(page, name: str, typed: bool = False) -> None:
        """A student joins: the code typed (lower case), or filled in by the QR's address (?room=)."""
        page.goto(f"{app_url}play" if typed else f"{app_url}play?room={code}")
        if typed:
            page.fill("#play-code textarea", code.lower())
        else:
            page.wait_for_function("document.querySelector('#play-code textarea')?.value")
            assert page.input_value("#play-code textarea") == code
        page.fill("#play-name textarea", name)
        page.click("#play-join-button")
        page.wait_for_selector("#play-question", state="visible")

    try:
        # the projector: the key from the terminal's link, gone from the address bar and the HTML
        teacher = open_page(PROJECTOR)
        teacher.goto(f"{app_url}teacher?key={key}")
        teacher.wait_for_selector("#teach-reveal-button")
        teacher.wait_for_function("!window.location.search.includes('key')")
        wait_text(teacher, ".bl-join", f"{app_url}play")  # the join card with the page's own address
        teacher.wait_for_selector(".bl-join svg")  # and its QR
        assert text(teacher, ".bl-code") == code
        assert key not in teacher.url and key not in teacher.content()

        ada, bob, cy = open_page(PHONE), open_page(PHONE), open_page(PHONE)
        join(ada, IMG_NAME)  # by the QR's address
        join(bob, BOLD, typed=True)
        wait_text(teacher, "#teach-live", f"{joined_before + 2} joined")
        c = Class(teacher, {ada: IMG_NAME, bob: BOLD, cy: "Cy"}, room, shots)

        first = c.round_of("masked_word")
        for s in (ada, bob):
            wait_round(s, "Which word is hidden?")
        join(cy, "Cy")  # late: after the round started, and sees it
        wait_round(cy, "Which word is hidden?")
        assert room.live.round.text.split("[MASK]")[1].strip() in text(cy, "#play-question")
        wait_text(teacher, "#teach-live", f"{joined_before + 3} joined · 0 answered")
        played = {first: ("masked_word", masked_word(c, ada, bob, cy))}
        for kind, play in (("next_sentence", next_sentence), ("attention", attention), ("answer_span", answer_span)):
            n = c.round_of(kind)
            played[n] = (kind, play(c, ada, bob, cy))
        assert max(c.delays) < REVEAL_S, c.delays  # every student's page showed each reveal soon after the click

        # the teacher's Export CSV: the four rounds, three rows each, as the students sent them
        teacher.get_by_role("button", name="Export CSV", exact=True).click()
        link = teacher.locator("#teach-file a").first
        link.wait_for()
        with teacher.expect_download() as saved:
            link.click()
        with open(saved.value.path(), newline="", encoding="utf-8") as f:
            rows = [r for r in csv.DictReader(f) if int(r["round"]) in played]
        assert len(rows) == 12
        for n, (kind, answers) in played.items():
            ours = [r for r in rows if int(r["round"]) == n]
            assert {r["kind"] for r in ours} == {kind}
            assert {r["student"]: r["answer_words"] for r in ours} == answers

        assert key not in teacher.url and key not in teacher.content()
        assert dialogs == [], dialogs  # no script typed by a student ran
    finally:
        for page in pages:
            page.close()
    assert OUTSIDE == [], OUTSIDE
