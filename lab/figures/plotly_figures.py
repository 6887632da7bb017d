"""Browser-drawn (plotly) figures for the dashboard: the lab's figures, interactive.

    fig = plotly_figures.attention_heatmap(explore.attention(model, tokenizer, "the cat sat ."), 0, 3)
    plotly_figures.figure_csv(fig), plotly_figures.figure_name(fig)  # its numbers as CSV, its name

Named as in lab.figures.matplotlib_figures (the notebooks' versions), drawing what
lab.figures.numbers computes, so the two never disagree: training_curves(), attention_heatmap(),
attention_focus(), attention_grid(), head_stats_heatmaps(), ablation_heatmap(), span_probabilities(),
fill_mask_bars(), embedding_components(), logit_lens(), attributions(), attention_vs_attribution(),
probe_layers(). Each takes theme="light" or "dark" and returns a LabFigure: its JSON for a gr.Plot
(Gradio's own plotly.js draws it, offline), .figure() for plotly's API. User and model text is
escaped (plotly renders tags). How a figure is assembled, and why not through plotly's objects:
lab.figures.plotly_canvas.
"""

from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go

from lab.figures import numbers, tables
from lab.figures.plotly_canvas import (
    Canvas,
    LabFigure,
    Theme,
    axis_ref,
    colorscale,
    escaped,
    heatmap_trace,
    integer_axis,
    pick_theme,
    token_axis,
    wrap_words,
)

BOUNDARY = "white"  # where sentence B starts, over attention maps (dark at both ends of viridis)
SUBTITLE_CHARS = 60  # a subtitle's line, at most: plotly draws one line, cut at both ends on a narrow page
SUBTITLE_LINE_PX = 16  # px for each further line of a subtitle (its text is smaller than the title's)


def _boundary(b: int | None, color: str, rows: bool = True, k: int = 0) -> list[dict]:
    """Dashed lines where sentence B starts, on the k-th subplot: between the keys (columns) and,
    with rows=True, between the queries (rows)."""
    if not b:
        return []
    xref, yref = axis_ref(k)
    line = dict(color=color, width=1, dash="dash")
    shapes = [dict(type="line", x0=b - 0.5, x1=b - 0.5, y0=0, y1=1, xref=xref, yref=f"{yref} domain", line=line)]
    if rows:
        shapes.append(
            dict(type="line", y0=b - 0.5, y1=b - 0.5, x0=0, x1=1, yref=yref, xref=f"{xref} domain", line=line)
        )
    return shapes


def _focus(i: int, theme: Theme) -> list[dict]:
    """Outlines of row i (where token i attends) and column i (what attends to token i), on the
    first subplot."""
    line = dict(color=theme.highlight, width=2.5)
    return [
        dict(type="rect", x0=0, x1=1, xref="x domain", y0=i - 0.5, y1=i + 0.5, yref="y", line=line),
        dict(type="rect", y0=0, y1=1, yref="y domain", x0=i - 0.5, x1=i + 0.5, xref="x", line=line),
    ]


# ----------------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------------


def _attention_trace(m: tables.AttentionMap, **kwargs) -> dict:
    """One head: x = key labels, y = query labels (escaped, distinct: the hover names them)."""
    labels = [escaped(t) for t in m.labels]
    return heatmap_trace(
        m,
        f"query: %{{y}}<br>key: %{{x}}<br>weight: %{{z:.3f}}<extra>layer {m.layer}, head {m.head}</extra>",
        x=labels,
        y=labels,
        **kwargs,
    )


def _attention_axes(canvas: Canvas, m: tables.AttentionMap, **where) -> None:
    """Token axes on one map: keys along x, queries down y (query 0 at the top)."""
    axis = token_axis(m.labels, m.tokens)
    canvas.x(axis, **where)
    canvas.y(axis, autorange="reversed", **where)


def _height(n_tokens: int, extra: float = 0) -> float:
    """A square-ish map: 14 px per token between 420 and 760 px, plus `extra`."""
    return min(760, max(420, 14 * n_tokens + 240)) + extra


