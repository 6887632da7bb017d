"""Model: the chosen model's card, shape and tasks; WordPiece tokens and the input embeddings
(the paper's Figure 2); what each layer knows (a linear part-of-speech probe on every layer, with
its baselines); add a model folder or a Hugging Face id to every menu."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import NamedTuple

import gradio as gr

from lab import modern
from lab.figures import plotly_figures
from lab.files import MODEL_CARD_NAME
from lab.inspect import explore, probing

from ..common import (
    FigureView,
    handler,
    in_order,
    md_escape,
    optional_text,
    plot,
    safe_card,
    said,
    status_box,
    text_input,
    theme_input,
    theme_watch,
    unknown_note,
)
from ..current import submit
from ..help import HELP
from ..room import intro
from ..web_edition import step_by_step_line

TOKENIZE_EXAMPLE = "The playing children were unbelievably happy."
PROBE_TRAIN_WORDS = 8000  # the probe's subset: the first whole UD EWT dev sentences up to this many words
PROBE_TEST_WORDS = 8000  # ... and test sentences (the library and benchmarks/probing.py take all ~25k)
PROBE_CACHE = 8  # probe results kept per server (model, snapshots): the same request twice is instant
PROBE_HELP = (
    "**What each layer knows.** A *probe* (Tenney et al. 2019, Hewitt & Manning 2019): the model is frozen, each "
    "word is read as its first word piece's vector after every layer (0 = the input embeddings), and one linear "
    "layer per layer (logistic regression) learns the word's part of speech (the 17 universal tags of UD English-"
    f"EWT). It is **trained on UD EWT dev and scored on UD EWT test** (no train split is here): the first "
    f"{PROBE_TRAIN_WORDS:,} words of each, whole sentences; `benchmarks/probing.py` takes all of them. Two "
    "baselines say what the numbers mean: the **majority tag of each word** (what knowing the word without its "
    "context gives) and the **same probe on a random-weights encoder** of the same shape (what the probe "
    "extracts by itself: Hewitt & Liang 2019). Bars are 95% intervals. Tick *training snapshots* to probe every "
    "checkpoint the model kept (the classroom model has 10): does syntax arrive early in pre-training? It runs on "
    "a click, not when the page opens: it costs seconds (the classroom model about 4 s, a MiniLM about 30 s; "
    "snapshots about 2 s each). Without the shared data folder (a fresh clone) it reads the small set of invented "
    "sentences that ships with the lab (`notebooks/data`; the status says how many words): it shows how the probe "
    "works, not what a treebank measures; the status says which it read."
)


def parameters_line(model) -> str:
    """The model's parameter count as the page says it, once: the total, then the encoder's and the
    heads' shares (lab.model's parameter_counts: counted from the model's own tensors)."""
    n = model.parameter_counts()
    pooler = getattr(getattr(model, "bert", model), "pooler", None) is not None
    encoder = f"embeddings, {model.config.num_hidden_layers} layers{' and the pooler' if pooler else ''}"
    if not n.heads:
        return f"**{n.total:,}**, all in the encoder ({encoder}): no task head"
    return f"**{n.total:,}**: {n.encoder:,} in the encoder ({encoder}), {n.heads:,} in the heads on top of it"


def probe_plain(result, data) -> str:
    """The probe's result in plain words: the best layer against the two baselines, and what it read."""
    text = (
        f"best layer: {result.best_layer} (0 = the input embeddings); a probe on it tags {result.best:.0%} of the "
        f"{result.total:,} test words right"
    )
    if result.control is not None and result.majority is not None:
        text += (
            f", against {result.control.best:.0%} on the same model with random weights and "
            f"{result.majority.accuracy:.0%} for each word's commonest tag"
        )
    return (
        text
        + f". It learned from {data.train_words:,} words and was tested on {data.test_words:,}, from {data.source}."
    )


def architecture_line(cfg) -> str:
    """What the layers are: BERT's of 2018, or which changes since (lab.modern) they have on."""
    changes = modern.changes_of(cfg)
    if not changes:
        return "architecture: BERT's of 2018 (post-norm, GELU, learned positions)"
    n = cfg.global_attn_every_n_layers
    window = f" (window {cfg.local_attention}; layer 0 and every {n}-th after it global)"
    return "changed since BERT: " + ", ".join(c + (window if c == "local" else "") for c in changes)


class ModelInfo(NamedTuple):
    """The model's description (class, shape, parameters, tasks), its card, the status line."""

    description: str
    card: str
    status: object


class Tokens(NamedTuple):
    """The text as WordPiece tokens (specials and ## pieces marked) and the status line."""

    chips: list
    status: str


