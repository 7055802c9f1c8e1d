"""Leave-one-out with k = |D| (SPEC §3), asking for all N + 1 fits in one call.

``φ_n = V(D) − V(D∖{d_n})``. Every subset is a chain without a block, and
all N + 1 chains go to ``Utility.evaluate_chains`` at once, so a batched
utility (:class:`~tdshap.deep.batched.BatchedTorchUtility`) trains them as
stacks. All fits share one seed (common random numbers): the values differ
only by the row left out.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tdshap.methods.base import BaseValuation
from tdshap.utility import Chain


class BatchedLOO(BaseValuation):
    """One-shot leave-one-out; the most harmful rows have the lowest values."""

    algorithm = "loo"

    def __init__(self, estimator: Any = None, metric: Any = None, on_error: str = "fallback",
                 seed_mode: str = "chain", random_state: Any = None,
                 progress: bool = False) -> None:
        self.estimator = estimator
        self.metric = metric
        self.on_error = on_error
        self.seed_mode = seed_mode
        self.random_state = random_state
        self.progress = progress

    def fit(self, X: Any, y: Any, X_val: Any, y_val: Any) -> BatchedLOO:
        utility, rng = self._prepare(X, y, X_val, y_val)
        start = time.perf_counter()
        n, seed = utility.n, int(rng.integers(2**32))
        everyone, none = np.arange(n), np.array([], dtype=np.intp)
        chains = [Chain(everyone, none, seed)]
        chains += [Chain(np.delete(everyone, i), none, seed) for i in range(n)]
        scores = np.array([s[0] for s in utility.evaluate_chains(chains)])
        values = scores[0] - scores[1:]
        self._publish(self._result(utility, start, values=values, counts=np.ones(n, int),
                                   variances=np.full(n, np.nan)))
        return self
