"""Browser-drawn (plotly) figures for the dashboard: the lab's figures, interactive.

    from lab import explore, figures
    att = explore.attention(model, tokenizer, "the cat sat on the mat .", "it purred .")
    fig = figures.attention_heatmap(att, layer=0, head=3, theme="dark")   # a plotly Figure
    figures.attention_focus(att, 0, 3, token_index=2)     # the same head from token 2's side
    figures.figure_csv(fig)                                # what it draws, as CSV text

In app.py a handler returns the figure as the value of a gr.Plot: Gradio sends the data (not
pixels) and draws it with the plotly.js it serves itself, so it works offline. Hovering a cell
shows the query token, the key token and the weight; the one-head map has a "highlight" menu
that outlines a token's row (where it attends) and column (what attends to it) in the browser,
and attention_focus draws that token's row and column as bars too (the dashboard calls it when
a token is picked). The modebar's camera button downloads the figure (PNG, or SVG after
download_as(fig, "svg")), and figure_csv gives its numbers for a CSV download.

The figures, named as in lab.plots (the matplotlib versions, for notebooks and static exports):

    training_curves(run_or_records, x="time")   losses and held-out accuracies of a run
    attention_heatmap(attention, layer, head)   one head: queries (rows) x keys (columns)
    attention_focus(attention, layer, head, i)  one head with token i's row and column as bars
    attention_grid(attention, layer=None)       every head of one layer (or all), token labels
    head_stats_heatmaps(stats)                  one [layers, heads] map per head statistic
    ablation_heatmap(ablation)                  the effect of silencing each head
    span_probabilities(answer)                  QA start / end probabilities, the best span red
    fill_mask_bars(predictions)                 the best guesses at each [MASK]
    embedding_components(embeddings)           the paper's Figure 2
    figure_csv(fig_or_data), download_as(fig, image_format)

Every builder takes theme="light" (template plotly_white) or "dark" (plotly_dark). What each
figure shows comes from lab.figure_data, as lab.plots' figures do, so the two never disagree.
Text from users and models is escaped before plotly sees it: plotly renders tags such as <b>
in titles, tick labels and hover text, so a token "<img src=x>" is shown as those characters.
"""
from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from . import figure_data

MAX_TICKS = 64          # token labels along one axis; longer sequences label every n-th token
TOP_MARGIN = 100        # px above the plot: the title sits below gr.Plot's label badge


@dataclass(frozen=True)
class Theme:
    template: str       # plotly template
    bar: str            # bars
    highlight: str      # the best answer span, the focused token's row and column


THEMES = {"light": Theme("plotly_white", bar="#4c72b0", highlight="#d62728"),
          "dark": Theme("plotly_dark", bar="#7aa6e0", highlight="#ff6b6b")}
BOUNDARY = "white"      # where sentence B starts, over attention maps (dark at both ends of viridis)


class LabFigure(go.Figure):
    """A plotly Figure that carries the figure_data object it draws (figure_csv reads it) and
    its plotly.js config (the download button's format), which gr.Plot takes from to_json().
    Copies (copy.deepcopy, pickle, go.Figure(fig)) keep the drawing but not these two."""
    _lab_data = None
    _lab_config: dict = {}

    def to_json(self, *args, **kwargs) -> str:
        """plotly's JSON with a "config" entry: {"data": [...], "layout": {...}, "config": {...}}."""
        text = super().to_json(*args, **kwargs).rstrip()        # '{"data": ..., "layout": ...}'
        return f'{text[:-1]}, "config": {json.dumps(self._lab_config)}}}'

    def show(self, *args, **kwargs):
        kwargs.setdefault("config", self._lab_config)
        return super().show(*args, **kwargs)


# ----------------------------------------------------------------------------------------------
# Helpers: escaping, layout, axes, heatmaps
# ----------------------------------------------------------------------------------------------


def _html(text) -> str:
    """Text shown literally by plotly: '<', '>' and '&' escaped; a leading '$' (which would start
    LaTeX in a string that also ends with '$') written as its character reference."""
    text = html.escape(str(text), quote=False)
    return "&#36;" + text[1:] if text.startswith("$") else text


def _title(text: str) -> str:
    """A title escaped, its line breaks as plotly's <br>."""
    return _html(text).replace("\n", "<br>")


