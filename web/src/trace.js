// BERT, step by step, in the page: the forward pass of lab.inspect.trace (explore.trace) computed
// here in plain JavaScript, one operation at a time, from the model's weights (the site's
// models/<name>/weights.safetensors, read by safetensors.js) and its manifest entry's `trace`
// object (the settings of the pass and the catalogue of step texts, lab.web.trace_export).
//
// The steps are the Python trace's: the same names (module paths of the Hugging Face layout, or
// the in-between names of lab.inspect.trace.STEP_NAMES), kinds, order, shapes, axes and texts, and
// values within 1e-4 (tests/test_web_trace.py). A step is {name, kind, shape, axes, formula,
// section, what, module, layer, values}, values a Float32Array, row-major. Shapes: T tokens,
// H hidden, A heads, d = H / A head size, I feed-forward width, M predicted positions, V words,
// K labels.
//
// A large model's linear layers (usesRuntime) are computed by onnxruntime-web instead of the loops
// of tensor.js: api.js gives Weights a `product` that runs the site's one-Gemm graph, so the pass
// awaits each linear layer; every other operation stays here.
import { ACTIVATIONS, add, column, gatherRows, layerNorm, linear, map, softmaxRows } from "./tensor.js";
import { attention } from "./attention.js";

const TOKEN_HIDDEN = ["token", "hidden"];
const PREDICTED = ["predicted token", "hidden"];
const WORDS = ["predicted token", "word"];
const UNITS = ["token", "unit"];
const ACTIVATION_KINDS = { gelu: "gelu", gelu_new: "gelu_tanh", relu: "relu" }; // config name -> step kind

/** A catalogue text with this input's sizes (lab.inspect.trace.fill): {T}, {M}, {last} = T - 1. */
export function fill(text, T, M) {
  return text
    .replaceAll("{T}", String(T))
    .replaceAll("{M}", String(M))
    .replaceAll("{last}", String(T - 1));
}

/** Collects the steps, each with its kind's catalogue texts filled in for this input. */
export class Recorder {
  constructor(catalogue, T, M) {
    Object.assign(this, { catalogue, T, M, steps: [] });
  }

  add(name, kind, values, shape, axes, module = null, layer = null) {
    const text = this.catalogue[kind];
    if (!text) throw new Error(`the manifest's catalogue has no step kind "${kind}": export the site again`);
    const [formula, what] = [fill(text.formula, this.T, this.M), fill(text.what, this.T, this.M)];
    this.steps.push({ name, kind, shape, axes, formula, section: text.section, what, module, layer, values });
    return values;
  }
}

// A model with hidden_size >= 256 computes its linear layers with onnxruntime-web (the site's
// trace_linear.onnx, its wasm SIMD kernels), a smaller one with tensor.js's loops. Measured in
// chromium on one thread (benchmarks/web_steps.py's 2-core machine, a 52-token pair): minilm-squad
// (384 -> 384, 384 <-> 1536) 898 ms -> 115 ms a trace; the classroom model (128 -> 128, 128 <-> 512)
// 48 -> 34 ms, but its first trace then waits for the runtime's 14 MB (235 -> 1,173 ms) and the
// runtime's time per run is a larger part of so small a product: it stays in JavaScript.
export const RUNTIME_FROM_HIDDEN = 256;

/** Does this model's trace compute its linear layers with onnxruntime-web? */
export function usesRuntime(config) {
  return config.hidden_size >= RUNTIME_FROM_HIDDEN;
}

// How many linear layers each path has computed since the page opened, for tests: {runtime, script}.
export const linearCalls = { runtime: 0, script: 0 };

/** tensor.js's linear, counted. */
export function scriptProduct(x, rows, weight, bias) {
  linearCalls.script++;
  return linear(x, rows, weight, bias);
}

/**
 * The model's weights by module path: need(name) throws when the file lacks it, optional(name) is
 * undefined then. product(x, rows, weight, bias) computes x Wᵀ + b: tensor.js's loops, or a runtime's
 * (a Float32Array or a promise of one).
 */
export class Weights {
  constructor(tensors, product = scriptProduct) {
    this.tensors = tensors;
    this.product = product;
  }

  need(name) {
    const t = this.tensors.get(name);
    if (!t) throw new Error(`the weights file has no ${name}: export the site again with python -m lab export-web`);
    return t;
  }

  optional(name) {
    return this.tensors.get(name);
  }

  /** A linear layer's output: x (rows, in) -> (rows, out); its bias only when the model has one. */
  linear(prefix, x, rows) {
    return this.product(x, rows, this.need(`${prefix}.weight`), this.optional(`${prefix}.bias`));
  }

