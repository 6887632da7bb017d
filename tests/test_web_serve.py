"""serve-web (lab/web/serve.py), the Space files (lab/web/space.py) and benchmarks/web_load.py's
students, on a stand-in site made here (no export, no network but loopback)."""

import gzip
import http.client
import json
import os
import socket
import threading

import pytest
import yaml

from lab.web import serve as web_serve
from lab.web.serve import banner, make_server
from lab.web.space import write_space_files

SECRET = b"the teacher's private notes"


@pytest.fixture
def site(tmp_path):
    """A site as export-web writes it, in miniature, with a private file beside it."""
    root = tmp_path / "site"
    (root / "models" / "tiny").mkdir(parents=True)
    (root / "ort").mkdir()
    entry = {
        "name": "tiny",
        "views": ["fill-mask", "attention"],
        "card": ["A tiny BERT for the tests."],
        "bytes": 3_300_000,
        "files": {"model": "models/tiny/model.onnx", "tokenizer": "models/tiny/tokenizer.json"},
    }
    files = {
        "manifest.json": json.dumps({"version": 1, "models": [entry]}).encode(),
        "index.html": b"<!doctype html><title>BERT Lab</title>" + b"<p>hello</p>" * 50,
        "app.js": b"export const views = ['fill-mask'];\n" * 200,
        "style.css": b"body { margin: 0; }\n" * 20,
        "ort/ort-wasm-simd-threaded.wasm": b"\0asm" + bytes(range(256)) * 400,
        "ort/ort-wasm-simd-threaded.mjs": b"export default function () {}\n" * 30,
        "models/tiny/model.onnx": os.urandom(50_000),  # weights: gzip saves nothing on them
        "models/tiny/tokenizer.json": json.dumps({"vocab": {f"w{i}": i for i in range(2000)}}).encode(),
    }
    for name, data in files.items():
        (root / name).write_bytes(data)
    (tmp_path / "secret.txt").write_bytes(SECRET)
    return root


