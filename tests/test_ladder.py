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
    assert "mask-100-0-0" not in text.split("### The papers")[0]  # rungs without results are left out
    assert text.startswith(f"Measured: 3 of {len(ladder.rungs())} rungs, 9 runs, 3 seed(s) a rung.")
    assert "| 5.0 |" in row  # the median CPU minutes of a run


def test_a_runs_settings_name_its_rung_and_the_report_ranks_it(results, tmp_path):
    """rung_of reads a pre-training run's settings (changes in any order, defaults left out) back to
    its rung; choice says whether the model's rung is the best one or how far behind it is."""
    assert ladder.rung_of({}).name == "bert"
    assert ladder.rung_of({"nsp": False, "changes": "rotary,pre-norm,geglu"}).name == "pre-norm+geglu+rotary"
    assert ladder.rung_of({"nsp": False, "objective": "ltr", "seed": 3}).name == "ltr-no-nsp"
    assert ladder.rung_of({"nsp": False, "changes": "flash"}) is None
    model = tmp_path / "model"
    model.mkdir()
    (model / "pretrain_config.json").write_text(json.dumps({"nsp": False, "changes": "pre-norm", "seed": 0}))
    assert "It is the ladder's best rung" in ladder.choice(results, model)
    (model / "pretrain_config.json").write_text(json.dumps({"nsp": False}))
    text = ladder.choice(results, model)
    assert "rung `no-nsp` (3 seed(s) here)" in text and "best rung by held-out" in text
    assert "is `pre-norm` (3 seed(s))" in text and "worse than it at this scale" in text
    (model / "pretrain_config.json").write_text(json.dumps({"nsp": False, "masking": "100/0/0"}))  # no such rung
    assert ladder.choice(results, model) == "" and ladder.choice(results, tmp_path / "absent") == ""


def test_a_rung_timed_against_another_trains_the_steps_that_fit_and_is_reported(tmp_path):
    """modern-30-same-time trains the share of the steps that takes its reference rung's CPU time at
    modern-30's cost per step; choice compares the model's rung with it when the best rung costs more."""
    timed = next(r for r in ladder.rungs() if r.same_time)
    full, other = timed.same_time
    assert (timed.name, full) == ("modern-30-same-time", "modern-30") and timed.settings == ladder.rungs()[-2].settings
    found = {
        other: {s: fake_result(other, s, 0.25, nsp=False) | {"cpu_seconds": 300.0} for s in range(3)},
        full: {s: fake_result(full, s, 0.32, nsp=False) | {"cpu_seconds": 600.0} for s in range(3)},
    }
    assert ladder.steps_for(timed, {other: found[other]}, 2000) is None  # waits for both rungs' runs
    assert ladder.steps_for(timed, found, 2000) == 1000 and ladder.steps_for(ladder.rungs()[0], found, 2000) == 2000
    assert ladder.steps_for(timed, found | {timed.name: {0: {"steps": 998}}}, 2000) == 998  # as its first run
    mine = "pre-norm+geglu+rotary"
    found[mine] = {s: fake_result(mine, s, 0.25, nsp=False) for s in range(3)}
    found[timed.name] = {s: fake_result(timed.name, s, 0.18, nsp=False) | {"steps": 1000} for s in range(3)}
    model = tmp_path / "model"
    model.mkdir()
    (model / "pretrain_config.json").write_text(json.dumps({"nsp": False, "changes": "pre-norm,geglu,rotary"}))
    text = ladder.choice(found, model)
    assert f"best rung by held-out masked-LM accuracy at [MASK] is `{full}`" in text  # not the timed rung
    assert f"In the CPU time of `{other}` (`{timed.name}`, 1,000 steps)" in text
    assert text.endswith("better than it at this scale."), text


def test_every_rung_is_a_recipe_the_lab_can_run():
    from lab.training.pretrain import PretrainConfig

    names = [r.name for r in ladder.rungs()]
    assert len(names) == len(set(names)) and names[0] == "bert"
    for rung in ladder.rungs():
        PretrainConfig(**rung.settings)  # valid settings
        assert rung.against is None or rung.against in names[: names.index(rung.name)]


def test_the_docs_show_the_committed_results():
    """docs/pretraining.md's ladder table is `python -m benchmarks.ladder --report --write-docs` of
    the committed results, to the character."""
    from benchmarks.ladder import MODERN_MODEL, RESULTS
    from tests.conftest import ROOT

    doc = (ROOT / "docs" / "pretraining.md").read_text()
    block = doc.split("<!-- ladder:start -->\n", 1)[1].split("<!-- ladder:end -->", 1)[0]
    assert block == ladder.report(ladder.load_results(RESULTS), MODERN_MODEL)


def test_every_finding_speaks_to_a_rung_of_the_ladder():
    rungs = {r.name: r for r in ladder.rungs()}
    assert ladder.papers(), "the papers' table is empty"
    for f in ladder.papers():
        assert f.rung in rungs, f.rung
        assert f.direction is None or f.direction in ladder.DIRECTIONS, f
        assert f.measure in ("mlm", "finetuned", "features"), f
        assert f.direction is None or rungs[f.rung].against, f"{f.rung} has no rung to be compared with"
    assert {f.paper for f in ladder.papers()} == {"BERT", "RoBERTa", "Cramming", "ModernBERT", "NeoBERT"}


