"""The four kinds of round, one class each behind registry.RoundKind: what a student sees and may
answer, what the model answers, and the reveal, where the class's answers stand beside the model's.

    words = round_words(rnd)                     # the words a student taps (answer_span, attention)
    answer = normalize(rnd, words, "3-5")        # a student's answer, checked: "3-5" (words 3 to 5)
    model = model_answer(rnd, store)             # the model's side: its options and probabilities
    tally = Tally.of(rnd, model, answers)        # the class beside the model

An answer is one short text, for the page and the API alike: masked_word a word; next_sentence
IsNext or NotNext; answer_span "first-last" (word numbers from 0); attention a word number.
The functions here ask the round's kind (registry.kind_of); a fifth kind is one more class.
"""

from __future__ import annotations

import html
import re
from collections import Counter

from lab.inspect import explore

from .registry import ModelAnswer, Round, RoundKind, Tally, kind_of, register

MAX_GUESS = 40  # characters of a typed guess
MORE_GUESSES = 3  # the class's guesses shown beside the model's top 5 (the rest in one row)
LABELS = ("IsNext", "NotNext")


class AnswerError(ValueError):
    """An answer the student can fix: the message says what is expected."""


def round_words(rnd: Round) -> list[str]:
    """The words of the round's text a student taps (explore.split_words: punctuation alone)."""
    return [w for w, _, _ in explore.split_words(rnd.text)]


def normalize(rnd: Round, words: list[str], answer) -> str:
    """The student's answer as the class's tally counts it, or an AnswerError saying what to send."""
    return kind_of(rnd).normalize(rnd, words, str(answer if answer is not None else "").strip())


def answer_words(rnd: Round, words: list[str], answer: str) -> str:
    """An answer in words, as the reveal and the export show it."""
    return kind_of(rnd).answer_words(words, answer)


def model_answer(rnd: Round, model, tokenizer) -> ModelAnswer:
    """What the model says, from the same explore call its tab makes (a ValueError as it says)."""
    return kind_of(rnd).model_answer(rnd, model, tokenizer)


def query_word(rnd: Round, spans) -> int:
    """The number of the round's word (its first occurrence) among the text's words."""
    word = rnd.get("word").lower()
    return next((i for i, (w, _, _) in enumerate(spans) if w.lower() == word), 0)


def per_word(spans, offsets, probs) -> dict[str, float]:
    """Token probabilities summed per word of the text (key: the word's number); tokens outside
    the text ([CLS], [SEP], the question) count for no word."""
    out = {str(i): 0.0 for i in range(len(spans))}
    for offset, p in zip(offsets, probs):
        if not offset or offset[1] <= offset[0]:
            continue
        for i, (_, s, e) in enumerate(spans):
            if offset[0] < e and offset[1] > s:
                out[str(i)] += p
                break
    return out


# ----------------------------------------------------------------------------------------------
# What a page shows (HTML, every text escaped: a deck's, a model's and a student's)
# ----------------------------------------------------------------------------------------------
def esc(text) -> str:
    return html.escape(str(text), quote=True)


def question_html(rnd: Round, picked: set[int] = frozenset()) -> str:
    """The round's question as the students read it (the text, the [MASK], the pair, the word)."""
    return kind_of(rnd).question_html(rnd)


def question_text(rnd: Round) -> str:
    """The round's question in plain words, short: what a screen reader says when the round starts."""
    return kind_of(rnd).question_text(rnd)


def short(text, n: int = 90) -> str:
    """A text on one line, cut at a word to at most `n` characters (an ellipsis says it was cut)."""
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[: n - 1].rsplit(" ", 1)[0] + " …"


def _percent(p) -> str:
    return "" if p is None else f"{p:.0%}"


