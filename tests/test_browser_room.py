"""What the room sees, in a real browser (Debian's chromium, driven by Playwright): after each
tab's main action the result is on screen without scrolling, at a projector's 1024 x 768 and a
desk's 1440 x 900, judged by the result's bounding box; a long context scrolls to the answer; a
token clicked under the maps brings the map into view; presenter mode (the switch and
?presenter=1) draws the page larger, keeps every tab's name in view, gives every figure a
full-screen button and shows a 12-head model one head at a time. With BERT_LAB_SCREENSHOTS set,
every tab in presenter mode is saved as docs/images/presenter_<tab>.png.
Marked slow (a browser and a server start): `pytest -m "not slow"` leaves it out.
"""

import os
from pathlib import Path

import pytest

from tests.conftest import chromium_browser
from tests.test_browser import offline_page, open_tab, panel

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SIZES = {"projector": {"width": 1024, "height": 768}, "desk": {"width": 1440, "height": 900}}
# tab -> (its main view, its button, the element that is the result)
TABS = {
    "Masked LM": ("mlm", "Predict", "#mlm-filled"),
    "Next Sentence": ("nsp", "Score", ".bl-view-nsp:not(.bl-status)"),
    "Attention": ("att", "Show attention", "#att-heatmap"),
    "Question Answering": ("qa", "Answer", "#qa-span"),
    "Classify": ("cls", "Classify", ".bl-view-cls:not(.bl-status)"),
    "Tag words": ("tag", "Tag", "#tag-words"),
}
SHOWN = 120  # px of the result that must be on screen (all of it where it is shorter)


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as browser:
        yield browser


def computed(page, name: str) -> int:
    return page.evaluate(f"window.blCurrent.computed({name!r})")


def in_view(page, selector: str) -> dict:
    """Where the (first shown) element is on screen: its box, and whether enough of it shows."""
    box = page.locator(selector).locator("visible=true").first.bounding_box()
    height = page.viewport_size["height"]
    need = min(SHOWN, box["height"])
    return {"top": box["y"], "bottom": box["y"] + box["height"], "seen": box["y"] >= 0 and box["y"] + need <= height}


def click_and_wait(page, view: str, button: str) -> None:
    n = computed(page, view)
    panel(page).get_by_role("button", name=button, exact=True).click()
    page.wait_for_function(f"window.blCurrent.computed({view!r}) > {n}", timeout=120_000)
    page.wait_for_timeout(400)  # the page scrolls once the result is drawn


@pytest.mark.parametrize("size", SIZES)
def test_results_in_view_after_the_click(browser, app_url, size):
    page = offline_page(browser, app_url, SIZES[size])
    try:
        page.goto(app_url)
        page.wait_for_selector("#mlm-text textarea")
        assert page.evaluate("scrollY") == 0  # a page that opens does not move
        header = page.locator("#bl-header").bounding_box()
        assert header["height"] < 90, header  # a compact header: one line
        for tab, (view, button, result) in TABS.items():
            open_tab(page, tab)
            page.evaluate("window.scrollTo(0, 0)")
            click_and_wait(page, view, button)
            where = in_view(page, result)
            assert where["seen"], (size, tab, where)
    finally:
        page.close()


def test_long_context_scrolls_to_the_answer_and_a_token_brings_the_map(browser, app_url):
    page = offline_page(browser, app_url, SIZES["projector"])
    try:
        page.goto(app_url)
        page.wait_for_selector("#mlm-text textarea")
        open_tab(page, "Question Answering")
        filler = " ".join(["The weather in the valley was mild and the river ran slowly past the farms."] * 120)
        context = f"{filler} The lighthouse keeper was called Tomas Berg. {filler}"
        page.fill("#qa-context textarea", context)
        page.fill("#qa-question textarea", "Who was the lighthouse keeper?")
        click_and_wait(page, "qa", "Answer")
        mark = page.locator("#qa-span .token.highlighted").first
        assert "Tomas" in mark.inner_text() or "Berg" in mark.inner_text()
        box, span = mark.bounding_box(), page.locator("#qa-span").bounding_box()
        assert span["height"] < 700  # the context scrolls inside its box
        assert span["y"] <= box["y"] and box["y"] + box["height"] <= span["y"] + span["height"]  # the answer shows
        assert 0 <= box["y"] and box["y"] + box["height"] <= 768

        open_tab(page, "Attention")
        page.locator("#att-tokens").scroll_into_view_if_needed()
        assert not in_view(page, "#att-heatmap")["seen"]  # the map is far above the tokens
        page.locator("#att-tokens .token").nth(2).click()
        page.wait_for_function(
            "() => { const r = document.querySelector('#att-heatmap').getBoundingClientRect();"
            " return r.top >= 0 && r.top < 648; }",
            timeout=60_000,
        )
    finally:
        page.close()


