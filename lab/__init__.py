"""BERT Lab: a compact, faithful BERT to pre-train, fine-tune and look inside on a laptop.

    import lab
    model, tokenizer = lab.load("models/bert-lab-classroom")
    from lab import explore
    explore.fill_mask(model, tokenizer, "the cat sat on the [MASK] .")

The folders follow the data, and an import only ever points up this list:

    files                            every name the lab gives a file or a folder on disk, once
    config, tokenizer                text -> word pieces -> ids
    device                           where the arithmetic runs: the device, bf16 autocast, the processes
    data/                            documents -> NSP pairs, 80/10/10 masks -> Batch; SQuAD, tagged files
    modern                           what changed since BERT: pre-norm, GeGLU, rotary, no biases, local attention
    modernbert                       ModernBERT's checkpoints: its config and tensor names <-> the lab's
    model, checkpoint, hub           Batch -> encoder -> heads -> logits; Hugging Face's layout on disk
    training/                        the one training loop; pre-training and fine-tuning plug into it
    inspect/                         explore: what a trained model does, how (trace: every operation),
                                     and what it rests on
    web/                             the browser edition: the bundled models exported for a static site
    studies/                         the notebooks' experiments (Table 7, BERT vs GPT vs ELMo, ...)
    figures/                         each figure's numbers once, drawn by plotly and by matplotlib
    exercises/, notebook_setup       build-it-yourself checks; the notebooks' set-up cell
    __main__                         the command line
"""

from .checkpoint import load, save
from .config import PRESETS, BertConfig
from .model import (
    BertForMaskedLM,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
    ModelOutput,
)
from .tokenizer import Encoding, Tokenizer

# `from lab import explore, plots, exercises`: the modules a notebook reaches for, by short names
PUBLIC_MODULES = {
    "explore": "lab.inspect.explore",
    "plots": "lab.figures.matplotlib_figures",
    "exercises": "lab.exercises",
}


def __getattr__(name: str):
    """Import explore, plots and exercises on first use: `import lab` stays as light as the core."""
    if name not in PUBLIC_MODULES:
        raise AttributeError(f"module 'lab' has no attribute {name!r}")
    import importlib  # deferred: only a public module's first use needs it

    module = importlib.import_module(PUBLIC_MODULES[name])
    globals()[name] = module
    return module


__all__ = [
    "BertConfig",
    "PRESETS",
    "BertModel",
    "BertForPreTraining",
    "BertForMaskedLM",
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertForQuestionAnswering",
    "ModelOutput",
    "Tokenizer",
    "Encoding",
    "load",
    "save",
]