def _commonest(counts, name, answered: int) -> str:
    """The class's commonest answer and how many gave it ("door, 2 of 3"; a tie names each)."""
    if not answered or not counts:
        return "no answers"
    top = max(counts.values())
    tied = [name(a) for a, c in counts.most_common() if c == top]
    if len(tied) > 3:
        return f"{len(tied)} answers tie, {top} of {answered} each"
    shown = tied[0] if len(tied) == 1 else ", ".join(tied[:-1]) + " and " + tied[-1]
    return f"{shown}, {top} of {answered}" + (" each" if len(tied) > 1 else "")


def reveal_summary(rnd: Round, words: list[str], model: ModelAnswer, tally: Tally) -> str:
    """The reveal's figure in one sentence, from its numbers: the class's commonest answer, the
    model's answer and its probability (the figure's accessible name and the page's announcement)."""
    return kind_of(rnd).reveal_summary(rnd, words, model, tally)


def _bar(share: float, cls: str, label: str) -> str:
    width = max(0.0, min(1.0, share)) * 100
    return (
        f'<span class="bl-bar {cls}"><span style="width:{width:.1f}%"></span></span>'
        f'<span class="bl-num">{esc(label)}</span>'
    )


def reveal_html(rnd: Round, words: list[str], model: ModelAnswer, tally: Tally, mine: str | None = None) -> str:
    """The reveal: the class's answers beside the model's probabilities, the truth, the note.
    `mine`: a student's own answer (their page says it). The figure (legend and bars, every bar
    labelled with its number) is an image named by its summary sentence, and its numbers are a
    table one click away."""
    n = max(tally.answered, 1)
    said = f"{tally.agreed} of {tally.answered} gave the model's answer" if tally.answered else "no answers"
    head = f'<p class="bl-said">The model says <b>{esc(model.words)}</b> · {said}</p>'
    if mine is not None:
        head += f'<p class="bl-mine">You said <b>{esc(answer_words(rnd, words, mine))}</b></p>'
    if rnd.truth:
        head += f'<p class="bl-truth">The right answer: <b>{esc(rnd.truth)}</b></p>'
    legend = (
        '<p class="bl-legend"><span class="bl-key class"></span> the class: how many students '
        '<span class="bl-key model"></span> the model: its probability (striped)</p>'
    )
    body = kind_of(rnd).reveal_body(words, model, tally, n)
    summary = esc(reveal_summary(rnd, words, model, tally))
    figure = (
        f'<div class="bl-figure" role="img" aria-label="{summary}"><div aria-hidden="true">{legend}{body}</div></div>'
    )
    note = f'<p class="bl-note">{esc(rnd.note)}</p>' if rnd.note else ""
    return f'<div class="bl-reveal">{head}{figure}{numbers_table(rnd, words, model, tally)}{note}</div>'


def _options(model: ModelAnswer, tally: Tally) -> tuple[list[str], list[str]]:
    """A masked_word or next_sentence reveal's rows: the model's options and the class's commonest
    other guesses; and the class's guesses left out (counted in one row)."""
    theirs = [a for a, _ in tally.counts.most_common() if a not in model.options]
    return list(model.options) + theirs[:MORE_GUESSES], theirs[MORE_GUESSES:]


def numbers_table(rnd: Round, words: list[str], model: ModelAnswer, tally: Tally) -> str:
    """The reveal's numbers as a table (a caption, headers with their scope), in a <details>: what
    the bars draw, for a screen reader or whoever wants the exact numbers."""
    heads, rows = kind_of(rnd).number_rows(words, model, tally)
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in heads)
    body = "".join(
        f'<tr><th scope="row">{esc(name)}</th>{"".join(f"<td>{esc(c)}</td>" for c in cells)}</tr>'
        for name, cells in rows
    )
    caption = f"{esc(rnd.title)}: the class's answers ({tally.answered} students) beside the model's"
    return (
        '<details class="bl-numbers"><summary>the numbers as a table</summary>'
        f"<table><caption>{caption}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>"
    )


