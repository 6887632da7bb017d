"""lab.studies.feature_tagging: the feature-based approach (the paper's Table 7) on a tiny random encoder.

Synthetic IOB2 sentences written by the tests, where who is a person and what is a place is
decided by the word itself: a tagger that reads the words' vectors at all gets them right.
"""

import random

import pytest
import torch
from conftest import tiny_config

import lab
from lab.data.tagged_files import label_list, read_tagged
from lab.data.tagging import collate_tag_features, make_tag_features
from lab.inspect.features import WordFeatures, cache_word_features, torch_threads
from lab.studies import feature_tagging as ft

PEOPLE = "anna boris clara david".split()
PLACES = "paris lima oslo rome".split()
OTHER = "went to see the met in and then walked home with".split()
LAYERS = 5  # an odd depth: "last four" = layers 2-5, "all" = 1-5


def sentence(rng, n):
    words, tags = [], []
    while len(words) < n:
        kind = rng.choice(["per", "loc", "loc2", "o", "o", "o"])
        if kind == "per":
            words, tags = words + [rng.choice(PEOPLE)], tags + ["B-PER"]
        elif kind == "loc":
            words, tags = words + [rng.choice(PLACES)], tags + ["B-LOC"]
        elif kind == "loc2":  # "new york": a two-word place
            words, tags = words + ["new", "york"], tags + ["B-LOC", "I-LOC"]
        else:
            words, tags = words + [rng.choice(OTHER)], tags + ["O"]
    return words, tags


def write_iob2(path, n, seed, long_every=0):
    rng = random.Random(seed)
    blocks = []
    for i in range(n):
        words, tags = sentence(rng, 40 if long_every and i % long_every == 0 else rng.randint(3, 10))
        blocks.append("".join(f"{k}\t{w}\t{t}\n" for k, (w, t) in enumerate(zip(words, tags), 1)))
    path.write_text("\n".join(blocks))
    return read_tagged(path)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread here: a BiLSTM's many small steps on two threads of cores shared with other
    work ran many times slower (each step waits for the other thread), as benchmarks/table7.py found."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("feature-tagging")
    train = write_iob2(folder / "train.iob2", 160, 0)
    test = write_iob2(folder / "test.iob2", 40, 1, long_every=8)  # every 8th longer than a 24-position window
    tok = lab.Tokenizer.train(
        iter([" ".join(PEOPLE + PLACES + OTHER + ["new", "york"])] * 50), vocab_size=120, show_progress=False
    )
    torch.manual_seed(0)
    encoder = lab.BertModel(tiny_config(vocab_size=tok.vocab_size, num_hidden_layers=LAYERS))
    window = dict(max_seq_length=24, doc_stride=8)
    train_f = cache_word_features(encoder, tok, train.sentences, store_dtype=torch.float32, **window)
    test_f = cache_word_features(encoder, tok, test.sentences, store_dtype=torch.float32, **window)
    labels = label_list([s.tags for s in train.sentences + test.sentences])
    return dict(encoder=encoder, tok=tok, train=train, test=test, train_f=train_f, test_f=test_f, labels=labels)


def test_the_cache_has_one_row_per_word_from_every_layer(setup):
    test, test_f, enc = setup["test"], setup["test_f"], setup["encoder"]
    H = enc.config.hidden_size
    assert test_f.vectors.shape == (test.num_words, LAYERS + 1, H)
    assert test_f.num_layers == LAYERS and test_f.hidden_size == H
    assert test_f.lengths() == [len(s.words) for s in test.sentences]
    assert test_f.tags == [s.tags for s in test.sentences]
    assert max(test_f.lengths()) >= 40  # the long sentences were read in several windows, no word dropped
    # a short sentence (one window): its rows are exactly the first sub-tokens' hidden states
    i = next(k for k, s in enumerate(test.sentences) if len(s.words) < 8)
    (feature,) = make_tag_features([test.sentences[i].words], setup["tok"], None, 24, 8)
    batch = collate_tag_features([feature], setup["tok"].pad_token_id)
    assert enc.training  # cache_word_features read it in eval mode (no dropout) and left its mode as it was
    with torch.no_grad():
        states = torch.stack(enc.eval()(**batch, output_hidden_states=True).hidden_states, dim=2)[0]  # (T, L+1, H)
    enc.train()
    firsts = [p for p, w in enumerate(feature.word_index) if w >= 0]
    torch.testing.assert_close(test_f.sentence(i), states[firsts], atol=1e-5, rtol=1e-5)


