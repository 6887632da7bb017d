"""Class rounds under a lecture hall: 100 phones play the deck's rounds beside the tabs' traffic.

    python -m benchmarks.class_rounds                      # 100 students, 10 rounds, 30 tab clients (think 2 s)
    python -m benchmarks.class_rounds --students 30 --rounds 3 --tab-clients 0    # a quick look
    python -m benchmarks.class_rounds --url http://HOST:7860/ --key KEY           # a dashboard already running

Each student is a thread doing what the /play page does on a phone, over one kept-alive HTTP
connection: open the page, join with the room code, then the page's 1-s Timer poll; it answers
each round at a random moment within --window s of its start (the page's own Send, vote and tap
events) and sees the reveal by polling. A teacher thread plays the deck with the API (class_start,
class_reveal, class_round, class_export). Reports the answers' latency, how long after the
reveal each phone showed it, lost answers, errors, and the server's CPU idle, polling and in play.
"""

from __future__ import annotations

import argparse
import csv
import http.client
import io
import json
import os
import random
import re
import secrets
import statistics
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.app_load import (
    attempt,
    cpu_kind,
    describe_machine,
    http_predict,
    open_page,
    opening_events,
    percentile,
    requests_for,
    server_cpu,
    start_server,
)

ROOT = Path(__file__).resolve().parents[1]
POLL_S = 1.0  # the student page's gr.Timer (dashboard/rounds/pages.py, POLL_S)
WORDS = ("door", "window", "letter", "paris", "room", "gate", "box", "london")  # masked_word guesses


class Phone:
    """One HTTP connection kept alive, as a phone's browser keeps one to the server; `post` returns
    a Gradio response's "data" (raises on an HTTP error or a Gradio error)."""

    def __init__(self, url: str):
        parts = urllib.parse.urlsplit(url)
        self.host, self.port, self.conn = parts.hostname, parts.port or 80, None

    def post(self, path: str, payload: dict) -> list:
        for retry in (False, True):  # once more on a fresh connection if the server closed the kept one
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                self.conn.request("POST", path, json.dumps(payload), {"Content-Type": "application/json"})
                response = self.conn.getresponse()
                body = response.read()
                break
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if retry:
                    raise
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {body[:200].decode(errors='replace')}")
        return json.loads(body)["data"]

    def api(self, name: str, *args):
        """A gr.api endpoint with queue=False: POST /gradio_api/run/<api_name>, one round trip (the
        /gradio_api/call/<api_name> route would put it through the queue and an event stream)."""
        return self.post(f"/gradio_api/run/{name}", {"data": list(args)})[0]

    def event(self, session: str, fn_index: int, data: list, event_data=None) -> list:
        """A page's unqueued event, as the browser sends it: POST /gradio_api/run/predict with the
        event's fn_index in the page's session (State inputs travel as null: the server keeps them)."""
        body = {"data": data, "fn_index": fn_index, "session_hash": session, "trigger_id": None}
        return self.post("/gradio_api/run/predict", body | {"event_data": event_data})


def page_config(url: str, page: str) -> dict:
    with urllib.request.urlopen(f"{url.rstrip('/')}/config?page={page}", timeout=60) as r:
        return json.loads(r.read())


class PlayPage:
    """The /play page's events (fn_index) and where its outputs are, found in its config by the
    components' elem_id: the Timer's tick and the redraw it triggers, the page's load, Join, Send,
    the two votes, a word's tap."""

    def __init__(self, url: str):
        config = page_config(url, "play")
        ids = {c["props"].get("elem_id") or c["type"]: c["id"] for c in config["components"]}
        on = {(t[0], t[1]): d for d in config["dependencies"] for t in d["targets"] if d["backend_fn"]}
        self.tick = on[ids["timer"], "tick"]["id"]  # -> the room's version, into a hidden number
        self.view = on[ids["play-version"], "change"]["id"]  # the number changed: the page redrawn
        self.load = on[0, "load"]["id"]  # the page itself is target 0
        self.join = on[ids["play-join-button"], "click"]["id"]
        self.send = on[ids["play-send"], "click"]["id"]
        self.votes = {
            "IsNext": on[ids["play-isnext"], "click"]["id"],
            "NotNext": on[ids["play-notnext"], "click"]["id"],
        }
        self.tap = on[ids["play-words"], "select"]["id"]
        outputs = on[ids["play-version"], "change"]["outputs"]
        self.at = {name: outputs.index(ids[name]) for name in ("play-question", "play-guess-row", "play-vote")}
        self.at |= {name: outputs.index(ids[name]) for name in ("play-words", "play-reveal")}

    def shown(self, data: list):
        """What a poll's answer shows: "reveal", (kind, words to tap) of a round open, or None
        (nothing changed: every output skipped; or joined, no round yet)."""
        question, reveal = data[self.at["play-question"]], data[self.at["play-reveal"]]
        if isinstance(reveal, str) and "bl-reveal" in reveal:
            return "reveal"
        if not isinstance(question, str):
            return None
        words = data[self.at["play-words"]]
        if data[self.at["play-guess-row"]].get("visible"):
            return "masked_word", 0
        if data[self.at["play-vote"]].get("visible"):
            return "next_sentence", 0
        if words.get("visible"):
            return ("answer_span" if "Tap the first word" in question else "attention"), len(words["value"])
        return None


