// One matrix of a step, readable by everyone. The heatmap is a canvas holding one pixel a value,
// scaled up to the cells, so a MiniLM's 19 x 1536 feed-forward draws as fast as a 9 x 9 attention
// map. A cell cursor moves with the arrow keys (or follows the mouse) and its row, column and value
// are read out in a polite live region; the followed token's row is outlined and, below, drawn again
// on its own with its extremes in words; a toggle shows every number as an HTML table.
import { el } from "./plots.js";
import { tableOf } from "./table.js";

export const MASKED = -3.4e38; // float32's lowest value (a masked key's score) or below: shown as −∞

/** A number as the page writes it: 4 significant digits, −∞ for a masked score. */
export function fmt(v) {
  if (v <= MASKED) return "−∞";
  if (v === 0) return "0";
  const a = Math.abs(v);
  const text = a >= 1e4 || a < 1e-3 ? v.toExponential(2) : v.toPrecision(4);
  return text.replace("-", "−");
}

// 256 colours a scale: "prob" white to blue (0 to 1), "signed" orange (negative) to white to blue.
function hslToRgb(h, s, l) {
  const k = (n) => (n + h / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = (n) => l - a * Math.max(-1, Math.min(k(n) - 3, 9 - k(n), 1));
  return [f(0), f(8), f(4)].map((x) => Math.round(255 * x));
}

const SCALES = {
  prob: Array.from({ length: 256 }, (_, i) => hslToRgb(222, 0.7, 0.97 - 0.62 * Math.sqrt(i / 255))),
  signed: Array.from({ length: 256 }, (_, i) => {
    const t = (i - 127.5) / 127.5; // -1 .. 1, a sign-keeping square root spreads the small values
    return hslToRgb(t < 0 ? 25 : 222, t < 0 ? 0.9 : 0.7, 0.97 - 0.6 * Math.sqrt(Math.abs(t)));
  }),
};
const MASK_RGB = [75, 85, 99]; // a masked cell: dark grey, and "−∞" in every read-out

/** How a matrix maps to colours: {scale, top}: probabilities in [0, 1], others in [−top, top]. */
export function colourScale(data, prob) {
  if (prob) return { scale: "prob", top: 1 };
  let top = 0;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v > MASKED && Math.abs(v) > top) top = Math.abs(v);
  }
  return { scale: "signed", top: top || 1 };
}

/** The colour of one value on a scale ({scale, top} of colourScale): [r, g, b]. */
export function colourOf(v, { scale, top }) {
  if (!(v > MASKED)) return MASK_RGB;
  const t = scale === "prob" ? v / top : (v / top + 1) / 2;
  return SCALES[scale][Math.max(0, Math.min(255, Math.round(255 * t)))];
}

/** A matrix as an image, one pixel a value (ImageData: it costs no canvas). */
function paint(m) {
  const { rows, cols, data } = m;
  const image = new ImageData(cols, rows);
  const px = image.data;
  for (let i = 0; i < rows * cols; i++) {
    const rgb = colourOf(data[i], m);
    px[4 * i] = rgb[0];
    px[4 * i + 1] = rgb[1];
    px[4 * i + 2] = rgb[2];
    px[4 * i + 3] = 255;
  }
  return image;
}

let scratch = null; // one canvas that every image passes through on its way to being scaled

/** `image` (ImageData) on the one scratch canvas, at its top left, ready to be drawn scaled. */
export function staged(image) {
  scratch ??= document.createElement("canvas");
  if (scratch.width < image.width || scratch.height < image.height) {
    [scratch.width, scratch.height] = [Math.max(scratch.width, image.width), Math.max(scratch.height, image.height)];
  }
  scratch.getContext("2d").putImageData(image, 0, 0);
  return scratch;
}

// Where things go in CSS pixels: labels left and top, cells of cw x ch.
function geometry(m, width) {
  const labelW = m.rowLabel ? 92 : 8;
  const tokenCols = m.colTokens && width / m.cols >= 6; // else too many tokens to name: numbers instead
  const top = tokenCols ? 62 : 20;
  const avail = Math.max(40, width - labelW - (tokenCols ? 40 : 6)); // turned labels reach to the right
  const cw = Math.min(m.square ? 24 : 28, avail / m.cols);
  const ch = m.square ? Math.max(cw, 13) : m.rows > 48 ? 8 : 16; // 13 px: every row keeps its label
  const w = labelW + cw * m.cols + (tokenCols ? 40 : 4);
  return { labelW, top, cw, ch, tokenCols, w, h: top + ch * m.rows + 4 };
}

function every(size, min) {
  return Math.max(1, Math.ceil(min / size));
}

function tickStep(n, cw) {
  const fit = Math.max(1, Math.floor((n * cw) / 56)); // a tick every 56 px at most
  return [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096].find((s) => n / s <= fit) ?? 8192;
}

