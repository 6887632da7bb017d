"""The browser edition's Step by step view and its tour (issue 42), in a real browser.

A site exported from bert-lab-classroom, bert-lab-squad (the tour's span stop) and a tiny pre-norm
model with local attention made here (its masked scores hold −∞), served by a plain static server
and opened in Debian's chromium (playwright, headless):
- the flow of the classroom model (embeddings, two layers of attention, add & norm, feed-forward,
  add & norm, the heads), a pre-norm model's own order; a block opens to its steps, each with the
  formula and sentence of explore.trace and values equal to the trace's (read-outs and tables);
- keyboard alone: Tab to the view, open a block, walk a matrix with the arrow keys and read the
  announced value, follow a row's token, show the table; changing the text or the [MASK]
  recomputes; masked scores read −∞;
- the tour: every stop forward and back by keyboard, each lighting its block; it fits 1024 x 768 and
  390 x 844 (nothing wider than the page, its card wholly in view); axe-core (web/node_modules)
  finds no WCAG 2.1 A/AA violation on the view or the tour at either size;
- screenshots web_steps_*.png in BERT_LAB_SCREENSHOTS (the docs': BERT_LAB_SCREENSHOTS=docs/images).
Needs Node (the page is built by npm) and chromium; skipped without them except under CI
(BERT_LAB_REQUIRE_BROWSER=1), where it fails. Marked slow.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import torch

import lab
from lab.inspect import explore
from lab.modern import changed
from tests.conftest import axe_violations, chromium_browser, need_node, site_models, tiny_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

MODELS = ("bert-lab-classroom", "bert-lab-squad")
TINY = "tiny-local"  # pre-norm, a 4-token local window every other layer: masked scores
SIZES = {"1024": {"width": 1024, "height": 768}, "390": {"width": 390, "height": 844}}
A = "he opened the [MASK] and walked into the garden ."  # the view's opening pair (web/src/steps.js)
B = "the roses were in bloom ."
SUB = re.compile(r"([A-Za-zα-ωΦθ])_(\[CLS\]|[A-Za-z0-9]+)")  # how the page sets a formula's subscripts
# the block each stop of the tour lights (web/src/tour_stops.js), and the step inside it
TOUR = [
    ("embeddings", "bert.embeddings.word_embeddings"),
    ("embeddings", "bert.embeddings.sum"),
    ("mlm", "cls.predictions.softmax"),
    ("nsp", "cls.seq_relationship.softmax"),
    ("layer.0.attention.1", "bert.encoder.layer.0.attention.self.query"),
    ("layer.0.attention.1", "bert.encoder.layer.0.attention.self.scores"),
    ("layer.0.attention.1", "bert.encoder.layer.0.attention.self.masked_scores"),
    ("layer.0.attention.1", "bert.encoder.layer.0.attention.self.probs"),
    ("layer.0.attention.1", "bert.encoder.layer.0.attention.self.context"),
    ("layer.0.add_norm.1", "bert.encoder.layer.0.attention.output.residual"),
    ("layer.0.ffn.1", "bert.encoder.layer.0.intermediate.activation"),
    ("pooler", "bert.pooler.activation"),
    (None, None),  # the span stop: the classroom model has no span head, the card says which has
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    need_node()
    from lab.web.export import export_site

    models, tok = site_models(tmp_path_factory, MODELS)
    torch.manual_seed(0)
    values = changed(dict(vocab_size=tok.vocab_size, num_hidden_layers=2), ["pre-norm", "local"], local_window=4)
    lab.save(lab.BertForMaskedLM(tiny_config(**values)), tok, models / TINY)
    out = tmp_path_factory.mktemp("site")
    export_site(out, models_dir=models, log=lambda _: None)
    return out, models


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def url(site):
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(site[0])))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as b:
        yield b


@pytest.fixture(scope="module")
def classroom(site):
    return lab.load(site[1] / "bert-lab-classroom")


def open_page(browser, url, size="1024", query="?view=steps"):
    page = browser.new_page(viewport=SIZES[size])
    page.set_default_timeout(90_000)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url + query)
    page.errors = errors
    if "view=steps" in query:
        wait_computed(page, 1)
    return page


@pytest.fixture(scope="module")
def page(browser, url):
    p = open_page(browser, url)
    yield p
    assert p.errors == []
    p.close()


def computed(page) -> int:
    return int(page.get_attribute("#panel-steps", "data-computed") or 0)


def wait_computed(page, n: int) -> None:
    page.wait_for_function(f"Number(document.querySelector('#panel-steps')?.dataset.computed || 0) >= {n}")


def trace_in_page(page, a=A, b=B, model="bert-lab-classroom") -> None:
    """Types the input (and picks the model) and waits for the view to compute and draw it."""
    n = computed(page)
    if page.input_value("#steps-model") != model:
        page.select_option("#steps-model", model)
        wait_computed(page, n + 1)
        n += 1
    page.fill("#steps-a", a)
    page.fill("#steps-b", b or "")
    page.press("#steps-a", "Enter")
    wait_computed(page, n + 1)


def open_block(page, key: str) -> None:
    if page.get_attribute(f"button.block[data-block='{key}']", "aria-expanded") != "true":
        page.click(f"button.block[data-block='{key}']")
    page.wait_for_function(
        f"document.querySelector('#steps-detail h3')?.textContent && "
        f"document.querySelector(\"button.block[data-block='{key}']\").ariaExpanded === 'true'"
    )


def number(text: str) -> float:
    text = text.replace("−", "-")
    return float("-inf") if text == "-∞" else float(text)


def near(page_value: float, lab_value: float) -> bool:
    """The page writes 4 significant digits; the page's fp32 arithmetic is within 1e-4 of the lab's."""
    if lab_value <= -3.4e38:
        return page_value == float("-inf")
    return abs(page_value - lab_value) <= 1e-4 + 6e-4 * abs(lab_value)


def table_numbers(page, step_id: str) -> tuple[list[str], list[str], list[list[float]]]:
    """The column headers, row headers and numbers of a matrix's table (shown by its toggle)."""
    toggle = page.locator(f"#{step_id}-table").locator("xpath=preceding-sibling::button[1]")
    if toggle.get_attribute("aria-expanded") != "true":
        toggle.click()
    table = page.locator(f"#{step_id}-table table")
    cols = table.locator("thead th").all_inner_texts()[1:]
    rows = table.locator("tbody th").all_inner_texts()
    cells = table.locator("tbody tr").evaluate_all(
        "trs => trs.map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent))"
    )
    return cols, rows, [[number(c) for c in row] for row in cells]


