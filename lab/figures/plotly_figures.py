"""Browser-drawn (plotly) figures for the dashboard: the lab's figures, interactive.

    from lab.inspect import explore
    from lab.figures import plotly_figures
    att = explore.attention(model, tokenizer, "the cat sat on the mat .", "it purred .")
    fig = plotly_figures.attention_heatmap(att, layer=0, head=3, theme="dark")   # a plotly Figure
    plotly_figures.attention_focus(att, 0, 3, token_index=2)     # the same head from token 2's side
    plotly_figures.figure_csv(fig)                                # what it draws, as CSV text
    plotly_figures.figure_name(fig)                               # "attention_heatmap": file names

In the dashboard a handler returns the figure as the value of a gr.Plot: Gradio sends the data
(not pixels) and draws it with the plotly.js it serves itself, so it works offline. Hovering a
cell shows the query token, the key token and the weight; the one-head map has a "highlight"
menu that outlines a token's row (where it attends) and column (what attends to it) in the
browser, and attention_focus draws that token's row and column as bars too (the dashboard calls
it when a token is picked). The modebar's camera button downloads the figure (PNG, or SVG after
download_as(fig, "svg")), and figure_csv gives its numbers for a CSV download.

The figures, named as in lab.figures.matplotlib_figures (the matplotlib versions, for notebooks and static exports):

    training_curves(run_or_records, x="time")   losses and held-out accuracies of a run
    attention_heatmap(attention, layer, head)   one head: queries (rows) x keys (columns)
    attention_focus(attention, layer, head, i)  one head with token i's row and column as bars
    attention_grid(attention, layer=None)       every head of one layer (or all), token labels
    head_stats_heatmaps(stats)                  one [layers, heads] map per head statistic
    ablation_heatmap(ablation)                  the effect of silencing each head
    span_probabilities(answer)                  QA start / end probabilities, the best span red
    fill_mask_bars(predictions)                 the best guesses at each [MASK]
    embedding_components(embeddings)           the paper's Figure 2
    logit_lens(lens)                            the guess at every layer at each [MASK]
    attributions(attribution)                   what the answer rests on: a signed bar per token
    attention_vs_attribution(cmp, attribution)  the same beside the attention [CLS] pays
    figure_csv(fig_or_data), figure_name(fig), download_as(fig, image_format)

Every builder takes theme="light" (template plotly_white) or "dark" (plotly_dark). What each
figure shows comes from lab.figures.numbers, as lab.figures.matplotlib_figures' figures do, so the two never disagree.
Text from users and models is escaped before plotly sees it: plotly renders tags such as <b>
in titles, tick labels and hover text, so a token "<img src=x>" is shown as those characters.

How a figure is made, and why (only public API of plotly and Gradio):
- A figure is plotly's documented JSON format, {"data": [traces], "layout": {...}} plus the
  plotly.js "config", assembled here as plain dicts and numpy arrays (_Canvas).
- gr.Plot documents what it takes: "a plotly.Figure" (gradio/components/plot.py: it calls the
  figure's to_json() and sends that string). So the builders return a LabFigure, a subclass of
  plotly.graph_objects.Figure, and LabFigure.to_json() writes the plain data with orjson,
  numpy arrays as plotly.js typed arrays ({"dtype", "bdata", "shape"}): 0.1 ms.
- plotly's own constructor validates every property: 8 ms for one attention map (5 ms of it
  for the template), 14 ms for the two maps of an attention request whose whole budget is
  30 ms of server CPU. So a LabFigure runs that constructor (go.Figure.__init__, public) only
  when it is first used as a plotly object: reading or changing fig.data or fig.layout,
  fig.show(), fig.to_dict(), copies, ... From then on it is an ordinary, validated plotly
  Figure and to_json() is plotly's own (plus the config). The dashboard never needs it:
  figure_name and figure_csv read what the LabFigure carries. tests/test_figures.py checks that
  both ways give the same JSON for every builder; benchmarks/figure_speed.py times both.
- Cell numbers are formatted here, in Python (texttemplate "%{text}"): the plotly.js that
  Gradio 6 serves (3.x) cannot read a d3 format with a sign, "+.3f", and drew the raw float32
  instead ("0.23746109008789062"; it prefixes "~" to the format, which d3 then rejects).
"""

from __future__ import annotations

import base64
import functools
import html
import json
import math
import threading
from dataclasses import dataclass

