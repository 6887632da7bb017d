"""BERT Lab dashboard: one tab per idea of the BERT paper, on the bundled models, offline.

    python app.py                          # http://127.0.0.1:7860, the bundled models
    python app.py --host 0.0.0.0           # reachable from the classroom's network
    python app.py --share                  # a public gradio.live link (needs internet)
    python app.py --model runs/mine        # start on another model (under a models root)
    python app.py --model google-bert/bert-base-uncased    # or a Hugging Face model, by id
    python app.py --host 0.0.0.0 --allow-downloads       # let users add Hub models on a public server

Tabs: Masked LM (fill-mask, click a word to mask it, the 80/10/10 corruption preview), Next
Sentence, Attention (heatmaps, head statistics, head ablation, bertviz), Question Answering,
Classify, Training (curves, "watch BERT learn" across checkpoints), Model (config, tokens, input
embeddings, add a model directory or a Hugging Face model id).

Models are the HF-layout directories under the models roots: models/ and runs/ of this
repository, plus any folder given with --models-root (or BERT_LAB_MODELS, separated by ':').
A path outside them is refused. Hugging Face Hub ids (ORG/NAME, BERT checkpoints only) live in
the Hub cache (lab.hub): the Model tab's Add downloads one, with progress, when the app is bound
to localhost (or started with --allow-downloads); on a public bind (--host 0.0.0.0, --share)
downloads are off and only ids already in the cache load. Every model menu then lists it.
Loaded models are kept in a small cache shared by all users; every request runs without
gradients, so concurrent requests share one copy.

UI wiring only: every handler calls lab.explore and draws with lab.figures (plotly, in the browser). Each handler returns its outputs
and a status line; bad input gives a message in the status line, never a stack trace.
Importing app.py parses no arguments, loads no model and builds no page: build(args) makes the
page (tests launch it themselves), main() parses the command line, builds and serves it.
"""
from __future__ import annotations

import argparse
import functools
import html
import json
import importlib
import logging
import os
import re
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr
from gradio.utils import get_upload_folder

ROOT = Path(__file__).resolve().parent
log = logging.getLogger("bert-lab.app")
MAX_TEXT_CHARS = 20_000        # longer inputs are cut (with a notice) before tokenizing
MAX_NAME_CHARS = 300           # a model or run name longer than this is refused
REPO_ROOTS = (ROOT / "models", ROOT / "runs")   # models roots always served (bundled models, own runs)
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")  # binds where only this machine's users reach the app


class _Later:
    """A module imported at its first use. The lab imports torch (about 1 s), which only the
    handlers need: so `import app` costs little more than `import gradio` (tests, tools), and
    main() pays for torch once, before the page is built."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)


lab = _Later("lab")                          # lab.load
explore = _Later("lab.explore")              # every view's computation
figures = _Later("lab.figures")              # and its figure, drawn in the browser (plotly)
bertviz_offline = _Later("lab.bertviz_offline")   # bertviz's views with local d3 / jQuery
runs = _Later("lab.runs")                    # read_metrics, checkpoints, is_model_dir, has_metrics, phases
lab_tokenizer = _Later("lab.tokenizer")      # clean_text: the one check of input text
hub = _Later("lab.hub")                      # Hugging Face ids: is_hub_id, hub_snapshot, NotCachedError
finetune = _Later("lab.finetune")            # task_settings / qa_lengths: what a fine-tuned model was trained with


@dataclass
class Settings:
    """What the handlers need to know, from the command line (parser()); build() sets SETTINGS."""
    model_roots: list[Path] = field(default_factory=lambda: list(REPO_ROOTS))   # models may be served from here
    start_model: str | None = None     # --model: every tab that it serves starts on it
    cache_models: int = 4              # models kept loaded at once
    concurrency: int = 2               # requests computed at once
    queue_size: int = 128              # requests that may wait
    downloads: bool = False            # Hub ids may be downloaded: a localhost bind without --share, or --allow-downloads

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Settings:
        """models/ and runs/ of this repository, then --models-root folders, then BERT_LAB_MODELS
        (folders separated by ':'). Downloads from the Hub: on when only this machine can reach
        the app (--host 127.0.0.1, localhost or ::1, no --share), or with --allow-downloads."""
        extra = [*args.models_root, *os.environ.get("BERT_LAB_MODELS", "").split(":")]
        downloads = args.allow_downloads or (args.host in LOCAL_HOSTS and not args.share)
        return cls(model_roots=[*REPO_ROOTS, *(Path(p).expanduser() for p in extra if p)],
                   start_model=args.model, cache_models=args.cache_models,
                   concurrency=args.concurrency, queue_size=args.queue_size, downloads=downloads)


SETTINGS = Settings()


def configure(args: argparse.Namespace) -> Settings:
    """Set the handlers' settings from parsed arguments (build() calls it first)."""
    global SETTINGS
    SETTINGS = Settings.from_args(args)
    return SETTINGS


class UserError(ValueError):
    """A problem with the request that the user can fix; shown in the page."""


# ----------------------------------------------------------------------------------------------
# Models: discovery, the models-root rule, a small shared cache
# ----------------------------------------------------------------------------------------------

def _display(path: Path) -> str:
    """How a path is shown in menus and messages: relative to the repository (models/x, runs/y),
    or for a --models-root folder elsewhere as @<that folder's name>/<rest> (the @ keeps it apart
    from a Hugging Face id); never the server's absolute path (resolve_under_roots reads both
    forms back)."""
    path = Path(path)
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        pass
    for root in SETTINGS.model_roots:
        for base in (root, root.resolve()):
            if path == base or path.is_relative_to(base):
                return "@" + str(Path(root.name) / path.relative_to(base))
    return path.name


def _short(text, limit: int = 80) -> str:
    """A user-typed value quoted in a message: at most `limit` characters."""
    text = str(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def name_input(name, what: str = "model") -> str:
    """A model or run name from the page: a non-empty string of reasonable length."""
    if name is None or not str(name).strip():
        raise UserError(f"choose a {what} first")
    name = str(name).strip()
    if len(name) > MAX_NAME_CHARS:
        raise UserError(f"the {what} name is {len(name):,} characters long (at most {MAX_NAME_CHARS})")
    return name


def confined(path: Path) -> Path:
    """A model or run directory whose files (config, weights, card, metrics, ...) all resolve inside
    the models roots: a symlink to /etc/passwd named README.md is refused, not shown."""
    roots = [r.resolve() for r in SETTINGS.model_roots]
    for f in path.iterdir():
        real = f.resolve()
        if not any(real == r or real.is_relative_to(r) for r in roots):
            raise UserError(f"{_display(path)}/{_short(f.name, 60)} points outside the models roots: "
                            f"this model folder is refused")
    return path


def list_models() -> list[str]:
    """Model directories (config.json + weights) under the roots: bundled ones first, then runs."""
    found = []
    for root in SETTINGS.model_roots:
        if not root.is_dir():
            continue
        candidates = [p for p in sorted(root.iterdir()) if p.is_dir()]
        # a run's phases (runs/x/phase1-len32) are models too; checkpoints are for the Training tab
        candidates += [q for p in candidates for q in runs.phases(p)[:-1]]
        found += [_display(p) for p in sorted(candidates) if runs.is_model_dir(p)]
    with _CACHE_LOCK:
        return found + [name for name in _HUB if name not in found]    # Hugging Face ids added


def list_runs() -> list[str]:
    """Directories with a metrics.jsonl (training curves; in the run or its phases), newest first."""
    found = []
    for root in SETTINGS.model_roots:
        if root.is_dir():
            found += [p for p in root.iterdir() if p.is_dir() and runs.has_metrics(p)]
    return [_display(p) for p in sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)]


def resolve_under_roots(name: str, what: str = "model") -> Path:
    """A name or path -> a resolved path inside a models root; anything outside is refused.
    Names are read as _display writes them: relative to the repository, or <root name>/<rest>
    for a --models-root folder elsewhere."""
    name = name_input(name, what)
    path = Path(name).expanduser()
    roots = [r.resolve() for r in SETTINGS.model_roots]
    if name.startswith("@"):                                 # @<root folder name>/<rest>, as _display shows it
        first, _, rest = name[1:].partition("/")
        candidates = [(r / rest).resolve() for r in SETTINGS.model_roots if r.name == first]
    elif path.is_absolute():
        candidates = [path.resolve()]
    else:
        candidates = [(ROOT / path).resolve()]
    inside = [c for c in candidates if any(c == r or c.is_relative_to(r) for r in roots)]
    if not inside:
        raise UserError(f"“{_short(name)}” is outside the models roots ({', '.join(_display(r) for r in roots)}); "
                        f"copy the {what} under models/ or start the app with --models-root")
    path = next((c for c in inside if c.is_dir()), inside[0])
    if not path.is_dir():
        raise UserError(f"{_display(path)} does not exist or is not a directory")
    return path


