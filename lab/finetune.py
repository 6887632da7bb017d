"""Fine-tuning: one extra output layer on a pre-trained BERT (Devlin et al., Section 4).

    python -m lab finetune-cls --model runs/classroom --train sst2/train.tsv --dev sst2/dev.tsv --out runs/sst2
    python -m lab finetune-cls ... --mode features            # frozen encoder, only the new layer trains
    python -m lab finetune-qa --model runs/classroom --data squad --out runs/squad

Two tasks, both plugged into the one training loop (lab.train.train) as objectives:
  * sequence classification: [CLS] -> pooler -> dropout -> linear (K x H) -> softmax, for single
    sentences (SST-2) or pairs; `finetune` trains every parameter, `features` freezes the encoder
    and trains only the task layer (optionally on the last four layers' [CLS] vectors,
    concatenated: the paper's feature-based approach, Section 5.3);
  * extractive question answering: every token -> (start, end) logits, the answer the best span
    (lab.squad builds the windows, decodes and scores).
"""
from __future__ import annotations

import csv
import dataclasses
import json
import random
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .model import BertForQuestionAnswering, BertForSequenceClassification, BertPreTrainedModel
from .train import TrainConfig, train


def step_indices(n: int, batch_size: int, step: int, seed: int) -> list[int]:
    """The examples of batch `step`: epoch e = step // (n // batch_size) is a permutation seeded
    by (seed, e); a pure function of the step, so a resumed run sees the same batches."""
    per_epoch = max(1, n // batch_size)
    epoch, i = divmod(step, per_epoch)
    order = list(range(n))
    random.Random(seed * 1_000_003 + epoch).shuffle(order)
    return order[i * batch_size:(i + 1) * batch_size] or order[:batch_size]


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


TEXT_COLUMNS = [("sentence",), ("sentence1", "sentence2"), ("question", "sentence"), ("text",),
                ("premise", "hypothesis"), ("text_a", "text_b")]


def read_classification(path, text_columns: tuple[str, ...] | None = None, label_column: str = "label",
                        limit: int | None = None) -> ClassificationData:
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
        cols = text_columns or next((c for c in TEXT_COLUMNS if all(x in header for x in c)), None)
        if cols is None or label_column not in header:
            raise ValueError(f"{path}: the header {header} needs a '{label_column}' column and text columns "
                             f"such as 'sentence' or 'sentence1','sentence2'")
        idx = [header.index(c) for c in cols]
        lab = header.index(label_column)
        texts, pairs, labels = [], [] if len(cols) == 2 else None, []
        for line, row in enumerate(reader, start=2):
            if not row or all(not x.strip() for x in row):
                continue
            if len(row) <= max(idx + [lab]):
                raise ValueError(f"{path}, line {line}: {len(row)} column(s), expected {len(header)} "
                                 f"({', '.join(header)})")
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


def encode_classification(data: ClassificationData, tokenizer, label2id: dict[str, int],
                          max_seq_length: int = 128) -> Encoded:
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


def pad_batch(rows: list[list[int]], types: list[list[int]], pad_id: int) -> dict[str, torch.Tensor]:
    T = max(len(r) for r in rows)
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    tt = torch.zeros((len(rows), T), dtype=torch.long)
    mask = torch.zeros((len(rows), T), dtype=torch.long)
    for i, (r, t) in enumerate(zip(rows, types)):
        ids[i, :len(r)], tt[i, :len(t)], mask[i, :len(r)] = torch.tensor(r), torch.tensor(t), 1
    return {"input_ids": ids, "token_type_ids": tt, "attention_mask": mask}


class DictBatch(dict):
    """A dict of tensors with `.to(device)`, `as_dict()` and `attention_mask` as the loop expects."""

    def to(self, device):
        return DictBatch({k: v.to(device) for k, v in self.items()})

    def as_dict(self):
        return dict(self)

    @property
    def attention_mask(self):
        return self["attention_mask"]

    def __len__(self):
        return self["input_ids"].shape[0]


# ----------------------------------------------------------------------------------------
# Models for the two approaches
# ----------------------------------------------------------------------------------------
class FeatureClassifier(BertPreTrainedModel):
    """The feature-based approach: a frozen encoder, and one linear layer on the concatenation of
    the [CLS] vectors of its last `layers` layers (the paper's best feature-based BERT used four)."""
    label_names = ("labels",)

    def __init__(self, encoder_model: BertForSequenceClassification, layers: int = 4):
        super().__init__(encoder_model.config)
        if not 1 <= layers <= self.config.num_hidden_layers:
            raise ValueError(f"feature_layers must be between 1 and the model's "
                             f"{self.config.num_hidden_layers} layers, got {layers}")
        self.bert, self.layers = encoder_model.bert, layers
        self.classifier = nn.Linear(layers * self.config.hidden_size, self.config.num_labels)
        nn.init.normal_(self.classifier.weight, 0.0, self.config.initializer_range)
        nn.init.zeros_(self.classifier.bias)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None, **_):
        out = self.bert(input_ids, token_type_ids, attention_mask, output_hidden_states=True)
        cls = torch.cat([h[:, 0] for h in out.hidden_states[-self.layers:]], dim=-1)   # (B, layers*H)
        out.logits = self.classifier(cls)                                               # (B, K)
        if labels is not None:
            out.loss = F.cross_entropy(out.logits.float(), labels)
        return out


