"""The browser edition inside the dashboard: the site `make web` exports (site/, or --web-site DIR)
served at /web/, so that its views, "Step by step" first, open from the dashboard's Model tab.

    routes(site)             -> the Starlette route app.py gives Gradio's server (app_kwargs["routes"])
    step_by_step_line(site)  -> the Model tab's words: a link to the view, or how to make the site

The site is static (lab.web.export): the dashboard only hands out its files. Without one, the Model
tab says which command makes it instead of showing a link that leads nowhere.
"""

from __future__ import annotations

import json
import mimetypes
from pathlib import Path
from urllib.parse import urlencode

from starlette.routing import Mount  # Gradio's server is Starlette's (FastAPI)
from starlette.staticfiles import StaticFiles

from lab.files import MANIFEST_NAME

PATH = "/web"  # where the site is served
STEPS_VIEW = "steps"  # the page's ?view= for Step by step (web/src/main.js)
REPO = Path(__file__).resolve().parents[1]
DEFAULT_SITE = REPO / "site"  # what `make web` writes


def find_site(given: str | None) -> Path | None:
    """The site to serve: --web-site DIR when given (an error when it is not an exported site),
    else site/ of the repository when `make web` wrote one, else None."""
    if given:
        site = Path(given).expanduser()
        if not (site / MANIFEST_NAME).is_file():
            raise ValueError(f"--web-site {given}: no {MANIFEST_NAME} there; export one with `make web`")
        return site
    return DEFAULT_SITE if (DEFAULT_SITE / MANIFEST_NAME).is_file() else None


def routes(site: Path | None) -> list:
    """The site's files at /web/ (none without a site). The runtime's .mjs must come back as
    JavaScript, which not every system's MIME table says."""
    if site is None:
        return []
    mimetypes.add_type("text/javascript", ".mjs")
    mimetypes.add_type("application/wasm", ".wasm")
    return [Mount(PATH, app=StaticFiles(directory=site, html=True), name="web")]


def site_models(site: Path | None) -> list[str]:
    """The names of the models the site has (its manifest's order)."""
    if site is None:
        return []
    manifest = json.loads((site / MANIFEST_NAME).read_text(encoding="utf-8"))
    return [m["name"] for m in manifest.get("models", [])]


def step_by_step_line(site: Path | None, model: str | None = None) -> str:
    """Markdown for the Model tab: the link to Step by step (on `model` when the site has it)."""
    what = "**Step by step**: one sentence through every operation of the model, with its real numbers"
    if site is None:
        return f"{what}, runs in the browser edition: make it with `make web`, then start the dashboard again."
    query = {"view": STEPS_VIEW}
    if model in site_models(site):
        query["model"] = model
    return f"{what}: [open it in the browser edition]({PATH}/?{urlencode(query)}) (computed on your own device)."
