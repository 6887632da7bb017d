"""BERT beside OpenAI GPT and ELMo as language models: one encoder trained on three tasks,
then two tests of what each learned (next-token accuracy, and the cloze test).

    from lab import language_models
    chunks = language_models.token_chunks(tokenizer, documents, length=32)
    run = language_models.train_language_model(tokenizer, chunks, held_out, "next_token", out_dir=..., steps=300)
    language_models.next_token_accuracy(run.model, held_out, run.direction, future="hidden")
    language_models.cloze({"BERT": bert_run, "GPT": gpt_run, "ELMo": (gpt_run, backward_run)},
                          tokenizer, held_out)

What lives here
- Three language-model tasks for one encoder (TASKS): "mlm" (BERT: predict 15% of the tokens,
  80/10/10, with lab.instances.mask_tokens), "next_token" (GPT: position t predicts t+1) and
  "previous_token" (the right-to-left half of ELMo: position t predicts t-1). Each runs under an
  attention direction of lab.directions; `LanguageModelObjective` plugs a task into the one
  training loop (lab.train.train) and `train_language_model` trains a fresh BertForMaskedLM.
- `next_token_accuracy` with the future hidden or visible: a bidirectional model trained to
  predict the next token "sees itself" (Section 3.1 of the paper) and fails once the future
  is hidden.
- `cloze`: fill in a blanked word from both sides (BERT) or from one (GPT, right-to-left), or
  with two one-directional models combined at the output (ELMo, "shallowly").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from .batch import IGNORE_INDEX, Batch, step_indices
from .config import BertConfig
from .directions import DIRECTIONS, direction_mask, encode
from .instances import SpecialIds, mask_tokens
from .model import BertForMaskedLM
from .runs import read_metrics
from .train import TrainConfig, train

TASKS = {  # task -> the attention direction that makes it an honest task
    "mlm": "bidirectional",             # BERT: predict masked tokens from both sides
    "next_token": "left_to_right",      # GPT: position t predicts token t+1 from tokens 0..t
    "previous_token": "right_to_left",  # ELMo's backward model: t predicts t-1 from tokens t..T-1
}


# ----------------------------------------------------------------------------------------
# Data: documents -> fixed-length chunks of token ids
# ----------------------------------------------------------------------------------------
def token_chunks(tokenizer, documents, length: int = 32) -> torch.Tensor:
    """[N, length] token ids: each document's sentences joined into one stream of tokens and cut
    into consecutive pieces (the remainder of each document is dropped). No [CLS]/[SEP].

    documents: lab.corpus.Document objects or lists of sentence strings.
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
            chunks.append(stream[start:start + length])
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
        return mask_tokens(input_ids, torch.zeros_like(input_ids, dtype=torch.bool), special, generator,
                           mlm_probability=0.15, max_predictions_per_seq=input_ids.shape[1])
    labels = torch.full_like(input_ids, IGNORE_INDEX)
    if task == "next_token":
        labels[:, :-1] = input_ids[:, 1:]           # position t predicts t+1
    elif task == "previous_token":
        labels[:, 1:] = input_ids[:, :-1]           # position t predicts t-1
    else:
        raise ValueError(f"task must be one of {list(TASKS)}, not {task!r}")
    return input_ids, labels


class LanguageModelObjective:
    """One of TASKS under one attention direction, on chunks of token ids (lab.train.train).

    A batch holds input_ids and mlm_labels (BertForMaskedLM's label name: the model computes
    vocabulary logits only at the labelled positions); the direction's [B, T, T] attention mask
    is built next to the model, on its device.
    """

    def __init__(self, train_chunks: torch.Tensor, eval_chunks: torch.Tensor, special: SpecialIds,
                 task: str, direction: str, batch_size: int = 32, seed: int = 0):
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
        return out, batch.mlm_labels[batch.mlm_labels != IGNORE_INDEX]                 # (N,)

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
            batch = self._batch(self.eval_chunks[i:i + 256], seed=12345 + i).to(device)
            out, labels = self.forward(model, batch)
            total += F.cross_entropy(out.mlm_logits.float(), labels, reduction="sum").item()
            hits += int((out.mlm_logits.argmax(-1) == labels).sum())
            n += len(labels)
        return {"loss": total / max(1, n), "accuracy": hits / max(1, n)}


