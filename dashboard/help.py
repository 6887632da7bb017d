"""The words on the page: each tab's help (what you are looking at, where the paper says it),
the examples, colours, CSS and the few lines of JavaScript the page runs."""

from .access import ACCESS_CSS, ACCESS_HEAD, THEME
from .current import CURRENT_CSS, CURRENT_HEAD
from .qr import QR_CSS
from .room import ROOM_CSS, ROOM_HEAD
from .rounds.kinds import ROUNDS_CSS

# Novel-style examples: the bundled model was pre-trained on ten 19th-century novels.
MLM_EXAMPLES = [
    ["he opened the [MASK] and walked into the garden ."],
    ["she sat down by the [MASK] and began to read ."],
    ["i [MASK] you to tell me the truth , said elizabeth ."],
    ["it was a dark and stormy [MASK] ."],
    ["the captain of the [MASK] looked at me and [MASK] ."],
]
# Each pair says what it is: B written to follow A (as IsNext pairs in pre-training), or B
# taken from another book (as NotNext pairs: a sentence from another document).
NSP_EXAMPLES = [
    ["elizabeth walked into the drawing room .", "her mother was sitting by the fire with her sisters ."],
    ["the nautilus dived deeper into the ocean .", "she had not danced with him since the ball at netherfield ."],
    [
        "captain nemo showed us the great salon of the nautilus .",
        "its walls were covered with paintings and the glass cases held rare shells .",
    ],
    ["the martians came out of the cylinder .", "emma thought mr . knightley was the best man she knew ."],
]
NSP_EXAMPLE_LABELS = [
    "continues A (IsNext)",
    "from another book (NotNext)",
    "continues A (IsNext)",
    "from another book (NotNext)",
]
QA_CONTEXT = (
    "Elizabeth Bennet lived at Longbourn with her parents and four sisters. In 1811 Mr. Bingley, "
    "a rich young man, rented Netherfield Park. His friend Mr. Darcy was proud and did not dance "
    "with Elizabeth at the first ball."
)
QA_CONTEXT_2 = (
    "The Nautilus was a submarine built by Captain Nemo on a desert island. It was driven by "
    "electricity, and Nemo used it to explore the oceans of the world for many years."
)
QA_EXAMPLES = [
    ["What did Mr. Bingley rent?", QA_CONTEXT],
    ["Who built the Nautilus?", QA_CONTEXT_2],
    ["Who was proud?", QA_CONTEXT],
]
CLS_EXAMPLES = [
    ["a charming and often moving film ."],
    ["the plot is thin and the acting is worse ."],
    ["boring , predictable and far too long ."],
    # negations: the tiny bert-lab-sst2 reads their words as negative cues; minilm-sst2 composes them
    # (docs/teaching/prompts.md lists which each model gets right, "anything but" wrong for both)
    ["not bad at all ."],
    ["it is not boring ."],
    ["never dull ."],
    ["a film that is anything but boring ."],
]

# Tagging: people, places and organisations (the entities UNER and CoNLL annotate), from the novels
# and from the web (a model pre-trained on novels knows Longbourn, not Seattle or Microsoft), with
# words WordPiece cuts into several pieces (the first sub-token rule).
TAG_EXAMPLES = [
    ["Elizabeth Bennet travelled from London to Seattle to work for Microsoft."],
    ["Mr. Darcy met Elizabeth at Netherfield, the house Mr. Bingley rented in Hertfordshire."],
    ["Captain Nemo showed Professor Aronnax the Nautilus off the coast of Japan."],
    ["The Bank of England opened an office in Paris, said the Royal Navy."],
]

# fixed colours: the legend means the same thing whatever order the kinds appear in
CORRUPTION_COLORS = {"[MASK] (80%)": "#f97316", "random (10%)": "#ef4444", "kept (10%)": "#22c55e"}

# Tagging: one fixed colour per tag, whatever model or sentence ("O", outside any entity: none).
# Entities (B-PER and I-PER both show as PER) in four hues far apart ...
ENTITY_COLORS = {"PER": "#a78bfa", "LOC": "#f59e0b", "ORG": "#22d3ee", "MISC": "#f472b6"}
# ... and the 17 universal POS tags, related tags in related hues: nominals blue, verbs green,
# modifiers orange, function words purple / pink, numbers yellow, the rest grey or red.
UPOS_COLORS = {
    "NOUN": "#60a5fa",
    "PROPN": "#2563eb",
    "PRON": "#93c5fd",
    "VERB": "#22c55e",
    "AUX": "#86efac",
    "ADJ": "#f97316",
    "ADV": "#fdba74",
    "ADP": "#a855f7",
    "DET": "#d8b4fe",
    "CCONJ": "#ec4899",
    "SCONJ": "#f9a8d4",
    "PART": "#e879f9",
    "NUM": "#eab308",
    "INTJ": "#ef4444",
    "PUNCT": "#d1d5db",
    "SYM": "#9ca3af",
    "X": "#a8a29e",
}
OTHER_TAG_COLORS = ["#14b8a6", "#84cc16", "#f43f5e", "#0ea5e9", "#eab308", "#8b5cf6", "#10b981", "#fb7185"]


