"""The browser edition measured in chromium on this CPU: does the page agree with the lab, and how
fast is it on a student's device?

    python -m benchmarks.web_browser --site site --json web_browser.json    # both parts, about 15-30 min
    python -m benchmarks.web_browser --site site --speed                    # only the timings
    python -m benchmarks.web_browser --agreement --limit 50                 # a short try (exports a site)

The site (python -m lab export-web; without --site one is exported into a temporary folder) is
served by a plain static file server (the standard library's: no cross-origin isolation, so
onnxruntime-web computes on one thread, as on most static hosts) or with --server serve-web by the
lab's own server (isolated: up to 4 threads), and opened in Debian's headless chromium (playwright).

1. --agreement: the quantized MiniLM models through window.bertLab against their PyTorch form
   (lab.load), on the data and with the reference code of benchmarks/web_quantization.py, which
   measured the same graphs in onnxruntime in Python (its tasks are imported, not rewritten):
     minilm-squad  bertLab.answer's best span on the questions of the 8 held-out SQuAD v1.1 dev
                   articles (lab.data.squad.split_by_article): the share equal to PyTorch's, and
                   EM / F1 of both (lab.data.squad_metrics.evaluate). Targets: >= 95% the same span, EM and
                   F1 within 1 point.
     minilm-sst2   bertLab.classify on SST-2 dev: accuracy of both. Target: within 0.5 point.
     minilm-ner    bertLab.tag on UNER English-EWT test, given the data's words: entity F1 of both
                   (lab.data.tag_metrics.entity_scores, conlleval's counting). Target: within 1 point.
   The calls are batched: many per page.evaluate. --limit N takes the first N items of each.
2. --speed: every model of the site x every view it serves, --inputs calls (default 50) timed inside
   the page with performance.now() around the bertLab call, after one warm-up call that also loads
   the model; inputs of realistic length: sentences of the novels (one word hidden by [MASK] for
   fill-mask; a sentence and the next for next-sentence), SQuAD dev questions with their
   paragraphs, SST-2 dev phrases, UNER test sentences. Then --loads fresh page loads (a new
   browser context each: nothing cached): the time from navigation to the first view drawn (the
   opening example of openings.json: #panel-fill-mask's data-computed is "0") and to the first
   view computed on the device (#fill-mask-run clicked, data-computed "1"), median.
   Targets: fill-mask on the classroom model <= 50 ms, QA on minilm-squad <= 500 ms (medians),
   first view drawn <= 3 s.
Prints Markdown tables headed by the command line; --json OUT saves every number.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import random
import shlex
import statistics
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
from tqdm import tqdm

import lab
from benchmarks.web_quantization import TASKS  # the reference: the same data, the same PyTorch code
from lab.data.corpus import read_documents
from lab.data.datasets import data_dir
from lab.data.squad import load_squad, split_by_article
from lab.data.squad_metrics import evaluate
from lab.data.tag_metrics import entity_scores
from lab.data.tagged_files import read_tagged
from lab.training.finetune import encode_classification, read_classification
from lab.web.export import export_site
from lab.web.serve import make_server

ROOT = Path(__file__).resolve().parents[1]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
BATCH = 25  # bertLab calls per page.evaluate
TIMEOUT_MS = 600_000
MODELS = {"answer": "minilm-squad", "classify": "minilm-sst2", "tag": "minilm-ner"}
TARGETS = {  # name -> (what, bound, lower is better)
    "qa_same_span": ("minilm-squad: best span equal to PyTorch's", 0.95, False),
    "qa_em_diff": ("minilm-squad: EM, browser vs PyTorch (points apart)", 1.0, True),
    "qa_f1_diff": ("minilm-squad: F1, browser vs PyTorch (points apart)", 1.0, True),
    "sst2_accuracy_diff": ("minilm-sst2: accuracy, browser vs PyTorch (points apart)", 0.5, True),
    "ner_f1_diff": ("minilm-ner: entity F1, browser vs PyTorch (points apart)", 1.0, True),
    "fill_mask_median_ms": ("bert-lab-classroom fill-mask: median ms", 50.0, True),
    "qa_median_ms": ("minilm-squad answer: median ms", 500.0, True),
    "first_view_drawn_s": ("first view drawn after navigation: median s", 3.0, True),
}

# One bertLab call per row of `calls` (its arguments), in order; each result reduced to what the
# comparison needs (`pick`), or {error} when the call threw: a bad row does not end the batch.
CALLS_JS = """async ({method, calls, pick}) => {
  const reduce = {
    answer: (r) => r.spans[0]?.text ?? "",
    classify: (r) => r.labels[0],
    tag: (r) => r.words.map((w) => w.tag),
  }[pick];
  const out = [];
  for (const args of calls) {
    try { out.push(reduce(await window.bertLab[method](...args))); }
    catch (e) { out.push({error: String(e?.message ?? e)}); }
  }
  return out;
}"""

# The first row once (it loads the model: its time is the first call's), then every row timed.
TIMES_JS = """async ({method, calls}) => {
  const run = async (args) => {
    const t = performance.now();
    await window.bertLab[method](...args);
    return performance.now() - t;
  };
  const first = await run(calls[0]);
  const times = [];
  for (const args of calls) times.push(await run(args));
  return {first, times};
}"""

# Before the page's own script: the moment #panel-fill-mask's data-computed first takes each value.
MARKS_JS = """window.__marks = {};
new MutationObserver(() => {
  const c = document.querySelector("#panel-fill-mask")?.dataset.computed;
  if (c !== undefined && !(c in window.__marks)) window.__marks[c] = performance.now();
}).observe(document, {subtree: true, childList: true, attributes: true});"""

ENVIRONMENT_JS = """() => ({
  userAgent: navigator.userAgent,
  hardwareConcurrency: navigator.hardwareConcurrency,
  crossOriginIsolated: self.crossOriginIsolated,
  wasmThreads: self.crossOriginIsolated ? Math.min(4, navigator.hardwareConcurrency || 1) : 1,
})"""


# ----------------------------------------------------------------------------------------------
# Serving the site and driving the page
# ----------------------------------------------------------------------------------------------
class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no line per request
        pass


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # a page closed mid-download: not an error here
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def served(site: Path, server: str = "plain"):
    """The site's address while a server serves it: "plain" (the standard library's static
    server, no headers of its own) or "serve-web" (lab.web.serve: cross-origin isolated)."""
    if server == "serve-web":
        httpd = make_server(site, port=0)
    else:
        httpd = QuietServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextlib.contextmanager
def chromium(executable: str = CHROMIUM):
    """Headless chromium (playwright driving the system's browser)."""
    from playwright.sync_api import sync_playwright  # here: the measures import without playwright

    if not Path(executable).exists():
        raise SystemExit(f"error: no chromium at {executable} (`make browser` installs Debian's)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser, url: str):
    """A page of the site with window.bertLab defined (in a new context: nothing cached)."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    page.wait_for_function("window.bertLab !== undefined")
    return page


def page_calls(page, method: str, calls: list[list], pick: str, label: str = "") -> list:
    """bertLab[method](*row) for every row of `calls`, BATCH rows per page.evaluate, each
    reduced by `pick` ("answer", "classify", "tag"); a call that threw gives {"error": message}."""
    out = []
    with tqdm(total=len(calls), desc=f"browser {label or method}", unit="call", file=sys.stderr) as bar:
        for i in range(0, len(calls), BATCH):
            chunk = calls[i : i + BATCH]
            out += page.evaluate(CALLS_JS, {"method": method, "calls": chunk, "pick": pick})
            bar.update(len(chunk))
    return out


def page_times(page, method: str, calls: list[list]) -> dict:
    """{first, times}: milliseconds of the warm-up call (loads the model) and of every call."""
    return page.evaluate(TIMES_JS, {"method": method, "calls": calls})


def errors_of(results: list) -> list[str]:
    return [r["error"] for r in results if isinstance(r, dict) and "error" in r]


# ----------------------------------------------------------------------------------------------
# Agreement: the core measures (pure functions of predictions; the test holds them)
# ----------------------------------------------------------------------------------------------
def points_diff(browser: float, pytorch: float) -> float:
    return round(abs(browser - pytorch), 6)


def qa_agreement(examples, browser: list, pytorch: list[str]) -> dict:
    """Best spans of the page and of PyTorch on SQuAD `examples` (in order): the share equal, and
    EM / F1 (points, lab.data.squad_metrics.evaluate) of each. A failed page call counts as an empty answer."""
    page = [b if isinstance(b, str) else "" for b in browser]
    scores = {
        side: evaluate(examples, {ex.id: a for ex, a in zip(examples, answers)})
        for side, answers in (("browser", page), ("pytorch", pytorch))
    }
    same = sum(a == b for a, b in zip(browser, pytorch)) / len(examples)
    result = {"questions": len(examples), "same_best_span": same, "errors": len(errors_of(browser))}
    for side, s in scores.items():
        result[side] = {"EM": s["exact_match"], "F1": s["f1"]}
    result["qa_same_span"] = same
    result["qa_em_diff"] = points_diff(result["browser"]["EM"], result["pytorch"]["EM"])
    result["qa_f1_diff"] = points_diff(result["browser"]["F1"], result["pytorch"]["F1"])
    return result


def classify_agreement(gold: list[int], browser: list, pytorch: list[int], labels: list[str]) -> dict:
    """Label ids: gold, PyTorch's; the page's label names (in `labels`, the ids' order)."""
    page = [labels.index(b) if b in labels else -1 for b in browser]
    accuracy = {
        "browser": 100 * sum(p == g for p, g in zip(page, gold)) / len(gold),
        "pytorch": 100 * sum(p == g for p, g in zip(pytorch, gold)) / len(gold),
    }
    return {
        "phrases": len(gold),
        "same_label": sum(p == q for p, q in zip(page, pytorch)) / len(gold),
        "errors": len(errors_of(browser)),
        "browser": {"accuracy": accuracy["browser"]},
        "pytorch": {"accuracy": accuracy["pytorch"]},
        "sst2_accuracy_diff": points_diff(accuracy["browser"], accuracy["pytorch"]),
    }


def tag_agreement(gold: list[list[str]], browser: list, pytorch: list[str]) -> dict:
    """Tags per sentence: gold, the page's; PyTorch's as one flat list (web_quantization's form).
    Entity F1 (points) of each, and the share of words tagged alike. A failed call tags all O."""
    page = [b if isinstance(b, list) and len(b) == len(g) else ["O"] * len(g) for b, g in zip(browser, gold)]
    at, nested = 0, []
    for sentence in gold:
        nested.append(pytorch[at : at + len(sentence)])
        at += len(sentence)
    f1 = {side: 100 * entity_scores(gold, tags).micro.f1 for side, tags in (("browser", page), ("pytorch", nested))}
    flat = [t for sentence in page for t in sentence]
    return {
        "sentences": len(gold),
        "same_tag": sum(a == b for a, b in zip(flat, pytorch)) / max(1, len(flat)),
        "errors": len(errors_of(browser))
        + sum(isinstance(b, list) and len(b) != len(g) for b, g in zip(browser, gold)),
        "browser": {"entity F1": f1["browser"]},
        "pytorch": {"entity F1": f1["pytorch"]},
        "ner_f1_diff": points_diff(f1["browser"], f1["pytorch"]),
    }


# ----------------------------------------------------------------------------------------------
# Agreement: the three models, on the page and in PyTorch
# ----------------------------------------------------------------------------------------------
def pytorch_reference(name: str, models_dir: Path, data: Path, limit):
    """web_quantization's measure of `name` run on its PyTorch form: (predictions, model, tokenizer)."""
    model, tokenizer = lab.load(models_dir / name)
    measure, what = TASKS[name](model, tokenizer, data, limit)
    print(f"PyTorch {name}: {what} ...", file=sys.stderr, flush=True)
    predicted, _ = measure(model)
    return predicted, model, tokenizer


def agree_squad(page, models_dir: Path, data: Path, limit) -> dict:
    name = MODELS["answer"]
    reference, model, _ = pytorch_reference(name, models_dir, data, limit)
    _, dev = split_by_article(
        load_squad(data / "squad" / "dev-v1.1.json.zip"), model.task_settings.get("train_articles", 40)
    )
    dev = dev[:limit] if limit else dev
    calls = [[ex.question, ex.context, {"model": name, "topK": 1}] for ex in dev]
    return qa_agreement(dev, page_calls(page, "answer", calls, "answer", name), reference)


def agree_sst2(page, models_dir: Path, data: Path, limit) -> dict:
    name = MODELS["classify"]
    reference, model, tokenizer = pytorch_reference(name, models_dir, data, limit)
    phrases = read_classification(data / "sst2" / "dev.tsv", limit=limit)
    gold = encode_classification(
        phrases, tokenizer, model.config.label2id, model.task_settings.get("max_seq_length", 128)
    )
    calls = [[text, None, {"model": name}] for text in phrases.texts]
    labels = [model.config.id2label[i] for i in range(len(model.config.id2label))]
    return classify_agreement(gold.labels, page_calls(page, "classify", calls, "classify", name), reference, labels)


def agree_ner(page, models_dir: Path, data: Path, limit) -> dict:
    name = MODELS["tag"]
    reference, _, _ = pytorch_reference(name, models_dir, data, limit)
    sentences = read_tagged(data / "uner-ewt" / "en_ewt-ud-test.iob2", "uner").sentences
    sentences = sentences[:limit] if limit else sentences
    calls = [[s.words, {"model": name}] for s in sentences]
    return tag_agreement([s.tags for s in sentences], page_calls(page, "tag", calls, "tag", name), reference)


def measure_agreement(browser, url: str, models_dir: Path, data: Path, limit) -> dict:
    results = {}
    for name, measure in (("minilm-squad", agree_squad), ("minilm-sst2", agree_sst2), ("minilm-ner", agree_ner)):
        page = open_page(browser, url)
        started = time.perf_counter()
        results[name] = measure(page, models_dir, data, limit) | {"seconds": 0.0}
        results[name]["seconds"] = round(time.perf_counter() - started, 1)
        page.context.close()
    return results


# ----------------------------------------------------------------------------------------------
# Speed: inputs of realistic length, the timings, first view
# ----------------------------------------------------------------------------------------------
def summary(times_ms: list[float]) -> dict:
    """Median and 95th percentile (linear interpolation, as numpy.percentile) of the times."""
    return {
        "n": len(times_ms),
        "median_ms": float(statistics.median(times_ms)),
        "p95_ms": float(np.percentile(times_ms, 95)),
        "max_ms": float(max(times_ms)),
    }


def mask_one(sentence: str, rng: random.Random) -> str:
    """The sentence with one of its words (letters only, three or more) replaced by [MASK]."""
    words = sentence.split()
    candidates = [i for i, w in enumerate(words) if w.isalpha() and len(w) > 2] or [len(words) // 2]
    i = rng.choice(candidates)
    return " ".join([*words[:i], "[MASK]", *words[i + 1 :]])


def novel_pairs(data: Path, n: int, rng: random.Random, words=(8, 40)) -> list[tuple[str, str]]:
    """n random pairs of consecutive sentences of the novels, each of words[0] to words[1] words."""
    pairs = [
        (a, b)
        for doc in read_documents(data / "novels")
        for a, b in zip(doc.sentences, doc.sentences[1:])
        if all(words[0] <= len(s.split()) <= words[1] for s in (a, b))
    ]
    return rng.sample(pairs, n)


def speed_inputs(data: Path, n: int, seed: int = 0) -> dict[str, list[list]]:
    """Each view's n argument rows (without the options: speed_calls adds {model})."""
    rng = random.Random(seed)
    pairs = novel_pairs(data, n, rng)
    squad = rng.sample(load_squad(data / "squad" / "dev-v1.1.json.zip"), n)
    phrases = rng.sample(read_classification(data / "sst2" / "dev.tsv").texts, n)
    tagged = rng.sample(read_tagged(data / "uner-ewt" / "en_ewt-ud-test.iob2", "uner").sentences, n)
    return {
        "fill-mask": [[mask_one(a, rng)] for a, _ in pairs],
        "next-sentence": [[a, b] for a, b in pairs],
        "attention": [[a, None] for a, _ in pairs],
        "answer": [[ex.question, ex.context] for ex in squad],
        "classify": [[text, None] for text in phrases],
        "tag": [[" ".join(s.words)] for s in tagged],
    }


METHODS = {
    "fill-mask": ("fillMask", {"topK": 5}),
    "next-sentence": ("nextSentence", {}),
    "attention": ("attention", {}),
    "answer": ("answer", {"topK": 5}),
    "classify": ("classify", {}),
    "tag": ("tag", {}),
}


def speed_calls(inputs: dict[str, list[list]], view: str, model: str) -> tuple[str, list[list]]:
    method, options = METHODS[view]
    return method, [[*row, {"model": model, **options}] for row in inputs[view]]


def measure_views(browser, url: str, manifest: dict, inputs: dict) -> list[dict]:
    """Every model x every view it serves: the timings, in a fresh page per model."""
    rows = []
    jobs = [(entry["name"], view) for entry in manifest["models"] for view in entry["views"]]
    page, current = None, None
    for name, view in tqdm(jobs, desc="speed: model x view", file=sys.stderr):
        if name != current:
            if page is not None:
                page.context.close()
            page, current = open_page(browser, url), name
        method, calls = speed_calls(inputs, view, name)
        timed = page_times(page, method, calls)
        rows.append({"model": name, "view": view, "first_call_ms": timed["first"], **summary(timed["times"])})
    if page is not None:
        page.context.close()
    return rows


def first_view(browser, url: str, loads: int = 5) -> dict:
    """Fresh page loads (a new context each: an empty cache): seconds from navigation to the
    opening fill-mask view drawn, and to it computed on the device after #fill-mask-run."""
    drawn, computed = [], []
    for _ in tqdm(range(loads), desc="first view: fresh loads", file=sys.stderr):
        context = browser.new_context()
        context.add_init_script(MARKS_JS)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(url)
        page.wait_for_function("document.querySelector('#panel-fill-mask')?.dataset.computed === '0'")
        page.click("#fill-mask-run")
        page.wait_for_function("document.querySelector('#panel-fill-mask')?.dataset.computed === '1'")
        marks = page.evaluate("window.__marks")
        drawn.append(marks["0"] / 1000)
        computed.append(marks["1"] / 1000)
        context.close()
    return {
        "loads": loads,
        "drawn_s": drawn,
        "computed_s": computed,
        "drawn_median_s": statistics.median(drawn),
        "computed_median_s": statistics.median(computed),
    }


# ----------------------------------------------------------------------------------------------
# Targets and the report
# ----------------------------------------------------------------------------------------------
def speed_values(views: list[dict], first: dict) -> dict[str, float]:
    """The timed targets' values from measure_views' rows and first_view's result."""
    found = {(r["model"], r["view"]): r["median_ms"] for r in views}
    values = {"first_view_drawn_s": first["drawn_median_s"]} if first else {}
    if ("bert-lab-classroom", "fill-mask") in found:
        values["fill_mask_median_ms"] = found[("bert-lab-classroom", "fill-mask")]
    if ("minilm-squad", "answer") in found:
        values["qa_median_ms"] = found[("minilm-squad", "answer")]
    return values


def check_targets(values: dict[str, float]) -> list[dict]:
    """Each target with a value: {key, what, value, bound, met}."""
    out = []
    for key, (what, bound, lower) in TARGETS.items():
        if key in values:
            value = values[key]
            met = value <= bound if lower else value >= bound
            out.append({"key": key, "what": what, "value": value, "bound": bound, "met": bool(met)})
    return out


def agreement_table(agreement: dict) -> list[str]:
    lines = [
        "| model | data | measure | PyTorch | browser (int8) | difference | same prediction | failed calls "
        "| s (PyTorch + page) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    data = {"minilm-squad": "questions", "minilm-sst2": "phrases", "minilm-ner": "sentences"}
    same = {"minilm-squad": "same_best_span", "minilm-sst2": "same_label", "minilm-ner": "same_tag"}
    for name, r in agreement.items():
        for measure, value in r["pytorch"].items():
            diff = r["browser"][measure] - value
            lines.append(
                f"| {name} | {r[data[name]]} {data[name]} | {measure} | {value:.2f} | {r['browser'][measure]:.2f} "
                f"| {diff:+.2f} | {r[same[name]]:.2%} | {r['errors']} | {r['seconds']:.0f} |"
            )
    return lines


def speed_table(views: list[dict], first: dict) -> list[str]:
    lines = [
        "| model | view | calls | median ms | p95 ms | max ms | first call (loads the model) ms |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in views:
        lines.append(
            f"| {r['model']} | {r['view']} | {r['n']} | {r['median_ms']:.1f} | {r['p95_ms']:.1f} "
            f"| {r['max_ms']:.1f} | {r['first_call_ms']:.0f} |"
        )
    if first:
        lines += [
            "",
            f"| fresh page loads ({first['loads']}) | median s | each s |",
            "|---|---:|---|",
            f"| navigation -> first view drawn | {first['drawn_median_s']:.2f} "
            f"| {', '.join(f'{s:.2f}' for s in first['drawn_s'])} |",
            f"| navigation -> first view computed on the device | {first['computed_median_s']:.2f} "
            f"| {', '.join(f'{s:.2f}' for s in first['computed_s'])} |",
        ]
    return lines


def targets_table(targets: list[dict]) -> list[str]:
    lines = ["| target | value | bound | met |", "|---|---:|---:|---|"]
    for t in targets:
        sign = "<=" if TARGETS[t["key"]][2] else ">="
        value = f"{t['value']:.2%}" if t["key"] == "qa_same_span" else f"{t['value']:.2f}"
        bound = f"{t['bound']:.0%}" if t["key"] == "qa_same_span" else f"{t['bound']:g}"
        lines.append(f"| {t['what']} | {value} | {sign} {bound} | {'yes' if t['met'] else 'NO'} |")
    return lines


# ----------------------------------------------------------------------------------------------
# The command
# ----------------------------------------------------------------------------------------------
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agreement", action="store_true", help="part 1 only (with --speed: both, the default)")
    ap.add_argument("--speed", action="store_true", help="part 2 only (with --agreement: both, the default)")
    ap.add_argument("--site", type=Path, help="an exported site (default: export one into a temporary folder)")
    ap.add_argument("--models-dir", type=Path, default=ROOT / "models", help="the PyTorch models (default: models/)")
    ap.add_argument("--data", type=Path, default=data_dir(), help="the shared data folder (default: $BERT_LAB_DATA)")
    ap.add_argument("--limit", type=int, default=None, help="agreement: the first N items of each data set")
    ap.add_argument("--inputs", type=int, default=50, help="speed: timed calls per model and view (default 50)")
    ap.add_argument("--loads", type=int, default=5, help="speed: fresh page loads for the first view (default 5)")
    ap.add_argument("--server", choices=("plain", "serve-web"), default="plain", help="how the site is served")
    ap.add_argument("--chromium", default=CHROMIUM, help=f"the browser (default {CHROMIUM})")
    ap.add_argument("--json", type=Path, help="save every number here")
    args = ap.parse_args(argv)
    if not (args.agreement or args.speed):
        args.agreement = args.speed = True
    if args.data is None or not Path(args.data).is_dir():
        ap.error(f"no data folder at {args.data} (give --data or set BERT_LAB_DATA)")
    return args


@contextlib.contextmanager
def the_site(given: Path | None, models_dir: Path):
    """The site given, or one exported into a temporary folder for the run."""
    if given is not None:
        if not (given / "manifest.json").is_file():
            raise SystemExit(f"error: {given} is not an exported site (no manifest.json)")
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="web-browser-") as tmp:
        print(f"exporting the site into {tmp} ...", file=sys.stderr, flush=True)
        export_site(tmp, models_dir=models_dir, log=lambda line: print(line, file=sys.stderr, flush=True))
        yield Path(tmp)


def run(args) -> dict:
    started = time.perf_counter()
    result: dict = {
        "command": shlex.join(["python", "-m", "benchmarks.web_browser", *sys.argv[1:]]),
        "server": args.server,
    }
    with the_site(args.site, args.models_dir) as site, served(site, args.server) as url, chromium(args.chromium) as b:
        manifest = json.loads((site / "manifest.json").read_text(encoding="utf-8"))
        result["site"] = str(args.site or "a temporary export")
        page = open_page(b, url)
        result["browser"] = page.evaluate(ENVIRONMENT_JS) | {"version": b.version}
        page.context.close()
        values: dict[str, float] = {}
        if args.agreement:
            result["agreement"] = measure_agreement(b, url, args.models_dir, args.data, args.limit)
            for r in result["agreement"].values():
                values |= {k: v for k, v in r.items() if k in TARGETS}
        if args.speed:
            inputs = speed_inputs(args.data, args.inputs)
            result["speed"] = {"views": measure_views(b, url, manifest, inputs)}
            result["speed"]["first_view"] = first_view(b, url, args.loads)
            values |= speed_values(result["speed"]["views"], result["speed"]["first_view"])
    result["targets"] = check_targets(values)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def report(result: dict) -> str:
    b = result["browser"]
    lines = [
        f"`{result['command']}`",
        "",
        f"chromium {b['version']} headless, {b['hardwareConcurrency']} logical CPUs seen, served {result['server']} "
        f"(cross-origin isolated: {b['crossOriginIsolated']}, so {b['wasmThreads']} wasm thread(s)); "
        f"{result['seconds'] / 60:.1f} minutes in all.",
    ]
    if "agreement" in result:
        lines += ["", *agreement_table(result["agreement"])]
    if "speed" in result:
        lines += ["", *speed_table(result["speed"]["views"], result["speed"]["first_view"])]
    return "\n".join([*lines, "", *targets_table(result["targets"])])


def main(argv=None) -> None:
    args = parse_args(argv)
    result = run(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(report(result))


if __name__ == "__main__":
    main()
