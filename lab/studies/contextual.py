"""Contextual word vectors: the same word gets another vector in every sentence.

from lab.studies import contextual
senses = {"bank": {"river": ["they sat on the bank of the river ."],
                   "money": ["she took her money to the bank ."]}}
occ = contextual.word_vectors(model, tokenizer, senses)
occ.layer_names            # ["token embedding", "embeddings", "layer 1", ..., "layer L"]
occ.similarity("token embedding")   # (N, N) cosines: all 1 between occurrences of one word
occ.similarity(-1)         # the last layer: context has moved the vectors apart
occ.separation()           # per layer: mean within-sense minus mean across-sense similarity
contextual.nearest_words(model, tokenizer, "they sat on the bank of the river .", "bank", pool)
"""

# Before BERT (and ELMo) a word had one vector, whatever the sentence (word2vec, GloVe). BERT's
# input is still such a table: row `bank` of the word-embedding matrix is the same in "the bank of
# the river" and "the bank lent him money". Every layer above mixes in the other tokens through
# attention, so the output vector of "bank" depends on its sentence. This module reads one
# vector per occurrence at every depth:
#
#     "token embedding"  the word-embedding row alone: context-free, identical for every occurrence
#     "embeddings"       what layer 1 receives: token + segment + position embeddings, LayerNorm
#                        (it differs between occurrences only through the position)
#     "layer k"          the output of encoder layer k (hidden_states[k]), k = 1..L
#
# A word that the vocabulary splits into pieces ("riverbank" -> river ##bank) gets the mean of
# its pieces' vectors, at every depth; `Occurrences.pieces` says what each occurrence became.
#
# Their figures are occurrence_similarity and sense_separation in lab.figures.matplotlib_figures.

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from lab.inspect.encoding import embedding_module, encode, inference
from lab.tokenizer import clean_text


@dataclass
class SentenceStates:
    """Every token's vector at every depth for one sentence, [CLS] sentence [SEP]."""

    sentence: str
    tokens: list[str]  # T WordPiece tokens
    offsets: list[tuple[int, int]]  # (start, end) characters of each token; (0, 0) for specials
    states: torch.Tensor  # (L + 2, T, H): token embedding, embeddings, layer 1..L
    layer_names: list[str]

    def words(self, tokenizer) -> list[tuple[str, list[int]]]:
        """The sentence's words with their token positions: a word is a token that starts one and
        the "##" pieces after it; [CLS], [SEP] and punctuation are left out.
        "the riverbank ." -> [("the", [1]), ("riverbank", [2, 3])]"""
        groups: list[list[int]] = []
        for i, token in enumerate(self.tokens):
            if self.offsets[i] == (0, 0):  # [CLS] / [SEP]
                continue
            if groups and tokenizer.is_subword(token):  # a "##" piece continues the word
                groups[-1].append(i)
            else:
                groups.append([i])
        words = []
        for positions in groups:
            text = self.sentence[self.offsets[positions[0]][0] : self.offsets[positions[-1]][1]]
            if any(ch.isalnum() for ch in text):
                words.append((text, positions))
        return words

    def vector(self, positions: Sequence[int]) -> torch.Tensor:
        """(L + 2, H): the mean over the given token positions, at every depth."""
        return self.states[:, list(positions)].mean(1)


def layer_names(num_layers: int) -> list[str]:
    return ["token embedding", "embeddings"] + [f"layer {k}" for k in range(1, num_layers + 1)]


def sentence_states(model, tokenizer, sentence: str) -> SentenceStates:
    """Run one sentence through the encoder and keep every depth (see the module docstring)."""
    sentence = clean_text(sentence, "sentence")
    enc, ids, types = encode(model, tokenizer, sentence)
    encoder = getattr(model, "bert", model)  # any head: only the encoder is needed
    with inference(model) as device:
        ids, types = ids.to(device), types.to(device)
        out = encoder(ids, types, output_hidden_states=True)
        table = embedding_module(model).word_embeddings(ids)  # (1, T, H) the rows of the table
        states = torch.cat([table, *out.hidden_states])  # (L + 2, T, H)
    return SentenceStates(
        sentence=sentence,
        tokens=list(enc.tokens),
        offsets=[tuple(o) for o in enc.offsets],
        states=states.float().cpu(),
        layer_names=layer_names(len(out.hidden_states) - 1),
    )


def word_positions(states: SentenceStates, word: str) -> list[int]:
    """Token positions of the first whole-word occurrence of `word` (any case) in the sentence:
    the tokens whose characters lie inside it. "the bank ." / "bank" -> [2]."""
    match = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", states.sentence, flags=re.IGNORECASE)
    if match is None:
        raise ValueError(f"{word!r} does not occur as a word in {states.sentence!r}")
    positions = [
        i for i, (a, b) in enumerate(states.offsets) if (a, b) != (0, 0) and match.start() <= a and b <= match.end()
    ]
    if not positions:
        raise ValueError(f"{word!r} was cut off: {states.sentence!r} is longer than the model can read")
    return positions


