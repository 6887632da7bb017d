"""What each figure holds: one dataclass per figure (AttentionMap, TrainingCurves, ProbeCurves,
...), made by lab.figures.numbers and drawn by lab.figures.plotly_figures and
lab.figures.matplotlib_figures.

Each is a Table: rows() gives what the figure draws, one dict per drawn value, and csv() the same
as CSV text (the dashboard's "data (CSV)" download). Heatmaps are Panels: values with their colour
scale (a matplotlib colormap name, which plotly knows too) and the format of the number written in
each cell. Token text stays exactly as the model wrote it; axis_labels() and piece_label() name
tokens for an axis. lab.figures.numbers computes these objects; the drawing modules read them.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

import numpy as np

# ----------------------------------------------------------------------------------------------
# Token labels, tables, heatmap panels
# ----------------------------------------------------------------------------------------------


def axis_labels(tokens) -> list[str]:
    """One distinct name per position: a repeated token gets its index, e.g.
    ["[CLS]", "the", "cat", "the", "[SEP]"] -> ["[CLS]", "the (1)", "cat", "the (3)", "[SEP]"]."""
    tokens = [str(t) for t in tokens]
    counts = {t: tokens.count(t) for t in set(tokens)}
    labels = [t if counts[t] == 1 else f"{t} ({i})" for i, t in enumerate(tokens)]
    # a token that reads like another's suffixed name ("the (1)" typed by a user): index them all
    return labels if len(set(labels)) == len(labels) else [f"{t} ({i})" for i, t in enumerate(tokens)]


def piece_label(token: str) -> str:
    """A WordPiece continuation shown as what it is: "##ing" -> "…ing (piece)"; words unchanged."""
    return f"…{token[2:]} (piece)" if token.startswith("##") and len(token) > 2 else token


def to_csv(rows: list[dict]) -> str:
    """A table (one dict per row, the first row's keys as the header) as CSV text."""
    if not rows:
        return ""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


class Table:
    """rows(): what the figure draws, one dict per drawn value; csv(): the same as CSV text;
    summary(): one sentence saying what the figure shows, computed from its numbers (a figure's
    text for a screen reader: the dashboard's accessible name and announcement)."""

    def rows(self) -> list[dict]:
        raise NotImplementedError

    def csv(self) -> str:
        return to_csv(self.rows())

    def summary(self) -> str:
        title = getattr(self, "title", None) or type(self).__name__
        return f"{title}: {len(self.rows()):,} values."


def quoted(token) -> str:
    """A token as a sentence names it: “cat”."""
    return f"“{token}”"


def listed(items: list[str], limit: int) -> str:
    """The first `limit` items joined by commas, and how many more there are."""
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" and {more} more" if more > 0 else "")


def strongest(values: np.ndarray, n: int) -> list[tuple[int, int]]:
    """The (row, column) of a matrix's n largest values, largest first."""
    order = np.argsort(values, axis=None, kind="stable")[::-1][:n]
    return [tuple(int(v) for v in np.unravel_index(k, values.shape)) for k in order]


@dataclass(kw_only=True)
class Panel(Table):
    """One heatmap as drawn: values[r, c] in row r, column c, coloured from zmin to zmax."""

    title: str
    values: np.ndarray  # (rows, columns)
    zmin: float
    zmax: float
    colors: str = "viridis"  # matplotlib colormap name (plotly knows the same names)
    cell_format: str | None = None  # format spec of the number written in each cell ("+.3f"); None: none
    key: str = ""  # what the panel shows, for tables: "sep", "token", ...

    def rows(self) -> list[dict]:
        return _grid_rows(self, "row", "column", "value", panel=self.key)


def _grid_rows(panel: Panel, row: str, column: str, value: str, **fixed) -> list[dict]:
    """A [rows, columns] panel as a table: fixed columns, then row index, column index, value."""
    return [{**fixed, row: r, column: c, value: float(v)} for (r, c), v in np.ndenumerate(panel.values)]


# ----------------------------------------------------------------------------------------------
# Training curves
# ----------------------------------------------------------------------------------------------


@dataclass
class Series:
    """One line of a training-curves panel."""

    panel: str  # "loss" or "accuracy"
    name: str  # legend label, e.g. "held-out mlm loss"
    x: list[float]
    y: list[float]
    marker: str | None = None  # None: a thin line of every logged step; "o" / "s": evaluations


