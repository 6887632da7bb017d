"""lab.figures.bertviz_offline: bertviz's views as self-contained pages that draw with no network.

The unit tests read the HTML (the lab's template with every placeholder filled, nothing fetched,
d3 + jQuery + bertviz's own script inlined unchanged from the installed packages, tokens only as
escaped JSON, bertviz's data format, the size cap); the `slow` ones open the pages in Debian's chromium with
every non-local request aborted and wait for bertviz's SVG (skipped when chromium is absent,
except under CI with BERT_LAB_REQUIRE_BROWSER=1, as tests/test_browser.py). The neuron view's
queries and keys (explore.queries_and_keys) are checked against the model's own attention.
"""

import json
import math
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

from lab import explore
from lab.figures import bertviz_offline
from tests.conftest import ROOT, chromium_browser

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


def page_config(page: str) -> dict:
    """What the template's script reads: {"view", "filters", "params"} from the JSON <script>."""
    found = re.search(r'<script type="application/json" id="bertviz-config">(.*?)</script>', page, flags=re.S)
    return json.loads(found.group(1))


def page_params(page: str) -> dict:
    """The data and settings bertviz's script reads (as PYTHON_PARAMS / window.bertviz_params)."""
    return page_config(page)["params"]


def bertviz_script(view: str) -> str:
    """bertviz's own {view}_view.js, as installed."""
    import bertviz

    return (Path(bertviz.__file__).parent / f"{view}_view.js").read_text(encoding="utf-8")


def csp(page: str) -> str:
    """The page's Content-Security-Policy, as the browser reads it (entities decoded)."""
    (content,) = [a["content"] for t, a in Tags(page).tags if t == "meta" and a.get("http-equiv")]
    return content


PAGE_TAGS = ("html", "head", "meta", "title", "style", "body", "script", "div", "span", "select")


# ----------------------------------------------------------------------------------------
# The page: no network, local libraries, bertviz's own script, its data
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("view", VIEWS)
def test_page_needs_no_network(result, view):
    page = VIEWS[view](result.attentions, result.tokens, result.sentence_b_start)
    assert page.startswith("<!DOCTYPE html>")
    for tag, attrs in Tags(page).tags:
        for name in ("src", "href"):
            assert name not in attrs, (tag, attrs)
    # nothing in the page may fetch anything: only inline scripts and styles run
    assert csp(page).startswith("default-src 'none'; script-src 'unsafe-inline';")
    # the CDN addresses are left only in bertviz's own script, unchanged: its require.config()
    # names them, and the template's require stand-in ignores that call
    rest = page.replace(bertviz_script(view), "")
    assert "cdnjs" not in rest and "cdn." not in rest and "require.min" not in rest


@pytest.mark.parametrize("view", VIEWS)
def test_page_inlines_d3_jquery_and_bertviz_script(result, view):
    page = VIEWS[view](result.attentions, result.tokens, result.sentence_b_start)
    d3, jquery = bertviz_offline.library_sources()
    assert "d3js.org v5" in d3.splitlines()[0] and "jQuery v3" in jquery.splitlines()[0]
    assert d3.splitlines()[0] in page and jquery.splitlines()[0] in page
    assert d3[-2000:] in page and jquery[-2000:] in page
    scripts = Tags(page).scripts  # the data (JSON), the template's script, jQuery, d3, bertviz
    assert len(scripts) == 5
    assert scripts[2:] == [jquery, d3, bertviz_script(view)]  # each whole and unchanged


@pytest.mark.parametrize("view", VIEWS)
def test_page_carries_the_tokens_and_rounded_attention(result, view):
    page = VIEWS[view](result.attentions, result.tokens, result.sentence_b_start)
    params = page_params(page)
    every = params["attention"][0]  # "All"; then A->A, B->B, A->B, B->A
    assert len(params["attention"]) == 5
    assert every["left_text"] == every["right_text"] == result.tokens
    sent = torch.tensor(every["attn"], dtype=torch.float64)  # (L, A, T, T)
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
    assert [t for t, _ in parsed.tags if t not in PAGE_TAGS] == []
    assert len(parsed.scripts) == 5
    assert page_params(page)["attention"][0]["left_text"][2] == EVIL  # the same string to JS


def test_json_for_script_escapes_markup():
    text = bertviz_offline.json_for_script({"t": ["</script>", "<!--", "a&b", "\u2028"]})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"t": ["</script>", "<!--", "a&b", "\u2028"]}


