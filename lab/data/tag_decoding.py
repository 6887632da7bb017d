"""Per-window logits -> one tag per word: argmax (the paper's reading) or IOB2 Viterbi.

    predicted = decode_tags(features, logits, model.config.id2label)  # per sentence, per word: WordTag
    pred_tags = [[w.tag for w in sentence] for sentence in predicted]

Each word is read once, from its first piece in the window where that piece has the most context
(lab.data.tagging's worked examples). "viterbi" keeps each word's probabilities but picks the best
tag sequence IOB2 allows (no I-X after O or B-Y): a CRF's decoding with fixed transitions, nothing
trained. The logits are a token classifier's, (B, T, K) per batch: lab.inference runs the model
(tag_logits, predict_tags); nothing here does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from lab.data.tagging import TagFeature


class WordTag(NamedTuple):
    """The prediction for one word, read from its first piece in its max-context window."""

    tag: str
    probability: float  # softmax over the label set at the word's first piece
    runner_up: str  # the second most probable tag ("" with a single label)
    runner_up_probability: float


def labels_by_id(id2label: Mapping[int, str] | Sequence[str]) -> list[str]:
    if isinstance(id2label, Mapping):
        names = {int(k): str(v) for k, v in id2label.items()}
        if sorted(names) != list(range(len(names))):
            raise ValueError(f"id2label must number the labels 0..{len(names) - 1}, got ids {sorted(names)}")
        return [names[i] for i in range(len(names))]
    return [str(v) for v in id2label]


DECODINGS = ("argmax", "viterbi")


def _iob2_constraints(labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """IOB2's rule as additive scores: (start [K], transition [K, K] from row to column), 0 where
    allowed and -inf where not: I-X may only follow B-X or I-X, so it never starts a sentence."""
    k = len(labels)
    start, move = np.zeros(k), np.zeros((k, k))
    for j, label in enumerate(labels):
        if label.startswith("I-"):
            start[j] = -np.inf
            for i, before in enumerate(labels):
                if before[2:] != label[2:] or before[:2] not in ("B-", "I-"):
                    move[i, j] = -np.inf
    return start, move


def iob2_viterbi(log_probs: Any, labels: Sequence[str]) -> list[int]:
    """The most probable tag sequence among those IOB2 allows: the per-word log-probabilities
    [N, K] summed along the path, an I-X only after B-X or I-X (Viterbi, no learned transition
    scores: a CRF's decoding with its transitions fixed to allowed / forbidden). Returns label ids.

    Argmax per word can give "O I-ORG" or "B-PER I-LOC", which conlleval counts as extra or broken
    entities; here each word gives up its own best tag only when the sequence as a whole gains.
    """
    scores = np.asarray(log_probs, dtype=np.float64)  # (N, K)
    if scores.ndim != 2 or scores.shape[1] != len(labels):
        raise ValueError(f"iob2_viterbi: log_probs of shape {scores.shape} for {len(labels)} labels")
    if not len(scores):
        return []
    start, move = _iob2_constraints(labels)
    best = start + scores[0]  # (K,)
    back = np.zeros(scores.shape, dtype=np.int64)
    for t in range(1, len(scores)):
        total = best[:, None] + move  # (K from, K to)
        back[t] = total.argmax(0)
        best = total.max(0) + scores[t]
    path = [int(best.argmax())]
    for t in range(len(scores) - 1, 0, -1):
        path.append(int(back[t, path[-1]]))
    return path[::-1]


def decode_tags(
    features: Sequence[TagFeature],
    logits: Any,
    id2label: Mapping[int, str] | Sequence[str],
    decoding: str = "argmax",
) -> list[list[WordTag]]:
    """Per-window logits -> one WordTag per word of every sentence (list index = sentence_index).

    logits: a [F, T, K] tensor/array (T >= each window's length; padding is ignored) or a list of
    F arrays [T_f, K], in the features' order. Each word is read from its first piece in the window
    where that piece has the most context (TagFeature.token_is_max_context): exactly one reading per
    word. The features must cover whole sentences 0..N-1 (all windows of each).

    decoding: "argmax" (each word's most probable tag, as the paper) or "viterbi" (IOB2 labels:
    the most probable sequence with no I-X after O or B-Y, iob2_viterbi; other label sets: the
    same as argmax). A WordTag's probability is always its tag's; runner_up is the most probable
    other tag, which after Viterbi may be the more probable one (the word gave it up for its
    neighbours).
    """
    if decoding not in DECODINGS:
        raise ValueError(f"decoding must be one of {', '.join(DECODINGS)}, got {decoding!r}")
    names = labels_by_id(id2label)
    if len(logits) != len(features):
        raise ValueError(f"decode_tags: got logits for {len(logits)} windows but {len(features)} features")
    n_sentences = max((f.sentence_index for f in features), default=-1) + 1
    out: list[list[WordTag | None]] = [[] for _ in range(n_sentences)]
    for f in features:
        if not out[f.sentence_index]:
            out[f.sentence_index] = [None] * f.num_words
    picked, readers = [], []  # the first-piece logits each word is read from, and (sentence, word)
    for f, rows in zip(features, logits):
        rows = torch.as_tensor(rows, dtype=torch.float32)  # (T, K)
        if rows.ndim != 2 or rows.shape[0] < len(f) or rows.shape[1] != len(names):
            raise ValueError(
                f"decode_tags: logits of shape {tuple(rows.shape)} for a window of {len(f)} positions and "
                f"{len(names)} labels (expected [T >= {len(f)}, {len(names)}])"
            )
        positions = [p for p, w in enumerate(f.word_index) if w >= 0 and f.token_is_max_context[p]]
        picked.append(rows[positions])  # (P, K)
        readers += [(f.sentence_index, f.word_index[p]) for p in positions]
    if picked:
        # one softmax over every word at once (small per-window calls cost more than the maths)
        probs = torch.softmax(torch.cat(picked), dim=-1)  # (N, K): N words
        top = torch.topk(probs, k=min(2, len(names)), dim=-1)  # best first
        for (i, w), ids, values in zip(readers, top.indices.tolist(), top.values.tolist()):
            runner = (names[ids[1]], values[1]) if len(ids) > 1 else ("", 0.0)
            out[i][w] = WordTag(names[ids[0]], values[0], *runner)
        if decoding == "viterbi" and any(n.startswith("I-") for n in names):
            _viterbi_words(out, readers, probs, names)
    for i, words in enumerate(out):
        missing = [w for w, tag in enumerate(words) if tag is None]
        if not words or missing:
            what = "no windows" if not words else f"no prediction for words {missing[:5]}"
            raise ValueError(f"decode_tags: sentence {i} has {what}; pass all the windows of sentences 0..N-1")
    return out  # type: ignore[return-value]


def _viterbi_words(out: list[list], readers: list[tuple[int, int]], probs: torch.Tensor, names: list[str]) -> None:
    """Replace each sentence's argmax WordTags (complete in `out`) by its IOB2 Viterbi path."""
    rows: dict[int, list[int]] = {}
    for r, (i, w) in enumerate(readers):
        rows.setdefault(i, [0] * len(out[i]))[w] = r
    log_probs = torch.log(probs.clamp_min(1e-12)).numpy()
    p = probs.numpy()
    for i, order in rows.items():
        if len(order) != len(out[i]) or any(t is None for t in out[i]):
            continue  # an incomplete sentence: decode_tags reports it
        for w, (r, k) in enumerate(zip(order, iob2_viterbi(log_probs[order], names))):
            other = max((j for j in range(len(names)) if j != k), key=lambda j: p[r, j], default=None)
            runner = (names[other], float(p[r, other])) if other is not None else ("", 0.0)
            out[i][w] = WordTag(names[k], float(p[r, k]), *runner)
