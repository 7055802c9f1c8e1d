"""Closed-form Data-OOB of a k-NN classifier against its definition and Monte Carlo bags."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from tdshap.cleansing import cleanse
from tdshap.methods import KNNOutOfBag
from tdshap.methods.knn_oob import bag_reward_moments, slot_weights
from tdshap.utility.fast.neighbor_lists import NeighborLists


def test_one_neighbour_by_hand():
    # k = 1: the slot holds the m-th nearest other row when the m-1 nearer ones are all
    # absent (each with probability e^-1) and it is present: e^-(m-1) (1 - e^-1)
    W, tail = slot_weights(1, 4)
    m = np.arange(1, 5)
    np.testing.assert_allclose(W, np.exp(-(m - 1)) * (1 - np.exp(-1)), rtol=1e-12)
    assert tail == pytest.approx(np.exp(-4))
    # rows on a line, labels 0 0 1 1: row 0's others by distance are 1 (0), 2 (1), 3 (1)
    X = np.array([[0.0], [1.0], [2.5], [4.5]])
    y = np.array([0, 0, 1, 1])
    v = KNNOutOfBag(KNeighborsClassifier(1)).fit(X, y).values_
    W3, _ = slot_weights(1, 3)
    assert v[0] == pytest.approx(W3[0] / W3.sum())


def test_weights_are_the_slot_shares_and_sum_to_one():
    W, tail = slot_weights(5, 36)
    assert np.all(W >= 0) and W.sum() + tail == pytest.approx(1.0)
    assert tail < 1e-6


def test_values_are_the_mean_of_many_poissonized_bags():
    X, y = make_classification(120, n_features=4, n_informative=3, n_redundant=0, n_classes=3,
                               random_state=0)
    exact = KNNOutOfBag(KNeighborsClassifier(5)).fit(X, y).values_
    lists = NeighborLists(KNeighborsClassifier(5), X, y)
    rng = np.random.default_rng(0)
    total, squares, bags = np.zeros(len(y)), np.zeros(len(y)), 3000
    rows = np.arange(len(y))
    for _ in range(bags):
        counts = rng.poisson(1.0, len(y))
        # every row out of its own bag: its list never holds itself
        nbr, _ = lists.neighbours(counts, rows)
        reward = (lists.codes[nbr] == lists.codes[:, None]).mean(axis=1)
        total += reward
        squares += reward**2
    sampled = total / bags
    # each sampled mean has SE <= 0.5 / sqrt(3000) ~ 0.009
    assert np.max(np.abs(sampled - exact)) < 0.05
    assert np.mean(np.abs(sampled - exact)) < 0.01
    # the bag-to-bag variance, exact against sampled (SE of a sample variance of a
    # reward in [0, 1] over 3000 bags: <= 0.25 / sqrt(3000) ~ 0.005)
    sampled_var = squares / bags - sampled**2
    same = lists.codes[lists.index] == lists.codes[:, None]
    _, var, _ = bag_reward_moments(same, 5)
    assert var.max() > 0.05  # rows with mixed neighbours do scatter...
    assert np.max(np.abs(sampled_var - var)) < 0.025  # ...as much as sampled bags do
    assert np.mean(np.abs(sampled_var - var)) < 0.004


def test_one_neighbour_reward_is_bernoulli():
    # k = 1: a bag's reward is 0 or 1, so its variance is v (1 - v)
    X, y = make_classification(60, n_features=3, n_informative=3, n_redundant=0,
                               random_state=4)
    m = KNNOutOfBag(KNeighborsClassifier(1)).fit(X, y)
    np.testing.assert_allclose(m.result_.variances, m.values_ * (1 - m.values_), atol=1e-9)


def test_intervals_are_those_of_the_evidence_bags():
    X, y = make_classification(150, n_features=4, n_informative=3, n_redundant=0,
                               flip_y=0.2, random_state=5)
    few = KNNOutOfBag(evidence_bags=20).fit(X, y).result_
    many = KNNOutOfBag(evidence_bags=2000).fit(X, y).result_
    np.testing.assert_array_equal(few.values, many.values)
    assert few.counts[0] == round(20 / np.e) and many.counts[0] == round(2000 / np.e)
    # more bags, narrower intervals: more rows credibly below tau, never fewer
    assert few.is_credibly_harmful.sum() < many.is_credibly_harmful.sum()
    assert np.all(few.is_credibly_harmful <= many.is_credibly_harmful)
    assert np.all(many.is_credibly_harmful <= (many.values < 0.5))
    with pytest.raises(ValueError, match="evidence_bags"):
        KNNOutOfBag(evidence_bags=0).fit(X, y)
    # the draws are an int64 count: 10**30 was numpy's OverflowError after the search
    with pytest.raises(ValueError, match=r"evidence_bags=10+ must be a whole number from 3 to"):
        KNNOutOfBag(evidence_bags=10**30).fit(X, y)


def test_planted_flips_rank_lowest_and_the_cut_takes_them():
    X, y = make_classification(300, n_features=5, n_informative=4, n_redundant=0,
                               class_sep=2.0, random_state=1)
    Xv, yv = X[200:], y[200:]
    X, y = X[:200], y[:200].copy()
    flipped = np.random.default_rng(0).choice(200, 15, replace=False)
    y[flipped] = 1 - y[flipped]
    m = KNNOutOfBag().fit(X, y)
    r = m.result_
    assert m.tau_ == 0.5 and r.extra["validation_free"] and r.interval == "normal"
    lowest = np.argsort(m.values_)[:15]
    assert len(set(lowest) & set(flipped)) >= 13
    c = cleanse(r, KNeighborsClassifier(5), X, y, Xv, yv, rule="one_se", step=5)
    assert c.n_remove > 0 and set(c.removed) <= set(np.flatnonzero(m.harmful_))


def test_same_values_through_a_pipeline_and_for_any_seed():
    X, y = make_classification(80, n_features=3, n_informative=3, n_redundant=0,
                               random_state=2)
    scaled = StandardScaler().fit_transform(X)
    a = KNNOutOfBag(make_pipeline(StandardScaler(), KNeighborsClassifier(3)),
                    random_state=1).fit(X, y).values_
    b = KNNOutOfBag(KNeighborsClassifier(3), random_state=2).fit(scaled, y).values_
    np.testing.assert_array_equal(a, b)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # log(0)
def test_a_pipeline_step_with_sparse_output_is_made_dense_and_a_failing_one_named():
    # a OneHotEncoder's sparse output ended in numpy's "setting an array element with a
    # sequence"; a PCA of too many components in scikit-learn's error from deep inside
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import FunctionTransformer, OneHotEncoder

    X = np.random.default_rng(0).integers(0, 3, size=(40, 3)).astype(float)
    y = (X[:, 0] > 0).astype(int)
    sparse, dense = (KNNOutOfBag(make_pipeline(OneHotEncoder(sparse_output=s),
                                               KNeighborsClassifier(3)), random_state=0)
                     .fit(X, y).values_ for s in (True, False))
    np.testing.assert_array_equal(sparse, dense)
    with pytest.raises(ValueError, match=r"KNNOutOfBag: the Pipeline's steps before the k-NN "
                       r"failed \(ValueError: n_components=10"):
        KNNOutOfBag(make_pipeline(PCA(10), KNeighborsClassifier(3))).fit(X, y)
    with pytest.raises(ValueError, match=r"steps before the k-NN give NaN or infinite"):
        KNNOutOfBag(make_pipeline(FunctionTransformer(np.log), KNeighborsClassifier(3))).fit(
            X, y)


@pytest.mark.parametrize("estimator, message", [
    (KNeighborsRegressor(5), "KNeighborsClassifier"),
    (KNeighborsClassifier(5, weights="distance"), "weights='uniform'"),
])
def test_other_models_are_refused_with_what_to_use(estimator, message):
    X, y = make_classification(40, n_features=3, n_informative=3, n_redundant=0,
                               random_state=0)
    with pytest.raises(ValueError, match=message):
        KNNOutOfBag(estimator).fit(X, y)


@pytest.mark.parametrize("k, budget, message", [
    (10**18, None, r"n_neighbors=1000000000000000000 must be a whole number from 1 to 40"),
    (30, "1e-6", r"bag tables of n_neighbors=30 need .* memory budget .* fewer neighbours"),
])
def test_huge_n_neighbors_is_refused_before_any_table_is_built(k, budget, message,
                                                               monkeypatch):
    # both were a MemoryError from deep inside numpy
    if budget is not None:
        monkeypatch.setenv("TDSHAP_MEMORY_BUDGET_GB", budget)
    X, y = make_classification(40, n_features=3, n_informative=3, n_redundant=0,
                               random_state=0)
    with pytest.raises(ValueError, match=message):
        KNNOutOfBag(KNeighborsClassifier(k)).fit(X, y)


def test_more_neighbours_than_rows_is_refused_as_scikit_learn_refuses_it():
    # a bag holds N rows (with repeats), and scikit-learn's k-NN refuses to predict with
    # more neighbours than it was fitted on: every bag of DataOOB would fail. The closed
    # form valued that model anyway, in (k+1)^3 tables: k = 500 with 50 rows took 20 s
    # and gigabytes for the values of a model that cannot be fitted
    X, y = make_classification(50, n_features=3, n_informative=3, n_redundant=0,
                               random_state=0)
    for k in (51, 60, 500, 10**6):
        with pytest.raises(ValueError, match=rf"n_neighbors={k} must be a whole number from "
                                             r"1 to 50\. .*N=50 training rows"):
            KNNOutOfBag(KNeighborsClassifier(k)).fit(X, y)
    with pytest.raises(ValueError, match="n_neighbors=60"):  # through a Pipeline too
        KNNOutOfBag(make_pipeline(StandardScaler(), KNeighborsClassifier(60))).fit(X, y)
    assert KNNOutOfBag(KNeighborsClassifier(50)).fit(X, y).n_neighbors_ == 50