  /** A LayerNorm over rows of `width` numbers (no β in a model without biases). */
  norm(prefix, x, rows, width, eps) {
    return layerNorm(x, rows, width, this.need(`${prefix}.weight`), this.optional(`${prefix}.bias`), eps);
  }
}

/**
 * One forward pass as its steps (explore.trace): ids and typeIds (T,) from the page's tokenizer,
 * positions where the masked-LM head is read; onLayer(i, stepsSoFar) is awaited after each layer.
 */
export async function forwardSteps(weights, config, catalogue, { ids, typeIds, positions }, onLayer = null) {
  const rec = new Recorder(catalogue, ids.length, positions.length);
  let x = embeddings(rec, weights, config, ids, typeIds);
  x = await encoder(rec, weights, config, x, ids.length, onLayer);
  await heads(rec, weights, config, x, ids.length, positions);
  return rec.steps;
}

/** One row of `table` (V, H) per index: (n, H). */
function lookup(table, indices) {
  const H = table.shape[1];
  return gatherRows(table.values, H, indices);
}

/** Figure 2: token + segment + position, then LayerNorm: (T, H). */
function embeddings(rec, w, cfg, ids, typeIds) {
  const p = "bert.embeddings";
  const [T, H] = [ids.length, cfg.hidden_size];
  const step = (name, kind, values) =>
    rec.add(name, kind, values, [T, H], TOKEN_HIDDEN, name.endsWith("sum") ? null : name);
  let x = step(`${p}.word_embeddings`, "word_embeddings", lookup(w.need(`${p}.word_embeddings.weight`), ids));
  const segments = cfg.type_vocab_size > 0;
  const table = cfg.position_embedding_type === "absolute";
  if (segments) {
    const seg = lookup(w.need(`${p}.token_type_embeddings.weight`), typeIds);
    x = add(x, step(`${p}.token_type_embeddings`, "token_type_embeddings", seg));
  }
  if (table) {
    const pos = lookup(w.need(`${p}.position_embeddings.weight`), Array.from(ids.keys())); // rows 0 … T-1
    x = add(x, step(`${p}.position_embeddings`, "position_embeddings", pos));
  }
  if (segments || table) {
    const kind = !table ? "embedding_sum_rotary" : segments ? "embedding_sum" : "embedding_sum_no_segment";
    step(`${p}.sum`, kind, x);
  }
  return step(`${p}.LayerNorm`, "layer_norm", w.norm(`${p}.LayerNorm`, x, T, H, cfg.layer_norm_eps));
}

/** Does layer i attend to every token (BertConfig.is_global_layer)? Layer 0 always does. */
export function isGlobalLayer(cfg, i) {
  return !cfg.local_attention || i % cfg.global_attn_every_n_layers === 0;
}

/** L layers, post-norm (BERT) or pre-norm (lab.modern), then pre-norm's final norm: (T, H). */
async function encoder(rec, w, cfg, x, T, onLayer) {
  const rope = cfg.position_embedding_type === "rotary" ? rotaryTables(cfg, T) : null;
  for (let i = 0; i < cfg.num_hidden_layers; i++) {
    const global = isGlobalLayer(cfg, i);
    const at = {
      i,
      T,
      prefix: `bert.encoder.layer.${i}`,
      window: global ? 0 : cfg.local_attention, // 0: sees every key
      rope: rope && (global ? rope.global : rope.local),
    };
    x = await (cfg.norm_position === "pre" ? preNormLayer : postNormLayer)(rec, w, cfg, at, x);
    if (onLayer) await onLayer(i, rec.steps.slice());
  }
  if (cfg.norm_position === "pre") {
    const p = "bert.encoder.final_norm";
    const out = w.norm(p, x, T, cfg.hidden_size, cfg.layer_norm_eps);
    x = rec.add(p, "layer_norm", out, [T, cfg.hidden_size], TOKEN_HIDDEN, p);
  }
  return x;
}

/**
 * lab.modern.Rotary: cos and sin (T, d) for the global and the local layers' bases, in float32 as
 * torch computes them: inv_freq_i = 1 / θ^(2i/d), angle (t, i) = t · inv_freq_i, and column
 * i + d/2 repeats column i (pair i is (i, i + d/2)).
 */
