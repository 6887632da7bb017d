"""The BERT model: ids -> hidden states -> heads (Devlin et al. 2019, Section 3).

    model = BertForPreTraining(BertConfig.preset("mini"))
    out = model(input_ids, token_type_ids, attention_mask, mlm_labels=..., nsp_label=...)
    out.loss, out.mlm_logits, out.nsp_logits
    model(input_ids, predict_at=input_ids == mask_id).mlm_logits    # [N, V] at the [MASK]s only

Reading order follows the paper:
  3.0  Input representation: token + segment + position embeddings, LayerNorm, dropout.
  3.0  The encoder: L identical post-LN Transformer layers (self-attention, feed-forward), GELU.
  3.1  Pre-training heads: masked LM (tied to the input embeddings) and next sentence prediction.
  3.2  Fine-tuning heads: one extra layer, for classification ([CLS] -> pooler -> K), for
       tagging (every token -> K, Section 5.3's NER) or for span extraction (every token ->
       start and end logits).
Module and parameter names are those of Hugging Face's `modeling_bert.py` (`bert.encoder.layer.0.
attention.self.query.weight`, `cls.predictions.transform.dense.weight`, ...), so a checkpoint moves
between the two without renaming.  Shapes: B batch, T tokens, H hidden, A heads, d = H / A.
Dropout is plain nn.Dropout here; lab.training.train.train() swaps in a faster CPU version for training
(lab.training.fast_dropout: same arithmetic, no parameters, so checkpoints are the same).
What changed since BERT (pre-norm, GeGLU, rotary positions, no biases, local attention) is a
BertConfig setting; its pieces live in lab.modern, and the defaults are the paper's model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn

from lab import modern
from lab.config import BertConfig


@dataclass(frozen=True)
class ParameterCounts:
    """How many parameters a model has (BertPreTrainedModel.parameter_counts)."""

    total: int  # every parameter, each tensor once
    encoder: int  # the shared BERT body: embeddings + L layers (+ the pooler, where there is one)
    heads: int  # the task's own layers: total - encoder


@dataclass
class ModelOutput:
    """What every model returns; fields a model does not produce stay None."""

    loss: torch.Tensor | None = None
    mlm_loss: torch.Tensor | None = None
    nsp_loss: torch.Tensor | None = None
    mlm_logits: torch.Tensor | None = None  # [B, T, V], or [N, V] at the N labelled / predict_at positions
    nsp_logits: torch.Tensor | None = None  # [B, 2]: 0 = IsNext, 1 = NotNext
    logits: torch.Tensor | None = None  # [B, K] sequence classification, [B, T, K] token classification
    start_logits: torch.Tensor | None = None  # [B, T] question answering
    end_logits: torch.Tensor | None = None  # [B, T]
    last_hidden_state: torch.Tensor | None = None  # [B, T, H]
    pooler_output: torch.Tensor | None = None  # [B, H]
    hidden_states: tuple[torch.Tensor, ...] | None = None  # L+1 x [B, T, H] (embeddings first)
    attentions: tuple[torch.Tensor, ...] | None = None  # L x [B, A, T, T] (bertviz format)

    def __getitem__(self, name):
        return getattr(self, name)

    def keys(self):
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]


ACT = {"gelu": F.gelu, "relu": F.relu, "gelu_new": lambda x: F.gelu(x, approximate="tanh")}


# ----------------------------------------------------------------------------------------
# 3.0 Input representation
# ----------------------------------------------------------------------------------------
class BertEmbeddings(nn.Module):
    """input = token embedding + segment embedding + position embedding (the paper's Figure 2)."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size, padding_idx=cfg.pad_token_id)
        # rotary positions (lab.modern) turn q and k instead; type_vocab_size 0: no segments
        self.position_embeddings = (
            nn.Embedding(cfg.max_position_embeddings, cfg.hidden_size)
            if cfg.position_embedding_type == "absolute"
            else None
        )
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, cfg.hidden_size) if cfg.type_vocab_size else None
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids):
        T = input_ids.shape[1]
        x = self.word_embeddings(input_ids)  # (B, T, H)
        if self.token_type_embeddings is not None:
            x = x + self.token_type_embeddings(token_type_ids)  # (B, T, H) segment A=0 / B=1
        if self.position_embeddings is not None:
            positions = torch.arange(T, device=input_ids.device)  # (T,) learned, not sinusoidal
            x = x + self.position_embeddings(positions)  # (T, H) broadcast over B
        return self.dropout(self.LayerNorm(x))


