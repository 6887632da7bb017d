"""Matplotlib figures built from explore results and metrics.jsonl.

    from lab import explore, plots
    fig = plots.training_curves("runs/classroom")        # a matplotlib Figure
    fig.savefig("curves.png")
    att = explore.attention(model, tokenizer, "the cat sat .", "it purred .")
    plots.attention_heatmap(att, layer=0, head=3).savefig("head.png")

The figures, one function each:

    training_curves(run_or_records, x="time")  losses and held-out accuracies of a run
    attention_heatmap(attention, layer, head)  one head: queries (rows) x keys (columns)
    attention_grid(attention, layer=None)      every head of one layer, or all layers x heads
    head_stats_heatmaps(stats)                 attention.head_stats(): one [layers, heads] map
                                               per statistic (entropy, to [CLS], [SEP], ...)
    ablation_heatmap(ablation)                 explore.ablate_heads: the effect of silencing
                                               each head, annotated, red = the model needed it
    span_probabilities(answer)                 QA start and end probabilities over the window's
                                               tokens, the best span highlighted
    embedding_components(embeddings)           the paper's Figure 2: token + segment + position
                                               embeddings, their sum and the LayerNorm output

Layers and heads are 0-based everywhere (titles say "layer 0, head 3"), as the dashboard's
sliders and Python indexing count them. Token labels stay legible up to a few hundred tokens:
the font shrinks with the number of tokens, then every n-th token is labelled (see _tick_plan).

Figures are made with the object-oriented API (`matplotlib.figure.Figure`), never pyplot's
global state (and no rcParams changes), so concurrent requests in the dashboard do not draw into
each other's plots: every function may be called from several threads at once.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from .runs import read_metrics

WIDTH = 9.0             # inches: figure width that fits a dashboard column or a notebook cell
MIN_FONT = 5.5          # points: the smallest token label still readable on a projector
MAX_FONT = 9.0          # points: token labels never grow beyond this
HIGHLIGHT = "#d62728"   # the best answer span
BAR = "#4c72b0"         # every other bar


def _records(run_or_records):
    if isinstance(run_or_records, (str, Path)):
        return read_metrics(run_or_records)
    return list(run_or_records)


def training_curves(run_or_records, x: str = "time", title: str | None = None) -> Figure:
    """Loss and accuracies against wall time (x="time", minutes) or steps (x="step").

    Left: training and held-out losses. Right: held-out MLM accuracy (all predicted positions
    and [MASK] positions alone) and NSP accuracy, or the task accuracy of a fine-tuning run.
    """
    records = _records(run_or_records)
    train = [r for r in records if r.get("split") == "train"]
    evals = [r for r in records if r.get("split") == "eval"]
    scale = (lambda r: r["time"] / 60) if x == "time" else (lambda r: r["step"])
    xlabel = "wall time (minutes)" if x == "time" else "step"
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    ax_loss, ax_acc = fig.subplots(1, 2)
    if train:
        key = "mlm_loss" if "mlm_loss" in train[0] else "loss"
        ax_loss.plot([scale(r) for r in train], [r[key] for r in train], lw=1, alpha=0.6,
                     label=f"train {key.replace('_', ' ')}")
    for key, style in (("mlm_loss", "o-"), ("nsp_loss", "s-"), ("loss", "o-")):
        pts = [(scale(r), r[key]) for r in evals if key in r]
        if pts and not (key == "loss" and any("mlm_loss" in r for r in evals)):
            ax_loss.plot(*zip(*pts), style, ms=3, label=f"held-out {key.replace('_', ' ')}")
    ax_loss.set_xlabel(xlabel)
    ax_loss.set_ylabel("loss")
    ax_loss.legend(fontsize=8)
    ax_loss.grid(alpha=0.3)
    names = {"mlm_acc": "MLM top-1 (all predicted)", "mlm_acc_masked": "MLM top-1 at [MASK]",
             "nsp_acc": "NSP", "accuracy": "accuracy", "f1": "F1", "exact_match": "exact match"}
    for key, label in names.items():
        pts = [(scale(r), r[key]) for r in evals if key in r]
        if pts:
            ax_acc.plot(*zip(*pts), "o-", ms=3, label=label)
    ax_acc.set_xlabel(xlabel)
    ax_acc.set_ylabel("held-out accuracy")
    ax_acc.set_ylim(0, 1)
    ax_acc.legend(fontsize=8)
    ax_acc.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    return fig


# ----------------------------------------------------------------------------------------------
# Helpers: arrays, indexes, token labels
# ----------------------------------------------------------------------------------------------


def _np(x) -> np.ndarray:
    """A torch tensor (any dtype or device) or array-like -> float64 numpy array."""
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def _label(text: str) -> str:
    """Token text shown literally: a `$` would otherwise start matplotlib's math mode."""
    return str(text).replace("$", r"\$")