def _word_bars(words, model: ModelAnswer, tally: Tally, n: int) -> str:
    """The text itself, each word under small bars labelled with their numbers: how many students
    chose it and the model's probability (answer_span: as the first word, then as the last)."""
    sides = (
        [("first", tally.counts, model.options), ("last", tally.ends, model.ends)]
        if model.ends
        else [("", tally.counts, model.options)]
    )
    cells = []
    for i, w in enumerate(words):
        k = str(i)
        pairs = "".join(_pair(side, counts.get(k, 0), n, probs.get(k, 0.0)) for side, counts, probs in sides)
        hit = " bl-hit" if k in model.answer.split("-") else ""
        cells.append(
            f'<span class="bl-w{hit}"><span class="bl-vs">{pairs}</span><span class="bl-t">{esc(w)}</span></span>'
        )
    what = (
        "chosen as the answer's first word (left pair, marked first) and as its last word (right pair, marked last)"
        if model.ends
        else "tapped by the class, and how much the head looks at it"
    )
    other = f" · {model.other:.0%} of its attention is on [CLS], [SEP] or words cut off" if model.other >= 0.005 else ""
    scale = f"The scale: a full bar is all {n} students (the class) or 100% (the model)."
    return (
        f'<p class="bl-hint">How often each word was {what}{other}. {scale}</p>'
        f'<div class="bl-flow">{"".join(cells)}</div>'
    )


def _pair(side: str, count: int, n: int, p: float) -> str:
    """A word's two bars, the class's (students) and the model's (its probability), each under its
    number (none where it is nought); `side` ("first", "last") written under the pair."""

    def bar(cls: str, share: float, label: str) -> str:
        return (
            f'<span class="bl-v {cls}"><span class="bl-n">{label}</span>'
            f'<span class="bl-track"><span class="bl-fill" style="height:{100 * share:.0f}%"></span></span></span>'
        )

    shown = count or round(p, 2)
    said = f'<span class="bl-side">{side}</span>' if side and shown else ""
    bars = bar("class", count / n, str(count) if count else "") + bar("model", p, _percent(p) if round(p, 2) else "")
    return f'<span class="bl-pair"><span class="bl-two">{bars}</span>{said}</span>'


# ----------------------------------------------------------------------------------------------
# The kinds: two ways to reveal (a table of options, or bars under each word), then one class each
# ----------------------------------------------------------------------------------------------
class OptionsReveal:
    """A reveal in rows, one per answer (masked_word, next_sentence): the model's options and the
    class's commonest other guesses, the rest in one row."""

    def reveal_summary(self, rnd: Round, words: list[str], model: ModelAnswer, tally: Tally) -> str:
        p = _percent(model.options.get(model.answer, 0.0))
        theirs = _commonest(tally.counts, str, tally.answered)
        return f"The class's top answer: {theirs}; the model's: {model.words}, {p}."

    def reveal_body(self, words: list[str], model: ModelAnswer, tally: Tally, n: int) -> str:
        options, rest = _options(model, tally)
        rows = "".join(
            f"<tr><th>{esc(o)}</th><td>{_bar(tally.counts[o] / n, 'class', str(tally.counts[o]))}</td>"
            f"<td>{_bar(model.options.get(o, 0.0), 'model', _percent(model.options.get(o)))}</td></tr>"
            for o in options
        )
        if rest:  # a row for the guesses left out, so that the class's column still adds up
            others = sum(tally.counts[a] for a in rest)
            rows += (
                f"<tr><th>{len(rest)} other guesses</th><td>{_bar(others / n, 'class', str(others))}</td><td></td></tr>"
            )
        return f'<table class="bl-bars"><tr><th></th><th>the class</th><th>the model</th></tr>{rows}</table>'

    def number_rows(self, words: list[str], model: ModelAnswer, tally: Tally) -> tuple[tuple, list]:
        options, rest = _options(model, tally)
        heads = ("answer", "the class: students", "the model: probability")
        rows = [(o, [tally.counts[o], _percent(model.options.get(o, 0.0))]) for o in options]
        rows += [(f"{len(rest)} other guesses", [sum(tally.counts[a] for a in rest), ""])] if rest else []
        return heads, rows


