"""explore.attributions (issue 22, point 2): integrated gradients' completeness on every bundled
model and target kind, gradient x input's shape, the forward pass from word embeddings equal to
the model's own, clear errors; the figures and their CSV; the dashboard's "why?" handlers."""

import csv
import functools
import json

import numpy as np
import pytest
import torch

import lab
from dashboard.common import SHADE_MAX
from lab import explore, plots
from lab.figures import numbers, plotly_figures
from lab.inspect.attribution import _forward_from_words, attention_vs_attribution
from tests.conftest import BUNDLED, ROOT, downloaded_csv, figure_spec, tiny_config

CONTEXT = (
    "Elizabeth Bennet lived at Longbourn with her parents and four sisters. In 1811 Mr. Bingley, "
    "a rich young man, rented Netherfield Park. His friend Mr. Darcy was proud and did not dance "
    "with Elizabeth at the first ball."
)
# (model, task, text, text_pair): each target kind on each bundled model that serves it
CASES = [
    ("models/minilm-sst2", "classify", "a charming and often moving film .", None),
    ("models/bert-lab-sst2", "classify", "the plot is thin and the acting is worse .", None),
    ("models/minilm-squad", "answer", "What did Mr. Bingley rent?", CONTEXT),
    ("models/bert-lab-squad", "answer", "What did Mr. Bingley rent?", CONTEXT),
    (BUNDLED, "fill_mask", "he opened the [MASK] and walked into the garden .", None),
    (BUNDLED, "next_sentence", "elizabeth walked into the drawing room .", "her mother sat by the fire ."),
]


@functools.cache
def load(name):
    return lab.load(ROOT / name)


@pytest.mark.parametrize("name,task,text,pair", CASES, ids=[f"{c[0].split('/')[-1]}-{c[1]}" for c in CASES])
def test_integrated_gradients_are_complete(name, task, text, pair):
    """The scores add up to f(input) - f(baseline) within 5% at the library's 32 intervals, with
    no refinement; the special tokens score 0 (the baseline keeps them); f is the model's own
    answer by default."""
    model, tok = load(name)
    r = explore.attributions(model, tok, text, pair, task=task, steps=32, tolerance=None)
    assert r.task == task and r.steps == 32 and r.method == "integrated_gradients"
    change = r.f_input - r.f_baseline
    assert abs(change) > 0.1, (r.f_input, r.f_baseline)  # something to share out
    assert abs(sum(r.scores) - change) <= 0.05 * abs(change), (sum(r.scores), change)
    assert r.completeness_error == pytest.approx(abs(sum(r.scores) - change) / abs(change), abs=1e-4)
    assert len(r.scores) == len(r.tokens)
    for t, s in zip(r.tokens, r.scores):
        if t in ("[CLS]", "[SEP]", "[MASK]"):
            assert s == 0.0
    assert any(s != 0 for s in r.scores)
    assert "[PAD]" in r.baseline and "log-odds" in r.target


def test_f_is_the_models_own_answer():
    """f_input is the log-odds of what classify / answer / fill_mask / next_sentence say."""
    model, tok = load("models/bert-lab-sst2")
    probs = explore.classify(model, tok, "the plot is thin and the acting is worse .")
    best, p = next(iter(probs.items()))
    r = explore.attributions(model, tok, "the plot is thin and the acting is worse .", steps=4, tolerance=None)
    assert r.answer == best and r.f_input == pytest.approx(np.log(p / (1 - p)), abs=1e-4)
    model, tok = load(BUNDLED)
    text = "he opened the [MASK] and walked into the garden ."
    (word, p), *_ = explore.fill_mask(model, tok, text)[0]
    r = explore.attributions(model, tok, text, steps=4, tolerance=None)
    assert f"“{word}”" in r.answer and r.f_input == pytest.approx(np.log(p / (1 - p)), abs=1e-4)
    a, b = CASES[-1][2:]
    p = explore.next_sentence(model, tok, a, b)
    r = explore.attributions(model, tok, a, b, target="IsNext", steps=4, tolerance=None)
    assert r.f_input == pytest.approx(np.log(p / (1 - p)), abs=1e-4)
    model, tok = load("models/bert-lab-squad")
    best = explore.answer(model, tok, "What did Mr. Bingley rent?", CONTEXT).spans[0].text
    r = explore.attributions(model, tok, "What did Mr. Bingley rent?", CONTEXT, steps=4, tolerance=None)
    assert r.answer.strip("“”") == best.lower() and r.highlight == tuple(range(r.highlight[0], r.highlight[-1] + 1))