import numpy as np
import orjson
import plotly.graph_objects as go
import plotly.io as pio

from lab.figures import numbers

MAX_TICKS = 64  # token labels along one axis; longer sequences label every n-th token
TOP_MARGIN = 100  # px above the plot: the title sits below gr.Plot's label badge


@dataclass(frozen=True)
class Theme:
    template: str  # plotly template
    bar: str  # bars
    highlight: str  # the best answer span, the focused token's row and column


THEMES = {
    "light": Theme("plotly_white", bar="#4c72b0", highlight="#d62728"),
    "dark": Theme("plotly_dark", bar="#7aa6e0", highlight="#ff6b6b"),
}
BOUNDARY = "white"  # where sentence B starts, over attention maps (dark at both ends of viridis)

_BUILDING = threading.RLock()  # one figure's plotly objects are built by one thread at a time


class LabFigure(go.Figure):
    """A plotly Figure made from its plain JSON (`lab_json`: {"data": [...], "layout": {...}}),
    carrying the figure_data object it draws (`lab_data`: figure_csv reads it) and its plotly.js
    config (`lab_config`: the download button's format), which gr.Plot takes from to_json().
    plotly's constructor runs at the figure's first use as a plotly object (see the module
    docstring); copies (copy.deepcopy, pickle, go.Figure(fig)) keep the drawing, not the rest."""

    lab_json: dict = {}
    lab_data = None
    lab_config: dict = {}
    lab_state = "built"  # "plain": plotly's objects not made yet; "building"; "built"

    def __init__(self, figure: dict, data=None, config: dict | None = None):
        # vars(): straight into the instance, past plotly's __setattr__ (which needs its objects)
        vars(self).update(lab_json=figure, lab_data=data, lab_config=config or {}, lab_state="plain")

    def __getattr__(self, name: str):
        """Python calls this only for an attribute the object lacks: before plotly's constructor
        has run, that is every one of plotly's own (fig.data reads one). Run the constructor
        (once, validating the plain JSON) and look again."""
        state = vars(self)
        if state.get("lab_state", "built") == "built":
            raise AttributeError(name)
        with _BUILDING:  # a second thread waits here until the figure is built
            if state["lab_state"] == "building":
                raise AttributeError(name)  # plotly's constructor itself, probing (this thread)
            if state["lab_state"] == "plain":
                state["lab_state"] = "building"
                try:
                    go.Figure.__init__(self, state["lab_json"])
                except BaseException:
                    state["lab_state"] = "plain"
                    raise
                state["lab_state"] = "built"
        return object.__getattribute__(self, name)

    def to_json(self, *args, **kwargs) -> str:
        """plotly's JSON with a "config" entry: {"data": [...], "layout": {...}, "config": {...}}.
        Without arguments (as gr.Plot calls it) and before plotly's objects exist, the plain JSON
        written by orjson, arrays as plotly.js typed arrays: 0.1 ms. Otherwise plotly's own
        to_json (1-2 ms), which holds any change made to the figure since."""
        if args or kwargs or self.lab_state != "plain":
            text = super().to_json(*args, **kwargs).rstrip()  # '{"data": ..., "layout": ...}'
            return f'{text[:-1]}, "config": {json.dumps(self.lab_config)}}}'
        return orjson.dumps({**self.lab_json, "config": self.lab_config}, default=_typed_array).decode()

    def show(self, *args, **kwargs):
        kwargs.setdefault("config", self.lab_config)
        return super().show(*args, **kwargs)


# ----------------------------------------------------------------------------------------------
# Helpers: JSON, escaping, layout, axes, heatmaps
# ----------------------------------------------------------------------------------------------

# numpy dtype -> plotly.js typed array type (plotly.js has no 64-bit integers)
TYPED_ARRAYS = {
    "int8": "i1",
    "uint8": "u1",
    "int16": "i2",
    "uint16": "u2",
    "int32": "i4",
    "uint32": "u4",
    "float32": "f4",
    "float64": "f8",
}


