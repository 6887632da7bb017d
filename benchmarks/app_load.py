"""A classroom's load on the dashboard: concurrent clients sending mixed requests.

    python benchmarks/app_load.py                       # starts `python app.py` in its own process
    python benchmarks/app_load.py --url http://HOST:7860/   # or measures a running dashboard
    python benchmarks/app_load.py --clients 30 --requests 10 --concurrency 2
    python benchmarks/app_load.py --users 30 --think 2          # a class: each student pauses ~2 s between clicks
    python benchmarks/app_load.py --only /attention --distinct  # server CPU per request, every input new
    python benchmarks/app_load.py --only /why_classify --distinct  # the "why?" views: /why_classify, /why_answer

Each client (a thread) sends --requests requests drawn in turn from a classroom mix:
fill-mask, next sentence, attention (heatmaps + head statistics), question answering,
classification and tokenization, each with its tab's default model. All clients start together.
Clients speak Gradio's HTTP API directly (POST /gradio_api/call/<name>, then read the result
stream), which costs the shared CPU far less than 30 gradio_client objects would
(--client gradio_client uses those instead). Prints per-endpoint and overall p50/p95/max latency
(the time the client waits, queueing included) and the number of errors (an error event, or a
warning in the status line for these valid inputs). --think T: each student waits 0.5T-1.5T
(uniform, seeded) between requests. --distinct: every request's text is new (no request can be
answered from the dashboard's caches). When the dashboard is started here, the CPU time its
process used is printed too (per request: with --only, per request of that endpoint).
Targets with the bundled models on 2 CPU cores: p95 <= 1 s and 0 errors for 30 x 10 (no think
time, issue 5; --users 30 --think 2, the dashboard issue), server CPU per attention request <= 30 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def requests_for(app_defaults: dict, tag: str = "", only=None) -> list[tuple[str, tuple]]:
    """The classroom mix: (api_name, arguments) pairs, cycled through by every client (`tag`:
    a word added to each text, to make it new); endpoints outside the mix (the "why?" views)
    when `only` names them."""
    mlm, qa, cls = app_defaults["fill_mask"], app_defaults["answer"], app_defaults["classify"]
    context = (
        "The Nautilus was a submarine built by Captain Nemo on a desert island. It was driven by "
        "electricity, and Nemo used it to explore the oceans of the world for many years."
    )
    mix = [
        (
            "/fill_mask",
            (
                mlm,
                f"it is a truth universally [MASK] , that a single man must be in want of a wife {tag}.",
                5,
                1.0,
                "light",
            ),
        ),
        ("/next_sentence", (mlm, "she opened the letter with trembling hands .", f"it was from her sister {tag}.")),
        ("/fill_mask", (mlm, f"the captain of the [MASK] looked at me and [MASK] {tag}.", 5, 1.0, "light")),
        ("/attention", (mlm, f"the cat sat on the mat because it was tired {tag}.", "", 1, 0, "light")),
        ("/answer", (qa, "Who built the Nautilus?", context + f" {tag}", 3, "light")),
        ("/classify", (cls, f"a charming and often moving film {tag}.", "")),
        ("/tokenize", (mlm, f"The playing children were unbelievably happy {tag}.")),
    ]
    # the "why?" views (attribution): not in the classroom mix (a click in an accordion); --only picks them
    extra = [
        ("/why_classify", (cls, f"a charming and often moving film {tag}.", "", "integrated gradients", "light")),
        ("/why_answer", (qa, "Who built the Nautilus?", context + f" {tag}", "integrated gradients", "light")),
    ]
    if only:
        mix += [(name, args) for name, args in extra if name in only]
    return [(name, args) for name, args in mix if args[0] is not None]


def http_predict(url: str, api_name: str, args: tuple, timeout: float = 120) -> list:
    """One call of a Gradio event over plain HTTP: submit, then read the event stream."""
    body = json.dumps({"data": list(args)}).encode()
    req = urllib.request.Request(
        f"{url.rstrip('/')}/gradio_api/call{api_name}", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        event_id = json.loads(r.read())["event_id"]
    with urllib.request.urlopen(f"{url.rstrip('/')}/gradio_api/call{api_name}/{event_id}", timeout=timeout) as r:
        event = None
        for raw in r:
            line = raw.decode().strip()
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                data = json.loads(line.split(":", 1)[1])
                if event == "error":
                    raise RuntimeError(f"error event: {data}")
                return data
    raise RuntimeError("the result stream ended without a result")


def server_cpu(server) -> float:
    """CPU seconds (user + system) the dashboard's process has used so far (Linux /proc)."""
    if server is None:
        return 0.0
    fields = Path(f"/proc/{server.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default=None, help="a running dashboard (default: start app.py here)")
    ap.add_argument("--clients", "--users", type=int, default=30)
    ap.add_argument("--think", type=float, default=0.0, help="seconds a student pauses between requests (mean)")
    ap.add_argument("--distinct", action="store_true", help="every request's text is new (nothing from a cache)")
    ap.add_argument("--requests", type=int, default=10, help="requests per client")
    ap.add_argument("--concurrency", type=int, default=2, help="app.py --concurrency when started here")
    ap.add_argument("--only", nargs="*", help="restrict the mix to these endpoints (e.g. /fill_mask)")
    ap.add_argument("--client", choices=["http", "gradio_client"], default="http")
    args = ap.parse_args()
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from gradio_client import Client

    # the dashboard runs in its own process, as in class; this process only plays the students
    sys.path.insert(0, str(ROOT))
    import app  # for the tabs' default models
    from dashboard import Settings

    store = Settings.from_args(app.parser().parse_args([])).store()  # the models app.py would serve
    defaults = {task: store.default_model(task) for task in ("fill_mask", "answer", "classify")}
    server, url = None, args.url
    if url is None:
        port = 7870
        server = subprocess.Popen(
            [sys.executable, str(ROOT / "app.py"), "--port", str(port), "--concurrency", str(args.concurrency)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}/"
        for _ in range(120):  # wait until it answers
            try:
                urllib.request.urlopen(url, timeout=1)
                break
            except OSError:
                time.sleep(0.5)

    def mix_for(tag: str = "") -> list[tuple[str, tuple]]:
        return [
            (name, call) for name, call in requests_for(defaults, tag, args.only) if not args.only or name in args.only
        ]

    mix = mix_for()
    print(
        f"{args.clients} clients x {args.requests} requests against {url}, think {args.think} s"
        f"{', every text new' if args.distinct else ''}; models: {defaults}"
    )

    if args.client == "gradio_client":
        clients = [Client(url, verbose=False) for _ in range(args.clients)]
        predict = [lambda call, name, c=c: c.predict(*call, api_name=name) for c in clients]
    else:
        predict = [lambda call, name: http_predict(url, name, call)] * args.clients
    latencies: dict[str, list[float]] = {}
    errors: list[str] = []
    lock, start = threading.Lock(), threading.Barrier(args.clients)

    def student(k: int) -> None:
        import random

        rng = random.Random(k)
        start.wait()  # everyone clicks at once
        for i in range(args.requests):
            if i and args.think:
                time.sleep(rng.uniform(0.5, 1.5) * args.think)
            name, call = (mix_for(f"w{k}x{i}") if args.distinct else mix)[(k + i) % len(mix)]
            t = time.perf_counter()
            try:
                out = predict[k](call, name)
                status = out[-1] if isinstance(out, (tuple, list)) else ""
                problem = status if isinstance(status, str) and status.startswith("⚠️") else None
            except Exception as e:  # a refused or failed request
                problem = f"{type(e).__name__}: {e}"
            elapsed = time.perf_counter() - t
            with lock:
                latencies.setdefault(name, []).append(elapsed)
                if problem:
                    errors.append(f"{name}: {problem}")

    for name, call in mix:  # warm-up: load each model once (as before a class)
        predict[0](call, name)
    cpu0 = server_cpu(server)
    t0 = time.perf_counter()
    threads = [threading.Thread(target=student, args=(k,)) for k in range(args.clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t0

    every = [x for xs in latencies.values() for x in xs]
    print(f"{'endpoint':<16} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, xs in sorted(latencies.items()):
        print(
            f"{name:<16} {len(xs):>4} {1000 * statistics.median(xs):>8.0f} {1000 * percentile(xs, 0.95):>8.0f} "
            f"{1000 * max(xs):>8.0f}"
        )
    p95 = percentile(every, 0.95)
    print(
        f"{'all':<16} {len(every):>4} {1000 * statistics.median(every):>8.0f} {1000 * p95:>8.0f} "
        f"{1000 * max(every):>8.0f}"
    )
    print(f"{len(every)} requests in {wall:.1f} s ({len(every) / wall:.1f}/s); errors: {len(errors)}")
    if server is not None:
        cpu = server_cpu(server) - cpu0
        print(
            f"server CPU: {cpu:.2f} s, {1000 * cpu / len(every):.1f} ms per request"
            + (f" ({', '.join(args.only)})" if args.only else " (the mix)")
        )
    for e in errors[:10]:
        print("  ", e)
    verdict = "met" if p95 <= 1.0 and not errors else "MISSED"
    print(f"target p95 <= 1 s and 0 errors: {verdict} (p95 {1000 * p95:.0f} ms, {len(errors)} errors)")
    if server is not None:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