# ----------------------------------------------------------------------------------------
# 3.0 The encoder: multi-head self-attention + feed-forward, each wrapped as LayerNorm(x + f(x))
# ----------------------------------------------------------------------------------------
class BertSelfAttention(nn.Module):
    """softmax(Q K^T / sqrt(d) + mask) V, for A heads in parallel.

    Two paths compute the same thing: PyTorch's fused `scaled_dot_product_attention` (fast; used
    for training and plain inference) and an explicit softmax that also returns the attention
    probabilities (used only when they are asked for, e.g. for bertviz).
    """

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.num_heads, self.head_size = cfg.num_attention_heads, cfg.head_size
        self.query = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=cfg.bias)
        self.key = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=cfg.bias)
        self.value = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.attention_probs_dropout_prob)

    def forward(self, x, mask=None, head_mask=None, output_attentions=False, rope=None):
        # x (B, T, H); mask (B, 1, 1, T) bool, True = may attend; head_mask 1 keep / 0 silence,
        # (A,) for the whole batch or (B, A) per example (one ablation per row of a batch);
        # rope: (cos, sin) (T, d) for rotary positions (lab.modern), None with a position table
        B, T, H = x.shape
        if head_mask is not None:
            head_mask = head_mask.reshape(-1, self.num_heads, 1, 1)  # (1 or B, A, 1, 1)
        # (B, T, H) -> (B, T, A, d) -> (B, A, T, d): each head works on its own d-slice
        q = self.query(x).view(B, T, self.num_heads, self.head_size).transpose(1, 2)
        k = self.key(x).view(B, T, self.num_heads, self.head_size).transpose(1, 2)
        v = self.value(x).view(B, T, self.num_heads, self.head_size).transpose(1, 2)
        if rope is not None:
            q, k = modern.apply_rotary(q, k, *rope)
        probs = None
        # the explicit path: when the maps are asked for, or for attention dropout on a CPU
        # (PyTorch's fused CPU kernel has no dropout and falls back to slower arithmetic)
        cpu_dropout = self.training and self.dropout.p > 0 and x.device.type == "cpu"
        if output_attentions or cpu_dropout:
            q = q * (1.0 / math.sqrt(self.head_size))  # scaling q is T/d times cheaper than the scores
            scores = q @ k.transpose(-1, -2)  # (B, A, T, T)
            if mask is not None:  # padded keys get -inf-like scores, hence ~0 probability
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            probs = scores.softmax(dim=-1)  # rows sum to 1
            if head_mask is not None:
                probs = probs * head_mask.to(probs.dtype)
            # dropout on the probabilities in v's precision (bf16 under autocast: half the traffic)
            ctx = self.dropout(probs.to(v.dtype)) @ v  # (B, A, T, d)
            probs = probs if output_attentions else None
        else:
            ctx = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=self.dropout.p if self.training else 0.0
            )  # GPU: fused dropout
            if head_mask is not None:
                # head h's output is probs_h @ v_h, so scaling probs_h by m_h == scaling ctx_h by m_h
                ctx = ctx * head_mask.to(ctx.dtype)
        ctx = ctx.transpose(1, 2).reshape(B, T, H)  # (B, A, T, d) -> (B, T, A*d): heads concatenated
        return ctx, probs


class BertAddNorm(nn.Module):
    """Post-LN residual: LayerNorm(residual + dropout(dense(x))). HF's BertSelfOutput / BertOutput."""

    def __init__(self, cfg: BertConfig, d_in: int):
        super().__init__()
        self.dense = nn.Linear(d_in, cfg.hidden_size, bias=cfg.bias)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.hidden_dropout_prob)

    def forward(self, x, residual):
        return self.LayerNorm(residual + self.dropout(self.dense(x)))


