"""Documents -> pre-training examples: NSP sentence pairs, 80/10/10 masking, named batches.

    documents : list[list[list[int]]]                        documents -> sentences -> token ids
    create_instances(documents, special)  -> list[Instance]   (segment A, segment B, IsNext?)
    collate(instances, special, gen)      -> Batch            ([CLS] A [SEP] B [SEP], masked)
    PretrainingData(view, special, batch_size).batch(step) -> Batch   (dynamic masking)

The module sits between the tokenizer and the model (`text -> tokenizer -> ids -> instances ->
Batch -> model`) and only ever sees token ids. The pairing follows Google's
`create_pretraining_data.py` and the masking the paper (15% of the tokens, a fixed count per
sequence, 80% [MASK] / 10% random / 10% unchanged); a worked example stands beside each step.
"""

from __future__ import annotations

import array
import random
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple, Protocol

import numpy as np
import torch

from lab.data.batch import IGNORE_INDEX, Batch, mix_seed, padded_length, step_indices, steps_per_epoch

# ----------------------------------------------------------------------------------------------
# Special ids
# ----------------------------------------------------------------------------------------------


@dataclass
class SpecialIds:
    """The ids this module needs to know about, and which ids are `##` continuations."""

    pad_id: int  # [PAD]: fills short sequences; never masked, attention_mask 0
    cls_id: int  # [CLS]: first token; its final state feeds the NSP head
    sep_id: int  # [SEP]: ends segment A and segment B
    mask_id: int  # [MASK]: replaces 80% of the chosen tokens
    vocab_size: int  # random replacements are drawn from range(vocab_size) minus the specials
    unk_id: int | None = None  # [UNK], if given, is never drawn as a random replacement
    is_subword: Callable[[int], bool] | None = None  # id -> is it a "##" piece? (whole-word)
    subword_mask: Sequence[bool] | torch.Tensor | None = None  # or a [vocab_size] bool table

    def __post_init__(self) -> None:
        for name in ("pad_id", "cls_id", "sep_id", "mask_id", "unk_id"):
            value = getattr(self, name)
            if value is not None and not 0 <= value < self.vocab_size:
                raise ValueError(f"{name}={value} is outside the vocabulary [0, {self.vocab_size})")
        if self.subword_mask is not None and len(self.subword_mask) != self.vocab_size:
            raise ValueError(
                f"subword_mask has {len(self.subword_mask)} entries, expected vocab_size={self.vocab_size}"
            )
        self._subword_table: torch.Tensor | None = None
        self._replacement_ids: torch.Tensor | None = None

    @property
    def special_ids(self) -> tuple[int, ...]:
        """[PAD], [CLS], [SEP], [MASK] (and [UNK] when known)."""
        ids = (self.pad_id, self.cls_id, self.sep_id, self.mask_id)
        return ids + ((self.unk_id,) if self.unk_id is not None else ())

    def subword_table(self) -> torch.Tensor:
        """Bool tensor [vocab_size]: True where the id is a `##` continuation piece."""
        if self._subword_table is None:
            if self.subword_mask is not None:
                table = torch.as_tensor(self.subword_mask, dtype=torch.bool)
            elif self.is_subword is not None:
                table = torch.tensor([bool(self.is_subword(i)) for i in range(self.vocab_size)])
            else:
                raise ValueError(
                    "whole-word masking needs SpecialIds(is_subword=...) or SpecialIds(subword_mask=...) "
                    "to know which ids are '##' continuation pieces"
                )
            self._subword_table = table
        return self._subword_table

    def replacement_ids(self) -> torch.Tensor:
        """Long tensor of the ids a "random token" may be: the vocabulary minus special_ids.

        Google's script draws from the whole vocabulary (so a random replacement can be [CLS]
        or [PAD]); we leave the special ids out, so a "random word" is always a real word.
        """
        if self._replacement_ids is None:
            keep = torch.ones(self.vocab_size, dtype=torch.bool)
            keep[list(self.special_ids)] = False
            self._replacement_ids = keep.nonzero().squeeze(1)
        return self._replacement_ids

    @classmethod
    def from_vocab(cls, vocab: Sequence[str] | Mapping[str, int]) -> SpecialIds:
        """Build from a WordPiece vocabulary (vocab.txt lines in order, or a token -> id dict)."""
        token_to_id = dict(vocab) if isinstance(vocab, Mapping) else {t: i for i, t in enumerate(vocab)}
        missing = [t for t in ("[PAD]", "[CLS]", "[SEP]", "[MASK]") if t not in token_to_id]
        if missing:
            raise ValueError(f"the vocabulary lacks the special tokens {missing}")
        size = max(token_to_id.values()) + 1
        subword = [False] * size
        for token, i in token_to_id.items():
            subword[i] = token.startswith("##")
        return cls(
            pad_id=token_to_id["[PAD]"],
            cls_id=token_to_id["[CLS]"],
            sep_id=token_to_id["[SEP]"],
            mask_id=token_to_id["[MASK]"],
            vocab_size=size,
            unk_id=token_to_id.get("[UNK]"),
            subword_mask=subword,
        )


