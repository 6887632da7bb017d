"""lab.inspect.explore on a tiny model: what the dashboard and notebooks call."""

import numpy as np
import pytest
import torch

import lab
from lab import explore
from tests.conftest import tiny_config


def test_fill_mask_one_list_per_mask_with_probabilities(mlm):
    model, tok = mlm
    result = explore.fill_mask(model, tok, "the [MASK] sat on the [MASK] .", top_k=4)
    assert len(result) == 2 and all(len(r) == 4 for r in result)
    for preds in result:
        probs = [p for _, p in preds]
        assert probs == sorted(probs, reverse=True) and all(0 < p < 1 for p in probs)
    # probabilities are a softmax over the whole vocabulary: top_k = V sums to 1
    full = explore.fill_mask(model, tok, "the [MASK] sat .", top_k=tok.vocab_size)
    assert abs(sum(p for _, p in full[0]) - 1) < 1e-4
    # they equal the model's own MLM logits at that position
    enc = tok.encode("the [MASK] sat .")
    logits = model(torch.tensor([enc.input_ids])).mlm_logits[0, enc.input_ids.index(tok.mask_token_id)]
    best = tok.convert_ids_to_tokens(int(logits.argmax()))
    assert full[0][0][0] == best
    # temperature flattens
    hot = explore.fill_mask(model, tok, "the [MASK] sat .", top_k=1, temperature=10.0)
    assert hot[0][0][1] < full[0][0][1]


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("   \x00\x07 ", "empty"),
        ("no mask here", "no \\[MASK\\]"),
        (" ".join(["[MASK]"] * 21), "at most 20"),
    ],
)
def test_fill_mask_bad_input(mlm, text, message):
    model, tok = mlm
    with pytest.raises(ValueError, match=message):
        explore.fill_mask(model, tok, text)


def test_fill_mask_needs_an_mlm_head_and_truncates_long_text(mlm):
    model, tok = mlm
    with pytest.raises(ValueError, match="no masked-LM head"):
        explore.fill_mask(lab.BertModel(model.config), tok, "the [MASK] .")
    long = "the [MASK] sat . " + "the cat sat on the mat . " * 40  # beyond 64 positions
    result = explore.fill_mask(model, tok, long)
    assert len(result) == 1 and result.truncated > 0 and len(result.tokens) == 64


# ----------------------------------------------------------------------------------------
# Helpers shared by the tests below
# ----------------------------------------------------------------------------------------
def tiny_model(cls, tok, seed=0, **overrides):
    torch.manual_seed(seed)
    return cls(tiny_config(vocab_size=tok.vocab_size, **overrides)).eval()


def masked_loss(model, tok, text, labels, head_mask=None):
    """Mean MLM cross-entropy at the [MASK]s of `text` against `labels`, by a plain forward."""
    enc = tok.encode(text)
    ids = torch.tensor([enc.input_ids])
    picked = torch.where(ids == tok.mask_token_id, 0, -100)
    with torch.no_grad():
        out = model(ids, head_mask=head_mask, mlm_labels=picked)
    return torch.nn.functional.cross_entropy(out.mlm_logits, labels).item()


