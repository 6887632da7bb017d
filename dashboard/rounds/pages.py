"""The class's two pages, served by the dashboard's server: the projector's (/teacher: start,
reveal, next, the live count, the results) and a student's (/play: join with the room code, one
round at a time, for a phone), the "Ask the class" row of four tabs, and the API.

    rounds = Rounds(ctx, deck)          # the Classroom (rounds.room) on the dashboard's model store
    rounds.pages(demo)                  # inside the gr.Blocks: the two routes and the endpoints

Every action is an endpoint (Gradio's API, queue=False: a class's answers never wait behind
the tabs' model computations): class_join, class_round, class_answer for a student;
class_start, class_reveal, class_next, class_export for the teacher, with the teacher key.
"""

from __future__ import annotations

import html
import json
import sys

import gradio as gr

from ..common import said, status_html
from ..qr import is_address, local_note, svg
from .classroom import ClassError, Classroom
from .deck import Round, deck_labels, make_round
from .kinds import (
    AnswerError,
    ModelAnswer,
    esc,
    model_answer,
    question_html,
    question_text,
    reveal_html,
    reveal_summary,
)
from .registry import kind_of

# presenter mode, as the dashboard's (dashboard.room): body.bl-presenter, and the presenter parameter in the
# address so that a reload keeps it; the class pages' own rules for it are in ROUNDS_CSS
PRESENTER_JS = """(on) => {
  document.body.classList.toggle('bl-presenter', !!on);
  const url = new URL(window.location.href);
  if (on) url.searchParams.set('presenter', '1'); else url.searchParams.delete('presenter');
  history.replaceState(null, '', url);
  return !!on;
}"""
PRESENTER_ASKED_JS = (
    "() => ['1', 'true', 'on', 'yes'].includes(new URLSearchParams(location.search).get('presenter') ?? '')"
)
POLL_S = 1.0  # how often a page asks whether the round changed: the reveal reaches it within this
KEY_STORE = "bert-lab-teacher-key"  # the teacher's browser keeps the key here (localStorage)
FAILS = (ClassError, AnswerError, ValueError)
# A page's polite live region (role=status), made once by the page's script outside Gradio's
# components (a region must be there before what it says changes), saying the new text of the
# watched boxes: the round or the reveal (a hidden box's data-say), an action's status line (unless
# that line is a live region itself: dashboard.access makes every status line one). A text
# already said is not said again (the poll redraws nothing unless the round changed), and texts
# changing together are said together.
LIVE_JS = """(watched) => {
  if (document.getElementById('bl-live')) return;
  const live = document.createElement('div');
  live.id = 'bl-live';
  live.className = 'bl-sr';
  live.setAttribute('role', 'status');
  live.setAttribute('aria-live', 'polite');
  document.body.appendChild(live);
  const last = {}, pending = [];
  let timer = 0;
  const read = (el) => {
    const say = el.querySelector('[data-say]');
    if (say) return say.dataset.say;
    const copy = el.cloneNode(true);
    copy.querySelectorAll('[data-testid=status-tracker], details').forEach((x) => x.remove());
    return copy.textContent.replace(/\\s+/g, ' ').trim();
  };
  const heard = (sel, el) => {
    if (el.querySelector('[aria-live=polite], [aria-live=assertive]')) return;  // a status line that speaks itself
    const text = read(el);
    if (text === (last[sel] || '')) return;
    last[sel] = text;
    if (!text) return;
    pending.push(text);
    clearTimeout(timer);
    timer = setTimeout(() => { live.textContent = pending.splice(0).join(' '); }, 150);
  };
  const watch = (sel, tries) => {
    const el = document.querySelector(sel);
    if (!el) return tries > 0 && setTimeout(() => watch(sel, tries - 1), 250);
    last[sel] = read(el);
    const all = {subtree: true, childList: true, characterData: true, attributes: true};
    new MutationObserver(() => heard(sel, el)).observe(el, all);
  };
  watched.forEach((sel) => watch(sel, 40));
}"""