def _theme(theme: str) -> Theme:
    if theme not in THEMES:
        raise ValueError(f"theme must be one of {', '.join(THEMES)}, got {theme!r}")
    return THEMES[theme]


def _figure(data, theme: Theme, rows: int = 1, cols: int = 1, **subplots) -> LabFigure:
    """An empty figure in the theme's template, carrying `data`, with rows x cols subplots."""
    # _validate=False: plotly skips checking every property it is given (the values come from
    # figure_data, already checked; tests/test_figures.py renders them): 42 -> 26 ms of CPU for
    # the dashboard's two attention figures, the requests a class sends most
    fig = LabFigure(_validate=False)
    if rows * cols > 1 or subplots:
        fig.set_subplots(rows, cols, **subplots)
    fig._lab_data = data
    fig._lab_config = {"displaylogo": False, "toImageButtonOptions": {"format": "png"}}
    fig.update_layout(template=pio.templates[theme.template])   # the object: plotly.js knows no names
    return fig


def _finish(fig: LabFigure, name: str, title: str | None, height: float, subtitle: str = "") -> LabFigure:
    """Title (centred, below gr.Plot's label badge), height in px (the width follows the page),
    the figure's name in layout.meta and as the download's file name."""
    text = _title(title or "") + (f"<br><sup>{_html(subtitle)}</sup>" if subtitle else "")
    extra = 22 * text.count("<br>")                        # px for each line of a longer title
    fig.update_layout(title=dict(text=text, x=0.5, xanchor="center", y=1, yanchor="top",
                                 yref="container", pad=dict(t=40)),
                      height=round(height + extra), margin=dict(t=TOP_MARGIN + extra, l=60, r=30, b=50),
                      meta={"figure": name})
    fig._lab_config["toImageButtonOptions"]["filename"] = name
    return fig


def _token_axis(labels, tokens, keep=(), color: str | None = None) -> dict:
    """A category axis of one position per token: categories are the (escaped, distinct) labels,
    ticks show the tokens, every n-th one past MAX_TICKS plus `keep` (drawn bold in `color`)."""
    step = max(1, math.ceil(len(tokens) / MAX_TICKS))
    shown = sorted(set(range(0, len(tokens), step)) | set(keep))
    text = [_html(tokens[i]) for i in shown]
    if color:
        text = [f"<b><span style='color:{color}'>{t}</span></b>" if i in keep else t
                for i, t in zip(shown, text)]
    return dict(type="category", tickmode="array", tickvals=[_html(labels[i]) for i in shown],
                ticktext=text, tickfont=dict(size=11 if len(tokens) <= 32 else 9), automargin=True)


def _integer_axis(title: str, n: int) -> dict:
    """Layers or heads 0..n-1: every one labelled up to 32, then plotly's choice."""
    return dict(title=title, dtick=1 if n <= 32 else None, automargin=True)


def _heatmap(panel: figure_data.Panel, hovertemplate: str, **kwargs) -> go.Heatmap:
    """The panel's values on its colour scale, each cell's number written in where it says so.
    Sent as float32, the precision the model computed them in: half the bytes of float64 (12
    heads of 128 x 128 tokens: 1.3 MB of JSON instead of 2.5)."""
    text = dict(texttemplate=f"%{{z:{panel.cell_format}}}") if panel.cell_format else {}
    return go.Heatmap(z=panel.values.astype(np.float32), zmin=panel.zmin, zmax=panel.zmax, colorscale=panel.colors,
                      hovertemplate=hovertemplate, **text, **kwargs)


def _axis_ref(k: int) -> tuple[str, str]:
    """The axes of the k-th subplot (0-based, row by row): ("x", "y"), ("x2", "y2"), ..."""
    return (f"x{k + 1}", f"y{k + 1}") if k else ("x", "y")


def _boundary(b: int | None, color: str, rows: bool = True, k: int = 0) -> list[dict]:
    """Dashed lines where sentence B starts, on the k-th subplot: between the keys (columns) and,
    with rows=True, between the queries (rows)."""
    if not b:
        return []
    xref, yref = _axis_ref(k)
    line = dict(color=color, width=1, dash="dash")
    shapes = [dict(type="line", x0=b - 0.5, x1=b - 0.5, y0=0, y1=1, xref=xref, yref=f"{yref} domain", line=line)]
    if rows:
        shapes.append(dict(type="line", y0=b - 0.5, y1=b - 0.5, x0=0, x1=1, yref=yref,
                           xref=f"{xref} domain", line=line))
    return shapes


