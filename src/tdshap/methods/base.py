"""What every valuation method shares: parameters, input checks, the utility, the result."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, is_classifier, is_regressor

from tdshap._validation import (
    check_columns_by_position,
    check_data,
    check_estimator,
    check_flags,
    check_numeric_targets,
    check_random_state,
    check_shared_classes,
    check_target_varies,
    float32_fix,
    warn_one_class,
    warn_unseen_classes,
)
from tdshap.result import ValuationResult
from tdshap.utility.base import (
    SEED_MODES,
    Chain,
    Utility,
    check_some_fit_worked,
    full_fit_error,
    warn_rows_break_the_model,
)
from tdshap.utility.fast import make_utility
from tdshap.utility.metrics import default_metric
from tdshap.utility.parallel import Executor, make_executor
from tdshap.utility.warm_start import prepare_estimator


def seed_of(random_state: Any) -> int | None:
    """The integer seed behind ``random_state`` when there is one (for the result)."""
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        return int(random_state)
    return None


class BaseValuation(BaseEstimator):
    """Base class: subclasses set ``algorithm`` and implement ``fit``.

    Parameters shared by all methods are ``estimator``, ``metric``,
    ``on_error``, ``seed_mode``, ``random_state`` and ``progress``; see
    :class:`tdshap.utility.base.Utility` for the first four. Methods that take
    ``fast_path`` (default True) use :func:`tdshap.utility.fast.make_utility`.
    A method that lists ``n_jobs`` and ``backend`` in its ``__init__``
    evaluates its chains in parallel (:func:`tdshap.utility.parallel.make_executor`);
    the defaults below run in-process.
    """

    algorithm = "base"
    n_jobs: Any = 1
    backend: Any = "loky"
    # the run's workers, passed to every evaluate_chains call; None: in-process
    _executor: Executor | None = None
    # True in SequentialRemoval's later stages: the rows it leaves may be of one class (or
    # one target), and such a stage's values (all equal) were always taken
    _uniform_target_ok = False

    def _check_target_varies(self, y: np.ndarray, classification: bool) -> None:
        if not self._uniform_target_ok:
            check_target_varies(y, classification)

    def _check_common(self) -> None:
        check_estimator(self.estimator)
        check_columns_by_position(self.estimator)
        check_random_state(self.random_state)
        check_flags(progress=self.progress)
        if self.on_error not in ("raise", "fallback"):
            raise ValueError(f"on_error={self.on_error!r} must be 'raise' or 'fallback'.")
        if self.seed_mode not in SEED_MODES:
            raise ValueError(f"seed_mode={self.seed_mode!r} must be one of {SEED_MODES}.")

    def _prepare(
        self, X: Any, y: Any, X_val: Any, y_val: Any
    ) -> tuple[Utility, np.random.Generator]:
        """Validate everything, then build the utility and the run's random generator."""
        self._check_common()
        Xa, ya, Xv, yv = check_data(X, y, X_val, y_val)
        if is_classifier(self.estimator):
            check_shared_classes(ya, yv)
            warn_one_class(yv)
            warn_unseen_classes(ya, yv)
        elif is_regressor(self.estimator):
            check_numeric_targets(self.estimator, (ya, "y"), (yv, "y_val"))
        self._index = X.index.to_numpy() if isinstance(X, pd.DataFrame) else None
        self._check_params(len(ya))  # its row counts first: one row is one target too
        self._check_target_varies(ya, is_classifier(self.estimator))
        rng = np.random.default_rng(self.random_state)
        utility = self._make_utility(Xa, ya, Xv, yv, int(rng.integers(2**32)))
        self._executor = make_executor(self.n_jobs, self.backend)
        return utility, rng

    def _evaluate(self, utility: Utility, chains: Sequence[Chain]) -> list[np.ndarray]:
        """``utility.evaluate_chains`` on this run's workers (if any)."""
        return utility.evaluate_chains(chains, self._executor)

    @property
    def _n_workers(self) -> int:
        return 1 if self._executor is None else self._executor.n_workers

    def _release(self) -> None:
        """Shut down the run's parallel executor, if any (idempotent)."""
        if self._executor is not None:
            self._executor.close()
            self._executor = None

    def _make_utility(
        self, X: np.ndarray, y: np.ndarray, X_val: np.ndarray, y_val: np.ndarray, run_seed: int
    ) -> Utility:
        """The utility for this run (an exact fast path where one applies, unless
        ``fast_path=False``); parallel backends replace it."""
        self.metric_ = default_metric(self.estimator) if self.metric is None else self.metric
        # Warm-start learners train once on all of D here (enhancement iii) and may
        # bring their own utility class (batched training): see tdshap.torch.
        estimator = prepare_estimator(self.estimator, X, y, run_seed)
        if hasattr(estimator, "utility_class"):
            return estimator.utility_class(
                estimator, self.metric_, X, y, X_val, y_val,
                on_error=self.on_error, seed_mode=self.seed_mode, run_seed=run_seed,
            )
        return make_utility(
            estimator, self.metric_, X, y, X_val, y_val,
            fast_path=getattr(self, "fast_path", True),
            on_error=self.on_error, seed_mode=self.seed_mode, run_seed=run_seed,
        )

    def _check_params(self, n: int) -> None:
        """Subclasses check their own hyperparameters against N."""

    def _config(self) -> dict[str, Any]:
        """The run's settings as JSON-able values (the estimator by its repr)."""
        out: dict[str, Any] = {}
        for k, v in self.get_params(deep=False).items():
            if isinstance(v, str | int | float | bool) or v is None:
                out[k] = v
            elif isinstance(v, os.PathLike):  # a checkpoint's path, not "PosixPath('...')"
                out[k] = os.fspath(v)
            else:
                out[k] = repr(v)
        return out

    @staticmethod
    def _n_scored(stats: dict[str, Any]) -> int:
        """How many of the run's scores a fitted model gave (not the fallback): those
        computed (not taken from the cache) that did not fall back."""
        return int(stats["n_evaluations"] - stats["n_cache_hits"] - stats["n_fallbacks"])

    def _result(
        self,
        utility: Utility,
        start: float,
        *,
        values: np.ndarray,
        counts: np.ndarray,
        variances: np.ndarray,
        **kwargs: Any,
    ) -> ValuationResult:
        self._release()
        stats = utility.stats()
        first_error = stats.get("first_error")
        check_some_fit_worked(int(stats.get("n_failed_fits", 0)), self._n_scored(stats),
                              first_error, f"this {self.algorithm} run",
                              lambda: float32_fix(first_error, getattr(utility, "X", None),
                                                  getattr(utility, "X_val", None))
                              or utility.too_few_rows())
        failed = int(stats.get("n_failed_fits", 0))
        if failed:  # one more fit, on this path only: do the user's rows break the model?
            warn_rows_break_the_model(
                failed, int(stats["n_fits"]),
                full_fit_error(utility.estimator, utility.X, utility.y), len(utility.y),
                f"this {self.algorithm} run",
                lambda: float32_fix(first_error, utility.X, utility.X_val))
        counted = ("n_fits", "n_evaluations", "fit_seconds")
        extra = {"fast_path": None, **{k: v for k, v in stats.items() if k not in counted}}
        extra.update(kwargs.pop("extra", {}))
        return ValuationResult(
            algorithm=self.algorithm,
            values=values,
            counts=counts,
            variances=variances,
            n_fits=stats["n_fits"],
            n_evaluations=stats["n_evaluations"],
            wall_seconds=time.perf_counter() - start,
            fit_seconds=stats["fit_seconds"],
            seed=seed_of(self.random_state),
            config=self._config(),
            extra=extra,
            index=self._index,
            **kwargs,
        )

    def _publish(self, result: ValuationResult) -> None:
        """Set the fitted attributes every method has."""
        self.result_ = result
        self.values_ = result.values
        self.counts_ = result.counts
        self.harmful_ = result.is_harmful
