"""The cleansing protocol's models: one estimator fitted on many subsets of the training rows.

The curve's cuts and the checks' folds each keep some rows and refit. Every model is
seeded alike (common random numbers), so a subset's model is the same whether it is
fitted here or by a joblib worker: the cut does not depend on ``n_jobs``.

Workers are started only where they pay: the model must be refitted (a k-NN scored from
its neighbour lists refits nothing), it must not be one of :mod:`tdshap.torch`'s networks
(a process each would copy the network and its device), and the fits left must be
expected to take :data:`MIN_PARALLEL_SECONDS` or more in-process, judged by the fits
done here so far (the first one always is). A worker fits with its thread-count
parameters set to 1 and its BLAS/OpenMP pools limited to its share of the cores, so that
workers do not oversubscribe the machine.
"""

from __future__ import annotations

import os
import pickle
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from typing import Any

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

from tdshap.utility.base import fallback_model
from tdshap.utility.fast.neighbor_lists import RemovalFits, subset_model
from tdshap.utility.parallel import check_n_jobs, cloudpickle, limited_threads, single_threaded

#: The in-process seconds the fits left must be expected to take before workers start:
#: starting loky's processes and shipping the data costs about a second, and on two cores
#: a histogram-boosting cut of 48 quick fits took about as long on workers as in-process
#: (``benchmarks/parallel_cut.py --min-seconds 2``: 7.6 s against 7.3 s).
MIN_PARALLEL_SECONDS = 5.0
#: The in-process seconds of fits each worker started must be expected to take over.
WORKER_SECONDS = 1.0

#: What :meth:`SubsetFitter.fit_all` yields per subset: a call returning the model and
#: whether it is the constant model of a one-class subset, or raising the fit's error.
Outcome = Callable[[], tuple[Any, bool]]


def worker_count(n_workers: int, fits: int, seconds: float) -> int:
    """How many of ``n_workers`` take ``fits`` fits expected to last ``seconds`` in one
    process: each is given :data:`WORKER_SECONDS` of them or more; 1 where fewer than
    :data:`MIN_PARALLEL_SECONDS` in all would not pay for starting workers."""
    if n_workers <= 1 or fits <= 1 or seconds < MIN_PARALLEL_SECONDS:
        return 1
    return max(1, min(n_workers, fits, int(seconds / WORKER_SECONDS)))


def _picklable(obj: Any) -> bool:
    try:
        pickle.dumps(obj)
    except Exception:
        return False
    return True


def _fit_on_worker(estimator: Any, X: np.ndarray, y: np.ndarray, keep: np.ndarray,
                   seed_params: dict[str, int], threads: int
                   ) -> tuple[Any, list[tuple[str, type[Warning]]]]:
    """The model fitted on ``X[keep]`` or the error its fit raised, and the warnings it
    gave, each as something that can travel back."""
    with limited_threads(threads), warnings.catch_warnings(record=True) as seen:
        # the main process shows them as its own fits' (the command folds them into a line)
        warnings.simplefilter("always")
        try:
            result = subset_model(estimator, X, y, keep, seed_params)()
        except Exception as err:
            result = err if _picklable(err) else RuntimeError(f"{type(err).__name__}: {err}")
    warned = [(str(w.message), w.category if _picklable(w.category) else UserWarning)
              for w in seen]
    return result, warned


def _holds_network(estimator: Any) -> bool:
    """Whether ``estimator`` is, or holds (a Pipeline's step), a model that brings its own
    training (``utility_class``: :mod:`tdshap.torch`'s networks). The class is asked, not
    the object: the property resolves the device."""
    try:
        parts = [estimator, *estimator.get_params(deep=True).values()]
    except Exception:  # not a scikit-learn estimator: only itself to look at
        parts = [estimator]
    return any(hasattr(type(p), "utility_class") for p in parts)


def _returning(value: Any, alone: bool = False) -> Outcome:
    if isinstance(value, Exception):
        def raising() -> tuple[Any, bool]:
            raise value
        return raising
    return lambda: (value, alone)