def _index(i, n: int, name: str) -> int:
    """A 0-based (or negative, Python-style) layer/head index, checked against n."""
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {i!r}")
    if not -n <= i < n:
        raise ValueError(f"{name} {i} does not exist: this model has {n} {name}s (0 to {n - 1})")
    return int(i) % n


def _tick_plan(n: int, length_in: float, keep=()) -> tuple[list[int], float]:
    """Which of n token positions to label along an axis length_in inches long, and the font size.

    Labels sit one per token while the font can stay >= MIN_FONT; beyond that every step-th
    token is labelled (plus the `keep` positions, with their crowding neighbours dropped).
    Worked example on an 8-inch axis: 40 tokens -> pitch 14.4 pt, all labelled at 9 pt;
    200 tokens -> pitch 2.9 pt, step 3, 67 labels at 7.8 pt.
    """
    pitch = length_in * 72 / max(n, 1)                      # points between neighbouring tokens
    step = max(1, math.ceil(MIN_FONT / (0.9 * pitch)))       # label every step-th token
    size = min(MAX_FONT, 0.9 * pitch * step)
    keep = sorted({k for k in keep if 0 <= k < n})
    shown = set(keep)
    for i in range(0, n, step):
        if all(abs(i - k) >= step for k in keep):
            shown.add(i)
    return sorted(shown), size


def _token_ticks(ax, tokens, axis: str, length_in: float, keep=()) -> list[int]:
    """Token labels on the x axis (rotated 90 degrees) or the y axis; returns the labelled indexes."""
    shown, size = _tick_plan(len(tokens), length_in, keep)
    labels = [_label(tokens[i]) for i in shown]
    if axis == "x":
        ax.set_xticks(shown, labels, rotation=90, fontsize=size)
        if len(shown) < len(tokens):
            ax.set_xticks(range(len(tokens)), minor=True)   # a small mark for every token
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


def _attention_shape(result) -> tuple[int, int, int]:
    """(layers, heads, tokens) of an AttentionResult, checking it is consistent."""
    if not result.attentions:
        raise ValueError("the attention result holds no layers")
    _, heads, T, T2 = tuple(result.attentions[0].shape)     # (1, heads, T, T)
    if T != T2 or T != len(result.tokens):
        raise ValueError(f"attention maps are {T}x{T2} but there are {len(result.tokens)} tokens")
    return len(result.attentions), heads, T


def _attention_matrix(result, layer: int, head: int) -> np.ndarray:
    return _np(result.attentions[layer][0, head])            # (T queries, T keys)


def _segment_lines(ax, result, color="white") -> None:
    """Dashed lines where sentence B starts (between the keys and between the queries)."""
    b = getattr(result, "sentence_b_start", None)
    if b:
        ax.axvline(b - 0.5, color=color, lw=0.8, ls="--")
        ax.axhline(b - 0.5, color=color, lw=0.8, ls="--")


def _annotate(ax, values: np.ndarray, fmt, fontsize: float, dark) -> None:
    """Write each cell's value in it: white where dark(value) says the colour is dark, else black."""
    for (r, c), v in np.ndenumerate(values):
        ax.text(c, r, fmt(v), ha="center", va="center", fontsize=fontsize,
                color="white" if dark(v) else "black")


def _dark_low(vmax: float):
    """viridis / magma are dark at the low end of the scale."""
    return lambda v: v < 0.45 * vmax


def _text_of(tokens, limit: int = 90) -> str:
    """WordPieces back to readable text (without [CLS]/[SEP]/[PAD]), cut to `limit` characters."""
    words = " ".join(t for t in tokens if t not in ("[CLS]", "[SEP]", "[PAD]")).replace(" ##", "")
    return words if len(words) <= limit else words[: limit - 1] + "…"


# ----------------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------------