@dataclass
class Occurrences:
    """One vector per occurrence of each word, at every depth."""

    words: list[str]  # N: the word of each occurrence
    senses: list[str]  # N: its sense (any tag the caller gave)
    sentences: list[str]  # N
    pieces: list[list[str]]  # N: the WordPiece tokens the word became there
    positions: list[list[int]]  # N: their positions in [CLS] sentence [SEP]
    vectors: torch.Tensor  # (N, L + 2, H)
    layer_names: list[str]  # L + 2 names, see the module docstring

    @property
    def labels(self) -> list[str]:
        """Short names for plots: "bank (river) 1", "bank (river) 2", "bank (money) 1", ..."""
        seen: dict[tuple[str, str], int] = {}
        out = []
        for w, s in zip(self.words, self.senses):
            seen[w, s] = seen.get((w, s), 0) + 1
            out.append(f"{w} ({s}) {seen[w, s]}")
        return out

    def layer_index(self, layer: int | str) -> int:
        """A depth by name ("token embedding", "layer 2") or by index (-1: the last layer)."""
        if isinstance(layer, str):
            if layer not in self.layer_names:
                raise ValueError(f"no layer {layer!r}; choose one of {self.layer_names}")
            return self.layer_names.index(layer)
        return range(len(self.layer_names))[layer]

    def similarity(self, layer: int | str) -> np.ndarray:
        """(N, N) cosine similarities between the occurrences at one depth."""
        v = torch.nn.functional.normalize(self.vectors[:, self.layer_index(layer)], dim=-1)  # (N, H)
        return (v @ v.T).numpy().astype(np.float64)

    def within_across(self, layer: int | str) -> tuple[float, float]:
        """(mean similarity of two occurrences of a word in the same sense, mean similarity of two
        occurrences of the word in different senses) at one depth. Pairs of different words and an
        occurrence with itself do not count. Example, bank: river 1, river 2, money 1: within =
        sim(river 1, river 2); across = mean(sim(river 1, money 1), sim(river 2, money 1))."""
        sim = self.similarity(layer)
        w, s = np.array(self.words), np.array(self.senses)
        same_word = (w[:, None] == w[None, :]) & ~np.eye(len(w), dtype=bool)  # (N, N)
        same_sense = s[:, None] == s[None, :]
        within, across = sim[same_word & same_sense], sim[same_word & ~same_sense]
        if not within.size or not across.size:
            raise ValueError("every word needs two occurrences of one sense and one of another")
        return float(within.mean()), float(across.mean())

    def nearest_same_sense(self, layer: int | str) -> float:
        """The share of occurrences whose nearest other occurrence of the same word (by cosine)
        has the same sense. With two senses of n sentences each, a random pick is right with
        probability (n - 1) / (2n - 1): 0.43 for n = 4."""
        sim = self.similarity(layer)
        w, s = np.array(self.words), np.array(self.senses)
        hits = []
        for i in range(len(w)):
            others = [j for j in range(len(w)) if j != i and w[j] == w[i]]
            if others:
                hits.append(s[max(others, key=lambda j: sim[i, j])] == s[i])
        return float(np.mean(hits))

    def separation(self) -> np.ndarray:
        """(L + 2,): within-sense minus across-sense similarity at each depth. 0: the vectors say
        nothing about the sense; larger: occurrences of one sense are closer to each other than
        to the other sense's. Exactly 0 at "token embedding", where every occurrence is alike."""
        return np.array([np.subtract(*self.within_across(k)) for k in range(len(self.layer_names))])


def word_vectors(model, tokenizer, senses: Mapping[str, Mapping[str, Sequence[str]]]) -> Occurrences:
    """Every occurrence of the words of `senses` = {word: {sense: [sentences]}}, one per sentence
    (the first time the word occurs in it), with its vector at every depth."""
    words, tags, sentences, pieces, where, vectors, names = [], [], [], [], [], [], None
    for word, by_sense in senses.items():
        for sense, texts in by_sense.items():
            for text in texts:
                states = sentence_states(model, tokenizer, text)
                positions = word_positions(states, word)
                words.append(word)
                tags.append(sense)
                sentences.append(states.sentence)
                pieces.append([states.tokens[i] for i in positions])
                where.append(positions)
                vectors.append(states.vector(positions))
                names = states.layer_names
    if not vectors:
        raise ValueError("no sentences given")
    return Occurrences(words, tags, sentences, pieces, where, torch.stack(vectors), names)


@dataclass
class Neighbour:
    word: str  # the word as written in its sentence
    sentence: str
    index: int  # which sentence of the pool
    similarity: float  # cosine with the query occurrence


def nearest_words(
    model, tokenizer, sentence: str, word: str, pool: Sequence[str], layer: int | str = -1, k: int = 8
) -> list[Neighbour]:
    """The k words of the `pool` sentences whose vectors at `layer` are nearest (cosine) to `word`
    as it occurs in `sentence`; the query occurrence itself is left out (other words of its
    sentence, if it is in the pool, are candidates). Best first."""
    query_states = sentence_states(model, tokenizer, sentence)
    query_positions = word_positions(query_states, word)
    depth = layer if isinstance(layer, int) else query_states.layer_names.index(layer)
    query = query_states.vector(query_positions)[depth]  # (H,)
    found: list[Neighbour] = []
    vectors: list[torch.Tensor] = []
    for index, text in enumerate(pool):
        states = sentence_states(model, tokenizer, text)
        for w, positions in states.words(tokenizer):
            if states.sentence == query_states.sentence and positions == query_positions:
                continue
            found.append(Neighbour(w, states.sentence, index, 0.0))
            vectors.append(states.vector(positions)[depth])  # (H,)
    if not found:
        return []
    sims = torch.nn.functional.cosine_similarity(torch.stack(vectors), query[None], dim=-1)  # (M, H) -> (M,)
    best = sims.argsort(descending=True)[:k].tolist()
    return [dataclasses.replace(found[i], similarity=float(sims[i])) for i in best]
