"""Text -> ids: BERT's WordPiece tokenizer (train it, save/load vocab.txt, encode pairs).

What lives here
---------------
`Tokenizer` wraps a `tokenizers.Tokenizer` configured exactly like BERT's:

    raw text --BertNormalizer--> "héllo, World!" -> "hello, world!"   (clean control chars,
                                  space out CJK characters, lower-case, strip accents)
             --BertPreTokenizer--> ["hello", ",", "world", "!"]        (split on spaces + punctuation)
             --WordPiece---------> greedy longest-match-first against the vocabulary, word by word;
                                   a piece that continues a word is written with "##"

`Encoding` is the result of `Tokenizer.encode`: ids plus everything needed to look at them
(tokens, segment ids, character offsets into the original text, truncation report).
"""

# Worked example (WordPiece)
# --------------------------
# With a small vocabulary trained on sentences about playing, "playing" is not a token of its
# own but "play" and "##ing" are, so WordPiece takes the longest prefix it knows, then continues:
#
#     "playing" -> "play" (longest known prefix) + "##ing" (the rest, as a continuation piece)
#     tok.tokenize("playing")   -> ["play", "##ing"]
#     tok.decode(tok.convert_tokens_to_ids(["play", "##ing"]))  -> "playing"
#
# A word with no possible split becomes "[UNK]" (the whole word, not one character).
#
# Worked example (a sentence pair, as BERT sees it)
# -------------------------------------------------
#     enc = tok.encode("a b", "c")
#     enc.tokens          [CLS]  a  b  [SEP]  c  [SEP]
#     enc.token_type_ids    0    0  0    0    1    1      (segment A = 0, segment B = 1)
#     enc.attention_mask    1    1  1    1    1    1
#     enc.sequence_ids    None   0  0  None   1  None     (which text a token came from)
#     enc.offsets        (0,0) (0,1)(2,3)(0,0)(0,1)(0,0)  (characters in that text; specials 0,0)
#     enc.sentence_b_start  4
#
# With `max_length`, a pair is truncated "longest first": one token at a time is removed from
# the end of whichever segment is currently longer (B on a tie), the rule of BERT's
# `truncate_seq_pair`, until [CLS] A [SEP] B [SEP] fits:
#
#     A = 5 tokens, B = 8 tokens, max_length 12 -> 9 positions for A + B
#     B 8 -> 7 -> 6 -> 5 (B longer), tie 5/5 -> B 4: keep A 5, B 4; num_truncated = 4
#
# (transformers' BertTokenizerFast, through the `tokenizers` library, computes this in closed
# form and gives the odd position to the longer segment instead: A 4, B 5. The two agree
# whenever the budget for A + B is even or A is the longer one; the Python BertTokenizer and
# Google's original code agree with the rule above.)
#
# How to use it
# -------------
#     from lab.tokenizer import Tokenizer
#     tok = Tokenizer.train(["corpus.txt"], vocab_size=8192)     # or any iterator of strings
#     tok.save("runs/tok")                                       # vocab.txt, tokenizer.json, config
#     tok = Tokenizer.load("runs/tok")                           # or a bert-base vocab.txt
#     enc = tok.encode("the cat sat .", "it was happy .", max_length=128)
#     batch = tok.encode_batch(["a b", "c"], return_tensors="pt")   # padded, torch LongTensors
#
# A directory saved here also loads in `transformers.BertTokenizerFast.from_pretrained(dir)`.

from __future__ import annotations

import json
import numbers
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers, processors, trainers
from tokenizers import Tokenizer as _Backend

from lab.files import TOKENIZER_CONFIG_NAME, TOKENIZER_NAME, VOCAB_NAME

# The five special tokens, in the order a freshly trained vocabulary gives them ids 0..4.
PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
SUBWORD_PREFIX = "##"  # marks a piece that continues a word: "playing" -> "play", "##ing"
MAX_INPUT_CHARS_PER_WORD = 100  # longer "words" become [UNK] outright (as in BERT)
MODEL_MAX_LENGTH = 512  # BERT's position-embedding table size, written to tokenizer_config.json


