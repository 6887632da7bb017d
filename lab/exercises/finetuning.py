"""Build it yourself, fine-tuning (the paper's Section 4): the [CLS] classifier with one training
step, the answer span of extractive QA, and SQuAD's EM/F1.

    from lab import exercises
    exercises.check("classifier", BertClassifier)      # head + training_step, on the lab's tiny BERT
    exercises.check("span_decoding", best_span)        # against lab.data.squad.decode_spans
    exercises.check("squad_metrics", squad_em_f1)      # against lab.data.squad's official EM/F1

Each checker compares the student's code with the lab's own implementation on random inputs and
on traps built for one typical mistake each (a window whose best start lies after its best end,
a [CLS] with a huge logit, a prediction repeating a word, ...). When they differ, it computes what
each typical mistake would have given on the same inputs and names the one that matches: the
diagnosis says which mistake, not only that the numbers differ.

The notebook's demonstrations run the student's functions on a real reader, the bundled
minilm-squad, over SQuAD questions it never trained on:

    print(show_answers(best_span))     # its answers beside lab.data.squad.decode_spans's and the gold ones
    print(show_scores(squad_em_f1))    # its mean EM/F1 beside lab.data.squad.evaluate's
"""

from __future__ import annotations

import collections
import copy
import functools
import math
import re
import string
from pathlib import Path
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

from lab.files import REPOSITORY

from . import core
from .core import Fail, call

# ----------------------------------------------------------------------------------------------
# 1. The [CLS] classifier and one fine-tuning step (Section 4.1)
# ----------------------------------------------------------------------------------------------


class BertClassifier(nn.Module):
    """BERT for sentence classification: the pre-trained encoder plus one new layer (Section 4.1)."""

    def __init__(self, encoder, num_labels, dropout=0.1):
        super().__init__()
        hidden = encoder.config.hidden_size  # H
        self.bert = encoder
        self.pooler = nn.Linear(hidden, hidden)  # bert.pooler.dense in an HF checkpoint
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden, num_labels)  # the new layer W: (K, H)

    def forward(self, input_ids, token_type_ids, attention_mask):
        hidden = self.bert(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).last_hidden_state
        pooled = torch.tanh(self.pooler(hidden[:, 0]))  # [CLS] is position 0: (B, T, H) -> (B, H)
        return self.classifier(self.dropout(pooled))  # (B, K) raw scores: cross_entropy applies the softmax

    def training_step(self, batch, optimizer):
        self.train()  # dropout on (the model may come from an evaluation, in eval mode)
        logits = self(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])  # (B, K)
        loss = F.cross_entropy(logits, batch["labels"])  # mean over the batch; takes logits, not probabilities
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()  # otherwise the next backward adds to these gradients
        return loss.item()


CLASSIFIER_STUB = '''import torch
import torch.nn.functional as F  # noqa: F401 (F.cross_entropy: you will need it)
from torch import nn


class BertClassifier(nn.Module):
    """BERT for sentence classification (the paper's Section 4.1): a pre-trained encoder plus one new layer.

    encoder: the pre-trained BERT, without a pooler. encoder(input_ids, token_type_ids=..., attention_mask=...)
        returns an output whose .last_hidden_state is (B, T, H); encoder.config.hidden_size is H.
    num_labels: K, the number of classes.
    dropout: the dropout probability applied just before the new layer (BERT: 0.1).

    Create these attributes (the names of a Hugging Face checkpoint, so that weights can be copied in):
        self.bert        the encoder
        self.pooler      nn.Linear(H, H): the pooler's dense layer (bert.pooler.dense in a checkpoint)
        self.dropout     nn.Dropout(dropout)
        self.classifier  nn.Linear(H, K): the new layer (classifier.weight, classifier.bias)
    """

    def __init__(self, encoder, num_labels, dropout=0.1):
        super().__init__()
        raise NotImplementedError

    def forward(self, input_ids, token_type_ids, attention_mask):
        """input_ids, token_type_ids, attention_mask: (B, T) -> logits (B, K), raw scores (no softmax).

        The sentence's vector is the pooled [CLS] vector: tanh(pooler(h)), h the encoder's vector at
        position 0; then dropout, then the classifier."""
        raise NotImplementedError

    def training_step(self, batch, optimizer):
        """One fine-tuning step. batch: a dict with input_ids, token_type_ids, attention_mask (B, T) and
        labels (B,), the class ids. optimizer: built on this model's parameters.

        The model may arrive in eval mode (after an evaluation). Run the model in training mode, take the
        cross-entropy loss averaged over the batch, back-propagate, update the weights, and leave no
        gradient behind for the next step. Returns the loss as a float."""
        raise NotImplementedError'''

CLASSIFIER_HINT = (
    "In forward, hidden = self.bert(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)"
    ".last_hidden_state is (B, T, H); [CLS] is hidden[:, 0], not a mean over the tokens. Return the logits: "
    "F.cross_entropy(logits, labels) applies log-softmax itself and averages over the batch. In training_step: "
    "self.train() first, then forward, loss, loss.backward(), optimizer.step(), optimizer.zero_grad() (PyTorch "
    "adds each backward's gradients to the ones already there)."
)


