"""What each layer knows: a linear probe (logistic regression) on the frozen vectors of every
layer, against two baselines (each word's commonest tag; the same probe on random weights).

    from lab.inspect import probing
    data = probing.ud_pos_data()                      # UD EWT: train on dev, test on test
    result = probing.probe_layers(model, tok, *data.train, *data.test, baselines=True)
    result.accuracy, result.low, result.high          # per layer 0..L, Wilson 95% intervals

`explore.probe_layers` is this module's probe_layers; probe_snapshots probes every checkpoint of
a run. docs/inside-bert.md says how a probe works and why the two baselines;
`python -m benchmarks.probing` prints the table there.
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from lab.checkpoint import load
from lab.data.datasets import data_dir
from lab.data.tagged_files import read_tagged
from lab.files import REPOSITORY, has_tokenizer_files
from lab.inspect.features import WordFeatures, cache_word_features, torch_threads
from lab.model import BertModel
from lab.run_files import checkpoints
from lab.tokenizer import Tokenizer

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile
UD_DIR = "ud-ewt"
UD_TRAIN = "en_ewt-ud-dev.conllu"  # no train split on these machines: the probe trains on dev
UD_TEST = "en_ewt-ud-test.conllu"
SPLIT_NOTE = "trained on UD EWT dev, scored on UD EWT test (no train split here)"


# ----------------------------------------------------------------------------------------------
# 1. Numbers: an accuracy with its interval, the majority baseline
# ----------------------------------------------------------------------------------------------


# Worked example: for k right of n, p = k/n, z = 1.96: centre (p + z^2/2n) / (1 + z^2/n),
# half-width z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n). 90 of 100 -> [0.826, 0.945] (the normal
# approximation, [0.841, 0.959], is off-centre near 1). It treats the test words as independent
# draws; words of one sentence are not quite, so the interval is a little narrow.
def wilson_interval(correct: int, total: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion correct/total (see the docstring)."""
    if total <= 0:
        raise ValueError("wilson_interval: no test words (total must be > 0)")
    if not 0 <= correct <= total:
        raise ValueError(f"wilson_interval: correct must lie in 0..{total}, got {correct}")
    p, n = correct / total, total
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if correct == 0 else max(0.0, centre - half)  # exact at the ends (rounding gives 1 - 1e-16)
    high = 1.0 if correct == total else min(1.0, centre + half)
    return low, high


@dataclass
class Accuracy:
    """correct of total test words, with a Wilson 95% interval."""

    accuracy: float
    low: float
    high: float
    correct: int
    total: int

    @classmethod
    def of(cls, correct: int, total: int) -> Accuracy:
        low, high = wilson_interval(correct, total)
        return cls(correct / total, low, high, int(correct), int(total))


def _flat(tags: Sequence[Sequence[str]]) -> list[str]:
    return [t for sentence in tags for t in sentence]


def _commonest(counts: Counter) -> str:
    """The most frequent key; a tie goes to the first in sorted order (deterministic)."""
    return min(counts, key=lambda k: (-counts[k], k))


# Worked example: the majority baseline
#     training   the/DET dog/NOUN runs/VERB . the/DET runs/NOUN
#     counts     the: DET 2; dog: NOUN 1; runs: VERB 1, NOUN 1 (a tie: the first tag in sorted
#                order, NOUN); overall NOUN 2, DET 2, VERB 1 -> unknown words get DET
#     test       the/DET runs/VERB cat/NOUN  -> predicted DET NOUN DET -> 1 of 3 right
def majority_tagger(sentences: Sequence[Sequence[str]], tags: Sequence[Sequence[str]]) -> Callable[[str], str]:
    """word -> its commonest training tag; unknown words -> the commonest tag overall."""
    by_word: dict[str, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    for words, ts in zip(sentences, tags):
        if len(words) != len(ts):
            raise ValueError(f"majority_baseline: a sentence of {len(words)} words has {len(ts)} tags")
        for w, t in zip(words, ts):
            by_word[w][t] += 1
            overall[t] += 1
    if not overall:
        raise ValueError("majority_baseline: no training words")
    table = {w: _commonest(c) for w, c in by_word.items()}
    fallback = _commonest(overall)
    return lambda word: table.get(word, fallback)


def majority_baseline(
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[str]],
    test_sentences: Sequence[Sequence[str]],
    test_tags: Sequence[Sequence[str]],
) -> Accuracy:
    """Tag each test word with its word form's commonest tag in the training part (exact form,
    case kept; ties: the first tag in sorted order); a word never seen in training gets the
    commonest training tag overall. -> Accuracy with its Wilson 95% interval."""
    guess = majority_tagger(sentences, tags)
    gold, words = _flat(test_tags), _flat(test_sentences)
    if len(gold) != len(words):
        raise ValueError("majority_baseline: the test sentences and tags differ in length")
    return Accuracy.of(sum(guess(w) == t for w, t in zip(words, gold)), len(gold))


