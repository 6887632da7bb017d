"""Question Answering: the best answer spans of a context, their start / end probabilities, and
what the model was fine-tuned on."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import gradio as gr

from lab.checkpoint import qa_lengths
from lab.figures import plotly_figures
from lab.inspect import explore

from ..common import (
    WHY_STEPS,
    UserError,
    WhyView,
    base_model,
    handler,
    in_order,
    int_input,
    plot,
    remembered,
    said,
    status_box,
    text_input,
    theme_input,
    theme_redraw,
    theme_watch,
    unknown_note,
    why_box,
    why_method,
    why_view,
    word_chips,
)
from ..current import submit
from ..help import HELP, QA_CONTEXT, QA_EXAMPLES
from ..room import intro


class Answer(NamedTuple):
    """What Answer shows: the context with the span marked, the start/end bars, the n-best table,
    the bars' CSV, the line."""

    span: list
    probabilities: object
    table: dict
    csv: object
    status: str


class QuestionAnswering:
    name, id = "Question Answering", "qa"

    def __init__(self, ctx):
        self.ctx, self.store = ctx, ctx.store

    def training(self, name: str) -> tuple[dict, str]:
        """A QA model's window settings and what it was fine-tuned on, from its task settings
        (task_config.json, written by python -m lab finetune-qa, read by lab.load):
        ({max_seq_length, doc_stride, max_query_length}, a sentence for the page);
        ({}, "") for a model without one (e.g. a Hub model)."""
        task = self.store.get(name)[0].task_settings  # loaded (and cached) by the store
        if not task:
            return {}, ""
        lengths = qa_lengths(task)
        data = Path(str(task.get("data", "SQuAD"))).name
        base = base_model(task)
        return lengths, (
            f"fine-tuned from {base} on {data}, articles 1-{task.get('train_articles', '?')} "
            f"(the rest held out), windows of {lengths.get('max_seq_length', '?')} tokens"
        )

    @handler(Answer)
    @remembered()
    def answer(self, model_name, question, context, top_k=3, theme="light"):
        """-> (context with the answer highlighted, start/end probabilities, n-best table, their CSV, status)."""
        model, tokenizer = self.store.model_for(model_name, "answer")
        q = text_input(question, "the question")
        c = text_input(context, "the context")
        _, trained = self.training(model_name)  # explore reads with the windows it was trained with
        result = explore.answer(model, tokenizer, q, c, top_k=int_input(top_k, "answers shown", 1, 20))
        if not result.spans:
            raise UserError("no answer span found in the context")
        best = result.spans[0]
        # one piece per word: a projected context wraps between words, and the answer stays in its line
        highlighted = [*word_chips(c[: best.start]), (c[best.start : best.end], "answer"), *word_chips(c[best.end :])]
        table = {
            "headers": ["rank", "answer", "score", "probability", "characters"],
            "data": [
                [i, s.text, round(s.score, 2), round(s.probability, 3), f"{s.start}-{s.end}"]
                for i, s in enumerate(result.spans, 1)
            ],
        }
        note = unknown_note(tokenizer, q, c)
        note += "the context was long: it was read in several overlapping pieces; " if result.num_windows > 1 else ""
        note += "the question was cut to fit; " if result.question_truncated else ""
        detail = f"the best span's probability {best.probability:.2f} among the {len(result.spans)} shown"
        if result.tokens and result.tokens[0] == "[CLS]":
            detail += f"; P(start = [CLS]) = {result.start_probs[0]:.2f} (the model's score for “no answer here”)"
        detail += f"; context read in {result.num_windows} overlapping windows" if result.num_windows > 1 else ""
        detail += f"; this model was {trained}" if trained else ""
        fig = plotly_figures.span_probabilities(result, theme=theme_input(theme))
        plain = f"{note}answer: “{best.text}” (the words the model marked in the context)"
        return Answer(highlighted, fig, table, self.ctx.csv.keep(fig), said(plain, detail))

    @handler(WhyView)
    def why(self, model_name, question, context, method="integrated gradients", theme="light"):
        """What the answer span rests on (the log-odds of its start plus those of its end, in the
        first window of [CLS] question [SEP] context [SEP]) -> (shaded tokens, figure, CSV, status)."""
        model, tokenizer = self.store.model_for(model_name, "answer")
        q = text_input(question, "the question")
        c = text_input(context, "the context")
        how = why_method(method)
        result = self.ctx.attributions.get(
            ("answer", model_name, q, c, how),
            lambda: explore.attributions(
                model, tokenizer, q, c, target="span", method=how, steps=WHY_STEPS, task="answer"
            ),
        )
        return why_view(self.ctx, model, tokenizer, result, theme, q, c)

    def opening(self, model_name, question, context, theme):
        return self.answer(model_name, question, context, 3, theme)

    def build(self):
        ctx, Q = self.ctx, self.ctx.queue
        intro(HELP["qa"])
        with gr.Row():
            model = ctx.model_menu("answer")
            k = gr.Slider(1, 10, value=3, step=1, label="answers shown")
        q0 = QA_EXAMPLES[0][0]
        first = self.opening(model.value, q0, QA_CONTEXT, "light")
        q = gr.Textbox(label="Question", value=q0, elem_id="qa-question")
        c = gr.Textbox(label="Context", value=QA_CONTEXT, lines=5, elem_id="qa-context")
        btn = gr.Button("Answer", variant="primary", elem_id="qa-answer")
        status = status_box(elem_id="qa-status", value=first.status)
        span = gr.HighlightedText(
            first.span, label="Answer in its context", color_map={"answer": "#22c55e"}, elem_id="qa-span"
        )
        probs = plot("start / end probabilities", first.probabilities)
        table = gr.Dataframe(first.table, label="best answers", interactive=False, wrap=True)  # whole answers
        csv = self.ctx.csv.box(first.csv)
        gr.Examples(QA_EXAMPLES, [q, c], cache_examples=False)
        why_first = self.why(model.value, q0, QA_CONTEXT, "integrated gradients", "light")
        method, why_btn, *why_outputs = why_box(self.ctx, "qa", why_first, HELP["why"])
        why_ev = why_btn.click(
            self.why, [model, q, c, method, ctx.theme], why_outputs, api_name="why_answer", **ctx.slow_queue
        )
        inputs = [model, q, c, k, ctx.theme]
        outputs = in_order(Answer, span=span, probabilities=probs, table=table, csv=csv, status=status)
        ev = btn.click(self.answer, inputs, outputs, api_name="answer", **Q)
        run = (self.answer, inputs, Q)
        entered = submit([q, c], *run[:2], outputs, Q)  # Enter in the question; Shift+Enter in the context
        main = ctx.current.view(
            "qa", "Answer", inputs, outputs, [ev, *entered], rerun=[(model, "input"), (k, "input")], run=run
        )
        ctx.current.view("qa-why", "Why?", [model, q, c, method, ctx.theme], why_outputs, [why_ev])
        theme_redraw(ctx, theme_watch(ctx), main, run)  # the page's theme switched: the figure drawn again
        ctx.links.share(qa_model=model, qa_q=q, qa_c=c)
        if ctx.rounds:  # the teacher's "Ask the class" row (dashboard.rounds)
            ctx.rounds.ask_row("answer_span", [model, q, c], lambda m, x, y: {"model": m, "question": x, "text": y})
        ctx.links.opening(self.opening, [model, q, c], outputs, first, (model.value, q0, QA_CONTEXT))
