"""Fine-tuning: data reading, the two approaches (fine-tune vs frozen features), QA through the
one training loop, from a small saved model. Tiny synthetic data written by the tests."""

import json
import random

import pytest
import torch

import lab
from lab import explore
from lab.__main__ import main
from lab.checkpoint import qa_lengths, task_settings
from lab.run_files import read_metrics
from lab.training.finetune import label_names, read_classification

WORDS = "the a film movie story plot actor scene music ending was is very quite rather".split()
POS, NEG = "good great wonderful moving".split(), "bad dull awful boring".split()


def sentiment_rows(n, seed):
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        label = rng.randint(0, 1)
        words = [rng.choice(WORDS) for _ in range(rng.randint(4, 9))]
        words.insert(rng.randint(0, len(words)), rng.choice(POS if label else NEG))
        rows.append((" ".join(words), label))
    return rows


@pytest.fixture(scope="module")
def base_model(tmp_path_factory):
    """A small random BertForPreTraining with a vocabulary covering the synthetic words."""
    out = tmp_path_factory.mktemp("base")
    text = [" ".join(WORDS + POS + NEG)] * 50 + ["who is where when what why ?"] * 20
    tok = lab.Tokenizer.train(iter(text), vocab_size=120, show_progress=False)
    cfg = lab.BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    lab.save(lab.BertForPreTraining(cfg), tok, out)
    return out


@pytest.fixture(scope="module")
def sst(tmp_path_factory):
    d = tmp_path_factory.mktemp("sst")
    for name, n, seed in (("train.tsv", 400, 0), ("dev.tsv", 100, 1)):
        (d / name).write_text("sentence\tlabel\n" + "".join(f"{s}\t{l}\n" for s, l in sentiment_rows(n, seed)))
    return d


def test_read_formats_and_errors(tmp_path):
    (tmp_path / "pairs.csv").write_text(
        'sentence1,sentence2,label\nhe ran .,he moved .,entailment\nit rained .,"the sun, it shone .",contradiction\n'
    )
    data = read_classification(tmp_path / "pairs.csv")
    assert data.pairs == ["he moved .", "the sun, it shone ."] and data.labels == ["entailment", "contradiction"]
    assert label_names(["10", "2", "1"]) == ["1", "2", "10"] and label_names(["neg", "pos"]) == ["neg", "pos"]
    # GLUE QNLI's header holds "sentence" too: the pair is read, not the sentence alone
    (tmp_path / "qnli.tsv").write_text("index\tquestion\tsentence\tlabel\n0\twho ran ?\the ran .\tentailment\n")
    data = read_classification(tmp_path / "qnli.tsv")
    assert (data.texts, data.pairs) == (["who ran ?"], ["he ran ."])
    assert read_classification(tmp_path / "qnli.tsv", text_columns=("sentence",)).pairs is None
    (tmp_path / "bad.tsv").write_text("sentence\tlabel\nfine\t1\nmissing its label\n")
    with pytest.raises(ValueError, match=r"bad.tsv, line 3: 1 column\(s\), expected 2"):
        read_classification(tmp_path / "bad.tsv")
    (tmp_path / "nohead.tsv").write_text("text only\n")
    with pytest.raises(ValueError, match="needs a 'label' column"):
        read_classification(tmp_path / "nohead.tsv")
    (tmp_path / "empty.tsv").write_text("")
    with pytest.raises(ValueError, match="is empty"):
        read_classification(tmp_path / "empty.tsv")


def run_cls(base_model, sst, out, *extra):
    return main(
        [
            "finetune-cls",
            "--model",
            str(base_model),
            "--train",
            str(sst / "train.tsv"),
            "--dev",
            str(sst / "dev.tsv"),
            "--out",
            str(out),
            "--no-progress",
            "--threads",
            "1",
            "--batch-size",
            "16",
            *extra,
        ]
    )