class WordTaps:
    """An answer tapped among the text's words (answer_span, attention): the phone shows the words,
    the reveal draws bars under each word."""

    taps_words = True

    def reveal_body(self, words: list[str], model: ModelAnswer, tally: Tally, n: int) -> str:
        return _word_bars(words, model, tally, n)

    def number_rows(self, words: list[str], model: ModelAnswer, tally: Tally) -> tuple[tuple, list]:
        ends = model.ends is not None
        heads = ("word", *(("first word: students", "first word: model", "last word: students", "last word: model")
                           if ends else ("the class: students", "the model: attention")))  # fmt: skip
        rows = []
        for i, w in enumerate(words):
            k = str(i)
            cells = [tally.counts.get(k, 0), _percent(model.options.get(k, 0.0))]
            if ends:
                cells += [tally.ends.get(k, 0), _percent(model.ends.get(k, 0.0))]
            rows.append((f"{i + 1}. {w}", cells))
        return heads, rows


@register
class MaskedWord(OptionsReveal, RoundKind):
    """A sentence with one [MASK]: the class types the hidden word, the model fills it in."""

    name, title, task, fields = "masked_word", "Masked word", "fill_mask", ("text",)
    types_a_word = True

    def problem(self, values: dict, truth: str | None) -> str | None:
        return "a masked_word text needs one [MASK]" if values["text"].count("[MASK]") != 1 else None

    def normalize(self, rnd: Round, words: list[str], text: str) -> str:
        guess = text.lower()
        if not guess or len(guess) > MAX_GUESS or re.search(r"\s", guess):
            raise AnswerError(f"type one word (at most {MAX_GUESS} letters) for [MASK]")
        return guess

    def model_answer(self, rnd: Round, model, tokenizer) -> ModelAnswer:
        top = explore.fill_mask(model, tokenizer, rnd.text, top_k=5)[0]
        options = {t: p for t, p in top}
        return ModelAnswer(options, top[0][0], top[0][0])

    def question_html(self, rnd: Round) -> str:
        text = esc(rnd.text).replace("[MASK]", '<b class="bl-mask">[MASK]</b>')
        return f'<p class="bl-ask">Which word is hidden?</p><p class="bl-text">{text}</p>'

    def question_text(self, rnd: Round) -> str:
        return f"Which word is hidden? {short(rnd.text.replace('[MASK]', 'blank'))}"


@register
class NextSentence(OptionsReveal, RoundKind):
    """Two sentences: the class votes whether B follows A, the model says how likely."""

    name, title, task, fields = "next_sentence", "Next sentence", "next_sentence", ("text", "next")
    votes = True

    def problem(self, values: dict, truth: str | None) -> str | None:
        if truth not in (None, *LABELS):
            return f"a next_sentence truth is IsNext or NotNext, got {truth!r}"
        return None

    def normalize(self, rnd: Round, words: list[str], text: str) -> str:
        if text not in LABELS:
            raise AnswerError("vote IsNext (B follows A) or NotNext")
        return text

    def model_answer(self, rnd: Round, model, tokenizer) -> ModelAnswer:
        p = explore.next_sentence(model, tokenizer, rnd.text, rnd.get("next"))
        label = LABELS[0] if p >= 0.5 else LABELS[1]
        return ModelAnswer({LABELS[0]: p, LABELS[1]: 1 - p}, label, label)

    def question_html(self, rnd: Round) -> str:
        return (
            '<p class="bl-ask">Does sentence B follow sentence A?</p>'
            f'<p class="bl-text"><b>A</b> {esc(rnd.text)}</p><p class="bl-text"><b>B</b> {esc(rnd.get("next"))}</p>'
        )

    def question_text(self, rnd: Round) -> str:
        return f"Does sentence B follow sentence A? A: {short(rnd.text)} B: {short(rnd.get('next'))}"


