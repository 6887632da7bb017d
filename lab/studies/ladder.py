"""The pre-training ladder's rungs (one change each, measured against the rung in `against`) and
its report: what the committed results of benchmarks/ladder.py say, with paired 95% bootstrap
intervals over seeds and held-out sentences, and the papers' findings beside them.

    found = ladder.load_results("benchmarks/ladder")        # {rung: {seed: result}}
    print(ladder.report(found, "models/bert-lab-classroom-modern"))  # the table, the sentences it supports

The folders are the caller's to name (benchmarks/ladder.py keeps the results beside itself): the
library reads what it is given, never the repository's own folders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Rung:
    name: str
    settings: dict  # PretrainConfig overrides
    what: str  # the change, in words
    source: str  # where the change comes from
    against: str | None = None  # the rung its difference is measured from
    group: str = ""
    # trains only the share of the ladder's steps that takes this rung's CPU time: the settings'
    # full-length rung (its name) against the rung named here (see steps_for)
    same_time: tuple[str, str] | None = None


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
    out.append(
        Rung(
            "modern-30-same-time",
            out[-1].settings,
            f"+ 30% masking in the CPU time of `{previous}` (fewer steps)",
            "ModernBERT (Section 2.2), at equal CPU time",
            previous,
            CUMULATIVE,
            same_time=("modern-30", previous),
        )
    )
    return out


def steps_for(rung: Rung, found: dict[str, dict[int, dict]], steps: int) -> int | None:
    """The steps a rung trains: the ladder's, or for a rung timed against another (same_time =
    (its full-length rung, the other rung)) the share of them that takes the other rung's median
    CPU minutes at the full-length rung's cost per step, rounded to an even count (the lesson
    recipe's two phases take half each), fixed by its first run so that every seed trains as many;
    None until both rungs have results."""
    if rung.same_time is None:
        return steps
    if found.get(rung.name):
        return min(r["steps"] for r in found[rung.name].values())
    full, other = rung.same_time
    if not (found.get(full) and found.get(other)):
        return None
    return 2 * round(steps * minutes(found[other]) / minutes(found[full]) / 2)


# ----------------------------------------------------------------------------------------
# The report
# ----------------------------------------------------------------------------------------
def load_results(folder: str | Path) -> dict[str, dict[int, dict]]:
    """{rung name: {seed: its result}} from the folder's JSON files (benchmarks/ladder.py's RESULTS:
    the committed ones)."""
    found: dict[str, dict[int, dict]] = {}
    for path in sorted(Path(folder).glob("*.json")):
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


def report(found: dict[str, dict[int, dict]], model_dir: str | Path | None = None) -> str:
    """The Markdown table and the sentences computed from it, with model_dir (a pre-trained model's
    folder) the rung it was pre-trained as (`choice`), then the papers beside the rungs
    (`papers_report`)."""
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
            sentences.append(
                f"- {rung.what} ({rung.source}): masked-LM accuracy at [MASK] {_delta(d)} points against "
                f"`{rung.against}`: {compared_to(d)} it at this scale."
            )
        nsp = _cell(bootstrap(_series(results, "nsp"))) if rung.settings.get("nsp", True) else "-"
        frozen = _cell(bootstrap(_series(results, "features")))
        tuned = _cell(bootstrap(_series(results, "finetuned")))
        lines.append(
            f"| `{rung.name}` | {rung.what} | {len(results)} | {mlm_text} | {against} | {diff_text} | {nsp} | "
            f"{frozen} | {tuned} | {minutes(results):.1f} |"
        )
    table = status(found) + "\n\n" + "\n".join(lines) + "\n\n" + "\n".join(sentences) + "\n"
    chosen = choice(found, model_dir) if model_dir is not None else ""
    table += f"\n**The modern classroom model's rung.** {chosen}\n" if chosen else ""
    return table + "\n" + papers_report(found)


def minutes(results: dict[int, dict]) -> float:
    """The median CPU minutes of a rung's runs (the upper middle one for an even count)."""
    return sorted(r["cpu_seconds"] / 60 for r in results.values())[len(results) // 2]


def _here(interval) -> str:
    """What an interval of a difference says: "better" (above 0), "worse" (below 0) or "same" (across 0)."""
    _, low, high = interval
    return "better" if low > 0 else "worse" if high < 0 else "same"


_HERE_WORDS = {"better": "better than", "worse": "worse than", "same": "not distinguishable from"}


def compared_to(interval) -> str:
    """The words for an interval of a difference: "better than", "worse than" or "not
    distinguishable from" (what follows is the thing compared with)."""
    return _HERE_WORDS[_here(interval)]


def status(found: dict[str, dict[int, dict]]) -> str:
    """One sentence: how much of the ladder the results cover."""
    names = [r.name for r in rungs()]
    measured = [n for n in names if found.get(n)]
    seeds = sorted({len(found[n]) for n in measured})
    span = "no" if not seeds else f"{seeds[0]}" if seeds[0] == seeds[-1] else f"{seeds[0]} to {seeds[-1]}"
    text = (
        f"Measured: {len(measured)} of {len(names)} rungs, {sum(len(found[n]) for n in measured)} runs, "
        f"{span} seed(s) a rung."
    )
    if not seeds or seeds[0] < 3:
        text += (
            " The ladder is still running: with fewer than 3 seeds an interval covers the held-out"
            " sentences, not the seeds."
        )
    return text


# ----------------------------------------------------------------------------------------
# The papers beside the rungs
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    """What one paper reported about one rung's change, measured against that rung's `against`."""

    rung: str
    paper: str
    where: str  # section or table
    reported: str  # its numbers and words, quoted from its text or copied from its table
    direction: str | None  # its finding for the change: a key of DIRECTIONS, or None where it states none
    measure: str = "mlm"  # the ladder's measure it is compared with ("mlm", "finetuned", "features")


# the outcomes here each of the papers' directions agrees with
DIRECTIONS = {
    "better": {"better"},
    "worse": {"worse"},
    "same": {"same"},
    "not worse": {"same", "better"},
    "not better": {"same", "worse"},
}
_DIRECTION_WORDS = {
    "better": "better",
    "worse": "worse",
    "same": "about the same",
    "not worse": "no worse",
    "not better": "no better",
}
_MEASURE_WORDS = {
    "mlm": "masked-LM accuracy at [MASK]",
    "finetuned": "SST-2 dev accuracy, fine-tuned",
    "features": "SST-2 dev accuracy, frozen features",
}
_TABLE8 = "Table 8, Appendix C.2"
_ROBUST = '"fine-tuning is surprisingly robust to different masking strategies"'


def _table8(rung: str, mnli: str, ner: str, feature: str, claim: str | None) -> list[Finding]:
    """Table 8's row for one mix against 80/10/10 (MNLI 84.2, NER fine-tune 95.4, feature-based 94.9)."""
    return [
        Finding(
            rung,
            "BERT",
            _TABLE8,
            f"MNLI fine-tune 84.2 -> {mnli}, NER fine-tune 95.4 -> {ner}; {_ROBUST}",
            "same",
            "finetuned",
        ),
        Finding(
            rung,
            "BERT",
            _TABLE8,
            f"NER feature-based 94.9 -> {feature}" + (f"; {claim}" if claim else ""),
            "worse" if claim else None,
            "features",
        ),
    ]


# Every finding, in the ladder's order: the paper's numbers from its tables, its words in quotes.
PAPERS: list[Finding] = [
    Finding(
        "bert",
        "BERT",
        "Table 5",
        "BERT-BASE, dev: MNLI-m 84.4, QNLI 88.4, MRPC 86.7, SST-2 92.7, SQuAD F1 88.5",
        None,
    ),
    Finding(
        "no-nsp",
        "BERT",
        "Table 5, Section 5.1",
        "MNLI-m 84.4 -> 83.9, QNLI 88.4 -> 84.9, MRPC 86.7 -> 86.5, SST-2 92.7 -> 92.6, SQuAD F1 88.5 -> 87.9; "
        '"removing NSP hurts performance significantly on QNLI, MNLI, and SQuAD 1.1"',
        "worse",
    ),
    Finding(
        "no-nsp",
        "RoBERTa",
        "Section 4.2, Table 2",
        "with NSP (SEGMENT-PAIR) MNLI-m 84.0, SST-2 92.9; without (DOC-SENTENCES) 84.7, 92.7; "
        '"removing the NSP loss matches or slightly improves downstream task performance, in contrast to '
        'Devlin et al. (2019)"',
        "not worse",
    ),
    Finding(
        "no-nsp",
        "RoBERTa",
        "Section 4.2, Table 2",
        "SST-2 92.9 (SEGMENT-PAIR, with NSP) -> 92.7 (DOC-SENTENCES, without)",
        "not worse",
        "finetuned",
    ),
    Finding(
        "no-nsp",
        "ModernBERT",
        "Section 2.2.2",
        '"We remove the Next-Sentence Prediction objective which introduces noticeable overhead for no '
        'performance improvement"',
        "not worse",
    ),
    Finding(
        "ltr-no-nsp",
        "BERT",
        "Table 5, Section 5.1",
        "against No NSP: MNLI-m 83.9 -> 82.1, QNLI 84.9 -> 84.3, MRPC 86.5 -> 77.5, SST-2 92.6 -> 92.1, "
        'SQuAD F1 87.9 -> 77.8; "The LTR model performs worse than the MLM model on all tasks, with large '
        'drops on MRPC and SQuAD" (it kept the left-only attention when fine-tuning; the ladder fine-tunes in '
        "both directions)",
        "worse",
        "finetuned",
    ),
    *_table8(
        "mask-100-0-0",
        "84.3",
        "94.9",
        "94.0",
        '"using only the MASK strategy was problematic when applying the feature-based approach to NER"',
    ),
    *_table8("mask-80-0-20", "84.1", "95.2", "94.6", None),
    *_table8("mask-80-20-0", "84.4", "95.2", "94.7", None),
    *_table8("mask-0-20-80", "83.7", "94.8", "94.6", None),
    *_table8(
        "mask-0-0-100",
        "83.6",
        "94.9",
        "94.6",
        '"using only the RND strategy performs much worse than our strategy as well"',
    ),
    Finding(
        "static",
        "RoBERTa",
        "Section 4.1, Table 1",
        "static against dynamic (medians of 5 seeds): SQuAD 2.0 F1 78.3 vs 78.7, MNLI-m 84.3 vs 84.0, "
        'SST-2 92.5 vs 92.9; "dynamic masking is comparable or slightly better than static masking"',
        "not better",
    ),
    Finding(
        "static",
        "RoBERTa",
        "Section 4.1, Table 1",
        "SST-2 92.9 (dynamic) -> 92.5 (static)",
        "not better",
        "finetuned",
    ),
    Finding(
        "pre-norm",
        "Cramming",
        "Section 4.2, Layer Structure",
        '"pre-normalization with Layer Norms is beneficial over post Layer Norms"; "the key effect of '
        "pre-normalization is to stabilize training and enable larger learning rates and reduced warmup, and "
        'we see limited benefits from including it by itself"',
        "not worse",
    ),
    Finding(
        "pre-norm",
        "ModernBERT",
        "Section 2.1.1",
        'a pre-normalization block, "which is known to help stabilize training", and a LayerNorm after the embeddings',
        None,
    ),
    Finding(
        "geglu",
        "Cramming",
        "Section 4.2, Feedforward Block",
        '"We do see small improvements from re-ordering the block into a gated linear unit" (with the hidden '
        "size halved by the gate, not restored: the ladder keeps BERT's parameter count)",
        "better",
    ),
    Finding(
        "geglu",
        "ModernBERT",
        "Section 2.1.1",
        'GeGLU, "in line with recent work showing consistent empirical improvements when using GLU variants"',
        "better",
    ),
    Finding(
        "rotary",
        "Cramming",
        "Section 4.2, Attention Block",
        '"We find rotary embeddings [...] to provide small benefits, but these are evened out by the drop in '
        'speed, so we ultimately decide against these"',
        "better",
    ),
    Finding(
        "rotary",
        "ModernBERT",
        "Section 2.1.1",
        'RoPE "instead of absolute positional embeddings", "motivated by the proven performance of RoPE in '
        'short- and long-context language models"',
        "better",
    ),
    Finding(
        "no-bias",
        "Cramming",
        "Section 4.2, Feedforward Block",
        '"We find empirical gains from disabling all linear layer biases": "we get higher throughput without '
        'compromising the rate at which the model improves" (a gain per second; per step, no loss)',
        "not worse",
    ),
    Finding(
        "no-bias",
        "ModernBERT",
        "Section 2.1.1",
        "no biases in the linear layers (but the decoder's) nor in the LayerNorms: \"These two changes allow "
        'us to spend more of our parameter budget in linear layers"',
        None,
    ),
    Finding(
        "no-bias",
        "NeoBERT",
        "Section 3, Efficiency",
        '"removing biases to simplify computations without sacrificing performance"',
        "not worse",
    ),
    Finding(
        "local",
        "ModernBERT",
        "Section 2.1.2 (efficiency improvements)",
        '"every third layer employs global attention [...] and the remaining layers use a 128 token, local '
        'sliding window attention"; the text states no effect on accuracy',
        None,
    ),
    Finding(
        "pre-norm+geglu+rotary",
        "NeoBERT",
        "Section 4, Table 2, Figure 1",
        "M1 turns on RoPE, SwiGLU and RMSNorm at once on a pre-LN BERT without NSP; its GLUE score is drawn "
        "in Figure 1 only, and the text gives no number for it",
        None,
    ),
    Finding(
        "modern-30",
        "ModernBERT",
        "Section 2.2.2",
        '"use a masking rate of 30 percent, as the original rate of 15 percent has since been shown to be sub-optimal"',
        "better",
    ),
    Finding(
        "modern-30",
        "Cramming",
        "Section 4.3, Objective",
        '"We see no improvement from masking at larger rates, e.g. at 40%"',
        "not better",
    ),
    Finding(
        "modern-30",
        "NeoBERT",
        "Section 4, M5",
        '15% (80/10/10) -> 20% (all [MASK]), GLUE: "increasing the masking ratio from 15% to 20% in M5 '
        'decreases performance by -0.7%"',
        "worse",
    ),
]


def papers() -> list[Finding]:
    """Every finding (PAPERS), in the ladder's order."""
    return list(PAPERS)


def outcome(interval, direction: str) -> str:
    """Whether a paper's direction shows here: "holds" (the interval agrees with it), "does not hold"
    (the interval is on the side the paper rules out) or "not shown" (the paper found a difference
    of one sign and the interval spans 0)."""
    here = _here(interval)
    if here in DIRECTIONS[direction]:
        return "holds"
    return "not shown" if here == "same" else "does not hold"


_OUTCOME_WORDS = {
    "holds": "its pattern holds at this scale",
    "does not hold": "its pattern does not hold at this scale",
    "not shown": "not distinguishable here, so neither confirmed nor contradicted",
}


def papers_report(found: dict[str, dict[int, dict]]) -> str:
    """The papers' findings beside the rungs, and one sentence per compared rung and measure saying
    which of them hold at this scale, computed from the ladder's interval and the paper's direction."""
    names = {r.name: r for r in rungs()}
    lines = [
        "### The papers beside the rungs",
        "",
        "The papers measured downstream dev scores (GLUE, SQuAD, NER) after days of pre-training on billions of "
        "words; the ladder measures held-out masked-LM accuracy at `[MASK]` after 2,000 steps on ten novels, so "
        "only the direction of a finding can be compared, never its size. Where a paper's claim is about "
        "fine-tuning or frozen features, the ladder's SST-2 columns are used instead.",
        "",
        "| rung | paper | where | what it reported | its direction for the change | compared here on |",
        "|---|---|---|---|---|---|",
    ]
    for f in papers():
        direction = _DIRECTION_WORDS[f.direction] if f.direction else "none stated"
        compared = _MEASURE_WORDS[f.measure] if f.direction else "-"
        lines.append(f"| `{f.rung}` | {f.paper} | {f.where} | {f.reported} | {direction} | {compared} |")
    sentences, counts = _comparisons(found, names)
    lines += ["", *sentences] if sentences else ["", "No rung with a paper's direction has results yet."]
    if sentences:
        lines += ["", _tally(counts)]
    cost = cpu_cost(found)
    return "\n".join(lines) + ("\n\n" + cost if cost else "") + "\n"


def _comparisons(found, names) -> tuple[list[str], dict[str, int]]:
    """One sentence per (rung, measure) with a paper's direction and results for the rung and its
    reference; the count of each outcome."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in papers():
        if f.direction:
            groups.setdefault((f.rung, f.measure), []).append(f)
    sentences, counts = [], {"holds": 0, "does not hold": 0, "not shown": 0}
    for (name, measure), findings in groups.items():
        rung = names[name]
        if not (found.get(name) and found.get(rung.against)):
            continue
        d = bootstrap(_series(found[name], measure), _series(found[rung.against], measure))
        seeds = min(len(found[name]), len(found[rung.against]))
        text = (
            f"- **{rung.what}** (`{name}` against `{rung.against}`, {_MEASURE_WORDS[measure]}, {seeds} "
            f"seed{'s' if seeds > 1 else ''}): {_delta(d)} points, {compared_to(d)} `{rung.against}` here."
        )
        for f in findings:
            result = outcome(d, f.direction)
            counts[result] += 1
            text += f" {f.paper} ({f.where}) found it {_DIRECTION_WORDS[f.direction]}: {_OUTCOME_WORDS[result]}."
        sentences.append(text)
    return sentences, counts


def _tally(counts: dict[str, int]) -> str:
    """One sentence: how many of the papers' directions hold here."""
    total = sum(counts.values())
    return (
        f"Of {total} comparisons with a paper's direction, {counts['holds']} hold at this scale, "
        f"{counts['does not hold']} do not, and {counts['not shown']} are not distinguishable here."
    )


# the PretrainConfig settings a rung may change, with their defaults (a run's pretrain_config.json
# names its rung by these)
RUNG_KEYS = {"objective": "mlm", "nsp": True, "masking": "80/10/10", "mlm_probability": 0.15, "mask_epochs": 0}


def rung_of(settings: dict) -> Rung | None:
    """The rung whose recipe a pre-training run used (its pretrain_config.json), None if none."""

    def key(values: dict) -> tuple:
        changes = ",".join(sorted(c for c in str(values.get("changes") or "").split(",") if c))
        return (changes, *(values.get(k, default) for k, default in RUNG_KEYS.items()))

    return next((r for r in rungs() if key(r.settings) == key(settings)), None)


def choice(found: dict[str, dict[int, dict]], model_dir: str | Path) -> str:
    """Sentences: which rung a model was pre-trained as (model_dir: its folder, e.g. the bundled modern
    classroom model's),
    the best rung by held-out masked-LM accuracy at [MASK] (the left-to-right rung aside), the
    model's rung's paired difference from it, and what each costs on a CPU ("" without the model or
    its rung's results)."""
    saved = Path(model_dir) / "pretrain_config.json"
    mine = rung_of(json.loads(saved.read_text())) if saved.is_file() else None
    if mine is None or not found.get(mine.name):
        return ""
    every = [r for r in rungs() if found.get(r.name) and r.settings.get("objective") != "ltr"]
    scores = {r.name: bootstrap(_series(found[r.name], "mlm")) for r in every if r.same_time is None}
    best = max(scores, key=lambda n: scores[n][0])
    text = (
        f"`{Path(model_dir).name}` was pre-trained as the rung `{mine.name}` "
        f"({len(found[mine.name])} seed(s) here): {_cell(scores[mine.name])} at [MASK], "
        f"{minutes(found[mine.name]):.1f} CPU minutes per run."
    )
    if best == mine.name:
        return text + " It is the ladder's best rung by held-out masked-LM accuracy at [MASK]."
    d = bootstrap(_series(found[mine.name], "mlm"), _series(found[best], "mlm"))
    text += (
        f" The ladder's best rung by held-out masked-LM accuracy at [MASK] is `{best}` "
        f"({len(found[best])} seed(s)): {_cell(scores[best])}, {minutes(found[best]):.1f} CPU minutes per run; "
        f"`{mine.name}` against it: {_delta(d)} points, {compared_to(d)} it at this scale."
    )
    timed = next((r for r in every if r.same_time and r.same_time[0] == best), None)
    if timed is None:
        return text
    d = bootstrap(_series(found[mine.name], "mlm"), _series(found[timed.name], "mlm"))
    steps = next(iter(found[timed.name].values())).get("steps")
    return text + (
        f" In the CPU time of `{timed.same_time[1]}` (`{timed.name}`, {steps:,} steps) `{best}` reaches "
        f"{_cell(bootstrap(_series(found[timed.name], 'mlm')))}; `{mine.name}` against it: {_delta(d)} points, "
        f"{compared_to(d)} it at this scale."
    )


def cpu_cost(found: dict[str, dict[int, dict]]) -> str:
    """One sentence: the median CPU minutes of a run of `no-nsp` and of each later change, alone and
    all together, on the ladder's CPU ("" without `no-nsp`'s results)."""
    if not found.get("no-nsp"):
        return ""
    base = minutes(found["no-nsp"])
    later = [r for r in rungs() if r.group in (MODERN_GROUP, CUMULATIVE) and found.get(r.name)]
    parts = [f"`{r.name}` {minutes(found[r.name]):.1f} ({minutes(found[r.name]) / base - 1:+.0%})" for r in later]
    return (
        f"CPU minutes per run (median) on the ladder's CPU: `no-nsp` {base:.1f}"
        + ("; " + ", ".join(parts) if parts else "")
        + ". These are the costs of the changes on a CPU, where ModernBERT's GPU kernels do not run."
    )