def resolve_model_dir(name: str) -> Path:
    """A model name or path -> a model directory (config.json) inside a models root."""
    path = resolve_under_roots(name)
    if not (path / "config.json").is_file():
        raise UserError(f"{_display(path)} is not a model directory (no config.json)")
    return path


_CACHE: OrderedDict[Path, tuple] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_FAILED: dict[Path, tuple[tuple, str]] = {}   # a model that failed to load -> (its files' signature, message)
_HUB: dict[str, Path] = {}       # Hugging Face ids added while the server runs -> their folder in the Hub cache


def is_hub_name(name: str) -> bool:
    """A Hugging Face id (ORG/NAME). A name whose first part is a folder of this repository
    ("runs/mine", "models/typo") stays a path, and gets the models-root checks and messages."""
    name = str(name or "").strip()
    return name in _HUB or (hub.is_hub_id(name) and not (ROOT / name.split("/")[0]).is_dir())


def hub_model_dir(repo_id: str, download: bool = False, progress=False) -> Path:
    """A Hugging Face id -> its folder in the Hub cache: from the cache, or downloaded when
    `download` (the Model tab's Add, when SETTINGS.downloads). Only lab.hub.hub_snapshot is used,
    never a local path, so an id cannot reach a directory outside the models roots. Errors are
    messages without server paths."""
    with _CACHE_LOCK:
        if repo_id in _HUB:
            return _HUB[repo_id]
    try:
        path = hub.hub_snapshot(repo_id, download=download, progress=progress)
    except hub.NotCachedError as e:
        if e.offline and not SETTINGS.downloads:
            raise UserError(f"{repo_id} is not in this server's Hugging Face cache, and downloads are off on a "
                            f"public server (--host other than localhost, or --share): start the app with "
                            f"--allow-downloads to allow them") from None
        if e.offline and not download:
            raise UserError(f"{repo_id} is not downloaded yet: add it in the Model tab first") from None
        raise UserError(str(e)) from None                  # HF_HUB_OFFLINE=1, or the Hub is unreachable
    except (ValueError, FileNotFoundError) as e:             # lab.hub's one-line messages
        raise UserError(str(e)) from None
    except Exception as e:                                   # disk full, proxy...: details go to the log only
        log.exception("fetching %s from the Hugging Face Hub failed", repo_id)
        raise UserError(f"could not download {repo_id} ({type(e).__name__}); the server log has the details") from None
    with _CACHE_LOCK:
        _HUB[repo_id] = path
    return path


def model_dir(name: str, download: bool = False, progress=False) -> tuple[Path, str]:
    """A model menu entry -> (its directory, the name shown): a directory inside a models root,
    or a Hugging Face id (from the Hub cache; downloaded only when `download`)."""
    name = name_input(name)
    if is_hub_name(name):
        return hub_model_dir(name, download, progress), name
    path = resolve_model_dir(name)
    return path, _display(path)


def _signature(path: Path) -> tuple:
    """The model folder's files (name, size, modification time): a failed load is retried only
    when this changes."""
    return tuple(sorted((f.name, st.st_size, st.st_mtime_ns) for f in path.iterdir()
                        if f.is_file() for st in [f.stat()]))


def get_model(name: str):
    """(model, tokenizer) for a model name, loaded once and shared (least recently used evicted)."""
    path, shown = model_dir(name)
    with _CACHE_LOCK:                                        # the request path: a loaded model, no disk access
        if path in _CACHE:
            _CACHE.move_to_end(path)
            return _CACHE[path]
    if not is_hub_name(name):                                # the Hub cache links into its own blobs
        confined(path)
    signature = _signature(path)
    with _CACHE_LOCK:
        if path in _FAILED and _FAILED[path][0] == signature:    # the same files failed before: no retry
            raise UserError(_FAILED[path][1])
    try:
        model, tokenizer = lab.load(path)                    # strict: a damaged checkpoint is refused
        if tokenizer is None:
            raise ValueError("it has no vocab.txt or tokenizer.json: the lab cannot read text for it")
    except Exception as e:                                   # a damaged or foreign directory
        message = f"could not load {shown}: {str(e).replace(str(path), shown)}"
        with _CACHE_LOCK:
            _FAILED[path] = (signature, message)
        raise UserError(message) from None
    model.eval().requires_grad_(False)
    with _CACHE_LOCK:
        _CACHE[path] = (model, tokenizer)
        while len(_CACHE) > max(1, SETTINGS.cache_models):
            _CACHE.popitem(last=False)
    return model, tokenizer


def default_model(task: str | None = None) -> str | None:
    """The model a tab starts on: --model if it serves the task, else the first bundled model
    that does (QA: a name with "squad", classification: "sst2", otherwise "classroom" first)."""
    names = list_models()
    preferred = {"answer": "squad", "classify": "sst2"}.get(task, "classroom")
    # QA: a bundled model fine-tuned from MiniLM (large-scale pre-training) first, when there is one
    ordered = ([SETTINGS.start_model] if SETTINGS.start_model else []) + sorted(
        names, key=lambda n: (not n.startswith("models/"), preferred not in n,
                              task == "answer" and "minilm" not in n, n))
    for name in ordered:
        try:
            model, _ = get_model(name)
        except UserError:
            continue
        if task is None or task in explore.model_tasks(model):
            return name
    return ordered[0] if ordered else None


# ----------------------------------------------------------------------------------------------
# Handler plumbing: clean inputs, turn every failure into a status message
# ----------------------------------------------------------------------------------------------

def notice(message: str) -> str:
    return f"⚠️ {message}"


def status_html(text: str) -> str:
    """A status line for a gr.HTML status box: the text escaped, so a model's label, a QA answer
    or a typed name is shown as text, never run as HTML or Markdown."""
    return html.escape(str(text or ""), quote=False)


def handler(n_outputs: int, keep: bool = False):
    """Wrap a handler returning (*outputs, status): the status is escaped (status_html); on an
    error the outputs are cleared (n_outputs Nones; keep=True: left as they are, e.g. a menu)
    and the message becomes the status. Server paths never reach the page: messages use
    _display names, and an unexpected error shows only its type."""
    def wrap(fn):
        @functools.wraps(fn)
        def safe(*args, **kwargs):
            try:
                *outputs, status = fn(*args, **kwargs)
                return (*outputs, status_html(status))
            except (UserError, ValueError, KeyError, FileNotFoundError, NotADirectoryError, OverflowError) as e:
                message = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
                message = message.replace(str(ROOT) + os.sep, "")
            except Exception as e:                           # a bug: keep serving, say what happened
                log.exception("handler %s failed", fn.__name__)
                message = (f"internal error ({type(e).__name__}) in {fn.__name__}; the server keeps running "
                           f"and its log has the details")
            cleared = gr.update() if keep else None
            return (*[cleared] * n_outputs, status_html(notice(message)))
        return safe
    return wrap


