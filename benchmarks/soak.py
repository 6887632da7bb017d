"""An hour of class on one dashboard: does it stay healthy (memory, temporary files, latency)?

    python -m benchmarks.soak --minutes 60               # the documented figure (30 students, 2 s think)
    python -m benchmarks.soak --minutes 4 --warm-up 1    # a quick look (tests/test_class_load.py runs 2.5)

Starts `python app.py` in its own process, with a fresh GRADIO_TEMP_DIR of its own (Gradio's
cache and uploads, and whatever the dashboard writes there), and plays a class against it for
--minutes: app_load.py's students, every text new, each with the page open (--reload P: a click
reloads the page instead with chance P, a new server session). A thread notes every file that
appears under that folder, recursively, once a second (`TempWatch`); every --every seconds it
samples the server's resident memory, threads, open files and temporary folder, with the p95
latency of the clicks since; at the end the verdict on four targets (`verdict`;
docs/performance.md has the measured hour).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.app_load import http_predict, open_page, opening_events, percentile, requests_for, server_cpu

ROOT = Path(__file__).resolve().parents[1]

TEMP_FILES_MAX = 50  # the target: new files under the temporary folder in a whole soak


def proc_status(pid: int) -> dict[str, int]:
    """Resident memory (KB) and threads of a process (Linux /proc), and its open files."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "Threads"):
            out[key] = int(value.split()[0])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


def folder_usage(folder: Path) -> tuple[int, int]:
    """(files, bytes) under folder."""
    files = size = 0
    for dirpath, _, names in os.walk(folder):
        for n in names:
            try:
                size += os.path.getsize(os.path.join(dirpath, n))
                files += 1
            except FileNotFoundError:
                pass
    return files, size


def files_under(folder: Path) -> set[str]:
    """Every file under folder, recursively, by its path relative to folder."""
    return {os.path.relpath(os.path.join(d, n), folder) for d, _, names in os.walk(folder) for n in names}


class TempWatch:
    """The files that appear under the server's temporary folder once the class began: the folder
    is listed every `every` seconds by a thread, and every path seen since the start that was not
    there at the start counts (a file written and removed between two looks goes unseen)."""

    def __init__(self, folder: Path, every: float = 1.0):
        self.folder, self.every = folder, every
        self.at_start = files_under(folder)  # what the server wrote while starting
        self.new: set[str] = set()
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def look(self) -> int:
        """List the folder now; how many new files have been seen so far."""
        found = files_under(self.folder) - self.at_start
        with self._lock:
            self.new |= found
            return len(self.new)

    def _watch(self) -> None:
        while not self._stop.wait(self.every):
            self.look()

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.look()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument(
        "--warm-up",
        type=float,
        default=None,
        help="minutes before the targets are judged (5; with --summary: the run's)",
    )
    ap.add_argument("--users", type=int, default=30)
    ap.add_argument("--think", type=float, default=2.0)
    ap.add_argument(
        "--reload",
        type=float,
        default=0.0,
        help="chance a click is a page reload instead, a new session (0.002: each student about every "
        "17 minutes; 0, the default: each student keeps one page for the whole run)",
    )
    ap.add_argument("--sessions", type=int, default=None, help="app.py's --sessions (its own default if not given)")
    ap.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    ap.add_argument("--port", type=int, default=7880)
    ap.add_argument("--json", default=None, help="also write the samples and the verdict to this file")
    ap.add_argument(
        "--summary",
        default=None,
        metavar="JSON",
        help="run nothing: the memory check of a run saved with --json (its --warm-up unless given)",
    )
    args = ap.parse_args(argv)
    if args.summary:
        saved = json.loads(Path(args.summary).read_text())
        warm_up = args.warm_up if args.warm_up is not None else saved.get("args", {}).get("warm_up", 5.0)
        ok, text = memory_check(saved["samples"], warm_up)
        print(f"  memory  {'met' if ok else 'MISSED'}: {text}")
        return 0 if ok else 1
    args.warm_up = 5.0 if args.warm_up is None else args.warm_up
    if args.warm_up >= args.minutes:
        ap.error("--warm-up must be shorter than --minutes")

    import app  # deferred: app imports gradio (heavy)
    from dashboard import Settings

    store = Settings.from_args(app.parser().parse_args([])).store()
    defaults = {task: store.default_model(task) for task in ("fill_mask", "answer", "classify", "tag")}
    temp = Path(tempfile.mkdtemp(prefix="bert-lab-soak-"))
    env = dict(os.environ, GRADIO_TEMP_DIR=str(temp), GRADIO_ANALYTICS_ENABLED="False")
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "app.py"), "--port", str(args.port)]
        + (["--sessions", str(args.sessions)] if args.sessions else []),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for line in server.stdout:
            if "BERT Lab is ready" in line:
                break
        else:
            print("the dashboard exited before it was ready")
            return 2
        threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()
        return soak(args, server, f"http://127.0.0.1:{args.port}/", temp, defaults)
    finally:
        server.terminate()
        server.wait()


