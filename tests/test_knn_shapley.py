"""KNNShapley: the closed form equals enumerated Shapley values of the k-NN utility."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from games import exact_shapley, knn_per_query
from tdshap.methods import KNNShapley, knn_shapley
from tdshap.methods.knn_shapley import _rank, clipped_targets, nearest_mask, nearest_sums


def knn_utility(X, y, X_val, y_val, k, task):
    """U(S) of the docstring, mean over validation points; ties by row position."""
    d = cdist(X_val, X, "sqeuclidean")

    def u(subset):
        s = np.asarray(subset, dtype=int)
        total = 0.0
        for v in range(len(y_val)):
            top = s[np.lexsort((s, d[v, s]))][:k] if len(s) else s
            if task == "classification":
                total += np.sum(y[top] == y_val[v]) / k
            else:
                total += -((np.sum(y[top]) / k - y_val[v]) ** 2)
        return total / len(y_val)

    return u


def tiny_game(seed, task, n=7, n_val=4, duplicates=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    if duplicates:  # exact distance ties: rows 1 and 4 are copies of row 0
        X[1] = X[4] = X[0]
    X_val = rng.normal(size=(n_val, 2))
    if task == "classification":
        return X, rng.integers(0, 3, n), X_val, rng.integers(0, 3, n_val)
    return X, 3 * rng.normal(size=n) + 1, X_val, rng.normal(size=n_val)


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 2, 3, 9])
def test_equals_enumerated_shapley(task, seed, k):
    X, y, Xv, yv = tiny_game(seed, task)
    exact, _ = exact_shapley(knn_utility(X, y, Xv, yv, k, task), len(y))
    got = KNNShapley(n_neighbors=k, task=task, center=False).fit(X, y, Xv, yv).values_
    np.testing.assert_allclose(got, exact, atol=1e-12)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_ties_broken_by_row_position(task):
    X, y, Xv, yv = tiny_game(5, task, n=8, duplicates=True)
    exact, _ = exact_shapley(knn_utility(X, y, Xv, yv, 3, task), len(y))
    got = KNNShapley(n_neighbors=3, task=task, center=False).fit(X, y, Xv, yv).values_
    np.testing.assert_allclose(got, exact, atol=1e-12)


@pytest.mark.parametrize("share", [0.0, 0.1, 1.0])
def test_rank_is_the_stable_order_whatever_the_ties(share):
    # the fast sort re-sorts tied rows (or everything, when ties are common) stably
    rng = np.random.default_rng(3)
    dist = rng.random((300, 40))
    tied = rng.random(300) < share
    dist[tied, :20] = np.round(dist[tied, :20], 1)  # several equal distances per row
    assert np.array_equal(_rank(dist), np.argsort(dist, axis=1, kind="stable"))


@pytest.mark.parametrize(("rows", "tied_rows"), [(300, [0, 5, 31]), (300, [32, 299]),
                                                  (3, [1]), (1, [0])])
def test_rank_breaks_exact_ties_by_column(rows, tied_rows):
    dist = np.random.default_rng(4).random((rows, 40))
    dist[np.ix_(tied_rows, [3, 7, 30])] = 0.5
    assert np.array_equal(_rank(dist), np.argsort(dist, axis=1, kind="stable"))


@pytest.mark.parametrize("columns", [2, 40, 3000])
def test_rank_orders_distances_closer_than_its_keys_tell_apart(columns):
    # the integer keys drop a distance's lowest bits: distances one float64 step apart
    # share a key and order by column, so the row is checked and, reversed, sorted again
    rng = np.random.default_rng(5)
    dist = rng.random((50, columns)) + 1.0
    dist[:, -1] = dist[:, 0]
    dist[::2, 0] = np.nextafter(dist[::2, -1], 3.0)  # the later column is the nearer
    dist[1::4, 1 % columns] = np.nextafter(dist[1::4, 0], 0.0)
    assert np.array_equal(_rank(dist), np.argsort(dist, axis=1, kind="stable"))


def test_rank_takes_zero_and_infinite_distances():
    # -0.0's bits would sort last as an integer; a query's own row is set to inf
    dist = np.array([[0.5, -0.0, 0.0, np.inf, 0.25], [np.inf, 0.0, 0.0, 1.0, -0.0]])
    assert np.array_equal(_rank(dist), np.argsort(dist, axis=1, kind="stable"))
    assert np.array_equal(_rank(dist.astype(np.float32)),
                          np.argsort(dist, axis=1, kind="stable"))
    # a value whose bits sort above infinity's (below 0, NaN) is ordered by argsort
    for odd in (-1e-300, np.nan):
        dist[1, 3] = odd
        assert np.array_equal(_rank(dist), np.argsort(dist, axis=1, kind="stable"))


def test_centred_regression_is_the_game_on_centred_targets():
    X, y, Xv, yv = tiny_game(8, "regression")
    y, yv = y + 40.0, yv + 40.0  # far from 0, where centring matters
    mu = y.mean()
    exact, _ = exact_shapley(knn_utility(X, y - mu, Xv, yv - mu, 2, "regression"), len(y))
    got = KNNShapley(n_neighbors=2).fit(X, y, Xv, yv).values_
    np.testing.assert_allclose(got, exact, atol=1e-10)
    # a constant added to every target changes nothing once centred, and much before
    moved = KNNShapley(n_neighbors=2).fit(X, y + 100.0, Xv, yv + 100.0).values_
    np.testing.assert_allclose(moved, got, atol=1e-9)
    raw = KNNShapley(n_neighbors=2, center=False)
    assert not np.allclose(raw.fit(X, y + 100.0, Xv, yv + 100.0).values_, got, atol=1e-3)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_efficiency_on_a_larger_game(task):
    X, y, Xv, yv = tiny_game(3, task, n=300, n_val=40)
    u = knn_utility(X, y, Xv, yv, 5, task)
    values = KNNShapley(task=task, center=False).fit(X, y, Xv, yv).values_
    assert values.sum() == pytest.approx(u(np.arange(len(y))) - u(()), rel=1e-9, abs=1e-12)


def test_invariances():
    X, y, Xv, yv = tiny_game(4, "classification", n=120, n_val=30)
    base = KNNShapley().fit(X, y, Xv, yv).values_
    perm = np.random.default_rng(0).permutation(len(y))
    # training rows permuted: values follow their rows (no ties in continuous data)
    np.testing.assert_allclose(KNNShapley().fit(X[perm], y[perm], Xv, yv).values_, base[perm],
                               atol=1e-12)
    # validation order, chunk size, a rigid motion of the features, renamed labels: no change
    vperm = np.random.default_rng(1).permutation(len(yv))
    np.testing.assert_allclose(KNNShapley(batch_size=7).fit(X, y, Xv[vperm], yv[vperm]).values_,
                               base, atol=1e-12)
    q, _ = np.linalg.qr(np.random.default_rng(2).normal(size=(2, 2)))
    moved = KNNShapley().fit(X @ q + 3.0, y, Xv @ q + 3.0, yv).values_
    np.testing.assert_allclose(moved, base, atol=1e-12)
    names = np.array(["a", "b", "c"])
    np.testing.assert_allclose(KNNShapley().fit(X, names[y], Xv, names[yv]).values_, base)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_training_queries_same_with_distances_once_or_per_chunk(task, monkeypatch):
    # 150 rows: several chunks of training queries, each reading its rows of the distances
    # computed once (or, past MAX_SQUARE_ENTRIES, its own), and many ranks beyond K
    X, y, Xv, yv = tiny_game(5, task, n=150, n_val=40)
    kw = dict(n_neighbors=4, task=task, queries="both", own_label=True,
              query_clip=2.0 if task == "regression" else None)
    once = KNNShapley(**kw).fit(X, y, Xv, yv).values_
    monkeypatch.setattr(knn_shapley, "MAX_CHUNK_ENTRIES", 150 * 16)
    small = KNNShapley(**kw).fit(X, y, Xv, yv).values_
    monkeypatch.setattr(knn_shapley, "MAX_SQUARE_ENTRIES", 0)
    per_chunk = KNNShapley(**kw).fit(X, y, Xv, yv).values_
    whole = KNNShapley(**kw, batch_size=200).fit(X, y, Xv, yv).values_
    for got in (small, per_chunk, whole):
        np.testing.assert_allclose(got, once, rtol=1e-12, atol=1e-12)


def test_mislabelled_row_is_lowest():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 1, (40, 2)), rng.normal(3, 1, (40, 2))])
    y = np.repeat([0, 1], 40)
    Xv = np.vstack([rng.normal(-3, 1, (20, 2)), rng.normal(3, 1, (20, 2))])
    yv = np.repeat([0, 1], 20)
    y[7] = 1  # deep inside class 0's blob
    m = KNNShapley().fit(X, y, Xv, yv)
    assert np.argmin(m.values_) == 7
    assert m.harmful_[7] and m.values_[7] < 0
    assert m.harmful_.sum() < 10  # clean rows of a separable problem help


def test_result_and_estimator_settings():
    X, y, Xv, yv = tiny_game(6, "regression", n=50, n_val=12)
    frame = pd.DataFrame(X, index=[f"r{i}" for i in range(50)])
    m = KNNShapley(KNeighborsRegressor(n_neighbors=3)).fit(frame, y, Xv, yv)
    assert m.n_neighbors_ == 3 and m.task_ == "regression"
    r = m.result_
    assert r.algorithm == "knn_shapley" and r.threshold == 0.0
    np.testing.assert_array_equal(r.is_harmful, r.values <= 0)
    assert (r.counts == 12).all() and (r.stderr == 0).all()
    assert list(r.to_dataframe().index[:2]) == ["r0", "r1"]
    assert r.extra["center"] is True
    # n_neighbors given wins over the estimator's
    same = KNNShapley(n_neighbors=3, task="regression").fit(X, y, Xv, yv).values_
    np.testing.assert_allclose(same, r.values)
    # a pipeline's scaler is fitted once on the training rows
    piped = KNNShapley(make_pipeline(StandardScaler(), KNeighborsClassifier(4)))
    Xc, yc, Xvc, yvc = tiny_game(7, "classification", n=40, n_val=10)
    scaler = StandardScaler().fit(Xc)
    direct = KNNShapley(n_neighbors=4).fit(scaler.transform(Xc), yc, scaler.transform(Xvc), yvc)
    np.testing.assert_allclose(piped.fit(Xc, yc, Xvc, yvc).values_, direct.values_)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"estimator": KNeighborsClassifier(weights="distance")}, "uniform"),
        ({"estimator": KNeighborsClassifier(metric="manhattan")}, "Euclidean"),
        ({"estimator": DecisionTreeClassifier()}, "k-nearest"),
        ({"metric": "neg_mae"}, "fixed utility"),
        ({"n_neighbors": 0}, "n_neighbors"),
        # the estimator's own count, which scikit-learn checks only when fitting (these
        # gave values for -1, NaN values for 0, a TypeError for None)
        ({"estimator": KNeighborsClassifier(n_neighbors=-1)}, "n_neighbors=-1"),
        ({"estimator": KNeighborsClassifier(n_neighbors=0)}, "n_neighbors=0"),
        ({"estimator": KNeighborsClassifier(n_neighbors=None)}, "n_neighbors=None"),
        ({"estimator": KNeighborsClassifier(n_neighbors="5")}, "n_neighbors='5'"),
        # beyond what K times a rank holds in int64: an OverflowError from deep inside for
        # 1e300 and 2**70, silently wrapped (wrong) values for 10**18
        ({"n_neighbors": 1e300}, "n_neighbors=1e[+]300 must be a whole number from 1 to"),
        ({"n_neighbors": 2**70}, "n_neighbors=1180591620717411303424 must be"),
        ({"n_neighbors": 10**18}, "n_neighbors=1000000000000000000 must be"),
        ({"n_neighbors": float("inf")}, "n_neighbors=inf must be a whole number"),
        ({"estimator": KNeighborsClassifier(n_neighbors=1e300)}, "n_neighbors=1e[+]300 must"),
        ({"task": "ranking"}, "task"),
    ],
)
def test_bad_settings_are_explained(kwargs, match):
    X, y, Xv, yv = tiny_game(0, "classification")
    with pytest.raises(ValueError, match=match):
        KNNShapley(**kwargs).fit(X, y, Xv, yv)


# -- the training rows as queries ----------------------------------------------------
def self_query_utility(X, y, k, task):
    """U(S) = (1/N) Σ_j U_j(S minus j): every training row a query for the others."""
    games = [knn_utility(X, y, X[j:j + 1], y[j:j + 1], k, task) for j in range(len(y))]

    def u(subset):
        return np.mean([g(tuple(i for i in subset if i != j)) for j, g in enumerate(games)])

    return u


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_training_queries_equal_enumerated_shapley(task, seed, k):
    X, y, _, _ = tiny_game(seed, task)
    exact, _ = exact_shapley(self_query_utility(X, y, k, task), len(y))
    got = KNNShapley(n_neighbors=k, task=task, center=False, queries="training").fit(X, y)
    np.testing.assert_allclose(got.values_, exact, atol=1e-12)


def test_training_queries_never_see_the_validation_rows():
    X, y, Xv, yv = tiny_game(2, "classification", n=60, n_val=20)
    alone = KNNShapley(queries="training", batch_size=7).fit(X, y).result_
    given = KNNShapley(queries="training").fit(X, y, Xv, yv).result_
    np.testing.assert_allclose(alone.values, given.values, atol=1e-15)
    assert alone.extra["validation_free"] and alone.extra["eligible_by"] == "value"
    assert (alone.counts == 60).all()
    # the variances are the spread of the rows' contributions over the 60 queries
    Xa, ya = np.asarray(X), np.asarray(y)
    per_query = knn_per_query(Xa, ya, Xa, ya, 5, "classification", np.arange(60))
    np.testing.assert_allclose(alone.values, per_query.mean(axis=0), atol=1e-15)
    np.testing.assert_allclose(alone.variances, per_query.var(axis=0, ddof=1), atol=1e-15)
    assert (per_query[np.arange(60), np.arange(60)] == 0).all()  # no row queries itself


def test_training_queries_cut_takes_the_rows_below_tau():
    from tdshap.cut import eligible_rows

    X, y, _, _ = tiny_game(4, "classification", n=80)
    r = KNNShapley(queries="training").fit(X, y).result_
    below = r.values < 0
    assert below.any() and (below & ~r.is_credibly_harmful).any()  # intervals wider than 0
    np.testing.assert_array_equal(eligible_rows(r), below)


@pytest.mark.parametrize(
    ("kwargs", "data", "match"),
    [
        ({"queries": "test"}, "full", "queries="),
        ({}, "no_validation", "needs X_val and y_val"),
        ({"queries": "training"}, "one_row", "at least 2 training rows"),
    ],
)
def test_bad_queries_are_explained(kwargs, data, match):
    X, y, Xv, yv = tiny_game(0, "classification")
    args = {"full": (X, y, Xv, yv), "no_validation": (X, y), "one_row": (X[:1], y[:1])}[data]
    with pytest.raises(ValueError, match=match):
        KNNShapley(**kwargs).fit(*args)


def test_find_harmful_defaults_value_a_knn_by_training_and_validation_queries():
    from tdshap import find_harmful
    from tdshap.app.report import text_report

    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(-2, 1, (150, 2)), rng.normal(2, 1, (150, 2))])
    y = np.repeat([0, 1], 150)
    order = rng.permutation(len(y))
    X, y = X[order], y[order]
    flipped = np.flatnonzero(np.abs(X[:, 0]) > 2)[:6]  # deep inside a blob
    rows = find_harmful(X, np.where(np.isin(np.arange(len(y)), flipped), 1 - y, y),
                        KNeighborsClassifier(5), random_state=0)
    run = rows.run
    assert run.settings["method"].value == "knn_shapley"
    assert run.result.extra["queries"] == "both" and "cross_fit" in run.result.extra
    assert not run.result.extra.get("validation_free")
    valued = [i for i in flipped if i in rows.index]
    assert valued and set(valued) <= set(rows["value"].nsmallest(len(valued) + 2).index)
    text = text_report(run)
    assert "exact k-NN Shapley on the training and validation rows" in text
    assert "the values are exact for these rows" in text
    assert "half for the validation rows" in text
    # the training queries alone, by name
    alone = find_harmful(X, y, KNeighborsClassifier(5), method="knn_shapley_train",
                         random_state=0).run
    assert alone.result.extra["queries"] == "training" and alone.result.extra["validation_free"]


def test_a_time_budget_below_the_closed_form_is_refused_before_it_runs():
    from tdshap import find_harmful

    X, y, _, _ = tiny_game(1, "classification", n=200)
    with pytest.raises(ValueError, match=r"closed form that cannot stop part-way.*time_budget"):
        find_harmful(X, y, KNeighborsClassifier(5), time_budget=1e-9)
    # the bandit stops at a budget: its first pass is what is checked
    with pytest.raises(ValueError, match="first pass"):
        find_harmful(X, y, KNeighborsClassifier(5), time_budget=1e-9, method="tdoob")


def test_find_harmful_values_another_classifier_by_a_knn_proxy_and_cuts_with_it():
    from sklearn.datasets import make_classification

    from tdshap import find_harmful
    from tdshap.app.report import text_report

    X, y = make_classification(400, 6, n_informative=4, class_sep=1.5, random_state=0)
    X[:, 0] *= 1000.0  # features on very different scales: the proxy standardises them
    flipped = np.random.default_rng(0).choice(200, 20, replace=False)
    y_train = y[:200].copy()
    y_train[flipped] = 1 - y_train[flipped]
    tree = DecisionTreeClassifier(max_depth=5, random_state=0)
    rows = find_harmful(X[:200], y_train, tree, X_val=X[200:300], y_val=y[200:300],
                        X_test=X[300:], y_test=y[300:], random_state=0)
    run = rows.run
    assert run.settings["method"].value == "knn_shapley_proxy"
    # the same values as the 5-NN of the standardised rows, queried by both sets of rows
    scaler = StandardScaler().fit(X[:200])
    alone = KNNShapley(n_neighbors=5, queries="both", random_state=0).fit(
        scaler.transform(X[:200]), y_train, scaler.transform(X[200:300]), y[200:300])
    np.testing.assert_allclose(run.result.values, alone.values_, atol=1e-15)
    lowest = np.argsort(run.result.values)[:20]
    assert np.isin(lowest, flipped).mean() >= 0.7
    # the cut refits the tree (no neighbour lists for it)
    assert run.cleansing is not None and run.cleansing.extra["n_fits"] > 0
    assert "refit every cut" in str(run.cleansing.extra["path_note"])
    text = text_report(run)
    assert "a proxy for the model" in text and "standing in for the model" in text
    line = run.extra["estimate"].line(None)
    assert "a proxy that fits no DecisionTreeClassifier" in line


def test_a_cut_that_leaves_one_class_is_that_class_not_a_failure():
    from sklearn.linear_model import LogisticRegression

    from tdshap import find_harmful

    # 2% minority: both valuations rank the minority rows lowest, and the cuts that
    # remove them all leave logistic regression one class, which it refuses to fit
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    y = (rng.random(500) < 0.02).astype(int)
    y[:4] = 1
    for method in ("auto", "tdoob"):
        rows = find_harmful(X, y, LogisticRegression(), random_state=0, method=method)
        c = rows.run.cleansing
        assert c is not None and c.extra["n_one_class_fits"] > 0
        assert c.extra["n_failed_fits"] == 0


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_one_block_of_training_queries_equals_many_blocks_with_ties(task):
    # one block takes the symmetric distances (pdist), many blocks cdist: same values
    rng = np.random.default_rng(3)
    X, Xv = rng.integers(0, 3, size=(80, 3)).astype(float), rng.integers(0, 3, size=(30, 3))
    y = rng.integers(0, 2, 80) if task == "classification" else rng.normal(size=80)
    yv = rng.integers(0, 2, 30) if task == "classification" else rng.normal(size=30)
    est = KNeighborsClassifier(3) if task == "classification" else KNeighborsRegressor(3)
    whole = KNNShapley(est, queries="both", random_state=0).fit(X, y, Xv, yv).result_
    parts = KNNShapley(est, queries="both", random_state=0, batch_size=9).fit(
        X, y, Xv, yv).result_
    # (the blocks' sums are added in another order: equal to rounding)
    np.testing.assert_allclose(whole.values, parts.values, rtol=0, atol=1e-15)
    np.testing.assert_allclose(whole.variances, parts.variances, rtol=1e-12, atol=1e-18)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_many_features_take_the_matrix_product_with_the_same_ties(task, monkeypatch):
    # from _PRODUCT_MIN_FEATURES on, |a|² + |b|² - 2 a·b replaces the feature-by-feature
    # sums; whole-number features keep every tie exact, so the stable order is the same
    from tdshap.methods import knn_shapley

    rng = np.random.default_rng(4)
    X, Xv = rng.integers(0, 3, size=(70, 24)).astype(float), rng.integers(0, 3, size=(30, 24))
    X[10:20] = X[:10]  # duplicated rows: equal distances to every query
    y = rng.integers(0, 2, 70) if task == "classification" else rng.normal(size=70)
    yv = rng.integers(0, 2, 30) if task == "classification" else rng.normal(size=30)

    def values(min_features: int) -> np.ndarray:
        monkeypatch.setattr(knn_shapley, "_PRODUCT_MIN_FEATURES", min_features)
        return KNNShapley(n_neighbors=3, task=task, queries="both", random_state=0).fit(
            X, y, Xv, yv).result_.values

    assert knn_shapley._PRODUCT_MIN_FEATURES <= X.shape[1]
    np.testing.assert_array_equal(values(knn_shapley._PRODUCT_MIN_FEATURES), values(10**6))


def test_find_harmful_values_a_regressor_by_a_knn_regressor_proxy_on_the_training_rows():
    from sklearn.tree import DecisionTreeRegressor

    from tdshap import find_harmful
    from tdshap.app import valuer
    from tdshap.app.report import method_label, text_report

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    X[:, 1] *= 1000.0  # the proxy standardises the rows
    y = X[:, 0] + X[:, 1] / 1000.0 + 0.1 * rng.normal(size=400)
    shifted = rng.choice(200, 20, replace=False)
    y_train = y[:200].copy()
    y_train[shifted] += 3.0 * y.std()
    tree = DecisionTreeRegressor(max_depth=5, random_state=0)
    rows = find_harmful(X[:200], y_train, tree, X_val=X[200:300], y_val=y[200:300],
                        X_test=X[300:], y_test=y[300:], method="knn_shapley_proxy",
                        random_state=0)
    run = rows.run
    # the 5-NN regressor of the standardised rows on the training rows alone: its values
    # never saw the validation rows; the queries' targets clipped as find_harmful's default
    scaler = StandardScaler().fit(X[:200])
    assert valuer.QUERY_CLIP is not None
    alone = KNNShapley(KNeighborsRegressor(5), queries="training",
                       query_clip=valuer.QUERY_CLIP).fit(scaler.transform(X[:200]), y_train)
    assert run.result.extra["query_clip"] == valuer.QUERY_CLIP
    np.testing.assert_allclose(run.result.values, alone.values_, atol=1e-12)
    assert run.result.extra["validation_free"]
    assert np.isin(np.argsort(run.result.values)[:20], shifted).mean() >= 0.8
    assert run.cleansing is not None and run.cleansing.extra["n_fits"] > 0  # the tree refitted
    assert method_label(run) == "exact 5-NN Shapley on the training rows, a proxy for the model"
    assert "standing in for the model" in text_report(run)


def brute_own_support(X, y, k, task):
    """Each row's K nearest other rows (ties by row position) backing its own label."""
    d = cdist(X, X, "sqeuclidean")
    if task == "regression":  # as the values: centred (it matters where K > N - 1)
        y = y - y.mean()
    support = np.empty(len(y))
    for j in range(len(y)):
        others = np.array([i for i in range(len(y)) if i != j])
        top = others[np.lexsort((others, d[j, others]))][:k]
        if task == "regression":
            support[j] = -((np.sum(y[top]) / k - y[j]) ** 2)
        else:
            votes = {c: np.sum(y[top] == c) for c in np.unique(y)}
            best_other = max([v for c, v in votes.items() if c != y[j]], default=0)
            support[j] = (votes[y[j]] - best_other) / k
    return support


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("queries", ["training", "both"])
@pytest.mark.parametrize("k", [1, 3, 9])
def test_own_label_adds_each_rows_own_query_to_its_shapley_value(task, queries, k):
    # ties included (rows 1 and 4 copy row 0), and K beyond the N - 1 other rows
    X, y, Xv, yv = tiny_game(6, task, n=8, duplicates=True)
    kw = dict(n_neighbors=k, task=task, queries=queries, random_state=0)
    exact = KNNShapley(**kw).fit(X, y, Xv, yv).result_
    own = KNNShapley(**kw, own_label=True).fit(X, y, Xv, yv).result_
    support = brute_own_support(X, y, k, task)
    terms = support - support.mean() if task == "regression" else support
    share = 0.5 if queries == "both" else 1.0  # "both": half the training queries' mean
    np.testing.assert_allclose(own.values - exact.values, share * terms / len(y), atol=1e-12)
    assert own.extra["own_label"] and not exact.extra["own_label"]
    if task == "regression":  # centred: value moves between rows, none is added
        assert own.values.sum() == pytest.approx(exact.values.sum(), abs=1e-12)
    if queries == "both":  # each fold's values carry the same own terms
        for a, b in zip(own.extra["cross_fit"]["values"], exact.extra["cross_fit"]["values"],
                        strict=True):
            np.testing.assert_allclose(np.asarray(a) - np.asarray(b), share * terms / len(y),
                                       atol=1e-12)


