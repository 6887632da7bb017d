// The arithmetic of one BERT forward pass on Float32Arrays, for the step-by-step trace (trace.js).
//
// Every array is row-major, as torch stores it: a (T, H) matrix is T rows of H numbers, and a
// weight of torch's nn.Linear is (out, in), so a linear layer takes the dot product of an input
// row with a weight row. Sums are kept in JavaScript numbers (float64) and each result is stored
// as float32: within a few float32 roundings of torch's fp32 kernels. JavaScript has no Math.erf:
// erf below is written out (a series near 0, a continued fraction further out), good to ~1e-15.

const TWO_OVER_SQRT_PI = 1.1283791670955126; // 2 / √π
const SQRT_PI = 1.7724538509055159;
const ERF_SERIES_BELOW = 2; // |x| < 2: the Maclaurin series; beyond: erfc's continued fraction
const FRACTION_TERMS = 60; // enough for erfc(x) to ~2e-16 relative at x = 2, the worst case

/** erfc(x) for x >= 2 by Laplace's continued fraction, evaluated from its 60th term back:
 *  erfc(x) = e^(-x²) / √π · 1 / (x + (1/2) / (x + (2/2) / (x + (3/2) / (x + …)))). */
function erfcFraction(x) {
  let f = x;
  for (let k = FRACTION_TERMS; k >= 1; k--) f = x + k / 2 / f;
  return Math.exp(-x * x) / (SQRT_PI * f);
}

/** The error function, erf(x) = 2/√π ∫₀ˣ e^(-t²) dt, to about 1e-15 (absolute) for every x. */
export function erf(x) {
  if (Number.isNaN(x)) return NaN;
  const a = Math.abs(x);
  let r;
  if (a < ERF_SERIES_BELOW) {
    // erf(a) = 2/√π Σₙ (-1)ⁿ a^(2n+1) / (n! (2n+1)); a = 1: (1 - 1/3 + 1/10 - 1/42 + …) · 2/√π
    const a2 = a * a;
    let term = a; // (-1)ⁿ a^(2n+1) / n!
    let sum = a;
    for (let n = 1; n < 100; n++) {
      term *= -a2 / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * sum) break;
    }
    r = TWO_OVER_SQRT_PI * sum;
  } else {
    r = a > 6 ? 1 : 1 - erfcFraction(a); // erfc(6) = 2e-17: 1 in float64
  }
  return x < 0 ? -r : r;
}

/** GELU, erf form (BERT's): x Φ(x) = x · ½ (1 + erf(x / √2)). */
export function gelu(x) {
  return 0.5 * x * (1 + erf(x * Math.SQRT1_2));
}

/** GELU, tanh approximation (gelu_new): ½ x (1 + tanh(√(2/π) (x + 0.044715 x³))). */
export function geluTanh(x) {
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
}

export function relu(x) {
  // biome-ignore lint/complexity/useMathMinMax: Math.max(x, 0) gives NaN for a NaN, where this gives 0 as it always has
  return x > 0 ? x : 0;
}

export const ACTIVATIONS = { gelu, gelu_new: geluTanh, relu }; // lab.model.ACT by config name

/** f applied to every number of x: a new Float32Array. */
export function map(x, f) {
  const out = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = f(x[i]);
  return out;
}

/** a + b element-wise (same lengths), each sum rounded to float32 as torch's fp32 add. */
export function add(a, b) {
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] + b[i];
  return out;
}

/**
 * A linear layer: x (rows, K) · Wᵀ + b with W (N, K) as nn.Linear stores it -> (rows, N).
 * bias may be undefined (a model without biases). Four input rows share each pass over a weight
 * row, so a large weight matrix is read from memory a quarter as often.
 */
export function linear(x, rows, weight, bias) {
  const [N, K] = weight.shape;
  const W = weight.values;
  const b = bias?.values;
  const out = new Float32Array(rows * N);
  for (let t = 0; t < rows; t += 4) {
    const n4 = Math.min(4, rows - t); // rows t … t + n4 - 1
    // the rows' offsets in x; a block shorter than 4 reads its last row again (and stores it once)
    const [x0, x1, x2, x3] = [0, 1, 2, 3].map((r) => (t + Math.min(r, n4 - 1)) * K);
    for (let n = 0; n < N; n++) {
      const wo = n * K;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let k = 0; k < K; k++) {
        const wk = W[wo + k];
        s0 += x[x0 + k] * wk;
        s1 += x[x1 + k] * wk;
        s2 += x[x2 + k] * wk;
        s3 += x[x3 + k] * wk;
      }
      const add = b ? b[n] : 0;
      const o = t * N + n;
      out[o] = s0 + add;
      if (n4 > 1) out[o + N] = s1 + add;
      if (n4 > 2) out[o + 2 * N] = s2 + add;
      if (n4 > 3) out[o + 3 * N] = s3 + add;
    }
  }
  return out;
}

/** LayerNorm over each row of H numbers: γ ⊙ (x − μ) / √(σ² + eps) + β (β undefined: none). */
export function layerNorm(x, rows, H, gamma, beta, eps) {
  const g = gamma.values;
  const b = beta?.values;
  const out = new Float32Array(rows * H);
  for (let t = 0; t < rows; t++) {
    const o = t * H;
    let mean = 0;
    for (let h = 0; h < H; h++) mean += x[o + h];
    mean /= H;
    let variance = 0; // biased, as torch's LayerNorm
    for (let h = 0; h < H; h++) variance += (x[o + h] - mean) ** 2;
    const scale = 1 / Math.sqrt(variance / H + eps);
    for (let h = 0; h < H; h++) out[o + h] = (x[o + h] - mean) * scale * g[h] + (b ? b[h] : 0);
  }
  return out;
}

/** Softmax of each row of n numbers: exp(x − max) / Σ exp(x − max); a new Float32Array. */
export function softmaxRows(x, rows, n) {
  const out = new Float32Array(rows * n);
  const e = new Float64Array(n);
  for (let r = 0; r < rows; r++) {
    const o = r * n;
    let max = -Infinity;
    for (let j = 0; j < n; j++) max = Math.max(max, x[o + j]);
    let sum = 0;
    for (let j = 0; j < n; j++) sum += e[j] = Math.exp(x[o + j] - max);
    for (let j = 0; j < n; j++) out[o + j] = e[j] / sum;
  }
  return out;
}

/** Rows `picked` of a (rows, n) matrix -> (picked.length, n). */
export function gatherRows(x, n, picked) {
  const out = new Float32Array(picked.length * n);
  picked.forEach((r, i) => out.set(x.subarray(r * n, (r + 1) * n), i * n));
  return out;
}

/** Column c of a (rows, n) matrix -> (rows,). */
export function column(x, rows, n, c) {
  const out = new Float32Array(rows);
  for (let r = 0; r < rows; r++) out[r] = x[r * n + c];
  return out;
}
