"""How lab.figures.plotly_figures assembles a plotly figure: themes, escaping, axes, a subplot
grid, and LabFigure, what every builder returns.

A figure is plotly's documented JSON ({"data": [...], "layout": {...}} plus the plotly.js
"config") built as plain dicts and numpy arrays (Canvas), not through plotly's validating
objects, which cost more CPU than the rest of a dashboard request (docs/performance.md, "The
figures"). figure_json() writes it with orjson; LabFigure holds it with the lab.figures.tables
object it draws (lab_data, for the CSV download) and makes plotly's own Figure when asked
(figure()). The dashboard hands it to Gradio as gr.Plot's PlotData (dashboard.common.FigurePlot).
"""

from __future__ import annotations

import base64
import functools
import html
import math
from dataclasses import dataclass
from urllib.parse import quote, unquote

import numpy as np
import orjson
import plotly.graph_objects as go
import plotly.io as pio

from lab.figures.tables import Panel

MAX_TICKS = 64  # token labels along one axis; longer sequences label every n-th token
TOP_MARGIN = 100  # px above the plot: the title sits below gr.Plot's label badge
TITLE_CHARS = 48  # a title's line, at most: wider ones wrap between words (a projector's narrow page)
TITLE_LINES = 4  # lines of a title; a longer one ends with "…"


@dataclass(frozen=True)
class Theme:
    template: str  # plotly template
    bar: str  # bars
    highlight: str  # the best answer span, the focused token's row and column


THEMES = {
    "light": Theme("plotly_white", bar="#4c72b0", highlight="#d62728"),
    "dark": Theme("plotly_dark", bar="#7aa6e0", highlight="#ff6b6b"),
}


def figure_json(figure: dict, config: dict) -> str:
    """plotly's documented JSON of a figure ({"data": [...], "layout": {...}}) with its plotly.js
    "config", written by orjson, numpy arrays as plotly.js typed arrays: what gr.Plot sends the
    browser, made without plotly's validating objects."""
    return orjson.dumps({**figure, "config": config}, default=typed_array).decode()


class LabFigure:
    """A figure made here, not a plotly Figure: its plotly JSON as plain dicts and numpy arrays
    (`lab_json`: {"data": [...], "layout": {...}}), its plotly.js config (`lab_config`: the
    download button's format) and the lab.figures.tables object it draws (`lab_data`: its CSV,
    its summary). to_json() is figure_json; figure() makes plotly's own, validated Figure for
    plotly's API (show, update_layout, write_image); a notebook displays it as plotly does."""

    def __init__(self, figure: dict, data=None, config: dict | None = None):
        self.lab_json, self.lab_data, self.lab_config = figure, data, config or {}

    def to_json(self) -> str:
        return figure_json(self.lab_json, self.lab_config)

    def figure(self) -> go.Figure:
        """plotly's Figure of the same JSON (each call a new one: change it freely)."""
        return go.Figure(self.lab_json)

    def show(self, *args, **kwargs):
        kwargs.setdefault("config", self.lab_config)
        return self.figure().show(*args, **kwargs)

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        """Jupyter's display protocol: shown as plotly shows its figures."""
        return self.figure()._repr_mimebundle_(include, exclude, **kwargs)


# ----------------------------------------------------------------------------------------------
# JSON, escaping, themes
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


def typed_array(value):
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


def escaped(text) -> str:
    """Text shown literally by plotly: '<', '>' and '&' escaped; a leading '$' (which would start
    LaTeX in a string that also ends with '$') written as its character reference."""
    text = html.escape(str(text), quote=False)
    return "&#36;" + text[1:] if text.startswith("$") else text


def _title(text: str) -> str:
    """A title escaped, its line breaks as plotly's <br>, lines longer than TITLE_CHARS wrapped
    between words (plotly draws a title on one line, cut at both ends where the page is narrow),
    at most TITLE_LINES of them, the last ending with "…" where more was left out."""
    lines = [wrapped for line in text.split("\n") for wrapped in wrap_words(line, TITLE_CHARS)]
    if len(lines) > TITLE_LINES:
        lines = [*lines[: TITLE_LINES - 1], lines[TITLE_LINES - 1] + " …"]
    return "<br>".join(escaped(line) for line in lines)


def wrap_words(line: str, width: int) -> list[str]:
    """`line` as lines of at most `width` characters, broken between words (a longer word keeps
    its own line)."""
    out: list[str] = []
    for word in line.split(" "):
        if out and len(out[-1]) + 1 + len(word) <= width:
            out[-1] += " " + word
        else:
            out.append(word)
    return out or [""]


def pick_theme(theme: str) -> Theme:
    """THEMES[theme], or a ValueError naming the themes there are."""
    if theme not in THEMES:
        raise ValueError(f"theme must be one of {', '.join(THEMES)}, got {theme!r}")
    return THEMES[theme]


