"""bertviz's head, model and neuron views, drawn with no network: in the dashboard and in JupyterLab.

    r = explore.attention(model, tokenizer, "the cat sat on the mat .", "it was tired .")
    page = bertviz_offline.head_view_html(r.attentions, r.tokens, r.sentence_b_start)  # an HTML document
    bertviz_offline.show_neuron_view(model, tokenizer, "the cat sat on the mat .", layer=1, head=0)  # notebook

bertviz's own pages load their libraries from a CDN, so offline they draw nothing. Here the page is
the lab's template (bertviz_page.html) filled by fill_template(): the data as JSON that cannot end
its script, d3 and jQuery from installed packages, bertviz's view scripts unchanged; a
Content-Security-Policy lets it fetch nothing (docs/dashboard.md has the details).
"""

from __future__ import annotations

import html
import importlib.metadata
import importlib.resources
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
# bertviz's model view sizes a thumbnail from the total_heads it is given: a row of thumbnails
# 1/total_heads of its width, 7 x 12 / total_heads px per token high (42 px for a 2-head model:
# one layer of a sentence fills a screen). Given at least 12 it draws every model as it draws
# BERT-base, at most 7 px per token.
MODEL_VIEW_MIN_COLUMNS = 12

TEMPLATE = "bertviz_page.html"  # next to this module; shipped as package data
_VIEWS = ("head", "model", "neuron")
_ROOT_ID = "bertviz"  # the template's root <div>: one view per page
_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
_PLACEHOLDER = re.compile(r"\{\{([A-Z][A-Z0-9_]*)\}\}")
# what each bertviz script must contain for the template's script to serve it (bertviz 1.4):
# it asks `requirejs` for jQuery and d3, and reads its data from this global
_BERTVIZ_NEEDS = {
    "head": ("requirejs(['jquery', 'd3']", "PYTHON_PARAMS"),
    "model": ("requirejs(['jquery', 'd3']", "PYTHON_PARAMS"),
    "neuron": ("requirejs(['jquery', 'd3']", "window.bertviz_params"),
}
# a sentence pair's blocks of the attention (source sentence, target sentence) and their names in
# bertviz's filter menus, in the order of bertviz's head and model views (whose data is a list in
# this order); the neuron view's data is keyed by the short names, its menu in _NEURON_MENU order
_PAIR_BLOCKS = {
    "all": "All",
    "aa": "Sentence A -> Sentence A",
    "bb": "Sentence B -> Sentence B",
    "ab": "Sentence A -> Sentence B",
    "ba": "Sentence B -> Sentence A",
}
_NEURON_MENU = ("all", "aa", "ab", "ba", "bb")


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
    token for a pair (adds bertviz's "Sentence A -> Sentence B" filters); layer: shown first
    (default 0); heads: the heads shown first (default all)."""
    attentions, tokens = _checked(attentions, tokens, sentence_b_start)
    _check_size("head", attentions, limit)
    L, A = len(attentions), attentions[0].shape[1]
    layer = _checked_index("layer", layer, L)
    heads = None if heads is None else [_checked_index("head", h, A) for h in heads]
    data, filters = _attention_data(attentions, tokens, sentence_b_start, decimals)
    params = {
        "attention": data,
        "default_filter": "0",
        "root_div_id": _ROOT_ID,
        "layer": layer,
        "heads": heads,
        "include_layers": list(range(L)),
    }
    return _page("head", params, filters)


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
    display_mode "light" (default here, to sit on a white page) or "dark" (bertviz's default).
    Thumbnails are at most 7 px per token high (MODEL_VIEW_MIN_COLUMNS), and the view is scaled
    down to a frame narrower than bertviz's width."""
    attentions, tokens = _checked(attentions, tokens, sentence_b_start)
    _check_size("model", attentions, limit)
    _check_display_mode(display_mode)
    L, A = len(attentions), attentions[0].shape[1]
    data, filters = _attention_data(attentions, tokens, sentence_b_start, decimals)
    params = {
        "attention": data,
        "default_filter": "0",
        "display_mode": display_mode,
        "root_div_id": _ROOT_ID,
        "include_layers": list(range(L)),
        "include_heads": list(range(A)),
        "total_heads": max(A, MODEL_VIEW_MIN_COLUMNS),
    }
    return _page("model", params, filters)


def _attention_data(attentions: list, tokens: list[str], sentence_b_start, decimals: int) -> tuple[list, list]:
    """The head and model views' data as bertviz's head_view() / model_view() build it: a list of
    {"name", "attn": [L][A][T][T], "left_text", "right_text"}, one entry for one sentence, five for
    a pair (_PAIR_BLOCKS), tokens as bertviz's prettify_tokens shows them; and the filter menu
    for the template: [(value, label)], none for one sentence."""
    # float64 rounded: json writes 0.123, not float32's 0.12300000339746475 (a 4x smaller page)
    attn = torch.stack([a[0] for a in attentions]).detach().cpu().double().round(decimals=decimals)
    shown = [t.replace("Ġ", " ").replace("▁", " ").replace("</w>", "") for t in tokens]  # bertviz's util
    blocks = _blocks(len(tokens), sentence_b_start)
    data = [
        {
            "name": _PAIR_BLOCKS[name] if sentence_b_start is not None else None,
            "attn": attn[:, :, rows, cols].tolist(),
            "left_text": shown[rows],
            "right_text": shown[cols],
        }
        for name, (rows, cols) in blocks.items()
    ]
    filters = [(str(i), entry["name"]) for i, entry in enumerate(data)] if len(data) > 1 else []
    return data, filters


def _blocks(T: int, sentence_b_start: int | None) -> dict[str, tuple[slice, slice]]:
    """(rows, columns) of the attention for "all" and, for a pair, each of _PAIR_BLOCKS."""
    everything = slice(0, T)
    if sentence_b_start is None:
        return {"all": (everything, everything)}
    a, b = slice(0, sentence_b_start), slice(sentence_b_start, T)
    return {"all": (everything, everything), "aa": (a, a), "bb": (b, b), "ab": (a, b), "ba": (b, a)}


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
    layer, head = _checked_index("layer", layer, L), _checked_index("head", head, A)
    _check_display_mode(display_mode)
    pair = sentence_b_start is not None
    _check_neuron_size(L, A, T, d, pair, limit, max_tokens)
    params = {
        "attention": neuron_view_data(queries, keys, attentions, tokens, sentence_b_start, decimals),
        "default_filter": "all",
        "root_div_id": _ROOT_ID,
        "bidirectional": True,
        "display_mode": display_mode,
        "layer": layer,
        "head": head,
    }
    filters = [(name, _PAIR_BLOCKS[name]) for name in _NEURON_MENU] if pair else []
    return _page("neuron", params, filters)


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
    return {
        name: {
            "attn": attn[:, :, rows, cols].tolist(),
            "left_text": tokens[rows],
            "right_text": tokens[cols],
            "queries": q[:, :, rows].tolist(),
            "keys": k[:, :, cols].tolist(),
        }
        for name, (rows, cols) in _blocks(len(tokens), sentence_b_start).items()
    }


def _checked_index(name: str, value, count: int) -> int | None:
    """A layer or head to show first: None (bertviz's default, 0) or one of 0..count-1, as an int
    (numpy integers, e.g. from np.unravel_index, become JSON numbers)."""
    if value is not None and not (isinstance(value, numbers.Integral) and 0 <= value < count):
        raise ValueError(f"{name} must be one of 0..{count - 1} (this model has {count} {name}s), got {value!r}")
    return None if value is None else int(value)


def _check_display_mode(display_mode: str) -> None:
    if display_mode not in ("light", "dark"):
        raise ValueError(f"display_mode must be 'light' or 'dark', got {display_mode!r}")


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


# ----------------------------------------------------------------------------------------
# The template, filled: data and scripts, safe inside <script>
# ----------------------------------------------------------------------------------------
def _page(view: str, params: dict, filters: list[tuple[str, str]]) -> str:
    """The lab's template filled for one view: `params` (the data and settings bertviz's
    {view}_view.js reads), its filter menu [(value, label)], jQuery, d3 and bertviz's script."""
    d3, jquery = library_sources()
    values = {
        "CSP": _CSP,
        "VIEW": view,
        "CONFIG_JSON": {"view": view, "filters": filters, "params": params},
        "JQUERY_JS": jquery,
        "D3_JS": d3,
        "VIEW_JS": _bertviz_script(view),
    }
    return fill_template(_template(), values)


def fill_template(template: str, values: dict) -> str:
    """`template` with each {{NAME}} replaced by values[NAME], escaped for where it stands:
        NAME ending in _JSON: the value as JSON that cannot end its <script> (json_for_script);
        NAME ending in _JS: JavaScript inside a <script>, unchanged (script_text refuses code
            that could end the element);
        any other NAME: text, HTML-escaped with quotes (it may stand in an attribute).
    One pass over the template, so what is inserted is never searched for placeholders. A
    placeholder without a value, or a value without a placeholder, is a ValueError."""
    names = set(_PLACEHOLDER.findall(template))
    if names != set(values):
        raise ValueError(
            f"the template's placeholders {sorted(names)} differ from the values given {sorted(values)}: "
            f"missing {sorted(names - set(values))}, unused {sorted(set(values) - names)}"
        )

    def inserted(match: re.Match) -> str:
        name = match.group(1)
        if name.endswith("_JSON"):
            return json_for_script(values[name])
        if name.endswith("_JS"):
            return script_text(values[name], name)
        return html.escape(str(values[name]), quote=True)

    return _PLACEHOLDER.sub(inserted, template)


def json_for_script(value) -> str:
    """JSON that cannot end its <script>: `<`, `>`, `&` become \\u003c, \\u003e, \\u0026 (the same
    string to JavaScript), so "</script>" or "<!--" in a token stays inside the data; U+2028 and
    U+2029 (line ends to older JavaScript) are escaped too, as every non-ASCII character."""
    text = json.dumps(value, separators=(",", ":"))  # ensure_ascii: U+2028 etc. escaped too
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def script_text(js: str, name: str = "the script") -> str:
    """JavaScript for a <script> element, as it is. `</script` would end the element, and `<!--`
    can keep its end from being seen; rewriting code to avoid them is safe only inside strings,
    regular expressions and comments, so code that holds either is refused (a ValueError), not
    rewritten. d3 5.7, jQuery 3.7 and bertviz 1.4's scripts hold neither."""
    found = re.search(r"</script|<!--", js, flags=re.I)
    if found:
        raise ValueError(
            f"{name} holds {found.group(0)!r} (at character {found.start():,}), which would end its "
            f"<script> early: it cannot be inlined as it is"
        )
    return js


def _template() -> str:
    """bertviz_page.html, the lab's page around a view, from the installed lab package."""
    try:
        return importlib.resources.files(__package__).joinpath(TEMPLATE).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{TEMPLATE} is missing from the installed {__package__}: reinstall bert-lab (the file is "
            f"package data, pyproject.toml [tool.setuptools.package-data])"
        ) from None


def _bertviz_script(view: str) -> str:
    """bertviz's {view}_view.js, read from the installed bertviz and returned as it is; a
    RuntimeError if it no longer asks for what the template's script provides (_BERTVIZ_NEEDS)."""
    text = _package_file("bertviz", f"{view}_view.js", pip="bertviz").read_text(encoding="utf-8")
    missing = [needed for needed in _BERTVIZ_NEEDS[view] if needed not in text]
    if missing:
        try:
            version = importlib.metadata.version("bertviz")
        except importlib.metadata.PackageNotFoundError:
            version = "?"
        raise RuntimeError(
            f"bertviz {version}'s {view}_view.js has no {' or '.join(map(repr, missing))}: it builds its "
            f"view differently from bertviz 1.4, and lab/figures/bertviz_page.html needs updating"
        )
    return text


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
    notebook output; in a frame of its own the `require` stand-in cannot clash with the host page's.
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
    when the notebook is trusted, and the `require` stand-in must not replace a host's require.js
    (classic Jupyter's)."""
    from IPython.display import HTML, display  # only a notebook has IPython

    # in a <div>: IPython warns about any HTML output that is a bare <iframe>
    display(HTML(f"<div>{iframe(page, frame_height(view, list(attentions)))}</div>"))