def _typed_array(value):
    """orjson's fallback: a numpy array as a plotly.js typed array, as plotly writes one
    (np.float32([[.5, 1], [0, 0]]) -> {"dtype": "f4", "bdata": "AAAAPwAAgD8AAAAAAAAAAA==",
    "shape": "2, 2"}: the raw bytes in base64, about 5.3 characters a number); 64-bit integers
    as the smallest type that holds them; other arrays (strings, ...) as lists; numpy scalars as
    numbers."""
    if isinstance(value, np.ndarray):
        if value.dtype.name in ("int64", "uint64") and value.size:
            kinds = (np.int8, np.int16, np.int32) if value.dtype.kind == "i" else (np.uint8, np.uint16, np.uint32)
            fits = [k for k in kinds if np.iinfo(k).min <= value.min() and value.max() <= np.iinfo(k).max]
            value = value.astype(fits[0]) if fits else value
        if not value.size or value.dtype.name not in TYPED_ARRAYS:
            return value.tolist()
        spec = {
            "dtype": TYPED_ARRAYS[value.dtype.name],
            "bdata": base64.b64encode(np.ascontiguousarray(value)).decode("ascii"),
        }
        if value.ndim > 1:
            spec["shape"] = ", ".join(map(str, value.shape))
        return spec
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


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


class _Canvas:
    """A figure assembled as plain dicts (traces, axes, shapes, annotations) in plotly's JSON
    format and made a LabFigure at the end (`finish`). plotly's make_subplots, add_trace(row=,
    col=) and update_xaxes cost 8-17 ms of CPU for each attention figure, the requests a class
    sends most; this way the same figure takes about 0.1 ms. The subplot grid follows
    make_subplots: rows from the top, `hspace` / `vspace` between cells (fractions of the plotting
    area), shared x axes show their tick labels on the bottom row only and shared y axes on the
    left column only, titles above each cell. Axis properties may give title as a string (made
    {"text": ...})."""

    def __init__(
        self,
        data,
        theme: Theme,
        rows: int = 1,
        cols: int = 1,
        *,
        titles=(),
        shared_x: bool = False,
        shared_y: bool = False,
        hspace: float | None = None,
        vspace: float | None = None,
        widths=None,
        heights=None,
        empty=(),
    ):
        self.data, self.traces, self.shapes, self.annotations = data, [], [], []
        self.layout: dict = {"template": _template(theme.template)}
        self.config = {"displaylogo": False, "toImageButtonOptions": {"format": "png"}}
        hspace = 0.2 / cols if hspace is None else hspace
        vspace = 0.3 / rows if vspace is None else vspace
        xs = _domains(widths or [1] * cols, hspace)  # left to right
        ys = _domains((heights or [1] * rows)[::-1], vspace)[::-1]  # row 1 at the top
        empty = set(empty)
        cells = [(r, c) for r in range(1, rows + 1) for c in range(1, cols + 1) if (r, c) not in empty]
        self.refs = {cell: _axis_ref(k) for k, cell in enumerate(cells)}
        bottom = {c: max(r for r, cc in cells if cc == c) for _, c in cells}
        left = {r: min(c for rr, c in cells if rr == r) for r, _ in cells}
        for (r, c), (x, y) in self.refs.items():
            xaxis = {"domain": xs[c - 1], "anchor": y}
            yaxis = {"domain": ys[r - 1], "anchor": x}
            if shared_x and r != bottom[c]:
                xaxis.update(matches=self.refs[bottom[c], c][0], showticklabels=False)
            if shared_y and c != left[r]:
                yaxis.update(matches=self.refs[r, left[r]][1], showticklabels=False)
            self.layout[_layout_key(x)], self.layout[_layout_key(y)] = xaxis, yaxis
        for (r, c), text in zip(cells, titles):
            if text:
                self.annotations.append(
                    dict(
                        text=text,
                        x=sum(xs[c - 1]) / 2,
                        y=ys[r - 1][1],
                        xref="paper",
                        yref="paper",
                        xanchor="center",
                        yanchor="bottom",
                        showarrow=False,
                        font=dict(size=16),
                    )
                )

    def cells(self, row: int | None = None, col: int | None = None) -> list[tuple[str, str]]:
        """The (x, y) axis names of the cells in `row` and `col` (None: every one)."""
        return [ref for (r, c), ref in self.refs.items() if row in (None, r) and col in (None, c)]

    def add(self, trace: dict, row: int = 1, col: int = 1) -> None:
        x, y = self.refs[row, col]
        self.traces.append({**trace, "xaxis": x, "yaxis": y})

    def x(self, props: dict | None = None, row: int | None = None, col: int | None = None, **more) -> None:
        for x, _ in self.cells(row, col):
            _update_axis(self.layout[_layout_key(x)], {**(props or {}), **more})

    def y(self, props: dict | None = None, row: int | None = None, col: int | None = None, **more) -> None:
        for _, y in self.cells(row, col):
            _update_axis(self.layout[_layout_key(y)], {**(props or {}), **more})

    def finish(self, name: str, title: str | None, height: float, subtitle: str = "", **layout) -> LabFigure:
        """The LabFigure: title (centred, below gr.Plot's label badge), height in px (the width
        follows the page), the figure's name in layout.meta and as the download's file name."""
        text = _title(title or "") + (f"<br><sup>{_html(subtitle)}</sup>" if subtitle else "")
        extra = 22 * text.count("<br>")  # px for each line of a longer title
        self.config["toImageButtonOptions"]["filename"] = name
        self.layout.update(
            title=dict(text=text, x=0.5, xanchor="center", y=1, yanchor="top", yref="container", pad=dict(t=40)),
            height=round(height + extra),
            margin=dict(t=TOP_MARGIN + extra, l=60, r=30, b=50),
            meta={"figure": name},
            **layout,
        )
        # as plotly writes a figure: no empty lists of shapes or annotations
        self.layout.update({k: v for k, v in (("shapes", self.shapes), ("annotations", self.annotations)) if v})
        return LabFigure({"data": self.traces, "layout": self.layout}, self.data, self.config)


