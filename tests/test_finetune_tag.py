"""python -m lab finetune-tag / eval on a tagger: named entities (IOB2, entity F1 as conlleval
counts it) and parts of speech (CoNLL-U, accuracy), through the one training loop, from a small
saved model. Tiny synthetic sentences written by the tests: who is a person and what is a place
is decided by the word itself, so a model that learns anything gets them right."""

import json
import random

import pytest
import torch

import lab
from lab.__main__ import main
from lab.data.tagged_files import read_tagged
from lab.run_files import read_metrics

PEOPLE = "anna boris clara david".split()
PLACES = "paris lima oslo rome".split()
SECOND = "york delhi".split()  # the second word of a two-word place, never alone
OTHER = "went to see the met in and then walked home with".split()


def sentence(rng, n):
    """(words, IOB2 tags, POS tags): people are PER/PROPN, places LOC/PROPN, a place may be two
    words ("new york": B-LOC I-LOC)."""
    words, ner, pos = [], [], []
    while len(words) < n:
        kind = rng.choice(["per", "loc", "loc2", "o", "o", "o"])
        if kind == "per":
            words, ner, pos = words + [rng.choice(PEOPLE)], ner + ["B-PER"], pos + ["PROPN"]
        elif kind == "loc":
            words, ner, pos = words + [rng.choice(PLACES)], ner + ["B-LOC"], pos + ["PROPN"]
        elif kind == "loc2":
            words, ner, pos = words + ["new", rng.choice(SECOND)], ner + ["B-LOC", "I-LOC"], pos + ["ADJ", "PROPN"]
        else:
            words, ner, pos = words + [rng.choice(OTHER)], ner + ["O"], pos + ["X"]
    return words, ner, pos


def write_files(folder, name, n, seed, long_every=0):
    rng = random.Random(seed)
    iob, conllu = [], []
    for i in range(n):
        words, ner, pos = sentence(rng, 90 if long_every and i % long_every == 0 else rng.randint(4, 12))
        iob.append("".join(f"{k}\t{w}\t{t}\n" for k, (w, t) in enumerate(zip(words, ner), 1)))
        conllu.append("".join(f"{k}\t{w}\t{w}\t{p}\t_\t_\t_\t_\t_\t_\n" for k, (w, p) in enumerate(zip(words, pos), 1)))
    (folder / f"{name}.iob2").write_text("\n".join(iob))
    (folder / f"{name}.conllu").write_text("\n".join(conllu))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("tagged")
    write_files(d, "train", 300, 0)
    write_files(d, "test", 60, 1, long_every=10)  # every 10th sentence is longer than a 32-token window
    return d


@pytest.fixture(scope="module")
def base_model(tmp_path_factory):
    """A small random BertForPreTraining whose vocabulary covers the words."""
    out = tmp_path_factory.mktemp("base")
    tok = lab.Tokenizer.train(
        iter([" ".join(PEOPLE + PLACES + SECOND + OTHER + ["new"])] * 50), vocab_size=120, show_progress=False
    )
    cfg = lab.BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    lab.save(lab.BertForPreTraining(cfg), tok, out)
    return out


def finetune_tag(base, train, test, out, *extra):
    return main(
        [
            "finetune-tag",
            "--model",
            str(base),
            "--train",
            str(train),
            "--eval",
            str(test),
            "--out",
            str(out),
            "--max-seq-length",
            "32",
            "--doc-stride",
            "16",
            "--lr",
            "3e-3",
            "--precision",
            "fp32",
            "--batch-size",
            "16",
            *extra,
        ]
    )


def test_named_entities_learned_scored_and_saved(base_model, data, tmp_path, capsys):
    run = tmp_path / "ner"
    assert finetune_tag(base_model, data / "train.iob2", data / "test.iob2", run, "--epochs", "12") == 0
    evals = [r for r in read_metrics(run) if r["split"] == "eval"]
    assert len(evals) == 12 and evals[-1]["f1"] > 0.95, evals[-1]  # the task is learnable
    assert evals[-1]["f1_low"] <= evals[-1]["f1"] <= evals[-1]["f1_high"] and {"f1_LOC", "f1_PER"} <= set(evals[-1])
    model, _ = lab.load(run)
    assert type(model) is lab.BertForTokenClassification
    assert list(model.config.id2label.values()) == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    task = json.loads((run / "task_config.json").read_text())
    assert (task["task"], task["scheme"], task["max_seq_length"], task["doc_stride"]) == ("tagging", "iob2", 32, 16)
    assert task["labels"] == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    capsys.readouterr()
    # eval re-measures it on its evaluation file (task_config.json), every word of the long
    # sentences included (read in windows), to the same F1
    assert main(["eval", "--model", str(run)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["f1"] == pytest.approx(evals[-1]["f1"], abs=1e-4) and again["sentences"] == 60


def test_viterbi_decoding_is_recorded_and_reproduced(base_model, data, tmp_path, capsys):
    """--decoding viterbi: task_config.json keeps it, every evaluation reports the argmax reading
    of the same logits beside it, and eval decodes the saved model the same way."""
    run = tmp_path / "ner-viterbi"
    assert (
        finetune_tag(base_model, data / "train.iob2", data / "test.iob2", run, "--epochs", "2", "--decoding", "viterbi")
        == 0
    )
    assert json.loads((run / "task_config.json").read_text())["decoding"] == "viterbi"
    last = [r for r in read_metrics(run) if r["split"] == "eval"][-1]
    assert {"f1", "f1_argmax", "f1_low", "f1_high"} <= set(last)
    capsys.readouterr()
    assert main(["eval", "--model", str(run)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["f1"] == pytest.approx(last["f1"], abs=1e-4) and again["f1_argmax"] == pytest.approx(
        last["f1_argmax"], abs=1e-4
    )


def test_parts_of_speech_from_frozen_features(base_model, data, tmp_path, capsys):
    """CoNLL-U: accuracy, not entities; --mode features trains only the classifier."""
    run = tmp_path / "pos"
    assert (
        finetune_tag(
            base_model,
            data / "train.conllu",
            data / "test.conllu",
            run,
            "--mode",
            "features",
            "--epochs",
            "1",
            "--lr",
            "1e-2",
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"features: {33 * 3} of" in out  # 3 tags (ADJ, PROPN, X) x (32 weights + a bias) train
    last = [r for r in read_metrics(run) if r["split"] == "eval"][-1]
    assert "accuracy" in last and "f1" not in last and 0 < last["accuracy"] <= 1
    assert read_tagged(data / "test.conllu").scheme == "tags"


def test_bad_files_and_settings_get_messages(base_model, data, tmp_path, capsys):
    bad = tmp_path / "bad.iob2"
    bad.write_text("1\tanna\tB-PER\n2\tparis\tLOCATION\n")
    assert finetune_tag(base_model, bad, data / "test.iob2", tmp_path / "x") == 2
    err = capsys.readouterr().err
    assert "bad.iob2, line 2" in err and "LOCATION" in err
    with pytest.raises(SystemExit):  # argparse refuses it, naming the choices
        finetune_tag(base_model, data / "train.iob2", data / "test.iob2", tmp_path / "y", "--mode", "other")
    assert "invalid choice: 'other'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