def attention_heatmap(result, layer: int, head: int, theme: str = "light", focus: int | None = None) -> LabFigure:
    """One attention head: row i = query token i, column j = key token j (each row sums to 1),
    titled "layer 0, head 3" (0-based). Hover: query, key, weight. The "highlight" menu (top
    right) outlines a token's row and column in the browser; focus=i opens with token i
    highlighted. Dashed lines mark where sentence B starts; short sequences show the weights."""
    data = numbers.attention_heatmap(result, layer, head)
    th = pick_theme(theme)
    T = len(data.tokens)
    if focus is not None:
        focus = numbers.checked_index(focus, T, "token")
    canvas = Canvas(data, th)
    canvas.add(_attention_trace(data, colorbar=dict(title=dict(text="weight"))))
    _attention_axes(canvas, data)
    canvas.x(title=data.x_title)
    canvas.y(title=data.y_title)
    base = _boundary(data.sentence_b_start, BOUNDARY)
    canvas.shapes += base + (_focus(focus, th) if focus is not None else [])
    # the menu swaps the shapes in the browser (plotly's relayout): no request, no JavaScript of ours
    buttons = [dict(label="highlight: none", method="relayout", args=[{"shapes": base}])]
    buttons += [
        dict(label=escaped(f"highlight {i}: {t}"), method="relayout", args=[{"shapes": base + _focus(i, th)}])
        for i, t in enumerate(data.tokens)
    ]
    menu = dict(
        buttons=buttons,
        active=0 if focus is None else focus + 1,
        x=1,
        xanchor="right",
        y=1,
        yanchor="bottom",
        pad=dict(b=6),
        direction="down",
    )
    return canvas.finish("attention_heatmap", data.title, _height(T), updatemenus=[menu])


def attention_focus(result, layer: int, head: int, token_index: int, theme: str = "light") -> LabFigure:
    """One head seen from one token: the map with token_index's row and column outlined, below
    it where the token attends (its row, over the keys) and on the right what attends to it
    (its column, over the queries), as bars that line up with the map's axes."""
    data = numbers.attention_focus(result, layer, head, token_index)
    th = pick_theme(theme)
    m, i = data.map, data.index
    labels = [escaped(t) for t in m.labels]
    token = escaped(m.labels[i])
    canvas = Canvas(
        data,
        th,
        2,
        2,
        shared_x=True,
        shared_y=True,
        widths=[0.76, 0.24],
        heights=[0.76, 0.24],
        hspace=0.03,
        vspace=0.08,
        empty=[(2, 2)],
        titles=["", escaped(data.attended_by_title), escaped(data.attends_title)],
    )
    canvas.add(_attention_trace(m, showscale=False), 1, 1)  # the bars give the scale
    # keys along the shared x (labelled under the bars), queries down the shared y; token i in red
    colors = [th.highlight if k == i else th.bar for k in range(len(labels))]
    canvas.add(
        dict(
            type="bar",
            x=data.attended_by,
            y=labels,
            orientation="h",
            marker=dict(color=colors),
            hovertemplate=f"query: %{{y}}<br>key: {token}<br>weight: %{{x:.3f}}<extra></extra>",
        ),
        1,
        2,
    )
    canvas.add(
        dict(
            type="bar",
            x=labels,
            y=data.attends,
            marker=dict(color=colors),
            hovertemplate=f"query: {token}<br>key: %{{x}}<br>weight: %{{y:.3f}}<extra></extra>",
        ),
        2,
        1,
    )
    axis = token_axis(m.labels, m.tokens, keep=[i], color=th.highlight)
    canvas.x(axis, col=1)
    canvas.y(axis, autorange="reversed", row=1)
    canvas.x(title=m.x_title, row=2, col=1)
    canvas.y(title=m.y_title, row=1, col=1)
    canvas.x(title="weight", row=1, col=2)
    canvas.y(title="weight", row=2, col=1)
    canvas.shapes += _boundary(m.sentence_b_start, BOUNDARY) + _focus(i, th)
    return canvas.finish("attention_focus", data.title, _height(len(labels), extra=200), showlegend=False)


