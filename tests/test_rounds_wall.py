"""Class rounds in the room (issue 44): the teacher page's presenter mode and every kind's reveal
on a 1024 x 768 projector without scrolling, with 28 answers and many distinct guesses; the deck's
menu following the round; words a thumb can tap on a phone; the export's rows; a refused call in
one line; the buttons and the status before Start.

The browser test saves its screenshots in BERT_LAB_ROUNDS_SHOTS (a folder) when it is set."""

import csv
import io
import os
from pathlib import Path

import gradio as gr
import pytest
from gradio_client import Client

from dashboard.rounds import DEFAULT_DECK, Classroom, Rounds, load_deck
from dashboard.rounds.deck import deck_labels
from dashboard.rounds.kinds import ModelAnswer
from dashboard.rounds.pages import _or_error
from tests.conftest import chromium_browser
from tests.test_browser import OUTSIDE, offline_page

PROJECTOR = {"width": 1024, "height": 768}
PHONE = {"width": 390, "height": 844}
CLASS = 28
GUESSES = [f"guess{i}" for i in range(12)]  # many distinct guesses besides the model's words


def fake_answerer(rnd):
    answer = {"masked_word": "door", "next_sentence": "IsNext", "answer_span": "0-1", "attention": "0"}[rnd.kind]
    return "fake", ModelAnswer({answer: 0.9}, answer, answer, ends={"1": 0.9} if rnd.kind == "answer_span" else None)


def room():
    return Classroom(load_deck(DEFAULT_DECK), fake_answerer, code="ACDE", key="secret")


def first_of(deck, kind: str) -> int:
    return next(n for n, r in enumerate(deck, 1) if r.kind == kind)


# ----------------------------------------------------------------------------------------------
# Without a browser
# ----------------------------------------------------------------------------------------------
def test_the_decks_labels_are_distinct_and_name_what_tells_rounds_apart():
    deck = load_deck(DEFAULT_DECK)
    labels = deck_labels(deck)
    assert len(set(labels)) == len(labels), labels
    assert all(label.startswith(f"{n}. ") for n, label in enumerate(labels, 1))
    attention = [label for label, r in zip(labels, deck) if r.kind == "attention"]
    assert all("layer" in label and "head" in label for label in attention)


def test_the_round_is_called_by_its_deck_number_and_the_reveal_counts_in_words():
    r = room()
    n = first_of(r.deck, "attention")
    assert r.start("secret", n).startswith(f"Round {n} started")
    assert r.live.label == f"Round {n}" and r.live.number == 1  # the export's column keeps the order played
    token = r.join("ACDE")
    r.answer(token, "0")
    assert r.reveal("secret").startswith("Revealed: 1 answer,")
    r.start("secret", 1)
    assert r.reveal("secret").startswith("Revealed: 0 answers,")


def test_the_export_has_sentence_b_the_layer_and_head_and_a_round_nobody_answered():
    r = room()
    token = r.join("ACDE", "Ada")
    ns, att, span = (first_of(r.deck, k) for k in ("next_sentence", "attention", "answer_span"))
    r.start("secret", ns)
    r.answer(token, "NotNext")
    r.reveal("secret")
    r.start("secret", att)
    r.answer(token, "2")
    r.reveal("secret")
    r.start("secret", span)  # revealed with no answer
    r.reveal("secret")
    rows = list(csv.DictReader(io.StringIO(r.export("secret").read_text())))
    by_kind = {row["kind"]: row for row in rows}
    assert by_kind["next_sentence"]["sentence_b"] == r.deck[ns - 1].get("next")
    assert (by_kind["attention"]["layer"], by_kind["attention"]["head"]) == tuple(
        str(r.deck[att - 1].get(k)) for k in ("layer", "head")
    )
    assert by_kind["attention"]["word"] == r.deck[att - 1].get("word")
    empty = by_kind["answer_span"]
    assert empty["student"] == "" and empty["answer"] == "" and empty["deck_round"] == str(span)
    assert [row["round"] for row in rows] == ["1", "2", "3"]


def test_a_refused_call_is_one_line_in_the_terminal_not_a_traceback(capsys):
    r = room()
    with pytest.raises(gr.Error) as e:
        _or_error(r.join, "ZZZZ", "")
    assert e.value.print_exception is False  # Gradio prints no traceback for it
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "room code" in err and "Traceback" not in err


