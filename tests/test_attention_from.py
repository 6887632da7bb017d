"""lab.inspect.attribution.attention_from and top_tokens (notebook 09): attention from any token
beside an attribution, equal to attention_vs_attribution for [CLS]'s row; the top token of each view."""

import numpy as np
import pytest
import torch

import lab
from lab import explore
from lab.inspect import probing
from lab.inspect.attribution import (
    AttentionComparison,
    AttributionResult,
    attention_from,
    attention_vs_attribution,
    top_tokens,
)
from lab.inspect.explore import AttentionResult
from tests.conftest import ROOT

TOKENS = ["[CLS]", "not", "bad", "at", "all", "[SEP]"]


def fake(scores, rows):
    """An attribution with these scores and a one-layer, one-head attention with these rows."""
    T = len(TOKENS)
    maps = torch.full((1, 1, T, T), 1.0 / T)
    for query, row in rows.items():
        maps[0, 0, query] = torch.tensor(row)
    attention = AttentionResult(tokens=TOKENS, attentions=(maps,), sentence_b_start=None, truncated=0)
    attribution = AttributionResult(
        tokens=TOKENS, scores=scores, task="classify", target="log-odds of positive", answer="positive",
        method="integrated_gradients", baseline="", f_input=1.0, f_baseline=0.0, steps=32, completeness_error=0.0,
    )  # fmt: skip
    return attention, attribution


def test_cls_row_is_attention_vs_attribution():
    attention, attribution = fake([0.0, 2.0, -3.0, 0.5, 0.1, 0.0], {0: [0.1, 0.4, 0.2, 0.1, 0.1, 0.1]})
    a = attention_from(attention, attribution)
    b = attention_vs_attribution(attention, attribution)
    assert isinstance(a, AttentionComparison)
    assert np.array_equal(a.attention, b.attention) and a.pearson == b.pearson and a.spearman == b.spearman


def test_another_row_and_the_top_tokens():
    # attribution's biggest |score| is "bad" (negative: against the answer); the row of token 4 looks at "not"
    attention, attribution = fake([0.0, 2.0, -3.0, 0.5, 0.1, 0.0], {4: [0.0, 0.7, 0.1, 0.1, 0.1, 0.0]})
    c = attention_from(attention, attribution, query=4)
    assert c.attention.tolist() == pytest.approx([0.0, 0.7, 0.1, 0.1, 0.1, 0.0])
    assert c.words.tolist() == [False, True, True, True, True, False]
    # |scores| 2, 3, 0.5, 0.1 against 0.7, 0.1, 0.1, 0.1: ranks (3, 4, 2, 1) and (4, 2, 2, 2)
    assert c.spearman == pytest.approx(np.corrcoef([3, 4, 2, 1], [4, 2, 2, 2])[0, 1])
    top = top_tokens(c)
    assert (top.attribution_token, top.attention_token, top.agree) == ("bad", "not", False)
    assert top.attribution_score == -3.0 and top.attention_rank_of_top_attribution == 2
    agree = top_tokens(attention_from(*fake([0, 1, 0, 0, 0, 0], {4: [0, 0.9, 0, 0, 0.1, 0]}), query=4))
    assert agree.agree and agree.attribution_token == "not"


def test_clear_errors():
    attention, attribution = fake([0.0] * 6, {})
    with pytest.raises(ValueError, match="query"):
        attention_from(attention, attribution, query=6)
    with pytest.raises(ValueError, match="layer"):
        attention_from(attention, attribution, layer=1)
    other = AttentionResult(
        tokens=TOKENS[:-1] + ["x"], attentions=attention.attentions, sentence_b_start=None, truncated=0
    )
    with pytest.raises(ValueError, match="different texts"):
        attention_from(other, attribution)


def test_on_a_bundled_qa_model():
    """The answer's start row on minilm-squad: a real attention row over the question and context."""
    model, tok = lab.load(ROOT / "models/minilm-squad")
    q, ctx = "When was the lighthouse built?", "The lighthouse was built in 1861 on a black rock."
    attr = explore.attributions(model, tok, q, ctx, steps=8, tolerance=None)
    att = explore.attention(model, tok, q, ctx)
    c = attention_from(att, attr, query=attr.highlight[0])
    assert c.attention.sum() == pytest.approx(1.0, abs=1e-4) and -1 <= c.spearman <= 1
    assert top_tokens(c).attribution in np.flatnonzero(c.words)


def test_pos_data_falls_back_to_the_invented_sentences(monkeypatch, tmp_path):
    monkeypatch.setenv("BERT_LAB_DATA", str(tmp_path))  # a data folder without ud-ewt/
    data, real = probing.pos_data(100, 100)
    assert real is False and "invented" in data.split
    assert data.train_words > 100 and data.test_words > 100  # every sample sentence: the limits are for UD
    assert "NOUN" in data.labels and all(len(w) == len(t) for w, t in zip(*data.train))
