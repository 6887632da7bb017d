"""The paper's own pre-training switches as recipe settings (issue 35, point 1): the masking mix of
Table 8 (MASK / SAME / RND), next-sentence prediction off (Table 5's "No NSP"), masks drawn
once and repeated (static) against anew every epoch (dynamic, RoBERTa's), and the left-to-right
LM of Table 5's "LTR & No NSP" (--objective ltr)."""

import json

import pytest
import torch

from lab.__main__ import main
from lab.data.batch import IGNORE_INDEX, Batch
from lab.data.instances import ListView, PairColumn, PretrainingData, create_instances, materialize
from lab.data.masking import mask_tokens, parse_mix
from lab.figures.numbers import training_curves
from lab.model import BertForPreTraining
from lab.training.pretrain import PretrainConfig, left_to_right, next_token_batch
from tests.conftest import tiny_config
from tests.test_instances import CLS, MASK, SEP, make_docs, make_special, random_rows
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


def no_nsp_run(tmp_path):
    """(corpus, run): 4 steps of --no-nsp --masking 100/0/0 --mask-epochs 1 on test_train's corpus."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(doc) for doc in make_sentences()) + "\n")
    run = tmp_path / "run"
    argv = ["pretrain", "--corpus", str(corpus), "--out", str(run), *SMALL, "--vocab-size", "120"]
    argv += ["--batch-size", "4", "--steps", "4", "--eval-every", "2", "--no-nsp", "--masking", "100/0/0"]
    argv += ["--mask-epochs", "1", "--seed", "0"]
    assert main(argv) == 0
    return corpus, run


def test_a_run_without_nsp_is_bundled_without_its_untrained_nsp_head(tmp_path, capsys, monkeypatch):
    """scripts/bundle_model.py stores a --no-nsp run as BertForMaskedLM (so no view offers its
    untrained NSP head), and `lab eval` scores the bundled copy as it scored the run."""
    from lab.checkpoint import read_state_dict, saved_model_class
    from scripts import bundle_model as bundle

    corpus, run = no_nsp_run(tmp_path)
    monkeypatch.setattr("sys.argv", ["bundle_model.py", str(run), str(tmp_path / "bundled")])
    bundle.main()
    assert saved_model_class(tmp_path / "bundled") == "BertForMaskedLM"
    assert not any(k.startswith("cls.seq_relationship") for k in read_state_dict(tmp_path / "bundled"))
    capsys.readouterr()
    scores = []
    for model in (run, tmp_path / "bundled"):
        assert main(["eval", "--model", str(model), "--corpus", str(corpus)]) == 0
        scores.append(json.loads(capsys.readouterr().out))
    assert "nsp_acc" not in scores[1]
    assert scores[1]["mlm_acc_masked"] == pytest.approx(scores[0]["mlm_acc_masked"], abs=0.02)  # fp16 copy
    assert scores[1]["predictions"] == scores[0]["predictions"]


def test_pretrain_without_nsp_on_the_command_line(tmp_path, capsys):
    """--no-nsp --masking 100/0/0 --mask-epochs 1: the run trains the masked LM alone (no NSP loss
    or score in its metrics), records its settings, and leaves the frozen NSP head as it began."""
    from lab import BertForPreTraining, load

    corpus, run = no_nsp_run(tmp_path)
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


# ----------------------------------------------------------------------------------------
# Table 5's "LTR & No NSP": --objective ltr
# ----------------------------------------------------------------------------------------
def ltr_data() -> PretrainingData:
    """Pairs of at most 32 tokens, half of them aiming at a random shorter length: padded rows."""
    view = ListView(make_docs(n_docs=30))
    return PretrainingData(view, make_special(), batch_size=8, seed=3, max_seq_length=32, short_seq_prob=0.5)


def test_the_ltr_batch_is_the_unmasked_text_labelled_with_the_next_real_token():
    """The masks undone (the text collate laid out, read afresh from the pair recipes), each
    position labelled with the token after it, and nothing at or after the last real token."""
    data = ltr_data()
    for step in range(3):
        masked = data.batch(step)
        batch = next_token_batch(masked)
        assert "nsp_label" not in batch and torch.equal(batch.attention_mask, masked.attention_mask)
        table = data.pairs(0)
        for row, i in enumerate(data.indices(step)):
            inst = materialize(data.view, table[i].tolist())
            text = [CLS, *inst.tokens_a, SEP, *inst.tokens_b, SEP]
            n = len(text)
            assert batch.input_ids[row, :n].tolist() == text and int(batch.attention_mask[row].sum()) == n
            assert batch.mlm_labels[row, : n - 1].tolist() == text[1:]  # [SEP] is predicted too
            assert (batch.mlm_labels[row, n - 1 :] == IGNORE_INDEX).all()  # not after the last, not at padding
    assert (masked.input_ids == MASK).any() and not (batch.input_ids == MASK).any()
    padded = [int(m.sum()) < m.numel() for s in range(3) for m in next_token_batch(data.batch(s)).attention_mask]
    assert any(padded)  # the padding case was exercised


def test_the_ltr_mask_hides_the_future():
    """Through a tiny model: changing a later token leaves every earlier position's output as it
    was, and changes its own (bidirectional attention, for contrast, changes the earlier ones)."""
    torch.manual_seed(0)
    model = BertForPreTraining(tiny_config(vocab_size=512, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    model.eval()
    batch = next_token_batch(ltr_data().batch(0))
    k = int(batch.attention_mask[0].sum()) // 2  # a real token in the middle of row 0
    changed = Batch(batch)
    changed["input_ids"] = batch.input_ids.clone()
    changed["input_ids"][0, k] = 7 if int(batch.input_ids[0, k]) != 7 else 8
    with torch.no_grad():
        before, after = (left_to_right(model, b).last_hidden_state for b in (batch, changed))
        both = [model(**b).last_hidden_state for b in (batch, changed)]
    assert torch.allclose(before[0, :k], after[0, :k], atol=1e-6)
    assert not torch.allclose(before[0, k], after[0, k], atol=1e-4)
    assert torch.equal(before[1:], after[1:])  # other rows untouched
    assert not torch.allclose(both[0][0, :k], both[1][0, :k], atol=1e-4)  # bidirectional: the past sees it


def test_ltr_without_no_nsp_is_refused(tmp_path, capsys):
    message = "objective='ltr' needs nsp=False (--no-nsp): the paper's left-to-right model (Table 5) has no"
    with pytest.raises(ValueError) as e:
        PretrainConfig(objective="ltr")
    assert message in str(e.value)
    with pytest.raises(ValueError, match="objective='gpt'"):
        PretrainConfig(objective="gpt", nsp=False)
    assert PretrainConfig(objective="ltr", nsp=False).masking == "80/10/10"  # masking settings: ignored
    argv = ["pretrain", "--corpus", str(tmp_path / "none.txt"), "--out", str(tmp_path / "run"), "--steps", "1"]
    assert main([*argv, "--objective", "ltr"]) == 2  # refused before anything is read or written
    assert message in capsys.readouterr().err and not (tmp_path / "run").exists()


def test_pretrain_ltr_on_the_command_line(tmp_path, capsys):
    """--objective ltr --no-nsp: the run trains, evaluates, logs and checkpoints next-token
    numbers (no MLM-at-[MASK] or NSP score), and `lab eval` on it reports next-token accuracy."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(doc) for doc in make_sentences()) + "\n")  # test_train's corpus
    run = tmp_path / "run"
    argv = ["pretrain", "--corpus", str(corpus), "--out", str(run), *SMALL, "--vocab-size", "120"]
    argv += ["--batch-size", "4", "--steps", "4", "--eval-every", "2", "--objective", "ltr", "--no-nsp"]
    assert main(argv) == 0
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in records if r.get("split") == "eval"]
    trains = [r for r in records if r.get("split") == "train"]
    assert [r["step"] for r in evals] == [2, 4] and all("ltr_acc" in r for r in trains)
    assert all(0 <= r["ltr_acc"] <= 1 and r["ltr_loss"] > 0 and r["predictions"] > 0 for r in evals)
    assert not any(k in r for r in records for k in ("mlm_acc_masked", "mlm_acc", "nsp_acc", "nsp_loss"))
    assert json.loads((run / "pretrain_config.json").read_text())["objective"] == "ltr"
    assert (run / "checkpoints" / "step-0000004" / "trainer_state.pt").is_file()  # a resumable checkpoint
    names = [s.name for s in training_curves(run).series]
    assert "held-out ltr loss" in names and "next token (left-to-right)" in names
    capsys.readouterr()  # (the run's own output)
    assert main(["eval", "--model", str(run), "--corpus", str(corpus), "--limit", "16"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert 0 <= scores["ltr_acc"] <= 1 and scores["ltr_loss"] > 0
    assert "mlm_acc_masked" not in scores and "nsp_acc" not in scores


# ----------------------------------------------------------------------------------------
# What changed since BERT, as recipe settings: --changes (lab.modern), and --split-seed
# ----------------------------------------------------------------------------------------
def test_pretrain_with_the_changes_since_bert(tmp_path):
    """--changes builds the modern model; config.json records it, so lab.load rebuilds it."""
    from lab import load

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(doc) for doc in make_sentences()) + "\n")
    run = tmp_path / "run"
    argv = ["pretrain", "--corpus", str(corpus), "--out", str(run), *SMALL, "--vocab-size", "120"]
    argv += ["--batch-size", "4", "--steps", "2", "--eval-every", "2", "--no-nsp"]
    argv += ["--changes", "pre-norm,geglu,rotary,no-bias,local", "--local-window", "8", "--global-every", "2"]
    assert main(argv) == 0
    cfg = load(run)[0].config
    assert (cfg.norm_position, cfg.feed_forward, cfg.position_embedding_type, cfg.bias) == (
        "pre",
        "glu",
        "rotary",
        False,
    )
    assert (cfg.local_attention, cfg.global_attn_every_n_layers) == (8, 2)
    assert json.loads((run / "pretrain_config.json").read_text())["changes"] == "pre-norm,geglu,rotary,no-bias,local"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"changes": "pre-norm,flash"}, r"unknown \['flash'\]; choose from pre-norm"),
        ({"changes": "rotary", "position_init": "sinusoidal"}, "changes=rotary has none"),
    ],
)
def test_a_change_the_lab_does_not_have_is_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        PretrainConfig(**settings)


def test_the_split_seed_keeps_the_held_out_documents():
    """seed varies the data's order and masks; split_seed alone picks the held-out documents."""
    assert PretrainConfig(seed=3, split_seed=0).held_out_seed == 0
    assert PretrainConfig(seed=3).held_out_seed == 3
