"""DataOOB: seeded, out-of-bag only, and a planted mislabelled row scores low."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.tree import DecisionTreeClassifier

from tdshap.methods import DataOOB


def blobs(seed=0, n=60):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(-3, 1, (n // 2, 2)), rng.normal(3, 1, (n // 2, 2))])
    return X, np.repeat([0, 1], n // 2)


class Memorizer(ClassifierMixin, BaseEstimator):
    """Right on the rows it was trained on, wrong (the other label) on all others."""

    def fit(self, X, y):
        self.seen_ = {tuple(x): label for x, label in zip(X, y, strict=True)}
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.array([self.seen_.get(tuple(x), -1) for x in X])


class Broken(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        raise RuntimeError("cannot fit")


class FitReturnsNone(Memorizer):
    """A Memorizer whose fit ends without "return self"."""

    def fit(self, X, y):
        super().fit(X, y)


@pytest.mark.parametrize("method", ["DataOOB", "ThresholdingOOB"])
def test_a_fit_that_returns_nothing_is_valued_as_one_that_returns_self(method):
    # the bags predicted with what fit returned: every fit "failed" ('NoneType' object has
    # no attribute 'predict'), though TDShap and LOO valued the same model
    from tdshap.methods import ThresholdingOOB

    X, y = blobs()
    make = ((lambda m: DataOOB(m, n_estimators=20, random_state=0)) if method == "DataOOB"
            else (lambda m: ThresholdingOOB(m, max_iter=1, random_state=0)))
    plain, none = (make(m).fit(X, y).result_ for m in (Memorizer(), FitReturnsNone()))
    np.testing.assert_array_equal(none.values, plain.values)
    assert none.extra.get("n_failed_fits", 0) == plain.extra.get("n_failed_fits", 0)


def test_same_seed_same_values_and_n_jobs_does_not_matter():
    X, y = blobs()
    y[3] = 1
    a = DataOOB(KNeighborsClassifier(3), n_estimators=30, random_state=1).fit(X, y)
    b = DataOOB(KNeighborsClassifier(3), n_estimators=30, random_state=1).fit(X, y)
    np.testing.assert_array_equal(a.values_, b.values_)
    np.testing.assert_array_equal(a.counts_, b.counts_)
    c = DataOOB(KNeighborsClassifier(3), n_estimators=30, random_state=2).fit(X, y)
    assert not np.array_equal(a.counts_, c.counts_)
    par = DataOOB(KNeighborsClassifier(3), n_estimators=30, random_state=1, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(par.values_, a.values_)


def test_planted_mislabelled_row_is_lowest_and_flagged():
    X, y = blobs(1, n=80)
    y[5] = 1  # a class-0 point labelled 1
    m = DataOOB(DecisionTreeClassifier(max_depth=3), n_estimators=50, random_state=0).fit(X, y)
    assert np.argmin(m.values_) == 5
    assert m.values_[5] == 0.0  # every model that did not see it predicts class 0
    assert m.harmful_[5] and m.tau_ == 0.5
    assert m.harmful_.sum() <= 3  # clean rows are nearly always predicted right
    assert m.result_.algorithm == "data_oob" and m.result_.n_fits == 50


def test_values_are_out_of_bag_means_and_counts_match():
    X, y = blobs(2, n=50)
    n_bags = 40
    m = DataOOB(Memorizer(), n_estimators=n_bags, random_state=3).fit(X, y)
    # only predictions on rows a model did not see count: the memorizer is always wrong there
    np.testing.assert_array_equal(m.values_, np.zeros(len(y)))
    assert ((m.counts_ >= 0) & (m.counts_ <= n_bags)).all()
    # a row is out of a bag of N draws with probability (1 - 1/N)^N
    expected = n_bags * len(y) * (1 - 1 / len(y)) ** len(y)
    assert m.counts_.sum() == pytest.approx(expected, rel=0.1)
    # the majority-class dummy is right exactly on the majority rows
    y2 = np.r_[np.zeros(40, int), np.ones(10, int)]
    d = DataOOB(DummyClassifier(), n_estimators=n_bags, random_state=3).fit(X, y2)
    np.testing.assert_array_equal(d.counts_, m.counts_)  # same seed, same bags
    np.testing.assert_array_equal(d.values_, (y2 == 0).astype(float))
    assert np.nanmax(d.result_.variances) == 0.0


def test_regression_outlier_target_is_flagged():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 1))
    y = rng.normal(size=60)
    y[11] = 25.0
    m = DataOOB(DummyRegressor(), n_estimators=60, random_state=0).fit(X, y)
    assert m.task_ == "regression" and np.argmin(m.values_) == 11
    assert m.harmful_[11] and m.harmful_.sum() <= 3
    assert m.tau_ < 0 and (m.values_ <= 0).all()


def test_validation_set_is_ignored():
    X, y = blobs(4)
    a = DataOOB(KNeighborsClassifier(3), n_estimators=20, random_state=0).fit(X, y)
    b = DataOOB(KNeighborsClassifier(3), n_estimators=20, random_state=0).fit(X, y, X[:5], y[:5])
    np.testing.assert_array_equal(a.values_, b.values_)


def test_single_class_bags_and_failures_fall_back():
    X = np.array([[0.0], [1.0], [2.0]])
    y = np.array([0, 0, 1])
    m = DataOOB(LogisticRegression(), n_estimators=30, random_state=0).fit(X, y)
    assert m.result_.extra["fallback_bags"] > 0
    assert m.result_.n_fits + m.result_.extra["fallback_bags"] == 30
    with pytest.raises(RuntimeError, match="cannot fit"):
        DataOOB(Broken(), n_estimators=3, on_error="raise", random_state=0).fit(*blobs())
    # every fit failing left the fallback's constant as the values (n_fits 0), silently
    with pytest.raises(ValueError, match=r"failed on every one of its 3 fits in this data_oob "
                                         r"run \(the first error: RuntimeError: cannot fit\)"):
        DataOOB(Broken(), n_estimators=3, random_state=0).fit(*blobs())
    with pytest.warns(RuntimeWarning, match="every one of the 3 bags"):
        few = DataOOB(LogisticRegression(), n_estimators=3, random_state=0).fit(*blobs())
    never = few.counts_ == 0
    assert never.any() and np.isnan(few.values_[never]).all()
    assert not few.harmful_[never].any()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"estimator": None}, "estimator"),
        ({"metric": "neg_mae"}, "fixed utility"),
        ({"n_estimators": 0}, "n_estimators"),
        ({"on_error": "ignore"}, "on_error"),
        ({"tau": "high"}, "tau"),
    ],
)
def test_bad_settings_are_explained(kwargs, match):
    settings = {"estimator": KNeighborsClassifier(3), "n_estimators": 25, **kwargs}
    with pytest.raises(ValueError, match=match):
        DataOOB(**settings).fit(*blobs())
