"""Tests for lab/data/instances.py: NSP pairing, 80/10/10 masking, collate, step-addressable data.

Hermetic: every corpus is random ids built here (vocab 512, specials 0..4, text ids in [10, 500)).
Statistical checks run over thousands of tokens with fixed seeds, so they are deterministic.
"""

import random

import numpy as np
import pytest
import torch

import lab
from lab.data.batch import IGNORE_INDEX, Batch
from lab.data.instances import (
    Instance,
    ListView,
    Pair,
    PairColumn,
    PretrainingData,
    SpecialIds,
    collate,
    create_instances,
    instance_stats,
    mask_tokens,
    materialize,
)

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
V = 512
SUBWORD_FROM = 300  # in these tests, ids >= 300 play the role of "##" continuation pieces


def make_special(**kw) -> SpecialIds:
    return SpecialIds(pad_id=PAD, cls_id=CLS, sep_id=SEP, mask_id=MASK, vocab_size=V, unk_id=UNK, **kw)


def make_docs(n_docs=50, sentences=(5, 30), sent_len=(3, 20), seed=1):
    rng = random.Random(seed)
    return [
        [[rng.randrange(10, 500) for _ in range(rng.randint(*sent_len))] for _ in range(rng.randint(*sentences))]
        for _ in range(n_docs)
    ]


@pytest.fixture(scope="module")
def special():
    return make_special()


@pytest.fixture(scope="module")
def docs():
    return make_docs()


@pytest.fixture(scope="module")
def instances(docs, special):
    return create_instances(docs, special, max_seq_length=128, dupe_factor=20, seed=0)  # ~3,000


def flat(sentences):
    return [t for s in sentences for t in s]


def is_sublist(part, whole):
    n = len(part)
    return any(whole[i : i + n] == part for i in range(len(whole) - n + 1))


# ------------------------------------------------------------------------------------------------
# create_instances
# ------------------------------------------------------------------------------------------------


def test_nsp_fraction_is_half_on_long_documents(special):
    # Long documents: few one-sentence chunks (which are always NotNext), so the coin shows.
    docs = make_docs(n_docs=50, sentences=(100, 200), sent_len=(3, 8), seed=2)
    insts = create_instances(docs, special, max_seq_length=128, dupe_factor=12, seed=0)
    stats = instance_stats(insts)
    assert stats["num_instances"] >= 5000
    assert abs(stats["frac_not_next"] - 0.5) <= 0.03, stats


def test_nsp_coin_is_fair_where_the_choice_is_free(docs, instances):
    # A chunk of one sentence has no continuation: it is NotNext by force. That happens exactly
    # when A is one sentence that is the document's last or alone reaches the target length.
    def forced(inst):
        a0, a1 = inst.sentences_a
        doc = docs[inst.doc_a]
        return a1 - a0 == 1 and (a0 == len(doc) - 1 or len(doc[a0]) >= inst.target_length)

    assert len(instances) >= 2000
    assert all(inst.is_random_next for inst in instances if forced(inst))
    free = [inst for inst in instances if not forced(inst)]
    assert len(free) >= 2000
    frac = sum(inst.is_random_next for inst in free) / len(free)
    assert abs(frac - 0.5) <= 0.03, frac
    # Short documents, as here, therefore show a few points more NotNext than 50% overall.
    assert 0.5 < instance_stats(instances)["frac_not_next"] < 0.6