def int_input(value, name: str, lo: int, hi: int) -> int:
    """A whole number from the page (None, text, 2**70 and 1.5 get a message saying what is allowed)."""
    allowed = f"a whole number from {lo:,} to {hi:,}"
    if value is None or (isinstance(value, str) and not value.strip()):
        raise UserError(f"{name} is missing: give {allowed}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UserError(f"{name} must be {allowed}, not “{_short(value, 40)}”") from None
    if not number.is_integer() or not lo <= number <= hi:
        raise UserError(f"{name} must be {allowed}, not {_short(value, 40)}")
    return int(number)


def float_input(value, name: str, lo: float, hi: float) -> float:
    """A number from the page within [lo, hi]."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UserError(f"{name} must be a number from {lo:g} to {hi:g}, not “{_short(value, 40)}”") from None
    if not lo <= number <= hi:                               # also refuses nan
        raise UserError(f"{name} must be a number from {lo:g} to {hi:g}, not {_short(value, 40)}")
    return number


def text_input(value, name: str, required: bool = True) -> str:
    """Browser text -> a clean str (lab.tokenizer.clean_text: invalid UTF-8 replaced, control
    characters dropped, empty refused when required), cut at MAX_TEXT_CHARS."""
    return lab_tokenizer.clean_text(value, name, required=required, max_chars=MAX_TEXT_CHARS)


def model_for(name: str, task: str):
    """The model and tokenizer, or a message explaining why this model cannot do the task."""
    model, tokenizer = get_model(name)
    if task not in explore.model_tasks(model):
        raise UserError(explore.missing_head_message(model, task))
    return model, tokenizer


THEMES = ("light", "dark")
_CSV_DIR: list[Path] = []


def theme_input(theme) -> str:
    """The page's theme (read from the browser on load): figures follow it."""
    return theme if theme in THEMES else "light"


def csv_file(fig) -> str:
    """The numbers a figure draws, as a CSV file for the page's download box (one file per
    request, in a folder of this server's inside Gradio's cache: Gradio serves it from there
    instead of hashing and copying it, about 1 ms of CPU per request)."""
    if not _CSV_DIR:
        cache = Path(get_upload_folder())
        cache.mkdir(parents=True, exist_ok=True)
        _CSV_DIR.append(Path(tempfile.mkdtemp(prefix="bert-lab-csv-", dir=cache)))
    name = (fig.layout.meta or {}).get("figure", "figure")
    handle, path = tempfile.mkstemp(prefix=f"{name}-", suffix=".csv", dir=_CSV_DIR[0])
    with os.fdopen(handle, "w", encoding="utf-8", newline="") as f:
        f.write(figures.figure_csv(fig))
    return path


def truncation_note(truncated: int, limit: int) -> str:
    return f"Note: the text was longer than the model's {limit} tokens; {truncated} tokens at the end were cut." \
        if truncated else ""


# ----------------------------------------------------------------------------------------------
# Masked LM
# ----------------------------------------------------------------------------------------------

WORD = re.compile(r"\[MASK\]|[\w'’-]+|[^\w\s]")
ANY_CASE_MASK = re.compile(r"\[\s*mask\s*\]", re.IGNORECASE)


def masked_text(value, name: str = "the sentence") -> str:
    """Text for a masked-word request: [mask], [Mask] and [ MASK ] all mean [MASK]."""
    return ANY_CASE_MASK.sub("[MASK]", text_input(value, name))


@handler(3)
def fill_mask(model_name, text, top_k=5, temperature=1.0, theme="light"):
    """Sentence with [MASK]s -> (sentence with the best guesses, top-k bars per mask, their CSV, status)."""
    model, tokenizer = model_for(model_name, "fill_mask")
    text = masked_text(text)
    result = explore.fill_mask(model, tokenizer, text, top_k=int_input(top_k, "top k", 1, 50),
                               temperature=float_input(temperature, "the temperature", 0.05, 20))
    # the sentence as WordPiece tokens with each [MASK] replaced by its top guess, highlighted
    filled, masks = [], iter(result)
    specials = set(tokenizer.convert_ids_to_tokens([tokenizer.cls_token_id, tokenizer.sep_token_id]))
    for i, tok in enumerate(result.tokens):
        if tok in specials:
            continue
        if i in result.mask_positions:
            guess = next(masks)[0][0]                        # a word piece (##ing) is marked as one
            filled.append((guess, "guess (word piece)" if guess.startswith("##") else "guess"))
        else:
            filled.append((tok, None))
        filled.append((" ", None))
    status = truncation_note(result.truncated, model.config.max_position_embeddings)
    bars = figures.fill_mask_bars(result, theme=theme_input(theme))
    return filled, bars, csv_file(bars), status or f"{len(result)} mask(s) predicted"


def word_chips(text):
    """The sentence as clickable words, each followed by a space chip (click a word to mask it).
    Writes no status: the status line belongs to the prediction."""
    try:
        text = text_input(text, "the sentence", required=False)
    except ValueError:
        return []
    chips = []
    for m in WORD.finditer(ANY_CASE_MASK.sub("[MASK]", text)):
        chips += [(m.group(), "masked" if m.group() == "[MASK]" else None), (" ", None)]
    return chips


@handler(1)
def mask_word(text, index):
    """Replace the index-th word of the text (counting words and punctuation, from 0) by [MASK]."""
    text = text_input(text, "the sentence")
    matches = list(WORD.finditer(text))
    index = int_input(index, "the word index", 0, MAX_TEXT_CHARS)
    if not 0 <= index < len(matches):
        raise UserError(f"word {index} does not exist: the sentence has {len(matches)} words")
    m = matches[index]
    return text[:m.start()] + "[MASK]" + text[m.end():], f"masked “{m.group()}”"


def on_word_select(model_name, text, top_k, temperature, theme, evt: gr.SelectData):
    """A click on a word: mask it and predict, in one event (one writer of the status line)."""
    index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    if not isinstance(index, int) or index % 2:              # a space between two words
        return gr.update(), gr.update(), gr.update(), gr.update(), gr.update()
    new_text, status = mask_word(text, index // 2)
    if new_text is None:                                     # the message is in status
        return gr.update(), None, None, None, status
    return (new_text, *fill_mask(model_name, new_text, top_k, temperature, theme))


def submit_and_clear(boxes, fn, inputs, outputs, Q: dict) -> None:
    """Enter in any of these boxes runs fn (as its button does); typing in one clears the old
    results (they no longer match the input)."""
    for box in boxes:
        box.submit(fn, inputs, outputs, api_visibility="private", **Q)
        box.input(cleared(len(outputs)), None, outputs, api_visibility="private", queue=False,
                  show_progress="hidden")


def cleared(n: int):
    """An input changed: its old results go (n outputs emptied)."""
    return lambda *_: [None] * n if n > 1 else None


@handler(1)
def corrupt(model_name, text, seed=0):
    """The 80/10/10 corruption pre-training would apply to this text, for a seed."""
    _, tokenizer = get_model(model_name)
    text = text_input(text, "the sentence")
    prev = explore.corruption_preview(tokenizer, text, seed=int_input(seed, "the seed", 0, 2**32 - 1))
    out = []
    for tok, seen, kind, label in zip(prev.tokens, prev.corrupted, prev.kinds, prev.labels):
        if kind is None:
            out.append((seen, None))
        elif kind == "keep":
            out.append((seen, "kept (10%)"))
        else:
            out.append((f"{seen} ← {label}", "[MASK] (80%)" if kind == "mask" else "random (10%)"))
        out.append((" ", None))
    c = prev.counts
    return out, (f"{c['chosen']} of {c['tokens']} tokens chosen (15%): {c['mask']} → [MASK], "
                 f"{c['random']} → a random token, {c['keep']} kept; the model must predict all {c['chosen']}")


# ----------------------------------------------------------------------------------------------
# Next sentence, classification
# ----------------------------------------------------------------------------------------------

@handler(1)
def next_sentence(model_name, sentence_a, sentence_b):
    model, tokenizer = model_for(model_name, "next_sentence")
    a, b = text_input(sentence_a, "sentence A"), text_input(sentence_b, "sentence B")
    p = explore.next_sentence(model, tokenizer, a, b)
    return {"IsNext": p, "NotNext": 1 - p}, f"P(IsNext) = {p:.3f}"


@handler(1)
def classify(model_name, text, text_pair=""):
    model, tokenizer = model_for(model_name, "classify")
    text = text_input(text, "the sentence")
    pair = text_input(text_pair, "the second sentence", required=False).strip() or None
    note = ""
    if pair and finetune.task_settings(model_dir(model_name)[0]).get("pair") is False:
        pair, note = None, " (this model was fine-tuned on single sentences: the second sentence was not used)"
    probs = explore.classify(model, tokenizer, text, pair)
    best = max(probs, key=probs.get)
    return probs, f"{best} ({probs[best]:.1%}){note}"


# ----------------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------------

STAT_NAMES = {"cls": "[CLS]", "sep": "[SEP]", "self": "itself", "prev": "previous token",
              "next": "next token", "entropy": "entropy (nats)"}


def _attention_request(model_name, text_a, text_b, layer=0, head=0):
    model, tokenizer = model_for(model_name, "attention")
    a = text_input(text_a, "sentence A")
    b = text_input(text_b, "sentence B", required=False).strip() or None
    layer, head = layer_and_head(model, layer, head)
    return model, explore.attention(model, tokenizer, a, b), layer, head


def layer_and_head(model, layer, head) -> tuple[int, int]:
    """The page's layer and head checked against the model's shape (a clear message if not)."""
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    return (int_input(layer, f"the layer (this model has {L})", 0, L - 1),
            int_input(head, f"the head (this model has {A} per layer)", 0, A - 1))


@handler(5)
def attention(model_name, text_a, text_b="", layer=0, head=0, theme="light"):
    """-> (heatmap of one head, grid of the layer's heads, head statistics table, the tokens to
    click, the head's CSV, status). The same request (a class on the tab's example) is answered
    from a small cache: the figures are the costly part."""
    return _attention_views(*(str(v) if v is not None else "" for v in (model_name, text_a, text_b, layer, head)),
                            theme_input(theme))


@functools.lru_cache(maxsize=64)
def _attention_views(model_name, text_a, text_b, layer, head, theme):
    model, result, layer, head = _attention_request(model_name, text_a, text_b, layer, head)
    stats = result.head_stats()
    L, A = stats["entropy"].shape
    table = [[f"{l}", f"{h}"] + [round(float(stats[k][l, h]), 3) for k in STAT_NAMES]
             for l in range(L) for h in range(A)]
    one = figures.attention_heatmap(result, layer, head, theme=theme)
    chips = [c for t in result.tokens for c in ((t, None), (" ", None))]
    return (one, figures.attention_grid(result, layer, theme=theme),
            {"headers": ["layer", "head", *STAT_NAMES.values()], "data": table}, chips, csv_file(one),
            truncation_note(result.truncated, model.config.max_position_embeddings)
            or f"{len(result.tokens)} tokens, {L} layers x {A} heads; click a token below the maps to follow it")


@handler(1)
def attention_token(model_name, text_a, text_b, layer, head, theme, evt: gr.SelectData):
    """A click on a token: the head with that token's row (where it attends) and column (what
    attends to it) outlined, and both as bars."""
    index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    if not isinstance(index, int) or index % 2:              # a space between two tokens
        return gr.update(), ""
    _, result, layer, head = _attention_request(model_name, text_a, text_b, layer, head)
    token = index // 2
    if token >= len(result.tokens):
        raise UserError("that token is no longer in the text: press Show attention again")
    return (figures.attention_focus(result, layer, head, token, theme=theme_input(theme)),
            f"token {token} “{result.tokens[token]}”: its row is where it attends, its column what attends to it")


@handler(2)
def head_stats(model_name, text_a, text_b="", theme="light"):
    """Clark et al.'s statistics of every head as small [layers x heads] heatmaps (and their CSV)."""
    _, result, _, _ = _attention_request(model_name, text_a, text_b)
    fig = figures.head_stats_heatmaps(result.head_stats(), theme=theme_input(theme))
    return fig, csv_file(fig), ""


@handler(2)
def ablate(model_name, text, theme="light", progress=gr.Progress()):
    """Silence each head in turn: the change in masked-token loss (L x heads heatmap)."""
    model, tokenizer = model_for(model_name, "fill_mask")
    text = masked_text(text)
    progress(0, desc="silencing each head")
    result = explore.ablate_heads(model, tokenizer, text)
    worst = divmod(int(result.effect.argmax()), result.effect.shape[1])
    fig = figures.ablation_heatmap(result, theme=theme_input(theme))
    return fig, csv_file(fig), (
        f"baseline loss {result.baseline:.3f}; silencing layer {worst[0]} head {worst[1]} hurts most "
        f"(+{float(result.effect.max()):.3f})")


@handler(1)
def bertviz_view(model_name, text_a, text_b="", view="head", layer=0, head=0):
    """bertviz's interactive head, model or neuron view, drawn offline: its d3 and jQuery come
    from installed packages (lab.bertviz_offline), inside a sandboxed iframe. The neuron view
    opens on the tab's layer and head (its own menus change them)."""
    model, tokenizer = model_for(model_name, "attention")
    a = text_input(text_a, "sentence A")
    b = text_input(text_b, "sentence B", required=False).strip() or None
    view = view if view in ("model", "neuron") else "head"
    try:
        if view == "neuron":
            layer, head = layer_and_head(model, layer, head)
            result = explore.queries_and_keys(model, tokenizer, a, b)
            page = bertviz_offline.neuron_view_html(result.queries, result.keys, result.attentions, result.tokens,
                                                    result.sentence_b_start, layer=layer, head=head)
        else:
            result = explore.attention(model, tokenizer, a, b)
            build = bertviz_offline.model_view_html if view == "model" else bertviz_offline.head_view_html
            page = build(result.attentions, result.tokens, result.sentence_b_start)   # ValueError above its cap
    except ImportError as e:
        raise UserError(f"bertviz is not available on this server: {e}") from None
    frame = bertviz_offline.iframe(page, bertviz_offline.frame_height(view, result.attentions))
    return frame, f"bertviz {view} view of {len(result.tokens)} tokens, drawn offline"


# ----------------------------------------------------------------------------------------------
# Question answering
# ----------------------------------------------------------------------------------------------

def qa_training(name: str) -> tuple[dict, str]:
    """A QA model's window settings and what it was fine-tuned on, from its task_config.json
    (written by python -m lab finetune-qa): ({max_seq_length, doc_stride, max_query_length},
    a sentence for the page); ({}, "") for a model without one (e.g. a Hub model)."""
    path, _ = model_dir(name)
    task = finetune.task_settings(path)
    if not task:
        return {}, ""
    lengths = finetune.qa_lengths(path)
    data = Path(str(task.get("data", "SQuAD"))).name
    base = Path(str(task.get("model", "?")))
    base = base.parent.name if base.name == "model" else base.name     # a package's model/ folder: the package
    return lengths, (f"fine-tuned from {base} on {data}, articles 1-{task.get('train_articles', '?')} "
                     f"(the rest held out), windows of {lengths.get('max_seq_length', '?')} tokens")


@handler(4)
def answer(model_name, question, context, top_k=3, theme="light"):
    """-> (context with the answer highlighted, start/end probabilities, n-best table, their CSV, status)."""
    model, tokenizer = model_for(model_name, "answer")
    q = text_input(question, "the question")
    c = text_input(context, "the context")
    lengths, trained = qa_training(model_name)
    result = explore.answer(model, tokenizer, q, c, top_k=int_input(top_k, "answers shown", 1, 20), **lengths)
    if not result.spans:
        raise UserError("no answer span found in the context")
    best = result.spans[0]
    highlighted = [(c[:best.start], None), (c[best.start:best.end], "answer"), (c[best.end:], None)]
    table = {"headers": ["rank", "answer", "score", "probability", "characters"],
             "data": [[i, s.text, round(s.score, 2), round(s.probability, 3), f"{s.start}-{s.end}"]
                      for i, s in enumerate(result.spans, 1)]}
    note = f"context read in {result.num_windows} overlapping windows; " if result.num_windows > 1 else ""
    note += "the question was cut to fit; " if result.question_truncated else ""
    cls = (f"; P(start = [CLS]) = {result.start_probs[0]:.2f}" if result.tokens and result.tokens[0] == "[CLS]" else "")
    trained = f" — this model was {trained}" if trained else ""
    fig = figures.span_probabilities(result, theme=theme_input(theme))
    return (highlighted, fig, table, csv_file(fig), f"{note}answer: “{best.text}”{cls}{trained}")


# ----------------------------------------------------------------------------------------------
# Training, model
# ----------------------------------------------------------------------------------------------

@handler(2)
def training_curves(run_name, x="time", theme="light"):
    path = confined(resolve_under_roots(run_name, "run"))
    records = runs.read_metrics(path) if runs.has_metrics(path) else []
    if not records:
        raise UserError(f"{_display(path)} has no metrics.jsonl records")
    if x not in ("time", "step"):
        raise UserError("the x axis is time or step")
    fig = figures.training_curves(records, x=x, title=_display(path), theme=theme_input(theme))
    return fig, csv_file(fig), f"{len(records)} records"


@handler(1)
def watch_learning(run_name, text, top_k=3, progress=gr.Progress()):
    """The same masked sentence through a run's checkpoints: how the guesses sharpen."""
    path = confined(resolve_under_roots(run_name, "run"))
    text = masked_text(text)
    if not runs.checkpoints(path):
        with_snapshots = [r for r in list_runs() if runs.checkpoints(ROOT / r)]
        raise UserError(f"{_display(path)} keeps no checkpoints to replay (fine-tuned models keep none); "
                        + (f"choose one that does: {', '.join(with_snapshots[:5])}" if with_snapshots else
                           "pre-training runs and the bundled bert-lab-classroom do"))
    rows = []
    for step, result in explore.checkpoint_predictions(
            path, text, top_k=int_input(top_k, "top k", 1, 20),
            progress=lambda items: progress.tqdm(items, desc="checkpoints")):
        rows.append([step] + [", ".join(f"{t} {p:.0%}" for t, p in preds) for preds in result])
    masks = max((len(r) - 1 for r in rows), default=0)
    return ({"headers": ["step"] + [f"[MASK] {k}" for k in range(1, masks + 1)], "data": rows},
            f"{len(rows)} checkpoints")


@handler(2)
def model_info(model_name):
    """-> (markdown: class, shape, parameter count, tasks served; the model card; status)."""
    model, tokenizer = get_model(model_name)
    cfg = model.config
    tasks = sorted(explore.model_tasks(model))
    path, shown = model_dir(model_name)
    card = (path if is_hub_name(model_name) else confined(path)) / "README.md"
    text = (f"### {md_escape(shown)}\n`{type(model).__name__}`: {cfg.summary()}\n\n"
            f"- parameters: **{sum(p.numel() for p in model.parameters()):,}**\n"
            f"- layers L = {cfg.num_hidden_layers}, hidden H = {cfg.hidden_size}, heads A = "
            f"{cfg.num_attention_heads}, vocabulary {cfg.vocab_size:,}, max length {cfg.max_position_embeddings}\n"
            f"- serves: {', '.join(tasks)}\n")
    card_text = (safe_card(card.read_text(encoding="utf-8", errors="replace")) if card.is_file() else
                 f"Model card: https://huggingface.co/{shown}" if is_hub_name(model_name) else "(no model card: README.md)")
    return text, card_text, ""


MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~])")