@register
class AnswerSpan(WordTaps, RoundKind):
    """A question on a paragraph: the class taps the answer's first and last words, the model
    gives each word's probability of starting and of ending it."""

    name, title, task, fields = "answer_span", "Answer span", "answer", ("text", "question")

    def normalize(self, rnd: Round, words: list[str], text: str) -> str:
        m = re.fullmatch(r"(\d+)-(\d+)", text)
        if not m or not int(m[1]) <= int(m[2]) < len(words):
            raise AnswerError("tap the first word of the answer, then its last word")
        return f"{int(m[1])}-{int(m[2])}"

    def answer_words(self, words: list[str], answer: str) -> str:
        first, last = map(int, answer.split("-"))
        return " ".join(words[first : last + 1])

    def count(self, answers: list[str]) -> tuple[Counter, Counter | None]:
        return Counter(a.split("-")[0] for a in answers), Counter(a.split("-")[1] for a in answers)

    def model_answer(self, rnd: Round, model, tokenizer) -> ModelAnswer:
        words, spans = round_words(rnd), explore.split_words(rnd.text)
        result = explore.answer(model, tokenizer, rnd.get("question"), rnd.text, top_k=1)
        starts, ends = (
            per_word(spans, result.offsets, result.start_probs),
            per_word(spans, result.offsets, result.end_probs),
        )
        best = result.spans[0]
        first = next(i for i, (_, s, e) in enumerate(spans) if e > best.start)
        last = max(i for i, (_, s, e) in enumerate(spans) if s < best.end)
        answer = f"{first}-{max(first, last)}"
        return ModelAnswer(starts, answer, self.answer_words(words, answer), ends=ends)

    def question_html(self, rnd: Round) -> str:
        return (
            f'<p class="bl-ask">{esc(rnd.get("question"))}</p>'
            '<p class="bl-hint">Tap the first word of the answer, then its last word.</p>'
        )

    def question_text(self, rnd: Round) -> str:
        return f"{short(rnd.get('question'))} Tap the first word of the answer, then its last word."

    def reveal_summary(self, rnd: Round, words: list[str], model: ModelAnswer, tally: Tally) -> str:
        def word(k: str) -> str:  # a word's number (the tally's key) as the word
            return words[int(k)]

        first, last = model.answer.split("-")
        return (
            f"The class's commonest first word: {_commonest(tally.counts, word, tally.answered)}; "
            f"last word: {_commonest(tally.ends, word, tally.answered)}; the model's answer: {model.words} "
            f"(as the first word {_percent(model.options.get(first, 0.0))}, "
            f"as the last word {_percent((model.ends or {}).get(last, 0.0))})."
        )