@dataclass
class Encoding:
    """One encoded text (or text pair), ready for the model. Lists are all the same length."""

    input_ids: list[int]  # vocabulary ids
    token_type_ids: list[int]  # segment: 0 for [CLS] A [SEP], 1 for B [SEP]
    attention_mask: list[int]  # 1 for real tokens (an unpadded Encoding is all ones)
    tokens: list[str]  # the vocabulary strings of input_ids
    offsets: list[tuple[int, int]]  # (start, end) characters in the original text of the
    #                                 token's own segment; (0, 0) for special tokens
    sequence_ids: list[int | None]  # None for [CLS]/[SEP], 0 for text A, 1 for text B
    truncated: bool = False  # True when max_length cut some tokens off
    num_truncated: int = 0  # how many tokens were cut off (A and B together)

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def sentence_b_start(self) -> int | None:
        """Index of the first segment-B position (bertviz's `sentence_b_start`); None for one text.

        If truncation emptied B entirely, this is the index of the [SEP] that closes B.
        """
        try:
            return self.token_type_ids.index(1)
        except ValueError:
            return None

    @property
    def special_tokens_mask(self) -> list[int]:
        """1 where the tokenizer inserted [CLS]/[SEP], 0 on tokens that came from the text."""
        return [1 if s is None else 0 for s in self.sequence_ids]


