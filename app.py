"""BERT Lab dashboard: one tab per idea of the BERT paper, on the bundled models, offline.

    python app.py                          # http://127.0.0.1:7860, the bundled models
    python app.py --host 0.0.0.0           # reachable from the classroom's network
    python app.py --share                  # a public gradio.live link (needs internet)
    python app.py --model runs/mine        # start on another model (under a models root)
    python app.py --model google-bert/bert-base-uncased    # or a Hugging Face model, by id
    python app.py --host 0.0.0.0 --allow-downloads       # let users add Hub models on a public server

Tabs: Masked LM (fill-mask, click a word to mask it, the 80/10/10 corruption preview), Next
Sentence, Attention (heatmaps, head statistics, head ablation, bertviz), Question Answering,
Classify, Training (curves, "watch BERT learn" across checkpoints), Model (config, tokens, input
embeddings, add a model directory or a Hugging Face model id).

Models are the HF-layout directories under the models roots: models/ and runs/ of this
repository, plus any folder given with --models-root (or BERT_LAB_MODELS, separated by ':').
A path outside them is refused. Hugging Face Hub ids (ORG/NAME, BERT checkpoints only) live in
the Hub cache (lab.hub): the Model tab's Add downloads one, with progress, when the app is bound
to localhost (or started with --allow-downloads); on a public bind (--host 0.0.0.0, --share)
downloads are off and only ids already in the cache load. Every model menu then lists it.
Loaded models are kept in a small cache shared by all users; every request runs without
gradients, so concurrent requests share one copy.

This file only parses, builds and launches: the page is the dashboard package (one module per
tab), the models come from lab.inspect.model_store. Importing app.py parses no arguments, loads no model
and builds no page; `app.demo` (what `gradio app.py` and Hugging Face Spaces look for) builds the
page with the default settings on first use; build(args) builds it for a command line.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

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
        help="another folder whose model directories may be served (repeatable)",
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
        "--precision",
        choices=["bf16", "fp32"],
        default="bf16",
        help="bf16: forward passes under bf16 autocast where the hardware is fast at it "
        "(2-3x faster for BERT-base on a CPU; probabilities differ in the 2nd-3rd digit)",
    )
    return p


def build(args: argparse.Namespace):
    """The page (a gr.Blocks) for parsed command-line arguments (see parser()). Launch it with
    demo.launch(..., **dashboard.LAUNCH_OPTIONS). The dashboard (and torch under it) is imported
    here, not when app.py is: `python app.py --help` and tools that import app.py stay quick."""
    from dashboard import Dashboard, Settings

    return Dashboard(Settings.from_args(args)).build()


def addresses(host: str, port: int) -> list[str]:
    """The addresses students type. Bound to every interface: one per non-loopback address of
    this machine, of the family served (0.0.0.0: IPv4; ::: IPv6 — Gradio's server binds one
    family, asyncio making an IPv6 socket IPv6-only); else the bound host."""
    if host not in ALL_INTERFACES:
        return [f"http://{'[' + host + ']' if ':' in host else host}:{port}/"]
    import socket

    import psutil

    family = socket.AF_INET6 if host == "::" else socket.AF_INET
    found = []
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            ip = a.address.split("%")[0]
            if a.family != family or ip.startswith("127.") or ip == "::1" or ip.lower().startswith("fe80"):
                continue  # loopback, and IPv6 link-local (needs %interface)
            found.append(f"http://[{ip}]:{port}/" if family == socket.AF_INET6 else f"http://{ip}:{port}/")
    return found


def banner(args: argparse.Namespace, downloads: bool) -> str:
    """What the terminal says once the page is up: where students connect, whether Hub
    downloads are allowed, how to get a public link."""
    from dashboard.context import LOCAL_HOSTS

    lines = ["", "BERT Lab is ready: every tab's model is loaded."]
    if args.host in LOCAL_HOSTS:
        lines.append(
            f"  open   http://{'[::1]' if args.host == '::1' else '127.0.0.1'}:{args.port}/ "
            f"(this computer only; for a classroom: --host 0.0.0.0)"
        )
    else:
        found = addresses(args.host, args.port)
        lines.append("  students type one of:" if found else "  no network address found: is the network up?")
        lines += [f"    {url}" for url in found]
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
    return "\n".join(lines) + "\n"


def tune_malloc(arenas: int = 2, mmap_mb: int = 32, trim_mb: int = 8) -> bool:
    """A server that stays flat for a lecture, in glibc allocator settings made before the server's
    threads exist (measured with benchmarks/soak.py, docs/performance.md "An hour of class"):

    - mallopt(M_ARENA_MAX, 2): glibc gives every thread that allocates a malloc arena of its own (up
      to 8 per core), and memory freed in one arena is reused only there, so a server whose requests
      run on changing threads (Gradio's worker pool, torch's) grew by 300 MB in its first quarter
      hour of a class (1.59 -> 1.89 GB; with two arenas 1.22 -> 1.24 GB).
    - mallopt(M_MMAP_THRESHOLD, 32 MB) and mallopt(M_TRIM_THRESHOLD, 8 MB): glibc's dynamic
      threshold rises with every large block freed and keeps the heaps' free top up to 64 MB; with
      it an hour of class rose in a step of ~50 MB in its last third (+5.0%). Fixed at the dynamic
      threshold's own ceiling (big tensors still come from the heap) with a free top above 8 MB
      given back, the next hour held +1.5% (1,188 -> 1,206 MB) at 78 ms of CPU a click (82 ms
      before). (A threshold fixed at 128 KB or 1 MB was measured too: 20% more CPU a click and the
      same growth.)

    True when all three took effect (Linux with glibc), otherwise nothing is promised."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

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
    import torch

    from dashboard import LAUNCH_OPTIONS, Dashboard, Settings
    from lab.inspect import explore

    # process-wide settings, made only when app.py is the program (not when a test builds the page)
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // max(1, args.concurrency)))
    explore.use_bf16(args.precision == "bf16")
    settings = Settings.from_args(args)
    print("BERT Lab: loading the models and computing each tab's first view ...", flush=True)
    demo = Dashboard(settings).build()
    globals()["demo"] = demo  # what `gradio app.py` and Spaces' reloader look for in __main__
    host = f"[{args.host}]" if ":" in args.host else args.host  # Gradio writes an IPv6 address in brackets
    demo.launch(
        server_name=host,
        server_port=args.port,
        share=args.share,
        quiet=True,
        prevent_thread_lock=True,
        state_session_capacity=args.sessions,
        **LAUNCH_OPTIONS,
    )
    print(
        banner(args, settings.downloads) + (f"  public link: {demo.share_url}\n" if demo.share_url else ""), flush=True
    )
    try:
        demo.block_thread()
    except KeyboardInterrupt:
        demo.close()


def __getattr__(name: str):
    """`app.demo`: the page with the default settings, built on first use (for `gradio app.py`
    and Hugging Face Spaces, which import this file and look for `demo`)."""
    if name == "demo":
        from dashboard import Dashboard, Settings

        globals()["demo"] = Dashboard(Settings.from_args(parser().parse_args([]))).build()
        return globals()["demo"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
