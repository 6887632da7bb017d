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


@pytest.fixture(scope="module")
def page(app_url):
    with chromium_browser() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(60_000)
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
    page.wait_for_selector("#mlm-bars .bl-row")
    page.wait_for_function("document.querySelector('#mlm-status').innerText.includes('predicted')")
    rows = page.locator("#mlm-bars .bl-row")
    assert rows.count() == 5
    first = rows.first.inner_text()
    assert "%" in first and first.split()[0].strip()
    # the best guess appears, highlighted, in the sentence
    assert first.split()[0] in page.locator("#mlm-filled").inner_text()
    page.screenshot(path=str(shots / "app_masked_lm.png"), full_page=True)


def test_click_a_word_to_mask_it(page):
    open_tab(page, "Masked LM")
    page.fill("#mlm-text textarea", "she walked to the village in the rain .")
    page.locator("#mlm-words").get_by_text("village", exact=True).click()
    page.wait_for_function("document.querySelector('#mlm-text textarea').value.includes('[MASK]')")
    assert page.input_value("#mlm-text textarea") == "she walked to the [MASK] in the rain ."
    page.wait_for_function("document.querySelector('#mlm-status').innerText.includes('predicted')")
    assert page.locator("#mlm-bars .bl-row").count() == 5


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
    page.wait_for_function("[...document.querySelectorAll('.prose, .md')].some("
                           "e => e.innerText.includes('layers x'))")
    assert page.locator("img, svg").count() > 0
    page.screenshot(path=str(shots / "app_attention.png"), full_page=True)
