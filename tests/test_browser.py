"""The dashboard in a real browser: Debian's chromium, headless, driven by Playwright.

Opens the page, runs a fill-mask (typed and by clicking a word), a question-answering request and
the attention view, asserts what is visible, and saves screenshots (the README shows them):
    BERT_LAB_SCREENSHOTS=docs/images .venv/bin/python -m pytest tests/test_browser.py
Then, at 1024 x 768 (a classroom projector), measures in the page what issue 20 was about: the QA
context wraps between words, figure titles uncovered and uncut, each tab's first view drawn without
a click, model menus per task, bertviz's model view fitting its frame, the Next Sentence examples'
labels, adding a model; and saves app_1024_<tab>.png of every tab. Every page has the network
blocked: nothing may leave the machine.
Skipped when chromium is absent, except under CI (BERT_LAB_REQUIRE_BROWSER=1), where it fails.
Marked slow (a browser and a server start): `pytest -m "not slow"` leaves it out.
"""

import os
from pathlib import Path

import pytest

from tests.conftest import BUNDLED, chromium_browser

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


OUTSIDE: list[str] = []  # requests the page tried to send anywhere but the app: all blocked


@pytest.fixture(scope="module")
def browser():
    """One headless chromium for the module's pages."""
    with chromium_browser() as browser:
        yield browser


def offline_page(browser, app_url, viewport):
    """A new page (its own browser context: no cache shared with the other pages) with the network
    blocked: every request that does not go to the app's own server is aborted and recorded in
    OUTSIDE, so everything the page draws must come from the app."""
    from urllib.parse import urlparse

    own = urlparse(app_url).netloc

    def route(r):
        url = urlparse(r.request.url)
        if url.scheme in ("data", "blob", "about") or url.netloc == own:
            return r.continue_()
        OUTSIDE.append(r.request.url)
        return r.abort()

    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(60_000)
    page.route("**/*", route)
    return page


@pytest.fixture(scope="module")
def page(browser, app_url):
    """The dashboard at 1280 x 1000, the network blocked (offline_page)."""
    page = offline_page(browser, app_url, {"width": 1280, "height": 1000})
    page.goto(app_url)
    page.wait_for_selector("#mlm-text textarea")
    yield page
    page.close()


PROJECTOR = {"width": 1024, "height": 768}  # a classroom projector