export function rotaryTables(cfg, T) {
  const d = cfg.hidden_size / cfg.num_attention_heads;
  const tables = (theta) => {
    const half = d / 2;
    const inv = Array.from({ length: half }, (_, i) => Math.fround(1 / Math.fround(theta ** Math.fround((2 * i) / d))));
    const cos = new Float32Array(T * d);
    const sin = new Float32Array(T * d);
    for (let t = 0; t < T; t++) {
      for (let j = 0; j < d; j++) {
        const angle = Math.fround(t * inv[j % half]);
        cos[t * d + j] = Math.cos(angle);
        sin[t * d + j] = Math.sin(angle);
      }
    }
    return { cos, sin, d };
  };
  return { global: tables(cfg.rope_theta), local: tables(cfg.local_rope_theta) };
}

/** The attention block's output projection: the heads' concatenation (T, H) -> (T, H). */
async function attentionOutput(rec, w, cfg, at, ctx) {
  const p = `${at.prefix}.attention.output.dense`;
  const out = await w.linear(p, ctx, at.T);
  return rec.add(p, "attention_output", out, [at.T, cfg.hidden_size], TOKEN_HIDDEN, p, at.i);
}

/** A LayerNorm step of layer at.i named `name` (its module path). */
function layerNormStep(rec, w, cfg, at, name, x) {
  const H = cfg.hidden_size;
  const values = w.norm(name, x, at.T, H, cfg.layer_norm_eps); // (T, H)
  return rec.add(name, "layer_norm", values, [at.T, H], TOKEN_HIDDEN, name, at.i);
}

/** A residual sum step of layer at.i: x + sublayer(x), (T, H). */
function residualStep(rec, cfg, at, name, x, y) {
  return rec.add(name, "residual", add(x, y), [at.T, cfg.hidden_size], TOKEN_HIDDEN, null, at.i);
}

/** BERT's layer: x = LN(x + Attn(x)); x = LN(x + FFN(x)). */
async function postNormLayer(rec, w, cfg, at, x) {
  const p = at.prefix;
  const dense = await attentionOutput(rec, w, cfg, at, await attention(rec, w, cfg, at, x));
  const res = residualStep(rec, cfg, at, `${p}.attention.output.residual`, x, dense);
  x = layerNormStep(rec, w, cfg, at, `${p}.attention.output.LayerNorm`, res);
  const res2 = residualStep(rec, cfg, at, `${p}.output.residual`, x, await feedForward(rec, w, cfg, at, x));
  return layerNormStep(rec, w, cfg, at, `${p}.output.LayerNorm`, res2);
}

/** lab.modern.PreNormLayer: x = x + Attn(LN1(x)); x = x + FFN(LN2(x)); layer 0 has no LN1. */
async function preNormLayer(rec, w, cfg, at, x) {
  const p = at.prefix;
  const h = at.i === 0 ? x : layerNormStep(rec, w, cfg, at, `${p}.attention.output.LayerNorm`, x);
  const dense = await attentionOutput(rec, w, cfg, at, await attention(rec, w, cfg, at, h));
  x = residualStep(rec, cfg, at, `${p}.attention.output.residual`, x, dense);
  const h2 = layerNormStep(rec, w, cfg, at, `${p}.output.LayerNorm`, x);
  return residualStep(rec, cfg, at, `${p}.output.residual`, x, await feedForward(rec, w, cfg, at, h2));
}

/** H -> I -> activation -> H, each token on its own (before the residual): (T, H). */
async function feedForward(rec, w, cfg, at, x) {
  const [T, H, I, p, i] = [at.T, cfg.hidden_size, cfg.intermediate_size, at.prefix, at.i];
  const glu = cfg.feed_forward === "glu";
  const f = ACTIVATIONS[cfg.hidden_act];
  if (!f) throw new Error(`hidden_act ${cfg.hidden_act} is not one of ${Object.keys(ACTIVATIONS).join(", ")}`);
  const width = glu ? 2 * I : I;
  const name = `${p}.intermediate.dense`;
  const dense = await w.linear(name, x, T); // (T, I), or (T, 2I) gated
  const wide = rec.add(name, glu ? "ffn_in_glu" : "ffn_in", dense, [T, width], UNITS, name, i);
  let act;
  if (glu) {
    // (T, 2I): columns 0 … I-1 are the value, I … 2I-1 the gate; act(value) ⊙ gate -> (T, I)
    act = new Float32Array(T * I);
    for (let t = 0; t < T; t++) {
      for (let j = 0; j < I; j++) act[t * I + j] = Math.fround(f(wide[t * width + j])) * wide[t * width + I + j];
    }
  } else {
    act = map(wide, f);
  }
  const kind = glu ? "geglu" : ACTIVATION_KINDS[cfg.hidden_act];
  rec.add(`${p}.intermediate.activation`, kind, act, [T, I], UNITS, `${p}.intermediate`, i);
  const out = await w.linear(`${p}.output.dense`, act, T);
  return rec.add(`${p}.output.dense`, "ffn_out", out, [T, H], TOKEN_HIDDEN, `${p}.output.dense`, i);
}

