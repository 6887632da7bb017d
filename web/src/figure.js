// What makes a view's figure readable without seeing it: its one-sentence summary as its name, its
// numbers as a real HTML table (a caption, headers with their scope) behind a "the numbers as a
// table" disclosure, and, for an attention map, its tokens as buttons that arrow keys walk.
// Everything is set as text (el), never as markup.
import { el } from "./plots.js";

const NUMBER = /^[<−-]?\d*\.?\d+%?$/; // a cell right-aligned as a number; words align left

/**
 * The numbers as a table, shown on demand: a <details> holding a scrolling region (focusable, so a
 * keyboard can scroll it) around a table. columns: the header row; rows: [row header, ...cells].
 * key: what keeps it open through a redraw (data-key).
 */
export function numbersTable({ key, caption, columns, rows }) {
  const table = el("table", { class: "numbers" });
  table.append(el("caption", {}, caption), el("thead"), el("tbody"));
  const head = el("tr");
  for (const c of columns) head.append(el("th", { scope: "col" }, c));
  table.tHead.append(head);
  for (const [first, ...cells] of rows) {
    const tr = el("tr");
    tr.append(el("th", { scope: "row" }, String(first)));
    for (const c of cells) tr.append(el("td", NUMBER.test(String(c)) ? {} : { class: "text" }, String(c)));
    table.tBodies[0].append(tr);
  }
  const scroll = el("div", { class: "table-scroll", tabindex: "0", role: "region" });
  scroll.setAttribute("aria-label", `${caption}, numbers`);
  scroll.append(table);
  const details = el("details", { class: "numbers-box", "data-key": key });
  const summary = el("summary", { "data-focus": `${key}-toggle` }, "The numbers as a table");
  summary.append(el("span", { class: "sr-only" }, ` for ${caption}`));
  details.append(summary, scroll);
  return details;
}

/** A figure and its table together, in one block of the page. */
export function withTable(figure, table) {
  const box = el("div", { class: "fig" });
  box.append(figure, table);
  return box;
}

/** Arrow keys move focus along `buttons` (one tab stop: the current one); Home and End jump. */
function roving(buttons, current) {
  buttons.forEach((b, i) => {
    b.tabIndex = i === current ? 0 : -1;
    b.addEventListener("keydown", (e) => {
      const to = { ArrowRight: i + 1, ArrowDown: i + 1, ArrowLeft: i - 1, ArrowUp: i - 1, Home: 0 }[e.key];
      const next = e.key === "End" ? buttons.length - 1 : to;
      if (next === undefined) return;
      e.preventDefault();
      const j = Math.max(0, Math.min(buttons.length - 1, next));
      buttons.forEach((x, k) => (x.tabIndex = k === j ? 0 : -1));
      buttons[j].focus();
    });
  });
}

/** The map's tokens as buttons: Enter, Space or a click outlines a token's row and column (again: clears). */
export function tokenPicker(tokens, { selected = -1, onPick, label }) {
  const box = el("div", { class: "token-pick", role: "toolbar", "aria-label": label });
  box.append(el("span", { class: "token-pick-label", "aria-hidden": "true" }, `${label}:`));
  const buttons = tokens.map((tok, i) => {
    const b = el("button", { type: "button", "aria-pressed": String(i === selected), "data-focus": `token-${i}` });
    b.append(tok, el("span", { class: "sr-only" }, ` (token ${i})`));
    b.addEventListener("click", () => onPick(i));
    return b;
  });
  box.append(...buttons);
  roving(buttons, Math.max(0, selected));
  return box;
}

/** The figures' block redrawn by `draw`, keeping the focused control and the open tables as they were. */
export function redrawKeeping(out, draw) {
  const focused = out.contains(document.activeElement) ? document.activeElement.dataset.focus : null;
  const open = [...out.querySelectorAll("details[open]")].map((d) => d.dataset.key);
  out.replaceChildren();
  draw();
  for (const key of open) out.querySelector(`details[data-key="${key}"]`)?.setAttribute("open", "");
  if (focused) out.querySelector(`[data-focus="${focused}"]`)?.focus();
}
