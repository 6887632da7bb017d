"""What every tab's handlers share: checking what the page sends, turning every failure into a
status line, the numbers behind the download buttons, and the small components every tab uses.

A handler returns a view: a NamedTuple of its outputs by name, the status line last (in_order puts
the components in the same order). Wrapped with @handler(View), a problem the user can fix
(UserError, a ModelError, ValueError from the library) clears the outputs and becomes the status
line; a bug is logged and reported by its type only, and the server keeps serving. Status lines
are escaped: a model's label or a typed name shows as text, never as HTML.
"""

from __future__ import annotations

import functools
import html
import json
import logging
import os
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import NamedTuple

import gradio as gr
from gradio.components.plot import PlotData

from lab.figures import plotly_figures
from lab.figures.plotly_canvas import LabFigure
from lab.tokenizer import clean_text

from .model_store import short

log = logging.getLogger("bert-lab.app")
MAX_TEXT_CHARS = 20_000  # longer inputs are cut (with a notice) before tokenizing
THEMES = ("light", "dark")


class UserError(ValueError):
    """A problem with the request that the user can fix; shown in the page."""


def notice(message: str) -> str:
    return f"⚠️ {message}"


class StatusLine(str):
    """A status line made by `said`: safe HTML already (every part escaped when it was made). Text
    added before or after it is escaped on the way in, so a note can still be put in front."""

    def __add__(self, other):
        return StatusLine(str(self) + str(status_html(other)))

    def __radd__(self, other):
        return StatusLine(str(status_html(other)) + str(self))


def said(plain, detail="") -> StatusLine:
    """A status line in plain words, the technical detail (model and file names, methods, exact
    numbers) one click away in a <details> element; both escaped (they may hold what a user
    typed or a model answered)."""
    line = html.escape(str(plain or ""), quote=False)
    if detail:
        line += (
            '<details class="bl-details" style="font-size:0.9em"><summary style="cursor:pointer">'
            f"details</summary>{html.escape(str(detail), quote=False)}</details>"
        )
    return StatusLine(line)


def status_html(text) -> StatusLine:
    """A status line for a gr.HTML status box: the text escaped (a StatusLine is already, and
    what this returns is one: escaping twice shows the same line)."""
    if isinstance(text, StatusLine):
        return text
    return StatusLine(html.escape(str(text or ""), quote=False))


