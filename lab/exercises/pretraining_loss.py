"""Exercise `pretraining_loss` (notebook 3): BERT's pre-training loss, the mean masked-LM
cross-entropy at the labelled positions plus the mean next-sentence cross-entropy.

The checker compares with lab.model.BertForPreTraining's own loss on the same logits and with the
reference on random batches; on a mismatch it computes what each typical mistake would give and
names the one that matches. `show_loss` is the notebook's demonstration on a real model.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from lab.data.instances import SpecialIds
from lab.data.instances import mask_tokens as lab_mask_tokens
from lab.model import BertForPreTraining

from . import core
from .compare import tiny_config
from .core import Fail


def pretraining_loss(mlm_logits, mlm_labels, nsp_logits, nsp_labels):
    """BERT's pre-training loss, L = L_mlm + L_nsp (Section 3.1; Appendix A.2).

    mlm_logits: FloatTensor [B, T, V], the masked-LM head's scores over the vocabulary
    mlm_labels: LongTensor [B, T], the original token id at the chosen positions, -100 elsewhere
    nsp_logits: FloatTensor [B, 2], the next-sentence head's scores (column 0 = IsNext)
    nsp_labels: LongTensor [B], 0 = IsNext, 1 = NotNext

    L_mlm: the MEAN cross-entropy over the labelled positions only (all of the batch's labelled
    positions together; positions with -100 do not count). L_nsp: the mean cross-entropy over
    the batch. Returns a 0-dim tensor (keep it a tensor: the training loop calls backward()).
    """
    V = mlm_logits.shape[-1]
    # MLM: mean cross-entropy over the labelled positions only; ignore_index skips the -100s.
    mlm = F.cross_entropy(mlm_logits.reshape(-1, V), mlm_labels.reshape(-1), ignore_index=-100)  # (B*T, V) vs (B*T,)
    # NSP: mean cross-entropy of the [CLS] classifier over the batch (0 = IsNext, 1 = NotNext).
    nsp = F.cross_entropy(nsp_logits, nsp_labels)  # (B, 2) vs (B,)
    return mlm + nsp


def _loss_candidates(mlm_logits, mlm_labels, nsp_logits, nsp_labels) -> dict[str, tuple[float, str]]:
    """What the reference and each typical mistake give on these inputs: name -> (value, cause)."""
    V = mlm_logits.shape[-1]
    flat, lab = mlm_logits.reshape(-1, V).double(), mlm_labels.reshape(-1)
    picked = lab != -100
    ce = F.cross_entropy(flat[picked], lab[picked], reduction="none")  # (N,)
    nsp_ce = F.cross_entropy(nsp_logits.double(), nsp_labels, reduction="none")  # (B,)
    mlm, nsp = ce.mean(), nsp_ce.mean()
    double_mlm = F.cross_entropy(flat[picked].softmax(-1), lab[picked]).double()
    double_nsp = F.cross_entropy(nsp_logits.double().softmax(-1), nsp_labels)
    zero_filled = F.cross_entropy(flat, lab.clamp(min=0))  # -100 treated as class 0, mean over all
    rows = [
        F.cross_entropy(r.double()[y != -100], y[y != -100])
        for r, y in zip(mlm_logits, mlm_labels)
        if (y != -100).any()
    ]
    per_row = torch.stack(rows).mean() if rows else mlm
    swapped = F.cross_entropy(nsp_logits.double(), 1 - nsp_labels)
    all_pos = "-100 positions count in the average"
    c = {
        "reference": (mlm + nsp, ""),
        "all_positions": (
            ce.sum() / lab.numel() + nsp,
            f"your MLM loss is averaged over all B*T = {lab.numel()} positions, {all_pos} (as zeros) although only "
            f"{int(picked.sum())} are labelled: average over the labelled positions only "
            "(F.cross_entropy(..., ignore_index=-100) does it)",
        ),
        "zero_filled": (
            zero_filled + nsp,
            "the -100 labels were turned into a real class (0) and every position entered the loss: positions with "
            "label -100 must be left out, not predicted as token 0 (ignore_index=-100)",
        ),
        "sum": (ce.sum() + nsp_ce.sum(), "you SUM the cross-entropies instead of averaging them (reduction='mean')"),
        "sum_mlm": (ce.sum() + nsp, "your MLM term is a SUM over the labelled positions, not their mean"),
        "sum_nsp": (mlm + nsp_ce.sum(), "your NSP term is a SUM over the batch, not its mean"),
        "no_nsp": (mlm, "the NSP term is missing: BERT's loss is L = L_mlm + L_nsp"),
        "no_mlm": (nsp, "the MLM term is missing: BERT's loss is L = L_mlm + L_nsp"),
        "average": (
            (mlm + nsp) / 2,
            "you average the two losses; BERT adds them, L = L_mlm + L_nsp (lab.model.BertForPreTraining, Hugging "
            "Face's total_loss)",
        ),
        "nsp_swapped": (
            mlm + swapped,
            "your NSP labels are swapped: label 0 means IsNext and must be the target of nsp_logits[:, 0]",
        ),
        "double_softmax": (
            double_mlm + double_nsp,
            "softmax is applied twice: F.cross_entropy takes raw logits and applies log_softmax itself, so do not "
            "pass it probabilities",
        ),
        "double_softmax_mlm": (
            double_mlm + nsp,
            "softmax is applied twice in the MLM term: F.cross_entropy takes raw logits, not probabilities",
        ),
        "double_softmax_nsp": (
            mlm + double_nsp,
            "softmax is applied twice in the NSP term: F.cross_entropy takes raw logits, not probabilities",
        ),
        "per_row": (
            per_row + nsp,
            "you average the MLM loss per sequence first and then over sequences, so a token in a sequence with few "
            "predictions weighs more: average over all labelled tokens of the batch at once",
        ),
    }
    return {k: (float(v), cause) for k, (v, cause) in c.items()}


def _loss_cases(seed: int):
    """(description, mlm_logits, mlm_labels, nsp_logits, nsp_labels, the lab model's loss or None)."""
    gen = torch.Generator().manual_seed(4000 + seed)
    cfg = tiny_config(vocab_size=99, hidden_size=32, num_attention_heads=4, max_position_embeddings=32)
    with torch.random.fork_rng():  # the student's global random state stays as it was
        torch.manual_seed(4000 + seed)
        model = BertForPreTraining(cfg).eval()
    B, T = 3, 11
    ids = torch.randint(5, 99, (B, T), generator=gen)
    mlm_labels = torch.full((B, T), -100)
    for r, count in enumerate((3, 1, 0)):  # the last row has nothing to predict
        where = torch.randperm(T, generator=gen)[:count]
        mlm_labels[r, where] = torch.randint(5, 99, (count,), generator=gen)
    nsp_labels = torch.tensor([0, 1, 1])
    with torch.no_grad():
        full = model(ids)  # no labels: [B, T, V] logits everywhere
        lab_loss = model(ids, mlm_labels=mlm_labels, nsp_label=nsp_labels).loss
    cases = [
        (
            "the lab's BertForPreTraining on a batch of 3",
            full.mlm_logits,
            mlm_labels,
            full.nsp_logits,
            nsp_labels,
            float(lab_loss),
        )
    ]

    def random_case(what, B, T, V, counts, scale=3.0):
        logits = scale * torch.randn(B, T, V, generator=gen)
        labels = torch.full((B, T), -100)
        for r, count in enumerate(counts):
            where = torch.randperm(T, generator=gen)[:count]
            labels[r, where] = torch.randint(1, V, (count,), generator=gen)
        nsp = 2.0 * torch.randn(B, 2, generator=gen)
        return (what, logits, labels, nsp, torch.randint(0, 2, (B,), generator=gen), None)

    cases.append(random_case("random logits, 4 sequences with 1, 5, 0 and 2 labels", 4, 9, 50, (1, 5, 0, 2)))
    cases.append(random_case("a batch of one sequence of one labelled token", 1, 1, 7, (1,)))
    cases.append(random_case("random logits, 2 sequences of 16 with 12 and 3 labels", 2, 16, 31, (12, 3)))
    return cases


def _check_loss_output(out, inputs, given, what: str, details: dict) -> None:
    """A 0-dim tensor, and the inputs left as they were."""
    mlm_logits, mlm_labels, nsp_logits, nsp_labels = inputs
    if not torch.is_tensor(out):
        raise Fail(
            f"pretraining_loss returned a {type(out).__name__}, not a tensor ({what}): return the loss tensor "
            "itself (no .item()), so that loss.backward() can reach the model.",
            **details,
        )
    if out.dim() != 0:
        raise Fail(
            f"pretraining_loss returned shape {tuple(out.shape)}; it should be one number, a 0-dim tensor "
            f"({what}). reduction='none' gives a loss per position: average them.",
            **details,
        )
    for name, before, after in zip(
        ("mlm_logits", "mlm_labels", "nsp_logits", "nsp_labels"),
        (mlm_logits, mlm_labels, nsp_logits, nsp_labels),
        given,
    ):
        if not torch.equal(before, after.detach()):
            raise Fail(
                f"pretraining_loss changed its input {name} in place ({what}): compute on copies "
                "(e.g. labels.clone()), the training loop still needs them.",
                **details,
            )


def _check_loss_value(value: float, ref: float, cands: dict, lab_loss, mlm_labels, what: str, details: dict) -> None:
    """The reference's value, else the typical mistake that gives the student's."""
    if not math.isclose(value, ref, rel_tol=1e-4, abs_tol=1e-5):
        matches = [
            k for k, (v, _) in cands.items() if k != "reference" and math.isclose(value, v, rel_tol=1e-4, abs_tol=1e-5)
        ]
        where = "the lab model's loss" if lab_loss is not None else "the reference"
        if matches:
            raise Fail(
                f"Your loss is {value:.4f}, {where} is {ref:.4f} ({what}). It equals what you get when "
                f"{cands[matches[0]][1]}.",
                **details,
                mistake=matches[0],
            )
        mlm_only, nsp_only = cands["no_nsp"][0], cands["no_mlm"][0]
        raise Fail(
            f"Your loss is {value:.4f}, {where} is {ref:.4f} ({what}): it matches no typical mistake. The MLM part "
            f"alone should be {mlm_only:.4f} (mean cross-entropy over the {int((mlm_labels != -100).sum())} "
            f"labelled positions) and the NSP part {nsp_only:.4f}; their sum is the loss.",
            **details,
        )


def _check_loss_gradient(out, given, mlm_labels, what: str, details: dict) -> None:
    """The loss carries gradient, and none reaches the positions labelled -100."""
    if not out.requires_grad:
        raise Fail(
            f"Your loss has the right value but no gradient ({what}): it was detached (.item(), .detach(), "
            "torch.tensor(...) or numpy): compute it with torch operations on the logits.",
            **details,
        )
    out.backward()
    grad = given[0].grad
    stray = grad is not None and (grad[mlm_labels == -100].abs().max().item() if (mlm_labels == -100).any() else 0) > 0
    if grad is None or stray:
        raise Fail(
            f"Positions labelled -100 receive gradient ({what}): only the labelled positions may enter the MLM loss.",
            **details,
        )


def check_pretraining_loss(student, seed: int = 0):
    """Check pretraining_loss (mean MLM cross-entropy at the labelled positions + mean NSP cross-entropy).

    Inputs: the logits of the lab's BertForPreTraining (tiny config, eval mode) on a batch of 3 (one
    row with no label), compared with the model's own `out.loss`; random logits with rows holding
    different numbers of labels; a batch of one single token; 2 x 16 positions. The result must be a
    0-dim tensor within 1e-4 (relative) of the reference, must carry gradient, must leave its inputs
    unchanged, and positions labelled -100 must get zero gradient. On a mismatch the checker computes
    what each typical mistake would give (average over all positions, sum instead of mean, NSP
    missing, NSP labels swapped, softmax applied twice, per-sequence averaging, the two losses
    averaged, -100 used as class 0) and names the one that matches. Option: seed.
    """
    for what, mlm_logits, mlm_labels, nsp_logits, nsp_labels, lab_loss in _loss_cases(seed):
        cands = _loss_candidates(mlm_logits, mlm_labels, nsp_logits, nsp_labels)
        ref = cands["reference"][0] if lab_loss is None else lab_loss
        given = [x.clone() for x in (mlm_logits, mlm_labels, nsp_logits, nsp_labels)]
        given[0].requires_grad_(True)
        given[2].requires_grad_(True)
        out = core.call(student, *given, what="your pretraining_loss(mlm_logits, mlm_labels, nsp_logits, nsp_labels)")
        details = dict(
            case=what,
            mlm_logits_shape=tuple(mlm_logits.shape),
            mlm_labels=mlm_labels.tolist(),
            nsp_labels=nsp_labels.tolist(),
            expected=round(ref, 6),
        )
        _check_loss_output(out, (mlm_logits, mlm_labels, nsp_logits, nsp_labels), given, what, details)
        value = float(out.detach())
        details["yours"] = round(value, 6)
        _check_loss_value(value, ref, cands, lab_loss, mlm_labels, what, details)
        _check_loss_gradient(out, given, mlm_labels, what, details)
    return (
        "pretraining_loss equals the lab's BertForPreTraining loss and the reference on 4 batches (rows without "
        "labels, one token), with gradient only at labelled positions."
    )


def show_loss(pretraining_loss_fn, model, tokenizer, text_a: str, text_b: str, seed: int = 0) -> str:
    """The student's loss on a pre-trained model's logits for one masked pair, beside the model's own."""
    enc = tokenizer.encode(text_a, text_b)
    ids = torch.tensor([enc.input_ids])
    types = torch.tensor([enc.token_type_ids])
    special = SpecialIds.from_vocab(tokenizer.vocab)
    masked, labels = lab_mask_tokens(ids, None, special, torch.Generator().manual_seed(seed))
    nsp = torch.tensor([0])
    model.eval()
    with torch.no_grad():
        full = model(masked, token_type_ids=types)
        own = float(model(masked, token_type_ids=types, mlm_labels=labels, nsp_label=nsp).loss)
    value, problem = core.attempt(
        pretraining_loss_fn, full.mlm_logits, labels, full.nsp_logits, nsp, what="pretraining_loss"
    )
    if problem:
        return f"pretraining_loss: {problem} (the model's own loss here: {own:.4f})"
    value = float(value.detach()) if torch.is_tensor(value) else float(value)
    return (
        f"{int((labels != -100).sum())} masked positions; your loss {value:.4f}, the model's own {own:.4f} "
        f"(a model guessing uniformly would score about {math.log(tokenizer.vocab_size) + math.log(2):.2f})"
    )


EXERCISE = core.Exercise(
    name="pretraining_loss",
    title="The pre-training loss: MLM at the labelled positions + NSP",
    group="pretraining",
    checker=check_pretraining_loss,
    solution=pretraining_loss,
    imports="import torch\nimport torch.nn.functional as F  # noqa: F401 (for your code below)\n",
    hint=(
        "F.cross_entropy wants logits of shape [N, C] and targets [N]: flatten the MLM logits to [B*T, V] and the "
        "labels to [B*T]. It takes RAW logits (it applies log_softmax itself) and skips targets equal to "
        "ignore_index=-100, averaging over the rest. The NSP logits are already [B, 2]. Add the two means."
    ),
)
