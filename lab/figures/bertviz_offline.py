"""bertviz's head, model and neuron views, drawn with no network: in the dashboard and in JupyterLab.

    r = explore.attention(model, tokenizer, "the cat sat on the mat .", "it was tired .")
    page = bertviz_offline.head_view_html(r.attentions, r.tokens, r.sentence_b_start)  # an HTML document
    bertviz_offline.show_neuron_view(model, tokenizer, "the cat sat on the mat .", layer=1, head=0)  # notebook

bertviz's pages load require.js, d3 and jQuery from a CDN, so offline they draw nothing. Here bertviz
builds its view as usual, its CDN scripts go, and d3 (pip mpld3) and jQuery (pip xstatic-jquery)
are inlined from the installed packages behind a small `require` shim, under a Content-Security-
Policy that lets the page fetch nothing; it is shown in an <iframe srcdoc> (iframe()). The neuron
view's queries and keys come from the lab's model (explore.queries_and_keys), not from bertviz's
patched Hugging Face classes. Tokens reach the page only as escaped JSON; each view has a size cap.
"""

from __future__ import annotations

import html
import importlib.util
import json
import math
import numbers
import re
from pathlib import Path

import torch

from lab.inspect import explore

# Size caps: above them a page grows to several MB and the browser is slow to draw it (the sizes
# and drawing times behind them: docs/performance.md, "bertviz's views")
HEAD_VIEW_LIMIT = 500_000  # layers x heads x tokens² attention weights (BERT-base: 58 tokens)
MODEL_VIEW_LIMIT = 250_000  # the same, every head drawn at once (BERT-base: 41 tokens)
NEURON_VIEW_LIMIT = 1_000_000  # weights + query and key elements sent (_neuron_numbers; BERT-base: 41 tokens)
NEURON_VIEW_MAX_TOKENS = 128  # it draws about 8 x tokens² SVG elements per head; BERT's pre-training length
DECIMALS = 3  # digits kept of each attention weight
MAX_FRAME_HEIGHT = 2400  # px; a taller view scrolls inside its iframe
THUMBNAIL_ROW_JS = "Math.min(7, 7 * (12 / config.totalHeads))"  # px per token of a model-view thumbnail
_MODEL_VIEW_SIZES = [  # bertviz 1.4's model view -> here
    ("const DIV_WIDTH = 970;", "const DIV_WIDTH = Math.min(970, document.documentElement.clientWidth - 16);"),
    ("config.thumbnailBoxHeight = 7 * (12 / config.totalHeads);", f"config.thumbnailBoxHeight = {THUMBNAIL_ROW_JS};"),
]

_VIEWS = ("head", "model", "neuron")
_PARAMS_MARKER = "PYTHON_PARAMS"  # bertviz's placeholder for its data in {head,model}_view.js
_SCRIPT_OPEN = '\n<script type="text/javascript">\n'  # how bertviz 1.4 wraps its script
_SCRIPT_CLOSE = "\n</script>\n"
_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"

# bertviz asks `require` for 'jquery' and 'd3'; the inlined scripts have set window.jQuery and
# window.d3 already (neither sees an AMD `define`, so both become globals).
_REQUIRE_SHIM = """
(function () {
  var modules = {jquery: window.jQuery, d3: window.d3};
  function require(names, callback) {
    var found = names.map(function (name) {
      if (!modules[name]) { throw new Error("bertviz offline: no module " + name); }
      return modules[name];
    });
    if (!callback) { return; }
    // a frame drawn while hidden (a closed tab, a frame not laid out yet) is 0 px wide, and the
    // model view sizes itself from that width: draw once the frame has one
    var draw = function () { callback.apply(window, found); };
    if (document.documentElement.clientWidth > 0) { draw(); return; }
    var wait = setInterval(function () {
      if (document.documentElement.clientWidth > 0) { clearInterval(wait); draw(); }
    }, 50);
  }
  require.config = function () {};
  window.require = window.requirejs = require;
})();
"""
# bertviz 1.4's neuron_view.show() markup (its root div, the layer / head / filter menus, #vis),
# with a fixed id (one view per page) and #vis as wide as the expanded view's drawing (about
# 1,005 px: tokens, query, key, q x k, q.k, tokens), so a narrower frame scrolls instead of
# cutting off its right-hand side
_NEURON_ROOT = "bertviz-neuron"
_NEURON_MARKUP = """
<div id="{root}" style="padding:8px;font-family:'Helvetica Neue', Helvetica, Arial, sans-serif;">
  <span style="user-select:none">
    <span class="dropdown-label">Layer: </span><select id="layer"></select>
    <span class="dropdown-label">Head: </span> <select id="att_head"></select>
    {filters}
  </span>
  <div id="vis" style="min-width:1010px"></div>
</div>
"""
_NEURON_FILTERS = """<span class="dropdown-label">Attention: </span><select id="filter">
      <option value="all">All</option>
      <option value="aa">Sentence A -> Sentence A</option>
      <option value="ab">Sentence A -> Sentence B</option>
      <option value="ba">Sentence B -> Sentence A</option>
      <option value="bb">Sentence B -> Sentence B</option>
    </select>"""
