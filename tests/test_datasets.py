"""Tests for lab/data/datasets.py: the catalog, downloads through pooch (against a local HTTP server and
file:// URLs only, never the internet), trust-on-first-use checksums, resolve_corpus, and the
local data folder (data_dir, find_data, is_shared).

    .venv/bin/python -m pytest tests/test_datasets.py
"""

from __future__ import annotations

import hashlib
import io
import socket
import urllib.parse
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from lab.data import datasets
from lab.data.datasets import (
    CATALOG,
    CatalogEntry,
    ChecksumError,
    DownloadError,
    RemoteFile,
    data_dir,
    default_cache_dir,
    fetch,
    find_data,
    is_shared,
    resolve_corpus,
)

WIKITEXT = " = Robert Boulter = \n Robert Boulter is an actor . He had a role in 2000 . \n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _zip_bytes(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------
# The catalog
# ---------------------------------------------------------------------------------------------


def test_catalog_lists_the_corpora_the_lab_uses():
    assert set(CATALOG) == {"novels", "wikitext-2", "wikitext-103", "squad-v1.1", "sst2", "ud-ewt", "uner-ewt"}
    novel_urls = [f.url for f in CATALOG["novels"].files]
    assert novel_urls[0] == "https://www.gutenberg.org/cache/epub/1342/pg1342.txt"
    assert [int(u.rsplit("/pg", 1)[1][:-4]) for u in novel_urls] == [1342, 158, 161, 141, 121, 105, 2701, 1400, 36, 164]
    assert CATALOG["wikitext-2"].files[0].url == (
        "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-raw-v1.zip"
    )
    assert CATALOG["wikitext-103"].splits["test"] == "wikitext-103-raw/wiki.test.raw"
    assert {f.name for f in CATALOG["squad-v1.1"].files} == {"train-v1.1.json", "dev-v1.1.json"}
    assert CATALOG["sst2"].files[0].url == "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip"
    assert issubclass(DownloadError, OSError) and issubclass(ChecksumError, ValueError)


# ---------------------------------------------------------------------------------------------
# The local data folder and the cache
# ---------------------------------------------------------------------------------------------


def test_data_dir_is_bert_lab_data_when_set_and_only_it(tmp_path, monkeypatch):
    shared = tmp_path / "shared" / "data"  # beside a fake repository
    shared.mkdir(parents=True)
    monkeypatch.setattr(datasets, "__file__", str(tmp_path / "repo" / "lab" / "data" / "datasets.py"))
    own = tmp_path / "mine"
    own.mkdir()
    monkeypatch.setenv("BERT_LAB_DATA", str(own))
    assert data_dir() == own
    monkeypatch.setenv("BERT_LAB_DATA", str(tmp_path / "absent"))
    assert data_dir() is None  # no fallback to ../shared/data


def test_data_dir_without_env_is_shared_data_beside_the_repository(tmp_path, monkeypatch):
    monkeypatch.delenv("BERT_LAB_DATA", raising=False)
    monkeypatch.setattr(datasets, "__file__", str(tmp_path / "repo" / "lab" / "data" / "datasets.py"))
    assert data_dir() is None
    shared = tmp_path / "shared" / "data"
    write(shared / "sst2" / "dev.tsv", "sentence\tlabel\ngood .\t1\n")
    assert data_dir() == shared
    # resolve_corpus uses it without BERT_LAB_DATA (no download).
    monkeypatch.setattr(datasets, "fetch", lambda *a, **k: pytest.fail("downloaded"))
    assert resolve_corpus("sst2", split="dev") == shared / "sst2" / "dev.tsv"


def test_find_data_and_is_shared(tmp_path, monkeypatch):
    data = tmp_path / "data"
    write(data / "sst2" / "train.tsv", "sentence\tlabel\n")
    fallback = write(tmp_path / "notebooks" / "stories.txt", "A story.")
    monkeypatch.setenv("BERT_LAB_DATA", str(data))
    assert find_data("sst2/train.tsv", fallback) == data / "sst2" / "train.tsv"
    assert find_data("novels", fallback) == fallback
    with pytest.raises(FileNotFoundError) as err:
        find_data("novels", tmp_path / "no-such-file.txt")
    assert "novels" in str(err.value) and "no-such-file.txt" in str(err.value)

    assert is_shared(data / "sst2" / "train.tsv") and is_shared(data)
    assert is_shared(data / "sst2" / ".." / "sst2")
    assert not is_shared(fallback) and not is_shared(tmp_path)
    monkeypatch.setenv("BERT_LAB_DATA", str(tmp_path / "absent"))
    assert not is_shared(data / "sst2" / "train.tsv")  # no data folder at all


