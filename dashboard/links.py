"""Shared inputs, declared once by each tab: the inputs a link restores and the views a page
opens with.

    ctx.links.share(mlm_model=menu, mlm_text=text)             # ?mlm&text=... restores them
    views = tab.opening(model, text, "light")                  # computed once, when the page is built
    ctx.links.opening(tab.opening, [menu, text], outputs, views)

Everything else is derived from these declarations: the link row (its button, its one-line box,
its QR code), what a link restores when a page opens (in the browser: opening_js), and the
opening views. A page opened with the tabs' defaults in the light theme shows the views computed
at start-up and asks the server for nothing but its session; a link or the dark theme recomputes
only the tabs whose inputs differ, from a small cache shared by all pages.

A link is short enough to type off a slide: it names its tab and holds only that tab's inputs
that differ from the tab's defaults, under short names (`?nsp&a=...&b=...`; a model menu is
`model`); a value that is one of the tab's examples can be named by its number instead
(`?qa&example=2`, the examples as listed under the inputs; the shortest link is given). The
long form of older links (`?tab=nsp&nsp_a=...&mlm_text=...`) still opens as it did.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import urlencode

import gradio as gr

from .qr import CLOSE_QR_JS, ROOM_QR_JS, link_qr, room_qr

MAX_LINK_VALUE = 20_000  # characters of one value in a link (as a typed text)
MAX_LINK_INDEX = 63  # a layer or head number in a link (the handlers check it against the model)
OPENING_CACHE = 32  # opening views kept for the next pages
EXAMPLE = "example"  # the query key naming one of the tab's examples (?qa&example=2)
LINK_TARGET = 120  # characters of a link, page address included, below which no example is named
SAFE = "/?:@,"  # characters a link keeps as typed in its values (a URL's query allows them)


@dataclass
class LinkRow:
    button: gr.Button  # makes the link
    box: gr.Textbox  # the link, on one line (a Copy button beside it)
    qr_button: gr.Button  # makes the link and shows its QR code
    qr: gr.HTML  # the QR overlay (empty until asked for)


@dataclass
class Opener:
    fn: object  # fn(*values, theme) -> the outputs' values
    inputs: list  # components whose values fn takes
    outputs: list  # components it fills
    initial_key: tuple  # (values, theme) of the views given to the components at build


class Links:
    def __init__(self):
        self.inputs: dict[str, gr.components.Component] = {}  # query key -> component, in declaration order
        self.tabs: dict[str, str] = {}  # tab id -> its name on the page, in page order
        self.openers: list[Opener] = []
        self.tab_blocks: dict[str, gr.Tab] = {}
        self._found: tuple[dict, dict] | None = None  # (owner, examples), found once the page is built
        self._cache: OrderedDict[tuple, tuple] = OrderedDict()
        self._lock = threading.Lock()

    # declarations --------------------------------------------------------------------------
    def tab(self, tab_id: str, name: str) -> gr.Tab:
        """A tab of the page; links name it by its id (?tab=mlm)."""
        self.tabs[tab_id] = name
        self.tab_blocks[tab_id] = gr.Tab(name, id=tab_id)
        return self.tab_blocks[tab_id]

    def share(self, **components) -> None:
        """These inputs travel in a link, under these names."""
        self.inputs.update(components)

    def opening(self, fn, inputs: list, outputs: list, initial: tuple, initial_values: tuple) -> None:
        """fn(*inputs' values, theme) fills outputs when a page opens; `initial` is what fn gave
        for initial_values in the light theme (the components were built with it)."""
        key = (len(self.openers), _key(initial_values), "light")
        with self._lock:
            self._cache[key] = initial
        self.openers.append(Opener(fn, inputs, outputs, key))

    # the link row ----------------------------------------------------------------------------
    def link_row(self) -> LinkRow:
        """The link button, the link on one line, its Copy and QR buttons and the QR overlay; and
        the page's own address as a QR (#room-qr: shown in presenter mode only). Copy is the
        page's own: Gradio's copy button shows only beside a label, and uses the clipboard API,
        which a page served over plain http to a classroom's network does not have."""
        with gr.Row(elem_id="share-row"):
            button = gr.Button("Link to this tab and its inputs", size="sm", scale=0, min_width=230)
            box = gr.Textbox(
                show_label=False,
                placeholder="a short link that opens this tab with its inputs",
                interactive=False,
                lines=1,
                max_lines=1,
                scale=4,
                container=False,
                elem_id="share-link",
            )
            copy = gr.Button("Copy", size="sm", scale=0, min_width=80, elem_id="share-copy")
            qr_button = gr.Button("QR code", size="sm", scale=0, min_width=100, elem_id="share-qr-button")
        copy.click(None, box, None, js=COPY_JS)
        qr = gr.HTML("", elem_id="share-qr", container=False, js_on_load=CLOSE_QR_JS)
        gr.HTML("", elem_id="room-qr", container=False, server_functions=[room_qr], js_on_load=ROOM_QR_JS)
        return LinkRow(button, box, qr_button, qr)

    def wire_link_row(self, row: LinkRow, tabs: gr.Tabs, current_tab: gr.Textbox) -> None:
        """The buttons make the link of the open tab (the browser sends its address and the tab);
        another tab or a changed input clears the link and its QR: a link on show is always the
        open tab's, with the inputs on the page."""
        shared = list(self.inputs.values())
        ask = dict(inputs=[row.box, current_tab, *shared], js=LINK_JS, api_visibility="private", queue=False)
        row.button.click(self.share_link, outputs=[row.box, row.qr], **ask)
        row.qr_button.click(self.share_qr, outputs=[row.box, row.qr], **ask)
        triggers = [tabs.select, *(c.change for c in shared)]
        gr.on(triggers, None, None, [row.box, row.qr], js="() => ['', '']", api_visibility="private", queue=False)

    def share_link(self, page: str, tab: str, *values) -> tuple[str, str]:
        """The link box's text (a link to `page`, the browser's address, that opens this tab with
        these inputs: link_query) and no QR; a line saying why where a value is too long."""
        tab = str(tab).strip()  # the browser sends the tab's name
        tab = next((i for i, name in self.tabs.items() if name == tab), tab)
        tab = tab if tab in self.tabs else next(iter(self.tabs))
        values = dict(zip(self.inputs, values))
        too_long = [len(_text(values[k])) for k in self.owned(tab) if len(_text(values[k])) > MAX_LINK_VALUE]
        if too_long:
            return f"⚠️ A text of {too_long[0]:,} characters is too long for a link (at most {MAX_LINK_VALUE:,}).", ""
        page = str(page or "").split("?", 1)[0].split("#", 1)[0]
        page = page if page.startswith(("http://", "https://")) else ""
        return f"{page}?{self.link_query(tab, values, LINK_TARGET - len(page) - 1)}", ""

    def share_qr(self, page: str, tab: str, *values) -> tuple[str, str]:
        """share_link's link, and its QR code in the overlay."""
        link, _ = self.share_link(page, tab, *values)
        return link, link_qr(link)

    def link_query(self, tab: str, values: dict, longest: int = LINK_TARGET) -> str:
        """The query string of a link to `tab` with these values ({key: value}, every shared
        input's): the tab's inputs that differ from its defaults, under short names, written out;
        where that is longer than `longest` characters, the shortest of it and the queries that
        name one of the tab's examples (the values that differ from the example written out)."""
        keys = self.owned(tab)
        written = self.query(tab, keys, values, {})
        if len(written) <= longest:
            return written
        examples = enumerate(self.found()[1].get(tab, []), 1)
        return min([written, *(self.query(tab, keys, values, row, n) for n, row in examples)], key=len)

    def query(self, tab: str, keys: list, values: dict, example: dict, number: int = 0) -> str:
        """tab, the example's number (none: 0), and the values of `keys` that differ from what
        the page opens with (the example's values, else the defaults)."""
        start = {k: example.get(k, self.inputs[k].value) for k in keys}
        pairs = [(EXAMPLE, number)] if number else []
        pairs += [(short_name(k), _text(values[k])) for k in keys if _differs(values[k], start[k])]
        return tab + ("&" + urlencode(pairs, safe=SAFE) if pairs else "")

    # what each tab holds, found in the built page -----------------------------------------
    def owned(self, tab: str) -> list[str]:
        """The keys of the shared inputs inside this tab, in declaration order."""
        return [k for k, t in self.found()[0].items() if t == tab]

    def found(self) -> tuple[dict, dict]:
        """({key: its tab}, {tab: its examples, each {key: value}}): the shared inputs and the
        example tables (gr.Examples) found inside each tab of the built page."""
        if self._found is None:
            ids = {id(c): k for k, c in self.inputs.items()}
            owner, examples = {}, {}
            for tab, block in self.tab_blocks.items():
                for child in _descendants(block):
                    if id(child) in ids:
                        owner[ids[id(child)]] = tab
                    if isinstance(child, gr.Dataset):
                        keys = [ids.get(id(c)) for c in getattr(child, "_components", [])]  # gradio's own field
                        rows = [dict(zip(keys, r)) for r in child.raw_samples] if all(keys) else []
                        examples.setdefault(tab, []).extend({k: v for k, v in r.items() if v is not None} for r in rows)
            names = [(t, short_name(k)) for k, t in owner.items()]
            clash = {n for n in names if names.count(n) > 1 or n[1] in ("tab", EXAMPLE)}
            assert not clash, f"shared inputs with the same name in a link to their tab: {clash}"
            self._found = ({k: owner[k] for k in self.inputs if k in owner}, examples)
        return self._found

    def opening_js(self) -> str:
        """The page's opening, in the browser (no request to the server): the theme, and a link's
        tab and inputs from the address (?mlm&text=..., or the long ?tab=mlm&mlm_text=...; an
        example named by its number first, the values given over it), each checked as a typed one would
        be (a whole number where a slider is, a bounded length; a bad value is ignored). Its
        outputs: theme, the tab to select ('' for none), the inputs, and the `opening` trigger
        (a new value only where a view must be recomputed: a link's input or the dark theme)."""
        spec = {
            "keys": list(self.inputs),
            "sliders": [k for k, c in self.inputs.items() if isinstance(c, gr.Slider)],
            "tabs": list(self.tabs),
            "owner": self.found()[0],
            "short": {k: short_name(k) for k in self.inputs},
            "examples": self.found()[1],
            "max": MAX_LINK_VALUE,
            "index": MAX_LINK_INDEX,
        }
        return OPENING_JS.replace("SPEC", json.dumps(spec))

    def select_tab(self, tab: str):
        """The tab a link names (set by opening_js), selected; anything else changes nothing."""
        return gr.Tabs(selected=tab) if tab in self.tabs else gr.skip()

    # opening views -------------------------------------------------------------------------
    def opening_inputs(self) -> list:
        return [c for o in self.openers for c in o.inputs]

    def opening_outputs(self) -> list:
        return [c for o in self.openers for c in o.outputs]

    def views(self, index: int, values: tuple, theme: str) -> tuple:
        """Opener `index`'s views for these values: computed once, then from the cache."""
        key = (index, _key(values), theme)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        views = tuple(self.openers[index].fn(*values, theme))
        with self._lock:
            self._cache[key] = views
            while len(self._cache) > OPENING_CACHE + len(self.openers):
                oldest = next(k for k in self._cache if k not in {o.initial_key for o in self.openers})
                del self._cache[oldest]
        return views

    def opening_views(self, *values):
        """Each tab's views for the page's inputs and theme (the last value). A tab on its
        start-up inputs in the light theme already shows them: no update is sent for it."""
        *values, theme = values
        theme = theme if theme in ("light", "dark") else "light"
        out, start = [], 0
        for i, opener in enumerate(self.openers):
            mine = tuple(values[start : start + len(opener.inputs)])
            start += len(opener.inputs)
            if (i, _key(mine), theme) == opener.initial_key:
                out += [gr.update()] * len(opener.outputs)
            else:
                out += list(self.views(i, mine, theme))
        return tuple(out)


# (...inputs) => [theme, tab, ...inputs, opening]: a value from the address where it is valid,
# else the page's own; `opening` changes (and recomputes the views) only where something differs
OPENING_JS = """(...values) => {
  const spec = SPEC;
  const query = new URLSearchParams(window.location.search);
  const theme = document.body.classList.contains('dark') ? 'dark' : 'light';
  let tab = spec.tabs.includes(query.get('tab')) ? query.get('tab') : '';
  if (!tab) tab = [...query].find(([k, v]) => v === '' && spec.tabs.includes(k))?.[0] ?? '';
  const n = query.get('example') ?? '';
  const example = (/^[0-9]+$/.test(n) && (spec.examples[tab] ?? [])[Number(n) - 1]) || {};
  const restored = values.map((value, i) => {
    const key = spec.keys[i];
    let given = query.get(key);
    if (given === null && spec.owner[key] === tab) given = query.get(spec.short[key]);
    if (given === null && Object.hasOwn(example, key)) return example[key];
    if (given === null || given.length > spec.max) return value;
    if (!spec.sliders.includes(key)) return given;
    return /^[0-9]+$/.test(given) && Number(given) <= spec.index ? Number(given) : value;
  });
  const differs = theme !== 'light' || restored.some((v, i) => v !== values[i]);
  return [theme, tab, ...restored, differs ? String(Date.now()) : ''];
}"""


# the link buttons' inputs: the page's address (in place of the link box's old text), the open tab
LINK_JS = (
    "(box, tab, ...rest) => [window.location.origin + window.location.pathname, "
    "document.querySelector('button[role=tab][aria-selected=true]')?.innerText ?? tab, ...rest]"
)


# Copy: the clipboard API where the page has it (https, localhost), else the older copy command
COPY_JS = """(link) => {
  if (!link || !link.startsWith('http')) return;
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(link);
  } else {
    const area = Object.assign(document.createElement('textarea'), {value: link});
    area.style.cssText = 'position:fixed; opacity:0';
    document.body.append(area);
    area.select();
    document.execCommand('copy');
    area.remove();
  }
  const button = document.querySelector('#share-copy');
  button.textContent = 'Copied';
  setTimeout(() => { button.textContent = 'Copy'; }, 1500);
}"""


def short_name(key: str) -> str:
    """A shared input's name in a link to its own tab: the key without its tab's prefix
    (mlm_text -> text, att_layer -> layer)."""
    return key.split("_", 1)[-1]


def _text(value) -> str:
    """A value from the page as a link writes it: a whole slider position without '.0'."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return "" if value is None else str(value)


def _differs(value, start) -> bool:
    return value is not None and _text(value) != _text(start)


def _descendants(block):
    for child in getattr(block, "children", []):
        yield child
        yield from _descendants(child)


def _key(values) -> tuple:
    """Values from the page as a cache key: '1' and 1 are the same slider position."""
    return tuple(_text(v) for v in values)
