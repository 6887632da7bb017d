"""The browser edition's Step by step view measured in chromium on this CPU: how long from a change
of the input to the whole trace computed and drawn, and what the view adds to the page's weight.

    python -m benchmarks.web_steps --site site                  # a site exported with --trace all
    python -m benchmarks.web_steps                              # exports one into a temporary folder
    python -m benchmarks.web_steps --site site --changes 40 --json web_steps.json

The site (python -m lab export-web --trace all: a MiniLM model's weights are left out by default;
without --site, bert-lab-classroom and minilm-squad are exported into a temporary folder) is
served by the standard library's static server: no cross-origin isolation, so onnxruntime-web and
the page run on one thread, as on most static hosts. The page is opened in Debian's headless
chromium (playwright) on ?view=steps.

1. Speed. For each model, --changes inputs (default 24) are typed into Sentence A and B and traced
   with Enter, one after the other; each is timed inside the page with performance.now() from the
   key press to the view's "steps-drawn" event, which the view sends after the next frame has been
   painted: bertLab.trace computed, the flow drawn, the open block's every matrix drawn. Inputs:
   pairs of consecutive sentences of the novels (8 to 40 words), one word of A hidden by [MASK]
   (as in benchmarks/web_browser.py); for minilm-squad also SQuAD dev questions with their
   paragraphs. Measured with the embeddings open (Figure 2 and five matrices) and with layer 0's
   attention open (nine matrices). A model that takes longer than 30 ms draws each layer as it
   finishes: the time to the first layer on screen is the view's own mark (after a painted frame).
   Targets: bert-lab-classroom, median <= 100 ms; minilm-squad, the first layer drawn early and
   the whole <= 1 s (medians). Then the same inputs through bertLab.trace alone (no drawing): what
   of the time is the computation.
2. Weight. web/dist/app.js + style.css built from the tree as it is against the same built from
   --baseline (default: the commit before the view's first file was added), each in a temporary copy of
   web/ (web/dist is left alone), with web/build.mjs; and the bytes each source file puts into
   app.js (esbuild's metafile, the same options). Target: at most 1 MB more. The weights the view
   loads (each model's weights.safetensors, fetched on the first trace) are listed apart.
Prints Markdown tables headed by the command line; --json OUT saves every number.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.web_browser import CHROMIUM, chromium, mask_one, novel_pairs, served, summary
from lab.data.datasets import data_dir
from lab.data.squad import load_squad
from lab.web.export import export_site

ROOT = Path(__file__).resolve().parents[1]

MODELS = ("bert-lab-classroom", "minilm-squad")
VIEW_FILES = (  # web/src/: the Step by step view's own files (the trace it draws is api.js's and trace.js's)
    "steps.js",
    "flow.js",
    "detail.js",
    "matrix.js",
    "table.js",
    "figure2.js",
    "labels.js",
    "describe.js",
    "words.js",
    "tour.js",
    "tour_stops.js",
)
BLOCKS = {"embeddings": "embeddings", "layer 0 attention": "layer.0.attention.1"}
TARGETS = {"bert-lab-classroom": 100.0, "minilm-squad": 1000.0}  # median ms, change -> drawn
TIMEOUT_MS = 600_000
MB = 1_000_000

# One change: the input typed, Enter pressed, and the time to the view's "steps-drawn" event.
CHANGE_JS = """async ([a, b]) => {
  const panel = document.querySelector("#panel-steps");
  const box = document.querySelector("#steps-a");
  const drawn = new Promise((done) => panel.addEventListener("steps-drawn", (e) => done(e.detail), {once: true}));
  const started = performance.now();
  box.value = a;
  document.querySelector("#steps-b").value = b ?? "";
  box.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", bubbles: true}));
  const detail = await drawn;
  return {ms: performance.now() - started, first_layer_ms: detail.layers[0]?.ms ?? null, tokens: detail.tokens};
}"""

# The computation alone, for comparison: bertLab.trace on the same input, without the view.
TRACE_JS = """async ([a, b, model]) => {
  const started = performance.now();
  await bertLab.trace(a, b, {model});
  return performance.now() - started;
}"""

# The same options as web/build.mjs, with esbuild's metafile: the bytes each input puts into app.js.
METAFILE_JS = """
import { build } from "esbuild";
const result = await build({
  entryPoints: ["src/main.js"], bundle: true, format: "esm", minify: true, target: "es2022", write: false,
  conditions: ["onnxruntime-web-use-extern-wasm"], outfile: "dist/app.js", legalComments: "linked",
  metafile: true,
});
const out = Object.entries(result.metafile.outputs).find(([name]) => name.endsWith("app.js"))[1];
const bytes = Object.entries(out.inputs).map(([name, input]) => [name, input.bytesInOutput]);
console.log(JSON.stringify(Object.fromEntries(bytes)));
"""


# ----------------------------------------------------------------------------------------------
# Speed
# ----------------------------------------------------------------------------------------------
def inputs(data: Path, n: int, seed: int = 0) -> dict[str, list[tuple[str, str | None]]]:
    """n (A, B) rows of each kind: novel pairs with a [MASK] in A, and SQuAD questions and paragraphs."""
    rng = random.Random(seed)
    pairs = [(mask_one(a, rng), b) for a, b in novel_pairs(data, n, rng)]
    squad = [(ex.question, ex.context) for ex in rng.sample(load_squad(data / "squad" / "dev-v1.1.json.zip"), n)]
    return {"novel pairs": pairs, "SQuAD question + paragraph": squad}


def open_steps(browser, url: str, model: str, block: str):
    """The view on `model` with `block` open, its opening example computed (the weights loaded)."""
    page = browser.new_context().new_page()
    page.set_default_timeout(TIMEOUT_MS)
    query = f"?view=steps&model={model}" + ("" if block == "embeddings" else f"&open={block}")
    started = time.perf_counter()
    page.goto(url + query)
    page.wait_for_function("Number(document.querySelector('#panel-steps')?.dataset.computed || 0) >= 1")
    first = time.perf_counter() - started
    assert page.get_attribute(f"button.block[data-block='{block}']", "aria-expanded") == "true", block
    return page, first


def measure(browser, url: str, model: str, block: str, rows: list) -> dict:
    page, first = open_steps(browser, url, model, block)
    times = [page.evaluate(CHANGE_JS, list(row)) for row in rows]
    alone = [page.evaluate(TRACE_JS, [*row, model]) for row in rows]
    page.context.close()
    firsts = [t["first_layer_ms"] for t in times if t["first_layer_ms"] is not None]
    result = {"model": model, "block": block, "first_load_s": first, **summary([t["ms"] for t in times])}
    result["first_layer_median_ms"] = statistics.median(firsts) if firsts else None
    result["layer_by_layer"] = len(firsts)
    result["tokens_median"] = statistics.median(t["tokens"] for t in times)
    result["trace_alone_median_ms"] = statistics.median(alone)
    return result


def measure_speed(browser, url: str, rows: dict, models: list[str]) -> list[dict]:
    out = []
    for model in models:
        kinds = rows if model == "minilm-squad" else {"novel pairs": rows["novel pairs"]}
        for kind, inputs_ in kinds.items():
            for name, block in BLOCKS.items():
                print(f"speed: {model}, {kind}, {name} open ...", file=sys.stderr, flush=True)
                out.append({**measure(browser, url, model, block, inputs_), "inputs": kind, "block": name})
    return out


# ----------------------------------------------------------------------------------------------
# Weight
# ----------------------------------------------------------------------------------------------
def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def default_baseline() -> str:
    """The commit before the first of the view's files was added (HEAD when none is committed yet)."""
    paths = [f"web/src/{name}" for name in VIEW_FILES]
    added = git("log", "--diff-filter=A", "--format=%H", "--", *paths).splitlines()
    return git("rev-parse", "--short", f"{added[-1]}^") if added else "HEAD"


