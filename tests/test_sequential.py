"""SequentialRemoval: repeated valuation and removal, LOO_k as a special case."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsRegressor
from sklearn.tree import DecisionTreeRegressor

from tdshap import LeaveOneOut, SequentialRemoval, TDShap, cleanse
from tdshap.methods import KNNShapley


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(90, 3))
    y = X @ np.array([1.0, -1.0, 0.5]) + rng.normal(0, 0.2, 90)
    y[:6] += rng.choice([-4, 4], 6)  # corrupted rows
    return X[:50], y[:50], X[50:], y[50:]


@pytest.mark.parametrize("estimator", [Ridge(), DecisionTreeRegressor(max_depth=2)])
def test_sequential_plain_loo_is_loo_k(data, estimator):
    for k in (1, 3):
        loo_k = LeaveOneOut(estimator, "neg_mae", k=k, max_remove=12, fast_path=False,
                            random_state=4).fit(*data)
        seq = SequentialRemoval(LeaveOneOut(estimator, "neg_mae", fast_path=False), step=k,
                                max_remove=12, random_state=4).fit(*data)
        # one implementation: the same order (ties included: the tree has many), values, fits
        np.testing.assert_array_equal(seq.order_, loo_k.order_)
        np.testing.assert_array_equal(seq.values_, loo_k.values_)
        assert seq.result_.n_fits == loo_k.result_.n_fits
        assert seq.result_.algorithm == "sequential_loo"
        assert seq.n_stages_ == -(-12 // k) == len(seq.result_.extra["stage_fits"])
    with pytest.raises(ValueError, match="does not checkpoint"):
        SequentialRemoval(LeaveOneOut(Ridge()), checkpoint="x.tdshap").fit(*data)


def test_order_is_a_full_ranking_and_values_come_from_the_removing_stage(data):
    X, y, Xv, yv = data
    seq = SequentialRemoval(LeaveOneOut(Ridge(), "neg_mae", fast_path=False), step=4,
                            max_remove=10, random_state=0).fit(X, y, Xv, yv)
    order = seq.order_
    assert sorted(order) == list(range(len(y)))
    assert seq.result_.ranking().tolist() == order.tolist()
    # stage 2 ran on the rows stage 1 kept: its values are LOO values on that subset
    first = order[:4]
    keep = np.setdiff1d(np.arange(len(y)), first)
    second = LeaveOneOut(Ridge(), "neg_mae").fit(X[keep], y[keep], Xv, yv).values_
    np.testing.assert_allclose(seq.values_[keep][np.argsort(second)[:4]],
                               np.sort(second)[:4])
    assert set(order[4:8]) == set(keep[np.argsort(second)[:4]])
    assert seq.result_.extra["stages"] == 3 and seq.result_.extra["stage_fits"][0] == 51


def test_tdshap_stages_follow_the_shrinking_data(data):
    seq = SequentialRemoval(TDShap(Ridge(), "neg_mae", k=5, n_min=0.9, max_iter=5), step=5,
                            max_remove=20, random_state=3)
    seq.fit(*data)
    again = SequentialRemoval(TDShap(Ridge(), "neg_mae", k=5, n_min=0.9, max_iter=5), step=5,
                              max_remove=20, random_state=3).fit(*data)
    np.testing.assert_array_equal(seq.order_, again.order_)  # same seed, same result
    assert seq.result_.algorithm == "sequential_tdshap" and seq.n_stages_ == 4
    # the corrupted rows are found first, and the ranking cleanses
    assert len(set(seq.order_[:10]) & set(range(6))) >= 5
    cleaned = cleanse(seq.result_, Ridge(), *data, step=2)
    assert cleaned.n_remove > 0 and cleaned.cleaned_val > cleaned.baseline_val


def test_fractional_n_min_resolves_against_n_and_k(data):
    m = TDShap(Ridge(), "neg_mae", k=5, n_min=0.9, max_iter=1).fit(*data)
    assert m.result_.extra["n_min"] == 45  # floor(0.9 * 50), and 45 + 5 <= 50
    m = TDShap(Ridge(), "neg_mae", k=10, n_min=0.95, max_iter=1).fit(*data)
    assert m.result_.extra["n_min"] == 40  # capped at N - k
    with pytest.raises(ValueError, match="fraction of N"):
        TDShap(Ridge(), "neg_mae", n_min=1.5).fit(*data)


def test_input_errors_and_row_labels(data):
    X, y, Xv, yv = data
    with pytest.raises(ValueError, match="valuation method"):
        SequentialRemoval(Ridge()).fit(X, y, Xv, yv)
    # the class itself: its get_params wanted self ("missing 1 required positional argument")
    with pytest.raises(ValueError, match=r"got the class LeaveOneOut: pass "
                       r"LeaveOneOut\(estimator\)"):
        SequentialRemoval(LeaveOneOut).fit(X, y, Xv, yv)
    with pytest.raises(ValueError, match="step"):
        SequentialRemoval(LeaveOneOut(Ridge()), step=0).fit(X, y, Xv, yv)
    with pytest.raises(ValueError, match="at most N - 1"):
        SequentialRemoval(LeaveOneOut(Ridge()), max_remove=50).fit(X, y, Xv, yv)
    frame = pd.DataFrame(X, index=[f"r{i}" for i in range(len(y))])
    seq = SequentialRemoval(LeaveOneOut(Ridge()), step=25).fit(frame, y, Xv, yv)
    assert seq.result_.extra["max_remove"] == 25  # default: half of N
    assert seq.result_.to_dataframe().index[0] == "r0"


def test_a_killed_run_resumes_after_its_last_stage(data, tmp_path, monkeypatch):
    from tdshap.methods.checkpoint.files import checkpoint_info

    def make(**kw):
        return SequentialRemoval(TDShap(Ridge(), "neg_mae", k=5, n_min=0.8, max_iter=3,
                                        fast_path=False), step=4, max_remove=16,
                                 random_state=1, **kw)

    expected = make().fit(*data)
    path = tmp_path / "seq.tdshap"
    stages = []
    original = SequentialRemoval._stage

    def dies_in_stage_3(self, *args, **kwargs):
        stages.append(1)
        if len(stages) == 3:
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SequentialRemoval, "_stage", dies_in_stage_3)
    with pytest.raises(KeyboardInterrupt):
        make(checkpoint=path).fit(*data)
    monkeypatch.setattr(SequentialRemoval, "_stage", original)
    info = checkpoint_info(path)
    assert info["rounds"] == 2 and not info["finished"]
    resumed = make(checkpoint=path, resume=True).fit(*data)
    np.testing.assert_array_equal(resumed.order_, expected.order_)
    np.testing.assert_array_equal(resumed.values_, expected.values_)
    assert resumed.result_.n_fits == expected.result_.n_fits
    assert checkpoint_info(path)["finished"]
    assert resumed.result_.extra["resume"] == f"continued from {path}"
    with pytest.raises(ValueError, match=r"different settings.*step"):
        SequentialRemoval(expected.method, step=2, max_remove=16, random_state=1,
                          resume=path).fit(*data)
    with pytest.raises(ValueError, match="no such checkpoint file"):  # the same rule as TDShap's
        make(resume=tmp_path / "missing.tdshap").fit(*data)


def _seq_checkpoint(data, tmp_path):
    """A checkpoint of a SequentialRemoval run stopped after 2 of its 4 stages."""
    from tdshap.methods.checkpoint.files import read_checkpoint

    def make(**kw):
        kw.setdefault("max_remove", 16)
        return SequentialRemoval(LeaveOneOut(Ridge(), "neg_mae", k=1, max_remove=1), step=4,
                                 random_state=1, **kw)

    path = tmp_path / "seq.tdshap"
    make(max_remove=8, checkpoint=path).fit(*data)  # 2 stages: what the longer run saved
    meta, arrays = read_checkpoint(path)
    meta["settings"]["max_remove"] = 16
    meta["finished"] = False
    return make, path, meta, arrays


def _swap_first(a):
    return np.r_[a[1], a[0], a[2:]]


@pytest.mark.parametrize("edit", [
    # row indices: the removed rows and the others must split the rows
    {"removed": lambda a: np.r_[-1, a["removed"][1:]]},
    {"removed": lambda a: np.r_[a["removed"][:-1], a["removed"][0]]},
    {"removed": lambda a: np.r_[a["removed"][:-1], 999]},
    {"removed": lambda a: a["removed"].astype(float)},
    {"rest": lambda a: a["rest"][:-3]},
    {"rest": lambda a: np.r_[a["rest"][:-1], a["removed"][0]]},
    {"removed": None},
    # progress beyond what the settings allow, or out of step with the stages
    {"removed": lambda a: np.arange(30), "rest": lambda a: np.arange(30, 50)},
    {"removed": lambda a: a["removed"][:-1], "rest": lambda a: np.r_[a["rest"],
                                                                     a["removed"][-1]]},
    {"meta.rounds": 5, "meta.stage_fits": [1, 2, 3, 4, 5]},
    {"meta.stage_fits": "abc"},
    {"meta.finished": "yes"},
    {"meta.finished": True},
    # the estimates: shapes, NaN, signs
    {"values": lambda a: a["values"][:10]},
    {"values": lambda a: a["values"].reshape(5, 10)},
    {"values": lambda a: np.full(50, np.nan)},
    {"values": lambda a: np.full(50, np.inf)},
    {"counts": lambda a: -a["counts"]},
    {"counts": lambda a: a["counts"] + 0.5},
    {"variances": lambda a: -np.ones(50)},
    # counters, clock and random generator
    {"meta.totals": None},
    {"meta.totals": {"n_fits": "x", "n_evaluations": 0, "fit_seconds": 0.0}},
    {"meta.totals": {"n_fits": 0, "n_evaluations": 0, "fit_seconds": 0.0, "evil": 1}},
    {"meta.totals.n_fits": 1},
    {"meta.elapsed": None},
    {"meta.elapsed": "x"},
    {"meta.rng": {"bit_generator": "seed"}},
    {"meta.rng": {"bit_generator": "default_rng"}},
    {"meta.rng": {"bit_generator": ["PCG64"]}},
    {"meta.rng": {"bit_generator": "PCG64", "state": 3}},
], ids=lambda e: "-".join(e))
def test_an_edited_checkpoint_is_refused_before_any_stage(data, tmp_path, monkeypatch, edit):
    from tdshap.methods.checkpoint.files import write_checkpoint

    make, path, meta, arrays = _seq_checkpoint(data, tmp_path)
    for key, change in edit.items():
        if key.startswith("meta.totals."):
            meta["totals"][key.split(".")[-1]] += change
        elif key.startswith("meta."):
            meta[key[5:]] = change
            if change is None:
                del meta[key[5:]]
        elif change is None:
            del arrays[key]
        else:
            arrays[key] = change(arrays)
    write_checkpoint(path, {k: v for k, v in meta.items() if k not in ("format", "version")},
                     arrays)
    # a file names no function to call (the 'seed' edit called np.random.seed())
    monkeypatch.setattr(np.random, "seed", lambda *a: pytest.fail("the file called a function"))
    monkeypatch.setattr(SequentialRemoval, "_stage", lambda *a: pytest.fail("a stage ran"))
    with pytest.raises(ValueError, match=r"seq.tdshap' is damaged or was edited: .*start a "
                                         r"new run without `resume`"):
        make(resume=path).fit(*data)


def test_a_checkpoint_as_saved_resumes_to_the_uninterrupted_run(data, tmp_path):
    from tdshap.methods.checkpoint.files import write_checkpoint

    make, path, meta, arrays = _seq_checkpoint(data, tmp_path)
    write_checkpoint(path, {k: v for k, v in meta.items() if k not in ("format", "version")},
                     arrays)
    resumed, expected = make(resume=path).fit(*data), make().fit(*data)
    np.testing.assert_array_equal(resumed.order_, expected.order_)
    np.testing.assert_array_equal(resumed.values_, expected.values_)
    assert resumed.result_.n_fits == expected.result_.n_fits


@pytest.mark.parametrize("model", [KNeighborsRegressor(3), Ridge()])
def test_a_model_given_as_the_method_is_refused_by_name(data, model):
    # a k-NN has an attribute algorithm (its neighbour search, 'auto'), which passed for a
    # valuation method's: its fit then failed inside scikit-learn ("takes 3 positional
    # arguments but 5 were given")
    with pytest.raises(ValueError, match=r"method must be a tdshap valuation method such as "
                                         r"TDShap\(Ridge\(\)\), not the model itself"):
        SequentialRemoval(model, step=5).fit(*data)


@pytest.mark.parametrize("inner", [{"checkpoint": "inner.tdshap"},
                                   {"checkpoint": "inner.tdshap", "resume": True},
                                   {"resume": "inner.tdshap"}])
def test_the_method_s_own_checkpoint_is_refused_before_any_stage(data, tmp_path, monkeypatch,
                                                                  inner):
    # every stage would write the one file (each on other rows), or resume the previous
    # stage's checkpoint and fail on its data after that stage's work
    monkeypatch.chdir(tmp_path)
    (tmp_path / "inner.tdshap").write_bytes(b"the user's file")
    monkeypatch.setattr(SequentialRemoval, "_stage", lambda *a: pytest.fail("a stage ran"))
    method = TDShap(Ridge(), "neg_mae", k=5, n_min=0.8, max_iter=2, **inner)
    with pytest.raises(ValueError, match=r"checkpoint= and resume= of SequentialRemoval"):
        SequentialRemoval(method, step=4, max_remove=8, checkpoint=tmp_path / "seq.tdshap",
                          ).fit(*data)
    assert (tmp_path / "inner.tdshap").read_bytes() == b"the user's file"
    assert not (tmp_path / "seq.tdshap").exists()


def test_a_stage_left_rows_of_one_class_still_runs_but_the_callers_rows_are_checked():
    # the methods refuse training rows of a single class; a later stage may be left such
    # rows (the minority's were removed first) and its equal values were always taken
    from sklearn.tree import DecisionTreeClassifier

    from tdshap import TMCShapley

    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(20, 2)), rng.normal(size=(20, 2))
    y, yv = np.zeros(20, int), np.zeros(20, int)
    y[:3] = yv[0] = 1  # three minority rows of noise
    seq = SequentialRemoval(TMCShapley(DecisionTreeClassifier(random_state=0),
                                       max_permutations=5), step=2, random_state=0)
    assert set(seq.fit(X, y, Xv, yv).order_[:10]) >= {0, 1, 2}  # the minority went first
    with pytest.raises(ValueError, match=r"y holds a single class \(0\)"):
        seq.fit(X, np.zeros(20, int), Xv, yv)


@pytest.mark.parametrize("method", [
    lambda model: TDShap(model, k=2, n_min=0.5, max_iter=2),
    lambda model: LeaveOneOut(model),
    lambda model: KNNShapley(n_neighbors=3),
], ids=["tdshap", "loo", "knn"])
@pytest.mark.parametrize(("yv", "message"), [
    (np.zeros(10, int), "the validation rows hold a single class"),
    (np.array([0, 1, 2] * 3 + [0]), "the validation labels include 1 class"),
], ids=["one-class", "unseen"])
def test_held_out_class_warnings_come_once_not_once_a_stage(method, yv, message):
    # each stage's method warned again of the same validation rows
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(20, 2)), rng.normal(size=(10, 2))
    y = np.arange(20) % 2
    seq = SequentialRemoval(method(DecisionTreeClassifier(random_state=0)), step=2,
                            max_remove=6, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seq.fit(X, y, Xv, yv)
    held_out = [w for w in caught if str(w.message).startswith(message)]
    assert seq.n_stages_ == 3 and len(held_out) == 1, [str(w.message) for w in caught]
    assert held_out[0].filename == __file__  # the user's call of fit, not a stage's
