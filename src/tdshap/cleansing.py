"""The cleansing protocol (the paper, Sec. 5.1): how every method's values are judged.

Rank the training rows by value, lowest first; for each ``n_remove`` on a
grid, train on the rest and score on the validation set; keep the
``n_remove`` with the best validation score (the smallest on ties); report
the test score of that model beside the baseline (``n_remove = 0``).
Every grid model is also scored on the test set, for the removal curves.

``rule="one_se"`` (the default of ``find_harmful`` and ``tdshap clean``)
chooses the cut from the same curve but only on evidence that it beats the
noise of the validation score, and, for a classifier's values that never saw
the validation rows (or a cross-fit's values, each made without one fold of
them), takes the paper's larger cut where cross-validation over those rows
says the model gains more from it (:mod:`tdshap.cut`); ``cleanse``
called directly, and so the paper's benchmarks, keep the paper's rule.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import is_classifier
from sklearn.neighbors import KNeighborsClassifier

from tdshap._io import image_path, jsonable
from tdshap._validation import (
    as_pair,
    check_columns_by_position,
    check_columns_in_order,
    check_data,
    check_estimator,
    check_label_kinds,
    check_not_estimator,
    check_number,
    check_random_state,
    check_shared_classes,
    float32_fix,
    warn_one_class,
    warn_unseen_classes,
)
from tdshap.cross_fit import CrossFit
from tdshap.cut import (
    CROSS_FIT_N_SE,
    CV_LEAD_N_SE_PROXY,
    CV_N_SE,
    CV_N_SE_KNN,
    DEFAULT_ALPHA,
    DEFAULT_N_BOOTSTRAP,
    DEFAULT_N_SE,
    ELIGIBLE_N_SE,
    CutEvidence,
    FoldCurve,
    bootstrap_curves,
    bootstrap_indices,
    bootstrap_scores,
    check_n_se,
    check_rule,
    choose_cut,
    cross_validated_rules,
    eligible_rows,
    eligible_test,
    resamples_differ,
    suited,
    suited_regressor,
)
from tdshap.result import ValuationResult, label_text
from tdshap.utility.base import (
    check_scoring,
    check_some_fit_worked,
    describe_error,
    fallback_model,
    random_state_params,
    warn_rows_break_the_model,
)
from tdshap.utility.fast.budget import check_count
from tdshap.utility.fast.neighbor_lists import RemovalFits
from tdshap.utility.fast.pipeline import final_estimator
from tdshap.utility.metrics import default_metric, one_per_row, resolve_metric
from tdshap.utility.parallel import check_n_jobs
from tdshap.utility.subset_fits import Outcome, SubsetFitter


@dataclass
class CleansingResult:
    """Removal curves and the chosen cleansing of one method's ranking.

    ``n_remove``, ``removed`` and ``cleaned_*`` describe the cut ``rule``
    chose; ``evidence`` holds both cuts (the paper's best-validation cut
    ``n_best`` and the chosen one) with their bootstrap standard errors.
    """

    method: str
    metric: str
    grid: np.ndarray
    val_scores: np.ndarray
    test_scores: np.ndarray | None
    n_remove: int
    removed: np.ndarray
    baseline_val: float
    cleaned_val: float
    baseline_test: float | None
    cleaned_test: float | None
    extra: dict[str, Any] = field(default_factory=dict)
    rule: str = "paper"
    evidence: CutEvidence | None = None

    @property
    def n_best(self) -> int:
        """The paper's cut: the best validation score (the smallest cut on ties)."""
        return int(self.grid[int(np.argmax(self.val_scores))])

    def scores_at(self, n_remove: int) -> tuple[float, float | None]:
        """``(validation, test)`` scores of the grid model without the ``n_remove`` lowest."""
        cuts = ", ".join(map(str, self.grid[:5].tolist())) + (
            f", ..., {self.grid[-1]}" if len(self.grid) > 5 else "")
        check_number(n_remove, "n_remove", low=0, integer=True,
                     hint=f"It is one of the curve's cuts ({cuts}).")
        at = np.flatnonzero(self.grid == n_remove)
        if not len(at):  # numpy's "index 0 is out of bounds" for a count off the grid
            raise ValueError(f"n_remove={n_remove!r} is not a cut of the curve: give one of "
                             f"its grid's counts ({cuts}).")
        i = int(at[0])
        test = None if self.test_scores is None else float(self.test_scores[i])
        return float(self.val_scores[i]), test

    @property
    def gain(self) -> float | None:
        """Test score after minus before (higher is better, in metric units)."""
        if self.cleaned_test is None or self.baseline_test is None:
            return None
        return self.cleaned_test - self.baseline_test

    def to_dict(self) -> dict[str, Any]:

        return jsonable(asdict(self))

    def plot(self, path: str | os.PathLike[str], title: str | None = None) -> Path:
        """Write a PNG of the validation (and test) curves, like the paper's Figure 1."""
        return plot_curves([self], path, title=title)


