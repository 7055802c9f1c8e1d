"""Which utility a run gets, and whole runs with the fast path on and off."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, StandardScaler
from sklearn.tree import DecisionTreeClassifier

from tdshap import TDShap
from tdshap.utility.base import Utility
from tdshap.utility.fast import (
    LinearChainUtility,
    NeighborsChainUtility,
    fast_path_name,
    make_utility,
)

pytestmark = pytest.mark.usefixtures("single_threaded")


def _regression(n=90, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * n, 4))
    y = X @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.normal(scale=0.3, size=2 * n)
    y[:5] += 6  # a few harmful rows
    return X[:n], y[:n], X[n:], y[n:]


@pytest.mark.parametrize("estimator,metric,expected", [
    (Ridge(), "neg_mae", LinearChainUtility),
    (make_pipeline(Normalizer(), Ridge()), "r2", LinearChainUtility),
    (make_pipeline(StandardScaler(), Ridge()), "neg_mae", Utility),
    (Ridge(solver="saga"), "neg_mae", Utility),
    (KNeighborsClassifier(), "accuracy", NeighborsChainUtility),
    (KNeighborsClassifier(), "roc_auc", Utility),  # needs predict_proba
    (KNeighborsClassifier(metric="manhattan"), "accuracy", Utility),
    (DecisionTreeClassifier(), "accuracy", Utility),
])
def test_make_utility_picks_the_fast_path(breast_cancer_small, estimator, metric, expected):
    d = breast_cancer_small
    if expected is LinearChainUtility or isinstance(estimator, Ridge):
        X, y, Xv, yv = _regression()
    else:
        X, y, Xv, yv = d.X_train, d.y_train, d.X_val, d.y_val
    u = make_utility(estimator, metric, X, y, Xv, yv)
    assert type(u) is expected
    assert fast_path_name(u) == (None if expected is Utility else u.name)
    assert type(make_utility(estimator, metric, X, y, Xv, yv, fast_path=False)) is Utility


def test_fast_path_must_be_a_bool():
    with pytest.raises(ValueError, match="fast_path='yes' must be True"):
        make_utility(Ridge(), "neg_mae", *_regression(), fast_path="yes")


def _run(estimator, metric, data, fast_path, **kw):
    m = TDShap(estimator, metric, random_state=3, fast_path=fast_path, **kw)
    return m.fit(*data).result_


def test_other_estimators_are_unchanged(breast_cancer_small):
    d = breast_cancer_small
    data = (d.X_train, d.y_train, d.X_val, d.y_val)
    tree = DecisionTreeClassifier(max_depth=3, random_state=0)
    on, off = (_run(tree, "accuracy", data, f, max_iter=5, k=10, n_min=20) for f in (True, False))
    np.testing.assert_array_equal(on.values, off.values)
    np.testing.assert_array_equal(on.counts, off.counts)
    assert on.n_fits == off.n_fits and on.n_evaluations == off.n_evaluations
    assert on.extra["fast_path"] is None and off.extra["fast_path"] is None


def test_ridge_run_same_values_far_fewer_fits():
    data = _regression()
    on, off = (_run(Ridge(), "neg_mae", data, f, max_iter=10, k=10, n_min=30)
               for f in (True, False))
    np.testing.assert_allclose(on.values, off.values, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(on.counts, off.counts)
    assert on.extra["fast_path"] == "linear" and off.extra["fast_path"] is None
    assert on.n_evaluations == off.n_evaluations
    assert on.n_fits == 0 < off.n_fits
    assert on.extra["n_fast_evaluations"] == on.n_evaluations


def test_knn_run_identical_values(breast_cancer_small):
    d = breast_cancer_small
    data = (d.X_train, d.y_train, d.X_val, d.y_val)
    knn = KNeighborsClassifier(5)
    on, off = (_run(knn, "accuracy", data, f, max_iter=2, k=10, n_min=10)
               for f in (True, False))
    np.testing.assert_array_equal(on.values, off.values)
    assert on.extra["fast_path"] == "kneighbors"
    assert on.n_fits < off.n_fits


def test_fast_path_is_a_parameter():
    assert TDShap().get_params()["fast_path"] is True
    with pytest.raises(ValueError, match="fast_path"):
        TDShap(Ridge(), "neg_mae", fast_path=0).fit(*_regression())
