"""Approximate neighbour lists (a faiss HNSW graph): close to the exact lists, exact
distances in exact order, the same on every run, and refused clearly when unusable."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import spearmanr
from sklearn.datasets import make_classification
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.tree import DecisionTreeClassifier

from tdshap import find_harmful
from tdshap.app.cli import main
from tdshap.methods import DataOOB, KNNOutOfBag
from tdshap.methods.tdoob import ThresholdingOOB
from tdshap.utility.fast import approximate_search
from tdshap.utility.fast.base import NotEligible
from tdshap.utility.fast.neighbor_lists import NeighborLists

faiss = pytest.importorskip("faiss")


def _noisy(n: int = 1500, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(n, 12, n_informative=6, n_classes=3, random_state=seed)
    rng = np.random.default_rng(seed)
    flip = rng.choice(n, n // 10, replace=False)
    y[flip] = (y[flip] + 1) % 3
    return X, y


def test_lists_nearly_equal_the_exact_ones_with_exact_distances_in_order() -> None:
    X, y = _noisy()
    exact = NeighborLists(KNeighborsClassifier(5), X, y)
    approx = NeighborLists(KNeighborsClassifier(5), X, y, search="approximate")
    assert approx.index.shape == exact.index.shape
    # the graph reaches almost every true neighbour (recall measured in the docs)
    same_rows = np.mean([len(np.intersect1d(a, b))
                         for a, b in zip(approx.index, exact.index, strict=True)])
    assert same_rows / exact.depth > 0.99
    assert np.mean(np.all(approx.index[:, :5] == exact.index[:, :5], axis=1)) > 0.98
    # distances are recomputed exactly and sorted, and a row is never in its own list
    diff = X[approx.index] - X[:, None, :]
    np.testing.assert_allclose(approx.dist2, np.einsum("ijk,ijk->ij", diff, diff))
    assert np.all(np.diff(approx.dist2, axis=1) >= 0)
    assert not np.any(approx.index == np.arange(len(X))[:, None])


def test_same_rows_give_the_same_lists() -> None:
    X, y = _noisy(seed=1)
    one = NeighborLists(KNeighborsRegressor(3), X, y.astype(float), search="approximate")
    two = NeighborLists(KNeighborsRegressor(3), X, y.astype(float), search="approximate")
    np.testing.assert_array_equal(one.index, two.index)
    np.testing.assert_array_equal(one.dist2, two.dist2)


def test_rows_the_graph_finds_too_few_for_are_searched_exactly(monkeypatch) -> None:
    X, y = _noisy(400, seed=2)
    real = approximate_search.CandidateGraph.search
    short = np.array([3, 50, 399])

    def lossy(self, Q, wanted):
        found = real(self, Q, wanted)
        found[short, -2:] = -1  # one block of queries: rows are the queries' positions
        return found

    monkeypatch.setattr(approximate_search.CandidateGraph, "search", lossy)
    approx = NeighborLists(KNeighborsClassifier(5), X, y, search="approximate")
    exact = NeighborLists(KNeighborsClassifier(5), X, y)
    np.testing.assert_array_equal(approx.index[short], exact.index[short])
    np.testing.assert_array_equal(approx.dist2[short], exact.dist2[short])


def test_query_lists_on_tiny_data_equal_the_exact_ones() -> None:
    X, y = _noisy(40, seed=3)
    Q = X[:7] + 0.01
    exact = NeighborLists(KNeighborsClassifier(3), X, y, queries=Q)
    approx = NeighborLists(KNeighborsClassifier(3), X, y, queries=Q, search="approximate")
    np.testing.assert_array_equal(approx.index, exact.index)


def test_the_memory_budget_counts_the_graph() -> None:
    X, y = _noisy(600)
    lists_only = 12 * 600 * 36
    NeighborLists(KNeighborsClassifier(5), X, y, budget=lists_only)  # exact fits
    with pytest.raises(NotEligible, match="search graph"):
        NeighborLists(KNeighborsClassifier(5), X, y, budget=lists_only, search="approximate")


def test_bagging_methods_rank_rows_as_with_the_exact_search() -> None:
    X, y = _noisy()
    runs = {}
    for search in ("exact", "approximate"):
        runs[search] = [
            ThresholdingOOB(KNeighborsClassifier(5), random_state=0, max_iter=40,
                            neighbor_search=search).fit(X, y),
            KNNOutOfBag(KNeighborsClassifier(5), neighbor_search=search).fit(X, y),
            DataOOB(KNeighborsClassifier(5), n_estimators=30, random_state=0,
                    neighbor_search=search).fit(X, y),
        ]
    for exact, approx in zip(runs["exact"], runs["approximate"], strict=True):
        assert spearmanr(exact.values_, approx.values_, nan_policy="omit")[0] > 0.97
        assert approx.result_.extra["neighbor_search"] == "approximate"
    tdoob = runs["approximate"][0]
    assert "approximate" in tdoob.result_.extra["path_note"]
    again = ThresholdingOOB(KNeighborsClassifier(5), random_state=0, max_iter=40,
                            neighbor_search="approximate").fit(X, y)
    np.testing.assert_array_equal(again.values_, tdoob.values_)


def test_a_model_without_lists_refits_and_says_so() -> None:
    X, y = _noisy(200)
    run = ThresholdingOOB(DecisionTreeClassifier(max_depth=3, random_state=0), random_state=0,
                          max_iter=2, neighbor_search="approximate").fit(X, y)
    assert run.result_.extra["neighbor_search"] is None
    assert run.result_.extra["path_note"].startswith("refit every bag")


def _clean(X: np.ndarray, y: np.ndarray, folder, *options: str) -> Any:
    data = folder / "t.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",", fmt="%.6g",
               header=",".join([f"f{i}" for i in range(X.shape[1])] + ["target"]),
               comments="")
    return CliRunner().invoke(main, ["clean", str(data), "--target", "target", "--out",
                                     str(folder / "out"), "--no-progress", *options])


def test_bad_values_and_a_missing_faiss_are_refused_clearly(monkeypatch, tmp_path) -> None:
    X, y = _noisy(200)
    with pytest.raises(ValueError, match="must be one of"):
        ThresholdingOOB(KNeighborsClassifier(5), neighbor_search="fast").fit(X, y)
    with pytest.raises(ValueError, match="TDShap's k-NN fast path is exact"):
        find_harmful(X, y, method="tdshap", neighbor_search="approximate")
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(ValueError, match=r"pip install 'tdshap\[scale\]'"):
        KNNOutOfBag(KNeighborsClassifier(5), neighbor_search="approximate").fit(X, y)
    out = _clean(X, y, tmp_path, "--neighbor-search", "approximate")
    assert out.exit_code == 2
    assert "--neighbor-search" in out.output and "faiss" in out.output
    assert not (tmp_path / "out").exists()


def test_the_cli_reports_the_approximate_path(tmp_path) -> None:
    X, y = _noisy(600)
    out = _clean(X, y, tmp_path, "--neighbor-search", "approximate")
    assert out.exit_code == 0, out.output
    assert "approximate: a graph index, cost grows about N log N" in out.output
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| neighbor_search | `approximate` | given |" in report
    assert "by the approximate kneighbors lists fast path" in report


@pytest.mark.parametrize("offset, unit", [(1e7, 1e-3), (0.0, 1e25), (0.0, 1e-30)])
def test_rows_far_from_the_origin_or_outside_float32_keep_their_neighbours(
        offset: float, unit: float) -> None:
    X, y = _noisy(500, seed=4)
    X = offset + unit * X
    # the truth from centred rows: scikit-learn's brute force expands |x - q|^2 and
    # loses rows 1e-3 apart at 1e7 (a refit does the same, so the exact path agrees)
    truth = NeighborLists(KNeighborsClassifier(5), X - X.mean(axis=0), y)
    approx = NeighborLists(KNeighborsClassifier(5), X, y, search="approximate")
    assert np.mean(np.all(approx.index[:, :5] == truth.index[:, :5], axis=1)) > 0.98


def test_identical_rows_do_not_break_the_graph() -> None:
    X = np.zeros((60, 3))
    y = np.arange(60) % 2
    exact = ThresholdingOOB(KNeighborsClassifier(5), random_state=0, max_iter=5).fit(X, y)
    approx = ThresholdingOOB(KNeighborsClassifier(5), random_state=0, max_iter=5,
                             neighbor_search="approximate").fit(X, y)
    assert np.all(np.isfinite(approx.values_))
    np.testing.assert_allclose(approx.values_, exact.values_)


def test_searching_region_by_region_gives_the_same_lists(monkeypatch) -> None:
    X, y = _noisy(3000, seed=5)
    plain = NeighborLists(KNeighborsClassifier(5), X, y, search="approximate")
    monkeypatch.setattr(approximate_search, "LOCALITY_FROM", 100)
    monkeypatch.setattr(approximate_search, "LOCALITY_REGION", 100)
    order = approximate_search.locality_order(X)
    assert sorted(order.tolist()) == list(range(len(X)))
    assert not np.array_equal(order, np.arange(len(X)))
    regional = NeighborLists(KNeighborsClassifier(5), X, y, search="approximate")
    np.testing.assert_array_equal(regional.index, plain.index)
    np.testing.assert_array_equal(regional.dist2, plain.dist2)


def test_a_long_exact_search_suggests_the_approximate_one(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr("tdshap.app.plan.SUGGEST_APPROXIMATE_S", 0.0)
    X, y = _noisy(300)
    # thresholding Data-OOB's lists (auto takes exact k-NN Shapley at this size)
    out = _clean(X, y, tmp_path, "--method", "tdoob")
    assert out.exit_code == 0, out.output
    assert "(--neighbor-search 'approximate' grows about N log N;" in out.output


def test_with_a_dask_backend_the_graph_is_searched_here_and_says_so() -> None:
    distributed = pytest.importorskip("distributed")
    X, y = _noisy(400, seed=6)
    here = ThresholdingOOB(KNeighborsClassifier(5), max_iter=5, random_state=1,
                           neighbor_search="approximate").fit(X, y)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        there = ThresholdingOOB(KNeighborsClassifier(5), max_iter=5, random_state=1,
                                neighbor_search="approximate", backend=client).fit(X, y)
    np.testing.assert_array_equal(here.values_, there.values_)
    assert "does not use the Dask workers" in there.result_.extra["path_note"]