def test_refinement_reaches_the_tolerance_where_32_intervals_do_not():
    """MiniLM's classifier on a sentence whose f barely moves: 32 fixed intervals miss by more
    than 5%; the default refinement halves them until the error is under 1%."""
    model, tok = load("models/minilm-sst2")
    fixed = explore.attributions(model, tok, "it is not boring .", steps=32, tolerance=None)
    refined = explore.attributions(model, tok, "it is not boring .", steps=32)
    assert fixed.completeness_error > 0.05, fixed.completeness_error
    assert refined.completeness_error <= 0.01 and refined.steps > 32, (refined.completeness_error, refined.steps)
    assert refined.f_input == fixed.f_input and refined.f_baseline == fixed.f_baseline


def test_the_forward_pass_from_word_embeddings_is_the_models_own():
    """_forward_from_words(word_embeddings(ids)) gives model(ids) to float precision, per head."""
    for name in ("models/bert-lab-sst2", "models/bert-lab-squad", BUNDLED):
        model, tok = load(name)
        enc = tok.encode("she opened the [MASK] and walked in .", "it was late .")
        ids, types = torch.tensor([enc.input_ids]), torch.tensor([enc.token_type_ids])
        with torch.no_grad():
            ours = _forward_from_words(model, model.bert.embeddings.word_embeddings(ids), types)
            theirs = model(ids, types)
        for key in ("logits", "start_logits", "end_logits", "nsp_logits", "mlm_logits"):
            if getattr(theirs, key, None) is not None:
                torch.testing.assert_close(getattr(ours, key), getattr(theirs, key), rtol=1e-5, atol=1e-5)


def test_gradient_x_input_and_the_model_is_left_as_it_was():
    model, tok = load(BUNDLED)
    text = "he opened the [MASK] and walked into the garden ."
    model.train()
    r = explore.attributions(model, tok, text, method="gradient_x_input")
    assert model.training  # the mode is put back
    model.eval()
    assert r.method == "gradient_x_input" and r.steps == 1 and len(r.scores) == len(r.tokens) == 12
    ig = explore.attributions(model, tok, text)
    assert (r.f_input, r.f_baseline) == pytest.approx((ig.f_input, ig.f_baseline), abs=1e-5)
    # the first-order guess does not add up here; integrated gradients do
    assert r.completeness_error > 0.05 > ig.completeness_error
    assert all(p.grad is None for p in model.parameters()) and torch.is_grad_enabled()