# ----------------------------------------------------------------------------------------------
# Layout: the subplot grid, axes, heatmaps
# ----------------------------------------------------------------------------------------------


class Canvas:
    """A figure assembled as plain dicts (traces, axes, shapes, annotations) in plotly's JSON
    format and made a LabFigure at the end (`finish`), in place of plotly's make_subplots,
    add_trace(row=, col=) and update_xaxes (docs/performance.md). The subplot grid follows
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
        self.refs = {cell: axis_ref(k) for k, cell in enumerate(cells)}
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
        follows the page), the figure's name in layout.meta and as the download's file name, and the
        sentence saying what it shows in layout.meta (summary_meta): the page's text for it."""
        text = _title(title or "") + (f"<br><sup>{escaped(subtitle)}</sup>" if subtitle else "")
        extra = 22 * text.count("<br>")  # px for each line of a longer title
        self.config["toImageButtonOptions"]["filename"] = name
        self.layout.update(
            title=dict(text=text, x=0.5, xanchor="center", y=1, yanchor="top", yref="container", pad=dict(t=40)),
            height=round(height + extra),
            margin=dict(t=TOP_MARGIN + extra, l=60, r=30, b=50),
            meta={"figure": name, "summary": summary_meta(self.data)},
            **layout,
        )
        # as plotly writes a figure: no empty lists of shapes or annotations
        self.layout.update({k: v for k, v in (("shapes", self.shapes), ("annotations", self.annotations)) if v})
        return LabFigure({"data": self.traces, "layout": self.layout}, self.data, self.config)


def summary_meta(data) -> str:
    """The sentence saying what a figure shows (its table's summary()), percent-encoded for the
    figure's JSON: token text in it never reads as markup there; the page decodes it for the
    figure's accessible name (dashboard.access), figure_summary() for Python."""
    return quote(data.summary(), safe=" ,;:()") if hasattr(data, "summary") else ""


def figure_summary(fig) -> str:
    """The sentence saying what a figure made here shows ("" for anything else)."""
    meta = (getattr(fig, "lab_json", None) or {}).get("layout", {}).get("meta") or {}
    return unquote(str(meta.get("summary") or ""))


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


def token_axis(labels, tokens, keep=(), color: str | None = None) -> dict:
    """A category axis of one position per token: categories are the (escaped, distinct) labels,
    ticks show the tokens, every n-th one past MAX_TICKS plus `keep` (drawn bold in `color`)."""
    step = max(1, math.ceil(len(tokens) / MAX_TICKS))
    shown = sorted(set(range(0, len(tokens), step)) | set(keep))
    text = [escaped(tokens[i]) for i in shown]
    if color:
        text = [f"<b><span style='color:{color}'>{t}</span></b>" if i in keep else t for i, t in zip(shown, text)]
    return dict(
        type="category",
        tickmode="array",
        tickvals=[escaped(labels[i]) for i in shown],
        ticktext=text,
        tickfont=dict(size=11 if len(tokens) <= 32 else 9),
        automargin=True,
    )


def integer_axis(title: str, n: int) -> dict:
    """Layers or heads 0..n-1: every one labelled up to 32, then plotly's choice."""
    return dict(title=title, dtick=1 if n <= 32 else None, automargin=True)


def heatmap_trace(panel: Panel, hovertemplate: str, **kwargs) -> dict:
    """The panel's values on its colour scale, each cell's number written in where it says so.
    Sent as float32, the precision the model computed them in: half the bytes of float64."""
    return dict(
        type="heatmap",
        z=panel.values.astype(np.float32),
        zmin=panel.zmin,
        zmax=panel.zmax,
        colorscale=colorscale(panel.colors),
        hovertemplate=hovertemplate,
        **_cell_text(panel.values, panel.cell_format),
        **kwargs,
    )


def _cell_text(values: np.ndarray, cell_format: str | None) -> dict:
    """Each cell's number as text, formatted by Python as lab.figures.matplotlib_figures writes it
    (0.23746 with "+.3f" -> "+0.237"), drawn by texttemplate "%{text}" (a hovertemplate may show
    it too): the plotly.js 3 that Gradio 6 serves cannot read a d3 format with a sign ("+.3f"),
    and this way the browser's cells are the very strings the notebooks' figures draw."""
    if not cell_format:
        return {}
    return dict(
        text=[[format(v, cell_format) for v in row] for row in np.atleast_2d(values).tolist()], texttemplate="%{text}"
    )


@functools.cache
def colorscale(name: str) -> tuple:
    """A named colour scale as plotly.py's stops (plotly.js knows only some names, and some
    differently): what plotly's validation makes of the name, which the plain JSON must hold."""
    return go.Heatmap(colorscale=name).colorscale


def axis_ref(k: int) -> tuple[str, str]:
    """The axes of the k-th subplot (0-based, row by row): ("x", "y"), ("x2", "y2"), ..."""
    return (f"x{k + 1}", f"y{k + 1}") if k else ("x", "y")
