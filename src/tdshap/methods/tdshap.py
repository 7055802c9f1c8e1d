"""TDShap: thresholding data Shapley by the APT bandit (SPEC §2)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tdshap._validation import check_number
from tdshap.bandit import APTState
from tdshap.guarantee import guarantee_report
from tdshap.methods.base import BaseValuation
from tdshap.progress import RunProgress
from tdshap.sampling import check_block_size, initial_blocks, sample_chain
from tdshap.stopping import RunStatus, StoppingCriterion, build_stopping
from tdshap.thresholds import DEFAULT_EPS_FACTOR, auto_thresholds
from tdshap.utility import Chain, Utility


class TDShap(BaseValuation):
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
        the observed marginals (:mod:`tdshap.thresholds`).
    eps_factor:
        With ``eps="auto"``: ``eps = eps_factor * spread of the initial marginals``.
    n_min:
        Enhancement (i): smallest prefix a marginal is measured on. ``"auto"``:
        ``min(100, N // 3)``. ``0`` disables it.
    k:
        Enhancement (ii): arms evaluated per round on one chain of ``k + 1``
        fits. ``"auto"``: ``min(50, max(1, N // 3))``. ``1`` disables it.
    max_iter, time_budget, tol, window:
        Stopping: rounds after initialisation, seconds, or convergence (no
        value moved more than ``tol`` over ``window`` rounds); the first one
        reached stops. Initialisation (every arm pulled once) always completes.
    stopping:
        A :mod:`tdshap.stopping` criterion that replaces the three above.
    on_error, seed_mode:
        See :class:`tdshap.utility.Utility`.
    random_state:
        Seed (int) or ``numpy.random.Generator``; same seed, same result.
    progress:
        Show a progress bar.
    fast_path:
        Use an exact incremental utility when the estimator allows one (Ridge,
        LinearRegression, k-NN; see :mod:`tdshap.fast_paths`): same values,
        far fewer fits. ``result_.extra["fast_path"]`` says which was used.

    Attributes
    ----------
    values_, counts_, harmful_, result_:
        Estimated values, pulls per row, ``values_ <= tau_``, and the full
        :class:`~tdshap.result.ValuationResult`.
    tau_, eps_:
        The threshold and precision used (resolved when ``"auto"``).
    """

    algorithm = "tdshap"

    def __init__(
        self,
        estimator: Any = None,
        metric: Any = None,
        tau: float | str = -0.01,
        eps: float | str = 0.01,
        n_min: int | str = "auto",
        k: int | str = "auto",
        max_iter: int | None = 50,
        time_budget: float | None = None,
        tol: float | None = None,
        window: int = 10,
        stopping: StoppingCriterion | None = None,
        eps_factor: float = DEFAULT_EPS_FACTOR,
        on_error: str = "fallback",
        seed_mode: str = "chain",
        random_state: Any = None,
        progress: bool = False,
        fast_path: bool = True,
    ) -> None:
        self.estimator = estimator
        self.metric = metric
        self.tau = tau
        self.eps = eps
        self.n_min = n_min
        self.k = k
        self.max_iter = max_iter
        self.time_budget = time_budget
        self.tol = tol
        self.window = window
        self.stopping = stopping
        self.eps_factor = eps_factor
        self.on_error = on_error
        self.seed_mode = seed_mode
        self.random_state = random_state
        self.progress = progress
        self.fast_path = fast_path

    # -- parameters ------------------------------------------------------
    def _resolved_k(self, n: int) -> int:
        if self.k == "auto":
            return min(50, max(1, n // 3))
        check_number(self.k, "k", low=1, integer=True, hint=f"Use 1 <= k <= N (N={n}).")
        return int(self.k)

    def _resolved_n_min(self, n: int) -> int:
        if self.n_min == "auto":
            return min(100, n // 3)
        check_number(self.n_min, "n_min", low=0, integer=True, hint="Use 0 to disable it.")
        return int(self.n_min)

    def _check_params(self, n: int) -> None:
        if self.tau != "auto":
            check_number(self.tau, "tau", hint="It is in units of the metric, e.g. tau=-0.01, "
                         "or 'auto'.")
        if self.eps != "auto":
            check_number(self.eps, "eps", low=0, hint="It is in units of the metric, e.g. "
                         "eps=0.01, or 'auto'.")
        check_number(self.eps_factor, "eps_factor", low=0)
        self.k_, self.n_min_ = self._resolved_k(n), self._resolved_n_min(n)
        check_block_size(n, self.k_, self.n_min_)
        if self.stopping is None:
            self._stop = build_stopping(self.max_iter, self.time_budget, self.tol, self.window)
        elif isinstance(self.stopping, StoppingCriterion):
            self._stop = self.stopping
        else:
            raise ValueError("stopping must be a tdshap.stopping.StoppingCriterion or None.")

    # -- the algorithm ---------------------------------------------------
    def _pull(
        self, utility: Utility, state: APTState, rng: np.random.Generator, arms: np.ndarray
    ) -> None:
        prefix, ordered = sample_chain(rng, utility.n, arms, self.n_min_)
        chain = Chain(prefix, ordered, int(rng.integers(2**32)))
        (scores,) = utility.evaluate_chains([chain])
        state.update(ordered, np.diff(scores))

    def fit(self, X: Any, y: Any, X_val: Any, y_val: Any) -> TDShap:
        """Estimate the values of the rows of ``(X, y)`` against ``(X_val, y_val)``."""
        utility, rng = self._prepare(X, y, X_val, y_val)
        start = time.perf_counter()
        n, k = utility.n, self.k_
        auto = "auto" in (self.tau, self.eps)
        state = APTState(n, 0.0 if auto else self.tau, 0.0 if auto else self.eps)
        stop = self._stop
        stop.reset()
        bar = RunProgress(self.progress, desc=f"TDShap N={n} K={k}")
        blocks = initial_blocks(rng, n, k)
        try:
            for i, block in enumerate(blocks):
                self._pull(utility, state, rng, block)
                bar.update(0.0, init=f"{i + 1}/{len(blocks)}", fits=utility.n_fits)
            if auto:  # every arm holds exactly one marginal now
                state.tau, state.eps = auto_thresholds(state.mu, self.tau, self.eps,
                                                       self.eps_factor)
            self.tau_, self.eps_ = state.tau, state.eps
            rounds = 0
            while True:
                status = RunStatus(rounds, time.perf_counter() - start, state.mu)
                if stop.check(status):
                    break
                self._pull(utility, state, rng, state.select(k, rng))
                rounds += 1
                elapsed = time.perf_counter() - start
                bar.update(
                    stop.completion(RunStatus(rounds, elapsed, state.mu)),
                    round=rounds, fits_per_s=f"{utility.n_fits / max(elapsed, 1e-9):.0f}",
                    **_sides(state),
                )
        finally:
            bar.close()
        fired = stop.fired(RunStatus(rounds, time.perf_counter() - start, state.mu))
        bound = utility.metric.width_bound(np.concatenate([utility.y, utility.y_val]))
        result = self._result(
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
                "k": k,
                "n_min": self.n_min_,
                "metric": utility.metric.name,
                "rounds": rounds,
                "init_blocks": len(blocks),
                "stopped_by": fired,
                "pulls_spread": _spread(state.counts),
            },
        )
        self._publish(result)
        return self


def _sides(state: APTState) -> dict[str, int]:
    """Arms confidently below tau, confidently above, and undecided (95% normal CI)."""
    var = np.nan_to_num(state.variances(), nan=np.inf)
    half = 1.96 * np.sqrt(var / np.maximum(state.counts, 1))
    below = int(np.sum(state.mu + half < state.tau))
    above = int(np.sum(state.mu - half > state.tau))
    return {"below": below, "above": above, "undecided": state.n - below - above}


def _spread(counts: np.ndarray) -> dict[str, float]:
    """Summary of how pulls were spread over the arms."""
    q = np.percentile(counts, [0, 25, 50, 75, 100])
    return {"min": float(q[0]), "q25": float(q[1]), "median": float(q[2]),
            "q75": float(q[3]), "max": float(q[4]), "mean": float(counts.mean())}
