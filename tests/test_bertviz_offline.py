"""lab.bertviz_offline: bertviz's views as self-contained pages that draw with no network.

The unit tests read the HTML (no CDN, d3 + jQuery inlined from the installed packages, tokens
only as escaped JSON, the size cap); the `slow` ones open the pages in Debian's chromium with
every non-local request aborted and wait for bertviz's SVG (skipped when chromium is absent,
except under CI with BERT_LAB_REQUIRE_BROWSER=1, as tests/test_browser.py).
"""
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

from lab import bertviz_offline, explore
from tests.conftest import ROOT, chromium_browser
from tests.test_explore import mlm  # noqa: F401  (the fixture: a tiny BertForPreTraining + tokenizer)

EVIL = "</script><img src=x onerror=alert(1)>"
VIEWS = {"head": bertviz_offline.head_view_html, "model": bertviz_offline.model_view_html}


@pytest.fixture(scope="module")
def result(mlm):
    """A sentence pair through test_explore's tiny model: L = 2 layers x [1, 4 heads, T, T]."""
    model, tok = mlm
    return explore.attention(model, tok, "the cat sat on the mat .", "the dog ran .")


def evil_tokens(result):
    """The result's tokens with one replaced by markup that would run a script if it were HTML."""
    return [EVIL if i == 2 else t for i, t in enumerate(result.tokens)]


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each <script>."""
    def __init__(self, page):
        super().__init__()
        self.tags, self.scripts, self._in_script = [], [], False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def page_params(page: str) -> dict:
    """The data bertviz's script reads: `const params = {...};`."""
    return json.loads(re.search(r"const params = (\{.*?\});", page).group(1))


# ----------------------------------------------------------------------------------------
# The page: no network, local libraries, bertviz's own script, its data
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("view", VIEWS)
def test_page_needs_no_network(result, view):
    page = VIEWS[view](result.attentions, result.tokens, result.sentence_b_start)
    assert page.startswith("<!DOCTYPE html>")
    assert "cdnjs" not in page and "cdn." not in page and "require.min" not in page
    assert "require.config(" not in page
    for tag, attrs in Tags(page).tags:
        for name in ("src", "href"):
            assert not re.match(r"\s*(https?:)?//", attrs.get(name) or ""), (tag, attrs)
    # nothing in the page may fetch anything: only inline scripts and styles run
    assert "default-src 'none'" in page


@pytest.mark.parametrize("view", VIEWS)
def test_page_inlines_d3_jquery_and_bertviz_script(result, view):
    page = VIEWS[view](result.attentions, result.tokens, result.sentence_b_start)
    d3, jquery = bertviz_offline.library_sources()
    assert "d3js.org v5" in d3.splitlines()[0] and "jQuery v3" in jquery.splitlines()[0]
    assert d3.splitlines()[0] in page and jquery.splitlines()[0] in page
    assert d3[-2000:] in page and jquery[-2000:] in page
    import bertviz
    own = (Path(bertviz.__file__).parent / f"{view}_view.js").read_text()
    assert own[-3000:] in page                       # bertviz's drawing code, unchanged
    assert len(Tags(page).scripts) == 5              # error note, jQuery, d3, require shim, bertviz


@pytest.mark.parametrize("view", VIEWS)
def test_page_carries_the_tokens_and_rounded_attention(result, view):
    page = VIEWS[view](result.attentions, result.tokens, result.sentence_b_start)
    params = page_params(page)
    every = params["attention"][0]                   # "All"; then A->A, B->B, A->B, B->A
    assert len(params["attention"]) == 5
    assert every["left_text"] == every["right_text"] == result.tokens
    sent = torch.tensor(every["attn"], dtype=torch.float64)                      # (L, A, T, T)
    expected = torch.stack([a[0] for a in result.attentions]).double()
    assert sent.shape == expected.shape
    assert torch.allclose(sent, expected, atol=5e-4 + 1e-9)
    b = result.sentence_b_start
    assert params["attention"][1]["left_text"] == result.tokens[:b]
    # one copy of the data (bertviz itself writes it twice, the second time into a comment):
    # [CLS] is in All (both sides), A -> A (both sides), A -> B (left) and B -> A (right)
    assert page.count('"[CLS]"') == 6


