"""Fine-tuning: one extra output layer on a pre-trained BERT (Devlin et al., Section 4).

    python -m lab finetune-cls --model runs/classroom --train sst2/train.tsv --dev sst2/dev.tsv --out runs/sst2
    python -m lab finetune-qa --model runs/classroom --data squad --out runs/squad
    python -m lab finetune-tag --model models/minilm-squad --train ner/dev.iob2 --eval ner/test.iob2 --out runs/ner

Three tasks, each an objective for the one training loop (lab.training.train.train): sequence
classification ([CLS] -> pooler -> dropout -> linear; `--mode features` freezes the encoder, the
paper's feature-based approach of Section 5.3), extractive question answering (every token ->
start / end logits; lab.data.squad builds the windows and decodes the best span) and token tagging
(every word's first sub-token -> dropout -> linear; lab.data's tagging modules read, window and score).
"""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from lab.checkpoint import load, qa_lengths, task_settings
from lab.config import BertConfig, setting
from lab.data.batch import Batch, pad_rows, step_indices
from lab.data.datasets import resolve_corpus
from lab.data.squad import collate_features, load_squad, make_features, split_by_article
from lab.data.squad_metrics import evaluate
from lab.data.tag_decoding import DECODINGS, decode_tags
from lab.data.tag_metrics import bootstrap_interval, entity_scores, token_accuracy
from lab.data.tagged_files import TaggedData, label_list, read_tagged
from lab.data.tagging import collate_tag_features, make_tag_features
from lab.device import Dist, init_distributed, pick_device
from lab.files import TASK_CONFIG_NAME
from lab.hub import resolve_model
from lab.inference import predict_answers, tag_logits
from lab.model import BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification
from lab.modernbert import load_config
from lab.tokenizer import Tokenizer
from lab.training.runs import refuse_existing_run, write_json
from lab.training.train import TrainConfig, train

# The loop's settings for fine-tuning (BERT's paper: lr 5e-5, batch 32, 10% warm-up); evaluation
# once per epoch (eval_every 0 here: set per run by epoch_schedule)
FINETUNE_TRAINING = TrainConfig(lr=5e-5, batch_size=32, warmup=0.1, eval_every=0, log_every=20)


@dataclass
class ClassificationConfig:
    model: str = setting(help="HF-layout BERT directory (a run, a bundled model, bert-base-uncased...)")
    train: str = setting(help="TSV/CSV with a header: sentence<TAB>label, or sentence1, sentence2, label")
    dev: str = setting(help="evaluation file, same format")
    mode: str = setting("finetune", "finetune: every parameter trains; features: the encoder is frozen")
    feature_layers: int = setting(1, "features mode: 1 = pooled [CLS]; N = [CLS] of the last N layers, concatenated")
    epochs: float = setting(2.0, "passes over the training rows (unless --steps is given)")
    max_seq_length: int = setting(128, "tokens per example, [CLS] text [SEP]")
    limit: int | None = setting(None, "use only the first N training rows")
    random_init: bool = setting(False, "same shape, random weights (the no-pre-training baseline)")
    dropout: float | None = setting(0.1, "dropout while fine-tuning (BERT: 0.1); None keeps the model's")


@dataclass
class QAConfig:
    model: str = setting(help="HF-layout BERT directory")
    data: str = setting("squad-v1.1", "SQuAD JSON (or .zip), a folder, or the catalog name squad-v1.1")
    train_articles: int = setting(40, "the first N articles train, the rest evaluate")
    epochs: float = setting(2.0, "passes over the training windows (unless --steps is given)")
    max_seq_length: int = setting(384, "tokens per window, [CLS] question [SEP] context [SEP]")
    doc_stride: int = setting(128, "context tokens between the starts of two windows")
    max_query_length: int = setting(64, "the question is cut to this many tokens")
    eval_limit: int | None = setting(None, "evaluate only the first N held-out questions")
    random_init: bool = setting(False, "same shape, random weights")
    dropout: float | None = setting(0.1, "dropout while fine-tuning (BERT: 0.1); None keeps the model's")


