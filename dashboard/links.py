"""Shared inputs, declared once by each tab: the inputs a link restores and the views a page
opens with.

    ctx.links.share("mlm", mlm_model=menu, mlm_text=text)      # ?tab=mlm&mlm_text=... restores them
    views = tab.opening(model, text, "light")                  # computed once, when the page is built
    ctx.links.opening(tab.opening, [menu, text], outputs, views)

Everything else is derived from these declarations: the link button's query string, what a link
restores when a page opens (in the browser: opening_js), and the opening views. A page opened
with the tabs' defaults in the light theme shows the views computed at start-up and asks the
server for nothing but its session; a link or the dark theme recomputes only the tabs whose
inputs differ, from a small cache shared by all pages.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import urlencode

import gradio as gr

MAX_LINK_VALUE = 20_000  # characters of one value in a link (as a typed text)
MAX_LINK_INDEX = 63  # a layer or head number in a link (the handlers check it against the model)
OPENING_CACHE = 32  # opening views kept for the next pages


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
        self._cache: OrderedDict[tuple, tuple] = OrderedDict()
        self._lock = threading.Lock()

    # declarations --------------------------------------------------------------------------
    def tab(self, tab_id: str, name: str) -> gr.Tab:
        """A tab of the page; links name it by its id (?tab=mlm)."""
        self.tabs[tab_id] = name
        return gr.Tab(name, id=tab_id)

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

    # the link button -----------------------------------------------------------------------
    def share_link(self, tab, *values, request: gr.Request = None) -> str:
        """A link to this page that restores the current tab and its inputs: the values in the
        query string, after the page's address when the request says it (else relative: the
        page's ABSOLUTE_LINK_JS completes it in the browser)."""
        headers = getattr(request, "headers", None) or {}
        base = (headers.get("referer") or "").split("?", 1)[0]
        tab = str(tab).strip()  # the browser sends the tab's name
        tab = next((i for i, name in self.tabs.items() if name == tab), tab)
        query = {"tab": tab if tab in self.tabs else next(iter(self.tabs))}
        query |= {k: str(v) for k, v in zip(self.inputs, values) if v not in (None, "")}
        return f"{base}?{urlencode(query)}"

    def opening_js(self) -> str:
        """The page's opening, in the browser (no request to the server): the theme, and a link's
        tab and inputs from the address (?tab=mlm&mlm_text=...), each checked as a typed one would
        be (a whole number where a slider is, a bounded length; a bad value is ignored). Its
        outputs: theme, the tab to select ('' for none), the inputs, and the `opening` trigger
        (a new value only where a view must be recomputed: a link's input or the dark theme)."""
        spec = {
            "keys": list(self.inputs),
            "sliders": [k for k, c in self.inputs.items() if isinstance(c, gr.Slider)],
            "tabs": list(self.tabs),
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
  const restored = values.map((value, i) => {
    const key = spec.keys[i], given = query.get(key);
    if (given === null || given.length > spec.max) return value;
    if (!spec.sliders.includes(key)) return given;
    return /^[0-9]+$/.test(given) && Number(given) <= spec.index ? Number(given) : value;
  });
  const tab = spec.tabs.includes(query.get('tab')) ? query.get('tab') : '';
  const differs = theme !== 'light' || restored.some((v, i) => v !== values[i]);
  return [theme, tab, ...restored, differs ? String(Date.now()) : ''];
}"""


def _key(values) -> tuple:
    """Values from the page as a cache key: '1' and 1 are the same slider position."""
    return tuple("" if v is None else str(v) for v in values)