def attention_grid(result, layer: int | None = None, theme: str = "light") -> LabFigure:
    """Every head of one layer as small maps titled "head h" (at most 4 per row), or with
    layer=None every layer x head (rows: layers, columns: heads). Token labels on the outer
    axes (queries left, keys below); hover names the layer, head, query, key and weight.
    Each map has its own colour scale from 0 to its largest weight."""
    data = numbers.attention_grid(result, layer)
    th = pick_theme(theme)
    every_layer = data.layer is None
    # one layer: every map titled "head h"; every layer: the top row names the heads (titles are
    # given to the subplots in reading order), the left column the layers
    titles = [f"head {h}" for h in range(data.n_cols)] if every_layer else [m.title for m in data.maps]
    canvas = Canvas(
        data,
        th,
        data.n_rows,
        data.n_cols,
        shared_x=True,
        shared_y=True,
        titles=titles,
        hspace=0.02,
        vspace=0.04 if every_layer else 0.08,
    )
    for k, m in enumerate(data.maps):
        r, c = data.position(k)
        canvas.add(_attention_trace(m, showscale=False), r + 1, c + 1)
        _attention_axes(canvas, m, row=r + 1, col=c + 1)
        if every_layer and c == 0:
            canvas.y(title=f"layer {m.layer}", row=r + 1, col=1)
        canvas.shapes += _boundary(m.sentence_b_start, BOUNDARY, k=r * data.n_cols + c)
    cell = 90 if every_layer else 230  # px per map row
    return canvas.finish("attention_grid", data.title, data.n_rows * cell + 160)


def head_stats_heatmaps(stats: dict, theme: str = "light") -> LabFigure:
    """One [layers, heads] heatmap per head statistic (Clark et al. 2019), as lab.figures.matplotlib_figures draws
    them: the attention shares on one colour scale (one colour bar), entropy on its own."""
    data = numbers.head_stats_heatmaps(stats)
    th = pick_theme(theme)
    cols = min(3, len(data.panels))
    rows = math.ceil(len(data.panels) / cols)
    canvas = Canvas(
        data,
        th,
        rows,
        cols,
        titles=[escaped(p.title) for p in data.panels],
        hspace=0.08,
        vspace=0.25 if rows > 1 else 0.1,
    )
    scales = {}  # colour bar shown once per scale
    for k, p in enumerate(data.panels):
        scale = (p.colors, p.zmin, p.zmax)
        bar = dict(
            title=dict(text="entropy" if p.key == "entropy" else "share"),
            len=0.45,
            y=1 if not scales else 0,
            yanchor="top" if not scales else "bottom",
        )
        canvas.add(
            heatmap_trace(
                p,
                f"layer %{{y}}, head %{{x}}<br>{escaped(p.title)}: %{{z:.3f}}<extra></extra>",
                showscale=scale not in scales,
                colorbar=bar,
            ),
            k // cols + 1,
            k % cols + 1,
        )
        scales.setdefault(scale, k)
    canvas.x(integer_axis("head", data.heads))
    canvas.y(integer_axis("layer", data.layers), autorange="reversed")
    return canvas.finish("head_stats_heatmaps", data.title, rows * max(230, 26 * data.layers + 130) + 120)


def ablation_heatmap(result, theme: str = "light") -> LabFigure:
    """Silencing one head at a time: [layers, heads] heatmap of the change in the metric, each
    cell annotated; diverging colours centred at 0, red = the model needed this head."""
    data = numbers.ablation_heatmap(result)
    th = pick_theme(theme)
    canvas = Canvas(data, th)
    # the hover shows the cell's text: plotly.js 3 cannot format "%{z:+.3f}" (see _cell_text)
    canvas.add(
        heatmap_trace(
            data,
            f"layer %{{y}}, head %{{x}}<br>change in {escaped(data.metric)}: %{{text}}<extra></extra>",
            colorbar=dict(title=dict(text=f"change in {escaped(data.metric)}")),
        )
    )
    L, A = data.values.shape
    canvas.x(integer_axis("head", A))
    canvas.y(integer_axis("layer", L), autorange="reversed")
    return canvas.finish("ablation_heatmap", data.title, min(800, max(320, 40 * L + 200)), data.sentence)


