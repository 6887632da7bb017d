"""bertviz's head view and model view, drawn with no network: in the dashboard and in JupyterLab.

    from lab import bertviz_offline, explore
    r = explore.attention(model, tokenizer, "the cat sat on the mat .", "it was tired .")
    page = bertviz_offline.head_view_html(r.attentions, r.tokens, r.sentence_b_start)  # an HTML document
    frame = bertviz_offline.iframe(page, bertviz_offline.frame_height("head", r.attentions))
    bertviz_offline.show_head_view(r.attentions, r.tokens, r.sentence_b_start)        # in a notebook

Why: bertviz's page loads require.js 2.3.6 from cdnjs and its script asks require.js for d3 5.7
and jQuery 2.0 from cdnjs too, so without internet it draws nothing. Here the page is
self-contained instead:
  - bertviz builds the view as usual (html_action="return": its markup, its head_view.js or
    model_view.js, its data); the CDN <script src> and the require.config() naming the CDN go.
  - d3 v5 (the d3 5.7.0 bertviz asks for, from the pip package mpld3) and jQuery 3.7 (pip
    xstatic-jquery) are read from the installed packages at run time and inlined: no third-party
    JavaScript lives in this repository.
  - a three-line `require` written here hands bertviz's callback the jQuery and d3 globals that
    the inlined scripts defined.
  - a Content-Security-Policy (default-src 'none') lets the page run only its inline scripts and
    styles: nothing it holds can fetch anything, even by accident.
Tokens (typed by users, read from vocabularies) reach the page only as JSON inside a script,
with `<`, `>` and `&` written as \\u003c..., so a token "</script><img onerror=...>" stays a
string; bertviz draws tokens with d3's .text(), never as HTML.

Size: bertviz sends every attention weight (layers x heads x tokens², twice for a sentence
pair) as JSON numbers, and the model view draws tokens² lines per head. Weights are rounded to
3 decimals here (0.001 of opacity is invisible) and each view has a cap on layers x heads x
tokens² (HEAD_VIEW_LIMIT, MODEL_VIEW_LIMIT) above which it refuses with a ValueError that says
how many tokens would fit.

In the dashboard and in JupyterLab the page goes into an <iframe srcdoc> (iframe()): Gradio's
gr.HTML runs no <script>, JupyterLab's HTML output runs scripts only in trusted notebooks, and
inside an iframe the `require` shim cannot clash with the host page's own.
"""
from __future__ import annotations

import html
import importlib.util
import json
import math
import re
from pathlib import Path

# layers x heads x tokens² above which a view refuses. Measured with 3 decimals: about 5 bytes
# of page per weight for one sentence, 10 for a pair (bertviz also sends the A/B blocks), plus
# 325 KB of d3 + jQuery. Head view at its limit: 2.8 MB (one sentence), 5.3 MB (a pair); fits
# BERT-base (12 x 12) up to 58 tokens, the bundled 2 x 2 model up to 353. Model view (every
# head drawn at once, tokens² lines each: 12 x 12 x 58² took 8.5 s and 490k SVG elements in
# headless chromium) at its limit: 1.6 / 2.8 MB, BERT-base up to 41 tokens, 2 x 2 up to 250.
HEAD_VIEW_LIMIT = 500_000
MODEL_VIEW_LIMIT = 250_000
DECIMALS = 3                          # digits kept of each attention weight
MAX_FRAME_HEIGHT = 900                # px; a taller view scrolls inside its iframe

