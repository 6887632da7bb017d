"""Exercise `squad_metrics` (notebook 4): SQuAD v1.1's exact match and F1 for one question
(the paper's Table 2; Rajpurkar et al. 2016).

The checker compares with lab.data.squad_metrics' official EM/F1 on hand-made cases and on predictions made
from real SQuAD answers; a difference is traced to the mistake (_variant_scores) that reproduces the
student's scores. `show_scores` is the notebook's demonstration on a real reader (squad_reader.py).
"""

from __future__ import annotations

import collections
import functools
import math
import re
import string

from lab import inference
from lab.data import squad, squad_metrics
from lab.data.datasets import find_data
from lab.files import REPOSITORY

from . import core
from .core import Fail, call
from .squad_reader import demo_call, questions_of, reader


def squad_em_f1(prediction, gold_answers):
    """SQuAD v1.1's two scores for one question (Rajpurkar et al. 2016; the BERT paper's Table 2).

    prediction: the predicted answer, a str.
    gold_answers: the annotators' answers, a list of 1 to 5 str.

    Both sides are normalised first: lower case, ASCII punctuation (string.punctuation) removed, the
    articles a, an and the removed (whole words only), runs of whitespace collapsed to one space.
    Returns (em, f1), two floats in [0, 1]:
      em: 1.0 if the normalised prediction equals a normalised gold answer, else 0.0;
      f1: the best, over the gold answers, of the F1 of the two answers' words (split on whitespace):
          precision = shared words / predicted words, recall = shared words / gold words, where a word
          shared k times is counted k times (the min of its two counts). When either side has no words,
          f1 is 1.0 if both have none, else 0.0.
    """

    def normalize(text):
        text = text.lower()
        text = "".join(ch for ch in text if ch not in set(string.punctuation))  # "the cat!" -> "the cat"
        text = re.sub(r"\b(a|an|the)\b", " ", text)  # whole words only: "theatre" keeps its "the"
        return " ".join(text.split())  # collapse runs of whitespace

    def f1(pred_tokens, gold_tokens):
        if not pred_tokens or not gold_tokens:  # "" is right only about ""
            return float(pred_tokens == gold_tokens)
        # shared tokens, each counted as often as it occurs in both: [a, b, b] & [b, b, c] -> 2
        common = sum((collections.Counter(pred_tokens) & collections.Counter(gold_tokens)).values())
        if common == 0:
            return 0.0
        precision, recall = common / len(pred_tokens), common / len(gold_tokens)
        return 2 * precision * recall / (precision + recall)

    pred = normalize(prediction)
    golds = [normalize(g) for g in gold_answers]
    em = max(float(pred == g) for g in golds)  # the best-matching gold answer counts
    return em, max(f1(pred.split(), g.split()) for g in golds)


_ARTICLE_WORDS = re.compile(r"\b(a|an|the)\b")


def _variant_normalize(text: str, how: str) -> str:
    if how == "none":
        return text
    text = text.lower()
    if how != "no punctuation removal":
        text = "".join(ch for ch in text if ch not in string.punctuation)
    if how != "no article removal":
        text = _ARTICLE_WORDS.sub(" ", text)
    return " ".join(text.split())


def _variant_f1(pred: str, gold: str, overlap: str, empty: str) -> float:
    p, g = (
        (list(pred) if overlap == "characters" else pred.split()),
        (list(gold) if overlap == "characters" else gold.split()),
    )
    if overlap == "characters":
        p, g = [c for c in p if c != " "], [c for c in g if c != " "]
    if not p or not g:
        if empty == "zero":
            return 0.0
        return float(p == g)
    if overlap == "set":
        common = len(set(p) & set(g))
        np_, ng = len(set(p)), len(set(g))
    elif overlap == "set over words":
        common = len(set(p) & set(g))
        np_, ng = len(p), len(g)
    else:  # bag (the official one) or characters (a bag of characters)
        common = sum((collections.Counter(p) & collections.Counter(g)).values())
        np_, ng = len(p), len(g)
    if common == 0:
        return 0.0
    precision, recall = common / np_, common / ng
    return 2 * precision * recall / (precision + recall)