@dataclass
class TaggingConfig:
    model: str = setting(help="HF-layout BERT directory")
    train: str = setting(help="tagged sentences: IOB2 (UNER's index<TAB>token<TAB>tag, or token ... tag) or CoNLL-U")
    eval: str = setting(help="evaluation file, same format")
    format: str = setting("auto", "auto (read from the file), uner, conll or conllu")
    mode: str = setting("finetune", "finetune: every parameter trains; features: the encoder is frozen")
    epochs: float = setting(3.0, "passes over the training windows (unless --steps is given)")
    max_seq_length: int = setting(128, "tokens per window, [CLS] word pieces [SEP]")
    doc_stride: int = setting(64, "pieces between the starts of two windows of a long sentence")
    limit: int | None = setting(None, "use only the first N training sentences")
    random_init: bool = setting(False, "same shape, random weights")
    dropout: float | None = setting(0.1, "dropout while fine-tuning (BERT: 0.1); None keeps the model's")
    decoding: str = setting(
        "argmax",
        "argmax: each word's most probable tag (the paper's); viterbi: the most probable tag sequence "
        "IOB2 allows (no I-X after O or B-Y); kept in task_config.json for eval and the dashboard",
    )


# ----------------------------------------------------------------------------------------
# Sequence classification data
# ----------------------------------------------------------------------------------------
@dataclass
class ClassificationData:
    texts: list[str]
    pairs: list[str] | None
    labels: list[str]
    source: str

    def __len__(self):
        return len(self.texts)


TEXT_COLUMNS = [
    ("sentence",),
    ("sentence1", "sentence2"),
    ("question", "sentence"),
    ("text",),
    ("premise", "hypothesis"),
    ("text_a", "text_b"),
]