function drawLabels(ctx, m, g) {
  ctx.fillStyle = "#1f2937";
  ctx.font = "12px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  const rstep = every(g.ch, 13);
  for (let r = 0; r < m.rows && m.rowLabel; r += rstep) {
    ctx.font = r === m.follow ? "bold 12px system-ui, sans-serif" : "12px system-ui, sans-serif";
    ctx.fillStyle = r === m.follow ? "#1d4ed8" : "#1f2937";
    ctx.fillText(short(m.rowLabel(r)), g.labelW - 6, g.top + (r + 0.5) * g.ch);
  }
  ctx.font = "12px system-ui, sans-serif";
  ctx.fillStyle = "#1f2937";
  if (g.tokenCols) return drawTokenColumns(ctx, m, g);
  ctx.textAlign = "center";
  const step = tickStep(m.cols, g.cw);
  for (let c = 0; c < m.cols; c += step) ctx.fillText(String(c), g.labelW + (c + 0.5) * g.cw, 10);
}

function drawTokenColumns(ctx, m, g) {
  ctx.textAlign = "left";
  for (let c = 0; c < m.cols; c += every(g.cw, 13)) {
    ctx.save();
    ctx.translate(g.labelW + (c + 0.5) * g.cw + 3, g.top - 4);
    ctx.rotate(-Math.PI / 3);
    ctx.fillText(short(m.colLabel(c)), 0, 0);
    ctx.restore();
  }
}

function short(text) {
  return text.length > 11 ? `${text.slice(0, 10)}…` : text;
}

/** A canvas of w x h CSS pixels (at the screen's pixel ratio), cleared: its 2-D context. A canvas
 * keeps its backing store when its size does not change, which saves most of a redraw's time. */
export function sized(canvas, w, h) {
  const dpr = window.devicePixelRatio || 1;
  const [pw, ph] = [Math.ceil(w * dpr), Math.ceil(h * dpr)];
  if (canvas.width !== pw) canvas.width = pw;
  if (canvas.height !== ph) canvas.height = ph;
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, pw, ph);
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

/** Gives the canvas its size on the page without drawing it (a matrix drawn later takes its room now). */
function place(m) {
  m.g = geometry(m, m.width || m.box.clientWidth || 600);
  m.canvas.style.width = `${m.g.w}px`;
  m.canvas.style.height = `${m.g.h}px`;
}

/** Draws the matrix again: cells, labels, the followed row and the cursor. */
function draw(m) {
  const width = m.width || m.box.clientWidth || 600;
  const g = geometry(m, width);
  const ctx = sized(m.canvas, g.w, g.h);
  ctx.imageSmoothingEnabled = g.cw < 1; // shrunk: average the columns; enlarged: crisp cells
  ctx.drawImage(staged(m.image), 0, 0, m.cols, m.rows, g.labelW, g.top, g.cw * m.cols, g.ch * m.rows);
  if (g.cw >= 8 && g.ch >= 8) drawGrid(ctx, m, g);
  drawLabels(ctx, m, g);
  if (m.follow >= 0) outline(ctx, g.labelW - 2, g.top + m.follow * g.ch, g.cw * m.cols + 4, g.ch, "#b45309");
  if (m.cursor) {
    const [r, c] = m.cursor;
    outline(ctx, g.labelW + c * g.cw - 1, g.top + r * g.ch - 1, Math.max(g.cw, 3) + 2, g.ch + 2, "#111827");
  }
  m.g = g;
}

function drawGrid(ctx, m, g) {
  ctx.strokeStyle = "rgba(255,255,255,0.9)";
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let r = 1; r < m.rows; r++) {
    ctx.moveTo(g.labelW, g.top + r * g.ch);
    ctx.lineTo(g.labelW + g.cw * m.cols, g.top + r * g.ch);
  }
  for (let c = 1; c < m.cols; c++) {
    ctx.moveTo(g.labelW + c * g.cw, g.top);
    ctx.lineTo(g.labelW + c * g.cw, g.top + g.ch * m.rows);
  }
  ctx.stroke();
}

function outline(ctx, x, y, w, h, colour) {
  ctx.lineWidth = 2;
  ctx.strokeStyle = "#ffffff";
  ctx.strokeRect(x - 1, y - 1, w + 2, h + 2);
  ctx.strokeStyle = colour;
  ctx.strokeRect(x, y, w, h);
}

/** What the read-out says of one cell: its row, its column and its value. */
export function cellText(m, r, c) {
  const row = m.vector ? "" : `${m.rowAxis} ${m.rowName(r)}, `;
  return `${row}${m.colAxis} ${m.colName(c)}: ${fmt(m.data[r * m.cols + c])}`;
}

function moveTo(m, r, c, speak = true) {
  r = Math.max(0, Math.min(m.rows - 1, r));
  c = Math.max(0, Math.min(m.cols - 1, c));
  m.cursor = [r, c];
  m.box.dataset.row = String(r);
  m.box.dataset.col = String(c);
  draw(m);
  if (speak) m.readout.textContent = cellText(m, r, c);
}

