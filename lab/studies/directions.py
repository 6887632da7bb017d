"""Who may attend to whom: BERT's, OpenAI GPT's and ELMo's attention directions (the paper's
Figure 3), run on one encoder.

    from lab.studies import directions
    directions.visibility_mask(4, "left_to_right")              # [T, T] bool: what each position sees
    out = directions.encode(model, input_ids, "left_to_right")  # .last_hidden_state [B, T, H]
    directions.influence(model, ids, "right_to_left")          # [T, T]: which inputs reach which outputs
    directions.directional_attention(model, tokenizer, ids, "left_to_right")  # explore.AttentionResult

BERT's self-attention lets every position see every other ("bidirectional"); OpenAI GPT's lets
position i see positions 0..i only ("left_to_right"); ELMo joins a left-to-right and a separately
trained "right_to_left" model. A direction is nothing but an attention mask: lab.model takes a
[B, T, T] mask (True = query i may see key j) as well as a padding mask [B, T], so the same
weights and the same forward pass serve all three directions. `direction_mask` builds that mask
(lab.data.directions, where pre-training's `--objective ltr` finds it too), `encode` runs a model's
own BertModel with it; lab.studies.language_models trains and compares language models under each
direction.
"""

from __future__ import annotations

import torch

from lab.data.directions import DIRECTIONS, direction_mask, visibility_mask
from lab.inspect.explore import AttentionResult
from lab.model import ModelOutput

# the masks live in lab.data.directions (pre-training uses them too); their names stay here
__all__ = ["DIRECTIONS", "direction_mask", "directional_attention", "encode", "influence", "visibility_mask"]


def _body(model):
    """The BertModel inside a head model (model.bert), or the model itself."""
    return model.bert if hasattr(model, "bert") else model


def encode(
    model,
    input_ids,
    direction: str = "bidirectional",
    attention_mask=None,
    token_type_ids=None,
    output_attentions: bool = False,
) -> ModelOutput:
    """The model's encoder (its own BertModel forward) under a direction: .last_hidden_state
    [B, T, H], and .attentions (L x [B, heads, T, T]) when asked for.

    attention_mask [B, T] (1 = real token) hides padding keys as usual; it is combined with
    the direction: position i sees key j only if both allow it.
    """
    mask = direction_mask(input_ids, direction, attention_mask)
    return _body(model)(input_ids, token_type_ids, attention_mask=mask, output_attentions=output_attentions)


def influence(model, input_ids, direction: str = "bidirectional") -> torch.Tensor:
    """[T, T]: entry (i, j) = how strongly input position j can change output position i.

    The gradient of output i (the last hidden state projected on a fixed random vector) with
    respect to the input vector at j (token + segment + position embeddings), its norm, each
    row scaled to sum to 1. An exact zero means position i cannot see position j through any
    layer. input_ids: [T] or [1, T].
    """
    ids = torch.as_tensor(input_ids).reshape(1, -1)  # (1, T)
    T = ids.shape[1]
    inputs = []

    def as_leaf(module, args, output):
        # A forward hook that returns a tensor replaces the module's output: the embeddings'
        # output becomes a leaf we can take gradients with respect to, even if the weights
        # are frozen.
        inputs.append(output.detach().requires_grad_(True))  # (1, T, H)
        return inputs[-1]

    was_training = model.training
    model.eval()
    hook = _body(model).embeddings.register_forward_hook(as_leaf)
    try:
        with torch.enable_grad():
            h = encode(model, ids, direction).last_hidden_state  # (1, T, H)
            x = inputs[0]  # (1, T, H)
            probe = torch.randn(h.shape[-1], generator=torch.Generator().manual_seed(0)).to(h)  # (H,)
            rows = []
            for i in range(T):
                (grad,) = torch.autograd.grad(h[0, i] @ probe, x, retain_graph=i < T - 1)  # (1, T, H)
                rows.append(grad[0].norm(dim=-1))  # (T,)
        table = torch.stack(rows).cpu()  # (T, T)
    finally:
        hook.remove()
        model.train(was_training)
    return table / table.sum(dim=1, keepdim=True).clamp_min(1e-30)


def directional_attention(model, tokenizer, input_ids, direction: str = "bidirectional") -> AttentionResult:
    """explore.AttentionResult of one chunk of ids run under `direction` (for the plots and
    head statistics of lab.inspect.explore / lab.figures.matplotlib_figures). input_ids: [T] or [1, T]."""
    ids = torch.as_tensor(input_ids).reshape(1, -1)  # (1, T)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = encode(model, ids, direction, output_attentions=True)
    finally:
        model.train(was_training)
    return AttentionResult(
        tokens=tokenizer.convert_ids_to_tokens(ids[0].tolist()),
        attentions=tuple(a.float().cpu() for a in out.attentions),
        sentence_b_start=None,
    )
