"""exercises.check_step (notebook 11, BERT by hand): every step of the classroom model's forward pass,
computed here with plain torch operations, matches explore.trace; each usual mistake gets its own
diagnosis and the right values never do; wrong shapes, unknown step names and values that are not
numbers get a clear sentence.

    .venv/bin/python -m pytest tests/test_by_hand.py
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import lab
from lab import exercises, explore
from lab.exercises.by_hand import TOLERANCE

ROOT = Path(__file__).resolve().parent.parent
A_TEXT, B_TEXT = "she opened the [MASK] and went home .", "it was dark outside ."
L0 = "bert.encoder.layer.0"


@pytest.fixture(scope="module")
def classroom():
    torch.manual_seed(0)
    return lab.load(ROOT / "models" / "bert-lab-classroom")


@pytest.fixture(scope="module")
def traced(classroom):
    model, tokenizer = classroom
    return explore.trace(model, tokenizer, A_TEXT, B_TEXT)


def layer_norm(x, W, name, eps=1e-12, correction=0):
    mu, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, correction=correction)
    return W[f"{name}.weight"] * (x - mu) / torch.sqrt(var + eps) + W[f"{name}.bias"]


def linear(x, W, name):
    return x @ W[f"{name}.weight"].T + W[f"{name}.bias"]


def gelu(x):
    return x * 0.5 * (1 + torch.erf(x / math.sqrt(2)))


def softmax(x, dim=-1):
    z = torch.exp(x - x.max(dim, keepdim=True).values)
    return z / z.sum(dim, keepdim=True)


def encoder_layer(W, p, x, A, mine):
    """One post-norm layer by hand, every step written into `mine`; returns its output (T, H)."""
    T, H = x.shape
    for n in ("query", "key", "value"):
        mine[f"{p}.attention.self.{n}"] = linear(x, W, f"{p}.attention.self.{n}")
    q, k, v = (mine[f"{p}.attention.self.{n}"].view(T, A, H // A).transpose(0, 1) for n in ("query", "key", "value"))
    s = mine[f"{p}.attention.self.scores"] = q @ k.transpose(-1, -2) / math.sqrt(H // A)  # (A, T, T)
    s = mine[f"{p}.attention.self.masked_scores"] = s + torch.zeros(T)
    probs = mine[f"{p}.attention.self.probs"] = softmax(s)
    c = mine[f"{p}.attention.self.context"] = probs @ v  # (A, T, d)
    c = mine[f"{p}.attention.self"] = c.transpose(0, 1).reshape(T, H)
    o = mine[f"{p}.attention.output.dense"] = linear(c, W, f"{p}.attention.output.dense")
    r = mine[f"{p}.attention.output.residual"] = x + o
    x1 = mine[f"{p}.attention.output.LayerNorm"] = layer_norm(r, W, f"{p}.attention.output.LayerNorm")
    f = mine[f"{p}.intermediate.dense"] = linear(x1, W, f"{p}.intermediate.dense")
    g = mine[f"{p}.intermediate.activation"] = gelu(f)
    f2 = mine[f"{p}.output.dense"] = linear(g, W, f"{p}.output.dense")
    r2 = mine[f"{p}.output.residual"] = x1 + f2
    return layer_norm(r2, W, f"{p}.output.LayerNorm")


def by_hand(model, trace) -> dict[str, torch.Tensor]:
    """Every step of the trace, computed from the weights with plain operations."""
    W = {k: v.detach() for k, v in model.state_dict().items()}
    ids, types = torch.tensor(trace.input_ids), torch.tensor(trace.token_type_ids)
    e, mine = "bert.embeddings", {}
    mine[f"{e}.word_embeddings"] = W[f"{e}.word_embeddings.weight"][ids]
    mine[f"{e}.token_type_embeddings"] = W[f"{e}.token_type_embeddings.weight"][types]
    mine[f"{e}.position_embeddings"] = W[f"{e}.position_embeddings.weight"][: len(ids)]
    x = mine[f"{e}.sum"] = sum(mine[f"{e}.{n}_embeddings"] for n in ("word", "token_type", "position"))
    x = mine[f"{e}.LayerNorm"] = layer_norm(x, W, f"{e}.LayerNorm")
    for i in range(model.config.num_hidden_layers):
        p = f"bert.encoder.layer.{i}"
        x = mine[f"{p}.output.LayerNorm"] = encoder_layer(W, p, x, model.config.num_attention_heads, mine)
    pooled = mine["bert.pooler.dense"] = linear(x[0], W, "bert.pooler.dense")
    pooled = mine["bert.pooler.activation"] = torch.tanh(pooled)
    m = mine["cls.predictions.transform.dense"] = linear(
        x[trace.predicted_positions], W, "cls.predictions.transform.dense"
    )
    m = mine["cls.predictions.transform.activation"] = gelu(m)
    m = mine["cls.predictions.transform.LayerNorm"] = layer_norm(m, W, "cls.predictions.transform.LayerNorm")
    logits = mine["cls.predictions.decoder"] = m @ W[f"{e}.word_embeddings.weight"].T + W["cls.predictions.bias"]
    mine["cls.predictions.softmax"] = softmax(logits)
    nsp = mine["cls.seq_relationship"] = linear(pooled, W, "cls.seq_relationship")
    mine["cls.seq_relationship.softmax"] = softmax(nsp)
    return mine


@pytest.fixture(scope="module")
def hand(classroom, traced):
    return by_hand(classroom[0], traced)


def test_every_step_by_hand_matches_the_trace(classroom, traced, hand):
    check = exercises.StepChecker(traced, classroom[0])
    assert list(hand) == traced.names()  # the same steps, in the trace's order
    for name, values in hand.items():
        result = check(name, values)
        assert result.passed and result.status == "PASSED", result
        assert result.details["relative_difference"] <= TOLERANCE
        assert "mistake" not in result.details
    assert check.matched == traced.names() and check.missing == []
    assert check.summary().endswith("every step.")
    # without the model too, and from numpy arrays and float64
    assert exercises.check_step(traced, "bert.embeddings.sum", hand["bert.embeddings.sum"].numpy()).passed
    assert exercises.check_step(traced, "cls.predictions.decoder", hand["cls.predictions.decoder"].double()).passed


def test_a_summary_names_the_steps_not_matched_yet(traced, hand):
    check = exercises.StepChecker(traced)
    check("bert.embeddings.word_embeddings", hand["bert.embeddings.word_embeddings"])
    check("bert.embeddings.sum", hand["bert.embeddings.sum"] + 1)
    assert check.matched == ["bert.embeddings.word_embeddings"]
    assert check.summary().startswith(f"1 of the trace's {len(traced.steps)} steps")
    assert "not yet: bert.embeddings.token_type_embeddings" in check.summary()


def W_of(model):
    return {k: v.detach() for k, v in model.state_dict().items()}


def heads(x, A=2):
    T, H = x.shape
    return x.view(T, A, H // A).transpose(0, 1)


# (step, mistake code, the wrong values from the hand-computed steps `h`, the weights `W`, the trace `t`,
# the words the message must hold)
MISTAKES = {
    "forgot the sqrt(d)": (
        f"{L0}.attention.self.scores",
        "no_sqrt_d",
        lambda h, W, t: heads(h[f"{L0}.attention.self.query"]) @ heads(h[f"{L0}.attention.self.key"]).transpose(-1, -2),
        ["√d = 8 times too large"],
    ),
    "scores divided by d": (
        f"{L0}.attention.self.scores",
        "divided_by_d",
        lambda h, W, t: h[f"{L0}.attention.self.scores"] / 8,
        ["divide by d = 64"],
    ),
    "K Q^T": (
        f"{L0}.attention.self.scores",
        "keys_queries_swapped",
        lambda h, W, t: h[f"{L0}.attention.self.scores"].transpose(-1, -2),
        ["row i must be query i"],
    ),
    "heads cut by a reshape": (
        f"{L0}.attention.self.scores",
        "heads_cut_wrongly",
        lambda h, W, t: (
            h[f"{L0}.attention.self.query"].reshape(2, -1, 64)
            @ h[f"{L0}.attention.self.key"].reshape(2, -1, 64).transpose(-1, -2)
            / 8
        ),
        ["x.view(T, A, d).transpose(0, 1)"],
    ),
    "softmax over the queries": (
        f"{L0}.attention.self.probs",
        "softmax_axis",
        lambda h, W, t: h[f"{L0}.attention.self.masked_scores"].softmax(dim=1),
        ["each column", "dim -1"],
    ),
    "softmax of unscaled scores": (
        f"{L0}.attention.self.probs",
        "no_sqrt_d",
        lambda h, W, t: (h[f"{L0}.attention.self.masked_scores"] * 8).softmax(-1),
        ["not divided by √d"],
    ),
    "LayerNorm's eps 1e-5": (
        "bert.embeddings.LayerNorm",
        "layer_norm_eps",
        lambda h, W, t: F.layer_norm(
            h["bert.embeddings.sum"], (128,), W["bert.embeddings.LayerNorm.weight"], W["bert.embeddings.LayerNorm.bias"]
        ),
        ["eps = 1e-05", "not BERT's eps = 1e-12"],
    ),
    "LayerNorm's eps 1e-5 in the masked-LM head": (
        "cls.predictions.transform.LayerNorm",
        "layer_norm_eps",
        lambda h, W, t: layer_norm(
            h["cls.predictions.transform.activation"], W, "cls.predictions.transform.LayerNorm", eps=1e-5
        ),
        ["eps = 1e-05"],
    ),
    "unbiased variance": (
        f"{L0}.attention.output.LayerNorm",
        "unbiased_variance",
        lambda h, W, t: layer_norm(
            h[f"{L0}.attention.output.residual"], W, f"{L0}.attention.output.LayerNorm", correction=1
        ),
        ["H − 1 = 127", "correction=0"],
    ),
    "LayerNorm without gamma and beta": (
        "bert.embeddings.LayerNorm",
        "no_affine",
        lambda h, W, t: F.layer_norm(h["bert.embeddings.sum"], (128,), eps=1e-12),
        ["weight γ and bias β"],
    ),
    "GELU's tanh form": (
        f"{L0}.intermediate.activation",
        "gelu_tanh",
        lambda h, W, t: F.gelu(h[f"{L0}.intermediate.dense"], approximate="tanh"),
        ["tanh approximation", "erf(x/√2)"],
    ),
    "GELU's tanh form in the last layer": (
        "bert.encoder.layer.1.intermediate.activation",
        "gelu_tanh",
        lambda h, W, t: F.gelu(h["bert.encoder.layer.1.intermediate.dense"], approximate="tanh"),
        ["tanh approximation"],
    ),
    "ReLU": (
        f"{L0}.intermediate.activation",
        "relu",
        lambda h, W, t: h[f"{L0}.intermediate.dense"].relu(),
        ["ReLU"],
    ),
    "segments swapped": (
        "bert.embeddings.token_type_embeddings",
        "segments_swapped",
        lambda h, W, t: W["bert.embeddings.token_type_embeddings.weight"][1 - torch.tensor(t.token_type_ids)],
        ["swapped", "segment 0"],
    ),
    "segments swapped in the sum": (
        "bert.embeddings.sum",
        "segments_swapped",
        lambda h, W, t: (
            h["bert.embeddings.word_embeddings"]
            + W["bert.embeddings.token_type_embeddings.weight"][1 - torch.tensor(t.token_type_ids)]
            + h["bert.embeddings.position_embeddings"]
        ),
        ["swapped"],
    ),
    "one segment for all": (
        "bert.embeddings.token_type_embeddings",
        "one_segment",
        lambda h, W, t: W["bert.embeddings.token_type_embeddings.weight"][[0] * len(t.tokens)],
        ["segment A's vector"],
    ),
    "positions from 1": (
        "bert.embeddings.position_embeddings",
        "positions_from_1",
        lambda h, W, t: W["bert.embeddings.position_embeddings.weight"][1 : len(t.tokens) + 1],
        ["start at 1"],
    ),
    "decoder's bias left out": (
        "cls.predictions.decoder",
        "decoder_bias",
        lambda h, W, t: h["cls.predictions.transform.LayerNorm"] @ W["bert.embeddings.word_embeddings.weight"].T,
        ["cls.predictions.bias"],
    ),
    "W not transposed": (
        f"{L0}.attention.self.query",
        "weight_not_transposed",
        lambda h, W, t: (
            h["bert.embeddings.LayerNorm"] @ W[f"{L0}.attention.self.query.weight"]
            + W[f"{L0}.attention.self.query.bias"]
        ),
        ["x @ W.T + b"],
    ),
    "a Linear's bias left out": (
        f"{L0}.output.dense",
        "no_bias",
        lambda h, W, t: h[f"{L0}.intermediate.activation"] @ W[f"{L0}.output.dense.weight"].T,
        [f"{L0}.output.dense.bias is missing"],
    ),
    "residual before the LayerNorm": (
        f"{L0}.output.residual",
        "residual_before_norm",
        lambda h, W, t: h[f"{L0}.attention.output.residual"] + h[f"{L0}.output.dense"],
        ["before its LayerNorm"],
    ),
    "LayerNorm left out": (
        f"{L0}.attention.output.LayerNorm",
        "other_step",
        lambda h, W, t: h[f"{L0}.attention.output.residual"],
        ["the step before", "missing"],
    ),
    "heads concatenated in the wrong order": (
        f"{L0}.attention.self",
        "concat_order",
        lambda h, W, t: h[f"{L0}.attention.self.context"].reshape(len(t.tokens), 128),
        ["C.transpose(0, 1).reshape(T, H)"],
    ),
    "IsNext and NotNext swapped": (
        "cls.seq_relationship.softmax",
        "nsp_swapped",
        lambda h, W, t: h["cls.seq_relationship.softmax"].flip(0),
        ["index 0 is IsNext"],
    ),
    "NSP from [CLS] without the pooler": (
        "cls.seq_relationship",
        "nsp_without_pooler",
        lambda h, W, t: linear(h["bert.encoder.layer.1.output.LayerNorm"][0], W, "cls.seq_relationship"),
        ["pooled [CLS]"],
    ),
    "mask on every key": (
        f"{L0}.attention.self.masked_scores",
        "constant",
        lambda h, W, t: h[f"{L0}.attention.self.scores"] - 10000.0,
        ["off by the same number", "-1e+04", "every key"],
    ),
    "a constant": (
        f"{L0}.attention.output.dense",
        "constant",
        lambda h, W, t: h[f"{L0}.attention.output.dense"] + 0.5,
        ["off by the same number, +0.5"],
    ),
    "scaled": (
        f"{L0}.attention.output.dense",
        "scaled",
        lambda h, W, t: h[f"{L0}.attention.output.dense"] * 1.5,
        ["1.5 times"],
    ),
    "square matrix transposed": (
        "bert.encoder.layer.1.attention.self.probs",
        "transposed",
        lambda h, W, t: h["bert.encoder.layer.1.attention.self.probs"].transpose(-1, -2),
        ["transposed", "row i must be query i"],
    ),
}


@pytest.mark.parametrize("label", list(MISTAKES))
def test_each_mistake_gets_its_diagnosis_and_the_right_values_do_not(label, classroom, traced, hand):
    name, code, wrong, words = MISTAKES[label]
    model = classroom[0]
    result = exercises.check_step(traced, name, wrong(hand, W_of(model), traced), model=model)
    assert not result.passed and result.status == "NOT YET RIGHT", result
    assert result.details["mistake"] == code, result
    for word in words:
        assert word in result.message, (word, result.message)
    assert result.details["step"] == name and result.details["formula"] == traced.step(name).formula
    right = exercises.check_step(traced, name, hand[name], model=model)
    assert right.passed and "mistake" not in right.details, right


def test_the_right_answer_is_never_taken_for_a_mistake(classroom, traced, hand):
    """Near the right values (float32 noise well inside the tolerance) nothing is diagnosed."""
    g = torch.Generator().manual_seed(0)
    for name, values in hand.items():
        noisy = values * (1 + 1e-7 * torch.randn(values.shape, generator=g))
        assert exercises.check_step(traced, name, noisy, model=classroom[0]).passed, name


def test_without_the_model_the_trace_alone_diagnoses_what_it_can(traced, hand, classroom):
    W = W_of(classroom[0])
    # LayerNorm's γ and β are fitted from the trace's rows: the eps is still found
    wrong = F.layer_norm(
        hand["bert.embeddings.sum"], (128,), W["bert.embeddings.LayerNorm.weight"], W["bert.embeddings.LayerNorm.bias"]
    )
    assert exercises.check_step(traced, "bert.embeddings.LayerNorm", wrong).details["mistake"] == "layer_norm_eps"
    # the segment rows are in the trace
    swapped = W["bert.embeddings.token_type_embeddings.weight"][1 - torch.tensor(traced.token_type_ids)]
    result = exercises.check_step(traced, "bert.embeddings.token_type_embeddings", swapped)
    assert result.details["mistake"] == "segments_swapped"
    # the decoder's bias is not: no false diagnosis, the formula instead
    no_bias = hand["cls.predictions.transform.LayerNorm"] @ W["bert.embeddings.word_embeddings.weight"].T
    result = exercises.check_step(traced, "cls.predictions.decoder", no_bias)
    assert not result.passed and result.details["mistake"] == "unknown", result
    assert "none of the usual mistakes" in result.message and "W_tok" in result.message


# (step, the wrong shape made from the right values, mistake code, words the message must hold)
SHAPES = {
    "a batch axis kept": (
        "bert.embeddings.sum",
        lambda v, t: v[None],
        "shape_extra_axis",
        ["[1, 16, 128]", "take [0]"],
    ),
    "transposed": ("bert.embeddings.LayerNorm", lambda v, t: v.T, "transposed", ["[128, 16]", "transposed"]),
    "heads not split": (
        f"{L0}.attention.self.context",
        lambda v, t: v.transpose(0, 1).reshape(16, 128),
        "shape_heads",
        ["(A, T, d) = (2, 16, 64)", "x.view(T, A, d).transpose(0, 1)"],
    ),
    "heads still apart": (f"{L0}.attention.self", lambda v, t: heads(v), "shape_heads", ["side by side"]),
    "one matrix for all heads": (
        f"{L0}.attention.self.scores",
        lambda v, t: v[0],
        "shape_heads",
        ["one matrix for all heads"],
    ),
    "every token in the masked-LM head": (
        "cls.predictions.transform.dense",
        lambda v, t: v.expand(16, 128),
        "shape_positions",
        ["only the predicted positions", "[4]"],
    ),
    "every token in the pooler": ("bert.pooler.dense", lambda v, t: v.expand(16, 128), "shape_positions", ["[CLS]"]),
    "something else": ("bert.embeddings.sum", lambda v, t: v[:3], "shape", ["[3, 128]", "[16, 128]", "E = E_tok"]),
}


@pytest.mark.parametrize("label", list(SHAPES))
def test_a_wrong_shape_gets_a_clear_message(label, traced, hand):
    name, reshape, code, words = SHAPES[label]
    result = exercises.check_step(traced, name, reshape(hand[name], traced))
    assert not result.passed and result.details["mistake"] == code, result
    assert result.details["step_shape"] == list(traced.step(name).shape)
    assert result.message.startswith(f"Your {name} has shape ")
    for word in words:
        assert word in result.message, (word, result.message)
    if code != "shape" and label != "one matrix for all heads" and "every token" not in label:
        assert "Mended so, your values match the trace." in result.message


def test_an_unknown_step_name_gets_a_clear_message(traced, hand):
    result = exercises.check_step(traced, "bert.encoder.layer.0.attention.scores", hand["bert.embeddings.sum"])
    assert not result.passed and result.name == "bert.encoder.layer.0.attention.scores"
    assert "There is no step 'bert.encoder.layer.0.attention.scores' in this trace" in result.message
    assert "Did you mean 'bert.encoder.layer.0.attention.self.scores'" in result.message
    assert "trace.names()" in result.message
    far = exercises.check_step(traced, "softmax please", hand["bert.embeddings.sum"])
    assert "Did you mean" not in far.message and f"Its {len(traced.steps)} steps" in far.message
    assert "should be a string" in exercises.check_step(traced, 3, hand["bert.embeddings.sum"]).message


def test_values_that_are_not_numbers_get_a_clear_message(traced):
    assert "is None. Did the cell assign it?" in exercises.check_step(traced, "bert.embeddings.sum", None).message
    text = exercises.check_step(traced, "bert.embeddings.sum", "E").message
    assert "is a str, not numbers" in text and "[16, 128]" in text
    nan = torch.full((2, 16, 16), float("nan"))
    result = exercises.check_step(traced, f"{L0}.attention.self.probs", nan)
    assert "holds NaN or inf" in result.message and "subtract each row's largest value" in result.message


def test_a_single_text_has_one_segment(classroom):
    model, tokenizer = classroom
    t = explore.trace(model, tokenizer, A_TEXT)
    mine = by_hand(model, t)
    check = exercises.StepChecker(t, model)
    assert all(check(name, values).passed for name, values in mine.items()), check.summary()
    table = W_of(model)["bert.embeddings.token_type_embeddings.weight"]
    result = check("bert.embeddings.token_type_embeddings", table[[1] * len(t.tokens)])
    assert not result.passed and result.details["mistake"] == "segments_swapped", result