def test_default_cache_dir_honours_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("BERT_LAB_CACHE", str(tmp_path / "elsewhere"))
    assert default_cache_dir() == tmp_path / "elsewhere"
    monkeypatch.delenv("BERT_LAB_CACHE")
    assert default_cache_dir() == Path.home() / ".cache" / "bert-lab"


# ---------------------------------------------------------------------------------------------
# Download + cache (local HTTP server and file:// only)
# ---------------------------------------------------------------------------------------------


def _entry(url: str, name: str = "tiny", sha256: str | None = None, **kw) -> CatalogEntry:
    return CatalogEntry(
        name=name, description="test corpus", files=(RemoteFile(f"{url}/book.txt", "book.txt", sha256=sha256),), **kw
    )


def test_fetch_downloads_once_and_records_checksum_on_first_use(server, tmp_path):
    url, www, requests = server
    content = b"It was a dark night. The end.\n" * 100
    (www / "book.txt").write_bytes(content)
    cache = tmp_path / "cache"
    folder = fetch(_entry(url), cache_dir=cache, progress=False)
    assert folder == cache / "tiny"
    assert (folder / "book.txt").read_bytes() == content
    digest = hashlib.sha256(content).hexdigest()
    assert (folder / "book.txt.sha256").read_text().split() == [digest, "book.txt"]
    assert requests == ["/book.txt"]
    assert sorted(p.name for p in folder.iterdir()) == ["book.txt", "book.txt.sha256"]

    # Second call: served from the cache, verified against the sidecar, no request.
    (www / "book.txt").write_bytes(b"changed upstream")
    assert fetch(_entry(url), cache_dir=cache, progress=False) == folder
    assert requests == ["/book.txt"]

    # A cached file that no longer matches its sidecar is reported, not silently used or
    # downloaded again.
    (folder / "book.txt").write_bytes(b"corrupted")
    with pytest.raises(ChecksumError, match="book.txt.sha256") as err:
        fetch(_entry(url), cache_dir=cache, progress=False)
    assert "Delete it to download it again" in str(err.value)
    assert requests == ["/book.txt"]

    # Deleted, it is downloaded again and the new download is recorded in turn.
    (folder / "book.txt").unlink()
    fetch(_entry(url), cache_dir=cache, progress=False)
    assert requests == ["/book.txt", "/book.txt"]
    assert (folder / "book.txt.sha256").read_text().split()[0] == (hashlib.sha256(b"changed upstream").hexdigest())


def test_a_cached_file_without_sidecar_is_recorded_then_verified(server, tmp_path):
    url, _, requests = server
    folder = tmp_path / "cache" / "tiny"
    write(folder / "book.txt", "Placed here by hand.\n")
    fetch(_entry(url), cache_dir=tmp_path / "cache", progress=False)
    digest = hashlib.sha256(b"Placed here by hand.\n").hexdigest()
    assert (folder / "book.txt.sha256").read_text().split() == [digest, "book.txt"]
    assert requests == []


