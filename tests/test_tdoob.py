"""ThresholdingOOB: the APT bandit with out-of-bag rewards."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_blobs
from sklearn.neighbors import KNeighborsClassifier
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from tdshap.methods.tdoob import ThresholdingOOB
from tdshap.utility.metrics import row_scores


class Memorizer(ClassifierMixin, BaseEstimator):
    """Right on the rows it was trained on, wrong (label -1) on every other row."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> Memorizer:
        self.seen_ = {tuple(x): label for x, label in zip(X, y, strict=True)}
        self.classes_ = np.unique(y)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.array([self.seen_.get(tuple(x), -1) for x in X])


def _blobs(seed: int = 0, n: int = 120, flip: int = 8) -> tuple[np.ndarray, ...]:
    X, y = make_blobs(n, centers=[[-4, 0], [4, 0]], cluster_std=1.0, random_state=seed)
    rng = np.random.default_rng(seed)
    planted = rng.choice(n, flip, replace=False)
    y = y.copy()
    y[planted] = 1 - y[planted]
    return X, y, planted


def test_rewards_come_only_from_rows_outside_the_bag() -> None:
    X, y, _ = _blobs(n=60)
    X = X + np.arange(len(X))[:, None] * 1e-3  # distinct rows, so the memorizer is exact
    r = ThresholdingOOB(Memorizer(), "accuracy", k=5, max_iter=40,
                        random_state=0).fit(X, y).result_
    assert (r.counts >= 1).all()
    # a single in-bag reward would have scored 1
    assert np.all(r.values == 0.0)


def test_planted_rows_get_the_lowest_values() -> None:
    X, y, planted = _blobs()
    r = ThresholdingOOB(DecisionTreeClassifier(max_depth=3), random_state=0,
                        max_iter=30).fit(X, y).result_
    lowest = np.argsort(r.values)[: len(planted)]
    assert set(lowest) == set(planted)
    assert r.is_harmful[planted].all()
    assert r.extra["tau"] == pytest.approx(0.5)  # chance for two classes


def test_same_seed_same_values_and_first_pass_pulls_every_row() -> None:
    X, y, _ = _blobs(seed=1)
    a = ThresholdingOOB(KNeighborsClassifier(3), max_iter=0, random_state=7).fit(X, y).result_
    b = ThresholdingOOB(KNeighborsClassifier(3), max_iter=0, random_state=7).fit(X, y).result_
    np.testing.assert_array_equal(a.values, b.values)
    assert (a.counts >= 1).all() and a.n_evaluations == int(np.ceil(len(y) / 12))
    assert a.n_fits == 0  # the k-NN neighbour lists refit nothing here


def test_bandit_rounds_go_to_rows_near_the_threshold() -> None:
    X, y, _ = _blobs(seed=2)
    r = ThresholdingOOB(DecisionTreeClassifier(max_depth=3), k=4, max_iter=200,
                        random_state=0).fit(X, y).result_
    far = np.abs(r.values - r.threshold) > 0.4
    assert r.counts[~far].mean() > r.counts[far].mean()


def test_regression_scores_are_minus_the_absolute_error() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    y = X[:, 0] * 3
    y[:4] += 30
    r = ThresholdingOOB(DecisionTreeRegressor(max_depth=4), random_state=0,
                        max_iter=20).fit(X, y).result_
    assert r.extra["metric"] == "neg_mae"
    assert (r.values <= 0).all()
    assert set(np.argsort(r.values)[:4]) == {0, 1, 2, 3}


def test_row_scores_true_class_probability() -> None:
    model = DecisionTreeClassifier().fit(np.array([[0.0], [1.0]]), np.array([0, 1]))
    got = row_scores(model, np.array([[0.0], [1.0], [0.0]]), np.array([0, 0, 7]),
                     "true_class_proba")
    np.testing.assert_array_equal(got, [1.0, 0.0, 0.0])  # an unseen class scores 0


def test_bad_settings_are_refused() -> None:
    X, y, _ = _blobs()
    with pytest.raises(ValueError, match="scores single rows"):
        ThresholdingOOB(KNeighborsClassifier(), "r2").fit(X, y)
    with pytest.raises(ValueError, match="k="):
        ThresholdingOOB(KNeighborsClassifier(), k=0).fit(X, y)


def test_the_first_pass_stays_at_twenty_bags_for_large_n() -> None:
    from sklearn.dummy import DummyClassifier

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(3000, 2)), rng.integers(0, 2, 3000)
    est = ThresholdingOOB(DummyClassifier(), max_iter=0, random_state=0).fit(X, y)
    assert est.k_ == 150 and est.result_.n_fits == 20
    assert (est.result_.counts >= 1).all()
