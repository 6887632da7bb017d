"""Build it yourself, part 3: the pre-training data, the loss and the optimizer (BERT Section 3.1,
Appendix A.1-A.2). Four exercises, each with its reference solution, its checker and its stub:

    masking           mask_tokens(input_ids, special_ids, vocab_size, mask_id, generator) -> (masked, labels)
    nsp_pairs         nsp_pairs(documents, rng) -> [(sentence_a, sentence_b, label), ...]
    pretraining_loss  pretraining_loss(mlm_logits, mlm_labels, nsp_logits, nsp_labels) -> scalar tensor
    adamw             class AdamW(torch.optim.Optimizer) with a step() to write

    from lab import exercises
    exercises.check("masking", mask_tokens)

Random pieces (masking, NSP pairs) are checked statistically over many draws from a fixed
sequence of seeds, so the reference always passes and a wrong rule fails every time; the loss is
compared with lab.model.BertForPreTraining's own loss on the same logits, AdamW with
torch.optim.AdamW over 100 steps. When the answer differs, the checker computes the quantities
that tell the typical mistakes apart (counts per sequence, where the labels are, the 80/10/10
split, which document segment B came from, the loss each mistake would give, the trajectory each
wrong optimizer would follow) and names the most likely one.

The `show_*` functions are the notebook's demonstrations: they run the student's code on real
text and say "not implemented yet" instead of failing while a stub is still a stub.
"""

from __future__ import annotations

import copy
import math
import random
from collections import Counter

import torch
import torch.nn.functional as F
from torch import nn

from . import core
from .core import Fail

P_ALARM = 1e-6  # p-value below which a statistical test fails (the reference, on fixed seeds, sits far above)


def _upper_tail(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


# ==============================================================================================
# 1. masking: 15% of the tokens, a fixed count per sequence, 80% [MASK] / 10% random / 10% kept
# ==============================================================================================


def mask_tokens(input_ids, special_ids, vocab_size, mask_id, generator, mlm_probability=0.15, max_predictions=20):
    """BERT's masked-LM corruption of a batch (reference solution; see the stub for the contract)."""
    B, T = input_ids.shape
    specials = torch.tensor(sorted(set(special_ids)), dtype=torch.long)
    maskable = ~torch.isin(input_ids, specials)  # (B, T) True where a token may be chosen

    # 1. A fixed number k of positions per row, uniformly among its maskable ones: the k highest
    #    random scores win (non-maskable positions score -1, so they never do).
    #    e.g. n = 13 maskable tokens -> k = round(0.15 * 13) = round(1.95) = 2
    scores = torch.rand(B, T, generator=generator).masked_fill(~maskable, -1.0)  # (B, T)
    chosen = torch.zeros(B, T, dtype=torch.bool)  # (B, T)
    for b in range(B):
        n = int(maskable[b].sum())
        k = min(max_predictions, max(1, round(mlm_probability * n))) if n > 0 else 0
        chosen[b, scores[b].topk(k).indices] = True

    # 2. Labels: the ORIGINAL id where chosen, -100 (ignored by the loss) everywhere else.
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))  # (B, T)

    # 3. One die per token: [0, 0.8) -> [MASK], [0.8, 0.9) -> a random real id, [0.9, 1) -> unchanged.
    dice = torch.rand(B, T, generator=generator)  # (B, T)
    allowed = torch.ones(vocab_size, dtype=torch.bool)
    allowed[specials] = False
    candidates = allowed.nonzero().squeeze(1)  # the ids a random replacement may be
    random_ids = candidates[torch.randint(len(candidates), (B, T), generator=generator)]  # (B, T)
    masked = input_ids.clone()
    masked[chosen & (dice < 0.8)] = mask_id
    to_random = chosen & (dice >= 0.8) & (dice < 0.9)
    masked[to_random] = random_ids[to_random]
    return masked, labels


# The checker's vocabulary: laid out like bert-base-uncased's ([PAD] 0, specials at 100-103).
_V, _PAD, _UNK, _CLS, _SEP, _MASK = 130, 0, 100, 101, 102, 103
_SPECIALS = (_PAD, _UNK, _CLS, _SEP, _MASK)
_NAMES = {_PAD: "[PAD]", _UNK: "[UNK]", _CLS: "[CLS]", _SEP: "[SEP]", _MASK: "[MASK]"}
_WORDS = [i for i in range(_V) if i not in _SPECIALS]  # the 125 ids a random replacement may be


def _masking_batch(ns: list[int], seed: int, T: int | None = None) -> torch.Tensor:
    """Rows [CLS] A [SEP] B [SEP] [PAD]... with n[i] word tokens each (n = 1: [CLS] w [SEP])."""
    rng = random.Random(seed)
    rows = []
    for n in ns:
        words = [rng.choice(_WORDS) for _ in range(n)]
        if n == 1:
            rows.append([_CLS, words[0], _SEP])
        else:
            cut = rng.randint(1, n - 1)
            rows.append([_CLS] + words[:cut] + [_SEP] + words[cut:] + [_SEP])
    T = T or max(len(r) for r in rows)
    return torch.tensor([r + [_PAD] * (T - len(r)) for r in rows], dtype=torch.long)


def _allowed_counts(n: int, p: float, cap: int) -> set[int]:
    """The counts Google's rule allows for n maskable tokens: round(p * n) (either way on a tie,
    float rounding differs between Python and torch), at least 1, at most cap; 0 when n = 0."""
    if n == 0:
        return {0}
    x = p * n
    near = {v for v in (math.floor(x), math.ceil(x)) if abs(v - x) <= 0.5 + 1e-6}
    return {min(cap, max(1, v)) for v in near}


def _call_masking(student, ids, seed, p, cap):
    gen = torch.Generator().manual_seed(seed)
    given = ids.clone()
    out = core.call(
        student,
        given,
        list(_SPECIALS),
        _V,
        _MASK,
        gen,
        mlm_probability=p,
        max_predictions=cap,
        what="your mask_tokens(input_ids, special_ids, vocab_size, mask_id, generator)",
    )
    if not (isinstance(out, tuple | list) and len(out) == 2 and all(torch.is_tensor(x) for x in out)):
        raise Fail(
            f"mask_tokens should return a pair of tensors (masked_ids, labels); it returned {type(out).__name__}.",
            returned=core._short(out),
        )
    masked, labels = out
    for name, x in (("masked_ids", masked), ("labels", labels)):
        if tuple(x.shape) != tuple(ids.shape):
            raise Fail(
                f"{name} has shape {tuple(x.shape)}; it should be [B, T] = {tuple(ids.shape)} like input_ids.",
                input_ids=ids.tolist(),
            )
    if not torch.equal(given, ids):
        raise Fail(
            "Your function changed input_ids itself (in place). Work on a copy (masked = input_ids.clone()): "
            "the caller still needs the original ids, and the labels must hold them.",
            input_ids=ids.tolist(),
            after_your_call=given.tolist(),
        )
    return masked.long(), labels.long()


def _inspect_masking(ids, masked, labels, case: str) -> torch.Tensor:
    """Check one output for the rules that hold in every draw; return the chosen positions."""
    chosen = labels != -100  # (B, T)
    special = torch.isin(ids, torch.tensor(_SPECIALS))  # (B, T)
    details = dict(case=case, input_ids=ids.tolist(), your_masked_ids=masked.tolist(), your_labels=labels.tolist())
    share = chosen.float().mean().item()
    if share > 0.5:
        raise Fail(
            f"Your labels are set at {_pct(share)} of all positions ({case}). Labels must be -100 everywhere "
            "except at the ~15% chosen positions: the loss is computed only where a token was chosen, and "
            "-100 tells cross_entropy to ignore a position.",
            **details,
        )
    wrong = chosen & (labels != ids)
    if wrong.any():
        b, t = wrong.nonzero()[0].tolist()
        like_masked = (labels[chosen] == masked[chosen]).float().mean().item()
        cause = (
            "your labels hold the REPLACED token ([MASK] or the random id), not the original: take the labels "
            "from input_ids before you corrupt them (the model must learn to recover the original word)"
            if like_masked > 0.9
            else "labels must hold the original input id at each chosen position"
        )
        raise Fail(
            f"At row {b}, position {t} ({case}) the label is {int(labels[b, t])} but the original token is "
            f"{int(ids[b, t])}: {cause}.",
            **details,
        )
    changed = masked != ids
    stray = changed & ~chosen
    if stray.any():
        b, t = stray.nonzero()[0].tolist()
        raise Fail(
            f"{int(stray.sum())} tokens were replaced at positions that have no label (first: row {b}, position "
            f"{t}, {int(ids[b, t])} -> {int(masked[b, t])}; {case}). Replace tokens only at the chosen positions, "
            "the ones whose label you set: choose once and use that choice for both (two separate random draws "
            "choose two different sets).",
            **details,
        )
    bad = chosen & special
    if bad.any():
        kinds = Counter(_NAMES[int(i)] for i in ids[bad])
        which = ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items()))
        raise Fail(
            f"Special tokens were chosen for prediction ({which}; {case}). [CLS], [SEP] and [PAD] are never "
            "chosen: pick only among positions whose id is not in special_ids, and count only those in n.",
            **details,
        )
    out_of_vocab = (masked < 0) | (masked >= _V)
    if out_of_vocab.any():
        raise Fail(
            f"Some replaced ids lie outside the vocabulary [0, {_V}) (e.g. {int(masked[out_of_vocab][0])}; {case}).",
            **details,
        )
    drawn = chosen & changed & (masked != _MASK)  # random replacements
    if torch.isin(masked[drawn], torch.tensor(_SPECIALS)).any():
        kinds = Counter(_NAMES[int(i)] for i in masked[drawn] if int(i) in _NAMES)
        which = ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items()))
        raise Fail(
            f"Random replacements include special tokens ({which}; {case}). Draw the random token from the ids "
            "that are NOT in special_ids: a [PAD] or [CLS] in the middle of a sentence is not a 'random word' "
            "(torch.randint over the whole vocabulary draws them too).",
            **details,
        )
    return chosen


