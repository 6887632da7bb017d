"""Documents -> pre-training examples: NSP sentence pairs, 80/10/10 masking, named batches.

    documents : list[list[list[int]]]                        documents -> sentences -> token ids
    create_instances(documents, special)  -> list[Instance]   (segment A, segment B, IsNext?)
    collate(instances, special, gen)      -> Batch            ([CLS] A [SEP] B [SEP], masked)
    PretrainingData(view, special, batch_size).batch(step) -> Batch   (dynamic masking)

The module sits between the tokenizer and the model (`text -> tokenizer -> ids -> instances ->
Batch -> model`) and only ever sees token ids. The pairing follows Google's
`create_pretraining_data.py`, the masking the paper (lab.data.masking: 15% of the tokens, 80%
[MASK] / 10% random / 10% unchanged); a worked example stands beside each step.
"""

from __future__ import annotations

import array
import random
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple, Protocol

import numpy as np
import torch

from lab.data.batch import Batch, mix_seed, padded_length, step_indices, steps_per_epoch
from lab.data.masking import (  # (SpecialIds and mask_tokens are imported from here too)
    MIX_80_10_10,
    SpecialIds,
    check_mix,
    mask_tokens,
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
    lengths_of, d: int, num_docs: int, max_num_tokens: int, short_seq_prob: float, rng: random.Random, not_next=0.5
) -> list[Pair]:
    """Walk document d's sentences and cut them into (A, B) pairs: the recipes, from sentence
    lengths alone (lengths_of(doc) -> token count of each sentence; no sentence is empty).

    Google's create_pretraining_data.py: sentences are collected into a chunk until it reaches
    the target length; A = the first k sentences of the chunk (k random), B = the rest of the
    chunk (IsNext) or, half the time (`not_next`; 0: no NSP), text from a random other document
    (NotNext), and the chunk's unused sentences are "put back" for a later pair. The longer segment
    is then cut to fit (`truncation`). One rng drives it all, in Google's order of draws, so a pass
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
