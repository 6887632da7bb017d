"""Matplotlib figures for notebooks and static exports (`from lab import plots`).

    fig = plots.training_curves("runs/classroom")                         # a matplotlib Figure
    plots.attention_heatmap(explore.attention(model, tokenizer, "the cat sat ."), 0, 3).savefig("head.png")

training_curves(), attention_heatmap(), attention_grid(), head_stats_heatmaps(), ablation_heatmap(),
span_probabilities(), embedding_components(), logit_lens(), attributions(),
attention_vs_attribution() and probe_layers() are named as in lab.figures.plotly_figures (the
dashboard's) and draw what lab.figures.numbers computes, so the two never disagree;
occurrence_similarity() and sense_separation() are notebook 07's (lab.studies.contextual). Layers
and heads are 0-based, as the dashboard's sliders count them. Figures use the object-oriented API
(matplotlib.figure.Figure), never pyplot's global state, so several threads may draw at once.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from lab.figures import numbers, tables

WIDTH = 9.0  # inches: figure width that fits a dashboard column or a notebook cell
MIN_FONT = 5.5  # points: the smallest token label still readable on a projector
MAX_FONT = 9.0  # points: token labels never grow beyond this
HIGHLIGHT = "#d62728"  # the best answer span
BAR = "#4c72b0"  # every other bar
STAT_TITLES = numbers.STAT_TITLES  # head_stats() key -> panel title


def training_curves(run_or_records, x: str = "time", title: str | None = None) -> Figure:
    """Loss and accuracies against wall time (x="time", minutes) or steps (x="step").

    Left: training and held-out losses. Right: held-out MLM accuracy (all predicted positions
    and [MASK] positions alone) and NSP accuracy, or the task accuracy of a fine-tuning run.
    """
    data = numbers.training_curves(run_or_records, x, title)
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    axes = dict(zip(("loss", "accuracy"), fig.subplots(1, 2)))
    for s in data.series:
        if s.marker is None:  # every logged step: a thin line
            axes[s.panel].plot(s.x, s.y, lw=1, alpha=0.6, label=s.name)
        else:  # evaluations: points joined by lines
            axes[s.panel].plot(s.x, s.y, f"{s.marker}-", ms=3, label=s.name)
    for panel, ax in axes.items():
        ax.set_xlabel(data.x_title)
        ax.set_ylabel(data.y_titles[panel])
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    axes["accuracy"].set_ylim(0, 1)
    if data.title:
        fig.suptitle(_label(data.title))
    return fig


# ----------------------------------------------------------------------------------------------
# Helpers: token labels, ticks, heatmaps
# ----------------------------------------------------------------------------------------------


def _label(text: str) -> str:
    """Token text shown literally: a `$` would otherwise start matplotlib's math mode."""
    return str(text).replace("$", r"\$")


def _tick_plan(n: int, length_in: float, keep=()) -> tuple[list[int], float, dict[int, int]]:
    """Which of n token positions to label along an axis length_in inches long, the font size,
    and the runs of `keep` positions labelled as one ({first: last}).

    Labels sit one per token while the font can stay >= MIN_FONT; beyond that every step-th
    token is labelled (plus the `keep` positions, with their crowding neighbours dropped; `keep`
    positions closer than a step to each other, e.g. an answer span in a long window, share one
    label at the first of them). Worked example on an 8-inch axis: 40 tokens -> pitch 14.4 pt,
    all labelled at 9 pt; 200 tokens -> pitch 2.9 pt, step 3, 67 labels at 7.8 pt.
    """
    pitch = length_in * 72 / max(n, 1)  # points between neighbouring tokens
    step = max(1, math.ceil(MIN_FONT / (0.9 * pitch)))  # label every step-th token
    size = min(MAX_FONT, 0.9 * pitch * step)
    runs: dict[int, int] = {}  # first -> last of each run of kept tokens
    for k in sorted({k for k in keep if 0 <= k < n}):
        first = max(runs) if runs else None
        if first is not None and k - runs[first] < step:
            runs[first] = k  # too close: joins the run's label
        else:
            runs[k] = k
    shown = set(runs)
    for i in range(0, n, step):
        if all(i - last >= step or first - i >= step for first, last in runs.items()):
            shown.add(i)
    return sorted(shown), size, {first: last for first, last in runs.items() if last > first}