class Tokenizer:
    """BERT's WordPiece tokenizer. Build it with `train`, `load`/`from_pretrained`, or a vocab dict.

    `Tokenizer(vocab, lowercase=True)` builds one from a {token: id} mapping that contains the
    five special tokens [PAD] [UNK] [CLS] [SEP] [MASK] (looked up by string, any ids).
    """

    def __init__(self, vocab: dict[str, int], lowercase: bool = True):
        if not vocab:
            raise ValueError("Tokenizer: the vocabulary is empty")
        _check_specials(vocab, where="the vocabulary")
        model = models.WordPiece(
            dict(vocab),
            unk_token=UNK,
            continuing_subword_prefix=SUBWORD_PREFIX,
            max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD,
        )
        self._configure(_Backend(model), lowercase)

    # ------------------------------------------------------------------ construction helpers

    @classmethod
    def _from_backend(cls, backend: _Backend, lowercase: bool, normalizer_options: dict | None = None) -> Tokenizer:
        """Wrap an already built `tokenizers.Tokenizer` (trained, or read from tokenizer.json)."""
        self = cls.__new__(cls)
        self._configure(backend, lowercase, normalizer_options)
        return self

    def _configure(self, backend: _Backend, lowercase: bool, normalizer_options: dict | None = None) -> None:
        """Put BERT's pipeline around a WordPiece model and cache what lookups need."""
        options = {"clean_text": True, "handle_chinese_chars": True, "strip_accents": None}
        options.update(normalizer_options or {})
        # strip_accents=None means "do whatever lowercase does", as in the original BERT.
        backend.normalizer = normalizers.BertNormalizer(lowercase=bool(lowercase), **options)
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        backend.decoder = decoders.WordPiece(prefix=SUBWORD_PREFIX, cleanup=True)
        vocab = backend.get_vocab(with_added_tokens=True)
        _check_specials(vocab, where="the vocabulary")
        # Registering the specials as "special added tokens" keeps "[MASK]" written in a text
        # in one piece (it is matched on the raw text, before lower-casing) and lets
        # decode(skip_special_tokens=True) drop them. They are in the vocabulary already, so
        # their ids do not change.
        backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
        # The post-processor is what tokenizer.json carries to other libraries (transformers);
        # `encode` below assembles the same layout itself, so that it can apply BERT's own
        # truncation rule and report what it cut.
        backend.post_processor = processors.TemplateProcessing(
            single=f"{CLS}:0 $A:0 {SEP}:0",
            pair=f"{CLS}:0 $A:0 {SEP}:0 $B:1 {SEP}:1",
            special_tokens=[(CLS, vocab[CLS]), (SEP, vocab[SEP])],
        )
        backend.no_truncation()
        backend.no_padding()

        self._backend = backend
        self._lowercase = bool(lowercase)
        self._normalizer_options = options
        self._vocab = backend.get_vocab(with_added_tokens=True)
        self._ids = {name: self._vocab[name] for name in SPECIAL_TOKENS}

    # ------------------------------------------------------------------ training

    @classmethod
    def train(
        cls,
        files_or_iterator: str | os.PathLike | Sequence[str | os.PathLike] | Iterable[str],
        vocab_size: int = 8192,
        min_frequency: int = 2,
        lowercase: bool = True,
        show_progress: bool = True,
        limit_alphabet: int = 1000,
    ) -> Tokenizer:
        """Learn a WordPiece vocabulary from text.

        `files_or_iterator` is either file paths (one path, or a list/tuple of str/Path) or any
        other iterable of strings (a generator, a dataset column, `iter(list_of_sentences)`).
        The vocabulary starts with [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4, then the alphabet
        (each character alone and as "##c"), then pieces merged by frequency, until `vocab_size`.

        Reproducibility: the `tokenizers` trainer breaks ties between equally frequent merges in
        an order that can change from run to run, so two trainings on the same text may differ
        in their last few tokens and in ids. Save the trained tokenizer and load it to reuse it.
        """
        if not isinstance(vocab_size, int) or vocab_size <= len(SPECIAL_TOKENS):
            raise ValueError(
                f"Tokenizer.train: vocab_size={vocab_size!r} is too small; it must leave room for the "
                f"{len(SPECIAL_TOKENS)} special tokens {list(SPECIAL_TOKENS)} and the alphabet"
            )
        backend = _Backend(
            models.WordPiece(
                unk_token=UNK,
                continuing_subword_prefix=SUBWORD_PREFIX,
                max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD,
            )
        )
        # Training sees text through the same normalizer and pre-tokenizer as encoding will.
        backend.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase
        )
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            show_progress=show_progress,
            special_tokens=list(SPECIAL_TOKENS),
            limit_alphabet=limit_alphabet,
            continuing_subword_prefix=SUBWORD_PREFIX,
        )

        files = _as_file_list(files_or_iterator)
        if files is not None:
            if not files:
                raise ValueError("Tokenizer.train: the list of files is empty")
            missing = [f for f in files if not os.path.isfile(f)]
            if missing:
                raise FileNotFoundError(
                    f"Tokenizer.train: file(s) not found: {missing}. (A list or tuple of strings is read "
                    f"as file paths; to train on the strings themselves pass an iterator, e.g. iter(texts).)"
                )
            if not any(_file_has_text(f) for f in files):
                raise ValueError(f"Tokenizer.train: no text to train on; the file(s) are empty: {files}")
            backend.train(files, trainer=trainer)
        else:
            counter = _TextCounter(files_or_iterator)
            length = len(files_or_iterator) if hasattr(files_or_iterator, "__len__") else None
            backend.train_from_iterator(iter(counter), trainer=trainer, length=length)
            if counter.count == 0:
                raise ValueError("Tokenizer.train: no text to train on; the iterator gave no non-empty text")

        # The trainer always keeps the whole alphabet, so a vocab_size below
        # specials + alphabet silently comes out larger than asked: report it instead.
        got = backend.get_vocab_size(with_added_tokens=True)
        if got > vocab_size:
            raise ValueError(
                f"Tokenizer.train: vocab_size={vocab_size} is smaller than the {len(SPECIAL_TOKENS)} special "
                f"tokens plus the alphabet of this text ({got} tokens in all); raise vocab_size to at "
                f"least {got} or lower limit_alphabet (now {limit_alphabet})"
            )
        tok = cls._from_backend(backend, lowercase)
        assert [tok._ids[t] for t in SPECIAL_TOKENS] == list(range(len(SPECIAL_TOKENS)))
        return tok

    # ------------------------------------------------------------------ saving and loading

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, lowercase: bool | None = None) -> Tokenizer:
        """Load from a directory (tokenizer.json or vocab.txt) or from a vocab.txt (or tokenizer.json) file.

        A directory's tokenizer.json is used when it describes a BERT WordPiece pipeline (one
        written by `save`, or by transformers' BertTokenizerFast); otherwise vocab.txt, one token
        per line, line number = id. Lower-casing: the `lowercase` argument if given, else
        `do_lower_case` from tokenizer_config.json next to the vocabulary, else True (uncased).
        """
        path = Path(path)
        if path.is_dir():
            directory, vocab_file = path, path / VOCAB_NAME
        elif path.is_file():
            directory, vocab_file = path.parent, path
        else:
            raise FileNotFoundError(f"Tokenizer.load: no such file or directory: '{path}'")

        if lowercase is None:
            lowercase = _read_do_lower_case(directory / TOKENIZER_CONFIG_NAME)

        if path.is_file() and path.suffix == ".json":  # a tokenizer.json named directly
            tok = cls._load_tokenizer_json(path, lowercase)
            if tok is None:
                raise ValueError(f"Tokenizer.load: '{path}' is not a BERT WordPiece tokenizer.json")
            return tok

        if path.is_dir():
            tok = cls._load_tokenizer_json(directory / TOKENIZER_NAME, lowercase)
            if tok is not None:
                return tok
            if not vocab_file.is_file():
                raise FileNotFoundError(
                    f"Tokenizer.load: '{path}' has neither a usable {TOKENIZER_NAME} nor a {VOCAB_NAME}"
                )
        vocab = _read_vocab_txt(vocab_file)
        return cls(vocab, lowercase=True if lowercase is None else lowercase)

    load = from_pretrained

    @classmethod
    def _load_tokenizer_json(cls, file: Path, lowercase: bool | None) -> Tokenizer | None:
        """A Tokenizer from tokenizer.json if the file holds a BERT WordPiece pipeline, else None."""
        if not file.is_file():
            return None
        try:
            spec = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(spec, dict):
            return None
        model = spec.get("model") or {}
        normalizer = spec.get("normalizer") or {}
        pre_tokenizer = spec.get("pre_tokenizer") or {}
        if not (
            model.get("type") == "WordPiece"
            and model.get("continuing_subword_prefix") == SUBWORD_PREFIX
            and model.get("unk_token") == UNK
            and normalizer.get("type") == "BertNormalizer"
            and pre_tokenizer.get("type") == "BertPreTokenizer"
        ):
            return None
        _check_specials(model.get("vocab") or {}, where=str(file))
        backend = _Backend.from_file(str(file))
        if lowercase is None:
            lowercase = bool(normalizer.get("lowercase", True))
        keys = ("clean_text", "handle_chinese_chars", "strip_accents")
        options = {k: normalizer[k] for k in keys if k in normalizer}
        return cls._from_backend(backend, lowercase, options)

    def save(self, directory: str | os.PathLike) -> Path:
        """Write vocab.txt, tokenizer.json and tokenizer_config.json into `directory` (created)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        # vocab.txt: line i holds the token with id i, the format BERT and transformers read.
        lines = []
        for i in range(len(self)):
            token = self._backend.id_to_token(i)
            if token is None:
                raise ValueError(
                    f"Tokenizer.save: the vocabulary has no token with id {i}; ids must be 0..{len(self) - 1}"
                )
            lines.append(token)
        (directory / VOCAB_NAME).write_text("\n".join(lines) + "\n", encoding="utf-8")
        self._backend.save(str(directory / TOKENIZER_NAME))
        config: dict[str, Any] = {
            "do_lower_case": self._lowercase,
            "tokenizer_class": "BertTokenizer",
            "model_max_length": MODEL_MAX_LENGTH,
        }
        # Only written when they differ from BERT's defaults (transformers reads them too).
        if self._normalizer_options.get("strip_accents") is not None:
            config["strip_accents"] = self._normalizer_options["strip_accents"]
        if not self._normalizer_options.get("handle_chinese_chars", True):
            config["tokenize_chinese_chars"] = False
        (directory / TOKENIZER_CONFIG_NAME).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        return directory

    # ------------------------------------------------------------------ vocabulary

    @property
    def backend(self) -> _Backend:
        """The underlying `tokenizers.Tokenizer` (for anything this class does not wrap)."""
        return self._backend

    @property
    def vocab_size(self) -> int:
        return self._backend.get_vocab_size(with_added_tokens=True)

    def __len__(self) -> int:
        return self.vocab_size

    @property
    def vocab(self) -> dict[str, int]:
        """{token: id} (a copy)."""
        return dict(self._vocab)

    @property
    def lowercase(self) -> bool:
        return self._lowercase

    @property
    def pad_token_id(self) -> int:
        return self._ids[PAD]

    @property
    def unk_token_id(self) -> int:
        return self._ids[UNK]

    @property
    def cls_token_id(self) -> int:
        return self._ids[CLS]

    @property
    def sep_token_id(self) -> int:
        return self._ids[SEP]

    @property
    def mask_token_id(self) -> int:
        return self._ids[MASK]

    @property
    def special_ids(self) -> frozenset[int]:
        """Ids of [PAD] [UNK] [CLS] [SEP] [MASK]."""
        return frozenset(self._ids.values())

    def __repr__(self) -> str:
        return f"Tokenizer(vocab_size={self.vocab_size}, lowercase={self._lowercase})"

    def convert_tokens_to_ids(self, tokens: str | Iterable[str]) -> int | list[int]:
        """Token(s) -> id(s); a token not in the vocabulary maps to [UNK]'s id."""
        if isinstance(tokens, str):
            return self._vocab.get(tokens, self.unk_token_id)
        return [self._vocab.get(t, self.unk_token_id) for t in tokens]

    def convert_ids_to_tokens(self, ids: int | Iterable[int]) -> str | list[str]:
        """Id(s) -> token(s). Accepts an int, a list, or a 1-D tensor/array."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        if isinstance(ids, numbers.Integral):
            return self._id_to_token(ids)
        return [self._id_to_token(i) for i in ids]

    def _id_to_token(self, i: int) -> str:
        token = self._backend.id_to_token(int(i)) if int(i) >= 0 else None
        if token is None:
            raise ValueError(f"Tokenizer: id {i} is outside the vocabulary (0..{self.vocab_size - 1})")
        return token

    def is_subword(self, token_or_id: str | int) -> bool:
        """True for a piece that continues a word ("##ing"), False for a word start ("play")."""
        token = token_or_id if isinstance(token_or_id, str) else self._id_to_token(int(token_or_id))
        return token.startswith(SUBWORD_PREFIX)

    # ------------------------------------------------------------------ text <-> tokens

    def tokenize(self, text: str) -> list[str]:
        """WordPiece tokens of `text`, without [CLS]/[SEP]: "playing" -> ["play", "##ing"]."""
        return self._backend.encode(text, add_special_tokens=False).tokens

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Ids -> text: "##" pieces are glued to the previous piece, specials dropped by default."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        ids = [int(i) for i in ids]
        for i in ids:
            self._id_to_token(i)  # a clear error for an id outside the vocabulary
        return self._backend.decode(ids, skip_special_tokens=skip_special_tokens)

    def encode(
        self,
        text: str,
        text_pair: str | None = None,
        max_length: int | None = None,
        truncation: str | bool = "longest_first",
        add_special_tokens: bool = True,
    ) -> Encoding:
        """Encode one text, or a pair as [CLS] A [SEP] B [SEP]; see the module docstring.

        `truncation` applies when the result would exceed `max_length`: "longest_first" (BERT's
        rule), "only_first", "only_second", or False (then an overlong input is an error).
        """
        # checked, not changed: the backend's normalizer drops control characters itself and
        # keeps offsets into the text as given
        clean_text(text, "text")
        if text_pair is not None:
            clean_text(text_pair, "text_pair")
        a = self._backend.encode(text, add_special_tokens=False)
        b = self._backend.encode(text_pair, add_special_tokens=False) if text_pair is not None else None
        return self._assemble(a, b, max_length, truncation, add_special_tokens)

    def encode_batch(
        self,
        texts: Sequence[str],
        text_pairs: Sequence[str] | None = None,
        max_length: int | None = None,
        pad_to: int | None = None,
        return_tensors: str | None = None,
        truncation: str | bool = "longest_first",
    ) -> dict[str, Any]:
        """Encode several texts (or pairs) and pad them with [PAD] to one length.

        Returns {"input_ids", "token_type_ids", "attention_mask"} as lists of lists (or torch
        LongTensors [B, T] with return_tensors="pt") and "truncated": a bool per example.
        Padding goes to the longest example, or to `pad_to` when given.
        """
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise TypeError("Tokenizer.encode_batch: texts must be a list of strings (encode takes one text)")
        if len(texts) == 0:
            raise ValueError("Tokenizer.encode_batch: texts is empty")
        for i, t in enumerate(texts):
            clean_text(t, f"texts[{i}]")
        if text_pairs is not None:
            if isinstance(text_pairs, str) or len(text_pairs) != len(texts):
                raise ValueError(f"Tokenizer.encode_batch: text_pairs must be a list as long as texts ({len(texts)})")
            for i, t in enumerate(text_pairs):
                clean_text(t, f"text_pairs[{i}]")
        if return_tensors not in (None, "pt"):
            raise ValueError(f"Tokenizer.encode_batch: return_tensors must be None or 'pt', not {return_tensors!r}")

        # The backend encodes the whole batch at once (in parallel, in Rust); the layout and
        # truncation are then put together per example exactly as in `encode`.
        encs_a = self._backend.encode_batch(list(texts), add_special_tokens=False)
        if text_pairs is not None:
            encs_b = self._backend.encode_batch(list(text_pairs), add_special_tokens=False)
        else:
            encs_b = [None] * len(texts)
        encodings = [self._assemble(a, b, max_length, truncation, True) for a, b in zip(encs_a, encs_b)]

        longest = max(len(e) for e in encodings)
        width = longest if pad_to is None else pad_to
        if width < longest:
            raise ValueError(
                f"Tokenizer.encode_batch: pad_to={pad_to} is shorter than the longest encoding ({longest} "
                f"tokens); pass max_length to truncate"
            )
        batch: dict[str, Any] = {"input_ids": [], "token_type_ids": [], "attention_mask": []}
        for e in encodings:
            pad = width - len(e)
            batch["input_ids"].append(e.input_ids + [self.pad_token_id] * pad)
            batch["token_type_ids"].append(e.token_type_ids + [0] * pad)
            batch["attention_mask"].append(e.attention_mask + [0] * pad)
        if return_tensors == "pt":
            batch = {k: torch.tensor(v, dtype=torch.long) for k, v in batch.items()}
        batch["truncated"] = [e.truncated for e in encodings]
        return batch

    def _assemble(self, a, b, max_length, truncation, add_special_tokens) -> Encoding:
        """[CLS] A [SEP] (B [SEP]) from the backend's per-text encodings, truncating first."""
        n_special = (3 if b is not None else 2) if add_special_tokens else 0
        n_a, n_b = len(a.ids), (len(b.ids) if b is not None else 0)
        keep_a, keep_b = n_a, n_b
        if max_length is not None:
            if not isinstance(max_length, numbers.Integral) or max_length < max(n_special, 1):
                what = "a text pair" if b is not None else "one text"
                raise ValueError(
                    f"Tokenizer.encode: max_length={max_length!r} is too small for {what} "
                    f"(it needs at least {max(n_special, 1)} positions)"
                )
            keep_a, keep_b = _truncate(n_a, n_b, max_length - n_special, truncation, pair=b is not None)

        # What goes before and after each segment: [CLS] A [SEP] B [SEP], or nothing at all.
        head, head_id = ([CLS], [self.cls_token_id]) if add_special_tokens else ([], [])
        tail, tail_id = ([SEP], [self.sep_token_id]) if add_special_tokens else ([], [])
        tokens = head + a.tokens[:keep_a] + tail
        ids = head_id + a.ids[:keep_a] + tail_id
        offsets = [(0, 0)] * len(head) + [tuple(o) for o in a.offsets[:keep_a]] + [(0, 0)] * len(tail)
        seq_ids: list[int | None] = [None] * len(head) + [0] * keep_a + [None] * len(tail)
        n_first = len(ids)  # segment 0 runs up to and including the first [SEP]
        if b is not None:
            tokens += b.tokens[:keep_b] + tail
            ids += b.ids[:keep_b] + tail_id
            offsets += [tuple(o) for o in b.offsets[:keep_b]] + [(0, 0)] * len(tail)
            seq_ids += [1] * keep_b + [None] * len(tail)
        types = [0] * n_first + [1] * (len(ids) - n_first)
        removed = (n_a - keep_a) + (n_b - keep_b)
        return Encoding(
            input_ids=ids,
            token_type_ids=types,
            attention_mask=[1] * len(ids),
            tokens=tokens,
            offsets=offsets,
            sequence_ids=seq_ids,
            truncated=removed > 0,
            num_truncated=removed,
        )