SCORER_BOOTSTRAP_CAP = 100


def removal_grid(n: int, step: int | None, max_fraction: float) -> np.ndarray:
    """``0, step, 2 step, ...`` up to ``max_fraction * n`` (never all rows)."""
    check_number(max_fraction, "max_fraction", low=0, high=1)
    if not 0 < max_fraction < 1:
        raise ValueError(f"max_fraction={max_fraction!r} must be between 0 and 1 (exclusive).")
    if step is None:
        step = max(1, math.ceil(n / 100))
    check_number(step, "step", low=1, integer=True)
    top = min(math.floor(max_fraction * n), n - 1)
    return np.arange(0, top + 1, int(step))


def _check_some_value(values: np.ndarray) -> None:
    """Refuse values of which none is a number (NaN: a row the method could not value).

    A NaN row sorts last and is never removed; with every row NaN the order was the
    tie-breaking shuffle alone, so the protocol removed random rows as if they were harmful.
    """
    if len(values) and np.isnan(values).all():
        raise ValueError("every one of the values is NaN (no row was valued): value the rows "
                         "again (Data-OOB: more bags) before cleansing.")


def _check_same_rows(values: Any, X: Any) -> None:
    """Refuse a result whose saved row labels are not ``X``'s (when both have labels).

    The values of another table of as many rows, or of this one shuffled, ranked rows they
    were never about: the protocol removed rows by another row's value, silently. Labels
    are compared as text, as a ``.npz`` result stores them.
    """
    saved = getattr(values, "index", None)
    labels = getattr(X, "index", None)
    if saved is None or labels is None or len(saved) != len(labels):
        return
    theirs, ours = label_text(saved), label_text(labels)
    if not np.array_equal(theirs, ours):
        at = int(np.flatnonzero(theirs != ours)[0])
        there, here = str(theirs[at]), str(ours[at])
        raise ValueError(f"values were made for other rows than X's: row {at} is labelled "
                         f"{there!r:.40} there and {here!r:.40} in X. Value this X, or pass "
                         "X's rows in the order the values were made.")


def _ranking(values: Any, random_state: Any) -> tuple[np.ndarray, str]:
    if isinstance(values, ValuationResult):
        _check_some_value(values.values)
        return values.ranking(random_state), values.algorithm
    raw = np.asarray(values) if not isinstance(values, dict) else None
    # complex values were cast to their real parts with only numpy's ComplexWarning
    if raw is None or raw.dtype.kind == "c":
        raise ValueError("values must be real numbers (one per training row) or a "
                         "ValuationResult.")
    try:
        arr = raw.astype(float)
    except (TypeError, ValueError):
        raise ValueError("values must be numbers (one per training row) or a "
                         "ValuationResult.") from None
    if arr.ndim != 1:
        raise ValueError("values must be 1-D (one value per training row) or a ValuationResult.")
    _check_some_value(arr)
    rng = np.random.default_rng(random_state)
    return np.lexsort((rng.random(len(arr)), arr)), "values"