def read_classification(
    path, text_columns: tuple[str, ...] | None = None, label_column: str = "label", limit: int | None = None
) -> ClassificationData:
    """A TSV/CSV file with a header: GLUE SST-2 (`sentence<TAB>label`), pairs (`sentence1`,
    `sentence2`, `label`) and the like. Labels may be integers or names.

    A row with a missing column is an error naming the file and the line.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no data file at {path}")
    delimiter = "," if path.suffix.lower() == ".csv" else "\t"
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter=delimiter, quoting=csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ValueError(f"{path} is empty (expected a header line such as 'sentence\\tlabel')") from None
        # the header's pair of columns if it has one (GLUE QNLI: question, sentence, label), else one column
        found = [c for c in TEXT_COLUMNS if all(x in header for x in c)]
        cols = text_columns or (max(found, key=len) if found else None)
        if cols is None or label_column not in header:
            raise ValueError(
                f"{path}: the header {header} needs a '{label_column}' column and text columns "
                f"such as 'sentence' or 'sentence1','sentence2'"
            )
        idx = [header.index(c) for c in cols]
        lab = header.index(label_column)
        texts, pairs, labels = [], [] if len(cols) == 2 else None, []
        for line, row in enumerate(reader, start=2):
            if not row or all(not x.strip() for x in row):
                continue
            if len(row) <= max(idx + [lab]):
                raise ValueError(
                    f"{path}, line {line}: {len(row)} column(s), expected {len(header)} ({', '.join(header)})"
                )
            if not row[idx[0]].strip() or not row[lab].strip():
                raise ValueError(f"{path}, line {line}: empty text or label")
            texts.append(row[idx[0]])
            if pairs is not None:
                pairs.append(row[idx[1]])
            labels.append(row[lab].strip())
            if limit and len(texts) >= limit:
                break
    if not texts:
        raise ValueError(f"{path} has a header but no rows")
    return ClassificationData(texts, pairs, labels, str(path))


def label_names(labels: list[str]) -> list[str]:
    """Sorted label names; integers sort numerically so that '0','1' keep their ids."""
    names = sorted(set(labels))
    return sorted(names, key=int) if all(n.lstrip("-").isdigit() for n in names) else names


@dataclass
class Encoded:
    input_ids: list[list[int]]
    token_type_ids: list[list[int]]
    labels: list[int]


def encode_classification(
    data: ClassificationData, tokenizer, label2id: dict[str, int], max_seq_length: int = 128
) -> Encoded:
    unknown = sorted(set(data.labels) - set(label2id))
    if unknown and all(l.isdigit() and int(l) < len(label2id) for l in data.labels):
        # integer labels (GLUE files) for a model whose labels have names: the integer is the id
        label2id = {str(i): i for i in range(len(label2id))}
        unknown = []
    if unknown:
        raise ValueError(f"{data.source}: labels {unknown[:5]} are not among the model's labels {list(label2id)}")
    out = Encoded([], [], [label2id[l] for l in data.labels])
    pairs = data.pairs or [None] * len(data)
    for text, pair in zip(data.texts, pairs):
        e = tokenizer.encode(text, pair, max_length=max_seq_length)
        out.input_ids.append(e.input_ids)
        out.token_type_ids.append(e.token_type_ids)
    return out


def classification_batch(enc: Encoded, rows: list[int], pad_id: int) -> Batch:
    """Rows of an encoded set -> a padded Batch with labels."""
    ids, mask = pad_rows([enc.input_ids[i] for i in rows], pad_id, pad_to_multiple_of=None)  # (B, T)
    types, _ = pad_rows([enc.token_type_ids[i] for i in rows], 0, pad_to_multiple_of=None)  # (B, T)
    return Batch(
        input_ids=ids, token_type_ids=types, attention_mask=mask, labels=torch.tensor([enc.labels[i] for i in rows])
    )


# ----------------------------------------------------------------------------------------
# The feature-based approach
# ----------------------------------------------------------------------------------------
def freeze_encoder(model) -> None:
    """Feature-based: the pre-trained encoder (embeddings, layers, pooler) stays as it is."""
    for p in model.bert.parameters():
        p.requires_grad_(False)


# ----------------------------------------------------------------------------------------
# Objectives
# ----------------------------------------------------------------------------------------
def this_ranks_rows(n: int, batch_size: int, step: int, seed: int, dist: Dist) -> list[int]:
    """The training rows this process reads at `step`. Under torchrun or accelerate the global
    batch (batch_size rows a process) is split between the processes, as in pre-training: with
    n = 64 rows, batch_size 8 and 2 processes, step 0 takes positions 0-15 of epoch 0's shuffled
    order, rank 0 reads positions 0-7 and rank 1 positions 8-15, and an epoch is 4 steps. A set
    smaller than one global batch wraps around instead of yielding no step."""
    g = batch_size * dist.world_size
    return step_indices(n, batch_size, step, seed, dist.rank, dist.world_size, drop_last=n >= g)


class ClassificationObjective:
    def __init__(
        self,
        train: Encoded,
        dev: Encoded,
        pad_id: int,
        batch_size: int,
        seed: int = 0,
        frozen: bool = False,
        dist: Dist | None = None,
    ):
        self.train_set, self.dev, self.pad_id, self.batch_size, self.seed = train, dev, pad_id, batch_size, seed
        self.frozen, self.dist = frozen, dist or Dist()

    def train_batch(self, index: int) -> Batch:
        rows = this_ranks_rows(len(self.train_set.labels), self.batch_size, index, self.seed, self.dist)
        return classification_batch(self.train_set, rows, self.pad_id)

    def loss(self, model, batch):
        if self.frozen:
            getattr(model, "module", model).bert.eval()  # a frozen encoder: no dropout either
        out = model(**batch)
        acc = (out.logits.argmax(-1) == batch.labels).float().mean()
        return out.loss, {"loss": out.loss.detach(), "acc": acc}

    def evaluate(self, model) -> dict[str, float]:
        return evaluate_classification(model, self.dev, self.pad_id)


@torch.no_grad()
def evaluate_classification(model, dev: Encoded, pad_id: int, batch_size: int = 64) -> dict[str, float]:
    """Accuracy, and F1 of label 1 when there are two labels (GLUE's convention)."""
    device = next(model.parameters()).device
    preds = []
    for i in range(0, len(dev.labels), batch_size):
        rows = list(range(i, min(i + batch_size, len(dev.labels))))
        b = classification_batch(dev, rows, pad_id)
        del b["labels"]
        preds += model(**b.to(device)).logits.argmax(-1).tolist()
    gold = dev.labels
    result = {"accuracy": sum(p == g for p, g in zip(preds, gold)) / len(gold)}
    if model.config.num_labels == 2:
        tp = sum(p == 1 and g == 1 for p, g in zip(preds, gold))
        fp = sum(p == 1 and g == 0 for p, g in zip(preds, gold))
        fn = sum(p == 0 and g == 1 for p, g in zip(preds, gold))
        result["f1"] = 2 * tp / max(1, 2 * tp + fp + fn)
    return result


class QAObjective:
    def __init__(
        self,
        features,
        dev_examples,
        tokenizer,
        batch_size: int,
        seed: int = 0,
        dist: Dist | None = None,
        **feature_args,
    ):
        self.features, self.dev, self.tokenizer = features, dev_examples, tokenizer
        self.batch_size, self.seed, self.dist, self.feature_args = batch_size, seed, dist or Dist(), feature_args

    def train_batch(self, index: int) -> Batch:
        rows = this_ranks_rows(len(self.features), self.batch_size, index, self.seed, self.dist)
        return collate_features([self.features[i] for i in rows], self.tokenizer.pad_token_id)

    def loss(self, model, batch):
        out = model(**batch)
        return out.loss, {"loss": out.loss.detach()}

    def evaluate(self, model) -> dict[str, float]:
        preds = predict_answers(model, self.tokenizer, self.dev, **self.feature_args)
        result = evaluate(self.dev, preds)
        return {"exact_match": result["exact_match"] / 100, "f1": result["f1"] / 100}


class TaggingObjective:
    """Windows of tagged sentences (lab.data.tagging.make_tag_features: each word's label on its first
    sub-token, -100 elsewhere); evaluation reads every word from its best window and scores
    entities (IOB2) or tags (accuracy)."""

    def __init__(
        self,
        features,
        eval_data: TaggedData,
        tokenizer,
        task: TaggingConfig,
        batch_size: int,
        seed: int = 0,
        dist: Dist | None = None,
    ):
        self.features, self.eval_data, self.tokenizer, self.task = features, eval_data, tokenizer, task
        self.batch_size, self.seed, self.frozen, self.dist = batch_size, seed, task.mode == "features", dist or Dist()

    def train_batch(self, index: int) -> Batch:
        rows = this_ranks_rows(len(self.features), self.batch_size, index, self.seed, self.dist)
        return collate_tag_features(
            [self.features[i] for i in rows], self.tokenizer.pad_token_id, max_length=self.task.max_seq_length
        )

    def loss(self, model, batch):
        if self.frozen:
            getattr(model, "module", model).bert.eval()  # a frozen encoder: no dropout either
        out = model(**batch)
        labelled = batch.labels != -100  # (B, T): first sub-tokens
        acc = (out.logits.argmax(-1)[labelled] == batch.labels[labelled]).float().mean()
        return out.loss, {"loss": out.loss.detach(), "acc": acc}

    def evaluate(self, model) -> dict[str, float]:
        return evaluate_tagging(
            model, self.tokenizer, self.eval_data, self.task.max_seq_length, self.task.doc_stride, self.task.decoding
        )


@torch.no_grad()
def evaluate_tagging(
    model,
    tokenizer,
    data: TaggedData,
    max_seq_length: int = 128,
    doc_stride: int = 64,
    decoding: str = "argmax",
    interval: bool = True,
) -> dict[str, float]:
    """IOB2 data: entity precision / recall / F1 (micro, and F1 per type), as conlleval counts
    them; other tags: accuracy. With a 95% bootstrap interval over sentences (f1_low, f1_high or
    accuracy_low, accuracy_high). decoding="viterbi" (lab.data.tag_decoding.decode_tags) also reports the
    argmax reading's F1 of the same logits (f1_argmax), to show what the constraint adds."""
    words = [s.words for s in data.sentences]
    limit = model.config.max_position_embeddings
    if max_seq_length > limit:
        raise ValueError(f"max_seq_length={max_seq_length} exceeds the model's {limit} positions")
    features = make_tag_features(words, tokenizer, None, max_seq_length, doc_stride)
    logits = tag_logits(model, features, tokenizer.pad_token_id)  # eval mode inside, then restored
    predicted = decode_tags(features, logits, model.config.id2label, decoding)
    gold, pred = [s.tags for s in data.sentences], [[w.tag for w in sentence] for sentence in predicted]
    if data.scheme == "iob2":
        scores = entity_scores(gold, pred)
        result = {"precision": scores.micro.precision, "recall": scores.micro.recall, "f1": scores.micro.f1}
        result |= {f"f1_{kind}": score.f1 for kind, score in sorted(scores.per_type.items())}
        if decoding != "argmax":
            argmax = decode_tags(features, logits, model.config.id2label, "argmax")
            result["f1_argmax"] = entity_scores(gold, [[w.tag for w in sentence] for sentence in argmax]).micro.f1
        metric = "f1"
    else:
        result, metric = {"accuracy": token_accuracy(gold, pred)}, "accuracy"
    if interval:
        ci = bootstrap_interval(gold, pred, metric=metric)
        result |= {f"{metric}_low": ci.low, f"{metric}_high": ci.high}
    return result


# ----------------------------------------------------------------------------------------
# The commands
# ----------------------------------------------------------------------------------------
def _start_model(
    model_dir, cls, random_init: bool, labels=None, dropout: float | None = 0.1, classifier_layers: int = 1, log=print
):
    """The pre-trained encoder with a new head (or a random model of the same shape).

    dropout: fine-tuning uses BERT's 0.1 even when pre-training ran without dropout (the lab's
    classroom recipe does); None keeps the checkpoint's values.
    """
    overrides = {}
    if dropout is not None:
        overrides |= {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout}
    if labels is not None:
        overrides |= {
            "id2label": dict(enumerate(labels)),
            "label2id": {l: i for i, l in enumerate(labels)},
            "classifier_layers": classifier_layers,
        }
    model_dir = resolve_model(model_dir, weights=not random_init)  # a Hub id -> its cached folder
    if random_init:
        cfg = BertConfig.from_dict({**load_config(model_dir).to_dict(), **overrides})
        model, tokenizer = cls(cfg), Tokenizer.load(model_dir)
        log(f"random initialisation with the shape of {model_dir}: {cfg.summary()}")
        return model, tokenizer
    model, tokenizer, report = load(model_dir, cls, config_overrides=overrides, return_report=True)
    log(str(report))
    model.task_settings = {}  # a new run: it writes its own task_config.json
    return model.train(), tokenizer


def finetune_classification(task: ClassificationConfig, tc: TrainConfig, resume: bool = False, log=print) -> dict:
    """Fine-tune (or train a frozen-feature classifier) on a TSV/CSV task; returns the last
    dev evaluation. The run directory gets task_config.json (the task's settings) besides
    what the training loop writes; nothing is written if tc.out_dir already holds a run."""
    if task.mode not in ("finetune", "features"):
        raise ValueError(f"mode must be 'finetune' or 'features', not {task.mode!r}")
    if task.feature_layers > 1 and task.mode != "features":
        raise ValueError("feature_layers > 1 is the feature-based approach: use it with mode 'features'")
    layers = load_config(resolve_model(task.model, weights=False)).num_hidden_layers  # path or Hub id
    if not 1 <= task.feature_layers <= layers:
        raise ValueError(f"feature_layers must be between 1 and the model's {layers} layers, got {task.feature_layers}")
    if not resume:
        refuse_existing_run(tc.out_dir)  # before anything of the new run is written
    train_data = read_classification(task.train, limit=task.limit)
    dev_data = read_classification(task.dev)
    labels = label_names(train_data.labels)
    torch.manual_seed(tc.seed)  # the new head's init is part of the run's seed
    model, tokenizer = _start_model(
        task.model, BertForSequenceClassification, task.random_init, labels, task.dropout, task.feature_layers, log
    )
    if tokenizer is None:
        raise ValueError(f"{task.model} has no vocab.txt: the text cannot be tokenized")
    if task.mode == "features":
        freeze_encoder(model)
    train_enc = encode_classification(train_data, tokenizer, model.config.label2id, task.max_seq_length)
    dev_enc = encode_classification(dev_data, tokenizer, model.config.label2id, task.max_seq_length)
    dist = init_distributed(pick_device(tc.device))
    tc, per_epoch = epoch_schedule(tc, len(train_enc.labels), task.epochs, dist.world_size)
    trainable, total = model.num_parameters(trainable_only=True), model.num_parameters()
    log(
        f"{task.mode}: {trainable:,} of {total:,} parameters train ({100 * trainable / total:.2f}%); "
        f"labels {labels}; {len(train_enc.labels)} training rows, {len(dev_enc.labels)} dev rows; "
        f"{tc.steps} steps ({tc.steps / per_epoch:.2f} epochs)"
    )
    log("task config: " + str(dataclasses.asdict(task)))
    log("train config: " + str(tc.to_dict()))
    objective = ClassificationObjective(
        train_enc, dev_enc, tokenizer.pad_token_id, tc.batch_size, tc.seed, frozen=task.mode == "features", dist=dist
    )
    write_json(
        Path(tc.out_dir) / TASK_CONFIG_NAME,
        {
            "task": "classification",
            **{k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(task).items()},
            "trainable_parameters": trainable,
            "total_parameters": total,
            "pair": train_data.pairs is not None,
        },
    )  # sentence pairs (MNLI-style) or single sentences
    return train(model, objective, tc, tokenizer, resume=resume, log=log)


def squad_file(data) -> Path:
    """A SQuAD file from a path, a folder (its *train*.json[.zip], else the first .json) or a catalog name."""
    path = resolve_corpus(data)
    if path.is_dir():
        candidates = sorted(path.glob("*train*.json*")) or sorted(path.glob("*.json*"))
        path = candidates[0] if candidates else path
    return path


def finetune_qa(task: QAConfig, tc: TrainConfig, resume: bool = False, log=print) -> dict:
    """Fine-tune for extractive QA on the first task.train_articles articles; returns EM/F1 on
    the others (fractions in [0, 1])."""
    if not resume:
        refuse_existing_run(tc.out_dir)  # before anything of the new run is written
    path = squad_file(task.data)
    examples, report = load_squad(path, report=True)
    log(str(report))
    train_ex, dev_ex = split_by_article(examples, n_train_articles=task.train_articles)
    if task.eval_limit:
        dev_ex = dev_ex[: task.eval_limit]
    torch.manual_seed(tc.seed)
    model, tokenizer = _start_model(task.model, BertForQuestionAnswering, task.random_init, None, task.dropout, log=log)
    feature_args = dict(
        max_seq_length=task.max_seq_length, doc_stride=task.doc_stride, max_query_length=task.max_query_length
    )
    features = make_features(train_ex, tokenizer, training=True, **feature_args)
    dist = init_distributed(pick_device(tc.device))
    tc, per_epoch = epoch_schedule(tc, len(features), task.epochs, dist.world_size)
    log(
        f"SQuAD: {len(train_ex)} training questions (articles 1-{task.train_articles}), {len(dev_ex)} evaluation "
        f"questions (the other articles); {len(features)} training windows; {tc.steps} steps"
    )
    log("train config: " + str(tc.to_dict()))
    objective = QAObjective(features, dev_ex, tokenizer, tc.batch_size, tc.seed, dist=dist, **feature_args)
    write_json(Path(tc.out_dir) / TASK_CONFIG_NAME, {"task": "squad", **dataclasses.asdict(task), "data": str(path)})
    return train(model, objective, tc, tokenizer, resume=resume, log=log)


def finetune_tagging(task: TaggingConfig, tc: TrainConfig, resume: bool = False, log=print) -> dict:
    """Fine-tune a token tagger (or train one on frozen features) on IOB2 / CoNLL-U sentences;
    returns the last evaluation. The label set is read from both files (a type seen only in the
    evaluation file is still counted, as a miss); task_config.json records the data, the labels
    and the windows."""
    if task.mode not in ("finetune", "features"):
        raise ValueError(f"mode must be 'finetune' or 'features', not {task.mode!r}")
    if task.decoding not in DECODINGS:
        raise ValueError(f"decoding must be one of {', '.join(DECODINGS)}, not {task.decoding!r}")
    if not resume:
        refuse_existing_run(tc.out_dir)  # before anything of the new run is written
    train_data = read_tagged(task.train, task.format)
    eval_data = read_tagged(task.eval, task.format, scheme=train_data.scheme)
    if task.limit:
        train_data.sentences = train_data.sentences[: task.limit]
    labels = label_list([s.tags for s in train_data.sentences + eval_data.sentences], train_data.scheme)
    torch.manual_seed(tc.seed)  # the new head's init is part of the run's seed
    model, tokenizer = _start_model(
        task.model, BertForTokenClassification, task.random_init, labels, task.dropout, log=log
    )
    if tokenizer is None:
        raise ValueError(f"{task.model} has no vocab.txt: the text cannot be tokenized")
    if task.mode == "features":
        freeze_encoder(model)
    features = make_tag_features(
        train_data.sentences, tokenizer, model.config.label2id, task.max_seq_length, task.doc_stride
    )
    dist = init_distributed(pick_device(tc.device))
    tc, per_epoch = epoch_schedule(tc, len(features), task.epochs, dist.world_size)
    trainable, total = model.num_parameters(trainable_only=True), model.num_parameters()
    log(
        f"tagging ({train_data.scheme}, {len(labels)} labels): {len(train_data.sentences)} training sentences "
        f"({len(features)} windows), {len(eval_data.sentences)} evaluation sentences; {task.mode}: {trainable:,} of "
        f"{total:,} parameters train; {tc.steps} steps ({tc.steps / per_epoch:.2f} epochs)"
    )
    log("train config: " + str(tc.to_dict()))
    write_json(
        Path(tc.out_dir) / TASK_CONFIG_NAME,
        {
            "task": "tagging",
            **dataclasses.asdict(task),
            "format": train_data.format,
            "scheme": train_data.scheme,
            "labels": labels,
            "trainable_parameters": trainable,
            "total_parameters": total,
        },
    )
    objective = TaggingObjective(features, eval_data, tokenizer, task, tc.batch_size, tc.seed, dist=dist)
    return train(model, objective, tc, tokenizer, resume=resume, log=log)


def evaluate_saved(
    model_dir,
    data=None,
    max_seq_length: int | None = None,
    train_articles: int | None = None,
    eval_limit: int | None = None,
) -> dict:
    """Re-measure a saved fine-tuned model: classification accuracy (and F1) on a TSV/CSV,
    SQuAD EM/F1 on the held-out articles, or a tagger's entity F1 / accuracy on tagged sentences.
    Defaults come from the run's task_config.json (the dev file, the SQuAD file, train_articles,
    the feature lengths), so a model card's command is simply
    `python -m lab eval --model DIR --data FILE`."""
    model_dir = Path(model_dir)
    task = task_settings(model_dir)
    model, tokenizer = load(model_dir)
    if isinstance(model, BertForSequenceClassification):
        data = data or task.get("dev")
        if not data:
            raise ValueError(f"{model_dir}: give the evaluation file with --data (TSV/CSV with a label column)")
        dev = read_classification(data)
        enc = encode_classification(
            dev, tokenizer, model.config.label2id, max_seq_length or task.get("max_seq_length", 128)
        )
        return {**evaluate_classification(model, enc, tokenizer.pad_token_id), "examples": len(enc.labels)}
    if isinstance(model, BertForQuestionAnswering):
        data = data or task.get("data")
        if not data:
            raise ValueError(f"{model_dir}: give the SQuAD file with --data")
        examples = load_squad(resolve_corpus(data))
        _, dev = split_by_article(examples, n_train_articles=train_articles or task.get("train_articles", 40))
        dev = dev[:eval_limit] if eval_limit else dev
        lengths = qa_lengths(model_dir)
        if max_seq_length:
            lengths["max_seq_length"] = max_seq_length
        result = evaluate(dev, predict_answers(model, tokenizer, dev, **lengths))
        return {"exact_match": result["exact_match"] / 100, "f1": result["f1"] / 100, "questions": len(dev)}
    if isinstance(model, BertForTokenClassification):
        data = data or task.get("eval")
        if not data:
            raise ValueError(f"{model_dir}: give the tagged evaluation file with --data (IOB2 or CoNLL-U)")
        tagged = read_tagged(data, task.get("format", "auto") if data == task.get("eval") else "auto")
        tagged.sentences = tagged.sentences[:eval_limit] if eval_limit else tagged.sentences
        windows = {"max_seq_length": max_seq_length or task.get("max_seq_length", 128)}
        windows["doc_stride"] = min(task.get("doc_stride", 64), windows["max_seq_length"] // 2)
        result = evaluate_tagging(model, tokenizer, tagged, **windows, decoding=task.get("decoding", "argmax"))
        return {**result, "sentences": len(tagged.sentences)}
    raise ValueError(f"{model_dir} holds a {type(model).__name__}: evaluate a pre-trained model with --corpus")


def epoch_schedule(tc: TrainConfig, n: int, epochs: float, world_size: int = 1) -> tuple[TrainConfig, int]:
    """Fine-tuning counts epochs: steps from `epochs` unless tc.steps is given, evaluation once
    per epoch unless tc.eval_every is given. A step reads tc.batch_size rows in each of the
    world_size processes."""
    per_epoch = max(1, n // (tc.batch_size * world_size))
    steps = tc.steps or max(1, round(epochs * per_epoch))
    return dataclasses.replace(tc, steps=steps, minutes=None, eval_every=tc.eval_every or per_epoch), per_epoch