def test_segments_come_from_the_right_documents(docs, instances):
    n_trunc_front = n_trunc_back = 0
    for inst in instances:
        a0, a1 = inst.sentences_a
        b0, b1 = inst.sentences_b
        source_a = flat(docs[inst.doc_a][a0:a1])
        source_b = flat(docs[inst.doc_b][b0:b1])
        # Truncation only removes tokens at the ends: each segment is a contiguous piece.
        assert len(inst.tokens_a) >= 1 and len(inst.tokens_b) >= 1
        assert is_sublist(inst.tokens_a, source_a)
        assert is_sublist(inst.tokens_b, source_b)
        n_trunc_front += source_a[0] != inst.tokens_a[0]
        n_trunc_back += source_a[-1] != inst.tokens_a[-1]
        if inst.is_random_next:
            assert inst.doc_b != inst.doc_a
        else:
            # IsNext: B is the sentences right after A in the same document.
            assert inst.doc_b == inst.doc_a
            assert b0 == a1 and b1 > b0
    assert n_trunc_front > 0 and n_trunc_back > 0  # both ends get truncated (50/50)


def test_lengths_and_short_instances(instances):
    max_seq_length = 128
    assert all(inst.num_tokens <= max_seq_length for inst in instances)
    assert max(inst.num_tokens for inst in instances) == max_seq_length  # full sequences exist
    stats = instance_stats(instances)
    assert abs(stats["frac_short"] - 0.10) <= 0.02, stats
    short = [inst for inst in instances if inst.is_short]
    assert all(2 <= inst.target_length <= max_seq_length - 3 for inst in short)
    assert all(inst.target_length == max_seq_length - 3 for inst in instances if not inst.is_short)
    long_mean = sum(i.num_tokens for i in instances if not i.is_short) / (len(instances) - len(short))
    assert sum(i.num_tokens for i in short) / len(short) < long_mean


def test_every_sentence_used_once_per_pass(docs, special):
    # The "put back" rule: unused sentences of a NotNext chunk start the next chunk, so one pass
    # over a document uses each sentence exactly once as its own text (A, or IsNext B).
    insts = create_instances(docs, special, max_seq_length=64, seed=5)
    used = {d: [] for d in range(len(docs))}
    for inst in insts:
        used[inst.doc_a].extend(range(*inst.sentences_a))
        if not inst.is_random_next:
            used[inst.doc_b].extend(range(*inst.sentences_b))
    for d, doc in enumerate(docs):
        assert sorted(used[d]) == list(range(len(doc)))


def test_seeded_and_dupe_factor(docs, special):
    one = create_instances(docs, special, seed=7)
    assert create_instances(docs, special, seed=7) == one
    assert create_instances(docs, special, seed=8) != one
    two = create_instances(docs, special, seed=7, dupe_factor=2)
    assert two[: len(one)] == one  # the first pass is the same...
    assert two[len(one) :] != one  # ...the second draws new chunks and partners


def test_empty_sentences_and_documents_are_skipped(special):
    docs = [[], [[10, 11], [], [12, 13, 14]], [[]], [[20, 21, 22], [23, 24]]]
    insts = create_instances(docs, special, max_seq_length=16, dupe_factor=5)
    assert insts
    assert {inst.doc_a for inst in insts} == {1, 3}  # original indices are kept
    assert all(inst.tokens_a and inst.tokens_b for inst in insts)


def test_errors(special):
    with pytest.raises(ValueError, match="at least 2 non-empty documents"):
        create_instances([[[10, 11], [12, 13]]], special)
    with pytest.raises(ValueError, match="at least 2 non-empty documents"):
        create_instances([[[10, 11], [12, 13]], [[]], []], special)
    with pytest.raises(ValueError, match="max_seq_length=7 is too small"):
        create_instances(make_docs(3), special, max_seq_length=7)
    with pytest.raises(ValueError, match="special ids"):
        create_instances([[[10, CLS]], [[11, 12]]], special)


# ------------------------------------------------------------------------------------------------
# mask_tokens
# ------------------------------------------------------------------------------------------------


def random_rows(n_rows=600, T=256, seed=0):
    """[CLS] text... [SEP] [PAD]... rows of random lengths, including an all-special row."""
    rng = random.Random(seed)
    ids = torch.full((n_rows, T), PAD, dtype=torch.long)
    for r in range(n_rows):
        n = 0 if r == 0 else rng.randint(1, T - 2)
        ids[r, : n + 2] = torch.tensor([CLS] + [rng.randrange(10, 500) for _ in range(n)] + [SEP])
    special_mask = (ids == PAD) | (ids == CLS) | (ids == SEP)
    return ids, special_mask


