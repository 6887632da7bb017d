"""What the teacher's laptop does for a class: students opening the browser edition from `serve-web`.

    python -m benchmarks.web_load --site site                        # 100, 300, 1000 students, each class in a minute
    python -m benchmarks.web_load --site site --students 20 --arrival 5 --json load.json     # a short try

The server is `python -m lab serve-web SITE --host 127.0.0.1` in its own process (the students'
threads would otherwise share its GIL), started once; a class arrives once it has made its gzip
copies, as it has by the time a lesson starts. Each student arrives at a random moment of
--arrival seconds and loads what a browser loads: the first view (lab.web.export.first_view_files:
index.html first, then the rest), then what it computes with (computing_files: the runtime's wasm,
the first model), over at most 6 keep-alive connections, accepting gzip. A student's times run
from the moment it arrives. The students are threads dealt out to --processes processes (one
process's GIL would otherwise hold them back). Per class: p50/p95/max of those times, the errors, the bytes sent
(compressed) and unpacked, and the server's CPU. Loopback only: the classroom's Wi-Fi is not measured.
Target: 1,000 students within a minute, p95 <= 2 s until every file is loaded, and 0 errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from urllib.parse import quote

import psutil

from lab.web.export import computing_files, export_site, first_view_files

ROOT = Path(__file__).resolve().parents[1]

CONNECTIONS = 6  # parallel connections a browser opens to one host (HTTP/1.1)
ACCEPT = "gzip, deflate, br"
TARGET_STUDENTS, TARGET_P95, TARGET_ERRORS = 1000, 2.0, 0
CHUNK = 1 << 20


class Tally:
    """What a class's students report, added up under a lock: per phase, each student's time."""

    def __init__(self, phases: int):
        self.lock = threading.Lock()
        self.times: list[list[float]] = [[] for _ in range(phases)]
        self.errors: list[str] = []
        self.sent = self.raw = 0

    def add(self, times: list[float], sent: int, raw: int, errors: list[str]) -> None:
        with self.lock:
            for phase, seconds in enumerate(times):
                self.times[phase].append(seconds)
            self.errors += errors
            self.sent += sent
            self.raw += raw


async def fetch(conn, path: str, size: int, verify: bool) -> tuple[int, int]:
    """GET one file over `conn` (an open (reader, writer) pair, kept alive) as a browser does:
    (bytes received, bytes unpacked). With `verify`, the body is decompressed and must have the
    file's size; else its unpacked size is taken from the site's listing (the students' machines
    unpack, not the teacher's)."""
    reader, writer = conn
    writer.write(f"GET /{quote(path)} HTTP/1.1\r\nHost: class\r\nAccept-Encoding: {ACCEPT}\r\n\r\n".encode())
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
    length = int(fields.get("content-length", 0))
    inflate = zlib.decompressobj(wbits=31) if verify and fields.get("content-encoding") == "gzip" else None
    received = unpacked = 0
    while received < length:
        chunk = await reader.read(min(CHUNK, length - received))
        if not chunk:
            raise ConnectionError(f"{path}: the server closed the connection after {received} of {length} bytes")
        received += len(chunk)
        unpacked += len(inflate.decompress(chunk)) if inflate else len(chunk)
    if status != 200:
        raise RuntimeError(f"{path}: HTTP {status}")
    if verify and unpacked != size:
        raise RuntimeError(f"{path}: {unpacked} bytes unpacked, the file has {size}")
    return received, (unpacked if verify else size)


async def student(host: str, port: int, phases: list[dict[str, int]], tally: Tally, verify, timeout):
    """One student's browser: each phase's files ({path: bytes}) in turn, the page (index.html)
    first over one connection, the rest over up to CONNECTIONS kept open; a time per phase."""
    arrived = time.perf_counter()
    got, errors, times, conns = [], [], [], {}  # conns: connection number -> (reader, writer)

    async def load(k: int, files: dict[str, int], rest: list[str]) -> None:
        while rest:
            path = rest.pop()
            if k not in conns:
                conns[k] = await asyncio.open_connection(host, port, limit=CHUNK)
            got.append(await fetch(conns[k], path, files[path], verify))

    async def phases_in_turn() -> None:
        for files in phases:
            first = [p for p in files if p == "index.html"]
            await load(0, files, first)  # it names the rest
            rest = [p for p in reversed(list(files)) if p != "index.html"]
            await asyncio.gather(*(load(k, files, rest) for k in range(min(CONNECTIONS, max(1, len(rest))))))
            times.append(time.perf_counter() - arrived)

    try:
        await asyncio.wait_for(phases_in_turn(), timeout)
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, RuntimeError, asyncio.TimeoutError) as e:
        errors.append(f"{type(e).__name__}: {e}")
    finally:
        for _, writer in conns.values():
            writer.close()
    tally.add([] if errors else times, sum(g[0] for g in got), sum(g[1] for g in got), errors)