def md_escape(text: str) -> str:
    """Text shown literally inside Markdown (a model name: no links, images or HTML)."""
    return MD_SPECIAL.sub(r"\\\1", html.escape(str(text), quote=False))


def safe_card(text: str) -> str:
    """A model card (README.md, written by whoever made the model) made safe to render: raw HTML
    is shown as text, images become links (nothing remote loads for every student), and a line
    that starts with '>=' or '<=' stays a sentence instead of turning into a quote."""
    text = html.escape(text, quote=False)                    # <img>, <script>: text
    text = re.sub(r"!\[", "[image: ", text)                   # ![alt](url) -> a link, not loaded
    return re.sub(r"^(\s*)&gt;", r"\1\\&gt;", text, flags=re.MULTILINE)


def attention_shape(model_name):
    """The layer and head sliders follow the chosen model's shape."""
    try:
        cfg = get_model(model_name)[0].config
    except Exception as e:                                   # reported by the Show button too
        return gr.update(), gr.update(), status_html(notice(str(e)))
    return (gr.Slider(maximum=cfg.num_hidden_layers - 1, value=0),
            gr.Slider(maximum=cfg.num_attention_heads - 1, value=0), "")


@handler(1)
def tokenize(model_name, text):
    _, tokenizer = get_model(model_name)
    text = text_input(text, "the text")
    enc = tokenizer.encode(text)
    chips = []
    for t in enc.tokens:                                     # a space after each token: they stay apart
        chips += [(t, "special" if t in ("[CLS]", "[SEP]") else ("subword" if t.startswith("##") else None)),
                  (" ", None)]
    return chips, f"{len(enc.tokens)} tokens"