def test_single_sentence_has_no_filter(result):
    r = result
    b = r.sentence_b_start
    single = [a[..., :b, :b] for a in r.attentions]
    page = bertviz_offline.head_view_html(single, r.tokens[:b])
    assert len(page_params(page)["attention"]) == 1 and page_config(page)["filters"] == []
    assert page_params(page)["attention"][0]["name"] is None  # as bertviz names one sentence


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("pair", [False, True])
def test_data_is_what_bertviz_builds(result, view, pair):
    """bertviz's own head_view() / model_view(), given the same rounded attention, builds the same
    data and settings (its page is read here only to compare; the module never reads it)."""
    import bertviz

    r = result
    b = r.sentence_b_start
    attentions, tokens = (r.attentions, r.tokens) if pair else ([a[..., :b, :b] for a in r.attentions], r.tokens[:b])
    rounded = [a.double().round(decimals=bertviz_offline.DECIMALS) for a in attentions]
    draw = bertviz.head_view if view == "head" else bertviz.model_view
    options = {} if view == "head" else {"display_mode": "light"}
    theirs_page = draw(rounded, tokens, b if pair else None, html_action="return", **options).data
    theirs = json.loads(re.search(r"const params = (\{.*?\}); // HACK", theirs_page).group(1))
    ours = page_params(VIEWS[view](attentions, tokens, b if pair else None))
    assert ours.pop("root_div_id") == "bertviz" and theirs.pop("root_div_id").startswith("bertviz-")
    if view == "model":  # at least 12 columns: thumbnails at most 7 px per token (see below)
        heads = attentions[0].shape[1]
        assert theirs.pop("total_heads") == heads and ours.pop("total_heads") == max(heads, 12)
    assert ours == theirs


def test_model_view_thumbnails_are_at_most_7_px_per_token(result):
    """bertviz's model view draws 7 x 12 / total_heads px per token: given max(heads, 12)."""
    for heads in (1, 2, 4, 12, 16):
        attentions, tokens = fake_attention(2, heads, 6)
        params = page_params(bertviz_offline.model_view_html(attentions, tokens))
        assert 7 * 12 / params["total_heads"] == min(7, 7 * 12 / heads)
        assert params["include_heads"] == list(range(heads))


# ----------------------------------------------------------------------------------------
# The template: every placeholder filled once, each value escaped for where it stands
# ----------------------------------------------------------------------------------------
def template() -> str:
    return (Path(bertviz_offline.__file__).parent / bertviz_offline.TEMPLATE).read_text(encoding="utf-8")


@pytest.mark.parametrize("view", ["head", "model", "neuron"])
def test_every_placeholder_is_filled(result, qk, view, tmp_path):
    names = set(re.findall(r"\{\{([A-Z][A-Z0-9_]*)\}\}", template()))
    assert names == {"CSP", "VIEW", "CONFIG_JSON", "JQUERY_JS", "D3_JS", "VIEW_JS"}
    page = neuron_page(qk) if view == "neuron" else VIEWS[view](result.attentions, result.tokens)
    assert [name for name in names if "{{" + name + "}}" in page] == []
    assert page_config(page)["view"] == view and f'<div id="bertviz" class="{view}">' in page


def test_a_hostile_token_stays_in_the_data(result):
    """`</script><script>alert(1)</script>` as a token: the page has the same five scripts, and
    the token reaches the page's script as the same string."""
    hostile = "</script><script>alert(1)</script>"
    tokens = [hostile if i == 1 else t for i, t in enumerate(result.tokens)]
    for view in VIEWS:
        page = VIEWS[view](result.attentions, tokens, result.sentence_b_start)
        assert hostile not in page and "<script>alert" not in page
        parsed = Tags(page)
        assert len(parsed.scripts) == 5 and [t for t, _ in parsed.tags if t not in PAGE_TAGS] == []
        assert json.loads(parsed.scripts[0])["params"]["attention"][0]["left_text"][1] == hostile


def test_fill_template_escapes_each_kind_and_fills_once():
    page = bertviz_offline.fill_template(
        '<p title="{{TITLE}}">{{TITLE}}</p><script>{{DATA_JSON}}</script><script>{{CODE_JS}}</script>',
        {"TITLE": '"><script>x</script>', "DATA_JSON": ["</script>", "{{CODE_JS}}"], "CODE_JS": "let a = 1 < 2;"},
    )
    ((_, p), (_, s1), (_, s2)) = Tags(page).tags
    assert p["title"] == '"><script>x</script>' and len(Tags(page).scripts) == 2
    assert json.loads(Tags(page).scripts[0]) == ["</script>", "{{CODE_JS}}"]  # not filled again
    assert Tags(page).scripts[1] == "let a = 1 < 2;"
    with pytest.raises(ValueError, match=r"missing \['B'\], unused \[\]"):
        bertviz_offline.fill_template("{{A}} {{B}}", {"A": 1})
    with pytest.raises(ValueError, match=r"unused \['C'\]"):
        bertviz_offline.fill_template("{{A}}", {"A": 1, "C": 2})


