"""k-NN neighbour lists: bags and removal cuts predicted without refits, equal to refits."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from tdshap.cleansing import cleanse
from tdshap.methods import DataOOB, KNNOutOfBag
from tdshap.methods.tdoob import ThresholdingOOB
from tdshap.result import ValuationResult
from tdshap.utility.fast import NotEligible, neighbor_lists
from tdshap.utility.fast.budget import memory_budget
from tdshap.utility.fast.neighbor_lists import NeighborLists, RemovalFits
from tdshap.utility.metrics import row_scores


def _classes(n: int = 400, seed: int = 0, rounded: bool = False) -> tuple[np.ndarray, ...]:
    X, y = make_classification(n, n_features=6, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=seed)
    # rounded features: many equally distant neighbours (ties) and duplicate rows
    return (np.round(X) if rounded else X), y


def _bags(n: int, count: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, n, n) for _ in range(count)]


def _declined_against_refits(X: np.ndarray, y: np.ndarray, bags: list[np.ndarray],
                             metric: str) -> int:
    """Every out-of-bag score the 5-NN lists decide equals a refit's, bit for bit; the
    declined ones are NaN. Returns how many were declined."""
    lists = NeighborLists(KNeighborsClassifier(5), X, y)
    declined_any = 0
    for bag in bags:
        counts = np.bincount(bag, minlength=len(y))
        out = np.flatnonzero(counts == 0)
        scores, declined = lists.row_scores(counts, out, y[out], metric)
        refit = row_scores(KNeighborsClassifier(5).fit(X[bag], y[bag]), X[out], y[out], metric)
        np.testing.assert_array_equal(scores[~declined], refit[~declined])
        assert np.isnan(scores[declined]).all()
        declined_any += int(declined.sum())
    return declined_any


@pytest.mark.parametrize("metric", ["true_class_proba", "accuracy"])
@pytest.mark.parametrize("rounded", [False, True])
def test_out_of_bag_scores_equal_refits(metric: str, rounded: bool) -> None:
    X, y = _classes(rounded=rounded)
    declined_any = _declined_against_refits(X, y, _bags(len(y), 15), metric)
    # continuous features: no ties, nothing declined; rounded: ties are declined, not guessed
    assert (declined_any > 0) == rounded


@pytest.mark.parametrize("same_label", [True, False])
def test_ties_among_rows_of_one_label_are_decided_not_refitted(same_label: bool) -> None:
    # every row three times: the copies tie at the k-th slot all the time
    X, y = _classes(150, seed=2)
    X3, y3 = np.tile(X, (3, 1)), np.tile(y, 3)
    if not same_label:  # the copies disagree: the order of the tie decides the vote
        y3[len(y):2 * len(y)] = (y3[len(y):2 * len(y)] + 1) % 3
    declined_any = _declined_against_refits(X3, y3, _bags(len(y3), 10, seed=4),
                                            "true_class_proba")
    assert (declined_any == 0) == same_label


def test_regression_out_of_bag_scores_equal_refits_to_rounding() -> None:
    X, y = make_regression(300, 5, noise=3.0, random_state=1)
    for Xs in (X, np.round(X)):
        lists = NeighborLists(KNeighborsRegressor(4), Xs, y)
        for bag in _bags(len(y), 10, seed=3):
            counts = np.bincount(bag, minlength=len(y))
            out = np.flatnonzero(counts == 0)
            scores, declined = lists.row_scores(counts, out, y[out], "neg_mae")
            refit = row_scores(KNeighborsRegressor(4).fit(Xs[bag], y[bag]), Xs[out], y[out],
                               "neg_mae")
            np.testing.assert_allclose(scores[~declined], refit[~declined], rtol=1e-12,
                                       atol=0)


def test_lists_exclude_the_row_itself_even_among_duplicates() -> None:
    X = np.repeat(np.arange(10.0)[:, None], 3, axis=0)  # every row three times
    y = np.repeat(np.arange(10) % 2, 3)
    lists = NeighborLists(KNeighborsClassifier(1), X, y, depth=4)
    assert not (lists.index == np.arange(len(y))[:, None]).any()
    assert (lists.dist2[:, :2] == 0).all()  # its two duplicates come first


@pytest.mark.parametrize("method", [
    lambda fast: ThresholdingOOB(KNeighborsClassifier(5), max_iter=20, random_state=4,
                                 fast_path=fast),
    lambda fast: DataOOB(KNeighborsClassifier(3), n_estimators=25, random_state=1,
                         fast_path=fast),
], ids=["tdoob", "data_oob"])
def test_bagging_methods_equal_their_refit_path_and_say_so(method: Any) -> None:
    X, y = _classes(300, seed=2)
    fast, slow = method(True).fit(X, y), method(False).fit(X, y)
    np.testing.assert_array_equal(fast.values_, slow.values_)
    np.testing.assert_array_equal(fast.counts_, slow.counts_)
    extra = fast.result_.extra
    assert extra["fast_path"] == "kneighbors lists" and "neighbour lists" in extra["path_note"]
    assert extra["refit_rows"] == 0
    assert slow.result_.extra["fast_path"] is None
    assert "fast_path=False" in slow.result_.extra["path_note"]
    if isinstance(fast, ThresholdingOOB):  # n_fits counts refits, as for TDShap's fast paths
        assert fast.result_.n_fits == 0
        assert slow.result_.n_fits == slow.result_.n_evaluations


def test_a_row_inside_the_bag_is_scored_by_the_bag_without_it() -> None:
    """What thresholding Data-OOB's list bags rest on: a row's list never holds the row,
    so its score is the refit of the bag with the row's own copies taken out."""
    X, y = _classes(200, seed=5)
    lists = NeighborLists(KNeighborsClassifier(5), X, y)
    for bag in _bags(len(y), 5, seed=6):
        counts = np.bincount(bag, minlength=len(y))
        rows = np.flatnonzero(counts > 0)[:40]
        scores, declined = lists.row_scores(counts, rows, y[rows], "true_class_proba")
        assert not declined.any()
        for i, score in zip(rows, scores, strict=True):
            without = bag[bag != i]
            refit = KNeighborsClassifier(5).fit(X[without], y[without])
            expected = row_scores(refit, X[[i]], y[[i]], "true_class_proba")[0]
            assert score == expected


