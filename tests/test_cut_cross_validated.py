"""Which cut suits the model: the two rules compared on rows that had no part in choosing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from tdshap import ValuationResult, cleanse
from tdshap.cut import (
    CV_LEAD_N_SE_PROXY,
    CV_N_SE,
    CV_N_SE_KNN,
    CrossValidatedRules,
    CutEvidence,
    bootstrap_curves,
    bootstrap_indices,
    choose_cut,
    cross_validated_rules,
    suited,
)
from tdshap.utility.metrics import resolve_metric

ACCURACY = resolve_metric("accuracy")
GRID = np.arange(0, 150, 10)


def _models(rng: np.random.Generator, n_val: int, gain: float, redraw: float = 0.2
            ) -> tuple[np.ndarray, np.ndarray]:
    """Labels and ``(len(GRID), n_val)`` predictions: model 0 right on 70% of the rows;
    every other model redraws ``redraw`` of its rows (right at the same 70%: refit noise,
    no gain) and puts right a share of the rows model 0 got wrong that grows with the cut,
    to ``gain`` at the last."""
    y = rng.integers(0, 2, n_val)
    right = rng.random(n_val) < 0.7
    order = rng.random(n_val)  # the k-th model puts right the wrong rows below its share
    preds = np.empty((len(GRID), n_val), dtype=np.int64)
    for k in range(len(GRID)):
        ok = right.copy()
        if k:
            moved = rng.random(n_val) < redraw
            ok[moved] = rng.random(int(moved.sum())) < 0.7
            ok |= (~right) & (order < gain / 0.3 * k / (len(GRID) - 1))
        preds[k] = np.where(ok, y, 1 - y)
    return y, preds


@dataclasses.dataclass
class Checked:
    evidence: CutEvidence
    check: CrossValidatedRules | None
    val: np.ndarray
    boot: np.ndarray

    def suited(self) -> CutEvidence:
        return suited(self.evidence, self.check, GRID, self.val, self.boot)


def _check(y: np.ndarray, preds: np.ndarray, seed: int, n_eligible: int | None = None
           ) -> Checked:
    rng = np.random.default_rng(seed)
    idx = bootstrap_indices(y, 200, rng, stratify=True)
    boot = bootstrap_curves(ACCURACY, y, preds, idx)
    val = np.array([ACCURACY.from_predictions(y, p) for p in preds])
    evidence = choose_cut(GRID, val, boot, n_eligible=n_eligible)
    return Checked(evidence, cross_validated_rules(GRID, preds, y, ACCURACY, idx, rng,
                                                   stratify=True, n_eligible=n_eligible,
                                                   n_bootstrap=100), val, boot)


def test_models_that_gain_nothing_rarely_take_the_papers_cut():
    preferred = chased = 0
    for seed in range(100):
        y, preds = _models(np.random.default_rng(seed), 200, gain=0.0)
        c = _check(y, preds, seed)
        assert c.check is not None and len(c.check.cuts_paper) == 5
        chased += c.evidence.n_best > 0  # the paper's rule alone: nearly always
        preferred += c.suited().n_chosen > c.evidence.n_chosen
    assert chased >= 80
    assert preferred <= 10


def test_a_gain_beyond_the_eligible_rows_takes_the_papers_cut():
    # the one-SE rule may only remove the 20 eligible rows; the gain grows to 0.15 at 140
    y, preds = _models(np.random.default_rng(1), 300, gain=0.15, redraw=0.05)
    c = _check(y, preds, 1, n_eligible=20)
    evidence, check = c.evidence, c.check
    assert evidence.n_chosen <= 20 and evidence.n_best >= 100
    assert check is not None and check.prefers_paper
    assert max(check.cuts_one_se) <= 20 and min(check.cuts_paper) >= 60
    assert check.gain_paper == pytest.approx(0.15, abs=0.06) and check.lead > 0.05
    taken = c.suited()
    assert taken.n_chosen == min(evidence.n_best, max(check.cuts_paper))
    assert taken.gain_chosen == c.val[GRID == taken.n_chosen][0] - c.val[0]
    assert taken.cross_validated == check
    assert "the paper's rule" in taken.reason and "cross-validated over 5 folds" in taken.reason


def test_models_that_predict_alike_give_no_lead():
    y, preds = _models(np.random.default_rng(2), 200, gain=0.0, redraw=0.0)
    rng = np.random.default_rng(0)
    idx = bootstrap_indices(y, 100, rng, stratify=False)
    check = cross_validated_rules(GRID, preds, y, ACCURACY, idx, rng, stratify=False,
                                  n_bootstrap=50)
    assert check is not None and check.cuts_one_se == check.cuts_paper == (0,) * 5
    assert check.gain_paper == check.gain_one_se == 0.0 and not check.prefers_paper


def test_too_few_validation_rows_give_no_check():
    y = np.array([0, 1, 1])
    preds = np.tile(y, (len(GRID), 1))
    idx = bootstrap_indices(y, 10, np.random.default_rng(0), stratify=False)
    assert cross_validated_rules(GRID, preds, y, ACCURACY, idx, np.random.default_rng(0),
                                 stratify=False) is None


#: a removal curve whose best validation score is at 30 rows (+0.06), 20 rows second best
CURVE = np.arange(0, 50, 10)
CURVE_SCORES = np.array([0.70, 0.72, 0.75, 0.76, 0.74])
CURVE_BOOT = CURVE_SCORES + np.random.default_rng(0).normal(0, 0.01, (200, len(CURVE)))


def _evidence(n_chosen: int, n_best: int) -> CutEvidence:
    return CutEvidence("one_se", n_chosen, 0.02, 0.01, n_best, 0.06, 0.02, 2.0, 500, None,
                       f"removing {n_chosen} rows gains +0.02")


def _suited(evidence: CutEvidence, check: CrossValidatedRules | None) -> CutEvidence:
    return suited(evidence, check, CURVE, CURVE_SCORES, CURVE_BOOT)


def test_suited_keeps_the_one_se_cut_unless_the_check_prefers_the_papers():
    declined = CrossValidatedRules((10,) * 5, (30,) * 5, 0.02, 0.03, 0.01, 0.02, 1.645)
    assert not declined.prefers_paper  # a lead of 0.5 SE
    kept = _suited(_evidence(10, 30), declined)
    assert kept.n_chosen == 10 and kept.cross_validated == declined
    assert kept.reason == "removing 10 rows gains +0.02"
    preferred = CrossValidatedRules((10,) * 5, (30,) * 5, 0.02, 0.06, 0.01, 0.01, 1.645)
    taken = _suited(_evidence(10, 30), preferred)
    assert taken.n_chosen == 30 and taken.gain_chosen == 0.06 and taken.se_chosen == 0.02
    assert "removing 10 rows gains +0.02" in taken.reason  # what the one-SE rule said
    assert _suited(_evidence(10, 30), None) == _evidence(10, 30)
    assert _suited(_evidence(30, 30), preferred) == _evidence(30, 30)  # nothing larger
    paper = dataclasses.replace(_evidence(10, 30), rule="paper")
    assert _suited(paper, preferred) == paper


def test_the_papers_cut_taken_is_no_larger_than_the_largest_folds_cut():
    # the folds chose 10-20 rows: the whole curve's best (30) is beyond every one of them
    folds = CrossValidatedRules((0,) * 5, (10, 20, 20, 10, 20), 0.0, 0.04, 0.01, 0.01, 1.645)
    assert folds.prefers_paper
    taken = _suited(_evidence(10, 30), folds)
    assert taken.n_chosen == 20  # the best score among cuts up to 20
    assert taken.gain_chosen == pytest.approx(0.05)
    assert taken.se_chosen == pytest.approx(np.std(CURVE_BOOT[:, 2] - CURVE_BOOT[:, 0], ddof=1))
    assert "at most the largest fold's cut (20" in taken.reason
    assert "+0.06 at n=30" in taken.reason
    # when the best cut within the folds' is no larger than the one-SE rule's, it stays
    small = dataclasses.replace(folds, cuts_paper=(10,) * 5)
    kept = _suited(_evidence(10, 30), small)
    assert kept.n_chosen == 10 and kept.cross_validated == small


def _flipped(d, n_flipped: int, seed: int) -> tuple[np.ndarray, ValuationResult]:
    """Training labels with ``n_flipped`` flipped, and out-of-bag style values (they never
    saw the validation rows) that rank exactly them lowest."""
    y = d.train[1].copy()
    flipped = np.random.default_rng(seed).choice(len(y), n_flipped, replace=False)
    y[flipped] = 1 - y[flipped]
    values = np.zeros(len(y))
    values[flipped] = -1.0
    n = len(y)
    return y, ValuationResult("out of bag", values, np.full(n, 10), np.ones(n),
                              extra={"validation_free": True})


def test_cleanse_records_the_check_and_takes_the_papers_cut_when_it_is_preferred(
        breast_cancer_small):
    d = breast_cancer_small
    X = d.train[0]
    tree = DecisionTreeClassifier(max_depth=3, random_state=0)
    y, values = _flipped(d, 12, seed=1)
    declined = cleanse(values, tree, X, y, *d.val, *d.test, step=2, rule="one_se")
    e = declined.evidence
    assert e is not None and e.n_best > e.n_chosen == declined.n_remove
    assert e.cross_validated is not None and not e.cross_validated.prefers_paper
    assert e.cross_validated.n_se == CV_N_SE
    again = cleanse(values, tree, X, y, *d.val, *d.test, step=2, rule="one_se")
    assert again.evidence == e  # seeded: the same folds, the same check

    y, values = _flipped(d, 8, seed=3)
    taken = cleanse(values, tree, X, y, *d.val, *d.test, step=2, rule="one_se")
    e = taken.evidence
    assert e is not None and e.cross_validated is not None and e.cross_validated.prefers_paper
    assert taken.n_remove == taken.n_best == e.n_chosen and taken.removed.size == e.n_chosen
    assert taken.cleaned_test == taken.scores_at(e.n_chosen)[1]
    assert "the paper's rule" in e.reason
    paper = cleanse(values, tree, X, y, *d.val, *d.test, step=2)
    assert paper.n_remove == paper.n_best and paper.evidence.cross_validated is None
    # values that may have used the validation rows (plain numbers, the k-NN's exact
    # values): their cross-validated gains would be optimistic, so no check and no switch
    saw = cleanse(values.values, tree, X, y, *d.val, *d.test, step=2, rule="one_se")
    assert saw.evidence.cross_validated is None and saw.n_remove < saw.n_best


def test_the_report_says_which_rule_cross_validation_preferred():
    from sklearn.datasets import make_classification

    from tdshap import find_harmful
    from tdshap.app.report import markdown_report

    X, y = make_classification(n_samples=300, n_features=6, random_state=0)
    rows = find_harmful(X, y, DecisionTreeClassifier(max_depth=3, random_state=0))
    run = rows.run
    assert run.cleansing is not None and run.cleansing.evidence is not None
    for prefers in (True, False):
        check = CrossValidatedRules((0,) * 5, (30,) * 5, 0.0, 0.1 if prefers else 0.0,
                                    0.01, 0.01, 1.645)
        run.cleansing.evidence = dataclasses.replace(run.cleansing.evidence,
                                                     cross_validated=check)
        text = markdown_report(run, {})
        assert "by cross-validation: cross-validated over 5 folds" in text
        assert ("(taken)" in text) == prefers and ("(not taken)" in text) != prefers


def _regression(shift: float, skew: bool, seed: int) -> tuple[tuple, ValuationResult]:
    """Training, validation rows and out-of-bag style values of a 5-NN regression:
    ``shift`` added to a fifth of the training targets (0: nothing planted); ``skew``:
    true targets with a long right tail. The values rank the largest training residuals
    of a linear fit lowest, as a method chasing extreme targets would."""
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(360, 3))
    noise = rng.exponential(30, 360) if skew else rng.normal(0, 10, 360)
    y = X @ np.array([30.0, -20.0, 10.0]) + noise
    y_train = y[:180].copy()
    bad = rng.choice(180, 36, replace=False)
    y_train[bad] += shift
    residual = y_train - LinearRegression().fit(X[:180], y_train).predict(X[:180])
    values = -np.abs(residual - np.median(residual))
    # the 18 lowest are below the threshold as they are: half of what is planted
    free = ValuationResult("out of bag", values, np.full(180, 10), np.full(180, 1e-6),
                           threshold=float(np.sort(values)[18]),
                           extra={"validation_free": True, "eligible_by": "value"})
    return (X[:180], y_train, X[180:270], y[180:270], X[270:], y[270:]), free


def test_a_regressor_takes_the_larger_cut_the_squared_error_prefers():
    from sklearn.neighbors import KNeighborsRegressor

    data, values = _regression(shift=150.0, skew=False, seed=0)
    c = cleanse(values, KNeighborsRegressor(5), *data, step=4, rule="one_se")
    e = c.evidence
    assert e is not None and e.cross_validated is not None
    assert e.cross_validated.score == "squared error" and e.cross_validated.prefers_paper
    assert c.n_remove == e.n_chosen > e.n_eligible == 18  # past the eligible rows
    assert "the best validation squared error" in e.reason
    assert "on the squared error" in e.cross_validated.describe()
    assert c.cleaned_test > c.baseline_test  # neg_mae: the test error fell
    assert cleanse(values, KNeighborsRegressor(5), *data, step=4, rule="one_se").evidence == e


def test_a_regressor_keeps_true_but_extreme_targets():
    # removing the long right tail moves the model towards the median: the MAE gains,
    # on validation and test alike, but the squared error charges for it
    from sklearn.neighbors import KNeighborsRegressor

    data, values = _regression(shift=0.0, skew=True, seed=3)
    paper = cleanse(values, KNeighborsRegressor(5), *data, step=4)
    assert paper.n_remove > 0  # the user's metric alone rewards the cut
    c = cleanse(values, KNeighborsRegressor(5), *data, step=4, rule="one_se")
    assert c.n_remove < paper.n_remove
    e = c.evidence
    assert e is not None and (e.cross_validated is None or not e.cross_validated.prefers_paper)


def test_fold_curves_of_the_same_curve_are_the_plain_check():
    from tdshap.cross_fit import make_folds
    from tdshap.cut import FoldCurve

    y, preds = _models(np.random.default_rng(4), 200, gain=0.1, redraw=0.05)
    idx = bootstrap_indices(y, 100, np.random.default_rng(9), stratify=True)
    plain = cross_validated_rules(GRID, preds, y, ACCURACY, idx, np.random.default_rng(5),
                                  stratify=True, n_eligible=40, n_bootstrap=50)
    rng = np.random.default_rng(5)
    folds = make_folds(y, 5, rng, stratify=True)  # the folds the plain check draws first
    same = [FoldCurve(GRID, preds, 40)] * 5
    given = cross_validated_rules(GRID, preds, y, ACCURACY, idx, rng, stratify=True,
                                  n_eligible=40, n_bootstrap=50, folds=folds,
                                  fold_curves=same)
    assert given is not None and plain is not None and plain.gain_paper > 0
    assert given.own_curves and not plain.own_curves
    assert dataclasses.replace(given, own_curves=False) == plain
    with pytest.raises(ValueError, match="fold_curves needs folds"):
        cross_validated_rules(GRID, preds, y, ACCURACY, idx, rng, stratify=True,
                              fold_curves=same)


def test_a_fold_is_judged_by_the_curve_of_values_made_without_it():
    # the full curve gains 0.15 on every row; each fold's own curve gains on the other
    # folds' rows only (its values were made by them): cross-validated, nothing is gained
    from tdshap.cross_fit import make_folds
    from tdshap.cut import FoldCurve

    y, preds = _models(np.random.default_rng(1), 300, gain=0.15, redraw=0.05)
    rng = np.random.default_rng(0)
    idx = bootstrap_indices(y, 200, rng, stratify=True)
    folds = make_folds(y, 5, np.random.default_rng(7), stratify=True)
    curves = []
    for f in range(5):
        own = preds.copy()
        own[:, folds == f] = preds[0, folds == f]
        curves.append(FoldCurve(GRID, own, 20))
    check = cross_validated_rules(GRID, preds, y, ACCURACY, idx, rng, stratify=True,
                                  n_eligible=20, folds=folds, fold_curves=curves)
    assert check is not None and min(check.cuts_paper) >= 60  # each fold's rule chases
    assert check.gain_paper == check.gain_one_se == 0.0 and not check.prefers_paper
    plain = cross_validated_rules(GRID, preds, y, ACCURACY, idx, rng, stratify=True,
                                  n_eligible=20)
    assert plain is not None and plain.prefers_paper  # the same curve, judged by itself


def test_each_fold_curve_ranks_its_own_values_flagged_rows_first():
    from tdshap.cleansing import _fold_curves

    values = (np.array([0.3, -0.2, 0.1, -0.5, 0.0, 0.2]), np.array([-1.0, 0.5, 0.4, 0.3,
                                                                    0.2, -0.1]))
    flagged = (np.array([1, 3]), np.array([0]))  # the second fold: row 5 not flagged
    seen: list[tuple[int, ...]] = []
    asked = 0

    def predicted(removed: list[np.ndarray]) -> list[np.ndarray]:
        nonlocal asked
        asked += 1
        seen.extend(tuple(rows.tolist()) for rows in removed)
        return [np.full(4, len(rows)) for rows in removed]

    curves = _fold_curves(values, flagged, np.arange(0, 4, 3), 0, predicted)
    assert [c.grid.tolist() for c in curves] == [[0, 2, 3], [0, 1, 3]]
    assert [c.n_eligible for c in curves] == [2, 1]
    # every fold's removals asked for at once, so that their fits can run together
    assert asked == 1
    assert seen == [(), (3, 1), (3, 1, 4), (), (0,), (0, 5, 4)]
    assert curves[0].predictions.tolist() == [[0] * 4, [2] * 4, [3] * 4]



def _planted_both(seed: int) -> tuple[tuple, ValuationResult]:
    """Breast cancer with 20 of 150 training labels flipped, valued by exact k-NN
    Shapley with training and validation queries (cross-fitted)."""
    from tdshap.app.demo import breast_cancer
    from tdshap.methods import KNNShapley

    d = breast_cancer(seed=seed, sizes=(150, 100, 100))
    X, y = d.train[0], d.train[1].copy()
    flipped = np.random.default_rng(seed).choice(len(y), 20, replace=False)
    y[flipped] = 1 - y[flipped]
    values = KNNShapley(queries="both", random_state=0).fit(X, y, *d.val).result_
    return (X, y, *d.val, *d.test), values


def test_cleanse_checks_values_made_on_the_validation_rows_by_their_folds():
    tree = DecisionTreeClassifier(max_depth=5, random_state=0)
    data, values = _planted_both(5)
    taken = cleanse(values, tree, *data, step=2, rule="one_se")
    e = taken.evidence
    assert e is not None and e.cross_validated is not None and e.cross_validated.prefers_paper
    assert taken.n_remove == taken.n_best and "the paper's rule" in e.reason
    assert e.cross_validated.own_curves and "ranked by values made without it" in e.reason
    # the proxy's model needs any lead over the one-SE rule's cut, its gain beyond CV_N_SE
    assert e.cross_validated.lead_n_se == CV_LEAD_N_SE_PROXY < CV_N_SE
    assert f"{CV_LEAD_N_SE_PROXY:g} for the lead" in e.reason
    assert cleanse(values, tree, *data, step=2, rule="one_se").evidence == e  # seeded
    # without each fold's values the folds cannot rank the rows: no check, a smaller cut
    older = dataclasses.replace(values, extra={
        **values.extra, "cross_fit": {k: v for k, v in values.extra["cross_fit"].items()
                                      if k != "values"}})
    plain = cleanse(older, tree, *data, step=2, rule="one_se")
    assert plain.evidence.cross_validated is None and plain.n_remove < taken.n_remove
    assert plain.extra["n_check_fits"] == 0
    assert 0 < taken.extra["n_check_fits"] <= 5 * (len(taken.grid) + 1)  # fits counted
    data, values = _planted_both(0)
    declined = cleanse(values, tree, *data, step=2, rule="one_se")
    e = declined.evidence
    assert e.cross_validated is not None and not e.cross_validated.prefers_paper
    assert declined.n_remove == e.n_chosen < e.n_best


def test_a_knns_own_cut_is_checked_at_a_stricter_level():
    # the k-NN its values describe exactly changes by the rows removed and nothing else:
    # its folds' curves are checked too, each comparison at CV_N_SE_KNN
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from tdshap.cleansing import check_level

    data, values = _planted_both(4)
    for knn in (KNeighborsClassifier(5), make_pipeline(StandardScaler(),
                                                       KNeighborsClassifier(5))):
        assert check_level(knn) == CV_N_SE_KNN > CV_N_SE
        own = cleanse(values, knn, *data, step=2, rule="one_se")
        check = own.evidence.cross_validated
        assert own.n_remove < own.n_best and check is not None and check.own_curves
        assert check.n_se == CV_N_SE_KNN and f"needed {CV_N_SE_KNN:g}" in own.evidence.reason
        assert check.lead_n_se is None and check.lead_needed == CV_N_SE_KNN
        # the stricter level decides: a lead and a gain between the two levels is declined
        between = dataclasses.replace(check, gain_paper=0.02, se_paper=0.01,
                                      gain_one_se=0.0, se_lead=0.01)  # both at 2 SE
        assert between.prefers_paper is False
        assert dataclasses.replace(between, n_se=CV_N_SE).prefers_paper is True
    assert check_level(DecisionTreeClassifier()) == CV_N_SE


def test_a_cross_fit_with_an_empty_fold_gets_no_check():
    # a result file may be hand-made: a fold with no validation row judges nothing
    from tdshap.cross_fit import fold_means

    tree = DecisionTreeClassifier(max_depth=5, random_state=0)
    data, values = _planted_both(5)
    cross = dict(values.extra["cross_fit"])
    folds = np.asarray(cross["folds"])
    folds[folds == 4] = 3  # fold 4 left empty, its values kept
    cross.update(folds=folds.tolist(), means=fold_means(data[2], folds, 5).tolist())
    odd = dataclasses.replace(values, extra={**values.extra, "cross_fit": cross})
    c = cleanse(odd, tree, *data, step=2, rule="one_se")
    assert c.evidence.cross_validated is None and c.extra["n_check_fits"] == 0


def test_a_knn_that_gains_from_a_larger_cut_takes_it():
    # make_hastie_10_2: a 5-NN on ten features gains from removing far more rows than
    # are credibly harmful (editing the class boundary), and its own folds agree
    from sklearn.datasets import make_hastie_10_2
    from sklearn.neighbors import KNeighborsClassifier

    from tdshap.methods import KNNShapley

    X, y = make_hastie_10_2(600, random_state=0)
    y = (y > 0).astype(int)
    data = (X[:300], y[:300], X[300:450], y[300:450], X[450:], y[450:])
    values = KNNShapley(queries="both", random_state=0).fit(*data[:4]).result_
    c = cleanse(values, KNeighborsClassifier(5), *data, rule="one_se")
    e = c.evidence
    assert e.cross_validated is not None and e.cross_validated.prefers_paper
    assert e.eligible is not None and c.n_remove == e.n_best > e.eligible.n
    assert c.cleaned_test > c.baseline_test


def test_the_lead_may_need_fewer_standard_errors_than_the_gain():
    check = CrossValidatedRules((0,) * 5, (40,) * 5, gain_one_se=0.01, gain_paper=0.03,
                                se_paper=0.01, se_lead=0.02, n_se=CV_N_SE)
    assert check.lead_needed == CV_N_SE and not check.prefers_paper  # a lead of 1 SE
    any_lead = dataclasses.replace(check, lead_n_se=0.0)
    assert any_lead.prefers_paper and "0 for the lead" in any_lead.describe()
    # the gain is still tested, and a lead must be a lead
    assert not dataclasses.replace(any_lead, se_paper=0.02).prefers_paper
    assert not dataclasses.replace(any_lead, gain_one_se=0.03).prefers_paper


def test_a_regressors_squared_error_cut_is_no_larger_than_the_largest_folds_cut(monkeypatch):
    import tdshap.cut as cut

    rng = np.random.default_rng(0)
    y_val = rng.normal(size=60)
    errors = rng.normal(size=60)
    # every larger cut predicts better on both scores: the whole curve's best is at 40
    predictions = np.stack([y_val + f * errors for f in (1.0, 0.9, 0.8, 0.7, 0.6)])
    val_scores = -np.abs(predictions - y_val).mean(axis=1)
    idx = bootstrap_indices(y_val, 100, rng, stratify=False)
    boot = np.stack([-np.abs(predictions[:, i] - y_val[i]).mean(axis=1) for i in idx])
    evidence = CutEvidence("one_se", 10, float(val_scores[1] - val_scores[0]), 0.01, 40,
                           float(val_scores[4] - val_scores[0]), 0.01, 2.0, 100, None,
                           "removing 10 rows gains a little")
    folds = CrossValidatedRules((10,) * 5, (20, 10, 20, 20, 10), 0.0, 0.04, 0.01, 0.01, 2.0)
    monkeypatch.setattr(cut, "cross_validated_rules", lambda *a, **k: folds)
    taken = cut.suited_regressor(evidence, CURVE, val_scores, boot, predictions, y_val, idx,
                                 rng)
    assert taken.n_chosen == 20 and taken.cross_validated == folds
    assert taken.gain_chosen == pytest.approx(val_scores[2] - val_scores[0])
    assert "at most the largest fold's cut (20" in taken.reason and "at n=40" in taken.reason
    wide = dataclasses.replace(folds, cuts_paper=(40,) * 5)  # the folds chose the best cut
    monkeypatch.setattr(cut, "cross_validated_rules", lambda *a, **k: wide)
    assert cut.suited_regressor(evidence, CURVE, val_scores, boot, predictions, y_val, idx,
                                rng).n_chosen == 40
