"""Masked LM: fill-mask with top-k bars, click a word to mask it, the guess at every layer (logit
lens), the 80/10/10 corruption preview."""

from __future__ import annotations

import re
from typing import NamedTuple

import gradio as gr

from lab.figures import plotly_figures
from lab.inspect import explore

from ..common import (
    MAX_TEXT_CHARS,
    WHY_STEPS,
    FigureView,
    StatusLine,
    UserError,
    WhyView,
    float_input,
    handler,
    in_order,
    int_input,
    masked_text,
    plot,
    remembered,
    status_box,
    status_html,
    text_input,
    theme_input,
    theme_redraw,
    theme_watch,
    truncation_note,
    unknown_note,
    why_box,
    why_method,
    why_view,
)
from ..common import (
    said as say,
)
from ..current import submit
from ..help import CORRUPTION_COLORS, HELP, MLM_EXAMPLES
from ..room import intro

WORD = re.compile(r"\[MASK\]|[\w'’-]+|[^\w\s]")
ANY_CASE_MASK = re.compile(r"\[\s*mask\s*\]", re.IGNORECASE)
TALLY_DRAWS = 1000  # corruptions of the text the status line tallies: the 80/10/10 split shows
SEEDS_SHOWN = 10  # seeds whose choices the table lists: different seeds choose different tokens


class Predictions(NamedTuple):
    """What Predict shows: the sentence with each [MASK] filled, the bars, their CSV, the line."""

    filled: list
    bars: object
    csv: object
    status: str


class Corruption(NamedTuple):
    """The 80/10/10 corruption of the sentence, and the line with the tally and the seeds' table."""

    chips: list
    status: str


