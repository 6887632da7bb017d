"""The results of lab.inspect.explore: one dataclass per view, holding what the model saw (its
tokens, what was cut) beside what it answered, so a figure or a page can show both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch

from lab.data.squad import Span

SPECIAL_TOKENS = ("[PAD]", "[CLS]", "[SEP]", "[MASK]")  # never chosen for masked-LM prediction


# ----------------------------------------------------------------------------------------
# Result types
# ----------------------------------------------------------------------------------------
@dataclass
class CorruptionPreview:
    """What pre-training would feed the model for this text (the 80/10/10 rule made visible)."""

    tokens: list[str]  # the original WordPiece tokens, [CLS] ... [SEP]
    corrupted: list[str]  # the tokens the model sees after 80/10/10
    labels: list[str | None]  # the original token at each chosen position, None elsewhere
    kinds: list[str | None]  # "mask" | "random" | "keep" at chosen positions, None elsewhere

    @property
    def counts(self) -> dict[str, int]:
        """{"mask", "random", "keep"}: chosen positions of each kind; "chosen": all of them;
        "tokens": how many positions could have been chosen (every non-special token)."""
        n = {kind: self.kinds.count(kind) for kind in ("mask", "random", "keep")}
        n["chosen"] = sum(k is not None for k in self.kinds)
        n["tokens"] = sum(t not in SPECIAL_TOKENS for t in self.tokens)
        return n


@dataclass
class AttentionResult:
    tokens: list[str]  # T tokens, [CLS] a [SEP] (b [SEP])
    attentions: tuple[torch.Tensor, ...]  # L x [1, heads, T, T] float32 cpu (bertviz format)
    sentence_b_start: int | None  # index of b's first token, None without b
    truncated: int = 0  # tokens cut to fit the model

    def head_stats(self) -> dict[str, np.ndarray]:
        """Per-head summaries (Clark et al. 2019, "What does BERT look at?"), each [L, heads]:

        entropy  mean over query rows of -sum_k p_k log p_k (nats; 0 = looks at one token,
                 log T = spreads evenly over all T)
        cls      mean attention a query puts on [CLS]
        sep      ... on any [SEP] (the "no-op" sink of many heads)
        self     ... on itself (the diagonal)
        prev     ... on the token before it (rows 1..T-1, which have one)
        next     ... on the token after it (rows 0..T-2)
        Example: T = 3, a head attending one-hot to the previous token (row 0 to itself):
        prev = 1, self = 1/3, entropy = 0.
        """
        p = torch.stack([a[0].float() for a in self.attentions])  # (L, A, T, T) rows = queries
        T = p.shape[-1]
        is_cls = torch.tensor([t == "[CLS]" for t in self.tokens])  # (T,) key columns
        is_sep = torch.tensor([t == "[SEP]" for t in self.tokens])
        diag = p.diagonal(dim1=-2, dim2=-1)  # (L, A, T): p[i, i]
        stats = {
            # xlogy gives 0 * log 0 = 0 where a head ignores a token entirely
            "entropy": -torch.special.xlogy(p, p).sum(-1).mean(-1),
            "cls": p[..., is_cls].sum(-1).mean(-1),
            "sep": p[..., is_sep].sum(-1).mean(-1),
            "self": diag.mean(-1),
            # p[i, i-1] is the first sub-diagonal, p[i, i+1] the first super-diagonal
            "prev": p.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1) if T > 1 else torch.zeros(p.shape[:2]),
            "next": p.diagonal(offset=1, dim1=-2, dim2=-1).mean(-1) if T > 1 else torch.zeros(p.shape[:2]),
        }
        return {k: v.numpy().astype(np.float64) for k, v in stats.items()}


@dataclass
class QueryKeyResult(AttentionResult):
    """An AttentionResult plus what each head's attention is computed from: for layer l, head h,
    attentions[l][0, h] = softmax(queries[l][0, h] @ keys[l][0, h].T / sqrt(d)), d = head size
    (no mask term: one unpadded text)."""

    queries: tuple[torch.Tensor, ...] = ()  # L x [1, heads, T, d] float32 cpu, before the 1/sqrt(d)
    keys: tuple[torch.Tensor, ...] = ()  # L x [1, heads, T, d] float32 cpu


@dataclass
class AblationResult:
    effect: torch.Tensor  # [L, heads]: metric with the head silenced minus baseline
    baseline: float  # the metric with every head on
    metric: str  # "loss" (mean MLM cross-entropy at the [MASK]s, +: head helped)
    # or "probability" (P of the unablated top token at the first mask)
    tokens: list[str]
    mask_positions: list[int]


@dataclass
class AnswerResult:
    spans: list[Span]  # best first, top_k of them; .text == context[.start:.end]
    tokens: list[str]  # the tokens of the window holding the best span
    start_probs: list[float]  # per token of that window: softmax of start logits over it
    end_probs: list[float]
    offsets: list[tuple[int, int] | None]  # per token of that window: chars in the context (None off-context)
    window_index: int  # which window (0-based); num_windows says how many there were
    num_windows: int
    question_truncated: bool


@dataclass
class EmbeddingResult:
    """The paper's Figure 2: input = token + segment + position embeddings."""

    tokens: list[str]
    token: torch.Tensor  # [T, H] word embeddings
    segment: torch.Tensor  # [T, H] token-type embeddings
    position: torch.Tensor  # [T, H] position embeddings
    total: torch.Tensor  # [T, H] their sum (before LayerNorm)
    normalized: torch.Tensor  # [T, H] after the embedding LayerNorm: what layer 0 receives
    segment_ids: list[int]
    # parts this model does not add, each with why ({"position": "rotary ..."}): zeros above
    missing: dict[str, str] = field(default_factory=dict)

    @property
    def note(self) -> str:
        """What the view says about the missing parts ("" when the model has all three)."""
        parts = "; ".join(f"no {part} embeddings ({why})" for part, why in self.missing.items())
        return f"{parts}: shown as 0" if parts else ""


