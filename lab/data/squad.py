"""SQuAD for BERT: load the JSON, cut contexts into doc-stride windows, decode spans.

    examples = load_squad("../shared/data/squad/dev-v1.1.json.zip")
    train, dev = split_by_article(examples, n_train_articles=40)         # the only SQuAD data here
    batch = collate_features(make_features(train, tokenizer)[:32], tokenizer.pad_token_id)
    loss = model(**batch).loss                                           # BertForQuestionAnswering
    spans = decode_spans(features, start_logits, end_logits, example)    # the best answers, best first

Features, windows and decoding follow Google's run_squad.py, so that numbers compare with the
paper's; the worked example of doc-stride windows stands above doc_windows. Nothing here runs a
model: lab.inference.predict_answers does (windows through the model, then decode_spans), and
lab.data.squad_metrics scores the answers. QNLI pairs built from SQuAD live in lab/data/qnli.py.
"""

from __future__ import annotations

import json
import logging
import math
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from lab.data.batch import Batch, pad_rows

logger = logging.getLogger(__name__)

MAX_REPORTED_IDS = 5  # LoadReport keeps the first few question ids of each kind of problem
QA_WINDOWS = {"max_seq_length": 384, "doc_stride": 128, "max_query_length": 64}  # BERT's SQuAD settings
N_BEST, MAX_ANSWER_LENGTH = 20, 30  # candidates per window and longest span (tokens): run_squad.py's


# ----------------------------------------------------------------------------------------------
# 1. Loading
# ----------------------------------------------------------------------------------------------


@dataclass
class Example:
    """One SQuAD question about one context paragraph."""

    id: str  # SQuAD's question id, the key of the predictions dict
    title: str  # the Wikipedia article the paragraph comes from
    context: str  # the paragraph; answers are character spans of it
    question: str
    answers: list[dict]  # [{"text": str, "answer_start": int}], context[start:start+len(text)] == text
    is_impossible: bool = False  # SQuAD v2.0: the paragraph does not answer the question
    article_index: int = 0  # position of the article in the file (split_by_article uses it)


