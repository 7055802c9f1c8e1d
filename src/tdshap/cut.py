"""Where to cut the ranking: the paper's best-validation cut, and one that resists noise.

The paper's cleansing protocol (Thresholding Data Shapley, Sec. 5.1) removes the
``n`` lowest-valued rows for the ``n`` on a grid with the best validation
score. With a few hundred validation rows that maximum is mostly noise: on
data with nothing wrong it removes a third to a half of the rows and the test
score drops. The ``"one_se"`` rule asks the validation rows for evidence
instead:

1. every grid model is scored on the same bootstrap resamples of the
   validation rows (paired: the curves differ only by the rows removed), which
   gives the standard error of each cut's gain ``score(n) - score(0)``;
2. a cut is credible when its gain exceeds ``n_se`` standard errors (2 by
   default);
3. among the credible cuts the smallest one whose gain is within one standard
   error of the best credible gain is chosen (Breiman's one-SE rule), and
4. no credible cut means nothing is removed.

When the ranking comes with intervals and a threshold (TDShap, thresholding
Data-OOB), only rows whose interval lies wholly below the threshold, with
every row tested at once, may be removed by this rule (``n_eligible`` caps
the cut). Those rows also give one cut named before any validation score is
seen: remove exactly them. That single comparison (:class:`EligibleTest`)
needs no allowance for picking the best of many cuts, so it is made at a
one-sided 5% level (1.645 SE) when the values did not come from the
validation rows (out-of-bag values: ``extra["validation_free"]``), else at
``n_se``; for classifiers with probabilities it is judged on the Brier score
of the validation rows, a proper score that sees a label fixed where
accuracy sees nothing until a prediction flips, for regressors on the squared
error (the proper score of a mean: it weighs the large errors that wrong
targets cause, where the MAE of a noisy model hides them), and the user's
metric on validation must not fall. It is taken when it passes and removes more than
steps 1-4 would.

Values that used the validation rows but carry a cross-fit
(``extra["cross_fit"]``, :mod:`tdshap.cross_fit`: exact k-NN Shapley with
training and validation queries) get the same named comparison cross-fitted:
each validation row scores the model without the rows flagged when its fold's
queries were left out, so the gain is not inflated; it must beat
:data:`CROSS_FIT_N_SE`.

Some models gain from larger cuts than the one-SE rule takes: a depth-5 tree
refitted without a few rows changes for reasons of its own, so the smallest
credible cut is often a lucky refit, while the rows that really hurt it are many.
Which rule suits the model is asked of the validation rows by cross-validation
(:func:`cross_validated_rules`): the rows are split into folds; for each fold
both rules choose a cut from the other folds' rows only, and the fold's rows
score the model of each rule's cut. Rows that had no part in choosing a cut
do not share its luck, so each rule's cross-validated gain estimates what the
rule gains. The paper's cut (the best validation score) is taken when its
cross-validated gain beats :data:`CV_N_SE` standard errors and beats the
one-SE rule's by as many standard errors of their difference.
:func:`tdshap.cleansing.cleanse` asks this of a classifier's values that never
saw the validation rows (out-of-bag values: ``extra["validation_free"]``), and
of values that did but carry each fold's values made without it (a cross-fit
with ``values``: the 5-NN proxy standing in for a tree or a linear model):
each fold then ranks the rows by its own values, refits its own curve
(:class:`FoldCurve`), and its rows judge that curve's cuts; for a model those
values stand in for, any lead over the one-SE rule's cut will do
(:data:`CV_LEAD_N_SE_PROXY`), its gain still beyond :data:`CV_N_SE`. Judged on the one
curve of values the held-out rows helped make, the gain is optimistic (at
2.326 SE such runs still lowered clean data). For the k-NN that exact k-NN
Shapley values, which changes by the rows removed and nothing else, both
comparisons must beat :data:`CV_N_SE_KNN` instead. A regressor's values that never
saw the validation rows are asked the same on the squared error
(:func:`suited_regressor`, :data:`CV_N_SE_REGRESSOR`): the cut of the best
validation squared error is taken where both rules, choosing by the squared error,
cross-validate in its favour and the user's metric there is no worse. Judged on the
MAE the check removed true but extreme targets on clean data, which moves the model
towards the median and which the MAE rewards (docs/benchmarks.md, "The cut that suits
the model"); the squared error charges for them.

Otherwise the validation rows that judge the cut also valued the rows, so a cut's
validation gain is optimistic (the rows were chosen for hurting these very
validation rows); the bootstrap measures the noise, not that bias. The
family-wise eligibility of rows is what keeps clean data whole
(docs/benchmarks.md, "Do no harm"). The paper's rule stays available as
``"paper"``; both cuts are always recorded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tdshap._validation import check_number
from tdshap.cross_fit import make_folds
from tdshap.intervals import upper_p_values
from tdshap.result import ValuationResult
from tdshap.utility.fast.scoring import row_scorer
from tdshap.utility.metrics import MetricSpec, resolve_metric

RULES = ("paper", "one_se")
DEFAULT_N_BOOTSTRAP = 500
# Two SEs, not one: the gain is the largest of many cuts' and is measured on the validation
# rows that valued the rows, both of which bias it upwards (a one-sided test at about 2.5%)
DEFAULT_N_SE = 2.0
DEFAULT_ALPHA = 0.05  # family-wise, over all rows: see eligible_rows
#: how eligible_rows controls false rows: "family" (Bonferroni: the chance of any false
#: row) or "false_discovery" (Benjamini-Hochberg: their expected share)
CONTROLS = ("family", "false_discovery")
ELIGIBILITY_CONTROL = "family"
# One pre-specified comparison at a one-sided 5% level: see EligibleTest
ELIGIBLE_N_SE = 1.645
#: the same comparison cross-fitted (tdshap.cross_fit): each validation row judges rows
#: chosen without it, so the gain is not inflated; but the rows removed are the ones all
#: folds chose, not each fold's, which the bootstrap does not see: a one-sided 1% level.
#: On the detection benchmark (k-NN, 20 seeds) 1.645, 2 and 2.326 SE gained the same on
#: planted noise; on clean data 2.326 lowered the fewest runs (docs/benchmarks.md)
CROSS_FIT_N_SE = 2.326
#: folds of the validation rows when the two rules are compared by cross-validation
CV_FOLDS = 5
#: the paper's rule is taken when its cross-validated gain, and its lead over the one-SE
#: rule's, each beat this many SEs: one comparison each, one-sided 5% (the levels tried:
#: docs/benchmarks.md, "The cut that suits the model")
CV_N_SE = 1.645
#: the same check for the k-NN whose exact values ranked the rows (it changes by the rows
#: removed and nothing else): at 1.645 its false alarms through the CLI cost more than it
#: found (session 13); at the level of its cross-fitted test no run it changed fell
#: below keeping every row, and a k-NN that gains from removing far more rows than are
#: credibly harmful (make_hastie_10_2: +0.13) takes that cut (docs/benchmarks.md, "The
#: k-NN's own cut checked fold by fold")
CV_N_SE_KNN = CROSS_FIT_N_SE
#: the lead over the one-SE rule the paper's cut needs, in SEs, where each fold ranks the
#: rows by its own values for a model they stand in for (a tree, a linear model): any
#: lead, its gain still beyond CV_N_SE. Both rules' cuts there come from curves the fold
#: had no part in, and the one-SE rule's is the paper's curve stopped early, so the two
#: gains move together; at 1.645 the tree left half of the paper's cut's gain on the sets
#: added after it was tuned (docs/benchmarks.md, "The paper's cut needs any lead")
CV_LEAD_N_SE_PROXY = 0.0
#: the standard errors a regressor's larger cut must gain by, and lead by, on the squared
#: error (:func:`suited_regressor`): at CV_N_SE the tree regressor lowered clean diabetes
#: (a run of 12 rows, test MAE +1.7%); at 2 no run with nothing planted moved down, and
#: at 2.326 the tree gave up most of its gain on planted targets (docs/benchmarks.md,
#: "Regressors: the paper's cut on the squared error")
CV_N_SE_REGRESSOR = 2.0
#: bootstrap resamples of each fold's other rows when the one-SE rule chooses its cut there
CV_N_BOOTSTRAP = 200


def check_n_se(n_se: Any) -> None:
    """Refuse an ``n_se`` that is not a number >= 0 (NaN was taken: no cut could pass)."""
    check_number(n_se, "n_se", low=0, hint="It counts standard errors of the gain, e.g. 1.")


def check_rule(rule: str, name: str = "rule") -> str:
    """``rule`` itself, or one clear error naming the choices and the parameter ``name``."""
    if rule not in RULES:
        raise ValueError(f"{name}={rule!r} is not a cut rule: use 'one_se' (remove rows only when "
                         "the validation gain beats its noise) or 'paper' (the best validation "
                         "score, the paper's protocol).")
    return rule


@dataclass(frozen=True)
class EligibleTest:
    """The one cut named before the validation scores: remove the credibly harmful rows.

    ``gain``/``se``: validation gain of the cut over keeping all rows and its
    paired-bootstrap standard error, in units of ``score`` (``"brier"``: minus
    the Brier score, for classifiers with probabilities; ``"squared error"``:
    minus the squared error, for regressors; otherwise the user's metric);
    ``metric_gain``: the gain in the user's metric, which
    must not be negative; ``n_se``: the standard errors needed.
    """

    n: int
    score: str
    gain: float
    se: float
    n_se: float
    metric_gain: float
    cross_fitted: bool = False
    exact: bool = False  # the rows are those whose exact value is below tau

    @property
    def passed(self) -> bool:
        return bool(self.n > 0 and self.gain > 0 and self.gain > self.n_se * self.se
                    and self.metric_gain >= 0)

    def describe(self) -> str:
        k = self.gain / self.se if self.se > 0 else np.inf
        score = "Brier score" if self.score == "brier" else self.score
        how = ("cross-fitted: each validation fold judged the rows chosen without it"
               if self.cross_fitted else "one comparison named before scoring")
        rows = "below tau" if self.exact else "credibly below tau"
        return (f"removing the {self.n} rows {rows} gains {_signed(self.gain)} in "
                f"validation {score}, {k:.1f} SE (needed {self.n_se:g}: {how}), and "
                f"{_signed(self.metric_gain)} in the validation metric")


def eligible_test(grid: np.ndarray, val_scores: np.ndarray, boot: np.ndarray | None,
                  n_eligible: int | None, n_se: float,
                  row_scores: tuple[np.ndarray, np.ndarray] | None = None,
                  idx: np.ndarray | None = None, score: str = "brier",
                  metric_gain: float | None = None, exact: bool = False
                  ) -> EligibleTest | None:
    """The :class:`EligibleTest` of one removal curve; None when it cannot be made.

    ``row_scores``: per-validation-row smooth scores, named by ``score``
    (``"brier"``: minus the Brier score; ``"squared error"``: minus the squared
    error of a regressor), of the model on all rows and of the model without
    the eligible rows, resampled with ``idx``; without them the test uses the
    curve's own bootstrap ``boot``. ``metric_gain`` (with ``row_scores``): a
    cross-fitted test's gain in the user's metric, whose row scores each came
    from the model without the rows chosen without that row's fold
    (:mod:`tdshap.cross_fit`); None: the curve's gain at the eligible cut.
    ``exact``: the eligible rows are those whose exact value is below tau.
    """
    grid = np.asarray(grid)
    if not n_eligible or boot is None or len(boot) < 2 or n_eligible not in grid:
        return None
    i = int(np.flatnonzero(grid == n_eligible)[0])
    crossed = metric_gain is not None
    if metric_gain is None:
        metric_gain = float(val_scores[i] - val_scores[0])
    if row_scores is not None and idx is not None:
        diff = row_scores[1] - row_scores[0]
        means = diff[idx].mean(axis=1)
        return EligibleTest(int(n_eligible), score, float(diff.mean()),
                            float(np.std(means, ddof=1)), float(n_se), float(metric_gain),
                            crossed, exact)
    boot_gain = boot[:, i] - boot[:, 0]
    return EligibleTest(int(n_eligible), "metric", metric_gain,
                        float(np.std(boot_gain, ddof=1)), float(n_se), metric_gain,
                        exact=exact)


@dataclass(frozen=True)
class CrossValidatedRules:
    """Both rules' cuts judged by validation rows that had no part in choosing them.

    ``cuts_*``: each fold's cut, chosen by the rule on the other folds' rows;
    ``gain_*``: the validation gain, in the user's metric, of scoring every row
    under the model of its fold's cut; ``se_paper``: the paired-bootstrap
    standard error of the paper's rule's gain, ``se_lead`` of its lead over the
    one-SE rule's; ``n_se``: the standard errors each must beat;
    ``own_curves``: each fold's cuts came from its own curve, the rows ranked by
    values made without that fold (:class:`FoldCurve`); ``lead_n_se``: the standard
    errors the lead must beat, when not ``n_se``; ``score``: what the gains are in, when not
    the user's metric (``"squared error"``: minus the mean squared error).
    """

    cuts_one_se: tuple[int, ...]
    cuts_paper: tuple[int, ...]
    gain_one_se: float
    gain_paper: float
    se_paper: float
    se_lead: float
    n_se: float
    own_curves: bool = False
    lead_n_se: float | None = None
    score: str | None = None

    @property
    def lead(self) -> float:
        return self.gain_paper - self.gain_one_se

    @property
    def lead_needed(self) -> float:
        return self.n_se if self.lead_n_se is None else self.lead_n_se

    @property
    def prefers_paper(self) -> bool:
        return bool(self.gain_paper > 0 and self.gain_paper > self.n_se * self.se_paper
                    and self.lead > 0 and self.lead > self.lead_needed * self.se_lead)

    def describe(self) -> str:
        def k(x: float, se: float) -> str:
            return f"{x / se:.1f}" if se > 0 else "inf"
        made = ("ranked by values made without it and chosen without it" if self.own_curves
                else "chosen without it")
        on = "" if self.score is None else f" on the {self.score}"
        return (f"cross-validated over {len(self.cuts_paper)} folds of the validation rows "
                f"(each fold's cuts {made}), the paper's rule gains{on} "
                f"{_signed(self.gain_paper)} ({k(self.gain_paper, self.se_paper)} SE; cuts "
                f"{', '.join(map(str, self.cuts_paper))}), the one-SE rule "
                f"{_signed(self.gain_one_se)} (cuts {', '.join(map(str, self.cuts_one_se))}): "
                f"a lead of {k(self.lead, self.se_lead)} SE (needed "
                + (f"{self.n_se:g} for both)" if self.lead_n_se is None else
                   f"{self.n_se:g} for the gain, {self.lead_n_se:g} for the lead)"))


@dataclass(frozen=True)
class CutEvidence:
    """Both cuts of one removal curve and the validation evidence behind them.

    Gains are validation ``score(n) - score(0)`` in metric units, higher is
    better; ``se_*`` are their paired-bootstrap standard errors (NaN when no
    bootstrap could be made).
    """

    rule: str
    n_chosen: int
    gain_chosen: float
    se_chosen: float
    n_best: int
    gain_best: float
    se_best: float
    n_se: float
    n_bootstrap: int
    n_eligible: int | None
    reason: str
    eligible: EligibleTest | None = None
    cross_validated: CrossValidatedRules | None = None

    @property
    def removed_nothing(self) -> bool:
        return self.n_chosen == 0


def resamples_differ(y_val: np.ndarray, stratify: bool) -> bool:
    """Whether resampling ``y_val`` (as :func:`bootstrap_indices` does) can draw different
    sets of rows. With one validation row, or one row of each class when resampling within
    classes, every resample is the same: the standard error came out 0 (or 1e-17), and a
    gain on that one row passed as 10^15 SE, removing rows on one row's word."""
    if not stratify:
        return len(y_val) >= 2
    _, counts = np.unique(y_val, return_counts=True)
    return bool((counts >= 2).any())


def bootstrap_indices(y_val: np.ndarray, n_boot: int, rng: np.random.Generator,
                      stratify: bool) -> np.ndarray:
    """``(n_boot, len(y_val))`` resampled validation rows.

    ``stratify`` resamples within each class, keeping the class counts of the
    validation rows (as the held-out split does): every resample then holds
    every class, which probability scorers need.
    """
    n = len(y_val)
    if not stratify:
        return rng.integers(0, n, size=(n_boot, n))
    out = np.empty((n_boot, n), dtype=np.int64)
    start = 0
    for label in np.unique(y_val):
        rows = np.flatnonzero(y_val == label)
        out[:, start:start + len(rows)] = rows[rng.integers(0, len(rows),
                                                            size=(n_boot, len(rows)))]
        start += len(rows)
    return out


def bootstrap_curves(spec: MetricSpec, y_val: np.ndarray, predictions: np.ndarray,
                     idx: np.ndarray) -> np.ndarray:
    """``(n_boot, K)`` scores of the K grid models' validation predictions on each resample."""
    score = row_scorer(spec)
    return np.stack([score(y_val[rows], predictions[:, rows]) for rows in idx])


def bootstrap_scores(scorer: Callable[[np.ndarray], float], idx: np.ndarray) -> np.ndarray:
    """``(n_boot,)`` scores of one model on each resample, for scorers that need the model."""
    return np.array([scorer(rows) for rows in idx])


def _signed(x: float) -> str:
    return f"{x:+.4g}"


def choose_cut(grid: np.ndarray, val_scores: np.ndarray, boot: np.ndarray | None, *,
               rule: str = "one_se", n_se: float = DEFAULT_N_SE,
               n_eligible: int | None = None,
               eligible: EligibleTest | None = None, exact: bool = False) -> CutEvidence:
    """Apply ``rule`` to one removal curve.

    ``grid`` holds the cuts (``grid[0] == 0``), ``val_scores`` their validation
    scores and ``boot`` the ``(n_boot, len(grid))`` bootstrap scores (or None:
    then ``"one_se"`` has no evidence and removes nothing). ``n_eligible``
    caps the cut of ``"one_se"``; ``eligible`` (:func:`eligible_test`) may
    then take the cut of exactly the eligible rows. ``exact``: the eligible rows
    are those whose exact value is below tau (no interval), as the reasons say.
    """
    chosen = _choose_cut(grid, val_scores, boot, rule, n_se, n_eligible, exact)
    if rule == "paper" or eligible is None:
        return chosen
    if eligible.passed and eligible.n > chosen.n_chosen:
        i = int(np.flatnonzero(np.asarray(grid) == eligible.n)[0])
        gains = np.asarray(val_scores, dtype=float) - float(val_scores[0])
        se = np.nan if boot is None else float(np.std(boot[:, i] - boot[:, 0], ddof=1))
        return dataclasses.replace(chosen, n_chosen=eligible.n, gain_chosen=float(gains[i]),
                                   se_chosen=se, reason=eligible.describe(), eligible=eligible)
    return dataclasses.replace(chosen, eligible=eligible)


@dataclass(frozen=True)
class FoldCurve:
    """One validation fold's own removal curve, for values made without that fold:
    the cuts of its ranking (``grid``, starting at 0), their models' predictions
    on all validation rows (``(len(grid), n_val)``) and its eligible rows' count."""

    grid: np.ndarray
    predictions: np.ndarray
    n_eligible: int | None


def cross_validated_rules(grid: np.ndarray, predictions: np.ndarray, y_val: np.ndarray,
                          spec: MetricSpec, idx: np.ndarray, rng: np.random.Generator, *,
                          stratify: bool, n_se: float = DEFAULT_N_SE,
                          n_eligible: int | None = None, n_folds: int = CV_FOLDS,
                          n_bootstrap: int = CV_N_BOOTSTRAP, folds: np.ndarray | None = None,
                          fold_curves: Sequence[FoldCurve] | None = None,
                          level: float = CV_N_SE, lead_level: float | None = None,
                          score_name: str | None = None) -> CrossValidatedRules | None:
    """The paper's rule and steps 1-4 of the one-SE rule, cross-validated over the
    validation rows.

    ``predictions``: ``(len(grid), n_val)`` validation predictions of the grid
    models; ``idx``: the bootstrap resamples of all validation rows (for the
    SEs). Each fold's one-SE cut is chosen as :func:`choose_cut`'s steps 1-4
    (``n_se``, capped at ``n_eligible``) from ``n_bootstrap`` resamples of the
    other folds' rows (within classes when ``stratify``), its paper's cut as
    their best score; both must beat ``level`` standard errors (default
    :data:`CV_N_SE`; the lead ``lead_level`` where given). None when there are too few
    rows for the folds.

    Values that used the validation rows must not rank the rows a fold judges:
    give the folds they were made with (``folds``, a fold number per row) and,
    per fold, the curve of that fold's own values (``fold_curves``); the fold's
    rules then choose from its curve, and its rows score that curve's models
    (``predictions[0]``, no row removed, is the same for every fold).
    """
    y_val = np.asarray(y_val)
    grid = np.asarray(grid)
    if fold_curves is not None:
        if folds is None or len(folds) != len(y_val) or \
                set(np.unique(folds).tolist()) != set(range(len(fold_curves))):
            raise ValueError("fold_curves needs folds: a fold number 0..len(fold_curves)-1 "
                             "for each validation row, each fold used.")
        n_folds = len(fold_curves)
        if n_folds < 2 or len(y_val) < 2 * n_folds:
            return None
    else:
        n_folds = min(n_folds, len(y_val) // 2)
        if n_folds < 2 or len(grid) < 2:
            return None
        folds = make_folds(y_val, n_folds, rng, stratify)
    score = row_scorer(spec)
    picked = {rule: np.array(predictions[0], copy=True) for rule in RULES}
    cuts: dict[str, list[int]] = {rule: [] for rule in RULES}
    for f in range(n_folds):
        curve = FoldCurve(grid, predictions, n_eligible) if fold_curves is None \
            else fold_curves[f]
        held = folds == f
        rows = np.flatnonzero(~held)
        inner = rows[bootstrap_indices(y_val[rows], n_bootstrap, rng, stratify)]
        boot = bootstrap_curves(spec, y_val, curve.predictions, inner)
        val = score(y_val[rows], curve.predictions[:, rows])
        for rule in RULES:
            n = _choose_cut(curve.grid, val, boot, rule, n_se,
                            curve.n_eligible if rule == "one_se" else None).n_chosen
            at = int(np.flatnonzero(curve.grid == n)[0])
            picked[rule][held] = curve.predictions[at, held]
            cuts[rule].append(int(n))
    trio = np.stack([predictions[0], picked["one_se"], picked["paper"]])
    boot = bootstrap_curves(spec, y_val, trio, idx)
    full, one_se, paper = score(y_val, trio)  # the scorer may overwrite trio: used last
    return CrossValidatedRules(
        tuple(cuts["one_se"]), tuple(cuts["paper"]), float(one_se - full), float(paper - full),
        float(np.std(boot[:, 2] - boot[:, 0], ddof=1)),
        float(np.std(boot[:, 2] - boot[:, 1], ddof=1)),
        level, fold_curves is not None, lead_level, score_name)


def suited(evidence: CutEvidence, check: CrossValidatedRules | None, grid: np.ndarray,
           val_scores: np.ndarray, boot: np.ndarray | None) -> CutEvidence:
    """``evidence`` with the paper's cut taken when ``check`` prefers it, and the check
    recorded either way; unchanged without a check or when the paper's cut is no larger.

    The check vouches for the cuts its folds chose: the paper's cut taken is the best
    validation score of the curve (``grid``, ``val_scores``, ``boot``) among cuts no
    larger than the largest fold's. A maximum beyond every fold's cut is one that no
    fold's share of the validation rows would have chosen: the check says nothing of it.
    """
    if check is None or evidence.rule == "paper" or evidence.n_best <= evidence.n_chosen:
        return evidence
    if not check.prefers_paper:
        return dataclasses.replace(evidence, cross_validated=check)
    n, gain, se = evidence.n_best, evidence.gain_best, evidence.se_best
    capped = ""
    if n > max(check.cuts_paper):
        grid = np.asarray(grid)
        scores = np.where(grid <= max(check.cuts_paper), np.asarray(val_scores, float), -np.inf)
        at = int(np.argmax(scores))  # the first maximum: the smallest cut on ties
        if grid[at] <= evidence.n_chosen:
            return dataclasses.replace(evidence, cross_validated=check)
        n, gain, se = int(grid[at]), float(scores[at] - scores[0]), _se_at(boot, at)
        capped = _capped(check, evidence.gain_best, evidence.n_best)
    return dataclasses.replace(
        evidence, n_chosen=n, gain_chosen=gain, se_chosen=se, cross_validated=check,
        reason=(f"the best validation score (the paper's rule: {_signed(gain)} at n={n}"
                f"{capped}), as this model gains more from it: "
                f"{check.describe()}; the one-SE rule alone: {evidence.reason}"))


def suited_regressor(evidence: CutEvidence, grid: np.ndarray, val_scores: np.ndarray,
                     boot: np.ndarray | None, predictions: np.ndarray, y_val: np.ndarray,
                     idx: np.ndarray, rng: np.random.Generator) -> CutEvidence:
    """``evidence`` with the cut of the best validation squared error taken where it
    removes more, the user's metric there is no worse than at the chosen cut, and
    cross-validation judged on the squared error prefers it (:func:`cross_validated_rules`,
    both rules choosing by the squared error); the check recorded either way.

    For a regressor whose values never saw the validation rows. Judged on the user's
    MAE the check removed true but extreme targets on clean data (moving the model
    towards the median, which the MAE rewards); the squared error, the proper score of a
    mean, charges for them (docs/benchmarks.md, "Regressors: the paper's cut on the
    squared error").
    """
    grid = np.asarray(grid)
    squared = resolve_metric("neg_mse")
    by_squares = row_scorer(squared)(y_val, np.array(predictions, copy=True))
    at = int(np.argmax(by_squares))
    chosen = int(np.flatnonzero(grid == evidence.n_chosen)[0])
    if evidence.rule != "one_se" or grid[at] <= evidence.n_chosen or \
            val_scores[at] < val_scores[chosen]:
        return evidence
    check = cross_validated_rules(grid, predictions, y_val, squared, idx, rng, stratify=False,
                                  n_se=evidence.n_se, n_eligible=evidence.n_eligible,
                                  level=CV_N_SE_REGRESSOR, score_name="squared error")
    if check is None or not check.prefers_paper:
        return dataclasses.replace(evidence, cross_validated=check)
    capped = ""
    if grid[at] > max(check.cuts_paper):  # as for classifiers (suited): what the folds chose
        best = at
        at = int(np.argmax(np.where(grid <= max(check.cuts_paper), by_squares, -np.inf)))
        if grid[at] <= evidence.n_chosen or val_scores[at] < val_scores[chosen]:
            return dataclasses.replace(evidence, cross_validated=check)
        capped = _capped(check, float(by_squares[best] - by_squares[0]), int(grid[best]),
                         " in the squared error")
    gain = float(val_scores[at] - val_scores[0])
    return dataclasses.replace(
        evidence, n_chosen=int(grid[at]), gain_chosen=gain, se_chosen=_se_at(boot, at),
        cross_validated=check,
        reason=(f"the best validation squared error ({_signed(gain)} in the metric at "
                f"n={int(grid[at])}{capped}), as this regressor gains more from it: "
                f"{check.describe()}; the one-SE rule alone: {evidence.reason}"))


def _se_at(boot: np.ndarray | None, at: int) -> float:
    """The bootstrap SE of the gain of the grid's cut ``at`` (NaN without a bootstrap)."""
    if boot is None or len(boot) < 2:
        return float("nan")
    return float(np.std(boot[:, at] - boot[:, 0], ddof=1))


def _capped(check: CrossValidatedRules, gain_best: float, n_best: int, on: str = "") -> str:
    """What the reason says when the whole curve's best lay beyond every fold's cut."""
    return (f", at most the largest fold's cut ({max(check.cuts_paper)}; the whole curve's "
            f"best, {_signed(gain_best)}{on} at n={n_best}, lies beyond every fold's)")


def _choose_cut(grid: np.ndarray, val_scores: np.ndarray, boot: np.ndarray | None,
                rule: str, n_se: float, n_eligible: int | None,
                exact: bool = False) -> CutEvidence:
    check_rule(rule)
    grid = np.asarray(grid)
    scores = np.asarray(val_scores, dtype=float)
    if len(grid) != len(scores) or grid[0] != 0:
        raise ValueError("grid and val_scores must have the same length, starting at n = 0.")
    check_n_se(n_se)
    gain = scores - scores[0]
    if boot is not None and len(boot) >= 2:
        boot_gain = boot - boot[:, :1]
        se = np.std(boot_gain, axis=0, ddof=1)
        n_boot = len(boot)
    else:
        se, n_boot = np.full(len(grid), np.nan), 0
    best = int(np.argmax(scores))  # the first maximum: the smallest cut on ties
    n_best, gain_best, se_best = int(grid[best]), float(gain[best]), float(se[best])

    def evidence(i: int, reason: str) -> CutEvidence:
        return CutEvidence(rule, int(grid[i]), float(gain[i]), float(se[i]), n_best, gain_best,
                           se_best, float(n_se), n_boot, n_eligible, reason)

    if rule == "paper":
        return evidence(best, "the best validation score (the paper's rule)")
    if n_boot == 0:
        return evidence(0, "no bootstrap of the validation rows could be made, so there is no "
                        "evidence that removing rows helps")
    allowed = np.ones(len(grid), dtype=bool) if n_eligible is None else grid <= n_eligible
    # a zero SE with a positive gain is a real gain on every resample: credible
    credible = allowed & (gain > n_se * se) & (gain > 0)
    noise = f"best gain {_signed(gain_best)} at n={n_best}, one SE {se_best:.4g}"
    if not credible.any():
        if n_eligible == 0:
            return evidence(0, (f"no row's value is below tau ({noise})" if exact else
                                "no row is credibly harmful, as no row's interval, with all "
                                f"rows tested at once, lies wholly below tau ({noise})"))
        if n_eligible is not None and n_best > n_eligible and gain_best > n_se * se_best:
            return evidence(0, f"the cuts that beat the validation noise remove rows whose "
                            f"value is not credibly below tau (only {n_eligible} are; {noise})")
        if gain_best <= 0:
            return evidence(0, "no cut scored better than keeping all rows on validation")
        return evidence(0, "removing the lowest-valued rows did not beat keeping all rows by "
                        f"more than the validation noise ({n_se:g} SE; {noise})")
    top = int(np.flatnonzero(credible)[np.argmax(gain[credible])])
    near = credible & (gain >= gain[top] - se[top])
    chosen = int(np.flatnonzero(near)[0])
    k = gain[chosen] / se[chosen] if se[chosen] > 0 else np.inf
    said = (f"removing {int(grid[chosen])} rows gains {_signed(float(gain[chosen]))} on "
            f"validation, {k:.1f} SE (one SE {se[chosen]:.4g})")
    if chosen != top:
        said += (f"; the smallest credible cut within one SE of the best credible gain, "
                 f"{_signed(float(gain[top]))} at n={int(grid[top])}")
    return evidence(chosen, said)


def eligible_rows(values: Any, alpha: float = DEFAULT_ALPHA,
                  control: str | None = None) -> np.ndarray | None:
    """Rows credibly below the threshold, all rows tested at once; None when unknown.

    A row is eligible when the upper end of its interval lies below the
    threshold, the interval widened so that the chance that any of the N rows
    is eligible while its value is not below the threshold stays at
    ``alpha`` (Bonferroni: one-sided level ``alpha / N`` per row). At 95% per
    row, about one clean row in twenty would be eligible by chance (more
    where the intervals are narrow), which is the share this rule must not
    remove on clean data. The interval is the result's own ``ci_high`` at
    that confidence (its ``is_credibly_harmful`` at that confidence), with the
    interval the result names in ``extra["eligibility_interval"]`` when it
    names one. Only a
    result with a threshold and intervals can say this; a row without an
    interval is not eligible. A result with exact values
    (``extra["eligible_by"] == "value"``: :class:`~tdshap.methods.KNNShapley`
    on training queries) has its rows below the threshold eligible as they
    are; the named comparison on the validation rows is then what guards the
    cut.

    ``control``: ``"family"`` (the Bonferroni test above) or ``"false_discovery"``
    (Benjamini-Hochberg at ``alpha`` on each row's one-sided p-value,
    :func:`tdshap.intervals.upper_p_values`: the expected share of false rows
    among the eligible ones; for a result whose interval is not ``"bernstein"``,
    else the family test); ``None``: :data:`ELIGIBILITY_CONTROL`, ``"family"``
    (false-discovery control removed more rows and gained less on the detection
    benchmark, docs/benchmarks.md).
    """
    threshold = getattr(values, "threshold", None)
    if threshold is None:
        return None
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r} must be between 0 and 1 (exclusive).")
    control = ELIGIBILITY_CONTROL if control is None else control
    if control not in CONTROLS:
        raise ValueError(f"control={control!r} must be one of {CONTROLS}.")
    n = len(values.values)
    if isinstance(values, ValuationResult) and values.extra.get("eligible_by") == "value":
        # exact values whose intervals describe the sampling of the data, not of the
        # method (KNNShapley's training queries): the rows below tau, as they are
        with np.errstate(invalid="ignore"):
            v = np.asarray(values.values, dtype=float)
            return np.isfinite(v) & (v < float(threshold))
    if isinstance(values, ValuationResult):
        # a method may name the interval its test should use (see ThresholdingOOB)
        interval = values.extra.get("eligibility_interval", values.interval)
        if control == "false_discovery" and interval != "bernstein":
            p = upper_p_values(values.values, float(threshold), values.counts,
                               values.variances, interval)
            return benjamini_hochberg(p, alpha)
        values = dataclasses.replace(values, confidence=1.0 - 2.0 * alpha / max(n, 1),
                                     interval=interval)
    if hasattr(values, "is_credibly_harmful"):
        return np.asarray(values.is_credibly_harmful, dtype=bool)
    with np.errstate(invalid="ignore"):
        high = np.asarray(values.ci_high, dtype=float)
    return np.isfinite(high) & (high < float(threshold))


def benjamini_hochberg(p: np.ndarray, alpha: float) -> np.ndarray:
    """Rows rejected by the Benjamini-Hochberg step-up procedure at level ``alpha``
    (NaN p-values are never rejected but count among the tests)."""
    p = np.asarray(p, dtype=float)
    n = len(p)
    filled = np.where(np.isfinite(p), p, np.inf)
    order = np.argsort(filled, kind="stable")
    below = filled[order] <= alpha * np.arange(1, n + 1) / max(n, 1)
    out = np.zeros(n, dtype=bool)
    if below.any():
        out[order[: int(np.flatnonzero(below)[-1]) + 1]] = True
    return out
