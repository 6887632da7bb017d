"""Server CPU of the dashboard's figures: lab.figures.plotly_figures against plotly's own route, in process.

    python -m benchmarks.figure_speed [--model models/bert-lab-classroom] [--repeats 200]

For each figure an attention request of the dashboard sends: the median time to build it with
lab.figures.plotly_figures and write the JSON gr.Plot is sent (figure_json), against the same
figure made by plotly's public route (go.Figure, which validates every property, then to_json).
For scale, the model forward (explore.attention) and the figure's CSV. One thread, as each request
gets on the 2-core server. Target: the attention request's whole server CPU <= 30 ms, shared by
the forward, the figures, the CSV and Gradio.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import plotly.graph_objects as go
import torch

import lab
from lab import explore
from lab.figures import plotly_figures

ROOT = Path(__file__).resolve().parents[1]

TEXT_A = "the cat sat on the mat because it was tired after the long day ."
TEXT_B = "it purred and then fell asleep in the warm sun ."


def median_ms(fn, repeats: int) -> float:
    fn()  # warm-up: caches, first allocations
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(1000 * (time.perf_counter() - t))
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(ROOT / "models" / "bert-lab-classroom"))
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, tokenizer = lab.load(args.model)
    # the model's results, computed once: only the figures are timed
    att = explore.attention(model, tokenizer, TEXT_A, TEXT_B)
    stats = att.head_stats()
    ablation = explore.ablate_heads(model, tokenizer, "the cat [MASK] on the mat .")
    guesses = explore.fill_mask(model, tokenizer, "the [MASK] sat on the [MASK] .", top_k=5)
    L, A = len(att.attentions), att.attentions[0].shape[1]
    layer, head = L - 1, A - 1
    builders = {
        "attention_heatmap": lambda: plotly_figures.attention_heatmap(att, layer, head),
        "attention_grid (one layer)": lambda: plotly_figures.attention_grid(att, layer),
        "attention_grid (all layers)": lambda: plotly_figures.attention_grid(att),
        "head_stats_heatmaps": lambda: plotly_figures.head_stats_heatmaps(stats),
        "ablation_heatmap": lambda: plotly_figures.ablation_heatmap(ablation),
        "fill_mask_bars": lambda: plotly_figures.fill_mask_bars(guesses),
    }
    print(f"{Path(args.model).name}: {len(att.tokens)} tokens, {L} layers x {A} heads; medians of {args.repeats}")
    print(f"{'figure':28s} {'lab build+json':>15s} {'plotly route':>13s} {'ratio':>7s}")
    for name, build in builders.items():
        plain = build().lab_json
        lab_ms = median_ms(lambda build=build: build().to_json(), args.repeats)
        plotly_ms = median_ms(lambda plain=plain: go.Figure(plain).to_json(), max(10, args.repeats // 10))
        print(f"{name:28s} {lab_ms:12.3f} ms {plotly_ms:10.2f} ms {lab_ms / plotly_ms:7.3f}")
    one = builders["attention_heatmap"]()
    forward = median_ms(lambda: explore.attention(model, tokenizer, TEXT_A, TEXT_B), 30)
    print(
        f"for scale: explore.attention (the forward) {forward:.2f} ms, "
        f"figure_csv(attention_heatmap) {median_ms(lambda: plotly_figures.figure_csv(one), args.repeats):.2f} ms"
    )


if __name__ == "__main__":
    main()
