"""Thresholding Data-OOB: the APT bandit of TDShap with out-of-bag rewards.

TDShap's bandit does not need Shapley marginals: any per-row stochastic game
whose mean ranks the rows will do. For models that must be refitted for
every subset (trees, boosting, logistic regression), one row's Shapley
marginal is nearly always zero, and a handful of pulls per row says little.
Data-OOB (Kwon & Zou, 2023) scores a row instead by how well models that
never saw it predict its own label: bag-by-bag, out of bag.

Here every pull is one bagged model: the APT bandit (the paper's Algorithm 1)
picks the ``k`` arms whose side of ``tau`` is least certain, the model is
fitted on a bootstrap sample of the *other* rows, and each held-out arm
receives its out-of-bag score as a reward; so does every other row the
bootstrap happened to leave out (about 37%), as in Data-OOB. One fit
therefore pulls many arms, and the bandit steers the extra pulls to the rows
near the threshold.

Holding the k arms out of a bag together makes an arm's reward depend on
which arms the bandit held out with it: a bias per row, so the 95% intervals
cover the long-run mean in only 81-93% of rows. For a k-NN read from
neighbour lists, ``per_row_bags=True`` removes it: the bag is drawn over all
rows and every queried row is scored by the bag without its own copies (a
row's list never holds the row), so each reward is a draw of the row's own
Data-OOB law; the intervals then cover at 94-97% and a long run lands on the
closed form (:class:`~tdshap.methods.KNNOutOfBag`). It is not the default:
its credibly-harmful rows are right more often, and on small clean data the
cut then removes them, which lowered a test score where the default's did
not (``benchmarks/eligibility.py``, docs/benchmarks.md).

A row's reward is its out-of-bag score in the units of the metric, per row:
the predicted probability of its own label (``true_class_proba``, the
default for classifiers with ``predict_proba``), 1/0 for a correct/incorrect
prediction (``accuracy``), or minus the absolute / squared error for
regression (``neg_mae`` / ``neg_mse``). With ``tau="auto"`` the threshold is
chance for classification (``1 / n_classes``: models that never saw the row
give its label less than a uniform guess would), and for regression it is
set after the first pass from the scores themselves: rows scoring
``outlier_factor`` robust standard deviations (1.4826 MAD) below the median
are to be found. ``eps = eps_factor`` of the first pass's robust spread.
"""

from __future__ import annotations

import os
import time
from contextlib import nullcontext
from typing import Any, Literal

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import clone, is_classifier

from tdshap._validation import check_bag_rows, check_flags, check_number
from tdshap.methods.apt.bandit import APTState
from tdshap.methods.apt.thresholds import marginal_scale
from tdshap.methods.base import BaseValuation
from tdshap.methods.progress import RunProgress
from tdshap.methods.stopping import RunStatus, StoppingCriterion, build_stopping
from tdshap.result import ValuationResult
from tdshap.utility.base import Utility, random_state_params
from tdshap.utility.fast.approximate_search import check_search
from tdshap.utility.fast.base import one_thread_if_small
from tdshap.utility.fast.budget import check_count
from tdshap.utility.fast.neighbor_lists import oob_lists
from tdshap.utility.metrics import (
    ROW_METRICS,
    TRUE_CLASS_PROBA,
    check_metric_for_model,
    resolve_metric,
    row_scores,
)
from tdshap.utility.parallel import JOBLIB_BACKENDS, limited_threads, single_threaded
from tdshap.utility.warm_start import prepare_estimator


def _draw_bag(n: int, held: np.ndarray, rng: np.random.Generator
              ) -> tuple[np.ndarray, np.ndarray, int]:
    """A bootstrap of the rows but ``held``: ``(bag, out-of-bag rows, the model's seed)``;
    the out-of-bag rows are the held ones and those the bootstrap left out."""
    others = np.setdiff1d(np.arange(n), held, assume_unique=True)
    bag = rng.choice(others, size=len(others), replace=True)
    seed = int(rng.integers(2**32))
    inside = np.zeros(n, dtype=bool)
    inside[bag] = True
    return bag, np.flatnonzero(~inside), seed


def _bag_model(estimator: Any, seed: int) -> Any:
    model = clone(estimator)
    return model.set_params(**{p: seed for p in random_state_params(model)})


