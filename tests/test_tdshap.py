"""TDShap end to end: invariants, reproducibility, stopping, input errors."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from tdshap import (
    LeaveOneOut,
    SequentialRemoval,
    TDShap,
    ThresholdingOOB,
    TMCShapley,
    Utility,
    cleanse,
    find_harmful,
)
from tdshap._validation import check_random_state
from tdshap.methods import DataOOB, KNNOutOfBag, KNNShapley
from tdshap.utility.base import Chain


def _tree():
    return DecisionTreeClassifier(max_depth=3, random_state=0)


def test_block_marginals_equal_separate_refits(breast_cancer_small):
    d = breast_cancer_small
    util = Utility(_tree(), "accuracy", d.X_train, d.y_train, d.X_val, d.y_val, cache=False)
    rng = np.random.default_rng(0)
    prefix = rng.choice(np.arange(10, 60), 25, replace=False)
    block = np.array([3, 7, 1, 9])
    chain = util.evaluate_chain(prefix, block, seed=123)
    fresh = Utility(_tree(), "accuracy", d.X_train, d.y_train, d.X_val, d.y_val, cache=False)
    separate = [fresh(np.concatenate([prefix, block[:j]]), seed=123) for j in range(5)]
    np.testing.assert_array_equal(chain, separate)
    assert util.n_fits == 5


def test_every_sampled_prefix_respects_n_min(breast_cancer_small, monkeypatch):
    d = breast_cancer_small
    seen: list[Chain] = []
    original = Utility.evaluate_chains

    def spy(self, chains, executor=None):
        seen.extend(chains)
        return original(self, chains, executor)

    monkeypatch.setattr(Utility, "evaluate_chains", spy)
    TDShap(_tree(), "accuracy", n_min=30, k=7, max_iter=20, random_state=0).fit(
        d.X_train, d.y_train, d.X_val, d.y_val)
    assert len(seen) == 9 + 20  # ceil(60 / 7) initial blocks, then 20 rounds
    for c in seen:
        assert 30 <= len(c.prefix) <= 60 - len(c.block)
        assert not set(c.prefix) & set(c.block)


def test_same_seed_same_result_different_seed_different_draws(breast_cancer_small):
    d = breast_cancer_small
    args = (d.X_train, d.y_train, d.X_val, d.y_val)

    def run(seed):
        return TDShap(_tree(), "accuracy", n_min=10, k=5, max_iter=15, random_state=seed).fit(*args)

    a, b, c = run(1), run(1), run(2)
    np.testing.assert_array_equal(a.values_, b.values_)
    np.testing.assert_array_equal(a.counts_, b.counts_)
    assert not np.array_equal(a.values_, c.values_)


def test_result_reports_run_and_guarantee(breast_cancer_small):
    d = breast_cancer_small
    m = TDShap(_tree(), "accuracy", n_min=10, k=5, max_iter=10, random_state=0).fit(
        d.X_train, d.y_train, d.X_val, d.y_val)
    r = m.result_
    assert r.algorithm == "tdshap"
    assert r.n_fits == r.n_evaluations - r.extra["n_cache_hits"]
    assert r.n_fits <= (12 + 10) * 6
    assert r.counts.sum() == 60 + 10 * 5
    assert r.guarantee["pulls"] == 110
    assert r.guarantee["from_metric_bound"]["width"] == 2.0
    assert r.extra["seed_mode"] == "chain"
    assert r.extra["stopped_by"] == ["MaxIterations(10)"]
    assert 0 < r.fit_seconds <= r.wall_seconds
    np.testing.assert_array_equal(m.harmful_, m.values_ <= m.tau_)


def test_time_budget_and_convergence_stop_the_run(breast_cancer_small):
    d = breast_cancer_small
    args = (d.X_train, d.y_train, d.X_val, d.y_val)
    m = TDShap(_tree(), "accuracy", n_min=10, k=5, max_iter=None, time_budget=0.3,
               random_state=0).fit(*args)
    assert m.result_.extra["stopped_by"] == ["TimeBudget(0.3)"]
    m = TDShap(_tree(), "accuracy", n_min=10, k=5, max_iter=10_000, atol=0.05, atol_window=5,
               random_state=0).fit(*args)
    assert m.result_.extra["rounds"] < 10_000
    assert any("MaxAbsoluteChange" in s for s in m.result_.extra["stopped_by"])


def test_dataframe_input_keeps_the_index(breast_cancer_small):
    d = breast_cancer_small
    X = pd.DataFrame(d.X_train, index=[f"row{i}" for i in range(60)])
    m = TDShap(_tree(), "accuracy", n_min=10, k=5, max_iter=2, random_state=0).fit(
        X, pd.Series(d.y_train, index=X.index), d.X_val, d.y_val)
    frame = m.result_.to_dataframe()
    assert list(frame.index) == list(X.index)
    assert {"is_harmful", "value", "ci_low", "ci_high", "n_pulls"} <= set(frame.columns)


class _NeverFits(DecisionTreeClassifier):
    """A model broken for every subset (a custom estimator's bug): fit always raises."""

    def fit(self, X, y, *args, **kwargs):
        raise RuntimeError("broken model")


@pytest.mark.parametrize("method", [
    lambda: TDShap(_NeverFits(), "accuracy", n_min=10, k=5, max_iter=1, random_state=0),
    lambda: TMCShapley(_NeverFits(), "accuracy", max_permutations=1, random_state=0),
    lambda: ThresholdingOOB(_NeverFits(), k=5, max_iter=1, random_state=0),
    lambda: LeaveOneOut(_NeverFits(), "accuracy"),
    lambda: DataOOB(_NeverFits(), n_estimators=10, random_state=0),
])
def test_a_model_that_never_fits_is_refused_not_valued_by_the_fallback(
        breast_cancer_small, method):
    # every score was the fallback's constant: the values were all 0, with no word of it
    d = breast_cancer_small
    with pytest.raises(ValueError, match=r"failed on every one of its \d+ fits.*"
                       r"RuntimeError: broken model.*: fix the estimator or its parameters"):
        method().fit(d.X_train, d.y_train, d.X_val, d.y_val)
    with pytest.raises(ValueError, match=r"every one of its .* fits in the cleansing curve"):
        cleanse(np.arange(60.0), _NeverFits(), d.X_train, d.y_train, d.X_val, d.y_val)


class _OftenFails(DecisionTreeClassifier):
    """Fails on two bootstrap bags in three (by the number of distinct rows it is given)."""

    def fit(self, X, y, *args, **kwargs):
        if len(np.unique(X, axis=0)) % 3:
            raise RuntimeError("unlucky bag")
        return super().fit(X, y, *args, **kwargs)


def test_a_model_that_fits_some_bags_is_valued_by_them(breast_cancer_small):
    # more failed bags than rewarded ones is no reason to refuse the run (failed bags are
    # counted as fallbacks, apart from the rewarded evaluations)
    d = breast_cancer_small
    m = ThresholdingOOB(_OftenFails(), k=5, max_iter=3, random_state=0).fit(d.X_train,
                                                                              d.y_train)
    extra = m.result_.extra
    assert extra["n_failed_fits"] > m.result_.n_evaluations > 0


@pytest.mark.parametrize(("returns", "shown"), [
    (None, r"None \(a NoneType\)"), ([0.5], r"\[0.5\] \(a list\)"),
    ("high", r"'high' \(a str\)")])
def test_a_metric_that_returns_no_number_is_named(breast_cancer_small, returns, shown):
    # was float()'s own "float() argument must be a string or a real number, not 'NoneType'"
    d = breast_cancer_small

    def my_metric(y_true, y_pred):
        return returns

    # a k-NN is scored by the fast path (tdshap.utility.fast.scoring), which said float()'s
    # "could not convert string to float: 'high'" or "only 0-dimensional arrays ..."; both
    # are now refused before the run, as cleanse refuses it
    for model in (_tree(), KNeighborsClassifier(3)):
        with pytest.raises(ValueError, match=f"metric 'my_metric' cannot score the validation "
                           f"rows \\(TypeError: metric 'my_metric' returned {shown}, not a "
                           "number"):
            TDShap(model, my_metric, n_min=10, k=5, max_iter=1, random_state=0).fit(
                d.X_train, d.y_train, d.X_val, d.y_val)


def test_fallback_for_unfittable_subsets(breast_cancer_small):
    d = breast_cancer_small
    y = d.y_train
    one_class = np.flatnonzero(y == y[0])[:5]
    util = Utility(LogisticRegression(), "accuracy", d.X_train, y, d.X_val, d.y_val)
    expected = float(np.mean(d.y_val == y[0]))
    assert util(one_class) == pytest.approx(expected)
    majority = np.bincount(y).argmax()
    assert util([]) == pytest.approx(float(np.mean(d.y_val == majority)))
    assert util.n_fallbacks == 2
    strict = Utility(LogisticRegression(), "accuracy", d.X_train, y, d.X_val, d.y_val,
                     on_error="raise")
    with pytest.raises(ValueError):
        strict(one_class)
    with pytest.raises(ValueError, match="empty"):
        strict([])


def test_utility_never_refits_a_subset(breast_cancer_small):
    d = breast_cancer_small
    util = Utility(_tree(), "accuracy", d.X_train, d.y_train, d.X_val, d.y_val, seed_mode="run")
    everything = np.arange(60)
    first = util(everything)
    assert util(everything[::-1]) == first
    assert util.n_fits == 1 and util.n_cache_hits == 1


def test_seed_modes_control_the_estimator_seed(breast_cancer_small):
    d = breast_cancer_small
    seeds: list[int] = []

    class Spy(DecisionTreeClassifier):
        def fit(self, X, y, sample_weight=None, check_input=True):
            seeds.append(self.random_state)
            return super().fit(X, y)

    for mode, distinct in [("chain", 1), ("run", 1), ("fit", 4)]:
        seeds.clear()
        util = Utility(Spy(max_depth=2), "accuracy", d.X_train, d.y_train, d.X_val, d.y_val,
                       seed_mode=mode, run_seed=5, cache=False)
        util.evaluate_chain(np.arange(20, 40), np.array([1, 2, 3]), seed=99)
        assert len(set(seeds)) == distinct, mode
        if mode == "chain":
            assert seeds[0] == 99
        if mode == "run":
            assert seeds[0] == 5


X_OK = np.zeros((20, 2))
Y_OK = np.array([0, 1] * 10)


@pytest.mark.parametrize(("kwargs", "data", "message"), [
    ({}, (X_OK, Y_OK[:-1], X_OK, Y_OK), "same length"),
    ({}, (np.where(np.eye(20, 2) > 0, np.nan, 0.0), Y_OK, X_OK, Y_OK), "NaN"),
    ({}, (np.full((20, 2), np.inf), Y_OK, X_OK, Y_OK), "NaN or infinite"),
    ({}, (np.array([["a", "b"]] * 20), Y_OK, X_OK, Y_OK), "numeric"),
    ({"n_min": 18, "k": 5}, (X_OK, Y_OK, X_OK, Y_OK), "n_min=18"),
    ({"k": 0}, (X_OK, Y_OK, X_OK, Y_OK), "k=0"),
    ({"k": 21}, (X_OK, Y_OK, X_OK, Y_OK), "k=21"),
    ({"eps": -1}, (X_OK, Y_OK, X_OK, Y_OK), "eps=-1"),
    ({}, (X_OK, Y_OK, X_OK[:0], Y_OK[:0]), "X_val is empty"),
    ({"metric": "no_such_metric"}, (X_OK, Y_OK, X_OK, Y_OK), "no_such_metric"),
    ({"max_iter": None}, (X_OK, Y_OK, X_OK, Y_OK), "stopping criterion"),
])
def test_bad_input_names_the_problem(kwargs, data, message):
    params = {"n_min": 2, "k": 2, "max_iter": 1, **kwargs}
    with pytest.raises(ValueError, match=message):
        TDShap(_tree(), "accuracy" if "metric" not in kwargs else kwargs.pop("metric"),
               **{k: v for k, v in params.items() if k != "metric"}).fit(*data)


class _NotAnEstimator:
    """Has fit and predict, but scikit-learn cannot tag or clone it."""

    def fit(self, X, y):
        return self

    def predict(self, X):
        return np.zeros(len(X))


@pytest.mark.parametrize("make", [
    lambda est, rs: TDShap(est, "accuracy", n_min=2, k=2, max_iter=1, random_state=rs),
    lambda est, rs: TMCShapley(est, "accuracy", max_permutations=1, random_state=rs),
    lambda est, rs: LeaveOneOut(est, "accuracy", random_state=rs),
    lambda est, rs: DataOOB(est, n_estimators=2, random_state=rs),
    lambda est, rs: ThresholdingOOB(est, max_iter=1, random_state=rs),
], ids=["tdshap", "tmc", "loo", "data_oob", "tdoob"])
@pytest.mark.parametrize(("estimator", "random_state", "message"), [
    (_NotAnEstimator(), 0, "_NotAnEstimator is not a scikit-learn estimator"),
    (DecisionTreeClassifier, 0, r"got the class DecisionTreeClassifier: pass "
     r"DecisionTreeClassifier\(\)"),
    (_tree(), "seven", "random_state='seven' must be None, a whole number"),
    (_tree(), 1.0, "random_state=1.0 must be None, a whole number"),
], ids=["not-sklearn", "a-class", "text-seed", "float-seed"])
def test_every_method_refuses_what_sklearn_or_numpy_would_refuse_deep_inside(
        make, estimator, random_state, message):
    # they ended in sklearn's AttributeError about __sklearn_tags__ or numpy's SeedSequence
    with pytest.raises(ValueError, match=message):
        make(estimator, random_state).fit(X_OK, Y_OK, X_OK, Y_OK)


_EVERY_METHOD = [
    lambda: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1),
    lambda: TMCShapley(_tree(), "accuracy", max_permutations=1),
    lambda: LeaveOneOut(_tree(), "accuracy"),
    lambda: DataOOB(KNeighborsClassifier(3), n_estimators=2),
    lambda: ThresholdingOOB(KNeighborsClassifier(3), max_iter=1),
    lambda: KNNShapley(KNeighborsClassifier(3)),
]
_METHOD_IDS = ["tdshap", "tmc", "loo", "data_oob", "tdoob", "knn_shapley"]


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_labels_mixing_text_and_numbers_are_refused_by_every_method(make):
    # find_harmful refused them; the classes ended in numpy's "'<' not supported between
    # instances of 'str' and 'int'" from np.unique deep inside
    mixed = np.array([1, "a"] * 10, dtype=object)
    with pytest.raises(ValueError, match=r"y mixes text and numbers as labels"):
        make().fit(X_OK, mixed, X_OK, Y_OK)
    if not isinstance(make(), DataOOB):  # which ignores validation rows
        with pytest.raises(ValueError, match=r"y_val mixes text and numbers as labels"):
            make().fit(X_OK, Y_OK, X_OK, mixed)


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_numbers_held_as_objects_are_labels_for_every_method(make):
    # a table's object column (df["label"].to_numpy()): scikit-learn called the labels
    # "unknown" and every fit failed, with "fix the model" for a fix; k-NN Shapley took them
    X = np.random.default_rng(0).normal(size=(20, 2))

    def values(y: Any, y_val: Any) -> np.ndarray:
        method = make()
        if "random_state" in method.get_params():
            method.set_params(random_state=0)
        return method.fit(X, y, X, y_val).result_.values

    np.testing.assert_array_equal(values(Y_OK.astype(object), pd.Series(Y_OK, dtype=object)),
                                  values(Y_OK, Y_OK))
    # Python ints that floats cannot tell apart are refused, not made one class
    huge = np.array([2**70 + int(v) for v in Y_OK], dtype=object)
    with pytest.raises(ValueError, match="y holds whole numbers too large for floating point"):
        values(huge, huge)


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_float_labels_past_int64_are_refused_by_every_method(make):
    # scikit-learn read them as continuous: every fit failed, "fix the model"
    huge = np.where(Y_OK == 1, 1e20, -1e20)
    with pytest.raises(ValueError, match=r"y holds class labels too large for scikit-learn's "
                       r"classifiers \(up to 1e\+20\)"):
        make().fit(X_OK, huge, X_OK, huge)


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_binned_labels_are_refused_by_every_method_with_the_fix(make):
    # pandas.cut's intervals failed every fit as scikit-learn's "unknown" label type
    binned = pd.Series(pd.cut(Y_OK, bins=[-1, 0.5, 2]))
    with pytest.raises(ValueError, match=r"y holds a label of type Interval .*labels=False"):
        make().fit(X_OK, binned, X_OK, Y_OK)


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_ragged_rows_and_list_labels_are_refused_by_every_method(make):
    # find_harmful refused them; a method's fit passed on numpy's "setting an array element
    # with a sequence ... inhomogeneous shape", or pandas' "unhashable type: 'list'" from
    # deep inside
    with pytest.raises(ValueError, match=r"X must be 2-D \(rows x features\) with the same "
                       r"number of features in every row; its rows differ in length"):
        make().fit([[1.0, 2.0], [3.0]] * 10, Y_OK, X_OK, Y_OK)
    with pytest.raises(ValueError, match=r"y holds a label of type list \(\[0\]\): a label "
                       "must be one number or text"):
        make().fit(X_OK, pd.Series([[0], [1]] * 10), X_OK, Y_OK)
    with pytest.raises(ValueError, match=r"y must be 1-D with one target per row; its entries "
                       "are sequences of different lengths"):
        make().fit(X_OK, [[0], [1, 2]] * 10, X_OK, Y_OK)


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_whole_numbers_floats_cannot_tell_apart_are_refused_by_every_method(make):
    # int64 ids or counts near 2**62 became one float each: a constant column, silently
    X = X_OK.astype(np.int64) + np.int64(2**62)
    X[:, 1] = np.arange(len(X)) + 2**62
    with pytest.raises(ValueError, match=r"X's column 1 holds whole numbers too large for "
                       "floating point to tell apart"):
        make().fit(X, Y_OK, X_OK, Y_OK)


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_rows_without_feature_columns_are_refused_by_every_method(make):
    # DataOOB and ThresholdingOOB ended in scikit-learn's "Found array with 0 feature(s)",
    # TDShap/TMC/LOO in "the estimator failed on every fit", KNNShapley valued them
    with pytest.raises(ValueError, match=r"X has no feature columns \(shape \(20, 0\)\)"):
        make().fit(X_OK[:, :0], Y_OK, X_OK[:, :0], Y_OK)


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_repeated_column_names_are_refused_by_every_method(make):
    # find_harmful refused them; a method's fit called the numeric columns "non-numeric"
    # (pandas gives a table for a repeated name)
    frame = pd.DataFrame(X_OK, columns=["a", "a"])
    with pytest.raises(ValueError, match=r"X has duplicate column names: a; rename them"):
        make().fit(frame, Y_OK, X_OK, Y_OK)


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_complex_columns_are_refused_by_every_method(make):
    # a complex array was refused, but a table's complex column was valued on its real
    # part, with only numpy's ComplexWarning
    frame = pd.DataFrame({"a": X_OK[:, 0], "b": X_OK[:, 1] + 1j})
    with pytest.raises(ValueError, match=r"X has complex-valued columns \['b'\]: split"):
        make().fit(frame, Y_OK, X_OK, Y_OK)


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_validation_columns_in_another_order_or_of_other_names_are_refused(make):
    # the features are paired by position: a reordered or renamed X_val was scored on
    # other features, silently (find_harmful matches them by name)
    if isinstance(make(), DataOOB):  # which ignores validation rows
        return
    X = pd.DataFrame(X_OK + np.array([0.0, 1.0]), columns=["a", "b"])
    with pytest.raises(ValueError, match=r"X_val has X's columns in a different order "
                       r"\(features are paired by position\): pass X_val\[X.columns\]"):
        make().fit(X, Y_OK, X[["b", "a"]], Y_OK)
    with pytest.raises(ValueError, match=r"X_val's columns do not match X's: it lacks the column "
                       "'b' and has the extra column 'c'"):
        make().fit(X, Y_OK, X.rename(columns={"b": "c"}), Y_OK)
    with pytest.raises(ValueError, match=r"X_val's columns are unnamed \(0, 1, ...\) but X's "
                       r"are named: name them, e.g. X_val = X_val.set_axis\(X.columns"):
        make().fit(X, Y_OK, pd.DataFrame(X.to_numpy()), Y_OK)


