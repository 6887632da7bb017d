"""The browser edition from the dashboard (issue 42, point 2): the exported site served at /web/,
and the Model tab's link to its Step by step view, or the command that makes the site."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from dashboard import web_edition

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def site(tmp_path):
    """A stand-in for an exported site: a page, a manifest, the runtime's module and wasm."""
    (tmp_path / "index.html").write_text("<!doctype html><title>BERT Lab in your browser</title>")
    (tmp_path / "manifest.json").write_text(json.dumps({"version": 1, "models": [{"name": "bert-lab-classroom"}]}))
    (tmp_path / "ort").mkdir()
    (tmp_path / "ort" / "ort-wasm-simd-threaded.mjs").write_text("export default 1;")
    (tmp_path / "ort" / "ort-wasm-simd-threaded.wasm").write_bytes(b"\0asm\1\0\0\0")
    return tmp_path


def test_the_site_is_served_at_web(site):
    client = TestClient(Starlette(routes=web_edition.routes(site)))
    page = client.get("/web/")
    assert page.status_code == 200 and "BERT Lab in your browser" in page.text
    assert client.get("/web/manifest.json").json()["models"][0]["name"] == "bert-lab-classroom"
    assert client.get("/web/ort/ort-wasm-simd-threaded.mjs").headers["content-type"].startswith("text/javascript")
    assert client.get("/web/ort/ort-wasm-simd-threaded.wasm").headers["content-type"] == "application/wasm"
    assert client.get("/web/../pyproject.toml").status_code == 404  # nothing outside the site
    assert web_edition.routes(None) == []


def test_which_site_is_served(site, tmp_path_factory):
    assert web_edition.find_site(str(site)) == site
    empty = tmp_path_factory.mktemp("not-a-site")
    with pytest.raises(ValueError, match="no manifest.json there; export one with `make web`"):
        web_edition.find_site(str(empty))


def test_the_model_tab_links_to_step_by_step(site):
    line = web_edition.step_by_step_line(site, "bert-lab-classroom")
    assert "[open it in the browser edition](/web/?view=steps&model=bert-lab-classroom)" in line
    assert "model=" not in web_edition.step_by_step_line(site, "a-model-the-site-lacks")
    assert "`make web`" in web_edition.step_by_step_line(None)
    # the view the link names is one the page has
    assert f'id: "{web_edition.STEPS_VIEW}"' in (ROOT / "web" / "src" / "main.js").read_text()


def test_the_dashboards_model_tab_says_it(dash):
    lines = [b for b in dash.demo.blocks.values() if getattr(b, "elem_id", None) == "model-steps"]
    assert len(lines) == 1
    assert lines[0].value == web_edition.step_by_step_line(dash.ctx.settings.web_site, "bert-lab-classroom")
