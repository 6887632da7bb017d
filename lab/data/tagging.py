"""Tagged sentences -> model inputs: each word's label on its first sub-token, windows, batches.

    features = make_tag_features(data.sentences, tokenizer, label2id)   # one TagFeature per window
    batch = collate_tag_features(features[:16], tokenizer.pad_token_id)  # -> Batch, labels -100 off first pieces
    loss = model(**batch).loss                                           # BertForTokenClassification

The paper (Section 5.3) feeds "the representation of the first sub-token" of each word to the
classifier; the worked examples below show that rule and the windows of a long sentence, which
are squad's doc-stride windows (lab.data.squad.doc_windows). Nothing here needs the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from lab.data.batch import IGNORE_INDEX, Batch, pad_rows
from lab.data.squad import best_window, doc_windows

# Worked example: the first-sub-token rule
# ----------------------------------------
# The data comes split into words; WordPiece splits some words further. A word's label goes on its
# first piece only; the other pieces, [CLS], [SEP] and padding get -100 (ignored by the loss), and a
# prediction is read from the first piece. With the bundled classroom vocabulary:
#
#     words       tampa/B-LOC  bay/I-LOC  morcillas/O  ./O              (word/tag)
#     position    0      1      2     3     4      5    6      7     8     9    10
#     pieces      [CLS]  ta     ##mp  ##a   bay    mor  ##cil  ##l   ##as  .    [SEP]
#     labels      -100   B-LOC  -100  -100  I-LOC  O    -100   -100  -100  O    -100
#     word_index  -1     0      -1    -1    1      2    -1     -1    -1    3    -1
#
# `TagFeature.word_index` is the word -> first-sub-token map: the word whose first piece sits at
# each position (-1 elsewhere). A word the tokenizer turns into no piece at all (a zero-width
# space, a control character) is given one [UNK] piece, so that it is still labelled and predicted.
#
# Worked example: a sentence longer than the window
# -------------------------------------------------
# A sentence of more pieces than max_seq_length - 2 is read in overlapping windows exactly as
# lab/data/squad.py reads a long context (`doc_windows`; see the table there). Six words w0..w5 of
# 10 pieces, max_seq_length = 8 (6 pieces a window), doc_stride = 3:
#
#     piece      p0  p1  p2  p3  p4  p5  p6  p7  p8  p9
#     word       w0  w1  ..  w2  w3  ..  ..  w4  w5  ..     (".." continues the word before it)
#     window 0   p0* p1* p2  p3* p4* p5                     [CLS] p0..p5 [SEP]   (start 0, 6 pieces)
#     window 1               p3  p4  p5  p6  p7* p8         [CLS] p3..p8 [SEP]   (start 3, 6 pieces)
#     window 2                           p6  p7  p8* p9     [CLS] p6..p9 [SEP]   (start 6, 4 pieces)
#
# In training, a word is labelled in every window that holds its first piece (each window is an
# example, as SQuAD's windows are). In prediction, a word is read from the window where its first
# piece has the most context (*), squad's `max_context_score` = min(pieces to its left, pieces to
# its right) + 0.01 * window length, the first window on a tie: w0..w3 from window 0 (p4: 1.06 in
# both 0 and 1, a tie), w4 from window 1 (p7: 1.06 against 1.04), w5 from window 2. The windows
# cover every piece, so every word's first piece lies in at least one window and nothing is
# dropped, not even a word of more pieces than a window holds: its first piece is labelled and read
# like any other, its remaining pieces carry -100 wherever they fall.


@dataclass
class TagFeature:
    """One window of one sentence, as the model sees it (unpadded; collate_tag_features pads)."""

    sentence_index: int  # index into the sentences given to make_tag_features
    window_index: int  # 0, 1, ... along the sentence
    window_start: int  # index of the window's first piece among the sentence's pieces
    num_words: int  # words in the whole sentence
    input_ids: list[int]  # [CLS] pieces [SEP]
    word_index: list[int]  # per position: the word whose FIRST piece is here; -1 elsewhere
    token_is_max_context: list[bool]  # per position: is this the piece's best window (False on [CLS]/[SEP])
    labels: list[int] | None = None  # per position: the word's label id on first pieces, -100 elsewhere

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def word_positions(self) -> dict[int, int]:
        """{word: position of its first piece} for the words whose first piece is in this window."""
        return {w: p for p, w in enumerate(self.word_index) if w >= 0}


def words_and_tags(sentence: Any, i: int) -> tuple[list[str], list[str] | None]:
    """A Sentence / (words, tags) pair -> (words, tags); a plain list of words -> (words, None)."""
    if isinstance(sentence, str):
        raise TypeError(f"sentence {i} is one string: give a list of words (or (words, tags))")
    items = list(sentence)
    if len(items) == 2 and not isinstance(items[0], str) and not isinstance(items[1], str):
        words, tags = list(items[0]), list(items[1])
        if len(words) != len(tags):
            raise ValueError(f"sentence {i}: {len(words)} words but {len(tags)} tags")
        return words, tags
    return items, None


def word_pieces(tokenizer, sentences: Sequence[list[str]]) -> list[tuple[list[int], list[int]]]:
    """Each sentence's WordPiece ids and, per piece, the word it came from (words kept as given).

    [["tampa", "bay"]] -> [([ta, ##mp, ##a, bay], [0, 0, 0, 1])] (ids shown as tokens). A word
    with no piece (only characters the normalizer drops) becomes one [UNK]."""
    encodings = tokenizer.backend.encode_batch(
        [list(words) for words in sentences], is_pretokenized=True, add_special_tokens=False
    )
    out = []
    for words, enc in zip(sentences, encodings):
        by_word: list[list[int]] = [[] for _ in words]
        for piece, w in zip(enc.ids, enc.word_ids):
            by_word[w].append(piece)
        ids, word_ids = [], []
        for w, pieces in enumerate(by_word):
            pieces = pieces or [tokenizer.unk_token_id]
            ids += pieces
            word_ids += [w] * len(pieces)
        out.append((ids, word_ids))
    return out


def make_tag_features(
    sentences: Sequence[Any],
    tokenizer,
    label2id: Mapping[str, int] | None = None,
    max_seq_length: int = 128,
    doc_stride: int = 64,
) -> list[TagFeature]:
    """Sentences -> model inputs, one TagFeature per window (see the worked examples above).

    sentences: Sentence / (words, tags) pairs, or plain lists of words (for prediction).
    label2id: with it, every window gets labels: a word's label id on its first piece (in every
      window holding that piece), -100 on the other pieces and on [CLS] / [SEP]; every sentence
      then needs tags, all of them in label2id. Without it, no labels (prediction).
    max_seq_length: positions per window, [CLS] and [SEP] included (pieces per window: 2 fewer).
    doc_stride: pieces between the starts of two windows (squad's doc_stride).
    """
    room = max_seq_length - 2  # pieces per window: minus [CLS] and [SEP]
    if room <= 0 or doc_stride <= 0:
        raise ValueError(
            f"make_tag_features: max_seq_length={max_seq_length} leaves no room for words, or doc_stride={doc_stride} "
            "is not positive"
        )
    split = [words_and_tags(s, i) for i, s in enumerate(sentences)]
    for i, (words, tags) in enumerate(split):
        if not words:
            raise ValueError(f"make_tag_features: sentence {i} has no words")
        for j, word in enumerate(words):
            if not isinstance(word, str) or not word.strip():
                raise ValueError(f"make_tag_features: sentence {i}, word {j} is {word!r}, not a non-empty string")
        if label2id is not None:
            if tags is None:
                raise ValueError(f"make_tag_features: label2id was given but sentence {i} has no tags")
            unknown = sorted(set(tags) - set(label2id))
            if unknown:
                raise ValueError(
                    f"make_tag_features: sentence {i} has tags {unknown[:5]} that are not among the labels "
                    f"{list(label2id)}"
                )
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    features: list[TagFeature] = []
    pieces = word_pieces(tokenizer, [words for words, _ in split])
    for i, ((words, tags), (ids, word_ids)) in enumerate(zip(split, pieces)):
        # first[t]: the word whose first piece is piece t, or -1 ("play ##ing" -> [w, -1])
        first = [w if t == 0 or word_ids[t - 1] != w else -1 for t, w in enumerate(word_ids)]
        windows = doc_windows(len(ids), room, doc_stride)  # [(start, length), ...] over the pieces
        for k, (start, length) in enumerate(windows):
            span = range(start, start + length)  # the sentence's pieces in this window
            word_index = [-1] + [first[t] for t in span] + [-1]  # (len,) [CLS] ... [SEP]
            feature = TagFeature(
                sentence_index=i,
                window_index=k,
                window_start=start,
                num_words=len(words),
                input_ids=[cls_id] + ids[start : start + length] + [sep_id],
                word_index=word_index,
                token_is_max_context=[False] + [best_window(windows, t) == k for t in span] + [False],
            )
            if label2id is not None:
                feature.labels = [label2id[tags[w]] if w >= 0 else IGNORE_INDEX for w in word_index]
            features.append(feature)
    return features


def collate_tag_features(
    features: Sequence[TagFeature], pad_id: int, pad_to_multiple_of: int | None = 8, max_length: int | None = None
) -> Batch:
    """Pad windows to the longest (rounded up to a multiple of 8, never beyond max_length) -> Batch
    with input_ids, token_type_ids (all 0: one segment), attention_mask and, when every feature has
    them, labels (-100 on padding)."""
    if not features:
        raise ValueError("collate_tag_features needs at least one feature")
    ids, mask = pad_rows([f.input_ids for f in features], pad_id, pad_to_multiple_of, max_length)  # (B, T)
    batch = Batch(input_ids=ids, token_type_ids=torch.zeros_like(ids), attention_mask=mask)
    if all(f.labels is not None for f in features):
        labels = torch.full_like(ids, IGNORE_INDEX)  # (B, T)
        for row, f in enumerate(features):
            labels[row, : len(f.labels)] = torch.tensor(f.labels, dtype=torch.long)
        batch["labels"] = labels
    return batch


def encode_tag_batch(
    sentences: Sequence[Any],
    tokenizer,
    label2id: Mapping[str, int] | None = None,
    max_seq_length: int = 128,
    doc_stride: int = 64,
) -> tuple[Batch, list[TagFeature]]:
    """A few sentences -> (one padded Batch of all their windows, the features): row r of the batch
    is features[r], whose word_index maps each word to its first piece's position in that row."""
    features = make_tag_features(sentences, tokenizer, label2id, max_seq_length, doc_stride)
    return collate_tag_features(features, tokenizer.pad_token_id, max_length=max_seq_length), features