def _focus(i: int, theme: Theme) -> list[dict]:
    """Outlines of row i (where token i attends) and column i (what attends to token i), on the
    first subplot."""
    line = dict(color=theme.highlight, width=2.5)
    return [dict(type="rect", x0=0, x1=1, xref="x domain", y0=i - 0.5, y1=i + 0.5, yref="y", line=line),
            dict(type="rect", y0=0, y1=1, yref="y domain", x0=i - 0.5, x1=i + 0.5, xref="x", line=line)]


# ----------------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------------


def _attention_trace(m: figure_data.AttentionMap, **kwargs) -> go.Heatmap:
    """One head: x = key labels, y = query labels (escaped, distinct: the hover names them)."""
    labels = [_html(t) for t in m.labels]
    return _heatmap(m, "query: %{y}<br>key: %{x}<br>weight: %{z:.3f}"
                       f"<extra>layer {m.layer}, head {m.head}</extra>",
                    x=labels, y=labels, **kwargs)


def _attention_axes(fig, m: figure_data.AttentionMap, **where) -> None:
    """Token axes on one map: keys along x, queries down y (query 0 at the top)."""
    fig.update_xaxes(_token_axis(m.labels, m.tokens), **where)
    fig.update_yaxes(_token_axis(m.labels, m.tokens), autorange="reversed", **where)


def _height(n_tokens: int, extra: float = 0) -> float:
    """A square-ish map: 14 px per token between 420 and 760 px, plus `extra`."""
    return min(760, max(420, 14 * n_tokens + 240)) + extra


def attention_heatmap(result, layer: int, head: int, theme: str = "light", focus: int | None = None) -> LabFigure:
    """One attention head: row i = query token i, column j = key token j (each row sums to 1),
    titled "layer 0, head 3" (0-based). Hover: query, key, weight. The "highlight" menu (top
    right) outlines a token's row and column in the browser; focus=i opens with token i
    highlighted. Dashed lines mark where sentence B starts; short sequences show the weights."""
    data = figure_data.attention_heatmap(result, layer, head)
    th = _theme(theme)
    T = len(data.tokens)
    if focus is not None:
        focus = figure_data.checked_index(focus, T, "token")
    fig = _figure(data, th)
    fig.add_trace(_attention_trace(data, colorbar=dict(title="weight")))
    _attention_axes(fig, data)
    fig.update_xaxes(title=data.x_title)
    fig.update_yaxes(title=data.y_title)
    base = _boundary(data.sentence_b_start, BOUNDARY)
    fig.update_layout(shapes=base + (_focus(focus, th) if focus is not None else []))
    # the menu swaps the shapes in the browser (plotly's relayout): no request, no JavaScript of ours
    buttons = [dict(label="highlight: none", method="relayout", args=[{"shapes": base}])]
    buttons += [dict(label=_html(f"highlight {i}: {t}"), method="relayout",
                     args=[{"shapes": base + _focus(i, th)}]) for i, t in enumerate(data.tokens)]
    fig.update_layout(updatemenus=[dict(buttons=buttons, active=0 if focus is None else focus + 1,
                                        x=1, xanchor="right", y=1, yanchor="bottom", pad=dict(b=6),
                                        direction="down")])
    return _finish(fig, "attention_heatmap", data.title, _height(T))


