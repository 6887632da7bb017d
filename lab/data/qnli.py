"""QNLI from SQuAD: a question and one sentence of its paragraph -> does the sentence hold the answer?

    pairs = qnli_pairs(train_examples, seed=0)          # balanced: one pair of each label a question
    write_pairs_tsv(pairs, "runs/qnli/train.tsv")       # sentence1<TAB>sentence2<TAB>label
    threshold, acc = fit_threshold([word_overlap(p.question, p.sentence) for p in pairs], pairs)

GLUE's QNLI (Wang et al. 2018) is built from SQuAD this way; BERT reads a pair as [CLS] question
[SEP] sentence [SEP] with segment ids 0 and 1 (the paper's Section 3, Figure 4a). Two baselines
come with it: word overlap, and a SQuAD model's answer score (lab.inference.answer_scores, which
runs the model), untrained on pairs.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.data.corpus import split_sentences
from lab.data.squad import Example

# Worked example. Context "Paris is in France. It has the Louvre. The Seine flows through it.",
# question "What museum is in Paris?", answer "the Louvre" at characters 27-37:
#     sentence 0  "Paris is in France."             no answer            -> a negative candidate
#     sentence 1  "It has the Louvre."              holds chars 27-37    -> entailment
#     sentence 2  "The Seine flows through it."     no answer            -> a negative candidate
# qnli_pairs keeps sentence 1 as the positive and draws one of sentences 0 and 2 as the
# negative, so every question gives one pair of each label: the set is balanced by construction.

QNLI_LABELS = ("entailment", "not_entailment")

# Function words the word-overlap heuristic ignores ("what", "the", "of" say nothing about
# whether a sentence answers a question).
_FUNCTION_WORDS = frozenset(
    "a an the of in on at to for from by with about into as and or but not no is are was were be "
    "been being has have had do does did what which who whom whose when where why how that this "
    "these those it its there their they he she his her s".split()
)


@dataclass
class SentencePair:
    """One QNLI-style example: a question and one sentence of its paragraph."""

    question: str
    sentence: str
    label: str  # "entailment": the sentence holds the answer; "not_entailment": it does not
    example_id: str  # the SQuAD question id
    article_index: int  # the article, so that a split by article stays visible


def context_sentences(context: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of a context, in order.

    The sentences are lab.data.corpus.split_sentences's (a period, ! or ? followed by a capital or a
    digit ends a sentence; "Mr.", "e.g.", initials such as "U.S." and decimals do not); each is
    found again in the original text, so the spans index `context` itself (answer_start too).
    >>> context_sentences("It rained.  Then it stopped.")
    [(0, 10), (12, 28)]
    """
    spans, at = [], 0
    for sentence in split_sentences(context):
        # split_sentences collapses runs of whitespace: allow any run again between the words
        found = re.compile(r"\s+".join(re.escape(w) for w in sentence.split())).search(context, at)
        spans.append((found.start(), found.end()))
        at = found.end()
    return spans


