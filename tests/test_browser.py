"""The dashboard in a real browser: Debian's chromium, headless, driven by Playwright.

Opens the page, runs a fill-mask (typed and by clicking a word), a question-answering request and
the attention view, asserts what is visible, and saves screenshots (the README shows them):
    BERT_LAB_SCREENSHOTS=docs/images .venv/bin/python -m pytest tests/test_browser.py
Skipped when chromium is absent, except under CI (BERT_LAB_REQUIRE_BROWSER=1), where it fails.
Marked slow (a browser and a server start): `pytest -m "not slow"` leaves it out.
"""
import os
from pathlib import Path

import pytest

from tests.conftest import chromium_browser

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


OUTSIDE: list[str] = []          # requests the page tried to send anywhere but the app: all blocked


@pytest.fixture(scope="module")
def page(app_url):
    """The dashboard with the network blocked: every request that does not go to the app's own
    server is aborted and recorded, so everything the page draws must come from the app."""
    from urllib.parse import urlparse
    own = urlparse(app_url).netloc

    def route(r):
        url = urlparse(r.request.url)
        if url.scheme in ("data", "blob", "about") or url.netloc == own:
            return r.continue_()
        OUTSIDE.append(r.request.url)
        return r.abort()

    with chromium_browser() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(60_000)
        page.route("**/*", route)
        page.goto(app_url)
        page.wait_for_selector("#mlm-text textarea")
        yield page


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    path = Path(os.environ.get("BERT_LAB_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def open_tab(page, name):
    page.get_by_role("tab", name=name).click()


def test_fill_mask_in_the_browser(page, shots):
    open_tab(page, "Masked LM")
    page.fill("#mlm-text textarea", "the captain of the [MASK] looked at me and smiled .")
    page.click("#mlm-predict")
    page.wait_for_function("document.querySelector('#mlm-status').innerText.includes('predicted')")
    page.wait_for_selector("#mlm-bars .js-plotly-plot g.point")       # bars drawn by plotly, in the browser
    assert page.locator("#mlm-bars g.point").count() == 5
    labels = page.locator("#mlm-bars .ytick text").evaluate_all("els => els.map(e => e.textContent)")
    assert len(labels) == 5 and all(labels)
    # the best guess appears, highlighted, in the sentence
    filled = page.locator("#mlm-filled").inner_text()
    assert any(label.split(" ")[0].lstrip("…") in filled for label in labels)
    page.screenshot(path=str(shots / "app_masked_lm.png"), full_page=True)


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
    context = ("The Nautilus was a submarine built by Captain Nemo on a desert island. It was driven by "
               "electricity.")
    page.fill("#qa-question textarea", "Who built the Nautilus?")
    page.fill("#qa-context textarea", context)
    page.locator("#qa-context textarea").press("End")
    page.keyboard.type(" ")                                 # typed, as a student would
    # the tab opened with its example answered; typing cleared it (old results go with their input)
    page.wait_for_function("!document.querySelector('#qa-status').innerText.includes('answer:')")
    page.click("#qa-answer")
    page.wait_for_function("document.querySelector('#qa-status').innerText.includes('answer:')")
    status = page.locator("#qa-status").inner_text()
    answer = status.split("answer: “", 1)[1].split("”", 1)[0]       # the status goes on after the answer
    assert answer and answer in context
    assert "P(start = [CLS])" in status and "fine-tuned from" in status
    assert answer in page.locator("#qa-span").inner_text()
    page.screenshot(path=str(shots / "app_question_answering.png"), full_page=True)


def test_attention_in_the_browser(page, shots):
    open_tab(page, "Attention")
    page.get_by_role("button", name="Show attention").click()
    page.wait_for_function("[...document.querySelectorAll('.bl-status')].some(e => e.innerText.includes('layers x'))")
    page.wait_for_selector(".js-plotly-plot .heatmaplayer")         # the maps, drawn by plotly offline
    # click a token: its row and column are outlined and shown as bars
    page.locator("#att-tokens").get_by_text("sitting", exact=True).click()
    page.wait_for_function("[...document.querySelectorAll('.bl-status')].some(e => e.innerText.includes('its row'))")
    page.screenshot(path=str(shots / "app_attention.png"), full_page=True)
    # bertviz's head view draws with the network blocked (d3 and jQuery come from the app)
    page.get_by_text("bertviz: the head, model and neuron views").click()
    page.get_by_role("button", name="Show bertviz").click()
    frame = page.frame_locator("iframe[srcdoc]")
    frame.locator("svg text").first.wait_for()
    assert frame.locator("svg text").count() > 5
    assert OUTSIDE == [], OUTSIDE


def test_a_shared_link_opens_the_tab_with_its_inputs(page, app_url):
    """The link button's address restores the tab and the inputs in a new page."""
    open_tab(page, "Next Sentence")
    box = page.locator("#share-link textarea")
    page.get_by_role("button", name="Link to this tab and its inputs").click()
    page.wait_for_function("document.querySelector('#share-link textarea').value.startsWith('http')")
    url = box.input_value()
    assert url.startswith(app_url.rstrip("/")) and "tab=nsp" in url and "nsp_a=" in url, url
    other = page.context.browser.new_page()
    other.goto(url.replace("nsp_a=", "nsp_a=the+ship+sailed+at+dawn+.&ignored="))
    other.wait_for_function("[...document.querySelectorAll('textarea')].some(t => t.value === 'the ship sailed at dawn .')")
    assert other.get_by_role("tab", name="Next Sentence").get_attribute("aria-selected") == "true"
    other.close()
