// window.bertLab: the lab's core views computed in the browser with onnxruntime-web.
//
// Every call takes a bundled model's folder name ({model: "bert-lab-classroom"}) and resolves to
// plain JSON shaped like the result of the lab's Python function of the same view
// (lab.inspect.explore): the same field names, probabilities as numbers, tokens as strings.
// The graphs, tokenizers and settings come from the site's manifest.json (python -m lab
// export-web); docs/web.md documents the calls for people who build on them.
import * as ort from "onnxruntime-web/wasm";
import { TextEncoder, cleanText, maskPositions } from "./text.js";
import { answerSpans, qaFeatures, softmax } from "./qa.js";
import { decodeTags, tagFeatures } from "./tag.js";
import { taskSettings } from "./task.js";
import { readSafetensors } from "./safetensors.js";
import { Weights, forwardSteps, linearCalls, scriptProduct, usesRuntime } from "./trace.js";

// The runtime's own files sit beside the page (ort/), never on a CDN: the page works offline.
ort.env.wasm.wasmPaths = new URL("ort/", document.baseURI).href;
// Threads need a cross-origin isolated page (serve-web sends the headers; most static hosts do not).
ort.env.wasm.numThreads = self.crossOriginIsolated ? Math.min(4, navigator.hardwareConcurrency || 1) : 1;

const MANIFEST = "manifest.json";
let manifest = null;
const loaded = new Map(); // model name -> Promise<{entry, session, encoder}>
const encoders = new Map(); // model name -> Promise<TextEncoder>, shared by the graph and the trace
const traced = new Map(); // model name -> Promise<{entry, encoder, weights}>: what trace() computes from
const listeners = new Set(); // progress callbacks: ({model, loaded, total, done})
const linearSessions = new Map(); // path of the site's trace_linear.onnx -> Promise<session or null>

/** The site's manifest (fetched once): {version, models: [entry, ...]}. */
export async function getManifest() {
  if (!manifest) {
    const response = await fetch(MANIFEST);
    if (!response.ok) throw new Error(`the site has no ${MANIFEST}: export it with python -m lab export-web`);
    manifest = await response.json();
  }
  return manifest;
}

/** The manifest entry of a model by name; an unknown name is an error that lists the known ones. */
export async function modelEntry(name) {
  const { models } = await getManifest();
  const entry = models.find((m) => m.name === name);
  if (!entry) throw new Error(`no model called "${name}" here: choose one of ${models.map((m) => m.name).join(", ")}`);
  return entry;
}

/**
 * The models that serve a view ("fill-mask", "next-sentence", "attention", "answer", "classify", "tag"),
 * or that can be traced step by step ("trace": every model exported with its weights).
 */
export async function modelsFor(view) {
  const { models } = await getManifest();
  return models.filter((m) => (view === "trace" ? Boolean(m.trace) : m.views.includes(view)));
}

/** Be told how a model's files are coming along: fn({model, loaded, total, done}). */
export function onProgress(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

async function fetchBytes(path, model) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`could not load ${path} (${response.status}): is the site complete?`);
  const total = Number(response.headers.get("content-length")) || 0;
  if (!response.body) return new Uint8Array(await response.arrayBuffer());
  const reader = response.body.getReader();
  const parts = [];
  let received = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    received += value.length;
    listeners.forEach((fn) => fn({ model, file: path, loaded: received, total, done: false }));
  }
  const bytes = new Uint8Array(received);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return bytes;
}

/** A promise kept in `cache` under `name`, made by make() on first use; a failed one can be tried again. */
function once(cache, name, make) {
  if (!cache.has(name)) {
    const promise = make();
    promise.catch(() => cache.delete(name));
    cache.set(name, promise);
  }
  return cache.get(name);
}

/** A model's tokenizer (its tokenizer.json), loaded once. */
function encoderFor(name) {
  return once(encoders, name, async () => {
    const entry = await modelEntry(name);
    const response = await fetch(entry.files.tokenizer);
    if (!response.ok) {
      throw new Error(`could not load ${entry.files.tokenizer} (${response.status}): is the site complete?`);
    }
    return new TextEncoder(await response.json(), entry);
  });
}

