"""lab.data.squad: loading, doc-stride features, collate, span decoding; lab.inference.predict_answers on
them; lab.data.squad_metrics: the official EM/F1."""

import json
import zipfile

import pytest
import torch

import lab
from lab import inference
from lab.data import squad, squad_metrics
from lab.data.squad import Example
from tests.conftest import SHARED_DATA, tiny_config

# A hand-made vocabulary where every word is one token, so windows can be checked by hand.
WORDS = "zero one two three four five six seven eight nine what is it ? paris france , . where".split()
VOCAB = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])}

# The worked example of lab/data/squad.py: a 10-token context, a 4-token question, max_seq_length 13
# -> windows of 13 - 4 - 3 = 6 context tokens, stride 3: [0..5], [3..8], [6..9].
CONTEXT = "zero one two three Four Five six seven eight nine"
ANSWER_START = CONTEXT.index("Four")  # 19
PREFIX = 6  # [CLS] what is it ? [SEP]: context tokens start at position 6


@pytest.fixture(scope="module")
def tok():
    return lab.Tokenizer(VOCAB)


def example(answer="Four Five", start=ANSWER_START, impossible=False, qid="q1", context=CONTEXT):
    answers = [] if impossible else [{"text": answer, "answer_start": start}]
    return Example(
        id=qid,
        title="numbers",
        context=context,
        question="what is it ?",
        answers=answers,
        is_impossible=impossible,
        article_index=0,
    )


def windows_features(tok, ex=None, training=True):
    return squad.make_features([ex or example()], tok, max_seq_length=13, doc_stride=3, training=training)


def position(window_start, token):
    """Position of context token `token` inside the feature whose window starts at `window_start`."""
    return PREFIX + token - window_start


# ---------------------------------------------------------------------------------------------- features


def test_doc_stride_windows_worked_example(tok):
    assert squad.doc_windows(10, 6, 3) == [(0, 6), (3, 6), (6, 4)]
    feats = windows_features(tok)
    assert [(f.window_index, f.window_start) for f in feats] == [(0, 0), (1, 3), (2, 6)]
    words = CONTEXT.lower().split()
    for f, (lo, hi) in zip(feats, [(0, 6), (3, 9), (6, 10)]):
        tokens = tok.convert_ids_to_tokens(f.input_ids)
        assert tokens == ["[CLS]", "what", "is", "it", "?", "[SEP]", *words[lo:hi], "[SEP]"]
        assert f.token_type_ids == [0] * PREFIX + [1] * (hi - lo + 1)
        assert f.attention_mask == [1] * len(f.input_ids)
        assert f.token_type_ids.index(1) == PREFIX  # the context starts after [CLS] q [SEP]
        # Offsets only on context tokens, and they point at the context's words.
        assert f.offsets[:PREFIX] == [None] * PREFIX and f.offsets[-1] is None
        assert [CONTEXT[a:b].lower() for a, b in f.offsets[PREFIX:-1]] == words[lo:hi]


def test_answer_positions_per_window(tok):
    # "Four Five" = context tokens 4..5: inside windows 0 and 1, not inside window 2 ([CLS] = 0).
    feats = windows_features(tok)
    assert (feats[0].start_position, feats[0].end_position) == (position(0, 4), position(0, 5)) == (10, 11)
    assert (feats[1].start_position, feats[1].end_position) == (position(3, 4), position(3, 5)) == (7, 8)
    assert (feats[2].start_position, feats[2].end_position) == (0, 0)
    # An answer cut by a window's edge ("five six": tokens 5..6) fits only window 1.
    feats = windows_features(tok, example("Five six", CONTEXT.index("Five")))
    assert [(f.start_position, f.end_position) for f in feats] == [(0, 0), (position(3, 5), position(3, 6)), (0, 0)]
    # v2.0 impossible questions point at [CLS] everywhere; inference features carry no targets.
    assert all(f.start_position == f.end_position == 0 for f in windows_features(tok, example(impossible=True)))
    assert all(f.start_position is None for f in windows_features(tok, training=False))