def attention_heatmap(result, layer: int, head: int) -> Figure:
    """One attention head as a heatmap: row i = query token i, column j = key token j, so each
    row sums to 1 (where token i looks). Titled "layer 0, head 3" (0-based). Dashed lines mark
    where sentence B starts; short sequences get the weights written in the cells."""
    L, A, T = _attention_shape(result)
    layer, head = _index(layer, L, "layer"), _index(head, A, "head")
    weights = _attention_matrix(result, layer, head)         # (T, T)
    fig = Figure(figsize=(WIDTH, 0.88 * WIDTH), layout="constrained")
    ax = fig.add_subplot()
    im = ax.imshow(weights, cmap="viridis", vmin=0, vmax=max(float(weights.max()), 1e-9),
                   interpolation="nearest")
    fig.colorbar(im, ax=ax, shrink=0.8, label="attention weight")
    _token_ticks(ax, result.tokens, "x", 0.75 * WIDTH)
    _token_ticks(ax, result.tokens, "y", 0.75 * WIDTH)
    ax.xaxis.set_ticks_position("top")                     # keys read left to right above the map
    ax.xaxis.set_label_position("top")
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    _segment_lines(ax, result)
    if T <= 12:
        _annotate(ax, weights, lambda v: f"{v:.2f}", 8, _dark_low(float(weights.max())))
    ax.set_title(f"layer {layer}, head {head}")
    return fig


