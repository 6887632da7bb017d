"""What the room sees, all in the page (no request): a view computed after something done in
its tab scrolls into view, and presenter mode (the header's switch or `?presenter=1`) draws text
and figures larger, with a full-screen button on every figure and one head at a time for models
with many heads. docs/dashboard.md says how; the JavaScript and CSS are LAUNCH_OPTIONS' head and css.
"""

from __future__ import annotations

import gradio as gr

# The page's half. blCurrent (dashboard.current) sends "bl-computed" whenever a view is computed;
# a view is brought into view when the last thing the student did was in the same tab, recently.
ROOM_HEAD = """<script>
window.blRoom = (() => {
  const MARGIN = 12, RECENT_MS = 120000, MANY_HEADS = 4;
  let touched = null;  // {panel, time}: the last click or key in a tab
  const panelOf = (el) => el?.closest?.('[role="tabpanel"]') ?? null;
  const touch = (e) => {
    const panel = panelOf(e.target);
    if (panel) touched = {panel, time: Date.now(), key: e.type === "keydown"};
  };
  document.addEventListener("pointerdown", touch, true);
  document.addEventListener("keydown", touch, true);
  const shown = (el) => el.offsetParent !== null || el.getClientRects().length > 0;
  // Scroll the window as little as brings the region [top, bottom] (viewport coordinates) into
  // view: its first 60% of a screen where it is taller; the control just used, right above a
  // result, stays on screen that way.
  const bring = (top, bottom) => {
    const h = window.innerHeight;  // the boxes are in the window's pixels, presenter mode's zoom included
    const wanted = Math.min(bottom, top + h * 0.6);
    let delta = 0;
    if (top < MARGIN) delta = top - MARGIN;
    else if (wanted > h - MARGIN) delta = wanted - (h - MARGIN);
    // working by keyboard, the focused control stays on screen (Tab through a menu recomputes a view)
    const focused = document.activeElement;
    if (delta && touched?.key && focused && focused !== document.body) {
      const f = focused.getBoundingClientRect();
      if (f.height > 0) delta = Math.min(Math.max(delta, f.bottom - h + MARGIN), f.top - MARGIN);
    }
    if (delta) window.scrollBy({top: delta, behavior: "instant"});
  };
  const region = (els) => {
    const boxes = els.filter(shown).map((el) => el.getBoundingClientRect()).filter((r) => r.height > 0);
    if (!boxes.length) return null;
    return [Math.min(...boxes.map((r) => r.top)), Math.max(...boxes.map((r) => r.bottom))];
  };
  const toAnswer = () => {  // a long context: its box scrolls to the (first) answer
    const box = document.querySelector("#qa-span .container");
    const mark = document.querySelector("#qa-span .token.highlighted");
    if (!box || !mark) return;
    const top = mark.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
    box.scrollTop = Math.max(0, top - box.clientHeight / 3);
  };
  const reveal = (els, force) => {
    const panel = panelOf(els[0]);
    const recent = touched && touched.panel === panel && Date.now() - touched.time < RECENT_MS;
    if (!force && !recent) return;
    if (!panel || panel.offsetParent === null) return;  // another tab: leave the page alone
    const r = region(els);
    if (r) bring(r[0], r[1]);
  };
  const later = (fn) => requestAnimationFrame(() => setTimeout(fn, 60));  // once Gradio has drawn it
  document.addEventListener("bl-computed", (e) => later(() => {
    const els = [...document.querySelectorAll(".bl-view-" + e.detail)];
    if (e.detail === "qa") toAnswer();
    if (els.length) reveal(els, false);
  }));
  // presenter mode --------------------------------------------------------------------------
  const heads = () => {  // the all-heads view: one head at a time where there are many
    const grid = document.querySelector("#att-grid");
    if (!grid) return;
    const n = grid.querySelectorAll(".cartesianlayer .subplot").length;
    grid.closest(".column, .block")?.classList.toggle("bl-many-heads", n > MANY_HEADS);
    document.body.classList.toggle("bl-one-head", n > MANY_HEADS);  // the note saying so shows only then
  };
  // full screen: a bar with a way out and the figure's "out of date" line, the figure as tall as the screen
  const staleSays = (box) => {
    const view = box.closest('[class*="bl-view-"]');
    if (!view || !view.classList.contains("bl-stale")) return "";
    const name = [...view.classList].find((c) => c.startsWith("bl-view-"))?.slice(8);
    return "out of date: press " + (window.blCurrent?.label(name) || "its button");
  };
  const fit = (box) => {
    const plot = box.querySelector(".js-plotly-plot"), bar = box.querySelector(":scope > .bl-full-bar");
    if (!plot || !window.Plotly || !plot.layout) return;
    const zoom = parseFloat(getComputedStyle(plot).zoom) || 1;
    const height = Math.floor((window.innerHeight - (bar?.offsetHeight ?? 0) - MARGIN) / zoom);
    plot.dataset.blHeight ??= plot.layout.height ?? plot._fullLayout?.height ?? "";  // its own, for the way back
    plot.dataset.blFull = height;
    window.Plotly.relayout(plot, {height});
  };
  const unfit = (box) => {
    for (const plot of box.querySelectorAll(".js-plotly-plot")) {
      const was = plot.dataset.blHeight, set = plot.dataset.blFull;
      delete plot.dataset.blHeight; delete plot.dataset.blFull;
      if (was && window.Plotly && String(plot.layout?.height) === set) window.Plotly.relayout(plot, {height: +was});
    }
  };
  const fullscreen = () => {
    for (const plot of document.querySelectorAll(".js-plotly-plot")) {
      const box = plot.parentElement;
      if (!box || box.querySelector(":scope > .bl-full")) continue;
      const btn = document.createElement("button");
      btn.className = "bl-full";
      btn.type = "button";
      btn.textContent = "full screen";
      btn.title = "Show this figure on the whole screen (Esc or its Exit full screen button returns)";
      btn.addEventListener("click", () => box.requestFullscreen?.());
      box.prepend(btn);
    }
  };
  let watching = null;
  const enter = (box) => {
    let bar = box.querySelector(":scope > .bl-full-bar");
    if (!bar) {
      bar = document.createElement("div");
      bar.className = "bl-full-bar";
      const out = document.createElement("button");
      out.type = "button";
      out.className = "bl-exit";
      out.textContent = "Exit full screen";
      out.addEventListener("click", () => document.exitFullscreen?.());
      const stale = document.createElement("span");
      stale.className = "bl-full-stale";
      bar.append(out, stale);
      box.prepend(bar);
    }
    const label = () => {
      const says = staleSays(box);
      bar.querySelector(".bl-full-stale").textContent = says;
      box.classList.toggle("bl-full-old", !!says);
    };
    label();
    clearInterval(watching);
    watching = setInterval(label, 400);  // the inputs change behind it: the line appears
    fit(box);
    bar.querySelector(".bl-exit").focus();
  };
  document.addEventListener("fullscreenchange", () => {
    const box = document.fullscreenElement;
    if (box?.querySelector?.(":scope > .bl-full")) { enter(box); return; }
    clearInterval(watching);
    for (const was of document.querySelectorAll(".bl-full-old")) was.classList.remove("bl-full-old");
    for (const bar of document.querySelectorAll(".bl-full-bar")) unfit(bar.parentElement);
  });
  let queued = false;
  new MutationObserver(() => {
    if (queued || !document.body.classList.contains("bl-presenter")) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; fullscreen(); heads(); });
  }).observe(document.documentElement, {childList: true, subtree: true});
  const relayout = () => window.dispatchEvent(new Event("resize"));  // figures take the new width
  document.addEventListener("fullscreenchange", () => setTimeout(relayout, 100));  // then fit's height
  const presenter = (on) => {
    document.body.classList.toggle("bl-presenter", !!on);
    if (on) { fullscreen(); heads(); }
    setTimeout(relayout, 50);
    const url = new URL(window.location.href);
    if (on) url.searchParams.set("presenter", "1"); else url.searchParams.delete("presenter");
    window.history.replaceState(null, "", url);  // a reload keeps the mode
    return !!on;
  };
  const asked = () => ["1", "true", "on", "yes"].includes(new URLSearchParams(location.search).get("presenter") ?? "");
  const revealId = (id) => later(() => {
    const el = document.getElementById(id);
    if (el) reveal([el], false);
  });
  const isPresenter = () => document.body.classList.contains("bl-presenter");
  return {presenter, asked, reveal: revealId, isPresenter};
})();
</script>"""

