// The "Step by step" view (issue 42): one input through every operation of a model, computed on
// the device by window.bertLab.trace (web/src/trace.js) and drawn as the flow of its blocks (flow.js).
// A block opens to its steps: formula with the real sizes, one sentence, the paper's section, and
// each step's values as a matrix (matrix.js) that the keyboard can walk and a table can show. The
// token to follow, the layer and the head are controls; the input, or where its [MASK] is (a click
// on a word), computes everything again. A big model is drawn layer by layer as its layers finish.
import { bertLab, modelsFor } from "./api.js";
import { el } from "./plots.js";
import { blockName, blocksOf, drawFlow } from "./flow.js";
import { drawDetail } from "./detail.js";
import { headline, resultSentence } from "./describe.js";
import { maskWords } from "./words.js";
import { createTour } from "./tour.js";

const OPENING = {
  // the lesson plan's sentence (docs/teaching/lesson-plan.md, the Step by step segment)
  a: "he opened the [MASK] and walked into the garden .",
  b: "the roses were in bloom .",
};
const PAINT_EVERY_MS = 100; // a trace slower than this shows its layers as they finish (a paint costs a frame)

class Stale extends Error {}

function nextPaint() {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

function say(s, text, kind = "") {
  s.status.textContent = text;
  s.status.className = `status ${kind}`;
}

function select(id, label) {
  const box = el("div", { class: "field number" });
  const control = el("select", { id });
  box.append(el("label", { for: id }, label), control);
  return [box, control];
}

function setOptions(control, items, value) {
  const same = control.options.length === items.length && items.every((t, i) => control.options[i].textContent === t);
  if (!same) control.replaceChildren(...items.map((t, i) => el("option", { value: String(i) }, t)));
  control.value = String(Math.max(0, Math.min(items.length - 1, value)));
  return Number(control.value);
}

// ------------------------------------------------------------------------------------------------
// Drawing
// ------------------------------------------------------------------------------------------------
function context(s) {
  const entry = s.models.find((m) => m.name === s.menu.value);
  return { vocab: s.vocab.get(s.menu.value), labels: entry?.trace?.config?.labels ?? [], follow: s.follow };
}

function config(s) {
  return s.models.find((m) => m.name === s.menu.value)?.trace?.config ?? {};
}

function flowOptions(s, trace) {
  const ctx = context(s);
  return {
    follow: s.follow,
    open: s.open,
    headline: (block) => headline(trace, block, ctx),
    onOpen: (key) => {
      openBlock(s, key === s.open ? null : key);
      // one column (a phone): the block's steps are below the flow, so bring their top into view
      if (s.open && matchMedia("(max-width: 899px)").matches) s.detail.scrollIntoView({ block: "start" });
    },
  };
}

function drawControls(s) {
  const t = s.trace;
  s.follow = setOptions(
    s.followMenu,
    t.tokens.map((tok, i) => `${i}: ${tok}`),
    s.follow,
  );
  const layers = [...new Set(s.blocks.map((b) => b.layer).filter((l) => l !== null))];
  s.layer = setOptions(
    s.layerMenu,
    layers.map((l) => `layer ${l}`),
    s.layer,
  );
  const heads = t.steps.find((st) => st.kind === "scores")?.shape[0] ?? 1;
  s.head = setOptions(
    s.headMenu,
    Array.from({ length: heads }, (_, h) => `head ${h}`),
    s.head,
  );
}

/** Where focus is inside the view, to put it back after a redraw: {id} or {block}. */
function focusNow(s) {
  const a = document.activeElement;
  if (!a || !s.panel.contains(a)) return null;
  return { id: a.id, block: a.dataset.block, word: a.dataset.word, row: a.dataset.row, col: a.dataset.col };
}

function focusAgain(s, was) {
  if (!was || s.panel.contains(document.activeElement)) return;
  let target = null;
  if (was.block) target = s.panel.querySelector(`[data-block="${was.block}"]`);
  else if (was.word) target = s.panel.querySelector(`[data-word="${was.word}"]`);
  else if (was.id) target = document.getElementById(was.id);
  target?.focus({ preventScroll: true });
}

function drawAll(s) {
  s.width = s.detail.clientWidth; // read before anything changes: no layout forced in between
  const was = focusNow(s);
  const trace = s.trace;
  drawControls(s);
  s.words.replaceChildren(...maskWords(trace, s.hidden, (a, b, hidden) => remask(s, a, b, hidden)));
  drawFlow(s.flow, trace, s.blocks, flowOptions(s, trace));
  drawOpen(s, was);
  focusAgain(s, was);
  s.tour.refresh();
}

function drawOpen(s, was = focusNow(s)) {
  const block = s.blocks.find((b) => b.key === s.open);
  const ctx = { ...context(s), head: s.head, width: s.width, onFollow: (token) => follow(s, token) };
  s.width = 0; // measured again next time
  drawDetail(s.detail, s.trace, block, ctx, was);
  for (const b of s.flow.querySelectorAll("button.block")) {
    const on = b.dataset.block === s.open;
    b.classList.toggle("open", on);
    b.setAttribute("aria-expanded", String(on));
  }
}

/** Open a block (or none): its steps are drawn beside the flow. */
export function openBlock(s, key) {
  s.open = key;
  const block = s.blocks.find((b) => b.key === key);
  if (block && block.layer !== null) {
    s.layer = block.layer;
    s.layerMenu.value = String(block.layer);
  }
  writeAddress(s);
  if (s.trace) drawOpen(s);
}

function follow(s, token) {
  s.follow = token;
  writeAddress(s);
  drawAll(s);
}

// The layer menu moves the open block to the same block of that layer (or the layer's attention).
function pickLayer(s, layer) {
  s.layer = layer;
  const open = s.blocks.find((b) => b.key === s.open);
  const key = open?.layer !== null && open ? open.key.replace(/^layer\.\d+\./, `layer.${layer}.`) : null;
  const block = s.blocks.find((b) => b.key === key) ?? s.blocks.find((b) => b.layer === layer);
  openBlock(s, block?.key ?? s.open);
}

// ------------------------------------------------------------------------------------------------
// Computing
// ------------------------------------------------------------------------------------------------
async function vocabulary(s, name) {
  if (s.vocab.has(name)) return;
  const entry = s.models.find((m) => m.name === name);
  const json = await fetch(entry.files.tokenizer).then((r) => r.json());
  const words = [];
  for (const [word, id] of Object.entries(json.model.vocab)) words[id] = word;
  s.vocab.set(name, words);
}

function drawPartial(s, steps, tokens) {
  const partial = { steps, tokens };
  drawFlow(s.flow, partial, blocksOf(partial, config(s)), flowOptions(s, partial));
}

/** Trace the input on the device and draw it; a newer input makes an older run stop. */
export async function compute(s) {
  const run = ++s.run;
  const started = performance.now();
  const model = s.menu.value;
  say(s, "computing on this device…");
  s.body.classList.add("busy");
  let painted = started;
  const layers = [];
  const onLayer = async (layer, steps) => {
    if (run !== s.run) throw new Stale();
    if (performance.now() - painted < PAINT_EVERY_MS) return;
    drawPartial(s, steps, s.trace?.tokens ?? []);
    await nextPaint();
    painted = performance.now();
    layers.push({ layer, ms: painted - started });
  };
  try {
    const [trace] = await Promise.all([
      bertLab.trace(s.a.value, s.b.value || null, { model, onLayer }),
      vocabulary(s, model),
    ]);
    if (run !== s.run) return;
    show(s, trace);
    await nextPaint();
    const ms = performance.now() - started;
    say(s, resultSentence(trace, context(s), ms), trace.truncated ? "warn" : "ok");
    s.panel.dataset.computed = String(Number(s.panel.dataset.computed || 0) + 1);
    const detail = { ms, layers, model, tokens: trace.tokens.length };
    s.panel.dispatchEvent(new CustomEvent("steps-drawn", { detail }));
    writeAddress(s); // after the drawing: the address bar is slow to change
  } catch (error) {
    if (error instanceof Stale || run !== s.run) return;
    say(s, String(error?.message ?? error), "error");
  } finally {
    if (run === s.run) s.body.classList.remove("busy");
  }
}

function show(s, trace) {
  const sameTokens = s.trace && s.trace.tokens.join(" ") === trace.tokens.join(" ");
  s.trace = trace;
  s.blocks = blocksOf(trace, config(s));
  if (!sameTokens && !s.keepFollow)
    s.follow = Math.max(0, trace.tokens.indexOf("[MASK]"), Math.min(1, trace.tokens.length - 1));
  s.keepFollow = false;
  if (!s.blocks.some((b) => b.key === s.open)) s.open = s.blocks[0].key;
  drawAll(s);
}

function remask(s, a, b, hidden) {
  s.a.value = a;
  s.b.value = b ?? "";
  s.hidden = hidden;
  compute(s);
}

// ------------------------------------------------------------------------------------------------
// The address: ?view=steps&model=...&a=...&b=...&token=3&head=1&open=layer.0.attention.1
// ------------------------------------------------------------------------------------------------
function writeAddress(s) {
  if (s.panel.hidden) return;
  const query = new URLSearchParams({ view: "steps" });
  if (s.menu.value && s.menu.value !== s.menu.options[0]?.value) query.set("model", s.menu.value);
  if (s.a.value !== OPENING.a) query.set("a", s.a.value);
  if (s.b.value !== OPENING.b) query.set("b", s.b.value);
  if (s.trace) query.set("token", String(s.follow));
  if (s.head) query.set("head", String(s.head));
  if (s.open && s.open !== "embeddings") query.set("open", s.open);
  history.replaceState(null, "", `?${query}`);
}

function readAddress(s, query) {
  if (query.get("view") !== "steps") return;
  if (query.has("a")) s.a.value = query.get("a");
  if (query.has("b")) s.b.value = query.get("b");
  if (query.has("token")) [s.follow, s.keepFollow] = [Number(query.get("token")) || 0, true];
  if (query.has("head")) s.head = Number(query.get("head")) || 0;
  if (query.has("open")) s.open = query.get("open");
  const model = query.get("model");
  if (model && s.models.some((m) => m.name === model)) s.menu.value = model;
}

// ------------------------------------------------------------------------------------------------
// Building the panel
// ------------------------------------------------------------------------------------------------
function inputs(s) {
  const form = el("div", { class: "inputs steps-texts" });
  for (const [key, label] of [
    ["a", "Sentence A"],
    ["b", "Sentence B (optional)"],
  ]) {
    const box = el("div", { class: "field textarea" });
    const area = el("textarea", { id: `steps-${key}`, rows: "2" });
    area.value = OPENING[key];
    area.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) {
        e.preventDefault();
        compute(s);
      }
    });
    area.addEventListener("input", () => (s.hidden = {}));
    box.append(el("label", { for: area.id }, label), area);
    form.append(box);
    s[key] = area;
  }
  return form;
}

