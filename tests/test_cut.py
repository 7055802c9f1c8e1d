"""The cut rules on synthetic removal curves, the paired bootstrap and row eligibility."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from tdshap import ValuationResult, cleanse
from tdshap.cleansing import _row_brier, _row_squared_error
from tdshap.cut import (
    ELIGIBLE_N_SE,
    EligibleTest,
    benjamini_hochberg,
    bootstrap_curves,
    bootstrap_indices,
    choose_cut,
    eligible_rows,
    eligible_test,
)
from tdshap.intervals import half_widths, upper_p_values
from tdshap.utility.metrics import resolve_metric

GRID = np.arange(0, 80, 10)


def _boot(val: np.ndarray, se: float, n_boot: int = 400, seed: int = 0) -> np.ndarray:
    """Bootstrap scores whose gains over column 0 have standard error ``se``."""
    rng = np.random.default_rng(seed)
    boot = np.tile(val, (n_boot, 1)) + se * rng.standard_normal((n_boot, len(val)))
    boot[:, 0] = val[0]
    return boot


def test_flat_curve_removes_nothing_and_says_why():
    val = 0.9 + np.array([0, 0.002, -0.001, 0.003, 0.001, -0.002, 0.0, 0.001])
    e = choose_cut(GRID, val, _boot(val, 0.01))
    assert e.n_chosen == 0 and e.removed_nothing
    assert e.n_best == 30  # the paper's rule would chase the +0.003
    assert "did not beat keeping all rows" in e.reason and "n=30" in e.reason
    assert e.gain_best == pytest.approx(0.003) and e.se_best == pytest.approx(0.01, rel=0.15)


def test_clear_improvement_takes_the_smallest_cut_within_one_se_of_the_best():
    gains = np.array([0, 0.03, 0.06, 0.093, 0.095, 0.1, 0.1, 0.098])
    e = choose_cut(GRID, 0.8 + gains, _boot(0.8 + gains, 0.01))
    assert e.n_best == 50  # first maximum
    assert e.n_chosen == 30  # 0.093 >= 0.1 - 0.01; 0.06 is not
    assert e.gain_chosen == pytest.approx(0.093)
    assert "removing 30 rows gains +0.093" in e.reason and "n=50" in e.reason


def test_a_falling_curve_says_no_cut_scored_better():
    val = 0.9 - np.linspace(0, 0.05, len(GRID))
    e = choose_cut(GRID, val, _boot(val, 0.01))
    assert e.n_chosen == 0 and e.n_best == 0
    assert e.reason == "no cut scored better than keeping all rows on validation"


def test_improvement_within_one_se_is_noise():
    gains = np.array([0, 0.002, 0.004, 0.006, 0.008, 0.006, 0.004, 0.002])
    e = choose_cut(GRID, 0.5 + gains, _boot(0.5 + gains, 0.01))
    assert e.n_chosen == 0 and e.n_best == 40


def test_more_standard_errors_ask_for_more_evidence():
    gains = np.array([0, 0.01, 0.02, 0.03, 0.03, 0.03, 0.03, 0.03])
    boot = _boot(0.5 + gains, 0.01)
    assert choose_cut(GRID, 0.5 + gains, boot, n_se=1.0).n_chosen > 0
    assert choose_cut(GRID, 0.5 + gains, boot, n_se=5.0).n_chosen == 0


def test_eligibility_caps_the_cut():
    gains = np.array([0, 0.03, 0.06, 0.09, 0.095, 0.1, 0.1, 0.098])
    val, boot = 0.8 + gains, _boot(0.8 + gains, 0.01)
    assert choose_cut(GRID, val, boot, n_eligible=15).n_chosen == 10
    none = choose_cut(GRID, val, boot, n_eligible=0)
    assert none.n_chosen == 0 and "no row is credibly harmful" in none.reason
    assert none.n_best == 50


def test_paper_rule_is_the_best_validation_score_and_no_bootstrap_means_no_cut():
    gains = np.array([0, 0.03, 0.06, 0.09, 0.095, 0.1, 0.1, 0.098])
    assert choose_cut(GRID, gains, None, rule="paper").n_chosen == 50
    e = choose_cut(GRID, gains, None)
    assert e.n_chosen == 0 and np.isnan(e.se_best) and "no bootstrap" in e.reason
    with pytest.raises(ValueError, match="'one_se'"):
        choose_cut(GRID, gains, None, rule="best")


def test_paired_bootstrap_se_of_an_accuracy_difference():
    # model 1 is right on 30 more of 400 rows than model 0, and equal elsewhere
    n, d = 400, 30
    y = np.zeros(n, dtype=int)
    P = np.ones((2, n), dtype=int)
    P[0, :100] = 0
    P[1, :100 + d] = 0
    idx = bootstrap_indices(y, 2000, np.random.default_rng(1), stratify=False)
    boot = bootstrap_curves(resolve_metric("accuracy"), y, P, idx)
    diff = boot[:, 1] - boot[:, 0]
    p = d / n
    assert np.mean(diff) == pytest.approx(p, abs=0.005)
    assert np.std(diff) == pytest.approx(np.sqrt(p * (1 - p) / n), rel=0.1)


def test_stratified_bootstrap_keeps_class_counts_and_is_seeded():
    y = np.array([0] * 7 + [1] * 3 + [2] * 5)
    a = bootstrap_indices(y, 50, np.random.default_rng(3), stratify=True)
    b = bootstrap_indices(y, 50, np.random.default_rng(3), stratify=True)
    assert np.array_equal(a, b)
    for rows in a:
        assert np.bincount(y[rows]).tolist() == [7, 3, 5]


def _result(values: list[float], stderr: list[float], counts: list[int]) -> ValuationResult:
    counts_a = np.asarray(counts)
    variances = np.asarray(stderr) ** 2 * counts_a
    # normal intervals, so that the widths below can be checked by hand
    return ValuationResult("TDShap", np.asarray(values), counts_a, variances, threshold=-0.1,
                           interval="normal")


def test_eligible_rows_test_every_row_at_once():
    # z(95%) = 1.96; Bonferroni over 4 rows at 0.05: one-sided 0.0125, z = 2.24
    r = _result([-0.4, -0.3, -0.9, 0.2], [0.1, 0.1, 0.1, 0.1], [9, 9, 1, 9])
    assert (r.ci_high < r.threshold).tolist() == [True, True, False, False]
    assert eligible_rows(r).tolist() == [True, False, False, False]
    assert eligible_rows(r, alpha=0.5).tolist() == [True, True, False, False]
    assert eligible_rows(np.zeros(4)) is None
    assert eligible_rows(dataclasses.replace(r, threshold=None)) is None


def _flip(y: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(y with n binary labels flipped, the flipped rows, a perfect ranking of them)``."""
    flipped = np.random.default_rng(seed).choice(len(y), n, replace=False)
    y = y.copy()
    y[flipped] = 1 - y[flipped]
    values = np.zeros(len(y))
    values[flipped] = -1.0
    return y, flipped, values


