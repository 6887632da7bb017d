"""Tests for lab/data/corpus.py: formats, robustness, the sentence splitter, the held-out split and
the command line (the catalog and downloads are tested in tests/test_datasets.py).

    .venv/bin/python -m pytest tests/test_corpus.py

Every fixture is a tiny text the test writes into tmp_path. One test reads the real data in
../shared/data (or $BERT_LAB_DATA) and is skipped where it is absent.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from lab.data.corpus import Document, detect_format, main, read_documents, split_documents, split_sentences
from lab.data.datasets import data_dir, resolve_corpus


def write(path: Path, text: str, newline: str = "\n", encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.replace("\n", newline).encode(encoding))
    return path


def all_sentences(docs: list[Document]) -> list[str]:
    return [s for d in docs for s in d.sentences]


# ---------------------------------------------------------------------------------------------
# Formats
# ---------------------------------------------------------------------------------------------

GUTENBERG = """\ufeffThe Project Gutenberg EBook of A Tiny Tale, by Nobody

This eBook is for the use of anyone anywhere at no cost and with
almost no restrictions whatsoever.

Title: A Tiny Tale
Release Date: June, 2001

*** START OF THIS PROJECT GUTENBERG EBOOK A TINY TALE ***




Produced by Some Volunteers



A TINY TALE

By Nobody



CHAPTER I.

[Illustration:

   GEORGE ALLEN
   PUBLISHER

   [_Copyright 1894_]]

Call me Ishmael. Some years ago--never mind how long
precisely--having little or no money in my purse, I thought I
would sail about a little.

"Is it _you_?" said Mr. Bennet. "It is
I," said she.



CHAPTER II. The Carpet-Bag

It was a _very_ cold night; the wind
blew hard. Dr. J. R. Smith stayed in.

End of Project Gutenberg's A Tiny Tale, by Nobody

*** END OF THIS PROJECT GUTENBERG EBOOK A TINY TALE ***

1.F.2. LIMITED WARRANTY, DISCLAIMER OF DAMAGES - Except for the Project
Gutenberg-tm trademark. YOU AGREE THAT YOU HAVE NO REMEDIES.
"""


def test_gutenberg_file_bom_crlf_frame_chapters_wrapping_italics(tmp_path):
    path = write(tmp_path / "tale.txt", GUTENBERG, newline="\r\n")
    docs, report = read_documents(path, report=True)
    assert report.formats[str(path)] == "gutenberg"
    # Front matter ("A TINY TALE" / "By Nobody"), then one document per chapter.
    assert [d.title for d in docs] == ["A TINY TALE", "CHAPTER I.", "CHAPTER II. The Carpet-Bag"]
    assert docs[1].source == "tale.txt#1"
    assert docs[1].sentences == [
        "Call me Ishmael.",
        "Some years ago--never mind how long precisely--having little or no money in my "
        "purse, I thought I would sail about a little.",
        '"Is it you?" said Mr. Bennet.',
        '"It is I," said she.',
    ]
    assert docs[2].sentences == ["It was a very cold night; the wind blew hard.", "Dr. J. R. Smith stayed in."]
    text = " ".join(all_sentences(docs))
    for leak in (
        "Gutenberg",
        "START OF",
        "END OF",
        "Release Date",
        "Produced by",
        "WARRANTY",
        "Illustration",
        "GEORGE ALLEN",
        "1894",
        "\ufeff",
        "\r",
        "_",
    ):
        assert leak not in text
    assert report.documents == 3 and report.sentences == 7


def test_gutenberg_forced_without_markers_keeps_everything(tmp_path, caplog):
    path = write(tmp_path / "x.txt", "One sentence here. Another one.\n")
    with caplog.at_level(logging.WARNING, logger="lab.data.corpus"):
        docs = read_documents(path, format="gutenberg")
    assert all_sentences(docs) == ["One sentence here.", "Another one."]
    assert "x.txt" in caplog.text and "START" in caplog.text


PLAIN = """MY NOVEL

VOLUME I

CHAPTER I

It was a dark night. The rain fell.

"THERE SHE BLOWS!"

(AHAB TO HIMSELF.)

Chapter 12
He walked home. It was late.

CHAPTER XLII. The Whiteness of the Whale

White is a colour. So is black.

CHAPTER 57. Of Whales in Paint; in Teeth; in Wood; in Sheet-Iron; in
Stone; in Mountains; in Stars.

Whales are painted.

BOOK ONE

THE COMING OF THE MARTIANS