@handler(2)
def embeddings(model_name, text_a, text_b="", theme="light"):
    """The paper's Figure 2: token + segment + position embeddings, summed and normalised."""
    model, tokenizer = get_model(model_name)
    a = text_input(text_a, "sentence A")
    b = text_input(text_b, "sentence B", required=False).strip() or None
    fig = figures.embedding_components(explore.embeddings(model, tokenizer, a, b), theme=theme_input(theme))
    return fig, csv_file(fig), ""


@handler(1, keep=True)
def add_model(path, progress=gr.Progress()):
    """Check a typed model directory (inside a models root) or Hugging Face id (downloaded into
    the Hub cache, with progress, when SETTINGS.downloads) and offer it in every model menu."""
    text = text_input(path, "the model path or Hugging Face id").strip()
    if is_hub_name(text):
        progress(0, desc=f"looking up {text}")

        def report(done, total, filename):                   # bytes of the file being downloaded
            progress((done, total), desc=f"downloading {text}: {filename}", unit="bytes")

        _, name = model_dir(text, download=SETTINGS.downloads, progress=report)
    else:
        name = _display(resolve_model_dir(text))
    get_model(name)                                          # loads it: a damaged one is reported now
    choices = sorted(set(list_models()) | {name})
    return gr.Dropdown(choices=choices, value=name), f"added {name}"


MODEL_MENUS = 5                  # the model menus of Masked LM, Next Sentence, Attention, QA, Classify


def model_menus():
    """The choices of the model menus other than the Model tab's (after a model was added, and
    when a page opens: Hugging Face models added since the page was built)."""
    choices = list_models()
    return [gr.Dropdown(choices=choices) for _ in range(MODEL_MENUS)]


def model_menus_on_open():
    """When a page opens: the menus as built, plus the Hugging Face models added since (when any were)."""
    return model_menus() if _HUB else [gr.update() for _ in range(MODEL_MENUS)]


# ----------------------------------------------------------------------------------------------
# Opening views and shareable links
# ----------------------------------------------------------------------------------------------

# The inputs a link restores: query parameter -> (tab id, what it is). Values are read back
# through the same checks as typed ones, so a link cannot do more than the page can.
SHARED_INPUTS = ["mlm_model", "mlm_text", "nsp_model", "nsp_a", "nsp_b", "att_model", "att_a", "att_b",
                 "att_layer", "att_head", "qa_model", "qa_q", "qa_c", "cls_model", "cls_a", "cls_b"]
TABS = {"Masked LM": "mlm", "Next Sentence": "nsp", "Attention": "attention", "Question Answering": "qa",
        "Classify": "classify", "Training": "training", "Model": "model"}    # shown name -> id in links
TAB_IDS = list(TABS.values())


def share_link(tab, *values, request: gr.Request = None):
    """A link to this page that restores the current tab and its inputs: the values in the query
    string, after the page's address when the request says it (else relative: the page's
    ABSOLUTE_LINK_JS completes it in the browser)."""
    from urllib.parse import urlencode
    headers = getattr(request, "headers", None) or {}
    base = (headers.get("referer") or "").split("?", 1)[0]
    tab = TABS.get(str(tab).strip(), tab)                   # the browser sends the tab's name
    query = {"tab": tab if tab in TAB_IDS else "mlm"}
    query |= {k: str(v) for k, v in zip(SHARED_INPUTS, values) if v not in (None, "")}
    return f"{base}?{urlencode(query)}"


def restore_from_link(request: gr.Request):
    """When a page opens with ?tab=...&mlm_text=...: that tab selected and those inputs set
    (names and lengths checked like typed input; a bad value is ignored)."""
    params = dict(request.query_params) if request is not None else {}
    updates = []
    for key in SHARED_INPUTS:
        value = params.get(key)
        if value is None or len(value) > MAX_TEXT_CHARS:
            updates.append(gr.update())
        elif key in ("att_layer", "att_head"):
            updates.append(gr.update(value=int(value)) if value.isdigit() and int(value) < 1000 else gr.update())
        else:
            updates.append(gr.update(value=value))
    tab = params.get("tab")
    return (gr.Tabs(selected=tab) if tab in TAB_IDS else gr.update()), *updates