def test_finetune_learns_and_saves_a_loadable_classifier(base_model, sst, tmp_path, capsys):
    assert run_cls(base_model, sst, tmp_path / "ft", "--epochs", "3", "--lr", "3e-3", "--precision", "fp32") == 0
    evals = [r for r in read_metrics(tmp_path / "ft") if r["split"] == "eval"]
    assert [r["step"] for r in evals] == [25, 50, 75]  # once per epoch
    assert evals[-1]["accuracy"] > 0.9 and 0.0 < evals[-1]["f1"] <= 1.0  # the task is learnable
    model, tok = lab.load(tmp_path / "ft")
    assert type(model) is lab.BertForSequenceClassification
    assert model.config.id2label == {0: "0", 1: "1"}
    assert "train (100.00%)" in capsys.readouterr().out
    # `eval` re-measures the saved classifier on its dev file (from task_config.json) exactly
    assert main(["eval", "--model", str(tmp_path / "ft")]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["accuracy"] == pytest.approx(evals[-1]["accuracy"], abs=1e-4) and again["examples"] == 100


def test_frozen_features_train_only_the_task_layer(base_model, sst, tmp_path, capsys):
    before, _ = lab.load(base_model, lab.BertModel)
    assert run_cls(base_model, sst, tmp_path / "feat", "--mode", "features", "--steps", "10", "--lr", "1e-2") == 0
    out = capsys.readouterr().out
    assert "features: 66 of" in out  # classifier 2 x 32 + 2 biases
    after, _ = lab.load(tmp_path / "feat")
    for (name, a), b in zip(before.state_dict().items(), after.bert.state_dict().values()):
        assert torch.equal(a, b), name  # the encoder did not move
    assert (
        run_cls(base_model, sst, tmp_path / "feat2", "--mode", "features", "--feature-layers", "2", "--steps", "10")
        == 0
    )
    assert "features: 130 of" in capsys.readouterr().out  # 2 x (2 layers x 32) + 2
    assert (
        run_cls(base_model, sst, tmp_path / "feat5", "--mode", "features", "--feature-layers", "5", "--steps", "2") == 2
    )  # the model has only 2 layers
    assert "feature_layers must be between 1 and the model's 2 layers" in capsys.readouterr().err


def test_a_feature_based_run_loads_and_evaluates_like_any_other(base_model, sst, tmp_path, capsys):
    """Bug: a --feature-layers 2 run was saved as "FeatureClassifier" and then failed to load
    (classifier.weight [2, 64] vs [2, 32]) in lab.load, eval and the dashboard."""
    run = tmp_path / "feat2"
    assert (
        run_cls(
            base_model,
            sst,
            run,
            "--mode",
            "features",
            "--feature-layers",
            "2",
            "--steps",
            "6",
            "--lr",
            "1e-2",
            "--precision",
            "fp32",
        )
        == 0
    )
    final = [r for r in read_metrics(run) if r["split"] == "eval"][-1]
    model, tok = lab.load(run)
    assert type(model) is lab.BertForSequenceClassification and model.config.classifier_layers == 2
    assert json.loads((run / "config.json").read_text())["architectures"] == ["BertForSequenceClassification"]
    assert explore.classify(model, tok, "a b c")  # the dashboard's call works
    capsys.readouterr()
    assert main(["eval", "--model", str(run)]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] == pytest.approx(final["accuracy"], abs=1e-4)


def test_a_refused_finetune_writes_nothing(base_model, sst, tmp_path, capsys):
    """Bug: a fine-tune refused because --out held a run first rewrote its task_config.json."""
    run = tmp_path / "ft"
    assert run_cls(base_model, sst, run, "--steps", "2", "--max-seq-length", "128") == 0
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    assert run_cls(base_model, sst, run, "--steps", "2", "--max-seq-length", "64") == 2
    assert "already holds a run" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    assert json.loads((run / "task_config.json").read_text())["max_seq_length"] == 128


def test_zero_intervals_mean_off(base_model, sst, tmp_path):
    """Bug: --ckpt-every 0 or --log-every 0 crashed with ZeroDivisionError; 0 means off, as for
    --eval-every: the run still logs, evaluates and checkpoints at its end."""
    run = tmp_path / "zero"
    assert (
        run_cls(
            base_model,
            sst,
            run,
            "--steps",
            "4",
            "--ckpt-every",
            "0",
            "--log-every",
            "0",
            "--eval-every",
            "0",
            "--snapshots",
            "0",
        )
        == 0
    )
    records = read_metrics(run)
    assert [(r["split"], r["step"]) for r in records] == [("train", 4), ("eval", 4)]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step-0000004"]  # no snapshots


def test_random_init_baseline_runs(base_model, sst, tmp_path, capsys):
    assert run_cls(base_model, sst, tmp_path / "rnd", "--random-init", "--steps", "5") == 0
    assert "random initialisation" in capsys.readouterr().out
    assert json.loads((tmp_path / "rnd" / "task_config.json").read_text())["random_init"] is True


def test_question_answering_through_the_loop(base_model, tmp_path, capsys):
    rng = random.Random(0)
    articles = []
    for a in range(3):
        paragraphs = []
        for p in range(4):
            words = [rng.choice(WORDS) for _ in range(30)]
            answer = rng.choice(POS)
            words[10] = answer
            context = " ".join(words)
            start = context.index(" " + answer + " ") + 1
            paragraphs.append(
                {
                    "context": context,
                    "qas": [
                        {
                            "id": f"q{a}{p}",
                            "question": "what is where ?",
                            "answers": [{"text": answer, "answer_start": start}],
                        }
                    ],
                }
            )
        articles.append({"title": f"t{a}", "paragraphs": paragraphs})
    (tmp_path / "squad.json").write_text(json.dumps({"version": "1.1", "data": articles}))
    assert (
        main(
            [
                "finetune-qa",
                "--model",
                str(base_model),
                "--data",
                str(tmp_path / "squad.json"),
                "--train-articles",
                "2",
                "--out",
                str(tmp_path / "qa"),
                "--max-seq-length",
                "32",
                "--doc-stride",
                "8",
                "--max-query-length",
                "8",
                "--batch-size",
                "4",
                "--steps",
                "6",
                "--eval-every",
                "3",
                "--no-progress",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    evals = [r for r in read_metrics(tmp_path / "qa") if r["split"] == "eval"]
    assert [r["step"] for r in evals] == [3, 6] and all(0 <= r["f1"] <= 1 for r in evals)
    model, _ = lab.load(tmp_path / "qa")
    assert type(model) is lab.BertForQuestionAnswering
    # `eval` re-measures EM/F1 on the held-out article with the run's own feature lengths
    capsys.readouterr()
    assert main(["eval", "--model", str(tmp_path / "qa")]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["f1"] == pytest.approx(evals[-1]["f1"], abs=1e-4) and again["questions"] == 4
    # the run remembers its windows (the dashboard and notebook 05 read a QA model with them)
    assert qa_lengths(tmp_path / "qa") == {"max_seq_length": 32, "doc_stride": 8, "max_query_length": 8}
    assert task_settings(tmp_path / "qa")["train_articles"] == 2
    assert qa_lengths(base_model) == {} and task_settings(base_model) == {}


def test_finetune_resumes_exactly(base_model, sst, tmp_path):
    """The same loop as pre-training: a run continued from its step-2 checkpoint ends where an
    uninterrupted run ends."""
    import shutil

    args = ("--steps", "4", "--ckpt-every", "2", "--log-every", "1", "--precision", "fp32")
    assert run_cls(base_model, sst, tmp_path / "whole", *args) == 0
    assert run_cls(base_model, sst, tmp_path / "cut", *args) == 0
    shutil.rmtree(tmp_path / "cut" / "checkpoints" / "step-0000004")  # as if killed after step 2
    assert run_cls(base_model, sst, tmp_path / "cut", *args, "--resume") == 0
    a, _ = lab.load(tmp_path / "whole")
    b, _ = lab.load(tmp_path / "cut")
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(x, y), name

    def losses(run):
        return [r["loss"] for r in read_metrics(run) if r["split"] == "train"]

    assert losses(tmp_path / "cut") == losses(tmp_path / "whole")


def test_integer_labels_address_a_named_classifier(tmp_path):
    """A GLUE file's 0/1 labels evaluate a classifier whose labels have names (the bundled one)."""
    from lab.training.finetune import encode_classification

    (tmp_path / "dev.tsv").write_text("sentence\tlabel\ngood film\t1\nbad film\t0\n")
    tok = lab.Tokenizer.train(iter(["good bad film"] * 5), vocab_size=40, show_progress=False)
    enc = encode_classification(read_classification(tmp_path / "dev.tsv"), tok, {"negative": 0, "positive": 1})
    assert enc.labels == [1, 0]
    (tmp_path / "odd.tsv").write_text("sentence\tlabel\ngood film\t7\n")
    with pytest.raises(ValueError, match=r"labels \['7'\] are not among the model's labels"):
        encode_classification(read_classification(tmp_path / "odd.tsv"), tok, {"negative": 0, "positive": 1})


def test_processes_split_each_global_batch_and_an_epoch_counts_it():
    # under torchrun/accelerate every process reads its own rows of the step's global batch (the
    # fine-tuning objectives, like pre-training): together they read what one process of
    # world_size x batch_size rows reads, and an epoch is n // (batch_size x world_size) steps
    from lab.device import Dist
    from lab.training.finetune import epoch_schedule, this_ranks_rows
    from lab.training.train import TrainConfig

    for n in (64, 70, 5):  # a whole number of global batches, a remainder, fewer rows than a batch
        for step in range(12):
            whole = this_ranks_rows(n, 8, step, seed=3, dist=Dist())
            halves = [this_ranks_rows(n, 4, step, seed=3, dist=Dist(rank=r, world_size=2)) for r in (0, 1)]
            assert halves[0] + halves[1] == whole, (n, step)
            assert not set(halves[0]) & set(halves[1]) or n < 8  # no row twice in a step (unless n < 8 wraps)
    epoch = {i for step in range(8) for r in (0, 1) for i in this_ranks_rows(64, 4, step, 3, Dist(r, 2))}
    assert epoch == set(range(64))  # 8 steps of 2 x 4 rows: every row once
    tc, per_epoch = epoch_schedule(
        TrainConfig(batch_size=4, steps=None, eval_every=0, out_dir="unused"), 64, 2.0, world_size=2
    )
    assert (per_epoch, tc.steps, tc.eval_every) == (8, 16, 8)
    assert epoch_schedule(TrainConfig(batch_size=8, steps=None, out_dir="unused"), 64, 2.0)[1] == 8
