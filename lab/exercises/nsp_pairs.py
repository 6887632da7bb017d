"""Exercise `nsp_pairs` (notebook 3): next-sentence-prediction pairs, 50% IsNext (the real next
sentence), 50% NotNext (a sentence of another document) (Section 3.1).

The checker runs the student's function on many draws (stats.py) and locates every sentence of every
pair: each sentence with a successor is an A once, labels match where B comes from, the classes are
balanced; `show_nsp_pairs` is the notebook's demonstration on real documents.
"""

from __future__ import annotations

import copy
import math
import random
from collections import Counter

import torch

from . import core
from .core import Fail
from .stats import P_ALARM, pct, upper_tail


def nsp_pairs(documents, rng):
    """Next-sentence-prediction pairs (Section 3.1, "Task #2: Next Sentence Prediction").

    documents: list of documents; each document is a list of sentences (str), in reading
               order, at least one each; there are at least 2 documents
    rng:       random.Random; draw ALL randomness from it (rng.random(), rng.randrange(n),
               rng.choice(seq))

    For every sentence that has a next sentence in its document (all but each document's last),
    make one pair with that sentence as A. Flip a fair coin (rng.random() < 0.5):
      - IsNext  (label 0): B = the sentence right after A in the same document;
      - NotNext (label 1): B = a random sentence of a random OTHER document.

    Returns a list of (sentence_a, sentence_b, label) triples, label an int (0 or 1).
    """
    pairs = []
    for d, sentences in enumerate(documents):
        for i in range(len(sentences) - 1):  # every sentence that has a next one is an A once
            if rng.random() < 0.5:
                pairs.append((sentences[i], sentences[i + 1], 0))  # IsNext: the real continuation
            else:
                # NotNext: a random OTHER document. Draw from the n - 1 others and skip d:
                # e.g. 5 documents, d = 2: 0 -> 0, 1 -> 1, 2 -> 3, 3 -> 4
                other = rng.randrange(len(documents) - 1)
                other += other >= d
                pairs.append((sentences[i], rng.choice(documents[other]), 1))
    return pairs


_NSP_WORDS = (
    "the old keeper climbed the tower and watched the grey sea while ships passed slowly "
    "toward a harbour full of lamps boats nets gulls rain wind stories"
).split()


def _nsp_documents(lengths: list[int], seed: int) -> list[list[str]]:
    """Documents of unique, readable sentences: 'doc 3, sentence 5: the keeper watched the rain .'"""
    rng = random.Random(seed)
    return [
        [
            f"doc {d}, sentence {i}: " + " ".join(rng.choice(_NSP_WORDS) for _ in range(rng.randint(3, 7))) + " ."
            for i in range(n)
        ]
        for d, n in enumerate(lengths)
    ]


def _call_nsp(student, documents, seed):
    given = copy.deepcopy(documents)
    out = core.call(student, given, random.Random(seed), what="your nsp_pairs(documents, rng)")
    if given != documents:
        raise Fail(
            "nsp_pairs changed the documents it was given (in place): build new pairs and leave the input alone.",
        )
    if not isinstance(out, list | tuple):
        raise Fail(
            f"nsp_pairs should return a list of (sentence_a, sentence_b, label) triples; it returned "
            f"{type(out).__name__}.",
            returned=core.short(out),
        )
    for item in out:
        if not (isinstance(item, tuple | list) and len(item) == 3):
            raise Fail(
                "Each pair should be a triple (sentence_a, sentence_b, label); one of yours is "
                f"{core.short(item, 120)}.",
            )
        label = item[2]
        if isinstance(label, torch.Tensor) and label.numel() == 1:
            label = label.item()
        if isinstance(label, str) or label not in (0, 1):
            raise Fail(
                f"Labels must be 0 (IsNext) or 1 (NotNext); one of yours is {label!r}.",
                pair=core.short(item, 200),
            )
    return [(a, b, int(lab.item() if isinstance(lab, torch.Tensor) else lab)) for a, b, lab in out]


