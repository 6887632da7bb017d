// The page: one panel per view, each with its model menu, its inputs and a button. A view's
// inputs live in the address (?view=answer&question=...), so a link opens one example; the
// view named there (or the first) is computed as soon as the page opens. The last tab, Step by step,
// is a view of its own (steps.js): one input through every operation of a model.
import { bertLab, getManifest, modelsFor, onProgress } from "./api.js";
import { drawAnswer, drawAttention, drawClassify, drawFillMask, drawNextSentence, drawTag } from "./draw.js";
import { redrawKeeping } from "./figure.js";
import { el } from "./plots.js";
import { buildSteps } from "./steps.js";

window.bertLab = bertLab;

const VIEWS = [
  {
    id: "fill-mask",
    title: "Masked LM",
    intro: "BERT guesses the hidden word: write [MASK] where a word should go, or click a word to hide it.",
    inputs: [
      { key: "text", label: "Text with [MASK]", kind: "textarea" },
      { key: "k", label: "How many guesses", kind: "number", min: 1, max: 20 },
    ],
    button: "Predict",
    run: (v, model) => bertLab.fillMask(v.text, { model, topK: Number(v.k) }),
    draw: drawFillMask,
  },
  {
    id: "next-sentence",
    title: "Next Sentence",
    intro: "Does sentence B follow sentence A? The NSP head answers with P(IsNext).",
    inputs: [
      { key: "a", label: "Sentence A", kind: "textarea" },
      { key: "b", label: "Sentence B", kind: "textarea" },
    ],
    button: "Score",
    run: (v, model) => bertLab.nextSentence(v.a, v.b, { model }),
    draw: drawNextSentence,
  },
  {
    id: "attention",
    title: "Attention",
    intro: "Where each token looks: one head's map, and every head of the layer (pick one).",
    inputs: [
      { key: "a", label: "Sentence A", kind: "textarea" },
      { key: "b", label: "Sentence B (optional)", kind: "textarea" },
      { key: "layer", label: "Layer", kind: "number", min: 0, max: 24 },
      { key: "head", label: "Head", kind: "number", min: 0, max: 32 },
    ],
    button: "Show attention",
    run: (v, model) => bertLab.attention(v.a, v.b, { model }),
    draw: drawAttention,
  },
  {
    id: "answer",
    title: "Question Answering",
    intro: "BERT points at the answer in the paragraph: the most likely start and end tokens.",
    inputs: [
      { key: "question", label: "Question", kind: "input" },
      {
        key: "context",
        label: "Paragraph",
        kind: "textarea",
      },
    ],
    button: "Answer",
    run: (v, model) => bertLab.answer(v.question, v.context, { model, topK: 5 }),
    draw: drawAnswer,
  },
  {
    id: "classify",
    title: "Classify",
    intro: "A fine-tuned classifier reads the whole text through its [CLS] vector.",
    inputs: [{ key: "text", label: "Text", kind: "textarea" }],
    button: "Classify",
    run: (v, model) => bertLab.classify(v.text, null, { model }),
    draw: drawClassify,
  },
  {
    id: "tag",
    title: "Tag words",
    intro: "A tag for every word, read from its first WordPiece: people, places, organisations.",
    inputs: [{ key: "text", label: "Text", kind: "textarea" }],
    button: "Tag",
    run: (v, model) => bertLab.tag(v.text, { model }),
    draw: drawTag,
  },
];

const STEPS = { id: "steps", title: "Step by step" }; // ?view=steps
const state = {}; // view id -> {panel, fields, menu, status, out, result}; "steps" -> {panel, show}
let openings = {}; // openings.json: {view: {model, inputs, result}}, computed by the lab at export

// A view still on its opening example and model draws the lab's numbers at once (no runtime yet).
function opening(view) {
  const o = openings[view.id];
  const s = state[view.id];
  if (!o || s.menu.value !== o.model) return null;
  const same = view.inputs.every((i) => String(s.fields[i.key].value) === String(o.inputs[i.key] ?? ""));
  return same ? o.result : null;
}

