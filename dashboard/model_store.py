"""The models the dashboard's server offers: where they may come from, which tabs each serves,
and a small shared cache of loaded ones.

    from dashboard.model_store import ModelStore
    store = ModelStore(roots=["models", "runs"])            # folders whose model directories are served
    store.list_models()                      # ['models/bert-lab-classroom', 'models/bert-lab-squad', ...]
    store.models_for("answer")               # only those with a question-answering head
    model, tokenizer = store.get("models/bert-lab-classroom")     # loaded once, shared, LRU-evicted
    model, tokenizer = store.model_for("models/bert-lab-squad", "answer")   # or a message saying why not
"""

# A name is either a directory inside one of the roots (shown relative to `base`, e.g.
# models/bert-lab-classroom, or as @<root name>/<rest> for a root elsewhere, so that no server path
# reaches a page) or a Hugging Face id ORG/NAME, resolved through the Hub cache (lab.hub): downloaded
# only when asked with download=True and the store allows downloads. Everything a user can get wrong
# raises ModelError with a message that is safe to show: it names the model as the user wrote it
# and never the server's absolute paths.
#
# Confinement: a path outside the roots is refused, and so is a model folder with a file that
# resolves outside them (a README.md symlinked to /etc/passwd). A model that failed to load is
# remembered with its files' signature (names, sizes, modification times) and not retried until one
# of them changes. All state lives in the object: two stores (two servers in one test) never meet.

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from pathlib import Path

from safetensors import safe_open

from lab import hub
from lab import run_files as runs
from lab.checkpoint import load, saved_model_class
from lab.files import CONFIG_NAME, WEIGHTS_NAME
from lab.inspect import explore

log = logging.getLogger("bert-lab.models")
MAX_NAME_CHARS = 300  # a model or run name longer than this is refused

# The tasks each head serves, read from a saved model's class without loading its weights (the
# menus of a page list only the models that serve the tab). Every BERT shows attention and
# embeddings; explore.model_tasks says the same of a loaded model.
ANY_BERT = frozenset({"attention", "embeddings"})
CLASS_TASKS = {
    "BertForPreTraining": ANY_BERT | {"fill_mask", "next_sentence"},
    "BertForMaskedLM": ANY_BERT | {"fill_mask"},
    "BertForQuestionAnswering": ANY_BERT | {"answer"},
    "BertForSequenceClassification": ANY_BERT | {"classify"},
    "BertForTokenClassification": ANY_BERT | {"tag"},
}


class ModelError(ValueError):
    """A model name, folder or file the user can fix; the message is safe to show in a page."""