@dataclass
class TrainingCurves(Table):
    series: list[Series]
    x_title: str  # "wall time (minutes)" or "step"
    x_name: str  # the CSV column of x: "minutes" or "step"
    title: str | None = None
    y_titles: dict = field(default_factory=lambda: {"loss": "loss", "accuracy": "held-out accuracy"})

    def rows(self) -> list[dict]:
        return [
            {"panel": s.panel, "series": s.name, self.x_name: x, "value": y}
            for s in self.series
            for x, y in zip(s.x, s.y)
        ]

    def summary(self) -> str:
        if not self.series:
            return f"{self.title or 'Training curves'}: no logged values."

        def at(x) -> str:
            return f"{x:.3g} min" if self.x_name == "minutes" else f"step {x:g}"

        parts = []
        for s in self.series:
            fmt = (lambda v: f"{v:.1%}") if s.panel == "accuracy" else (lambda v: f"{v:.3g}")
            last = f"{fmt(s.y[-1])} at {at(s.x[-1])}"
            parts.append(
                f"{s.name} {last}" if len(s.y) == 1 else f"{s.name} from {fmt(s.y[0])} at {at(s.x[0])} to {last}"
            )
        return f"{self.title or 'Training curves'}: {listed(parts, 8)}."


# ----------------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class AttentionMap(Panel):
    """One head: values[i, j] = how much query token i attends to key token j (rows sum to 1)."""

    layer: int
    head: int
    tokens: list[str]
    sentence_b_start: int | None = None  # first token of sentence B: the segment boundary
    x_title: str = "key (attended to)"
    y_title: str = "query (attending)"

    @property
    def labels(self) -> list[str]:
        return axis_labels(self.tokens)

    def rows(self) -> list[dict]:
        t = self.tokens
        return [
            {
                "layer": self.layer,
                "head": self.head,
                "query_index": i,
                "query": t[i],
                "key_index": j,
                "key": t[j],
                "weight": float(w),
            }
            for (i, j), w in np.ndenumerate(self.values)
        ]

    def summary(self) -> str:
        labels = self.labels
        top = [
            f"{quoted(labels[i])} to {quoted(labels[j])} {self.values[i, j]:.2f}" for i, j in strongest(self.values, 3)
        ]
        return f"Attention in {self.title}, {len(labels)} tokens; the strongest weights: {', '.join(top)}."


@dataclass
class AttentionFocus(Table):
    """One head seen from one token i: its row (where i attends) and column (what attends to i)."""

    map: AttentionMap
    index: int  # the focused token's position
    attends: np.ndarray  # (T,) = map.values[i, :], over the keys
    attended_by: np.ndarray  # (T,) = map.values[:, i], over the queries

    @property
    def token(self) -> str:
        return self.map.tokens[self.index]

    @property
    def attends_title(self) -> str:
        return "where it attends"

    @property
    def attended_by_title(self) -> str:
        return "what attends to it"

    @property
    def title(self) -> str:
        return f"{self.map.title}: token {self.index} “{self.token}”"

    def rows(self) -> list[dict]:
        """The map's table, each cell marked when it is in the focused row or column (the bars)."""
        return [
            {**r, "in_focus_row": r["query_index"] == self.index, "in_focus_column": r["key_index"] == self.index}
            for r in self.map.rows()
        ]

    def summary(self) -> str:
        labels = self.map.labels

        def best(weights) -> str:
            order = np.argsort(weights, kind="stable")[::-1][:3]
            return ", ".join(f"{quoted(labels[k])} {weights[k]:.2f}" for k in order)

        return (
            f"{self.title}: it attends most to {best(self.attends)}; "
            f"the tokens attending most to it: {best(self.attended_by)}."
        )