@pytest.fixture
def served(site):
    server = make_server(site, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def get(port: int, path: str, **headers) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def raw_get(port: int, target: str) -> tuple[int, bytes]:
    """A request line sent byte for byte (http.client and browsers tidy some paths up)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1]), answer.split(b"\r\n\r\n", 1)[1]


@pytest.mark.parametrize(
    "path, kind, cache",
    [
        ("/", "text/html; charset=utf-8", "no-cache"),
        ("/app.js", "text/javascript; charset=utf-8", "no-cache"),
        ("/ort/ort-wasm-simd-threaded.mjs", "text/javascript; charset=utf-8", "public, max-age=86400"),
        ("/ort/ort-wasm-simd-threaded.wasm", "application/wasm", "public, max-age=86400"),
        ("/manifest.json", "application/json", "no-cache"),
        ("/models/tiny/model.onnx", "application/octet-stream", "public, max-age=86400"),
        ("/models/tiny/tokenizer.json", "application/json", "public, max-age=86400"),
    ],
)
def test_files_go_out_whole_with_their_type_caching_and_isolation_headers(site, served, path, kind, cache):
    status, headers, body = get(served, path)
    assert status == 200 and body == (site / (path.strip("/") or "index.html")).read_bytes()
    assert headers["content-type"] == kind and headers["cache-control"] == cache
    assert headers["cross-origin-opener-policy"] == "same-origin"
    assert headers["cross-origin-embedder-policy"] == "require-corp"
    assert "content-encoding" not in headers and int(headers["content-length"]) == len(body)


def test_gzip_when_the_browser_accepts_it(site, served):
    for path in ("/app.js", "/ort/ort-wasm-simd-threaded.wasm", "/models/tiny/tokenizer.json"):
        status, headers, body = get(served, path, **{"Accept-Encoding": "gzip, deflate, br"})
        assert status == 200 and headers["content-encoding"] == "gzip" and headers["vary"] == "Accept-Encoding"
        assert gzip.decompress(body) == (site / path[1:]).read_bytes() and len(body) < (site / path[1:]).stat().st_size
    # weights gzip cannot shrink go out as they are; gzip;q=0 refuses gzip
    _, headers, body = get(served, "/models/tiny/model.onnx", **{"Accept-Encoding": "gzip"})
    assert "content-encoding" not in headers and body == (site / "models/tiny/model.onnx").read_bytes()
    _, headers, _ = get(served, "/app.js", **{"Accept-Encoding": "gzip;q=0, br"})
    assert "content-encoding" not in headers


def test_a_precompressed_copy_beside_the_file_is_sent_as_it_is(site, served):
    (site / "style.css.gz").write_bytes(gzip.compress(b"/* the precompressed one */"))
    _, headers, body = get(served, "/style.css", **{"Accept-Encoding": "gzip"})
    assert headers["content-encoding"] == "gzip" and gzip.decompress(body) == b"/* the precompressed one */"
    assert headers["content-type"] == "text/css; charset=utf-8"


def test_one_connection_serves_many_files_and_an_unchanged_file_answers_304(served):
    conn = http.client.HTTPConnection("127.0.0.1", served, timeout=10)
    try:
        for path in ("/", "/app.js", "/manifest.json"):
            conn.request("GET", path)
            response = conn.getresponse()
            assert response.status == 200 and response.read() and not response.will_close
        conn.request("GET", "/manifest.json", headers={"If-None-Match": response.getheader("ETag")})
        response = conn.getresponse()
        assert response.status == 304 and response.read() == b"" and not response.will_close
    finally:
        conn.close()


@pytest.mark.parametrize(
    "target",
    [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/models/..%2f..%2f..%2fsecret.txt",
        "/models/tiny/../../../secret.txt",
        "http://x/../secret.txt",
        "/..\\secret.txt",
    ],
)
def test_paths_out_of_the_site_are_refused(served, target):
    status, body = raw_get(served, target)
    assert status == 403 and SECRET not in body and body == b"forbidden: only the files of this site are served\n"


def test_absolute_paths_and_links_out_stay_inside(site, served):
    secret = site.parent / "secret.txt"
    status, body = raw_get(served, "/" + str(secret))  # //tmp/.../secret.txt: a path inside the site
    assert status == 404 and SECRET not in body
    (site / "notes.txt").symlink_to(secret)
    status, body = raw_get(served, "/notes.txt")
    assert status == 403 and SECRET not in body


def test_a_missing_file_a_folder_and_a_hidden_file_are_404_in_plain_words(site, served):
    (site / ".gitattributes").write_text("*.onnx filter=lfs\n")
    status, headers, body = get(served, "/nothing.js?v=1")
    assert status == 404 and body == b"not found: this site has no /nothing.js\n"
    assert headers["content-type"] == "text/plain; charset=utf-8"
    for path in ("/models/", "/models", "/.gitattributes"):  # no listing; nothing hidden
        status, _, body = get(served, path)
        assert status == 404 and b"tiny" not in body and b"lfs" not in body


def test_a_folder_without_a_manifest_is_refused_with_what_to_do(tmp_path, capsys):
    from lab.__main__ import main

    with pytest.raises(FileNotFoundError, match="is not an exported site .* python -m lab export-web --out"):
        make_server(tmp_path, "127.0.0.1", 0)
    assert main(["serve-web", str(tmp_path), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "is not an exported site" in err and "Traceback" not in err


def test_a_port_in_use_says_so(site):
    first = make_server(site, "127.0.0.1", 0)
    try:
        with pytest.raises(ValueError, match=r"port \d+ is in use .* --port"):
            make_server(site, "127.0.0.1", first.server_address[1])
    finally:
        first.server_close()


def test_the_command_prints_where_students_connect_and_stops_on_ctrl_c(site, monkeypatch, capsys):
    from lab.__main__ import main

    def interrupted(self, poll_interval=0.5):
        raise KeyboardInterrupt

    monkeypatch.setattr(web_serve.SiteServer, "serve_forever", interrupted)
    assert main(["serve-web", str(site), "--host", "127.0.0.1", "--port", "0"]) == 0
    out = capsys.readouterr().out
    assert "this computer only" in out and "http://127.0.0.1:" in out and "stopped: served 0 files" in out


def test_the_banner_lists_this_machines_addresses_on_every_interface(site, monkeypatch):
    def address(family, ip):
        return type("Address", (), {"family": family, "address": ip})()

    interfaces = {
        "lo": [address(socket.AF_INET, "127.0.0.1"), address(socket.AF_INET6, "::1")],
        "wlan0": [address(socket.AF_INET, "192.168.1.23"), address(socket.AF_INET6, "fe80::1%wlan0")],
    }
    monkeypatch.setattr(web_serve.psutil, "net_if_addrs", lambda: interfaces)
    lines = banner(site, "0.0.0.0", 8000)
    assert "    http://192.168.1.23:8000/" in lines and not any("127.0.0.1" in line for line in lines)
    monkeypatch.setattr(web_serve.psutil, "net_if_addrs", lambda: {"lo": interfaces["lo"]})
    assert any("no network address found" in line for line in banner(site, "0.0.0.0", 8000))


def test_the_space_files_make_a_static_space_with_lfs(site):
    manifest = json.loads((site / "manifest.json").read_text())
    written = write_space_files(site, manifest)
    assert sorted(p.name for p in written) == [".gitattributes", ".nojekyll", "README.md"]
    text = (site / "README.md").read_text(encoding="utf-8")
    front, body = text.split("---\n")[1], text.split("---\n", 2)[2]
    meta = yaml.safe_load(front)
    assert meta["sdk"] == "static" and meta["app_file"] == "index.html" and meta["pinned"] is False
    assert meta["title"] == "BERT Lab" and meta["license"] == "mit" and meta["short_description"]
    assert meta["custom_headers"] == {
        "cross-origin-embedder-policy": "require-corp",
        "cross-origin-opener-policy": "same-origin",
    }
    assert "**tiny** (3.3 MB)" in body and "python -m lab export-web" in body
    lfs = (site / ".gitattributes").read_text().splitlines()
    assert lfs == ["*.onnx filter=lfs diff=lfs merge=lfs -text", "*.wasm filter=lfs diff=lfs merge=lfs -text"]
    assert (site / ".nojekyll").read_text() == ""


def test_the_load_benchmarks_students_get_every_byte(site, served):
    from benchmarks import web_load

    phases = web_load.phases_of(site)
    assert list(phases[0]) == ["app.js", "index.html", "manifest.json", "style.css"]
    raw = sum(sum(files.values()) for files in phases)
    result = web_load.play_class("127.0.0.1", served, phases, 5, 1.0, verify=True)
    assert result["errors"] == 0, result["error_examples"]
    assert result["raw_bytes"] == 5 * raw and result["sent_bytes"] < result["raw_bytes"]
    assert 0 < result["phases"][0]["p95_s"] <= result["p95_s"] < 10
