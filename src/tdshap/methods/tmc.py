"""Truncated Monte Carlo data Shapley (Ghorbani & Zou 2019; the paper, Sec. 5.1).

Each round draws a uniformly random permutation σ of the training rows and
scans it left to right: the marginal of row σ_j is
``V(σ_1..σ_j) - V(σ_1..σ_{j-1})``; every row gets one marginal per
permutation, and its value is the running mean of its marginals (with a
running variance, so the result has standard errors and confidence
intervals).

One permutation is one :class:`~tdshap.utility.base.Chain` with an empty prefix
and the whole permutation as its block, evaluated through
``Utility.evaluate_chains``; permutations are sent ``batch_size`` at a time
so that a parallel backend of ``evaluate_chains`` runs a batch at once.

V(∅)
----
The first marginal of a permutation needs ``V(∅)``, the score of a model
trained on nothing. It is the utility's fallback score
(:mod:`tdshap.utility.base`): the score of predicting a constant learned from the
whole training set (its mean target for regression, its most frequent label
for classification). The original code scores the empty set the same way
for classification (a random-guess baseline); using the mean is the
regression counterpart. Only the first row of each permutation sees it, so
it shifts values, not rankings, by an amount that averages out over
permutations.

Truncation
----------
``truncation="original"`` is the rule of the original code: once more than
``patience = 5`` consecutive prefixes score within ``tolerance = 1%`` of
``|V(D)|`` of ``V(D)``, the rest of the permutation is not fitted and its
marginals are 0. ``(tolerance, patience)`` sets another rule; ``None``
scans every permutation to the end (plain Monte Carlo permutation sampling).

Stopping
--------
The first of: the original convergence rule (``rtol``, ``rtol_window``: the
mean over rows of the relative change of the running values, largest over
the last ``rtol_window = 100`` permutations, below ``rtol = 0.05``; see
:class:`tdshap.methods.stopping.MeanRelativeChange`), ``max_permutations``,
``time_budget`` seconds (checked after each batch), or, if set, TDShap's
absolute rule (``atol``, ``atol_window``). The rules are built by
:func:`tdshap.methods.stopping.build_stopping`, so each name means the same
as in :class:`~tdshap.methods.TDShap`. ``stopping`` replaces them all with
any :mod:`tdshap.methods.stopping` criterion, whose ``rounds`` then count
permutations.

Checkpoints
-----------
TMC runs are the longest in the library (hours to converge on a model that
fits in a second), so they checkpoint like TDShap
(:mod:`tdshap.methods.checkpoint.mixin`): the running values, the random
generator, the convergence rule's history and the utility's counters are
saved between batches, and a resumed run is the uninterrupted run.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from tdshap._validation import check_number
from tdshap.methods.apt.bandit import APTState
from tdshap.methods.checkpoint.files import CheckpointError, plan_resume
from tdshap.methods.checkpoint.mixin import CheckpointedValuation
from tdshap.methods.checkpoint.run_state import ResumableRun
from tdshap.methods.progress import RunProgress
from tdshap.methods.stopping import (
    MeanRelativeChange,
    RunStatus,
    StoppingCriterion,
    build_stopping,
    check_stopping_limits,
    leaves,
)
from tdshap.utility.base import Chain, Truncation, Utility


class TMCRun(ResumableRun):
    """A TMC run in progress: every permutation adds one marginal to every row."""

    @classmethod
    def validate(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], n: int,
                 expect: dict[str, Any]) -> None:
        """Also: every row holds one marginal per saved permutation. An edited count would
        weigh the saved mean as if it came from more (or fewer) permutations than it did."""
        super().validate(meta, arrays, n, expect)
        rounds = int(meta["rounds"])
        off = np.flatnonzero(arrays["counts"] != rounds)
        if len(off):
            raise CheckpointError(
                f"array 'counts' holds {int(arrays['counts'][off[0]])} marginals for row "
                f"{int(off[0])}, but {rounds} permutations make {rounds} for every row")


#: The original code's truncation rule: more than 5 steps within 1% of V(D).
ORIGINAL_TRUNCATION = (0.01, 5)


def resolve_truncation(truncation: Any) -> tuple[float, int] | None:
    """``(tolerance, patience)`` for ``"original"``, a pair, or ``None``."""
    if truncation is None:
        return None
    if isinstance(truncation, str):
        if truncation == "original":
            return ORIGINAL_TRUNCATION
        raise ValueError(
            f"truncation={truncation!r} is not known: use 'original', None, or a "
            "(tolerance, patience) pair such as (0.01, 5)."
        )
    try:
        tolerance, patience = truncation
    except (TypeError, ValueError):
        raise ValueError(
            f"truncation={truncation!r} must be 'original', None or a (tolerance, patience) pair."
        ) from None
    check_number(tolerance, "truncation tolerance", low=0, hint="A fraction of |V(D)|, e.g. 0.01.")
    check_number(patience, "truncation patience", low=0, integer=True)
    return float(tolerance), int(patience)


class TMCShapley(CheckpointedValuation):
    """Data Shapley values by truncated Monte Carlo permutation sampling.

    Parameters
    ----------
    estimator, metric:
        As for :class:`~tdshap.methods.TDShap`.
    truncation:
        ``"original"`` (default), ``None``, or ``(tolerance, patience)``;
        see the module docstring.
    rtol, rtol_window:
        The original convergence rule (``rtol=None`` disables it).
    atol, atol_window:
        Stop once no value moved by more than ``atol`` over ``atol_window``
        permutations (off by default).
    max_permutations:
        Stop after this many permutations (``None``: no limit).
    time_budget:
        Stop after this many seconds (``None``: no limit).
    stopping:
        A :mod:`tdshap.methods.stopping` criterion that replaces the three above.
    batch_size:
        Permutations per ``evaluate_chains`` call (what a parallel backend
        runs at once).
    n_jobs, backend:
        Evaluate each batch on ``n_jobs`` workers (:func:`tdshap.utility.parallel.make_executor`);
        the values are the same whatever ``n_jobs`` and ``backend``.
    fast_path:
        Use an exact incremental fast path where the model has one
        (:mod:`tdshap.utility.fast`): same values, fewer fits.
    on_error, seed_mode, random_state, progress:
        See :class:`~tdshap.methods.base.BaseValuation`.
    checkpoint, checkpoint_every, resume:
        As for :class:`~tdshap.methods.TDShap`, between batches of permutations
        (``max_permutations`` and ``time_budget`` may grow on resume).

    Attributes
    ----------
    values_, counts_, result_:
        Estimated values, permutations per row, the full result.
    n_permutations_:
        Permutations evaluated.
    """

    algorithm = "tmc_shapley"
    budget_settings = ("max_permutations", "time_budget")
    _convergence: MeanRelativeChange | None

    def __init__(
        self,
        estimator: Any = None,
        metric: Any = None,
        truncation: Any = "original",
        rtol: float | None = 0.05,
        rtol_window: int = 100,
        atol: float | None = None,
        atol_window: int = 10,
        max_permutations: int | None = None,
        time_budget: float | None = None,
        stopping: StoppingCriterion | None = None,
        batch_size: int = 8,
        n_jobs: int = 1,
        backend: Any = "loky",
        fast_path: bool = True,
        on_error: str = "fallback",
        seed_mode: str = "chain",
        random_state: Any = None,
        progress: bool = False,
        checkpoint: str | os.PathLike[str] | None = None,
        checkpoint_every: float = 10.0,
        resume: str | os.PathLike[str] | bool | None = None,
    ) -> None:
        self.estimator = estimator
        self.metric = metric
        self.truncation = truncation
        self.rtol = rtol
        self.rtol_window = rtol_window
        self.atol = atol
        self.atol_window = atol_window
        self.max_permutations = max_permutations
        self.time_budget = time_budget
        self.stopping = stopping
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.backend = backend
        self.fast_path = fast_path
        self.on_error = on_error
        self.seed_mode = seed_mode
        self.random_state = random_state
        self.progress = progress
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.resume = resume

    def _check_params(self, n: int) -> None:
        self.truncation_ = resolve_truncation(self.truncation)
        check_number(self.batch_size, "batch_size", low=1, integer=True)
        self._check_checkpoint_params()
        limits: dict[str, Any] = dict(
            max_rounds=self.max_permutations, time_budget=self.time_budget, atol=self.atol,
            atol_window=self.atol_window, rtol=self.rtol, rtol_window=self.rtol_window,
            rounds_name="max_permutations", min_rounds=1)
        if self.stopping is not None:
            if not isinstance(self.stopping, StoppingCriterion):
                raise ValueError(
                "stopping must be a tdshap.methods.stopping.StoppingCriterion or None."
            )
            # unused beside stopping=, but max_permutations="abc" was taken silently
            check_stopping_limits(**limits)
            self._stop = self.stopping
        else:
            self._stop = build_stopping(**limits)
        rules = [c for c in leaves(self._stop) if isinstance(c, MeanRelativeChange)]
        self._convergence = rules[0] if rules else None

    def _chains(self, utility: Utility, rng: np.random.Generator, count: int,
                truncation: Truncation | None) -> list[Chain]:
        empty = np.empty(0, dtype=np.intp)
        return [Chain(empty, rng.permutation(utility.n), int(rng.integers(2**32)), truncation)
                for _ in range(count)]

    def fit(self, X: Any, y: Any, X_val: Any, y_val: Any) -> TMCShapley:
        """Estimate the data Shapley value of every row of ``(X, y)``."""
        utility, rng = self._prepare(X, y, X_val, y_val)
        try:
            self._fit(utility, rng)
        finally:
            self._release()  # workers are shut down even when a fit raises
        return self

    def _fit(self, utility: Utility, rng: np.random.Generator) -> None:
        n = utility.n
        stop = self._stop
        stop.reset()
        saved = self._load(utility)
        if saved is None:
            run = TMCRun(APTState(n, 0.0, 0.0), rng)  # only its moments are used
        else:
            try:
                run = TMCRun.restore(*saved, utility, stop)
            except CheckpointError as err:
                raise self._restore_error(err, plan_resume(self.resume, self.checkpoint).path) \
                    from None
        start = time.perf_counter() - run.elapsed
        full_score = utility(np.arange(n))  # V(D): the truncation target (cached on resume)
        truncation = None
        if self.truncation_ is not None:
            truncation = Truncation(full_score, *self.truncation_)
        moments = run.state
        saver = self._saver(utility)
        status = RunStatus(run.rounds, time.perf_counter() - start, moments.mu)
        # a resumed run that had already stopped stays stopped (unless its budget grew)
        fired = stop.fired(status) if run.rounds and stop.check(status) else []
        bar = RunProgress(self.progress, desc=f"TMC Shapley N={n}")
        try:
            while not fired:
                run.mark(utility, stop)
                size = int(self.batch_size)
                if self.stopping is None and self.max_permutations is not None:
                    size = min(size, int(self.max_permutations) - run.rounds)  # no surplus
                chains = self._chains(utility, run.rng, size, truncation)
                for chain, scores in zip(chains, self._evaluate(utility, chains), strict=True):
                    moments.update(chain.block, np.diff(scores))
                    run.rounds += 1
                    status = RunStatus(run.rounds, time.perf_counter() - start, moments.mu)
                    # every permutation of the batch is used; the batch is the unit of stopping
                    if stop.check(status) and not fired:
                        fired = stop.fired(status)
                run.commit()
                run.elapsed = time.perf_counter() - start
                bar.update(stop.completion(status), perms=run.rounds, fits=utility.n_fits)
                self._save(saver, utility, run, stop)
        except BaseException:
            self._save_interrupted(saver, utility, run, stop)
            raise
        finally:
            bar.close()
        run.elapsed = time.perf_counter() - start
        self._save(saver, utility, run, stop, finished=True)
        self.n_permutations_ = run.rounds
        result = self._result(
            utility,
            start,
            values=moments.mu.copy(),
            counts=moments.counts.copy(),
            variances=moments.variances(),
            extra={
                "metric": utility.metric.name,
                "full_score": full_score,
                "empty_score": utility.fallback_score(np.empty(0, dtype=np.intp)),
                "n_permutations": run.rounds,
                "truncation": None if self.truncation_ is None else list(self.truncation_),
                "stopped_by": fired,
                # how far from the convergence rule the run ended (None: rule not used)
                "convergence_error": None if self._convergence is None
                else self._convergence.error,
            },
        )
        self._publish(result)
