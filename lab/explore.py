"""Human-facing inference, shared by the dashboard and the notebooks.

    from lab import explore
    explore.fill_mask(model, tokenizer, "it is a truth universally [MASK] .", top_k=5)
    # -> [[("acknowledged", 0.41), ("known", 0.12), ...]]      one list per [MASK], best first

Every function takes a model and its tokenizer, validates the text (empty text, missing [MASK],
too many masks, text longer than the model can read) with a message that says what is wrong,
and runs the model in eval mode without gradients.
"""
from __future__ import annotations

import torch

MAX_MASKS = 20          # more [MASK]s than pre-training ever showed a 128-token sequence


class FillMaskResult(list):
    """A list with one entry per [MASK] (each a list of (token, probability), best first), plus
    what the model saw: `tokens`, `mask_positions` and `truncated` (tokens cut from the end)."""

    def __init__(self, predictions, tokens, mask_positions, truncated):
        super().__init__(predictions)
        self.tokens, self.mask_positions, self.truncated = tokens, mask_positions, truncated


def _mlm_head(model):
    head = getattr(getattr(model, "cls", None), "predictions", None)
    if head is None:
        raise ValueError(f"{type(model).__name__} has no masked-LM head; load the model as "
                         f"BertForPreTraining or BertForMaskedLM (a pre-trained checkpoint)")
    return head


def _clean(text, name="text") -> str:
    if not isinstance(text, str):
        raise ValueError(f"{name} must be a string, got {type(text).__name__}")
    text = "".join(ch for ch in text if ch in "\t\n" or (ord(ch) >= 32 and ch != "\x7f"))
    if not text.strip():
        raise ValueError(f"{name} is empty: type a sentence")
    return text


@torch.no_grad()
def fill_mask(model, tokenizer, text: str, top_k: int = 5, temperature: float = 1.0) -> FillMaskResult:
    """For each [MASK] in `text`, the top_k tokens with their probabilities.

    temperature > 1 flattens the distribution, < 1 sharpens it (logits are divided by it).
    A text longer than the model's maximum is cut at the end (result.truncated > 0).
    """
    _mlm_head(model)
    text = _clean(text)
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if not 1 <= top_k <= tokenizer.vocab_size:
        raise ValueError(f"top_k must be between 1 and {tokenizer.vocab_size}, got {top_k}")
    enc = tokenizer.encode(text, max_length=model.config.max_position_embeddings)
    ids = torch.tensor([enc.input_ids])
    positions = (ids[0] == tokenizer.mask_token_id).nonzero().flatten().tolist()
    if not positions:
        raise ValueError("there is no [MASK] in the text: write [MASK] where a word should be "
                         "predicted" + (" (it was cut off: the text is too long)" if enc.truncated else ""))
    if len(positions) > MAX_MASKS:
        raise ValueError(f"{len(positions)} [MASK] tokens: at most {MAX_MASKS} per text")
    model.eval()
    device = next(model.parameters()).device
    labels = torch.full_like(ids, -100)
    labels[0, positions] = 0                                   # logits only where the masks are
    out = model(ids.to(device), torch.tensor([enc.token_type_ids], device=device),
                mlm_labels=labels.to(device))
    probs = (out.mlm_logits.float() / temperature).softmax(-1)  # (masks, V)
    top = probs.topk(top_k, dim=-1)
    predictions = [[(tokenizer.convert_ids_to_tokens(int(i)), float(p)) for p, i in zip(ps, ix)]
                   for ps, ix in zip(top.values, top.indices)]
    return FillMaskResult(predictions, enc.tokens, positions, enc.num_truncated)