def test_mask_counts_positions_and_labels(special):
    ids, special_mask = random_rows()
    masked, labels = mask_tokens(ids, special_mask, special, torch.Generator().manual_seed(0))
    chosen = labels != IGNORE_INDEX
    n = (~special_mask).sum(1)
    expected = [0 if v == 0 else min(20, max(1, round(0.15 * v))) for v in n.tolist()]
    assert chosen.sum(1).tolist() == expected  # a fixed count per row, capped at 20
    assert 20 in expected and any(0 < e < 20 for e in expected)  # both regimes were exercised
    assert not (chosen & special_mask).any()  # never [CLS], [SEP] or [PAD]
    assert torch.equal(labels[chosen], ids[chosen])  # label = original id where chosen
    assert torch.equal(masked[~chosen], ids[~chosen])  # nothing else changes
    # special_tokens_mask=None derives the same mask from the ids.
    again = mask_tokens(ids, None, special, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], masked) and torch.equal(again[1], labels)


def test_80_10_10(special):
    ids, special_mask = random_rows()
    masked, labels = mask_tokens(ids, special_mask, special, torch.Generator().manual_seed(1))
    chosen = labels != IGNORE_INDEX
    total = int(chosen.sum())
    assert total >= 5000
    out, orig = masked[chosen], ids[chosen]
    frac_mask = (out == MASK).float().mean().item()
    frac_kept = (out == orig).float().mean().item()
    is_random = (out != MASK) & (out != orig)
    frac_random = is_random.float().mean().item()
    assert abs(frac_mask - 0.8) <= 0.02, frac_mask
    assert abs(frac_random - 0.1) <= 0.02, frac_random
    assert abs(frac_kept - 0.1) <= 0.02, frac_kept
    # Random replacements come from the whole vocabulary minus the special ids.
    random_ids = out[is_random]
    assert random_ids.min() >= 5 and random_ids.max() < V
    assert ((random_ids < 10) | (random_ids >= 500)).any()  # not just ids seen in the text


def test_mask_is_reproducible(special):
    ids, special_mask = random_rows(n_rows=50)
    a = mask_tokens(ids, special_mask, special, torch.Generator().manual_seed(3))
    b = mask_tokens(ids, special_mask, special, torch.Generator().manual_seed(3))
    c = mask_tokens(ids, special_mask, special, torch.Generator().manual_seed(4))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1])


def test_whole_word_masking():
    special = make_special(is_subword=lambda i: i >= SUBWORD_FROM)
    ids, special_mask = random_rows(n_rows=300, T=128)
    masked, labels = mask_tokens(ids, special_mask, special, torch.Generator().manual_seed(0), whole_word=True)
    chosen = labels != IGNORE_INDEX
    assert not (chosen & special_mask).any()
    n_multi = n_exact = 0
    for r in range(ids.shape[0]):
        row, maskable = ids[r].tolist(), (~special_mask[r]).tolist()
        # Words: a maskable token plus the ## pieces that follow it.
        words = []
        for t, (tok, ok) in enumerate(zip(row, maskable)):
            if not ok:
                continue
            if tok >= SUBWORD_FROM and t > 0 and maskable[t - 1]:
                words[-1].append(t)
            else:
                words.append([t])
        for w in words:
            picks = {bool(chosen[r, t]) for t in w}
            assert len(picks) == 1, (r, w)  # all pieces of a word, or none
            n_multi += len(w) > 1 and picks == {True}
        k = min(20, max(1, round(0.15 * sum(maskable)))) if any(maskable) else 0
        assert int(chosen[r].sum()) <= k
        n_exact += int(chosen[r].sum()) == k
    assert n_multi > 50  # multi-piece words were chosen whole
    assert n_exact >= 0.9 * ids.shape[0]  # a word that would overshoot is skipped, rarely


