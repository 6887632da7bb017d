"""Exercise `wordpiece` (notebook 1): WordPiece's greedy longest-match-first split of one word.

The checker compares the student's function with the WordPiece model of the `tokenizers` library
(Google's algorithm) on the words of a real text and invented long words, for two vocabularies and
the edge cases; a difference is explained by the typical mistakes, most specific first.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from tokenizers.models import WordPiece

from lab.checkpoint import bundled_model, minilm_dir
from lab.files import REPOSITORY

from . import core
from .core import Fail

UNK = "[UNK]"


def wordpiece(word, vocab, max_chars=100):
    """Split ONE word into WordPiece tokens, greedy longest-match-first (as BERT's tokenizer does).

    word       a str, already lower-cased and split off from its neighbours, e.g. "unaffable"
    vocab      a set of str: the vocabulary; a piece that continues a word is stored with "##",
               e.g. {"un", "##aff", "##able", ...}
    max_chars  a word longer than this is not split at all
    Returns a list of str, e.g. ["un", "##aff", "##able"]; ["[UNK]"] when the word cannot be split
    into pieces of the vocabulary (or is longer than max_chars).
    """
    if len(word) > max_chars:  # BERT gives up on very long "words" (URLs, DNA...)
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        # the longest piece of the vocabulary that starts at `start`
        end, piece = len(word), None
        while end > start:
            candidate = word[start:end] if start == 0 else "##" + word[start:end]  # "##": continues a word
            if candidate in vocab:
                piece = candidate
                break
            end -= 1
        if piece is None:  # no piece fits here: the whole word is unknown, not just this part
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


def _vocab_files() -> list[Path]:
    """A small vocabulary the lab trained (8,192 pieces) and bert-base-uncased's (30,522)."""
    found = []
    for folder in (bundled_model("bert-lab-classroom"), minilm_dir(), bundled_model("minilm-sst2")):
        if folder is not None and (folder / "vocab.txt").is_file() and len(found) < 2:
            if not any(f.read_bytes() == (folder / "vocab.txt").read_bytes() for f in found):
                found.append(folder / "vocab.txt")
    return found


_WORD_CACHE: dict = {}


def _wordpiece_cases(n_words: int = 150, seed: int = 0):
    """(vocab name, vocab set, reference model, [(word, max_chars, kind)]) per vocabulary."""
    key = (n_words, seed)
    if key in _WORD_CACHE:
        return _WORD_CACHE[key]
    rng = random.Random(seed)
    text = ""
    stories = REPOSITORY / "notebooks" / "data" / "stories.txt"
    if stories.is_file():
        text = stories.read_text(encoding="utf-8").lower()
    text_words = sorted(set(re.findall(r"[a-z]+|[0-9]+", text))) or ["playing", "unbelievable", "lighthouse"]
    files = _vocab_files()
    vocabs = [(f.parent.name, [line.rstrip("\n") for line in f.open(encoding="utf-8")]) for f in files]
    if not vocabs:  # no bundled vocabulary: a small invented one
        vocabs = [("invented", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz"])]
        vocabs[0][1] += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"] + ["play", "##ing", "un", "##able", "the"]
    out = []
    for name, tokens in vocabs:
        vocab = set(tokens)
        model = WordPiece({t: i for i, t in enumerate(tokens)}, unk_token=UNK, continuing_subword_prefix="##")
        words = rng.sample(text_words, min(n_words, len(text_words)))
        # invented words glued from vocabulary pieces: long words with several continuation pieces
        starts = [t for t in tokens if t.isalpha() and len(t) > 2]
        conts = [t for t in tokens if t.startswith("##") and t[2:].isalpha()]
        for _ in range(n_words // 3):
            words.append(rng.choice(starts) + "".join(rng.choice(conts)[2:] for _ in range(rng.randint(1, 3))))
        cases = [(w, 100, "word") for w in words]
        letter = next(c for c in "etaoinsr" if c in vocab and "##" + c in vocab)
        cases += [
            ("a" if "a" in vocab else letter, 100, "one character"),
            ("the" if "the" in vocab else letter * 2, 100, "a whole word in the vocabulary"),
            ("☃", 100, "a character outside the vocabulary"),
            (f"{words[0]}☃", 100, "a word that cannot be split to its end"),
            (f"{words[1]}☃{words[2]}", 100, "a word with an unknown character inside"),
            (letter * 100, 100, "exactly max_chars characters"),
            (letter * 101, 100, "longer than max_chars"),
            ((words[0] * 12)[:12], 10, "longer than a max_chars of 10"),
        ]
        out.append((name, vocab, model, cases))
    _WORD_CACHE[key] = out
    return out


def _wordpiece_diagnosis(word: str, got: list, want: list, vocab: set, max_chars: int) -> str:
    """Why `got` differs from `want` for this word: the typical mistakes, most specific first."""
    glued = "".join(p[2:] if p.startswith("##") else p for p in got if p != UNK)
    if want == [UNK] and len(word) > max_chars:
        return (
            f"a word of {len(word)} characters should give ['[UNK]'] (it is longer than max_chars = {max_chars}), "
            "but you split it: check len(word) > max_chars first and return ['[UNK]'] (BERT gives up on such words)"
        )
    if got == [UNK] and len(word) <= max_chars and want != [UNK]:
        if len(word) == max_chars:
            return (
                f"a word of exactly max_chars = {max_chars} characters is still tokenized; only longer words become "
                "[UNK]: the test is len(word) > max_chars, not >="
            )
        return "the word can be split, but you returned ['[UNK]']: is every piece looked up correctly?"
    if want == [UNK] and UNK in got and len(got) > 1:
        return (
            "you return the pieces found so far plus '[UNK]'; a word that cannot be split to its end becomes a "
            "single ['[UNK]'] (the whole word is unknown, not just its last part)"
        )
    if want == [UNK] and UNK not in got:
        if glued != word:
            return (
                "the word cannot be split to its end, and you dropped the part that did not match; "
                "return ['[UNK]'] for the whole word instead"
            )
        bad = [p for p in got if p not in vocab]
        return (
            f"the word cannot be split into vocabulary pieces; your pieces {bad[:3]} are not in the vocabulary: "
            "return ['[UNK]'] when no piece matches"
        )
    if got and got[0].startswith("##") and not want[0].startswith("##"):
        return "your first piece starts with '##'; only the pieces that continue a word carry '##', the first never"
    if len(got) > 1 and not any(p.startswith("##") for p in got[1:]) and any(p.startswith("##") for p in want[1:]):
        return (
            "your continuation pieces lack '##': after the first piece, look up '##' + rest (and return it so): "
            f"{got} should be {want}"
        )
    if glued == word and len(got) > len(want) and got[0] != want[0] and want[0].startswith(got[0]):
        return (
            f"you take the shortest match first: your first piece is {got[0]!r} where the longest piece in the "
            f"vocabulary is {want[0]!r}; start with the whole rest of the word and shorten it until it is in the "
            "vocabulary"
        )
    if glued == word and len(got) > len(want):
        return (
            "your pieces are shorter than they should be: at each position take the LONGEST piece of the vocabulary "
            "(greedy longest-match-first)"
        )
    bad = [p for p in got if p not in vocab]
    if bad:
        return f"your pieces {bad[:3]} are not in the vocabulary"
    if glued != word:
        return f"your pieces spell {glued!r}, not the word"
    return "the pieces differ from greedy longest-match-first"


def check_wordpiece(student, n_words: int = 150, seed: int = 0):
    """Checks wordpiece(word, vocab, max_chars) against the WordPiece model of the `tokenizers`
    library (the algorithm of Google's BERT tokenizer) on words of a real text and invented long
    words, for the lab's trained vocabulary and bert-base-uncased's, plus edge cases: one
    character, a character outside the vocabulary, a word that cannot be split to its end, a word
    of exactly and of more than max_chars characters, a max_chars other than 100.
    Options: n_words (sampled words per vocabulary), seed."""
    total, wrong, first = 0, 0, None
    for name, vocab, model, cases in _wordpiece_cases(n_words, seed):
        for word, max_chars, kind in cases:
            want = [t.value for t in model.tokenize(word)] if len(word) <= max_chars else [UNK]
            endless = (
                f"Your wordpiece({word[:30]!r}, vocab) ran for more than 5 seconds: an endless loop? After each piece "
                "the start position must move to the end of that piece, and the inner loop must stop when no "
                "candidate is left."
            )
            with core.time_limit(5.0, endless):
                got = core.call(student, word, set(vocab), max_chars, what=f"your wordpiece({word[:20]!r}, vocab)")
            if not isinstance(got, (list, tuple)) or not all(isinstance(p, str) for p in got):
                raise Fail(
                    f"wordpiece({word!r}, vocab) should return a list of strings, got {got!r:.80}.",
                    word=word,
                    returned=repr(got)[:200],
                )
            total += 1
            if list(got) != want:
                wrong += 1
                if first is None:
                    first = (name, word, max_chars, kind, list(got), want, vocab)
    if first is None:
        return (
            f"Your wordpiece gives the same pieces as the WordPiece of the tokenizers library (Google's algorithm) on "
            f"all {total} words, including the edge cases (one character, unknown characters, words that cannot be "
            "split to their end, the max_chars limit).",
            {"words": total},
        )
    name, word, max_chars, kind, got, want, vocab = first
    why = _wordpiece_diagnosis(word, got, want, vocab, max_chars)
    shown = word if len(word) <= 30 else word[:27] + "..."
    raise Fail(
        f"{wrong} of {total} words come out differently. The first, {shown!r} ({kind}, vocabulary {name}), "
        f"gives {got[:6]} instead of {want[:6]}: {why}.",
        word=word,
        vocabulary=name,
        max_chars=max_chars,
        yours=got,
        expected=want,
        wrong_words=wrong,
    )


EXERCISE = core.Exercise(
    name="wordpiece",
    title="WordPiece: greedy longest-match-first",
    group="tokens",
    checker=check_wordpiece,
    solution=wordpiece,
    hint=(
        "Walk through the word with a start position. At each start, try the longest candidate first: "
        "word[start:end] for end = len(word), len(word) - 1, ...; from the second piece on, look it up as "
        "'##' + word[start:end]. Take the first candidate that is in vocab and move start to end. If no "
        "candidate fits, the whole word is ['[UNK]'] (not the pieces found so far). Check len(word) > max_chars "
        "before anything else."
    ),
)
