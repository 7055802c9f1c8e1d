"""Exact chains for ``Ridge`` and ``LinearRegression`` by incremental normal equations.

scikit-learn fits ``min ||y - Xw - c||² + alpha ||w||²`` (the intercept ``c``
not penalised) by centering ``X`` and ``y`` on the subset's means. The same
solution solves the augmented normal equations ``M θ = r`` with
``Z = [X, 1]``, ``M = Z'Z + diag(alpha, ..., alpha, 0)``, ``r = Z'y``, which
involve no subset mean: adding a row ``z`` to the subset adds ``z z'`` to
``M`` and ``y z`` to ``r``. A chain therefore needs the prefix's ``M`` once
and then one rank-one term per step.

Every step is *solved afresh* from its own ``M`` (a batched solve over a
chunk of steps) rather than by updating an inverse or a factor: nothing
accumulates from step to step, so there is no drift to watch, and for the
small ``d`` of tabular data a batch of ``(d+1)²`` systems costs less than
the numpy calls of a sequential update. To keep ``M`` well scaled, features
are shifted and scaled by the whole training set's mean and standard
deviation first (a change of variables, with the penalty rescaled to
match), which leaves the fitted predictions unchanged.

A step is solved only when the condition number of its ``M`` is at most
``max_condition`` (the error of a normal-equation solve grows with it);
others are refitted by scikit-learn. Over a chunk,
``cond(M_j) <= λmax(M_last) / λmin(M_first)`` since each step only adds a
positive semi-definite term, so two small eigenvalue problems usually
certify the whole chunk.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.linear_model import LinearRegression, Ridge

from tdshap.utility.fast.base import FastPathUtility, NotEligible
from tdshap.utility.fast.budget import memory_budget, over_budget
from tdshap.utility.fast.pipeline import final_estimator, transform_once

# above this the normal equations lose more than ~1e-10 relative accuracy
DEFAULT_MAX_CONDITION = 1e6
EXACT_RIDGE_SOLVERS = ("auto", "cholesky", "svd")
#: stacks of a chunk's normal matrices alive at once: the rank-one terms, their running
#: sum, the solve's copy, and the eigenvalue check's copy when the ends do not certify it
STACKS_HELD = 4


def linear_parameters(model: Any) -> tuple[float, bool]:
    """``(alpha, fit_intercept)`` of an eligible linear model, or :class:`NotEligible`."""
    if type(model) is LinearRegression:
        if model.positive:
            raise NotEligible("LinearRegression(positive=True) is a constrained fit.")
        return 0.0, bool(model.fit_intercept)
    if type(model) is Ridge:
        if model.positive or model.solver not in EXACT_RIDGE_SOLVERS:
            raise NotEligible(
                f"Ridge(solver={model.solver!r}, positive={model.positive}) is iterative or "
                f"constrained; use a solver in {EXACT_RIDGE_SOLVERS}."
            )
        if np.ndim(model.alpha) != 0 or not model.alpha >= 0:
            raise NotEligible("Ridge needs one scalar alpha >= 0 for the fast path.")
        return float(model.alpha), bool(model.fit_intercept)
    raise NotEligible(f"{type(model).__name__} is not Ridge or LinearRegression.")


class _LinearChain:
    """Normal equations ``M θ = r`` of the chain's current subset."""

    def __init__(self, M: np.ndarray, r: np.ndarray) -> None:
        self.M, self.r = M, r


