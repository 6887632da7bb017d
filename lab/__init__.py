"""BERT Lab: a compact, faithful BERT to pre-train, fine-tune and look inside on a laptop.

import lab
model, tokenizer = lab.load("models/bert-lab-classroom")
from lab import explore
explore.fill_mask(model, tokenizer, "the cat sat on the [MASK] .")
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
