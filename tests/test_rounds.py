"""Class rounds (dashboard.rounds): the deck file and its messages, the class's state (every
answer counted once, changeable until the reveal, the room code, the teacher key, a full room,
memory bounded by the class, the export CSV), the model's side of each kind on the bundled
models, the reveal's HTML escaped, and the API endpoints over HTTP."""

import csv
import html
import inspect
import io
import json
import re
import threading

import pytest

from dashboard.rounds import DEFAULT_DECK, ClassError, Classroom, DeckError, load_deck
from dashboard.rounds.deck import make_round
from dashboard.rounds.kinds import (
    AnswerError,
    ModelAnswer,
    Tally,
    answer_words,
    normalize,
    question_text,
    reveal_html,
    reveal_summary,
    round_words,
)
from dashboard.rounds.registry import KINDS, RoundKind, UnknownKind, kind_of
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


def test_every_kind_is_one_registered_class_with_the_whole_interface(tmp_path):
    """The kinds are found by name (registry.KINDS): every kind the default deck plays is there,
    each implements all of RoundKind (no method left abstract, its deck fields and words set),
    and a deck or a lookup naming a kind that is not there is refused with its name."""
    assert {r.kind for r in load_deck(DEFAULT_DECK)} <= set(KINDS)
    assert list(KINDS) == ["masked_word", "next_sentence", "answer_span", "attention"]
    for name, kind in KINDS.items():
        assert isinstance(kind, RoundKind) and not inspect.isabstract(type(kind)), name
        assert kind.name == name and kind.title and kind.task and kind.fields[0] == "text", name
        for method in RoundKind.__abstractmethods__:
            assert getattr(type(kind), method) is not getattr(RoundKind, method), (name, method)
        assert kind_of(name) is kind
    (tmp_path / "d.yaml").write_text("rounds:\n  - kind: spelling_bee\n    text: a word\n")
    with pytest.raises(DeckError, match=r"d.yaml, round 1: kind must be one of .*, got 'spelling_bee'"):
        load_deck(tmp_path / "d.yaml")
    with pytest.raises(UnknownKind, match="'spelling_bee'"):
        kind_of("spelling_bee")


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


# ----------------------------------------------------------------------------------------------
# The reveal in words (issue 43): its summary, its numbers as a table, the round said in short
# ----------------------------------------------------------------------------------------------
def reveal_of(kind, answers, options, ends=None, text="the cat sat on the mat ."):
    """A round of `kind`, the model's side (`options`: answer -> probability) and the class's tally."""
    fields = {"masked_word": {}, "next_sentence": {"next": "b ."}, "answer_span": {"question": "who?"}}
    fields = fields.get(kind, {"word": "sat", "layer": 0, "head": 0})
    rnd = make_round({"kind": kind, "text": "the [MASK] sat ." if kind == "masked_word" else text, **fields})
    words = round_words(rnd)
    best = max(options, key=options.get)
    answer = f"{best}-{max(ends, key=ends.get)}" if ends else best
    model = ModelAnswer(options, answer, answer_words(rnd, words, answer), ends=ends)
    return rnd, words, model, Tally.of(rnd, model, answers)


def test_the_reveal_summary_says_the_classs_commonest_answer_and_the_models_from_the_numbers():
    masked = reveal_of("masked_word", ["door"] * 12 + ["gate"] * 10 + ["wall"] * 6, {"door": 0.526, "gate": 0.3})
    assert reveal_summary(*masked) == "The class's top answer: door, 12 of 28; the model's: door, 53%."
    nsp = reveal_of("next_sentence", ["NotNext", "IsNext", "NotNext"], {"IsNext": 0.871, "NotNext": 0.129})
    assert reveal_summary(*nsp) == "The class's top answer: NotNext, 2 of 3; the model's: IsNext, 87%."
    att = reveal_of("attention", ["1", "1", "4"], {"0": 0.1, "1": 0.2, "3": 0.41, "4": 0.05})
    assert reveal_summary(*att) == "The class's top word: cat, 2 of 3; the model's: on, 41% of the head's attention."
    span = reveal_of("answer_span", ["1-2", "1-1", "0-2"], {"0": 0.3, "1": 0.6}, ends={"1": 0.25, "2": 0.55})
    assert reveal_summary(*span) == (
        "The class's commonest first word: cat, 2 of 3; last word: sat, 2 of 3; the model's answer: cat sat "
        "(as the first word 60%, as the last word 55%)."
    )