# an error inside bertviz would otherwise leave a blank frame: say it on the page (as text)
_ERROR_NOTE = """
window.addEventListener("error", function (e) {
  var p = document.createElement("p");
  p.style.color = "#b00";
  p.textContent = "bertviz could not draw this view: " + e.message;
  document.body.appendChild(p);
});
"""


# ----------------------------------------------------------------------------------------
# The pages
# ----------------------------------------------------------------------------------------
def head_view_html(
    attentions,
    tokens: list[str],
    sentence_b_start: int | None = None,
    *,
    layer: int | None = None,
    heads: list[int] | None = None,
    decimals: int = DECIMALS,
    limit: int = HEAD_VIEW_LIMIT,
) -> str:
    """bertviz's head view (one layer's heads as lines between the tokens) as a complete HTML
    document that draws with no network. attentions: L x [1, heads, T, T] (bertviz format,
    explore.attention().attentions); tokens: T strings; sentence_b_start: index of b's first
    token for a pair (adds bertviz's "Sentence A -> Sentence B" filters)."""
    return _page("head", attentions, tokens, sentence_b_start, decimals, limit, layer=layer, heads=heads)


def model_view_html(
    attentions,
    tokens: list[str],
    sentence_b_start: int | None = None,
    *,
    display_mode: str = "light",
    decimals: int = DECIMALS,
    limit: int = MODEL_VIEW_LIMIT,
) -> str:
    """bertviz's model view (every layer x head as a thumbnail; click one to enlarge) as a
    complete HTML document that draws with no network. Same inputs as head_view_html;
    display_mode "light" (default here, to sit on a white page) or "dark" (bertviz's default)."""
    return _page("model", attentions, tokens, sentence_b_start, decimals, limit, display_mode=display_mode)


def _page(view: str, attentions, tokens, sentence_b_start, decimals: int, limit: int, **options) -> str:
    """Check the size, let bertviz build its page, and rebuild it around local scripts."""
    attentions, tokens = _checked(attentions, tokens, sentence_b_start)
    _check_size(view, attentions, limit)
    # float64 rounded: json writes 0.123, not float32's 0.12300000339746475 (a 4x smaller page)
    rounded = [a.detach().cpu().double().round(decimals=decimals) for a in attentions]
    markup, template, params = _bertviz_parts(view, rounded, tokens, sentence_b_start, **options)
    # the data once, where the script reads it (the comment keeps its word PYTHON_PARAMS)
    return _document(view, markup, template.replace(_PARAMS_MARKER, json_for_script(params), 1))


def _document(view: str, markup: str, view_js: str) -> str:
    """The page: the local libraries and the shim, bertviz's markup, then its script."""
    d3, jquery = library_sources()
    scripts = "".join(_script(js) for js in (_ERROR_NOTE, jquery, d3, _REQUIRE_SHIM))
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>bertviz {view} view</title></head>\n"
        f'<body style="margin:8px;background:white">\n{scripts}{markup}{_script(view_js)}'
        f"</body></html>\n"
    )