class BertAttention(nn.Module):
    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(cfg)  # HF's name: ...attention.self.query
        self.output = BertAddNorm(cfg, cfg.hidden_size)

    def forward(self, x, mask=None, head_mask=None, output_attentions=False, rope=None):
        ctx, probs = self.self(x, mask, head_mask, output_attentions, rope)
        return self.output(ctx, x), probs  # (B, T, H)


class BertIntermediate(nn.Module):
    """First half of the position-wise feed-forward network: H -> 4H, GELU.

    feed_forward "glu" (lab.modern): H -> 2I, split into value and gate, act(value) * gate -> I."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.glu = cfg.feed_forward == "glu"
        self.dense = nn.Linear(cfg.hidden_size, cfg.intermediate_size * (2 if self.glu else 1), bias=cfg.bias)
        self.act = ACT[cfg.hidden_act]

    def forward(self, x):
        if self.glu:
            value, gate = self.dense(x).chunk(2, dim=-1)  # (B, T, I) each
            return self.act(value) * gate
        return self.act(self.dense(x))  # (B, T, 4H)


class BertLayer(nn.Module):
    """One encoder layer: x = LN(x + Attn(x)); x = LN(x + FFN(x))."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.attention = BertAttention(cfg)
        self.intermediate = BertIntermediate(cfg)
        self.output = BertAddNorm(cfg, cfg.intermediate_size)  # 4H -> H, + residual, LayerNorm

    def forward(self, x, mask=None, head_mask=None, output_attentions=False, rope=None):
        x, probs = self.attention(x, mask, head_mask, output_attentions, rope)
        return self.output(self.intermediate(x), x), probs


class BertEncoder(nn.Module):
    """L layers; with the settings of lab.modern also the rotary tables, the local layers' mask
    and (pre-norm) the final norm."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.config = cfg
        self.layer = nn.ModuleList(
            modern.PreNormLayer(
                BertAttention(cfg), BertIntermediate(cfg), BertAddNorm(cfg, cfg.intermediate_size), i == 0
            )
            if cfg.norm_position == "pre"
            else BertLayer(cfg)
            for i in range(cfg.num_hidden_layers)
        )
        self.rotary = modern.Rotary(cfg) if cfg.position_embedding_type == "rotary" else None
        pre = cfg.norm_position == "pre"
        self.final_norm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps, bias=cfg.bias) if pre else None

    def forward(self, x, mask=None, head_mask=None, output_attentions=False, output_hidden_states=False):
        cfg, T = self.config, x.shape[1]
        rope = self.rotary(T, x.device) if self.rotary is not None else None  # {global?: (cos, sin)}
        local = modern.local_mask(T, cfg.local_attention, mask, x.device) if cfg.local_attention else None
        hidden, attentions = [x], []
        for i, layer in enumerate(self.layer):
            is_global = cfg.is_global_layer(i)
            x, probs = layer(
                x,
                mask if is_global else local,
                None if head_mask is None else head_mask[i],
                output_attentions,
                None if rope is None else rope[is_global],
            )
            hidden.append(x)
            attentions.append(probs)
        if self.final_norm is not None:  # pre-norm: the last layer's sum, normalised once
            x = hidden[-1] = self.final_norm(x)
        return x, (tuple(hidden) if output_hidden_states else None), (tuple(attentions) if output_attentions else None)


class BertPooler(nn.Module):
    """pooled = tanh(W h_[CLS] + b): the sentence-level vector used by NSP and classification."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=cfg.bias)

    def forward(self, hidden):
        return torch.tanh(self.dense(hidden[:, 0]))  # (B, T, H) -> [CLS] (B, H)


