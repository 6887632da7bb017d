// An open block of the flow: its steps in order, each with its name, its formula written with the
// real sizes (the trace's `formula`), its one sentence (`what`), the paper's section, and its values
// as a matrix (a 3-D step shows the chosen head). The embeddings open on the paper's Figure 2.
import { el } from "./plots.js";
import { matrix } from "./matrix.js";
import { figure2 } from "./figure2.js";
import { blockName } from "./flow.js";
import { axisWords, isTokenAxis } from "./labels.js";
import { PROB_KINDS, rowText, summary } from "./describe.js";

export const STEP_TITLES = {
  word_embeddings: "Token embeddings",
  token_type_embeddings: "Segment embeddings",
  position_embeddings: "Position embeddings",
  embedding_sum: "Their sum",
  embedding_sum_rotary: "Their sum",
  embedding_sum_no_segment: "Their sum",
  layer_norm: "LayerNorm",
  query: "Queries Q",
  key: "Keys K",
  value: "Values V",
  rotary: "Rotary positions",
  rotary_local: "Rotary positions (local layer)",
  scores: "Scores",
  mask: "Scores + mask",
  mask_local: "Scores + local window mask",
  softmax: "Attention probabilities",
  context: "Context, per head",
  concat: "Heads side by side",
  attention_output: "Output projection",
  residual: "Residual sum (add)",
  ffn_in: "Widen",
  ffn_in_glu: "Widen (value and gate)",
  gelu: "GELU",
  gelu_tanh: "GELU (tanh form)",
  relu: "ReLU",
  geglu: "GeGLU",
  ffn_out: "Narrow",
  pooler_dense: "Pooler: dense on [CLS]",
  tanh: "Pooler: tanh",
  mlm_dense: "Transform",
  mlm_activation: "GELU",
  decoder: "A score for every word",
  mlm_softmax: "P(word)",
  nsp_logits: "IsNext and NotNext scores",
  nsp_softmax: "P(IsNext), P(NotNext)",
  classifier: "Label scores",
  classifier_softmax: "P(label)",
  tagger: "Tag scores",
  tagger_softmax: "P(tag)",
  span_logits: "Start and end scores",
  start_softmax: "P(start)",
  end_softmax: "P(end)",
};

/** A step's element id: bert.encoder.layer.0.attention.self.query -> bert-encoder-layer-0-attention-self-query. */
export function slug(name) {
  return name.replace(/[^A-Za-z0-9]+/g, "-");
}

function formulaNode(text) {
  const p = el("p", { class: "formula" });
  p.append(el("span", { class: "sr-only" }, "Formula: "));
  let at = 0;
  for (const m of text.matchAll(/([A-Za-zα-ωΦθ])_(\[CLS\]|[A-Za-z0-9]+)/g)) {
    p.append(text.slice(at, m.index) + m[1], el("sub", {}, m[2]));
    at = m.index + m[0].length;
  }
  p.append(text.slice(at));
  return p;
}

function sectionText(section) {
  return section.startsWith("since BERT")
    ? `Not in BERT: ${section.replace("since BERT: ", "")}`
    : `Section ${section}`;
}

// The 2-D slice a matrix shows: the step itself, or one head of a (head, rows, cols) step.
function slice(step, head) {
  const dims = step.shape;
  if (dims.length === 3) {
    const [A, rows, cols] = dims;
    const h = Math.min(head, A - 1);
    const data = step.values.subarray(h * rows * cols, (h + 1) * rows * cols);
    return { rows, cols, data, rowAxis: step.axes[1], colAxis: step.axes[2], head: h };
  }
  if (dims.length === 2)
    return { rows: dims[0], cols: dims[1], data: step.values, rowAxis: step.axes[0], colAxis: step.axes[1] };
  return { rows: 1, cols: dims[0], data: step.values, rowAxis: "vector", colAxis: step.axes[0], vector: true };
}