def freeze_encoder(model) -> None:
    """Feature-based: the pre-trained encoder (embeddings, layers, pooler) stays as it is."""
    for p in model.bert.parameters():
        p.requires_grad_(False)


# ----------------------------------------------------------------------------------------
# Objectives
# ----------------------------------------------------------------------------------------
class ClassificationObjective:
    def __init__(self, train: Encoded, dev: Encoded, pad_id: int, batch_size: int, seed: int = 0,
                 frozen: bool = False):
        self.train_set, self.dev, self.pad_id, self.batch_size, self.seed = train, dev, pad_id, batch_size, seed
        self.frozen = frozen

    def _batch(self, enc: Encoded, rows: list[int]) -> DictBatch:
        b = pad_batch([enc.input_ids[i] for i in rows], [enc.token_type_ids[i] for i in rows], self.pad_id)
        b["labels"] = torch.tensor([enc.labels[i] for i in rows])
        return DictBatch(b)

    def train_batch(self, index: int) -> DictBatch:
        return self._batch(self.train_set, step_indices(len(self.train_set.labels), self.batch_size, index, self.seed))

    def loss(self, model, batch):
        if self.frozen:
            getattr(model, "module", model).bert.eval()       # a frozen encoder: no dropout either
        out = model(**batch.as_dict())
        acc = (out.logits.argmax(-1) == batch["labels"]).float().mean().item()
        return out.loss, {"loss": out.loss.item(), "acc": acc}

    def evaluate(self, model) -> dict[str, float]:
        return evaluate_classification(model, self.dev, self.pad_id)


@torch.no_grad()
def evaluate_classification(model, dev: Encoded, pad_id: int, batch_size: int = 64) -> dict[str, float]:
    """Accuracy, and F1 of label 1 when there are two labels (GLUE's convention)."""
    device = next(model.parameters()).device
    preds = []
    for i in range(0, len(dev.labels), batch_size):
        rows = list(range(i, min(i + batch_size, len(dev.labels))))
        b = pad_batch([dev.input_ids[j] for j in rows], [dev.token_type_ids[j] for j in rows], pad_id)
        preds += model(**{k: v.to(device) for k, v in b.items()}).logits.argmax(-1).tolist()
    gold = dev.labels
    result = {"accuracy": sum(p == g for p, g in zip(preds, gold)) / len(gold)}
    if model.config.num_labels == 2:
        tp = sum(p == 1 and g == 1 for p, g in zip(preds, gold))
        fp = sum(p == 1 and g == 0 for p, g in zip(preds, gold))
        fn = sum(p == 0 and g == 1 for p, g in zip(preds, gold))
        result["f1"] = 2 * tp / max(1, 2 * tp + fp + fn)
    return result


class QAObjective:
    def __init__(self, features, dev_examples, tokenizer, batch_size: int, seed: int = 0, **feature_args):
        from .squad import collate_features
        self.features, self.dev, self.tokenizer = features, dev_examples, tokenizer
        self.batch_size, self.seed, self.feature_args = batch_size, seed, feature_args
        self.collate = collate_features

    def train_batch(self, index: int):
        rows = step_indices(len(self.features), self.batch_size, index, self.seed)
        return self.collate([self.features[i] for i in rows], self.tokenizer.pad_token_id)

    def loss(self, model, batch):
        out = model(**batch.as_dict())
        return out.loss, {"loss": out.loss.item()}

    def evaluate(self, model) -> dict[str, float]:
        from .squad import evaluate, predict
        preds = predict(model, self.tokenizer, self.dev, **self.feature_args)
        result = evaluate(self.dev, preds)
        return {"exact_match": result["exact_match"] / 100, "f1": result["f1"] / 100}