def summary(times: list[float]) -> dict:
    times = times or [float("nan")]
    p95 = statistics.quantiles(times, n=20, method="inclusive")[-1] if len(times) > 1 else times[0]
    return {"p50_s": statistics.median(times), "p95_s": p95, "max_s": max(times)}


def arrive(host: str, port: int, phases: list[dict[str, int]], moments: list[float], start: float, verify, timeout):
    """The students arriving at `moments` seconds after `start` (time.time()), each a coroutine of
    this process's event loop (one thread: no GIL shared by a thousand threads): their Tally's
    fields, and the CPU seconds this process used meanwhile."""
    tally, cpu = Tally(len(phases)), time.process_time()

    async def class_arrives():
        tasks = []
        for moment in moments:
            await asyncio.sleep(max(0.0, start + moment - time.time()))
            tasks.append(asyncio.create_task(student(host, port, phases, tally, verify, timeout)))
        await asyncio.gather(*tasks)

    asyncio.run(class_arrives())
    return tally.times, tally.errors, tally.sent, tally.raw, time.process_time() - cpu


def play_class(host: str, port: int, phases: list[dict[str, int]], students: int, arrival: float, **options) -> dict:
    """`students` browsers arriving at random moments within `arrival` seconds, each loading the
    files of every phase ({path: bytes}) in turn; per phase p50/p95/max of the students' times
    (from arrival), the errors, the bytes sent and unpacked. options: verify, timeout, seed, and
    pool (a process pool: the students dealt out to its processes, so no one GIL is their limit)."""
    verify, timeout, pool = options.get("verify", False), options.get("timeout", 60.0), options.get("pool")
    moments = sorted(random.Random(options.get("seed", 0)).uniform(0, arrival) for _ in range(students))
    start = time.time() + (1.0 if pool else 0.0)  # a second for the workers to receive their share
    if pool is None:
        shares = [arrive(host, port, phases, moments, start, verify, timeout)]
    else:
        k = pool._max_workers
        jobs = [pool.submit(arrive, host, port, phases, moments[i::k], start, verify, timeout) for i in range(k)]
        shares = [job.result() for job in jobs]
    times = [sum((share[0][phase] for share in shares), []) for phase in range(len(phases))]
    errors = sum((share[1] for share in shares), [])
    return {
        "students": students,
        "arrival_s": arrival,
        "phases": [summary(t) for t in times],
        **summary(times[-1]),
        "errors": len(errors),
        "error_examples": sorted(set(errors))[:5],
        "sent_bytes": sum(share[2] for share in shares),
        "raw_bytes": sum(share[3] for share in shares),
        "students_cpu_s": sum(share[4] for share in shares),
        "wall_s": time.time() - start,
    }


