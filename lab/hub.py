"""Hugging Face Hub ids -> local checkpoint directories, through the standard Hub cache.

import lab
model, tok = lab.load("google-bert/bert-base-uncased")          # downloaded once, then cached
model, tok = lab.load("google-bert/bert-base-uncased", revision="86b5e0934494bd15c9632b12f734a8a67f723594")
python -m lab fill-mask --model google-bert/bert-base-uncased "the man went to the [MASK] ."

from lab.hub import resolve_model, is_hub_id
resolve_model("runs/mine")                        # an existing local path: returned as it is
resolve_model("google-bert/bert-base-uncased")    # -> ~/.cache/huggingface/hub/models--google-bert--
                                                  #    bert-base-uncased/snapshots/<commit>/  (a folder
                                                  #    in Hugging Face's layout, which lab.load reads)
"""

# What lives here: `is_hub_id` (does a name look like ORG/NAME), `resolve_model` (a local path or
# an id -> a local directory) and `hub_snapshot` (an id -> its folder in the cache, never a local
# path: the dashboard uses it so that a typed id can never reach a directory on the server).
#
# Only what the lab reads is fetched, one file at a time with `huggingface_hub.hf_hub_download`:
# config.json first and alone (a checkpoint whose model_type is not "bert", "bert-lab" or
# "modernbert" -- DistilBERT, RoBERTa... -- is refused before any weights are downloaded), then
# the weights (model.safetensors, or model.safetensors.index.json and its shards, or
# pytorch_model.bin, read later with torch.load(weights_only=True)), then vocab.txt /
# tokenizer.json / tokenizer_config.json.
# Every file after config.json is fetched at the commit config.json came from, so a checkpoint
# is never a mix of two revisions.
#
# The cache is Hugging Face's (HF_HOME, HF_HUB_CACHE; shared with transformers). With
# HF_HUB_OFFLINE=1, or download=False, nothing goes to the network: an id already in the cache
# resolves from it, any other gets one line saying how to get the files. HF_ENDPOINT points at a
# mirror (the tests point it at a local stand-in server). Gated or private models use the
# token of `hf auth login` (or HF_TOKEN).

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

from tqdm.std import tqdm

from lab import modernbert
from lab.config import BertConfig
from lab.files import CONFIG_NAME, INDEX_NAME, TOKENIZER_FILES, WEIGHT_FILES

# huggingface_hub is imported inside the functions that use it: it is an optional dependency of
# the library core (pyproject.toml's dependencies: torch, tokenizers, safetensors, numpy, tqdm,
# matplotlib, pooch), which comes with the [app] extra (and Gradio); only a Hub id needs it.

# ORG/NAME as the Hub spells repository ids: letters, digits, '-', '_', '.', each part starting
# and ending with a letter or digit, at most 96 characters. No '--' or '..' (the Hub forbids
# both), so "models/../x", "./x", "/x", "~/x" and "a/b/c" are never ids.
_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
HUB_ID = re.compile(rf"{_PART}/{_PART}")
MODEL_TYPES = ("bert", "bert-lab", modernbert.MODEL_TYPE)  # what config.json may say: lab.load builds these

# progress: True (huggingface_hub's console bars), False (silent), or a function called as
# bytes arrive: report(bytes_done, bytes_total_or_None, filename)
Progress = bool | Callable[[int, int | None, str], None]


class NotCachedError(FileNotFoundError):
    """A Hub id that is not (completely) in the local cache while the network cannot be used:
    `offline` is True when downloads were off (download=False or HF_HUB_OFFLINE=1), False when
    the Hub could not be reached."""

    def __init__(self, message: str, repo_id: str, offline: bool):
        super().__init__(message)
        self.repo_id, self.offline = repo_id, offline


def is_hub_id(text) -> bool:
    """True for names shaped like a Hub model id, ORG/NAME ("google-bert/bert-base-uncased").
    A path that starts with '.', '/' or '~', or has more or fewer than one '/', is not one."""
    text = str(text)
    return bool(HUB_ID.fullmatch(text)) and "--" not in text and ".." not in text


def resolve_model(
    name_or_path, revision: str | None = None, download: bool = True, progress: Progress = True, weights: bool = True
) -> Path:
    """A local checkpoint directory for a path or a Hub id.

    An existing path, or a name that is not shaped like an id, is returned unchanged (the
    caller reports a missing one as before). An id is resolved through the Hub cache (see
    `hub_snapshot`): revision is a branch, tag or commit; download=False uses the cache only;
    weights=False fetches config.json and the tokenizer files only (a random-init baseline).
    """
    path = Path(name_or_path)
    if path.exists() or not is_hub_id(name_or_path):
        if revision is not None and path.exists():
            raise ValueError(f"revision={revision!r} applies to Hugging Face Hub ids; {name_or_path} is a local path")
        return path
    return hub_snapshot(str(name_or_path), revision=revision, download=download, progress=progress, weights=weights)


