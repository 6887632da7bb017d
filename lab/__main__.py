"""Command line: python -m lab COMMAND ... (`python -m lab COMMAND --help` lists the options).

    python -m lab prepare --corpus novels --tokenizer models/bert-lab-classroom --out data/novels
    python -m lab pretrain --recipe classroom --corpus novels --out runs/classroom
    python -m lab finetune-cls --model runs/classroom --train sst2/train.tsv --dev sst2/dev.tsv --out runs/sst2
    python -m lab finetune-qa --model runs/classroom --data squad-v1.1 --out runs/squad
    python -m lab finetune-tag --model models/minilm-squad --train ner/dev.iob2 --eval ner/test.iob2 --out runs/ner
    python -m lab eval --model runs/classroom --corpus novels --split held-out
    python -m lab fill-mask --model runs/classroom "she [MASK] the letter twice ."
    python -m lab trace --model models/bert-lab-classroom "the cat sat on the [MASK] ." "it was happy ."
    python -m lab plot runs/classroom --out curves.png
    python -m lab export-web --out site --models bert-lab-classroom minilm-sst2
    python -m lab serve-web site --host 0.0.0.0

Every command prints its configuration at start. The training options are generated from the
settings dataclasses (one flag per field, its help the field's `setting`): declared once, there.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import types
import typing
from pathlib import Path

from lab.checkpoint import load, saved_model_class
from lab.config import PRESETS
from lab.data.datasets import resolve_corpus
from lab.data.prepare import prepare
from lab.data.tag_decoding import DECODINGS
from lab.device import PRECISIONS
from lab.figures.matplotlib_figures import training_curves
from lab.hub import resolve_model
from lab.inspect import explore
from lab.tokenizer import Tokenizer
from lab.training.finetune import (
    FINETUNE_TRAINING,
    ClassificationConfig,
    QAConfig,
    TaggingConfig,
    evaluate_saved,
    finetune_classification,
    finetune_qa,
    finetune_tagging,
)
from lab.training.pretrain import (
    OBJECTIVES,
    POSITION_INITS,
    RECIPES,
    PretrainConfig,
    evaluate_model,
    pretrain,
    run_recipe,
)
from lab.training.train import TrainConfig
from lab.web.export import PRECISIONS as WEB_PRECISIONS
from lab.web.export import export_site, site_sizes, size_report
from lab.web.serve import serve
from lab.web.trace_export import TRACES

# Fields whose values come from a fixed set (the modules that use them define the sets).
CHOICES = {
    "precision": PRECISIONS,
    "preset": tuple(PRESETS),
    "position_init": POSITION_INITS,
    "objective": OBJECTIVES,
    "mode": ("finetune", "features"),
    "format": ("auto", "uner", "conll", "conllu"),
    "decoding": DECODINGS,
}
RENAMED = {"out_dir": "out"}  # TrainConfig.out_dir is --out on the command line
REQUIRED = {"out_dir"}  # a run always says where it goes


# ----------------------------------------------------------------------------------------
# Settings dataclasses <-> command-line flags
# ----------------------------------------------------------------------------------------
def arg_type(hint) -> tuple[type, int | None]:
    """A field's argparse type and nargs from its type: int | None -> (int, None),
    tuple[float, float] -> (float, 2)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is tuple:
        return args[0], len(args)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = args[0]
    return (hint if hint in (int, float, str, bool) else str), None