def test_before_start_the_highlighted_button_is_start_then_reveal_then_next():
    rounds = Rounds.__new__(Rounds)  # its room only: no model store
    rounds.room = room()

    def variants():
        return [b["variant"] for b in rounds.buttons()[1:]]

    assert variants() == ["primary", "secondary", "secondary"]
    rounds.room.start("secret", 3)
    assert variants() == ["secondary", "primary", "secondary"] and rounds.buttons()[0]["value"] == 3
    rounds.room.reveal("secret")
    assert variants() == ["secondary", "secondary", "primary"] and rounds.buttons()[0]["value"] == 4


def test_refused_calls_over_http_print_one_line_each_and_no_traceback(dash, app_url, capfd):
    room_ = dash.rounds.room
    client = Client(app_url, verbose=False)
    capfd.readouterr()
    with pytest.raises(Exception, match="room code"):
        client.predict("ZZZZ", "", api_name="/class_join")
    token = client.predict(room_.code, "late", api_name="/class_join")
    client.predict(room_.key, 1, api_name="/class_start")
    client.predict(room_.key, api_name="/class_reveal")
    with pytest.raises(Exception, match="This round is closed"):
        client.predict(token, "door", api_name="/class_answer")
    out = capfd.readouterr()
    printed = out.out + out.err
    assert "Traceback" not in printed, printed
    assert printed.count("class rounds: refused") == 2, printed


# ----------------------------------------------------------------------------------------------
# In a browser
# ----------------------------------------------------------------------------------------------
ANSWERS = {  # student i's answer, for each kind: many distinct guesses
    "masked_word": lambda i, words: GUESSES[i % len(GUESSES)] if i % 3 else "door",
    "next_sentence": lambda i, words: "IsNext" if i % 3 else "NotNext",
    "attention": lambda i, words: str(i % len(words)),
    "answer_span": lambda i, words: f"{i % len(words)}-{min(len(words) - 1, i % len(words) + i % 4)}",
}


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as browser:
        yield browser


def wall_height(page) -> dict:
    return page.evaluate(
        """() => ({scroll: document.documentElement.scrollHeight, inner: innerHeight,
                   bottom: document.querySelector('#teach-result .bl-reveal')?.getBoundingClientRect().bottom ?? -1,
                   parts: ['#teach-top', '#teach-controls', '#teach-status', '#teach-question', '#teach-result']
                     .map(s => Math.round(document.querySelector(s)?.getBoundingClientRect().top ?? -1))})"""
    )


# the font sizes (px) of the question, the round line and the legend, and which of those and the
# captions are not drawn in the page's text colour
SIZES_JS = """() => {
  const px = (s) => parseFloat(getComputedStyle(document.querySelector(s)).fontSize);
  const text = getComputedStyle(document.querySelector('#teach-question')).color;
  const shown = '#teach-question .bl-kind, #teach-result .bl-legend, #teach-result .bl-hint';
  const grey = [...document.querySelectorAll(shown)]
    .filter((e) => getComputedStyle(e).color !== text).map((e) => e.className);
  return {ask: px('#teach-question .bl-ask'), kind: px('#teach-question .bl-kind'),
          legend: px('#teach-result .bl-legend'), grey};
}"""


