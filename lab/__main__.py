"""Command line: python -m lab COMMAND ...

    python -m lab pretrain --recipe classroom --corpus novels --out runs/classroom
    python -m lab pretrain --preset mini --corpus PATH --out runs/mini --steps 2000 [--resume]
    torchrun --nproc_per_node=4 -m lab pretrain --preset base --corpus PATH --out runs/base --steps 100000
    python -m lab finetune-cls --model runs/classroom --train sst2/train.tsv --dev sst2/dev.tsv --out runs/sst2
    python -m lab finetune-qa --model runs/classroom --data squad-v1.1 --out runs/squad
    python -m lab eval --model runs/classroom --corpus novels --split held-out
    python -m lab fill-mask --model runs/classroom "she [MASK] the letter twice ."
    python -m lab plot runs/classroom --out curves.png

Every command prints its configuration at start; `python -m lab COMMAND --help` lists the options.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys


def _add_train_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("training loop")
    g.add_argument("--out", required=True, help="run directory (checkpoints, metrics.jsonl)")
    length = g.add_mutually_exclusive_group()
    length.add_argument("--steps", type=int, help="optimizer steps")
    length.add_argument("--minutes", type=float, help="wall-clock budget (steps set by a speed probe)")
    g.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    for name, typ, hlp in [("batch-size", int, "sequences per micro-batch and process"),
                           ("grad-accum", int, "micro-batches per optimizer step"),
                           ("lr", float, "peak learning rate"), ("warmup", float, "warm-up: fraction (<1) or steps"),
                           ("weight-decay", float, "AdamW weight decay"), ("clip-norm", float, "gradient clipping, 0 = off"),
                           ("eval-every", int, "steps between evaluations"), ("ckpt-every", int, "steps between checkpoints"),
                           ("log-every", int, "steps between metrics records"), ("seed", int, "random seed"),
                           ("threads", int, "CPU threads for torch")]:
        g.add_argument(f"--{name}", type=typ, help=hlp)
    g.add_argument("--precision", choices=["auto", "bf16", "fp32"])
    g.add_argument("--device", help="auto (default), cpu, cuda, mps")
    g.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    g.add_argument("--compile", action="store_true", default=None,
                   help="torch.compile the model (10-40 s to compile; faster steps)")


def _train_config(args, recipe_overrides: dict):
    from .train import TrainConfig
    values = dict(recipe_overrides)
    for f in dataclasses.fields(TrainConfig):
        v = getattr(args, f.name, None)
        if v is not None:
            values[f.name] = v
    if args.steps is not None:
        values["minutes"] = None
    if args.minutes is not None:
        values["steps"] = None
    values["out_dir"] = args.out
    if args.no_progress:
        values["progress"] = False
    return TrainConfig(**values)


def cmd_pretrain(args) -> int:
    from .pretrain import PretrainConfig, pretrain, run_recipe
    from .train import TrainConfig
    pre = {f.name: getattr(args, f.name) for f in dataclasses.fields(PretrainConfig)
           if getattr(args, f.name, None) is not None and getattr(args, f.name) is not False}
    if args.recipe:
        train = {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)
                 if getattr(args, f.name, None) is not None}
        if args.steps is not None:
            train["minutes"] = None
        if args.no_progress:
            train["progress"] = False
        result = run_recipe(args.recipe, args.corpus, args.out, pre, train, resume=args.resume,
                            tokenizer_dir=args.tokenizer, init_from=args.init_from, log=_log)
    else:
        tc = _train_config(args, {})
        if tc.steps is None and tc.minutes is None:
            raise SystemExit("give --steps or --minutes (or a --recipe)")
        result = pretrain(args.corpus, PretrainConfig(**pre), tc, resume=args.resume,
                          tokenizer_dir=args.tokenizer, init_from=args.init_from, log=_log)
    _log("final held-out evaluation: " + json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0


# fine-tuning defaults (BERT's paper: lr 5e-5, batch 32, 10% warm-up); evaluation once per epoch
FINETUNE_DEFAULTS = {"lr": 5e-5, "batch_size": 32, "warmup": 0.1, "eval_every": 0, "log_every": 20}


def cmd_finetune_cls(args) -> int:
    from .finetune import finetune_classification
    tc = _train_config(args, FINETUNE_DEFAULTS)
    result = finetune_classification(args.model, args.train, args.dev, tc, mode=args.mode,
                                     feature_layers=args.feature_layers, epochs=args.epochs,
                                     max_seq_length=args.max_seq_length, random_init=args.random_init,
                                     limit=args.limit, resume=args.resume, dropout=args.dropout, log=_log)
    _log("final dev evaluation: " + json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0


def cmd_finetune_qa(args) -> int:
    from .finetune import finetune_qa
    tc = _train_config(args, FINETUNE_DEFAULTS)
    result = finetune_qa(args.model, args.data, tc, epochs=args.epochs, train_articles=args.train_articles,
                         max_seq_length=args.max_seq_length, doc_stride=args.doc_stride,
                         max_query_length=args.max_query_length, random_init=args.random_init,
                         eval_limit=args.eval_limit, resume=args.resume, dropout=args.dropout, log=_log)
    _log("final evaluation (held-out articles): " + json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0


def cmd_eval(args) -> int:
    from .checkpoint import saved_model_class
    kind = saved_model_class(args.model)                 # from config.json: weights are read once, below
    if kind in ("BertForSequenceClassification", "BertForQuestionAnswering"):
        from .finetune import evaluate_saved
        result = evaluate_saved(args.model, args.data, max_seq_length=args.max_seq_length,
                                train_articles=args.train_articles, eval_limit=args.limit)
    else:
        from .pretrain import evaluate_model
        if not args.data:
            raise ValueError("give the corpus to evaluate on with --corpus (a text file/folder or catalog name)")
        result = evaluate_model(args.model, args.data, split=args.split, limit=args.limit)
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}, indent=2))
    return 0


def cmd_fill_mask(args) -> int:
    from . import explore
    from .checkpoint import load
    model, tokenizer = load(args.model)
    for text in args.text:
        result = explore.fill_mask(model, tokenizer, text, top_k=args.top_k)
        print(text)
        for i, preds in enumerate(result, 1):
            print(f"  [MASK] {i}: " + ", ".join(f"{tok} {p:.2f}" for tok, p in preds))
    return 0


def cmd_plot(args) -> int:
    from .plots import training_curves
    fig = training_curves(args.run, x=args.x, title=args.title)
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return 0


def _log(msg: str) -> None:
    if int(os.environ.get("RANK", 0)) == 0:
        print(msg, flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("pretrain", help="pre-train a BERT with masked LM + next sentence prediction",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--corpus", required=True,
                   help="a text file or folder, or a catalog name (novels, wikitext-2, wikitext-103)")
    from .pretrain import RECIPES
    p.add_argument("--recipe", choices=list(RECIPES),
                   help="named settings (see README); explicit options override them")
    g = p.add_argument_group("model and data")
    g.add_argument("--preset", help="model shape: tiny, mini, small, medium, base, large")
    g.add_argument("--vocab-size", type=int, help="WordPiece vocabulary size (trained on the corpus)")
    g.add_argument("--tokenizer", help="use this vocab.txt / tokenizer directory instead of training one")
    g.add_argument("--init-from", help="start from this model directory (weights + vocabulary) "
                                       "instead of a random init")
    g.add_argument("--eval-seq-length", type=int, help="length of the held-out instances")
    g.add_argument("--max-seq-length", type=int)
    g.add_argument("--short-seq-prob", type=float)
    g.add_argument("--mlm-probability", type=float)
    g.add_argument("--max-predictions-per-seq", type=int)
    g.add_argument("--whole-word", action="store_true", help="whole-word masking")
    g.add_argument("--dupe-factor", type=int)
    g.add_argument("--held-out", type=float, help="share of documents held out for evaluation")
    g.add_argument("--eval-instances", type=int)
    g.add_argument("--dropout", type=float, help="override both dropout probabilities")
    g.add_argument("--initializer-range", type=float, help="std of the weight init (BERT: 0.02)")
    g.add_argument("--position-init", choices=["normal", "sinusoidal"], help="initial position table")
    _add_train_args(p)
    p.set_defaults(func=cmd_pretrain)

    p = sub.add_parser("finetune-cls", help="fine-tune (or train a frozen-feature classifier) on a TSV/CSV task",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", required=True, help="HF-layout BERT directory (a run, a bundled model, bert-base-uncased...)")
    p.add_argument("--train", required=True, help="TSV/CSV with a header: sentence<TAB>label or sentence1, sentence2, label")
    p.add_argument("--dev", required=True, help="evaluation file, same format")
    p.add_argument("--mode", choices=["finetune", "features"], default="finetune",
                   help="finetune: all parameters train; features: the encoder is frozen")
    p.add_argument("--feature-layers", type=int, default=1,
                   help="features mode: 1 = pooled [CLS]; 4 = concatenated [CLS] of the last four layers")
    p.add_argument("--epochs", type=float, default=2.0)
    p.add_argument("--max-seq-length", type=int, default=128)
    p.add_argument("--limit", type=int, help="use only the first N training rows")
    p.add_argument("--random-init", action="store_true", help="same shape, random weights (the no-pre-training baseline)")
    p.add_argument("--dropout", type=float, default=0.1, help="dropout while fine-tuning (BERT: 0.1)")
    _add_train_args(p)
    p.set_defaults(func=cmd_finetune_cls)

    p = sub.add_parser("finetune-qa", help="fine-tune for extractive question answering (SQuAD)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", required=True, help="HF-layout BERT directory")
    p.add_argument("--data", default="squad-v1.1",
                   help="SQuAD JSON (or .zip), a folder, or the catalog name squad-v1.1")
    p.add_argument("--train-articles", type=int, default=40,
                   help="the first N articles train, the rest evaluate (the only SQuAD data here is the dev set)")
    p.add_argument("--epochs", type=float, default=2.0)
    p.add_argument("--max-seq-length", type=int, default=384)
    p.add_argument("--doc-stride", type=int, default=128)
    p.add_argument("--max-query-length", type=int, default=64)
    p.add_argument("--eval-limit", type=int, help="evaluate only the first N held-out questions")
    p.add_argument("--random-init", action="store_true", help="same shape, random weights")
    p.add_argument("--dropout", type=float, default=0.1, help="dropout while fine-tuning (BERT: 0.1)")
    _add_train_args(p)
    p.set_defaults(func=cmd_finetune_qa)

    p = sub.add_parser("eval", help="re-measure a saved model: MLM/NSP accuracy on a corpus (pre-trained), "
                                    "accuracy on a TSV/CSV (classifier), EM/F1 on held-out SQuAD articles (QA)")
    p.add_argument("--model", required=True, help="HF-layout model directory")
    p.add_argument("--corpus", "--data", dest="data",
                   help="pre-trained model: text file/folder or catalog name; classifier: dev TSV/CSV; "
                        "QA: SQuAD JSON (default for fine-tuned models: the data in their task_config.json)")
    p.add_argument("--split", choices=["all", "held-out"], default="all",
                   help="held-out: the documents the model's pre-training run held out")
    p.add_argument("--limit", type=int, help="evaluate at most this many instances / questions")
    p.add_argument("--train-articles", type=int, help="QA: the first N articles trained (the rest evaluate)")
    p.add_argument("--max-seq-length", type=int, help="fine-tuned models: sequence length (default: the run's)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("fill-mask", help="top predictions for each [MASK] in a sentence")
    p.add_argument("--model", required=True, help="HF-layout model directory with an MLM head")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("text", nargs="+", help='sentences with [MASK], e.g. "she [MASK] the letter ."')
    p.set_defaults(func=cmd_fill_mask)

    p = sub.add_parser("plot", help="training curves of a run (metrics.jsonl) as a PNG")
    p.add_argument("run", help="run directory or metrics.jsonl")
    p.add_argument("--out", required=True, help="image file to write (.png, .svg, .pdf)")
    p.add_argument("--x", choices=["time", "step"], default="time")
    p.add_argument("--title")
    p.set_defaults(func=cmd_plot)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError, FileExistsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