def soak(args, server, url: str, temp: Path, defaults: dict) -> int:
    events = opening_events(url)
    watch = TempWatch(temp)
    start = time.perf_counter()
    deadline = start + 60 * args.minutes
    lock = threading.Lock()
    clicks: list[tuple[float, float]] = []  # (time since start, latency)
    errors: list[str] = []
    reloads = [0]

    def student(k: int) -> None:
        rng = random.Random(k)
        session, n = f"soak-{k}-0", 0
        time.sleep(rng.uniform(0, min(10.0, args.think * 5)))  # the class arrives over a few seconds
        open_page(url, session, events)
        i = 0
        while time.perf_counter() < deadline:
            time.sleep(rng.uniform(0.5, 1.5) * args.think)
            if rng.random() < args.reload:  # a reload: the same student, a new page and session
                n += 1
                session = f"soak-{k}-{n}"
                try:
                    open_page(url, session, events)
                    with lock:
                        reloads[0] += 1
                except Exception as e:
                    with lock:
                        errors.append(f"reload: {type(e).__name__}: {e}")
                continue
            mix = requests_for(defaults, f"s{k}x{i}")  # every text new
            name, call = mix[(k + i) % len(mix)]
            i += 1
            t = time.perf_counter()
            try:
                out = http_predict(url, name, call, session=session)
                status = out[-1] if isinstance(out, (tuple, list)) else ""
                problem = status if isinstance(status, str) and status.startswith("⚠️") else None
            except Exception as e:
                problem = f"{type(e).__name__}: {e}"
            done = time.perf_counter()
            with lock:
                clicks.append((done - start, done - t))
                if problem:
                    errors.append(f"{name}: {problem}")

    threads = [threading.Thread(target=student, args=(k,), daemon=True) for k in range(args.users)]
    for th in threads:
        th.start()
    samples = []
    cpu0, last = server_cpu(server), 0.0
    print(f"{args.users} students, think {args.think} s, {args.minutes:g} min against {url}; temporary folder {temp}")
    print(f"temporary files written at start-up: {len(watch.at_start)} (not counted as the soak's)")
    heads = ("min", "RSS MB", "threads", "fds", "files", "new", "KB", "clicks", "p95 ms", "err")
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, (6, 8, 7, 5, 6, 5, 7, 6, 7, 4))))
    while True:
        now = time.perf_counter()
        wait = min(args.every, deadline - now)
        if wait > 0:
            time.sleep(wait)
        t = time.perf_counter() - start
        st = proc_status(server.pid)
        files, size = folder_usage(temp)
        with lock:
            window = [lat for at, lat in clicks if last < at <= t]
            n_err = len(errors)
        sample = dict(
            minute=t / 60,
            rss_mb=st["VmRSS"] / 1024,
            threads=st["Threads"],
            fds=st["fds"],
            files=files,
            new_files=watch.look(),
            kb=size / 1024,
            clicks=len(window),
            p95=percentile(window, 0.95) if window else float("nan"),
            errors=n_err,
        )
        samples.append(sample)
        print(
            f"{sample['minute']:>6.1f} {sample['rss_mb']:>8.1f} {sample['threads']:>7} {sample['fds']:>5} "
            f"{files:>6} {sample['new_files']:>5} {sample['kb']:>7.0f} {len(window):>6} "
            f"{1000 * sample['p95']:>7.0f} {n_err:>4}",
            flush=True,
        )
        last = t
        if time.perf_counter() >= deadline:
            break
    for th in threads:
        th.join(timeout=120)
    cpu = server_cpu(server) - cpu0
    watch.stop()
    return verdict(args, samples, clicks, errors, reloads[0], cpu, watch)