def _count_diagnosis(ns, ks_per_row, p, cap, ids, case):
    """Raise Fail with the likely cause when the counts per row do not follow the fixed-count rule."""
    lengths = (ids != _PAD).sum(1).tolist()  # with [CLS]/[SEP]
    T = ids.shape[1]
    if all(set(ks) == {n} for n, ks in zip(ns, ks_per_row)) and max(ns) > 1:
        raise Fail(
            f"Every non-special position has a label ({case}): the labels must be -100 everywhere except at the "
            "~15% chosen positions (the loss is computed only there); keep the original id only where a token "
            "was chosen.",
            case=case,
            maskable_tokens=ns,
        )
    varying = [r for r, ks in enumerate(ks_per_row) if len(set(ks)) > 1]
    if varying:  # show the row whose count varies most
        r = max(varying, key=lambda r: max(ks_per_row[r]) - min(ks_per_row[r]))
        n, ks = ns[r], ks_per_row[r]
        expected = " or ".join(str(a) for a in sorted(_allowed_counts(n, p, cap)))
        raise Fail(
            f"The number of chosen tokens varies from draw to draw: the row with {n} maskable tokens got between "
            f"{min(ks)} and {max(ks)} over {len(ks)} draws ({case}), where Google's rule always takes "
            f"{expected}. You flip a {_pct(p)} coin per token; create_pretraining_data.py takes a FIXED count "
            f"k = min(max_predictions, max(1, round({p} * n))) per sequence and picks k positions at random "
            "(e.g. the k largest of n random scores).",
            case=case,
            row=r,
            maskable_tokens=n,
            your_counts=sorted(Counter(ks).items()),
            expected=expected,
        )
    for r, (n, ks) in enumerate(zip(ns, ks_per_row)):
        allowed = _allowed_counts(n, p, cap)
        if set(ks) <= allowed:
            continue
        expected = " or ".join(str(a) for a in sorted(allowed))
        details = dict(case=case, row=r, maskable_tokens=n, your_counts=sorted(Counter(ks).items()), expected=expected)
        k = ks[0]
        if n * p > cap and k > cap:
            raise Fail(
                f"The row with {n} maskable tokens got {k} predictions, more than max_predictions={cap} ({case}): "
                f"cap the count, k = min(max_predictions, max(1, round({p} * n))).",
                **details,
            )
        if n >= 1 and k == 0:
            raise Fail(
                f"The row with {n} maskable token(s) got no prediction ({case}): round({p} * {n}) = 0, but every "
                "sequence predicts at least one token: k = max(1, round(p * n)).",
                **details,
            )
        if k in _allowed_counts(lengths[r], p, cap) or k in _allowed_counts(T, p, cap):
            raise Fail(
                f"The row with {n} maskable tokens got {k} predictions instead of {expected} ({case}): you count "
                f"[CLS]/[SEP]/[PAD] in n ({lengths[r]} tokens with [CLS]/[SEP], {T} with padding). Count only the "
                "positions that may be chosen.",
                **details,
            )
        if k in _allowed_counts(n, 0.15, 20) and (p, cap) != (0.15, 20):
            raise Fail(
                f"With mlm_probability={p} and max_predictions={cap}, the row with {n} maskable tokens should get "
                f"{expected} predictions; yours got {k}, what 0.15 and 20 give ({case}): use the arguments, not "
                "fixed numbers.",
                **details,
            )
        raise Fail(
            f"The row with {n} maskable tokens got {k} predictions; it should get {expected} = "
            f"min(max_predictions, max(1, round({p} * {n}))) ({case}).",
            **details,
        )


_SPLIT_PATTERNS = {  # (mask, random, kept) shares -> the likely cause
    (1.0, 0.0, 0.0): "every chosen token became [MASK]; 10% should become a random token and 10% stay unchanged",
    (0.1, 0.8, 0.1): "[MASK] and random are swapped (10% [MASK], 80% random): [0, 0.8) of the die is [MASK]",
    (0.1, 0.1, 0.8): "[MASK] and unchanged are swapped (10% [MASK], 80% kept): [0, 0.8) of the die is [MASK]",
    (0.8, 0.0, 0.2): "no token became a random word: 10% of the chosen tokens should",
    (0.8, 0.2, 0.0): "no chosen token stayed unchanged: 10% should keep their word",
    (0.8, 0.02, 0.18): "the random share was drawn as 10% of the tokens left after [MASK] (0.1 x 0.2 = 2%): of "
    "those 20%, HALF become random",
    (0.72, 0.18, 0.1): "the random share was drawn as 20% of all chosen tokens, then [MASK] applied to 90% of "
    "the rest: draw ONE die per token and split it [0, 0.8) / [0.8, 0.9) / [0.9, 1)",
}


