"""Exercise `masking` (notebook 3): BERT's masked-LM corruption, a fixed count of 15% of the tokens
per sequence, then 80% [MASK] / 10% random / 10% unchanged (Section 3.1).

The checker runs the student's function on many draws (stats.py): exact rules in every draw (counts,
labels, never a special token), statistics over all of them (uniform positions, one die per token,
the 80/10/10 split); `show_masking` is the notebook's demonstration on a real sentence pair.
"""

from __future__ import annotations

import math
import random
from collections import Counter

import torch

from . import core
from .core import Fail
from .stats import P_ALARM, pct, upper_tail


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
            returned=core.short(out),
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
            f"Your labels are set at {pct(share)} of all positions ({case}). Labels must be -100 everywhere "
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
            f"{expected}. You flip a {pct(p)} coin per token; create_pretraining_data.py takes a FIXED count "
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


def _draw_many(student, ids, ns, seed: int, draws: int, case: str):
    """Run the student's masking `draws` times; per row the counts of chosen tokens, and over all draws
    the fates (0 [MASK], 1 random, 2 kept), how often a row's first two chosen tokens share their fate,
    which positions of row 6 were ever chosen, and the random ids drawn."""
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
    return ks, fates, same, pairs, seen_positions, random_ids


def _check_uniform(ids, seen_positions, draws: int) -> None:
    """Every maskable position of the row with 40 of them is chosen at least once."""
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


def _check_reproducible(student, ids, seed: int) -> None:
    """The same seed gives the same masks: every random number comes from `generator`."""
    again = _call_masking(student, ids, seed, 0.15, 20)
    first = _call_masking(student, ids, seed, 0.15, 20)
    if not (torch.equal(again[0], first[0]) and torch.equal(again[1], first[1])):
        raise Fail(
            "Two calls with generators seeded alike gave different masks: draw every random number from "
            "`generator` (torch.rand(..., generator=generator), torch.randint(..., generator=generator)), so a "
            "batch can be rebuilt from its seed (the lab resumes training that way).",
            seed=seed,
        )


def _check_split(fates, same: int, pairs: int, random_ids) -> tuple[int, tuple, float]:
    """One die per chosen token, 80/10/10, random ids drawn widely: (total, observed shares, chi-square)."""
    total = sum(fates.values())
    R = len(_WORDS)
    expected = (0.8, 0.1 * (1 - 1 / R), 0.1 + 0.1 / R)  # a random draw may hit the original id: counted as kept
    observed = tuple(fates[i] / total for i in range(3))
    # P(two chosen tokens share their fate) if each token's fate were drawn independently with the
    # observed shares (so a wrong split alone does not trip this test; the chi-square below does)
    q = sum(o * o for o in observed)
    if pairs and q < 1:
        z = (same - pairs * q) / math.sqrt(pairs * q * (1 - q))
        if upper_tail(z) < P_ALARM:
            raise Fail(
                f"The first two chosen tokens of a sequence got the same treatment in {pct(same / pairs)} of {pairs} "
                f"sequences; independent draws per token give {pct(q)}. You decide [MASK] / random / unchanged once "
                "per sequence: roll one die PER CHOSEN TOKEN.",
                same_fate=same,
                sequences=pairs,
                expected_share=round(q, 4),
            )
    x2 = sum((fates[i] - total * e) ** 2 / (total * e) for i, e in enumerate(expected))
    if math.exp(-x2 / 2) < P_ALARM:
        share = ", ".join(f"{name} {pct(o)}" for name, o in zip(("[MASK]", "random", "unchanged"), observed))
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
    return total, observed, x2


def _check_masking_edge_cases(student, seed: int) -> None:
    """One token in a batch of one; other mlm_probability / max_predictions."""
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
    ks, fates, same, pairs, seen_positions, random_ids = _draw_many(student, ids, ns, seed, draws, case)
    _count_diagnosis(ns, ks, 0.15, 20, ids, case)
    _check_uniform(ids, seen_positions, draws)
    _check_reproducible(student, ids, seed)
    total, observed, x2 = _check_split(fates, same, pairs, random_ids)
    _check_masking_edge_cases(student, seed)
    return (
        f"mask_tokens follows BERT's rule on {draws} draws of an 8-sequence batch and on the edge cases: a fixed "
        f"count per sequence (capped), never a special token, labels only at chosen positions; of {total} chosen "
        f"tokens {pct(observed[0])} [MASK], {pct(observed[1])} random, {pct(observed[2])} unchanged "
        f"(chi-square p = {math.exp(-x2 / 2):.2f}).",
        dict(counts=dict(mask=fates[0], random=fates[1], kept=fates[2]), draws=draws),
    )


def show_masking(mask_tokens_fn, tokenizer, text_a: str, text_b: str | None = None, seed: int = 0) -> str:
    """The student's masking on one real sentence pair: the tokens, what the model sees, the labels."""
    enc = tokenizer.encode(text_a, text_b) if text_b else tokenizer.encode(text_a)
    ids = torch.tensor([enc.input_ids])
    specials = sorted(tokenizer.special_ids)
    gen = torch.Generator().manual_seed(seed)
    out, problem = core.attempt(
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


EXERCISE = core.Exercise(
    name="masking",
    title="Masked LM: 15% of the tokens, 80% [MASK] / 10% random / 10% unchanged",
    group="pretraining",
    checker=check_masking,
    solution=mask_tokens,
    imports="import torch\n",
    hint=(
        "Start with `maskable = ~torch.isin(input_ids, torch.tensor(special_ids))` and count n per row. A uniform "
        "random k-subset: give every position a random score (torch.rand with the generator), set the scores of "
        "non-maskable positions to -1, and take the k largest (`topk`). "
        "Labels: `torch.where(chosen, input_ids, -100)`. "
        "For 80/10/10 roll ONE die per token, `dice = torch.rand(B, T, generator=generator)`: below 0.8 -> mask_id, "
        "0.8 to 0.9 -> a random id, otherwise unchanged. Random ids: draw an index into the tensor of allowed "
        "(non-special) ids with torch.randint. Work on `input_ids.clone()`."
    ),
)
