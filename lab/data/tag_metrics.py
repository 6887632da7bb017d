"""Scoring tags: entities counted as conlleval / seqeval count them, token accuracy, bootstrap intervals.

    scores = entity_scores(gold_tags, pred_tags)   # micro, per type and macro; print(scores): seqeval's table
    bootstrap_interval(gold_tags, pred_tags, "f1")  # F1 with its 95% interval, resampling sentences
    token_accuracy(gold_pos, pred_pos)              # the share of words tagged right (POS)

A predicted entity is correct when its type, first and last word all equal a gold entity's;
precision = correct / predicted, recall = correct / gold. Ill-formed IOB2 (an I- after O) is
counted as conlleval counts it (the worked example above get_entities), never rejected.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def _split_tag(tag: str) -> tuple[str, str]:
    """ "B-PER" -> ("B", "PER"); "O" -> ("O", ""). seqeval's default mode also reads E- and S-."""
    if tag == "O":
        return "O", ""
    if len(tag) > 2 and tag[1] == "-" and tag[0] in "BIES":
        return tag[0], tag[2:]
    raise ValueError(f"{tag!r} is not an entity tag (O, or B-/I-/E-/S- followed by a type)")


# Worked example: entities, counted as conlleval / seqeval (default mode) count them
#
#     word      0      1      2  3      4      5      6
#     tag       B-PER  I-PER  O  I-LOC  B-LOC  I-ORG  I-ORG
#     entities  PER 0-1          LOC 3  LOC 4  ORG 5-6
#
# An I- tag without a B- (after O, or after another type) starts an entity; a change of type ends
# one; B- always starts a new one.


def get_entities(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """The entities of one sentence as (type, first word, last word), conlleval's rules (seqeval's
    default mode):

        ["B-PER", "I-PER", "O", "B-LOC"]  -> [("PER", 0, 1), ("LOC", 3, 3)]
        ["O", "I-LOC", "I-LOC"]           -> [("LOC", 1, 2)]     an I- without a B- starts one
        ["B-PER", "I-LOC"]                -> [("PER", 0, 0), ("LOC", 1, 1)]   a new type, a new one
        ["B-LOC", "B-LOC"]                -> [("LOC", 0, 0), ("LOC", 1, 1)]   B- always starts one

    An entity ends before a word when the previous word ended one (E-/S-), when a B-/S-/O follows
    a B-/I-, or when the type changes; it starts at a B-/S-, at an I-/E- after O/E-/S-, or where
    the type changes.
    """
    entities = []
    prev, prev_type, begin = "O", "", 0
    for i, tag in enumerate([*tags, "O"]):  # a final O closes an entity still open
        kind, type_ = _split_tag(tag)
        ends = (
            prev in "ES"
            or (prev in "BI" and kind in "BSO")
            or (prev != "O" and prev_type != type_)  # a change of type ends an entity
        )
        if ends:
            entities.append((prev_type, begin, i - 1))
        starts = kind in "BS" or (prev in "ESO" and kind in "IE") or (kind != "O" and prev_type != type_)
        if starts:
            begin = i
        prev, prev_type = kind, type_
    return entities


@dataclass
class Score:
    """Entity precision / recall / F1 of one type, or of all types together."""

    precision: float
    recall: float
    f1: float
    support: int  # gold entities
    predicted: int  # predicted entities
    correct: int  # predicted entities equal to a gold one (type, first and last word)


def _score(correct: int, predicted: int, support: int) -> Score:
    # 0 when undefined (no prediction, no gold entity), as seqeval's default zero_division
    p = correct / predicted if predicted else 0.0
    r = correct / support if support else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return Score(p, r, f1, support, predicted, correct)


@dataclass
class EntityScores:
    """entity_scores' result: micro-averaged (all entities together), per type, and the
    unweighted mean over types (macro)."""

    micro: Score
    per_type: dict[str, Score]  # sorted by type: every type seen in gold or predictions
    macro: Score  # precision / recall / f1 = plain means over types; counts summed

    @property
    def precision(self) -> float:
        return self.micro.precision

    @property
    def recall(self) -> float:
        return self.micro.recall

    @property
    def f1(self) -> float:
        return self.micro.f1

    def to_dict(self) -> dict[str, dict[str, float]]:
        """{"micro": {...}, "macro": {...}, "PER": {...}, ...}, each {precision, recall, f1, support, ...}."""
        rows = {"micro": self.micro, "macro": self.macro, **self.per_type}
        return {name: dict(vars(s)) for name, s in rows.items()}

    def __str__(self) -> str:
        width = max([9, *map(len, self.per_type)])
        lines = [f"{'':>{width}}  precision  recall      f1  support  predicted"]
        for name, s in [*self.per_type.items(), ("micro avg", self.micro), ("macro avg", self.macro)]:
            lines.append(
                f"{name:>{width}}  {s.precision:9.4f}  {s.recall:6.4f}  {s.f1:6.4f}  {s.support:7d}  {s.predicted:9d}"
            )
        return "\n".join(lines)


def check_pairs(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], what: str) -> None:
    if len(gold) != len(pred):
        raise ValueError(f"{what}: {len(gold)} gold sentences but {len(pred)} predicted")
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"{what}: sentence {i} has {len(g)} gold tags but {len(p)} predicted")