def neuron_view_html(
    queries,
    keys,
    attentions,
    tokens: list[str],
    sentence_b_start: int | None = None,
    *,
    layer: int | None = None,
    head: int | None = None,
    display_mode: str = "light",
    decimals: int = DECIMALS,
    limit: int = NEURON_VIEW_LIMIT,
    max_tokens: int = NEURON_VIEW_MAX_TOKENS,
) -> str:
    """bertviz's neuron view (one head: its attention as lines; click + beside a token to see its
    query, every key, their element-wise products and q.k / sqrt(d)) as a complete HTML document
    that draws with no network. queries, keys: L x [1, heads, T, d], attentions: L x [1, heads,
    T, T] (explore.queries_and_keys()); layer, head: shown first (default 0, 0; both can be
    changed in the page's menus); display_mode "light" (default here) or "dark" (bertviz's).
    Refuses more than `limit` numbers or `max_tokens` tokens (NEURON_VIEW_LIMIT, ..._MAX_TOKENS)."""
    attentions, tokens = _checked(attentions, tokens, sentence_b_start)
    queries, keys = _checked_vectors(queries, keys, attentions)
    L, A, T, d = len(attentions), attentions[0].shape[1], len(tokens), queries[0].shape[-1]
    for name, value, count in (("layer", layer, L), ("head", head, A)):
        if value is not None and not (isinstance(value, numbers.Integral) and 0 <= value < count):
            raise ValueError(f"{name} must be one of 0..{count - 1} (this model has {count} {name}s), got {value!r}")
    layer, head = (None if v is None else int(v) for v in (layer, head))  # numpy ints -> JSON
    if display_mode not in ("light", "dark"):
        raise ValueError(f"display_mode must be 'light' or 'dark', got {display_mode!r}")
    pair = sentence_b_start is not None
    _check_neuron_size(L, A, T, d, pair, limit, max_tokens)
    params = {
        "attention": neuron_view_data(queries, keys, attentions, tokens, sentence_b_start, decimals),
        "default_filter": "all",
        "root_div_id": _NEURON_ROOT,
        "bidirectional": True,
        "display_mode": display_mode,
        "layer": layer,
        "head": head,
    }
    template = _package_file("bertviz", "neuron_view.js", pip="bertviz").read_text(encoding="utf-8")
    found = re.search(r"require\.config\(\{.*?\}\);", template, flags=re.S)
    if not found or "const params = window.bertviz_params" not in template:
        import bertviz  # optional: it comes with the [app] and [notebooks] extras

        raise RuntimeError(
            f"bertviz {getattr(bertviz, '__version__', '?')} builds its neuron view "
            f"differently from bertviz 1.4: lab/figures/bertviz_offline.py needs updating"
        )
    # bertviz's show() sets window.bertviz_params in a script of its own, then runs neuron_view.js
    view_js = (
        f"window.bertviz_params = {json_for_script(params)};\n{template[: found.start()]}{template[found.end() :]}"
    )
    markup = _NEURON_MARKUP.format(root=_NEURON_ROOT, filters=_NEURON_FILTERS if pair else "")
    return _document("neuron", markup, view_js)


def neuron_view_data(
    queries, keys, attentions, tokens: list[str], sentence_b_start: int | None = None, decimals: int | None = DECIMALS
) -> dict:
    """What neuron_view.js reads as params["attention"], as bertviz 1.4's neuron_view.get_attention(
    ..., include_queries_and_keys=True) builds it from its own models:
        "all": {"left_text": tokens, "right_text": tokens, "attn": [L][A][T][T],
                "queries": [L][A][T][d], "keys": [L][A][T][d]}
    and for a pair one entry per filter "aa", "bb", "ab", "ba" (source sentence, target sentence):
    left_text and queries of the source, right_text and keys of the target, attn the block of
    source rows x target columns; e.g. "ab": sentence A's queries looking at sentence B's keys.
    Numbers rounded to `decimals` (None: as they are)."""
    attentions, tokens = _checked(attentions, tokens, sentence_b_start)
    queries, keys = _checked_vectors(queries, keys, attentions)
    attn, q, k = (
        torch.stack([x[0] for x in xs]).detach().cpu().double()  # (L, A, T, T | d)
        for xs in (attentions, queries, keys)
    )
    if decimals is not None:
        attn, q, k = (x.round(decimals=decimals) for x in (attn, q, k))
    everything = slice(0, len(tokens))
    blocks = {"all": (everything, everything)}
    if sentence_b_start is not None:
        a, b = slice(0, sentence_b_start), slice(sentence_b_start, len(tokens))
        blocks.update(aa=(a, a), bb=(b, b), ab=(a, b), ba=(b, a))
    return {
        name: {
            "attn": attn[:, :, rows, cols].tolist(),
            "left_text": tokens[rows],
            "right_text": tokens[cols],
            "queries": q[:, :, rows].tolist(),
            "keys": k[:, :, cols].tolist(),
        }
        for name, (rows, cols) in blocks.items()
    }


