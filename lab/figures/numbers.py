"""What every figure shows (numbers, token labels, titles), computed once for both kinds of figure.

    data = numbers.attention_heatmap(explore.attention(model, tokenizer, "the cat sat ."), 0, 3)
    data.values, data.title, data.csv()   # (T, T) weights, "layer 0, head 3", one CSV line a weight

One function per figure, named as the figures of lab.figures.plotly_figures (the dashboard) and
lab.figures.matplotlib_figures (notebooks), which draw only what it returns, so the two never
disagree: training_curves(), attention_heatmap(), attention_focus(), attention_grid(),
head_stats_heatmaps(), ablation_heatmap(), span_probabilities(), fill_mask_bars(),
embedding_components(), logit_lens(), attributions(), attention_vs_attribution(), probe_curves().
Each returns a lab.figures.tables object. Token text stays as the model wrote it (each drawing
module escapes it); only numpy here, no plotting library.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from lab.figures.tables import (
    Ablation,
    AttentionFocus,
    AttentionGrid,
    AttentionMap,
    AttentionVsAttribution,
    Attributions,
    EmbeddingComponents,
    FillMaskBars,
    HeadStats,
    LensMask,
    LogitLens,
    MaskGuesses,
    Panel,
    ProbeCurves,
    ProbeLine,
    Series,
    SpanProbabilities,
    TrainingCurves,
)
from lab.run_files import read_metrics

STAT_TITLES = {  # head_stats() key -> panel title (Clark et al. 2019)
    "entropy": "entropy (nats)",
    "cls": "attention to [CLS]",
    "sep": "attention to [SEP]",
    "self": "attention to itself",
    "prev": "attention to the previous token",
    "next": "attention to the next token",
}
ANNOTATE_TOKENS = 12  # attention maps of at most this many tokens get their weights written in
ANNOTATE_CELLS = 48  # head-statistics grids of at most this many heads get their values written in
SPECIAL = ("[CLS]", "[SEP]", "[PAD]")


# ----------------------------------------------------------------------------------------------
# Helpers: arrays, indexes, text
# ----------------------------------------------------------------------------------------------


def _np(x) -> np.ndarray:
    """A torch tensor (any dtype or device) or array-like -> float64 numpy array."""
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def checked_index(i, n: int, name: str) -> int:
    """A 0-based (or negative, Python-style) layer/head/token index, checked against n."""
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {i!r}")
    if not -n <= i < n:
        raise ValueError(f"{name} {i} does not exist: this model has {n} {name}s (0 to {n - 1})")
    return int(i) % n


def text_of(tokens, limit: int = 90) -> str:
    """WordPieces back to readable text (without [CLS]/[SEP]/[PAD]), cut to `limit` characters."""
    words = " ".join(t for t in tokens if t not in SPECIAL).replace(" ##", "")
    return words if len(words) <= limit else words[: limit - 1] + "…"


# ----------------------------------------------------------------------------------------------
# Training curves
# ----------------------------------------------------------------------------------------------


ACCURACY_NAMES = {
    "mlm_acc": "MLM top-1 (all predicted)",
    "mlm_acc_masked": "MLM top-1 at [MASK]",
    "nsp_acc": "NSP",
    "ltr_acc": "next token (left-to-right)",
    "accuracy": "accuracy",
    "f1": "F1",
    "exact_match": "exact match",
}


def _series(panel: str, name: str, points: list[tuple], marker: str | None) -> Series:
    xs, ys = zip(*points)
    return Series(panel, name, list(xs), list(ys), marker)


def _records(run_or_records) -> list[dict]:
    if isinstance(run_or_records, (str, Path)):
        return read_metrics(run_or_records)
    return list(run_or_records)


def training_curves(run_or_records, x: str = "time", title: str | None = None) -> TrainingCurves:
    """Loss and accuracy series of a run (its directory, metrics.jsonl, or read_metrics records)
    against wall time (x="time", minutes) or steps (x="step").

    Loss panel: the training loss at every logged step and the held-out losses. Accuracy panel:
    held-out MLM accuracy (all predicted positions and [MASK] positions alone) and NSP accuracy,
    the next-token accuracy of a left-to-right run (`--objective ltr`), or the task accuracy of a
    fine-tuning run.
    """
    if x not in ("time", "step"):
        raise ValueError(f"x must be 'time' or 'step', got {x!r}")
    records = _records(run_or_records)
    train = [r for r in records if r.get("split") == "train"]
    evals = [r for r in records if r.get("split") == "eval"]
    scale = (lambda r: r["time"] / 60) if x == "time" else (lambda r: r["step"])
    series = []
    if train:
        key = "mlm_loss" if "mlm_loss" in train[0] else "loss"
        series.append(_series("loss", f"train {key.replace('_', ' ')}", [(scale(r), r[key]) for r in train], None))
    for key, marker in (("mlm_loss", "o"), ("nsp_loss", "s"), ("ltr_loss", "o"), ("loss", "o")):
        pts = [(scale(r), r[key]) for r in evals if key in r]
        # a pre-training run's total "loss" is mlm + nsp: its parts are drawn instead
        if pts and not (key == "loss" and any("mlm_loss" in r for r in evals)):
            series.append(_series("loss", f"held-out {key.replace('_', ' ')}", pts, marker))
    for key, name in ACCURACY_NAMES.items():
        pts = [(scale(r), r[key]) for r in evals if key in r]
        if pts:
            series.append(_series("accuracy", name, pts, "o"))
    return TrainingCurves(
        series, "wall time (minutes)" if x == "time" else "step", "minutes" if x == "time" else "step", title
    )


# ----------------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------------


def _attention_shape(result) -> tuple[int, int, int]:
    """(layers, heads, tokens) of an AttentionResult, checking it is consistent."""
    if not result.attentions:
        raise ValueError("the attention result holds no layers")
    _, heads, T, T2 = tuple(result.attentions[0].shape)  # (1, heads, T, T)
    if T != T2 or T != len(result.tokens):
        raise ValueError(f"attention maps are {T}x{T2} but there are {len(result.tokens)} tokens")
    return len(result.attentions), heads, T


def _attention_map(result, layer: int, head: int, title: str, annotate: bool = True) -> AttentionMap:
    """An already checked (layer, head) of the result, coloured from 0 to its largest weight;
    annotate: write the weights in the cells where the sequence is short."""
    weights = _np(result.attentions[layer][0, head])  # (T queries, T keys)
    annotate = annotate and len(result.tokens) <= ANNOTATE_TOKENS
    return AttentionMap(
        title=title,
        values=weights,
        zmin=0.0,
        zmax=max(float(weights.max()), 1e-9),
        cell_format=".2f" if annotate else None,
        layer=layer,
        head=head,
        tokens=list(result.tokens),
        sentence_b_start=getattr(result, "sentence_b_start", None),
    )


def attention_heatmap(result, layer: int, head: int) -> AttentionMap:
    """One head of an AttentionResult, titled "layer 0, head 3" (0-based; negative indexes count
    from the end). Short sequences (<= ANNOTATE_TOKENS) get the weights written in the cells."""
    L, A, _ = _attention_shape(result)
    layer, head = checked_index(layer, L, "layer"), checked_index(head, A, "head")
    return _attention_map(result, layer, head, f"layer {layer}, head {head}")


def attention_focus(result, layer: int, head: int, token_index: int) -> AttentionFocus:
    """attention_heatmap(result, layer, head) with token `token_index` picked out: where it
    attends (row token_index, over the keys) and what attends to it (column token_index)."""
    head_map = attention_heatmap(result, layer, head)
    i = checked_index(token_index, len(head_map.tokens), "token")
    return AttentionFocus(head_map, i, head_map.values[i, :], head_map.values[:, i])


def attention_grid(result, layer: int | None = None) -> AttentionGrid:
    """Every head of one layer (maps titled "head h", at most 4 per row), or with layer=None
    every layer x head (row l = layer l, column h = head h, maps titled "layer l, head h").
    Each map has its own colour scale from 0 to its largest weight; small multiples carry no
    numbers in their cells."""
    L, A, _ = _attention_shape(result)
    if layer is None:
        maps = [_attention_map(result, l, h, f"layer {l}, head {h}", False) for l in range(L) for h in range(A)]
        return AttentionGrid(
            maps, L, A, None, f"attention of every head: {L} layers x {A} heads (rows: queries, columns: keys)"
        )
    layer = checked_index(layer, L, "layer")
    maps = [_attention_map(result, layer, h, f"head {h}", False) for h in range(A)]
    cols = min(A, 4)
    return AttentionGrid(
        maps, math.ceil(A / cols), cols, layer, f"layer {layer}: all {A} heads (rows: queries, columns: keys)"
    )


def head_stats_heatmaps(stats: dict) -> HeadStats:
    """One [layers, heads] panel per statistic of AttentionResult.head_stats(), titled by
    STAT_TITLES (known keys first, in that order). The attention shares (every key but
    "entropy") share one colour scale, so the panels compare; entropy has its own."""
    if not stats:
        raise ValueError("no head statistics to plot")
    keys = [k for k in STAT_TITLES if k in stats] + [k for k in stats if k not in STAT_TITLES]
    arrays = {k: _np(stats[k]) for k in keys}
    shapes = {a.shape for a in arrays.values()}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2:
        raise ValueError(
            f"head statistics must all be [layers, heads] arrays, got shapes "
            f"{ {k: a.shape for k, a in arrays.items()} }"
        )
    L, A = next(iter(shapes))
    share_max = max([float(a.max()) for k, a in arrays.items() if k != "entropy"] + [1e-9])
    fmt = ".2f" if L * A <= ANNOTATE_CELLS else None
    panels = [
        Panel(
            title=STAT_TITLES.get(k, k),
            values=a,
            zmin=0.0,
            cell_format=fmt,
            key=k,
            zmax=max(float(a.max()), 1e-9) if k == "entropy" else share_max,
            colors="magma" if k == "entropy" else "viridis",
        )
        for k, a in arrays.items()
    ]
    return HeadStats(panels, L, A)


# ----------------------------------------------------------------------------------------------
# Ablation
# ----------------------------------------------------------------------------------------------


ABLATION_METRICS = {
    "loss": "masked-LM loss at the [MASK]s",
    "probability": "probability of the top prediction at the first [MASK]",
}


def ablation_heatmap(result) -> Ablation:
    """explore.ablate_heads as a [layers, heads] panel, every cell annotated. Diverging colours
    centred at 0, oriented so that red always means "the model needed this head": for
    metric="loss" the loss rose (+), for metric="probability" the probability fell (-)."""
    effect = _np(result.effect)  # (L, heads)
    if effect.ndim != 2:
        raise ValueError(f"ablation effect must be a [layers, heads] array, got shape {effect.shape}")
    limit = max(float(np.abs(effect).max()), 1e-12)
    # Significant digits follow the largest effect: 0.5 -> "+0.123", 3.2 -> "+1.23", 4e-4 -> "+4.0e-04".
    digits = min(4, max(0, 2 - math.floor(math.log10(limit))))
    what = ABLATION_METRICS.get(result.metric, result.metric)
    return Ablation(
        title=f"silencing one head at a time: change in the {what}\n"
        f"baseline {result.baseline:.4g}; red = the model needed this head",
        values=effect,
        zmin=-limit,
        zmax=limit,
        colors="RdBu" if result.metric == "probability" else "RdBu_r",
        cell_format="+.1e" if limit < 1e-3 else f"+.{digits}f",
        metric=result.metric,
        baseline=float(result.baseline),
        sentence=f"“{text_of(result.tokens)}”" if result.tokens else "",
    )


# ----------------------------------------------------------------------------------------------
# Question answering, fill-mask, the guess at every layer
# ----------------------------------------------------------------------------------------------


def _span_tokens(result) -> list[int]:
    """Indexes of the window's tokens covered by the best span ([CLS] for "no answer")."""
    if not result.spans:
        return []
    best = result.spans[0]
    if best.text == "" or best.end <= best.start:
        return [0] if result.tokens else []
    return [i for i, o in enumerate(result.offsets) if o is not None and o[0] < best.end and o[1] > best.start]


