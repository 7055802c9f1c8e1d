"""Parallel and distributed evaluation of chains: joblib locally, Dask on a cluster.

Every method evaluates through :meth:`tdshap.utility.base.Utility.evaluate_chains`;
when a method runs with ``n_jobs != 1`` or ``backend="dask"``, it passes an
*executor* (:func:`make_executor`) to that call, which ships the chains to workers,
runs :meth:`~tdshap.utility.base.Utility.evaluate_chain` there (so fast-path
subclasses keep their speed) and merges the results back.

Guarantees
----------
* **Data travels once.** The utility (estimator, ``X``, ``y``, ``X_val``,
  ``y_val``) is sent to the workers once per run: joblib workers read it from
  a temporary file and keep it in a per-process cache keyed by a token, so
  each task carries only its chain; Dask scatters it once (``broadcast``).
* **Same results whatever the workers.** Chains (prefix, block, seed) are
  drawn in the main process; workers only evaluate them; results come back in
  the order the chains were given and counters and cache entries are merged
  in that order. Values depend only on the chains, so they are identical for
  any ``n_jobs`` or backend. Counters may differ slightly: a worker does not
  see the cache entries other workers made, so a cross-chain cache hit of a
  serial run can become a (same-valued) refit.
* **No oversubscription.** On a worker, BLAS/OpenMP pools are limited with
  threadpoolctl (to ``cpu_count // n_workers`` for joblib, 1 for Dask), and
  estimator parameters that take every core by default (``n_jobs``,
  ``num_threads``, ``nthread``, ``thread_count``, ``n_threads``, nested ones
  too) are set to 1.

Batches of one chain run in-process: there is nothing to parallelise.
Workers evaluate on shallow copies of the shipped utility (own counters and
cache): a subclass's ``evaluate_chain`` may keep per-chain state in locals or
in the copy, but must not mutate objects it shares with other chains.
``fit_seconds`` sums the seconds spent fitting on all workers, so it can
exceed the wall time of a parallel run.
"""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
import threading
import uuid
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from joblib import Parallel, cpu_count, delayed, effective_n_jobs
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from tdshap.utility.base import Chain, Utility

try:  # joblib >= 1.5 depends on cloudpickle; older versions vendor it
    import cloudpickle
except ImportError:  # pragma: no cover
    from joblib.externals import cloudpickle

#: joblib backends accepted by name (``"dask"`` selects :class:`DaskExecutor`).
JOBLIB_BACKENDS: tuple[str, ...] = ("loky", "threading", "multiprocessing")
#: estimator parameters that, left at their default, start one thread per core.
THREAD_PARAMS: tuple[str, ...] = ("n_jobs", "num_threads", "nthread", "thread_count", "n_threads")

ChainOutput = tuple[list[np.ndarray], dict[str, float], dict[bytes, float]]


# -- what runs on a worker ---------------------------------------------------
_limit_lock = threading.Lock()
_limit_depth = 0
_limit_ctl: Any = None


@contextmanager
def limited_threads(threads: int) -> Iterator[None]:
    """Limit BLAS/OpenMP pools while inside; re-entrant across threads.

    threadpoolctl's limits are process-wide: with several worker threads in
    one process (Dask ``processes=False``, joblib ``threading``) the first to
    enter sets the limit and the last to leave restores it, so that an early
    leaver never lifts the limit under a neighbour still running.
    """
    global _limit_depth, _limit_ctl
    with _limit_lock:
        if _limit_depth == 0:
            _limit_ctl = threadpool_limits(limits=threads)
        _limit_depth += 1
    try:
        yield
    finally:
        with _limit_lock:
            _limit_depth -= 1
            if _limit_depth == 0:
                _limit_ctl.restore_original_limits()
                _limit_ctl = None


def run_chains(utility: Utility, chains: Sequence[Chain], threads: int = 1) -> ChainOutput:
    """Evaluate ``chains`` on a private copy of ``utility``; return scores, counters, cache.

    The copy shares the (read-only) data and estimator but has its own
    counters and cache, so concurrent tasks on one shipped utility never race.
    """
    local = utility.fresh_copy()
    with limited_threads(threads):
        scores = [local.evaluate_chain(c.prefix, c.block, c.seed, c.truncation) for c in chains]
    return scores, local.counters(), dict(local.cache_items())


_WORKER_UTILITIES: OrderedDict[str, Utility] = OrderedDict()
_WORKER_LOCK = threading.Lock()
_WORKER_KEEP = 2  # utilities of this many recent runs stay loaded in a worker


