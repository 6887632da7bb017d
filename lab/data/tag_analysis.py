"""Looking closer at a tagger: the first-sub-token rule piece by piece, how a vocabulary cuts
names, accuracy per tag, entity errors by kind, and the annotators' agreement as a ceiling.

    piece_rows(feature, tokenizer, words, id2label, logits)   # one window, position by position
    vocabulary_coverage(test.sentences, tokenizer)             # per entity type: words kept whole
    entity_errors(gold_tags, pred_tags)                        # correct, wrong type / span, missed, ...
    annotator_agreement("../shared/data/uner-ewt/en_ewt-ud-test.iob2")   # UNER's pairwise F1

Notebook 08 reads these; training, decoding and scoring never need them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lab.data.batch import IGNORE_INDEX
from lab.data.tag_decoding import labels_by_id
from lab.data.tag_metrics import check_pairs, get_entities
from lab.data.tagged_files import is_iob2_tag
from lab.data.tagging import TagFeature, word_pieces, words_and_tags


def piece_rows(
    feature: TagFeature,
    tokenizer,
    words: Sequence[str],
    id2label: Mapping[int, str] | Sequence[str] | None = None,
    logits: Any = None,
) -> list[dict[str, Any]]:
    """One row per position of one window: how the first-sub-token rule labels it, and where a
    prediction is read. `words` are the sentence's words (all of them, as given to make_tag_features).

    Columns: position, piece, word (the word the piece belongs to; "" on [CLS] / [SEP]), of_word
    (that word's index in the sentence; -1 on [CLS] / [SEP]), first (the word's first piece?),
    label (the training label's name on a first piece, -100 elsewhere; "" when the feature has no
    labels); with logits [T, K] of this window also `argmax` (the model's best label at every
    position, read or not) and `read` (True where a word's tag is read: its first piece, in the
    window where that piece has the most context). For "tampa bay":

        position  piece  word   of_word  first  label  argmax  read
        0         [CLS]         -1       False  -100   O       False
        1         ta     tampa  0        True   B-LOC  B-LOC   True
        2         ##mp   tampa  0        False  -100   I-LOC   False     <- never trained, never read
    """
    names = labels_by_id(id2label) if id2label is not None else None
    _, word_ids = word_pieces(tokenizer, [list(words)])[0]  # the word of every piece of the sentence
    if len(word_ids) < feature.window_start + len(feature) - 2:
        raise ValueError("piece_rows: the words are not the sentence this window was cut from")
    best = None
    if logits is not None:
        rows = torch.as_tensor(logits, dtype=torch.float32)  # (T, K)
        if rows.ndim != 2 or rows.shape[0] < len(feature):
            raise ValueError(f"piece_rows: logits of shape {tuple(rows.shape)} for a window of {len(feature)}")
        best = rows[: len(feature)].argmax(-1).tolist()  # (T,)
    pieces = tokenizer.convert_ids_to_tokens(feature.input_ids)
    out = []
    for p, piece in enumerate(pieces):
        w = word_ids[feature.window_start + p - 1] if 0 < p < len(feature) - 1 else -1  # -1: [CLS] / [SEP]
        row: dict[str, Any] = {
            "position": p,
            "piece": piece,
            "word": words[w] if w >= 0 else "",
            "of_word": w,
            "first": feature.word_index[p] >= 0,
            "label": "",
        }
        if feature.labels is not None:
            y = feature.labels[p]
            row["label"] = y if y == IGNORE_INDEX or names is None else names[y]
        if best is not None:
            row["argmax"] = names[best[p]] if names is not None else best[p]
            row["read"] = feature.word_index[p] >= 0 and feature.token_is_max_context[p]
        out.append(row)
    return out


def tag_group(tag: str) -> str:
    """What a tag counts under: an entity tag's type ("B-LOC", "I-LOC" -> "LOC"), "O", or the tag
    itself for plain tags ("PROPN")."""
    return tag[2:] if is_iob2_tag(tag) and tag != "O" else tag


@dataclass
class Coverage:
    """How a vocabulary cuts the words of one group (an entity type, or a tag)."""

    words: int  # word occurrences in the group
    whole: int  # of them, kept as a single piece
    pieces: int  # pieces in all

    @property
    def whole_share(self) -> float:
        return self.whole / self.words if self.words else 0.0

    @property
    def pieces_per_word(self) -> float:
        return self.pieces / self.words if self.words else 0.0


def vocabulary_coverage(sentences: Sequence[Any], tokenizer) -> dict[str, Coverage]:
    """Per group of words (tag_group of each word's tag: LOC, ORG, PER, O; or PROPN, NOUN, ...),
    how many of its word occurrences the tokenizer keeps whole, and how many pieces they make.
    A vocabulary learned from some text keeps whole the words it read often there; a name it
    never read comes out in fragments (the classroom vocabulary: "iraq" -> ir ##a ##q).

    sentences: Sentence / (words, tags) pairs. Returns groups sorted by name."""
    split = [words_and_tags(s, i) for i, s in enumerate(sentences)]
    if any(tags is None for _, tags in split):
        raise ValueError("vocabulary_coverage: every sentence needs its tags")
    counts: dict[str, list[int]] = {}
    for (_, tags), (_, word_ids) in zip(split, word_pieces(tokenizer, [w for w, _ in split])):
        per_word = Counter(word_ids)  # pieces of each word
        for w, tag in enumerate(tags):
            c = counts.setdefault(tag_group(tag), [0, 0, 0])
            c[0], c[1], c[2] = c[0] + 1, c[1] + (per_word[w] == 1), c[2] + per_word[w]
    return {group: Coverage(*c) for group, c in sorted(counts.items())}


def sentences_with_split_entities(sentences: Sequence[Any], tokenizer, max_words: int | None = None) -> list[int]:
    """Indexes of the sentences (IOB2 tags) holding an entity word that the tokenizer cuts into
    pieces, optionally only those of at most max_words words: examples of the first-sub-token rule
    at work on a name."""
    split = [words_and_tags(s, i) for i, s in enumerate(sentences)]
    if any(tags is None for _, tags in split):
        raise ValueError("sentences_with_split_entities: every sentence needs its tags")
    out = []
    for i, ((words, tags), (_, word_ids)) in enumerate(zip(split, word_pieces(tokenizer, [w for w, _ in split]))):
        per_word = Counter(word_ids)  # pieces of each word
        if (max_words is None or len(words) <= max_words) and any(
            t != "O" and per_word[w] > 1 for w, t in enumerate(tags)
        ):
            out.append(i)
    return out


@dataclass
class TagAccuracy:
    """One tag's words: how many there are, the share tagged right, the commonest mistake."""

    tag: str
    words: int  # gold occurrences
    right: int
    confused_with: str  # the wrong tag given most often ("" when none)
    confused: int  # how often

    @property
    def accuracy(self) -> float:
        return self.right / self.words if self.words else 0.0


def tag_accuracies(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, TagAccuracy]:
    """Accuracy per gold tag (recall of each tag, as POS taggers report it), commonest tag first:
    {"NOUN": TagAccuracy("NOUN", 4123, 3420, "PROPN", 301), ...}."""
    check_pairs(gold, pred, "tag_accuracies")
    seen: dict[str, Counter] = {}
    for g, p in zip(gold, pred):
        for a, b in zip(g, p):
            seen.setdefault(a, Counter())[b] += 1
    out = {}
    for tag, given in sorted(seen.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])):
        wrong = [(n, t) for t, n in given.items() if t != tag]
        n, t = min(wrong, key=lambda nt: (-nt[0], nt[1])) if wrong else (0, "")  # most often; ties: by name
        out[tag] = TagAccuracy(tag, sum(given.values()), given[tag], t, n)
    return out


