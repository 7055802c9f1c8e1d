"""The paper, Sec. 4.1, Theorem 2: how many pulls TDShap's guarantee needs.

If the total number of pulls T satisfies
``T >= 64 N w^2 / eps^2 * log(N (1 + log T))``, the run fails (misses an arm
with ``phi <= tau - eps`` or includes one with ``phi >= tau + eps``) with
probability at most ``1 / (N^2 (1 + log T)^2)``. ``w`` is the largest width
of one arm's marginals: bounded from the metric, or as observed (the observed
width is a lower bound of the true one, so a guarantee from it is optimistic).
"""

from __future__ import annotations

import math
from typing import Any


def pulls_needed(n: int, width: float, eps: float) -> float:
    """Smallest T with ``T >= 64 n w^2/eps^2 * log(n (1 + log T))`` (inf if eps = 0, or
    if so many pulls exceed the float range)."""
    if width <= 0:
        return 0.0
    if eps <= 0:
        return math.inf
    # (w / eps)^2, not w^2 / eps^2: eps * eps underflows to 0 below about 1e-162 (a
    # ZeroDivisionError after the whole run); a ratio beyond float range is inf pulls
    ratio = width / eps
    c = 64.0 * n * ratio * ratio
    if not math.isfinite(c):
        return math.inf
    t = max(c, 1.0)
    for _ in range(100):  # the right-hand side grows like log T: a fixed point is reached fast
        nxt = c * math.log(max(n * (1.0 + math.log(t)), 1.0 + 1e-12))
        if abs(nxt - t) <= 1e-9 * t:
            break
        t = max(nxt, 1.0)
    return math.ceil(t) if math.isfinite(t) else math.inf  # c near the float range


def failure_bound(n: int, pulls: int) -> float:
    """``1 / (N^2 (1 + log T)^2)``."""
    return 1.0 / (n * n * (1.0 + math.log(max(pulls, 1))) ** 2)


def guarantee_report(
    n: int, eps: float, pulls: int, width_bound: float | None, width_observed: float
) -> dict[str, Any]:
    """A JSON-able summary of Theorem 2 for one run."""

    def one(width: float | None) -> dict[str, Any]:
        if width is None:
            return {"width": None, "pulls_needed": None, "met": None, "failure_bound": None}
        need = pulls_needed(n, width, eps)
        met = pulls >= need
        return {
            "width": width,
            "pulls_needed": None if math.isinf(need) else need,
            "met": bool(met),
            "failure_bound": failure_bound(n, pulls) if met else None,
        }

    return {
        "pulls": int(pulls),
        "from_metric_bound": one(width_bound),
        "from_observed_width": one(width_observed),
    }
