"""Files -> documents of sentences: reading, format parsing, sentence splitting, held-out split.

    python -m lab.data.corpus ../shared/data/novels             # read a folder, print a summary
    python -m lab.data.corpus wikitext-2 --split test --show 5   # a catalog corpus (lab.data.datasets)
    docs, report = read_documents("../shared/data/novels", report=True)
    train, held_out = split_documents(docs, held_out=0.02, seed=0)

Step 1 of the data flow `text -> tokenizer -> ids -> instances`. BERT's pre-training data is a
list of *documents*, each a list of *sentences*: next-sentence prediction takes its positives from
consecutive sentences of one document and its negatives from another, and a held-out split is made
of whole documents. Four formats ("gutenberg", "plain", "wikitext", "sentences") are detected per
file; each decision on decoding, headings and WikiText's spacing is explained where it is made.
"""

from __future__ import annotations

import argparse
import codecs
import logging
import os
import random
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from lab.data import datasets  # the catalog and downloads, for main

__all__ = [
    "Document",
    "ReadReport",
    "FORMATS",
    "read_documents",
    "split_sentences",
    "split_documents",
]

logger = logging.getLogger(__name__)

FORMATS = ("auto", "gutenberg", "plain", "wikitext", "sentences")
TEXT_SUFFIXES = (".txt", ".raw")


# ---------------------------------------------------------------------------------------------
# Documents and the read report
# ---------------------------------------------------------------------------------------------


@dataclass
class Document:
    """One document. NSP negatives come from *other* documents; held-out splits are by document."""

    source: str  # "mobydick.txt#3": file + index in it
    sentences: list[str] = field(default_factory=list)  # in reading order, stripped, non-empty
    title: str = ""  # chapter heading / WikiText title, or ""

    def __len__(self) -> int:
        return len(self.sentences)


@dataclass
class ReadReport:
    """What `read_documents` did. Get it with `read_documents(..., report=True)`."""

    files_read: list[str] = field(default_factory=list)  # paths, in reading order
    files_skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    formats: dict[str, str] = field(default_factory=dict)  # path -> format used
    documents: int = 0  # documents kept
    sentences: int = 0  # sentences in the kept documents
    skipped_documents: int = 0  # non-empty documents with fewer than min_sentences
    skipped_sentences: int = 0  # the sentences those documents held
    decode_replacements: int = 0  # undecodable bytes replaced by U+FFFD, all files
    legacy_decoded: list[tuple[str, str]] = field(default_factory=list)  # (path, encoding used)

    def summary(self) -> str:
        """One line, e.g. for a log: 'read 10 files (0 skipped): 672 documents, ...'."""
        line = (
            f"read {len(self.files_read)} files ({len(self.files_skipped)} skipped): "
            f"{self.documents} documents, {self.sentences} sentences; "
            f"{self.skipped_documents} short documents skipped"
        )
        if self.decode_replacements:
            line += f"; {self.decode_replacements} undecodable bytes replaced"
        if self.legacy_decoded:
            line += f"; {len(self.legacy_decoded)} files decoded as cp1252/latin-1"
        return line

    def __str__(self) -> str:
        lines = [self.summary()]
        lines += [f"  skipped {path}: {reason}" for path, reason in self.files_skipped]
        lines += [f"  {path}: not UTF-8, decoded as {enc}" for path, enc in self.legacy_decoded]
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Sentence splitting
# ---------------------------------------------------------------------------------------------