@pytest.fixture(scope="module")
def narrow(browser, app_url):
    """The dashboard at 1024 x 768 (a classroom projector), the network blocked (offline_page)."""
    page = offline_page(browser, app_url, PROJECTOR)
    page.goto(app_url)
    page.wait_for_selector("#mlm-text textarea")
    yield page
    page.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    path = Path(os.environ.get("BERT_LAB_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def open_tab(page, name):
    """Select the tab and wait until it is shown. A click can land while the page scrolls (a view
    just computed is brought into view, dashboard.room) and miss the tab: it is clicked again."""
    from playwright.sync_api import TimeoutError as Timeout

    tab = page.get_by_role("tab", name=name)
    for _ in range(3):
        tab.click()
        try:
            page.wait_for_function(
                "(name) => [...document.querySelectorAll('button[role=tab]')]"
                ".some(b => b.innerText.trim() === name && b.getAttribute('aria-selected') === 'true')",
                arg=name,
                timeout=10_000,
            )
            return
        except Timeout:  # click once more
            continue
    selected = page.locator("button[role=tab][aria-selected=true]").all_inner_texts()
    raise AssertionError(f"the tab {name!r} did not open after 3 clicks; selected: {selected}")


def screenshot(page, path):
    """The whole page, the mouse moved away (no hovered button or figure toolbar in the picture)."""
    page.mouse.move(0, 0)
    page.screenshot(path=str(path), full_page=True)


def test_fill_mask_in_the_browser(page, shots):
    open_tab(page, "Masked LM")
    page.fill("#mlm-text textarea", "the captain of the [MASK] looked at me and smiled .")
    page.locator("#mlm-text textarea").press("End")
    page.keyboard.type(" ")  # typed: the opening example's results are marked out of date
    page.wait_for_function("window.blCurrent.isStale('mlm')")
    page.click("#mlm-predict")
    page.wait_for_function("!window.blCurrent.isStale('mlm')")
    page.wait_for_function("document.querySelector('#mlm-status').innerText.includes('predicted')")
    page.wait_for_selector("#mlm-bars .js-plotly-plot g.point")  # bars drawn by plotly, in the browser
    assert page.locator("#mlm-bars g.point").count() == 5
    labels = page.locator("#mlm-bars .ytick text").evaluate_all("els => els.map(e => e.textContent)")
    assert len(labels) == 5 and all(labels)
    # the best guess appears, highlighted, in the sentence
    filled = page.locator("#mlm-filled").inner_text()
    assert any(label.split(" ")[0].lstrip("…") in filled for label in labels)
    screenshot(page, shots / "app_masked_lm.png")
    # the bars' numbers, saved by the browser as a CSV file when asked (nothing written on the server)
    with page.expect_download() as saved:
        panel(page).get_by_role("button", name="⬇ the figure's data (CSV)").first.click()
    rows = Path(saved.value.path()).read_text(encoding="utf-8").splitlines()
    assert saved.value.suggested_filename == "fill_mask_bars.csv" and len(rows) == 1 + 5, rows


def test_click_a_word_to_mask_it(page):
    open_tab(page, "Masked LM")
    page.fill("#mlm-text textarea", "she walked to the village in the rain .")
    page.locator("#mlm-words").get_by_text("village", exact=True).click()
    page.wait_for_function("document.querySelector('#mlm-text textarea').value.includes('[MASK]')")
    assert page.input_value("#mlm-text textarea") == "she walked to the [MASK] in the rain ."
    page.wait_for_function("document.querySelector('#mlm-status').innerText.includes('predicted')")
    page.wait_for_selector("#mlm-bars g.point")
    assert page.locator("#mlm-bars g.point").count() == 5


def test_bad_input_shows_a_message(page):
    open_tab(page, "Masked LM")
    page.fill("#mlm-text textarea", "there is no mask in this sentence .")
    page.click("#mlm-predict")
    page.wait_for_function("document.querySelector('#mlm-status').innerText.includes('no [MASK]')")


def test_question_answering_in_the_browser(page, shots):
    open_tab(page, "Question Answering")
    context = "The Nautilus was a submarine built by Captain Nemo on a desert island. It was driven by electricity."
    page.fill("#qa-question textarea", "Who built the Nautilus?")
    page.fill("#qa-context textarea", context)
    page.locator("#qa-context textarea").press("End")
    page.keyboard.type(" ")  # typed, as a student would
    # the tab opened with its example answered; typing marks it out of date until Answer is pressed
    page.wait_for_function("document.querySelector('#qa-status').closest('.bl-stale') !== null")
    page.click("#qa-answer")
    page.wait_for_function("!window.blCurrent.isStale('qa')")
    page.wait_for_function("document.querySelector('#qa-status').innerText.includes('answer:')")
    status = page.locator("#qa-status").text_content()  # with its details (one click away on the page)
    answer = status.split("answer: “", 1)[1].split("”", 1)[0]  # the status goes on after the answer
    assert answer and answer in context
    assert "P(start = [CLS])" in status and "fine-tuned from" in status
    assert answer in page.locator("#qa-span").inner_text()
    screenshot(page, shots / "app_question_answering.png")


def test_attention_in_the_browser(page, shots):
    open_tab(page, "Attention")
    page.get_by_role("button", name="Show attention").click()
    page.wait_for_function("[...document.querySelectorAll('.bl-status')].some(e => e.innerText.includes('layers x'))")
    page.wait_for_selector(".js-plotly-plot .heatmaplayer")  # the maps, drawn by plotly offline
    # click a token: its row and column are outlined and shown as bars
    page.locator("#att-tokens").get_by_text("sitting", exact=True).click()
    page.wait_for_function("[...document.querySelectorAll('.bl-status')].some(e => e.innerText.includes('its row'))")
    screenshot(page, shots / "app_attention.png")
    # bertviz's head view draws with the network blocked (d3 and jQuery come from the app)
    page.get_by_text("bertviz: the head, model and neuron views").click()
    page.get_by_role("button", name="Show bertviz").click()
    frame = page.frame_locator("iframe[srcdoc]")
    frame.locator("svg text").first.wait_for()
    assert frame.locator("svg text").count() > 5
    assert OUTSIDE == [], OUTSIDE


def test_a_shared_link_opens_the_tab_with_its_inputs(page, app_url):
    """The link button's address restores the tab and the inputs in a new page (more:
    tests/test_links_short.py)."""
    open_tab(page, "Next Sentence")
    box = page.locator("#share-link input")
    page.get_by_role("button", name="Link to this tab and its inputs").click()
    page.wait_for_function("document.querySelector('#share-link input').value.includes('/?nsp')")
    url = box.input_value()
    assert url.startswith(app_url.rstrip("/") + "/?nsp"), url
    other = page.context.browser.new_page()
    other.goto(url.split("?")[0] + "?nsp&a=the+ship+sailed+at+dawn+.&ignored=")
    other.wait_for_function(
        "[...document.querySelectorAll('textarea')].some(t => t.value === 'the ship sailed at dawn .')"
    )
    assert other.get_by_role("tab", name="Next Sentence").get_attribute("aria-selected") == "true"
    other.close()


# ----------------------------------------------------------------------------------------------
# At 1024 px wide (a classroom projector): each visual item of issue 20, measured in the page.
# The new screenshots are app_1024_<tab>.png.
# ----------------------------------------------------------------------------------------------
def open_accordion(page, title):
    """Open an accordion (a click on an open one would close it)."""
    button = page.locator("button.label-wrap", has_text=title)
    if "open" not in (button.get_attribute("class") or "").split():
        button.click()


def panel(page):
    """The open tab's panel."""
    return page.locator("[role=tabpanel]:visible")


# Every run of non-space characters of a HighlightedText's pieces, with where it is drawn: the
# distinct tops of its boxes (a word split over two lines has two), its left and right edges,
# whether the text goes on with a space, and whether it is in a highlighted (labelled) piece.
WORDS_JS = """(block) => {
  const pieces = [...block.querySelectorAll('.textfield .text')];
  const all = pieces.map(p => p.textContent).join('');
  const words = [];
  let offset = 0;
  for (const piece of pieces) {
    const walker = document.createTreeWalker(piece, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const rects = [...range.getClientRects()].filter(r => r.width > 0 && r.height > 0);
        const tops = [];
        for (const r of rects) if (!tops.some(t => Math.abs(t - r.top) < 3)) tops.push(r.top);
        const end = offset + m.index + m[0].length;
        words.push({word: m[0], tops, top: Math.min(...rects.map(r => r.top)),
                    left: Math.min(...rects.map(r => r.left)), right: Math.max(...rects.map(r => r.right)),
                    space_after: end < all.length && /\\s/.test(all[end]),
                    answer: piece.closest('.token').classList.contains('highlighted')});
      }
      offset += node.data.length;
    }
  }
  return {words, shown: pieces.map(p => p.innerText).join('')};
}"""


def test_question_answering_context_wraps_between_words_at_1024(narrow, shots):
    """A long context (the example's, four times) answered at 1024 px: no word is cut over two
    lines, every space of the context shows (as text and as a gap between the words), and the
    highlighted answer shares its line with the words around it."""
    from dashboard.help import QA_CONTEXT

    page, context = narrow, " ".join([QA_CONTEXT] * 4)
    open_tab(page, "Question Answering")
    page.fill("#qa-question textarea", "What did Mr. Bingley rent?")
    page.fill("#qa-context textarea", context)
    page.locator("#qa-context textarea").press("End")
    page.keyboard.type(" ")  # typed: the old answer is marked out of date
    page.wait_for_function("window.blCurrent.isStale('qa')")
    page.click("#qa-answer")
    page.wait_for_function("!window.blCurrent.isStale('qa')")
    page.wait_for_function("document.querySelector('#qa-status').innerText.includes('answer:')")
    page.wait_for_function("document.querySelectorAll('#qa-span .textfield .text').length > 100")
    drawn = page.locator("#qa-span").evaluate(WORDS_JS)
    words, shown = drawn["words"], drawn["shown"]
    # the visible text is the context, spaces included
    assert " ".join(shown.split()) == " ".join(context.strip().split())
    split = [w["word"] for w in words if len(w["tops"]) != 1]
    assert not split, f"words cut over two lines at 1024 px: {split}"
    lines = sorted({round(w["top"]) for w in words})
    assert len(lines) >= 3, lines  # a long context: it does wrap
    # where the context has a space, two words on one line are drawn apart
    for w, nxt in zip(words, words[1:]):
        if w["space_after"] and abs(w["top"] - nxt["top"]) < 3:
            assert nxt["left"] - w["right"] >= 2, (w["word"], nxt["word"], nxt["left"] - w["right"])
    # the answer (mid-sentence: "rented Netherfield Park.") is not alone on its line
    first = next(i for i, w in enumerate(words) if w["answer"])
    answer = [w for w in words if w["answer"]]
    assert 0 < first and any(not w["answer"] for w in words[first:]), "the answer is not mid-sentence"
    on_its_line = [w["word"] for w in words if not w["answer"] and abs(w["top"] - words[first]["top"]) < 3]
    assert on_its_line, f"the answer {[w['word'] for w in answer]} is alone on its line"
    print(
        f"\nQA context at 1024 px: {len(words)} words on {len(lines)} lines, none cut; the answer shares its "
        f"line with {len(on_its_line)} words"
    )
    screenshot(page, shots / "app_1024_question_answering.png")
    assert OUTSIDE == [], OUTSIDE


# A figure's title, measured where it is drawn: its box and the figure's, its font size, what of
# its Gradio block outside the figure (a label badge, a button, a progress overlay) is drawn over
# its box, and at five points across its middle what is drawn above it (every element made
# hit-testable for the measure: a Gradio badge and plotly's titles have pointer-events: none).
# An element counts when it is drawn: not display: none, hidden or fully transparent.
TITLE_JS = """(plot) => {
  const title = plot.querySelector('.gtitle');
  if (!title) return null;
  title.scrollIntoView({block: 'center'});
  const r = title.getBoundingClientRect(), box = plot.getBoundingClientRect();
  const block = plot.closest('.block');
  const name = e => e.tagName + '.' + (e.className.baseVal ?? e.className);
  const drawn = e => {
    for (let x = e; x && x !== document.body; x = x.parentElement) {
      const s = getComputedStyle(x);
      if (s.display === 'none' || s.visibility === 'hidden' || +s.opacity === 0) return false;
    }
    const b = e.getBoundingClientRect();
    return b.width > 1 && b.height > 1;
  };
  const overlapping = [...block.querySelectorAll('*')].filter(e => !plot.contains(e) && !e.contains(plot)).filter(e => {
    const b = e.getBoundingClientRect();
    return b.left < r.right && b.right > r.left && b.top < r.bottom && b.bottom > r.top && drawn(e);
  }).map(name);
  const style = document.createElement('style');
  style.textContent = '* {pointer-events: auto !important}';
  document.head.append(style);
  const above = [];
  for (const f of [0.1, 0.3, 0.5, 0.7, 0.9]) for (const g of [0.25, 0.5, 0.75]) {  // a title may wrap: 2 lines
    const stack = document.elementsFromPoint(r.left + f * r.width, r.top + g * r.height);
    const i = stack.findIndex(e => title.contains(e));
    above.push(i < 0 ? null : stack.slice(0, i).filter(e => !plot.contains(e) && drawn(e)).map(name));
  }
  style.remove();
  const texts = [title, ...title.querySelectorAll('text, tspan')];
  return {text: title.textContent, title: [r.left, r.top, r.right, r.bottom],
          plot: [box.left, box.top, box.right, box.bottom],
          font: parseFloat(getComputedStyle(title).fontSize),
          smallest: Math.min(...texts.map(t => parseFloat(getComputedStyle(t).fontSize))),
          overlapping, above, id: block.id, width: window.innerWidth};
}"""
# the progress overlays of a page's opening event, faded out
NO_OVERLAY_JS = """(plot) => [...plot.closest('.block').querySelectorAll('[data-testid=status-tracker]')]
    .every(e => getComputedStyle(e).display === 'none' || +getComputedStyle(e).opacity === 0)"""


# For each x axis of a figure whose tick labels stand upright (turned 90 degrees): how far the
# closest two consecutive labels run into each other (px; 0 or less: apart)
UPRIGHT_TICKS_JS = """(plot) => [...plot.querySelectorAll('g.xaxislayer-above')].map(axis => {
  const boxes = [...axis.querySelectorAll('text')].map(t => t.getBoundingClientRect())
    .filter(b => b.width > 0 && b.height > b.width).sort((a, b) => a.left - b.left);
  return Math.max(-99, ...boxes.slice(1).map((b, i) => boxes[i].right - b.left));
})"""


def check_titles(page, plots):
    """Every figure's title is inside its figure, readable (14 px or more, a subtitle line 11 px
    or more), inside the window, and nothing is drawn over it."""
    titles = []
    for i in range(plots.count()):
        plots.nth(i).element_handle().wait_for_element_state("stable")
        page.wait_for_function(NO_OVERLAY_JS, arg=plots.nth(i).element_handle(), timeout=10_000)
        t = plots.nth(i).evaluate(TITLE_JS)
        assert t is not None, f"figure {i} has no title"
        where = f"figure {i} ({t['id'] or 'no id'}) title {t['text'][:50]!r}"
        (left, top, right, bottom), (pl, pt, pr, pb) = t["title"], t["plot"]
        assert pl - 1 <= left and right <= pr + 1 and pt - 1 <= top and bottom <= pb + 1, f"{where} is cut: {t}"
        assert 0 <= left and right <= t["width"], f"{where} leaves the window: {t}"
        assert t["font"] >= 14 and t["smallest"] >= 11, f"{where}: {t['font']} px, a part {t['smallest']} px"
        assert not t["overlapping"], f"{where} is covered by {t['overlapping']}"
        hits = [a for a in t["above"] if a is not None]
        assert hits, f"{where}: no point of it could be reached: {t}"
        assert all(a == [] for a in hits), f"{where} is covered by {hits}"
        titles.append(t["text"])
    return titles


# the long views (the ablation, bertviz's) may wait behind a notebook run on the other core: a bound
# for a busy machine, not a speed target
SLOW_VIEW_MS = 120_000


def show_ablation(page):
    """Attention tab: the ablation figure drawn (silence each head), once per page."""
    open_tab(page, "Attention")
    if page.locator("#att-ablation .heatmaplayer").count():
        return
    open_accordion(page, "Silence one head at a time (Michel et al. 2019)")
    page.get_by_role("button", name="Silence each head").click()
    page.wait_for_selector("#att-ablation .heatmaplayer", timeout=SLOW_VIEW_MS)
    page.wait_for_function(
        "document.querySelector('#abl-status').textContent.includes('baseline loss')", timeout=SLOW_VIEW_MS
    )


def test_attention_figures_at_1024(narrow, dash):
    """The ablation figure's cells show at most 3 decimals, and no figure of the Attention tab
    (one head, the layer's heads, the head statistics, the ablation) has its title covered by a
    label badge or cut off at 1024 px."""
    import re

    page = narrow
    open_tab(page, "Attention")
    page.wait_for_selector("#att-stats .heatmaplayer")
    show_ablation(page)
    cells = page.locator("#att-ablation .heatmaplayer text").evaluate_all("els => els.map(e => e.textContent)")
    model, _ = dash.store.get(dash.store.default_model("attention"))  # the tab's model
    assert len(cells) == model.config.num_hidden_layers * model.config.num_attention_heads, cells
    long = [c for c in cells if not re.fullmatch(r"[+\-−]?\d+(\.\d{1,3})?", c.strip())]
    assert not long, f"ablation cells with more than 3 decimals (or not a number): {long}"
    plots = panel(page).locator(".js-plotly-plot")
    assert plots.count() == 4, plots.count()  # one head, the layer's heads, statistics, ablation
    assert page.locator("#att-ablation .js-plotly-plot, #att-stats .js-plotly-plot").count() == 2
    titles = check_titles(page, plots)
    # the layer's heads side by side: their tokens (turned upright) do not run into each other
    grid = plots.filter(has=page.locator(".gtitle", has_text="(rows: queries"))
    overlaps = grid.evaluate(UPRIGHT_TICKS_JS)
    assert overlaps and min(overlaps) > -99, overlaps  # labels upright: the measure applies
    assert max(overlaps) <= 1, f"the layer grid's token labels overlap by {max(overlaps):.1f} px"
    print(
        f"\nablation cells at 1024 px: {cells}; titles clear: {[t[:40] for t in titles]}; layer grid's token "
        f"labels: {len(overlaps)} axes, closest {max(overlaps):.1f} px apart"
    )
    assert OUTSIDE == [], OUTSIDE


FIRST_VIEW_S = 30  # each tab's first view is there without a click (a bound for a busy CI machine, not a speed target)
# the Masked LM bars come with the page (checked in its config below); how soon after
# DOMContentLoaded the browser draws them is a measurement, printed here and given with its machine
# in docs/performance.md ("The first view on a fresh page"), not a timed assertion: it moved from
# 1.8-3.0 s to 8.0 s with the machine and what else ran on it
FIRST_BARS_TIMEOUT_MS = 20_000


def test_each_tab_drawn_on_load_at_1024(browser, app_url, shots):
    """A fresh page (its own browser context, nothing cached) at 1024 px: without pressing any
    button, each tab shows its first view within a few seconds, and the Masked LM bars (in the
    page's initial config) are drawn soon after the page's HTML is read (timed on a server that
    has served a page before, as in a classroom: the first page after start-up is slower)."""
    warm = offline_page(browser, app_url, PROJECTOR)
    warm.goto(app_url)
    warm.wait_for_selector("#mlm-bars g.point")
    warm.close()
    page = offline_page(browser, app_url, PROJECTOR)
    try:
        page.goto(app_url, wait_until="domcontentloaded")
        drawn_at = page.wait_for_function(
            "() => document.querySelectorAll('#mlm-bars g.point').length === 5 && performance.now()",
            polling="raf",
            timeout=FIRST_BARS_TIMEOUT_MS,
        ).json_value()
        loaded_at = page.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
        seconds = (drawn_at - loaded_at) / 1000
        print(
            f"\nMasked LM bars drawn {seconds:.2f} s after DOMContentLoaded ({drawn_at / 1000:.2f} s after "
            f"navigation start) at 1024 px"
        )
        # they come with the page: the figure is in its initial config, not computed for this page
        config = page.evaluate("async () => (await fetch('config')).json()")
        bars = [c for c in config["components"] if c.get("props", {}).get("elem_id") == "mlm-bars"]
        assert bars and bars[0]["props"].get("value"), "the Masked LM bars are not in the page's config"
        screenshot(page, shots / "app_1024_masked_lm.png")
        wait = FIRST_VIEW_S * 1000

        open_tab(page, "Next Sentence")
        label = panel(page).locator("[data-testid=label-output-value]")
        label.wait_for(timeout=wait)
        assert label.inner_text().strip() in ("IsNext", "NotNext")
        screenshot(page, shots / "app_1024_next_sentence.png")

        open_tab(page, "Attention")
        panel(page).locator(".js-plotly-plot .heatmaplayer").first.wait_for(timeout=wait)
        page.wait_for_selector("#att-stats .heatmaplayer", timeout=wait)

        open_tab(page, "Question Answering")
        page.wait_for_function("document.querySelector('#qa-status').innerText.includes('answer:')", timeout=wait)
        assert page.locator("#qa-span .highlighted").count() == 1

        open_tab(page, "Classify")
        label = panel(page).locator("[data-testid=label-output-value]")
        label.wait_for(timeout=wait)
        assert label.inner_text().strip()
        screenshot(page, shots / "app_1024_classify.png")

        open_tab(page, "Training")
        page.wait_for_selector("#training-curves .js-plotly-plot .scatterlayer .trace", timeout=wait)
        assert page.locator("#training-curves .scatterlayer .trace").count() >= 2  # loss and accuracy
        page.wait_for_selector("#training-watch .virtual-row:visible", timeout=wait)  # Gradio's rows
        header = [h.strip() for h in page.locator("#training-watch [role=columnheader]").all_inner_texts()]
        assert header == ["step", "[MASK] 1"], header
        rows = page.locator("#training-watch .virtual-row:visible")
        assert rows.count() >= 2 and rows.first.inner_text().split()[0].isdigit(), rows.all_inner_texts()
        screenshot(page, shots / "app_1024_training.png")

        open_tab(page, "Model")
        page.wait_for_function(
            "[...document.querySelectorAll('[role=tabpanel]')].some(p => p.offsetParent && "
            "p.innerText.includes('serves:') && p.innerText.includes('parameters:'))",
            timeout=wait,
        )
        assert "layers L = " in panel(page).inner_text()
        screenshot(page, shots / "app_1024_model.png")
    finally:
        page.close()
    assert OUTSIDE == [], OUTSIDE


def menu_options(page):
    """The open tab's model menu, opened: the models it lists."""
    menu = panel(page).get_by_role("combobox", name="Model")
    menu.click()
    options = page.locator("ul[role=listbox] li[role=option]:visible")
    options.first.wait_for()
    listed = options.evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    page.keyboard.press("Escape")
    return listed


def test_model_menus_list_only_the_tabs_models_at_1024(narrow, dash):
    """A tab's model menu lists the models that serve it: Question Answering only QA models (not
    the pre-trained bert-lab-classroom), Masked LM the models with an MLM head (not a SQuAD one)."""
    page = narrow
    open_tab(page, "Question Answering")
    qa = menu_options(page)
    assert qa and set(qa) <= set(dash.store.models_for("answer")), qa  # other tests may add models later
    assert "models/bert-lab-classroom" not in qa and "models/bert-lab-squad" in qa, qa
    open_tab(page, "Masked LM")
    mlm = menu_options(page)
    assert mlm and set(mlm) <= set(dash.store.models_for("fill_mask")), mlm
    assert "models/bert-lab-classroom" in mlm and "models/bert-lab-squad" not in mlm, mlm
    assert "models/bert-lab-classroom-modern" in mlm and "models/bert-lab-classroom-modern" not in qa
    print(f"\nQA menu: {qa}\nMasked LM menu: {mlm}")
    assert OUTSIDE == [], OUTSIDE


def test_a_model_menu_has_its_own_line_on_a_phone(browser, app_url):
    """At 390 px the Masked LM tab's model menu takes the whole width of its row, so a long model
    name is read whole, not cut to half beside the sliders."""
    page = offline_page(browser, app_url, {"width": 390, "height": 844})
    page.goto(app_url)
    page.wait_for_selector("#mlm-text textarea")
    menu = page.locator(".bl-model-menu:visible").first
    box, row = menu.bounding_box(), menu.locator("xpath=..").bounding_box()
    value = menu.locator("input").input_value()
    page.close()
    assert value == BUNDLED, value
    assert box["width"] >= 0.95 * row["width"], (box, row)
    assert OUTSIDE == [], OUTSIDE


def bertviz_model_view(page):
    """Attention tab: bertviz's model view drawn; its iframe and the frame inside."""
    open_tab(page, "Attention")
    shown = "[...document.querySelectorAll('.bl-status')].some(e => e.innerText.includes('bertviz model view'))"
    if not page.evaluate(shown):
        open_accordion(page, "bertviz: the head, model and neuron views")
        panel(page).get_by_role("radio", name="model", exact=True).check()
        page.get_by_role("button", name="Show bertviz").click()
        page.wait_for_function(shown, timeout=SLOW_VIEW_MS)
    iframe = panel(page).locator("iframe[srcdoc]")
    frame = iframe.element_handle(timeout=SLOW_VIEW_MS).content_frame()
    frame.wait_for_selector("rect.attn_background", timeout=SLOW_VIEW_MS)
    return iframe, frame


def test_bertviz_model_view_fits_at_1024(narrow, dash, shots):
    """bertviz's model view at 1024 px: the frame is tall enough that nothing scrolls inside it
    (every layer is in view), and each thumbnail is at most 7 px per token high (bertviz's own
    size would be 42 px per token for a 2-head model)."""
    page = narrow
    show_ablation(page)  # the screenshot shows it too
    iframe, frame = bertviz_model_view(page)
    frame_height = iframe.evaluate("f => f.clientHeight")
    inside = frame.evaluate("() => [document.documentElement.scrollHeight, window.innerHeight]")
    assert inside[0] <= frame_height + 4, f"the model view scrolls inside its frame: {inside[0]} px in {frame_height}"
    thumbs = frame.evaluate("""() => [...document.querySelectorAll('rect.attn_background')].map(r => {
        const rows = [...r.parentNode.querySelectorAll('g[source-index]')]
            .map(s => +s.querySelector('line').getAttribute('y1'));
        return {height: +r.getAttribute('height'), tokens: rows.length, pitch: rows.length > 1 ? rows[1] - rows[0] : 0};
    })""")
    model, _ = dash.store.get(dash.store.default_model("attention"))
    assert len(thumbs) == model.config.num_hidden_layers * model.config.num_attention_heads, thumbs
    for t in thumbs:
        assert t["tokens"] > 1 and t["pitch"] <= 7.01, t
        assert t["height"] <= 7 * t["tokens"] + 12, t  # 7 px per token + bertviz's 2 x 5 px padding
    print(
        f"\nbertviz model view at 1024 px: frame {frame_height} px, page inside {inside[0]} px, thumbnails "
        f"{thumbs[0]['height']} px for {thumbs[0]['tokens']} tokens ({thumbs[0]['pitch']} px per token)"
    )
    iframe.scroll_into_view_if_needed()
    screenshot(page, shots / "app_1024_attention.png")
    assert OUTSIDE == [], OUTSIDE


def test_bertviz_model_view_fits_the_width_at_1024(narrow):
    """Nothing of the model view is out of its frame on the right at 1024 px."""
    iframe, frame = bertviz_model_view(narrow)
    width = iframe.evaluate("f => f.clientWidth")
    right = frame.evaluate(
        "() => Math.max(...[...document.querySelectorAll('svg')].map(s => s.getBoundingClientRect().right))"
    )
    assert right <= width, f"the model view is {right:.0f} px wide in a {width} px frame"


def test_next_sentence_examples_say_what_each_pair_is_at_1024(narrow):
    """The Next Sentence examples are labelled with what each pair is, readable at 1024 px."""
    from dashboard.help import NSP_EXAMPLE_LABELS

    page = narrow
    open_tab(page, "Next Sentence")
    examples = panel(page).locator("button.gallery-item")
    assert examples.count() == len(NSP_EXAMPLE_LABELS) == 4
    shown = examples.all_inner_texts()
    for text, label in zip(shown, NSP_EXAMPLE_LABELS):
        assert text.startswith(label + ":"), (text, label)
    assert {"continues A (IsNext)", "from another book (NotNext)"} == set(NSP_EXAMPLE_LABELS)
    for i in range(examples.count()):
        assert examples.nth(i).is_visible()
    print(f"\nNext Sentence examples: {shown}")
    assert OUTSIDE == [], OUTSIDE


def test_adding_a_model_confirms_it_at_1024(narrow):
    """Model tab: a mistyped folder is named as such (not a failed Hub download), and a model
    that loads is confirmed with the tasks it serves."""
    page = narrow
    open_tab(page, "Model")
    # the Add button sits beside the box it adds from (not up by the box's two-line label)
    box = page.locator("#model-add-path textarea").bounding_box()
    button = page.locator("#model-add").bounding_box()
    assert box["y"] <= button["y"] + button["height"] / 2 <= box["y"] + box["height"] + 16, (box, button)
    page.fill("#model-add-path textarea", "runs/nonexistent")
    page.click("#model-add")
    page.wait_for_function("document.querySelector('#model-status').innerText.includes('no such folder')")
    status = page.locator("#model-status").inner_text()
    assert "Hub" not in status and "runs/nonexistent" in status, status
    page.fill("#model-add-path textarea", "models/bert-lab-sst2")
    page.click("#model-add")
    page.wait_for_function("document.querySelector('#model-status').innerText.trim().startsWith('added')")
    status = page.locator("#model-status").inner_text().strip()
    assert status == "added models/bert-lab-sst2: it serves classify; every menu lists it", status
    assert OUTSIDE == [], OUTSIDE


def test_first_views_stay_visible_while_the_queue_is_busy_at_1024(browser, app_url):
    """A page opened without a link asks the server for the page and its session only (its opening
    runs in the browser). A classroom's busy server: a link's page sends its queued opening event, which
    waits (held here). The first views came with the page, so none of them may be hidden behind a
    progress overlay meanwhile."""
    plain = offline_page(browser, app_url, PROJECTOR)
    asked = []
    plain.on("request", lambda r: asked.append(r.url) if "/gradio_api/" in r.url and r.method == "POST" else None)
    try:
        plain.goto(app_url)
        plain.wait_for_selector("#mlm-bars g.point")
        plain.wait_for_timeout(2000)
        assert len(asked) == 1 and asked[0].endswith("/gradio_api/run/predict"), asked  # the session
    finally:
        plain.close()
    held = []
    page = offline_page(browser, app_url, PROJECTOR)
    page.route("**/gradio_api/queue/join*", lambda route: held.append(route))  # tried before offline_page's route
    try:
        page.goto(app_url + "?nsp_a=the+ship+sailed+at+dawn+.")
        page.wait_for_selector("#mlm-bars g.point")
        page.wait_for_timeout(2000)
        assert held, "the link's page sent no queued event"
        covered = page.evaluate("""() => [...document.querySelectorAll('[data-testid=status-tracker]')]
            .filter(e => e.offsetParent && +getComputedStyle(e).opacity > 0.5 && e.getBoundingClientRect().height > 20)
            .map(e => e.parentElement.id || e.parentElement.className)""")
        assert not covered, f"first views behind a progress overlay while the queue is busy: {covered}"
    finally:
        for route in held:
            route.continue_()
        page.close()


# The Tag tab's colours as the browser draws them: each highlighted word's category, its type written
# beside it (not said by colour alone) and its background; the legend's entries (none: the words
# carry their types).
TAG_VIEW_JS = """(block) => {
  const bg = e => getComputedStyle(e).backgroundColor;
  const words = [...block.querySelectorAll('.textfield .token')].filter(t => t.innerText.trim()).map(t => ({
    text: t.querySelector('.text').innerText.trim(), highlighted: t.classList.contains('highlighted'), color: bg(t),
    label: t.querySelector('.label')?.innerText.trim() ?? null}));
  const legend = [...block.querySelectorAll('[data-testid="highlighted-text:category-legend"] > *')]
    .map(e => ({name: e.innerText.trim(), color: bg(e), visible: e.getBoundingClientRect().width > 0}));
  return {words, legend};
}"""


def rgb(css: str) -> tuple[int, ...]:
    """A computed colour's red, green and blue ("rgba(167, 139, 250, 0.5)" -> (167, 139, 250))."""
    return tuple(int(float(x)) for x in css[css.index("(") + 1 : -1].split(",")[:3])


def test_tag_words_at_1024(browser, shots):
    """The Tag tab at 1024 px on the bundled models (it starts on minilm-ner): without a click, the example's words are
    drawn in their tags' colours (one colour per entity type, O words plain) with a legend of the
    model's types, and the table lists every word with its pieces, tag, probability and runner-up;
    a click on a word shows its probabilities. Nothing leaves the machine."""
    from dashboard import LAUNCH_OPTIONS, Dashboard, Settings
    from dashboard.help import ENTITY_COLORS, TAG_EXAMPLES
    from tests.conftest import ROOT

    dash = Dashboard(Settings(model_roots=[ROOT / "models"]))
    assert dash.store.default_model("tag") == "models/minilm-ner"
    demo = dash.build()
    _, url, _ = demo.launch(
        prevent_thread_lock=True, server_name="127.0.0.1", server_port=None, quiet=True, **LAUNCH_OPTIONS
    )
    page = offline_page(browser, url, PROJECTOR)
    try:
        page.goto(url)
        page.wait_for_selector("#mlm-text textarea")
        open_tab(page, "Tag words")
        page.wait_for_selector("#tag-words .textfield .token.highlighted", timeout=FIRST_VIEW_S * 1000)
        status = page.locator("#tag-status").inner_text()
        assert "words" in status and "entities" in status, status
        drawn = page.locator("#tag-words").evaluate(TAG_VIEW_JS)
        words, legend = drawn["words"], drawn["legend"]
        example = TAG_EXAMPLES[0][0]
        assert " ".join(w["text"] for w in words).replace(" ", "") == example.replace(" ", ""), words
        # each tagged word says its entity type in text beside it, in the type's fixed colour
        model, _ = dash.store.get(dash.store.default_model("tag"))
        types = list(dict.fromkeys(t[2:] for t in model.config.id2label.values() if t != "O"))
        assert legend == []  # the words are their own legend
        colors = {}
        for w in words:
            if w["highlighted"]:
                colors.setdefault(w["label"], rgb(w["color"]))
        assert colors and set(colors) <= set(types), colors
        assert len(set(colors.values())) == len(colors), colors  # one colour per type
        fixed = {
            t: tuple(int(ENTITY_COLORS[t][i : i + 2], 16) for i in (1, 3, 5)) for t in colors if t in ENTITY_COLORS
        }
        assert fixed and all(colors[t] == c for t, c in fixed.items()), (colors, fixed)  # PER, LOC, ORG: fixed
        # the table: a row per word, its pieces joined; the tagged words drawn in their type's colour
        page.wait_for_selector("#tag-table .virtual-row:visible")
        header = [h.strip() for h in page.locator("#tag-table [role=columnheader]").all_inner_texts()]
        assert header == ["word", "pieces", "tag", "probability", "runner-up", "runner-up probability"], header
        rows = dash.tab("tag").tag(dash.store.default_model("tag"), example)[1]["data"]
        assert [w["text"] for w in words] == [r[0] for r in rows]
        for w, row in zip(words, rows):
            tag = row[2]
            assert w["highlighted"] == (tag != "O"), (w, tag)
            if tag != "O":  # drawn in its type's colour (B- and I- alike), its type written beside it
                assert rgb(w["color"]) == colors[tag[2:]] and w["label"] == tag[2:], (w, tag, colors)
        print(
            f"\nTag tab at 1024 px ({dash.store.default_model('tag')}): {len(words)} words, "
            f"{sum(w['highlighted'] for w in words)} highlighted; types {colors}; "
            f"status: {status}"
        )
        # a click on a highlighted word (the one of most pieces): its tag's probability, the runner-up,
        # and where the tag is read (its first piece)
        word, pieces = max(((r[0], r[1].split()) for r in rows if r[2] != "O"), key=lambda wp: len(wp[1]))
        page.locator("#tag-words .textfield .token.highlighted", has_text=word).first.click()
        page.wait_for_function(f"document.querySelector('#tag-detail').innerText.includes('“{word}”')")
        detail = page.locator("#tag-detail").inner_text()
        assert "runner-up" in detail and (len(pieces) == 1 or f"read at “{pieces[0]}”" in detail), detail
        screenshot(page, shots / "app_1024_tag.png")
    finally:
        page.close()
        demo.close()
    assert OUTSIDE == [], OUTSIDE


def test_logit_lens_at_1024(browser, app_url, shots):
    """The Masked LM tab's "layer by layer" accordion at 1024 px: opened, it shows the example's
    figure already drawn (a heatmap row per layer with each cell's token written in, the final
    answer's line beside it); a new sentence and a click redraw it. Nothing leaves the machine."""
    page = offline_page(browser, app_url, PROJECTOR)
    try:
        page.goto(app_url)
        page.wait_for_selector("#mlm-text textarea")
        page.get_by_text("Layer by layer: the guess at every layer (logit lens)").click()
        page.wait_for_selector("#mlm-lens .heatmaplayer text")
        cells = page.locator("#mlm-lens .heatmaplayer text").evaluate_all("els => els.map(e => e.textContent)")
        assert len(cells) >= 3 * 5, cells  # embeddings + 2 layers of the classroom model, 5 guesses each
        page.fill("#mlm-text textarea", "she opened the [MASK] and walked into the garden .")
        page.get_by_role("button", name="Predict").click()
        page.wait_for_function("document.querySelector('#mlm-filled').innerText.includes('she')")
        page.get_by_role("button", name="Read every layer").click()
        page.wait_for_function("document.querySelector('#mlm-lens-status').innerText.includes('“door”')")
        page.wait_for_function(
            "[...document.querySelectorAll('#mlm-lens .heatmaplayer text')].some(t => t.textContent === 'door')"
        )
        status = page.locator("#mlm-lens-status").inner_text()
        assert "is the top guess from" in status, status
        page.locator("#mlm-lens").scroll_into_view_if_needed()
        screenshot(page, shots / "app_1024_logit_lens.png")
    finally:
        page.close()
    assert OUTSIDE == [], OUTSIDE


def test_probing_at_1024(browser, app_url, shots):
    """The Model tab's "What each layer knows (probing)" accordion at 1024 px: opened and run, it
    draws the accuracy by layer of the classroom model with error bars, its random-weights control
    and the majority baseline, and the status names the split (UD EWT dev -> test). Offline."""
    from lab.inspect import probing

    if probing.ud_data_missing():
        pytest.skip(probing.ud_data_missing())
    page = offline_page(browser, app_url, PROJECTOR)
    try:
        page.goto(app_url)
        page.wait_for_selector("#mlm-text textarea")
        open_tab(page, "Model")
        page.locator("#model-probe-box").get_by_text("What each layer knows (probing)").click()
        page.locator("#model-probe-button").click()
        page.wait_for_function(
            "document.querySelector('#model-probe-status').innerText.includes('best layer')", timeout=120_000
        )
        page.wait_for_selector("#model-probe .scatterlayer .trace")
        legend = page.locator("#model-probe .legendtext").evaluate_all("els => els.map(e => e.textContent)")
        assert any("random weights" in t for t in legend) and any("majority" in t for t in legend), legend
        assert page.locator("#model-probe .errorbar").count() >= 2  # the intervals, drawn
        status = page.locator("#model-probe-status").text_content()  # with its details
        assert "trained on UD EWT dev" in status and "no train split here" in status, status
        print(f"\nProbing at 1024 px: legend {legend}; status: {status}")
        # with the training snapshots: a line per checkpoint, the status compares the first and last
        page.locator("#model-probe-snapshots input").check()
        page.locator("#model-probe-button").click()
        page.wait_for_function(
            "document.querySelector('#model-probe-status').innerText.includes('snapshots: step 0')", timeout=180_000
        )
        page.wait_for_function(
            "[...document.querySelectorAll('#model-probe .legendtext')].some(t => t.textContent === 'step 0')"
        )
        print(f"with snapshots: {page.locator('#model-probe-status').inner_text()}")
        page.mouse.move(0, 0)
        page.locator("#model-probe-box").screenshot(path=str(shots / "app_1024_probing.png"))
    finally:
        page.close()
    assert OUTSIDE == [], OUTSIDE


def test_why_and_attribution_beside_attention_at_1024(browser, app_url, shots):
    """The "why?" accordion under Classify at 1024 px: opened, the example's tokens are already
    shaded and its bars drawn; a new sentence and a click redraw both (the status gives f and the
    completeness error). The Attention tab's comparison opens drawn, two bar panels with the
    correlations in the title. Nothing leaves the machine."""
    page = offline_page(browser, app_url, PROJECTOR)
    try:
        page.goto(app_url)
        page.wait_for_selector("#mlm-text textarea")
        open_tab(page, "Classify")
        page.locator("#cls-why-box").get_by_text("Why? What the answer rests on (attribution)").click()
        page.wait_for_function("document.querySelectorAll('#cls-why .barlayer path').length > 3")
        assert "completeness error" in page.locator("#cls-why-status").text_content()  # in its details
        page.fill("#cls-text textarea", "not bad at all .")
        page.locator("#cls-why-button").click()
        page.wait_for_function("document.querySelector('#cls-why-status').textContent.includes('“not”')")
        page.wait_for_function("document.querySelector('#cls-why-text').innerText.includes('bad')")
        bars = page.locator("#cls-why .barlayer path").count()
        assert bars >= 5, bars  # [CLS] not bad at all . [SEP]: a bar per token
        status = page.locator("#cls-why-status").text_content()
        assert "completeness error" in status and "positive" in status, status
        page.mouse.move(0, 0)
        page.locator("#cls-why-box").screenshot(path=str(shots / "app_1024_why.png"))
        open_tab(page, "Attention")
        page.locator("#att-why-box").get_by_text("Attribution beside attention").click()
        page.wait_for_function("document.querySelectorAll('#att-why .barlayer path').length > 3")
        title = page.locator("#att-why .gtitle").text_content()
        assert "Pearson r = " in title and "Spearman" in title, title
        assert "Pearson r = " in page.locator("#att-why-status").text_content()  # in its details
        page.mouse.move(0, 0)
        page.locator("#att-why-box").screenshot(path=str(shots / "app_1024_why_attention.png"))
    finally:
        page.close()
    assert OUTSIDE == [], OUTSIDE