@pytest.mark.parametrize(
    "interval, direction, expected",
    [
        ((0.05, 0.02, 0.08), "better", "holds"),
        ((0.05, 0.02, 0.08), "worse", "does not hold"),
        ((0.05, 0.02, 0.08), "same", "does not hold"),
        ((0.05, 0.02, 0.08), "not worse", "holds"),
        ((0.05, 0.02, 0.08), "not better", "does not hold"),
        ((-0.05, -0.08, -0.02), "better", "does not hold"),
        ((-0.05, -0.08, -0.02), "worse", "holds"),
        ((-0.05, -0.08, -0.02), "not worse", "does not hold"),
        ((-0.05, -0.08, -0.02), "not better", "holds"),
        ((0.01, -0.02, 0.04), "better", "not shown"),
        ((0.01, -0.02, 0.04), "worse", "not shown"),
        ((0.01, -0.02, 0.04), "same", "holds"),
        ((0.01, -0.02, 0.04), "not worse", "holds"),
    ],
)
def test_an_outcome_follows_from_the_interval_and_the_papers_direction(interval, direction, expected):
    assert ladder.outcome(interval, direction) == expected


def expected_words(low: float, high: float, direction: str) -> str:
    """The outcome written out independently of lab.studies.ladder: the interval's side of 0 against
    the sides the paper's direction allows."""
    side = "above" if low > 0 else "below" if high < 0 else "across"
    allowed = {
        "better": {"above"},
        "worse": {"below"},
        "same": {"across"},
        "not worse": {"above", "across"},
        "not better": {"below", "across"},
    }[direction]
    if side in allowed:
        return "its pattern holds at this scale"
    if side == "across":
        return "not distinguishable here, so neither confirmed nor contradicted"
    return "its pattern does not hold at this scale"


@pytest.fixture
def above_below_across(tmp_path):
    """no-nsp far above bert, geglu far below no-nsp, rotary exactly no-nsp (its difference is 0)."""
    for seed in range(2):
        files = {"bert": fake_result("bert", seed, 0.20), "no-nsp": fake_result("no-nsp", seed, 0.45, nsp=False)}
        files["geglu"] = fake_result("geglu", seed, 0.15, nsp=False)
        files["rotary"] = {**files["no-nsp"], "rung": "rotary"}
        for rung, result in files.items():
            (tmp_path / f"{rung}-seed{seed}.json").write_text(json.dumps(result))
    return ladder.load_results(tmp_path)


def test_every_verdict_in_the_report_follows_from_the_numbers(above_below_across):
    found = above_below_across
    text = ladder.report(found)
    against = {r.name: r.against for r in ladder.rungs()}
    checked = set()
    for f in ladder.papers():
        if not (f.direction and f.rung in found and against[f.rung] in found):
            assert f.direction is None or f"`{f.rung}` against" not in text
            continue
        _, low, high = ladder.accuracy(found[f.rung], f.measure, found[against[f.rung]])
        assert f"{f.paper} ({f.where}) found it" in text
        sentence = next(
            line for line in text.splitlines() if line.startswith("- **") and f"`{f.rung}` against" in line
            and ladder._MEASURE_WORDS[f.measure] in line
        )  # fmt: skip
        assert (
            f"{f.paper} ({f.where}) found it {ladder._DIRECTION_WORDS[f.direction]}: "
            + expected_words(low, high, f.direction)
            in sentence
        ), sentence
        checked.add((f.rung, f.measure))
    assert ("no-nsp", "mlm") in checked and ("geglu", "mlm") in checked and ("rotary", "mlm") in checked
    assert "BERT (Table 5, Section 5.1) found it worse: its pattern does not hold at this scale." in text
    assert "RoBERTa (Section 4.2, Table 2) found it no worse: its pattern holds at this scale." in text
    assert "ModernBERT (Section 2.1.1) found it better: its pattern does not hold at this scale." in text  # geglu
    assert "Cramming (Section 4.2, Attention Block) found it better: not distinguishable here" in text  # rotary
    holds, not_held, not_shown = (text.count(w) for w in _OUTCOMES)
    assert (
        f"Of {holds + not_held + not_shown} comparisons with a paper's direction, {holds} hold at this scale, " in text
    )
    assert f"{not_held} do not, and {not_shown} are not distinguishable here." in text


_OUTCOMES = (
    "its pattern holds at this scale",
    "its pattern does not hold at this scale",
    "not distinguishable here, so neither confirmed nor contradicted",
)


def test_the_report_works_with_any_subset_of_the_ladder(results):
    assert "No rung with a paper's direction has results yet." in ladder.report({})
    only_bert = ladder.report({"bert": {0: results["bert"][0]}})
    assert only_bert.startswith("Measured: 1 of") and "| `bert` |" in only_bert
    assert "CPU minutes per run" not in only_bert  # no `no-nsp` to measure the cost from
    two = ladder.report({"bert": results["bert"], "no-nsp": {1: results["no-nsp"][1]}})
    assert "(`no-nsp` against `bert`, masked-LM accuracy at [MASK], 1 seed)" in two
    assert "CPU minutes per run (median) on the ladder's CPU: `no-nsp` 5.0." in two