def test_fetch_verifies_a_catalog_checksum(server, tmp_path):
    url, www, requests = server
    content = b"Checked content.\n"
    (www / "book.txt").write_bytes(content)
    good = _entry(url, sha256=hashlib.sha256(content).hexdigest())
    folder = fetch(good, cache_dir=tmp_path / "ok", progress=False)
    assert (folder / "book.txt").read_bytes() == content
    assert not (folder / "book.txt.sha256").exists()  # the catalog is the reference
    (folder / "book.txt").write_bytes(b"corrupted")  # a cached file is checked too
    with pytest.raises(ChecksumError, match="the catalog says"):
        fetch(good, cache_dir=tmp_path / "ok", progress=False)

    bad = _entry(url, sha256="0" * 64)
    cache = tmp_path / "bad"
    with pytest.raises(ChecksumError) as err:
        fetch(bad, cache_dir=cache, progress=False)
    message = str(err.value)
    assert f"{url}/book.txt" in message and "0" * 64 in message
    assert list((cache / "tiny").iterdir()) == []  # no corrupt file, no temp file


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_failed_download_names_the_url_and_suggests_a_local_path(server, tmp_path):
    url, _, _ = server
    with pytest.raises(DownloadError) as err:
        fetch(_entry(url), cache_dir=tmp_path / "c", progress=False)  # www/book.txt: 404
    message = str(err.value)
    assert f"{url}/book.txt" in message and "404" in message
    assert "local path" in message and "BERT_LAB_DATA" in message
    assert list((tmp_path / "c" / "tiny").iterdir()) == []

    nobody = f"http://127.0.0.1:{_closed_port()}"  # connection refused
    with pytest.raises(OSError, match=f"could not download {nobody}/book.txt"):
        fetch(_entry(nobody), cache_dir=tmp_path / "c", progress=False)


def test_fetch_with_file_url(tmp_path):
    source = write(tmp_path / "src" / "book.txt", "Local file. Fetched by URL.\n")
    entry = CatalogEntry(name="local", description="", files=(RemoteFile(source.as_uri(), "book.txt"),))
    folder = fetch(entry, cache_dir=tmp_path / "cache", progress=False)
    assert (folder / "book.txt").read_bytes() == source.read_bytes()
    assert (folder / "book.txt.sha256").exists()
    missing = CatalogEntry(
        name="gone", description="", files=(RemoteFile((tmp_path / "nope.txt").as_uri(), "nope.txt"),)
    )
    with pytest.raises(DownloadError, match="nope.txt"):
        fetch(missing, cache_dir=tmp_path / "cache", progress=False)


def test_progress_bar_is_shown_on_stderr(server, tmp_path, capsys):
    url, www, _ = server
    (www / "book.txt").write_bytes(b"x" * 5000)
    fetch(_entry(url), cache_dir=tmp_path / "cache", progress=True)
    assert "100%" in capsys.readouterr().err  # tqdm, through pooch
    (www / "other.txt").write_bytes(b"y" * 5000)
    quiet = CatalogEntry(name="quiet", description="", files=(RemoteFile(f"{url}/other.txt", "other.txt"),))
    fetch(quiet, cache_dir=tmp_path / "cache", progress=False)
    assert "100%" not in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# resolve_corpus
# ---------------------------------------------------------------------------------------------


def test_zip_corpus_is_extracted_and_resolved_by_split(server, tmp_path, monkeypatch):
    url, www, requests = server
    (www / "wt.zip").write_bytes(
        _zip_bytes({"wt-raw/wiki.train.raw": WIKITEXT, "wt-raw/wiki.test.raw": " = Only = \n Test text . \n"})
    )
    splits = {"train": "wt-raw/wiki.train.raw", "test": "wt-raw/wiki.test.raw"}
    entry = CatalogEntry(
        name="wt",
        description="",
        default_split="train",
        splits=splits,
        files=(RemoteFile(f"{url}/wt.zip", "wt.zip", members=tuple(splits.values())),),
        local={"test": ("wt-raw/wiki.test.raw",)},
        format="wikitext",
    )
    monkeypatch.setitem(CATALOG, "wt", entry)
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("BERT_LAB_DATA", str(tmp_path / "empty"))  # no local copy
    monkeypatch.setenv("BERT_LAB_CACHE", str(tmp_path / "cache"))
    path = resolve_corpus("wt", split="test", progress=False)
    assert path == tmp_path / "cache" / "wt" / "wt-raw" / "wiki.test.raw"
    assert path.read_text() == " = Only = \n Test text . \n"
    assert resolve_corpus("wt", progress=False).name == "wiki.train.raw"  # default split
    assert requests == ["/wt.zip"]
    assert sorted(p.name for p in (tmp_path / "cache" / "wt" / "wt-raw").iterdir()) == [
        "wiki.test.raw",
        "wiki.train.raw",
    ]  # no temp files left
    with pytest.raises(ValueError, match="no split 'valid'; its splits: train, test"):
        resolve_corpus("wt", split="valid")


