"""The browser edition served from the teacher's laptop, for a classroom without internet.

    python -m lab serve-web site                    # http://127.0.0.1:8000/, this computer only
    python -m lab serve-web site --host 0.0.0.0     # the classroom's network: it prints the addresses

    server = make_server("site", "127.0.0.1", 0)    # tests and benchmarks/web_load.py: port 0 = any free one
    threading.Thread(target=server.serve_forever, daemon=True).start()

A threaded static server (one thread a connection, HTTP/1.1 keep-alive) of an exported site's
files and nothing else: no listings, no hidden files, nothing outside the folder. It sends the
headers that let onnxruntime-web use threads (COOP/COEP), long caching for the models and the
runtime, and gzip when the browser accepts it: `name.gz` if the folder has one, else each text
file, .wasm and .onnx compressed once and kept in memory (the 14 MB wasm goes out as 3.7 MB).
"""

from __future__ import annotations

import email.utils
import json
import socket
import sys
import threading
import time
import zlib
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import psutil

from lab.files import MANIFEST_NAME, SITE_MODELS_DIR

TYPES = {  # by suffix; anything else: application/octet-stream
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".wasm": "application/wasm",
    ".onnx": "application/octet-stream",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/plain; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".gz": "application/gzip",
}
COMPRESSIBLE = {".html", ".js", ".mjs", ".css", ".json", ".map", ".txt", ".md", ".svg", ".wasm", ".onnx"}
LONG_CACHE = {".wasm", ".onnx"}  # and everything under models/ or ort/: large, changed only by a new export
LONG_CACHE_DIRS = (SITE_MODELS_DIR, "ort")
CACHE_LONG, CACHE_CHECK = "public, max-age=86400", "no-cache"  # a day; the rest: ask again (a 304 when unchanged)
ISOLATION = {  # cross-origin isolation: SharedArrayBuffer, so onnxruntime-web may run on several threads
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}
GZIP_LEVEL = 6  # the wasm: level 6 3.67 MB in 0.5 s, level 9 3.65 MB in 0.8 s, level 1 4.33 MB
MIN_SAVING = 0.05  # keep a compressed copy only if it is at least 5% smaller (fp16 .onnx: 8%; int8: 9%)
MAX_CACHE_BYTES = 512 * 2**20  # compressed copies kept in memory at most; past it, files go out as they are
QUEUE = 1024  # connections the system holds while every thread is busy (a class arriving at once)
IDLE_SECONDS = 30  # a keep-alive connection idle this long is closed (its thread ends)
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
ALL_INTERFACES = ("0.0.0.0", "::")
NOT_A_SITE = "{site} is not an exported site (it has no {manifest}): run python -m lab export-web --out {site} first"


def accepts_gzip(header: str | None) -> bool:
    """Whether an Accept-Encoding header accepts gzip ("gzip, deflate, br"; not "gzip;q=0")."""
    for item in (header or "").split(","):
        name, _, params = item.partition(";")
        if name.strip().lower() in ("gzip", "x-gzip", "*"):
            q = params.strip().lower()
            return not (q.startswith("q=") and q[2:].strip("0. ") == "")
    return False