def test_feature_choices_and_their_input_sizes(setup):
    H, K = setup["encoder"].config.hidden_size, len(setup["labels"])
    choices = {c.name: c for c in ft.feature_choices(LAYERS)}
    assert list(choices) == [
        "Embeddings",
        "Second-to-Last Hidden",
        "Last Hidden",
        "Weighted Sum Last Four Hidden",
        "Concat Last Four Hidden",
        f"Weighted Sum All {LAYERS} Layers",
    ]
    assert choices["Embeddings"].layers == (0,)
    assert choices["Second-to-Last Hidden"].layers == (4,) and choices["Last Hidden"].layers == (5,)
    assert choices["Concat Last Four Hidden"].layers == (2, 3, 4, 5)
    assert choices[f"Weighted Sum All {LAYERS} Layers"].layers == (1, 2, 3, 4, 5)
    assert [c.layers for c in ft.feature_choices(12)][3] == (9, 10, 11, 12)  # BERT-base: the paper's 9-12
    x = setup["test_f"].vectors[:6].unsqueeze(0)  # (1, 6 words, L+1, H)
    for choice in choices.values():
        tagger = ft.FeatureTagger(choice, H, K, ft.TaggerConfig(kind="linear"))
        combined = tagger.combine(x[:, :, list(choice.layers)])
        assert combined.shape == (1, 6, choice.input_size(H))
        assert choice.input_size(H) == (4 * H if choice.combine == "concat" else H)
        assert tagger(x[:, :, list(choice.layers)], torch.tensor([6])).shape == (1, 6, K)


def test_weighted_sums_are_a_softmax_scalar_mix(setup):
    H = setup["encoder"].config.hidden_size
    choice = ft.feature_choices(LAYERS)[3]  # Weighted Sum Last Four Hidden
    tagger = ft.FeatureTagger(choice, H, 3, ft.TaggerConfig())
    torch.testing.assert_close(tagger.mix_weights(), torch.full((4,), 0.25))  # equal at the start
    with torch.no_grad():
        tagger.mix_logits.copy_(torch.tensor([2.0, -1.0, 0.5, 0.0]))
        tagger.gamma.fill_(1.5)
    w = tagger.mix_weights()
    assert (w > 0).all() and torch.isclose(w.sum(), torch.tensor(1.0))
    torch.testing.assert_close(w, torch.softmax(torch.tensor([2.0, -1.0, 0.5, 0.0]), 0))
    x = torch.randn(2, 3, 4, H)  # (B, S, k, H)
    expected = 1.5 * sum(w[j] * x[:, :, j] for j in range(4))
    torch.testing.assert_close(tagger.combine(x), expected)
    assert ft.FeatureTagger(ft.feature_choices(LAYERS)[4], H, 3, ft.TaggerConfig()).mix_weights() is None


def test_a_row_for_every_choice_with_an_interval(setup):
    config = ft.TaggerConfig(kind="linear", epochs=1, lr=1e-2)
    rows = ft.feature_based_rows(setup["train_f"], setup["test_f"], setup["labels"], config, n_resamples=200)
    assert [r.name for r in rows] == [c.name for c in ft.feature_choices(LAYERS)]
    for row in rows:
        assert 0.0 <= row.low <= row.f1 <= row.high <= 1.0
        assert set(row.per_type) <= {"LOC", "PER"} and row.seconds > 0
        assert len(row.predictions) == len(setup["test"].sentences)
        assert (row.mix_weights is not None) == row.name.startswith("Weighted Sum")
        if row.mix_weights:
            assert abs(sum(row.mix_weights) - 1) < 1e-5
    assert rows[4].layer_text == "2-5" and rows[0].layer_text == "0"


@pytest.mark.parametrize("kind", ["linear", "bilstm"])
def test_a_learnable_task_reaches_high_f1_on_the_last_layer(setup, kind):
    last = ft.feature_choices(LAYERS)[2]
    config = ft.TaggerConfig(kind=kind, epochs=30, lr=ft.DEFAULT_LR[kind] * 3, lstm_hidden=16, dropout=0.0)
    (row,) = ft.feature_based_rows(
        setup["train_f"], setup["test_f"], setup["labels"], config, choices=[last], n_resamples=200
    )
    assert row.f1 > 0.9, row


def test_paired_difference():
    gold = [["B-PER", "O"], ["B-LOC", "I-LOC"], ["O", "O"]] * 10
    none = [["O"] * len(g) for g in gold]
    same = ft.paired_difference(gold, gold, gold)
    assert same.estimate == same.low == same.high == 0.0
    better = ft.paired_difference(gold, gold, none, n_resamples=200)
    assert better.estimate == 1.0 and better.low == better.high == 1.0  # F1 1 against 0 on every draw
    with pytest.raises(ValueError, match="same"):
        ft.paired_difference(gold, gold, none[:-1])


