"""What every view of lab.inspect shares: which heads a model has, text encoded within the
model's window, a forward pass without gradients (in bf16 where that is measurably faster), the [MASK]
positions and target words a user typed. Public here so explore, attribution and the studies
build on one copy; users reach the views through lab.inspect.explore."""

from __future__ import annotations

import contextlib
import time

import torch

from lab.device import PrecisionChoice, autocast, autocast_dtype, choose_precision, cpu_has_bf16_instructions
from lab.model import BertForSequenceClassification, BertForTokenClassification
from lab.tokenizer import clean_text

MAX_MASKS = 20  # more [MASK]s than pre-training ever showed a 128-token sequence
TASKS = ("fill_mask", "next_sentence", "attention", "answer", "classify", "tag", "embeddings")


# ----------------------------------------------------------------------------------------
# Which heads a model has
# ----------------------------------------------------------------------------------------
def model_tasks(model) -> set[str]:
    """The tasks of TASKS this model can serve; every BERT serves attention and embeddings."""
    tasks = {"attention", "embeddings"}
    cls = getattr(model, "cls", None)
    if getattr(cls, "predictions", None) is not None:
        tasks.add("fill_mask")
    if getattr(cls, "seq_relationship", None) is not None:
        tasks.add("next_sentence")
    if getattr(model, "qa_outputs", None) is not None:
        tasks.add("answer")
    # both classifiers have a `classifier` layer: the class says whether it reads [CLS] or every token
    if isinstance(model, BertForSequenceClassification):
        tasks.add("classify")
    if isinstance(model, BertForTokenClassification):
        tasks.add("tag")
    return tasks