def qnli_pairs(examples: Sequence[Example], seed: int = 0, min_overlap: int = 0) -> list[SentencePair]:
    """Balanced QNLI-style pairs from SQuAD questions: per question, the sentence that holds its
    (first) answer -> "entailment", and one other sentence of the paragraph, drawn at random ->
    "not_entailment". Shuffled; the same examples and seed give the same pairs.

    A question is skipped when its answer crosses a sentence boundary (no sentence holds it),
    when the paragraph has no other sentence, or (v2.0) when it has no answer. A sentence that
    holds none of the annotated spans but contains an answer's text elsewhere is never drawn as
    a negative: it might answer the question too. min_overlap > 0 keeps only sentences that
    share at least that many content words with the question (GLUE filtered out pairs with low
    lexical overlap, which makes word matching a weaker clue).
    """
    rng = random.Random(seed)
    pairs: list[SentencePair] = []
    spans_of: dict[str, list[tuple[int, int]]] = {}  # one paragraph has several questions
    for ex in examples:
        if ex.is_impossible or not ex.answers:
            continue
        spans = spans_of.setdefault(ex.context, context_sentences(ex.context))
        answers = [(a["answer_start"], a["answer_start"] + len(a["text"])) for a in ex.answers]
        texts = {a["text"].lower() for a in ex.answers if a["text"].strip()}
        first = answers[0]
        positive = next((i for i, (s, e) in enumerate(spans) if s <= first[0] and first[1] <= e), None)
        if positive is None:
            continue
        negatives = [
            i
            for i, (s, e) in enumerate(spans)
            if not any(s < a1 and a0 < e for a0, a1 in answers)  # overlaps no answer span
            and not any(t in ex.context[s:e].lower() for t in texts)
        ]  # nor holds an answer's text
        if min_overlap:
            asked = content_words(ex.question)
            shared = {i: len(asked & content_words(ex.context[slice(*spans[i])])) for i in [positive, *negatives]}
            negatives = [i for i in negatives if shared[i] >= min_overlap]
            if shared[positive] < min_overlap:
                continue
        if not negatives:
            continue
        negative = rng.choice(negatives)
        for i, label in ((positive, "entailment"), (negative, "not_entailment")):
            sentence = " ".join(ex.context[slice(*spans[i])].split())
            pairs.append(SentencePair(" ".join(ex.question.split()), sentence, label, ex.id, ex.article_index))
    rng.shuffle(pairs)
    return pairs


def write_pairs_tsv(pairs: Sequence[SentencePair], path: str | Path) -> Path:
    """A TSV with the header `sentence1<TAB>sentence2<TAB>label` (question, sentence, label) that
    lab.training.finetune.read_classification reads as sentence pairs: [CLS] question [SEP] sentence [SEP].
    (GLUE's own QNLI files call the columns `question` and `sentence`; read_classification would
    take a column named `sentence` for a single-sentence task, hence MNLI's names.)"""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["sentence1\tsentence2\tlabel"]
    for p in pairs:  # qnli_pairs has collapsed whitespace: no tab or newline is left in a text
        lines.append(f"{p.question}\t{p.sentence}\t{p.label}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def content_words(text: str) -> set[str]:
    """The lower-cased words of `text` without function words: "What museum is in Paris?" ->
    {"museum", "paris"}."""
    return {w for w in re.findall(r"\w+", text.lower()) if w not in _FUNCTION_WORDS}


def word_overlap(question: str, sentence: str) -> float:
    """The share of the question's content words that occur in the sentence, 0..1:
    "What museum is in Paris?" / "Paris has the Louvre." -> {museum, paris} vs {paris, louvre} -> 0.5"""
    words = content_words(question)
    return len(words & content_words(sentence)) / len(words) if words else 0.0


def fit_threshold(scores: Sequence[float], pairs: Sequence[SentencePair]) -> tuple[float, float]:
    """(threshold, accuracy): the rule "entailment when score >= threshold" that is right most
    often on `pairs` (the lowest such threshold on a tie). Every observed score is a candidate:
    scores 0, 0.25, 0.5, 1 with labels not, not, entailment, entailment -> threshold 0 gets 2 of
    4 right, 0.25 gets 3, 0.5 gets 4 (and 1 gets 3): (0.5, 1.0).
    Choose it on training pairs, then measure it with `threshold_accuracy` on held-out ones."""
    if not pairs or len(scores) != len(pairs):
        raise ValueError(f"fit_threshold needs one score per pair, got {len(scores)} scores for {len(pairs)} pairs")
    gold = [p.label == QNLI_LABELS[0] for p in pairs]
    best_t, best_right = None, -1
    for t in sorted(set(scores)):
        right = sum((s >= t) == g for s, g in zip(scores, gold))
        if right > best_right:
            best_t, best_right = t, right
    return best_t, best_right / len(pairs)


def threshold_accuracy(scores: Sequence[float], pairs: Sequence[SentencePair], threshold: float) -> float:
    """Accuracy of "entailment when score >= threshold" on `pairs`."""
    return sum((s >= threshold) == (p.label == QNLI_LABELS[0]) for s, p in zip(scores, pairs, strict=True)) / len(pairs)