@dataclass
class AttentionGrid(Table):
    """Attention maps laid out in rows x columns: the heads of one layer, or every layer x head."""

    maps: list[AttentionMap]
    n_rows: int
    n_cols: int
    layer: int | None  # the one layer shown, None: every layer (row l = layer l)
    title: str

    def position(self, k: int) -> tuple[int, int]:
        """(row, column) of maps[k]: reading order for one layer, (layer, head) for all layers."""
        m = self.maps[k]
        return divmod(k, self.n_cols) if self.layer is not None else (m.layer, m.head)

    def rows(self) -> list[dict]:
        return [r for m in self.maps for r in m.rows()]

    def summary(self) -> str:
        parts = []
        for m in self.maps:
            received = m.values.mean(axis=0)  # the attention each key token gets, averaged over the queries
            k = int(received.argmax())
            parts.append(f"layer {m.layer} head {m.head} to {quoted(m.labels[k])} {received[k]:.2f}")
        return f"{self.title}: {len(self.maps)} heads; the token each attends to most on average: {listed(parts, 12)}."


@dataclass
class HeadStats(Table):
    panels: list[Panel]
    layers: int
    heads: int
    title: str = "what each head looks at (mean over query tokens; Clark et al. 2019)"

    def rows(self) -> list[dict]:
        return [r for p in self.panels for r in _grid_rows(p, "layer", "head", "value", statistic=p.key)]

    def summary(self) -> str:
        parts = []
        for p in self.panels:
            ((layer, head),) = strongest(p.values, 1)
            parts.append(f"{p.title} highest at layer {layer} head {head} ({p.values[layer, head]:.2f})")
        return f"{self.title}, {self.layers} layers by {self.heads} heads: {'; '.join(parts)}."


@dataclass(kw_only=True)
class Ablation(Panel):
    """values[l, h] = the metric with head h of layer l silenced minus the baseline."""

    metric: str
    baseline: float
    sentence: str  # the text, for a subtitle ("" without tokens)

    def rows(self) -> list[dict]:
        return _grid_rows(self, "layer", "head", f"change in {self.metric}", baseline=self.baseline)

    def summary(self) -> str:
        ((lo_l, lo_h),) = strongest(-self.values, 1)
        ((hi_l, hi_h),) = strongest(self.values, 1)
        return (
            f"{self.title}: silencing one head at a time changes {self.metric} from {self.baseline:.3f}; "
            f"most down: layer {lo_l} head {lo_h} ({self.values[lo_l, lo_h]:+.3f}), "
            f"most up: layer {hi_l} head {hi_h} ({self.values[hi_l, hi_h]:+.3f})."
        )


# ----------------------------------------------------------------------------------------------
# Question answering, fill-mask, the guess at every layer
# ----------------------------------------------------------------------------------------------


@dataclass
class SpanProbabilities(Table):
    tokens: list[str]
    start: np.ndarray  # (T,) start probability of each token of the window
    end: np.ndarray  # (T,)
    span: list[int]  # the best span's token indexes ([0] = [CLS] for "no answer")
    title: str  # the best answer, its score, the window

    def rows(self) -> list[dict]:
        return [
            {
                "index": i,
                "token": t,
                "start_probability": float(s),
                "end_probability": float(e),
                "in_best_span": i in self.span,
            }
            for i, (t, s, e) in enumerate(zip(self.tokens, self.start, self.end))
        ]

    def summary(self) -> str:
        if not self.tokens:
            return f"{self.title}: no tokens."
        labels = axis_labels(self.tokens)
        s, e = int(np.argmax(self.start)), int(np.argmax(self.end))
        return (
            f"{self.title[0].upper()}{self.title[1:]}. Most likely first token: {quoted(labels[s])} "
            f"{self.start[s]:.1%}; most likely last token: {quoted(labels[e])} {self.end[e]:.1%}."
        )


@dataclass
class MaskGuesses:
    """The best guesses at one [MASK], best first."""

    number: int  # 1 for the first [MASK] of the text
    position: int | None  # its token index (None when the result does not say)
    tokens: list[str]  # vocabulary tokens, e.g. "##ing"
    probabilities: np.ndarray  # (k,)

    @property
    def labels(self) -> list[str]:
        """The tokens as shown: word pieces marked ("…ing (piece)"), each distinct."""
        return axis_labels([piece_label(t) for t in self.tokens])

    @property
    def title(self) -> str:
        where = f" (token {self.position})" if self.position is not None else ""
        return f"[MASK] {self.number}{where}"