def _answer_title(result) -> str:
    """ "best answer: “w1 w2” (score 4.20) · window 2 of 3, question truncated"."""
    if result.spans:
        best = result.spans[0]
        title = "best answer: no answer" if best.text == "" else f"best answer: “{best.text}”"
        title += f" (score {best.score:.2f})"
    else:
        title = "no candidate span"
    notes = []
    if result.num_windows > 1:
        notes.append(f"window {result.window_index + 1} of {result.num_windows}")
    if result.question_truncated:
        notes.append("question truncated")
    return title + (f" · {', '.join(notes)}" if notes else "")


def span_probabilities(result) -> SpanProbabilities:
    """An AnswerResult's start and end probabilities over the tokens of the window holding the
    best answer, and which of those tokens the best span covers."""
    T = len(result.tokens)
    if not (len(result.start_probs) == len(result.end_probs) == T):
        raise ValueError(
            f"{T} tokens but {len(result.start_probs)} start and {len(result.end_probs)} end probabilities"
        )
    return SpanProbabilities(
        list(result.tokens), _np(result.start_probs), _np(result.end_probs), _span_tokens(result), _answer_title(result)
    )


def fill_mask_bars(predictions) -> FillMaskBars:
    """explore.fill_mask's result (one list of (token, probability) per [MASK], best first) as
    one group of bars per [MASK]; a plain list of such lists works too (no token positions)."""
    if not len(predictions):
        raise ValueError("no [MASK] predictions to plot")
    positions = list(getattr(predictions, "mask_positions", None) or [None] * len(predictions))
    masks = [
        MaskGuesses(k + 1, positions[k], [str(t) for t, _ in guesses], _np([p for _, p in guesses]))
        for k, guesses in enumerate(predictions)
    ]
    tokens = getattr(predictions, "tokens", None)
    title = f"the model's guesses at each [MASK] of “{text_of(tokens)}”" if tokens else "the model's guesses"
    return FillMaskBars(masks, title)


