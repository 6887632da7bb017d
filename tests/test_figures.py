"""lab.figures.plotly_figures (plotly, the dashboard) and lab.figures.numbers: every figure draws the numbers
figure_data computes, the same ones lab.figures.matplotlib_figures (matplotlib) draws; user text is escaped; the
CSV holds what is drawn; themes, focus and downloads work.

The hand-built results are tests/test_plots.py's and the tiny models its `tiny` fixture (in
tests/conftest.py), so both kinds of figure are checked on the same inputs.
"""

import base64
import csv
import html
import io
import json
import re
import subprocess
import sys

import numpy as np
import orjson
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from lab import explore, plots
from lab.figures import numbers, plotly_canvas, plotly_figures, tables
from tests.conftest import ROOT
from tests.test_plots import (
    ablation_result,
    answer_result,
    attention_result,
    bars,
    embedding_result,
    image_axes,
    stats_of,
)

EVIL = "<img src=x>"  # a token that would be HTML if not escaped
FILL = [[("cat", 0.5), ("##ing", 0.2), (EVIL, 0.1)], [("a", 0.9), ("b", 0.05)]]  # two [MASK]s


def hand_built(kind: str):
    """(builder name, args) for every plotly figure, on results holding the EVIL token."""
    att = attention_result(L=2, A=3, T=6, b=3)
    att.tokens[2] = EVIL
    ans = answer_result(T=12, span=(5, 7), text=EVIL)
    ans.tokens[5] = EVIL
    emb = embedding_result(T=7, H=40, b_start=4)
    emb.tokens[1] = EVIL
    abl = ablation_result(L=3, A=4)
    abl.tokens[1] = EVIL
    records = [{"split": "train", "step": 10 * s, "time": 60.0 * s, "mlm_loss": 5.0 - s} for s in range(1, 4)]
    records += [
        {
            "split": "eval",
            "step": 30,
            "time": 180.0,
            "mlm_loss": 2.5,
            "nsp_loss": 0.6,
            "mlm_acc": 0.3,
            "mlm_acc_masked": 0.25,
            "nsp_acc": 0.7,
        }
    ]
    return {
        "attention_heatmap": (att, 1, 2),
        "attention_focus": (att, 1, 2, 2),
        "attention_grid": (att, 1),
        "head_stats_heatmaps": ({**stats_of(3, 4), EVIL: np.ones((3, 4))},),
        "ablation_heatmap": (abl,),
        "span_probabilities": (ans,),
        "fill_mask_bars": (FILL,),
        "embedding_components": (emb,),
        "training_curves": (records, "time", EVIL),
    }[kind]


KINDS = [
    "attention_heatmap",
    "attention_focus",
    "attention_grid",
    "head_stats_heatmaps",
    "ablation_heatmap",
    "span_probabilities",
    "fill_mask_bars",
    "embedding_components",
    "training_curves",
]


def build(kind: str, **kwargs):
    return getattr(plotly_figures, kind)(*hand_built(kind), **kwargs)


