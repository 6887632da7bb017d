"""Matplotlib figures built from explore results and metrics.jsonl.

    from lab import plots
    fig = plots.training_curves("runs/classroom")        # a matplotlib Figure
    fig.savefig("curves.png")

Figures are made with the object-oriented API (`matplotlib.figure.Figure`), never pyplot's
global state, so concurrent requests in the dashboard do not draw into each other's plots.
"""
from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure


def _records(run_or_records):
    if isinstance(run_or_records, (str, Path)):
        from .train import read_metrics
        return read_metrics(run_or_records)
    return list(run_or_records)


def training_curves(run_or_records, x: str = "time", title: str | None = None) -> Figure:
    """Loss and accuracies against wall time (x="time", minutes) or steps (x="step").

    Left: training and held-out losses. Right: held-out MLM accuracy (all predicted positions
    and [MASK] positions alone) and NSP accuracy, or the task accuracy of a fine-tuning run.
    """
    records = _records(run_or_records)
    train = [r for r in records if r.get("split") == "train"]
    evals = [r for r in records if r.get("split") == "eval"]
    scale = (lambda r: r["time"] / 60) if x == "time" else (lambda r: r["step"])
    xlabel = "wall time (minutes)" if x == "time" else "step"
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    ax_loss, ax_acc = fig.subplots(1, 2)
    if train:
        key = "mlm_loss" if "mlm_loss" in train[0] else "loss"
        ax_loss.plot([scale(r) for r in train], [r[key] for r in train], lw=1, alpha=0.6,
                     label=f"train {key.replace('_', ' ')}")
    for key, style in (("mlm_loss", "o-"), ("nsp_loss", "s-"), ("loss", "o-")):
        pts = [(scale(r), r[key]) for r in evals if key in r]
        if pts and not (key == "loss" and any("mlm_loss" in r for r in evals)):
            ax_loss.plot(*zip(*pts), style, ms=3, label=f"held-out {key.replace('_', ' ')}")
    ax_loss.set_xlabel(xlabel)
    ax_loss.set_ylabel("loss")
    ax_loss.legend(fontsize=8)
    ax_loss.grid(alpha=0.3)
    names = {"mlm_acc": "MLM top-1 (all predicted)", "mlm_acc_masked": "MLM top-1 at [MASK]",
             "nsp_acc": "NSP", "accuracy": "accuracy", "f1": "F1", "exact_match": "exact match"}
    for key, label in names.items():
        pts = [(scale(r), r[key]) for r in evals if key in r]
        if pts:
            ax_acc.plot(*zip(*pts), "o-", ms=3, label=label)
    ax_acc.set_xlabel(xlabel)
    ax_acc.set_ylabel("held-out accuracy")
    ax_acc.set_ylim(0, 1)
    ax_acc.legend(fontsize=8)
    ax_acc.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    return fig
