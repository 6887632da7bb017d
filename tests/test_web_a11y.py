"""The browser edition for every student (issue 43, WCAG 2.1 AA), in a real browser.

A site exported from the tiny bundled models (bert-lab-classroom, bert-lab-squad, bert-lab-sst2) and
a tiny tagger made here, served by a plain static server and opened in Debian's chromium (playwright,
headless). Every view of the page (Masked LM, Next Sentence, Attention, Question Answering, Classify,
Tag words, Step by step) is checked with its result shown:
- axe-core (web/node_modules) finds no WCAG 2.1 A/AA violation at 1024 x 768, at 390 x 844, and under
  prefers-color-scheme: dark (the page keeps its one light theme there), every table shown;
- the accessibility tree (playwright's aria_snapshot): each figure is named by the sentence of its
  numbers, and the view's live region (role=status) says that result after a computation; the
  sentences are written here from the numbers bertLab returns for the same input;
- keyboard alone: each view's tab, its text typed and Enter, its button; an attention map's token
  picked with the arrow keys and announced, a head picked; every control focused by Tab shows an
  outline of at least 3:1 against what is behind it (a text field's edge too), and Tab leaves every
  view (no trap);
- reflow at 320 px: no sideways page scroll, nothing past the page's edge outside a box that scrolls;
- screenshots web_a11y_<view>_<size>.png in BERT_LAB_A11Y_SHOTS when it is set.
BERT_LAB_WEB_SITE=<folder> checks an exported site instead of the one made here (test_web_page's fixtures).
Needs Node (the page is built by npm) and chromium; skipped without them except under CI
(BERT_LAB_REQUIRE_BROWSER=1), where it fails. Marked slow.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from tests import test_web_page
from tests.conftest import axe_violations
from tests.test_web_steps import TOO_WIDE_JS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

# test_web_page's fixtures, for a site of this module's own: its tiny models exported (or BERT_LAB_WEB_SITE's),
# served by a plain static server, and one chromium
site, url, browser = test_web_page.site, test_web_page.url, test_web_page.browser

VIEWS = ("fill-mask", "next-sentence", "attention", "answer", "classify", "tag")
FIRST = {
    "fill-mask": "text",
    "next-sentence": "a",
    "attention": "a",
    "answer": "question",
    "classify": "text",
    "tag": "text",
}
# What each view is given in the keyboard and naming tests (typed into its first field).
TYPED = {
    "fill-mask": "the cat sat on the [MASK] .",
    "next-sentence": "it was raining .",
    "attention": "the dog chased the ball .",
    "answer": "who opened the door ?",
    "classify": "a warm and funny film .",
    "tag": "Anna flew from Paris to Berlin .",
}


def open_page(browser, url, size="1024", query="", scheme="light"):
    """test_web_page's page (every other origin blocked), once the page has built its views."""
    page = test_web_page.open_page(browser, url, size, query, scheme)
    page.wait_for_function("document.querySelector('#tab-fill-mask')")
    return page


def computed(page, view: str) -> int:
    return int(page.get_attribute(f"#panel-{view}", "data-computed") or 0)


def wait_computed(page, view: str, n: int) -> None:
    page.wait_for_function(f"Number(document.querySelector('#panel-{view}')?.dataset.computed ?? -1) >= {n}")


def show(page, view: str) -> None:
    """The view's tab, then its button: its result computed on the device and drawn."""
    page.click(f"#tab-{view}")
    if view == "steps":
        return wait_computed(page, view, 1)
    wait_computed(page, view, 0)
    n = computed(page, view)
    page.click(f"#{view}-run")
    wait_computed(page, view, n + 1)


def open_tables(page, view: str) -> None:
    page.locator(f"#panel-{view} details:not([open]) > summary").evaluate_all("ss => ss.forEach((s) => s.click())")


def shot(page, view: str, size: str) -> None:
    given = os.environ.get("BERT_LAB_A11Y_SHOTS")
    if given:
        Path(given).mkdir(parents=True, exist_ok=True)
        page.mouse.move(0, 0)
        page.screenshot(path=str(Path(given) / f"web_a11y_{view}_{size}.png"), full_page=True)