def check_masking(student, seed: int = 0, draws: int = 300):
    """Check mask_tokens (BERT's 80/10/10 masked-LM corruption), statistically.

    Inputs: a padded batch of 8 sequences with 1, 2, 7, 10, 13, 20, 40 and 150 maskable tokens (the
    last over the cap of 20), called `draws` times with generators seeded seed, seed+1, ...; then a
    batch of one single-token sequence and a batch with mlm_probability=0.3, max_predictions=5.
    Every draw must: leave input_ids unchanged, label only chosen positions (with the ORIGINAL id,
    -100 elsewhere), change only chosen positions, never choose [CLS]/[SEP]/[PAD], never draw a
    special id as a random token. Exact bounds: each row's count is
    min(max_predictions, max(1, round(p * n))) in EVERY draw. Statistics (each fails below
    p = P_ALARM = 1e-6): every maskable position of the 40-token row is chosen at least once
    (uniform choice); the first two chosen tokens of a row share their fate no more often than
    independent 80/10/10 draws would (one-sided z-test); the shares of [MASK] / random / unchanged
    match 80/10/10 (chi-square, 2 degrees of freedom: p = exp(-X^2 / 2)); random tokens cover at
    least half the allowed ids. The same seed must give the same result (all randomness from
    `generator`). Options: seed (first generator seed), draws (number of draws of the batch).
    """
    ns = [1, 2, 7, 10, 13, 20, 40, 150]
    ids = _masking_batch(ns, seed=1000 + seed)
    case = f"a batch of {len(ns)} padded sequences"
    ks = [[] for _ in ns]
    fates = Counter()  # mask / random / kept over all chosen tokens
    same = pairs = 0  # rows whose first two chosen tokens share their fate
    seen_positions = torch.zeros(ids.shape[1], dtype=torch.bool)  # row 6 (40 maskable)
    random_ids = Counter()
    for d in range(draws):
        masked, labels = _call_masking(student, ids, seed + d, 0.15, 20)
        chosen = _inspect_masking(ids, masked, labels, case)
        kind = torch.where(masked == _MASK, 0, torch.where(masked == ids, 2, 1))  # (B, T) 0 mask, 1 random, 2 kept
        for r in range(len(ns)):
            pos = chosen[r].nonzero().squeeze(1)
            ks[r].append(len(pos))
            if len(pos) >= 2:
                pairs += 1
                same += int(kind[r, pos[0]] == kind[r, pos[1]])
        fates.update(kind[chosen].tolist())
        seen_positions |= chosen[6]
        random_ids.update(masked[chosen & (kind == 1)].tolist())
    _count_diagnosis(ns, ks, 0.15, 20, ids, case)

    maskable6 = ~torch.isin(ids[6], torch.tensor(_SPECIALS))
    never = (maskable6 & ~seen_positions).nonzero().squeeze(1).tolist()
    if never:
        raise Fail(
            f"Your choice of positions is not uniform: in the row with 40 maskable tokens, {len(never)} of them were "
            f"never chosen in {draws} draws (positions {never[:8]}...), where each is chosen with probability "
            "6/40 per draw. Choose k positions uniformly at random among ALL maskable ones (not the first k, "
            "not a fixed stride).",
            row=ids[6].tolist(),
            never_chosen=never,
        )

    again = _call_masking(student, ids, seed, 0.15, 20)
    first = _call_masking(student, ids, seed, 0.15, 20)
    if not (torch.equal(again[0], first[0]) and torch.equal(again[1], first[1])):
        raise Fail(
            "Two calls with generators seeded alike gave different masks: draw every random number from "
            "`generator` (torch.rand(..., generator=generator), torch.randint(..., generator=generator)), so a "
            "batch can be rebuilt from its seed (the lab resumes training that way).",
            seed=seed,
        )

    total = sum(fates.values())
    R = len(_WORDS)
    expected = (0.8, 0.1 * (1 - 1 / R), 0.1 + 0.1 / R)  # a random draw may hit the original id: counted as kept
    observed = tuple(fates[i] / total for i in range(3))
    # P(two chosen tokens share their fate) if each token's fate were drawn independently with the
    # observed shares (so a wrong split alone does not trip this test; the chi-square below does)
    q = sum(o * o for o in observed)
    if pairs and q < 1:
        z = (same - pairs * q) / math.sqrt(pairs * q * (1 - q))
        if _upper_tail(z) < P_ALARM:
            raise Fail(
                f"The first two chosen tokens of a sequence got the same treatment in {_pct(same / pairs)} of {pairs} "
                f"sequences; independent draws per token give {_pct(q)}. You decide [MASK] / random / unchanged once "
                "per sequence: roll one die PER CHOSEN TOKEN.",
                same_fate=same,
                sequences=pairs,
                expected_share=round(q, 4),
            )
    x2 = sum((fates[i] - total * e) ** 2 / (total * e) for i, e in enumerate(expected))
    if math.exp(-x2 / 2) < P_ALARM:
        share = ", ".join(f"{name} {_pct(o)}" for name, o in zip(("[MASK]", "random", "unchanged"), observed))
        nearest = min(_SPLIT_PATTERNS, key=lambda pat: sum(abs(a - b) for a, b in zip(pat, observed)))
        near = sum(abs(a - b) for a, b in zip(nearest, observed)) < 0.06
        cause = _SPLIT_PATTERNS[nearest] if near else "the shares should be 80% [MASK], 10% random, 10% unchanged"
        raise Fail(
            f"Of {total} chosen tokens: {share} (chi-square {x2:.0f}, p = {math.exp(-x2 / 2):.1e}); expected 80% / "
            f"10% / 10%. Most likely: {cause}.",
            counts=dict(mask=fates[0], random=fates[1], kept=fates[2]),
        )
    if len(random_ids) < R / 2:
        raise Fail(
            f"Random replacements took only {len(random_ids)} distinct ids over {fates[1]} replacements; they should "
            f"be drawn uniformly from the {R} non-special ids.",
            random_ids=sorted(random_ids),
        )

    # edge cases: one token in a batch of one; other mlm_probability / max_predictions
    for ns_e, p, cap, what in (
        ([1], 0.15, 20, "a batch of one sequence with one token, [CLS] w [SEP]"),
        ([10, 3, 30, 17], 0.3, 5, "a batch with mlm_probability=0.3, max_predictions=5"),
    ):
        ids_e = _masking_batch(ns_e, seed=2000 + seed, T=None if len(ns_e) == 1 else 41)
        ks_e = [[] for _ in ns_e]
        for d in range(5):
            masked, labels = _call_masking(student, ids_e, seed + d, p, cap)
            chosen = _inspect_masking(ids_e, masked, labels, what)
            for r in range(len(ns_e)):
                ks_e[r].append(int(chosen[r].sum()))
        _count_diagnosis(ns_e, ks_e, p, cap, ids_e, what)

    return (
        f"mask_tokens follows BERT's rule on {draws} draws of an 8-sequence batch and on the edge cases: a fixed "
        f"count per sequence (capped), never a special token, labels only at chosen positions; of {total} chosen "
        f"tokens {_pct(observed[0])} [MASK], {_pct(observed[1])} random, {_pct(observed[2])} unchanged "
        f"(chi-square p = {math.exp(-x2 / 2):.2f}).",
        dict(counts=dict(mask=fates[0], random=fates[1], kept=fates[2]), draws=draws),
    )


MASKING_STUB = '''import torch


def mask_tokens(input_ids, special_ids, vocab_size, mask_id, generator, mlm_probability=0.15, max_predictions=20):
    """BERT's masked-LM corruption of a batch (Section 3.1, "Task #1: Masked LM").

    input_ids:       LongTensor [B, T]; each row is [CLS] A [SEP] B [SEP] followed by [PAD]s
    special_ids:     list of ints: the ids of [PAD], [UNK], [CLS], [SEP], [MASK]; these positions
                     are never chosen, and these ids are never used as a random replacement
    vocab_size:      int V; token ids run over 0 .. V-1
    mask_id:         int, the id of [MASK]
    generator:       torch.Generator; draw ALL randomness from it, e.g.
                     torch.rand(B, T, generator=generator)
    mlm_probability: the share of tokens to predict (0.15)
    max_predictions: at most this many predictions per sequence (max_predictions_per_seq)

    In each row choose k = min(max_predictions, max(1, round(mlm_probability * n))) positions
    uniformly at random among its n non-special positions (k = 0 when n = 0). Then each chosen
    token, independently: becomes [MASK] with probability 0.8, a random non-special id with
    probability 0.1, and stays unchanged with probability 0.1.

    Returns (masked_ids, labels), both LongTensor [B, T]. masked_ids: a corrupted COPY of
    input_ids (leave input_ids itself unchanged). labels: the ORIGINAL id at the chosen positions,
    -100 everywhere else.
    """
    raise NotImplementedError'''

MASKING_HINT = (
    "Start with `maskable = ~torch.isin(input_ids, torch.tensor(special_ids))` and count n per row. A uniform "
    "random k-subset: give every position a random score (torch.rand with the generator), set the scores of "
    "non-maskable positions to -1, and take the k largest (`topk`). Labels: `torch.where(chosen, input_ids, -100)`. "
    "For 80/10/10 roll ONE die per token, `dice = torch.rand(B, T, generator=generator)`: below 0.8 -> mask_id, "
    "0.8 to 0.9 -> a random id, otherwise unchanged. Random ids: draw an index into the tensor of allowed "
    "(non-special) ids with torch.randint. Work on `input_ids.clone()`."
)


# ==============================================================================================
# 2. nsp_pairs: 50% IsNext (the real next sentence), 50% NotNext (from another document)
# ==============================================================================================


def nsp_pairs(documents, rng):
    """Next-sentence-prediction pairs (reference solution; see the stub for the contract)."""
    pairs = []
    for d, sentences in enumerate(documents):
        for i in range(len(sentences) - 1):  # every sentence that has a next one is an A once
            if rng.random() < 0.5:
                pairs.append((sentences[i], sentences[i + 1], 0))  # IsNext: the real continuation
            else:
                # NotNext: a random OTHER document. Draw from the n - 1 others and skip d:
                # e.g. 5 documents, d = 2: 0 -> 0, 1 -> 1, 2 -> 3, 3 -> 4
                other = rng.randrange(len(documents) - 1)
                other += other >= d
                pairs.append((sentences[i], rng.choice(documents[other]), 1))
    return pairs


_NSP_WORDS = (
    "the old keeper climbed the tower and watched the grey sea while ships passed slowly "
    "toward a harbour full of lamps boats nets gulls rain wind stories"
).split()


def _nsp_documents(lengths: list[int], seed: int) -> list[list[str]]:
    """Documents of unique, readable sentences: 'doc 3, sentence 5: the keeper watched the rain .'"""
    rng = random.Random(seed)
    return [
        [
            f"doc {d}, sentence {i}: " + " ".join(rng.choice(_NSP_WORDS) for _ in range(rng.randint(3, 7))) + " ."
            for i in range(n)
        ]
        for d, n in enumerate(lengths)
    ]


def _call_nsp(student, documents, seed):
    given = copy.deepcopy(documents)
    out = core.call(student, given, random.Random(seed), what="your nsp_pairs(documents, rng)")
    if given != documents:
        raise Fail(
            "nsp_pairs changed the documents it was given (in place): build new pairs and leave the input alone.",
        )
    if not isinstance(out, list | tuple):
        raise Fail(
            f"nsp_pairs should return a list of (sentence_a, sentence_b, label) triples; it returned "
            f"{type(out).__name__}.",
            returned=core._short(out),
        )
    for item in out:
        if not (isinstance(item, tuple | list) and len(item) == 3):
            raise Fail(
                "Each pair should be a triple (sentence_a, sentence_b, label); one of yours is "
                f"{core._short(item, 120)}.",
            )
        label = item[2]
        if isinstance(label, torch.Tensor) and label.numel() == 1:
            label = label.item()
        if isinstance(label, str) or label not in (0, 1):
            raise Fail(
                f"Labels must be 0 (IsNext) or 1 (NotNext); one of yours is {label!r}.",
                pair=core._short(item, 200),
            )
    return [(a, b, int(lab.item() if isinstance(lab, torch.Tensor) else lab)) for a, b, lab in out]


