"""Never a stale answer, in a real browser (Debian's chromium, driven by Playwright): every control
that changes what a view shows either recomputes the view or marks it out of date until it is
recomputed (dashboard.current; docs/dashboard.md states the rule). Each tab is driven through its
model menu, its text, its examples and its sliders, at 1024 x 768 and 1440 x 900, and after each
action every view is checked: what its status line says must be what the server computes for the
inputs now on the page, or the view must be visibly marked out of date.
Marked slow (a browser and a server start): `pytest -m "not slow"` leaves it out.
"""

import html
import re

import pytest

from tests.conftest import chromium_browser
from tests.test_browser import offline_page, open_tab, panel

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SIZES = {"projector": {"width": 1024, "height": 768}, "desk": {"width": 1440, "height": 900}}

WHY = "Why? What the answer rests on (attribution)"
# tab name -> (its id, the task of its model menu, its main view, the main view's button, its
# text box, the views under it shown when the page opens, with the accordion each is in)
TABS = {
    "Masked LM": (
        "mlm",
        "fill_mask",
        "mlm",
        "Predict",
        "#mlm-text textarea",
        {"mlm-lens": "Layer by layer: the guess at every layer (logit lens)", "mlm-why": WHY},
    ),
    "Next Sentence": ("nsp", "next_sentence", "nsp", "Score", None, {}),
    "Attention": (
        "attention",
        "attention",
        "att",
        "Show attention",
        None,
        {"att-stats": None, "att-why": "Attribution beside attention: what the answer rests on vs where [CLS] looks"},
    ),
    "Question Answering": ("qa", "answer", "qa", "Answer", "#qa-question textarea", {"qa-why": WHY}),
    "Classify": ("classify", "classify", "cls", "Classify", "#cls-text textarea", {"cls-why": WHY}),
    "Tag words": ("tag", "tag", "tag", "Tag", "#tag-text textarea", {}),
}
# every tab at the projector's size; two at a desk's as well
CASES = [(tab, "projector") for tab in TABS] + [("Classify", "desk"), ("Question Answering", "desk")]

# A status line's text as drawn: without the words only a screen reader reads (.bl-sr, what the
# view's figures show: dashboard.access)
SHOWN_TEXT = """const shownText = (e) => {
  let text = e.innerText;
  for (const sr of e.querySelectorAll('.bl-sr')) text = text.replace(sr.innerText, '');
  return text;
};"""

# every view drawn (a closed accordion's are not), as the page shows it: marked out of date (its
# class), the line saying so, and its status line's text
STATE_JS = (
    """() => {
  """
    + SHOWN_TEXT
    + """
  const out = {};
  for (const el of document.querySelectorAll('[class*="bl-view-"]')) {
    for (const c of el.classList) {
      if (!c.startsWith('bl-view-')) continue;
      const v = out[c.slice(8)] ??= {stale: false, marked: false, says: null, status: null};
      v.stale ||= window.blCurrent.isStale(c.slice(8));
      v.marked ||= el.classList.contains('bl-stale');
      const says = el.getAttribute('data-stale');
      if (says && says.endsWith(window.blCurrent.label(c.slice(8)))) v.says = getComputedStyle(el, '::before').content;
      if (el.classList.contains('bl-status')) v.status ??= shownText(el).trim();  // the view's first status line
    }
  }
  return out;
}"""
)

# no request of the page still running (Gradio shows a progress overlay on the outputs meanwhile)
SETTLED_JS = "() => !document.querySelector('.wrap.default:not(.hide), .progress-text, .eta-bar')"


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as browser:
        yield browser


def views(page) -> dict:
    page.wait_for_function(SETTLED_JS)
    page.wait_for_timeout(300)  # the events chained after a result (the page's own marking) run
    return page.evaluate(STATE_JS)


