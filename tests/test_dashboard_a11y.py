"""Every student can use the dashboard (WCAG 2.1 AA, issue 43; docs/accessibility.md), in a real
browser (Debian's chromium, driven by Playwright), the network blocked:
- axe-core (web/package-lock.json pins it) finds no WCAG 2.1 A/AA violation on any tab, after its
  main button and with every folded panel opened and a figure's numbers shown as a table: at 1024 x
  768 and 390 x 844, in the light and dark themes and in presenter mode;
- the accessibility tree (`aria_snapshot`): each figure is one picture named by the sentence its
  numbers make (the same the server computes), its other layers hidden; the result is announced in
  the tab's live region (its status line), and Gradio's "common.complete" never is;
- the keyboard alone does the lesson plan's core path (Masked LM, Next Sentence, Attention,
  Question Answering): tabs moved with the arrow keys, every control reached shows its focus, a word
  masked from the keyboard, a figure's toolbar one Tab stop; the QR dialog takes the focus, keeps
  it and gives it back.
Marked slow (a browser and a server start): `pytest -m "not slow"` leaves it out.
"""

import pytest

from tests.conftest import axe_violations, chromium_browser, sent_summary
from tests.test_browser import offline_page, open_tab

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

PROJECTOR = {"width": 1024, "height": 768}
PHONE = {"width": 390, "height": 844}
# each tab: its main button and the view it computes (dashboard.current)
TABS = {
    "Masked LM": ("Predict", "mlm"),
    "Next Sentence": ("Score", "nsp"),
    "Attention": ("Show attention", "att"),
    "Question Answering": ("Answer", "qa"),
    "Classify": ("Classify", "cls"),
    "Tag words": ("Tag", "tag"),
    "Training": ("Show curves", "train-curves"),
    "Model": ("Input embeddings: token + segment + position", "model-emb"),
}
MODES = {
    "1024": (PROJECTOR, ""),
    "390": (PHONE, ""),
    "1024-dark": (PROJECTOR, "?__theme=dark"),
    "1024-presenter": (PROJECTOR, "?presenter=1"),
    "390-presenter-dark": (PHONE, "?presenter=1&__theme=dark"),
}


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as browser:
        yield browser


def opened(browser, app_url, viewport, query=""):
    page = offline_page(browser, app_url, viewport)
    page.goto(app_url + query)
    page.wait_for_selector("#mlm-text textarea")
    page.wait_for_function("window.blCurrent.computed('mlm') >= 0 && window.blAccess !== undefined")
    return page


def show_tab(page, name):
    """Open a tab; on a phone Gradio folds most tabs behind its "..." menu."""
    if page.get_by_role("tab", name=name).is_visible():
        return open_tab(page, name)
    page.locator(".overflow-menu > button").first.click()
    page.locator(".overflow-dropdown button", has_text=name).first.click()
    page.wait_for_function(
        "(name) => [...document.querySelectorAll('button[role=tab]')]"
        ".some(b => b.innerText.trim() === name && b.getAttribute('aria-selected') === 'true')",
        arg=name,
    )


def press_main(page, name):
    """The tab's main button, then wait until its view is computed again."""
    button, view = TABS[name]
    before = page.evaluate(f"window.blCurrent.computed({view!r})")
    page.locator("[role=tabpanel]:visible").get_by_role("button", name=button, exact=True).first.click()
    page.wait_for_function(f"window.blCurrent.computed({view!r}) > {before}", timeout=120_000)
    page.wait_for_timeout(300)  # the figure drawn, the page's scan run


def open_panels(page):
    """Every folded panel of the tab opened (their content drawn as a student would see it)."""
    for summary in page.locator("[role=tabpanel]:visible button.label-wrap:not(.open)").all():
        if summary.is_visible():
            summary.click()
    page.wait_for_timeout(500)


@pytest.mark.parametrize("mode", MODES)
def test_axe_finds_nothing_on_any_tab(browser, app_url, mode):
    viewport, query = MODES[mode]
    page = opened(browser, app_url, viewport, query)
    found = {}
    for name in TABS:
        show_tab(page, name)
        press_main(page, name)
        open_panels(page)
        if name == "Masked LM":  # a figure's numbers as a table
            page.locator("[role=tabpanel]:visible").get_by_role(
                "button", name="the figure's numbers as a table"
            ).first.click()
            page.wait_for_selector(".bl-table table")
        found[name] = axe_violations(page)
    if page.locator("button.settings").is_visible():  # Gradio's settings panel, from the footer
        page.locator("button.settings").click()
        page.wait_for_selector(".banner-wrap")
        found["the settings panel"] = axe_violations(page)
    bad = {name: v for name, v in found.items() if v}
    assert not bad, "\n".join(f"{name}: {v}" for name, v in bad.items())
    page.close()


