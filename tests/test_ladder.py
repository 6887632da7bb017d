"""The pre-training ladder's report (lab.studies.ladder): intervals over seeds and sentences, paired
differences, and sentences computed from them; the committed results and docs agree."""

import json
import random

import pytest

from lab.studies import ladder


def fake_result(rung: str, seed: int, p_mask: float, n: int = 300, nsp: bool = True) -> dict:
    """A rung's result file as benchmarks/ladder.py writes it, with [MASK] hits drawn at p_mask."""
    rng = random.Random(hash((rung, seed)) % 10_000)
    counts = [rng.randint(1, 6) for _ in range(n)]
    return {
        "rung": rung,
        "seed": seed,
        "pretrain_seconds": 180.0 + seed,
        "cpu_seconds": 300.0 + seed,
        "held_out": {
            "hits": [sum(rng.random() < p_mask for _ in range(c)) for c in counts],
            "counts": counts,
            "nsp": [int(rng.random() < 0.7) for _ in range(n)] if nsp else [],
        },
        "sst2": {"features": [int(rng.random() < 0.6) for _ in range(200)], "finetuned": [1, 0] * 100},
    }


@pytest.fixture
def results(tmp_path):
    for seed in range(3):
        for rung, p, nsp in (("bert", 0.30, True), ("no-nsp", 0.30, False), ("pre-norm", 0.45, False)):
            (tmp_path / f"{rung}-seed{seed}.json").write_text(json.dumps(fake_result(rung, seed, p, nsp=nsp)))
    return ladder.load_results(tmp_path)


def test_intervals_hold_the_estimate_and_shrink_with_more_sentences(results):
    est, low, high = ladder.accuracy(results["bert"], "mlm")
    assert low < est < high and abs(est - 0.30) < 0.03
    two = {s: results["bert"][s] for s in (0, 1)}
    assert ladder.accuracy(two, "mlm")[0] == pytest.approx(
        sum(sum(r["held_out"]["hits"]) for r in two.values()) / sum(sum(r["held_out"]["counts"]) for r in two.values())
    )


def test_a_rung_against_itself_differs_by_nothing_and_a_better_one_is_found(results):
    assert ladder.accuracy(results["bert"], "mlm", results["bert"]) == (0.0, 0.0, 0.0)
    d, low, high = ladder.accuracy(results["pre-norm"], "mlm", results["no-nsp"])
    assert 0.10 < d < 0.20 and low > 0


def test_the_report_says_what_the_intervals_support(results):
    text = ladder.report(results)
    assert "| `pre-norm` |" in text and "| `bert` |" in text
    assert "masked-LM accuracy at [MASK]" in text and "better than it at this scale" in text
    row = next(line for line in text.splitlines() if line.startswith("| `no-nsp`"))
    assert "| - |" in row  # no NSP score for a rung without NSP
    assert "mask-100-0-0" not in text  # rungs without results are left out
    assert text.startswith(f"Measured: 3 of {len(ladder.rungs())} rungs, 9 runs, 3 seed(s) a rung.")
    assert "| 5.0 |" in row  # the median CPU minutes of a run


def test_every_rung_is_a_recipe_the_lab_can_run():
    from lab.training.pretrain import PretrainConfig

    names = [r.name for r in ladder.rungs()]
    assert len(names) == len(set(names)) and names[0] == "bert"
    for rung in ladder.rungs():
        PretrainConfig(**rung.settings)  # valid settings
        assert rung.against is None or rung.against in names[: names.index(rung.name)]


def test_the_docs_show_the_committed_results():
    """docs/pretraining.md's ladder table is `benchmarks/ladder.py --report --write-docs` of the
    committed results, to the character."""
    from tests.conftest import ROOT

    doc = (ROOT / "docs" / "pretraining.md").read_text()
    block = doc.split("<!-- ladder:start -->\n", 1)[1].split("<!-- ladder:end -->", 1)[0]
    assert block == ladder.report(ladder.load_results())