def plain_status(status) -> str:
    """What a status line says in plain words (its details left out), as text: for a test, a log
    or another status line."""
    visible = re.sub(r"<details\b.*?</details>", "", str(status or ""), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", visible)).strip()


def status_detail(status) -> str:
    """The technical detail of a status line (its <details> text without the summary), as text."""
    found = re.search(r"<details\b[^>]*>.*?</summary>(.*?)</details>", str(status or ""), flags=re.S)
    return html.unescape(found[1]).strip() if found else ""


def handler(outputs: int | type, keep: bool = False, hide=()):
    """Wrap a handler returning (*outputs, status): the status is escaped; on an error the
    outputs are cleared (Nones; keep=True: left as they are, e.g. a menu) and the message becomes
    the status. Messages carry display names, never server paths; an unexpected error shows only
    its type. `outputs`: how many come before the status, or the view (a NamedTuple whose last
    field is `status`) the handler returns, kept as that type either way. `hide`: absolute paths
    to cut out of messages (the repository)."""
    view = outputs if isinstance(outputs, type) else None
    if view is not None:
        assert view._fields[-1] == "status", view  # a view ends with its status line
    n_outputs = len(view._fields) - 1 if view else outputs
    shaped = view._make if view else tuple

    def wrap(fn):
        @functools.wraps(fn)
        def safe(*args, **kwargs):
            try:
                *outputs, status = fn(*args, **kwargs)
                outputs = [drawn(o) for o in outputs]  # figures as gr.Plot's data
                return shaped((*outputs, status if isinstance(status, dict) else status_html(status)))
            except (ValueError, KeyError, FileNotFoundError, NotADirectoryError, OverflowError) as e:
                message = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
                for path in hide:
                    message = message.replace(str(path) + os.sep, "")
            except Exception as e:  # a bug: keep serving, say what happened
                log.exception("handler %s failed", fn.__name__)
                message = (
                    f"internal error ({type(e).__name__}) in {fn.__name__}; the server keeps running "
                    f"and its log has the details"
                )
            cleared = gr.update() if keep else None
            return shaped((*[cleared] * n_outputs, status_html(notice(message))))

        return safe

    return wrap


def remembered(maxsize: int = 16):
    """Keep a handler's answers to its last `maxsize` distinct requests: a class clicking the same
    example computes it once. For handlers whose answer depends on their arguments alone (a
    model's name stands for its weights: the store loads a name once); put it under @handler, so
    that a refusal is not kept and a request that cannot be a key (unhashable) is computed."""

    def wrap(fn):
        cached = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            try:
                hash((args, tuple(kwargs.items())))
            except TypeError:
                return fn(*args, **kwargs)
            return cached(*args, **kwargs)

        call.cache_info = cached.cache_info
        return call

    return wrap


def int_input(value, name: str, lo: int, hi: int) -> int:
    """A whole number from the page (None, text, 2**70 and 1.5 get a message saying what is allowed)."""
    allowed = f"a whole number from {lo:,} to {hi:,}"
    if value is None or (isinstance(value, str) and not value.strip()):
        raise UserError(f"{name} is missing: give {allowed}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UserError(f"{name} must be {allowed}, not “{short(value, 40)}”") from None
    if not number.is_integer() or not lo <= number <= hi:
        raise UserError(f"{name} must be {allowed}, not {short(value, 40)}")
    return int(number)


def float_input(value, name: str, lo: float, hi: float) -> float:
    """A number from the page within [lo, hi]."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UserError(f"{name} must be a number from {lo:g} to {hi:g}, not “{short(value, 40)}”") from None
    if not lo <= number <= hi:  # also refuses nan
        raise UserError(f"{name} must be a number from {lo:g} to {hi:g}, not {short(value, 40)}")
    return number


def text_input(value, name: str, required: bool = True) -> str:
    """Browser text -> a clean str (invalid UTF-8 replaced, control characters dropped, empty
    refused when required), cut at MAX_TEXT_CHARS."""
    return clean_text(value, name, required=required, max_chars=MAX_TEXT_CHARS)


def optional_text(value, name: str) -> str | None:
    """An optional second sentence: None when empty."""
    return text_input(value, name, required=False).strip() or None


ANY_CASE_MASK = re.compile(r"\[\s*mask\s*\]", re.IGNORECASE)


def masked_text(value, name: str = "the sentence") -> str:
    """Text for a masked-word request: [mask], [Mask] and [ MASK ] all mean [MASK]."""
    return ANY_CASE_MASK.sub("[MASK]", text_input(value, name))


def theme_input(theme) -> str:
    """The page's theme (read from the browser on load): figures follow it."""
    return theme if theme in THEMES else "light"


def truncation_note(cut: int, limit: int, pair: bool = False) -> str:
    """Said whenever a model's window cut the input: nothing is dropped silently. A pair loses
    tokens from the end of the longer sentence first (lab.tokenizer)."""
    if not cut:
        return ""
    where = "from the end of the longer sentence" if pair else "at the end"
    return (
        f"Note: the {'pair' if pair else 'text'} was longer than the model's {limit} tokens; {cut} tokens "
        f"{where} were cut. "
    )


def unknown_note(tokenizer, *texts: str | None) -> str:
    """Said whenever words of the input became [UNK]: a script or symbol the model's vocabulary
    lacks (Korean, Arabic or emoji in an English vocabulary) reaches the model as one token that
    says nothing, and its answer then says little about those words. Counted from the tokenizer's
    own word pieces: a word is a piece that does not continue another (no "##"); WordPiece turns
    a word it cannot spell into one [UNK]. [CLS], [SEP] and [MASK] typed in the text are no words."""
    unk = tokenizer.convert_ids_to_tokens(tokenizer.unk_token_id)
    specials = set(tokenizer.convert_ids_to_tokens(sorted(tokenizer.special_ids - {tokenizer.unk_token_id})))
    pieces = [p for text in texts if text for p in tokenizer.tokenize(text) if p not in specials]
    words = sum(not tokenizer.is_subword(p) for p in pieces)
    unknown = pieces.count(unk)
    if not unknown:
        return ""
    are = "is" if unknown == 1 else "are"
    return (
        f"Note: {unknown} of {words} words {are} unknown to this model ([UNK]): its answer says little about "
        f"{'it' if unknown == 1 else 'them'}. "
    )


def base_model(task: dict) -> str:
    """The model a fine-tuned model started from, as a page names it: a folder's name (a
    package's model/ folder: the package), never a server path."""
    base = Path(str(task.get("model", "?")))
    return base.parent.name if base.name == "model" else base.name


def cut_tokens(model, tokenizer, text_a: str, text_b: str | None = None) -> int:
    """How many tokens the model's window cuts from [CLS] a [SEP] (b [SEP]) (lab.inspect.explore cuts
    them the same way)."""
    return tokenizer.encode(text_a, text_b, max_length=model.config.max_position_embeddings).num_truncated


class FigureNumbers:
    """What a download button saves: a figure's name and the numbers it draws (an object of
    lab.figures.numbers, whose csv() is the file), not the figure. A plain class, not a dataclass:
    Gradio copies a dataclass in a gr.State field by field whenever it is set."""

    __slots__ = ("name", "numbers")

    def __init__(self, name: str, numbers):
        self.name, self.numbers = name, numbers

    def payload(self) -> str:
        """The CSV file for the browser to save: JSON {name, csv}."""
        return json.dumps({"name": f"{self.name}.csv", "csv": plotly_figures.figure_csv(self.numbers)})


class FigureDownloads:
    """The numbers behind each figure, downloaded as CSV when someone asks, never written to a
    file: a handler returns `keep(fig)` into the figure's gr.State (Gradio keeps it per page,
    the latest only, and drops it `max_age` seconds after it was drawn); the figure's button
    sends it back and the browser saves the CSV that `text` makes from it (SAVE_CSV_JS)."""

    def __init__(self, max_age: float = 3600.0):
        self.max_age = max_age
        self._payload: gr.Textbox | None = None  # one per page: the CSV on its way to the browser

    @staticmethod
    def keep(fig) -> FigureNumbers:
        return FigureNumbers(plotly_figures.figure_name(fig), getattr(fig, "lab_data", None) or fig)

    @staticmethod
    def text(kept: FigureNumbers | None) -> str:
        """The CSV of a figure kept for this page (JSON for SAVE_CSV_JS); a figure no longer
        kept is said, in a notice, not an error page."""
        if kept is None:
            gr.Warning("This figure's numbers are no longer kept: draw it again, then download.")
            return ""
        return kept.payload()

    @staticmethod
    def table(kept: FigureNumbers | None) -> str:
        """The numbers a figure draws as an HTML table a screen reader can walk (the first
        TABLE_ROWS rows, saying so when there are more: the CSV has them all)."""
        if kept is None:
            return status_html("This figure's numbers are no longer kept: draw it again, then show the table.")
        return numbers_table(kept.numbers)

    def box(self, value: FigureNumbers | None = None) -> gr.State:
        """Under a figure: the button that saves its numbers as CSV (its PNG: the camera in the
        figure), the button that shows them as a table, and the gr.State the figure's handler
        fills (returned: the handler's output)."""
        kept = gr.State(value, time_to_live=self.max_age)
        with gr.Row():
            button = gr.Button("⬇ the figure's data (CSV)", size="sm", variant="secondary")
            show = gr.Button("the figure's numbers as a table", size="sm", variant="secondary")
        shown = gr.HTML("", padding=False, elem_classes="bl-numbers")
        if self._payload is None:
            self._payload = gr.Textbox("", visible=False)
        button.click(self.text, kept, self._payload, api_visibility="private", queue=False).then(
            None, self._payload, None, js=SAVE_CSV_JS
        )
        show.click(self.table, kept, shown, api_visibility="private", queue=False)
        kept.change(lambda: "", None, shown, api_visibility="private", queue=False, show_progress="hidden")
        return kept


TABLE_ROWS = 200  # rows of a figure's table shown in the page; the CSV download has every row


def numbers_table(numbers) -> str:
    """A lab.figures.tables object's rows as an HTML table (caption: its summary), escaped."""
    rows = numbers.rows()
    if not rows:
        return status_html("The figure draws no numbers.")
    summary = numbers.summary() if hasattr(numbers, "summary") else ""
    cut = f" The first {TABLE_ROWS:,} of {len(rows):,} rows; the CSV has them all." if len(rows) > TABLE_ROWS else ""
    head = "".join(f'<th scope="col">{html.escape(str(k))}</th>' for k in rows[0])

    def cell(v) -> str:
        return f"{v:.4g}" if isinstance(v, float) else html.escape(str(v))

    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in r.values()) + "</tr>" for r in rows[:TABLE_ROWS])
    return (
        f'<div class="bl-scroll bl-table" tabindex="0" role="region" aria-label="the figure\'s numbers">'
        f"<table><caption>{html.escape(summary + cut)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


# the browser saves the CSV it was sent (nothing is written on the server)
SAVE_CSV_JS = """(payload) => {
  if (!payload) return;
  const {name, csv} = JSON.parse(payload);
  const url = URL.createObjectURL(new Blob([csv], {type: 'text/csv'}));
  const link = Object.assign(document.createElement('a'), {href: url, download: name});
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}"""


# The page's theme as the browser shows it now. Gradio sets it when the page opens (?__theme=dark,
# else the system's preference), and follows a change of the system's preference while the page
# is open (a laptop switching to dark at dusk): no reload, so the page must notice it itself.
READ_THEME_JS = "() => (document.body.classList.contains('dark') ? 'dark' : 'light')"
# A tab's watcher, run when the tab is first drawn: the views were drawn in the theme the page
# opened with (the first watcher notes it); a different theme now, or a switch later, clicks the
# watcher, whose events set the page's theme input and draw the tab's figures again.
THEME_WATCH_JS = """
const now = () => (document.body.classList.contains('dark') ? 'dark' : 'light');
let shown = (window.blOpenedTheme ??= now());
const check = () => {
  if (now() === shown) return;
  shown = now();
  trigger('click');
};
new MutationObserver(check).observe(document.body, {attributes: true, attributeFilter: ['class']});
check();
"""


def theme_watch(ctx):
    """A tab's theme watcher (hidden): -> the event that sets ctx.theme when the browser's theme
    differs from the one the tab's views were drawn in. Views with figures list ctx.theme among
    their inputs (marked out of date on a switch); `theme_redraw` draws a quick one again at once."""
    watch = gr.HTML("", visible="hidden", js_on_load=THEME_WATCH_JS, elem_classes="bl-theme-watch")
    return watch.click(None, None, ctx.theme, js=READ_THEME_JS, queue=False, show_progress="hidden")


def theme_redraw(ctx, switched, view, run) -> None:
    """After a theme switch (`switched`, from theme_watch), compute `view` again with run = (fn,
    fn's inputs, queue settings) and mark it current."""
    fn, inputs, queue = run
    event = switched.then(fn, inputs, view.outputs, api_visibility="private", show_progress="hidden", **queue)
    ctx.current.after(event, view)


def status_box(elem_id: str | None = None, value: str = "") -> gr.HTML:
    """A status line: handlers write escaped text into it (status_html)."""
    return gr.HTML(value=status_html(value), elem_id=elem_id, padding=False, elem_classes="bl-status")


def plot(label: str, value=None, elem_id: str | None = None) -> gr.Plot:
    """A figure: its label is the alt text, not drawn over the figure (each figure has a title)."""
    return gr.Plot(value=drawn(value), label=label, show_label=False, elem_id=elem_id)


def drawn(value):
    """What a gr.Plot is given: a figure made by lab.figures.plotly_figures as gr.Plot's own data
    (PlotData, plotly: its JSON by figure_json, no plotly Figure made for a request); anything
    else as it is."""
    return PlotData(type="plotly", plot=value.to_json()) if isinstance(value, LabFigure) else value


def word_chips(text: str, label: str | None = None) -> list[tuple[str, str | None]]:
    """Text as HighlightedText pieces, one per word with its following spaces: a long text wraps
    between words, never inside one."""
    return [(m.group(), label) for m in re.finditer(r"\s*\S+\s*", text)] if text else []


MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~])")


