"""Named real corpora: the catalog, downloads into a cache, and the local data folder.

    path = resolve_corpus("wikitext-2", split="test")  # a local copy, the cache, or a download
    path = resolve_corpus("my_texts/")                 # an existing path comes back as is
    folder = fetch("novels")                           # download once into the cache
    data_dir()                                         # $BERT_LAB_DATA or ../shared/data, or None

CATALOG names each corpus (novels, wikitext-2/103, squad-v1.1, sst2, ud-ewt, uner-ewt) with its
files, splits, licence and checksums. Downloads go through pooch (streaming, progress bar,
temp-file-then-rename, hash checks); a file with no sha256 in the catalog is trusted on first use
and checked against its `<file>.sha256` sidecar ever after; $BERT_LAB_MIRROR sends every download
to a classroom mirror. Reading the files is lab/data/corpus.py's job.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import pooch

__all__ = [
    "RemoteFile",
    "CatalogEntry",
    "CATALOG",
    "DownloadError",
    "ChecksumError",
    "default_cache_dir",
    "data_dir",
    "find_data",
    "is_shared",
    "fetch",
    "resolve_corpus",
    "mirror_url",
    "parse_need",
    "missing_data",
    "fill_data_folder",
]

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# The catalog
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RemoteFile:
    url: str
    name: str  # file name inside the corpus's cache folder
    sha256: str | None = None  # None: trust on first use (sidecar <name>.sha256)
    members: tuple[str, ...] = ()  # for a zip: members to extract next to it
    local: str = ""  # where a folder laid out like shared/data has this file under another name


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    description: str
    files: tuple[RemoteFile, ...]
    splits: dict[str, str] = field(default_factory=dict)  # split -> path in the cache folder
    default_split: str | None = None  # None: the whole cache folder is the corpus
    # Where a folder laid out like ../shared/data (`data_dir()`) holds it: split (or "all")
    # -> candidate paths relative to that folder, first existing one wins.
    local: dict[str, tuple[str, ...]] = field(default_factory=dict)
    format: str = "auto"  # what read_documents should use (or "json"/"tsv"; "conllu"/"uner": lab.data.tagged_files)
    licence: str = ""


# Project Gutenberg ebook number -> the file's name in shared/data/novels/
_NOVELS = {
    1342: "prideprejudice",
    158: "emma",
    161: "sensesensibility",
    141: "mansfieldpark",
    121: "northangerabbey",
    105: "persuasion",
    2701: "mobydick",
    1400: "great_expectations",
    36: "the_war_of_the_worlds",
    164: "twenty_thousand_leagues_under_the_sea",
}
_NOVEL_IDS = tuple(_NOVELS)
_WIKI = "https://s3.amazonaws.com/research.metamind.io/wikitext"


def _wikitext(size: str) -> CatalogEntry:
    folder = f"wikitext-{size}-raw"
    splits = {s: f"{folder}/wiki.{s}.raw" for s in ("train", "valid", "test")}
    return CatalogEntry(
        name=f"wikitext-{size}",
        description=f"WikiText-{size} raw v1 (Merity et al. 2016): Wikipedia good/featured "
        "articles, ' = Title = ' headings, one paragraph per line",
        files=(
            RemoteFile(
                f"{_WIKI}/wikitext-{size}-raw-v1.zip", f"wikitext-{size}-raw-v1.zip", members=tuple(splits.values())
            ),
        ),
        splits=splits,
        default_split="train",
        local={s: (p,) for s, p in splits.items()},
        format="wikitext",
        licence="CC BY-SA 3.0",
    )


def _ewt(name: str, description: str, repo: str, commit: str, format: str, sha256: dict[str, str]) -> CatalogEntry:
    """An English Web Treebank corpus on GitHub, at a fixed commit: en_ewt-ud-{train,dev,test}.<ext>.

    dev and test carry the sha256 of shared/data's copies, which come from the same commit (its
    SOURCE file); train is trust on first use (shared/data has no train split to compute it from;
    a commit's files never change, so the first download is the file)."""
    ext = "conllu" if format == "conllu" else "iob2"
    splits = {s: f"en_ewt-ud-{s}.{ext}" for s in ("train", "dev", "test")}
    return CatalogEntry(
        name=name,
        description=description,
        files=tuple(
            RemoteFile(f"https://raw.githubusercontent.com/{repo}/{commit}/{f}", f, sha256=sha256.get(s))
            for s, f in splits.items()
        ),
        splits=splits,
        default_split="dev",
        local={s: (f"{name}/{f}",) for s, f in splits.items()},
        format=format,
        licence="CC BY-SA 4.0",
    )


CATALOG: dict[str, CatalogEntry] = {
    "novels": CatalogEntry(
        name="novels",
        description="ten public-domain novels from Project Gutenberg: Pride and Prejudice, "
        "Emma, Sense and Sensibility, Mansfield Park, Northanger Abbey, Persuasion, "
        "Moby Dick, Great Expectations, The War of the Worlds, Twenty Thousand "
        "Leagues Under the Sea (plain-text UTF-8)",
        # Trust on first use: Project Gutenberg regenerates these files (headers, notes), and the
        # copies in shared/data are older editions, not the bytes served today.
        files=tuple(
            RemoteFile(f"https://www.gutenberg.org/cache/epub/{i}/pg{i}.txt", f"pg{i}.txt", local=f"novels/{n}.txt")
            for i, n in _NOVELS.items()
        ),
        local={"all": ("novels",)},
        format="auto",
        licence="public domain",
    ),
    "wikitext-2": _wikitext("2"),
    "wikitext-103": _wikitext("103"),
    "squad-v1.1": CatalogEntry(
        name="squad-v1.1",
        description="SQuAD v1.1 (Rajpurkar et al. 2016) extractive QA, JSON; the local copy "
        "in the data folder is squad/dev-v1.1.json.zip (a zip of the JSON file)",
        files=(
            # sha256 of train-v1.1.json (30,288,272 bytes): not computed here (shared/data has no
            # train set); the value public download scripts record for this URL.
            RemoteFile(
                "https://rajpurkar.github.io/SQuAD-explorer/dataset/train-v1.1.json",
                "train-v1.1.json",
                sha256="3527663986b8295af4f7fcdff1ba1ff3f72d07d61a20f487cb238a6ef92fd955",
            ),
            # dev-v1.1.json (4,854,279 bytes): computed from the JSON inside shared/data's
            # squad/dev-v1.1.json.zip, the same value public download scripts record for this URL.
            RemoteFile(
                "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json",
                "dev-v1.1.json",
                sha256="95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9",
            ),
        ),
        splits={"train": "train-v1.1.json", "dev": "dev-v1.1.json"},
        default_split="train",
        local={
            "train": ("squad/train-v1.1.json", "squad/train-v1.1.json.zip"),
            "dev": ("squad/dev-v1.1.json", "squad/dev-v1.1.json.zip"),
        },
        format="json",
        licence="CC BY-SA 4.0",
    ),
    "sst2": CatalogEntry(
        name="sst2",
        description="GLUE SST-2 binary sentiment, TSV with header 'sentence<TAB>label' (test has no labels)",
        files=(
            RemoteFile(
                "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip",
                "SST-2.zip",
                members=("SST-2/train.tsv", "SST-2/dev.tsv", "SST-2/test.tsv"),
            ),
        ),
        splits={"train": "SST-2/train.tsv", "dev": "SST-2/dev.tsv", "test": "SST-2/test.tsv"},
        default_split="train",
        local={"train": ("sst2/train.tsv",), "dev": ("sst2/dev.tsv",), "test": ("sst2/test.tsv",)},
        format="tsv",
        licence="as distributed with GLUE",
    ),
    "ud-ewt": _ewt(
        "ud-ewt",
        "Universal Dependencies English Web Treebank (v2.15), CoNLL-U with gold UPOS tags "
        "(read with lab.data.tagged_files.read_tagged)",
        "UniversalDependencies/UD_English-EWT",
        "15d613d8447b3478787d4c278730a1e48a945efb",
        "conllu",
        {
            "dev": "531a54ff90d6ab12201c5a50c3e78e6ddac4de69abc4bce5d275d3cd29efe2b6",
            "test": "e266e515a0a7547657ed3d90d9ba46487d6bd251f27ad4269d4e8a427c8555cd",
        },
    ),
    "uner-ewt": _ewt(
        "uner-ewt",
        "Universal NER (UNER v1) English-EWT: gold PER / ORG / LOC in IOB2, one token a line "
        "(read with lab.data.tagged_files.read_tagged); cite Mayhew et al., NAACL 2024",
        "UniversalNER/UNER_English-EWT",
        "8ed072de2fd24022cc62458997fe96a8fe191ea4",
        "uner",
        {
            "dev": "0cafd881cf31d39897b6d588420fab8fbbe4423d271725c59921ac9dd49c0713",
            "test": "821ad826d5f503ac03b4edc3fbc2174f21fbb005ec25863caf2051c434616d6e",
        },
    ),
}


class DownloadError(OSError):
    """A corpus file could not be downloaded (the message has the URL and what to do)."""


class ChecksumError(ValueError):
    """A downloaded or cached file does not have the expected sha256."""


# ---------------------------------------------------------------------------------------------
# Where data lives: the cache and the local data folder
# ---------------------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """$BERT_LAB_CACHE, else ~/.cache/bert-lab."""
    env = os.environ.get("BERT_LAB_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "bert-lab"


def data_dir() -> Path | None:
    """The local folder of real corpora, laid out like shared/data (novels/, wikitext-2-raw/,
    squad/, sst2/): $BERT_LAB_DATA when set (then only it), else ../shared/data beside the
    repository. None when that is not a folder."""
    env = os.environ.get("BERT_LAB_DATA")
    repository = Path(__file__).resolve().parents[2]  # lab/data/../.. (a test moves __file__)
    folder = Path(env).expanduser() if env else repository.parent / "shared" / "data"
    return folder if folder.is_dir() else None


def _same_file_names(name: str) -> tuple[str, ...]:
    """`name` and the catalog's other names for the same split in a data folder, in the catalog's
    order: "squad/dev-v1.1.json.zip" -> ("squad/dev-v1.1.json.zip", "squad/dev-v1.1.json")."""
    for entry in CATALOG.values():
        for candidates in entry.local.values():
            if name in candidates:
                return (name, *(c for c in candidates if c != name))
    return (name,)


def find_data(name: str, fallback: str | os.PathLike) -> Path:
    """data_dir()/name when it exists (e.g. "novels", "sst2/train.tsv"), or the same file under
    the catalog's other name for it (SQuAD's dev set asked as squad/dev-v1.1.json.zip, held as the
    downloaded squad/dev-v1.1.json); else `fallback`. FileNotFoundError naming both when neither
    exists."""
    folder = data_dir()
    if folder is not None:
        for candidate in _same_file_names(name):
            if (folder / candidate).exists():
                return folder / candidate
    fallback = Path(fallback)
    if not fallback.exists():
        where = folder or "none found: set BERT_LAB_DATA"
        raise FileNotFoundError(f"neither {name} in the data folder ({where}) nor {fallback} exists")
    return fallback


def is_shared(path: str | os.PathLike) -> bool:
    """True when `path` is inside data_dir() (real data), False otherwise or without one."""
    folder = data_dir()
    if folder is None:
        return False
    # as written (a link in a filled data folder points into the cache), or with links resolved
    for p, f in (
        (Path(os.path.abspath(path)), Path(os.path.abspath(folder))),
        (Path(path).resolve(), folder.resolve()),
    ):
        if p == f or f in p.parents:
            return True
    return False


# ---------------------------------------------------------------------------------------------
# Download + cache
# ---------------------------------------------------------------------------------------------


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _record_sha256(path: Path, digest: str) -> None:
    _sidecar(path).write_text(f"{digest}  {path.name}\n")


def _copy_file_url(url: str, output_file: str, pooch_instance=None) -> None:
    """A pooch downloader for file:// URLs (a local mirror); pooch itself speaks HTTP(S)/FTP."""
    shutil.copyfile(urllib.request.url2pathname(urllib.parse.urlparse(url).path), output_file)


def _verify_cached(remote: RemoteFile, path: Path) -> None:
    """Check a cached file against the catalog's sha256 or its sidecar (recording one if absent)."""
    digest = pooch.file_hash(str(path))
    if remote.sha256:
        expected, origin = remote.sha256.lower(), "the catalog"
    elif _sidecar(path).exists():
        expected = _sidecar(path).read_text().split()[0].lower()
        origin = f"{_sidecar(path).name} (recorded at first download)"
    else:  # cached before sidecars existed: trust it now
        _record_sha256(path, digest)
        return
    if digest != expected:
        raise ChecksumError(
            f"cached file {path} has sha256 {digest}, but {origin} says "
            f"{expected}: it is corrupt or was changed. Delete it to download "
            f"it again."
        )


def mirror_url(url: str) -> str:
    """`url`, or with $BERT_LAB_MIRROR set (a base URL), the same host and path under the mirror:
    https://www.gutenberg.org/cache/epub/158/pg158.txt -> <mirror>/www.gutenberg.org/cache/epub/158/pg158.txt.
    file:// URLs are never redirected."""
    mirror = os.environ.get("BERT_LAB_MIRROR", "").strip()
    parts = urllib.parse.urlsplit(url)
    if not mirror or parts.scheme not in ("http", "https"):
        return url
    if not mirror.startswith(("http://", "https://", "file:")):
        raise ValueError(f"BERT_LAB_MIRROR={mirror!r} is not a URL: give one such as http://localhost:8000")
    return f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}"


def _download(remote: RemoteFile, folder: Path, progress: bool) -> None:
    """url (or its mirror) -> folder/remote.name via pooch (temp file, hash check, rename), then TOFU sidecar."""
    url = mirror_url(remote.url)
    downloader = _copy_file_url if url.startswith("file:") else pooch.HTTPDownloader(progressbar=progress)
    try:
        pooch.retrieve(
            url,
            known_hash=remote.sha256,
            fname=remote.name,
            path=folder,
            downloader=downloader,
            progressbar=progress,
        )
    except OSError as err:  # requests' errors are OSErrors too
        raise DownloadError(
            f"could not download {url}: {err}. Without internet, pass a local path "
            f"instead (a file or folder you already have), or set BERT_LAB_DATA to a folder "
            f"laid out like shared/data."
        ) from err
    except ValueError as err:  # pooch: the downloaded file's hash does not match
        raise ChecksumError(
            f"checksum mismatch for {url}: the catalog expects sha256 {remote.sha256} "
            f"({err}). The download is corrupt or the file changed upstream; nothing was saved "
            f"to {folder}."
        ) from err
    if not remote.sha256:
        # Trust on first use: remember this download's checksum, verify later uses against it.
        path = folder / remote.name
        digest = pooch.file_hash(str(path))
        _record_sha256(path, digest)
        logger.info("%s: no checksum in the catalog; recorded sha256 %s in %s", path.name, digest, _sidecar(path).name)


def _extract(zip_path: Path, members: tuple[str, ...], folder: Path) -> None:
    """Extract the named zip members under folder (each via a temp file + atomic rename)."""
    with zipfile.ZipFile(zip_path) as archive:
        names = set(archive.namelist())
        for member in members:
            target = folder / member
            if target.exists():
                continue
            if member not in names or ".." in Path(member).parts or member.startswith("/"):
                raise ValueError(
                    f"{zip_path.name} has no member {member!r} (it holds: {', '.join(sorted(names)[:10])})"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
            try:
                with archive.open(member) as src, os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
                os.replace(tmp_name, target)
            finally:
                Path(tmp_name).unlink(missing_ok=True)


def _only_split(entry: CatalogEntry, split: str | None) -> CatalogEntry:
    """The entry with only the files that hold `split` (a zip of every split stays whole): asking
    for SQuAD's dev set does not download its 30 MB train set. Unchanged without splits."""
    if not entry.splits or split not in entry.splits:
        return entry
    path = entry.splits[split]
    files = tuple(f for f in entry.files if f.name == path or path in f.members)
    return replace(entry, files=files) if files else entry


def _entry(name: str) -> CatalogEntry:
    if name not in CATALOG:
        raise ValueError(f"unknown corpus {name!r}; the catalog has: {', '.join(CATALOG)}")
    return CATALOG[name]


def fetch(name_or_entry: str | CatalogEntry, cache_dir: str | os.PathLike | None = None, progress: bool = True) -> Path:
    """Download a catalog corpus once into the cache and return its folder.

    The folder is `<cache_dir>/<name>/` (cache_dir defaults to $BERT_LAB_CACHE or
    ~/.cache/bert-lab). pooch downloads each file with a progress bar into a temp file and
    renames it into place only when complete and verified, so the cache never holds half a file.
    Zips are kept (to verify them later) and the listed members extracted beside them.

    Checksums: where the catalog records a sha256 the download must match it. Where it does not,
    the first download is trusted and its sha256 written to `<file>.sha256`; every later call
    verifies the cached file against that sidecar. A mismatch raises ChecksumError; delete the
    file to download it again (the new download is trusted and recorded in turn).
    """
    entry = name_or_entry if isinstance(name_or_entry, CatalogEntry) else _entry(name_or_entry)
    folder = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    folder = folder / entry.name
    for remote in entry.files:
        path = folder / remote.name
        if path.exists():
            _verify_cached(remote, path)
        else:  # pooch logs "Downloading data from ..."
            _download(remote, folder, progress)
        if remote.members:
            _extract(path, remote.members, folder)
    return folder


def resolve_corpus(
    name_or_path: str | os.PathLike,
    split: str | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> Path:
    """A local path or a catalog name -> a local path to read.

    1. An existing file or folder is returned as is (no network), even if it shares a catalog
       name ("novels" in the current folder wins over the catalog's novels).
    2. A catalog name: if the local data folder (`data_dir()`: $BERT_LAB_DATA, else
       ../shared/data) holds the corpus (novels/, wikitext-2-raw/wiki.test.raw, squad/, sst2/),
       that local copy is returned (this is how the lab runs offline); otherwise the corpus is
       fetched into the cache (see `fetch`). `split` picks a file ("train", "valid", "test",
       "dev"); without it the entry's default split (train) is used, or the whole folder for
       "novels". Note: SQuAD's local copy may be a .zip holding the one JSON file.
    3. Anything else: ValueError listing the catalog's names.
    """
    path = Path(name_or_path).expanduser()
    if path.exists():
        return path
    name = str(name_or_path)
    if name not in CATALOG:
        raise ValueError(
            f"{name!r} is neither an existing file or folder nor a corpus name; corpus names: {', '.join(CATALOG)}"
        )
    entry = CATALOG[name]
    if split is not None and not entry.splits:
        raise ValueError(f"corpus {name!r} has no splits; call resolve_corpus({name!r})")
    split = split or entry.default_split or "all"
    if entry.splits and split not in entry.splits:
        raise ValueError(f"corpus {name!r} has no split {split!r}; its splits: {', '.join(entry.splits)}")

    local_note = ""
    folder = data_dir()
    if folder is not None:
        candidates = entry.local.get(split, ())
        for candidate in candidates:
            local = folder / candidate
            if local.exists():
                logger.info("%s (%s): using the local copy %s", name, split, local)
                return local
        local_note = f" (the data folder {folder} has no {' or '.join(candidates) or name} for split {split!r})"
    elif os.environ.get("BERT_LAB_DATA"):
        local_note = f" (BERT_LAB_DATA={os.environ['BERT_LAB_DATA']} is not a folder)"
    try:
        cached = fetch(_only_split(entry, split), cache_dir=cache_dir, progress=progress)
    except DownloadError as err:
        raise DownloadError(f"{err}{local_note}") from err
    return cached / entry.splits[split] if entry.splits else cached


# ---------------------------------------------------------------------------------------------
# A data folder laid out like shared/data, filled from the catalog (how notebooks get data in Colab)
# ---------------------------------------------------------------------------------------------


def parse_need(need: str) -> tuple[CatalogEntry, list[str | None]]:
    """ "sst2:dev" -> (the sst2 entry, ["dev"]); "sst2" -> every split; "novels" -> [None] (no
    splits: every file). ValueError naming the catalog's corpora or the entry's splits."""
    name, _, split = need.partition(":")
    entry = _entry(name)
    if not split:
        return entry, list(entry.splits) or [None]
    if split not in entry.splits:
        raise ValueError(
            f"{need!r}: corpus {name!r} has no split {split!r}; "
            + (f"its splits: {', '.join(entry.splits)}" if entry.splits else f"name it without a split: {name!r}")
        )
    return entry, [split]


def _layout(entry: CatalogEntry, split: str | None) -> list[tuple[tuple[str, ...], str]]:
    """(the names a data folder may hold it under, its path in the entry's cache folder) for
    each file of a split (or of an entry without splits)."""
    if split is None:
        return [((f.local,), f.name) for f in entry.files if f.local]
    return [(entry.local.get(split) or (f"{entry.name}/{entry.splits[split]}",), entry.splits[split])]


def missing_data(needs, folder: str | os.PathLike | None = None) -> list[str]:
    """The needs ("novels", "sst2:dev", ...) that `folder` (default: data_dir()) does not hold under
    any of the catalog's names for them; all of them when there is no folder."""
    folder = Path(folder) if folder is not None else data_dir()
    missing = []
    for need in needs:
        entry, splits = parse_need(need)
        names = [n for split in splits for n, _ in _layout(entry, split)]
        if folder is None or not all(any((folder / c).exists() for c in candidates) for candidates in names):
            missing.append(need)
    return missing


def _link(target: Path, source: Path) -> None:
    """target -> source as a symbolic link (a copy where links are not allowed), replacing a stale one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.exists():
        if target.resolve() == source.resolve():
            return
        target.unlink()
    try:
        target.symlink_to(source.resolve())
    except OSError:
        shutil.copyfile(source, target)


def fill_data_folder(
    needs, folder: str | os.PathLike, cache_dir: str | os.PathLike | None = None, progress: bool = True
) -> Path:
    """Fetch each need ("novels", "sst2:dev", "ud-ewt:test", ...) into the cache (`fetch`: pooch,
    progress bar, checksums) and link its files into `folder` under shared/data's names
    (novels/emma.txt, sst2/dev.tsv, squad/dev-v1.1.json, ud-ewt/en_ewt-ud-dev.conllu, ...).
    With BERT_LAB_DATA set to that folder, `find_data` and `resolve_corpus` then find them as they
    find shared/data's. Only the files that hold the named splits are downloaded. Returns folder."""
    folder = Path(folder).expanduser()
    for need in needs:
        entry, splits = parse_need(need)
        for split in splits:
            cached = fetch(_only_split(entry, split), cache_dir=cache_dir, progress=progress)
            for candidates, path in _layout(entry, split):
                _link(folder / candidates[0], cached / path)
    return folder