_VIEWS = ("head", "model")
_PARAMS_MARKER = "PYTHON_PARAMS"      # bertviz's placeholder for its data in {head,model}_view.js
_SCRIPT_OPEN = '\n<script type="text/javascript">\n'   # how bertviz 1.4 wraps its script
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
    if (callback) { callback.apply(window, found); }
  }
  require.config = function () {};
  window.require = window.requirejs = require;
})();
"""
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
def head_view_html(attentions, tokens: list[str], sentence_b_start: int | None = None, *,
                   layer: int | None = None, heads: list[int] | None = None,
                   decimals: int = DECIMALS, limit: int = HEAD_VIEW_LIMIT) -> str:
    """bertviz's head view (one layer's heads as lines between the tokens) as a complete HTML
    document that draws with no network. attentions: L x [1, heads, T, T] (bertviz format,
    explore.attention().attentions); tokens: T strings; sentence_b_start: index of b's first
    token for a pair (adds bertviz's "Sentence A -> Sentence B" filters)."""
    return _page("head", attentions, tokens, sentence_b_start, decimals, limit,
                 layer=layer, heads=heads)


def model_view_html(attentions, tokens: list[str], sentence_b_start: int | None = None, *,
                    display_mode: str = "light", decimals: int = DECIMALS,
                    limit: int = MODEL_VIEW_LIMIT) -> str:
    """bertviz's model view (every layer x head as a thumbnail; click one to enlarge) as a
    complete HTML document that draws with no network. Same inputs as head_view_html;
    display_mode "light" (default here, to sit on a white page) or "dark" (bertviz's default)."""
    return _page("model", attentions, tokens, sentence_b_start, decimals, limit,
                 display_mode=display_mode)


def _page(view: str, attentions, tokens, sentence_b_start, decimals: int, limit: int,
          **options) -> str:
    """Check the size, let bertviz build its page, and rebuild it around local scripts."""
    attentions, tokens = _checked(attentions, tokens, sentence_b_start)
    _check_size(view, attentions, limit)
    # float64 rounded: json writes 0.123, not float32's 0.12300000339746475 (a 4x smaller page)
    rounded = [a.detach().cpu().double().round(decimals=decimals) for a in attentions]
    markup, template, params = _bertviz_parts(view, rounded, tokens, sentence_b_start, **options)
    d3, jquery = library_sources()
    scripts = "".join(_script(js) for js in (_ERROR_NOTE, jquery, d3, _REQUIRE_SHIM))
    # the data once, where the script reads it (the comment keeps its word PYTHON_PARAMS)
    view_js = template.replace(_PARAMS_MARKER, json_for_script(params), 1)
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
            f"<title>bertviz {view} view</title></head>\n"
            f'<body style="margin:8px;background:white">\n{scripts}{markup}{_script(view_js)}'
            f"</body></html>\n")


def _checked(attentions, tokens, sentence_b_start) -> tuple[list, list[str]]:
    """Refuse inputs bertviz would choke on, with a message (bertviz's own errors are terse)."""
    attentions = list(attentions)
    tokens = [str(t) for t in tokens]
    if not attentions:
        raise ValueError("no attention maps: pass explore.attention(...).attentions (one tensor per layer)")
    T = len(tokens)
    for i, a in enumerate(attentions):
        if a.dim() != 4 or a.shape[0] != 1 or a.shape[-1] != a.shape[-2] or a.shape[-1] != T:
            raise ValueError(f"attention of layer {i} has shape {tuple(a.shape)}; bertviz needs "
                             f"[1, heads, T, T] with T = {T} tokens")
    if sentence_b_start is not None and not 0 < sentence_b_start < T:
        raise ValueError(f"sentence_b_start must lie inside the {T} tokens, got {sentence_b_start}")
    return attentions, tokens


def _check_size(view: str, attentions: list, limit: int) -> None:
    """The cap: layers x heads x tokens² attention weights; above `limit` the page would be
    several MB and the browser slow to draw it (a 50,000-character text once made 42 MB)."""
    L, A, T = len(attentions), attentions[0].shape[1], attentions[0].shape[-1]
    weights = L * A * T * T
    if weights > limit:
        fits = math.isqrt(limit // (L * A))
        other = " or the head view" if view == "model" else ""
        raise ValueError(
            f"this input is too large for bertviz's {view} view: {L} layers x {A} heads x {T}² tokens "
            f"= {weights:,} attention weights, above its limit of {limit:,}. Use a shorter text "
            f"(at most about {fits} tokens with this model){other}.")


def _bertviz_parts(view: str, attentions: list, tokens: list[str], sentence_b_start, **options):
    """bertviz's page taken apart: (markup without the CDN script, {view}_view.js with its
    require.config() removed, the data). bertviz 1.4 returns
        <script src=CDN require.js></script> + markup + _SCRIPT_OPEN + script + _SCRIPT_CLOSE
    where script is {view}_view.js with every PYTHON_PARAMS replaced by json.dumps(params):
    twice, as the file names the marker again in a comment. The markup holds no tokens (they
    live only in params), so the first _SCRIPT_OPEN is bertviz's own; the data's length follows
    from the lengths, e.g. template "a M b M c" and script of 5 + 2n characters: n = len(data)."""
    import bertviz
    draw = bertviz.head_view if view == "head" else bertviz.model_view
    page = draw(attentions, tokens, sentence_b_start=sentence_b_start, html_action="return",
                **options).data
    template = _package_file("bertviz", f"{view}_view.js", pip="bertviz").read_text(encoding="utf-8")
    start = page.find(_SCRIPT_OPEN)
    script = page[start + len(_SCRIPT_OPEN):len(page) - len(_SCRIPT_CLOSE)]
    k = template.count(_PARAMS_MARKER)
    n = (len(script) - len(template) + k * len(_PARAMS_MARKER)) // max(k, 1)
    at = template.find(_PARAMS_MARKER)
    data = script[at:at + n]
    if start < 0 or not page.endswith(_SCRIPT_CLOSE) or k == 0 or \
            template.replace(_PARAMS_MARKER, data) != script:
        raise RuntimeError(f"bertviz {getattr(bertviz, '__version__', '?')} builds its {view} view "
                           f"differently from bertviz 1.4: lab/bertviz_offline.py needs updating")
    markup = re.sub(r"<script\b[^>]*\bsrc=[^>]*>\s*</script>", "", page[:start])
    # `require.config({paths: {d3: CDN, jquery: CDN}});` -> nothing (the shim has the modules)
    template = re.sub(r"require\.config\(\{.*?\}\);", "", template, count=1, flags=re.S)
    return markup, template, json.loads(data)


# ----------------------------------------------------------------------------------------
# Scripts and data, safe inside <script>
# ----------------------------------------------------------------------------------------
def json_for_script(value) -> str:
    """JSON that cannot end its <script>: `<`, `>`, `&` become \\u003c, \\u003e, \\u0026 (the same
    string to JavaScript), so "</script>" or "<!--" in a token stays inside the data."""
    text = json.dumps(value, separators=(",", ":"))      # ensure_ascii: U+2028 etc. escaped too
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
    jquery = _package_file("xstatic.pkg.jquery", "data", "jquery.min.js",
                           pip="xstatic-jquery").read_text(encoding="utf-8")
    return d3, jquery


def _package_file(package: str, *parts: str, pip: str) -> Path:
    """A file shipped inside an installed package, found without importing the package (mpld3
    would import matplotlib); a clear error naming the pip package when it is missing."""
    try:
        spec = importlib.util.find_spec(package)
    except ModuleNotFoundError:                  # a missing parent (xstatic) raises instead
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"bertviz offline needs the pip package {pip!r}, which is not installed: "
            f"pip install {pip}  (or pip install 'bert-lab[app]')")
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed {pip!r}: reinstall it "
                                f"(pip install --force-reinstall {pip})")
    return path