def attention_grid(result, layer: int | None = None) -> Figure:
    """Small multiples of attention maps without tick labels: the heads of one layer (titled
    "head h"), or with layer=None every layer x head (rows "layer l", columns "head h").
    Each map has its own colour scale from 0 to its largest weight."""
    L, A, T = _attention_shape(result)
    if layer is None:
        cells = [(l, h) for l in range(L) for h in range(A)]
        rows, cols = L, A
        title = f"attention of every head: {L} layers x {A} heads (rows: queries, columns: keys)"
    else:
        layer = _index(layer, L, "layer")
        cells = [(layer, h) for h in range(A)]
        cols = min(A, 4)
        rows = math.ceil(A / cols)
        title = f"layer {layer}: all {A} heads (rows: queries, columns: keys)"
    cell = WIDTH / cols                                    # inches per map
    titled = layer is not None                             # every map titled, or only the top row
    height = rows * cell * (1.12 if titled else 1.0) + 0.6
    fig = Figure(figsize=(WIDTH, height))
    top = 1 - 0.55 / height
    grid = fig.add_gridspec(rows, cols, left=0.05 if not titled else 0.01, right=0.99,
                            bottom=0.01, top=top, wspace=0.06, hspace=0.25 if titled else 0.06)
    for k, (l, h) in enumerate(cells):
        r, c = (k // cols, k % cols) if titled else (l, h)
        ax = fig.add_subplot(grid[r, c])
        weights = _attention_matrix(result, l, h)            # (T, T)
        ax.imshow(weights, cmap="viridis", vmin=0, vmax=max(float(weights.max()), 1e-9),
                  interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        if titled:
            ax.set_title(f"head {h}", fontsize=9)
        else:
            if l == 0:
                ax.set_title(f"head {h}", fontsize=max(5.0, min(9.0, 60 / cols)))
            if h == 0:
                ax.set_ylabel(f"layer {l}", fontsize=max(5.0, min(9.0, 60 / rows)))
    fig.suptitle(title, fontsize=10, y=1 - 0.1 / height, va="top")
    return fig


STAT_TITLES = {                 # head_stats() key -> panel title (Clark et al. 2019)
    "entropy": "entropy (nats)",
    "cls": "attention to [CLS]",
    "sep": "attention to [SEP]",
    "self": "attention to itself",
    "prev": "attention to the previous token",
    "next": "attention to the next token",
}


def head_stats_heatmaps(stats: dict) -> Figure:
    """One [layers, heads] heatmap per statistic of AttentionResult.head_stats(), titled by
    STAT_TITLES (known keys first, in that order). The attention shares (every key but
    "entropy") share one colour scale, so the panels compare: in trained BERTs [SEP] draws far
    more attention than [CLS] in the middle layers. Small grids get their values written in."""
    if not stats:
        raise ValueError("no head statistics to plot")
    keys = [k for k in STAT_TITLES if k in stats] + [k for k in stats if k not in STAT_TITLES]
    arrays = {k: _np(stats[k]) for k in keys}
    shapes = {a.shape for a in arrays.values()}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2:
        raise ValueError(f"head statistics must all be [layers, heads] arrays, got shapes "
                         f"{ {k: a.shape for k, a in arrays.items()} }")
    L, A = next(iter(shapes))
    shares = [a for k, a in arrays.items() if k != "entropy"]
    share_max = max([float(a.max()) for a in shares] + [1e-9])
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    panel = min(3.2, max(1.4, (WIDTH / cols) * 0.8 * L / A))   # inches of map height per row
    fig = Figure(figsize=(WIDTH, rows * (panel + 0.7) + 0.4), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).flatten()
    for ax, key in zip(axes, keys):
        values = arrays[key]
        vmax = max(float(values.max()), 1e-9) if key == "entropy" else share_max
        im = ax.imshow(values, cmap="magma" if key == "entropy" else "viridis", vmin=0, vmax=vmax,
                       aspect="auto", interpolation="nearest")
        fig.colorbar(im, ax=ax)
        ax.set_title(STAT_TITLES.get(key, key), fontsize=10)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        _integer_ticks(ax, A, "x")
        _integer_ticks(ax, L, "y")
        if L * A <= 48:
            _annotate(ax, values, lambda v: f"{v:.2f}", 7, _dark_low(vmax))
    for ax in axes[len(keys):]:
        fig.delaxes(ax)
    fig.suptitle("what each head looks at (mean over query tokens; Clark et al. 2019)", fontsize=11)
    return fig


def ablation_heatmap(result) -> Figure:
    """explore.ablate_heads as a [layers, heads] heatmap of effect = metric with that one head
    silenced minus the baseline, every cell annotated with its value. Diverging colours centred
    at 0, oriented so that red always means "the model needed this head": for metric="loss"
    the loss rose (+), for metric="probability" the probability fell (-)."""
    effect = _np(result.effect)                             # (L, heads)
    if effect.ndim != 2:
        raise ValueError(f"ablation effect must be a [layers, heads] array, got shape {effect.shape}")
    L, A = effect.shape
    limit = max(float(np.abs(effect).max()), 1e-12)
    # Significant digits follow the largest effect: 0.5 -> "+0.123", 3.2 -> "+1.23", 4e-4 -> "+4.0e-04".
    digits = min(4, max(0, 2 - math.floor(math.log10(limit))))
    fmt = (lambda v: f"{v:+.1e}") if limit < 1e-3 else (lambda v: f"{v:+.{digits}f}")
    helped_is_up = result.metric != "probability"
    what = {"loss": "masked-LM loss at the [MASK]s",
            "probability": "probability of the top prediction at the first [MASK]"}.get(
        result.metric, result.metric)
    height = min(9.0, max(3.2, 0.75 * WIDTH * L / A + 1.4))
    fig = Figure(figsize=(WIDTH, height), layout="constrained")
    ax = fig.add_subplot()
    im = ax.imshow(effect, cmap="RdBu_r" if helped_is_up else "RdBu", vmin=-limit, vmax=limit,
                   aspect="auto", interpolation="nearest")
    fig.colorbar(im, ax=ax, label=f"change in {result.metric}")
    cell_pt = 0.8 * WIDTH * 72 / A                          # width of one cell in points
    _annotate(ax, effect, fmt, max(4.5, min(10.0, cell_pt / 5)), lambda v: abs(v) > 0.6 * limit)
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    _integer_ticks(ax, A, "x", most=32)
    _integer_ticks(ax, L, "y", most=32)
    ax.set_title(f"silencing one head at a time: change in the {what}\n"
                 f"baseline {result.baseline:.4g}; red = the model needed this head", fontsize=10)
    if result.tokens:
        fig.suptitle(f"“{_text_of(result.tokens)}”", fontsize=9)
    return fig


# ----------------------------------------------------------------------------------------------
# Question answering, embeddings, fill-mask
# ----------------------------------------------------------------------------------------------


def _span_tokens(result) -> list[int]:
    """Indexes of the window's tokens covered by the best span ([CLS] for "no answer")."""
    if not result.spans:
        return []
    best = result.spans[0]
    if best.text == "" or best.end <= best.start:
        return [0] if result.tokens else []
    return [i for i, o in enumerate(result.offsets)
            if o is not None and o[0] < best.end and o[1] > best.start]


def span_probabilities(result) -> Figure:
    """Start (top) and end (bottom) probabilities over the tokens of the window holding the best
    answer, token labels under the bars; the best span's bars are red on a shaded band and its
    labels red and bold (they are always labelled, even when long windows thin the labels)."""
    T = len(result.tokens)
    if not (len(result.start_probs) == len(result.end_probs) == T):
        raise ValueError(f"{T} tokens but {len(result.start_probs)} start and "
                         f"{len(result.end_probs)} end probabilities")
    span = _span_tokens(result)
    colors = [HIGHLIGHT if i in span else BAR for i in range(T)]
    fig = Figure(figsize=(WIDTH + 0.5, 5.6), layout="constrained")
    ax_start, ax_end = fig.subplots(2, 1, sharex=True)
    for ax, probs, name in ((ax_start, result.start_probs, "start"), (ax_end, result.end_probs, "end")):
        ax.bar(range(T), [float(p) for p in probs], width=0.8, color=colors)
        if span:
            ax.axvspan(min(span) - 0.5, max(span) + 0.5, color=HIGHLIGHT, alpha=0.12, lw=0)
        ax.set_ylim(0, max([float(p) for p in probs] + [1e-9]) * 1.12)
        ax.set_xlim(-0.6, T - 0.4)
        ax.set_ylabel("probability")
        ax.set_title(f"{name} probability", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    ax_start.tick_params(axis="x", labelbottom=False)
    shown = _token_ticks(ax_end, result.tokens, "x", WIDTH - 0.8, keep=span)
    for i, label in zip(shown, ax_end.get_xticklabels()):
        if i in span:
            label.set_color(HIGHLIGHT)
            label.set_fontweight("bold")
    if result.spans:
        best = result.spans[0]
        headline = "best answer: no answer" if best.text == "" else f"best answer: “{_label(best.text)}”"
        headline += f" (score {best.score:.2f})"
    else:
        headline = "no candidate span"
    notes = []
    if result.num_windows > 1:
        notes.append(f"window {result.window_index + 1} of {result.num_windows}")
    if result.question_truncated:
        notes.append("question truncated")
    fig.suptitle(headline + (f" · {', '.join(notes)}" if notes else ""), fontsize=11)
    return fig


def embedding_components(result, dims: int = 32) -> Figure:
    """The paper's Figure 2 as heatmaps over tokens (x) and the first `dims` hidden dimensions
    (y): token, segment and position embeddings, their sum, and the LayerNorm output that layer
    0 receives. The first four share one diverging colour scale, so the sum visibly adds up:
    the segment rows repeat within a sentence and change at sentence B (dashed line), the
    position rows change with every token whatever it is."""
    T = len(result.tokens)
    parts = [("token embeddings (one per word piece)", result.token),
             ("segment embeddings (sentence A / B)", result.segment),
             ("position embeddings", result.position),
             ("sum = token + segment + position", result.total),
             ("after LayerNorm: what layer 0 receives", result.normalized)]
    mats = [(title, _np(m)) for title, m in parts]
    for title, m in mats:
        if m.ndim != 2 or m.shape[0] != T:
            raise ValueError(f"{title}: expected a [{T}, hidden] array, got shape {m.shape}")
    hidden = mats[0][1].shape[1]
    dims = max(1, min(dims, hidden))
    limit = max(float(np.abs(m[:, :dims]).max()) for _, m in mats[:4]) or 1e-9
    norm_limit = float(np.abs(mats[4][1][:, :dims]).max()) or 1e-9
    b_start = next((i for i, s in enumerate(result.segment_ids) if s != result.segment_ids[0]), None)
    fig = Figure(figsize=(WIDTH, 9.0), layout="constrained")
    axes = fig.subplots(5, 1, sharex=True)
    images = []
    for ax, (title, m) in zip(axes, mats):
        lim = norm_limit if ax is axes[-1] else limit
        images.append(ax.imshow(m[:, :dims].T, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto",
                                interpolation="nearest"))          # (dims, T)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("dim")
        if b_start:
            ax.axvline(b_start - 0.5, color="black", lw=0.8, ls="--")
        ax.tick_params(axis="x", labelbottom=False)
    axes[-1].tick_params(axis="x", labelbottom=True)
    _token_ticks(axes[-1], result.tokens, "x", WIDTH - 1.6)
    fig.colorbar(images[0], ax=list(axes[:4]), shrink=0.6, label="value")
    fig.colorbar(images[4], ax=axes[4], label="value")
    fig.suptitle(f"BERT's input representation (Figure 2): first {dims} of {hidden} dimensions",
                 fontsize=11)
    return fig
