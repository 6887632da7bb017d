"""Where classes run it (issue 24, points 1-2): the dashboard stays healthy under a class.

- A figure's numbers are kept for its CSV button, not written to a file on every click.
- The load benchmark plays students as browsers do (the page, its opening events, one session
  each) and sees no error on a small class (its figures are measured in docs, not asserted here).
- A full queue tells the student so, in the page (a real browser at 1024 px), instead of a
  spinner forever: docs/images/app_1024_queue_full.png.
- Two and a half minutes of the soak (benchmarks/soak.py): memory, temporary files, errors, p95
  steady.
Measured figures (the lecture hall of 100, the curve, the hour's soak) live in docs/performance.md
with their commands.
"""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import ROOT, chromium_browser

pytestmark = pytest.mark.timeout(600)


def test_a_figures_numbers_are_kept_for_its_download_not_written_to_a_file(tmp_path, monkeypatch):
    """FigureDownloads: a handler keeps a figure's name and numbers (no file), and the CSV is made
    when its button asks; a figure no longer kept gets a notice, not an error."""
    import dashboard.common as common
    from lab.figures import plotly_figures

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))
    fig = plotly_figures.fill_mask_bars([[("cat", 0.6), ("dog", 0.3)]])
    kept = common.FigureDownloads.keep(fig)
    assert kept.name == plotly_figures.figure_name(fig) and os.listdir(tmp_path) == []
    payload = json.loads(common.FigureDownloads.text(kept))
    assert payload["name"] == f"{kept.name}.csv" and payload["csv"] == plotly_figures.figure_csv(fig)
    warned = []
    monkeypatch.setattr(common.gr, "Warning", warned.append)
    assert common.FigureDownloads.text(None) == "" and "draw it again" in warned[0]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(*argv, env=None):
    """`python app.py ARGS` on a free port, returned once it says it is ready."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "app.py"), "--port", str(port), *argv],
        cwd=ROOT,
        env=dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", **(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "BERT Lab is ready" in line:
            break
    else:
        raise AssertionError("the dashboard did not start:\n" + "".join(lines[-20:]))
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    return proc, f"http://127.0.0.1:{port}/"


def benchmark(name: str, argv: list[str]) -> subprocess.CompletedProcess:
    """python -m benchmarks.NAME with ARGV, finished without error (its output returned)."""
    out = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out


@pytest.mark.slow
def test_the_class_rounds_benchmark_plays_a_small_class_without_loss():
    """benchmarks/class_rounds.py on a small class (6 phones through the page's own events, two
    rounds, two tab clients): every answer accepted, counted and exported, no error, the reveal
    seen by every phone."""
    proc, url = serve(env={"BERT_LAB_TEACHER_KEY": "test-key"})
    try:
        argv = ["--students", "6", "--rounds", "2", "--tab-clients", "2", "--window", "2", "--arrive", "1"]
        argv += ["--measure", "2", "--url", url, "--key", "test-key"]
        out = benchmark("class_rounds", argv)
        assert "lost answers (accepted but not in the reveal's count or the export): 0" in out.stdout, out.stdout
        assert "errors: 0" in out.stdout and "answers: 12 sent" in out.stdout, out.stdout
        assert "every phone within 2 s" in out.stdout and " missed" not in out.stdout.split("answers:")[1]
    finally:
        proc.terminate()
        proc.wait()


@pytest.mark.slow
def test_the_benchmark_plays_students_as_browsers_without_errors():
    """app_load's students (page, opening events, a session each, the whole mix) on a small class:
    every request answered, none an error; a page opened without a link asks the server for its
    session only (its opening runs in the browser), unqueued."""
    from benchmarks import app_load

    proc, url = serve()
    try:
        events = app_load.opening_events(url)
        assert [(e["data"], e["queue"]) for e in events] == [([], False)]
        argv = ["--users", "3", "--requests", "12", "--think", "0.1", "--arrive", "1", "--url", url]  # every item
        out = benchmark("app_load", argv)
        assert "errors: 0" in out.stdout and "opening the page (3 students" in out.stdout, out.stdout
        assert "/why_classify" in out.stdout and "/tag" in out.stdout  # the whole mix
    finally:
        proc.terminate()
        proc.wait()


@pytest.mark.slow
def test_a_full_queue_tells_the_student_in_the_page_at_1024(tmp_path):
    """One slot and a queue of one, kept full by other students' attributions: a click on
    Classify shows Gradio's "busy, try again" notice within seconds (not a spinner forever), and
    once the queue empties the same click is answered."""
    from benchmarks import app_load

    proc, url = serve("--concurrency", "1", "--queue-size", "1")
    stop = threading.Event()

    def other_student(k):
        i = 0
        while not stop.is_set():
            context = f"Captain Nemo built the Nautilus on an island in the year {1860 + k}{i}."
            try:
                app_load.http_predict(
                    url,
                    "/why_answer",
                    ("models/minilm-squad", "Who built it?", context, "integrated gradients", "light"),
                )
            except Exception:
                pass  # refused: the queue was full for this one too
            i += 1

    others = [threading.Thread(target=other_student, args=(k,), daemon=True) for k in range(6)]
    try:
        with chromium_browser() as browser:
            page = browser.new_page(viewport={"width": 1024, "height": 768})
            page.set_default_timeout(60_000)
            page.goto(url)
            page.get_by_role("tab", name="Classify").click()
            page.locator("#cls-text textarea").fill("a truly dreadful film .")
            for t in others:
                t.start()
            time.sleep(2)
            button = page.get_by_role("button", name="Classify", exact=True)
            notice = page.get_by_text("This application is currently busy. Please try again.")
            for _ in range(10):  # the queue is full almost always; a click that got in is retried
                button.click()
                try:
                    notice.first.wait_for(state="visible", timeout=5000)
                    break
                except Exception:
                    continue
            assert notice.first.is_visible()
            shots = os.environ.get("BERT_LAB_SCREENSHOTS")
            page.screenshot(path=str((ROOT / shots if shots else tmp_path) / "app_1024_queue_full.png"))
            stop.set()
            for t in others:
                t.join(timeout=60)
            button.click()  # the queue has emptied: answered
            page.get_by_text("negative").locator("visible=true").first.wait_for(timeout=30_000)  # not the details
    finally:
        stop.set()
        proc.terminate()
        proc.wait()


@pytest.mark.slow
def test_a_few_minutes_of_class_leave_the_server_healthy(tmp_path):
    """benchmarks/soak.py for 2.5 minutes (10 students, 1 s think, every text new, reloads now and
    then): it runs and reports its four checks, no request fails and the temporary files stay
    bounded. The memory and latency targets are the hour's (docs/performance.md), not asserted
    here: resident memory breathes by 15% from sample to sample in minutes (the allocator, a
    request in flight), so within minutes only a gross leak is caught: more than +40% over the
    lowest sample after the first minute (about 450 MB, a third of a MB for each of the run's
    ~1,300 clicks)."""
    import json

    report = tmp_path / "soak.json"
    out = subprocess.run(
        [
            sys.executable,
            *("-m", "benchmarks.soak"),
            *("--minutes", "2.5", "--warm-up", "1", "--users", "10", "--think", "1", "--every", "15"),
            *("--reload", "0.005"),
            *("--port", str(free_port()), "--json", str(report)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=480,
    )
    assert report.exists(), out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads(report.read_text())
    checks = result["checks"]
    assert set(checks) == {"memory", "files", "errors", "p95"}, checks
    assert checks["errors"]["met"] and checks["files"]["met"], out.stdout[-3000:]
    assert out.returncode in (0, 1), out.stderr[-3000:]  # 1: a target missed, printed in the verdict
    rss = [s["rss_mb"] for s in result["samples"] if s["minute"] >= 1 - 1e-9]
    assert rss[-1] <= 1.4 * min(rss), out.stdout[-3000:]


def test_the_soak_reads_memory_by_the_median_of_each_third(tmp_path):
    """soak.memory_check: the first third's median after warm-up against the last third's, so one
    high sample at either end does not decide it; a rise the last third keeps does; --summary
    reads a saved run's samples with the run's own warm-up."""
    import json

    from benchmarks import soak

    def run(levels):
        return [{"minute": 0.5 * (i + 1), "rss_mb": v} for i, v in enumerate(levels)]

    steady = [900] + [1000, 1090, 1000] * 4 + [1000, 1000, 1090]  # breathes by 9%, one high sample last
    ok, text = soak.memory_check(run(steady), 1.0)
    assert ok and "+0.0%" in text, text
    grown = [900] + [1000] * 5 + [1030] * 5 + [1060] * 5  # +6% kept through the last third
    ok, text = soak.memory_check(run(grown), 1.0)
    assert not ok and "1000 MB" in text and "1060 MB" in text and "+6.0%" in text, text
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({"args": {"warm_up": 1.0}, "samples": run(grown)}))
    assert soak.main(["--summary", str(saved)]) == 1
    assert soak.main(["--summary", str(saved), "--warm-up", "5.5"]) == 0  # from 5.5 min: +1.4%


def test_the_server_tunes_malloc_on_linux():
    """app.main() caps glibc's malloc arenas and fixes its mmap and trim thresholds before its
    threads start (the soak's memory figure depends on them); on Linux with glibc the calls take
    effect: a 16 MB block is mapped on its own by default (glibc's threshold starts at 128 KB) and
    comes from the heap once the threshold is 32 MB (mallinfo2's hblkhd counts mapped bytes). Run in
    processes of their own: the settings would stay with the test session's own process."""
    import platform

    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    probe = (
        "import ctypes, sys\n"
        "class Info(ctypes.Structure):\n"
        "    _fields_ = [(n, ctypes.c_size_t) for n in 'arena ordblks smblks hblks hblkhd usmblks fsmblks"
        " uordblks fordblks keepcost'.split()]\n"
        "import app\n"
        "print(app.tune_malloc() if sys.argv[1] == 'tuned' else 'default')\n"
        "libc = ctypes.CDLL('libc.so.6')\n"
        "if hasattr(libc, 'mallinfo2'):\n"
        "    libc.mallinfo2.restype, libc.malloc.restype = Info, ctypes.c_void_p\n"
        "    before = libc.mallinfo2().hblkhd\n"
        "    block = libc.malloc(16 << 20)\n"
        "    print((libc.mallinfo2().hblkhd - before) >> 20)\n"
    )
    outputs = {}
    for mode in ("default", "tuned"):
        out = subprocess.run([sys.executable, "-c", probe, mode], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        outputs[mode] = out.stdout.split()
    assert outputs["tuned"][0] == str(glibc)
    if glibc and len(outputs["tuned"]) == 2:  # glibc 2.33 or newer has mallinfo2
        assert outputs["default"][1] == "16", outputs  # mapped on its own
        assert outputs["tuned"][1] == "0", outputs  # from the heap: the 32 MB threshold took effect


def test_the_page_is_built_once_per_address_and_sent_again():
    """PageCache (app.py's middleware): GET / is built by the app once per address (host, proxy
    headers) whatever the query string, then sent as it was; other requests, other paths and an
    answer that sets a cookie or is not a 200 always reach the app."""
    import asyncio

    from dashboard.page_cache import PageCache

    calls = []

    async def app(scope, receive, send):
        calls.append((scope["method"], scope["path"]))
        status = 404 if scope["path"] == "/missing" else 200
        headers = [(b"set-cookie", b"a=1")] if scope["path"] == "/cookie" else [(b"content-type", b"text/html")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": f"page {len(calls)}".encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b"!"})

    cache = PageCache(app, paths=("/", "/cookie", "/missing"))

    def get(path="/", host=b"h:7860", method="GET", query=b""):
        sent = []

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "method": method, "path": path, "query_string": query, "headers": [(b"host", host)]}
        asyncio.run(cache(scope, None, send))
        return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])

    assert get() == (200, b"page 1!") and get(query=b"tab=qa") == (200, b"page 1!") and len(calls) == 1
    assert get(host=b"10.0.0.7:7860") == (200, b"page 2!") and len(calls) == 2  # another address
    assert get(method="POST") == (200, b"page 3!") and get("/other") == (200, b"page 4!")
    for path in ("/cookie", "/missing"):
        first, again = get(path), get(path)
        assert first != again  # built each time: not kept
    assert (cache.built, cache.served) == (6, 1) and len(calls) == 8
