"""The pre-training ladder's rungs and its report: which change each rung makes, and what the
committed results (benchmarks/ladder/, one JSON file per rung and seed, written by
benchmarks/ladder.py) say about it, with 95% intervals over seeds and sentences.

    from lab.studies import ladder
    found = ladder.load_results()            # {rung: {seed: result}}
    print(ladder.report(found))              # the Markdown table and the sentences it supports
    ladder.accuracy(found["bert"], "mlm")    # (estimate, low, high)

A rung changes one thing against the rung named in `against`; the difference of their held-out
masked-LM accuracies at [MASK] is bootstrapped with the same draws of seeds and sentences for
both (the rungs share seeds and held-out sentences: a paired comparison).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lab.files import REPOSITORY

RESULTS = REPOSITORY / "benchmarks" / "ladder"


@dataclass
class Rung:
    name: str
    settings: dict  # PretrainConfig overrides
    what: str  # the change, in words
    source: str  # where the change comes from
    against: str | None = None  # the rung its difference is measured from
    group: str = ""


MODERN_GROUP = "since BERT (no NSP, one change at a time)"
CUMULATIVE = "since BERT (cumulative)"


def rungs() -> list[Rung]:
    """The ladder, in the order the report shows it."""
    no_nsp = {"nsp": False}
    out = [
        Rung("bert", {}, "BERT: masked LM (15%, 80/10/10) + NSP", "BERT, Section 3.1", None, "BERT (Table 5)"),
        Rung("no-nsp", no_nsp, "No NSP", "BERT, Table 5", "bert", "BERT (Table 5)"),
        Rung(
            "ltr-no-nsp",
            {"nsp": False, "objective": "ltr"},
            "LTR & No NSP: left-to-right LM",
            "BERT, Table 5",
            "no-nsp",
            "BERT (Table 5)",
        ),
    ]
    for mix in ("100/0/0", "80/0/20", "80/20/0", "0/20/80", "0/0/100"):
        out.append(
            Rung(
                "mask-" + mix.replace("/", "-"),
                {"masking": mix},
                f"masking {mix}",
                "BERT, Table 8",
                "bert",
                "masking (Table 8)",
            )
        )
    out.append(
        Rung(
            "static", {"nsp": False, "mask_epochs": 1}, "No NSP, static masks", "RoBERTa, Table 1", "no-nsp", "RoBERTa"
        )
    )
    changes = [
        ("pre-norm", "pre-norm, a norm after the embeddings and at the end"),
        ("geglu", "GeGLU feed-forward (same parameters)"),
        ("rotary", "rotary positions"),
        ("no-bias", "no biases"),
        ("local", "local attention (window 64) in every second layer"),
    ]
    for name, what in changes:
        out.append(Rung(name, {"nsp": False, "changes": name}, what, "ModernBERT", "no-nsp", MODERN_GROUP))
    done, previous = [], changes[0][0]  # the chain starts from the first change alone
    for name, what in changes[:-1] + changes[-1:]:
        done.append(name)
        if len(done) == 1:
            continue
        rung_name = "+".join(done)
        out.append(
            Rung(rung_name, {"nsp": False, "changes": ",".join(done)}, "+ " + what, "ModernBERT", previous, CUMULATIVE)
        )
        previous = rung_name
    out.append(
        Rung(
            "modern-30",
            {"nsp": False, "changes": ",".join(done), "mlm_probability": 0.3, "max_predictions_per_seq": 39},
            "+ 30% masking",
            "ModernBERT (Section 2.2)",
            previous,
            CUMULATIVE,
        )
    )
    return out


# ----------------------------------------------------------------------------------------
# The report
# ----------------------------------------------------------------------------------------
def load_results(folder=None) -> dict[str, dict[int, dict]]:
    """{rung name: {seed: its result}} from the folder's JSON files (default: the committed ones)."""
    found: dict[str, dict[int, dict]] = {}
    for path in sorted(Path(folder or RESULTS).glob("*.json")):
        r = json.loads(path.read_text())
        found.setdefault(r["rung"], {})[r["seed"]] = r
    return found


