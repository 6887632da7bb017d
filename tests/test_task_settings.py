"""A fine-tuned model's task settings travel with it: lab.load reads task_config.json once into
model.task_settings, explore reads text with those windows and that decoding by default, and
lab.save writes them back. Tiny random models with the bundled model's vocabulary."""

import json

import pytest
import torch

import lab
from lab import explore
from lab.checkpoint import qa_lengths, tag_settings, task_settings
from tests.conftest import BUNDLED, ROOT, tiny_config

NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TEXT = "Elizabeth Bennet walked from Longbourn to Meryton with her sister Jane and her friend Charlotte ."


@pytest.fixture(scope="module")
def tok():
    return lab.load(ROOT / BUNDLED)[1]


def saved(tmp_path, model, tok, settings):
    folder = tmp_path / "model"
    lab.save(model, tok, folder)
    if settings is not None:
        (folder / "task_config.json").write_text(json.dumps(settings))
    return folder


def tagger(tok):
    torch.manual_seed(0)
    return lab.BertForTokenClassification(tiny_config(vocab_size=tok.vocab_size).with_labels(NER_LABELS))


def test_a_tagger_reads_with_its_own_windows_and_decoding(tmp_path, tok):
    settings = {"task": "tagging", "max_seq_length": 8, "doc_stride": 3, "decoding": "viterbi"}
    model, _ = lab.load(saved(tmp_path, tagger(tok), tok, settings))
    assert model.task_settings == settings
    assert tag_settings(model.task_settings) == {"max_seq_length": 8, "doc_stride": 3, "decoding": "viterbi"}
    by_default = explore.tag(model, tok, TEXT)
    told = explore.tag(model, tok, TEXT, max_seq_length=8, doc_stride=3, decoding="viterbi")
    assert (by_default.max_seq_length, by_default.doc_stride) == (8, 3) and by_default.num_windows > 1
    assert [w.tag for w in by_default] == [w.tag for w in told]
    assert [w.probability for w in by_default] == [w.probability for w in told]
    # said otherwise, the caller wins: the plain argmax over one long window
    plain = explore.tag(model, tok, TEXT, max_seq_length=64, decoding="argmax")
    assert plain.max_seq_length == 64 and plain.num_windows == 1


def test_a_model_without_settings_keeps_the_defaults(tmp_path, tok):
    model, _ = lab.load(saved(tmp_path, tagger(tok), tok, None))
    assert model.task_settings == {} and task_settings(tmp_path / "model") == {}
    result = explore.tag(model, tok, TEXT)
    assert result.max_seq_length == min(128, model.config.max_position_embeddings)


def test_a_qa_model_answers_with_its_windows(tmp_path, tok):
    torch.manual_seed(0)
    qa = lab.BertForQuestionAnswering(tiny_config(vocab_size=tok.vocab_size))
    settings = {"task": "squad", "max_seq_length": 24, "doc_stride": 6, "max_query_length": 6}
    model, _ = lab.load(saved(tmp_path, qa, tok, settings))
    assert qa_lengths(model.task_settings) == {"max_seq_length": 24, "doc_stride": 6, "max_query_length": 6}
    question, context = "who walked ?", TEXT * 2
    by_default = explore.answer(model, tok, question, context)
    told = explore.answer(model, tok, question, context, max_seq_length=24, doc_stride=6, max_query_length=6)
    assert by_default.num_windows == told.num_windows > 1
    assert [(s.start, s.end) for s in by_default.spans] == [(s.start, s.end) for s in told.spans]


def test_another_head_starts_without_the_old_task(tmp_path, tok):
    folder = saved(tmp_path, tagger(tok), tok, {"task": "tagging", "decoding": "viterbi"})
    encoder, _ = lab.load(folder, lab.BertModel)  # fine-tuning something new from a tagger
    assert encoder.task_settings == {}


def test_save_writes_the_settings_back(tmp_path, tok):
    settings = {"task": "tagging", "max_seq_length": 8, "doc_stride": 3, "decoding": "viterbi"}
    model, _ = lab.load(saved(tmp_path, tagger(tok), tok, settings))
    lab.save(model, tok, tmp_path / "copy")
    assert task_settings(tmp_path / "copy") == settings
    assert lab.load(tmp_path / "copy")[0].task_settings == settings


def test_the_bundled_ner_model_tags_as_its_card_measured():
    """models/minilm-ner was evaluated with IOB2 Viterbi: explore.tag reads it so by default."""
    folder = ROOT / "models" / "minilm-ner"
    if not (folder / "task_config.json").is_file():
        pytest.skip("models/minilm-ner is not bundled here")
    model, tok = lab.load(folder)
    assert model.task_settings["decoding"] == "viterbi"
    text = "Barack Obama visited Paris with Angela Merkel ."
    assert [w.tag for w in explore.tag(model, tok, text)] == [
        w.tag for w in explore.tag(model, tok, text, **tag_settings(folder))
    ]
