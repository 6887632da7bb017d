"""The lesson plan's statements about what the page shows, computed (docs/teaching/lesson-plan.md):
each test reads a statement from the plan, computes it through the dashboard's own handlers (or the
`lab.explore` call behind them) on the bundled models, offline, and fails when the text and the
page disagree. Fix the plan's text to what is computed, not the other way round."""

import re

import pytest

import lab
from lab import explore
from tests.conftest import BUNDLED, ROOT

PLAN = (ROOT / "docs" / "teaching" / "lesson-plan.md").read_text(encoding="utf-8")
TEXT = re.sub(r"\s+", " ", PLAN)  # one line: statements wrap
CLOSE = 0.01  # a probability or score stated to two decimals may differ by this much (rounding, bf16)


@pytest.fixture(scope="module")
def dash():
    from dashboard import Dashboard, Settings

    return Dashboard(Settings())


@pytest.fixture(scope="module")
def classroom():
    return lab.load(ROOT / BUNDLED)


def stated(pattern: str) -> re.Match:
    found = re.search(pattern, TEXT)
    assert found, f"the lesson plan no longer says {pattern!r}: update this test with it"
    return found


def qa_contexts() -> dict:
    """The dashboard's two QA paragraphs, as scripts/teaching_prompts.py holds them
    (tests/test_teaching.py checks them)."""
    from scripts import teaching_prompts

    return teaching_prompts.CONTEXTS


def test_why_names_the_words_the_answer_rests_on(dash):
    """The *Why?* step: the words the page shades most, with their scores, in its order."""
    said = stated(
        r"the answer rests most on “(\S+)” \(\+([\d.]+)\) and “(\S+)” \(\+([\d.]+)\) on its left, and less on "
        r"“(\S+)” \(\+([\d.]+)\) on its right"
    )
    from dashboard.common import WHY_STEPS, status_detail

    text = "he opened the [MASK] and walked into the garden ."
    *_, status = dash.tab("mlm").why(BUNDLED, text)  # the page's view
    model, tok = dash.store.get(BUNDLED)
    result = explore.attributions(model, tok, text, steps=WHY_STEPS, task="fill_mask")  # the same call
    words = sorted(((s, t) for t, s in zip(result.tokens, result.scores) if not t.startswith("[")), reverse=True)
    (s1, w1), (s2, w2), (s3, w3) = words[:3]
    assert (said[1], said[3], said[5]) == (w1, w2, w3), words[:3]
    for text, score in ((said[2], s1), (said[4], s2), (said[6], s3)):
        assert abs(float(text) - score) <= CLOSE, (text, score)
    mask = result.tokens.index("[MASK]")
    assert f"most for it: “{w1}” ({s1:+.2f})" in status_detail(status)
    assert result.tokens.index(w2) < mask < len(result.tokens) - 1 - result.tokens[::-1].index(w3)  # left, right


def test_the_masked_words_and_their_probabilities(classroom):
    model, tok = classroom
    key = stated(r'"door", about ([\d.]+); with "read it": "door" again \(about ([\d.]+)\)')
    for sentence, p in (
        ("he opened the [MASK] and walked into the garden .", key[1]),
        ("she opened the [MASK] and read it .", key[2]),
    ):
        (best, prob), *_ = explore.fill_mask(model, tok, sentence)[0]
        assert best == "door" and abs(prob - float(p)) <= CLOSE, (sentence, best, prob)
    due = stated(r'"(\w+)" \(about ([\d.]+)\)\. "paris" is not in the vocabulary: `([^`]+)`')
    (best, prob), *_ = explore.fill_mask(model, tok, "the capital of france is [MASK] .")[0]
    assert best == due[1] and abs(prob - float(due[2])) <= CLOSE
    assert " ".join(tok.tokenize("paris")) == due[3]
    pieces = stated(r"\*unbelievably\* \(`([^`]+)`\)")[1]
    assert " ".join(tok.tokenize("unbelievably")) == pieces


def test_next_sentence_probabilities(classroom):
    from dashboard.help import NSP_EXAMPLES

    model, tok = classroom
    said = stated(r"About ([\d.]+) for the first example; about ([\d.]+) for the Collins/Jane pair")
    collins = ("mr . collins proposed to elizabeth .", "jane was ill at netherfield for several days .")
    assert collins[0] in TEXT and collins[1] in TEXT
    for pair, p in ((NSP_EXAMPLES[0], said[1]), (collins, said[2])):
        assert abs(explore.next_sentence(model, tok, *pair) - float(p)) <= CLOSE, pair