def add_config_args(
    parser: argparse.ArgumentParser, cls, base=None, title: str | None = None, skip: tuple[str, ...] = ()
) -> None:
    """One flag per field of the dataclass `cls`; the default shown is `base`'s value. Flags
    default to None (bools: None too), so that only the options given explicitly override."""
    group = parser.add_argument_group(title or cls.__name__)
    taken = {a.dest: a for a in parser._actions}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        meaning = f.metadata.get("help", "")
        if f.name in skip:
            continue
        if f.name in taken:  # e.g. --seed sets every config that has one
            taken[f.name].help += f"; also {cls.__name__}'s: {meaning}"
            continue
        typ, nargs = arg_type(hints[f.name])
        required = f.name in REQUIRED or (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
        shown = getattr(base, f.name, None) if base is not None else (None if required else f.default)
        help_text = meaning + ("" if required else f" (default: {shown})")
        flag = "--" + RENAMED.get(f.name, f.name).replace("_", "-")
        if typ is bool:
            group.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        else:
            group.add_argument(
                flag,
                dest=f.name,
                type=typ,
                nargs=nargs,
                default=None,
                required=required,
                choices=CHOICES.get(f.name),
                help=help_text,
            )


def given(args, cls) -> dict:
    """The fields of `cls` that were given on the command line."""
    return {
        f.name: (tuple(v) if isinstance(v, list) else v)
        for f in dataclasses.fields(cls)
        if (v := getattr(args, f.name, None)) is not None
    }


def train_config(args, base: TrainConfig) -> TrainConfig:
    """The loop's settings: `base` with the options given; --steps and --minutes exclude each other."""
    values = given(args, TrainConfig)
    if values.get("steps") is not None and values.get("minutes") is not None:
        raise ValueError("give --steps or --minutes, not both")
    if values.get("steps") is not None:
        values["minutes"] = None
    elif values.get("minutes") is not None:
        values["steps"] = None
    return dataclasses.replace(base, **values)


# ----------------------------------------------------------------------------------------
# Commands
# ----------------------------------------------------------------------------------------
def cmd_pretrain(args) -> int:
    if args.recipe:
        train = given(args, TrainConfig)
        if "steps" in train:
            train["minutes"] = None
        result = run_recipe(
            args.recipe,
            args.corpus,
            args.out_dir,
            given(args, PretrainConfig),
            train,
            resume=args.resume,
            tokenizer_dir=args.tokenizer,
            init_from=args.init_from,
            log=_log,
        )
    else:
        tc = train_config(args, TrainConfig())
        if tc.steps is None and tc.minutes is None:
            raise ValueError("give --steps or --minutes (or a --recipe)")
        result = pretrain(
            args.corpus,
            PretrainConfig(**given(args, PretrainConfig)),
            tc,
            resume=args.resume,
            tokenizer_dir=args.tokenizer,
            init_from=args.init_from,
            log=_log,
        )
    _log("final held-out evaluation: " + json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0


def cmd_prepare(args) -> int:
    corpus = resolve_corpus(args.corpus)
    tokenizer = Tokenizer.load(resolve_model(args.tokenizer, weights=False))  # a path or a Hub id
    prepare(corpus, tokenizer, args.out, workers=args.workers, log=_log)
    return 0


def cmd_finetune_cls(args) -> int:
    result = finetune_classification(
        ClassificationConfig(**given(args, ClassificationConfig)),
        train_config(args, FINETUNE_TRAINING),
        resume=args.resume,
        log=_log,
    )
    _log("final dev evaluation: " + json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0


def cmd_finetune_qa(args) -> int:
    result = finetune_qa(
        QAConfig(**given(args, QAConfig)), train_config(args, FINETUNE_TRAINING), resume=args.resume, log=_log
    )
    _log("final evaluation (held-out articles): " + json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0


def cmd_finetune_tag(args) -> int:
    result = finetune_tagging(
        TaggingConfig(**given(args, TaggingConfig)), train_config(args, FINETUNE_TRAINING), resume=args.resume, log=_log
    )
    _log("final evaluation: " + json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0


def cmd_eval(args) -> int:
    kind = saved_model_class(args.model)  # from config.json: weights are read once, below
    if kind in ("BertForSequenceClassification", "BertForQuestionAnswering", "BertForTokenClassification"):
        result = evaluate_saved(
            args.model,
            args.data,
            max_seq_length=args.max_seq_length,
            train_articles=args.train_articles,
            eval_limit=args.limit,
        )
    else:
        if not args.data:
            raise ValueError("give the corpus to evaluate on with --corpus (a text file/folder or catalog name)")
        result = evaluate_model(args.model, args.data, split=args.split, limit=args.limit)
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}, indent=2))
    return 0


def cmd_fill_mask(args) -> int:
    model, tokenizer = load(args.model)
    for text in args.text:
        result = explore.fill_mask(model, tokenizer, text, top_k=args.top_k)
        print(text)
        for i, preds in enumerate(result, 1):
            print(f"  [MASK] {i}: " + ", ".join(f"{tok} {p:.2f}" for tok, p in preds))
    return 0


def cmd_trace(args) -> int:
    model, tokenizer = load(args.model)
    result = explore.trace(model, tokenizer, args.text_a, args.text_b)
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_json()))
        print(f"wrote {args.json}: {len(result.steps)} steps")
        return 0
    print(" ".join(result.tokens))
    for step in result.steps:
        shape = "×".join(map(str, step.shape))
        print(f"{step.name:<52} {shape:>10}  {step.formula}")
    if result.truncated:
        print(f"(the text was cut: {result.truncated} token(s) past the model's limit were left out)")
    return 0