def test_per_row_bags_rank_as_the_default_bags() -> None:
    X, y = _classes(300, seed=2)
    held, own = (ThresholdingOOB(KNeighborsClassifier(5), max_iter=20, random_state=4,
                                 per_row_bags=p).fit(X, y) for p in (False, True))
    assert own.result_.extra["fast_path"] == "kneighbors lists"
    assert own.result_.n_fits == 0 and own.result_.extra["refit_rows"] == 0
    assert own.result_.extra["per_row_bags"] and not held.result_.extra["per_row_bags"]
    refitted = ThresholdingOOB(KNeighborsClassifier(5), max_iter=2, random_state=4,
                               per_row_bags=True, fast_path=False).fit(X, y)
    assert not refitted.result_.extra["per_row_bags"]  # needs the lists: said so
    assert not np.array_equal(held.values_, own.values_)  # other bags...
    assert np.corrcoef(held.values_, own.values_)[0, 1] > 0.9  # ...one ranking


def test_per_row_bags_converge_to_the_closed_form_and_held_together_do_not() -> None:
    """With per-row bags each reward is a draw of the row's own Data-OOB law, whatever the
    bandit held out with it, so a long run lands on the closed form (KNNOutOfBag);
    holding the arms out of the bag together misses it by up to 0.2-0.4 on these rows."""
    X, y = make_classification(150, n_features=4, n_informative=3, n_redundant=0,
                               n_classes=3, flip_y=0.1, random_state=3)
    exact = KNNOutOfBag(KNeighborsClassifier(5)).fit(X, y).values_
    gaps = {}
    for per_row in (True, False):
        run = ThresholdingOOB(KNeighborsClassifier(5), max_iter=3000, random_state=0,
                              per_row_bags=per_row).fit(X, y)
        assert run.counts_.min() > 500
        gaps[per_row] = np.abs(run.values_ - exact)
    assert gaps[True].max() < 0.05 and gaps[True].mean() < 0.01
    assert gaps[False].max() > 0.1 and gaps[False].mean() > 0.02


