"""Exercise `span_decoding` (notebook 4): the answer span BERT reads off a SQuAD window, the best
start and end chosen together (Section 4.2).

The checker compares with lab.data.squad.decode_spans on random windows and on traps built for one
mistake each; a wrong span is traced to the mistake that reproduces every span the student gave.
`show_answers` is the notebook's demonstration on a real reader (squad_reader.py).
"""

from __future__ import annotations

import torch

from lab import inference
from lab.data import squad

from . import core
from .core import Fail, call
from .squad_reader import demo_call, questions_of, reader


def best_span(start_logits, end_logits, context_mask, max_answer_length=30):
    """The answer BERT reads off one window of SQuAD (the paper's Section 4.2).

    start_logits, end_logits: (T,) float tensors, one score per position of the window
        [CLS] question [SEP] context [SEP] [PAD] ...
    context_mask: (T,) bool tensor, True at the context's tokens only (False at [CLS], the question,
        the [SEP]s and the padding); at least one position is True.
    max_answer_length: the longest answer allowed, in tokens.

    Returns (start, end), two ints (end inclusive): among the spans that lie inside the context, start
    no later than they end and hold at most max_answer_length tokens, the one with the highest
    start_logits[start] + end_logits[end].
    """
    T = start_logits.shape[0]
    # scores[i, j] = start_logits[i] + end_logits[j]: the span from token i to token j
    scores = start_logits[:, None] + end_logits[None, :]  # (T, T)
    pos = torch.arange(T)
    length = pos[None, :] - pos[:, None] + 1  # (T, T): j - i + 1 tokens; <= 0 when the end is before the start
    allowed = (length >= 1) & (length <= max_answer_length)
    allowed &= context_mask[:, None] & context_mask[None, :]  # start and end both in the context
    scores = scores.masked_fill(~allowed, float("-inf"))
    best = int(scores.argmax())  # index into the flattened (T, T) grid: start * T + end
    return best // T, best % T


def _window(n_question: int, n_context: int, n_pad: int) -> list[str]:
    """The role of every position: [CLS] question [SEP] context [SEP] [PAD]..."""
    return ["[CLS]"] + ["question"] * n_question + ["[SEP]"] + ["context"] * n_context + ["[SEP]"] + ["[PAD]"] * n_pad


def _span_cases(generator: torch.Generator) -> list[dict]:
    """Windows with random logits, then one trap per typical mistake (each trap's best span is not
    where the mistake would look), then edge cases."""
    cases = []

    def add(name, roles, max_len, set_start=(), set_end=(), scale=1.0):
        T = len(roles)
        start = torch.randn(T, generator=generator) * scale
        end = torch.randn(T, generator=generator) * scale
        for roles_or_pos, value in set_start:
            start[_pos(roles, roles_or_pos)] = value
        for roles_or_pos, value in set_end:
            end[_pos(roles, roles_or_pos)] = value
        mask = torch.tensor([r == "context" for r in roles])
        cases.append(dict(name=name, roles=roles, start=start, end=end, mask=mask, max_len=max_len))

    _add_traps(add)
    for k in range(24):  # random windows of odd sizes
        nq = int(torch.randint(1, 9, (1,), generator=generator))
        nc = int(torch.randint(1, 40, (1,), generator=generator))
        npad = int(torch.randint(0, 6, (1,), generator=generator))
        max_len = int(torch.randint(1, 12, (1,), generator=generator))
        add(
            f"random window {k + 1} ({nq} question, {nc} context tokens, max length {max_len})",
            _window(nq, nc, npad),
            max_len,
            scale=3.0,
        )
    add("a context of a single token", _window(3, 1, 2), 30)
    add("max_answer_length 1", _window(2, 6, 0), 1, scale=3.0)
    add("a window without padding, the context up to the last [SEP]", _window(5, 7, 0), 30, scale=3.0)
    return cases


