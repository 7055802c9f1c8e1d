"""Warm start (the paper, Sec. 3.3, enhancement (iii)): train once on D, start every V(D') there.

The protocol is one optional method on an estimator::

    prepared = estimator.prepare(X, y)

called once per valuation run on the whole training set, before any subset
is fitted (``BaseValuation`` does it when the estimator has the method).
``prepared`` is a copy of the estimator that carries what the subset fits
start from, as a hyper-parameter (``init_from``) holding a :class:`Pretrained`.
scikit-learn's ``clone`` deep-copies hyper-parameters; :class:`Pretrained`
answers a deep copy with itself, so the thousands of clones a run makes all
share one read-only copy of the pretrained weights instead of copying them.
"""

from __future__ import annotations

import time
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class WarmStartLearner(Protocol):
    """An estimator that can be prepared on all of D before subsets are valued."""

    def prepare(self, X: Any, y: Any) -> Any:
        """A copy of the estimator whose later ``fit`` calls start from D's model."""
        ...


class Pretrained:
    """What training on all of D produced (weights, a booster, a fitted model); read-only.

    ``payload`` is never modified by the fits that start from it: they copy
    what they change. ``seconds`` is the time the pretraining took.
    """

    def __init__(self, payload: Any, *, n_rows: int, steps: int, seconds: float) -> None:
        self.payload = payload
        self.n_rows = int(n_rows)
        self.steps = int(steps)
        self.seconds = float(seconds)

    def __deepcopy__(self, memo: dict[int, Any]) -> Pretrained:
        return self  # shared by every clone on purpose: see the module docstring

    def __repr__(self) -> str:
        # no seconds: the repr enters checkpoint settings, which must match when resumed
        return f"Pretrained(n_rows={self.n_rows}, steps={self.steps})"


def prepare_estimator(estimator: Any, X: Any, y: Any, seed: int | None = None) -> Any:
    """``estimator.prepare(X, y)`` for warm-start learners, else ``estimator`` itself.

    A learner whose ``random_state`` is None is pretrained with ``seed`` (the
    valuation's run seed), so that a seeded valuation is reproducible as a whole.
    """
    if not isinstance(estimator, WarmStartLearner):
        return estimator
    if seed is not None and getattr(estimator, "random_state", 0) is None:
        from sklearn.base import clone

        estimator = clone(estimator).set_params(random_state=int(seed))
    return estimator.prepare(X, y)


class Stopwatch:
    """``with Stopwatch() as t: ...; t.seconds``: for recording pretraining time."""

    def __enter__(self) -> Stopwatch:
        self._start = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start
