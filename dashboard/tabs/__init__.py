"""One module per tab: its handlers first, then build() laying out its components."""

from .attention import Attention
from .classify import Classify
from .masked_lm import MaskedLM
from .model import Model
from .next_sentence import NextSentence
from .question_answering import QuestionAnswering
from .tagging import Tagging
from .training import Training

TABS = (MaskedLM, NextSentence, Attention, QuestionAnswering, Classify, Tagging, Training, Model)  # in page order

__all__ = [
    "TABS",
    "Attention",
    "Classify",
    "MaskedLM",
    "Model",
    "NextSentence",
    "QuestionAnswering",
    "Tagging",
    "Training",
]