def test_token_is_max_context(tok):
    # Max-context window per context token (see the table in lab/data/squad.py): 0-4 -> 0, 5-7 -> 1, 8-9 -> 2.
    best = {0: 0, 1: 0, 2: 0, 3: 0, 4: 0, 5: 1, 6: 1, 7: 1, 8: 2, 9: 2}
    for f in windows_features(tok):
        n = len(f.input_ids) - PREFIX - 1
        expected = [best[f.window_start + k] == f.window_index for k in range(n)]
        assert f.token_is_max_context == [False] * PREFIX + expected + [False]
    assert squad.max_context_score([(0, 6), (3, 6)], 0, 4) == pytest.approx(1.06)  # the tie for token 4
    assert squad.max_context_score([(0, 6), (3, 6)], 1, 4) == pytest.approx(1.06)


def test_question_truncated_and_no_room(tok):
    f = squad.make_features([example()], tok, max_seq_length=13, doc_stride=3, max_query_length=2)[0]
    assert tok.convert_ids_to_tokens(f.input_ids[:4]) == ["[CLS]", "what", "is", "[SEP]"]
    assert len(f.input_ids) == 13  # 2 question tokens leave 8 context tokens
    with pytest.raises(ValueError, match="q1"):
        squad.make_features([example()], tok, max_seq_length=7)


def test_offsets_with_trained_tokenizer_keep_original_text():
    texts = ["the eiffel tower is in paris , france .", "where is the tower ?", "it was built in 1889 ."] * 5
    trained = lab.Tokenizer.train(iter(texts), vocab_size=60, min_frequency=1, show_progress=False)
    context = "The Eiffel Tower is in Paris, France. It was built in 1889."
    ex = Example(
        "e1",
        "Eiffel",
        context,
        "Where is the Eiffel Tower?",
        [{"text": "Paris, France", "answer_start": context.index("Paris")}],
        False,
        0,
    )
    (f,) = squad.make_features([ex], trained)
    a, b = f.offsets[f.start_position][0], f.offsets[f.end_position][1]
    assert context[a:b] == "Paris, France"  # case and punctuation come from the context itself
    # Decoding logits that point at those tokens gives back the exact substring.
    s = [0.0] * len(f.input_ids)
    e = [0.0] * len(f.input_ids)
    s[f.start_position], e[f.end_position] = 9.0, 9.0
    best = squad.decode_spans([f], [s], [e], ex)[0]
    assert (best.text, best.start, best.end) == ("Paris, France", a, b)


# ---------------------------------------------------------------------------------------------- collate


def test_collate_and_model_loss(tok):
    feats = windows_features(tok)  # lengths 13, 13, 11
    batch = squad.collate_features(feats, tok.pad_token_id)
    assert len(batch) == 3 and batch.input_ids.shape == (3, 16)  # 13 rounded up to a multiple of 8
    assert batch.input_ids[2, 11:].tolist() == [tok.pad_token_id] * 5
    assert batch.attention_mask.sum(1).tolist() == [13, 13, 11]
    assert batch.token_type_ids[0].tolist() == [0] * 6 + [1] * 7 + [0] * 3
    assert batch.start_positions.tolist() == [10, 7, 0] and batch.end_positions.tolist() == [11, 8, 0]
    assert set(batch.as_dict()) == {"input_ids", "token_type_ids", "attention_mask", "start_positions", "end_positions"}
    torch.manual_seed(0)
    model = lab.BertForQuestionAnswering(tiny_config(vocab_size=len(VOCAB)))
    out = model(**batch.to("cpu").as_dict())
    assert out.start_logits.shape == (3, 16) and torch.isfinite(out.loss)
    unlabelled = squad.collate_features(windows_features(tok, training=False), tok.pad_token_id)
    assert "start_positions" not in unlabelled and set(unlabelled.keys()) == {
        "input_ids",
        "token_type_ids",
        "attention_mask",
    }


def test_predict_end_to_end(tok):
    torch.manual_seed(0)
    model = lab.BertForQuestionAnswering(tiny_config(vocab_size=len(VOCAB), max_position_embeddings=16))
    model.train()
    examples = [example(), example(qid="q2", context="paris , france . where is it ?", answer="france", start=8)]
    preds = inference.predict_answers(model, tok, examples, batch_size=2, max_seq_length=13, doc_stride=3)
    assert set(preds) == {"q1", "q2"} and model.training  # the mode is restored
    for ex in examples:
        assert preds[ex.id] and preds[ex.id] in ex.context


