"""TDShap: thresholding data Shapley by the APT bandit (the paper, Sec. 3 and Algorithm 1)."""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

import numpy as np

from tdshap._validation import check_number
from tdshap.intervals import half_widths
from tdshap.methods.apt.bandit import APTState
from tdshap.methods.apt.guarantee import guarantee_report
from tdshap.methods.apt.sampling import check_block_size, initial_blocks, sample_chain
from tdshap.methods.apt.thresholds import DEFAULT_EPS_FACTOR, auto_thresholds
from tdshap.methods.checkpoint.files import CheckpointError, plan_resume
from tdshap.methods.checkpoint.mixin import CheckpointedValuation
from tdshap.methods.progress import RunProgress
from tdshap.methods.stopping import (
    RunStatus,
    StoppingCriterion,
    build_stopping,
    check_stopping_limits,
)
from tdshap.methods.tdshap_run import TDShapRun
from tdshap.result import ValuationResult
from tdshap.utility.base import Chain, Utility


class TDShap(CheckpointedValuation):
    """Find the training rows whose data Shapley value is at most ``tau``.

    Parameters
    ----------
    estimator:
        Any scikit-learn style estimator (cloned; never fitted itself).
    metric:
        Higher-is-better metric on the validation set: ``"accuracy"``,
        ``"neg_mae"``, ``"neg_mse"``, any scikit-learn scorer name, or a callable
        ``f(y_true, y_pred)``. ``None``: accuracy for classifiers, ``neg_mae``
        otherwise.
    tau, eps:
        Threshold and precision, in units of the metric: rows with value
        ``<= tau - eps`` are to be found, rows with value ``>= tau + eps`` left.
        Either may be ``"auto"``: set after initialisation from the spread of
        the observed marginals (:mod:`tdshap.methods.apt.thresholds`). The
        defaults are the paper's ``(tau, eps) = (-0.01, 0.01)`` (Sec. 5.1,
        used for the accuracy experiments of Sec. 5.3), so that this class
        reproduces the paper as written; they assume a metric in accuracy's
        units. The
        application layer (:func:`tdshap.find_harmful`, ``tdshap clean``)
        values arbitrary user metrics and therefore defaults to ``"auto"``.
    eps_factor:
        With ``eps="auto"``: ``eps = eps_factor * spread of the initial marginals``.
    n_min:
        Enhancement (i): smallest prefix a marginal is measured on. ``"auto"``:
        ``min(100, N // 3)``. ``0`` disables it. A fraction strictly between 0
        and 1 is that share of N (``floor(n_min * N)``, at most ``N - k``), for
        settings that must follow a changing N (:class:`SequentialRemoval`).
    k:
        Enhancement (ii): arms evaluated per round on one chain of ``k + 1``
        fits. ``"auto"``: ``min(50, max(1, N // 3))``. ``1`` disables it.
    max_iter, time_budget, atol, atol_window, rtol, rtol_window:
        Stopping (:func:`tdshap.methods.stopping.build_stopping`; the names
        mean the same in every method): rounds after initialisation, seconds,
        no value moving more than ``atol`` (metric units) over ``atol_window``
        rounds, or a mean relative change below ``rtol`` over ``rtol_window``
        rounds (TMC's rule); the first one reached stops. Initialisation
        (every arm pulled once) always completes.
    stopping:
        A :mod:`tdshap.methods.stopping` criterion that replaces the limits above.
    on_error, seed_mode:
        See :class:`tdshap.utility.base.Utility`.
    random_state:
        Seed (int) or ``numpy.random.Generator``; same seed, same result.
    progress:
        Show a progress bar (rounds done of the budget, fits per second, arms
        confidently below/above ``tau`` and undecided). Off by default: nothing
        is printed unless asked for.
    fast_path:
        Use an exact incremental utility when the estimator allows one (Ridge,
        LinearRegression, k-NN; see :mod:`tdshap.utility.fast`): same values,
        far fewer fits. ``result_.extra["fast_path"]`` says which was used.
    n_blocks:
        M, the blocks evaluated per round: the ``M * k`` arms with the smallest
        ``B_n`` are cut into M disjoint blocks, each on its own chain, so that
        M chains can run at once. ``1`` is the paper's algorithm. ``max_iter``
        counts rounds, so a round pulls ``M * k`` arms.
    n_jobs, backend:
        Workers that evaluate the chains of a round (and the initial blocks) in
        parallel; see :func:`tdshap.utility.parallel.make_executor`. ``backend`` is a
        joblib backend (``"loky"``, the default), ``"dask"``, or a
        ``dask.distributed.Client``. For a given seed and ``n_blocks`` the
        values are identical whatever ``n_jobs`` and ``backend``.
    checkpoint, checkpoint_every:
        Save the run's full state to the file ``checkpoint`` (atomically; JSON
        plus npz, see :mod:`tdshap.methods.checkpoint.files`) every ``checkpoint_every``
        seconds between rounds (``0``: after every round) and at the end. On
        an exception or Ctrl-C the state before the interrupted round is saved
        too; a killed process loses at most ``checkpoint_every`` seconds.
    resume:
        Continue the run saved in a checkpoint: a path (which must exist), or
        ``True`` for the ``checkpoint`` file when it exists (a fresh run
        otherwise; ``result_.extra["resume"]`` says which). The data
        and settings must match those of the checkpoint (``n_jobs``,
        ``backend``, ``progress``, ``max_iter`` and ``time_budget`` may
        change); the result is the same as that of a run never interrupted.

    Attributes
    ----------
    values_, counts_, harmful_, result_:
        Estimated values, pulls per row, ``values_ <= tau_``, and the full
        :class:`~tdshap.result.ValuationResult`.
    tau_, eps_:
        The threshold and precision used (resolved when ``"auto"``).
    """

    algorithm = "tdshap"
    budget_settings = ("max_iter", "time_budget")

    def __init__(
        self,
        estimator: Any = None,
        metric: Any = None,
        tau: float | str = -0.01,
        eps: float | str = 0.01,
        n_min: int | float | str = "auto",
        k: int | str = "auto",
        max_iter: int | None = 50,
        time_budget: float | None = None,
        atol: float | None = None,
        atol_window: int = 10,
        rtol: float | None = None,
        rtol_window: int = 100,
        stopping: StoppingCriterion | None = None,
        eps_factor: float = DEFAULT_EPS_FACTOR,
        on_error: str = "fallback",
        seed_mode: str = "chain",
        random_state: Any = None,
        progress: bool = False,
        fast_path: bool = True,
        n_blocks: int = 1,
        n_jobs: int = 1,
        backend: Any = "loky",
        checkpoint: str | os.PathLike[str] | None = None,
        checkpoint_every: float = 10.0,
        resume: str | os.PathLike[str] | bool | None = None,
    ) -> None:
        self.estimator = estimator
        self.metric = metric
        self.tau = tau
        self.eps = eps
        self.n_min = n_min
        self.k = k
        self.max_iter = max_iter
        self.time_budget = time_budget
        self.atol = atol
        self.atol_window = atol_window
        self.rtol = rtol
        self.rtol_window = rtol_window
        self.stopping = stopping
        self.eps_factor = eps_factor
        self.on_error = on_error
        self.seed_mode = seed_mode
        self.random_state = random_state
        self.progress = progress
        self.fast_path = fast_path
        self.n_blocks = n_blocks
        self.n_jobs = n_jobs
        self.backend = backend
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.resume = resume

    # -- parameters ------------------------------------------------------
    def block_sizes(self, n: int) -> tuple[int, int]:
        """``(k, n_min)`` that a fit on ``n`` training rows uses, ``"auto"`` and fractions
        resolved (the paper, Sec. 3.3's enhancements (i) and (ii)).

        Lets a caller report the settings, or check its data with
        :func:`tdshap.methods.apt.sampling.check_block_size`, before fitting.
        """
        k = self._resolved_k(n)
        return k, self._resolved_n_min(n, k)

    def _resolved_k(self, n: int) -> int:
        if self.k == "auto":
            return min(50, max(1, n // 3))
        check_number(self.k, "k", low=1, integer=True, hint=f"Use 1 <= k <= N (N={n}).")
        return int(self.k)

    def _resolved_n_min(self, n: int, k: int) -> int:
        if self.n_min == "auto":
            return min(100, n // 3)
        if isinstance(self.n_min, float) and 0 < self.n_min < 1:
            return max(0, min(int(self.n_min * n), n - k))
        check_number(self.n_min, "n_min", low=0, integer=True,
                     hint="Use 0 to disable it, or a fraction of N such as 0.9.")
        return int(self.n_min)

    def _check_params(self, n: int) -> None:
        if self.tau != "auto":
            check_number(self.tau, "tau", hint="It is in units of the metric, e.g. tau=-0.01, "
                         "or 'auto'.")
        if self.eps != "auto":
            check_number(self.eps, "eps", low=0, hint="It is in units of the metric, e.g. "
                         "eps=0.01, or 'auto'.")
        check_number(self.eps_factor, "eps_factor", low=0)
        check_number(self.n_blocks, "n_blocks", low=1, integer=True,
                     hint="1 is the paper's algorithm; more keeps more workers busy.")
        self._check_checkpoint_params()
        self.k_, self.n_min_ = self.block_sizes(n)
        check_block_size(n, self.k_, self.n_min_)
        limits: dict[str, Any] = dict(
            max_rounds=self.max_iter, time_budget=self.time_budget, atol=self.atol,
            atol_window=self.atol_window, rtol=self.rtol, rtol_window=self.rtol_window)
        if self.stopping is None:
            self._stop = build_stopping(**limits)
        elif isinstance(self.stopping, StoppingCriterion):
            # unused beside stopping=, but max_iter="abc" was taken silently
            check_stopping_limits(**limits)
            self._stop = self.stopping
        else:
            raise ValueError(
                "stopping must be a tdshap.methods.stopping.StoppingCriterion or None."
            )

    # -- the algorithm ---------------------------------------------------
    def _pull(self, utility: Utility, run: TDShapRun, blocks: list[np.ndarray]) -> None:
        """One pull of every arm of ``blocks`` (disjoint), one chain per block.

        The chains are drawn here, in the main process and in a fixed order,
        so the result does not depend on where they are evaluated.
        """
        chains = []
        for block in blocks:
            prefix, ordered = sample_chain(run.rng, utility.n, block, self.n_min_)
            chains.append(Chain(prefix, ordered, int(run.rng.integers(2**32))))
        marginals = [np.diff(scores) for scores in self._evaluate(utility, chains)]
        for chain, rewards in zip(chains, marginals, strict=True):
            run.state.update(chain.block, rewards)

    def _round_blocks(self, run: TDShapRun) -> list[np.ndarray]:
        """The ``n_blocks * k`` arms with the smallest index, cut into blocks of ``k``."""
        k = self.k_
        arms = run.state.select(min(self.n_blocks * k, run.state.n), run.rng)
        return [arms[i : i + k] for i in range(0, len(arms), k)]

    def _settings(self, utility: Utility) -> dict[str, Any]:
        return {**super()._settings(utility), "k": self.k_, "n_min": self.n_min_}

    def _expect(self) -> dict[str, Any]:
        """What a checkpoint's saved state must fit to be resumed by this run."""
        return {"k": self.k_, "n_blocks": self.n_blocks, "max_iter": self.max_iter,
                "tau": self.tau, "eps": self.eps}

    def check_resume(self, utility: Utility) -> None:
        """Refuse the checkpoint ``resume`` names, as :meth:`fit` would, before any work.

        ``utility`` is one for the data to be fitted (its fingerprint is compared), and the
        parameters must have been checked for its N. An application calls this so that a
        checkpoint it cannot resume is refused before it reports a plan or times fits.
        """
        saved = self._load(utility)
        if saved is not None:
            try:
                TDShapRun.validate(*saved, utility.n, self._expect())
            except CheckpointError as err:
                raise self._restore_error(err, plan_resume(self.resume, self.checkpoint).path) \
                    from None

    def _start(self, utility: Utility, rng: np.random.Generator) -> TDShapRun:
        """A fresh run, or the one saved in the checkpoint to resume."""
        saved = self._load(utility)
        if saved is not None:
            try:
                return TDShapRun.restore(*saved, utility, self._stop, expect=self._expect())
            except CheckpointError as err:
                raise self._restore_error(err, plan_resume(self.resume, self.checkpoint).path) \
                    from None
        auto = "auto" in (self.tau, self.eps)
        tau, eps = (0.0, 0.0) if auto else (float(self.tau), float(self.eps))
        state = APTState(utility.n, tau, eps)
        order = np.concatenate(initial_blocks(rng, utility.n, self.k_))
        return TDShapRun(state, rng, init_order=order, k=self.k_, thresholds_set=not auto)

    def fit(self, X: Any, y: Any, X_val: Any, y_val: Any) -> TDShap:
        """Estimate the values of the rows of ``(X, y)`` against ``(X_val, y_val)``."""
        utility, rng = self._prepare(X, y, X_val, y_val)
        try:
            self._fit(utility, rng)
        finally:
            self._release()
        return self

    def _fit(self, utility: Utility, rng: np.random.Generator) -> None:
        stop = self._stop
        stop.reset()
        run = self._start(utility, rng)
        state, k = run.state, self.k_
        start = time.perf_counter() - run.elapsed
        saver = self._saver(utility)
        workers = self._n_workers
        if workers > self.n_blocks:
            warnings.warn(
                f"n_blocks={self.n_blocks} chains per round for {workers} workers: only the "
                f"initialisation uses them all. Set n_blocks >= {workers} (a multiple evens "
                "out chains of unequal length).", UserWarning, stacklevel=3)
        init_batch = max(self.n_blocks, 2 * workers if workers > 1 else 1)
        blocks = run.init_blocks
        bar = RunProgress(self.progress, desc=f"TDShap N={utility.n} K={k} M={self.n_blocks}")
        try:
            while run.init_done < len(blocks):
                run.mark(utility, stop)
                batch = blocks[run.init_done : run.init_done + init_batch]
                self._pull(utility, run, batch)
                run.init_done += len(batch)
                run.commit()
                run.elapsed = time.perf_counter() - start
                bar.update(0.0, init=f"{run.init_done}/{len(blocks)}", fits=utility.n_fits)
                self._save(saver, utility, run, stop)
            if not run.thresholds_set:  # every arm holds exactly one marginal now
                run.mark(utility, stop)
                state.tau, state.eps = auto_thresholds(state.mu, self.tau, self.eps,
                                                       self.eps_factor)
                run.thresholds_set = True
                run.commit()
            # the first checkpoint: a run killed from here on keeps its initialisation
            self._save(saver, utility, run, stop, now=True)
            self.tau_, self.eps_ = state.tau, state.eps
            while True:
                run.mark(utility, stop)
                if stop.check(RunStatus(run.rounds, time.perf_counter() - start, state.mu)):
                    run.commit()
                    break
                self._pull(utility, run, self._round_blocks(run))
                run.rounds += 1
                run.commit()
                run.elapsed = time.perf_counter() - start
                if bar.enabled:  # the postfix costs O(N) per round: only for a visible bar
                    bar.update(
                        stop.completion(RunStatus(run.rounds, run.elapsed, state.mu)),
                        round=run.rounds, pulls=int(state.counts.sum()),
                        fits_per_s=f"{utility.n_fits / max(run.elapsed, 1e-9):.0f}",
                        **_sides(state),
                    )
                self._save(saver, utility, run, stop)
        except BaseException:
            self._save_interrupted(saver, utility, run, stop)
            raise
        finally:
            bar.close()
        run.elapsed = time.perf_counter() - start
        self._save(saver, utility, run, stop, finished=True)
        self._publish(self._make_result(utility, run, start))

    def _make_result(self, utility: Utility, run: TDShapRun, start: float) -> ValuationResult:
        state, n = run.state, utility.n
        fired = self._stop.fired(RunStatus(run.rounds, time.perf_counter() - start, state.mu))
        bound = utility.metric.width_bound(np.concatenate([utility.y, utility.y_val]))
        return self._result(
            utility,
            start,
            values=state.mu.copy(),
            counts=state.counts.copy(),
            variances=state.variances(),
            harmful=state.mu <= state.tau,
            threshold=state.tau,
            guarantee=guarantee_report(
                n, state.eps, int(state.counts.sum()), bound, state.observed_width()
            ),
            extra={
                "tau": state.tau,
                "eps": state.eps,
                "k": self.k_,
                "n_min": self.n_min_,
                "n_blocks": self.n_blocks,
                "n_workers": self._n_workers,
                "metric": utility.metric.name,
                "rounds": run.rounds,
                "init_blocks": len(run.init_blocks),
                "stopped_by": fired,
                "pulls_spread": _spread(state.counts),
            },
        )


def _sides(state: APTState) -> dict[str, int]:
    """Arms whose 95% interval (:mod:`tdshap.intervals`) is wholly below tau, above, neither."""
    half = np.nan_to_num(half_widths(state.counts, state.variances()), nan=np.inf)
    below = int(np.sum(state.mu + half < state.tau))
    above = int(np.sum(state.mu - half > state.tau))
    return {"below": below, "above": above, "undecided": state.n - below - above}


def _spread(counts: np.ndarray) -> dict[str, float]:
    """Summary of how pulls were spread over the arms."""
    q = np.percentile(counts, [0, 25, 50, 75, 100])
    return {"min": float(q[0]), "q25": float(q[1]), "median": float(q[2]),
            "q75": float(q[3]), "max": float(q[4]), "mean": float(counts.mean())}
