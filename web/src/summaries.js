// Each view's result in words, computed from its numbers: the one-sentence name of each figure (its
// text alternative) and what the view's live region says after a computation ("[MASK] 1: top guess
// “door”, 52.6%", not only "done"). Tokens are quoted (“.” is a token too); percentages as the page
// writes them (plots.percent). tests/test_web_a11y.py writes the same sentences from bertLab's results.
import { percent } from "./plots.js";

const q = (text) => `“${text}”`;
const SHOWN = 5; // a sentence names this many guesses at most; the table holds every one

/** “door” 52.6%, “window” 12.1%: ranked [label, p] pairs in words (name: how a label is written). */
function ranked(pairs, name) {
  return pairs.map(([label, p]) => `${name(label)} ${percent(p)}`).join(", ");
}

/** A ranked list's sentence: `${head} “best”, 52.6%; then “next” 12.1%, ...` (best first). */
function bestThen(head, pairs, name = q) {
  const [[label, p], ...rest] = pairs;
  const then = rest.length ? `; then ${ranked(rest.slice(0, SHOWN - 1), name)}` : "";
  return `${head} ${name(label)}, ${percent(p)}${then}.`;
}

/** Masked LM: one sentence per [MASK], its guesses best first. */
export function fillMaskFigure(r, m) {
  return bestThen(`[MASK] ${m + 1}: top guess`, r.predictions[m]);
}

export function fillMaskSummary(r) {
  if (!r.predictions.length) return "No [MASK] to guess.";
  return r.predictions.map((_, m) => fillMaskFigure(r, m)).join(" ");
}

/** Next Sentence: P(IsNext) and what the model makes of it. */
export function nextSentenceSummary(r) {
  const verdict = r.is_next >= 0.5 ? "follows" : "does not follow";
  return `P(IsNext) = ${percent(r.is_next)}, P(NotNext) = ${percent(1 - r.is_next)}: the model thinks B ${verdict} A.`;
}

function argmax(values) {
  let best = 0;
  values.forEach((v, i) => {
    if (v > values[best]) best = i;
  });
  return best;
}

/** One head's map: its strongest weight, and the token the others look at most on average. */
export function attentionSummary(tokens, map, layer, head) {
  const rowBest = map.map(argmax);
  const from = argmax(map.map((row, i) => row[rowBest[i]]));
  const to = rowBest[from];
  const means = tokens.map((_, j) => map.reduce((sum, row) => sum + row[j], 0) / tokens.length);
  const most = argmax(means);
  return (
    `Layer ${layer}, head ${head}, ${tokens.length} tokens: the strongest weight is from ${q(tokens[from])} ` +
    `(token ${from}) to ${q(tokens[to])} (token ${to}), ${map[from][to].toFixed(2)}; on average the tokens ` +
    `look most at ${q(tokens[most])} (token ${most}), ${means[most].toFixed(2)}.`
  );
}

/** A token picked in the map: where it looks most, and which token looks most at it. */
export function pickedSummary(tokens, map, i) {
  const to = argmax(map[i]);
  const column = map.map((row) => row[i]);
  const by = argmax(column);
  return (
    `${q(tokens[i])} (token ${i}) outlined: it looks most at ${q(tokens[to])} (token ${to}), ` +
    `${map[i][to].toFixed(2)}; ${q(tokens[by])} (token ${by}) looks most at it, ${column[by].toFixed(2)}.`
  );
}

/** Question answering: the answer and its score. */
export function answerSummary(r) {
  const best = r.spans[0];
  if (!best?.text) return "No answer found in the paragraph.";
  return `Answer: ${q(best.text)}, score ${best.score.toFixed(2)}.`;
}

/** P(start at [CLS]) in a line: what the "no answer" position means for a SQuAD v1.1 model. */
export function clsNote(p) {
  return (
    `P(start at [CLS]) = ${percent(p)}: [CLS] (token 0) is where a SQuAD 2.0 model points to say ` +
    "“no answer”; this model learned SQuAD v1.1, where every question has an answer, so the probability " +
    "left on [CLS] is leftover, not a verdict: the answer is the best span in the paragraph."
  );
}

/** The most probable start (or end) tokens: `order` their positions best first, `probs` every token's. */
export function spanEndsFigure(which, tokens, order, probs) {
  const name = (i) => `${q(tokens[i])} (token ${i})`;
  return bestThen(
    `P(${which}): highest at`,
    order.map((i) => [i, probs[i]]),
    name,
  );
}

/** Classify: each label's probability, best first. */
export function classifySummary(r) {
  return bestThen(
    "Label:",
    r.labels.map((label) => [label, r.probabilities[label]]),
  );
}

/** Tag words: how many words carry an entity's tag, and which. */
export function tagSummary(r) {
  const tagged = r.words.filter((w) => w.tag !== "O");
  const n = `${r.words.length} word${r.words.length === 1 ? "" : "s"}`;
  if (!tagged.length) return `${n}, none tagged (every word is O).`;
  const shown = tagged.slice(0, SHOWN).map((w) => `${q(w.word)} ${w.tag} ${percent(w.probability)}`);
  const more = tagged.length > SHOWN ? `, and ${tagged.length - SHOWN} more` : "";
  return `${n}, ${tagged.length} tagged: ${shown.join(", ")}${more}.`;
}