def cleanse(
    values: ValuationResult | np.ndarray,
    estimator: Any,
    X: Any,
    y: Any,
    X_val: Any,
    y_val: Any,
    X_test: Any = None,
    y_test: Any = None,
    *,
    metric: Any = None,
    step: int | None = None,
    max_fraction: float = 0.5,
    random_state: int | None = 0,
    rule: str = "paper",
    n_se: float = DEFAULT_N_SE,
    n_bootstrap: int | None = None,
    alpha: float = DEFAULT_ALPHA,
    on_error: str = "fallback",
    n_jobs: int | None = None,
) -> CleansingResult:
    """Apply the cleansing protocol (the paper, Sec. 5.1) to ``values``.

    ``values`` is a result or one value per row. ``step`` defaults to 1% of N
    (at least 1); the grid stops at ``max_fraction`` of N. Every grid model
    uses the same ``random_state`` (common random numbers), so curves differ
    only by the rows removed.

    ``rule="paper"`` keeps the best validation score. ``rule="one_se"``
    removes rows only when the gain beats ``n_se`` standard errors, from
    ``n_bootstrap`` (default 500 for ``"one_se"``, none for ``"paper"``; given
    to ``"paper"``, it only reports the standard errors) paired resamples of
    the validation rows (resampled within
    classes for classifiers), and takes the smallest credible cut within one
    SE of the best (:func:`tdshap.cut.choose_cut`), or, for a classifier's values
    that never saw the validation rows (``extra["validation_free"]``), the paper's
    cut where it removes more and both rules cross-validated over the validation
    rows say it gains more (:func:`tdshap.cut.cross_validated_rules`); values that
    saw them and carry each fold's values made without it (``extra["cross_fit"]``)
    are checked so too, each fold ranking the rows by its own values and refitting
    its own curve (up to 5 times the grid's fits more; for the k-NN they value, at a
    stricter level: :func:`check_level`). A regressor's values that never saw the
    validation rows may take the cut of the best validation squared error, where
    cross-validation on the squared error prefers it
    (:func:`tdshap.cut.suited_regressor`). Metrics scored from
    predictions resample the grid models' predictions (cheap); scorers that
    need the model (``neg_log_loss``) score it on at most 100 resamples. For a result with a
    threshold and intervals (TDShap's), ``"one_se"`` ranks the rows whose
    interval lies wholly below the threshold first and removes only those;
    ``alpha`` is the chance that any row is taken for below the threshold
    when it is not (:func:`tdshap.cut.eligible_rows`).

    A grid model that cannot be fitted is scored as the valuation scores one
    (``on_error``, see :class:`tdshap.utility.base.Utility`): by the best
    constant prediction for its rows; ``extra`` counts such fits
    (``n_failed_fits``) and keeps the first error (``first_error``); when every grid
    model fails, a ``ValueError`` quotes that error instead. A cut that
    leaves a classifier one class is scored as that class, without a fit and
    without counting as failed (``n_one_class_fits``).

    Validation rows of a single class, or of classes no training row has, are warned of
    (:func:`tdshap._validation.warn_one_class`, :func:`tdshap._validation.warn_unseen_classes`):
    they choose the cut.

    ``n_jobs`` (joblib's: None or 1 in-process, -1 every core) fits the models on that
    many workers where the fits left would take
    :data:`tdshap.utility.subset_fits.MIN_PARALLEL_SECONDS` or more in-process
    (:class:`tdshap.utility.subset_fits.SubsetFitter`); the result is the same whatever
    ``n_jobs``, and ``extra["n_worker_fits"]`` counts the fits workers made.
    """
    for name, data in (("values", values), ("X", X), ("y", y), ("X_val", X_val),
                       ("y_val", y_val), ("X_test", X_test), ("y_test", y_test)):
        check_not_estimator(data, name, "the estimator goes second: cleanse(values, "
                            "estimator, X, y, X_val, y_val)")
    if on_error not in ("raise", "fallback"):
        raise ValueError(f"on_error={on_error!r} must be 'raise' or 'fallback'.")
    check_rule(rule)
    # n_se nan was taken (and a negative one refused only after every fit of the curve);
    # step and max_fraction are checked by removal_grid below, before any fit
    check_n_se(n_se)
    if n_bootstrap is None:  # the paper's rule needs none: its benchmarks pay nothing extra
        n_bootstrap = DEFAULT_N_BOOTSTRAP if rule == "one_se" else 0
    # check_number, not int(): inf was int()'s OverflowError, nan its "cannot convert"
    check_number(n_bootstrap, "n_bootstrap", low=0, integer=True,
                 hint="0: no bootstrap, so the one_se rule removes nothing.")
    check_estimator(estimator)
    check_columns_by_position(estimator)
    check_n_jobs(n_jobs, optional=True)
    # it seeds the grid models too: scikit-learn's seeds, not a Generator
    check_random_state(random_state, generator=False)
    random_state = None if random_state is None else int(random_state)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.floating) or \
            not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r} must be a level between 0 and 1 (exclusive), "
                         "e.g. 0.05.")
    Xa, ya, Xv, yv = check_data(X, y, X_val, y_val)
    if is_classifier(estimator):
        check_shared_classes(ya, yv)
        # as the valuation methods warn: the validation rows choose the cut
        warn_one_class(yv)
        warn_unseen_classes(ya, yv)
    # the resampled rows are one int64 table (tdshap.cut.bootstrap_indices): 10**12 was
    # numpy's MemoryError "Unable to allocate 72.8 TiB"
    check_count("n_bootstrap", n_bootstrap, 8 * len(yv),
                f"resamples of the {len(yv)} validation rows", 200)
    if (X_test is None) != (y_test is None):
        raise ValueError("give X_test with y_test, or neither.")
    has_test = X_test is not None
    if has_test:
        Xt, yt = as_pair(X_test, y_test, "X_test", "y_test")
        check_columns_in_order(X, X_test, "X", "X_test")
        if len(Xt) == 0:  # was "the estimator failed on every one of its fits"
            raise ValueError("X_test is empty: give test rows, or leave X_test and y_test "
                             "out.")
        if Xt.shape[1:] != Xa.shape[1:]:
            raise ValueError("X_test must have the same features as X.")
        # as for the validation rows: the after-cleansing test score would be 0, silently
        check_label_kinds(ya, yt, "y_test")
        if is_classifier(estimator):
            check_shared_classes(ya, yt, "y_test")
    order, method = _ranking(values, random_state)
    if len(order) != len(ya):
        raise ValueError(
            f"got {len(order)} values for {len(ya)} training rows: value the same training set."
        )
    _check_same_rows(values, X)
    spec = resolve_metric(default_metric(estimator) if metric is None else metric)
    # as find_harmful checks it: a metric giving NaN made every score NaN and removed
    # nothing without a word; one that raised ended in its own error after the first fit
    check_scoring(spec, estimator, ya, Xv, yv)
    grid = base_grid = removal_grid(len(ya), step, max_fraction)
    eligible = eligible_rows(values, alpha) if rule == "one_se" else None
    n_eligible = None
    if eligible is not None:
        order, n_eligible = _eligible_first(order, eligible)
        grid = _with_cut(grid, n_eligible)
    seed_params = random_state_params(estimator)
    seed = 0 if random_state is None else int(random_state)
    # values from out-of-bag rows never saw the validation rows: their gains are honest
    free = isinstance(values, ValuationResult) and bool(values.extra.get("validation_free"))
    # values that did see them may carry a cross-fit: what each fold's rows had no part in
    cross = None if rule != "one_se" or free else _cross_fit_of(values, Xv, yv, len(ya))
    # with each fold's values, the paper's larger cut is checked fold by fold (a model
    # refitted per cut, every fold judging), reusing the grid's predictions
    by_folds = cross is not None and cross.values is not None and \
        is_classifier(estimator) and len(np.unique(cross.folds)) == cross.n_folds
    # under the paper's rule the bootstrap only reports: never at the cost of rescoring
    idx = None
    stratify = is_classifier(estimator)
    if n_bootstrap >= 2 and resamples_differ(yv, stratify) and (
            rule == "one_se" or spec.from_predictions is not None):
        # a scorer that needs the model predicts once per resample: fewer resamples
        n_boot = n_bootstrap if spec.from_predictions is not None else min(
            n_bootstrap, SCORER_BOOTSTRAP_CAP)
        idx = bootstrap_indices(yv, int(n_boot), np.random.default_rng(seed),
                                stratify=stratify)
    val_scores = np.empty(len(grid))
    test_scores = np.empty(len(grid)) if has_test else None
    predictions: list[np.ndarray] = []
    boot_columns: list[np.ndarray] = []
    boot_failed = False
    classes = np.unique(ya) if is_classifier(estimator) else None
    failed, first_error = 0, None
    # each validation row's smooth score (minus its Brier score, or minus its squared
    # error for a regressor), for the eligible cut's test
    smooth: dict[int, np.ndarray] = {}
    wants_smooth = n_eligible is not None and n_eligible > 0 and (
        classes is None or hasattr(estimator, "predict_proba"))

    def smooth_scores(m: Any) -> np.ndarray | None:
        return (_row_squared_error(m, Xv, yv) if classes is None
                else _row_brier(m, Xv, yv, classes))

    def scored(m: Any) -> tuple[float, np.ndarray | None, float]:
        """Validation score, validation predictions (prediction metrics) and test score."""
        # a column of predictions would broadcast against yv: refused, a failed fit
        pred = one_per_row(m.predict(Xv), len(Xv)) if spec.from_predictions is not None \
            else None
        val = spec.from_predictions(yv, pred) if spec.from_predictions is not None and \
            pred is not None else spec.score(m, Xv, yv)
        test = spec.score(m, Xt, yt) if test_scores is not None else np.nan
        return float(val), pred, float(test)

    # k-NN scored from predictions: neighbour lists searched once instead of a refit per cut
    fits = RemovalFits(estimator, Xa, ya, [Xv] + ([Xt] if has_test else []),
                       spec.from_predictions is not None)
    fitter = SubsetFitter(estimator, Xa, ya, classes, dict.fromkeys(seed_params, seed), fits,
                          n_jobs)
    one_class = 0
    full_model: Any = None
    full_error: str | None = None
    # models already fitted, by the rows they leave out: a fold of the cross-fit that
    # flags exactly the eligible rows needs no fit of its own
    fitted_without: dict[bytes, Any] = {}
    # the grid's validation predictions, by the rows they leave out: the cross-fit's folds
    # rank the rows their own way, and a fold's cut of the same rows needs no fit
    predicted_without: dict[bytes, np.ndarray] = {}
    keeps = (np.sort(order[n_remove:]) for n_remove in grid)  # made as they are fitted
    for i, (n_remove, outcome) in enumerate(zip(grid, fitter.fit_all(keeps, len(grid)),
                                                strict=True)):
        try:
            # a classifier left one class predicts it: many refuse to fit, which is
            # no failure of the model (imbalanced data cut down to its majority)
            model, alone = outcome()
            one_class += alone
            val_score, pred, test_score = scored(model)
            if n_remove == n_eligible:
                fitted_without[_rows_key(order[:n_remove])] = model
        except Exception as err:
            if on_error == "raise":
                raise
            failed += 1
            first_error = first_error or describe_error(err)
            if n_remove == 0:
                full_error = describe_error(err)
            model = fallback_model(ya[np.sort(order[n_remove:])], classes)
            val_score, pred, test_score = scored(model)
        val_scores[i] = val_score
        if n_remove == 0:
            full_model = model
        if wants_smooth and n_remove in (0, n_eligible):
            scores = smooth_scores(model)
            if scores is not None:
                smooth[int(n_remove)] = scores
        if pred is not None:
            predictions.append(pred)
            if by_folds:
                predicted_without[_rows_key(order[:n_remove])] = pred
        elif idx is not None and not boot_failed:
            fitted: Any = model

            def score_rows(rows: np.ndarray, m: Any = fitted) -> float:
                return spec.score(m, Xv[rows], yv[rows])

            try:
                boot_columns.append(bootstrap_scores(score_rows, idx))
            except ValueError:  # a scorer refusing a resample: no evidence, said so
                boot_failed = True
        if test_scores is not None:
            test_scores[i] = test_score
    check_some_fit_worked(failed, len(grid) - failed, first_error, "the cleansing curve",
                          lambda: float32_fix(first_error, Xa, Xv))
    # the curve's first point is the model on all rows: the score it starts from
    warn_rows_break_the_model(failed, len(grid), full_error, len(ya), "the cleansing curve",
                              lambda: float32_fix(full_error, Xa, Xv))
    boot = None
    stacked = np.stack(predictions) if predictions else None
    if idx is not None and stacked is not None:
        boot = bootstrap_curves(spec, yv, stacked, idx)
    elif idx is not None and not boot_failed:
        boot = np.stack(boot_columns, axis=1)
    test = None
    exact = isinstance(values, ValuationResult) and values.extra.get("eligible_by") == "value"
    if rule == "one_se" and n_eligible:
        pair = (smooth[0], smooth[n_eligible]) if len(smooth) == 2 else None
        crossed = None
        if cross is not None and pair is not None:
            crossed = _cross_fitted(cross, Xv, yv, len(ya),
                                    fitter, smooth_scores, spec, full_model,
                                    predictions[0] if predictions else None, fitted_without)
        needed = ELIGIBLE_N_SE if free else n_se
        if crossed is not None and pair is not None:
            # rows judged only by validation rows that had no part in choosing them:
            # one honest comparison, as for values that never saw the validation rows
            needed, pair = CROSS_FIT_N_SE, (pair[0], crossed[0])
        test = eligible_test(grid, val_scores, boot, n_eligible, needed, pair, idx,
                             "brier" if classes is not None else "squared error",
                             None if crossed is None else crossed[1], exact)
    evidence = choose_cut(grid, val_scores, boot, rule=rule, n_se=n_se, n_eligible=n_eligible,
                          eligible=test, exact=exact)
    check_fits = 0  # models the check of the paper's cut fitted beyond the grid's
    if rule == "one_se" and classes is not None and evidence.n_best > evidence.n_chosen \
            and idx is not None and stacked is not None:
        # does this classifier gain more from the paper's larger cut? asked of validation
        # rows that had no part in choosing it, nor in valuing the rows (a stream of its
        # own: the bootstrap's unchanged). Regressors below, on the squared error: a cut
        # of true but extreme targets moves them towards the median, which the MAE
        # rewards on clean data too
        cv_rng = np.random.default_rng([seed, 2])
        check = None
        if free:
            check = cross_validated_rules(grid, stacked, yv, spec, idx, cv_rng,
                                          stratify=True, n_se=n_se, n_eligible=n_eligible)
        elif by_folds:
            assert cross is not None and cross.values is not None
            # each fold's rows judge the curve of values made without them; for the
            # k-NN they value exactly at a stricter level (check_level)
            def predicted(removed: list[np.ndarray]) -> list[np.ndarray]:
                nonlocal check_fits
                for key, outcome in _fits_without(removed, predicted_without, fitter,
                                                  len(ya)):
                    check_fits += 1
                    predicted_without[key] = np.asarray(outcome()[0].predict(Xv))
                return [predicted_without[_rows_key(rows)] for rows in removed]

            try:
                curves = _fold_curves(cross.values, cross.flagged, base_grid, random_state,
                                      predicted)
            except Exception:  # a fold's model that cannot be fitted: no check, as before
                curves = None
            if curves is not None:
                check = cross_validated_rules(grid, stacked, yv, spec, idx, cv_rng,
                                              stratify=True, n_se=n_se,
                                              n_eligible=n_eligible, folds=cross.folds,
                                              fold_curves=curves,
                                              level=check_level(estimator),
                                              lead_level=lead_level(estimator))
        evidence = suited(evidence, check, grid, val_scores, boot)
    elif rule == "one_se" and classes is None and free and idx is not None and \
            stacked is not None:
        # a regressor's cut of the best squared error, where cross-validation on it agrees
        evidence = suited_regressor(evidence, grid, val_scores, boot, stacked, yv, idx,
                                    np.random.default_rng([seed, 2]))
    best = int(np.flatnonzero(grid == evidence.n_chosen)[0])
    n_remove = evidence.n_chosen
    return CleansingResult(
        method=method,
        metric=spec.name,
        grid=grid,
        val_scores=val_scores,
        test_scores=test_scores,
        n_remove=n_remove,
        removed=np.sort(order[:n_remove]),
        baseline_val=float(val_scores[0]),
        cleaned_val=float(val_scores[best]),
        baseline_test=None if test_scores is None else float(test_scores[0]),
        cleaned_test=None if test_scores is None else float(test_scores[best]),
        rule=rule,
        evidence=evidence,
        extra={"n_fits": len(grid), "n_check_fits": check_fits,
               "n_failed_fits": failed, "first_error": first_error,
               "n_one_class_fits": one_class, "n_worker_fits": fitter.n_worker_fits,
               "path_note": fits.note, "refit_rows": fits.refit_rows},
    )


