// Plain SVG figures for the page: bars, a heatmap and a grid of small heatmaps. Every label is
// set as text (textContent), never as markup, so whatever a student types is shown, not run.
const SVG = "http://www.w3.org/2000/svg";

/** An element with attributes and optional text (set as text, never parsed as markup). */
export function el(tag, attrs = {}, text = null, ns = null) {
  const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) node.textContent = text;
  return node;
}

const svg = (tag, attrs, text = null) => el(tag, attrs, text, SVG);

/** A percentage as the page writes it: 41.2%, 0.03%, <0.01%. */
export function percent(p) {
  const x = 100 * p;
  if (x >= 10) return `${x.toFixed(1)}%`;
  if (x >= 0.01) return `${x.toFixed(2)}%`;
  return "<0.01%";
}

/** Horizontal bars, one a row: rows = [{label, value in [0, 1]}], best first as given; name: its summary. */
export function bars(rows, { title = "", highlight = -1, name = "" } = {}) {
  const rowH = 26;
  const labelW = 150;
  const width = 460;
  const height = rows.length * rowH + (title ? 24 : 4);
  const figure = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "bars", role: "img", "aria-label": name });
  if (title) figure.append(svg("text", { x: 0, y: 16, class: "title" }, title));
  const top = title ? 24 : 4;
  rows.forEach((row, i) => {
    const y = top + i * rowH;
    const w = Math.max(1, (width - labelW - 70) * Math.min(1, Math.max(0, row.value)));
    const label = row.label.length > 22 ? `${row.label.slice(0, 21)}…` : row.label;
    figure.append(svg("text", { x: labelW - 8, y: y + 17, class: "label", "text-anchor": "end" }, label));
    figure.append(
      svg("rect", { x: labelW, y: y + 4, width: w, height: rowH - 8, class: i === highlight ? "bar hi" : "bar" }),
    );
    figure.append(svg("text", { x: labelW + w + 6, y: y + 17, class: "value" }, percent(row.value)));
    figure.lastChild.append(svg("title", {}, `${row.label}: ${percent(row.value)}`));
  });
  return figure;
}

function colour(v) {
  const t = Math.sqrt(Math.min(1, Math.max(0, v))); // small weights stay visible
  const light = 97 - 62 * t;
  return `hsl(222, 70%, ${light}%)`;
}

/** One head's attention: rows attend (from) to columns (to); tokens readable on both axes; name: its summary. */
export function heatmap(tokens, matrix, { title = "", selected = -1, onPick = null, name = "" } = {}) {
  const n = tokens.length;
  const cell = Math.max(10, Math.min(28, Math.floor(520 / Math.max(n, 1))));
  const labelW = 90;
  const size = n * cell;
  const figure = svg("svg", {
    viewBox: `0 0 ${labelW + size + 8} ${labelW + size + 30}`,
    class: "heatmap",
    role: "img",
    "aria-label": name,
  });
  if (title) figure.append(svg("text", { x: 0, y: 16, class: "title" }, title));
  const top = 24 + labelW;
  tokens.forEach((tok, i) => {
    const row = svg(
      "text",
      {
        x: labelW - 4,
        y: top + i * cell + cell * 0.7,
        class: i === selected ? "tok sel" : "tok",
        "text-anchor": "end",
      },
      tok,
    );
    const col = svg(
      "text",
      {
        x: 0,
        y: 0,
        class: i === selected ? "tok sel" : "tok",
        transform: `translate(${labelW + i * cell + cell * 0.7}, ${top - 4}) rotate(-60)`,
      },
      tok,
    );
    if (onPick) {
      row.addEventListener("click", () => onPick(i));
      col.addEventListener("click", () => onPick(i));
    }
    figure.append(row, col);
    matrix[i].forEach((v, j) => {
      const rect = svg("rect", {
        x: labelW + j * cell,
        y: top + i * cell,
        width: cell - 1,
        height: cell - 1,
        fill: colour(v),
      });
      if (i === selected || j === selected) rect.setAttribute("class", "outlined");
      rect.append(svg("title", {}, `${tokens[i]} → ${tokens[j]}: ${v.toFixed(3)}`));
      figure.append(rect);
    });
  });
  return figure;
}

/** All heads of a layer, small, each a button (its map a picture inside): a click or Enter picks the head. */
export function headGrid(heads, { current = 0, onPick = null } = {}) {
  const box = el("div", { class: "grid", role: "group", "aria-label": "pick a head" });
  heads.forEach((matrix, h) => {
    const n = matrix.length;
    const cell = Math.max(1, Math.floor(96 / Math.max(n, 1)));
    const button = el("button", { type: "button", class: "head", "data-focus": `head-${h}` });
    button.setAttribute("aria-pressed", String(h === current));
    const figure = svg("svg", { viewBox: `0 0 ${n * cell} ${n * cell + 14}`, "aria-hidden": "true" });
    figure.append(svg("text", { x: 0, y: n * cell + 12, class: "label" }, `head ${h}`));
    const square = (i, j, v) => svg("rect", { x: j * cell, y: i * cell, width: cell, height: cell, fill: colour(v) });
    matrix.forEach((row, i) => row.forEach((v, j) => figure.append(square(i, j, v))));
    button.append(figure, el("span", { class: "sr-only" }, `head ${h}`));
    if (onPick) button.addEventListener("click", () => onPick(h));
    box.append(button);
  });
  return box;
}