def _nsp_inspect(pairs, documents, case):
    """Locate every sentence; check that each sentence with a successor is an A exactly once.
    Returns rows (doc_a, i, doc_b, j, label)."""
    where = {s: (d, i) for d, doc in enumerate(documents) for i, s in enumerate(doc)}
    rows = []
    for a, b, label in pairs:
        for name, s in (("sentence A", a), ("sentence B", b)):
            if s not in where:
                raise Fail(
                    f"{name} of a pair, {core._short(s, 80)}, is not one of the sentences in `documents` ({case}): "
                    "return the sentence strings themselves.",
                    pair=core._short((a, b, label), 300),
                )
        rows.append((*where[a], *where[b], label))
    wanted = Counter((d, i) for d, doc in enumerate(documents) for i in range(len(doc) - 1))
    got = Counter((da, i) for da, i, _, _, _ in rows)
    missing, extra = wanted - got, got - wanted
    if missing or extra:
        example = next(iter(missing or extra))
        last = documents[example[0]] and example[1] == len(documents[example[0]]) - 1
        what = (
            f"{sum(missing.values())} sentences with a next sentence are never an A (e.g. document {example[0]}, "
            f"sentence {example[1]})"
            if missing
            else (
                f"some sentences are an A more than once or should not be one (e.g. document {example[0]}, sentence "
                f"{example[1]}{', the last of its document' if last else ''})"
            )
        )
        raise Fail(
            f"{what} ({case}). Make exactly one pair for every sentence that has a next sentence in its document "
            f"(all but each document's last): {sum(wanted.values())} pairs here, yours has {len(pairs)}.",
            expected_pairs=sum(wanted.values()),
            your_pairs=len(pairs),
        )
    return rows


def check_nsp_pairs(student, seed: int = 0, draws: int = 30):
    """Check nsp_pairs (next-sentence-prediction pairs from documents of sentences).

    Inputs: 12 documents of 1 to 13 unique sentences, called `draws` times with random.Random(seed),
    random.Random(seed + 1), ...; then edge cases (two documents, one of them a single sentence; two
    two-sentence documents). Checks: the documents are left unchanged; every sentence that has a next
    one is sentence A of exactly one pair; every label-0 (IsNext) pair has B = the sentence right
    after A; every label-1 (NotNext) pair has B from ANOTHER document; NotNext B's come from several
    documents; the share of NotNext is 50% (two-sided z-test, fails below p = P_ALARM = 1e-6, about
    1,700 pairs); the same seed gives the same pairs. Diagnoses: labels swapped, NotNext drawn from
    the same document, IsNext B not the next sentence (offsets reported), unbalanced classes, rng
    not used. Options: seed, draws.
    """
    lengths = [1, 2, 3, 5, 8, 13, 4, 6, 1, 9, 7, 10]
    documents = _nsp_documents(lengths, seed=3000 + seed)
    case = f"{len(documents)} documents of {min(lengths)} to {max(lengths)} sentences"
    rows = []
    for d in range(draws):
        rows += _nsp_inspect(_call_nsp(student, documents, seed + d), documents, case)
    pos = [r for r in rows if r[4] == 0]
    neg = [r for r in rows if r[4] == 1]
    pos_next = [r for r in pos if r[2] == r[0] and r[3] == r[1] + 1]
    pos_cross = [r for r in pos if r[2] != r[0]]
    neg_same = [r for r in neg if r[2] == r[0]]
    neg_next = [r for r in neg_same if r[3] == r[1] + 1]
    details = dict(
        pairs=len(rows),
        label_0_isnext=len(pos),
        label_0_with_the_next_sentence=len(pos_next),
        label_1_notnext=len(neg),
        label_1_from_the_same_document=len(neg_same),
    )
    if pos and neg and len(pos_cross) > 0.5 * len(pos) and len(neg_next) > 0.5 * len(neg):
        raise Fail(
            f"Your labels are swapped: {_pct(len(pos_cross) / len(pos))} of your label-0 pairs take B from another "
            f"document and {_pct(len(neg_next) / len(neg))} of your label-1 pairs take the true next sentence. In "
            "the lab (and Hugging Face) 0 = IsNext, 1 = NotNext.",
            **details,
        )
    if len(pos_next) < len(pos):
        bad = [r for r in pos if r not in pos_next]
        a_itself = sum(r[2] == r[0] and r[3] == r[1] for r in bad)
        same_doc = [r for r in bad if r[2] == r[0]]
        if a_itself > 0.5 * len(bad):
            cause = "B is A itself: take sentences[i + 1]"
        elif len(same_doc) > 0.5 * len(bad):
            offsets = Counter(r[3] - r[1] for r in same_doc)
            shown = ", ".join(f"{o:+d} x{c}" for o, c in sorted(offsets.items())[:8])
            cause = (
                f"B comes from A's document but is not the next sentence (offsets from A: {shown}); IsNext means "
                "the sentence right after A, sentences[i + 1]"
            )
        else:
            cause = "B comes from another document although the label says IsNext"
        raise Fail(
            f"{len(bad)} of your {len(pos)} IsNext pairs (label 0) do not have A's next sentence as B: {cause}.",
            **details,
        )
    if neg_same:
        raise Fail(
            f"{len(neg_same)} of your {len(neg)} NotNext pairs (label 1) take B from A's own document "
            f"({_pct(len(neg_same) / len(neg))}). A NotNext B must come from ANOTHER document (Google's "
            "create_pretraining_data.py), or it may be a real continuation and the task gets noisy: draw a document "
            "other than A's, e.g. rng.randrange(len(documents) - 1) and skip A's index.",
            **details,
        )
    share = len(neg) / len(rows)
    z = (len(neg) - 0.5 * len(rows)) / math.sqrt(0.25 * len(rows))
    if 2 * _upper_tail(abs(z)) < P_ALARM:
        raise Fail(
            f"{_pct(share)} of your {len(rows)} pairs are NotNext; NSP needs balanced classes, 50% IsNext and 50% "
            f"NotNext (z = {z:.1f}). Flip a fair coin per pair: rng.random() < 0.5.",
            **details,
        )
    sources = {r[2] for r in neg}
    if len(sources) < len(documents) / 2:
        raise Fail(
            f"Your NotNext B's come from only {len(sources)} of the {len(documents)} documents: draw the other "
            "document at random for every pair.",
            **details,
        )
    first = _call_nsp(student, documents, seed)
    if first != _call_nsp(student, documents, seed):
        raise Fail(
            "Two calls with random.Random(seed) seeded alike gave different pairs: draw every random choice from "
            "`rng` (rng.random(), rng.randrange(...), rng.choice(...)), not from the random module itself.",
            seed=seed,
        )
    for docs_e, what in (
        ([["a lone sentence ."], ["first of two .", "second of two ."]], "two documents, one of a single sentence"),
        ([["x one .", "x two ."], ["y one .", "y two ."]], "two documents of two sentences"),
    ):
        for d in range(20):
            rows_e = _nsp_inspect(_call_nsp(student, docs_e, seed + d), docs_e, what)
            for da, i, db, j, label in rows_e:
                ok = (db == da and j == i + 1) if label == 0 else db != da
                if not ok:
                    raise Fail(
                        f"With {what}, your pair (A = {docs_e[da][i]!r}, B = {docs_e[db][j]!r}, label {label}) is "
                        "wrong: "
                        "label 0 needs A's next sentence, label 1 a sentence of the other document.",
                        documents=docs_e,
                    )
    return (
        f"nsp_pairs is right on {draws} draws over {len(documents)} documents ({len(rows)} pairs, {_pct(share)} "
        "NotNext, every IsNext the true next sentence, every NotNext from another document) and on two-document "
        "edge cases.",
        details,
    )


NSP_STUB = '''def nsp_pairs(documents, rng):
    """Next-sentence-prediction pairs (Section 3.1, "Task #2: Next Sentence Prediction").

    documents: list of documents; each document is a list of sentences (str), in reading
               order, at least one each; there are at least 2 documents
    rng:       random.Random; draw ALL randomness from it (rng.random(), rng.randrange(n),
               rng.choice(seq))

    For every sentence that has a next sentence in its document (all but each document's last),
    make one pair with that sentence as A. Flip a fair coin (rng.random() < 0.5):
      - IsNext  (label 0): B = the sentence right after A in the same document;
      - NotNext (label 1): B = a random sentence of a random OTHER document.

    Returns a list of (sentence_a, sentence_b, label) triples, label an int (0 or 1).
    """
    raise NotImplementedError'''

NSP_HINT = (
    "Two loops: `for d, sentences in enumerate(documents)` and `for i in range(len(sentences) - 1)`. On heads "
    "append `(sentences[i], sentences[i + 1], 0)`. On tails pick another document without a retry loop: "
    "`other = rng.randrange(len(documents) - 1)`, then `other += other >= d` (this skips d), and append "
    "`(sentences[i], rng.choice(documents[other]), 1)`."
)


