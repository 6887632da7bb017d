"""Tagged text files -> sentences of (words, tags): IOB2 (UNER, CoNLL-2003) and CoNLL-U (UPOS).

    data = read_tagged("../shared/data/uner-ewt/en_ewt-ud-dev.iob2")   # -> TaggedData
    words, tags = data[0]                                               # one Sentence
    data.labels                                                         # O, B-LOC, I-LOC, ...

The layout is detected from the first word line (or forced with format=). Malformed input raises a
ValueError naming the file, the line and what is wrong, so that a student's own file can be fixed.
Token tagging is one module per step: this one reads, lab.data.tagging labels and windows,
lab.data.tag_decoding decodes, lab.data.tag_metrics scores and lab.data.tag_analysis looks closer.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from lab.data.tag_metrics import get_entities

FORMATS = ("auto", "uner", "conll", "conllu")
SCHEMES = ("iob2", "tags")  # entity tags (O, B-TYPE, I-TYPE) or one plain tag per word (UPOS)
CONLLU_COLUMNS = 10  # ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC
CONLLU_UPOS = 3  # the column read from a CoNLL-U file (0-based)
DOCSTART = "-DOCSTART-"  # CoNLL-2003's document separator line
_CONLLU_ID = re.compile(r"\d+(?:-\d+|\.\d+)?")  # 7, a multiword token 7-8, an empty node 7.1


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
        return _Parser(path, fmt, scheme).parse(text)
    except ValueError as err:
        if format != "auto":
            raise
        # say which layout the file was read as: a misdetected file is then plain to see
        raise ValueError(f"{err} [read as {fmt!r}, detected from the first word line; force with format=]") from None


class _Parser:
    """read_tagged's parser for one layout (see read_tagged): line by line, a sentence per block."""

    def __init__(self, path: Path, fmt: str, scheme: str):
        self.path, self.fmt, self.scheme = path, fmt, scheme
        self.data = TaggedData(path=str(path), format=fmt, scheme=scheme, sentences=[], labels=[])
        self.words: list[str] = []
        self.tags: list[str] = []
        self.block_start = 0  # the line the current block (sentence and its comments) started on; 0: none
        self.sent_id: str | None = None
        self.columns: tuple[int, int] | None = None  # (count, line) of the file's first word line (uner, conll)

    def parse(self, text: str) -> TaggedData:
        word_line = {"conll": self.conll_line, "uner": self.uner_line}.get(self.fmt, self.conllu_line)
        lines = text.split("\n")  # not splitlines(): a token may hold U+2028 or U+0085, which it splits on
        for n, line in enumerate(lines, start=1):
            line = line.rstrip("\r")
            if not line.strip():
                self.end_block(n)
                continue
            self.block_start = self.block_start or n
            stripped = line.strip()
            if self.fmt != "conll" and stripped.startswith("#"):  # uner, conllu: a word line starts with its number
                self.sent_id = _sent_id(stripped) or self.sent_id
            else:
                word_line(n, line, stripped)
        self.end_block(len(lines) + 1)
        if not self.data.sentences:
            raise ValueError(f"{self.path}: no sentences found (format {self.fmt})")
        self.data.labels = label_list((s.tags for s in self.data.sentences), self.scheme)
        return self.data

    def where(self, n: int) -> str:
        return f"{self.path}, line {n}"

    def end_block(self, n: int) -> None:
        # A blank line (or the end of the file) closes the block that started at block_start.
        if self.block_start and not self.words:
            raise ValueError(
                f"{self.where(self.block_start)}: a sentence with no words (the block ending at line {n} "
                "holds only comments or skipped lines)"
            )
        if self.words:
            self.data.sentences.append(Sentence(self.words, self.tags))
            self.data.sentence_ids.append(self.sent_id)
            self.data.lines.append(self.block_start)
        self.words, self.tags, self.block_start, self.sent_id = [], [], 0, None

    def conll_line(self, n: int, line: str, stripped: str) -> None:
        fields = line.split()
        if fields[0] == DOCSTART:
            if self.words:
                raise ValueError(f"{self.where(n)}: {DOCSTART} inside a sentence (a missing blank line?)")
            self.block_start = 0  # a document marker is not a sentence
            return
        if stripped.startswith("#") and not self.words and self.is_comment(fields):
            self.sent_id = _sent_id(stripped) or self.sent_id
            return
        if len(fields) < 2:
            raise ValueError(f"{self.where(n)}: 1 column ({stripped!r}); expected `token ... tag`")
        self.check_columns(len(fields), n)
        self.add(fields[0], fields[-1], n)

    def uner_line(self, n: int, line: str, stripped: str) -> None:
        fields = line.split("\t")
        if len(fields) < 3:
            raise ValueError(
                f"{self.where(n)}: {len(fields)} tab-separated column(s); UNER's layout is index<TAB>token<TAB>tag..."
            )
        self.check_columns(len(fields), n)
        self.numbered_word(n, fields[0], fields[1], fields[2])

    def conllu_line(self, n: int, line: str, stripped: str) -> None:
        fields = line.split("\t")
        if len(fields) != CONLLU_COLUMNS:
            raise ValueError(f"{self.where(n)}: {len(fields)} tab-separated column(s); CoNLL-U has {CONLLU_COLUMNS}")
        index = fields[0].strip()
        if "-" in index or "." in index:  # multiword token 3-4 / empty node 3.1: not words
            if not _CONLLU_ID.fullmatch(index):
                raise ValueError(f"{self.where(n)}: {index!r} is not a CoNLL-U word id (N, N-M or N.M)")
            return
        self.numbered_word(n, index, fields[1], fields[CONLLU_UPOS])

    def numbered_word(self, n: int, index: str, word: str, tag: str) -> None:
        # uner / conllu number the words of a sentence 1, 2, 3, ...
        index = index.strip()
        if not index.isdigit():
            raise ValueError(f"{self.where(n)}: the first column should be the word's number, not {index!r}")
        if int(index) != len(self.words) + 1:
            raise ValueError(
                f"{self.where(n)}: word number {index} where {len(self.words) + 1} was expected "
                "(a missing blank line between sentences?)"
            )
        if not word.strip():
            raise ValueError(f"{self.where(n)}: an empty token")
        self.add(word, tag.strip(), n)

    def add(self, word: str, tag: str, n: int) -> None:
        if not tag or tag == "_":
            raise ValueError(f"{self.where(n)}: the word has no tag")
        if self.scheme == "iob2" and not is_iob2_tag(tag):
            raise ValueError(f"{self.where(n)}: {_bad_tag(tag)}")
        self.words.append(word)
        self.tags.append(tag)

    def check_columns(self, count: int, n: int) -> None:
        if self.columns is None:
            self.columns = (count, n)
        elif count != self.columns[0]:
            raise ValueError(
                f"{self.where(n)}: {count} columns, but the file's word lines have {self.columns[0]} "
                f"(as line {self.columns[1]})"
            )

    def is_comment(self, fields: list[str]) -> bool:
        # "# sent_id = 3" is a comment; "# O" in an IOB2 file is the word "#" tagged O
        columns = self.columns
        fits = len(fields) == columns[0] if columns else len(fields) >= 2 and self.scheme == "iob2"
        return not (fits and (self.scheme == "tags" or is_iob2_tag(fields[-1])))


def _sent_id(comment: str) -> str | None:
    """The id of a `# sent_id = abc-0001` comment ("abc-0001"); None for other comments."""
    key, _, value = comment.lstrip("#").partition("=")
    return value.strip() if key.strip() == "sent_id" and value.strip() else None