def md_escape(text: str) -> str:
    """Text shown literally inside Markdown (a model name: no links, images or HTML)."""
    return MD_SPECIAL.sub(r"\\\1", html.escape(str(text), quote=False))


def safe_card(text: str) -> str:
    """A model card (README.md, written by whoever made the model) made safe to render: raw HTML
    is shown as text, images become links (nothing remote loads for every student), and a line
    that starts with '>=' or '<=' stays a sentence instead of turning into a quote."""
    text = html.escape(text, quote=False)  # <img>, <script>: text
    text = re.sub(r"!\[", "[image: ", text)  # ![alt](url) -> a link, not loaded
    return re.sub(r"^(\s*)&gt;", r"\1\\&gt;", text, flags=re.MULTILINE)


# ----------------------------------------------------------------------------------------------
# "Why?": what the answer rests on (explore.attributions), the same view under several tabs
# ----------------------------------------------------------------------------------------------
WHY_STEPS = 16  # integrated gradients start with 16 intervals in the dashboard (refined while the
# completeness error is above 1%: lab.inspect.attribution), half the CPU of the library's 32 where that is enough
WHY_METHODS = {"integrated gradients": "integrated_gradients", "gradient x input": "gradient_x_input"}


class AttributionCache:
    """explore.attributions' results by request (the tab, the model's name, the inputs, the method),
    the most recent `size` kept. A class sends the tab's examples again and again, and one
    attribution is 17-33 forward and backward passes; a result read again costs nothing, and
    requests that arrive while the same one is being computed wait for it instead of computing it
    again (a hundred students pressing the button together cost one attribution). Errors are not
    kept (the next request tries again). Shared by every user of the server (a result holds
    nothing beyond the text its key already holds)."""

    def __init__(self, size: int = 128):
        self.size, self._results, self._lock = size, OrderedDict(), threading.Lock()
        self._running: dict[tuple, threading.Event] = {}
        self.hits = self.misses = 0

    def get(self, key: tuple, compute):
        while True:
            with self._lock:
                if key in self._results:
                    self._results.move_to_end(key)
                    self.hits += 1
                    return self._results[key]
                running = self._running.get(key)
                if running is None:  # this request computes it
                    self._running[key] = running = threading.Event()
                    self.misses += 1
                    break
            running.wait()  # the same request is being computed: wait, then read it (or, after
            # an error, compute it here)
        try:
            result = compute()  # outside the lock: different requests compute at once
            with self._lock:
                self._results[key] = result
                while len(self._results) > self.size:
                    self._results.popitem(last=False)
            return result
        finally:
            with self._lock:
                del self._running[key]
            running.set()