@pytest.mark.parametrize("code", ["x = '</script>';", "x = '</SCRIPT ';", "x = '<!--';"])
def test_code_that_could_end_its_script_is_refused_not_rewritten(code):
    with pytest.raises(ValueError, match="would end its <script> early"):
        bertviz_offline.fill_template("<script>{{X_JS}}</script>", {"X_JS": code})


def test_no_line_of_bertviz_is_rewritten():
    """The module and the template hold no line of bertviz's scripts (no table of lines to
    replace): the page carries each script whole (test_page_inlines_...), and the template's own
    script supplies what they ask for."""
    ours = Path(bertviz_offline.__file__).read_text(encoding="utf-8") + template()
    for view in ("head", "model", "neuron"):
        for line in bertviz_script(view).splitlines():
            line = line.strip()
            if len(line) >= 16 and not line.startswith(("//", "*", "/*")):
                assert line not in ours, (view, line)


def test_the_template_ships_with_the_package():
    """pyproject.toml's package-data puts bertviz_page.html into the wheel (the module reads it
    with importlib.resources)."""
    from fnmatch import fnmatch

    tomllib = pytest.importorskip("tomllib")
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    data = setuptools.get("package-data", {})
    patterns = data.get("*", []) + data.get("lab.figures", [])
    assert any(fnmatch(bertviz_offline.TEMPLATE, p) for p in patterns), data


def test_a_changed_bertviz_script_is_refused_loudly(monkeypatch, result, tmp_path):
    """A bertviz whose script no longer reads PYTHON_PARAMS: a RuntimeError naming what is missing."""
    from importlib.machinery import ModuleSpec

    (tmp_path / "head_view.js").write_text(
        bertviz_script("head").replace("PYTHON_PARAMS", "window.params"), encoding="utf-8"
    )
    installed = ModuleSpec("bertviz", None, is_package=True)
    installed.submodule_search_locations = [str(tmp_path)]
    real = bertviz_offline.importlib.util.find_spec
    monkeypatch.setattr(
        bertviz_offline.importlib.util, "find_spec", lambda name, *a: installed if name == "bertviz" else real(name, *a)
    )
    with pytest.raises(RuntimeError, match=r"head_view\.js has no 'PYTHON_PARAMS'.*bertviz_page\.html needs updating"):
        bertviz_offline.head_view_html(result.attentions, result.tokens)


# ----------------------------------------------------------------------------------------
# The cap and bad input
# ----------------------------------------------------------------------------------------
def fake_attention(layers, heads, tokens):
    """Uniform attention as bertviz wants it, without allocating L copies (expand)."""
    row = torch.full((1, heads, tokens, tokens), 1.0 / tokens)
    return tuple(row for _ in range(layers)), [f"w{i}" for i in range(tokens)]


@pytest.mark.parametrize(
    "view, limit", [("head", bertviz_offline.HEAD_VIEW_LIMIT), ("model", bertviz_offline.MODEL_VIEW_LIMIT)]
)
def test_too_large_input_is_refused_with_the_limit(view, limit):
    # BERT-base's shape: 12 layers x 12 heads, 128 tokens = 2.4M weights
    attentions, tokens = fake_attention(12, 12, 128)
    with pytest.raises(ValueError, match=f"limit of {limit:,}") as e:
        VIEWS[view](attentions, tokens)
    message = str(e.value)
    assert "12 layers x 12 heads x 128² tokens = 2,359,296" in message and "shorter text" in message
    fits = int(re.search(r"at most about (\d+) tokens", message).group(1))
    assert 12 * 12 * fits**2 <= limit < 12 * 12 * (fits + 1) ** 2
    assert message.endswith("or the head view.") == (view == "model")
    # just under the limit is drawn
    attentions, tokens = fake_attention(12, 12, fits)
    assert VIEWS[view](attentions, tokens).startswith("<!DOCTYPE html>")


def test_limit_can_be_set(result):
    with pytest.raises(ValueError, match="limit of 100"):
        bertviz_offline.head_view_html(result.attentions, result.tokens, limit=100)


@pytest.mark.parametrize(
    "args, message",
    [
        (lambda r: (r.attentions, r.tokens[:-1]), "T = "),
        (lambda r: ((), r.tokens), "no attention maps"),
        (lambda r: ([a[0] for a in r.attentions], r.tokens), r"\[1, heads, T, T\]"),
        (lambda r: (r.attentions, r.tokens, len(r.tokens)), "sentence_b_start"),
    ],
)
def test_bad_input_is_refused_with_a_message(result, args, message):
    with pytest.raises(ValueError, match=message):
        bertviz_offline.head_view_html(*args(result))