# ----------------------------------------------------------------------------------------------
# Question answering, fill-mask, embeddings, training
# ----------------------------------------------------------------------------------------------


def span_probabilities(result, theme: str = "light") -> LabFigure:
    """Start (top) and end (bottom) probabilities over the tokens of the window holding the best
    answer; the best span's bars red on a shaded band, its token labels red and bold."""
    data = numbers.span_probabilities(result)
    th = pick_theme(theme)
    names = tables.axis_labels(data.tokens)
    labels = [escaped(t) for t in names]
    colors = [th.highlight if i in data.span else th.bar for i in range(len(labels))]
    canvas = Canvas(data, th, 2, 1, shared_x=True, vspace=0.1, titles=["start probability", "end probability"])
    for row, (name, probs) in enumerate((("start", data.start), ("end", data.end)), 1):
        canvas.add(
            dict(
                type="bar",
                x=labels,
                y=probs,
                marker=dict(color=colors),
                name=name,
                hovertemplate=f"%{{x}}<br>{name}: %{{y:.3f}}<extra></extra>",
            ),
            row,
            1,
        )
        canvas.y(title="probability", rangemode="tozero", row=row, col=1)
        if data.span:
            x, y = canvas.refs[row, 1]
            canvas.shapes.append(
                dict(
                    type="rect",
                    x0=min(data.span) - 0.5,
                    x1=max(data.span) + 0.5,
                    xref=x,
                    y0=0,
                    y1=1,
                    yref=f"{y} domain",
                    fillcolor=th.highlight,
                    opacity=0.12,
                    line=dict(width=0),
                )
            )
    canvas.x(token_axis(names, data.tokens, keep=data.span, color=th.highlight), tickangle=-90)
    return canvas.finish("span_probabilities", data.title, 560, showlegend=False, bargap=0.2)


def fill_mask_bars(predictions, theme: str = "light") -> LabFigure:
    """explore.fill_mask's guesses: one panel per [MASK], its top-k tokens as bars (best on top,
    in the highlight colour) with their probabilities; word pieces shown as "…ing (piece)"."""
    data = numbers.fill_mask_bars(predictions)
    th = pick_theme(theme)
    height = sum(24 * len(m.tokens) + 90 for m in data.masks) + 140
    canvas = Canvas(
        data,
        th,
        len(data.masks),
        1,
        vspace=80 / height,  # 80 px between panels
        titles=[escaped(m.title) for m in data.masks],
        heights=[len(m.tokens) + 1 for m in data.masks],
    )
    for row, m in enumerate(data.masks, 1):
        labels = [escaped(t) for t in m.labels]
        canvas.add(
            dict(
                type="bar",
                x=m.probabilities,
                y=labels,
                orientation="h",
                marker=dict(color=[th.highlight] + [th.bar] * (len(labels) - 1)),
                text=[f"{p:.1%}" for p in m.probabilities],
                textposition="outside",
                cliponaxis=False,
                hovertemplate="%{y}: %{x:.3f}<extra>" + escaped(m.title) + "</extra>",
            ),
            row,
            1,
        )
        canvas.y(type="category", autorange="reversed", automargin=True, row=row, col=1)
        canvas.x(
            range=[0, 1.18],  # a fixed axis, room for the labels: a bar's length is its probability, 7.9% short
            tickformat=".0%",
            tickvals=[0, 0.25, 0.5, 0.75, 1],
            title="probability" if row == len(data.masks) else None,
            row=row,
            col=1,
        )
    return canvas.finish("fill_mask_bars", data.title, height, showlegend=False)