# ----------------------------------------------------------------------------------------
# The shared body and the model classes
# ----------------------------------------------------------------------------------------
class BertPreTrainedModel(nn.Module):
    """Common plumbing: weight init, the encoder call, input checks. Subclasses add one head."""

    base_model_prefix = "bert"
    label_names: tuple[str, ...] = ()

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.config = cfg
        # what a fine-tuned model was trained with (its task_config.json: windows, decoding, data),
        # set by lab.load so that explore reads text as the model was trained to; {} otherwise
        self.task_settings: dict = {}

    def init_weights(self):
        """BERT's init: N(0, 0.02) weights, zero biases, LayerNorm = identity, [PAD] row zero.

        Called once, at the end of the outermost model's constructor. A tied parameter is
        initialised by its first owner only: the MLM decoder's weight *is* the word embedding
        matrix, so drawing it again would overwrite the embeddings (and their zero [PAD] row)."""
        std = self.config.initializer_range
        done: set[int] = set()  # ids of parameters already drawn
        for m in self.modules():
            if isinstance(m, nn.Linear):
                if id(m.weight) not in done:
                    nn.init.normal_(m.weight, 0.0, std)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Embedding):
                done.add(id(m.weight))
                nn.init.normal_(m.weight, 0.0, std)
                if m.padding_idx is not None:
                    with torch.no_grad():
                        m.weight[m.padding_idx].zero_()
            elif isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def num_parameters(self, trainable_only: bool = False) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    def parameter_counts(self) -> ParameterCounts:
        """The model's parameters counted from its own tensors, each tensor once (the masked-LM
        decoder's weight is the word embedding matrix: it counts once, in the encoder).

        encoder: the shared BERT body, what the paper counts (embeddings, the L layers, and the
        pooler when this model has one: a tagger or a QA model has none); heads: the rest, the
        task's own layers. So encoder + heads == total, and encoder <= total."""
        body = getattr(self, self.base_model_prefix, self)  # a bare BertModel is its own body
        total = self.num_parameters()
        encoder = sum(p.numel() for p in body.parameters())
        return ParameterCounts(total=total, encoder=encoder, heads=total - encoder)


def _check_inputs(cfg: BertConfig, input_ids, token_type_ids, attention_mask):
    """Clear messages for the mistakes torch would report as an index error deep inside."""
    if not torch.is_tensor(input_ids) or input_ids.dim() != 2:
        raise ValueError(
            f"input_ids must be a 2-D tensor [batch, tokens], got "
            f"{tuple(input_ids.shape) if torch.is_tensor(input_ids) else type(input_ids).__name__}"
        )
    B, T = input_ids.shape
    if T == 0 or B == 0:
        raise ValueError("input_ids is empty: nothing to encode (was the text empty?)")
    if T > cfg.max_position_embeddings:
        raise ValueError(
            f"sequence of {T} tokens is longer than this model's maximum of "
            f"{cfg.max_position_embeddings} (max_position_embeddings); truncate it"
        )
    if token_type_ids is not None and tuple(token_type_ids.shape) != (B, T):
        raise ValueError(f"token_type_ids has shape {tuple(token_type_ids.shape)}, expected {(B, T)} like input_ids")
    if attention_mask is not None and tuple(attention_mask.shape) not in ((B, T), (B, T, T), (B, 1, T, T)):
        raise ValueError(
            f"attention_mask has shape {tuple(attention_mask.shape)}; expected {(B, T)} "
            f"(padding), {(B, T, T)} or {(B, 1, T, T)} (which query may see which key)"
        )
    if input_ids.device.type != "cpu":  # value checks would make the host wait for the GPU
        return
    lo, hi = int(input_ids.min()), int(input_ids.max())
    if lo < 0 or hi >= cfg.vocab_size:
        bad = lo if lo < 0 else hi
        where = (input_ids == bad).nonzero()[0].tolist()
        raise ValueError(
            f"token id {bad} at position {where} is outside the vocabulary "
            f"(vocab_size {cfg.vocab_size}); was the text encoded with another tokenizer?"
        )
    if (
        token_type_ids is not None
        and cfg.type_vocab_size
        and (int(token_type_ids.min()) < 0 or int(token_type_ids.max()) >= cfg.type_vocab_size)
    ):
        raise ValueError(f"token_type_ids must be in [0, {cfg.type_vocab_size}) (segment A=0, B=1)")


