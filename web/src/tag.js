// Tagging in the browser (NER, POS), exactly as the lab's Python does it
// (lab.inspect.explore: split_words, tag; lab.data.tagging: word_pieces, make_tag_features;
// lab.data.tag_decoding: decode_tags, iob2_viterbi).
//
// Each word is cut into WordPiece pieces and read from its FIRST piece, in the window where that
// piece has the most context. Offsets are JavaScript string indices into the cleaned text.

import { cleanText, PY_SPACE, pyStrip } from "./text.js";
import { bestWindow, docWindows, softmax } from "./qa.js";
import { taskSettings } from "./task.js";

// Python's \w on text: letters, digits and other numbers, and "_" (combining marks are not in it).
const W = "\\p{L}\\p{N}_";
const TITLES = "Mr|Mrs|Ms|Dr|Prof|Rev|St|Mt|Jr|Sr|Capt|Col|Gen|Lt|Sgt|Gov|Sen|Rep|Inc|Ltd|Co|Corp|vs";
// A title or initialism with its period, a clitic, a run of letters/digits (with combining
// accents), or any other non-space character alone: explore._WORD.
const WORD = new RegExp(
  `(?:${TITLES})\\.(?![${W}])|(?:[A-Z]\\.){2,}|'(?:s|S|re|ve|ll|d|m)(?![${W}])` +
    `|[${W}][${W}\\u0300-\\u036f]*|[^${W}${PY_SPACE}]`,
  "gu",
);

/** Text -> [[word, start, end], ...] as the tagging data splits it ("Mr. Darcy's" -> Mr. | Darcy | 's). */
export function splitWords(text) {
  return Array.from(text.matchAll(WORD), (m) => [m[0], m.index, m.index + m[0].length]);
}

/**
 * The windows a tagger reads, with explore.tag's checks: {words, spans ([start, end] per word, or
 * null when words were given), pieces (each word's tokens), features, numPieces, maxSeqLength,
 * docStride, decoding}. wordsOrText: a text (split by splitWords) or a list of words.
 * Each feature: {windowIndex, windowStart, ids, typeIds, wordIndex, tokenIsMaxContext}.
 * task: the manifest entry's task (max_seq_length, doc_stride, decoding: explore.tag_window_settings
 * for the model), each required: the page has no defaults.
 */
export function tagFeatures(encoder, wordsOrText, task) {
  const settings = taskSettings(task, ["max_seq_length", "doc_stride", "decoding"], encoder.model);
  let words;
  let spans;
  if (typeof wordsOrText === "string" || wordsOrText === null || wordsOrText === undefined) {
    const found = splitWords(cleanText(wordsOrText));
    if (!found.length) throw new Error("text has no words: type a sentence");
    words = found.map((f) => f[0]);
    spans = found.map((f) => [f[1], f[2]]);
  } else {
    if (!Array.isArray(wordsOrText)) throw new Error(`give a text or a list of words, not ${typeof wordsOrText}`);
    if (!wordsOrText.length) throw new Error("the list of words is empty: give at least one word");
    words = wordsOrText.map((w, i) => pyStrip(cleanText(w, `word ${i}`)));
    spans = words.map(() => null);
  }
  const maxSeqLength = Math.min(settings.max_seq_length, encoder.maxLength);
  if (maxSeqLength < 3) {
    throw new Error(`max_seq_length must be at least 3 ([CLS], one piece, [SEP]), got ${maxSeqLength}`);
  }
  const { doc_stride: docStride, decoding } = settings;
  if (docStride < 1) throw new Error(`doc_stride must be positive, got ${docStride}`);
  // Each word's pieces (a word with none, only characters the normalizer drops, is one [UNK]).
  const ids = [];
  const wordIds = [];
  const pieces = words.map((word, w) => {
    let found = encoder.pieces(word);
    if (!found.length) found = [{ token: "[UNK]", id: encoder.special.unk }];
    for (const p of found) {
      ids.push(p.id);
      wordIds.push(w);
    }
    return found.map((p) => p.token);
  });
  // first[t]: the word whose first piece is piece t, or -1
  const first = wordIds.map((w, t) => (t === 0 || wordIds[t - 1] !== w ? w : -1));
  const windows = docWindows(ids.length, maxSeqLength - 2, docStride);
  const { cls, sep } = encoder.special;
  const features = windows.map(([start, length], k) => {
    const span = Array.from({ length }, (_, i) => start + i); // this window's pieces
    return {
      windowIndex: k,
      windowStart: start,
      ids: [cls, ...span.map((t) => ids[t]), sep],
      typeIds: new Array(length + 2).fill(0),
      wordIndex: [-1, ...span.map((t) => first[t]), -1],
      tokenIsMaxContext: [false, ...span.map((t) => bestWindow(windows, t) === k), false],
    };
  });
  return { words, spans, pieces, features, numPieces: ids.length, maxSeqLength, docStride, decoding };
}