@dataclass
class LoadReport:
    """What `load_squad` found wrong in a file, counted (never silently dropped)."""

    path: str
    version: str = ""  # the file's "version" field ("1.1", "v2.0", ...)
    articles: int = 0
    paragraphs: int = 0
    questions: int = 0  # questions loaded (returned as Examples)
    answers: int = 0  # answers loaded (after repairs and drops)
    impossible: int = 0  # v2.0 questions marked is_impossible
    malformed: int = 0  # questions lacking id / question / answers: skipped
    malformed_ids: list[str] = field(default_factory=list)
    repaired: int = 0  # answers whose answer_start was wrong but whose text is in the context: moved
    repaired_ids: list[str] = field(default_factory=list)
    dropped: int = 0  # answers whose text is nowhere in the context: dropped
    dropped_ids: list[str] = field(default_factory=list)
    unanswered: int = 0  # answerable questions left without any answer: skipped (an error)
    unanswered_ids: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing had to be repaired, dropped or skipped."""
        return not (self.malformed or self.repaired or self.dropped or self.unanswered)

    def _count(self, kind: str, qid: str) -> None:
        # e.g. kind "repaired": repaired += 1, and remember the id if it is among the first few
        setattr(self, kind, getattr(self, kind) + 1)
        ids = getattr(self, kind + "_ids")
        if len(ids) < MAX_REPORTED_IDS:
            ids.append(qid)

    def __str__(self) -> str:
        text = (
            f"{self.path}: SQuAD {self.version or '?'}, {self.articles} articles, {self.paragraphs} "
            f"paragraphs, {self.questions} questions ({self.impossible} impossible), {self.answers} answers"
        )
        problems = [
            ("malformed questions skipped", self.malformed, self.malformed_ids),
            ("answers with a wrong answer_start repaired", self.repaired, self.repaired_ids),
            ("answers not found in their context dropped", self.dropped, self.dropped_ids),
            ("answerable questions without an answer skipped", self.unanswered, self.unanswered_ids),
        ]
        for what, n, ids in problems:
            if n:
                more = ", ..." if n > len(ids) else ""
                text += f"; {n} {what} (first ids: {', '.join(ids)}{more})"
        return text


def load_squad(path: str | Path, report: bool = False) -> list[Example] | tuple[list[Example], LoadReport]:
    """Read SQuAD v1.1 or v2.0 JSON, plain or inside a .zip, into Examples (file order).

    Problems are counted in a LoadReport, returned with `report=True` (otherwise logged as a
    warning when there are any):
      - a question lacking "id", "question" or "answers" (v2.0 may omit answers when
        is_impossible) is skipped;
      - an answer whose answer_start does not point at its text is REPAIRED when the text occurs
        in the context (we move answer_start to the occurrence nearest the given one: annotators'
        offsets are sometimes off by a few characters, and a span is only useful for training if
        it points at the text) and DROPPED when the text is nowhere in the context;
      - an answerable question left with no answers is an error: it is skipped, since it can
        neither be trained on nor scored.
    A file that is not JSON, or has no "data" list, raises ValueError.
    """
    path = Path(path)
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise ValueError(f"{path}: no 'data' list (is this a SQuAD file?)")
    rep = LoadReport(path=str(path), version=str(data.get("version", "")))
    examples: list[Example] = []
    # SQuAD nests: data -> articles (title) -> paragraphs (context) -> qas (question, answers).
    for article_index, article in enumerate(data["data"]):
        rep.articles += 1
        title = str(article.get("title", f"article {article_index}"))
        for p_index, paragraph in enumerate(article.get("paragraphs", [])):
            rep.paragraphs += 1
            context = paragraph.get("context")
            if not isinstance(context, str):
                raise ValueError(
                    f"{path}: article {article_index} ('{title}') paragraph {p_index} has no 'context' text"
                )
            for q_index, qa in enumerate(paragraph.get("qas", [])):
                example = _read_question(
                    qa,
                    context,
                    title,
                    article_index,
                    rep,
                    where=f"article {article_index} paragraph {p_index} question {q_index}",
                )
                if example is not None:
                    examples.append(example)
    if not rep.ok and not report:  # problems are never silent: log them when not asked for the report
        logger.warning("%s", rep)
    return (examples, rep) if report else examples


def _read_json(path: Path) -> Any:
    """The parsed JSON of `path`, or of the one .json member of a zip (preferring `name.json` for `name.json.zip`)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such SQuAD file")
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                members = [n for n in zf.namelist() if n.endswith(".json") and not n.startswith("__MACOSX")]
                # dev-v1.1.json.zip -> prefer a member named dev-v1.1.json
                preferred = [n for n in members if Path(n).name == path.stem]
                if len(preferred) == 1:
                    members = preferred
                if len(members) != 1:
                    raise ValueError(f"{path}: expected one .json file in the zip, found {members or 'none'}")
                raw = zf.read(members[0])
        else:
            raw = path.read_bytes()
        return json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not valid JSON ({e}); is this a SQuAD file?") from None


def _read_question(
    qa: Any, context: str, title: str, article_index: int, rep: LoadReport, where: str
) -> Example | None:
    """One entry of a paragraph's "qas" -> an Example, or None (counted in `rep`) if unusable."""
    qid = qa.get("id") if isinstance(qa, dict) else None
    label = str(qid) if qid else f"<{where}>"  # a question without an id is named by its position
    impossible = bool(qa.get("is_impossible", False)) if isinstance(qa, dict) else False
    answers = qa.get("answers", [] if impossible else None) if isinstance(qa, dict) else None
    if not qid or not isinstance(qa.get("question"), str) or not isinstance(answers, list):
        rep._count("malformed", label)
        return None
    # Check every answer: its text must sit at answer_start in the context.
    kept = []
    for answer in answers:
        text, start = (answer.get("text"), answer.get("answer_start")) if isinstance(answer, dict) else (None, None)
        if not isinstance(text, str) or not isinstance(start, int):
            rep._count("dropped", label)
            continue
        if context[start : start + len(text)] != text:
            # Repair: the occurrence of the text nearest the annotated start, if any.
            found = _nearest_occurrence(context, text, start)
            if found is None:
                rep._count("dropped", label)
                continue
            rep._count("repaired", label)
            start = found
        kept.append({"text": text, "answer_start": start})
    # v1.1 questions (and answerable v2.0 ones) need at least one answer left.
    if impossible:
        kept = []  # v2.0 keeps "plausible_answers" elsewhere; an impossible question has none
        rep.impossible += 1
    elif not kept:
        rep._count("unanswered", label)
        return None
    rep.questions += 1
    rep.answers += len(kept)
    return Example(
        id=str(qid),
        title=title,
        context=context,
        question=qa["question"],
        answers=kept,
        is_impossible=impossible,
        article_index=article_index,
    )