# ---------------------------------------------------------------------- helpers


def _truncate(n_a: int, n_b: int, budget: int, strategy: str | bool, pair: bool) -> tuple[int, int]:
    """How many tokens of A and B to keep so that n_a + n_b <= budget.

    longest_first, worked example: A has 5 tokens, B has 3, budget 5 (3 must go):
        A 5 > B 3 -> A 4;  A 4 > B 3 -> A 3;  A 3 = B 3 -> B 2   => keep A 3, B 2
    """
    if n_a + n_b <= budget:
        return n_a, n_b
    if not pair:
        if strategy in ("longest_first", "only_first"):
            return budget, 0
        if strategy is False:
            raise ValueError(f"Tokenizer.encode: {n_a} tokens do not fit max_length, and truncation=False")
        raise ValueError(f"Tokenizer.encode: truncation={strategy!r} needs a text pair; use 'longest_first'")
    if strategy == "longest_first":
        # One token at a time from the end of the longer segment (B on a tie), as in BERT's
        # truncate_seq_pair; the loop runs once per removed token.
        while n_a + n_b > budget:
            if n_a > n_b:
                n_a -= 1
            else:
                n_b -= 1
        return n_a, n_b
    if strategy == "only_first" and n_b <= budget:
        return budget - n_b, n_b
    if strategy == "only_second" and n_a <= budget:
        return n_a, budget - n_a
    if strategy in ("only_first", "only_second"):
        raise ValueError(
            f"Tokenizer.encode: truncation={strategy!r} cannot fit A ({n_a} tokens) and B ({n_b} tokens) "
            f"into max_length; use 'longest_first' or a larger max_length"
        )
    if strategy is False:
        raise ValueError(f"Tokenizer.encode: {n_a} + {n_b} tokens do not fit max_length, and truncation=False")
    raise ValueError(
        f"Tokenizer.encode: unknown truncation={strategy!r}; use 'longest_first', 'only_first', 'only_second' or False"
    )


