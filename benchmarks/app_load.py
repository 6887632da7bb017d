"""A classroom's load on the dashboard: students with the page open, clicking with pauses.

    python -m benchmarks.app_load --users 100 --think 2      # a lecture hall
    python -m benchmarks.app_load --users 100 --arrive 2 --think 2 --continuous 90   # clicking for 90 s
    python -m benchmarks.app_load --users 30 --think 2 --profile   # how much of a click is queueing
    python -m benchmarks.app_load --curve 10,30,60,100,150 --think 2   # p95 against class size
    python -m benchmarks.app_load --url http://HOST:7860/    # a dashboard already running
    python -m benchmarks.app_load --only /attention --distinct   # server CPU per request, every input new

The dashboard runs in its own process (`python app.py`, started here unless --url); a class
arrives once it prints that it is ready. Each student is a thread doing what a browser does, over
Gradio's HTTP API (`student`): --requests clicks each, or (--continuous S) clicks until S seconds
after the class began. Each report opens with the CPU and the precision the server chose, then
prints p50/p95/max latency per endpoint (queueing included), the errors and the server's CPU per
request; --profile adds each endpoint's latency alone against under load (the share spent waiting).
The target (docs/performance.md): p95 <= 1 s and 0 errors for --users 100 --think 2 on 2 cores.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def requests_for(app_defaults: dict, tag: str = "", only=None) -> list[tuple[str, tuple]]:
    """The classroom mix: (api_name, arguments) pairs, cycled through by every client (`tag`:
    a word added to each text, to make it new); endpoints outside the mix (the "why?" views)
    when `only` names them."""
    mlm, qa, cls = app_defaults["fill_mask"], app_defaults["answer"], app_defaults["classify"]
    tagger = app_defaults.get("tag")
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
        ("/tag", (tagger, f"Captain Nemo sailed the Nautilus from Vanikoro to the Red Sea {tag}.")),
        # the views inside the encoder (a click in an accordion under the tabs above)
        ("/logit_lens", (mlm, f"the captain of the [MASK] looked at me {tag}.", "light")),
        ("/why_classify", (cls, f"a charming and often moving film {tag}.", "", "integrated gradients", "light")),
        ("/why_answer", (qa, "Who built the Nautilus?", context + f" {tag}", "integrated gradients", "light")),
        ("/why_fill_mask", (mlm, f"the captain of the [MASK] looked at me {tag}.", "integrated gradients", "light")),
    ]
    return [(name, args) for name, args in mix if args[0] is not None and (not only or name in only)]


def http_predict(url: str, api_name: str, args: tuple, timeout: float = 120, session: str | None = None) -> list:
    """One call of a Gradio event over plain HTTP: submit, then read the event stream. `session`:
    the student's session id (a browser keeps one per page it opened; None: a new session per call,
    as a script calling the API without one)."""
    body = json.dumps({"data": list(args), **({"session_hash": session} if session else {})}).encode()
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


def opening_events(url: str) -> list[dict]:
    """The events a browser runs when the page opens (the page's load events and the chain that
    follows them, those with a server function), in order, each with the page's starting values of
    its inputs and whether it goes through the queue; read from the dashboard's config."""
    with urllib.request.urlopen(f"{url.rstrip('/')}/config", timeout=60) as r:
        config = json.loads(r.read())
    values = {c["id"]: c.get("props", {}).get("value") for c in config["components"]}
    # the dashboard's own page: the configuration also holds the class rounds' pages (/teacher, /play)
    mine = config.get("page", {}).get("", {}).get("dependencies")
    deps = [d for d in config["dependencies"] if mine is None or d["id"] in mine]
    order = [d["id"] for d in deps if any(t[1] == "load" for t in d["targets"])]
    for d in deps:  # .then() chains after a load event (the config lists them after their trigger)
        if d.get("trigger_after") in order:
            order.append(d["id"])
    by_id = {d["id"]: d for d in deps}
    return [
        {"fn_index": i, "data": [values.get(c) for c in by_id[i]["inputs"]], "queue": bool(by_id[i]["queue"])}
        for i in order
        if by_id[i]["backend_fn"]
    ]


