"""BERT by hand (notebook 11): a step of one forward pass, computed with plain torch operations from
the weights, checked against explore.trace's value of that step; a diagnosis when it differs.

    from lab import exercises, explore
    t = explore.trace(model, tokenizer, "she opened the [MASK] .", "it was dark .")
    exercises.check_step(t, "bert.encoder.layer.0.attention.self.scores", my_scores, model=model)
    check = exercises.StepChecker(t, model)   # the same, as a callable that remembers every result
    check("bert.embeddings.sum", my_sum)      # -> CheckResult(passed, message, details)

A step matches when its largest difference from the trace, relative to the step's largest value
(or to 1), is at most TOLERANCE: float32 rounding, which grows a little over the steps before it.
A step that does not match is diagnosed, never just diffed: its shape first (an extra batch axis,
heads not split, every token where the head reads the [MASK]s only, transposed), then the usual
mistakes of its kind, each recomputed from the trace's own input to the step (by_hand_mistakes.py:
the √d left out, the softmax over the queries, LayerNorm's eps, GELU's tanh form, the segments
swapped, the decoder's bias left out, ...), then the generic ones (transposed, another step's
values, off by a constant, scaled, every row off by the same vector). `model` gives the weights a
few diagnoses need (a Linear's bias, the decoder's bias); without it they are skipped.

Not a registered exercise: there is no stub to fill in. The notebook shows the right code, and
makes each mistake on purpose to show its diagnosis.
"""

from __future__ import annotations

import difflib

import torch

from .by_hand_mistakes import ATTENTION_KINDS, StepContext, variants
from .compare import first_diff, max_diff
from .core import CheckResult, Fail

TOLERANCE = 3e-6  # max |yours - trace| / max(1, max |trace|): float32 rounding over the steps before
MATCH = 3e-5  # the same measure between your values and a mistake recomputed from the trace's input


def relative_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| over max(1, max |a|, max |b|): the measure TOLERANCE and MATCH bound."""
    if not a.numel():
        return 0.0
    scale = max(1.0, float(a.abs().max()), float(b.abs().max()))
    return max_diff(a, b) / scale


def check_step(trace_result, name: str, values, model=None) -> CheckResult:
    """Your values of step `name` (a name of trace_result.names()) against the trace's: PASSED when
    they match to TOLERANCE, else the most likely mistake. `model`: the traced model, for the
    diagnoses that need its weights."""
    try:
        index = _index(trace_result, name)
    except Fail as f:
        return CheckResult(str(name), False, f.message, dict(f.details))
    step = trace_result.steps[index]
    about = {"step": step.name, "formula": step.formula}
    try:
        message, details = _check(trace_result, index, values, model)
    except Fail as f:
        return CheckResult(step.name, False, f.message, {**about, **f.details})
    return CheckResult(step.name, True, message, {**about, **details})


class StepChecker:
    """check_step bound to one trace (and its model): `check(name, values)` returns the CheckResult
    and keeps it in `history`, so a notebook can say which steps it has matched."""

    def __init__(self, trace_result, model=None):
        self.trace, self.model = trace_result, model
        self.history: list[CheckResult] = []

    def __call__(self, name: str, values) -> CheckResult:
        result = check_step(self.trace, name, values, self.model)
        self.history.append(result)
        return result

    @property
    def matched(self) -> list[str]:
        """The trace's steps, in order, that some check passed."""
        passed = {r.name for r in self.history if r.passed}
        return [n for n in self.trace.names() if n in passed]

    @property
    def missing(self) -> list[str]:
        """The trace's steps, in order, not matched yet."""
        passed = set(self.matched)
        return [n for n in self.trace.names() if n not in passed]

    def summary(self) -> str:
        n, missing = len(self.trace.steps), self.missing
        text = f"{n - len(missing)} of the trace's {n} steps computed by hand and matched"
        if not missing:
            return text + ": every step."
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        return text + f"; not yet: {', '.join(missing[:3])}{more}."


def _index(trace_result, name) -> int:
    names = trace_result.names()
    if isinstance(name, str) and name in names:
        return names.index(name)
    if not isinstance(name, str):
        raise Fail(f"The step's name should be a string such as {names[0]!r}, not a {type(name).__name__}.")
    near = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
    raise Fail(
        f"There is no step {name!r} in this trace.{hint} Its {len(names)} steps are listed by trace.names(), "
        f"from {names[0]!r} to {names[-1]!r}.",
        known_steps=len(names),
    )


def _as_tensor(values, step) -> torch.Tensor:
    """The student's values as a float64 CPU tensor, or a Fail that says what came instead."""
    if values is None:
        raise Fail(f"Nothing to check: your value for {step.name} is None. Did the cell assign it?")
    try:
        mine = values.detach() if torch.is_tensor(values) else torch.as_tensor(values)
    except (TypeError, ValueError, RuntimeError):
        raise Fail(
            f"Your value for {step.name} is a {type(values).__name__}, not numbers: pass a tensor of shape "
            f"{list(step.shape)}.",
            got=type(values).__name__,
        ) from None
    if mine.is_complex() or mine.dtype == torch.bool:
        raise Fail(f"Your value for {step.name} holds {mine.dtype} values; the step holds real numbers.")
    return mine.to("cpu", torch.float64)