def _nearest_occurrence(context: str, text: str, start: int) -> int | None:
    """Start of the occurrence of `text` in `context` closest to `start`, or None."""
    if not text:
        return None
    best, i = None, context.find(text)
    while i != -1:  # walk every occurrence, keep the closest
        if best is None or abs(i - start) < abs(best - start):
            best = i
        i = context.find(text, i + 1)
    return best


def split_by_article(examples: Sequence[Example], n_train_articles: int = 40) -> tuple[list[Example], list[Example]]:
    """(train, eval): questions on the first `n_train_articles` articles (file order) train, the rest evaluate.

    Splitting by article, not by question, keeps a paragraph's questions on one side, so the
    evaluation contexts are unseen in training. With the v1.1 dev set (48 articles) and 40,
    the last 8 articles are the evaluation set.
    """
    order = list(dict.fromkeys(ex.article_index for ex in examples))  # articles in order of appearance
    if not 0 < n_train_articles < len(order):
        raise ValueError(
            f"split_by_article: n_train_articles={n_train_articles} must be between 1 and {len(order) - 1} "
            f"(the examples come from {len(order)} articles), so that both sides are non-empty"
        )
    train_articles = set(order[:n_train_articles])
    train = [ex for ex in examples if ex.article_index in train_articles]
    rest = [ex for ex in examples if ex.article_index not in train_articles]
    return train, rest


# ----------------------------------------------------------------------------------------------
# 2. Features: [CLS] question [SEP] context window [SEP]
# ----------------------------------------------------------------------------------------------


@dataclass
class Feature:
    """One window of one example, as the model sees it (unpadded; collate_features pads)."""

    example_index: int  # index into the examples list given to make_features
    example_id: str
    window_index: int  # 0, 1, ... along the context
    window_start: int  # index of the window's first token among the context's tokens
    input_ids: list[int]  # [CLS] question [SEP] window [SEP]
    token_type_ids: list[int]  # 0 for [CLS] question [SEP], 1 for window [SEP]
    attention_mask: list[int]  # all ones (padding comes in collate)
    offsets: list[tuple[int, int] | None]  # per position: (start, end) characters in the context; None off-context
    token_is_max_context: list[bool]  # per position: is this the token's best window? (False off-context)
    start_position: int | None = None  # training target: answer's first token, 0 ([CLS]) if not here
    end_position: int | None = None  # training target: answer's last token, 0 ([CLS]) if not here

    def __len__(self) -> int:
        return len(self.input_ids)


# Worked example: doc-stride windows
# -----------------------------------
# A context longer than the model's window is read through overlapping windows, as in Google's
# run_squad.py. Say the question has 4 tokens and max_seq_length = 13: a window holds at most
# 13 - 4 - 3 = 6 context tokens (3 = [CLS] and two [SEP]). With doc_stride = 3 and a 10-token
# context (tokens c0..c9):
#
#     window 0: c0 c1 c2 c3 c4 c5            starts at 0, 6 tokens
#     window 1:          c3 c4 c5 c6 c7 c8   starts at 3 (0 + stride), 6 tokens
#     window 2:                   c6 c7 c8 c9   starts at 6, 4 tokens (reaches the end: stop)
#
# Each window becomes one Feature:  [CLS] q0 q1 q2 q3 [SEP] c3 c4 c5 c6 c7 c8 [SEP]  (window 1)
# with token_type_ids 0 for "[CLS] question [SEP]" and 1 for "window [SEP]".
#
# A token seen in several windows is *predicted* only from the window where it has the most
# context on both sides: score = min(tokens to its left, tokens to its right) + 0.01 * window
# length (the small term prefers a longer window; on an exact tie the earlier window wins):
#
#     token  window 0        window 1        window 2        max-context window
#     c3     min(3,2)=2.06   min(0,5)=0.06   -               0
#     c4     min(4,1)=1.06   min(1,4)=1.06   -               0 (tie: the first)
#     c5     min(5,0)=0.06   min(2,3)=2.06   -               1
#     c6     -               min(3,2)=2.06   min(0,3)=0.04   1
#     c7     -               min(4,1)=1.06   min(1,2)=1.04   1
#     c8     -               min(5,0)=0.06   min(2,1)=1.04   2
#     (c0 c1 c2 only in window 0; c9 only in window 2)
#
# So c0-c4 are answered from window 0, c5-c7 from window 1, c8-c9 from window 2: the decoder only
# accepts a span whose *start* token has its max context in the window being decoded.
# For training, an answer "c4 c5" lies inside windows 0 and 1 (start/end = its positions there) but
# not inside window 2, whose target is start = end = 0, the [CLS] position ("no answer here").