def _nsp_inspect(pairs, documents, case):
    """Locate every sentence; check that each sentence with a successor is an A exactly once.
    Returns rows (doc_a, i, doc_b, j, label)."""
    where = {s: (d, i) for d, doc in enumerate(documents) for i, s in enumerate(doc)}
    rows = []
    for a, b, label in pairs:
        for name, s in (("sentence A", a), ("sentence B", b)):
            if s not in where:
                raise Fail(
                    f"{name} of a pair, {core.short(s, 80)}, is not one of the sentences in `documents` ({case}): "
                    "return the sentence strings themselves.",
                    pair=core.short((a, b, label), 300),
                )
        rows.append((*where[a], *where[b], label))
    wanted = Counter((d, i) for d, doc in enumerate(documents) for i in range(len(doc) - 1))
    got = Counter((da, i) for da, i, _, _, _ in rows)
    missing, extra = wanted - got, got - wanted
    if missing or extra:
        example = next(iter(missing or extra))
        last = documents[example[0]] and example[1] == len(documents[example[0]]) - 1
        what = (
            f"{sum(missing.values())} sentences with a next sentence are never an A (e.g. document {example[0]}, "
            f"sentence {example[1]})"
            if missing
            else (
                f"some sentences are an A more than once or should not be one (e.g. document {example[0]}, sentence "
                f"{example[1]}{', the last of its document' if last else ''})"
            )
        )
        raise Fail(
            f"{what} ({case}). Make exactly one pair for every sentence that has a next sentence in its document "
            f"(all but each document's last): {sum(wanted.values())} pairs here, yours has {len(pairs)}.",
            expected_pairs=sum(wanted.values()),
            your_pairs=len(pairs),
        )
    return rows


def _isnext_cause(bad) -> str:
    """Why these IsNext pairs (rows) do not have A's next sentence as B."""
    a_itself = sum(r[2] == r[0] and r[3] == r[1] for r in bad)
    same_doc = [r for r in bad if r[2] == r[0]]
    if a_itself > 0.5 * len(bad):
        cause = "B is A itself: take sentences[i + 1]"
    elif len(same_doc) > 0.5 * len(bad):
        offsets = Counter(r[3] - r[1] for r in same_doc)
        shown = ", ".join(f"{o:+d} x{c}" for o, c in sorted(offsets.items())[:8])
        cause = (
            f"B comes from A's document but is not the next sentence (offsets from A: {shown}); IsNext means "
            "the sentence right after A, sentences[i + 1]"
        )
    else:
        cause = "B comes from another document although the label says IsNext"
    return cause


def _check_labels(rows) -> tuple[list, dict]:
    """IsNext pairs hold the next sentence, NotNext pairs a sentence of another document, the labels
    not swapped: (the NotNext rows, the counts shown with every diagnosis)."""
    pos = [r for r in rows if r[4] == 0]
    neg = [r for r in rows if r[4] == 1]
    pos_next = [r for r in pos if r[2] == r[0] and r[3] == r[1] + 1]
    pos_cross = [r for r in pos if r[2] != r[0]]
    neg_same = [r for r in neg if r[2] == r[0]]
    neg_next = [r for r in neg_same if r[3] == r[1] + 1]
    details = dict(
        pairs=len(rows),
        label_0_isnext=len(pos),
        label_0_with_the_next_sentence=len(pos_next),
        label_1_notnext=len(neg),
        label_1_from_the_same_document=len(neg_same),
    )
    if pos and neg and len(pos_cross) > 0.5 * len(pos) and len(neg_next) > 0.5 * len(neg):
        raise Fail(
            f"Your labels are swapped: {pct(len(pos_cross) / len(pos))} of your label-0 pairs take B from another "
            f"document and {pct(len(neg_next) / len(neg))} of your label-1 pairs take the true next sentence. In "
            "the lab (and Hugging Face) 0 = IsNext, 1 = NotNext.",
            **details,
        )
    if len(pos_next) < len(pos):
        bad = [r for r in pos if r not in pos_next]
        cause = _isnext_cause(bad)
        raise Fail(
            f"{len(bad)} of your {len(pos)} IsNext pairs (label 0) do not have A's next sentence as B: {cause}.",
            **details,
        )
    if neg_same:
        raise Fail(
            f"{len(neg_same)} of your {len(neg)} NotNext pairs (label 1) take B from A's own document "
            f"({pct(len(neg_same) / len(neg))}). A NotNext B must come from ANOTHER document (Google's "
            "create_pretraining_data.py), or it may be a real continuation and the task gets noisy: draw a document "
            "other than A's, e.g. rng.randrange(len(documents) - 1) and skip A's index.",
            **details,
        )
    return neg, details


def _check_balance(rows, neg, documents, details) -> float:
    """Half the pairs NotNext, their B's from many documents; returns the NotNext share."""
    share = len(neg) / len(rows)
    z = (len(neg) - 0.5 * len(rows)) / math.sqrt(0.25 * len(rows))
    if 2 * upper_tail(abs(z)) < P_ALARM:
        raise Fail(
            f"{pct(share)} of your {len(rows)} pairs are NotNext; NSP needs balanced classes, 50% IsNext and 50% "
            f"NotNext (z = {z:.1f}). Flip a fair coin per pair: rng.random() < 0.5.",
            **details,
        )
    sources = {r[2] for r in neg}
    if len(sources) < len(documents) / 2:
        raise Fail(
            f"Your NotNext B's come from only {len(sources)} of the {len(documents)} documents: draw the other "
            "document at random for every pair.",
            **details,
        )
    return share