# ----------------------------------------------------------------------------------------------
# The flow and its blocks, against explore.trace
# ----------------------------------------------------------------------------------------------
def test_the_flow_of_the_classroom_model_and_its_answers(page, classroom):
    model, tok = classroom
    trace_in_page(page)
    ref = explore.trace(model, tok, A, B)
    assert page.locator(".flow-row .row-name").all_inner_texts() == ["Input", "Layer 0", "Layer 1", "Heads"]
    blocks = page.locator("button.block").evaluate_all("bs => bs.map(b => b.dataset.block)")
    layer = ["attention.1", "add_norm.1", "ffn.1", "add_norm.2"]
    assert blocks == ["embeddings", *[f"layer.{i}.{b}" for i in (0, 1) for b in layer], "pooler", "mlm", "nsp"]
    guess = tok.convert_ids_to_tokens(int(ref.step("cls.predictions.softmax").values[0].argmax()))
    is_next = float(ref.step("cls.seq_relationship.softmax").values[0])
    status = page.inner_text("#steps-status")
    assert f"at [MASK] it guesses “{guess}”" in status and f"{100 * is_next:.1f}%" in status, status
    assert page.get_attribute("#steps-status", "aria-live") == "polite"
    words = page.locator("#steps-words button").all_inner_texts()
    assert words == f"{A} {B}".split()  # the words, not their pieces (roses: ros ##es)