def test_the_reveal_summary_names_a_tie_and_no_answers():
    tie = reveal_of("masked_word", ["door", "gate", "door", "gate"], {"door": 0.5})
    assert reveal_summary(*tie).startswith("The class's top answer: door and gate, 2 of 4 each;")
    many = reveal_of("masked_word", ["a", "b", "c", "d"], {"door": 0.5})
    assert reveal_summary(*many).startswith("The class's top answer: 4 answers tie, 1 of 4 each;")
    assert reveal_summary(*reveal_of("masked_word", [], {"door": 0.5})).startswith(
        "The class's top answer: no answers;"
    )


def test_the_reveal_figure_is_named_by_its_summary_and_its_numbers_are_a_table():
    rnd, words, model, tally = reveal_of("masked_word", ['"><b>x</b>', "door", "door"], {"door": 0.526})
    shown = reveal_html(rnd, words, model, tally)
    summary = html.escape(reveal_summary(rnd, words, model, tally), quote=True)
    assert f'role="img" aria-label="{summary}"' in shown and "<b>x</b>" not in shown  # every text escaped
    table = re.search(r'<details class="bl-numbers"><summary>the numbers as a table</summary>(.*)</details>', shown)[1]
    assert "<caption>" in table and table.count('scope="col"') == 3
    rows = dict(re.findall(r'<tr><th scope="row">(.*?)</th><td>(.*?)</td>', table))
    assert rows == {"door": "2", "&quot;&gt;&lt;b&gt;x&lt;/b&gt;": "1"}
    span = reveal_html(*reveal_of("answer_span", ["1-2"], {"1": 0.6}, ends={"2": 0.55}))
    assert re.findall(r'<th scope="col">(.*?)</th>', span) == [
        "word", "first word: students", "first word: model", "last word: students", "last word: model",
    ]  # fmt: skip
    assert '<tr><th scope="row">2. cat</th><td>1</td><td>60%</td><td>0</td><td>0%</td></tr>' in span


def test_the_word_bars_are_labelled_with_their_numbers_and_their_side_in_words():
    shown = reveal_html(*reveal_of("answer_span", ["1-2", "1-2"], {"1": 0.6}, ends={"2": 0.55}))
    cells = {re.search(r'class="bl-t">(.*?)<', c)[1]: c for c in shown.split('<span class="bl-w')[1:]}
    assert re.findall(r'<span class="bl-n">(.*?)</span>', cells["cat"]) == ["2", "60%", "", ""]  # first; last
    assert re.findall(r'<span class="bl-side">(.*?)</span>', cells["cat"]) == ["first"]  # the last pair is nought
    assert re.findall(r'<span class="bl-side">(.*?)</span>', cells["sat"]) == ["last"]
    assert re.findall(r'<span class="bl-n">(.*?)</span>', cells["on"]) == ["", "", "", ""]
    assert "the class: how many students" in shown and "the model: its probability (striped)" in shown


def test_the_round_in_short_for_the_live_region():
    rnd = make_round({"kind": "masked_word", "text": "he opened the [MASK] and walked into the garden ."})
    assert question_text(rnd) == "Which word is hidden? he opened the blank and walked into the garden ."
    long = make_round({"kind": "answer_span", "text": "a b", "question": "why " * 40 + "?"})
    assert question_text(long).endswith("… Tap the first word of the answer, then its last word.")