def test_cleanse_rules_on_planted_flips(breast_cancer_small):
    d = breast_cancer_small
    X, y = d.train
    y, _, values = _flip(y, 12, seed=0)
    est = KNeighborsClassifier(3)
    paper = cleanse(values, est, X, y, *d.val, *d.test, step=4)
    assert paper.rule == "paper" and paper.n_remove == paper.n_best
    assert paper.evidence is not None and paper.evidence.n_chosen == paper.n_remove
    assert paper.evidence.n_bootstrap == 0  # the paper's rule costs what it always did
    reported = cleanse(values, est, X, y, *d.val, *d.test, step=4, n_bootstrap=100)
    assert reported.n_remove == paper.n_remove and reported.evidence is not None
    assert np.isfinite(reported.evidence.se_best)
    one = cleanse(values, est, X, y, *d.val, *d.test, step=4, rule="one_se")
    again = cleanse(values, est, X, y, *d.val, *d.test, step=4, rule="one_se")
    assert one.n_remove == again.n_remove and one.evidence == again.evidence
    assert np.array_equal(one.val_scores, paper.val_scores)  # one curve, two cuts
    e = one.evidence
    assert e is not None and e.n_best == paper.n_remove and np.isfinite(e.se_best)
    assert e.n_chosen == 0 or e.gain_chosen > e.se_chosen
    with pytest.raises(ValueError, match="cut rule"):
        cleanse(values, est, X, y, *d.val, rule="best")


