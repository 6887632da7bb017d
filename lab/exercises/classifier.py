"""Exercise `classifier` (notebook 4): the [CLS] classifier and one fine-tuning step (Section 4.1).

The checker runs the student's head on hidden states it knows (a stand-in encoder), then on the lab's
tiny BERT with the weights of a lab BertForSequenceClassification, then two SGD steps from a model
handed over in eval mode; a difference is traced to the token read, the pooler, the output, the
loss's reduction, a missing step or zero_grad, or training in eval mode.
"""

from __future__ import annotations

import copy
import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

from lab.model import BertForSequenceClassification, BertModel, ModelOutput

from . import core
from .compare import tiny_config
from .core import Fail, call


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
        hidden = encoder.config.hidden_size  # H
        self.bert = encoder
        self.pooler = nn.Linear(hidden, hidden)  # bert.pooler.dense in an HF checkpoint
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden, num_labels)  # the new layer W: (K, H)

    def forward(self, input_ids, token_type_ids, attention_mask):
        """input_ids, token_type_ids, attention_mask: (B, T) -> logits (B, K), raw scores (no softmax).

        The sentence's vector is the pooled [CLS] vector: tanh(pooler(h)), h the encoder's vector at
        position 0; then dropout, then the classifier."""
        hidden = self.bert(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).last_hidden_state
        pooled = torch.tanh(self.pooler(hidden[:, 0]))  # [CLS] is position 0: (B, T, H) -> (B, H)
        return self.classifier(self.dropout(pooled))  # (B, K) raw scores: cross_entropy applies the softmax

    def training_step(self, batch, optimizer):
        """One fine-tuning step. batch: a dict with input_ids, token_type_ids, attention_mask (B, T) and
        labels (B,), the class ids. optimizer: built on this model's parameters.

        The model may arrive in eval mode (after an evaluation). Run the model in training mode, take the
        cross-entropy loss averaged over the batch, back-propagate, update the weights, and leave no
        gradient behind for the next step. Returns the loss as a float."""
        self.train()  # dropout on (the model may come from an evaluation, in eval mode)
        logits = self(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])  # (B, K)
        loss = F.cross_entropy(logits, batch["labels"])  # mean over the batch; takes logits, not probabilities
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()  # otherwise the next backward adds to these gradients
        return loss.item()


class _FixedEncoder(nn.Module):
    """Stands in for BERT's encoder in the head checks: position (b, t) of the batch gets the hidden
    vector table[input_ids[b, t]], so the checker knows every hidden state the head sees."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.config = SimpleNamespace(hidden_size=table.shape[1])
        self.register_buffer("table", table)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, **_):
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
    """The lab's tiny BERT (H 32, 2 layers, 4 heads, 99 ids) with `num_labels` classes."""
    return tiny_config(
        vocab_size=99,
        hidden_size=32,
        num_attention_heads=4,
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


EXERCISE = core.Exercise(
    name="classifier",
    title="The [CLS] classifier and one fine-tuning step",
    group="finetuning",
    checker=check_classifier,
    solution=BertClassifier,
    imports=(
        "import torch\n"
        "import torch.nn.functional as F  # noqa: F401 (F.cross_entropy: you will need it)\n"
        "from torch import nn\n"
    ),
    hint=(
        "In forward, hidden = self.bert(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)"
        ".last_hidden_state is (B, T, H); [CLS] is hidden[:, 0], not a mean over the tokens. Return the logits: "
        "F.cross_entropy(logits, labels) applies log-softmax itself and averages over the batch. In training_step: "
        "self.train() first, then forward, loss, loss.backward(), optimizer.step(), optimizer.zero_grad() (PyTorch "
        "adds each backward's gradients to the ones already there)."
    ),
)