def _variant_scores(prediction: str, golds: list[str], mistake: str | None = None) -> tuple[float, float]:
    """(em, f1) as computed with one typical mistake (None: the official way)."""
    how = {
        "no normalisation": "none",
        "no article removal": "no article removal",
        "no punctuation removal": "no punctuation removal",
    }.get(mistake, "official")

    def norm(text):
        return " ".join(text.lower().split()) if mistake == "lower case only" else _variant_normalize(text, how)

    overlap = {"character overlap": "characters", "set overlap": "set", "set overlap, word counts": "set over words"}
    overlap = overlap.get(mistake, "bag")
    empty = "zero" if mistake == "v1.1 empty rule" else "v2"
    pred = norm(prediction)
    ems = [float(pred == norm(g)) for g in golds]
    f1s = [_variant_f1(pred, norm(g), overlap, empty) for g in golds]
    if mistake == "mean over golds":
        return sum(ems) / len(ems), sum(f1s) / len(f1s)
    if mistake == "first gold only":
        return ems[0], f1s[0]
    if mistake == "percent":
        return 100 * max(ems), 100 * max(f1s)
    return max(ems), max(f1s)


_METRIC_MISTAKES = {
    "percent": "your scores are percentages; return fractions in [0, 1] (100 is for reporting a whole set)",
    "no normalisation": "the answers are not normalised: lower-case them, drop punctuation and the articles "
    "a/an/the, collapse whitespace, before comparing (the official script does, so 'The Denver Broncos.' "
    "matches 'Denver Broncos')",
    "lower case only": "the answers are only lower-cased: also drop punctuation and the articles a/an/the, and "
    "collapse whitespace",
    "no article removal": "the articles a, an and the are not removed: re.sub(r'\\b(a|an|the)\\b', ' ', text) "
    "after dropping punctuation",
    "no punctuation removal": "punctuation is not removed: drop every character in string.punctuation",
    "character overlap": "your F1 counts shared characters; SQuAD's F1 counts shared words (split on whitespace)",
    "set overlap": "your F1 counts distinct shared words (sets); SQuAD counts a word shared k times k times: "
    "collections.Counter(pred) & collections.Counter(gold)",
    "set overlap, word counts": "your F1 counts distinct shared words (a set intersection) over all the words; "
    "SQuAD counts a word shared k times k times: collections.Counter(pred) & collections.Counter(gold)",
    "mean over golds": "you average over the gold answers; SQuAD takes the best (max) over them: any annotator's "
    "answer counts as right",
    "first gold only": "you score against the first gold answer only; SQuAD takes the best (max) over all of them",
    "v1.1 empty rule": "an answer that normalises to nothing ('the', '!') scores F1 0 against a gold answer that "
    "also normalises to nothing; two empty answers agree: F1 = 1.0 when both are empty (SQuAD 2.0's rule, as "
    "lab.data.squad_metrics)",
}


# hand-made cases: each one separates the official scores from at least one typical mistake
_METRIC_EDGE_CASES = [
    ("The Denver Broncos.", ["Denver Broncos"]),
    ("an apple a day", ["apple day"]),
    ("Theatre of the Absurd", ["theatre absurd"]),
    ("new york new york", ["new york city"]),
    ("a b b", ["b b c"]),
    ("b b c c", ["b c d"]),
    ("Paris", ["London", "Paris", "the city of Paris"]),
    ("the city of Paris", ["Paris", "city of Paris in France"]),
    ("1,000", ["1000"]),
    ("it  was\tnot   fine", ["It was not fine!"]),
    ("", ["Denver Broncos"]),
    ("Denver Broncos", [""]),
    ("!!!", ["the"]),
    ("The", ["a", "an"]),
    ("tea", ["eat"]),
    ("well-known", ["well known"]),
]


