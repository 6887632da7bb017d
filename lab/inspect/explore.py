"""Human-facing inference, shared by the dashboard (app.py) and the notebooks.

    from lab.inspect import explore
    explore.fill_mask(model, tokenizer, "it is a truth universally [MASK] .", top_k=5)
    # -> [[("acknowledged", 0.41), ("known", 0.12), ...]]      one list per [MASK], best first

What lives here, in the order of the paper:
    corruption_preview(tokenizer, text)      what pre-training feeds the model: 15%, 80/10/10
    corruption_tally(tokenizer, text)        ... and the 80/10/10 split over many draws of it
    embeddings(model, tokenizer, a, b)       input = token + segment + position (Figure 2)
    trace(model, tokenizer, a, b)            one forward pass as its ordered steps, each with its
                                             values, formula and section (lab.inspect.trace)
    fill_mask(model, tokenizer, text)        masked-LM predictions at each [MASK]
    logit_lens(model, tokenizer, text)       the same head applied to every layer's vector at each
                                             [MASK]: the guess at every layer (a logit lens)
    next_sentence(model, tokenizer, a, b)    P(IsNext) from the NSP head
    attributions(model, tokenizer, a, b)     what the answer rests on: one score per token for a
                                             classifier's label, a QA span, a [MASK]'s guess or
                                             NSP (integrated gradients; lab.inspect.attribution)
    attention(model, tokenizer, a, b)        every head's attention map (bertviz format) and
                                             AttentionResult.head_stats() (Clark et al. 2019)
    queries_and_keys(model, tokenizer, a, b) the same plus every head's query and key vectors
                                             (bertviz's neuron view, Vig 2019)
    ablate_heads(model, tokenizer, text)     silence each head in turn (Michel et al. 2019)
    classify(model, tokenizer, text, pair)   {label: probability} from a classification head
    answer(model, tokenizer, question, ctx)  extractive QA spans over doc-stride windows
    tag(model, tokenizer, words_or_text)     a tag per word (NER, POS), read from its first sub-token
    checkpoint_predictions(run_dir, text)    fill_mask at every snapshot of a run: watch BERT learn
    probe_layers(model, tok, ...)            a linear probe per layer: what each layer knows (lab.inspect.probing)
    model_tasks(model), missing_head_message(model, task)   which of these a model can serve
    use_bf16(True)                           bf16 autocast for every forward pass (the dashboard's speed)
    choose_bf16(model, tokenizer)            ... only where bf16 is measurably faster here (timed once)

Every function validates its text (empty text, control characters only, missing [MASK], the
wrong kind of model) with a ValueError that says what is wrong and how to fix it, cuts text
longer than the model can read (and says how much it cut), runs the model in eval mode
without gradients, puts the model's train/eval mode back, and returns plain CPU floats/tensors.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from lab.checkpoint import load, qa_lengths, tag_settings
from lab.data.instances import SpecialIds, mask_tokens
from lab.data.squad import (
    MAX_ANSWER_LENGTH,
    N_BEST,
    QA_WINDOWS,
    Example,
    collate_features,
    decode_spans,
    doc_windows,
    make_features,
)
from lab.data.tagging import word_pieces
from lab.files import has_tokenizer_files
from lab.inference import predict_tags
from lab.inspect.attribution import attributions
from lab.inspect.encoding import (
    MAX_MASKS,
    TASKS,
    choose_bf16,
    embedding_module,
    encode,
    fast_dtype,
    inference,
    mask_positions,
    missing_head_message,
    mlm_head,
    model_tasks,
    require,
    target_ids,
    use_bf16,
)
from lab.inspect.probing import probe_layers  # what each layer knows
from lab.inspect.results import (
    AblationResult,
    AnswerResult,
    AttentionResult,
    CorruptionPreview,
    EmbeddingResult,
    FillMaskResult,
    LogitLensResult,
    QueryKeyResult,
    TaggedWord,
    TagResult,
)
from lab.inspect.trace import TraceResult, TraceStep, trace  # one forward pass, every operation
from lab.model import BertSelfAttention
from lab.modern import apply_rotary
from lab.run_files import checkpoints
from lab.tokenizer import Tokenizer, clean_text

__all__ = [  # the views, their results, and which views a model can serve
    "corruption_preview",
    "corruption_tally",
    "embeddings",
    "trace",
    "fill_mask",
    "logit_lens",
    "next_sentence",
    "attributions",
    "attention",
    "queries_and_keys",
    "ablate_heads",
    "classify",
    "answer",
    "split_words",
    "tag",
    "checkpoint_predictions",
    "probe_layers",
    "model_tasks",
    "missing_head_message",
    "use_bf16",
    "choose_bf16",
    "TASKS",
    "MAX_MASKS",
    "TAG_MAX_SEQ_LENGTH",
    "TAG_DECODING",
    "QA_WINDOWS",
    "N_BEST",
    "MAX_ANSWER_LENGTH",
    "answer_settings",
    "tag_window_settings",
    "AblationResult",
    "AnswerResult",
    "AttentionResult",
    "CorruptionPreview",
    "EmbeddingResult",
    "FillMaskResult",
    "LogitLensResult",
    "QueryKeyResult",
    "TagResult",
    "TaggedWord",
    "TraceResult",
    "TraceStep",
]


# ----------------------------------------------------------------------------------------
# Pre-training, seen from the outside
# ----------------------------------------------------------------------------------------
def _corrupt(tokenizer, text, text_b, seed, mlm_probability, max_predictions, max_length, draws=1):
    """`draws` corruptions of one text by pre-training's own rule (lab.data.instances.mask_tokens),
    one per row of a batch of copies -> (encoding, ids (draws, T), masked ids (draws, T), labels
    (draws, T): the original id at chosen positions, -100 elsewhere)."""
    text = clean_text(text)
    text_b = clean_text(text_b, "text_b") if text_b is not None else None
    if not 0 < mlm_probability <= 1:
        raise ValueError(f"mlm_probability must be in (0, 1], got {mlm_probability}")
    if max_predictions < 1:
        raise ValueError(f"max_predictions must be at least 1, got {max_predictions}")
    enc = tokenizer.encode(text, text_b, max_length=max_length)
    special = SpecialIds.from_vocab(tokenizer.vocab)  # as pretrain.prepare builds it
    ids = torch.tensor([enc.input_ids]).expand(draws, -1)  # (draws, T) the same text in every row
    # [CLS]/[SEP] may never be chosen; neither may a [MASK] typed into the text
    specials = torch.tensor([enc.special_tokens_mask], dtype=torch.bool) | (ids == special.mask_id)
    generator = torch.Generator().manual_seed(seed)
    masked, labels = mask_tokens(
        ids, specials, special, generator, mlm_probability=mlm_probability, max_predictions_per_seq=max_predictions
    )  # (draws, T) each
    return enc, ids, masked, labels


def corruption_preview(
    tokenizer,
    text: str,
    seed: int = 0,
    mlm_probability: float = 0.15,
    max_predictions: int = 20,
    text_b: str | None = None,
    max_length: int = 512,
) -> CorruptionPreview:
    """The masked-LM corruption pre-training would apply to `text` (and `text_b`), by the very
    code pre-training runs (lab.data.instances.mask_tokens). The same seed gives the same preview.

    Example, 12 words -> k = round(0.15 * 12) = 2 chosen positions; each is then, by one die
    roll, [MASK] (80%), a random word (10%) or left as it is (10%):
        tokens     [CLS] the cat sat on the mat ... [SEP]
        corrupted  [CLS] the [MASK] sat on the mat ... [SEP]     kinds: None "mask" None ...
    A "random" draw that happens to give the original word back is shown as "keep": the
    model sees the original word either way.
    """
    enc, _, masked, labels = _corrupt(tokenizer, text, text_b, seed, mlm_probability, max_predictions, max_length)
    corrupted = tokenizer.convert_ids_to_tokens(masked[0].tolist())
    chosen = (labels[0] != -100).tolist()  # (T,) bool
    kinds: list[str | None] = []
    for was, now, picked in zip(enc.tokens, corrupted, chosen):
        kinds.append(None if not picked else "mask" if now == "[MASK]" else "keep" if now == was else "random")
    return CorruptionPreview(
        tokens=list(enc.tokens),
        corrupted=corrupted,
        labels=[t if c else None for t, c in zip(enc.tokens, chosen)],
        kinds=kinds,
    )


def corruption_tally(
    tokenizer,
    text: str,
    draws: int = 1000,
    seed: int = 0,
    mlm_probability: float = 0.15,
    max_predictions: int = 20,
    text_b: str | None = None,
    max_length: int = 512,
) -> dict[str, int]:
    """What the same rule does over many draws: corruption_preview's counts summed over `draws`
    seeded corruptions of the text, drawn as one batch (cheap: milliseconds for a sentence).

    One draw of a short sentence chooses one token or two, so it rarely shows a random or a kept
    one; a thousand draws show the 80/10/10 split. E.g. 9 tokens, 1,000 draws -> 1,000 chosen,
    about 800 "mask", 100 "random", 100 "keep" ({"draws", "chosen", "mask", "random", "keep"}).
    A random draw that gives the original word back counts as "keep", as in the preview.
    """
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    _, ids, masked, labels = _corrupt(
        tokenizer, text, text_b, seed, mlm_probability, max_predictions, max_length, draws=draws
    )
    chosen = labels != -100  # (draws, T)
    mask = chosen & (masked == tokenizer.mask_token_id)
    keep = chosen & (masked == ids)
    n = {"draws": draws, "chosen": int(chosen.sum()), "mask": int(mask.sum()), "keep": int(keep.sum())}
    n["random"] = n["chosen"] - n["mask"] - n["keep"]
    return n


def embeddings(model, tokenizer, text_a: str, text_b: str | None = None) -> EmbeddingResult:
    """The three embeddings BERT adds to form its input, their sum, and the LayerNorm of the sum.

    A model without segment embeddings (type_vocab_size 0) or without a position table (rotary
    positions, as in ModernBERT) adds no such part: it is zeros here, and result.missing (and
    result.note, which the views show) says which part and why."""
    text_a = clean_text(text_a, "text_a")
    text_b = clean_text(text_b, "text_b") if text_b is not None else None
    emb = embedding_module(model)
    enc, ids, types = encode(model, tokenizer, text_a, text_b)
    missing = {}
    if emb.token_type_embeddings is None:
        missing["segment"] = "type_vocab_size is 0: no sentence A / B"
    if emb.position_embeddings is None:
        missing["position"] = "rotary positions turn each layer's queries and keys instead"
    with inference(model) as device:
        ids, types = ids.to(device), types.to(device)
        positions = torch.arange(ids.shape[1], device=device)  # (T,) 0, 1, ..., T-1
        token = emb.word_embeddings(ids)[0]  # (T, H)
        zeros = torch.zeros_like(token)
        segment = zeros if "segment" in missing else emb.token_type_embeddings(types)[0]  # (T, H) row 0 = A, 1 = B
        position = zeros if "position" in missing else emb.position_embeddings(positions)  # (T, H)
        total = token + segment + position  # (T, H) the paper's Figure 2
        normalized = emb.LayerNorm(total)  # (T, H) dropout is off in eval
    token, segment, position, total, normalized = (
        t.float().cpu() for t in (token, segment, position, total, normalized)
    )
    return EmbeddingResult(
        tokens=list(enc.tokens),
        token=token,
        segment=segment,
        position=position,
        total=total,
        normalized=normalized,
        segment_ids=list(enc.token_type_ids),
        missing=missing,
    )


def fill_mask(model, tokenizer, text: str, top_k: int = 5, temperature: float = 1.0) -> FillMaskResult:
    """For each [MASK] in `text`, the top_k tokens with their probabilities.

    temperature > 1 flattens the distribution, < 1 sharpens it (logits are divided by it).
    A text longer than the model's maximum is cut at the end (result.truncated > 0).
    """
    mlm_head(model)
    text = clean_text(text)
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if not 1 <= top_k <= tokenizer.vocab_size:
        raise ValueError(f"top_k must be between 1 and {tokenizer.vocab_size}, got {top_k}")
    enc, ids, types = encode(model, tokenizer, text)
    positions = mask_positions(ids, tokenizer, enc, text)
    at_masks = torch.zeros_like(ids, dtype=torch.bool)  # (1, T)
    at_masks[0, positions] = True  # logits only where the masks are
    with inference(model) as device:
        out = model(ids.to(device), types.to(device), predict_at=at_masks.to(device))
        probs = (out.mlm_logits.float().cpu() / temperature).softmax(-1)  # (masks, V)
    top = probs.topk(top_k, dim=-1)
    predictions = [
        [(tokenizer.convert_ids_to_tokens(int(i)), float(p)) for p, i in zip(ps, ix)]
        for ps, ix in zip(top.values, top.indices)
    ]
    return FillMaskResult(predictions, enc.tokens, positions, enc.num_truncated)


def logit_lens(model, tokenizer, text: str, top_k: int = 5) -> LogitLensResult:
    """The guess at every layer: the model's own masked-LM head (dense + GELU + LayerNorm, then the
    tied decoder x E^T + b) applied to the hidden state of every layer at every [MASK] (the "logit
    lens" of nostalgebraist 2020, here for an encoder). Layer 0 is the input embeddings (the
    [MASK] token's own embedding plus its position: the same at any position's [MASK] but for the
    position), layer L the last one, which gives exactly fill_mask's answer.

    The head was trained on the last layer only, so an early layer's reading says what that layer
    already makes linearly available to the head, not what the layer "thinks": a low probability
    can also mean the vector is not yet in the head's coordinates. In a pre-norm model (lab.modern)
    the head reads the final norm's output, so every earlier layer's vector goes through that
    norm first, as the logit lens of pre-norm models does.
    """
    head = mlm_head(model)
    text = clean_text(text)
    if not 1 <= top_k <= tokenizer.vocab_size:
        raise ValueError(f"top_k must be between 1 and {tokenizer.vocab_size}, got {top_k}")
    enc, ids, types = encode(model, tokenizer, text)
    positions = mask_positions(ids, tokenizer, enc, text)
    with inference(model) as device:
        out = model.bert(ids.to(device), types.to(device), output_hidden_states=True)
        hidden = list(out.hidden_states)
        final_norm = model.bert.encoder.final_norm
        if final_norm is not None:  # pre-norm: the last state went through the final norm, so do the others
            hidden[:-1] = [final_norm(h) for h in hidden[:-1]]
        # one head call per layer, each on the (M, H) rows fill_mask gives it: the last layer's
        # probabilities are then fill_mask's to the bit
        probs = torch.stack([head(h[0, positions]).float().cpu().softmax(-1) for h in hidden])  # (L+1, M, V)
    final_ids = probs[-1].argmax(-1)  # (M,)
    final_p = probs[:, torch.arange(len(positions)), final_ids]  # (L+1, M)
    ranks = (probs > final_p[..., None]).sum(-1) + 1  # (L+1, M): 1 = the top guess
    top = probs.topk(top_k, dim=-1)  # (L+1, M, k)
    names = tokenizer.convert_ids_to_tokens
    return LogitLensResult(
        tokens=list(enc.tokens),
        mask_positions=positions,
        top=[
            [
                [(names(int(i)), float(p)) for p, i in zip(top.values[l, m], top.indices[l, m])]
                for l in range(len(probs))
            ]
            for m in range(len(positions))
        ],
        final=[names(int(i)) for i in final_ids],
        final_rank=ranks.T.tolist(),
        final_probability=final_p.T.tolist(),
        truncated=enc.num_truncated,
    )


def next_sentence(model, tokenizer, a: str, b: str) -> float:
    """P(IsNext): how sure the NSP head is that `b` follows `a` (softmax index 0)."""
    require(model, "next_sentence")
    a, b = clean_text(a, "a"), clean_text(b, "b")
    _, ids, types = encode(model, tokenizer, a, b)
    with inference(model) as device:
        out = model(ids.to(device), types.to(device))
    return float(out.nsp_logits.float().cpu().softmax(-1)[0, 0])  # (1, 2): 0 = IsNext, 1 = NotNext


# ----------------------------------------------------------------------------------------
# Inside the encoder: attention maps and head ablation
# ----------------------------------------------------------------------------------------
def attention(model, tokenizer, text_a: str, text_b: str | None = None) -> AttentionResult:
    """Every layer's attention probabilities for one text (pair), ready for bertviz."""
    text_a = clean_text(text_a, "text_a")
    text_b = clean_text(text_b, "text_b") if text_b is not None else None
    enc, ids, types = encode(model, tokenizer, text_a, text_b)
    encoder = getattr(model, "bert", model)  # attention maps need the encoder only, no head
    with inference(model) as device:
        out = encoder(ids.to(device), types.to(device), output_attentions=True)
    attentions = tuple(a.float().cpu() for a in out.attentions)  # L x (1, A, T, T)
    return AttentionResult(
        tokens=list(enc.tokens),
        attentions=attentions,
        sentence_b_start=enc.sentence_b_start if text_b is not None else None,
        truncated=enc.num_truncated,
    )


