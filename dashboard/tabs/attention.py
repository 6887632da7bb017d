"""Attention: one head and the layer's heads as heatmaps, click a token to follow it, Clark et al.'s
head statistics, silencing each head (Michel et al.), and bertviz's views drawn offline."""

from __future__ import annotations

import functools
from typing import NamedTuple

import gradio as gr

from lab.figures import bertviz_offline, numbers, plotly_figures
from lab.inspect import attribution, explore

from ..common import (
    WHY_STEPS,
    FigureView,
    UserError,
    handler,
    in_order,
    int_input,
    masked_text,
    notice,
    optional_text,
    plot,
    said,
    status_box,
    status_html,
    text_input,
    theme_input,
    theme_redraw,
    theme_watch,
    truncation_note,
    unknown_note,
)
from ..current import submit
from ..help import HELP, MLM_EXAMPLES, NSP_EXAMPLES
from ..room import PRESENTER_NOTE, intro, reveal

STAT_NAMES = {
    "cls": "[CLS]",
    "sep": "[SEP]",
    "self": "itself",
    "prev": "previous token",
    "next": "next token",
    "entropy": "entropy (nats)",
}


def layer_and_head(model, layer, head) -> tuple[int, int]:
    """The page's layer and head checked against the model's shape (a clear message if not)."""
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    return (
        int_input(layer, f"the layer (this model has {L})", 0, L - 1),
        int_input(head, f"the head (this model has {A} per layer)", 0, A - 1),
    )


def agreement(spearman: float) -> str:
    """How closely two rankings of the same tokens agree, in words (from Spearman's rho)."""
    if spearman != spearman:
        return "Too few words to compare."
    if spearman >= 0.6:
        return "Mostly yes: the two rank the words alike."
    if spearman >= 0.3:
        return "Partly: the two rank the words somewhat alike."
    if spearman > -0.3:
        return "Hardly: attention is not the explanation here."
    return "No: they rank the words almost the other way round."


class Maps(NamedTuple):
    """What Show attention shows: one head's map, the layer's heads, the head statistics table,
    the tokens to click, the head's CSV, the line."""

    heatmap: object
    grid: object
    table: dict
    tokens: list
    csv: object
    status: str


# What the tab opens with: the maps, and the head statistics' heatmaps and their CSV.
Opening = NamedTuple("Opening", [*Maps.__annotations__.items(), ("stats", object), ("stats_csv", object)])