# ---------------------------------------------------------------------------------------------- decoding


def logits(feats, base=-10.0):
    """Per-window start and end logits, all `base`: tests raise the positions they care about."""
    return [[base] * len(f.input_ids) for f in feats], [[base] * len(f.input_ids) for f in feats]


def test_decode_best_span_and_character_offsets(tok):
    feats = windows_features(tok, training=False)
    s, e = logits(feats)
    s[0][position(0, 4)], e[0][position(0, 5)] = 5.0, 5.0  # window 0: "Four Five"
    spans = squad.decode_spans(feats, s, e, example())
    best = spans[0]
    assert (best.text, best.start, best.end, best.score) == ("Four Five", 19, 28, 10.0)
    assert all(CONTEXT[sp.start : sp.end] == sp.text for sp in spans)
    assert len({sp.text for sp in spans}) == len(spans) <= 20  # distinct texts, at most n_best
    assert sum(sp.probability for sp in spans) == pytest.approx(1.0)
    assert [sp.score for sp in spans] == sorted((sp.score for sp in spans), reverse=True)


def test_decode_end_not_before_start(tok):
    feats = windows_features(tok, training=False)
    s, e = logits(feats)
    s[0][position(0, 3)] = 8.0  # best start: "three"
    e[0][position(0, 1)] = 9.0  # best end lies before it: "one" -> not a span
    e[0][position(0, 4)] = 1.0
    spans = squad.decode_spans(feats, s, e, example())
    assert spans[0].text == "three Four" and spans[0].score == 9.0
    assert all(sp.start < sp.end for sp in spans)


def test_decode_max_answer_length(tok):
    feats = windows_features(tok, training=False)
    s, e = logits(feats)
    s[0][position(0, 0)], e[0][position(0, 4)], e[0][position(0, 1)] = 5.0, 5.0, 0.0
    assert squad.decode_spans(feats, s, e, example())[0].text == "zero one two three Four"  # 5 tokens
    spans = squad.decode_spans(feats, s, e, example(), max_answer_length=3)
    assert spans[0].text == "zero one"
    assert all(len(sp.text.split()) <= 3 for sp in spans)


def test_decode_never_in_question_or_special_tokens(tok):
    feats = windows_features(tok, training=False)
    s, e = logits(feats)
    for w, f in enumerate(feats):
        for p in [*range(PREFIX), len(f.input_ids) - 1]:  # [CLS], the question, both [SEP]
            s[w][p], e[w][p] = 50.0, 50.0
    s[0][position(0, 2)], e[0][position(0, 2)] = 1.0, 1.0
    spans = squad.decode_spans(feats, s, e, example())
    assert spans[0].text == "two"
    assert all(sp.text and sp.text in CONTEXT for sp in spans)


def test_decode_max_context_rule_across_windows(tok):
    feats = windows_features(tok, training=False)
    s, e = logits(feats)
    # Token 4 ("Four") is in windows 0 and 1 but has its max context in window 0, so a start
    # there is only accepted from window 0, however high window 1 scores it.
    s[1][position(3, 4)], e[1][position(3, 5)] = 10.0, 10.0
    s[0][position(0, 4)], e[0][position(0, 4)] = 1.0, 1.0
    spans = squad.decode_spans(feats, s, e, example())
    assert (spans[0].text, spans[0].window_index, spans[0].score) == ("Four", 0, 2.0)
    assert all(sp.score < 10 for sp in spans)
    # Token 5 ("Five") belongs to window 1: a start there is accepted from window 1.
    s[1][position(3, 5)] = 10.0
    best = squad.decode_spans(feats, s, e, example())[0]
    assert (best.text, best.window_index, best.score) == ("Five", 1, 20.0)


def test_decode_null_answer_v2(tok):
    ex = example(impossible=True)
    feats = windows_features(tok, ex, training=False)
    s, e = logits(feats)
    for w, null in enumerate([4.0, 3.0, 5.0]):  # null score = the smallest over windows: 3 + 3
        s[w][0] = e[w][0] = null
    s[0][position(0, 4)], e[0][position(0, 4)] = 1.0, 1.0  # best span "Four", score 2
    spans = squad.decode_spans(feats, s, e, ex, null_threshold=0.0)
    assert (spans[0].text, spans[0].score) == ("", 6.0)  # 6 - 2 > 0: no answer
    assert spans[1].text == "Four"
    assert squad.decode_spans(feats, s, e, ex, null_threshold=5.0)[0].text == "Four"  # 4 <= 5
    v1 = squad.decode_spans(feats, s, e, ex)  # null_threshold=None: never ""
    assert v1[0].text == "Four" and all(sp.text for sp in v1)
    assert squad.decode_spans([], [], [], ex) == []


