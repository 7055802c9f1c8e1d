"""Metrics: turn a user's ``metric`` argument into one higher-is-better scorer.

Built-in names are scored straight from predictions with numpy, because
scikit-learn's metric functions validate their inputs on every call and that
validation costs more than fitting a small tree; the utility calls the metric
thousands of times.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import is_classifier, is_regressor
from sklearn.metrics import brier_score_loss, get_scorer, get_scorer_names, log_loss

PredictionMetric = Callable[[np.ndarray, np.ndarray], float]
Scorer = Callable[[Any, np.ndarray, np.ndarray], float]


def _accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    return float(np.mean(y_true == y_pred))


def _neg_mae(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    return -float(np.mean(np.abs(np.asarray(y_true, dtype=float) - y_pred)))


def _neg_mse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    diff = np.asarray(y_true, dtype=float) - y_pred
    return -float(np.mean(diff * diff))


def _r2(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    y_true = np.asarray(y_true, dtype=float)
    ss_res = float(np.sum((y_true - y_pred) ** 2))
    ss_tot = float(np.sum((y_true - y_true.mean()) ** 2))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else 0.0


def one_per_row(pred: Any, rows: int, method: str = "predict") -> Any:
    """``pred`` (what a fitted model's ``method`` returned for ``rows`` rows), unless it
    is not one prediction per row: a 1-D array for ``predict``, one row of class
    probabilities per row for ``predict_proba``.

    A regressor whose ``predict`` gives a column (shape ``(n, 1)``, as many wrapped
    networks do) broadcast against the ``(n,)`` targets into an ``n x n`` table of every
    pair's error: the scores were silently the wrong ones (cleansing removed 42 rows of
    100 where the same model's 1-D predictions removed 5), or an index error deep in
    numpy. Refused here, the fit counts as a failed one, and the run's error names this.
    """
    shape = np.shape(pred)
    want = 2 if method == "predict_proba" else 1
    if len(shape) != want or shape[0] != rows:
        fix = ("one row of class probabilities per row, shape (n_rows, n_classes)"
               if want == 2 else "one value per row, a 1-D array of shape (n_rows,) (e.g. "
               "return np.ravel(pred) from predict)")
        raise ValueError(f"the fitted model's {method} returned an array of shape {shape} "
                         f"for {rows:,} rows: it must return {fix}.")
    return pred


def finite_predictions(pred: Any, method: str = "predict", rows: int | None = None) -> Any:
    """``pred`` (what a fitted model's ``method`` returned), unless it holds NaN or
    infinite numbers (or, given the number of ``rows`` predicted, is not
    :func:`one_per_row`).

    Scored as they are, a NaN equals no label (accuracy 0 for every subset, so every
    value 0) and an infinite error makes a score that is no number: the fit is refused
    here, so the utility counts it as a failed fit and a run can stop on too many.
    """
    if rows is not None:
        one_per_row(pred, rows, method)
    arr = np.asarray(pred)
    if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"the fitted model's {method} returned NaN or infinite values "
                         f"({bad:,} of {arr.size:,}): fix the model so that it predicts "
                         "numbers.")
    return pred


TRUE_CLASS_PROBA = "true_class_proba"


ROW_METRICS = (TRUE_CLASS_PROBA, "accuracy", "neg_mae", "neg_mse")


def row_scores(model: Any, X: np.ndarray, y: np.ndarray, metric: str) -> np.ndarray:
    """Each row's own score under ``metric`` (higher is better) from a fitted ``model``.

    ``true_class_proba``: the predicted probability of the row's class (0 for a
    class the model never saw); ``accuracy``: 1/0; ``neg_mae`` / ``neg_mse``:
    minus the absolute / squared error. Out-of-bag methods score single rows
    with it; the mean over rows is the metric itself.
    """
    if metric == TRUE_CLASS_PROBA:
        proba = finite_predictions(np.asarray(model.predict_proba(X), dtype=float),
                                   "predict_proba", len(X))
        classes = np.asarray(model.classes_)
        if proba.shape[1] != len(classes):  # columns not those of classes_: wrong classes
            raise ValueError(f"the fitted model's predict_proba returned {proba.shape[1]} "
                             f"columns for its {len(classes)} classes_: it must return one "
                             "column per class, in the order of classes_.")
        pos = np.clip(np.searchsorted(classes, y), 0, len(classes) - 1)
        return np.where(classes[pos] == y, proba[np.arange(len(y)), pos], 0.0)
    if metric not in ROW_METRICS:
        raise ValueError(f"metric={metric!r} has no per-row score: use one of {ROW_METRICS}.")
    pred = finite_predictions(model.predict(X), rows=len(X))
    if metric == "accuracy":
        return np.asarray(pred == y, dtype=float)
    err = np.asarray(y, dtype=float) - np.asarray(pred, dtype=float)
    return -np.abs(err) if metric == "neg_mae" else -(err * err)


def _true_class_proba_scorer(estimator: Any, X: np.ndarray, y: np.ndarray) -> float:
    """Mean predicted probability of each validation row's true class (0 if unseen).

    A smooth utility for classifiers: one training row moves it a little on
    many validation rows, where 0/1 accuracy mostly does not move at all, so a
    row's marginals carry information after a few pulls. For k-NN with uniform
    weights it is the utility of exact k-NN Shapley (Jia et al., 2019).
    """
    return float(np.mean(row_scores(estimator, X, y, TRUE_CLASS_PROBA)))


class _ProbabilityLoss:
    """``neg_log_loss`` / ``neg_brier_score`` against the model's own classes.

    scikit-learn's scorers take the classes from the rows scored, so validation rows
    that lack one of the training classes (many classes, few rows each) could not be
    scored at all ("y_true and y_prob contain different number of classes ... provide
    the true labels explicitly"); given every class they score alike.
    """

    _response_method = "predict_proba"  # what the model must give (plan checks it)

    def __init__(self, loss: Callable[..., float]) -> None:
        self.loss = loss

    def __call__(self, estimator: Any, X: np.ndarray, y: np.ndarray) -> float:
        proba = estimator.predict_proba(X)
        classes = getattr(estimator, "classes_", None)
        return -float(self.loss(y, proba, labels=None if classes is None else list(classes)))


_PROBABILITY_LOSSES = {"neg_log_loss": _ProbabilityLoss(log_loss),
                       "neg_brier_score": _ProbabilityLoss(brier_score_loss)}

# name -> (prediction metric, task, how the width of one marginal is bounded)
_BUILTIN: dict[str, tuple[PredictionMetric, str, str | None]] = {
    "accuracy": (_accuracy, "classification", "accuracy"),
    "neg_mae": (_neg_mae, "regression", "mae"),
    "neg_mse": (_neg_mse, "regression", "mse"),
    "r2": (_r2, "regression", None),
}
_ALIASES = {
    "neg_mean_absolute_error": "neg_mae",
    "neg_mean_squared_error": "neg_mse",
    "mae": "neg_mae",
    "mse": "neg_mse",
}


@dataclass(frozen=True)
class MetricSpec:
    """A resolved metric.

    Attributes
    ----------
    name:
        Canonical name (``"accuracy"``, ``"neg_mae"``, a scikit-learn scorer
        name, or the callable's ``__name__``).
    from_predictions:
        ``f(y_true, y_pred) -> float`` when the metric only needs ``predict``
        (fast paths and fallbacks use it); ``None`` for scorers that need
        ``predict_proba`` or ``decision_function``.
    scorer:
        ``f(estimator, X, y) -> float``, higher is better, always set.
    bound_kind:
        ``"accuracy"``, ``"mae"``, ``"mse"`` or ``None`` when no bound on the
        width of a marginal is known (the paper, Sec. 4.2).
    """

    name: str
    scorer: Scorer
    from_predictions: PredictionMetric | None
    bound_kind: str | None

    def score(self, estimator: Any, X: np.ndarray, y: np.ndarray) -> float:
        return self.number(self.scorer(estimator, X, y))

    def number(self, value: Any) -> float:
        """What the metric returned, as a float, or a ``TypeError`` naming it."""
        try:
            return float(value)
        except (TypeError, ValueError):  # a callable's own metric returning None, a list...
            raise TypeError(f"metric {self.name!r} returned {value!r:.60} (a "
                            f"{type(value).__name__}), not a number: a metric must return "
                            "one float, higher is better.") from None

    def width_bound(self, y_all: np.ndarray) -> float | None:
        """Largest possible width of one marginal Φ_n (the paper, Sec. 4.2), or None."""
        if self.bound_kind == "accuracy":
            return 2.0
        if self.bound_kind is None:
            return None
        y_all = np.asarray(y_all, dtype=float)
        span = float(np.max(y_all) - np.min(y_all))
        return 2.0 * span if self.bound_kind == "mae" else 2.0 * span * span


def _prediction_scorer(fn: PredictionMetric) -> Scorer:
    def scorer(estimator: Any, X: np.ndarray, y: np.ndarray) -> float:
        return fn(y, finite_predictions(estimator.predict(X), rows=len(X)))

    return scorer


def _n_required_positional(fn: Callable[..., Any]) -> int | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(
        1 for p in sig.parameters.values() if p.kind in kinds and p.default is p.empty
    )


def resolve_metric(metric: str | Callable[..., float]) -> MetricSpec:
    """Resolve ``metric`` into a :class:`MetricSpec`.

    ``metric`` is one of ``"accuracy"``, ``"neg_mae"``, ``"neg_mse"``, ``"r2"``,
    ``"true_class_proba"`` (mean predicted probability of the true class),
    any scikit-learn scorer name (``sklearn.metrics.get_scorer_names()``), a
    callable ``f(y_true, y_pred) -> float`` (higher is better), or a
    scikit-learn style scorer ``f(estimator, X, y) -> float``.
    """
    if isinstance(metric, MetricSpec):
        return metric
    if isinstance(metric, str):
        name = _ALIASES.get(metric, metric)
        if name in _BUILTIN:
            fn, _task, bound = _BUILTIN[name]
            return MetricSpec(name, _prediction_scorer(fn), fn, bound)
        if name == TRUE_CLASS_PROBA:
            return MetricSpec(name, _true_class_proba_scorer, None, "accuracy")
        if name in _PROBABILITY_LOSSES:
            return MetricSpec(name, _PROBABILITY_LOSSES[name], None, None)
        if name in get_scorer_names():
            return MetricSpec(name, get_scorer(name), None, None)
        raise ValueError(
            f"metric={metric!r} is not a known metric. Use one of "
            f"{sorted(_BUILTIN)}, a scikit-learn scorer name "
            "(see sklearn.metrics.get_scorer_names()), or a callable "
            "f(y_true, y_pred) -> float where higher is better."
        )
    if callable(metric):
        name = getattr(metric, "__name__", type(metric).__name__)
        if _n_required_positional(metric) == 3:
            return MetricSpec(name, metric, None, None)
        return MetricSpec(name, _prediction_scorer(metric), metric, None)
    raise ValueError(
        f"metric must be a string or a callable, got {type(metric).__name__}. "
        "Pass e.g. metric='accuracy' or metric='neg_mae'."
    )


def metric_task(spec: MetricSpec) -> str | None:
    """``"classification"`` / ``"regression"`` for built-in metrics, else None."""
    if spec.name == TRUE_CLASS_PROBA:
        return "classification"
    entry = _BUILTIN.get(spec.name)
    return entry[1] if entry else None


def check_metric_for_model(spec: MetricSpec, estimator: Any) -> None:
    """Refuse ``accuracy`` (a prediction counts when it equals the label) for a regressor:
    its predictions fall between the labels, so every score was 0 and every value 0,
    silently (find_harmful refuses a regressor for a classification task)."""
    try:
        regressor = is_regressor(estimator)
    except (AttributeError, TypeError):  # not a scikit-learn estimator: refused elsewhere
        return
    what = {"accuracy": "counts the predictions equal to the labels",
            TRUE_CLASS_PROBA: "scores the predicted probability of each row's label"}
    if spec.name in what and regressor:
        raise ValueError(f"metric {spec.name!r} {what[spec.name]}, but "
                         f"{type(estimator).__name__} is a regressor, whose predictions fall "
                         "between them: every score would be 0. Give a classifier, or a "
                         "regression metric (neg_mae, neg_mse or r2).")


def default_metric(estimator: Any) -> str:
    """``accuracy`` for classifiers, ``neg_mae`` otherwise (used when ``metric=None``)."""
    return "accuracy" if is_classifier(estimator) else "neg_mae"
