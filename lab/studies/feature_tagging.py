"""The feature-based approach to tagging (the paper's Section 5.3 and Table 7), cheap by construction.

    python -m benchmarks.table7          # the table: every feature choice against fine-tuning

    train_f = cache_word_features(encoder, tok, train.sentences)   # lab.inspect.features: (words, L+1, H)
    test_f = cache_word_features(encoder, tok, test.sentences)
    rows = feature_based_rows(train_f, test_f, labels)             # one tagger per feature choice
    patterns = table7_patterns(rows, gold_tags, finetuned_tags)    # which of the paper's patterns hold

As the paper argues, an expensive representation is computed once: the frozen encoder reads each
sentence once, and every row of the table is a small tagger trained in seconds on the same
in-memory tensor, by the short loop below (lab.training.train.train's run directories,
checkpoints and resumption are for encoders).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from lab.config import setting
from lab.data.batch import step_indices
from lab.data.tag_metrics import Interval, bootstrap_interval, entity_scores, get_entities, token_accuracy
from lab.data.tagged_files import is_iob2_tag
from lab.inspect.features import WordFeatures, torch_threads
from lab.training.fast_dropout import FastDropout
from lab.training.train import lr_factor

COMBINES = ("one", "concat", "mix")
TAGGERS = ("bilstm", "linear")
# the learning rate each tagger trains well at (docs/fine-tuning.md): the linear layer underfits
# at the BiLSTM's 2e-3
DEFAULT_LR = {"bilstm": 2e-3, "linear": 1e-2}


# ----------------------------------------------------------------------------------------------
# 1. Feature choices and the tagger
# ----------------------------------------------------------------------------------------------
# Worked example: the six feature choices for MiniLM (L = 6 layers, H = 384). hidden_states holds
# L + 1 = 7 tensors: layer 0 = the embeddings' output, layers 1..6 = the Transformer layers'
# outputs. The cache (lab.inspect.features) keeps all 7 for each word: a (7, 384) block per word.
#
#     choice                          layers       combine   tagger input per word
#     Embeddings                      0            one       384
#     Second-to-Last Hidden           5            one       384
#     Last Hidden                     6            one       384
#     Weighted Sum Last Four Hidden   3 4 5 6      mix       384  = gamma * sum_j softmax(w)_j h_j
#     Concat Last Four Hidden         3 4 5 6      concat    1536 = [h_3; h_4; h_5; h_6]
#     Weighted Sum All 6 Layers       1 .. 6       mix       384
#
# "Last four" of BERT-base's 12 layers are 9-12; of MiniLM's 6 they are 3-6. The weighted sums
# are ELMo's scalar mix (Peters et al. 2018, eq. 1): one learned weight per layer, softmax-
# normalised, and one learned scale gamma; "all 12 layers" in the paper are BERT-base's 12
# Transformer layers, so "all" here is layers 1..L (the embeddings are their own row).
#
# The tagger: the paper put "a randomly initialized two-layer 768-dimensional BiLSTM before the
# classification layer" on the features; the default here is one BiLSTM layer of 128 units a
# direction over the sentence's word vectors (docs/fine-tuning.md says why), then a linear layer
# over the labels (kind="linear": the linear layer alone, every word on its own). Every row uses
# the same tagger, epochs, learning rate and seed.


@dataclass(frozen=True)
class FeatureChoice:
    """Which hidden states a tagger reads, and how it combines them."""

    name: str  # the paper's row name, e.g. "Concat Last Four Hidden"
    layers: tuple[int, ...]  # indexes into hidden_states: 0 = embeddings, L = last layer
    combine: str  # "one" (a single layer), "concat" (side by side) or "mix" (learned weighted sum)

    def input_size(self, hidden_size: int) -> int:
        return hidden_size * len(self.layers) if self.combine == "concat" else hidden_size


def feature_choices(num_layers: int) -> list[FeatureChoice]:
    """The paper's six feature-based rows for an encoder of `num_layers` Transformer layers
    (see the worked example above)."""
    L = num_layers
    if L < 2:
        raise ValueError(f"feature_choices needs an encoder of at least 2 layers, got {L}")
    last4 = tuple(range(max(1, L - 3), L + 1))  # BERT-base: 9..12; MiniLM: 3..6
    return [
        FeatureChoice("Embeddings", (0,), "one"),
        FeatureChoice("Second-to-Last Hidden", (L - 1,), "one"),
        FeatureChoice("Last Hidden", (L,), "one"),
        FeatureChoice("Weighted Sum Last Four Hidden", last4, "mix"),
        FeatureChoice("Concat Last Four Hidden", last4, "concat"),
        FeatureChoice(f"Weighted Sum All {L} Layers", tuple(range(1, L + 1)), "mix"),
    ]


@dataclass
class TaggerConfig:
    kind: str = setting("bilstm", "bilstm: one BiLSTM layer then a linear layer; linear: the linear layer alone")
    lstm_hidden: int = setting(128, "BiLSTM units per direction (the paper: two layers of 768)")
    dropout: float = setting(0.2, "dropout on the tagger's input features and on the BiLSTM's output")
    epochs: int = setting(8, "passes over the training sentences")
    batch_size: int = setting(32, "sentences per step")
    lr: float = setting(2e-3, "peak learning rate (AdamW)")
    weight_decay: float = setting(0.01, "AdamW decay on the weight matrices")
    warmup: float = setting(0.1, "warm-up as a fraction of the steps, then linear decay to 0")
    seed: int = setting(0, "one seed for the tagger's init, the sentence order and dropout")
    threads: int | None = setting(
        None, "torch threads while the tagger trains and predicts (None: as set; 1 suits a BiLSTM on shared cores)"
    )


class FeatureTagger(nn.Module):
    """A small tagger on cached word vectors: combine the chosen layers, (BiLSTM), linear.

    forward(x, lengths) with x (B, S, k, H): k chosen layers of each of S word slots (padded),
    lengths (B,) real words per sentence -> logits (B, S, K).
    """

    def __init__(self, choice: FeatureChoice, hidden_size: int, num_labels: int, config: TaggerConfig):
        super().__init__()
        if choice.combine not in COMBINES:
            raise ValueError(f"combine must be one of {', '.join(COMBINES)}, not {choice.combine!r}")
        if config.kind not in TAGGERS:
            raise ValueError(f"tagger kind must be one of {', '.join(TAGGERS)}, not {config.kind!r}")
        self.choice, self.kind = choice, config.kind
        k = len(choice.layers)
        if choice.combine == "mix":  # ELMo's scalar mix: softmax(w) over the layers, times gamma
            self.mix_logits = nn.Parameter(torch.zeros(k))  # equal weights at the start
            self.gamma = nn.Parameter(torch.ones(()))
        self.dropout = FastDropout(config.dropout)  # nn.Dropout's maths, a cheaper mask on a CPU
        size = choice.input_size(hidden_size)
        if config.kind == "bilstm":
            self.lstm = nn.LSTM(size, config.lstm_hidden, batch_first=True, bidirectional=True)
            size = 2 * config.lstm_hidden
        self.classifier = nn.Linear(size, num_labels)

    def mix_weights(self) -> torch.Tensor | None:
        """The weighted sums' layer weights (a softmax: positive, summing to 1); None otherwise."""
        return torch.softmax(self.mix_logits, dim=0) if self.choice.combine == "mix" else None

    def combine(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S, k, H) -> (B, S, H) for one / mix, (B, S, k*H) for concat."""
        if self.choice.combine == "one":
            return x[:, :, 0]
        if self.choice.combine == "concat":
            return x.flatten(2)  # [h_a; h_b; ...] per word
        w = self.mix_weights()  # (k,)
        return self.gamma * torch.einsum("bskh,k->bsh", x, w)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        h = self.dropout(self.combine(x.float()))  # (B, S, D)
        if self.kind == "bilstm":
            # packed: the backward direction starts at each sentence's last real word, not at padding
            packed = pack_padded_sequence(h, lengths.cpu(), batch_first=True, enforce_sorted=False)
            h, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True, total_length=x.shape[1])  # (B, S, 2U)
            h = self.dropout(h)
        return self.classifier(h)  # (B, S, K)


def _chosen(features: WordFeatures, choice: FeatureChoice) -> torch.Tensor:
    """(N, k, H) fp32: the chosen layers of every word, gathered once per choice (not per batch)."""
    if max(choice.layers) > features.num_layers:
        raise ValueError(f"{choice.name} reads layer {max(choice.layers)} of a {features.num_layers}-layer cache")
    return features.vectors[:, list(choice.layers)].float()


def _batch(features: WordFeatures, table: torch.Tensor, sentences: Sequence[int]):
    """Sentences -> (x (B, S, k, H) padded with zeros, lengths (B,), word rows (B, S) with -1 on padding).

    table: _chosen(features, choice). Sentence i's words are rows offsets[i]:offsets[i+1] of it;
    e.g. sentences of 3 and 1 words at rows 10-12 and 40 -> rows [[10, 11, 12], [40, -1, -1]]."""
    starts = torch.tensor([features.offsets[i] for i in sentences])  # (B,)
    lengths = torch.tensor([features.offsets[i + 1] for i in sentences]) - starts  # (B,)
    slots = torch.arange(int(lengths.max()))  # (S,)
    real = slots[None, :] < lengths[:, None]  # (B, S)
    rows = torch.where(real, starts[:, None] + slots[None, :], -1)  # (B, S)
    x = table[rows.clamp(min=0)] * real[:, :, None, None]  # (B, S, k, H), zeros on padding
    return x, lengths, rows


def train_feature_tagger(
    choice: FeatureChoice,
    train: WordFeatures,
    label2id: Mapping[str, int],
    config: TaggerConfig | None = None,
    log=None,
) -> FeatureTagger:
    """Train a FeatureTagger on one feature choice of the cached training words (their gold tags
    from train.tags): cross-entropy over words, AdamW, warm-up then linear decay, config.epochs
    passes over the sentences in a seeded order."""
    config = config or TaggerConfig()
    if train.tags is None:
        raise ValueError("train_feature_tagger: the training features have no tags")
    table = _chosen(train, choice)  # (N, k, H)
    torch.manual_seed(config.seed)
    tagger = FeatureTagger(choice, train.hidden_size, len(label2id), config)
    labels = torch.tensor([label2id[t] for tags in train.tags for t in tags])  # (N,) one per word row
    decay = [p for p in tagger.parameters() if p.ndim >= 2]  # weight matrices
    rest = [p for p in tagger.parameters() if p.ndim < 2]  # biases, the mix's weights and scale
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": rest, "weight_decay": 0.0}], lr=config.lr
    )
    n = train.num_sentences
    per_epoch = math.ceil(n / config.batch_size)
    total = per_epoch * config.epochs
    warm = int(config.warmup * total)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, total, warm))
    tagger.train()
    with torch_threads(config.threads):
        for step in range(total):
            sentences = step_indices(n, config.batch_size, step, config.seed, drop_last=False)
            x, lengths, rows = _batch(train, table, sentences)
            logits = tagger(x, lengths)  # (B, S, K)
            real = rows >= 0
            loss = nn.functional.cross_entropy(logits[real], labels[rows[real]])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            if log and (step + 1) % per_epoch == 0:
                log(f"  {choice.name}: epoch {(step + 1) // per_epoch}/{config.epochs}, loss {loss.item():.4f}")
    return tagger.eval()


@torch.no_grad()
def predict_feature_tags(
    tagger: FeatureTagger,
    features: WordFeatures,
    id2label: Sequence[str],
    batch_size: int = 64,
    threads: int | None = None,
) -> list[list[str]]:
    """The argmax tag of every word of every sentence (no CRF, as the paper); threads as TaggerConfig's."""
    was_training = tagger.training
    tagger.eval()
    out: list[list[str]] = []
    table = _chosen(features, tagger.choice)  # (N, k, H)
    order = list(range(features.num_sentences))
    with torch_threads(threads):
        for i in range(0, len(order), batch_size):
            sentences = order[i : i + batch_size]
            x, lengths, _ = _batch(features, table, sentences)
            best = tagger(x, lengths).argmax(-1)  # (B, S)
            out += [[id2label[k] for k in best[b, : lengths[b]].tolist()] for b in range(len(sentences))]
    tagger.train(was_training)
    return out