def test_whole_word_needs_subword_info(special):
    ids, special_mask = random_rows(n_rows=4, T=32)
    with pytest.raises(ValueError, match="is_subword"):
        mask_tokens(ids, special_mask, special, torch.Generator(), whole_word=True)


def test_special_ids_from_vocab():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "un", "##believ", "##able"]
    sp = SpecialIds.from_vocab(vocab)
    assert (sp.pad_id, sp.unk_id, sp.cls_id, sp.sep_id, sp.mask_id, sp.vocab_size) == (0, 1, 2, 3, 4, 9)
    assert sp.subword_table().tolist() == [False] * 7 + [True, True]
    assert sp.replacement_ids().tolist() == [5, 6, 7, 8]


# ------------------------------------------------------------------------------------------------
# collate and Batch
# ------------------------------------------------------------------------------------------------


def test_collate_layout(instances, special):
    insts = instances[:64]
    batch = collate(insts, special, torch.Generator().manual_seed(0), max_seq_length=128)
    B, T = batch.input_ids.shape
    assert B == len(batch) == 64 and T % 8 == 0 and T <= 128
    assert batch.nsp_label.tolist() == [int(i.is_random_next) for i in insts]
    original = torch.where(batch.mlm_labels != IGNORE_INDEX, batch.mlm_labels, batch.input_ids)
    for r, inst in enumerate(insts):
        a, b = len(inst.tokens_a), len(inst.tokens_b)
        seq = [CLS, *inst.tokens_a, SEP, *inst.tokens_b, SEP]
        assert original[r].tolist() == seq + [PAD] * (T - len(seq))
        assert batch.token_type_ids[r].tolist() == [0] * (a + 2) + [1] * (b + 1) + [0] * (T - len(seq))
        assert batch.attention_mask[r].tolist() == [1] * len(seq) + [0] * (T - len(seq))
    assert batch.num_tokens == sum(i.num_tokens for i in insts)
    assert int((batch.mlm_labels != IGNORE_INDEX).sum()) > 0


def test_collate_padding_rules(special):
    inst = Instance(tokens_a=list(range(10, 70)), tokens_b=list(range(100, 163)), is_random_next=False)
    assert inst.num_tokens == 126
    g = torch.Generator().manual_seed(0)
    assert collate([inst], special, g).input_ids.shape == (1, 128)  # rounded up to a multiple of 8
    assert collate([inst], special, g, max_seq_length=126).input_ids.shape == (1, 126)  # capped
    assert collate([inst], special, g, pad_to_multiple_of=None).input_ids.shape == (1, 126)
    with pytest.raises(ValueError, match="max_seq_length=120"):
        collate([inst], special, g, max_seq_length=120)


def test_batch_as_model_kwargs(instances, special):
    batch = collate(instances[:4], special, torch.Generator().manual_seed(0))

    def model(input_ids, token_type_ids, attention_mask, mlm_labels, nsp_label):
        return input_ids.shape, nsp_label.shape

    assert model(**batch.as_dict()) == model(**batch) == ((4, batch.input_ids.shape[1]), (4,))
    moved = batch.to("cpu")
    assert isinstance(moved, Batch) and all(torch.equal(moved[k], batch[k]) for k in batch.keys())


# ------------------------------------------------------------------------------------------------
# PretrainingData
# ------------------------------------------------------------------------------------------------


def assert_same_batch(x: Batch, y: Batch):
    assert all(torch.equal(x[k], y[k]) for k in x.keys())


@pytest.fixture(scope="module")
def view(docs):
    return ListView(docs)