# ----------------------------------------------------------------------------------------------
# axe-core on every view, its result shown, at a projector's and a phone's width and in dark mode
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size,scheme", [("1024", "light"), ("390", "light"), ("1024", "dark")])
def test_axe_finds_nothing_on_any_view_with_its_result(browser, url, size, scheme):
    page = open_page(browser, url, size, scheme=scheme)
    found = {}
    for view in (*VIEWS, "steps"):
        show(page, view)
        if view == "attention":
            page.click("#panel-attention .token-pick button >> nth=1")  # a token outlined
        open_tables(page, view)
        found[view] = axe_violations(page)
        shot(page, view, size if scheme == "light" else f"{size}_dark")
    assert found == {view: [] for view in found}
    assert page.errors == []
    page.close()


# ----------------------------------------------------------------------------------------------
# The accessibility tree: each figure named by its numbers, the live region saying the result
# ----------------------------------------------------------------------------------------------
def percent(p: float) -> str:
    """A percentage as the page writes it (web/src/plots.js)."""
    x = 100 * p
    return f"{x:.1f}%" if x >= 10 else f"{x:.2f}%" if x >= 0.01 else "<0.01%"


def best_then(head: str, pairs: list[tuple[str, float]]) -> str:
    """`head “best”, 52.6%; then “next” 12.1%, ...`: at most five, best first (labels already quoted)."""
    (label, p), rest = pairs[0], pairs[1:5]
    then = "; then " + ", ".join(f"{name} {percent(q)}" for name, q in rest) if rest else ""
    return f"{head} {label}, {percent(p)}{then}."


def argmax(values) -> int:
    return max(range(len(values)), key=lambda i: (values[i], -i))


def attention_sentence(tokens, m, layer: int, head: int) -> str:
    best = [argmax(row) for row in m]
    a = argmax([m[i][best[i]] for i in range(len(m))])
    b = best[a]
    means = [sum(row[j] for row in m) / len(tokens) for j in range(len(tokens))]
    c = argmax(means)
    return (
        f"Layer {layer}, head {head}, {len(tokens)} tokens: the strongest weight is from “{tokens[a]}” (token {a}) "
        f"to “{tokens[b]}” (token {b}), {m[a][b]:.2f}; on average the tokens look most at “{tokens[c]}” "
        f"(token {c}), {means[c]:.2f}."
    )


def picked_sentence(tokens, m, i: int) -> str:
    to, by = argmax(m[i]), argmax([row[i] for row in m])
    return (
        f"“{tokens[i]}” (token {i}) outlined: it looks most at “{tokens[to]}” (token {to}), {m[i][to]:.2f}; "
        f"“{tokens[by]}” (token {by}) looks most at it, {m[by][i]:.2f}."
    )


def span_ends(which: str, tokens, probs) -> str:
    order = sorted(range(len(probs)), key=lambda i: -probs[i])[:6]
    return best_then(f"P({which}): highest at", [(f"“{tokens[i]}” (token {i})", probs[i]) for i in order])


def expected(page, view: str) -> tuple[list[str], str]:
    """The names of the view's figures and its live region's sentence, from bertLab's result for what the
    view holds now (its fields and model), computed again in the page."""
    fields = page.locator(f"#panel-{view} .inputs [id]").evaluate_all("es => es.map((e) => [e.id, e.value])")
    v = {k.removeprefix(f"{view}-"): value for k, value in fields}
    model = page.input_value(f"#{view}-model")
    call = {
        "fill-mask": "bertLab.fillMask(v.text, {model, topK: Number(v.k)})",
        "next-sentence": "bertLab.nextSentence(v.a, v.b, {model})",
        "attention": "bertLab.attention(v.a, v.b, {model})",
        "answer": "bertLab.answer(v.question, v.context, {model, topK: 5})",
        "classify": "bertLab.classify(v.text, null, {model})",
        "tag": "bertLab.tag(v.text, {model})",
    }[view]
    r = page.evaluate(f"([v, model]) => {call}", [v, model])
    if view == "fill-mask":
        names = [
            best_then(f"[MASK] {m + 1}: top guess", [(f"“{w}”", p) for w, p in guesses])
            for m, guesses in enumerate(r["predictions"])
        ]
        return names, " ".join(names)
    if view == "next-sentence":
        n = r["is_next"]
        verdict = "follows" if n >= 0.5 else "does not follow"
        said = f"P(IsNext) = {percent(n)}, P(NotNext) = {percent(1 - n)}: the model thinks B {verdict} A."
        return [said], said
    if view == "attention":
        layer, head = int(v["layer"]), int(v["head"])
        said = attention_sentence(r["tokens"], r["attentions"][layer][head], layer, head)
        return [said], said
    if view == "answer":
        best = r["spans"][0] if r["spans"] else {"text": ""}
        names = [span_ends(w, r["tokens"], r[f"{w}_probs"]) for w in ("start", "end")]
        return names, f"Answer: “{best['text']}”, score {best['score']:.2f}." if best["text"] else "No answer"
    if view == "classify":
        said = best_then("Label:", [(f"“{label}”", r["probabilities"][label]) for label in r["labels"]])
        return [said], said
    tagged = [w for w in r["words"] if w["tag"] != "O"]
    shown = ", ".join(f"“{w['word']}” {w['tag']} {percent(w['probability'])}" for w in tagged[:5])
    more = f", and {len(tagged) - 5} more" if len(tagged) > 5 else ""
    n = len(r["words"])
    said = (
        f"{n} words, {len(tagged)} tagged: {shown}{more}." if tagged else f"{n} words, none tagged (every word is O)."
    )
    return [said], said


