"""The fine-tuning exercises (lab/exercises/classifier.py, span_decoding.py, squad_metrics.py): every
checker passes the reference solution (also its source as pasted into a notebook), rejects the
typical wrong implementations written here with the diagnosis that names their cause, and turns a
stub or a crash into one sentence."""

import collections
import re
import string

import pytest
import torch
import torch.nn.functional as F

from lab.exercises import classifier, core, span_decoding, squad_metrics, squad_reader
from lab.exercises.core import NOT_IMPLEMENTED, NOT_YET, PASSED

torch.set_num_threads(1)

NAMES = ("classifier", "span_decoding", "squad_metrics")


def run(name, student, **options):
    return core.run(core.REGISTRY[name], student, **options)


def solution_namespace(name):
    """The solution as a notebook gets it: its imports and source exec'd in a fresh namespace."""
    ex = core.REGISTRY[name]
    namespace = {}
    exec(compile(ex.imports.rstrip() + "\n\n\n" + core.source_of(ex.solution), f"<{name}>", "exec"), namespace)
    return namespace[ex.symbol]


def assert_diagnosis(result, *words):
    assert result.status == NOT_YET, result
    text = result.message.lower()
    for word in words:
        assert word.lower() in text, f"{word!r} not in: {result.message}"


# ----------------------------------------------------------------------------------------------
# shared behaviour
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_reference_and_pasted_solution_pass(name):
    ex = core.REGISTRY[name]
    assert ex.group == "finetuning"
    for student in (ex.solution, solution_namespace(name)):
        result = run(name, student)
        assert result.passed, result
        assert str(result).startswith(PASSED)


@pytest.mark.parametrize("name", NAMES)
def test_stub_is_not_implemented_yet(name):
    ex = core.REGISTRY[name]
    namespace = {}
    exec(ex.stub, namespace)
    student = namespace[ex.symbol]
    result = run(name, student)
    assert result.status == NOT_IMPLEMENTED and not result.implemented
    assert "NotImplementedError" in result.message
    assert str(result).startswith("NOT IMPLEMENTED YET")
    # the stub holds the signature and the shapes, not the solution
    assert "raise NotImplementedError" in ex.stub
    assert core.source_of(ex.solution).strip() not in ex.stub


@pytest.mark.parametrize("seed", [1, 2])
def test_other_seeds_pass(seed):
    assert run("classifier", classifier.BertClassifier, seed=seed).passed
    assert run("span_decoding", span_decoding.best_span, seed=seed).passed


# ----------------------------------------------------------------------------------------------
# classifier: the head and the training step
# ----------------------------------------------------------------------------------------------

Ref = classifier.BertClassifier


def _encode(self, i, t, m):
    return self.bert(i, token_type_ids=t, attention_mask=m).last_hidden_state


class MeanPooled(Ref):
    def forward(self, i, t, m):
        return self.classifier(self.dropout(torch.tanh(self.pooler(_encode(self, i, t, m).mean(1)))))


class LastToken(Ref):
    def forward(self, i, t, m):
        return self.classifier(self.dropout(torch.tanh(self.pooler(_encode(self, i, t, m)[:, -1]))))


class NoTanh(Ref):
    def forward(self, i, t, m):
        return self.classifier(self.dropout(self.pooler(_encode(self, i, t, m)[:, 0])))


class Probabilities(Ref):
    def forward(self, i, t, m):
        return super().forward(i, t, m).softmax(-1)


class PerToken(Ref):
    def forward(self, i, t, m):
        return self.classifier(torch.tanh(self.pooler(_encode(self, i, t, m))))


class NoMask(Ref):
    def forward(self, i, t, m):
        return self.classifier(
            self.dropout(torch.tanh(self.pooler(self.bert(i, token_type_ids=t).last_hidden_state[:, 0])))
        )


class NoDropout(Ref):
    def forward(self, i, t, m):
        return self.classifier(torch.tanh(self.pooler(_encode(self, i, t, m)[:, 0])))


