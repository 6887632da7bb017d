"""The class pages for every student (issue 43, WCAG 2.1 AA), in a real browser: the projector's
page (/teacher, 1024 x 768) and a phone's (/play, 390 x 844, opened dark by its address) play one
round of each kind; the phone answers by keyboard, two more students through the Classroom.

In each state (a phone not joined yet, no round yet, each kind's round open, then revealed) axe-core
finds no WCAG 2.1 A/AA violation on either page, in the light and the dark theme (the page's body
class `dark` switched, as ?__theme=dark sets it). Each reveal's figure is an image named by its
summary, whose numbers are the Classroom's own; its bars are labelled with their numbers; the
numbers are a table one click away. The pages' polite live regions say the new round, the answer
sent, and the reveal's summary, once each (not again at every poll). The words to tap are reached
and tapped by keyboard, with a visible focus; at 320 px the phone's page reflows without sideways
scrolling or cut text.

With BERT_LAB_SCREENSHOTS set (a folder) it saves a11y_teacher_<kind>.png (1024 px),
a11y_student_<kind>.png (390 px) and a11y_student_<kind>_320.png after each reveal.
Marked slow (a browser and a server start).
"""

import re
from dataclasses import dataclass, field

import pytest

from tests.conftest import axe_violations
from tests.test_browser import offline_page
from tests.test_browser_rounds import PHONE, PROJECTOR, screenshot, start, wait_text

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

KINDS = ("masked_word", "next_sentence", "attention", "answer_span")
OTHERS = {"masked_word": "window", "next_sentence": "NotNext", "attention": "2", "answer_span": "2-3"}  # two students'

NARROW = {"width": 320, "height": 640}  # WCAG 1.4.10: content reflows at 320 CSS pixels
# what the page's polite live regions say (the page's own, and its status lines where they are regions)
LIVE = "[...document.querySelectorAll('[role=status][aria-live=polite]')].map(e => e.textContent).join(' | ')"
# every change of a page's live region, counted (to tell a text said once from one said at every poll)
COUNT_JS = """() => { window.blSaid = 0;
  const count = new MutationObserver(() => window.blSaid++);
  document.querySelectorAll('[role=status][aria-live=polite]').forEach(e =>
    count.observe(e, {childList: true, characterData: true, subtree: true})); }"""
# the elements of the phone's page whose text is cut: wider than their box, their overflow hidden
CUT_JS = """() => [...document.querySelectorAll('.gradio-container *')].filter(e => {
  const s = getComputedStyle(e);
  return e.offsetParent && e.textContent.trim() && e.scrollWidth > e.clientWidth + 1
    && ['hidden', 'clip'].includes(s.overflowX) && e.clientWidth > 1; }).map(e => e.className)"""
FOCUS_JS = "() => { const s = getComputedStyle(document.activeElement); return [s.outlineStyle, s.outlineWidth]; }"


@dataclass
class Seen:
    """What the pages showed: axe's violations by state and page, what the live regions said, the
    reveals' accessibility trees, the Classroom's round at each reveal, the phone's answers."""

    axe: dict = field(default_factory=dict)
    said: dict = field(default_factory=dict)  # (state, page) -> the live region's text
    trees: dict = field(default_factory=dict)  # (kind, page) -> aria_snapshot of the reveal
    labels: dict = field(default_factory=dict)  # kind -> the numbers written on the teacher's bars
    lives: dict = field(default_factory=dict)  # kind -> the Classroom's Live at the reveal
    sent: dict = field(default_factory=dict)  # kind -> the phone's status after its keyboard answer
    focus: list = field(default_factory=list)  # a focused word's outline (style, width)
    narrow: dict = field(default_factory=dict)  # kind -> (sideways scroll px, cut elements) at 320 px
    repeats: int = -1  # the live region's changes over three polls with nothing new


def audit(seen: Seen, state: str, pages: dict) -> None:
    """axe on each page in the light and the dark theme; the page's own theme restored."""
    for name, page in pages.items():
        own = page.evaluate("document.body.classList.contains('dark')")
        for dark in (False, True):
            page.evaluate(f"document.body.classList.toggle('dark', {str(dark).lower()})")
            page.wait_for_timeout(300)  # the colours' transitions end
            seen.axe[f"{name} {state}{' dark' if dark else ''}"] = axe_violations(page)
        page.evaluate(f"document.body.classList.toggle('dark', {str(own).lower()})")


