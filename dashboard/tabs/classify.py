"""Classify: a fine-tuned [CLS] classifier's label probabilities for a sentence (or a pair)."""

from __future__ import annotations

import gradio as gr

from lab import explore, finetune

from ..common import cut_tokens, handler, optional_text, status_box, submit_and_clear, text_input, truncation_note
from ..help import CLS_EXAMPLES, HELP


class Classify:
    name, id = "Classify", "classify"

    def __init__(self, ctx):
        self.ctx, self.store = ctx, ctx.store

    @handler(1)
    def classify(self, model_name, text, text_pair=""):
        model, tokenizer = self.store.model_for(model_name, "classify")
        text = text_input(text, "the sentence")
        pair = optional_text(text_pair, "the second sentence")
        unused = ""
        if pair and finetune.task_settings(self.store.model_dir(model_name)[0]).get("pair") is False:
            pair, unused = None, " (this model was fine-tuned on single sentences: the second sentence was not used)"
        note = truncation_note(
            cut_tokens(model, tokenizer, text, pair), model.config.max_position_embeddings, pair=pair is not None
        )
        probs = explore.classify(model, tokenizer, text, pair)
        best = max(probs, key=probs.get)
        return probs, f"{note}{best} ({probs[best]:.1%}){unused}"

    def opening(self, model_name, text, pair, theme):
        return self.classify(model_name, text, pair)

    def build(self):
        ctx, Q = self.ctx, self.ctx.queue
        gr.Markdown(HELP["classify"])
        model = ctx.model_menu("classify")
        example = CLS_EXAMPLES[0][0]
        first = self.opening(model.value, example, "", "light")
        a = gr.Textbox(label="Sentence", value=example)
        b = gr.Textbox(label="Second sentence (pair tasks only)", value="")
        btn = gr.Button("Classify", variant="primary")
        label = gr.Label(first[0], label="Label probabilities")
        status = status_box(value=first[1])
        gr.Examples(CLS_EXAMPLES, [a], cache_examples=False)
        inputs, outputs = [model, a, b], [label, status]
        btn.click(self.classify, inputs, outputs, api_name="classify", **Q)
        submit_and_clear([a, b], self.classify, inputs, outputs, Q)
        ctx.links.share(cls_model=model, cls_a=a, cls_b=b)
        ctx.links.opening(self.opening, inputs, outputs, first, (model.value, example, ""))
