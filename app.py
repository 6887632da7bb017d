"""BERT Lab dashboard: one tab per idea of the BERT paper, on the bundled models, offline.

    python app.py                          # http://127.0.0.1:7860, the bundled models
    python app.py --host 0.0.0.0           # reachable from the classroom's network
    python app.py --share                  # a public gradio.live link (needs internet)
    python app.py --model runs/mine        # start on another model (under a models root)
    python app.py --model google-bert/bert-base-uncased    # or a Hugging Face model, by id
    python app.py --host 0.0.0.0 --allow-downloads       # let users add Hub models on a public server

Only parses, builds and launches (the tabs, the models and their roots: docs/dashboard.md). Importing
it parses no arguments, loads no model and builds no page: the dashboard and torch are imported when
a page is built; `app.demo` (what `gradio app.py` and Hugging Face Spaces look for) is built on first use.
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import socket
import sys

import psutil

log = logging.getLogger("bert-lab.app")
ALL_INTERFACES = ("0.0.0.0", "::")


def parser() -> argparse.ArgumentParser:
    """The command line of `python app.py` (--help prints this file's docstring too)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--model",
        default=None,
        help="start on this model directory (under a models root) or Hugging Face id (ORG/NAME)",
    )
    p.add_argument(
        "--models-root",
        action="append",
        default=[],
        help="another folder whose model directories may be served (repeatable; also $BERT_LAB_MODELS, "
        "folders separated by ':')",
    )
    # defaults from the variables Hugging Face Spaces sets (GRADIO_SERVER_NAME=0.0.0.0, GRADIO_SERVER_PORT=7860),
    # so `python app.py` on a Space binds where the platform expects; a string default goes through type=int
    p.add_argument(
        "--host",
        default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        help="interface to bind (0.0.0.0: every IPv4 interface, the classroom's network; ::: every IPv6 one); "
        "default: $GRADIO_SERVER_NAME, else 127.0.0.1",
    )
    p.add_argument(
        "--port",
        type=int,
        default=os.environ.get("GRADIO_SERVER_PORT", "7860"),
        help="port to serve on; default: $GRADIO_SERVER_PORT, else 7860",
    )
    p.add_argument("--share", action="store_true", help="also publish a temporary gradio.live link")
    p.add_argument(
        "--allow-downloads",
        action="store_true",
        default=os.environ.get("BERT_LAB_ALLOW_DOWNLOADS", "").strip().lower() in ("1", "true", "yes", "on"),
        help="let users add Hugging Face models by id (downloaded into the Hub cache) although the "
        "app is public (--host other than localhost, or --share); on localhost they always may. "
        "Default: on when $BERT_LAB_ALLOW_DOWNLOADS is 1/true/yes/on (a Space owner's opt-in)",
    )
    p.add_argument(
        "--concurrency",
        type=int,
        default=2,
        help="requests computed at once (each with its own CPU thread); others wait in the queue",
    )
    p.add_argument("--queue-size", type=int, default=128, help="requests that may wait; more are turned away")
    p.add_argument("--cache-models", type=int, default=4, help="models kept loaded at once")
    p.add_argument(
        "--sessions",
        type=int,
        default=250,
        help="pages whose server session is kept (the most recently used; Gradio keeps each page's last "
        "outputs, 0.5-2 MB for this page): a lecture hall of 100 and its reloads; an older page that "
        "clicks again gets a fresh session",
    )
    p.add_argument(
        "--deck",
        default=None,
        help="the class rounds' deck, a YAML or JSON file (default: docs/teaching/deck.yaml; its format: "
        "docs/teaching/lesson-plan.md, 'Running the class in rounds')",
    )
    p.add_argument("--class-size", type=int, default=200, help="students who may join the class rounds at once")
    p.add_argument(
        "--web-site",
        default=None,
        help="the browser edition's exported site to serve at /web/ (its Step by step view opens from the "
        "Model tab); default: site/ when `make web` wrote it",
    )
    p.add_argument(
        "--precision",
        choices=["auto", "bf16", "fp32"],
        default="auto",
        help="auto: bf16 autocast where it is faster here (known on a GPU or a CPU with AMX, else the "
        "default model's forward is timed both ways at start-up, within a second); bf16: forward passes "
        "under bf16 autocast wherever the hardware has bf16 (probabilities differ in the 2nd-3rd digit); "
        "fp32: never",
    )
    return p


