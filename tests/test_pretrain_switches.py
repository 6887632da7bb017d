"""The paper's own pre-training switches as recipe settings (issue 35, point 1): the masking mix of
Table 8 (MASK / SAME / RND), next-sentence prediction off (Table 5's "No NSP"), and masks drawn
once and repeated (static) against anew every epoch (dynamic, RoBERTa's)."""

import json

import pytest
import torch

from lab.__main__ import main
from lab.data.batch import IGNORE_INDEX
from lab.data.instances import ListView, PairColumn, PretrainingData, create_instances
from lab.data.masking import mask_tokens, parse_mix
from lab.training.pretrain import PretrainConfig
from tests.test_instances import MASK, make_docs, make_special, random_rows
from tests.test_train import SMALL, make_sentences


@pytest.mark.parametrize("mix", ["80/10/10", "100/0/0", "80/0/20", "80/20/0", "0/20/80", "0/0/100"])
def test_each_mix_of_table_8_corrupts_its_shares(mix):
    """Each row of the paper's Table 8, over some 12,000 chosen tokens: the shares that became
    [MASK], stayed, became a random token, within 2 points."""
    ids, special_mask = random_rows(n_rows=1200)
    masked, labels = mask_tokens(
        ids, special_mask, make_special(), torch.Generator().manual_seed(1), mix=parse_mix(mix)
    )
    chosen = labels != IGNORE_INDEX
    out, orig = masked[chosen], ids[chosen]
    shares = (
        (out == MASK).float().mean(),
        (out == orig).float().mean(),
        ((out != MASK) & (out != orig)).float().mean(),
    )
    expected = parse_mix(mix)
    # a random token equal to the original counts as kept: at most 1 in 500 of the random ones
    assert all(abs(float(s) - e) <= 0.02 for s, e in zip(shares, expected)), (mix, [round(float(s), 3) for s in shares])


def test_the_default_mix_is_the_one_before():
    """80/10/10 given explicitly draws exactly the masks of the default (runs before are the same)."""
    ids, special_mask = random_rows(n_rows=64)
    a = mask_tokens(ids, special_mask, make_special(), torch.Generator().manual_seed(5))
    b = mask_tokens(ids, special_mask, make_special(), torch.Generator().manual_seed(5), mix=parse_mix("80/10/10"))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


BAD_MIXES = [("80/10", "three percentages"), ("80/10/20", "add up to 100"), ("a/b/c", "three percentages")]


@pytest.mark.parametrize(("text", "message"), [*BAD_MIXES, ("-10/10/100", "add up to 100")])
def test_a_bad_mix_is_refused_when_the_recipe_is_made(text, message):
    with pytest.raises(ValueError, match=message) as e:
        PretrainConfig(masking=text)
    assert "masking=" in str(e.value)
    with pytest.raises(ValueError, match="mask_epochs=-1"):
        PretrainConfig(mask_epochs=-1)


def test_without_nsp_segment_b_is_the_true_continuation():
    """not_next=0: every pair whose chunk had two or more sentences continues its own document
    (a one-sentence chunk has no continuation and still takes B elsewhere)."""
    docs, special = make_docs(n_docs=40), make_special()
    view = ListView(docs)
    with_nsp = PretrainingData(view, special, batch_size=8, seed=2)
    without = PretrainingData(view, special, batch_size=8, seed=2, not_next=0.0)
    C = PairColumn.IS_RANDOM_NEXT
    share = lambda data: data.pairs(0)[:, C].mean()  # noqa: E731
    assert 0.4 < share(with_nsp) and 0 < share(without) < 0.1
    crossing = without.pairs(0)[without.pairs(0)[:, C] == 1]
    assert (crossing[:, PairColumn.A_END] - crossing[:, PairColumn.A_START] == 1).all()  # one-sentence chunks
    held = create_instances(docs, special, seed=0)  # the held-out pairs keep NSP's coin
    assert 0.4 < sum(i.is_random_next for i in held) / len(held)


def test_static_masks_repeat_the_first_epochs_and_dynamic_ones_do_not():
    view, special = ListView(make_docs(n_docs=30)), make_special()
    dynamic = PretrainingData(view, special, batch_size=8, seed=1)
    once = PretrainingData(view, special, batch_size=8, seed=1, mask_epochs=1)
    twice = PretrainingData(view, special, batch_size=8, seed=1, mask_epochs=2)
    e = dynamic.batches_per_epoch
    same = lambda a, b: all(torch.equal(a[k], b[k]) for k in a)  # noqa: E731
    assert same(once.batch(3), dynamic.batch(3))  # the first epoch is the dynamic one
    assert same(once.batch(3), once.batch(3 + e)) and same(once.batch(3), once.batch(3 + 5 * e))
    assert not same(dynamic.batch(3), dynamic.batch(3 + e))
    assert same(twice.batch(3), twice.batch(3 + 2 * e)) and not same(twice.batch(3), twice.batch(3 + e))


def test_pretrain_without_nsp_on_the_command_line(tmp_path, capsys):
    """--no-nsp --masking 100/0/0 --mask-epochs 1: the run trains the masked LM alone (no NSP loss
    or score in its metrics), records its settings, and leaves the frozen NSP head as it began."""
    from lab import BertForPreTraining, load

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(doc) for doc in make_sentences()) + "\n")  # test_train's corpus
    run = tmp_path / "run"
    argv = ["pretrain", "--corpus", str(corpus), "--out", str(run), *SMALL, "--vocab-size", "120"]
    argv += ["--batch-size", "4", "--steps", "4", "--eval-every", "2", "--no-nsp", "--masking", "100/0/0"]
    argv += ["--mask-epochs", "1", "--seed", "0"]
    assert main(argv) == 0
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert records and not any("nsp_acc" in r or "nsp_loss" in r for r in records)
    assert any("mlm_acc_masked" in r for r in records if r.get("split") == "eval")
    recorded = json.loads((run / "pretrain_config.json").read_text())
    assert (recorded["nsp"], recorded["masking"], recorded["mask_epochs"]) == (False, "100/0/0", 1)
    model, _ = load(run)
    torch.manual_seed(0)  # the run's seed: the same initial weights
    start = BertForPreTraining(model.config)
    for name in ("cls.seq_relationship.weight", "bert.pooler.dense.weight"):  # frozen: as they began
        assert torch.equal(model.state_dict()[name], start.state_dict()[name]), name
    moved = "bert.encoder.layer.0.attention.self.query.weight"  # the masked LM trained
    assert not torch.equal(model.state_dict()[moved], start.state_dict()[moved])
    capsys.readouterr()  # (the run's own output)
    assert main(["eval", "--model", str(run), "--corpus", str(corpus)]) == 0  # `lab eval` scores no NSP either
    scores = json.loads(capsys.readouterr().out)
    assert "mlm_acc_masked" in scores and "nsp_acc" not in scores
