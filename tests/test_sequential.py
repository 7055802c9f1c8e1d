"""SequentialRemoval: repeated valuation and removal, LOO_k as a special case."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import Ridge
from sklearn.tree import DecisionTreeRegressor

from tdshap import LeaveOneOut, SequentialRemoval, TDShap, cleanse


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