@pytest.mark.parametrize("view", VIEWS)
def test_tokens_cannot_break_out_of_the_script(result, view):
    page = VIEWS[view](result.attentions, evil_tokens(result), result.sentence_b_start)
    assert EVIL not in page and "<img" not in page and "onerror=alert" in page
    parsed = Tags(page)
    assert [t for t, _ in parsed.tags if t not in ("html", "head", "meta", "title", "body", "script",
                                                   "div", "span", "select", "option")] == []
    assert len(parsed.scripts) == 5
    assert page_params(page)["attention"][0]["left_text"][2] == EVIL    # the same string to JS


def test_json_for_script_escapes_markup():
    text = bertviz_offline.json_for_script({"t": ["</script>", "<!--", "a&b", "\u2028"]})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"t": ["</script>", "<!--", "a&b", "\u2028"]}


def test_single_sentence_has_no_filter(result):
    r = result
    b = r.sentence_b_start
    single = [a[..., :b, :b] for a in r.attentions]
    page = bertviz_offline.head_view_html(single, r.tokens[:b])
    assert len(page_params(page)["attention"]) == 1 and 'id="filter"' not in page


# ----------------------------------------------------------------------------------------
# The cap and bad input
# ----------------------------------------------------------------------------------------
def fake_attention(layers, heads, tokens):
    """Uniform attention as bertviz wants it, without allocating L copies (expand)."""
    row = torch.full((1, heads, tokens, tokens), 1.0 / tokens)
    return tuple(row for _ in range(layers)), [f"w{i}" for i in range(tokens)]


@pytest.mark.parametrize("view, limit", [("head", bertviz_offline.HEAD_VIEW_LIMIT),
                                         ("model", bertviz_offline.MODEL_VIEW_LIMIT)])
def test_too_large_input_is_refused_with_the_limit(view, limit):
    # BERT-base's shape: 12 layers x 12 heads, 128 tokens = 2.4M weights
    attentions, tokens = fake_attention(12, 12, 128)
    with pytest.raises(ValueError, match=f"limit of {limit:,}") as e:
        VIEWS[view](attentions, tokens)
    message = str(e.value)
    assert "12 layers x 12 heads x 128² tokens = 2,359,296" in message and "shorter text" in message
    fits = int(re.search(r"at most about (\d+) tokens", message).group(1))
    assert 12 * 12 * fits ** 2 <= limit < 12 * 12 * (fits + 1) ** 2
    assert message.endswith("or the head view.") == (view == "model")
    # just under the limit is drawn
    attentions, tokens = fake_attention(12, 12, fits)
    assert VIEWS[view](attentions, tokens).startswith("<!DOCTYPE html>")


def test_limit_can_be_set(result):
    with pytest.raises(ValueError, match="limit of 100"):
        bertviz_offline.head_view_html(result.attentions, result.tokens, limit=100)


@pytest.mark.parametrize("args, message", [
    (lambda r: (r.attentions, r.tokens[:-1]), "T = "),
    (lambda r: ((), r.tokens), "no attention maps"),
    (lambda r: ([a[0] for a in r.attentions], r.tokens), r"\[1, heads, T, T\]"),
    (lambda r: (r.attentions, r.tokens, len(r.tokens)), "sentence_b_start"),
])
def test_bad_input_is_refused_with_a_message(result, args, message):
    with pytest.raises(ValueError, match=message):
        bertviz_offline.head_view_html(*args(result))


def test_missing_package_names_what_to_install(monkeypatch, result):
    real = bertviz_offline.importlib.util.find_spec
    monkeypatch.setattr(bertviz_offline.importlib.util, "find_spec",
                        lambda name, *a: None if name == "mpld3" else real(name, *a))
    with pytest.raises(ModuleNotFoundError, match="pip install mpld3"):
        bertviz_offline.head_view_html(result.attentions, result.tokens)