def test_cleanse_one_se_removes_only_eligible_rows(breast_cancer_small):
    d = breast_cancer_small
    X, y = d.train
    n = len(y)
    values = np.linspace(-1, 1, n)
    counts = np.full(n, 10)
    counts[:3] = 1  # the three lowest rows have no interval
    r = ValuationResult("TDShap", values, counts, np.full(n, 1e-6), threshold=-0.5)
    c = cleanse(r, KNeighborsClassifier(3), X, y, *d.val, step=2, rule="one_se")
    eligible = eligible_rows(r)
    assert c.evidence is not None and c.evidence.n_eligible == int(eligible.sum())
    assert c.evidence.n_eligible in c.grid
    assert eligible[c.removed].all()


def test_one_se_with_a_scorer_that_needs_the_model(breast_cancer_small):
    d = breast_cancer_small
    X, y = d.train
    values = np.arange(len(y), dtype=float)
    c = cleanse(values, KNeighborsClassifier(5), X, y, *d.val, step=10, rule="one_se",
                metric="neg_brier_score", n_bootstrap=40)
    assert c.evidence is not None and c.evidence.n_bootstrap == 40
    assert np.isfinite(c.evidence.se_best) and c.evidence.se_best > 0


@pytest.mark.parametrize("rows", [[0], [0, -1]], ids=["one-row", "one-row-per-class"])
def test_validation_rows_no_resample_can_vary_remove_nothing(breast_cancer_small, rows):
    # every resample of one row (or of one row per class, resampled within classes) is the
    # same: the SE came out 1e-17 and a gain on that row passed as 10^15 SE, removing the
    # 11 rows below tau on one validation row's word
    d = breast_cancer_small
    X, y = d.train
    Xv, yv = d.val
    order = np.argsort(yv, kind="stable")
    pick = order[rows]  # the first row of the first class, and the last of the last
    n = len(y)
    values = np.linspace(-1, 1, n)
    r = ValuationResult("TDShap", values, np.full(n, 10), np.full(n, 1e-6), threshold=0.0)
    c = cleanse(r, KNeighborsClassifier(3), X, y, Xv[pick], yv[pick], step=2, rule="one_se")
    assert c.n_remove == 0 and c.evidence is not None and c.evidence.n_bootstrap == 0
    assert "no bootstrap of the validation rows could be made" in c.evidence.reason


# -- the one comparison named before scoring: remove exactly the eligible rows --------------
def test_the_eligible_cut_is_taken_on_one_comparisons_evidence():
    # +0.018 at n = 20 with SE 0.01: 1.8 SE, not the 2 SE a cut picked among many needs
    gains = np.array([0, 0.01, 0.018, 0.017, 0.01, 0.0, -0.01, -0.02])
    val = 0.8 + gains
    boot = _boot(val, 0.01)
    plain = choose_cut(GRID, val, boot, n_eligible=20)
    assert plain.n_chosen == 0
    test = eligible_test(GRID, val, boot, 20, ELIGIBLE_N_SE)
    assert test is not None and test.score == "metric" and test.passed
    e = choose_cut(GRID, val, boot, n_eligible=20, eligible=test)
    assert e.n_chosen == 20 and e.eligible == test and e.gain_chosen == pytest.approx(0.018)
    assert "removing the 20 rows credibly below tau" in e.reason and "needed 1.645" in e.reason
    # the same evidence at two SEs (values that saw the validation rows) is not enough
    strict = eligible_test(GRID, val, boot, 20, 2.0)
    assert strict is not None and not strict.passed
    assert choose_cut(GRID, val, boot, n_eligible=20, eligible=strict).n_chosen == 0
    # the paper's rule ignores it
    assert choose_cut(GRID, val, boot, rule="paper", eligible=test).n_chosen == 20


