"""lab.figures.plotly_figures drawn by a real browser: the numbers written in the cells are the ones asked for.

Each figure that writes numbers in its cells or on its bars (one attention head, the head
statistics, the head-silencing effects, the fill-mask guesses) is drawn in headless chromium at
a projector's 1024 px width by two plotly.js builds: the one Gradio 6 serves to the dashboard
(a small page with one gr.Plot per figure) and the one the plotly package ships (what fig.show()
uses; inlined into a page written to a temporary folder). The texts are read back from the SVG
and must be exactly the strings lab.figures.matplotlib_figures writes, with at most 3 decimals: Gradio's plotly.js 3
once drew the ablation cells as raw float32 values ("0.23746109008789062"), because it cannot
read the d3 format "+.3f". Screenshots of both pages are saved in pytest's temporary folder.

    .venv/bin/python -m pytest tests/test_figures_browser.py          # --basetemp=DIR keeps them in DIR

Skipped when chromium is absent, except under CI (BERT_LAB_REQUIRE_BROWSER=1), where it fails.
Marked slow (a browser and a Gradio server start).
"""

import re
from pathlib import Path

import pytest

from lab.figures import plotly_figures
from tests.conftest import chromium_browser
from tests.test_figures import FILL
from tests.test_plots import ablation_result, attention_result, stats_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

WIDTH = 1024  # px: projectors are often this wide
AT_MOST_3_DECIMALS = re.compile(r"^[+\-\u2212]?\d+(\.\d{1,3})?%?$")
CELLS = ".heatmaplayer text"  # the numbers plotly.js writes in heatmap cells
BARS = ".bartext"  # and next to bars


def drawn_figures() -> dict:
    """elem_id -> (figure, selector of its drawn numbers); the ablation's largest effect (0.436)
    gives the format "+.3f", the one plotly.js 3 could not read."""
    return {
        "heatmap": (plotly_figures.attention_heatmap(attention_result(L=2, A=3, T=6, b=3), 1, 2), CELLS),
        "stats": (plotly_figures.head_stats_heatmaps(stats_of(3, 4)), CELLS),
        "ablation": (plotly_figures.ablation_heatmap(ablation_result(L=3, A=4)), CELLS),
        "fill": (plotly_figures.fill_mask_bars(FILL), BARS),
    }


def expected_texts(fig) -> list[str]:
    """The numbers the figure's data asks to be written, as Python formats them (lab.figures.matplotlib_figures
    writes the same strings): each cell's value with its panel's format, each guess's share."""
    data = fig.lab_data
    if hasattr(data, "masks"):  # fill_mask_bars
        return [f"{p:.1%}" for m in data.masks for p in m.probabilities]
    return [format(v, p.cell_format) for p in getattr(data, "panels", [data]) for v in p.values.flat]


def check_drawn(page, name: str, fig, selector: str, root: str = "") -> None:
    drawn = page.eval_on_selector_all(f"{root} {selector}", "els => els.map(e => e.textContent)")
    expected = expected_texts(fig)
    assert expected, name
    assert sorted(drawn) == sorted(expected), (name, drawn)
    assert all(AT_MOST_3_DECIMALS.match(t) for t in drawn), (name, drawn)


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as b:
        yield b


def test_cell_numbers_in_gradios_plotly_js(browser, tmp_path):
    gr = pytest.importorskip("gradio")
    from dashboard.common import plot  # why here: the dashboard's gr.Plot, for this test only

    shown = drawn_figures()
    with gr.Blocks() as demo:
        for name, (fig, _) in shown.items():
            plot(name, fig, elem_id=name)
    _, url, _ = demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=None, quiet=True)
    try:
        page = browser.new_page(viewport={"width": WIDTH, "height": 900})
        page.set_default_timeout(60_000)
        page.goto(url)
        for name, (fig, selector) in shown.items():
            page.locator(f"#{name}").scroll_into_view_if_needed()
            page.wait_for_selector(f"#{name} .main-svg")
            page.wait_for_function(
                "([root, sel]) => document.querySelectorAll(`${root} ${sel}`).length > 0", arg=[f"#{name}", selector]
            )
            check_drawn(page, name, fig, selector, root=f"#{name}")
        # the ablation's hover shows the same text as its cell
        cell = page.locator("#ablation .heatmaplayer text").first
        cell.scroll_into_view_if_needed()
        box = cell.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_selector("#ablation .hoverlayer .hovertext")
        hover = page.eval_on_selector("#ablation .hoverlayer .hovertext", "e => e.textContent")
        assert f"change in loss: {cell.text_content()}" in hover, hover
        page.locator("#ablation").screenshot(path=str(tmp_path / "ablation-gradio.png"))
        page.screenshot(path=str(tmp_path / "figures-gradio.png"), full_page=True)
    finally:
        demo.close()


def test_cell_numbers_in_plotlys_own_plotly_js(browser, tmp_path):
    plotly = pytest.importorskip("plotly")
    js = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8")
    shown = drawn_figures()
    divs = "".join(f'<div id="{name}"></div>' for name in shown)
    calls = "".join(
        f'f = {fig.to_json()}; Plotly.newPlot("{name}", f.data, f.layout, f.config);\n'
        for name, (fig, _) in shown.items()
    )
    page_file = tmp_path / "plotly_figures.html"
    page_file.write_text(
        f'<html><head><meta charset="utf-8"><script>{js}</script></head><body>{divs}'
        f"<script>let f;\n{calls}</script></body></html>",
        encoding="utf-8",
    )
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    page.goto(page_file.as_uri())
    for name, (fig, selector) in shown.items():
        page.wait_for_selector(f"#{name} .main-svg")
        check_drawn(page, name, fig, selector, root=f"#{name}")
    page.screenshot(path=str(tmp_path / "figures-plotly.png"), full_page=True)