def _knn_classifier(estimator: Any) -> bool:
    """A k-NN classifier, or a pipeline ending in one: it changes by the rows removed and
    nothing else."""
    return isinstance(final_estimator(estimator), KNeighborsClassifier)


def check_level(estimator: Any) -> float:
    """The standard errors the paper's larger cut must gain by, fold by fold, for
    ``estimator`` when its values saw the validation rows: :data:`tdshap.cut.CV_N_SE_KNN`
    for a k-NN classifier, whose exact values ranked the rows; :data:`tdshap.cut.CV_N_SE`
    for a model they stand in for."""
    return CV_N_SE_KNN if _knn_classifier(estimator) else CV_N_SE


def lead_level(estimator: Any) -> float | None:
    """The standard errors the paper's cut must lead the one-SE rule's by, fold by fold:
    :data:`tdshap.cut.CV_LEAD_N_SE_PROXY` for a model the values stand in for; None (as
    for the gain, :func:`check_level`) for the k-NN they describe exactly."""
    return None if _knn_classifier(estimator) else CV_LEAD_N_SE_PROXY


def _rows_key(rows: np.ndarray) -> bytes:
    """A set of row positions as a dictionary key (order does not matter)."""
    return np.sort(np.asarray(rows, dtype=np.int64)).tobytes()


