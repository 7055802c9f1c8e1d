"""The chain loop shared by every fast path: exact steps, refits where needed, truncation.

A fast path computes the validation predictions of a whole chain
``P, P+b1, ..., P+b1..bK`` incrementally, in chunks of steps, and says for
each step whether its prediction is exact. :class:`FastPathUtility` scores
the exact ones with the metric (all steps of a chunk in one call, see
:mod:`tdshap.utility.fast.scoring`) and hands every other
step (the empty set, subsets too small for the model, ill-conditioned or
tied steps) to :class:`~tdshap.utility.base.Utility`'s own refit, so a chain's
values are those of the base class whatever the fast path declines.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import numpy as np
from sklearn.base import clone
from threadpoolctl import ThreadpoolController

from tdshap.utility.base import Truncation, TruncationScan, Utility
from tdshap.utility.fast.scoring import RowScorer, row_scorer
from tdshap.utility.metrics import TRUE_CLASS_PROBA


@functools.cache
def _controller() -> ThreadpoolController:
    return ThreadpoolController()


def single_threaded_blas() -> AbstractContextManager[Any]:
    """BLAS on one thread: a fast path's matrices are small, and OpenBLAS's threads
    cost more to wake (far more on a busy machine) than they save on them."""
    return _controller().limit(limits=1, user_api="blas")


#: multiply-adds below which a computation runs on one thread (about 0.05 s on one core)
SMALL_WORK = 2**27


def one_thread_if_small(work: float) -> AbstractContextManager[Any]:
    """BLAS and OpenMP on one thread for a computation of ``work`` multiply-adds below
    :data:`SMALL_WORK`: waking and joining threads costs more than such work (on a busy
    machine, many times more: find_harmful on digits, benchmarks/detection.py);
    larger work keeps every thread."""
    if work >= SMALL_WORK:
        return contextlib.nullcontext()
    return _controller().limit(limits=1)


def _mean_per_step(y_true: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Scores of steps whose predictions already are per-row true-class probabilities."""
    return np.mean(P, axis=1)


class NotEligible(ValueError):
    """The estimator, metric or data cannot use this fast path (the reason says why)."""


class FastPathUtility(Utility):
    """A :class:`~tdshap.utility.base.Utility` whose chains are evaluated incrementally.

    Subclasses implement :meth:`_start_chain` and :meth:`_extend_chain`. The
    counters keep their meaning: every step of a chain is one evaluation;
    ``n_fast_evaluations`` counts the steps the fast path computed,
    ``n_fast_declined`` the non-empty steps it handed back to a refit (which
    count in ``n_fits`` as usual); ``fit_seconds`` includes the seconds spent
    in the incremental computation and its scoring.
    """

    name: ClassVar[str] = "fast"
    # whether the subclass can predict true-class probabilities (metric "true_class_proba")
    proba_capable: ClassVar[bool] = False
    counter_names = (*Utility.counter_names, "n_fast_evaluations", "n_fast_declined")
    # steps computed together: large enough to amortise numpy calls, small
    # enough that a truncated TMC chain wastes little
    chunk_size: int = 128

    def __init__(self, estimator: Any, metric: Any, X: np.ndarray, y: np.ndarray,
                 X_val: np.ndarray, y_val: np.ndarray, **kwargs: Any) -> None:
        super().__init__(estimator, metric, X, y, X_val, y_val, **kwargs)
        self.true_class_proba = self.metric.name == TRUE_CLASS_PROBA
        if self.true_class_proba and self.proba_capable and self.classifier:
            # the subclass predicts each validation row's true-class probability
            self._row_scorer: RowScorer = _mean_per_step
        elif self.metric.from_predictions is None:
            raise NotEligible(
                f"metric {self.metric.name!r} needs more than predictions; fast paths "
                "score predictions only."
            )
        else:
            self._row_scorer = row_scorer(self.metric)
        self.n_fast_evaluations = 0
        self.n_fast_declined = 0

    # -- what a subclass provides ----------------------------------------
    def _start_chain(self, prefix: np.ndarray) -> tuple[Any, np.ndarray | None]:
        """State for the subset ``prefix`` and its validation predictions (None: not exact)."""
        raise NotImplementedError

    def _extend_chain(self, state: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Add ``rows`` one at a time to ``state`` (in place).

        Returns the predictions after each addition, shape ``(len(rows), n_val)``,
        and a boolean array saying which of them are exact.
        """
        raise NotImplementedError

    # -- the chain -------------------------------------------------------
    def _chain_scores(self, prefix: np.ndarray, block: np.ndarray) -> Iterator[np.ndarray]:
        """Scores of the chain's steps chunk by chunk, NaN where not exact; lazy."""
        start = time.perf_counter()
        with single_threaded_blas():
            state, pred = self._start_chain(prefix)
            scores = self._scores(pred[None] if pred is not None else None, np.ones(1, bool))
        self.fit_seconds += time.perf_counter() - start
        yield scores
        for lo in range(0, len(block), self.chunk_size):
            start = time.perf_counter()
            with single_threaded_blas():
                preds, exact = self._extend_chain(state, block[lo : lo + self.chunk_size])
                scores = self._scores(preds, exact)
            self.fit_seconds += time.perf_counter() - start
            yield scores

    def _scores(self, preds: np.ndarray | None, exact: np.ndarray) -> np.ndarray:
        if preds is not None and exact.all():  # the usual case: no copy of preds
            return self._row_scorer(self.y_val, preds)
        out = np.full(len(exact), np.nan)
        if preds is not None and exact.any():
            out[exact] = self._row_scorer(self.y_val, preds[exact])
        return out

    def evaluate_chain(
        self,
        prefix: np.ndarray,
        block: np.ndarray,
        seed: int,
        truncation: Truncation | None = None,
    ) -> np.ndarray:
        """``[V(P), V(P+b1), ..., V(P+b1..bK)]``, as :meth:`Utility.evaluate_chain`."""
        prefix = np.asarray(prefix, dtype=np.intp)
        block = np.asarray(block, dtype=np.intp)
        idx = np.concatenate([prefix, block])
        p, k = len(prefix), len(block)
        out = np.empty(k + 1)
        model = None
        scan = TruncationScan(truncation)
        j = 0
        for scores in self._chain_scores(prefix, block):
            n = len(scores)
            if truncation is None and p + j > 0 and np.isfinite(scores).all():
                out[j : j + n] = scores  # the usual case, without a step-by-step loop
                self.n_evaluations += n
                self.n_fast_evaluations += n
                j += n
                continue
            for score in scores:
                # the empty set and steps without a finite exact score: the refit decides
                if p + j > 0 and np.isfinite(score):
                    self.n_evaluations += 1
                    self.n_fast_evaluations += 1
                    out[j] = score
                else:
                    self.n_fast_declined += int(p + j > 0)
                    model = clone(self.estimator) if model is None else model
                    out[j] = self._evaluate(model, idx[: p + j], self._fit_seed(seed, j))
                if cut := scan.cut(out, j):
                    self.n_truncated += cut
                    return out
                j += 1
        return out

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "fast_path": self.name}
