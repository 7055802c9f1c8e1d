"""Intervals of sampled values: exact formulas, and coverage on enumerable games.

The coverage tests draw pulls from the exact law of TDShap's sampler on
9-row games (``games.marginal_law``), many runs at once, and count how
often each row's 95% interval holds its exact size-restricted value.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import t as student_t
from sklearn.datasets import make_classification

from games import (
    AdditiveModel,
    Law,
    apt_pulls,
    exact_shapley,
    first_prediction,
    iid_pulls,
    marginal_law,
    nearest_neighbour_game,
    subset_table,
)
from tdshap import TDShap, ValuationResult
from tdshap.intervals import half_widths, pooled_variance, standard_errors

N = 9
N_MIN = 3  # TDShap's "auto" for 9 rows


def _voting() -> np.ndarray:
    weights = np.array([5, 1, 2, 4, 3, 1, 2, 3, 1])
    return subset_table(lambda s: float(weights[list(s)].sum() >= 12), N)


def _nearest_neighbour() -> np.ndarray:
    X, y = make_classification(49, 4, n_informative=3, n_redundant=0, random_state=0)
    y[:2] = 1 - y[:2]
    return nearest_neighbour_game(X[:N], y[:N], X[N:], y[N:])


GAMES = {"voting": _voting, "nearest_neighbour": _nearest_neighbour}


def _coverage(law: Law, counts: np.ndarray, means: np.ndarray, var: np.ndarray,
              method: str) -> float:
    half = half_widths(counts, var, method=method)
    return float(np.mean(np.abs(law.exact - means) <= half + 1e-12))


# -- the formulas ------------------------------------------------------------

def test_pooled_interval_by_hand():
    counts = np.array([3, 5, 0, 1])
    var = np.array([0.01, 0.04, np.nan, np.nan])
    pooled = (0.01 + 0.04) / 2  # every row with a variance counts once
    assert pooled_variance(counts, var) == pytest.approx(pooled)
    half = half_widths(counts, var)
    expected = [student_t.ppf(0.975, 3) * np.sqrt(pooled / 3),  # own 0.01 < pooled 0.025
                student_t.ppf(0.975, 5) * np.sqrt(0.04 / 5),  # own 0.04 > pooled
                np.nan,  # never pulled
                student_t.ppf(0.975, 1) * np.sqrt(pooled)]  # one pull: pooled only
    np.testing.assert_allclose(half, expected)
    np.testing.assert_allclose(standard_errors(counts, var)[[0, 1, 3]],
                               np.sqrt([pooled / 3, 0.04 / 5, pooled]))


def test_normal_is_the_old_interval_and_stacks_pool_per_run():
    counts = np.array([[4, 2, 1], [6, 6, 6]])
    var = np.array([[0.5, 0.1, np.nan], [0.2, 0.0, 0.3]])
    np.testing.assert_allclose(half_widths(counts, var, method="normal"),
                               1.959964 * np.sqrt(np.where(counts >= 2, var, np.nan) / counts),
                               rtol=1e-6)
    stacked = half_widths(counts, var)
    for run in range(2):
        np.testing.assert_array_equal(stacked[run], half_widths(counts[run], var[run]))


def test_no_pooled_variance_without_two_pulls_anywhere():
    assert np.isnan(half_widths(np.array([1, 1, 0]), np.full(3, np.nan))).all()


def test_unknown_method_and_bernstein_without_range_are_refused():
    with pytest.raises(ValueError, match="interval method 'wald'"):
        half_widths(np.array([3]), np.array([1.0]), method="wald")
    with pytest.raises(ValueError, match="width="):
        half_widths(np.array([3]), np.array([1.0]), method="bernstein")


# -- the exact law the coverage rests on ----------------------------------------

def test_marginal_law_is_the_size_restricted_value():
    table = _voting()[: 2**7]  # rows 0..6: the subsets that leave out rows 7 and 8
    atoms, probs = marginal_law(table, 7, n_min=2)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    exact, variance = exact_shapley(lambda s: table[sum(1 << j for j in s)], 7, n_min=2)
    np.testing.assert_allclose((atoms * probs).sum(axis=1), exact, atol=1e-12)
    np.testing.assert_allclose((atoms**2 * probs).sum(axis=1) - exact**2, variance, atol=1e-12)


# -- coverage --------------------------------------------------------------------

@pytest.mark.parametrize("game", sorted(GAMES))
def test_pooled_intervals_cover_with_few_to_many_pulls(game):
    law = Law(GAMES[game](), N, N_MIN)
    rng = np.random.default_rng(1)
    for n, counts, means, var, _ in iid_pulls(law, 600, rng, (5, 10, 20, 50, 100)):
        assert _coverage(law, counts, means, var, "pooled") >= 0.93, (game, n)


def test_normal_intervals_fail_where_pooled_ones_cover():
    """The voting game's marginals are mostly 0: five pulls often show no spread."""
    law = Law(_voting(), N, N_MIN)
    rng = np.random.default_rng(2)
    (_, counts, means, var, _), = iid_pulls(law, 600, rng, (5,))
    assert _coverage(law, counts, means, var, "normal") < 0.80
    assert _coverage(law, counts, means, var, "t") < 0.80
    assert _coverage(law, counts, means, var, "pooled") >= 0.93


@pytest.mark.parametrize("game", sorted(GAMES))
def test_pooled_intervals_cover_under_the_bandit(game):
    """TDShap's APT rule spreads the pulls unevenly, single pulls included."""
    law = Law(GAMES[game](), N, N_MIN)
    rng = np.random.default_rng(3)
    for n, counts, means, var, _ in apt_pulls(law, 300, rng, (5, 10, 20, 50)):
        assert _coverage(law, counts, means, var, "pooled") >= 0.90, (game, n)
        if n == 5:
            assert (counts == 1).any()  # rows with one pull were covered too


# -- the result and TDShap ------------------------------------------------------

def _tdshap(n: int = 12) -> TDShap:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    y = rng.normal(size=n) + np.where(np.arange(n) < 3, -2.0, 0.0)
    est = TDShap(AdditiveModel(), metric=first_prediction, tau=-0.5, eps=0.1, k=1, n_min=0,
                 max_iter=20, random_state=0)
    return est.fit(X, y, X[:2], y[:2])


def test_result_uses_pooled_intervals_and_flags_credibly_harmful_rows():
    est = _tdshap()
    r = est.result_
    assert r.interval == "pooled"
    assert np.isfinite(r.ci_high[r.counts >= 1]).all()
    np.testing.assert_array_equal(r.is_harmful, r.values <= r.threshold)
    credible = r.is_credibly_harmful
    np.testing.assert_array_equal(credible, r.ci_high < r.threshold)
    assert not (credible & ~r.is_harmful).any()
    assert r.to_dataframe()["credibly_harmful"].tolist() == credible.tolist()


def test_values_do_not_depend_on_the_interval_and_old_files_load(tmp_path):
    r = _tdshap().result_
    data = r.to_dict()
    del data["interval"]  # as written before intervals had a name
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    old = ValuationResult.load(path)
    assert old.interval == "pooled"
    np.testing.assert_array_equal(old.values, r.values)
    np.testing.assert_allclose(old.ci_high, r.ci_high)
    normal = ValuationResult.from_dict({**data, "interval": "normal"})
    np.testing.assert_array_equal(normal.values, r.values)
    assert normal.save(tmp_path / "n.npz") and ValuationResult.load(
        tmp_path / "n.npz").interval == "normal"
    with pytest.raises(ValueError, match="bernstein"):
        ValuationResult.from_dict({**data, "interval": "bernstein"})