def _fits_without(removals: list[np.ndarray], known: dict[bytes, Any], fitter: SubsetFitter,
                  n_rows: int) -> Iterator[tuple[bytes, Outcome]]:
    """The :func:`_rows_key` of each removal ``known`` lacks (once each) and the outcome of
    the fit without those rows, fitted together (on workers where that pays)."""
    missing: dict[bytes, np.ndarray] = {}
    for rows in removals:
        key = _rows_key(rows)
        if key not in known:
            missing.setdefault(key, rows)
    keeps = (np.setdiff1d(np.arange(n_rows), rows) for rows in missing.values())
    return zip(missing, fitter.fit_all(keeps, len(missing)), strict=True)


def _cross_fit_of(values: Any, Xv: np.ndarray, yv: np.ndarray, n_rows: int
                  ) -> CrossFit | None:
    """The cross-fit ``values`` carry for these validation rows; None without one (or
    one made for other rows); ``ValueError`` when it is malformed."""
    if not isinstance(values, ValuationResult) or values.extra.get("cross_fit") is None:
        return None
    try:
        cross = CrossFit.from_extra(values.extra["cross_fit"], n_rows)
    except ValueError as err:
        raise ValueError(f"values.extra['cross_fit'] {err}: value the rows again, or drop "
                         "that entry to cut without the cross-fitted test.") from None
    return cross if cross.matches(Xv, yv) else None