class LinearChainUtility(FastPathUtility):
    """Utility for ``Ridge`` / ``LinearRegression`` (or a stateless pipeline ending in one).

    Extra parameter ``max_condition``: steps whose (rescaled) normal matrix
    is worse conditioned than this are refitted by scikit-learn instead.
    """

    name: ClassVar[str] = "linear"

    def __init__(self, estimator: Any, metric: Any, X: np.ndarray, y: np.ndarray,
                 X_val: np.ndarray, y_val: np.ndarray, *,
                 max_condition: float = DEFAULT_MAX_CONDITION, **kwargs: Any) -> None:
        super().__init__(estimator, metric, X, y, X_val, y_val, **kwargs)
        alpha, intercept = linear_parameters(final_estimator(estimator))
        if np.asarray(y).dtype.kind not in "biuf":
            raise NotEligible("regression needs a numeric target.")
        Xf, Xvf = transform_once(estimator, X, X_val)
        self.max_condition = float(max_condition)
        yf = np.asarray(y, dtype=float)
        # the change of variables x -> (x - shift) / scale; without an intercept a
        # shift would change the model, so only scale then
        shift = Xf.mean(axis=0) if intercept else np.zeros(Xf.shape[1])
        scale = np.sqrt(np.mean((Xf - shift) ** 2, axis=0))
        scale[scale == 0] = 1.0
        self._y_shift = float(yf.mean()) if intercept else 0.0
        self._Z = self._design((Xf - shift) / scale, intercept)
        self._Z_val_T = np.ascontiguousarray(self._design((Xvf - shift) / scale, intercept).T)
        self._zy = self._Z * (yf - self._y_shift)[:, None]
        penalty = alpha / scale**2
        self._penalty = np.diag(np.append(penalty, 0.0) if intercept else penalty)
        # a chunk holds a (d+1) x (d+1) matrix per step: 128 steps of 1,000 features are
        # 1 GB a stack, so wide data takes fewer steps a chunk, within the memory budget
        step_bytes = STACKS_HELD * 8 * self._Z.shape[1] ** 2
        problem = over_budget(f"the normal equations of {Xf.shape[1]:,} features", step_bytes)
        if problem:
            raise NotEligible(problem)
        self.chunk_size = int(min(self.chunk_size, memory_budget() // step_bytes))

    @staticmethod
    def _design(X: np.ndarray, intercept: bool) -> np.ndarray:
        return np.hstack([X, np.ones((len(X), 1))]) if intercept else np.ascontiguousarray(X)

    def _exact(self, Ms: np.ndarray) -> np.ndarray:
        """Which of the stacked normal matrices (each one adds PSD terms) are well conditioned."""
        ends = np.linalg.eigvalsh(Ms[[0, -1]])
        low, high = ends[0, 0], ends[1, -1]
        if low > 0 and high <= self.max_condition * low:
            return np.ones(len(Ms), dtype=bool)
        lam = np.linalg.eigvalsh(Ms)
        return (lam[:, 0] > 0) & (lam[:, -1] <= self.max_condition * lam[:, 0])

    def _solve(self, Ms: np.ndarray, rs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        exact = self._exact(Ms)
        if exact.all():  # the usual case, without masked copies
            theta = np.linalg.solve(Ms, rs[:, :, None])[:, :, 0]
            preds = theta @ self._Z_val_T
            preds += self._y_shift
            return preds, exact
        preds = np.zeros((len(Ms), self._Z_val_T.shape[1]))
        if exact.any():
            theta = np.linalg.solve(Ms[exact], rs[exact][:, :, None])[:, :, 0]
            preds[exact] = theta @ self._Z_val_T + self._y_shift
        return preds, exact

    def _start_chain(self, prefix: np.ndarray) -> tuple[_LinearChain, np.ndarray | None]:
        Zp = self._Z[prefix]
        state = _LinearChain(Zp.T @ Zp + self._penalty, self._zy[prefix].sum(axis=0))
        preds, exact = self._solve(state.M[None], state.r[None])
        return state, preds[0] if exact[0] else None

    def _extend_chain(
        self, state: _LinearChain, rows: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        Zb = self._Z[rows]
        Ms = state.M + np.cumsum(Zb[:, :, None] * Zb[:, None, :], axis=0)
        rs = state.r + np.cumsum(self._zy[rows], axis=0)
        state.M, state.r = Ms[-1], rs[-1]
        return self._solve(Ms, rs)
