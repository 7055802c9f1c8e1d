"""The cleansing curve's refits on workers: the same answer whatever ``n_jobs``."""

from __future__ import annotations

import warnings
from dataclasses import asdict
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.decomposition import PCA
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline

import tdshap.utility.subset_fits
from tdshap import cleanse, find_harmful
from tdshap.cleansing import CleansingResult


@pytest.fixture
def always_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers for any fits, however quick (the tests' models fit in milliseconds)."""
    monkeypatch.setattr(tdshap.utility.subset_fits, "MIN_PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr(tdshap.utility.subset_fits, "WORKER_SECONDS", 1e-12)


def _same_cut(a: CleansingResult, b: CleansingResult) -> None:
    np.testing.assert_array_equal(a.grid, b.grid)
    np.testing.assert_array_equal(a.val_scores, b.val_scores)
    np.testing.assert_array_equal(a.test_scores, b.test_scores)
    np.testing.assert_array_equal(a.removed, b.removed)
    np.testing.assert_equal(asdict(a.evidence), asdict(b.evidence))  # nan equals nan
    for key in ("n_fits", "n_check_fits", "n_failed_fits", "first_error", "n_one_class_fits"):
        assert a.extra[key] == b.extra[key], key


def test_find_harmful_answers_the_same_on_workers(always_parallel: None) -> None:
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:240], y[:240]
    forest = RandomForestClassifier(n_estimators=8, random_state=0)
    here = find_harmful(X, y, forest, n_jobs=1)
    there = find_harmful(X, y, forest, n_jobs=2)
    assert here.table.equals(there.table)
    assert here.run is not None and there.run is not None
    a, b = here.run.cleansing, there.run.cleansing
    assert a is not None and b is not None
    _same_cut(a, b)
    assert a.extra["n_worker_fits"] == 0
    # every fit after the first went to the workers, the folds' curves' included (and the
    # cross-fitted test's, which the counts do not name)
    assert b.extra["n_worker_fits"] >= a.extra["n_fits"] - 1 + a.extra["n_check_fits"] > 0
    from tdshap.app.report import cost_line

    assert f"{b.extra['n_worker_fits']:,} of them on parallel workers" in cost_line(there.run)
    assert "parallel workers" not in cost_line(here.run)


def _digits(n: int = 100) -> tuple[np.ndarray, ...]:
    X, y = load_digits(return_X_y=True)
    return X[:n], y[:n], X[n:n + 80], y[n:n + 80], X[n + 80:n + 160], y[n + 80:n + 160]


def test_fits_that_fail_on_workers_fall_back_as_in_process(always_parallel: None) -> None:
    # 60 components need 60 rows: cuts past 40 of the 100 rows cannot be fitted
    model = make_pipeline(PCA(n_components=60), LogisticRegression(max_iter=200))
    X, y, Xv, yv, Xt, yt = _digits()
    values = np.random.default_rng(0).normal(size=len(y))
    kw: dict[str, Any] = {"step": 5, "random_state": 0}
    here = cleanse(values, model, X, y, Xv, yv, Xt, yt, n_jobs=1, **kw)
    there = cleanse(values, model, X, y, Xv, yv, Xt, yt, n_jobs=2, **kw)
    assert here.extra["n_failed_fits"] == 2  # 45 and 50 removed
    assert "n_components=60" in str(here.extra["first_error"])
    _same_cut(here, there)
    assert there.extra["n_worker_fits"] == len(there.grid) - 1
    for jobs in (1, 2):
        with pytest.raises(ValueError, match="n_components=60"):
            cleanse(values, model, X, y, Xv, yv, Xt, yt, n_jobs=jobs, on_error="raise", **kw)


def test_a_knn_answered_from_its_lists_starts_no_worker(always_parallel: None) -> None:
    X, y, Xv, yv, Xt, yt = _digits()
    values = np.random.default_rng(1).normal(size=len(y))
    knn = KNeighborsClassifier(n_neighbors=5)
    there = cleanse(values, knn, X, y, Xv, yv, Xt, yt, n_jobs=2, random_state=0)
    assert "neighbour lists" in there.extra["path_note"]
    assert there.extra["n_worker_fits"] == 0
    _same_cut(cleanse(values, knn, X, y, Xv, yv, Xt, yt, n_jobs=1, random_state=0), there)


def test_quick_fits_stay_in_process() -> None:
    X, y, Xv, yv, _, _ = _digits()
    values = np.random.default_rng(2).normal(size=len(y))
    # a few milliseconds a fit: starting workers would cost more than it saves
    quick = cleanse(values, LogisticRegression(max_iter=50), X, y, Xv, yv, n_jobs=2,
                    random_state=0)
    assert quick.extra["n_worker_fits"] == 0


@pytest.mark.parametrize("jobs", [0, 1.5, True, "2", 10**9])
def test_bad_n_jobs_is_refused_before_any_fit(jobs: Any) -> None:
    X, y, Xv, yv, _, _ = _digits()
    with pytest.raises(ValueError, match="n_jobs"):
        cleanse(np.zeros(len(y)), LogisticRegression(), X, y, Xv, yv, n_jobs=jobs)
    with pytest.raises(ValueError, match="n_jobs"):
        find_harmful(X, y, "logreg", n_jobs=jobs)


def test_warnings_of_fits_on_workers_reach_the_caller(always_parallel: None) -> None:
    X, y, Xv, yv, _, _ = _digits()
    values = np.random.default_rng(3).normal(size=len(y))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = cleanse(values, MLPClassifier(max_iter=2, random_state=0), X, y, Xv, yv,
                         n_jobs=2, random_state=0, step=10)
    assert result.extra["n_worker_fits"] == len(result.grid) - 1 > 0
    # one per fit, as in-process: the command folds them into its warning line
    assert sum(issubclass(w.category, ConvergenceWarning) for w in seen) == len(result.grid)


def test_networks_are_fitted_in_process() -> None:
    torch_estimators = pytest.importorskip("tdshap.torch.estimators")
    from sklearn.preprocessing import StandardScaler

    from tdshap.utility.subset_fits import _holds_network

    net = torch_estimators.TorchClassifier(epochs=1)
    # a process per worker would copy the network and claim its device again
    assert _holds_network(net)
    assert _holds_network(make_pipeline(StandardScaler(), net))
    assert not _holds_network(make_pipeline(StandardScaler(), RandomForestClassifier()))


def test_an_estimator_that_cannot_travel_is_fitted_in_process(always_parallel: None) -> None:
    from sklearn.tree import DecisionTreeClassifier

    class Handle:
        """A parameter a clone shares but no pickler sends (an open file, a connection)."""

        def __deepcopy__(self, memo: dict[int, Any]) -> Handle:
            return self

        def __reduce__(self) -> Any:
            raise TypeError("a handle cannot travel")

    class Holding(DecisionTreeClassifier):
        def __init__(self, max_depth: int | None = 3, handle: Any = None) -> None:
            super().__init__(max_depth=max_depth)
            self.handle = handle

    X, y, Xv, yv, _, _ = _digits()
    values = np.random.default_rng(4).normal(size=len(y))
    result = cleanse(values, Holding(handle=Handle()), X, y, Xv, yv, n_jobs=2,
                     random_state=0, step=10)
    assert result.extra["n_worker_fits"] == 0 and result.extra["n_failed_fits"] == 0


def test_workers_that_die_leave_the_fits_to_this_process(always_parallel: None) -> None:
    import os

    from sklearn.tree import DecisionTreeClassifier

    class DiesOnWorkers(DecisionTreeClassifier):
        """Kills any process but the test's (a worker out of memory, say)."""

        def __init__(self, max_depth: int | None = 3, random_state: int | None = None,
                     home: int = 0) -> None:
            super().__init__(max_depth=max_depth, random_state=random_state)
            self.home = home

        def fit(self, X: Any, y: Any, sample_weight: Any = None,
                check_input: bool = True) -> DiesOnWorkers:
            if os.getpid() != self.home:
                os._exit(1)
            return super().fit(X, y)

    X, y, Xv, yv, _, _ = _digits()
    values = np.random.default_rng(5).normal(size=len(y))
    model = DiesOnWorkers(home=os.getpid())
    with pytest.warns(RuntimeWarning, match="the cut's workers failed"):
        there = cleanse(values, model, X, y, Xv, yv, n_jobs=2, random_state=0, step=10)
    here = cleanse(values, model, X, y, Xv, yv, n_jobs=1, random_state=0, step=10)
    assert there.extra["n_worker_fits"] == 0 and there.extra["n_failed_fits"] == 0
    np.testing.assert_array_equal(here.val_scores, there.val_scores)


def test_workers_are_given_a_second_of_fits_each(monkeypatch: pytest.MonkeyPatch) -> None:
    from sklearn.tree import DecisionTreeClassifier

    from tdshap.utility.fast.neighbor_lists import RemovalFits

    X, y, *_ = _digits()
    started: list[int] = []

    class Counted:
        def __init__(self, n_jobs: int, **kw: Any) -> None:
            started.append(n_jobs)

        def __call__(self, tasks: Any) -> Any:
            return (task[0](*task[1], **task[2]) for task in tasks)

    monkeypatch.setattr(tdshap.utility.subset_fits, "Parallel", Counted)
    tree = DecisionTreeClassifier(max_depth=2)
    fitter = tdshap.utility.subset_fits.SubsetFitter(
        tree, X, y, np.unique(y), {}, RemovalFits(tree, X, y, [X], False), n_jobs=64)
    fitter.n_timed, fitter.seconds_timed = 4, 1.0  # a quarter second a fit: 30 fits, 7.5 s
    keeps = [np.arange(i, len(y)) for i in range(31)]
    assert len([o() for o in fitter.fit_all(keeps, len(keeps))]) == 31
    assert started == [7]


def test_the_worker_count_the_run_and_its_estimate_share() -> None:
    from tdshap.utility.subset_fits import worker_count

    assert worker_count(64, 50, 7.5) == 7  # a second of fits or more each
    assert worker_count(64, 3, 100.0) == 3  # no more workers than fits
    assert worker_count(2, 50, 4.9) == 1  # under 5 s in all: not worth starting them
    assert worker_count(1, 50, 100.0) == 1
    assert worker_count(8, 1, 100.0) == 1


def test_subsets_fitted_here_are_made_one_at_a_time() -> None:
    from sklearn.tree import DecisionTreeClassifier

    from tdshap.utility.fast.neighbor_lists import RemovalFits

    X, y, *_ = _digits()
    made: list[int] = []

    def keeps() -> Any:  # the cleansing grid's subsets hold most rows: a million-row
        for i in range(10):  # k-NN's would be hundreds of MB all at once
            made.append(i)
            yield np.arange(i, len(y))

    tree = DecisionTreeClassifier(max_depth=2)
    fitter = tdshap.utility.subset_fits.SubsetFitter(
        tree, X, y, np.unique(y), {}, RemovalFits(tree, X, y, [X], False), n_jobs=1)
    for i, outcome in enumerate(fitter.fit_all(keeps(), 10)):
        assert made == list(range(i + 1))
        outcome()
    assert fitter.n_timed == 10 and fitter.n_worker_fits == 0


def test_the_tdshap_estimate_shares_the_cut_among_workers(always_parallel: None) -> None:
    # the paper's method's cost estimate counted the cut's refits in one process where
    # the run would share them among workers
    import pandas as pd
    from sklearn.datasets import make_classification
    from sklearn.tree import DecisionTreeClassifier

    from tdshap.app.harmful import prepare
    from tdshap.app.plan import plan
    from tdshap.app.run import TDShapOptions

    X, y = make_classification(160, 5, random_state=0)
    data = prepare(pd.DataFrame(X), pd.Series(y), task="classification", seed=0)
    settings = dict(model=DecisionTreeClassifier(max_depth=3, random_state=0),
                    method="tdshap", options=TDShapOptions(k=2, n_min=2, max_iter=2))
    alone = plan(data, n_jobs=1, **settings).estimate
    shared = plan(data, n_jobs=2, **settings).estimate
    assert alone.cleansing_seconds is None and "workers" not in alone.path
    assert shared.cleansing_fits == alone.cleansing_fits > 1
    assert shared.cleansing_seconds == pytest.approx(
        shared.cleansing_fits * shared.seconds_per_evaluation / 2)
    assert shared.path.endswith("; the cut's refits on 2 workers")
    assert "cleansing cuts (" in shared.line(None)