# ----------------------------------------------------------------------------------------------
# Instances: sentence pairs for next-sentence prediction
# ----------------------------------------------------------------------------------------------
#
# Worked example (words stand for their ids). Two documents, one sentence per line:
#
#     doc 0:  "the cat sat on the mat ."   "it was warm ."   "then it slept ."
#     doc 1:  "stocks fell on monday ."    "traders were nervous ."
#
# Walking doc 0 we collect a chunk of sentences until it holds about `max_seq_length - 3` tokens
# (3 = room for [CLS] [SEP] [SEP]). Say the chunk is all three sentences and we cut it after the
# first one:
#     A = "the cat sat on the mat ."
# Half the time B is the true continuation (IsNext, nsp_label 0):
#     B = "it was warm . then it slept ."
# otherwise B is taken from a random *other* document (NotNext, nsp_label 1), e.g.
#     B = "traders were nervous ."
# and the two unused sentences of the chunk are "put back" so a later pair uses them.


@dataclass
class Instance:
    """One pre-training pair, before [CLS]/[SEP] are added and before masking."""

    tokens_a: list[int]  # segment A (sentence ids, possibly truncated)
    tokens_b: list[int]  # segment B
    is_random_next: bool  # True: B comes from another document (NotNext, nsp_label 1)
    doc_a: int = -1  # index (in the input list) of the document A comes from
    doc_b: int = -1  # index of the document B comes from (== doc_a when IsNext)
    sentences_a: tuple[int, int] = (0, 0)  # A = sentences [start, end) of doc_a, before truncation
    sentences_b: tuple[int, int] = (0, 0)  # B = sentences [start, end) of doc_b, before truncation
    target_length: int = 0  # the token budget the chunk was collected for
    is_short: bool = False  # target_length was drawn at random (probability short_seq_prob)

    @property
    def num_tokens(self) -> int:
        """Length with [CLS] A [SEP] B [SEP]."""
        return len(self.tokens_a) + len(self.tokens_b) + 3


class Pair(NamedTuple):
    """A pair "recipe": which sentences become A and B and where they are cut, before any token
    is read (13 ints). A = sentences [a_start, a_end) of document doc_a (document-local indices),
    of whose tokens A keeps [a_lo, a_hi); B likewise (see `truncation`).

    Example, a budget of 125 tokens: A = sentences 0..2 of doc 0 (60 tokens), B = sentences 5..9
    of doc 4 (80 tokens, NotNext); 140 > 125, so B, the longer, loses 15 tokens, 7 at the front
    and 8 at the back: Pair(0, 0, 3, 4, 5, 10, 125, False, True, 0, 60, 7, 72).
    """

    doc_a: int  # the document A comes from
    a_start: int  # A = sentences [a_start, a_end) of doc_a
    a_end: int
    doc_b: int  # the document B comes from (== doc_a when IsNext)
    b_start: int  # B = sentences [b_start, b_end) of doc_b
    b_end: int
    target_length: int  # the token budget the chunk was collected for
    is_short: bool  # target_length was drawn at random (probability short_seq_prob)
    is_random_next: bool  # True: B comes from another document (NotNext)
    a_lo: int  # A keeps tokens [a_lo, a_hi) of its sentences
    a_hi: int
    b_lo: int  # B keeps tokens [b_lo, b_hi) of its sentences
    b_hi: int


# The columns of an epoch's pair table (PretrainingData.pairs: int32 [N, PAIR_WIDTH], one Pair a
# row, in Pair's field order): table[:, PairColumn.A_HI] is every pair's a_hi.
PairColumn = IntEnum("PairColumn", {name.upper(): i for i, name in enumerate(Pair._fields)})
PAIR_WIDTH = len(Pair._fields)  # 13


class DocumentView(Protocol):
    """What pairing needs from a corpus: how many documents, each document's sentence lengths
    (in tokens), and the tokens of a run of sentences. Served by lists in memory (`ListView`)
    and by the memory-mapped arrays of a prepared corpus (lab.data.prepare.PreparedCorpus)."""

    num_documents: int

    def sentence_lengths(self, d: int) -> Sequence[int]: ...

    def tokens(self, d: int, start: int, end: int) -> Sequence[int]: ...


class ListView:
    """Documents of sentences of ids held in memory (list[list[list[int]]])."""

    def __init__(self, docs: Sequence[Sequence[Sequence[int]]]):
        self.docs = docs
        self.num_documents = len(docs)

    def sentence_lengths(self, d: int) -> list[int]:
        return [len(s) for s in self.docs[d]]

    def tokens(self, d: int, start: int, end: int) -> list[int]:
        return [t for s in self.docs[d][start:end] for t in s]


def check_lengths(max_seq_length: int, short_seq_prob: float) -> None:
    if max_seq_length < 8:
        raise ValueError(
            f"max_seq_length={max_seq_length} is too small: it must be >= 8 to hold "
            "[CLS] A [SEP] B [SEP] with a few tokens in each segment"
        )
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ValueError(f"short_seq_prob={short_seq_prob} must be a probability in [0, 1]")