def why_method(value) -> str:
    """The page's method name -> the library's ("integrated gradients" -> "integrated_gradients")."""
    return WHY_METHODS.get(value, "integrated_gradients")


SHADE_MAX = 0.7  # the deepest shade: the page's text stays at least 4.5:1 on it, in both themes


def attribution_chips(result) -> list[tuple[str, float | None]]:
    """The tokens shaded by their scores (HighlightedText: red toward the answer, purple against,
    deeper = more; over the largest |score|, times SHADE_MAX), a space after each; special tokens
    unshaded."""
    top = (max((abs(s) for s in result.scores), default=0.0) or 1.0) / SHADE_MAX
    chips = []
    for token, score in zip(result.tokens, result.scores):
        special = token in ("[CLS]", "[SEP]", "[PAD]")
        chips += [(token, None if special else round(score / top, 3)), (" ", None)]
    return chips


def attribution_status(result) -> StatusLine:
    """The answer and the words that pushed most toward it and against it, in plain words; f at the
    input and at the baseline, the sum and the method in the details."""
    kept = [i for i, t in enumerate(result.tokens) if t not in ("[CLS]", "[SEP]", "[MASK]", "[PAD]")]
    words = [(result.scores[i], result.tokens[i]) for i in kept]
    most = max(words, default=None)
    least = min(words, default=None)
    plain = f"The answer {result.answer}"
    if most is not None and most[0] > 0:
        plain += f" rests most on {leading_words(result, kept)}"
    else:
        plain += " rests on no word in particular"
    if least is not None and least[0] < 0:
        plain += f"; “{least[1]}” pulls most against it"
    plain += " (red: toward the answer, purple: against it)."
    detail = f"f = the {result.target}: {result.f_input:.2f} for this text"
    detail += f", {result.f_baseline:.2f} without its words ({result.baseline})"
    detail += f"; the scores add up to {result.total:.2f} (completeness error {result.completeness_error:.1%}"
    detail += (
        f", integrated gradients, {result.steps} steps)"
        if result.method == "integrated_gradients"
        else (", gradient x input)")
    )
    if most is not None and most[0] > 0:
        detail += f"; most for it: “{most[1]}” ({most[0]:+.2f})"
    if least is not None and least[0] < 0:
        detail += f"; most against: “{least[1]}” ({least[0]:+.2f})"
    return said(plain, detail)