class _FixedEncoder(nn.Module):
    """Stands in for BERT's encoder in the head checks: position (b, t) of the batch gets the hidden
    vector table[input_ids[b, t]], so the checker knows every hidden state the head sees."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.config = SimpleNamespace(hidden_size=table.shape[1])
        self.register_buffer("table", table)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, **_):
        from lab.model import ModelOutput

        return ModelOutput(last_hidden_state=self.table[input_ids])  # (B, T, H)


def _head_cases(generator: torch.Generator) -> list[dict]:
    """(name, input_ids, attention_mask) of the head checks: random ids into a table of B*T vectors,
    padding at the end of some rows, one token only, a batch of one, odd sizes."""
    cases = []
    for name, b, t, pads in (
        ("4 sentences of 7 tokens, padding at the end of 3 of them", 4, 7, (0, 2, 4, 5)),
        ("a batch of one sentence of 5 tokens", 1, 5, (0,)),
        ("one sentence of a single token ([CLS] alone)", 1, 1, (0,)),
        ("3 sentences of 2 tokens", 3, 2, (0, 0, 1)),
    ):
        ids = torch.randperm(b * t, generator=generator).view(b, t)  # each position its own hidden vector
        mask = torch.ones(b, t, dtype=torch.long)
        for row, n in enumerate(pads):
            if n:
                mask[row, t - n :] = 0
        cases.append(dict(name=name, input_ids=ids, token_type_ids=torch.zeros_like(ids), attention_mask=mask))
    return cases


def _param_names(model: nn.Module) -> dict[str, tuple[int, ...]]:
    return {n: tuple(p.shape) for n, p in model.state_dict().items()}  # parameters and buffers


def _check_layout(model, reference: nn.Module, what: str) -> None:
    """The student's module has exactly the reference's parameter names and shapes."""
    if not isinstance(model, nn.Module):
        raise Fail(f"{what} gave a {type(model).__name__}, not an nn.Module: subclass nn.Module.")
    mine, want = _param_names(model), _param_names(reference)
    missing = [n for n in want if n not in mine]
    extra = [n for n in mine if n not in want]
    if missing or extra:
        head = sorted({n.split(".")[0] for n in want if not n.startswith("bert.")})
        msg = f"The parameters of {what} are not laid out as a Hugging Face checkpoint's. "

        def shown(names):  # the encoder's own names once, as "bert.*"
            return ", ".join(dict.fromkeys("bert.*" if n.startswith("bert.") else n for n in names))

        if missing:
            msg += f"Missing: {shown(missing)}. "
        if extra:
            msg += f"Unexpected: {shown(extra)}. "
        msg += (
            f"Keep the encoder as self.bert and create exactly the new layers {', '.join(head)} "
            "(the docstring names them), so that weights can be copied in by name."
        )
        raise Fail(msg, missing=missing, unexpected=extra)
    wrong = {n: (mine[n], s) for n, s in want.items() if mine[n] != s}
    if wrong:
        n, (got, expected) = next(iter(wrong.items()))
        raise Fail(
            f"{n} has shape {list(got)}, expected {list(expected)} (nn.Linear(in, out) stores its weight as "
            "(out, in)): the pooler maps H to H, the classifier H to K.",
            shapes=wrong,
        )


def _logits_of(model, case, what) -> torch.Tensor:
    out = call(model, case["input_ids"], case["token_type_ids"], case["attention_mask"], what=what)
    if not torch.is_tensor(out):
        raise Fail(f"{what} returned a {type(out).__name__}; return the logits, a (B, K) tensor.")
    return out


def _pooling_candidates(reference: BertClassifier, case) -> dict[str, torch.Tensor]:
    """What a head would give for each typical choice of the sentence vector and of the output."""
    hidden = reference.bert(case["input_ids"]).last_hidden_state  # (B, T, H)
    mask = case["attention_mask"].bool()
    n_real = mask.sum(1)  # (B,)
    vectors = {
        "cls": hidden[:, 0],
        "mean": hidden.mean(1),
        "masked mean": (hidden * mask[..., None]).sum(1) / n_real[:, None],
        "last": hidden[:, -1],
        "last real": hidden[torch.arange(hidden.shape[0]), n_real - 1],
        "max": hidden.max(1).values,
    }
    transforms = {
        "tanh(pooler)": lambda v: torch.tanh(reference.pooler(v)),
        "pooler without tanh": reference.pooler,
        "no pooler": lambda v: v,
    }
    outputs = {"logits": lambda z: z, "softmax": lambda z: z.softmax(-1), "log_softmax": lambda z: z.log_softmax(-1)}
    found = {}
    for vn, v in vectors.items():
        for tn, t in transforms.items():
            z = reference.classifier(t(v))
            for on, o in outputs.items():
                found[(vn, tn, on)] = o(z)
    return found


_POOLING_CAUSES = {
    "mean": "you averaged the vectors of all tokens (padding included); BERT's sentence vector is the "
    "[CLS] token's, position 0: hidden[:, 0]",
    "masked mean": "you averaged the vectors of the real tokens; BERT's sentence vector is the [CLS] token's, "
    "position 0: hidden[:, 0]",
    "last": "you took the last position's vector (hidden[:, -1], a [PAD] in padded rows); BERT's sentence "
    "vector is the first token's, [CLS]: hidden[:, 0]",
    "last real": "you took the last real token's vector ([SEP]); BERT's sentence vector is the first token's, "
    "[CLS]: hidden[:, 0]",
    "max": "you took a max over the tokens; BERT's sentence vector is the [CLS] token's, position 0: hidden[:, 0]",
}
_TRANSFORM_CAUSES = {
    "pooler without tanh": "the pooler's tanh is missing: pooled = tanh(self.pooler(h_cls))",
    "no pooler": "the pooler is skipped: pooled = tanh(self.pooler(h_cls)), then dropout and the classifier",
}
_OUTPUT_CAUSES = {
    "softmax": "you return probabilities (a softmax); return the raw logits: cross_entropy applies "
    "log-softmax itself, and a softmax before it squashes the gradients",
    "log_softmax": "you return log-probabilities; return the raw logits (cross_entropy applies log-softmax itself)",
}


def _diagnose_head(got: torch.Tensor, reference: BertClassifier, case) -> str:
    for (vn, tn, on), value in _pooling_candidates(reference, case).items():
        if (vn, tn, on) != ("cls", "tanh(pooler)", "logits") and torch.allclose(got, value, atol=1e-5):
            causes = [_POOLING_CAUSES[vn]] if vn != "cls" else []
            causes += [_TRANSFORM_CAUSES[tn]] if tn != "tanh(pooler)" else []
            causes += [_OUTPUT_CAUSES[on]] if on != "logits" else []
            return "; ".join(causes)
    rows = got.sum(-1)
    if torch.allclose(rows, torch.ones_like(rows), atol=1e-4) and bool((got >= 0).all()):
        return _OUTPUT_CAUSES["softmax"]
    return (
        "it matches none of the usual mistakes (another token than [CLS], no tanh, a softmax): compare your "
        "forward with the docstring step by step"
    )


def _check_head(student, generator) -> None:
    """The head alone, on known hidden states: the sentence vector, the pooler, the output, dropout."""
    cases = _head_cases(generator)
    H, K = 12, 3  # odd sizes: 12 features, 3 labels
    table = torch.randn(64, H, generator=generator)
    what = "your BertClassifier(encoder, num_labels=3, dropout=0.1)"
    model = call(student, _FixedEncoder(table), K, 0.1, what=what)
    reference = BertClassifier(_FixedEncoder(table), K, 0.1)
    _check_layout(model, reference, what)
    reference.load_state_dict(model.state_dict())  # the same weights in both
    model.eval()
    reference.eval()
    fwd = "your BertClassifier's forward(input_ids, token_type_ids, attention_mask)"
    for case in cases:
        B, T = case["input_ids"].shape
        got = _logits_of(model, case, fwd)
        if tuple(got.shape) == (B, T, K):
            raise Fail(
                f"On {case['name']} your forward returned logits of shape {list(got.shape)}, one row per token: "
                f"classify the sentence from its [CLS] vector (position 0), giving (B, K) = {[B, K]}.",
                case=case["name"],
            )
        if tuple(got.shape) != (B, K):
            raise Fail(
                f"On {case['name']} your forward returned shape {list(got.shape)}, expected (B, K) = {[B, K]}.",
                case=case["name"],
            )
        with torch.no_grad():
            want = reference(case["input_ids"], case["token_type_ids"], case["attention_mask"])
        got = got.detach().float()
        if not torch.allclose(got, want, atol=1e-5):
            again = _logits_of(model, case, fwd).detach().float()
            if not torch.allclose(got, again):
                raise Fail(
                    f"In eval mode your forward gave different logits on two calls with the same input "
                    f"({case['name']}): "
                    "dropout is still on in eval mode. Use the module self.dropout = nn.Dropout(p) (it is off "
                    "after model.eval()), not F.dropout(x, p) with its default training=True.",
                    case=case["name"],
                )
            cause = _diagnose_head(got, reference, case)
            raise Fail(
                f"On {case['name']} (eval mode, the same weights as the reference) your logits differ from the "
                f"reference's by up to {float((got - want).abs().max()):.3g}: {cause}.",
                case=case["name"],
                attention_mask=case["attention_mask"].tolist(),
                yours=got[0].tolist(),
                expected=want[0].tolist(),
            )
    # dropout: on in training mode (two calls differ), where it belongs (eval mode already matched)
    noisy = call(student, _FixedEncoder(table), K, 0.5, what="your BertClassifier(encoder, num_labels=3, dropout=0.5)")
    noisy.train()
    case = cases[0]
    first, second = (_logits_of(noisy, case, fwd).detach() for _ in range(2))
    if torch.equal(first, second):
        raise Fail(
            "With dropout=0.5 in training mode your forward gave the same logits twice: no dropout is applied. "
            "Apply self.dropout to the pooled vector before the classifier (BERT fine-tunes with dropout 0.1).",
        )


def _tiny_config(num_labels: int, dropout: float = 0.0):
    from lab.config import BertConfig

    return BertConfig(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        id2label={i: f"LABEL_{i}" for i in range(num_labels)},
    )


def _batch(generator, B: int, T: int, K: int, pads=()) -> dict:
    """A padded batch for the tiny config: [CLS]=2 ... [SEP]=3 then [PAD]=0; two segments."""
    ids = torch.randint(5, 99, (B, T), generator=generator)
    ids[:, 0] = 2
    mask = torch.ones(B, T, dtype=torch.long)
    types = torch.zeros(B, T, dtype=torch.long)
    for row in range(B):
        n = T - (pads[row] if row < len(pads) else 0)
        ids[row, n - 1] = 3
        ids[row, n:] = 0
        mask[row, n:] = 0
        types[row, n // 2 : n] = 1
    labels = torch.randint(0, K, (B,), generator=generator)
    return dict(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels)


def _check_lab_parity(student, generator) -> None:
    """The student's class on the lab's tiny BERT, with the weights of a lab BertForSequenceClassification:
    the same logits (so the encoder is called with the attention mask and the segments)."""
    from lab.model import BertForSequenceClassification, BertModel

    K = 3
    cfg = _tiny_config(K)
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
    lab_model = BertForSequenceClassification(cfg).eval()
    model = call(student, BertModel(cfg, add_pooling_layer=False), K, 0.1, what="your BertClassifier(BertModel, 3)")
    state = {k: v for k, v in lab_model.state_dict().items() if not k.startswith("bert.pooler.")}
    state["pooler.weight"], state["pooler.bias"] = lab_model.bert.pooler.dense.weight, lab_model.bert.pooler.dense.bias
    model.load_state_dict(state)
    model.eval()
    batch = _batch(generator, 3, 9, K, pads=(0, 3, 6))
    inputs = {k: batch[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
    what = "your BertClassifier's forward on the lab's tiny BERT"
    got = _logits_of(model, inputs, what).detach().float()
    with torch.no_grad():
        want = lab_model(**inputs).logits
        no_mask = lab_model(inputs["input_ids"], token_type_ids=inputs["token_type_ids"]).logits
        no_types = lab_model(inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits
    if torch.allclose(got, want, atol=1e-5):
        return
    if torch.allclose(got, no_mask, atol=1e-5):
        cause = "you did not pass attention_mask to the encoder, so [CLS] attends to the [PAD] tokens"
    elif torch.allclose(got, no_types, atol=1e-5):
        cause = "you did not pass token_type_ids to the encoder, so every token is read as sentence A"
    else:
        cause = "call the encoder as self.bert(input_ids, token_type_ids=..., attention_mask=...)"
    raise Fail(
        "With the weights of the lab's BertForSequenceClassification on its tiny BERT (3 padded sentences), "
        f"your logits differ from lab.BertForSequenceClassification's by up to {float((got - want).abs().max()):.3g}: "
        f"{cause}.",
        yours=got.tolist(),
        expected=want.tolist(),
    )


def _reference_step(model: BertClassifier, batch, optimizer, mistake: str | None = None) -> float:
    """The reference step, or the step with one typical mistake (to tell which one a student made)."""
    model.train(mistake != "eval")
    logits = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
    if mistake == "softmax":
        loss = F.cross_entropy(logits.softmax(-1), batch["labels"])
    elif mistake == "sum":
        loss = F.cross_entropy(logits, batch["labels"], reduction="sum")
    else:
        loss = F.cross_entropy(logits, batch["labels"])
    loss.backward()
    optimizer.step()
    if mistake != "accumulate":
        optimizer.zero_grad()
    return loss.item()


def _weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def _max_diff(a: dict, b: dict) -> float:
    return max(float((a[n] - b[n]).abs().max()) for n in a)


def _as_loss(value, what: str) -> float:
    if torch.is_tensor(value) and value.numel() == 1:
        return float(value.detach())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise Fail(
        f"{what} returned {type(value).__name__ if value is not None else 'None'}; return the batch's loss as a "
        "float (loss.item())."
    )


def _check_step(student, generator, lr: float = 0.1) -> None:
    """Two training steps with plain SGD (each update is -lr * gradient), compared with the reference
    and with the reference's typical mistakes; the model arrives in eval mode."""
    from lab.model import BertModel

    K = 3
    cfg = _tiny_config(K)  # no dropout anywhere: the updates are deterministic
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
    model = call(student, BertModel(cfg, add_pooling_layer=False), K, 0.0, what="your BertClassifier(BertModel, 3)")
    start = copy.deepcopy(model.state_dict())
    batches = [_batch(generator, 5, 8, K, pads=(0, 2, 5)), _batch(generator, 4, 6, K, pads=(1,))]

    # the reference and each typical mistake, from the same starting weights: losses and weights per step
    runs = {}
    for mistake in (None, "softmax", "sum", "accumulate"):
        ref = BertClassifier(BertModel(cfg, add_pooling_layer=False), K, 0.0)
        ref.load_state_dict(start)
        opt = torch.optim.SGD(ref.parameters(), lr=lr)
        runs[mistake] = [(_reference_step(ref, b, opt, mistake), _weights(ref)) for b in batches]

    modes: list[tuple[str, bool]] = []  # (module, training?) at every forward during the student's step
    hooks = [
        m.register_forward_pre_hook(lambda mod, args, name=name: modes.append((name or "the model", mod.training)))
        for name, m in model.named_modules()
    ]
    model.eval()  # as after an evaluation
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    what = "your training_step(batch, optimizer)"
    try:
        before = _weights(model)
        for k, batch in enumerate(batches):
            modes.clear()
            loss = _as_loss(call(model.training_step, batch, optimizer, what=what), what)
            after = _weights(model)
            step = ("first", "second")[k]
            _diagnose_step(k, step, loss, before, after, runs, model, lr, batch["labels"].shape[0])
            if not modes:
                raise Fail(
                    f"Your {step} training step never called the model (self(...)): run the forward pass inside "
                    "training_step, on the batch it is given."
                )
            off = [name for name, training in modes if not training]
            if off:
                raise Fail(
                    f"During your {step} training step the model ran in eval mode ({off[0]} had training=False), "
                    "so dropout was off while fine-tuning. The model arrives in eval mode after an evaluation: "
                    "call self.train() at the start of training_step (and never self.eval() inside it).",
                    step=step,
                )
            before = after
    finally:
        for h in hooks:
            h.remove()


