"""Documents -> token ids on disk, once; read back memory-mapped (corpora of any size).

    python -m lab prepare --corpus ../shared/data/novels --tokenizer models/bert-lab-classroom --out data/novels
    corpus = PreparedCorpus("data/novels", split="train")     # a DocumentView for lab.data.instances
    corpus.num_documents, corpus.sentence_lengths(0), corpus.tokens(0, 0, 3)

A prepared corpus is three flat integer arrays and a description (the layout below): numpy
memmaps slice in O(1) by offset, and the page cache shares them between torchrun processes.
Pre-training prepares its corpus on first use and caches it by the files' contents and the
vocabulary (`prepared`). Why it is shaped so: docs/pretraining.md, "Corpora of any size".
"""

from __future__ import annotations

import array
import hashlib
import json
import mmap
import multiprocessing
import os
import shutil
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from lab.data.corpus import held_out_indices, list_files, read_documents
from lab.data.datasets import default_cache_dir
from lab.files import DOCUMENTS_NAME, META_NAME, SENTENCES_NAME, TOKENS_NAME
from lab.tokenizer import Tokenizer

FORMAT_VERSION = 1

# A prepared corpus folder:
#
#     tokens.bin      every sentence's token ids, back to back (uint16 when the vocabulary has
#                     fewer than 65,536 entries, else uint32), no [CLS]/[SEP]
#     sentences.npy   int64 [S + 1]: sentence i is tokens[sentences[i]:sentences[i + 1]]
#     documents.npy   int64 [D + 1]: document d is sentences documents[d] .. documents[d + 1] - 1
#     meta.json       sizes, dtype, the vocabulary's hash, the corpus it came from
#
# Example: two documents, ["the cat sat .", "it slept ."] and ["rain fell ."], with ids
# the=5 cat=6 sat=7 .=4 it=8 slept=9 rain=10 fell=11 ->
#     tokens    [5 6 7 4 8 9 4 10 11 4]
#     sentences [0 4 7 10]         documents [0 2 3]


# ----------------------------------------------------------------------------------------
# Reading a prepared corpus
# ----------------------------------------------------------------------------------------
def is_prepared(path) -> bool:
    return (Path(path) / META_NAME).is_file()


class PreparedCorpus:
    """A prepared corpus folder as a DocumentView (lab.data.instances): memory-mapped, nothing loaded.

    split: "all" documents, or the "train" / "held-out" documents of the same rule as
    lab.data.corpus.split_documents(held_out, seed), so a run's held-out chapters are the same
    whether it read the text in memory or from here.
    """

    def __init__(self, path, split: str = "all", held_out: float | int = 0.02, seed: int = 0):
        path = Path(path)
        if not is_prepared(path):
            raise FileNotFoundError(
                f"{path} is not a prepared corpus (no {META_NAME}); "
                f"make one with python -m lab prepare --corpus ... --out {path}"
            )
        self.path, self.meta = path, json.loads((path / META_NAME).read_text())
        if self.meta.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"{path} was prepared by another version of the lab (format "
                f"{self.meta.get('format_version')}, this one reads {FORMAT_VERSION}): prepare it again"
            )
        self.token_ids = np.memmap(path / TOKENS_NAME, dtype=self.meta["dtype"], mode="r")
        self.sentence_offsets = np.load(path / SENTENCES_NAME, mmap_mode="r")
        self.document_offsets = np.load(path / DOCUMENTS_NAME, mmap_mode="r")
        n = len(self.document_offsets) - 1
        if split == "all":
            self.documents = np.arange(n)
        elif split in ("train", "held-out"):
            held = held_out_indices(n, held_out, seed)
            self.documents = np.array(
                sorted(held) if split == "held-out" else [d for d in range(n) if d not in held], dtype=np.int64
            )
        else:
            raise ValueError(f"split must be 'all', 'train' or 'held-out', not {split!r}")
        self.num_documents = len(self.documents)

    def _sentences(self, d: int) -> tuple[int, int]:
        g = int(self.documents[d])
        return int(self.document_offsets[g]), int(self.document_offsets[g + 1])

    def sentence_lengths(self, d: int) -> list[int]:
        s0, s1 = self._sentences(d)
        return np.diff(self.sentence_offsets[s0 : s1 + 1]).tolist()

    def tokens(self, d: int, start: int, end: int) -> np.ndarray:
        """The ids of sentences [start, end) of document d, back to back (a view of the file)."""
        s0, _ = self._sentences(d)
        return self.token_ids[self.sentence_offsets[s0 + start] : self.sentence_offsets[s0 + end]]

    def release(self) -> None:
        """Let the operating system unmap the pages of the corpus this process has read (they
        stay in the page cache, shared by every process, but leave this one's resident memory):
        pairing walks every document's offsets, and a long run reads pages of every part of
        the token file."""
        for array_ in (self.token_ids, self.sentence_offsets, self.document_offsets):
            mapping = getattr(array_, "_mmap", None)
            if mapping is not None and hasattr(mmap, "MADV_DONTNEED"):
                mapping.madvise(mmap.MADV_DONTNEED)

    def document(self, d: int) -> list[list[int]]:
        """Document d as sentences of ids (lists), e.g. for lab.data.instances.create_instances."""
        s0, s1 = self._sentences(d)
        offsets = self.sentence_offsets[s0 : s1 + 1]
        ids = self.token_ids[offsets[0] : offsets[-1]].tolist()
        return [ids[a - offsets[0] : b - offsets[0]] for a, b in zip(offsets[:-1], offsets[1:])]

    def __repr__(self) -> str:
        m = self.meta
        return (
            f"PreparedCorpus({str(self.path)!r}: {self.num_documents} of {m['documents']} documents, "
            f"{m['sentences']:,} sentences, {m['tokens']:,} tokens)"
        )