class TaggedWord(NamedTuple):
    """One word's tag (explore.tag), read from the word's first sub-token (the paper's rule)."""

    word: str
    tag: str  # the most probable tag (e.g. "B-PER", "NOUN"; "O": outside any entity)
    probability: float  # softmax over the model's tags at the word's first piece
    runner_up: str  # the second most probable tag ("" for a model with one tag)
    runner_up_probability: float
    pieces: tuple[str, ...]  # the word's WordPiece tokens: ("play", "##ing"); the tag sits on the first
    start: int | None = None  # where the word is in the text (characters), None when words were given
    end: int | None = None

    @property
    def joined(self) -> str:
        """The pieces as one string, as the page shows them: "play ##ing"."""
        return " ".join(self.pieces)


class ReadsAsList(Sequence):
    """A result that reads as the list it holds (`items`): result[0], len(result), for x in result."""

    items: list

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self) -> int:
        return len(self.items)

    def __eq__(self, other) -> bool:
        """Equal to the same list, as the list it reads as."""
        return list(self) == list(other) if isinstance(other, (list, ReadsAsList)) else NotImplemented


@dataclass(eq=False)
class TagResult(ReadsAsList):
    """One TaggedWord per word, in order (the result reads as that list), plus how the text was
    read: `num_windows` (windows of `max_seq_length` tokens, `doc_stride` pieces apart) and
    `num_pieces`."""

    items: list[TaggedWord]
    num_windows: int
    num_pieces: int
    max_seq_length: int
    doc_stride: int


@dataclass
class LogitLensResult:
    """The masked-LM head read at every layer: for each [MASK] (outer lists, in text order) and
    each layer (inner lists: 0 = the input embeddings, L = the last layer), the top_k tokens with
    their probabilities, and where the final answer (the last layer's top-1, fill_mask's) stands."""

    tokens: list[str]  # what the model saw
    mask_positions: list[int]
    top: list[list[list[tuple[str, float]]]]  # [mask][layer] -> top_k (token, probability), best first
    final: list[str]  # [mask]: the last layer's top-1 token
    final_rank: list[list[int]]  # [mask][layer]: its rank at that layer (1 = the layer's top guess)
    final_probability: list[list[float]]  # [mask][layer]: its probability at that layer
    truncated: int  # tokens cut from the end

    @property
    def num_layers(self) -> int:
        """Encoder layers L (the lists have L + 1 entries: the embeddings, then each layer)."""
        return len(self.final_rank[0]) - 1 if self.final_rank else 0

    def first_layer_right(self, mask: int = 0) -> int:
        """The first layer from which on the final answer stays the top guess."""
        ranks = self.final_rank[mask]
        layer = len(ranks) - 1
        while layer > 0 and ranks[layer - 1] == 1:
            layer -= 1
        return layer


@dataclass(eq=False)
class FillMaskResult(ReadsAsList):
    """One entry per [MASK] (each a list of (token, probability), best first; the result reads as
    that list), plus what the model saw: `tokens`, `mask_positions` and `truncated` (tokens cut
    from the end)."""

    items: list[list[tuple[str, float]]]
    tokens: list[str]
    mask_positions: list[int]
    truncated: int