class DropoutInEval(Ref):
    def forward(self, i, t, m):
        return self.classifier(F.dropout(torch.tanh(self.pooler(_encode(self, i, t, m)[:, 0])), 0.1))


class WrongNames(torch.nn.Module):
    def __init__(self, encoder, num_labels, dropout=0.1):
        super().__init__()
        h = encoder.config.hidden_size
        self.encoder, self.dense, self.out = encoder, torch.nn.Linear(h, h), torch.nn.Linear(h, num_labels)


def _logits(model, batch):
    return model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])


class NoZeroGrad(Ref):
    def training_step(self, batch, optimizer):
        self.train()
        loss = F.cross_entropy(_logits(self, batch), batch["labels"])
        loss.backward()
        optimizer.step()
        return loss.item()


class SoftmaxThenCE(Ref):
    def training_step(self, batch, optimizer):
        self.train()
        loss = F.cross_entropy(_logits(self, batch).softmax(-1), batch["labels"])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.item()


class SummedLoss(Ref):
    def training_step(self, batch, optimizer):
        self.train()
        loss = F.cross_entropy(_logits(self, batch), batch["labels"], reduction="sum")
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.item()


class StaysInEval(Ref):  # forgets self.train(): the model came from an evaluation
    def training_step(self, batch, optimizer):
        loss = F.cross_entropy(_logits(self, batch), batch["labels"])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.item()


class ZeroGradBeforeStep(Ref):
    def training_step(self, batch, optimizer):
        self.train()
        loss = F.cross_entropy(_logits(self, batch), batch["labels"])
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
        return loss.item()


class NoStep(Ref):
    def training_step(self, batch, optimizer):
        self.train()
        loss = F.cross_entropy(_logits(self, batch), batch["labels"])
        loss.backward()
        return loss.item()


class ReturnsNothing(Ref):
    def training_step(self, batch, optimizer):
        Ref.training_step(self, batch, optimizer)


class ZeroGradFirst(Ref):  # clearing at the start of the step is right too
    def training_step(self, batch, optimizer):
        self.train()
        optimizer.zero_grad()
        loss = F.cross_entropy(_logits(self, batch), batch["labels"])
        loss.backward()
        optimizer.step()
        return loss.detach()  # a tensor is accepted too


class PositionalEncoderCall(Ref):  # another way of calling the encoder, same result
    def forward(self, input_ids, token_type_ids, attention_mask):
        h = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return self.classifier(self.dropout(torch.tanh(self.pooler(h.last_hidden_state[:, 0, :]))))