def _token_ticks(ax, tokens, axis: str, length_in: float, keep=()) -> list[int]:
    """Token labels on the x axis (rotated 90 degrees) or the y axis; returns the labelled indexes.
    A crowded run of `keep` tokens is labelled once, its tokens joined ("ulysses s . grant")."""
    shown, size, runs = _tick_plan(len(tokens), length_in, keep)
    labels = [_label(" ".join(tokens[i : runs[i] + 1]) if i in runs else tokens[i]) for i in shown]
    if axis == "x":
        ax.set_xticks(shown, labels, rotation=90, fontsize=size)
        if len(shown) < len(tokens):
            ax.set_xticks(range(len(tokens)), minor=True)  # a small mark for every token
    else:
        ax.set_yticks(shown, labels, fontsize=size)
        if len(shown) < len(tokens):
            ax.set_yticks(range(len(tokens)), minor=True)
    return shown


def _integer_ticks(ax, n: int, axis: str, most: int = 16) -> None:
    """Ticks 0..n-1 (every one, or thinned to about `most`) for layer / head axes."""
    step = max(1, math.ceil(n / most))
    ticks = list(range(0, n, step))
    (ax.set_xticks if axis == "x" else ax.set_yticks)(ticks, [str(t) for t in ticks])


def _segment_lines(ax, b: int | None, color="white", both: bool = True) -> None:
    """Dashed lines where sentence B starts (between the keys, and between the queries)."""
    if b:
        ax.axvline(b - 0.5, color=color, lw=0.8, ls="--")
        if both:
            ax.axhline(b - 0.5, color=color, lw=0.8, ls="--")


def _annotate(ax, values: np.ndarray, fmt: str, fontsize: float, dark) -> None:
    """Write each cell's value (format spec fmt) in it: white where dark(value) says the colour
    is dark, else black."""
    for (r, c), v in np.ndenumerate(values):
        ax.text(
            c, r, format(v, fmt), ha="center", va="center", fontsize=fontsize, color="white" if dark(v) else "black"
        )


def _dark_low(vmax: float):
    """viridis / magma are dark at the low end of the scale."""
    return lambda v: v < 0.45 * vmax


def _image(ax, panel: tables.Panel, **kwargs):
    """The panel's values as an image on its colour scale (rows top to bottom)."""
    return ax.imshow(
        panel.values, cmap=panel.colors, vmin=panel.zmin, vmax=panel.zmax, interpolation="nearest", **kwargs
    )


# ----------------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------------


def attention_heatmap(result, layer: int, head: int) -> Figure:
    """One attention head as a heatmap: row i = query token i, column j = key token j, so each
    row sums to 1 (where token i looks). Titled "layer 0, head 3" (0-based). Dashed lines mark
    where sentence B starts; short sequences get the weights written in the cells."""
    data = numbers.attention_heatmap(result, layer, head)
    fig = Figure(figsize=(WIDTH, 0.88 * WIDTH), layout="constrained")
    ax = fig.add_subplot()
    fig.colorbar(_image(ax, data), ax=ax, shrink=0.8, label="attention weight")
    _token_ticks(ax, data.tokens, "x", 0.75 * WIDTH)
    _token_ticks(ax, data.tokens, "y", 0.75 * WIDTH)
    ax.xaxis.set_ticks_position("top")  # keys read left to right above the map
    ax.xaxis.set_label_position("top")
    ax.set_xlabel(data.x_title)
    ax.set_ylabel(data.y_title)
    _segment_lines(ax, data.sentence_b_start)
    if data.cell_format:
        _annotate(ax, data.values, data.cell_format, 8, _dark_low(data.zmax))
    ax.set_title(data.title)
    return fig