def attention_focus(result, layer: int, head: int, token_index: int, theme: str = "light") -> LabFigure:
    """One head seen from one token: the map with token_index's row and column outlined, below
    it where the token attends (its row, over the keys) and on the right what attends to it
    (its column, over the queries), as bars that line up with the map's axes."""
    data = figure_data.attention_focus(result, layer, head, token_index)
    th = _theme(theme)
    m, i = data.map, data.index
    labels = [_html(t) for t in m.labels]
    token = _html(m.labels[i])
    fig = _figure(data, th, 2, 2, shared_xaxes=True, shared_yaxes=True, column_widths=[0.76, 0.24],
                  row_heights=[0.76, 0.24], horizontal_spacing=0.03, vertical_spacing=0.08,
                  specs=[[{}, {}], [{}, None]],
                  subplot_titles=["", _html(data.attended_by_title), _html(data.attends_title)])
    fig.add_trace(_attention_trace(m, showscale=False), row=1, col=1)    # the bars give the scale
    # keys along the shared x (labelled under the bars), queries down the shared y; token i in red
    colors = [th.highlight if k == i else th.bar for k in range(len(labels))]
    fig.add_trace(go.Bar(x=data.attended_by, y=labels, orientation="h", marker_color=colors,
                         hovertemplate=f"query: %{{y}}<br>key: {token}<br>weight: %{{x:.3f}}<extra></extra>"),
                  row=1, col=2)
    fig.add_trace(go.Bar(x=labels, y=data.attends, marker_color=colors,
                         hovertemplate=f"query: {token}<br>key: %{{x}}<br>weight: %{{y:.3f}}<extra></extra>"),
                  row=2, col=1)
    axis = _token_axis(m.labels, m.tokens, keep=[i], color=th.highlight)
    fig.update_xaxes(axis, col=1)
    fig.update_yaxes(axis, autorange="reversed", row=1)
    fig.update_xaxes(title=m.x_title, row=2, col=1)
    fig.update_yaxes(title=m.y_title, row=1, col=1)
    fig.update_xaxes(title="weight", row=1, col=2)
    fig.update_yaxes(title="weight", row=2, col=1)
    fig.update_layout(shapes=_boundary(m.sentence_b_start, BOUNDARY) + _focus(i, th), showlegend=False)
    return _finish(fig, "attention_focus", data.title, _height(len(labels), extra=200))


def attention_grid(result, layer: int | None = None, theme: str = "light") -> LabFigure:
    """Every head of one layer as small maps titled "head h" (at most 4 per row), or with
    layer=None every layer x head (rows: layers, columns: heads). Token labels on the outer
    axes (queries left, keys below); hover names the layer, head, query, key and weight.
    Each map has its own colour scale from 0 to its largest weight."""
    data = figure_data.attention_grid(result, layer)
    th = _theme(theme)
    every_layer = data.layer is None
    # one layer: every map titled "head h"; every layer: the top row names the heads (titles are
    # given to the subplots in reading order), the left column the layers
    titles = [f"head {h}" for h in range(data.n_cols)] if every_layer else [m.title for m in data.maps]
    fig = _figure(data, th, data.n_rows, data.n_cols, shared_xaxes=True, shared_yaxes=True,
                  subplot_titles=titles, horizontal_spacing=0.02,
                  vertical_spacing=0.04 if every_layer else 0.08)
    shapes = []
    for k, m in enumerate(data.maps):
        r, c = data.position(k)
        fig.add_trace(_attention_trace(m, showscale=False), row=r + 1, col=c + 1)
        _attention_axes(fig, m, row=r + 1, col=c + 1)
        if every_layer and c == 0:
            fig.update_yaxes(title=f"layer {m.layer}", row=r + 1, col=1)
        shapes += _boundary(m.sentence_b_start, BOUNDARY, k=r * data.n_cols + c)
    fig.update_layout(shapes=shapes)
    cell = 90 if every_layer else 230                      # px per map row
    return _finish(fig, "attention_grid", data.title, data.n_rows * cell + 160)


