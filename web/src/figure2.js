// The paper's Figure 2 drawn from this sentence's real vectors: one column per token, and down
// each column its token embedding, plus its segment embedding, plus its position embedding, equal to
// the input (the sum), then LayerNorm. Each vector is a strip of colours (its H numbers top to
// bottom, orange negative, blue positive), on one canvas; a sentence computed from the numbers is
// its text alternative, and the steps' matrices below it hold every number.
import { el } from "./plots.js";
import { colourOf, colourScale, fmt, sized, staged } from "./matrix.js";
import { tokenLabel } from "./labels.js";

const ROWS = [
  ["word_embeddings", "Token", () => ""],
  ["token_type_embeddings", "+ Segment", (t, i) => (t.token_type_ids[i] ? "B" : "A")],
  ["position_embeddings", "+ Position", (_t, i) => String(i)],
  ["sum", "= Input", () => ""],
  ["LayerNorm", "LayerNorm", () => ""],
];
const NAMES = {
  Token: "token embedding",
  "+ Segment": "segment embedding",
  "+ Position": "position embedding",
  "= Input": "their sum",
  LayerNorm: "after LayerNorm",
};
const LABEL_W = 84;
const ROW_H = 64;
const STRIP_H = 38;

function stepOf(trace, suffix) {
  return trace.steps.find((s) => s.name === `bert.embeddings.${suffix}`);
}

/** The rows the model has: [{step, title, sub(trace, i)}]. */
function rowsOf(trace) {
  return ROWS.map(([suffix, title, sub]) => ({ step: stepOf(trace, suffix), title, sub })).filter((r) => r.step);
}

function norm(values, i, H) {
  let s = 0;
  for (let j = i * H; j < (i + 1) * H; j++) s += values[j] * values[j];
  return Math.sqrt(s);
}

/** One sentence from the numbers: what the followed token's vectors measure (their lengths). */
export function figure2Summary(trace, follow) {
  const rows = rowsOf(trace);
  const H = rows[0].step.shape[1];
  const token = tokenLabel(trace, follow);
  const parts = rows.map((r) => `${NAMES[r.title]} ${fmt(norm(r.step.values, follow, H))}`);
  return (
    `Figure 2 with this input's real vectors: ${trace.tokens.length} tokens, one column each, every vector ` +
    `${H} numbers drawn top to bottom (orange negative, blue positive). For ${token} the lengths are: ` +
    `${parts.join(", ")}.`
  );
}

function vectorImage(step, T, H) {
  const scale = colourScale(step.values, false);
  const image = new ImageData(T, H); // column t = token t's vector, top to bottom
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < H; h++) {
      const [r, g, b] = colourOf(step.values[t * H + h], scale);
      const at = 4 * (h * T + t);
      [image.data[at], image.data[at + 1], image.data[at + 2], image.data[at + 3]] = [r, g, b, 255];
    }
  }
  return image;
}

// The tokens above their columns: level when they fit, else turned like a matrix's column labels.
function drawTokens(ctx, trace, colW, follow, top) {
  const turned = top > 30;
  ctx.textAlign = turned ? "left" : "center";
  trace.tokens.forEach((tok, i) => {
    ctx.font = i === follow ? "bold 12px system-ui, sans-serif" : "12px system-ui, sans-serif";
    ctx.fillStyle = i === follow ? "#1d4ed8" : "#1f2937";
    const x = LABEL_W + (i + 0.5) * colW;
    if (!turned) return ctx.fillText(clip(tok, colW), x, 16);
    ctx.save();
    ctx.translate(x - 2, top - 6);
    ctx.rotate(-Math.PI / 3);
    ctx.fillText(clip(tok, 80), 0, 0);
    ctx.restore();
  });
}

function clip(text, width) {
  const room = Math.max(2, Math.floor(width / 7));
  return text.length > room ? `${text.slice(0, room - 1)}…` : text;
}

function drawRow(ctx, trace, row, y, colW) {
  const T = trace.tokens.length;
  const H = row.step.shape[1];
  const image = staged(vectorImage(row.step, T, H));
  ctx.font = "13px system-ui, sans-serif";
  ctx.fillStyle = "#1f2937";
  ctx.textAlign = "left";
  ctx.fillText(row.title, 0, y + 14 + STRIP_H / 2);
  ctx.imageSmoothingEnabled = H > STRIP_H;
  for (let i = 0; i < T; i++) {
    const x = LABEL_W + i * colW + 3;
    ctx.drawImage(image, i, 0, 1, H, x, y + 4, colW - 6, STRIP_H);
    ctx.strokeStyle = "#6b7280";
    ctx.lineWidth = 1;
    ctx.strokeRect(x - 0.5, y + 3.5, colW - 5, STRIP_H + 1);
    const sub = row.sub(trace, i);
    ctx.textAlign = "center";
    ctx.font = "11px system-ui, sans-serif";
    if (sub) ctx.fillText(clip(colW >= 30 ? `E ${sub}` : sub, colW), x + (colW - 6) / 2, y + STRIP_H + 18);
  }
}

/** Figure 2 as a figure element: the canvas (an image with its summary) in a box that scrolls sideways. */
export function figure2(trace, follow, width, canvas = null) {
  const rows = rowsOf(trace);
  const T = trace.tokens.length;
  const colW = Math.max(18, Math.min(64, Math.floor((width - LABEL_W - 44) / T)));
  const top = trace.tokens.some((tok) => tok.length * 7 > colW) ? 72 : 26;
  const w = LABEL_W + colW * T + (top > 30 ? 44 : 4);
  const h = top + rows.length * ROW_H;
  canvas ??= el("canvas", { role: "img" });
  const ctx = sized(canvas, w, h);
  canvas.setAttribute("aria-label", figure2Summary(trace, follow));
  drawTokens(ctx, trace, colW, follow, top);
  rows.forEach((row, r) => drawRow(ctx, trace, row, top + r * ROW_H, colW));
  ctx.strokeStyle = "#b45309";
  ctx.lineWidth = 2;
  ctx.strokeRect(LABEL_W + follow * colW + 0.5, top - 2, colW - 1, h - top);
  const figure = el("figure", { class: "figure2" });
  const scroll = el("div", { class: "figure2-scroll", id: "figure2" });
  if (w > width) {
    const name = "Figure 2, wider than the page: it scrolls sideways";
    Object.entries({ tabindex: "0", role: "region", "aria-label": name }).forEach(([k, v]) =>
      scroll.setAttribute(k, v),
    );
  }
  scroll.append(canvas);
  figure.append(el("figcaption", {}, "The paper's Figure 2, drawn from this input's own vectors."), scroll);
  return figure;
}