def test_batch_of_step_is_deterministic(view, special):
    data = PretrainingData(view, special, batch_size=16, seed=3)
    first = data.batch(5)
    data.batch(0), data.batch(data.batches_per_epoch + 2)  # unrelated work in between
    assert_same_batch(first, data.batch(5))
    assert_same_batch(first, PretrainingData(view, special, batch_size=16, seed=3).batch(5))
    assert not torch.equal(first.input_ids, data.batch(6).input_ids)


def test_ranks_split_the_global_batch(view, special):
    b = 8
    single = PretrainingData(view, special, batch_size=2 * b, seed=1)
    ranks = [PretrainingData(view, special, batch_size=b, seed=1, rank=r, world_size=2) for r in range(2)]
    assert ranks[0].batches_per_epoch == single.batches_per_epoch
    for step in (0, 1, 7, single.batches_per_epoch, 3 * single.batches_per_epoch + 5):
        parts = [rk.indices(step) for rk in ranks]
        assert not set(parts[0]) & set(parts[1])  # disjoint
        assert parts[0] + parts[1] == single.global_indices(step)  # together: the single-process batch
        assert [len(rk.batch(step)) for rk in ranks] == [b, b]
        # the same tokens AND the same masks as the single process
        whole = single.batch(step).as_dict()
        halves = [rk.batch(step).as_dict() for rk in ranks]
        for key, value in whole.items():
            assert torch.equal(torch.cat([halves[0][key], halves[1][key]]), value), key


def test_epochs_re_pair_reshuffle_and_remask(view, special):
    data = PretrainingData(view, special, batch_size=32, seed=0)
    t0 = np.array(data.pairs(0))
    t1 = np.array(data.pairs(1))
    assert t0.shape[1] == t1.shape[1] == 13 and not np.array_equal(t0, t1)  # new NSP partners and cuts
    bpe = data.batches_per_epoch
    assert sorted(data.global_indices(0) + [i for s in range(1, bpe) for i in data.global_indices(s)]) == sorted(
        set(i for s in range(bpe) for i in data.global_indices(s))
    )  # an epoch visits pairs once
    # Dynamic masking: the same pairs (shuffle=False) get new masks in a new epoch, so epoch 1's
    # first batch differs from epoch 0's even where the pairs coincide
    fixed = PretrainingData(view, special, batch_size=32, seed=0, shuffle=False)
    assert fixed.indices(0) == fixed.indices(fixed.batches_per_epoch) == list(range(32))
    assert not torch.equal(fixed.batch(0).mlm_labels, fixed.batch(fixed.batches_per_epoch).mlm_labels)


def test_pair_table_columns_are_named_by_pair_fields(view, special):
    """The pair table's columns are Pair's fields in order; PairColumn names them."""
    data = PretrainingData(view, special, batch_size=32, seed=0)
    table = np.array(data.pairs(0))
    assert [c.name.lower() for c in PairColumn] == list(Pair._fields) and table.shape[1] == len(Pair._fields)
    for row in table[:50].tolist():
        pair, inst = Pair(*row), materialize(view, row)
        assert len(inst.tokens_a) == row[PairColumn.A_HI] - row[PairColumn.A_LO] == pair.a_hi - pair.a_lo
        assert len(inst.tokens_b) == pair.b_hi - pair.b_lo and inst.is_random_next == bool(pair.is_random_next)
        assert (inst.doc_a, inst.doc_b) == (row[PairColumn.DOC_A], row[PairColumn.DOC_B])


