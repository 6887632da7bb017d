// A matrix's numbers as an HTML table, behind a toggle: rows and columns with their headers. A
// matrix wider than WIDE columns (a hidden vector, a feed-forward's units, the vocabulary) is
// turned on its side, one table row per column of the matrix and one table column per row, and
// shown PAGE rows at a time; the caption says so.
import { el } from "./plots.js";

const WIDE = 40;
const PAGE = 64;

function fmtCell(m, r, c) {
  return m.format(m.data[r * m.cols + c]);
}

function header(text, scope) {
  return el("th", { scope }, text);
}

// rows x cols as they are: a header row of the columns, a header cell starting each row.
function plain(m, table) {
  const head = el("tr");
  head.append(header(`${m.rowAxis} \\ ${m.colAxis}`, "col"));
  for (let c = 0; c < m.cols; c++) head.append(header(m.colName(c), "col"));
  table.append(el("thead"), el("tbody"));
  table.tHead.append(head);
  for (let r = 0; r < m.rows; r++) {
    const tr = el("tr");
    tr.append(header(m.rowName(r), "row"));
    for (let c = 0; c < m.cols; c++) tr.append(el("td", {}, fmtCell(m, r, c)));
    table.tBodies[0].append(tr);
  }
}

// Turned: one table row per matrix column (from `start`, PAGE of them), one table column per matrix row.
function turned(m, table, start) {
  const head = el("tr");
  head.append(header(`${m.colAxis} \\ ${m.rowAxis}`, "col"));
  for (let r = 0; r < m.rows; r++) head.append(header(m.rowName(r), "col"));
  table.append(el("thead"), el("tbody"));
  table.tHead.append(head);
  for (let c = start; c < Math.min(m.cols, start + PAGE); c++) {
    const tr = el("tr");
    tr.append(header(m.colName(c), "row"));
    for (let r = 0; r < m.rows; r++) tr.append(el("td", {}, fmtCell(m, r, c)));
    table.tBodies[0].append(tr);
  }
}

// How the table is laid out, in a sentence above it (the caption stays short: it scrolls with the table).
function layout(m, start) {
  const size = `${m.rows} × ${m.cols}`;
  if (m.cols <= WIDE) return `${size}; rows: ${m.rowAxis}, columns: ${m.colAxis}.`;
  const end = Math.min(m.cols, start + PAGE);
  return (
    `${size}, too wide to read across, so the table is turned on its side: one row per ${m.colAxis} ` +
    `(a column of the matrix), one column per ${m.rowAxis}. Rows ${start + 1}–${end} of ${m.cols}.`
  );
}

function render(m, box, start) {
  const table = el("table", { class: "numbers", "aria-describedby": `${m.id}-layout` });
  table.append(el("caption", {}, m.head === undefined ? m.title : `${m.title}, head ${m.head}`));
  if (m.cols <= WIDE) plain(m, table);
  else turned(m, table, start);
  const scroll = el("div", {
    class: "table-scroll",
    tabindex: "0",
    role: "region",
    "aria-label": `${m.title}, numbers`,
  });
  scroll.append(table);
  box.replaceChildren(el("p", { class: "table-layout", id: `${m.id}-layout` }, layout(m, start)), scroll);
  if (m.cols > WIDE) box.append(pager(m, box, start));
}

function pager(m, box, start) {
  const nav = el("div", { class: "pager" });
  const back = el("button", { type: "button" }, `Previous ${PAGE}`);
  const next = el("button", { type: "button" }, `Next ${PAGE}`);
  back.disabled = start === 0;
  next.disabled = start + PAGE >= m.cols;
  back.addEventListener("click", () => turn(m, box, Math.max(0, start - PAGE), "back"));
  next.addEventListener("click", () => turn(m, box, start + PAGE, "next"));
  nav.append(back, next);
  return nav;
}

function turn(m, box, start, which) {
  render(m, box, start);
  const buttons = box.querySelectorAll(".pager button");
  const keep = which === "next" ? buttons[1] : buttons[0];
  (keep.disabled ? buttons[which === "next" ? 0 : 1] : keep).focus();
}

/** [the toggle button, the box the table goes in]: the table is built when first shown. */
export function tableOf(m) {
  const boxId = `${m.id}-table`;
  const toggle = el("button", {
    type: "button",
    class: "table-toggle",
    "aria-expanded": "false",
    "aria-controls": boxId,
  });
  toggle.textContent = `Show the numbers as a table`;
  const box = el("div", { class: "table-box", id: boxId });
  box.hidden = true;
  toggle.addEventListener("click", () => {
    const open = box.hidden;
    if (open && !box.firstChild) render(m, box, 0);
    box.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    toggle.textContent = open ? "Hide the table" : "Show the numbers as a table";
  });
  return [toggle, box];
}
