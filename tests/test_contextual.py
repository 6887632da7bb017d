"""lab.studies.contextual (the same word at every depth) and the QNLI pairs of lab.data.squad (section 6)."""

from collections import Counter

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import lab
from lab import inference, plots
from lab.data import qnli, squad
from lab.data.qnli import SentencePair
from lab.data.squad import Example
from lab.studies import contextual
from lab.training.finetune import read_classification
from tests.conftest import ROOT, tiny_config

# A hand-made vocabulary: every word one token, and "riverbank" = river ##bank (two pieces).
WORDS = (
    "the a bank river money ball sat on of she took her to they danced at threw boy "
    "what who is was paris france it has louvre seine flows through in museum where . ? ,"
).split()
VOCAB = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "##bank"])}
SENSES = {
    "bank": {
        "river": ["they sat on the bank of the river .", "the river bank ."],
        "money": ["she took her money to the bank .", "the bank has money ."],
    },
    "ball": {
        "dance": ["they danced at the ball .", "she was at the ball ."],
        "thing": ["the boy threw the ball .", "a ball ."],
    },
}
SAMPLE_SQUAD = ROOT / "notebooks" / "data" / "qa.json"


@pytest.fixture(scope="module")
def tok():
    return lab.Tokenizer(VOCAB)


@pytest.fixture(scope="module")
def model(tok):
    torch.manual_seed(0)
    return lab.BertForPreTraining(tiny_config(vocab_size=len(VOCAB))).eval()


# ----------------------------------------------------------------------------------------
# Contextual vectors
# ----------------------------------------------------------------------------------------
def test_the_token_embedding_is_the_same_in_every_sentence_and_the_output_is_not(model, tok):
    occ = contextual.word_vectors(model, tok, SENSES)
    L, H = model.config.num_hidden_layers, model.config.hidden_size
    assert occ.vectors.shape == (8, L + 2, H)
    assert occ.layer_names == ["token embedding", "embeddings", "layer 1", "layer 2"]
    assert occ.words == ["bank"] * 4 + ["ball"] * 4 and occ.senses[:4] == ["river", "river", "money", "money"]
    assert occ.pieces == [["bank"]] * 4 + [["ball"]] * 4
    first = occ.similarity("token embedding")
    for i in range(4):  # every occurrence of bank: the same row of the table
        for j in range(4):
            assert first[i, j] == pytest.approx(1.0, abs=1e-6)
            assert torch.equal(occ.vectors[i, 0], occ.vectors[j, 0])
    assert first[0, 4] < 0.99  # bank and ball are different rows
    last = occ.similarity(-1)
    assert np.allclose(np.diag(last), 1.0, atol=1e-6)
    assert all((occ.vectors[i, -1] - occ.vectors[j, -1]).abs().max() > 1e-3 for i in range(4) for j in range(i))
    sep = occ.separation()
    assert sep.shape == (L + 2,) and sep[0] == pytest.approx(0.0, abs=1e-6)


def test_the_embeddings_differ_only_by_position(model, tok):
    # "the bank" at position 2 in two sentences with different continuations: same embeddings,
    # different outputs; at another position the embeddings differ
    occ = contextual.word_vectors(
        model,
        tok,
        {"bank": {"a": ["the bank has money .", "the bank of the river ."], "b": ["she took her money to the bank ."]}},
    )
    assert occ.positions == [[2], [2], [7]]
    emb = occ.similarity("embeddings")
    assert emb[0, 1] == pytest.approx(1.0, abs=1e-6) and emb[0, 2] < 0.999
    assert (occ.vectors[0, -1] - occ.vectors[1, -1]).abs().max() > 1e-3  # the contexts differ after it


def test_a_word_in_pieces_gets_the_mean_of_its_pieces(model, tok):
    occ = contextual.word_vectors(model, tok, {"riverbank": {"x": ["they sat on the riverbank ."]}})
    assert occ.pieces == [["river", "##bank"]] and occ.positions == [[5, 6]]
    states = contextual.sentence_states(model, tok, "they sat on the riverbank .")
    assert torch.allclose(occ.vectors[0], states.states[:, [5, 6]].mean(1))
    # the token-embedding layer is the mean of the two rows of the table
    table = model.bert.embeddings.word_embeddings.weight
    assert torch.allclose(occ.vectors[0, 0], table[[VOCAB["river"], VOCAB["##bank"]]].mean(0))


def test_words_are_found_whole_and_missing_words_are_an_error(model, tok):
    states = contextual.sentence_states(model, tok, "the riverbank , the bank .")
    # [CLS] the river ##bank , the bank . [SEP]
    assert contextual.word_positions(states, "BANK") == [6]  # whole word, any case: not in riverbank
    with pytest.raises(ValueError, match="does not occur"):
        contextual.word_positions(states, "money")
    assert states.words(tok) == [("the", [1]), ("riverbank", [2, 3]), ("the", [5]), ("bank", [6])]


