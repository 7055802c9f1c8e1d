"""Parallel and distributed evaluation: same values whatever the workers, data shipped once."""

from __future__ import annotations

import pickle
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_info

from tdshap import TDShap, Utility
from tdshap.utility import parallel as par
from tdshap.utility.base import Chain


def _tree():
    return DecisionTreeClassifier(max_depth=3, random_state=0)


def _run(d, **kw):
    settings = dict(n_min=10, k=5, n_blocks=3, max_iter=4, random_state=7)
    settings.update(kw)
    return TDShap(_tree(), "accuracy", **settings).fit(d.X_train, d.y_train, d.X_val, d.y_val)


def _same(a: TDShap, b: TDShap) -> None:
    np.testing.assert_array_equal(a.values_, b.values_)
    np.testing.assert_array_equal(a.counts_, b.counts_)
    np.testing.assert_array_equal(a.result_.variances, b.result_.variances)
    assert a.result_.n_evaluations == b.result_.n_evaluations


@pytest.mark.slow
def test_values_identical_for_any_n_jobs_and_backend(breast_cancer_small):
    distributed = pytest.importorskip("distributed")
    d = breast_cancer_small
    serial = _run(d)
    _same(serial, _run(d, n_jobs=2))  # loky processes
    _same(serial, _run(d, n_jobs=2, backend="threading"))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        _same(serial, _run(d, backend=client))
        _same(serial, _run(d, backend="dask"))  # picks up the running client
    r = serial.result_
    assert r.counts.sum() == 60 + 4 * 3 * 5  # init, then 4 rounds of M*K pulls
    assert r.n_fits + r.extra["n_cache_hits"] == r.n_evaluations


@pytest.mark.slow
def test_dask_by_name_starts_and_stops_its_own_cluster(breast_cancer_small):
    distributed = pytest.importorskip("distributed")
    d = breast_cancer_small
    m = _run(d, n_jobs=2, backend="dask", max_iter=2)
    _same(_run(d, max_iter=2), m)
    assert m.result_.fit_seconds > 0 and m.result_.n_fits > 0
    with pytest.raises(ValueError):
        distributed.get_client()  # the private cluster and its client are gone


def test_a_round_is_m_disjoint_blocks_of_the_smallest_index(breast_cancer_small, monkeypatch):
    d = breast_cancer_small
    batches: list[list[Chain]] = []
    original = Utility.evaluate_chains

    def spy(self, chains, executor=None):
        batches.append(list(chains))
        return original(self, chains, executor)

    monkeypatch.setattr(Utility, "evaluate_chains", spy)
    m = _run(d, n_blocks=4, max_iter=3)
    rounds = batches[-3:]
    for chains in rounds:
        assert [len(c.block) for c in chains] == [5, 5, 5, 5]
        arms = np.concatenate([c.block for c in chains])
        assert len(set(arms)) == 20
        for c in chains:
            assert not set(c.prefix) & set(c.block)
    # the initial blocks cover every arm once, whatever the batching
    init = np.concatenate([c.block for b in batches[:-3] for c in b])
    assert sorted(init) == list(range(60))
    assert m.result_.extra["n_blocks"] == 4


def test_utility_is_shipped_once_per_run(breast_cancer_small, monkeypatch):
    d = breast_cancer_small
    loads: list[int] = []

    def counting_load(fh):
        loads.append(1)
        return pickle.load(fh)

    monkeypatch.setattr(par, "pickle", SimpleNamespace(load=counting_load))
    _run(d, n_jobs=2, backend="threading", max_iter=5)  # threads share one process
    assert loads == [1]


def test_dask_scatters_the_utility_once(breast_cancer_small):
    distributed = pytest.importorskip("distributed")
    d = breast_cancer_small
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        calls: list[int] = []
        scatter = client.scatter

        def counting(*args, **kw):
            calls.append(1)
            return scatter(*args, **kw)

        client.scatter = counting
        _run(d, backend=client, max_iter=5)
    assert calls == [1]


def test_workers_run_single_threaded(breast_cancer_small):
    d = breast_cancer_small
    seen: list[int] = []

    class Spy(DecisionTreeClassifier):
        def fit(self, X, y, sample_weight=None, check_input=True):
            seen.extend(p["num_threads"] for p in threadpool_info())
            return super().fit(X, y)

    util = Utility(Spy(max_depth=2), "accuracy", d.X_train, d.y_train, d.X_val, d.y_val)
    before = [p["num_threads"] for p in threadpool_info()]
    chains = [Chain(np.arange(10, 30), np.arange(5), 1)]
    par.run_chains(util, chains, threads=1)
    assert seen and set(seen) == {1}
    assert [p["num_threads"] for p in threadpool_info()] == before