def test_a_block_shows_its_formulas_and_the_traces_values(page, classroom):
    model, tok = classroom
    trace_in_page(page)
    ref = explore.trace(model, tok, A, B)
    open_block(page, "layer.0.attention.1")
    page.select_option("#steps-head", "1")
    names = page.locator("#steps-detail article.step").evaluate_all("a => a.map(x => x.dataset.step)")
    assert names == [n for n in ref.names() if n.startswith("bert.encoder.layer.0.attention.")][:9]
    for name in names:
        step = ref.step(name)
        article = page.locator(f"article[data-step='{name}']")
        assert article.locator(".formula").text_content() == "Formula: " + SUB.sub(r"\1\2", step.formula)
        assert article.locator(".what").text_content() == step.what
        assert step.section in article.locator(".section").inner_text()
    T = len(ref.tokens)
    assert f"(2 heads of {T}×{T})" in page.inner_text("article[data-step$='.scores'] .formula")
    probs = ref.step("bert.encoder.layer.0.attention.self.probs").values[1]  # head 1
    cols, rows, cells = table_numbers(page, "m-bert-encoder-layer-0-attention-self-probs")
    assert rows[1] == "“he” (token 1)" and cols[4] == "“[MASK]” (token 4)" and len(cells) == T
    assert all(near(cells[i][j], float(probs[i, j])) for i in range(len(cells)) for j in range(len(cells))), cells[0]
    layout = page.inner_text("#m-bert-encoder-layer-0-attention-self-probs-layout")
    assert layout == f"{T} × {T}; rows: query token, columns: key token."


def test_a_wide_matrix_is_a_turned_table_page_by_page(page, classroom):
    model, tok = classroom
    trace_in_page(page)
    ref = explore.trace(model, tok, A, B).step("bert.encoder.layer.1.intermediate.dense").values  # (T, 512)
    open_block(page, "layer.1.ffn.1")
    box = "m-bert-encoder-layer-1-intermediate-dense"
    cols, rows, cells = table_numbers(page, box)
    assert "turned on its side" in page.inner_text(f"#{box}-layout")
    assert len(cols) == ref.shape[0] and rows[:2] == ["0", "1"] and len(rows) == 64
    assert all(near(cells[u][t], float(ref[t, u])) for u in range(64) for t in range(ref.shape[0]))
    page.click(f"#{box}-table .pager button:has-text('Next 64')")
    assert page.locator(f"#{box}-table tbody th").first.inner_text() == "64"
    assert "Rows 65–128 of 512" in page.inner_text(f"#{box}-layout")
    assert page.evaluate("document.activeElement.textContent") == "Next 64"  # focus stays on the pager


# ----------------------------------------------------------------------------------------------
# Keyboard alone
# ----------------------------------------------------------------------------------------------
def tab_to(page, selector: str, limit: int = 120) -> None:
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement?.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def test_keyboard_alone_opens_a_block_and_reads_a_matrix(browser, url, classroom):
    model, tok = classroom
    page = open_page(browser, url, query="?view=fill-mask")
    tab_to(page, "#tab-steps")
    page.keyboard.press("Enter")
    wait_computed(page, 1)
    ref = explore.trace(model, tok, A, B)
    tab_to(page, "button.block[data-block='layer.0.attention.1']")
    page.keyboard.press("Enter")
    assert page.get_attribute("button.block[data-block='layer.0.attention.1']", "aria-expanded") == "true"
    box = "#m-bert-encoder-layer-0-attention-self-query"
    tab_to(page, box)
    for key in ["Control+Home", "ArrowDown", "ArrowDown", "ArrowRight", "ArrowRight", "ArrowRight"]:
        page.keyboard.press(key)
    readout = page.locator(f"{box}-readout")
    assert readout.get_attribute("aria-live") == "polite"
    said = readout.inner_text()
    assert said.startswith("token “opened” (token 2), hidden 3: "), said
    assert near(
        number(said.rsplit(": ", 1)[1]), float(ref.step("bert.encoder.layer.0.attention.self.query").values[2, 3])
    )
    page.keyboard.press("End")
    assert readout.inner_text().startswith("token “opened” (token 2), hidden 127: ")
    page.keyboard.press("Enter")  # follow this row's token
    page.wait_for_function("document.querySelector('#steps-token').value === '2'")
    assert page.evaluate("document.activeElement.id") == box[1:]  # focus kept through the redraw
    tab_to(page, f"{box} ~ .table-toggle")
    page.keyboard.press("Enter")
    assert page.locator(f"{box}-table table").is_visible()
    assert page.errors == []
    page.close()