const KEYS = {
  ArrowUp: (_m, [r, c]) => [r - 1, c],
  ArrowDown: (_m, [r, c]) => [r + 1, c],
  ArrowLeft: (_m, [r, c]) => [r, c - 1],
  ArrowRight: (_m, [r, c]) => [r, c + 1],
  Home: (_m, [r], ctrl) => [ctrl ? 0 : r, 0],
  End: (m, [r], ctrl) => [ctrl ? m.rows - 1 : r, m.cols - 1],
  PageUp: (m, [r, c]) => [r, c - Math.max(1, Math.round(m.cols / 10))],
  PageDown: (m, [r, c]) => [r, c + Math.max(1, Math.round(m.cols / 10))],
};

function onKey(m, e) {
  const cursor = m.cursor ?? [Math.max(0, m.follow), 0];
  if (KEYS[e.key]) {
    e.preventDefault();
    moveTo(m, ...KEYS[e.key](m, cursor, e.ctrlKey || e.metaKey));
  } else if ((e.key === "Enter" || e.key === " ") && m.onFollow && m.followable) {
    e.preventDefault();
    m.onFollow(cursor[0], m.box.id, cursor);
  }
}

function onPointer(m, e) {
  if (!m.g) return;
  const rect = m.canvas.getBoundingClientRect();
  const c = Math.floor((e.clientX - rect.left - m.g.labelW) / m.g.cw);
  const r = Math.floor((e.clientY - rect.top - m.g.top) / m.g.ch);
  if (r < 0 || c < 0 || r >= m.rows || c >= m.cols) return;
  moveTo(m, r, c);
}

/** A vector as a strip of colours, one pixel a value, stretched by CSS (class "strip"): drawn into
 * `canvas` when it has the vector's width, else into a new one. */
export function stripCanvas(row, prob = false, canvas = null) {
  if (canvas?.width !== row.length) {
    canvas = el("canvas", { class: "strip", "aria-hidden": "true", width: String(row.length), height: "1" });
  }
  const image = paint({ rows: 1, cols: row.length, data: row, ...colourScale(row, prob) });
  canvas.getContext("2d").putImageData(image, 0, 0);
  return canvas;
}

function followStrip(m) {
  if (m.follow < 0 || m.rows < 2 || m.cols < 24) return null;
  const box = el("div", { class: "follow-row" });
  const row = m.data.subarray(m.follow * m.cols, (m.follow + 1) * m.cols);
  box.append(el("p", { class: "follow-text" }, m.followText ?? ""), stripCanvas(row, m.prob));
  return box;
}

/**
 * A matrix as a figure. spec: {id, title, rows, cols, data (Float32Array, row-major), prob,
 * rowAxis, colAxis, rowLabel(i) | null, colLabel(j), rowName(i), colName(j), colTokens, square,
 * follow (row index or -1), followable, onFollow(row), summary, followText, cursor, canvas (one to draw
 * into again, from the last drawing)}.
 */
export function matrix(spec) {
  const m = { ...spec, ...colourScale(spec.data, spec.prob), format: fmt };
  m.image = paint(m);
  const figure = el("figure", { class: "matrix" });
  const summaryId = `${spec.id}-summary`;
  const helpId = `${spec.id}-help`;
  figure.append(el("figcaption", { id: summaryId }, spec.summary));
  m.box = el("div", {
    class: "matrix-box",
    id: spec.id,
    tabindex: "0",
    role: "application",
    "aria-label": `${spec.title}: ${spec.rows} × ${spec.cols} matrix`,
    "aria-describedby": `${summaryId} ${helpId}`,
  });
  m.canvas = spec.canvas ?? el("canvas");
  m.canvas.setAttribute("aria-hidden", "true");
  m.box.append(m.canvas);
  const keys = spec.followable ? " Enter follows the row's token." : "";
  m.readout = el("p", { class: "readout", "aria-live": "polite", id: `${spec.id}-readout` });
  m.readout.textContent = "Hover a cell, or focus the matrix and move with the arrow keys, to read a value here.";
  const moves = "Arrow keys move a cell cursor; Home and End jump to the row's ends, Page Up and Page Down by a tenth.";
  const help = el("p", { id: helpId }, `${moves}${keys}`); // hidden: read as the matrix's description only
  help.hidden = true;
  m.box.addEventListener("keydown", (e) => onKey(m, e));
  m.box.addEventListener("focus", () => moveTo(m, ...(m.cursor ?? [Math.max(0, m.follow), 0])));
  m.canvas.addEventListener("mousemove", (e) => onPointer(m, e));
  const strip = followStrip(m);
  figure.append(m.box, help, m.readout);
  if (strip) figure.append(strip);
  figure.append(...tableOf(m));
  m.figure = figure;
  m.redraw = () => draw(m);
  m.place = () => place(m);
  return m;
}
