// The input's words as buttons: a click puts [MASK] in a word's place (all its WordPieces become one
// [MASK]), a click on a [MASK] brings its word back; the text is written again from the words and
// traced again. `hidden` remembers the masked words: {"a.3": "captain"} (sentence A, word 3).
import { el } from "./plots.js";

const SPECIAL = new Set(["[CLS]", "[SEP]", "[PAD]"]);

/** The words of sentence A and B from the tokens: pieces "##x" joined to the word before. */
export function wordsOf(trace) {
  const words = { a: [], b: [] };
  trace.tokens.forEach((tok, i) => {
    if (SPECIAL.has(tok)) return;
    const side = trace.token_type_ids[i] ? "b" : "a";
    const list = words[side];
    if (tok.startsWith("##") && list.length) list[list.length - 1] += tok.slice(2);
    else list.push(tok);
  });
  return words;
}

function wordButton(word, key, hidden, onClick) {
  const masked = word === "[MASK]";
  const button = el("button", { type: "button", class: masked ? "word filled" : "word", "data-word": key });
  button.append(word);
  if (masked && hidden[key]) button.append(el("span", { class: "sr-only" }, ` (was ${hidden[key]})`));
  button.title = masked ? (hidden[key] ? `bring back “${hidden[key]}”` : "a [MASK]") : "put [MASK] here";
  button.addEventListener("click", onClick);
  return button;
}

/** [the words' label, the group of buttons]; onChange(a, b, hidden) gets the new texts. */
export function maskWords(trace, hidden, onChange) {
  const words = wordsOf(trace);
  const label = el("p", { class: "note", id: "steps-words-label" });
  label.textContent = "Click a word to put [MASK] in its place; click a [MASK] to bring its word back.";
  const group = el("div", { class: "words", role: "group", "aria-labelledby": "steps-words-label" });
  for (const side of ["a", "b"]) {
    if (side === "b" && words.b.length) group.append(el("span", { class: "sep", "aria-hidden": "true" }, " ‖ "));
    words[side].forEach((word, k) => {
      const key = `${side}.${k}`;
      const click = () => {
        const next = { ...hidden };
        const list = [...words[side]];
        if (word === "[MASK]" && next[key]) [list[k]] = [next[key], delete next[key]];
        else if (word !== "[MASK]") [list[k], next[key]] = ["[MASK]", word];
        else return;
        const texts = { ...words, [side]: list };
        onChange(texts.a.join(" "), texts.b.length ? texts.b.join(" ") : null, next);
      };
      group.append(wordButton(word, key, hidden, click), " ");
    });
  }
  return [label, group];
}
