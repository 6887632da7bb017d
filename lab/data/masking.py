"""Which ids are special, and the masked LM's corruption of a batch: 15% of the tokens chosen, of
those 80% made [MASK], 10% a random token, 10% kept (the paper's rule; Table 8's other mixes by
setting), piece by piece or whole words.

    special = SpecialIds.from_vocab(tokenizer.vocab)
    masked, labels = mask_tokens(input_ids, None, special, torch.Generator().manual_seed(0))

lab.data.instances lays out the pairs and calls this; both names are there too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch

from lab.data.batch import IGNORE_INDEX

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
