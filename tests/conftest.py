"""Shared fixtures: an oddly sized tiny config (as HF's BertModelTester) and paths to shared data."""
import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("BERT_LAB_DATA", ROOT.parent / "shared" / "data"))


def tiny_config(**overrides):
    from lab import BertConfig
    values = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=37, max_position_embeddings=64, type_vocab_size=2,
                  hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    values.update(overrides)
    return BertConfig(**values)


@pytest.fixture
def tiny_cfg():
    return tiny_config()


@pytest.fixture
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
