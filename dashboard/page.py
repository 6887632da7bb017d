"""The page: a title, the link button, and the tabs (dashboard.tabs), composed on one Context.

    from dashboard import Dashboard, Settings
    dash = Dashboard(Settings())              # the bundled models; dash.store is the model store
    demo = dash.build()                       # gr.Blocks; launch it with demo.launch(**LAUNCH_OPTIONS)
    dash.tab("mlm").fill_mask("models/bert-lab-classroom", "the [MASK] sat .")   # a handler, directly

Each tab computes its first view while the page is built (the server starts with every tab's
default model loaded), so a page shows results as soon as it opens; a link's inputs or the dark
theme recompute only what differs (dashboard.links).
"""

from __future__ import annotations

import os

import gradio as gr

from . import room
from .context import Context, Settings
from .rounds import Rounds, load_deck
from .tabs import TABS


class Dashboard:
    def __init__(self, settings: Settings | None = None):
        self.ctx = Context(settings or Settings())
        self.store = self.ctx.store
        self.tabs = [tab(self.ctx) for tab in TABS]
        s = self.ctx.settings
        self.rounds = Rounds(self.ctx, load_deck(s.deck), size=s.class_size, key=s.teacher_key)
        self.ctx.rounds = self.rounds  # the tabs' "Ask the class" rows start rounds on it

    def tab(self, tab_id: str):
        """A tab's object (its handlers) by id: mlm, nsp, attention, qa, classify, tag, training, model."""
        return next(t for t in self.tabs if t.id == tab_id)

    def build(self) -> gr.Blocks:
        ctx, settings = self.ctx, self.ctx.settings
        with gr.Blocks(title="BERT Lab") as demo:
            # the page's light/dark theme, read from the browser when the page opens: figures follow it
            ctx.theme = gr.Radio(["light", "dark"], value="light", visible=False)
            with gr.Row(elem_id="bl-header", equal_height=True):  # one line: a projector needs the room below
                gr.Markdown("# BERT Lab", elem_id="bl-title")
                gr.Markdown(
                    '<details class="bl-intro"><summary>Every idea of the BERT paper, live</summary>\n\n'
                    "Masked words, next sentences, attention heads, answer spans (Devlin et al. 2019). Pick a model "
                    "in each tab; the **Model** tab describes it. **Presenter mode** draws the page larger for a "
                    "projector.\n\n</details>",
                    elem_id="bl-about",
                )
                presenter = room.presenter_switch()
            self.rounds.key_input(demo)  # before the tabs: their "Ask the class" rows read it
            link_row = ctx.links.link_row()  # the link button, the link, its QR code (dashboard.links)
            current_tab = gr.Textbox(self.tabs[0].id, visible=False)  # filled in by the browser (links.LINK_JS)
            with gr.Tabs() as tabs:
                for tab in self.tabs:
                    with ctx.links.tab(tab.id, tab.name):
                        tab.build()
            self._wire(demo, tabs, link_row, current_tab)
            room.wire(demo, presenter)
            self.rounds.api()
        self.rounds.pages(demo)  # the class rounds' pages: /teacher and /play
        # Gradio's queue summarises its recent events (a pandas table, per function) after every
        # event by default, a large share of the server's CPU under a class (docs/performance.md);
        # after every 1,000 is plenty (the environment variable, where set, still decides).
        os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")
        # Bounded memory and CPU: `concurrency` requests run at once, the rest wait in a bounded queue.
        demo.queue(default_concurrency_limit=settings.concurrency, max_size=settings.queue_size)
        self.demo = demo
        return demo

    def _wire(self, demo, tabs, link_row, current_tab) -> None:
        """The page-wide events: a page opens (in the browser: the theme, a link's tab and inputs;
        the server builds the page's session and computes only the views that differ from the
        start-up ones), and the link button."""
        ctx, links = self.ctx, self.ctx.links
        shared = list(links.inputs.values())
        link_tab = gr.Textbox("", visible=False)  # the tab a link names, set when the page opens
        opening = gr.Textbox("", visible=False)  # changes when a view must be recomputed
        demo.load(None, shared, [ctx.theme, link_tab, *shared, opening], js=links.opening_js())
        demo.load(start_session, None, None, api_visibility="private", queue=False)
        link_tab.change(links.select_tab, link_tab, tabs, api_visibility="private", queue=False)
        # the views already shown stay visible while this waits its turn (no progress overlay)
        opened = opening.change(
            links.opening_views,
            [*links.opening_inputs(), ctx.theme],
            links.opening_outputs(),
            api_visibility="private",
            show_progress="hidden",
            **ctx.queue,
        )
        # the views a page opens with are current once computed for a link's inputs
        filled = {id(c) for c in links.opening_outputs()}
        for view in ctx.current.views.values():
            if any(id(c) in filled for c in view.outputs):
                ctx.current.after(opened, view)
        links.wire_link_row(link_row, tabs, current_tab)


def start_session() -> None:
    """Nothing: its request, sent when a page opens, makes Gradio build the page's session (the
    state of every component, in the server's one event loop) while the student reads the page,
    not at the first click, when a class may click at once (docs/performance.md)."""