def build(args: argparse.Namespace):
    """The page (a gr.Blocks) for parsed command-line arguments (see parser()). Launch it with
    demo.launch(..., **dashboard.LAUNCH_OPTIONS)."""
    from dashboard import Dashboard, Settings  # here, not at the top: the dashboard imports torch (seconds)

    return Dashboard(Settings.from_args(args)).build()


def addresses(host: str, port: int) -> list[str]:
    """The addresses students type. Bound to every interface: one per non-loopback address of
    this machine, of the family served (0.0.0.0: IPv4; ::: IPv6 — Gradio's server binds one
    family, asyncio making an IPv6 socket IPv6-only); else the bound host."""
    if host not in ALL_INTERFACES:
        return [f"http://{'[' + host + ']' if ':' in host else host}:{port}/"]
    family = socket.AF_INET6 if host == "::" else socket.AF_INET
    found = []
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            ip = a.address.split("%")[0]
            if a.family != family or ip.startswith("127.") or ip == "::1" or ip.lower().startswith("fe80"):
                continue  # loopback, and IPv6 link-local (needs %interface)
            found.append(f"http://[{ip}]:{port}/" if family == socket.AF_INET6 else f"http://{ip}:{port}/")
    return found


def banner(args: argparse.Namespace, downloads: bool, local: bool, precision: str = "", room=None) -> str:
    """What the terminal says once the page is up: where students connect (local: bound where
    only this machine reaches it; else the addresses, the first as a QR code), whether Hub
    downloads are allowed, how to get a public link, and the precision the models compute in
    (precision_line()); `room` (a dashboard.rounds.Classroom): the class rounds' addresses, the
    room code and the teacher's link with its key (printed here only)."""
    lines = ["", "BERT Lab is ready: every tab's model is loaded."]
    if local:
        lines.append(
            f"  open   http://{'[::1]' if args.host == '::1' else '127.0.0.1'}:{args.port}/ "
            f"(this computer only; for a classroom: --host 0.0.0.0)"
        )
    else:
        found = addresses(args.host, args.port)
        lines.append("  students type one of:" if found else "  no network address found: is the network up?")
        lines += [f"    {url}" for url in found]
        if found:
            # here, not at the top: importing the dashboard imports gradio and torch (built by now)
            from dashboard.qr import terminal_qr

            lines.append(f"  or scan {found[0]} with a phone's camera:")
            lines += ["    " + row for row in terminal_qr(found[0]).splitlines()]
        if args.host == "0.0.0.0":
            lines.append("  (IPv4; for students on IPv6 only, start with --host ::)")
    lines.append(
        "  Hugging Face downloads: "
        + (
            "on (the Model tab can add Hub models)"
            if downloads
            else "off on a public server (--allow-downloads or BERT_LAB_ALLOW_DOWNLOADS=1 turns them on)"
        )
    )
    if not args.share:
        lines.append("  a public link through gradio.live (needs internet): add --share")
    if precision:
        lines.append(f"  precision: {precision}")
    if room is not None:
        first = ([f"http://127.0.0.1:{args.port}/"] if local else addresses(args.host, args.port)) or ["/"]
        lines.append(f"  class rounds: students open {first[0]}play with the room code {room.code}")
        lines.append(f"    teacher (keep this link to yourself): {first[0]}teacher?key={room.key}")
    return "\n".join(lines) + "\n"


def precision_line(setting: str, choice=None, on: bool = False, model: str = "") -> str:
    """The banner's words for the precision: --precision auto with the choice made
    (a lab.device.PrecisionChoice: its timings, or why none were needed, and the model timed);
    bf16 / fp32 as asked (on: whether bf16 is on, False where the hardware has no bf16)."""
    if setting == "auto" and choice is not None:
        timed = f" on {model}'s forward" if model and choice.fp32_ms is not None else ""
        return f"{choice.describe()}{timed}; --precision bf16 or fp32 overrides"
    if setting == "bf16":
        return "bf16 (--precision bf16)" if on else "fp32 (--precision bf16, but this hardware has no bf16)"
    return "fp32 (--precision fp32)"


