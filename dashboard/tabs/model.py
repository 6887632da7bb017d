"""Model: the chosen model's card, shape and tasks; WordPiece tokens and the input embeddings
(the paper's Figure 2); add a model folder or a Hugging Face id to every menu."""

from __future__ import annotations

import gradio as gr

from lab import explore, figures
from lab.files import MODEL_CARD_NAME

from ..common import (
    data_box,
    handler,
    md_escape,
    optional_text,
    plot,
    safe_card,
    status_box,
    submit_and_clear,
    text_input,
    theme_input,
)
from ..help import HELP

TOKENIZE_EXAMPLE = "The playing children were unbelievably happy."


class Model:
    name, id = "Model", "model"

    def __init__(self, ctx):
        self.ctx, self.store = ctx, ctx.store

    @handler(2)
    def model_info(self, model_name):
        """-> (markdown: class, shape, parameter count, tasks served; the model card; status)."""
        model, _ = self.store.get(model_name)
        cfg = model.config
        tasks = sorted(explore.model_tasks(model))
        path, shown = self.store.model_dir(model_name)
        hub_model = self.store.is_hub_name(model_name)
        card = (path if hub_model else self.store.confined(path)) / MODEL_CARD_NAME
        text = (
            f"### {md_escape(shown)}\n`{type(model).__name__}`: {cfg.summary()}\n\n"
            f"- parameters: **{sum(p.numel() for p in model.parameters()):,}**\n"
            f"- layers L = {cfg.num_hidden_layers}, hidden H = {cfg.hidden_size}, heads A = "
            f"{cfg.num_attention_heads}, vocabulary {cfg.vocab_size:,}, max length {cfg.max_position_embeddings}\n"
            f"- serves: {', '.join(tasks)}\n"
        )
        card_text = (
            safe_card(card.read_text(encoding="utf-8", errors="replace"))
            if card.is_file()
            else f"Model card: https://huggingface.co/{shown}"
            if hub_model
            else "(no model card: README.md)"
        )
        return text, card_text, gr.update()  # the status line keeps what an Add said

    @handler(1)
    def tokenize(self, model_name, text):
        _, tokenizer = self.store.get(model_name)
        text = text_input(text, "the text")
        enc = tokenizer.encode(text)
        chips = []
        for t in enc.tokens:  # a space after each token: they stay apart
            kind = "special" if t in ("[CLS]", "[SEP]") else ("subword" if t.startswith("##") else None)
            chips += [(t, kind), (" ", None)]
        return chips, f"{len(enc.tokens)} tokens"

    @handler(2)
    def embeddings(self, model_name, text_a, text_b="", theme="light"):
        """The paper's Figure 2: token + segment + position embeddings, summed and normalised."""
        model, tokenizer = self.store.get(model_name)
        a = text_input(text_a, "sentence A")
        b = optional_text(text_b, "sentence B")
        fig = figures.embedding_components(explore.embeddings(model, tokenizer, a, b), theme=theme_input(theme))
        return fig, self.ctx.csv.write(fig), ""

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

    def menus_on_open(self):
        """When a page opens: the menus as built, plus the Hugging Face models added since."""
        return self.ctx.menu_updates() if self.store.hub_ids() else [gr.update() for _ in self.ctx.menus]

    def build(self):
        ctx, Q = self.ctx, self.ctx.queue
        gr.Markdown(HELP["model"])
        menu = ctx.model_menu(None)
        info0 = self.model_info(menu.value)
        tokens0 = self.tokenize(menu.value, TOKENIZE_EXAMPLE)
        emb0 = self.embeddings(menu.value, TOKENIZE_EXAMPLE)
        info = gr.Markdown(info0[0])
        status = status_box(elem_id="model-status")
        with gr.Accordion("Model card", open=False):
            card = gr.Markdown(info0[1], elem_classes="bl-card")
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
            tokens0[0], label="WordPiece tokens", color_map={"special": "#60a5fa", "subword": "#f97316"}
        )
        emb_btn = gr.Button("Input embeddings: token + segment + position")
        emb_plot = plot("input embedding components", emb0[0])
        emb_csv = data_box(emb0[1])
        tok_btn.click(self.tokenize, [menu, text], [tokens, status], api_name="tokenize", **Q)
        submit_and_clear([text], self.tokenize, [menu, text], [tokens, status], Q)
        emb_btn.click(
            self.embeddings,
            [menu, text, gr.State(""), ctx.theme],
            [emb_plot, emb_csv, status],
            api_name="embeddings",
            **Q,
        )
        menu.change(self.model_info, menu, [info, card, status], api_name="model_info")
        menus = [m for m, _ in ctx.menus]
        add_btn.click(self.add_model, new_path, [menu, status], api_name="add_model", **Q).then(
            ctx.menu_updates, None, menus, api_visibility="private", queue=False
        )
        new_path.submit(self.add_model, new_path, [menu, status], api_visibility="private", **Q).then(
            ctx.menu_updates, None, menus, api_visibility="private", queue=False
        )
