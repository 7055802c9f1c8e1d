"""Ridge / LinearRegression chains by normal equations against refitting every step."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, StandardScaler

from chain_checks import compare_chains, random_chains
from tdshap.utility.base import Truncation, Utility
from tdshap.utility.fast.base import NotEligible
from tdshap.utility.fast.linear import LinearChainUtility

pytestmark = pytest.mark.usefixtures("single_threaded")


def _regression(n: int, d: int, seed: int, offset: float = 0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * n, d)) * rng.uniform(0.5, 3, size=d) + offset
    y = X @ rng.normal(size=d) + rng.normal(scale=0.5, size=2 * n) + 3.0
    return X[:n], y[:n], X[n:], y[n:]


def _pair(estimator, metric, data, **kw):
    return Utility(estimator, metric, *data, **kw), LinearChainUtility(estimator, metric, *data,
                                                                       **kw)


SIZES = [(0, 12), (1, 6), (3, 9), (40, 20), (100, 20)]


@pytest.mark.parametrize("estimator", [
    Ridge(), Ridge(alpha=0.01, fit_intercept=False), Ridge(alpha=3.0, solver="svd"),
    LinearRegression(), LinearRegression(fit_intercept=False),
])
@pytest.mark.parametrize("metric", ["neg_mae", "neg_mse", "r2"])
def test_matches_refitting_every_step(estimator, metric):
    data = _regression(120, 5, seed=1, offset=4.0)
    ref, fast = _pair(estimator, metric, data)
    assert compare_chains(ref, fast, random_chains(120, SIZES, seed=2)) <= 1e-9
    assert fast.n_evaluations == ref.n_evaluations == sum(p + k + 1 - p for p, k in SIZES)
    assert fast.n_fast_evaluations > 0.8 * fast.n_evaluations
    # the empty set and, without a penalty, the subsets smaller than the model are refitted
    assert fast.n_fits < ref.n_fits


def test_small_subsets_without_penalty_are_refitted():
    data = _regression(60, 5, seed=3)
    ref, fast = _pair(LinearRegression(), "neg_mse", data)
    (prefix, block), = random_chains(60, [(0, 12)], seed=4)
    np.testing.assert_allclose(fast.evaluate_chain(prefix, block, 0),
                               ref.evaluate_chain(prefix, block, 0), rtol=1e-9)
    # sizes 1..5 leave the 6x6 system singular: refits give sklearn's min-norm fits
    assert fast.n_fast_declined >= 5
    assert fast.n_fast_evaluations + fast.n_fast_declined + 1 == 13


@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")  # sklearn's refits say so
@pytest.mark.parametrize("estimator", [LinearRegression(), Ridge(alpha=1e-12)])
def test_collinear_and_ill_conditioned_inputs_fall_back(estimator):
    X, y, Xv, yv = _regression(150, 4, seed=5)
    rng = np.random.default_rng(6)
    # an exact copy and a near copy (1e-7) of existing columns
    X = np.hstack([X, X[:, :1] + X[:, 1:2], X[:, 2:3] + 1e-7 * rng.normal(size=(150, 1))])
    Xv = np.hstack([Xv, Xv[:, :1] + Xv[:, 1:2], Xv[:, 2:3] + 1e-7 * rng.normal(size=(150, 1))])
    ref, fast = _pair(estimator, "neg_mae", (X, y, Xv, yv))
    assert compare_chains(ref, fast, random_chains(150, [(100, 30), (20, 30)], seed=7)) <= 1e-9
    assert fast.n_fast_evaluations == 0
    assert fast.n_fast_declined == 62


def test_collinearity_that_a_later_row_breaks():
    """Rows in the prefix span a plane; block rows leave it: steps switch from refit to fast."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(80, 3))
    X[:60, 2] = X[:60, 0] - X[:60, 1]  # the first 60 rows are collinear
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(scale=0.1, size=80)
    data = (X, y, rng.normal(size=(50, 3)), rng.normal(size=50))
    ref, fast = _pair(LinearRegression(), "neg_mse", data)
    chains = [(np.arange(60), np.arange(60, 80))]
    assert compare_chains(ref, fast, chains) <= 1e-9
    assert fast.n_fast_declined >= 1 and fast.n_fast_evaluations >= 1