def test_cleanse_refuses_test_columns_in_another_order():
    X = pd.DataFrame(X_OK + np.array([0.0, 1.0]), columns=["a", "b"])
    with pytest.raises(ValueError, match=r"X_test has X's columns in a different order"):
        cleanse(np.linspace(-1, 1, 20), _tree(), X, Y_OK, X, Y_OK, X[["b", "a"]], Y_OK)


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_complex_targets_are_refused_by_every_method(make):
    # scikit-learn refused them on every fit ("the estimator failed on every one of its
    # fits ... fix the estimator"); KNNShapley took them as labels
    with pytest.raises(ValueError, match=r"y holds complex numbers: a target must be real"):
        make().fit(X_OK, Y_OK + 1j, X_OK, Y_OK + 1j)
    # as Python objects (a table's object column): "'>=' not supported between instances
    # of 'complex' and 'complex'" from deep inside numpy
    objects = (Y_OK + 1j).astype(object)
    with pytest.raises(ValueError, match=r"y holds complex numbers: a target must be real"):
        make().fit(X_OK, objects, X_OK, objects)


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_a_table_that_still_holds_the_target_is_refused_by_every_method(make):
    # every model read the answer from the target's own column: the values said nothing
    frame = pd.DataFrame({"a": np.arange(20.0), "t": Y_OK})
    with pytest.raises(ValueError, match=r"X holds the target column 't' \(y is that "
                       r"column\).*X.drop\(columns='t'\)"):
        make().fit(frame, frame["t"], X_OK, Y_OK)
    make().fit(frame, frame["t"].rename("label"), frame, Y_OK)  # another column: taken