def test_the_labels_and_answers_the_plan_quotes(dash):
    """Classify's and Question Answering's answers as the plan quotes them (its 36-44 step)."""
    step = stated(r"### 36-44: fine-tuning.*?### 44-48")[0]
    labels = [
        ("minilm-sst2", "a charming and often moving film .", "positive"),
        ("minilm-sst2", "boring , predictable and far too long .", "negative"),
        ("minilm-sst2", "not bad at all .", "positive"),
        ("bert-lab-sst2", "not bad at all .", "negative"),
        ("bert-lab-sst2", "this is not a good movie .", "negative"),
        ("minilm-sst2", "i have never been so bored in my life .", "positive"),
    ]
    for model, sentence, label in labels:
        assert f"`{sentence}`" in step and label in step, sentence
        probs, _ = dash.tab("classify").classify(f"models/{model}", sentence)
        assert max(probs, key=probs.get) == label, (model, sentence, probs)
    CONTEXTS = qa_contexts()
    for model, question, answer in (
        ("minilm-squad", "Who built the Nautilus?", "Captain Nemo"),
        ("minilm-squad", "What is the capital of France?", "Longbourn"),
    ):
        assert f'"{question}"' in step and f'"{answer}"' in step
        context = CONTEXTS["Nautilus" if "Nautilus" in question else "Longbourn"]
        *_, status = dash.tab("qa").answer(f"models/{model}", question, context)
        assert f"answer: “{answer}”" in status, status


def test_the_attention_heads_the_plan_names(classroom):
    """Answer key 7: on the tab's first pair, the previous-token and next-token heads of layer 1,
    and the head whose silencing raises the loss most."""
    from dashboard.help import MLM_EXAMPLES, NSP_EXAMPLES

    model, tok = classroom
    said = stated(
        r"layer 1 head 1 attends mostly to the previous token \(about ([\d.]+)\), layer 1 head 0 to the next "
        r"\(about ([\d.]+)\)\. Silencing layer 1 head 1 raises the loss the most \(by about (\d+) nats"
    )
    stats = explore.attention(model, tok, *NSP_EXAMPLES[0]).head_stats()
    assert abs(float(stats["prev"][1, 1]) - float(said[1])) <= CLOSE
    assert abs(float(stats["next"][1, 0]) - float(said[2])) <= CLOSE
    result = explore.ablate_heads(model, tok, MLM_EXAMPLES[1][0])
    worst = divmod(int(result.effect.argmax()), result.effect.shape[1])
    assert worst == (1, 1) and round(float(result.effect.max())) == int(said[3]), (worst, result.effect.max())


def test_the_models_sizes_the_plan_states(classroom):
    """The 0-5 and 5-10 steps and answer 5: the encoder's parameters, the card's count with the
    pre-training heads, the ratio to BERT-base, the vocabulary."""
    model, tok = classroom
    counts = model.parameter_counts()
    said = stated(
        r"5\. ([\d.]+)M encoder parameters \(the card: ([\d.]+)M with the MLM and NSP heads\); "
        r"BERT-base's 110M is about (\d+) times more"
    )
    assert f"{counts.encoder / 1e6:.1f}" == said[1] and f"{counts.total / 1e6:.1f}" == said[2], counts
    assert abs(110e6 / counts.encoder - int(said[3])) < 5, counts  # "about"
    card = (ROOT / BUNDLED / "README.md").read_text(encoding="utf-8")
    assert f"{said[2]}M" in card  # the card says the same total
    assert stated(r"([\d.]+)M parameters in the encoder against BERT-base's 110M")[1] == said[1]
    assert f"{tok.vocab_size:,}" == stated(r"not even in its ([\d,]+)-word vocabulary")[1]


def test_the_next_sentence_examples_the_plan_describes(classroom):
    """18-24: the tab's true continuation scores high, Verne followed by Austen near 0."""
    from dashboard.help import NSP_EXAMPLE_LABELS, NSP_EXAMPLES

    model, tok = classroom
    stated(r"a true continuation scores high, Verne followed by Austen scores near 0")
    verne = next(i for i, (a, b) in enumerate(NSP_EXAMPLES) if "nautilus" in a and "netherfield" in b)
    assert "NotNext" in NSP_EXAMPLE_LABELS[verne]
    assert explore.next_sentence(model, tok, *NSP_EXAMPLES[verne]) < 0.1
    assert explore.next_sentence(model, tok, *NSP_EXAMPLES[0]) > 0.5 and "IsNext" in NSP_EXAMPLE_LABELS[0]