def set_precision(args: argparse.Namespace, store, explore) -> str:
    """Turn explore's bf16 on or off as --precision says and return the banner's words for it.
    auto: explore.choose_bf16 times the forward of --model, else of the Question Answering
    tab's model (the bundled MiniLM), within about a second, unless the hardware settles it."""
    if args.precision != "auto":
        return precision_line(args.precision, on=explore.use_bf16(args.precision == "bf16"))
    name = store.default_model(None if args.model else "answer")
    try:
        model, tokenizer = store.get(name) if name else (None, None)
    except ValueError:  # a ModelError: the model does not load (its tab says why)
        model = None
    if model is None:  # nothing to time
        explore.use_bf16(False)
        return "fp32 (no model to time; --precision bf16 overrides)"
    return precision_line("auto", explore.choose_bf16(model, tokenizer), model=name)


def tune_malloc(arenas: int = 2, mmap_mb: int = 32, trim_mb: int = 8) -> bool:
    """Keep a long-running server's memory flat with glibc allocator settings, made before the
    server's threads exist (the measurements behind them: docs/performance.md, "What keeps a
    server bounded"):

    - M_ARENA_MAX 2: glibc gives every thread that allocates an arena of its own and reuses memory
      freed in an arena only there, while the server's requests run on changing threads (Gradio's
      worker pool, torch's).
    - M_MMAP_THRESHOLD 32 MB, the ceiling of glibc's dynamic threshold (a request's big tensors
      still come from the heap), and M_TRIM_THRESHOLD 8 MB: a heap gives back a free top above 8 MB
      (the dynamic threshold lets it keep up to 64 MB).

    True when all three took effect (Linux with glibc), otherwise nothing is promised."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        # the numbers are malloc.h's: M_ARENA_MAX -8, M_MMAP_THRESHOLD -3, M_TRIM_THRESHOLD -1
        settings = [(-8, arenas), (-3, mmap_mb << 20), (-1, trim_mb << 20)]
        return all([bool(libc.mallopt(option, value)) for option, value in settings])
    except (OSError, AttributeError):
        return False


def main(argv: list[str] | None = None) -> None:
    """python app.py [options]: parse the arguments, set the process-wide thread count, malloc
    settings and precision, build the page (every tab's default model loaded) and serve it."""
    args = parser().parse_args(argv)
    tune_malloc()
    logging.basicConfig(level=logging.INFO)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per health check
    # here, not at the top: torch and the dashboard take seconds to import, and `import app` must not
    import torch
    from starlette.middleware import Middleware

    from dashboard import LAUNCH_OPTIONS, Dashboard, Settings
    from dashboard.context import LOCAL_HOSTS
    from dashboard.page_cache import PageCache
    from dashboard.web_edition import routes as web_routes
    from lab.inspect import explore

    # process-wide settings, made only when app.py is the program (not when a test builds the page)
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // max(1, args.concurrency)))
    settings = Settings.from_args(args)
    print("BERT Lab: loading the models and computing each tab's first view ...", flush=True)
    dash = Dashboard(settings)
    precision = set_precision(args, dash.store, explore)  # before the first views: they compute in it
    demo = dash.build()
    globals()["demo"] = demo  # what `gradio app.py` and Spaces' reloader look for in __main__
    host = f"[{args.host}]" if ":" in args.host else args.host  # Gradio writes an IPv6 address in brackets
    demo.launch(
        server_name=host,
        server_port=args.port,
        share=args.share,
        quiet=True,
        prevent_thread_lock=True,
        state_session_capacity=args.sessions,
        # the pages built once, not per student: the dashboard and the class rounds' student page
        app_kwargs={
            "middleware": [Middleware(PageCache, paths=("/", "/play"))],
            "routes": web_routes(settings.web_site),  # the browser edition at /web/, when there is a site
        },
        **LAUNCH_OPTIONS,
    )
    print(
        banner(args, settings.downloads, args.host in LOCAL_HOSTS, precision, dash.rounds.room)
        + (f"  public link: {demo.share_url}\n" if demo.share_url else ""),
        flush=True,
    )
    try:
        demo.block_thread()
    except KeyboardInterrupt:
        demo.close()


def __getattr__(name: str):
    """`app.demo`: the page with the default settings, built on first use (for `gradio app.py`
    and Hugging Face Spaces, which import this file and look for `demo`)."""
    if name == "demo":
        globals()["demo"] = build(parser().parse_args([]))
        return globals()["demo"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