@functools.lru_cache(maxsize=32)
def _opening(inputs: tuple, theme: str) -> tuple:
    mlm_model, mlm_text, nsp_model, nsp_a, nsp_b, att_model, att_a, att_b, layer, head, \
        qa_model, qa_q, qa_c, cls_model, cls_a, cls_b = inputs
    return (*fill_mask(mlm_model, mlm_text, 5, 1.0, theme), *next_sentence(nsp_model, nsp_a, nsp_b),
            *attention(att_model, att_a, att_b, layer, head, theme),
            *answer(qa_model, qa_q, qa_c, 3, theme), *classify(cls_model, cls_a, cls_b))


def opening_views(*inputs):
    """Each tab's example, computed when a page opens (so a student sees a result before
    clicking anything). The same inputs give the same views: computed once, then cached."""
    *shared, theme = inputs
    return _opening(tuple(str(v) if v is not None else "" for v in shared), theme_input(theme))


# ----------------------------------------------------------------------------------------------
# The page
# ----------------------------------------------------------------------------------------------

# Novel-style examples: the bundled model was pre-trained on ten 19th-century novels.
MLM_EXAMPLES = [
    ["he opened the [MASK] and walked into the garden ."],
    ["she sat down by the [MASK] and began to read ."],
    ["i [MASK] you to tell me the truth , said elizabeth ."],
    ["it was a dark and stormy [MASK] ."],
    ["the captain of the [MASK] looked at me and [MASK] ."],
]
NSP_EXAMPLES = [
    ["elizabeth walked into the drawing room .", "her mother was sitting by the fire with her sisters ."],
    ["the nautilus dived deeper into the ocean .", "she had not danced with him since the ball at netherfield ."],
    ["captain nemo showed us the great salon of the nautilus .",
     "its walls were covered with paintings and the glass cases held rare shells ."],
    ["the martians came out of the cylinder .", "emma thought mr . knightley was the best man she knew ."],
]
QA_CONTEXT = ("Elizabeth Bennet lived at Longbourn with her parents and four sisters. In 1811 Mr. Bingley, "
              "a rich young man, rented Netherfield Park. His friend Mr. Darcy was proud and did not dance "
              "with Elizabeth at the first ball.")
QA_CONTEXT_2 = ("The Nautilus was a submarine built by Captain Nemo on a desert island. It was driven by "
                "electricity, and Nemo used it to explore the oceans of the world for many years.")
QA_EXAMPLES = [["What did Mr. Bingley rent?", QA_CONTEXT], ["Who built the Nautilus?", QA_CONTEXT_2],
               ["Who was proud?", QA_CONTEXT]]
CLS_EXAMPLES = [["a charming and often moving film ."], ["the plot is thin and the acting is worse ."],
                ["boring , predictable and far too long ."]]

# fixed colours: the legend means the same thing whatever order the kinds appear in
CORRUPTION_COLORS = {"[MASK] (80%)": "#f97316", "random (10%)": "#ef4444", "kept (10%)": "#22c55e"}

CSS = """
.bl-status {min-height:1.4em}
.bl-card td:first-child {white-space:nowrap}
"""
LAUNCH_OPTIONS = dict(css=CSS, theme=gr.themes.Soft())   # Gradio 6: look and feel go to launch()


THEME_JS = "() => document.body.classList.contains('dark') ? 'dark' : 'light'"
# the open tab, as the browser shows it (the first input of the link button's event)
CURRENT_TAB_JS = ("(tab, ...rest) => [document.querySelector('button[role=tab][aria-selected=true]')?.innerText"
                  " ?? tab, ...rest]")
# the browser knows the page's address (behind a proxy, a share link, ...): a relative link -> absolute
ABSOLUTE_LINK_JS = "(link) => link.startsWith('?') ? window.location.origin + window.location.pathname + link : link"

# What each tab shows, where the paper (or the paper it cites) says it, and one line for each
# number on the page that needs one.
HELP = {
    "mlm": "**What you are looking at:** BERT's first pre-training task, the *masked language model* "
           "(Devlin et al. 2019, Section 3.1, Task #1): 15% of the tokens are hidden and the model guesses each "
           "from the words on **both** sides. Write [MASK] where a word should be guessed, or click a word to mask "
           "it; the bars are the model's probabilities for its best guesses (a *word piece* such as ##ing continues "
           "a word). **Temperature** divides the scores before the softmax: below 1 sharpens the guesses, above 1 "
           "flattens them, 1 gives the model's own probabilities.",
    "nsp": "**What you are looking at:** the second pre-training task, *next sentence prediction* (Section 3.1, "
           "Task #2): half of the B sentences in pre-training were the real next sentence (IsNext), half a random "
           "sentence from another document (NotNext). The answer comes from the final [CLS] vector.",
    "attention": "**What you are looking at:** each of the L layers has A attention heads (multi-head attention, "
                 "Section 3 and Vaswani et al. 2017). A row is one token attending (its weights sum to 1), a column "
                 "one token being attended to; hover for a weight, click a token under the maps to follow it. The "
                 "table and the head statistics are Clark et al. 2019 (*What does BERT look at?*): how much attention "
                 "goes to [CLS], [SEP], the token itself and its neighbours. **Entropy** (nats) measures how spread a "
                 "head is: 0 = all on one token, ln T = evenly over all T tokens. Silencing heads one at a time is "
                 "Michel et al. 2019 (*Are sixteen heads really better than one?*).",
    "qa": "**What you are looking at:** extractive question answering (Section 4.2, SQuAD): a QA model scores "
          "every context token as the answer's **start** and **end**; the answer is the best-scoring span "
          "(start ≤ end, at most 30 tokens). The status line says what the chosen model was fine-tuned on; pick "
          "another model to compare answers to the same question. **The [CLS] score**: a SQuAD 2.0-style model "
          "points start and end at [CLS] to say \"no answer\"; these models learned SQuAD v1.1, where every "
          "question has an answer, so the probability left on [CLS] is leftover mass, not a verdict.",
    "classify": "**What you are looking at:** fine-tuning (Section 4.1, GLUE): BERT plus one linear layer on the "
                "final [CLS] vector, every weight trained on labelled sentences; the bundled model learned SST-2 "
                "(movie-review sentences, negative / positive). Pair tasks (MNLI, QNLI) put a second sentence in "
                "segment B.",
    "training": "**What you are looking at:** a training run's loss and held-out accuracy (its metrics.jsonl; "
                "pre-training procedure: Section 3.1 and Appendix A.2), and the same masked sentence through the "
                "run's checkpoints: watch BERT learn.",
    "model": "**What you are looking at:** the chosen model (its card, its shape: L layers, hidden size H, A heads, "
             "Section 3) and its input representation (Section 3, Figure 2): WordPiece tokens, plus a segment and "
             "a position embedding, summed.",
}


def data_box() -> gr.File:
    """Where a figure's numbers can be downloaded as CSV (its PNG: the camera in the figure)."""
    return gr.DownloadButton("⬇ the figure's data (CSV)", size="sm", variant="secondary")


def status_box(elem_id: str | None = None) -> gr.HTML:
    """A status line: handlers write escaped text into it (status_html)."""
    return gr.HTML(elem_id=elem_id, padding=False, elem_classes="bl-status")


def model_dropdown(task: str | None, label: str = "Model"):
    return gr.Dropdown(choices=list_models(), value=default_model(task), label=label,
                       allow_custom_value=True, scale=2)