def _diagnose_step(k, step, loss, before, after, runs, model, lr, B) -> None:
    """Compare step k's loss and weights with the reference's; name the mistake that matches."""
    want_loss, want_weights = runs[None][k]
    if not math.isclose(loss, want_loss, rel_tol=1e-4, abs_tol=1e-5):
        if math.isclose(loss, runs["sum"][k][0], rel_tol=1e-4):
            cause = (
                f"it is the sum over the {B} sentences, not the mean: use F.cross_entropy's default "
                "reduction='mean' (a sum makes the step size grow with the batch)"
            )
        elif math.isclose(loss, runs["softmax"][k][0], rel_tol=1e-4):
            cause = (
                "it is the cross-entropy of softmax probabilities: F.cross_entropy takes the raw logits and "
                "applies log-softmax itself; a softmax before it squashes the loss and its gradients"
            )
        elif k == 1 and math.isclose(loss, runs["accumulate"][k][0], rel_tol=1e-4):
            cause = (
                "it is the loss of a model that the first step's gradients updated twice: gradients add up "
                "until cleared, so call optimizer.zero_grad() every step"
            )
        else:
            cause = "it matches none of the usual mistakes (a sum, a softmax first): compare with the docstring"
        raise Fail(
            f"Your {step} training step returned the loss {loss:.5g}, expected {want_loss:.5g} (the mean "
            f"cross-entropy over the batch of {B}): {cause}.",
            step=step,
            yours=loss,
            expected=want_loss,
        )
    if _max_diff(after, want_weights) <= 1e-5:
        return
    if _max_diff(after, before) == 0:
        if all(p.grad is None or not bool(p.grad.abs().sum()) for p in model.parameters()):
            cause = (
                "no weight changed and no gradient is left: either loss.backward() is missing or "
                "optimizer.zero_grad() runs between backward() and step() (the order: backward, step, zero_grad)"
            )
        else:
            cause = "no weight changed although gradients were computed: call optimizer.step() after loss.backward()"
    elif k == 1 and _max_diff(after, runs["accumulate"][k][1]) <= 1e-5:
        cause = (
            "the second update used the first batch's gradients plus the second's: PyTorch adds each backward's "
            "gradients to those already stored, so call optimizer.zero_grad() every step"
        )
    elif _max_diff(after, runs["sum"][k][1]) <= 1e-5:
        cause = f"the update is {B} times too large, the gradient of a summed loss: average over the batch"
    else:
        cause = (
            "the update is not one step of the optimizer you were given on this batch's mean loss: use the "
            "optimizer passed in (do not build another), one backward and one step per call"
        )
    raise Fail(
        f"After your {step} training step (plain SGD, lr={lr}) the weights differ from the reference's by up to "
        f"{_max_diff(after, want_weights):.3g}: {cause}.",
        step=step,
    )


