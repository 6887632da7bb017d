"""Classify: a fine-tuned [CLS] classifier's label probabilities for a sentence (or a pair)."""

from __future__ import annotations

import gradio as gr

from lab.inspect import explore

from ..common import (
    WHY_STEPS,
    Verdict,
    WhyView,
    cut_tokens,
    handler,
    in_order,
    optional_text,
    remembered,
    said,
    status_box,
    text_input,
    theme_watch,
    truncation_note,
    unknown_note,
    why_box,
    why_method,
    why_view,
)
from ..current import submit
from ..help import CLS_EXAMPLES, HELP
from ..room import intro


class Classify:
    name, id = "Classify", "classify"

    def __init__(self, ctx):
        self.ctx, self.store = ctx, ctx.store

    def _inputs(self, model_name, text, text_pair):
        """(model, tokenizer, text, pair or None, a note when the pair was not used)."""
        model, tokenizer = self.store.model_for(model_name, "classify")
        text = text_input(text, "the sentence")
        pair = optional_text(text_pair, "the second sentence")
        unused = ""
        if pair and model.task_settings.get("pair") is False:
            pair, unused = None, " (this model was fine-tuned on single sentences: the second sentence was not used)"
        return model, tokenizer, text, pair, unused

    @handler(Verdict)
    @remembered()
    def classify(self, model_name, text, text_pair=""):
        model, tokenizer, text, pair, unused = self._inputs(model_name, text, text_pair)
        note = truncation_note(
            cut_tokens(model, tokenizer, text, pair), model.config.max_position_embeddings, pair=pair is not None
        )
        note += unknown_note(tokenizer, text, pair)
        probs = explore.classify(model, tokenizer, text, pair)
        best = max(probs, key=probs.get)
        detail = ", ".join(f"P({label}) = {p:.3f}" for label, p in sorted(probs.items(), key=lambda kv: -kv[1]))
        detail += f": a softmax over the {len(probs)} labels of a classifier on the [CLS] token's last vector"
        plain = f"{note}The model says: {best} ({probs[best]:.1%} sure){unused}"
        return Verdict(probs, said(plain, detail))

    @handler(WhyView)
    def why(self, model_name, text, text_pair="", method="integrated gradients", theme="light"):
        """What the predicted label rests on -> (shaded tokens, figure, its CSV, status)."""
        model, tokenizer, text, pair, unused = self._inputs(model_name, text, text_pair)
        how = why_method(method)
        result = self.ctx.attributions.get(
            ("classify", model_name, text, pair, how),
            lambda: explore.attributions(model, tokenizer, text, pair, method=how, steps=WHY_STEPS, task="classify"),
        )
        view = why_view(self.ctx, model, tokenizer, result, theme, text, pair)
        return view._replace(status=(f"Note: {unused.strip(' ()')}. " if unused else "") + view.status)

    def opening(self, model_name, text, pair, theme):
        return self.classify(model_name, text, pair)

    def build(self):
        ctx, Q = self.ctx, self.ctx.queue
        intro(HELP["classify"])
        model = ctx.model_menu("classify")
        example = CLS_EXAMPLES[0][0]
        first = self.opening(model.value, example, "", "light")
        a = gr.Textbox(label="Sentence", value=example, elem_id="cls-text")
        b = gr.Textbox(label="Second sentence (pair tasks only)", value="")
        btn = gr.Button("Classify", variant="primary")
        label = gr.Label(first.probabilities, label="Label probabilities")
        status = status_box(value=first.status)
        gr.Examples(CLS_EXAMPLES, [a], cache_examples=False)
        why_first = self.why(model.value, example, "", "integrated gradients", "light")
        method, why_btn, *why_outputs = why_box(self.ctx, "cls", why_first, HELP["why"])
        why_ev = why_btn.click(
            self.why, [model, a, b, method, ctx.theme], why_outputs, api_name="why_classify", **ctx.slow_queue
        )
        inputs, outputs = [model, a, b], in_order(Verdict, probabilities=label, status=status)
        ev = btn.click(self.classify, inputs, outputs, api_name="classify", **Q)
        run = (self.classify, inputs, Q)
        ctx.current.view(
            "cls",
            "Classify",
            inputs,
            outputs,
            [ev, *submit([a, b], *run[:2], outputs, Q)],
            rerun=[(model, "input")],
            run=run,
        )
        ctx.current.view("cls-why", "Why?", [model, a, b, method, ctx.theme], why_outputs, [why_ev])
        theme_watch(ctx)  # the page's theme switched: the figure marked out of date
        ctx.links.share(cls_model=model, cls_a=a, cls_b=b)
        ctx.links.opening(self.opening, inputs, outputs, first, (model.value, example, ""))
