"""lab.studies.language_models, whole-word masking and the masked-LM perplexity (notebook 2, section 6):
words of pieces, which masking splits them, the two-way piece accuracy, and perplexities whose
values are known exactly (a uniform guess gives the vocabulary size, a certain one gives 1)."""

import math
from types import SimpleNamespace

import pytest
import torch

import lab
from lab.data.batch import IGNORE_INDEX
from lab.data.instances import SpecialIds, mask_tokens
from lab.studies import language_models as lm
from tests.conftest import tiny_config

TEXT = [
    "the unbelievably tall players were playing in the playground .",
    "she played unbelievably well , and the players cheered .",
    "an unremarkable afternoon became a remarkable evening .",
    "the remarkably quiet playground was empty at night .",
]


@pytest.fixture(scope="module")
def tok():
    # a small vocabulary: the long words are cut into several pieces
    return lab.Tokenizer.train(iter(TEXT * 10), vocab_size=60, show_progress=False)


def _special_with_pieces():
    """ids 5..49 are word starts, 50..99 are ## pieces."""
    return SpecialIds(pad_id=0, cls_id=2, sep_id=3, mask_id=4, vocab_size=100, is_subword=lambda i: i >= 50)


def test_word_spans_group_pieces_and_skip_specials():
    special = _special_with_pieces()
    # [CLS] the un ##believ ##ably cat [SEP] [PAD]
    ids = [2, 10, 11, 60, 61, 12, 3, 0]
    assert lm.word_spans(ids, special) == [(1, 2), (2, 5), (5, 6)]
    assert lm.word_spans(torch.tensor(ids), special) == [(1, 2), (2, 5), (5, 6)]
    # a ## piece after a special token starts a word of its own
    assert lm.word_spans([2, 60, 61, 3], special) == [(1, 3)]


def test_whole_word_masking_never_splits_a_word_and_token_masking_does():
    special = _special_with_pieces()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 100, (400, 40), generator=g)  # about half the tokens are ## pieces
    ids[:, 0], ids[:, -1] = special.cls_id, special.sep_id
    for seed in range(3):
        _, labels = mask_tokens(ids, None, special, torch.Generator().manual_seed(seed), whole_word=True)
        counts = lm.masking_counts(ids, labels, special)
        assert counts.predicted > 1000 and counts.multi_piece_words > 1000
        assert counts.words_split == 0 and counts.in_split_words == 0 and counts.split_share == 0.0
    _, labels = mask_tokens(ids, None, special, torch.Generator().manual_seed(0))
    counts = lm.masking_counts(ids, labels, special)
    assert counts.words_split > 100 and 0 < counts.in_split_words <= counts.predicted


def test_count_masking_and_compare_masking_on_text(tok):
    token_level = lm.count_masking(tok, TEXT * 20, whole_word=False)
    whole_word = lm.count_masking(tok, TEXT * 20, whole_word=True)
    assert token_level.multi_piece_words == whole_word.multi_piece_words > 0
    assert token_level.words_split > 0 and whole_word.words_split == 0

    demo = lm.compare_masking(tok, TEXT, min_pieces=3)
    assert len(demo.tokens) == len(demo.token_level) == len(demo.whole_word)
    assert demo.tokens[0] == "[CLS]" and demo.tokens[-1] == "[SEP]"
    special = SpecialIds.from_vocab(tok.vocab)
    spans = lm.word_spans(tok.convert_tokens_to_ids(demo.tokens), special)
    assert any(e - s >= 3 for s, e in spans)  # the sentence has a 3+-piece word

    def hidden(shown, s, e):
        return sum(t == "[MASK]" for t in shown[s:e])

    # token-level: some word is half hidden; whole-word (same seed): every word all or nothing
    assert any(0 < hidden(demo.token_level, s, e) < e - s for s, e in spans)
    assert all(hidden(demo.whole_word, s, e) in (0, e - s) for s, e in spans)
    assert " ".join(demo.tokens[spans[0][0] : spans[0][1]]) in " ".join(demo.tokens)
    assert all(w in " ".join(demo.tokens) for w in demo.split_words)
    # a text of whole words only: nothing to show
    plain = lab.Tokenizer.train(iter(["a b c d e f g h ."] * 10), vocab_size=40, show_progress=False)
    with pytest.raises(ValueError, match="two or more pieces"):
        lm.compare_masking(plain, ["a b c d e f g h ."])


class _SiblingReader(torch.nn.Module):
    """A stand-in masked LM that is right exactly when one [MASK] is in its row (the rest of
    the word visible) and wrong otherwise; it records what it was shown."""

    def __init__(self, mask_id, vocab_size):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.mask_id, self.vocab_size, self.seen = mask_id, vocab_size, []

    def forward(self, input_ids, attention_mask, mlm_labels):
        self.seen.append((input_ids.clone(), mlm_labels.clone()))
        picked = mlm_labels != IGNORE_INDEX
        labels = mlm_labels[picked]  # (N,)
        one_mask = ((input_ids == self.mask_id).sum(1) == 1)[picked.nonzero()[:, 0]]
        guess = torch.where(one_mask, labels, (labels + 1) % self.vocab_size)
        return SimpleNamespace(mlm_logits=torch.nn.functional.one_hot(guess, self.vocab_size).float())


