// The tour's stops, in the paper's order. Quotations are the BERT paper's own words (Devlin et al.
// 2019: Section 3, 3.1, 3.2, 4.1, 4.2, the footnote on the feed-forward size, Appendix A.2); the rest
// is said in our words. roles: the blocks a stop lights (the first the model has); step(name): the
// step it lights inside the block.
const kind = (suffix) => (name) => name.endsWith(suffix);

export const STOPS = [
  {
    title: "The input: one sequence of WordPieces",
    text: [
      "BERT reads one sequence: sentence A, and optionally sentence B, cut into WordPieces.",
      { quote: "The first token of every sequence is always a special classification token ([CLS])." },
      "A [SEP] closes each sentence, and each WordPiece's id picks its row of the token embedding table.",
    ],
    roles: ["embeddings"],
    step: kind(".word_embeddings"),
  },
  {
    title: "Figure 2: token + segment + position",
    text: [
      {
        quote:
          "For a given token, its input representation is constructed by summing the corresponding token, " +
          "segment, and position embeddings.",
      },
      "The figure draws those three vectors for every token of your input, from this model's own tables, and " +
        "their sum; a LayerNorm then rescales it.",
    ],
    roles: ["embeddings"],
    step: kind(".sum"),
  },
  {
    title: "Pre-training task 1: the masked LM",
    text: [
      { quote: "The training data generator chooses 15% of the token positions at random for prediction." },
      "A chosen token is replaced by [MASK] 80% of the time, by a random token 10% of the time, and left " +
        "unchanged 10% of the time (Section 3.1).",
      "This head scores every word of the vocabulary at each [MASK]: click a word above to move the [MASK].",
    ],
    roles: ["mlm"],
    needs: "masked-LM head",
    step: kind("predictions.softmax"),
  },
  {
    title: "Pre-training task 2: next sentence prediction",
    text: [
      {
        quote:
          "50% of the time B is the actual next sentence that follows A (labeled as IsNext), and 50% of the time " +
          "it is a random sentence from the corpus (labeled as NotNext).",
      },
      "This head reads C, the final vector of [CLS]: change sentence B and watch P(IsNext).",
    ],
    roles: ["nsp"],
    needs: "next-sentence head",
    step: kind("seq_relationship.softmax"),
  },
  {
    title: "Attention: queries, keys and values",
    text: [
      {
        quote:
          "BERT’s model architecture is a multi-layer bidirectional Transformer encoder based on the original " +
          "implementation described in Vaswani et al. (2017)",
      },
      "In each layer, every token's vector is multiplied by three learned matrices: its query (what it looks " +
        "for), its key (what it offers) and its value (what it passes on).",
    ],
    roles: ["attention"],
    step: kind(".query"),
  },
  {
    title: "Scores: Q Kᵀ / √d",
    text: [
      "Each head compares every token's query with every token's key: a dot product, divided by the square " +
        "root of the head size so that the softmax does not saturate (Vaswani et al. 2017, 3.2.1).",
      "One row per token, one column per key: pick the head in the Head menu.",
    ],
    roles: ["attention"],
    step: kind(".scores"),
  },
  {
    title: "The mask",
    text: [
      "Before the softmax a mask M is added: 0 where a key may be seen, −∞ where it may not (padding, or " +
        "outside a local layer's window).",
      { quote: "the BERT Transformer uses bidirectional self-attention" },
      "So with one input and no padding every token sees every token, on both sides: here M is all zeros.",
    ],
    roles: ["attention"],
    step: kind(".masked_scores"),
  },
  {
    title: "Softmax: where each token looks",
    text: [
      "Each row of scores becomes probabilities that sum to 1: how much that token attends to every token.",
      "Choose a token in “Token to follow” to outline its row; these are the maps of the Attention view.",
    ],
    roles: ["attention"],
    step: kind(".probs"),
  },
  {
    title: "Context: the weighted values",
    text: [
      "Each token's new vector in a head is the sum of all the values, weighted by its attention.",
      "The heads' outputs are set side by side, and a linear layer mixes them back into one vector per token.",
    ],
    roles: ["attention"],
    step: kind(".context"),
  },
  {
    title: "Add & Norm",
    text: [
      "The attention's output is added to its input (a residual connection, so information can skip the " +
        "sub-layer), and LayerNorm rescales every token's vector to mean 0 and variance 1 before a learned " +
        "stretch and shift.",
      "BERT normalises after each sub-layer; newer models (pre-norm) normalise before it.",
    ],
    roles: ["add_norm", "add"],
    step: kind("attention.output.residual"),
  },
  {
    title: "The feed-forward network",
    text: [
      "Each token's vector is widened, passed through an activation, and narrowed back, each token on its own.",
      { quote: "In all cases we set the feed-forward/filter size to be 4H" },
      {
        quote:
          "We use a gelu activation (Hendrycks and Gimpel, 2016) rather than the standard relu, following OpenAI GPT.",
      },
    ],
    roles: ["ffn"],
    step: kind("intermediate.activation"),
  },
  {
    title: "The heads: [CLS] speaks for the whole input",
    text: [
      {
        quote:
          "The final hidden state corresponding to this token is used as the aggregate sequence representation " +
          "for classification tasks.",
      },
      "The pooler (a dense layer and tanh on [CLS]) feeds next sentence prediction; fine-tuning adds one " +
        "layer on top of it, a score for each label (Section 4.1).",
    ],
    roles: ["classifier", "pooler", "nsp"],
    step: (name) => name === "bert.pooler.activation" || name === "classifier.softmax",
  },
  {
    title: "Fine-tuning for spans: a start and an end",
    text: [
      "For question answering the question is sentence A and the paragraph sentence B.",
      { quote: "We only introduce a start vector S ∈ ℝᴴ and an end vector E ∈ ℝᴴ during fine-tuning." },
      "Every token's final vector is scored against S and E; a softmax over the tokens gives P(start) and P(end).",
    ],
    roles: ["span"],
    needs: "answer-span head",
    step: kind("start_softmax"),
  },
];