def test_missing_package_names_what_to_install(monkeypatch, result):
    real = bertviz_offline.importlib.util.find_spec
    monkeypatch.setattr(
        bertviz_offline.importlib.util, "find_spec", lambda name, *a: None if name == "mpld3" else real(name, *a)
    )
    with pytest.raises(ModuleNotFoundError, match="pip install mpld3"):
        bertviz_offline.head_view_html(result.attentions, result.tokens)


def test_core_import_needs_neither_bertviz_nor_its_libraries():
    code = (
        "import sys, lab.figures.bertviz_offline; "
        "print([m for m in ('bertviz', 'mpld3', 'xstatic', 'IPython') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ----------------------------------------------------------------------------------------
# The iframe (dashboard, notebooks)
# ----------------------------------------------------------------------------------------
def test_iframe_holds_the_page_escaped(result):
    page = bertviz_offline.head_view_html(result.attentions, evil_tokens(result))
    frame = bertviz_offline.iframe(page, 480)
    ((tag, attrs),) = Tags(frame).tags  # one element: nothing escaped the attribute
    assert tag == "iframe" and attrs["srcdoc"] == page
    assert attrs["sandbox"] == "allow-scripts" and "height:480px" in attrs["style"]


def test_frame_height_follows_the_tokens(result):
    attentions, _ = fake_attention(2, 4, 10)
    small = bertviz_offline.frame_height("head", attentions)
    assert 200 < small < bertviz_offline.frame_height("head", fake_attention(2, 4, 20)[0])
    assert bertviz_offline.frame_height("model", fake_attention(12, 12, 200)[0]) == bertviz_offline.MAX_FRAME_HEIGHT
    with pytest.raises(ValueError, match="view must be"):
        bertviz_offline.frame_height("graph", attentions)
    assert (
        200
        < bertviz_offline.frame_height("neuron", attentions)
        < bertviz_offline.frame_height("neuron", fake_attention(2, 4, 20)[0])
    )


@pytest.mark.parametrize("view", VIEWS)
def test_show_displays_an_iframe_in_a_notebook(monkeypatch, result, view):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    show = bertviz_offline.show_head_view if view == "head" else bertviz_offline.show_model_view
    assert show(result.attentions, result.tokens, result.sentence_b_start) is None
    (obj,) = shown
    ((_, attrs),) = Tags(obj.data).tags[1:]  # <div><iframe srcdoc=...></div>
    assert attrs["srcdoc"].startswith("<!DOCTYPE html>") and csp(attrs["srcdoc"]).startswith("default-src 'none'")


# ----------------------------------------------------------------------------------------
# The neuron view: queries and keys from the lab's model, bertviz's data format
# ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def qk(mlm):
    """explore.queries_and_keys on the same pair as `result`: d = 32 hidden / 4 heads = 8."""
    model, tok = mlm
    return explore.queries_and_keys(model, tok, "the cat sat on the mat .", "the dog ran .")


def neuron_page(r, tokens=None, **options):
    return bertviz_offline.neuron_view_html(
        r.queries, r.keys, r.attentions, tokens or r.tokens, r.sentence_b_start, **options
    )


def neuron_params(page: str) -> dict:
    """The data bertviz's neuron_view.js reads as window.bertviz_params."""
    return page_params(page)


def test_queries_and_keys_reproduce_the_models_attention(mlm, qk, result):
    model, tok = mlm
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    d = model.config.hidden_size // A
    T = len(qk.tokens)
    assert qk.tokens == result.tokens and qk.sentence_b_start == result.sentence_b_start
    assert len(qk.queries) == len(qk.keys) == L
    assert all(x.shape == (1, A, T, d) and x.dtype == torch.float32 for x in qk.queries + qk.keys)
    for l in range(L):
        assert torch.equal(qk.attentions[l], result.attentions[l])
        q, k = qk.queries[l][0], qk.keys[l][0]  # (A, T, d)
        # one unpadded text: the mask term is 0 everywhere
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        assert torch.allclose(scores.softmax(-1), qk.attentions[l][0], atol=1e-6)
    # the vectors are the projections of the layer's input, head h = features h*d..(h+1)*d-1
    with torch.no_grad():
        enc = tok.encode("the cat sat on the mat .", "the dog ran .")
        out = model.bert(torch.tensor([enc.input_ids]), torch.tensor([enc.token_type_ids]), output_hidden_states=True)
        for l, layer in enumerate(model.bert.encoder.layer):
            x = out.hidden_states[l][0]  # (T, H) the input of layer l
            for h in range(A):
                assert torch.allclose(
                    qk.queries[l][0, h], layer.attention.self.query(x)[:, h * d : (h + 1) * d], atol=1e-6
                )
                assert torch.allclose(qk.keys[l][0, h], layer.attention.self.key(x)[:, h * d : (h + 1) * d], atol=1e-6)


def test_queries_and_keys_leave_the_model_as_it_was(mlm):
    model, tok = mlm
    model.train()  # dropout on: the result must still be eval's
    try:
        r = explore.queries_and_keys(model, tok, "the cat sat .")
        assert model.training
    finally:
        model.eval()
    assert all(not m._forward_hooks for m in model.modules())
    assert r.sentence_b_start is None
    again = explore.queries_and_keys(model, tok, "the cat sat .")
    assert all(
        torch.equal(a, b)
        for a, b in zip(r.queries + r.keys + r.attentions, again.queries + again.keys + again.attentions)
    )


def test_queries_and_keys_from_many_threads_at_once(mlm):
    """The dashboard runs requests on one model concurrently: each gets its own text's vectors."""
    from concurrent.futures import ThreadPoolExecutor

    model, tok = mlm
    texts = ["the cat sat .", "the dog ran far away .", "a b c d e f g h .", "on the mat ."] * 4
    alone = {t: explore.queries_and_keys(model, tok, t) for t in set(texts)}
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda t: explore.queries_and_keys(model, tok, t), texts))
    for t, r in zip(texts, together):
        assert r.tokens == alone[t].tokens
        assert all(torch.equal(a, b) for a, b in zip(r.queries + r.keys, alone[t].queries + alone[t].keys))