def test_clear_errors():
    model, tok = load(BUNDLED)
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        explore.attributions(model, tok, "no mask here .")
    with pytest.raises(ValueError, match="method must be"):
        explore.attributions(model, tok, "a [MASK] .", method="lime")
    with pytest.raises(ValueError, match="steps must be"):
        explore.attributions(model, tok, "a [MASK] .", steps=0)
    with pytest.raises(ValueError, match="mask 3 does not exist"):
        explore.attributions(model, tok, "a [MASK] .", mask=3)
    with pytest.raises(ValueError, match="not in the vocabulary|single token"):
        explore.attributions(model, tok, "a [MASK] .", target="zzqxjv")
    with pytest.raises(ValueError, match="not a answer of this model|IsNext, NotNext"):
        explore.attributions(model, tok, "a b .", "c d .", target="maybe")
    with pytest.raises(ValueError, match="no classification head"):
        explore.attributions(model, tok, "a b .", task="classify")
    sst2, tok2 = load("models/bert-lab-sst2")
    with pytest.raises(ValueError, match="choose one of negative, positive"):
        explore.attributions(sst2, tok2, "a fine film .", target="neutral")
    assert explore.attributions(sst2, tok2, "a fine film .", target=1, steps=4).answer == "positive"
    qa, tok3 = load("models/bert-lab-squad")
    with pytest.raises(ValueError, match="span, start or end"):
        explore.attributions(qa, tok3, "who?", "Nemo built it.", target="middle")
    with pytest.raises(ValueError, match="question .* and a context"):
        explore.attributions(qa, tok3, "who built it?")
    encoder = lab.BertModel(tiny_config(vocab_size=tok.vocab_size))
    with pytest.raises(ValueError, match="no head to attribute"):
        explore.attributions(encoder, tok, "a [MASK] .")
    with pytest.raises(ValueError, match="empty|no text|type"):
        explore.attributions(model, tok, "   ")


def test_attention_beside_attribution_and_the_figures():
    """The [CLS] row of the last layer, mean of its heads; Pearson/Spearman over the text's
    tokens as numpy computes them; the figures draw the same numbers and their CSVs list them."""
    model, tok = load(BUNDLED)
    a, b = CASES[-1][2:]
    r = explore.attributions(model, tok, a, b)
    att = explore.attention(model, tok, a, b)
    cmp = attention_vs_attribution(att, r)
    expected = att.attentions[-1][0, :, 0, :].mean(0).numpy()
    np.testing.assert_allclose(cmp.attention, expected, rtol=1e-6)
    words = [i for i, t in enumerate(r.tokens) if t not in ("[CLS]", "[SEP]")]
    assert list(np.flatnonzero(cmp.words)) == words
    s, at = np.abs(np.array(r.scores))[words], expected[words]
    assert cmp.pearson == pytest.approx(np.corrcoef(s, at)[0, 1])
    ranks = lambda v: np.argsort(np.argsort(v))  # noqa: E731 (no ties in these floats)
    assert cmp.spearman == pytest.approx(np.corrcoef(ranks(s), ranks(at))[0, 1])
    fig = plotly_figures.attention_vs_attribution(cmp, r)
    spec = figure_spec(fig)
    assert [t["type"] for t in spec["data"]] == ["bar", "bar"]
    assert "Pearson r = " in spec["layout"]["title"]["text"] and "Spearman" in spec["layout"]["title"]["text"]
    rows = list(csv.DictReader(plotly_figures.figure_csv(fig).splitlines()))
    assert [float(x["attribution"]) for x in rows] == pytest.approx(r.scores)
    bars = plotly_figures.attributions(r)
    rows = list(csv.DictReader(plotly_figures.figure_csv(bars).splitlines()))
    assert [x["token"] for x in rows] == r.tokens and [float(x["score"]) for x in rows] == pytest.approx(r.scores)
    data = numbers.attributions(r)
    assert np.abs(data.shaded).max() == pytest.approx(1.0)
    assert "completeness error" in data.subtitle
    plots.attributions(r)
    plots.attention_vs_attribution(cmp, r)
    plots.logit_lens(explore.logit_lens(model, tok, "the captain of the [MASK] looked at me and [MASK] ."))
    with pytest.raises(ValueError, match="different texts"):
        attention_vs_attribution(explore.attention(model, tok, "other words ."), r)


def test_a_token_that_looks_like_html_is_escaped():
    model, tok = load("models/minilm-sst2")
    r = explore.attributions(model, tok, "<b>charming</b> film", steps=4, tolerance=None)
    assert "<" in r.tokens
    spec = json.loads(plotly_figures.attributions(r).to_json())
    for shown in (spec["data"][0]["x"], spec["layout"]["xaxis"]["ticktext"]):
        assert any("&lt;" in x for x in shown) and not any("<" in x for x in shown), shown