class Site:
    """The folder served: where a request's path leads, and the gzip copies of its files."""

    def __init__(self, root):
        self.root = Path(root).resolve()
        self.gzipped_bytes = 0
        self._compressed: dict[tuple[Path, int, int], bytes | None] = {}
        self._locks: dict[Path, threading.Lock] = {}
        self._lock = threading.Lock()

    def locate(self, target: str) -> tuple[HTTPStatus, Path | None]:
        """The file a request target names: (OK, path), or (FORBIDDEN, None) for a path that
        climbs out (.., encoded or not), or (NOT_FOUND, None). A folder stands for its index.html."""
        path = urlsplit(target).path if "://" in target else target.split("?", 1)[0].split("#", 1)[0]
        parts = unquote(path, errors="strict").split("/")
        if any(p == ".." or "\\" in p or "\x00" in p or ":" in p for p in parts):
            return HTTPStatus.FORBIDDEN, None
        parts = [p for p in parts if p not in ("", ".")]
        if any(p.startswith(".") for p in parts):  # .git, .gitattributes: not the page's
            return HTTPStatus.NOT_FOUND, None
        file = self.root.joinpath(*parts)
        try:
            file = (file / "index.html" if file.is_dir() else file).resolve(strict=True)
        except (OSError, RuntimeError):
            return HTTPStatus.NOT_FOUND, None
        if not file.is_relative_to(self.root):  # a link that leads out of the folder
            return HTTPStatus.FORBIDDEN, None
        return (HTTPStatus.OK, file) if file.is_file() else (HTTPStatus.NOT_FOUND, None)

    def gzipped(self, file: Path, stat) -> bytes | None:
        """`file` gzip-compressed, made once per version of the file and kept; None when gzip
        saves under MIN_SAVING or the memory for copies is spent."""
        key = (file, stat.st_mtime_ns, stat.st_size)
        if key in self._compressed:
            return self._compressed[key]
        with self._lock:
            lock = self._locks.setdefault(file, threading.Lock())
        with lock:  # one thread compresses; the others wait for its copy
            if key not in self._compressed:
                data = file.read_bytes()
                packed = zlib.compress(data, GZIP_LEVEL, wbits=31)  # gzip; zlib lets go of the GIL meanwhile
                keep = len(packed) <= (1 - MIN_SAVING) * len(data) and self.gzipped_bytes < MAX_CACHE_BYTES
                self._compressed[key] = packed if keep else None
                self.gzipped_bytes += len(packed) if keep else 0
        return self._compressed[key]

    def files(self) -> list[Path]:
        """The compressible files, the page's and the first model's first (what warm() does first)."""
        found = [
            p
            for p in sorted(self.root.rglob("*"))
            if p.suffix in COMPRESSIBLE
            and p.is_file()
            and not any(part.startswith(".") for part in p.relative_to(self.root).parts)
        ]
        try:
            models = json.loads((self.root / MANIFEST_NAME).read_text())["models"]
            order = [m["name"] for m in models]
        except (OSError, ValueError, KeyError, TypeError):
            order = []

        def rank(p: Path) -> tuple[int, str]:
            parts = p.relative_to(self.root).parts
            if parts[0] != SITE_MODELS_DIR or len(parts) < 3:
                return -1, p.as_posix()
            return (order.index(parts[1]) if parts[1] in order else len(order)), p.as_posix()

        return sorted(found, key=rank)

    def warm(self) -> tuple[int, int, int]:
        """Make every gzip copy now (at start, in the background): (files, bytes, bytes compressed)."""
        raw = packed = n = 0
        for file in self.files():
            try:
                stat = file.stat()
                copy = self.gzipped(file, stat)
            except OSError:
                continue
            n, raw, packed = n + 1, raw + stat.st_size, packed + (len(copy) if copy else stat.st_size)
        return n, raw, packed


