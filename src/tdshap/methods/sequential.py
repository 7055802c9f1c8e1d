"""Sequential removal: value, remove the lowest rows, value what remains, repeat.

A row's value depends on the other rows: once the most harmful rows are
gone, rows that looked harmless may turn harmful, and the reverse. LOO_k
(SPEC §3) accounts for this by recomputing the values after every ``k``
removals; :class:`SequentialRemoval` does the same for any valuation method,
TDShap included: each stage fits a clone of ``method`` on the rows that
remain, removes the ``step`` rows it ranks lowest, and stops once
``max_remove`` rows are ranked. ``SequentialRemoval(LeaveOneOut(), step=k)``
is LOO_k.

The result's ``order`` is the removal sequence, then the rows never removed
in the last stage's order, so it is a full ranking for the cleansing
protocol; ``values``, ``counts`` and ``variances`` are each row's figures
from the stage that removed it (or the last stage). Values from different
stages are on different data and are not comparable: rank by ``order``.
Each stage costs one run of ``method``; with ``step = 10`` and
``max_remove = 500`` that is 50 runs.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone

from tdshap._validation import check_data, check_number
from tdshap.methods.base import seed_of
from tdshap.progress import RunProgress
from tdshap.result import ValuationResult


class SequentialRemoval(BaseEstimator):
    """Rank rows by repeated valuation and removal (see the module docstring).

    Parameters
    ----------
    method:
        A valuation method (:class:`~tdshap.methods.TDShap`,
        :class:`~tdshap.methods.TMCShapley`, ...), cloned for every stage.
        Counts in it that must fit the shrinking data should be fractions
        (TDShap's ``n_min=0.9``).
    step:
        Rows removed per stage.
    max_remove:
        Rows to rank by removal (``None``: half of N, what the cleansing
        grid removes at most by default).
    random_state:
        Seeds every stage's ``method`` (its own ``random_state`` is replaced)
        and the tie-breaking of rankings.
    progress:
        Show a progress bar over the stages.

    Attributes
    ----------
    values_, order_, result_:
        Each row's value in the stage that removed it, the removal order,
        the full result (fits and seconds summed over stages).
    n_stages_:
        Stages run.
    """

    def __init__(self, method: Any = None, step: int = 10, max_remove: int | None = None,
                 random_state: Any = None, progress: bool = False) -> None:
        self.method = method
        self.step = step
        self.max_remove = max_remove
        self.random_state = random_state
        self.progress = progress

    @property
    def algorithm(self) -> str:
        return f"sequential_{getattr(self.method, 'algorithm', 'method')}"

    def _check_params(self, n: int) -> int:
        if not all(hasattr(self.method, a) for a in ("fit", "get_params", "algorithm")):
            raise ValueError("method must be a tdshap valuation method such as TDShap(Ridge()), "
                             f"not the model itself: got {self.method!r}.")
        check_number(self.step, "step", low=1, integer=True, hint="Rows removed per stage.")
        if self.max_remove is None:
            return max(1, n // 2)
        check_number(self.max_remove, "max_remove", low=1, integer=True,
                     hint=f"Use at most N - 1 = {n - 1}, or None.")
        if self.max_remove > n - 1:
            raise ValueError(f"max_remove={self.max_remove} must be at most N - 1 = {n - 1}.")
        return int(self.max_remove)

    def fit(self, X: Any, y: Any, X_val: Any, y_val: Any) -> SequentialRemoval:
        """Rank the rows of ``(X, y)`` by sequential valuation and removal."""
        Xa, ya, Xv, yv = check_data(X, y, X_val, y_val)
        n = len(ya)
        max_remove = self._check_params(n)
        rng = np.random.default_rng(self.random_state)
        start = time.perf_counter()
        values, variances = np.zeros(n), np.full(n, np.nan)
        counts = np.zeros(n, dtype=np.int64)
        remaining = np.arange(n)
        removed: list[np.ndarray] = []
        totals = {"n_fits": 0, "n_evaluations": 0, "fit_seconds": 0.0}
        stages: list[dict[str, Any]] = []
        done = 0
        bar = RunProgress(self.progress, desc=f"sequential {self.method.__class__.__name__}")
        try:
            while done < max_remove:
                stage = clone(self.method)
                if "random_state" in stage.get_params():
                    stage.set_params(random_state=int(rng.integers(2**31 - 1)))
                stage.fit(Xa[remaining], ya[remaining], Xv, yv)
                result: ValuationResult = stage.result_
                ranking = result.ranking(rng)
                values[remaining] = result.values
                counts[remaining] = result.counts
                variances[remaining] = result.variances
                for key in totals:
                    totals[key] += getattr(result, key)
                take = min(int(self.step), max_remove - done)
                removed.append(remaining[ranking[:take]])
                rest = remaining[ranking[take:]]  # the last stage's order for the others
                remaining = np.sort(rest)
                done += take
                stages.append({"n": len(ranking), "n_fits": result.n_fits,
                               "seconds": result.wall_seconds})
                bar.update(done / max_remove, removed=done, fits=totals["n_fits"])
        finally:
            bar.close()
        order = np.concatenate([*removed, rest])
        self.values_, self.order_, self.n_stages_ = values, order, len(stages)
        self.result_ = ValuationResult(
            algorithm=self.algorithm,
            values=values,
            counts=counts,
            variances=variances,
            n_fits=int(totals["n_fits"]),
            n_evaluations=int(totals["n_evaluations"]),
            wall_seconds=time.perf_counter() - start,
            fit_seconds=float(totals["fit_seconds"]),
            seed=seed_of(self.random_state),
            config={"method": repr(self.method), "step": int(self.step),
                    "max_remove": max_remove, "random_state": seed_of(self.random_state)},
            extra={"stages": len(stages), "max_remove": max_remove, "step": int(self.step),
                   "inner_algorithm": getattr(self.method, "algorithm", None),
                   "stage_fits": [s["n_fits"] for s in stages]},
            order=order,
            index=X.index.to_numpy() if isinstance(X, pd.DataFrame) else None,
        )
        return self