def _check_neuron_size(L: int, A: int, T: int, d: int, pair: bool, limit: int, max_tokens: int) -> None:
    """The neuron view's two caps: the numbers sent (the page's size) and the tokens (what the
    browser draws for one head); a ValueError says which and how many tokens would fit."""
    sent = _neuron_numbers(L, A, T, d, pair)
    if sent <= limit and T <= max_tokens:
        return
    fits = next((t for t in range(min(T, max_tokens), 0, -1) if _neuron_numbers(L, A, t, d, pair) <= limit), 0)
    if sent > limit:
        what = (
            f"2 x {T}² attention weights + 3 x ({T} query and {T} key vectors of {d} numbers): "
            f"bertviz repeats them for its sentence-pair filters"
            if pair
            else f"{T}² attention weights + {T} query and {T} key vectors of {d} numbers"
        )
        why = f"{L} layers x {A} heads x ({what}) = {sent:,} numbers, above its limit of {limit:,}"
    else:
        why = (
            f"{T} tokens, above its limit of {max_tokens} (it draws about 8 x tokens² lines and "
            f"boxes for the head shown)"
        )
    raise ValueError(
        f"this input is too large for bertviz's neuron view: {why}. Use a shorter text "
        f"(at most about {fits} tokens{' for a pair' * pair} with this model) or the head view."
    )


def _neuron_numbers(L: int, A: int, T: int, d: int, pair: bool) -> int:
    """Numbers the neuron view sends: per layer and head T² weights and T query and T key
    vectors of d numbers; a pair adds the A/B blocks (T² weights in all) and 4 more vectors per
    token (aa and ab repeat A's queries, bb and ba B's; the keys likewise)."""
    return L * A * (2 * T * T + 6 * T * d if pair else T * T + 2 * T * d)


def _checked_vectors(queries, keys, attentions) -> tuple[list, list]:
    """Queries and keys that match the attention maps: L x [1, heads, T, d] each."""
    queries, keys = list(queries), list(keys)
    L, (_, A, T, _) = len(attentions), attentions[0].shape
    for name, vectors in (("queries", queries), ("keys", keys)):
        if len(vectors) != L:
            raise ValueError(
                f"{len(vectors)} layers of {name} for {L} layers of attention: pass "
                f"explore.queries_and_keys(...).{name}"
            )
        for i, v in enumerate(vectors):
            if v.dim() != 4 or tuple(v.shape[:3]) != (1, A, T) or v.shape[-1] != queries[0].shape[-1]:
                raise ValueError(
                    f"{name} of layer {i} have shape {tuple(v.shape)}; the neuron view needs "
                    f"[1, heads, T, d] = [1, {A}, {T}, d] with one d for all"
                )
    return queries, keys


def _checked(attentions, tokens, sentence_b_start) -> tuple[list, list[str]]:
    """Refuse inputs bertviz would choke on, with a message (bertviz's own errors are terse)."""
    attentions = list(attentions)
    tokens = [str(t) for t in tokens]
    if not attentions:
        raise ValueError("no attention maps: pass explore.attention(...).attentions (one tensor per layer)")
    T = len(tokens)
    for i, a in enumerate(attentions):
        if a.dim() != 4 or a.shape[0] != 1 or a.shape[-1] != a.shape[-2] or a.shape[-1] != T:
            raise ValueError(
                f"attention of layer {i} has shape {tuple(a.shape)}; bertviz needs [1, heads, T, T] with T = {T} tokens"
            )
    if sentence_b_start is not None and not 0 < sentence_b_start < T:
        raise ValueError(f"sentence_b_start must lie inside the {T} tokens, got {sentence_b_start}")
    return attentions, tokens


