"""Every word of some sentences as a frozen encoder sees it, at every layer: one vector per word
(its first sub-token's, the paper's rule), computed once and cached. Probes (lab.inspect.probing)
and the feature-based taggers of Table 7 (lab.studies.feature_tagging) all read this cache."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lab.data.tagging import collate_tag_features, make_tag_features
from lab.device import autocast


@dataclass
class WordFeatures:
    """Every word of some sentences as the frozen encoder saw it: one row per word.

    vectors[n, j] is word n's first-sub-token vector from hidden layer j (0 = embeddings, L =
    last), read from the window where that sub-token has the most context. Sentence i's words are
    rows offsets[i]:offsets[i + 1].
    """

    vectors: torch.Tensor  # (N, L+1, H), fp16 by default (halves the memory; the tagger computes in fp32)
    offsets: list[int]  # (S+1,) sentence i = rows offsets[i]:offsets[i+1]
    tags: list[list[str]] | None = None  # gold tags per sentence, when the sentences had them
    seconds: float = 0.0  # how long the encoder took

    @property
    def num_sentences(self) -> int:
        return len(self.offsets) - 1

    @property
    def num_words(self) -> int:
        return self.vectors.shape[0]

    @property
    def num_layers(self) -> int:
        """L: the encoder's Transformer layers (the cache holds L + 1 hidden states)."""
        return self.vectors.shape[1] - 1

    @property
    def hidden_size(self) -> int:
        return self.vectors.shape[2]

    def lengths(self) -> list[int]:
        return [b - a for a, b in zip(self.offsets, self.offsets[1:])]

    def sentence(self, i: int) -> torch.Tensor:
        """(n_i, L+1, H): sentence i's words."""
        return self.vectors[self.offsets[i] : self.offsets[i + 1]]


def _split(sentence: Any) -> tuple[list[str], list[str] | None]:
    """A Sentence / (words, tags) pair -> (words, tags); a list of words -> (words, None)."""
    items = list(sentence)
    if len(items) == 2 and not isinstance(items[0], str) and not isinstance(items[1], str):
        return list(items[0]), list(items[1])
    return items, None


@torch.no_grad()
def cache_word_features(
    model,
    tokenizer,
    sentences: Sequence[Any],
    max_seq_length: int = 128,
    doc_stride: int = 64,
    batch_size: int = 32,
    dtype: torch.dtype | None = None,
    store_dtype: torch.dtype = torch.float16,
    device: torch.device | str | None = None,
) -> WordFeatures:
    """Run the frozen encoder once over the sentences and keep each word's first-sub-token vector
    from every layer 0..L (hidden_states), one row per word.

    model: a BertModel, or any lab model with a `.bert` encoder (its head is not used).
    sentences: Sentence / (words, tags) pairs, or plain lists of words.
    Windows as lab.data.tagging.make_tag_features (max_seq_length, doc_stride): a word whose first
    piece lies in several windows is read from the one where it has the most context, exactly
    as lab.inference.predict_tags reads a fine-tuned tagger. dtype: autocast while encoding (None:
    fp32); store_dtype: the cache's dtype (fp16: 7 x 384 x 2 bytes = 5.4 KB a MiniLM word).
    """
    start = time.perf_counter()
    encoder = getattr(model, "bert", model)
    split = [_split(s) for s in sentences]
    words = [w for w, _ in split]
    tags = [t for _, t in split] if split and all(t is not None for _, t in split) else None
    features = make_tag_features(words, tokenizer, None, max_seq_length, doc_stride)
    offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])]).tolist()
    cfg = encoder.config
    n_words, n_states, hidden = offsets[-1], cfg.num_hidden_layers + 1, cfg.hidden_size
    vectors = torch.zeros(n_words, n_states, hidden, dtype=store_dtype)  # (N, L+1, H)
    filled = torch.zeros(n_words, dtype=torch.bool)
    device = torch.device(device) if device is not None else next(encoder.parameters()).device
    was_training = encoder.training
    encoder.eval()
    order = sorted(range(len(features)), key=lambda k: len(features[k]))  # similar lengths together
    try:
        with autocast(device, dtype):
            for i in range(0, len(order), batch_size):
                chunk = [features[k] for k in order[i : i + batch_size]]
                batch = collate_tag_features(chunk, tokenizer.pad_token_id, max_length=max_seq_length)
                out = encoder(**batch.to(device), output_hidden_states=True)
                states = torch.stack(out.hidden_states, dim=2)  # (B, T, L+1, H)
                rows, positions, targets = [], [], []
                for r, f in enumerate(chunk):
                    for p, w in enumerate(f.word_index):
                        if w >= 0 and f.token_is_max_context[p]:  # the word's first piece, best window
                            rows.append(r)
                            positions.append(p)
                            targets.append(offsets[f.sentence_index] + w)
                if not targets:  # a window holding no word's best reading (its words read elsewhere)
                    continue
                rows_t, positions_t = torch.tensor(rows, device=device), torch.tensor(positions, device=device)
                targets_t = torch.tensor(targets)
                vectors[targets_t] = states[rows_t, positions_t].float().cpu().to(store_dtype)  # (P, L+1, H)
                filled[targets_t] = True
    finally:
        encoder.train(was_training)
    if not bool(filled.all()):  # make_tag_features guarantees one best window per word
        raise RuntimeError(f"cache_word_features: {int((~filled).sum())} words got no vector")
    return WordFeatures(vectors, offsets, tags, time.perf_counter() - start)


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """torch.set_num_threads(n) inside the block, the previous count restored after; None: no change.
    A BiLSTM tagger takes many small steps, each of which waits for every thread: on cores that
    other work shares it runs best on one (docs/fine-tuning.md)."""
    if not n:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