def _add_traps(add) -> None:
    """One window per typical mistake, each built so that the mistake picks another span than the best."""
    w = _window(4, 10, 3)
    add(
        "a window whose best start lies after its best end",
        w,
        30,
        set_start=[(("context", 7), 9.0), (("context", 1), 4.0)],
        set_end=[(("context", 2), 9.0), (("context", 8), 3.0)],
    )
    add(
        "a window with the largest logits on the question",
        w,
        30,
        set_start=[(("question", 1), 12.0)],
        set_end=[(("question", 2), 12.0)],
    )
    add(
        "a window with the largest logits on [CLS] (where SQuAD models put 'no answer')",
        w,
        30,
        set_start=[(("[CLS]", 0), 15.0)],
        set_end=[(("[CLS]", 0), 15.0)],
    )
    add(
        "a window with large logits on the padding",
        w,
        30,
        set_start=[(("[PAD]", 0), 11.0)],
        set_end=[(("[PAD]", 2), 11.0)],
    )
    add(
        "a window with a large end logit on the final [SEP]",
        w,
        30,
        set_start=[(("context", 3), 6.0)],
        set_end=[(("[SEP]", 1), 14.0)],
    )
    add(
        "a window whose best pair is 9 tokens long, with max_answer_length 4",
        w,
        4,
        set_start=[(("context", 0), 10.0)],
        set_end=[(("context", 8), 10.0)],
    )
    add(
        "a window whose best pair is 5 tokens long, with max_answer_length 4",
        w,
        4,
        set_start=[(("context", 2), 10.0)],
        set_end=[(("context", 6), 10.0)],
    )
    add(
        "a window where the best start's best end is not the best pair",
        w,
        30,
        set_start=[(("context", 6), 8.0), (("context", 2), 7.5)],
        set_end=[(("context", 3), 8.0)],
        scale=0.3,
    )


def _pos(roles: list[str], where: tuple[str, int]) -> int:
    """Position of the k-th token with a role: ("context", 2) -> the third context token."""
    role, k = where
    return [i for i, r in enumerate(roles) if r == role][k]


def _lab_best(case) -> tuple[int, int, float]:
    """The best span by lab.data.squad.decode_spans, on a window whose token i covers context characters
    2i..2i+1 (every start and end considered: n_best = T)."""
    roles, T = case["roles"], len(case["roles"])
    in_context = [r == "context" for r in roles]
    feature = squad.Feature(
        example_index=0,
        example_id="q",
        window_index=0,
        window_start=0,
        input_ids=[0] * T,
        token_type_ids=[0] * T,
        attention_mask=[1] * T,
        offsets=[(2 * i, 2 * i + 1) if c else None for i, c in enumerate(in_context)],
        token_is_max_context=in_context,
    )
    example = squad.Example(id="q", title="", context="x" * (2 * T), question="", answers=[])
    spans = squad.decode_spans(
        [feature], [case["start"]], [case["end"]], example, n_best=T, max_answer_length=case["max_len"]
    )
    best = spans[0]
    return best.start // 2, (best.end - 1) // 2, best.score


def _as_span(out, what: str) -> tuple[int, int]:
    if torch.is_tensor(out) and out.numel() == 2:
        out = out.reshape(-1).tolist()
    if isinstance(out, (tuple, list)) and len(out) == 2:
        try:
            i, j = (int(v) for v in out)
        except (TypeError, ValueError, RuntimeError):
            pass
        else:
            if all(float(v) == int(v) for v in out):
                return i, j
    raise Fail(f"{what} returned {core.short(out, 80)}; return (start, end), two ints (positions in the window).")


def _grid_best(s, e, allowed) -> tuple[int, int]:
    """The (start, end) with the highest s[start] + e[end] among allowed[start, end] (T, T)."""
    T = s.shape[0]
    best = int((s[:, None] + e[None, :]).masked_fill(~allowed, float("-inf")).argmax())
    return best // T, best % T


def _mistaken_span(mistake: str, s, e, mask, L) -> tuple[int, int]:
    """What best_span returns with one typical mistake."""
    T = s.shape[0]
    pos = torch.arange(T)
    length = pos[None, :] - pos[:, None] + 1  # (T, T): j - i + 1
    inside = mask[:, None] & mask[None, :]
    if mistake == "independent":
        return int(s.argmax()), int(e.argmax())
    if mistake == "independent in the context":
        return int(s.masked_fill(~mask, float("-inf")).argmax()), int(e.masked_fill(~mask, float("-inf")).argmax())
    if mistake == "start first":
        i = int(s.masked_fill(~mask, float("-inf")).argmax())
        ends = e.masked_fill(~mask | (pos < i) | (pos > i + L - 1), float("-inf"))
        return i, int(ends.argmax())
    allowed = {
        "no context mask": (length >= 1) & (length <= L),
        "no [CLS] exclusion": (length >= 1) & (length <= L) & (inside | ((pos[:, None] == 0) & (pos[None, :] == 0))),
        "no length limit": (length >= 1) & inside,
        "off by one": (length >= 1) & (length <= L + 1) & inside,
        "no order": (length.abs() <= L) & inside,
        "no order, no limit": inside,
    }[mistake]
    return _grid_best(s, e, allowed)