def _entity_counts(gold, pred) -> tuple[dict[str, np.ndarray], list[str]]:
    """Per type, a (S, 3) array of (correct, predicted, gold) entities in each sentence."""
    rows = []
    for g, p in zip(gold, pred):
        g_set, p_set = set(get_entities(g)), set(get_entities(p))
        counts: Counter = Counter()
        for kind, _, _ in g_set:
            counts[kind, 2] += 1
        for entity in p_set:
            counts[entity[0], 1] += 1
            counts[entity[0], 0] += entity in g_set
        rows.append(counts)
    types = sorted({kind for counts in rows for kind, _ in counts})
    per_type = {t: np.array([[c[t, 0], c[t, 1], c[t, 2]] for c in rows], dtype=np.int64) for t in types}
    return per_type, types


def entity_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> EntityScores:
    """Entity-level precision / recall / F1 over sentences of gold and predicted tags, exactly as
    conlleval and seqeval's default mode count them (entities by get_entities, never across a
    sentence boundary; a predicted entity counts when type, start and end all match). Types
    are those seen in gold or predictions; an undefined ratio (nothing predicted) is 0."""
    check_pairs(gold, pred, "entity_scores")
    per_type_counts, types = _entity_counts(gold, pred)
    per_type = {t: _score(*(int(x) for x in per_type_counts[t].sum(axis=0))) for t in types}
    totals = [sum(getattr(s, k) for s in per_type.values()) for k in ("correct", "predicted", "support")]
    micro = _score(*totals)
    n = len(per_type) or 1
    macro = Score(
        sum(s.precision for s in per_type.values()) / n,
        sum(s.recall for s in per_type.values()) / n,
        sum(s.f1 for s in per_type.values()) / n,
        micro.support,
        micro.predicted,
        micro.correct,
    )
    return EntityScores(micro=micro, per_type=per_type, macro=macro)


def token_accuracy(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """The share of words whose predicted tag equals the gold one (POS tagging's metric)."""
    check_pairs(gold, pred, "token_accuracy")
    total = sum(len(g) for g in gold)
    if not total:
        raise ValueError("token_accuracy: there are no words to score")
    return sum(a == b for g, p in zip(gold, pred) for a, b in zip(g, p)) / total


@dataclass
class Interval:
    """A metric and its bootstrap confidence interval."""

    estimate: float  # the metric on all sentences
    low: float
    high: float
    confidence: float = 0.95
    n_resamples: int = 1000

    def __str__(self) -> str:
        return f"{self.estimate:.4f} ({self.confidence:.0%} interval {self.low:.4f}-{self.high:.4f})"


METRICS = ("f1", "precision", "recall", "accuracy")


def _from_sums(metric: str, sums: np.ndarray) -> np.ndarray:
    """The metric from summed counts (..., 3) = (correct, predicted, gold) or (..., 2) = (right, words)."""
    sums = sums.astype(np.float64)
    if metric == "accuracy":
        return np.divide(sums[..., 0], sums[..., 1], out=np.zeros(sums.shape[:-1]), where=sums[..., 1] > 0)
    correct, predicted, gold = sums[..., 0], sums[..., 1], sums[..., 2]
    num, den = {"precision": (correct, predicted), "recall": (correct, gold), "f1": (2 * correct, predicted + gold)}[
        metric
    ]  # f1 = 2pr / (p + r) = 2 correct / (predicted + gold)
    return np.divide(num, den, out=np.zeros(num.shape), where=den > 0)


def bootstrap_interval(
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    metric: str = "f1",
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """A percentile-bootstrap interval for a metric over sentences: draw as many sentences as there
    are, with replacement (seeded), recompute the metric from the drawn sentences' counts, repeat
    n_resamples times, take the middle `confidence` share of the values.

    metric: "f1" / "precision" / "recall" (entities, micro-averaged) or "accuracy" (tokens).
    Returns an Interval, whose str() reads e.g. "0.6920 (95% interval 0.6600-0.7200)".
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    if not 0 < confidence < 1 or n_resamples < 1:
        raise ValueError(f"confidence must be in (0, 1) and n_resamples >= 1, got {confidence}, {n_resamples}")
    check_pairs(gold, pred, "bootstrap_interval")
    if not gold:
        raise ValueError("bootstrap_interval: no sentences")
    if metric == "accuracy":
        counts = np.array([[sum(a == b for a, b in zip(g, p)), len(g)] for g, p in zip(gold, pred)], dtype=np.int64)
    else:
        per_type, _ = _entity_counts(gold, pred)
        counts = sum(per_type.values(), np.zeros((len(gold), 3), dtype=np.int64))  # (S, 3)
    estimate = float(_from_sums(metric, counts.sum(axis=0)))
    rng = np.random.default_rng(seed)
    values = []
    for first in range(0, n_resamples, 100):  # 100 resamples at a time: (100, S, k) stays small
        m = min(100, n_resamples - first)
        drawn = rng.integers(0, len(gold), size=(m, len(gold)))  # (m, S) sentence indexes
        values.append(_from_sums(metric, counts[drawn].sum(axis=1)))  # (m,)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(np.concatenate(values), [alpha, 1 - alpha])
    return Interval(estimate, float(low), float(high), confidence, n_resamples)