class ReplayModel:
    """Stands in for bertviz's patched model classes: its output's last element is, per layer,
    {"attn", "queries", "keys"} ([1, heads, T, T | d] each), here tensors computed beforehand."""

    def __init__(self, layers):
        self.layers = layers

    def eval(self):
        return self

    def __call__(self, input_ids, token_type_ids=None):
        return (None, self.layers)


def test_neuron_data_is_bertviz_own_format(mlm, qk):
    """bertviz 1.4's neuron_view.get_attention, fed the same tensors through a stand-in for its
    patched model, builds exactly what neuron_view_data builds."""
    from types import SimpleNamespace

    from bertviz import neuron_view

    model, tok = mlm
    stand_in = ReplayModel(
        [{"attn": a, "queries": q, "keys": k} for a, q, k in zip(qk.attentions, qk.queries, qk.keys)]
    )
    tokenizer = SimpleNamespace(
        cls_token="[CLS]", sep_token="[SEP]", tokenize=tok.tokenize, convert_tokens_to_ids=tok.convert_tokens_to_ids
    )
    theirs = neuron_view.get_attention(
        stand_in, "bert", tokenizer, "the cat sat on the mat .", "the dog ran .", include_queries_and_keys=True
    )
    ours = bertviz_offline.neuron_view_data(
        qk.queries, qk.keys, qk.attentions, qk.tokens, qk.sentence_b_start, decimals=None
    )
    assert set(ours) == {"all", "aa", "bb", "ab", "ba"}
    assert ours == theirs


def test_neuron_data_blocks_hold_the_rounded_numbers(qk):
    data = bertviz_offline.neuron_view_data(qk.queries, qk.keys, qk.attentions, qk.tokens, qk.sentence_b_start)
    b, T = qk.sentence_b_start, len(qk.tokens)
    a_, b_ = slice(0, b), slice(b, T)
    attn = torch.stack([x[0] for x in qk.attentions])  # (L, A, T, T)
    q, k = (torch.stack([x[0] for x in xs]) for xs in (qk.queries, qk.keys))
    for name, rows, cols in (
        ("all", slice(0, T), slice(0, T)),
        ("aa", a_, a_),
        ("bb", b_, b_),
        ("ab", a_, b_),
        ("ba", b_, a_),
    ):
        block = data[name]
        assert block["left_text"] == qk.tokens[rows] and block["right_text"] == qk.tokens[cols]
        for key, expected in (("attn", attn[:, :, rows, cols]), ("queries", q[:, :, rows]), ("keys", k[:, :, cols])):
            sent = torch.tensor(block[key], dtype=torch.float64)
            assert sent.shape == expected.shape, (name, key)
            assert torch.allclose(sent, expected.double(), atol=5e-4 + 1e-9), (name, key)
    single = bertviz_offline.neuron_view_data(
        [x[..., :b, :] for x in qk.queries],
        [x[..., :b, :] for x in qk.keys],
        [x[..., :b, :b] for x in qk.attentions],
        qk.tokens[:b],
    )
    assert list(single) == ["all"]


