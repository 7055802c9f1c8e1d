"""Warm start for scikit-learn's MLP and LightGBM (tdshap.utility.warm_sklearn)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.tree import DecisionTreeClassifier

from tdshap import TDShap
from tdshap.utility.warm_sklearn import WarmStarted


@pytest.fixture
def regression():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + rng.normal(0, 0.1, 120)
    return X[:80], y[:80], X[80:], y[80:]


def test_mlp_warm_start_continues_from_the_model_fitted_on_all_rows(regression):
    X, y, X_val, _ = regression
    est = WarmStarted(MLPRegressor(hidden_layer_sizes=(8,), random_state=0), steps=1,
                      pretrain_steps=50, random_state=0)
    prepared = est.prepare(X, y)
    assert est.init_from is None and prepared.init_from is not None
    assert clone(prepared).init_from is prepared.init_from
    base = prepared.init_from.payload
    warm = clone(prepared).fit(X[:20], y[:20])
    cold = clone(prepared).set_params(warm_start=False).fit(X[:20], y[:20])
    gap_warm = np.abs(warm.predict(X_val) - base.predict(X_val)).max()
    gap_cold = np.abs(cold.predict(X_val) - base.predict(X_val)).max()
    assert gap_warm < gap_cold  # one epoch from D's weights stays near D's model
    assert warm.model_ is not base  # the shared pretrained model is never refitted
    np.testing.assert_array_equal(base.predict(X_val), prepared.init_from.payload.predict(X_val))


def test_lightgbm_init_model_adds_rounds_on_top_of_the_pretrained_booster(regression):
    lgb = pytest.importorskip("lightgbm")
    X, y, _, _ = regression
    est = WarmStarted(lgb.LGBMRegressor(min_child_samples=5, verbose=-1), steps=3,
                      pretrain_steps=10, random_state=0)
    prepared = est.prepare(X, y)
    warm = clone(prepared).fit(X[:40], y[:40])
    assert warm.model_.booster_.num_trees() == 13
    cold = clone(prepared).set_params(warm_start=False).fit(X[:40], y[:40])
    assert cold.model_.booster_.num_trees() == 3


def test_wrapper_is_a_classifier_or_regressor_like_what_it_wraps():
    assert is_classifier(WarmStarted(MLPClassifier()))
    assert is_regressor(WarmStarted(MLPRegressor()))


def test_tdshap_prepares_a_warm_started_mlp_once(regression):
    X, y, X_val, y_val = regression
    est = WarmStarted(MLPRegressor(hidden_layer_sizes=(4,), batch_size=16), steps=2,
                      pretrain_steps=20)
    model = TDShap(est, "neg_mae", k=10, n_min=20, max_iter=1, random_state=0)
    model.fit(X, y, X_val, y_val)
    assert model.result_.n_fits == (8 + 1) * 11
    assert np.isfinite(model.values_).all()


def test_unsupported_estimators_are_refused_with_the_alternative():
    with pytest.raises(ValueError, match="TorchClassifier"):
        WarmStarted(DecisionTreeClassifier()).prepare(np.zeros((4, 2)), np.arange(4))
    with pytest.raises(ValueError, match="steps"):
        WarmStarted(MLPRegressor(), steps=0).prepare(np.zeros((4, 2)), np.arange(4))


@pytest.mark.parametrize("steps", [True, 0, 2.0, "3"])
def test_steps_that_are_no_count_are_refused(regression, steps):
    # steps=True (a bool is an int to Python) trained one epoch, silently
    X, y, _, _ = regression
    with pytest.raises(ValueError, match=f"steps={steps!r} must be a whole number >= 1"):
        WarmStarted(MLPRegressor(), steps=steps).prepare(X, y)