def test_own_label_settings_are_explained():
    X, y, Xv, yv = tiny_game(0, "classification")
    with pytest.raises(ValueError, match="needs the training rows as queries"):
        KNNShapley(own_label=True).fit(X, y, Xv, yv)


@pytest.mark.parametrize("value", [1, "no"])
def test_own_label_is_a_switch_like_every_other(value):
    # its own check raised ValueError; every other True/False switch raises TypeError
    X, y, Xv, yv = tiny_game(0, "classification")
    with pytest.raises(TypeError, match=rf"^own_label={value!r} must be True or False\.$"):
        KNNShapley(own_label=value, queries="both").fit(X, y, Xv, yv)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("k", [1, 3])
def test_query_clip_is_the_training_queries_game_with_clipped_query_targets(seed, k):
    X, y, _, _ = tiny_game(seed, "regression")
    y[2] += 40.0  # an outlier target: its query's game is the one clipped
    d = cdist(X, X, "sqeuclidean")
    others = [np.array([i for i in range(len(y)) if i != j]) for j in range(len(y))]
    # each row's k-NN prediction by the others (ties by position; the sum over k)
    predicted = np.array([y[o[np.lexsort((o, d[j, o]))][:k]].sum() / k
                          for j, o in enumerate(others)])
    residuals = y - predicted
    spread = 1.4826 * np.median(np.abs(residuals - np.median(residuals)))
    clipped = predicted + np.clip(residuals, -1.5 * spread, 1.5 * spread)
    assert clipped[2] < y[2]  # the setting changes something
    games = [knn_utility(X, y, X[j:j + 1], clipped[j:j + 1], k, "regression")
             for j in range(len(y))]

    def u(subset):  # the rows keep their targets as neighbours; only the queries' change
        return np.mean([g(tuple(i for i in subset if i != j)) for j, g in enumerate(games)])

    exact, _ = exact_shapley(u, len(y))
    kw = dict(n_neighbors=k, task="regression", center=False, queries="training")
    got = KNNShapley(**kw, query_clip=1.5).fit(X, y).result_
    np.testing.assert_allclose(got.values, exact, atol=1e-12)
    assert got.extra["query_clip"] == 1.5
    chunked = KNNShapley(**kw, query_clip=1.5, batch_size=2).fit(X, y).values_
    np.testing.assert_allclose(chunked, got.values, atol=1e-12)
    # a width beyond every target clips nothing: the exact values as before
    wide = KNNShapley(**kw, query_clip=1e6).fit(X, y).values_
    np.testing.assert_allclose(wide, KNNShapley(**kw).fit(X, y).values_, atol=1e-12)