def check_classifier(student, seed: int = 0):
    """Checks a BertClassifier class (the [CLS] head and its training_step).

    1. The head on known hidden states (a stand-in encoder), eval mode, the student's weights copied
       into the reference: the logits of 4 batches (padding, a single token, a batch of one, 2 tokens);
       a difference is traced to the token read (mean, last, max instead of [CLS]), the pooler (no
       tanh, skipped) or the output (softmax, log-softmax). Dropout: off in eval mode, on in training.
    2. On the lab's tiny BERT with the weights of a lab BertForSequenceClassification: the same logits
       as lab.BertForSequenceClassification (the attention mask and the segments reach the encoder).
    3. Two training steps with SGD from the same weights as the reference, the model handed over in
       eval mode: the returned loss (mean cross-entropy: not a sum, not of a softmax), the weights
       after each step (step taken, gradients cleared between steps) and training mode during the
       forward passes.
    Options: seed (the random inputs).
    """
    generator = torch.Generator().manual_seed(seed)
    state = torch.random.get_rng_state()
    try:
        _check_head(student, generator)
        _check_lab_parity(student, generator)
        _check_step(student, generator)
    finally:
        torch.random.set_rng_state(state)
    return (
        "Your BertClassifier reads the pooled [CLS] vector, gives the same logits as the lab's "
        "BertForSequenceClassification, applies dropout only in training, and its training_step matches two "
        "SGD steps of the reference (mean cross-entropy on logits, gradients cleared, training mode)."
    )


