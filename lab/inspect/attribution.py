"""What the answer rests on: one score per input token, by integrated gradients (Sundararajan et
al. 2017) or gradient x input, for a classifier's label, a QA span, a [MASK]'s word or NSP.

    from lab import explore
    r = explore.attributions(model, tokenizer, "a charming and often moving film .")
    r.tokens, r.scores, r.target          # one score per token; what was attributed (f)
    r.f_input - r.f_baseline              # what the scores add up to (completeness)

f is the answer's log-odds; the baseline is [PAD]'s word embedding at every word piece, with
[CLS], [SEP], [MASK], positions and segments as in the input. The interpolated embeddings go
through the model's own modules as a tensor, so the one model the dashboard's requests share is
never changed. docs/inside-bert.md says why this f, this baseline, this rule and not Captum.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from lab.inspect.encoding import encode, mask_positions, missing_head_message, model_tasks, target_ids
from lab.model import ModelOutput
from lab.tokenizer import clean_text

METHODS = ("integrated_gradients", "gradient_x_input")
TASKS = ("classify", "answer", "fill_mask", "next_sentence")
BASELINE = "[PAD] word embeddings, [CLS]/[SEP]/[MASK] kept, same positions and segments"
MAX_SPAN = 30  # answer tokens, as explore.answer's max_answer_length
ROWS_PER_PASS = 32  # points of the path computed in one batch (forward + backward)
NSP_LABELS = ("IsNext", "NotNext")  # nsp_logits index 0 = IsNext, 1 = NotNext


@dataclass
class AttributionResult:
    """One score per token: how much its word embedding moved f from the baseline to the input."""

    tokens: list[str]  # what the model saw, [CLS] a [SEP] (b [SEP])
    scores: list[float]  # per token, summed over the embedding dimensions (0 at kept specials)
    task: str  # "classify" | "answer" | "fill_mask" | "next_sentence"
    target: str  # f, in words: "log-odds of positive", "log-odds of start = 12 + log-odds of end = 13"
    answer: str  # the answer attributed: "positive", "“netherfield park”", "“door” at [MASK] 1"
    method: str  # "integrated_gradients" | "gradient_x_input"
    baseline: str  # what x' is (BASELINE)
    f_input: float  # f(x)
    f_baseline: float  # f(x')
    steps: int  # trapezoid intervals used, after any refinement (1 for gradient_x_input)
    completeness_error: float  # |sum(scores) - (f_input - f_baseline)| / |f_input - f_baseline|
    sentence_b_start: int | None = None  # first token of the second text, None without one
    highlight: tuple[int, ...] = ()  # tokens the answer is about: the span, the [MASK]
    truncated: int = 0  # tokens cut from the end to fit the model

    @property
    def total(self) -> float:
        return float(sum(self.scores))


# ----------------------------------------------------------------------------------------
# The forward pass from word embeddings
# ----------------------------------------------------------------------------------------
def _forward_from_words(model, words, types, predict_at=None) -> ModelOutput:
    """The model's forward pass with its word embeddings given: words (B, T, H) in place of
    word_embeddings(ids); segments (B, T) and positions as usual; then the encoder, the pooler
    and the model's own head (as BertModel.forward and the head model do, without the input
    checks). No attention mask: one unpadded text per row. A model without segment embeddings
    or a position table (rotary positions, lab.modern) adds none, as BertEmbeddings does."""
    body = model.bert
    emb = body.embeddings
    x = words
    if emb.token_type_embeddings is not None:
        x = x + emb.token_type_embeddings(types)
    if emb.position_embeddings is not None:
        x = x + emb.position_embeddings(torch.arange(words.shape[1], device=words.device))  # (T, H)
    x = emb.dropout(emb.LayerNorm(x))
    hidden_needed = getattr(model, "head_needs_hidden_states", False)
    h, hidden, _ = body.encoder(x, None, None, False, hidden_needed)  # (B, T, H)
    out = ModelOutput(
        last_hidden_state=h,
        hidden_states=hidden,
        pooler_output=body.pooler(h) if body.pooler is not None else None,
    )
    if predict_at is not None:
        model.head(out, predict_at=predict_at)
    else:
        model.head(out)
    return out


@contextlib.contextmanager
def _gradients(model):
    """eval mode (no dropout), gradients on, fp32 (no autocast); puts the mode back."""
    was_training = model.training
    if was_training:
        model.eval()
    device = next(model.parameters()).device
    try:
        with torch.enable_grad(), torch.autocast(device.type, enabled=False):
            yield device
    finally:
        if was_training:
            model.train()


# ----------------------------------------------------------------------------------------
# Targets: f(output) per row, and what it is in words
# ----------------------------------------------------------------------------------------
def _task_of(model, tasks: set[str], text: str, text_pair, task, mask_token: str) -> str:
    if task is not None:
        if task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}, got {task!r}")
        if task not in tasks:
            raise ValueError(missing_head_message(model, task))
        return task
    for t in ("classify", "answer"):
        if t in tasks:
            return t
    if "fill_mask" in tasks and mask_token in text + (text_pair or ""):
        return "fill_mask"
    if "next_sentence" in tasks and text_pair is not None:
        return "next_sentence"
    if "fill_mask" in tasks:
        return "fill_mask"  # says: no [MASK]
    name = type(model).__name__
    raise ValueError(
        f"this model ({name}) has no head to attribute: pick a classifier, a question-answering model "
        f"or a pre-trained model (masked LM / next sentence)"
    )


def _log_odds(logits: torch.Tensor, k) -> torch.Tensor:
    """log P(k) / (1 - P(k)) from logits (B, K), stably: z_k - logsumexp of the other z_j.
    Example: logits (2, 0) -> P = 0.88, log-odds 2.0 (= z_0 - z_1 for two classes)."""
    z = logits.float()
    rest = z.clone()
    rest[:, k] = float("-inf")
    return z[:, k] - rest.logsumexp(-1)


def _label_index(target, names: list[str], what: str) -> int:
    """A label given by name (any case) or index -> its index."""
    if isinstance(target, (int, np.integer)) and not isinstance(target, bool):
        if 0 <= int(target) < len(names):
            return int(target)
    elif isinstance(target, str):
        found = [i for i, n in enumerate(names) if n.lower() == target.strip().lower()]
        if found:
            return found[0]
    raise ValueError(f"target {target!r} is not a {what} of this model: choose one of {', '.join(names)}")


def _best_span(start: torch.Tensor, end: torch.Tensor, context: torch.Tensor) -> tuple[int, int]:
    """The best span s..e (s <= e < s + MAX_SPAN, both in the context) by start + end logit."""
    score = start[:, None] + end[None, :]  # (T, T): row = start, column = end
    T = score.shape[0]
    i = torch.arange(T)
    ok = (i[None, :] >= i[:, None]) & (i[None, :] < i[:, None] + MAX_SPAN) & context[:, None] & context[None, :]
    if not bool(ok.any()):
        raise ValueError("the context has no tokens the model can answer from: type a paragraph in words")
    flat = int(score.masked_fill(~ok, float("-inf")).argmax())
    return divmod(flat, T)


# ----------------------------------------------------------------------------------------
# The method
# ----------------------------------------------------------------------------------------
def attributions(
    model,
    tokenizer,
    text: str,
    text_pair: str | None = None,
    target=None,
    method: str = "integrated_gradients",
    steps: int = 32,
    task: str | None = None,
    mask: int = 0,
    tolerance: float | None = 0.01,
    max_steps: int = 256,
) -> AttributionResult:
    """What the answer rests on: one score per input token (summed over the embedding
    dimensions) for one answer of the model, by integrated gradients (Sundararajan et al. 2017)
    or, method="gradient_x_input", the cheap first-order version (explore.attributions is this
    function). -> AttributionResult (.tokens, .scores, .target, .answer, .method, .baseline,
    .f_input, .f_baseline, .steps, .completeness_error).

    f is the answer's log-odds, log P / (1 - P). The baseline x' is [PAD]'s word embedding in
    place of every word piece ([CLS], [SEP], [MASK] kept; positions and segments as in the input):
    it takes the words away and keeps the frame the model knows (the module docstring says why
    not an all-zero input). With integrated gradients the scores add up to f(input) - f(baseline),
    up to completeness_error: the trapezoid rule starts with `steps` intervals and halves them
    while the error is above `tolerance` (None: never), up to max_steps.

    task: "classify" (target: a label name or index), "answer" (text = question, text_pair =
    context; target "span" (default), "start" or "end"), "fill_mask" (target: a word; mask: which
    [MASK], 0 = the first) or "next_sentence" (target "IsNext" / "NotNext"); by default the
    model's head (a pre-trained model: fill_mask when the text has a [MASK], else next_sentence).
    target None: the model's own answer. The model is never changed.
    """
    _check_method(method, steps, tolerance, max_steps)
    text = clean_text(text)
    text_pair = clean_text(text_pair, "text_pair") if text_pair is not None else None
    task = _task_for(model, text, text_pair, task)
    enc, ids, types = encode(model, tokenizer, text, text_pair)
    special = torch.tensor(enc.special_tokens_mask, dtype=torch.bool) | (ids[0] == tokenizer.mask_token_id)  # (T,)
    with _gradients(model) as device:
        ids, types = ids.to(device), types.to(device)
        emb = model.bert.embeddings.word_embeddings
        with torch.no_grad():
            x = emb(ids)  # (1, T, H) the input's word embeddings
            pad = emb.weight[tokenizer.pad_token_id]  # (H,)
            x0 = torch.where(special.to(device)[None, :, None], x, pad)  # (1, T, H) the baseline
        path = _Path(model, x, x0, types)
        goal = _target(task, model, tokenizer, path, enc, ids, special, target, mask, (text, text_pair))
        f_input, f_baseline = (float(v) for v in goal.f(path.ends).cpu())
        scores, error, n = _integrate(path, goal.f, f_input - f_baseline, method, steps, tolerance, max_steps)
    return AttributionResult(
        tokens=list(enc.tokens),
        scores=scores.tolist(),
        task=task,
        target=goal.text,
        answer=goal.answer,
        method=method,
        baseline=BASELINE,
        f_input=f_input,
        f_baseline=f_baseline,
        steps=n,
        completeness_error=error,
        sentence_b_start=enc.sentence_b_start if text_pair is not None else None,
        highlight=goal.highlight,
        truncated=enc.num_truncated,
    )


def _check_method(method: str, steps, tolerance, max_steps: int) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or not 1 <= steps <= max_steps:
        raise ValueError(f"steps must be a whole number from 1 to max_steps ({max_steps}), got {steps!r}")
    if tolerance is not None and not tolerance > 0:
        raise ValueError(f"tolerance must be positive (or None: no refinement), got {tolerance!r}")


def _task_for(model, text: str, text_pair, task) -> str:
    """The task to attribute (given, or the model's own), checked against the inputs it needs."""
    if getattr(model, "bert", None) is None:
        raise ValueError(
            f"this model ({type(model).__name__}) has no head to attribute: pick a classifier, a "
            f"question-answering model or a pre-trained model (masked LM / next sentence)"
        )
    task = _task_of(model, model_tasks(model), text, text_pair, task, "[MASK]")
    if task == "answer" and text_pair is None:
        raise ValueError("question answering needs a question (text) and a context (text_pair)")
    if task == "next_sentence" and text_pair is None:
        raise ValueError("next sentence prediction needs two sentences: give text_pair")
    return task


class _Path:
    """The straight path x' + a (x - x') from the baseline to the input, and the model along it."""

    def __init__(self, model, x, x0, types):
        self.model, self.x, self.x0, self.types = model, x, x0, types
        self.predict_at = None  # (1, T) for a [MASK]: the head reads only there
        self.delta = (x - x0)[0]  # (T, H) zero at the kept special tokens

    def forward(self, words) -> ModelOutput:
        B = words.shape[0]
        at = None if self.predict_at is None else self.predict_at.expand(B, -1)
        return _forward_from_words(self.model, words, self.types.expand(B, -1), at)

    @functools.cached_property
    def ends(self) -> ModelOutput:
        """The model at the input (row 0) and at the baseline (row 1), without gradients."""
        with torch.no_grad():
            return self.forward(torch.cat([self.x, self.x0]))

    def gradient_sum(self, f, points: list[float]) -> torch.Tensor:
        """The sum of df/dwords over these points a of the path: (T, H)."""
        total = torch.zeros_like(self.delta)
        for lo in range(0, len(points), ROWS_PER_PASS):
            a = torch.tensor(points[lo : lo + ROWS_PER_PASS], device=self.x.device, dtype=self.x.dtype)  # (B,)
            words = (self.x0 + a[:, None, None] * (self.x - self.x0)).detach().requires_grad_(True)  # (B, T, H)
            # row b of f depends on words[b] only, so the gradient of the sum is every row's own
            (grad,) = torch.autograd.grad(f(self.forward(words)).sum(), words)  # (B, T, H)
            total += grad.sum(0)
        return total


@dataclass
class _Goal:
    """f, the function of the model's output whose change is attributed, and what it is in words."""

    f: Callable[[ModelOutput], torch.Tensor]  # output (B rows) -> (B,)
    text: str
    answer: str
    highlight: tuple[int, ...] = ()


def _target(task, model, tokenizer, path: _Path, enc, ids, special, target, mask: int, texts=(None, None)) -> _Goal:
    """f for the task: the log-odds of the model's answer at the input (or of `target`); `texts`: the
    (text, text_pair) encoded, for a message that says where a cut-off [MASK] was."""
    if task == "fill_mask":  # the head reads the chosen [MASK] only, on every row of the path
        positions = mask_positions(ids.cpu(), tokenizer, enc, *texts)
        if not 0 <= mask < len(positions):
            raise ValueError(f"mask {mask} does not exist: the text has {len(positions)} [MASK](s)")
        path.predict_at = torch.zeros_like(ids, dtype=torch.bool)
        path.predict_at[0, positions[mask]] = True  # (1, T)
        return _fill_mask_goal(tokenizer, path.ends, target, mask, positions[mask])
    out = path.ends
    if task == "classify":
        names = [model.config.id2label[i] for i in range(out.logits.shape[-1])]
        k = int(out.logits[0].argmax()) if target is None else _label_index(target, names, "label")
        return _Goal(lambda o: _log_odds(o.logits, k), f"log-odds of {names[k]}", names[k])
    if task == "next_sentence":
        k = int(out.nsp_logits[0].argmax()) if target is None else _label_index(target, list(NSP_LABELS), "answer")
        return _Goal(lambda o: _log_odds(o.nsp_logits, k), f"log-odds of {NSP_LABELS[k]}", NSP_LABELS[k])
    in_context = (path.types[0].cpu() == 1) & ~special  # (T,) the context's word pieces
    return _answer_goal(out, enc, in_context, target)


def _fill_mask_goal(tokenizer, out: ModelOutput, target, mask: int, position: int) -> _Goal:
    word = int(out.mlm_logits[0].argmax()) if target is None else int(target_ids(tokenizer, [target], 1)[0])
    name = tokenizer.convert_ids_to_tokens(word)
    return _Goal(
        lambda o: _log_odds(o.mlm_logits, word),
        f"log-odds of “{name}” at [MASK] {mask + 1}",
        f"“{name}” at [MASK] {mask + 1}",
        (position,),
    )


def _answer_goal(out: ModelOutput, enc, in_context: torch.Tensor, target) -> _Goal:
    which = "span" if target is None else str(target).strip().lower()
    if which not in ("span", "start", "end"):
        raise ValueError(f"target {target!r}: for question answering choose span, start or end")
    s, e = _best_span(out.start_logits[0].float().cpu(), out.end_logits[0].float().cpu(), in_context)
    span_text = " ".join(enc.tokens[s : e + 1]).replace(" ##", "")
    parts = {"start": f"log-odds of start = {s}", "end": f"log-odds of end = {e}"}

    def f(o):
        start, end = _log_odds(o.start_logits, s), _log_odds(o.end_logits, e)
        return start + end if which == "span" else start if which == "start" else end

    return _Goal(
        f,
        parts["start"] + " + " + parts["end"] if which == "span" else parts[which],
        f"“{span_text}”",
        tuple(range(s, e + 1)) if which == "span" else (s if which == "start" else e,),
    )


def _integrate(path: _Path, f, change: float, method: str, steps: int, tolerance, max_steps: int):
    """(scores (T,), completeness error, intervals used) by the method."""

    def scores_and_error(integral: torch.Tensor) -> tuple[torch.Tensor, float]:
        scores = (path.delta * integral).sum(-1).float().cpu()  # (T,) summed over the H dimensions
        return scores, abs(float(scores.sum()) - change) / max(abs(change), 1e-6)

    if method == "gradient_x_input":  # the gradient at the input alone
        return (*scores_and_error(path.gradient_sum(f, [1.0])), 1)
    # trapezoid rule on n intervals: (g(0) / 2 + g(1/n) + ... + g((n-1)/n) + g(1) / 2) / n
    n = steps
    ends = path.gradient_sum(f, [0.0, 1.0])
    inner = path.gradient_sum(f, [k / n for k in range(1, n)])
    scores, error = scores_and_error((ends / 2 + inner) / n)
    # refine: halve every interval (the old points stay points of the new rule, so only the
    # n midpoints are new) until the sum is within `tolerance` of f(x) - f(x')
    while tolerance is not None and error > tolerance and 2 * n <= max_steps:
        inner += path.gradient_sum(f, [(2 * k + 1) / (2 * n) for k in range(n)])
        n *= 2
        scores, error = scores_and_error((ends / 2 + inner) / n)
    return scores, error, n


# ----------------------------------------------------------------------------------------
# Beside attention
# ----------------------------------------------------------------------------------------
def _ranks(v: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties sharing their average rank (Spearman's convention)."""
    order = np.argsort(v, kind="mergesort")
    ranks = np.empty(len(v))
    ranks[order] = np.arange(1, len(v) + 1)
    for value in np.unique(v):
        tied = v == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


@dataclass
class AttentionComparison:
    """Attribution beside the attention [CLS] pays in the last layer (mean over its heads)."""

    tokens: list[str]
    scores: np.ndarray  # (T,) the attribution
    attention: np.ndarray  # (T,) last layer, query [CLS], mean over heads
    words: np.ndarray  # (T,) bool: the text's tokens (the correlations are over these)
    pearson: float  # of |scores| and the attention, over the words (nan: fewer than 2, or constant)
    spearman: float  # of their ranks
    pearson_signed: float  # of the signed scores and the attention
    layer: int  # the layer whose attention is shown (the last, 0-based)


def attention_vs_attribution(
    attention, attribution: AttributionResult, query: int = 0, layer: int = -1
) -> AttentionComparison:
    """The attention [CLS] pays to each token in the last layer (averaged over its heads)
    beside the attribution of the same text, with Pearson and Spearman correlations over the
    text's tokens, of the size of each token's attribution |score| (attention has no sign: both
    say "how much", not "which way"; pearson_signed keeps the sign). [CLS], [SEP] and [MASK] are
    left out: their attribution is 0 by the baseline's construction, and [SEP] draws attention
    as a "no-op" sink (Clark et al. 2019). query / layer: another token's row (e.g. a QA answer's
    start) or another layer (negative: from the last)."""
    tokens = list(attribution.tokens)
    if list(attention.tokens) != tokens:
        raise ValueError("the attention and the attribution are of different texts (their tokens differ)")
    if not -len(tokens) <= query < len(tokens):
        raise ValueError(f"query must be a token index of the text (0..{len(tokens) - 1}), got {query}")
    layers = len(attention.attentions)
    if not -layers <= layer < layers:
        raise ValueError(f"layer must be one of the model's {layers} layers (0..{layers - 1}, or -1), got {layer}")
    maps = attention.attentions[layer][0]  # (heads, T, T)
    paid = maps[:, query, :].float().mean(0).numpy().astype(np.float64)  # (T,) row `query`, mean over heads
    scores = np.asarray(attribution.scores, dtype=np.float64)
    words = np.array([t not in ("[CLS]", "[SEP]", "[MASK]", "[PAD]") for t in tokens])
    s, a = np.abs(scores[words]), paid[words]
    return AttentionComparison(
        tokens=tokens,
        scores=scores,
        attention=paid,
        words=words,
        pearson=_pearson(s, a),
        spearman=_pearson(_ranks(s), _ranks(a)) if len(s) > 1 else float("nan"),
        pearson_signed=_pearson(scores[words], a),
        layer=layer % layers,
    )


def attention_from(attention, attribution, query: int = 0, layer: int = -1) -> AttentionComparison:
    """The attention token `query` pays to each token in `layer` (default the last; mean over its
    heads) beside the attribution of the same text, with the Pearson and Spearman correlations of
    |attribution| and that attention over the text's tokens (as attention_vs_attribution)."""
    return attention_vs_attribution(attention, attribution, query=query, layer=layer)


@dataclass
class TopTokens:
    """The text token with the largest |attribution| and the one with the most attention."""

    attribution: int  # token index
    attention: int  # token index
    attribution_token: str
    attention_token: str
    attribution_score: float  # its signed score (negative: it pushes against the answer)
    attention_rank_of_top_attribution: int  # where the top-attribution token stands in attention (1 = first)

    @property
    def agree(self) -> bool:
        return self.attribution == self.attention


def top_tokens(comparison: AttentionComparison) -> TopTokens:
    """The token each view puts first, over the text's tokens (comparison.words)."""
    words = np.flatnonzero(comparison.words)
    if len(words) == 0:
        raise ValueError("the text has no tokens besides [CLS], [SEP] and [MASK]")
    scores, paid = np.asarray(comparison.scores), np.asarray(comparison.attention)
    by_attribution = int(words[np.argmax(np.abs(scores[words]))])
    by_attention = int(words[np.argmax(paid[words])])
    rank = 1 + int(np.sum(paid[words] > paid[by_attribution]))
    return TopTokens(
        attribution=by_attribution,
        attention=by_attention,
        attribution_token=comparison.tokens[by_attribution],
        attention_token=comparison.tokens[by_attention],
        attribution_score=float(scores[by_attribution]),
        attention_rank_of_top_attribution=rank,
    )