def start_server(site: Path) -> tuple[subprocess.Popen, int]:
    """`python -m lab serve-web SITE` on a free port, returned once its gzip copies are made."""
    server = subprocess.Popen(
        [sys.executable, "-m", "lab", "serve-web", str(site), "--host", "127.0.0.1", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    port, lines = None, []
    for line in server.stdout:
        lines.append(line)
        if found := re.search(r"http://127\.0\.0\.1:(\d+)/", line):
            port = int(found.group(1))
        if "gzip ready" in line:
            print(line.strip())
            break
    if port is None or server.poll() is not None:
        raise SystemExit("serve-web did not start:\n" + "".join(lines[-20:]))
    threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()  # keep the pipe drained
    return server, port


class Monitor:
    """The server process's CPU seconds, and its peak threads and memory, sampled while a class runs."""

    def __init__(self, pid: int):
        self.process = psutil.Process(pid)
        self.peak_threads = self.peak_rss = 0
        self.stop = threading.Event()

    def cpu(self) -> float:
        t = self.process.cpu_times()
        return t.user + t.system

    def __enter__(self):
        self.stop.clear()
        self.peak_threads = self.peak_rss = 0
        self.cpu_start = self.cpu()
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()
        return self

    def sample(self) -> None:
        while not self.stop.wait(0.2):
            self.peak_threads = max(self.peak_threads, self.process.num_threads())
            self.peak_rss = max(self.peak_rss, self.process.memory_info().rss)

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.cpu_used = self.cpu() - self.cpu_start


def raise_file_limit() -> None:
    """As many open files as the system allows: a class is thousands of sockets, on both ends."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def table(results: list[dict]) -> list[str]:
    lines = [
        "| students | arrival (s) | first view p50 / p95 (s) | all loaded p50 / p95 / max (s) | errors | sent (MB) "
        "| unpacked (MB) | server CPU (s) | server CPU (% of a core) | peak threads | peak memory (MB) "
        "| students' CPU (% of a core) | target |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        met = "met" if r["p95_s"] <= TARGET_P95 and r["errors"] <= TARGET_ERRORS else "MISSED"
        first = r["phases"][0]
        lines.append(
            f"| {r['students']} | {r['arrival_s']:g} | {first['p50_s']:.3f} / {first['p95_s']:.3f} "
            f"| {r['p50_s']:.3f} / {r['p95_s']:.3f} / {r['max_s']:.3f} | {r['errors']} | {r['sent_bytes'] / 1e6:.1f} "
            f"| {r['raw_bytes'] / 1e6:.1f} | {r['server_cpu_s']:.1f} | {r['server_cpu_percent']:.0f} "
            f"| {r['peak_threads']} | {r['peak_rss_mb']:.0f} | {r['students_cpu_percent']:.0f} | {met} |"
        )
    return lines


def site_for(args) -> Path:
    if args.site:
        return Path(args.site)
    out = Path(tempfile.mkdtemp(prefix="web-load-site-"))
    print(f"no --site: exporting bert-lab-classroom into {out} (slow; give --site to reuse one)")
    export_site(out, ["bert-lab-classroom"])
    return out


def phases_of(site: Path) -> list[dict[str, int]]:
    """What a browser loads, in two phases: the first view (first_view_files), then what it
    computes with (computing_files: the runtime and the first model); {path: bytes} each. Hidden
    files (.gitattributes, .nojekyll: for the host, not the page) are not loaded."""
    shown = [p for p in first_view_files(site) if not any(part.startswith(".") for part in p.split("/"))]
    rest = [p for p in computing_files(site) if p not in shown and not p.startswith(".")]
    return [{p: (site / p).stat().st_size for p in paths} for paths in (shown, rest) if paths]


def run(args, site: Path, phases: list[dict[str, int]]) -> list[dict]:
    """Every class size in turn, on one server started for them all."""
    raise_file_limit()
    server, port = start_server(site)
    pool = ProcessPoolExecutor(args.processes, mp_context=multiprocessing.get_context("spawn"))
    list(pool.map(time.sleep, [2.0] * args.processes))  # every worker started (and its imports done) first
    results = []
    try:
        for n in args.students:
            with Monitor(server.pid) as monitor:
                result = play_class("127.0.0.1", port, phases, n, args.arrival, timeout=args.timeout, pool=pool)
            result.update(
                students_cpu_percent=100 * result["students_cpu_s"] / result["wall_s"],
                server_cpu_s=monitor.cpu_used,
                server_cpu_percent=100 * monitor.cpu_used / result["wall_s"],
                peak_threads=monitor.peak_threads,
                peak_rss_mb=monitor.peak_rss / 1e6,
            )
            results.append(result)
            print(f"{n} students: p95 {result['p95_s']:.3f} s, {result['errors']} errors {result['error_examples']}")
    finally:
        pool.shutdown()
        server.terminate()
        server.wait()
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", help="an exported site folder (default: export bert-lab-classroom into a temp folder)")
    ap.add_argument("--students", type=int, nargs="+", default=[100, 300, 1000], help="class sizes, one run each")
    ap.add_argument("--arrival", type=float, default=60.0, help="seconds within which a class arrives (default: 60)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a student waits on a connection")
    ap.add_argument(
        "--processes", type=int, default=4, help="processes the students are dealt out to (default: 4; threads in each)"
    )
    ap.add_argument("--json", help="also write the results to this JSON file")
    args = ap.parse_args()
    site = site_for(args)
    phases = phases_of(site)
    for name, files in zip(("first view", "then, to compute"), phases, strict=False):
        print(f"{name}: {len(files)} files, {sum(files.values()) / 1e6:.2f} MB: " + ", ".join(files))
    results = run(args, site, phases)
    print(f"\nmachine: {psutil.cpu_count()} CPUs (load average now {psutil.getloadavg()[0]:.1f}); loopback")
    print(
        f"students: {args.processes} processes of threads (the simulated browsers), on the same machine as the server"
    )
    print(
        f"target: {TARGET_STUDENTS} students within a minute, p95 <= {TARGET_P95:g} s until every file is loaded, "
        f"{TARGET_ERRORS} errors\n"
    )
    print("\n".join(table(results)))
    print("\n$ python " + shlex.join(["-m", "benchmarks.web_load", *sys.argv[1:]]))
    if args.json:
        data = {"site": str(site), "phases": phases, "results": results}
        Path(args.json).write_text(json.dumps(data, indent=2))


if __name__ == "__main__":
    main()