def _check_size(view: str, attentions: list, limit: int) -> None:
    """The cap: layers x heads x tokens² attention weights; above `limit` the page would be
    several MB and the browser slow to draw it."""
    L, A, T = len(attentions), attentions[0].shape[1], attentions[0].shape[-1]
    weights = L * A * T * T
    if weights > limit:
        fits = math.isqrt(limit // (L * A))
        other = " or the head view" if view == "model" else ""
        raise ValueError(
            f"this input is too large for bertviz's {view} view: {L} layers x {A} heads x {T}² tokens "
            f"= {weights:,} attention weights, above its limit of {limit:,}. Use a shorter text "
            f"(at most about {fits} tokens with this model){other}."
        )


def _bertviz_parts(view: str, attentions: list, tokens: list[str], sentence_b_start, **options):
    """bertviz's page taken apart: (markup without the CDN script, {view}_view.js with its
    require.config() removed, the data). bertviz 1.4 returns
        <script src=CDN require.js></script> + markup + _SCRIPT_OPEN + script + _SCRIPT_CLOSE
    where script is {view}_view.js with every PYTHON_PARAMS replaced by json.dumps(params):
    twice, as the file names the marker again in a comment. The markup holds no tokens (they
    live only in params), so the first _SCRIPT_OPEN is bertviz's own; the data's length follows
    from the lengths, e.g. template "a M b M c" and script of 5 + 2n characters: n = len(data)."""
    import bertviz  # optional: it comes with the [app] and [notebooks] extras

    draw = bertviz.head_view if view == "head" else bertviz.model_view
    page = draw(attentions, tokens, sentence_b_start=sentence_b_start, html_action="return", **options).data
    template = _package_file("bertviz", f"{view}_view.js", pip="bertviz").read_text(encoding="utf-8")
    start = page.find(_SCRIPT_OPEN)
    script = page[start + len(_SCRIPT_OPEN) : len(page) - len(_SCRIPT_CLOSE)]
    k = template.count(_PARAMS_MARKER)
    n = (len(script) - len(template) + k * len(_PARAMS_MARKER)) // max(k, 1)
    at = template.find(_PARAMS_MARKER)
    data = script[at : at + n]
    if start < 0 or not page.endswith(_SCRIPT_CLOSE) or k == 0 or template.replace(_PARAMS_MARKER, data) != script:
        raise RuntimeError(
            f"bertviz {getattr(bertviz, '__version__', '?')} builds its {view} view "
            f"differently from bertviz 1.4: lab/figures/bertviz_offline.py needs updating"
        )
    markup = re.sub(r"<script\b[^>]*\bsrc=[^>]*>\s*</script>", "", page[:start])
    # `require.config({paths: {d3: CDN, jquery: CDN}});` -> nothing (the shim has the modules)
    template = re.sub(r"require\.config\(\{.*?\}\);", "", template, count=1, flags=re.S)
    if view == "model":
        # bertviz 1.4 sizes its model view for a wide window: 970 px wide whatever the frame, and a
        # thumbnail row 7 * 12 / heads px per token (42 px for a 2-head model, so one layer of a
        # sentence fills a screen). Here: the frame's width at most, and at most 7 px per token.
        for original, resized in _MODEL_VIEW_SIZES:
            if original not in template:
                raise RuntimeError(
                    f"bertviz {getattr(bertviz, '__version__', '?')} sizes its model view "
                    f"differently from bertviz 1.4: lab/figures/bertviz_offline.py needs updating"
                )
            template = template.replace(original, resized, 1)
    return markup, template, json.loads(data)


# ----------------------------------------------------------------------------------------
# Scripts and data, safe inside <script>
# ----------------------------------------------------------------------------------------
def json_for_script(value) -> str:
    """JSON that cannot end its <script>: `<`, `>`, `&` become \\u003c, \\u003e, \\u0026 (the same
    string to JavaScript), so "</script>" or "<!--" in a token stays inside the data."""
    text = json.dumps(value, separators=(",", ":"))  # ensure_ascii: U+2028 etc. escaped too
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _script(js: str) -> str:
    """An inline <script>. In real code `</script` and `<!--` occur only inside strings, regular
    expressions or comments, where `<\\/script` and `<\\!--` mean the same; written so, neither
    can end the element early (d3 5.7 and jQuery 3.7 contain neither)."""
    js = re.sub(r"</(script)", r"<\\/\1", js, flags=re.I).replace("<!--", "<\\!--")
    return f"<script>{js}</script>\n"


def library_sources() -> tuple[str, str]:
    """(d3 v5, jQuery) JavaScript, read from the installed pip packages mpld3 and xstatic-jquery."""
    d3 = _package_file("mpld3", "js", "d3.v5.min.js", pip="mpld3").read_text(encoding="utf-8")
    jquery = _package_file("xstatic.pkg.jquery", "data", "jquery.min.js", pip="xstatic-jquery").read_text(
        encoding="utf-8"
    )
    return d3, jquery


def _package_file(package: str, *parts: str, pip: str) -> Path:
    """A file shipped inside an installed package, found without importing the package (mpld3
    would import matplotlib); a clear error naming the pip package when it is missing."""
    try:
        spec = importlib.util.find_spec(package)
    except ModuleNotFoundError:  # a missing parent (xstatic) raises instead
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"bertviz offline needs the pip package {pip!r}, which is not installed: "
            f"pip install {pip}  (or pip install 'bert-lab[app]')"
        )
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing from the installed {pip!r}: reinstall it (pip install --force-reinstall {pip})"
        )
    return path