# ----------------------------------------------------------------------------------------------
# 2. The table: one row per feature choice, each with a 95% interval
# ----------------------------------------------------------------------------------------------


@dataclass
class FeatureRow:
    """One measured row of the table."""

    name: str
    layers: tuple[int, ...]
    f1: float  # entity F1, micro-averaged (conlleval's counting)
    low: float  # 95% bootstrap interval over evaluation sentences
    high: float
    per_type: dict[str, float]  # F1 per entity type
    seconds: float  # training + prediction + scoring
    precision: float = 0.0
    recall: float = 0.0
    mix_weights: list[float] | None = None  # the learned layer weights of a weighted sum
    predictions: list[list[str]] = field(default_factory=list, repr=False)
    choice: FeatureChoice | None = field(default=None, repr=False)  # what the tagger read

    @property
    def layer_text(self) -> str:
        """1 layer: "6"; a run: "3-6"; otherwise "0 2 5"."""
        ls = self.layers
        if len(ls) > 1 and list(ls) == list(range(ls[0], ls[-1] + 1)):
            return f"{ls[0]}-{ls[-1]}"
        return " ".join(map(str, ls))


def feature_based_rows(
    train: WordFeatures,
    evaluation: WordFeatures,
    labels: Sequence[str],
    config: TaggerConfig | None = None,
    choices: Sequence[FeatureChoice] | None = None,
    n_resamples: int = 1000,
    log=None,
) -> list[FeatureRow]:
    """Train the same tagger on every feature choice (default: feature_choices(L)) and score it on
    the evaluation words: entity F1 (micro, per type) with a seeded 95% bootstrap interval over
    evaluation sentences."""
    config = config or TaggerConfig()
    if evaluation.tags is None:
        raise ValueError("feature_based_rows: the evaluation features have no tags")
    if (train.num_layers, train.hidden_size) != (evaluation.num_layers, evaluation.hidden_size):
        raise ValueError("feature_based_rows: the training and evaluation caches come from different encoders")
    label2id = {label: i for i, label in enumerate(labels)}
    rows = []
    for choice in choices or feature_choices(train.num_layers):
        start = time.perf_counter()
        tagger = train_feature_tagger(choice, train, label2id, config, log)
        pred = predict_feature_tags(tagger, evaluation, list(labels), threads=config.threads)
        scores = entity_scores(evaluation.tags, pred)
        ci = bootstrap_interval(evaluation.tags, pred, "f1", n_resamples=n_resamples, seed=config.seed)
        weights = tagger.mix_weights()
        row = FeatureRow(
            name=choice.name,
            layers=choice.layers,
            f1=scores.f1,
            low=ci.low,
            high=ci.high,
            per_type={kind: s.f1 for kind, s in scores.per_type.items()},
            seconds=time.perf_counter() - start,
            precision=scores.precision,
            recall=scores.recall,
            mix_weights=weights.tolist() if weights is not None else None,
            predictions=pred,
            choice=choice,
        )
        if log:
            log(
                f"{row.name} (layers {row.layer_text}): F1 {row.f1:.4f} ({row.low:.4f}-{row.high:.4f}), "
                f"{row.seconds:.1f} s"
            )
        rows.append(row)
    return rows