@pytest.mark.parametrize("make", _EVERY_METHOD, ids=_METHOD_IDS)
def test_a_column_name_or_a_file_name_given_as_data_is_refused_with_the_fix(make):
    # numpy read them as 0-d arrays: "y must be 1-D with one target per row, got shape ()"
    frame = pd.DataFrame({"a": np.arange(20.0), "t": Y_OK})
    with pytest.raises(ValueError, match=r"y='t' is the name of a column, not the targets: "
                       r"pass .* y=X\['t'\] and X=X.drop\(columns='t'\)"):
        make().fit(frame, "t", X_OK, Y_OK)
    with pytest.raises(ValueError, match=r"X is text \('train.csv'\), not data: read the "
                       "file first"):
        make().fit("train.csv", "t", X_OK, Y_OK)
    with pytest.raises(ValueError, match=r"X is a path \(PosixPath\('train.csv'\)\)"):
        make().fit(Path("train.csv"), Y_OK, X_OK, Y_OK)


@pytest.mark.parametrize("make", [
    lambda est: TDShap(est, "accuracy", n_min=2, k=2, max_iter=1),
    lambda est: TMCShapley(est, "accuracy", max_permutations=1),
    lambda est: LeaveOneOut(est, "accuracy"),
    lambda est: DataOOB(est, n_estimators=2),
    lambda est: ThresholdingOOB(est, max_iter=1),
    lambda est: KNNShapley(est),
    lambda est: KNNOutOfBag(est),
], ids=[*_METHOD_IDS, "knn_oob"])
def test_a_column_transformer_that_picks_columns_by_name_is_refused(make):
    # the rows are valued as arrays without names: every fit failed with scikit-learn's
    # "only supported for dataframes" (KNNShapley and KNNOutOfBag: from deep inside)
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(ColumnTransformer([("num", StandardScaler(), ["a", "b"])]),
                          KNeighborsClassifier(3))
    frame = pd.DataFrame(X_OK + np.eye(20, 2), columns=["a", "b"])
    with pytest.raises(ValueError, match=r"the estimator's ColumnTransformer picks columns by "
                       r"name \(\['a', 'b'\]\), .* pick them by position"):
        make(model).fit(frame, Y_OK, frame, Y_OK)
    by_position = make_pipeline(ColumnTransformer([("num", StandardScaler(), [0, 1])]),
                                KNeighborsClassifier(3))
    make(by_position).fit(frame, Y_OK, frame, Y_OK)


