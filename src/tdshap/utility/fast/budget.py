"""How much memory the fast paths may hold: one budget, set by the user, checked up front.

A fast path that would need more than the budget is not taken, and the run says
so (the reason names the bytes needed and the budget): never a silent cap.
"""

from __future__ import annotations

import os

import numpy as np

#: bytes the fast paths may hold at once when ``TDSHAP_MEMORY_BUDGET_GB`` is not set
DEFAULT_MEMORY_BUDGET = 2 * 2**30


def memory_budget() -> int:
    """Bytes a fast path may hold: ``TDSHAP_MEMORY_BUDGET_GB`` (GiB), else 2 GiB."""
    raw = os.environ.get("TDSHAP_MEMORY_BUDGET_GB")
    if raw is None or raw == "":
        return DEFAULT_MEMORY_BUDGET
    try:
        gb = float(raw)
    except ValueError:
        raise ValueError(f"TDSHAP_MEMORY_BUDGET_GB={raw!r} must be a number of GiB "
                         "(e.g. 4).") from None
    if not np.isfinite(gb) or gb <= 0:
        raise ValueError(f"TDSHAP_MEMORY_BUDGET_GB={raw!r} must be a positive number of GiB.")
    return int(gb * 2**30)


def over_budget(what: str, needed: int, budget: int | None = None) -> str | None:
    """Why ``needed`` bytes for ``what`` cannot be held, or None when they fit."""
    limit = memory_budget() if budget is None else budget
    if needed <= limit:
        return None
    return (f"{what} need {needed / 2**30:.2f} GiB, more than the memory budget of "
            f"{limit / 2**30:.2f} GiB (set TDSHAP_MEMORY_BUDGET_GB to raise it)")


def check_count(name: str, count: int, bytes_each: int, what: str, example: int) -> None:
    """Refuse a count of things (``name=count``, each ``bytes_each`` bytes, ``what`` they
    are) that the memory budget cannot hold, naming the largest count it can."""
    problem = over_budget(f"{name}={count!r} {what}", int(count) * bytes_each)
    if problem:
        raise ValueError(f"{problem}: use at most {memory_budget() // bytes_each:,} "
                         f"(e.g. {example}).")