def attention_grid(result, layer: int | None = None) -> Figure:
    """Small multiples of attention maps without tick labels: the heads of one layer (titled
    "head h"), or with layer=None every layer x head (rows "layer l", columns "head h").
    Each map has its own colour scale from 0 to its largest weight."""
    data = numbers.attention_grid(result, layer)
    rows, cols = data.n_rows, data.n_cols
    cell = WIDTH / cols  # inches per map
    titled = data.layer is not None  # every map titled, or only the top row
    height = rows * cell * (1.12 if titled else 1.0) + 0.6
    fig = Figure(figsize=(WIDTH, height))
    top = 1 - 0.55 / height
    grid = fig.add_gridspec(
        rows,
        cols,
        left=0.05 if not titled else 0.01,
        right=0.99,
        bottom=0.01,
        top=top,
        wspace=0.06,
        hspace=0.25 if titled else 0.06,
    )
    for k, m in enumerate(data.maps):
        r, c = data.position(k)
        ax = fig.add_subplot(grid[r, c])
        _image(ax, m)
        ax.set_xticks([])
        ax.set_yticks([])
        if titled:
            ax.set_title(m.title, fontsize=9)
        else:
            if m.layer == 0:
                ax.set_title(f"head {m.head}", fontsize=max(5.0, min(9.0, 60 / cols)))
            if m.head == 0:
                ax.set_ylabel(f"layer {m.layer}", fontsize=max(5.0, min(9.0, 60 / rows)))
    fig.suptitle(data.title, fontsize=10, y=1 - 0.1 / height, va="top")
    return fig


def head_stats_heatmaps(stats: dict) -> Figure:
    """One [layers, heads] heatmap per statistic of AttentionResult.head_stats(), titled by
    STAT_TITLES (known keys first, in that order). The attention shares (every key but
    "entropy") share one colour scale, so the panels compare: in trained BERTs [SEP] draws far
    more attention than [CLS] in the middle layers. Small grids get their values written in."""
    data = numbers.head_stats_heatmaps(stats)
    L, A = data.layers, data.heads
    cols = min(3, len(data.panels))
    rows = math.ceil(len(data.panels) / cols)
    panel = min(3.2, max(1.4, (WIDTH / cols) * 0.8 * L / A))  # inches of map height per row
    fig = Figure(figsize=(WIDTH, rows * (panel + 0.7) + 0.4), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).flatten()
    for ax, p in zip(axes, data.panels):
        fig.colorbar(_image(ax, p, aspect="auto"), ax=ax)
        ax.set_title(p.title, fontsize=10)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        _integer_ticks(ax, A, "x")
        _integer_ticks(ax, L, "y")
        if p.cell_format:
            _annotate(ax, p.values, p.cell_format, 7, _dark_low(p.zmax))
    for ax in axes[len(data.panels) :]:
        fig.delaxes(ax)
    fig.suptitle(data.title, fontsize=11)
    return fig


def ablation_heatmap(result) -> Figure:
    """explore.ablate_heads as a [layers, heads] heatmap of effect = metric with that one head
    silenced minus the baseline, every cell annotated with its value. Diverging colours centred
    at 0, oriented so that red always means "the model needed this head": for metric="loss"
    the loss rose (+), for metric="probability" the probability fell (-)."""
    data = numbers.ablation_heatmap(result)
    L, A = data.values.shape
    height = min(9.0, max(3.2, 0.75 * WIDTH * L / A + 1.4))
    fig = Figure(figsize=(WIDTH, height), layout="constrained")
    ax = fig.add_subplot()
    fig.colorbar(_image(ax, data, aspect="auto"), ax=ax, label=f"change in {data.metric}")
    cell_pt = 0.8 * WIDTH * 72 / A  # width of one cell in points
    _annotate(ax, data.values, data.cell_format, max(4.5, min(10.0, cell_pt / 5)), lambda v: abs(v) > 0.6 * data.zmax)
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    _integer_ticks(ax, A, "x", most=32)
    _integer_ticks(ax, L, "y", most=32)
    ax.set_title(data.title, fontsize=10)
    if data.sentence:
        fig.suptitle(_label(data.sentence), fontsize=9)
    return fig