# ==============================================================================================
# 3. pretraining_loss: MLM cross-entropy at the labelled positions + NSP cross-entropy
# ==============================================================================================


def pretraining_loss(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    """BERT's pre-training loss (reference solution; see the stub for the contract)."""
    V = mlm_logits.shape[-1]
    # MLM: mean cross-entropy over the labelled positions only; ignore_index skips the -100s.
    mlm = F.cross_entropy(mlm_logits.reshape(-1, V), mlm_labels.reshape(-1), ignore_index=-100)  # (B*T, V) vs (B*T,)
    # NSP: mean cross-entropy of the [CLS] classifier over the batch (0 = IsNext, 1 = NotNext).
    nsp = F.cross_entropy(nsp_logits, nsp_labels)  # (B, 2) vs (B,)
    return mlm + nsp


def _loss_candidates(mlm_logits, mlm_labels, nsp_logits, nsp_labels) -> dict[str, tuple[float, str]]:
    """What the reference and each typical mistake give on these inputs: name -> (value, cause)."""
    V = mlm_logits.shape[-1]
    flat, lab = mlm_logits.reshape(-1, V).double(), mlm_labels.reshape(-1)
    picked = lab != -100
    ce = F.cross_entropy(flat[picked], lab[picked], reduction="none")  # (N,)
    nsp_ce = F.cross_entropy(nsp_logits.double(), nsp_labels, reduction="none")  # (B,)
    mlm, nsp = ce.mean(), nsp_ce.mean()
    double_mlm = F.cross_entropy(flat[picked].softmax(-1), lab[picked]).double()
    double_nsp = F.cross_entropy(nsp_logits.double().softmax(-1), nsp_labels)
    zero_filled = F.cross_entropy(flat, lab.clamp(min=0))  # -100 treated as class 0, mean over all
    rows = [
        F.cross_entropy(r.double()[y != -100], y[y != -100])
        for r, y in zip(mlm_logits, mlm_labels)
        if (y != -100).any()
    ]
    per_row = torch.stack(rows).mean() if rows else mlm
    swapped = F.cross_entropy(nsp_logits.double(), 1 - nsp_labels)
    all_pos = "-100 positions count in the average"
    c = {
        "reference": (mlm + nsp, ""),
        "all_positions": (
            ce.sum() / lab.numel() + nsp,
            f"your MLM loss is averaged over all B*T = {lab.numel()} positions, {all_pos} (as zeros) although only "
            f"{int(picked.sum())} are labelled: average over the labelled positions only "
            "(F.cross_entropy(..., ignore_index=-100) does it)",
        ),
        "zero_filled": (
            zero_filled + nsp,
            "the -100 labels were turned into a real class (0) and every position entered the loss: positions with "
            "label -100 must be left out, not predicted as token 0 (ignore_index=-100)",
        ),
        "sum": (ce.sum() + nsp_ce.sum(), "you SUM the cross-entropies instead of averaging them (reduction='mean')"),
        "sum_mlm": (ce.sum() + nsp, "your MLM term is a SUM over the labelled positions, not their mean"),
        "sum_nsp": (mlm + nsp_ce.sum(), "your NSP term is a SUM over the batch, not its mean"),
        "no_nsp": (mlm, "the NSP term is missing: BERT's loss is L = L_mlm + L_nsp"),
        "no_mlm": (nsp, "the MLM term is missing: BERT's loss is L = L_mlm + L_nsp"),
        "average": (
            (mlm + nsp) / 2,
            "you average the two losses; BERT adds them, L = L_mlm + L_nsp (lab.model.BertForPreTraining, Hugging "
            "Face's total_loss)",
        ),
        "nsp_swapped": (
            mlm + swapped,
            "your NSP labels are swapped: label 0 means IsNext and must be the target of nsp_logits[:, 0]",
        ),
        "double_softmax": (
            double_mlm + double_nsp,
            "softmax is applied twice: F.cross_entropy takes raw logits and applies log_softmax itself, so do not "
            "pass it probabilities",
        ),
        "double_softmax_mlm": (
            double_mlm + nsp,
            "softmax is applied twice in the MLM term: F.cross_entropy takes raw logits, not probabilities",
        ),
        "double_softmax_nsp": (
            mlm + double_nsp,
            "softmax is applied twice in the NSP term: F.cross_entropy takes raw logits, not probabilities",
        ),
        "per_row": (
            per_row + nsp,
            "you average the MLM loss per sequence first and then over sequences, so a token in a sequence with few "
            "predictions weighs more: average over all labelled tokens of the batch at once",
        ),
    }
    return {k: (float(v), cause) for k, (v, cause) in c.items()}


def _loss_cases(seed: int):
    """(description, mlm_logits, mlm_labels, nsp_logits, nsp_labels, the lab model's loss or None)."""
    from lab.config import BertConfig
    from lab.model import BertForPreTraining

    gen = torch.Generator().manual_seed(4000 + seed)
    cfg = BertConfig(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=32,
    )
    with torch.random.fork_rng():  # the student's global random state stays as it was
        torch.manual_seed(4000 + seed)
        model = BertForPreTraining(cfg).eval()
    B, T = 3, 11
    ids = torch.randint(5, 99, (B, T), generator=gen)
    mlm_labels = torch.full((B, T), -100)
    for r, count in enumerate((3, 1, 0)):  # the last row has nothing to predict
        where = torch.randperm(T, generator=gen)[:count]
        mlm_labels[r, where] = torch.randint(5, 99, (count,), generator=gen)
    nsp_labels = torch.tensor([0, 1, 1])
    with torch.no_grad():
        full = model(ids)  # no labels: [B, T, V] logits everywhere
        lab_loss = model(ids, mlm_labels=mlm_labels, nsp_label=nsp_labels).loss
    cases = [
        (
            "the lab's BertForPreTraining on a batch of 3",
            full.mlm_logits,
            mlm_labels,
            full.nsp_logits,
            nsp_labels,
            float(lab_loss),
        )
    ]

    def random_case(what, B, T, V, counts, scale=3.0):
        logits = scale * torch.randn(B, T, V, generator=gen)
        labels = torch.full((B, T), -100)
        for r, count in enumerate(counts):
            where = torch.randperm(T, generator=gen)[:count]
            labels[r, where] = torch.randint(1, V, (count,), generator=gen)
        nsp = 2.0 * torch.randn(B, 2, generator=gen)
        return (what, logits, labels, nsp, torch.randint(0, 2, (B,), generator=gen), None)

    cases.append(random_case("random logits, 4 sequences with 1, 5, 0 and 2 labels", 4, 9, 50, (1, 5, 0, 2)))
    cases.append(random_case("a batch of one sequence of one labelled token", 1, 1, 7, (1,)))
    cases.append(random_case("random logits, 2 sequences of 16 with 12 and 3 labels", 2, 16, 31, (12, 3)))
    return cases


def check_pretraining_loss(student, seed: int = 0):
    """Check pretraining_loss (mean MLM cross-entropy at the labelled positions + mean NSP cross-entropy).

    Inputs: the logits of the lab's BertForPreTraining (tiny config, eval mode) on a batch of 3 (one
    row with no label), compared with the model's own `out.loss`; random logits with rows holding
    different numbers of labels; a batch of one single token; 2 x 16 positions. The result must be a
    0-dim tensor within 1e-4 (relative) of the reference, must carry gradient, must leave its inputs
    unchanged, and positions labelled -100 must get zero gradient. On a mismatch the checker computes
    what each typical mistake would give (average over all positions, sum instead of mean, NSP
    missing, NSP labels swapped, softmax applied twice, per-sequence averaging, the two losses
    averaged, -100 used as class 0) and names the one that matches. Option: seed.
    """
    for what, mlm_logits, mlm_labels, nsp_logits, nsp_labels, lab_loss in _loss_cases(seed):
        cands = _loss_candidates(mlm_logits, mlm_labels, nsp_logits, nsp_labels)
        ref = cands["reference"][0] if lab_loss is None else lab_loss
        given = [x.clone() for x in (mlm_logits, mlm_labels, nsp_logits, nsp_labels)]
        given[0].requires_grad_(True)
        given[2].requires_grad_(True)
        out = core.call(student, *given, what="your pretraining_loss(mlm_logits, mlm_labels, nsp_logits, nsp_labels)")
        details = dict(
            case=what,
            mlm_logits_shape=tuple(mlm_logits.shape),
            mlm_labels=mlm_labels.tolist(),
            nsp_labels=nsp_labels.tolist(),
            expected=round(ref, 6),
        )
        if not torch.is_tensor(out):
            raise Fail(
                f"pretraining_loss returned a {type(out).__name__}, not a tensor ({what}): return the loss tensor "
                "itself (no .item()), so that loss.backward() can reach the model.",
                **details,
            )
        if out.dim() != 0:
            raise Fail(
                f"pretraining_loss returned shape {tuple(out.shape)}; it should be one number, a 0-dim tensor "
                f"({what}). reduction='none' gives a loss per position: average them.",
                **details,
            )
        for name, before, after in zip(
            ("mlm_logits", "mlm_labels", "nsp_logits", "nsp_labels"),
            (mlm_logits, mlm_labels, nsp_logits, nsp_labels),
            given,
        ):
            if not torch.equal(before, after.detach()):
                raise Fail(
                    f"pretraining_loss changed its input {name} in place ({what}): compute on copies "
                    "(e.g. labels.clone()), the training loop still needs them.",
                    **details,
                )
        value = float(out.detach())
        details["yours"] = round(value, 6)
        if not math.isclose(value, ref, rel_tol=1e-4, abs_tol=1e-5):
            matches = [
                k
                for k, (v, _) in cands.items()
                if k != "reference" and math.isclose(value, v, rel_tol=1e-4, abs_tol=1e-5)
            ]
            where = "the lab model's loss" if lab_loss is not None else "the reference"
            if matches:
                raise Fail(
                    f"Your loss is {value:.4f}, {where} is {ref:.4f} ({what}). It equals what you get when "
                    f"{cands[matches[0]][1]}.",
                    **details,
                    mistake=matches[0],
                )
            mlm_only, nsp_only = cands["no_nsp"][0], cands["no_mlm"][0]
            raise Fail(
                f"Your loss is {value:.4f}, {where} is {ref:.4f} ({what}): it matches no typical mistake. The MLM part "
                f"alone should be {mlm_only:.4f} (mean cross-entropy over the {int((mlm_labels != -100).sum())} "
                f"labelled positions) and the NSP part {nsp_only:.4f}; their sum is the loss.",
                **details,
            )
        if not out.requires_grad:
            raise Fail(
                f"Your loss has the right value but no gradient ({what}): it was detached (.item(), .detach(), "
                "torch.tensor(...) or numpy): compute it with torch operations on the logits.",
                **details,
            )
        out.backward()
        grad = given[0].grad
        stray = (
            grad is not None and (grad[mlm_labels == -100].abs().max().item() if (mlm_labels == -100).any() else 0) > 0
        )
        if grad is None or stray:
            raise Fail(
                f"Positions labelled -100 receive gradient ({what}): only the labelled positions may enter the MLM "
                "loss.",
                **details,
            )
    return (
        "pretraining_loss equals the lab's BertForPreTraining loss and the reference on 4 batches (rows without "
        "labels, one token), with gradient only at labelled positions."
    )


LOSS_STUB = '''import torch
import torch.nn.functional as F  # noqa: F401 (for your code below)


def pretraining_loss(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    """BERT's pre-training loss, L = L_mlm + L_nsp (Section 3.1; Appendix A.2).

    mlm_logits: FloatTensor [B, T, V], the masked-LM head's scores over the vocabulary
    mlm_labels: LongTensor [B, T], the original token id at the chosen positions, -100 elsewhere
    nsp_logits: FloatTensor [B, 2], the next-sentence head's scores (column 0 = IsNext)
    nsp_labels: LongTensor [B], 0 = IsNext, 1 = NotNext

    L_mlm: the MEAN cross-entropy over the labelled positions only (all of the batch's labelled
    positions together; positions with -100 do not count). L_nsp: the mean cross-entropy over
    the batch. Returns a 0-dim tensor (keep it a tensor: the training loop calls backward()).
    """
    raise NotImplementedError'''

LOSS_HINT = (
    "F.cross_entropy wants logits of shape [N, C] and targets [N]: flatten the MLM logits to [B*T, V] and the "
    "labels to [B*T]. It takes RAW logits (it applies log_softmax itself) and skips targets equal to "
    "ignore_index=-100, averaging over the rest. The NSP logits are already [B, 2]. Add the two means."
)


# ==============================================================================================
# 4. adamw: Adam with bias correction and decoupled weight decay
# ==============================================================================================


class AdamW(torch.optim.Optimizer):
    """AdamW (Loshchilov & Hutter 2019), as BERT trains with it (reference solution)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:  # each group has its own lr / betas / eps / weight_decay
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:  # not used by this loss: leave it alone
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)  # m: running mean of the gradient
                    state["exp_avg_sq"] = torch.zeros_like(p)  # v: running mean of its square
                state["step"] += 1
                t, m, v, g = state["step"], state["exp_avg"], state["exp_avg_sq"], p.grad
                # Decoupled weight decay: shrink the weights directly, outside m and v.
                p.mul_(1 - lr * wd)
                m.mul_(beta1).add_(g, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                # Bias correction: m and v start at 0, so early averages are too small;
                # e.g. t = 1, beta1 = 0.9: m = 0.1 g, and m / (1 - 0.9) = g.
                m_hat = m / (1 - beta1**t)
                v_hat = v / (1 - beta2**t)
                p.sub_(lr * m_hat / (v_hat.sqrt() + eps))
        return loss


class _Variant(torch.optim.Optimizer):
    """Adam in the ways it is written, right and wrong (the checker's yardsticks).

    eps: "torch" (sqrt(v_hat) + eps), "efficient" (Kingma & Ba's step size lr * sqrt(1 - b2^t) / (1 - b1^t)
    with sqrt(v) + eps), "inside" (sqrt(v_hat + eps)). decay: "before" / "after" the Adam update (both
    decoupled, lr * wd), "l2" (wd * p added to the gradient), "none", "no_lr" (p -= wd * p), "step_size"
    (p -= bias-corrected step size * wd * p). bias: "both", "none", "m" (only m corrected), "v".
    swap: betas swapped. defaults: every group uses the constructor's values (self.defaults)."""

    def __init__(self, params, lr, betas, eps, weight_decay, opts):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.opts = dict(eps="torch", decay="before", bias="both", swap=False, defaults=False, t0=False) | opts

    @torch.no_grad()
    def step(self):
        o = self.opts
        for group in self.param_groups:
            g_ = self.defaults if o["defaults"] else group
            lr, (b1, b2), eps, wd = g_["lr"], g_["betas"], g_["eps"], g_["weight_decay"]
            if o["swap"]:
                b1, b2 = b2, b1
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st.update(t=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
                st["t"] += 1
                t, m, v = st["t"], st["m"], st["v"]
                g = p.grad + wd * p if o["decay"] == "l2" else p.grad
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                c1 = 1 - b1**t if o["bias"] in ("both", "m") else 1.0
                c2 = 1 - b2**t if o["bias"] in ("both", "v") else 1.0
                if o["eps"] == "efficient":
                    step_size = lr * math.sqrt(c2) / c1
                    update = step_size * m / (v.sqrt() + eps)
                elif o["eps"] == "inside":
                    step_size, update = lr, lr * (m / c1) / (v / c2 + eps).sqrt()
                else:
                    step_size, update = lr, lr * (m / c1) / ((v / c2).sqrt() + eps)
                if o["decay"] == "before":
                    p.mul_(1 - lr * wd)
                p.sub_(update)
                if o["decay"] == "after":
                    p.mul_(1 - lr * wd)
                elif o["decay"] == "no_lr":
                    p.mul_(1 - wd)
                elif o["decay"] == "step_size":
                    p.mul_(1 - step_size * wd)


_CORRECT = {
    "torch.optim.AdamW": None,
    "decay after the update": dict(decay="after"),
    "Kingma & Ba's efficient form": dict(eps="efficient"),
    "efficient form, decay after": dict(eps="efficient", decay="after"),
}

_MISTAKES = {
    "no_bias": (
        dict(bias="none"),
        "bias correction is missing: m and v start at zero, so divide them by (1 - beta1^t) and (1 - beta2^t), "
        "t = 1, 2, ... counting this parameter's steps",
    ),
    "bias_m_only": (dict(bias="m"), "only m is bias-corrected: divide v by (1 - beta2^t) too"),
    "bias_v_only": (dict(bias="v"), "only v is bias-corrected: divide m by (1 - beta1^t) too"),
    "l2": (
        dict(decay="l2"),
        "weight decay goes through the gradient (g + weight_decay * p, i.e. Adam with L2 regularisation, which "
        "Adam's scaling then distorts): AdamW decays the weights directly, p -= lr * weight_decay * p, outside "
        "m and v",
    ),
    "no_lr": (
        dict(decay="no_lr", eps="torch"),
        "the decay is not scaled by the learning rate (p -= weight_decay * p): AdamW's decay is "
        "p -= lr * weight_decay * p",
    ),
    "step_size": (
        dict(decay="step_size", eps="efficient"),
        "the decay is scaled by the bias-corrected step size instead of the plain learning rate: use "
        "p -= lr * weight_decay * p",
    ),
    "no_decay": (dict(decay="none"), "weight decay is missing: p -= lr * weight_decay * p every step"),
    "eps_inside": (
        dict(eps="inside"),
        "eps is inside the square root (sqrt(v_hat + eps)); it belongs outside: m_hat / (sqrt(v_hat) + eps)",
    ),
    "swap": (dict(swap=True), "betas are swapped: beta1 (0.9) averages the gradient m, beta2 (0.999) its square v"),
    "defaults": (
        dict(defaults=True),
        "you read lr / weight_decay from self.defaults (or values saved in __init__), not from each param group: "
        "BERT's biases and LayerNorm weights sit in a group with weight_decay 0, and a learning-rate schedule "
        "changes group['lr']",
    ),
}


def _adamw_settings(seed: int):
    """(name, make() -> (groups, loss_fn, extra parameter or None), constructor kwargs, lr change at step 50)."""

    def mlp():
        g = torch.Generator().manual_seed(5000 + seed)
        with torch.random.fork_rng():
            torch.manual_seed(5000 + seed)
            net = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2)).double()
        unused = nn.Parameter(torch.randn(3, generator=g, dtype=torch.float64))
        X, Y = (
            torch.randn(16, 4, generator=g, dtype=torch.float64),
            torch.randn(16, 2, generator=g, dtype=torch.float64),
        )
        weights = [net[0].weight, net[2].weight, unused]
        biases = [net[0].bias, net[2].bias]
        groups = [{"params": weights}, {"params": biases, "weight_decay": 0.0}]
        return groups, lambda: ((net(X) - Y) ** 2).mean(), unused

    def quadratic(scale):
        def make():
            g = torch.Generator().manual_seed(6000 + seed)
            p1 = nn.Parameter(torch.randn(6, generator=g, dtype=torch.float64))
            p2 = nn.Parameter(torch.randn(2, 3, generator=g, dtype=torch.float64))
            w1, t1 = (
                torch.rand(6, generator=g, dtype=torch.float64) + 0.2,
                torch.randn(6, generator=g, dtype=torch.float64),
            )
            A = torch.randn(3, 3, generator=g, dtype=torch.float64)
            return (
                [p1, p2],
                lambda: scale * ((w1 * (p1 - t1) ** 2).sum() + ((p2 @ A) ** 2).sum() + (p1[:3] * p2[0]).sum()),
                None,
            )

        return make

    return [
        (
            "a small MLP, weights decayed and biases not (two parameter groups)",
            mlp,
            dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01),
            None,
        ),
        (
            "a random quadratic, lr halved after 50 steps (as a schedule would)",
            quadratic(1.0),
            dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-8, weight_decay=0.1),
            0.5,
        ),
        (
            "a quadratic with small gradients (~1e-3) and eps = 1e-3",
            quadratic(1e-3),
            dict(lr=3e-3, betas=(0.9, 0.999), eps=1e-3, weight_decay=0.05),
            None,
        ),
    ]