def test_the_training_replay_the_plan_describes():
    """24-29 and answer 8: the bundled model's checkpoints on the tab's sentence: the most frequent
    tokens at the steps named, and the step from which "door" leads, rising to about 0.5."""
    said = stated(
        r"at steps (\d+) and (\d+) `(\S)` and `(\w+)` \(the most frequent tokens: the \*unigram plateau\*\); "
        r"from step ([\d,]+) on \"door\", rising to about ([\d.]+) at the end"
    )
    assert stated(r"\"door\" first leads at step ([\d,]+)")[1] == said[5]
    steps = dict(explore.checkpoint_predictions(ROOT / BUNDLED, "he opened the [MASK] and walked into the garden ."))
    best = {step: preds[0][0] for step, preds in steps.items()}  # step -> (token, probability) of the best
    assert best[int(said[1])][0] == said[3] and best[int(said[2])][0] == said[4], best
    door = int(said[5].replace(",", ""))
    assert best[door][0] == "door" and all(best[s][0] == "door" for s in best if s >= door), best
    assert all(best[s][0] != "door" for s in best if s < door), best  # first leads there
    assert abs(best[max(best)][1] - float(said[6])) <= 0.1, best  # "about"


def test_the_qa_scores_the_plan_quotes():
    """36-44: held-out F1 of the two QA models, as their cards state them (the cards' tables are
    re-measured by tests/test_bundled.py)."""
    said = stated(r"held-out F1 ([\d.]+) vs ([\d.]+)\)")
    for model, f1 in (("minilm-squad", said[1]), ("bert-lab-squad", said[2])):
        card = (ROOT / "models" / model / "README.md").read_text(encoding="utf-8")
        assert re.search(rf"\| F1 \| {re.escape(f1)} \|", card), model


def test_the_tiny_qa_model_runs_on_to_the_end_of_the_paragraph():
    """36-44: bert-lab-squad "starts at the right place and runs on to the end of the paragraph"."""
    stated(r"it starts at the right place and runs on to the end of the paragraph")
    context = qa_contexts()["Nautilus"]
    model, tok = lab.load(ROOT / "models" / "bert-lab-squad")
    best = explore.answer(model, tok, "Who built the Nautilus?", context).spans[0]
    right = context.index("Captain Nemo")
    assert right <= best.start <= right + len("Captain "), best  # the right place
    assert context[best.end :].strip() in ("", "."), best  # to the end of the paragraph


def test_the_step_by_step_segment(classroom):
    """The 10-minute Step by step segment: its sentence pair, sizes and answers, computed by
    explore.trace (what the browser edition's view computes, tests/test_web_trace.py), and the
    view's own opening example is that pair."""
    model, tok = classroom
    said = stated(r"The view opens on the Masked LM tab's sentence, `([^`]+)`, with sentence B `([^`]+)`: (\d+) tokens")
    t = explore.trace(model, tok, said[1], said[2])
    assert len(t.tokens) == int(said[3])
    steps = (ROOT / "web" / "src" / "steps.js").read_text(encoding="utf-8")
    assert f'a: "{said[1]}"' in steps and f'b: "{said[2]}"' in steps
    probs = t.step("cls.predictions.softmax").values[0]
    word, p = stated(r'the Masked LM block: "(\w+)" at ([\d.]+)%').groups()
    assert tok.convert_ids_to_tokens(int(probs.argmax())) == word and f"{100 * float(probs.max()):.1f}" == p
    is_next = float(t.step("cls.seq_relationship.softmax").values[0])
    assert f"{100 * is_next:.1f}" == stated(r"P\(IsNext\) ([\d.]+)%")[1]
    scores = t.step("bert.encoder.layer.0.attention.self.scores")
    d = model.config.head_size
    found = stated(r"Q Kᵀ / √(\d+) = Q Kᵀ / (\d+) for each of (\d+) heads, a (\d+) × (\d+) map")
    assert [int(x) for x in found.groups()] == [d, int(d**0.5), *scores.shape]
    widen = stated(r"widens each token from (\d+) to (\d+) numbers")
    wide = t.step("bert.encoder.layer.0.intermediate.dense").shape[1]
    assert (int(widen[1]), int(widen[2])) == (t.step("bert.encoder.layer.0.attention.self.query").shape[1], wide)
    assert stated(r"scores all ([\d,]+) words")[1] == f"{model.config.vocab_size:,}"
    stops = (ROOT / "web" / "src" / "tour_stops.js").read_text(encoding="utf-8").count("title:")
    assert stated(r"Take the tour\*\*: (\w+) stops")[1] == {12: "twelve", 13: "thirteen", 14: "fourteen"}[stops]