MAX_LENS_MASKS = 3  # panels in one figure; the CSV and the library have them all


def logit_lens(result, max_masks: int = MAX_LENS_MASKS) -> LogitLens:
    """explore.logit_lens's result as one [layers, ranks] panel per [MASK] (the first max_masks)."""
    if not result.top:
        raise ValueError("no [MASK] in the result to plot")
    masks = [
        LensMask(
            number=k + 1,
            position=result.mask_positions[k],
            tokens=[[t for t, _ in guesses] for guesses in layers],
            probabilities=_np([[p for _, p in guesses] for guesses in layers]),
            final=result.final[k],
            final_probability=_np(result.final_probability[k]),
            final_rank=list(result.final_rank[k]),
        )
        for k, layers in enumerate(result.top[:max_masks])
    ]
    return LogitLens(masks, len(result.top), f"the guess at every layer of “{text_of(result.tokens)}”")


# ----------------------------------------------------------------------------------------------
# Attribution: what the answer rests on
# ----------------------------------------------------------------------------------------------

# The two signs' colours, as Gradio's HighlightedText shades scores (so a page's shaded text and
# its figure agree): toward the answer red, against it purple.
TOWARD = "#ef443c"
AGAINST = "#805ad5"
ATTRIBUTION_LEGEND = "red: pushes toward the answer · purple: pushes against it · longer bar or deeper shade: more"
METHOD_NAMES = {"integrated_gradients": "integrated gradients", "gradient_x_input": "gradient x input"}