def _run_optimizer(build, make, kwargs, lr_change, steps, what):
    """Run `steps` steps; returns (initial, after the first step, final) parameter lists and the unused
    parameter (or None). When a parameter turns NaN/inf: final is None and the last item is that step."""
    groups, loss_fn, unused = make()
    params = [p for g in groups for p in (g["params"] if isinstance(g, dict) else [g])]
    initial = [p.detach().clone() for p in params]
    opt = build(groups, kwargs)
    first = None
    for s in range(steps):
        if lr_change is not None and s == steps // 2:
            for g in opt.param_groups:
                g["lr"] = g["lr"] * lr_change
        for p in params:
            p.grad = None
        loss_fn().backward()
        core.call(opt.step, what=what)
        if s == 0:
            first = [p.detach().clone() for p in params]
        if any(not torch.isfinite(p).all() for p in params):
            return initial, first, None, s + 1
    return initial, first, [p.detach().clone() for p in params], unused


def _builder(opts):
    """Build torch.optim.AdamW itself for opts None, else the _Variant with these options."""
    if opts is None:
        return lambda groups, kw: torch.optim.AdamW(groups, **kw)
    return lambda groups, kw: _Variant(groups, **kw, opts=opts)


def _distance(a, b, atol=1e-6, rtol=1e-4) -> float:
    """Largest |a - b| / (atol + rtol |b|) over every parameter: <= 1 means they agree."""
    return max(float(((x - y).abs() / (atol + rtol * y.abs())).max()) for x, y in zip(a, b))