def test_core_import_needs_neither_bertviz_nor_its_libraries():
    code = ("import sys, lab.bertviz_offline; "
            "print([m for m in ('bertviz', 'mpld3', 'xstatic', 'IPython') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ----------------------------------------------------------------------------------------
# The iframe (dashboard, notebooks)
# ----------------------------------------------------------------------------------------
def test_iframe_holds_the_page_escaped(result):
    page = bertviz_offline.head_view_html(result.attentions, evil_tokens(result))
    frame = bertviz_offline.iframe(page, 480)
    (tag, attrs), = Tags(frame).tags                 # one element: nothing escaped the attribute
    assert tag == "iframe" and attrs["srcdoc"] == page
    assert attrs["sandbox"] == "allow-scripts" and "height:480px" in attrs["style"]


def test_frame_height_follows_the_tokens(result):
    attentions, _ = fake_attention(2, 4, 10)
    small = bertviz_offline.frame_height("head", attentions)
    assert 200 < small < bertviz_offline.frame_height("head", fake_attention(2, 4, 20)[0])
    assert bertviz_offline.frame_height("model", fake_attention(12, 12, 200)[0]) == \
        bertviz_offline.MAX_FRAME_HEIGHT
    with pytest.raises(ValueError, match="view must be"):
        bertviz_offline.frame_height("neuron", attentions)


@pytest.mark.parametrize("view", VIEWS)
def test_show_displays_an_iframe_in_a_notebook(monkeypatch, result, view):
    import IPython.display
    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    show = bertviz_offline.show_head_view if view == "head" else bertviz_offline.show_model_view
    assert show(result.attentions, result.tokens, result.sentence_b_start) is None
    (obj,) = shown
    assert "<iframe" in obj.data and "srcdoc=" in obj.data and "cdnjs" not in obj.data


# ----------------------------------------------------------------------------------------
# In a real browser, with the network blocked
# ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as browser:
        yield browser


def offline_page(browser):
    """A new tab that aborts every request leaving the machine, and records what it saw:
    (page, requests aborted, script errors, dialogs opened)."""
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.set_default_timeout(60_000)
    aborted, errors, dialogs = [], [], []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "about:")):
            r.continue_()
        else:
            aborted.append(r.request.url)
            r.abort()
    page.route("**/*", route)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    return page, aborted, errors, dialogs


SVG_DRAWN = "n => document.querySelectorAll('svg text').length >= n && document.querySelectorAll('svg line').length > 0"


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("view", VIEWS)
def test_view_draws_svg_with_the_network_blocked(browser, result, tmp_path, view):
    tokens = evil_tokens(result)
    path = tmp_path / f"{view}.html"
    path.write_text(VIEWS[view](result.attentions, tokens, result.sentence_b_start), encoding="utf-8")
    page, aborted, errors, dialogs = offline_page(browser)
    page.goto(path.as_uri())
    # head view: every token twice (both sides); model view: the axis labels
    page.wait_for_function(SVG_DRAWN, arg=2 * len(tokens) if view == "head" else 4)
    assert aborted == [] and errors == [] and dialogs == []
    if view == "head":            # the hostile token is drawn as text, and no <img> came of it
        assert EVIL in page.locator("svg").first.text_content()
    assert page.locator("img").count() == 0
    page.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_view_draws_inside_a_sandboxed_srcdoc_iframe(browser, result, tmp_path):
    """As the dashboard and the notebooks show it: the page inside iframe(srcdoc)."""
    page_html = bertviz_offline.head_view_html(result.attentions, evil_tokens(result), result.sentence_b_start)
    height = bertviz_offline.frame_height("head", result.attentions)
    host = tmp_path / "host.html"
    host.write_text(f"<!DOCTYPE html><html><body>{bertviz_offline.iframe(page_html, height)}</body></html>",
                    encoding="utf-8")
    page, aborted, errors, dialogs = offline_page(browser)
    page.goto(host.as_uri())
    frame = page.frame_locator("iframe")
    frame.locator("svg line").first.wait_for(state="attached")
    assert frame.locator("svg text").count() >= 2 * len(result.tokens)
    # switching layer redraws (bertviz's jQuery change handler works with jQuery 3)
    frame.locator("#layer").select_option("1")
    frame.locator("svg line").first.wait_for(state="attached")
    assert aborted == [] and errors == [] and dialogs == []
    page.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_bertviz_own_page_is_blank_offline(browser, result, tmp_path):
    """The control: bertviz's own page, under the same blocking, asks the CDN and draws nothing
    (so the tests above see the network blocked, and the offline page is what makes it draw)."""
    import bertviz
    path = tmp_path / "bertviz.html"
    path.write_text(bertviz.head_view(list(result.attentions), result.tokens, html_action="return").data,
                    encoding="utf-8")
    page, aborted, errors, dialogs = offline_page(browser)
    page.goto(path.as_uri())
    page.wait_for_timeout(500)
    assert any("cdnjs.cloudflare.com" in url for url in aborted)
    assert page.locator("svg").count() == 0
    page.close()