@pytest.mark.parametrize(
    "student, words",
    [
        (MeanPooled, ["averaged the vectors of all tokens", "[CLS]", "hidden[:, 0]"]),
        (LastToken, ["last position", "[CLS]"]),
        (NoTanh, ["tanh is missing"]),
        (Probabilities, ["probabilities", "raw logits"]),
        (PerToken, ["one row per token", "[CLS]"]),
        (NoMask, ["did not pass attention_mask", "[PAD]"]),
        (NoDropout, ["no dropout is applied"]),
        (DropoutInEval, ["dropout is still on in eval mode", "nn.Dropout"]),
        (WrongNames, ["self.bert", "classifier", "pooler"]),
        (NoZeroGrad, ["second", "zero_grad", "first batch's gradients"]),
        (SoftmaxThenCE, ["softmax", "raw logits"]),
        (SummedLoss, ["sum over the 5 sentences", "mean"]),
        (StaysInEval, ["eval mode", "self.train()"]),
        (ZeroGradBeforeStep, ["no weight changed", "backward, step, zero_grad"]),
        (NoStep, ["optimizer.step()"]),
        (ReturnsNothing, ["returned None", "loss.item()"]),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)
def test_classifier_diagnoses(student, words):
    assert_diagnosis(run("classifier", student), *words)


@pytest.mark.parametrize("student", [ZeroGradFirst, PositionalEncoderCall])
def test_classifier_accepts_equivalent_code(student):
    assert run("classifier", student).passed


def test_classifier_exception_is_one_sentence():
    class Crashes(Ref):
        def forward(self, i, t, m):
            return self.classifier(_encode(self, i, t, m)[:, 0, 0])

    result = run("classifier", Crashes)
    assert_diagnosis(result, "raised RuntimeError", "at line")
    assert "Traceback" not in result.message and result.message.count("\n") == 0


def test_reference_classifier_equals_transformers():
    """The reference head = transformers' BertForSequenceClassification with the same weights."""
    transformers = pytest.importorskip("transformers")
    from lab.model import BertModel

    cfg = classifier._tiny_config(3)
    hf_cfg = transformers.BertConfig(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=3,
    )
    torch.manual_seed(0)
    hf = transformers.BertForSequenceClassification(hf_cfg).eval()
    ours = Ref(BertModel(cfg, add_pooling_layer=False), 3).eval()
    state = {}
    for k, v in hf.state_dict().items():
        if k.startswith("bert.pooler.dense."):
            state["pooler." + k.rsplit(".", 1)[1]] = v
        elif k in ours.state_dict():
            state[k] = v
    missing, _ = ours.load_state_dict(state, strict=False)
    assert not missing
    batch = classifier._batch(torch.Generator().manual_seed(0), 3, 9, 3, pads=(0, 3, 6))
    with torch.no_grad():
        want = hf(batch["input_ids"], attention_mask=batch["attention_mask"], token_type_ids=batch["token_type_ids"])
        got = _logits(ours, batch)
    torch.testing.assert_close(got, want.logits, atol=1e-5, rtol=0)


# ----------------------------------------------------------------------------------------------
# span decoding
# ----------------------------------------------------------------------------------------------


def _allowed_best(s, e, allowed):
    T = s.shape[0]
    best = int((s[:, None] + e[None, :]).masked_fill(~allowed, float("-inf")).argmax())
    return best // T, best % T


def _lengths(T):
    pos = torch.arange(T)
    return pos[None, :] - pos[:, None] + 1  # (T, T): end - start + 1


def independent_argmax(start_logits, end_logits, context_mask, max_answer_length=30):
    return int(start_logits.argmax()), int(end_logits.argmax())


def end_before_start_allowed(start_logits, end_logits, context_mask, max_answer_length=30):
    inside = context_mask[:, None] & context_mask[None, :]
    return _allowed_best(start_logits, end_logits, inside & (_lengths(len(start_logits)).abs() < max_answer_length))


def no_max_length(start_logits, end_logits, context_mask, max_answer_length=30):
    inside = context_mask[:, None] & context_mask[None, :]
    return _allowed_best(start_logits, end_logits, inside & (_lengths(len(start_logits)) >= 1))


def length_off_by_one(start_logits, end_logits, context_mask, max_answer_length=30):
    n = _lengths(len(start_logits))
    inside = context_mask[:, None] & context_mask[None, :]
    return _allowed_best(start_logits, end_logits, inside & (n >= 1) & (n - 1 <= max_answer_length))


def spans_in_question(start_logits, end_logits, context_mask, max_answer_length=30):
    n = _lengths(len(start_logits))
    return _allowed_best(start_logits, end_logits, (n >= 1) & (n <= max_answer_length))


def best_start_first(start_logits, end_logits, context_mask, max_answer_length=30):
    i = int(start_logits.masked_fill(~context_mask, -1e9).argmax())
    ends = end_logits.clone().masked_fill(~context_mask, -1e9)
    ends[:i] = -1e9
    ends[i + max_answer_length :] = -1e9
    return i, int(ends.argmax())


def returns_one_number(start_logits, end_logits, context_mask, max_answer_length=30):
    return int((start_logits[:, None] + end_logits[None, :]).argmax())


@pytest.mark.parametrize(
    "student, words",
    [
        (independent_argmax, ["argmax", "independently", "jointly"]),
        (end_before_start_allowed, ["end comes before the start", "end >= start"]),
        (no_max_length, ["no limit", "max_answer_length"]),
        (length_off_by_one, ["off by one", "end - start + 1"]),
        (spans_in_question, ["outside the context", "question", "context_mask"]),
        (best_start_first, ["best start first", "together"]),
        (returns_one_number, ["return (start, end)"]),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_span_decoding_diagnoses(student, words):
    assert_diagnosis(run("span_decoding", student), *words)


def test_span_decoding_accepts_other_forms():
    """A loop over pairs, returning a tensor of two positions: the same answers, accepted."""

    def loops(start_logits, end_logits, context_mask, max_answer_length=30):
        best, where = None, None
        for i in range(len(start_logits)):
            for j in range(i, min(i + max_answer_length, len(start_logits))):
                if context_mask[i] and context_mask[j]:
                    score = float(start_logits[i] + end_logits[j])
                    if best is None or score > best:
                        best, where = score, (i, j)
        return torch.tensor(where)

    assert run("span_decoding", loops).passed


def test_span_reference_agrees_with_lab_squad_on_many_windows():
    g = torch.Generator().manual_seed(5)
    for _ in range(200):
        roles = span_decoding._window(
            int(torch.randint(1, 6, (1,), generator=g)), int(torch.randint(1, 30, (1,), generator=g)), 2
        )
        case = dict(
            roles=roles,
            start=torch.randn(len(roles), generator=g) * 4,
            end=torch.randn(len(roles), generator=g) * 4,
            mask=torch.tensor([r == "context" for r in roles]),
            max_len=int(torch.randint(1, 10, (1,), generator=g)),
        )
        i, j = span_decoding.best_span(case["start"], case["end"], case["mask"], case["max_len"])
        assert (i, j) == span_decoding._lab_best(case)[:2]


def test_span_crash_is_one_sentence():
    def crashes(start_logits, end_logits, context_mask, max_answer_length=30):
        return start_logits[context_mask][100], 0

    result = run("span_decoding", crashes)
    assert_diagnosis(result, "raised IndexError", "at line")


# ----------------------------------------------------------------------------------------------
# SQuAD EM / F1
# ----------------------------------------------------------------------------------------------


def _normalize(text, articles=True, punctuation=True):
    text = text.lower()
    if punctuation:
        text = "".join(c for c in text if c not in string.punctuation)
    if articles:
        text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _f1(p, g):
    if not p or not g:
        return float(p == g)
    common = sum((collections.Counter(p) & collections.Counter(g)).values())
    if not common:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def _scores(prediction, golds, normalize=_normalize, f1=_f1, pick=max):
    pred = normalize(prediction)
    return (
        pick([float(pred == normalize(g)) for g in golds]),
        pick([f1(pred.split(), normalize(g).split()) for g in golds]),
    )


def no_normalisation(prediction, gold_answers):
    return _scores(prediction, gold_answers, normalize=lambda t: t)


def articles_kept(prediction, gold_answers):
    return _scores(prediction, gold_answers, normalize=lambda t: _normalize(t, articles=False))


def character_f1(prediction, gold_answers):
    def chars(p, g):
        return _f1([c for c in " ".join(p) if c != " "], [c for c in " ".join(g) if c != " "])

    return _scores(prediction, gold_answers, f1=chars)


def set_f1(prediction, gold_answers):
    def sets(p, g):
        return _f1(sorted(set(p)), sorted(set(g)))

    return _scores(prediction, gold_answers, f1=sets)


def mean_over_golds(prediction, gold_answers):
    return _scores(prediction, gold_answers, pick=lambda v: sum(v) / len(v))


def divides_by_zero(prediction, gold_answers):
    def f1(p, g):
        common = sum((collections.Counter(p) & collections.Counter(g)).values())
        precision, recall = common / len(p), common / len(g)
        return 0.0 if not common else 2 * precision * recall / (precision + recall)

    return _scores(prediction, gold_answers, f1=f1)


def percentages(prediction, gold_answers):
    em, f1 = _scores(prediction, gold_answers)
    return 100 * em, 100 * f1


def returns_a_dict(prediction, gold_answers):
    em, f1 = _scores(prediction, gold_answers)
    return {"em": em, "f1": f1}


@pytest.mark.parametrize(
    "student, words",
    [
        (no_normalisation, ["not normalised", "punctuation", "articles"]),
        (articles_kept, ["articles a, an and the are not removed"]),
        (character_f1, ["shared characters", "words"]),
        (set_f1, ["distinct shared words", "Counter"]),
        (mean_over_golds, ["average over the gold answers", "max"]),
        (divides_by_zero, ["ZeroDivisionError", "empty side", "F1 = 0.0"]),
        (percentages, ["percentages", "[0, 1]"]),
        (returns_a_dict, ["return (em, f1)"]),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_squad_metrics_diagnoses(student, words):
    assert_diagnosis(run("squad_metrics", student), *words)


def test_squad_metrics_accept_a_faithful_rewrite():
    assert run("squad_metrics", lambda p, g: _scores(p, g)).passed


def test_squad_metric_cases_come_from_real_data():
    """Many real SQuAD answers (the dev set when ../shared/data has it, else the bundled sample)."""
    source, cases = squad_metrics._real_metric_cases(400)
    assert source.endswith(("dev-v1.1.json.zip", "qa.json"))
    assert len(cases) >= 4 * 35
    from lab.data import squad_metrics as official

    # the cases are not trivial: both right and wrong answers, partial F1 in between
    f1s = [official.f1(p, list(g)) for p, g in cases]
    assert any(v == 1.0 for v in f1s) and any(v == 0.0 for v in f1s) and any(0 < v < 1 for v in f1s)


def test_squad_solution_equals_lab_official_on_edge_cases():
    from lab.data import squad_metrics as official

    for prediction, golds in squad_metrics._METRIC_EDGE_CASES:
        assert squad_metrics.squad_em_f1(prediction, golds) == (
            official.exact_match(prediction, golds),
            official.f1(prediction, golds),
        )


# ----------------------------------------------------------------------------------------------
# the notebook's demonstrations on the bundled QA model
# ----------------------------------------------------------------------------------------------


def _stub(*args):
    raise NotImplementedError


def test_demonstrations_say_not_implemented_without_loading():
    squad_reader.reader.cache_clear()
    assert span_decoding.show_answers(_stub).startswith("Your best_span is not implemented yet")
    assert squad_metrics.show_scores(_stub).startswith("Your squad_em_f1 is not implemented yet")
    assert squad_reader.reader.cache_info().currsize == 0  # nothing was loaded


def test_demonstrations_on_the_bundled_reader():
    from lab import inference
    from lab.checkpoint import bundled_model
    from lab.data.squad_metrics import evaluate

    if bundled_model("minilm-squad") is None:
        pytest.skip("models/minilm-squad is not there")
    text = span_decoding.show_answers(span_decoding.best_span, count=2)
    rows = [line for line in text.splitlines() if line.strip().startswith("yours:")]
    assert len(rows) == 2
    for row in rows:  # the reference picks the lab's answer
        mine, lab_answer = re.match(r"\s*yours: (.*) \| lab: (.*) \| gold", row).groups()
        assert mine == lab_answer
    crash = span_decoding.show_answers(lambda s, e, m, L: s[100])
    assert "raised IndexError" in crash and "Traceback" not in crash
    # the student's mean scores are computed from the student's function: a wrong one shows different numbers
    good = squad_metrics.show_scores(squad_metrics.squad_em_f1, count=8)
    wrong = squad_metrics.show_scores(no_normalisation, count=8)
    model, tokenizer, questions, _ = squad_reader.reader()
    official = evaluate(
        questions[:8], inference.predict_answers(model, tokenizer, questions[:8], max_seq_length=256, doc_stride=128)
    )
    line = f"EM {official['exact_match']:.1f}  F1 {official['f1']:.1f}"
    assert f"your scores:      {line}" in good and f"lab.data.squad_metrics':      {line}" in good
    assert f"your scores:      {line}" not in wrong