def test_truncation_as_the_base_class():
    data = _regression(200, 4, seed=9)
    ref, fast = _pair(Ridge(), "neg_mae", data)
    target = Utility(Ridge(), "neg_mae", *data)(np.arange(200))
    trunc = Truncation(target, tolerance=0.05, patience=3)
    chains = random_chains(200, [(0, 200), (0, 200), (0, 150)], seed=10)
    assert compare_chains(ref, fast, chains, trunc) <= 1e-9
    assert fast.n_truncated == ref.n_truncated > 0
    assert fast.n_evaluations == ref.n_evaluations


def test_long_chains_span_several_chunks():
    data = _regression(400, 3, seed=11)
    ref, fast = _pair(Ridge(alpha=0.5), "r2", data)
    assert compare_chains(ref, fast, random_chains(400, [(2, 398)], seed=12)) <= 1e-9


def test_stateless_pipeline_is_eligible_and_a_scaler_is_not():
    data = _regression(80, 4, seed=13, offset=2.0)
    ref, fast = _pair(make_pipeline(Normalizer(), Ridge()), "neg_mae", data)
    assert compare_chains(ref, fast, random_chains(80, [(30, 20)], seed=14)) <= 1e-9
    with pytest.raises(NotEligible, match="refitted on every subset"):
        LinearChainUtility(make_pipeline(StandardScaler(), Ridge()), "neg_mae", *data)


@pytest.mark.parametrize("estimator,match", [
    (Ridge(solver="sag"), "iterative"), (Ridge(positive=True), "constrained"),
    (LinearRegression(positive=True), "constrained"), (Ridge(alpha=[1.0, 2.0]), "scalar"),
])
def test_ineligible_settings(estimator, match):
    with pytest.raises(NotEligible, match=match):
        LinearChainUtility(estimator, "neg_mae", *_regression(20, 2, seed=0))


def test_float32_and_probability_metrics_are_not_eligible():
    X, y, Xv, yv = _regression(20, 2, seed=0)
    with pytest.raises(NotEligible, match="float64"):
        LinearChainUtility(Ridge(), "neg_mae", X.astype(np.float32), y, Xv.astype(np.float32), yv)
    with pytest.raises(NotEligible, match="predictions"):
        LinearChainUtility(Ridge(), "explained_variance", X, y, Xv, yv)


def test_wide_data_takes_fewer_steps_a_chunk_within_the_memory_budget(monkeypatch):
    """A chunk holds a (d+1) x (d+1) matrix per step; a budget for 3 steps of 9 features
    gives 3-step chunks with the same scores, and one too small for a step declines."""
    data = _regression(60, 9, seed=15)
    ref, fast = _pair(Ridge(alpha=0.5), "neg_mae", data)
    assert fast.chunk_size == 128
    step = 4 * 8 * 10 ** 2  # STACKS_HELD stacks of one 10 x 10 matrix of float64
    monkeypatch.setenv("TDSHAP_MEMORY_BUDGET_GB", str(3.5 * step / 2**30))
    small = LinearChainUtility(Ridge(alpha=0.5), "neg_mae", *data)
    assert small.chunk_size == 3
    chains = random_chains(60, [(5, 40), (0, 20)], seed=16)
    assert compare_chains(ref, small, chains) <= 1e-9
    assert small.n_fast_evaluations > 0.8 * small.n_evaluations
    monkeypatch.setenv("TDSHAP_MEMORY_BUDGET_GB", str(0.5 * step / 2**30))
    with pytest.raises(NotEligible, match="memory budget"):
        LinearChainUtility(Ridge(alpha=0.5), "neg_mae", *data)