class Handler(BaseHTTPRequestHandler):
    """GET and HEAD of the site's files, each response with a Content-Length (the connection stays open)."""

    protocol_version = "HTTP/1.1"
    server_version = "BERT-Lab"
    timeout = IDLE_SECONDS
    disable_nagle_algorithm = True  # headers, then the body: no 40 ms wait for an ACK between them

    def do_GET(self):  # the name http.server calls
        self.respond(body=True)

    def do_HEAD(self):
        self.respond(body=False)

    def respond(self, body: bool) -> None:
        try:
            status, file = self.server.site.locate(self.path)
        except UnicodeDecodeError:
            status, file = HTTPStatus.NOT_FOUND, None
        if status == HTTPStatus.FORBIDDEN:
            return self.plain(status, "forbidden: only the files of this site are served", body)
        if file is None:
            shown = self.path.split("?", 1)[0][:200]
            return self.plain(HTTPStatus.NOT_FOUND, f"not found: this site has no {shown}", body)
        stat = file.stat()
        source, encoding = file, None
        if file.suffix in COMPRESSIBLE and accepts_gzip(self.headers.get("Accept-Encoding")):
            source, encoding = self.compressed(file, stat)
        tag = f'"{stat.st_size:x}-{stat.st_mtime_ns:x}{"-gz" if encoding else ""}"'
        if tag in self.headers.get("If-None-Match", ""):
            self.send_response(HTTPStatus.NOT_MODIFIED)
            self.common_headers(file, tag, encoding)
            self.send_header("Content-Length", "0")
            return self.end_headers()
        size = len(source) if isinstance(source, bytes) else source.stat().st_size
        self.send_response(HTTPStatus.OK)
        self.common_headers(file, tag, encoding)
        self.send_header("Content-Type", TYPES.get(file.suffix, "application/octet-stream"))
        self.send_header("Content-Length", str(size))
        self.send_header("Last-Modified", email.utils.formatdate(stat.st_mtime, usegmt=True))
        self.end_headers()
        if body:
            self.send_body(source)
        self.server.count(size if body else 0, stat.st_size if body else 0)

    def compressed(self, file: Path, stat) -> tuple[Path | bytes, str | None]:
        """What goes out for a browser that accepts gzip: `name.gz` beside the file (unless it is
        older), else the kept copy, else the file as it is."""
        ready = file.with_name(file.name + ".gz")
        if ready.is_file() and ready.stat().st_mtime_ns >= stat.st_mtime_ns:
            return ready, "gzip"
        packed = self.server.site.gzipped(file, stat)
        return (packed, "gzip") if packed is not None else (file, None)

    def common_headers(self, file: Path, tag: str, encoding: str | None) -> None:
        relative = file.relative_to(self.server.site.root).parts
        long = file.suffix in LONG_CACHE or relative[0] in LONG_CACHE_DIRS
        self.send_header("Cache-Control", CACHE_LONG if long else CACHE_CHECK)
        self.send_header("ETag", tag)
        if file.suffix in COMPRESSIBLE:
            self.send_header("Vary", "Accept-Encoding")
        if encoding:
            self.send_header("Content-Encoding", encoding)
        for name, value in ISOLATION.items():
            self.send_header(name, value)

    def send_body(self, source: Path | bytes) -> None:
        if isinstance(source, bytes):
            self.wfile.write(source)
        else:
            with source.open("rb") as f:
                self.connection.sendfile(f)  # os.sendfile: the kernel copies, not Python

    def plain(self, status: HTTPStatus, text: str, body: bool = True) -> None:
        """A short text/plain answer (errors): no server path, no traceback."""
        data = (text + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for name, value in ISOLATION.items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(data)
        self.server.count(0, 0, missing=1)

    def log_message(self, format, *args):  # http.server's signature
        """Quiet: a class makes thousands of requests; the counts are printed at the end."""


class SiteServer(ThreadingHTTPServer):
    """ThreadingHTTPServer for a class: daemon threads, a long accept queue, quiet about
    browsers that hang up (a closed tab is not an error)."""

    daemon_threads = True
    request_queue_size = QUEUE
    allow_reuse_address = True

    def __init__(self, address, site: Site):
        self.site = site
        self.served = {"files": 0, "bytes": 0, "raw_bytes": 0, "missing": 0}
        self._count_lock = threading.Lock()
        super().__init__(address, Handler)

    def count(self, sent: int, raw: int, missing: int = 0) -> None:
        with self._count_lock:
            self.served["files"] += 0 if missing else 1
            self.served["bytes"] += sent
            self.served["raw_bytes"] += raw
            self.served["missing"] += missing

    def handle_error(self, request, client_address):
        """A browser that closed the connection mid-file: nothing to report. Others: one line."""
        error = sys.exc_info()[1]
        if not isinstance(error, (ConnectionError, TimeoutError)):
            print(f"serve-web: {type(error).__name__} while answering {client_address[0]}: {error}", file=sys.stderr)


class SiteServer6(SiteServer):
    address_family = socket.AF_INET6


def make_server(site, host: str = "127.0.0.1", port: int = 8000) -> SiteServer:
    """A server of the exported site in `site` bound to host:port (port 0: any free one; the
    port taken is server.server_address[1]), not yet serving: call serve_forever()."""
    folder = Path(site)
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder {site}: export the site first with python -m lab export-web --out {site}")
    if not (folder / MANIFEST_NAME).is_file():
        raise FileNotFoundError(NOT_A_SITE.format(site=site, manifest=MANIFEST_NAME))
    cls = SiteServer6 if ":" in host else SiteServer
    try:
        return cls((host, port), Site(folder))
    except OSError as e:
        if e.errno in (98, 48, 10048):  # EADDRINUSE on Linux, macOS, Windows
            raise ValueError(f"port {port} is in use (another server?): stop it, or choose another with --port") from e
        if e.errno in (13, 10013):
            raise ValueError(f"no permission to serve on port {port}: choose one above 1023 with --port") from e
        raise ValueError(f"cannot serve on {host}:{port} ({e.strerror}): check --host") from e


def addresses(host: str, port: int) -> list[str]:
    """The addresses students type: bound to every interface (0.0.0.0, ::), one per
    non-loopback address of that family on this machine; else the host bound."""
    if host not in ALL_INTERFACES:
        return [f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"]
    family = socket.AF_INET6 if host == "::" else socket.AF_INET
    ips = [
        a.address.split("%")[0] for interface in psutil.net_if_addrs().values() for a in interface if a.family == family
    ]
    usable = [ip for ip in ips if not ip.startswith("127.") and ip != "::1" and not ip.lower().startswith("fe80")]
    return [f"http://[{ip}]:{port}/" if family == socket.AF_INET6 else f"http://{ip}:{port}/" for ip in usable]


def banner(site, host: str, port: int) -> list[str]:
    """What the terminal says once the site is served: what, and where students connect."""
    files = [p for p in Path(site).rglob("*") if p.is_file()]
    megabytes = sum(p.stat().st_size for p in files) / 1e6
    lines = ["", f"BERT Lab's browser edition is served: {site} ({len(files)} files, {megabytes:.1f} MB)."]
    if host in LOCAL_HOSTS:
        lines.append(f"  open   {addresses(host, port)[0]} (this computer only; for a classroom: --host 0.0.0.0)")
    else:
        found = addresses(host, port)
        lines.append("  students type one of:" if found else "  no network address found: is the network up?")
        lines += [f"    {url}" for url in found]
        if host == "0.0.0.0":
            lines.append("  (IPv4; for students on IPv6 only, start with --host ::)")
    lines.append("  Ctrl-C stops it.")
    return lines


def serve(site, host: str = "127.0.0.1", port: int = 8000, log=print) -> dict:
    """Serve `site` until Ctrl-C: the banner, the gzip copies made in the background, then what was served."""
    server = make_server(site, host, port)
    port = server.server_address[1]
    for line in banner(site, host, port):
        log(line)

    def warm():
        start = time.perf_counter()
        n, raw, packed = server.site.warm()
        took = time.perf_counter() - start
        log(f"  gzip ready: {n} files, {raw / 1e6:.1f} MB -> {packed / 1e6:.1f} MB ({took:.1f} s)")

    threading.Thread(target=warm, name="gzip-warm", daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    s = server.served
    log(
        f"\nstopped: served {s['files']} files, {s['bytes'] / 1e6:.1f} MB sent ({s['raw_bytes'] / 1e6:.1f} MB unpacked)"
    )
    return s