def test_figures_are_named_by_their_numbers_and_results_announced(browser, app_url, dash):
    page = opened(browser, app_url, PROJECTOR)
    text = "she sat down by the [MASK] and began to read ."
    page.fill("#mlm-text textarea", text)
    press_main(page, "Masked LM")
    model = page.locator(".bl-model-menu input").first.input_value()
    _, fig, _, _ = dash.tab("mlm").fill_mask(model, text, 5, 1.0, "light")
    summary = sent_summary(fig)
    assert summary.startswith("Top guess: ")
    # the figure: one picture, named by its summary; its other layers hidden
    page.wait_for_function("(s) => document.querySelector('#mlm-bars svg.main-svg')?.ariaLabel === s", arg=summary)
    first = page.locator("#mlm-bars").aria_snapshot().splitlines()[0]
    assert first in (f'- img "{summary}"', f"- 'img \"{summary}\"'")  # a picture with its name, no loose labels
    hidden = page.evaluate(
        "[...document.querySelectorAll('#mlm-bars svg.main-svg')].map(s => s.getAttribute('aria-hidden'))"
    )
    assert hidden[0] is None and set(hidden[1:]) == {"true"}
    # the result announced: the tab's status line is a polite live region that says it
    status = page.locator("#mlm-status [role=status], #mlm-status[role=status]").first
    assert status.get_attribute("role") == "status" and status.get_attribute("aria-live") == "polite"
    page.wait_for_function("(s) => document.querySelector('#mlm-status').textContent.includes(s)", arg=summary)
    assert status.locator(".bl-sr").text_content().strip() == summary  # read, not drawn
    tree = page.locator("body").aria_snapshot()
    assert "common.complete" not in tree
    live = page.evaluate(
        "[...document.querySelectorAll('[aria-live=polite], [aria-live=assertive], [role=status], [role=alert]')]"
        ".filter(e => !e.closest('[aria-hidden=true]')).map(e => e.textContent)"
    )
    assert not [text for text in live if "common." in text]
    # every figure on every tab has its sentence (the first views hold 7 figures)
    named = 0
    for name in TABS:
        show_tab(page, name)
        names = page.evaluate(
            "[...document.querySelectorAll('[role=tabpanel] .js-plotly-plot')].filter(p => p.offsetParent)"
            ".map(p => p.querySelector('svg.main-svg')?.getAttribute('aria-label') ?? '')"
        )
        assert all(len(n) > 20 for n in names), (name, names)
        named += len(names)
    assert named >= 7
    page.close()


# ----------------------------------------------------------------------------------------------
# The keyboard alone
# ----------------------------------------------------------------------------------------------
def tab_to(page, selector: str, limit: int = 80, back: bool = False) -> int:
    """Press Tab (Shift+Tab: back) until the focus is on `selector`; every control passed on the
    way shows its focus. -> the number of presses."""
    for n in range(1, limit + 1):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        focus = page.evaluate(
            "(sel) => { const el = document.activeElement, s = getComputedStyle(el);"
            " return {on: el.matches(sel), what: el.outerHTML.slice(0, 120),"
            " shown: el === document.body || (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2)}; }",
            selector,
        )
        assert focus["shown"], f"no visible focus on {focus['what']}"
        if focus["on"]:
            return n
    raise AssertionError(f"{selector} not reached in {limit} Tab presses")


def next_tab(page, name):
    """From the selected tab, ArrowRight until `name` is selected (the arrows move and select)."""
    tab_to(page, "button[role=tab][aria-selected=true]", back=True)
    for _ in range(8):
        if page.evaluate("document.activeElement.innerText.trim()") == name:
            break
        page.keyboard.press("ArrowRight")
    assert page.get_by_role("tab", name=name).get_attribute("aria-selected") == "true"


