"""A fine-tuned model run over a dataset's examples: SQuAD answers, QNLI answer scores, tags.

    predictions = predict_answers(model, tokenizer, dev)    # {question id: answer text}
    squad_metrics.evaluate(dev, predictions)                # {"exact_match": %, "f1": %, "count", "missing"}
    predicted = predict_tags(model, tokenizer, [s.words for s in test.sentences])  # per word: WordTag

lab.data cuts the windows and decodes logits without ever running a model; here the windows go
through one: eval mode, no gradients, in batches, the train/eval mode restored afterwards. Any module
whose `model(**batch)` gives start/end logits (spans) or logits (B, T, K) (tags) will do. The
SQuAD score is lab.data.squad_metrics'; the tags' are lab.data.tag_metrics'.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import torch
from tqdm.auto import tqdm

from lab.data.qnli import SentencePair
from lab.data.squad import (
    MAX_ANSWER_LENGTH,
    N_BEST,
    QA_WINDOWS,
    Example,
    Feature,
    collate_features,
    decode_spans,
    make_features,
    windows_by_example,
)
from lab.data.tag_decoding import WordTag, decode_tags
from lab.data.tagging import TagFeature, collate_tag_features, make_tag_features
from lab.device import autocast, autocast_dtype


@contextlib.contextmanager
def eval_mode(model: torch.nn.Module):
    """Run batches through `model` in eval mode (no dropout) inside the block; its train/eval
    mode is restored afterwards, even on an error."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


# ----------------------------------------------------------------------------------------------
# SQuAD: answer spans
# ----------------------------------------------------------------------------------------------