/** The matrix spec of a step (see matrix.js), its summary and its followed row in words. */
export function specOf(trace, step, ctx) {
  const s = slice(step, ctx.head);
  const title = STEP_TITLES[step.kind] ?? step.kind;
  const rw = axisWords(trace, s.rowAxis, ctx);
  const cw = axisWords(trace, s.colAxis, ctx);
  let follow = -1;
  if (!s.vector) for (let r = 0; r < s.rows && follow < 0; r++) if (rw.token(r) === ctx.follow) follow = r;
  const spec = {
    ...s,
    id: `m-${slug(step.name)}`,
    title,
    prob: PROB_KINDS.has(step.kind),
    rowLabel: s.vector ? null : rw.label,
    colLabel: cw.label,
    rowName: s.vector ? () => title : rw.name,
    colName: cw.name,
    colTokens: isTokenAxis(s.colAxis),
    square: isTokenAxis(s.rowAxis) && isTokenAxis(s.colAxis),
    follow,
    followable: isTokenAxis(s.rowAxis),
    onFollow: (r) => ctx.onFollow(rw.token(r)),
  };
  spec.summary = summary(step, spec, follow);
  spec.followText = rowText(spec, follow);
  return spec;
}

function stepArticle(trace, step, ctx, was) {
  const canvases = ctx.canvases;
  const article = el("article", { class: "step", id: `step-${slug(step.name)}`, "data-step": step.name });
  const head = step.shape.length === 3 ? ` (head ${Math.min(ctx.head, step.shape[0] - 1)} of ${step.shape[0]})` : "";
  article.append(el("h4", {}, `${STEP_TITLES[step.kind] ?? step.kind}${head}`));
  article.append(el("p", { class: "step-name" }, step.name));
  article.append(formulaNode(step.formula), el("p", { class: "what" }, step.what));
  article.append(el("p", { class: "section" }, sectionText(step.section)));
  const spec = specOf(trace, step, ctx);
  if (was?.id === spec.id && was.row !== undefined) spec.cursor = [Number(was.row), Number(was.col)];
  spec.canvas = canvases.get(spec.id);
  const m = matrix(spec);
  article.append(m.figure);
  return [article, m];
}

/**
 * Draws `block` of `trace` into `box` (the detail section); ctx: {follow, head, vocab, labels, onFollow,
 * width (the box's, when measured before the page changed)}.
 */
export function drawDetail(box, trace, block, ctx, was = null) {
  const canvases = new Map([...box.querySelectorAll(".matrix-box, .figure2-scroll")].map((b) => [b.id, b.firstChild]));
  box.replaceChildren();
  if (!block) {
    box.append(el("h3", { id: "steps-detail-title" }, "Open a block of the flow to see its steps."));
    return;
  }
  box.append(el("h3", { id: "steps-detail-title" }, blockName(block)));
  const width = Math.max(240, (ctx.width || box.clientWidth || 640) - 4);
  if (block.role === "embeddings") box.append(figure2(trace, ctx.follow, width, canvases.get("figure2")));
  const matrices = [];
  for (const i of block.steps) {
    const [article, m] = stepArticle(trace, trace.steps[i], { ...ctx, canvases }, was);
    box.append(article);
    matrices.push(m);
  }
  drawNearView(box, matrices, width);
}

const watching = new WeakMap(); // the detail box -> the observer drawing its matrices as they come near

// The matrices on screen (or within a screen of it) are drawn now, the others when they come near:
// a block of nine T x 384 matrices costs one screenful of drawing, not nine.
function drawNearView(box, matrices, width) {
  watching.get(box)?.disconnect();
  for (const m of matrices) {
    m.width = width;
    m.place();
  }
  const margin = window.innerHeight;
  const observer = new IntersectionObserver(
    (entries) => {
      for (const e of entries.filter((x) => x.isIntersecting)) {
        observer.unobserve(e.target);
        matrices.find((m) => m.box === e.target)?.redraw();
      }
    },
    { rootMargin: `${margin}px 0px` },
  );
  watching.set(box, observer);
  for (const m of matrices) {
    const r = m.box.getBoundingClientRect();
    if (r.bottom > -margin && r.top < 2 * margin) m.redraw();
    else observer.observe(m.box);
  }
}
