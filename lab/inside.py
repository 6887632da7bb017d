"""Small helpers for notebook 09 ("Inside BERT"): attribution beside the attention of any token,
and the tokens each of them puts first.

    from lab import explore, inside
    attr = explore.attributions(model, tok, question, context)        # QA: the chosen span
    att = explore.attention(model, tok, question, context)
    by_cls = inside.attention_from(att, attr)                          # [CLS]'s row (query 0)
    by_start = inside.attention_from(att, attr, query=attr.highlight[0])  # the answer's start
    top = inside.top_tokens(by_start)   # .attribution / .attention: token indices; .agree

attention_from(attention, attribution, query=0) is lab.attribution.attention_vs_attribution with
the attention row of any token, not only [CLS]'s: a classifier reads its answer from [CLS], but a
question-answering head reads the start and end logits at every token, so the row of the answer's
start is the other natural comparison. With query=0 it gives attention_vs_attribution's result
exactly (tests/test_inside.py).

top_tokens(comparison) names the text token with the largest |attribution| and the one with the
most attention (over the same tokens the correlations use: [CLS], [SEP], [MASK] left out). When
they differ, attention and attribution point at different words for the same answer: the
concrete case of "attention is not explanation" (Jain & Wallace 2019).

pos_data(max_train_words, max_test_words) is what notebook 09 probes: UD English-EWT's gold UPOS
(lab.probing.ud_pos_data: train on dev, test on test) when the shared data has it, else the lab's
invented sentences notebooks/data/tagging_{train,test}.conllu (an illustration only).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .attribution import AttentionComparison, attention_vs_attribution
from .probing import PosData, ud_data_missing, ud_pos_data

SAMPLES = Path(__file__).resolve().parents[1] / "notebooks" / "data"  # tagging_train.conllu, tagging_test.conllu


def attention_from(attention, attribution, query: int = 0, layer: int = -1) -> AttentionComparison:
    """The attention token `query` pays to each token in `layer` (default the last; mean over its
    heads) beside the attribution of the same text, with the Pearson and Spearman correlations of
    |attribution| and that attention over the text's tokens (as attention_vs_attribution)."""
    return attention_vs_attribution(attention, attribution, query=query, layer=layer)


@dataclass
class TopTokens:
    """The text token with the largest |attribution| and the one with the most attention."""

    attribution: int  # token index
    attention: int  # token index
    attribution_token: str
    attention_token: str
    attribution_score: float  # its signed score (negative: it pushes against the answer)
    attention_rank_of_top_attribution: int  # where the top-attribution token stands in attention (1 = first)

    @property
    def agree(self) -> bool:
        return self.attribution == self.attention


def top_tokens(comparison: AttentionComparison) -> TopTokens:
    """The token each view puts first, over the text's tokens (comparison.words)."""
    words = np.flatnonzero(comparison.words)
    if len(words) == 0:
        raise ValueError("the text has no tokens besides [CLS], [SEP] and [MASK]")
    scores, paid = np.asarray(comparison.scores), np.asarray(comparison.attention)
    by_attribution = int(words[np.argmax(np.abs(scores[words]))])
    by_attention = int(words[np.argmax(paid[words])])
    rank = 1 + int(np.sum(paid[words] > paid[by_attribution]))
    return TopTokens(
        attribution=by_attribution,
        attention=by_attention,
        attribution_token=comparison.tokens[by_attribution],
        attention_token=comparison.tokens[by_attention],
        attribution_score=float(scores[by_attribution]),
        attention_rank_of_top_attribution=rank,
    )


def pos_data(
    max_train_words: int | None = None, max_test_words: int | None = None, samples=SAMPLES
) -> tuple[PosData, bool]:
    """Words and gold UPOS tags to probe -> (data, real): UD English-EWT (train on dev, test on
    test, the first whole sentences up to max_*_words each; real=True) when the shared data has
    it, else every sentence of samples/tagging_train.conllu and tagging_test.conllu (real=False)."""
    from .tagging import read_tagged

    if not ud_data_missing():
        return ud_pos_data(max_train_words, max_test_words), True
    samples = Path(samples)
    parts = [read_tagged(samples / f"tagging_{name}.conllu", format="conllu") for name in ("train", "test")]
    (train_words, train_tags), (test_words, test_tags) = [
        ([list(s.words) for s in d.sentences], [list(s.tags) for s in d.sentences]) for d in parts
    ]
    labels = sorted({t for tags in train_tags + test_tags for t in tags})
    split = (
        f"trained on {len(train_words)} invented sentences (tagging_train.conllu), scored on {len(test_words)} "
        "others (tagging_test.conllu): no UD English-EWT here, an illustration only"
    )
    return PosData((train_words, train_tags), (test_words, test_tags), labels, split), False