# ----------------------------------------------------------------------------------------------
# Question answering, embeddings
# ----------------------------------------------------------------------------------------------


def span_probabilities(result) -> Figure:
    """Start (top) and end (bottom) probabilities over the tokens of the window holding the best
    answer, token labels under the bars; the best span's bars are red on a shaded band and its
    labels red and bold (they are always labelled, even when long windows thin the labels)."""
    data = numbers.span_probabilities(result)
    T, span = len(data.tokens), data.span
    colors = [HIGHLIGHT if i in span else BAR for i in range(T)]
    fig = Figure(figsize=(WIDTH + 0.5, 5.6), layout="constrained")
    ax_start, ax_end = fig.subplots(2, 1, sharex=True)
    for ax, probs, name in ((ax_start, data.start, "start"), (ax_end, data.end, "end")):
        ax.bar(range(T), probs, width=0.8, color=colors)
        if span:
            ax.axvspan(min(span) - 0.5, max(span) + 0.5, color=HIGHLIGHT, alpha=0.12, lw=0)
        ax.set_ylim(0, max(float(probs.max(initial=0.0)), 1e-9) * 1.12)
        ax.set_xlim(-0.6, T - 0.4)
        ax.set_ylabel("probability")
        ax.set_title(f"{name} probability", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    ax_start.tick_params(axis="x", labelbottom=False)
    shown = _token_ticks(ax_end, data.tokens, "x", WIDTH - 0.8, keep=span)
    for i, label in zip(shown, ax_end.get_xticklabels()):
        if i in span:
            label.set_color(HIGHLIGHT)
            label.set_fontweight("bold")
    fig.suptitle(_label(data.title), fontsize=11)
    return fig


def embedding_components(result, dims: int = 32) -> Figure:
    """The paper's Figure 2 as heatmaps over tokens (x) and the first `dims` hidden dimensions
    (y): token, segment and position embeddings, their sum, and the LayerNorm output that layer
    0 receives. The first four share one diverging colour scale, so the sum visibly adds up:
    the segment rows repeat within a sentence and change at sentence B (dashed line), the
    position rows change with every token whatever it is."""
    data = numbers.embedding_components(result, dims)
    fig = Figure(figsize=(WIDTH, 9.0), layout="constrained")
    axes = fig.subplots(5, 1, sharex=True)
    images = []
    for ax, p in zip(axes, data.panels):
        images.append(_image(ax, p, aspect="auto"))  # (dims, T)
        ax.set_title(p.title, fontsize=10)
        ax.set_ylabel("dim")
        _segment_lines(ax, data.sentence_b_start, color="black", both=False)
        ax.tick_params(axis="x", labelbottom=False)
    axes[-1].tick_params(axis="x", labelbottom=True)
    _token_ticks(axes[-1], data.tokens, "x", WIDTH - 1.6)
    fig.colorbar(images[0], ax=list(axes[:4]), shrink=0.6, label="value")
    fig.colorbar(images[4], ax=axes[4], label="value")
    fig.suptitle(data.title, fontsize=11)
    return fig


# ----------------------------------------------------------------------------------------------
# Inside BERT: the guess at every layer, what the answer rests on
# ----------------------------------------------------------------------------------------------


def logit_lens(result) -> Figure:
    """explore.logit_lens: for each [MASK] (the first three) a heatmap of the top guesses at
    every layer (rows: the embeddings, then layers 1..L; columns: guesses, best first; colour =
    probability, each cell's token written in it, the final answer's cells outlined in red), and
    beside it the final answer's probability at every layer as a line."""
    data = numbers.logit_lens(result)
    n, layers = len(data.masks), len(data.masks[0].tokens)
    k = len(data.masks[0].tokens[0])
    fig = Figure(figsize=(WIDTH + 1, n * (0.42 * layers + 1.3) + 0.4), layout="constrained")
    axes = fig.subplots(n, 2, squeeze=False, width_ratios=[3, 1])
    names = ["embeddings"] + [f"layer {i}" for i in range(1, layers)]
    for (ax, line), m in zip(axes, data.masks):
        image = ax.imshow(m.probabilities, cmap="Blues", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        for (layer, r), p in np.ndenumerate(m.probabilities):
            ax.text(
                r,
                layer,
                _label(m.labels[layer][r]),
                ha="center",
                va="center",
                fontsize=8,
                color="white" if p > 0.55 else "black",
            )
            if m.tokens[layer][r] == m.final:
                ax.add_patch(_outline(r, layer))
        ax.set_xticks(range(k), [str(i + 1) for i in range(k)])
        ax.set_yticks(range(layers), names)
        ax.set_xlabel("guess (best first)")
        ax.set_title(_label(m.title), fontsize=10)
        line.plot(m.final_probability, range(layers), "o-", color=HIGHLIGHT)
        line.set_ylim(layers - 0.5, -0.5)  # the embeddings on top, as in the heatmap
        line.set_yticks(range(layers), [""] * layers)
        line.set_xlim(0, 1.05)
        line.set_xlabel("probability")
        line.set_title("its probability", fontsize=10)
        line.grid(alpha=0.3)
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.6, label="probability")
    fig.suptitle(_label(data.title), fontsize=11)
    return fig


def _outline(x: float, y: float) -> Rectangle:
    """A red frame around the cell at (x, y)."""
    return Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor=HIGHLIGHT, lw=2)


