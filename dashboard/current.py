"""Never a stale answer: every view remembers the inputs its results were computed from, and the
browser marks the view out of date (dimmed, "out of date: press Predict") as soon as one of them
differs, until the view is computed again. The model menus, sliders and radio buttons of the
quick views also recompute them at once; the slow views (attributions, probes) wait for their
button. Nothing here asks the server for anything: the marking runs in the page.

    ev = btn.click(tab.fill_mask, inputs, outputs, **ctx.queue)
    ctx.current.view("mlm", "Predict", [model, text, top_k], outputs, [ev],
                     rerun=[(model, "input"), (top_k, "input")], run=(tab.fill_mask, inputs, ctx.queue))

docs/dashboard.md states the rule for every tab.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import gradio as gr

# The page's half: defined once in the page's head (LAUNCH_OPTIONS), called by every view's events.
# A view's stamp is the inputs it was computed from; a view is out of date while the inputs differ
# from its stamp. An element shared by several views (a status line) is out of date while any of
# them is.
CURRENT_HEAD = """<script>
window.blCurrent = (() => {
  const stamps = {}, stale = {}, labels = {}, computed = {};
  const key = (values) => JSON.stringify(values.map((v) => (typeof v === "number" ? +v.toFixed(6) : v ?? "")));
  const paint = (name, label) => {
    labels[name] = label;
    const says = "out of date: press " + label;
    [...document.querySelectorAll(".bl-view-" + name)].forEach((el, i) => {
      const views = [...el.classList].filter((c) => c.startsWith("bl-view-")).map((c) => c.slice(8));
      el.classList.toggle("bl-stale", views.some((v) => stale[v]));
      // the line saying so: above the view's first element on the page
      if (i === 0 && stale[name]) el.setAttribute("data-stale", says);
      else if (el.getAttribute("data-stale") === says) el.removeAttribute("data-stale");
    });
  };
  // Gradio draws a closed accordion's content when it opens, and redraws components: paint again
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      for (const name of Object.keys(stale)) paint(name, labels[name]);
    });
  }).observe(document.documentElement, {childList: true, subtree: true});
  return {
    check(name, label, first, values) {
      const base = stamps[name] ?? (first === null ? null : key(first));  // null: nothing shown yet
      stale[name] = base !== null && key(values) !== base;
      paint(name, label);
    },
    stamp(name, label, values) {
      stamps[name] = key(values);
      stale[name] = false;
      computed[name] = (computed[name] ?? 0) + 1;
      paint(name, label);
      document.dispatchEvent(new CustomEvent("bl-computed", {detail: name}));  // dashboard.room listens
    },
    isStale: (name) => !!stale[name],
    label: (name) => labels[name] ?? "",
    computed: (name) => computed[name] ?? 0,  // how many times the view was computed in this page
  };
})();
</script>"""

CURRENT_CSS = """
/* out of date: greyed, its figures faded; its words keep their contrast (WCAG 1.4.3), a dashed frame says it too */
.bl-stale > * { filter: grayscale(1); }
.bl-stale .js-plotly-plot { opacity: 0.35; }
.bl-stale { outline: 2px dashed #b45309; outline-offset: 2px; }
.bl-stale[data-stale]::before {
  content: attr(data-stale); display: block; font-weight: 600; color: #92400e;
  background: #fef3c7; border-radius: 4px; padding: 2px 8px; margin-bottom: 4px;
}
"""


@dataclass
class View:
    name: str
    button: str
    inputs: list
    outputs: list


class Current:
    """The views of the page, by name (ctx.current)."""

    def __init__(self):
        self.views: dict[str, View] = {}

    def view(
        self, name: str, button: str, inputs: list, outputs: list, done: list, rerun=(), run=None, shown: bool = True
    ) -> View:
        """A view: `outputs` show what its events in `done` computed from `inputs` (the page's theme
        left out; the components' values at build are what the first results were computed from).
        shown=False: the page opens without its results (nothing to mark until it is computed).
        `rerun`: (component, event name) pairs whose change by the user recomputes the view at once
        with run = (fn, fn's inputs, queue settings), fn filling `outputs` (a slider dragged: one
        request at a time, then the last position)."""
        if name in self.views:
            raise ValueError(f"view {name!r} declared twice")
        view = self.views[name] = View(name, button, list(inputs), list(outputs))
        for out in outputs:
            if isinstance(out, gr.State):  # a figure's numbers: not drawn
                continue
            classes = out.elem_classes if isinstance(out.elem_classes, list) else [out.elem_classes or ""]
            out.elem_classes = [c for c in classes if c] + [f"bl-view-{name}"]
        first = json.dumps([_plain(c.value) for c in inputs]) if shown else "null"
        check = f"(...v) => {{ window.blCurrent?.check({name!r}, {button!r}, {first}, v); }}"
        for component in inputs:
            component.change(None, inputs, None, js=check, queue=False, show_progress="hidden")
        events = list(done)
        for component, trigger in rerun:
            fn, fn_inputs, queue = run
            listen = getattr(component, trigger)
            events.append(listen(fn, fn_inputs, outputs, api_visibility="private", trigger_mode="always_last", **queue))
        for event in events:
            self.after(event, view)
        return view

    def after(self, event, view: View) -> None:
        """The view is current once `event` has computed it (from the inputs it has then)."""
        event.then(
            None,
            view.inputs,
            None,
            js=f"(...v) => {{ window.blCurrent?.stamp({view.name!r}, {view.button!r}, v); }}",
            queue=False,
            show_progress="hidden",
        )


def _plain(value):
    """A component's build-time value as the page holds it (JSON)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def submit(boxes, fn, inputs, outputs, queue: dict) -> list:
    """Enter in any of these boxes runs fn, as its button does -> the events (for Current.view)."""
    return [box.submit(fn, inputs, outputs, api_visibility="private", **queue) for box in boxes]