# ----------------------------------------------------------------------------------------
# corruption_preview: the real pre-training masking, made visible
# ----------------------------------------------------------------------------------------
def test_corruption_preview_follows_the_pretraining_rule(mlm):
    _, tok = mlm
    text = "the cat sat on the mat . the dog ran in the park . " * 3  # 39 non-special tokens
    a = explore.corruption_preview(tok, text, seed=3)
    assert a == explore.corruption_preview(tok, text, seed=3)  # same seed, same preview
    previews = [explore.corruption_preview(tok, text, seed=s) for s in range(30)]
    assert len({tuple(p.kinds) for p in previews}) > 1  # other seeds, other choices
    n = len(a.tokens) - 2
    assert a.tokens[0] == "[CLS]" and a.tokens[-1] == "[SEP]" and a.tokens[1:-1] == tok.tokenize(text)
    for p in previews:
        c = p.counts
        assert c["tokens"] == n and c["chosen"] == round(0.15 * n) == 6  # a fixed 15% count
        assert c["mask"] + c["random"] + c["keep"] == c["chosen"]
        assert p.kinds[0] is None and p.kinds[-1] is None  # never [CLS] / [SEP]
        assert p.corrupted[0] == "[CLS]" and p.corrupted[-1] == "[SEP]"
        for tok_, seen, label, kind in zip(p.tokens, p.corrupted, p.labels, p.kinds):
            assert (label is None) == (kind is None)
            if kind is None:
                assert seen == tok_  # unchosen: untouched
            else:
                assert label == tok_
                assert seen == {"mask": "[MASK]", "keep": tok_}.get(kind, seen)
                if kind == "random":
                    assert seen not in (tok_, "[MASK]", "[CLS]", "[SEP]", "[PAD]")
    kinds = [k for p in previews for k in p.kinds if k]
    assert 0.65 < kinds.count("mask") / len(kinds) < 0.95 and "random" in kinds and "keep" in kinds
    # the cap on predictions, and a pair keeps both segments' specials untouched
    assert explore.corruption_preview(tok, text, max_predictions=2).counts["chosen"] == 2
    pair = explore.corruption_preview(tok, "the cat sat .", text_b="the dog ran .", seed=1)
    assert pair.tokens.count("[SEP]") == 2
    assert all(k is None for t, k in zip(pair.tokens, pair.kinds) if t in ("[CLS]", "[SEP]"))


# ----------------------------------------------------------------------------------------
# embeddings, next_sentence, classify
# ----------------------------------------------------------------------------------------
def test_embeddings_add_up_and_match_the_model(mlm):
    model, tok = mlm
    r = explore.embeddings(model, tok, "the cat sat .", "the dog ran .")
    T, H = len(r.tokens), model.config.hidden_size
    assert all(t.shape == (T, H) for t in (r.token, r.segment, r.position, r.total, r.normalized))
    assert torch.allclose(r.total, r.token + r.segment + r.position)
    assert r.segment_ids == [0] * 6 + [1] * 5  # [CLS] the cat sat . [SEP] | the dog ran . [SEP]
    emb = model.bert.embeddings
    assert torch.equal(r.segment[0], emb.token_type_embeddings.weight[0])
    assert torch.equal(r.segment[-1], emb.token_type_embeddings.weight[1])
    assert torch.equal(r.position, emb.position_embeddings.weight[:T])
    ids = torch.tensor([tok.encode("the cat sat .", "the dog ran .").input_ids])
    with torch.no_grad():
        expected = emb(ids, torch.tensor([r.segment_ids]))[0]  # what layer 0 receives
    assert torch.allclose(r.normalized, expected, atol=1e-6)
    explore.embeddings(lab.BertModel(model.config), tok, "the cat .")  # a bare encoder works too
    assert not explore.embeddings(model, tok, "the cat .").total.requires_grad


def test_next_sentence_is_a_probability_from_the_nsp_head(mlm):
    model, tok = mlm
    p = explore.next_sentence(model, tok, "the cat sat on the mat .", "the dog ran in the park .")
    enc = tok.encode("the cat sat on the mat .", "the dog ran in the park .")
    with torch.no_grad():
        logits = model(torch.tensor([enc.input_ids]), torch.tensor([enc.token_type_ids])).nsp_logits
    assert 0 < p < 1 and p == pytest.approx(logits.softmax(-1)[0, 0].item(), abs=1e-6)
    with pytest.raises(ValueError, match="no next-sentence head"):
        explore.next_sentence(tiny_model(lab.BertForMaskedLM, tok), tok, "the cat .", "the dog .")
    with pytest.raises(ValueError, match="b is empty"):
        explore.next_sentence(model, tok, "the cat .", " \x01 ")


def test_classify_returns_label_names_summing_to_one(mlm):
    _, tok = mlm
    labels = {0: "negative", 1: "positive", 2: "neutral"}
    model = tiny_model(lab.BertForSequenceClassification, tok, id2label=labels)
    result = explore.classify(model, tok, "the cat sat .", "the dog ran .")
    assert set(result) == set(labels.values()) and sum(result.values()) == pytest.approx(1, abs=1e-6)
    assert list(result.values()) == sorted(result.values(), reverse=True)
    enc = tok.encode("the cat sat .", "the dog ran .")
    with torch.no_grad():
        probs = model(torch.tensor([enc.input_ids]), torch.tensor([enc.token_type_ids])).logits.softmax(-1)[0]
    assert result["neutral"] == pytest.approx(probs[2].item(), abs=1e-6)
    with pytest.raises(ValueError, match="no classification head.*finetune-cls"):
        explore.classify(mlm[0], tok, "the cat sat .")
    with pytest.raises(ValueError, match="text_pair is empty"):
        explore.classify(model, tok, "the cat sat .", "")