def test_cleanse_refuses_a_column_transformer_that_picks_columns_by_name():
    from sklearn.compose import ColumnTransformer, make_column_selector
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(ColumnTransformer([("num", StandardScaler(), make_column_selector(
        dtype_include="number"))]), _tree())
    with pytest.raises(ValueError, match=r"the estimator's ColumnTransformer picks columns by "
                       "name"):
        cleanse(np.linspace(-1, 1, 20), model, X_OK, Y_OK, X_OK, Y_OK)


@pytest.mark.parametrize("make", [
    lambda metric: TDShap(_tree(), metric, n_min=2, k=2, max_iter=1),
    lambda metric: TMCShapley(_tree(), metric, max_permutations=1),
    lambda metric: LeaveOneOut(_tree(), metric),
], ids=["tdshap", "tmc", "loo"])
def test_a_metric_that_cannot_score_the_validation_rows_is_refused_before_the_run(make):
    # f1 of three classes raised scikit-learn's "Target is multiclass but average='binary'"
    # from deep inside the first fit (cleanse and find_harmful named it)
    three = np.arange(20) % 3
    with pytest.raises(ValueError, match=r"metric 'f1' cannot score the validation rows "
                       r"\(ValueError: Target is multiclass.*\); choose another metric"):
        make("f1").fit(X_OK + np.eye(20, 2), three, X_OK, three)


@pytest.mark.parametrize("fit", [
    lambda Xv, yv: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1).fit(X_OK, Y_OK, Xv,
                                                                              yv),
    lambda Xv, yv: TMCShapley(_tree(), "accuracy", max_permutations=1).fit(X_OK, Y_OK, Xv, yv),
    lambda Xv, yv: LeaveOneOut(_tree(), "accuracy").fit(X_OK, Y_OK, Xv, yv),
    lambda Xv, yv: cleanse(np.linspace(-1, 1, 20), _tree(), X_OK, Y_OK, Xv, yv),
], ids=["tdshap", "tmc", "loo", "cleanse"])
def test_validation_rows_given_as_none_are_named(fit):
    # numpy read None as a 0-d array: "X_val must be 2-D (rows x features), got 0-D"
    with pytest.raises(ValueError, match=r"X_val is None: the rows are valued by how models "
                       r"trained with them score on validation rows; give X_val and y_val"):
        fit(None, None)
    with pytest.raises(ValueError, match=r"y_val is None"):
        fit(X_OK, None)


@pytest.mark.parametrize("fit", [
    lambda est: TDShap(est, "accuracy", n_min=2, k=2, max_iter=1).fit(X_OK, Y_OK, X_OK, Y_OK),
    lambda est: TMCShapley(est, "accuracy", max_permutations=1).fit(X_OK, Y_OK, X_OK, Y_OK),
    lambda est: LeaveOneOut(est, "accuracy").fit(X_OK, Y_OK, X_OK, Y_OK),
    lambda est: cleanse(np.linspace(-1, 1, 20), est, X_OK, Y_OK, X_OK, Y_OK,
                        metric="accuracy"),
    lambda est: ThresholdingOOB(est, "accuracy", max_iter=1).fit(X_OK, Y_OK),
], ids=["tdshap", "tmc", "loo", "cleanse", "tdoob"])
def test_accuracy_of_a_regressor_is_refused(fit):
    # a regressor's predictions fall between the labels: every score was 0, every value 0
    # (ThresholdingOOB: its tau, 1 / the number of classes, was a ZeroDivisionError)
    from sklearn.linear_model import Ridge

    with pytest.raises(ValueError, match=r"metric 'accuracy' counts the predictions equal to "
                       r"the labels, but Ridge is a regressor"):
        fit(Ridge())


@pytest.mark.parametrize("make", [
    lambda est: DataOOB(est, n_estimators=2),
    lambda est: ThresholdingOOB(est, max_iter=1),
], ids=["data_oob", "tdoob"])
@pytest.mark.parametrize("estimator", [KNeighborsClassifier(1), _tree()], ids=["knn", "tree"])
def test_out_of_bag_values_of_one_row_are_refused(make, estimator):
    # every bag holds the one row, so none leaves it out: a k-NN's neighbour lists ended in
    # scikit-learn's "Expected n_neighbors <= n_samples_fit", a tree in a nan value (DataOOB)
    # or "the estimator failed on every one of its fits" (ThresholdingOOB)
    with pytest.raises(ValueError, match=r"needs at least two training rows"):
        make(estimator).fit(X_OK[:1], Y_OK[:1], X_OK, Y_OK)