def _worker_utility(token: str, path: str) -> Utility:
    """The utility of run ``token``, read from ``path`` the first time this process sees it."""
    with _WORKER_LOCK:
        if token not in _WORKER_UTILITIES:
            with open(path, "rb") as fh:
                _WORKER_UTILITIES[token] = pickle.load(fh)
            while len(_WORKER_UTILITIES) > _WORKER_KEEP:
                _WORKER_UTILITIES.popitem(last=False)
        return _WORKER_UTILITIES[token]


def _joblib_task(token: str, path: str, chains: Sequence[Chain], threads: int) -> ChainOutput:
    return run_chains(_worker_utility(token, path), chains, threads)


# -- what runs in the main process -------------------------------------------
def single_threaded(estimator: Any) -> Any:
    """A clone of ``estimator`` with every thread-count parameter (nested too) set to 1."""
    try:
        params = estimator.get_params(deep=True)
    except AttributeError:
        return estimator
    def owner(name: str) -> Any:
        return params.get(name.rpartition("__")[0], estimator) if "__" in name else estimator

    # scikit-learn's None is one job already (outside a joblib context, as on a worker),
    # and setting it warns where the parameter is deprecated (LogisticRegression's n_jobs)
    names = [p for p in params if p.rsplit("__", 1)[-1] in THREAD_PARAMS
             and not (params[p] is None
                      and type(owner(p)).__module__.startswith("sklearn."))]
    if not names:
        return estimator
    return clone(estimator).set_params(**dict.fromkeys(names, 1))


def worker_copy(utility: Utility) -> Utility:
    """What is shipped to workers: the utility without its cache, counters or threads."""
    shipped = utility.fresh_copy()
    shipped.estimator = single_threaded(utility.estimator)
    return shipped


def merge(utility: Utility, outputs: Sequence[ChainOutput]) -> list[np.ndarray]:
    """Add the workers' counters and cache entries to ``utility``, in the given order."""
    scores: list[np.ndarray] = []
    for chain_scores, counters, cache in outputs:
        scores.extend(chain_scores)
        utility.merge(counters, cache)
    return scores


class Executor:
    """Runs batches of chains on workers; subclasses implement :meth:`_map` and ``_ship``.

    ``n_workers`` is how many chains can run at once (used to size batches).
    """

    n_workers: int = 1

    def __init__(self) -> None:
        self._shipped: weakref.ref[Utility] | None = None

    def evaluate(self, utility: Utility, chains: Sequence[Chain]) -> list[np.ndarray]:
        """Scores of ``chains``, in order; ``utility``'s counters and cache updated."""
        if self._shipped is None or self._shipped() is not utility:
            self._ship(utility)
            self._shipped = weakref.ref(utility)
        return merge(utility, self._map(list(chains)))

    def _ship(self, utility: Utility) -> None:
        raise NotImplementedError

    def _map(self, chains: list[Chain]) -> list[ChainOutput]:
        raise NotImplementedError

    def close(self) -> None:
        """Release what this executor started (temporary files, an owned cluster)."""