/** Load a model once (its graph and tokenizer): later calls share it. */
export function load(name) {
  return once(loaded, name, async () => {
    const entry = await modelEntry(name);
    const [graph, encoder] = await Promise.all([fetchBytes(entry.files.model, name), encoderFor(name)]);
    const session = await ort.InferenceSession.create(graph, {
      executionProviders: ["wasm"],
      graphOptimizationLevel: "all",
    });
    listeners.forEach((fn) => fn({ model: name, loaded: 1, total: 1, done: true }));
    return { entry, session, encoder };
  });
}

/** One session of the site's one-Gemm graph (Y = X Wᵀ + B), shared by every model; null if it cannot be made. */
function linearSession(path) {
  return once(linearSessions, path, async () => {
    try {
      const response = await fetch(path); // a few hundred bytes: no progress to report
      if (!response.ok) return null;
      const graph = new Uint8Array(await response.arrayBuffer());
      return await ort.InferenceSession.create(graph, { executionProviders: ["wasm"], graphOptimizationLevel: "all" });
    } catch {
      return null; // the loops of tensor.js compute the same numbers, only slower
    }
  });
}

/**
 * trace.js's x Wᵀ + b for a model: onnxruntime-web's Gemm where trace.js's usesRuntime says so and
 * its session can be made, else tensor.js's loops (each run that fails falls back to them too).
 */
async function linearFor(entry) {
  const runtime = usesRuntime(entry.trace.config) && entry.trace.linear;
  const session = runtime ? await linearSession(entry.trace.linear) : null;
  if (!session) return scriptProduct;
  return async (x, rows, weight, bias) => {
    const [N, K] = weight.shape;
    const feeds = {
      X: new ort.Tensor("float32", x, [rows, K]),
      W: new ort.Tensor("float32", weight.values, [N, K]),
      B: new ort.Tensor("float32", bias?.values ?? new Float32Array(N), [N]),
    };
    try {
      const { Y } = await session.run(feeds);
      linearCalls.runtime++;
      return Y.data;
    } catch {
      return scriptProduct(x, rows, weight, bias);
    }
  };
}

/** Load what trace() computes a model from, once: its weights (entry.trace.weights) and tokenizer. */
export function loadTrace(name) {
  return once(traced, name, async () => {
    const entry = await modelEntry(name);
    if (!entry.trace) {
      throw new Error(`${name} was exported without its weights, so it cannot be traced: export the site again`);
    }
    const [bytes, encoder, product] = await Promise.all([
      fetchBytes(entry.trace.weights, name),
      encoderFor(name),
      linearFor(entry),
    ]);
    const weights = new Weights(readSafetensors(bytes, entry.trace.weights), product);
    const size = bytes.length;
    listeners.forEach((fn) => fn({ model: name, file: entry.trace.weights, loaded: size, total: size, done: true }));
    return { entry, encoder, weights };
  });
}

// Each call's options, by view: a misspelt one (top_k for topK) is an error, not ignored.
const OPTIONS = {
  "fill-mask": ["model", "topK"],
  "next-sentence": ["model"],
  attention: ["model"],
  answer: ["model", "topK"],
  classify: ["model"],
  tag: ["model"],
  trace: ["model", "onLayer"],
};

function checkOptions(view, options) {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new Error(`options must be an object such as {model: "bert-lab-classroom"}, got ${JSON.stringify(options)}`);
  }
  const unknown = Object.keys(options).filter((k) => !OPTIONS[view].includes(k));
  if (unknown.length) {
    throw new Error(`unknown option ${unknown.join(", ")}: ${view} takes ${OPTIONS[view].join(", ")}`);
  }
  if ("topK" in options && !Number.isInteger(options.topK)) {
    throw new Error(`topK must be a whole number (a number, not text), got ${JSON.stringify(options.topK)}`);
  }
  if (options.onLayer !== undefined && options.onLayer !== null && typeof options.onLayer !== "function") {
    throw new Error(`onLayer must be a function (layerIndex, stepsSoFar) => ..., got ${typeof options.onLayer}`);
  }
}

async function modelFor(view, options = {}) {
  checkOptions(view, options);
  const name = options.model ?? (await modelsFor(view))[0]?.name;
  if (!name) throw new Error(`no model on this site serves ${view}`);
  const model = await load(name);
  if (!model.entry.views.includes(view)) {
    const can = (await modelsFor(view)).map((m) => m.name).join(", ") || "none";
    throw new Error(`${name} cannot do ${view} (it does ${model.entry.views.join(", ")}); models that can: ${can}`);
  }
  return model;
}