@pytest.mark.parametrize("k", [1, 3, 7, 12])
def test_nearest_mask_is_the_first_k_of_the_stable_order_whatever_the_ties(k):
    rng = np.random.default_rng(k)
    dist = rng.integers(0, 4, size=(30, 12)).astype(float)  # ties everywhere
    dist[0] = 1.0  # a row all tied
    expected = np.zeros_like(dist)
    np.put_along_axis(expected, _rank(dist)[:, :k], 1.0, axis=1)
    np.testing.assert_array_equal(nearest_mask(dist, k), expected)
    if k < dist.shape[1]:  # the sums over those columns, from one partition
        values = rng.normal(size=dist.shape[1])
        np.testing.assert_allclose(nearest_sums(dist, values, k), expected @ values,
                                   rtol=1e-12, atol=1e-12)
        # no ties: every row from the partition alone
        distinct = rng.permutation(dist.size).reshape(dist.shape).astype(float)
        mask = np.zeros_like(dist)
        np.put_along_axis(mask, _rank(distinct)[:, :k], 1.0, axis=1)
        np.testing.assert_allclose(nearest_sums(distinct, values, k), mask @ values,
                                   rtol=1e-12, atol=1e-12)


def test_find_harmful_clips_a_regressors_queries_and_not_a_classifiers():
    from tdshap import find_harmful
    from tdshap.app import valuer
    from tdshap.app.report import text_report

    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=120)
    y[:6] += 10.0  # far-off targets: clipped as queries
    run = find_harmful(X[:80], y[:80], KNeighborsRegressor(5), X_val=X[80:], y_val=y[80:],
                       method="knn_shapley_train", cleanse=False, random_state=0).run
    assert run.result.extra["query_clip"] == valuer.QUERY_CLIP
    assert f"targets clipped at {valuer.QUERY_CLIP:g} robust SD" in text_report(run)
    exact = KNNShapley(KNeighborsRegressor(5), queries="training")
    scaled = StandardScaler().fit_transform(X[:80])  # as find_harmful gives a k-NN its rows
    clipped = exact.set_params(query_clip=valuer.QUERY_CLIP).fit(scaled, y[:80]).values_
    np.testing.assert_allclose(run.result.values, clipped, atol=1e-12)
    given = exact.set_params(query_clip=None).fit(scaled, y[:80]).values_
    assert not np.allclose(run.result.values, given)
    labels = (y > 0).astype(int)
    run = find_harmful(X[:80], labels[:80], KNeighborsClassifier(5), X_val=X[80:],
                       y_val=labels[80:], cleanse=False, random_state=0).run
    assert "query_clip" not in run.result.extra


