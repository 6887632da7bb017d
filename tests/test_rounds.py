"""Class rounds (dashboard.rounds): the deck file and its messages, the class's state (every
answer counted once, changeable until the reveal, the room code, the teacher key, a full room,
memory bounded by the class, the export CSV), the model's side of each kind on the bundled
models, the reveal's HTML escaped, and the API endpoints over HTTP."""

import csv
import io
import json
import re
import threading

import pytest

from dashboard.rounds import DEFAULT_DECK, ClassError, Classroom, DeckError, load_deck
from dashboard.rounds.deck import make_round
from dashboard.rounds.kinds import AnswerError, ModelAnswer, Tally, normalize, reveal_html, round_words
from tests.conftest import ROOT


def fake_answerer(rnd):
    """The model's side without a model: the first word (or IsNext, words 0-1, word 0)."""
    answer = {"masked_word": "door", "next_sentence": "IsNext", "answer_span": "0-1", "attention": "0"}[rnd.kind]
    return "fake", ModelAnswer({answer: 0.9}, answer, answer, ends={"1": 0.9} if rnd.kind == "answer_span" else None)


def room(size=200, deck=None):
    return Classroom(deck or load_deck(DEFAULT_DECK), fake_answerer, size=size, code="ACDE", key="secret")


# ----------------------------------------------------------------------------------------------
# The deck
# ----------------------------------------------------------------------------------------------
def test_the_default_deck_comes_from_the_lesson_plan_and_the_prompts():
    deck = load_deck(DEFAULT_DECK)
    sources = "".join((ROOT / "docs" / "teaching" / f).read_text() for f in ("lesson-plan.md", "prompts.md"))
    assert {r.kind for r in deck} == {"masked_word", "next_sentence", "answer_span", "attention"}
    for r in deck:
        asked = r.get("question") or r.text
        assert asked in sources, asked  # every prompt is one the teaching documents use
    truths = [r.truth for r in deck if r.kind == "next_sentence"]
    assert "IsNext" in truths and "NotNext" in truths


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"kind": "quiz", "text": "x"}, "kind must be one of"),
        ({"kind": "masked_word", "text": "no mask here"}, "needs one [MASK]"),
        ({"kind": "masked_word", "text": "a [MASK] b", "colour": "red"}, "has no field colour"),
        ({"kind": "next_sentence", "text": "a .", "next": "b .", "truth": "yes"}, "IsNext or NotNext"),
        ({"kind": "next_sentence", "text": "a ."}, "next must be a text"),
        ({"kind": "attention", "text": "the cat sat", "word": "dog", "layer": 0, "head": 0}, "not in the text"),
        ({"kind": "attention", "text": "the cat sat", "word": "cat", "layer": -1, "head": 0}, "from 0"),
        ({"kind": "answer_span", "text": "x" * 3000, "question": "q?"}, "at most 2,000"),
        ("just a string", "expected a mapping"),
    ],
)
def test_a_bad_round_says_where_and_what(entry, message):
    with pytest.raises(DeckError, match="my.yaml, round 3") as e:
        make_round(entry, "my.yaml, round 3")
    assert message in str(e.value)


def test_deck_files_yaml_and_json(tmp_path):
    rounds = [{"kind": "masked_word", "text": "the [MASK] sat .", "truth": "cat"}]
    (tmp_path / "d.json").write_text(json.dumps(rounds))
    (tmp_path / "d.yaml").write_text("rounds:\n  - kind: masked_word\n    text: the [MASK] sat .\n    truth: cat\n")
    assert load_deck(tmp_path / "d.json") == load_deck(tmp_path / "d.yaml")
    (tmp_path / "bad.yaml").write_text("rounds:\n  - kind: [unclosed\n")
    with pytest.raises(DeckError, match=r"bad.yaml: not valid YAML \(line \d+\)"):
        load_deck(tmp_path / "bad.yaml")
    (tmp_path / "empty.json").write_text("{}")
    with pytest.raises(DeckError, match="expected a list of rounds"):
        load_deck(tmp_path / "empty.json")
    with pytest.raises(DeckError, match="missing.yaml: cannot be read") as e:
        load_deck(tmp_path / "missing.yaml")
    assert str(tmp_path) not in str(e.value)  # a file's name, never the server's path


def test_a_bad_deck_stops_the_app_with_its_message(app, app_models_root, tmp_path):
    from tests.conftest import make_dashboard

    (tmp_path / "deck.json").write_text('[{"kind": "masked_word", "text": "no mask"}]')
    with pytest.raises(DeckError, match=r"deck.json, round 1: a masked_word text needs one \[MASK\]"):
        make_dashboard(app, app_models_root, "--deck", str(tmp_path / "deck.json"))