// One batch of encoded rows -> the graph's outputs ({name: ort.Tensor}); rows are padded to the longest.
async function run(session, rows, pad) {
  const width = Math.max(...rows.map((r) => r.ids.length));
  const n = rows.length * width;
  const ids = new BigInt64Array(n).fill(BigInt(pad));
  const types = new BigInt64Array(n);
  const mask = new BigInt64Array(n);
  rows.forEach((row, b) => {
    row.ids.forEach((id, t) => {
      ids[b * width + t] = BigInt(id);
      types[b * width + t] = BigInt(row.typeIds[t]);
      mask[b * width + t] = 1n;
    });
  });
  const dims = [rows.length, width];
  return session.run({
    input_ids: new ort.Tensor("int64", ids, dims),
    token_type_ids: new ort.Tensor("int64", types, dims),
    attention_mask: new ort.Tensor("int64", mask, dims),
  });
}

function topK(values, k) {
  const order = Array.from(values.keys()).sort((a, b) => values[b] - values[a] || a - b);
  return order.slice(0, k);
}

/** Masked LM: the topK tokens at each [MASK], best first. */
export async function fillMask(text, options = {}) {
  const { entry, session, encoder } = await modelFor("fill-mask", options);
  const topk = options.topK ?? 5;
  const vocab = entry.config.vocab_size;
  if (!Number.isInteger(topk) || topk < 1 || topk > vocab) {
    throw new Error(`topK must be a whole number between 1 and ${vocab}, got ${topk}`);
  }
  text = cleanText(text);
  const enc = encoder.encode(text, null);
  const positions = maskPositions(encoder, enc, entry.task, text);
  const out = await run(session, [enc], entry.special.pad);
  const logits = out.mlm_logits.data;
  const predictions = positions.map((p) => {
    const probs = softmax(logits.subarray(p * vocab, (p + 1) * vocab));
    return topK(probs, topk).map((i) => [encoder.idToTokenString(i), probs[i]]);
  });
  return { predictions, tokens: enc.tokens, mask_positions: positions, truncated: enc.truncated };
}

/** Next sentence prediction: P(IsNext), how sure the model is that b follows a. */
export async function nextSentence(a, b, options = {}) {
  const { entry, session, encoder } = await modelFor("next-sentence", options);
  const enc = encoder.encode(cleanText(a, "a"), cleanText(b, "b"));
  const out = await run(session, [enc], entry.special.pad);
  const [isNext] = softmax(out.nsp_logits.data);
  return { is_next: isNext, tokens: enc.tokens, sentence_b_start: enc.sentenceBStart, truncated: enc.truncated };
}

/** Every layer's attention probabilities: attentions[layer][head][from][to]. */
export async function attention(a, b = null, options = {}) {
  const { entry, session, encoder } = await modelFor("attention", options);
  const textB = b === null || b === undefined || b === "" ? null : cleanText(b, "text_b");
  const enc = encoder.encode(cleanText(a, "text_a"), textB);
  const out = await run(session, [enc], entry.special.pad);
  const [L, , A, T] = out.attentions.dims;
  const data = out.attentions.data;
  const attentions = [];
  for (let l = 0; l < L; l++) {
    const heads = [];
    for (let h = 0; h < A; h++) {
      const rows = [];
      for (let i = 0; i < T; i++) {
        const from = ((l * A + h) * T + i) * T; // row i of head h of layer l: (L, 1, A, T, T)
        rows.push(Array.from(data.subarray(from, from + T)));
      }
      heads.push(rows);
    }
    attentions.push(heads);
  }
  return {
    tokens: enc.tokens,
    attentions,
    sentence_b_start: textB === null ? null : enc.sentenceBStart,
    truncated: enc.truncated,
  };
}

/** A classifier's probability for each label, best first: {label: probability}. */
export async function classify(text, pair = null, options = {}) {
  const { entry, session, encoder } = await modelFor("classify", options);
  const b = pair === null || pair === undefined || pair === "" ? null : cleanText(pair, "text_pair");
  const enc = encoder.encode(cleanText(text), b);
  const out = await run(session, [enc], entry.special.pad);
  const probs = softmax(out.logits.data);
  const ranked = topK(probs, probs.length);
  return {
    probabilities: Object.fromEntries(ranked.map((i) => [entry.labels[i], probs[i]])),
    labels: ranked.map((i) => entry.labels[i]),
    truncated: enc.truncated,
  };
}

