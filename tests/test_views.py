"""A view by its names: a handler returning a NamedTuple view keeps it (on an error too, its
outputs cleared), its components are listed by name (in_order), and no tab reads what it opens
with by position."""

import re
from typing import NamedTuple

import pytest

from dashboard.common import FigureView, UserError, handler, in_order
from tests.conftest import ROOT


class Shown(NamedTuple):
    words: list
    figure: object
    status: str


@handler(Shown)
def show(fail: bool = False):
    if fail:
        raise UserError("no <b>words</b> here")
    return Shown(["a"], "fig", "done & said")


def test_a_handler_keeps_the_view_it_returns_and_clears_it_on_an_error():
    ok = show()
    assert isinstance(ok, Shown) and ok.words == ["a"] and ok.figure == "fig"
    assert ok.status == "done &amp; said"  # escaped on the way out, as before
    failed = show(fail=True)
    assert isinstance(failed, Shown) and failed.words is None and failed.figure is None
    assert "no &lt;b&gt;words&lt;/b&gt; here" in failed.status


def test_a_view_must_end_with_its_status():
    class NoStatus(NamedTuple):
        figure: object

    with pytest.raises(AssertionError):
        handler(NoStatus)


def test_components_are_put_in_the_views_order_by_name():
    assert in_order(FigureView, status="s", figure="f", csv="c") == ["f", "c", "s"]
    with pytest.raises(TypeError, match="FigureView has the fields"):
        in_order(FigureView, figure="f", status="s")
    with pytest.raises(TypeError):
        in_order(FigureView, figure="f", csv="c", status="s", extra="x")


def test_no_tab_reads_what_it_opens_with_by_position():
    read = re.compile(r"\b(first|\w+0|\w+_first)\[\d+\]")
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted((ROOT / "dashboard").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if read.search(line)
    ]
    assert found == [], "\n".join(found)
