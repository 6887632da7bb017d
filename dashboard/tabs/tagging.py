"""Tag words: a token classifier's tag for every word (named entities or parts of speech), each
word in its tag's colour, its pieces joined (the tag is read at the first one), the probability
of its tag and of the runner-up."""

from __future__ import annotations

import html
from pathlib import Path
from typing import NamedTuple

import gradio as gr

from lab.checkpoint import tag_settings
from lab.data import tag_metrics, tagged_files
from lab.inspect import explore

from ..common import (
    UserError,
    base_model,
    handler,
    in_order,
    remembered,
    said,
    status_box,
    status_html,
    text_input,
    unknown_note,
)
from ..current import submit
from ..help import HELP, TAG_EXAMPLES, tag_colors
from ..room import intro

NO_TAGGER = (
    "no tagging model here yet: make one with python -m lab finetune-tag --model models/bert-lab-classroom "
    "--train TRAIN.iob2 --eval EVAL.iob2 --out runs/ner, then add runs/ner in the Model tab"
)
TABLE_HEADERS = ["word", "pieces", "tag", "probability", "runner-up", "runner-up probability"]
CLICK_HINT = "click a word: its tag's probability, the runner-up and its pieces"
# A word's tag less probable than its runner-up: only Viterbi decoding picks that (argmax never does)
VITERBI_WHY = (
    "{tag} is less probable than {runner} on its own, but the tags are read as the best whole sequence IOB2 "
    "allows (Viterbi): an I- tag must continue the entity before it, so the likelier tag would break the sequence"
)


ENTITY_WORDS = {"PER": ("person", "people"), "LOC": ("place", "places"), "ORG": ("organisation", "organisations")}


def entity_words(tags) -> str:
    """The names a tagger found, in plain words: "3 entities (names): 2 people, 1 place"."""
    found = tag_metrics.get_entities(list(tags))
    if not found:
        return "no entities (names of people, places or organisations)"
    counts: dict[str, int] = {}
    for kind, _, _ in found:
        counts[kind] = counts.get(kind, 0) + 1
    parts = []
    for kind, n in counts.items():
        one, many = ENTITY_WORDS.get(kind, (f"{kind} name", f"{kind} names"))
        parts.append(f"{n} {one if n == 1 else many}")
    return f"{len(found)} {'entity' if len(found) == 1 else 'entities'} (names): {', '.join(parts)}"


class Tags(NamedTuple):
    """What Tag shows: the words in their tags' colours (a HighlightedText update), the table of
    words, the line under the words (the click hint, then a clicked word), the status line."""

    words: object
    table: dict
    detail: str
    status: str