@dataclass
class FillMaskBars(Table):
    masks: list[MaskGuesses]
    title: str

    def rows(self) -> list[dict]:
        return [
            {
                "mask": m.number,
                "position": m.position,
                "rank": r + 1,
                "token": t,
                "shown_as": s,
                "probability": float(p),
            }
            for m in self.masks
            for r, (t, s, p) in enumerate(zip(m.tokens, m.labels, m.probabilities))
        ]

    def summary(self) -> str:
        parts = []
        for m in self.masks:
            guesses = [f"{label} {p:.1%}" for label, p in zip(m.labels, m.probabilities)]
            if not guesses:
                continue
            then = f"; then {listed(guesses[1:], 4)}" if len(guesses) > 1 else ""
            where = f" at {m.title}" if len(self.masks) > 1 else ""
            parts.append(f"Top guess{where}: {guesses[0]}{then}.")
        return " ".join(parts) or f"{self.title}: no guesses."


@dataclass
class LensMask:
    """One [MASK] read at every layer: the top guesses (rows: layers 0..L, columns: ranks)."""

    number: int  # 1 for the first [MASK] of the text
    position: int  # its token index
    tokens: list[list[str]]  # [layer][rank]
    probabilities: np.ndarray  # (L+1, k)
    final: str  # the last layer's top-1 token
    final_probability: np.ndarray  # (L+1,)
    final_rank: list[int]  # (L+1)

    @property
    def labels(self) -> list[list[str]]:
        """Each cell's token as shown (word pieces marked "…ing")."""
        return [[piece_label(t) for t in row] for row in self.tokens]

    @property
    def title(self) -> str:
        return f"[MASK] {self.number} (token {self.position}): final answer “{piece_label(self.final)}”"


@dataclass
class LogitLens(Table):
    masks: list[LensMask]  # the first numbers.MAX_LENS_MASKS of the text
    num_masks: int  # the text's [MASK]s, shown or not
    title: str

    def rows(self) -> list[dict]:
        return [
            {
                "mask": m.number,
                "layer": layer,
                "rank": r + 1,
                "token": t,
                "probability": float(m.probabilities[layer, r]),
                "is_final_answer": t == m.final,
            }
            for m in self.masks
            for layer, row in enumerate(m.tokens)
            for r, t in enumerate(row)
        ]

    def summary(self) -> str:
        parts = []
        for m in self.masks:
            tops = [piece_label(row[0]) if row else "" for row in m.tokens]
            # the layer from which on the final answer stays the top guess
            first = next(k for k in range(len(tops)) if all(tops[j] == tops[-1] for j in range(k, len(tops))))
            by_layer = ", ".join(f"layer {layer} {quoted(t)}" for layer, t in enumerate(tops))
            parts.append(f"{m.title}; it is the top guess from layer {first} on (top guess at {by_layer}).")
        more = self.num_masks - len(self.masks)
        return " ".join(parts) + (f" {more} more [MASK] not shown." if more > 0 else "")


# ----------------------------------------------------------------------------------------------
# Attribution: what the answer rests on
# ----------------------------------------------------------------------------------------------


@dataclass
class Attributions(Table):
    """explore.attributions as one signed bar per token."""

    tokens: list[str]
    scores: np.ndarray  # (T,)
    highlight: list[int]  # tokens the answer is about (the QA span, the [MASK]): labelled in colour
    title: str  # the answer and what f is
    subtitle: str  # the method, f(input) - f(baseline), the sum, completeness
    method: str
    target: str

    @property
    def shaded(self) -> np.ndarray:
        """The scores over the largest |score|, in [-1, 1] (0 everywhere when all are 0)."""
        top = float(np.abs(self.scores).max(initial=0.0))
        return self.scores / top if top > 0 else np.zeros_like(self.scores)

    def rows(self) -> list[dict]:
        return [
            {
                "index": i,
                "token": t,
                "score": float(v),
                "share_of_largest": float(sh),
                "method": self.method,
                "f": self.target,
                "answer_token": i in self.highlight,
            }
            for i, (t, v, sh) in enumerate(zip(self.tokens, self.scores, self.shaded))
        ]

    def summary(self) -> str:
        labels = axis_labels(self.tokens)
        order = np.argsort(self.scores, kind="stable")
        up = [f"{quoted(labels[k])} {self.scores[k]:+.3f}" for k in order[::-1][:3] if self.scores[k] > 0]
        down = [f"{quoted(labels[k])} {self.scores[k]:+.3f}" for k in order[:2] if self.scores[k] < 0]
        said = f"most for it: {', '.join(up) or 'none'}; most against it: {', '.join(down) or 'none'}"
        return f"{self.title[0].upper()}{self.title[1:]}. {self.method}: {said}."


