"""TDShap against exact answers: an additive game and small enumerated real games."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge

from games import AdditiveModel, exact_shapley, first_prediction
from tdshap import TDShap, Utility


def test_additive_game_values_exact_and_classified():
    rng = np.random.default_rng(1)
    n = 40
    a = rng.normal(0, 1, n)
    a[np.abs(a) < 0.1] += 0.5  # keep every arm clearly away from the threshold
    X = np.arange(n, dtype=float).reshape(-1, 1)
    model = TDShap(AdditiveModel(), first_prediction, tau=0.0, eps=0.05, n_min=1, k=5,
                   max_iter=30, random_state=0).fit(X, a, X[:3], a[:3])
    np.testing.assert_allclose(model.values_, a, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(model.harmful_, a <= 0)
    assert (model.counts_ >= 1).all()


def _ridge_game(n: int):
    X, y = load_diabetes(return_X_y=True)
    rng = np.random.default_rng(3)
    idx = rng.permutation(len(y))
    tr, va = idx[:n], idx[n : n + 60]
    return X[tr], y[tr], X[va], y[va]


@pytest.mark.parametrize("n_min", [0, 3])
def test_converges_to_exact_shapley_on_enumerated_real_game(n_min):
    n = 8
    X, y, Xv, yv = _ridge_game(n)
    est = Ridge(alpha=0.1)
    util = Utility(est, "neg_mae", X, y, Xv, yv)
    phi, var = exact_shapley(lambda s: util(list(s)), n, n_min=n_min)
    model = TDShap(est, "neg_mae", tau=float(np.median(phi)), eps=50.0, n_min=n_min, k=1,
                   max_iter=4000, random_state=0).fit(X, y, Xv, yv)
    counts = model.counts_
    assert counts.min() >= 200
    band = 4.5 * np.sqrt(var / counts) + 1e-9
    assert np.all(np.abs(model.values_ - phi) <= band), (model.values_, phi, band)
    # the ordering of the values is the ordering of the exact values where they are apart
    assert np.corrcoef(model.values_, phi)[0, 1] > 0.95


def test_size_restriction_changes_the_target_values():
    """The two enumerations differ, so the test above checks two different targets."""
    X, y, Xv, yv = _ridge_game(8)
    util = Utility(Ridge(alpha=0.1), "neg_mae", X, y, Xv, yv)
    phi0, _ = exact_shapley(lambda s: util(list(s)), 8, 0)
    phi3, _ = exact_shapley(lambda s: util(list(s)), 8, 3)
    assert np.max(np.abs(phi0 - phi3)) > 0.05 * np.max(np.abs(phi0))