def _fit_bag(estimator: Any, X: np.ndarray, y: np.ndarray, bag: np.ndarray, out: np.ndarray,
             seed: int, metric: str, on_error: str, threads: int | None = None
             ) -> tuple[np.ndarray | None, Exception | None, float]:
    """Fit one bag and score its out-of-bag rows: ``(rewards, the error of a fit that
    failed, seconds)``; on a worker, BLAS pools are held to ``threads``."""
    started = time.perf_counter()
    try:
        with limited_threads(threads) if threads else nullcontext():
            model = _bag_model(estimator, seed)
            model.fit(X[bag], y[bag])  # not fit's return: None from one without "return self"
            rewards = row_scores(model, X[out], y[out], metric)
    except Exception as err:
        if on_error == "raise" and threads is None:
            raise  # in-process: the caller's traceback, as a plain fit gives
        return None, err, time.perf_counter() - started
    return rewards, None, time.perf_counter() - started


class ThresholdingOOB(BaseValuation):
    """Find the rows that models trained without them predict worst (bandit + Data-OOB).

    Parameters
    ----------
    estimator:
        Any scikit-learn style estimator (cloned for every bag).
    metric:
        The per-row score: ``"true_class_proba"``, ``"accuracy"``, ``"neg_mae"``
        or ``"neg_mse"``. ``None``: ``true_class_proba`` for classifiers with
        ``predict_proba``, ``accuracy`` for other classifiers, ``neg_mae``
        for regressors.
    tau, eps:
        Threshold and precision in units of the per-row score, or ``"auto"``
        (see the module docstring).
    k:
        Arms held out of every bag (the bandit's pulls per bag besides the
        rows the bootstrap leaves out). ``"auto"``: ``min(50, N // 10)`` below
        1,000 rows, ``N // 20`` from there, so that the first pass (every row
        held out once) takes at most 20 bags however large N is: at 5,000 rows
        this cost 0.00-0.01 AUROC against ``k=50`` for half the fits.
    max_iter, time_budget:
        Bags after the first pass (which fits ``ceil(N / k)`` bags, every
        row held out once), and/or seconds; the first limit reached stops.
    outlier_factor, eps_factor:
        The ``"auto"`` threshold and precision, in robust standard deviations
        of the first pass's scores.
    on_error:
        ``"fallback"``: a bag whose fit fails is skipped (counted in
        ``n_fallbacks``); ``"raise"``: the error propagates.
    random_state:
        Seed or numpy Generator: the same seed gives the same values.
    progress:
        Show a progress bar.
    fast_path:
        For a k-NN (Euclidean, uniform weights), predict every bag's out-of-bag
        rows from neighbour lists searched once
        (:mod:`tdshap.utility.fast.neighbor_lists`) instead of refitting per
        bag: the same rewards (bit for bit for classification, to rounding for
        regression; rows the lists cannot decide exactly are refitted and
        counted in ``extra["refit_rows"]``).
        ``extra["fast_path"]`` names the path taken and ``extra["path_note"]``
        why (for other models, or lists over the memory budget: every bag
        is refitted, and the note says so). ``False``: always refit.
    neighbor_search:
        How the neighbour lists are searched: ``"exact"`` (brute force, the
        rewards a refit gives; cost grows with N squared) or ``"approximate"``
        (a graph index, cost about N log N, for 100,000 rows and more; a list
        may miss a true neighbour now and then, so rewards are a k-NN's on the
        rows found; needs ``pip install 'tdshap[scale]'``;
        :mod:`tdshap.utility.fast.approximate_search`). Recorded in
        ``extra["neighbor_search"]``.
    backend:
        Where the neighbour lists are searched (the part of a large k-NN run that
        grows with N squared): ``"loky"`` (the default) here; ``"dask"`` (the
        running client, else a private ``LocalCluster`` of single-threaded
        processes) or a ``dask.distributed.Client`` on the cluster's workers,
        blocks of rows at a time, with the same values as here.
    per_row_bags:
        With the neighbour lists only: draw every bag over all rows and score
        each queried row by the bag without it (module docstring), so that the
        intervals cover at their nominal rate; other bags than the refit
        path's. A declined row inside the bag gets no reward from it.
    n_jobs:
        Workers (joblib's count: 1 in-process, -1 every core) fitting a round's
        bags side by side, on the joblib ``backend`` named (with Dask, in-process).
        Every bag's rows and seed are drawn in the main process before any is
        fitted: the values are the same whatever ``n_jobs``. The neighbour lists'
        bags are a few array operations each and stay in-process.
    bags_per_round:
        Bags fitted from one look at the bandit: bag by bag it holds out the ``k``
        least certain arms, counting the round's earlier picks as pulls already
        made (a batched bandit's "hallucinated" pulls). 1 is the bandit of the
        paper, one look a bag; more lets ``n_jobs`` workers fit a round's bags at
        once (the first pass, which looks at nothing, is shared among them
        anyway). ``max_iter`` still counts bags; ``time_budget`` is checked
        between rounds.
    """

    algorithm = "tdoob"

    def __init__(
        self,
        estimator: Any = None,
        metric: str | None = None,
        tau: float | str = "auto",
        eps: float | str = "auto",
        k: int | str = "auto",
        max_iter: int | None = 200,
        time_budget: float | None = None,
        outlier_factor: float = 2.0,
        eps_factor: float = 0.3,
        on_error: str = "fallback",
        random_state: Any = None,
        progress: bool = False,
        fast_path: bool = True,
        backend: Any = "loky",
        per_row_bags: bool = False,
        neighbor_search: str = "exact",
        n_jobs: int | None = 1,
        bags_per_round: int = 1,
    ) -> None:
        self.estimator = estimator
        self.metric = metric
        self.tau = tau
        self.eps = eps
        self.k = k
        self.max_iter = max_iter
        self.time_budget = time_budget
        self.outlier_factor = outlier_factor
        self.eps_factor = eps_factor
        self.on_error = on_error
        self.random_state = random_state
        self.progress = progress
        self.fast_path = fast_path
        self.per_row_bags = per_row_bags
        self.neighbor_search = neighbor_search
        self.backend = backend
        self.n_jobs = n_jobs
        self.bags_per_round = bags_per_round

    seed_mode = "chain"  # read by the common checks; bags draw their own seeds
    _workers: Parallel | None = None
    _threads = 1

    def row_metric(self) -> str:
        if self.metric is None:
            if is_classifier(self.estimator):
                return TRUE_CLASS_PROBA if hasattr(self.estimator, "predict_proba") else "accuracy"
            return "neg_mae"
        if self.metric not in ROW_METRICS:
            raise ValueError(f"metric={self.metric!r}: ThresholdingOOB scores single rows; "
                             f"use one of {ROW_METRICS}, or None for "
                             "the task's default (true_class_proba for a classifier with "
                             "predict_proba, accuracy for another, neg_mae for a regressor).")
        # a regressor's rows scored 0 by both, and tau = 1 / 0 classes: ZeroDivisionError
        check_metric_for_model(resolve_metric(self.metric), self.estimator)
        return str(self.metric)

    def _check_params(self, n: int) -> None:
        check_bag_rows(n, "ThresholdingOOB")
        check_flags(per_row_bags=self.per_row_bags)  # "no" was truthy: bags per row
        for name in ("tau", "eps"):
            if getattr(self, name) != "auto":
                check_number(getattr(self, name), name, low=0 if name == "eps" else None,
                             hint="It is in units of the per-row score, or 'auto'.")
        check_number(self.outlier_factor, "outlier_factor", low=0,
                     hint="It is how many robust standard deviations below the median "
                     "tau='auto' lies (default 2.0).")
        check_number(self.eps_factor, "eps_factor", low=0,
                     hint="eps='auto' is this times the robust spread (default 0.3).")
        if self.k == "auto":
            self.k_ = max(1, min(50, n // 10)) if n < 1000 else n // 20
        else:
            check_number(self.k, "k", low=1, integer=True, hint=f"Use 1 <= k < N (N={n}).")
            if int(self.k) >= n:
                raise ValueError(f"k={self.k!r} must be 'auto' or a whole number in 1..N-1 "
                                 f"(N={n}).")
            self.k_ = int(self.k)
        check_search(self.neighbor_search)
        check_number(self.bags_per_round, "bags_per_round", low=1, integer=True,
                     hint="It is how many bags one look at the bandit fits (1: the paper's "
                     "bandit).")
        if self.bags_per_round > 1:  # drawn before any is fitted, and held together
            check_count("bags_per_round", self.bags_per_round, 16 * n,
                        f"bootstraps of N={n} rows held at once", 8)
        self._stop: StoppingCriterion = build_stopping(max_rounds=self.max_iter,
                                                       time_budget=self.time_budget)

    def fit(self, X: Any, y: Any, X_val: Any = None, y_val: Any = None) -> ThresholdingOOB:
        """Value the rows of ``(X, y)``; out-of-bag scores need no validation set.

        ``X_val``/``y_val`` are accepted for the common interface and unused.
        """
        if X_val is None:  # the checks of the common interface want a validation set
            X_val, y_val = X, y
        self._check_common()  # row_metric asks scikit-learn what the estimator is
        self.metric_ = self.row_metric()
        utility, rng = self._prepare(X, y, X_val, y_val)
        start = time.perf_counter()
        try:
            self._lists, self.path_note_ = oob_lists(utility.estimator, utility.X, utility.y,
                                                     self.fast_path, self._executor,
                                                     self.neighbor_search)
            self.refit_rows_ = 0
            self.fast_path_used_ = None if self._lists is None else "kneighbors lists"
            self._workers = self._start_workers()
            with self._workers if self._workers is not None else nullcontext():
                state = self._run(utility, rng, start)
        finally:
            self._lists = self._workers = None  # they serve this fit only
            self._release()
        self._publish(self._make_result(utility, state, start))
        return self

    def _start_workers(self) -> Parallel | None:
        """joblib workers for the refitted bags, or None to fit them in-process (the
        neighbour lists' bags, one worker, or a Dask backend)."""
        workers = effective_n_jobs(self.n_jobs)
        if self._lists is not None or workers == 1 or self.backend not in JOBLIB_BACKENDS:
            return None
        self._threads = max(1, (os.cpu_count() or 1) // workers)
        return Parallel(n_jobs=self.n_jobs, backend=self.backend)

    def _make_utility(self, X: np.ndarray, y: np.ndarray, X_val: np.ndarray,
                      y_val: np.ndarray, run_seed: int) -> Utility:
        # The utility only holds the data and the fit counters here: bags are fitted below.
        on_error: Literal["raise", "fallback"] = "raise" if self.on_error == "raise" \
            else "fallback"
        metric = "accuracy" if is_classifier(self.estimator) else "neg_mae"
        if getattr(self.estimator, "valuation_head", None) is not None:
            # a network valued by a light head on its full-data representation
            # (tdshap.torch.head): every bag refits the head on the embeddings
            prepared = prepare_estimator(self.estimator, X, y, run_seed)
            return prepared.utility_class(prepared, metric, X, y, X_val, y_val,
                                          on_error=on_error, run_seed=run_seed)
        return Utility(self.estimator, metric, X, y, X_val, y_val, on_error=on_error,
                       run_seed=run_seed)

    def _bags(self, utility: Utility, groups: list[np.ndarray], rng: np.random.Generator,
              state: APTState) -> None:
        """One bag per group of held-out arms; the held-out and out-of-bag rows rewarded,
        bag by bag in order.

        Every bag's rows and seed are drawn here, in order, before any is fitted, so the
        rewards do not depend on ``n_jobs``: refitted bags run on the workers, the
        neighbour lists' (a few array operations each) in-process.
        """
        if self._lists is not None:
            for held in groups:
                self._bag(utility, held, rng, state)
            return
        n = utility.n
        drawn = [_draw_bag(n, held, rng) for held in groups]
        if self._workers is None or len(drawn) == 1:
            results = [_fit_bag(utility.estimator, utility.X, utility.y, bag, out, seed,
                                self.metric_, self.on_error) for bag, out, seed in drawn]
        else:
            estimator, threads = single_threaded(utility.estimator), self._threads
            results = self._workers(delayed(_fit_bag)(
                estimator, utility.X, utility.y, bag, out, seed, self.metric_,
                self.on_error, threads) for bag, out, seed in drawn)
        for (_, out, _), (rewards, err, seconds) in zip(drawn, results, strict=True):
            if err is not None:
                self._failed(utility, err, seconds)
                continue
            assert rewards is not None  # a fit gives rewards or its error
            utility.n_fits += 1
            self._rewarded(utility, state, out, rewards, seconds)

    def _bag(self, utility: Utility, held: np.ndarray, rng: np.random.Generator,
             state: APTState) -> None:
        """The neighbour lists' bag without ``held``: the held-out and out-of-bag rows
        rewarded (rows the lists decline refitted)."""
        if self.per_row_bags:
            self._per_row_bag(utility, held, rng, state)
            return
        assert self._lists is not None
        bag, out, seed = _draw_bag(utility.n, held, rng)
        started = time.perf_counter()
        try:
            rewards, declined = self._lists.row_scores(
                np.bincount(bag, minlength=utility.n), out, utility.y[out], self.metric_)
            refitted = self._refit_declined(utility, bag, out, declined, rewards, seed)
        except Exception as err:
            self._failed(utility, err, time.perf_counter() - started)
            return
        utility.n_fits += int(refitted)
        self._rewarded(utility, state, out, rewards, time.perf_counter() - started)

    def _per_row_bag(self, utility: Utility, held: np.ndarray, rng: np.random.Generator,
                     state: APTState) -> None:
        """``per_row_bags``: the bootstrap is drawn over all rows, and every queried row
        (held or out of bag) is scored by the bag without it.

        A row's neighbour list never holds the row itself, so its prediction is that
        of the bag with its own copies removed, whatever else the bag holds: the held
        arms need not leave the bag together, and each reward is a draw of the row's
        own Data-OOB law, whichever arms the bandit held out with it.
        """
        assert self._lists is not None
        n = utility.n
        bag = rng.choice(n, size=n, replace=True)
        seed = int(rng.integers(2**32))
        counts = np.bincount(bag, minlength=n)
        out = np.union1d(np.flatnonzero(counts == 0), held)
        started = time.perf_counter()
        try:
            rewards, declined = self._lists.row_scores(counts, out, utility.y[out],
                                                       self.metric_)
            # a declined row inside the bag would need a model of its own: no reward
            refitted = self._refit_declined(utility, bag, out, declined & (counts[out] == 0),
                                            rewards, seed)
        except Exception as err:
            self._failed(utility, err, time.perf_counter() - started)
            return
        utility.n_fits += int(refitted)
        self._rewarded(utility, state, out, rewards, time.perf_counter() - started)

    def _refit_declined(self, utility: Utility, bag: np.ndarray, out: np.ndarray,
                        declined: np.ndarray, rewards: np.ndarray, seed: int) -> bool:
        """Score the out-of-bag rows the lists declined with scikit-learn's model on the
        bag (in place in ``rewards``); whether a model was fitted."""
        rows = out[declined]
        if not len(rows):
            return False
        model = _bag_model(utility.estimator, seed)
        with one_thread_if_small(len(rows) * utility.X.size):
            model.fit(utility.X[bag], utility.y[bag])
            rewards[declined] = row_scores(model, utility.X[rows], utility.y[rows],
                                           self.metric_)
        self.refit_rows_ += len(rows)
        return True

    def _failed(self, utility: Utility, err: Exception, seconds: float) -> None:
        utility.n_fits += 1
        utility.fit_seconds += seconds
        if self.on_error == "raise":
            raise err
        utility.record_failure(err)
        utility.n_fallbacks += 1  # the bag is skipped: its rows get no reward

    @staticmethod
    def _n_scored(stats: dict[str, Any]) -> int:
        """Bags whose model gave rewards (each one evaluation; a failed bag gives none and
        counts as a fallback instead)."""
        return int(stats["n_evaluations"])

    @staticmethod
    def _rewarded(utility: Utility, state: APTState, out: np.ndarray, rewards: np.ndarray,
                  seconds: float) -> None:
        utility.n_evaluations += 1
        utility.fit_seconds += seconds
        ok = np.isfinite(rewards)
        state.update(out[ok], rewards[ok])

    def _run(self, utility: Utility, rng: np.random.Generator, start: float) -> APTState:
        n, k = utility.n, self.k_
        self.n_classes_ = len(np.unique(utility.y)) if utility.classifier else 0
        auto = "auto" in (self.tau, self.eps)
        state = APTState(n, 0.0 if auto else float(self.tau), 0.0 if auto else float(self.eps))
        self._stop.reset()
        bar = RunProgress(self.progress, desc=f"TDOOB N={n} K={k}")
        order = rng.permutation(n)
        self.rounds_ = 0
        try:  # first pass: every row held out once, no look at the bandit in between
            first = [order[lo : lo + k] for lo in range(0, n, k)]
            workers = 1 if self._workers is None else int(self._workers.n_jobs)
            step = max(int(self.bags_per_round), effective_n_jobs(workers))
            for lo in range(0, len(first), step):  # bootstraps held: a round's, at most
                self._bags(utility, first[lo : lo + step], rng, state)
            if auto:
                state.tau, state.eps = self._auto_thresholds(state)
            while not self._stop.check(RunStatus(self.rounds_, time.perf_counter() - start,
                                                 state.mu)):
                bags = self.bags_per_round if self.max_iter is None else \
                    min(self.bags_per_round, self.max_iter - self.rounds_)
                self._bags(utility, self._round(state, bags, rng), rng, state)
                self.rounds_ += bags
                if bar.enabled:
                    bar.update(self._stop.completion(RunStatus(
                        self.rounds_, time.perf_counter() - start, state.mu)),
                        bags=utility.n_fits)
        finally:
            bar.close()
        self.tau_, self.eps_ = state.tau, state.eps
        return state

    def _round(self, state: APTState, bags: int, rng: np.random.Generator
               ) -> list[np.ndarray]:
        """The arms each of a round's ``bags`` holds out: bag by bag the ``k`` least
        certain, the earlier bags' picks counted as pulls already made (as a batched
        bandit "hallucinates" them), so the round spreads as one bag a look would."""
        pending = np.zeros(state.n, dtype=np.int64)
        groups: list[np.ndarray] = []
        for _ in range(bags):
            held = state.select(self.k_, rng, pending if groups else None)
            pending[held] += 1
            groups.append(held)
        return groups

    def _auto_thresholds(self, state: APTState) -> tuple[float, float]:
        pulled = state.counts > 0
        scores = state.mu[pulled] if pulled.any() else np.zeros(1)
        scale = marginal_scale(scores - np.median(scores)) or 1e-12
        if self.tau != "auto":
            tau = float(self.tau)
        elif self.metric_ in ("true_class_proba", "accuracy"):
            tau = 1.0 / self.n_classes_
        else:
            tau = float(np.median(scores)) - self.outlier_factor * scale
        eps = self.eps_factor * scale if self.eps == "auto" else float(self.eps)
        return tau, eps

    def _make_result(self, utility: Utility, state: APTState, start: float) -> ValuationResult:
        fired = self._stop.fired(RunStatus(self.rounds_, time.perf_counter() - start, state.mu))
        return self._result(
            utility, start, values=state.mu.copy(), counts=state.counts.copy(),
            variances=state.variances(), harmful=(state.mu <= state.tau) & (state.counts > 0),
            threshold=state.tau,
            extra={"tau": state.tau, "eps": state.eps, "k": self.k_, "rounds": self.rounds_,
                   "metric": self.metric_, "stopped_by": fired,
                   "fast_path": self.fast_path_used_,
                   # per-row bags need the lists: a refitted run says it did not use them
                   "per_row_bags": bool(self.per_row_bags and self.fast_path_used_),
                   "path_note": self.path_note_, "refit_rows": self.refit_rows_,
                   "neighbor_search": self.neighbor_search if self.fast_path_used_ else None,
                   "unpulled": int(np.sum(state.counts == 0)),
                   # out-of-bag rewards: the validation rows judge the cut unbiased
                   "validation_free": True,
                   # rows differ in spread (a sure row's reward hardly moves, a
                   # boundary row's swings 0..1), so the pooled floor hides the sure
                   # ones: the empirical-Bayes blend for the credibly-harmful test
                   # (false share <= 0.3% measured, docs/benchmarks.md)
                   "eligibility_interval": "moderated"},
        )