def hub_snapshot(
    repo_id: str, revision: str | None = None, download: bool = True, progress: Progress = True, weights: bool = True
) -> Path:
    """The folder of a Hub model in the local cache (snapshots/<commit>/), with config.json,
    the weights and the tokenizer files in it; downloads what is missing unless download=False
    or HF_HUB_OFFLINE=1. Errors are one line: FileNotFoundError (no such model, revision, or not
    cached while offline: NotCachedError), ValueError (not a BERT checkpoint, no weights)."""
    if not is_hub_id(repo_id):
        raise ValueError(f"{repo_id!r} is not a Hugging Face Hub id (ORG/NAME, e.g. google-bert/bert-base-uncased)")
    try:
        from huggingface_hub import constants  # optional: see the note at the imports
    except ImportError:
        raise FileNotFoundError(
            f"{repo_id} looks like a Hugging Face Hub id, but huggingface_hub is not "
            f"installed: pip install huggingface_hub, or pass a local directory"
        ) from None
    offline = not download or constants.is_offline_mode()
    fetch = _Fetcher(repo_id, offline, progress)

    # 1. config.json alone: is it a BERT? (nothing else is downloaded before this answer)
    fetch.check_reachable(revision or "main")
    config_file = fetch(CONFIG_NAME, revision or "main", required=True)
    snapshot = config_file.parent  # .../snapshots/<commit>/
    commit = snapshot.name
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise ValueError(f"{repo_id}: config.json is not valid JSON") from None
    model_type = config.get("model_type", "bert") if isinstance(config, dict) else None
    if model_type not in MODEL_TYPES:
        raise ValueError(
            f"{repo_id} is not a BERT checkpoint: its config.json has model_type {model_type!r}, "
            f"and the lab loads only model_type 'bert', 'bert-lab' and 'modernbert' (no weights were downloaded)"
        )
    # a BERT or ModernBERT the lab cannot build: refused now too
    if model_type == modernbert.MODEL_TYPE:
        modernbert.config_from_modernbert(config, source=f"{repo_id} (config.json)")
    else:
        BertConfig.from_dict(config, source=f"{repo_id} (config.json)")

    # 2. the weights, in the order lab.checkpoint.read_state_dict prefers them
    if weights:
        for name in WEIGHT_FILES:
            found = fetch(name, commit)
            if found is None:
                continue
            if name == INDEX_NAME:  # sharded: {"weight_map": {tensor: shard file}}
                try:
                    shards = sorted(set(json.loads(found.read_text(encoding="utf-8"))["weight_map"].values()))
                except (ValueError, KeyError, TypeError, AttributeError):
                    raise ValueError(f"{repo_id}: {INDEX_NAME} has no readable weight_map") from None
                for shard in shards:
                    fetch(shard, commit, required=True)
            break
        else:
            if offline:
                raise fetch.not_cached("its weights are")
            raise ValueError(
                f"{repo_id} has no weights the lab can read ({', '.join(WEIGHT_FILES)}; "
                f"TensorFlow/Flax-only checkpoints are not supported)"
            )

    # 3. the tokenizer: whichever of these the repository has
    for name in TOKENIZER_FILES:
        fetch(name, commit)
    return snapshot