_SPAN_MISTAKES = {
    "independent": "you took the argmax of the start logits and of the end logits independently (over the whole "
    "window); score the (start, end) pairs jointly and keep only the allowed ones",
    "independent in the context": "you took the argmax of the start logits and of the end logits independently "
    "(within the context); the end can then come before the start or be too far: score the (start, end) pairs "
    "jointly and keep only the allowed ones",
    "start first": "you fixed the best start first, then chose its best end; the best pair maximises "
    "start_logits[start] + end_logits[end] together",
    "no context mask": "spans may start or end outside the context (in the question, on [CLS], [SEP] or the "
    "padding): allow only positions where context_mask is True",
    "no [CLS] exclusion": "you allow the span [CLS]-[CLS], SQuAD 2.0's 'no answer'; in SQuAD v1.1 every "
    "question has an answer in the context: allow only positions where context_mask is True",
    "no length limit": "there is no limit on the answer's length: allow only spans with end - start + 1 <= "
    "max_answer_length",
    "off by one": "your length limit lets spans of max_answer_length + 1 tokens through: the length is "
    "end - start + 1 (off by one)",
    "no order": "spans whose end comes before their start are allowed: keep only end >= start",
    "no order, no limit": "spans whose end comes before their start, and spans of any length, are allowed: keep "
    "only start <= end <= start + max_answer_length - 1",
}


def _span_cause(case, i: int, j: int, best: tuple[int, int, float]) -> str:
    roles, s, mask, L = case["roles"], case["start"], case["mask"], case["max_len"]
    T = len(roles)
    ctx = torch.nonzero(mask).reshape(-1)
    if not (0 <= i < T and 0 <= j < T):
        return f"({i}, {j}) is outside the window of {T} positions"
    if j < i:
        return "the end comes before the start: allow only spans with end >= start"
    outside = [(p, roles[p]) for p in (i, j) if not mask[p]]
    if outside:
        p, role = outside[0]
        where = {
            "[CLS]": "[CLS] (position 0)",
            "question": "the question",
            "[SEP]": "a [SEP]",
            "[PAD]": "the padding",
        }[role]
        return (
            f"position {p} lies in {where}, not in the context: allow only spans whose start and end both have "
            "context_mask True"
        )
    if j - i + 1 > L:
        if j - i + 1 == L + 1:
            return (
                f"the span holds {j - i + 1} tokens, one more than max_answer_length = {L}: its length is "
                "end - start + 1 (off by one)"
            )
        return f"the span holds {j - i + 1} tokens, more than max_answer_length = {L}: limit end - start + 1"
    bi, bj, _ = best
    greedy_start = int(ctx[s[ctx].argmax()])
    if i == greedy_start and (i, j) != (bi, bj):
        return (
            "you fixed the best start first, then chose its best end; the best pair maximises "
            "start_logits[start] + end_logits[end] together (here it starts elsewhere)"
        )
    return "it is allowed but scores lower than the best allowed span: consider every (start, end) pair"