@pytest.mark.parametrize("fit", [
    lambda y, yv: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1).fit(X_OK, y, X_OK, yv),
    lambda y, yv: KNNShapley(KNeighborsClassifier(3)).fit(X_OK, y, X_OK, yv),
    lambda y, yv: cleanse(np.linspace(-1, 1, 20), _tree(), X_OK, y, X_OK, yv),
], ids=["tdshap", "knn_shapley", "cleanse"])
def test_text_labels_against_number_labels_are_refused(fit):
    # y read as text ("0", "1") and y_val as numbers (0, 1): no validation label equals a
    # training label, every model scored 0 and every value was silently 0
    text = Y_OK.astype(str)
    with pytest.raises(ValueError, match=r"y holds text labels \('0', '1'\) but y_val "
                                         r"holds numbers \(0, 1\)"):
        fit(text, Y_OK)
    with pytest.raises(ValueError, match=r"y holds numbers \(0, 1\) but y_val holds text"):
        fit(Y_OK, text.astype(object))
    # bytes (as pandas.read_sas gives text) are not text: b"0" != "0", yet numpy's isin
    # of many labels said they were, and every value was silently 0
    with pytest.raises(ValueError, match=r"y holds text labels \('0', '1'\) but y_val holds "
                       r"bytes \(b'0', b'1'\): .*\(decode the bytes to text"):
        fit(text, text.astype(bytes))
    with pytest.raises(ValueError, match=r"y holds bytes \(b'0', b'1'\) but y_val holds text"):
        fit(text.astype(bytes).astype(object), text)
    # dates (or time spans) against numbers, or against each other: numpy's isin of the
    # labels failed from deep inside ("DTypePromotionError: The DType ... could not be
    # promoted")
    days = np.datetime64("2020-01-01") + Y_OK.astype("timedelta64[D]")
    with pytest.raises(ValueError, match=r"y holds dates or times \(.*\) but y_val holds "
                       r"numbers \(0, 1\): .*pandas.to_datetime\(y_val\) for dates"):
        fit(days, Y_OK)
    with pytest.raises(ValueError, match=r"y holds numbers \(0, 1\) but y_val holds time "
                       r"spans"):
        fit(Y_OK, Y_OK.astype("timedelta64[D]"))
    with pytest.raises(ValueError, match=r"y holds dates or times .* but y_val holds time "
                       r"spans"):
        fit(days, Y_OK.astype("timedelta64[D]"))
    fit(days, days)  # dates of one kind are classes
    # and so are Python dates (a Parquet date32 column's): "a label of type date"
    fit(days.astype(object), days)
    fit(np.array([d.item() for d in days], dtype=object), days.astype(object))


@pytest.mark.parametrize("fit", [
    lambda y, yv: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1).fit(X_OK, y, X_OK, yv),
    lambda y, yv: TMCShapley(_tree(), "accuracy", max_permutations=1).fit(X_OK, y, X_OK, yv),
    lambda y, yv: LeaveOneOut(_tree(), "accuracy").fit(X_OK, y, X_OK, yv),
    lambda y, yv: KNNShapley(KNeighborsClassifier(3)).fit(X_OK, y, X_OK, yv),
    lambda y, yv: cleanse(np.linspace(-1, 1, 20), _tree(), X_OK, y, X_OK, yv),
], ids=["tdshap", "tmc", "loo", "knn_shapley", "cleanse"])
def test_validation_labels_sharing_no_class_with_training_are_refused(fit):
    # "spam"/"ham" against "SPAM"/"HAM": every model scored 0 on the validation rows and
    # every value was silently 0 (find_harmful refused it; the classes did not)
    y = np.where(Y_OK == 1, "spam", "ham")
    with pytest.raises(ValueError, match=r"no y_val label is a y label \(y_val: 'HAM', "
                                         r"'SPAM'; y: 'ham', 'spam'\)"):
        fit(y, np.char.upper(y))
    fit(y, np.where(np.arange(20) < 10, "spam", "eggs"))  # one shared class is enough


def test_a_regressor_takes_validation_targets_the_training_rows_lack():
    from sklearn.tree import DecisionTreeRegressor

    TDShap(DecisionTreeRegressor(max_depth=2), "neg_mse", n_min=2, k=2, max_iter=1).fit(
        X_OK, np.arange(20.0), X_OK, np.arange(20.0) + 0.5)


@pytest.mark.parametrize(("n_bootstrap", "message"), [
    (10**12, r"n_bootstrap=1000000000000 resamples of the 20 validation rows need "
             r"149011.61 GiB, more than the memory budget"),
    (float("inf"), r"n_bootstrap=inf must be a whole number >= 0"),
    (float("nan"), r"n_bootstrap=nan must be a whole number >= 0"),
])
def test_cleanse_refuses_a_bootstrap_beyond_memory_or_numbers(n_bootstrap, message):
    # 10**12 was numpy's MemoryError "Unable to allocate 72.8 TiB", inf int()'s
    # OverflowError and nan its "cannot convert float NaN to integer"
    with pytest.raises(ValueError, match=message):
        cleanse(np.linspace(-1, 1, 20), _tree(), X_OK, Y_OK, X_OK, Y_OK, rule="one_se",
                n_bootstrap=n_bootstrap)


@pytest.mark.parametrize(("y_test", "message"), [
    (Y_OK[:0], r"X_test is empty"),
    (Y_OK.astype(str), r"y holds numbers \(0, 1\) but y_test holds text labels"),
    (Y_OK + 7, r"no y_test label is a y label \(y_test: 7, 8; y: 0, 1\)"),
])
def test_cleanse_refuses_test_rows_that_cannot_be_scored(y_test, message):
    # empty test rows were "the estimator failed on every one of its fits"; test labels of
    # another type or other classes scored every model 0, silently
    X_test = X_OK[:len(y_test)]
    with pytest.raises(ValueError, match=message):
        cleanse(np.linspace(-1, 1, 20), _tree(), X_OK, Y_OK, X_OK, Y_OK, X_test, y_test)


@pytest.mark.parametrize(("params", "message"), [
    ({"n_estimators": 10**12}, r"n_estimators=1000000000000 bags of N=20 rows need "
                               r"119209.29 GiB, more than the memory budget"),
    ({"n_jobs": 0}, r"n_jobs=0 must be a non-zero integer"),
    ({"n_jobs": 2.0}, r"n_jobs=2.0 must be a non-zero integer"),
])
def test_data_oob_refuses_bags_beyond_memory_and_odd_worker_counts(params, message):
    # numpy's MemoryError "Unable to allocate 7.28 TiB" and joblib's "n_jobs == 0 in
    # Parallel has no meaning" came from deep inside
    with pytest.raises(ValueError, match=message):
        DataOOB(_tree(), **params).fit(X_OK, Y_OK)


@pytest.mark.parametrize("n_jobs", [10**9, np.int64(10**18), 2**63])
@pytest.mark.parametrize("method", [
    lambda n_jobs: TMCShapley(_tree(), max_permutations=2, batch_size=4, n_jobs=n_jobs),
    lambda n_jobs: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1, n_jobs=n_jobs),
    lambda n_jobs: DataOOB(_tree(), n_estimators=4, n_jobs=n_jobs),
], ids=["tmc", "tdshap", "data_oob"])
def test_more_workers_than_joblib_can_start_are_refused_up_front(method, n_jobs):
    # TMCShapley(n_jobs=10**9) ended in joblib's "Numeric literal 2000000000 is too large,
    # max is 1000000" (its pre-dispatch 2*n_jobs), 2**63 in "Python int too large to
    # convert to C int"
    with pytest.raises(ValueError, match=r"n_jobs=.* is more workers than joblib can start "
                                         r"\(at most 500,000\): pass -1 for every core"):
        valuer = method(n_jobs)
        if isinstance(valuer, DataOOB):
            valuer.fit(X_OK, Y_OK)
        else:
            valuer.fit(X_OK, Y_OK, X_OK, Y_OK)