def parser() -> argparse.ArgumentParser:
    """The command line of `python app.py` (--help prints this file's docstring too)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None,
                   help="start on this model directory (under a models root) or Hugging Face id (ORG/NAME)")
    p.add_argument("--models-root", action="append", default=[],
                   help="another folder whose model directories may be served (repeatable)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (0.0.0.0: the whole network)")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("--share", action="store_true", help="also publish a temporary gradio.live link")
    p.add_argument("--allow-downloads", action="store_true",
                   help="let users add Hugging Face models by id (downloaded into the Hub cache) although the "
                        "app is public (--host other than localhost, or --share); on localhost they always may")
    p.add_argument("--concurrency", type=int, default=2,
                   help="requests computed at once (each with its own CPU thread); others wait in the queue")
    p.add_argument("--queue-size", type=int, default=128, help="requests that may wait; more are turned away")
    p.add_argument("--cache-models", type=int, default=4, help="models kept loaded at once")
    p.add_argument("--precision", choices=["bf16", "fp32"], default="bf16",
                   help="bf16: forward passes under bf16 autocast where the hardware is fast at it "
                        "(2-3x faster for BERT-base on a CPU; probabilities differ in the 2nd-3rd digit)")
    return p


def build(args: argparse.Namespace) -> gr.Blocks:
    """The page wired to the handlers, for parsed command-line arguments (see parser());
    sets the handlers' SETTINGS first. Launch it with demo.launch(..., **LAUNCH_OPTIONS)."""
    settings = configure(args)
    if settings.start_model and is_hub_name(settings.start_model):
        try:                                                 # --model ORG/NAME: fetched now (console progress)
            hub_model_dir(settings.start_model, download=settings.downloads, progress=True)
        except UserError as e:
            log.warning("--model %s: %s", settings.start_model, e)
    # Every model computation shares one queue slot pool: at most --concurrency requests run at once
    # across all tabs (memory and CPU stay bounded), the rest wait in order (at most --queue-size).
    Q = dict(concurrency_id="model", concurrency_limit=settings.concurrency)

    with gr.Blocks(title="BERT Lab") as demo:
        # the page's light/dark theme, read from the browser when the page opens: figures follow it
        theme = gr.Radio(list(THEMES), value="light", visible=False)
        gr.Markdown("# BERT Lab\nEvery idea of the BERT paper (Devlin et al. 2019), live: masked words, next "
                    "sentences, attention heads, answer spans. Pick a model in each tab; the **Model** tab describes it.")
        with gr.Row():
            link_btn = gr.Button("Link to this tab and its inputs", size="sm", scale=1)
            link = gr.Textbox(show_label=False, placeholder="a link that opens this tab with these inputs",
                              interactive=False, buttons=["copy"], scale=4, elem_id="share-link")
        current_tab = gr.Textbox("mlm", visible=False)      # filled in by the browser (CURRENT_TAB_JS)
        with gr.Tabs() as tabs:
            with gr.Tab("Masked LM", id=TABS["Masked LM"]):
                gr.Markdown(HELP["mlm"])
                with gr.Row():
                    mlm_model = model_dropdown("fill_mask")
                    top_k = gr.Slider(1, 20, value=5, step=1, label="top k")
                    temperature = gr.Slider(0.1, 5, value=1.0, step=0.1, label="temperature")
                mlm_text = gr.Textbox(label="Sentence", value=MLM_EXAMPLES[0][0], elem_id="mlm-text")
                words = gr.HighlightedText(label="Click a word to mask it", interactive=False, elem_id="mlm-words",
                                           color_map={"masked": "#f97316"})
                mlm_btn = gr.Button("Predict", variant="primary", elem_id="mlm-predict")
                mlm_status = status_box(elem_id="mlm-status")
                filled = gr.HighlightedText(label="Best guesses", elem_id="mlm-filled",
                                            color_map={"guess": "#22c55e", "guess (word piece)": "#a3e635"})
                bars = gr.Plot(label="best guesses at each [MASK] and their probabilities", elem_id="mlm-bars")
                bars_csv = data_box()
                gr.Examples(MLM_EXAMPLES, [mlm_text], cache_examples=False)
                with gr.Accordion("What the model saw in pre-training: the 80/10/10 corruption", open=False):
                    seed = gr.Number(value=0, precision=0, label="seed")
                    corrupt_btn = gr.Button("Corrupt this sentence")
                    corrupted = gr.HighlightedText(label="15% chosen: 80% [MASK], 10% random, 10% kept", show_legend=True,
                                                   color_map=CORRUPTION_COLORS)
                    corrupt_status = status_box()
                mlm_in, mlm_out = [mlm_model, mlm_text, top_k, temperature, theme], [filled, bars, bars_csv, mlm_status]
                mlm_btn.click(fill_mask, mlm_in, mlm_out, api_name="fill_mask", **Q)
                submit_and_clear([mlm_text], fill_mask, mlm_in, mlm_out, Q)
                mlm_text.change(word_chips, mlm_text, words, api_name="words", show_progress="hidden",
                                queue=False, trigger_mode="always_last")
                words.select(on_word_select, mlm_in, [mlm_text, *mlm_out], api_visibility="private", **Q)
                gr.Button("mask word", visible=False).click(mask_word, [mlm_text, gr.Number(visible=False)],
                                                            [mlm_text, mlm_status], api_name="mask_word", **Q)
                corrupt_btn.click(corrupt, [mlm_model, mlm_text, seed], [corrupted, corrupt_status],
                                  api_name="corrupt", **Q)

            with gr.Tab("Next Sentence", id=TABS["Next Sentence"]):
                gr.Markdown(HELP["nsp"])
                nsp_model = model_dropdown("next_sentence")
                nsp_a = gr.Textbox(label="Sentence A", value=NSP_EXAMPLES[0][0])
                nsp_b = gr.Textbox(label="Sentence B", value=NSP_EXAMPLES[0][1])
                nsp_btn = gr.Button("Score", variant="primary")
                nsp_label = gr.Label(label="Next sentence?")
                nsp_status = status_box()
                gr.Examples(NSP_EXAMPLES, [nsp_a, nsp_b], cache_examples=False)
                nsp_btn.click(next_sentence, [nsp_model, nsp_a, nsp_b], [nsp_label, nsp_status],
                              api_name="next_sentence", **Q)
                submit_and_clear([nsp_a, nsp_b], next_sentence, [nsp_model, nsp_a, nsp_b], [nsp_label, nsp_status], Q)

            with gr.Tab("Attention", id=TABS["Attention"]):
                gr.Markdown(HELP["attention"])
                with gr.Row():
                    att_model = model_dropdown("attention")
                    layer = gr.Slider(0, 11, value=0, step=1, label="layer")
                    head = gr.Slider(0, 11, value=0, step=1, label="head")
                att_a = gr.Textbox(label="Sentence A", value=NSP_EXAMPLES[0][0])
                att_b = gr.Textbox(label="Sentence B (optional)", value=NSP_EXAMPLES[0][1])
                att_btn = gr.Button("Show attention", variant="primary")
                att_status = status_box()
                with gr.Row():
                    heatmap = gr.Plot(label="one head: hover for the weight; highlight a token from the figure's menu")
                    grid = gr.Plot(label="all heads of the layer")
                att_tokens = gr.HighlightedText(label="Click a token: where it attends (its row) and what attends to it "
                                                      "(its column)", interactive=False, elem_id="att-tokens")
                att_csv = data_box()
                stats_table = gr.Dataframe(label="what each head looks at: mean attention to ... (Clark et al. 2019)",
                                           interactive=False)
                stats_btn = gr.Button("Plot the head statistics")
                stats_plot = gr.Plot(label="head statistics (Clark et al. 2019)")
                stats_csv = data_box()
                with gr.Accordion("Silence one head at a time (Michel et al. 2019)", open=False):
                    abl_text = gr.Textbox(label="Sentence with [MASK]", value=MLM_EXAMPLES[1][0])
                    abl_btn = gr.Button("Silence each head")
                    abl_plot = gr.Plot(label="loss change when each head is silenced")
                    abl_csv = data_box()
                    abl_status = status_box()
                with gr.Accordion("bertviz: the head, model and neuron views (Vig 2019), drawn offline", open=False):
                    view = gr.Radio(["head", "model", "neuron"], value="head", label="view",
                                    info="neuron: the layer and head above, their query and key vectors "
                                         "(click ⊕ beside a token)")
                    viz_btn = gr.Button("Show bertviz")
                    viz = gr.HTML()
                    viz_status = status_box()
                att_inputs = [att_model, att_a, att_b, layer, head, theme]
                att_outputs = [heatmap, grid, stats_table, att_tokens, att_csv, att_status]
                att_btn.click(attention, att_inputs, att_outputs, api_name="attention", **Q)
                submit_and_clear([att_a, att_b], attention, att_inputs, att_outputs, Q)
                for slider in (layer, head):
                    slider.release(attention, att_inputs, att_outputs, api_visibility="private", **Q)
                att_tokens.select(attention_token, att_inputs, [heatmap, att_status], api_visibility="private", **Q)
                stats_btn.click(head_stats, [att_model, att_a, att_b, theme], [stats_plot, stats_csv, att_status],
                                api_name="head_stats", **Q)
                abl_in, abl_out = [att_model, abl_text, theme], [abl_plot, abl_csv, abl_status]
                abl_btn.click(ablate, abl_in, abl_out, api_name="ablate", **Q)
                submit_and_clear([abl_text], ablate, abl_in, abl_out, Q)
                viz_btn.click(bertviz_view, [att_model, att_a, att_b, view, layer, head], [viz, viz_status],
                              api_name="bertviz", **Q)

            with gr.Tab("Question Answering", id=TABS["Question Answering"]):
                gr.Markdown(HELP["qa"])
                with gr.Row():
                    qa_model = model_dropdown("answer")
                    qa_k = gr.Slider(1, 10, value=3, step=1, label="answers shown")
                qa_q = gr.Textbox(label="Question", value=QA_EXAMPLES[0][0], elem_id="qa-question")
                qa_c = gr.Textbox(label="Context", value=QA_CONTEXT, lines=5, elem_id="qa-context")
                qa_btn = gr.Button("Answer", variant="primary", elem_id="qa-answer")
                qa_status = status_box(elem_id="qa-status")
                qa_span = gr.HighlightedText(label="Answer in its context", color_map={"answer": "#22c55e"},
                                             elem_id="qa-span")
                qa_plot = gr.Plot(label="start / end probabilities")
                qa_table = gr.Dataframe(label="best answers", interactive=False)
                qa_csv = data_box()
                gr.Examples(QA_EXAMPLES, [qa_q, qa_c], cache_examples=False)
                qa_in, qa_out = [qa_model, qa_q, qa_c, qa_k, theme], [qa_span, qa_plot, qa_table, qa_csv, qa_status]
                qa_btn.click(answer, qa_in, qa_out, api_name="answer", **Q)
                submit_and_clear([qa_q, qa_c], answer, qa_in, qa_out, Q)   # Enter in the question; Shift+Enter in the context

            with gr.Tab("Classify", id=TABS["Classify"]):
                gr.Markdown(HELP["classify"])
                cls_model = model_dropdown("classify")
                cls_a = gr.Textbox(label="Sentence", value=CLS_EXAMPLES[0][0])
                cls_b = gr.Textbox(label="Second sentence (pair tasks only)", value="")
                cls_btn = gr.Button("Classify", variant="primary")
                cls_label = gr.Label(label="Label probabilities")
                cls_status = status_box()
                gr.Examples(CLS_EXAMPLES, [cls_a], cache_examples=False)
                cls_btn.click(classify, [cls_model, cls_a, cls_b], [cls_label, cls_status], api_name="classify", **Q)
                submit_and_clear([cls_a, cls_b], classify, [cls_model, cls_a, cls_b], [cls_label, cls_status], Q)

            with gr.Tab("Training", id=TABS["Training"]):
                gr.Markdown(HELP["training"])
                run_names = list_runs()
                with gr.Row():
                    # start on a bundled model with checkpoints: it keeps snapshots of its training
                    first = next((r for r in run_names if r.startswith("models/") and runs.checkpoints(ROOT / r)),
                                 run_names[0] if run_names else None)
                    run = gr.Dropdown(choices=run_names, value=first, label="Run", allow_custom_value=True)
                    x_axis = gr.Radio(["time", "step"], value="time", label="x axis")
                curves_btn = gr.Button("Show curves", variant="primary")
                curves = gr.Plot(label="training curves")
                curves_csv = data_box()
                curves_status = status_box()
                watch_text = gr.Textbox(label="Sentence with [MASK]", value=MLM_EXAMPLES[0][0])
                watch_btn = gr.Button("Predict at every checkpoint")
                watch_table = gr.Dataframe(interactive=False)
                watch_status = status_box()
                curves_btn.click(training_curves, [run, x_axis, theme], [curves, curves_csv, curves_status],
                                 api_name="training_curves", **Q)
                watch_btn.click(watch_learning, [run, watch_text], [watch_table, watch_status],
                                api_name="watch_learning", **Q)
                submit_and_clear([watch_text], watch_learning, [run, watch_text], [watch_table, watch_status], Q)
                # another run: the old run's curves, title and replay go
                run.change(cleared(5), None, [curves, curves_csv, curves_status, watch_table, watch_status],
                           api_visibility="private", queue=False, show_progress="hidden")

            with gr.Tab("Model", id=TABS["Model"]):
                gr.Markdown(HELP["model"])
                info_model = model_dropdown(None)
                menus = [mlm_model, nsp_model, att_model, qa_model, cls_model]   # MODEL_MENUS: refreshed after an add
                info = gr.Markdown()
                info_status = status_box()
                with gr.Accordion("Model card", open=False):
                    card = gr.Markdown(elem_classes="bl-card")
                with gr.Row():
                    new_path = gr.Textbox(label="Add a model directory (inside models/ or runs/ or a --models-root) "
                                                "or a Hugging Face model id, e.g. google-bert/bert-base-uncased",
                                          scale=3)
                    add_btn = gr.Button("Add")
                tok_text = gr.Textbox(label="Text to tokenize", value="The playing children were unbelievably happy.")
                tok_btn = gr.Button("Tokenize")
                tokens = gr.HighlightedText(label="WordPiece tokens",
                                            color_map={"special": "#60a5fa", "subword": "#f97316"})
                emb_btn = gr.Button("Input embeddings: token + segment + position")
                emb_plot = gr.Plot(label="input embedding components")
                emb_csv = data_box()
                tok_btn.click(tokenize, [info_model, tok_text], [tokens, info_status], api_name="tokenize", **Q)
                submit_and_clear([tok_text], tokenize, [info_model, tok_text], [tokens, info_status], Q)
                emb_btn.click(embeddings, [info_model, tok_text, gr.State(""), theme], [emb_plot, emb_csv, info_status],
                              api_name="embeddings", **Q)
                info_model.change(model_info, info_model, [info, card, info_status], api_name="model_info")
                add_btn.click(add_model, new_path, [info_model, info_status], api_name="add_model", **Q).then(
                    model_menus, None, menus, api_visibility="private", queue=False)
                new_path.submit(add_model, new_path, [info_model, info_status], api_visibility="private", **Q).then(
                    model_menus, None, menus, api_visibility="private", queue=False)

        # a page opened after a Hugging Face model was added lists it in every menu too
        demo.load(model_menus_on_open, None, menus, api_visibility="private", queue=False)
        # the attention sliders follow the attention model's shape
        att_model.change(attention_shape, att_model, [layer, head, att_status], api_visibility="private")
        demo.load(model_info, info_model, [info, card, info_status], api_visibility="private")
        demo.load(word_chips, mlm_text, words, api_visibility="private", queue=False)
        # a page opens: the browser's theme, the sliders for the model's shape, the inputs of a shared
        # link, then every tab's example computed (cached: the same inputs cost nothing the next time)
        shared = [mlm_model, mlm_text, nsp_model, nsp_a, nsp_b, att_model, att_a, att_b, layer, head,
                  qa_model, qa_q, qa_c, cls_model, cls_a, cls_b]
        opening_outputs = [*mlm_out, nsp_label, nsp_status, *att_outputs, *qa_out, cls_label, cls_status]
        demo.load(None, None, theme, js=THEME_JS).then(
            attention_shape, att_model, [layer, head, att_status], api_visibility="private").then(
            restore_from_link, None, [tabs, *shared], api_visibility="private", queue=False).then(
            opening_views, [*shared, theme], opening_outputs, api_visibility="private", **Q)
        link_btn.click(share_link, [current_tab, *shared], link, api_visibility="private", queue=False,
                       js=CURRENT_TAB_JS).then(
            None, link, link, js=ABSOLUTE_LINK_JS)

    # Bounded memory and CPU: `concurrency` requests run at once, the rest wait in a bounded queue.
    demo.queue(default_concurrency_limit=settings.concurrency, max_size=settings.queue_size)
    return demo


def main(argv: list[str] | None = None) -> None:
    """python app.py [options]: parse the arguments, set the process-wide thread count and
    precision, build the page and serve it."""
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    import torch                                             # the handlers import it on first use

    # process-wide settings, made only when app.py is the program (not when a test builds the page)
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // max(1, args.concurrency)))
    explore.use_bf16(args.precision == "bf16")
    build(args).launch(server_name=args.host, server_port=args.port, share=args.share, **LAUNCH_OPTIONS)


if __name__ == "__main__":
    main()
