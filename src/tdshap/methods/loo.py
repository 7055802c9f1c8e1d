"""Sequential leave-one-out, LOO_k (the paper, Sec. 5.1).

On the rows R that remain (all of D at first), every row's leave-one-out
value is ``φ_n = V(R) - V(R minus n)``; the ``k`` lowest are removed (most
harmful first), and the values are recomputed on what remains, until
``max_remove`` rows are ranked. ``k = None`` (or ``k >= N``) is plain
one-shot leave-one-out; ``k = 1`` is the slowest (``|R|`` fits per removed
row).

The removal sequence is the result's ``order``: the removed rows in the
order they were removed, then the rows never removed by their last value
(lowest first), so ``order`` is always a full ranking for the cleansing
protocol. ``values`` hold each row's LOO value in the round that removed it
(or the last round).

This is the one implementation of LOO_k:
``SequentialRemoval(LeaveOneOut(), step=k)`` runs it (as ``LeaveOneOut(k=k)``),
so both give the same values, order and fits.

Every subset is one :class:`~tdshap.utility.base.Chain` with an empty block,
evaluated ``batch_size`` at a time through ``Utility.evaluate_chains``, and
all with the run's seed so that values differ only by the rows left out.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tdshap._validation import check_number
from tdshap.methods.base import BaseValuation
from tdshap.methods.progress import RunProgress
from tdshap.utility.base import Chain, Utility


class LeaveOneOut(BaseValuation):
    """Leave-one-out values, one-shot (``k=None``) or sequential LOO_k.

    Parameters
    ----------
    estimator, metric:
        As for :class:`~tdshap.methods.TDShap`.
    k:
        Rows removed per round; ``None`` or ``>= N`` is plain LOO.
    max_remove:
        Rows to rank by sequential removal (``None``: all but one). The
        cleansing grid with ``max_fraction=0.5`` needs ``N // 2``.
    batch_size:
        Subsets per ``evaluate_chains`` call.
    n_jobs, backend:
        Evaluate each batch on ``n_jobs`` workers (:func:`tdshap.utility.parallel.make_executor`);
        the values are the same whatever ``n_jobs`` and ``backend``.
    fast_path:
        Use an exact incremental fast path where the model has one
        (:mod:`tdshap.utility.fast`): same values, fewer fits.
    on_error, seed_mode, random_state, progress:
        See :class:`~tdshap.methods.base.BaseValuation`.

    Attributes
    ----------
    values_, order_, result_:
        LOO values, the removal order, the full result.
    """

    algorithm = "loo"

    def __init__(
        self,
        estimator: Any = None,
        metric: Any = None,
        k: int | None = None,
        max_remove: int | None = None,
        batch_size: int = 64,
        n_jobs: int = 1,
        backend: Any = "loky",
        fast_path: bool = True,
        on_error: str = "fallback",
        seed_mode: str = "chain",
        random_state: Any = None,
        progress: bool = False,
    ) -> None:
        self.estimator = estimator
        self.metric = metric
        self.k = k
        self.max_remove = max_remove
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.backend = backend
        self.fast_path = fast_path
        self.on_error = on_error
        self.seed_mode = seed_mode
        self.random_state = random_state
        self.progress = progress

    def _check_params(self, n: int) -> None:
        if self.k is not None:
            check_number(self.k, "k", low=1, integer=True, hint="Use None for plain LOO.")
        if self.max_remove is not None:
            check_number(self.max_remove, "max_remove", low=1, integer=True,
                         hint=f"Use at most N - 1 = {n - 1}, or None to rank all "
                         "rows but one.")
            if self.max_remove > n - 1:
                raise ValueError(f"max_remove={self.max_remove} must be at most N - 1 = {n - 1}.")
        check_number(self.batch_size, "batch_size", low=1, integer=True)
        self.k_ = n if self.k is None else min(int(self.k), n)
        self.max_remove_ = n - 1 if self.max_remove is None else int(self.max_remove)

    def _loo_values(self, utility: Utility, remaining: np.ndarray, seed: int) -> np.ndarray:
        """``V(R) - V(R minus n)`` for every ``n`` in ``remaining`` (in that order)."""
        empty = np.empty(0, dtype=np.intp)
        subsets = [remaining] + [np.delete(remaining, i) for i in range(len(remaining))]
        scores: list[float] = []
        step = int(self.batch_size)
        for lo in range(0, len(subsets), step):
            chains = [Chain(s, empty, seed) for s in subsets[lo : lo + step]]
            scores.extend(float(out[0]) for out in self._evaluate(utility, chains))
        return scores[0] - np.asarray(scores[1:])

    def fit(self, X: Any, y: Any, X_val: Any, y_val: Any) -> LeaveOneOut:
        """Rank the rows of ``(X, y)`` by (sequential) leave-one-out value."""
        utility, rng = self._prepare(X, y, X_val, y_val)
        start = time.perf_counter()
        n = utility.n
        seed = utility.run_seed
        values = np.zeros(n)
        counts = np.zeros(n, dtype=np.int64)
        remaining = np.arange(n)
        removed: list[int] = []
        rounds = 0
        round_fits: list[int] = []
        bar = RunProgress(self.progress, desc=f"LOO k={self.k_} N={n}")
        try:
            while True:
                fits = utility.n_fits
                phi = self._loo_values(utility, remaining, seed)
                values[remaining] = phi
                counts[remaining] += 1
                rounds += 1
                round_fits.append(utility.n_fits - fits)
                take = min(self.k_, self.max_remove_ - len(removed))
                # lowest first; ties by a seeded shuffle, as ValuationResult.ranking does
                pick = np.lexsort((rng.random(len(remaining)), phi))[:take]
                if self.k_ >= n:
                    break  # plain LOO: the one round ranks every row
                removed.extend(int(i) for i in remaining[pick])
                remaining = np.delete(remaining, pick)
                bar.update(len(removed) / self.max_remove_, removed=len(removed),
                           fits=utility.n_fits)
                if len(removed) >= self.max_remove_:
                    break
        finally:
            bar.close()
            self._release()  # workers are shut down even when a fit raises
        rest = remaining[np.lexsort((rng.random(len(remaining)), values[remaining]))]
        order = np.concatenate([np.asarray(removed, dtype=np.int64), rest])
        self.order_ = order
        result = self._result(
            utility,
            start,
            values=values,
            counts=counts,
            variances=np.full(n, np.nan),
            order=order,
            extra={
                "metric": utility.metric.name,
                "k": self.k_,
                "max_remove": self.max_remove_,
                "rounds": rounds,
                "round_fits": round_fits,
                "n_removed_sequentially": len(removed),
            },
        )
        self._publish(result)
        return self
