"""lab.data.tag_decoding's IOB2-constrained decoding: iob2_viterbi finds the most probable tag
sequence that IOB2 allows (checked against every sequence, by brute force), and
decode_tags(decoding="viterbi") uses it for IOB2 labels only."""

import itertools

import numpy as np
import pytest
import torch

import lab
from lab.data import tag_decoding, tagging

NER = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def valid(tags):
    """IOB2: an I-X only after B-X or I-X."""
    before = "O"
    for tag in tags:
        if tag.startswith("I-") and before[2:] != tag[2:]:
            return False
        before = tag
    return True


@pytest.mark.parametrize("seed", range(30))
def test_viterbi_is_the_best_valid_sequence(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    log_probs = np.log(rng.dirichlet(np.ones(len(NER)) * 0.5, size=n))  # (n, K)
    path = tag_decoding.iob2_viterbi(log_probs, NER)
    tags = [NER[k] for k in path]
    assert len(path) == n and valid(tags)
    best = max(
        (seq for seq in itertools.product(range(len(NER)), repeat=n) if valid([NER[k] for k in seq])),
        key=lambda seq: sum(log_probs[t, k] for t, k in enumerate(seq)),
    )
    score = sum(log_probs[t, k] for t, k in enumerate(path))
    assert score == pytest.approx(sum(log_probs[t, k] for t, k in enumerate(best)))
    argmax = log_probs.argmax(1).tolist()
    if valid([NER[k] for k in argmax]):  # nothing to repair: the same as argmax
        assert path == argmax


def test_viterbi_checks_its_input():
    assert tag_decoding.iob2_viterbi(np.zeros((0, 5)), NER) == []
    with pytest.raises(ValueError, match="for 5 labels"):
        tag_decoding.iob2_viterbi(np.zeros((3, 4)), NER)


def test_decode_tags_repairs_what_argmax_breaks():
    """Argmax reads "O I-LOC B-PER I-LOC"; Viterbi turns the orphan I-LOC into B-LOC and the
    broken "B-PER I-LOC" into a whole entity, and keeps each word's probabilities honest."""
    tok = lab.Tokenizer(
        {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d"])}
    )
    (feature,) = tagging.make_tag_features([["a", "b", "c", "d"]], tok, None, 16, 8)
    probs = torch.tensor(
        [  # O, B-LOC, I-LOC, B-PER, I-PER
            [0.90, 0.02, 0.04, 0.02, 0.02],
            [0.25, 0.30, 0.35, 0.05, 0.05],  # argmax I-LOC after O: ill-formed
            [0.05, 0.05, 0.05, 0.80, 0.05],
            [0.05, 0.05, 0.50, 0.05, 0.35],  # argmax I-LOC after B-PER: ill-formed
        ]
    )
    logits = torch.zeros(len(feature), len(NER))
    logits[1:5] = probs.log()  # [CLS] a b c d [SEP]: words at positions 1..4
    (argmax,) = tag_decoding.decode_tags([feature], [logits], NER)
    (best,) = tag_decoding.decode_tags([feature], [logits], NER, decoding="viterbi")
    assert [w.tag for w in argmax] == ["O", "I-LOC", "B-PER", "I-LOC"]
    assert [w.tag for w in best] == ["O", "B-LOC", "B-PER", "I-PER"]
    assert best[1].probability == pytest.approx(0.30) and (best[1].runner_up, best[1].runner_up_probability) == (
        "I-LOC",
        pytest.approx(0.35),
    )
    assert best[0] == argmax[0] and best[2].tag == argmax[2].tag
    # tags that are not IOB2 (parts of speech): nothing to constrain, the same as argmax
    pos = ["NOUN", "VERB", "DET", "ADJ", "PROPN"]
    assert tag_decoding.decode_tags([feature], [logits], pos, "viterbi") == tag_decoding.decode_tags(
        [feature], [logits], pos
    )
    with pytest.raises(ValueError, match="decoding must be one of argmax, viterbi"):
        tag_decoding.decode_tags([feature], [logits], NER, decoding="beam")
