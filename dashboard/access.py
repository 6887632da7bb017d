"""Every student can use the page (WCAG 2.1 AA; docs/accessibility.md): the theme's colours, a
visible focus, the figures named by what they show, results announced, and the keyboard.

- THEME: Gradio's Soft theme with darker text and buttons: every text at least 4.5:1.
- ACCESS_HEAD, in the page's head (LAUNCH_OPTIONS): each figure's svg named by its summary (the
  sentence a figure's table computes, layout.meta.summary, lab.figures.tables), its other svg
  layers hidden from screen readers; a figure's toolbar, a row of clickable words and the tabs
  each one Tab stop, walked with the arrow keys; blank chips between words hidden; a box that
  scrolls focusable; every status line a polite live region, which also says what the view's
  figures show once they are drawn (visually hidden), and Gradio's own announcer, which says
  "common.complete", silenced.
- ACCESS_CSS: the focus outline, the colour chips' text, the visually hidden text.
The figures' data as a table, on demand: dashboard.common.FigureDownloads.
"""

from __future__ import annotations

import gradio as gr

# Soft's indigo accents are 3.6:1 to 4.5:1 on their backgrounds; one or two shades darker pass.
THEME = gr.themes.Soft().set(
    block_label_text_color="*primary_700",
    block_title_text_color="*primary_700",
    color_accent="*primary_700",
    color_accent_soft="*primary_100",
    button_primary_background_fill="*primary_700",
    button_primary_background_fill_hover="*primary_800",
    button_primary_background_fill_dark="*primary_600",
    button_primary_background_fill_hover_dark="*primary_700",
    button_secondary_background_fill_hover_dark="*primary_700",
    checkbox_label_background_fill_selected="*primary_700",
    checkbox_label_background_fill_selected_dark="*primary_700",
    body_text_color_subdued="*neutral_600",
    body_text_color_subdued_dark="*neutral_300",
    link_text_color="*primary_700",
    link_text_color_dark="*primary_300",
)

