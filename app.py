"""BERT Lab dashboard (placeholder until the full dashboard lands): loads a model, shows its
configuration and how it tokenizes text.

    python app.py [--model DIR] [--host 127.0.0.1] [--port 7860] [--share]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import gradio as gr

import lab

ROOT = Path(__file__).resolve().parent


def find_model() -> Path | None:
    """The first bundled model under models/, else the newest run under runs/."""
    for base in (ROOT / "models", ROOT / "runs"):
        dirs = sorted((p for p in base.glob("*") if (p / "config.json").is_file()),
                      key=lambda p: p.stat().st_mtime, reverse=True) if base.is_dir() else []
        if dirs:
            return dirs[0]
    return None


def describe(model, path) -> str:
    if model is None:
        return ("No model found under models/ or runs/. Pre-train one with "
                "`python -m lab pretrain --preset tiny --corpus PATH --out runs/first`.")
    return f"**{path}** — {type(model).__name__}: {model.config.summary()}"


def tokenize(text: str):
    if TOKENIZER is None:
        return "no tokenizer loaded"
    if not text.strip():
        return "Type some text first."
    enc = TOKENIZER.encode(text, max_length=MODEL.config.max_position_embeddings if MODEL else 512)
    note = f" (truncated: {enc.num_truncated} tokens cut)" if enc.truncated else ""
    return " ".join(enc.tokens) + note


parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--model", type=Path, default=None, help="HF-layout BERT directory")
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--port", type=int, default=7860)
parser.add_argument("--share", action="store_true")
ARGS, _ = parser.parse_known_args()
MODEL_PATH = ARGS.model or find_model()
MODEL, TOKENIZER = lab.load(MODEL_PATH) if MODEL_PATH else (None, None)

with gr.Blocks(title="BERT Lab") as demo:
    gr.Markdown("# BERT Lab\n" + describe(MODEL, MODEL_PATH))
    text = gr.Textbox(label="Text", value="The cat sat on the mat, playing with a ball.")
    tokens = gr.Textbox(label="WordPiece tokens")
    gr.Button("Tokenize").click(tokenize, text, tokens, api_name="tokenize")

if __name__ == "__main__":
    demo.launch(server_name=ARGS.host, server_port=ARGS.port, share=ARGS.share)