def _attribution_subtitle(result) -> str:
    """ "f = log-odds of positive: f(input) − f(baseline) = 6.39 − 3.77 = 2.62; the scores add up
    to 2.62 (completeness error 0.0%)"."""
    change = result.f_input - result.f_baseline
    base = f"({result.f_baseline:.2f})" if result.f_baseline < 0 else f"{result.f_baseline:.2f}"
    return (
        f"f = {result.target}: f(input) − f(baseline) = {result.f_input:.2f} − {base} = {change:.2f}; "
        f"the scores add up to {sum(result.scores):.2f} (completeness error {result.completeness_error:.1%})"
    )


def attributions(result) -> Attributions:
    """explore.attributions' result: one score per token, red toward the answer, purple against."""
    if not result.tokens or len(result.tokens) != len(result.scores):
        raise ValueError(f"{len(result.tokens)} tokens but {len(result.scores)} scores")
    return Attributions(
        tokens=list(result.tokens),
        scores=_np(result.scores),
        highlight=list(result.highlight),
        title=f"what {result.answer} rests on: {METHOD_NAMES.get(result.method, result.method)}"
        + (f", {result.steps} steps" if result.method == "integrated_gradients" else ""),
        subtitle=_attribution_subtitle(result),
        method=result.method,
        target=result.target,
    )


def correlation_text(pearson: float, spearman: float) -> str:
    """ "Pearson r = 0.31, Spearman ρ = 0.12" (n/a where undefined: fewer than two words, or constant)."""

    def f(v):
        return "n/a" if v != v else f"{v:+.2f}"

    return f"Pearson r = {f(pearson)}, Spearman ρ = {f(spearman)}"


def attention_vs_attribution(comparison, attribution) -> AttentionVsAttribution:
    """lab.inspect.attribution.attention_vs_attribution's comparison (and the attribution it compares) as
    two bar panels over the same tokens, the correlations in the title."""
    return AttentionVsAttribution(
        tokens=list(comparison.tokens),
        scores=_np(comparison.scores),
        attention=_np(comparison.attention),
        words=np.asarray(comparison.words, dtype=bool),
        pearson=float(comparison.pearson),
        spearman=float(comparison.spearman),
        layer=comparison.layer,
        title=f"attribution vs attention: {correlation_text(comparison.pearson, comparison.spearman)}",
        subtitle=f"for {attribution.answer}; |attribution| against attention over the text's "
        f"{int(np.sum(comparison.words))} tokens ([CLS], [SEP], [MASK] left out: grey)",
        attribution_title=f"attribution of the {attribution.target} ({METHOD_NAMES.get(attribution.method)})",
        attention_title=f"attention paid by [CLS], layer {comparison.layer} (the last), mean of its heads",
    )


