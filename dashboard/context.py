"""What the tabs are given: the settings from the command line, the model store, the figures' numbers,
the queue settings every model computation shares, and the page-wide pieces (the theme, the model
menus, the shared inputs). One Context per page; nothing lives in module globals."""

from __future__ import annotations

import argparse
import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr

from .common import AttributionCache, FigureDownloads
from .current import Current
from .links import Links
from .model_store import ModelStore
from .rounds.deck import DEFAULT_DECK
from .web_edition import find_site

REPO = Path(__file__).resolve().parents[1]  # the repository: names are shown relative to it
REPO_ROOTS = (REPO / "models", REPO / "runs")  # models roots always served
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")  # binds where only this machine's users reach the app


@dataclass
class Settings:
    """The dashboard's settings, from the command line (app.parser())."""

    model_roots: list[Path] = field(default_factory=lambda: list(REPO_ROOTS))  # models may be served from here
    start_model: str | None = None  # --model: every tab that it serves starts on it
    cache_models: int = 4  # models kept loaded at once
    concurrency: int = 2  # requests computed at once
    queue_size: int = 128  # requests that may wait
    downloads: bool = False  # Hub ids may be downloaded: a localhost bind without --share, or --allow-downloads
    deck: Path = DEFAULT_DECK  # --deck: the class rounds' deck (dashboard.rounds)
    class_size: int = 200  # --class-size: students who may join the rounds
    teacher_key: str | None = None  # BERT_LAB_TEACHER_KEY, else a new one printed at start-up
    web_site: Path | None = None  # --web-site, else site/ when `make web` wrote it: served at /web/

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Settings:
        """models/ and runs/ of this repository, then --models-root folders, then BERT_LAB_MODELS
        (folders separated by ':'). Downloads from the Hub: on when only this machine can reach
        the app (--host 127.0.0.1, localhost or ::1, no --share), or with --allow-downloads."""
        extra = [*args.models_root, *os.environ.get("BERT_LAB_MODELS", "").split(":")]
        downloads = args.allow_downloads or (args.host in LOCAL_HOSTS and not args.share)
        return cls(
            model_roots=[*REPO_ROOTS, *(Path(p).expanduser() for p in extra if p)],
            start_model=args.model,
            cache_models=args.cache_models,
            concurrency=args.concurrency,
            queue_size=args.queue_size,
            downloads=downloads,
            deck=Path(args.deck).expanduser() if args.deck else DEFAULT_DECK,
            class_size=args.class_size,
            teacher_key=os.environ.get("BERT_LAB_TEACHER_KEY") or None,
            web_site=find_site(getattr(args, "web_site", None)),
        )

    def store(self) -> ModelStore:
        return ModelStore(
            self.model_roots,
            base=REPO,
            cache_size=self.cache_models,
            downloads=self.downloads,
            start_model=self.start_model,
        )


class Context:
    """Given to every tab: ctx.store (the models), ctx.csv (the numbers behind the figures, for
    their CSV buttons), ctx.queue (the keyword arguments of every event that runs a model: one
    pool of --concurrency slots shared by all tabs; ctx.slow_queue: the long ones, in a pool
    of their own), ctx.theme (the page's hidden theme input), ctx.links (inputs a link restores and views
    a page opens with), and the model menus (refreshed when a model is added)."""

    def __init__(self, settings: Settings, store: ModelStore | None = None):
        self.settings = settings
        self.store = store or settings.store()
        self.csv = FigureDownloads()
        self.queue = dict(concurrency_id="model", concurrency_limit=settings.concurrency)
        # the long computations (attributions, ablation, probing) queue apart, with as many slots
        # of their own: a class asking for the same new attribution waits for it without holding
        # the slots every quick view needs
        self.slow_queue = dict(concurrency_id="slow", concurrency_limit=settings.concurrency)
        self.links = Links()
        self.current = Current()  # the views and the inputs they were computed from (never stale)
        self.attributions = AttributionCache()  # the why? views' results, by request
        self.theme: gr.Radio | None = None
        self.menus: list[tuple[gr.Dropdown, str | None]] = []
        self.rounds = None  # the class rounds (dashboard.rounds.Rounds), set by the Dashboard

    def model_menu(self, task: str | None, label: str = "Model") -> gr.Dropdown:
        """A model menu listing the models that serve `task` (all for None), on the tab's
        default model; refreshed with the others when a model is added in this page, and when
        the menu is opened once a model was added in any page (menu_choices)."""
        menu = gr.Dropdown(
            choices=self.store.models_for(task),
            value=self.store.default_model(task),
            label=label,
            allow_custom_value=True,
            scale=2,
            elem_classes=["bl-model-menu"],  # a phone: the whole width (room.py), so long names stay readable
        )
        self.menus.append((menu, task))
        menu.focus(functools.partial(self.menu_choices, task), None, menu, api_visibility="private", queue=False)
        return menu

    def menu_choices(self, task: str | None):
        """A menu's choices when it is opened: the Hugging Face models added since the server
        started (in any page) included; nothing changes while none was added."""
        return gr.Dropdown(choices=self.store.models_for(task)) if self.store.hub_ids() else gr.skip()

    def menu_updates(self) -> list:
        """New choices for every model menu (after a model was added)."""
        return [gr.Dropdown(choices=self.store.models_for(task)) for _, task in self.menus]