@functools.cache
def _template(name: str) -> dict:
    """A plotly template as plain JSON, the whole of it: plotly.js knows no template names.
    Made once; figures share it (nothing changes it: plotly's constructor copies what it gets)."""
    return pio.templates[name].to_plotly_json()


def _domains(sizes, space: float) -> list[tuple[float, float]]:
    """[start, end] of each cell along one axis of the plotting area (0..1), `space` between."""
    room = 1 - space * (len(sizes) - 1)
    total, start, out = sum(sizes), 0.0, []
    for s in sizes:
        end = start + room * s / total
        out.append((start, min(end, 1.0)))
        start = end + space
    return out


def _layout_key(axis: str) -> str:
    """ "x" -> "xaxis", "y3" -> "yaxis3"."""
    return f"{axis[0]}axis{axis[1:]}"


def _update_axis(axis: dict, props: dict) -> None:
    for key, value in props.items():
        if key == "title" and isinstance(value, str):
            value = {"text": value}
        if value is not None:
            axis[key] = value


def _token_axis(labels, tokens, keep=(), color: str | None = None) -> dict:
    """A category axis of one position per token: categories are the (escaped, distinct) labels,
    ticks show the tokens, every n-th one past MAX_TICKS plus `keep` (drawn bold in `color`)."""
    step = max(1, math.ceil(len(tokens) / MAX_TICKS))
    shown = sorted(set(range(0, len(tokens), step)) | set(keep))
    text = [_html(tokens[i]) for i in shown]
    if color:
        text = [f"<b><span style='color:{color}'>{t}</span></b>" if i in keep else t for i, t in zip(shown, text)]
    return dict(
        type="category",
        tickmode="array",
        tickvals=[_html(labels[i]) for i in shown],
        ticktext=text,
        tickfont=dict(size=11 if len(tokens) <= 32 else 9),
        automargin=True,
    )


def _integer_axis(title: str, n: int) -> dict:
    """Layers or heads 0..n-1: every one labelled up to 32, then plotly's choice."""
    return dict(title=title, dtick=1 if n <= 32 else None, automargin=True)


def _heatmap(panel: numbers.Panel, hovertemplate: str, **kwargs) -> dict:
    """The panel's values on its colour scale, each cell's number written in where it says so.
    Sent as float32, the precision the model computed them in: half the bytes of float64 (12
    heads of 128 x 128 tokens: 1.3 MB of JSON instead of 2.5)."""
    return dict(
        type="heatmap",
        z=panel.values.astype(np.float32),
        zmin=panel.zmin,
        zmax=panel.zmax,
        colorscale=_colorscale(panel.colors),
        hovertemplate=hovertemplate,
        **_cell_text(panel.values, panel.cell_format),
        **kwargs,
    )


def _cell_text(values: np.ndarray, cell_format: str | None) -> dict:
    """Each cell's number as text, formatted by Python as lab.figures.matplotlib_figures writes it (0.23746 with
    "+.3f" -> "+0.237"), drawn by texttemplate "%{text}" (a hovertemplate may show it too).
    Not texttemplate "%{z:+.3f}": plotly.js 3 (served by Gradio 6) turns a format that starts
    with a sign into "~+.3f", which d3-format rejects, and then draws the raw float32 as
    "0.23746109008789062". A format without a sign (".2f") works in every plotly.js, but one
    way for all keeps the browser's cells the very strings lab.figures.matplotlib_figures draws."""
    if not cell_format:
        return {}
    return dict(
        text=[[format(v, cell_format) for v in row] for row in np.atleast_2d(values).tolist()], texttemplate="%{text}"
    )


