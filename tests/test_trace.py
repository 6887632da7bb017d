"""explore.trace (issue 42, point 1): one forward pass as its ordered steps.

Every step named by a module is that module's output under a forward hook during the model's own
forward pass; the in-between steps recompute what the model does (attention maps equal
explore.attention's); the last steps equal the views (fill_mask, next_sentence, classify, answer,
tag); it works on every bundled model, on a transformers-saved BERT, and on every switch since BERT.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import torch
import transformers

import lab
from lab import BertConfig
from lab.inspect import explore
from lab.inspect.trace import STEP_NAMES, STEPS, catalogue, fill
from lab.modern import changed

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = sorted(p.name for p in (ROOT / "models").iterdir() if (p / "config.json").exists())
SENTENCE = "the cat sat on the [MASK] .", "it was very happy ."
TOL = dict(atol=2e-5, rtol=1e-4)


@pytest.fixture(scope="module")
def classroom():
    return lab.load(ROOT / "models" / "bert-lab-classroom")


def hooked(model, trace, ids, types, predict_at=None):
    """Run the model's own forward pass with a hook on every module a step names: {module: output}."""
    seen, handles = {}, []
    modules = dict(model.named_modules())
    for step in trace.steps:
        if step.module is None:
            continue
        assert step.module in modules, f"{step.name} names module {step.module}, which the model lacks"

        def keep(_module, _inputs, output, name=step.module):
            seen[name] = (output[0] if isinstance(output, tuple) else output).detach().float()

        handles.append(modules[step.module].register_forward_hook(keep))
    try:
        with torch.no_grad():
            extra = {"predict_at": predict_at} if predict_at is not None else {}
            model.eval()(ids, types, **extra)
    finally:
        for h in handles:
            h.remove()
    return seen


def assert_steps_are_module_outputs(model, tokenizer, a, b=None):
    """Every module step equals its module's output in the model's own forward pass."""
    trace = explore.trace(model, tokenizer, a, b)
    ids, types = torch.tensor([trace.input_ids]), torch.tensor([trace.token_type_ids])
    predict_at = None
    if hasattr(model, "cls"):
        predict_at = torch.zeros_like(ids, dtype=torch.bool)
        predict_at[0, trace.predicted_positions] = True
    seen = hooked(model, trace, ids, types, predict_at)
    checked = 0
    for step in trace.steps:
        if step.module is None:
            continue
        reference = seen[step.module].reshape(step.shape)  # (1, T, H) -> (T, H), (1, H) -> (H,)
        torch.testing.assert_close(step.values, reference, **TOL, msg=lambda m, s=step: f"{s.name}: {m}")
        checked += 1
    assert checked >= 10 * model.config.num_hidden_layers // 2
    return trace


@pytest.mark.parametrize("name", BUNDLED)
def test_every_module_step_of_a_bundled_model_is_that_modules_output(name):
    model, tokenizer = lab.load(ROOT / "models" / name)
    trace = assert_steps_are_module_outputs(model, tokenizer, *SENTENCE)
    # every module with weights takes part (the decoder shares the token table: it counts as itself)
    weighted = {n for n, m in model.named_modules() if any(True for _ in m.parameters(recurse=False))}
    assert weighted <= {s.module for s in trace.steps} | {"cls.predictions"}  # the head's own bias


def test_steps_come_in_the_papers_order_with_real_sizes(classroom):
    model, tokenizer = classroom
    t = explore.trace(model, tokenizer, "the cat sat on the [MASK] .")
    T, d = len(t.tokens), model.config.head_size
    names = t.names()
    assert names[:5] == [
        "bert.embeddings.word_embeddings",
        "bert.embeddings.token_type_embeddings",
        "bert.embeddings.position_embeddings",
        "bert.embeddings.sum",
        "bert.embeddings.LayerNorm",
    ]
    layer0 = [n.removeprefix("bert.encoder.layer.0.") for n in names if n.startswith("bert.encoder.layer.0.")]
    assert layer0 == [
        "attention.self.query",
        "attention.self.key",
        "attention.self.value",
        "attention.self.scores",
        "attention.self.masked_scores",
        "attention.self.probs",
        "attention.self.context",
        "attention.self",
        "attention.output.dense",
        "attention.output.residual",
        "attention.output.LayerNorm",
        "intermediate.dense",
        "intermediate.activation",
        "output.dense",
        "output.residual",
        "output.LayerNorm",
    ]
    assert names[-9:] == [
        "bert.pooler.dense",
        "bert.pooler.activation",
        "cls.predictions.transform.dense",
        "cls.predictions.transform.activation",
        "cls.predictions.transform.LayerNorm",
        "cls.predictions.decoder",
        "cls.predictions.softmax",
        "cls.seq_relationship",
        "cls.seq_relationship.softmax",
    ]
    scores = t.step("bert.encoder.layer.0.attention.self.scores")
    assert scores.shape == (model.config.num_attention_heads, T, T)
    assert f"√{d}" in scores.formula and f"{T}×{T}" in scores.formula
    assert t.step("bert.encoder.layer.1.intermediate.dense").shape == (T, model.config.intermediate_size)
    assert t.step("cls.predictions.decoder").shape == (1, model.config.vocab_size)  # one [MASK]
    assert t.predicted_positions == [t.tokens.index("[MASK]")]
    # every in-between name is documented
    documented = set(STEP_NAMES)
    for n in names:
        short = n.split("bert.encoder.layer.")[-1].split(".", 1)[-1] if "encoder.layer." in n else n
        step = t.step(n)
        assert step.module == n or short in documented or n in documented, n
        assert step.kind in STEPS and step.formula and step.section and step.what