def bootstrap(a: list[tuple], b: list[tuple] | None = None, reps: int = 2000, seed: int = 0):
    """(estimate, low, high) of a pooled accuracy sum(hits) / sum(counts), or of its difference
    from b's, 95% percentile interval. a, b: per seed, (hits, counts) per sentence. Seeds and
    sentences are both resampled (the same draws for a and b: the rungs share seeds and held-out
    sentences, so the difference is paired)."""

    def arrays(x):
        return np.array([h for h, _ in x], dtype=float), np.array([c for _, c in x], dtype=float)

    ha, ca = arrays(a)
    hb, cb = arrays(b) if b is not None else (None, None)
    seeds = min(len(ha), len(hb)) if b is not None else len(ha)

    def value(si, ti):
        acc = ha[si][:, ti].sum() / ca[si][:, ti].sum()
        return acc - hb[si][:, ti].sum() / cb[si][:, ti].sum() if b is not None else acc

    rng = np.random.default_rng(seed)
    n = ha.shape[1]
    draws = [value(rng.integers(0, seeds, seeds), rng.integers(0, n, n)) for _ in range(reps)]
    estimate = value(np.arange(seeds), np.arange(n))
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(estimate), float(low), float(high)


def accuracy(results: dict[int, dict], what: str, against: dict[int, dict] | None = None):
    """(estimate, low, high) of one measure over a rung's seeds ("mlm": at [MASK], or the next
    token for the left-to-right rung; "nsp"; "features" / "finetuned": SST-2 dev), or of its
    difference from `against`'s."""
    return bootstrap(_series(results, what), None if against is None else _series(against, what))


def _series(results: dict[int, dict], what: str) -> list[tuple]:
    """Per seed, (hits, counts) per sentence for one measure."""
    out = []
    for _, r in sorted(results.items()):
        if what == "mlm":
            out.append((r["held_out"]["hits"], r["held_out"]["counts"]))
        elif what == "nsp":
            out.append((r["held_out"]["nsp"], [1] * len(r["held_out"]["nsp"])))
        else:
            right = r["sst2"][what]
            out.append((right, [1] * len(right)))
    return out


def _cell(interval) -> str:
    e, lo, hi = interval
    return f"{100 * e:.1f} ({100 * lo:.1f} to {100 * hi:.1f})"


def _delta(interval) -> str:
    e, lo, hi = interval
    return f"{100 * e:+.1f} ({100 * lo:+.1f} to {100 * hi:+.1f})"


def report(found: dict[str, dict[int, dict]]) -> str:
    """The Markdown table and the sentences computed from it."""
    lines = [
        "| rung | change | seeds | MLM at [MASK] % | vs | difference, points | NSP % "
        "| SST-2 frozen % | SST-2 fine-tuned % | CPU min/run |",
        "|---|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    sentences = []
    for rung in rungs():
        results = found.get(rung.name)
        if not results:
            continue
        ltr = rung.settings.get("objective") == "ltr"
        mlm = bootstrap(_series(results, "mlm"))
        mlm_text = ("next token " if ltr else "") + _cell(mlm)
        diff_text, against = "", rung.against or ""
        if rung.against in found and not ltr:
            d = bootstrap(_series(results, "mlm"), _series(found[rung.against], "mlm"))
            diff_text = _delta(d)
            verdict = "better than" if d[1] > 0 else "worse than" if d[2] < 0 else "not distinguishable from"
            sentences.append(
                f"- {rung.what} ({rung.source}): masked-LM accuracy at [MASK] {_delta(d)} points against "
                f"`{rung.against}`: {verdict} it at this scale."
            )
        nsp = _cell(bootstrap(_series(results, "nsp"))) if rung.settings.get("nsp", True) else "-"
        frozen = _cell(bootstrap(_series(results, "features")))
        tuned = _cell(bootstrap(_series(results, "finetuned")))
        minutes = sorted(r["cpu_seconds"] / 60 for r in results.values())[len(results) // 2]  # the median
        lines.append(
            f"| `{rung.name}` | {rung.what} | {len(results)} | {mlm_text} | {against} | {diff_text} | {nsp} | "
            f"{frozen} | {tuned} | {minutes:.1f} |"
        )
    return status(found) + "\n\n" + "\n".join(lines) + "\n\n" + "\n".join(sentences) + "\n"


def status(found: dict[str, dict[int, dict]]) -> str:
    """One sentence: how much of the ladder the results cover."""
    names = [r.name for r in rungs()]
    measured = [n for n in names if found.get(n)]
    seeds = sorted({len(found[n]) for n in measured})
    text = (
        f"Measured: {len(measured)} of {len(names)} rungs, {sum(len(found[n]) for n in measured)} runs, "
        f"{' to '.join(map(str, seeds)) if seeds else 'no'} seed(s) a rung."
    )
    if not seeds or seeds[0] < 3:
        text += (
            " The ladder is still running: with fewer than 3 seeds an interval covers the held-out"
            " sentences, not the seeds."
        )
    return text