def test_model_tasks_and_missing_head_messages(mlm):
    model, tok = mlm
    assert explore.model_tasks(model) == {"fill_mask", "next_sentence", "attention", "embeddings"}
    assert explore.model_tasks(lab.BertModel(model.config)) == {"attention", "embeddings"}
    qa = tiny_model(lab.BertForQuestionAnswering, tok)
    assert explore.model_tasks(qa) == {"answer", "attention", "embeddings"}
    assert "classify" in explore.model_tasks(tiny_model(lab.BertForSequenceClassification, tok))
    assert explore.missing_head_message(qa, "answer") == ""
    assert "finetune-qa" in explore.missing_head_message(model, "answer")
    assert "masked-LM" in explore.missing_head_message(qa, "fill_mask")
    with pytest.raises(ValueError, match="unknown task"):
        explore.missing_head_message(model, "translate")


# ----------------------------------------------------------------------------------------
# attention and head statistics
# ----------------------------------------------------------------------------------------
def test_attention_maps_are_the_models_and_rows_sum_to_one(mlm):
    model, tok = mlm
    r = explore.attention(model, tok, "the cat sat .", "the dog ran .")
    enc = tok.encode("the cat sat .", "the dog ran .")
    T, L, A = len(enc), model.config.num_hidden_layers, model.config.num_attention_heads
    assert r.tokens == enc.tokens and r.sentence_b_start == 6 and r.truncated == 0
    assert len(r.attentions) == L
    for a in r.attentions:
        assert a.shape == (1, A, T, T) and a.dtype == torch.float32 and a.device.type == "cpu"
        assert torch.allclose(a.sum(-1), torch.ones(1, A, T), atol=1e-5)
    assert explore.attention(model, tok, "the cat sat .").sentence_b_start is None
    long = explore.attention(model, tok, "the cat sat on the mat . " * 20)
    assert long.truncated > 0 and long.attentions[0].shape[-1] == 64 == len(long.tokens)
    stats = r.head_stats()
    assert set(stats) == {"entropy", "cls", "sep", "self", "prev", "next"}
    for name, v in stats.items():
        assert v.shape == (L, A)
        assert (v >= 0).all() and (name == "entropy" or (v <= 1 + 1e-6).all()), name
    assert (stats["entropy"] <= np.log(T) + 1e-5).all()


def hand_made(pattern, tokens):
    """An AttentionResult with one layer of one head whose [T, T] map is `pattern`."""
    return explore.AttentionResult(tokens=tokens, attentions=(pattern[None, None],), sentence_b_start=None)


def test_head_stats_on_hand_built_patterns():
    tokens = ["[CLS]", "a", "b", "c", "[SEP]"]
    T = len(tokens)
    # every token looks at the one before it ([CLS], with none before, at itself)
    prev = torch.zeros(T, T)
    prev[0, 0] = 1
    prev[torch.arange(1, T), torch.arange(T - 1)] = 1
    s = {k: float(v[0, 0]) for k, v in hand_made(prev, tokens).head_stats().items()}
    assert s["prev"] == pytest.approx(1) and s["next"] == 0 and s["entropy"] == pytest.approx(0, abs=1e-7)
    assert s["self"] == pytest.approx(1 / T)  # only [CLS] looks at itself
    assert s["cls"] == pytest.approx(2 / T)  # rows 0 and 1 look at [CLS]
    assert s["sep"] == 0
    # everyone looks at [SEP] (the "no-op" pattern)
    sep = torch.zeros(T, T)
    sep[:, -1] = 1
    s = {k: float(v[0, 0]) for k, v in hand_made(sep, tokens).head_stats().items()}
    assert s["sep"] == 1 and s["cls"] == 0 and s["next"] == pytest.approx(1 / (T - 1))
    # uniform attention: entropy log T, every statistic 1/T
    s = {k: float(v[0, 0]) for k, v in hand_made(torch.full((T, T), 1 / T), tokens).head_stats().items()}
    assert s["entropy"] == pytest.approx(np.log(T), abs=1e-6)
    for name in ("cls", "sep", "self", "prev", "next"):
        assert s[name] == pytest.approx(1 / T, abs=1e-6), name