class Attention:
    name, id = "Attention", "attention"

    def __init__(self, ctx):
        self.ctx, self.store = ctx, ctx.store
        # the same request (a class on the tab's example) is answered from a small cache of this
        # page's: the figures are the costly part
        self._views = functools.lru_cache(maxsize=64)(self._compute_views)

    def _request(self, model_name, text_a, text_b, layer=0, head=0):
        model, tokenizer = self.store.model_for(model_name, "attention")
        a = text_input(text_a, "sentence A")
        b = optional_text(text_b, "sentence B")
        layer, head = layer_and_head(model, layer, head)
        return model, explore.attention(model, tokenizer, a, b), layer, head

    # handlers ------------------------------------------------------------------------------
    @handler(Maps)
    def attention(self, model_name, text_a, text_b="", layer=0, head=0, theme="light"):
        """-> (heatmap of one head, grid of the layer's heads, head statistics table, the tokens to
        click, the head's CSV, status)."""
        return self._views(
            *(str(v) if v is not None else "" for v in (model_name, text_a, text_b, layer, head)), theme_input(theme)
        )

    def _compute_views(self, model_name, text_a, text_b, layer, head, theme):
        model, result, layer, head = self._request(model_name, text_a, text_b, layer, head)
        stats = result.head_stats()
        L, A = stats["entropy"].shape
        table = [
            [f"{i}", f"{h}"] + [round(float(stats[k][i, h]), 3) for k in STAT_NAMES] for i in range(L) for h in range(A)
        ]
        one = plotly_figures.attention_heatmap(result, layer, head, theme=theme)
        chips = [c for t in result.tokens for c in ((t, None), (" ", None))]
        note = truncation_note(result.truncated, model.config.max_position_embeddings, pair=bool(text_b.strip()))
        note += unknown_note(self.store.get(model_name)[1], text_a, text_b)
        plain = (
            f"{note}{len(result.tokens)} tokens; this model has {L} layers x {A} heads. Each row of a map is one word "
            "looking at the others (darker: more); click a token below the maps to follow it"
        )
        detail = (
            f"layer {layer}, head {head}: each row is a softmax over the {len(result.tokens)} keys (it sums to 1); the "
            "table gives each head's average attention to [CLS], [SEP], itself, the previous and next token, and its "
            "entropy (Clark et al. 2019)"
        )
        return Maps(
            one,
            plotly_figures.attention_grid(result, layer, theme=theme),
            {"headers": ["layer", "head", *STAT_NAMES.values()], "data": table},
            chips,
            self.ctx.csv.keep(one),
            said(plain, detail),
        )

    @handler(1)
    def attention_token(self, model_name, text_a, text_b, layer, head, theme, evt: gr.SelectData):
        """A click on a token: the head with that token's row (where it attends) and column (what
        attends to it) outlined, and both as bars."""
        index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        if not isinstance(index, int) or index % 2:  # a space between two tokens
            return gr.update(), ""
        _, result, layer, head = self._request(model_name, text_a, text_b, layer, head)
        token = index // 2
        if token >= len(result.tokens):
            raise UserError("that token is no longer in the text: press Show attention again")
        return (
            plotly_figures.attention_focus(result, layer, head, token, theme=theme_input(theme)),
            f"token {token} “{result.tokens[token]}”: its row is where it attends, its column what attends to it",
        )

    @handler(FigureView)
    def head_stats(self, model_name, text_a, text_b="", theme="light"):
        """Clark et al.'s statistics of every head as small [layers x heads] heatmaps (and their CSV)."""
        _, result, _, _ = self._request(model_name, text_a, text_b)
        fig = plotly_figures.head_stats_heatmaps(result.head_stats(), theme=theme_input(theme))
        return FigureView(fig, self.ctx.csv.keep(fig), "")

    @handler(FigureView)
    def ablate(self, model_name, text, theme="light", progress=gr.Progress()):
        """Silence each head in turn: the change in masked-token loss (L x heads heatmap)."""
        model, tokenizer = self.store.model_for(model_name, "fill_mask")
        text = masked_text(text)
        progress(0, desc="silencing each head")
        result = explore.ablate_heads(model, tokenizer, text)
        worst = divmod(int(result.effect.argmax()), result.effect.shape[1])
        fig = plotly_figures.ablation_heatmap(result, theme=theme_input(theme))
        plain = (
            f"{unknown_note(tokenizer, text)}Silencing layer {worst[0]} head {worst[1]} hurts most: without it the "
            "masked word is hardest to guess"
        )
        detail = (
            f"baseline loss {result.baseline:.3f} (cross-entropy of the masked words, in nats); silencing layer "
            f"{worst[0]} head {worst[1]} raises it by {float(result.effect.max()):.3f} (after Michel et al. 2019)"
        )
        return FigureView(fig, self.ctx.csv.keep(fig), said(plain, detail))

    @handler(FigureView)
    def attribution_attention(self, model_name, text_a, text_b="", theme="light"):
        """Attribution beside the attention [CLS] pays in the last layer -> (figure, CSV, status).
        What is attributed: a classifier's label; a pre-trained model's NSP answer (sentence B
        given) or its first [MASK]'s guess (no B); a QA model's span (A the question, B the context)."""
        model, tokenizer = self.store.model_for(model_name, "attention")
        a = text_input(text_a, "sentence A")
        b = optional_text(text_b, "sentence B")
        tasks = explore.model_tasks(model)
        if "classify" in tasks:
            task = "classify"
        elif "answer" in tasks:
            task = "answer"
            if b is None:
                raise UserError("a QA model answers a question (sentence A) from a context: give sentence B")
        elif "next_sentence" in tasks and b is not None:
            task = "next_sentence"
        elif "fill_mask" in tasks:
            task = "fill_mask"
            if "[MASK]" not in masked_text(a):
                raise UserError(
                    "give sentence B (the NSP head's answer is attributed) or write [MASK] in sentence A "
                    "(its best guess is attributed)"
                )
            a = masked_text(a)
        else:
            raise UserError(
                f"this model ({type(model).__name__}) has no head whose answer could be attributed: pick a "
                f"pre-trained model, a classifier or a QA model"
            )
        result = explore.attributions(model, tokenizer, a, b, steps=WHY_STEPS, task=task)
        att = explore.attention(model, tokenizer, a, b)
        comparison = attribution.attention_vs_attribution(att, result)
        fig = plotly_figures.attention_vs_attribution(comparison, result, theme=theme_input(theme))
        note = truncation_note(result.truncated, model.config.max_position_embeddings, pair=b is not None)
        note += unknown_note(tokenizer, a, b)
        corr = numbers.correlation_text(comparison.pearson, comparison.spearman)
        plain = (
            f"{note}The answer {result.answer}: do the words it rests on (top) get the most attention from [CLS] "
            f"in layer {comparison.layer} (bottom)? {agreement(comparison.spearman)}"
        )
        detail = (
            f"f = the {result.target}; attribution (integrated gradients) vs the attention [CLS] pays in layer "
            f"{comparison.layer} (mean of its heads), over the text's {int(comparison.words.sum())} tokens: {corr}"
        )
        return FigureView(fig, self.ctx.csv.keep(fig), said(plain, detail))

    @handler(1)
    def bertviz_view(self, model_name, text_a, text_b="", view="head", layer=0, head=0):
        """bertviz's interactive head, model or neuron view, drawn offline (lab.figures.bertviz_offline) in
        a sandboxed iframe. The neuron view opens on the tab's layer and head."""
        model, tokenizer = self.store.model_for(model_name, "attention")
        a = text_input(text_a, "sentence A")
        b = optional_text(text_b, "sentence B")
        view = view if view in ("model", "neuron") else "head"
        try:
            if view == "neuron":
                layer, head = layer_and_head(model, layer, head)
                result = explore.queries_and_keys(model, tokenizer, a, b)
                page = bertviz_offline.neuron_view_html(
                    result.queries,
                    result.keys,
                    result.attentions,
                    result.tokens,
                    result.sentence_b_start,
                    layer=layer,
                    head=head,
                )
            else:
                result = explore.attention(model, tokenizer, a, b)
                draw = bertviz_offline.model_view_html if view == "model" else bertviz_offline.head_view_html
                page = draw(result.attentions, result.tokens, result.sentence_b_start)  # ValueError above its cap
        except ImportError as e:
            raise UserError(f"bertviz is not available on this server: {e}") from None
        frame = bertviz_offline.iframe(page, bertviz_offline.frame_height(view, result.attentions))
        note = unknown_note(self.store.get(model_name)[1], a, b)
        return frame, f"{note}bertviz {view} view of {len(result.tokens)} tokens, drawn offline"

    def shape(self, model_name, layer=0, head=0):
        """The layer and head sliders follow the chosen model's shape (keeping a position it has)."""
        try:
            cfg = self.store.get(model_name)[0].config
        except Exception as e:  # reported by the Show button too
            return gr.update(), gr.update(), status_html(notice(str(e)))
        L, A = cfg.num_hidden_layers, cfg.num_attention_heads
        keep = [v if isinstance(v, (int, float)) and 0 <= v < n else 0 for v, n in ((layer, L), (head, A))]
        return gr.Slider(maximum=L - 1, value=keep[0]), gr.Slider(maximum=A - 1, value=keep[1]), gr.update()

    def opening(self, model_name, a, b, layer, head, theme) -> Opening:
        """The example's maps and the head statistics."""
        stats = self.head_stats(model_name, a, b, theme)
        return Opening(*self.attention(model_name, a, b, layer, head, theme), stats.figure, stats.csv)

    # layout --------------------------------------------------------------------------------
    def build(self):
        ctx = self.ctx
        intro(HELP["attention"])
        with gr.Row():
            model = ctx.model_menu("attention")
            # the default model's shape; shape() sets another model's when the model changes (the
            # handlers check the numbers themselves)
            cfg = self.store.get(model.value)[0].config
            layer = gr.Slider(0, cfg.num_hidden_layers - 1, value=0, step=1, label="layer")
            head = gr.Slider(0, cfg.num_attention_heads - 1, value=0, step=1, label="head")
        a0, b0 = NSP_EXAMPLES[0]
        first = self.opening(model.value, a0, b0, 0, 0, "light")
        a = gr.Textbox(label="Sentence A", value=a0)
        b = gr.Textbox(label="Sentence B (optional)", value=b0)
        inputs = [model, a, b, layer, head, ctx.theme]
        views, status = self._maps_panel(inputs, first)
        self._why_panel(model, a, b, (a0, b0))
        self._ablation_panel(model)
        self._bertviz_panel(model, a, b, layer, head)
        model.change(self.shape, [model, layer, head], [layer, head, status], api_visibility="private")
        # the model chosen by hand: the sliders in its shape, then its maps (a link's model: the opening)
        maps = views[: len(Maps._fields)]  # Opening's fields begin with the maps'
        chosen = model.input(self.shape, [model, layer, head], [layer, head, status], api_visibility="private")
        self.maps_done.append(chosen.then(self.attention, inputs, maps, api_visibility="private", **ctx.queue))
        main = ctx.current.view("att", "Show attention", inputs, maps, self.maps_done)
        theme_redraw(ctx, theme_watch(ctx), main, (self.attention, inputs, ctx.queue))  # the theme switched
        ctx.links.share(att_model=model, att_a=a, att_b=b, att_layer=layer, att_head=head)
        if ctx.rounds:  # the teacher's "Ask the class" row (dashboard.rounds): sentence A's words
            fields = lambda m, x, l, h: {"model": m, "text": x, "layer": int(l), "head": int(h)}  # noqa: E731
            ctx.rounds.ask_row("attention", [model, a, layer, head], fields, word=True)
        ctx.links.opening(self.opening, inputs[:-1], views, first, (model.value, a0, b0, 0, 0))

    def _maps_panel(self, inputs, first) -> tuple[list, gr.HTML]:
        """The button, the status line, both maps, the tokens to click and the head statistics, drawn
        with `first` (opening()'s views), and their events -> (the components opening() fills, the
        status line)."""
        Q = self.ctx.queue
        model, a, b, layer, head, theme = inputs
        btn = gr.Button("Show attention", variant="primary")
        status = status_box(value=first.status)
        with gr.Row():  # side by side in a window 1200 px wide or more; one under the other on a 1024 px projector
            with gr.Column(min_width=560):
                heatmap = plot(
                    "one head: hover for the weight; highlight a token from the figure's menu",
                    first.heatmap,
                    "att-heatmap",
                )
            with gr.Column(min_width=560):
                grid = plot("all heads of the layer", first.grid, elem_id="att-grid")
                gr.Markdown(PRESENTER_NOTE, elem_id="att-one-head-note")
        tokens = gr.HighlightedText(
            first.tokens,
            label="Click a token: where it attends (its row) and what attends to it (its column)",
            interactive=False,
            elem_id="att-tokens",
        )
        csv = self.ctx.csv.box(first.csv)
        table = gr.Dataframe(
            first.table, label="what each head looks at: mean attention to ... (Clark et al. 2019)", interactive=False
        )
        stats_btn = gr.Button("Plot the head statistics")
        stats_plot = plot("head statistics (Clark et al. 2019)", first.stats, elem_id="att-stats")
        stats_csv = self.ctx.csv.box(first.stats_csv)
        outputs = in_order(Maps, heatmap=heatmap, grid=grid, table=table, tokens=tokens, csv=csv, status=status)
        done = [btn.click(self.attention, inputs, outputs, api_name="attention", **Q)]
        done += submit([a, b], self.attention, inputs, outputs, Q)
        for slider in (layer, head):
            done.append(
                slider.input(self.attention, inputs, outputs, api_visibility="private", trigger_mode="always_last", **Q)
            )
        clicked = tokens.select(self.attention_token, inputs, [heatmap, status], api_visibility="private", **Q)
        reveal(clicked, "att-heatmap")  # the map is above the tokens: it comes into view
        self.maps_done = done  # the maps' events (build() adds the model menu's, then declares the view)
        stats_ev = stats_btn.click(
            self.head_stats,
            [model, a, b, theme],
            in_order(FigureView, figure=stats_plot, csv=stats_csv, status=status),
            api_name="head_stats",
            **Q,
        )
        stats = [stats_plot, stats_csv]
        self.ctx.current.view("att-stats", "Plot the head statistics", [model, a, b, theme], stats, [stats_ev])
        return in_order(Opening, **dict(zip(Maps._fields, outputs)), stats=stats_plot, stats_csv=stats_csv), status

    def _why_panel(self, model, a, b, example) -> None:
        """Attribution beside attention, drawn for the example (sentences A and B), and its event."""
        first = self.attribution_attention(model.value, *example, "light")
        with gr.Accordion(
            "Attribution beside attention: what the answer rests on vs where [CLS] looks",
            open=False,
            elem_id="att-why-box",
        ):
            gr.Markdown(HELP["why_attention"])
            btn = gr.Button("Compare", elem_id="att-why-button")
            status = status_box(elem_id="att-why-status", value=first.status)
            fig = plot("attribution and [CLS]'s attention", first.figure, elem_id="att-why")
            csv = self.ctx.csv.box(first.csv)
        outputs = in_order(FigureView, figure=fig, csv=csv, status=status)
        ev = btn.click(
            self.attribution_attention,
            [model, a, b, self.ctx.theme],
            outputs,
            api_name="attribution_attention",
            **self.ctx.slow_queue,
        )
        self.ctx.current.view("att-why", "Compare", [model, a, b, self.ctx.theme], outputs, [ev])

    def _ablation_panel(self, model) -> None:
        """Silencing each head in turn, on a sentence of its own, and its events."""
        with gr.Accordion("Silence one head at a time (Michel et al. 2019)", open=False):
            text = gr.Textbox(label="Sentence with [MASK]", value=MLM_EXAMPLES[1][0])
            btn = gr.Button("Silence each head")
            fig = plot("loss change when each head is silenced", elem_id="att-ablation")
            csv = self.ctx.csv.box()
            status = status_box(elem_id="abl-status")
        inputs, outputs = [model, text, self.ctx.theme], in_order(FigureView, figure=fig, csv=csv, status=status)
        done = [btn.click(self.ablate, inputs, outputs, api_name="ablate", **self.ctx.slow_queue)]
        done += submit([text], self.ablate, inputs, outputs, self.ctx.slow_queue)
        self.ctx.current.view("att-ablate", "Silence each head", inputs, outputs, done, shown=False)

    def _bertviz_panel(self, model, a, b, layer, head) -> None:
        """bertviz's three views of the tab's sentences, and its event."""
        with gr.Accordion("bertviz: the head, model and neuron views (Vig 2019), drawn offline", open=False):
            view = gr.Radio(
                ["head", "model", "neuron"],
                value="head",
                label="view",
                info="neuron: the layer and head above, their query and key vectors (click ⊕ beside a token)",
            )
            btn = gr.Button("Show bertviz")
            frame = gr.HTML()
            status = status_box()
        inputs = [model, a, b, view, layer, head]
        ev = btn.click(self.bertviz_view, inputs, [frame, status], api_name="bertviz", **self.ctx.queue)
        self.ctx.current.view("att-bertviz", "Show bertviz", inputs, [frame, status], [ev], shown=False)