@pytest.mark.parametrize("fit", [
    lambda n_jobs: TMCShapley(_tree(), max_permutations=2, n_jobs=n_jobs).fit(
        X_OK, Y_OK, X_OK, Y_OK),
    lambda n_jobs: ThresholdingOOB(_tree(), max_iter=4, n_jobs=n_jobs).fit(
        X_OK, Y_OK, X_OK, Y_OK),
    lambda n_jobs: DataOOB(_tree(), n_estimators=4, n_jobs=n_jobs).fit(X_OK, Y_OK),
    lambda n_jobs: cleanse(np.arange(20.0), _tree(), X_OK, Y_OK, X_OK, Y_OK, n_jobs=n_jobs),
    lambda n_jobs: find_harmful(X_OK, Y_OK, X_val=X_OK, y_val=Y_OK, n_jobs=n_jobs),
], ids=["tmc", "tdoob", "data_oob", "cleanse", "find_harmful"])
def test_a_negative_n_jobs_past_every_core_is_refused(fit):
    # joblib counts back from every core (-2 all but one) and ran n_jobs=-99999 on one
    # worker, silently: past any machine's cores it is refused; past this machine's only
    # (a script from a larger one) it runs on one worker, with a warning
    from joblib import cpu_count

    with pytest.raises(ValueError, match=r"n_jobs`?[= ]-99999 counts back past every core "
                                         r".* of any machine \(at most 4,096\)"):
        fit(-99999)
    with pytest.warns(UserWarning, match=rf"n_jobs={-cpu_count() - 1} counts back past every "
                                         rf"core of this machine \({cpu_count()}\): it runs "
                                         "on one worker"):
        fit(-cpu_count() - 1)
    fit(-cpu_count())  # the lowest that leaves a worker is taken


@pytest.mark.parametrize("progress", ["yes", 3, print])
@pytest.mark.parametrize("method", [
    lambda p: TMCShapley(_tree(), max_permutations=2, progress=p),
    lambda p: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1, progress=p),
    lambda p: LeaveOneOut(_tree(), progress=p),
    lambda p: ThresholdingOOB(_tree(), max_iter=4, progress=p),
    lambda p: DataOOB(_tree(), n_estimators=4, progress=p),
    lambda p: KNNShapley(progress=p),
    lambda p: KNNOutOfBag(progress=p),
    lambda p: SequentialRemoval(LeaveOneOut(_tree()), max_remove=2, progress=p),
], ids=["tmc", "tdshap", "loo", "tdoob", "data_oob", "knn_shapley", "knn_oob", "sequential"])
def test_a_progress_that_is_not_true_or_false_is_refused(method, progress):
    # progress="yes" or 3 was truthy and showed a bar, a callable too (not called): every
    # method took them as find_harmful does not
    with pytest.raises(TypeError, match=r"progress=.* must be True or False"):
        method(progress).fit(X_OK, Y_OK, X_OK, Y_OK)
    method(np.bool_(False)).fit(X_OK, Y_OK, X_OK, Y_OK)  # numpy's bool is a switch too

#: a method of each kind, each warning of the validation rows it is given
HELD_OUT_WARNERS = pytest.mark.parametrize("method", [
    TMCShapley(_tree(), max_permutations=2),
    TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1),
    LeaveOneOut(_tree()),
    ThresholdingOOB(_tree(), max_iter=4),
    KNNShapley(),
], ids=["tmc", "tdshap", "loo", "tdoob", "knn_shapley"])


@HELD_OUT_WARNERS
def test_validation_rows_of_a_single_class_are_warned_about(method):
    # find_harmful warned, the methods did not: every score rewards predicting that class,
    # so the other classes' rows were valued as harmful, silently
    with pytest.warns(UserWarning, match=r"the validation rows hold a single class \('ham'\): "
                                         r"a model that predicts it .* of every class") as seen:
        method.fit(X_OK, np.where(Y_OK == 1, "spam", "ham"), X_OK, np.full(20, "ham"))
    assert seen[0].filename == __file__  # the user's call of fit
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # two classes: no warning
        method.fit(X_OK, Y_OK, X_OK, Y_OK)



@pytest.mark.parametrize("method", [
    lambda: TMCShapley(_tree(), max_permutations=2),
    lambda: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1),
    lambda: LeaveOneOut(_tree()),
    lambda: ThresholdingOOB(_tree(), max_iter=4),
    lambda: DataOOB(_tree(), n_estimators=4),
    lambda: KNNShapley(),
    lambda: KNNOutOfBag(),
], ids=["tmc", "tdshap", "loo", "tdoob", "data_oob", "knn_shapley", "knn_oob"])
def test_training_rows_of_a_single_class_are_refused(method):
    # every model predicted that class: the values were all 0 (all 1 for ThresholdingOOB),
    # with no word of it, where find_harmful and KNNOutOfBag refused them
    with pytest.raises(ValueError, match=r"y holds a single class \('ham'\): every model would "
                                         r"predict it, .* at least two classes"):
        method().fit(X_OK, np.full(20, "ham"), X_OK, np.where(Y_OK == 1, "spam", "ham"))


@pytest.mark.parametrize("method", [
    lambda: TMCShapley(DecisionTreeRegressor(), max_permutations=2),
    lambda: LeaveOneOut(DecisionTreeRegressor()),
    lambda: ThresholdingOOB(DecisionTreeRegressor(), max_iter=4),
    lambda: DataOOB(DecisionTreeRegressor(), n_estimators=4),
    lambda: KNNShapley(KNeighborsRegressor(3)),
], ids=["tmc", "loo", "tdoob", "data_oob", "knn_shapley"])
def test_a_constant_regression_target_is_refused(method):
    # every model predicted it: every value was 0, silently (find_harmful refused it)
    with pytest.raises(ValueError, match=r"y is constant \(2.5\): every model would predict "
                                         r"it, .* give a target that varies"):
        method().fit(X_OK + np.arange(20)[:, None], np.full(20, 2.5), X_OK, Y_OK * 1.0)


@pytest.mark.parametrize(("method", "switch"), [
    (lambda v: KNNShapley(center=v), "center"),
    (lambda v: ThresholdingOOB(_tree(), max_iter=4, per_row_bags=v), "per_row_bags"),
], ids=["knn_shapley-center", "tdoob-per_row_bags"])
def test_a_switch_that_is_not_true_or_false_is_refused(method, switch):
    # center="no" and per_row_bags="no" were truthy: they switched it on, silently
    with pytest.raises(TypeError, match=rf"{switch}='no' must be True or False"):
        method("no").fit(X_OK, Y_OK, X_OK, Y_OK)
    method(np.bool_(False)).fit(X_OK, Y_OK, X_OK, Y_OK)


@pytest.mark.parametrize("method", [
    lambda: LeaveOneOut(DecisionTreeRegressor()),
    lambda: TMCShapley(DecisionTreeRegressor(), max_permutations=2),
    lambda: ThresholdingOOB(DecisionTreeRegressor(), max_iter=4),
], ids=["loo", "tmc", "tdoob"])
def test_text_targets_for_a_regressor_are_refused_by_name(method):
    # the error was the metric's "could not convert string to float: 'ham'", with "choose
    # another metric" for its fix
    labels = np.where(Y_OK == 1, "spam", "ham")
    with pytest.raises(ValueError, match=r"y holds text labels \('ham', 'spam'\) but "
                                         r"DecisionTreeRegressor is a regressor, which predicts "
                                         r"numbers: give numeric targets, or a classifier"):
        method().fit(X_OK, labels, X_OK, labels)
    # dates and time spans too: scikit-learn regressed on their nanoseconds, silently
    for times, kind in ((np.datetime64("2020-01-01") + np.arange(20).astype("timedelta64[D]"),
                         "dates or times"), (np.arange(20).astype("timedelta64[D]"),
                                             "time spans")):
        with pytest.raises(ValueError, match=rf"y holds {kind} \(.*\) but "
                                             r"DecisionTreeRegressor is a regressor"):
            method().fit(X_OK, times, X_OK, times)