def text_of(status_html: str) -> str:
    """A status line's text as the page shows it: a closed <details> shows its summary only."""
    shown = re.sub(r"<details\b[^>]*>\s*<summary[^>]*>(.*?)</summary>.*?</details>", r" \1 ", status_html, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", shown))).strip()


def expected_status(dash, tab_id: str, model: str, page) -> str:
    """What the server says for the main view's inputs now on the page (the handler, called here)."""
    tab = dash.tab(tab_id)
    boxes = panel(page).locator("textarea").evaluate_all("els => els.map(e => e.value)")
    if tab_id == "mlm":
        out = tab.fill_mask(model, boxes[0], 5, 1.0, "light")
    elif tab_id == "nsp":
        out = tab.next_sentence(model, boxes[0], boxes[1])
    elif tab_id == "attention":
        out = tab.attention(model, boxes[0], boxes[1], 0, 0, "light")
    elif tab_id == "qa":
        out = tab.answer(model, boxes[0], boxes[1], 3, "light")
    elif tab_id == "classify":
        out = tab.classify(model, boxes[0], boxes[1])
    else:
        out = tab.tag(model, boxes[0])
    return text_of(out[-1])


def menu_models(dash, task: str) -> list[str]:
    """The models the tab's menu offers (its choices were fixed when the page was built: models
    other tests add to the models root later are not among them)."""
    menu = next(menu for menu, t in dash.ctx.menus if t == task)
    return [value for _, value in menu.choices]


def choose_model(page, name: str) -> None:
    panel(page).get_by_role("combobox", name="Model").click()
    page.locator(f"ul[role=listbox] li[role=option][aria-label='{name}']").click()


def computed(page, name: str) -> int:
    return page.evaluate(f"window.blCurrent.computed({name!r})")


def shows_current(page, dash, tab_id: str, main: str, model: str, after: int) -> None:
    """The main view was computed again (more than `after` times in this page), shows what the
    server computes for the inputs on the page, and is not marked."""
    want = expected_status(dash, tab_id, model, page)
    try:
        page.wait_for_function(
            r"""([name, want, after]) => { """
            + SHOWN_TEXT
            + r""" return window.blCurrent.computed(name) > after
                 && !window.blCurrent.isStale(name)
                 && !document.querySelector('.bl-stale.bl-view-' + name)
                 && [...document.querySelectorAll('.bl-status.bl-view-' + name)]
                      .some(e => shownText(e).replace(/\s+/g, ' ').trim() === want); }""",
            arg=[main, want, after],
            timeout=30_000,
        )
    except Exception:
        pytest.fail(f"{main} does not show the result of the inputs on the page: {views(page).get(main)} != {want}")


def assert_current_or_marked(page, names, why: str, accordions=None) -> None:
    """These views are marked out of date: in the page's record, and drawn dimmed with the line
    that says so (a closed accordion opened to see it)."""
    for name in names:
        try:  # the page's change events run in the next moments
            page.wait_for_function(f"window.blCurrent.isStale({name!r})", timeout=5_000)
        except Exception:
            pytest.fail(f"{why}: {name} is shown as current")
        title = (accordions or {}).get(name)
        if title:
            open_accordion(page, title)
        state = views(page)
        v = state.get(name)
        assert v and v["marked"] and v["says"] and "out of date: press" in v["says"], (why, name, v)


def open_accordion(page, title):
    button = panel(page).locator("button.label-wrap", has_text=title)
    if "open" not in (button.get_attribute("class") or "").split():
        button.click()


@pytest.mark.parametrize("tab_name,size", CASES)
def test_no_stale_answer(browser, app_url, dash, tab_name, size):
    tab_id, task, main, button, box, below = TABS[tab_name]
    page = offline_page(browser, app_url, SIZES[size])
    try:
        page.goto(app_url)
        page.wait_for_selector("#mlm-text textarea")
        open_tab(page, tab_name)
        state = views(page)
        assert not any(v["stale"] or v["marked"] for v in state.values()), state  # the page opens current

        # another model (where the tab has two): the main view is recomputed with it, the views
        # under it are marked; the button makes them current again
        model = panel(page).get_by_role("combobox", name="Model").input_value()
        offered = menu_models(dash, task)
        other = next((m for m in dash.store.models_for(task) if m != model and m in offered), None)
        if other is not None:
            n = computed(page, main)
            choose_model(page, other)
            shows_current(page, dash, tab_id, main, other, n)
            assert_current_or_marked(page, below, f"model {model} -> {other}", below)
            model = other
            n = computed(page, main)
            panel(page).get_by_role("button", name=button, exact=True).click()
            shows_current(page, dash, tab_id, main, model, n)

        # typing: marked at once, without a request; the button recomputes
        target = panel(page).locator(box) if box else panel(page).locator("textarea").first
        target.press("End")
        page.keyboard.type(" again")
        assert_current_or_marked(page, [main, *below], "typed", below)
        # the line is drawn above the view's first element on the page
        line = panel(page).locator(f".bl-view-{main}[data-stale]")
        assert line.count() == 1 and line.bounding_box()["height"] > 0
        tops = (
            panel(page).locator(f".bl-view-{main}").evaluate_all("els => els.map(e => e.getBoundingClientRect().top)")
        )
        assert line.bounding_box()["y"] <= min(tops) + 1, tops
        n = computed(page, main)
        panel(page).get_by_role("button", name=button, exact=True).click()
        shows_current(page, dash, tab_id, main, model, n)

        # another example (the first is the page's opening text, which the panels were computed
        # from): its text is not what any view was computed from
        examples = panel(page).locator(".gallery-item, button.gallery-item, tr.tr-body")
        if examples.count() > 1:
            examples.nth(1).click()
            assert_current_or_marked(page, [main, *below], "example", below)
    finally:
        page.close()


def test_sliders_and_choices_recompute(browser, app_url, dash):
    """Masked LM's top k and the Training tab's x axis redraw their view when changed; the
    attribution method marks its view out of date."""
    page = offline_page(browser, app_url, SIZES["projector"])
    try:
        page.goto(app_url)
        page.wait_for_selector("#mlm-text textarea")
        open_tab(page, "Masked LM")
        before = views(page)["mlm"]["status"]
        top_k = panel(page).locator("input[aria-label='number input for top k']")
        top_k.fill("3")
        top_k.press("Enter")
        page.wait_for_function("document.querySelectorAll('#mlm-bars g.point').length === 3")
        assert not views(page)["mlm"]["stale"], before
        # the attribution's method: marked
        open_accordion(page, WHY)
        panel(page).get_by_label("gradient x input").check()
        assert_current_or_marked(page, ["mlm-why"], "method")

        open_tab(page, "Training")
        state = views(page)
        if state.get("train-curves", {}).get("status", "").startswith("no training runs"):
            pytest.skip("no training run to draw here")
        panel(page).get_by_label("step").check()
        page.wait_for_function(
            "[...document.querySelectorAll('#training-curves .xtitle')].some(e => /step/i.test(e.textContent))"
        )
        assert not views(page)["train-curves"]["stale"]
    finally:
        page.close()


def test_a_link_opens_current_views(browser, app_url, dash):
    """A link with its own text: the tab's main view is computed for it and shown as current; the
    panels under it, drawn for the page's own example, are marked out of date."""
    from urllib.parse import quote

    page = offline_page(browser, app_url, SIZES["projector"])
    try:
        text = "the captain of the [MASK] looked at me ."
        page.goto(f"{app_url.rstrip('/')}/?tab=mlm&mlm_text={quote(text)}")
        page.wait_for_function(
            "([t]) => document.querySelector('#mlm-text textarea')?.value === t", arg=[text], timeout=60_000
        )
        # the predictions for the link's text are drawn, and stay shown as current
        page.wait_for_function("document.querySelector('#mlm-filled').innerText.includes('looked')", timeout=60_000)
        state = views(page)
        assert not state["mlm"]["stale"] and not state["mlm"]["marked"], state["mlm"]
        assert_current_or_marked(page, ["mlm-lens", "mlm-why"], "a link's text", TABS["Masked LM"][5])
    finally:
        page.close()