class BertModel(BertPreTrainedModel):
    """The encoder alone: embeddings -> L layers -> (last hidden states, pooled [CLS])."""

    def __init__(self, cfg: BertConfig, add_pooling_layer: bool = True, init: bool = True):
        super().__init__(cfg)
        self.embeddings = BertEmbeddings(cfg)
        self.encoder = BertEncoder(cfg)
        self.pooler = BertPooler(cfg) if add_pooling_layer else None
        if init:  # a head model initialises everything once, itself
            self.init_weights()

    @staticmethod
    def key_mask(attention_mask, compiling: bool = False):
        """The attention mask in the form every layer uses: bool, True = may attend, broadcast
        over heads. Three shapes are accepted:
          [B, T]        1 = real token, 0 = padding: the same key mask for every query position
                        -> (B, 1, 1, T)
          [B, T, T]     entry (i, j): may query i see key j (e.g. left-to-right, GPT's mask)
                        -> (B, 1, T, T)
          [B, 1, T, T]  the same, already broadcast over heads
        A fully visible [B, T] mask on the CPU becomes None, which lets SDPA pick its fastest
        kernel (checked on the host only where that costs no device synchronisation)."""
        if attention_mask is None:
            return None
        if attention_mask.dim() == 2:
            if not compiling and attention_mask.device.type == "cpu" and bool(attention_mask.all()):
                return None
            return attention_mask.bool()[:, None, None, :]  # (B, 1, 1, T)
        if attention_mask.dim() == 3:
            return attention_mask.bool()[:, None]  # (B, 1, T, T)
        return attention_mask.bool()  # (B, 1, T, T)

    def forward(
        self,
        input_ids,
        token_type_ids=None,
        attention_mask=None,
        output_attentions=False,
        output_hidden_states=False,
        head_mask=None,
    ) -> ModelOutput:
        cfg = self.config
        compiling = torch.compiler.is_compiling()
        if not compiling:  # data-dependent checks would break a compiled graph
            _check_inputs(cfg, input_ids, token_type_ids, attention_mask)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        mask = self.key_mask(attention_mask, compiling)
        if head_mask is not None:
            head_mask = torch.as_tensor(head_mask, dtype=torch.float32, device=input_ids.device)
            L, A, B = cfg.num_hidden_layers, cfg.num_attention_heads, input_ids.shape[0]
            if head_mask.dim() == 1:  # (A,) -> the same for every layer
                head_mask = head_mask.expand(L, -1)
            # (L, A): one mask for the whole batch; (L, B, A): one per example, e.g. B copies of a
            # sentence with a different head silenced in each (head ablation in one forward pass)
            if tuple(head_mask.shape) not in ((L, A), (L, B, A)):
                raise ValueError(
                    f"head_mask must have shape [heads] = {[A]}, [layers, heads] = {[L, A]} "
                    f"or [layers, batch, heads] = {[L, B, A]}, got {list(head_mask.shape)}"
                )
        x = self.embeddings(input_ids, token_type_ids)  # (B, T, H)
        x, hidden, attentions = self.encoder(x, mask, head_mask, output_attentions, output_hidden_states)
        return ModelOutput(
            last_hidden_state=x,
            hidden_states=hidden,
            attentions=attentions,
            pooler_output=self.pooler(x) if self.pooler is not None else None,
        )