@pytest.mark.parametrize("size", SIZES)
def test_presenter_mode(browser, app_url, dash, size):
    page = offline_page(browser, app_url, SIZES[size])
    width = SIZES[size]["width"]
    shots = os.environ.get("BERT_LAB_SCREENSHOTS") if size == "projector" else None  # docs/images: 1024 x 768
    try:
        page.goto(app_url)
        page.wait_for_selector("#mlm-text textarea")
        font = "() => parseFloat(getComputedStyle(document.querySelector('#mlm-text textarea')).fontSize)"
        normal = page.evaluate(font)
        page.get_by_label("Presenter mode").check()
        page.wait_for_function("document.body.classList.contains('bl-presenter')")
        assert "presenter=1" in page.url  # a reload keeps it
        larger = page.evaluate(font)
        assert larger > 1.2 * normal, (normal, larger)  # larger text
        page.wait_for_selector("#mlm-bars .js-plotly-plot")
        zoom = page.evaluate("getComputedStyle(document.querySelector('#mlm-bars .js-plotly-plot')).zoom")
        assert float(zoom) > 1.2  # figures drawn larger
        page.get_by_label("Presenter mode").uncheck()
        page.wait_for_function("!document.body.classList.contains('bl-presenter')")

        page.goto(app_url + "?presenter=1")  # the address asks for it
        page.wait_for_function("document.body.classList.contains('bl-presenter')")
        assert page.get_by_label("Presenter mode").is_checked()
        page.wait_for_selector("#room-qr svg")  # the page's address as a QR, for the room to scan
        assert page.locator("#room-qr svg").is_visible()
        page.locator("#room-qr summary").click()  # folded to one line once the room has scanned it
        assert (
            not page.locator("#room-qr svg").is_visible() and app_url in page.locator("#room-qr summary").inner_text()
        )
        for tab in [*TABS, "Training", "Model"]:
            tab_button = page.get_by_role("tab", name=tab)
            assert tab_button.is_visible(), tab  # every tab's name fits: no overflow menu
            box = tab_button.bounding_box()
            assert box["x"] + box["width"] <= width
            open_tab(page, tab)
            if tab in ("Masked LM", "Attention", "Question Answering"):
                panel(page).locator(".js-plotly-plot").first.wait_for()
            page.wait_for_timeout(500)  # the full-screen buttons are added on the next frame
            plots = panel(page).locator(".js-plotly-plot").locator("visible=true")
            buttons = panel(page).locator(".bl-full").locator("visible=true")
            assert buttons.count() >= plots.count(), tab  # every figure has its full-screen button
            assert plots.count() > 0 or tab not in ("Masked LM", "Attention", "Question Answering"), tab
            if tab in TABS:
                view, button, result = TABS[tab]
                click_and_wait(page, view, button)
                assert in_view(page, result)["seen"], tab  # in presenter mode too
            if shots:
                page.mouse.move(0, 0)
                page.screenshot(path=str(Path(shots) / f"presenter_{tab.lower().replace(' ', '_')}.png"))

        # a 12-head model: its all-heads view gives way to one head at a time
        open_tab(page, "Attention")
        menu_choices = next(menu.choices for menu, task in dash.ctx.menus if task == "attention")
        minilm = next(value for _, value in menu_choices if "minilm" in value)  # 12 heads
        menu = panel(page).get_by_role("combobox", name="Model")
        menu.click()
        page.locator(f"ul[role=listbox] li[role=option][aria-label='{minilm}']").click()
        page.wait_for_function(
            "document.querySelectorAll('#att-grid .cartesianlayer .subplot').length > 4", timeout=120_000
        )
        page.wait_for_timeout(300)
        assert not page.locator("#att-grid").is_visible()
        assert page.locator("#att-one-head-note").is_visible()
        assert page.locator("#att-heatmap").is_visible()
    finally:
        page.close()
