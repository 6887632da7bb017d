// The guided tour of Step by step: thirteen stops in the paper's order (Section 3's input and
// Figure 2, the two pre-training tasks, attention's scores, mask, softmax and context, add & norm,
// the feed-forward, the heads, fine-tuning's [CLS] and spans). Each stop is a few sentences, quoting
// the paper only from its text, and the block it opens and lights up. A card, not a modal: Next and
// Back (buttons, or the arrow keys while the card has focus), Escape closes it, and focus goes to the
// card when it opens and back where it was when it closes.
import { el } from "./plots.js";
import { STOPS } from "./tour_stops.js";

// Which model classes have a head (manifest entry .trace.config.class), to say where to find one.
const HAS_HEAD = {
  mlm: ["BertForPreTraining", "BertForMaskedLM"],
  nsp: ["BertForPreTraining"],
  span: ["BertForQuestionAnswering"],
  classifier: ["BertForSequenceClassification"],
};

// The block a stop lights up in this trace: its role (the first that exists), in layer 0 for a layer's.
function findBlock(blocks, stop) {
  for (const role of stop.roles) {
    const block = blocks.find((b) => b.role === role && (b.layer === null || b.layer === 0));
    if (block) return block;
  }
  return null;
}

function missing(s, stop) {
  const role = stop.roles[0];
  const classes = HAS_HEAD[role];
  if (!classes || s.blocks.some((b) => stop.roles.includes(b.role))) return "";
  const other = s.models.find((m) => classes.includes(m.trace.config.class));
  const what = stop.needs ?? "this head";
  if (!other) return `${s.menu.value} has no ${what}, and no model of this site has one.`;
  return `${s.menu.value} has no ${what}: pick ${other.name} in the Model menu to see it.`;
}

function button(text, id) {
  return el("button", { type: "button", id }, text);
}

function card() {
  const box = el("div", { class: "tour", id: "steps-tour", role: "dialog", "aria-labelledby": "tour-title" });
  box.setAttribute("aria-modal", "false");
  box.tabIndex = -1;
  box.hidden = true;
  const said = el("div", { class: "tour-said", "aria-live": "polite" });
  const count = el("p", { class: "tour-count", id: "tour-count" });
  const title = el("h2", { id: "tour-title" });
  const text = el("div", { class: "tour-text", id: "tour-text" });
  said.append(count, title, text);
  const nav = el("div", { class: "tour-nav" });
  const back = button("Back", "tour-back");
  const next = button("Next", "tour-next");
  const close = button("Close the tour", "tour-close");
  nav.append(back, next, close);
  const keys = el("p", { class: "tour-keys" }, "Keys: ← Back, → Next, Esc closes.");
  box.append(said, nav, keys);
  return { box, count, title, text, back, next, close };
}

function light(s, api, stop) {
  for (const old of s.panel.querySelectorAll(".lit")) old.classList.remove("lit");
  const block = findBlock(s.blocks, stop);
  if (!block) return null;
  if (s.open !== block.key) api.openBlock(block.key);
  s.panel.querySelector(`button.block[data-block="${block.key}"]`)?.classList.add("lit");
  const step = [...s.detail.querySelectorAll("article.step")].find((a) => stop.step?.(a.dataset.step, s));
  const target = step ?? s.detail;
  target.classList.add("lit");
  return target;
}

function scrollTo(target, box) {
  const top = target.getBoundingClientRect().top;
  const room = window.innerHeight - box.getBoundingClientRect().height;
  if (top < 8 || top > Math.max(80, room * 0.5)) window.scrollBy({ top: top - 12, behavior: "instant" });
}

/** The tour of view state `s`; api: {openBlock(key), blockName(block)}. Returns {open(from), refresh()}. */
export function createTour(s, api) {
  const c = card();
  s.panel.append(c.box);
  const state = { at: 0, from: null };

  function render(scroll = true) {
    const stop = STOPS[state.at];
    c.count.textContent = `Stop ${state.at + 1} of ${STOPS.length}`;
    c.title.textContent = stop.title;
    c.text.replaceChildren(...stop.text.map((p) => el(p.quote ? "blockquote" : "p", {}, p.quote ?? p)));
    const note = s.trace ? missing(s, stop) : "";
    if (note) c.text.append(el("p", { class: "tour-note" }, note));
    c.back.setAttribute("aria-disabled", String(state.at === 0));
    c.next.textContent = state.at === STOPS.length - 1 ? "Finish" : "Next";
    c.box.dataset.stop = String(state.at);
    if (!s.trace) return;
    const target = light(s, api, stop);
    c.box.dataset.block = s.open ?? "";
    if (target && scroll) scrollTo(target, c.box);
  }

  function go(delta) {
    const at = state.at + delta;
    if (at < 0) return;
    if (at >= STOPS.length) return close();
    state.at = at;
    render();
  }

  function close() {
    c.box.hidden = true;
    for (const old of s.panel.querySelectorAll(".lit")) old.classList.remove("lit");
    s.panel.classList.remove("touring");
    (state.from?.isConnected ? state.from : document.getElementById("steps-tour-start"))?.focus();
  }

  c.back.addEventListener("click", () => go(-1));
  c.next.addEventListener("click", () => go(1));
  c.close.addEventListener("click", close);
  c.box.addEventListener("keydown", (e) => {
    if (e.key === "Escape") close();
    else if (e.key === "ArrowRight") go(1);
    else if (e.key === "ArrowLeft") go(-1);
    else return;
    e.preventDefault();
  });

  return {
    open(from = document.activeElement) {
      state.from = from;
      state.at = 0;
      c.box.hidden = false;
      s.panel.classList.add("touring");
      render();
      c.box.focus();
    },
    refresh() {
      if (!c.box.hidden) render(false);
    },
  };
}