No one would have believed it.
"""


def test_plain_headings_start_documents_and_are_not_sentences(tmp_path):
    docs = read_documents(write(tmp_path / "novel.txt", PLAIN), format="plain")
    assert [d.title for d in docs] == [
        "MY NOVEL / VOLUME I / CHAPTER I",  # stacked headings: one document
        "Chapter 12",  # "Chapter 12" with its text right below
        "CHAPTER XLII. The Whiteness of the Whale",
        "CHAPTER 57. Of Whales in Paint; in Teeth; in Wood; in Sheet-Iron; in Stone; "
        "in Mountains; in Stars.",  # a wrapped chapter title
        "BOOK ONE / THE COMING OF THE MARTIANS",
    ]
    assert docs[0].sentences == ["It was a dark night.", "The rain fell.", '"THERE SHE BLOWS!"', "(AHAB TO HIMSELF.)"]
    assert docs[1].sentences == ["He walked home.", "It was late."]
    assert docs[4].sentences == ["No one would have believed it."]
    assert [d.source for d in docs] == [f"novel.txt#{i}" for i in range(5)]


def test_plain_without_headings_is_one_document(tmp_path):
    text = "A first paragraph,\nwrapped at print width.\n\nA second one. It has two sentences.\n"
    docs = read_documents(write(tmp_path / "p.txt", text))
    assert len(docs) == 1 and docs[0].title == ""
    assert docs[0].sentences == ["A first paragraph, wrapped at print width.", "A second one.", "It has two sentences."]


# WikiText's raw layout, spaces included: every line starts with a space and ends with " \n"
WIKITEXT = (
    " \n"
    " = Robert Boulter = \n"
    " \n"
    " Robert Boulter is an English film , television and theatre actor . He had a guest @-@ starring role in 2000 . \n"
    " = = Career = = \n"
    " \n"
    " = = = 2000 – 2005 = = = \n"
    ' He was paid 1 @,@ 000 pounds , or 3 @.@ 5 times more , as " Craig " in " Teddy \'s Story " . It was n\'t bad . \n'
    " = Du Fu = \n"
    " Du Fu was a Chinese poet ( 712 – 770 ) . \n"
)


def test_wikitext_titles_subheadings_and_detokenisation(tmp_path):
    path = write(tmp_path / "wiki.test.raw", WIKITEXT, newline="\r\n")
    docs, report = read_documents(path, report=True)
    assert report.formats[str(path)] == "wikitext"
    assert [d.title for d in docs] == ["Robert Boulter", "Du Fu"]
    assert docs[0].sentences == [
        "Robert Boulter is an English film, television and theatre actor.",
        "He had a guest-starring role in 2000.",
        'He was paid 1,000 pounds, or 3.5 times more, as "Craig" in "Teddy\'s Story".',
        "It wasn't bad.",
    ]
    assert docs[1].sentences == ["Du Fu was a Chinese poet (712 – 770)."]
    assert not any("=" in s or "@" in s for s in all_sentences(docs))


SENTENCES = """This is the first sentence of doc one.
Mr. Smith went to Washington.
It rained!