def test_the_in_between_steps_are_what_the_model_computes(classroom):
    """Attention maps equal explore.attention's; the sums, softmaxes and the concatenation add up."""
    model, tokenizer = classroom
    a, b = SENTENCE
    t = explore.trace(model, tokenizer, a, b)
    maps = explore.attention(model, tokenizer, a, b).attentions
    for i, m in enumerate(maps):
        torch.testing.assert_close(t.step(f"bert.encoder.layer.{i}.attention.self.probs").values, m[0], **TOL)
    e = [
        t.step(f"bert.embeddings.{n}").values
        for n in ("word_embeddings", "token_type_embeddings", "position_embeddings")
    ]
    torch.testing.assert_close(t.step("bert.embeddings.sum").values, e[0] + e[1] + e[2])
    p = "bert.encoder.layer.0"
    probs = t.step(f"{p}.attention.self.probs").values
    torch.testing.assert_close(probs.sum(-1), torch.ones(probs.shape[:-1]))
    ctx = t.step(f"{p}.attention.self.context").values  # (A, T, d)
    torch.testing.assert_close(t.step(f"{p}.attention.self").values, ctx.transpose(0, 1).reshape(ctx.shape[1], -1))
    x = t.step("bert.embeddings.LayerNorm").values
    torch.testing.assert_close(
        t.step(f"{p}.attention.output.residual").values, x + t.step(f"{p}.attention.output.dense").values
    )
    # segment B's tokens get the B row of the segment table
    types = torch.tensor(t.token_type_ids)
    seg = t.step("bert.embeddings.token_type_embeddings").values
    table = model.bert.embeddings.token_type_embeddings.weight.detach()
    torch.testing.assert_close(seg, table[types])


def test_the_last_steps_are_the_views_answers(classroom):
    model, tokenizer = classroom
    a, b = SENTENCE
    t = explore.trace(model, tokenizer, f"{a} {b}".replace(" .", " [MASK]", 1))
    probs = t.step("cls.predictions.softmax").values  # (M, V)
    for m, guesses in enumerate(explore.fill_mask(model, tokenizer, f"{a} {b}".replace(" .", " [MASK]", 1), top_k=3)):
        top = probs[m].topk(3)
        assert [tokenizer.convert_ids_to_tokens(int(i)) for i in top.indices] == [w for w, _ in guesses]
        torch.testing.assert_close(top.values, torch.tensor([p for _, p in guesses]), **TOL)
    t = explore.trace(model, tokenizer, a, b)
    nsp = t.step("cls.seq_relationship.softmax").values
    assert nsp.shape == (2,)
    assert abs(float(nsp[0]) - explore.next_sentence(model, tokenizer, a, b)) < 1e-5


def test_fine_tuned_heads_end_in_the_views_answers():
    sst2, tok = lab.load(ROOT / "models" / "bert-lab-sst2")
    t = explore.trace(sst2, tok, "a gripping , funny film .")
    probs = t.step("classifier.softmax").values
    got = explore.classify(sst2, tok, "a gripping , funny film .")
    assert {sst2.config.id2label[i]: round(float(p), 5) for i, p in enumerate(probs)} == {
        k: round(v, 5) for k, v in got.items()
    }
    squad, tok = lab.load(ROOT / "models" / "bert-lab-squad")
    q, c = "who sat on the mat ?", "the cat sat on the mat . the dog did not ."
    t = explore.trace(squad, tok, q, c)
    ans = explore.answer(squad, tok, q, c)
    assert ans.tokens == t.tokens
    torch.testing.assert_close(t.step("qa_outputs.start_softmax").values, torch.tensor(ans.start_probs), **TOL)
    torch.testing.assert_close(t.step("qa_outputs.end_softmax").values, torch.tensor(ans.end_probs), **TOL)