core.register(
    core.Exercise(
        name="classifier",
        title="The [CLS] classifier and one fine-tuning step",
        group="finetuning",
        symbol="BertClassifier",
        checker=check_classifier,
        solution=BertClassifier,
        hint=CLASSIFIER_HINT,
        stub=CLASSIFIER_STUB,
        imports="import torch\nimport torch.nn.functional as F\nfrom torch import nn\n",
    )
)


# ----------------------------------------------------------------------------------------------
# 2. The answer span (Section 4.2)
# ----------------------------------------------------------------------------------------------


def best_span(start_logits, end_logits, context_mask, max_answer_length=30):
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


SPAN_STUB = '''import torch


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
    raise NotImplementedError'''

SPAN_HINT = (
    "Score every pair at once: scores = start_logits[:, None] + end_logits[None, :] is (T, T), entry [i, j] "
    "the span from i to j. Set the pairs that are not allowed to -inf (j < i, j - i + 1 > max_answer_length, "
    "i or j outside the context), then take the argmax of the whole grid: the start and the end are chosen "
    "together, not each on its own."
)


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


def _pos(roles: list[str], where: tuple[str, int]) -> int:
    """Position of the k-th token with a role: ("context", 2) -> the third context token."""
    role, k = where
    return [i for i, r in enumerate(roles) if r == role][k]


def _lab_best(case) -> tuple[int, int, float]:
    """The best span by lab.data.squad.decode_spans, on a window whose token i covers context characters
    2i..2i+1 (every start and end considered: n_best = T)."""
    from lab.data import squad

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
    raise Fail(f"{what} returned {core._short(out, 80)}; return (start, end), two ints (positions in the window).")


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


core.register(
    core.Exercise(
        name="span_decoding",
        title="The answer span: best start and end together",
        group="finetuning",
        symbol="best_span",
        checker=check_span_decoding,
        solution=best_span,
        hint=SPAN_HINT,
        stub=SPAN_STUB,
        imports="import torch\n",
    )
)


# ----------------------------------------------------------------------------------------------
# 3. SQuAD's EM and F1 (the paper's Table 2; Rajpurkar et al. 2016)
# ----------------------------------------------------------------------------------------------


def squad_em_f1(prediction, gold_answers):
    def normalize(text):
        text = text.lower()
        text = "".join(ch for ch in text if ch not in set(string.punctuation))  # "the cat!" -> "the cat"
        text = re.sub(r"\b(a|an|the)\b", " ", text)  # whole words only: "theatre" keeps its "the"
        return " ".join(text.split())  # collapse runs of whitespace

    def f1(pred_tokens, gold_tokens):
        if not pred_tokens or not gold_tokens:  # "" is right only about ""
            return float(pred_tokens == gold_tokens)
        # shared tokens, each counted as often as it occurs in both: [a, b, b] & [b, b, c] -> 2
        common = sum((collections.Counter(pred_tokens) & collections.Counter(gold_tokens)).values())
        if common == 0:
            return 0.0
        precision, recall = common / len(pred_tokens), common / len(gold_tokens)
        return 2 * precision * recall / (precision + recall)

    pred = normalize(prediction)
    golds = [normalize(g) for g in gold_answers]
    em = max(float(pred == g) for g in golds)  # the best-matching gold answer counts
    return em, max(f1(pred.split(), g.split()) for g in golds)