def _lens_heatmap(m: tables.LensMask, show_scale: bool, bar_length: float) -> dict:
    """One [MASK]'s top guesses at every layer (rows) by rank (columns): colour = probability,
    each cell's token written in it."""
    return dict(
        type="heatmap",
        z=m.probabilities.astype(np.float32),
        zmin=0,
        zmax=1,
        colorscale=colorscale("Blues"),
        text=[[escaped(t) for t in r] for r in m.labels],
        texttemplate="%{text}",
        customdata=[[f"{p:.3f}" for p in r] for r in m.probabilities.tolist()],
        hovertemplate="layer %{y}, guess %{x}: %{text}<br>probability %{customdata}<extra></extra>",
        showscale=show_scale,
        colorbar=dict(title=dict(text="probability"), len=bar_length),
        x=list(range(1, len(m.tokens[0]) + 1)),
        y=list(range(len(m.tokens))),
    )


def _lens_outlines(m: tables.LensMask, x: str, y: str, color: str) -> list[dict]:
    """Outlines of the cells that hold the final answer, on the heatmap with axes x and y."""
    return [
        dict(
            type="rect",
            x0=r + 0.5,
            x1=r + 1.5,
            y0=layer - 0.5,
            y1=layer + 0.5,
            xref=x,
            yref=y,
            line=dict(color=color, width=3),
        )
        for layer, tokens in enumerate(m.tokens)
        for r, t in enumerate(tokens)
        if t == m.final
    ]


def _lens_line(m: tables.LensMask, color: str) -> dict:
    """The final answer's probability at every layer, its rank in the hover."""
    return dict(
        type="scatter",
        x=m.final_probability.astype(np.float32),
        y=list(range(len(m.tokens))),
        mode="lines+markers",
        line=dict(color=color),
        customdata=m.final_rank,
        hovertemplate=f"layer %{{y}}: {escaped(tables.piece_label(m.final))} "
        "probability %{x:.3f}, rank %{customdata}<extra></extra>",
    )


def logit_lens(result, theme: str = "light") -> LabFigure:
    """explore.logit_lens: for each [MASK] (up to three), a heatmap of the top guesses at every
    layer (layers down, from the embeddings to the last layer; guesses across, best first; colour =
    probability, each cell's token written in it, the final answer's cells outlined) and beside it
    the final answer's probability at every layer as a line."""
    data = numbers.logit_lens(result)
    th = pick_theme(theme)
    n = len(data.masks)
    layers = len(data.masks[0].tokens)
    per_mask = 34 * layers + 110
    height = per_mask * n + 90
    canvas = Canvas(
        data,
        th,
        n,
        2,
        widths=[3, 1],
        hspace=0.06,
        vspace=70 / height,
        titles=[t for m in data.masks for t in (escaped(m.title), "its probability")],
    )
    names = ["embeddings"] + [f"layer {i}" for i in range(1, layers)]
    for row, m in enumerate(data.masks, 1):
        canvas.add(_lens_heatmap(m, row == 1, min(1.0, per_mask / height)), row, 1)
        canvas.shapes += _lens_outlines(m, *canvas.refs[row, 1], th.highlight)
        canvas.add(_lens_line(m, th.highlight), row, 2)
        canvas.x(title="guess (best first)" if row == n else None, dtick=1, row=row, col=1)
        canvas.x(range=[0, 1.05], title="probability" if row == n else None, row=row, col=2)
        canvas.y(tickmode="array", tickvals=list(range(layers)), ticktext=names, autorange="reversed", row=row)
        canvas.y(showticklabels=False, row=row, col=2)
    shown = "" if data.num_masks == n else f"the first {n} of {data.num_masks} [MASK]s (the CSV has them all)"
    return canvas.finish("logit_lens", data.title, height, shown, showlegend=False)


def _signed_bars(scores: np.ndarray, labels: list[str], hover: str) -> dict:
    """One bar per token, red toward the answer and purple against it (lab.figures.numbers' colours)."""
    return dict(
        type="bar",
        x=labels,
        y=scores.astype(np.float32),
        marker=dict(color=[numbers.TOWARD if v >= 0 else numbers.AGAINST for v in scores.tolist()]),
        customdata=[f"{v:+.3f}" for v in scores.tolist()],
        hovertemplate=hover,
    )