@pytest.mark.parametrize("estimator, reason", [
    (KNeighborsClassifier(5, weights="distance"), "weights='uniform'"),
    (make_pipeline(StandardScaler(), KNeighborsClassifier(5)), "not KNeighbors"),
])
def test_ineligible_models_refit_and_say_why(estimator: object, reason: str) -> None:
    X, y = _classes(120)
    m = ThresholdingOOB(estimator, max_iter=3, random_state=0).fit(X, y)
    note = m.result_.extra["path_note"]
    assert note.startswith("refit every bag") and reason in note
    assert m.result_.extra["fast_path"] is None


def test_lists_over_the_memory_budget_are_refused_before_searching(
        monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = _classes(200)
    with pytest.raises(NotEligible, match="memory budget"):
        NeighborLists(KNeighborsClassifier(5), X, y, budget=1000)
    monkeypatch.setenv("TDSHAP_MEMORY_BUDGET_GB", str(1000 / 2**30))
    m = ThresholdingOOB(KNeighborsClassifier(5), max_iter=2, random_state=0).fit(X, y)
    assert "memory budget" in m.result_.extra["path_note"]
    monkeypatch.setenv("TDSHAP_MEMORY_BUDGET_GB", "lots")
    with pytest.raises(ValueError, match="TDSHAP_MEMORY_BUDGET_GB"):
        memory_budget()


def test_exact_distances_a_few_rows_at_a_time_sort_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact re-sort holds rows x depth x features differences: on wide data a
    block's would be gigabytes, so it goes a few rows at a time, to the same lists."""
    X, y = _classes(300, seed=3, rounded=True)  # ties: the order by row number must hold
    whole = NeighborLists(KNeighborsClassifier(5), X, y)
    monkeypatch.setattr(neighbor_lists, "EXACT_ORDER_BYTES", 1)  # one row at a time
    rowwise = NeighborLists(KNeighborsClassifier(5), X, y)
    np.testing.assert_array_equal(whole.index, rowwise.index)
    np.testing.assert_array_equal(whole.dist2, rowwise.dist2)


@pytest.mark.parametrize("rounded", [False, True])
def test_removal_cuts_predict_like_refits(rounded: bool) -> None:
    X, y = _classes(600, seed=7, rounded=rounded)
    Xa, ya, Xv = X[:300], y[:300], X[300:]
    fits = RemovalFits(KNeighborsClassifier(5), Xa, ya, [Xv], by_predictions=True)
    assert "neighbour lists" in fits.note
    order = np.random.default_rng(0).permutation(300)
    lists = fits.sets[0][1]
    declined = 0
    for n_remove in (0, 30, 150):
        keep = np.sort(order[n_remove:])
        pred = fits(keep, {}).predict(Xv)
        model = KNeighborsClassifier(5).fit(Xa[keep], ya[keep])
        _, ok = lists.neighbours(np.bincount(keep, minlength=300), np.arange(len(Xv)))
        np.testing.assert_array_equal(pred[ok], model.predict(Xv)[ok])
        proba = fits(keep, {}).predict_proba(Xv)
        np.testing.assert_allclose(proba[ok], model.predict_proba(Xv)[ok])
        if not ok.all():  # declined: scikit-learn's own answer, in a call of their own
            np.testing.assert_array_equal(pred[~ok], model.predict(Xv[~ok]))
            np.testing.assert_allclose(proba[~ok], model.predict_proba(Xv[~ok]))
        declined += int(np.count_nonzero(~ok))
    assert (declined > 0) == rounded


def test_cleanse_with_lists_equals_cleanse_with_refits(monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = _classes(900, seed=8)
    values = np.random.default_rng(1).random(300)
    args = (values, KNeighborsClassifier(5), X[:300], y[:300], X[300:600], y[300:600],
            X[600:], y[600:])
    fast = cleanse(*args, rule="one_se")
    assert "neighbour lists" in fast.extra["path_note"]
    scorer = cleanse(*args, metric="balanced_accuracy", rule="one_se")
    assert scorer.extra["path_note"].startswith("refit every cut")  # needs the model itself

    def refitting(estimator: object, X: np.ndarray, y: np.ndarray, queries: list[np.ndarray],
                  by_predictions: bool) -> RemovalFits:
        return RemovalFits(estimator, X, y, queries, by_predictions=False)

    monkeypatch.setattr("tdshap.cleansing.RemovalFits", refitting)
    plain = cleanse(*args, rule="one_se")
    assert plain.extra["path_note"].startswith("refit every cut")
    np.testing.assert_array_equal(fast.val_scores, plain.val_scores)
    np.testing.assert_array_equal(fast.test_scores, plain.test_scores)
    assert fast.n_remove == plain.n_remove
    # the cut of the credibly harmful rows is judged on Brier scores: the same from the lists
    result = ValuationResult("tdoob", values - 0.2, np.full(300, 50), np.full(300, 1e-4),
                             threshold=0.0, extra={"validation_free": True})
    plain_e = cleanse(result, *args[1:], rule="one_se").evidence
    monkeypatch.undo()
    fast_e = cleanse(result, *args[1:], rule="one_se").evidence
    assert fast_e is not None and fast_e.eligible is not None
    assert fast_e.eligible.score == "brier" and fast_e == plain_e


@pytest.mark.slow
def test_search_on_a_multi_process_dask_cluster_equals_one_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    distributed = pytest.importorskip("distributed")
    import tdshap.utility.fast.neighbor_lists as nl

    monkeypatch.setattr(nl, "SEARCH_BLOCK", 64)  # several blocks, spread over the workers
    X, y = _classes(500, seed=9)
    here = ThresholdingOOB(KNeighborsClassifier(5), max_iter=10, random_state=3).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        there = ThresholdingOOB(KNeighborsClassifier(5), max_iter=10, random_state=3,
                                backend=client).fit(X, y)
        lists_here = NeighborLists(KNeighborsClassifier(5), X, y)
        lists_there = NeighborLists(KNeighborsClassifier(5), X, y, client=client)
    np.testing.assert_array_equal(lists_here.index, lists_there.index)
    np.testing.assert_array_equal(lists_here.dist2, lists_there.dist2)
    np.testing.assert_array_equal(here.values_, there.values_)
    np.testing.assert_array_equal(here.counts_, there.counts_)
    assert "on 2 Dask workers" in there.result_.extra["path_note"]


def test_find_harmful_says_which_path_before_and_after(monkeypatch: pytest.MonkeyPatch) -> None:
    from tdshap import find_harmful
    from tdshap.app.report import text_report

    X, y = _classes(400, seed=11)
    rows = find_harmful(X, y, max_iter=5, method="tdoob")  # auto: a closed form here
    assert rows.run is not None
    estimate = rows.run.extra["estimate"]
    line = estimate.line(None)
    assert "path: k-NN neighbour lists" in line and "refitting every bag instead" in line
    assert estimate.setup_seconds > 0 and estimate.refit_seconds is not None
    report = text_report(rows.run)
    assert "paths taken: valuation: k-NN neighbour lists" in report
    assert "cleansing: k-NN neighbour lists" in report

    tree = find_harmful(X, y, "dtree", max_iter=5, cleanse=False, method="tdoob")
    assert tree.run is not None
    assert "path: refit every bag: DecisionTreeClassifier is not" in \
        tree.run.extra["estimate"].line(None)
    monkeypatch.setenv("TDSHAP_MEMORY_BUDGET_GB", "1e-6")
    small = find_harmful(X, y, max_iter=5, cleanse=False, method="tdoob")
    assert small.run is not None
    assert "memory budget" in small.run.extra["estimate"].path
    assert "memory budget" in small.run.result.extra["path_note"]


def test_small_searches_run_on_one_thread_large_ones_keep_them() -> None:
    from threadpoolctl import threadpool_info

    from tdshap.utility.fast.base import SMALL_WORK, one_thread_if_small

    def threads() -> set[int]:
        return {pool["num_threads"] for pool in threadpool_info()}

    before = threads()
    with one_thread_if_small(SMALL_WORK - 1):
        assert threads() == {1}
    assert threads() == before
    with one_thread_if_small(SMALL_WORK):
        assert threads() == before