def room_and_deck(url: str) -> tuple[str, int]:
    """The room code (the projector's card) and the deck's length (its menu), from /teacher's config."""
    config = page_config(url, "teacher")
    card = next(c for c in config["components"] if c["props"].get("elem_id") == "teach-join")
    menu = next(c for c in config["components"] if c["type"] == "dropdown")
    return re.search(r'bl-code">(\w+)<', card["props"]["value"])[1], len(menu["props"]["choices"])


@dataclass
class Tally:
    """What the threads measured, appended under one lock."""

    polls: list[float] = field(default_factory=list)  # seconds per poll
    answers: list[tuple[int, bool, float]] = field(default_factory=list)  # (round, accepted, seconds)
    seen: dict[tuple[int, int], float] = field(default_factory=dict)  # (student, round) -> when the reveal showed
    tabs: list[float] = field(default_factory=list)  # seconds per tab click
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Board:
    """The teacher's side, read by the harness (not the phones): the round being played (1, 2, ...)
    and when each round was started and its reveal returned."""

    number: int = 0
    started: dict[int, float] = field(default_factory=dict)
    revealed: dict[int, float] = field(default_factory=dict)


def answer(phone: Phone, page: PlayPage, session: str, token: str, kind: str, n_words: int, rng) -> list:
    """A student's answer through the page's own events: type and Send, a vote, or taps on the words
    (answer_span: its first word, then its last). Returns the last event's outputs (the status first)."""
    if kind == "masked_word":
        return phone.event(session, page.send, [token, rng.choice(WORDS)])
    if kind == "next_sentence":
        return phone.event(session, page.votes[rng.choice(("IsNext", "NotNext"))], [token])
    taps = sorted(rng.sample(range(n_words), 2)) if kind == "answer_span" else [rng.randrange(n_words)]
    for i in taps:
        out = phone.event(session, page.tap, [token, None], {"index": i, "value": None, "selected": True})
    return out


def student(k: int, args, url, page: PlayPage, code: str, board: Board, stop, tally: Tally) -> None:
    """Student k's phone: open /play within --arrive s, join, then poll every POLL_S s until `stop`;
    a round seen open gets one answer at a random moment within --window s of its start."""
    rng, phone, session = random.Random(k), Phone(url), f"phone-{k}-{secrets.token_hex(4)}"
    time.sleep(rng.uniform(0, args.arrive))
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/play", timeout=60) as r:
            r.read()
        phone.event(session, page.load, ["", None])
        token = phone.event(session, page.join, [code, f"student {k}"])[0]
        phone.event(session, page.view, [token, None])  # Join's .then(view)
    except Exception as e:
        with tally.lock:
            tally.errors.append(f"joining: {type(e).__name__}: {e}")
        return
    due, next_poll = None, time.perf_counter()  # due: (when, round, kind, words) of the answer to send
    seen = None  # the room's version this page shows
    while not stop.is_set():
        if due and due[0] <= next_poll:  # the answer comes before the next poll
            time.sleep(max(0.0, due[0] - time.perf_counter()))
            t = time.perf_counter()
            try:
                status = answer(phone, page, session, token, *due[2:], rng)[0]
                accepted = status.startswith(("Sent", "Changed"))
                problem = None if accepted else f"answer refused: {status}"
            except Exception as e:
                accepted, problem = False, f"answer: {type(e).__name__}: {e}"
            with tally.lock:
                tally.answers.append((due[1], accepted, time.perf_counter() - t))
                tally.errors += [problem] if problem else []
            due = None
            continue
        time.sleep(max(0.0, next_poll - time.perf_counter()))
        next_poll = max(next_poll + POLL_S, time.perf_counter())  # as the Timer: every POLL_S s
        t = time.perf_counter()
        try:
            version = phone.event(session, page.tick, [])[0]
            shown = None
            if version != seen:  # as the page: the hidden number changed, so it asks for the view
                seen, shown = version, page.shown(phone.event(session, page.view, [token, None]))
        except Exception as e:
            with tally.lock:
                tally.errors.append(f"poll: {type(e).__name__}: {e}")
            continue
        done = time.perf_counter()
        with tally.lock:
            tally.polls.append(done - t)
            if shown == "reveal":
                tally.seen.setdefault((k, board.number), done)
        if shown == "reveal":
            due = None
        elif shown is not None:  # a new round open: answer at a random moment of its --window s
            n = board.number
            due = (board.started[n] + rng.uniform(0, args.window), n, *shown)