# ----------------------------------------------------------------------------------------------
# 2. The probe
# ----------------------------------------------------------------------------------------------


@dataclass
class ProbeConfig:
    l2: float = 1e-3  # L2 penalty on the weights (mean loss + l2 * sum of squared weights)
    max_iter: int = 100  # L-BFGS iterations (full batch)
    threads: int = 1  # torch threads while fitting
    seed: int = 0  # the random-weights control encoder's initialisation


def fit_probe(
    x: torch.Tensor, y: torch.Tensor, num_labels: int, config: ProbeConfig | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A multinomial logistic regression on (N, H) vectors and (N,) label ids, fitted by
    full-batch L-BFGS -> (weight (H, K), bias (K,), mean (H,), scale (H,)) in fp32; predict with
    ((x - mean) / scale) @ weight + bias."""
    config = config or ProbeConfig()
    x = x.float()
    mean, scale = x.mean(0), x.std(0).clamp_min(1e-6)
    z = (x - mean) / scale  # (N, H) standardised
    weight = torch.zeros(x.shape[1], num_labels, requires_grad=True)
    bias = torch.zeros(num_labels, requires_grad=True)
    opt = torch.optim.LBFGS(
        [weight, bias], lr=1.0, max_iter=config.max_iter, history_size=20, line_search_fn="strong_wolfe"
    )

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(z @ weight + bias, y) + config.l2 * weight.square().sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    return weight.detach(), bias.detach(), mean, scale


def _predict(params, x: torch.Tensor) -> torch.Tensor:
    weight, bias, mean, scale = params
    return (((x.float() - mean) / scale) @ weight + bias).argmax(-1)


@dataclass
class ProbeResult:
    """Accuracy of a linear probe on each layer (0 = the embeddings .. L), with the baselines."""

    name: str  # the model, as the figure's legend says it
    layers: list[int]  # 0..L
    accuracy: list[float]  # per layer: the share of test words tagged right
    low: list[float]  # Wilson 95% interval per layer
    high: list[float]
    correct: list[int]
    total: int  # test words
    train_words: int
    train_sentences: int
    test_sentences: int
    labels: list[str]  # the tag set, in the probe's order
    seconds: list[float]  # per layer: the probe's fit + prediction
    encode_seconds: float  # the frozen encoder over training and test words (once)
    split: str = SPLIT_NOTE  # where the training and test words come from
    majority: Accuracy | None = None  # the word-type majority baseline (baselines=True)
    control: ProbeResult | None = None  # the same probe on a random-weights encoder (baselines=True)
    step: int | None = None  # the pre-training step, for a snapshot

    @property
    def best_layer(self) -> int:
        return self.layers[int(np.argmax(self.accuracy))]

    @property
    def best(self) -> float:
        return max(self.accuracy)

    def layer(self, j: int) -> Accuracy:
        k = self.layers.index(j)
        return Accuracy(self.accuracy[k], self.low[k], self.high[k], self.correct[k], self.total)

    def selectivity(self) -> list[float] | None:
        """Per layer: this probe's accuracy minus the random-weights control's (None without it)."""
        if self.control is None:
            return None
        return [a - c for a, c in zip(self.accuracy, self.control.accuracy)]

    def summary(self) -> str:
        """One line: best layer with its interval, the baselines, the split."""
        text = (
            f"{self.name}: best layer {self.best_layer}, accuracy {self.best:.3f} "
            f"[{self.layer(self.best_layer).low:.3f}, {self.layer(self.best_layer).high:.3f}]"
        )
        if self.control is not None:
            c = self.control
            text += f"; random-weights encoder {c.best:.3f} (layer {c.best_layer})"
        if self.majority is not None:
            text += f"; majority tag per word {self.majority.accuracy:.3f}"
        return text + f" ({self.total:,} test words; {self.split})"


def _sentence_pairs(sentences, tags, what: str) -> tuple[list[list[str]], list[list[str]]]:
    sentences, tags = [list(s) for s in sentences], [list(t) for t in tags]
    if len(sentences) != len(tags):
        raise ValueError(f"probe_layers: {len(sentences)} {what} sentences but {len(tags)} tag sequences")
    for words, ts in zip(sentences, tags):
        if len(words) != len(ts):
            raise ValueError(f"probe_layers: a {what} sentence of {len(words)} words has {len(ts)} tags")
    if not sentences or not any(sentences):
        raise ValueError(f"probe_layers: no {what} words")
    return sentences, tags


def _check_tokenizer(tokenizer) -> None:
    if not hasattr(getattr(tokenizer, "backend", None), "encode_batch"):
        raise ValueError(
            f"this model's tokenizer ({type(tokenizer).__name__}) cannot split given words into word pieces "
            "(a probe reads each word's first piece): load the model with the lab's WordPiece tokenizer (vocab.txt)"
        )


def cache_features(model, tokenizer, sentences, tags, **kwargs) -> WordFeatures:
    """cache_word_features on (words, tags) pairs, with a clear message when the tokenizer
    cannot split words."""
    _check_tokenizer(tokenizer)
    return cache_word_features(model, tokenizer, list(zip(sentences, tags)), **kwargs)


def probe_features(
    train: WordFeatures,
    test: WordFeatures,
    labels: Sequence[str] | None = None,
    name: str = "model",
    config: ProbeConfig | None = None,
) -> ProbeResult:
    """A probe per layer on cached features (training and test words from the same encoder)."""
    config = config or ProbeConfig()
    if train.tags is None or test.tags is None:
        raise ValueError("probe_features: both caches need gold tags")
    if (train.num_layers, train.hidden_size) != (test.num_layers, test.hidden_size):
        raise ValueError("probe_features: the training and test caches come from different encoders")
    labels = list(labels) if labels is not None else sorted(set(_flat(train.tags)) | set(_flat(test.tags)))
    label2id = {t: i for i, t in enumerate(labels)}
    y_train = torch.tensor([label2id[t] for t in _flat(train.tags)])
    y_test = torch.tensor([label2id[t] for t in _flat(test.tags)])
    accuracy, low, high, correct, seconds = [], [], [], [], []
    with torch_threads(config.threads):
        for j in range(train.num_layers + 1):
            start = time.perf_counter()
            params = fit_probe(train.vectors[:, j], y_train, len(labels), config)
            right = int((_predict(params, test.vectors[:, j]) == y_test).sum())
            seconds.append(time.perf_counter() - start)
            a = Accuracy.of(right, len(y_test))
            accuracy.append(a.accuracy)
            low.append(a.low)
            high.append(a.high)
            correct.append(right)
    return ProbeResult(
        name=name,
        layers=list(range(train.num_layers + 1)),
        accuracy=accuracy,
        low=low,
        high=high,
        correct=correct,
        total=len(y_test),
        train_words=len(y_train),
        train_sentences=train.num_sentences,
        test_sentences=test.num_sentences,
        labels=labels,
        seconds=seconds,
        encode_seconds=train.seconds + test.seconds,
    )


def random_encoder(model, seed: int = 0):
    """An encoder of the same shape (config) as `model`'s with random weights: the lab's
    initialisation (normal, std initializer_range; LayerNorm 1 and 0), seeded."""

    config = getattr(model, "bert", model).config
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        encoder = BertModel(config)
    return encoder.eval()


def probe_layers(
    model,
    tokenizer,
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[str]],
    test_sentences: Sequence[Sequence[str]] | None = None,
    test_tags: Sequence[Sequence[str]] | None = None,
    *,
    baselines: bool = False,
    name: str = "model",
    labels: Sequence[str] | None = None,
    split: str | None = None,
    config: ProbeConfig | None = None,
    max_seq_length: int = 128,
    progress: Callable[[float, str], None] | None = None,
) -> ProbeResult:
    """Fit a linear probe on the frozen hidden states of each layer 0..L (first sub-token of each
    word) on (sentences, tags) and score it on (test_sentences, test_tags): accuracy per layer
    with a Wilson 95% interval.

    Without a test part, every fifth sentence of `sentences` (the 5th, 10th, ...) is held out
    for testing and the rest trains (result.split says so). baselines=True adds result.majority
    (majority_baseline) and result.control (the same probe on random_encoder(model)). progress:
    called as progress(fraction, what) before each stage (e.g. a gr.Progress)."""
    config = config or ProbeConfig()
    sentences, tags = _sentence_pairs(sentences, tags, "training")
    if test_sentences is None:
        if test_tags is not None:
            raise ValueError("probe_layers: test_tags given without test_sentences")
        if len(sentences) < 2:
            raise ValueError("probe_layers: give test sentences, or at least 2 sentences to split")
        held = set(range(4, len(sentences), 5)) or {len(sentences) - 1}
        test_sentences = [s for i, s in enumerate(sentences) if i in held]
        test_tags = [t for i, t in enumerate(tags) if i in held]
        sentences = [s for i, s in enumerate(sentences) if i not in held]
        tags = [t for i, t in enumerate(tags) if i not in held]
        split = split or "trained on 4 of every 5 sentences given, scored on every 5th"
    test_sentences, test_tags = _sentence_pairs(test_sentences, test_tags or [], "test")
    split = split or "trained on the training sentences given, scored on the test sentences given"
    labels = list(labels) if labels is not None else sorted(set(_flat(tags)) | set(_flat(test_tags)))
    say = progress or (lambda *_: None)
    stages = 2 if baselines else 1
    # windows no longer than the model reads (a model of 64 positions: 64-token windows, stride 32)
    max_seq_length = min(max_seq_length, getattr(model, "bert", model).config.max_position_embeddings)
    doc_stride = min(64, max_seq_length // 2)

    def run(encoder, label, k):
        say(k / stages, f"{label}: encoding {sum(map(len, sentences)) + sum(map(len, test_sentences)):,} words")
        window = dict(max_seq_length=max_seq_length, doc_stride=doc_stride)
        train_f = cache_features(encoder, tokenizer, sentences, tags, **window)
        test_f = cache_features(encoder, tokenizer, test_sentences, test_tags, **window)
        say((k + 0.5) / stages, f"{label}: fitting a probe on each of {train_f.num_layers + 1} layers")
        result = probe_features(train_f, test_f, labels, label, config)
        result.split = split
        return result

    result = run(model, name, 0)
    if baselines:
        result.control = run(random_encoder(model, config.seed), f"{name}, random weights", 1)
        result.majority = majority_baseline(sentences, tags, test_sentences, test_tags)
    say(1.0, "done")
    return result


# ----------------------------------------------------------------------------------------------
# 3. The data (UD English-EWT's gold UPOS) and a run's snapshots
# ----------------------------------------------------------------------------------------------


@dataclass
class PosData:
    """Words and gold UPOS tags: `train` and `test` are (sentences, tags) pairs."""

    train: tuple[list[list[str]], list[list[str]]]
    test: tuple[list[list[str]], list[list[str]]]
    labels: list[str]
    split: str  # where each part comes from, and which subset
    source: str = "UD English-EWT"  # the files read: the shared data folder's, or the lab's invented sentences

    @property
    def train_words(self) -> int:
        return sum(map(len, self.train[0]))

    @property
    def test_words(self) -> int:
        return sum(map(len, self.test[0]))


def _first_words(sentences, max_words: int | None):
    """Whole sentences in file order until max_words words (at least one sentence); all when None."""
    if max_words is None:
        return list(sentences)
    if max_words < 1:
        raise ValueError(f"max words must be at least 1, got {max_words}")
    out, n = [], 0
    for s in sentences:
        if out and n + len(s.words) > max_words:
            break
        out.append(s)
        n += len(s.words)
    return out


def ud_data_missing() -> str:
    """ "" when UD English-EWT's dev and test files are found, else what is missing and where to put it."""

    folder = data_dir()
    if folder is None:
        return (
            "no data folder: the probe needs UD English-EWT (ud-ewt/en_ewt-ud-dev.conllu and en_ewt-ud-test.conllu) "
            "in ../shared/data beside the repository, or in the folder named by BERT_LAB_DATA"
        )
    missing = [name for name in (UD_TRAIN, UD_TEST) if not (folder / UD_DIR / name).is_file()]
    if missing:
        return (
            f"the data folder has no {UD_DIR}/{' or '.join(missing)}: the probe needs UD English-EWT's dev and test "
            f"files (CoNLL-U) there"
        )
    return ""


def _pos_parts(parts, source: str) -> PosData:
    """PosData from [(chosen training sentences, all of its file), (chosen test sentences, all)]:
    the split says which sentences of each file, and how many words."""

    def part(name, chosen, n):  # "dev (all 25,147 words)" or "dev (first 518 sentences, 7,984 words)"
        count = sum(len(s.words) for s in chosen)
        return (
            f"{name} (all {count:,} words)"
            if len(chosen) == n
            else f"{name} (first {len(chosen):,} sentences, {count:,} words)"
        )

    (train, n_tr), (test, n_te) = parts
    split = f"trained on UD EWT {part('dev', train, n_tr)}, scored on {part('test', test, n_te)}; no train split here"
    trw, trt = [list(s.words) for s in train], [list(s.tags) for s in train]
    tew, tet = [list(s.words) for s in test], [list(s.tags) for s in test]
    labels = sorted(set(_flat(trt)) | set(_flat(tet)))
    return PosData((trw, trt), (tew, tet), labels, split, source)


def _ud_folder(folder=None) -> Path:
    """A ud-ewt folder: `folder`, else the shared data's (FileNotFoundError naming what is missing)."""
    if folder is not None:
        return Path(folder)
    missing = ud_data_missing()
    if missing:
        raise FileNotFoundError(missing)
    return data_dir() / UD_DIR


def ud_pos_data(max_train_words: int | None = None, max_test_words: int | None = None, folder=None) -> PosData:
    """UD English-EWT's gold UPOS (17 tags): train on en_ewt-ud-dev.conllu, test on
    en_ewt-ud-test.conllu (no train split is here). max_*_words: the first whole sentences of each
    file up to that many words (None: all, about 25k each). folder: a ud-ewt folder (default:
    lab.data.datasets.data_dir()/ud-ewt); FileNotFoundError naming what is missing."""

    folder = _ud_folder(folder)
    parts = []
    for name, limit in ((UD_TRAIN, max_train_words), (UD_TEST, max_test_words)):
        data = read_tagged(folder / name, format="conllu")
        parts.append((_first_words(data.sentences, limit), len(data)))
    return _pos_parts(parts, "UD English-EWT in the shared data folder")


def probe_data(max_train_words: int | None = None, max_test_words: int | None = None) -> PosData:
    """What a probe reads: UD English-EWT from the shared data folder when it is there, else the
    lab's own invented sentences (pos_data; data.source says which, data.split how many)."""
    data, real = pos_data(max_train_words, max_test_words)
    return data if real else replace(data, source=SAMPLE_SOURCE)


def probe_snapshots(
    run_dir,
    sentences,
    tags,
    test_sentences,
    test_tags,
    *,
    steps: Sequence[int] | None = None,
    labels: Sequence[str] | None = None,
    split: str | None = None,
    config: ProbeConfig | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> list[ProbeResult]:
    """probe_layers for each checkpoint of a pre-training run (checkpoints/step-N), in step order
    (steps: only these), each named "step N". Does syntax arrive early in pre-training?"""

    run_dir = Path(run_dir)
    found = checkpoints(run_dir) if run_dir.is_dir() else []
    if steps is not None:
        found = [(s, d) for s, d in found if s in set(steps)]
    if not found:
        raise ValueError(f"{run_dir.name} keeps no training snapshots (checkpoints/step-N/) to probe")
    tokenizer = Tokenizer.load(run_dir) if has_tokenizer_files(run_dir) else None
    results = []
    for k, (step, directory) in enumerate(found):
        model, own = load(directory)

        def say(fraction, what, k=k):
            if progress:
                progress((k + fraction) / len(found), what)

        result = probe_layers(
            model,
            tokenizer or own,
            sentences,
            tags,
            test_sentences,
            test_tags,
            name=f"step {step:,}",
            labels=labels,
            split=split,
            config=config,
            progress=say,
        )
        result.step = step
        results.append(result)
    return results


SAMPLES = REPOSITORY / "notebooks" / "data"  # tagging_train.conllu, tagging_test.conllu
# The shared data is not the repository's to ship: without it a probe reads these invented sentences
SAMPLE_SOURCE = "the small set of invented sentences that ships with the lab (notebooks/data)"


def pos_data(
    max_train_words: int | None = None, max_test_words: int | None = None, samples=SAMPLES
) -> tuple[PosData, bool]:
    """Words and gold UPOS tags to probe -> (data, real): UD English-EWT (train on dev, test on
    test, the first whole sentences up to max_*_words each; real=True) when the shared data has
    it, else every sentence of samples/tagging_train.conllu and tagging_test.conllu (real=False)."""
    if not ud_data_missing():
        return ud_pos_data(max_train_words, max_test_words), True
    samples = Path(samples)
    parts = [read_tagged(samples / f"tagging_{name}.conllu", format="conllu") for name in ("train", "test")]
    (train_words, train_tags), (test_words, test_tags) = [
        ([list(s.words) for s in d.sentences], [list(s.tags) for s in d.sentences]) for d in parts
    ]
    labels = sorted({t for tags in train_tags + test_tags for t in tags})
    split = (
        f"trained on {len(train_words)} invented sentences (tagging_train.conllu), scored on {len(test_words)} "
        "others (tagging_test.conllu): no UD English-EWT here, an illustration only"
    )
    return PosData((train_words, train_tags), (test_words, test_tags), labels, split), False