def _wrap_subtitle(fig: LabFigure) -> LabFigure:
    """The figure with its subtitle (the title's <sup> part) wrapped between words into lines of at
    most SUBTITLE_CHARS, the figure taller by as much: a presenter's zoomed figure shows all of it."""
    layout = fig.lab_json["layout"]
    head, sep, sub = layout["title"]["text"].partition("<br><sup>")
    if not sep:
        return fig
    plain = html.unescape(sub.removesuffix("</sup>"))
    lines = wrap_words(plain, SUBTITLE_CHARS)
    layout["title"]["text"] = head + "".join(f"<br><sup>{escaped(line)}</sup>" for line in lines)
    more = SUBTITLE_LINE_PX * (len(lines) - 1)
    layout["height"] += more
    layout["margin"]["t"] += more
    return fig


def attributions(result, theme: str = "light") -> LabFigure:
    """explore.attributions: one bar per token, its score (red: toward the answer, purple:
    against it), the tokens the answer is about (the span, the [MASK]) labelled bold in the
    highlight colour; the subtitle says f(input) - f(baseline) and what the scores add up to."""
    data = numbers.attributions(result)
    th = pick_theme(theme)
    names = tables.axis_labels(data.tokens)
    labels = [escaped(t) for t in names]
    canvas = Canvas(data, th)
    canvas.add(_signed_bars(data.scores, labels, "%{x}: %{customdata}<extra></extra>"))
    canvas.x(token_axis(names, data.tokens, keep=data.highlight, color=th.highlight), tickangle=-90)
    canvas.y(title="score (its share of f)", zeroline=True)
    return _wrap_subtitle(canvas.finish("attributions", data.title, 420, data.subtitle, showlegend=False, bargap=0.15))


def attention_vs_attribution(comparison, attribution, theme: str = "light") -> LabFigure:
    """lab.inspect.attribution.attention_vs_attribution: the attribution (top, signed bars) and the
    attention [CLS] pays in the last layer, mean of its heads (bottom), over the same tokens;
    Pearson and Spearman correlations (|attribution| vs attention, over the text's tokens) in the
    title; the special tokens, left out of the correlations, are labelled grey."""
    data = numbers.attention_vs_attribution(comparison, attribution)
    th = pick_theme(theme)
    names = tables.axis_labels(data.tokens)
    labels = [escaped(t) for t in names]
    canvas = Canvas(
        data,
        th,
        2,
        1,
        shared_x=True,
        vspace=0.14,
        titles=[escaped(data.attribution_title), escaped(data.attention_title)],
    )
    canvas.add(_signed_bars(data.scores, labels, "%{x}: attribution %{customdata}<extra></extra>"), 1, 1)
    canvas.add(
        dict(
            type="bar",
            x=labels,
            y=data.attention.astype(np.float32),
            marker=dict(color=[th.bar if w else "#9ca3af" for w in data.words.tolist()]),
            hovertemplate="%{x}: attention %{y:.3f}<extra></extra>",
        ),
        2,
        1,
    )
    canvas.y(title="score", zeroline=True, row=1, col=1)
    canvas.y(title="attention", rangemode="tozero", row=2, col=1)
    canvas.x(token_axis(names, data.tokens), tickangle=-90)
    fig = canvas.finish("attention_vs_attribution", data.title, 620, data.subtitle, showlegend=False, bargap=0.15)
    return _wrap_subtitle(fig)


def _probe_style(line: tables.ProbeLine, snapshots: list, grey: str) -> dict:
    """A probe line's dash by its kind; the baselines grey, snapshots blue from pale (early steps)
    to dark (late), a model drawn beside snapshots orange."""
    dash, _, is_grey = numbers.PROBE_LINE_STYLES[line.kind]
    style: dict = dict(dash=dash, width=2)
    if is_grey:
        style["color"] = grey
    elif line.kind == "snapshot" and len(snapshots) > 1:
        share = snapshots.index(line) / (len(snapshots) - 1)
        style["color"] = f"rgba(37, 99, 235, {0.25 + 0.75 * share:.2f})"
    elif line.kind == "model" and snapshots:
        style["color"] = "#f97316"
    return style


