"""Random removal (the paper, Sec. 5.2): the control every cleansing method must beat.

Rows are ranked in a uniformly random order (seeded by ``random_state``);
no model is fitted. The values are uniform on [0, 1) and ``order`` sorts
them, so ranking by value and by order agree.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tdshap.methods.base import BaseValuation


class RandomRemoval(BaseValuation):
    """A seeded random ranking of the training rows.

    Parameters
    ----------
    estimator, metric:
        Only checked, so that every method takes the same arguments.
    random_state:
        Seed (int) or ``numpy.random.Generator``.
    """

    algorithm = "random"

    def __init__(
        self,
        estimator: Any = None,
        metric: Any = None,
        on_error: str = "fallback",
        seed_mode: str = "chain",
        random_state: Any = None,
        progress: bool = False,
    ) -> None:
        self.estimator = estimator
        self.metric = metric
        self.on_error = on_error
        self.seed_mode = seed_mode
        self.random_state = random_state
        self.progress = progress

    def fit(self, X: Any, y: Any, X_val: Any, y_val: Any) -> RandomRemoval:
        """Draw a random order of the rows of ``(X, y)``."""
        utility, rng = self._prepare(X, y, X_val, y_val)
        start = time.perf_counter()
        values = rng.random(utility.n)
        n = utility.n
        result = self._result(utility, start, values=values, counts=np.zeros(n, dtype=np.int64),
                              variances=np.full(n, np.nan), order=np.argsort(values))
        self._publish(result)
        return self
