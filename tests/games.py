"""Toy games with known Shapley values: oracles for tests and sanity checks.

* :class:`AdditiveModel` with :func:`first_prediction` as the metric makes
  ``V(S) = sum of y over S``: every marginal of row ``n`` is exactly ``y_n``.
* :func:`exact_shapley` enumerates every subset of a small game for the exact
  (optionally size-restricted, SPEC §2 enhancement (i)) values.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin


class AdditiveModel(RegressorMixin, BaseEstimator):
    """V(S) = sum of y over S when scored with :func:`first_prediction`.

    The training targets carry each row's weight ``a_n``; the model predicts
    their sum everywhere, so the marginal of every row is exactly ``a_n``.
    """

    def fit(self, X: np.ndarray, y: np.ndarray) -> AdditiveModel:
        self.total_ = float(np.sum(y))
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.full(len(X), self.total_)


def first_prediction(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    return float(y_pred[0])


def exact_shapley(value: Callable[[tuple[int, ...]], float], n: int, n_min: int = 0
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Size-restricted Shapley values and the variance of one marginal, by enumeration.

    Prefix size p uniform on {n_min..n-1}; prefix a uniform p-subset of the others.
    ``n_min = 0`` gives the ordinary Shapley value.
    """
    cache: dict[tuple[int, ...], float] = {}

    def v(s: tuple[int, ...]) -> float:
        key = tuple(sorted(s))
        if key not in cache:
            cache[key] = value(key)
        return cache[key]

    phi = np.zeros(n)
    second = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for p in range(n_min, n):
            weight = 1.0 / ((n - n_min) * math.comb(n - 1, p))
            for s in itertools.combinations(others, p):
                d = v((*s, i)) - v(s)
                phi[i] += weight * d
                second[i] += weight * d * d
    return phi, second - phi**2