METRICS_STUB = '''import collections  # noqa: F401 (collections.Counter counts tokens)
import re  # noqa: F401 (re.sub removes the articles)
import string  # noqa: F401 (string.punctuation)


def squad_em_f1(prediction, gold_answers):
    """SQuAD v1.1's two scores for one question (Rajpurkar et al. 2016; the BERT paper's Table 2).

    prediction: the predicted answer, a str.
    gold_answers: the annotators' answers, a list of 1 to 5 str.

    Both sides are normalised first: lower case, ASCII punctuation (string.punctuation) removed, the
    articles a, an and the removed (whole words only), runs of whitespace collapsed to one space.
    Returns (em, f1), two floats in [0, 1]:
      em: 1.0 if the normalised prediction equals a normalised gold answer, else 0.0;
      f1: the best, over the gold answers, of the F1 of the two answers' words (split on whitespace):
          precision = shared words / predicted words, recall = shared words / gold words, where a word
          shared k times is counted k times (the min of its two counts). When either side has no words,
          f1 is 1.0 if both have none, else 0.0.
    """
    raise NotImplementedError'''

METRICS_HINT = (
    "Write normalize(text) first: text.lower(), drop every ch in string.punctuation, "
    "re.sub(r'\\b(a|an|the)\\b', ' ', text), ' '.join(text.split()). For F1, "
    "collections.Counter(pred_words) & collections.Counter(gold_words) keeps each shared word with its "
    "smaller count; sum its values. Score the prediction against every gold answer and keep the max (not the "
    "mean); guard the empty cases before dividing."
)


_ARTICLE_WORDS = re.compile(r"\b(a|an|the)\b")


def _variant_normalize(text: str, how: str) -> str:
    if how == "none":
        return text
    text = text.lower()
    if how != "no punctuation removal":
        text = "".join(ch for ch in text if ch not in string.punctuation)
    if how != "no article removal":
        text = _ARTICLE_WORDS.sub(" ", text)
    return " ".join(text.split())


def _variant_f1(pred: str, gold: str, overlap: str, empty: str) -> float:
    p, g = (
        (list(pred) if overlap == "characters" else pred.split()),
        (list(gold) if overlap == "characters" else gold.split()),
    )
    if overlap == "characters":
        p, g = [c for c in p if c != " "], [c for c in g if c != " "]
    if not p or not g:
        if empty == "zero":
            return 0.0
        return float(p == g)
    if overlap == "set":
        common = len(set(p) & set(g))
        np_, ng = len(set(p)), len(set(g))
    elif overlap == "set over words":
        common = len(set(p) & set(g))
        np_, ng = len(p), len(g)
    else:  # bag (the official one) or characters (a bag of characters)
        common = sum((collections.Counter(p) & collections.Counter(g)).values())
        np_, ng = len(p), len(g)
    if common == 0:
        return 0.0
    precision, recall = common / np_, common / ng
    return 2 * precision * recall / (precision + recall)


def _variant_scores(prediction: str, golds: list[str], mistake: str | None = None) -> tuple[float, float]:
    """(em, f1) as computed with one typical mistake (None: the official way)."""
    how = {
        "no normalisation": "none",
        "no article removal": "no article removal",
        "no punctuation removal": "no punctuation removal",
    }.get(mistake, "official")

    def norm(text):
        return " ".join(text.lower().split()) if mistake == "lower case only" else _variant_normalize(text, how)

    overlap = {"character overlap": "characters", "set overlap": "set", "set overlap, word counts": "set over words"}
    overlap = overlap.get(mistake, "bag")
    empty = "zero" if mistake == "v1.1 empty rule" else "v2"
    pred = norm(prediction)
    ems = [float(pred == norm(g)) for g in golds]
    f1s = [_variant_f1(pred, norm(g), overlap, empty) for g in golds]
    if mistake == "mean over golds":
        return sum(ems) / len(ems), sum(f1s) / len(f1s)
    if mistake == "first gold only":
        return ems[0], f1s[0]
    if mistake == "percent":
        return 100 * max(ems), 100 * max(f1s)
    return max(ems), max(f1s)


_METRIC_MISTAKES = {
    "percent": "your scores are percentages; return fractions in [0, 1] (100 is for reporting a whole set)",
    "no normalisation": "the answers are not normalised: lower-case them, drop punctuation and the articles "
    "a/an/the, collapse whitespace, before comparing (the official script does, so 'The Denver Broncos.' "
    "matches 'Denver Broncos')",
    "lower case only": "the answers are only lower-cased: also drop punctuation and the articles a/an/the, and "
    "collapse whitespace",
    "no article removal": "the articles a, an and the are not removed: re.sub(r'\\b(a|an|the)\\b', ' ', text) "
    "after dropping punctuation",
    "no punctuation removal": "punctuation is not removed: drop every character in string.punctuation",
    "character overlap": "your F1 counts shared characters; SQuAD's F1 counts shared words (split on whitespace)",
    "set overlap": "your F1 counts distinct shared words (sets); SQuAD counts a word shared k times k times: "
    "collections.Counter(pred) & collections.Counter(gold)",
    "set overlap, word counts": "your F1 counts distinct shared words (a set intersection) over all the words; "
    "SQuAD counts a word shared k times k times: collections.Counter(pred) & collections.Counter(gold)",
    "mean over golds": "you average over the gold answers; SQuAD takes the best (max) over them: any annotator's "
    "answer counts as right",
    "first gold only": "you score against the first gold answer only; SQuAD takes the best (max) over all of them",
    "v1.1 empty rule": "an answer that normalises to nothing ('the', '!') scores F1 0 against a gold answer that "
    "also normalises to nothing; two empty answers agree: F1 = 1.0 when both are empty (SQuAD 2.0's rule, as "
    "lab.data.squad)",
}

# hand-made cases: each one separates the official scores from at least one typical mistake
_METRIC_EDGE_CASES = [
    ("The Denver Broncos.", ["Denver Broncos"]),
    ("an apple a day", ["apple day"]),
    ("Theatre of the Absurd", ["theatre absurd"]),
    ("new york new york", ["new york city"]),
    ("a b b", ["b b c"]),
    ("b b c c", ["b c d"]),
    ("Paris", ["London", "Paris", "the city of Paris"]),
    ("the city of Paris", ["Paris", "city of Paris in France"]),
    ("1,000", ["1000"]),
    ("it  was\tnot   fine", ["It was not fine!"]),
    ("", ["Denver Broncos"]),
    ("Denver Broncos", [""]),
    ("!!!", ["the"]),
    ("The", ["a", "an"]),
    ("tea", ["eat"]),
    ("well-known", ["well known"]),
]