# ----------------------------------------------------------------------------------------
# Writing one
# ----------------------------------------------------------------------------------------
def _files(corpus: Path) -> list[Path]:
    return list_files(corpus) if corpus.is_dir() else [corpus]


def corpus_key(corpus: Path, tokenizer: Tokenizer) -> str:
    """What a prepared corpus depends on: the files' names and bytes, the vocabulary (and its
    lowercasing), and the format version. Hashing the files is quick next to tokenizing them."""
    digest = hashlib.sha256(f"bert-lab prepared v{FORMAT_VERSION} lower={tokenizer.lowercase}".encode())
    for token, i in sorted(tokenizer.vocab.items(), key=lambda kv: kv[1]):
        digest.update(f"{i}\t{token}\n".encode())
    for file in _files(corpus):
        digest.update(str(file.relative_to(corpus) if corpus.is_dir() else file.name).encode())
        with open(file, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()[:24]


def _read_file(file: Path) -> list[list[str]]:
    """One worker's job: a text file -> documents of sentences (strings); [] when unusable."""
    try:
        return [d.sentences for d in read_documents(file)]
    except ValueError:
        return []  # empty, binary or no sentences: skipped


def prepare(
    corpus,
    tokenizer: Tokenizer,
    out,
    workers: int | None = None,
    progress: bool = True,
    log=print,
    key: str | None = None,
) -> Path:
    """Tokenize `corpus` (a text file or folder) into `out` (the layout at the top of this module).

    Written to a temporary folder of this process and renamed: a folder with meta.json is always
    complete, and two processes preparing the same corpus at once (two runs on one cache) do not
    write into each other's files: the second to finish keeps the first one's identical result.
    Returns out.
    """
    corpus, out = Path(corpus), Path(out)
    files = _files(corpus)
    if not files:
        raise ValueError(f"no *.txt or *.raw files under {corpus}")
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    dtype = np.uint16 if tokenizer.vocab_size <= np.iinfo(np.uint16).max + 1 else np.uint32
    t0 = time.perf_counter()
    workers = max(1, workers or os.cpu_count() or 1)
    sentence_offsets, document_offsets, n_tokens, n_bytes = _write_ids(
        files, tokenizer, dtype, tmp / TOKENS_NAME, workers, progress
    )
    np.save(tmp / SENTENCES_NAME, np.frombuffer(sentence_offsets, dtype=np.int64))
    np.save(tmp / DOCUMENTS_NAME, np.frombuffer(document_offsets, dtype=np.int64))
    seconds = time.perf_counter() - t0
    meta = {
        "format_version": FORMAT_VERSION,
        "dtype": np.dtype(dtype).name,
        "vocab_size": tokenizer.vocab_size,
        "documents": len(document_offsets) - 1,
        "sentences": len(sentence_offsets) - 1,
        "tokens": n_tokens,
        "corpus": str(corpus),
        "files": len(files),
        "bytes": n_bytes,
        "seconds": round(seconds, 2),
        "key": key or corpus_key(corpus, tokenizer),
    }
    if meta["documents"] < 2:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ValueError(f"{corpus}: {meta['documents']} usable document(s); pre-training needs at least 2")
    _publish(tmp, out, meta, tokenizer)
    log(
        f"prepared {corpus}: {meta['documents']:,} documents, {meta['sentences']:,} sentences, "
        f"{n_tokens:,} tokens ({np.dtype(dtype).name}) in {seconds:.1f} s "
        f"({n_bytes / 2**20 / max(seconds, 1e-9):.1f} MB/s, {workers} workers) -> {out}"
    )
    return out


def _write_ids(
    files: list[Path], tokenizer: Tokenizer, dtype, path: Path, workers: int, progress: bool
) -> tuple[array.array, array.array, int, int]:
    """Worker processes read and split the files; this one encodes their sentences and appends
    the ids to `path`. Returns (sentence offsets, document offsets, tokens, bytes read)."""
    sentence_offsets, document_offsets = array.array("q", [0]), array.array("q", [0])
    n_tokens, n_bytes = 0, 0
    # the pool first, before the tokenizer runs anything (a fork after it did would be unsafe)
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    with (
        ctx.Pool(workers) as pool,
        open(path, "wb") as sink,
        tqdm(
            total=sum(f.stat().st_size for f in files), unit="B", unit_scale=True, desc="prepare", disable=not progress
        ) as bar,
    ):
        for file, docs in zip(files, pool.imap(_read_file, files, chunksize=1)):
            sentences = [s for doc in docs for s in doc]
            if sentences:
                encodings = tokenizer.backend.encode_batch_fast(sentences, add_special_tokens=False)
                lengths = np.fromiter((len(e.ids) for e in encodings), np.int64, len(encodings))
                ids = np.fromiter((t for e in encodings for t in e.ids), dtype, int(lengths.sum()))
                ids.tofile(sink)
                # a sentence the vocabulary cannot read at all (0 ids) is kept empty: pairing skips it
                ends = n_tokens + np.cumsum(lengths)
                sentence_offsets.extend(ends.tolist())
                n_tokens = int(ends[-1]) if len(ends) else n_tokens
                first = len(sentence_offsets) - 1 - len(sentences)
                document_offsets.extend((first + np.cumsum([len(d) for d in docs])).tolist())
            size = file.stat().st_size
            n_bytes += size
            bar.update(size)
    return sentence_offsets, document_offsets, n_tokens, n_bytes


def _publish(tmp: Path, out: Path, meta: dict, tokenizer: Tokenizer) -> None:
    """Finish the temporary folder (meta.json, the vocabulary) and rename it to `out`."""
    (tmp / META_NAME).write_text(json.dumps(meta, indent=2) + "\n")
    tokenizer.save(tmp)  # the vocabulary the ids belong to
    if (out / META_NAME).is_file() and json.loads((out / META_NAME).read_text()).get("key") == meta["key"]:
        shutil.rmtree(tmp, ignore_errors=True)  # another process prepared the same, meanwhile
    else:
        shutil.rmtree(out, ignore_errors=True)
        os.replace(tmp, out)


def prepared(corpus, tokenizer: Tokenizer, cache_dir=None, log=print) -> Path:
    """The prepared form of `corpus` for this vocabulary: `corpus` itself if it is a prepared
    folder, else the cached one (prepared now if it is not there yet)."""
    corpus = Path(corpus)
    if is_prepared(corpus):
        meta = json.loads((corpus / META_NAME).read_text())
        if meta.get("vocab_size") != tokenizer.vocab_size:
            raise ValueError(
                f"{corpus} was prepared with a vocabulary of {meta.get('vocab_size')} tokens, "
                f"not this one ({tokenizer.vocab_size}): prepare it again with this tokenizer"
            )
        return corpus
    root = Path(cache_dir) if cache_dir else default_cache_dir() / "prepared"
    key = corpus_key(corpus, tokenizer)  # hashed once: the folder's name and its meta.json
    out = root / key
    if is_prepared(out):
        log(f"using the prepared corpus {out}")
        return out
    return prepare(corpus, tokenizer, out, log=log, key=key)