def test_neuron_page_needs_no_network(qk):
    page = neuron_page(qk)
    assert page.startswith("<!DOCTYPE html>") and csp(page).startswith("default-src 'none'")
    for tag, attrs in Tags(page).tags:
        for name in ("src", "href"):
            assert name not in attrs, (tag, attrs)
    # URLs occur only as text of the inlined scripts (licence comments, the SVG namespace, the
    # CDN addresses in bertviz's require.config(), which the template's stand-in ignores):
    # nothing of the lab's names an address
    d3, jquery = bertviz_offline.library_sources()
    rest = page.replace(d3, "").replace(jquery, "").replace(bertviz_script("neuron"), "")
    assert not re.search(r"https?:|//[a-z0-9.-]+\.[a-z]{2,}/", rest, flags=re.I)


def test_neuron_page_runs_bertviz_script_with_the_data(qk):
    page = neuron_page(qk, layer=1, head=3)
    assert Tags(page).scripts[2:] == [*reversed(bertviz_offline.library_sources()), bertviz_script("neuron")]
    params = neuron_params(page)
    assert params["layer"] == 1 and params["head"] == 3 and params["bidirectional"] is True
    assert params["display_mode"] == "light" and params["default_filter"] == "all"
    assert f'id="{params["root_div_id"]}"' in page
    # the filter menu of bertviz's neuron_view.show(), in its order
    assert [value for value, _ in page_config(page)["filters"]] == ["all", "aa", "ab", "ba", "bb"]
    assert params["attention"] == bertviz_offline.neuron_view_data(
        qk.queries, qk.keys, qk.attentions, qk.tokens, qk.sentence_b_start
    )
    # numpy integers (np.unravel_index) are accepted as layer and head
    import numpy as np

    assert neuron_params(neuron_page(qk, layer=np.int64(1), head=np.int64(0)))["layer"] == 1


def test_neuron_tokens_cannot_break_out_of_the_script(qk):
    tokens = [EVIL if i == 2 else t for i, t in enumerate(qk.tokens)]
    page = neuron_page(qk, tokens)
    assert EVIL not in page and "<img" not in page and "onerror=alert" in page
    parsed = Tags(page)
    assert [t for t, _ in parsed.tags if t not in PAGE_TAGS] == []
    assert len(parsed.scripts) == 5
    params = neuron_params(page)
    assert params["attention"]["all"]["left_text"][2] == EVIL == params["attention"]["aa"]["right_text"][2]


@pytest.mark.parametrize("pair", [False, True])
def test_neuron_view_too_large_is_refused_with_the_limit(pair):
    # BERT-base's shape: 12 layers x 12 heads of d = 64, 128 tokens
    L, A, T, d = 12, 12, 128, 64
    attentions, tokens = fake_attention(L, A, T)
    vectors = tuple(torch.zeros(1, A, T, d) for _ in range(L))
    b = 60 if pair else None
    limit = bertviz_offline.NEURON_VIEW_LIMIT
    with pytest.raises(ValueError, match=f"limit of {limit:,}") as e:
        bertviz_offline.neuron_view_html(vectors, vectors, attentions, tokens, b)
    message = str(e.value)
    sent = L * A * (2 * T * T + 6 * T * d if pair else T * T + 2 * T * d)
    assert f"{L} layers x {A} heads x (" in message and f"= {sent:,} numbers" in message
    assert "shorter text" in message and message.endswith("or the head view.")
    fits = int(re.search(r"at most about (\d+) tokens", message).group(1))

    def numbers(t):
        return L * A * (2 * t * t + 6 * t * d if pair else t * t + 2 * t * d)

    assert numbers(fits) <= limit < numbers(fits + 1)
    # just under the limit is drawn
    attentions, tokens = fake_attention(L, A, fits)
    vectors = tuple(torch.zeros(1, A, fits, d) for _ in range(L))
    page = bertviz_offline.neuron_view_html(vectors, vectors, attentions, tokens, fits // 2 if pair else None)
    assert page.startswith("<!DOCTYPE html>")


def test_neuron_view_refuses_more_tokens_than_it_can_draw():
    # a small model: few numbers, but the browser draws ~8 x tokens² elements for one head
    cap = bertviz_offline.NEURON_VIEW_MAX_TOKENS
    attentions, tokens = fake_attention(2, 2, cap + 1)
    vectors = tuple(torch.zeros(1, 2, cap + 1, 8) for _ in range(2))
    with pytest.raises(ValueError, match=f"{cap + 1} tokens, above its limit of {cap} .*at most about {cap} tokens"):
        bertviz_offline.neuron_view_html(vectors, vectors, attentions, tokens)
    with pytest.raises(ValueError, match="above its limit of 20"):
        bertviz_offline.neuron_view_html(vectors, vectors, attentions, tokens, max_tokens=20)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(layer=2), r"layer must be one of 0\.\.1 \(this model has 2 layers\), got 2"),
        (dict(head=-1), r"head must be one of 0\.\.3"),
        (dict(head=1.0), r"head must be one of"),
        (dict(display_mode="blue"), "display_mode"),
        (dict(queries=lambda r: r.queries[:1]), r"1 layers of queries for 2 layers"),
        (dict(keys=lambda r: [k[..., :4] for k in r.keys]), r"keys of layer 0 have shape \(1, 4, 14, 4\)"),
        (dict(keys=lambda r: [k[:, :2] for k in r.keys]), r"\[1, 4, 14, d\]"),
    ],
)
def test_neuron_view_bad_input_is_refused_with_a_message(qk, change, message):
    change = dict(change)
    vectors = {name: change.pop(name)(qk) if name in change else getattr(qk, name) for name in ("queries", "keys")}
    with pytest.raises(ValueError, match=message):
        bertviz_offline.neuron_view_html(
            vectors["queries"], vectors["keys"], qk.attentions, qk.tokens, qk.sentence_b_start, **change
        )