@dataclass
class LMRun:
    """A trained language model and how it was trained."""
    name: str
    task: str                  # mlm | next_token | previous_token
    direction: str             # bidirectional | left_to_right | right_to_left
    model: BertForMaskedLM     # eval mode, on the CPU
    run_dir: Path              # lab.train run directory (metrics.jsonl: plots.training_curves)
    metrics: dict = field(default_factory=dict)   # the last held-out evaluation
    seconds: float = 0.0       # training wall time
    steps: int = 0


def train_language_model(tokenizer, train_chunks, eval_chunks, task: str, out_dir, steps: int,
                         direction: str | None = None, name: str | None = None, preset: str = "tiny",
                         batch_size: int = 32, lr: float = 1e-3, eval_every: int | None = None,
                         threads: int | None = None, seed: int = 0, progress: bool = False,
                         log=print) -> LMRun:
    """Train a fresh BertForMaskedLM of `preset` shape on one task, through lab.train.train.

    direction defaults to the task's honest one (TASKS); give another to see what goes wrong
    (next_token + bidirectional: the model copies the answer from the next position).
    No dropout (a few hundred steps on a small model do not need it), warm-up 5%.
    """
    direction = direction or TASKS[task]
    special = SpecialIds.from_vocab(tokenizer.vocab)
    objective = LanguageModelObjective(train_chunks, eval_chunks, special, task, direction, batch_size, seed)
    cfg = BertConfig.preset(preset, vocab_size=tokenizer.vocab_size, hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0)
    torch.manual_seed(seed)
    model = BertForMaskedLM(cfg)
    tc = TrainConfig(out_dir=str(out_dir), steps=steps, batch_size=batch_size, lr=lr, warmup=0.05,
                     eval_every=eval_every or max(1, steps // 10), ckpt_every=steps, snapshots=0,
                     log_every=max(1, min(10, steps // 20)), threads=threads, seed=seed, progress=progress)
    metrics = train(model, objective, tc, tokenizer, log=log)
    model.cpu().eval()
    seconds = max((r.get("time", 0.0) for r in read_metrics(out_dir)), default=0.0)
    return LMRun(name or f"{task} ({direction})", task, direction, model, Path(out_dir), metrics, seconds, steps)


# ----------------------------------------------------------------------------------------
# Evaluation 1: predicting the next token, with the future hidden or visible
# ----------------------------------------------------------------------------------------
@torch.no_grad()
def next_token_accuracy(model, chunks: torch.Tensor, direction: str = "left_to_right",
                        future: str = "hidden", batch_size: int = 256) -> float:
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
            ids = chunks[i:i + batch_size]
            h = encode(model, ids, direction).last_hidden_state[:, :-1]          # (B, T-1, H)
            pred = model.cls.predictions(h).argmax(-1)                           # (B, T-1)
            hits += int((pred == ids[:, 1:]).sum())
            n += pred.numel()
        return hits / max(1, n)
    # Every prefix separately: row (chunk c, t) sees keys 0..t of chunk c.
    t = torch.arange(T - 1)                                                       # (T-1,)
    keys = (torch.arange(T)[None, :] <= t[:, None]).long()                        # (T-1, T)
    hits, n = 0, 0
    per = max(1, batch_size // (T - 1))
    for i in range(0, N, per):
        ids = chunks[i:i + per]                                                   # (b, T)
        b = len(ids)
        rows = ids.repeat_interleave(T - 1, dim=0)                                # (b*(T-1), T)
        h = encode(model, rows, direction, attention_mask=keys.repeat(b, 1)).last_hidden_state
        h_t = h[torch.arange(len(rows)), t.repeat(b)]                             # (b*(T-1), H) at t
        pred = model.cls.predictions(h_t).argmax(-1)
        hits += int((pred == ids[:, 1:].reshape(-1)).sum())
        n += len(pred)
    return hits / max(1, n)


# ----------------------------------------------------------------------------------------
# Evaluation 2: the cloze test (a word blanked in the middle of a chunk)
# ----------------------------------------------------------------------------------------
@dataclass
class ClozeResult:
    accuracy: dict[str, float]        # model name -> top-1 accuracy at the blanks
    probability: dict[str, float]     # model name -> mean probability given to the right word
    examples: list[dict]              # per blank: left, answer, right, and each model's top guesses
    blanks: int = 0
    correct: dict[str, list[bool]] = field(default_factory=dict)   # model name -> top-1 right, per blank


def cloze_blanks(tokenizer, chunks: torch.Tensor, n: int = 200, margin: int = 4, seed: int = 0):
    """(row, position) of up to n blanks, at most one per chunk: a whole word of one WordPiece
    token made of letters, with at least `margin` tokens on each side."""
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(chunks), generator=g).tolist()
    blanks = []
    for row in order:
        tokens = tokenizer.convert_ids_to_tokens(chunks[row].tolist())
        ok = [p for p in range(margin, len(tokens) - margin)
              if tokens[p].isalpha() and not tokens[p + 1].startswith("##")]
        if ok:
            blanks.append((row, ok[int(torch.randint(len(ok), (1,), generator=g))]))
        if len(blanks) == n:
            break
    return blanks


def _blank_log_probs(run: LMRun, ids: torch.Tensor, pos: torch.Tensor, mask_id: int) -> torch.Tensor:
    """[n, V] log-probabilities of the word at each blank, as this run's task reads it."""
    rows = torch.arange(len(ids))
    if run.task == "mlm":                         # both sides visible, the blank itself is [MASK]
        ids = ids.clone()
        ids[rows, pos] = mask_id
        at = pos
    elif run.task == "next_token":                # read from the position before the blank
        at = pos - 1
    else:                                         # previous_token: from the position after it
        at = pos + 1
    h = encode(run.model, ids, run.direction).last_hidden_state[rows, at]      # (n, H)
    return run.model.cls.predictions(h).float().log_softmax(-1)                 # (n, V)


@torch.no_grad()
def cloze(runs: dict, tokenizer, chunks: torch.Tensor, n: int = 200, margin: int = 4, seed: int = 0,
          top_k: int = 3, show: int = 8) -> ClozeResult:
    """Fill in one blanked word per chunk with each model and score the guesses.

    runs: name -> LMRun, or name -> a tuple of LMRuns combined at the output (their
    log-probabilities added and renormalised: a left-to-right and a right-to-left model
    trained separately, as ELMo combines two one-directional models, "shallowly").
    """
    blanks = cloze_blanks(tokenizer, chunks, n, margin, seed)
    if not blanks:
        raise ValueError("no blank could be placed: the chunks are too short for the margin")
    ids = chunks[[r for r, _ in blanks]]                                        # (n, T)
    pos = torch.tensor([p for _, p in blanks])                                  # (n,)
    answers = ids[torch.arange(len(ids)), pos]                                   # (n,)
    result = ClozeResult({}, {}, [], len(blanks))
    guesses = {}
    for name, run in runs.items():
        members = run if isinstance(run, (tuple, list)) else (run,)
        for m in members:
            m.model.eval()
        logp = sum(_blank_log_probs(m, ids, pos, tokenizer.mask_token_id) for m in members)
        logp = logp.log_softmax(-1)                                             # (n, V)
        hits = logp.argmax(-1) == answers                                        # (n,)
        result.accuracy[name] = float(hits.float().mean())
        result.correct[name] = hits.tolist()
        result.probability[name] = float(logp[torch.arange(len(ids)), answers].exp().mean())
        top = logp.exp().topk(top_k, dim=-1)
        guesses[name] = [[(tokenizer.convert_ids_to_tokens(int(i)), round(float(p), 3))
                          for p, i in zip(ps, ix)] for ps, ix in zip(top.values, top.indices)]
    for k in range(min(show, len(blanks))):
        row, p = ids[k].tolist(), int(pos[k])
        result.examples.append({"left": tokenizer.decode(row[:p]), "answer": tokenizer.convert_ids_to_tokens(row[p]),
                                "right": tokenizer.decode(row[p + 1:]),
                                **{name: g[k] for name, g in guesses.items()}})
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
