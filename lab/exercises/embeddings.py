"""Exercise `embeddings` (notebook 1): BERT's input, token + segment + position embeddings, then
LayerNorm and dropout (the paper's Figure 2).

The checker loads the same random weights into the student's module and lab.model.BertEmbeddings
(and transformers' when installed) and compares them on several shapes; a difference is matched
against the typical wrong sums; train mode shows where dropout acts.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from lab.model import BertEmbeddings

from . import core
from .compare import (
    closest,
    expect_tensor,
    first_diff,
    hf_module,
    load_reference_weights,
    max_diff,
    randomise,
    tiny_config,
)
from .core import Fail


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
        B, T = input_ids.shape
        positions = torch.arange(T, device=input_ids.device)  # (T,): 0, 1, ..., T-1
        x = (
            self.word_embeddings(input_ids)  # (B, T, H)
            + self.token_type_embeddings(token_type_ids)  # (B, T, H): segment A = 0, B = 1
            + self.position_embeddings(positions)  # (T, H), the same for every row of the batch
        )
        return self.dropout(self.LayerNorm(x))  # LayerNorm first, then dropout


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


def _embedding_cases(cfg, seed: int) -> list:
    """(description, input_ids, token_type_ids or None) of the eval-mode comparisons."""
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
    return cases


def _compare_in_eval_mode(mine, ref, cases, hf) -> float:
    """The largest difference from the reference (and transformers') over the cases; a Fail with the
    likely mistake where it is beyond 1e-5."""
    worst = 0.0
    for what, ids, types in cases:
        types = torch.zeros_like(ids) if types is None else types
        call = f"your Embeddings.forward(input_ids, token_type_ids) on {what}"
        with torch.no_grad():
            want = ref(ids, types)
            got = expect_tensor(core.call(mine, ids, types, what=call), want.shape, call, "the output")
            err = max_diff(got, want)
            if err > 1e-5:
                again = core.call(mine, ids, types, what=call)
                if max_diff(again, got) > 0:
                    raise Fail(
                        f"On {what}, your embeddings change from one call to the next in eval mode: dropout is "
                        "applied even in eval mode. Use the module self.dropout (model.eval() turns it off), "
                        "not F.dropout(x, training=True).",
                        **first_diff(got, want),
                    )
                name = closest(got, _embedding_variants(ref, ids, types), 1e-4)
                why = _EMB_WHY[name] if name else "the output is none of the usual mistakes; compare with Figure 2"
                raise Fail(
                    f"On {what}, your embeddings differ from BERT's by up to {err:.3g}: {why}.",
                    input_ids=ids.tolist(),
                    token_type_ids=types.tolist(),
                    **first_diff(got, want),
                )
            worst = max(worst, err)
            if hf is not None:
                worst = max(worst, max_diff(got, hf(input_ids=ids, token_type_ids=types)))
    return worst


def _check_dropout(student, ref, seed: int, ids, types) -> tuple[float, dict]:
    """Train mode with dropout 0.5: about half the outputs zero, the rest the eval values doubled
    (dropout after the LayerNorm, in its own place). Returns (share of zeros, the statistics)."""
    cfg_drop = tiny_config(hidden_dropout_prob=0.5)
    mine = core.call(student, cfg_drop, what="your Embeddings(config)")
    load_reference_weights(mine, ref, "your Embeddings")
    with torch.no_grad():
        calm = core.call(mine.eval(), ids, types, what="your Embeddings.forward in eval mode")
        torch.manual_seed(seed)
        noisy = core.call(mine.train(), ids, types, what="your Embeddings.forward in train mode")
    zeros = float((noisy == 0).float().mean())
    kept = noisy != 0
    scaled = max_diff(noisy[kept], 2 * calm[kept]) if kept.any() else float("inf")
    stats = {"dropout_p": 0.5, "fraction_of_zeros": round(zeros, 3), "largest_kept_vs_2x_eval": round(scaled, 6)}
    if max_diff(noisy, calm) == 0:
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
    return zeros, stats


@torch.no_grad()
def check_embeddings(student, seed: int = 0):
    """Checks an Embeddings module class (Figure 2: token + segment + position embeddings,
    LayerNorm, dropout) against lab.model.BertEmbeddings (and transformers' BertEmbeddings when
    installed) with the same random weights, in eval mode on several shapes (a batch with padding
    and both segments, one token, a batch of one in segment B, a sequence as long as the position
    table); then in train mode with dropout 0.5: about half the values must be exactly zero and the
    rest the eval values doubled (dropout after the LayerNorm). Options: seed."""
    cfg = tiny_config()
    torch.manual_seed(seed)
    ref = randomise(BertEmbeddings(cfg), seed).eval()
    mine = core.call(student, cfg, what="your Embeddings(config)")
    load_reference_weights(mine, ref, "your Embeddings")
    mine.eval()
    cases = _embedding_cases(cfg, seed)
    hf = hf_module("BertEmbeddings", cfg, ref.state_dict())
    worst = _compare_in_eval_mode(mine, ref, cases, hf)
    zeros, stats = _check_dropout(student, ref, seed, cases[0][1], cases[0][2])
    also = " and transformers' BertEmbeddings" if hf is not None else ""
    return (
        f"Your Embeddings match lab.model.BertEmbeddings{also} to {worst:.1e} "
        f"on {len(cases)} input shapes (padding, both segments, one token, the full position table), and dropout "
        f"acts after the LayerNorm ({zeros:.0%} zeros at p = 0.5).",
        {"largest_difference": worst, **stats},
    )


EXERCISE = core.Exercise(
    name="embeddings",
    title="Input embeddings: token + segment + position",
    group="tokens",
    checker=check_embeddings,
    solution=Embeddings,
    imports="import torch\nfrom torch import nn\n",
    given=("__init__",),
    hint=(
        "positions = torch.arange(T) where T = input_ids.shape[1] (an nn.Embedding takes a tensor of ids; "
        "[T, H] broadcasts over the batch). Add the three embeddings, then self.LayerNorm, then self.dropout, "
        "in that order."
    ),
)