# ----------------------------------------------------------------------------------------
# The two commands
# ----------------------------------------------------------------------------------------
def _start_model(model_dir, cls, random_init: bool, labels=None, dropout: float | None = 0.1, log=print):
    """The pre-trained encoder with a new head (or a random model of the same shape).

    dropout: fine-tuning uses BERT's 0.1 even when pre-training ran without dropout (the lab's
    classroom recipe does); None keeps the checkpoint's values.
    """
    from .checkpoint import load
    from .config import BertConfig
    from .tokenizer import Tokenizer
    overrides = {}
    if dropout is not None:
        overrides |= {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout}
    if labels is not None:
        overrides |= {"id2label": {i: l for i, l in enumerate(labels)}, "label2id": {l: i for i, l in enumerate(labels)}}
    if random_init:
        cfg = BertConfig.from_dict({**BertConfig.load(model_dir).to_dict(), **overrides})
        model, tokenizer = cls(cfg), Tokenizer.load(model_dir)
        log(f"random initialisation with the shape of {model_dir}: {cfg.summary()}")
        return model, tokenizer
    model, tokenizer, report = load(model_dir, cls, config_overrides=overrides, return_report=True)
    log(str(report))
    return model.train(), tokenizer


def finetune_classification(model_dir, train_path, dev_path, tc: TrainConfig, mode: str = "finetune",
                            feature_layers: int = 1, epochs: float = 2.0, max_seq_length: int = 128,
                            random_init: bool = False, limit: int | None = None, resume: bool = False,
                            dropout: float | None = 0.1, log=print) -> dict:
    if mode not in ("finetune", "features"):
        raise ValueError(f"mode must be 'finetune' or 'features', not {mode!r}")
    train_data = read_classification(train_path, limit=limit)
    dev_data = read_classification(dev_path)
    labels = label_names(train_data.labels)
    torch.manual_seed(tc.seed)                 # the new head's init is part of the run's seed
    model, tokenizer = _start_model(model_dir, BertForSequenceClassification, random_init, labels, dropout, log)
    if tokenizer is None:
        raise ValueError(f"{model_dir} has no vocab.txt: the text cannot be tokenized")
    if mode == "features":
        freeze_encoder(model)
        if feature_layers > 1:
            model = FeatureClassifier(model, layers=feature_layers)
    train_enc = encode_classification(train_data, tokenizer, model.config.label2id, max_seq_length)
    dev_enc = encode_classification(dev_data, tokenizer, model.config.label2id, max_seq_length)
    tc, per_epoch = _epoch_schedule(tc, len(train_enc.labels), epochs)
    steps = tc.steps
    trainable, total = model.num_parameters(trainable_only=True), model.num_parameters()
    log(f"{mode}: {trainable:,} of {total:,} parameters train ({100 * trainable / total:.2f}%); "
        f"labels {labels}; {len(train_enc.labels)} training rows, {len(dev_enc.labels)} dev rows; "
        f"{steps} steps ({steps / per_epoch:.2f} epochs)")
    log("train config: " + json.dumps(tc.to_dict()))
    objective = ClassificationObjective(train_enc, dev_enc, tokenizer.pad_token_id, tc.batch_size, tc.seed,
                                        frozen=mode == "features")
    _write_task_config(tc.out_dir, {"task": "classification", "mode": mode, "feature_layers": feature_layers,
                                    "model": str(model_dir), "random_init": random_init,
                                    "trainable_parameters": trainable, "total_parameters": total,
                                    "train": str(train_path), "dev": str(dev_path), "limit": limit,
                                    "max_seq_length": max_seq_length})
    return train(model, objective, tc, tokenizer, resume=resume, log=log)


