// A command-line harness for tests/test_web_logic.py: runs web/src's text logic on a batch of inputs.
//
//     node web/test/logic.mjs < request.json > answer.json
//
// request: {"op": ..., "tokenizer": path to tokenizer.json, "entry": manifest entry, "cases": [...]}
// Every offset in the answer is in code points (Python's string indices), converted from the
// JavaScript string indices the functions return; a case that throws answers {"error": message}.

import fs from "node:fs";
import { cleanText, maskPositions, TextEncoder } from "../src/text.js";
import { answerSpans, decodeSpans, qaFeatures } from "../src/qa.js";
import { decodeTags, splitWords, tagFeatures } from "../src/tag.js";

/** A function turning UTF-16 indices of `text` into code point indices. */
function codePoints(text) {
  const at = new Int32Array(text.length + 1);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    at[i] = n;
    const c = text.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    if (pair) at[++i] = n; // the second half of a pair sits inside the same code point
    n += 1;
  }
  at[text.length] = n;
  return (i) => at[i];
}

function attempt(run) {
  try {
    return run();
  } catch (e) {
    return { error: e.message };
  }
}

function encoderOf(request) {
  return new TextEncoder(JSON.parse(fs.readFileSync(request.tokenizer, "utf8")), request.entry);
}

const ops = {
  clean: (r) =>
    r.cases.map((c) =>
      attempt(() => ({
        value: cleanText(c.value, c.name, { required: c.required ?? true, maxChars: c.max_chars ?? null }),
      })),
    ),

  pieces: (r) => {
    const enc = encoderOf(r);
    return r.cases.map((text) => {
      const cp = codePoints(text);
      const found = enc.pieces(text);
      return {
        tokens: found.map((p) => p.token),
        ids: found.map((p) => p.id),
        offsets: found.map((p) => [cp(p.start), cp(p.end)]),
      };
    });
  },

  encode: (r) => {
    const enc = encoderOf(r);
    return r.cases.map(([a, b, maxLength]) =>
      attempt(() => {
        const e = enc.encode(a, b, maxLength);
        const cpa = codePoints(a);
        const cpb = b === null ? null : codePoints(b);
        const offsets = e.offsets.map(([s, t], i) => (e.sequenceIds[i] === 1 ? [cpb(s), cpb(t)] : [cpa(s), cpa(t)]));
        return { ...e, offsets };
      }),
    );
  },

  masks: (r) => {
    const enc = encoderOf(r);
    return r.cases.map(([text, pair, maxLength]) =>
      attempt(() => ({
        positions: maskPositions(enc, enc.encode(text, pair, maxLength ?? enc.maxLength), r.entry.task, text, pair),
      })),
    );
  },

  qa: (r) => {
    const enc = encoderOf(r);
    return r.cases.map((c) =>
      attempt(() => {
        const qa = qaFeatures(enc, c.question, c.context, c.task);
        const cp = codePoints(qa.context);
        const features = qa.features.map((f) => ({
          ...f,
          offsets: f.offsets.map((o) => (o ? [cp(o[0]), cp(o[1])] : null)),
        }));
        if (!c.start_logits) return { features, questionTruncated: qa.questionTruncated };
        const spanOf = (s) => ({ ...s, start: cp(s.start), end: cp(s.end) });
        const spans = decodeSpans(
          qa.features,
          c.start_logits,
          c.end_logits,
          qa.context,
          c.n_best,
          c.max_answer_length,
          c.null_threshold ?? null,
        );
        const answer = answerSpans(qa, c.start_logits, c.end_logits, c.task, c.top_k ?? 3);
        return {
          features,
          spans: spans.map(spanOf),
          answer: { ...answer, spans: answer.spans.map(spanOf), offsets: undefined },
        };
      }),
    );
  },

  normalize: (r) => {
    const enc = encoderOf(r);
    return r.cases.map((text) => enc.normalize(text));
  },

  split: (r) =>
    r.cases.map((text) => {
      const cp = codePoints(text);
      return splitWords(text).map(([w, s, e]) => [w, cp(s), cp(e)]);
    }),

  tag: (r) => {
    const enc = encoderOf(r);
    return r.cases.map((c) =>
      attempt(() => {
        const tagged = tagFeatures(enc, c.input, c.task);
        if (!c.logits) return tagged;
        const text = typeof c.input === "string" ? cleanText(c.input) : "";
        const cp = codePoints(text);
        const words = decodeTags(tagged, c.logits, c.labels, c.decoding).map((w) =>
          w.start === null ? w : { ...w, start: cp(w.start), end: cp(w.end) },
        );
        return { ...tagged, words };
      }),
    );
  },

  // Which code points the \w of splitWords matches, as [first, last] ranges (for a sweep against Python's re).
  word_chars: () => {
    const ranges = [];
    for (let c = 0; c <= 0x10ffff; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      const ch = String.fromCodePoint(c);
      const words = splitWords(`${ch}_`); // one word "c_" exactly when c is a word character
      if (words.length !== 1 || words[0][0] !== `${ch}_`) continue;
      const last = ranges[ranges.length - 1];
      if (last && last[1] === c - 1) last[1] = c;
      else ranges.push([c, c]);
    }
    return ranges;
  },
};

const request = JSON.parse(fs.readFileSync(0, "utf8"));
if (!ops[request.op]) {
  console.error(`unknown op ${request.op}; choose one of ${Object.keys(ops).join(", ")}`);
  process.exit(2);
}
process.stdout.write(JSON.stringify(ops[request.op](request)));