def doc_windows(n_tokens: int, window: int, stride: int) -> list[tuple[int, int]]:
    """(start, length) of each window over `n_tokens` context tokens: see the worked example above.

    doc_windows(10, 6, 3) -> [(0, 6), (3, 6), (6, 4)]
    """
    if window <= 0 or stride <= 0:
        raise ValueError(f"doc_windows: window ({window}) and stride ({stride}) must be positive")
    spans, start = [], 0
    while start < n_tokens:
        length = min(n_tokens - start, window)  # a full window, or what is left of the context
        spans.append((start, length))
        if start + length == n_tokens:  # this window reaches the end of the context
            break
        start += min(length, stride)  # the next window overlaps this one by length - stride tokens
    return spans


def max_context_score(windows: Sequence[tuple[int, int]], w: int, token: int) -> float:
    """How much context `token` (a context-token index) has inside window `w`: min(left, right) + 0.01 * length."""
    start, length = windows[w]
    left, right = token - start, start + length - 1 - token  # tokens of context on each side
    return min(left, right) + 0.01 * length


def best_window(windows: Sequence[tuple[int, int]], token: int) -> int:
    """The window where `token` has the most context (the first one on a tie, as Google's `>`)."""
    best, best_score = -1, -math.inf
    for w, (start, length) in enumerate(windows):
        if start <= token < start + length:
            score = max_context_score(windows, w, token)
            if score > best_score:
                best, best_score = w, score
    return best


def _answer_token_span(offsets: Sequence[tuple[int, int]], start_char: int, end_char: int) -> tuple[int, int] | None:
    """First and last token overlapping the characters [start_char, end_char), or None.

    "Paris, France" with tokens paris(0,5) ,(5,6) france(7,13): the answer "France" (7..13)
    overlaps only token 2 -> (2, 2); an answer "ris, Fr" (2..9) overlaps tokens 0..2 -> (0, 2).
    """
    hits = [i for i, (a, b) in enumerate(offsets) if a < end_char and b > start_char]
    return (hits[0], hits[-1]) if hits else None