# ----------------------------------------------------------------------------------------
# head ablation, and the model's batched head_mask
# ----------------------------------------------------------------------------------------
def test_batched_head_mask_equals_one_mask_per_forward(mlm):
    model, tok = mlm
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    ids = torch.tensor([tok.encode("the cat sat on the mat .").input_ids] * 3)
    masks = torch.ones(L, 3, A)
    masks[0, 0, 1] = 0  # row 0: layer 0 head 1 silenced
    masks[1, 1, 3] = 0  # row 1: layer 1 head 3; row 2: nothing
    with torch.no_grad():
        for attentions in (False, True):  # the SDPA and the explicit path
            batched = model(ids, head_mask=masks, output_attentions=attentions).mlm_logits
            for row in range(3):
                alone = model(ids[:1], head_mask=masks[:, row], output_attentions=attentions).mlm_logits
                assert torch.allclose(batched[row], alone[0], atol=1e-5), (attentions, row)
        assert torch.allclose(batched[2], model(ids[:1]).mlm_logits[0], atol=1e-5)
        assert not torch.allclose(batched[0], batched[2], atol=1e-4)
        # [heads] still means "the same for every layer"
        same = model(ids[:1], head_mask=torch.tensor([1.0, 0, 1, 1])).mlm_logits
        assert torch.allclose(same, model(ids[:1], head_mask=torch.tensor([[1.0, 0, 1, 1]] * L)).mlm_logits)
        # silencing a head of the last layer cannot change what layer 0 attends to
        last = torch.ones(L, A)
        last[L - 1, 2] = 0
        out = model(ids[:1], head_mask=last, output_attentions=True)
        ref = model(ids[:1], output_attentions=True)
        assert torch.equal(out.attentions[0], ref.attentions[0])
        assert out.attentions[L - 1][0, 2].abs().sum() == 0 and torch.equal(
            out.attentions[L - 1][0, :2], ref.attentions[L - 1][0, :2]
        )
    with pytest.raises(ValueError, match="head_mask must have shape"):
        model(ids, head_mask=torch.ones(L, 2, A))  # a batch of 3 needs 3 rows


def test_ablate_heads_equals_a_forward_with_that_head_mask(mlm):
    model, tok = mlm
    text = "the [MASK] sat on the [MASK] ."
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    before = {k: v.clone() for k, v in model.state_dict().items()}
    r = explore.ablate_heads(model, tok, text, batch_size=3)  # 8 ablations in 3 batches
    assert r.metric == "loss" and r.effect.shape == (L, A)
    assert r.tokens == tok.encode(text).tokens and len(r.mask_positions) == 2
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # never mutated
    # the labels are the unablated top-1 predictions
    top = [[w for w, _ in preds][0] for preds in explore.fill_mask(model, tok, text, top_k=1)]
    labels = torch.tensor(tok.convert_tokens_to_ids(top))
    assert r.baseline == pytest.approx(masked_loss(model, tok, text, labels), abs=1e-5)
    for layer, head in [(0, 0), (0, 3), (1, 2)]:
        head_mask = torch.ones(L, A)
        head_mask[layer, head] = 0
        manual = masked_loss(model, tok, text, labels, head_mask)
        assert r.baseline + r.effect[layer, head].item() == pytest.approx(manual, abs=1e-5)
    assert r.effect.abs().max() > 0
    # given targets, they are the labels; "probability" = P(label) at the first [MASK]
    t = explore.ablate_heads(model, tok, text, targets=["dog", "park"])
    assert t.baseline == pytest.approx(
        masked_loss(model, tok, text, torch.tensor(tok.convert_tokens_to_ids(["dog", "park"]))), abs=1e-5
    )
    p = explore.ablate_heads(model, tok, text, metric="probability")
    assert p.baseline == pytest.approx(explore.fill_mask(model, tok, text, top_k=1)[0][0][1], abs=1e-5)
    assert ((p.baseline + p.effect >= 0) & (p.baseline + p.effect <= 1)).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(text="no mask here"), "no \\[MASK\\]"),
        (dict(text="\x00\x1b"), "text is empty"),
        (dict(text="the [MASK] .", metric="accuracy"), "metric must be"),
        (dict(text="the [MASK] .", targets=["cat", "dog"]), "one per \\[MASK\\]"),
        (dict(text="the [MASK] .", targets=["cat dog"]), "single token"),
        (dict(text="the [MASK] .", targets=["zebra"]), "not in the vocabulary"),
    ],
)
def test_ablate_heads_bad_input(mlm, kwargs, message):
    model, tok = mlm
    with pytest.raises(ValueError, match=message):
        explore.ablate_heads(model, tok, **kwargs)


