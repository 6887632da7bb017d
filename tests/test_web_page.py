"""The browser edition in a real browser: a site exported from the bundled tiny models (and a
tiny tagger made here), served by a plain static file server from a temporary folder, opened in
Debian's chromium (playwright, headless) with every request to another origin blocked.

- every view drawn and readable at 1024 x 768 (a projector) and 390 x 844 (a phone): no sideways
  scrolling; screenshots web_<view>_<width>.png in BERT_LAB_SCREENSHOTS (the docs' come from the
  full site: `make web`, then BERT_LAB_WEB_SITE=site BERT_LAB_SCREENSHOTS=docs/images
  pytest tests/test_web_page.py -k readable);
- window.bertLab's numbers against the lab's own (lab.web.results, i.e. lab.inspect.explore) on
  inputs the test generates: probabilities and attention maps within 1e-4 (fp32 graphs);
- bad input answered with a message: empty, 5,000 words (says what was cut), emoji and
  non-Latin scripts, HTML and script tags shown as text with nothing executed;
- no request to any other origin.
Needs Node (the page is built from web/ by npm) and chromium; skipped without them except under CI
(BERT_LAB_REQUIRE_BROWSER=1), where it fails. Marked slow.
"""

from __future__ import annotations

import functools
import json
import os
import random
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import pytest
import torch

