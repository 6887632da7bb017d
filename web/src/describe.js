// Words computed from a trace's numbers: each matrix's one-sentence summary (its text alternative),
// the followed token's row in words, a head's answer for its block, and the view's result sentence
// for the live region ("at [MASK] it guesses “ship” (24.1%)", not "done").
import { fmt } from "./matrix.js";
import { percent } from "./plots.js";
import { tokenLabel } from "./labels.js";

export const PROB_KINDS = new Set([
  "softmax",
  "mlm_softmax",
  "nsp_softmax",
  "classifier_softmax",
  "tagger_softmax",
  "start_softmax",
  "end_softmax",
]);

function argmax(values, from = 0, to = values.length) {
  let best = from;
  for (let i = from; i < to; i++) if (values[i] > values[best]) best = i;
  return best - from;
}

function extremes(data, from, to) {
  let [lo, hi, sum, masked] = [from, from, 0, 0];
  for (let i = from; i < to; i++) {
    if (data[i] <= -3.4e38) {
      masked++;
      continue;
    }
    if (data[i] < data[lo] || data[lo] <= -3.4e38) lo = i;
    if (data[i] > data[hi]) hi = i;
    sum += data[i];
  }
  return { lo: lo - from, hi: hi - from, mean: sum / Math.max(1, to - from - masked), masked };
}

/** The followed row in words: its range and where its extremes are. m: a matrix spec. */
export function rowText(m, row) {
  if (row < 0) return "";
  const from = row * m.cols;
  const e = extremes(m.data, from, from + m.cols);
  const v = (j) => fmt(m.data[from + j]);
  if (m.prob) {
    return `The followed row, ${m.rowName(row)}: its largest share ${v(e.hi)} is at ${m.colAxis} ${m.colName(e.hi)}.`;
  }
  return (
    `The followed row, ${m.rowName(row)}: ${m.cols} numbers from ${v(e.lo)} (${m.colAxis} ${m.colName(e.lo)}) ` +
    `to ${v(e.hi)} (${m.colAxis} ${m.colName(e.hi)}), mean ${fmt(e.mean)}.`
  );
}

function topWords(m, r, k = 3) {
  const row = m.data.subarray(r * m.cols, (r + 1) * m.cols);
  const order = Array.from(row.keys())
    .sort((a, b) => row[b] - row[a])
    .slice(0, k);
  return order.map((j) => `${m.colName(j)} ${percent(row[j])}`).join(", ");
}

/** One sentence from a matrix's numbers: its size and range, what is masked, where its row points. */
export function summary(step, m, row) {
  if (step.kind === "mlm_softmax") {
    const rows = Array.from({ length: Math.min(3, m.rows) }, (_, r) => `at ${m.rowName(r)}: ${topWords(m, r)}`);
    return `${m.title}, the most probable words ${rows.join("; ")}${m.rows > 3 ? "; …" : ""}.`;
  }
  const all = extremes(m.data, 0, m.data.length);
  const masked = all.masked ? ` ${all.masked} of its scores are masked and shown as −∞.` : "";
  const size = m.vector ? `${m.cols} numbers` : `${m.rows} × ${m.cols} numbers`;
  const range = `from ${fmt(m.data[all.lo])} to ${fmt(m.data[all.hi])}`;
  let point = "";
  if (m.prob && m.vector) point = ` The most probable: ${m.colName(all.hi)} (${percent(m.data[all.hi])}).`;
  else if (m.prob && row >= 0) {
    const j = argmax(m.data, row * m.cols, (row + 1) * m.cols);
    point = ` ${m.rowName(row)} puts the most, ${percent(m.data[row * m.cols + j])}, on ${m.colName(j)}.`;
  }
  if (step.kind === "mask" && !all.masked) point = " No key is masked here: every token may see every token (M = 0).";
  const head = m.head !== undefined ? `, head ${m.head}` : "";
  return `${m.title}${head}: ${size} ${range}.${point}${masked}`;
}

function step(trace, name) {
  return trace.steps.find((s) => s.name === name);
}

// The best word at each [MASK] (or at every token when the text has none: then none is said).
function mlmGuesses(trace, vocab) {
  const probs = step(trace, "cls.predictions.softmax");
  if (!probs) return [];
  const [M, V] = probs.shape;
  const masks = trace.tokens.filter((t) => t === "[MASK]").length;
  if (!masks) return [];
  return Array.from({ length: M }, (_, i) => {
    const j = argmax(probs.values, i * V, (i + 1) * V);
    return { word: vocab?.[j] ?? `#${j}`, p: probs.values[i * V + j] };
  });
}

/** A head block's answer in a few words (its button says it), or "" for the other blocks. */
export function headline(trace, block, ctx) {
  const s = (name) => step(trace, name);
  const labels = ctx.labels ?? [];
  if (block.role === "mlm") {
    const guesses = mlmGuesses(trace, ctx.vocab);
    return guesses.length ? guesses.map((g) => `${g.word} ${percent(g.p)}`).join(", ") : "every token (no [MASK])";
  }
  if (block.role === "nsp" && s("cls.seq_relationship.softmax")) {
    return `IsNext ${percent(s("cls.seq_relationship.softmax").values[0])}`;
  }
  if (block.role === "classifier" && s("classifier.softmax")) {
    const p = s("classifier.softmax").values;
    const j = argmax(p);
    return `${labels[j] ?? j} ${percent(p[j])}`;
  }
  if (block.role === "tagger" && s("classifier.softmax")) {
    const t = s("classifier.softmax");
    const K = t.shape[1];
    const j = argmax(t.values, ctx.follow * K, (ctx.follow + 1) * K);
    return `${trace.tokens[ctx.follow]}: ${labels[j] ?? j}`;
  }
  if (block.role === "span" && s("qa_outputs.start_softmax")) {
    const start = argmax(s("qa_outputs.start_softmax").values);
    const end = argmax(s("qa_outputs.end_softmax").values);
    return `start “${trace.tokens[start]}”, end “${trace.tokens[end]}”`;
  }
  return "";
}

/** The view's result for its live region: what the model says, in a sentence. */
export function resultSentence(trace, ctx, ms) {
  const layers = new Set(trace.steps.map((s) => s.layer).filter((l) => l !== null && l !== undefined)).size;
  const parts = [];
  const guesses = mlmGuesses(trace, ctx.vocab);
  if (guesses.length)
    parts.push(`at [MASK] it guesses ${guesses.map((g) => `“${g.word}” (${percent(g.p)})`).join(", ")}`);
  const nsp = step(trace, "cls.seq_relationship.softmax");
  if (nsp) parts.push(`P(IsNext) = ${percent(nsp.values[0])}`);
  for (const role of ["classifier", "span"]) {
    const said = headline(trace, { role }, ctx);
    if (said) parts.push(role === "span" ? `the answer's ${said}` : `label ${said}`);
  }
  const cut = trace.truncated ? ` ${trace.truncated} token(s) past the model's limit were left out.` : "";
  const what = parts.length ? `: ${parts.join("; ")}` : "";
  return (
    `${trace.tokens.length} tokens through ${layers} layers, ${trace.steps.length} steps${what}. ` +
    `Computed and drawn on this device in ${ms.toFixed(0)} ms.${cut}`
  );
}

/** The followed token for the view's words: “captain” (token 3). */
export { tokenLabel };