def _fold_curves(fold_values: tuple[np.ndarray, ...], flagged: tuple[np.ndarray, ...],
                 base_grid: np.ndarray, random_state: int | None,
                 predicted: Any) -> list[FoldCurve]:
    """Each fold's own removal curve: its values ranked as the cut ranks the result's
    (ties by the same seeded shuffle, its flagged rows first), on the grid with its own
    eligible cut; ``predicted(removed)``: the validation predictions without each set of
    rows in the list (asked once for every fold, so that the fits can run together)."""
    cuts = []
    for vals, rows in zip(fold_values, flagged, strict=True):
        first = np.zeros(len(vals), dtype=bool)
        first[rows] = True
        order, n_eligible = _eligible_first(_ranking(vals, random_state)[0], first)
        grid = _with_cut(base_grid, n_eligible)
        cuts.append((grid, [order[:n] for n in grid], n_eligible))
    predictions = iter(predicted([rows for _, removed, _ in cuts for rows in removed]))
    return [FoldCurve(grid, np.stack([next(predictions) for _ in grid]), n_eligible)
            for grid, _, n_eligible in cuts]


def _eligible_first(order: np.ndarray, eligible: np.ndarray) -> tuple[np.ndarray, int]:
    """``order`` with the eligible rows first (each part keeps its order), so that the
    curve's cuts are the rows removed; and how many are eligible."""
    return (np.concatenate([order[eligible[order]], order[~eligible[order]]]),
            int(eligible.sum()))