# ----------------------------------------------------------------------------------------
# Showing a page: an iframe (dashboard, JupyterLab)
# ----------------------------------------------------------------------------------------
def frame_height(view: str, attentions) -> int:
    """Pixels the view needs (bertviz's own layout arithmetic), at most MAX_FRAME_HEIGHT.
    Head view: 22.5 px per token + ~110 px of menus and head checkboxes. Model view: each layer a
    row of thumbnails min(7, 7 * 12 / heads) px per token high, or the enlarged head, whichever is
    taller."""
    if view not in _VIEWS:
        raise ValueError(f"view must be one of {_VIEWS}, got {view!r}")
    L, A, T = len(attentions), attentions[0].shape[1], attentions[0].shape[-1]
    if view == "head":
        needed = 22.5 * T + 110
    elif view == "neuron":  # 26 px per token + 100 (bertviz), menus, a horizontal scroll bar
        needed = 26 * T + 100 + 75
    else:
        needed = max(L * (T * min(7, 7 * 12 / A) + 10) + 50, 18 * T + 70) + 60
    return int(min(needed, MAX_FRAME_HEIGHT))


def iframe(page: str, height: int = 720) -> str:
    """The page in an <iframe srcdoc>, for gr.HTML (which runs no <script> in its own HTML) or a
    notebook output; in a frame of its own the `require` shim cannot clash with the host page's.
    srcdoc holds the whole document escaped as an attribute (html.escape, quote=True: & < > " '
    become entities, so nothing in the page can end the attribute). sandbox="allow-scripts" without
    allow-same-origin: the view runs its scripts but cannot reach the page around it."""
    return (
        f'<iframe title="bertviz" sandbox="allow-scripts" '
        f'style="width:100%;height:{int(height)}px;border:0" '
        f'srcdoc="{html.escape(page, quote=True)}"></iframe>'
    )


def show_head_view(attentions, tokens: list[str], sentence_b_start: int | None = None, **options) -> None:
    """Display the head view in a notebook (JupyterLab, VS Code, classic Jupyter) with no
    network; options as head_view_html."""
    _show("head", head_view_html(attentions, tokens, sentence_b_start, **options), attentions)


def show_model_view(attentions, tokens: list[str], sentence_b_start: int | None = None, **options) -> None:
    """Display the model view in a notebook with no network; options as model_view_html."""
    _show("model", model_view_html(attentions, tokens, sentence_b_start, **options), attentions)


def show_neuron_view(
    model,
    tokenizer,
    text_a: str,
    text_b: str | None = None,
    layer: int | None = None,
    head: int | None = None,
    **options,
) -> None:
    """Display the neuron view of `text_a` (and `text_b`) through `model` in a notebook with no
    network: explore.queries_and_keys() then neuron_view_html() (options: display_mode,
    decimals, limit)."""
    r = explore.queries_and_keys(model, tokenizer, text_a, text_b)
    page = neuron_view_html(
        r.queries, r.keys, r.attentions, r.tokens, r.sentence_b_start, layer=layer, head=head, **options
    )
    _show("neuron", page, r.attentions)


def _show(view: str, page: str, attentions) -> None:
    """An iframe rather than the page itself: JupyterLab runs <script> in an HTML output only
    when the notebook is trusted, and the `require` shim must not replace a host's require.js
    (classic Jupyter's)."""
    from IPython.display import HTML, display  # only a notebook has IPython

    # in a <div>: IPython warns about any HTML output that is a bare <iframe>
    display(HTML(f"<div>{iframe(page, frame_height(view, list(attentions)))}</div>"))