def test_statistics_match_the_in_memory_instances(docs, view, special):
    """One pairing implementation: an epoch of the lazy stream has the statistics of
    create_instances (NotNext share, lengths, short share) and every batch masks 15%, 80/10/10."""
    eager = instance_stats(create_instances(docs, special, max_seq_length=128, dupe_factor=10, seed=0))
    data = PretrainingData(view, special, batch_size=16, seed=0)
    lazy = []
    for e in range(10):
        lazy += [materialize(view, tuple(row)) for row in data.pairs(e).tolist()]
    lazy = instance_stats(lazy)
    for key, tol in (("frac_not_next", 0.03), ("frac_short", 0.02), ("mean_length", 2.0)):
        assert lazy[key] == pytest.approx(eager[key], abs=tol), key
    assert lazy["max_length"] <= 128
    labels, inputs = [], []
    for step in range(40):
        b = data.batch(step)
        labels.append(b.mlm_labels[b.mlm_labels != IGNORE_INDEX])
        inputs.append(b.input_ids[b.mlm_labels != IGNORE_INDEX])
        maskable = (b.attention_mask == 1).sum(1) - 3
        assert torch.all((b.mlm_labels != IGNORE_INDEX).sum(1) == (maskable * 0.15).round().clamp(1, 20))
    labels, inputs = torch.cat(labels), torch.cat(inputs)
    frac_mask = (inputs == MASK).float().mean().item()
    frac_keep = (inputs == labels).float().mean().item()
    assert frac_mask == pytest.approx(0.8, abs=0.03) and frac_keep == pytest.approx(0.1, abs=0.02)


def test_a_prepared_corpus_serves_the_same_stream(tmp_path, special):
    """The memory-mapped view gives the same pairs and batches as the same documents in memory."""
    from lab.data.prepare import PreparedCorpus, prepare

    words = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "away", "it", "was", "warm", "cold"]
    rng = random.Random(0)
    # Google's format: one sentence per line, a blank line between documents
    text = "\n\n".join(
        "\n".join(
            " ".join(rng.choice(words) for _ in range(rng.randint(4, 12))).capitalize() + "."
            for _ in range(rng.randint(3, 9))
        )
        for _ in range(12)
    )
    (tmp_path / "c.txt").write_text(text + "\n")
    tok = lab.Tokenizer({t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *words])})
    folder = prepare(tmp_path / "c.txt", tok, tmp_path / "prep", workers=2, progress=False, log=lambda *_: None)
    corpus = PreparedCorpus(folder)
    docs = [corpus.document(d) for d in range(corpus.num_documents)]
    assert corpus.num_documents == 12 and corpus.token_ids.dtype == np.uint16
    sp = SpecialIds.from_vocab(tok.vocab)
    a = PretrainingData(corpus, sp, batch_size=4, seed=0, max_seq_length=32)
    b = PretrainingData(ListView(docs), sp, batch_size=4, seed=0, max_seq_length=32)
    for step in (0, 3, a.batches_per_epoch + 1):
        assert_same_batch(a.batch(step), b.batch(step))
    train, held = PreparedCorpus(folder, "train", held_out=2), PreparedCorpus(folder, "held-out", held_out=2)
    assert train.num_documents == 10 and held.num_documents == 2
    assert sorted(train.documents.tolist() + held.documents.tolist()) == list(range(12))


def test_drop_last_and_wrap_around(special):
    tiny = ListView([[[10 + d]] for d in range(10)])  # 10 one-sentence documents: 10 pairs
    assert PretrainingData(tiny, special, batch_size=4).batches_per_epoch == 2
    keep = PretrainingData(tiny, special, batch_size=4, drop_last=False, shuffle=False)
    assert keep.batches_per_epoch == 3
    assert keep.indices(2) == [8, 9, 0, 1]  # the last batch is filled from the epoch's start
    with pytest.raises(ValueError, match="do not fill one global batch"):
        PretrainingData(tiny, special, batch_size=8, world_size=2)


def test_batch_is_a_pure_function_of_the_step(view, special):
    """What resuming relies on: a new PretrainingData with the same settings rebuilds any step."""
    data = PretrainingData(view, special, batch_size=16, seed=2)
    again = PretrainingData(view, special, batch_size=16, seed=2)
    for step in (0, 3, data.batches_per_epoch + 1):
        assert_same_batch(again.batch(step), data.batch(step))