@functools.cache
def _colorscale(name: str) -> tuple:
    """A named colour scale as plotly.py's stops (plotly.js knows only some names, and some
    differently): what plotly's validation makes of the name, which the plain JSON must hold."""
    return go.Heatmap(colorscale=name).colorscale


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


def _attention_trace(m: numbers.AttentionMap, **kwargs) -> dict:
    """One head: x = key labels, y = query labels (escaped, distinct: the hover names them)."""
    labels = [_html(t) for t in m.labels]
    return _heatmap(
        m,
        f"query: %{{y}}<br>key: %{{x}}<br>weight: %{{z:.3f}}<extra>layer {m.layer}, head {m.head}</extra>",
        x=labels,
        y=labels,
        **kwargs,
    )


def _attention_axes(canvas: _Canvas, m: numbers.AttentionMap, **where) -> None:
    """Token axes on one map: keys along x, queries down y (query 0 at the top)."""
    axis = _token_axis(m.labels, m.tokens)
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
    th = _theme(theme)
    T = len(data.tokens)
    if focus is not None:
        focus = numbers.checked_index(focus, T, "token")
    canvas = _Canvas(data, th)
    canvas.add(_attention_trace(data, colorbar=dict(title=dict(text="weight"))))
    _attention_axes(canvas, data)
    canvas.x(title=data.x_title)
    canvas.y(title=data.y_title)
    base = _boundary(data.sentence_b_start, BOUNDARY)
    canvas.shapes += base + (_focus(focus, th) if focus is not None else [])
    # the menu swaps the shapes in the browser (plotly's relayout): no request, no JavaScript of ours
    buttons = [dict(label="highlight: none", method="relayout", args=[{"shapes": base}])]
    buttons += [
        dict(label=_html(f"highlight {i}: {t}"), method="relayout", args=[{"shapes": base + _focus(i, th)}])
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
    th = _theme(theme)
    m, i = data.map, data.index
    labels = [_html(t) for t in m.labels]
    token = _html(m.labels[i])
    canvas = _Canvas(
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
        titles=["", _html(data.attended_by_title), _html(data.attends_title)],
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
    axis = _token_axis(m.labels, m.tokens, keep=[i], color=th.highlight)
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
    th = _theme(theme)
    every_layer = data.layer is None
    # one layer: every map titled "head h"; every layer: the top row names the heads (titles are
    # given to the subplots in reading order), the left column the layers
    titles = [f"head {h}" for h in range(data.n_cols)] if every_layer else [m.title for m in data.maps]
    canvas = _Canvas(
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
    th = _theme(theme)
    cols = min(3, len(data.panels))
    rows = math.ceil(len(data.panels) / cols)
    canvas = _Canvas(
        data,
        th,
        rows,
        cols,
        titles=[_html(p.title) for p in data.panels],
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
            _heatmap(
                p,
                f"layer %{{y}}, head %{{x}}<br>{_html(p.title)}: %{{z:.3f}}<extra></extra>",
                showscale=scale not in scales,
                colorbar=bar,
            ),
            k // cols + 1,
            k % cols + 1,
        )
        scales.setdefault(scale, k)
    canvas.x(_integer_axis("head", data.heads))
    canvas.y(_integer_axis("layer", data.layers), autorange="reversed")
    return canvas.finish("head_stats_heatmaps", data.title, rows * max(230, 26 * data.layers + 130) + 120)


def ablation_heatmap(result, theme: str = "light") -> LabFigure:
    """Silencing one head at a time: [layers, heads] heatmap of the change in the metric, each
    cell annotated; diverging colours centred at 0, red = the model needed this head."""
    data = numbers.ablation_heatmap(result)
    th = _theme(theme)
    canvas = _Canvas(data, th)
    # the hover shows the cell's text: plotly.js 3 cannot format "%{z:+.3f}" (see _cell_text)
    canvas.add(
        _heatmap(
            data,
            f"layer %{{y}}, head %{{x}}<br>change in {_html(data.metric)}: %{{text}}<extra></extra>",
            colorbar=dict(title=dict(text=f"change in {_html(data.metric)}")),
        )
    )
    L, A = data.values.shape
    canvas.x(_integer_axis("head", A))
    canvas.y(_integer_axis("layer", L), autorange="reversed")
    return canvas.finish("ablation_heatmap", data.title, min(800, max(320, 40 * L + 200)), data.sentence)


# ----------------------------------------------------------------------------------------------
# Question answering, fill-mask, embeddings, training
# ----------------------------------------------------------------------------------------------


def span_probabilities(result, theme: str = "light") -> LabFigure:
    """Start (top) and end (bottom) probabilities over the tokens of the window holding the best
    answer; the best span's bars red on a shaded band, its token labels red and bold."""
    data = numbers.span_probabilities(result)
    th = _theme(theme)
    names = numbers.axis_labels(data.tokens)
    labels = [_html(t) for t in names]
    colors = [th.highlight if i in data.span else th.bar for i in range(len(labels))]
    canvas = _Canvas(data, th, 2, 1, shared_x=True, vspace=0.1, titles=["start probability", "end probability"])
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
    canvas.x(_token_axis(names, data.tokens, keep=data.span, color=th.highlight), tickangle=-90)
    return canvas.finish("span_probabilities", data.title, 560, showlegend=False, bargap=0.2)


def fill_mask_bars(predictions, theme: str = "light") -> LabFigure:
    """explore.fill_mask's guesses: one panel per [MASK], its top-k tokens as bars (best on top,
    in the highlight colour) with their probabilities; word pieces shown as "…ing (piece)"."""
    data = numbers.fill_mask_bars(predictions)
    th = _theme(theme)
    height = sum(24 * len(m.tokens) + 90 for m in data.masks) + 140
    canvas = _Canvas(
        data,
        th,
        len(data.masks),
        1,
        vspace=80 / height,  # 80 px between panels
        titles=[_html(m.title) for m in data.masks],
        heights=[len(m.tokens) + 1 for m in data.masks],
    )
    for row, m in enumerate(data.masks, 1):
        labels = [_html(t) for t in m.labels]
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
                hovertemplate="%{y}: %{x:.3f}<extra>" + _html(m.title) + "</extra>",
            ),
            row,
            1,
        )
        canvas.y(type="category", autorange="reversed", automargin=True, row=row, col=1)
        canvas.x(
            range=[0, max(float(m.probabilities.max(initial=0.0)), 1e-9) * 1.25],
            title="probability" if row == len(data.masks) else None,
            row=row,
            col=1,
        )
    return canvas.finish("fill_mask_bars", data.title, height, showlegend=False)


def logit_lens(result, theme: str = "light") -> LabFigure:
    """explore.logit_lens: for each [MASK] (up to three), a heatmap of the top guesses at every
    layer (layers down, from the embeddings to the last layer; guesses across, best first; colour =
    probability, each cell's token written in it, the final answer's cells outlined) and beside it
    the final answer's probability at every layer as a line."""
    data = numbers.logit_lens(result)
    th = _theme(theme)
    n = len(data.masks)
    layers = len(data.masks[0].tokens)
    per_mask = 34 * layers + 110
    height = per_mask * n + 90
    canvas = _Canvas(
        data,
        th,
        n,
        2,
        widths=[3, 1],
        hspace=0.06,
        vspace=70 / height,
        titles=[t for m in data.masks for t in (_html(m.title), "its probability")],
    )
    for row, m in enumerate(data.masks, 1):
        labels = [[_html(t) for t in r] for r in m.labels]
        k = len(labels[0])
        canvas.add(
            dict(
                type="heatmap",
                z=m.probabilities.astype(np.float32),
                zmin=0,
                zmax=1,
                colorscale=_colorscale("Blues"),
                text=labels,
                texttemplate="%{text}",
                customdata=[[f"{p:.3f}" for p in r] for r in m.probabilities.tolist()],
                hovertemplate="layer %{y}, guess %{x}: %{text}<br>probability %{customdata}<extra></extra>",
                showscale=row == 1,
                colorbar=dict(title=dict(text="probability"), len=min(1.0, per_mask / height)),
                x=list(range(1, k + 1)),
                y=list(range(layers)),
            ),
            row,
            1,
        )
        x, y = canvas.refs[row, 1]
        for layer, tokens in enumerate(m.tokens):  # the final answer's cells outlined
            for r, t in enumerate(tokens):
                if t == m.final:
                    canvas.shapes.append(
                        dict(
                            type="rect",
                            x0=r + 0.5,
                            x1=r + 1.5,
                            y0=layer - 0.5,
                            y1=layer + 0.5,
                            xref=x,
                            yref=y,
                            line=dict(color=th.highlight, width=3),
                        )
                    )
        canvas.add(
            dict(
                type="scatter",
                x=m.final_probability.astype(np.float32),
                y=list(range(layers)),
                mode="lines+markers",
                line=dict(color=th.highlight),
                customdata=m.final_rank,
                hovertemplate=f"layer %{{y}}: {_html(numbers.piece_label(m.final))} "
                "probability %{x:.3f}, rank %{customdata}<extra></extra>",
            ),
            row,
            2,
        )
        canvas.x(title="guess (best first)" if row == n else None, dtick=1, row=row, col=1)
        canvas.x(range=[0, 1.05], title="probability" if row == n else None, row=row, col=2)
        names = ["embeddings"] + [f"layer {i}" for i in range(1, layers)]
        canvas.y(tickmode="array", tickvals=list(range(layers)), ticktext=names, autorange="reversed", row=row, col=1)
        canvas.y(tickmode="array", tickvals=list(range(layers)), ticktext=names, autorange="reversed", row=row, col=2)
        canvas.y(showticklabels=False, row=row, col=2)
    shown = "" if data.num_masks == n else f"the first {n} of {data.num_masks} [MASK]s (the CSV has them all)"
    return canvas.finish("logit_lens", data.title, height, shown, showlegend=False)


def _signed_bars(scores: np.ndarray, labels: list[str], hover: str) -> dict:
    """One bar per token, red toward the answer and purple against it (figure_data's colours)."""
    return dict(
        type="bar",
        x=labels,
        y=scores.astype(np.float32),
        marker=dict(color=[numbers.TOWARD if v >= 0 else numbers.AGAINST for v in scores.tolist()]),
        customdata=[f"{v:+.3f}" for v in scores.tolist()],
        hovertemplate=hover,
    )


def attributions(result, theme: str = "light") -> LabFigure:
    """explore.attributions: one bar per token, its score (red: toward the answer, purple:
    against it), the tokens the answer is about (the span, the [MASK]) labelled bold in the
    highlight colour; the subtitle says f(input) - f(baseline) and what the scores add up to."""
    data = numbers.attributions(result)
    th = _theme(theme)
    names = numbers.axis_labels(data.tokens)
    labels = [_html(t) for t in names]
    canvas = _Canvas(data, th)
    canvas.add(_signed_bars(data.scores, labels, "%{x}: %{customdata}<extra></extra>"))
    canvas.x(_token_axis(names, data.tokens, keep=data.highlight, color=th.highlight), tickangle=-90)
    canvas.y(title="score (its share of f)", zeroline=True)
    return canvas.finish("attributions", data.title, 420, data.subtitle, showlegend=False, bargap=0.15)


def attention_vs_attribution(comparison, attribution, theme: str = "light") -> LabFigure:
    """lab.inspect.attribution.attention_vs_attribution: the attribution (top, signed bars) and the
    attention [CLS] pays in the last layer, mean of its heads (bottom), over the same tokens;
    Pearson and Spearman correlations (|attribution| vs attention, over the text's tokens) in the
    title; the special tokens, left out of the correlations, are labelled grey."""
    data = numbers.attention_vs_attribution(comparison, attribution)
    th = _theme(theme)
    names = numbers.axis_labels(data.tokens)
    labels = [_html(t) for t in names]
    canvas = _Canvas(
        data,
        th,
        2,
        1,
        shared_x=True,
        vspace=0.14,
        titles=[_html(data.attribution_title), _html(data.attention_title)],
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
    canvas.x(_token_axis(names, data.tokens), tickangle=-90)
    return canvas.finish("attention_vs_attribution", data.title, 620, data.subtitle, showlegend=False, bargap=0.15)


def probe_layers(results, theme: str = "light", title: str | None = None) -> LabFigure:
    """Accuracy by layer (plotly, for the dashboard): one line per model or snapshot with its
    Wilson 95% interval as error bars, the random-weights control dotted, the majority baseline
    dashed with its interval as a band (lab.inspect.probing.probe_layers's results, or their ProbeCurves)."""
    data = results if isinstance(results, numbers.ProbeCurves) else numbers.probe_curves(results, title)
    th = _theme(theme)
    grey = "#9ca3af" if theme == "dark" else "#6b7280"
    canvas = _Canvas(data, th)
    snapshots = [line for line in data.lines if line.kind == "snapshot"]
    for line in data.lines:
        dash, _, is_grey = numbers.PROBE_LINE_STYLES[line.kind]
        style: dict = dict(dash=dash, width=2)
        if is_grey:
            style["color"] = grey
        elif line.kind == "snapshot" and len(snapshots) > 1:  # early steps pale, late steps dark
            share = snapshots.index(line) / (len(snapshots) - 1)
            style["color"] = f"rgba(37, 99, 235, {0.25 + 0.75 * share:.2f})"
        elif line.kind == "model" and snapshots:  # apart from the blue snapshots
            style["color"] = "#f97316"
        hover = f"{_html(line.name)}<br>layer %{{x}}: %{{y:.3f}} [%{{customdata[0]:.3f}}, %{{customdata[1]:.3f}}]"
        custom = np.column_stack([line.low, line.high])
        if line.kind == "majority":
            canvas.add(
                dict(
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
            )
            canvas.add(
                dict(
                    type="scatter",
                    mode="lines",
                    x=line.layers,
                    y=line.accuracy,
                    name=_html(line.name),
                    line=style,
                    customdata=custom,
                    hovertemplate=hover + "<extra></extra>",
                )
            )
            continue
        canvas.add(
            dict(
                type="scatter",
                mode="lines+markers",
                x=line.layers,
                y=line.accuracy,
                name=_html(line.name),
                line=style,
                marker=dict(size=7),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=np.subtract(line.high, line.accuracy),
                    arrayminus=np.subtract(line.accuracy, line.low),
                    thickness=1.5,
                    width=4,
                ),
                customdata=custom,
                hovertemplate=hover + "<extra></extra>",
            )
        )
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
    th = _theme(theme)
    labels = numbers.axis_labels(data.tokens)
    canvas = _Canvas(data, th, 5, 1, shared_x=True, vspace=0.05, titles=[_html(p.title) for p in data.panels])
    for row, p in enumerate(data.panels, 1):
        last = row == len(data.panels)
        bar = dict(
            title=dict(text="value"),
            len=0.16 if last else 0.78,
            y=0 if last else 1,
            yanchor="bottom" if last else "top",
        )
        canvas.add(
            _heatmap(
                p,
                f"token: %{{x}}<br>dim %{{y}}<br>value: %{{z:.3f}}<extra>{p.key}</extra>",
                x=[_html(t) for t in labels],
                showscale=row in (1, 5),
                colorbar=bar,
            ),
            row,
            1,
        )
        canvas.y(title="dim", autorange="reversed", row=row, col=1)
    canvas.x(_token_axis(labels, data.tokens), tickangle=-90)
    # black: the dashed line falls on the scale's white middle whatever the theme
    canvas.shapes += [s for k in range(len(data.panels)) for s in _boundary(data.sentence_b_start, "black", False, k)]
    return canvas.finish("embedding_components", data.title, 900)


MARKERS = {"o": "circle", "s": "square"}  # figure_data markers -> plotly symbols


def training_curves(run_or_records, x: str = "time", title: str | None = None, theme: str = "light") -> LabFigure:
    """Loss (left) and held-out accuracy (right) against wall time (x="time", minutes) or steps
    (x="step"): thin lines for the training loss at every logged step, points for evaluations."""
    data = numbers.training_curves(run_or_records, x, title)
    th = _theme(theme)
    canvas = _Canvas(data, th, 1, 2, hspace=0.1)
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
                name=_html(s.name),
                **style,
                hovertemplate=f"{_html(data.x_title)}: %{{x:.4g}}<br>%{{y:.4f}}",
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
    data = getattr(figure, "lab_data", None) if isinstance(figure, go.Figure) else figure
    if not hasattr(data, "csv"):
        raise ValueError(
            "no figure data: pass a figure made by lab.figures.plotly_figures (not a copy) "
            "or an object of lab.figures.numbers"
        )
    return data.csv()


def figure_name(fig) -> str:
    """The figure's name, its builder's ("attention_heatmap"), for file names: the CSV download
    and the image download. Read from the figure's JSON without making plotly's objects (see
    the module docstring); for another plotly figure, its layout.meta["figure"], else "figure"."""
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