def test_a_tagger_ends_in_each_words_tag():
    model, tok = lab.load(ROOT / "models" / "minilm-ner")
    text = "Ada Lovelace lived in London ."
    t = explore.trace(model, tok, text)
    probs = t.step("classifier.softmax").values  # (T, K)
    tagged = explore.tag(model, tok, text)
    first = [i for i, token in enumerate(t.tokens) if not token.startswith("##") and token not in ("[CLS]", "[SEP]")]
    assert len(first) == len(tagged.items)
    for i, w in zip(first, tagged.items):  # each word's tag and its probability, read at its first piece
        assert abs(float(probs[i, model.config.label2id[w.tag]]) - w.probability) < 1e-4


SWITCHES = {
    "pre-norm": ["pre-norm"],
    "geglu": ["geglu"],
    "rotary": ["rotary"],
    "no-bias": ["no-bias"],
    "local": ["local"],
    "all": ["pre-norm", "geglu", "rotary", "no-bias", "local"],
}


@pytest.mark.parametrize(("switches", "cls"), itertools.product(SWITCHES, ["BertForPreTraining", "BertForMaskedLM"]))
def test_every_switch_since_bert_has_its_own_steps(classroom, switches, cls):
    _, tokenizer = classroom
    shape = dict(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=3, num_attention_heads=4)
    cfg = BertConfig(**changed(shape | {"intermediate_size": 48}, SWITCHES[switches], local_window=4))
    torch.manual_seed(0)
    model = getattr(lab, cls)(cfg)
    with torch.no_grad():  # non-trivial norms and biases, so every parameter shows
        for n, p in model.named_parameters():
            if "LayerNorm" in n or n.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    text = "the cat sat on the [MASK] and then the dog came along to say hello"
    t = assert_steps_are_module_outputs(model, tokenizer, text, "it was happy .")
    names = t.names()
    on = SWITCHES[switches]
    assert ("bert.encoder.final_norm" in names) == ("pre-norm" in on)
    assert ("bert.encoder.layer.0.attention.self.rotary_query" in names) == ("rotary" in on)
    assert ("bert.embeddings.position_embeddings" in names) == ("rotary" not in on)
    act = t.step("bert.encoder.layer.0.intermediate.activation")
    assert act.kind == ("geglu" if "geglu" in on else "gelu")
    if "pre-norm" in on:  # the norm comes before the sub-layer; layer 0 reads the embeddings' norm
        assert "bert.encoder.layer.0.attention.output.LayerNorm" not in names
        i = names.index("bert.encoder.layer.1.attention.output.LayerNorm")
        assert names[i + 1] == "bert.encoder.layer.1.attention.self.query"
    if "no-bias" in on:
        assert "+ b_Q" not in t.step("bert.encoder.layer.0.attention.self.query").formula
    if "local" in on:  # layer 1 is local: a window of 4 keeps 2 tokens either side
        local = t.step("bert.encoder.layer.1.attention.self.masked_scores")
        assert local.kind == "mask_local" and "2 positions" in local.formula
        probs = t.step("bert.encoder.layer.1.attention.self.probs").values
        assert float(probs[:, 0, 3:].abs().max()) == 0.0  # token 0 never sees token 3
        assert t.step("bert.encoder.layer.0.attention.self.masked_scores").kind == "mask"
    explicit = model(torch.tensor([t.input_ids]), torch.tensor([t.token_type_ids]), output_attentions=True)
    for i, m in enumerate(explicit.attentions):
        torch.testing.assert_close(t.step(f"bert.encoder.layer.{i}.attention.self.probs").values, m[0].detach(), **TOL)


def test_a_bert_saved_by_transformers_traces_to_its_own_logits(tmp_path, classroom):
    _, tokenizer = classroom
    cfg = transformers.BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=3,
        intermediate_size=60,
    )
    torch.manual_seed(2)
    theirs = transformers.BertForPreTraining(cfg).eval()
    theirs.save_pretrained(tmp_path)
    model, _ = lab.load(tmp_path)
    t = assert_steps_are_module_outputs(model, tokenizer, *SENTENCE)
    with torch.no_grad():
        out = theirs(input_ids=torch.tensor([t.input_ids]), token_type_ids=torch.tensor([t.token_type_ids]))
    logits = out.prediction_logits[0, t.predicted_positions]
    torch.testing.assert_close(t.step("cls.predictions.decoder").values, logits, **TOL)
    torch.testing.assert_close(t.step("cls.seq_relationship").values, out.seq_relationship_logits[0], **TOL)


