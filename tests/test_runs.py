"""The run directory (lab/training/runs.py): layout, metrics of a recipe's phases read as one run,
checkpoints across phases, completeness, and fresh run names."""

import json

import pytest

import lab
from lab import run_files
from lab.checkpoint import bundled_model
from lab.training import runs


def write_records(path, records):
    path.mkdir(parents=True, exist_ok=True)
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def checkpoint(run, step):
    d = run / "checkpoints" / f"step-{step:07d}"
    d.mkdir(parents=True)
    return d


def test_a_recipe_is_read_as_one_run(tmp_path):
    """phase 1 logs steps 10..200 (and checkpoints 0, 50, 200); the last phase 10..100 (0, 100):
    the merged history continues at 210 and the checkpoints at 300."""
    run = tmp_path / "run"
    first = run / "phase1-len32"
    write_records(first, [{"split": "train", "step": s, "time": s / 10, "tokens": 100 * s} for s in (10, 200)])
    write_records(run, [{"split": "train", "step": s, "time": s / 10, "tokens": 100 * s} for s in (10, 100)])
    for s in (0, 50, 200):
        checkpoint(first, s)
    for s in (0, 100):
        checkpoint(run, s)
    (run / "checkpoints" / "step-0000200.tmp").mkdir()  # being written: not a checkpoint
    assert run_files.phases(run) == [first, run]
    merged = run_files.read_metrics(run)
    assert [r["step"] for r in merged] == [10, 200, 210, 300]
    assert [r["tokens"] for r in merged] == [1000, 20000, 21000, 30000]
    assert [r["phase"] for r in merged] == ["phase1-len32", "phase1-len32", "final", "final"]
    assert run_files.read_metrics(run / "metrics.jsonl")[0]["step"] == 10  # a file alone: as written
    found = run_files.checkpoints(run)
    assert [s for s, _ in found] == [0, 50, 200, 300]
    assert found[2][1] == first / "checkpoints" / "step-0000200"  # the earlier phase wins a tie
    assert runs.phase_dirs(tmp_path / "x", ["len32", "len128"]) == [tmp_path / "x" / "phase1-len32", tmp_path / "x"]
    assert run_files.has_metrics(run) and not run_files.has_metrics(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="no metrics.jsonl"):
        run_files.read_metrics(tmp_path / "empty")


def test_completeness_resume_points_and_refusal(tmp_path):
    run = tmp_path / "run"
    assert runs.latest_resumable(run) is None and not runs.is_complete(run)
    runs.refuse_existing_run(run)  # nothing there: fine
    d = checkpoint(run, 5)
    (d / runs.STATE_NAME).write_bytes(b"")
    runs.write_json(run / "train_config.json", {"total_steps": 10})
    assert runs.latest_resumable(run) == d and not runs.is_complete(run)
    with pytest.raises(FileExistsError, match="already holds a run"):
        runs.refuse_existing_run(run)
    d10 = checkpoint(run, 10)
    (d10 / runs.STATE_NAME).write_bytes(b"")
    assert runs.is_complete(run) and runs.checkpoint_step(d10) == 10


def test_write_checkpoint_keeps_snapshots_and_the_newest(tmp_path, tiny_cfg):
    model = lab.BertForPreTraining(tiny_cfg)
    run = tmp_path / "run"
    for step in (0, 5, 10):
        runs.write_checkpoint(run, model, None, {"step": step}, keep_steps={0})
    names = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert names == ["step-0000000", "step-0000010"]  # 5 pruned: not a snapshot
    assert not (run / "checkpoints" / "step-0000000" / runs.STATE_NAME).exists()  # a snapshot: model only
    assert (run / "checkpoints" / "step-0000010" / runs.STATE_NAME).is_file()
    assert run_files.is_model_dir(run) and run_files.is_model_dir(run / "checkpoints" / "step-0000000")


def test_new_run_dir_is_fresh_and_bundled_model_lookup(tmp_path):
    a = runs.new_run_dir(tmp_path, "nb")
    a.mkdir()
    b = runs.new_run_dir(tmp_path, "nb")
    assert a != b and a.name.startswith("nb-") and not b.exists()
    assert bundled_model("no-such-model") is None
    assert bundled_model("bert-lab-classroom") is not None
