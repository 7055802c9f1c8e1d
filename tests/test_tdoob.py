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
    for name, bad in (("eps_factor", float("nan")), ("eps_factor", -0.1),
                      ("outlier_factor", float("inf")), ("outlier_factor", "2")):
        with pytest.raises(ValueError, match=f"{name}=.* must be a number >= 0"):
            ThresholdingOOB(KNeighborsClassifier(), **{name: bad}).fit(X, y)


def test_the_first_pass_stays_at_twenty_bags_for_large_n() -> None:
    from sklearn.dummy import DummyClassifier

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(3000, 2)), rng.integers(0, 2, 3000)
    est = ThresholdingOOB(DummyClassifier(), max_iter=0, random_state=0).fit(X, y)
    assert est.k_ == 150 and est.result_.n_fits == 20
    assert (est.result_.counts >= 1).all()


class FailsOnSomeBags(ClassifierMixin, BaseEstimator):
    """A depth-2 tree whose fit raises when its bag holds row 0 three times or more."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> FailsOnSomeBags:
        if np.sum(np.all(X == self.first_row, axis=1)) >= 3:
            raise ValueError("row 0 three times")
        self.tree_ = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
        self.classes_ = self.tree_.classes_
        return self

    def __init__(self, first_row: tuple[float, ...] = (0.0, 0.0)) -> None:
        self.first_row = first_row

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.tree_.predict(X)


@pytest.mark.parametrize("bags_per_round", [1, 3])
def test_same_values_whatever_n_jobs(bags_per_round: int) -> None:
    X, y, _ = _blobs(seed=3, n=90)
    fits = [ThresholdingOOB(FailsOnSomeBags(tuple(X[0])), k=9, max_iter=12,
                            bags_per_round=bags_per_round, n_jobs=jobs,
                            random_state=5).fit(X, y).result_ for jobs in (1, 2)]
    np.testing.assert_array_equal(fits[0].values, fits[1].values)
    np.testing.assert_array_equal(fits[0].counts, fits[1].counts)
    # failed bags, skipped alike
    assert fits[0].extra["n_fallbacks"] == fits[1].extra["n_fallbacks"] > 0
    assert fits[0].n_fits == fits[1].n_fits == 10 + 12  # the first pass, then max_iter bags


def test_a_failing_fit_on_a_worker_raises_with_on_error_raise() -> None:
    X, y, _ = _blobs(seed=3, n=90)
    with pytest.raises(ValueError, match="row 0 three times"):
        ThresholdingOOB(FailsOnSomeBags(tuple(X[0])), k=9, max_iter=12, n_jobs=2,
                        on_error="raise", random_state=5).fit(X, y)


def test_a_round_counts_its_earlier_bags_picks_as_pulls_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tdshap.methods import tdoob

    X, y, _ = _blobs(seed=4)
    held: list[np.ndarray] = []
    draw = tdoob._draw_bag
    monkeypatch.setattr(tdoob, "_draw_bag", lambda n, h, rng: (held.append(h), draw(n, h, rng))[1])
    est = ThresholdingOOB(DecisionTreeClassifier(max_depth=3), k=6, max_iter=10,
                          bags_per_round=4, random_state=0).fit(X, y)
    first, rest = held[:20], held[20:]
    assert sorted(np.concatenate(first)) == list(range(len(y)))  # every row once
    # rounds of 4, 4 and the 2 bags max_iter leaves, k distinct arms a bag
    assert [len(set(h)) for h in rest] == [6] * 10 and est.rounds_ == 10
    # arms alike: each bag of a round takes arms the earlier bags left (blind to its
    # earlier picks, each would draw its arms by the tie-break alone)
    from tdshap.methods.apt.bandit import APTState

    state = APTState(12, tau=0.0, eps=0.1)
    state.mu[:], state.counts[:] = 0.5, 4
    est.k_ = 3
    groups = est._round(state, 4, np.random.default_rng(0))
    assert sorted(np.concatenate(groups)) == list(range(12))


@pytest.mark.parametrize("bad", [0, 1.5, "4", True])
def test_bags_per_round_must_be_a_whole_number_from_one(bad: object) -> None:
    X, y, _ = _blobs()
    with pytest.raises(ValueError, match="bags_per_round"):
        ThresholdingOOB(DecisionTreeClassifier(), bags_per_round=bad).fit(X, y)