def test_query_clip_uses_the_spread_where_most_residuals_are_equal():
    # more than half the rows predicted exactly: a median absolute deviation of 0 would
    # clip every query's target to its prediction; their standard deviation is taken
    predicted = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    residuals = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 5.0, -5.0])
    spread = residuals.std()
    np.testing.assert_allclose(clipped_targets(predicted + residuals, predicted, 1.0),
                               predicted + np.clip(residuals, -spread, spread))
    X, y, _, _ = tiny_game(0, "regression")
    y[:5] = 1.0
    values = KNNShapley(n_neighbors=2, task="regression", queries="training",
                        query_clip=1.0).fit(X, y).values_
    assert np.isfinite(values).all()


@pytest.mark.parametrize(("kwargs", "task", "match"), [
    ({"query_clip": 3.0}, "regression", "needs queries 'training' or 'both'"),
    ({"query_clip": -1.0, "queries": "training"}, "regression", "query_clip=-1.0 must be"),
    ({"query_clip": "3", "queries": "training"}, "regression", "query_clip='3' must be"),
    ({"query_clip": 3.0, "queries": "training"}, "classification", "is for regression"),
])
def test_query_clip_settings_are_explained(kwargs, task, match):
    X, y, Xv, yv = tiny_game(0, task)
    with pytest.raises(ValueError, match=match):
        KNNShapley(task=task, **kwargs).fit(X, y, Xv, yv)