def _post(url: str, payload: dict, timeout: float) -> bytes:
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read()


def open_page(url: str, session: str, events: list[dict], timeout: float = 120) -> None:
    """What a browser does to open the dashboard: fetch the page (HTML with the page's config), then
    run its opening events in the student's session (the first creates the session): unqueued ones
    by POST /run/predict, queued ones by joining the queue and reading the session's stream."""
    root = url.rstrip("/")
    with urllib.request.urlopen(url, timeout=timeout) as r:
        r.read()
    for event in events:
        body = {"data": event["data"], "fn_index": event["fn_index"], "session_hash": session, "trigger_id": None}
        if not event["queue"]:
            _post(f"{root}/gradio_api/run/predict", body, timeout)
            continue
        event_id = json.loads(_post(f"{root}/gradio_api/queue/join", body, timeout))["event_id"]
        with urllib.request.urlopen(f"{root}/gradio_api/queue/data?session_hash={session}", timeout=timeout) as r:
            for raw in r:
                line = raw.decode().strip()
                if line.startswith("data:"):
                    msg = json.loads(line[5:])
                    if msg.get("event_id") == event_id and msg.get("msg") == "process_completed":
                        if not msg.get("success", True):
                            raise RuntimeError(f"an opening event failed: {msg.get('output')}")
                        break


def server_cpu(server) -> float:
    """CPU seconds (user + system) the dashboard's process has used so far (Linux /proc)."""
    if server is None:
        return 0.0
    fields = Path(f"/proc/{server.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


UNKNOWN_PRECISION = "unknown (a server started elsewhere)"


def start_server(concurrency: int, queue_size: int | None = None, port: int = 7870):
    """`python app.py` in its own process, returned once it prints that it is ready (every tab's
    model loaded): a class arrives at a fresh server. Returns (process, url, precision): the
    precision as the start-up banner's `  precision: ` line says (app.banner)."""
    extra = ["--queue-size", str(queue_size)] if queue_size else []
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "app.py"), "--port", str(port), "--concurrency", str(concurrency), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    started = time.perf_counter()
    for line in server.stdout:
        if "BERT Lab is ready" in line:
            break
    else:
        raise SystemExit("the dashboard exited before it was ready")
    precision = "not printed by the server"
    for line in server.stdout:  # the rest of the banner, printed at once and ended by a blank line
        if line.startswith("  precision: "):
            precision = line.removeprefix("  precision: ").strip()
            break
        if not line.strip():
            break
    print(f"dashboard ready {time.perf_counter() - started:.1f} s after start")
    threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()  # keep the pipe drained
    return server, f"http://127.0.0.1:{port}/", precision


def cpu_kind(pid: int | None = None) -> dict:
    """The CPU the numbers come from: its model name, the cores process `pid` may use (None: this
    process), and whether it has AMX tiles and bf16 instructions (AVX512-BF16 or AMX), as
    lab.device sees them (they decide the server's precision)."""
    from lab.device import cpu_has_amx, cpu_has_bf16_instructions  # deferred: imports torch

    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:  # not Linux
        lines = []
    model = next((line.partition(":")[2].strip() for line in lines if line.startswith("model name")), "")
    try:
        cores = len(os.sched_getaffinity(pid or 0))
    except (AttributeError, OSError):  # no affinity on this system, or the process is gone
        cores = os.cpu_count() or 1
    return {
        "model": model or platform.processor() or "unknown",
        "cores": cores,
        "amx": cpu_has_amx(),
        "bf16_instructions": cpu_has_bf16_instructions(),
    }