@functools.lru_cache(maxsize=1)
def _real_metric_cases(limit: int = 400) -> tuple[str, tuple[tuple[str, tuple[str, ...]], ...]]:
    """(source, cases) from SQuAD v1.1 dev (shared data), or notebooks/data/qa.json without it: for every
    k-th question, predictions made from its answers and context as a reader model would give them
    (an annotator's answer, the answer with words of context around it, its first half)."""
    path = find_data("squad/dev-v1.1.json.zip", REPOSITORY / "notebooks" / "data" / "qa.json")
    examples = squad.load_squad(path)
    step = max(1, len(examples) // limit)
    cases = []
    for ex in examples[::step][:limit]:
        golds = tuple(a["text"] for a in ex.answers)
        first = ex.answers[0]
        a, b = first["answer_start"], first["answer_start"] + len(first["text"])
        left = ex.context[:a].split()[-2:]  # two words before the answer
        right = ex.context[b:].split()[:1]  # one word after
        words = first["text"].split()
        cases.append((golds[-1], golds))  # the last annotator's answer, scored against all
        cases.append((" ".join(left + [first["text"]] + right), golds))  # too long
        cases.append((" ".join(words[: max(1, len(words) // 2)]), golds))  # too short
        cases.append((first["text"].upper(), golds[1:] or golds))  # other annotators only
    return str(path), tuple(cases)


def _student_scores(student, cases) -> list[tuple[float, float]]:
    """(em, f1) of the student's function on every case; a division by zero on an empty answer is
    explained."""
    what = "your squad_em_f1(prediction, gold_answers)"
    results = []
    for prediction, golds in cases:
        try:
            out = call(student, prediction, list(golds), what=what)
        except Fail as f:
            if "ZeroDivisionError" in f.message:
                empty = not squad_metrics.normalize_answer(prediction).split() or not any(
                    squad_metrics.normalize_answer(g).split() for g in golds
                )
                if empty:
                    raise Fail(
                        f"{f.message} The prediction {prediction!r} against {golds!r} has an empty side after "
                        "normalising, so precision or recall divides by zero: return F1 = 0.0 when either side has "
                        "no words (1.0 when both have none) before dividing.",
                        prediction=prediction,
                        gold_answers=golds,
                    ) from None
            raise
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise Fail(f"Your squad_em_f1 returned {core.short(out, 80)}; return (em, f1), two floats.")
        try:
            em, f1 = (float(v) for v in out)
        except (TypeError, ValueError):
            raise Fail(f"Your squad_em_f1 returned {core.short(out, 80)}; return (em, f1), two floats.") from None
        results.append((em, f1))
    return results


def _diagnose_metrics(cases, results, wrong) -> None:
    """Raise the Fail that names the mistake reproducing the student's scores (every one, else every wrong one)."""

    def explains(mistake):
        return all(
            all(math.isclose(a, b, abs_tol=1e-6) for a, b in zip(_variant_scores(p, g, mistake), r))
            for (p, g), r in zip(cases, results)
        )

    def explains_wrong(mistake):  # at least every case the student got wrong
        return all(
            all(math.isclose(a, b, abs_tol=1e-6) for a, b in zip(_variant_scores(p, g, mistake), r))
            for p, g, r, _ in wrong
        )

    matches = [m for m in _METRIC_MISTAKES if explains(m)] or [m for m in _METRIC_MISTAKES if explains_wrong(m)]
    prediction, golds, got, want = wrong[0]
    part = "EM and F1" if got[0] != want[0] and got[1] != want[1] else ("EM" if got[0] != want[0] else "F1")
    if matches:
        cause = _METRIC_MISTAKES[matches[0]]
    elif part == "EM":
        cause = "only EM differs: compare the normalised prediction with each normalised gold answer"
    else:
        cause = "it matches none of the usual mistakes: compare your steps with the docstring"
    raise Fail(
        f"{len(wrong)} of {len(cases)} scores differ from the official ones. First: {prediction!r} against "
        f"{golds!r} gives you em={got[0]:.3g}, f1={got[1]:.3g}; official em={want[0]:.3g}, f1={want[1]:.3g} "
        f"(normalised: {squad_metrics.normalize_answer(prediction)!r} vs "
        f"{[squad_metrics.normalize_answer(g) for g in golds]!r}): {cause}.",
        prediction=prediction,
        gold_answers=golds,
        yours=got,
        expected=want,
        mistake=matches[0] if matches else "not one of the usual ones",
    )


def check_squad_metrics(student, limit: int = 400):
    """Checks squad_em_f1(prediction, gold_answers) -> (em, f1) against lab.data.squad_metrics' official
    EM/F1 (squad_metrics.exact_match, squad_metrics.f1) on 16 hand-made cases (articles, punctuation, whitespace,
    repeated words, several golds, empty answers) and on 4 predictions for each of `limit` questions
    of SQuAD v1.1 dev (../shared/data; notebooks/data/qa.json without it): an annotator's answer, the
    answer with context words around it, its first half, the upper-cased answer against the other
    annotators. A difference is traced to the mistake that reproduces every score the student gave:
    percentages, no or partial normalisation, character or set overlap, mean or first gold instead of
    the max, the empty-answer rule.
    Options: limit (questions read from SQuAD; fewer is faster).
    """
    source, real = _real_metric_cases(limit)
    cases = [(p, list(g)) for p, g in _METRIC_EDGE_CASES] + [(p, list(g)) for p, g in real]
    results = _student_scores(student, cases)
    wrong = []
    for (prediction, golds), (em, f1) in zip(cases, results):
        want = (squad_metrics.exact_match(prediction, golds), squad_metrics.f1(prediction, golds))
        if not (math.isclose(em, want[0], abs_tol=1e-6) and math.isclose(f1, want[1], abs_tol=1e-6)):
            wrong.append((prediction, golds, (em, f1), want))
    if not wrong:
        return (
            f"Your squad_em_f1 gives the official EM and F1 (lab.data.squad_metrics') on {len(_METRIC_EDGE_CASES)} "
            f"hand-made cases and {len(real)} predictions for {questions_of(source)}.",
            {"cases": len(cases), "data": source},
        )
    _diagnose_metrics(cases, results, wrong)


def show_scores(squad_em_f1, count: int = 40, model: str = "minilm-squad") -> str:
    """Your squad_em_f1 scoring a real model: the bundled model answers `count` SQuAD questions it never
    trained on (lab.inference.predict_answers); your mean EM and F1 beside lab.data.squad_metrics.evaluate's,
    and a few answers that are not exactly right but share words with a gold answer (F1's partial credit)."""
    _, problem = demo_call(squad_em_f1, "a cat", ["the cat"], what="your squad_em_f1")  # before loading anything
    if problem:
        return problem
    qa_model, tokenizer, questions, source = reader(model)
    questions = questions[:count]
    predictions = inference.predict_answers(qa_model, tokenizer, questions, max_seq_length=256, doc_stride=128)
    scores = []
    for ex in questions:
        out, problem = demo_call(
            squad_em_f1, predictions[ex.id], [a["text"] for a in ex.answers], what="your squad_em_f1"
        )
        if problem:
            return problem
        try:
            scores.append(tuple(float(v) for v in out))
        except (TypeError, ValueError):
            return f"Your squad_em_f1 returned {core.short(out, 80)}; return (em, f1), two floats."
    official = squad_metrics.evaluate(questions, predictions)
    em = 100 * sum(s[0] for s in scores) / len(scores)
    f1 = 100 * sum(s[1] for s in scores) / len(scores)
    lines = [
        f"{model} answering {len(questions)} of {questions_of(source, held_out=True)}:",
        f"  your scores:      EM {em:.1f}  F1 {f1:.1f}",
        f"  lab.data.squad_metrics':      EM {official['exact_match']:.1f}  F1 {official['f1']:.1f}",
        "Partial credit (not an exact match, some words shared):",
    ]
    partial = [(ex, s) for ex, s in zip(questions, scores) if s[0] == 0 and s[1] > 0][:3]
    for ex, (_, f) in partial:
        golds = sorted({a["text"] for a in ex.answers})
        lines.append(f"  predicted {predictions[ex.id]!r}, gold {golds!r}: your F1 {f:.2f}")
    if not partial:
        lines.append("  (none among these questions)")
    return "\n".join(lines)


EXERCISE = core.Exercise(
    name="squad_metrics",
    title="SQuAD's exact match and F1",
    group="finetuning",
    checker=check_squad_metrics,
    solution=squad_em_f1,
    imports=(
        "import collections  # noqa: F401 (collections.Counter counts tokens)\n"
        "import re  # noqa: F401 (re.sub removes the articles)\n"
        "import string  # noqa: F401 (string.punctuation)\n"
    ),
    hint=(
        "Write normalize(text) first: text.lower(), drop every ch in string.punctuation, "
        "re.sub(r'\\b(a|an|the)\\b', ' ', text), ' '.join(text.split()). For F1, "
        "collections.Counter(pred_words) & collections.Counter(gold_words) keeps each shared word with its "
        "smaller count; sum its values. Score the prediction against every gold answer and keep the max (not the "
        "mean); guard the empty cases before dividing."
    ),
)
