"""The cleansing protocol (SPEC §4): how every method's values are judged.

Rank the training rows by value, lowest first; for each ``n_remove`` on a
grid, train on the rest and score on the validation set; keep the
``n_remove`` with the best validation score (the smallest on ties); report
the test score of that model beside the baseline (``n_remove = 0``).
Every grid model is also scored on the test set, for the removal curves.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import clone, is_classifier

from tdshap._io import jsonable
from tdshap._validation import as_features, as_target, check_data
from tdshap.result import ValuationResult
from tdshap.utility.base import describe_error, fallback_model, random_state_params
from tdshap.utility.metrics import default_metric, resolve_metric


@dataclass
class CleansingResult:
    """Removal curves and the chosen cleansing of one method's ranking."""

    method: str
    metric: str
    grid: np.ndarray
    val_scores: np.ndarray
    test_scores: np.ndarray | None
    n_remove: int
    removed: np.ndarray
    baseline_val: float
    cleaned_val: float
    baseline_test: float | None
    cleaned_test: float | None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def gain(self) -> float | None:
        """Test score after minus before (higher is better, in metric units)."""
        if self.cleaned_test is None or self.baseline_test is None:
            return None
        return self.cleaned_test - self.baseline_test

    def to_dict(self) -> dict[str, Any]:

        return jsonable(asdict(self))

    def plot(self, path: str | os.PathLike[str], title: str | None = None) -> Path:
        """Write a PNG of the validation (and test) curves, like the paper's Figure 1."""
        return plot_curves([self], path, title=title)


def removal_grid(n: int, step: int | None, max_fraction: float) -> np.ndarray:
    """``0, step, 2 step, ...`` up to ``max_fraction * n`` (never all rows)."""
    if not 0 < max_fraction < 1:
        raise ValueError(f"max_fraction={max_fraction!r} must be between 0 and 1 (exclusive).")
    if step is None:
        step = max(1, math.ceil(n / 100))
    if int(step) != step or step < 1:
        raise ValueError(f"step={step!r} must be a whole number >= 1.")
    top = min(math.floor(max_fraction * n), n - 1)
    return np.arange(0, top + 1, int(step))


def _ranking(values: Any, random_state: Any) -> tuple[np.ndarray, str]:
    if isinstance(values, ValuationResult):
        return values.ranking(random_state), values.algorithm
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError("values must be 1-D (one value per training row) or a ValuationResult.")
    rng = np.random.default_rng(random_state)
    return np.lexsort((rng.random(len(arr)), arr)), "values"


def cleanse(
    values: ValuationResult | np.ndarray,
    estimator: Any,
    X: Any,
    y: Any,
    X_val: Any,
    y_val: Any,
    X_test: Any = None,
    y_test: Any = None,
    *,
    metric: Any = None,
    step: int | None = None,
    max_fraction: float = 0.5,
    random_state: int | None = 0,
    on_error: str = "fallback",
) -> CleansingResult:
    """Apply the SPEC §4 protocol to ``values`` (a result or one value per row).

    ``step`` defaults to 1% of N (at least 1); the grid stops at
    ``max_fraction`` of N. Every grid model uses the same ``random_state``
    (common random numbers), so curves differ only by the rows removed.
    A grid model that cannot be fitted is scored as the valuation scores one
    (``on_error``, see :class:`tdshap.utility.base.Utility`): by the best
    constant prediction for its rows; ``extra`` counts such fits
    (``n_failed_fits``) and keeps the first error (``first_error``).
    """
    if on_error not in ("raise", "fallback"):
        raise ValueError(f"on_error={on_error!r} must be 'raise' or 'fallback'.")
    Xa, ya, Xv, yv = check_data(X, y, X_val, y_val)
    has_test = X_test is not None
    if has_test:
        Xt = as_features(X_test, "X_test")
        if Xt.shape[1:] != Xa.shape[1:]:
            raise ValueError("X_test must have the same features as X.")
        yt = as_target(y_test, "y_test", len(Xt), "X_test")
    order, method = _ranking(values, random_state)
    if len(order) != len(ya):
        raise ValueError(
            f"got {len(order)} values for {len(ya)} training rows: value the same training set."
        )
    spec = resolve_metric(default_metric(estimator) if metric is None else metric)
    grid = removal_grid(len(ya), step, max_fraction)
    seed_params = random_state_params(estimator)
    seed = 0 if random_state is None else int(random_state)
    val_scores = np.empty(len(grid))
    test_scores = np.empty(len(grid)) if has_test else None
    classes = np.unique(ya) if is_classifier(estimator) else None
    failed, first_error = 0, None
    for i, n_remove in enumerate(grid):
        keep = np.sort(order[n_remove:])
        model = clone(estimator)
        if seed_params:
            model.set_params(**dict.fromkeys(seed_params, seed))
        try:
            model.fit(Xa[keep], ya[keep])
            scores = [spec.score(model, Xv, yv)]
            if test_scores is not None:
                scores.append(spec.score(model, Xt, yt))
        except Exception as err:
            if on_error == "raise":
                raise
            failed += 1
            first_error = first_error or describe_error(err)
            model = fallback_model(ya[keep], classes)
            scores = [spec.score(model, Xv, yv)]
            if test_scores is not None:
                scores.append(spec.score(model, Xt, yt))
        val_scores[i] = scores[0]
        if test_scores is not None:
            test_scores[i] = scores[1]
    best = int(np.argmax(val_scores))  # argmax takes the first: the smallest n_remove on ties
    n_remove = int(grid[best])
    return CleansingResult(
        method=method,
        metric=spec.name,
        grid=grid,
        val_scores=val_scores,
        test_scores=test_scores,
        n_remove=n_remove,
        removed=np.sort(order[:n_remove]),
        baseline_val=float(val_scores[0]),
        cleaned_val=float(val_scores[best]),
        baseline_test=None if test_scores is None else float(test_scores[0]),
        cleaned_test=None if test_scores is None else float(test_scores[best]),
        extra={"n_fits": len(grid), "n_failed_fits": failed, "first_error": first_error},
    )


def _display(metric: str, scores: np.ndarray) -> tuple[np.ndarray, str]:
    """Plot errors as errors: ``neg_mae`` is drawn as MAE."""
    if metric.startswith("neg_"):
        return -scores, metric[4:].upper()
    return scores, metric


def plot_curves(
    results: list[CleansingResult], path: str | os.PathLike[str], title: str | None = None
) -> Path:
    """Validation and test removal curves of one or more methods, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    has_test = any(r.test_scores is not None for r in results)
    fig, axes = plt.subplots(1, 2 if has_test else 1, figsize=(10 if has_test else 5, 4),
                             squeeze=False)
    panels = [("validation", "val_scores")] + ([("test", "test_scores")] if has_test else [])
    for ax, (label, attr) in zip(axes[0], panels, strict=True):
        for r in results:
            scores = getattr(r, attr)
            if scores is None:
                continue
            shown, ylabel = _display(r.metric, scores)
            (line,) = ax.plot(r.grid, shown, label=r.method)
            ax.axvline(r.n_remove, color=line.get_color(), linestyle=":", linewidth=1)
        ax.set_xlabel("instances removed")
        ax.set_ylabel(f"{ylabel} ({label})")
        ax.set_title(f"{label} set")
        ax.grid(alpha=0.3)
    axes[0][0].legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