def pair_document(
    lengths_of,
    d: int,
    num_docs: int,
    max_num_tokens: int,
    short_seq_prob: float,
    rng: random.Random,
    not_next: float = 0.5,
) -> list[Pair]:
    """Walk document d's sentences and cut them into (A, B) pairs: the recipes, from sentence
    lengths alone (lengths_of(doc) -> token count of each sentence; no sentence is empty).

    Google's create_pretraining_data.py: sentences are collected into a chunk until it reaches
    the target length; A = the first k sentences of the chunk (k random), B = the rest of the
    chunk (IsNext) or, half the time (`not_next`), text from a random other document (NotNext),
    and then the chunk's unused sentences are "put back" so a later pair uses them. Without NSP
    (not_next=0) B is the true continuation, but for a one-sentence chunk. The longer segment is
    then cut to fit (`truncation`). One rng drives it all, in Google's order of draws, so a pass
    over the documents with one seed always gives the same pairs.
    """
    lengths = list(lengths_of(d))
    pairs: list[Pair] = []

    def draw_target() -> tuple[int, bool]:
        # Usually fill the whole sequence; sometimes (short_seq_prob) aim for a random shorter
        # length, so the model also sees the short inputs it will meet when fine-tuning.
        # (Google's script draws this once per document; we draw it once per chunk, so that
        # short_seq_prob is the fraction of instances.)
        if rng.random() < short_seq_prob:
            return rng.randint(2, max_num_tokens), True
        return max_num_tokens, False

    target, short = draw_target()
    chunk_start, chunk_len, i = 0, 0, 0  # the chunk is sentences [chunk_start, i]
    while i < len(lengths):
        chunk_len += lengths[i]
        n_chunk = i + 1 - chunk_start
        # Cut when the chunk is full or the document is over.
        if i == len(lengths) - 1 or chunk_len >= target:
            # A = the first a_end sentences of the chunk; a_end in [1, n_chunk - 1].
            a_end = rng.randint(1, n_chunk - 1) if n_chunk >= 2 else 1
            len_a = sum(lengths[chunk_start : chunk_start + a_end])
            # A one-sentence chunk has no continuation to offer: it must be NotNext.
            if n_chunk == 1 or rng.random() < not_next:
                # A different document, uniformly: draw from n-1 and skip over d.
                other = rng.randrange(num_docs - 1)
                other += other >= d
                other_lengths = lengths_of(other)
                # Start at a random sentence; take sentences until B fills the rest of the target.
                start = rng.randrange(len(other_lengths))
                end, len_b = start, 0
                while end < len(other_lengths):
                    len_b += other_lengths[end]
                    end += 1
                    if len_b >= target - len_a:
                        break
                b = (other, start, end, True)
                # "Put back" the chunk's unused sentences: the walk resumes right after A.
                i = chunk_start + a_end - 1
            else:
                len_b = chunk_len - len_a
                b = (d, chunk_start + a_end, i + 1, False)
            doc_b, b_start, b_end, random_next = b
            a_lo, a_hi, b_lo, b_hi = truncation(len_a, len_b, max_num_tokens, rng)
            pairs.append(
                Pair(
                    doc_a=d,
                    a_start=chunk_start,
                    a_end=chunk_start + a_end,
                    doc_b=doc_b,
                    b_start=b_start,
                    b_end=b_end,
                    target_length=target,
                    is_short=short,
                    is_random_next=random_next,
                    a_lo=a_lo,
                    a_hi=a_hi,
                    b_lo=b_lo,
                    b_hi=b_hi,
                )
            )
            # Start a fresh chunk after whatever was consumed.
            chunk_start, chunk_len = i + 1, 0
            target, short = draw_target()
        i += 1
    return pairs


def epoch_pairs(
    view: DocumentView, rng: random.Random, max_num_tokens: int, short_seq_prob: float, not_next: float = 0.5
):
    """Every pair of one pass over the documents, in document order, drawn from `rng`."""
    for d in range(view.num_documents):
        lengths = view.sentence_lengths
        yield from pair_document(lengths, d, view.num_documents, max_num_tokens, short_seq_prob, rng, not_next)


def truncation(n_a: int, n_b: int, max_num_tokens: int, rng: random.Random) -> tuple[int, int, int, int]:
    """Shorten A and B until they fit, one token at a time from the longer one; returns the kept
    ranges (a_lo, a_hi, b_lo, b_hi). The end is chosen at random (front or back) so the model
    does not learn that segments always start (or end) at a sentence boundary.

    Example: A 6 tokens, B 3, budget 7 -> two tokens leave A (the longer), each from the front
    or the back: (1, 5, 0, 3) when the coin says front, then back.
    """
    a_lo, a_hi, b_lo, b_hi = 0, n_a, 0, n_b
    while (a_hi - a_lo) + (b_hi - b_lo) > max_num_tokens:
        front = rng.random() < 0.5
        if a_hi - a_lo > b_hi - b_lo:
            a_lo, a_hi = (a_lo + 1, a_hi) if front else (a_lo, a_hi - 1)
        else:
            b_lo, b_hi = (b_lo + 1, b_hi) if front else (b_lo, b_hi - 1)
    return a_lo, a_hi, b_lo, b_hi