Doc two starts here.
And ends here.
"""


def test_google_sentence_format(tmp_path):
    path = write(tmp_path / "bert.txt", SENTENCES)
    docs, report = read_documents(path, report=True)
    assert report.formats[str(path)] == "sentences"
    assert [d.sentences for d in docs] == [
        ["This is the first sentence of doc one.", "Mr. Smith went to Washington.", "It rained!"],
        ["Doc two starts here.", "And ends here."],
    ]
    # Forced to "plain", the same file is two paragraphs (one document, sentences re-split).
    plain = read_documents(path, format="plain")
    assert len(plain) == 1 and len(plain[0].sentences) == 5


@pytest.mark.parametrize(
    "text, expected",
    [
        (GUTENBERG, "gutenberg"),
        ("no start marker\n*** END OF THE PROJECT GUTENBERG EBOOK X ***\n", "gutenberg"),
        (WIKITEXT, "wikitext"),
        (SENTENCES, "sentences"),
        (PLAIN, "plain"),
        # wrapped prose: lines end mid-sentence and often start in lowercase
        (
            "It was the best of times, it was\nthe worst of times. It was the age\nof wisdom.\n\n"
            "It was the epoch of belief, it was\nthe epoch of incredulity.\n",
            "plain",
        ),
        # unwrapped paragraphs, one per line, blank lines between: paragraphs, not documents
        ("First paragraph. It has two sentences.\n\nSecond one. Also two.\n\nThird. Yes.\n", "plain"),
        # one paragraph per line, no blank lines: several sentences per line -> plain
        ("One. Two. Three.\nFour. Five. Six.\nSeven. Eight.\n", "plain"),
        ("Just one line.\n", "plain"),
    ],
)
def test_detect_format(text, expected):
    assert detect_format(text.replace("\r\n", "\n").lstrip("\ufeff")) == expected


def test_unknown_format_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="unknown format 'markdown'"):
        read_documents(write(tmp_path / "a.txt", "Hi."), format="markdown")


# ---------------------------------------------------------------------------------------------
# Robustness
# ---------------------------------------------------------------------------------------------


def test_missing_path_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        read_documents(tmp_path / "nope.txt")


def test_empty_and_binary_files_are_skipped_with_reasons(tmp_path):
    write(tmp_path / "a_good.txt", "A real sentence. Another.\n")
    (tmp_path / "b_empty.txt").write_bytes(b"")
    (tmp_path / "c_blank.txt").write_bytes(b"  \n\n \r\n")
    (tmp_path / "d_binary.raw").write_bytes(b"GIF89a\x00\x01\x02" + bytes(range(256)) * 8)
    (tmp_path / "e_garbage.txt").write_bytes(bytes(0x80 + (i * 37) % 128 for i in range(3000)))
    (tmp_path / "notes.md").write_text("Not read: wrong suffix.")
    docs, report = read_documents(tmp_path, report=True)
    assert all_sentences(docs) == ["A real sentence.", "Another."]
    assert [Path(p).name for p in report.files_read] == ["a_good.txt"]
    reasons = {Path(p).name: r for p, r in report.files_skipped}
    assert reasons["b_empty.txt"] == "empty file" and reasons["c_blank.txt"] == "empty file"
    assert reasons["d_binary.raw"].startswith("binary file (NUL byte on line 1")
    assert reasons["e_garbage.txt"].startswith("binary file")
    assert "notes.md" not in reasons


def test_nothing_usable_raises_value_error_with_reasons(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "bin.txt").write_bytes(b"\x00\x01\x02\x03")
    with pytest.raises(ValueError) as err:
        read_documents(tmp_path)
    message = str(err.value)
    assert str(tmp_path) in message
    assert "empty.txt: empty file" in message and "bin.txt: binary file" in message
    (tmp_path / "sub").mkdir()
    with pytest.raises(ValueError, match="no \\*.txt or \\*.raw files"):
        read_documents(tmp_path / "sub")


def test_latin1_file_is_decoded_as_an_8bit_encoding(tmp_path):
    path = tmp_path / "old.txt"
    path.write_bytes("Le café était fermé. Très triste!\n".encode("latin-1"))
    docs, report = read_documents(path, report=True)
    assert all_sentences(docs) == ["Le café était fermé.", "Très triste!"]
    assert report.legacy_decoded == [(str(path), "cp1252")]
    assert report.decode_replacements == 0


def test_stray_bad_bytes_in_utf8_are_replaced_and_counted(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes("A naïve café.\nSecond line".encode() + b"\xff" + b" ends here.\n")
    docs, report = read_documents(path, report=True)
    assert report.decode_replacements == 1 and not report.legacy_decoded
    assert all_sentences(docs) == ["A naïve café.", "Second line\ufffd ends here."]
    assert "1 undecodable bytes replaced" in report.summary()


def test_utf16_with_bom_is_read(tmp_path):
    path = tmp_path / "u16.txt"
    path.write_bytes("Hello there. General Kenobi!\n".encode("utf-16"))
    assert all_sentences(read_documents(path)) == ["Hello there.", "General Kenobi!"]


def test_short_documents_are_skipped_and_counted(tmp_path, caplog):
    path = write(tmp_path / "s.txt", "First.\nSecond.\n\nAlone.\n\nThird.\nFourth.\n")
    with caplog.at_level(logging.INFO, logger="lab.data.corpus"):
        docs, report = read_documents(path, format="sentences", min_sentences=2, report=True)
    assert [d.sentences for d in docs] == [["First.", "Second."], ["Third.", "Fourth."]]
    assert report.skipped_documents == 1 and report.skipped_sentences == 1
    assert report.documents == 2 and report.sentences == 4
    assert "1 short documents skipped" in report.summary()
    assert "1 short documents skipped" in caplog.text  # the logged one-line summary
    with pytest.raises(ValueError, match="fewer than 5 sentences"):
        read_documents(path, format="sentences", min_sentences=5)


def test_folder_is_read_recursively_in_sorted_order(tmp_path):
    write(tmp_path / "b" / "two.raw", "Second file.\n")
    write(tmp_path / "a.txt", "First file.\n")
    write(tmp_path / "b" / "c" / "three.txt", "Third file.\n")
    write(tmp_path / ".hidden" / "x.txt", "Hidden file.\n")
    docs = read_documents(tmp_path)
    assert [d.source for d in docs] == ["a.txt#0", "b/c/three.txt#0", "b/two.raw#0"]
    assert all_sentences(docs) == ["First file.", "Third file.", "Second file."]


# ---------------------------------------------------------------------------------------------
# Sentence splitter
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "paragraph, expected",
    [
        ("Mr. Bennet came. He sat down.", ["Mr. Bennet came.", "He sat down."]),
        (
            "Mrs. Smith met Dr. Jones at St. Paul's. They talked.",
            ["Mrs. Smith met Dr. Jones at St. Paul's.", "They talked."],
        ),
        (
            "Prof. Capt. Col. Gen. Lt. Rev. Hon. Ms. Jr. Sr. all came. Yes.",
            ["Prof. Capt. Col. Gen. Lt. Rev. Hon. Ms. Jr. Sr. all came.", "Yes."],
        ),
        ("J. R. Smith wrote it. M. Aronnax read it.", ["J. R. Smith wrote it.", "M. Aronnax read it."]),
        ("J.R.R. Tolkien wrote it. It sold.", ["J.R.R. Tolkien wrote it.", "It sold."]),
        ('"Stop!" she said. He stopped.', ['"Stop!" she said.', "He stopped."]),
        ('"Stop!" He stopped.', ['"Stop!"', "He stopped."]),
        ('He asked, "Why?" Nobody knew.', ['He asked, "Why?"', "Nobody knew."]),
        ("(He left.) She stayed.", ["(He left.)", "She stayed."]),
        ("Wait... what is that? A whale!", ["Wait... what is that?", "A whale!"]),
        ("He paused... Then he ran.", ["He paused...", "Then he ran."]),
        ("He paused… Then he ran.", ["He paused…", "Then he ran."]),
        ("the great day. . . . And strangest of all.", ["the great day. . . .", "And strangest of all."]),
        ("It cost 3.5 pounds. Cheap!", ["It cost 3.5 pounds.", "Cheap!"]),
        ("Really? Yes! Good.", ["Really?", "Yes!", "Good."]),
        ("Oh! how happy we were.", ["Oh! how happy we were."]),
        ("What?! No way.", ["What?!", "No way."]),
        ("She was happy; he was not; they parted.", ["She was happy; he was not; they parted."]),
        ("Give it up--Sub-Subs! For by how much the more.", ["Give it up--Sub-Subs!", "For by how much the more."]),
        ("I—I cannot. No.", ["I—I cannot.", "No."]),
        (
            "See p. 5 and No. 12 and Vol. II for details. Then stop.",
            ["See p. 5 and No. 12 and Vol. II for details.", "Then stop."],
        ),
        ("He said no. Then he left.", ["He said no.", "Then he left."]),
        ("Fruit, e.g. apples, i.e. Cox. Good ones.", ["Fruit, e.g. apples, i.e. Cox.", "Good ones."]),
        ("Pens, ink, etc. The rest was paper.", ["Pens, ink, etc.", "The rest was paper."]),
        ("Arsenal vs. Chelsea was dull.", ["Arsenal vs. Chelsea was dull."]),
        ('"Yes," said I. Then we left.', ['"Yes," said I.', "Then we left."]),
        ("The war began in 1914. 1915 was worse.", ["The war began in 1914.", "1915 was worse."]),
        ("  Hello   world.\n  Bye.  ", ["Hello world.", "Bye."]),
        ("A sentence without an end", ["A sentence without an end"]),
        ("", []),
        ("   \n ", []),
    ],
)
def test_split_sentences(paragraph, expected):
    assert split_sentences(paragraph) == expected


# ---------------------------------------------------------------------------------------------
# Held-out split
# ---------------------------------------------------------------------------------------------


def _docs(n: int) -> list[Document]:
    return [Document(source=f"d#{i}", sentences=[f"Sentence {i}."]) for i in range(n)]


def test_split_documents_is_deterministic_disjoint_and_ordered():
    docs = _docs(200)
    train, held = split_documents(docs, held_out=0.05, seed=0)
    assert len(held) == 10 and len(train) == 190
    assert split_documents(docs, held_out=0.05, seed=0) == (train, held)
    assert {d.source for d in train} | {d.source for d in held} == {d.source for d in docs}
    assert not {d.source for d in train} & {d.source for d in held}
    assert held == sorted(held, key=docs.index) and train == sorted(train, key=docs.index)
    assert split_documents(docs, held_out=0.05, seed=1)[1] != held


@pytest.mark.parametrize(
    "n, held_out, expected_held",
    [
        (0, 0.02, 0),
        (1, 0.02, 0),
        (2, 0.02, 1),
        (3, 0.02, 1),
        (4, 0.02, 2),
        (10, 0.02, 2),
        (10, 0.5, 5),
        (10, 0.0, 0),
        (10, 3, 3),
        (3, 10, 2),
    ],
)
def test_split_documents_sizes(n, held_out, expected_held):
    train, held = split_documents(_docs(n), held_out=held_out)
    assert len(held) == expected_held and len(train) == n - expected_held


@pytest.mark.parametrize("bad", [-0.1, 1.0, 2.5])
def test_split_documents_rejects_bad_fractions(bad):
    with pytest.raises(ValueError, match="held_out"):
        split_documents(_docs(5), held_out=bad)


# ---------------------------------------------------------------------------------------------
# Command line: python -m lab.data.corpus
# ---------------------------------------------------------------------------------------------


def test_main_summarises_a_path_and_a_catalog_name(tmp_path, monkeypatch, capsys):
    path = write(tmp_path / "s.txt", SENTENCES)
    assert main([str(path), "--show", "1"]) == 0
    out = capsys.readouterr().out
    assert "s.txt#0" in out and "| This is the first sentence of doc one." in out
    assert "Mr. Smith" not in out  # --show 1: one sentence each

    data = tmp_path / "data"  # a catalog name, resolved
    write(data / "wikitext-2-raw" / "wiki.test.raw", WIKITEXT)  # by lab.data.datasets (no network)
    monkeypatch.setenv("BERT_LAB_DATA", str(data))
    assert main(["wikitext-2", "--split", "test"]) == 0
    assert "'Robert Boulter'" in capsys.readouterr().out
    assert main(["no-such-corpus"]) == 1
    assert "corpus names: novels" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Real data (skipped where ../shared/data is absent)
# ---------------------------------------------------------------------------------------------

SHARED_DATA = data_dir() or Path("no data folder: set BERT_LAB_DATA")


@pytest.mark.skipif(not (SHARED_DATA / "novels" / "mobydick.txt").exists(), reason=f"no real data at {SHARED_DATA}")
def test_real_novels_and_wikitext(monkeypatch):
    monkeypatch.setenv("BERT_LAB_DATA", str(SHARED_DATA))
    start = time.perf_counter()

    moby = read_documents(SHARED_DATA / "novels" / "mobydick.txt")
    text = " ".join(all_sentences(moby))
    # (The transcriber's note inside the frame, "...one from Project Gutenberg's archives",
    # is part of the book as distributed and stays.)
    for leak in (
        "The Project Gutenberg EBook",
        "Project Gutenberg License",
        "Gutenberg-tm",
        "START OF THIS",
        "END OF THIS",
        "Posting Date",
        "EBook #2701",
        "LIMITED WARRANTY",
        "www.gutenberg.org",
        "\ufeff",
        "\r",
    ):
        assert leak not in text
    assert moby[1].title == "CHAPTER 1. Loomings." and moby[1].sentences[0] == "Call me Ishmael."
    assert 130 <= len(moby) <= 140  # 135 chapters + front + epilogue

    docs, report = read_documents(resolve_corpus("novels"), report=True)
    assert not report.files_skipped and len(report.files_read) == 10
    assert len(docs) > 100 * 4  # chapters of ten novels
    assert 40_000 < report.sentences < 90_000  # ~1.28M words, ~20 words each
    lengths = sorted(len(s.split()) for s in all_sentences(docs))
    assert 8 <= lengths[len(lengths) // 2] <= 30  # median words per sentence

    wiki = read_documents(resolve_corpus("wikitext-2", split="test"))
    assert 55 <= len(wiki) <= 65 and wiki[0].title == "Robert Boulter"
    assert 5_000 < sum(len(d) for d in wiki) < 20_000
    assert not any(" @-@ " in s or s.startswith(" = ") for s in all_sentences(wiki))
    assert time.perf_counter() - start < 10