# Titles and Latin abbreviations: a period after these never ends a sentence ("Mr. Darcy").
_NEVER_END = frozenset(
    "mr mrs ms messrs mme mlle dr st jr sr prof capt col gen lt sgt rev hon gov mt ft vs e.g i.e cf viz".split()
)
# Abbreviations that come before a number: "No. 5", "p. 12", "Vol. II", "Jan. 3".
# They end no sentence when a number follows ("He said no. Then..." still splits).
_BEFORE_NUMBER = frozenset(
    "no nos vol vols ch chap p pp fig art sec op ca approx jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_ROMAN = re.compile(r"[IVXLCDM]+[.,;:]?")
_INITIALS = re.compile(r"(?:[A-Z]\.)*[A-Z]")  # "J", "R", "J.R.R", "A.H" (not "I")

_OPENERS = "\"'“‘([«"  # may precede a sentence's first letter
_CLOSERS = "\"'”’)]»"  # may follow its final . ! ?
# A candidate boundary: a run of . ! ? (or an ellipsis character), then closing quotes or
# brackets, then whitespace or the end of the text. "3.5" and "e.g" are no candidates: no space.
_CANDIDATE = re.compile(rf"([.!?…]+)([{re.escape(_CLOSERS)}]*)(?=\s|$)")


def _starts_sentence(text: str, j: int) -> tuple[bool, str]:
    """Does text[j:] look like a new sentence? Returns (yes, its first word without openers)."""
    k = j
    while k < len(text) and text[k] in _OPENERS:
        k += 1
    space = text.find(" ", k)
    word = text[k:space] if space >= 0 else text[k:]
    if not word:
        return False, word
    c = word[0]
    # A capital letter or a digit starts a sentence; a lowercase letter continues one
    # ('"Stop!" she said.'), and so does anything else ("--", "&", ";").
    return (c.isdigit() or (c.isalpha() and not c.islower())), word


def split_sentences(paragraph: str) -> list[str]:
    """Split one paragraph into sentences with a few transparent rules.

    Whitespace is collapsed first (wrapped lines become one line). A sentence ends after
    `.`, `!`, `?` or an ellipsis, together with any closing quotes or brackets that follow
    (`"Stop!"`, `(See below.)`), when the next word starts with a capital letter or a digit,
    possibly after opening quotes or brackets. Hence:

    - a lowercase word continues the sentence: `"Stop!" she said.` is one sentence, and so
      is `Oh! how happy`, the usual 19th-century style;
    - an ellipsis (`...`, `…` or `. . .`) ends a sentence only when a capital follows:
      `Wait... what?` is one sentence, `He paused... Then he ran.` is two;
    - a period after a title or Latin abbreviation never ends one (Mr. Mrs. Ms. Dr. St. Jr.
      Sr. Prof. Capt. Col. Gen. Lt. Rev. Hon. vs. e.g. i.e. ...), nor after single capital
      initials (`J. R. Smith`, `J.R.R. Tolkien`, `M. Aronnax`; but `said I. Then` splits);
    - No. Vol. ch. p. pp. and month abbreviations end none when a number follows
      (`No. 5`, `Vol. II`); otherwise they are ordinary words (`He said no. Then...` splits);
    - `etc.` is an ordinary word: it ends a sentence when a capital follows;
    - decimals (`3.5`) never split (no space after the point); `;`, `:` and dashes never do.

    Known limits (rule-based splitters all have some): a sentence that really ends with an
    initial or a title (`... Plan B. Then`) is not split, nor is Austen's `you.--You`
    (no space after the period).

    >>> split_sentences('"Stop!" she said. Mr. J. R. Smith stopped... Then he ran.')
    ['"Stop!" she said.', 'Mr. J. R. Smith stopped...', 'Then he ran.']
    """
    text = " ".join(paragraph.split())  # collapse whitespace, undo wrapping
    sentences: list[str] = []
    start = 0
    for m in _CANDIDATE.finditer(text):
        j = m.end() + 1  # one space after the candidate
        if j >= len(text):
            break  # end of paragraph: the last sentence
        new_sentence, next_word = _starts_sentence(text, j)
        if not new_sentence:
            continue
        punct, closers = m.group(1), m.group(2)
        if punct == "." and not closers:
            # The word before the period, without opening quotes: "Mr", "e.g", "J", "p".
            before = text[text.rfind(" ", 0, m.start()) + 1 : m.start()].lstrip(_OPENERS)
            key = before.lower()
            if key in _NEVER_END:
                continue
            if _INITIALS.fullmatch(before) and before != "I":
                continue
            if key in _BEFORE_NUMBER and (next_word[0].isdigit() or (key != "no" and _ROMAN.fullmatch(next_word))):
                continue
        sentences.append(text[start : m.end()])
        start = j
    if start < len(text):
        sentences.append(text[start:])
    return [s.strip() for s in sentences if s.strip()]


# ---------------------------------------------------------------------------------------------
# Decoding bytes into text, robustly
# ---------------------------------------------------------------------------------------------


class _Skip(Exception):
    """A file that cannot be used (empty, binary); the message is the reason."""


@dataclass
class _Decoded:
    text: str
    replacements: int = 0  # U+FFFD inserted for undecodable bytes
    encoding: str = "utf-8"


_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")  # control chars that text never holds


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _decode(data: bytes, name: str) -> _Decoded:
    """bytes -> text. Raises _Skip with a reason for empty and binary files."""
    note = None  # a log message for a file that is kept
    if not data.strip():
        raise _Skip("empty file")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        decoded = _Decoded(data.decode("utf-16", errors="replace"), encoding="utf-16")
        decoded.replacements = decoded.text.count("\ufffd")
    elif b"\x00" in data:
        raise _Skip(f"binary file (NUL byte on line {_line_of(data, data.index(0))})")
    else:
        try:
            decoded = _Decoded(data.decode("utf-8-sig"))  # -sig: drop a BOM
        except UnicodeDecodeError as err:
            line = _line_of(data, err.start)
            text = data.decode("utf-8-sig", errors="replace")
            bad = text.count("\ufffd")
            good_multibyte = sum(1 for ch in text if ord(ch) > 127) - bad
            if good_multibyte == 0:
                # Not one valid multi-byte UTF-8 character: an 8-bit legacy file (old Gutenberg
                # texts are ISO-8859-1 / Windows-1252). More than 30% high bytes is no text.
                high = sum(1 for b in data if b > 127)
                if high > 0.3 * len(data):
                    raise _Skip(f"binary file ({high} of {len(data)} bytes are not text)") from None
                try:
                    decoded = _Decoded(data.decode("cp1252"), encoding="cp1252")
                except UnicodeDecodeError:
                    decoded = _Decoded(data.decode("latin-1"), encoding="latin-1")
                note = (
                    logging.INFO,
                    "%s: not UTF-8 (first bad byte on line %d); decoded as %s",
                    name,
                    line,
                    decoded.encoding,
                )
            else:
                # Mostly UTF-8 with some bad bytes: keep UTF-8, count the replacements.
                decoded = _Decoded(text, replacements=bad)
                note = (
                    logging.WARNING,
                    "%s: %d undecodable bytes replaced by U+FFFD (first on line %d)",
                    name,
                    bad,
                    line,
                )
    text = decoded.text
    junk = len(_CONTROL.findall(text)) + decoded.replacements
    if junk > 0.1 * len(text):
        raise _Skip(f"binary file ({junk} of {len(text)} characters are control or undecodable)")
    if note:
        logger.log(*note)
    # Windows (CRLF) and old Mac (CR) line endings -> "\n".
    decoded.text = text.replace("\r\n", "\n").replace("\r", "\n")
    return decoded


# ---------------------------------------------------------------------------------------------
# Formats
# ---------------------------------------------------------------------------------------------

# Project Gutenberg frame, matched loosely: "*** START OF THE PROJECT GUTENBERG EBOOK X ***",
# "*** START OF THIS PROJECT GUTENBERG EBOOK X ***", old "*END*THE SMALL PRINT!..." headers;
# the end is "*** END OF ..." or the line "End of (the) Project Gutenberg('s) ..." before it.
_GUT_START = re.compile(
    r"^[ \t*]*(?:START\s+OF\s+(?:THE\s+|THIS\s+)?PROJECT\s+GUTENBERG|\*END\*\s*THE\s+SMALL\s+PRINT)"
    r".*$",
    re.IGNORECASE | re.MULTILINE,
)
_GUT_END = re.compile(r"^[ \t*]*END\s+OF\s+(?:THE\s+|THIS\s+)?PROJECT\s+GUTENBERG.*$", re.IGNORECASE | re.MULTILINE)
_GUT_CREDIT = re.compile(r"^(?:produced by|e-?text prepared by|transcribed (?:from|by))\b", re.IGNORECASE)

_NUMBER_WORD = (
    r"(?i:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)"
    r"(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?"
    r"|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen"
    r"|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|hundred"
    r"|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth"
    r"|eleventh|twelfth|last)"
)
_NUMERAL = rf"(?:\d+|[IVXLCDM]+|{_NUMBER_WORD})"
_KEYWORD = r"(?i:chapter|book|volume|part|stave|canto|section|letter)"
# "CHAPTER I." "Chapter 12" "BOOK ONE" "CHAPTER XLII. The Whiteness of the Whale"
_KEYWORD_HEADING = re.compile(rf"{_KEYWORD}\s+{_NUMERAL}\.?(?:\s*[.:—–-]*\s+[A-Z\"'“‘(\[].{{0,150}})?")
# "Chapter 1" alone: may also be the first line of a paragraph whose text follows directly.
_KEYWORD_ONLY = re.compile(rf"{_KEYWORD}\s+{_NUMERAL}\.?")
_SECTION_WORD = re.compile(
    r"(?:preface|prologue|epilogue|introduction|conclusion|appendix|contents|foreword"
    r"|afterword|postscript|finis|the end)\.?",
    re.IGNORECASE,
)
_BARE_NUMERAL = re.compile(r"(?:[IVXLC]+|\d{1,3})\.?")
_ILLUSTRATION = re.compile(r"\[Illustration", re.IGNORECASE)
# Underscores marking italics in Gutenberg texts: "_them_" -> "them" (inner ones, as in
# snake_case, are kept).
_ITALIC_UNDERSCORE = re.compile(r"(?<!\w)_+|_+(?!\w)")


def _drop_illustrations(text: str) -> str:
    """Remove Gutenberg's "[Illustration: ...]" blocks, which may span paragraphs and nest
    brackets ("[Illustration: ... [_Copyright 1894_]]"); an unclosed one is left alone."""
    out, pos = [], 0
    for m in _ILLUSTRATION.finditer(text):
        if m.start() < pos:
            continue  # inside a block already removed
        depth, end = 0, None
        for k in range(m.start(), min(len(text), m.start() + 3000)):
            depth += {"[": 1, "]": -1}.get(text[k], 0)
            if depth == 0:
                end = k + 1
                break
        if end is not None:
            out.append(text[pos : m.start()])
            pos = end
    out.append(text[pos:])
    return "".join(out)


def _is_heading_line(line: str) -> bool:
    """A line that is a heading when it stands alone (a paragraph of its own)."""
    line = line.strip()
    if not line or len(line) > 200:
        return False
    if _KEYWORD_HEADING.fullmatch(line) or _SECTION_WORD.fullmatch(line) or _BARE_NUMERAL.fullmatch(line):
        return True
    # A short all-caps line: "THE EVE OF THE WAR", "MOBY DICK; OR THE WHALE", "FINIS".
    # Not: quoted shouts ('"THERE SHE BLOWS!"'), stage directions "(AHAB TO HIMSELF.)",
    # or all-caps sentences "HARPOONEERS AND SAILORS." (anything ending in punctuation).
    letters = [c for c in line if c.isalpha()]
    return (
        len(line) <= 60
        and len(letters) >= 2
        and not any(c.islower() for c in letters)
        and line[0] not in _OPENERS
        and not any(c in line for c in "()[]")
        and line[-1] not in ".,;:!?"
    )


def _paragraphs(text: str) -> list[tuple[int, list[str]]]:
    """Blank-line separated blocks as (first line number, lines)."""
    out, block, first = [], [], 0
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip():
            if not block:
                first = number
            block.append(line)
        elif block:
            out.append((first, block))
            block = []
    if block:
        out.append((first, block))
    return out


class _DocBuilder:
    """Collects sentences; a heading starts a new document (or extends an empty one's title)."""

    def __init__(self, name: str):
        self.name = name
        self.docs: list[Document] = []
        self.current = Document(source=f"{name}#0")

    def heading(self, title: str) -> None:
        if self.current.sentences:
            self.docs.append(self.current)
            self.current = Document(source=f"{self.name}#{len(self.docs)}", title=title)
        elif self.current.title and len(self.current.title) + len(title) < 150:
            self.current.title += f" / {title}"  # "VOLUME I" then "CHAPTER I": one document
        else:  # (a table of contents: keep the last one)
            self.current.title = title

    def add(self, sentences: list[str]) -> None:
        self.current.sentences.extend(sentences)

    def finish(self) -> list[Document]:
        if self.current.sentences:
            self.docs.append(self.current)
        return self.docs


def _strip_gutenberg(text: str, name: str) -> str:
    """Keep what lies between the Gutenberg START and END lines (both excluded)."""
    start = _GUT_START.search(text)
    begin = 0
    if start:
        begin = start.end()
        # A START line wrapped onto two lines: "*** START OF ... PRIDE AND\nPREJUDICE ***".
        if not start.group(0).rstrip().endswith("***"):
            nxt = re.match(r"\n([^\n]*)", text[begin:])
            if nxt and nxt.group(1).rstrip().endswith("***"):
                begin += nxt.end()
    else:
        logger.warning(
            "%s: no '*** START OF THE PROJECT GUTENBERG EBOOK' line; keeping the text from its beginning", name
        )
    end = _GUT_END.search(text, begin)
    if not end:
        logger.warning("%s: no '*** END OF THE PROJECT GUTENBERG EBOOK' line; keeping the text to its end", name)
    body = text[begin : end.start() if end else len(text)]
    # The producers' credit often opens the body: "Produced by Daniel Lazarus and Jonesey".
    paragraphs = re.split(r"\n[ \t]*\n", body.strip("\n"), maxsplit=1)
    if paragraphs and _GUT_CREDIT.match(paragraphs[0].strip()):
        body = paragraphs[1] if len(paragraphs) > 1 else ""
    return body


def _parse_plain(text: str, name: str) -> list[Document]:
    """Paragraphs separated by blank lines; headings start documents; wrapping undone."""
    builder = _DocBuilder(name)
    for _, lines in _paragraphs(_drop_illustrations(text)):
        # A block made only of heading lines ("BOOK ONE", "CHAPTER I.\nLOOMINGS") is a heading.
        if len(lines) <= 4 and all(_is_heading_line(line) for line in lines):
            builder.heading(" / ".join(line.strip() for line in lines))
            continue
        # A long chapter title wrapped at print width:
        # "CHAPTER 57. Of Whales in Paint; in Teeth; in Wood; in Sheet-Iron; in\nStone; ..."
        if (
            len(lines) <= 3
            and _KEYWORD_HEADING.fullmatch(lines[0].strip())
            and not _KEYWORD_ONLY.fullmatch(lines[0].strip())
            and sum(len(line) for line in lines) <= 200
        ):
            builder.heading(" ".join(line.strip() for line in lines))
            continue
        # "Chapter 1" alone on the first line, the chapter's text right below it.
        if _KEYWORD_ONLY.fullmatch(lines[0].strip()):
            builder.heading(lines[0].strip())
            lines = lines[1:]
        paragraph = " ".join(line.strip() for line in lines)
        paragraph = _ITALIC_UNDERSCORE.sub("", paragraph)
        builder.add(split_sentences(paragraph))
    return builder.finish()


_WIKI_TITLE = re.compile(r"\s?= (?!=)(.*?) =\s*")  # " = Robert Boulter = "
_WIKI_SUBHEADING = re.compile(r"\s?= = .* = =\s*")  # " = = Career = = ", " = = = ..."
_WIKI_AT = re.compile(r" @([-,.])@ ")  # "guest @-@ starring", "1 @,@ 000"
_SPACE_BEFORE = re.compile(r" ([,.;:!?%)\]}]|'s\b|'S\b|n't\b|'t\b|'re\b|'ve\b|'ll\b|'d\b|'m\b)")
_SPACE_AFTER = re.compile(r"([(\[{$]) ")
_WIKI_QUOTED = re.compile(r'" ([^"]*?) "')


def _detokenize_wikitext(line: str) -> str:
    """Undo WikiText's tokenisation: 'a guest @-@ starring role , as " Craig " .' ->
    'a guest-starring role, as "Craig".'"""
    line = _WIKI_AT.sub(r"\1", line.strip())
    line = _SPACE_BEFORE.sub(r"\1", line)
    line = _SPACE_AFTER.sub(r"\1", line)
    if line.count('"') % 2 == 0:  # pair quotes only when balanced
        line = _WIKI_QUOTED.sub(r'"\1"', line)
    return line


def _parse_wikitext(text: str, name: str) -> list[Document]:
    """' = Title = ' starts a document, ' = = Section = = ' is skipped, one paragraph a line."""
    builder = _DocBuilder(name)
    for line in text.split("\n"):
        if not line.strip() or _WIKI_SUBHEADING.fullmatch(line):
            continue
        title = _WIKI_TITLE.fullmatch(line)
        if title:
            # Every title starts a document, even after an empty one.
            if builder.current.sentences or builder.current.title:
                if builder.current.sentences:
                    builder.docs.append(builder.current)
                builder.current = Document(source=f"{name}#{len(builder.docs)}")
            builder.current.title = _detokenize_wikitext(title.group(1))
            continue
        builder.add(split_sentences(_detokenize_wikitext(line)))
    return builder.finish()


def _parse_sentences(text: str, name: str) -> list[Document]:
    """Google's BERT format: one sentence per line, a blank line between documents."""
    builder = _DocBuilder(name)
    for _, lines in _paragraphs(text):
        builder.heading("")
        builder.add([" ".join(line.split()) for line in lines])
    return builder.finish()


_TERMINAL = re.compile(rf"[.!?…][{re.escape(_CLOSERS)}]*$")


def detect_format(text: str) -> str:
    """Guess a file's format from its (decoded, LF-normalised) text.

    Gutenberg markers -> "gutenberg"; a ' = Title = ' line among the first 20 non-blank lines ->
    "wikitext"; "sentences" only when the evidence is strong: nearly every line ends with . ! ?,
    hardly any starts in lowercase (wrapped prose has many such lines), nearly every line holds
    one sentence, and blocks have several lines; otherwise "plain".
    """
    if _GUT_START.search(text) or _GUT_END.search(text):
        return "gutenberg"
    lines = [line for line in text.split("\n")[:20000] if line.strip()]
    if any(_WIKI_TITLE.fullmatch(line) for line in lines[:20]):
        return "wikitext"
    if len(lines) < 2:
        return "plain"
    blocks = _paragraphs("\n".join(text.split("\n")[:20000]))
    sample = lines[:2000]
    terminal = sum(1 for line in sample if _TERMINAL.search(line.rstrip())) / len(sample)
    lower_start = sum(1 for line in sample if line.lstrip()[:1].islower()) / len(sample)
    single = sum(1 for line in sample[:300] if len(split_sentences(line)) == 1) / len(sample[:300])
    lines_per_block = len(lines) / max(1, len(blocks))
    if terminal >= 0.8 and lower_start <= 0.1 and single >= 0.8 and lines_per_block >= 1.5:
        return "sentences"
    return "plain"


def _parse(text: str, fmt: str, name: str) -> list[Document]:
    if fmt == "gutenberg":
        return _parse_plain(_strip_gutenberg(text, name), name)
    if fmt == "plain":
        return _parse_plain(text, name)
    if fmt == "wikitext":
        return _parse_wikitext(text, name)
    return _parse_sentences(text, name)


# ---------------------------------------------------------------------------------------------
# read_documents
# ---------------------------------------------------------------------------------------------


def list_files(path: Path) -> list[Path]:
    """The *.txt / *.raw files under a folder (sorted, recursive, hidden ones left out)."""
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file()
        and p.suffix.lower() in TEXT_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )


