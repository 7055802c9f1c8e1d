"""KNNShapley(queries="both") and the cross-fitted cut it makes possible."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

from games import exact_shapley, knn_per_query
from tdshap.cleansing import _row_brier, cleanse
from tdshap.cross_fit import CrossFit, label_fingerprint, make_folds
from tdshap.methods import KNNShapley
from tdshap.result import ResultFileError, ValuationResult


def blobs(seed: int, n: int = 120, n_val: int = 60, flips: int = 12):
    rng = np.random.default_rng(seed)

    def draw(m: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.integers(0, 2, m)
        return rng.normal(size=(m, 2)) + 3.0 * y[:, None], y

    X, y = draw(n)
    Xv, yv = draw(n_val)
    y = y.copy()
    y[:flips] = 1 - y[:flips]  # planted: the first rows
    return X, y, Xv, yv


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_both_is_the_mean_of_the_two_modes(task):
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(40, 3)), rng.normal(size=(25, 3))
    y = rng.integers(0, 3, 40) if task == "classification" else rng.normal(size=40)
    yv = rng.integers(0, 3, 25) if task == "classification" else rng.normal(size=25)
    kw = {"n_neighbors": 3, "task": task}
    both = KNNShapley(queries="both", **kw).fit(X, y, Xv, yv).result_
    train = KNNShapley(queries="training", **kw).fit(X, y).result_
    val = KNNShapley(**kw).fit(X, y, Xv, yv).result_
    np.testing.assert_allclose(both.values, 0.5 * train.values + 0.5 * val.values, atol=1e-14)
    assert both.extra["eligible_by"] == "value" and not both.extra.get("validation_free")
    # its intervals: the variance of the mean of two means of independent queries
    Xa, ya = np.asarray(X, float), np.asarray(y, float) - (np.mean(y) if task ==
                                                           "regression" else 0)
    if task == "regression":
        yva = np.asarray(yv, float) - np.mean(y)
        pt = knn_per_query(Xa, ya, Xa, ya, 3, task, np.arange(40))
        pv = knn_per_query(Xa, ya, Xv, yva, 3, task)
        want = 0.25 * pt.var(0, ddof=1) / 40 + 0.25 * pv.var(0, ddof=1) / 25
        np.testing.assert_allclose(both.variances / both.counts, want, rtol=1e-9, atol=1e-15)


def test_both_equals_enumerated_shapley_of_the_mixed_game():
    rng = np.random.default_rng(1)
    X, Xv = rng.normal(size=(6, 2)), rng.normal(size=(3, 2))
    y, yv = rng.integers(0, 2, 6), rng.integers(0, 2, 3)
    k = 2

    def top_share(subset, xq, yq):
        s = np.asarray(subset, dtype=int)
        if not len(s):
            return 0.0
        d = np.sum((X[s] - xq) ** 2, axis=1)
        return float(np.sum(y[s[np.lexsort((s, d))][:k]] == yq) / k)

    def u(subset):
        train = np.mean([top_share([i for i in subset if i != j], X[j], y[j])
                         for j in range(6)])
        val = np.mean([top_share(subset, Xv[v], yv[v]) for v in range(3)])
        return 0.5 * train + 0.5 * val

    exact, _ = exact_shapley(u, 6)
    got = KNNShapley(n_neighbors=k, task="classification", queries="both").fit(X, y, Xv, yv)
    np.testing.assert_allclose(got.values_, exact, atol=1e-12)


def test_each_fold_flags_the_rows_below_tau_without_its_queries():
    X, y, Xv, yv = blobs(2)
    r = KNNShapley(queries="both", n_folds=4, random_state=3).fit(X, y, Xv, yv).result_
    cross = CrossFit.from_extra(r.extra["cross_fit"], len(y))
    assert cross.n_folds == 4 and cross.matches(Xv, yv)
    train = KNNShapley(queries="training").fit(X, y).values_
    for f, flagged in enumerate(cross.flagged):
        rest = cross.folds != f
        val = KNNShapley().fit(X, y, Xv[rest], yv[rest]).values_
        np.testing.assert_array_equal(flagged, np.flatnonzero(0.5 * train + 0.5 * val < 0))
        # and every row's value without the fold's queries: both modes on the other folds
        assert cross.values is not None
        np.testing.assert_allclose(cross.values[f], 0.5 * train + 0.5 * val, atol=1e-12)
    # folds: every class dealt evenly, the same seed the same folds
    for c in (0, 1):
        sizes = np.bincount(cross.folds[yv == c], minlength=4)
        assert sizes.max() - sizes.min() <= 1
    again = KNNShapley(queries="both", n_folds=4, random_state=3).fit(X, y, Xv, yv).result_
    assert again.extra["cross_fit"] == r.extra["cross_fit"]
    np.testing.assert_array_equal(again.values, r.values)


def test_make_folds_and_fingerprint():
    rng = np.random.default_rng(0)
    y = np.array(["a"] * 7 + ["b"] * 3)
    folds = make_folds(y, 3, rng, stratify=True)
    assert sorted(np.bincount(folds)) == [3, 3, 4]
    assert set(folds[y == "b"]) == {0, 1, 2}
    assert label_fingerprint(y) == label_fingerprint(y.copy())
    assert label_fingerprint(y) != label_fingerprint(y[::-1])
    assert label_fingerprint(np.array([1, 2])) != label_fingerprint(np.array(["1", "2"]))
    # the rows: each fold's mean, to rounding (find_harmful's preparation moves last bits)
    X = rng.normal(size=(10, 3))
    cross = CrossFit.made(X, y, folds, (np.array([0]),) * 3)
    assert cross.matches(X * (1 + 1e-15), y) and cross.matches(X + 1e-14, y)
    assert not cross.matches(X + 1e-3, y)
    assert not cross.matches(X[::-1], y[::-1])
    assert not cross.matches(X[:9], y[:9])


def test_the_cut_judges_each_fold_by_the_rows_chosen_without_it():
    X, y, Xv, yv = blobs(5, n=200, n_val=100, flips=20)
    knn = KNeighborsClassifier(5)
    r = KNNShapley(knn, queries="both", random_state=0).fit(X, y, Xv, yv).result_
    c = cleanse(r, knn, X, y, Xv, yv, rule="one_se", random_state=0)
    test = c.evidence.eligible
    assert test is not None and test.cross_fitted and test.n_se == pytest.approx(2.326)
    assert "cross-fitted" in test.describe() and "rows below tau gains" in test.describe()
    # by hand: each validation row scored by the 5-NN refitted without its fold's rows
    cross = CrossFit.from_extra(r.extra["cross_fit"], len(y))
    classes = np.unique(y)
    full = KNeighborsClassifier(5).fit(X, y)
    scores, correct = np.empty(len(yv)), np.empty(len(yv))
    for f, flagged in enumerate(cross.flagged):
        rows = cross.folds == f
        keep = np.setdiff1d(np.arange(len(y)), flagged)
        m = KNeighborsClassifier(5).fit(X[keep], y[keep])
        scores[rows] = _row_brier(m, Xv, yv, classes)[rows]
        correct[rows] = (m.predict(Xv) == yv)[rows]
    diff = scores - _row_brier(full, Xv, yv, classes)
    assert test.gain == pytest.approx(diff.mean(), abs=1e-12)
    assert test.metric_gain == pytest.approx(correct.mean() - full.score(Xv, yv), abs=1e-12)
    assert test.n == int(np.sum(r.values < 0))
    # the planted rows are found and their removal passes the test
    assert test.passed and c.n_remove == test.n
    assert np.isin(np.arange(20), c.removed).mean() >= 0.8


def test_other_validation_rows_get_the_ordinary_test():
    X, y, Xv, yv = blobs(6, n=150, n_val=80)
    knn = KNeighborsClassifier(5)
    r = KNNShapley(knn, queries="both", random_state=0).fit(X, y, Xv, yv).result_
    c = cleanse(r, knn, X, y, Xv[::-1], yv[::-1], rule="one_se", random_state=0)
    assert c.evidence.eligible is not None and not c.evidence.eligible.cross_fitted
    assert c.evidence.eligible.n_se == 2.0  # the values saw validation rows: not free


def test_cross_fitted_regression_cut():
    rng = np.random.default_rng(7)
    X, Xv = rng.normal(size=(200, 2)), rng.normal(size=(100, 2))
    y, yv = X.sum(1) + 0.1 * rng.normal(size=200), Xv.sum(1) + 0.1 * rng.normal(size=100)
    y[:15] += rng.choice([-6.0, 6.0], 15)
    knn = KNeighborsRegressor(5)
    r = KNNShapley(knn, queries="both", random_state=0).fit(X, y, Xv, yv).result_
    c = cleanse(r, knn, X, y, Xv, yv, rule="one_se", random_state=0, metric="neg_mae")
    assert c.evidence.eligible.cross_fitted and c.evidence.eligible.score == "squared error"
    assert c.evidence.eligible.passed and np.isin(np.arange(15), c.removed).mean() >= 0.85


def test_a_result_file_keeps_its_cross_fit_and_refuses_a_damaged_one(tmp_path):
    X, y, Xv, yv = blobs(8)
    r = KNNShapley(queries="both", random_state=0).fit(X, y, Xv, yv).result_
    path = r.save(tmp_path / "r.json")
    back = ValuationResult.load(path)
    assert back.extra["cross_fit"] == r.extra["cross_fit"]
    knn = KNeighborsClassifier(5)
    assert cleanse(back, knn, X, y, Xv, yv, rule="one_se").evidence.eligible.cross_fitted
    data = json.loads(path.read_text())
    good = data["extra"]["cross_fit"]
    bad = [
        {**good, "flagged": [[len(y) + 3], *good["flagged"][1:]]},  # not a training row
        {**good, "flagged": [[2, 1], *good["flagged"][1:]]},  # not sorted
        {**good, "folds": [9] * len(good["folds"])},  # no such fold
        {**good, "folds": ["0"] * len(good["folds"])},
        {**good, "labels": "../../etc/passwd"},
        {**good, "means": [[1.0]]},  # not one row per fold
        {**good, "means": [[float("nan")] * len(good["means"][0])] * len(good["means"])},
        {**good, "code": "import os"},
        {**good, "values": good["values"][1:]},  # not one list per fold
        {**good, "values": [v[1:] for v in good["values"]]},  # not one value per row
        {**good, "values": [["0.5"] * len(y)] * len(good["flagged"])},
        {**good, "values": [[float("inf")] * len(y)] * len(good["flagged"])},
        [1, 2, 3],
    ]
    older = {key: v for key, v in good.items() if key != "values"}  # made before values
    data["extra"]["cross_fit"] = older
    path.write_text(json.dumps(data))
    assert ValuationResult.load(path).extra["cross_fit"] == older
    for damaged in bad:
        data["extra"]["cross_fit"] = damaged
        path.write_text(json.dumps(data))
        with pytest.raises(ResultFileError, match=r"extra\.cross_fit"):
            ValuationResult.load(path)


def test_too_few_validation_rows_for_folds():
    X, y, Xv, yv = blobs(9, n_val=1)
    r = KNNShapley(queries="both").fit(X, y, Xv, yv).result_
    assert "cross_fit" not in r.extra
    with pytest.raises(ValueError, match="n_folds"):
        KNNShapley(queries="both", n_folds=1).fit(X, y, Xv, yv)


def test_a_damaged_cross_fit_in_memory_is_named():
    X, y, Xv, yv = blobs(10)
    r = KNNShapley(queries="both", random_state=0).fit(X, y, Xv, yv).result_
    r.extra["cross_fit"] = {"folds": [0]}
    with pytest.raises(ValueError, match=r"extra\['cross_fit'\]"):
        cleanse(r, KNeighborsClassifier(5), X, y, Xv, yv, rule="one_se")
