// The model as the flow of its operations: a trace's steps grouped into blocks in the order they
// are computed. The embeddings (Figure 2); then each layer's attention, add & norm, feed-forward,
// add & norm (a pre-norm model's norm, attention, add, norm, feed-forward, add, and a final norm);
// then the heads: pooler, masked LM, next sentence, classifier, tagger, answer span. Each block is
// a button that opens it, showing the followed token's vector as it leaves the block (or, for a
// head, its answer in words).
import { el } from "./plots.js";
import { stripCanvas } from "./matrix.js";

const ATTENTION = ["query", "key", "value", "rotary", "rotary_local", "scores", "mask", "mask_local", "softmax"];
const ROLE_OF_KIND = {
  ...Object.fromEntries([...ATTENTION, "context", "concat", "attention_output"].map((k) => [k, "attention"])),
  ...Object.fromEntries(
    ["ffn_in", "ffn_in_glu", "gelu", "gelu_tanh", "relu", "geglu", "ffn_out"].map((k) => [k, "ffn"]),
  ),
  residual: "add",
  layer_norm: "norm",
};
const HEADS = [
  ["bert.encoder.final_norm", "final_norm"],
  ["bert.pooler", "pooler"],
  ["cls.predictions", "mlm"],
  ["cls.seq_relationship", "nsp"],
  ["qa_outputs", "span"],
  ["classifier", "classifier"],
];
export const TITLES = {
  embeddings: "Embeddings",
  attention: "Attention",
  add_norm: "Add & Norm",
  add: "Add",
  norm: "Norm",
  ffn: "Feed-forward",
  final_norm: "Final norm",
  pooler: "Pooler",
  mlm: "Masked LM",
  nsp: "Next sentence",
  classifier: "Classifier",
  tagger: "Tagger",
  span: "Answer span",
};

function headRole(step) {
  if (step.kind === "tagger" || step.kind === "tagger_softmax") return "tagger";
  return HEADS.find(([prefix]) => step.name === prefix || step.name.startsWith(`${prefix}.`))?.[1] ?? "heads";
}

// A layer's steps -> its blocks: consecutive steps of one role. Post-norm (BERT), a residual sum then
// its LayerNorm are one Add & Norm; pre-norm, the norm belongs to the next sub-layer: Add, then Norm.
function layerBlocks(steps, layer, preNorm) {
  const blocks = [];
  for (const { step, index } of steps) {
    const role = ROLE_OF_KIND[step.kind] ?? "other";
    const last = blocks.at(-1);
    const addNorm = !preNorm && last?.role === "add" && role === "norm";
    if (last && (last.role === role || addNorm)) {
      if (addNorm) last.role = "add_norm";
      last.steps.push(index);
    } else blocks.push({ role, layer, steps: [index] });
  }
  const seen = {};
  for (const b of blocks) {
    seen[b.role] = (seen[b.role] ?? 0) + 1;
    b.key = `layer.${layer}.${b.role}.${seen[b.role]}`;
  }
  return blocks;
}

/**
 * The blocks of a trace, in order: {key, role, layer (null outside the encoder), steps (indices)}.
 * config: the model's (its manifest entry's trace.config), for where its LayerNorms sit.
 */
export function blocksOf(trace, config = {}) {
  const embeddings = { key: "embeddings", role: "embeddings", layer: null, steps: [] };
  const layers = new Map();
  const heads = [];
  trace.steps.forEach((step, index) => {
    if (step.name.startsWith("bert.embeddings.")) embeddings.steps.push(index);
    else if (step.layer !== null && step.layer !== undefined) {
      if (!layers.has(step.layer)) layers.set(step.layer, []);
      layers.get(step.layer).push({ step, index });
    } else {
      const role = headRole(step);
      const last = heads.at(-1);
      if (last && last.role === role) last.steps.push(index);
      else heads.push({ key: role, role, layer: null, steps: [index] });
    }
  });
  const preNorm = config.norm_position === "pre";
  const encoder = [...layers].flatMap(([layer, steps]) => layerBlocks(steps, layer, preNorm));
  return [embeddings, ...encoder, ...heads];
}

/** A block's words for a screen reader and its button: "Attention, layer 0". */
export function blockName(block) {
  const title = TITLES[block.role] ?? block.role;
  return block.layer === null ? title : `${title}, layer ${block.layer}`;
}

// The followed token's row of a block's last token-by-hidden step (the pooler: its vector), or null.
function followedRow(trace, block, follow) {
  for (let i = block.steps.length - 1; i >= 0; i--) {
    const step = trace.steps[block.steps[i]];
    if (step.shape.length === 2 && step.axes[0] === "token") {
      const width = step.shape[1];
      return step.values.subarray(follow * width, (follow + 1) * width);
    }
    if (step.shape.length === 1 && step.axes[0] === "hidden") return step.values; // the pooled [CLS]
  }
  return null;
}

// What a block button shows under its title: the head's answer, or the followed token's vector.
function fillButton(button, trace, block, { follow, open, headline }) {
  const on = open === block.key;
  button.classList.toggle("open", on);
  button.setAttribute("aria-expanded", String(on));
  const said = headline(block);
  const row = said ? null : followedRow(trace, block, follow);
  const [now] = button.getElementsByClassName(said ? "block-says" : "strip");
  if (said && now) now.textContent = said;
  else if (said) button.append(el("span", { class: "block-says" }, said));
  else if (row) {
    const strip = stripCanvas(row, false, now);
    if (strip !== now) button.append(strip);
  }
}

function blockButton(trace, block, options) {
  const button = el("button", {
    type: "button",
    class: "block",
    "data-block": block.key,
    "aria-controls": "steps-detail",
  });
  button.append(el("span", { class: "block-title" }, TITLES[block.role] ?? block.role));
  if (block.layer !== null) button.setAttribute("aria-label", blockName(block)); // "Attention, layer 0"
  fillButton(button, trace, block, options);
  button.addEventListener("click", () => options.onOpen(block.key));
  return button;
}

function flowRow(name, cls = "") {
  const li = el("li", { class: `flow-row ${cls}` });
  li.append(el("span", { class: "row-name" }, name));
  const blocks = el("div", { class: "row-blocks" });
  li.append(blocks);
  return [li, blocks];
}

/**
 * Draws the flow into `box`: a list of rows (input, one per layer, heads) of block buttons. options:
 * {follow (token index), open (block key), headline(block) -> text or "", onOpen(key)}. The same
 * blocks as last time are filled again in place (their canvases kept); a trace still being computed
 * (its first layers only) draws the blocks it has.
 */
export function drawFlow(box, trace, blocks, options) {
  const buttons = [...box.querySelectorAll("button.block")];
  if (buttons.length === blocks.length && buttons.every((b, i) => b.dataset.block === blocks[i].key)) {
    buttons.forEach((button, i) => fillButton(button, trace, blocks[i], options));
    return;
  }
  const list = el("ol", { class: "flow-rows", "aria-label": "the model, operation by operation" });
  const rows = new Map();
  for (const block of blocks) {
    const rowKey = block.layer !== null ? `layer ${block.layer}` : block.role === "embeddings" ? "input" : "heads";
    if (!rows.has(rowKey)) {
      const name = rowKey === "input" ? "Input" : rowKey === "heads" ? "Heads" : `Layer ${block.layer}`;
      const [li, box] = flowRow(name, rowKey.replace(" ", "-"));
      rows.set(rowKey, box);
      list.append(li);
    }
    rows.get(rowKey).append(blockButton(trace, block, options));
  }
  box.replaceChildren(list);
}
