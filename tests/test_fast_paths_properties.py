"""Property-based checks: fast-path chains equal refits for any small data and chain."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

from chain_checks import compare_chains
from tdshap.utility.base import Utility
from tdshap.utility.fast import LinearChainUtility, NeighborsChainUtility

pytestmark = pytest.mark.usefixtures("single_threaded")


def _chain(data: st.DataObject, n: int) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).permutation(n)
    p = data.draw(st.integers(0, n - 1))
    k = data.draw(st.integers(1, n - p))
    return perm[:p], perm[p : p + k]


@settings(max_examples=25, deadline=None)
@given(data=st.data(), n=st.integers(3, 25), d=st.integers(1, 3), k=st.integers(1, 4),
       grid=st.booleans(), distance=st.booleans(), classify=st.booleans())
def test_knn_chain_equals_refitting(data, n, d, k, grid, distance, classify):
    """Grid-valued features make ties and duplicates common."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    X = rng.integers(0, 3, size=(n + 10, d)).astype(float) if grid else rng.normal(
        size=(n + 10, d))
    y = rng.integers(0, 3, n + 10) if classify else rng.normal(size=n + 10)
    cls = KNeighborsClassifier if classify else KNeighborsRegressor
    est = cls(k, weights="distance" if distance else "uniform")
    metric = "accuracy" if classify else "neg_mse"
    args = (est, metric, X[:n], y[:n], X[n:], y[n:])
    diff = compare_chains(Utility(*args), NeighborsChainUtility(*args), [_chain(data, n)])
    assert diff == 0.0 if classify else diff <= 1e-12


@settings(max_examples=25, deadline=None)
@given(data=st.data(), n=st.integers(2, 30), d=st.integers(1, 4),
       alpha=st.sampled_from([1e-3, 0.1, 1.0, 10.0]), intercept=st.booleans(),
       scale=st.sampled_from([1e-3, 1.0, 1e3]))
def test_ridge_chain_equals_refitting(data, n, d, alpha, intercept, scale):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=(n + 10, d)) * scale + rng.normal(size=d) * scale
    y = X @ rng.normal(size=d) / scale + rng.normal(size=n + 10)
    args = (Ridge(alpha=alpha, fit_intercept=intercept), "neg_mae", X[:n], y[:n], X[n:], y[n:])
    assert compare_chains(Utility(*args), LinearChainUtility(*args), [_chain(data, n)]) <= 1e-9