import lab
from lab.web import results
from tests.conftest import chromium_browser, need_node, site_models, tiny_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TINY = ("bert-lab-classroom", "bert-lab-squad", "bert-lab-sst2")  # fp32 numbers (fp16-weights graphs)
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
VIEWS = ("fill-mask", "next-sentence", "attention", "answer", "classify", "tag")
SIZES = {"1024": {"width": 1024, "height": 768}, "390": {"width": 390, "height": 844}}
NARROWEST = {"320": {"width": 320, "height": 640}}  # WCAG's reflow width (tests/test_web_a11y.py)
OUTSIDE: list[str] = []


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The exported site: the three tiny bundled models and a tiny tagger with random weights."""
    need_node()
    from lab.web.export import export_site

    models, tok = site_models(tmp_path_factory, TINY)
    torch.manual_seed(0)
    cfg = tiny_config(vocab_size=tok.vocab_size, id2label=dict(enumerate(TAGS)))
    lab.save(lab.BertForTokenClassification(cfg), tok, models / "tiny-ner")
    out = tmp_path_factory.mktemp("site")
    export_site(out, models_dir=models, log=lambda _: None)
    return out, models


@pytest.fixture(scope="module")
def url(request):
    """A plain static file server (the standard library's) on the site folder: the one exported
    here, or BERT_LAB_WEB_SITE (a full export, `make web`: the docs' screenshots show its models)."""
    given = os.environ.get("BERT_LAB_WEB_SITE")
    folder = Path(given) if given else request.getfixturevalue("site")[0]
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no line per request in the test's output
        pass


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as b:
        yield b


def open_page(browser, url, size="1024", query="", scheme="light"):
    own = urlparse(url).netloc
    page = browser.new_page(viewport={**SIZES, **NARROWEST}[size], color_scheme=scheme)
    page.set_default_timeout(90_000)

    def route(r):
        where = urlparse(r.request.url)
        if where.scheme in ("data", "blob") or where.netloc == own:
            return r.continue_()
        OUTSIDE.append(r.request.url)
        return r.abort()

    page.route("**/*", route)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url + query)
    page.wait_for_function("window.bertLab !== undefined")
    page.errors = errors
    return page


@pytest.fixture(scope="module")
def page(browser, url):
    p = open_page(browser, url)
    yield p
    p.close()


@pytest.fixture(scope="module")
def lab_models(site):
    return {name: lab.load(site[1] / name) for name in (*TINY, "tiny-ner")}


def shots_dir() -> Path | None:
    given = os.environ.get("BERT_LAB_SCREENSHOTS")
    return Path(given) if given else None


def close(a, b, tol=1e-4, where=""):
    """Two JSON trees equal: the same structure and strings, numbers within tol."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{where}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            close(a[k], b[k], tol, f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            close(x, y, tol, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert abs(a - b) <= tol, f"{where}: {a} != {b}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def words_of(tok, rng, n) -> list[str]:
    """n random whole words of the model's vocabulary (no pieces, no specials)."""
    vocab = [w for w in tok.vocab if w.isalpha() and not w.startswith("##") and len(w) > 2]
    return [rng.choice(vocab) for _ in range(n)]


# ----------------------------------------------------------------------------------------------
# The same numbers as the lab
# ----------------------------------------------------------------------------------------------
def test_fill_mask_next_sentence_and_attention_agree_with_the_lab(page, lab_models):
    model, tok = lab_models["bert-lab-classroom"]
    rng = random.Random(0)
    for n in (4, 11, 30):
        words = words_of(tok, rng, n)
        words[rng.randrange(n)] = "[MASK]"
        text = " ".join(words)
        got = page.evaluate("t => bertLab.fillMask(t, {model: 'bert-lab-classroom', topK: 7})", text)
        close(results.fill_mask(model, tok, text, 7), got, where="fillMask")
        a, b = " ".join(words_of(tok, rng, n)), " ".join(words_of(tok, rng, 5))
        got = page.evaluate("([a, b]) => bertLab.nextSentence(a, b, {model: 'bert-lab-classroom'})", [a, b])
        close(results.next_sentence(model, tok, a, b), got, where="nextSentence")
        got = page.evaluate("([a, b]) => bertLab.attention(a, b, {model: 'bert-lab-classroom'})", [a, b])
        close(results.attention(model, tok, a, b), got, where="attention")


def test_answer_classify_and_tag_agree_with_the_lab(page, lab_models):
    rng = random.Random(1)
    qa, qa_tok = lab_models["bert-lab-squad"]
    sst, sst_tok = lab_models["bert-lab-sst2"]
    ner, ner_tok = lab_models["tiny-ner"]
    for n in (12, 60, 400):  # 400 words: more than one window
        context = ". ".join(" ".join(words_of(qa_tok, rng, 9)) for _ in range(n // 9 + 1))
        question = " ".join(words_of(qa_tok, rng, 5)) + " ?"
        got = page.evaluate("([q, c]) => bertLab.answer(q, c, {model: 'bert-lab-squad', topK: 5})", [question, context])
        close(results.answer(qa, qa_tok, question, context, 5), got, where="answer")
        text = " ".join(words_of(sst_tok, rng, n // 4 + 2))
        got = page.evaluate("t => bertLab.classify(t, null, {model: 'bert-lab-sst2'})", text)
        close(results.classify(sst, sst_tok, text), got, where="classify")
        text = " ".join(w.capitalize() if rng.random() < 0.3 else w for w in words_of(ner_tok, rng, n // 3 + 2))
        got = page.evaluate("t => bertLab.tag(t, {model: 'tiny-ner'})", text)
        close(results.tag(ner, ner_tok, text), got, where="tag")


def test_the_opening_views_are_the_labs_numbers(site, lab_models):
    openings = json.loads((site[0] / "openings.json").read_text())
    assert set(openings) == set(VIEWS)
    for view, o in openings.items():
        model, tok = lab_models[o["model"]]
        close(results.run_view(model, tok, view, o["inputs"]), o["result"], tol=1e-6, where=view)


# ----------------------------------------------------------------------------------------------
# Every view drawn, at a projector's and a phone's width
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", SIZES)
def test_every_view_is_drawn_and_readable(browser, url, size):
    page = open_page(browser, url, size)
    for view in VIEWS:
        page.click(f"#tab-{view}")
        page.wait_for_function(f"document.querySelector('#panel-{view}')?.dataset.computed === '0'")
        page.click(f"#{view}-run")  # computed on the device this time
        page.wait_for_function(f"document.querySelector('#panel-{view}')?.dataset.computed === '1'")
        status = page.inner_text(f"#{view}-status")
        assert "(done in" in status and not status.startswith("(done"), (view, status)  # the result, then the time
        out = page.locator(f"#{view}-out")
        assert out.inner_text().strip() or out.locator("svg").count(), view
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{view} at {size} px scrolls sideways by {overflow} px"
        if shots_dir():
            page.mouse.move(0, 0)
            page.screenshot(path=str(shots_dir() / f"web_{view}_{size}.png"), full_page=True)
    assert page.errors == [] and OUTSIDE == [], (page.errors, OUTSIDE)
    page.close()


def test_a_link_opens_its_view_with_its_inputs(browser, url):
    page = open_page(browser, url, "390", "?view=next-sentence&a=the+sea+was+calm+.&b=we+slept+.")
    page.wait_for_function("document.querySelector('#panel-next-sentence')?.dataset.computed === '1'")
    assert page.get_attribute("#tab-next-sentence", "aria-selected") == "true"
    assert page.input_value("#next-sentence-a") == "the sea was calm ."
    assert "P(IsNext)" in page.inner_text("#next-sentence-out")
    page.fill("#next-sentence-b", "the storm broke .")
    page.click("#next-sentence-run")
    page.wait_for_function("document.querySelector('#panel-next-sentence')?.dataset.computed === '2'")
    assert "b=the+storm+broke" in page.url
    page.close()


# ----------------------------------------------------------------------------------------------
# Bad input: a message, nothing executed, nothing cut without saying so
# ----------------------------------------------------------------------------------------------
def run_view(page, view, field, text, count):
    page.click(f"#tab-{view}")
    page.fill(f"#{view}-{field}", text)
    page.click(f"#{view}-run")
    page.wait_for_function(
        f"(n) => document.querySelector('#{view}-status').className.match(/ok|warn|error/) && "
        f"document.querySelector('#{view}-status').innerText !== 'computing on this device…'",
        arg=count,
    )
    return page.inner_text(f"#{view}-status")


def test_bad_input_gets_a_message(page):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    assert "is empty" in run_view(page, "fill-mask", "text", "   ", 0)
    assert "[MASK]" in run_view(page, "fill-mask", "text", "no mask in this sentence .", 0)
    long = " ".join(["ship"] * 5000) + " [MASK] ."
    said = run_view(page, "fill-mask", "text", long, 0)
    assert "[MASK]" in said and "cut" in said, said  # the mask fell past the model's limit: where and how
    said = run_view(page, "classify", "text", " ".join(["sea"] * 5000), 0)
    assert "cut" in said and "left out" in said, said
    hostile = '<script>alert("x")</script><img src=x onerror="alert(1)"> the [MASK] 😀 Привет 東京 .'
    said = run_view(page, "fill-mask", "text", hostile, 0)
    assert "(done in" in said, said
    assert page.locator("#fill-mask-out img").count() == 0 and page.locator("#fill-mask-out script").count() == 0
    assert page.input_value("#fill-mask-text") == hostile  # the text as typed, shown as text
    assert "scr ##ip ##t" in page.inner_text("#fill-mask-out")  # the model's tokens of it, as text
    said = run_view(page, "tag", "text", "東京 🙂 <b>Paris</b>", 0)
    assert "(done in" in said, said
    assert page.locator("#tag-out b").count() == 0
    unknown = page.evaluate("bertLab.fillMask('a [MASK] .', {model: 'no-such-model'}).catch(e => e.message)")
    assert "no model called" in unknown and "bert-lab-classroom" in unknown
    wrong = page.evaluate("bertLab.answer('who?', 'me.', {model: 'bert-lab-classroom'}).catch(e => e.message)")
    assert "cannot do answer" in wrong and "bert-lab-squad" in wrong
    misspelt = page.evaluate("bertLab.answer('who?', 'me.', {model: 'bert-lab-squad', top_k: 1}).catch(e => e.message)")
    assert "unknown option top_k" in misspelt and "topK" in misspelt
    text_k = page.evaluate("bertLab.fillMask('a [MASK] .', {topK: '2'}).catch(e => e.message)")
    assert "not text" in text_k and '"2"' in text_k
    assert dialogs == [] and OUTSIDE == []


def test_serve_web_lets_the_page_compute_on_threads(browser, site):
    """`python -m lab serve-web` sends the cross-origin isolation headers: the page is isolated,
    onnxruntime-web computes on several threads, and the numbers are the same."""
    from lab.web.serve import make_server

    server = make_server(site[0], "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = open_page(browser, f"http://127.0.0.1:{server.server_address[1]}/")
        assert page.evaluate("self.crossOriginIsolated") is True
        text = "the captain of the [MASK] looked at me and smiled ."
        got = page.evaluate("t => bertLab.fillMask(t, {model: 'bert-lab-classroom'})", text)
        model, tok = lab.load(site[1] / "bert-lab-classroom")
        close(results.fill_mask(model, tok, text), got, where="fillMask on threads")
        assert page.errors == [] and OUTSIDE == []
        page.close()
    finally:
        server.shutdown()


def test_the_answer_view_says_what_p_start_at_cls_is(page):
    page.click("#tab-answer")
    page.wait_for_selector("#answer-out .cls-note")
    note = page.inner_text("#answer-out .cls-note")
    assert note.startswith("P(start at [CLS]) = ") and "no answer" in note and "SQuAD v1.1" in note, note