def thirds(samples: list[dict], warm_up: float) -> tuple[list[dict], list[dict], list[dict]]:
    """The samples after warm-up in three parts: first, middle (the first again when too few
    samples for three), last."""
    after = [s for s in samples if s["minute"] >= warm_up - 1e-9]
    third = max(1, len(after) // 3)
    return after[:third], after[third : 2 * third] or after[:third], after[-third:]


def memory_check(samples: list[dict], warm_up: float) -> tuple[bool, str]:
    """Resident memory after warm-up: the median of the first third's samples against the median of
    the last third's (met: grown by 5% at most). Resident memory breathes by several percent from
    one 30-s sample to the next (the allocator, the requests in flight), as much as the target, so
    the level is a third's median, not a few samples; each third's lowest and highest are shown
    (a leak raises the lowest: memory kept; rarer, larger bursts raise the highest)."""
    first, _, last = ([s["rss_mb"] for s in part] for part in thirds(samples, warm_up))
    growth = statistics.median(last) / statistics.median(first) - 1
    return growth <= 0.05, (
        f"resident memory after {warm_up:g} min, median of each third's samples: first "
        f"{statistics.median(first):.0f} MB ({min(first):.0f}-{max(first):.0f}) -> last "
        f"{statistics.median(last):.0f} MB ({min(last):.0f}-{max(last):.0f}) ({100 * growth:+.1f}%; target <= +5%)"
    )


def verdict(args, samples, clicks, errors, reloads, cpu, watch: TempWatch) -> int:
    """Prints the samples' summary and the four targets; 0 when all are met:
    memory   resident memory in the last third after --warm-up within 5% of the first third's
             (memory_check)
    files    at most TEMP_FILES_MAX new temporary files in the soak: files that appeared under the
             server's temporary folder after the class began, however long they stayed (TempWatch)
    errors   none
    p95      steady: the last third's p95 within 1.5x the first third's after warm-up (every text
             new here, so the "why?" views compute every time: the lecture-hall target of 1 s is
             app_load.py's, with the page's own inputs)"""
    new = sorted(watch.new)
    t_warm = 60 * args.warm_up
    span = (60 * args.minutes - t_warm) / 3
    early = [lat for at, lat in clicks if t_warm <= at < t_warm + span]
    late = [lat for at, lat in clicks if at >= 60 * args.minutes - span]
    p95_early = percentile(early, 0.95) if early else float("nan")
    p95_late = percentile(late, 0.95) if late else float("nan")
    every = [lat for _, lat in clicks]
    print(
        f"\n{len(clicks)} clicks and {reloads} page reloads in {args.minutes:g} min; server CPU "
        f"{1000 * cpu / max(1, len(clicks)):.1f} ms per click; p50 {1000 * statistics.median(every):.0f} ms, "
        f"p95 {1000 * percentile(every, 0.95):.0f} ms"
    )
    checks = {
        "memory": memory_check(samples, args.warm_up),
        "files": (
            len(new) <= TEMP_FILES_MAX,
            f"{len(new)} new temporary files in the soak (target: at most {TEMP_FILES_MAX}); "
            f"{len(watch.at_start)} written at start-up; at most {max(s['files'] for s in samples)} present "
            f"({max(s['kb'] for s in samples) / 1024:.1f} MB)" + (f"; e.g. {', '.join(new[:3])}" if new else ""),
        ),
        "errors": (not errors, f"{len(errors)} errors" + (f", first: {errors[0]}" if errors else "")),
        "p95": (
            p95_late <= max(1.5 * p95_early, 0.2),
            f"p95 {1000 * p95_early:.0f} ms in the first third after warm-up, {1000 * p95_late:.0f} ms in the last",
        ),
    }
    for name, (ok, text) in checks.items():
        print(f"  {name:<7} {'met' if ok else 'MISSED'}: {text}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "args": vars(args),
                    "samples": samples,
                    "checks": {k: {"met": ok, "text": t} for k, (ok, t) in checks.items()},
                },
                indent=1,
            )
        )
    return 0 if all(ok for ok, _ in checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
