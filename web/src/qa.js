// Question answering in the browser, exactly as the lab's Python reads a paragraph
// (lab.data.squad: make_features, doc_windows, best_window, decode_spans; lab.inspect.explore: answer).
//
// A context longer than one window is read through overlapping doc-stride windows,
//     [CLS] question [SEP] context tokens w_start .. w_start + room - 1 [SEP]
// and a candidate answer is only taken from the window where its first token has the most
// context on both sides. Offsets are JavaScript string indices into the cleaned context.

import { cleanText } from "./text.js";
import { taskSettings } from "./task.js";

/** (start, length) of each window over nTokens tokens: doc_windows(10, 6, 3) -> [[0,6],[3,6],[6,4]]. */
export function docWindows(nTokens, window, stride) {
  if (window <= 0 || stride <= 0) {
    throw new Error(`doc_windows: window (${window}) and stride (${stride}) must be positive`);
  }
  const spans = [];
  let start = 0;
  while (start < nTokens) {
    const length = Math.min(nTokens - start, window); // a full window, or what is left
    spans.push([start, length]);
    if (start + length === nTokens) break; // this window reaches the end
    start += Math.min(length, stride);
  }
  return spans;
}

/** How much context token `token` has inside window w: min(left, right) + 0.01 * length. */
export function maxContextScore(windows, w, token) {
  const [start, length] = windows[w];
  return Math.min(token - start, start + length - 1 - token) + 0.01 * length;
}

/** The window where `token` has the most context (the first one on a tie); -1 if none holds it. */
export function bestWindow(windows, token) {
  let best = -1;
  let bestScore = -Infinity;
  windows.forEach(([start, length], w) => {
    if (start <= token && token < start + length) {
      const score = maxContextScore(windows, w, token);
      if (score > bestScore) [best, bestScore] = [w, score];
    }
  });
  return best;
}

/** Softmax of a list of numbers (computed in doubles), as a plain array. */
export function softmax(values) {
  const top = Math.max(...values);
  const weights = Array.from(values, (v) => Math.exp(v - top));
  const total = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => w / total);
}

/**
 * The model inputs for a question about a context, with explore.answer's checks:
 * {features, question, context (both cleaned), questionTruncated, maxSeqLength}. Each feature is
 * {windowIndex, windowStart, ids, typeIds, tokens, offsets ([start, end] in the context, null off it),
 * tokenIsMaxContext}. task: the manifest entry's task (max_seq_length, doc_stride, max_query_length,
 * max_answer_length: explore.answer_settings for the model), each required: the page has no defaults.
 */
export function qaFeatures(encoder, question, context, task) {
  const keys = ["max_seq_length", "doc_stride", "max_query_length", "max_answer_length"];
  const settings = taskSettings(task, keys, encoder.model);
  let maxSeqLength = settings.max_seq_length;
  const { doc_stride: docStride, max_query_length: maxQueryLength, max_answer_length: maxAnswerLength } = settings;
  question = cleanText(question, "question");
  context = cleanText(context, "context");
  if (maxQueryLength < 1 || docStride < 1 || maxAnswerLength < 1) {
    throw new Error("max_query_length, doc_stride and max_answer_length must be positive");
  }
  maxSeqLength = Math.min(maxSeqLength, encoder.maxLength);
  const questionPieces = encoder.pieces(question);
  if (!questionPieces.length) {
    throw new Error("question has no tokens the model knows: type a question in words");
  }
  if (maxSeqLength - Math.min(questionPieces.length, maxQueryLength) - 3 < 1) {
    throw new Error(
      `the question leaves no room for the context in ${maxSeqLength} tokens: ` +
        `shorten the question or lower max_query_length`,
    );
  }
  const q = questionPieces.slice(0, maxQueryLength); // long questions are cut
  const doc = encoder.pieces(context);
  const room = maxSeqLength - q.length - 3; // context tokens per window: minus [CLS] [SEP] [SEP]
  const windows = docWindows(doc.length, room, docStride);
  if (!windows.length) throw new Error("context has no tokens the model knows: type a paragraph in words");
  const { cls, sep } = encoder.special;
  const prefixIds = [cls, ...q.map((p) => p.id), sep]; // segment 0: [CLS] question [SEP]
  const prefixTokens = ["[CLS]", ...q.map((p) => p.token), "[SEP]"];
  const features = windows.map(([wStart, wLen], w) => {
    const inside = doc.slice(wStart, wStart + wLen); // this window's context tokens
    const off = new Array(prefixIds.length).fill(null);
    const notHere = new Array(prefixIds.length).fill(false);
    return {
      windowIndex: w,
      windowStart: wStart,
      ids: [...prefixIds, ...inside.map((p) => p.id), sep],
      typeIds: [...prefixIds.map(() => 0), ...inside.map(() => 1), 1],
      tokens: [...prefixTokens, ...inside.map((p) => p.token), "[SEP]"],
      offsets: [...off, ...inside.map((p) => [p.start, p.end]), null],
      tokenIsMaxContext: [...notHere, ...inside.map((_, k) => bestWindow(windows, wStart + k) === w), false],
    };
  });
  const questionTruncated = questionPieces.length > maxQueryLength;
  return { features, question, context, questionTruncated, maxSeqLength, model: encoder.model };
}

