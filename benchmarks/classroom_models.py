"""The two bundled classroom models on the same held-out masks: the 2018 recipe
(models/bert-lab-classroom) and the modern one (models/bert-lab-classroom-modern).

    .venv/bin/python -m benchmarks.classroom_models             # prints the table, writes the JSON

Both models are scored exactly as `python -m lab eval --model DIR --corpus ../shared/data/novels
--split held-out` scores them (the same held-out chapters, instances and fixed 15% masks; the
script refuses two models whose held-out masks differ), one row per held-out sequence, so the
difference of their accuracies at [MASK] gets a paired 95% interval (the sequences are
resampled, the same draws for both models). Writes benchmarks/classroom_models.json, which the
modern model's card and docs/pretraining.md quote.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import torch

from benchmarks.ladder import held_out  # per-sequence hits at [MASK]
from lab.studies.ladder import bootstrap
from lab.training.pretrain import evaluation

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "benchmarks" / "classroom_models.json"


def same_masks(a, b) -> bool:
    """Whether two evaluations score the same tokens at the same masked positions."""
    if len(a.batches) != len(b.batches):
        return False
    return all(
        torch.equal(x.input_ids, y.input_ids) and torch.equal(x.mlm_labels, y.mlm_labels)
        for x, y in zip(a.batches, b.batches, strict=True)
    )


def score(ev) -> dict:
    rows = held_out(ev.model, ev.batches, ev.mask_id, ltr=False, nsp=False)
    e, lo, hi = bootstrap([(rows["hits"], rows["counts"])])
    return {"rows": rows, "at_mask": [e, lo, hi], "predictions_at_mask": sum(rows["counts"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", type=Path, default=ROOT / "models" / "bert-lab-classroom")
    ap.add_argument("--new", type=Path, default=ROOT / "models" / "bert-lab-classroom-modern")
    ap.add_argument("--corpus", type=Path, default=DATA / "novels")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    old = evaluation(args.old, args.corpus, split="held-out")
    new = evaluation(args.new, args.corpus, split="held-out")
    if not same_masks(old, new):
        raise SystemExit(
            f"{args.old.name} and {args.new.name} were pre-trained with different held-out splits "
            "or evaluation lengths: their held-out masks differ, so they cannot be compared here"
        )
    a, b = score(old), score(new)
    diff = bootstrap([(b["rows"]["hits"], b["rows"]["counts"])], [(a["rows"]["hits"], a["rows"]["counts"])])
    result = {
        "command": "python -m benchmarks.classroom_models",
        "date": datetime.date.today().isoformat(),
        "sequences": old.instances,
        "rows_scored": len(a["rows"]["hits"]),  # lab eval's last batch repeats a few to fill up
        "predictions_at_mask": a["predictions_at_mask"],
        "models": {
            args.old.name: {"at_mask": a["at_mask"], "parameters": old.model.num_parameters()},
            args.new.name: {"at_mask": b["at_mask"], "parameters": new.model.num_parameters()},
        },
        "difference": {"of": f"{args.new.name} - {args.old.name}", "at_mask": list(diff)},
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"held-out accuracy at [MASK], {result['sequences']} sequences ({result['rows_scored']} rows, "
        f"as lab eval scores them), {a['predictions_at_mask']} [MASK] tokens:"
    )
    for name, m in result["models"].items():
        e, lo, hi = m["at_mask"]
        print(f"  {name}: {100 * e:.1f}% (95% interval {100 * lo:.1f} to {100 * hi:.1f})")
    e, lo, hi = diff
    print(f"  difference: {100 * e:+.1f} points (95% interval {100 * lo:+.1f} to {100 * hi:+.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