def make_features(
    examples: Sequence[Example],
    tokenizer,
    max_seq_length: int = QA_WINDOWS["max_seq_length"],
    doc_stride: int = QA_WINDOWS["doc_stride"],
    max_query_length: int = QA_WINDOWS["max_query_length"],
    training: bool = True,
) -> list[Feature]:
    """Examples -> model inputs, one Feature per doc-stride window (Google's run_squad.py layout).

    The question keeps at most `max_query_length` tokens; each window holds at most
    max_seq_length - len(question) - 3 context tokens, the next window starting `doc_stride`
    tokens later. With `training=True` each feature carries start/end positions of the first
    answer, or 0/0 ([CLS]) when the answer is not wholly inside the window or the question is
    impossible (v2.0). Character <-> token mapping uses the tokenizer's offsets, so an answer's
    tokens are exactly the tokens overlapping its characters.
    """
    backend = tokenizer.backend  # the `tokenizers.Tokenizer`: .ids and character .offsets per token
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    # Contexts repeat (about 5 questions per paragraph): tokenize each distinct one once.
    contexts = list(dict.fromkeys(ex.context for ex in examples))
    context_encodings = dict(zip(contexts, backend.encode_batch(contexts, add_special_tokens=False)))
    questions = backend.encode_batch([ex.question for ex in examples], add_special_tokens=False)

    features: list[Feature] = []
    for ex_index, (ex, q_enc) in enumerate(zip(examples, questions)):
        q_ids = q_enc.ids[:max_query_length]  # truncate long questions
        doc = context_encodings[ex.context]
        # "Four Five six" -> ids of four, five, six and offsets (0, 4), (5, 9), (10, 13)
        doc_ids, doc_offsets = doc.ids, [tuple(o) for o in doc.offsets]
        room = max_seq_length - len(q_ids) - 3  # context tokens per window: minus [CLS] [SEP] [SEP]
        if room <= 0:
            raise ValueError(
                f"make_features: question {ex.id} takes {len(q_ids)} tokens, leaving no room for context in "
                f"max_seq_length={max_seq_length}; lower max_query_length or raise max_seq_length"
            )
        windows = doc_windows(len(doc_ids), room, doc_stride)
        # The training target: token span of the first answer in the whole context.
        answer_span = None
        if training and not ex.is_impossible:
            if not ex.answers:
                raise ValueError(f"make_features: question {ex.id} has no answer to train on (and is not impossible)")
            first = ex.answers[0]
            start_char = first["answer_start"]
            answer_span = _answer_token_span(doc_offsets, start_char, start_char + len(first["text"]))

        prefix = [cls_id, *q_ids, sep_id]  # segment 0: [CLS] question [SEP]
        for w, (w_start, w_len) in enumerate(windows):
            # Context tokens w_start .. w_start + w_len - 1 go into this feature.
            window_ids = doc_ids[w_start : w_start + w_len]
            ids = prefix + window_ids + [sep_id]  # segment 1: window [SEP]
            # Per position: characters in the context (None for [CLS], question, [SEP]) ...
            offsets = [None] * len(prefix) + doc_offsets[w_start : w_start + w_len] + [None]
            # ... and whether this window is the token's max-context window.
            max_context = (
                [False] * len(prefix)
                + [best_window(windows, t) == w for t in range(w_start, w_start + w_len)]
                + [False]
            )
            feature = Feature(
                example_index=ex_index,
                example_id=ex.id,
                window_index=w,
                window_start=w_start,
                input_ids=ids,
                token_type_ids=[0] * len(prefix) + [1] * (w_len + 1),
                attention_mask=[1] * len(ids),
                offsets=offsets,
                token_is_max_context=max_context,
            )
            if training:
                # Answer tokens a..b (context indices) -> positions in this feature, if wholly inside.
                feature.start_position = feature.end_position = 0
                if answer_span is not None:
                    a, b = answer_span
                    if w_start <= a and b < w_start + w_len:
                        feature.start_position = a - w_start + len(prefix)
                        feature.end_position = b - w_start + len(prefix)
            features.append(feature)
    return features


# ----------------------------------------------------------------------------------------------
# 3. Batches
# ----------------------------------------------------------------------------------------------


def collate_features(
    features: Sequence[Feature], pad_id: int, pad_to_multiple_of: int | None = 8, max_length: int | None = None
) -> Batch:
    """Pad features to the longest (rounded up to a multiple of 8, never beyond max_length) -> Batch.

    Positions are included when every feature has them (features made with training=True).
    """
    if not features:
        raise ValueError("collate_features needs at least one feature")
    # Copy each feature into the left of its row; the rest stays [PAD] / type 0 / mask 0.
    ids, mask = pad_rows([f.input_ids for f in features], pad_id, pad_to_multiple_of, max_length)  # (B, T)
    types = torch.zeros_like(ids)  # (B, T)
    for row, f in enumerate(features):
        types[row, : len(f.token_type_ids)] = torch.tensor(f.token_type_ids, dtype=torch.long)
    batch = Batch(input_ids=ids, token_type_ids=types, attention_mask=mask)
    if all(f.start_position is not None and f.end_position is not None for f in features):
        batch["start_positions"] = torch.tensor([f.start_position for f in features], dtype=torch.long)  # (B,)
        batch["end_positions"] = torch.tensor([f.end_position for f in features], dtype=torch.long)  # (B,)
    return batch


# ----------------------------------------------------------------------------------------------
# 4. Decoding: logits -> answer spans
# ----------------------------------------------------------------------------------------------


@dataclass
class Span:
    """A candidate answer: context[start:end] == text (character offsets); "" is "no answer"."""

    text: str
    start: int
    end: int
    score: float  # start_logit + end_logit (for "": the null score, [CLS] + [CLS])
    probability: float = 0.0  # softmax of the score over the returned candidates
    window_index: int = -1  # which feature (window) the span was read from; -1 for ""


