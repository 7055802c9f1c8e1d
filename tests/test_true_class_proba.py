"""The true-class-probability utility: scorer, exact k-NN fast path, fallbacks."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.tree import DecisionTreeClassifier

from tdshap import TDShap
from tdshap.app.run import TDShapOptions
from tdshap.app.valuer import choose_method, make_valuer
from tdshap.utility import Utility
from tdshap.utility.fast import NeighborsChainUtility
from tdshap.utility.metrics import resolve_metric


def test_scorer_is_the_mean_probability_of_the_true_class() -> None:
    X = np.array([[0.0], [0.1], [1.0], [1.1]])
    model = KNeighborsClassifier(2).fit(X, np.array([0, 1, 1, 1]))
    spec = resolve_metric("true_class_proba")
    # neighbours of 0.0: rows 0 and 1 (classes 0, 1) -> P(0) = 0.5; of 1.0: two 1s -> 1.0
    got = spec.score(model, np.array([[0.0], [1.0], [1.0]]), np.array([0, 1, 5]))
    assert got == pytest.approx((0.5 + 1.0 + 0.0) / 3)


def _brute(X: np.ndarray, y: np.ndarray, Xv: np.ndarray, yv: np.ndarray, S: np.ndarray,
           k: int) -> float:
    """The k-NN true-class-probability game, equal distances ranked by row number."""
    S = np.sort(S)
    d = ((X[S][:, None, :] - Xv[None]) ** 2).sum(-1)
    out = []
    for v in range(len(Xv)):
        order = sorted(range(len(S)), key=lambda j: (d[j, v], S[j]))[:k]
        out.append(np.mean(y[S][order] == yv[v]))
    return float(np.mean(out))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_path_equals_the_game_with_many_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, (30, 2)).astype(float)  # integer grid: ties everywhere
    y = rng.integers(0, 3, 30)
    Xv, yv = rng.integers(0, 3, (12, 2)).astype(float), rng.integers(0, 3, 12)
    k = 3
    u = NeighborsChainUtility(KNeighborsClassifier(k), "true_class_proba", X, y, Xv, yv,
                              run_seed=0)
    for _ in range(10):
        perm = rng.permutation(30)
        p = int(rng.integers(k, 15))
        scores = u.evaluate_chain(perm[:p], perm[p : p + 10], 0)
        want = [_brute(X, y, Xv, yv, perm[: p + j], k) for j in range(11)]
        np.testing.assert_allclose(scores, want, atol=1e-12)
    assert u.n_fast_declined == 0  # ties are part of the game, not a reason to refit


def test_fast_path_equals_refits_without_ties() -> None:
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 3, 40)
    Xv, yv = rng.normal(size=(25, 3)), rng.integers(0, 3, 25)
    for weights in ("uniform", "distance"):
        est = KNeighborsClassifier(5, weights=weights)
        fast = TDShap(est, "true_class_proba", k=10, n_min=0, max_iter=5,
                      random_state=0).fit(X, y, Xv, yv).result_
        slow = TDShap(est, "true_class_proba", k=10, n_min=0, max_iter=5, random_state=0,
                      fast_path=False).fit(X, y, Xv, yv).result_
        assert fast.extra["fast_path"] == "kneighbors"
        np.testing.assert_allclose(fast.values, slow.values, atol=1e-12)


@pytest.mark.parametrize("metric", ["neg_log_loss", "neg_brier_score", "true_class_proba"])
def test_probability_metrics_survive_the_constant_fallback(metric: str) -> None:
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 2)), np.repeat([0, 1], 15)
    Xv, yv = rng.normal(size=(20, 2)), np.repeat([0, 1], 10)
    # the constant model a failed or empty fit falls back to is scored like any model
    utility = Utility(LogisticRegression(), metric, X, y, Xv, yv)
    assert np.isfinite(utility.fallback_score(np.array([0, 1])))
    r = TDShap(LogisticRegression(), metric, k=5, n_min=0, max_iter=2,
               random_state=0).fit(X, y, Xv, yv).result_
    assert np.isfinite(r.values).all()


@pytest.mark.parametrize(("metric", "loss"), [("neg_log_loss", "log_loss"),
                                            ("neg_brier_score", "brier_score_loss")])
def test_probability_losses_score_rows_that_lack_a_class_of_the_model(metric: str,
                                                                      loss: str) -> None:
    import sklearn.metrics

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 2)), np.repeat([0, 1, 2], 20)
    model = LogisticRegression().fit(X, y)
    spec = resolve_metric(metric)
    # scikit-learn's scorer took the classes from the rows: "different number of classes"
    Xv, yv = X[:40], y[:40]  # classes 0 and 1 only
    expected = -getattr(sklearn.metrics, loss)(yv, model.predict_proba(Xv), labels=[0, 1, 2])
    assert spec.score(model, Xv, yv) == pytest.approx(expected)
    # with every class present it scores as scikit-learn's scorer does
    assert spec.score(model, X, y) == pytest.approx(sklearn.metrics.get_scorer(metric)(
        model, X, y))


def test_auto_method_is_thresholding_data_oob_and_tdshap_keeps_the_metric() -> None:
    assert choose_method(KNeighborsClassifier(), "auto")[0] == "tdoob"
    assert choose_method(DecisionTreeClassifier(), "auto")[0] == "tdoob"
    # the closed form on request, for k-NN classifiers only
    assert choose_method(KNeighborsClassifier(), "knn_oob")[0] == "knn_oob"
    for other in (DecisionTreeClassifier(), KNeighborsRegressor(),
                  KNeighborsClassifier(weights="distance")):
        with pytest.raises(ValueError, match="k-NN classifiers only"):
            choose_method(other, "knn_oob")
    assert choose_method(KNeighborsRegressor(), "tdshap")[0] == "tdshap"
    with pytest.raises(ValueError, match="method="):
        choose_method(KNeighborsClassifier(), "best")
    o = TDShapOptions()
    auto = make_valuer(KNeighborsClassifier(), "accuracy", set(), "auto", o, 0, False, {})
    assert auto.metric == "true_class_proba"  # out-of-bag probability of the own label
    closed = make_valuer(KNeighborsClassifier(), "accuracy", set(), "knn_oob", o, 0, False, {})
    assert closed.method == "knn_oob" and closed.metric == "true_class_proba"
    given = make_valuer(KNeighborsClassifier(), "accuracy", {"metric"}, "auto", o, 0, False,
                        {})
    assert given.metric == "accuracy"
    paper = make_valuer(KNeighborsClassifier(), "accuracy", set(), "tdshap", o, 0, False, {})
    assert paper.metric == "accuracy"


def test_the_proxy_for_a_knn_names_the_metric_it_does_not_use() -> None:
    # the proxy's distances are Euclidean; the reason called the k-NN a tree, a forest, an
    # MLP or a linear classifier and did not say which metric was set aside
    for knn, words in ((KNeighborsClassifier(metric="manhattan"), "metric='manhattan'"),
                       (KNeighborsClassifier(p=1), "metric='minkowski', p=1")):
        method, why = choose_method(knn, "auto", 300)
        assert method == "knn_shapley_proxy"
        assert f"a k-NN without the closed form: {words}: KNNShapley uses the Euclidean" in why
    why = choose_method(DecisionTreeClassifier(), "auto", 300)[1]
    assert "a tree, forest, MLP or linear classifier" in why


def test_auto_takes_exact_knn_shapley_for_a_knn_up_to_its_row_limit() -> None:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from tdshap.app.valuer import KNN_SHAPLEY_MAX_ROWS
    from tdshap.methods import KNNShapley

    small, large = 300, KNN_SHAPLEY_MAX_ROWS + 1
    for knn in (KNeighborsClassifier(), KNeighborsRegressor(3),
                make_pipeline(StandardScaler(), KNeighborsClassifier())):
        # classifiers: training and validation queries; regressors: the bandit at every
        # size (the closed form ranked subtle target noise worse)
        closed = "knn_shapley" if is_classifier(knn) else "tdoob"
        assert choose_method(knn, "auto", small)[0] == closed
        assert choose_method(knn, "auto", KNN_SHAPLEY_MAX_ROWS)[0] == closed
        assert choose_method(knn, "auto", large)[0] == "tdoob"  # N^2 log N: too slow
        assert choose_method(knn, "auto", small, "approximate")[0] == "tdoob"
    # another classifier: a 5-NN of the standardised rows stands in for it; a regressor
    # that is not a k-NN: the bandit, as before
    from sklearn.ensemble import (
        AdaBoostClassifier,
        ExtraTreesClassifier,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import LinearSVC

    for other in (DecisionTreeClassifier(), LogisticRegression(),
                  KNeighborsClassifier(weights="distance"),
                  KNeighborsClassifier(metric="manhattan"), RandomForestClassifier(),
                  make_pipeline(StandardScaler(), RandomForestClassifier()),
                  MLPClassifier(), LinearSVC(), ExtraTreesClassifier(), AdaBoostClassifier()):
        assert choose_method(other, "auto", small)[0] == "knn_shapley_proxy"
        assert choose_method(other, "auto", large)[0] == "tdoob"
        for closed in ("knn_shapley", "knn_shapley_train"):
            with pytest.raises(ValueError, match="k-NN models only"):
                choose_method(other, closed, small)
    from sklearn.tree import DecisionTreeRegressor

    assert choose_method(DecisionTreeRegressor(), "auto", small)[0] == "tdoob"
    # every regressor, forests too: the proxy ranked subtle target noise worse
    # (docs/benchmarks.md, session 34); it is still there when asked for
    from sklearn.ensemble import AdaBoostRegressor, ExtraTreesRegressor

    for regressor in (AdaBoostRegressor(), ExtraTreesRegressor(), RandomForestRegressor(),
                      make_pipeline(StandardScaler(), ExtraTreesRegressor())):
        chosen, why = choose_method(regressor, "auto", small)
        assert chosen == "tdoob" and "for every regressor" in why
        assert choose_method(regressor, "knn_shapley_proxy", small)[0] == "knn_shapley_proxy"
    # an SVM: the bandit's cut lowered fewer sets (docs/benchmarks.md)
    from sklearn.svm import SVC

    assert choose_method(SVC(), "auto", small)[0] == "tdoob"
    # gradient boosting: the proxy's cut gained less than the bandit's (docs/benchmarks.md)
    from sklearn.ensemble import HistGradientBoostingClassifier

    boosted = HistGradientBoostingClassifier()
    assert choose_method(boosted, "auto", small)[0] == "tdoob"
    assert choose_method(boosted, "knn_shapley_proxy", small)[0] == "knn_shapley_proxy"
    # a regressor's proxy: a 5-NN regressor of the standardised rows, on the training rows
    # alone (as a k-NN regressor's own values: validation-free, so its cut checks the
    # squared error)
    assert choose_method(DecisionTreeRegressor(), "knn_shapley_proxy", small)[0] == \
        "knn_shapley_proxy"
    reg = make_valuer(DecisionTreeRegressor(), "neg_mae", set(), "knn_shapley_proxy",
                      TDShapOptions(), 0, False, {}, n_rows=small)
    assert reg.metric == "neg_mse" and reg.estimator.queries == "training"
    assert isinstance(reg.estimator.estimator[-1], KNeighborsRegressor)
    proxy = make_valuer(DecisionTreeClassifier(), "accuracy", set(), "auto", TDShapOptions(),
                        0, False, {}, n_rows=small)
    assert proxy.method == "knn_shapley_proxy" and proxy.metric == "true_class_proba"
    assert isinstance(proxy.estimator, KNNShapley) and proxy.estimator.queries == "both"
    assert proxy.estimator.estimator[-1].n_neighbors == 5  # scaler, then the 5-NN
    o = TDShapOptions()
    v = make_valuer(KNeighborsRegressor(3), "neg_mae", set(), "knn_shapley_train", o, 0,
                    False, {}, n_rows=small)
    assert isinstance(v.estimator, KNNShapley) and v.estimator.queries == "training"
    assert v.metric == "neg_mse" and v.estimator.tau == 0.0
    given = make_valuer(KNeighborsClassifier(), "accuracy", set(), "knn_shapley_train",
                        TDShapOptions(tau=-0.01), 0, False, {}, n_rows=small)
    assert given.metric == "true_class_proba" and given.estimator.tau == -0.01
    assert given.estimator.queries == "training"
    with pytest.raises(ValueError, match="neighbor_search"):
        make_valuer(KNeighborsClassifier(), "accuracy", set(), "knn_shapley_train", o, 0,
                    False, {}, neighbor_search="approximate", n_rows=small)


def test_thresholding_oob_gets_the_users_k_and_max_iter() -> None:
    o = TDShapOptions(k=7, max_iter=3)
    chosen = make_valuer(KNeighborsClassifier(), "accuracy", {"max_iter"}, "auto", o, 0,
                         False, {})
    assert chosen.estimator.k == 7 and chosen.estimator.max_iter == 3
    default = make_valuer(KNeighborsClassifier(), "accuracy", set(), "auto",
                          TDShapOptions(), 0, False, {})
    assert default.estimator.k == "auto" and default.estimator.max_iter == 100


def test_auto_leaves_the_proxy_where_it_predicts_far_worse_than_the_model() -> None:
    from sklearn.datasets import make_blobs, make_classification

    from tdshap.app.valuer import check_proxy

    # two features decide the class, 80 do not: a tree finds them, the 5-NN's distances
    # are mostly the 80
    X, y = make_classification(900, n_features=82, n_informative=2, n_redundant=0,
                               n_clusters_per_class=1, class_sep=2.0, random_state=0)
    wide = (X[:600], y[:600], X[600:], y[600:])
    tree = DecisionTreeClassifier(max_depth=5, random_state=0)
    check = check_proxy(tree, wide)
    assert check.model_accuracy - check.proxy_accuracy > 0.1 and check.accuracy_se > 0
    chosen, why = choose_method(tree, "auto", 600, data=wide)
    assert chosen == "tdoob" and "proxy predicted the validation rows worse" in why
    assert choose_method(tree, "auto", 600)[0] == "knn_shapley_proxy"  # no rows: as before
    assert choose_method(tree, "knn_shapley_proxy", 600, data=wide)[0] == "knn_shapley_proxy"
    # classes that are local in every feature: the proxy stands in
    Xb, yb = make_blobs(600, n_features=4, centers=3, random_state=0)
    local = (Xb[:400], yb[:400], Xb[400:], yb[400:])
    assert choose_method(tree, "auto", 400, data=local)[0] == "knn_shapley_proxy"
    # a model that cannot be fitted here: no verdict (the run says why it fails)
    assert check_proxy(LogisticRegression(C=-1.0), local) is None
    # a model without a seed of its own is seeded by the run: the same seed, the same choice
    from sklearn.ensemble import RandomForestClassifier

    forest = RandomForestClassifier(10)
    runs = [check_proxy(forest, wide, seed=s) for s in (3, 3, 4)]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    # labels the features do not know: the proxy's values would be noise
    rng = np.random.default_rng(0)
    Xr, yr = rng.normal(size=(600, 5)), rng.integers(0, 2, 600)
    noise = (Xr[:400], yr[:400], Xr[400:], yr[400:])
    check = check_proxy(tree, noise)
    assert abs(check.proxy_skill) < 0.05 and check.skill_se > 0
    chosen, why = choose_method(tree, "auto", 400, data=noise)
    assert chosen == "tdoob" and "neighbours hardly know the labels" in why
    # a rare class the 5-NN never predicts: its probabilities still know the labels
    Xi, yi = make_classification(1500, n_features=12, n_informative=6, weights=[0.9, 0.1],
                                 random_state=7)
    rare = (Xi[:750], yi[:750], Xi[750:1125], yi[750:1125])
    check = check_proxy(tree, rare, seed=0)
    assert check.problem() is None and check.proxy_skill > 0.05
    # find_harmful passes its rows: the run says what it took and why
    from tdshap import find_harmful

    rows = find_harmful(X[:300], y[:300], tree, X_val=X[600:750], y_val=y[600:750],
                        cleanse=False, random_state=0)
    assert rows.run.settings["method"].value == "tdoob"
    assert "proxy predicted the validation rows worse" in rows.run.settings["method"].why


def test_the_proxy_is_not_refused_for_labels_a_linear_model_averages_away() -> None:
    # a third of the training labels wrong: the 5-NN predicts worse than logistic
    # regression, which averages the noise away, yet its values find those labels; the
    # check compares the 5-NN fitted without the rows its neighbours outvote
    from sklearn.datasets import make_classification

    from tdshap.app import valuer

    X, y = make_classification(900, n_features=5, n_informative=3, n_redundant=0,
                               class_sep=1.5, random_state=1)
    y_train = y[:600].copy()
    wrong = np.random.default_rng(1).choice(600, 180, replace=False)
    y_train[wrong] = 1 - y_train[wrong]
    data = (X[:600], y_train, X[600:], y[600:])
    model = LogisticRegression()
    check = valuer.check_proxy(model, data)
    assert check.problem() is None
    assert choose_method(model, "auto", 600, data=data)[0] == "knn_shapley_proxy"
    kept = valuer._unedited_rows(
        valuer.make_pipeline(valuer.StandardScaler(), valuer.KNeighborsClassifier(5)).fit(
            X[:600], y_train), X[:600], y_train)
    assert kept is not None and 0.5 < kept.mean() < 0.9  # most flipped rows left out
    assert (~kept[wrong]).mean() > 2 * (~kept[np.setdiff1d(np.arange(600), wrong)]).mean()
    # the 5-NN on every row: 0.12 worse, refused
    unedited = valuer.ProxyCheck(check.model_accuracy, check.proxy_accuracy, 0.0, 1.0, 0.0)
    plain = valuer.make_pipeline(valuer.StandardScaler(), valuer.KNeighborsClassifier(5))
    acc = float((plain.fit(X[:600], y_train).predict(X[600:]) == y[600:]).mean())
    unedited.proxy_accuracy = acc
    assert "predicted the validation rows worse" in unedited.problem()