def tap_boxes(page) -> list[dict]:
    return page.locator("#play-words .token").evaluate_all(
        "ts => ts.map(t => { const r = t.getBoundingClientRect(), s = getComputedStyle(t);"
        " return {text: t.textContent.trim(), w: r.width, h: r.height, border: s.borderTopWidth,"
        " cursor: s.cursor}; })"
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_every_reveal_fits_the_projector_in_presenter_mode_with_a_class_of_28(browser, app_url, dash):
    room_ = dash.rounds.room
    key = room_.key
    shots = os.environ.get("BERT_LAB_ROUNDS_SHOTS")
    teacher = offline_page(browser, app_url, PROJECTOR)
    phone = offline_page(browser, app_url, PHONE)
    heights = {}
    try:
        with room_._lock:  # a server before its first round (the round of an earlier test archived)
            room_._archive()
            room_.version += 1
        teacher.goto(f"{app_url}teacher?key={key}&presenter=1")
        teacher.wait_for_function("document.body.classList.contains('bl-presenter')")
        assert teacher.locator("#teach-presenter input").is_checked()
        # before a round the wall shows the join card, its QR large enough for the back row to scan
        teacher.wait_for_function(  # (once the page has drawn the room's state)
            "document.querySelector('#teach-join svg')?.getBoundingClientRect().width >= 0.4 * innerHeight"
        )
        phone.goto(f"{app_url}play?room={room_.code}")
        phone.wait_for_function("document.querySelector('#play-code textarea')?.value")
        phone.fill("#play-name textarea", "Phone")
        phone.click("#play-join-button")
        phone.wait_for_selector("#play-question", state="visible")
        # a 500-character guess is not cut short without a word: the server says what fits
        room_.start(key, 1)
        phone.wait_for_selector("#play-guess textarea", state="visible")
        phone.fill("#play-guess textarea", "x" * 500)
        phone.click("#play-send")
        phone.wait_for_function("document.querySelector('#play-status').innerText.includes('at most 40')")
        students = [room_.join(room_.code, f"student {i}") for i in range(CLASS - 1)]
        for kind in ("masked_word", "next_sentence", "attention", "answer_span"):
            n = first_of(room_.deck, kind)
            room_.start(key, n)
            words = room_.live.words
            teacher.wait_for_function(f"document.querySelector('#teach-question').innerText.includes('Round {n} ·')")
            # the menu follows the round being played, and the button to press is Reveal, not Start
            teacher.wait_for_function(
                "n => document.querySelector('#teach-controls input[role=combobox]').value.startsWith(n + '. ')"
                " && document.querySelector('#teach-reveal-button').classList.contains('primary')"
                " && !document.querySelector('#teach-start').classList.contains('primary')",
                arg=n,
            )
            phone.wait_for_function("document.querySelector('#play-status').innerText.trim() === ''")  # redrawn
            if kind in ("attention", "answer_span"):
                phone.wait_for_selector("#play-words .token", state="visible")
                boxes = tap_boxes(phone)
                small = [b for b in boxes if b["w"] < 44 or b["h"] < 44]
                assert not small, small  # every word, "." and "," included, a thumb's target
                assert all(b["border"] != "0px" and b["cursor"] == "pointer" for b in boxes)  # looks tappable
                if shots:
                    Path(shots).mkdir(parents=True, exist_ok=True)
                    phone.screenshot(path=f"{shots}/phone_{kind}_open.png", full_page=True)
                phone.locator("#play-words .token").nth(0).click()
                if kind == "answer_span":  # its first word, then its last
                    phone.wait_for_function("document.querySelector('#play-status').innerText.includes('last word')")
                    phone.locator("#play-words .token").nth(1).click()
            elif kind == "masked_word":
                phone.fill("#play-guess textarea", "door")
                phone.click("#play-send")
            else:
                phone.click("#play-notnext")
            phone.wait_for_function("document.querySelector('#play-status').innerText.includes('Sent')")
            for i, s in enumerate(students):
                room_.answer(s, ANSWERS[kind](i, words))
            assert len(room_.live.answers) == CLASS
            room_.reveal(key)
            teacher.wait_for_selector("#teach-result .bl-reveal")
            phone.wait_for_selector("#play-reveal .bl-reveal")
            teacher.wait_for_timeout(300)  # the page's layout settles
            heights[kind] = wall_height(teacher)
            assert teacher.locator("#teach-join svg").bounding_box()["width"] < 100  # the reveal has the room
            sizes = teacher.evaluate(SIZES_JS)
            assert sizes["ask"] >= 26 and min(sizes["kind"], sizes["legend"]) >= 18, sizes  # a wall's sizes
            assert sizes["grey"] == [], sizes  # the round line, legend and captions in the text's colour
            if shots:
                Path(shots).mkdir(parents=True, exist_ok=True)
                teacher.screenshot(path=f"{shots}/teacher_{kind}.png", full_page=True)
                phone.screenshot(path=f"{shots}/phone_{kind}.png", full_page=True)
            if kind == "attention":  # the bars' scale, and the model's share written on its bar
                shown = teacher.locator("#teach-result .bl-figure").inner_text()
                assert f"a full bar is all {CLASS} students" in shown
                share = room_.live.model.options[room_.live.model.answer]
                assert f"{share:.0%}" in teacher.locator("#teach-result .bl-w.bl-hit .bl-v.model .bl-n").inner_text()
        print(heights)
        too_tall = {k: h for k, h in heights.items() if h["scroll"] > h["inner"] or h["bottom"] > h["inner"]}
        assert not too_tall, too_tall
        # after a reload the menu still shows the deck's round being played (revealed: the next one)
        teacher.reload()
        nxt = first_of(room_.deck, "answer_span") + 1
        teacher.wait_for_function(
            f"document.querySelector('#teach-controls input[role=combobox]')?.value.startsWith('{nxt}. ')"
        )
        assert "primary" in teacher.locator("#teach-next").get_attribute("class")
    finally:
        teacher.close()
        phone.close()
    assert OUTSIDE == [], OUTSIDE