def test_resolve_corpus_paths_names_and_bert_lab_data(tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("resolve_corpus must not download here")

    monkeypatch.setattr(datasets, "fetch", no_network)
    # An existing path comes back as is, even one named like a catalog corpus.
    local = write(tmp_path / "mine.txt", "Hi.")
    assert resolve_corpus(local) == local
    monkeypatch.chdir(tmp_path)
    (tmp_path / "novels").mkdir()
    assert resolve_corpus("novels") == Path("novels")
    # An unknown name lists the catalog.
    with pytest.raises(ValueError, match="wikitext-2, wikitext-103, squad-v1.1, sst2"):
        resolve_corpus("no-such-corpus")
    # BERT_LAB_DATA laid out like shared/data is used instead of downloading.
    data = tmp_path / "data"
    write(data / "wikitext-2-raw" / "wiki.test.raw", WIKITEXT)
    write(data / "sst2" / "dev.tsv", "sentence\tlabel\ngood .\t1\n")
    (data / "squad").mkdir()
    (data / "squad" / "dev-v1.1.json.zip").write_bytes(_zip_bytes({"dev-v1.1.json": "{}"}))
    (data / "novels").mkdir()
    monkeypatch.setenv("BERT_LAB_DATA", str(data))
    monkeypatch.chdir(data / "squad")  # no ./novels here
    assert resolve_corpus("wikitext-2", split="test") == data / "wikitext-2-raw" / "wiki.test.raw"
    assert resolve_corpus("sst2", split="dev") == data / "sst2" / "dev.tsv"
    assert resolve_corpus("squad-v1.1", split="dev") == data / "squad" / "dev-v1.1.json.zip"
    assert resolve_corpus("novels") == data / "novels"
    with pytest.raises(ValueError, match="has no splits"):
        resolve_corpus("novels", split="test")


def test_resolve_corpus_explains_a_missing_local_split(tmp_path, monkeypatch):
    data = tmp_path / "data"
    write(data / "wikitext-2-raw" / "wiki.test.raw", WIKITEXT)
    monkeypatch.setenv("BERT_LAB_DATA", str(data))

    def offline(entry, cache_dir=None, progress=True):
        raise DownloadError(f"could not download {entry.files[0].url}: offline")

    monkeypatch.setattr(datasets, "fetch", offline)
    with pytest.raises(DownloadError) as err:
        resolve_corpus("wikitext-2")  # default split: train
    assert "wikitext-2-raw/wiki.train.raw" in str(err.value) and "'train'" in str(err.value)
    monkeypatch.setenv("BERT_LAB_DATA", str(tmp_path / "absent"))
    with pytest.raises(DownloadError, match="absent is not a folder"):
        resolve_corpus("wikitext-2")


# ---------------------------------------------------------------------------------------------
# Every catalog entry through a mirror ($BERT_LAB_MIRROR): a local stand-in serving small
# fixtures under the canonical URL paths
# ---------------------------------------------------------------------------------------------


def _canonical_path(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.netloc}{parts.path}"


def _serve_fixtures(entry: CatalogEntry, www: Path) -> dict[str, bytes]:
    """Write a small stand-in for each of the entry's files under www/<host>/<path>: a zip holding
    its members, else a few lines. Returns {file name: bytes served}."""
    served = {}
    for remote in entry.files:
        if remote.members:
            data = _zip_bytes({m: f"{entry.name} {m} : a small stand-in .\n" for m in remote.members})
        else:
            data = f"{entry.name} {remote.name} : a small stand-in .\n".encode()
        target = www / _canonical_path(remote.url)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        served[remote.name] = data
    return served


def test_mirror_url_keeps_host_and_path(monkeypatch):
    url = "https://www.gutenberg.org/cache/epub/158/pg158.txt"
    monkeypatch.delenv("BERT_LAB_MIRROR", raising=False)
    assert datasets.mirror_url(url) == url
    monkeypatch.setenv("BERT_LAB_MIRROR", "http://127.0.0.1:8000/")
    assert datasets.mirror_url(url) == "http://127.0.0.1:8000/www.gutenberg.org/cache/epub/158/pg158.txt"
    assert datasets.mirror_url("file:///tmp/x.txt") == "file:///tmp/x.txt"
    monkeypatch.setenv("BERT_LAB_MIRROR", "classroom-server")
    with pytest.raises(ValueError, match="BERT_LAB_MIRROR='classroom-server' is not a URL"):
        datasets.mirror_url(url)


def test_the_new_catalog_entries_point_at_pinned_commits():
    ud, uner = CATALOG["ud-ewt"], CATALOG["uner-ewt"]
    assert ud.files[1].url == (
        "https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/"
        "15d613d8447b3478787d4c278730a1e48a945efb/en_ewt-ud-dev.conllu"
    )
    assert uner.files[2].url == (
        "https://raw.githubusercontent.com/UniversalNER/UNER_English-EWT/"
        "8ed072de2fd24022cc62458997fe96a8fe191ea4/en_ewt-ud-test.iob2"
    )
    for entry in (ud, uner):
        assert list(entry.splits) == ["train", "dev", "test"]
        assert [f.sha256 is not None for f in entry.files] == [False, True, True]  # train: trust on first use
        assert entry.local["dev"] == (f"{entry.name}/{entry.splits['dev']}",)
    assert all(f.sha256 for f in CATALOG["squad-v1.1"].files)
    assert [f.local for f in CATALOG["novels"].files][:2] == ["novels/prideprejudice.txt", "novels/emma.txt"]


def test_pinned_checksums_match_the_shared_copies():
    """The pinned sha256s were computed from shared/data's copies: check them when it is here."""
    folder = data_dir()
    if folder is None:
        pytest.skip("no shared/data here")
    checked = 0
    for name in ("ud-ewt", "uner-ewt"):
        entry = CATALOG[name]
        for remote in entry.files:
            split = next(s for s, p in entry.splits.items() if p == remote.name)
            local = folder / entry.local[split][0]
            if remote.sha256 and local.exists():
                assert hashlib.sha256(local.read_bytes()).hexdigest() == remote.sha256, local
                checked += 1
    squad_zip = folder / "squad" / "dev-v1.1.json.zip"
    if squad_zip.exists():
        with zipfile.ZipFile(squad_zip) as archive:
            digest = hashlib.sha256(archive.read("dev-v1.1.json")).hexdigest()
        assert digest == CATALOG["squad-v1.1"].files[1].sha256
        checked += 1
    assert checked, "shared/data holds none of the pinned files"


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_catalog_entry_downloads_from_a_mirror(name, server, tmp_path, monkeypatch):
    """Each entry's files come from <mirror>/<host>/<canonical path>, are verified (pinned sha256s
    are swapped for the fixtures' own here) and are laid out like shared/data by fill_data_folder."""
    url, www, requests = server
    real = CATALOG[name]
    served = _serve_fixtures(real, www)
    pinned = any(f.sha256 for f in real.files)
    files = tuple(replace(f, sha256=hashlib.sha256(served[f.name]).hexdigest()) if f.sha256 else f for f in real.files)
    monkeypatch.setitem(CATALOG, name, replace(real, files=files))
    monkeypatch.setenv("BERT_LAB_MIRROR", url)
    monkeypatch.setenv("BERT_LAB_CACHE", str(tmp_path / "cache"))
    folder = datasets.fill_data_folder([name], tmp_path / "data", progress=False)
    assert sorted(requests) == sorted(f"/{_canonical_path(f.url)}" for f in real.files)
    cache = tmp_path / "cache" / name
    for remote in real.files:
        assert (cache / remote.name).read_bytes() == served[remote.name]
        assert (cache / (remote.name + ".sha256")).exists() == (not pinned or remote.sha256 is None)
    # laid out like shared/data: find_data finds each split (or novel) there, as it does shared/data's
    monkeypatch.setenv("BERT_LAB_DATA", str(folder))
    assert datasets.missing_data([name]) == []
    for split, candidates in real.local.items():
        if split != "all":
            found = find_data(candidates[-1], tmp_path / "absent")
            assert found.read_bytes() == (cache / real.splits[split]).read_bytes()
    for remote in real.files:
        if remote.local:
            assert find_data(remote.local, tmp_path / "absent").read_bytes() == served[remote.name]
    # a second fill is served from the cache
    datasets.fill_data_folder([name], folder, progress=False)
    assert len(requests) == len(real.files)


@pytest.mark.parametrize("name", sorted(n for n, e in CATALOG.items() if any(f.sha256 for f in e.files)))
def test_a_pinned_checksum_rejects_other_bytes(name, server, tmp_path, monkeypatch):
    """The real catalog against the stand-in's small files: every pinned file is refused, nothing kept."""
    url, www, _ = server
    _serve_fixtures(CATALOG[name], www)
    monkeypatch.setenv("BERT_LAB_MIRROR", url)
    for remote in CATALOG[name].files:
        if not remote.sha256:
            continue
        entry = replace(CATALOG[name], files=(remote,))
        with pytest.raises(ChecksumError) as err:
            fetch(entry, cache_dir=tmp_path / "cache", progress=False)
        assert f"{url}/{_canonical_path(remote.url)}" in str(err.value) and remote.sha256 in str(err.value)
        assert not (tmp_path / "cache" / name / remote.name).exists()


def test_resolve_corpus_downloads_only_the_split_asked_for(server, tmp_path, monkeypatch):
    url, www, requests = server
    real = CATALOG["squad-v1.1"]
    served = _serve_fixtures(real, www)
    files = tuple(replace(f, sha256=hashlib.sha256(served[f.name]).hexdigest()) for f in real.files)
    monkeypatch.setitem(CATALOG, "squad-v1.1", replace(real, files=files))
    monkeypatch.setenv("BERT_LAB_MIRROR", url)
    monkeypatch.setenv("BERT_LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BERT_LAB_DATA", str(tmp_path / "absent"))
    path = resolve_corpus("squad-v1.1", split="dev", progress=False)
    assert path == tmp_path / "cache" / "squad-v1.1" / "dev-v1.1.json"
    assert requests == ["/rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json"]


def test_needs_are_checked_against_the_catalog(tmp_path, monkeypatch):
    assert datasets.parse_need("sst2:dev")[1] == ["dev"]
    assert datasets.parse_need("sst2")[1] == ["train", "dev", "test"]
    assert datasets.parse_need("novels")[1] == [None]
    with pytest.raises(ValueError, match="unknown corpus 'imdb'; the catalog has: novels"):
        datasets.parse_need("imdb:dev")
    with pytest.raises(ValueError, match="'ud-ewt:valid': corpus 'ud-ewt' has no split 'valid'; its splits: train"):
        datasets.parse_need("ud-ewt:valid")
    with pytest.raises(ValueError, match="name it without a split: 'novels'"):
        datasets.parse_need("novels:train")
    # missing_data: what a folder does not hold; the zip counts as SQuAD's dev set
    data = tmp_path / "data"
    (data / "squad").mkdir(parents=True)
    (data / "squad" / "dev-v1.1.json.zip").write_bytes(_zip_bytes({"dev-v1.1.json": "{}"}))
    write(data / "novels" / "emma.txt", "Emma.")
    needs = ["squad-v1.1:dev", "squad-v1.1:train", "novels", "sst2:dev"]
    assert datasets.missing_data(needs, data) == ["squad-v1.1:train", "novels", "sst2:dev"]
    monkeypatch.setenv("BERT_LAB_DATA", str(tmp_path / "absent"))
    assert datasets.missing_data(needs) == needs  # no data folder at all


def test_find_data_knows_the_catalogs_other_name_for_a_file(tmp_path, monkeypatch):
    data = tmp_path / "data"
    write(data / "squad" / "dev-v1.1.json", "{}")  # as a download is laid out (no zip)
    monkeypatch.setenv("BERT_LAB_DATA", str(data))
    fallback = write(tmp_path / "qa.json", "{}")
    assert find_data("squad/dev-v1.1.json.zip", fallback) == data / "squad" / "dev-v1.1.json"
    assert find_data("squad/train-v1.1.json.zip", fallback) == fallback
    (data / "squad" / "dev-v1.1.json.zip").write_bytes(_zip_bytes({"dev-v1.1.json": "{}"}))
    assert find_data("squad/dev-v1.1.json.zip", fallback) == data / "squad" / "dev-v1.1.json.zip"  # as named first