def tab_client(k: int, args, url: str, mix, events, stop, tally: Tally) -> None:
    """A student on the tabs (app_load's mix, in a page session), clicking with --think s pauses."""
    rng, session = random.Random(1000 + k), f"tabs-{k}-{secrets.token_hex(4)}"
    time.sleep(rng.uniform(0, args.think))
    _, problem = attempt(open_page, url, session, events)
    i = k
    while not problem and not stop.is_set():
        name, call = mix[i % len(mix)]
        seconds, problem = attempt(http_predict, url, name, call, 120, session)
        with tally.lock:
            tally.tabs.append(seconds)
        i += 1
        stop.wait(rng.uniform(0.5, 1.5) * args.think)
    if problem:  # this client stops at its first problem
        with tally.lock:
            tally.errors.append(f"tabs: {problem}")


def teacher(args, url: str, key: str, deck_len: int, board: Board, tally: Tally) -> list[dict]:
    """The teacher's rounds through the API: start round k of the deck, wait --window s plus a poll
    and a second (answers under way land), reveal, read the tally; per round what the server counted."""
    desk, rounds = Phone(url), []
    for n in range(1, args.rounds + 1):
        board.started[n] = time.perf_counter()  # before the start: a phone may see it before the call returns
        board.number = n
        desk.api("class_start", key, (n - 1) % deck_len + 1)
        time.sleep(max(0.0, board.started[n] + args.window + POLL_S + 1 - time.perf_counter()))
        desk.api("class_reveal", key)
        board.revealed[n] = time.perf_counter()  # the Reveal click has returned
        state = json.loads(desk.api("class_round", ""))
        rounds.append({"n": n, "server_round": state["round"], "kind": state["kind"], "answered": state["answered"]})
        print(f"round {n}: {state['kind']}, {state['answered']} answered", flush=True)
        time.sleep(POLL_S + 1)  # every phone's next poll shows the reveal
    return rounds


def cpu_over(server, seconds: float, tally: Tally) -> tuple[float, int]:
    """(server CPU seconds, polls made) over the next `seconds`."""
    cpu, polls = server_cpu(server), len(tally.polls)
    time.sleep(seconds)
    return server_cpu(server) - cpu, len(tally.polls) - polls


def ms(xs: list[float]) -> str:
    p50, p95 = statistics.median(xs), percentile(xs, 0.95)
    return f"p50 {1000 * p50:.0f} ms, p95 {1000 * p95:.0f} ms, max {1000 * max(xs):.0f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--tab-clients", type=int, default=30, help="students clicking the tabs meanwhile")
    ap.add_argument("--think", type=float, default=2.0, help="the tab clients' mean pause between clicks (s)")
    ap.add_argument("--window", type=float, default=10.0, help="students answer within this many s of a start")
    ap.add_argument("--arrive", type=float, default=10.0, help="students join within this many s")
    ap.add_argument("--measure", type=float, default=20.0, help="seconds of CPU measured idle, then polling")
    ap.add_argument("--url", default=None, help="a running dashboard (default: start app.py here)")
    ap.add_argument("--key", default=os.environ.get("BERT_LAB_TEACHER_KEY"), help="its teacher key (with --url)")
    ap.add_argument("--port", type=int, default=7911, help="app.py --port when started here")
    args = ap.parse_args()
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    import app  # the tabs' default models (as app_load); deferred: app imports gradio
    from dashboard import Settings

    store = Settings.from_args(app.parser().parse_args([])).store()
    defaults = {task: store.default_model(task) for task in ("fill_mask", "answer", "classify", "tag")}
    server, url, precision = None, args.url, "unknown (a server started elsewhere)"
    if not url:
        args.key = os.environ["BERT_LAB_TEACHER_KEY"] = args.key or secrets.token_urlsafe(9)  # app.py reads it
        server, url, precision = start_server(2, port=args.port)
    if not args.key:
        raise SystemExit("--key: the teacher key of the dashboard at --url")
    try:
        run(args, url, server, precision, defaults)
    finally:
        if server is not None:
            server.terminate()
            server.wait()