def leading_words(result, kept: list[int], count: int = 3) -> str:
    """The `count` tokens that push most toward the answer, quoted with their scores; for one
    [MASK] (a fill-mask answer), each says on which side of it it stands: both sides count."""
    top = sorted((i for i in kept if result.scores[i] > 0), key=lambda i: -result.scores[i])[:count]
    mask = result.highlight[0] if result.task == "fill_mask" and len(result.highlight) == 1 else None
    said = []
    for n, i in enumerate(top):
        side = ""
        if mask is not None:
            where = "before" if i < mask else "after"
            side = f", {where} the [MASK]" if n == 0 else f", {where}"
        said.append(f"“{result.tokens[i]}” ({result.scores[i]:+.2f}{side})")
    return said[0] + (f", then {' and '.join(said[1:])}" if len(said) > 1 else "")


def in_order(view: type, **components) -> list:
    """A view's components in the order of its fields (what a handler returning `view` fills):
    named, so that the handler, the component list and the opening cannot drift apart."""
    if set(components) != set(view._fields):
        raise TypeError(f"{view.__name__} has the fields {view._fields}, not {tuple(components)}")
    return [components[name] for name in view._fields]


class FigureView(NamedTuple):
    """A figure, the numbers behind it (its CSV button's) and the status line."""

    figure: object
    csv: object
    status: str