def web_copy(into: Path, revision: str | None) -> Path:
    """web/ of `revision` (git archive) or of the working tree, in `into`, sharing web/node_modules."""
    web = into / "web"
    if revision:
        archive = subprocess.run(["git", "archive", revision, "web"], cwd=ROOT, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    else:
        shutil.copytree(ROOT / "web", web, ignore=shutil.ignore_patterns("node_modules", "dist"))
    (web / "node_modules").symlink_to(ROOT / "web" / "node_modules")
    return web


def page_bytes(web: Path) -> dict:
    subprocess.run(["node", "build.mjs"], cwd=web, check=True, capture_output=True)
    return {name: (web / "dist" / name).stat().st_size for name in ("app.js", "style.css")}


def measure_weight(baseline: str, site: Path) -> dict:
    """The page's bytes built from `baseline` and from the tree now, app.js by source file, and the
    weights files of the site's models."""
    print(f"weight: building the page of {baseline} and of the tree now ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="web-steps-") as tmp:
        before_dir, after_dir = Path(tmp) / "before", Path(tmp) / "after"
        before_dir.mkdir()
        after_dir.mkdir()
        before = page_bytes(web_copy(before_dir, baseline))
        web = web_copy(after_dir, None)
        after = page_bytes(web)
        metafile = ["node", "--input-type=module", "-e", METAFILE_JS]
        inputs_ = json.loads(subprocess.run(metafile, cwd=web, check=True, capture_output=True).stdout)
    files = {k.removeprefix("src/"): v for k, v in inputs_.items() if k.startswith("src/")}
    manifest = json.loads((site / "manifest.json").read_text(encoding="utf-8"))
    return {
        "baseline": baseline,
        "baseline_commit": git("rev-parse", "--short", baseline),
        "before": before,
        "after": after,
        "source_bytes": files,
        "packages_bytes": sum(inputs_.values()) - sum(files.values()),
        "weights": {m["name"]: m["trace"]["bytes"] for m in manifest["models"] if m.get("trace")},
    }


# ----------------------------------------------------------------------------------------------
# The command and its report
# ----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def the_site(given: Path | None, models_dir: Path):
    if given is not None:
        if not (given / "manifest.json").is_file():
            raise SystemExit(f"error: {given} is not an exported site (no manifest.json)")
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="web-steps-site-") as tmp:
        print(f"exporting {', '.join(MODELS)} into {tmp} ...", file=sys.stderr, flush=True)
        log = lambda line: print(line, file=sys.stderr)  # noqa: E731
        export_site(tmp, names=list(MODELS), models_dir=models_dir, log=log, trace="all")  # MiniLM too
        yield Path(tmp)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", type=Path, help="an exported site (default: export one into a temporary folder)")
    ap.add_argument("--models-dir", type=Path, default=ROOT / "models", help="the models to export (default: models/)")
    ap.add_argument("--data", type=Path, default=data_dir(), help="the shared data folder (default: $BERT_LAB_DATA)")
    ap.add_argument("--changes", type=int, default=24, help="inputs traced per model, kind and block (default 24)")
    ap.add_argument("--baseline", default=None, help="the revision the page's weight is compared with")
    ap.add_argument("--chromium", default=CHROMIUM, help=f"the browser (default {CHROMIUM})")
    ap.add_argument("--json", type=Path, help="save every number here")
    args = ap.parse_args(argv)
    if args.data is None or not Path(args.data).is_dir():
        ap.error(f"no data folder at {args.data} (give --data or set BERT_LAB_DATA)")
    if args.changes < 20:
        ap.error("--changes: at least 20 (the targets are medians over 20 or more changes)")
    return args


def run(args) -> dict:
    started = time.perf_counter()
    result: dict = {"command": shlex.join(["python", "-m", "benchmarks.web_steps", *sys.argv[1:]])}
    rows = inputs(args.data, args.changes)
    with the_site(args.site, args.models_dir) as site, served(site) as url, chromium(args.chromium) as b:
        names = [m["name"] for m in json.loads((site / "manifest.json").read_text())["models"] if m.get("trace")]
        missing = [m for m in MODELS if m not in names]
        if missing:
            raise SystemExit(
                f"error: the site cannot trace {', '.join(missing)}: "
                "export them with python -m lab export-web --trace all"
            )
        result["browser"] = b.version
        result["speed"] = measure_speed(b, url, rows, list(MODELS))
        result["weight"] = measure_weight(args.baseline or default_baseline(), site)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def speed_table(rows: list[dict]) -> list[str]:
    lines = [
        "| model | inputs (median tokens) | block open | changes | median ms | p95 ms | first layer drawn, median ms "
        "| bertLab.trace alone, median ms | target (median) |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        first = f"{r['first_layer_median_ms']:.0f}" if r["first_layer_median_ms"] is not None else "(all at once)"
        bound = TARGETS[r["model"]]
        met = "met" if r["median_ms"] <= bound else "MISSED"
        lines.append(
            f"| {r['model']} | {r['inputs']} ({r['tokens_median']:.0f}) | {r['block']} | {r['n']} "
            f"| {r['median_ms']:.1f} | {r['p95_ms']:.1f} | {first} | {r['trace_alone_median_ms']:.1f} "
            f"| ≤ {bound:.0f} ms: {met} |"
        )
    return lines


def weight_table(w: dict) -> list[str]:
    before, after = sum(w["before"].values()), sum(w["after"].values())
    view = sum(v for k, v in w["source_bytes"].items() if k in VIEW_FILES)
    lines = [
        f"| page weight (web/dist) | before the view ({w['baseline_commit']}) | now | more |",
        "|---|---:|---:|---:|",
    ]
    for name in ("app.js", "style.css"):
        b, a = w["before"][name], w["after"][name]
        lines.append(f"| {name} | {b:,} B | {a:,} B | {a - b:+,} B |")
    lines.append(
        f"| both | {before / MB:.3f} MB | {after / MB:.3f} MB | {(after - before) / MB:+.3f} MB "
        f"(target ≤ 1 MB: {'met' if after - before <= MB else 'MISSED'}) |"
    )
    lines += ["", f"Of app.js now, the Step by step view's own files put in {view:,} B (esbuild's metafile).", ""]
    lines += ["| weights the view loads (on the first trace) | bytes |", "|---|---:|"]
    lines += [f"| {name} weights.safetensors | {b / MB:.2f} MB |" for name, b in w["weights"].items()]
    return lines


def report(result: dict) -> str:
    lines = [
        f"`{result['command']}`",
        "",
        f"chromium {result['browser']} headless, one wasm thread (a plain static server); "
        f"{result['seconds'] / 60:.1f} minutes in all.",
        "",
        *speed_table(result["speed"]),
        "",
        *weight_table(result["weight"]),
    ]
    return "\n".join(lines)


def main(argv=None) -> None:
    args = parse_args(argv)
    result = run(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(report(result))


if __name__ == "__main__":
    main()
