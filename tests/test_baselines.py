"""Baselines: TMC Shapley, sequential LOO, random removal (SPEC §3).

Checked against exact answers: TMC against enumeration of a tiny game
(``games.exact_shapley``) and the efficiency axiom; LOO against
direct refits of the estimator. (pyDVL 0.10.0, the planned independent
cross-check, pins ``numpy<2`` and cannot be installed beside this project's
numpy 2; see docs/results.md.)
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.tree import DecisionTreeRegressor

from games import exact_shapley
from tdshap.cleansing import cleanse
from tdshap.methods import LeaveOneOut, RandomRemoval, TMCShapley
from tdshap.methods.stopping import MeanRelativeChange, RunStatus, StoppingCriterion
from tdshap.methods.tmc import resolve_truncation
from tdshap.utility.base import Utility
from tdshap.utility.metrics import resolve_metric


def _regression(n: int, seed: int = 0, outliers: int = 2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * n, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.normal(size=2 * n)
    y[:outliers] += 6.0  # a few corrupted training targets
    return X[:n], y[:n], X[n:], y[n:]


def _direct_score(estimator, rows, X, y, Xv, yv, seed=None):
    """V(rows) by fitting the estimator directly (no Utility, no cache)."""
    model = clone(estimator)
    if seed is not None:
        model.set_params(random_state=seed)
    if len(rows) == 0:
        return -float(np.mean(np.abs(yv - np.mean(y))))
    model.fit(X[rows], y[rows])
    return resolve_metric("neg_mae").score(model, Xv, yv)


# -- TMC -------------------------------------------------------------------


def test_tmc_without_truncation_matches_exact_shapley():
    X, y, Xv, yv = _regression(6)
    tmc = TMCShapley(Ridge(alpha=1.0), "neg_mae", truncation=None, rtol=None,
                     max_permutations=1500, batch_size=50, random_state=1).fit(X, y, Xv, yv)
    util = Utility(Ridge(alpha=1.0), "neg_mae", X, y, Xv, yv)
    exact, _ = exact_shapley(lambda s: util(np.asarray(s, dtype=np.intp)), 6)
    res = tmc.result_
    assert res.counts.tolist() == [1500] * 6
    assert tmc.n_permutations_ == 1500
    # Monte Carlo error only: within 4 standard errors of the exact values
    assert np.all(np.abs(res.values - exact) <= 4 * res.stderr + 1e-12)
    assert spearmanr(res.values, exact).statistic > 0.9
    # efficiency: every permutation's marginals sum to V(D) - V(empty) exactly
    v_full, v_empty = util(np.arange(6)), util(np.empty(0, dtype=np.intp))
    assert res.values.sum() == pytest.approx(v_full - v_empty, abs=1e-9)
    assert res.extra["empty_score"] == pytest.approx(v_empty)
    assert res.extra["full_score"] == pytest.approx(v_full)


def test_tmc_truncation_zeroes_the_tail_and_saves_fits():
    X, y, Xv, yv = _regression(40)
    common = dict(rtol=None, max_permutations=10, random_state=0, fast_path=False)
    full = TMCShapley(Ridge(), "neg_mae", truncation=None, **common).fit(X, y, Xv, yv)
    cut = TMCShapley(Ridge(), "neg_mae", truncation=(0.05, 2), **common).fit(X, y, Xv, yv)
    assert cut.result_.extra["n_truncated"] > 0
    assert cut.result_.n_fits < full.result_.n_fits
    # same seed, same permutations: truncation only changes the tail's marginals
    assert cut.result_.values.sum() == pytest.approx(
        full.result_.values.sum(), abs=0.05 * abs(cut.result_.extra["full_score"]) + 1e-9)


def test_tmc_stops_at_the_original_convergence_rule():
    X, y, Xv, yv = _regression(5)
    tmc = TMCShapley(Ridge(), "neg_mae", truncation="original", rtol=0.05, rtol_window=100,
                     batch_size=16, random_state=0).fit(X, y, Xv, yv)
    extra = tmc.result_.extra
    assert extra["stopped_by"] == ["MeanRelativeChange(rtol=0.05, window=100)"]
    assert extra["convergence_error"] < 0.05
    assert tmc.n_permutations_ >= 100
    assert extra["truncation"] == [0.01, 5]


def test_tmc_is_reproducible_and_batch_size_only_groups_work():
    X, y, Xv, yv = _regression(12)
    a = TMCShapley(Ridge(), max_permutations=7, batch_size=3, random_state=4).fit(X, y, Xv, yv)
    b = TMCShapley(Ridge(), max_permutations=7, batch_size=3, random_state=4).fit(X, y, Xv, yv)
    np.testing.assert_array_equal(a.values_, b.values_)
    assert a.n_permutations_ == 7


class _OnlyAtRound(StoppingCriterion):
    """Met at one round only: a rule that later permutations of a batch can un-meet."""

    def __init__(self, at: int) -> None:
        self.at = at

    def check(self, status: RunStatus) -> bool:
        return status.rounds == self.at

    def completion(self, status: RunStatus) -> float:
        return 0.0


def test_tmc_reports_the_rule_that_stopped_it_even_if_the_batch_moved_on():
    X, y, Xv, yv = _regression(6)
    tmc = TMCShapley(Ridge(), stopping=_OnlyAtRound(3), batch_size=4,
                     random_state=0).fit(X, y, Xv, yv)
    assert tmc.n_permutations_ == 4  # the batch that met the rule is finished and used
    assert tmc.result_.extra["stopped_by"] == [repr(tmc.stopping)]


def test_mean_relative_change_rule():
    crit = MeanRelativeChange(rtol=0.05, window=3)
    values = np.array([1.0, 2.0])
    assert not crit.check(RunStatus(1, 0.0, values))
    assert not crit.check(RunStatus(2, 0.0, values))
    assert crit.check(RunStatus(3, 0.0, values))  # three identical rounds: change 0
    crit.reset()
    for r, v in enumerate([[1.0, 2.0], [1.0, 2.0], [1.2, 2.0]], start=1):
        fired = crit.check(RunStatus(r, 0.0, np.array(v)))
    # mean relative change of [1, 2] from [1.2, 2] is (0.2 / 1.2) / 2 = 0.083 > 0.05
    assert not fired
    assert crit.check(RunStatus(3, 0.0, np.array([1.2, 2.0]))) is False  # same round: no new entry


@pytest.mark.parametrize(
    ("value", "expected"), [("original", (0.01, 5)), (None, None), ((0.02, 3), (0.02, 3))]
)
def test_resolve_truncation(value, expected):
    assert resolve_truncation(value) == expected


@pytest.mark.parametrize("bad", ["sometimes", (0.01,), (-1.0, 5), (0.01, 1.5)])
def test_bad_truncation_is_a_value_error(bad):
    with pytest.raises(ValueError, match="truncation"):
        resolve_truncation(bad)


def test_tmc_needs_a_stopping_rule():
    X, y, Xv, yv = _regression(5)
    with pytest.raises(ValueError, match="stopping criterion"):
        TMCShapley(Ridge(), rtol=None).fit(X, y, Xv, yv)


# -- LOO -------------------------------------------------------------------


def test_plain_loo_equals_direct_refits():
    X, y, Xv, yv = _regression(15)
    tree = DecisionTreeRegressor(max_depth=3, random_state=0)
    loo = LeaveOneOut(tree, "neg_mae", random_state=3).fit(X, y, Xv, yv)
    util_seed = _run_seed(loo)
    full = _direct_score(tree, np.arange(15), X, y, Xv, yv, util_seed)
    expected = [full - _direct_score(tree, np.delete(np.arange(15), i), X, y, Xv, yv, util_seed)
                for i in range(15)]
    np.testing.assert_allclose(loo.values_, expected, rtol=0, atol=1e-12)
    assert sorted(loo.order_.tolist()) == list(range(15))
    assert np.all(np.diff(loo.values_[loo.order_]) >= 0)  # one-shot LOO ranks by value
    assert loo.result_.n_fits == 16


def _run_seed(loo: LeaveOneOut) -> int:
    """The seed the utility gave every fit (drawn from random_state like _prepare does)."""
    return int(np.random.default_rng(loo.random_state).integers(2**32))


def _greedy_loo(estimator, X, y, Xv, yv, k, max_remove):
    remaining = list(range(len(y)))
    removed: list[int] = []
    while len(removed) < max_remove:
        full = _direct_score(estimator, np.array(remaining), X, y, Xv, yv)
        phi = [full - _direct_score(estimator, np.array([r for r in remaining if r != i]),
                                    X, y, Xv, yv) for i in remaining]
        take = min(k, max_remove - len(removed))
        picked = [remaining[j] for j in np.argsort(phi, kind="stable")[:take]]
        removed += picked
        remaining = [r for r in remaining if r not in picked]
    return removed


@pytest.mark.parametrize("k", [1, 3])
def test_sequential_loo_matches_a_direct_greedy_removal(k):
    X, y, Xv, yv = _regression(14, seed=2, outliers=3)
    loo = LeaveOneOut(Ridge(), "neg_mae", k=k, max_remove=7, batch_size=5,
                      random_state=0, fast_path=False).fit(X, y, Xv, yv)
    greedy = _greedy_loo(Ridge(), X, y, Xv, yv, k, 7)
    assert loo.order_[:7].tolist() == greedy
    fast = LeaveOneOut(Ridge(), "neg_mae", k=k, max_remove=7, random_state=0).fit(X, y, Xv, yv)
    assert fast.order_[:7].tolist() == greedy  # the exact fast path ranks the same
    np.testing.assert_allclose(fast.values_, loo.values_, atol=1e-9)
    assert sorted(loo.order_.tolist()) == list(range(14))
    assert loo.result_.extra["n_removed_sequentially"] == 7
    # fits: sum over rounds of (|R| + 1), minus V(R) found in the cache when k = 1
    sizes = range(14, 7, -k)
    expected = sum(s + 1 for s in sizes) - (len(sizes) - 1 if k == 1 else 0)
    assert loo.result_.n_fits == expected


def test_loo_finds_corrupted_rows_and_cleansing_uses_its_order():
    X, y, Xv, yv = _regression(30, outliers=3)
    loo = LeaveOneOut(Ridge(), "neg_mae", k=1, max_remove=5, random_state=0).fit(X, y, Xv, yv)
    assert set(loo.order_[:3].tolist()) == {0, 1, 2}
    clean = cleanse(loo.result_, Ridge(), X, y, Xv, yv, step=1, max_fraction=0.2)
    assert set(clean.removed.tolist()) >= {0, 1, 2}


@pytest.mark.parametrize(
    ("params", "name"), [({"k": 0}, "k="), ({"max_remove": 10}, "max_remove"),
                         ({"batch_size": 0}, "batch_size")]
)
def test_loo_bad_parameters(params, name):
    X, y, Xv, yv = _regression(10)
    with pytest.raises(ValueError, match=name):
        LeaveOneOut(Ridge(), **params).fit(X, y, Xv, yv)


# -- random ----------------------------------------------------------------


def test_random_removal_is_a_seeded_permutation_without_fits():
    X, y, Xv, yv = _regression(20)
    a = RandomRemoval(Ridge(), random_state=5).fit(X, y, Xv, yv)
    b = RandomRemoval(Ridge(), random_state=5).fit(X, y, Xv, yv)
    c = RandomRemoval(Ridge(), random_state=6).fit(X, y, Xv, yv)
    assert sorted(a.result_.order.tolist()) == list(range(20))
    np.testing.assert_array_equal(a.result_.order, b.result_.order)
    assert a.result_.order.tolist() != c.result_.order.tolist()
    assert a.result_.n_fits == 0
    np.testing.assert_array_equal(a.result_.ranking(), np.argsort(a.values_))


# -- parallel evaluation -------------------------------------------------------


@pytest.mark.slow
def test_baselines_give_the_same_values_on_two_workers():
    X, y, Xv, yv = _regression(12)
    tree = DecisionTreeRegressor(max_depth=3)
    kw = dict(max_permutations=6, batch_size=3, random_state=0)
    one = TMCShapley(tree, **kw).fit(X, y, Xv, yv)
    two = TMCShapley(tree, n_jobs=2, **kw).fit(X, y, Xv, yv)
    np.testing.assert_array_equal(one.values_, two.values_)
    assert one.result_.n_fits == two.result_.n_fits
    loo_one = LeaveOneOut(tree, k=2, max_remove=4, random_state=0).fit(X, y, Xv, yv)
    loo_two = LeaveOneOut(tree, k=2, max_remove=4, n_jobs=2, random_state=0).fit(X, y, Xv, yv)
    np.testing.assert_array_equal(loo_one.order_, loo_two.order_)
    np.testing.assert_array_equal(loo_one.values_, loo_two.values_)