def _with_cut(grid: np.ndarray, n: int) -> np.ndarray:
    """``grid`` with the cut of ``n`` rows added where it lies within it."""
    return np.union1d(grid, [n]) if 0 < n <= grid[-1] else grid


def _cross_fitted(cross: CrossFit, Xv: np.ndarray, yv: np.ndarray, n_rows: int,
                  fitter: SubsetFitter, smooth_scores: Any, spec: Any, full_model: Any,
                  full_pred: np.ndarray | None, fitted_without: dict[bytes, Any]
                  ) -> tuple[np.ndarray, float] | None:
    """Each validation row's smooth score under the model without the rows flagged
    without its fold, and the user's metric gain so cross-fitted; None when a fold's
    model cannot say.

    ``fitted_without``: models already fitted, keyed by :func:`_rows_key` of the rows
    they leave out; folds that flag the same rows share one fit (added here)."""
    scores = np.empty(len(yv))
    pred = None if full_pred is None else np.array(full_pred, copy=True)
    gain = 0.0
    judged = [(f, flagged) for f, flagged in enumerate(cross.flagged)
              if (cross.folds == f).any()]
    try:
        for key, outcome in _fits_without([flagged for _, flagged in judged], fitted_without,
                                          fitter, n_rows):
            fitted_without[key] = outcome()[0]
        for f, flagged in judged:
            rows = cross.folds == f
            model = fitted_without[_rows_key(flagged)]
            fold = smooth_scores(model)
            if fold is None:
                return None
            scores[rows] = fold[rows]
            if pred is not None:
                pred[rows] = np.asarray(model.predict(Xv))[rows]
            else:  # a metric that needs the model: the folds' gains, weighed by their rows
                gain += rows.mean() * (spec.score(model, Xv[rows], yv[rows])
                                       - spec.score(full_model, Xv[rows], yv[rows]))
    except Exception:  # a fold that cannot be fitted or scored: no cross-fitted test
        return None
    if pred is not None:
        assert full_pred is not None
        gain = float(spec.from_predictions(yv, pred) - spec.from_predictions(yv, full_pred))
    return scores, float(gain)


