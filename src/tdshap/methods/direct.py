"""Valuation methods that compute values directly, without the subset utility.

Closed forms (:class:`~tdshap.methods.KNNShapley`) and bagging
(:class:`~tdshap.methods.DataOOB`) never score a model of a subset on the
validation set, so they have no :class:`~tdshap.utility.Utility`;
:class:`DirectValuation` gives them the same inputs, checks and
:class:`~tdshap.result.ValuationResult` as the other methods.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from tdshap._validation import (
    as_pair,
    check_flags,
    check_number,
    check_random_state,
    check_unique_labels,
)
from tdshap.intervals import DEFAULT_INTERVAL
from tdshap.methods.base import BaseValuation, seed_of
from tdshap.result import ValuationResult

TASKS = ("classification", "regression")


def infer_target_task(y: np.ndarray) -> str:
    """``"regression"`` for float targets with a fractional part, else ``"classification"``."""
    y = np.asarray(y)
    if y.dtype.kind == "f" and not np.all(np.equal(np.mod(y, 1), 0)):
        return "regression"
    return "classification"


class DirectValuation(BaseValuation):
    """Base class of methods that value rows without fitting models of subsets.

    Subclasses call :meth:`_start` first (inputs checked, clocks started) and
    :meth:`_finish` last (result built and published); ``tau`` is compared to
    the values with ``<=``, as TDShap's ``harmful_`` is.
    """

    tau: Any = 0.0

    def _start(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """Training features and targets as arrays; the user's row index kept."""
        check_random_state(self.random_state)
        check_flags(progress=self.progress)
        Xa, ya = as_pair(X, y, "X", "y")
        if len(Xa) == 0:
            raise ValueError("X is empty: the training set needs at least one row.")
        check_unique_labels(X, "X")
        self._index = X.index.to_numpy() if isinstance(X, pd.DataFrame) else None
        self._clock = (time.perf_counter(), time.process_time())
        return Xa, ya

    def _check_fixed_metric(self, task: str, allowed: dict[str, tuple[str, ...]]) -> str:
        """The one metric this method's utility has for ``task``; other metrics are an error."""
        names = allowed[task]
        if self.metric is not None and self.metric not in names:
            raise ValueError(
                f"metric={self.metric!r}: {type(self).__name__} has a fixed utility for "
                f"{task} ({names[0]}); use metric=None or {names[0]!r}."
            )
        self.metric_ = names[0]
        return names[0]

    def _resolve_task(self, y: np.ndarray, estimator: Any) -> str:
        """``task`` if given, else the estimator's kind, else inferred from ``y``."""
        task = getattr(self, "task", None)
        if task is not None:
            if task not in TASKS:
                raise ValueError(f"task={task!r} must be one of {TASKS}, or None to take "
                                 "the estimator's kind (else infer it from y).")
            return str(task)
        kind = getattr(estimator, "_estimator_type", None)
        if kind is None and estimator is not None:
            from sklearn.base import is_classifier, is_regressor

            kind = "classifier" if is_classifier(estimator) else (
                "regressor" if is_regressor(estimator) else None)
        if kind == "classifier":
            return "classification"
        if kind == "regressor":
            return "regression"
        return infer_target_task(y)

    def _threshold(self, values: np.ndarray) -> float:
        """``tau`` as a number (subclasses resolve ``"auto"``)."""
        check_number(self.tau, "tau", hint="It is in units of the values.")
        return float(self.tau)

    def _finish(
        self,
        *,
        values: np.ndarray,
        counts: np.ndarray,
        variances: np.ndarray,
        n_fits: int = 0,
        extra: dict[str, Any] | None = None,
        interval: str = DEFAULT_INTERVAL,
    ) -> ValuationResult:
        """Build the result (``is_harmful``: value <= tau) and set the fitted attributes."""
        wall0, cpu0 = self._clock
        tau = self._threshold(values)
        self.tau_ = tau
        result = ValuationResult(
            algorithm=self.algorithm,
            values=values,
            counts=counts,
            variances=variances,
            harmful=values <= tau,
            threshold=tau,
            n_fits=n_fits,
            n_evaluations=0,
            wall_seconds=time.perf_counter() - wall0,
            fit_seconds=0.0,
            seed=seed_of(self.random_state),
            config=self._config(),
            extra={"metric": self.metric_, "cpu_seconds": time.process_time() - cpu0,
                   **(extra or {})},
            index=self._index,
            interval=interval,
        )
        self._publish(result)
        return result
