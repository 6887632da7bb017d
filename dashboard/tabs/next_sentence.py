"""Next Sentence: P(IsNext) for a pair of sentences, with examples that say what each pair is."""

from __future__ import annotations

import gradio as gr

from lab.inspect import explore

from ..common import (
    Verdict,
    cut_tokens,
    handler,
    in_order,
    remembered,
    said,
    status_box,
    text_input,
    truncation_note,
    unknown_note,
)
from ..current import submit
from ..help import HELP, NSP_EXAMPLE_LABELS, NSP_EXAMPLES
from ..room import intro


class NextSentence:
    name, id = "Next Sentence", "nsp"

    def __init__(self, ctx):
        self.ctx, self.store = ctx, ctx.store

    @handler(Verdict)
    @remembered()
    def next_sentence(self, model_name, sentence_a, sentence_b):
        model, tokenizer = self.store.model_for(model_name, "next_sentence")
        a, b = text_input(sentence_a, "sentence A"), text_input(sentence_b, "sentence B")
        note = truncation_note(cut_tokens(model, tokenizer, a, b), model.config.max_position_embeddings, pair=True)
        note += unknown_note(tokenizer, a, b)
        p = explore.next_sentence(model, tokenizer, a, b)
        plain = f"{note}Does sentence B follow sentence A? The model says {'yes' if p >= 0.5 else 'no'} ({p:.0%} yes)"
        detail = f"P(IsNext) = {p:.3f}: the next-sentence head (a linear layer on the pooled [CLS] vector)"
        return Verdict({"IsNext": p, "NotNext": 1 - p}, said(plain, detail))

    def opening(self, model_name, a, b, theme):
        return self.next_sentence(model_name, a, b)

    def build(self):
        ctx, Q = self.ctx, self.ctx.queue
        intro(HELP["nsp"])
        model = ctx.model_menu("next_sentence")
        a0, b0 = NSP_EXAMPLES[0]
        first = self.opening(model.value, a0, b0, "light")
        a = gr.Textbox(label="Sentence A", value=a0)
        b = gr.Textbox(label="Sentence B", value=b0)
        btn = gr.Button("Score", variant="primary")
        label = gr.Label(first.probabilities, label="Next sentence?")
        status = status_box(value=first.status)
        gr.Examples(
            NSP_EXAMPLES,
            [a, b],
            cache_examples=False,
            example_labels=[f"{label}: {a} / {b}" for label, (a, b) in zip(NSP_EXAMPLE_LABELS, NSP_EXAMPLES)],
        )
        inputs, outputs = [model, a, b], in_order(Verdict, probabilities=label, status=status)
        ev = btn.click(self.next_sentence, inputs, outputs, api_name="next_sentence", **Q)
        run = (self.next_sentence, inputs, Q)
        ctx.current.view(
            "nsp",
            "Score",
            inputs,
            outputs,
            [ev, *submit([a, b], *run[:2], outputs, Q)],
            rerun=[(model, "input")],
            run=run,
        )
        ctx.links.share(nsp_model=model, nsp_a=a, nsp_b=b)
        if ctx.rounds:  # the teacher's "Ask the class" row (dashboard.rounds)
            ctx.rounds.ask_row("next_sentence", [model, a, b], lambda m, x, y: {"model": m, "text": x, "next": y})
        ctx.links.opening(self.opening, inputs, outputs, first, (model.value, a0, b0))