def cmd_plot(args) -> int:
    fig = training_curves(args.run, x=args.x, title=args.title)
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return 0


def cmd_export_web(args) -> int:
    manifest = export_site(
        args.out,
        args.models,
        args.models_dir,
        precision=args.precision,
        log=_log,
        page=not args.models_only,
        trace=args.trace,
    )
    print(f"wrote {args.out}: {len(manifest['models'])} model(s)")
    for line in size_report(manifest, site_sizes(args.out)):
        print(line)
    return 0


def cmd_serve_web(args) -> int:
    serve(args.site, args.host, args.port)
    return 0


def _log(msg: str) -> None:
    if int(os.environ.get("RANK", 0)) == 0:
        print(msg, flush=True)


def add_prepare(sub) -> None:
    p = sub.add_parser("prepare", help="tokenize a corpus once into memory-mapped arrays (pretrain reads them lazily)")
    p.add_argument(
        "--corpus", required=True, help="a text file or folder, or a catalog name (novels, wikitext-103, ...)"
    )
    p.add_argument("--tokenizer", required=True, help="the vocabulary: a model or tokenizer directory, or a vocab.txt")
    p.add_argument("--out", required=True, help="folder to write (tokens.bin, sentences.npy, documents.npy, meta.json)")
    p.add_argument("--workers", type=int, help="processes reading the text (default: every core)")
    p.set_defaults(func=cmd_prepare)


def add_pretrain(sub) -> None:
    p = sub.add_parser("pretrain", help="pre-train a BERT with masked LM + next sentence prediction")
    p.add_argument(
        "--corpus",
        required=True,
        help="a text file or folder, a catalog name (novels, wikitext-2, wikitext-103), or a folder "
        "made by `prepare` (otherwise it is prepared on first use and cached)",
    )
    p.add_argument(
        "--recipe", choices=list(RECIPES), help="named settings (see README); explicit options override them"
    )
    p.add_argument("--tokenizer", help="use this vocab.txt / tokenizer directory instead of training one")
    p.add_argument(
        "--init-from", help="start from this model directory (weights + vocabulary) instead of a random init"
    )
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    add_config_args(p, PretrainConfig, title="model and data (PretrainConfig)")
    add_config_args(p, TrainConfig, title="training loop (TrainConfig)")
    p.set_defaults(func=cmd_pretrain)


FINETUNE_COMMANDS = (  # (command, task settings, handler, help)
    (
        "finetune-cls",
        ClassificationConfig,
        cmd_finetune_cls,
        "fine-tune (or train a frozen-feature classifier) on a TSV/CSV task",
    ),
    ("finetune-qa", QAConfig, cmd_finetune_qa, "fine-tune for extractive question answering (SQuAD)"),
    ("finetune-tag", TaggingConfig, cmd_finetune_tag, "fine-tune a token tagger: named entities (IOB2) or POS"),
)


def add_finetune(sub) -> None:
    for name, task_cls, func, what in FINETUNE_COMMANDS:
        p = sub.add_parser(name, help=what)
        p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
        add_config_args(p, task_cls, title=f"task ({task_cls.__name__})")
        add_config_args(p, TrainConfig, base=FINETUNE_TRAINING, title="training loop (TrainConfig)")
        p.set_defaults(func=func)


