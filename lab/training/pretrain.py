"""Pre-training: the masked-LM + next-sentence objective, its held-out evaluation, and the recipe
that turns a corpus into a trained BERT.

    python -m lab pretrain --recipe classroom --corpus novels --out runs/classroom --minutes 15

Loss = MLM cross-entropy over the masked positions only + NSP cross-entropy (Devlin et al.,
Section 3.1). Evaluation reports the MLM accuracy twice: over all predicted positions, and at
the [MASK] positions alone. The difference matters: 10% of the predicted tokens are left
unchanged in the input, and copying them is easy, so the overall figure flatters a young model.
`--objective ltr --no-nsp` trains Table 5's left-to-right model on the same batches instead.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as tdist
import torch.nn.functional as F

from lab.checkpoint import load
from lab.config import BertConfig, setting
from lab.data.batch import IGNORE_INDEX, Batch, mix_seed, step_indices
from lab.data.corpus import read_documents, split_documents
from lab.data.datasets import resolve_corpus
from lab.data.directions import direction_mask
from lab.data.instances import PretrainingData, SpecialIds, collate, create_instances
from lab.data.masking import parse_mix
from lab.data.prepare import PreparedCorpus, is_prepared, prepared
from lab.device import init_distributed, pick_device
from lab.files import CHECKPOINTS_DIR, PRETRAIN_CONFIG_NAME, VOCAB_NAME
from lab.hub import resolve_model
from lab.model import BertForMaskedLM, BertForPreTraining
from lab.modern import changed, parse_changes
from lab.tokenizer import Tokenizer
from lab.training.runs import is_complete, phase_dirs, refuse_existing_run, write_json
from lab.training.train import TrainConfig, train

POSITION_INITS = ("normal", "sinusoidal")  # how the (learned) position table starts
OBJECTIVES = ("mlm", "ltr")  # masked LM (BERT) | left-to-right LM (Table 5's "LTR & No NSP")


@dataclass
class PretrainConfig:
    preset: str = setting("mini", "model shape (BertConfig.preset)")
    vocab_size: int = setting(8192, "WordPiece vocabulary trained on the corpus")
    max_seq_length: int = setting(128, "tokens per instance, [CLS] A [SEP] B [SEP]")
    short_seq_prob: float = setting(0.1, "share of instances with a shorter random length")
    objective: str = setting(
        "mlm",
        "mlm: masked LM (BERT); ltr: left-to-right, each token predicts the next (Table 5's LTR, needs "
        "--no-nsp; the masking settings are then ignored)",
    )
    mlm_probability: float = setting(0.15, "share of tokens predicted")
    max_predictions_per_seq: int = setting(20, "cap on predictions per sequence (20 per 128)")
    whole_word: bool = setting(False, "mask all pieces of a word together")
    masking: str = setting(
        "80/10/10", "percent of the predicted tokens made [MASK] / kept / random (Table 8's MASK/SAME/RND)"
    )
    nsp: bool = setting(True, "next-sentence prediction; --no-nsp: masked LM alone, B the true continuation")
    mask_epochs: int = setting(0, "0: masks drawn anew each epoch (dynamic); N: the first N epochs repeat (static)")
    held_out: float = setting(0.02, "share of documents kept for evaluation")
    eval_instances: int = setting(1024, "held-out instances evaluated (fixed masks)")
    eval_seq_length: int | None = setting(None, "held-out instance length (None: max_seq_length)")
    dropout: float | None = setting(None, "override both dropouts (None: BERT's 0.1)")
    initializer_range: float | None = setting(None, "override the init std (None: BERT's 0.02)")
    position_init: str = setting("normal", "normal (BERT) | sinusoidal (same scale, smooth in position)")
    seed: int = setting(0, "seed of the data: held-out documents, NSP pairs, masks")
    split_seed: int | None = setting(
        None, "seed of the held-out documents alone (None: seed); keep it to vary the rest"
    )
    changes: str = setting("", "since BERT, comma-separated: pre-norm, geglu, rotary, no-bias, local (lab.modern)")
    local_window: int = setting(64, "with changes=local: tokens a local layer sees (+-half of it)")
    global_every: int = setting(2, "with changes=local: every N-th layer attends globally (layer 0 first)")

    def __post_init__(self):
        parse_mix(self.masking)  # a clear message now, not at the first batch
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective={self.objective!r}: one of {', '.join(OBJECTIVES)}")
        if self.objective == "ltr" and self.nsp:
            raise ValueError(
                "objective='ltr' needs nsp=False (--no-nsp): the paper's left-to-right model (Table 5) "
                "has no next-sentence task"
            )
        if "rotary" in parse_changes(self.changes) and self.position_init != "normal":
            raise ValueError(
                f"position_init={self.position_init!r} initialises a position table, and changes=rotary has none"
            )
        if self.mask_epochs < 0:
            raise ValueError(f"mask_epochs={self.mask_epochs}: 0 (dynamic masks) or the epochs that repeat")

    def to_dict(self):
        return dataclasses.asdict(self)

    @property
    def held_out_seed(self) -> int:
        """The seed that picks the held-out documents and their evaluation instances."""
        return self.seed if self.split_seed is None else self.split_seed


# ----------------------------------------------------------------------------------------
# The objective
# ----------------------------------------------------------------------------------------
def mlm_nsp_stats(out, batch: Batch, mask_id: int) -> dict[str, torch.Tensor]:
    """Accuracies from a forward pass with labels: MLM overall, MLM at [MASK] inputs, NSP.
    Detached 0-dim tensors: the training loop reads them from the device at log steps only."""
    picked = batch.mlm_labels != -100  # (B, T) the N predicted positions
    labels = batch.mlm_labels[picked]  # (N,)
    hit = (out.mlm_logits.argmax(-1) == labels).float()  # (N,)
    at_mask = (batch.input_ids[picked] == mask_id).float()  # (N,) the 80% that became [MASK]
    stats = {
        "mlm_loss": out.mlm_loss.detach(),
        "mlm_acc": hit.mean(),
        # a batch with no [MASK] at all counts 0 (clamp avoids 0/0 without a host check)
        "mlm_acc_masked": (hit * at_mask).sum() / at_mask.sum().clamp(min=1),
    }
    if out.nsp_logits is not None and out.nsp_loss is not None:
        stats["nsp_loss"] = out.nsp_loss.detach()
        stats["nsp_acc"] = (out.nsp_logits.argmax(-1) == batch.nsp_label).float().mean()
    return stats


class PretrainObjective:
    """MLM + NSP on a PretrainingData stream, evaluated on fixed held-out batches; nsp=False:
    the masked LM alone (the NSP head gets no labels, no loss and no score)."""

    def __init__(self, data: PretrainingData, eval_batches: list[Batch], mask_id: int, nsp: bool = True):
        self.data, self.eval_batches, self.mask_id, self.nsp = data, eval_batches, mask_id, nsp

    def train_batch(self, index: int) -> Batch:
        batch = self.data.batch(index)
        return batch if self.nsp else Batch({k: v for k, v in batch.items() if k != "nsp_label"})

    def loss(self, model, batch: Batch):
        out = model(**batch)
        stats = mlm_nsp_stats(out, batch, self.mask_id)
        stats["loss"] = out.loss.detach()
        return out.loss, stats

    def evaluate(self, model) -> dict[str, float]:
        return evaluate_batches(model, self.eval_batches, self.mask_id, nsp=self.nsp)


@torch.no_grad()
def evaluate_batches(model, batches: list[Batch], mask_id: int, nsp: bool = True) -> dict[str, float]:
    """Token-weighted MLM loss/accuracies and sequence-weighted NSP (nsp=False: none) over fixed batches."""
    device = next(model.parameters()).device
    tot = {"mlm_loss": 0.0, "mlm_hit": 0, "n": 0, "mask_hit": 0, "n_mask": 0, "nsp_loss": 0.0, "nsp_hit": 0, "seqs": 0}
    rows = [b.rows(slice(i, i + 16)) for b in batches for i in range(0, len(b), 16)]
    for batch in rows:  # 16 sequences at a time: the vocabulary logits of 64 would take 100+ MB
        batch = batch.to(device)
        out = model(**{k: v for k, v in batch.items() if k != "nsp_label" or k in model.label_names})
        picked = batch.mlm_labels != -100
        labels = batch.mlm_labels[picked]
        hit = out.mlm_logits.argmax(-1) == labels
        at_mask = batch.input_ids[picked] == mask_id
        tot["mlm_loss"] += F.cross_entropy(out.mlm_logits.float(), labels, reduction="sum").item()
        tot["mlm_hit"] += int(hit.sum())
        tot["n"] += len(labels)
        tot["mask_hit"] += int(hit[at_mask].sum())
        tot["n_mask"] += int(at_mask.sum())
        if nsp and out.nsp_logits is not None:
            tot["nsp_loss"] += F.cross_entropy(out.nsp_logits.float(), batch.nsp_label, reduction="sum").item()
            tot["nsp_hit"] += int((out.nsp_logits.argmax(-1) == batch.nsp_label).sum())
            tot["seqs"] += len(batch.nsp_label)
    result = {
        "mlm_loss": tot["mlm_loss"] / max(1, tot["n"]),
        "mlm_acc": tot["mlm_hit"] / max(1, tot["n"]),
        "mlm_acc_masked": tot["mask_hit"] / max(1, tot["n_mask"]),
        "predictions": tot["n"],
    }
    if tot["seqs"]:
        result |= {"nsp_loss": tot["nsp_loss"] / tot["seqs"], "nsp_acc": tot["nsp_hit"] / tot["seqs"]}
    return result


# ----------------------------------------------------------------------------------------
# Table 5's "LTR & No NSP": a left-to-right LM on the same text
# ----------------------------------------------------------------------------------------
def next_token_batch(batch: Batch) -> Batch:
    """A masked pre-training batch -> the same text for a left-to-right LM: the masks undone
    (mlm_labels hold the original token wherever one was masked, so this is exact), and every
    position labelled with the next token, where that is a real one (no label after the last).

    masked      [CLS]  the    [MASK] [SEP]  it     dog    [SEP]  [PAD]    (cat and was chosen)
    input_ids   [CLS]  the    cat    [SEP]  it     was    [SEP]  [PAD]
    mlm_labels  the    cat    [SEP]  it     was    [SEP]  -      -        (- = IGNORE_INDEX)

    No nsp_label; attention_mask stays the [B, T] padding mask (the loop counts tokens with it):
    the left-to-right [B, T, T] mask is built next to the model (`left_to_right`).
    """
    masked = batch.mlm_labels != IGNORE_INDEX  # (B, T)
    ids = torch.where(masked, batch.mlm_labels, batch.input_ids)  # (B, T) the text before masking
    labels = torch.full_like(ids, IGNORE_INDEX)
    real_next = batch.attention_mask[:, 1:].bool()  # (B, T-1) position t+1 holds a real token
    labels[:, :-1] = torch.where(real_next, ids[:, 1:], IGNORE_INDEX)  # position t predicts t+1
    return Batch(
        input_ids=ids, token_type_ids=batch.token_type_ids, attention_mask=batch.attention_mask, mlm_labels=labels
    )


def left_to_right(model, batch: Batch):
    """The model's output with each position seeing itself and the real tokens before it
    ([B, T, T] mask: lab.data.directions); vocabulary logits at the labelled positions only."""
    mask = direction_mask(batch.input_ids, "left_to_right", batch.attention_mask)  # (B, T, T)
    return model(**{**batch, "attention_mask": mask})


class LeftToRightObjective:
    """Table 5's "LTR & No NSP": PretrainingData's batches unmasked (`next_token_batch`), each
    position predicting the next token under a left-to-right mask; no NSP. Evaluated on the
    same fixed held-out batches as the masked LM, unmasked likewise."""

    def __init__(self, data: PretrainingData, eval_batches: list[Batch]):
        self.data, self.eval_batches = data, [next_token_batch(b) for b in eval_batches]

    def train_batch(self, index: int) -> Batch:
        return next_token_batch(self.data.batch(index))

    def loss(self, model, batch: Batch):
        out = left_to_right(model, batch)
        labels = batch.mlm_labels[batch.mlm_labels != IGNORE_INDEX]  # (N,) in the logits' order
        hit = (out.mlm_logits.argmax(-1) == labels).float()
        return out.loss, {"ltr_loss": out.loss.detach(), "ltr_acc": hit.mean(), "loss": out.loss.detach()}

    def evaluate(self, model) -> dict[str, float]:
        return evaluate_next_token(model, self.eval_batches)


@torch.no_grad()
def evaluate_next_token(model, batches: list[Batch]) -> dict[str, float]:
    """Token-weighted next-token loss and accuracy of a left-to-right model over fixed
    `next_token_batch`es (16 sequences at a time, as evaluate_batches)."""
    device = next(model.parameters()).device
    loss, hits, n = 0.0, 0, 0
    for batch in (b.rows(slice(i, i + 16)) for b in batches for i in range(0, len(b), 16)):
        batch = batch.to(device)
        out = left_to_right(model, batch)
        labels = batch.mlm_labels[batch.mlm_labels != IGNORE_INDEX]  # (N,)
        loss += F.cross_entropy(out.mlm_logits.float(), labels, reduction="sum").item()
        hits += int((out.mlm_logits.argmax(-1) == labels).sum())
        n += len(labels)
    return {"ltr_loss": loss / max(1, n), "ltr_acc": hits / max(1, n), "predictions": n}


def make_objective(pc: PretrainConfig, data: PretrainingData, eval_batches: list[Batch], mask_id: int):
    """The objective pc.objective names: the masked LM (+ NSP) or the left-to-right LM."""
    if pc.objective == "ltr":
        return LeftToRightObjective(data, eval_batches)
    return PretrainObjective(data, eval_batches, mask_id, nsp=pc.nsp)


def init_positions(model, kind: str) -> None:
    """Re-initialise the (still learned) position table.

    "sinusoidal": the table of Vaswani et al. (sin/cos at geometric frequencies), rescaled to the
    std of the random init, so that neighbouring positions start out similar and position i+1
    is a fixed rotation of position i: a structure attention can use from the first step.
    """
    table = model.bert.embeddings.position_embeddings.weight  # (P, H)
    if kind not in POSITION_INITS:
        raise ValueError(f"position_init must be one of {POSITION_INITS}, not {kind!r}")
    if kind == "normal":
        return
    P, H = table.shape
    pos = torch.arange(P, dtype=torch.float32)[:, None]  # (P, 1)
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, H, 2, dtype=torch.float32) / H)  # (H/2,)
    sinus = torch.zeros(P, H)
    sinus[:, 0::2], sinus[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    with torch.no_grad():
        table.copy_(sinus / sinus.std() * model.config.initializer_range)


# ----------------------------------------------------------------------------------------
# Corpus -> instances
# ----------------------------------------------------------------------------------------
def encode_documents(tokenizer, documents) -> list[list[list[int]]]:
    """Documents of sentences -> documents of sentences of token ids (no special tokens)."""
    flat = [s for d in documents for s in d.sentences]
    ids = [e.ids for e in tokenizer.backend.encode_batch(flat, add_special_tokens=False)]
    out, i = [], 0
    for d in documents:
        out.append(ids[i : i + len(d.sentences)])
        i += len(d.sentences)
    return out


def fixed_batches(
    instances, special: SpecialIds, pc: PretrainConfig, batch_size: int = 64, seed: int = 12345
) -> list[Batch]:
    """Held-out batches with masks drawn once: every evaluation scores the same predictions.

    Evaluation always masks as BERT does (15%, at most 20 per 128 tokens), whatever masking
    rate a recipe trains with, so that accuracies stay comparable between recipes. The last
    batch is filled up from the start, so every batch has the same size.
    """
    instances = instances[: pc.eval_instances]
    length, g = pc.eval_seq_length or pc.max_seq_length, min(batch_size, len(instances))
    batches = []
    for i in range(math.ceil(len(instances) / g)):
        rows = step_indices(len(instances), g, i, seed, drop_last=False, shuffle=False)
        gen = torch.Generator().manual_seed(mix_seed("mask", seed, 0, i))
        batches.append(
            collate(
                [instances[j] for j in rows],
                special,
                gen,
                max_seq_length=length,
                mlm_probability=0.15,
                max_predictions_per_seq=max(1, round(20 * length / 128)),
            )
        )
    return batches


def train_tokenizer(corpus: Path, pc: PretrainConfig, log=print) -> Tokenizer:
    """A WordPiece vocabulary of pc.vocab_size trained on the corpus's training documents (the
    held-out ones are left out). Reads the whole text into memory: for a large corpus, train
    (or download) a vocabulary once and pass it with --tokenizer."""
    docs = read_documents(corpus)
    train_docs, _ = split_documents(docs, held_out=pc.held_out, seed=pc.held_out_seed)
    tokenizer = Tokenizer.train(
        (s for d in train_docs for s in d.sentences), vocab_size=pc.vocab_size, show_progress=False
    )
    log(f"trained a WordPiece vocabulary of {tokenizer.vocab_size} tokens on {len(train_docs)} documents")
    return tokenizer


def load_corpus(corpus, pc: PretrainConfig, tokenizer: Tokenizer, dist=None, log=print):
    """The corpus prepared for this vocabulary (once; rank 0 prepares, the others wait) ->
    (training documents, held-out instances): the first memory-mapped, the second a few
    hundred instances in memory (fixed for every evaluation of the run)."""
    path = Path(corpus) if is_prepared(corpus) else resolve_corpus(corpus)
    main = dist is None or dist.main
    if main:
        folder = prepared(path, tokenizer, log=log)
    if dist is not None and dist.world_size > 1:
        tdist.barrier()
    if not main:
        folder = prepared(path, tokenizer, log=lambda *_: None)  # in the cache now: nothing to do
    train_docs = PreparedCorpus(folder, "train", pc.held_out, pc.held_out_seed)
    held = PreparedCorpus(folder, "held-out", pc.held_out, pc.held_out_seed)
    if held.num_documents < 2:
        raise ValueError(
            f"{corpus}: too few documents to hold any out for evaluation "
            f"(held_out={pc.held_out}); use a larger corpus or a larger --held-out"
        )
    special = SpecialIds.from_vocab(tokenizer.vocab)
    # the held-out documents in order, as many as the evaluation can use (twice its tokens):
    # memory stays flat however large the corpus (the held-out share of 450 MB is 9 MB of text)
    length = pc.eval_seq_length or pc.max_seq_length
    docs, tokens = [], 0
    for d in range(held.num_documents):
        docs.append(held.document(d))
        tokens += sum(map(len, docs[-1]))
        if tokens > 2 * pc.eval_instances * length and len(docs) >= 2:
            break
    held_inst = create_instances(docs, special, length, pc.short_seq_prob, seed=pc.held_out_seed + 1)
    log(
        f"corpus {path}: {train_docs.meta['documents']:,} documents ({held.num_documents} held out), "
        f"{train_docs.meta['sentences']:,} sentences, {train_docs.meta['tokens']:,} tokens; "
        f"{len(held_inst)} held-out instances"
    )
    return train_docs, held_inst


def initial_model(pc: PretrainConfig, tc: TrainConfig, tokenizer: Tokenizer, init_from=None) -> BertForPreTraining:
    """The model a run starts from: a new one of pc's shape (seeded by tc.seed), or init_from's
    weights; without NSP its head is frozen, so that DDP waits for no gradient of it."""
    overrides = {"vocab_size": tokenizer.vocab_size}
    if pc.dropout is not None:
        overrides |= {"hidden_dropout_prob": pc.dropout, "attention_probs_dropout_prob": pc.dropout}
    if pc.initializer_range is not None:
        overrides["initializer_range"] = pc.initializer_range
    torch.manual_seed(tc.seed)
    if init_from is not None:
        model, _ = load(
            init_from, BertForPreTraining, config_overrides={k: v for k, v in overrides.items() if k != "vocab_size"}
        )
        if model.config.vocab_size != tokenizer.vocab_size:
            raise ValueError(
                f"{init_from} has {model.config.vocab_size} embeddings but the "
                f"vocabulary has {tokenizer.vocab_size} tokens"
            )
    else:
        shape = dataclasses.asdict(BertConfig.preset(pc.preset, **overrides))
        changes = parse_changes(pc.changes)
        model = BertForPreTraining(BertConfig(**changed(shape, changes, pc.local_window, pc.global_every)))
        if pc.position_init != "normal":
            init_positions(model, pc.position_init)
    if not pc.nsp:  # the NSP head learns nothing
        model.bert.pooler.requires_grad_(False)
        model.cls.seq_relationship.requires_grad_(False)
    return model


def pretrain(
    corpus, pc: PretrainConfig, tc: TrainConfig, resume: bool = False, tokenizer_dir=None, init_from=None, log=print
) -> dict:
    """The whole recipe: read, tokenize, pair, mask, train, evaluate, checkpoint.

    The vocabulary comes from `tokenizer_dir` if given (e.g. bert-base-uncased's vocab.txt),
    from the run directory when resuming, and is otherwise trained on the training documents
    (by rank 0 only under torchrun: the others wait and read the same vocab.txt).
    `init_from` continues from a saved model (its weights and vocabulary) instead of a random
    init: the second phase of a recipe, or further pre-training of a real BERT.
    """
    run = Path(tc.out_dir)
    dist = init_distributed(pick_device(tc.device))
    if not resume and dist.main:
        refuse_existing_run(run)  # before anything (vocab.txt, pretrain_config.json) is written
    quiet = log if dist.main else (lambda *_: None)
    if tokenizer_dir is not None:
        tokenizer_dir = resolve_model(tokenizer_dir, weights=False)  # a path, or a Hub id's vocabulary
    source = tokenizer_dir or (run if resume and (run / VOCAB_NAME).is_file() else init_from)
    if source is None and is_prepared(corpus):
        source = corpus  # a prepared corpus carries its vocabulary
    if source is None:  # rank 0 trains the vocabulary; the others read its vocab.txt
        if dist.main:
            path = Path(corpus) if Path(corpus).exists() else resolve_corpus(corpus)
            train_tokenizer(path, pc, log=log).save(run)
        if dist.world_size > 1:
            tdist.barrier()
        source = run
    tokenizer = Tokenizer.load(source)
    pc = dataclasses.replace(pc, vocab_size=tokenizer.vocab_size)  # what the run really used
    train_docs, held_inst = load_corpus(corpus, pc, tokenizer, dist, log=quiet)
    special = SpecialIds.from_vocab(tokenizer.vocab)
    data = PretrainingData(
        train_docs,
        special,
        batch_size=tc.batch_size,
        seed=pc.seed,
        max_seq_length=pc.max_seq_length,
        short_seq_prob=pc.short_seq_prob,
        mlm_probability=pc.mlm_probability,
        max_predictions_per_seq=pc.max_predictions_per_seq,
        whole_word=pc.whole_word,
        rank=dist.rank,
        world_size=dist.world_size,
        mix=parse_mix(pc.masking),
        not_next=0.5 if pc.nsp else 0.0,
        mask_epochs=pc.mask_epochs,
    )
    objective = make_objective(pc, data, fixed_batches(held_inst, special, pc), special.mask_id)
    model = initial_model(pc, tc, tokenizer, init_from)
    if dist.main:
        run.mkdir(parents=True, exist_ok=True)
        recorded = pc.to_dict()
        if init_from is not None:
            recorded["preset"] = None  # the shape comes from init_from, not from a preset
        recorded["init_from"] = str(init_from) if init_from else None
        write_json(run / PRETRAIN_CONFIG_NAME, recorded)
        log(f"model: {model.config.summary()}")
        log("pretrain config: " + json.dumps(recorded))
        log("train config: " + json.dumps(tc.to_dict()))
    return train(model, objective, tc, tokenizer, resume=resume, log=log)


# ----------------------------------------------------------------------------------------
# Recipes: named settings, found by measurement (docs/pretraining.md)
# ----------------------------------------------------------------------------------------
@dataclass
class Phase:
    """One stage of a recipe: typed settings, and its share of the recipe's minutes or steps."""

    name: str
    pretrain: PretrainConfig
    train: TrainConfig
    share: float = 1.0


RECIPES: dict[str, list[Phase]] = {
    # Sequence-length warm-up (docs/pretraining.md, "Why the recipe starts with short sequences"):
    # a tiny BERT at length 128 sits long on the unigram plateau; at length 32 it learns to use
    # the neighbouring words within a few hundred steps, and that carries over to length 128.
    # Every epoch draws new NSP pairs.
    "classroom": [
        Phase(
            "len32",
            PretrainConfig(preset="tiny", vocab_size=8192, max_seq_length=32, eval_seq_length=128, dropout=0.0),
            TrainConfig(batch_size=128, lr=2e-3, warmup=0.05, eval_every=250, minutes=15),
            share=0.2,
        ),
        Phase(
            "len128",
            PretrainConfig(preset="tiny", vocab_size=8192, max_seq_length=128, eval_seq_length=128, dropout=0.0),
            TrainConfig(batch_size=32, lr=1e-3, warmup=0.05, eval_every=500, minutes=15),
            share=0.8,
        ),
    ],
    "smoke": [
        Phase(
            "smoke",
            PretrainConfig(preset="tiny", vocab_size=1000, eval_instances=64),
            TrainConfig(batch_size=8, lr=1e-3, steps=20, eval_every=10, ckpt_every=10, log_every=5),
        )
    ],
}
# The ladder's rung (benchmarks/ladder.py): the classroom's phases, 1,000 steps each, so that a
# budget of a few minutes still leaves the unigram plateau at length 32 first.
RECIPES["lesson"] = [
    dataclasses.replace(p, train=dataclasses.replace(p.train, minutes=None, steps=1000), share=0.5)
    for p in RECIPES["classroom"]
]


def run_recipe(
    name: str,
    corpus,
    out,
    pre_overrides: dict,
    train_overrides: dict,
    resume=False,
    tokenizer_dir=None,
    init_from=None,
    log=print,
) -> dict:
    """Run a named recipe's phases one after the other; each phase starts from the last.

    The overrides are the settings given explicitly (e.g. on the command line): they replace the
    recipe's values in every phase. minutes/steps are the recipe's total, split by the phases'
    shares. With resume, finished phases are skipped and an unfinished one continues.
    """
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; choose one of {', '.join(RECIPES)}")
    recipe = RECIPES[name]
    dirs = phase_dirs(out, [p.name for p in recipe])
    result, previous = {}, init_from
    for phase, run_dir in zip(recipe, dirs):
        pc = dataclasses.replace(phase.pretrain, **pre_overrides)
        tc = dataclasses.replace(phase.train, **{**train_overrides, "out_dir": str(run_dir)})
        if tc.minutes is not None:
            tc = dataclasses.replace(tc, minutes=tc.minutes * phase.share, steps=None)
        elif tc.steps is not None:
            tc = dataclasses.replace(tc, steps=max(1, round(tc.steps * phase.share)))
        if len(recipe) > 1:
            log(f"== recipe {name}, phase {phase.name} -> {run_dir}")
        if resume and is_complete(run_dir):
            log(f"phase {phase.name} already finished; skipping")
        else:
            resuming = resume and run_dir.joinpath(CHECKPOINTS_DIR).is_dir()
            result = pretrain(
                corpus,
                pc,
                tc,
                resume=resuming,
                log=log,
                tokenizer_dir=tokenizer_dir if previous is None else None,
                init_from=previous,
            )
        previous = run_dir
    return result


@dataclasses.dataclass
class Evaluation:
    """What evaluate_model scores: the model, its pre-training settings and the fixed batches."""

    model: BertForPreTraining | BertForMaskedLM
    pc: PretrainConfig
    documents: int
    instances: int
    batches: list[Batch]
    mask_id: int


def saved_pretrain_config(model_dir) -> PretrainConfig:
    """The pretrain_config.json next to a model (its known fields), else the defaults."""
    saved = Path(model_dir) / PRETRAIN_CONFIG_NAME
    names = {f.name for f in dataclasses.fields(PretrainConfig)}
    if not saved.is_file():
        return PretrainConfig()
    return PretrainConfig(**{k: v for k, v in json.loads(saved.read_text()).items() if k in names})


def evaluation(
    model_dir, corpus, split: str = "all", limit: int | None = None, pc: PretrainConfig | None = None
) -> Evaluation:
    """The model and the fixed held-out batches evaluate_model scores (see there)."""
    model_dir = Path(model_dir)
    pc = pc or saved_pretrain_config(model_dir)
    # a model pre-trained without NSP may be stored without its (untrained) NSP head
    model, tokenizer = load(model_dir, BertForPreTraining if pc.nsp else BertForMaskedLM)
    special = SpecialIds.from_vocab(tokenizer.vocab)
    docs = read_documents(resolve_corpus(corpus))
    if split == "held-out":
        docs = split_documents(docs, held_out=pc.held_out, seed=pc.held_out_seed)[1]
    elif split != "all":
        raise ValueError(f"split must be 'all' or 'held-out', not {split!r}")
    inst = create_instances(
        encode_documents(tokenizer, docs),
        special,
        pc.eval_seq_length or pc.max_seq_length,
        pc.short_seq_prob,
        seed=pc.held_out_seed + 1,
    )
    pc = dataclasses.replace(pc, eval_instances=limit or len(inst))
    batches = fixed_batches(inst, special, pc)
    return Evaluation(model, pc, len(docs), min(len(inst), pc.eval_instances), batches, special.mask_id)


def evaluate_model(
    model_dir, corpus, split: str = "all", limit: int | None = None, pc: PretrainConfig | None = None
) -> dict:
    """MLM/NSP metrics of a saved model on a corpus, with fixed masks (repeatable); for a
    left-to-right model (objective "ltr" in its pretrain_config.json) next-token loss and accuracy.

    split="all": every document of the corpus is evaluation data (e.g. WikiText, out of domain);
    split="held-out": only the documents the model's pre-training run held out, found from the
    run's pretrain_config.json (held_out share and seed) next to the model.
    """
    ev = evaluation(model_dir, corpus, split, limit, pc)
    if ev.pc.objective == "ltr":
        result = evaluate_next_token(ev.model, [next_token_batch(b) for b in ev.batches])
    else:  # no NSP head trained: no score
        result = evaluate_batches(ev.model, ev.batches, ev.mask_id, nsp=ev.pc.nsp)
    return {"documents": ev.documents, "instances": ev.instances, **result}