/** The pooler and whatever heads the model has, in the paper's order (3.1, then 3.2). */
async function heads(rec, w, cfg, x, T, positions) {
  const H = cfg.hidden_size;
  let pooled = null;
  if (w.optional("bert.pooler.dense.weight")) {
    const dense = await w.linear("bert.pooler.dense", x.subarray(0, H), 1); // [CLS]: (H,)
    rec.add("bert.pooler.dense", "pooler_dense", dense, [H], ["hidden"], "bert.pooler.dense");
    pooled = rec.add("bert.pooler.activation", "tanh", map(dense, Math.tanh), [H], ["hidden"], "bert.pooler");
  }
  if (w.optional("cls.predictions.transform.dense.weight")) {
    await mlmHead(rec, w, cfg, gatherRows(x, H, positions), positions.length);
    if (w.optional("cls.seq_relationship.weight")) {
      const logits = await w.linear("cls.seq_relationship", pooled, 1);
      rec.add("cls.seq_relationship", "nsp_logits", logits, [2], ["IsNext/NotNext"], "cls.seq_relationship");
      rec.add("cls.seq_relationship.softmax", "nsp_softmax", softmaxRows(logits, 1, 2), [2], ["IsNext/NotNext"]);
    }
  }
  await fineTuningHead(rec, w, cfg, x, T, pooled);
}

/** Masked LM at the M predicted positions h (M, H): dense -> GELU -> LayerNorm -> tied decoder -> softmax. */
async function mlmHead(rec, w, cfg, h, M) {
  const [H, V, p] = [cfg.hidden_size, cfg.vocab_size, "cls.predictions"];
  const [dense, act, norm] = [`${p}.transform.dense`, `${p}.transform.activation`, `${p}.transform.LayerNorm`];
  const d = rec.add(dense, "mlm_dense", await w.linear(dense, h, M), [M, H], PREDICTED, dense); // (M, H)
  const a = rec.add(act, "mlm_activation", map(d, ACTIVATIONS[cfg.hidden_act]), [M, H], PREDICTED);
  const n = rec.add(norm, "layer_norm", w.norm(norm, a, M, H, cfg.layer_norm_eps), [M, H], PREDICTED, norm);
  // the decoder's weight is the word embedding matrix (V, H), tied; its bias is cls.predictions.bias
  const table = w.need("bert.embeddings.word_embeddings.weight");
  const bias = w.optional(`${p}.bias`) ?? w.need(`${p}.decoder.bias`);
  const logits = rec.add(`${p}.decoder`, "decoder", await w.product(n, M, table, bias), [M, V], WORDS, `${p}.decoder`);
  rec.add(`${p}.softmax`, "mlm_softmax", softmaxRows(logits, M, V), [M, V], WORDS); // (M, V)
}

/** Fine-tuning's one layer: a classifier on the pooled [CLS], a tagger or start/end scores on every token. */
async function fineTuningHead(rec, w, cfg, x, T, pooled) {
  const [kind, K] = [cfg.class, cfg.labels.length];
  if (kind === "BertForSequenceClassification") {
    if (cfg.classifier_layers !== 1) {
      throw new Error("trace follows a classifier that reads the pooled [CLS] (classifier_layers = 1)");
    }
    const logits = await w.linear("classifier", pooled, 1);
    rec.add("classifier", "classifier", logits, [K], ["label"], "classifier");
    rec.add("classifier.softmax", "classifier_softmax", softmaxRows(logits, 1, K), [K], ["label"]);
  } else if (kind === "BertForTokenClassification") {
    if (cfg.classifier_layers !== 1) {
      throw new Error("trace follows a tagger that reads the last layer only (classifier_layers = 1)");
    }
    const axes = ["token", "label"];
    const logits = rec.add("classifier", "tagger", await w.linear("classifier", x, T), [T, K], axes, "classifier");
    rec.add("classifier.softmax", "tagger_softmax", softmaxRows(logits, T, K), [T, K], axes);
  } else if (kind === "BertForQuestionAnswering") {
    const scores = await w.linear("qa_outputs", x, T); // (T, 2): start, end
    const logits = rec.add("qa_outputs", "span_logits", scores, [T, 2], ["token", "start/end"], "qa_outputs");
    rec.add("qa_outputs.start_softmax", "start_softmax", softmaxRows(column(logits, T, 2, 0), 1, T), [T], ["token"]);
    rec.add("qa_outputs.end_softmax", "end_softmax", softmaxRows(column(logits, T, 2, 1), 1, T), [T], ["token"]);
  }
}