def _probe_traces(line: tables.ProbeLine, style: dict) -> list[dict]:
    """The majority baseline: its interval as a band, then its line. Any other line: accuracy
    with its interval as error bars."""
    hover = f"{escaped(line.name)}<br>layer %{{x}}: %{{y:.3f}} [%{{customdata[0]:.3f}}, %{{customdata[1]:.3f}}]"
    trace = dict(type="scatter", mode="lines", x=line.layers, y=line.accuracy, name=escaped(line.name), line=style)
    hovered = dict(customdata=np.column_stack([line.low, line.high]), hovertemplate=hover + "<extra></extra>")
    if line.kind == "majority":
        band = dict(
            type="scatter",
            mode="lines",
            x=line.layers + line.layers[::-1],
            y=line.high + line.low[::-1],
            fill="toself",
            fillcolor="rgba(156, 163, 175, 0.25)",
            line=dict(width=0),
            hoverinfo="skip",
            showlegend=False,
        )
        return [band, {**trace, **hovered}]
    error_bars = dict(
        type="data",
        symmetric=False,
        array=np.subtract(line.high, line.accuracy),
        arrayminus=np.subtract(line.accuracy, line.low),
        thickness=1.5,
        width=4,
    )
    return [{**trace, "mode": "lines+markers", "marker": dict(size=7), "error_y": error_bars, **hovered}]


def probe_layers(results, theme: str = "light", title: str | None = None) -> LabFigure:
    """Accuracy by layer (plotly, for the dashboard): one line per model or snapshot with its
    Wilson 95% interval as error bars, the random-weights control dotted, the majority baseline
    dashed with its interval as a band (lab.inspect.probing.probe_layers's results, or their ProbeCurves)."""
    data = results if isinstance(results, tables.ProbeCurves) else numbers.probe_curves(results, title)
    grey = "#9ca3af" if theme == "dark" else "#6b7280"
    canvas = Canvas(data, pick_theme(theme))
    snapshots = [line for line in data.lines if line.kind == "snapshot"]
    for line in data.lines:
        for trace in _probe_traces(line, _probe_style(line, snapshots, grey)):
            canvas.add(trace)
    lows = [v for line in data.lines for v in line.low]
    highs = [v for line in data.lines for v in line.high]
    canvas.x(title="layer (0 = embeddings)", dtick=1, range=[-0.3, data.num_layers + 0.3])
    canvas.y(
        title="accuracy on test words (95% interval)",
        range=[max(0.0, min(lows) - 0.03), min(1.0, max(highs) + 0.03)],
    )
    if len(data.lines) > 4:  # snapshots: a column of names at the right, not rows under the axis
        legend = dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top", font=dict(size=11))
        return canvas.finish("probe_layers", data.title, 500, subtitle=data.subtitle, legend=legend)
    legend = dict(orientation="h", y=-0.2)
    return canvas.finish("probe_layers", data.title, 460, subtitle=data.subtitle, legend=legend)


