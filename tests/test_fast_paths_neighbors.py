"""k-NN chains updated one row at a time against refitting every step."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, StandardScaler

from chain_checks import compare_chains, random_chains
from tdshap.utility.base import Truncation, Utility
from tdshap.utility.fast.base import NotEligible
from tdshap.utility.fast.neighbors import NeighborsChainUtility

pytestmark = pytest.mark.usefixtures("single_threaded")


def _data(n: int, d: int, seed: int, *, integer: bool = False, classes: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(2 * n, d)).astype(float) if integer else rng.normal(
        size=(2 * n, d))
    score = X @ rng.normal(size=d) + rng.normal(scale=0.5, size=2 * n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    return X[:n], y[:n], X[n:], y[n:], score[:n], score[n:]


def _pair(estimator, metric, X, y, Xv, yv, **kw):
    return (Utility(estimator, metric, X, y, Xv, yv, **kw),
            NeighborsChainUtility(estimator, metric, X, y, Xv, yv, **kw))


SIZES = [(0, 10), (2, 8), (30, 25), (90, 30)]
MODELS = [
    (KNeighborsClassifier(5), "accuracy"),
    (KNeighborsClassifier(4, weights="distance", algorithm="brute"), "accuracy"),
    (KNeighborsClassifier(6, algorithm="kd_tree"), "accuracy"),
    (KNeighborsClassifier(3, weights="distance", algorithm="ball_tree"), "accuracy"),
    (KNeighborsRegressor(5), "neg_mae"),
    (KNeighborsRegressor(4, weights="distance", algorithm="brute"), "neg_mse"),
    (KNeighborsRegressor(9, algorithm="kd_tree", metric="euclidean"), "r2"),
]


@pytest.mark.parametrize("estimator,metric", MODELS)
def test_matches_refitting_every_step(estimator, metric):
    X, y, Xv, yv, s, sv = _data(120, 4, seed=1)
    if metric != "accuracy":
        y, yv = s, sv
    ref, fast = _pair(estimator, metric, X, y, Xv, yv)
    diff = compare_chains(ref, fast, random_chains(120, SIZES, seed=2))
    assert diff == 0.0 if metric == "accuracy" else diff <= 1e-12
    assert fast.n_evaluations == ref.n_evaluations
    # no ties in continuous data: every step with at least k rows is computed incrementally
    k = estimator.n_neighbors
    assert fast.n_fast_evaluations == sum(sum(p + j >= k for j in range(b + 1)) for p, b in SIZES)
    # subsets smaller than k: scikit-learn raises, the base class's fallback scores them
    assert fast.n_fallbacks == ref.n_fallbacks > 0


@pytest.mark.parametrize("estimator,metric", MODELS)
def test_integer_features_with_many_ties(estimator, metric):
    """Three values per feature: distances repeat everywhere; tied steps must be refitted."""
    X, y, Xv, yv, s, sv = _data(50, 3, seed=3, integer=True)
    if metric != "accuracy":
        y, yv = s, sv
    ref, fast = _pair(estimator, metric, X, y, Xv, yv)
    diff = compare_chains(ref, fast, random_chains(50, [(12, 10), (35, 10)], seed=4))
    assert diff == 0.0 if metric == "accuracy" else diff <= 1e-12
    assert fast.n_fast_declined > 0


def test_duplicate_rows_with_distance_weights_are_refitted():
    X, y, Xv, yv, _, _ = _data(60, 3, seed=5)
    Xv[:10] = X[:10]  # validation points at distance 0 from training rows
    ref, fast = _pair(KNeighborsClassifier(3, weights="distance"), "accuracy", X, y, Xv, yv)
    chains = [(np.arange(30), np.arange(30, 40)), (np.arange(10, 50), np.arange(50, 60))]
    assert compare_chains(ref, fast, chains) == 0.0
    assert fast.n_fast_declined == 11  # the first chain: every step holds a duplicate
    assert fast.n_fast_evaluations == 11


def test_truncation_and_on_error_raise_as_the_base_class():
    X, y, Xv, yv, _, _ = _data(150, 4, seed=6)
    ref, fast = _pair(KNeighborsClassifier(5), "accuracy", X, y, Xv, yv)
    target = Utility(KNeighborsClassifier(5), "accuracy", X, y, Xv, yv)(np.arange(150))
    trunc = Truncation(target, tolerance=0.05, patience=2)
    assert compare_chains(ref, fast, random_chains(150, [(0, 150)] * 3, seed=7), trunc) == 0.0
    assert fast.n_truncated == ref.n_truncated > 0
    strict = NeighborsChainUtility(KNeighborsClassifier(5), "accuracy", X, y, Xv, yv,
                                   on_error="raise")
    with pytest.raises(ValueError, match="n_neighbors"):
        strict.evaluate_chain(np.arange(3), np.arange(3, 10), 0)


def test_string_labels_and_a_stateless_pipeline():
    X, y, Xv, yv, _, _ = _data(70, 3, seed=8)
    names = np.array(["low", "mid", "high"], dtype=object)
    est = make_pipeline(Normalizer(), KNeighborsClassifier(3))
    ref, fast = _pair(est, "accuracy", X + 5, names[y], Xv + 5, names[yv])
    assert compare_chains(ref, fast, random_chains(70, [(10, 20), (40, 20)], seed=9)) == 0.0


@pytest.mark.parametrize("estimator,match", [
    (KNeighborsClassifier(metric="manhattan"), "Euclidean"),
    (KNeighborsClassifier(p=1), "Euclidean"),
    (KNeighborsClassifier(weights=lambda d: d), "weights"),
    (make_pipeline(StandardScaler(), KNeighborsClassifier()), "refitted on every subset"),
])
def test_ineligible_settings(estimator, match):
    X, y, Xv, yv, _, _ = _data(20, 2, seed=0)
    with pytest.raises(NotEligible, match=match):
        NeighborsChainUtility(estimator, "accuracy", X, y, Xv, yv)


@pytest.mark.parametrize("estimator,metric", [
    (KNeighborsClassifier(5, algorithm="brute"), "accuracy"),
    (KNeighborsRegressor(5, weights="distance", algorithm="brute"), "neg_mae"),
])
def test_far_from_the_origin_brute_force_rounding_is_respected(estimator, metric):
    """At |x| ~ 1e3 scikit-learn's |v|² - 2v·t + |t|² loses ~1e-9 of a squared distance."""
    X, y, Xv, yv, s, sv = _data(60, 6, seed=10)
    if metric != "accuracy":
        y, yv = s, sv
    ref, fast = _pair(estimator, metric, X + 1e3, y, Xv + 1e3, yv)
    diff = compare_chains(ref, fast, random_chains(60, [(40, 10), (20, 10)], seed=11))
    assert diff == 0.0 if metric == "accuracy" else diff <= 1e-9
