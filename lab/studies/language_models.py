"""BERT beside OpenAI GPT and ELMo as language models: one encoder trained on three tasks (TASKS,
each under an attention direction of lab.studies.directions), then tests of what each learned.

    chunks = language_models.token_chunks(tokenizer, documents, length=32)
    run = language_models.train_language_model(tokenizer, chunks, held_out, "next_token", out_dir=..., steps=300)
    language_models.next_token_accuracy(run.model, held_out, run.direction, future="hidden")
    language_models.cloze({"BERT": bert, "GPT": gpt, "ELMo": (gpt, backward)}, tokenizer, held_out)

Every task is an objective for the one training loop (lab.training.train.train). A bidirectional
model trained to predict the next token "sees itself" (Section 3.1) and fails once the future is
hidden; the cloze test fills a blanked word from both sides, from one, or from two one-directional
models combined at the output (ELMo). The last section (notebook 2) is whole-word masking and the
masked-LM perplexity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from lab.config import BertConfig
from lab.data.batch import IGNORE_INDEX, Batch, pad_rows, step_indices
from lab.data.masking import SpecialIds, mask_tokens, word_spans
from lab.model import BertForMaskedLM
from lab.run_files import read_metrics
from lab.studies.directions import DIRECTIONS, direction_mask, encode
from lab.training.train import TrainConfig, train

TASKS = {  # task -> the attention direction that makes it an honest task
    "mlm": "bidirectional",  # BERT: predict masked tokens from both sides
    "next_token": "left_to_right",  # GPT: position t predicts token t+1 from tokens 0..t
    "previous_token": "right_to_left",  # ELMo's backward model: t predicts t-1 from tokens t..T-1
}


# ----------------------------------------------------------------------------------------
# Data: documents -> fixed-length chunks of token ids
# ----------------------------------------------------------------------------------------
def token_chunks(tokenizer, documents, length: int = 32) -> torch.Tensor:
    """[N, length] token ids: each document's sentences joined into one stream of tokens and cut
    into consecutive pieces (the remainder of each document is dropped). No [CLS]/[SEP].

    documents: lab.data.corpus.Document objects or lists of sentence strings.
    Example, length 4: "the cat sat . it slept ." (7 tokens) -> one chunk [the cat sat .]; the
    3 tokens left over ("it slept .") are dropped. A 10-token document gives 2 chunks.
    """
    if length < 2:
        raise ValueError(f"length must be at least 2, got {length}")
    chunks = []
    for doc in documents:
        sentences = list(getattr(doc, "sentences", doc))
        if not sentences:
            continue
        stream = [t for e in tokenizer.backend.encode_batch(sentences, add_special_tokens=False) for t in e.ids]
        for start in range(0, len(stream) - length + 1, length):
            chunks.append(stream[start : start + length])
    if not chunks:
        raise ValueError(f"no document holds {length} tokens: nothing to cut into chunks")
    return torch.tensor(chunks, dtype=torch.long)


# ----------------------------------------------------------------------------------------
# Language-model objectives for the one training loop
# ----------------------------------------------------------------------------------------
def lm_labels(input_ids: torch.Tensor, task: str, special: SpecialIds, generator: torch.Generator):
    """(inputs, labels) for one task; labels are -100 where nothing is predicted.

    ids        the cat sat on
    mlm        the [MASK] sat on     labels  -    cat  -    -     (15%, 80/10/10)
    next       the cat sat on        labels  cat  sat  on   -
    previous   the cat sat on        labels  -    the  cat  sat
    """
    if task == "mlm":
        return mask_tokens(
            input_ids,
            torch.zeros_like(input_ids, dtype=torch.bool),
            special,
            generator,
            mlm_probability=0.15,
            max_predictions_per_seq=input_ids.shape[1],
        )
    labels = torch.full_like(input_ids, IGNORE_INDEX)
    if task == "next_token":
        labels[:, :-1] = input_ids[:, 1:]  # position t predicts t+1
    elif task == "previous_token":
        labels[:, 1:] = input_ids[:, :-1]  # position t predicts t-1
    else:
        raise ValueError(f"task must be one of {list(TASKS)}, not {task!r}")
    return input_ids, labels


class LanguageModelObjective:
    """One of TASKS under one attention direction, on chunks of token ids (lab.training.train.train).

    A batch holds input_ids and mlm_labels (BertForMaskedLM's label name: the model computes
    vocabulary logits only at the labelled positions); the direction's [B, T, T] attention mask
    is built next to the model, on its device.
    """

    def __init__(
        self,
        train_chunks: torch.Tensor,
        eval_chunks: torch.Tensor,
        special: SpecialIds,
        task: str,
        direction: str,
        batch_size: int = 32,
        seed: int = 0,
    ):
        if task not in TASKS:
            raise ValueError(f"task must be one of {list(TASKS)}, not {task!r}")
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, not {direction!r}")
        self.train_chunks, self.eval_chunks = train_chunks, eval_chunks
        self.special, self.task, self.direction = special, task, direction
        self.batch_size, self.seed = batch_size, seed

    def _batch(self, ids: torch.Tensor, seed: int) -> Batch:
        inputs, labels = lm_labels(ids, self.task, self.special, torch.Generator().manual_seed(seed))
        return Batch(input_ids=inputs, mlm_labels=labels)

    def train_batch(self, index: int) -> Batch:
        rows = step_indices(len(self.train_chunks), self.batch_size, index, self.seed)
        return self._batch(self.train_chunks[rows], seed=self.seed * 1_000_003 + index)

    def forward(self, model, batch: Batch):
        """(model output, labels [N]): the output's .mlm_logits [N, V] are the vocabulary logits
        at the N labelled positions, in the order of `labels`, and .loss their mean cross-entropy."""
        out = model(**batch, attention_mask=direction_mask(batch.input_ids, self.direction))
        return out, batch.mlm_labels[batch.mlm_labels != IGNORE_INDEX]  # (N,)

    def loss(self, model, batch: Batch):
        """The loss and detached 0-dim tensors to log (the loop reads them at log steps only)."""
        out, labels = self.forward(model, batch)
        acc = (out.mlm_logits.argmax(-1) == labels).float().mean()
        return out.loss, {"loss": out.loss.detach(), "acc": acc.detach()}

    @torch.no_grad()
    def evaluate(self, model) -> dict[str, float]:
        """Held-out loss and accuracy, the task as trained (fixed masks for mlm)."""
        device = next(model.parameters()).device
        total, hits, n = 0.0, 0, 0
        for i in range(0, len(self.eval_chunks), 256):
            batch = self._batch(self.eval_chunks[i : i + 256], seed=12345 + i).to(device)
            out, labels = self.forward(model, batch)
            total += F.cross_entropy(out.mlm_logits.float(), labels, reduction="sum").item()
            hits += int((out.mlm_logits.argmax(-1) == labels).sum())
            n += len(labels)
        return {"loss": total / max(1, n), "accuracy": hits / max(1, n)}


@dataclass
class LMRun:
    """A trained language model and how it was trained."""

    name: str
    task: str  # mlm | next_token | previous_token
    direction: str  # bidirectional | left_to_right | right_to_left
    model: BertForMaskedLM  # eval mode, on the CPU
    run_dir: Path  # lab.training.train run directory (metrics.jsonl: plots.training_curves)
    metrics: dict = field(default_factory=dict)  # the last held-out evaluation
    seconds: float = 0.0  # training wall time
    steps: int = 0


def train_language_model(
    tokenizer,
    train_chunks,
    eval_chunks,
    task: str,
    out_dir,
    steps: int,
    direction: str | None = None,
    name: str | None = None,
    preset: str = "tiny",
    batch_size: int = 32,
    lr: float = 1e-3,
    eval_every: int | None = None,
    threads: int | None = None,
    seed: int = 0,
    progress: bool = False,
    log=print,
) -> LMRun:
    """Train a fresh BertForMaskedLM of `preset` shape on one task, through lab.training.train.train.

    direction defaults to the task's honest one (TASKS); give another to see what goes wrong
    (next_token + bidirectional: the model copies the answer from the next position).
    No dropout (a few hundred steps on a small model do not need it), warm-up 5%.
    """
    direction = direction or TASKS[task]
    special = SpecialIds.from_vocab(tokenizer.vocab)
    objective = LanguageModelObjective(train_chunks, eval_chunks, special, task, direction, batch_size, seed)
    cfg = BertConfig.preset(
        preset, vocab_size=tokenizer.vocab_size, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
    )
    torch.manual_seed(seed)
    model = BertForMaskedLM(cfg)
    tc = TrainConfig(
        out_dir=str(out_dir),
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        warmup=0.05,
        eval_every=eval_every or max(1, steps // 10),
        ckpt_every=steps,
        snapshots=0,
        log_every=max(1, min(10, steps // 20)),
        threads=threads,
        seed=seed,
        progress=progress,
    )
    metrics = train(model, objective, tc, tokenizer, log=log)
    model.cpu().eval()
    seconds = max((r.get("time", 0.0) for r in read_metrics(out_dir)), default=0.0)
    return LMRun(name or f"{task} ({direction})", task, direction, model, Path(out_dir), metrics, seconds, steps)


# ----------------------------------------------------------------------------------------
# Evaluation 1: predicting the next token, with the future hidden or visible
# ----------------------------------------------------------------------------------------
@torch.no_grad()
def next_token_accuracy(
    model, chunks: torch.Tensor, direction: str = "left_to_right", future: str = "hidden", batch_size: int = 256
) -> float:
    """Top-1 accuracy of predicting token t+1 at position t, over every position of the chunks.

    future="hidden": position t's output depends on tokens 0..t only, as when generating text.
    A left-to-right model is like that by construction; for any other direction every prefix
    0..t is run on its own (the keys after t are masked out), T-1 rows per chunk.
    future="visible": the whole chunk is in the input, as during training; a bidirectional
    model can then read token t+1 directly.
    """
    if future not in ("hidden", "visible"):
        raise ValueError(f"future must be 'hidden' or 'visible', not {future!r}")
    model.eval()
    N, T = chunks.shape
    if future == "visible" or direction == "left_to_right":
        hits, n = 0, 0
        for i in range(0, N, batch_size):
            ids = chunks[i : i + batch_size]
            h = encode(model, ids, direction).last_hidden_state[:, :-1]  # (B, T-1, H)
            pred = model.cls.predictions(h).argmax(-1)  # (B, T-1)
            hits += int((pred == ids[:, 1:]).sum())
            n += pred.numel()
        return hits / max(1, n)
    # Every prefix separately: row (chunk c, t) sees keys 0..t of chunk c.
    t = torch.arange(T - 1)  # (T-1,)
    keys = (torch.arange(T)[None, :] <= t[:, None]).long()  # (T-1, T)
    hits, n = 0, 0
    per = max(1, batch_size // (T - 1))
    for i in range(0, N, per):
        ids = chunks[i : i + per]  # (b, T)
        b = len(ids)
        rows = ids.repeat_interleave(T - 1, dim=0)  # (b*(T-1), T)
        h = encode(model, rows, direction, attention_mask=keys.repeat(b, 1)).last_hidden_state
        h_t = h[torch.arange(len(rows)), t.repeat(b)]  # (b*(T-1), H) at t
        pred = model.cls.predictions(h_t).argmax(-1)
        hits += int((pred == ids[:, 1:].reshape(-1)).sum())
        n += len(pred)
    return hits / max(1, n)


# ----------------------------------------------------------------------------------------
# Evaluation 2: the cloze test (a word blanked in the middle of a chunk)
# ----------------------------------------------------------------------------------------
@dataclass
class ClozeResult:
    accuracy: dict[str, float]  # model name -> top-1 accuracy at the blanks
    probability: dict[str, float]  # model name -> mean probability given to the right word
    examples: list[dict]  # per blank: left, answer, right, and each model's top guesses
    blanks: int = 0
    correct: dict[str, list[bool]] = field(default_factory=dict)  # model name -> top-1 right, per blank


def cloze_blanks(tokenizer, chunks: torch.Tensor, n: int = 200, margin: int = 4, seed: int = 0):
    """(row, position) of up to n blanks, at most one per chunk: a whole word of one WordPiece
    token made of letters, with at least `margin` tokens on each side."""
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(chunks), generator=g).tolist()
    blanks = []
    for row in order:
        tokens = tokenizer.convert_ids_to_tokens(chunks[row].tolist())
        ok = [
            p for p in range(margin, len(tokens) - margin) if tokens[p].isalpha() and not tokens[p + 1].startswith("##")
        ]
        if ok:
            blanks.append((row, ok[int(torch.randint(len(ok), (1,), generator=g))]))
        if len(blanks) == n:
            break
    return blanks


def _blank_log_probs(run: LMRun, ids: torch.Tensor, pos: torch.Tensor, mask_id: int) -> torch.Tensor:
    """[n, V] log-probabilities of the word at each blank, as this run's task reads it."""
    rows = torch.arange(len(ids))
    if run.task == "mlm":  # both sides visible, the blank itself is [MASK]
        ids = ids.clone()
        ids[rows, pos] = mask_id
        at = pos
    elif run.task == "next_token":  # read from the position before the blank
        at = pos - 1
    else:  # previous_token: from the position after it
        at = pos + 1
    h = encode(run.model, ids, run.direction).last_hidden_state[rows, at]  # (n, H)
    return run.model.cls.predictions(h).float().log_softmax(-1)  # (n, V)