def _check(trace_result, index: int, values, model) -> tuple[str, dict]:
    step = trace_result.steps[index]
    want = step.values.double()
    mine = _shape_checked(_as_tensor(values, step), want, step, trace_result)
    if not torch.isfinite(mine).all():
        bad = [int(i) for i in (~torch.isfinite(mine)).nonzero()[0]]
        why = (
            " exp of a large score overflows: subtract each row's largest value before exp (the softmax is unchanged)"
            if "softmax" in step.kind
            else " a division by zero, or an overflow in an earlier step, gives them"
        )
        raise Fail(f"Your {step.name} holds NaN or inf (first at index {bad}):{why}.", first_bad_index=bad)
    err = relative_difference(mine, want)
    if err <= TOLERANCE:
        largest = max_diff(mine, want)
        how = (
            "Your step equals the trace's, number for number."
            if largest == 0
            else f"Your step matches the trace to {err:.1e} of its largest value (largest difference {largest:.1e} "
            f"on values up to {float(want.abs().max()):.3g}; float32 rounding allows {TOLERANCE:g})."
        )
        return f"{how} {step.what}", {"relative_difference": err, "largest_difference": largest}
    raise _diagnosis(StepContext(trace_result, step, index, mine, want, model), err)


# ------------------------------------------------------------------------------------------------
# Shapes
# ------------------------------------------------------------------------------------------------
def _shape_checked(mine: torch.Tensor, want: torch.Tensor, step, trace_result) -> torch.Tensor:
    """mine itself when its shape is the step's; otherwise a Fail that names the likely mistake and
    says whether the values are right once the shape is mended."""
    got, shape = tuple(mine.shape), tuple(want.shape)
    if got == shape:
        return mine
    why, code, mended = next(
        (found for find in SHAPE_MISTAKES if (found := find(mine, want, step, trace_result))),
        ("compare your tensor's axes with the step's formula, " + step.formula, "shape", None),
    )
    after = ""
    if mended is not None:
        after = (
            " Mended so, your values match the trace."
            if relative_difference(mended, want) <= TOLERANCE
            else " Even mended so, your values differ from the trace's: check the arithmetic too."
        )
    raise Fail(
        f"Your {step.name} has shape {list(got)}; the step's is {list(shape)} ({' × '.join(step.axes)}): {why}.{after}",
        mistake=code,
        your_shape=list(got),
        step_shape=list(shape),
    )


def _extra_axis(mine, want, step, trace_result):
    """[1, T, H] for [T, H]: a batch of one kept."""
    squeezed = mine.squeeze()
    if mine.dim() > want.dim() and tuple(squeezed.shape) == tuple(want.squeeze().shape):
        why = "an extra axis of size 1 (a batch of one?). The trace follows one text, without a batch axis: take [0]"
        return why, "shape_extra_axis", squeezed.reshape(want.shape)
    return None


def _transposed_shape(mine, want, step, trace_result):
    if mine.dim() == 2 and tuple(mine.shape) == tuple(want.shape)[::-1]:
        return f"it is transposed: the rows are the {step.axes[0]}s", "transposed", mine.T
    return None


def _heads_shape(mine, want, step, trace_result):
    """(T, H) where the step keeps the heads apart (A, T, d), the reverse, or one matrix for all heads."""
    got, shape = tuple(mine.shape), tuple(want.shape)
    same_size = mine.numel() == want.numel()
    if len(shape) == 3 and len(got) == 2 and same_size and got[0] == shape[1]:
        A, T, d = shape
        why = (
            f"the heads are not split. This step keeps each head apart, (A, T, d) = ({A}, {T}, {d}): "
            "x.view(T, A, d).transpose(0, 1)"
        )
        return why, "shape_heads", mine.view(T, A, d).transpose(0, 1)
    if len(shape) == 2 and len(got) == 3 and same_size and got[1] == shape[0]:
        A, T, d = got
        why = (
            f"the heads are still apart. This step puts them side by side, (T, A·d) = ({T}, {A * d}): "
            "x.transpose(0, 1).reshape(T, A * d)"
        )
        return why, "shape_heads", mine.transpose(0, 1).reshape(T, A * d)
    if len(shape) == 3 and got == shape[1:] and step.kind in ATTENTION_KINDS:
        why = (
            f"one matrix for all heads. Each of the {shape[0]} heads has its own: split Q and K into heads of d "
            "numbers first, (A, T, d), then Q_h K_hᵀ for each"
        )
        return why, "shape_heads", None
    return None