class SubsetFitter:
    """Fit ``estimator`` on subsets of ``(X, y)``: ``fit(keep)`` here, ``fit_all(keeps)`` in
    order, on ``n_jobs`` workers where that pays (module docstring).

    ``classes`` (a classifier's) makes a subset of one class the constant model of that
    class, without a fit; ``removal_fits`` answers a k-NN's cuts from its neighbour lists.
    """

    def __init__(self, estimator: Any, X: np.ndarray, y: np.ndarray,
                 classes: np.ndarray | None, seed_params: dict[str, int],
                 removal_fits: RemovalFits, n_jobs: int | None = None) -> None:
        check_n_jobs(n_jobs, optional=True)
        self.estimator, self.X, self.y, self.classes = estimator, X, y, classes
        self.seed_params, self.removal_fits = seed_params, removal_fits
        self.n_workers = effective_n_jobs(n_jobs)
        self.n_worker_fits = 0  # fits done by workers
        self.n_timed, self.seconds_timed = 0, 0.0  # fits done here, and their seconds

    @property
    def seconds_per_fit(self) -> float | None:
        """The mean seconds of the fits done here (None before the first)."""
        return self.seconds_timed / self.n_timed if self.n_timed else None

    def _one_class(self, keep: np.ndarray) -> bool:
        return self.classes is not None and len(np.unique(self.y[keep])) < 2

    def _alone(self, keep: np.ndarray) -> tuple[Any, bool]:
        return fallback_model(self.y[keep], self.classes), True

    def fit(self, keep: np.ndarray) -> tuple[Any, bool]:
        """The model on ``X[keep]`` and whether it is a one-class subset's constant model."""
        if self._one_class(keep):
            return self._alone(keep)
        started = time.perf_counter()
        model = self.removal_fits(keep, self.seed_params)
        self.n_timed += 1
        self.seconds_timed += time.perf_counter() - started
        return model, False

    def _here(self, keep: np.ndarray) -> Outcome:
        try:
            model, alone = self.fit(keep)
        except Exception as err:
            return _returning(err)
        return _returning(model, alone)

    def _pays(self, n_left: int) -> bool:
        per_fit = self.seconds_per_fit
        return (per_fit is not None and worker_count(self.n_workers, n_left, per_fit * n_left) > 1
                and not self.removal_fits.sets and not _holds_network(self.estimator)
                and self._shippable)

    @cached_property
    def _shippable(self) -> bool:
        """Whether the estimator can travel to a worker (loky sends it by cloudpickle); one
        holding a lock or an open file is fitted here instead."""
        try:
            cloudpickle.dumps(self.estimator)
        except Exception:
            return False
        return True

    def fit_all(self, keeps: Iterable[np.ndarray], count: int) -> Iterator[Outcome]:
        """Each subset's :data:`Outcome`, in the order of the ``count`` ``keeps``. A lazy
        ``keeps`` is taken one at a time while the fits stay here (the cleansing grid's
        subsets keep most rows each: a million-row k-NN's would be hundreds of MB at
        once)."""
        left = count
        rest = iter(keeps)
        for keep in rest:
            if self._pays(left):
                yield from self._on_workers([keep, *rest])
                return
            yield self._here(keep)
            left -= 1

    def _on_workers(self, keeps: list[np.ndarray]) -> Iterator[Outcome]:
        alone = [self._one_class(keep) for keep in keeps]
        fitted = [keep for keep, one in zip(keeps, alone, strict=True) if not one]
        # a worker costs about a second to start (and a process's memory): each one is
        # given about that much work or more; one-class subsets fit nothing
        workers = worker_count(self.n_workers, len(fitted),
                               (self.seconds_per_fit or 0.0) * len(fitted))
        threads = max(1, (os.cpu_count() or 1) // workers)
        estimator = single_threaded(self.estimator)
        models = Parallel(n_jobs=workers, return_as="generator")(
            delayed(_fit_on_worker)(estimator, self.X, self.y, keep, self.seed_params, threads)
            for keep in fitted)
        broken = False
        for keep, one in zip(keeps, alone, strict=True):
            if one:
                yield _returning(*self._alone(keep))
                continue
            if not broken:
                try:
                    result, warned = next(models)
                except Exception as err:  # the workers' own failure, not the fit's
                    broken = True
                    warnings.warn(f"the cut's workers failed ({type(err).__name__}: {err}); "
                                  "its other fits run in this process.", RuntimeWarning,
                                  stacklevel=2)
            if broken:
                yield self._here(keep)
                continue
            self.n_worker_fits += 1
            for message, category in warned:
                warnings.warn(message, category, stacklevel=2)
            yield _returning(result)