@torch.no_grad()
def cloze(
    runs: dict,
    tokenizer,
    chunks: torch.Tensor,
    n: int = 200,
    margin: int = 4,
    seed: int = 0,
    top_k: int = 3,
    show: int = 8,
) -> ClozeResult:
    """Fill in one blanked word per chunk with each model and score the guesses.

    runs: name -> LMRun, or name -> a tuple of LMRuns combined at the output (their
    log-probabilities added and renormalised: a left-to-right and a right-to-left model
    trained separately, as ELMo combines two one-directional models, "shallowly").
    """
    blanks = cloze_blanks(tokenizer, chunks, n, margin, seed)
    if not blanks:
        raise ValueError("no blank could be placed: the chunks are too short for the margin")
    ids = chunks[[r for r, _ in blanks]]  # (n, T)
    pos = torch.tensor([p for _, p in blanks])  # (n,)
    answers = ids[torch.arange(len(ids)), pos]  # (n,)
    result = ClozeResult({}, {}, [], len(blanks))
    guesses = {}
    for name, run in runs.items():
        members = run if isinstance(run, (tuple, list)) else (run,)
        for m in members:
            m.model.eval()
        logp = sum(_blank_log_probs(m, ids, pos, tokenizer.mask_token_id) for m in members)
        logp = logp.log_softmax(-1)  # (n, V)
        hits = logp.argmax(-1) == answers  # (n,)
        result.accuracy[name] = float(hits.float().mean())
        result.correct[name] = hits.tolist()
        result.probability[name] = float(logp[torch.arange(len(ids)), answers].exp().mean())
        top = logp.exp().topk(top_k, dim=-1)
        guesses[name] = [
            [(tokenizer.convert_ids_to_tokens(int(i)), round(float(p), 3)) for p, i in zip(ps, ix)]
            for ps, ix in zip(top.values, top.indices)
        ]
    for k in range(min(show, len(blanks))):
        row, p = ids[k].tolist(), int(pos[k])
        result.examples.append(
            {
                "left": tokenizer.decode(row[:p]),
                "answer": tokenizer.convert_ids_to_tokens(row[p]),
                "right": tokenizer.decode(row[p + 1 :]),
                **{name: g[k] for name, g in guesses.items()},
            }
        )
    return result