def test_within_across_separation_and_nearest_sense_on_known_vectors():
    # four occurrences of one word in 2-d, one depth: river 1, river 2 along x; money 1, money 2 along y
    v = torch.tensor([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0], [0.1, 1.0]])[:, None]  # (4, 1, 2)
    occ = contextual.Occurrences(
        ["bank"] * 4, ["river", "river", "money", "money"], ["s"] * 4, [["bank"]] * 4, [[1]] * 4, v, ["layer 1"]
    )
    sim = occ.similarity(0)
    within, across = occ.within_across(0)
    assert within == pytest.approx(sim[0, 1])  # both same-sense pairs have this cosine
    assert across == pytest.approx(np.mean([sim[0, 2], sim[0, 3], sim[1, 2], sim[1, 3]]))
    assert occ.separation()[0] == pytest.approx(within - across) and within - across > 0.8
    assert occ.nearest_same_sense(0) == 1.0
    assert occ.labels == ["bank (river) 1", "bank (river) 2", "bank (money) 1", "bank (money) 2"]
    swapped = contextual.Occurrences(
        occ.words, ["river", "money", "river", "money"], occ.sentences, occ.pieces, occ.positions, v, occ.layer_names
    )
    assert swapped.separation()[0] < 0 and swapped.nearest_same_sense(0) == 0.0


def test_nearest_words_leave_out_the_query_and_rank_by_similarity(model, tok):
    pool = [s for by_sense in SENSES.values() for texts in by_sense.values() for s in texts]
    found = contextual.nearest_words(model, tok, pool[0], "bank", pool, layer="token embedding", k=5)
    assert len(found) == 5
    assert [n.similarity for n in found] == sorted((n.similarity for n in found), reverse=True)
    # with context-free vectors the three other occurrences of bank come first, all at 1.0
    assert [n.word for n in found[:3]] == ["bank"] * 3 and all(n.similarity == pytest.approx(1.0) for n in found[:3])
    assert (pool[0], 0) not in {(n.sentence, n.index) for n in found if n.word == "bank"}
    assert {n.index for n in found[:3]} == {1, 2, 3}
    last = contextual.nearest_words(model, tok, pool[0], "bank", pool, k=100)
    assert len(last) == sum(len(contextual.sentence_states(model, tok, s).words(tok)) for s in pool) - 1
    assert all(n.word not in {".", ","} for n in last)


def test_figures(model, tok):
    occ = contextual.word_vectors(model, tok, SENSES)
    fig = plots.occurrence_similarity(occ, layers=("token embedding", "embeddings", -1), title="tiny")
    assert isinstance(fig, Figure) and [ax.get_title() for ax in fig.axes[:3]] == [
        "token embedding",
        "embeddings",
        "layer 2",
    ]
    curves = plots.sense_separation({"a": occ, "b": occ})
    assert len(curves.axes[0].get_lines()) == 3  # two models and the zero line


# ----------------------------------------------------------------------------------------
# QNLI from SQuAD
# ----------------------------------------------------------------------------------------
CONTEXT = "Paris is in France. It has the Louvre.  The Seine flows through it."


def question(qid="q1", text="What museum is in Paris?", answer="the Louvre", context=CONTEXT, article=0):
    return Example(
        id=qid,
        title="Paris",
        context=context,
        question=text,
        answers=[{"text": answer, "answer_start": context.index(answer)}],
        article_index=article,
    )


def test_context_sentences_index_the_original_text():
    spans = qnli.context_sentences(CONTEXT)
    assert [CONTEXT[a:b] for a, b in spans] == [
        "Paris is in France.",
        "It has the Louvre.",
        "The Seine flows through it.",
    ]
    assert spans[2][0] == CONTEXT.index("The Seine")  # after the double space
    text = "The U.S. Army left in 1945. Mr. Smith stayed."
    assert [text[a:b] for a, b in qnli.context_sentences(text)] == ["The U.S. Army left in 1945.", "Mr. Smith stayed."]


def test_qnli_pairs_label_the_answer_sentence():
    pairs = qnli.qnli_pairs([question()], seed=0)
    assert len(pairs) == 2 and Counter(p.label for p in pairs) == {"entailment": 1, "not_entailment": 1}
    positive = next(p for p in pairs if p.label == "entailment")
    negative = next(p for p in pairs if p.label == "not_entailment")
    assert positive.sentence == "It has the Louvre." and positive.question == "What museum is in Paris?"
    assert negative.sentence in {"Paris is in France.", "The Seine flows through it."}
    assert {p.example_id for p in pairs} == {"q1"} and {p.article_index for p in pairs} == {0}
    # over many seeds both other sentences are drawn, never the answer's
    drawn = {
        p.sentence for s in range(20) for p in qnli.qnli_pairs([question()], seed=s) if p.label == "not_entailment"
    }
    assert drawn == {"Paris is in France.", "The Seine flows through it."}