def names_in(tree: str, role: str) -> list[str]:
    """The names of the nodes of `role` in an aria snapshot (playwright's YAML)."""
    found = []

    def take(text: str) -> None:
        m = re.fullmatch(rf'{role} "(.*)"( \[.*\])?', text)
        if m:
            found.append(m.group(1).replace('\\"', '"'))

    def walk(node) -> None:
        if isinstance(node, list):
            for x in node:
                walk(x)
        elif isinstance(node, dict):
            for k, v in node.items():
                take(k)
                walk(v)
        elif isinstance(node, str):
            take(node)

    walk(yaml.safe_load(tree))
    return found


def status_of(page, view: str) -> str:
    """What the view's live region says, read from the accessibility tree (a role=status node)."""
    [node] = yaml.safe_load(page.locator(f"#{view}-status").aria_snapshot())
    return node["status"]


def test_each_figure_is_named_by_its_numbers_and_the_status_says_the_result(browser, url):
    page = open_page(browser, url)
    for view in VIEWS:
        page.click(f"#tab-{view}")
        wait_computed(page, view, 0)
        page.fill(f"#{view}-{FIRST[view]}", TYPED[view])
        n = computed(page, view)
        page.click(f"#{view}-run")
        wait_computed(page, view, n + 1)
        names, said = expected(page, view)
        tree = page.locator(f"#{view}-out").aria_snapshot()
        assert names_in(tree, "figure" if view == "tag" else "img") == names, (view, tree)
        status = status_of(page, view)
        assert status.startswith(said) and "done in" in status, (view, said, status)
        assert page.locator(f"#{view}-out svg[role=img]:not([aria-label])").count() == 0
        tables = page.locator(f"#{view}-out table")
        assert tables.count() >= len(names)
        for i in range(tables.count()):  # every table: a caption, its column headers, a header starting each row
            t = tables.nth(i)
            assert t.locator("caption").count() == 1 and t.locator("thead th[scope=col]").count() >= 2
            assert t.locator("tbody tr").count() == t.locator("tbody th[scope=row]").count()
    assert page.errors == []
    page.close()


def test_an_error_is_said_in_the_live_region(browser, url):
    page = open_page(browser, url)
    page.fill("#fill-mask-text", "no mask in this sentence .")
    page.press("#fill-mask-text", "Enter")
    page.wait_for_function("document.querySelector('#fill-mask-status').className.includes('error')")
    status = status_of(page, "fill-mask")
    assert "no [MASK]" in status, status
    page.close()


# ----------------------------------------------------------------------------------------------
# Keyboard alone
# ----------------------------------------------------------------------------------------------
def focused(page, selector: str) -> bool:
    return page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector)


def tab_to(page, selector: str, key: str = "Tab", limit: int = 150) -> None:
    """Tab (or Shift+Tab) until `selector` has the focus."""
    for _ in range(limit):
        page.keyboard.press(key)
        if focused(page, selector):
            return
    raise AssertionError(f"{key} never reached {selector}")


def test_each_view_is_used_with_the_keyboard_alone(browser, url):
    page = open_page(browser, url)
    for view in VIEWS:
        tab_to(page, f"#tab-{view}", "Shift+Tab")  # the tabs come before every panel
        page.keyboard.press("Enter")
        wait_computed(page, view, 0)
        tab_to(page, f"#{view}-{FIRST[view]}")
        page.keyboard.press("Control+A")
        page.keyboard.type(TYPED[view])
        n = computed(page, view)
        page.keyboard.press("Enter")  # a text's Enter computes
        wait_computed(page, view, n + 1)
        assert page.input_value(f"#{view}-{FIRST[view]}") == TYPED[view]
        _, said = expected(page, view)
        assert said in page.inner_text(f"#{view}-status"), view
        tab_to(page, f"#{view}-run")
        page.keyboard.press("Enter")  # and so does its button
        wait_computed(page, view, n + 2)
    assert page.errors == []
    page.close()