def materialize(view: DocumentView, pair: Sequence[int]) -> Instance:
    """A pair's tokens, read and cut as its recipe says (a Pair, or a row of the pair table)."""
    p = Pair(*pair)
    tokens_a, tokens_b = view.tokens(p.doc_a, p.a_start, p.a_end), view.tokens(p.doc_b, p.b_start, p.b_end)
    return Instance(
        tokens_a=tokens_a[p.a_lo : p.a_hi],
        tokens_b=tokens_b[p.b_lo : p.b_hi],
        is_random_next=bool(p.is_random_next),
        doc_a=p.doc_a,
        doc_b=p.doc_b,
        sentences_a=(p.a_start, p.a_end),
        sentences_b=(p.b_start, p.b_end),
        target_length=p.target_length,
        is_short=bool(p.is_short),
    )


def create_instances(
    documents: Sequence[Sequence[Sequence[int]]],
    special: SpecialIds | None = None,
    max_seq_length: int = 128,
    short_seq_prob: float = 0.1,
    seed: int = 0,
    dupe_factor: int = 1,
) -> list[Instance]:
    """Turn documents of sentences of ids (in memory) into NSP pairs, as Google's
    create_pretraining_data.py (the same `pair_document` PretrainingData draws each epoch
    from). `dupe_factor` passes over the data give each sentence several different pairings.
    Same seed -> identical output.

    `special`, when given, is used to check that the documents contain no [PAD]/[CLS]/[SEP]/
    [MASK] ids (those are added by `collate`). Empty sentences and documents are skipped.
    Instances come out in document order; `PretrainingData` shuffles them every epoch.

    NotNext is a fair coin only for chunks of 2+ sentences: a one-sentence chunk (often the
    last sentence of a document) has no continuation and is always NotNext. On long documents
    (Wikipedia) the NotNext fraction is ~50%; on short ones it sits a few points above.
    """
    check_lengths(max_seq_length, short_seq_prob)
    if dupe_factor < 1:
        raise ValueError(f"dupe_factor={dupe_factor} must be >= 1")

    # Drop empty sentences, then empty documents, remembering each document's original index.
    forbidden = set((special.pad_id, special.cls_id, special.sep_id, special.mask_id)) if special else set()
    docs: list[list[list[int]]] = []
    doc_index: list[int] = []
    for d, document in enumerate(documents):
        sentences = [list(s) for s in document if len(s) > 0]
        for sentence in sentences:
            if forbidden.intersection(sentence):
                raise ValueError(
                    f"document {d} contains special ids {sorted(forbidden.intersection(sentence))}: "
                    "documents must hold plain text ids ([CLS]/[SEP]/[PAD]/[MASK] are added by collate)"
                )
        if sentences:
            docs.append(sentences)
            doc_index.append(d)
    if len(docs) < 2:
        raise ValueError(
            f"create_instances needs at least 2 non-empty documents (got {len(docs)}): "
            "NotNext examples take segment B from a different document"
        )
    view, rng = ListView(docs), random.Random(seed)
    max_num_tokens = max_seq_length - 3  # room for [CLS], [SEP], [SEP]
    instances: list[Instance] = []
    for _ in range(dupe_factor):  # each pass draws new chunk boundaries, cuts and partners
        for pair in epoch_pairs(view, rng, max_num_tokens, short_seq_prob):
            inst = materialize(view, pair)
            inst.doc_a, inst.doc_b = doc_index[inst.doc_a], doc_index[inst.doc_b]
            instances.append(inst)
    return instances


def instance_stats(instances: Sequence[Instance]) -> dict[str, float]:
    """Summary numbers for a notebook: how many, how long, how many NotNext / short."""
    n = len(instances)
    if n == 0:
        return {"num_instances": 0}
    lengths = [inst.num_tokens for inst in instances]  # with [CLS] [SEP] [SEP]
    return {
        "num_instances": n,
        "frac_not_next": sum(inst.is_random_next for inst in instances) / n,
        "frac_short": sum(inst.is_short for inst in instances) / n,
        "mean_length": sum(lengths) / n,
        "max_length": max(lengths),
        "mean_tokens_a": sum(len(inst.tokens_a) for inst in instances) / n,
        "mean_tokens_b": sum(len(inst.tokens_b) for inst in instances) / n,
        "num_tokens": sum(lengths),
    }


# ----------------------------------------------------------------------------------------------
# Masking: 15% of the tokens, 80% [MASK] / 10% random / 10% unchanged
# ----------------------------------------------------------------------------------------------
#
# Worked example: n = 15 maskable (non-special) tokens, so round(0.15 * 15) = 2 positions are
# chosen, say "cat" and "warm". Each chosen token independently becomes
#     80%:  [MASK]   "the [MASK] sat ..."    the model must recover "cat" from context
#     10%:  random   "the piano sat ..."     a real but wrong word: the model must check
#     10%:  itself   "the cat sat ..."       unchanged: the model can't trust visible words
# and mlm_labels holds the original id ("cat", "warm") at the chosen positions and -100 (ignored
# by the loss) everywhere else. [CLS], [SEP] and [PAD] are never chosen.


