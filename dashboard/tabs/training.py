"""Training: a run's loss and held-out accuracy curves, and "watch BERT learn": one masked
sentence through the run's checkpoints."""

from __future__ import annotations

from typing import NamedTuple

import gradio as gr

from lab.figures import plotly_figures
from lab.inspect import explore

from ..common import (
    FigureView,
    UserError,
    handler,
    in_order,
    int_input,
    masked_text,
    plot,
    said,
    status_box,
    theme_input,
    theme_redraw,
    theme_watch,
)
from ..current import submit
from ..help import HELP, MLM_EXAMPLES
from ..room import intro


class Checkpoints(NamedTuple):
    """The best guesses at each checkpoint (a table, one row per step) and the status line."""

    table: dict | None
    status: str


class Training:
    name, id = "Training", "training"

    def __init__(self, ctx):
        self.ctx, self.store = ctx, ctx.store

    def _run(self, run_name):
        return self.store.confined(self.store.resolve(run_name, "run"))

    @handler(FigureView)
    def training_curves(self, run_name, x="time", theme="light"):
        path = self._run(run_name)
        records = self.store.metrics(path)
        if not records:
            raise UserError(f"{self.store.display(path)} has no metrics.jsonl records")
        if x not in ("time", "step"):
            raise UserError("the x axis is time or step")
        fig = plotly_figures.training_curves(records, x=x, title=self.store.display(path), theme=theme_input(theme))
        return FigureView(
            fig,
            self.ctx.csv.keep(fig),
            said(
                f"{len(records)} moments of training measured (loss, and accuracy on held-out text)",
                f"{len(records)} records of the run's metrics.jsonl",
            ),
        )

    @handler(Checkpoints)
    def watch_learning(self, run_name, text, top_k=3, progress=gr.Progress()):
        """The same masked sentence through a run's checkpoints: how the guesses sharpen."""
        path = self._run(run_name)
        text = masked_text(text)
        if not self.store.snapshots(path):
            with_snapshots = [r for r in self.store.list_runs() if self.store.snapshots(self.store.resolve(r, "run"))]
            raise UserError(
                f"{self.store.display(path)} keeps no checkpoints to replay (fine-tuned models keep none); "
                + (
                    f"choose one that does: {', '.join(with_snapshots[:5])}"
                    if with_snapshots
                    else "pre-training runs and the bundled bert-lab-classroom do"
                )
            )
        rows = []
        for step, result in explore.checkpoint_predictions(
            path,
            text,
            top_k=int_input(top_k, "top k", 1, 20),
            progress=(lambda items: progress.tqdm(items, desc="checkpoints")) if progress else None,
        ):
            rows.append(
                [step] + [", ".join(f"“{t}” {p:.0%}" for t, p in preds) for preds in result]
            )  # "," reads as a token
        masks = max((len(r) - 1 for r in rows), default=0)
        return Checkpoints(
            {"headers": ["step"] + [f"[MASK] {k}" for k in range(1, masks + 1)], "data": rows},
            said(
                f"the guesses at {len(rows)} moments of training",
                f"{len(rows)} checkpoints of the run (checkpoints/step-N)",
            ),
        )

    def default_run(self) -> str | None:
        """A bundled model with checkpoints first: it keeps snapshots of its training (of several,
        the first by name, bert-lab-classroom before its modern twin, whatever the files' times)."""
        names = self.store.list_runs()
        bundled = sorted(
            r for r in names if r.startswith("models/") and self.store.snapshots(self.store.resolve(r, "run"))
        )
        return bundled[0] if bundled else (names[0] if names else None)

    def build(self):
        ctx, Q = self.ctx, self.ctx.queue
        intro(HELP["training"])
        first_run, example = self.default_run(), MLM_EXAMPLES[0][0]
        curves0 = (
            self.training_curves(first_run, "time") if first_run else FigureView(None, None, "no training runs yet")
        )
        watch0 = self.watch_learning(first_run, example, progress=None) if first_run else Checkpoints(None, "")
        with gr.Row():
            run = gr.Dropdown(choices=self.store.list_runs(), value=first_run, label="Run", allow_custom_value=True)
            x_axis = gr.Radio(["time", "step"], value="time", label="x axis")
        curves_btn = gr.Button("Show curves", variant="primary")
        curves = plot("training curves", curves0.figure, elem_id="training-curves")
        curves_csv = self.ctx.csv.box(curves0.csv)
        curves_status = status_box(value=curves0.status)
        watch_text = gr.Textbox(label="Sentence with [MASK]", value=example)
        watch_btn = gr.Button("Predict at every checkpoint")
        watch_table = gr.Dataframe(
            watch0.table, label="the best guesses at each checkpoint", interactive=False, elem_id="training-watch"
        )
        watch_status = status_box(value=watch0.status)
        curves_outputs = in_order(FigureView, figure=curves, csv=curves_csv, status=curves_status)
        curves_run = (self.training_curves, [run, x_axis, ctx.theme], Q)
        curves_ev = curves_btn.click(*curves_run[:2], curves_outputs, api_name="training_curves", **Q)
        watch_inputs, watch_outputs = [run, watch_text], in_order(Checkpoints, table=watch_table, status=watch_status)
        watch_ev = watch_btn.click(self.watch_learning, watch_inputs, watch_outputs, api_name="watch_learning", **Q)
        curves_view = ctx.current.view(
            "train-curves",
            "Show curves",
            [run, x_axis, ctx.theme],
            curves_outputs,
            [curves_ev],
            rerun=[(run, "input"), (x_axis, "input")],
            run=curves_run,
        )
        theme_redraw(ctx, theme_watch(ctx), curves_view, curves_run)  # the page's theme switched: drawn again
        ctx.current.view(
            "train-watch",
            "Predict at every checkpoint",
            watch_inputs,
            watch_outputs,
            [watch_ev, *submit([watch_text], self.watch_learning, watch_inputs, watch_outputs, Q)],
        )