def _signed_bars(ax, scores: np.ndarray, tokens: list[str], keep=()) -> None:
    """One bar per token, red toward the answer and purple against it; token labels under them."""
    T = len(tokens)
    ax.bar(range(T), scores, width=0.8, color=[numbers.TOWARD if v >= 0 else numbers.AGAINST for v in scores])
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlim(-0.6, T - 0.4)
    ax.grid(axis="y", alpha=0.3)
    shown = _token_ticks(ax, tokens, "x", WIDTH - 0.8, keep=keep)
    for i, label in zip(shown, ax.get_xticklabels()):
        if i in keep:
            label.set_color(HIGHLIGHT)
            label.set_fontweight("bold")


def attributions(result) -> Figure:
    """explore.attributions: one bar per token, its score (red: it pushes toward the answer,
    purple: against it); the tokens the answer is about (a QA span, the [MASK]) labelled red and
    bold. The subtitle says f(input) - f(baseline), what the scores add up to, and the error."""
    data = numbers.attributions(result)
    fig = Figure(figsize=(WIDTH + 0.5, 4.2), layout="constrained")
    ax = fig.add_subplot()
    _signed_bars(ax, data.scores, data.tokens, keep=data.highlight)
    ax.set_ylabel("score (its share of f)")
    ax.set_title(_label(data.subtitle), fontsize=8.5)
    fig.suptitle(_label(data.title), fontsize=10.5)
    return fig