class _HeadModel(BertPreTrainedModel):
    """A head on one shared `self.bert`; subclasses implement `head(out, **labels)`."""

    head_needs_hidden_states = False  # True: the head reads every layer's output

    def __init__(self, cfg: BertConfig, add_pooling_layer: bool = True):
        super().__init__(cfg)
        self.bert = BertModel(cfg, add_pooling_layer=add_pooling_layer, init=False)

    def forward(
        self,
        input_ids,
        token_type_ids=None,
        attention_mask=None,
        output_attentions=False,
        output_hidden_states=False,
        head_mask=None,
        **labels,
    ) -> ModelOutput:
        """The encoder, then the head. `labels` are the model's label_names; out.loss is computed
        only when they are given (logits always)."""
        return self._encode_and_head(
            input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states, head_mask, labels
        )

    def _encode_and_head(
        self,
        input_ids,
        token_type_ids,
        attention_mask,
        output_attentions,
        output_hidden_states,
        head_mask,
        labels: dict,
        **options,
    ) -> ModelOutput:
        unknown = set(labels) - set(self.label_names)
        if unknown:
            raise TypeError(f"{type(self).__name__} takes labels {list(self.label_names)}, not {sorted(unknown)}")
        out = self.bert(
            input_ids,
            token_type_ids,
            attention_mask,
            output_attentions,
            output_hidden_states or self.head_needs_hidden_states,
            head_mask,
        )
        self.head(out, **labels, **options)  # fills logits (and the loss when labels are given) into `out`
        return out


class _MaskedLMModel(_HeadModel):
    """A model with the masked-LM head (BertForPreTraining, BertForMaskedLM)."""

    def forward(
        self,
        input_ids,
        token_type_ids=None,
        attention_mask=None,
        output_attentions=False,
        output_hidden_states=False,
        head_mask=None,
        predict_at=None,
        **labels,
    ) -> ModelOutput:
        """The encoder, then the heads. Where the vocabulary logits are computed (each position
        costs a V x H product, the largest part of a small model's forward pass):
          neither mlm_labels nor predict_at   everywhere: out.mlm_logits [B, T, V]
          mlm_labels [B, T] (-100 = ignore)   at the labelled positions: out.mlm_logits [N, V],
                                              and out.mlm_loss / out.loss (training, evaluation)
          predict_at [B, T] bool              where it is True: out.mlm_logits [N, V] and no loss
                                              (inference: e.g. only at the [MASK]s of a query)
        The N rows come in row-major order (row 0's positions left to right, then row 1's...),
        the order of `logits[predict_at]` on the full [B, T, V] logits. Give mlm_labels or
        predict_at, not both: labels already say where to predict.
        """
        return self._encode_and_head(
            input_ids,
            token_type_ids,
            attention_mask,
            output_attentions,
            output_hidden_states,
            head_mask,
            labels,
            predict_at=predict_at,
        )