def _top_indexes(logits: Sequence[float], n: int) -> list[int]:
    """Indexes of the n largest values, largest first."""
    return sorted(range(len(logits)), key=lambda i: logits[i], reverse=True)[:n]


def _as_rows(logits: Any, features: Sequence[Feature]) -> list[list[float]]:
    """Per-feature logits (a [F, T] tensor/array or a list of 1-D ones) -> lists cut to each feature's length."""
    if len(logits) != len(features):
        raise ValueError(f"decode_spans: got logits for {len(logits)} windows but {len(features)} features")
    rows = []
    for row, f in zip(logits, features):
        values = torch.as_tensor(row, dtype=torch.float32).reshape(-1).tolist()
        if len(values) < len(f.input_ids):
            raise ValueError(f"decode_spans: {len(values)} logits for a window of {len(f.input_ids)} tokens")
        rows.append(values[: len(f.input_ids)])  # padding positions are never candidates
    return rows


def decode_spans(
    features: Sequence[Feature],
    start_logits: Any,
    end_logits: Any,
    example: Example,
    n_best: int = N_BEST,
    max_answer_length: int = MAX_ANSWER_LENGTH,
    null_threshold: float | None = None,
) -> list[Span]:
    """The best answer spans of one example, best first, from the logits of all its windows.

    For each window: take the n_best start and n_best end positions, keep pairs with
    end >= start, at most max_answer_length tokens, both in the context part, and a start token
    whose max-context window is this one (see the worked example at the top); score = start
    logit + end logit. All windows' candidates are ranked together; each distinct text appears
    once (its best occurrence). The texts come from the character offsets, so they keep the
    context's case, accents and spacing.

    No-answer (SQuAD v2.0): pass `null_threshold` (0.0 is the usual value). The null score is
    start_logits[0] + end_logits[0] ([CLS]), the smallest over the windows; when
    null score - best span score > null_threshold the first Span is "" (no answer). The null
    candidate is then also in the list. With null_threshold=None (v1.1) "" is never predicted.
    """
    if len(features) == 0:
        return []
    starts, ends = _as_rows(start_logits, features), _as_rows(end_logits, features)
    candidates: list[Span] = []
    null_score = math.inf
    for f, s, e in zip(features, starts, ends):
        null_score = min(null_score, s[0] + e[0])  # [CLS] start and end: "the answer is not here"
        # Only the n_best starts x n_best ends of the window are paired (at most n_best^2 pairs).
        for i in _top_indexes(s, n_best):
            # The start must be a context token, seen best from this window.
            if f.offsets[i] is None or not f.token_is_max_context[i]:
                continue
            for j in _top_indexes(e, n_best):
                # The end must be a context token, not before the start, and the span not too long.
                if f.offsets[j] is None or j < i or j - i + 1 > max_answer_length:
                    continue
                a, b = f.offsets[i][0], f.offsets[j][1]  # first token's first char .. last token's end
                candidates.append(Span(example.context[a:b], a, b, s[i] + e[j], window_index=f.window_index))
    # Best first; keep the best occurrence of each text, up to n_best.
    candidates.sort(key=lambda c: c.score, reverse=True)
    spans: list[Span] = []
    seen: set[str] = set()
    for c in candidates:
        if c.text not in seen and len(spans) < n_best:
            seen.add(c.text)
            spans.append(c)
    # SQuAD v2.0: answer "" when the null score beats the best span by more than the threshold.
    if null_threshold is not None:
        null = Span("", 0, 0, null_score)
        best_score = spans[0].score if spans else -math.inf
        if null_score - best_score > null_threshold:
            spans.insert(0, null)  # predict "no answer"
        else:
            # keep the best span first, the null candidate where its score puts it among the rest
            rest = sorted(spans[1:] + [null], key=lambda c: c.score, reverse=True)
            spans = spans[:1] + rest
    # Probabilities: softmax over the returned candidates' scores.
    if spans:
        top = max(c.score for c in spans)
        weights = [math.exp(c.score - top) for c in spans]
        total = sum(weights)
        for c, w in zip(spans, weights):
            c.probability = w / total
    return spans


def windows_by_example(features: Sequence[Feature]) -> dict[int, list[int]]:
    """{example index: the indexes of its windows (features)}."""
    by_example: dict[int, list[int]] = {}
    for k, f in enumerate(features):
        by_example.setdefault(f.example_index, []).append(k)
    return by_example