def _sentence_counts(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> np.ndarray:
    """(S, 3): per sentence, (correct, predicted, gold) entities, as entity_scores counts them."""
    out = np.zeros((len(gold), 3), dtype=np.int64)
    for i, (g, p) in enumerate(zip(gold, pred)):
        g_set, p_set = set(get_entities(g)), set(get_entities(p))
        out[i] = (len(g_set & p_set), len(p_set), len(g_set))
    return out


def paired_difference(
    gold: Sequence[Sequence[str]],
    pred_a: Sequence[Sequence[str]],
    pred_b: Sequence[Sequence[str]],
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """F1(a) - F1(b) on the same sentences, with a paired percentile-bootstrap interval: each
    resample draws sentences with replacement and scores both taggers on the SAME draw. Two
    taggers err on many of the same hard sentences, so this interval is narrower (and the right
    one to read) than the gap between two separate intervals."""
    if not (len(gold) == len(pred_a) == len(pred_b)) or not gold:
        raise ValueError("paired_difference: gold and both predictions need the same, non-zero number of sentences")
    a, b = _sentence_counts(gold, pred_a), _sentence_counts(gold, pred_b)

    def f1(sums: np.ndarray) -> np.ndarray:  # (..., 3) -> (...): 2 correct / (predicted + gold)
        den = sums[..., 1] + sums[..., 2]
        return np.divide(2.0 * sums[..., 0], den, out=np.zeros(den.shape), where=den > 0)

    estimate = float(f1(a.sum(0)) - f1(b.sum(0)))
    rng = np.random.default_rng(seed)
    values = []
    for first in range(0, n_resamples, 100):
        m = min(100, n_resamples - first)
        drawn = rng.integers(0, len(gold), size=(m, len(gold)))  # (m, S)
        values.append(f1(a[drawn].sum(1)) - f1(b[drawn].sum(1)))
    alpha = (1 - confidence) / 2
    low, high = np.quantile(np.concatenate(values), [alpha, 1 - alpha])
    return Interval(estimate, float(low), float(high), confidence, n_resamples)


@dataclass
class ChoiceScore:
    """One tagger on one feature choice, scored: entity F1 (IOB2 labels) or accuracy (plain tags)."""

    choice: FeatureChoice
    metric: str  # "f1" or "accuracy"
    value: float
    low: float  # 95% bootstrap interval over evaluation sentences
    high: float
    seconds: float  # training + prediction + scoring
    predictions: list[list[str]] = field(default_factory=list, repr=False)

    @classmethod
    def from_row(cls, row: FeatureRow) -> ChoiceScore:
        """A row of feature_based_rows as a ChoiceScore (entity F1): the same tagger, already scored."""
        if row.choice is None:
            raise ValueError(f"from_row: the row {row.name!r} does not record its feature choice")
        return cls(row.choice, "f1", row.f1, row.low, row.high, row.seconds, row.predictions)


def score_choice(
    train: WordFeatures,
    evaluation: WordFeatures,
    labels: Sequence[str],
    choice: FeatureChoice | str = "Concat Last Four Hidden",
    config: TaggerConfig | None = None,
    n_resamples: int = 1000,
) -> ChoiceScore:
    """Train the tagger on one feature choice (an object, or a row name of feature_choices) and
    score it on the evaluation words: entity F1 when every label is IOB2 (O, B-X, I-X), else tag
    accuracy (parts of speech), with a seeded 95% bootstrap interval over sentences. The same
    tagger on the same choice for two encoders compares what their frozen vectors hold."""
    config = config or TaggerConfig()
    if evaluation.tags is None:
        raise ValueError("score_choice: the evaluation features have no tags")
    if isinstance(choice, str):
        by_name = {c.name: c for c in feature_choices(train.num_layers)}
        if choice not in by_name:
            raise ValueError(f"score_choice: no feature choice {choice!r}; choose one of {', '.join(by_name)}")
        choice = by_name[choice]
    start = time.perf_counter()
    tagger = train_feature_tagger(choice, train, {label: i for i, label in enumerate(labels)}, config)
    pred = predict_feature_tags(tagger, evaluation, list(labels), threads=config.threads)
    metric = "f1" if all(is_iob2_tag(label) for label in labels) else "accuracy"
    value = entity_scores(evaluation.tags, pred).f1 if metric == "f1" else token_accuracy(evaluation.tags, pred)
    ci = bootstrap_interval(evaluation.tags, pred, metric, n_resamples=n_resamples, seed=config.seed)
    return ChoiceScore(choice, metric, value, ci.low, ci.high, time.perf_counter() - start, pred)


# ----------------------------------------------------------------------------------------------
# 3. The paper's Table 7, and which of its patterns hold in measured rows
# ----------------------------------------------------------------------------------------------

# Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding"
# (arXiv:1810.04805, NAACL 2019), Section 5.3, quoted as printed.
PAPER_TABLE7_CAPTION = (
    "Table 7: CoNLL-2003 Named Entity Recognition results. Hyperparameters were selected using the Dev set. "
    "The reported Dev and Test scores are averaged over 5 random restarts using those hyperparameters."
)
PAPER_TABLE7 = [  # (approach, system, Dev F1, Test F1 or None where the paper prints "-")
    ("Fine-tuning approach", "BERT-LARGE", 96.6, 92.8),
    ("Fine-tuning approach", "BERT-BASE", 96.4, 92.4),
    ("Feature-based approach (BERT-BASE)", "Embeddings", 91.0, None),
    ("Feature-based approach (BERT-BASE)", "Second-to-Last Hidden", 95.6, None),
    ("Feature-based approach (BERT-BASE)", "Last Hidden", 94.9, None),
    ("Feature-based approach (BERT-BASE)", "Weighted Sum Last Four Hidden", 95.9, None),
    ("Feature-based approach (BERT-BASE)", "Concat Last Four Hidden", 96.1, None),
    ("Feature-based approach (BERT-BASE)", "Weighted Sum All 12 Layers", 95.5, None),
]
PAPER_TABLE7_SETUP = (
    "These contextual embeddings are used as input to a randomly initialized two-layer "
    "768-dimensional BiLSTM before the classification layer."
)
PAPER_TABLE7_READING = (
    "The best performing method concatenates the token representations from the top four hidden "
    "layers of the pre-trained Transformer, which is only 0.3 F1 behind fine-tuning the entire model."
)


def paper_dev_f1(name: str) -> float | None:
    """The paper's Dev F1 for a row name; "Weighted Sum All 6 Layers" (an L-layer encoder's row)
    -> its "Weighted Sum All 12 Layers"; None for a name the paper has no row for."""
    if name.startswith("Weighted Sum All"):
        name = "Weighted Sum All 12 Layers"
    return next((dev for _, system, dev, _ in PAPER_TABLE7 if system == name), None)


@dataclass
class Pattern:
    """One pattern of the paper's Table 7, checked in measured rows."""

    key: str  # "best", "concat > last", "second-to-last > last", "context > embeddings", "features ~ fine-tuning"
    holds: bool | None  # True / False; None when the paired interval cannot tell
    estimate: float  # the measured F1 difference (a fraction): the first row named minus the second
    # ("best": Concat Last Four Hidden minus the best other row; "features ~ fine-tuning": fine-tuning
    # minus the best feature row)
    low: float  # its paired 95% interval
    high: float
    text: str  # one sentence, with the paper's numbers beside the measured ones

    @classmethod
    def of(cls, key: str, holds: bool | None, d: Interval, text: str) -> Pattern:
        return cls(key, holds, d.estimate, d.low, d.high, text)


BEATS = {True: "beats", False: "falls behind", None: "is not clearly apart from"}  # by _verdict


def _verdict(d: Interval) -> bool | None:
    return True if d.low > 0 else False if d.high < 0 else None


def _pts(x: float) -> str:
    """An F1 difference in points: 0.1234 -> "+12.3"."""
    return f"{100 * x:+.1f}"


def _ci(d: Interval) -> str:
    return f"paired 95% interval {_pts(d.low)} to {_pts(d.high)}"


def _best_pattern(rows: Sequence[FeatureRow], concat: FeatureRow, gold) -> Pattern:
    """Is Concat Last Four Hidden the best row? Against the best of the others, paired."""
    best = max(rows, key=lambda r: r.f1)
    rival = max((r for r in rows if r is not concat), key=lambda r: r.f1)  # the best of the others
    d = paired_difference(gold, concat.predictions, rival.predictions)
    holds = _verdict(d) if best is concat else (False if d.high < 0 else None)
    ranking = " > ".join(f"{r.name} {100 * r.f1:.1f}" for r in sorted(rows, key=lambda r: -r.f1))
    return Pattern.of(
        "best",
        holds,
        d,
        f"Best feature row: {best.name}; Concat Last Four Hidden against the best other row ({rival.name}): "
        f"{_pts(d.estimate)} points ({_ci(d)}); ranking {ranking} (paper: Concat Last Four Hidden best, 96.1 "
        "against 95.9).",
    )


def _beats_last_pattern(key: str, row: FeatureRow, last: FeatureRow, gold, paper: str) -> Pattern:
    """Does `row` beat Last Hidden? `paper`: the paper's numbers for the same comparison."""
    d = paired_difference(gold, row.predictions, last.predictions)
    text = f"{row.name} {BEATS[_verdict(d)]} Last Hidden: {_pts(d.estimate)} points ({_ci(d)}; paper: {paper})."
    return Pattern.of(key, _verdict(d), d, text)


def _context_pattern(rows: Sequence[FeatureRow], emb: FeatureRow, gold) -> Pattern:
    """Does the lowest contextual row still beat the context-free Embeddings?"""
    lowest = min((r for r in rows if r is not emb), key=lambda r: r.f1)
    d = paired_difference(gold, lowest.predictions, emb.predictions)
    return Pattern.of(
        "context > embeddings",
        _verdict(d),
        d,
        f"The lowest contextual row, {lowest.name} ({100 * lowest.f1:.1f}), {BEATS[_verdict(d)]} the context-free "
        f"Embeddings ({100 * emb.f1:.1f}): {_pts(d.estimate)} points ({_ci(d)}; paper: every contextual row above "
        "Embeddings, the lowest, Last Hidden, by +3.9).",
    )


def _finetuning_pattern(rows: Sequence[FeatureRow], gold, finetuned, close: float) -> Pattern:
    """Is the best feature row within `close` F1 of the fine-tuned tagger?"""
    best = max(rows, key=lambda r: r.f1)
    d = paired_difference(gold, finetuned, best.predictions)
    holds = True if d.high < close else False if d.low > close else None
    f1 = entity_scores(gold, finetuned).f1
    word = {True: "close to", False: "clearly behind", None: "perhaps close to"}[holds]
    return Pattern.of(
        "features ~ fine-tuning",
        holds,
        d,
        f"The best feature row ({best.name}, {100 * best.f1:.1f}) is {word} fine-tuning ({100 * f1:.1f}): "
        f"fine-tuning {_pts(d.estimate)} points ahead ({_ci(d)}; paper: 96.4 against 96.1, features 0.3 behind).",
    )


def table7_patterns(
    rows: Sequence[FeatureRow],
    gold: Sequence[Sequence[str]],
    finetuned: Sequence[Sequence[str]] | None = None,
    close: float = 0.01,
) -> list[Pattern]:
    """Which of the paper's Table 7 patterns hold in rows from feature_based_rows (the six choices),
    each difference with a paired 95% interval (paired_difference: the same sentences for both):

      best                   Concat Last Four Hidden is the best feature row (paper: 96.1, next 95.9)
      concat > last          it beats Last Hidden (paper: +1.2)
      second-to-last > last  Second-to-Last Hidden beats Last Hidden (paper: +0.7)
      context > embeddings   every contextual row beats the context-free Embeddings (paper: the
                             lowest contextual row, Last Hidden, 3.9 above)
      features ~ fine-tuning with `finetuned` (a fine-tuned tagger's tags on the same sentences):
                             the best feature row is within `close` F1 of fine-tuning (paper: 0.3
                             behind); holds when the whole interval of (fine-tuning - best) lies
                             below `close`, fails when it lies above

    holds is None where the interval includes 0 (for the last: includes `close`)."""
    by_name = {r.name: r for r in rows}
    need = ["Embeddings", "Second-to-Last Hidden", "Last Hidden", "Concat Last Four Hidden"]
    missing = [n for n in need if n not in by_name]
    if missing:
        raise ValueError(f"table7_patterns: rows {missing} are missing (pass all of feature_based_rows' rows)")
    concat, last = by_name["Concat Last Four Hidden"], by_name["Last Hidden"]
    second, emb = by_name["Second-to-Last Hidden"], by_name["Embeddings"]
    out = [
        _best_pattern(rows, concat, gold),
        _beats_last_pattern("concat > last", concat, last, gold, "96.1 vs 94.9, +1.2"),
        _beats_last_pattern("second-to-last > last", second, last, gold, "95.6 vs 94.9, +0.7"),
        _context_pattern(rows, emb, gold),
    ]
    if finetuned is not None:
        out.append(_finetuning_pattern(rows, gold, finetuned, close))
    return out