def check_adamw(student, seed: int = 0, steps: int = 100):
    """Check an AdamW class (torch.optim.Optimizer subclass with step()) against torch.optim.AdamW.

    Three settings, `steps` steps each, float64 parameters: a small MLP with two parameter groups
    (weights decayed, biases weight_decay=0) and an unused parameter (grad None: must not change),
    lr 1e-3, betas (0.9, 0.999), eps 1e-6, wd 0.01; a random quadratic, lr 1e-2 halved at step 50
    through param_groups (as a scheduler does), betas (0.8, 0.99), eps 1e-8, wd 0.1; a quadratic
    with gradients ~1e-3 and eps 1e-3 (where eps's place matters), lr 3e-3, wd 0.05. The final
    parameters must agree with torch.optim.AdamW within |diff| <= 1e-6 + 1e-4 |ref| (float32 moments
    pass; every mistake below misses by 15x that or more in at least one setting, seeds 0-2). Also
    accepted: decay after the update, and Kingma & Ba's "efficient" form (lr * sqrt(1 - b2^t) /
    (1 - b1^t) with sqrt(v) + eps, as Hugging Face's former transformers.AdamW).
    On a mismatch the checker replays the setting with each typical mistake (no bias correction,
    L2 through the gradient, decay without lr or with the step size, no decay, eps inside the sqrt,
    betas swapped, group hyperparameters ignored) and names the one that matches.
    Options: seed (the problems' random draws), steps.
    """
    what = "your AdamW.step()"
    for name, make, kwargs, lr_change in _adamw_settings(seed):

        def build_student(groups, kw):
            opt = core.call(student, groups, **kw, what=f"your AdamW(params, lr={kw['lr']}, ...)")
            if not hasattr(opt, "step") or not hasattr(opt, "param_groups"):
                raise Fail("AdamW(...) should build a torch.optim.Optimizer (subclass it and call super().__init__).")
            return opt

        initial, first, final, unused = _run_optimizer(build_student, make, kwargs, lr_change, steps, what)
        details = dict(setting=name, **{k: v for k, v in kwargs.items()}, steps=steps)
        if final is None:
            at = unused  # the step at which the parameters stopped being finite
            cause = (
                "at the very first step: the bias correction probably divides by 1 - beta^0 = 0 (count steps from 1)"
                if at == 1
                else "check for a division by a quantity that can be 0"
            )
            raise Fail(f"Your parameters became NaN or infinite at step {at} ({name}): {cause}.", **details)
        if all(torch.equal(a, b) for a, b in zip(initial, first)):
            raise Fail(
                f"After step() the parameters had not changed ({name}): update them IN PLACE (p.add_(...), "
                "p.mul_(...), p.sub_(...)); `p = p - ...` only rebinds a local name.",
                **details,
            )
        ref = {}
        for label, opts in _CORRECT.items():
            _, _, ref[label], ref_unused = _run_optimizer(_builder(opts), make, kwargs, lr_change, steps, what)
            if min(_distance(final, r) for r in ref.values()) <= 1:
                break
        if unused is not None and not torch.equal(unused.detach(), ref_unused.detach()):
            raise Fail(
                f"A parameter with no gradient (p.grad is None: not used by the loss) changed ({name}): skip such "
                "parameters entirely (`if p.grad is None: continue`), weight decay included, as torch.optim does.",
                **details,
            )
        best = min(_distance(final, r) for r in ref.values())
        if best <= 1:
            continue
        torch_first = _run_optimizer(_builder(None), make, kwargs, lr_change, 1, what)[1]
        moved = max(float((a - b).abs().max()) for a, b in zip(first, initial))
        moved_ref = max(float((a - b).abs().max()) for a, b in zip(torch_first, initial))
        details.update(first_step_yours=moved, first_step_torch=moved_ref)
        scores = {}
        for key, (opts, _) in _MISTAKES.items():
            _, _, wrong, _ = _run_optimizer(_builder(opts), make, kwargs, lr_change, steps, what)
            if wrong is not None:
                scores[key] = _distance(final, wrong)
        match = min(scores, key=scores.get) if scores else None
        diff = max(float((a - b).abs().max()) for a, b in zip(final, ref["torch.optim.AdamW"]))
        head = (
            f"After {steps} steps on {name} your parameters differ from torch.optim.AdamW's by up to {diff:.2e} "
            f"(the largest change in the first step: yours {moved:.2e}, torch's {moved_ref:.2e})."
        )
        if match is not None and scores[match] <= 1:
            raise Fail(f"{head} They match an AdamW in which {_MISTAKES[match][1]}.", **details, mistake=match)
        if match is not None and scores[match] < 0.05 * best:
            raise Fail(
                f"{head} They come closest to an AdamW in which {_MISTAKES[match][1]}.", **details, mistake=match
            )
        raise Fail(
            f"{head} They match none of the typical mistakes. Per parameter and step t (from 1): p -= lr * wd * p; "
            "m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; "
            "p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps), "
            "with each group's own lr, betas, eps and weight_decay.",
            **details,
        )
    return (
        f"AdamW agrees with torch.optim.AdamW after {steps} steps in 3 settings (two parameter groups, an unused "
        "parameter, a changed lr, small gradients with a large eps)."
    )