# control characters text never needs (tab, newline and carriage return stay): str.translate deletes them
_CONTROL = {c: None for c in [*range(32), *range(127, 160)] if chr(c) not in "\t\n\r"}


def clean_text(value: Any, name: str = "text", required: bool = True, max_chars: int | None = None) -> str:
    """Text from a user (a browser, a notebook, an API call) made safe to tokenize: the one
    place that checks input text for the tokenizer, lab.inspect.explore and the dashboard.

    bytes are decoded as UTF-8 (invalid bytes and lone surrogates become replacement
    characters), control characters are dropped, text longer than `max_chars` is cut;
    None, a non-string or (when required) empty text is a ValueError naming the field:
        clean_text("the cat\x00 sat")   -> "the cat sat"
        clean_text("  ", "question")    -> ValueError: question is empty: type some text
    """
    if value is None:
        value = ""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text (a string), got {type(value).__name__}")
    value = value.encode("utf-8", errors="replace").decode("utf-8").translate(_CONTROL)
    if required and not value.strip():
        raise ValueError(f"{name} is empty: type some text")
    return value[:max_chars] if max_chars else value


def _check_specials(vocab: dict[str, int], where: str) -> None:
    missing = [t for t in SPECIAL_TOKENS if t not in vocab]
    if missing:
        raise ValueError(
            f"Tokenizer: {where} lacks the special token(s) {missing}; BERT needs all of {list(SPECIAL_TOKENS)}"
        )