def check_span_decoding(student, seed: int = 0):
    """Checks best_span(start_logits, end_logits, context_mask, max_answer_length) on 24 random windows
    (1-8 question tokens, 1-39 context tokens, 0-5 [PAD], max length 1-11) and on traps: the best start
    after the best end, large logits on the question, [CLS], padding or the final [SEP], a best pair
    longer than max_answer_length (by many tokens and by one), a best start whose best end is not the
    best pair; and edge cases (a one-token context, max length 1, no padding). The reference is
    lab.data.squad.decode_spans with every start and end considered; a span scoring the same as its best
    passes. A wrong span is traced to its cause: independent argmaxes, end before start, a position
    outside the context (which part), too long (off by one or no limit), best start first.
    Options: seed (the random windows).
    """
    generator = torch.Generator().manual_seed(seed)
    cases = _span_cases(generator)
    what = "your best_span(start_logits, end_logits, context_mask, max_answer_length)"
    answers, first_wrong = [], None
    for case in cases:  # every case first: the mistake is told apart by the spans over all windows
        best = _lab_best(case)
        out = call(
            student, case["start"].clone(), case["end"].clone(), case["mask"].clone(), case["max_len"], what=what
        )
        i, j = _as_span(out, "Your best_span")
        answers.append((i, j))
        s, e, L, T = case["start"], case["end"], case["max_len"], len(case["roles"])
        ok = 0 <= i <= j < T and bool(case["mask"][i]) and bool(case["mask"][j]) and j - i + 1 <= L
        if first_wrong is None and not (ok and abs(float(s[i] + e[j]) - best[2]) <= 1e-4):
            first_wrong = (case, i, j, best)
    if first_wrong is not None:
        case, i, j, best = first_wrong
        s, e, L, T = case["start"], case["end"], case["max_len"], len(case["roles"])
        matches = [
            m
            for m in _SPAN_MISTAKES
            if all(
                _mistaken_span(m, c["start"], c["end"], c["mask"], c["max_len"]) == a for c, a in zip(cases, answers)
            )
        ]
        cause = _SPAN_MISTAKES[matches[0]] if matches else _span_cause(case, i, j, best)
        window = " ".join(r if r != "context" else "c" for r in case["roles"])
        scored = f"{float(s[i] + e[j]):.3f}" if 0 <= i < T and 0 <= j < T else "-"
        wrong = sum(a != _lab_best(c)[:2] for c, a in zip(cases, answers))
        raise Fail(
            f"On {case['name']} your span is ({i}, {j}), the best allowed one is ({best[0]}, {best[1]}) "
            f"with score {best[2]:.3f} ({wrong} of {len(cases)} windows differ): {cause}.",
            case=case["name"],
            window=window,
            max_answer_length=L,
            start_logits=[round(v, 3) for v in s.tolist()],
            end_logits=[round(v, 3) for v in e.tolist()],
            yours=(i, j),
            your_score=scored,
            expected=best[:2],
            mistake=matches[0] if matches else "not one of the usual ones",
        )
    return (
        f"Your best_span agrees with lab.data.squad's decoding on {len(cases)} windows: random ones and traps with "
        "large logits on the question, [CLS], [SEP] and padding, an end before the start, spans too long by "
        "one and by many."
    )


def show_answers(best_span, count: int = 5, max_answer_length: int = 30, model: str = "minilm-squad") -> str:
    """Your best_span as the reader of a real QA model: for `count` SQuAD questions it never trained on
    (whose paragraph fits one 256-token window), the bundled model's start/end logits go through your
    best_span and through lab.data.squad.decode_spans; the text of both answers beside the annotators'."""
    tiny = (torch.zeros(4), torch.zeros(4), torch.tensor([False, True, True, False]), max_answer_length)
    _, problem = demo_call(best_span, *tiny, what="your best_span")  # before loading anything
    if problem:
        return problem
    qa_model, tokenizer, questions, source = reader(model)
    lines = [f"{model} reading {questions_of(source, held_out=True)}; your answer | the lab's | gold"]
    shown = 0
    for ex in questions:
        features = squad.make_features([ex], tokenizer, max_seq_length=256, doc_stride=128, training=False)
        if len(features) != 1:  # the paragraph needs several windows: keep the demonstration to one
            continue
        f = features[0]
        starts, ends = inference.span_logits(qa_model, tokenizer, features)
        start, end = torch.tensor(starts[0]), torch.tensor(ends[0])  # (T,)
        mask = torch.tensor([o is not None for o in f.offsets])  # (T,) the context's tokens
        out, problem = demo_call(best_span, start, end, mask, max_answer_length, what="your best_span")
        if problem:
            return problem
        try:
            i, j = _as_span(out, "Your best_span")
        except Fail as fail:
            return fail.message
        if 0 <= i <= j < len(f.offsets) and f.offsets[i] is not None and f.offsets[j] is not None:
            mine = ex.context[f.offsets[i][0] : f.offsets[j][1]]
        else:
            mine = f"(tokens {i}..{j}: not a span of the context)"
        lab_answer = squad.decode_spans(features, starts, ends, ex, max_answer_length=max_answer_length)[0].text
        lines.append(f"Q: {ex.question}\n   yours: {mine!r} | lab: {lab_answer!r} | gold: {ex.answers[0]['text']!r}")
        shown += 1
        if shown == count:
            break
    return "\n".join(lines)


EXERCISE = core.Exercise(
    name="span_decoding",
    title="The answer span: best start and end together",
    group="finetuning",
    checker=check_span_decoding,
    solution=best_span,
    imports="import torch\n",
    hint=(
        "Score every pair at once: scores = start_logits[:, None] + end_logits[None, :] is (T, T), entry [i, j] "
        "the span from i to j. Set the pairs that are not allowed to -inf (j < i, j - i + 1 > max_answer_length, "
        "i or j outside the context), then take the argmax of the whole grid: the start and the end are chosen "
        "together, not each on its own."
    ),
)