# ----------------------------------------------------------------------------------------------
# The dashboard
# ----------------------------------------------------------------------------------------------


def _check_view(out, answer_bit):
    chips, fig, path, status = out
    assert fig is not None, status
    spec = figure_spec(fig)
    assert spec["data"][0]["type"] == "bar"
    scores = [s for _, s in chips if s is not None]
    # the largest |score| at the deepest shade, which keeps the words readable on it (WCAG 1.4.3)
    assert scores and max(abs(s) for s in scores) == pytest.approx(SHADE_MAX, abs=1e-3)
    rows = list(csv.DictReader(downloaded_csv(path).splitlines()))
    assert len(rows) == len(spec["data"][0]["x"])
    assert answer_bit in status and "completeness error" in status, status
    return status


def test_the_why_views(dash):
    """Classify, Question Answering and Masked LM each answer "why?" with the tokens shaded, a
    figure, its CSV and a status; bad input gets a message, not a figure."""
    _check_view(dash.tab("classify").why("models/bert-lab-sst2", "a charming and often moving film ."), "positive")
    _check_view(
        dash.tab("qa").why("models/bert-lab-squad", "What did Mr. Bingley rent?", CONTEXT, "gradient x input"),
        "log-odds of start",
    )
    _check_view(dash.tab("mlm").why(BUNDLED, "he opened the [mask] and walked into the garden ."), "[MASK] 1")
    *cleared, status = dash.tab("mlm").why(BUNDLED, "no mask here .")
    assert cleared == [None, None, None] and "no [MASK]" in status
    *cleared, status = dash.tab("classify").why("models/bert-lab-classroom", "a film .")
    assert cleared == [None, None, None] and "⚠️" in status


def test_the_attention_tab_compares_attribution_and_attention(dash):
    tab = dash.tab("attention")
    fig, path, status = tab.attribution_attention(BUNDLED, *CASES[-1][2:])
    assert "IsNext" in status and "Pearson r = " in status and "Spearman ρ = " in status, status
    assert {r["token"] for r in csv.DictReader(downloaded_csv(path).splitlines())} >= {"[CLS]", "elizabeth"}
    fig, path, status = tab.attribution_attention("models/bert-lab-sst2", "a charming film .", "")
    assert fig is not None and "positive" in status
    fig, path, status = tab.attribution_attention(BUNDLED, "no second sentence and no mask .", "")
    assert fig is None and "give sentence B" in status


def test_the_why_views_answer_a_repeated_request_from_their_cache(dash):
    """A class sends the tab's example again and again: the second identical request is read from
    the server's cache (the same result object), a different text or method is computed."""
    cache = dash.ctx.attributions
    tab = dash.tab("classify")
    model = dash.store.default_model("classify")
    hits, misses = cache.hits, cache.misses
    first = tab.why(model, "a quiet , gentle film about loss .")
    again = tab.why(model, "a quiet , gentle film about loss .")
    assert first[3] == again[3] and cache.hits == hits + 1 and cache.misses == misses + 1
    tab.why(model, "a quiet , gentle film about loss .", "", "gradient x input")
    assert cache.misses == misses + 2
    # an error is not kept: the next request tries again and says the same
    bad = tab.why(model, "")
    assert bad[0] is None and "sentence" in bad[3] and cache.misses == misses + 2


def test_concurrent_identical_requests_compute_once():
    """Twenty threads ask for the same attribution at once: one computes it, the others wait and
    read it; a failing computation is not kept and every waiter gets to try (and fail) itself."""
    import threading
    import time

    from dashboard.common import AttributionCache

    cache, calls = AttributionCache(), []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return object()

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get(("k",), slow))) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(r) for r in results}) == 1 and cache.misses == 1 and cache.hits == 19

    def broken():
        raise ValueError("no")

    with pytest.raises(ValueError):
        cache.get(("bad",), broken)
    with pytest.raises(ValueError):
        cache.get(("bad",), broken)  # not kept: tried again
    assert cache.misses == 3