def tag_colors(categories) -> dict[str, str]:
    """{category: colour} for the categories a tagger can show (entity types, or its tags), in
    their order: the fixed colours above, then OTHER_TAG_COLORS in turn for tags not among them."""
    fixed = {**ENTITY_COLORS, **UPOS_COLORS}
    others = iter(OTHER_TAG_COLORS * (1 + len(categories) // len(OTHER_TAG_COLORS)))
    return {c: fixed[c] if c in fixed else next(others) for c in categories}


CSS = """
.bl-table {max-height:24em; overflow:auto}
.bl-table table {font-size:var(--text-sm)}
.bl-table caption {text-align:left; padding:4px 0}
.bl-status {min-height:1.4em}
.bl-card td:first-child {white-space:nowrap}
#model-add {align-self:flex-end; margin-bottom:var(--spacing-xl)}
"""
# Gradio 6: look and feel go to launch()
LAUNCH_OPTIONS = dict(
    css=CSS + CURRENT_CSS + ROOM_CSS + QR_CSS + ROUNDS_CSS + ACCESS_CSS,
    head=CURRENT_HEAD + ROOM_HEAD + ACCESS_HEAD,
    theme=THEME,
)


# What each tab shows, where the paper (or the paper it cites) says it, and one line for each
# number on the page that needs one.
HELP = {
    "mlm": "**What you are looking at:** BERT's first pre-training task, the *masked language model* "
    "(Devlin et al. 2019, Section 3.1, Task #1): 15% of the tokens are hidden and the model guesses each "
    "from the words on **both** sides. Write [MASK] where a word should be guessed, or click a word to mask "
    "it; the bars are the model's probabilities for its best guesses (a *word piece* such as ##ing continues "
    "a word). **Temperature** divides the scores before the softmax: below 1 sharpens the guesses, above 1 "
    "flattens them, 1 gives the model's own probabilities. One [MASK] hides exactly **one WordPiece token**: a word "
    "the "
    "vocabulary cuts into pieces (the Model tab tokenizes any text) cannot be guessed whole at one [MASK].",
    "corrupt": "**The 80/10/10 rule** (Section 3.1): pre-training chooses **15%** of a text's tokens at random "
    "(rounded, at least one; never [CLS] or [SEP]) for the model to guess. Of the chosen tokens, 80% become [MASK], "
    "10% a random token and 10% stay **unchanged**. **Why not always [MASK]?** The paper: a mask-only rule would "
    'create *"a mismatch between pre-training and fine-tuning, since the [MASK] token does not appear during '
    'fine-tuning"*. The text a fine-tuned model reads has no [MASK]; since any token it sees may be one it must '
    "guess, the model learns to be right about the words it can see too. One short sentence draws one or two "
    "tokens; the tally under the words counts a thousand draws.",
    "nsp": "**What you are looking at:** the second pre-training task, *next sentence prediction* (Section 3.1, "
    "Task #2): half of the B sentences in pre-training were the real next sentence (IsNext), half a random "
    "sentence from another document (NotNext). The answer comes from the final [CLS] vector. A NotNext sentence "
    "comes from **another book**, so the "
    "model can learn the easier question *same book?* (the same names, topic and style) instead of *is B the "
    "next sentence?*: two sentences from the same novel score high even when B does not follow A.",
    "attention": "**What you are looking at:** each of the L layers has A attention heads (multi-head attention, "
    "Section 3 and Vaswani et al. 2017). A row is one token attending (its weights sum to 1), a column "
    "one token being attended to; hover for a weight, click a token under the maps to follow it. The "
    "table and the head statistics are Clark et al. 2019 (*What does BERT look at?*): how much attention "
    "goes to [CLS], [SEP], the token itself and its neighbours. **Entropy** (nats) measures how spread a "
    "head is: 0 = all on one token, ln T = evenly over all T tokens. Silencing heads one at a time is "
    "Michel et al. 2019 (*Are sixteen heads really better than one?*).",
    "qa": "**What you are looking at:** extractive question answering (Section 4.2, SQuAD): a QA model scores "
    "every context token as the answer's **start** and **end**; the answer is the best-scoring span "
    "(start ≤ end, at most 30 tokens). The status line says what the chosen model was fine-tuned on; pick "
    "another model to compare answers to the same question. **The [CLS] score**: a SQuAD 2.0-style model "
    'points start and end at [CLS] to say "no answer"; these models learned SQuAD v1.1, where every '
    "question has an answer, so the probability left on [CLS] is leftover mass, not a verdict: they always answer "
    "with a span. "
    "**minilm-squad** and **bert-lab-squad** learned the same SQuAD questions with the same code; they differ in "
    "what they started from: MiniLM, an encoder pre-trained on far more text, or the lab's tiny "
    "bert-lab-classroom (ten novels). The difference in their answers is what pre-training gave them.",
    "lens": "The model's own masked-LM head (the layer that turns the last vector into word probabilities) "
    "applied to the vector at each [MASK] after **every** layer, from the input embeddings down to the last "
    "layer, whose row is the answer above. Watch where the final answer (outlined) takes the lead. The head was "
    "trained on the last layer only: an early layer's row says what that layer already hands the head, not all "
    "it knows. Models without a masked-LM head (task models such as MiniLM's) are not in this tab's menu.",
    "why": "**Red** tokens push toward the answer, **purple** ones against it; the deeper the shade, the more. "
    "Each score is the token's share of the answer's log-odds (log P / (1 − P)), by **integrated gradients** "
    "(Sundararajan et al. 2017): the words' embeddings are faded in from a baseline with no words ([PAD]'s "
    "embedding at every word, [CLS] and [SEP] kept, positions and segments as they are: the model's frame "
    "without the words, not an all-zero input the model never saw) and the gradient is summed along the way, "
    "so the scores add up to f(text) − f(no words) (the status says how closely). **Gradient x input** is the "
    "one-gradient shortcut: cheaper, and its scores need not add up. Attention is not this (see the Attention "
    "tab's comparison). In a notebook: `explore.attributions(model, tokenizer, text)`.",
    "why_attention": "**Attribution beside attention.** Attention says where [CLS] looks in the last layer "
    "(mean of the layer's heads), attribution how much each token moves the answer read from [CLS]: the NSP "
    "head's for a pre-trained model (give sentence B), the label's for a classifier (for a QA model: the "
    "span, text A the question, B the context; for a masked-LM model without B: the first [MASK]'s guess). "
    "The title gives their Pearson and Spearman correlations over the text's tokens (|attribution|, since "
    "attention has no sign; [CLS], [SEP] and [MASK] left out): *attention is not explanation* (Jain & Wallace "
    "2019; Wiegreffe & Pinter 2019).",
    "classify": "**What you are looking at:** fine-tuning (Section 4.1, GLUE): BERT plus one linear layer on the "
    "final [CLS] vector, every weight trained on labelled sentences; both bundled models learned SST-2 "
    "(movie-review sentences, negative / positive) with the same code: **minilm-sst2** from a real pre-trained "
    "encoder, **bert-lab-sst2** from the lab's tiny one. Try the negation examples with each and open *Why?*: a "
    "model that reads each word as a cue on its own "
    "says *not bad at all* is negative (“bad” pushes most), one that composes words lets “not” turn the word "
    "after it around (“not” pushes most). Pair tasks "
    "(MNLI, QNLI) put a second sentence in segment B.",
    "tag": "**What you are looking at:** token tagging (Section 5.3, CoNLL-2003 named entities): a tag for every "
    "word, either an entity (**PER**son, **LOC**ation, **ORG**anisation; B- begins one, I- continues it, O is none "
    "and is not highlighted) or a part of speech (the 17 universal POS tags). Each tag has one fixed colour (the "
    "legend). WordPiece cuts rare words into pieces (*seat ##tle*); the paper reads a word's tag at its **first "
    'piece**: *"We use the representation of the first sub-token as the input to the token-level classifier"*. '
    "Click a word for its probability and the runner-up. Section 5.3 also tests the **feature-based** approach: "
    "frozen BERT activations (best: the last four layers concatenated) fed to a small tagger came within a "
    "fraction of a point of fine-tuning every weight (Table 7; `python -m lab finetune-tag --mode features`, "
    "notebook 08). Text is split into words at spaces and punctuation, as the tagging data is; a long text is "
    "read in overlapping windows, nothing is cut.",
    "training": "**What you are looking at:** a training run's loss and held-out accuracy (its metrics.jsonl; "
    "pre-training procedure: Section 3.1 and Appendix A.2), and the same masked sentence through the "
    "run's checkpoints: watch BERT learn. The first checkpoints put the **most frequent tokens** (such as “the”, "
    "“,” and “.”) at every [MASK], whatever the sentence: before a model reads the context, the best it can do is "
    "guess how often each token occurs (the *unigram plateau*). Then the words around the [MASK] take over.",
    "model": "**What you are looking at:** the chosen model (its card, its shape: L layers, hidden size H, A heads, "
    "Section 3) and its input representation (Section 3, Figure 2): WordPiece tokens, plus a segment and "
    "a position embedding, summed.",
}