def embedding_components(result, dims: int = 32, theme: str = "light") -> LabFigure:
    """The paper's Figure 2: token, segment and position embeddings, their sum (one shared
    colour scale centred at 0) and the LayerNorm output (its own), each the first `dims`
    dimensions (rows) over the tokens (columns); a dashed line where sentence B starts."""
    data = numbers.embedding_components(result, dims)
    th = pick_theme(theme)
    labels = tables.axis_labels(data.tokens)
    canvas = Canvas(data, th, 5, 1, shared_x=True, vspace=0.05, titles=[escaped(p.title) for p in data.panels])
    for row, p in enumerate(data.panels, 1):
        last = row == len(data.panels)
        bar = dict(
            title=dict(text="value"),
            len=0.16 if last else 0.78,
            y=0 if last else 1,
            yanchor="bottom" if last else "top",
        )
        canvas.add(
            heatmap_trace(
                p,
                f"token: %{{x}}<br>dim %{{y}}<br>value: %{{z:.3f}}<extra>{p.key}</extra>",
                x=[escaped(t) for t in labels],
                showscale=row in (1, 5),
                colorbar=bar,
            ),
            row,
            1,
        )
        canvas.y(title="dim", autorange="reversed", row=row, col=1)
    canvas.x(token_axis(labels, data.tokens), tickangle=-90)
    # black: the dashed line falls on the scale's white middle whatever the theme
    canvas.shapes += [s for k in range(len(data.panels)) for s in _boundary(data.sentence_b_start, "black", False, k)]
    return canvas.finish("embedding_components", data.title, 900)


MARKERS = {"o": "circle", "s": "square"}  # tables.Series markers -> plotly symbols


def training_curves(run_or_records, x: str = "time", title: str | None = None, theme: str = "light") -> LabFigure:
    """Loss (left) and held-out accuracy (right) against wall time (x="time", minutes) or steps
    (x="step"): thin lines for the training loss at every logged step, points for evaluations."""
    data = numbers.training_curves(run_or_records, x, title)
    th = pick_theme(theme)
    canvas = Canvas(data, th, 1, 2, hspace=0.1)
    for s in data.series:
        col = 1 if s.panel == "loss" else 2
        style = (
            dict(mode="lines", line=dict(width=1), opacity=0.6)
            if s.marker is None
            else dict(mode="lines+markers", marker=dict(symbol=MARKERS[s.marker], size=6))
        )
        canvas.add(
            dict(
                type="scatter",
                x=s.x,
                y=s.y,
                name=escaped(s.name),
                **style,
                hovertemplate=f"{escaped(data.x_title)}: %{{x:.4g}}<br>%{{y:.4f}}",
            ),
            1,
            col,
        )
    for col, panel in ((1, "loss"), (2, "accuracy")):
        canvas.x(title=data.x_title, row=1, col=col)
        canvas.y(title=data.y_titles[panel], row=1, col=col)
    canvas.y(range=[0, 1], row=1, col=2)
    return canvas.finish("training_curves", data.title, 440, legend=dict(orientation="h", y=-0.2))


# ----------------------------------------------------------------------------------------------
# Downloads
# ----------------------------------------------------------------------------------------------


def figure_csv(figure) -> str:
    """The numbers a figure draws as CSV text (a header, then one line per drawn value), from a
    figure made here or from a lab.figures.numbers object. In a Gradio handler, write it to a file
    for a gr.DownloadButton / gr.File next to the gr.Plot."""
    data = figure.lab_data if isinstance(figure, LabFigure) else figure
    if not hasattr(data, "csv"):
        raise ValueError(
            "no figure data: pass a figure made by lab.figures.plotly_figures (not plotly's Figure of it) "
            "or an object of lab.figures.numbers"
        )
    return data.csv()


def figure_name(fig) -> str:
    """The figure's name, its builder's ("attention_heatmap"), for file names: the CSV download
    and the image download. Read from the figure's JSON; for a plotly Figure (figure() of one
    made here), its layout.meta["figure"], else "figure"."""
    if isinstance(fig, LabFigure):
        meta = fig.lab_json.get("layout", {}).get("meta")
    else:
        meta = fig.layout.meta if isinstance(fig, go.Figure) else None
    return str((meta or {}).get("figure", "figure"))


def download_as(fig: LabFigure, image_format: str = "svg") -> LabFigure:
    """Make the modebar's camera button download `image_format` ("png", "svg", "jpeg", "webp")."""
    if image_format not in ("png", "svg", "jpeg", "webp"):
        raise ValueError(f"image_format must be png, svg, jpeg or webp, got {image_format!r}")
    fig.lab_config = {
        **fig.lab_config,
        "toImageButtonOptions": {**fig.lab_config.get("toImageButtonOptions", {}), "format": image_format},
    }
    return fig