class MaskedLM:
    name, id = "Masked LM", "mlm"

    def __init__(self, ctx):
        self.ctx, self.store = ctx, ctx.store

    # handlers ------------------------------------------------------------------------------
    @handler(Predictions)
    @remembered()
    def fill_mask(self, model_name, text, top_k=5, temperature=1.0, theme="light"):
        """Sentence with [MASK]s -> (sentence with the best guesses, top-k bars per mask, their CSV, status)."""
        model, tokenizer = self.store.model_for(model_name, "fill_mask")
        text = masked_text(text)
        result = explore.fill_mask(
            model,
            tokenizer,
            text,
            top_k=int_input(top_k, "top k", 1, 50),
            temperature=float_input(temperature, "the temperature", 0.05, 20),
        )
        # the sentence as WordPiece tokens with each [MASK] replaced by its top guess, highlighted
        filled, masks = [], iter(result)
        specials = set(tokenizer.convert_ids_to_tokens([tokenizer.cls_token_id, tokenizer.sep_token_id]))
        for i, tok in enumerate(result.tokens):
            if tok in specials:
                continue
            if i in result.mask_positions:
                guess = next(masks)[0][0]  # a word piece (##ing) is marked as one
                filled.append((guess, "guess (word piece)" if guess.startswith("##") else "guess"))
            else:
                filled.append((tok, None))
            filled.append((" ", None))
        bars = plotly_figures.fill_mask_bars(result, theme=theme_input(theme))
        note = truncation_note(result.truncated, model.config.max_position_embeddings)
        note += unknown_note(tokenizer, text)
        return Predictions(filled, bars, self.ctx.csv.keep(bars), f"{note}{len(result)} mask(s) predicted")

    @handler(FigureView)
    @remembered()
    def lens(self, model_name, text, theme="light"):
        """The guess at every layer (explore.logit_lens) -> (figure, its CSV, status)."""
        model, tokenizer = self.store.model_for(model_name, "fill_mask")
        result = explore.logit_lens(model, tokenizer, masked_text(text), top_k=5)
        fig = plotly_figures.logit_lens(result, theme=theme_input(theme))
        note = truncation_note(result.truncated, model.config.max_position_embeddings)
        note += unknown_note(tokenizer, text)
        said = []
        for k, final in enumerate(result.final[:3]):
            first = result.first_layer_right(k)
            where = "the embeddings" if first == 0 else f"layer {first}"
            said.append(f"[MASK] {k + 1}: “{final}” is the top guess from {where} on")
        detail = (
            f"a logit lens (nostalgebraist 2020): the model's own masked-LM head reads the vector of every layer, "
            f"0 (the embeddings) to {model.config.num_hidden_layers}; the top 5 guesses per layer"
        )
        return FigureView(fig, self.ctx.csv.keep(fig), say(note + "; ".join(said), detail))

    @handler(WhyView)
    def why(self, model_name, text, method="integrated gradients", theme="light"):
        """What the first [MASK]'s best guess rests on -> (shaded tokens, figure, its CSV, status)."""
        model, tokenizer = self.store.model_for(model_name, "fill_mask")
        text, how = masked_text(text), why_method(method)
        result = self.ctx.attributions.get(
            ("fill_mask", model_name, text, how),
            lambda: explore.attributions(model, tokenizer, text, method=how, steps=WHY_STEPS, task="fill_mask"),
        )
        return why_view(self.ctx, model, tokenizer, result, theme, text)

    @staticmethod
    def words(text):
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

    @staticmethod
    @handler(1)
    def mask_word(text, index):
        """Replace the index-th word of the text (counting words and punctuation, from 0) by [MASK]."""
        text = text_input(text, "the sentence")
        matches = list(WORD.finditer(text))
        index = int_input(index, "the word index", 0, MAX_TEXT_CHARS)
        if not 0 <= index < len(matches):
            raise UserError(f"word {index} does not exist: the sentence has {len(matches)} words")
        m = matches[index]
        return text[: m.start()] + "[MASK]" + text[m.end() :], f"masked “{m.group()}”"

    def on_word_select(self, model_name, text, top_k, temperature, theme, evt: gr.SelectData):
        """A click on a word: mask it and predict, in one event (one writer of the status line)."""
        index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        if not isinstance(index, int) or index % 2:  # a space between two words
            return gr.update(), gr.update(), gr.update(), gr.update(), gr.update()
        new_text, status = self.mask_word(text, index // 2)
        if new_text is None:  # the message is in status
            return gr.update(), None, None, None, status
        return (new_text, *self.fill_mask(model_name, new_text, top_k, temperature, theme))

    @handler(Corruption)
    def corrupt(self, model_name, text, seed=0):
        """The 80/10/10 corruption pre-training would apply to this text, for a seed, shown in full:
        the line for this seed, the tally of TALLY_DRAWS draws and what the next SEEDS_SHOWN seeds
        choose. A sentence with [MASK]s is corrupted with each [MASK] replaced by the model's top guess
        (pre-training corrupts whole sentences, never one already masked)."""
        text = masked_text(text)
        seed = int_input(seed, "the seed", 0, 2**32 - 1 - SEEDS_SHOWN)
        text, filled_note = self._unmasked(model_name, text)
        _, tokenizer = self.store.get(model_name)
        prev = explore.corruption_preview(tokenizer, text, seed=seed)
        c = prev.counts
        if not c["chosen"]:
            nothing = "no token can be chosen: the text has no word to hide ([CLS] and [SEP] never are)"
            return Corruption(self._chips(prev), nothing)
        tally = explore.corruption_tally(tokenizer, text, draws=TALLY_DRAWS, seed=seed)
        shares = {kind: tally[kind] / tally["chosen"] for kind in ("mask", "random", "keep")}
        line = (
            f"{c['chosen']} of {c['tokens']} tokens chosen with seed {seed} (15% of {c['tokens']}, rounded: "
            f"{c['chosen'] / c['tokens']:.0%}): "
            f"{c['mask']} → [MASK], {c['random']} → a random token, {c['keep']} kept; the model must guess all "
            f"{c['chosen']}. {filled_note}"
        )
        tally_line = (
            f"Over {tally['draws']:,} draws of the same rule on this text, the {tally['chosen']:,} chosen tokens "
            f"became [MASK] {shares['mask']:.0%}, random {shares['random']:.0%}, kept {shares['keep']:.0%} "
            "(the paper's rule: 80%, 10%, 10%): one draw of a short sentence chooses one token or two, so a "
            "single seed rarely shows a random or a kept one."
        )
        rows = "".join(self._seed_row(tokenizer, text, s) for s in range(seed, seed + SEEDS_SHOWN))
        table = (
            f'<table class="bl-seeds"><caption>Seeds {seed} to {seed + SEEDS_SHOWN - 1}: what each chooses '
            "</caption><thead><tr><th scope=col>seed</th><th scope=col>chosen token → what the model sees"
            f"</th></tr></thead><tbody>{rows}</tbody></table>"
        )
        return Corruption(
            self._chips(prev),
            StatusLine(f"{status_html(line)}<p><strong>{status_html(tally_line)}</strong></p>{table}"),
        )

    def _unmasked(self, model_name, text):
        """(the text with each [MASK] replaced by the model's top guess, a note saying so) or (text, "")."""
        if "[MASK]" not in text:
            return text, ""
        model, tokenizer = self.store.model_for(model_name, "fill_mask")
        result = explore.fill_mask(model, tokenizer, text, top_k=1)
        guesses = iter(result)
        specials = set(tokenizer.convert_ids_to_tokens([tokenizer.cls_token_id, tokenizer.sep_token_id]))
        words = [next(guesses)[0][0] if i in result.mask_positions else tok for i, tok in enumerate(result.tokens)]
        filled = " ".join(w for w in words if w not in specials).replace(" ##", "")
        return (
            filled,
            f"The sentence corrupted is yours with each [MASK] replaced by the model's top guess: “{filled}”.",
        )

    @staticmethod
    def _chips(prev):
        out = []
        for seen, kind, label in zip(prev.corrupted, prev.kinds, prev.labels):
            if kind is None:
                out.append((seen, None))
            elif kind == "keep":
                out.append((seen, "kept (10%)"))
            else:
                out.append((f"{seen} ← {label}", "[MASK] (80%)" if kind == "mask" else "random (10%)"))
            out.append((" ", None))
        return out

    @staticmethod
    def _seed_row(tokenizer, text, seed) -> str:
        """One seed's choice as a table row: each chosen token, quoted, and what the model sees."""
        prev = explore.corruption_preview(tokenizer, text, seed=seed)
        picks = [
            f"“{label}” → " + ("kept" if kind == "keep" else "[MASK]" if kind == "mask" else f"“{seen}” (random)")
            for seen, kind, label in zip(prev.corrupted, prev.kinds, prev.labels)
            if kind
        ]
        return f"<tr><td>{seed}</td><td>{status_html('; '.join(picks))}</td></tr>"

    def opening(self, model_name, text, theme):
        """What the tab shows when a page opens: the example predicted."""
        return self.fill_mask(model_name, text, 5, 1.0, theme)

    # layout --------------------------------------------------------------------------------
    def build(self):
        ctx, Q = self.ctx, self.ctx.queue
        intro(HELP["mlm"])
        with gr.Row():
            model = ctx.model_menu("fill_mask")
            top_k = gr.Slider(1, 20, value=5, step=1, label="top k")
            temperature = gr.Slider(0.1, 5, value=1.0, step=0.1, label="temperature")
        example = MLM_EXAMPLES[0][0]
        first = self.opening(model.value, example, "light")
        text = gr.Textbox(label="Sentence", value=example, elem_id="mlm-text")
        words = gr.HighlightedText(
            self.words(example),
            label="Click a word to mask it",
            interactive=False,
            elem_id="mlm-words",
            color_map={"masked": "#f97316"},
        )
        btn = gr.Button("Predict", variant="primary", elem_id="mlm-predict")
        status = status_box(elem_id="mlm-status", value=first.status)
        filled = gr.HighlightedText(
            first.filled,
            label="Best guesses",
            elem_id="mlm-filled",
            color_map={"guess": "#22c55e", "guess (word piece)": "#a3e635"},
        )
        bars = plot("best guesses at each [MASK] and their probabilities", first.bars, elem_id="mlm-bars")
        bars_csv = self.ctx.csv.box(first.csv)
        gr.Examples(MLM_EXAMPLES, [text], cache_examples=False)
        self._panels(model, text, example)
        inputs = [model, text, top_k, temperature, ctx.theme]
        outputs = in_order(Predictions, filled=filled, bars=bars, csv=bars_csv, status=status)
        ev = btn.click(self.fill_mask, inputs, outputs, api_name="fill_mask", **Q)
        text.change(
            self.words, text, words, api_name="words", show_progress="hidden", queue=False, trigger_mode="always_last"
        )
        picked = words.select(self.on_word_select, inputs, [text, *outputs], api_visibility="private", **Q)
        gr.Button("mask word", visible=False).click(
            self.mask_word, [text, gr.Number(visible=False)], [text, status], api_name="mask_word", **Q
        )
        current, run = ctx.current, (self.fill_mask, inputs, Q)
        main = current.view(
            "mlm",
            "Predict",
            inputs,
            outputs,
            [ev, picked, *submit([text], *run[:2], outputs, Q)],
            rerun=[(model, "input"), (top_k, "input"), (temperature, "input")],
            run=run,
        )
        theme_redraw(ctx, theme_watch(ctx), main, run)  # the page's theme switched: the bars drawn again
        ctx.links.share(mlm_model=model, mlm_text=text)
        if ctx.rounds:  # the teacher's "Ask the class" row (dashboard.rounds)
            ctx.rounds.ask_row("masked_word", [model, text], lambda m, t: {"model": m, "text": t})
        ctx.links.opening(self.opening, [model, text], outputs, first, (model.value, example))

    def _panels(self, model, text, example) -> None:
        """The panels under the predictions (layer by layer, why?, the 80/10/10 corruption), drawn
        for the example where they open drawn, and their events."""
        ctx, Q = self.ctx, self.ctx.queue
        lens_first = self.lens(model.value, example, "light")
        with gr.Accordion("Layer by layer: the guess at every layer (logit lens)", open=False, elem_id="mlm-lens-box"):
            gr.Markdown(HELP["lens"])
            lens_btn = gr.Button("Read every layer", elem_id="mlm-lens-button")
            lens_status = status_box(elem_id="mlm-lens-status", value=lens_first.status)
            lens_plot = plot("the top guesses at every layer", lens_first.figure, elem_id="mlm-lens")
            lens_csv = self.ctx.csv.box(lens_first.csv)
        why_first = self.why(model.value, example, "integrated gradients", "light")
        method, why_btn, *why_outputs = why_box(self.ctx, "mlm", why_first, HELP["why"])
        with gr.Accordion("What the model saw in pre-training: the 80/10/10 corruption", open=False):
            gr.Markdown(HELP["corrupt"])
            seed = gr.Number(value=0, precision=0, label="seed")
            corrupt_btn = gr.Button("Corrupt this sentence")
            corrupted = gr.HighlightedText(
                label="15% chosen: 80% [MASK], 10% random, 10% kept",
                show_inline_category=True,  # each chosen token's kind in text beside it: not by colour alone
                color_map=CORRUPTION_COLORS,
            )
            corrupt_status = status_box()
        corrupt_outputs = in_order(Corruption, chips=corrupted, status=corrupt_status)
        corrupt_ev = corrupt_btn.click(self.corrupt, [model, text, seed], corrupt_outputs, api_name="corrupt", **Q)
        lens_outputs = in_order(FigureView, figure=lens_plot, csv=lens_csv, status=lens_status)
        lens_ev = lens_btn.click(self.lens, [model, text, ctx.theme], lens_outputs, api_name="logit_lens", **Q)
        why_ev = why_btn.click(
            self.why, [model, text, method, ctx.theme], why_outputs, api_name="why_fill_mask", **ctx.slow_queue
        )
        current = ctx.current
        current.view("mlm-lens", "Read every layer", [model, text, ctx.theme], lens_outputs, [lens_ev])
        current.view("mlm-why", "Why?", [model, text, method, ctx.theme], why_outputs, [why_ev])
        current.view(
            "mlm-corrupt",
            "Corrupt this sentence",
            [model, text, seed],
            corrupt_outputs,
            [corrupt_ev],
            shown=False,
        )