def test_show_neuron_view_displays_an_iframe(monkeypatch, mlm):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    model, tok = mlm
    assert bertviz_offline.show_neuron_view(model, tok, "the cat sat .", "the dog ran .", layer=1, head=2) is None
    (obj,) = shown
    ((tag, attrs),) = Tags(obj.data).tags[1:]  # <div><iframe srcdoc=...></div>
    assert tag == "iframe" and attrs["srcdoc"].startswith("<!DOCTYPE html>")
    params = neuron_params(attrs["srcdoc"])
    assert params["layer"] == 1 and params["head"] == 2 and set(params["attention"]) == {"all", "aa", "bb", "ab", "ba"}
    with pytest.raises(ValueError, match="text_a"):
        bertviz_offline.show_neuron_view(model, tok, "   ")


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
    if view == "head":  # the hostile token is drawn as text, and no <img> came of it
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
    host.write_text(
        f"<!DOCTYPE html><html><body>{bertviz_offline.iframe(page_html, height)}</body></html>", encoding="utf-8"
    )
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
def test_model_view_in_a_hidden_frame_draws_when_shown(browser, result, tmp_path):
    """A frame filled while hidden (a closed tab) is 0 px wide: the model view draws in its own
    coordinates all the same, and once shown fits the frame with every thumbnail drawn."""
    page_html = bertviz_offline.model_view_html(result.attentions, result.tokens, result.sentence_b_start)
    host = tmp_path / "host.html"
    frame_html = bertviz_offline.iframe(page_html, 600)
    host.write_text(f'<!DOCTYPE html><html><body><div id="tab" style="display:none">{frame_html}</div></body></html>')
    page, aborted, errors, dialogs = offline_page(browser)
    page.goto(host.as_uri())
    frame = page.frame_locator("iframe")
    page.wait_for_timeout(500)  # the frame's scripts have run while hidden
    page.evaluate("document.getElementById('tab').style.display = 'block'")
    frame.locator("rect.attn_background").first.wait_for(state="visible")
    widths = frame.locator("rect.attn_background").evaluate_all("rs => rs.map(r => +r.getAttribute('width'))")
    assert len(widths) == len(result.attentions) * result.attentions[0].shape[1] and min(widths) > 0, widths
    width = page.locator("iframe").evaluate("f => f.clientWidth")
    right = frame.locator("svg").evaluate("s => s.getBoundingClientRect().right")
    assert 0 < right <= width
    assert aborted == [] and errors == [] and dialogs == []
    page.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("width", [1100, 480])