/** Indexes of the n largest values, largest first (ties: the lower index first). */
function topIndexes(values, n) {
  const order = Array.from(values, (_, i) => i);
  order.sort((i, j) => values[j] - values[i]); // stable, as Python's sorted(reverse=True)
  return order.slice(0, n);
}

/** One window's logits as plain numbers, cut to the window's length. */
function rowOf(logits, feature, what) {
  if (!logits || logits.length < feature.ids.length) {
    const n = logits ? logits.length : 0;
    throw new Error(`decode_spans: ${n} ${what} logits for a window of ${feature.ids.length} tokens`);
  }
  return Array.from(logits).slice(0, feature.ids.length); // padding positions are never candidates
}

/**
 * The best answer spans, best first, from every window's logits (lab.data.squad.decode_spans):
 * [{text, start, end, score, probability, window_index}], start/end string indices into context.
 * startLogits[w] / endLogits[w]: window w's logits (an array or Float32Array, at least its length).
 * nBest and maxAnswerLength: given by the caller (answerSpans: the manifest's n_best, max_answer_length).
 * nullThreshold (SQuAD v2.0): null = never answer "" (the lab's default for v1.1).
 */
export function decodeSpans(features, startLogits, endLogits, context, nBest, maxAnswerLength, nullThreshold = null) {
  if (!features.length) return [];
  if (startLogits.length !== features.length || endLogits.length !== features.length) {
    throw new Error(`decode_spans: got logits for ${startLogits.length} windows but ${features.length} features`);
  }
  const candidates = [];
  let nullScore = Infinity;
  features.forEach((f, w) => {
    const s = rowOf(startLogits[w], f, "start");
    const e = rowOf(endLogits[w], f, "end");
    nullScore = Math.min(nullScore, s[0] + e[0]); // [CLS] start and end: "the answer is not here"
    const ends = topIndexes(e, nBest);
    for (const i of topIndexes(s, nBest)) {
      if (f.offsets[i] === null || !f.tokenIsMaxContext[i]) continue; // a context token, seen best here
      for (const j of ends) {
        if (f.offsets[j] === null || j < i || j - i + 1 > maxAnswerLength) continue;
        const [a, b] = [f.offsets[i][0], f.offsets[j][1]];
        const score = s[i] + e[j];
        const text = context.slice(a, b);
        candidates.push({ text, start: a, end: b, score, probability: 0, window_index: f.windowIndex });
      }
    }
  });
  candidates.sort((x, y) => y.score - x.score); // stable: ties keep their order
  let spans = [];
  const seen = new Set();
  for (const c of candidates) {
    if (!seen.has(c.text) && spans.length < nBest) {
      seen.add(c.text);
      spans.push(c);
    }
  }
  if (nullThreshold !== null && nullThreshold !== undefined) {
    const none = { text: "", start: 0, end: 0, score: nullScore, probability: 0, window_index: -1 };
    const bestScore = spans.length ? spans[0].score : -Infinity;
    if (nullScore - bestScore > nullThreshold) spans.unshift(none);
    else spans = [...spans.slice(0, 1), ...[...spans.slice(1), none].sort((x, y) => y.score - x.score)];
  }
  if (spans.length) {
    const probs = softmax(spans.map((c) => c.score));
    spans.forEach((c, k) => (c.probability = probs[k]));
  }
  return spans;
}

/**
 * explore.answer after the model ran: the top_k spans (retrying over every token when the n_best
 * candidates hold no valid span) and the window of the best one:
 * {spans, windowIndex, numWindows, tokens, offsets, startProbs, endProbs, questionTruncated}.
 * qa: what qaFeatures returned; startLogits[w] / endLogits[w]: window w's logits; task: the manifest
 * entry's task (n_best, max_answer_length), each required.
 */
export function answerSpans(qa, startLogits, endLogits, task, topK = 3) {
  const settings = taskSettings(task, ["n_best", "max_answer_length"], qa.model);
  if (topK < 1) throw new Error(`top_k must be at least 1, got ${topK}`);
  const maxAnswerLength = settings.max_answer_length;
  const nBest = Math.max(settings.n_best, topK);
  const { features, context } = qa;
  let spans = decodeSpans(features, startLogits, endLogits, context, nBest, maxAnswerLength);
  if (!spans.length) {
    const longest = Math.max(...features.map((f) => f.ids.length));
    spans = decodeSpans(features, startLogits, endLogits, context, Math.max(longest, topK), maxAnswerLength);
  }
  const w = spans.length ? spans[0].window_index : 0;
  const f = features[w];
  const n = f.ids.length; // the window without padding
  return {
    spans: spans.slice(0, topK),
    windowIndex: w,
    numWindows: features.length,
    tokens: f.tokens,
    offsets: f.offsets,
    startProbs: softmax(Array.from(startLogits[w]).slice(0, n)),
    endProbs: softmax(Array.from(endLogits[w]).slice(0, n)),
    questionTruncated: qa.questionTruncated,
  };
}
