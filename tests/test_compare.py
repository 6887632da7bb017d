"""lab.compare: attention directions, language-model objectives, cloze, FLOP counts, data helpers."""
import pytest
import torch

import lab
from lab import compare
from lab.instances import SpecialIds
from tests.conftest import tiny_config

TEXT = ["the cat sat on the mat .", "the dog ran in the park .", "a bird sang in the tree .",
        "the sun was warm and the sky was blue ."]


@pytest.fixture(scope="module")
def tok():
    return lab.Tokenizer.train(iter(TEXT * 20), vocab_size=80, show_progress=False)


@pytest.fixture(scope="module")
def mlm(tok):
    torch.manual_seed(0)
    return lab.BertForMaskedLM(tiny_config(vocab_size=tok.vocab_size, hidden_dropout_prob=0.0,
                                           attention_probs_dropout_prob=0.0)).eval()


def test_visibility_masks():
    assert compare.visibility_mask(3, "bidirectional").all()
    l2r = compare.visibility_mask(3, "left_to_right")
    assert l2r.tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert torch.equal(compare.visibility_mask(3, "right_to_left"), l2r.T)
    with pytest.raises(ValueError, match="direction"):
        compare.visibility_mask(3, "sideways")


def test_encode_bidirectional_is_the_models_own_forward(mlm):
    ids = torch.randint(5, mlm.config.vocab_size, (2, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    ours = compare.encode(mlm, ids, "bidirectional", attention_mask=mask, output_attentions=True)
    ref = mlm(ids, attention_mask=mask, output_attentions=True)
    assert torch.allclose(ours.last_hidden_state, ref.last_hidden_state, atol=1e-6)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(ours.attentions, ref.attentions))


def test_left_to_right_is_causal_and_equals_running_each_prefix(mlm):
    ids = torch.randint(5, mlm.config.vocab_size, (1, 8))
    out = compare.encode(mlm, ids, "left_to_right", output_attentions=True)
    for a in out.attentions:                         # no weight on the future
        assert torch.all(a[0].triu(diagonal=1) == 0)
    for t in range(1, 9):                            # position t-1 only depends on the prefix
        prefix = mlm(ids[:, :t]).last_hidden_state[0, -1]
        assert torch.allclose(out.last_hidden_state[0, t - 1], prefix, atol=1e-4)
    # right-to-left mirrors it: changing the first token changes no other position's output
    other = ids.clone()
    other[0, 0] = 5 if int(ids[0, 0]) != 5 else 6
    a = compare.encode(mlm, ids, "right_to_left").last_hidden_state
    b = compare.encode(mlm, other, "right_to_left").last_hidden_state
    assert torch.allclose(a[0, 1:], b[0, 1:]) and not torch.allclose(a[0, 0], b[0, 0])


def test_influence_is_zero_exactly_where_a_position_cannot_see(mlm):
    ids = torch.randint(5, mlm.config.vocab_size, (6,))
    l2r = compare.influence(mlm, ids, "left_to_right")
    seen = compare.visibility_mask(6, "left_to_right")
    assert torch.all(l2r[~seen] == 0) and torch.all(l2r[seen] > 0)
    bi = compare.influence(mlm, ids, "bidirectional")
    assert torch.all(bi > 0) and torch.allclose(bi.sum(1), torch.ones(6))
    r2l = compare.influence(mlm, ids, "right_to_left")
    assert torch.all(r2l[~seen.T] == 0) and torch.all(r2l[seen.T] > 0)


def test_lm_labels(tok):
    special = SpecialIds.from_vocab(tok.vocab)
    ids = torch.arange(10, 20).reshape(1, 10)
    g = torch.Generator().manual_seed(0)
    x, y = compare.lm_labels(ids, "next_token", special, g)
    assert torch.equal(x, ids) and y[0, :-1].tolist() == list(range(11, 20)) and y[0, -1] == -100
    x, y = compare.lm_labels(ids, "previous_token", special, g)
    assert y[0, 0] == -100 and y[0, 1:].tolist() == list(range(10, 19))
    x, y = compare.lm_labels(ids.repeat(4, 1), "mlm", special, g)
    assert ((y != -100).sum(1) == 2).all()           # round(15% of 10) per row
    assert torch.equal(y[y != -100], ids.repeat(4, 1)[y != -100])
    with pytest.raises(ValueError, match="task"):
        compare.lm_labels(ids, "sideways", special, g)


def test_token_chunks(tok):
    chunks = compare.token_chunks(tok, [TEXT, TEXT[:1]], length=5)
    n = sum(len(tok.tokenize(s)) for s in TEXT)
    assert chunks.shape == (n // 5 + 1, 5)           # the second document fills one chunk (7 tokens)
    assert chunks[0].tolist() == tok.encode(" ".join(TEXT), add_special_tokens=False).input_ids[:5]
    with pytest.raises(ValueError, match="no document"):
        compare.token_chunks(tok, [["a"]], length=5)


def _train(tok, chunks, held, task, direction, out, steps=40):
    return compare.train_language_model(tok, chunks, held, task, out, steps=steps, direction=direction,
                                        batch_size=8, lr=3e-3, threads=1, log=lambda *_: None)


@pytest.fixture(scope="module")
def runs(tok, tmp_path_factory):
    chunks = compare.token_chunks(tok, [TEXT * 10] * 4, length=12)
    root = tmp_path_factory.mktemp("lm")
    made = {task: _train(tok, chunks, chunks[:8], task, None, root / task)
            for task in ("next_token", "previous_token", "mlm")}
    return chunks, made


def test_a_bidirectional_next_token_model_sees_itself(tok, tmp_path):
    # Random tokens: the next one cannot be guessed, only copied from the input.
    g = torch.Generator().manual_seed(0)
    train, held = torch.randint(5, tok.vocab_size, (64, 12), generator=g), torch.randint(5, tok.vocab_size, (8, 12), generator=g)
    cheat = _train(tok, train, held, "next_token", "bidirectional", tmp_path / "cheat", steps=80)
    honest = _train(tok, train, held, "next_token", None, tmp_path / "honest", steps=80)
    assert honest.direction == "left_to_right" and cheat.direction == "bidirectional"
    assert cheat.metrics["accuracy"] > 0.9 and honest.metrics["accuracy"] < 0.3   # held-out, as trained
    visible = compare.next_token_accuracy(cheat.model, held, "bidirectional", future="visible")
    hidden = compare.next_token_accuracy(cheat.model, held, "bidirectional", future="hidden")
    assert visible > 0.9 and hidden < 0.3
    # for a left-to-right model the future is hidden anyway: both ways agree
    a = compare.next_token_accuracy(honest.model, held, "left_to_right", future="hidden")
    assert a == compare.next_token_accuracy(honest.model, held, "left_to_right", future="visible") < 0.3
    assert (cheat.run_dir / "metrics.jsonl").is_file() and cheat.steps == 80


def test_hidden_future_equals_feeding_each_prefix(runs):
    chunks, made = runs
    model = made["mlm"].model                 # any model: run as bidirectional, prefix by prefix
    ids = chunks[:2]
    hits = n = 0
    for row in ids:
        for t in range(len(row) - 1):
            h = model(row[None, :t + 1]).mlm_logits[0, -1]
            hits += int(h.argmax() == row[t + 1])
            n += 1
    assert compare.next_token_accuracy(model, ids, "bidirectional", future="hidden") == pytest.approx(hits / n)


def test_cloze(runs, tok):
    chunks, made = runs
    result = compare.cloze({"bert": made["mlm"], "gpt": made["next_token"],
                            "elmo": (made["next_token"], made["previous_token"])},
                           tok, chunks, n=10, margin=3, show=2)
    assert result.blanks == 10 and set(result.accuracy) == {"bert", "gpt", "elmo"}
    assert all(0 <= v <= 1 for v in result.accuracy.values())
    assert all(0 < v <= 1 for v in result.probability.values())
    ex = result.examples[0]
    assert {"left", "answer", "right", "bert"} <= set(ex) and len(ex["bert"]) == 3
    blanks = compare.cloze_blanks(tok, chunks, n=5, margin=3)
    for row, p in blanks:
        assert 3 <= p < chunks.shape[1] - 3
        assert tok.convert_ids_to_tokens(int(chunks[row, p])).isalpha()


def test_forward_flops_match_flop_counter():
    from torch.utils.flop_counter import FlopCounterMode
    cfg = tiny_config(vocab_size=101)
    model = lab.BertForPreTraining(cfg)
    B, T = 3, 10
    ids = torch.randint(5, 101, (B, T))
    labels = torch.full_like(ids, -100)
    labels[:, 2:4] = ids[:, 2:4]                     # 6 predictions
    with FlopCounterMode(display=False) as counter:   # output_attentions: explicit matmuls, counted
        out = model(ids, mlm_labels=labels, nsp_label=torch.zeros(B, dtype=torch.long), output_attentions=True)
    assert counter.get_total_flops() == compare.forward_flops(cfg, B, T, predictions=6)
    with FlopCounterMode(display=False) as counter:
        out.loss.backward()
    assert counter.get_total_flops() == 2 * compare.forward_flops(cfg, B, T, predictions=6)


def test_pretraining_flops_of_bert_base():
    base = lab.BertConfig.preset("base")
    total = compare.pretraining_flops(base)
    # about 6 x parameters x tokens (~43 billion tokens), plus attention and the MLM head
    tokens = 256 * (900_000 * 128 + 100_000 * 512)
    assert 6 * 85e6 * tokens < total < 6 * 110e6 * tokens * 1.2


def test_measure_flop_rate_does_not_change_the_model(tok):
    from lab.instances import collate, create_instances
    special = SpecialIds.from_vocab(tok.vocab)
    docs = [[tok.encode(s, add_special_tokens=False).input_ids for s in TEXT]] * 3
    batch = collate(create_instances(docs, special, max_seq_length=16), special, torch.Generator().manual_seed(0))
    model = lab.BertForPreTraining(tiny_config(vocab_size=tok.vocab_size))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rate = compare.measure_flop_rate(model, batch, steps=2, threads=1)
    assert rate["flop_per_s"] > 0 and rate["seconds_per_step"] > 0
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())


def test_find_data_prefers_shared_data_and_falls_back(tmp_path, monkeypatch):
    (tmp_path / "sst2").mkdir()
    (tmp_path / "sst2" / "train.tsv").write_text("sentence\tlabel\n")
    monkeypatch.setenv("BERT_LAB_DATA", str(tmp_path))
    assert compare.find_data("sst2/train.tsv", "sentiment_train.tsv") == tmp_path / "sst2" / "train.tsv"
    assert compare.is_shared(tmp_path / "sst2" / "train.tsv")
    fallback = compare.find_data("novels", "stories.txt")
    assert fallback == compare.NOTEBOOK_DATA / "stories.txt" and not compare.is_shared(fallback)
    monkeypatch.setenv("BERT_LAB_DATA", str(tmp_path / "absent"))
    assert compare.shared_data_dir() is None
    with pytest.raises(FileNotFoundError):
        compare.find_data("novels", "no-such-file.txt")


def test_bundled_model_and_run_dirs(tmp_path):
    assert compare.bundled_model("no-such-model") is None
    a = compare.new_run_dir(tmp_path, "x")
    assert a.parent == tmp_path and a.name.startswith("x-") and not a.exists()
    a.mkdir()
    assert compare.new_run_dir(tmp_path, "x") != a


def test_random_batch_and_directional_attention(tok, mlm):
    cfg = lab.BertConfig.preset("tiny", vocab_size=300)
    b = compare.random_batch(cfg, batch_size=3, seq_len=16, predictions_per_seq=4)
    assert b.input_ids.shape == (3, 16) and b.num_predictions == 12 and int(b.input_ids.max()) < 300
    assert b.token_type_ids[0].tolist() == [0] * 9 + [1] * 7
    out = lab.BertForPreTraining(cfg)(**b.as_dict())
    assert out.mlm_logits.shape == (12, 300) and torch.isfinite(out.loss)
    ids = torch.randint(5, mlm.config.vocab_size, (7,))
    result = compare.directional_attention(mlm, tok, ids, "left_to_right")
    assert len(result.tokens) == 7 and result.attentions[0].shape == (1, 4, 7, 7)
    stats = result.head_stats()
    assert stats["next"].max() == 0                  # a left-to-right head never looks ahead