class _Fetcher:
    """hf_hub_download for one repository, with its errors turned into one-line messages."""

    def __init__(self, repo_id: str, offline: bool, progress: Progress):
        self.repo_id, self.offline, self.progress = repo_id, offline, progress

    def not_cached(self, what: str = "it is", reason: str = "") -> NotCachedError:
        from huggingface_hub import constants  # optional dependency: only a Hub id needs it

        if self.offline:
            why = (
                "download=False"
                if not constants.is_offline_mode()
                else "TRANSFORMERS_OFFLINE=1"
                if _set("TRANSFORMERS_OFFLINE") and not _set("HF_HUB_OFFLINE")
                else "HF_HUB_OFFLINE=1"
            )
            return NotCachedError(
                f"{self.repo_id}: {what} not in the Hugging Face cache and downloads are off "
                f"({why}): run once with internet, or download the model folder and pass "
                f"its path",
                self.repo_id,
                offline=True,
            )
        return NotCachedError(
            f"{self.repo_id}: could not reach the Hugging Face Hub ({constants.ENDPOINT}{reason}) and "
            f"{what} not in the cache: check the connection, or download the model folder "
            f"and pass its path",
            self.repo_id,
            offline=False,
        )

    def __call__(self, filename: str, revision: str, required: bool = False) -> Path | None:
        """The cached file (downloaded if needed); None when the repository has no such file
        (or, offline, when the cache does not hold it) and it is not required."""
        from huggingface_hub import hf_hub_download  # optional dependency: only a Hub id needs it

        return self._answer(
            lambda: Path(
                hf_hub_download(
                    self.repo_id,
                    filename,
                    revision=revision,
                    local_files_only=self.offline,
                    tqdm_class=_bar_class(self.progress, filename),
                )
            ),
            filename,
            revision,
            required,
        )

    def check_reachable(self, revision: str) -> None:
        """Fail at once when the Hub cannot be reached and config.json is not cached: with nothing
        to fall back on, hf_hub_download retries with backoff for a long while before giving up. One
        HEAD request without retries, only before a first download."""
        from huggingface_hub import (
            get_hf_file_metadata,
            hf_hub_url,
            try_to_load_from_cache,
        )  # optional dependency: only a Hub id needs it

        if self.offline or isinstance(try_to_load_from_cache(self.repo_id, CONFIG_NAME, revision=revision), str):
            return
        from huggingface_hub.errors import HfHubHTTPError  # optional dependency: only a Hub id needs it

        try:
            self._answer(
                lambda: get_hf_file_metadata(hf_hub_url(self.repo_id, CONFIG_NAME, revision=revision)),
                CONFIG_NAME,
                revision,
                required=True,
                other_http_errors=True,
            )
        except HfHubHTTPError:  # 5xx, 429, 401...: left to hf_hub_download
            pass
        except (OSError, ValueError):  # one-line messages of _answer
            raise
        except Exception as e:  # no connection, DNS, timeout (httpx errors)
            raise self.not_cached(reason=f": {type(e).__name__}") from None

    def _answer(self, request, filename: str, revision: str, required: bool, other_http_errors: bool = False):
        """request() with huggingface_hub's errors turned into one-line messages (other_http_errors:
        HTTP errors other than "not found" are raised as they are)."""
        from huggingface_hub.errors import (  # optional dependency: only a Hub id needs it
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RemoteEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )

        try:
            return request()
        except GatedRepoError:
            raise FileNotFoundError(
                f"{self.repo_id} is a gated model on the Hugging Face Hub: accept its terms on "
                f"its page, then log in (hf auth login, or set HF_TOKEN)"
            ) from None
        except RepositoryNotFoundError:
            raise FileNotFoundError(
                f"{self.repo_id}: no such local directory, and no model {self.repo_id} on the "
                f"Hugging Face Hub (if it is private: hf auth login)"
            ) from None
        except RevisionNotFoundError:
            raise FileNotFoundError(f"{self.repo_id} has no revision {revision!r} on the Hugging Face Hub") from None
        except RemoteEntryNotFoundError:
            if not required:
                return None
            if filename == CONFIG_NAME:
                raise ValueError(
                    f"{self.repo_id} has no config.json: not a model checkpoint in Hugging Face's layout"
                ) from None
            raise FileNotFoundError(
                f"{self.repo_id} lists {filename} in its index but the Hub has no such file"
            ) from None
        except LocalEntryNotFoundError:  # not cached, and offline or unreachable
            if self.offline and not required:
                return None
            raise self.not_cached("it is" if filename == CONFIG_NAME else f"{filename} is") from None
        except HfHubHTTPError as e:  # 401, 403, 5xx that no cached copy could cover
            if other_http_errors:
                raise
            status = e.response.status_code if e.response is not None else "?"
            raise FileNotFoundError(
                f"{self.repo_id}: the Hugging Face Hub refused {filename} (HTTP {status})"
            ) from None


def _set(variable: str) -> bool:
    """An environment switch that huggingface_hub reads as on ("1", "true", "yes", "on")."""
    return os.environ.get(variable, "").strip().lower() in {"1", "true", "yes", "on"}


def _bar_class(progress: Progress, filename: str):
    """The tqdm class hf_hub_download draws its bar with: None = its own console bar; else a
    silent bar that, given a function, reports (bytes done, bytes total, filename) to it."""
    if progress is True:
        return None
    report = progress if callable(progress) else None

    class Bar(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs.pop("name", None)
            super().__init__(*args, **{**kwargs, "disable": True})
            self.done = kwargs.get("initial", 0) or 0  # a disabled tqdm does not count: we do

        def update(self, n=1):
            self.done += n or 0
            if report is not None:
                report(self.done, self.total, filename)

    return Bar