def hear(page, needle: str) -> str:
    """Until the page's live region says `needle`: what it says."""
    page.wait_for_function(f"({LIVE}).includes({needle!r})", timeout=15_000)
    return page.evaluate(LIVE)


def key_answer(phone, kind: str) -> str:
    """The phone answers by keyboard only; the status line it shows."""
    if kind == "masked_word":
        phone.locator("#play-guess textarea").focus()
        phone.keyboard.type("door")
        phone.keyboard.press("Enter")
    elif kind == "next_sentence":
        phone.locator("#play-isnext").focus()
        phone.keyboard.press("Enter")
    else:  # the words: one tab stop, the arrows move along them, Enter taps
        phone.locator("#play-words .token[tabindex='0']").focus()
        phone.keyboard.press("ArrowRight")
        phone.keyboard.press("Enter")
        if kind == "answer_span":
            hear(phone, "Now tap the answer's last word")  # the focus stays on the word
            phone.keyboard.press("ArrowRight")
            phone.keyboard.press("Enter")
    wait_text(phone, "#play-status", "Sent: ")
    return phone.locator("#play-status").inner_text()


def play(seen: Seen, room, teacher, phone, others, kind: str, folder) -> None:
    """One round of `kind`: open, answered (the phone by keyboard), revealed; each state audited."""
    number = next(n for n, r in enumerate(room.deck, 1) if r.kind == kind)  # the pages say the deck's number
    start(teacher, room, number)
    pages = {"teacher": teacher, "play": phone}
    for name, page in pages.items():
        seen.said[f"{kind} open", name] = hear(page, f"Round {number}, ")
    if kind in ("attention", "answer_span"):
        phone.locator("#play-words .token[tabindex='0']").focus()
        seen.focus.append(phone.evaluate(FOCUS_JS))
    seen.sent[kind] = key_answer(phone, kind)
    seen.said[f"{kind} answered", "play"] = hear(phone, seen.sent[kind])
    for tok in others:
        room.answer(tok, OTHERS[kind])
    audit(seen, f"{kind} open", pages)
    teacher.locator("#teach-reveal-button").click()
    for name, page in pages.items():
        seen.said[f"{kind} revealed", name] = hear(page, f"Round {number} revealed. ")
    seen.lives[kind] = room.live
    for name, page, box in (("teacher", teacher, "#teach-result"), ("play", phone, "#play-reveal")):
        seen.trees[kind, name] = page.locator(box).aria_snapshot()
    seen.labels[kind] = teacher.locator("#teach-result .bl-num, #teach-result .bl-n").all_inner_texts()
    audit(seen, f"{kind} revealed", pages)
    if folder:
        screenshot(teacher, folder / f"a11y_teacher_{kind}.png")
        screenshot(phone, folder / f"a11y_student_{kind}.png")
    phone.set_viewport_size(NARROW)
    phone.wait_for_timeout(300)
    extra = phone.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    seen.narrow[kind] = (extra, phone.evaluate(CUT_JS))
    if folder:
        screenshot(phone, folder / f"a11y_student_{kind}_320.png")
    phone.set_viewport_size(PHONE)


@pytest.fixture(scope="module")
def seen(browser, app_url, dash, shots):
    room, seen = dash.rounds.room, Seen()
    teacher, phone = offline_page(browser, app_url, PROJECTOR), offline_page(browser, app_url, PHONE)
    try:
        with room._lock:  # a server before its first round (the round of an earlier test archived)
            room._archive()
            room.version += 1
        teacher.goto(f"{app_url}teacher?key={room.key}")
        teacher.wait_for_selector("#teach-reveal-button")
        phone.goto(f"{app_url}play?room={room.code}&__theme=dark")
        phone.wait_for_function("document.querySelector('#play-code textarea')?.value")
        audit(seen, "not joined", {"play": phone})
        phone.click("#play-join-button")
        wait_text(phone, "#play-question", "Wait for the teacher")
        seen.said["joined", "play"] = hear(phone, "Joined")
        audit(seen, "no round yet", {"teacher": teacher, "play": phone})
        others = [room.join(room.code, name) for name in ("Bo", "Cy")]
        for kind in KINDS:
            play(seen, room, teacher, phone, others, kind, shots)
        for page in (teacher, phone):
            page.evaluate(COUNT_JS)
        phone.wait_for_timeout(3500)  # three polls, nothing new
        seen.repeats = teacher.evaluate("window.blSaid") + phone.evaluate("window.blSaid")
    finally:
        teacher.close()
        phone.close()
    return seen