def test_the_eligible_cut_needs_the_users_metric_not_to_fall():
    passed = EligibleTest(20, "brier", gain=0.05, se=0.01, n_se=1.645, metric_gain=0.0)
    assert passed.passed
    assert not dataclasses.replace(passed, metric_gain=-0.01).passed
    assert not dataclasses.replace(passed, gain=0.01).passed  # 1 SE
    assert not dataclasses.replace(passed, n=0).passed


def test_a_larger_credible_cut_is_not_shrunk_by_the_eligible_test():
    gains = np.array([0, 0.03, 0.06, 0.093, 0.095, 0.1, 0.1, 0.098])
    val = 0.8 + gains
    boot = _boot(val, 0.01)
    test = eligible_test(GRID, val, boot, 10, ELIGIBLE_N_SE)
    assert test is not None and test.passed
    assert choose_cut(GRID, val, boot, eligible=test).n_chosen == 30


def test_row_brier_gives_a_class_the_model_never_saw_probability_zero():
    X = np.array([[0.0], [0.1], [1.0], [1.1]])
    model = KNeighborsClassifier(1).fit(X, np.array([0, 0, 1, 1]))
    classes = np.array([0, 1, 2])
    scores = _row_brier(model, np.array([[0.05], [1.05]]), np.array([0, 2]), classes)
    # row 0: p = (1, 0, 0), true 0 -> 0; row 1: p = (0, 1, 0), true 2 -> 1 + 1 = 2
    assert scores is not None and scores.tolist() == [0.0, -2.0]
    assert _row_brier(model, X[:1], np.array([7]), classes) is None  # a label it cannot score


def test_cleanse_takes_the_eligible_cut_of_out_of_bag_values(breast_cancer_small):
    d = breast_cancer_small
    X, y = d.train
    y, flipped, values = _flip(y, 6, seed=1)
    n = len(y)
    r = ValuationResult("tdoob", values, np.full(n, 40), np.full(n, 1e-4), threshold=-0.5,
                        extra={"validation_free": True})
    c = cleanse(r, KNeighborsClassifier(3), X, y, *d.val, *d.test, step=5, rule="one_se")
    e = c.evidence
    assert e is not None and e.n_eligible == 6 and e.eligible is not None
    assert e.eligible.score == "brier" and e.eligible.n_se == ELIGIBLE_N_SE
    assert e.eligible.passed and c.n_remove == 6
    assert sorted(c.removed.tolist()) == sorted(flipped.tolist())
    # the same values from the validation rows: the test asks for n_se
    seen = dataclasses.replace(r, extra={})
    c2 = cleanse(seen, KNeighborsClassifier(3), X, y, *d.val, *d.test, step=5, rule="one_se")
    assert c2.evidence is not None and c2.evidence.eligible is not None
    assert c2.evidence.eligible.n_se == 2.0


def test_a_regressor_takes_the_eligible_cut_on_the_squared_error():
    from sklearn.datasets import make_regression
    from sklearn.neighbors import KNeighborsRegressor

    X, y = make_regression(300, 4, noise=5.0, random_state=0)
    tr, va, te = slice(0, 150), slice(150, 225), slice(225, 300)
    y_tr = y[tr].copy()
    shifted = np.random.default_rng(0).choice(150, 12, replace=False)
    y_tr[shifted] += 6 * y.std()
    values = np.zeros(150)
    values[shifted] = -1.0
    r = ValuationResult("tdoob", values, np.full(150, 40), np.full(150, 1e-4), threshold=-0.5,
                        extra={"validation_free": True})
    c = cleanse(r, KNeighborsRegressor(5), X[tr], y_tr, X[va], y[va], X[te], y[te], step=6,
                rule="one_se")
    e = c.evidence
    assert e is not None and e.eligible is not None and e.n_eligible == 12
    assert e.eligible.score == "squared error" and e.eligible.passed
    assert "validation squared error" in e.reason
    assert sorted(c.removed.tolist()) == sorted(shifted.tolist())