def test_changing_the_text_or_the_mask_computes_again(page, classroom):
    model, tok = classroom
    trace_in_page(page, "it was a dark and stormy night .", "")
    assert page.locator("#steps-words button").all_inner_texts() == "it was a dark and stormy night .".split()
    assert page.locator("button.block[data-block='nsp']").inner_text().endswith("%")
    n = computed(page)
    page.click("#steps-words button:has-text('night')")  # a click puts [MASK] there
    wait_computed(page, n + 1)
    assert page.input_value("#steps-a") == "it was a dark and stormy [MASK] ."
    ref = explore.trace(model, tok, "it was a dark and stormy [MASK] .")
    guess = tok.convert_ids_to_tokens(int(ref.step("cls.predictions.softmax").values[0].argmax()))
    assert f"“{guess}”" in page.inner_text("#steps-status")
    assert page.inner_text("button.block[data-block='mlm'] .block-says").startswith(guess)
    page.click("#steps-words button:has-text('[MASK]')")  # and a click on the [MASK] brings the word back
    wait_computed(page, n + 2)
    assert page.input_value("#steps-a") == "it was a dark and stormy night ."


def test_a_pre_norm_model_in_its_order_and_masked_scores_as_minus_infinity(page, site):
    model, tok = lab.load(site[1] / TINY)
    text = "the captain of the ship looked at me and smiled ."
    trace_in_page(page, text, "", model=TINY)
    blocks = page.locator("button.block").evaluate_all("bs => bs.map(b => b.dataset.block)")
    assert blocks == [
        "embeddings",
        *["layer.0.attention.1", "layer.0.add.1", "layer.0.norm.1", "layer.0.ffn.1", "layer.0.add.2"],
        *["layer.1.norm.1", "layer.1.attention.1", "layer.1.add.1", "layer.1.norm.2", "layer.1.ffn.1"],
        *["layer.1.add.2", "final_norm", "mlm"],
    ]
    open_block(page, "layer.1.attention.1")  # layer 1 is local: a 4-token window
    page.select_option("#steps-head", "0")
    masked = explore.trace(model, tok, text).step("bert.encoder.layer.1.attention.self.masked_scores").values[0]
    _, _, cells = table_numbers(page, "m-bert-encoder-layer-1-attention-self-masked-scores")
    assert cells[1][10] == float("-inf") and all(near(c, float(v)) for c, v in zip(cells[1], masked[1]))
    assert "shown as −∞" in page.inner_text("article[data-step$='.masked_scores'] figcaption")
    trace_in_page(page)  # back to the classroom model for the tests after


# ----------------------------------------------------------------------------------------------
# The tour; fitting a projector and a phone; axe-core
# ----------------------------------------------------------------------------------------------
def tour_state(page) -> dict:
    return page.evaluate(
        """() => {
      const t = document.querySelector('#steps-tour');
      const r = t.getBoundingClientRect();
      const lit = [...document.querySelectorAll('#panel-steps .lit')];
      return {stop: Number(t.dataset.stop), hidden: t.hidden, focus: document.activeElement.id,
        block: lit.find((e) => e.matches('button.block'))?.dataset.block ?? null,
        step: lit.find((e) => e.matches('article.step'))?.dataset.step ?? null,
        inView: r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth,
        wider: document.documentElement.scrollWidth - innerWidth};
    }"""
    )