# ----------------------------------------------------------------------------------------------
# The paper's Figure 2: the input embeddings
# ----------------------------------------------------------------------------------------------


EMBEDDING_PARTS = [
    ("token", "token", "token embeddings (one per word piece)"),
    ("segment", "segment", "segment embeddings (sentence A / B)"),
    ("position", "position", "position embeddings"),
    ("sum", "total", "sum = token + segment + position"),
    ("normalized", "normalized", "after LayerNorm: what layer 0 receives"),
]


def embedding_components(result, dims: int = 32) -> EmbeddingComponents:
    """The paper's Figure 2 from an EmbeddingResult: token, segment and position embeddings,
    their sum, and the LayerNorm output, each [first `dims` dimensions, T tokens]. The first
    four share one colour scale centred at 0 (so the sum visibly adds up); the LayerNorm
    output has its own."""
    T = len(result.tokens)
    missing = getattr(result, "missing", None) or {}  # parts the model does not add (zeros): say so
    titles = {name: f"{title}: none in this model" if name in missing else title for _, name, title in EMBEDDING_PARTS}
    if missing:
        titles["total"] = "sum = " + " + ".join(n for n in ("token", "segment", "position") if n not in missing)
    mats = [(key, titles[name], _np(getattr(result, name))) for key, name, _ in EMBEDDING_PARTS]
    for _, title, m in mats:
        if m.ndim != 2 or m.shape[0] != T:
            raise ValueError(f"{title}: expected a [{T}, hidden] array, got shape {m.shape}")
    hidden = mats[0][2].shape[1]
    dims = max(1, min(dims, hidden))
    limit = max(float(np.abs(m[:, :dims]).max()) for *_, m in mats[:4]) or 1e-9
    norm_limit = float(np.abs(mats[4][2][:, :dims]).max()) or 1e-9
    panels = [
        Panel(
            title=title,
            values=m[:, :dims].T,
            key=key,
            colors="RdBu_r",  # (dims, T)
            zmin=-(norm_limit if key == "normalized" else limit),
            zmax=norm_limit if key == "normalized" else limit,
        )
        for key, title, m in mats
    ]
    ids = list(result.segment_ids)
    b_start = next((i for i, s in enumerate(ids) if s != ids[0]), None)
    return EmbeddingComponents(
        list(result.tokens),
        panels,
        b_start,
        dims,
        hidden,
        f"BERT's input representation (Figure 2): first {dims} of {hidden} dimensions",
    )


# ----------------------------------------------------------------------------------------------
# What each layer knows: lab.inspect.probing's accuracy by layer
# ----------------------------------------------------------------------------------------------


PROBE_LINE_STYLES = {  # kind -> (plotly dash, matplotlib linestyle, grey?)
    "model": ("solid", "-", False),
    "snapshot": ("solid", "-", False),
    "control": ("dot", ":", True),
    "majority": ("dash", "--", True),
}


def _probe_line(result, kind: str) -> ProbeLine:
    return ProbeLine(
        result.name,
        kind,
        list(result.layers),
        list(result.accuracy),
        list(result.low),
        list(result.high),
        list(result.correct),
        result.total,
        result.step,
    )


def probe_curves(results, title: str | None = None) -> ProbeCurves:
    """ProbeResults as figure lines: each model (snapshots marked by their step), then the
    random-weights control and the majority baseline of the first result that has them (a flat
    line over the layers)."""
    results = [results] if hasattr(results, "layers") else list(results)  # one ProbeResult or several
    if not results:
        raise ValueError("no probe results to plot")
    num_layers = max(r.layers[-1] for r in results)
    lines = [_probe_line(r, "snapshot" if r.step is not None else "model") for r in results]
    with_control = next((r for r in results if r.control is not None), None)
    if with_control is not None:
        lines.append(_probe_line(with_control.control, "control"))
    with_majority = next((r for r in results if r.majority is not None), None)
    if with_majority is not None:
        m = with_majority.majority
        layers = list(range(num_layers + 1))
        n = len(layers)
        lines.append(
            ProbeLine(
                "majority tag of each word (no context)",
                "majority",
                layers,
                [m.accuracy] * n,
                [m.low] * n,
                [m.high] * n,
                [m.correct] * n,
                m.total,
            )
        )
    names = sorted({r.name for r in results if r.step is None})
    title = title or (f"what each layer knows: part of speech read linearly from {', '.join(names) or 'the snapshots'}")
    return ProbeCurves(lines, title, results[0].split, num_layers)