def test_ablate_heads_needs_an_mlm_head(mlm):
    _, tok = mlm
    with pytest.raises(ValueError, match="no masked-LM head"):
        explore.ablate_heads(tiny_model(lab.BertForQuestionAnswering, tok), tok, "the [MASK] .")


# ----------------------------------------------------------------------------------------
# answer: extractive QA over doc-stride windows
# ----------------------------------------------------------------------------------------
def test_answer_spans_are_exact_substrings_of_the_context(mlm):
    _, tok = mlm
    model = tiny_model(lab.BertForQuestionAnswering, tok)
    context = "The Cat sat on the Mat.  The dog ran in the park."
    r = explore.answer(model, tok, "where did the cat sit ?", context, top_k=3)
    assert 1 <= len(r.spans) <= 3 and r.num_windows == 1 and r.window_index == 0
    assert [s.score for s in r.spans] == sorted((s.score for s in r.spans), reverse=True)
    for s in r.spans:
        assert s.text and context[s.start : s.end] == s.text  # original case and spacing
    n = len(r.tokens)
    assert len(r.start_probs) == len(r.end_probs) == len(r.offsets) == n
    assert sum(r.start_probs) == pytest.approx(1, abs=1e-5) and sum(r.end_probs) == pytest.approx(1, abs=1e-5)
    assert r.tokens[0] == "[CLS]" and r.offsets[0] is None and not r.question_truncated
    for token, off in zip(r.tokens, r.offsets):  # offsets point into the context
        if off is not None and token != "[UNK]":
            assert context[off[0] : off[1]].lower() == token.removeprefix("##")
    # the best span lies inside the window's own context tokens
    best = r.spans[0]
    starts = [o[0] for o in r.offsets if o is not None]
    ends = [o[1] for o in r.offsets if o is not None]
    assert best.start in starts and best.end in ends


def test_answer_reads_a_long_context_in_several_windows(mlm):
    _, tok = mlm
    model = tiny_model(lab.BertForQuestionAnswering, tok)
    context = " ".join(["the cat sat on the mat .", "the dog ran in the park ."] * 12)  # ~170 tokens
    r = explore.answer(model, tok, "where did the dog run ?", context, top_k=2, doc_stride=24)
    assert r.num_windows > 3  # 64 positions per window at most
    assert len(r.tokens) <= model.config.max_position_embeddings
    assert r.spans and all(context[s.start : s.end] == s.text for s in r.spans)
    assert r.window_index == r.spans[0].window_index < r.num_windows
    long_q = explore.answer(model, tok, "the cat " * 40 + "?", context, max_query_length=8, doc_stride=24)
    assert long_q.question_truncated and long_q.spans


@pytest.mark.parametrize(
    "question, context, message",
    [
        ("", "the cat sat .", "question is empty"),
        ("where ?", "  \t", "context is empty"),
        ("\x07\x08", "the cat sat .", "question is empty"),
    ],
)
def test_answer_bad_input(mlm, question, context, message):
    _, tok = mlm
    model = tiny_model(lab.BertForQuestionAnswering, tok)
    with pytest.raises(ValueError, match=message):
        explore.answer(model, tok, question, context)


def test_answer_needs_a_qa_head(mlm):
    model, tok = mlm
    with pytest.raises(ValueError, match="no question-answering head"):
        explore.answer(model, tok, "where ?", "the cat sat .")