def test_thread_hungry_estimator_parameters_are_set_to_one():
    forest = RandomForestRegressor(n_jobs=-1)
    assert par.single_threaded(forest).get_params()["n_jobs"] == 1
    assert forest.n_jobs == -1  # the user's estimator is not touched
    pipe = par.single_threaded(make_pipeline(StandardScaler(), RandomForestRegressor(n_jobs=4)))
    assert pipe.get_params()["randomforestregressor__n_jobs"] == 1
    # scikit-learn's None is one job: left alone (setting LogisticRegression's warns that it
    # is deprecated, from every worker's fit)
    quiet = make_pipeline(StandardScaler(), LogisticRegression())
    assert par.single_threaded(quiet) is quiet
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        par.single_threaded(quiet).fit(np.eye(4), [0, 1, 0, 1])
    lightgbm = pytest.importorskip("lightgbm")
    assert par.single_threaded(lightgbm.LGBMRegressor()).get_params()["n_jobs"] == 1


def test_counters_and_cache_are_merged_in_order(breast_cancer_small):
    d = breast_cancer_small
    rng = np.random.default_rng(0)
    chains = [Chain(rng.choice(np.arange(10, 60), 20, replace=False), np.arange(i, i + 4),
                    int(rng.integers(2**32))) for i in range(0, 24, 4)]
    serial = Utility(_tree(), "accuracy", d.X_train, d.y_train, d.X_val, d.y_val)
    expected = serial.evaluate_chains(chains)
    util = Utility(_tree(), "accuracy", d.X_train, d.y_train, d.X_val, d.y_val)
    executor = par.make_executor(2, "threading")
    got = util.evaluate_chains(chains, executor)
    executor.close()
    for a, b in zip(expected, got, strict=True):
        np.testing.assert_array_equal(a, b)
    assert util.n_fits == serial.n_fits == 6 * 5
    assert dict(util.cache_items()) == dict(serial.cache_items())
    assert util.fit_seconds > 0


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"n_jobs": 0}, "n_jobs"), ({"n_jobs": 1.5}, "n_jobs"), ({"backend": "spark"}, "backend"),
     ({"n_blocks": 0}, "n_blocks")],
)
def test_bad_parallel_settings_are_refused(breast_cancer_small, kw, match):
    with pytest.raises(ValueError, match=match):
        _run(breast_cancer_small, **kw)


def test_values_do_not_depend_on_the_cache_for_order_sensitive_learners():
    # libsvm's solution depends (in the last digits) on the order of the rows: the utility
    # fits on sorted rows so that a cached V(S) equals a refit of S reached in another order
    from sklearn.svm import SVR

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
    # every chain ends on the whole set, each reaching it in another order
    chains = [Chain(rng.permutation(30), 30 + rng.permutation(10), 0) for _ in range(6)]
    cached = Utility(SVR(), "neg_mae", X, y, X[:20], y[:20]).evaluate_chains(chains)
    fresh = Utility(SVR(), "neg_mae", X, y, X[:20], y[:20], cache=False)
    for c, a in zip(chains, cached, strict=True):
        np.testing.assert_array_equal(a, fresh.evaluate_chains([c])[0])


def test_fewer_blocks_than_workers_warns(breast_cancer_small):
    with pytest.warns(UserWarning, match="n_blocks=1 chains per round for 2 workers"):
        _run(breast_cancer_small, n_blocks=1, n_jobs=2, backend="threading", max_iter=1)


def test_fast_path_utilities_run_on_workers_with_their_counters():
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(80, 4)), rng.normal(size=80)
    args = (X[:50], y[:50], X[50:], y[50:])

    def fit(**kw):
        return TDShap(Ridge(), "neg_mae", n_min=10, k=8, n_blocks=2, max_iter=3,
                      random_state=0, **kw).fit(*args)

    serial, threaded = fit(), fit(n_jobs=2, backend="threading")
    assert serial.result_.extra["fast_path"] is not None
    assert serial.result_.extra["fast_path"] == threaded.result_.extra["fast_path"]
    _same(serial, threaded)
    for key in ("n_fast_evaluations", "n_fast_declined"):
        assert serial.result_.extra[key] == threaded.result_.extra[key]
    assert serial.result_.extra["n_fast_evaluations"] > 0