class Verdict(NamedTuple):
    """A label's probabilities (gr.Label) and the status line saying the answer in words."""

    probabilities: dict | None
    status: str


class WhyView(NamedTuple):
    """What a "Why?" button shows: the tokens shaded by their scores, the bars, their CSV, the line."""

    tokens: list
    figure: object
    csv: object
    status: str


def why_view(ctx, model, tokenizer, result, theme, *texts) -> WhyView:
    """An attribution's view; `texts`: what the model read (the status says when words of it
    became [UNK])."""
    fig = plotly_figures.attributions(result, theme=theme_input(theme))
    pair = result.sentence_b_start is not None
    note = truncation_note(result.truncated, model.config.max_position_embeddings, pair=pair)
    note += unknown_note(tokenizer, *texts)
    return WhyView(attribution_chips(result), fig, ctx.csv.keep(fig), note + attribution_status(result))


def why_box(ctx, prefix: str, first: WhyView, help_text: str) -> tuple:
    """The "why?" accordion's components, its first view drawn: (method, button, the WhyView's
    components in order)."""
    with gr.Accordion("Why? What the answer rests on (attribution)", open=False, elem_id=f"{prefix}-why-box"):
        gr.Markdown(help_text)
        method = gr.Radio(list(WHY_METHODS), value="integrated gradients", label="method")
        button = gr.Button("Why?", elem_id=f"{prefix}-why-button")
        status = status_box(elem_id=f"{prefix}-why-status", value=first.status)
        shaded = gr.HighlightedText(
            first.tokens, label="the tokens, shaded by their score", elem_id=f"{prefix}-why-text", show_legend=False
        )
        fig = plot("each token's score", first.figure, elem_id=f"{prefix}-why")
        csv = ctx.csv.box(first.csv)
    return method, button, *in_order(WhyView, tokens=shaded, figure=fig, csv=csv, status=status)
