"""Issue 44, the dashboard in a real browser: on a phone (390 x 844) every tab's name is on screen,
none behind Gradio's overflow menu; in presenter mode a figure's full screen has an "Exit full
screen" button, fills the screen and keeps its "out of date" line; the one-head note shows only
where the all-heads view is hidden (in the same page). With BERT_LAB_ROOM44_SHOTS set, the views are saved there.
Marked slow (a browser and a server start)."""

import os
from pathlib import Path

import pytest

from tests.conftest import chromium_browser
from tests.test_browser import offline_page, open_tab

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TABS = ["Masked LM", "Next Sentence", "Attention", "Question Answering", "Classify", "Tag words", "Training", "Model"]
PHONE, PROJECTOR = {"width": 390, "height": 844}, {"width": 1024, "height": 768}
SHOTS = os.environ.get("BERT_LAB_ROOM44_SHOTS")


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as browser:
        yield browser


def shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


@pytest.mark.parametrize("size", ["phone", "projector"])
def test_every_tab_name_is_on_screen(browser, app_url, size):
    viewport = PHONE if size == "phone" else PROJECTOR
    page = offline_page(browser, app_url, viewport)
    try:
        page.goto(app_url)
        page.wait_for_selector("#mlm-text textarea")
        page.wait_for_timeout(500)  # Gradio measures the tabs on the next frame
        for tab in TABS:
            button = page.get_by_role("tab", name=tab, exact=True)
            assert button.is_visible(), (size, tab)
            box = button.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], (size, tab, box)
        assert not page.get_by_role("button", name="More tabs").is_visible()
        shot(page, f"tabs_{size}")
        open_tab(page, "Model")  # a tab on the second line opens
    finally:
        page.close()


def test_presenter_full_screen_has_a_way_out_fills_the_screen_and_says_out_of_date(browser, app_url):
    page = offline_page(browser, app_url, PROJECTOR)
    try:
        page.goto(app_url + "?presenter=1")
        page.wait_for_selector("#mlm-bars .js-plotly-plot")
        page.wait_for_timeout(500)
        plot = "#mlm-bars .js-plotly-plot"
        before = page.locator(plot).bounding_box()["height"]
        page.locator("#mlm-text textarea").fill("it was a dark and stormy [MASK] .")  # the bars are out of date
        page.wait_for_selector("#mlm-bars.bl-stale, .bl-stale #mlm-bars, #mlm-bars .bl-stale", state="attached")
        page.locator("#mlm-bars .bl-full").click()
        page.wait_for_function("!!document.fullscreenElement")
        exit_button = page.get_by_role("button", name="Exit full screen")
        exit_button.wait_for()
        page.wait_for_timeout(600)
        assert exit_button.is_visible()
        box = page.locator(plot).bounding_box()
        assert box["height"] > 0.85 * PROJECTOR["height"] and box["width"] > 0.9 * PROJECTOR["width"], box
        stale = page.locator(":fullscreen .bl-full-stale")
        assert stale.is_visible() and "out of date" in stale.inner_text()
        assert float(page.evaluate(f"getComputedStyle(document.querySelector({plot!r})).opacity")) == 1
        shot(page, "presenter_full_screen_1024")
        exit_button.click()
        page.wait_for_function("!document.fullscreenElement")
        page.wait_for_timeout(400)
        assert abs(page.locator(plot).bounding_box()["height"] - before) < 2  # its own height again

        # the one-head note shows only where the all-heads view is hidden (test_browser_room: a 12-head model)
        open_tab(page, "Attention")
        page.wait_for_selector("#att-grid .js-plotly-plot")
        page.wait_for_timeout(500)
        assert page.locator("#att-grid").is_visible()  # the bundled model's two heads: all shown
        assert not page.locator("#att-one-head-note").is_visible()
    finally:
        page.close()
