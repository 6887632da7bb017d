"""An exported site made ready to publish as it is: a static Hugging Face Space, or GitHub Pages.

    write_space_files(Path("site"), manifest)    # README.md, .gitattributes, .nojekyll in site/
    hf upload YOU/bert-lab site . --repo-type space                # docs/deploy.md: the browser edition

README.md opens with the front matter Hugging Face's Spaces configuration reference describes
(sdk: static, app_file: index.html, custom_headers: the COOP/COEP pair that lets the page run on
several threads) and says in plain words what the page is, its models and how it was made.
.gitattributes puts *.onnx and *.wasm in Git LFS (a Space takes files over 10 MB only through it);
.nojekyll makes GitHub Pages serve the folder as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

FRONT_MATTER = {  # the keys of huggingface.co/docs/hub/spaces-config-reference
    "title": "BERT Lab",
    "emoji": "🧪",
    "colorFrom": "indigo",  # one of red, yellow, green, blue, indigo, purple, pink, gray
    "colorTo": "yellow",
    "sdk": "static",
    "app_file": "index.html",
    "pinned": False,
    "license": "mit",
    "short_description": "BERT in your browser: hidden words, attention, answers",
    "custom_headers": {  # the reference: lowercase names and values, only these (and CORP) allowed
        "cross-origin-embedder-policy": "require-corp",
        "cross-origin-opener-policy": "same-origin",
    },
}
LFS_PATTERNS = ("*.onnx", "*.wasm")  # the graphs (3 to 24 MB) and onnxruntime-web's WebAssembly (14 MB)
VIEW_WORDS = {  # the page's views (lab.web.export.VIEWS) in plain words
    "fill-mask": "fills in hidden words",
    "next-sentence": "judges whether one sentence follows another",
    "attention": "shows where each word looks (attention)",
    "answer": "answers a question from a paragraph",
    "classify": "sorts sentences into classes",
    "tag": "marks the names in a sentence",
}


def yaml_lines(mapping: dict, indent: str = "") -> list[str]:
    """`mapping` as YAML block lines: strings as JSON strings (valid YAML), booleans lowercase."""
    lines = []
    for key, value in mapping.items():
        if isinstance(value, dict):
            lines += [f"{indent}{key}:"] + yaml_lines(value, indent + "  ")
        elif isinstance(value, bool):
            lines.append(f"{indent}{key}: {'true' if value else 'false'}")
        else:
            lines.append(f"{indent}{key}: {json.dumps(value, ensure_ascii=False)}")
    return lines


def readme(manifest: dict) -> str:
    """The Space's README.md: front matter, then what the page is, its models, how it was made."""
    models = manifest["models"]
    listed = []
    for m in models:
        does = "; ".join(VIEW_WORDS.get(v, v) for v in m.get("views", []))
        card = f" {m['card'][0]}" if m.get("card") else ""
        listed.append(f"- **{m['name']}** ({m['bytes'] / 1e6:.1f} MB): {does}.{card}")
    total = sum(m["bytes"] for m in models) / 1e6
    body = [
        "# BERT Lab in the browser",
        "",
        "A page for trying out BERT, the language model: hide a word and see what the model guesses, "
        "look at where its attention goes, ask it a question about a paragraph. The models run inside "
        "your browser (onnxruntime-web, WebAssembly): what you type is never sent anywhere, and no "
        "server computes anything.",
        "",
        "## The models",
        "",
        f"The page opens on the first; each of the others is downloaded when you choose it ({total:.1f} MB in all).",
        "",
        *listed,
        "",
        "## How it was made",
        "",
        "The BERT Lab repository exported its own PyTorch models to ONNX with `python -m lab export-web "
        "--out site`, which writes this folder: the page, `manifest.json` (the models and their settings) "
        "and `models/NAME/` (each model's `model.onnx` and `tokenizer.json`). The folder was then uploaded "
        "as it is; the repository's docs/deploy.md says how, and how to serve it in a classroom without internet.",
        "",
    ]
    return "\n".join(["---", *yaml_lines(FRONT_MATTER), "---", "", *body])


SPACE_FILES = ("README.md", ".gitattributes", ".nojekyll")  # what write_space_files writes (not the page's)


def write_space_files(out: Path, manifest: dict) -> list[Path]:
    """Write README.md, .gitattributes and .nojekyll into the site folder `out` (replacing
    earlier ones); the paths written."""
    out = Path(out)
    readme_name, attributes, nojekyll = SPACE_FILES
    files = {
        out / readme_name: readme(manifest),
        out / attributes: "".join(f"{p} filter=lfs diff=lfs merge=lfs -text\n" for p in LFS_PATTERNS),
        out / nojekyll: "",
    }
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    return list(files)