def _check_nsp_reproducible(student, documents, seed: int) -> None:
    """The same seed gives the same pairs: every random choice comes from `rng`."""
    first = _call_nsp(student, documents, seed)
    if first != _call_nsp(student, documents, seed):
        raise Fail(
            "Two calls with random.Random(seed) seeded alike gave different pairs: draw every random choice from "
            "`rng` (rng.random(), rng.randrange(...), rng.choice(...)), not from the random module itself.",
            seed=seed,
        )


def _check_nsp_edge_cases(student, seed: int) -> None:
    """Two documents, one of a single sentence; two documents of two sentences."""
    for docs_e, what in (
        ([["a lone sentence ."], ["first of two .", "second of two ."]], "two documents, one of a single sentence"),
        ([["x one .", "x two ."], ["y one .", "y two ."]], "two documents of two sentences"),
    ):
        for d in range(20):
            rows_e = _nsp_inspect(_call_nsp(student, docs_e, seed + d), docs_e, what)
            for da, i, db, j, label in rows_e:
                ok = (db == da and j == i + 1) if label == 0 else db != da
                if not ok:
                    raise Fail(
                        f"With {what}, your pair (A = {docs_e[da][i]!r}, B = {docs_e[db][j]!r}, label {label}) is "
                        "wrong: "
                        "label 0 needs A's next sentence, label 1 a sentence of the other document.",
                        documents=docs_e,
                    )


def check_nsp_pairs(student, seed: int = 0, draws: int = 30):
    """Check nsp_pairs (next-sentence-prediction pairs from documents of sentences).

    Inputs: 12 documents of 1 to 13 unique sentences, called `draws` times with random.Random(seed),
    random.Random(seed + 1), ...; then edge cases (two documents, one of them a single sentence; two
    two-sentence documents). Checks: the documents are left unchanged; every sentence that has a next
    one is sentence A of exactly one pair; every label-0 (IsNext) pair has B = the sentence right
    after A; every label-1 (NotNext) pair has B from ANOTHER document; NotNext B's come from several
    documents; the share of NotNext is 50% (two-sided z-test, fails below p = P_ALARM = 1e-6, about
    1,700 pairs); the same seed gives the same pairs. Diagnoses: labels swapped, NotNext drawn from
    the same document, IsNext B not the next sentence (offsets reported), unbalanced classes, rng
    not used. Options: seed, draws.
    """
    lengths = [1, 2, 3, 5, 8, 13, 4, 6, 1, 9, 7, 10]
    documents = _nsp_documents(lengths, seed=3000 + seed)
    case = f"{len(documents)} documents of {min(lengths)} to {max(lengths)} sentences"
    rows = []
    for d in range(draws):
        rows += _nsp_inspect(_call_nsp(student, documents, seed + d), documents, case)
    neg, details = _check_labels(rows)
    share = _check_balance(rows, neg, documents, details)
    _check_nsp_reproducible(student, documents, seed)
    _check_nsp_edge_cases(student, seed)
    return (
        f"nsp_pairs is right on {draws} draws over {len(documents)} documents ({len(rows)} pairs, {pct(share)} "
        "NotNext, every IsNext the true next sentence, every NotNext from another document) and on two-document "
        "edge cases.",
        details,
    )


def show_nsp_pairs(nsp_pairs_fn, documents, count: int = 4, seed: int = 0) -> str:
    """The first `count` pairs the student's nsp_pairs makes from these documents (lists of sentences)."""
    pairs, problem = core.attempt(nsp_pairs_fn, [list(d) for d in documents], random.Random(seed), what="nsp_pairs")
    if problem:
        return f"nsp_pairs: {problem}"
    lines = [f"{len(pairs)} pairs, {sum(int(p[2]) for p in pairs)} of them NotNext"]
    for a, b, label in list(pairs)[:count]:
        lines += [f"[{'IsNext' if int(label) == 0 else 'NotNext'}]", f"  A: {a}", f"  B: {b}"]
    return "\n".join(lines)


EXERCISE = core.Exercise(
    name="nsp_pairs",
    title="Next-sentence prediction: 50% IsNext, 50% NotNext from another document",
    group="pretraining",
    checker=check_nsp_pairs,
    solution=nsp_pairs,
    hint=(
        "Two loops: `for d, sentences in enumerate(documents)` and `for i in range(len(sentences) - 1)`. On heads "
        "append `(sentences[i], sentences[i + 1], 0)`. On tails pick another document without a retry loop: "
        "`other = rng.randrange(len(documents) - 1)`, then `other += other >= d` (this skips d), and append "
        "`(sentences[i], rng.choice(documents[other]), 1)`."
    ),
)