def test_axe_finds_no_wcag_violation_on_the_class_pages_in_any_state(seen):
    assert len(seen.axe) == 2 * (1 + 2 + 2 * 2 * len(KINDS))  # every state, both pages, both themes
    found = {state: found for state, found in seen.axe.items() if found}
    assert found == {}, "\n".join(f"{state}: {v}" for state, v in found.items())


def pct(p: float) -> str:
    return f"{p:.0%}"


def top(counts, answered: int, name=str) -> str:
    """The commonest answer of the Classroom's tally, as the summary should say it."""
    most = max(counts.values())
    tied = [name(a) for a, c in counts.most_common() if c == most]
    assert len(tied) == 1, tied  # the answers below make no tie
    return f"{tied[0]}, {most} of {answered}"


def expected_summary(kind: str, live) -> list[str]:
    """The parts the reveal's summary must hold, from the Classroom's own numbers."""
    t, m = live.tally, live.model

    def word(k: str) -> str:
        return live.words[int(k)]

    if kind == "answer_span":
        first, last = m.answer.split("-")
        return [
            f"first word: {top(t.counts, t.answered, word)}",
            f"last word: {top(t.ends, t.answered, word)}",
            f"the model's answer: {m.words} (as the first word {pct(m.options[first])}, "
            f"as the last word {pct(m.ends[last])})",
        ]
    if kind == "attention":
        return [f"top word: {top(t.counts, t.answered, word)}", f"{m.words}, {pct(m.options[m.answer])}"]
    return [f"top answer: {top(t.counts, t.answered)}", f"the model's: {m.words}, {pct(m.options[m.answer])}"]


@pytest.mark.parametrize("kind", KINDS)
def test_each_reveal_is_an_image_named_by_its_numbers_with_a_table_of_them(seen, kind):
    live = seen.lives[kind]
    assert live.tally.answered == 3
    for page in ("teacher", "play"):
        tree = seen.trees[kind, page]
        name = re.search(r'- \'?img "(.*)"', tree)[1].replace("''", "'")
        for part in expected_summary(kind, live):
            assert part in name, (part, name)
        assert "- group: the numbers as a table" in tree  # a <details>, closed
        assert name in seen.said[f"{kind} revealed", page]  # the live region said the same
    labels = seen.labels[kind]  # the numbers written on the bars: the class's, the model's
    if kind in ("masked_word", "next_sentence"):
        assert [int(x) for x in labels[::2]][: len(live.model.options)] == [
            live.tally.counts[o] for o in live.model.options
        ]
        assert labels[1::2][: len(live.model.options)] == [pct(p) for p in live.model.options.values()]
    else:
        sides = [(live.tally.counts, live.model.options)] + (
            [(live.tally.ends, live.model.ends)] if live.model.ends else []
        )
        want = []
        for i in range(len(live.words)):
            for counts, probs in sides:
                want += [
                    str(counts[str(i)]) if counts[str(i)] else "",
                    pct(probs[str(i)]) if round(probs[str(i)], 2) else "",
                ]
        assert labels == want


def test_the_live_regions_say_the_round_the_answer_sent_and_the_reveal_once(seen):
    assert "Joined: " in seen.said["joined", "play"]
    for kind in KINDS:
        live = seen.lives[kind]
        for page in ("teacher", "play"):
            assert f"{live.label}, {live.round.title}: " in seen.said[f"{kind} open", page]
        assert seen.sent[kind] in seen.said[f"{kind} answered", "play"]
    assert "Which word is hidden? " in seen.said["masked_word open", "play"]
    assert seen.repeats == 0  # nothing said again while the pages poll


def test_the_phone_answers_by_keyboard_with_a_visible_focus(seen):
    words = {kind: seen.lives[kind].words for kind in KINDS}
    assert seen.sent["masked_word"].startswith("Sent: door")
    assert seen.sent["next_sentence"].startswith("Sent: IsNext")
    assert seen.sent["attention"].startswith(f"Sent: {words['attention'][1]} ")
    assert seen.sent["answer_span"].startswith(f"Sent: {' '.join(words['answer_span'][1:3])} ")
    for style, width in seen.focus:
        assert style != "none" and float(width[:-2]) >= 2


def test_the_phone_reflows_at_320_px_without_cut_text(seen):
    assert seen.narrow == {kind: (0, []) for kind in KINDS}