def run_by_keyboard(page, name, view):
    before = page.evaluate(f"window.blCurrent.computed({view!r})")
    page.keyboard.press("Enter")
    page.wait_for_function(f"window.blCurrent.computed({view!r}) > {before}", timeout=120_000)


def test_the_lesson_core_path_by_keyboard_alone(browser, app_url):
    page = opened(browser, app_url, PROJECTOR)
    page.wait_for_timeout(1000)
    # the model menu opens as the focus reaches it, and closes as Tab leaves it (not over the next label)
    tab_to(page, ".bl-model-menu input[role=combobox]")
    page.keyboard.press("Tab")
    page.wait_for_timeout(300)
    assert page.evaluate("[...document.querySelectorAll('[id$=-options]')].filter(o => o.offsetParent).length") == 0
    # Masked LM: the sentence typed, Predict pressed
    tab_to(page, "#mlm-text textarea")
    page.keyboard.press("Control+A")
    page.keyboard.type("the captain of the [MASK] looked at me .")
    tab_to(page, "#mlm-predict")
    run_by_keyboard(page, "Masked LM", "mlm")
    assert "Top guess" in page.locator("#mlm-status").text_content()
    # a word masked from the keyboard: the row of words is one Tab stop, walked with the arrows
    tab_to(page, "#mlm-words .token.selectable", back=True)
    page.keyboard.press("ArrowRight")
    word = page.evaluate("document.activeElement.innerText.trim()")
    before = page.evaluate("window.blCurrent.computed('mlm')")
    page.keyboard.press("Enter")
    page.wait_for_function(f"window.blCurrent.computed('mlm') > {before}", timeout=60_000)
    assert word and "[MASK]" in page.input_value("#mlm-text textarea")
    # a figure's toolbar: one Tab stop
    stops = page.evaluate("[...document.querySelectorAll('#mlm-bars .modebar-btn')].map(b => b.tabIndex)")
    assert len(stops) > 1 and stops.count(0) == 1
    # Next Sentence, Attention, Question Answering: the tab by the arrow keys, its button by Tab
    for name, button, view in (
        ("Next Sentence", "Score", "nsp"),
        ("Attention", "Show attention", "att"),
        ("Question Answering", "Answer", "qa"),
    ):
        next_tab(page, name)
        tab_to(page, "[role=tabpanel]:not([hidden]) button.primary")
        assert page.evaluate("document.activeElement.innerText.trim()") == button
        run_by_keyboard(page, name, view)
    page.close()


def test_the_qr_dialog_takes_the_focus_keeps_it_and_gives_it_back(browser, app_url):
    page = opened(browser, app_url, PROJECTOR)
    page.focus("#share-qr-button")
    page.keyboard.press("Enter")
    page.wait_for_selector(".bl-qr-overlay[role=dialog][aria-modal=true]")
    page.wait_for_function("document.activeElement.classList.contains('bl-qr-close')")
    for key in ("Tab", "Shift+Tab", "Tab"):
        page.keyboard.press(key)
        assert page.evaluate("document.activeElement.classList.contains('bl-qr-close')"), key
    page.keyboard.press("Escape")
    page.wait_for_selector(".bl-qr-overlay", state="detached")
    assert page.evaluate("document.activeElement.id") == "share-qr-button"
    page.close()


# text of a figure past the edge of the box that shows it: cut, unless that box scrolls sideways
CUT_JS = """() => [...document.querySelectorAll('[role=tabpanel] .js-plotly-plot')].filter(p => p.offsetParent)
  .flatMap(p => {
    const block = p.closest('.block'), box = block.getBoundingClientRect();
    const scrolls = block.scrollWidth > block.clientWidth + 1 && block.tabIndex === 0;
    return [...p.querySelectorAll('text')].filter(t => {
      const r = t.getBoundingClientRect();
      return r.width && !scrolls && (r.left < box.left - 1 || r.right > box.right + 1);
    }).map(t => t.textContent.slice(0, 40));
  })"""


def test_the_page_reflows_at_320_px_and_no_figure_text_is_cut(browser, app_url):
    page = opened(browser, app_url, {"width": 320, "height": 640})
    for name in TABS:
        show_tab(page, name)
        page.wait_for_timeout(1500)
        assert page.evaluate("document.documentElement.scrollWidth") <= 320, name  # no sideways page
        assert page.evaluate(CUT_JS) == [], name
    page.close()