def attention_vs_attribution(comparison, attribution) -> Figure:
    """lab.inspect.attribution.attention_vs_attribution: the attribution (top) and the attention [CLS]
    pays in the last layer, mean of its heads (bottom; special tokens grey: they are left out of
    the correlations), over the same tokens; the correlations in the title."""
    data = numbers.attention_vs_attribution(comparison, attribution)
    fig = Figure(figsize=(WIDTH + 0.5, 6.2), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    _signed_bars(top, data.scores, data.tokens)
    top.tick_params(axis="x", labelbottom=False)
    top.set_title(_label(data.attribution_title), fontsize=10)
    top.set_ylabel("score")
    T = len(data.tokens)
    bottom.bar(range(T), data.attention, width=0.8, color=[BAR if w else "#9ca3af" for w in data.words])
    bottom.set_ylabel("attention")
    bottom.set_title(_label(data.attention_title), fontsize=10)
    bottom.grid(axis="y", alpha=0.3)
    _token_ticks(bottom, data.tokens, "x", WIDTH - 0.8)
    fig.suptitle(_label(f"{data.title}\n{data.subtitle}"), fontsize=10)
    return fig


# ----------------------------------------------------------------------------------------------
# Contextual vectors (notebook 07)
# ----------------------------------------------------------------------------------------------


def occurrence_similarity(occ, layers: Sequence[int | str] = ("token embedding", -1), title: str = "") -> Figure:
    """lab.studies.contextual.word_vectors' occurrences: one heatmap per depth, the cosine similarity of
    every occurrence with every other, each annotated, on one colour scale from -1 to 1 (so
    that depths compare)."""
    labels, n = occ.labels, len(occ.labels)
    fig = Figure(figsize=(4.4 * len(layers) + 1.2, 5.8), layout="constrained")
    axes = fig.subplots(1, len(layers), squeeze=False)[0]
    for ax, layer in zip(axes, layers):
        sim = occ.similarity(layer)
        image = ax.imshow(sim, vmin=-1, vmax=1, cmap="RdBu_r")
        for i in range(n):
            for j in range(n):
                ax.text(
                    j,
                    i,
                    f"{sim[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="white" if abs(sim[i, j]) > 0.6 else "black",
                )
        ax.set_xticks(range(n), labels, rotation=90, fontsize=7)
        ax.set_yticks(range(n), labels if ax is axes[0] else [""] * n, fontsize=7)
        ax.set_title(occ.layer_names[occ.layer_index(layer)], fontsize=9)
    fig.colorbar(image, ax=list(axes), shrink=0.6, label="cosine similarity")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def sense_separation(curves) -> Figure:
    """{model name: lab.studies.contextual.word_vectors(...)}: within-sense minus across-sense similarity
    at each depth, one line per model."""
    fig = Figure(figsize=(7, 3.6), layout="constrained")
    ax = fig.subplots()
    longest = max(curves.values(), key=lambda o: len(o.layer_names)).layer_names
    for name, occ in curves.items():
        ax.plot(range(len(occ.layer_names)), occ.separation(), marker="o", label=name)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(
        range(len(longest)), ["token\nembedding", "embeddings"] + [n.split()[-1] for n in longest[2:]], fontsize=8
    )
    ax.set_xlabel("depth (layer)")
    ax.set_ylabel("within-sense minus\nacross-sense similarity")
    ax.legend(fontsize=8)
    return fig


def probe_layers(results, title: str | None = None):
    """Accuracy by layer (matplotlib, for notebooks): the same lines as lab.figures.plotly_figures.probe_layers."""

    data = results if isinstance(results, tables.ProbeCurves) else numbers.probe_curves(results, title)
    fig = Figure(figsize=(9.0, 4.2), layout="constrained")
    ax = fig.subplots()
    snapshots = [line for line in data.lines if line.kind == "snapshot"]
    for line in data.lines:
        _, style, is_grey = numbers.PROBE_LINE_STYLES[line.kind]
        color = "0.45" if is_grey else None
        if line.kind == "snapshot" and len(snapshots) > 1:
            share = snapshots.index(line) / (len(snapshots) - 1)
            color = (0.15, 0.39, 0.92, 0.25 + 0.75 * share)
        if line.kind == "majority":
            ax.fill_between(line.layers, line.low, line.high, color="0.6", alpha=0.25, lw=0)
            ax.plot(line.layers, line.accuracy, style, color=color, label=line.name)
            continue
        err = [np.subtract(line.accuracy, line.low), np.subtract(line.high, line.accuracy)]
        ax.errorbar(
            line.layers, line.accuracy, yerr=err, fmt="o" + style, ms=4, capsize=3, color=color, label=line.name
        )
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel("accuracy on test words (95% interval)")
    ax.set_xticks(range(data.num_layers + 1))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    text = "\n".join(textwrap.wrap(data.title, 90) + textwrap.wrap(data.subtitle, 110))
    fig.suptitle(text.replace("$", r"\$"), fontsize=9)
    return fig