ACCESS_HEAD = """<script>
window.blAccess = (() => {
  // one Tab stop for a group: the item last used (else the first) takes Tab, arrows move along
  const roving = (items, current) => {
    const at = Math.max(0, items.indexOf(current));
    items.forEach((el, i) => el.setAttribute("tabindex", i === at ? "0" : "-1"));
  };
  const KEYS = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, Home: -1e9, End: 1e9};
  const walk = (e, items, activate) => {
    const i = items.indexOf(e.target);
    if (i < 0) return;
    if (e.key in KEYS) {
      const next = items[Math.min(items.length - 1, Math.max(0, i + KEYS[e.key]))];
      roving(items, next);
      next.focus();
      if (activate) next.click();
      e.preventDefault();
    } else if ((e.key === "Enter" || e.key === " ") && !activate && e.target.tagName !== "BUTTON") {
      e.target.click();
      e.preventDefault();
    }
  };
  const GROUPS = [  // [container, items, arrows also activate (tabs)]
    [".js-plotly-plot .modebar", ".modebar-btn", false],
    ['[data-testid="highlighted-text"] .textfield', ".token:is(.selectable, [tabindex]):not([aria-hidden])", false],
    ['[role="tablist"]', 'button[role="tab"]', true],
  ];
  const label = (gd) => {
    const coded = gd.layout?.meta?.summary ?? gd._fullLayout?.meta?.summary;  // percent-encoded (plotly_canvas)
    const summary = coded ? decodeURIComponent(coded) : "";
    const svgs = [...gd.querySelectorAll("svg.main-svg")];
    svgs.forEach((svg, i) => {
      if (i === 0 && summary) {
        svg.setAttribute("role", "img");
        if (svg.getAttribute("aria-label") !== summary) svg.setAttribute("aria-label", summary);
        svg.removeAttribute("aria-hidden");
        for (const part of svg.children) part.setAttribute("aria-hidden", "true");  // the name says it all
      } else {
        svg.setAttribute("aria-hidden", "true");
      }
    });
  };
  const set = (el, attrs) => {
    for (const [k, v] of Object.entries(attrs)) v === null ? el.removeAttribute(k) : el.setAttribute(k, v);
  };
  const SIDEWAYS = "figure, scrolls sideways";
  const scan = () => {
    document.querySelectorAll(".js-plotly-plot").forEach(label);
    // the blank chip between two words: nothing to say, nothing to click
    document.querySelectorAll(".token.selectable").forEach((el) => {
      if (!el.textContent.trim()) set(el, {"aria-hidden": "true", role: null});
    });
    for (const [box, item] of GROUPS) {
      document.querySelectorAll(box).forEach((c) => {
        const items = [...c.querySelectorAll(item)];
        if (items.length && !items.some((el) => el.getAttribute("tabindex") === "0")) roving(items, null);
      });
    }
    document.querySelectorAll(".bl-status:not(:has(.bl-status))").forEach((el) => {
      if (el.getAttribute("role") !== "status") set(el, {role: "status", "aria-live": "polite"});
    });
    // Gradio's announcer says its untranslated "common.complete" after every event: the status lines say the result
    document.querySelectorAll('.sr-only[role="status"][aria-live="polite"]').forEach((el) => {
      if (!el.closest(".bl-status")) set(el, {"aria-live": "off", role: null, "aria-hidden": "true"});
    });
    // Gradio's settings panel closes with a button that has only a picture: it says what it does
    document.querySelectorAll(".banner-wrap > button:not([aria-label])").forEach((b) => {
      if (!b.textContent.trim()) set(b, {"aria-label": "Close the settings"});
    });
    // an empty component's picture is named by aria-label, which a plain div may not carry
    document.querySelectorAll("div.empty[aria-label]:not([role])").forEach((el) => set(el, {role: "img"}));
    // a box that scrolls (a long context) must take focus, so a keyboard can scroll it
    document.querySelectorAll(".block:has(> .js-plotly-plot)").forEach((el) => {
      const scrolls = el.scrollWidth > el.clientWidth + 1, was = el.getAttribute("aria-label") === SIDEWAYS;
      if (scrolls && !was) set(el, {tabindex: "0", role: "region", "aria-label": SIDEWAYS});
      if (!scrolls && was) set(el, {tabindex: null, role: null, "aria-label": null});
    });
    for (const [selector, name] of [["#qa-span .container", "the context"], [".bl-card", "the model card"]]) {
      document.querySelectorAll(`${selector}:not([tabindex])`).forEach((el) => {
        set(el, {tabindex: "0", role: "region", "aria-label": `${name}, scrollable`});
      });
    }
  };
  let queued = false;
  const later = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; scan(); });
  };
  new MutationObserver(later).observe(document.documentElement, {childList: true, subtree: true, characterData: true});
  document.addEventListener("plotly_afterplot", later, true);
  document.addEventListener("keydown", (e) => {
    // Gradio's model menu opens on focus and stayed open after Tab, over the next label: Tab closes it
    if (e.key === "Tab" && e.target.matches?.('input[role="combobox"][aria-expanded="true"]')) {
      e.target.dispatchEvent(new KeyboardEvent("keydown", {key: "Escape", bubbles: true}));
    }
    for (const [box, item, activate] of GROUPS) {
      const c = e.target.closest?.(box);
      if (c && e.target.matches(item)) return walk(e, [...c.querySelectorAll(item)], activate);
    }
  });
  // the item used last keeps the group's Tab stop
  document.addEventListener("focusin", (e) => {
    for (const [box, item] of GROUPS) {
      const c = e.target.closest?.(box);
      if (c && e.target.matches(item)) roving([...c.querySelectorAll(item)], e.target);
    }
  });
  // a view computed (dashboard.current): its status line, a live region, also says what its figures
  // show, in words only a screen reader reads, once the figures are drawn
  const say = (view, tries) => {
    const plots = [...document.querySelectorAll(`.bl-view-${view} .js-plotly-plot`)];
    const coded = plots.map((gd) => gd.layout?.meta?.summary ?? "");
    if (coded.some((c) => !c) && tries > 0) return setTimeout(() => say(view, tries - 1), 150);
    const words = coded.filter(Boolean).map(decodeURIComponent).join(" ");
    document.querySelectorAll(`.bl-view-${view}.bl-status:not(:has(.bl-status))`).forEach((status) => {
      const body = status.querySelector(".prose") ?? status;
      let span = body.querySelector(":scope > .bl-said");
      if (!words) return span?.remove();
      if (!span) span = Object.assign(document.createElement("span"), {className: "bl-sr bl-said"});
      if (span.textContent !== " " + words) span.textContent = " " + words;
      if (!span.isConnected) body.appendChild(span);
    });
  };
  // said again a little later: a status line or a figure Gradio draws after the event is said too
  document.addEventListener("bl-computed", (e) =>
    [100, 700, 2000].forEach((ms) => setTimeout(() => say(e.detail, 20), ms)));
  return {scan, say};
})();
</script>"""

ACCESS_CSS = """
/* a visible focus on every control, in both themes (Gradio draws some inputs without one) */
:focus-visible, textarea:focus-visible, input:focus-visible, button:focus-visible, [tabindex]:focus-visible {
  outline:3px solid #1d4ed8 !important; outline-offset:2px !important}
.dark :focus-visible, .dark textarea:focus-visible, .dark input:focus-visible, .dark button:focus-visible,
.dark [tabindex]:focus-visible {outline-color:#93c5fd !important}
/* a figure's toolbar shows while one of its buttons has the focus, not only under the mouse */
.js-plotly-plot .modebar-container:focus-within .modebar {opacity:1 !important}
/* the colour chips' words: dark on every chip colour (white on orange was 2.8:1) */
.highlighted.token .label {color:#111827 !important}
.dark .highlighted.token .text, .dark .legend-item {color:#ffffff !important}
/* the theme's one accent colour (no dark variant) is the selected tab's and a table's label's text */
.dark button[role="tab"][aria-selected="true"], .dark .header-row .label p, .dark .banner-wrap .url {
  color:var(--primary-300) !important}
/* the narrowest phones (320 px): a figure keeps the width its titles and labels need, and scrolls
   sideways in its own box (a chart is two-dimensional content, WCAG 1.4.10); the page does not */
@media (max-width: 420px) {
  .block:has(> .js-plotly-plot) {overflow-x:auto !important}
  .block > .js-plotly-plot {min-width:440px}
}
/* read by a screen reader, not drawn */
.bl-sr {position:absolute !important; width:1px; height:1px; padding:0; margin:-1px; overflow:hidden;
  clip:rect(0,0,0,0); white-space:nowrap; border:0}
"""
