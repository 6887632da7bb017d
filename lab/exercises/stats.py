"""The statistics of the checkers of random pieces (masking, NSP pairs): they run the student's code
on many draws from a fixed sequence of seeds and fail a test only below P_ALARM, so that the reference
always passes and a wrong rule fails every time.
"""

from __future__ import annotations

import math

P_ALARM = 1e-6  # p-value below which a statistical test fails (the reference, on fixed seeds, sits far above)


def upper_tail(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def pct(x: float) -> str:
    """0.153 -> '15.3%'."""
    return f"{100 * x:.1f}%"