def test_model_view_fits_its_frame(browser, tmp_path, width):
    """BERT-base's shape (12 x 12): bertviz draws it 970 px wide, 7 px per token; a narrower frame
    shows it scaled down to its width (nothing cut off on the right, nothing to scroll), a wider
    one at bertviz's size. A click on a thumbnail still enlarges that head."""
    attentions, tokens = fake_attention(12, 12, 8)
    path = tmp_path / "model.html"
    path.write_text(bertviz_offline.model_view_html(attentions, tokens), encoding="utf-8")
    page, aborted, errors, dialogs = offline_page(browser)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(path.as_uri())
    page.locator("rect.attn_background").first.wait_for(state="attached")
    svg = page.locator("#vis svg")
    box = svg.evaluate("s => s.getBoundingClientRect().toJSON()")
    inner = page.evaluate("() => [document.documentElement.clientWidth, document.documentElement.scrollWidth]")
    assert svg.get_attribute("viewBox") == f"0 0 970 {svg.get_attribute('height')}"
    assert box["right"] <= inner[0] and inner[1] <= inner[0], (box, inner)
    assert box["width"] == pytest.approx(min(970, inner[0] - 16), abs=1)
    pitch = page.locator("g[source-index] line").evaluate_all("ls => ls.map(l => +l.getAttribute('y1'))")
    assert pitch[8] - pitch[0] == pytest.approx(7)  # the next source token's first line
    page.locator("rect.attn_background").nth(13).click(force=True)  # layer 1, head 1
    assert page.locator("text.detail").first.text_content() == "Layer 1, Head 1"
    assert page.locator(".detail").count() > 0 and page.locator("select#filter").count() == 0
    assert aborted == [] and errors == [] and dialogs == []
    page.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_bertviz_own_page_is_blank_offline(browser, result, tmp_path):
    """The control: bertviz's own page, under the same blocking, asks the CDN and draws nothing
    (so the tests above see the network blocked, and the offline page is what makes it draw)."""
    import bertviz

    path = tmp_path / "bertviz.html"
    path.write_text(
        bertviz.head_view(list(result.attentions), result.tokens, html_action="return").data, encoding="utf-8"
    )
    page, aborted, errors, dialogs = offline_page(browser)
    page.goto(path.as_uri())
    page.wait_for_timeout(500)
    assert any("cdnjs.cloudflare.com" in url for url in aborted)
    assert page.locator("svg").count() == 0
    page.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_neuron_view_draws_svg_with_the_network_blocked(browser, qk, tmp_path):
    """The neuron view in chromium with no network: it draws the tokens, and after a click on the +
    beside a token its q.k boxes hold q.k / sqrt(d) of our rounded data (bertviz's own arithmetic
    on the vectors we sent); the menus redraw."""
    tokens = [EVIL if i == 2 else t for i, t in enumerate(qk.tokens)]
    path = tmp_path / "neuron.html"
    path.write_text(neuron_page(qk, tokens, layer=1, head=2), encoding="utf-8")
    page, aborted, errors, dialogs = offline_page(browser)
    page.goto(path.as_uri())
    # each token on the left and on the right, in both the collapsed and the expanded drawing
    page.wait_for_function(SVG_DRAWN, arg=4 * len(tokens))
    assert EVIL in page.locator("#collapsed").text_content()
    assert page.locator("img").count() == 0
    i = 3
    page.locator("#collapsed #leftText text").nth(i).hover()
    page.locator("#collapsed #leftText g").nth(i).locator("rect").last.click(force=True)  # the + sign
    page.locator("#expanded #leftText text").nth(i).hover()
    assert page.locator("#expanded").get_attribute("visibility") == "visible"
    shown = [
        float(v)
        for v in page.locator("#dotproducts rect").evaluate_all("rects => rects.map(r => r.getAttribute('data-value'))")
    ]
    data = neuron_params(path.read_text(encoding="utf-8"))["attention"]["all"]
    q, k = torch.tensor(data["queries"][1][2][i]), torch.tensor(data["keys"][1][2])
    expected = (k @ q / math.sqrt(q.shape[-1])).tolist()
    assert shown == pytest.approx(expected, abs=1e-6)
    # the model's own attention row follows from them (softmax), up to the rounding
    assert torch.allclose(torch.tensor(expected).softmax(-1), qk.attentions[1][0, 2, i], atol=5e-3)
    page.select_option("#att_head", "0")
    page.select_option("#filter", "ab")
    page.wait_for_function(SVG_DRAWN, arg=2 * len(tokens))
    assert page.locator("#expanded #rightText text").count() == len(tokens) - qk.sentence_b_start
    assert aborted == [] and errors == [] and dialogs == []
    page.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_neuron_view_draws_inside_a_sandboxed_srcdoc_iframe(browser, qk, tmp_path):
    """As show_neuron_view shows it in a notebook: the page inside iframe(srcdoc)."""
    host = tmp_path / "host.html"
    frame_html = bertviz_offline.iframe(neuron_page(qk), bertviz_offline.frame_height("neuron", qk.attentions))
    host.write_text(f"<!DOCTYPE html><html><body>{frame_html}</body></html>", encoding="utf-8")
    page, aborted, errors, dialogs = offline_page(browser)
    page.goto(host.as_uri())
    frame = page.frame_locator("iframe")
    frame.locator("#collapsed line").first.wait_for(state="attached")
    assert frame.locator("#collapsed #leftText text").count() == len(qk.tokens)
    frame.locator("#layer").select_option("1")
    frame.locator("#collapsed line").first.wait_for(state="attached")
    assert aborted == [] and errors == [] and dialogs == []
    page.close()