# Universal Dependencies' word classes of the 17 UPOS tags (universaldependencies.org/u/pos):
# closed classes hold the grammar's words (a language rarely gains a new determiner), open classes
# take new words every day (names, nouns, verbs)
UD_WORD_CLASSES = {
    "closed class": ("ADP", "AUX", "CCONJ", "DET", "NUM", "PART", "PRON", "SCONJ"),
    "open class": ("ADJ", "ADV", "INTJ", "NOUN", "PROPN", "VERB"),
    "other": ("PUNCT", "SYM", "X"),
}


def class_accuracies(
    accuracies: Mapping[str, TagAccuracy], classes: Mapping[str, Sequence[str]] = UD_WORD_CLASSES
) -> dict[str, float]:
    """Accuracy over all the words of each class of tags (tag_accuracies' counts pooled, so a class
    is weighted by its words): {"closed class": 0.95, "open class": 0.80, "other": 0.98}. A class
    with no words in the data is left out."""
    out = {}
    for name, tags in classes.items():
        words = sum(accuracies[t].words for t in tags if t in accuracies)
        if words:
            out[name] = sum(accuracies[t].right for t in tags if t in accuracies) / words
    return out


ERROR_KINDS = ("correct", "wrong type", "wrong span", "wrong type and span", "missed")