def missing_head_message(model, task: str) -> str:
    """Why `model` cannot serve `task` and what to do about it ("" when it can)."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    if task in model_tasks(model):
        return ""
    name = type(model).__name__
    return {
        "fill_mask": f"this model ({name}) has no masked-LM head: pick a pre-trained model "
        f"(BertForPreTraining or BertForMaskedLM), e.g. one made with python -m lab pretrain",
        "next_sentence": f"this model ({name}) has no next-sentence head: pick a model pre-trained with "
        f"masked LM + NSP (BertForPreTraining), e.g. one made with python -m lab pretrain",
        "answer": f"this model ({name}) has no question-answering head: fine-tune one with "
        f"python -m lab finetune-qa --model MODEL --out runs/qa, or pick a QA model",
        "classify": f"this model ({name}) has no classification head: fine-tune one with "
        f"python -m lab finetune-cls --model MODEL --train TRAIN --dev DEV, "
        f"or pick a classification model",
        "tag": f"this model ({name}) has no token-classification head: fine-tune one with "
        f"python -m lab finetune-tag --model MODEL --train FILE --eval FILE --out DIR, "
        f"or pick a tagging model",
    }[task]


def require(model, task: str) -> None:
    if task not in model_tasks(model):
        raise ValueError(missing_head_message(model, task))


def mlm_head(model):
    head = getattr(getattr(model, "cls", None), "predictions", None)
    if head is None:
        raise ValueError(
            f"{type(model).__name__} has no masked-LM head; load the model as "
            f"BertForPreTraining or BertForMaskedLM (a pre-trained checkpoint)"
        )
    return head


def embedding_module(model):
    """BertEmbeddings of a head model (model.bert.embeddings) or of a bare BertModel."""
    body = getattr(model, "bert", model)
    emb = getattr(body, "embeddings", None)
    if emb is None:
        raise ValueError(f"{type(model).__name__} is not a BERT model: it has no embeddings module")
    return emb


# ----------------------------------------------------------------------------------------
# Shared plumbing: clean text, encode within the model's length, run without gradients
# ----------------------------------------------------------------------------------------
_FAST = False  # use_bf16(True): forward passes under bf16 autocast
PRECISION_PROBE = (  # what choose_bf16 times: a question and a short paragraph, as the dashboard's tabs read
    "who wrote the letter ?",
    "the letter was written in the spring by a young teacher who had moved to the city , "
    "and it was read aloud to the whole class on the first warm day of the year .",
)


def use_bf16(enabled: bool = True) -> bool:
    """Run every forward pass of this module under bf16 autocast (weights stay fp32) where the
    hardware has bf16 (CPUs with AVX512-BF16/AMX, GPUs); probabilities change in the second or
    third digit. Whether it is faster depends on the machine: choose_bf16() measures it (the
    dashboard's --precision auto). The default (and the notebooks, and the tests) compute in
    fp32. Returns whether it is on: False where the hardware has no bf16 (then fp32 is kept)."""
    global _FAST
    _FAST = bool(enabled) and (cpu_has_bf16_instructions() or torch.cuda.is_available())
    return _FAST


def fast_dtype(device) -> torch.dtype | None:
    """The autocast dtype of every forward pass here: bf16 after use_bf16(True), else None (fp32)."""
    return autocast_dtype("bf16", device) if _FAST else None


def choose_bf16(
    model, tokenizer, texts=PRECISION_PROBE, budget_s: float = 1.0, clock=time.perf_counter
) -> PrecisionChoice:
    """Time this model's encoder on `texts` in fp32 and in bf16, the plain forward and the one
    that returns attention maps (lab.device.choose_precision: none on a GPU or an AMX CPU, once
    per model shape and device in a process, within budget_s), and turn use_bf16 on exactly
    when bf16 was chosen. Returns the choice (its describe() says why, with the timings)."""
    body = getattr(model, "bert", model)
    device = next(model.parameters()).device
    _, ids, types = encode(model, tokenizer, *texts)
    ids, types = ids.to(device), types.to(device)

    def run():
        body(ids, token_type_ids=types)
        body(ids, token_type_ids=types, output_attentions=True)

    cfg = model.config
    key = ("inference", cfg.num_hidden_layers, cfg.hidden_size, cfg.intermediate_size, str(device))
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            choice = choose_precision(run, device, key, budget_s=budget_s, clock=clock)
    finally:
        model.train(was_training)
    use_bf16(choice.dtype is not None)
    return choice


@contextlib.contextmanager
def inference(model):
    """eval mode + no gradients (+ bf16 autocast after use_bf16()) for the block; yields the
    model's device; restores the mode."""
    was_training = model.training
    if was_training:  # (eval() walks the module tree: only when needed)
        model.eval()
    device = next(model.parameters()).device
    try:
        with torch.no_grad(), autocast(device, fast_dtype(device)):
            yield device
    finally:
        if was_training:
            model.train()


def encode(model, tokenizer, text_a: str, text_b: str | None = None):
    """[CLS] a [SEP] (b [SEP]), cut to the model's position table; returns (encoding, ids, types)."""
    enc = tokenizer.encode(text_a, text_b, max_length=model.config.max_position_embeddings)
    ids = torch.tensor([enc.input_ids])  # (1, T)
    types = torch.tensor([enc.token_type_ids])  # (1, T)
    return enc, ids, types


def mask_positions(
    ids: torch.Tensor, tokenizer, enc, text: str | None = None, text_pair: str | None = None
) -> list[int]:
    """The [MASK] positions in the encoded window `ids` (1, T) of `enc` = encode(model, tokenizer,
    text, text_pair). None there: a ValueError that says whether the text has none, or whether the
    model's window cut it off (then where it was, and how much to shorten the text before it)."""
    positions = (ids[0] == tokenizer.mask_token_id).nonzero().flatten().tolist()
    if not positions:
        raise ValueError(_no_mask_message(tokenizer, enc, text, text_pair))
    if len(positions) > MAX_MASKS:
        raise ValueError(f"{len(positions)} [MASK] tokens: at most {MAX_MASKS} per text")
    return positions


def _no_mask_message(tokenizer, enc, text: str | None, text_pair: str | None) -> str:
    """Why a window holds no [MASK]. E.g. a window of 128 tokens, a text of 700 with its [MASK]
    at token 690 (counting [CLS] as token 1): the window ends at token 127, then [SEP]; the
    [MASK] comes into it when at least 690 - 127 = 563 tokens before it go."""
    missing = "there is no [MASK] in the text: write [MASK] where a word should be predicted"
    if not enc.truncated or text is None:
        return missing
    full = tokenizer.encode(text, text_pair)  # uncut: where the [MASK] was
    found = [i for i, t in enumerate(full.input_ids) if t == tokenizer.mask_token_id]
    if not found:
        return missing
    limit, at = len(enc), found[0] + 1  # a cut window is exactly as long as the model reads
    fix = (
        f"shorten the text before the [MASK] by at least {at - (limit - 1):,} tokens"
        if text_pair is None
        else "shorten the text before the [MASK]"
    )
    return (
        f"the [MASK] was cut off: this model reads at most {limit:,} tokens ([CLS] and [SEP] included), "
        f"the text has {len(full):,}, and its first [MASK] is token {at:,}; {fix}, "
        f"or put the [MASK] nearer the start"
    )


def target_ids(tokenizer, targets, n_masks: int) -> torch.Tensor:
    """One vocabulary id per [MASK] from words the user typed ("Paris" -> id of "paris")."""
    if isinstance(targets, str) or len(targets) != n_masks:
        raise ValueError(f"targets must be a list of {n_masks} word(s), one per [MASK], got {targets!r}")
    ids = []
    for word in targets:
        pieces = tokenizer.tokenize(clean_text(word, "target").strip())
        if len(pieces) != 1:
            raise ValueError(
                f"target {word!r} is {len(pieces)} WordPiece tokens {pieces}; each target "
                f"must be a single token of the vocabulary"
            )
        if pieces[0] == "[UNK]":
            raise ValueError(f"target {word!r} is not in the vocabulary (it reads as [UNK]): pick another word")
        ids.append(tokenizer.convert_tokens_to_ids(pieces[0]))
    return torch.tensor(ids)