def _positions_shape(mine, want, step, trace_result):
    """Every token where the step reads a few: the [MASK]s (masked-LM head), [CLS] alone (pooler, NSP)."""
    got, shape = tuple(mine.shape), tuple(want.shape)
    T, positions = len(trace_result.tokens), trace_result.predicted_positions
    if len(shape) == 2 and got == (T, shape[1]) and shape[0] == len(positions) != T:
        why = (
            f"one row for every token. The masked-LM head reads only the predicted positions, the [MASK]s at "
            f"{positions} (trace.predicted_positions): take those rows, h[positions]"
        )
        return why, "shape_positions", mine[positions]
    if len(shape) == 1 and got == (T, shape[0]) and step.name.startswith(("bert.pooler", "cls.seq_relationship")):
        return (
            "one row for every token. The pooler reads [CLS] alone, the first token: take row 0",
            "shape_positions",
            mine[0],
        )
    return None


SHAPE_MISTAKES = (_extra_axis, _transposed_shape, _heads_shape, _positions_shape)  # tried in this order


# ------------------------------------------------------------------------------------------------
# Diagnoses
# ------------------------------------------------------------------------------------------------
def _diagnosis(ctx: StepContext, err: float) -> Fail:
    """The Fail that names the mistake: the closest of the kind's usual mistakes, else the first
    generic one that fits, else the largest difference and the step's formula."""
    details = {"relative_difference": err, **first_diff(ctx.mine, ctx.want)}
    found = _closest(ctx, variants(ctx)) or _generic(ctx)
    if found:
        code, why = found
        return Fail(
            f"Your {ctx.step.name} differs from the trace by up to {max_diff(ctx.mine, ctx.want):.3g}: {why}.",
            mistake=code,
            **details,
        )
    return Fail(
        f"Your {ctx.step.name} differs from the trace by up to {max_diff(ctx.mine, ctx.want):.3g}, and it is none "
        f"of the usual mistakes of this step. The step computes {ctx.step.formula}; check that you start from the "
        "right input (did each step before it match?).",
        mistake="unknown",
        **details,
    )


def _closest(ctx: StepContext, candidates) -> tuple[str, str] | None:
    """(code, message) of the candidate mistake closest to the student's values, within MATCH and
    closer than the right answer; candidates that equal the right answer are no mistake here."""
    best = None
    for code, value, why in candidates:
        value = value.double()
        if tuple(value.shape) != tuple(ctx.want.shape) or relative_difference(value, ctx.want) <= TOLERANCE:
            continue
        d = relative_difference(ctx.mine, value)
        if d <= MATCH and (best is None or d < best[0]):
            best = (d, code, why)
    return best[1:] if best else None


def _generic(ctx: StepContext) -> tuple[str, str] | None:
    """Transposed, another step's values, off by a constant, scaled, every row off by one vector."""
    mine, want, step = ctx.mine, ctx.want, ctx.step
    if want.dim() >= 2 and want.shape[-1] == want.shape[-2]:
        why = (
            "your matrix is transposed: row i must be query i and column j key j (Q Kᵀ, not K Qᵀ)"
            if step.kind in ATTENTION_KINDS
            else "your matrix is transposed (.T): " + " × ".join(step.axes)
        )
        found = _closest(ctx, [("transposed", want.transpose(-1, -2), why)])
        if found:
            return found
    other = _other_step(ctx)
    if other:
        return other
    offset = float((mine - want).mean())
    if step.kind in ("mask", "mask_local"):
        why = (
            f"every score is off by the same number, {offset:+.4g}: the mask was added to every key. M is 0 where a "
            "key may be seen (every key of one text) and a large negative number (−∞, or −10000 in Google's code) "
            "only at [PAD]. The softmax barely notices, since a number added to a whole row cancels (up to "
            "rounding), but in a padded batch such a mask hides the real tokens and shows the [PAD]s"
        )
    else:
        why = f"every value is off by the same number, {offset:+.4g}: a constant added or left out"
    ratio = float((mine * want).sum() / (want * want).sum().clamp_min(1e-30))
    rows = mine.shape[0] if mine.dim() >= 2 else 0
    candidates = [
        ("constant", want + offset, why),
        ("scaled", want * ratio, f"your values are {ratio:.4g} times the trace's: a factor too many or missing"),
    ]
    if rows >= 2:
        candidates.append(
            (
                "row_offset",
                want + (mine - want).mean(0),
                "every row is off by the same vector: a bias (+ b) left out, added twice, or the wrong one",
            )
        )
    for candidate in candidates:  # in this order: the simplest explanation first
        found = _closest(ctx, [candidate])
        if found:
            return found
    return None


def _other_step(ctx: StepContext) -> tuple[str, str] | None:
    """Your values are those of another step of the trace: an operation missing, or one too many."""
    for j, s in enumerate(ctx.trace.steps):
        if j == ctx.index or s.shape != tuple(ctx.want.shape):
            continue
        value = s.values.double()
        if relative_difference(value, ctx.want) <= TOLERANCE or relative_difference(ctx.mine, value) > MATCH:
            continue
        if j == ctx.index - 1:
            why = (
                f"these are the values of the step before, {s.name}: this step's own operation is missing, "
                f"{ctx.step.formula}"
            )
        elif j < ctx.index:
            why = f"these are the values of an earlier step, {s.name} ({s.what.rstrip('.')})"
        else:
            why = f"these are the values of a later step, {s.name} ({s.what.rstrip('.')}): one operation too many"
        return "other_step", why
    return None