/** Row p of one window's logits: from an array of rows, or a flat row-major array of K per position. */
function rowAt(logits, p, k) {
  if (typeof logits[0] === "number") return Array.from(logits.slice(p * k, (p + 1) * k));
  return Array.from(logits[p]);
}

/** IOB2's rule as additive scores: [start [K], move [K][K] from row to column], 0 allowed, -Infinity not. */
function iob2Constraints(labels) {
  const start = labels.map((l) => (l.startsWith("I-") ? -Infinity : 0));
  const move = labels.map((before) =>
    labels.map((l) => {
      if (!l.startsWith("I-")) return 0;
      const sameType = before.slice(2) === l.slice(2);
      return sameType && (before.startsWith("B-") || before.startsWith("I-")) ? 0 : -Infinity;
    }),
  );
  return [start, move];
}

/** The most probable label sequence IOB2 allows (no I-X after O or B-Y), from log-probabilities [N][K]. */
export function iob2Viterbi(logProbs, labels) {
  if (!logProbs.length) return [];
  const [start, move] = iob2Constraints(labels);
  const K = labels.length;
  const argmax = (xs) => xs.reduce((best, x, i) => (x > xs[best] ? i : best), 0); // the first on a tie
  let best = start.map((s, j) => s + logProbs[0][j]);
  const back = [];
  for (let t = 1; t < logProbs.length; t++) {
    const from = [];
    const next = [];
    for (let j = 0; j < K; j++) {
      const total = best.map((b, i) => b + move[i][j]);
      const i = argmax(total);
      from.push(i);
      next.push(total[i] + logProbs[t][j]);
    }
    back.push(from);
    best = next;
  }
  const path = [argmax(best)];
  for (let t = logProbs.length - 1; t > 0; t--) path.push(back[t - 1][path[path.length - 1]]);
  return path.reverse();
}

/**
 * One tag per word from every window's logits (decode_tags + explore.tag):
 * [{word, tag, probability, runner_up, runner_up_probability, pieces, start, end}], as TaggedWord.
 * tagged: what tagFeatures returned; logits[w]: window w's logits, rows of K (an array of rows, or
 * a flat row-major array of at least len(window) * K); labels: names in id order;
 * decoding: "argmax" or "viterbi" (default: tagged.decoding, the manifest's).
 */
export function decodeTags(tagged, logits, labels, decoding = tagged.decoding) {
  if (decoding !== "argmax" && decoding !== "viterbi") {
    throw new Error(`decoding must be one of argmax, viterbi, got '${decoding}'`);
  }
  const { features, words } = tagged;
  if (logits.length !== features.length) {
    throw new Error(`decode_tags: got logits for ${logits.length} windows but ${features.length} features`);
  }
  const K = labels.length;
  const probs = new Array(words.length).fill(null); // per word: softmax at its first piece
  features.forEach((f, k) => {
    f.wordIndex.forEach((w, p) => {
      if (w >= 0 && f.tokenIsMaxContext[p]) probs[w] = softmax(rowAt(logits[k], p, K));
    });
  });
  const missing = probs.flatMap((p, w) => (p === null ? [w] : []));
  if (missing.length) {
    const words = missing.slice(0, 5).join(", ");
    throw new Error(
      `decode_tags: sentence 0 has no prediction for words [${words}]; pass all the windows of sentences 0..N-1`,
    );
  }
  let chosen = probs.map((p) => p.reduce((best, x, i) => (x > p[best] ? i : best), 0));
  if (decoding === "viterbi" && labels.some((l) => l.startsWith("I-"))) {
    chosen = iob2Viterbi(
      probs.map((p) => p.map((x) => Math.log(Math.max(x, 1e-12)))),
      labels,
    );
  }
  return words.map((word, w) => {
    const p = probs[w];
    const k = chosen[w];
    let other = -1; // the most probable other tag (the first on a tie)
    p.forEach((x, j) => {
      if (j !== k && (other < 0 || x > p[other])) other = j;
    });
    const span = tagged.spans[w];
    return {
      word,
      tag: labels[k],
      probability: p[k],
      runner_up: other >= 0 ? labels[other] : "",
      runner_up_probability: other >= 0 ? p[other] : 0,
      pieces: tagged.pieces[w],
      start: span ? span[0] : null,
      end: span ? span[1] : null,
    };
  });
}