def _read_vocab_txt(file: Path) -> dict[str, int]:
    """vocab.txt -> {token: line number}. (A repeated line keeps its last number, as in BERT.)"""
    if not file.is_file():
        raise FileNotFoundError(f"Tokenizer.load: vocabulary file not found: '{file}'")
    with open(file, encoding="utf-8") as f:
        vocab = {line.rstrip("\n").rstrip("\r"): i for i, line in enumerate(f)}
    if not vocab:
        raise ValueError(f"Tokenizer.load: the vocabulary file '{file}' is empty")
    _check_specials(vocab, where=f"the vocabulary file '{file}'")
    return vocab


def _read_do_lower_case(config_file: Path) -> bool | None:
    """do_lower_case from tokenizer_config.json, or None when the file or the key is absent."""
    if not config_file.is_file():
        return None
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ValueError(f"Tokenizer.load: '{config_file}' is not valid JSON: {e}") from None
    value = config.get("do_lower_case") if isinstance(config, dict) else None
    return None if value is None else bool(value)


def _as_file_list(source: Any) -> list[str] | None:
    """File paths as a list of str if `source` names files (a path, or a list/tuple of them), else None."""
    if isinstance(source, (str, os.PathLike)):
        return [os.fspath(source)]
    if isinstance(source, (list, tuple)) and all(isinstance(s, (str, os.PathLike)) for s in source):
        return [os.fspath(s) for s in source]
    return None


def _file_has_text(file: str, chunk_chars: int = 1 << 20) -> bool:
    """True as soon as the file shows a non-whitespace character (reads no further)."""
    with open(file, encoding="utf-8", errors="replace") as f:
        while chunk := f.read(chunk_chars):
            if chunk.strip():
                return True
    return False


class _TextCounter:
    """Passes an iterable of strings (or of lists of strings) through, counting non-empty texts."""

    def __init__(self, source: Iterable[Any]):
        if not isinstance(source, Iterable):
            raise TypeError(
                f"Tokenizer.train: expected file paths or an iterable of strings, got {type(source).__name__}"
            )
        self.source = source
        self.count = 0

    def __iter__(self) -> Iterator[Any]:
        for item in self.source:
            texts = [item] if isinstance(item, str) else item
            if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
                raise TypeError(f"Tokenizer.train: the iterator must give strings, got {type(item).__name__}")
            self.count += sum(1 for t in texts if t.strip())
            yield item
