#!/usr/bin/env bash
# Rebuild the bundled models under models/ with the project's own commands (see each MODEL_CARD.md).
#   bash scripts/make_models.sh            (or: make models)
# DATA: a folder laid out like ../shared/data (novels/, wikitext-2-raw/); default ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DATA=${BERT_LAB_DATA:-../shared/data}

# bert-lab-classroom: the 15-minute classroom recipe on the ten novels
$PY -m lab pretrain --recipe classroom --corpus "$DATA/novels" --out runs/classroom
$PY - <<'PY'
import shutil, lab
model, tok = lab.load("runs/classroom")
lab.save(model, tok, "models/bert-lab-classroom", dtype=__import__("torch").float16)   # fp16 storage
shutil.copy("runs/classroom/pretrain_config.json", "models/bert-lab-classroom/pretrain_config.json")
PY
$PY -m lab eval --model models/bert-lab-classroom --corpus "$DATA/novels" --split held-out
$PY -m lab eval --model models/bert-lab-classroom --corpus "$DATA/wikitext-2-raw/wiki.test.raw"