def finetune_qa(model_dir, data, tc: TrainConfig, epochs: float = 2.0, train_articles: int = 40,
                max_seq_length: int = 384, doc_stride: int = 128, max_query_length: int = 64,
                random_init: bool = False, eval_limit: int | None = None, resume: bool = False,
                dropout: float | None = 0.1, log=print) -> dict:
    from .squad import load_squad, make_features, split_by_article
    from .corpus import resolve_corpus
    path = resolve_corpus(data)
    if path.is_dir():
        candidates = sorted(path.glob("*train*.json*")) or sorted(path.glob("*.json*"))
        path = candidates[0] if candidates else path
    examples, report = load_squad(path, report=True)
    log(str(report))
    train_ex, dev_ex = split_by_article(examples, n_train_articles=train_articles)
    if eval_limit:
        dev_ex = dev_ex[:eval_limit]
    torch.manual_seed(tc.seed)
    model, tokenizer = _start_model(model_dir, BertForQuestionAnswering, random_init, None, dropout, log)
    feature_args = dict(max_seq_length=max_seq_length, doc_stride=doc_stride, max_query_length=max_query_length)
    features = make_features(train_ex, tokenizer, training=True, **feature_args)
    tc, per_epoch = _epoch_schedule(tc, len(features), epochs)
    steps = tc.steps
    log(f"SQuAD: {len(train_ex)} training questions (articles 1-{train_articles}), {len(dev_ex)} evaluation "
        f"questions (the other articles); {len(features)} training windows; {steps} steps")
    log("train config: " + json.dumps(tc.to_dict()))
    objective = QAObjective(features, dev_ex, tokenizer, tc.batch_size, tc.seed, **feature_args)
    _write_task_config(tc.out_dir, {"task": "squad", "model": str(model_dir), "random_init": random_init,
                                    "data": str(path), "train_articles": train_articles, **feature_args})
    return train(model, objective, tc, tokenizer, resume=resume, log=log)


def evaluate_saved(model_dir, data=None, max_seq_length: int | None = None, train_articles: int | None = None,
                   eval_limit: int | None = None) -> dict:
    """Re-measure a saved fine-tuned model: classification accuracy (and F1) on a TSV/CSV, or
    SQuAD EM/F1 on the held-out articles. Defaults come from the run's task_config.json (the
    dev file, the SQuAD file, train_articles, the feature lengths), so a model card's command is
    simply `python -m lab eval --model DIR --data FILE`."""
    from .checkpoint import load
    from .corpus import resolve_corpus
    model_dir = Path(model_dir)
    task_file = model_dir / "task_config.json"
    task = json.loads(task_file.read_text()) if task_file.is_file() else {}
    model, tokenizer = load(model_dir)
    if isinstance(model, BertForSequenceClassification):
        data = data or task.get("dev")
        if not data:
            raise ValueError(f"{model_dir}: give the evaluation file with --data (TSV/CSV with a label column)")
        dev = read_classification(data)
        enc = encode_classification(dev, tokenizer, model.config.label2id,
                                    max_seq_length or task.get("max_seq_length", 128))
        return {**evaluate_classification(model, enc, tokenizer.pad_token_id), "examples": len(enc.labels)}
    if isinstance(model, BertForQuestionAnswering):
        from .squad import evaluate, load_squad, predict, split_by_article
        data = data or task.get("data")
        if not data:
            raise ValueError(f"{model_dir}: give the SQuAD file with --data")
        examples = load_squad(resolve_corpus(data))
        _, dev = split_by_article(examples, n_train_articles=train_articles or task.get("train_articles", 40))
        dev = dev[:eval_limit] if eval_limit else dev
        lengths = {k: task[k] for k in ("max_seq_length", "doc_stride", "max_query_length") if k in task}
        if max_seq_length:
            lengths["max_seq_length"] = max_seq_length
        result = evaluate(dev, predict(model, tokenizer, dev, **lengths))
        return {"exact_match": result["exact_match"] / 100, "f1": result["f1"] / 100, "questions": len(dev)}
    raise ValueError(f"{model_dir} holds a {type(model).__name__}: evaluate a pre-trained model with --corpus")


def _epoch_schedule(tc: TrainConfig, n: int, epochs: float) -> tuple[TrainConfig, int]:
    """Fine-tuning counts epochs: steps from `epochs` unless --steps is given, evaluation once
    per epoch unless --eval-every is given."""
    per_epoch = max(1, n // tc.batch_size)
    steps = tc.steps or max(1, round(epochs * per_epoch))
    return dataclasses.replace(tc, steps=steps, minutes=None, eval_every=tc.eval_every or per_epoch), per_epoch


def _write_task_config(out_dir, values: dict) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "task_config.json").write_text(json.dumps(values, indent=2) + "\n")