@dataclass
class AttentionVsAttribution(Table):
    """Attribution (top) beside the attention [CLS] pays in the last layer (bottom), same tokens."""

    tokens: list[str]
    scores: np.ndarray  # (T,) signed attribution
    attention: np.ndarray  # (T,) last layer, query [CLS], mean over heads
    words: np.ndarray  # (T,) bool: the tokens the correlations are over
    pearson: float
    spearman: float
    layer: int
    title: str
    subtitle: str
    attribution_title: str
    attention_title: str

    def rows(self) -> list[dict]:
        return [
            {
                "index": i,
                "token": t,
                "attribution": float(s),
                "attention_from_cls": float(a),
                "in_correlation": bool(w),
            }
            for i, (t, s, a, w) in enumerate(zip(self.tokens, self.scores, self.attention, self.words))
        ]

    def summary(self) -> str:
        labels = axis_labels(self.tokens)
        a, s = int(np.argmax(self.attention)), int(np.argmax(np.abs(self.scores)))
        return (
            f"{self.title}: {self.subtitle}. Largest attribution: {quoted(labels[s])} {self.scores[s]:+.3f}; "
            f"most attention from [CLS] in layer {self.layer}: {quoted(labels[a])} {self.attention[a]:.2f}."
        )


# ----------------------------------------------------------------------------------------------
# Embeddings (the paper's Figure 2), what each layer knows (probing)
# ----------------------------------------------------------------------------------------------


@dataclass
class EmbeddingComponents(Table):
    tokens: list[str]
    panels: list[Panel]  # token, segment, position, sum, LayerNorm: each (dims, T)
    sentence_b_start: int | None  # first token whose segment differs from the first token's
    dims: int  # the dimensions shown (the first ones)
    hidden: int  # of this many
    title: str

    def rows(self) -> list[dict]:
        return [
            {"component": p.key, "token_index": i, "token": self.tokens[i], "dim": d, "value": float(v)}
            for p in self.panels
            for (d, i), v in np.ndenumerate(p.values)
        ]

    def summary(self) -> str:
        sizes = ", ".join(f"{p.key} {float(np.abs(p.values).mean()):.3f}" for p in self.panels)
        return (
            f"{self.title}: the first {self.dims} of {self.hidden} dimensions for {len(self.tokens)} tokens; "
            f"mean size of a value: {sizes}."
        )


@dataclass
class ProbeLine:
    """One line of the figure: accuracy per layer with its interval, or a flat baseline."""

    name: str  # legend label
    kind: str  # "model", "snapshot", "control" (random weights) or "majority"
    layers: list[int]
    accuracy: list[float]
    low: list[float]
    high: list[float]
    correct: list[int]
    total: int
    step: int | None = None


@dataclass
class ProbeCurves(Table):
    lines: list[ProbeLine]
    title: str
    subtitle: str  # the split: where the training and test words come from
    num_layers: int  # the deepest encoder's L (the x axis runs 0..L)

    def rows(self) -> list[dict]:
        return [
            {
                "line": line.name,
                "kind": line.kind,
                "step": "" if line.step is None else line.step,
                "layer": layer,
                "accuracy": acc,
                "low": lo,
                "high": hi,
                "correct": c,
                "test_words": line.total,
                "split": self.subtitle,
            }
            for line in self.lines
            for layer, acc, lo, hi, c in zip(line.layers, line.accuracy, line.low, line.high, line.correct)
        ]

    def summary(self) -> str:
        parts = []
        for line in self.lines:
            if not line.accuracy:
                continue
            k = int(np.argmax(line.accuracy))
            where = f" at layer {line.layers[k]}" if len(set(line.accuracy)) > 1 else ""
            parts.append(
                f"{line.name} best {line.accuracy[k]:.1%}{where} (interval {line.low[k]:.1%} to {line.high[k]:.1%})"
            )
        return f"{self.title}: {listed(parts, 6)}."
