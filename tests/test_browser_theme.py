"""Figures follow the page's theme, in a real browser (Debian's chromium, driven by Playwright).
Gradio sets the theme when a page opens (?__theme=dark, else the system's preference) and follows
a change of the system's preference while the page is open, without a reload. Then each tab's
quick views are drawn again in the new theme, and the panels under them (attributions, probes)
are marked out of date until their button is pressed (docs/dashboard.md, the rule table).
Marked slow (a browser and a server start): `pytest -m "not slow"` leaves it out.
"""

import pytest

from tests.conftest import chromium_browser
from tests.test_browser import offline_page, open_tab

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# the background a figure was drawn with (plotly's own layout, after drawing)
BARS = "(document.querySelector('#mlm-bars .js-plotly-plot')?._fullLayout?.paper_bgcolor ?? null)"
DARK = "document.body.classList.contains('dark')"


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as browser:
        yield browser


def background(page):
    return page.evaluate(BARS)


def test_a_live_switch_to_dark_redraws_the_figures_or_marks_them(browser, app_url, tmp_path):
    page = offline_page(browser, app_url, {"width": 1024, "height": 768})
    page.emulate_media(color_scheme="light")
    page.goto(app_url)
    page.wait_for_selector("#mlm-text textarea")
    page.wait_for_function(f"{BARS} !== null")
    assert page.evaluate(DARK) is False
    light = background(page)
    computed = page.evaluate("window.blCurrent.computed('mlm')")
    # the system's preference turns dark while the page is open: Gradio switches the page's theme
    page.emulate_media(color_scheme="dark")
    page.wait_for_function(DARK, timeout=10_000)
    page.wait_for_function(f"window.blCurrent.computed('mlm') > {computed}", timeout=60_000)
    page.wait_for_function(f"{BARS} !== {light!r}", timeout=30_000)
    assert not page.evaluate("window.blCurrent.isStale('mlm')")  # drawn again: current
    # the panels drawn when the page opened (light) are marked out of date until pressed again
    for name in ("mlm-why", "mlm-lens"):
        assert page.evaluate(f"window.blCurrent.isStale({name!r})"), name
    page.get_by_text("Why? What the answer rests on (attribution)").first.click()
    page.wait_for_function("document.querySelector('.bl-stale.bl-view-mlm-why') !== null")
    page.mouse.move(0, 0)
    page.screenshot(path=str(tmp_path / "theme_dark_mlm.png"), full_page=True)
    # a tab first opened after the switch draws its quick views in the theme now shown
    open_tab(page, "Question Answering")
    page.wait_for_function("window.blCurrent.computed('qa') > 0", timeout=60_000)
    assert not page.evaluate("window.blCurrent.isStale('qa')")
    # and back to light: the bars follow again
    dark = background(page)
    open_tab(page, "Masked LM")
    page.emulate_media(color_scheme="light")
    page.wait_for_function(f"!{DARK}", timeout=10_000)
    page.wait_for_function(f"{BARS} !== {dark!r}", timeout=60_000)
    assert background(page) == light
    page.close()


def test_a_page_opened_dark_by_its_address_shows_dark_figures(browser, app_url):
    """?__theme=dark fixes the theme (the system's preference is then ignored): the page's opening
    draws the views in it, and no switch follows."""
    page = offline_page(browser, app_url, {"width": 1024, "height": 768})
    page.goto(app_url + "?__theme=dark")
    page.wait_for_selector("#mlm-text textarea")
    page.wait_for_function(DARK)
    page.wait_for_function("window.blCurrent.computed('mlm') > 0", timeout=60_000)
    page.wait_for_function(f"{BARS} !== null")
    dark = background(page)
    page.emulate_media(color_scheme="light")
    page.wait_for_timeout(1_000)
    assert page.evaluate(DARK) and background(page) == dark
    page.close()