# ---------------------------------------------------------------------------------------------- metrics


def test_normalize_answer():
    assert squad_metrics.normalize_answer("The  Cat!") == squad_metrics.normalize_answer("cat") == "cat"
    assert squad_metrics.normalize_answer("An apple, a day.") == "apple day"
    assert squad_metrics.normalize_answer("Theatre") == "theatre"  # articles only as whole words


def test_exact_match_and_f1():
    assert squad_metrics.exact_match("The  Cat!", ["cat"]) == 1.0
    assert squad_metrics.exact_match("a cat", ["dog", "the cat"]) == 1.0  # max over ground truths
    assert squad_metrics.exact_match("cat sat", "cat") == 0.0
    # "the big cat" -> [big, cat]; "big cat sat" -> [big, cat, sat]: P = 2/2, R = 2/3
    p, r = 1.0, 2 / 3
    assert squad_metrics.f1("the big cat", ["big cat sat"]) == pytest.approx(2 * p * r / (p + r)) == pytest.approx(0.8)
    assert squad_metrics.f1("the big cat", ["dog", "big cat sat", "big cat"]) == 1.0
    assert squad_metrics.f1("cat cat", ["cat"]) == pytest.approx(2 * 0.5 * 1 / 1.5)  # repeated tokens count once each
    assert squad_metrics.f1("dog", ["cat"]) == 0.0
    # Empty answers (SQuAD v2.0): "" is right only about "".
    assert squad_metrics.exact_match("", [""]) == squad_metrics.f1("", [""]) == 1.0
    assert squad_metrics.exact_match("", []) == 1.0  # no ground truth = "no answer"
    assert (
        squad_metrics.f1("", ["cat"]) == squad_metrics.f1("cat", [""]) == squad_metrics.exact_match("cat", [""]) == 0.0
    )


def test_evaluate_percent_missing_and_impossible(caplog):
    exs = [
        example(answer="Four", qid="a"),
        example(answer="Four Five", qid="b"),
        example(impossible=True, qid="c"),
        example(impossible=True, qid="d"),
        example(qid="e"),
    ]
    preds = {"a": "four", "b": "Five", "c": "", "d": "Four"}  # "e" is missing
    with caplog.at_level("WARNING", logger="lab.data.squad_metrics"):
        result = squad_metrics.evaluate(exs, preds)
    assert result["count"] == 5 and result["missing"] == 1
    assert result["exact_match"] == pytest.approx(100 * 2 / 5)
    assert result["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1) / 5)  # b: P 1, R 1/2 -> F1 2/3
    assert "e" in caplog.text


# ---------------------------------------------------------------------------------------------- loading


def squad_json(qas, version="1.1", context=CONTEXT, title="numbers"):
    return {"version": version, "data": [{"title": title, "paragraphs": [{"context": context, "qas": qas}]}]}


def write(path, obj):
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def test_load_v1_and_v2(tmp_path):
    qa = {"id": "q1", "question": "what is it ?", "answers": [{"text": "Four", "answer_start": 19}]}
    (ex,) = squad.load_squad(write(tmp_path / "v1.json", squad_json([qa])))
    assert (ex.id, ex.title, ex.context, ex.question, ex.is_impossible, ex.article_index) == (
        "q1",
        "numbers",
        CONTEXT,
        "what is it ?",
        False,
        0,
    )
    assert ex.answers == [{"text": "Four", "answer_start": 19}]
    v2 = squad_json(
        [
            qa,
            {
                "id": "q2",
                "question": "why ?",
                "answers": [],
                "is_impossible": True,
                "plausible_answers": [{"text": "six", "answer_start": 29}],
            },
        ],
        version="v2.0",
    )
    exs, report = squad.load_squad(write(tmp_path / "v2.json", v2), report=True)
    assert [e.is_impossible for e in exs] == [False, True] and exs[1].answers == []
    assert report.ok and report.impossible == 1 and report.questions == 2


def test_load_rejects_json_without_data(tmp_path):
    with pytest.raises(ValueError, match=r"nodata\.json: no 'data' list \(is this a SQuAD file\?\)"):
        squad.load_squad(write(tmp_path / "nodata.json", {"version": "1.1"}))
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="broken.json: not valid JSON"):
        squad.load_squad(tmp_path / "broken.json")
    with pytest.raises(FileNotFoundError):
        squad.load_squad(tmp_path / "absent.json")