function controls(s) {
  const row = el("div", { class: "steps-controls" });
  const [f, followMenu] = select("steps-token", "Token to follow");
  const [l, layerMenu] = select("steps-layer", "Layer");
  const [h, headMenu] = select("steps-head", "Head");
  followMenu.addEventListener("change", () => follow(s, Number(followMenu.value)));
  layerMenu.addEventListener("change", () => pickLayer(s, Number(layerMenu.value)));
  headMenu.addEventListener("change", () => {
    s.head = Number(headMenu.value);
    writeAddress(s);
    drawOpen(s);
  });
  row.append(f, l, h);
  Object.assign(s, { followMenu, layerMenu, headMenu });
  return row;
}

function modelMenu(s) {
  const top = el("div", { class: "model" });
  s.menu = el("select", { id: "steps-model" });
  for (const m of s.models) {
    const mb = (m.trace.bytes / 1e6).toFixed(1);
    s.menu.append(el("option", { value: m.name }, `${m.name} (${m.trace.config.num_hidden_layers} layers, ${mb} MB)`));
  }
  s.menu.addEventListener("change", () => {
    s.open = "embeddings";
    compute(s);
  });
  top.append(el("label", { for: s.menu.id }, "Model"), s.menu);
  return top;
}

function actions(s) {
  const row = el("div", { class: "steps-actions" });
  const run = el("button", { type: "button", class: "run", id: "steps-run" }, "Trace");
  run.addEventListener("click", () => compute(s));
  const tour = el("button", { type: "button", class: "secondary", id: "steps-tour-start" }, "Take the tour");
  tour.addEventListener("click", () => s.tour.open(tour));
  row.append(run, tour);
  return row;
}