def test_continuation_piece_accuracy_masks_one_piece_or_the_whole_word(tok):
    special = SpecialIds.from_vocab(tok.vocab)
    reader = _SiblingReader(tok.mask_token_id, tok.vocab_size)
    result = lm.continuation_piece_accuracy(reader, tok, TEXT, batch_size=5, show=3)
    pieces = sum(tok.is_subword(t) for s in TEXT for t in tok.tokenize(s))
    words = sum(e - s > 1 for s_ in TEXT for s, e in lm.word_spans(tok.encode(s_).input_ids, special))
    assert result.pieces == pieces > 5 and result.words == words and result.sentences == len(TEXT)
    assert result.partial == 1.0 and result.whole == 0.0  # siblings visible vs hidden
    assert len(result.partial_correct) == len(result.whole_correct) == pieces
    assert len(result.examples) == 3 and result.examples[0]["piece"].startswith("##")
    # what the model was shown: the scored position is a ## piece and holds [MASK]; in the
    # "whole" rows every piece of its word is [MASK], in the "partial" rows only that one
    rows = [(i, l) for ids, labels in reader.seen for i, l in zip(ids, labels)]
    assert len(rows) == 2 * pieces
    for k, (ids, labels) in enumerate(rows):
        p = int((labels != IGNORE_INDEX).nonzero())
        assert tok.is_subword(int(labels[p])) and int(ids[p]) == tok.mask_token_id
        assert int((ids == tok.mask_token_id).sum()) == 1 if k < pieces else int((ids == tok.mask_token_id).sum()) >= 2


def test_continuation_piece_accuracy_runs_a_real_model(tok):
    torch.manual_seed(0)
    model = lab.BertForMaskedLM(tiny_config(vocab_size=tok.vocab_size))
    result = lm.continuation_piece_accuracy(model, tok, TEXT)
    assert result.pieces > 5 and 0 <= result.whole <= 1 and 0 <= result.partial <= 1
    assert not model.training


def test_perplexity_of_a_uniform_guess_is_the_vocabulary_size(tok):
    V = tok.vocab_size
    score = lm.masked_lm_perplexity(torch.zeros(V), tok, TEXT * 5)
    assert score.predictions > 10 and score.sentences == 20
    assert score.perplexity == pytest.approx(V, rel=1e-5)
    assert score.loss == pytest.approx(math.log(V), rel=1e-6)
    # a model whose MLM head outputs the same logit for every piece is a uniform guess too
    torch.manual_seed(0)
    model = lab.BertForPreTraining(tiny_config(vocab_size=V))
    head = model.cls.predictions
    with torch.no_grad():
        head.transform.LayerNorm.weight.zero_()
        head.transform.LayerNorm.bias.zero_()
        head.bias.zero_()
    model_score = lm.masked_lm_perplexity(model, tok, TEXT * 5)
    assert model_score.perplexity == pytest.approx(V, rel=1e-5)
    assert model_score.predictions == score.predictions  # same seed, same positions


def test_unigram_perplexity_is_known_exactly():
    # one word repeated: the unigram model is certain (perplexity 1) and always right
    tok = lab.Tokenizer.train(iter(["la la la la la la la la ."] * 10), vocab_size=40, show_progress=False)
    sentences = ["la la la la la la la la la la la la la la la la la la la la"] * 8
    unigram = lm.unigram_log_probs(tok, sentences, smoothing=0.0)
    assert unigram.shape == (tok.vocab_size,)
    assert float(unigram.exp().sum()) == pytest.approx(1.0)
    assert int(unigram.argmax()) == tok.convert_tokens_to_ids("la")
    score = lm.masked_lm_perplexity(unigram, tok, sentences)
    assert score.perplexity == pytest.approx(1.0) and score.accuracy == 1.0
    # add-one smoothing: every ordinary piece possible, the special ones never
    smoothed = lm.unigram_log_probs(tok, sentences)
    for special in ("[PAD]", "[CLS]", "[SEP]", "[MASK]"):
        assert smoothed[tok.convert_tokens_to_ids(special)] == float("-inf")
    assert torch.isfinite(smoothed[tok.convert_tokens_to_ids(".")])
    assert 1.0 < lm.masked_lm_perplexity(smoothed, tok, sentences).perplexity < 1.5


def test_perplexity_scores_only_mask_positions_and_is_reproducible(tok):
    a = lm.masked_lm_perplexity(torch.zeros(tok.vocab_size), tok, TEXT * 5, seed=1)
    b = lm.masked_lm_perplexity(torch.zeros(tok.vocab_size), tok, TEXT * 5, seed=1)
    assert a == b
    # about 80% of the 15% chosen tokens become [MASK]: fewer positions than chosen ones
    n_tokens = sum(len(tok.tokenize(s)) for s in TEXT * 5)
    assert 0.05 * n_tokens < a.predictions < 0.2 * n_tokens
    ww = lm.masked_lm_perplexity(torch.zeros(tok.vocab_size), tok, TEXT * 5, seed=1, whole_word=True)
    assert ww.perplexity == pytest.approx(tok.vocab_size, rel=1e-5)
