"""SQuAD's official metric: exact match and token F1 after normalization, as evaluate-v1.1.py.

    exact_match("The  Cat!", ["cat"])    # 1.0: lower case, no punctuation, no articles, one space
    f1("the big cat", ["big cat sat"])   # 0.8: tokens shared, precision 2/2, recall 2/3
    evaluate(dev, predictions)           # {"exact_match": %, "f1": %, "count", "missing"}

The behaviour of SQuAD's evaluate-v1.1.py, so that numbers compare with the paper's, with empty
answers scored as v2.0 does ("" is right only about ""). Pure functions on strings: the predictions
come from lab.inference.predict_answers, or from anywhere.
"""

from __future__ import annotations

import logging
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from lab.data.squad import MAX_REPORTED_IDS, Example

logger = logging.getLogger(__name__)

_PUNCTUATION = set(string.punctuation)  # ASCII punctuation only, as the official script
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation, drop the articles a/an/the, collapse whitespace.

    normalize_answer("The  Cat!") -> "cat";   normalize_answer("an apple, a day") -> "apple day"
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)  # "the cat!" -> "the cat"
    text = _ARTICLES.sub(" ", text)  # whole words only: "theatre" keeps its "the"
    return " ".join(text.split())


def _ground_truths(ground_truths: str | Iterable[str]) -> list[str]:
    # one string, or several; no ground truth at all means "no answer" (SQuAD v2.0)
    truths = [ground_truths] if isinstance(ground_truths, str) else list(ground_truths)
    return truths or [""]


def exact_match(prediction: str, ground_truths: str | Iterable[str]) -> float:
    """1.0 if the normalized prediction equals any normalized ground truth, else 0.0."""
    pred = normalize_answer(prediction)
    return max(float(pred == normalize_answer(t)) for t in _ground_truths(ground_truths))


def _f1_one(prediction: str, truth: str) -> float:
    """Bag-of-tokens F1 between two answers, after normalization.

    "the big cat" vs "big cat sat": tokens [big, cat] vs [big, cat, sat], 2 in common,
    precision 2/2, recall 2/3, F1 = 2PR / (P + R) = 0.8.
    """
    pred, gold = normalize_answer(prediction).split(), normalize_answer(truth).split()
    if not pred or not gold:
        # "" is only right about "" (v2.0's rule; the v1.1 script gave 0 even for "" vs "")
        return float(pred == gold)
    common = sum((Counter(pred) & Counter(gold)).values())  # tokens shared, with multiplicity
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1(prediction: str, ground_truths: str | Iterable[str]) -> float:
    """Token-level F1 against the best-matching ground truth, in [0, 1]."""
    return max(_f1_one(prediction, t) for t in _ground_truths(ground_truths))


def evaluate(examples: Sequence[Example], predictions: Mapping[str, str]) -> dict[str, float | int]:
    """Official-style EM and F1 in percent over `examples`: {"exact_match", "f1", "count", "missing"}.

    Ground truths are the answers' texts; an impossible (v2.0) question's only ground truth is
    "", so only an empty prediction scores on it. A question with no prediction scores 0 and
    is counted in "missing" (and logged).
    """
    em_total = f1_total = 0.0
    missing: list[str] = []
    # Like the official script: iterate over the questions, not the predictions (extras are ignored).
    for ex in examples:
        if ex.id not in predictions:
            missing.append(ex.id)
            continue
        truths = [] if ex.is_impossible else [a["text"] for a in ex.answers]  # [] means "" (no answer)
        em_total += exact_match(predictions[ex.id], truths)
        f1_total += f1(predictions[ex.id], truths)
    if missing:
        logger.warning(
            "evaluate: %d of %d questions have no prediction and score 0 (first: %s)",
            len(missing),
            len(examples),
            ", ".join(missing[:MAX_REPORTED_IDS]),
        )
    n = len(examples)
    return {
        "exact_match": 100.0 * em_total / n if n else 0.0,
        "f1": 100.0 * f1_total / n if n else 0.0,
        "count": n,
        "missing": len(missing),
    }