def read_documents(
    path: str | os.PathLike,
    format: str = "auto",
    min_sentences: int = 1,
    report: bool = False,
    progress: bool = False,
) -> list[Document] | tuple[list[Document], ReadReport]:
    """Read a file, or every *.txt / *.raw file under a folder (sorted, recursive), into documents.

    format: "auto" (detected per file, see `detect_format`) or one of "gutenberg", "plain",
        "wikitext", "sentences", forced for every file.
    min_sentences: documents with fewer sentences are skipped and counted in the report.
    report: when True return `(documents, ReadReport)` instead of just the documents.
    progress: show a tqdm bar over the files.

    Never crashes on a bad file: empty, binary or unreadable files are skipped with a reason
    (see the report; a one-line summary is logged at INFO level). Raises FileNotFoundError for
    a missing path and ValueError when nothing usable remains.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    if min_sentences < 0:
        raise ValueError(f"min_sentences must be >= 0, got {min_sentences}")
    root = Path(path).expanduser()
    if not root.exists():
        raise FileNotFoundError(f"no such file or folder: {str(root)!r}")
    if root.is_dir():
        files = list_files(root)
        if not files:
            raise ValueError(f"no *.txt or *.raw files under the folder {str(root)!r}")
    else:
        files = [root]

    rep = ReadReport()
    documents: list[Document] = []
    for file in tqdm(files, desc="reading", unit="file", disable=not progress or len(files) < 2):
        name = file.relative_to(root).as_posix() if root.is_dir() else file.name
        try:
            data = file.read_bytes()
            decoded = _decode(data, name)
        except OSError as err:
            rep.files_skipped.append((str(file), f"cannot read: {err.strerror or err}"))
            continue
        except _Skip as skip:
            rep.files_skipped.append((str(file), str(skip)))
            continue
        rep.decode_replacements += decoded.replacements
        if decoded.encoding not in ("utf-8", "utf-16"):
            rep.legacy_decoded.append((str(file), decoded.encoding))
        fmt = detect_format(decoded.text) if format == "auto" else format
        rep.formats[str(file)] = fmt
        docs = _parse(decoded.text, fmt, name)
        kept = [d for d in docs if len(d.sentences) >= max(1, min_sentences)]
        rep.skipped_documents += len(docs) - len(kept)
        rep.skipped_sentences += sum(len(d) for d in docs) - sum(len(d) for d in kept)
        if not kept:
            reason = f"no document with at least {min_sentences} sentences" if docs else "no sentences found"
            rep.files_skipped.append((str(file), f"{reason} (format {fmt})"))
            continue
        rep.files_read.append(str(file))
        documents.extend(kept)

    rep.documents = len(documents)
    rep.sentences = sum(len(d) for d in documents)
    logger.info("%s: %s", root, rep.summary())
    if not documents:
        reasons = "; ".join(f"{Path(p).name}: {r}" for p, r in rep.files_skipped)
        raise ValueError(
            f"no usable text in {str(root)!r}: {reasons}"
            + (
                f" ({rep.skipped_documents} documents had fewer than {min_sentences} sentences)"
                if rep.skipped_documents
                else ""
            )
        )
    return (documents, rep) if report else documents


# ---------------------------------------------------------------------------------------------
# Held-out split by document
# ---------------------------------------------------------------------------------------------


def split_documents(
    docs: list[Document], held_out: float | int = 0.02, seed: int = 0
) -> tuple[list[Document], list[Document]]:
    """Deterministic (train, held_out) split by whole documents.

    held_out: a fraction in [0, 1) or a count (an int >= 1). With held_out > 0 and at least
    two documents, at least one document is held out (two when there are four or more: held-out
    next-sentence pairs need another document to draw NotNext sentences from) and at least one
    stays for training.
    The same docs and seed always give the same split; both parts keep the input order.
    """
    chosen = held_out_indices(len(docs), held_out, seed)
    train = [d for i, d in enumerate(docs) if i not in chosen]
    held = [d for i, d in enumerate(docs) if i in chosen]
    return train, held


def held_out_indices(n: int, held_out: float | int = 0.02, seed: int = 0) -> set[int]:
    """Which of n documents split_documents holds out: the same rule from the count alone, so
    a prepared corpus on disk is split exactly as the documents in memory would be."""
    if isinstance(held_out, int) and not isinstance(held_out, bool) and held_out >= 1:
        count = held_out
    elif 0 <= held_out < 1:
        count = round(held_out * n)
        if held_out > 0:
            count = max(2 if n >= 4 else 1, count)
    else:
        raise ValueError(f"held_out must be a fraction in [0, 1) or a count >= 1, got {held_out!r}")
    count = min(count, n - 1) if n >= 2 else 0
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return set(order[:count])


# ---------------------------------------------------------------------------------------------
# Command line: python -m lab.data.corpus PATH_OR_NAME
# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.data.corpus", description="Read a corpus into documents and summarise it."
    )
    parser.add_argument("corpus", help=f"a file, a folder, or a catalog name ({', '.join(datasets.CATALOG)})")
    parser.add_argument("--split", default=None, help="catalog split: train, valid, test, dev")
    parser.add_argument("--format", default="auto", choices=FORMATS)
    parser.add_argument("--min-sentences", type=int, default=1)
    parser.add_argument("--show", type=int, default=3, help="print the first N sentences of the first documents")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        path = datasets.resolve_corpus(args.corpus, args.split)
        docs, report = read_documents(path, args.format, args.min_sentences, report=True, progress=True)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for line in str(report).splitlines()[1:]:  # the summary line itself is logged
        print(line)
    for doc in docs[: args.show]:
        print(f"\n{doc.source}  {doc.title!r}  ({len(doc)} sentences)")
        for sentence in doc.sentences[: args.show]:
            print(f"  | {sentence}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
