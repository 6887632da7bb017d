"""Token tagging: IOB2 / CoNLL-U readers, first-sub-token labels, windows, entity F1.

What lives here (the model head is lab.model's BertForTokenClassification; nothing here needs it)
-----------------------------------------------------------------------------------------------
    read_tagged(path, format="auto")      IOB2 (UNER's `index<TAB>token<TAB>tag...` or CoNLL's
                                          `token ... tag`) or CoNLL-U (UPOS) -> TaggedData
    detect_format(path)                   "uner", "conll" or "conllu", from the file's content
    label_list(tag_sequences, scheme)     the label set in a fixed order (O, B-LOC, I-LOC, ...)
    make_tag_features(sentences, tok, label2id)  -> list[TagFeature]: [CLS] window [SEP], a word's
                                          label on its first sub-token, -100 elsewhere
    collate_tag_features(features, pad_id) -> Batch (input_ids, token_type_ids, attention_mask, labels)
    encode_tag_batch(sentences, tok, label2id)   the two above at once: (Batch, features)
    decode_tags(features, logits, id2label, decoding="argmax")   per-window logits -> one WordTag
                                          per word: each word's most probable tag ("argmax", the
                                          paper's), or the best tag sequence IOB2 allows ("viterbi")
    predict_tags(model, tok, sentences)   any token classifier (`model(**batch).logits`) -> WordTags
    iob2_viterbi(log_probs, labels)       the most probable tag sequence with no I-X after O / B-Y
    get_entities(tags)                    one sentence's entities, counted as conlleval / seqeval do
    entity_scores(gold, pred)             entity precision / recall / F1, per type and micro
    token_accuracy(gold, pred)            the share of words tagged right (POS)
    bootstrap_interval(gold, pred, "f1")  a 95% interval, resampling sentences (seeded)
    piece_rows(feature, tok, words, ...)  one window position by position: piece, word, label or
                                          -100, the model's argmax, where each word is read
    vocabulary_coverage(sentences, tok)   per entity type / tag: words kept whole, pieces per word
    sentences_with_split_entities(sentences, tok)  sentences with a name cut into pieces
    tag_accuracies(gold, pred)            accuracy per tag and its commonest confusion (POS)
    class_accuracies(accuracies)          pooled over UD's closed / open word classes
    entity_errors(gold, pred)             per type: correct, wrong type, wrong span, missed, spurious
    annotator_agreement(data_path)        the annotators' pairwise F1 per type (UNER's .stats)

How to use it
-------------
    from lab.data import tagging
    train = tagging.read_tagged("../shared/data/uner-ewt/en_ewt-ud-dev.iob2")   # 2,001 sentences
    label2id = {label: i for i, label in enumerate(train.labels)}               # O, B-LOC, I-LOC, ...
    features = tagging.make_tag_features(train.sentences, tokenizer, label2id)  # one per window
    batch = tagging.collate_tag_features(features[:16], tokenizer.pad_token_id)
    loss = model(**batch).loss                                   # BertForTokenClassification
    ...
    test = tagging.read_tagged("../shared/data/uner-ewt/en_ewt-ud-test.iob2")
    words = [s.words for s in test.sentences]
    predicted = tagging.predict_tags(model, tokenizer, words)    # per word: tag, probability, runner-up
    pred_tags = [[w.tag for w in sentence] for sentence in predicted]
    gold_tags = [s.tags for s in test.sentences]
    print(tagging.entity_scores(gold_tags, pred_tags))           # a table per type, as seqeval's
    tagging.bootstrap_interval(gold_tags, pred_tags, "f1")       # f1 with its 95% interval

The only UNER / UD data on these machines are the dev and test splits: the lab trains on dev and
evaluates on test; say so next to any number.

Worked example: the first-sub-token rule
----------------------------------------
The paper (Section 5.3, CoNLL-2003 NER): "We use the representation of the first sub-token as
the input to the token-level classifier over the NER label set." The data comes split into
words; WordPiece splits some words further. A word's label goes on its first piece only; the
other pieces, [CLS], [SEP] and padding get -100 (ignored by the loss), and a prediction is read
from the first piece. With the bundled classroom vocabulary:

    words       tampa/B-LOC  bay/I-LOC  morcillas/O  ./O              (word/tag)
    position    0      1      2     3     4      5    6      7     8     9    10
    pieces      [CLS]  ta     ##mp  ##a   bay    mor  ##cil  ##l   ##as  .    [SEP]
    labels      -100   B-LOC  -100  -100  I-LOC  O    -100   -100  -100  O    -100
    word_index  -1     0      -1    -1    1      2    -1     -1    -1    3    -1

`TagFeature.word_index` is the word -> first-sub-token map: the word whose first piece sits at
each position (-1 elsewhere). A word the tokenizer turns into no piece at all (a zero-width
space, a control character) is given one [UNK] piece, so that it is still labelled and predicted.

Worked example: a sentence longer than the window
-------------------------------------------------
A sentence of more pieces than max_seq_length - 2 is read in overlapping windows exactly as
lab/data/squad.py reads a long context (its `doc_windows`; see the table in squad's docstring).
Six words w0..w5 of 10 pieces, max_seq_length = 8 (6 pieces a window), doc_stride = 3:

    piece      p0  p1  p2  p3  p4  p5  p6  p7  p8  p9
    word       w0  w1  ..  w2  w3  ..  ..  w4  w5  ..     (".." continues the word before it)
    window 0   p0* p1* p2  p3* p4* p5                     [CLS] p0..p5 [SEP]   (start 0, 6 pieces)
    window 1               p3  p4  p5  p6  p7* p8         [CLS] p3..p8 [SEP]   (start 3, 6 pieces)
    window 2                           p6  p7  p8* p9     [CLS] p6..p9 [SEP]   (start 6, 4 pieces)

In training, a word is labelled in every window that holds its first piece (each window is an
example, as SQuAD's windows are). In prediction, a word is read from the window where its first
piece has the most context (*), squad's `max_context_score` = min(pieces to its left, pieces
to its right) + 0.01 * window length, the first window on a tie: w0..w3 from window 0 (p4:
1.06 in both 0 and 1, a tie), w4 from window 1 (p7: 1.06 against 1.04), w5 from window 2. The
windows cover every piece, so every word's first piece lies in at least one window and nothing
is dropped, not even a word of more pieces than a window holds: its first piece is labelled and
read like any other, its remaining pieces carry -100 wherever they fall.

Worked example: entities, counted as conlleval / seqeval (default mode) count them
---------------------------------------------------------------------------------
    word      0      1      2  3      4      5      6
    tag       B-PER  I-PER  O  I-LOC  B-LOC  I-ORG  I-ORG
    entities  PER 0-1          LOC 3  LOC 4  ORG 5-6

An I- tag without a B- (after O, or after another type) starts an entity; a change of type ends
one; B- always starts a new one. A predicted entity is correct when its type, first and last
word all equal a gold entity's. Precision = correct / predicted, recall = correct / gold.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from lab.data.batch import IGNORE_INDEX, Batch, pad_rows
from lab.data.squad import _best_window, doc_windows
from lab.device import autocast

FORMATS = ("auto", "uner", "conll", "conllu")
SCHEMES = ("iob2", "tags")  # entity tags (O, B-TYPE, I-TYPE) or one plain tag per word (UPOS)
CONLLU_COLUMNS = 10  # ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC
CONLLU_UPOS = 3  # the column read from a CoNLL-U file (0-based)
DOCSTART = "-DOCSTART-"  # CoNLL-2003's document separator line
_CONLLU_ID = re.compile(r"\d+(?:-\d+|\.\d+)?")  # 7, a multiword token 7-8, an empty node 7.1


# ----------------------------------------------------------------------------------------------
# 1. Reading
# ----------------------------------------------------------------------------------------------


class Sentence(NamedTuple):
    """One sentence: its words and one tag per word (unpacks as `words, tags = sentence`)."""

    words: list[str]
    tags: list[str]


@dataclass
class TaggedData:
    """What `read_tagged` read from one file."""

    path: str
    format: str  # "uner", "conll" or "conllu"
    scheme: str  # "iob2" (entity tags: score with entity_scores) or "tags" (UPOS: token_accuracy)
    sentences: list[Sentence]
    labels: list[str]  # the label set, in label_list's order
    sentence_ids: list[str | None] = field(default_factory=list)  # "# sent_id = ..." where given
    lines: list[int] = field(default_factory=list)  # the line each sentence starts on (1-based)

    def __len__(self) -> int:
        return len(self.sentences)

    def __getitem__(self, i: int) -> Sentence:
        return self.sentences[i]

    def __iter__(self):
        return iter(self.sentences)

    @property
    def num_words(self) -> int:
        return sum(len(s.words) for s in self.sentences)

    def entity_counts(self) -> dict[str, int]:
        """{type: gold entities} (conlleval's counting), sorted by type; {} for scheme "tags"."""
        if self.scheme != "iob2":
            return {}
        counts = Counter(kind for s in self.sentences for kind, _, _ in get_entities(s.tags))
        return dict(sorted(counts.items()))

    def summary(self) -> str:
        """One line, e.g. dev.iob2: 2,001 sentences, 25,149 words, 966 entities (LOC 399, ORG 224, PER 343)."""
        text = f"{Path(self.path).name}: {len(self):,} sentences, {self.num_words:,} words"
        if self.scheme == "iob2":
            counts = self.entity_counts()
            parts = ", ".join(f"{k} {v:,}" for k, v in counts.items())
            return text + f", {sum(counts.values()):,} entities ({parts})"
        return text + f", {len(self.labels)} tags"


def is_iob2_tag(tag: str) -> bool:
    """O, or B- / I- followed by a type: is_iob2_tag("B-PER") -> True, ("E-PER", "PER", "B-") -> False."""
    return tag == "O" or (len(tag) > 2 and tag[:2] in ("B-", "I-"))


def label_list(tag_sequences: Iterable[Sequence[str]], scheme: str = "iob2") -> list[str]:
    """The label set of some tag sequences, in a fixed order.

    iob2: O first, then B- and I- of every type seen, types sorted (both, even when the data
    only has B-X: a tagger may need either): [["B-PER", "O"], ["I-LOC"]] -> O B-LOC I-LOC B-PER I-PER.
    tags: the tags seen, sorted.
    """
    seen = {t for tags in tag_sequences for t in tags}
    if scheme == "tags":
        return sorted(seen)
    if scheme != "iob2":
        raise ValueError(f"unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    bad = sorted(t for t in seen if not is_iob2_tag(t))
    if bad:
        raise ValueError(f"label_list: {bad[:5]} are not IOB2 tags (O, B-TYPE, I-TYPE)")
    types = sorted({t[2:] for t in seen if t != "O"})
    return ["O"] + [f"{prefix}-{kind}" for kind in types for prefix in "BI"]


def _read_text(path: Path) -> str:
    """The file as text (UTF-8, a byte-order mark allowed); invalid UTF-8 names its line."""
    if not path.is_file():
        raise FileNotFoundError(f"no tagged data file at {path}")
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise ValueError(
            f"{path}, line {line}: not valid UTF-8 ({err.reason} at byte {err.start}); save the file as UTF-8"
        ) from None


def _word_lines(text: str):
    """(line number, line) of each line that is not blank, a comment or -DOCSTART-."""
    for n, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and stripped.split()[0] != DOCSTART:
            yield n, line


def _detect(text: str, path: Path) -> str:
    if path.suffix.lower() == ".conllu":
        return "conllu"
    for _, line in _word_lines(text):
        fields = line.rstrip("\r").split("\t")
        if len(fields) == CONLLU_COLUMNS and _CONLLU_ID.fullmatch(fields[0]):
            return "conllu"
        if len(fields) >= 3 and fields[0].strip().isdigit() and is_iob2_tag(fields[2].strip()):
            return "uner"
        return "conll"
    raise ValueError(f"{path}: no words found (is the file empty, or only comments?)")


def detect_format(path: str | Path) -> str:
    """The layout of a tagged file, from its first word line (a .conllu name is CoNLL-U outright):

    1<TAB>From<TAB>from<TAB>ADP<TAB>... (10 tab-separated columns)  -> "conllu"
    7<TAB>tampa<TAB>B-LOC<TAB>...   (index, token, IOB2 tag, ...)    -> "uner"
    EU NNP B-NP B-ORG               (token ... tag, any whitespace)  -> "conll"
    """
    path = Path(path)
    return _detect(_read_text(path), path)


def _bad_tag(tag: str) -> str:
    """Why a tag is not IOB2, with the likely fix."""
    if tag[:2] in ("E-", "S-", "L-", "U-"):
        hint = "a BIOES/BILOU tag: convert the file to IOB2"
    elif tag in ("B", "I", "B-", "I-"):
        hint = "B-/I- need an entity type after them"
    else:
        hint = "a plain tag: pass scheme='tags' to read_tagged for one tag per word (e.g. POS)"
    return f"tag {tag!r} is not IOB2 (O, B-TYPE or I-TYPE): {hint}"


def read_tagged(path: str | Path, format: str = "auto", scheme: str | None = None) -> TaggedData:
    """Read a tagged file into sentences of (words, tags) and its label set.

    format: "auto" (see detect_format), or forced:
      "uner"    UNER's IOB2 layout: `index<TAB>token<TAB>tag<TAB>...`, indexes 1, 2, ... in each
                sentence, `#` comment lines (`# sent_id = ...` is kept), a blank line between sentences;
      "conll"   CoNLL-2003's layout: `token ... tag`, whitespace-separated, the tag in the last
                column, the same number of columns on every word line, `-DOCSTART-` lines skipped;
                a `#` line before a sentence's first word is a comment unless it reads as a word
                (the column count of the file's earlier word lines and a valid tag last; before
                any word line, an IOB2 tag last): "# O" is the word "#" tagged O;
      "conllu"  CoNLL-U: 10 tab-separated columns, the UPOS column (4th) read; multiword `N-M` and
                empty-node `N.M` lines skipped, `#` comments.
    scheme: "iob2" (the default for uner / conll: every tag must be O, B-TYPE or I-TYPE) or
      "tags" (the default for conllu: any non-empty tag).

    Malformed input raises ValueError naming the file, the line and what is wrong: invalid
    UTF-8, a wrong column count, an empty token or tag, a tag that is not IOB2, word indexes out
    of order (a missing blank line?), a sentence with no words (only comments, or only
    multiword lines), a file with no sentences. Ill-formed IOB2 *sequences* (an I- after O) are
    read as they are: entity_scores counts them as conlleval does.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    path = Path(path)
    text = _read_text(path)
    fmt = _detect(text, path) if format == "auto" else format
    scheme = scheme or ("tags" if fmt == "conllu" else "iob2")
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    try:
        return _parse_tagged(text, path, fmt, scheme)
    except ValueError as err:
        if format != "auto":
            raise
        # say which layout the file was read as: a misdetected file is then plain to see
        raise ValueError(f"{err} [read as {fmt!r}, detected from the first word line; force with format=]") from None


def _parse_tagged(text: str, path: Path, fmt: str, scheme: str) -> TaggedData:
    """read_tagged's parser, for one layout (see read_tagged)."""
    data = TaggedData(path=str(path), format=fmt, scheme=scheme, sentences=[], labels=[])
    words: list[str] = []
    tags: list[str] = []
    block_start = 0  # the line the current block (sentence and its comments) started on; 0: none
    sent_id: str | None = None
    columns: tuple[int, int] | None = None  # (count, line) of the file's first word line (uner, conll)

    def where(n: int) -> str:
        return f"{path}, line {n}"

    def end_block(n: int) -> None:
        # A blank line (or the end of the file) closes the block that started at block_start.
        nonlocal words, tags, block_start, sent_id
        if block_start and not words:
            raise ValueError(
                f"{where(block_start)}: a sentence with no words (the block ending at line {n} "
                "holds only comments or skipped lines)"
            )
        if words:
            data.sentences.append(Sentence(words, tags))
            data.sentence_ids.append(sent_id)
            data.lines.append(block_start)
        words, tags, block_start, sent_id = [], [], 0, None

    def check_columns(count: int, n: int) -> None:
        nonlocal columns
        if columns is None:
            columns = (count, n)
        elif count != columns[0]:
            raise ValueError(
                f"{where(n)}: {count} columns, but the file's word lines have {columns[0]} (as line {columns[1]})"
            )

    def is_comment(fields: list[str]) -> bool:
        # "# sent_id = 3" is a comment; "# O" in an IOB2 file is the word "#" tagged O
        fits = len(fields) == columns[0] if columns else len(fields) >= 2 and scheme == "iob2"
        return not (fits and (scheme == "tags" or is_iob2_tag(fields[-1])))

    def check_tag(tag: str, n: int) -> None:
        if not tag or tag == "_":
            raise ValueError(f"{where(n)}: the word has no tag")
        if scheme == "iob2" and not is_iob2_tag(tag):
            raise ValueError(f"{where(n)}: {_bad_tag(tag)}")

    def check_index(index: str, n: int) -> None:
        # uner / conllu number the words of a sentence 1, 2, 3, ...
        if not index.isdigit():
            raise ValueError(f"{where(n)}: the first column should be the word's number, not {index!r}")
        if int(index) != len(words) + 1:
            raise ValueError(
                f"{where(n)}: word number {index} where {len(words) + 1} was expected "
                "(a missing blank line between sentences?)"
            )

    lines = text.split("\n")  # not splitlines(): a token may hold U+2028 or U+0085, which it splits on
    for n, line in enumerate(lines, start=1):
        line = line.rstrip("\r")
        if not line.strip():
            end_block(n)
            continue
        block_start = block_start or n
        stripped = line.strip()
        if fmt == "conll":
            fields = line.split()
            if fields[0] == DOCSTART:
                if words:
                    raise ValueError(f"{where(n)}: {DOCSTART} inside a sentence (a missing blank line?)")
                block_start = 0  # a document marker is not a sentence
                continue
            if stripped.startswith("#") and not words and is_comment(fields):
                sent_id = _sent_id(stripped) or sent_id
                continue
            if len(fields) < 2:
                raise ValueError(f"{where(n)}: 1 column ({stripped!r}); expected `token ... tag`")
            check_columns(len(fields), n)
            check_tag(fields[-1], n)
            words.append(fields[0])
            tags.append(fields[-1])
        elif stripped.startswith("#"):  # uner, conllu: a word line starts with its number
            sent_id = _sent_id(stripped) or sent_id
        elif fmt == "uner":
            fields = line.split("\t")
            if len(fields) < 3:
                raise ValueError(
                    f"{where(n)}: {len(fields)} tab-separated column(s); UNER's layout is index<TAB>token<TAB>tag..."
                )
            check_columns(len(fields), n)
            check_index(fields[0].strip(), n)
            if not fields[1].strip():
                raise ValueError(f"{where(n)}: an empty token")
            check_tag(fields[2].strip(), n)
            words.append(fields[1])
            tags.append(fields[2].strip())
        else:  # conllu
            fields = line.split("\t")
            if len(fields) != CONLLU_COLUMNS:
                raise ValueError(f"{where(n)}: {len(fields)} tab-separated column(s); CoNLL-U has {CONLLU_COLUMNS}")
            index = fields[0].strip()
            if "-" in index or "." in index:  # multiword token 3-4 / empty node 3.1: not words
                if not _CONLLU_ID.fullmatch(index):
                    raise ValueError(f"{where(n)}: {index!r} is not a CoNLL-U word id (N, N-M or N.M)")
                continue
            check_index(index, n)
            if not fields[1].strip():
                raise ValueError(f"{where(n)}: an empty token")
            check_tag(fields[CONLLU_UPOS].strip(), n)
            words.append(fields[1])
            tags.append(fields[CONLLU_UPOS].strip())
    end_block(len(lines) + 1)
    if not data.sentences:
        raise ValueError(f"{path}: no sentences found (format {fmt})")
    data.labels = label_list((s.tags for s in data.sentences), scheme)
    return data


def _sent_id(comment: str) -> str | None:
    """The id of a `# sent_id = abc-0001` comment ("abc-0001"); None for other comments."""
    key, _, value = comment.lstrip("#").partition("=")
    return value.strip() if key.strip() == "sent_id" and value.strip() else None


# ----------------------------------------------------------------------------------------------
# 2. Labels on first sub-tokens, windows, batches
# ----------------------------------------------------------------------------------------------


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


def _split_sentence(sentence: Any, i: int) -> tuple[list[str], list[str] | None]:
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


def _word_pieces(tokenizer, sentences: Sequence[list[str]]) -> list[tuple[list[int], list[int]]]:
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
    split = [_split_sentence(s, i) for i, s in enumerate(sentences)]
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
    pieces = _word_pieces(tokenizer, [words for words, _ in split])
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
                token_is_max_context=[False] + [_best_window(windows, t) == k for t in span] + [False],
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


# ----------------------------------------------------------------------------------------------
# 3. Predictions: per-window logits -> one tag per word
# ----------------------------------------------------------------------------------------------


class WordTag(NamedTuple):
    """The prediction for one word, read from its first piece in its max-context window."""

    tag: str
    probability: float  # softmax over the label set at the word's first piece
    runner_up: str  # the second most probable tag ("" with a single label)
    runner_up_probability: float


def _labels_by_id(id2label: Mapping[int, str] | Sequence[str]) -> list[str]:
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
    names = _labels_by_id(id2label)
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


@torch.no_grad()
def window_logits(
    model,
    features: Sequence[TagFeature],
    pad_id: int,
    batch_size: int = 32,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> list[torch.Tensor]:
    """Logits [len(window), K] of every window, in the features' order, from any module whose
    `model(**batch).logits` is (B, T, K): eval mode, no gradients, windows of similar length batched
    together (less padding), autocast to `dtype` when given; the train/eval mode is restored."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    order = sorted(range(len(features)), key=lambda k: len(features[k]))
    out: list[torch.Tensor | None] = [None] * len(features)
    was_training = model.training
    model.eval()
    try:
        with autocast(device, dtype):
            for i in range(0, len(order), batch_size):
                rows = order[i : i + batch_size]
                batch = collate_tag_features([features[k] for k in rows], pad_id)
                batch.pop("labels", None)
                logits = model(**batch.to(device)).logits.float().cpu()  # (B, T, K)
                for r, k in enumerate(rows):
                    out[k] = logits[r, : len(features[k])]
    finally:
        model.train(was_training)
    return out  # type: ignore[return-value]


def predict_tags(
    model,
    tokenizer,
    sentences: Sequence[Sequence[str]],
    max_seq_length: int = 128,
    doc_stride: int = 64,
    batch_size: int = 32,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
    decoding: str = "argmax",
) -> list[list[WordTag]]:
    """Tag every word of every sentence (lists of words) with a token classifier: its labels come
    from model.config.id2label; windows as make_tag_features; one WordTag per word, decoded as
    decode_tags (argmax, or IOB2 Viterbi)."""
    limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if limit is not None and max_seq_length > limit:
        raise ValueError(f"predict_tags: max_seq_length={max_seq_length} exceeds the model's {limit} positions")
    features = make_tag_features([list(s) for s in sentences], tokenizer, None, max_seq_length, doc_stride)
    rows = window_logits(model, features, tokenizer.pad_token_id, batch_size, device, dtype)
    return decode_tags(features, rows, model.config.id2label, decoding)


# ----------------------------------------------------------------------------------------------
# 4. Metrics: entities as conlleval / seqeval count them, token accuracy, bootstrap intervals
# ----------------------------------------------------------------------------------------------


def _split_tag(tag: str) -> tuple[str, str]:
    """ "B-PER" -> ("B", "PER"); "O" -> ("O", ""). seqeval's default mode also reads E- and S-."""
    if tag == "O":
        return "O", ""
    if len(tag) > 2 and tag[1] == "-" and tag[0] in "BIES":
        return tag[0], tag[2:]
    raise ValueError(f"{tag!r} is not an entity tag (O, or B-/I-/E-/S- followed by a type)")


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


def _check_pairs(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], what: str) -> None:
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
    _check_pairs(gold, pred, "entity_scores")
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
    _check_pairs(gold, pred, "token_accuracy")
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
    Example: 2,077 test sentences, F1 0.692 -> Interval(0.692, low=0.66, high=0.72) or so.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    if not 0 < confidence < 1 or n_resamples < 1:
        raise ValueError(f"confidence must be in (0, 1) and n_resamples >= 1, got {confidence}, {n_resamples}")
    _check_pairs(gold, pred, "bootstrap_interval")
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


# ----------------------------------------------------------------------------------------------
# 5. Looking closer: the rule piece by piece, the vocabulary's cuts, errors by kind, the ceiling
# ----------------------------------------------------------------------------------------------


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
    names = _labels_by_id(id2label) if id2label is not None else None
    _, word_ids = _word_pieces(tokenizer, [list(words)])[0]  # the word of every piece of the sentence
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
    split = [_split_sentence(s, i) for i, s in enumerate(sentences)]
    if any(tags is None for _, tags in split):
        raise ValueError("vocabulary_coverage: every sentence needs its tags")
    counts: dict[str, list[int]] = {}
    for (_, tags), (_, word_ids) in zip(split, _word_pieces(tokenizer, [w for w, _ in split])):
        per_word = Counter(word_ids)  # pieces of each word
        for w, tag in enumerate(tags):
            c = counts.setdefault(tag_group(tag), [0, 0, 0])
            c[0], c[1], c[2] = c[0] + 1, c[1] + (per_word[w] == 1), c[2] + per_word[w]
    return {group: Coverage(*c) for group, c in sorted(counts.items())}


def sentences_with_split_entities(sentences: Sequence[Any], tokenizer, max_words: int | None = None) -> list[int]:
    """Indexes of the sentences (IOB2 tags) holding an entity word that the tokenizer cuts into
    pieces, optionally only those of at most max_words words: examples of the first-sub-token rule
    at work on a name."""
    split = [_split_sentence(s, i) for i, s in enumerate(sentences)]
    if any(tags is None for _, tags in split):
        raise ValueError("sentences_with_split_entities: every sentence needs its tags")
    out = []
    for i, ((words, tags), (_, word_ids)) in enumerate(zip(split, _word_pieces(tokenizer, [w for w, _ in split]))):
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
    _check_pairs(gold, pred, "tag_accuracies")
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
    _check_pairs(gold, pred, "entity_errors")
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