def queries_and_keys(model, tokenizer, text_a: str, text_b: str | None = None) -> QueryKeyResult:
    """attention() plus every head's query and key vectors (bertviz's neuron view shows them).

    They are the outputs of each layer's `query` and `key` projections (nn.Linear, H -> H)
    applied to that layer's input (hidden_states[l], from the same forward pass that gives the
    attention maps), computed again in the same precision: no hooks, so the model is never
    changed and concurrent requests on one model (the dashboard) cannot see each other's
    vectors. Each output (1, T, H) is split into heads as BertSelfAttention splits it:
    (1, T, A, d) -> (1, A, T, d), head h = features h*d..(h+1)*d-1. With the settings of
    lab.modern they are what the scores are made of, as in the layer: a pre-norm layer projects
    its normalised input, and rotary positions turn q and k by their positions.
    """
    text_a = clean_text(text_a, "text_a")
    text_b = clean_text(text_b, "text_b") if text_b is not None else None
    enc, ids, types = encode(model, tokenizer, text_a, text_b)
    encoder = getattr(model, "bert", model)
    cfg, layers = encoder.config, list(encoder.encoder.layer)
    queries, keys = [], []
    with inference(model) as device:
        out = encoder(ids.to(device), types.to(device), output_attentions=True, output_hidden_states=True)
        rotary = encoder.encoder.rotary
        rope = rotary(ids.shape[1], device) if rotary is not None else None  # {global?: (cos, sin)}
        for i, (layer, x) in enumerate(zip(layers, out.hidden_states)):
            attention = layer.attention.self
            if cfg.norm_position == "pre":  # the attention reads the normalised stream (Identity in layer 0)
                x = layer.attention.output.LayerNorm(x)
            q, k = _split_heads(attention.query(x), attention), _split_heads(attention.key(x), attention)
            if rope is not None:
                q, k = apply_rotary(q, k, *(t.cpu() for t in rope[cfg.is_global_layer(i)]))
            queries.append(q)
            keys.append(k)
    return QueryKeyResult(
        tokens=list(enc.tokens),
        attentions=tuple(a.float().cpu() for a in out.attentions),
        sentence_b_start=enc.sentence_b_start if text_b is not None else None,
        truncated=enc.num_truncated,
        queries=tuple(queries),
        keys=tuple(keys),
    )