def short(text, limit: int = 80) -> str:
    """A user-typed value quoted in a message: at most `limit` characters."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def checked_name(name, what: str = "model") -> str:
    """A model or run name: a non-empty string of reasonable length."""
    if name is None or not str(name).strip():
        raise ModelError(f"choose a {what} first")
    name = str(name).strip()
    if len(name) > MAX_NAME_CHARS:
        raise ModelError(f"the {what} name is {len(name):,} characters long (at most {MAX_NAME_CHARS})")
    return name


class ModelStore:
    """The models offered from `roots` (plus Hugging Face ids), at most `cache_size` loaded at once.

    base: names are shown relative to it (the repository: models/x, runs/y).
    downloads: whether a Hugging Face id may be downloaded (a server bound to localhost) or only
    read from the Hub cache (a public server).
    start_model: the model every task it serves starts on (default_model)."""

    def __init__(self, roots, base=None, cache_size: int = 4, downloads: bool = False, start_model: str | None = None):
        self.roots = [Path(r).expanduser() for r in roots]
        self.base = Path(base).resolve() if base is not None else Path.cwd().resolve()
        self.cache_size = max(1, int(cache_size))
        self.downloads = downloads
        self.start_model = start_model
        self._lock = threading.Lock()
        self._loaded: OrderedDict[Path, tuple] = OrderedDict()  # folder -> (model, tokenizer), LRU order
        self._failed: dict[Path, tuple[tuple, str]] = {}  # folder -> (files' signature, message)
        self._hub: dict[str, Path] = {}  # Hub ids added -> their cache folder
        self._classes: dict[tuple, str] = {}  # (folder, signature) -> saved class name

    # ------------------------------------------------------------------------------------------
    # Names and paths
    # ------------------------------------------------------------------------------------------
    def display(self, path) -> str:
        """How a path is shown: relative to `base` (models/x), or for a root elsewhere as
        @<that root's name>/<rest> (the @ keeps it apart from a Hugging Face id); never the
        server's absolute path (resolve reads both forms back)."""
        path = Path(path)
        try:
            return str(path.relative_to(self.base))
        except ValueError:
            pass
        for root in self.roots:
            for top in (root, root.resolve()):
                if path == top or path.is_relative_to(top):
                    return "@" + str(Path(root.name) / path.relative_to(top))
        return path.name

    def _resolved_roots(self) -> list[Path]:
        return [r.resolve() for r in self.roots]

    def _inside(self, path: Path) -> bool:
        return any(path == r or path.is_relative_to(r) for r in self._resolved_roots())

    def confined(self, path: Path) -> Path:
        """A model or run folder whose files all resolve inside the roots (else ModelError)."""
        for f in path.iterdir():
            if not self._inside(f.resolve()):
                raise ModelError(
                    f"{self.display(path)}/{short(f.name, 60)} points outside the models roots: "
                    f"this model folder is refused"
                )
        return path

    def is_hub_name(self, name) -> bool:
        """A Hugging Face id (ORG/NAME). A name whose first part is a folder of `base` or the name
        of a root ("runs/mine", "models/typo") stays a path, with the path checks and messages."""
        name = str(name or "").strip()
        if name in self._hub:
            return True
        first = name.split("/")[0]
        local = (self.base / first).exists() or first in {r.name for r in self.roots}
        return hub.is_hub_id(name) and not local

    def resolve(self, name, what: str = "model") -> Path:
        """A name or path -> a resolved folder inside a root; anything else is refused. Names are
        read as display() writes them."""
        name = checked_name(name, what)
        path = Path(name).expanduser()
        if name.startswith("@"):  # @<root folder name>/<rest>
            first, _, rest = name[1:].partition("/")
            candidates = [(r / rest).resolve() for r in self.roots if r.name == first]
        elif path.is_absolute():
            candidates = [path.resolve()]
        else:
            candidates = [(self.base / path).resolve()]
        inside = [c for c in candidates if self._inside(c)]
        if not inside:
            roots = ", ".join(self.display(r) for r in self._resolved_roots())
            raise ModelError(
                f"“{short(name)}” is outside the models roots ({roots}); "
                f"copy the {what} under models/ or start the app with --models-root"
            )
        path = next((c for c in inside if c.is_dir()), inside[0])
        if not path.exists():
            raise ModelError(f"no such folder: {self.display(path)}")
        if not path.is_dir():
            raise ModelError(f"{self.display(path)} is not a folder")
        return path

    def model_dir(self, name, download: bool = False, progress=False) -> tuple[Path, str]:
        """A menu entry -> (its folder, the name shown): a folder with a config.json inside a
        root, or a Hugging Face id's folder in the Hub cache (downloaded only when `download`)."""
        name = checked_name(name)
        if self.is_hub_name(name):
            return self._hub_dir(name, download, progress), name
        path = self.resolve(name)
        if not (path / CONFIG_NAME).is_file():
            raise ModelError(f"{self.display(path)} is not a model directory (no {CONFIG_NAME})")
        return path, self.display(path)

    def _hub_dir(self, repo_id: str, download: bool, progress) -> Path:
        """Only lab.hub.hub_snapshot is asked, never a local path: an id cannot reach a folder
        outside the roots. Errors become messages without server paths."""
        with self._lock:
            if repo_id in self._hub:
                return self._hub[repo_id]
        try:
            path = hub.hub_snapshot(repo_id, download=download, progress=progress)
        except hub.NotCachedError as e:
            if e.offline and not self.downloads:
                raise ModelError(
                    f"{repo_id} is not in this server's Hugging Face cache, and downloads are off "
                    f"on a public server (--host other than localhost, or --share): start the app "
                    f"with --allow-downloads (or BERT_LAB_ALLOW_DOWNLOADS=1) to allow them"
                ) from None
            if e.offline and not download:
                raise ModelError(f"{repo_id} is not downloaded yet: add it in the Model tab first") from None
            raise ModelError(str(e)) from None  # HF_HUB_OFFLINE=1, or the Hub is unreachable
        except (ValueError, FileNotFoundError) as e:  # lab.hub's one-line messages
            raise ModelError(str(e)) from None
        except Exception as e:  # disk full, proxy...: details to the log only
            log.exception("fetching %s from the Hugging Face Hub failed", repo_id)
            raise ModelError(
                f"could not download {repo_id} ({type(e).__name__}); the server log has the details"
            ) from None
        with self._lock:
            self._hub[repo_id] = path
        return path

    def hub_ids(self) -> list[str]:
        """The Hugging Face ids added so far."""
        with self._lock:
            return list(self._hub)

    # ------------------------------------------------------------------------------------------
    # What is offered
    # ------------------------------------------------------------------------------------------
    def list_models(self) -> list[str]:
        """Model folders (config.json + weights) under the roots, bundled ones first, then runs
        (and a run's phases); then the Hugging Face ids added."""
        found = []
        for root in self.roots:
            if not root.is_dir():
                continue
            candidates = [p for p in sorted(root.iterdir()) if p.is_dir()]
            candidates += [q for p in candidates for q in runs.phases(p)[:-1]]
            found += [self.display(p) for p in sorted(candidates) if runs.is_model_dir(p)]
        return found + [name for name in self.hub_ids() if name not in found]

    def list_runs(self) -> list[str]:
        """Folders with training records (metrics.jsonl), newest first."""
        found = []
        for root in self.roots:
            if root.is_dir():
                found += [p for p in root.iterdir() if p.is_dir() and runs.has_metrics(p)]
        return [self.display(p) for p in sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)]

    @staticmethod
    def snapshots(path) -> list:
        """A run's checkpoints in step order (lab.run_files.checkpoints); [] for none."""
        return runs.checkpoints(path)

    @staticmethod
    def metrics(path) -> list[dict]:
        """A run's training records (metrics.jsonl, every phase); [] for a folder without them."""
        return runs.read_metrics(path) if runs.has_metrics(path) else []

    def tasks(self, name) -> frozenset[str]:
        """What the model can serve (explore.TASKS names), from its loaded class or its saved
        class (config.json's architectures; no weights are read); empty when it cannot load."""
        try:
            path, _ = self.model_dir(name)
            with self._lock:
                if path in self._loaded:
                    return frozenset(explore.model_tasks(self._loaded[path][0]))
                if path in self._failed:
                    return frozenset()
            key = (path, _signature(path))
            if key not in self._classes:
                _check_weights_header(path)  # a damaged file serves nothing
                self._classes[key] = saved_model_class(path)
            return CLASS_TASKS.get(self._classes[key], ANY_BERT)
        except Exception:  # unreadable: it serves nothing
            return frozenset()

    def models_for(self, task: str | None) -> list[str]:
        """The models that serve `task` (every model for None), in list_models order."""
        names = self.list_models()
        return names if task is None else [n for n in names if task in self.tasks(n)]

    def default_model(self, task: str | None = None) -> str | None:
        """The model a tab starts on: start_model if it serves the task, else the first bundled
        model that does (QA: a name with "squad"; classification: "sst2"; tagging: "ner";
        otherwise "classroom"; for these three task models the real MiniLM encoder's first, the
        lab's tiny ones stay in the menu for comparison). Candidates come from models_for
        (config.json, no weights read); only the one chosen is loaded, to check that it loads."""
        preferred = {"answer": "squad", "classify": "sst2", "tag": "ner"}.get(task, "classroom")
        real_first = task in ("answer", "classify", "tag")
        names = sorted(
            self.models_for(task),
            key=lambda n: (not n.startswith("models/"), preferred not in n, real_first and "minilm" not in n, n),
        )
        ordered = ([self.start_model] if self.start_model else []) + names
        for name in ordered:
            try:
                model, _ = self.get(name)
            except ModelError:
                continue
            if task is None or task in explore.model_tasks(model):
                return name
        return ordered[0] if ordered else None

    # ------------------------------------------------------------------------------------------
    # Loading
    # ------------------------------------------------------------------------------------------
    def get(self, name):
        """(model, tokenizer), loaded once and shared by every user (eval mode, no gradients);
        the least recently used is evicted beyond cache_size."""
        path, shown = self.model_dir(name)
        with self._lock:  # the request path: no disk access
            if path in self._loaded:
                self._loaded.move_to_end(path)
                return self._loaded[path]
        if not self.is_hub_name(name):  # the Hub cache links into its own blobs
            self.confined(path)
        signature = _signature(path)
        with self._lock:
            if path in self._failed and self._failed[path][0] == signature:  # the same files failed before
                raise ModelError(self._failed[path][1])
        try:
            model, tokenizer = load(path)  # strict: a damaged checkpoint is refused
            if tokenizer is None:
                raise ValueError("it has no vocab.txt or tokenizer.json: the lab cannot read text for it")
        except Exception as e:  # a damaged or foreign directory
            message = f"could not load {shown}: {str(e).replace(str(path), shown)}"
            with self._lock:
                self._failed[path] = (signature, message)
            raise ModelError(message) from None
        model.eval().requires_grad_(False)
        with self._lock:
            self._failed.pop(path, None)
            self._loaded[path] = (model, tokenizer)
            while len(self._loaded) > self.cache_size:
                self._loaded.popitem(last=False)
        return model, tokenizer

    def model_for(self, name, task: str):
        """The model and tokenizer, or a ModelError saying why this model cannot do the task."""
        model, tokenizer = self.get(name)
        if task not in explore.model_tasks(model):
            raise ModelError(explore.missing_head_message(model, task))
        return model, tokenizer

    def loaded(self) -> int:
        """How many models are loaded now."""
        with self._lock:
            return len(self._loaded)


def _signature(path: Path) -> tuple:
    """The folder's files (name, size, modification time): a failed load is retried only when
    this changes."""
    return tuple(
        sorted((f.name, st.st_size, st.st_mtime_ns) for f in path.iterdir() if f.is_file() for st in [f.stat()])
    )


def _check_weights_header(path: Path) -> None:
    """Read the safetensors header (names, shapes: a few KB, no tensor data): raises for a file
    that is not one. Other weight formats are checked when the model loads."""
    weights = path / WEIGHTS_NAME
    if weights.is_file():
        with safe_open(str(weights), framework="pt") as f:
            f.keys()