def entity_errors(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, dict[str, int]]:
    """What became of each gold entity, per type, and the predicted entities that match nothing.

    A gold entity is, in this order: "correct" (a predicted entity of the same type, first and
    last word), "wrong type" (the same words, another type), "wrong span" (an overlapping predicted
    entity of its type), "wrong type and span" (only other types overlap it) or "missed" (no
    predicted entity touches it). "spurious": predicted entities of that type overlapping no gold
    entity. Entities by get_entities; per type {"gold": n, kinds..., "spurious": m}, so the kinds
    add up to "gold" and "correct" is entity_scores' correct count. For one sentence:

        gold  B-ORG I-ORG O     B-PER  O       ORG 0-1, PER 3
        pred  B-LOC I-LOC O     B-PER  B-LOC   LOC 0-1, PER 3, LOC 4
        -> ORG: wrong type 1; PER: correct 1; LOC: spurious 1 (word 4)
    """
    check_pairs(gold, pred, "entity_errors")
    table: dict[str, Counter] = {}
    for g, p in zip(gold, pred):
        g_ents, p_ents = get_entities(g), get_entities(p)
        spans = {(a, b) for _, a, b in p_ents}
        for kind, a, b in g_ents:
            over = [k for k, c, d in p_ents if c <= b and a <= d]  # types of overlapping predictions
            if (kind, a, b) in p_ents:
                what = "correct"
            elif (a, b) in spans:
                what = "wrong type"
            elif kind in over:
                what = "wrong span"
            elif over:
                what = "wrong type and span"
            else:
                what = "missed"
            row = table.setdefault(kind, Counter())
            row["gold"] += 1
            row[what] += 1
        for kind, c, d in p_ents:
            if not any(a <= d and c <= b for _, a, b in g_ents):
                table.setdefault(kind, Counter())["spurious"] += 1
    keys = ("gold", *ERROR_KINDS, "spurious")
    return {kind: {k: int(row[k]) for k in keys} for kind, row in sorted(table.items())}


@dataclass
class Agreement:
    """How far human annotators agree on a file: their pairwise entity F1 per type."""

    path: str  # the .stats file read
    f1: dict[str, float]  # per type, averaged over pairs of annotators (UNER's "average")
    annotators: int | None  # annotators of the file
    documents: int | None  # documents annotated by more than one of them (what the F1 is over)


def annotator_agreement(data_path: str | Path) -> Agreement | None:
    """The annotators' agreement stored beside a tagged file (UNER ships `<name>.stats`, JSON, with
    "pairwise_f1": {..., "average": {"LOC": {"precision", "recall", "f1"}, ...}}): a ceiling
    for any tagger measured on that file. None when there is no such file."""
    stats = Path(data_path).with_suffix(".stats")
    if not stats.is_file():
        return None
    data = json.loads(stats.read_text(encoding="utf-8"))
    pairs = data.get("pairwise_f1") or {}
    average = pairs.get("average") or {}
    if not average:
        raise ValueError(f"{stats}: no pairwise_f1.average block (is it a UNER .stats file?)")
    documents = next((v.get("num_common_annotated_docs") for k, v in pairs.items() if k != "average"), None)
    f1 = {kind: float(v["f1"]) for kind, v in sorted(average.items()) if isinstance(v, dict) and "f1" in v}
    return Agreement(str(stats), f1, data.get("num_annotators"), documents)