const INTRO =
  "One input through every operation of the model, with its real numbers, computed on this device. " +
  "Open a block to see its matrices; hover a cell, or focus a matrix and use the arrow keys, to read a value.";

/** Builds the view into its panel; returns {show()} for main.js (computes the first time it is shown). */
export async function buildSteps(panel, query) {
  const s = { panel, models: await modelsFor("trace"), vocab: new Map(), run: 0, follow: 1, head: 0 };
  Object.assign(s, { layer: 0, open: "embeddings", hidden: {}, trace: null, blocks: [] });
  panel.append(el("p", { class: "intro" }, INTRO));
  if (!s.models.length) {
    const how = "This site has no weights for Step by step: export it again with python -m lab export-web.";
    panel.append(el("p", { class: "status error" }, how));
    return { show() {} };
  }
  s.status = el("p", { class: "status", id: "steps-status", "aria-live": "polite" });
  s.words = el("div", { class: "mask-words", id: "steps-words" });
  s.flow = el("div", { class: "flow", id: "steps-flow" });
  s.detail = el("section", { class: "detail", id: "steps-detail", "aria-labelledby": "steps-detail-title" });
  s.body = el("div", { class: "steps-body" });
  s.body.append(s.flow, s.detail);
  const top = el("div", { class: "steps-top" });
  top.append(modelMenu(s), controls(s));
  panel.append(top, inputs(s), actions(s), s.status, s.words, s.body);
  s.tour = createTour(s, { openBlock: (key) => openBlock(s, key), blockName });
  readAddress(s, query);
  let resized = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resized);
    resized = setTimeout(() => s.trace && !panel.hidden && drawOpen(s), 150);
  });
  return {
    show() {
      writeAddress(s);
      if (!s.trace && !s.run) compute(s);
    },
  };
}