def test_query_clip_on_whole_number_targets_read_as_classes_says_to_give_the_task():
    # counts (or 1e70s) with no task and no estimator are read as classes: the message said
    # only to drop the clip, not that the task was the fix
    X, y, _, _ = tiny_game(0, "regression")
    counts = np.round(np.abs(y) * 4)
    with pytest.raises(ValueError, match="read as class labels; give task='regression'"):
        KNNShapley(queries="training", query_clip=3.0).fit(X, counts)
    assert np.isfinite(KNNShapley(queries="training", query_clip=3.0, task="regression")
                       .fit(X, counts).values_).all()
    with pytest.raises(ValueError, match=r"cannot be clipped: give query_clip=None\.$"):
        KNNShapley(KNeighborsClassifier(2), queries="training", query_clip=3.0).fit(X, counts)


@pytest.mark.parametrize("queries", ["validation", "training"])
def test_regression_targets_too_small_to_square_are_refused(queries):
    # 1e-200 targets gave values of 0 (their squares underflow): every row harmful
    X, y, Xv, yv = tiny_game(0, "regression")
    with pytest.raises(ValueError, match="too small to square"):
        KNNShapley(task="regression", queries=queries).fit(X, y * 1e-200, Xv, yv * 1e-200)
    small = KNNShapley(task="regression", queries=queries).fit(X, y * 1e-100, Xv, yv * 1e-100)
    plain = KNNShapley(task="regression", queries=queries).fit(X, y, Xv, yv)
    np.testing.assert_array_equal(small.harmful_, plain.harmful_)

