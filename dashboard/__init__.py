"""The BERT Lab dashboard: a Gradio page with one tab per idea of the BERT paper (app.py serves it).

    dashboard/page.py        Dashboard: composes the page from the tabs on one Context
    dashboard/tabs/*.py      one module per tab: its handlers, then build()
    dashboard/context.py     Settings (from the command line) and Context (what every tab is given)
    dashboard/links.py       shared inputs: what a link restores, the views a page opens with
    dashboard/common.py      input checks, status lines, CSV downloads, small components
    dashboard/help.py        help text, examples, CSS and the page's few lines of JavaScript
The models come from lab.inspect.model_store.ModelStore; every computation from lab.inspect.explore; every
figure from lab.figures.plotly_figures (drawn by the browser).
"""

from .context import Context, Settings
from .help import LAUNCH_OPTIONS
from .page import Dashboard

__all__ = ["LAUNCH_OPTIONS", "Context", "Dashboard", "Settings"]