function readAddress() {
  const query = new URLSearchParams(location.search);
  const view = [...VIEWS, STEPS].find((v) => v.id === query.get("view")) ?? VIEWS[0];
  return { view, query };
}

function writeAddress(view) {
  const s = state[view.id];
  const query = new URLSearchParams({ view: view.id });
  if (s.menu.value && s.menu.value !== s.menu.options[0]?.value) query.set("model", s.menu.value);
  for (const input of view.inputs) {
    const value = s.fields[input.key].value;
    if (String(value) !== String(input.value)) query.set(input.key, value);
  }
  history.replaceState(null, "", `?${query}`);
}

function values(view) {
  const s = state[view.id];
  return Object.fromEntries(view.inputs.map((i) => [i.key, s.fields[i.key].value]));
}

function say(view, text, kind = "") {
  const status = state[view.id].status;
  status.textContent = text;
  status.className = `status ${kind}`;
}

// The view's result drawn (keeping the focused control and the open tables); its summary sentence.
function draw(view, result) {
  const s = state[view.id];
  let said = "";
  redrawKeeping(s.out, () => (said = view.draw(s.ctx, result, s.out)));
  return said;
}

async function compute(view, first = false) {
  const s = state[view.id];
  writeAddress(view);
  const given = first ? opening(view) : null;
  if (given) {
    s.result = given;
    const said = draw(view, given);
    const how = `The opening example, computed by the lab; press ${view.button} to compute on this device.`;
    say(view, `${said} (${how})`, "ok");
    s.panel.dataset.computed = "0";
    bertLab.load(s.menu.value).catch(() => {}); // the runtime and the model come meanwhile
    return;
  }
  say(view, "computing on this device…");
  s.out.classList.add("busy");
  const started = performance.now();
  try {
    const result = await view.run(values(view), s.menu.value);
    s.result = result;
    const said = draw(view, result);
    const ms = performance.now() - started;
    const cut = result.truncated
      ? ` The text was cut: ${result.truncated} token(s) past the model's limit were left out.`
      : "";
    say(view, `${said} (done in ${ms.toFixed(0)} ms with ${s.menu.value}.)${cut}`, result.truncated ? "warn" : "ok");
    s.panel.dataset.computed = String(Number(s.panel.dataset.computed || 0) + 1);
    // the result comes into view (a projector shows 768 px): as little scrolling as shows its top
    const top = s.status.getBoundingClientRect().top;
    if (top > window.innerHeight * 0.6 || top < 0) window.scrollBy({ top: top - 80, behavior: "instant" });
  } catch (error) {
    say(view, String(error?.message ?? error), "error"); // the message only: never a stack or a path
  } finally {
    s.out.classList.remove("busy");
  }
}

function field(view, input, given) {
  const id = `${view.id}-${input.key}`;
  const label = el("label", { for: id }, input.label);
  let box;
  if (input.kind === "textarea") box = el("textarea", { id, rows: input.key === "context" ? 6 : 2 });
  else box = el("input", { id, type: input.kind === "number" ? "number" : "text" });
  if (input.kind === "number") {
    box.min = input.min;
    box.max = input.max;
  }
  input.value = openings[view.id]?.inputs?.[input.key] ?? (input.kind === "number" ? input.min : "");
  box.value = given ?? input.value;
  box.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && input.kind !== "number") {
      e.preventDefault();
      compute(view);
    }
  });
  if (input.kind === "number") box.addEventListener("change", () => redraw(view));
  return [el("div", { class: `field ${input.kind}` }), label, box];
}

// A slider-like input (layer, head) redraws from the last result without computing again.
function redraw(view) {
  const s = state[view.id];
  writeAddress(view);
  if (s.result && view.id === "attention") say(view, draw(view, s.result), "ok");
  else compute(view);
}

