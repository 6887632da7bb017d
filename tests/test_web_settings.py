"""The settings a view reads text with have one home, lab.inspect.explore's (answer_settings,
tag_window_settings, MAX_MASKS); lab.web.export writes them into each manifest entry's task and the
page (web/src/task.js, qa.js, tag.js, text.js) reads them from there, keeping no default of its own.

A model without task settings of its own gets explore's defaults in its manifest entry, and the
page, given that entry, computes explore's numbers; an entry that lacks a setting is an error that
names the model and the setting. Runs web/test/logic.mjs as tests/test_web_logic.py does (Node and
web/node_modules needed).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import lab
from lab.data.squad import Example, collate_features, make_features
from lab.data.tagging import make_tag_features
from lab.inspect import explore
from lab.inspect.encoding import mask_positions
from lab.web.export import browser_task
from tests.conftest import tiny_config
from tests.test_web_logic import TAGS, TOL, _need_node, _web_tokenizer, run_js

POSITIONS = 512  # more than explore's default windows (384 for QA, 128 for tagging): the defaults apply
CONTEXT = "the cat sat on the mat because it was tired . " * 50 + "Émile 🥰 went to Paris in 1890 ."


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    _need_node()
    return _web_tokenizer("bert-lab-classroom", tmp_path_factory.mktemp("tok"))


def untrained(cls, tok, seed: int, **overrides):
    """A tiny model with random weights and no task settings (no task_config.json: a Hub model's case)."""
    torch.manual_seed(seed)
    config = tiny_config(vocab_size=tok.vocab_size, max_position_embeddings=POSITIONS, **overrides)
    model = cls(config).eval()
    assert not getattr(model, "task_settings", None)
    return model


def test_a_qa_model_without_settings_reads_with_explores_windows_in_the_page(classroom, tmp_path):
    model = untrained(lab.BertForQuestionAnswering, classroom, 0)
    task = browser_task(model, tmp_path)  # what export-web writes in its manifest entry
    assert task == {**explore.QA_WINDOWS, "n_best": explore.N_BEST, "max_answer_length": explore.MAX_ANSWER_LENGTH}
    question = "where did the cat sit ?"
    example = Example(id="q", title="", context=CONTEXT, question=question, answers=[])
    windows = [task[k] for k in ("max_seq_length", "doc_stride", "max_query_length")]
    features = make_features([example], classroom, *windows, training=False)
    with torch.no_grad():
        out = model(**collate_features(features, classroom.pad_token_id, max_length=task["max_seq_length"]))
    case = {"question": question, "context": CONTEXT, "task": task, "top_k": 3}
    case.update(start_logits=out.start_logits.tolist(), end_logits=out.end_logits.tolist())
    case.update(n_best=task["n_best"], max_answer_length=task["max_answer_length"])
    (got,) = run_js("qa", [case], classroom, max_length=POSITIONS, name="tiny-qa", task=task)
    want = explore.answer(model, classroom, question, CONTEXT, top_k=3)  # no settings named: explore's own
    answer = got["answer"]
    assert answer["numWindows"] == want.num_windows > 1 and answer["windowIndex"] == want.window_index
    assert [len(f["ids"]) for f in got["features"]][0] == explore.QA_WINDOWS["max_seq_length"]
    assert [(s.text, s.start, s.end) for s in want.spans] == [
        (s["text"], s["start"], s["end"]) for s in answer["spans"]
    ]
    assert np.allclose([s["probability"] for s in answer["spans"]], [s.probability for s in want.spans], atol=TOL)
    assert answer["tokens"] == want.tokens and np.allclose(answer["startProbs"], want.start_probs, atol=TOL)


def test_a_tagger_without_settings_reads_with_explores_windows_in_the_page(classroom, tmp_path):
    model = untrained(lab.BertForTokenClassification, classroom, 1, id2label=dict(enumerate(TAGS)))
    task = browser_task(model, tmp_path)
    length = explore.TAG_MAX_SEQ_LENGTH
    assert task == {
        "max_seq_length": length,
        "doc_stride": length // 2,
        "decoding": explore.TAG_DECODING,
        "scheme": "iob2",
    }
    tagged = run_js("tag", [{"input": CONTEXT, "task": task}], classroom, max_length=POSITIONS)[0]
    words = [w for w, _, _ in explore.split_words(CONTEXT)]
    features = make_tag_features([words], classroom, None, task["max_seq_length"], task["doc_stride"])
    assert [f["ids"] for f in tagged["features"]] == [f.input_ids for f in features]
    with torch.no_grad():  # each window's logits, as the page's graph gives them
        logits = [model(torch.tensor([f.input_ids])).logits[0].tolist() for f in features]
    case = {"input": CONTEXT, "task": task, "logits": logits, "labels": TAGS}  # decoding: the manifest's
    (got,) = run_js("tag", [case], classroom, max_length=POSITIONS)
    want = explore.tag(model, classroom, CONTEXT)  # no settings named: explore's own
    assert (got["maxSeqLength"], got["docStride"], got["decoding"]) == (
        want.max_seq_length,
        want.doc_stride,
        explore.TAG_DECODING,
    )
    assert len(got["features"]) == want.num_windows > 1 and got["numPieces"] == want.num_pieces
    assert [(g["word"], g["tag"], g["start"], g["end"]) for g in got["words"]] == [
        (w.word, w.tag, w.start, w.end) for w in want
    ]
    assert np.allclose([g["probability"] for g in got["words"]], [w.probability for w in want], atol=TOL)


def test_the_masks_a_text_may_hold_are_the_manifests(classroom, tmp_path):
    model = untrained(lab.BertForMaskedLM, classroom, 2)
    task = browser_task(model, tmp_path)
    assert task == {"max_masks": explore.MAX_MASKS}
    cases = [[" ".join(["[MASK]"] * n), None, None] for n in (explore.MAX_MASKS, explore.MAX_MASKS + 1, 4)]
    js = run_js("masks", cases, classroom, task=task)
    for (text, _, _), got in zip(cases, js):
        enc = classroom.encode(text, max_length=512)
        try:
            want = {"positions": mask_positions(torch.tensor([enc.input_ids]), classroom, enc, text)}
        except ValueError as e:
            want = {"error": str(e)}
        assert got == want
    # the limit is the manifest's, not a number of the page's own
    assert run_js("masks", cases[2:], classroom, task={"max_masks": 3}) == [
        {"error": "4 [MASK] tokens: at most 3 per text"}
    ]


def test_a_manifest_entry_without_a_setting_is_an_error_naming_the_model_and_the_setting(classroom):
    qa = {**explore.answer_settings(untrained(lab.BertForQuestionAnswering, classroom, 0)), "max_seq_length": 32}
    logits = np.zeros((1, 32)).tolist()
    no_n_best = {k: v for k, v in qa.items() if k != "n_best"}
    cases = [
        {"question": "who ?", "context": "a b c", "task": {}},
        {"question": "who ?", "context": "a b c", "task": no_n_best, "start_logits": logits, "end_logits": logits},
    ]
    no_windows, no_n = run_js("qa", cases, classroom, name="tiny-qa")
    assert no_windows["error"].startswith('the manifest entry of "tiny-qa" has no task.max_seq_length, task.doc_stride')
    assert no_n["error"].startswith('the manifest entry of "tiny-qa" has no task.n_best:')
    tag = {"max_seq_length": 16, "doc_stride": 8}  # no decoding
    (got,) = run_js("tag", [{"input": "Mr. Darcy", "task": tag}], classroom, name="tiny-ner")
    assert got["error"].startswith('the manifest entry of "tiny-ner" has no task.decoding:')
    (got,) = run_js("masks", [["the [MASK] sat", None, None]], classroom, name="tiny-mlm", task={})
    assert got["error"].startswith('the manifest entry of "tiny-mlm" has no task.max_masks:')
    assert "export the site again with python -m lab export-web" in got["error"]
    with pytest.raises(AssertionError, match="has no config.max_length"):  # the page's longest text: the manifest's
        run_js("masks", [["the [MASK] sat", None, None]], classroom, name="tiny-mlm", task={"max_masks": 20}, config={})