def test_functions_restore_the_train_mode(mlm):
    model, tok = mlm
    model.train()
    try:
        explore.fill_mask(model, tok, "the [MASK] sat .")
        explore.attention(model, tok, "the cat sat .")
        explore.ablate_heads(model, tok, "the [MASK] sat .")
        explore.embeddings(model, tok, "the cat sat .")
        explore.next_sentence(model, tok, "the cat sat .", "the dog ran .")
        assert model.training
        # eval mode inside: no dropout, so two calls agree exactly
        a = explore.attention(model, tok, "the cat sat .").attentions[1]
        assert torch.equal(a, explore.attention(model, tok, "the cat sat .").attentions[1])
    finally:
        model.eval()


# ----------------------------------------------------------------------------------------
# checkpoint_predictions: watch BERT learn
# ----------------------------------------------------------------------------------------
def test_checkpoint_predictions_follow_a_tiny_run(tmp_path):
    import random
    import shutil

    from lab.training.pretrain import PretrainConfig, pretrain
    from lab.training.train import TrainConfig

    rng = random.Random(0)
    words = ["cat", "dog", "sat", "ran", "mat", "park", "the", "on", "in", "big", "small", "red"]
    # one sentence per line, capitalised, blank lines between documents (Google's format)
    docs = [
        "\n".join(" ".join(rng.choice(words) for _ in range(8)).capitalize() + " ." for _ in range(6))
        for _ in range(10)
    ]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(docs) + "\n")
    run = tmp_path / "run"
    pc = PretrainConfig(preset="tiny", vocab_size=60, max_seq_length=32, held_out=0.2, eval_instances=8)
    tc = TrainConfig(
        out_dir=str(run),
        steps=4,
        batch_size=4,
        lr=1e-3,
        eval_every=0,
        ckpt_every=2,
        log_every=1,
        precision="fp32",
        progress=False,
    )
    pretrain(corpus, pc, tc, log=lambda *_: None)

    seen = []
    result = explore.checkpoint_predictions(
        run, "the [MASK] sat on the mat .", top_k=2, progress=lambda items: seen.extend(items) or items
    )
    steps = [step for step, _ in result]
    assert [step for step, _ in seen] == steps  # the progress wrapper saw every checkpoint
    assert steps == sorted(set(steps)) and steps[0] == 0 and steps[-1] == 4 and len(steps) >= 3
    for _, preds in result:
        assert len(preds) == 1 and len(preds[0]) == 2 and sum(p for _, p in preds[0]) <= 1
    final, tok = lab.load(run)
    direct = explore.fill_mask(final, tok, "the [MASK] sat on the mat .", top_k=2)
    assert [w for w, _ in result[-1][1][0]] == [w for w, _ in direct[0]]  # the last step is the run's model
    # a recipe run: an earlier phase in run/phase1-*/, whose steps come first
    recipe = tmp_path / "recipe"
    shutil.copytree(run, recipe / "phase1-short")
    shutil.copytree(run / "checkpoints", recipe / "checkpoints")
    shutil.copy(run / "vocab.txt", recipe / "vocab.txt")
    merged = [step for step, _ in explore.checkpoint_predictions(recipe, "the [MASK] .")]
    assert merged == steps + [4 + s for s in steps[1:]]  # phase 2's step 0 == phase 1's end
    with pytest.raises(ValueError, match="no checkpoints"):
        explore.checkpoint_predictions(tmp_path, "the [MASK] .")


def test_use_bf16_keeps_the_answers_close_and_can_be_turned_off(mlm):
    model, tok = mlm
    text = "the [MASK] sat on the [MASK] ."
    exact = explore.fill_mask(model, tok, text, top_k=tok.vocab_size)
    try:
        on = explore.use_bf16(True)
        fast = explore.fill_mask(model, tok, text, top_k=tok.vocab_size)
        att = explore.attention(model, tok, "the cat sat .")
    finally:
        assert explore.use_bf16(False) is False
    for e, f in zip(exact, fast):
        assert abs(sum(p for _, p in f) - 1) < 1e-4  # still a distribution
        fp32, bf16 = dict(e), dict(f)
        assert max(abs(fp32[t] - bf16[t]) for t in fp32) < (0.02 if on else 1e-6)
    assert all(a.dtype == torch.float32 for a in att.attentions)  # results stay fp32 tensors
    assert explore.fill_mask(model, tok, text, top_k=3)[0] == exact[0][:3]  # off again: fp32 exactly