@torch.no_grad()
def span_logits(
    model,
    tokenizer,
    features: Sequence[Feature],
    batch_size: int = 32,
    max_seq_length: int | None = None,
    device=None,
    by_length: bool = False,
    dtype: torch.dtype | None = None,
    progress: bool = False,
) -> tuple[list[list[float]], list[list[float]]]:
    """Start and end logits of every window (feature), each cut to its window's length, in the
    features' order: the model runs in eval mode without gradients in batches of `batch_size`
    (by_length=True: windows of similar length together, less padding; dtype: autocast), and its
    train/eval mode is restored afterwards."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    order = sorted(range(len(features)), key=lambda k: len(features[k])) if by_length else list(range(len(features)))
    starts: list[list[float]] = [[] for _ in features]
    ends: list[list[float]] = [[] for _ in features]
    with eval_mode(model), autocast(device, dtype):
        for i in tqdm(range(0, len(order), batch_size), desc="windows", unit="batch", disable=not progress):
            rows = order[i : i + batch_size]
            batch = collate_features([features[k] for k in rows], tokenizer.pad_token_id, max_length=max_seq_length)
            out = model(**batch.to(device))
            start_logits, end_logits = out.start_logits.float().cpu(), out.end_logits.float().cpu()  # (B, T)
            for r, k in enumerate(rows):
                n = len(features[k].input_ids)
                starts[k], ends[k] = start_logits[r, :n].tolist(), end_logits[r, :n].tolist()
    return starts, ends


@torch.no_grad()
def predict_answers(
    model,
    tokenizer,
    examples: Sequence[Example],
    batch_size: int = 32,
    max_seq_length: int = QA_WINDOWS["max_seq_length"],
    doc_stride: int = QA_WINDOWS["doc_stride"],
    max_query_length: int = QA_WINDOWS["max_query_length"],
    n_best: int = N_BEST,
    max_answer_length: int = MAX_ANSWER_LENGTH,
    null_threshold: float | None | str = "auto",
    device: torch.device | str | None = None,
) -> dict[str, str]:
    """Answer every example with a BertForQuestionAnswering: {question id: answer text}.

    Features are built with training=False, run in eval mode without gradients in batches of
    `batch_size` windows, and decoded with `decode_spans`. null_threshold "auto" means 0.0 when
    the examples are SQuAD v2.0 (some question is marked impossible) and None (never answer
    "") otherwise. The model's train/eval mode is restored afterwards.
    """
    if null_threshold == "auto":
        null_threshold = 0.0 if any(ex.is_impossible for ex in examples) else None
    features = make_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length, training=False)
    start_rows, end_rows = span_logits(model, tokenizer, features, batch_size, max_seq_length, device=device)
    by_example = windows_by_example(features)
    predictions = {}
    for ex_index, ex in enumerate(examples):
        ks = by_example.get(ex_index, [])
        spans = decode_spans(
            [features[k] for k in ks],
            [start_rows[k] for k in ks],
            [end_rows[k] for k in ks],
            ex,
            n_best=n_best,
            max_answer_length=max_answer_length,
            null_threshold=null_threshold,
        )
        predictions[ex.id] = spans[0].text if spans else ""  # no window at all (empty context): ""
    return predictions


@torch.no_grad()
def answer_scores(
    model,
    tokenizer,
    pairs: Sequence[SentencePair],
    batch_size: int = 32,
    max_seq_length: int = QA_WINDOWS["max_seq_length"],
    doc_stride: int = QA_WINDOWS["doc_stride"],
    max_query_length: int = QA_WINDOWS["max_query_length"],
    precision: str = "auto",
    progress: bool = False,
) -> list[float]:
    """A SQuAD model as a QNLI classifier without any training on pairs: per pair, the score of
    the best answer span it finds in the sentence minus its "no answer here" score ([CLS] as
    start and end, the target of SQuAD training windows that miss the answer). Larger: surer
    that the sentence answers the question; `lab.data.qnli.fit_threshold` turns it into labels.

    Each sentence is read as the context of a question: [CLS] question [SEP] sentence [SEP].
    Windows are batched by length (less padding); precision "auto" uses bf16 where it is fast.
    """
    questions = [
        Example(id=str(i), title="", context=p.sentence, question=p.question, answers=[]) for i, p in enumerate(pairs)
    ]
    features = make_features(questions, tokenizer, max_seq_length, doc_stride, max_query_length, training=False)
    device = next(model.parameters()).device
    starts, ends = span_logits(
        model,
        tokenizer,
        features,
        batch_size,
        device=device,
        by_length=True,
        dtype=autocast_dtype(precision, device),
        progress=progress,
    )
    windows = windows_by_example(features)
    scores = []
    for i, question in enumerate(questions):
        ks = windows[i]
        spans = decode_spans(
            [features[k] for k in ks], [starts[k] for k in ks], [ends[k] for k in ks], question, null_threshold=0.0
        )  # 0.0: the null candidate is in the list
        null = next(c.score for c in spans if not c.text)
        scores.append(max((c.score for c in spans if c.text), default=null - 100.0) - null)
    return scores


# ----------------------------------------------------------------------------------------------
# Tagging: one tag per word
# ----------------------------------------------------------------------------------------------


@torch.no_grad()
def tag_logits(
    model,
    features: Sequence[TagFeature],
    pad_id: int,
    batch_size: int = 32,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> list[torch.Tensor]:
    """Logits [len(window), K] of every window, in the features' order, from any module whose
    `model(**batch).logits` is (B, T, K): eval mode, no gradients, windows of similar length batched
    together (less padding), autocast to `dtype` when given; the train/eval mode is restored."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    order = sorted(range(len(features)), key=lambda k: len(features[k]))
    out: list[torch.Tensor | None] = [None] * len(features)
    with eval_mode(model), autocast(device, dtype):
        for i in range(0, len(order), batch_size):
            rows = order[i : i + batch_size]
            batch = collate_tag_features([features[k] for k in rows], pad_id)
            batch.pop("labels", None)
            logits = model(**batch.to(device)).logits.float().cpu()  # (B, T, K)
            for r, k in enumerate(rows):
                out[k] = logits[r, : len(features[k])]
    return out  # type: ignore[return-value]


def predict_tags(
    model,
    tokenizer,
    sentences: Sequence[Sequence[str]],
    max_seq_length: int = 128,
    doc_stride: int = 64,
    batch_size: int = 32,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
    decoding: str = "argmax",
) -> list[list[WordTag]]:
    """Tag every word of every sentence (lists of words) with a token classifier: its labels come
    from model.config.id2label; windows as make_tag_features; one WordTag per word, decoded as
    decode_tags (argmax, or IOB2 Viterbi)."""
    limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if limit is not None and max_seq_length > limit:
        raise ValueError(f"predict_tags: max_seq_length={max_seq_length} exceeds the model's {limit} positions")
    features = make_tag_features([list(s) for s in sentences], tokenizer, None, max_seq_length, doc_stride)
    rows = tag_logits(model, features, tokenizer.pad_token_id, batch_size, device, dtype)
    return decode_tags(features, rows, model.config.id2label, decoding)
