"""BERT Lab: a compact, faithful BERT to pre-train, fine-tune and look inside on a laptop.

    import lab
    model, tokenizer = lab.load("models/bert-lab-classroom")
    from lab import explore
    explore.fill_mask(model, tokenizer, "the cat sat on the [MASK] .")

The folders follow the data, and an import only ever points up this list:

    config, tokenizer                text -> word pieces -> ids
    data/                            documents -> NSP pairs, 80/10/10 masks -> Batch; SQuAD, tagged files
    model, checkpoint, hub           Batch -> encoder -> heads -> logits; Hugging Face's layout on disk
    training/                        the one training loop; pre-training and fine-tuning plug into it
    inspect/                         explore: what a trained model does, how (trace: every operation),
                                     and what it rests on
    studies/                         the notebooks' experiments (Table 7, BERT vs GPT vs ELMo, ...)
    figures/                         each figure's numbers once, drawn by plotly and by matplotlib
    exercises/, __main__             build-it-yourself checks; the command line
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
