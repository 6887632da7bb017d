// Multi-head self-attention, one operation a step, for the step-by-step trace (trace.js):
// q, k, v; the rotary turn of q and k (lab.modern); each head's scores, the mask, the softmax and
// its context; the heads side by side. Shapes: T tokens, H hidden, A heads, d = H / A.
import { softmaxRows } from "./tensor.js";

/** float32's lowest finite number: torch's finfo(float32).min, the score a masked key gets. */
export const LOWEST = -3.4028234663852886e38;

const HEAD_TOKEN_TOKEN = ["head", "query token", "key token"];
const HEAD_TOKEN_DIM = ["head", "token", "dim"];

/** (T, H) -> (A, T, d): head a takes columns a·d … a·d + d - 1 of every row. */
export function splitHeads(x, T, A, d) {
  const out = new Float32Array(A * T * d);
  for (let a = 0; a < A; a++) {
    for (let t = 0; t < T; t++) out.set(x.subarray(t * A * d + a * d, t * A * d + (a + 1) * d), (a * T + t) * d);
  }
  return out;
}

/** (A, T, d) -> (T, A·d): the heads side by side again (the inverse of splitHeads). */
export function mergeHeads(x, T, A, d) {
  const out = new Float32Array(T * A * d);
  for (let a = 0; a < A; a++) {
    for (let t = 0; t < T; t++) out.set(x.subarray((a * T + t) * d, (a * T + t + 1) * d), t * A * d + a * d);
  }
  return out;
}

/**
 * lab.modern.apply_rotary on (A, T, d): x · cos + rotate_half(x) · sin, with rotate_half turning
 * each pair (x_j, x_j+d/2) by 90 degrees: [x1, x2] -> [-x2, x1]. E.g. d = 4, [1, 2, 3, 4] -> [-3, -4, 1, 2].
 */
export function rotate(x, A, T, { cos, sin, d }) {
  const half = d / 2;
  const out = new Float32Array(x.length);
  for (let a = 0; a < A; a++) {
    for (let t = 0; t < T; t++) {
      const o = (a * T + t) * d;
      for (let j = 0; j < d; j++) {
        const turned = j < half ? -x[o + j + half] : x[o + j - half];
        out[o + j] = x[o + j] * cos[t * d + j] + turned * sin[t * d + j];
      }
    }
  }
  return out;
}

/** Each head's Q Kᵀ / √d: q, k (A, T, d) -> (A, T, T). */
export function scores(q, k, A, T, d) {
  const out = new Float32Array(A * T * T);
  const scale = Math.sqrt(d);
  for (let a = 0; a < A; a++) {
    for (let i = 0; i < T; i++) {
      const qo = (a * T + i) * d;
      for (let j = 0; j < T; j++) {
        const ko = (a * T + j) * d;
        let s = 0;
        for (let e = 0; e < d; e++) s += q[qo + e] * k[ko + e];
        out[(a * T + i) * T + j] = s / scale;
      }
    }
  }
  return out;
}

/** A local layer's mask (lab.modern.local_mask): key j stays when |i - j| <= window / 2, else LOWEST. */
export function maskWindow(s, A, T, window) {
  const out = s.slice();
  const reach = Math.floor(window / 2);
  for (let a = 0; a < A; a++) {
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) if (Math.abs(i - j) > reach) out[(a * T + i) * T + j] = LOWEST;
    }
  }
  return out;
}

/** Each head's P V: probs (A, T, T), v (A, T, d) -> (A, T, d). */
export function context(probs, v, A, T, d) {
  const out = new Float32Array(A * T * d);
  const row = new Float64Array(d);
  for (let a = 0; a < A; a++) {
    for (let i = 0; i < T; i++) {
      row.fill(0);
      for (let j = 0; j < T; j++) {
        const p = probs[(a * T + i) * T + j];
        const vo = (a * T + j) * d;
        for (let e = 0; e < d; e++) row[e] += p * v[vo + e];
      }
      out.set(row, (a * T + i) * d);
    }
  }
  return out;
}

/**
 * Self-attention of layer at.i on x (T, H), recorded step by step; resolves to the concatenated heads
 * (T, H). Its q, k and v projections are awaited (w.linear may be onnxruntime-web's, trace.js).
 * at: {i, T, prefix, window (0: every key), rope (cos and sin tables, or null)}.
 */
export async function attention(rec, w, cfg, at, x) {
  const [T, H, A] = [at.T, cfg.hidden_size, cfg.num_attention_heads];
  const d = H / A;
  const [p, i] = [`${at.prefix}.attention.self`, at.i];
  const step = (name, kind, values, shape, axes, module = null) => rec.add(name, kind, values, shape, axes, module, i);
  const project = async (name) => {
    const values = await w.linear(`${p}.${name}`, x, T); // (T, H)
    return step(`${p}.${name}`, name, values, [T, H], ["token", "hidden"], `${p}.${name}`);
  };
  let q = splitHeads(await project("query"), T, A, d); // (A, T, d)
  let k = splitHeads(await project("key"), T, A, d);
  const v = splitHeads(await project("value"), T, A, d);
  if (at.rope) {
    const kind = at.window ? "rotary_local" : "rotary"; // local layers have their own base
    q = step(`${p}.rotary_query`, kind, rotate(q, A, T, at.rope), [A, T, d], HEAD_TOKEN_DIM);
    k = step(`${p}.rotary_key`, kind, rotate(k, A, T, at.rope), [A, T, d], HEAD_TOKEN_DIM);
  }
  const s = step(`${p}.scores`, "scores", scores(q, k, A, T, d), [A, T, T], HEAD_TOKEN_TOKEN);
  const masked = at.window ? maskWindow(s, A, T, at.window) : s.slice(); // one text: every key is seen
  step(`${p}.masked_scores`, at.window ? "mask_local" : "mask", masked, [A, T, T], HEAD_TOKEN_TOKEN);
  const probs = step(`${p}.probs`, "softmax", softmaxRows(masked, A * T, T), [A, T, T], HEAD_TOKEN_TOKEN);
  const ctx = step(`${p}.context`, "context", context(probs, v, A, T, d), [A, T, d], HEAD_TOKEN_DIM);
  return step(p, "concat", mergeHeads(ctx, T, A, d), [T, H], ["token", "hidden"], p); // (A, T, d) -> (T, A·d)
}