# ----------------------------------------------------------------------------------------
# Showing a page: an iframe (dashboard, JupyterLab)
# ----------------------------------------------------------------------------------------
def frame_height(view: str, attentions) -> int:
    """Pixels the view needs (bertviz's own layout arithmetic), at most MAX_FRAME_HEIGHT.
    Head view: 22.5 px per token + ~110 px of menus and head checkboxes. Model view: each layer a
    row of thumbnails 7 * 12 / heads px per token high, or the enlarged head, whichever is taller."""
    if view not in _VIEWS:
        raise ValueError(f"view must be one of {_VIEWS}, got {view!r}")
    L, A, T = len(attentions), attentions[0].shape[1], attentions[0].shape[-1]
    if view == "head":
        needed = 22.5 * T + 110
    else:
        needed = max(L * (T * 7 * 12 / A + 10) + 50, 18 * T + 70) + 60
    return int(min(needed, MAX_FRAME_HEIGHT))


def iframe(page: str, height: int = 720) -> str:
    """The page in an <iframe srcdoc>, for gr.HTML or a notebook output. srcdoc holds the whole
    document escaped as an attribute (html.escape, quote=True: & < > " ' become entities, so
    nothing in the page can end the attribute). sandbox="allow-scripts" without
    allow-same-origin: the view runs its scripts but cannot reach the page around it."""
    return (f'<iframe title="bertviz" sandbox="allow-scripts" '
            f'style="width:100%;height:{int(height)}px;border:0" '
            f'srcdoc="{html.escape(page, quote=True)}"></iframe>')


def show_head_view(attentions, tokens: list[str], sentence_b_start: int | None = None, **options) -> None:
    """Display the head view in a notebook (JupyterLab, VS Code, classic Jupyter) with no
    network; options as head_view_html."""
    _show("head", head_view_html(attentions, tokens, sentence_b_start, **options), attentions)


def show_model_view(attentions, tokens: list[str], sentence_b_start: int | None = None, **options) -> None:
    """Display the model view in a notebook with no network; options as model_view_html."""
    _show("model", model_view_html(attentions, tokens, sentence_b_start, **options), attentions)


def _show(view: str, page: str, attentions) -> None:
    """An iframe rather than the page itself: JupyterLab runs <script> in an HTML output only
    when the notebook is trusted, and the `require` shim must not replace a host's require.js
    (classic Jupyter's)."""
    from IPython.display import HTML, display
    # in a <div>: IPython warns about any HTML output that is a bare <iframe>
    display(HTML(f"<div>{iframe(page, frame_height(view, list(attentions)))}</div>"))
