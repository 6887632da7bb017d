"""lab.feature_tagging: the feature-based approach (the paper's Table 7) on a tiny random encoder.

Synthetic IOB2 sentences written by the tests, where who is a person and what is a place is
decided by the word itself: a tagger that reads the words' vectors at all gets them right.
"""

import random

import pytest
import torch
from conftest import tiny_config

import lab
from lab import feature_tagging as ft
from lab.tagging import collate_tag_features, label_list, make_tag_features, read_tagged

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
    train_f = ft.cache_word_features(encoder, tok, train.sentences, store_dtype=torch.float32, **window)
    test_f = ft.cache_word_features(encoder, tok, test.sentences, store_dtype=torch.float32, **window)
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