# ----------------------------------------------------------------------------------------
# 3.1 Pre-training heads
# ----------------------------------------------------------------------------------------
class BertPredictionHeadTransform(nn.Module):
    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=cfg.bias)
        self.act = ACT[cfg.hidden_act]
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps, bias=cfg.bias)

    def forward(self, x):
        return self.LayerNorm(self.act(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    """Masked LM: dense -> GELU -> LayerNorm -> x E^T + b, with E the input word embeddings.

    The output projection is *tied* to the input embedding matrix: `decoder.weight` is the very
    Parameter `bert.embeddings.word_embeddings.weight` (no extra V x H weights; a gradient
    from either use updates the one matrix, as in the paper and in transformers). Only the
    per-word bias is the head's own (`cls.predictions.bias`, which `decoder.bias` also names,
    as transformers does). A checkpoint therefore stores the matrix once (lab.checkpoint
    skips parameters that another name already holds).
    """

    def __init__(self, cfg: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        self.transform = BertPredictionHeadTransform(cfg)
        self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        self.decoder = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.decoder.weight = word_embeddings.weight  # shared Parameter: (V, H)
        self.decoder.bias = self.bias  # shared Parameter: (V,)

    def forward(self, x):
        return self.decoder(self.transform(x))  # (..., H) -> (..., V)


class BertPreTrainingHeads(nn.Module):
    """HF's `cls` module: `cls.predictions` (MLM) and, for pre-training, `cls.seq_relationship` (NSP)."""

    def __init__(self, cfg: BertConfig, word_embeddings: nn.Embedding, nsp: bool):
        super().__init__()
        self.predictions = BertLMPredictionHead(cfg, word_embeddings)
        self.seq_relationship = nn.Linear(cfg.hidden_size, 2) if nsp else None


def _mlm(cls_head: BertPreTrainingHeads, out: ModelOutput, mlm_labels, predict_at=None):
    """MLM logits, and their loss when labels are given. With labels, logits only where a label
    is set (Google's gather_indexes); with predict_at, only where it is True (no loss).

    Example: T=128 with 20 masked tokens -> the V-way projection runs on 20 vectors instead of
    128, the largest saving of pre-training on a CPU.
    """
    h = out.last_hidden_state  # (B, T, H)
    if mlm_labels is not None and predict_at is not None:
        raise ValueError("give mlm_labels or predict_at, not both: the labels already say where to predict")
    if mlm_labels is None and predict_at is None:
        out.mlm_logits = cls_head.predictions(h)  # (B, T, V)
        return None
    if predict_at is not None and tuple(predict_at.shape) != tuple(h.shape[:2]):
        raise ValueError(
            f"predict_at has shape {tuple(predict_at.shape)}, expected {tuple(h.shape[:2])} "
            f"like input_ids (True where vocabulary logits are wanted)"
        )
    picked = predict_at.bool() if mlm_labels is None else mlm_labels != -100  # (B, T) bool
    out.mlm_logits = cls_head.predictions(h[picked])  # (N, V), N = picked.sum()
    if mlm_labels is None:  # predict_at: logits only
        return None
    if out.mlm_logits.shape[0] == 0:  # nothing masked: zero loss
        return out.mlm_logits.sum() * 0.0
    return F.cross_entropy(out.mlm_logits, mlm_labels[picked])


class BertForPreTraining(_MaskedLMModel):
    """BERT with both pre-training heads: masked LM + next sentence prediction."""

    label_names = ("mlm_labels", "nsp_label")

    def __init__(self, cfg: BertConfig):
        super().__init__(cfg)
        self.cls = BertPreTrainingHeads(cfg, self.bert.embeddings.word_embeddings, nsp=True)
        self.init_weights()

    def head(self, out: ModelOutput, mlm_labels=None, nsp_label=None, predict_at=None):
        out.mlm_loss = _mlm(self.cls, out, mlm_labels, predict_at)
        out.nsp_logits = self.cls.seq_relationship(out.pooler_output)  # (B, 2)
        if nsp_label is not None:
            out.nsp_loss = F.cross_entropy(out.nsp_logits.float(), nsp_label)
        losses = [x for x in (out.mlm_loss, out.nsp_loss) if x is not None]
        out.loss = sum(losses) if losses else None  # L = L_mlm + L_nsp


class BertForMaskedLM(_MaskedLMModel):
    """BERT with the masked-LM head only (no pooler, as in transformers)."""

    label_names = ("mlm_labels",)

    def __init__(self, cfg: BertConfig):
        super().__init__(cfg, add_pooling_layer=False)
        self.cls = BertPreTrainingHeads(cfg, self.bert.embeddings.word_embeddings, nsp=False)
        self.init_weights()

    def head(self, out: ModelOutput, mlm_labels=None, predict_at=None):
        out.loss = out.mlm_loss = _mlm(self.cls, out, mlm_labels, predict_at)


# ----------------------------------------------------------------------------------------
# 3.2 Fine-tuning heads: one extra layer each
# ----------------------------------------------------------------------------------------
class BertForSequenceClassification(_HeadModel):
    """[CLS] -> pooler -> dropout -> linear W in R^{K x H} -> softmax over K labels.

    With config.classifier_layers = N > 1 the linear layer reads the [CLS] vectors of the last N
    layers, concatenated (K x N*H), instead of the pooled one: the paper's feature-based
    approach (Section 5.3: its best frozen-BERT result concatenated the last four layers).
    """

    label_names = ("labels",)

    def __init__(self, cfg: BertConfig):
        super().__init__(cfg)
        p = cfg.classifier_dropout if cfg.classifier_dropout is not None else cfg.hidden_dropout_prob
        self.dropout = nn.Dropout(p)
        self.classifier = nn.Linear(cfg.classifier_layers * cfg.hidden_size, cfg.num_labels)
        self.head_needs_hidden_states = cfg.classifier_layers > 1
        self.init_weights()

    def head(self, out: ModelOutput, labels=None):
        n = self.config.classifier_layers
        if n == 1:
            features = out.pooler_output  # (B, H)
        else:  # hidden_states: embeddings + L layers; take [CLS] (position 0) of the last n
            features = torch.cat([h[:, 0] for h in out.hidden_states[-n:]], dim=-1)  # (B, n*H)
        out.logits = self.classifier(self.dropout(features))  # (B, K)
        if labels is not None:
            out.loss = F.cross_entropy(out.logits.float(), labels)


class BertForTokenClassification(_HeadModel):
    """Every token vector -> dropout -> linear W in R^{K x H}: one tag per token (NER, POS).

    The paper's tagging head (Section 5.3): each word's label sits on its first WordPiece, the
    other pieces get label -100 and are ignored by the loss (lab.data.tagging builds such labels). No
    pooler, as in transformers (add_pooling_layer=False): the [CLS] summary is not used.
    With config.classifier_layers = N > 1 each token's vectors from the last N layers are
    concatenated (K x N*H): the feature-based approach of the paper's Table 7 (best: last four).
    """

    label_names = ("labels",)

    def __init__(self, cfg: BertConfig):
        super().__init__(cfg, add_pooling_layer=False)
        p = cfg.classifier_dropout if cfg.classifier_dropout is not None else cfg.hidden_dropout_prob
        self.dropout = nn.Dropout(p)
        self.classifier = nn.Linear(cfg.classifier_layers * cfg.hidden_size, cfg.num_labels)
        self.head_needs_hidden_states = cfg.classifier_layers > 1
        self.init_weights()

    def head(self, out: ModelOutput, labels=None):
        n = self.config.classifier_layers
        if n == 1:
            features = out.last_hidden_state  # (B, T, H)
        else:  # hidden_states: embeddings + L layers; every token of the last n, side by side
            features = torch.cat(out.hidden_states[-n:], dim=-1)  # (B, T, n*H)
        out.logits = self.classifier(self.dropout(features))  # (B, T, K)
        if labels is not None:
            # mean cross-entropy over the labelled tokens only; labels [B, T] with -100 = ignore.
            # Example: labels [[-100, 3, -100, 0, -100]] ([CLS] Jo ##hn runs [SEP]) -> 2 terms.
            # sum / count (count at least 1) is transformers' mean, and 0 rather than NaN for a
            # batch with no label at all (F.cross_entropy's mean would divide by zero)
            K = out.logits.shape[-1]
            flat = labels.reshape(-1)  # (B*T,)
            total = F.cross_entropy(out.logits.float().reshape(-1, K), flat, ignore_index=-100, reduction="sum")
            out.loss = total / (flat != -100).sum().clamp(min=1)


class BertForQuestionAnswering(_HeadModel):
    """Every token vector -> (start logit, end logit); the answer is the best span start..end."""

    label_names = ("start_positions", "end_positions")

    def __init__(self, cfg: BertConfig):
        super().__init__(cfg, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(cfg.hidden_size, 2)
        self.init_weights()

    def head(self, out: ModelOutput, start_positions=None, end_positions=None):
        logits = self.qa_outputs(out.last_hidden_state)  # (B, T, 2)
        out.start_logits, out.end_logits = logits[..., 0], logits[..., 1]  # (B, T) each
        if start_positions is not None and end_positions is not None:
            # L = (CE(start) + CE(end)) / 2; a window without the answer points both at [CLS] (0)
            out.loss = (
                F.cross_entropy(out.start_logits.float(), start_positions)
                + F.cross_entropy(out.end_logits.float(), end_positions)
            ) / 2


MODEL_CLASSES = {
    c.__name__: c
    for c in (
        BertModel,
        BertForPreTraining,
        BertForMaskedLM,
        BertForSequenceClassification,
        BertForTokenClassification,
        BertForQuestionAnswering,
    )
}