class Tagging:
    name, id = "Tag words", "tag"

    def __init__(self, ctx):
        self.ctx, self.store = ctx, ctx.store

    def training(self, name: str) -> tuple[dict, str]:
        """A tagger's windows and decoding and what it was fine-tuned on, from its task settings
        (task_config.json, written by python -m lab finetune-tag, read by lab.load):
        ({max_seq_length, doc_stride, decoding}, a phrase for the page);
        ({}, "") for a model without one (e.g. a Hub model)."""
        task = self.store.get(name)[0].task_settings  # loaded (and cached) by the store
        windows = tag_settings(task)  # how it was trained and evaluated: windows, argmax or IOB2 Viterbi
        if task.get("task") != "tagging":
            return windows, ""
        base = base_model(task)
        how = "its head trained on frozen features" if task.get("mode") == "features" else "fine-tuned"
        read = "; tags read as the best sequence IOB2 allows (Viterbi)" if task.get("decoding") == "viterbi" else ""
        return windows, f"{how} from {base} on {Path(str(task.get('train', '?'))).name}{read}"

    @handler(Tags)
    @remembered()
    def tag(self, model_name, text):
        """-> (the words in their tags' colours: {"value": [(text, category), ...], "color_map": {category:
        colour}} (an entity type or a tag; None: O and the text between words), the table of words,
        the click hint, status)."""
        if not str(model_name or "").strip() and not self.store.models_for("tag"):
            raise UserError(NO_TAGGER)
        model, tokenizer = self.store.model_for(model_name, "tag")
        text = text_input(text, "the text")
        _, trained = self.training(model_name)
        result = explore.tag(model, tokenizer, text)  # with the windows and decoding it was trained with
        labels = list(model.config.id2label.values())
        entities = all(tagged_files.is_iob2_tag(t) for t in labels)  # IOB2: colour entity types, else the tags

        def category(tag: str) -> str | None:  # B-PER, I-PER -> PER; O -> None (not highlighted); NOUN -> NOUN
            return (None if tag == "O" else tag[2:]) if entities else tag

        categories = list(dict.fromkeys(category(t) for t in labels if category(t)))
        chips = []  # one piece per word, one per space between words (not highlighted): the text as typed
        for i, w in enumerate(result):
            chips.append((text[w.start : w.end], category(w.tag)))
            if i + 1 < len(result) and result[i + 1].start > w.end:
                chips.append((text[w.end : result[i + 1].start], None))
        table = {
            "headers": TABLE_HEADERS,
            "data": [
                [w.word, w.joined, w.tag, round(w.probability, 3), w.runner_up, round(w.runner_up_probability, 3)]
                for w in result
            ],
        }
        what = (
            entity_words([w.tag for w in result]) if entities else f"{len(set(w.tag for w in result))} different tags"
        )
        split = sum(len(w.pieces) > 1 for w in result)
        note = "the text was long: it was read in several overlapping pieces; " * (result.num_windows > 1)
        detail = f"{split} of the words are split into several word pieces (the tag is read at the first piece)"
        if result.num_windows > 1:
            detail += f"; read in {result.num_windows} overlapping windows of {result.max_seq_length} tokens"
        detail += f"; this model was {trained}" if trained else ""
        below = sum(w.runner_up_probability > w.probability for w in result)
        viterbi = (
            f"; {below} word(s) tagged with a less probable tag than the runner-up: the tags are read as the best "
            "whole sequence IOB2 allows (Viterbi), where an I- tag must continue the entity before it"
            if below
            else ""
        )
        status = said(f"{unknown_note(tokenizer, text)}{note}{len(result)} words: {what}{viterbi}", detail)
        words = gr.update(value=chips, color_map=tag_colors(categories))
        return Tags(words, table, status_html(CLICK_HINT), status)

    @staticmethod
    def word_detail(chips, table, evt: gr.SelectData):
        """A click on a word: its tag and probability, the runner-up, its pieces (from the table)."""
        index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        if not isinstance(index, int) or chips is None or table is None:
            return gr.update()
        texts = [c[0] if isinstance(c, (list, tuple)) else c.get("token", "") for c in chips]
        if not 0 <= index < len(texts) or not texts[index].strip():  # the space between two words
            return gr.update()
        row = sum(1 for t in texts[:index] if t.strip())  # words before this chip
        if row >= len(table) or len(table[row]) < len(TABLE_HEADERS):
            return gr.update()
        word, pieces, tag, p, runner, q = table[row][: len(TABLE_HEADERS)]
        pieces = str(pieces).split(" ")
        read = (
            f"; {len(pieces)} pieces, {' '.join(pieces)}: the tag is read at “{pieces[0]}”" if len(pieces) > 1 else ""
        )
        why = f"; {VITERBI_WHY.format(tag=tag, runner=runner)}" if float(q) > float(p) else ""
        return status_html(f"“{word}”: {tag} ({float(p):.1%}), runner-up {runner or '—'} ({float(q):.1%}){why}{read}")

    def opening(self, model_name, text, theme):
        return self.tag(model_name, text)

    def menu(self) -> gr.Dropdown:
        """The model menu: the models serving "tag"; with none yet, an empty menu (refreshed when
        a model is added), not a search through every model for a default."""
        if self.store.models_for("tag"):
            return self.ctx.model_menu("tag")
        menu = gr.Dropdown(choices=[], value=None, label="Model", allow_custom_value=True, scale=2)
        self.ctx.menus.append((menu, "tag"))
        return menu

    def build(self):
        ctx, Q = self.ctx, self.ctx.queue
        intro(HELP["tag"])
        model = self.menu()
        example = TAG_EXAMPLES[0][0]
        first = self.opening(model.value, example, "light")
        text = gr.Textbox(label="Text", value=example, lines=2, elem_id="tag-text")
        btn = gr.Button("Tag", variant="primary", elem_id="tag-run")
        status = status_box(elem_id="tag-status", value=html.unescape(first.status))  # escaped once, by status_box
        opened = first.words if isinstance(first.words, dict) else {}
        words = gr.HighlightedText(
            opened.get("value"),
            label="Each word in its tag's colour (click a word)",
            color_map=opened.get("color_map") or {},
            show_inline_category=True,  # each word's tag in text beside it (its legend): not said by colour alone
            interactive=False,
            elem_id="tag-words",
        )
        detail = status_box(elem_id="tag-detail", value=html.unescape(first.detail or ""))
        table = gr.Dataframe(
            first.table, headers=TABLE_HEADERS, label="every word", interactive=False, type="array", elem_id="tag-table"
        )
        gr.Examples(TAG_EXAMPLES, [text], cache_examples=False)
        inputs, outputs = [model, text], in_order(Tags, words=words, table=table, detail=detail, status=status)
        ev = btn.click(self.tag, inputs, outputs, api_name="tag", **Q)
        run = (self.tag, inputs, Q)
        ctx.current.view(
            "tag",
            "Tag",
            inputs,
            outputs,
            [ev, *submit([text], *run[:2], outputs, Q)],
            rerun=[(model, "input")],
            run=run,
        )
        words.select(self.word_detail, [words, table], detail, api_visibility="private", queue=False)
        ctx.links.share(tag_model=model, tag_text=text)
        ctx.links.opening(self.opening, inputs, outputs, first, (model.value, example))