def _row_brier(model: Any, X: np.ndarray, y: np.ndarray, classes: np.ndarray
               ) -> np.ndarray | None:
    """Minus the Brier score of each row (higher is better); None without probabilities."""
    try:
        proba = np.asarray(model.predict_proba(X), dtype=float)
    except Exception:  # a model without usable probabilities: the test uses the metric
        return None
    if not np.all(np.isin(y, classes)):
        return None
    full = np.zeros((len(X), len(classes)))
    # a model fitted without some class gives it no column: probability 0
    cols = np.searchsorted(classes, np.asarray(model.classes_))
    if proba.shape != (len(X), len(cols)) or not np.all(classes[cols] == model.classes_):
        return None
    full[:, cols] = proba
    full[np.arange(len(y)), np.searchsorted(classes, y)] -= 1.0
    return -np.sum(full**2, axis=1)


def _row_squared_error(model: Any, X: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """Minus the squared error of each row (higher is better); None when it is not finite."""
    try:
        pred = np.asarray(model.predict(X), dtype=float).ravel()
    except Exception:  # the test then uses the metric
        return None
    if pred.shape != (len(y),):
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        scores = -(pred - np.asarray(y, dtype=float)) ** 2
    return scores if np.all(np.isfinite(scores)) else None


def _display(metric: str, scores: np.ndarray) -> tuple[np.ndarray, str]:
    """Plot errors as errors: ``neg_mae`` is drawn as MAE."""
    if metric.startswith("neg_"):
        return -scores, metric[4:].upper()
    return scores, metric


def plain_text(text: str) -> str:
    """``text`` as matplotlib shows it literally: a ``$`` does not start its TeX math.

    Names in a plot come from the user (a file name, a result's algorithm, a title): one
    like 'a$\\foo{$' ended savefig in matplotlib's 'ParseFatalException: Unknown symbol'.
    """
    return str(text).replace("$", r"\$")


def plot_curves(
    results: list[CleansingResult], path: str | os.PathLike[str], title: str | None = None
) -> Path:
    """Validation and test removal curves of one or more methods, side by side."""
    path = image_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    has_test = any(r.test_scores is not None for r in results)
    fig, axes = plt.subplots(1, 2 if has_test else 1, figsize=(10 if has_test else 5, 4),
                             squeeze=False)
    panels = [("validation", "val_scores")] + ([("test", "test_scores")] if has_test else [])
    for ax, (label, attr) in zip(axes[0], panels, strict=True):
        for r in results:
            scores = getattr(r, attr)
            if scores is None:
                continue
            shown, ylabel = _display(r.metric, scores)
            (line,) = ax.plot(r.grid, shown, label=plain_text(r.method))
            ax.axvline(r.n_remove, color=line.get_color(), linestyle=":", linewidth=1)
            if r.n_best != r.n_remove:  # the paper's best-validation cut, when not chosen
                ax.axvline(r.n_best, color=line.get_color(), linestyle="--", linewidth=0.8,
                           alpha=0.6)
        ax.set_xlabel("instances removed")
        ax.set_ylabel(plain_text(f"{ylabel} ({label})"))
        ax.set_title(f"{label} set")
        ax.grid(alpha=0.3)
    if any(r.n_best != r.n_remove for r in results):  # say which line is which cut
        axes[0][0].plot([], [], color="gray", linestyle=":", label="chosen cut")
        axes[0][0].plot([], [], color="gray", linestyle="--", label="best validation cut")
    axes[0][0].legend()
    if title:
        fig.suptitle(plain_text(title))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