@functools.lru_cache(maxsize=1)
def _real_metric_cases(limit: int = 400) -> tuple[str, tuple[tuple[str, tuple[str, ...]], ...]]:
    """(source, cases) from SQuAD v1.1 dev (shared data), or notebooks/data/qa.json without it: for every
    k-th question, predictions made from its answers and context as a reader model would give them
    (an annotator's answer, the answer with words of context around it, its first half)."""
    from lab.data import squad
    from lab.data.datasets import find_data

    repository = REPOSITORY
    path = find_data("squad/dev-v1.1.json.zip", repository / "notebooks" / "data" / "qa.json")
    examples = squad.load_squad(path)
    step = max(1, len(examples) // limit)
    cases = []
    for ex in examples[::step][:limit]:
        golds = tuple(a["text"] for a in ex.answers)
        first = ex.answers[0]
        a, b = first["answer_start"], first["answer_start"] + len(first["text"])
        left = ex.context[:a].split()[-2:]  # two words before the answer
        right = ex.context[b:].split()[:1]  # one word after
        words = first["text"].split()
        cases.append((golds[-1], golds))  # the last annotator's answer, scored against all
        cases.append((" ".join(left + [first["text"]] + right), golds))  # too long
        cases.append((" ".join(words[: max(1, len(words) // 2)]), golds))  # too short
        cases.append((first["text"].upper(), golds[1:] or golds))  # other annotators only
    return str(path), tuple(cases)


def check_squad_metrics(student, limit: int = 400):
    """Checks squad_em_f1(prediction, gold_answers) -> (em, f1) against lab.data.squad's official EM/F1
    (lab.data.squad.exact_match, lab.data.squad.f1) on 16 hand-made cases (articles, punctuation, whitespace,
    repeated words, several golds, empty answers) and on 4 predictions for each of `limit` questions
    of SQuAD v1.1 dev (../shared/data; notebooks/data/qa.json without it): an annotator's answer, the
    answer with context words around it, its first half, the upper-cased answer against the other
    annotators. A difference is traced to the mistake that reproduces every score the student gave:
    percentages, no or partial normalisation, character or set overlap, mean or first gold instead of
    the max, the empty-answer rule.
    Options: limit (questions read from SQuAD; fewer is faster).
    """
    from lab.data import squad

    source, real = _real_metric_cases(limit)
    cases = [(p, list(g)) for p, g in _METRIC_EDGE_CASES] + [(p, list(g)) for p, g in real]
    what = "your squad_em_f1(prediction, gold_answers)"
    results = []
    for prediction, golds in cases:
        try:
            out = call(student, prediction, list(golds), what=what)
        except Fail as f:
            if "ZeroDivisionError" in f.message:
                empty = not squad.normalize_answer(prediction).split() or not any(
                    squad.normalize_answer(g).split() for g in golds
                )
                if empty:
                    raise Fail(
                        f"{f.message} The prediction {prediction!r} against {golds!r} has an empty side after "
                        "normalising, so precision or recall divides by zero: return F1 = 0.0 when either side has "
                        "no words (1.0 when both have none) before dividing.",
                        prediction=prediction,
                        gold_answers=golds,
                    ) from None
            raise
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise Fail(f"Your squad_em_f1 returned {core._short(out, 80)}; return (em, f1), two floats.")
        try:
            em, f1 = (float(v) for v in out)
        except (TypeError, ValueError):
            raise Fail(f"Your squad_em_f1 returned {core._short(out, 80)}; return (em, f1), two floats.") from None
        results.append((em, f1))
    wrong = []
    for (prediction, golds), (em, f1) in zip(cases, results):
        want = (squad.exact_match(prediction, golds), squad.f1(prediction, golds))
        if not (math.isclose(em, want[0], abs_tol=1e-6) and math.isclose(f1, want[1], abs_tol=1e-6)):
            wrong.append((prediction, golds, (em, f1), want))
    if not wrong:
        return (
            f"Your squad_em_f1 gives the official EM and F1 (lab.data.squad's) on {len(_METRIC_EDGE_CASES)} hand-made "
            f"cases and {len(real)} predictions for {_questions_of(source)}.",
            {"cases": len(cases), "data": source},
        )

    def explains(mistake):
        return all(
            all(math.isclose(a, b, abs_tol=1e-6) for a, b in zip(_variant_scores(p, g, mistake), r))
            for (p, g), r in zip(cases, results)
        )

    def explains_wrong(mistake):  # at least every case the student got wrong
        return all(
            all(math.isclose(a, b, abs_tol=1e-6) for a, b in zip(_variant_scores(p, g, mistake), r))
            for p, g, r, _ in wrong
        )

    matches = [m for m in _METRIC_MISTAKES if explains(m)] or [m for m in _METRIC_MISTAKES if explains_wrong(m)]
    prediction, golds, got, want = wrong[0]
    part = "EM and F1" if got[0] != want[0] and got[1] != want[1] else ("EM" if got[0] != want[0] else "F1")
    if matches:
        cause = _METRIC_MISTAKES[matches[0]]
    elif part == "EM":
        cause = "only EM differs: compare the normalised prediction with each normalised gold answer"
    else:
        cause = "it matches none of the usual mistakes: compare your steps with the docstring"
    raise Fail(
        f"{len(wrong)} of {len(cases)} scores differ from the official ones. First: {prediction!r} against "
        f"{golds!r} gives you em={got[0]:.3g}, f1={got[1]:.3g}; official em={want[0]:.3g}, f1={want[1]:.3g} "
        f"(normalised: {squad.normalize_answer(prediction)!r} vs "
        f"{[squad.normalize_answer(g) for g in golds]!r}): {cause}.",
        prediction=prediction,
        gold_answers=golds,
        yours=got,
        expected=want,
        mistake=matches[0] if matches else "not one of the usual ones",
    )


core.register(
    core.Exercise(
        name="squad_metrics",
        title="SQuAD's exact match and F1",
        group="finetuning",
        symbol="squad_em_f1",
        checker=check_squad_metrics,
        solution=squad_em_f1,
        hint=METRICS_HINT,
        stub=METRICS_STUB,
        imports="import collections\nimport re\nimport string\n",
    )
)


# ----------------------------------------------------------------------------------------------
# Demonstrations: the student's functions on a real reader (the bundled minilm-squad)
# ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _reader(name: str = "minilm-squad"):
    """(model, tokenizer, held-out questions, source): a bundled QA model and SQuAD questions it
    did not train on (the last 8 articles of v1.1 dev; the bundled sample without the real data)."""
    import lab
    from lab.checkpoint import bundled_model
    from lab.data import squad
    from lab.data.datasets import find_data

    folder = bundled_model(name)
    if folder is None:
        raise FileNotFoundError(f"the bundled model models/{name} is not there")
    model, tokenizer = lab.load(folder)
    repository = REPOSITORY
    path = find_data("squad/dev-v1.1.json.zip", repository / "notebooks" / "data" / "qa.json")
    examples = squad.load_squad(path)
    held_out = squad.split_by_article(examples, 40)[1] if path.name.startswith("dev-v1.1") else examples
    return model.eval(), tokenizer, held_out, path.name


def _questions_of(source: str, held_out: bool = False) -> str:
    """How the questions read from `source` are described in the messages."""
    name = Path(source).name
    if not name.startswith("dev-v1.1"):
        return f"the lab's sample questions in SQuAD's format ({name}; the real SQuAD is not installed)"
    if held_out:
        return f"the SQuAD v1.1 dev questions of the last 8 articles, which the model never trained on ({name})"
    return f"SQuAD v1.1 dev questions ({name})"


def _demo_call(student, *args, what: str):
    """The student's result, or the sentence to print instead (not implemented, an exception)."""
    try:
        return call(student, *args, what=what), None
    except core.NotImplementedYet:
        return (
            None,
            f"{what[0].upper()}{what[1:]} is not implemented yet: fill in its cell above, run it, then run this "
            "cell again.",
        )
    except Fail as f:
        return None, f.message


def show_answers(best_span, count: int = 5, max_answer_length: int = 30, model: str = "minilm-squad") -> str:
    """Your best_span as the reader of a real QA model: for `count` SQuAD questions it never trained on
    (whose paragraph fits one 256-token window), the bundled model's start/end logits go through your
    best_span and through lab.data.squad.decode_spans; the text of both answers beside the annotators'."""
    from lab.data import squad

    tiny = (torch.zeros(4), torch.zeros(4), torch.tensor([False, True, True, False]), max_answer_length)
    _, problem = _demo_call(best_span, *tiny, what="your best_span")  # before loading anything
    if problem:
        return problem
    qa_model, tokenizer, questions, source = _reader(model)
    lines = [f"{model} reading {_questions_of(source, held_out=True)}; your answer | the lab's | gold"]
    shown = 0
    for ex in questions:
        features = squad.make_features([ex], tokenizer, max_seq_length=256, doc_stride=128, training=False)
        if len(features) != 1:  # the paragraph needs several windows: keep the demonstration to one
            continue
        f = features[0]
        starts, ends = squad.window_logits(qa_model, tokenizer, features)
        start, end = torch.tensor(starts[0]), torch.tensor(ends[0])  # (T,)
        mask = torch.tensor([o is not None for o in f.offsets])  # (T,) the context's tokens
        out, problem = _demo_call(best_span, start, end, mask, max_answer_length, what="your best_span")
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


def show_scores(squad_em_f1, count: int = 40, model: str = "minilm-squad") -> str:
    """Your squad_em_f1 scoring a real model: the bundled model answers `count` SQuAD questions it never
    trained on (lab.data.squad.predict); your mean EM and F1 beside lab.data.squad.evaluate's, and a few answers
    that are not exactly right but share words with a gold answer (F1's partial credit)."""
    from lab.data import squad

    _, problem = _demo_call(squad_em_f1, "a cat", ["the cat"], what="your squad_em_f1")  # before loading anything
    if problem:
        return problem
    qa_model, tokenizer, questions, source = _reader(model)
    questions = questions[:count]
    predictions = squad.predict(qa_model, tokenizer, questions, max_seq_length=256, doc_stride=128)
    scores = []
    for ex in questions:
        out, problem = _demo_call(
            squad_em_f1, predictions[ex.id], [a["text"] for a in ex.answers], what="your squad_em_f1"
        )
        if problem:
            return problem
        try:
            scores.append(tuple(float(v) for v in out))
        except (TypeError, ValueError):
            return f"Your squad_em_f1 returned {core._short(out, 80)}; return (em, f1), two floats."
    official = squad.evaluate(questions, predictions)
    em = 100 * sum(s[0] for s in scores) / len(scores)
    f1 = 100 * sum(s[1] for s in scores) / len(scores)
    lines = [
        f"{model} answering {len(questions)} of {_questions_of(source, held_out=True)}:",
        f"  your scores:      EM {em:.1f}  F1 {f1:.1f}",
        f"  lab.data.squad's:      EM {official['exact_match']:.1f}  F1 {official['f1']:.1f}",
        "Partial credit (not an exact match, some words shared):",
    ]
    partial = [(ex, s) for ex, s in zip(questions, scores) if s[0] == 0 and s[1] > 0][:3]
    for ex, (_, f) in partial:
        golds = sorted({a["text"] for a in ex.answers})
        lines.append(f"  predicted {predictions[ex.id]!r}, gold {golds!r}: your F1 {f:.2f}")
    if not partial:
        lines.append("  (none among these questions)")
    return "\n".join(lines)