def test_score_choice_gives_f1_for_entities_and_accuracy_for_plain_tags(setup):
    config = ft.TaggerConfig(kind="linear", epochs=2, lr=1e-2)
    score = ft.score_choice(setup["train_f"], setup["test_f"], setup["labels"], "Last Hidden", config, n_resamples=200)
    assert score.metric == "f1" and score.choice.layers == (LAYERS,)
    assert 0.0 <= score.low <= score.value <= score.high <= 1.0 and score.seconds > 0
    (row,) = ft.feature_based_rows(
        setup["train_f"], setup["test_f"], setup["labels"], config, [ft.feature_choices(LAYERS)[2]], n_resamples=200
    )
    assert (row.f1, row.predictions) == (score.value, score.predictions)  # the same tagger, the same seed
    again = ft.ChoiceScore.from_row(row)
    assert (again.choice, again.metric, again.value, again.low, again.high) == (
        score.choice,
        "f1",
        score.value,
        score.low,
        score.high,
    )
    # plain tags (parts of speech): the same words, tagged PER / LOC / OTHER, scored by accuracy
    plain = [
        [[t[2:] if t != "O" else "OTHER" for t in tags] for tags in features.tags]
        for features in (setup["train_f"], setup["test_f"])
    ]
    train_f = WordFeatures(setup["train_f"].vectors, setup["train_f"].offsets, plain[0])
    test_f = WordFeatures(setup["test_f"].vectors, setup["test_f"].offsets, plain[1])
    labels = label_list(plain[0] + plain[1], scheme="tags")
    pos = ft.score_choice(train_f, test_f, labels, ft.feature_choices(LAYERS)[2], config, n_resamples=200)
    assert pos.metric == "accuracy" and 0.0 <= pos.low <= pos.value <= pos.high <= 1.0
    with pytest.raises(ValueError, match="no feature choice 'Last Four'"):
        ft.score_choice(train_f, test_f, labels, "Last Four", config)


def test_the_papers_table7_as_printed():
    rows = {system: (dev, test) for _, system, dev, test in ft.PAPER_TABLE7}
    assert rows["BERT-BASE"] == (96.4, 92.4) and rows["BERT-LARGE"] == (96.6, 92.8)
    assert rows["Concat Last Four Hidden"] == (96.1, None) and len(rows) == 8
    assert ft.paper_dev_f1("Weighted Sum All 6 Layers") == 95.5 and ft.paper_dev_f1("Embeddings") == 91.0
    assert ft.paper_dev_f1("Something else") is None
    assert "0.3 F1 behind" in ft.PAPER_TABLE7_READING and "two-layer" in ft.PAPER_TABLE7_SETUP


def _row(name, layers, predictions, gold):
    from lab.data.tag_metrics import entity_scores

    f1 = entity_scores(gold, predictions).f1
    return ft.FeatureRow(name, layers, f1, f1, f1, {}, 0.0, predictions=predictions)


def test_table7_patterns_read_paired_intervals():
    # 40 sentences of one person each; a row is right on the first k of them
    gold = [["B-PER", "O"]] * 40

    def right(k):
        return [["B-PER", "O"]] * k + [["O", "O"]] * (40 - k)

    def rows_right(*ks):
        names = [c.name for c in ft.feature_choices(6)]
        return [_row(name, c.layers, right(k), gold) for name, c, k in zip(names, ft.feature_choices(6), ks)]

    # Embeddings, Second-to-Last, Last, Weighted Sum Last Four, Concat Last Four, Weighted Sum All
    rows = rows_right(30, 20, 20, 38, 40, 10)
    patterns = {p.key: p for p in ft.table7_patterns(rows, gold, finetuned=right(40))}
    assert list(patterns) == [
        "best",
        "concat > last",
        "second-to-last > last",
        "context > embeddings",
        "features ~ fine-tuning",
    ]
    assert patterns["best"].holds is None  # best, but only 2 sentences ahead of the weighted sum
    assert patterns["best"].low <= patterns["best"].estimate <= patterns["best"].high
    assert patterns["concat > last"].holds is True and patterns["concat > last"].low > 0
    assert patterns["second-to-last > last"].holds is None and patterns["second-to-last > last"].estimate == 0
    assert patterns["context > embeddings"].holds is False  # the weighted sum of all layers is below Embeddings
    assert "Weighted Sum All 6 Layers" in patterns["context > embeddings"].text
    fine = patterns["features ~ fine-tuning"]
    assert fine.holds is True and fine.estimate == 0.0 and "96.4 against 96.1" in fine.text  # as good as the best
    behind = ft.table7_patterns(rows_right(30, 20, 20, 38, 5, 10), gold)
    assert behind[0].holds is False and len(behind) == 4  # concat clearly below the best; no fine-tuning row
    far = ft.table7_patterns(rows_right(30, 20, 20, 25, 20, 10), gold, finetuned=gold)[-1]
    assert far.holds is False and far.low > 0.01  # fine-tuning clearly more than a point ahead
    with pytest.raises(ValueError, match="missing"):
        ft.table7_patterns(rows[1:], gold)


def test_torch_threads_sets_and_restores(setup):
    before = torch.get_num_threads()
    with torch_threads(2):
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), torch_threads(2):
        raise RuntimeError("a failing step")
    assert torch.get_num_threads() == before  # restored on errors too
    # a tagger trained on a set number of threads equals one trained as set: threads change no result here
    config = ft.TaggerConfig(kind="linear", epochs=1, lr=1e-2)
    choice = [ft.feature_choices(LAYERS)[2]]
    args = (setup["train_f"], setup["test_f"], setup["labels"])
    (a,) = ft.feature_based_rows(*args, config, choice, n_resamples=50)
    (b,) = ft.feature_based_rows(
        *args, ft.TaggerConfig(kind="linear", epochs=1, lr=1e-2, threads=1), choice, n_resamples=50
    )
    assert a.predictions == b.predictions and torch.get_num_threads() == before