ADAMW_STUB = '''import torch


class AdamW(torch.optim.Optimizer):
    """AdamW: Adam with bias correction and DECOUPLED weight decay (Loshchilov & Hutter 2019),
    the optimizer BERT is trained with (Appendix A.2: lr 1e-4, betas (0.9, 0.999), L2 weight
    decay 0.01, which Google's code applies in this decoupled way).

    params: the model's parameters, or a list of param groups (dicts with "params" and their own
            "lr" / "weight_decay" / ...: BERT puts biases and LayerNorm weights in a group with
            weight_decay 0)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter p that has a gradient g = p.grad (skip p.grad is None),
        with its group's lr, (beta1, beta2), eps and weight_decay, and t = this parameter's step
        count, 1 on the first call. Keep m and v (tensors shaped like p, zeros at first) in
        self.state[p]. Change p IN PLACE:

            p = p - lr * weight_decay * p                  (decoupled weight decay)
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            m_hat = m / (1 - beta1 ** t);  v_hat = v / (1 - beta2 ** t)     (bias correction)
            p = p - lr * m_hat / (sqrt(v_hat) + eps)

        Returns closure() when a closure is given, else None.
        """
        raise NotImplementedError'''

ADAMW_HINT = (
    "Loop `for group in self.param_groups:` then `for p in group['params']:` and read lr, betas, eps, "
    "weight_decay from `group`, not from self.defaults. On a parameter's first step set "
    "`self.state[p] = {'step': 0, 'm': torch.zeros_like(p), 'v': torch.zeros_like(p)}`, then add 1 to its step. "
    "In-place updates: `p.mul_(1 - lr * wd)`, `m.mul_(beta1).add_(g, alpha=1 - beta1)`, "
    "`v.mul_(beta2).addcmul_(g, g, value=1 - beta2)`, `p.sub_(lr * m_hat / (v_hat.sqrt() + eps))`."
)


# ==============================================================================================
# Notebook demonstrations: the student's code on real text (a stub says so, it does not crash)
# ==============================================================================================


def _attempt(fn, *args, **kwargs):
    """(result, None) or (None, a sentence) when the student's code is not ready."""
    try:
        return core.call(fn, *args, **kwargs), None
    except core.NotImplementedYet:
        return None, "not implemented yet: fill in the cell above, then run this one again"
    except Fail as f:
        return None, f.message


def show_masking(mask_tokens_fn, tokenizer, text_a: str, text_b: str | None = None, seed: int = 0) -> str:
    """The student's masking on one real sentence pair: the tokens, what the model sees, the labels."""
    enc = tokenizer.encode(text_a, text_b) if text_b else tokenizer.encode(text_a)
    ids = torch.tensor([enc.input_ids])
    specials = sorted(tokenizer.special_ids)
    gen = torch.Generator().manual_seed(seed)
    out, problem = _attempt(
        mask_tokens_fn, ids.clone(), specials, tokenizer.vocab_size, tokenizer.mask_token_id, gen, what="mask_tokens"
    )
    if problem:
        return f"mask_tokens: {problem}"
    masked, labels = out
    tokens = tokenizer.convert_ids_to_tokens(ids[0].tolist())
    seen = tokenizer.convert_ids_to_tokens(masked[0].tolist())
    targets = [f"{t}: {tokens[t]!r} shown as {seen[t]!r}" for t in range(len(tokens)) if int(labels[0, t]) != -100]
    return "\n".join(
        [
            "tokens     : " + " ".join(tokens),
            "model sees : " + " ".join(seen),
            f"to predict : {len(targets)} of {len(tokens)} positions -> " + "; ".join(targets),
        ]
    )


def show_nsp_pairs(nsp_pairs_fn, documents, count: int = 4, seed: int = 0) -> str:
    """The first `count` pairs the student's nsp_pairs makes from these documents (lists of sentences)."""
    pairs, problem = _attempt(nsp_pairs_fn, [list(d) for d in documents], random.Random(seed), what="nsp_pairs")
    if problem:
        return f"nsp_pairs: {problem}"
    lines = [f"{len(pairs)} pairs, {sum(int(p[2]) for p in pairs)} of them NotNext"]
    for a, b, label in list(pairs)[:count]:
        lines += [f"[{'IsNext' if int(label) == 0 else 'NotNext'}]", f"  A: {a}", f"  B: {b}"]
    return "\n".join(lines)


def show_loss(pretraining_loss_fn, model, tokenizer, text_a: str, text_b: str, seed: int = 0) -> str:
    """The student's loss on a pre-trained model's logits for one masked pair, beside the model's own."""
    from lab.data.instances import SpecialIds
    from lab.data.instances import mask_tokens as lab_mask_tokens

    enc = tokenizer.encode(text_a, text_b)
    ids = torch.tensor([enc.input_ids])
    types = torch.tensor([enc.token_type_ids])
    special = SpecialIds.from_vocab(tokenizer.vocab)
    masked, labels = lab_mask_tokens(ids, None, special, torch.Generator().manual_seed(seed))
    nsp = torch.tensor([0])
    model.eval()
    with torch.no_grad():
        full = model(masked, token_type_ids=types)
        own = float(model(masked, token_type_ids=types, mlm_labels=labels, nsp_label=nsp).loss)
    value, problem = _attempt(
        pretraining_loss_fn, full.mlm_logits, labels, full.nsp_logits, nsp, what="pretraining_loss"
    )
    if problem:
        return f"pretraining_loss: {problem} (the model's own loss here: {own:.4f})"
    value = float(value.detach()) if torch.is_tensor(value) else float(value)
    return (
        f"{int((labels != -100).sum())} masked positions; your loss {value:.4f}, the model's own {own:.4f} "
        f"(a model guessing uniformly would score about {math.log(tokenizer.vocab_size) + math.log(2):.2f})"
    )


def adamw_race(adamw_class, steps: int = 200, seed: int = 0) -> str:
    """Train one small regression with the student's AdamW and with torch.optim.AdamW; the losses side by side."""
    lines = []
    for name, cls in (("yours", adamw_class), ("torch", torch.optim.AdamW)):
        torch.manual_seed(seed)
        g = torch.Generator().manual_seed(seed)
        net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
        X = torch.randn(64, 8, generator=g)
        y = X[:, :1] * 2 - X[:, 1:2] + 0.1 * torch.randn(64, 1, generator=g)
        opt, problem = _attempt(cls, net.parameters(), lr=1e-2, eps=1e-6, weight_decay=0.01, what="AdamW(...)")
        if problem:
            return f"AdamW: {problem}"
        losses = []
        for s in range(steps):
            opt.zero_grad()
            loss = ((net(X) - y) ** 2).mean()
            loss.backward()
            _, problem = _attempt(opt.step, what="AdamW.step()")
            if problem:
                return f"AdamW: {problem}"
            if s in (0, steps // 10, steps // 2, steps - 1):
                losses.append(f"step {s + 1}: {loss.item():.4f}")
        lines.append(f"{name:>5}: " + ", ".join(losses))
    return "\n".join(lines)


# ==============================================================================================
# Registration
# ==============================================================================================

core.register(
    core.Exercise(
        name="masking",
        title="Masked LM: 15% of the tokens, 80% [MASK] / 10% random / 10% unchanged",
        group="pretraining",
        symbol="mask_tokens",
        checker=check_masking,
        solution=mask_tokens,
        hint=MASKING_HINT,
        stub=MASKING_STUB,
        imports="import torch\n",
    )
)
core.register(
    core.Exercise(
        name="nsp_pairs",
        title="Next-sentence prediction: 50% IsNext, 50% NotNext from another document",
        group="pretraining",
        symbol="nsp_pairs",
        checker=check_nsp_pairs,
        solution=nsp_pairs,
        hint=NSP_HINT,
        stub=NSP_STUB,
        imports="",
    )
)
core.register(
    core.Exercise(
        name="pretraining_loss",
        title="The pre-training loss: MLM at the labelled positions + NSP",
        group="pretraining",
        symbol="pretraining_loss",
        checker=check_pretraining_loss,
        solution=pretraining_loss,
        hint=LOSS_HINT,
        stub=LOSS_STUB,
        imports="import torch\nimport torch.nn.functional as F\n",
    )
)
core.register(
    core.Exercise(
        name="adamw",
        title="AdamW: bias correction and decoupled weight decay",
        group="pretraining",
        symbol="AdamW",
        checker=check_adamw,
        solution=AdamW,
        hint=ADAMW_HINT,
        stub=ADAMW_STUB,
        imports="import torch\n",
    )
)