@register
class Attention(WordTaps, RoundKind):
    """One word of a sentence, one head of one layer: the class taps the word it looks at most,
    the model shows that head's attention row."""

    name, title, task, fields = "attention", "Attention", "attention", ("text", "word", "layer", "head")
    numbers = ("layer", "head")

    def problem(self, values: dict, truth: str | None) -> str | None:
        if values["word"].lower() not in values["text"].lower():
            return f"the word {values['word']!r} is not in the text"
        return None

    def label_extra(self, rnd: Round) -> list[str]:
        return [f"layer {rnd.get('layer')}, head {rnd.get('head')}"]

    def normalize(self, rnd: Round, words: list[str], text: str) -> str:
        if not text.isdigit() or int(text) >= len(words):
            raise AnswerError(f"tap the word that “{rnd.get('word')}” looks at most")
        return str(int(text))

    def answer_words(self, words: list[str], answer: str) -> str:
        return words[int(answer)]

    def tap(self, first: int, i: int) -> str | None:
        return str(i)  # one tap answers

    def model_answer(self, rnd: Round, model, tokenizer) -> ModelAnswer:
        words, spans = round_words(rnd), explore.split_words(rnd.text)
        layer, head = rnd.get("layer"), rnd.get("head")
        n_layers, n_heads = model.config.num_hidden_layers, model.config.num_attention_heads
        if layer >= n_layers or head >= n_heads:
            raise ValueError(
                f"layer {layer}, head {head}: this model has layers 0 to {n_layers - 1}, heads 0 to {n_heads - 1}"
            )
        result = explore.attention(model, tokenizer, rnd.text)
        enc = tokenizer.encode(rnd.text, max_length=model.config.max_position_embeddings)
        query = query_word(rnd, spans)
        row_at = next((i for i, (s, e) in enumerate(enc.offsets) if s < spans[query][2] and e > spans[query][1]), None)
        if row_at is None:
            raise ValueError(f"the word {rnd.get('word')!r} was cut off: the text is longer than the model reads")
        row = result.attentions[layer][0, head, row_at].tolist()
        options = per_word(spans, enc.offsets, row)
        best = max(options, key=options.get)
        return ModelAnswer(options, best, words[int(best)], other=max(0.0, 1 - sum(options.values())))

    def question_html(self, rnd: Round) -> str:
        return (
            f'<p class="bl-ask">In layer {rnd.get("layer")}, head {rnd.get("head")}: which word does '
            f'<b class="bl-mask">{esc(rnd.get("word"))}</b> look at most?</p><p class="bl-hint">Tap that word.</p>'
        )

    def question_text(self, rnd: Round) -> str:
        return f"In layer {rnd.get('layer')}, head {rnd.get('head')}: which word does {rnd.get('word')} look at most?"

    def reveal_summary(self, rnd: Round, words: list[str], model: ModelAnswer, tally: Tally) -> str:
        def word(k: str) -> str:  # a word's number (the tally's key) as the word
            return words[int(k)]

        p = _percent(model.options.get(model.answer, 0.0))
        theirs = _commonest(tally.counts, word, tally.answered)
        return f"The class's top word: {theirs}; the model's: {model.words}, {p} of the head's attention."