/** Extractive QA: the topK answer spans of the context, read in doc-stride windows. */
export async function answer(question, context, options = {}) {
  const { entry, session, encoder } = await modelFor("answer", options);
  const topk = options.topK ?? 3;
  if (!Number.isInteger(topk) || topk < 1) throw new Error(`topK must be at least 1, got ${topk}`);
  const qa = qaFeatures(encoder, question, context, entry.task);
  const out = await run(session, qa.features, entry.special.pad);
  const width = out.start_logits.dims[1];
  const rows = (t) => qa.features.map((_, w) => t.data.subarray(w * width, (w + 1) * width));
  const r = answerSpans(qa, rows(out.start_logits), rows(out.end_logits), entry.task, topk);
  return {
    spans: r.spans,
    tokens: r.tokens,
    start_probs: Array.from(r.startProbs),
    end_probs: Array.from(r.endProbs),
    offsets: r.offsets,
    window_index: r.windowIndex,
    num_windows: r.numWindows,
    question_truncated: r.questionTruncated,
  };
}

/** A tag for every word (NER, POS), read from its first piece; text: a string or a list of words. */
export async function tag(text, options = {}) {
  const { entry, session, encoder } = await modelFor("tag", options);
  const tagged = tagFeatures(encoder, text, entry.task);
  const logits = [];
  for (let i = 0; i < tagged.features.length; i += 32) {
    const batch = tagged.features.slice(i, i + 32);
    const out = await run(session, batch, entry.special.pad);
    const [, width, K] = out.logits.dims;
    batch.forEach((_, b) => logits.push(out.logits.data.slice(b * width * K, (b + 1) * width * K)));
  }
  return {
    words: decodeTags(tagged, logits, entry.labels),
    num_windows: tagged.features.length,
    num_pieces: tagged.numPieces,
    max_seq_length: tagged.maxSeqLength,
    doc_stride: tagged.docStride,
  };
}

/**
 * BERT, step by step (explore.trace): one forward pass on a (and b) as its ordered steps, computed
 * on this device from the model's weights. Resolves to {tokens, input_ids, token_type_ids,
 * predicted_positions, truncated, steps: [{name, kind, shape, axes, formula, section, what, module,
 * layer, values: Float32Array}]}; onLayer(layerIndex, stepsSoFar) is awaited after each encoder layer.
 */
export async function trace(a, b = null, options = {}) {
  checkOptions("trace", options);
  const textA = cleanText(a, "text_a"); // bad input is answered before any weights are fetched
  const textB = b === null || b === undefined || b === "" ? null : cleanText(b, "text_b");
  const name = options.model ?? (await modelsFor("trace"))[0]?.name;
  if (!name) throw new Error("no model on this site can be traced: export it again with python -m lab export-web");
  const { entry, encoder, weights } = await loadTrace(name);
  const enc = encoder.encode(textA, textB);
  const masks = [];
  enc.ids.forEach((id, i) => id === entry.special.mask && masks.push(i));
  const { max_masks: limit } = taskSettings(entry.trace, ["max_masks"], name, "trace");
  if (masks.length > limit) throw new Error(`${masks.length} [MASK] tokens: at most ${limit} per text`);
  const positions = masks.length ? masks : Array.from(enc.ids.keys()); // else every token
  const input = { ids: enc.ids, typeIds: enc.typeIds, positions };
  const steps = await forwardSteps(weights, entry.trace.config, entry.trace.catalogue, input, options.onLayer);
  return {
    tokens: enc.tokens,
    input_ids: enc.ids,
    token_type_ids: enc.typeIds,
    predicted_positions: positions,
    truncated: enc.truncated,
    steps,
  };
}

export const bertLab = {
  getManifest,
  modelsFor,
  load,
  onProgress,
  fillMask,
  nextSentence,
  attention,
  classify,
  answer,
  tag,
  trace,
  linearCalls, // {runtime, script}: the trace's linear layers so far by path (tests read it)
};
