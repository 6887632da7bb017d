// What the page calls a row or a column of a step's values, from the step's axes (lab.inspect.trace
// AXES): a token by its text and position, a word of the vocabulary, a label, a hidden unit by number.
const FIXED = { "start/end": ["start", "end"], "IsNext/NotNext": ["IsNext", "NotNext"] };
const TOKEN_AXES = new Set(["token", "query token", "key token", "predicted token"]);

/** “captain” (token 3) */
export function tokenLabel(trace, i) {
  return `“${trace.tokens[i]}” (token ${i})`;
}

/** Does this axis count tokens (so a row of it can be followed)? */
export function isTokenAxis(axis) {
  return TOKEN_AXES.has(axis);
}

/**
 * One axis's words: {name(i) for the read-out and the table, label(i) short for the canvas, token(i)
 * the input position it stands for (or -1)}. ctx: {vocab (id -> token string) or null, labels}.
 */
export function axisWords(trace, axis, ctx) {
  if (axis === "predicted token") {
    const at = (i) => trace.predicted_positions[i];
    return { name: (i) => tokenLabel(trace, at(i)), label: (i) => trace.tokens[at(i)], token: at };
  }
  if (isTokenAxis(axis)) return { name: (i) => tokenLabel(trace, i), label: (i) => trace.tokens[i], token: (i) => i };
  if (axis === "word") {
    const word = (i) => ctx.vocab?.[i] ?? `#${i}`;
    return { name: (i) => `${i} “${word(i)}”`, label: word, token: () => -1 };
  }
  if (axis === "label") {
    const label = (i) => ctx.labels?.[i] ?? `label ${i}`;
    return { name: label, label, token: () => -1 };
  }
  if (FIXED[axis]) return { name: (i) => FIXED[axis][i], label: (i) => FIXED[axis][i], token: () => -1 };
  return { name: (i) => String(i), label: (i) => String(i), token: () => -1 };
}