def read_csv(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def z(trace) -> np.ndarray:
    return np.asarray(trace.z, dtype=float)


def decoded(values) -> np.ndarray:
    """A trace's array as plotly's JSON holds it: a list, or base64 {"dtype": ..., "bdata": ...}."""
    if isinstance(values, dict):
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
    return np.asarray(values)


# ----------------------------------------------------------------------------------------------
# The modules
# ----------------------------------------------------------------------------------------------


def test_figure_data_and_plots_do_not_import_plotly_and_figure_data_draws_nothing():
    code = (
        "import sys, lab.figures.numbers\n"
        "print(sorted({'plotly', 'matplotlib'} & {m.split('.')[0] for m in sys.modules}))\n"
        "import lab.figures.matplotlib_figures\n"
        "print(sorted({'plotly'} & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "[]"], out.stdout


def test_docstrings_list_every_figure_and_names_match_plots():
    for kind in KINDS:
        assert f"{kind}(" in plotly_figures.__doc__ and f"{kind}(" in numbers.__doc__, kind
    shared = {
        "training_curves",
        "attention_heatmap",
        "attention_grid",
        "head_stats_heatmaps",
        "ablation_heatmap",
        "span_probabilities",
        "embedding_components",
    }
    assert shared <= set(dir(plots)) and shared <= set(dir(plotly_figures))


@pytest.mark.parametrize("kind", KINDS)
def test_every_builder_returns_a_themed_plotly_figure_with_room_for_the_title(kind):
    for theme, template in (("light", "plotly_white"), ("dark", "plotly_dark")):
        fig = build(kind, theme=theme)
        assert isinstance(fig, plotly_canvas.LabFigure) and isinstance(fig.figure(), go.Figure)
        assert fig.figure().layout.template == pio.templates[template]
        assert fig.figure().layout.meta["figure"] == kind
        assert fig.figure().layout.margin.t >= plotly_canvas.TOP_MARGIN  # gr.Plot's label badge sits above
        assert fig.figure().layout.title.yref == "container" and fig.figure().layout.title.pad.t >= 30
        assert (
            fig.figure().layout.width is None and 300 <= fig.figure().layout.height <= 1200
        )  # the page sets the width
        out = json.loads(fig.to_json())  # what gr.Plot sends
        assert out["config"]["toImageButtonOptions"] == {"format": "png", "filename": kind}
    with pytest.raises(ValueError, match="theme must be one of light, dark"):
        build(kind, theme="blue")


# ----------------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------------


def test_attention_heatmap_draws_the_heads_probabilities_and_hover_names_query_key_weight():
    att = attention_result(L=2, A=3, T=6, b=3)
    att.tokens[3] = att.tokens[1]  # a repeated token: "w0" twice
    fig = plotly_figures.attention_heatmap(att, layer=1, head=2)
    [heat] = fig.figure().data
    np.testing.assert_allclose(z(heat), att.attentions[1][0, 2].numpy(), rtol=1e-6)
    assert (heat.zmin, heat.zmax) == (0.0, pytest.approx(float(att.attentions[1][0, 2].max())))
    labels = ["[CLS]", "w0 (1)", "w1", "w0 (3)", "w3", "[SEP]"]  # one category per position
    assert list(heat.x) == list(heat.y) == labels
    assert fig.figure().layout.xaxis.ticktext == tuple(att.tokens) and fig.figure().layout.xaxis.tickvals == tuple(
        labels
    )
    assert fig.figure().layout.yaxis.autorange == "reversed"  # query 0 at the top
    assert heat.hovertemplate.startswith("query: %{y}<br>key: %{x}<br>weight: %{z:.3f}")
    # short: the weights written in, formatted as lab.figures.matplotlib_figures writes them
    assert heat.texttemplate == "%{text}"
    assert [list(row) for row in heat.text] == [[format(w, ".2f") for w in row] for row in z(heat).astype(np.float32)]
    assert fig.figure().layout.title.text == "layer 1, head 2"
    assert "key" in fig.figure().layout.xaxis.title.text and "query" in fig.figure().layout.yaxis.title.text
    # sentence B starts at token 3: dashed lines between keys 2 | 3 and queries 2 | 3
    assert {(s.x0, s.y0) for s in fig.figure().layout.shapes} == {(2.5, 0), (0, 2.5)}
    assert plotly_figures.attention_heatmap(att, -1, -1).figure().layout.title.text == "layer 1, head 2"
    with pytest.raises(ValueError, match="head 3 does not exist"):
        plotly_figures.attention_heatmap(att, 0, 3)
    long = plotly_figures.attention_heatmap(attention_result(L=1, A=1, T=200), 0, 0)
    assert long.figure().data[0].texttemplate is None  # no numbers in 40,000 cells
    assert len(long.figure().data[0].x) == 200 and len(long.figure().layout.xaxis.tickvals) <= plotly_canvas.MAX_TICKS


def outlines(shapes) -> set:
    """(kind, from, to) of the focus rectangles: a row spans the x domain, a column the y domain."""
    return {
        ("row", s.y0, s.y1) if s.xref.endswith("domain") else ("column", s.x0, s.x1) for s in shapes if s.type == "rect"
    }


def test_attention_focus_outlines_the_tokens_row_and_column_and_draws_them_as_bars():
    att = attention_result(L=2, A=3, T=6)
    fig = plotly_figures.attention_focus(att, 1, 2, token_index=3)
    weights = att.attentions[1][0, 2].numpy()  # (T queries, T keys)
    heat, column, row = fig.figure().data
    np.testing.assert_allclose(z(heat), weights, rtol=1e-6)
    assert outlines(fig.figure().layout.shapes) == {("row", 2.5, 3.5), ("column", 2.5, 3.5)}
    np.testing.assert_allclose(row.y, weights[3, :], rtol=1e-6)  # where token 3 attends
    np.testing.assert_allclose(column.x, weights[:, 3], rtol=1e-6)  # what attends to token 3
    assert list(row.x) == list(heat.x) and list(column.y) == list(heat.y)  # bars line up with the map
    light = plotly_canvas.THEMES["light"]
    assert [c == light.highlight for c in row.marker.color] == [i == 3 for i in range(6)]
    assert "w2" in fig.figure().layout.title.text and "query: w2" in row.hovertemplate
    rows = read_csv(plotly_figures.figure_csv(fig))
    assert len(rows) == 36 and sum(r["in_focus_row"] == "True" for r in rows) == 6
    with pytest.raises(ValueError, match="token 6 does not exist"):
        plotly_figures.attention_focus(att, 1, 2, 6)


def test_attention_heatmap_menu_highlights_a_token_in_the_browser():
    att = attention_result(L=1, A=1, T=5)
    fig = plotly_figures.attention_heatmap(att, 0, 0, focus=2)
    assert outlines(fig.figure().layout.shapes) == {("row", 1.5, 2.5), ("column", 1.5, 2.5)}
    [menu] = fig.figure().layout.updatemenus
    assert len(menu.buttons) == 1 + 5 and menu.active == 3
    assert all(b.method == "relayout" for b in menu.buttons)
    assert outlines(go.Layout(shapes=menu.buttons[0].args[0]["shapes"]).shapes) == set()
    assert outlines(go.Layout(shapes=menu.buttons[4].args[0]["shapes"]).shapes) == {
        ("row", 2.5, 3.5),
        ("column", 2.5, 3.5),
    }
    assert outlines(plotly_figures.attention_heatmap(att, 0, 0).figure().layout.shapes) == set()


def test_attention_grid_has_token_labels_and_each_heads_probabilities():
    att = attention_result(L=2, A=5, T=6)
    fig = plotly_figures.attention_grid(att, layer=1)
    assert len(fig.figure().data) == 5
    assert [a.text for a in fig.figure().layout.annotations] == [f"head {h}" for h in range(5)]
    for h, trace in enumerate(fig.figure().data):
        np.testing.assert_allclose(z(trace), att.attentions[1][0, h].numpy(), rtol=1e-6)
        assert trace.texttemplate is None and trace.showscale is False
    assert fig.figure().layout.xaxis.ticktext == tuple(att.tokens)  # tokens on the axes
    assert fig.figure().layout.yaxis.ticktext == tuple(att.tokens)
    every = plotly_figures.attention_grid(att)
    assert len(every.figure().data) == 10
    for k, trace in enumerate(every.figure().data):
        np.testing.assert_allclose(z(trace), att.attentions[k // 5][0, k % 5].numpy(), rtol=1e-6)
    assert every.figure().layout.yaxis.title.text == "layer 0"
    assert len(read_csv(plotly_figures.figure_csv(every))) == 10 * 36


# ----------------------------------------------------------------------------------------------
# One module computes each figure's data: plotly and matplotlib draw the same numbers
# ----------------------------------------------------------------------------------------------


def test_matplotlib_and_plotly_draw_the_same_figure_data():
    att = attention_result(L=2, A=3, T=6, b=3)
    data = numbers.attention_heatmap(att, 1, 2)
    mpl = image_axes(plots.attention_heatmap(att, 1, 2))[0]
    for drawn in (mpl.images[0].get_array(), z(plotly_figures.attention_heatmap(att, 1, 2).figure().data[0])):
        np.testing.assert_allclose(drawn, data.values, rtol=1e-12)
    assert mpl.get_title() == plotly_figures.attention_heatmap(att, 1, 2).figure().layout.title.text == data.title

    stats = stats_of(L=3, A=4)
    data = numbers.head_stats_heatmaps(stats)
    maps, traces = image_axes(plots.head_stats_heatmaps(stats)), plotly_figures.head_stats_heatmaps(stats).figure().data
    for panel, ax, trace in zip(data.panels, maps, traces, strict=True):
        np.testing.assert_allclose(ax.images[0].get_array(), panel.values)
        np.testing.assert_allclose(z(trace), panel.values)
        assert ax.images[0].get_clim() == (trace.zmin, trace.zmax) == (panel.zmin, panel.zmax)

    abl = ablation_result(L=3, A=4, metric="probability")
    data = numbers.ablation_heatmap(abl)
    [ax], [trace] = image_axes(plots.ablation_heatmap(abl)), plotly_figures.ablation_heatmap(abl).figure().data
    np.testing.assert_allclose(z(trace), data.values)
    assert [t.get_text() for t in ax.texts] == [format(v, data.cell_format) for v in data.values.flat]
    assert [t for row in trace.text for t in row] == [t.get_text() for t in ax.texts]  # the same texts
    assert trace.texttemplate == "%{text}" and "%{text}" in trace.hovertemplate
    assert ax.images[0].get_cmap().name == data.colors  # red = the model needed the head
    assert trace.colorscale == go.Heatmap(colorscale=data.colors).colorscale

    ans = answer_result()
    data = numbers.span_probabilities(ans)
    mpl_start = [b.get_height() for b in bars(plots.span_probabilities(ans).axes[0])]
    start, end = plotly_figures.span_probabilities(ans).figure().data
    np.testing.assert_allclose(mpl_start, data.start)
    np.testing.assert_allclose(start.y, data.start)
    np.testing.assert_allclose(end.y, data.end)

    emb = embedding_result()
    data = numbers.embedding_components(emb, dims=8)
    maps, traces = (
        image_axes(plots.embedding_components(emb, dims=8)),
        plotly_figures.embedding_components(emb, dims=8).figure().data,
    )
    for panel, ax, trace in zip(data.panels, maps, traces, strict=True):
        np.testing.assert_allclose(ax.images[0].get_array(), panel.values)  # (dims, T)
        np.testing.assert_allclose(z(trace), panel.values)

    records = hand_built("training_curves")[0]
    data = numbers.training_curves(records, x="step")
    lines = [line for ax in plots.training_curves(records, x="step").axes for line in ax.get_lines()]
    traces = plotly_figures.training_curves(records, x="step").figure().data
    assert [line.get_label() for line in lines] == [t.name for t in traces] == [s.name for s in data.series]
    for s, line, trace in zip(data.series, lines, traces, strict=True):
        assert list(line.get_xdata()) == list(trace.x) == s.x and list(line.get_ydata()) == list(trace.y) == s.y


@pytest.mark.parametrize(
    "kind",
    ["attention_heatmap", "head_stats_heatmaps", "ablation_heatmap", "span_probabilities", "embedding_components"],
)
def test_both_modules_draw_whatever_figure_data_returns(kind, monkeypatch):
    """Change the numbers figure_data gives: both figures change with them (no second computation)."""
    original = getattr(numbers, kind)

    def doubled(*args, **kwargs):
        data = original(*args, **kwargs)
        for panel in getattr(data, "panels", [data]):
            if hasattr(panel, "values"):
                panel.values = panel.values * 2 + 1
        if kind == "span_probabilities":
            data.start = data.start * 2 + 1
        return data

    monkeypatch.setattr(numbers, kind, doubled)
    args = hand_built(kind)
    expected = doubled(*args)
    first = (
        expected.panels[0].values
        if hasattr(expected, "panels")
        else expected.start
        if kind == "span_probabilities"
        else expected.values
    )
    mpl = getattr(plots, kind)(*args)
    drawn = (
        [b.get_height() for b in bars(mpl.axes[0])]
        if kind == "span_probabilities"
        else image_axes(mpl)[0].images[0].get_array()
    )
    np.testing.assert_allclose(drawn, first)
    trace = getattr(plotly_figures, kind)(*args).figure().data[0]
    np.testing.assert_allclose(trace.y if kind == "span_probabilities" else z(trace), first)


# ----------------------------------------------------------------------------------------------
# Escaping, CSV, fill-mask, downloads
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_user_and_model_text_is_escaped_wherever_plotly_renders_it(kind):
    text = build(kind).to_json()
    assert "&lt;img src=x&gt;" in text  # the token is there, escaped
    assert "<img" not in text and "\\u003cimg" not in text  # and never as a tag


def test_escaping_keeps_tokens_literal():
    assert plotly_canvas.escaped("<b>&") == "&lt;b&gt;&amp;"
    assert plotly_canvas.escaped("$x$") == "&#36;x$"  # not LaTeX
    assert plotly_canvas.escaped("##ing") == "##ing"


@pytest.mark.parametrize(
    "kind, count",
    [
        ("attention_heatmap", 36),
        ("attention_grid", 3 * 36),
        ("head_stats_heatmaps", 7 * 12),
        ("ablation_heatmap", 12),
        ("span_probabilities", 12),
        ("fill_mask_bars", 5),
        ("embedding_components", 5 * 32 * 7),
        ("training_curves", 3 + 5),
    ],
)
def test_csv_has_a_header_and_one_row_per_drawn_value(kind, count):
    fig = build(kind)
    text = plotly_figures.figure_csv(fig)
    header = text.splitlines()[0].split(",")
    rows = read_csv(text)
    assert len(rows) == count and len(text.splitlines()) == count + 1
    assert text == plotly_figures.figure_csv(getattr(numbers, kind)(*hand_built(kind)))
    if kind == "attention_heatmap":
        assert header == ["layer", "head", "query_index", "query", "key_index", "key", "weight"]
        np.testing.assert_allclose([float(r["weight"]) for r in rows], z(fig.figure().data[0]).flatten())
        assert rows[2 * 6 + 2]["query"] == rows[2]["key"] == EVIL  # CSV keeps the raw token
    if kind == "ablation_heatmap":
        np.testing.assert_allclose([float(r["change in loss"]) for r in rows], z(fig.figure().data[0]).flatten())
    if kind == "span_probabilities":
        assert [r["in_best_span"] == "True" for r in rows] == [i in (5, 6, 7) for i in range(12)]


def test_figure_csv_needs_a_figure_made_here():
    fig = build("ablation_heatmap")
    with pytest.raises(ValueError, match="no figure data"):
        plotly_figures.figure_csv(fig.figure())  # plotly's Figure of it keeps no data
    with pytest.raises(ValueError, match="no figure data"):
        plotly_figures.figure_csv("not a figure")


def test_fill_mask_bars_marks_word_pieces_and_shows_each_masks_probabilities():
    fig = plotly_figures.fill_mask_bars(FILL)
    first, second = fig.figure().data
    assert list(first.y) == ["cat", "…ing (piece)", "&lt;img src=x&gt;"]
    np.testing.assert_allclose(first.x, [0.5, 0.2, 0.1])
    np.testing.assert_allclose(second.x, [0.9, 0.05])
    assert list(first.text) == ["50.0%", "20.0%", "10.0%"]
    assert [a.text for a in fig.figure().layout.annotations] == ["[MASK] 1", "[MASK] 2"]
    rows = read_csv(plotly_figures.figure_csv(fig))
    assert [(r["mask"], r["rank"], r["token"], r["shown_as"]) for r in rows[:2]] == [
        ("1", "1", "cat", "cat"),
        ("1", "2", "##ing", "…ing (piece)"),
    ]
    with pytest.raises(ValueError, match="no \\[MASK\\] predictions"):
        plotly_figures.fill_mask_bars([])


def test_download_as_svg_and_gradio_passes_the_config_to_plotly_js():
    fig = plotly_figures.download_as(build("span_probabilities"), "svg")
    assert json.loads(fig.to_json())["config"]["toImageButtonOptions"] == {
        "format": "svg",
        "filename": "span_probabilities",
    }
    with pytest.raises(ValueError, match="image_format"):
        plotly_figures.download_as(fig, "gif")
    pytest.importorskip("gradio")
    import gradio as gr  # why here: Gradio is the dashboard's, for this test only

    from dashboard.common import drawn  # why here: the dashboard's hand-over, for this test only

    sent = json.loads(gr.Plot().postprocess(drawn(fig)).plot)  # what the browser receives
    assert sent["config"]["toImageButtonOptions"]["format"] == "svg"
    np.testing.assert_allclose(decoded(sent["data"][0]["y"]), fig.figure().data[0].y)


def test_axis_labels_and_piece_labels():
    assert tables.axis_labels(["[CLS]", "the", "cat", "the", "[SEP]"]) == [
        "[CLS]",
        "the (1)",
        "cat",
        "the (3)",
        "[SEP]",
    ]
    # a token that reads like another's suffixed name: every position gets its index
    assert tables.axis_labels(["a", "a", "a (1)"]) == ["a (0)", "a (1)", "a (1) (2)"]
    assert tables.piece_label("##ing") == "…ing (piece)" and tables.piece_label("##") == "##"


# ----------------------------------------------------------------------------------------------
# From lab.inspect.explore on a tiny model
# ----------------------------------------------------------------------------------------------


def test_figures_from_explore_results(tiny):
    mlm, qa, tok = tiny
    att = explore.attention(mlm, tok, "the cat sat on the mat .", "the dog ran .")
    fig = plotly_figures.attention_heatmap(att, 1, 3)
    np.testing.assert_allclose(z(fig.figure().data[0]), att.attentions[1][0, 3].numpy(), rtol=1e-6)
    assert len(set(fig.figure().data[0].x)) == len(att.tokens)  # "the" x3, "[SEP]" x2: distinct
    assert fig.figure().layout.xaxis.ticktext == tuple(att.tokens)
    focus = plotly_figures.attention_focus(att, 1, 3, att.sentence_b_start)
    np.testing.assert_allclose(
        focus.figure().data[2].y, att.attentions[1][0, 3, att.sentence_b_start].numpy(), rtol=1e-6
    )
    assert len(plotly_figures.attention_grid(att).figure().data) == 2 * 4
    stats = att.head_stats()
    np.testing.assert_allclose(z(plotly_figures.head_stats_heatmaps(stats).figure().data[2]), stats["sep"])

    abl = explore.ablate_heads(mlm, tok, "the cat [MASK] on the mat .")
    np.testing.assert_allclose(z(plotly_figures.ablation_heatmap(abl).figure().data[0]), abl.effect.numpy(), rtol=1e-6)

    filled = explore.fill_mask(mlm, tok, "the [MASK] sat on the [MASK] .", top_k=3)
    fig = plotly_figures.fill_mask_bars(filled)
    for trace, guesses in zip(fig.figure().data, filled, strict=True):
        np.testing.assert_allclose(trace.x, [p for _, p in guesses])
        assert list(trace.y) == [plotly_canvas.escaped(tables.piece_label(t)) for t, _ in guesses]
    assert [a.text for a in fig.figure().layout.annotations] == [
        f"[MASK] {k + 1} (token {p})" for k, p in enumerate(filled.mask_positions)
    ]

    ans = explore.answer(qa, tok, "where did the cat sit ?", "the cat sat on the mat . the dog ran in the park .")
    start, end = plotly_figures.span_probabilities(ans).figure().data
    np.testing.assert_allclose(start.y, ans.start_probs, rtol=1e-6)
    covered = numbers.span_probabilities(ans).span
    assert [c == plotly_canvas.THEMES["light"].highlight for c in start.marker.color] == [
        i in covered for i in range(len(ans.tokens))
    ] and covered

    emb = explore.embeddings(mlm, tok, "the cat sat .", "the dog ran .")
    np.testing.assert_allclose(
        z(plotly_figures.embedding_components(emb).figure().data[3]), emb.total.T.numpy(), rtol=1e-6
    )


def _plain(value):
    """A figure's JSON with typed arrays ({"dtype", "bdata"}) decoded to lists of numbers."""
    if isinstance(value, dict):
        if "bdata" in value:
            return (
                decoded(value).reshape([int(n) for n in value["shape"].split(",")] if "shape" in value else -1).tolist()
            )
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@pytest.mark.parametrize("kind", KINDS)
def test_fast_json_is_plotlys_json(kind):
    """figure_json (what the dashboard sends: the plain JSON written by orjson, no plotly object
    made) is the JSON plotly itself writes for the figure once its constructor has validated it,
    and plotly reads it back (plotly.io.from_json) as the same figure."""
    fig = build(kind)
    fast = json.loads(fig.to_json())
    assert fast == json.loads(plotly_canvas.figure_json(fig.lab_json, fig.lab_config))
    slow = json.loads(fig.figure().to_json())  # plotly's to_json, validated figure
    assert _plain({k: v for k, v in fast.items() if k != "config"}) == _plain(slow)
    assert fast["config"] == fig.lab_config and fast["config"]["displaylogo"] is False
    again = pio.from_json(json.dumps({k: v for k, v in fast.items() if k != "config"}))
    assert _plain(json.loads(pio.to_json(again))) == _plain({k: v for k, v in fast.items() if k != "config"})


def test_figures_use_only_plotlys_public_api():
    """No private plotly module, no attribute with a leading underscore (plotly's private state,
    e.g. fig._data), no switched-off validation: a plotly upgrade cannot break them. A figure made
    here is not a plotly Figure pretending: figure() makes plotly's own, a new one each time."""
    source = (ROOT / "lab" / "figures" / "plotly_figures.py").read_text()
    assert re.findall(r"\._[A-Za-z]\w*", source) == []
    for path in sorted((ROOT / "lab").rglob("*.py")):
        text = path.read_text()
        assert "_plotly_utils" not in text and "_validate" not in text, path
    fig = build("ablation_heatmap")
    assert not isinstance(fig, go.Figure) and fig.figure() is not fig.figure()
    changed = fig.figure()
    changed.update_layout(title_text="changed")
    assert fig.figure().layout.title.text != "changed"  # plotly's copy changes, not the figure made here


def test_the_dashboards_path_makes_no_plotly_objects_and_names_the_figure(monkeypatch):
    """What the dashboard does with a figure (the gr.Plot it draws in, its name, its CSV, the
    download format) reads the plain JSON: plotly's 8 ms constructor never runs on a request."""
    pytest.importorskip("gradio")
    import gradio as gr  # why here: Gradio is the dashboard's, for this test only

    from dashboard.common import drawn  # why here: the dashboard's hand-over, for this test only

    made = []
    monkeypatch.setattr(plotly_canvas.LabFigure, "figure", lambda self: made.append(self) or go.Figure())
    for kind in KINDS:
        fig = build(kind)
        sent = json.loads(gr.Plot().postprocess(drawn(fig)).plot)
        assert sent == json.loads(fig.to_json())
        assert plotly_figures.figure_name(fig) == kind == sent["layout"]["meta"]["figure"]
        plotly_figures.figure_csv(fig)
        plotly_figures.download_as(fig, "svg")
    assert made == []
    monkeypatch.undo()
    fig = build("attention_grid")
    assert plotly_figures.figure_name(fig.figure()) == "attention_grid"  # plotly's Figure: from layout.meta
    assert plotly_figures.figure_name(go.Figure()) == "figure"
    assert drawn(None) is None and drawn("text") == "text"


def test_a_figure_shows_in_a_notebook_as_plotly_shows_it(monkeypatch):
    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")  # JupyterLab's renderer
    fig = build("attention_grid")
    shown = fig._repr_mimebundle_()["application/vnd.plotly.v1+json"]
    assert shown["layout"]["meta"]["figure"] == "attention_grid" and len(shown["data"]) == len(fig.lab_json["data"])


# plotly.js 3.x (what Gradio 6 serves) before formatting a number with d3-format: its
# Lib.adjustFormat, and the d3-format specifier grammar. A format d3 rejects is drawn raw.
def _plotly_js_3_adjust(fmt: str) -> str:
    if not fmt or re.match(r"\d[.]\df", fmt) or re.search(r"[.]\d%", fmt):
        return fmt
    if fmt == "0.f":
        return "~f"
    if re.match(r"\d%", fmt):
        return "~%"
    if re.match(r"\ds", fmt):
        return "~s"
    return "~" + fmt if not re.match(r"[~,.0$]", fmt) and re.search(r"[&fps]", fmt) else fmt


D3_FORMAT = re.compile(r"^(?:(.)?([<>=^]))?([+\-( ])?([$#])?(0)?(\d+)?(,)?(\.\d+)?(~)?([a-z%])?$", re.I)


def _strings(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


@pytest.mark.parametrize("kind", KINDS)
def test_every_number_format_is_one_the_dashboards_plotly_js_reads(kind):
    """Every %{value:format} in the figure's templates is a format plotly.js 3 passes to d3 in a
    form d3 accepts ("+.3f" is not: plotly.js 3 makes it "~+.3f" and draws the raw float)."""
    assert not D3_FORMAT.match(_plotly_js_3_adjust("+.3f"))  # the defect this guards against
    assert D3_FORMAT.match(_plotly_js_3_adjust(".3f")) and D3_FORMAT.match(_plotly_js_3_adjust(".4g"))
    formats = [
        f for text in _strings(json.loads(build(kind).to_json())) for f in re.findall(r"%\{[^}:]*:([^}]*)\}", text)
    ]
    for fmt in formats:
        assert D3_FORMAT.match(_plotly_js_3_adjust(fmt)), fmt


@pytest.mark.parametrize(
    "array",
    [
        np.float32([[0.5, 1], [0, 0]]),
        np.arange(5),
        np.arange(5) * 10**6,
        np.array([2**40]),
        np.uint64([3]),
        np.array(["a", "b"]),
        np.array([True, False]),
        np.zeros(0),
        np.arange(6.0).reshape(3, 2)[:, 1],
    ],
)
def test_arrays_are_written_as_plotly_writes_them(array):
    """Typed arrays ({"dtype", "bdata", "shape"}) where plotly.js has the type, lists otherwise."""
    ours = json.loads(orjson.dumps({"x": array}, default=plotly_canvas.typed_array))["x"]
    assert ours == json.loads(go.Figure(go.Scatter(x=array)).to_json())["data"][0]["x"]


def test_long_titles_wrap_between_words_and_say_when_cut():
    """plotly draws a title on one line, cut at both ends on a narrow page: titles wrap between
    words instead, and a title longer than TITLE_LINES lines ends with an ellipsis."""
    from lab.figures.plotly_canvas import TITLE_CHARS, TITLE_LINES, Canvas, pick_theme

    def title(text):
        fig = Canvas(None, pick_theme("light")).finish("t", text, 300)
        return [html.unescape(line) for line in fig.lab_json["layout"]["title"]["text"].split("<br>")]

    words = "Nemo on a desert island far from every ship that ever sailed the seas of the south & east"
    lines = title(words)
    assert len(lines) == 2 and all(len(line) <= TITLE_CHARS for line in lines)
    assert " ".join(lines) == words  # nothing lost, & escaped and back
    assert title("short") == ["short"]
    lines = title(" ".join(["word"] * 400))
    assert len(lines) == TITLE_LINES and lines[-1].endswith(" …")


# ----------------------------------------------------------------------------------------------
# Text for every figure (WCAG 1.1.1): one sentence from its numbers, as the page's name for it
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_every_figure_carries_a_sentence_made_from_its_numbers(kind):
    fig = build(kind)
    summary = plotly_canvas.figure_summary(fig)
    assert summary == fig.lab_data.summary() and len(summary) > 20
    assert EVIL in summary or kind in ("head_stats_heatmaps", "embedding_components", "ablation_heatmap")
    assert "<img" not in fig.to_json()  # the token is in the sentence, never as markup in the JSON


def test_the_sentences_say_the_numbers_drawn():
    bars = build("fill_mask_bars").lab_data.summary()
    # the best guess and its probability first, at each [MASK] (two here), as the bars draw them
    assert bars.startswith("Top guess at [MASK] 1: cat 50.0%; then …ing (piece) 20.0%, <img src=x> 10.0%.")
    assert "Top guess at [MASK] 2: a 90.0%; then b 5.0%." in bars
    att = attention_result(L=2, A=3, T=6, b=3)
    data = plotly_figures.attention_heatmap(att, 1, 2).lab_data
    i, j = np.unravel_index(np.argmax(data.values), data.values.shape)
    assert f"“{data.labels[i]}” to “{data.labels[j]}” {data.values[i, j]:.2f}" in data.summary()
    span = build("span_probabilities").lab_data
    s = int(np.argmax(span.start))
    assert f"Most likely first token: “{tables.axis_labels(span.tokens)[s]}” {span.start[s]:.1%}" in span.summary()
    curves = build("training_curves").lab_data.summary()
    assert "train mlm loss from 4 at 1 min to 2 at 3 min, held-out mlm loss 2.5 at 3 min" in curves
    assert curves.endswith("MLM top-1 at [MASK] 25.0% at 3 min, NSP 70.0% at 3 min.")


def test_a_figures_numbers_as_a_table_a_screen_reader_can_walk():
    """The dashboard's "the figure's numbers as a table": caption (the sentence), column headers,
    every value escaped; a long table says how much of it is shown (the CSV has all)."""
    from dashboard.common import TABLE_ROWS, FigureDownloads

    kept = FigureDownloads.keep(build("fill_mask_bars"))
    page = FigureDownloads.table(kept)
    assert f"<caption>{html.escape(kept.numbers.summary())}</caption>" in page
    assert '<th scope="col">probability</th>' in page and page.count("<tr>") == 1 + len(kept.numbers.rows())
    assert "&lt;img src=x&gt;" in page and "<img" not in page
    grid = FigureDownloads.keep(build("embedding_components"))
    rows = len(grid.numbers.rows())
    assert rows > TABLE_ROWS and page.count("<tr>") < rows
    long = FigureDownloads.table(grid)
    assert long.count("<tr>") == 1 + TABLE_ROWS and f"The first {TABLE_ROWS:,} of {rows:,} rows" in long
    assert "no longer kept" in FigureDownloads.table(None)
