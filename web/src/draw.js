// What each view draws from its result, and the sentence its live region says of it. Every figure
// is named by a sentence computed from its numbers (summaries.js) and has its numbers as a table.
// ctx: {id (the view's), s (its state: fields, selected), redraw(), compute(), say(text)}.
import { numbersTable, redrawKeeping, tokenPicker, withTable } from "./figure.js";
import { bars, el, headGrid, heatmap, percent } from "./plots.js";
import * as words from "./summaries.js";

const ranked = (pairs) => pairs.map(([label, p], i) => [i + 1, label, percent(p)]);

/** A figure and its numbers as a table (caption: the figure's title; key: the view's id and a suffix). */
function chart(ctx, suffix, figure, caption, columns, rows) {
  return withTable(figure, numbersTable({ key: `${ctx.id}-${suffix}`, caption, columns, rows }));
}

export function drawFillMask(ctx, r, out) {
  const sentence = el("p", { class: "words" });
  r.tokens.forEach((tok, i) => {
    if (tok === "[CLS]" || tok === "[SEP]") return;
    const at = r.mask_positions.indexOf(i);
    const word = el("button", {
      type: "button",
      class: at >= 0 ? "word filled" : "word",
      title: at >= 0 ? "the best guess" : "click to hide this word",
      "data-focus": `word-${i}`,
    });
    word.textContent = at >= 0 ? r.predictions[at][0][0] : tok;
    if (at < 0) word.addEventListener("click", () => maskWord(ctx, r, i));
    sentence.append(word, " ");
  });
  out.append(sentence);
  r.predictions.forEach((guesses, m) => {
    const title = `[MASK] ${m + 1}: top ${guesses.length}`;
    const figure = bars(
      guesses.map(([label, value]) => ({ label, value })),
      { title, highlight: 0, name: words.fillMaskFigure(r, m) },
    );
    out.append(chart(ctx, m, figure, title, ["rank", "guess", "probability"], ranked(guesses)));
  });
  return words.fillMaskSummary(r);
}