class Model:
    name, id = "Model", "model"

    def __init__(self, ctx):
        self.ctx, self.store = ctx, ctx.store
        self._pos: probing.PosData | None = None  # UD EWT (shared data) or the invented sentences, read once
        self._probes: OrderedDict = OrderedDict()  # (model path, snapshots) -> results, PROBE_CACHE at most
        self._probe_lock = threading.Lock()

    @handler(ModelInfo)
    def model_info(self, model_name):
        """-> the model's description, its card, and the status line left as it is."""
        model, _ = self.store.get(model_name)
        cfg = model.config
        tasks = sorted(explore.model_tasks(model))
        path, shown = self.store.model_dir(model_name)
        hub_model = self.store.is_hub_name(model_name)
        card = (path if hub_model else self.store.confined(path)) / MODEL_CARD_NAME
        text = (
            f"### {md_escape(shown)}\n`{type(model).__name__}`\n\n"
            f"- parameters: {parameters_line(model)}\n"
            f"- layers L = {cfg.num_hidden_layers}, hidden H = {cfg.hidden_size}, heads A = "
            f"{cfg.num_attention_heads}, vocabulary {cfg.vocab_size:,}, max length {cfg.max_position_embeddings}\n"
            f"- {architecture_line(cfg)}\n"
            f"- serves: {', '.join(tasks)}\n"
        )
        card_text = (
            safe_card(card.read_text(encoding="utf-8", errors="replace"))
            if card.is_file()
            else f"Model card: https://huggingface.co/{shown}"
            if hub_model
            else "(no model card: README.md)"
        )
        return ModelInfo(text, card_text, gr.update())  # the status line keeps what an Add said

    @handler(Tokens)
    def tokenize(self, model_name, text):
        _, tokenizer = self.store.get(model_name)
        text = text_input(text, "the text")
        enc = tokenizer.encode(text)
        chips = []
        for t in enc.tokens:  # a space after each token: they stay apart
            kind = "special" if t in ("[CLS]", "[SEP]") else ("subword" if t.startswith("##") else None)
            chips += [(t, kind), (" ", None)]
        return Tokens(chips, f"{unknown_note(tokenizer, text)}{len(enc.tokens)} tokens")

    @handler(FigureView)
    def embeddings(self, model_name, text_a, text_b="", theme="light"):
        """The paper's Figure 2: token + segment + position embeddings, summed and normalised."""
        model, tokenizer = self.store.get(model_name)
        a = text_input(text_a, "sentence A")
        b = optional_text(text_b, "sentence B")
        result = explore.embeddings(model, tokenizer, a, b)
        fig = plotly_figures.embedding_components(result, theme=theme_input(theme))
        return FigureView(fig, self.ctx.csv.keep(fig), result.note)  # e.g. a rotary model's: no position embeddings

    def _pos_data(self) -> probing.PosData:
        """UD EWT's subset for the probe, read once: the shared data folder's files when they are
        there, else the sample bundled with the lab (the same first sentences)."""
        with self._probe_lock:
            if self._pos is None:
                self._pos = probing.probe_data(PROBE_TRAIN_WORDS, PROBE_TEST_WORDS)
            return self._pos

    @handler(FigureView)
    def probe(self, model_name, snapshots=False, theme="light", progress=gr.Progress()):
        """What each layer knows (lab.inspect.probing.probe_layers) -> (figure: accuracy by layer with the
        random-weights control and the majority baseline, its CSV, status)."""
        model, tokenizer = self.store.get(model_name)
        path, shown = self.store.model_dir(model_name)
        progress(0, desc="reading UD English-EWT")
        data = self._pos_data()
        found = self.store.snapshots(path) if snapshots and path.is_dir() else []
        key = (str(path), bool(found))
        start = time.perf_counter()
        with self._probe_lock:
            results = self._probes.get(key)
        if results is None:
            stages = 1 + len(found)

            def say(stage):
                return lambda fraction, what: progress((stage + fraction) / stages, desc=what)

            snaps = []
            if found:
                snaps = probing.probe_snapshots(
                    path, *data.train, *data.test, labels=data.labels, split=data.split, progress=say(0)
                )
            main = probing.probe_layers(
                model,
                tokenizer,
                *data.train,
                *data.test,
                baselines=True,
                name=shown,
                labels=data.labels,
                split=data.split,
                progress=say(len(found)),
            )
            results = [*snaps, main]
            with self._probe_lock:
                self._probes[key] = results
                while len(self._probes) > PROBE_CACHE:
                    self._probes.popitem(last=False)
        main = results[-1]
        fig = plotly_figures.probe_layers(results, theme=theme_input(theme))
        note = "" if found or not snapshots else f"{shown} keeps no training snapshots; "
        if len(results) > 1:
            first, last = results[0], results[-2]
            note += f"snapshots: step {first.step:,} {first.best:.0%}, step {last.step:,} {last.best:.0%}; "
        took = time.perf_counter() - start
        return fig, self.ctx.csv.keep(fig), said(note + probe_plain(main, data), f"{main.summary()}; {took:.1f} s")

    @handler(1, keep=True)
    def add_model(self, path, progress=gr.Progress()):
        """Check a typed model folder (inside a models root) or Hugging Face id (downloaded into
        the Hub cache, with progress, when the server allows downloads) and offer it in every
        model menu whose tab it serves."""
        text = text_input(path, "the model path or Hugging Face id").strip()
        if self.store.is_hub_name(text):
            progress(0, desc=f"looking up {text}")

            def report(done, total, filename):  # bytes of the file being downloaded
                progress((done, total), desc=f"downloading {text}: {filename}", unit="bytes")

            _, name = self.store.model_dir(text, download=self.store.downloads, progress=report)
        else:
            name = self.store.display(self.store.model_dir(text)[0])
        model, _ = self.store.get(name)  # loads it: a damaged one is reported now
        choices = sorted(set(self.store.list_models()) | {name})
        tasks = ", ".join(sorted(explore.model_tasks(model) - {"attention", "embeddings"})) or "attention only"
        return gr.Dropdown(choices=choices, value=name), f"added {name}: it serves {tasks}; every menu lists it"

    def build(self):
        ctx, Q = self.ctx, self.ctx.queue
        intro(HELP["model"])
        menu = ctx.model_menu(None)
        info0 = self.model_info(menu.value)
        tokens0 = self.tokenize(menu.value, TOKENIZE_EXAMPLE)
        emb0 = self.embeddings(menu.value, TOKENIZE_EXAMPLE)
        info = gr.Markdown(info0.description)
        status = status_box(elem_id="model-status")
        with gr.Accordion("Model card", open=False):
            card = gr.Markdown(info0.card, elem_classes="bl-card")
        with gr.Row():
            new_path = gr.Textbox(
                label="Add a model directory (inside models/ or runs/ or a --models-root) "
                "or a Hugging Face model id, e.g. google-bert/bert-base-uncased",
                scale=3,
                elem_id="model-add-path",
            )
            add_btn = gr.Button("Add", elem_id="model-add")
        text = gr.Textbox(label="Text to tokenize", value=TOKENIZE_EXAMPLE)
        tok_btn = gr.Button("Tokenize")
        tokens = gr.HighlightedText(
            tokens0.chips, label="WordPiece tokens", color_map={"special": "#60a5fa", "subword": "#f97316"}
        )
        emb_btn = gr.Button("Input embeddings: token + segment + position")
        emb_plot = plot("input embedding components", emb0.figure)
        emb_csv = self.ctx.csv.box(emb0.csv)
        gr.Markdown(step_by_step_line(ctx.settings.web_site, Path(str(menu.value)).name), elem_id="model-steps")
        tok_run, tok_outputs = (self.tokenize, [menu, text], Q), in_order(Tokens, chips=tokens, status=status)
        tok_done = [tok_btn.click(*tok_run[:2], tok_outputs, api_name="tokenize", **Q)]
        tok_done += submit([text], *tok_run[:2], tok_outputs, Q)
        emb_ev = emb_btn.click(
            self.embeddings,
            [menu, text, gr.State(""), ctx.theme],
            in_order(FigureView, figure=emb_plot, csv=emb_csv, status=status),
            api_name="embeddings",
            **Q,
        )
        with gr.Accordion("What each layer knows (probing)", open=False, elem_id="model-probe-box"):
            gr.Markdown(PROBE_HELP)
            with gr.Row():
                probe_snaps = gr.Checkbox(False, label="with its training snapshots", elem_id="model-probe-snapshots")
                probe_btn = gr.Button("Probe every layer", elem_id="model-probe-button")
            probe_status = status_box(elem_id="model-probe-status")
            probe_plot = plot("part-of-speech accuracy of a linear probe on every layer", elem_id="model-probe")
            probe_csv = self.ctx.csv.box()
        probe_outputs = in_order(FigureView, figure=probe_plot, csv=probe_csv, status=probe_status)
        probe_ev = probe_btn.click(
            self.probe,
            [menu, probe_snaps, ctx.theme],
            probe_outputs,
            api_name="probe_layers",
            **ctx.slow_queue,
        )
        menu.change(
            self.model_info,
            menu,
            in_order(ModelInfo, description=info, card=card, status=status),
            api_name="model_info",
        )
        current = ctx.current
        current.view(
            "model-tokens", "Tokenize", [menu, text], tok_outputs, tok_done, rerun=[(menu, "input")], run=tok_run
        )
        current.view("model-emb", "Input embeddings", [menu, text, ctx.theme], [emb_plot, emb_csv], [emb_ev])
        probe_inputs = [menu, probe_snaps, ctx.theme]
        current.view("model-probe", "Probe every layer", probe_inputs, probe_outputs, [probe_ev], shown=False)
        theme_watch(ctx)  # the page's theme switched: the figures marked out of date
        menus = [m for m, _ in ctx.menus]
        add_btn.click(self.add_model, new_path, [menu, status], api_name="add_model", **Q).then(
            ctx.menu_updates, None, menus, api_visibility="private", queue=False
        )
        new_path.submit(self.add_model, new_path, [menu, status], api_visibility="private", **Q).then(
            ctx.menu_updates, None, menus, api_visibility="private", queue=False
        )