def test_a_pipeline_step_with_sparse_output_is_made_dense_and_a_failing_one_named():
    # a OneHotEncoder's sparse output ended in numpy's "setting an array element with a
    # sequence" (find_harmful's too); a category the encoder never saw in scikit-learn's
    # error from deep inside
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    X, Xv = rng.integers(0, 3, size=(40, 3)).astype(float), rng.integers(0, 3, size=(20, 3))
    y, yv = (X[:, 0] > 0).astype(int), (Xv[:, 0] > 0).astype(int)
    sparse, dense = (KNNShapley(make_pipeline(OneHotEncoder(sparse_output=s),
                                              KNeighborsClassifier(3))).fit(X, y, Xv, yv).values_
                     for s in (True, False))
    np.testing.assert_array_equal(sparse, dense)
    Xv[0, 0] = 7
    with pytest.raises(ValueError, match=r"KNNShapley: the Pipeline's steps before the k-NN "
                       r"failed \(ValueError: Found unknown categories"):
        KNNShapley(make_pipeline(OneHotEncoder(), KNeighborsClassifier(3))).fit(X, y, Xv, yv)


def _first_rows(Z):
    return Z[:5]


@pytest.mark.parametrize("method", ["KNNShapley", "KNNOutOfBag"])
def test_pipeline_steps_that_drop_rows_are_refused_by_name(method) -> None:
    # KNNShapley's IndexError ("index 5 is out of bounds") and KNNOutOfBag's numpy
    # "operands could not be broadcast" from deep inside
    from sklearn.preprocessing import FunctionTransformer

    from tdshap.methods import KNNOutOfBag

    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(40, 3)), rng.normal(size=(20, 3))
    y, yv = (X[:, 0] > 0).astype(int), (Xv[:, 0] > 0).astype(int)
    model = make_pipeline(FunctionTransformer(_first_rows), KNeighborsClassifier(3))
    with pytest.raises(ValueError, match=rf"{method}: the Pipeline's steps before the k-NN "
                       r"turn 40 rows into an array of shape \(5, 3\): each step must keep "
                       r"one row per row"):
        (KNNShapley(model) if method == "KNNShapley" else KNNOutOfBag(model)).fit(
            X, y, Xv, yv)