def describe_machine(cpu: dict, precision: str, here: bool = True) -> str:
    """One line: the CPU's kind and the precision the server computes in (here: the server runs
    on this machine, started by this benchmark; else the CPU is only this machine's)."""
    yes = {True: "yes", False: "no"}
    whose = "the server" if here else "this benchmark (a server started elsewhere may run on another CPU)"
    return (
        f"CPU: {cpu['model']}, {cpu['cores']} cores for {whose}; AMX tiles: {yes[cpu['amx']]}; "
        f"bf16 instructions (AVX512-BF16 or AMX): {yes[cpu['bf16_instructions']]}; precision: {precision}"
    )


@dataclass
class Tally:
    """What the students measured, appended from their threads under one lock."""

    latencies: dict[str, list[float]] = field(default_factory=dict)  # seconds per request, by endpoint
    errors: list[str] = field(default_factory=list)
    opened: list[float] = field(default_factory=list)  # seconds each student took to open the page
    first: list[float] = field(default_factory=list)  # seconds of each student's first click
    later: list[float] = field(default_factory=list)  # seconds of every other click
    lock: threading.Lock = field(default_factory=threading.Lock)


def attempt(fn, *args) -> tuple[float, str | None]:
    """(seconds, problem) of fn(*args): problem is None, the warning a result's status line shows
    for these valid inputs, or the exception raised (a refused or failed request)."""
    t = time.perf_counter()
    try:
        out = fn(*args)
        status = out[-1] if isinstance(out, (tuple, list)) else ""
        problem = status if isinstance(status, str) and status.startswith("⚠️") else None
    except Exception as e:
        problem = f"{type(e).__name__}: {e}"
    return time.perf_counter() - t, problem


def predictors(args, url: str, sessions: list[str | None]) -> list:
    """One predict(call, api_name) per student: plain HTTP in the student's session, or a
    gradio_client Client (--client gradio_client), which costs the shared CPU far more."""
    if args.client == "gradio_client":
        from gradio_client import Client  # only this client needs gradio_client

        clients = [Client(url, verbose=False) for _ in sessions]
        return [lambda call, name, c=c: c.predict(*call, api_name=name) for c in clients]
    return [lambda call, name, s=s: http_predict(url, name, call, session=s) for s in sessions]


def student(k: int, args, url: str, session, events, predict, mix, defaults, start, tally: Tally, marks) -> None:
    """Student k's thread, as a browser: open the page within --arrive seconds (the page, then its
    opening events, which give the student a server session; timed apart), wait for the class to
    begin, click first within the first think time (--burst: all at the same instant), then send
    --requests requests drawn in turn from the mix, pausing 0.5T-1.5T (uniform, seeded) between
    them (--think T); with --continuous, as many as fit before marks["until"] (the class's end:
    none is sent after it)."""
    rng = random.Random(k)
    if not args.sessionless:  # each student opens the page (a session) within --arrive seconds
        time.sleep(rng.uniform(0, args.arrive))
        seconds, problem = attempt(open_page, url, session, events)
        with tally.lock:
            tally.opened.append(seconds)
            if problem:
                tally.errors.append(f"opening the page: {problem}")
    start.wait()  # the class begins: everyone has the page open ...
    if args.think and not args.burst:  # ... and clicks first within the first think time
        time.sleep(rng.uniform(0, args.think))
    for i in itertools.count():
        if not args.continuous and i >= args.requests:
            break
        if i and args.think:
            time.sleep(rng.uniform(0.5, 1.5) * args.think)
        if args.continuous and time.perf_counter() >= marks["until"]:
            break
        name, call = (requests_for(defaults, f"w{k}x{i}", args.only) if args.distinct else mix)[(k + i) % len(mix)]
        seconds, problem = attempt(predict, call, name)
        with tally.lock:
            tally.latencies.setdefault(name, []).append(seconds)
            (tally.later if i else tally.first).append(seconds)
            if problem:
                tally.errors.append(f"{name}: {problem}")


