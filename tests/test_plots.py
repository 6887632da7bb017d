"""lab.figures.matplotlib_figures: every figure shows the numbers it was given, reads well, and is thread-safe.

Results are built by hand (small tensors: the figures read only the fields the spec names) and,
at the end, by lab.inspect.explore on a tiny model.
"""

import ast
import inspect
import io
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from lab import explore, plots
from lab.data.squad import Span

HIGHLIGHT = to_rgba(plots.HIGHLIGHT)


# ----------------------------------------------------------------------------------------------
# Hand-built results
# ----------------------------------------------------------------------------------------------


def attention_result(L=2, A=3, T=6, b=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    attentions = tuple(torch.randn(1, A, T, T, generator=g).softmax(-1) for _ in range(L))  # L x (1, A, T, T)
    tokens = ["[CLS]"] + [f"w{i}" for i in range(T - 2)] + ["[SEP]"]
    return SimpleNamespace(tokens=tokens, attentions=attentions, sentence_b_start=b, truncated=0)


def stats_of(L=2, A=3, seed=0):
    rng = np.random.default_rng(seed)
    return {k: rng.random((L, A)) for k in ("entropy", "cls", "sep", "self", "prev", "next")}


def ablation_result(L=2, A=3, metric="loss", seed=0):
    g = torch.Generator().manual_seed(seed)
    effect = (torch.randn(L, A, generator=g) * 0.2).round(decimals=3)  # (L, A)
    return SimpleNamespace(
        effect=effect,
        baseline=2.5 + seed,
        metric=metric,
        tokens=["[CLS]", "the", "[MASK]", "sat", "[SEP]"],
        mask_positions=[2],
    )


def answer_result(T=12, span=(5, 7), seed=0, text="w1 w2 w3"):
    """Tokens [CLS] q ? [SEP] w0 w1 ... [SEP]; context word k is characters 3k..3k+2."""
    rng = np.random.default_rng(seed)
    n = T - 5  # context words
    tokens = ["[CLS]", "q", "?", "[SEP]"] + [f"w{k}" for k in range(n)] + ["[SEP]"]
    offsets = [None] * 4 + [(3 * k, 3 * k + 2) for k in range(n)] + [None]
    start, end = rng.random(T), rng.random(T)
    first, last = span  # token indexes of the best span
    best = Span(text, offsets[first][0], offsets[last][1], 4.2, window_index=0)
    return SimpleNamespace(
        spans=[best, Span("w0", 0, 2, 1.0, window_index=0)],
        tokens=tokens,
        start_probs=list(start / start.sum()),
        end_probs=list(end / end.sum()),
        offsets=offsets,
        window_index=0,
        num_windows=1,
        question_truncated=False,
    )


def embedding_result(T=7, H=40, b_start=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    segment_ids = [0] * b_start + [1] * (T - b_start)
    token, position = torch.randn(T, H, generator=g), torch.randn(T, H, generator=g)
    segment = torch.randn(2, H, generator=g)[torch.tensor(segment_ids)]  # (T, H): two distinct rows
    total = token + segment + position
    normalized = torch.nn.functional.layer_norm(total, (H,))
    return SimpleNamespace(
        tokens=[f"t{i}" for i in range(T)],
        token=token,
        segment=segment,
        position=position,
        total=total,
        normalized=normalized,
        segment_ids=segment_ids,
    )


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------


def image_axes(fig):
    """The axes that hold a heatmap (not the colorbars)."""
    return [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]


def render(fig) -> bytes:
    """Draw the figure (layout, text, colours) as a PNG; small dpi keeps it fast."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=30)
    return buffer.getvalue()


def dashboard_sized(fig):
    width, height = fig.get_size_inches()
    assert 8 <= width <= 10 and 2.5 <= height <= 14, (width, height)


def tick_texts(labels):
    return [t.get_text() for t in labels]


# ----------------------------------------------------------------------------------------------
# The module itself
# ----------------------------------------------------------------------------------------------

FIGURES = [
    "training_curves",
    "attention_heatmap",
    "attention_grid",
    "head_stats_heatmaps",
    "ablation_heatmap",
    "span_probabilities",
    "embedding_components",
    "logit_lens",  # tests/test_logit_lens.py and tests/test_attribution.py
    "attributions",
    "attention_vs_attribution",
    "probe_layers",  # tests/test_probing.py
    "occurrence_similarity",
    "sense_separation",
]  # the last two: tests/test_contextual.py


def test_docstring_lists_every_figure_function_and_pyplot_is_never_imported():
    public = [
        name
        for name, f in inspect.getmembers(plots, inspect.isfunction)
        if f.__module__ == plots.__name__ and not name.startswith("_")
    ]
    assert sorted(public) == sorted(FIGURES)
    for name in public:
        assert f"{name}(" in plots.__doc__, name
    tree = ast.parse(inspect.getsource(plots))
    imported = [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
    imported += [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    assert not any("pyplot" in name or name == "pylab" for name in imported), imported


# ----------------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------------


def test_attention_heatmap_shows_one_heads_matrix_with_tokens_on_both_axes():
    result = attention_result(L=2, A=3, T=6, b=3)
    fig = plots.attention_heatmap(result, layer=1, head=2)
    assert isinstance(fig, Figure)
    dashboard_sized(fig)
    assert len(fig.axes) == 2  # the map and its colorbar
    [ax] = image_axes(fig)
    assert ax.get_title() == "layer 1, head 2"
    np.testing.assert_allclose(ax.images[0].get_array(), result.attentions[1][0, 2].numpy(), rtol=1e-6)
    assert tick_texts(ax.get_xticklabels()) == result.tokens  # keys
    assert tick_texts(ax.get_yticklabels()) == result.tokens  # queries
    assert all(t.get_rotation() == 90 for t in ax.get_xticklabels())
    assert "key" in ax.get_xlabel() and "query" in ax.get_ylabel()
    assert len(ax.texts) == 36  # short: weights written in
    assert render(fig)[:4] == b"\x89PNG"
    # Python-style negative indexes name the same head, titled 0-based
    fig = plots.attention_heatmap(result, layer=-1, head=-1)
    assert image_axes(fig)[0].get_title() == "layer 1, head 2"


@pytest.mark.parametrize(
    "layer, head, message", [(2, 0, "layer 2 does not exist"), (0, 3, "head 3 does not exist"), (0.5, 0, "integer")]
)
def test_attention_heatmap_bad_index(layer, head, message):
    with pytest.raises(ValueError, match=message):
        plots.attention_heatmap(attention_result(L=2, A=3), layer, head)


def test_attention_heatmap_labels_stay_legible_for_200_tokens():
    result = attention_result(L=1, A=1, T=200)
    fig = plots.attention_heatmap(result, 0, 0)
    [ax] = image_axes(fig)
    for labels, ticks in ((ax.get_xticklabels(), ax.get_xticks()), (ax.get_yticklabels(), ax.get_yticks())):
        assert 40 <= len(labels) <= 110  # thinned, but still many
        assert all(t.get_fontsize() >= plots.MIN_FONT for t in labels)
        assert tick_texts(labels) == [result.tokens[int(i)] for i in ticks]  # each label under its token
    marks = set(ax.get_xticks()) | set(ax.get_xticks(minor=True))
    assert marks == set(range(200))  # every token keeps a mark
    assert not ax.texts  # no numbers in 40,000 cells


def test_attention_grid_of_one_layer_and_of_every_layer():
    result = attention_result(L=2, A=5, T=6)
    fig = plots.attention_grid(result, layer=1)
    dashboard_sized(fig)
    axes = image_axes(fig)
    assert len(fig.axes) == len(axes) == 5
    assert [ax.get_title() for ax in axes] == [f"head {h}" for h in range(5)]
    for h, ax in enumerate(axes):
        np.testing.assert_allclose(ax.images[0].get_array(), result.attentions[1][0, h].numpy(), rtol=1e-6)
        assert not ax.get_xticks().size and not ax.get_yticks().size  # small multiples: no ticks
    assert "layer 1" in fig.get_suptitle()

    fig = plots.attention_grid(result)  # layer=None: all layers x heads
    axes = image_axes(fig)
    assert len(fig.axes) == len(axes) == 10
    assert [ax.get_title() for ax in axes[:5]] == [f"head {h}" for h in range(5)]  # top row
    assert [ax.get_ylabel() for ax in axes[::5]] == ["layer 0", "layer 1"]  # left column
    for k, ax in enumerate(axes):
        l, h = divmod(k, 5)
        np.testing.assert_allclose(ax.images[0].get_array(), result.attentions[l][0, h].numpy(), rtol=1e-6)
    render(fig)
    with pytest.raises(ValueError, match="layer 2 does not exist"):
        plots.attention_grid(result, layer=2)


def test_head_stats_heatmaps_one_map_per_statistic():
    stats = stats_of(L=3, A=4)
    fig = plots.head_stats_heatmaps(stats)
    dashboard_sized(fig)
    axes = image_axes(fig)
    assert len(axes) == 6 and len(fig.axes) == 12  # six maps, six colorbars
    assert [ax.get_title() for ax in axes] == [plots.STAT_TITLES[k] for k in stats]
    for ax, key in zip(axes, stats):
        np.testing.assert_allclose(ax.images[0].get_array(), stats[key])
        assert ax.get_xlabel() == "head" and ax.get_ylabel() == "layer"
        assert [float(t.get_text()) for t in ax.texts] == pytest.approx(stats[key].flatten(), abs=0.005)
    # the attention shares share one colour scale; entropy has its own
    limits = {ax.get_title(): ax.images[0].get_clim() for ax in axes}
    shared = {lim for title, lim in limits.items() if title != plots.STAT_TITLES["entropy"]}
    assert len(shared) == 1
    render(fig)
    with pytest.raises(ValueError, match="layers, heads"):
        plots.head_stats_heatmaps({"cls": np.zeros((2, 3)), "sep": np.zeros((2, 4))})
    with pytest.raises(ValueError, match="no head statistics"):
        plots.head_stats_heatmaps({})


# ----------------------------------------------------------------------------------------------
# Ablation
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric, cmap", [("loss", "RdBu_r"), ("probability", "RdBu")])
def test_ablation_heatmap_annotates_every_head_on_a_scale_centred_at_zero(metric, cmap):
    result = ablation_result(L=3, A=4, metric=metric)
    fig = plots.ablation_heatmap(result)
    dashboard_sized(fig)
    [ax] = image_axes(fig)
    assert len(fig.axes) == 2
    np.testing.assert_allclose(ax.images[0].get_array(), result.effect.numpy(), rtol=1e-6)
    # one annotation per (layer, head), in row-major order, equal to the value in that cell
    values = [float(t.get_text()) for t in ax.texts]
    np.testing.assert_allclose(values, result.effect.flatten().numpy(), atol=5e-4)
    assert [t.get_position() for t in ax.texts] == [(h, l) for l in range(3) for h in range(4)]
    vmin, vmax = ax.images[0].get_clim()
    assert vmin == -vmax == pytest.approx(-float(result.effect.abs().max()))
    # red means "the model needed this head" whichever way the metric points
    assert ax.images[0].get_cmap().name == cmap
    assert "2.5" in ax.get_title() and metric.split()[0][:4] in ax.get_title()
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("head", "layer")
    render(fig)


def test_ablation_heatmap_keeps_tiny_effects_readable():
    result = ablation_result(L=2, A=2)
    result.effect = torch.tensor([[2e-5, -1e-5], [0.0, 4e-6]])
    [ax] = image_axes(plots.ablation_heatmap(result))
    np.testing.assert_allclose(
        [float(t.get_text()) for t in ax.texts], result.effect.flatten().numpy(), rtol=0.06, atol=1e-7
    )


# ----------------------------------------------------------------------------------------------
# Question answering
# ----------------------------------------------------------------------------------------------


def bars(ax):
    [container] = ax.containers
    return list(container)


def test_span_probabilities_bars_are_the_probabilities_and_the_best_span_is_red():
    result = answer_result(T=12, span=(5, 7))
    fig = plots.span_probabilities(result)
    dashboard_sized(fig)
    ax_start, ax_end = fig.axes
    assert (ax_start.get_title(), ax_end.get_title()) == ("start probability", "end probability")
    for ax, probs in ((ax_start, result.start_probs), (ax_end, result.end_probs)):
        heights = [b.get_height() for b in bars(ax)]
        np.testing.assert_allclose(heights, probs)
        red = [i for i, b in enumerate(bars(ax)) if b.get_facecolor() == HIGHLIGHT]
        assert red == [5, 6, 7]  # w1 w2 w3, the best span
    labels = ax_end.get_xticklabels()
    assert tick_texts(labels) == result.tokens and all(t.get_rotation() == 90 for t in labels)
    assert [to_rgba(t.get_color()) == HIGHLIGHT for t in labels] == [i in (5, 6, 7) for i in range(12)]
    assert "w1 w2 w3" in fig.get_suptitle()
    render(fig)


def test_span_probabilities_long_window_and_no_answer():
    result = answer_result(T=200, span=(150, 151), text="w146 w147")
    result.num_windows, result.window_index, result.question_truncated = 3, 1, True
    fig = plots.span_probabilities(result)
    ax_end = fig.axes[1]
    labels, ticks = ax_end.get_xticklabels(), [int(t) for t in ax_end.get_xticks()]
    assert 40 <= len(labels) <= 110 and all(t.get_fontsize() >= plots.MIN_FONT for t in labels)
    # the answer is always labelled, once: its tokens side by side would overlap (notebook 05)
    assert 150 in ticks and 151 not in ticks
    assert tick_texts(labels) == ["w146 w147" if i == 150 else result.tokens[i] for i in ticks]
    assert [to_rgba(t.get_color()) == HIGHLIGHT for t in labels] == [i == 150 for i in ticks]
    pitch = (plots.WIDTH - 0.8) * 72 / 200  # points from one token to the next
    assert all((b - a) * pitch >= labels[0].get_fontsize() for a, b in zip(ticks, ticks[1:]))  # none overlap
    assert "window 2 of 3" in fig.get_suptitle() and "question truncated" in fig.get_suptitle()
    render(fig)
    # "no answer" (SQuAD 2.0) is the [CLS] token
    result = answer_result()
    result.spans = [Span("", 0, 0, 1.0)]
    fig = plots.span_probabilities(result)
    assert [i for i, b in enumerate(bars(fig.axes[0])) if b.get_facecolor() == HIGHLIGHT] == [0]
    assert "no answer" in fig.get_suptitle()
    result.start_probs = result.start_probs[:-1]
    with pytest.raises(ValueError, match="12 tokens but 11 start"):
        plots.span_probabilities(result)


# ----------------------------------------------------------------------------------------------
# Embeddings and fill-mask
# ----------------------------------------------------------------------------------------------


def test_embedding_components_draws_the_papers_figure_2():
    result = embedding_result(T=7, H=40, b_start=4)
    fig = plots.embedding_components(result)
    dashboard_sized(fig)
    axes = image_axes(fig)
    assert len(axes) == 5 and len(fig.axes) == 7  # five maps, two colorbars
    titles = [ax.get_title() for ax in axes]
    for ax, _title, m in zip(
        axes, titles, (result.token, result.segment, result.position, result.total, result.normalized)
    ):
        np.testing.assert_allclose(ax.images[0].get_array(), m[:, :32].T.numpy(), rtol=1e-6)  # (dims, T)
    assert [t.split()[0] for t in titles] == ["token", "segment", "position", "sum", "after"]
    # token, segment, position and sum share one colour scale centred at 0 (the sum adds up)
    assert len({ax.images[0].get_clim() for ax in axes[:4]}) == 1
    vmin, vmax = axes[0].images[0].get_clim()
    assert vmin == -vmax
    assert tick_texts(axes[-1].get_xticklabels()) == result.tokens
    assert "32 of 40" in fig.get_suptitle()
    render(fig)
    fig = plots.embedding_components(result, dims=8)
    assert image_axes(fig)[0].images[0].get_array().shape == (8, 7)


# ----------------------------------------------------------------------------------------------
# Thread safety: the dashboard draws figures for many requests at once
# ----------------------------------------------------------------------------------------------


def test_figures_drawn_from_8_threads_at_once_keep_their_own_content():
    def work(seed):
        L, A = 1 + seed % 2, 2 + seed % 3  # every thread its own shapes
        att = attention_result(L=L, A=A, T=5 + seed % 4, seed=seed)
        stats, abl = stats_of(L, A, seed), ablation_result(L, A, seed=seed)
        ans, emb = answer_result(T=10 + seed, seed=seed), embedding_result(T=6, H=8, b_start=3, seed=seed)
        figs = {
            "heat": plots.attention_heatmap(att, L - 1, A - 1),
            "grid": plots.attention_grid(att),
            "stats": plots.head_stats_heatmaps(stats),
            "ablation": plots.ablation_heatmap(abl),
            "span": plots.span_probabilities(ans),
            "emb": plots.embedding_components(emb),
        }
        # drawing is where threads could collide (fonts, text layout): each thread draws one
        # figure, and across the 8 threads every kind of figure is drawn at once with the others
        pngs = [render(list(figs.values())[seed % 6])]
        return seed, (L, A), att, stats, abl, ans, figs, pngs

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, range(8)))
    for _seed, (L, A), att, stats, abl, ans, figs, pngs in results:
        assert all(png[:4] == b"\x89PNG" for png in pngs)
        [ax] = image_axes(figs["heat"])
        assert ax.get_title() == f"layer {L - 1}, head {A - 1}"
        np.testing.assert_allclose(ax.images[0].get_array(), att.attentions[-1][0, -1].numpy(), rtol=1e-6)
        grid = image_axes(figs["grid"])
        assert len(figs["grid"].axes) == len(grid) == L * A
        assert [ax.get_title() for ax in grid[:A]] == [f"head {h}" for h in range(A)]
        maps = image_axes(figs["stats"])
        assert [ax.get_title() for ax in maps] == list(plots.STAT_TITLES.values())
        np.testing.assert_allclose(maps[1].images[0].get_array(), stats["cls"])
        [ax] = image_axes(figs["ablation"])
        assert len(ax.texts) == L * A and f"{abl.baseline:.4g}" in ax.get_title()
        np.testing.assert_allclose([float(t.get_text()) for t in ax.texts], abl.effect.flatten().numpy(), atol=5e-4)
        ax_start, ax_end = figs["span"].axes
        np.testing.assert_allclose([b.get_height() for b in bars(ax_end)], ans.end_probs)
        assert len(image_axes(figs["emb"])) == 5


# ----------------------------------------------------------------------------------------------
# From lab.inspect.explore on a tiny model
# ----------------------------------------------------------------------------------------------


def test_figures_from_explore_results(tiny):
    mlm, qa, tok = tiny
    att = explore.attention(mlm, tok, "the cat sat on the mat .", "the dog ran .")
    fig = plots.attention_heatmap(att, 1, 3)
    np.testing.assert_allclose(image_axes(fig)[0].images[0].get_array(), att.attentions[1][0, 3].numpy(), rtol=1e-6)
    assert tick_texts(image_axes(fig)[0].get_xticklabels()) == att.tokens
    assert len(image_axes(plots.attention_grid(att))) == 2 * 4
    stats = att.head_stats()
    maps = image_axes(plots.head_stats_heatmaps(stats))
    assert [ax.get_title() for ax in maps] == list(plots.STAT_TITLES.values())
    np.testing.assert_allclose(maps[2].images[0].get_array(), stats["sep"])

    abl = explore.ablate_heads(mlm, tok, "the cat [MASK] on the mat .")
    [ax] = image_axes(plots.ablation_heatmap(abl))
    assert len(ax.texts) == 2 * 4
    limit = float(abl.effect.abs().max())
    tolerance = 0.06 * limit if limit < 1e-3 else 0.5 * 10 ** -min(4, 2 - np.floor(np.log10(limit)))
    np.testing.assert_allclose(
        [float(t.get_text()) for t in ax.texts], abl.effect.flatten().numpy(), atol=tolerance + 1e-12
    )

    ans = explore.answer(qa, tok, "where did the cat sit ?", "the cat sat on the mat . the dog ran in the park .")
    fig = plots.span_probabilities(ans)
    np.testing.assert_allclose([b.get_height() for b in bars(fig.axes[0])], ans.start_probs, rtol=1e-6)
    red = [i for i, b in enumerate(bars(fig.axes[0])) if b.get_facecolor() == HIGHLIGHT]
    best = ans.spans[0]
    covered = [i for i, o in enumerate(ans.offsets) if o and o[0] < best.end and o[1] > best.start]
    assert red == covered and covered  # the decoded span, token by token
    assert "".join(ans.tokens[i].removeprefix("##") for i in red) == best.text.replace(" ", "")

    emb = explore.embeddings(mlm, tok, "the cat sat .", "the dog ran .")
    maps = image_axes(plots.embedding_components(emb))
    np.testing.assert_allclose(maps[3].images[0].get_array(), emb.total.T.numpy(), rtol=1e-6)  # H = 32 dims

    render(plots.span_probabilities(ans))