@HELD_OUT_WARNERS
def test_validation_classes_no_training_row_has_are_warned_about(method):
    # find_harmful warned, the methods did not: those rows count as errors for every model
    y_val = np.where(np.arange(20) < 3, 7, Y_OK)
    with pytest.warns(UserWarning, match=r"^the validation labels include 1 class\(es\) no "
                      r"training row has \(7; 3 rows\): no model can predict them") as seen:
        method.fit(X_OK, Y_OK, X_OK, y_val)
    assert seen[0].filename == __file__  # the user's call of fit
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every class seen: no warning
        method.fit(X_OK, Y_OK, X_OK, Y_OK)


class _NaNModel(DecisionTreeClassifier):
    """Predicts NaN (probabilities too), as a broken custom model may."""

    def predict(self, X):
        return np.full(len(X), np.nan)

    def predict_proba(self, X):
        return np.full((len(X), len(self.classes_)), np.nan)


def test_every_fit_failing_on_tiny_data_names_the_data_not_the_model():
    # each bag of the two rows held one class, which LogisticRegression refuses: the error
    # said "fix the estimator or its parameters"
    X, y = np.array([[0.0], [1.0]]), np.array([0, 1])
    with pytest.raises(ValueError, match=r"failed on every one of its \d+ fits.*: it fits all "
                       r"2 training rows but not rows of a single class, .* so the problem is "
                       r"the data: give more training rows of each class\.$"):
        ThresholdingOOB(LogisticRegression(), max_iter=4, random_state=0).fit(X, y, X, y)


@pytest.mark.parametrize("method", [
    lambda: TDShap(_NaNModel(), "accuracy", n_min=10, k=5, max_iter=1, random_state=0),
    lambda: TDShap(_NaNModel(), "true_class_proba", n_min=10, k=5, max_iter=1,
                   random_state=0),
    lambda: TMCShapley(_NaNModel(), "accuracy", max_permutations=1, random_state=0),
    lambda: ThresholdingOOB(_NaNModel(), k=5, max_iter=1, random_state=0),
    lambda: DataOOB(_NaNModel(), n_estimators=10, random_state=0),
], ids=["tdshap", "proba", "tmc", "tdoob", "data_oob"])
def test_nan_predictions_are_failed_fits_not_zero_values(breast_cancer_small, method):
    # accuracy on NaN predictions was 0 for every subset: every value 0, with no word of it
    d = breast_cancer_small
    with pytest.raises(ValueError, match=r"failed on every one of its \d+ fits.*the fitted "
                                         r"model's predict(_proba)? returned NaN or infinite"):
        method().fit(d.X_train, d.y_train, d.X_val, d.y_val)


@pytest.mark.parametrize("method", [
    lambda: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=10**23, time_budget=1),
    lambda: TMCShapley(_tree(), "accuracy", max_permutations=2**63, time_budget=1),
    lambda: ThresholdingOOB(_tree(), max_iter=10**23, time_budget=1),
], ids=["tdshap", "tmc", "tdoob"])
def test_more_rounds_than_a_64_bit_count_are_refused(method):
    # max_iter=10**23 was taken and ran for ever (here: until the time budget)
    with pytest.raises(ValueError, match=r"(max_iter|max_permutations)=\d+ must be a whole "
                                         r"number from \d+ to 9223372036854775807\. Or None "
                                         r"for no limit on rounds \(with time_budget"):
        method().fit(X_OK, Y_OK, X_OK, Y_OK)


def test_cleanse_refuses_a_non_estimator():
    values = np.linspace(-1, 1, 20)
    with pytest.raises(ValueError, match="_NotAnEstimator is not a scikit-learn estimator"):
        cleanse(values, _NotAnEstimator(), X_OK, Y_OK, X_OK, Y_OK)


class _ChangesItsParameter(DecisionTreeClassifier):
    """A scikit-learn estimator whose __init__ changes a parameter: clone refuses it."""

    def __init__(self, max_depth=2):
        super().__init__(max_depth=max_depth * 2)


@pytest.mark.parametrize("fit", [
    lambda e: TDShap(e, "accuracy", n_min=2, k=2, max_iter=1).fit(X_OK, Y_OK, X_OK, Y_OK),
    lambda e: TMCShapley(e, max_permutations=1).fit(X_OK, Y_OK, X_OK, Y_OK),
    lambda e: DataOOB(e, n_estimators=2).fit(X_OK, Y_OK),
    lambda e: LeaveOneOut(e).fit(X_OK, Y_OK, X_OK, Y_OK),
    lambda e: cleanse(np.linspace(-1, 1, 20), e, X_OK, Y_OK, X_OK, Y_OK),
], ids=["tdshap", "tmc", "data_oob", "loo", "cleanse"])
def test_an_estimator_clone_cannot_copy_is_refused_by_name(fit):
    # scikit-learn's RuntimeError "Cannot clone object ..." from inside the first fit
    with pytest.raises(ValueError, match=r"estimator _ChangesItsParameter cannot be cloned for "
                                         r"each fit \(sklearn.base.clone: RuntimeError: "
                                         r"Cannot clone object.*its __init__ must store each "
                                         r"parameter as given"):
        fit(_ChangesItsParameter())


@pytest.mark.parametrize("fit", [
    lambda rs: find_harmful(X_OK + np.arange(20)[:, None], Y_OK, random_state=rs),
    lambda rs: cleanse(np.linspace(-1, 1, 20), _tree(), X_OK, Y_OK, X_OK, Y_OK,
                       random_state=rs),
    lambda rs: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1, random_state=rs).fit(
        X_OK, Y_OK, X_OK, Y_OK),
    lambda rs: KNNShapley(KNeighborsClassifier(3), random_state=rs).fit(X_OK, Y_OK, X_OK, Y_OK),
    lambda rs: KNNOutOfBag(random_state=rs).fit(X_OK, Y_OK),
    lambda rs: SequentialRemoval(TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1), step=5,
                                 random_state=rs).fit(X_OK, Y_OK, X_OK, Y_OK),
], ids=["find_harmful", "cleanse", "tdshap", "knn_shapley", "knn_oob", "sequential"])
def test_every_entry_point_refuses_a_float_seed_the_same_way(fit):
    # one policy (check_random_state): find_harmful and cleanse took 1.0 as 1, the classes
    # refused it, and KNNShapley and SequentialRemoval failed inside numpy's SeedSequence
    with pytest.raises(ValueError, match=r"random_state=1.0 must be .*\(an int\).*; pass 1: "
                                         r"numpy and scikit-learn take a seed as an int"):
        fit(1.0)


@pytest.mark.parametrize("seed, generator", [(-2.0, True), (2.0**40, False)])
def test_a_float_seed_is_not_told_to_pass_an_int_that_is_refused_too(seed, generator):
    # "pass -2" (negative) and "pass 1099511627776" (past 2**32, where scikit-learn takes
    # the seed) named as the fix ints that the same check refuses
    with pytest.raises(ValueError, match=r"must be .*\(an int\)[^;]*\.$") as err:
        check_random_state(seed, generator=generator)
    assert "pass" not in str(err.value)


_FRAME_OK = pd.DataFrame(np.arange(40.0).reshape(20, 2), columns=["a", "b"],
                         index=range(100, 120))
_SHUFFLED = pd.Series(Y_OK, index=_FRAME_OK.index).sample(frac=1, random_state=0)


@pytest.mark.parametrize("fit", [
    lambda: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1).fit(
        _FRAME_OK, _SHUFFLED, X_OK, Y_OK),
    lambda: DataOOB(_tree(), n_estimators=2).fit(_FRAME_OK, _SHUFFLED),
    lambda: KNNShapley(KNeighborsClassifier(3)).fit(_FRAME_OK, _SHUFFLED, X_OK, Y_OK),
    lambda: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1).fit(
        X_OK, Y_OK, _FRAME_OK, _SHUFFLED),
    lambda: cleanse(np.zeros(20), _tree(), X_OK, Y_OK, X_OK, Y_OK, _FRAME_OK, _SHUFFLED),
], ids=["tdshap", "data_oob", "knn_shapley", "validation-pair", "cleanse-test-pair"])
def test_a_pandas_y_in_another_row_order_than_X_is_refused(fit):
    # y was paired with X by position: every row took another row's label, silently
    with pytest.raises(ValueError, match=r"have the same row labels in a different order .*"
                                         r"\.loc\[X(_val|_test)?\.index\]"):
        fit()