def add_eval(sub) -> None:
    p = sub.add_parser(
        "eval",
        help="re-measure a saved model: MLM/NSP accuracy on a corpus (pre-trained), "
        "accuracy on a TSV/CSV (classifier), EM/F1 on held-out SQuAD articles (QA), entity F1 or accuracy (tagger)",
    )
    p.add_argument("--model", required=True, help="HF-layout model directory")
    p.add_argument(
        "--corpus",
        "--data",
        dest="data",
        help="pre-trained model: text file/folder or catalog name; classifier: dev TSV/CSV; "
        "QA: SQuAD JSON; tagger: IOB2 / CoNLL-U (default for fine-tuned models: the data in their task_config.json)",
    )
    p.add_argument(
        "--split",
        choices=["all", "held-out"],
        default="all",
        help="held-out: the documents the model's pre-training run held out",
    )
    p.add_argument("--limit", type=int, help="evaluate at most this many instances / questions / sentences")
    p.add_argument("--train-articles", type=int, help="QA: the first N articles trained (the rest evaluate)")
    p.add_argument("--max-seq-length", type=int, help="fine-tuned models: sequence length (default: the run's)")
    p.set_defaults(func=cmd_eval)


def add_fill_mask(sub) -> None:
    p = sub.add_parser("fill-mask", help="top predictions for each [MASK] in a sentence")
    p.add_argument("--model", required=True, help="HF-layout model directory with an MLM head")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("text", nargs="+", help='sentences with [MASK], e.g. "she [MASK] the letter ."')
    p.set_defaults(func=cmd_fill_mask)


def add_trace(sub) -> None:
    p = sub.add_parser("trace", help="one forward pass, every operation: each step's name, shape and formula")
    p.add_argument("--model", required=True, help="HF-layout model directory (any head)")
    p.add_argument("--json", metavar="FILE", help="write every step with its values as JSON (explore.trace's to_json)")
    p.add_argument("text_a", help='the text, e.g. "the cat sat on the [MASK] ."')
    p.add_argument("text_b", nargs="?", help="an optional second segment (sentence B, or a QA model's paragraph)")
    p.set_defaults(func=cmd_trace)


def add_plot(sub) -> None:
    p = sub.add_parser("plot", help="training curves of a run (metrics.jsonl) as a PNG")
    p.add_argument("run", help="run directory or metrics.jsonl")
    p.add_argument("--out", required=True, help="image file to write (.png, .svg, .pdf)")
    p.add_argument("--x", choices=["time", "step"], default="time")
    p.add_argument("--title")
    p.set_defaults(func=cmd_plot)


def add_export_web(sub) -> None:
    p = sub.add_parser(
        "export-web", help="the models for the browser edition: ONNX graphs, tokenizers and manifest.json"
    )
    p.add_argument("--out", required=True, help="the site folder to write (created): manifest.json, models/NAME/")
    p.add_argument("--models", nargs="+", metavar="NAME", help="the models to export (default: every one)")
    p.add_argument("--models-dir", help="the folder the models are in (default: the repository's models/)")
    p.add_argument(
        "--precision",
        choices=WEB_PRECISIONS,
        default="auto",
        help="how the weights are stored: auto = fp16 where that is lossless, int8 for a graph still over "
        "25 MB, computing in fp32 (int8-dynamic quantizes the activations too) (default: auto)",
    )
    p.add_argument(
        "--trace",
        choices=TRACES,
        default="small",
        help="which models get their weights for the Step by step view: small = those of at most 10 MB (the "
        "tiny ones; the site stays within its size target), all = every model (a MiniLM adds 45 MB), none "
        "(default: small)",
    )
    p.add_argument(
        "--models-only",
        action="store_true",
        help="write the models and manifest.json only, not the page (which needs Node.js to build)",
    )
    p.set_defaults(func=cmd_export_web)


def add_serve_web(sub) -> None:
    p = sub.add_parser(
        "serve-web", help="serve an exported site (export-web) from this computer, e.g. to a classroom without internet"
    )
    p.add_argument("site", help="the folder export-web wrote (it has manifest.json)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to bind: 127.0.0.1 = this computer only; 0.0.0.0 = every IPv4 interface, the "
        "classroom's network; :: = every IPv6 one (default: 127.0.0.1)",
    )
    p.add_argument("--port", type=int, default=8000, help="port to serve on (default: 8000)")
    p.set_defaults(func=cmd_serve_web)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command, in the order `--help` lists them."""
    parser = argparse.ArgumentParser(
        prog="python -m lab", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (
        add_prepare,
        add_pretrain,
        add_finetune,
        add_eval,
        add_fill_mask,
        add_trace,
        add_plot,
        add_export_web,
        add_serve_web,
    ):
        add(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError, FileExistsError, ModuleNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
