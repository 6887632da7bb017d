"""Every name the lab gives a file or a folder on disk, defined once.

Writers and readers import these names instead of spelling "config.json" themselves, so the
layouts below are the whole truth about what is where. This module imports nothing of the lab
(every other module may import it).
"""

# A model directory: Hugging Face's layout (lab.save writes it, lab.load reads it; so do
# transformers' save_pretrained / from_pretrained):
#
#     config.json                   CONFIG_NAME            BertConfig (HF field names) + architectures
#     model.safetensors             WEIGHTS_NAME           the weights
#     model.safetensors.index.json  INDEX_NAME             or: a sharded checkpoint's index (read only)
#     pytorch_model.bin             TORCH_WEIGHTS_NAME     or: older PyTorch weights (read only)
#     vocab.txt                     VOCAB_NAME             WordPiece vocabulary, line i = token id i
#     tokenizer.json                TOKENIZER_NAME         the `tokenizers` pipeline
#     tokenizer_config.json         TOKENIZER_CONFIG_NAME  do_lower_case, model_max_length
#     README.md                     MODEL_CARD_NAME        the model card (bundled models)
#     metrics.json                  EVALUATIONS_NAME       the evaluations a bundled model was measured
#                                                          with (scripts/bundle_model.py; re-checked by
#                                                          tests/test_bundled.py)
#
# A run directory (lab.training.train writes it, lab.run_files reads it): the newest model (a model directory,
# so lab.load("runs/NAME") works), and
#
#     train_config.json             TRAIN_CONFIG_NAME      the loop's settings (+ total steps)
#     pretrain_config.json          PRETRAIN_CONFIG_NAME   pre-training's settings, or
#     task_config.json              TASK_CONFIG_NAME       a fine-tuning task's settings
#     metrics.jsonl                 METRICS_NAME           one JSON record per log / evaluation
#     checkpoints/                  CHECKPOINTS_DIR
#         step-0000500/             checkpoint_name(500)   a model directory, and in a resume point
#             trainer_state.pt      STATE_NAME             optimizer, scheduler, RNG, step
#     phase1-len32/                 phase_name(1, "len32") an earlier phase of a recipe, itself a run
#
# A prepared corpus (lab.data.prepare): three flat arrays and their description:
#
#     tokens.bin                    TOKENS_NAME            every sentence's token ids, back to back
#     sentences.npy                 SENTENCES_NAME         sentence offsets into tokens.bin
#     documents.npy                 DOCUMENTS_NAME         document offsets into sentences.npy
#     meta.json                     META_NAME              sizes, dtype, vocabulary hash, source
#
# A browser site (lab.web.export writes it, the page in web/ reads it):
#
#     manifest.json                 MANIFEST_NAME          the models: views, files, settings
#     models/<name>/model.onnx      ONNX_NAME              the model as an ONNX graph
#     models/<name>/tokenizer.json  TOKENIZER_NAME         its tokenizer

from __future__ import annotations

from pathlib import Path

# -- a model directory (Hugging Face's names) ----------------------------------------------
REPOSITORY = Path(__file__).resolve().parents[1]  # lab/.. : models/, notebooks/, pyproject.toml

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
INDEX_NAME = "model.safetensors.index.json"  # a sharded safetensors checkpoint
TORCH_WEIGHTS_NAME = "pytorch_model.bin"
WEIGHT_FILES = (WEIGHTS_NAME, INDEX_NAME, TORCH_WEIGHTS_NAME)  # in the order they are preferred
VOCAB_NAME = "vocab.txt"
TOKENIZER_NAME = "tokenizer.json"
TOKENIZER_CONFIG_NAME = "tokenizer_config.json"
TOKENIZER_FILES = (VOCAB_NAME, TOKENIZER_NAME, TOKENIZER_CONFIG_NAME)
MODEL_CARD_NAME = "README.md"
EVALUATIONS_NAME = "metrics.json"  # {"evaluations": [{"args": [...], "metrics": {...}}]}

# -- a run directory ------------------------------------------------------------------------
TRAIN_CONFIG_NAME = "train_config.json"
PRETRAIN_CONFIG_NAME = "pretrain_config.json"
TASK_CONFIG_NAME = "task_config.json"
METRICS_NAME = "metrics.jsonl"
STATE_NAME = "trainer_state.pt"
CHECKPOINTS_DIR = "checkpoints"
CHECKPOINT_GLOB = "step-*"  # checkpoint_name's pattern
PHASE_GLOB = "phase*-*"  # phase_name's pattern

# -- a prepared corpus ----------------------------------------------------------------------
TOKENS_NAME = "tokens.bin"
SENTENCES_NAME = "sentences.npy"
DOCUMENTS_NAME = "documents.npy"
META_NAME = "meta.json"

# -- a browser site -------------------------------------------------------------------------
MANIFEST_NAME = "manifest.json"
OPENINGS_NAME = "openings.json"  # the browser edition's opening examples, computed by the lab
SITE_MODELS_DIR = "models"
ONNX_NAME = "model.onnx"


def checkpoint_name(step: int) -> str:
    """500 -> "step-0000500" (zero-padded, so names sort in step order)."""
    return f"step-{step:07d}"


def checkpoint_step(path) -> int:
    """checkpoints/step-0000500 -> 500."""
    return int(Path(path).name.split("-")[1])


def phase_name(number: int, name: str) -> str:
    """(1, "len32") -> "phase1-len32": the folder of a recipe's phase (numbered from 1)."""
    return f"phase{number}-{name}"


def has_model_files(path) -> bool:
    """config.json and weights: a directory lab.load can read."""
    path = Path(path)
    return (path / CONFIG_NAME).is_file() and any((path / f).is_file() for f in WEIGHT_FILES)


def has_tokenizer_files(path) -> bool:
    """vocab.txt or tokenizer.json: a directory Tokenizer.load can read."""
    path = Path(path)
    return (path / VOCAB_NAME).is_file() or (path / TOKENIZER_NAME).is_file()