def test_regression_targets_too_large_to_square_are_refused() -> None:
    rng = np.random.default_rng(0)
    X, X_val = rng.normal(size=(30, 2)), rng.normal(size=(10, 2))
    y, y_val = rng.normal(size=30), rng.normal(size=10)
    for big_y, big_val in ((y * 1e200, y_val), (y, y_val * 1e200)):  # the values were NaN
        with pytest.raises(ValueError, match=r"y \(with y_val\) has values too large to "
                           r"square \(up to .*e\+2\d\d\): rescale it"):
            KNNShapley(KNeighborsRegressor(n_neighbors=3)).fit(X, big_y, X_val, big_val)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow of the unused spread said nothing
        values = KNNShapley(KNeighborsRegressor(n_neighbors=3)).fit(X, y * 1e100, X_val,
                                                                     y_val * 1e100).values_
    assert np.isfinite(values).all()  # large but squarable: valued as before
    # the training queries' values are squared again for their spread: NaN variances (and
    # rows called credibly harmful on them) before
    with pytest.raises(ValueError, match="too large to square"):
        KNNShapley(KNeighborsRegressor(n_neighbors=3), queries="training").fit(X, y * 1e100)
    result = KNNShapley(KNeighborsRegressor(n_neighbors=3), queries="both").fit(
        X, y * 1e60, X_val, y_val * 1e60).result_
    assert np.isfinite(result.values).all() and np.isfinite(result.variances).all()