class Rounds:
    """The class rounds of one server: the Classroom, the model's side from the model store."""

    def __init__(self, ctx, deck: list[Round], size: int = 200, code: str | None = None, key: str | None = None):
        self.ctx, self.store = ctx, ctx.store
        self.room = Classroom(deck, self.answerer, size=size, code=code, key=key)
        self.key_box: gr.Textbox | None = None  # the main page's teacher key (key_input)

    def model_name(self, rnd: Round) -> str:
        """The round's model: the deck's (the end of a served model's name) if it serves the kind,
        else the kind's default (the menus' rule)."""
        served = self.store.models_for(rnd.task)
        if rnd.model:
            found = [m for m in served if str(m) == rnd.model or str(m).endswith("/" + rnd.model)]
            if not found:
                raise ValueError(f"{rnd.model} is not a model that can play a {rnd.title} round here")
            return found[0]
        name = self.store.default_model(rnd.task)
        if name is None:
            raise ValueError(f"no model here can play a {rnd.title} round")
        return name

    def answerer(self, rnd: Round) -> tuple[str, ModelAnswer]:
        name = self.model_name(rnd)
        model, tokenizer = self.store.model_for(name, rnd.task)
        return str(name).rsplit("/", 1)[-1], model_answer(rnd, model, tokenizer)

    # -- what a page shows -----------------------------------------------------------------
    def state(self, token: str = "") -> dict:
        """The round as a student's client reads it (the API's class_round): its number, kind,
        question, words, whether it is revealed, and then the class's tally and the model's answer."""
        live = self.room.live
        if live is None:
            return {"round": 0, "version": self.room.version, "open": False}
        rnd = live.round
        out = {
            "round": live.number,
            "version": self.room.version,
            "kind": rnd.kind,
            "text": rnd.text,
            **rnd.fields,
            "words": live.words,
            "open": not live.revealed,
            "mine": self.room.mine(token),
        }
        if live.revealed:
            out |= {
                "model": live.model_name,
                "model_answer": live.model.words,
                "model_options": live.model.options,
                "truth": rnd.truth,
                "answered": live.tally.answered,
                "agreed": live.tally.agreed,
                "class": dict(live.tally.counts),
            }
        return out

    def teacher_question(self) -> str:
        live = self.room.live
        if live is None:
            return '<p class="bl-ask bl-idle">No round yet: pick one of the deck and press Start.</p>'
        rnd = live.round
        words = ""
        if kind_of(rnd).taps_words:
            words = f'<p class="bl-text bl-words">{html.escape(rnd.text)}</p>'
        head = f'<p class="bl-kind">{live.label} · {rnd.title} · {html.escape(live.model_name)}</p>'
        # revealed: presenter mode leaves out the text here, since the reveal shows each of its words
        shown = " bl-revealed" if live.revealed else ""
        return f'<div class="bl-round{shown}">{head}{question_html(rnd)}{words}</div>'

    def announcement(self) -> str:
        """What the pages' live regions say of the round: its number, kind and question in short
        when it starts; the reveal's summary when it is revealed."""
        live = self.room.live
        if live is None:
            return ""
        if live.revealed:
            return f"{live.label} revealed. {reveal_summary(live.round, live.words, live.model, live.tally)}"
        return f"{live.label}, {live.round.title}: {question_text(live.round)}"

    def say(self) -> str:
        """The hidden box the page's live region reads (LIVE_JS): the announcement as data-say."""
        return f'<span data-say="{esc(self.announcement())}"></span>'

    def reveal(self, token: str | None = None) -> str:
        live = self.room.live
        if live is None or not live.revealed:
            return ""
        mine = self.room.mine(token) if token else None
        return reveal_html(live.round, live.words, live.model, live.tally, mine)

    def join_card(self, origin) -> str:
        """The room code, the students' address and its QR code (with the code in it)."""
        base = origin.rstrip("/") if isinstance(origin, str) and is_address(origin) else ""
        address = f"{base}/play" if base else "/play"
        qr = svg(f"{address}?room={self.room.code}") if base else ""
        shown = html.escape(address).replace("/play", "<wbr>/play")  # a narrow card wraps it before /play
        return (
            f'<div class="bl-join"><div>{qr}</div>'
            f'<div><p>Students open <b class="bl-addr">{shown}</b>{local_note(address, short=True)}</p>'
            f'<p>Room code <b class="bl-code">{self.room.code}</b></p></div></div>'
        )

    # -- "Ask the class" in a tab ------------------------------------------------------------
    def ask_row(self, kind: str, inputs: list, fields, word: bool = False) -> None:
        """A row under a tab's inputs, shown only in the teacher's browser (where /teacher stored the
        key): "Ask the class" starts a round of `kind` from the tab's inputs as they are now.
        `fields(*values) -> dict`: the round's fields from the inputs' values (model included);
        `word`: a box for the word whose attention is asked."""
        with gr.Row(elem_classes="bl-ask-row"):
            box = gr.Textbox(label="word to ask about", max_length=40, scale=1) if word else None
            btn = gr.Button("Ask the class: start a round with this", scale=2)
            status = gr.HTML(elem_classes="bl-status")

        def ask(key, *values):
            extra = {"word": values[-1]} if word else {}
            try:
                rnd = make_round({"kind": kind, **fields(*values[: len(inputs)]), **extra}, "this tab's inputs")
                line = self.room.start(key, rnd=rnd)
            except FAILS as e:
                return said(f"⚠️ {e}")
            return said(f"{line} The teacher's page (/teacher) shows it.")

        for trigger in (btn.click, *([box.submit] if box else [])):
            trigger(
                ask, [self.key_box, *inputs, *([box] if box else [])], status, queue=False, api_visibility="private"
            )

    def key_input(self, demo: gr.Blocks) -> None:
        """The main page's hidden teacher key, read from this browser's storage when the page opens
        (a student's browser has none): with it, the tabs show their "Ask the class" rows."""
        self.key_box = gr.Textbox(visible=False)
        js = f"""() => {{
          const k = localStorage.getItem('{KEY_STORE}') || '';
          document.body.classList.toggle('bl-teacher', !!k);
          return k;
        }}"""
        demo.load(None, None, self.key_box, js=js, queue=False)

    # -- the pages ---------------------------------------------------------------------------
    def pages(self, demo: gr.Blocks) -> None:
        """The two routes, after `demo`'s own page."""
        with demo.route("Class rounds: teacher", "/teacher", show_in_navbar=False) as page:
            self._teacher_page(page)
        with demo.route("Class rounds: play", "/play", show_in_navbar=False) as page:
            StudentPage(self).build(page)

    def api(self) -> None:
        """The endpoints (inside the main page's Blocks); no navigation bar between the pages (a
        student's page leads nowhere else)."""
        gr.Navbar(visible=False)
        room = self.room

        def class_join(room_code: str, name: str = "") -> str:
            """Join the room with its code (and a name): the student's token, for the calls below."""
            return _or_error(room.join, room_code, name)

        def class_round(token: str = "") -> str:
            """The round being played (JSON): its question and words; at the reveal, the class's
            answers and the model's."""
            return json.dumps(self.state(token))

        def class_answer(token: str, answer: str) -> str:
            """Answer the open round (a word; IsNext or NotNext; "first-last" word numbers; a word number)."""
            return _or_error(room.answer, token, answer)

        def class_start(key: str, round_number: float) -> str:
            """The teacher: start the deck's round (from 1)."""
            return _or_error(room.start, key, int(round_number))

        def class_reveal(key: str) -> str:
            """The teacher: close the round and show the model's answer beside the class's."""
            return _or_error(room.reveal, key)

        def class_next(key: str) -> str:
            """The teacher: start the deck's next round."""
            return _or_error(room.next, key)

        def class_export(key: str) -> str:
            """The teacher: every round played and its answers, as CSV text."""
            return _or_error(room.export, key).read_text(encoding="utf-8")

        for fn in (class_join, class_round, class_answer, class_start, class_reveal, class_next, class_export):
            gr.api(fn, api_name=fn.__name__, queue=False)

    def buttons(self) -> tuple:
        """The deck's menu and the three buttons as the round stands: the menu shows the round being
        played (once it is revealed, the deck's next round: what Start and Next round would play), and
        the button to press next is the highlighted one (Start before any round, then Reveal, then Next)."""
        room, live = self.room, self.room.live
        shown = live.deck_number if live and live.deck_number else room.position
        if live is None or live.revealed:
            shown = min(room.position + 1, len(room.deck))
        step = "start" if live is None else ("next" if live.revealed else "reveal")
        variant = {name: "primary" if name == step else "secondary" for name in ("start", "reveal", "next")}
        return (
            gr.update(value=max(shown, 1)),
            *(gr.update(variant=variant[name]) for name in ("start", "reveal", "next")),
        )

    def _teacher_page(self, page: gr.Blocks) -> None:
        room = self.room
        gr.Navbar(visible=False)  # (one per page)
        with gr.Row(elem_id="teach-top", equal_height=True):  # compact: the reveal must fit a 1024 x 768 projector
            card = gr.HTML(self.join_card(""), elem_id="teach-join", scale=3)
            live = gr.HTML(elem_id="teach-live", scale=1)
            switch = gr.Checkbox(False, label="Presenter mode", elem_id="teach-presenter", scale=0, min_width=160)
        with gr.Row(elem_id="teach-controls"):
            labels = deck_labels(room.deck)
            pick = gr.Dropdown(
                list(zip(labels, range(1, len(labels) + 1))), value=1, label="Round of the deck", scale=3
            )
            start = gr.Button("Start", variant="primary", scale=0, min_width=90, elem_id="teach-start")
            reveal = gr.Button("Reveal", scale=0, min_width=90, elem_id="teach-reveal-button")
            nxt = gr.Button("Next round", scale=0, min_width=120, elem_id="teach-next")
            export = gr.Button("Export CSV", scale=0, min_width=110)
        status = gr.HTML(elem_id="teach-status", elem_classes="bl-status")
        say = gr.HTML(self.say(), elem_id="teach-say")
        question = gr.HTML(self.teacher_question(), elem_id="teach-question")
        result = gr.HTML(elem_id="teach-result")
        file = gr.File(label="the class's rounds and answers (CSV)", visible=False, elem_id="teach-file")
        with gr.Accordion("Teacher key", open=False, elem_id="teach-key-box"):
            key = gr.Textbox(
                label="Teacher key (printed where the server started)", type="password", elem_id="teach-key"
            )
        origin, seen = gr.Textbox(visible=False), gr.State(-1)
        controls = [pick, start, reveal, nxt]

        def act(action, *args):
            try:
                line = action(*args)
            except FAILS as e:
                return status_html(f"⚠️ {e}"), *[gr.skip()] * 8
            # the version drawn goes to `seen`: the next tick does not draw it again over a round the
            # teacher picks in the menu meanwhile
            return status_html(line), self.teacher_question(), self.reveal(), self.say(), *self.buttons(), room.version

        shown = [status, question, result, say, *controls, seen]
        private = dict(queue=False, api_visibility="private")
        start.click(lambda k, n: act(room.start, k, n), [key, pick], shown, **private)
        reveal.click(lambda k: act(room.reveal, k), key, shown, **private)
        nxt.click(lambda k: act(room.next, k), key, shown, **private)

        def download(k):
            try:
                return gr.File(str(room.export(k)), visible=True), status_html("The CSV is below.")
            except ClassError as e:
                return gr.skip(), status_html(f"⚠️ {e}")

        export.click(download, key, [file, status], **private)

        def tick(version):
            joined, answered = room.counts()
            line = (
                '<p class="bl-title">BERT Lab · class rounds</p>'
                f'<p class="bl-live"><b>{joined}</b> joined · <b>{answered}</b> answered</p>'
            )
            if version == room.version:
                return line, *[gr.skip()] * 7, version
            return line, self.teacher_question(), self.reveal(), self.say(), *self.buttons(), room.version

        gr.Timer(POLL_S).tick(tick, seen, [live, question, result, say, *controls, seen], **private)
        self._teacher_scripts(page, key, origin, switch)
        origin.change(self.join_card, origin, card, **private)

    def _teacher_scripts(self, page: gr.Blocks, key, origin, switch) -> None:
        """The teacher page's scripts: the key from the terminal's link (?key=...), kept in this
        browser for the tabs' "Ask the class" rows, then taken out of the address bar (the projector
        must not show it); the live region; presenter mode (the dashboard's switch and `?presenter=1`)."""
        js = f"""() => {{
          const url = new URL(window.location.href);
          const k = url.searchParams.get('key') || localStorage.getItem('{KEY_STORE}') || '';
          if (url.searchParams.has('key')) {{
            localStorage.setItem('{KEY_STORE}', k);
            url.searchParams.delete('key');
            history.replaceState(null, '', url.pathname + url.search);
          }}
          return [k, window.location.origin];
        }}"""
        page.load(None, None, [key, origin], js=js, queue=False)
        page.load(None, None, None, js=f"() => ({LIVE_JS})(['#teach-say', '#teach-status'])", queue=False)
        # a key typed by hand (Enter) is kept in this browser too, for the tabs' "Ask the class" rows
        key.submit(None, key, None, js=f"(k) => {{ localStorage.setItem('{KEY_STORE}', k.trim()); }}", queue=False)
        switch.change(None, switch, None, js=PRESENTER_JS, queue=False, show_progress="hidden")
        page.load(None, None, switch, js=PRESENTER_ASKED_JS, queue=False, show_progress="hidden")