class JoblibExecutor(Executor):
    """Local workers through joblib (``loky`` processes by default).

    The utility is written once to a temporary file (cloudpickle, so classes
    defined in ``__main__`` work too); each worker process loads it on its
    first task and keeps it, so later tasks carry only their chain.
    """

    def __init__(self, n_jobs: int, backend: str = "loky") -> None:
        super().__init__()
        self.n_jobs = n_jobs
        self.backend = backend
        self.n_workers = effective_n_jobs(n_jobs)
        cores = os.cpu_count() or 1
        self.threads = max(1, cores // self.n_workers)
        self._dir: str | None = None
        self._token = ""
        self._path = ""
        self._cleanup: weakref.finalize[Any, Any] | None = None

    def _ship(self, utility: Utility) -> None:
        self.close()
        self._dir = tempfile.mkdtemp(prefix="tdshap-")
        self._token = uuid.uuid4().hex
        self._path = os.path.join(self._dir, "utility.pkl")
        with open(self._path, "wb") as fh:
            fh.write(cloudpickle.dumps(worker_copy(utility)))
        self._cleanup = weakref.finalize(self, _remove_dir, self._dir)

    def _map(self, chains: list[Chain]) -> list[ChainOutput]:
        run = Parallel(n_jobs=self.n_jobs, backend=self.backend)
        return run(delayed(_joblib_task)(self._token, self._path, [c], self.threads)
                   for c in chains)

    def close(self) -> None:
        if self._cleanup is not None:
            self._cleanup()
            self._cleanup = None
        self._shipped = None


def _remove_dir(path: str) -> None:
    for name in os.listdir(path):
        os.remove(os.path.join(path, name))
    os.rmdir(path)


class DaskExecutor(Executor):
    """Workers of a Dask cluster (``dask.distributed``).

    ``client``: the cluster to use; ``None`` uses the current client if there
    is one, else starts a ``LocalCluster`` of ``n_workers`` single-threaded
    processes that :meth:`close` shuts down. The utility is scattered to every
    worker once per run.
    """

    def __init__(self, client: Any = None, n_workers: int | None = None) -> None:
        super().__init__()
        distributed = _import_distributed()
        self._owned: Any = None
        if client is None:
            try:
                client = distributed.get_client()
            except ValueError:  # no client in this process: start a private cluster
                cluster = distributed.LocalCluster(
                    n_workers=n_workers or effective_n_jobs(-1), threads_per_worker=1,
                    processes=True, dashboard_address=None, silence_logs=logging.ERROR)
                client = distributed.Client(cluster)
                self._owned = cluster
        self.client = client
        self.n_workers = max(1, sum(client.nthreads().values()))
        self._future: Any = None

    def _ship(self, utility: Utility) -> None:
        self._release()
        self._future = self.client.scatter(worker_copy(utility), broadcast=True, hash=False)

    def _map(self, chains: list[Chain]) -> list[ChainOutput]:
        futures = [self.client.submit(run_chains, self._future, [c], 1, pure=False)
                   for c in chains]
        return self.client.gather(futures)

    def _release(self) -> None:
        if self._future is not None:
            self._future.release()
            self._future = None
        self._shipped = None

    def close(self) -> None:
        self._release()
        if self._owned is not None:
            self.client.close()
            self._owned.close()
            self._owned = None


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ImportError(
            "backend='dask' needs dask.distributed: pip install 'tdshap[dask]'."
        ) from None
    return distributed


def _is_dask_client(obj: Any) -> bool:
    return type(obj).__name__ == "Client" and type(obj).__module__.startswith("distributed")


#: The most workers joblib can be asked for: it evaluates its pre-dispatch "2*n_jobs" with
#: results capped at 10**6 ("Numeric literal ... is too large"), and a count past C's int
#: fails in its process pool ("Python int too large to convert to C int").
MAX_N_JOBS = 500_000
#: the most cores a machine may have, for n_jobs counted back from every core
MAX_CORES = 4096


def check_n_jobs(n_jobs: Any, optional: bool = False) -> None:
    """Refuse what joblib refuses from deep inside (0, a float, a bool, more workers than it
    can start) and a negative count past every core (joblib ran it on one worker, silently);
    ``optional``: None (joblib's default, in-process) is taken too."""
    if n_jobs is None and optional:
        return
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or n_jobs == 0:
        raise ValueError(
            f"n_jobs={n_jobs!r} must be a non-zero integer: 1 runs in-process, 2 or more "
            "uses that many workers, -1 every core."
        )
    if n_jobs > MAX_N_JOBS:
        raise ValueError(
            f"n_jobs={n_jobs!r} is more workers than joblib can start (at most "
            f"{MAX_N_JOBS:,}): pass -1 for every core, or the number of workers you want."
        )
    # joblib runs a count back past every core on one worker. Past any machine's cores it
    # is a typo (-99999), refused; within them it may be a script written for a larger
    # machine (-32 on 2 cores), which must still run here: warned, not refused
    if n_jobs < -MAX_CORES:
        raise ValueError(
            f"n_jobs={n_jobs!r} counts back past every core (-1 is every core, -2 all but "
            f"one) of any machine (at most {MAX_CORES:,}): pass -1 for every core, or the "
            "number of workers you want."
        )
    cores = cpu_count()
    if n_jobs < -cores:
        warnings.warn(f"n_jobs={n_jobs!r} counts back past every core of this machine "
                      f"({cores}): it runs on one worker.", UserWarning, stacklevel=3)


def make_executor(n_jobs: Any = 1, backend: Any = "loky") -> Executor | None:
    """The executor for ``n_jobs`` and ``backend``; ``None`` means evaluate in-process.

    ``backend`` is a joblib backend name (``"loky"``, ``"threading"``,
    ``"multiprocessing"``), ``"dask"``, or a ``dask.distributed.Client``.
    ``n_jobs`` follows joblib: ``-1`` is every core, ``1`` in-process (unless
    the backend is Dask, whose cluster decides). With ``backend="dask"`` and
    no running client, ``n_jobs`` is the number of local workers started.
    """
    check_n_jobs(n_jobs)
    if _is_dask_client(backend):
        return DaskExecutor(backend)
    if backend == "dask":
        return DaskExecutor(None, n_workers=None if n_jobs == 1 else effective_n_jobs(n_jobs))
    if backend not in JOBLIB_BACKENDS:
        raise ValueError(
            f"backend={backend!r} must be one of {JOBLIB_BACKENDS}, 'dask', or a "
            "dask.distributed.Client."
        )
    if effective_n_jobs(int(n_jobs)) == 1:
        return None
    return JoblibExecutor(int(n_jobs), backend)