def _split_heads(x: torch.Tensor, attention: BertSelfAttention) -> torch.Tensor:
    """A projection's output (1, T, H) split into the heads of `attention`: (1, A, T, d), fp32 on the CPU."""
    return x.float().cpu().view(1, x.shape[1], attention.num_heads, attention.head_size).transpose(1, 2)


def ablate_heads(
    model, tokenizer, text: str, metric: str = "loss", targets: list[str] | None = None, batch_size: int = 32
) -> AblationResult:
    """Silence each attention head in turn and measure how the masked-LM prediction changes
    (Michel et al. 2019, "Are sixteen heads really better than one?").

    The label at each [MASK] is the word of `targets` (one per [MASK]) when given, else the
    model's own top-1 prediction with every head on. metric "loss": mean cross-entropy of the
    labels over the [MASK]s (effect > 0: the head helped); "probability": P(label) at the
    first [MASK] (effect < 0: the head helped).

    All L x A ablations run as a batch of copies of the sentence, copy r = l * A + h with
    head h of layer l silenced through a per-example head_mask [L, copies, A]; the model
    itself is never changed. E.g. L = 2, A = 2: copies 0..3 silence (0,0) (0,1) (1,0) (1,1).
    """
    mlm_head(model)
    if metric not in ("loss", "probability"):
        raise ValueError(f"metric must be 'loss' or 'probability', got {metric!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    text = clean_text(text)
    enc, ids, types = encode(model, tokenizer, text)
    positions = mask_positions(ids, tokenizer, enc, text)
    label_ids = None
    if targets is not None:
        label_ids = target_ids(tokenizer, targets, len(positions))
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    picked = torch.zeros_like(ids, dtype=torch.bool)
    picked[0, positions] = True  # (1, T) the M [MASK]s
    M = len(positions)

    def metric_of(log_probs, labels):  # (B, M, V), (M,) -> (B,)
        chosen = log_probs.gather(-1, labels.expand(log_probs.shape[0], -1)[..., None])[..., 0]  # (B, M)
        return -chosen.mean(-1) if metric == "loss" else chosen[:, 0].exp()

    with inference(model) as device:
        ids, types = ids.to(device), types.to(device)
        # baseline: every head on; its top-1 words are the labels unless targets were given
        base = model(ids, types, predict_at=picked.to(device))
        base_lp = base.mlm_logits.float().cpu().log_softmax(-1)[None]  # (1, M, V)
        labels = label_ids if label_ids is not None else base_lp[0].argmax(-1)  # (M,)
        baseline = float(metric_of(base_lp, labels)[0])
        effects = []
        for start in range(0, L * A, batch_size):
            rows = torch.arange(start, min(start + batch_size, L * A))  # (B,) which (layer, head)
            B = len(rows)
            head_mask = torch.ones(L, B, A)  # (L, B, A) all heads on
            head_mask[rows // A, torch.arange(B), rows % A] = 0.0  # row r silences head r % A of layer r // A
            out = model(
                ids.expand(B, -1),
                types.expand(B, -1),
                head_mask=head_mask.to(device),
                predict_at=picked.expand(B, -1).to(device),
            )
            lp = out.mlm_logits.float().cpu().log_softmax(-1).view(B, M, -1)  # (B*M, V) -> (B, M, V)
            effects.append(metric_of(lp, labels) - baseline)
    return AblationResult(
        effect=torch.cat(effects).view(L, A),
        baseline=baseline,
        metric=metric,
        tokens=list(enc.tokens),
        mask_positions=positions,
    )


# ----------------------------------------------------------------------------------------
# Fine-tuned heads: classification and question answering
# ----------------------------------------------------------------------------------------
def classify(model, tokenizer, text: str, text_pair: str | None = None) -> dict[str, float]:
    """{label: probability}, best first, with the label names of model.config.id2label."""
    require(model, "classify")
    text = clean_text(text)
    text_pair = clean_text(text_pair, "text_pair") if text_pair is not None else None
    _, ids, types = encode(model, tokenizer, text, text_pair)
    with inference(model) as device:
        out = model(ids.to(device), types.to(device))
    probs = out.logits.float().cpu().softmax(-1)[0].tolist()  # (1, K) -> K floats
    names = model.config.id2label
    return dict(sorted(((names[i], p) for i, p in enumerate(probs)), key=lambda kv: -kv[1]))


# ----------------------------------------------------------------------------------------
# The settings answer and tag read text with when their caller names none: the one copy, which
# lab.web.export writes into the browser edition's manifest (the page keeps no defaults of its own)
# ----------------------------------------------------------------------------------------
TAG_MAX_SEQ_LENGTH = 128  # finetune-tag's default window (TaggingConfig.max_seq_length)
TAG_DECODING = "argmax"  # each word's most probable tag


def answer_settings(model, max_seq_length=None, doc_stride=None, max_query_length=None) -> dict:
    """answer's windows for this model: those named, else those it was fine-tuned with
    (model.task_settings), else QA_WINDOWS; max_seq_length at most the model's positions. With
    n_best (N_BEST) and max_answer_length (MAX_ANSWER_LENGTH): the manifest's task of a QA model."""
    trained = {**QA_WINDOWS, **qa_lengths(getattr(model, "task_settings", {}) or {})}
    told = {"max_seq_length": max_seq_length, "doc_stride": doc_stride, "max_query_length": max_query_length}
    windows = {k: told[k] or trained[k] for k in QA_WINDOWS}
    windows["max_seq_length"] = min(windows["max_seq_length"], model.config.max_position_embeddings)
    return {**windows, "n_best": N_BEST, "max_answer_length": MAX_ANSWER_LENGTH}


def tag_window_settings(model, max_seq_length=None, doc_stride=None, decoding=None) -> dict:
    """tag's windows and decoding for this model: those named, else those it was fine-tuned and
    evaluated with (model.task_settings), else TAG_MAX_SEQ_LENGTH tokens (at most the model's
    positions), a stride of half the window, and TAG_DECODING: the manifest's task of a tagger."""
    trained = tag_settings(getattr(model, "task_settings", {}) or {})
    length = max_seq_length or trained.get("max_seq_length") or TAG_MAX_SEQ_LENGTH
    length = min(length, model.config.max_position_embeddings)
    return {
        "max_seq_length": length,
        "doc_stride": doc_stride or trained.get("doc_stride") or max(1, length // 2),
        "decoding": decoding or trained.get("decoding", TAG_DECODING),
    }


def answer(
    model,
    tokenizer,
    question: str,
    context: str,
    top_k: int = 3,
    max_seq_length: int | None = None,
    doc_stride: int | None = None,
    max_query_length: int | None = None,
    max_answer_length: int = MAX_ANSWER_LENGTH,
) -> AnswerResult:
    """The top_k answer spans of `context` for `question`, as SQuAD evaluation finds them.

    A context longer than one window is read in overlapping doc-stride windows (lab.data.squad):
    e.g. 300 context tokens, 100 per window, stride 50 -> windows at tokens 0, 50, 100, 150,
    200; each span is scored in the window where its start token has the most context.
    The per-token probabilities returned are those of the window holding the best span.
    The windows default to those the model was fine-tuned with (model.task_settings, read by
    lab.load from its task_config.json), else QA_WINDOWS (384 tokens, a stride of 128 and
    questions of 64): answer_settings, which lab.web.export writes into the page's manifest.
    """
    require(model, "answer")
    windows = answer_settings(model, max_seq_length, doc_stride, max_query_length)
    max_seq_length, doc_stride = windows["max_seq_length"], windows["doc_stride"]
    max_query_length = windows["max_query_length"]
    question, context = clean_text(question, "question"), clean_text(context, "context")
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    if max_query_length < 1 or doc_stride < 1 or max_answer_length < 1:
        raise ValueError("max_query_length, doc_stride and max_answer_length must be positive")
    question_tokens = tokenizer.tokenize(question)
    if not question_tokens:
        raise ValueError("question has no tokens the model knows: type a question in words")
    room = max_seq_length - min(len(question_tokens), max_query_length) - 3
    if room < 1:
        raise ValueError(
            f"the question leaves no room for the context in {max_seq_length} tokens: "
            f"shorten the question or lower max_query_length"
        )
    example = Example(id="q", title="", context=context, question=question, answers=[])
    features = make_features([example], tokenizer, max_seq_length, doc_stride, max_query_length, training=False)
    if not features:
        raise ValueError("context has no tokens the model knows: type a paragraph in words")
    with inference(model) as device:
        batch = collate_features(features, tokenizer.pad_token_id, max_length=max_seq_length).to(device)
        out = model(**batch)
        starts, ends = out.start_logits.float().cpu(), out.end_logits.float().cpu()  # (windows, T)
    # n_best start x end candidates per window; if none of them is a valid span (possible with
    # an untrained model whose best starts all fall on the question), look at every token
    spans = decode_spans(
        features, starts, ends, example, n_best=max(N_BEST, top_k), max_answer_length=max_answer_length
    )
    if not spans:
        longest = max(len(f.input_ids) for f in features)
        spans = decode_spans(
            features, starts, ends, example, n_best=max(longest, top_k), max_answer_length=max_answer_length
        )
    w = spans[0].window_index if spans else 0
    f = features[w]
    n = len(f.input_ids)  # the window without padding
    return AnswerResult(
        spans=spans[:top_k],
        tokens=tokenizer.convert_ids_to_tokens(f.input_ids),
        start_probs=starts[w, :n].softmax(-1).tolist(),
        end_probs=ends[w, :n].softmax(-1).tolist(),
        offsets=list(f.offsets),
        window_index=w,
        num_windows=len(features),
        question_truncated=len(question_tokens) > max_query_length,
    )


# Words as the tagging data has them (UNER, UD and CoNLL follow the Penn Treebank's conventions:
# one token per word and per punctuation mark; a title's or an initialism's period stays with it,
# "Mr." and "U.S."; a clitic is its own word, "Darcy" "'s"): a title or initialism with its period,
# a clitic, a run of letters/digits (with combining accents), or any other non-space character alone.
_TITLES = "Mr|Mrs|Ms|Dr|Prof|Rev|St|Mt|Jr|Sr|Capt|Col|Gen|Lt|Sgt|Gov|Sen|Rep|Inc|Ltd|Co|Corp|vs"
_WORD = re.compile(rf"(?:{_TITLES})\.(?!\w)|(?:[A-Z]\.){{2,}}|'(?:s|S|re|ve|ll|d|m)(?!\w)|\w[\w\u0300-\u036f]*|[^\w\s]")


def split_words(text: str) -> list[tuple[str, int, int]]:
    """Text -> (word, start, end) as tagging data splits it: at whitespace, every punctuation mark
    or symbol a word of its own, except a title's or an initialism's period, and a clitic on its
    own, as in the English Web Treebank that UNER and UD annotate:
        "Mr. Darcy's house in the U.S." -> Mr. | Darcy | 's | house | in | the | U.S.
    (EWT also splits "don't" into do | n't: here it is don | ' | t; pass a list of words to tag
    words exactly as you split them)."""
    return [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


def tag(
    model,
    tokenizer,
    words_or_text,
    max_seq_length: int | None = None,
    doc_stride: int | None = None,
    batch_size: int = 32,
    decoding: str | None = None,
) -> TagResult:
    """A tag for every word, with its probability and the runner-up, from a token classifier
    (BertForTokenClassification: NER, POS).

    words_or_text: a list of words, tagged as given; or a text, split into words by split_words
    (whitespace, and each punctuation mark on its own, as the tagging data is split). Each word
    is cut into WordPiece tokens and read from its FIRST piece (Section 5.3: "We use the
    representation of the first sub-token as the input to the token-level classifier"):
        words   playing   children
        pieces  play ##ing  children       -> the tag of "playing" is read at "play"
    Nothing is cut: a text longer than one window is read in overlapping windows of
    max_seq_length tokens, doc_stride pieces apart (lab.data.tagging; each word from the window where
    its first piece has the most context). decoding: "argmax" (each word's most probable tag) or
    "viterbi" (the best sequence IOB2 allows: lab.data.tag_decoding.decode_tags). The windows and the
    decoding default to those the model was fine-tuned and evaluated with (model.task_settings,
    read by lab.load from its task_config.json), else 128 tokens (at most the model's positions),
    a stride of half that, and argmax (tag_window_settings).
    """
    require(model, "tag")
    if isinstance(words_or_text, (str, bytes)) or words_or_text is None:
        text = clean_text(words_or_text)
        found = split_words(text)
        if not found:
            raise ValueError("text has no words: type a sentence")
        words = [w for w, _, _ in found]
        spans = [(s, e) for _, s, e in found]
    else:
        try:
            given = list(words_or_text)
        except TypeError:
            raise ValueError(f"give a text or a list of words, not {type(words_or_text).__name__}") from None
        if not given:
            raise ValueError("the list of words is empty: give at least one word")
        words = [clean_text(w, f"word {i}").strip() for i, w in enumerate(given)]
        spans = [(None, None)] * len(words)
    settings = tag_window_settings(model, max_seq_length, doc_stride, decoding)
    max_seq_length, doc_stride, decoding = settings["max_seq_length"], settings["doc_stride"], settings["decoding"]
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must be at least 3 ([CLS], one piece, [SEP]), got {max_seq_length}")
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be positive, got {doc_stride}")
    device = next(model.parameters()).device
    predicted = predict_tags(
        model,
        tokenizer,
        [words],
        max_seq_length=max_seq_length,
        doc_stride=doc_stride,
        batch_size=batch_size,
        dtype=fast_dtype(device),
        decoding=decoding,
    )[0]
    ids, word_ids = word_pieces(tokenizer, [words])[0]  # the pieces predict_tags read
    pieces: list[list[str]] = [[] for _ in words]
    for token, w in zip(tokenizer.convert_ids_to_tokens(ids), word_ids):
        pieces[w].append(token)
    windows = doc_windows(len(ids), max_seq_length - 2, doc_stride)  # as make_tag_features cuts them
    return TagResult(
        [
            TaggedWord(word, p.tag, p.probability, p.runner_up, p.runner_up_probability, tuple(ps), start, end)
            for word, p, ps, (start, end) in zip(words, predicted, pieces, spans)
        ],
        num_windows=len(windows),
        num_pieces=len(ids),
        max_seq_length=max_seq_length,
        doc_stride=doc_stride,
    )


# ----------------------------------------------------------------------------------------
# Watch BERT learn: fill_mask at every snapshot of a pre-training run
# ----------------------------------------------------------------------------------------
def checkpoint_predictions(run_dir, text: str, top_k: int = 3, progress=None) -> list[tuple[int, FillMaskResult]]:
    """fill_mask(text) with each checkpoint of a pre-training run, in step order.

    progress: optional wrapper of the checkpoint list to show progress (e.g. tqdm.tqdm, or a
    Gradio Progress's .tqdm); each checkpoint is loaded from disk, which takes a moment.
    """
    text = clean_text(text)
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"run directory {run_dir} does not exist")
    found = checkpoints(run_dir)
    if not found:
        raise ValueError(
            f"{run_dir} keeps no checkpoints (checkpoints/step-NNNNNNN/): pick a pre-training "
            f"run (python -m lab pretrain keeps snapshots) or the bundled bert-lab-classroom"
        )
    # the run's own vocabulary for every checkpoint (all phases of a run share it)
    tokenizer = Tokenizer.load(run_dir) if has_tokenizer_files(run_dir) else None
    results = []
    for step, directory in progress(found) if progress else found:
        model, own = load(directory)
        results.append((step, fill_mask(model, tokenizer or own, text, top_k=top_k)))
    return results