def run(args, url: str, server, precision: str, defaults: dict) -> None:
    cores = cpu_kind(server.pid if server else None)
    print(describe_machine(cores, precision, here=server is not None))
    page, (code, deck_len) = PlayPage(url), room_and_deck(url)
    tally, board, stop, tabs_stop = Tally(), Board(), threading.Event(), threading.Event()

    def share(cpu: float, seconds: float) -> str:  # of the server's process (unknown: started elsewhere)
        if server is None:
            return "unknown"
        return f"{100 * cpu / seconds / cores['cores']:.1f}% of {cores['cores']} cores"

    idle, _ = cpu_over(server, args.measure, tally)
    print(f"server idle: {share(idle, args.measure)}", flush=True)
    students = [
        threading.Thread(target=student, args=(k, args, url, page, code, board, stop, tally))
        for k in range(args.students)
    ]
    for th in students:
        th.start()
    time.sleep(args.arrive + 3)  # every phone has joined and polls
    polling, polls = cpu_over(server, args.measure, tally)
    extra = f"{1000 * (polling - idle) / max(polls, 1):.2f} ms" if server else "unknown"
    print(
        f"{args.students} phones polling: {polls / args.measure:.0f} polls/s, server {share(polling, args.measure)}, "
        f"{extra} CPU per poll above idle; polls {ms(tally.polls)}",
        flush=True,
    )

    mix, events = requests_for(defaults), opening_events(url)
    tabs = [
        threading.Thread(target=tab_client, args=(k, args, url, mix, events, tabs_stop, tally))
        for k in range(args.tab_clients)
    ]
    for th in tabs:
        th.start()
    time.sleep(args.think + 2 if tabs else 0)  # the tab clients have opened their pages
    cpu0, polls0, t0, client0 = server_cpu(server), len(tally.polls), time.perf_counter(), time.process_time()
    rounds = teacher(args, url, args.key, deck_len, board, tally)
    cpu, wall, client = server_cpu(server) - cpu0, time.perf_counter() - t0, time.process_time() - client0
    in_play = tally.polls[polls0:]
    stop.set()
    tabs_stop.set()
    for th in students + tabs:
        th.join()
    exported = Phone(url).api("class_export", args.key)
    rows = [int(r["round"]) for r in csv.DictReader(io.StringIO(exported))]

    report(args, rounds, board, tally, rows, in_play)
    if server is not None:
        print(f"server CPU in play: {share(cpu, wall)} (the class's {args.rounds} rounds, {wall:.0f} s)")
    print(f"this benchmark's own CPU in play (on the same cores): {share(client, wall)}")


def report(args, rounds: list[dict], board: Board, tally: Tally, rows: list[int], in_play: list[float]) -> None:
    """The per-round table, then answers, reveal, polls, tabs, lost answers and errors, with the targets."""
    heads = ("accepted", "answered", "exported", "reveal p95", "max", "missed")
    print(f"\n{'round':>5} {'kind':<14} " + " ".join(f"{h:>8}" for h in heads))
    lost, late = 0, []
    for r in rounds:
        n = r["n"]
        accepted = sum(ok for m, ok, _ in tally.answers if m == n)
        exported = rows.count(r["server_round"])
        delays = [t - board.revealed[n] for (_, m), t in tally.seen.items() if m == n]
        missing = args.students - len(delays)  # phones that never showed this reveal (the next round came first)
        late += delays + [float("inf")] * missing
        lost += max(0, accepted - r["answered"]) + max(0, accepted - exported)
        p95, top = (percentile(delays, 0.95), max(delays)) if delays else (float("nan"),) * 2
        cells = (accepted, r["answered"], exported, f"{p95:.2f} s", f"{top:.2f} s", missing)
        print(f"{n:>5} {r['kind']:<14} " + " ".join(f"{c:>8}" for c in cells))
    times = [s for _, _, s in tally.answers]
    print(f"\nanswers: {len(times)} sent, {ms(times)}; target p95 <= 1 s: "
          + ("met" if percentile(times, 0.95) <= 1 else "MISSED"))  # fmt: skip
    print(f"reveal shown after class_reveal returned: p50 {statistics.median(late):.2f} s, "
          f"p95 {percentile(late, 0.95):.2f} s, max {max(late):.2f} s; target every phone within 2 s: "
          + ("met" if max(late) <= 2 else "MISSED"))  # fmt: skip
    print(f"polls in play: {len(in_play)}, {ms(in_play)}")
    if tally.tabs:
        clients = f"{args.tab_clients} clients, think {args.think:g} s"
        print(f"tab clicks beside ({clients}): {len(tally.tabs)}, {ms(tally.tabs)}")
    print(f"lost answers (accepted but not in the reveal's count or the export): {lost}")
    print(f"errors: {len(tally.errors)}")
    for e in tally.errors[:10]:
        print("  ", e)


if __name__ == "__main__":
    main()