# The reveal's look, for the projector (large) and a phone (the same rules, narrower). The first
# rule: Gradio 6.31 draws its bar of links between the pages (a "Home" link) although every
# page's gr.Navbar is invisible; a student's page must lead nowhere else, and a projector needs
# the room (tests/test_browser_rounds.py looks for the link)
ROUNDS_CSS = """
.nav-holder {display:none !important}
.bl-round .bl-kind {margin:0; font-size:var(--text-md); color:var(--body-text-color)}
.bl-ask {font-size:1.25em; font-weight:600; margin:.2em 0}
.bl-text {font-size:1.2em; line-height:1.5; margin:.3em 0; overflow-wrap:anywhere}
.bl-mask {color:#9a3412; text-decoration:underline}
.dark .bl-mask {color:#fdba74}
.bl-hint, .bl-legend {color:var(--body-text-color); margin:.2em 0}
.bl-said {font-size:1.2em; margin:.2em 0; overflow-wrap:anywhere}
.bl-truth, .bl-mine {margin:.2em 0; overflow-wrap:anywhere}
.bl-key {display:inline-block; width:.9em; height:.9em; border-radius:2px; vertical-align:middle}
.bl-key.class, .bl-bar.class span, .bl-v.class .bl-fill {background:#e4791b}
.bl-key.model, .bl-bar.model span, .bl-v.model .bl-fill {background:#3b6fd8;
  background-image:repeating-linear-gradient(135deg, transparent 0 3px, rgba(255,255,255,.45) 3px 5px)}
table.bl-bars {border-collapse:collapse; border:0 !important; width:100%; max-width:760px}
table.bl-bars th, table.bl-bars td {border:0 !important; background:none !important; padding:3px 6px;
  text-align:left; white-space:nowrap}
table.bl-bars th:first-child {font-size:1.1em; white-space:normal; overflow-wrap:anywhere; min-width:5em; width:28%}
table.bl-bars td {width:36%}
.bl-bar {display:inline-block; width:calc(100% - 3.5em); height:1.1em; background:var(--neutral-200);
  border-radius:3px; vertical-align:middle; overflow:hidden}
.bl-bar span {display:block; height:100%}
.bl-num {display:inline-block; width:3.2em; text-align:right; font-variant-numeric:tabular-nums}
.bl-flow {display:flex; flex-wrap:wrap; gap:6px 4px; align-items:flex-end}
.bl-w {display:inline-flex; flex-direction:column; align-items:center}
.bl-w.bl-hit .bl-t {font-weight:700; text-decoration:underline}
.bl-vs {display:flex; gap:4px; align-items:flex-end}
.bl-pair {display:flex; flex-direction:column; align-items:center}
.bl-two {display:flex; gap:3px; align-items:flex-end}
.bl-v {display:flex; flex-direction:column; align-items:center; min-width:9px}
.bl-n {font-size:.8em; line-height:1.2; font-variant-numeric:tabular-nums}
.bl-track {display:flex; align-items:flex-end; height:3.5em; width:100%}
.bl-fill {display:block; width:100%}
.bl-side {font-size:.8em; line-height:1.1}
.bl-t {font-size:1.1em}
.bl-note {font-style:italic; margin:.4em 0}
.bl-numbers {margin:.3em 0}
.bl-numbers summary {cursor:pointer; text-decoration:underline}
.bl-numbers summary:focus-visible {outline:3px solid var(--body-text-color); outline-offset:2px}
.bl-numbers table {border-collapse:collapse; font-size:.85em; margin-top:.3em}
.bl-numbers caption {text-align:left; font-weight:600}
.bl-numbers th, .bl-numbers td {padding:2px 8px; text-align:left; overflow-wrap:anywhere}
.bl-sr {position:absolute; width:1px; height:1px; margin:-1px; overflow:hidden; clip:rect(0 0 0 0);
  white-space:nowrap; border:0}
#play-say, #teach-say {display:none !important}
.bl-join {display:flex; gap:16px; align-items:center}
.bl-join svg {display:block; width:110px; height:auto; background:#fff}
.bl-join p {margin:.1em 0; font-size:1.1em}
.bl-code {font:700 2.4em/1.1 var(--font-mono); letter-spacing:.12em}
.bl-addr {font-family:var(--font-mono)}
.bl-live {font-size:1.6em; margin:0}
.bl-title {margin:0; font-weight:700; font-size:1.1em}
#teach-question, #teach-result {font-size:1.3em}
@media (max-width: 500px) {.bl-track {height:2.5em}}
@media (max-width: 400px) {table.bl-bars th, table.bl-bars td {padding:2px 3px}
  table.bl-bars th:first-child {font-size:1em; overflow-wrap:normal}
  .bl-num {width:2.7em} .bl-bar {width:calc(100% - 2.9em)}}
:where(.bl-ask-row) {display:none}
body.bl-teacher .bl-ask-row {display:flex !important}
/* the teacher page on a wall: the question large, the round line, the legend and the captions in
   the text's own colour; in presenter mode (its switch, or ?presenter=1) a reveal fits a small
   projector's screen without scrolling (tests/test_rounds_wall.py): a smaller QR, the key folded
   away, no empty status line, compact rows */
#teach-question .bl-kind, #teach-result .bl-legend, #teach-result .bl-hint, #teach-result .bl-side,
#teach-result .bl-numbers summary {color:var(--body-text-color) !important; opacity:1}
#teach-question .bl-kind {font-size:1em; font-weight:600}
#teach-question .bl-ask {font-size:1.45em; line-height:1.25}
body.bl-presenter #teach-key-box, body.bl-presenter footer, body.bl-presenter #teach-question .bl-hint,
body.bl-presenter #teach-question:has(.bl-revealed) .bl-text.bl-words {display:none !important}
body.bl-presenter .gradio-container .main {gap:6px !important}
body.bl-presenter .gradio-container .main .column {gap:6px !important}
body.bl-presenter #teach-status, body.bl-presenter #teach-status * {min-height:0 !important; padding:0 !important;
  margin:0 !important}
body.bl-presenter .gradio-container, body.bl-presenter .gradio-container .main, body.bl-presenter .app,
body.bl-presenter .gradio-container .contain {padding-top:0 !important; padding-bottom:0 !important;
  margin-top:0 !important; margin-bottom:0 !important; min-height:0 !important}
body.bl-presenter #teach-top .bl-join svg {width:64px}
body.bl-presenter #teach-top .bl-join p {font-size:1em; line-height:1.2}
/* before the first round the join card is what the wall shows: a QR the back row can scan */
body:has(#teach-question .bl-idle) #teach-top .bl-join {flex-wrap:wrap}
body:has(#teach-question .bl-idle) #teach-top .bl-join svg {width:min(42vh, 320px)}
body.bl-presenter #teach-top .bl-addr {font-size:.85em; overflow-wrap:normal; white-space:nowrap}
body.bl-presenter .bl-code {font-size:1.6em}
body.bl-presenter .bl-live {font-size:1.3em}
body.bl-presenter #teach-controls {align-items:center !important}
body.bl-presenter #teach-controls button {white-space:nowrap; padding:6px 12px !important; min-height:0;
  min-width:max-content !important}
body.bl-presenter #teach-controls [data-testid=block-info] {position:absolute; width:1px; height:1px; margin:-1px;
  overflow:hidden; clip:rect(0 0 0 0); white-space:nowrap; border:0}
.bl-addr {overflow-wrap:anywhere}
body.bl-presenter #teach-question, body.bl-presenter #teach-result {font-size:1.1em}
body.bl-presenter #teach-result .bl-said {font-size:1.15em}
body.bl-presenter #teach-result table.bl-bars th, body.bl-presenter #teach-result table.bl-bars td {padding:0 6px;
  line-height:1.15}
body.bl-presenter #teach-result .bl-bar {height:.9em}
body.bl-presenter #teach-result .bl-flow {font-size:.92em; gap:2px 4px}
body.bl-presenter #teach-result .bl-track {height:1.6em}
body.bl-presenter #teach-result .bl-flow:not(:has(.bl-side)) .bl-track {height:4em}  /* attention: one row */
body.bl-presenter #teach-result .bl-n, body.bl-presenter #teach-result .bl-side {line-height:1.05}
body.bl-presenter #teach-result p, body.bl-presenter #teach-result .bl-numbers {margin:.05em 0}
/* a phone's words to tap: each a box a thumb can hit (WCAG's enhanced target size), punctuation
   too, drawn as a button before the first tap */
#play-words .token {display:inline-flex !important; align-items:center; justify-content:center; min-width:44px;
  min-height:44px; padding:4px 8px !important; margin:3px 2px !important; box-sizing:border-box; cursor:pointer;
  border:2px solid var(--border-color-primary) !important; border-radius:8px !important;
  background:var(--background-fill-secondary); line-height:1.2}
#play-words .token.highlighted {background-color:#fed7aa !important; color:#000 !important;
  text-decoration:underline; text-decoration-thickness:2px}
.dark #play-words .token.highlighted {background-color:#9a3412 !important; color:#fff !important}
#play-words .token:focus-visible {outline:3px solid var(--body-text-color); outline-offset:2px}
#play-isnext button, #play-notnext button, #play-isnext, #play-notnext {min-height:3em}
"""
