"""lab.studies.language_models: chunks, labels per task, the objective's contract, training under a
direction, next-token accuracy with the future hidden or visible, the cloze test."""

import pytest
import torch

import lab
from lab.data.batch import Batch
from lab.data.instances import SpecialIds
from lab.studies import directions
from lab.studies import language_models as lm
from tests.conftest import tiny_config

TEXT = [
    "the cat sat on the mat .",
    "the dog ran in the park .",
    "a bird sang in the tree .",
    "the sun was warm and the sky was blue .",
]


@pytest.fixture(scope="module")
def tok():
    return lab.Tokenizer.train(iter(TEXT * 20), vocab_size=80, show_progress=False)


def test_lm_labels(tok):
    special = SpecialIds.from_vocab(tok.vocab)
    ids = torch.arange(10, 20).reshape(1, 10)
    g = torch.Generator().manual_seed(0)
    x, y = lm.lm_labels(ids, "next_token", special, g)
    assert torch.equal(x, ids) and y[0, :-1].tolist() == list(range(11, 20)) and y[0, -1] == -100
    x, y = lm.lm_labels(ids, "previous_token", special, g)
    assert y[0, 0] == -100 and y[0, 1:].tolist() == list(range(10, 19))
    x, y = lm.lm_labels(ids.repeat(4, 1), "mlm", special, g)
    assert ((y != -100).sum(1) == 2).all()  # round(15% of 10) per row
    assert torch.equal(y[y != -100], ids.repeat(4, 1)[y != -100])
    with pytest.raises(ValueError, match="task"):
        lm.lm_labels(ids, "sideways", special, g)