MIX_80_10_10 = (0.8, 0.1, 0.1)  # of the chosen tokens: [MASK], the same token, a random token


def check_mix(mix) -> tuple[float, float, float]:
    """A masking mix (MASK, SAME, RND shares): three shares from 0 to 1 that add up to 1."""
    mix = tuple(float(x) for x in mix)
    if len(mix) != 3 or min(mix) < 0 or abs(sum(mix) - 1) > 1e-6:
        raise ValueError(f"a masking mix is three shares MASK / SAME / RND adding up to 1, got {mix}")
    return mix


def parse_mix(text: str) -> tuple[float, float, float]:
    """ "80/10/10" (percent MASK / SAME / RND, the paper's Table 8) -> (0.8, 0.1, 0.1)."""
    parts = str(text).split("/")
    try:
        shares = [float(p) / 100 for p in parts]
    except ValueError:
        shares = []
    if len(parts) != 3 or len(shares) != 3:
        raise ValueError(f"masking={text!r}: write three percentages MASK/SAME/RND, e.g. 80/10/10 or 100/0/0")
    try:
        return check_mix(shares)
    except ValueError:
        raise ValueError(f"masking={text!r}: the three percentages MASK/SAME/RND must add up to 100") from None


def mask_tokens(
    input_ids: torch.Tensor,
    special_tokens_mask: torch.Tensor | None,
    special: SpecialIds,
    generator: torch.Generator,
    mlm_probability: float = 0.15,
    max_predictions_per_seq: int = 20,
    whole_word: bool = False,
    rows: tuple[int, int] | None = None,
    mix: tuple[float, float, float] = MIX_80_10_10,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Choose positions to predict and corrupt them; returns (masked_input_ids, mlm_labels).

    input_ids [B, T] long; special_tokens_mask [B, T] bool, True at [CLS]/[SEP]/[PAD]
    (None: computed from the ids). Each row predicts a FIXED number of tokens,
        k = min(max_predictions_per_seq, max(1, round(mlm_probability * n))),
    n = number of maskable positions (Google counts [CLS]/[SEP] in n too; we count only the
    tokens that can be chosen), chosen uniformly at random among the maskable positions.
    mlm_labels [B, T] holds the original id at chosen positions and -100 elsewhere. `mix`: the
    shares of the chosen tokens that become [MASK], stay the same, become a random token (the
    paper's Table 8 columns MASK / SAME / RND; 80/10/10 by default).

    The generator always draws the same amount of randomness for a [B, T] input, so the
    result depends only on the ids and the generator's seed. rows=(first, G): these B rows are
    rows first..first+B-1 of a global batch of G rows; the randomness is drawn for all G rows
    and this part's rows kept, so a process masking its share of a global batch masks it
    exactly as one process masking the whole batch would.
    """
    B, T = input_ids.shape
    device = input_ids.device
    if special_tokens_mask is None:
        special_tokens_mask = torch.zeros_like(input_ids, dtype=torch.bool)
        for sid in (special.pad_id, special.cls_id, special.sep_id, special.mask_id):
            special_tokens_mask |= input_ids == sid
    maskable = ~special_tokens_mask.bool() & (input_ids != special.pad_id)  # (B, T)

    # How many to predict in each row: a fixed count, not one coin flip per token.
    n = maskable.sum(dim=1)  # (B,)
    k = torch.round(n * mlm_probability).long().clamp(min=1, max=max_predictions_per_seq)
    k = torch.where(n > 0, k, torch.zeros_like(k))  # a row with nothing maskable predicts nothing

    # All randomness drawn up front, in a fixed order: scores, 80/10/10 dice, random ids.
    first, G = rows if rows is not None else (0, B)
    part = slice(first, first + B)
    scores = torch.rand(G, T, generator=generator, device=device)[part]  # (B, T) in [0, 1)
    dice = torch.rand(G, T, generator=generator, device=device)[part]  # (B, T) decides 80/10/10
    replacements = special.replacement_ids().to(device)
    random_ids = replacements[
        torch.randint(len(replacements), (G, T), generator=generator, device=device)[part]
    ]  # (B, T)

    if whole_word:
        chosen = _choose_whole_words(input_ids, maskable, scores, k, special)
    else:
        # The k highest random scores among maskable positions are a uniform random k-subset.
        # Unmaskable positions get score -1 so they always lose.
        scores = scores.masked_fill(~maskable, -1.0)
        chosen = torch.zeros(B, T, dtype=torch.bool, device=device)
        k_max = int(k.max()) if B > 0 else 0
        if k_max > 0:
            top = scores.topk(k_max, dim=1).indices  # (B, k_max) positions, best first
            # Row b keeps only its first k[b] picks: e.g. k = [2, 3], k_max = 3 ->
            # keep = [[T, T, F], [T, T, T]].
            keep = torch.arange(k_max, device=device)[None, :] < k[:, None]  # (B, k_max)
            chosen.scatter_(1, top, keep)

    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE_INDEX))  # (B, T)

    # 80/10/10, decided per chosen token with one die roll in [0, 1):
    #   [0.0, 0.8) -> [MASK]     [0.8, 0.9) -> random id     [0.9, 1.0) -> unchanged
    # (another mix moves the two cuts: MASK / SAME / RND = m / s / r cuts at m and m + r)
    to_mask = chosen & (dice < mix[0])
    to_random = chosen & (dice >= mix[0]) & (dice < mix[0] + mix[2])
    masked = input_ids.clone()
    masked[to_mask] = special.mask_id
    masked[to_random] = random_ids[to_random]
    return masked, labels


def word_spans(ids, special: SpecialIds, maskable=None) -> list[tuple[int, int]]:
    """[start, end) of each word of one sequence of ids: a piece plus the "##" pieces right
    after it, the same grouping whole-word masking uses. Positions that are not maskable
    ([CLS], [SEP], [PAD], [MASK] by default) belong to no word.

    Example: [CLS] the un ##believ ##ably cat [SEP] -> [(1, 2), (2, 5), (5, 6)].
    """
    ids = [int(i) for i in (ids.tolist() if torch.is_tensor(ids) else ids)]
    if maskable is None:
        specials = {special.pad_id, special.cls_id, special.sep_id, special.mask_id}
        maskable = [i not in specials for i in ids]
    else:
        maskable = [bool(m) for m in (maskable.tolist() if torch.is_tensor(maskable) else maskable)]
    subword = special.subword_table()[torch.as_tensor(ids, dtype=torch.long)].tolist() if ids else []
    spans: list[tuple[int, int]] = []
    for t, ok in enumerate(maskable):
        if not ok:
            continue
        if subword[t] and t > 0 and maskable[t - 1] and spans and spans[-1][1] == t:
            spans[-1] = (spans[-1][0], t + 1)  # a ## piece continues the word
        else:
            spans.append((t, t + 1))
    return spans


def _choose_whole_words(
    input_ids: torch.Tensor,
    maskable: torch.Tensor,
    scores: torch.Tensor,
    k: torch.Tensor,
    special: SpecialIds,
) -> torch.Tensor:
    """Choose whole words (a token plus its following `##` pieces) until k tokens are covered.

    Example: "the un ##believ ##able cat" has words [the] [un ##believ ##able] [cat]; if the
    middle word is chosen, all three of its pieces are predicted. Words are visited in a random
    order (each word's score = the score of its first piece) and, as in Google's script, a word
    that would overshoot k is skipped, so a row may end with slightly fewer than k tokens.
    """
    B, T = input_ids.shape
    chosen = torch.zeros(B, T, dtype=torch.bool)
    ids_l, maskable_l, scores_l, k_l = input_ids.tolist(), maskable.tolist(), scores.tolist(), k.tolist()
    for b in range(B):  # a plain loop per row: clear, and only used when asked for
        words = word_spans(ids_l[b], special, maskable_l[b])
        words.sort(key=lambda w: scores_l[b][w[0]], reverse=True)  # random order
        covered = 0
        for start, end in words:
            if covered >= k_l[b]:
                break
            if covered + (end - start) > k_l[b]:
                continue  # would overshoot: try a shorter word
            chosen[b, start:end] = True
            covered += end - start
    return chosen.to(input_ids.device)


# ----------------------------------------------------------------------------------------------
# Batches
# ----------------------------------------------------------------------------------------------
#
# Worked example, the layout of the pair above:
#     tokens          [CLS] the cat sat on the mat . [SEP] it  was warm . then it slept . [SEP]
#     token_type_ids    0    0   0   0   0  0   0  0   0    1   1    1  1   1   1   1   1   1
# followed by [PAD]s (attention_mask 0) up to the longest sequence in the batch.


def collate(
    instances: Sequence[Instance],
    special: SpecialIds,
    generator: torch.Generator,
    max_seq_length: int | None = None,
    pad_to_multiple_of: int | None = 8,
    mlm_probability: float = 0.15,
    max_predictions_per_seq: int = 20,
    whole_word: bool = False,
    length: int | None = None,
    rows: tuple[int, int] | None = None,
    mix: tuple[float, float, float] = MIX_80_10_10,
) -> Batch:
    """Lay out `[CLS] A [SEP] B [SEP]`, pad, mask (`mix`: see mask_tokens), and name everything.

    T = the longest sequence, rounded up to a multiple of `pad_to_multiple_of` (tensor cores
    and CPU kernels like round sizes) but never beyond `max_seq_length`; or `length` when
    given (a process's share of a global batch takes the global batch's T). rows: see mask_tokens.
    Segments may be lists or numpy arrays of ids.
    """
    if len(instances) == 0:
        raise ValueError("collate needs at least one instance")
    longest = max(inst.num_tokens for inst in instances)
    if max_seq_length is not None and longest > max_seq_length:
        raise ValueError(
            f"an instance has {longest} tokens with [CLS]/[SEP], more than "
            f"max_seq_length={max_seq_length}; create the instances with the same max_seq_length"
        )
    B, T = len(instances), length or padded_length(longest, pad_to_multiple_of, max_seq_length)
    ids = np.full((B, T), special.pad_id, dtype=np.int64)  # (B, T)
    types = np.zeros((B, T), dtype=np.int64)  # (B, T)
    attn = np.zeros((B, T), dtype=np.int64)  # (B, T)
    specials = np.ones((B, T), dtype=bool)  # (B, T) True = may not be masked
    for row, inst in enumerate(instances):
        a, b = len(inst.tokens_a), len(inst.tokens_b)
        # Positions: 0 = [CLS], 1..a = A, a+1 = [SEP], a+2..a+b+1 = B, a+b+2 = [SEP].
        ids[row, 0], ids[row, a + 1], ids[row, a + b + 2] = special.cls_id, special.sep_id, special.sep_id
        ids[row, 1 : a + 1] = inst.tokens_a
        ids[row, a + 2 : a + b + 2] = inst.tokens_b
        attn[row, : a + b + 3] = 1
        types[row, a + 2 : a + b + 3] = 1  # B and its closing [SEP]
        specials[row, 1 : a + 1] = False  # A is maskable
        specials[row, a + 2 : a + b + 2] = False  # B is maskable
    ids, types, attn, specials = (torch.from_numpy(x) for x in (ids, types, attn, specials))

    masked, labels = mask_tokens(
        ids,
        specials,
        special,
        generator,
        mlm_probability=mlm_probability,
        max_predictions_per_seq=max_predictions_per_seq,
        whole_word=whole_word,
        rows=rows,
        mix=mix,
    )
    nsp = torch.tensor([int(inst.is_random_next) for inst in instances], dtype=torch.long)  # (B,)
    return Batch(input_ids=masked, token_type_ids=types, attention_mask=attn, mlm_labels=labels, nsp_label=nsp)


# ----------------------------------------------------------------------------------------------
# Step-addressable data with dynamic masking
# ----------------------------------------------------------------------------------------------
#
# Masks are "dynamic" (RoBERTa's term): PretrainingData draws them anew for every epoch from a
# generator seeded by (seed, epoch, batch index), so any batch can be rebuilt exactly from its
# step number: this is what lets a killed training run resume at the same data position.


class PretrainingData:
    """A corpus -> an endless, step-addressable stream of masked Batches, paired lazily.

    The corpus is a DocumentView: documents of sentences of ids in memory (ListView) or the
    memory-mapped arrays of a prepared corpus (lab.data.prepare.PreparedCorpus), so memory does not
    grow with the corpus: what an epoch holds in memory is its pair *recipes*, a few ints per
    pair (about 20 bytes), never its tokens.

    Epoch e pairs the sentences anew (`epoch_pairs` with an rng seeded by (seed, e): NSP
    partners, cuts and short targets change every epoch, as dupe_factor passes did in Google's
    script) and visits its pairs in an order seeded by (seed, e). An epoch is
    `batches_per_epoch` steps, fixed by epoch 0's pair count. The masks of step s come from a
    generator seeded by (seed, e, i), i = its batch index in the epoch. So `batch(s)` is a pure
    function of s: a resumed run calls batch(saved_step) and sees exactly the data it would have
    seen.

    Distributed data parallel: `batch_size` is the PER-RANK batch; the global batch of step s
    holds batch_size * world_size pairs and rank r reads only its rows
    [r * batch_size, (r + 1) * batch_size), with the global batch's length T and its rows of
    masks drawn for the whole global batch: N processes see exactly the tokens and masks that
    one process with an N-times larger batch would see, and each reads only its share.

    drop_last=False keeps an epoch's incomplete last batch, filled up by wrapping around
    (every batch has the same size).
    """

    def __init__(
        self,
        view: DocumentView,
        special: SpecialIds,
        batch_size: int,
        seed: int = 0,
        max_seq_length: int = 128,
        short_seq_prob: float = 0.1,
        shuffle: bool = True,
        drop_last: bool = True,
        mlm_probability: float = 0.15,
        max_predictions_per_seq: int = 20,
        whole_word: bool = False,
        rank: int = 0,
        world_size: int = 1,
        pad_to_multiple_of: int | None = 8,
        mix: tuple[float, float, float] = MIX_80_10_10,
        not_next: float = 0.5,
        mask_epochs: int = 0,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size} must be >= 1")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank={rank} must be in [0, world_size={world_size})")
        check_lengths(max_seq_length, short_seq_prob)
        if view.num_documents < 2:
            raise ValueError(
                f"pre-training needs at least 2 documents (got {view.num_documents}): "
                "NotNext examples take segment B from a different document"
            )
        self.view, self.special = view, special
        self.batch_size = batch_size  # per rank
        self.seed, self.shuffle, self.drop_last = seed, shuffle, drop_last
        self.max_seq_length, self.short_seq_prob = max_seq_length, short_seq_prob
        self.mlm_probability, self.max_predictions_per_seq = mlm_probability, max_predictions_per_seq
        self.whole_word, self.rank, self.world_size = whole_word, rank, world_size
        self.pad_to_multiple_of = pad_to_multiple_of
        if mask_epochs < 0:
            raise ValueError(f"mask_epochs={mask_epochs} must be 0 (masks drawn anew every epoch) or more")
        self.mix, self.not_next, self.mask_epochs = check_mix(mix), not_next, mask_epochs
        self._index: tuple | None = None  # (epoch, pair table, its temporary file)
        n = len(self.pairs(0))
        try:
            self.batches_per_epoch = steps_per_epoch(n, self.global_batch_size, drop_last)
        except ValueError:
            raise ValueError(
                f"{n} pairs do not fill one global batch of {self.global_batch_size} (batch_size {batch_size} x "
                f"world_size {world_size}) with drop_last=True: use more data, a smaller batch, or drop_last=False"
            ) from None

    @property
    def global_batch_size(self) -> int:
        return self.batch_size * self.world_size

    def pairs(self, epoch: int) -> np.ndarray:
        """Epoch `epoch`'s pair recipes: int32 [N, PAIR_WIDTH], one row per Pair, columns named by
        `PairColumn` (52 bytes a pair), written to a temporary file and memory-mapped, so a process's
        memory does not grow with the corpus (a step reads only its rows). The latest epoch is kept."""
        if self._index is None or self._index[0] != epoch:
            rng = random.Random(mix_seed("pairs", self.seed, epoch))
            file = tempfile.TemporaryFile(prefix="bert-lab-pairs-")  # gone when closed
            chunk = array.array("i")
            for pair in epoch_pairs(self.view, rng, self.max_seq_length - 3, self.short_seq_prob, self.not_next):
                chunk.extend(pair)
                if len(chunk) >= PAIR_WIDTH * 65536:
                    chunk.tofile(file)
                    chunk = array.array("i")
            chunk.tofile(file)
            file.flush()
            n = file.tell() // (PAIR_WIDTH * chunk.itemsize)
            table = (
                np.memmap(file, dtype=np.int32, mode="r", shape=(n, PAIR_WIDTH))
                if n
                else np.zeros((0, PAIR_WIDTH), np.int32)
            )
            release = getattr(self.view, "release", None)
            if release is not None:
                release()  # the walk touched every offset: let them go
            self._index = (epoch, table, file)
        return self._index[1]

    def drawn(self, step: int) -> int:
        """The step whose pairs, order and masks step `step` repeats: itself with dynamic masks
        (mask_epochs 0); with static ones (mask_epochs N) the same step of epoch e mod N."""
        if not self.mask_epochs:
            return step
        epoch, i = divmod(step, self.batches_per_epoch)
        return (epoch % self.mask_epochs) * self.batches_per_epoch + i

    def global_indices(self, step: int) -> list[int]:
        """Pair indices of the whole global batch of step `step` (all ranks together)."""
        step = self.drawn(step)
        epoch = step // self.batches_per_epoch
        n = len(self.pairs(epoch))
        spe = steps_per_epoch(n, self.global_batch_size, self.drop_last)
        # an epoch holding fewer pairs than epoch 0 wraps around (its batches repeat a few pairs)
        return step_indices(
            n,
            self.global_batch_size,
            (epoch * spe) + step % self.batches_per_epoch % spe,
            self.seed,
            drop_last=self.drop_last,
            shuffle=self.shuffle,
        )

    def indices(self, step: int) -> list[int]:
        """Pair indices that this rank puts in the batch of global step `step`."""
        return self.global_indices(step)[self.rank * self.batch_size : (self.rank + 1) * self.batch_size]

    def batch(self, step: int) -> Batch:
        """The Batch of global step `step` for this rank: a pure function of (seed, step, rank)."""
        step = self.drawn(step)
        epoch, i = divmod(step, self.batches_per_epoch)
        table = self.pairs(epoch)
        everyone = self.global_indices(step)
        first = self.rank * self.batch_size
        rows = table[np.sort(everyone)]  # (G, PAIR_WIDTH) in file order
        # T: the global batch's longest pair, [CLS] A [SEP] B [SEP] after the cuts
        C = PairColumn
        kept = rows[:, C.A_HI] - rows[:, C.A_LO] + rows[:, C.B_HI] - rows[:, C.B_LO]  # (G,) tokens of A + B
        longest = int(kept.max()) + 3
        T = padded_length(longest, self.pad_to_multiple_of, self.max_seq_length)
        mine = everyone[first : first + self.batch_size]
        instances = [materialize(self.view, row) for row in table[mine].tolist()]
        release = getattr(self.view, "release", None)
        if release is not None and step % 256 == 0:
            release()  # resident memory stays flat over a long run
        gen = torch.Generator().manual_seed(mix_seed("mask", self.seed, epoch, i))
        return collate(
            instances,
            self.special,
            gen,
            max_seq_length=self.max_seq_length,
            mlm_probability=self.mlm_probability,
            max_predictions_per_seq=self.max_predictions_per_seq,
            whole_word=self.whole_word,
            length=T,
            rows=(first, self.global_batch_size),
            mix=self.mix,
        )