def head_stats_heatmaps(stats: dict, theme: str = "light") -> LabFigure:
    """One [layers, heads] heatmap per head statistic (Clark et al. 2019), as lab.plots draws
    them: the attention shares on one colour scale (one colour bar), entropy on its own."""
    data = figure_data.head_stats_heatmaps(stats)
    th = _theme(theme)
    cols = min(3, len(data.panels))
    rows = math.ceil(len(data.panels) / cols)
    fig = _figure(data, th, rows, cols, subplot_titles=[_html(p.title) for p in data.panels],
                  horizontal_spacing=0.08, vertical_spacing=0.25 if rows > 1 else 0.1)
    scales = {}                                            # colour bar shown once per scale
    for k, p in enumerate(data.panels):
        scale = (p.colors, p.zmin, p.zmax)
        bar = dict(title="entropy" if p.key == "entropy" else "share", len=0.45,
                   y=1 if not scales else 0, yanchor="top" if not scales else "bottom")
        fig.add_trace(_heatmap(p, f"layer %{{y}}, head %{{x}}<br>{_html(p.title)}: %{{z:.3f}}<extra></extra>",
                               showscale=scale not in scales, colorbar=bar),
                      row=k // cols + 1, col=k % cols + 1)
        scales.setdefault(scale, k)
    fig.update_xaxes(_integer_axis("head", data.heads))
    fig.update_yaxes(_integer_axis("layer", data.layers), autorange="reversed")
    return _finish(fig, "head_stats_heatmaps", data.title, rows * max(230, 26 * data.layers + 130) + 120)


def ablation_heatmap(result, theme: str = "light") -> LabFigure:
    """Silencing one head at a time: [layers, heads] heatmap of the change in the metric, each
    cell annotated; diverging colours centred at 0, red = the model needed this head."""
    data = figure_data.ablation_heatmap(result)
    th = _theme(theme)
    fig = _figure(data, th)
    fig.add_trace(_heatmap(data, f"layer %{{y}}, head %{{x}}<br>change in {_html(data.metric)}: "
                                 f"%{{z:{data.cell_format}}}<extra></extra>",
                           colorbar=dict(title=f"change in {_html(data.metric)}")))
    L, A = data.values.shape
    fig.update_xaxes(_integer_axis("head", A))
    fig.update_yaxes(_integer_axis("layer", L), autorange="reversed")
    return _finish(fig, "ablation_heatmap", data.title, min(800, max(320, 40 * L + 200)), data.sentence)


# ----------------------------------------------------------------------------------------------
# Question answering, fill-mask, embeddings, training
# ----------------------------------------------------------------------------------------------


def span_probabilities(result, theme: str = "light") -> LabFigure:
    """Start (top) and end (bottom) probabilities over the tokens of the window holding the best
    answer; the best span's bars red on a shaded band, its token labels red and bold."""
    data = figure_data.span_probabilities(result)
    th = _theme(theme)
    names = figure_data.axis_labels(data.tokens)
    labels = [_html(t) for t in names]
    colors = [th.highlight if i in data.span else th.bar for i in range(len(labels))]
    fig = _figure(data, th, 2, 1, shared_xaxes=True, vertical_spacing=0.1,
                  subplot_titles=["start probability", "end probability"])
    for row, (name, probs) in enumerate((("start", data.start), ("end", data.end)), 1):
        fig.add_trace(go.Bar(x=labels, y=probs, marker_color=colors, name=name,
                             hovertemplate=f"%{{x}}<br>{name}: %{{y:.3f}}<extra></extra>"), row=row, col=1)
        fig.update_yaxes(title="probability", rangemode="tozero", row=row, col=1)
        if data.span:
            fig.add_vrect(x0=min(data.span) - 0.5, x1=max(data.span) + 0.5, fillcolor=th.highlight,
                          opacity=0.12, line_width=0, row=row, col=1)
    fig.update_xaxes(_token_axis(names, data.tokens, keep=data.span, color=th.highlight), tickangle=-90)
    fig.update_layout(showlegend=False, bargap=0.2)
    return _finish(fig, "span_probabilities", data.title, 560)


def fill_mask_bars(predictions, theme: str = "light") -> LabFigure:
    """explore.fill_mask's guesses: one panel per [MASK], its top-k tokens as bars (best on top,
    in the highlight colour) with their probabilities; word pieces shown as "…ing (piece)"."""
    data = figure_data.fill_mask_bars(predictions)
    th = _theme(theme)
    height = sum(24 * len(m.tokens) + 90 for m in data.masks) + 140
    fig = _figure(data, th, len(data.masks), 1, vertical_spacing=80 / height,      # 80 px between panels
                  subplot_titles=[_html(m.title) for m in data.masks],
                  row_heights=[len(m.tokens) + 1 for m in data.masks])
    for row, m in enumerate(data.masks, 1):
        labels = [_html(t) for t in m.labels]
        fig.add_trace(go.Bar(x=m.probabilities, y=labels, orientation="h",
                             marker_color=[th.highlight] + [th.bar] * (len(labels) - 1),
                             text=[f"{p:.1%}" for p in m.probabilities], textposition="outside",
                             cliponaxis=False,
                             hovertemplate="%{y}: %{x:.3f}<extra>" + _html(m.title) + "</extra>"),
                      row=row, col=1)
        fig.update_yaxes(type="category", autorange="reversed", automargin=True, row=row, col=1)
        fig.update_xaxes(range=[0, max(float(m.probabilities.max(initial=0.0)), 1e-9) * 1.25],
                         title="probability" if row == len(data.masks) else None, row=row, col=1)
    fig.update_layout(showlegend=False)
    return _finish(fig, "fill_mask_bars", data.title, height)


def embedding_components(result, dims: int = 32, theme: str = "light") -> LabFigure:
    """The paper's Figure 2: token, segment and position embeddings, their sum (one shared
    colour scale centred at 0) and the LayerNorm output (its own), each the first `dims`
    dimensions (rows) over the tokens (columns); a dashed line where sentence B starts."""
    data = figure_data.embedding_components(result, dims)
    th = _theme(theme)
    labels = figure_data.axis_labels(data.tokens)
    fig = _figure(data, th, 5, 1, shared_xaxes=True, vertical_spacing=0.05,
                  subplot_titles=[_html(p.title) for p in data.panels])
    for row, p in enumerate(data.panels, 1):
        last = row == len(data.panels)
        bar = dict(title="value", len=0.16 if last else 0.78, y=0 if last else 1,
                   yanchor="bottom" if last else "top")
        fig.add_trace(_heatmap(p, f"token: %{{x}}<br>dim %{{y}}<br>value: %{{z:.3f}}<extra>{p.key}</extra>",
                               x=[_html(t) for t in labels], showscale=row in (1, 5), colorbar=bar),
                      row=row, col=1)
        fig.update_yaxes(title="dim", autorange="reversed", row=row, col=1)
    fig.update_xaxes(_token_axis(labels, data.tokens), tickangle=-90)
    # black: the dashed line falls on the scale's white middle whatever the theme
    fig.update_layout(shapes=[s for k in range(len(data.panels))
                              for s in _boundary(data.sentence_b_start, "black", rows=False, k=k)])
    return _finish(fig, "embedding_components", data.title, 900)


MARKERS = {"o": "circle", "s": "square"}      # figure_data markers -> plotly symbols


def training_curves(run_or_records, x: str = "time", title: str | None = None, theme: str = "light") -> LabFigure:
    """Loss (left) and held-out accuracy (right) against wall time (x="time", minutes) or steps
    (x="step"): thin lines for the training loss at every logged step, points for evaluations."""
    data = figure_data.training_curves(run_or_records, x, title)
    th = _theme(theme)
    fig = _figure(data, th, 1, 2, horizontal_spacing=0.1)
    for s in data.series:
        col = 1 if s.panel == "loss" else 2
        style = (dict(mode="lines", line=dict(width=1), opacity=0.6) if s.marker is None else
                 dict(mode="lines+markers", marker=dict(symbol=MARKERS[s.marker], size=6)))
        fig.add_trace(go.Scatter(x=s.x, y=s.y, name=_html(s.name), **style,
                                 hovertemplate=f"{_html(data.x_title)}: %{{x:.4g}}<br>%{{y:.4f}}"),
                      row=1, col=col)
    for col, panel in ((1, "loss"), (2, "accuracy")):
        fig.update_xaxes(title=data.x_title, row=1, col=col)
        fig.update_yaxes(title=data.y_titles[panel], row=1, col=col)
    fig.update_yaxes(range=[0, 1], row=1, col=2)
    fig.update_layout(legend=dict(orientation="h", y=-0.2))
    return _finish(fig, "training_curves", data.title, 440)


# ----------------------------------------------------------------------------------------------
# Downloads
# ----------------------------------------------------------------------------------------------


def figure_csv(figure) -> str:
    """The numbers a figure draws as CSV text (a header, then one line per drawn value), from a
    figure made here or from a lab.figure_data object. In a Gradio handler, write it to a file
    for a gr.DownloadButton / gr.File next to the gr.Plot."""
    data = getattr(figure, "_lab_data", None) if isinstance(figure, go.Figure) else figure
    if not hasattr(data, "csv"):
        raise ValueError("no figure data: pass a figure made by lab.figures (not a copy) "
                         "or an object of lab.figure_data")
    return data.csv()


def download_as(fig: LabFigure, image_format: str = "svg") -> LabFigure:
    """Make the modebar's camera button download `image_format` ("png", "svg", "jpeg", "webp")."""
    if image_format not in ("png", "svg", "jpeg", "webp"):
        raise ValueError(f"image_format must be png, svg, jpeg or webp, got {image_format!r}")
    fig._lab_config = {**fig._lab_config,
                       "toImageButtonOptions": {**fig._lab_config.get("toImageButtonOptions", {}),
                                                "format": image_format}}
    return fig