# Elements reaching past the page's right edge, but for those inside a box that scrolls sideways.
TOO_WIDE_JS = """() => [...document.querySelectorAll('body *')].filter((e) => {
  if (!e.getClientRects().length || e.getBoundingClientRect().right <= innerWidth + 1) return false;
  for (let p = e.parentElement; p; p = p.parentElement) {
    if (['auto', 'scroll'].includes(getComputedStyle(p).overflowX)) return false;
  }
  return true;
}).map((e) => `${e.tagName}#${e.id}.${e.className}`)"""


def shot(page, name: str) -> None:
    given = os.environ.get("BERT_LAB_SCREENSHOTS")
    if given:
        page.mouse.move(0, 0)
        page.screenshot(path=str(Path(given) / f"web_steps_{name}.png"))


def test_the_tour_walks_forward_and_back_by_keyboard(page):
    trace_in_page(page)
    page.focus("#steps-tour-start")
    page.keyboard.press("Enter")
    seen = []
    for i, (block, _step) in enumerate(TOUR):
        state = tour_state(page)
        assert state["stop"] == i and state["focus"] == "steps-tour" and not state["hidden"]
        seen.append((state["block"], state["step"]))
        if block:
            assert page.get_attribute(f"button.block[data-block='{block}']", "aria-expanded") == "true"
        else:  # the span stop
            assert "bert-lab-classroom has no answer-span head: pick bert-lab-squad" in page.inner_text("#tour-text")
        page.keyboard.press("ArrowRight" if i < len(TOUR) - 1 else "ArrowLeft")
    assert seen == TOUR
    for i in range(len(TOUR) - 2, -1, -1):
        assert tour_state(page)["stop"] == i
        page.keyboard.press("ArrowLeft")
    assert tour_state(page)["stop"] == 0 and page.get_attribute("#tour-back", "aria-disabled") == "true"
    page.keyboard.press("Escape")
    assert tour_state(page)["hidden"] and page.evaluate("document.activeElement.id") == "steps-tour-start"


def test_the_tours_span_stop_on_a_question_answering_model(page):
    trace_in_page(page, "who had seen the storm ?", "he had seen the storm coming .", model="bert-lab-squad")
    page.click("#steps-tour-start")
    for _ in TOUR[:-1]:
        page.click("#tour-next")
    state = tour_state(page)
    assert (state["block"], state["step"]) == ("span", "qa_outputs.start_softmax")
    assert page.inner_text("#tour-next") == "Finish"
    page.click("#tour-next")
    assert tour_state(page)["hidden"] and page.evaluate("document.activeElement.id") == "steps-tour-start"
    trace_in_page(page)


@pytest.mark.parametrize("size", SIZES)
def test_the_view_and_the_tour_fit_and_axe_finds_nothing(browser, url, size):
    page = open_page(browser, url, size)
    assert page.evaluate(TOO_WIDE_JS) == []  # the embeddings open: Figure 2 scrolls in its own box
    open_block(page, "layer.0.attention.1")
    page.click("#m-bert-encoder-layer-0-attention-self-probs ~ .table-toggle")
    assert page.evaluate("document.documentElement.scrollWidth - innerWidth") <= 0
    assert page.evaluate(TOO_WIDE_JS) == []
    assert axe_violations(page) == []
    probs = "#m-bert-encoder-layer-0-attention-self-probs"
    page.focus(probs)
    for key in ("Control+Home", "ArrowDown", "ArrowRight", "ArrowRight"):
        page.keyboard.press(key)  # the read-out says a value
    article = "article[data-step$='.probs']"  # its heading and formula at the top of the screen
    page.evaluate("(s) => window.scrollTo(0, document.querySelector(s).getBoundingClientRect().top + scrollY)", article)
    shot(page, size)
    page.click("#steps-tour-start")
    for i in range(len(TOUR)):
        state = tour_state(page)
        assert state["inView"] and state["wider"] <= 0 and page.evaluate(TOO_WIDE_JS) == [], (size, i, state)
        if i == 5:
            assert axe_violations(page) == []
            shot(page, f"tour_{size}")
        page.keyboard.press("ArrowRight")
    assert page.errors == []
    page.close()