def test_qnli_pairs_skip_what_cannot_be_labelled():
    # the answer's text also occurs in another sentence: that sentence is never a negative
    context = "It has the Louvre. Paris is in France. The Louvre is old."
    ex = question(context=context, answer="the Louvre")
    for seed in range(10):
        negatives = [p.sentence for p in qnli.qnli_pairs([ex], seed=seed) if p.label == "not_entailment"]
        assert negatives == ["Paris is in France."]
    # an answer across a sentence boundary, a one-sentence paragraph, a v2.0 impossible question: no pairs
    across = question(answer="France. It")
    single = question(context="It has the Louvre.")
    impossible = Example(id="q9", title="", context=CONTEXT, question="Why?", answers=[], is_impossible=True)
    assert qnli.qnli_pairs([across, single, impossible]) == []


def test_qnli_pairs_min_overlap_keeps_only_sentences_sharing_words():
    assert qnli.content_words("What museum does Paris have?") == {"museum", "paris"}
    context = "Paris has the Louvre museum. Paris is in France. The Seine flows."
    ex = question(text="What museum does Paris have?", context=context, answer="the Louvre")
    assert {p.sentence for s in range(10) for p in qnli.qnli_pairs([ex], seed=s)} == {
        "Paris has the Louvre museum.",
        "Paris is in France.",
        "The Seine flows.",
    }
    for seed in range(10):  # "The Seine flows." shares no content word with the question: never drawn
        pairs = qnli.qnli_pairs([ex], seed=seed, min_overlap=1)
        assert [p.sentence for p in pairs] in (
            ["Paris has the Louvre museum.", "Paris is in France."],
            ["Paris is in France.", "Paris has the Louvre museum."],
        )
    # the answer sentence of the first example shares no content word: with min_overlap=1 it is skipped
    assert qnli.qnli_pairs([question(text="What museum does Paris have?")], min_overlap=1) == []


def test_qnli_pairs_on_the_sample_are_balanced_deterministic_and_right():
    examples = squad.load_squad(SAMPLE_SQUAD)
    train, dev = squad.split_by_article(examples, 4)
    pairs = qnli.qnli_pairs(train, seed=0)
    assert len(pairs) >= 20
    counts = Counter(p.label for p in pairs)
    assert counts["entailment"] == counts["not_entailment"] == len(pairs) // 2
    assert pairs == qnli.qnli_pairs(train, seed=0)
    assert [p.sentence for p in pairs] != [p.sentence for p in qnli.qnli_pairs(train, seed=1)]
    answers = {ex.id: [a["text"].lower() for a in ex.answers] for ex in examples}
    for p in pairs:
        holds = any(a in p.sentence.lower() for a in answers[p.example_id])
        assert holds == (p.label == "entailment"), p
    dev_pairs = qnli.qnli_pairs(dev, seed=0)
    assert dev_pairs and {p.article_index for p in dev_pairs}.isdisjoint({p.article_index for p in pairs})


def test_pairs_tsv_reads_back_as_sentence_pairs(tmp_path):
    pairs = qnli.qnli_pairs([question(), question("q2", "Where does the Seine flow?", "through it")], seed=0)
    path = qnli.write_pairs_tsv(pairs, tmp_path / "sub" / "pairs.tsv")
    data = read_classification(path)
    assert data.texts == [p.question for p in pairs] and data.pairs == [p.sentence for p in pairs]
    assert data.labels == [p.label for p in pairs]


def test_word_overlap_and_the_threshold():
    assert qnli.word_overlap("What museum is in Paris?", "Paris has the Louvre.") == 0.5
    assert qnli.word_overlap("What is it?", "Anything.") == 0.0  # no content words
    pairs = [
        SentencePair("q", "s", label, "id", 0)
        for label in ("not_entailment", "not_entailment", "entailment", "entailment")
    ]
    assert qnli.fit_threshold([0, 0.25, 0.5, 1], pairs) == (0.5, 1.0)  # the docstring's example
    assert qnli.threshold_accuracy([0.6, 0.4, 0.4, 0.6], pairs, 0.5) == 0.5
    with pytest.raises(ValueError):
        qnli.fit_threshold([0.5], pairs)


def test_answer_scores_are_the_best_span_minus_no_answer(tok):
    torch.manual_seed(0)
    qa = lab.BertForQuestionAnswering(tiny_config(vocab_size=len(VOCAB), hidden_dropout_prob=0.0)).eval()
    pairs = [
        SentencePair("where is paris ?", "paris is in france .", "entailment", "a", 0),
        SentencePair("what is it ?", "it has the louvre , the seine flows through paris .", "not_entailment", "b", 0),
        SentencePair("who ?", "the seine .", "entailment", "c", 0),
    ]
    scores = inference.answer_scores(qa, tok, pairs, batch_size=2, precision="fp32")
    assert len(scores) == 3
    for p, score in zip(pairs, scores):  # by hand: every span of the sentence, against [CLS] + [CLS]
        enc = tok.encode(p.question, p.sentence)
        with torch.no_grad():
            out = qa(torch.tensor([enc.input_ids]), torch.tensor([enc.token_type_ids]))
        s, e = out.start_logits[0], out.end_logits[0]
        sentence = [i for i, seq in enumerate(enc.sequence_ids) if seq == 1]
        best = max(float(s[i] + e[j]) for i in sentence for j in sentence if i <= j)
        assert score == pytest.approx(best - float(s[0] + e[0]), abs=1e-4)
    assert qa.training is False