def report_opening(args, opened: list[float], opening_cpu: float | None) -> dict:
    """How long opening the page took (p50/p95/max) and the server CPU per page opened."""
    print(
        f"opening the page ({len(opened)} students within {args.arrive:g} s): p50 "
        f"{1000 * statistics.median(opened):.0f} ms, p95 {1000 * percentile(opened, 0.95):.0f} ms, "
        f"max {1000 * max(opened):.0f} ms"
        + (f"; server CPU {1000 * opening_cpu / len(opened):.1f} ms per page opened" if opening_cpu is not None else "")
    )
    return {"open_p50": statistics.median(opened), "open_p95": percentile(opened, 0.95)}


def report_latencies(latencies: dict[str, list[float]]) -> list[float]:
    """The table of p50/p95/max per endpoint and for all; returns every latency."""
    every = [x for xs in latencies.values() for x in xs]
    print(f"{'endpoint':<16} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, xs in [*sorted(latencies.items()), ("all", every)]:
        print(
            f"{name:<16} {len(xs):>4} {1000 * statistics.median(xs):>8.0f} {1000 * percentile(xs, 0.95):>8.0f} "
            f"{1000 * max(xs):>8.0f}"
        )
    return every


PROFILE_REPEATS = 5  # requests per endpoint alone, after one warm-up each (--profile)


def profile_alone(args, url: str, server, defaults: dict, predict) -> dict[str, dict]:
    """Each endpoint of the mix alone, before the class: one warm-up request for each of its
    calls, then PROFILE_REPEATS requests one at a time, cycling through its calls (--distinct:
    every text new here too); per endpoint, the median latency ("compute": nothing queued with
    it) and the server's CPU ms per request (None for a server started elsewhere)."""
    mix = requests_for(defaults, "", args.only)

    def calls(name: str, tag: str) -> list[tuple]:
        return [call for n, call in (requests_for(defaults, tag, args.only) if args.distinct else mix) if n == name]

    print(f"profile: each endpoint alone, 1 warm-up + {PROFILE_REPEATS} requests one at a time ...", flush=True)
    alone = {}
    for name in dict.fromkeys(n for n, _ in mix):  # the endpoints, in the mix's order
        for call in calls(name, "profile-warm-up"):
            attempt(predict, call, name)
        times, cpu0 = [], server_cpu(server)
        for j in range(PROFILE_REPEATS):
            own = calls(name, f"profile{j}")
            seconds, problem = attempt(predict, own[j % len(own)], name)
            times.append(seconds)
            if problem:
                print(f"   {name} alone: {problem}")
        cpu = server_cpu(server) - cpu0
        alone[name] = {
            "alone": statistics.median(times),
            "cpu_ms_alone": 1000 * cpu / PROFILE_REPEATS if server is not None else None,
        }
    return alone


def report_profile(alone: dict[str, dict], latencies: dict[str, list[float]], cpu_ms: float | None) -> dict:
    """The profile's table: per endpoint its median alone against its p50/p95 under load, and the
    share of the p50 under load spent waiting (1 - alone/p50: queued behind other students'
    requests, or sharing the cores with them) rather than computing; returns it by endpoint."""
    print("\nprofile: alone (median, before the class) against under load (this class)")
    print(f"{'endpoint':<16} {'alone ms':>9} {'p50 ms':>8} {'p95 ms':>8} {'waiting':>8} {'CPU ms alone':>13}")
    table = {}
    for name, row in alone.items():
        xs = latencies.get(name, [])
        p50 = statistics.median(xs) if xs else float("nan")
        p95 = percentile(xs, 0.95) if xs else float("nan")
        waiting = 1 - row["alone"] / p50 if xs else float("nan")
        table[name] = {**row, "p50": p50, "p95": p95, "waiting": waiting}
        cpu = f"{row['cpu_ms_alone']:.0f}" if row["cpu_ms_alone"] is not None else "-"
        print(
            f"{name:<16} {1000 * row['alone']:>9.0f} {1000 * p50:>8.0f} {1000 * p95:>8.0f} "
            f"{100 * waiting:>7.0f}% {cpu:>13}"
        )
    print(
        "server CPU under load: "
        + (f"{cpu_ms:.1f} ms per request (the mix)" if cpu_ms is not None else "unknown (a server started elsewhere)")
    )
    return table


def run_class(args, users: int, url: str, server, defaults: dict, precision: str = UNKNOWN_PRECISION) -> dict:
    """One class of `users` students against the dashboard at `url` (`precision`: the server's,
    as its banner said); prints the CPU's kind and the precision, the table (and with --profile
    the profile's) and returns the figures (p50/p95/max in seconds, errors, requests per second,
    server CPU per request, the CPU and precision)."""
    mix = requests_for(defaults, "", args.only)
    cpu_info = cpu_kind(server.pid if server is not None else None)
    print(describe_machine(cpu_info, precision, here=server is not None))
    amount = f"for {args.continuous:g} s" if args.continuous else f"x {args.requests} requests"
    print(
        f"{users} students {amount} against {url}, think {args.think} s"
        f"{', every text new' if args.distinct else ''}; models: {defaults}"
    )
    sessions = [None if args.sessionless else f"student-{k}-{os.getpid()}-{users}" for k in range(users)]
    events = [] if args.sessionless else opening_events(url)
    predict = predictors(args, url, sessions)
    tally, marks = Tally(), {}

    def begin() -> None:  # the class begins (every page open): CPU and time count from here
        marks.update(cpu=server_cpu(server), time=time.perf_counter())
        marks["until"] = marks["time"] + (args.continuous or 0)

    start = threading.Barrier(users, action=begin)
    if args.warm_up:  # one request per endpoint before the class (by default the class meets a fresh server)
        for name, call in mix:
            predict[0](call, name)
    alone = profile_alone(args, url, server, defaults, predict[0]) if args.profile else None
    cpu_arrival = server_cpu(server)
    threads = [
        threading.Thread(
            target=student, args=(k, args, url, sessions[k], events, predict[k], mix, defaults, start, tally, marks)
        )
        for k in range(users)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - marks["time"]
    result: dict = {"users": users, "cpu": cpu_info, "precision": precision}
    if tally.opened:
        result |= report_opening(args, tally.opened, marks["cpu"] - cpu_arrival if server is not None else None)
    every, errors = report_latencies(tally.latencies), tally.errors
    p95 = percentile(every, 0.95)
    print(f"{len(every)} requests in {wall:.1f} s ({len(every) / wall:.1f}/s); errors: {len(errors)}")
    for label, xs in (("each student's first click", tally.first), ("the later clicks", tally.later)):
        if xs:
            print(f"  {label}: p50 {1000 * statistics.median(xs):.0f} ms, p95 {1000 * percentile(xs, 0.95):.0f} ms")
    result.update(p50=statistics.median(every), p95=p95, max=max(every), errors=len(errors), rate=len(every) / wall)
    if server is not None:
        cpu = server_cpu(server) - marks["cpu"]
        result.update(cpu_ms=1000 * cpu / len(every), cpu_share=cpu / wall / cpu_info["cores"])
        print(
            f"server CPU: {cpu:.2f} s, {1000 * cpu / len(every):.1f} ms per request"
            + (f" ({', '.join(args.only)})" if args.only else " (the mix)")
            + f", {100 * result['cpu_share']:.0f}% of the {cpu_info['cores']} cores it may use"
        )
    if alone is not None:
        result["profile"] = report_profile(alone, tally.latencies, result.get("cpu_ms"))
    for e in errors[:10]:
        print("  ", e)
    verdict = "met" if p95 <= 1.0 and not errors else "MISSED"
    print(f"target p95 <= 1 s and 0 errors: {verdict} (p95 {1000 * p95:.0f} ms, {len(errors)} errors)")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default=None, help="a running dashboard (default: start app.py here)")
    ap.add_argument("--clients", "--users", type=int, default=30)
    ap.add_argument(
        "--curve",
        default=None,
        help="comma-separated class sizes (e.g. 10,30,60,100,150): one fresh server each, then a table",
    )
    ap.add_argument("--think", type=float, default=0.0, help="seconds a student pauses between requests (mean)")
    ap.add_argument("--distinct", action="store_true", help="every request's text is new (nothing from a cache)")
    ap.add_argument("--requests", type=int, default=10, help="requests per client")
    ap.add_argument(
        "--continuous",
        type=float,
        default=None,
        metavar="SECONDS",
        help="instead of --requests: every student keeps clicking (the mix, with its think time) until "
        "SECONDS after the class began (every page open)",
    )
    ap.add_argument(
        "--profile",
        action="store_true",
        help=f"before the class, each endpoint alone ({PROFILE_REPEATS} requests after a warm-up); after "
        "it, alone against under load per endpoint: how much of a click is waiting",
    )
    ap.add_argument("--concurrency", type=int, default=2, help="app.py --concurrency when started here")
    ap.add_argument("--queue-size", type=int, default=None, help="app.py --queue-size when started here")
    ap.add_argument("--only", nargs="*", help="restrict the mix to these endpoints (e.g. /fill_mask)")
    ap.add_argument("--client", choices=["http", "gradio_client"], default="http")
    ap.add_argument(
        "--arrive",
        type=float,
        default=10.0,
        help="seconds over which the students open the page before the class begins (timed apart)",
    )
    ap.add_argument(
        "--burst",
        action="store_true",
        help="every student's first click at the same instant (by default each opens the page at a "
        "random moment within the first think time, then clicks)",
    )
    ap.add_argument("--warm-up", action="store_true", help="send each endpoint one request before the class")
    ap.add_argument(
        "--sessionless",
        action="store_true",
        help="send each request without a session (a new server session per call, as an API script "
        "that passes none); by default each student keeps one session, as a browser page does",
    )
    args = ap.parse_args()
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

    # the dashboard runs in its own process, as in class; this process only plays the students
    import app  # the tabs' default models; deferred: app imports gradio (heavy)
    from dashboard import Settings

    store = Settings.from_args(app.parser().parse_args([])).store()  # the models app.py would serve
    defaults = {task: store.default_model(task) for task in ("fill_mask", "answer", "classify", "tag")}
    sizes = [int(n) for n in args.curve.split(",")] if args.curve else [args.clients]
    results = []
    for users in sizes:
        server, url, precision = (
            (None, args.url, UNKNOWN_PRECISION) if args.url else start_server(args.concurrency, args.queue_size)
        )
        try:
            results.append(run_class(args, users, url, server, defaults, precision))
        finally:
            if server is not None:
                server.terminate()
                server.wait()
    if len(results) > 1:
        precision = results[0]["precision"]  # one fresh server a class, each choosing its own precision
        if any(r["precision"] != precision for r in results):
            precision = "; ".join(f"{r['users']} students: {r['precision']}" for r in results)
        print("\n" + describe_machine(results[0]["cpu"], precision, here=not args.url))
        print("| students | requests/s | p50 ms | p95 ms | max ms | errors | server CPU ms/request | CPU used |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in results:
            print(
                f"| {r['users']} | {r['rate']:.1f} | {1000 * r['p50']:.0f} | {1000 * r['p95']:.0f} | "
                f"{1000 * r['max']:.0f} | {r['errors']} | {r.get('cpu_ms', float('nan')):.1f} | "
                f"{100 * r.get('cpu_share', float('nan')):.0f}% |"
            )


if __name__ == "__main__":
    main()
