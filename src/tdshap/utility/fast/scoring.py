"""Score many prediction vectors at once for the built-in metrics.

A chain of K steps has K prediction vectors; one numpy call per metric over
all of them costs about what one call per vector costs. Each row reduces
the same way as the metric's own 1-D function (same operations, a
contiguous last axis), so the scores agree with it to rounding. The
built-in scorers work in place: they overwrite the predictions they are
given (those are scratch space by then), which saves allocating arrays of
the size of a chunk's predictions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tdshap.utility.metrics import MetricSpec, resolve_metric

RowScorer = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _accuracy(y: np.ndarray, P: np.ndarray) -> np.ndarray:
    return np.mean(y == P, axis=1)


def _residuals(y: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``y - P`` for float predictions, written over ``P``."""
    if P.dtype != np.float64:
        return np.asarray(y, dtype=float) - P
    return np.subtract(np.asarray(y, dtype=float), P, out=P)


def _neg_mae(y: np.ndarray, P: np.ndarray) -> np.ndarray:
    R = _residuals(y, P)
    return -np.mean(np.abs(R, out=R), axis=1)


def _neg_mse(y: np.ndarray, P: np.ndarray) -> np.ndarray:
    R = _residuals(y, P)
    return -np.mean(np.multiply(R, R, out=R), axis=1)


def _r2(y: np.ndarray, P: np.ndarray) -> np.ndarray:
    yf = np.asarray(y, dtype=float)
    ss_tot = float(np.sum((yf - yf.mean()) ** 2))
    R = _residuals(yf, P)
    ss_res = np.sum(np.multiply(R, R, out=R), axis=1)
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else np.zeros(len(P))


_ROW_SCORERS: dict[str, RowScorer] = {
    "accuracy": _accuracy, "neg_mae": _neg_mae, "neg_mse": _neg_mse, "r2": _r2,
}


def row_scorer(spec: MetricSpec) -> RowScorer:
    """``f(y_true, P) -> scores``, one score per row of ``P`` (which it may overwrite)."""
    builtin = _ROW_SCORERS.get(spec.name)
    if builtin is not None and resolve_metric(spec.name).from_predictions is spec.from_predictions:
        return builtin
    fn = spec.from_predictions
    if fn is None:
        raise ValueError(f"metric {spec.name!r} cannot score predictions alone.")
    # the fast paths score so: a metric returning no number is named as MetricSpec.score
    # names it (float() said "could not convert string to float: 'x'")
    return lambda y, P: np.array([spec.number(fn(y, p)) for p in P])