# ----------------------------------------------------------------------------------------------
# The class's state
# ----------------------------------------------------------------------------------------------
def test_every_answer_sent_before_the_reveal_is_counted_once():
    r = room()
    students = [r.join("acde", f"s{i}") for i in range(120)]  # the code in any case
    r.start("secret", 4)  # a next-sentence round
    barrier = threading.Barrier(24)

    def answer(chunk):
        barrier.wait()
        for n, tok in chunk:
            r.answer(tok, "IsNext" if n % 3 else "NotNext")

    threads = [threading.Thread(target=answer, args=(list(enumerate(students))[k::24],)) for k in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert r.counts() == (120, 120)
    r.answer(students[0], "IsNext")  # a changed answer replaces the first
    r.reveal("secret")
    assert r.live.tally.answered == 120 and r.live.tally.counts == {"IsNext": 81, "NotNext": 39}
    assert r.live.tally.agreed == 81  # the fake model says IsNext
    with pytest.raises(ClassError, match="This round is closed"):
        r.answer(students[1], "NotNext")
    assert r.live.tally.counts["NotNext"] == 39


def test_the_teacher_key_the_room_code_and_a_full_room():
    r = room(size=3)
    with pytest.raises(ClassError, match="room code is not this room's"):
        r.join("WXYZ")
    tokens = [r.join("ACDE") for _ in range(3)]
    with pytest.raises(ClassError, match=r"The room is full \(3 students\)"):
        r.join("ACDE")
    with pytest.raises(ClassError, match="No round yet"):
        r.answer(tokens[0], "door")
    with pytest.raises(ClassError, match="Join the room first"):
        r.answer("made-up", "door")
    for action in (lambda k: r.start(k, 1), r.reveal, r.next, r.export):
        with pytest.raises(ClassError, match="Only the teacher"):
            action("not the key")
    with pytest.raises(ClassError, match="rounds 1 to 12, not 99"):
        r.start("secret", 99)
    assert "started" in r.start("secret", 1) and r.live.number == 1
    with pytest.raises(AnswerError, match="one word"):
        r.answer(tokens[0], "two words")
    assert r.answer(tokens[0], "Door").startswith("Sent: door")
    assert r.answer(tokens[0], "gate").startswith("Changed to: gate")


def test_memory_is_bounded_by_the_class_and_the_export_keeps_every_round():
    r = room()
    tokens = [r.join("ACDE", f"=cmd|{i}" if i == 0 else f"s{i}") for i in range(30)]
    for number in range(1, 13):  # the whole deck, each round answered by everyone
        r.start("secret", number) if number == 1 else r.next("secret")
        kind = r.live.round.kind
        for tok in tokens:
            r.answer(tok, {"masked_word": "door", "next_sentence": "NotNext", "answer_span": "0-1"}.get(kind, "1"))
        assert r.live.number == number and len(r.live.answers) == 30  # only the round being played
        r.reveal("secret")
    with pytest.raises(ClassError, match="last round"):
        r.next("secret")
    rows = list(csv.DictReader(io.StringIO(r.export("secret").read_text())))
    assert len(rows) == 12 * 30 and {int(row["round"]) for row in rows} == set(range(1, 13))
    assert rows[0]["student"] == "'=cmd|0"  # a spreadsheet shows it as text, never as a formula
    spans = [row for row in rows if row["kind"] == "answer_span"]
    assert spans[0]["answer"] == "0-1" and spans[0]["answer_words"] == "The Nautilus"


def test_answers_are_checked_for_each_kind():
    deck = load_deck(DEFAULT_DECK)
    mlm, nsp, att, span = deck[0], deck[3], deck[6], deck[8]
    assert normalize(mlm, [], "  Door ") == "door"
    assert normalize(nsp, [], "NotNext") == "NotNext"
    words = round_words(span)
    assert normalize(span, words, "7-8") == "7-8"
    for kind, bad in ((mlm, "a b"), (mlm, "x" * 41), (nsp, "maybe"), (span, "8-7"), (span, f"0-{len(words)}")):
        with pytest.raises(AnswerError):
            normalize(kind, round_words(kind), bad)
    assert normalize(att, round_words(att), "4") == "4"
    with pytest.raises(AnswerError, match="trembling"):
        normalize(att, round_words(att), "99")


def test_the_reveal_shows_what_students_typed_as_text():
    rnd = make_round({"kind": "masked_word", "text": "the <b>[MASK]</b> sat .", "note": "<script>x</script>"})
    model = ModelAnswer({"<i>cat</i>": 0.5}, "<i>cat</i>", "<i>cat</i>")
    tally = Tally.of(rnd, model, ["<img src=x onerror=alert(1)>", "<i>cat</i>"])
    shown = reveal_html(rnd, [], model, tally, mine="<img src=x onerror=alert(1)>")
    assert "<img" not in shown and "<script>" not in shown and "<i>" not in shown
    assert "&lt;img src=x onerror=alert(1)&gt;" in shown and "1 of 2 gave the model's answer" in shown


# ----------------------------------------------------------------------------------------------
# The model's side, on the bundled models (the deck's own rounds)
# ----------------------------------------------------------------------------------------------
def test_the_models_answer_each_kind_as_their_tabs_do(dash):
    from lab.inspect import explore

    rounds, deck = dash.rounds, load_deck(DEFAULT_DECK)
    name, mlm = rounds.answerer(deck[0])
    model, tok = dash.store.get(rounds.model_name(deck[0]))
    assert name == "bert-lab-classroom" and list(mlm.options.items()) == explore.fill_mask(model, tok, deck[0].text)[0]
    _, nsp = rounds.answerer(deck[3])
    assert nsp.options["IsNext"] == pytest.approx(explore.next_sentence(model, tok, deck[3].text, deck[3].get("next")))
    _, att = rounds.answerer(deck[6])  # trembling, layer 1, head 1: the previous-token head
    assert att.words == "with" and sum(att.options.values()) + att.other == pytest.approx(1, abs=1e-4)
    name, span = rounds.answerer(deck[8])
    assert name == "minilm-squad" and span.words == "Captain Nemo"
    assert (
        sum(span.options.values()) <= 1 + 1e-6 and max(span.options, key=span.options.get) == span.answer.split("-")[0]
    )
    with pytest.raises(ValueError, match="not a model that can play"):
        rounds.answerer(make_round({"kind": "masked_word", "text": "a [MASK] .", "model": "minilm-sst2"}))
    with pytest.raises(ValueError, match="heads 0 to 1"):
        rounds.answerer(make_round({"kind": "attention", "text": "a b c", "word": "b", "layer": 0, "head": 5}))


# ----------------------------------------------------------------------------------------------
# The API: what a phone or a script calls
# ----------------------------------------------------------------------------------------------
def test_the_class_endpoints_over_http(dash, app_url):
    from gradio_client import Client

    room_ = dash.rounds.room
    client = Client(app_url, verbose=False)
    api = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    names = ("class_join", "class_round", "class_answer", "class_start", "class_reveal", "class_next", "class_export")
    assert all(f"/{n}" in api for n in names)
    tokens = [client.predict(room_.code, f"p{i}", api_name="/class_join") for i in range(5)]
    with pytest.raises(Exception, match="Only the teacher"):
        client.predict("wrong", 1, api_name="/class_start")
    client.predict(room_.key, 1, api_name="/class_start")
    state = json.loads(client.predict(tokens[0], api_name="/class_round"))
    assert state["kind"] == "masked_word" and state["open"] and "model_answer" not in state  # nothing before the reveal
    for tok in tokens:
        assert client.predict(tok, "door", api_name="/class_answer").startswith("Sent: door")
    client.predict(room_.key, api_name="/class_reveal")
    state = json.loads(client.predict(tokens[0], api_name="/class_round"))
    assert state["answered"] == 5 and state["class"] == {"door": 5} and state["model_answer"] == "door"
    with pytest.raises(Exception, match="This round is closed"):
        client.predict(tokens[1], "gate", api_name="/class_answer")
    exported = client.predict(room_.key, api_name="/class_export")
    assert sum(1 for row in csv.DictReader(io.StringIO(exported)) if row["round"] == str(room_.live.number)) == 5
    assert room_.key not in client.view_api(return_format="str", print_info=False)


def test_the_key_is_printed_in_the_terminal_and_in_no_page(app, dash, app_url):
    """The banner gives the teacher's link with its key and the room code; no page, no
    configuration and no API description a student can fetch holds the key."""
    import urllib.request
    from argparse import Namespace

    room_ = dash.rounds.room
    text = app.banner(Namespace(host="127.0.0.1", port=7860, share=False), False, True, room=room_)
    assert f"http://127.0.0.1:7860/play with the room code {room_.code}" in text
    assert f"http://127.0.0.1:7860/teacher?key={room_.key}" in text
    for path in ("", "play", "teacher", "config", "gradio_api/info", "play?room=x", "teacher?key=wrong"):
        with urllib.request.urlopen(app_url + path, timeout=30) as r:
            assert room_.key not in r.read().decode(), path


def test_the_reveal_shows_the_models_top_5_and_the_classs_three_commonest_other_guesses():
    rnd = make_round({"kind": "masked_word", "text": "the [MASK] sat ."})
    model = ModelAnswer({w: 0.1 for w in ("cat", "dog", "man", "boy", "girl")}, "cat", "cat")
    guesses = ["cat"] * 4 + ["owl"] * 3 + ["fox"] * 2 + ["bee", "ant", "elk"]
    shown = reveal_html(rnd, [], model, Tally.of(rnd, model, guesses))
    rows = re.findall(r"<tr><th>(.*?)</th>", shown)[1:]  # (the header row first)
    assert rows == ["cat", "dog", "man", "boy", "girl", "owl", "fox", "bee", "2 other guesses"]
    assert "4 of 12 gave the model's answer" in shown