def test_the_catalogue_is_written_for_each_model(classroom):
    model, _ = classroom
    texts = catalogue(model.config)
    assert set(texts) == set(STEPS) | {"rotary_local"}
    assert fill(texts["scores"]["formula"], 9, 1) == "S_h = Q_h K_hᵀ / √64  (2 heads of 9×9)"
    assert fill(texts["position_embeddings"]["formula"], 9, 1).startswith("E_pos = W_pos[0 … 8]")
    bare = catalogue(
        BertConfig(**changed({"vocab_size": 99, "hidden_size": 32, "num_attention_heads": 4}, ["no-bias"]))
    )
    assert bare["query"]["formula"].startswith("Q = X W_Q  (")
    assert "+ β" not in bare["layer_norm"]["formula"]


def test_json_holds_every_value(classroom):
    model, tokenizer = classroom
    t = explore.trace(model, tokenizer, "the cat sat .")
    j = t.to_json()
    assert [s["name"] for s in j["steps"]] == t.names()
    for s, step in zip(j["steps"], t.steps):
        assert s["shape"] == list(step.shape) and len(s["values"]) == step.values.numel()
    assert j["predicted_positions"] == list(range(len(t.tokens)))  # no [MASK]: every token


def test_bad_input_is_told_what_is_wrong(classroom):
    model, tokenizer = classroom
    with pytest.raises(ValueError, match="empty|nothing"):
        explore.trace(model, tokenizer, "   ")
    with pytest.raises(ValueError, match="21 \\[MASK\\] tokens: at most 20"):
        explore.trace(model, tokenizer, " ".join(["[MASK]"] * 21))
    with pytest.raises(KeyError, match="no step 'nope'"):
        explore.trace(model, tokenizer, "a cat .").step("nope")
    long = explore.trace(model, tokenizer, "word " * 600)
    assert long.truncated > 0 and len(long.tokens) == model.config.max_position_embeddings


def test_a_modernbert_saved_by_transformers_traces_to_its_own_logits(tmp_path, classroom):
    """ModernBERT (every switch on, no segments, no position table) read through lab.modernbert."""
    from tests.test_modernbert import hf_config, scrambled

    _, tokenizer = classroom
    torch.manual_seed(3)
    theirs = scrambled(transformers.ModernBertForMaskedLM(hf_config(vocab_size=tokenizer.vocab_size)))
    theirs.save_pretrained(tmp_path)
    model, _ = lab.load(tmp_path)
    text = "the cat sat on the [MASK] and then the dog came along"
    t = assert_steps_are_module_outputs(model, tokenizer, text)
    names = t.names()
    assert "bert.embeddings.sum" not in names and "bert.embeddings.token_type_embeddings" not in names
    assert {t.step(f"bert.encoder.layer.{i}.attention.self.masked_scores").kind for i in range(4)} == {
        "mask",
        "mask_local",
    }
    with torch.no_grad():
        logits = theirs(input_ids=torch.tensor([t.input_ids])).logits[0, t.predicted_positions]
    torch.testing.assert_close(t.step("cls.predictions.decoder").values, logits, **TOL)


def test_the_command_line_lists_the_steps_and_writes_json(tmp_path, capsys):
    from lab.__main__ import main

    model = str(ROOT / "models" / "bert-lab-classroom")
    assert main(["trace", "--model", model, "the cat sat on the [MASK] .", "it was happy ."]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[CLS] the cat sat on the [MASK] . [SEP]")
    assert out[-1].split()[0] == "cls.seq_relationship.softmax"
    assert any("S_h = Q_h K_hᵀ / √64" in line for line in out)
    assert main(["trace", "--model", model, "a cat .", "--json", str(tmp_path / "t.json")]) == 0
    steps = json.loads((tmp_path / "t.json").read_text())["steps"]
    assert steps[0]["name"] == "bert.embeddings.word_embeddings" and len(steps[0]["values"]) == 5 * 128
    assert main(["trace", "--model", model, "   "]) == 2  # a message, not a traceback
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize(("act", "written"), [("gelu", "GELU(x) = x Φ(x)"), ("gelu_new", "tanh"), ("relu", "ReLU")])
def test_the_heads_activation_is_written_as_the_model_computes_it(classroom, act, written):
    _, tokenizer = classroom
    cfg = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=4)
    cfg.hidden_act = act
    t = explore.trace(lab.BertForMaskedLM(cfg), tokenizer, "the cat sat on the [MASK] .")
    assert written in t.step("cls.predictions.transform.activation").formula
    assert t.step("bert.encoder.layer.0.intermediate.activation").kind == {"gelu_new": "gelu_tanh"}.get(act, act)