def accuracy_interval(correct, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval (95% for z = 1.96) of an accuracy measured on len(correct) items.
    E.g. 55 right of 256: 21.5%, interval about 16.9% to 26.9%."""
    n = len(correct)
    if n == 0:
        return 0.0, 1.0
    p = sum(bool(c) for c in correct) / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5 / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_difference(correct_a, correct_b, z: float = 1.96) -> tuple[float, float, float]:
    """Accuracy of a minus accuracy of b on the same items, with a normal-approximation interval
    of the paired difference: (difference, low, high). The blanks are shared, so the
    per-item differences (+1, 0, -1) are what varies."""
    d = [int(bool(a)) - int(bool(b)) for a, b in zip(correct_a, correct_b)]
    n = len(d)
    if n < 2:
        return 0.0, -1.0, 1.0
    mean = sum(d) / n
    var = sum((x - mean) ** 2 for x in d) / (n - 1)
    half = z * (var / n) ** 0.5
    return mean, mean - half, mean + half


# ----------------------------------------------------------------------------------------
# Evaluation 3: whole-word masking, and the masked-LM perplexity
# ----------------------------------------------------------------------------------------
# Token-level masking chooses WordPiece tokens, so a word split into pieces can be half hidden:
#     un ##believ ##ably  ->  un [MASK] ##ably      (the visible pieces nearly give it away)
# Whole-word masking (Google's BERT repository, README update of 31 May 2019; the flag
# --do_whole_word_mask of create_pretraining_data.py) always chooses all pieces of a word:
#     un ##believ ##ably  ->  [MASK] [MASK] [MASK]
# lab.data.instances.mask_tokens(..., whole_word=True) implements it; the functions below show it on
# text and measure what it changes for a trained model.
def _encode_sentences(tokenizer, sentences, max_length: int) -> list[list[int]]:
    """[CLS] sentence [SEP] ids of each sentence, cut to max_length."""
    encodings = tokenizer.backend.encode_batch(list(sentences), add_special_tokens=False)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    return [[cls] + e.ids[: max_length - 2] + [sep] for e in encodings]


@dataclass
class MaskingCounts:
    """What one masking of some text chose: how many predicted tokens sit in a word that is
    only partly chosen (its other pieces visible, or at least not predicted)."""

    predicted: int  # tokens chosen for prediction
    in_split_words: int  # of those: pieces of a word whose other pieces were not all chosen
    words_split: int  # words of which some, but not all, pieces were chosen
    multi_piece_words: int  # words of two or more pieces in the text

    @property
    def split_share(self) -> float:
        return self.in_split_words / max(1, self.predicted)


def masking_counts(
    input_ids: torch.Tensor, labels: torch.Tensor, special: SpecialIds, maskable: torch.Tensor | None = None
) -> MaskingCounts:
    """Count, in a masked batch ([B, T] ids before corruption and their mlm_labels), the words
    that the masking split: some pieces chosen (label set), some not. Whole-word masking never
    splits a word; token-level masking does whenever it picks a piece of a longer word."""
    chosen = labels != IGNORE_INDEX  # (B, T)
    predicted = in_split = split = multi = 0
    for b in range(input_ids.shape[0]):
        row_chosen = chosen[b].tolist()
        for start, end in word_spans(input_ids[b], special, None if maskable is None else maskable[b]):
            picks = sum(row_chosen[start:end])
            multi += end - start > 1
            if 0 < picks < end - start:
                split += 1
                in_split += picks
        predicted += sum(row_chosen)
    return MaskingCounts(predicted, in_split, split, multi)


def count_masking(
    tokenizer, sentences, whole_word: bool = False, seed: int = 0, max_length: int = 128
) -> MaskingCounts:
    """Mask each sentence once ([CLS] sentence [SEP], 15%, as pre-training does) and count the
    words split (MaskingCounts)."""
    special = SpecialIds.from_vocab(tokenizer.vocab)
    ids, _ = pad_rows(_encode_sentences(tokenizer, sentences, max_length), special.pad_id, None)
    _, labels = mask_tokens(ids, None, special, torch.Generator().manual_seed(seed), whole_word=whole_word)
    return masking_counts(ids, labels, special)


@dataclass
class MaskingComparison:
    """One sentence masked at the token level and by whole words, with the same seed."""

    tokens: list[str]  # [CLS] ... [SEP]
    token_level: list[str]  # the tokens with the chosen ones shown as [MASK]
    whole_word: list[str]
    split_words: list[str]  # the words token-level masking split ("un ##believ ##ably")
    seed: int  # the seed that gave this pair


def compare_masking(
    tokenizer, sentences, seed: int = 0, min_pieces: int = 3, tries: int = 500, max_length: int = 64
) -> MaskingComparison:
    """Show token-level and whole-word masking on one sentence: the first sentence holding a word
    of at least `min_pieces` pieces (else the one with the longest word), masked with the first
    seed (from `seed` on) under which token-level masking chose some but not all pieces of one
    of its words; whole-word masking gets the same seed. Chosen tokens are shown as [MASK] (in
    pre-training 10% of them would be a random token and 10% stay unchanged:
    lab.data.instances.mask_tokens)."""
    special = SpecialIds.from_vocab(tokenizer.vocab)
    rows = _encode_sentences(tokenizer, sentences, max_length)
    longest = [max((e - s for s, e in word_spans(r, special)), default=0) for r in rows]
    pick = next((r for r, n in zip(rows, longest) if n >= min_pieces), None)
    if pick is None:  # a short text: the sentence with the longest word
        pick = rows[max(range(len(rows)), key=longest.__getitem__)] if rows and max(longest) > 1 else None
    if pick is None:
        raise ValueError("no sentence holds a word of two or more pieces: nothing for whole-word masking to change")
    ids = torch.tensor([pick])  # (1, T)
    tokens = tokenizer.convert_ids_to_tokens(pick)

    def shown(labels):
        return [("[MASK]" if lab != IGNORE_INDEX else t) for t, lab in zip(tokens, labels[0].tolist())]

    for s in range(seed, seed + tries):
        _, token_labels = mask_tokens(ids, None, special, torch.Generator().manual_seed(s))
        chosen = (token_labels[0] != IGNORE_INDEX).tolist()
        split = [" ".join(tokens[a:b]) for a, b in word_spans(pick, special) if 0 < sum(chosen[a:b]) < b - a]
        if split:
            _, word_labels = mask_tokens(ids, None, special, torch.Generator().manual_seed(s), whole_word=True)
            return MaskingComparison(tokens, shown(token_labels), shown(word_labels), split, s)
    raise ValueError(f"no seed in [{seed}, {seed + tries}) split a word of this sentence")


@dataclass
class PieceAccuracy:
    """Accuracy at "##" continuation pieces: hidden alone (the rest of the word visible) or with
    their whole word hidden. Both on the same pieces, in the same sentences."""

    pieces: int  # continuation pieces scored
    words: int  # the multi-piece words they belong to
    sentences: int  # sentences read
    partial: float  # top-1 accuracy, only the piece masked
    whole: float  # top-1 accuracy, the whole word masked
    partial_correct: list[bool] = field(default_factory=list)
    whole_correct: list[bool] = field(default_factory=list)
    examples: list[dict] = field(default_factory=list)  # the first `show` distinct pieces: word, piece, both guesses


@torch.no_grad()
def continuation_piece_accuracy(
    model, tokenizer, sentences, max_length: int = 64, batch_size: int = 128, show: int = 8
) -> PieceAccuracy:
    """For every "##" piece of every multi-piece word of the sentences, predict it twice:
    with only that piece replaced by [MASK] (what token-level masking often asks: the word's
    other pieces stay visible) and with every piece of its word replaced by [MASK] (what
    whole-word masking always asks). Nothing else in the sentence is masked.

    Example, "he was un ##believ ##ably rude": for the piece ##believ the two inputs are
        he was un [MASK] ##ably rude         and       he was [MASK] [MASK] [MASK] rude
    and the model's top guess at that position is compared with ##believ.
    """
    special = SpecialIds.from_vocab(tokenizer.vocab)
    rows = _encode_sentences(tokenizer, sentences, max_length)
    cases = []  # (row, piece position, word span) per piece
    words = 0
    for r, ids in enumerate(rows):
        for start, end in word_spans(ids, special):
            if end - start > 1:
                words += 1
                cases.extend((r, p, (start, end)) for p in range(start + 1, end))
    mask_id = tokenizer.mask_token_id
    model.eval()
    hits = {"partial": [], "whole": []}
    guesses = {"partial": [], "whole": []}
    for kind in ("partial", "whole"):
        for i in range(0, len(cases), batch_size):
            part = cases[i : i + batch_size]
            inputs, targets = [], []
            for r, p, (start, end) in part:
                ids = list(rows[r])
                for q in [p] if kind == "partial" else range(start, end):
                    ids[q] = mask_id
                inputs.append(ids)
                targets.append(rows[r][p])
            ids, attn = pad_rows(inputs, special.pad_id, None)  # (b, T)
            labels = torch.full_like(ids, IGNORE_INDEX)
            labels[torch.arange(len(part)), torch.tensor([p for _, p, _ in part])] = torch.tensor(targets)
            device = next(model.parameters()).device
            out = model(input_ids=ids.to(device), attention_mask=attn.to(device), mlm_labels=labels.to(device))
            top = out.mlm_logits.argmax(-1).cpu()  # (b,) in row order
            hits[kind].extend((top == torch.tensor(targets)).tolist())
            guesses[kind].extend(top.tolist())
    n = len(cases)
    result = PieceAccuracy(
        n,
        words,
        len(rows),
        sum(hits["partial"]) / max(1, n),
        sum(hits["whole"]) / max(1, n),
        hits["partial"],
        hits["whole"],
    )
    shown = set()
    for k, (r, p, (start, end)) in enumerate(cases):
        word, piece = (
            " ".join(tokenizer.convert_ids_to_tokens(rows[r][start:end])),
            tokenizer.convert_ids_to_tokens(rows[r][p]),
        )
        if len(result.examples) == show:
            break
        if (word, piece) in shown:  # one example per piece of a word
            continue
        shown.add((word, piece))
        result.examples.append(
            {
                "word": word,
                "piece": piece,
                "guess, piece alone masked": tokenizer.convert_ids_to_tokens(guesses["partial"][k]),
                "guess, whole word masked": tokenizer.convert_ids_to_tokens(guesses["whole"][k]),
            }
        )
    return result


def unigram_log_probs(tokenizer, sentences, smoothing: float = 1.0) -> torch.Tensor:
    """[V] log-probabilities of each piece by its frequency in the sentences (add-`smoothing`
    counts, so an unseen piece is unlikely but possible): the "unigram" model that guesses
    without reading any context. [PAD], [CLS], [SEP] and [MASK] get probability 0."""
    ids = [i for e in tokenizer.backend.encode_batch(list(sentences), add_special_tokens=False) for i in e.ids]
    counts = torch.bincount(torch.tensor(ids, dtype=torch.long), minlength=tokenizer.vocab_size).double()
    counts += float(smoothing)
    for i in (tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id):
        counts[i] = 0.0
    return (counts / counts.sum()).log().float()


@dataclass
class MaskedLMScore:
    """Masked-LM cross-entropy at [MASK] positions and its exponential, the perplexity."""

    loss: float  # mean cross-entropy in nats per masked piece
    accuracy: float  # top-1 accuracy at the same positions
    predictions: int  # [MASK] positions scored
    sentences: int

    @property
    def perplexity(self) -> float:
        """exp(loss): the model is as unsure as a uniform choice among this many pieces."""
        return math.exp(self.loss)


@torch.no_grad()
def masked_lm_perplexity(
    predictor, tokenizer, sentences, seed: int = 0, whole_word: bool = False, max_length: int = 64, batch_size: int = 64
) -> MaskedLMScore:
    """The masked-LM perplexity: exp(mean cross-entropy at the positions replaced by [MASK]).

    Each sentence ([CLS] sentence [SEP]) is masked once as pre-training masks (15%, 80/10/10,
    seeded: the same seed and tokenizer give the same positions for every predictor) and
    scored at the positions that show [MASK] (the 10% unchanged ones could simply be copied).
    predictor: a model with a masked-LM head, or a [V] tensor of log-probabilities used at
    every position (a context-free baseline: `unigram_log_probs`; a uniform tensor gives
    exactly V). Each hidden piece is predicted from both sides: this is not the left-to-right
    perplexity of a GPT-style model and does not compare with it; nor do perplexities over
    different vocabularies (other pieces) compare with each other.
    """
    special = SpecialIds.from_vocab(tokenizer.vocab)
    rows = _encode_sentences(tokenizer, sentences, max_length)
    generator = torch.Generator().manual_seed(seed)
    total, hits, n = 0.0, 0, 0
    is_model = not torch.is_tensor(predictor)
    if is_model:
        predictor.eval()
        device = next(predictor.parameters()).device
    for i in range(0, len(rows), batch_size):
        ids, attn = pad_rows(rows[i : i + batch_size], special.pad_id, None)  # (b, T)
        masked, labels = mask_tokens(ids, None, special, generator, whole_word=whole_word)
        labels = labels.masked_fill(masked != special.mask_id, IGNORE_INDEX)  # score at [MASK] only
        targets = labels[labels != IGNORE_INDEX]  # (N,)
        if len(targets) == 0:
            continue
        if is_model:
            out = predictor(input_ids=masked.to(device), attention_mask=attn.to(device), mlm_labels=labels.to(device))
            logp = out.mlm_logits.float().log_softmax(-1).cpu()  # (N, V)
        else:
            logp = predictor.float().log_softmax(-1).expand(len(targets), -1)  # (N, V)
        total -= float(logp[torch.arange(len(targets)), targets].sum())
        hits += int((logp.argmax(-1) == targets).sum())
        n += len(targets)
    return MaskedLMScore(total / max(1, n), hits / max(1, n), n, len(rows))
