"""Pick the utility for a run: a fast path when the estimator and metric allow one."""

from __future__ import annotations

from typing import Any

import numpy as np

from tdshap.utility.base import Utility
from tdshap.utility.fast.base import FastPathUtility, NotEligible
from tdshap.utility.fast.linear import LinearChainUtility
from tdshap.utility.fast.neighbors import NeighborsChainUtility

FAST_PATHS: tuple[type[FastPathUtility], ...] = (LinearChainUtility, NeighborsChainUtility)


def make_utility(
    estimator: Any,
    metric: Any,
    X: np.ndarray,
    y: np.ndarray,
    X_val: np.ndarray,
    y_val: np.ndarray,
    *,
    fast_path: bool = True,
    **kwargs: Any,
) -> Utility:
    """The utility for ``estimator``: a fast path where one applies, else :class:`Utility`.

    A fast path gives the same values as refitting (see :mod:`tdshap.utility.fast`);
    ``fast_path=False`` always refits. ``utility.path_note`` says which path is taken and,
    when it refits, why no fast path applies. ``kwargs`` go to the utility
    (``on_error``, ``seed_mode``, ``run_seed``, ``cache``).
    """
    if not isinstance(fast_path, bool | np.bool_):
        raise ValueError(
            f"fast_path={fast_path!r} must be True (use an exact fast path where one "
            "applies) or False (always refit)."
        )
    reasons = []
    if fast_path:
        for cls in FAST_PATHS:
            try:
                fast = cls(estimator, metric, X, y, X_val, y_val, **kwargs)
            except NotEligible as why:
                reasons.append(f"{cls.name}: {why}")
                continue
            fast.path_note = f"exact {cls.name} fast path"
            return fast
    utility = Utility(estimator, metric, X, y, X_val, y_val, **kwargs)
    utility.path_note = ("refit every subset: " + "; ".join(reasons) if reasons
                         else "refit every subset (fast_path=False)")
    return utility


def fast_path_name(utility: Utility) -> str | None:
    """Which fast path ``utility`` uses, or None when it refits every subset."""
    return utility.name if isinstance(utility, FastPathUtility) else None