def test_token_chunks(tok):
    chunks = lm.token_chunks(tok, [TEXT, TEXT[:1]], length=5)
    n = sum(len(tok.tokenize(s)) for s in TEXT)
    assert chunks.shape == (n // 5 + 1, 5)  # the second document fills one chunk (7 tokens)
    assert chunks[0].tolist() == tok.encode(" ".join(TEXT), add_special_tokens=False).input_ids[:5]
    with pytest.raises(ValueError, match="no document"):
        lm.token_chunks(tok, [["a"]], length=5)


def test_objective_batches_and_loss_contract(tok):
    """Batches are lab.data.batch.Batch; loss() logs detached 0-dim tensors (no host sync), evaluate() floats."""
    special = SpecialIds.from_vocab(tok.vocab)
    chunks = lm.token_chunks(tok, [TEXT * 10], length=12)
    obj = lm.LanguageModelObjective(chunks, chunks[:4], special, "next_token", "left_to_right", batch_size=4)
    batch = obj.train_batch(3)
    assert isinstance(batch, Batch) and batch.input_ids.shape == (4, 12)
    assert torch.equal(batch.input_ids, obj.train_batch(3).input_ids)  # a pure function of the step
    assert batch.num_tokens == 4 * 12
    model = lab.BertForMaskedLM(
        tiny_config(vocab_size=tok.vocab_size, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    )
    loss, logs = obj.loss(model, batch)
    assert loss.requires_grad and loss.dim() == 0 and set(logs) == {"loss", "acc"}
    assert all(torch.is_tensor(v) and v.dim() == 0 and not v.requires_grad for v in logs.values())
    # the loss is the cross-entropy at the labelled positions of a left-to-right encoder
    h = directions.encode(model, batch.input_ids, "left_to_right").last_hidden_state
    picked = batch.mlm_labels != -100
    ref = torch.nn.functional.cross_entropy(model.cls.predictions(h[picked]), batch.mlm_labels[picked])
    assert torch.allclose(loss, ref, atol=1e-5)
    result = obj.evaluate(model.eval())
    assert set(result) == {"loss", "accuracy"} and all(isinstance(v, float) for v in result.values())
    with pytest.raises(ValueError, match="direction"):
        lm.LanguageModelObjective(chunks, chunks, special, "mlm", "sideways")


def _train(tok, chunks, held, task, direction, out, steps=40):
    return lm.train_language_model(
        tok,
        chunks,
        held,
        task,
        out,
        steps=steps,
        direction=direction,
        batch_size=8,
        lr=3e-3,
        threads=1,
        log=lambda *_: None,
    )


@pytest.fixture(scope="module")
def runs(tok, tmp_path_factory):
    chunks = lm.token_chunks(tok, [TEXT * 10] * 4, length=12)
    root = tmp_path_factory.mktemp("lm")
    made = {
        task: _train(tok, chunks, chunks[:8], task, None, root / task)
        for task in ("next_token", "previous_token", "mlm")
    }
    return chunks, made


def test_a_bidirectional_next_token_model_sees_itself(tok, tmp_path):
    # Random tokens: the next one cannot be guessed, only copied from the input.
    g = torch.Generator().manual_seed(0)
    train, held = (
        torch.randint(5, tok.vocab_size, (64, 12), generator=g),
        torch.randint(5, tok.vocab_size, (8, 12), generator=g),
    )
    cheat = _train(tok, train, held, "next_token", "bidirectional", tmp_path / "cheat", steps=80)
    honest = _train(tok, train, held, "next_token", None, tmp_path / "honest", steps=80)
    assert honest.direction == "left_to_right" and cheat.direction == "bidirectional"
    assert cheat.metrics["accuracy"] > 0.9 and honest.metrics["accuracy"] < 0.3  # held-out, as trained
    visible = lm.next_token_accuracy(cheat.model, held, "bidirectional", future="visible")
    hidden = lm.next_token_accuracy(cheat.model, held, "bidirectional", future="hidden")
    assert visible > 0.9 and hidden < 0.3
    # for a left-to-right model the future is hidden anyway: both ways agree
    a = lm.next_token_accuracy(honest.model, held, "left_to_right", future="hidden")
    assert a == lm.next_token_accuracy(honest.model, held, "left_to_right", future="visible") < 0.3
    assert (cheat.run_dir / "metrics.jsonl").is_file() and cheat.steps == 80


def test_hidden_future_equals_feeding_each_prefix(runs):
    chunks, made = runs
    model = made["mlm"].model  # any model: run as bidirectional, prefix by prefix
    ids = chunks[:2]
    hits = n = 0
    for row in ids:
        for t in range(len(row) - 1):
            h = model(row[None, : t + 1]).mlm_logits[0, -1]
            hits += int(h.argmax() == row[t + 1])
            n += 1
    assert lm.next_token_accuracy(model, ids, "bidirectional", future="hidden") == pytest.approx(hits / n)


def test_cloze(runs, tok):
    chunks, made = runs
    result = lm.cloze(
        {"bert": made["mlm"], "gpt": made["next_token"], "elmo": (made["next_token"], made["previous_token"])},
        tok,
        chunks,
        n=10,
        margin=3,
        show=2,
    )
    assert result.blanks == 10 and set(result.accuracy) == {"bert", "gpt", "elmo"}
    assert all(0 <= v <= 1 for v in result.accuracy.values())
    assert all(0 < v <= 1 for v in result.probability.values())
    ex = result.examples[0]
    assert {"left", "answer", "right", "bert"} <= set(ex) and len(ex["bert"]) == 3
    blanks = lm.cloze_blanks(tok, chunks, n=5, margin=3)
    for row, p in blanks:
        assert 3 <= p < chunks.shape[1] - 3
        assert tok.convert_ids_to_tokens(int(chunks[row, p])).isalpha()


def test_accuracy_interval_and_paired_difference():
    """The cloze comparison's uncertainty: Wilson intervals and the paired difference of two models."""
    from lab.studies.language_models import accuracy_interval, paired_difference

    low, high = accuracy_interval([1] * 50 + [0] * 50)
    assert low == pytest.approx(0.4038, abs=1e-3) and high == pytest.approx(0.5962, abs=1e-3)
    low, high = accuracy_interval([1] * 55 + [0] * 201)  # the docstring's 55 of 256
    assert 0.165 < low < 0.175 and 0.265 < high < 0.275
    assert accuracy_interval([]) == (0.0, 1.0)
    a, b = [1, 1, 0, 0] * 50, [1, 0, 0, 0] * 50  # a is right on 50 more of 200 items
    diff, low, high = paired_difference(a, b)
    assert diff == pytest.approx(0.25) and low < 0.25 < high and low > 0.15
    diff, low, high = paired_difference(a, a)
    assert (diff, low, high) == (0.0, 0.0, 0.0)