function maskWord(ctx, r, i) {
  const tokens = r.tokens.slice(1, -1).map((t, j) => (j + 1 === i ? "[MASK]" : t));
  ctx.s.fields.text.value = tokens.join(" ").replace(/ ##/g, "");
  ctx.compute();
}

export function drawNextSentence(ctx, r, out) {
  const pairs = [
    ["IsNext", r.is_next],
    ["NotNext", 1 - r.is_next],
  ];
  const title = "Does B follow A?";
  const figure = bars(
    pairs.map(([label, value]) => ({ label, value })),
    { title, highlight: r.is_next >= 0.5 ? 0 : 1, name: words.nextSentenceSummary(r) },
  );
  const rows = pairs.map(([label, p]) => [label, percent(p)]);
  out.append(chart(ctx, 0, figure, title, ["label", "probability"], rows));
  const follows = r.is_next >= 0.5 ? "follows" : "does not follow";
  out.append(el("p", { class: "verdict" }, `P(IsNext) = ${percent(r.is_next)}: the model thinks B ${follows} A.`));
  return words.nextSentenceSummary(r);
}

// The layer and head fields, kept within the model's sizes: [layer, head].
function layerAndHead(ctx, r) {
  const { layer: lf, head: hf } = ctx.s.fields;
  const [layers, heads] = [r.attentions.length, r.attentions[0].length];
  lf.max = layers - 1;
  hf.max = heads - 1;
  lf.value = Math.min(layers - 1, Math.max(0, Number(lf.value) || 0));
  hf.value = Math.min(heads - 1, Math.max(0, Number(hf.value) || 0));
  return [Number(lf.value), Number(hf.value)];
}

function mapTable(ctx, tokens, map, caption) {
  const columns = ["from \\ to", ...tokens.map((t, j) => `${t} (${j})`)];
  const rows = map.map((row, i) => [`${tokens[i]} (${i})`, ...row.map((v) => v.toFixed(3))]);
  return numbersTable({ key: `${ctx.id}-map`, caption, columns, rows });
}

export function drawAttention(ctx, r, out) {
  const s = ctx.s;
  const [layer, head] = layerAndHead(ctx, r);
  const map = r.attentions[layer][head];
  const selected = s.selected ?? -1;
  const again = () => redrawKeeping(out, () => drawAttention(ctx, r, out));
  const pickHead = (h) => {
    s.fields.head.value = h;
    ctx.redraw();
  };
  const pickToken = (i) => {
    s.selected = s.selected === i ? -1 : i;
    again();
    ctx.say(s.selected < 0 ? "No token outlined." : words.pickedSummary(r.tokens, map, i));
  };
  const title = `layer ${layer}, head ${head}: rows attend to columns`;
  const name = words.attentionSummary(r.tokens, map, layer, head);
  const one = el("div", { class: "one" });
  const scroll = el("div", {
    class: "scroll",
    tabindex: "0",
    role: "region",
    "aria-label": `the map of layer ${layer}, head ${head}`,
    "data-focus": "map",
  }); // a phone scrolls the map sideways: its tokens stay readable
  scroll.append(heatmap(r.tokens, map, { title, selected, onPick: pickToken, name }));
  one.append(
    scroll,
    tokenPicker(r.tokens, { selected, onPick: pickToken, label: "Outline a token" }),
    mapTable(ctx, r.tokens, map, `Attention weights, layer ${layer}, head ${head}: rows attend to columns`),
  );
  const heads = r.attentions[layer].length;
  const all = el("div", { class: "all" });
  all.append(
    el("p", { class: "figtitle" }, `all ${heads} heads of layer ${layer} (pick one)`),
    headGrid(r.attentions[layer], { current: head, onPick: pickHead }),
  );
  const row = el("div", { class: "maps" });
  row.append(one, all);
  const note =
    `${r.attentions.length} layers x ${heads} heads; pick a token (in the map or below it) ` +
    "to outline its row and column.";
  out.append(el("p", { class: "note" }, note), row);
  return selected < 0 ? name : `${name} ${words.pickedSummary(r.tokens, map, selected)}`;
}

function spansTable(r) {
  const table = el("table", { class: "nbest" });
  table.append(el("caption", {}, "the best spans (n-best)"), el("thead"), el("tbody"));
  const head = el("tr");
  for (const c of ["#", "span", "score"]) head.append(el("th", { scope: "col" }, c));
  table.tHead.append(head);
  r.spans.forEach((span, i) => {
    const tr = el("tr");
    tr.append(el("th", { scope: "row" }, String(i + 1)), el("td", {}, span.text), el("td", {}, span.score.toFixed(2)));
    table.tBodies[0].append(tr);
  });
  return table;
}

// The most probable start (or end) tokens as a chart named by its sentence, with its table.
function spanEnds(ctx, r, which, probs) {
  const order = Array.from(probs.keys())
    .sort((a, b) => probs[b] - probs[a])
    .slice(0, 6);
  const title = `P(${which}) at its best tokens`;
  const name = words.spanEndsFigure(which, r.tokens, order, probs);
  const figure = bars(
    order.map((i) => ({ label: `${r.tokens[i]} (${i})`, value: probs[i] })),
    { title, name },
  );
  const rows = order.map((i, k) => [k + 1, `${r.tokens[i]} (token ${i})`, percent(probs[i])]);
  return chart(ctx, which, figure, title, ["rank", "token", "probability"], rows);
}

export function drawAnswer(ctx, r, out) {
  const context = ctx.s.fields.context.value;
  const best = r.spans[0];
  const label = "the paragraph, the answer marked";
  const para = el("p", { class: "context", tabindex: "0", role: "region", "aria-label": label }); // it scrolls
  if (best?.text) {
    const answer = el("mark", {}, context.slice(best.start, best.end));
    para.append(context.slice(0, best.start), answer, context.slice(best.end));
  } else para.textContent = context;
  const verdict = el("p", { class: "verdict" }, best ? `answer: “${best.text}”` : "no answer found");
  out.append(verdict, para, spansTable(r));
  const row = el("div", { class: "maps" });
  row.append(spanEnds(ctx, r, "start", r.start_probs), spanEnds(ctx, r, "end", r.end_probs));
  out.append(row);
  if (r.tokens?.[0] === "[CLS]" && r.start_probs?.length)
    out.append(el("p", { class: "note cls-note" }, words.clsNote(r.start_probs[0])));
  if (r.num_windows > 1) {
    const note = `read in ${r.num_windows} windows; the best span is in window ${r.window_index + 1}.`;
    out.append(el("p", { class: "note" }, note));
  }
  return words.answerSummary(r);
}

export function drawClassify(ctx, r, out) {
  const title = "probability of each label";
  const pairs = r.labels.map((label) => [label, r.probabilities[label]]);
  const figure = bars(
    pairs.map(([label, value]) => ({ label, value })),
    { title, highlight: 0, name: words.classifySummary(r) },
  );
  out.append(chart(ctx, 0, figure, title, ["rank", "label", "probability"], ranked(pairs)));
  return words.classifySummary(r);
}

export function drawTag(ctx, r, out) {
  const summary = words.tagSummary(r);
  const figure = el("figure", { class: "tagged" });
  const line = el("p", { class: "tags" });
  for (const w of r.words) {
    const chip = el("span", {
      class: w.tag === "O" ? "chip o" : "chip",
      title: `${w.tag} ${percent(w.probability)}; runner-up ${w.runner_up} ${percent(w.runner_up_probability)}`,
    });
    chip.append(el("span", { class: "w" }, w.word), el("span", { class: "t" }, w.tag));
    line.append(chip, " ");
  }
  figure.append(el("figcaption", { class: "sr-only" }, summary), line); // the status shows it to the eye
  const rows = r.words.map((w, i) => [
    i + 1,
    w.word,
    w.tag,
    percent(w.probability),
    w.runner_up,
    percent(w.runner_up_probability),
  ]);
  const columns = ["#", "word", "tag", "probability", "runner-up", "its probability"];
  out.append(chart(ctx, 0, figure, "each word's tag", columns, rows));
  if (r.num_windows > 1) {
    out.append(el("p", { class: "note" }, `read in ${r.num_windows} windows of ${r.max_seq_length} tokens.`));
  }
  return summary;
}