ROOM_CSS = """
/* a compact header: the title, the switch and the link on one line; the introductions behind a toggle */
#bl-header {align-items:center; gap:var(--spacing-md)}
#bl-header h1 {font-size:1.5rem; margin:0}
#bl-title, #bl-presenter {flex-grow:0 !important; min-width:max-content !important}
#bl-about {flex-grow:1 !important; min-width:200px !important}
#bl-header {flex-wrap:wrap !important}  /* a phone: the folded sentence goes under the title */
@media (max-width: 500px) {  /* a phone: titles of 48 characters a line fit at this size */
  .js-plotly-plot .gtitle {font-size:12px !important}
  /* a model menu on a line of its own: bert-lab-classroom and bert-lab-classroom-modern both readable */
  .bl-model-menu {flex-basis:100% !important; min-width:100% !important}
}
.bl-intro > summary {cursor:pointer; font-weight:600; list-style-position:inside}
.bl-intro[open] > summary {margin-bottom:var(--spacing-sm)}
/* a long context scrolls inside its box, to the answer */
#qa-span .container {max-height:14em; overflow-y:auto}
/* presenter mode: text about 1.3 times larger (Gradio's sizes, declared again where they are
   derived: a custom property's var() is resolved where it is declared), figures zoomed: plotly lays
   them out again for the narrower width, so their labels do not overlap. The whole page is not
   zoomed: Gradio places a menu's list from on-screen boxes, which zoom would shift. */
body.bl-presenter {
  --text-xxs:12px !important; --text-xs:13px !important; --text-sm:16px !important;
  --text-md:18px !important; --text-lg:21px !important; --text-xl:28px !important;
  --text-xxl:34px !important; --body-text-size:var(--text-md) !important;
  --block-info-text-size:var(--text-sm) !important; --block-label-text-size:var(--text-md) !important;
  --block-title-text-size:var(--text-md) !important; --section-header-text-size:var(--text-md) !important;
  --checkbox-label-text-size:var(--text-md) !important; --input-text-size:var(--text-md) !important;
  --prose-text-size:var(--text-md) !important; --button-large-text-size:var(--text-lg) !important;
  --button-small-text-size:var(--text-sm) !important; --button-medium-text-size:var(--text-md) !important;
}
body.bl-presenter .js-plotly-plot {zoom:1.3}
body.bl-presenter .tab-wrapper button {font-size:15px !important}  /* every tab's name fits on the line */
body.bl-presenter .bl-many-heads {display:none !important}
body.bl-presenter.bl-one-head #att-one-head-note {display:block !important}  /* only where it is true */
#att-one-head-note {display:none}
.bl-full {display:none; position:absolute; left:8px; top:8px; font-size:var(--text-sm); padding:2px 8px;
  border:1px solid var(--border-color-primary); border-radius:4px; background:var(--background-fill-primary);
  color:var(--body-text-color); z-index:5}
body.bl-presenter .bl-full {display:inline-block !important}  /* Gradio repeats each rule, more specific */
:fullscreen {background:var(--background-fill-primary); overflow:auto}
:fullscreen .bl-full {display:none !important}
/* full screen: a bar on top (the way out, and "out of date" where it is), the figure drawn at full strength */
.bl-full-bar {display:none}
:fullscreen > .bl-full-bar {display:flex !important; align-items:center; gap:var(--spacing-lg); padding:6px 8px}
.bl-exit {font-size:var(--text-lg); padding:6px 16px; border:2px solid var(--body-text-color); border-radius:6px;
  background:var(--background-fill-primary); color:var(--body-text-color); cursor:pointer}
.bl-full-stale:empty {display:none}
.bl-full-stale {font-size:var(--text-lg); font-weight:600; color:#92400e; background:#fef3c7; border-radius:4px;
  padding:4px 10px}
:fullscreen.bl-full-old {outline:4px dashed #b45309; outline-offset:-4px}
:fullscreen .js-plotly-plot {opacity:1 !important}
/* every tab's name in view, on a phone too: the names wrap onto a second line instead of going into
   Gradio's overflow menu (its measuring copies are drawn tiny, so it counts every tab as fitting) */
.tab-container.visually-hidden > button {padding:0 !important; font-size:1px !important}
.tab-wrapper {height:auto !important}
.tab-container:not(.visually-hidden) {flex-wrap:wrap !important; height:auto !important; overflow:visible !important}
.tab-container:not(.visually-hidden) > button {height:var(--size-8) !important}
.tab-wrapper .overflow-menu {display:none !important}
@media (max-width: 500px) {.tab-container:not(.visually-hidden) > button {padding:0 10px !important}}
"""

