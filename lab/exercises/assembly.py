"""Your classes inside a lab model. `assemble` puts the student's Embeddings and EncoderLayer into a
lab BertModel (or any model with a head) under BERT's parameter names, so that real checkpoints load
into it; `from_notebook` runs the stub cells of a saved exercise notebook and hands back what they
define (the capstone reads notebooks 1 and 2 this way).
"""

from __future__ import annotations

import json
import linecache
from pathlib import Path

import torch
from torch import nn

from lab.config import BertConfig
from lab.files import REPOSITORY
from lab.model import MODEL_CLASSES, BertModel

from . import core

NOTEBOOKS = REPOSITORY / "notebooks" / "exercises"


def _adapted_layer(cls):
    """A subclass of the student's layer class that lab.model.BertEncoder can call:
    layer(x, mask (B, 1, 1, T) bool or None, head_mask, output_attentions) -> (x, None), calling
    the student's forward(x, mask [B, T]). A subclass, not a wrapper, so that the parameter names
    stay encoder.layer.N.attention.self.query.weight and real checkpoints load."""
    if getattr(cls, "_lab_adapted", False):
        return cls

    def forward(self, x, mask=None, head_mask=None, output_attentions=False, rope=None):
        if head_mask is not None or output_attentions or rope is not None:
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
    if config is None:
        raise ValueError("assemble needs a config: a lab.BertConfig, or a model directory (its config.json)")
    if isinstance(config, (str, Path)):
        config = BertConfig.load(config)
    if not isinstance(config, BertConfig):
        raise TypeError(f"config must be a lab.BertConfig or a model directory, not {type(config).__name__}")
    if not config.is_bert:
        raise ValueError("assemble builds BERT as in 2018 from your pieces; this config has changes of lab.modern")
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
                f"{type(exc).__name__}: {exc}{core.student_line(exc)}"
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
