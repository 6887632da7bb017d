"""The BERT Lab dashboard: a Gradio page with one tab per idea of the BERT paper (app.py serves it).

    dashboard/page.py        Dashboard: composes the page from the tabs on one Context
    dashboard/tabs/*.py      one module per tab: its handlers, then build()
    dashboard/context.py     Settings (from the command line) and Context (what every tab is given)
    dashboard/current.py     never a stale answer: each view marked out of date in the page
    dashboard/room.py        what the room sees: results brought into view, presenter mode
    dashboard/access.py      every student: contrast, focus, figures named, results announced
    dashboard/links.py       shared inputs: what a link restores, the views a page opens with
    dashboard/qr.py          QR codes: a link's, the page's address, the start-up banner's
    dashboard/common.py      input checks, status lines, repeated requests kept, the figures'
                             numbers for their CSV buttons, small components
    dashboard/help.py        help text, examples, CSS and the page's few lines of JavaScript
    dashboard/page_cache.py  the page's HTML built once for every student (app.py's middleware)
    dashboard/rounds/        class rounds: the class guesses, then the model answers (/teacher, /play)
It reaches the lab through lab.inspect, lab.figures and the core, never training code.
"""

from .context import Context, Settings
from .help import LAUNCH_OPTIONS
from .page import Dashboard

__all__ = ["LAUNCH_OPTIONS", "Context", "Dashboard", "Settings"]