def test_an_attention_token_and_head_are_picked_by_keyboard(browser, url):
    page = open_page(browser, url, "390", "?view=attention")
    wait_computed(page, "attention", 0)
    tab_to(page, "#panel-attention .scroll[role=region]")  # the map's box: a phone scrolls it sideways
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.activeElement.scrollLeft > 0")
    tab_to(page, "#panel-attention .token-pick button")
    for key in ("ArrowRight", "ArrowRight", "Enter"):
        page.keyboard.press(key)
    assert focused(page, "[data-focus='token-2'][aria-pressed=true]")  # focus kept through the redraw
    assert page.locator(".token-pick button[aria-pressed=true]").count() == 1
    r = page.evaluate(
        "([a, b, m]) => bertLab.attention(a, b, {model: m})",
        [page.input_value("#attention-a"), page.input_value("#attention-b"), page.input_value("#attention-model")],
    )
    m = r["attentions"][0][0]
    said = page.inner_text("#attention-status")
    assert said == picked_sentence(r["tokens"], m, 2), said
    page.keyboard.press("Tab")  # out of the toolbar in one press: its tokens are one tab stop
    assert not focused(page, ".token-pick button")
    tab_to(page, "#panel-attention button[data-focus='head-1']")
    page.keyboard.press("Enter")
    assert page.input_value("#attention-head") == "1" and focused(page, "[data-focus='head-1'][aria-pressed=true]")
    said = status_of(page, "attention")
    head1 = r["attentions"][0][1]  # the token stays outlined on the new head's map
    assert said == f"{attention_sentence(r['tokens'], head1, 0, 1)} {picked_sentence(r['tokens'], head1, 2)}", said
    assert page.errors == []
    page.close()


# ----------------------------------------------------------------------------------------------
# Focus visible, no trap; reflow at 320 px
# ----------------------------------------------------------------------------------------------
FOCUS_JS = """() => {
  const e = document.activeElement;
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => v / 255)
    .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  let p = e.parentElement, behind = [255, 255, 255];
  for (; p; p = p.parentElement) {
    const c = rgb(getComputedStyle(p).backgroundColor);
    if (c.length === 3 || c[3] > 0) { behind = c.slice(0, 3); break; }
  }
  const s = getComputedStyle(e);
  const ratio = (x, y) => (Math.max(lum(x), lum(y)) + 0.05) / (Math.min(lum(x), lum(y)) + 0.05);
  const field = e.matches('input, select, textarea');
  return {id: `${e.tagName}#${e.id}.${e.className?.baseVal ?? e.className}`, style: s.outlineStyle,
    width: parseFloat(s.outlineWidth), ratio: ratio(rgb(s.outlineColor), behind),
    edge: field ? ratio(rgb(s.borderTopColor), behind) : null};
}"""


@pytest.mark.parametrize("view", VIEWS)
def test_every_control_shows_its_focus_and_tab_leaves_the_view(browser, url, view):
    page = open_page(browser, url, query=f"?view={view}")
    show(page, view)
    open_tables(page, view)
    tab_to(page, f"#tab-{view}", "Shift+Tab")
    tab_to(page, f"#{view}-model")  # the panel's first control
    seen = []
    for _ in range(250):
        if not focused(page, f"#panel-{view} *"):
            break  # out of the panel: Tab was never held inside it
        f = page.evaluate(FOCUS_JS)
        seen.append(f["id"])
        assert f["style"] != "none" and f["width"] >= 2 and f["ratio"] >= 3, f
        assert f["edge"] is None or f["edge"] >= 3, f  # a field's own edge, seen without the focus too
        page.keyboard.press("Tab")
    else:
        raise AssertionError(f"Tab stayed inside {view}: {seen[-5:]}")
    assert len(seen) >= 4, seen  # the model, a field, the button, a table at least
    page.close()


def test_every_view_reflows_at_320_px(browser, url):
    page = open_page(browser, url, "320")
    for view in (*VIEWS, "steps"):
        show(page, view)
        open_tables(page, view)
        wider = page.evaluate("document.documentElement.scrollWidth - innerWidth")
        assert wider <= 0 and page.evaluate(TOO_WIDE_JS) == [], (view, wider)
        shot(page, view, "320")
    assert page.errors == []
    page.close()