def test_load_counts_and_reports_problems(tmp_path, caplog):
    qas = [
        # answer_start off by 2: the text is in the context -> repaired to the nearest occurrence
        {"id": "shifted", "question": "q?", "answers": [{"text": "Four", "answer_start": 17}]},
        # one good answer, one whose text is nowhere in the context -> that answer dropped
        {
            "id": "half",
            "question": "q?",
            "answers": [{"text": "six", "answer_start": 29}, {"text": "eleven", "answer_start": 3}],
        },
        # v1.1 question left without any answer -> an error, skipped
        {"id": "lost", "question": "q?", "answers": [{"text": "twelve", "answer_start": 0}]},
        {"id": "empty", "question": "q?", "answers": []},
        # no question text -> malformed, skipped
        {"id": "noquestion", "answers": [{"text": "six", "answer_start": 29}]},
    ]
    path = write(tmp_path / "bad.json", squad_json(qas))
    exs, report = squad.load_squad(path, report=True)
    assert [e.id for e in exs] == ["shifted", "half"]
    assert exs[0].answers == [{"text": "Four", "answer_start": 19}]
    assert exs[1].answers == [{"text": "six", "answer_start": 29}]
    assert (report.repaired, report.dropped, report.unanswered, report.malformed) == (1, 2, 2, 1)
    assert report.repaired_ids == ["shifted"] and report.dropped_ids == ["half", "lost"]
    assert report.unanswered_ids == ["lost", "empty"] and report.malformed_ids == ["noquestion"]
    assert not report.ok and "shifted" in str(report) and "bad.json" in str(report)
    # Without report=True the same summary is logged as a warning.
    with caplog.at_level("WARNING", logger="lab.data.squad"):
        assert len(squad.load_squad(path)) == 2
    assert "bad.json" in caplog.text and "shifted" in caplog.text


def test_load_zip_and_split_by_article(tmp_path):
    data = squad_json([])
    data["data"] = [
        {
            "title": f"art{k}",
            "paragraphs": [
                {
                    "context": CONTEXT,
                    "qas": [
                        {"id": f"{k}-{i}", "question": "q?", "answers": [{"text": "six", "answer_start": 29}]}
                        for i in range(2)
                    ],
                }
            ],
        }
        for k in range(5)
    ]
    with zipfile.ZipFile(tmp_path / "tiny.json.zip", "w") as zf:
        zf.writestr("tiny.json", json.dumps(data))
    exs = squad.load_squad(tmp_path / "tiny.json.zip")
    assert len(exs) == 10 and [e.article_index for e in exs] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    train, rest = squad.split_by_article(exs, n_train_articles=3)
    assert {e.title for e in train} == {"art0", "art1", "art2"} and {e.title for e in rest} == {"art3", "art4"}
    with pytest.raises(ValueError, match="n_train_articles"):
        squad.split_by_article(exs, n_train_articles=5)


def test_real_dev_set_if_present():
    path = SHARED_DATA / "squad" / "dev-v1.1.json.zip"
    if not path.is_file():
        pytest.skip(f"SQuAD dev set not found at {path}")
    exs, report = squad.load_squad(path, report=True)
    assert report.articles == 48 and report.paragraphs == 2067 and len(exs) == 10_570
    assert report.ok  # every answer_start of the official dev set matches its text
    train, rest = squad.split_by_article(exs, 40)
    assert len({e.article_index for e in rest}) == 8 and len(train) + len(rest) == 10_570
    # The first ground truth, predicted verbatim, scores 100 on both metrics.
    result = squad_metrics.evaluate(rest[:50], {e.id: e.answers[0]["text"] for e in rest[:50]})
    assert result == {"exact_match": 100.0, "f1": 100.0, "count": 50, "missing": 0}