# the switch's events run in the page only (no request)
PRESENTER_JS = "(on) => window.blRoom?.presenter(on)"
PRESENTER_ASKED_JS = "() => window.blRoom?.asked() ?? false"
PRESENTER_NOTE = (
    "Presenter mode shows one head at a time: move the **head** slider above. The all-heads view returns when "
    "presenter mode is off."
)


def presenter_switch() -> gr.Checkbox:
    """The presenter mode's switch (checked when the address asks for it); wired by `wire`."""
    return gr.Checkbox(
        False,
        label="Presenter mode",
        elem_id="bl-presenter",
        container=False,
        scale=0,
        min_width=160,
    )


def wire(demo: gr.Blocks, switch: gr.Checkbox) -> None:
    """The switch turns the mode on and off in the page; `?presenter=1` turns it on as it opens."""
    switch.change(None, switch, None, js=PRESENTER_JS, queue=False, show_progress="hidden")
    demo.load(None, None, switch, js=PRESENTER_ASKED_JS, queue=False, show_progress="hidden")


def reveal(event, elem_id: str):
    """After `event`, bring the element `elem_id` into view (when the student's last action was in
    its tab) -> the chained event."""
    return event.then(None, None, None, js=f"() => {{ window.blRoom?.reveal({elem_id!r}); }}", queue=False)


def intro(text: str, summary: str = "What you are looking at") -> gr.HTML:
    """A tab's introduction, folded: one line until the student opens it. `text` is the tab's
    Markdown help (dashboard.help.HELP), bold lead-in included."""
    body = text.split(":**", 1)[1].strip() if text.startswith(f"**{summary}:**") else text
    return gr.Markdown(
        f'<details class="bl-intro"><summary>{summary}</summary>\n\n{body}\n\n</details>',
        elem_classes="bl-intro-box",
    )