def chips(words: list[str], answer: str | None, label: str = "your answer") -> list[tuple[str, str | None]]:
    """The words as HighlightedText pieces (one per word, so a tap's index is the word's number),
    the answer's words marked."""
    marked = set()
    if answer:
        first, _, last = answer.partition("-")
        marked = set(range(int(first), int(last or first) + 1))
    # a space after each word, none before a punctuation mark ("island." not "island .")
    spaced = [w + ("" if i + 1 < len(words) and not words[i + 1][0].isalnum() else " ") for i, w in enumerate(words)]
    return [(w, label if i in marked else None) for i, w in enumerate(spaced)]


def _or_error(fn, *args):
    """The API's answer: fn's result, or its message as a Gradio error (shown to the caller); the
    teacher's terminal gets one line for it, not a traceback (which would push the key and the
    address out of view)."""
    try:
        return fn(*args)
    except FAILS as e:
        print(f"class rounds: refused {getattr(fn, '__name__', 'a call')}: {e}", file=sys.stderr, flush=True)
        raise gr.Error(str(e), print_exception=False) from None


class StudentPage:
    """A student's page (/play): join, then the round being played, refreshed every POLL_S."""

    def __init__(self, rounds: Rounds):
        self.rounds, self.room = rounds, rounds.room
        self.outputs: list = []

    def build(self, page: gr.Blocks) -> None:
        gr.Navbar(visible=False)
        gr.Markdown("# BERT Lab · play along", elem_id="play-title")
        token = gr.BrowserState("", storage_key="bert-lab-class-token")  # kept by the phone across reloads
        seen, first = gr.State(-1), gr.State(-1)  # the version shown; answer_span: the first word tapped
        say = gr.HTML(elem_id="play-say")  # what the live region says of the round (outside the hidden boxes)
        with gr.Column(visible=True, elem_id="play-join") as join_box:
            # no max_length: a browser would cut a long text without a word; the server says what fits
            code = gr.Textbox(label="Room code (on the projector)", elem_id="play-code")
            name = gr.Textbox(label="Your name (optional)", elem_id="play-name")
            join = gr.Button("Join", variant="primary", elem_id="play-join-button")
        with gr.Column(visible=False, elem_id="play-round") as round_box:
            question = gr.HTML(elem_id="play-question")
            with gr.Row(visible=False, elem_id="play-guess-row") as guess_row:
                guess = gr.Textbox(label="Your guess: one word", elem_id="play-guess", scale=3)
                send = gr.Button("Send", variant="primary", scale=1, min_width=80, elem_id="play-send")
            with gr.Row(visible=False, elem_id="play-vote") as vote_row:
                yes = gr.Button("IsNext: B follows A", elem_id="play-isnext")
                no = gr.Button("NotNext: it does not", elem_id="play-notnext")
            words = gr.HighlightedText(
                visible=False,
                interactive=False,
                show_legend=False,
                show_label=False,
                show_inline_category=False,
                color_map={"your answer": "#e4791b", "first word": "#e4791b"},
                elem_id="play-words",
            )
            reveal = gr.HTML(elem_id="play-reveal")
        status = gr.HTML(elem_id="play-status", elem_classes="bl-status")
        outputs = [seen, join_box, round_box, question, guess_row, guess, vote_row, words, reveal, first, status, say]
        self.outputs = outputs

        private = dict(queue=False, api_visibility="private")
        for trigger in (join.click, code.submit, name.submit):
            joined = trigger(self.joined, [code, name], [token, status], **private)
            joined.then(self.view, [token, seen], outputs, **private)
        for trigger in (send.click, guess.submit):
            trigger(self.answer, [token, guess], status, **private)
        yes.click(lambda t: self.answer(t, "IsNext"), token, status, **private)
        no.click(lambda t: self.answer(t, "NotNext"), token, status, **private)
        words.select(self.tapped, [token, first], [status, words, first], **private)
        # the poll returns only the room's version, a number into a hidden box (one plain value to
        # send: cheap for a hall of phones); the page is redrawn when that number changes
        latest = gr.Number(-1, visible=False, elem_id="play-version")
        gr.Timer(POLL_S).tick(self.version, None, latest, **private)
        latest.change(self.view, [token, seen], outputs, **private)
        # the room code from the QR's address (?room=...); else what the student may have typed already
        js = "(typed) => new URLSearchParams(window.location.search).get('room') || typed"
        page.load(None, code, code, js=js, queue=False)
        page.load(self.view, [token, seen], outputs, **private)
        page.load(None, None, None, js=f"() => ({LIVE_JS})(['#play-say', '#play-status'])", queue=False)

    def version(self) -> int:
        return self.room.version

    def view(self, tok, version):
        """What the page shows now, or nothing changed (skips) when the version was shown."""
        room = self.room
        if not room.knows(tok):
            return (-1, gr.Column(visible=True), gr.Column(visible=False), *[gr.skip()] * (len(self.outputs) - 3))
        if version == room.version:
            return tuple(gr.skip() for _ in self.outputs)
        live = room.live
        if live is None:
            wait = '<p class="bl-ask">Joined. Wait for the teacher to start a round.</p>'  # the status says "Joined"
            hidden = gr.Row(visible=False)
            return (room.version, gr.Column(visible=False), gr.Column(visible=True), wait,
                    hidden, gr.skip(), hidden, gr.HighlightedText(visible=False), "", -1, gr.skip(), "")  # fmt: skip
        kind, mine, open_ = kind_of(live.round), room.mine(tok), not live.revealed
        tap = kind.taps_words
        return (
            room.version,
            gr.Column(visible=False),
            gr.Column(visible=True),
            question_html(live.round),
            gr.Row(visible=kind.types_a_word and open_),
            gr.Textbox(value=mine or "") if kind.types_a_word else gr.skip(),
            gr.Row(visible=kind.votes and open_),
            gr.HighlightedText(value=chips(live.words, mine) if tap else [], visible=tap and open_),
            self.rounds.reveal(tok),
            -1,
            "",  # a new round or the reveal: the last line (what was sent) goes
            self.rounds.say(),
        )

    def joined(self, code, name):
        try:
            tok = self.room.join(code, name)
        except ClassError as e:
            return gr.skip(), said(f"⚠️ {e}")
        return tok, said("Joined: the round shows here when the teacher starts it")

    def answer(self, tok, value):
        try:
            return said(self.room.answer(tok, value))
        except FAILS as e:
            return said(f"⚠️ {e}")

    def tapped(self, tok, first, evt: gr.SelectData):
        """A word tapped: attention's answer; answer_span's first word, then its last."""
        live = self.room.live
        if live is None or evt.index is None:
            return gr.skip(), gr.skip(), gr.skip()
        i = evt.index if isinstance(evt.index, int) else evt.index[0]
        answer = kind_of(live.round).tap(first, i)
        if answer is None:  # answer_span's first word: the answer needs its last
            picks = chips(live.words, f"{i}-{i}", label="first word")
            return said("Now tap the answer's last word"), gr.HighlightedText(value=picks), i
        line = self.answer(tok, answer)
        return line, gr.HighlightedText(value=chips(live.words, self.room.mine(tok))), -1