def test_a_pandas_y_with_the_same_row_labels_as_X_is_used():
    y = pd.Series(Y_OK, index=_FRAME_OK.index)
    values = KNNShapley(KNeighborsClassifier(3)).fit(_FRAME_OK, y, X_OK, Y_OK).result_.values
    np.testing.assert_array_equal(
        values, KNNShapley(KNeighborsClassifier(3)).fit(_FRAME_OK, Y_OK, X_OK, Y_OK).result_.values)


_MASKED = np.ma.masked_array(X_OK, mask=np.eye(20, 2, dtype=bool))


@pytest.mark.parametrize(("fit", "message"), [
    (lambda: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1).fit(
        _MASKED, Y_OK, X_OK, Y_OK), r"X is a masked array with 2 masked entries, whose hidden "
     r"values would be used: fill them with X.filled\(np.nan\) and impute them"),
    (lambda: TDShap(_tree(), "accuracy", n_min=2, k=2, max_iter=1).fit(
        X_OK, Y_OK, X_OK, np.ma.masked_array(Y_OK, mask=Y_OK == 1)),
     r"y_val is a masked array with 10 masked entries, .*drop those rows"),
    (lambda: KNNShapley(KNeighborsClassifier(3)).fit(_MASKED, Y_OK, X_OK, Y_OK),
     r"X is a masked array with 2 masked entries"),
    (lambda: cleanse(np.zeros(20), _tree(), X_OK, Y_OK, X_OK, Y_OK, _MASKED, Y_OK),
     r"X_test is a masked array with 2 masked entries"),
], ids=["tdshap-X", "tdshap-y_val", "knn_shapley-X", "cleanse-X_test"])
def test_a_masked_array_with_masked_entries_is_refused_not_unmasked(fit, message):
    with pytest.raises(ValueError, match=message):
        fit()


def test_a_masked_array_without_masked_entries_is_its_data():
    unmasked = np.ma.masked_array(X_OK + np.arange(20)[:, None], mask=False)
    values = KNNShapley(KNeighborsClassifier(3)).fit(unmasked, Y_OK, X_OK, Y_OK).result_.values
    np.testing.assert_array_equal(values, KNNShapley(KNeighborsClassifier(3)).fit(
        unmasked.data, Y_OK, X_OK, Y_OK).result_.values)


def test_knn_shapley_refuses_rows_that_are_not_vectors():
    X3 = np.zeros((20, 2, 2))  # scipy's cdist refused it: "XA must be a 2-dimensional array"
    with pytest.raises(ValueError, match=r"2-D \(rows x features\), got shape \(20, 2, 2\)"):
        KNNShapley(KNeighborsClassifier(3)).fit(X3, Y_OK, X3, Y_OK)


def test_auto_thresholds_follow_the_spread_of_the_initial_marginals(breast_cancer_small):
    from tdshap.methods.apt.thresholds import auto_thresholds, marginal_scale

    d = breast_cancer_small
    m = TDShap(_tree(), "accuracy", tau="auto", eps="auto", n_min=10, k=5, max_iter=5,
               random_state=0).fit(d.X_train, d.y_train, d.X_val, d.y_val)
    assert m.eps_ > 0 and m.tau_ == -m.eps_
    assert m.result_.threshold == m.tau_ and m.result_.extra["eps"] == m.eps_
    np.testing.assert_array_equal(m.harmful_, m.values_ <= m.tau_)
    phi = np.array([0.0, 0.0, 0.0, 0.3, -0.3])
    assert marginal_scale(phi) == pytest.approx(np.std(phi))
    assert auto_thresholds(phi, -0.5, "auto", eps_factor=1.0) == (-0.5, pytest.approx(np.std(phi)))


def test_truncation_stops_a_chain_once_scores_settle(breast_cancer_small):
    from tdshap.utility.base import Truncation

    d = breast_cancer_small
    util = Utility(_tree(), "accuracy", d.X_train, d.y_train, d.X_val, d.y_val)
    full = util(np.arange(60))
    perm = np.random.default_rng(0).permutation(60)
    out = util.evaluate_chain(np.array([], dtype=int), perm, 1, Truncation(full, 1.0, 2))
    # a 100% tolerance settles at once: three evaluated scores, then the rest repeat
    assert util.n_truncated == 60 - 2
    assert (out[3:] == out[2]).all()


def _with_huge_column(scale: float) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(30, 2)), rng.normal(size=(12, 2))
    y, yv = (X[:, 0] > 0).astype(int), (Xv[:, 0] > 0).astype(int)
    X[:, 1] *= scale
    return X, y, Xv, yv


#: one method of each kind of fit: chains of refits, leave-one-out, bags
LARGE_VALUE_METHODS = pytest.mark.parametrize("method", [
    lambda m: TDShap(m, max_iter=2, random_state=0),
    lambda m: LeaveOneOut(m),
    lambda m: DataOOB(m, n_estimators=10, random_state=0),
], ids=["tdshap", "loo", "data_oob"])


@LARGE_VALUE_METHODS
def test_features_too_large_to_standardise_are_refused_as_find_harmful_does(method):
    # 1e300 squared passes float64's range: a tree's every fit failed ("fix the
    # estimator"), a k-NN's distances were infinite; find_harmful refused them by name
    X, y, Xv, yv = _with_huge_column(1e300)
    for model in (DecisionTreeClassifier(random_state=0), KNeighborsClassifier(3)):
        with pytest.raises(ValueError, match=r"^X's column 1 has values too large to "
                           r"standardise \(up to .*\): rescale that column"):
            method(model).fit(X, y, Xv, yv)


@LARGE_VALUE_METHODS
def test_features_past_float32_name_the_data_where_the_model_computes_in_it(method):
    # a tree computes in float32: every fit on 1e39 failed, and the error said "fix the
    # estimator"; a k-NN, in float64, values the same rows as before
    X, y, Xv, yv = _with_huge_column(1e39)
    with pytest.raises(ValueError, match=r"failed on every one of its \d+ fits.*: the "
                       r"features hold values up to .*e\+39, past the float32 range .* so the "
                       r"problem is the data: rescale"):
        method(DecisionTreeClassifier(random_state=0)).fit(X, y, Xv, yv)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        method(KNeighborsClassifier(3)).fit(X, y, Xv, yv)


def test_the_bandits_next_arms_are_the_first_of_every_arm_sorted():
    # select sorts only the arms up to the k-th smallest index: the same arms, same order
    from tdshap.methods.apt.bandit import APTState

    draw = np.random.default_rng(0)
    for _ in range(200):
        n = int(draw.integers(1, 200))
        state = APTState(n, 0.0, 0.05)
        state.mu[:] = np.round(draw.normal(size=n), 1)  # tied indices
        state.counts[:] = draw.integers(0, 4, n)
        k, seed = int(draw.integers(0, n + 2)), int(draw.integers(2**31))
        tiebreak = np.random.default_rng(seed).random(n)
        expected = np.lexsort((tiebreak, state.index()))[:k]
        assert np.array_equal(state.select(k, np.random.default_rng(seed)), expected)