def test_row_squared_error_is_minus_the_square_or_none_when_not_finite():
    class Fixed:
        def __init__(self, pred: list[float]) -> None:
            self.pred = np.array(pred)

        def predict(self, X: np.ndarray) -> np.ndarray:
            return self.pred

    X = np.zeros((2, 1))
    scores = _row_squared_error(Fixed([1.0, 4.0]), X, np.array([0.0, 1.0]))
    assert scores is not None and scores.tolist() == [-1.0, -9.0]
    assert _row_squared_error(Fixed([1e200, 0.0]), X, np.array([-1e200, 0.0])) is None


def test_a_result_may_name_the_interval_of_its_eligibility_test():
    # rows 0-1: sure (tiny own spread) but the pooled floor, set by the noisy rows, is wide
    values = np.array([0.02, 0.03, 0.5, 0.6, 0.4, 0.7, 0.55, 0.45])
    variances = np.array([1e-4, 1e-4, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2])
    r = ValuationResult("tdoob", values, np.full(8, 60), variances, threshold=0.1)
    assert not eligible_rows(r).any()  # pooled: no row is credible
    named = dataclasses.replace(r, extra={"eligibility_interval": "moderated"})
    assert eligible_rows(named).tolist() == [True, True] + [False] * 6


@pytest.mark.parametrize("method", ["pooled", "moderated", "t", "normal"])
def test_a_rows_p_value_is_below_half_the_level_exactly_when_its_interval_is_below(method):
    rng = np.random.default_rng(1)
    values, counts = rng.normal(0, 1, 200), rng.integers(1, 40, 200).astype(float)
    variances = np.where(counts >= 2, rng.uniform(0.2, 3, 200), np.nan)
    p = upper_p_values(values, 0.25, counts, variances, method)
    for confidence in (0.8, 0.95, 0.999):
        below = values + half_widths(counts, variances, confidence, method) < 0.25
        np.testing.assert_array_equal(below, p < (1 - confidence) / 2)
    with pytest.raises(ValueError, match="no p-value"):
        upper_p_values(values, 0.25, counts, variances, "bernstein")


def test_benjamini_hochberg_steps_up_from_the_largest_p_under_its_line():
    # line: 0.05 * k / 5 = 0.01, 0.02, 0.03, 0.04, 0.05; the 4th (0.035) is under it,
    # so the 3rd (0.032, above its own 0.03) is rejected too
    p = np.array([0.5, 0.001, 0.035, 0.032, 0.025])
    assert benjamini_hochberg(p, 0.05).tolist() == [False, True, True, True, True]
    assert not benjamini_hochberg(np.array([0.02, 0.04, np.nan]), 0.05).any()
    assert benjamini_hochberg(np.array([0.01, np.nan]), 0.05).tolist() == [True, False]


def test_false_discovery_control_admits_more_rows_when_many_are_below():
    # 30 rows clearly below tau and 70 above: Bonferroni at 0.05 / 100 keeps the surest,
    # Benjamini-Hochberg all 30; with nothing below, neither admits a row
    rng = np.random.default_rng(2)
    values = np.concatenate([rng.uniform(-0.5, -0.3, 30), rng.uniform(0.3, 1, 70)])
    r = ValuationResult("tdoob", values, np.full(100, 8), np.full(100, 0.04),
                        threshold=0.0, interval="t")
    family, fdr = eligible_rows(r), eligible_rows(r, control="false_discovery")
    assert family.sum() < 30 and fdr[:30].all() and not fdr[30:].any()
    assert np.all(family <= fdr)
    clean = dataclasses.replace(r, values=np.abs(values) + 0.2)
    assert not eligible_rows(clean, control="false_discovery").any()
    with pytest.raises(ValueError, match="must be one of"):
        eligible_rows(r, control="bh")