async function build() {
  const { view: opening, query } = readAddress();
  const nav = document.getElementById("views");
  const panels = document.getElementById("panels");
  for (const view of VIEWS) {
    const models = await modelsFor(view.id);
    if (!models.length) continue;
    const tab = el("button", { role: "tab", id: `tab-${view.id}`, "aria-controls": `panel-${view.id}` }, view.title);
    const panel = el("section", { role: "tabpanel", id: `panel-${view.id}`, "aria-labelledby": `tab-${view.id}` });
    const menu = el("select", { id: `${view.id}-model`, "aria-label": "model" });
    for (const m of models)
      menu.append(el("option", { value: m.name }, `${m.name} (${(m.bytes / 1e6).toFixed(1)} MB)`));
    const mine = view === opening;
    if (mine && query.get("model") && models.some((m) => m.name === query.get("model")))
      menu.value = query.get("model");
    const card = el("p", { class: "card" });
    const showCard = () => (card.textContent = models.find((m) => m.name === menu.value)?.card?.join(" ") ?? "");
    menu.addEventListener("change", () => {
      showCard();
      compute(view);
    });
    showCard();
    const fields = {};
    const form = el("div", { class: "inputs" });
    for (const input of view.inputs) {
      const [box, label, control] = field(view, input, mine ? query.get(input.key) : null);
      box.append(label, control);
      form.append(box);
      fields[input.key] = control;
    }
    const button = el("button", { class: "run", id: `${view.id}-run` }, view.button);
    button.addEventListener("click", () => compute(view));
    const status = el("p", { class: "status", id: `${view.id}-status`, role: "status", "aria-live": "polite" });
    const out = el("div", { class: "out", id: `${view.id}-out` });
    const top = el("div", { class: "model" });
    top.append(el("label", { for: menu.id }, "Model"), menu);
    const heading = el("h2", { class: "sr-only" }, view.title);
    panel.append(heading, el("p", { class: "intro" }, view.intro), top, card, form, button, status, out);
    panels.append(panel);
    nav.append(tab);
    state[view.id] = { panel, fields, menu, status, out, result: null };
    state[view.id].ctx = {
      id: view.id,
      s: state[view.id],
      redraw: () => redraw(view),
      compute: () => compute(view),
      say: (text) => say(view, text, "ok"),
    };
    tab.addEventListener("click", () => select(view, true));
  }
  await buildStepsTab(nav, panels, query);
  select(state[opening.id] ? opening : VIEWS.find((v) => state[v.id]), false);
}

async function buildStepsTab(nav, panels, query) {
  const tab = el("button", { role: "tab", id: "tab-steps", "aria-controls": "panel-steps" }, STEPS.title);
  const panel = el("section", { role: "tabpanel", id: "panel-steps", "aria-labelledby": "tab-steps" });
  panel.hidden = true;
  panels.append(panel);
  nav.append(tab);
  state.steps = { panel, ...(await buildSteps(panel, query)) };
  tab.addEventListener("click", () => select(STEPS, true));
}

function select(view, byHand) {
  for (const v of [...VIEWS, STEPS]) {
    if (!state[v.id]) continue;
    const on = v === view;
    document.getElementById(`tab-${v.id}`).setAttribute("aria-selected", String(on));
    state[v.id].panel.hidden = !on;
  }
  if (view === STEPS) return state.steps.show();
  if (byHand) writeAddress(view);
  if (!state[view.id].result) compute(view, true); // each view drawn the first time it is shown
}

// ---------------------------------------------------------------------------------------------
// Loading: the runtime and each model's graph show their progress
// ---------------------------------------------------------------------------------------------
onProgress(({ model, loaded, total, done }) => {
  const box = document.getElementById("loading");
  box.hidden = done;
  document.getElementById("loading-text").textContent =
    `loading ${model}: ${(loaded / 1e6).toFixed(1)} MB${total ? ` of ${(total / 1e6).toFixed(1)} MB` : ""}`;
  const bar = document.getElementById("loading-bar");
  if (total) bar.value = loaded / total;
  else bar.removeAttribute("value");
});

Promise.all([
  getManifest(),
  fetch("openings.json").then(
    (r) => (r.ok ? r.json() : {}),
    () => ({}),
  ),
])
  .then(([, given]) => {
    openings = given;
    return build();
  })
  .catch((error) => {
    document.getElementById("panels").append(el("p", { class: "status error" }, String(error?.message ?? error)));
  });
