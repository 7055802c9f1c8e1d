"""A run checked before it starts, then carried out: what ``find_harmful`` and the CLI share.

:func:`plan` checks everything a run needs (the model and its task, its
parameters, the TDShap settings against N, a few timed evaluations that give
the cost estimate and catch a model that never fits, the time budget against
the first pass) and starts nothing, so the command line can refuse bad input
before it creates any output. :func:`execute` values the rows, stops when
too many fits of a stage failed (their score is the fallback's, see
:class:`tdshap.utility.base.Utility`), and cleanses.
"""

from __future__ import annotations

import os
import reprlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import is_classifier, is_regressor

from tdshap._validation import (
    ParameterError,
    check_estimator,
    check_number,
    column_choices,
    float32_fix,
    names,
    picks_columns_by_name,
    said_already,
)
from tdshap.app.models import DEFAULT_MODEL, build_model, describe
from tdshap.app.report import METHOD_LABELS
from tdshap.app.run import HarmfulRun, PreparedData, Setting, TDShapOptions
from tdshap.app.tabular import TableEncoder, plain_value
from tdshap.app.valuer import make_valuer
from tdshap.cleansing import cleanse
from tdshap.cut import DEFAULT_N_BOOTSTRAP, check_rule
from tdshap.methods import TDShap
from tdshap.methods.apt.sampling import check_block_size
from tdshap.methods.apt.thresholds import DEFAULT_EPS_FACTOR
from tdshap.methods.checkpoint.files import CheckpointDataError, CheckpointError, checkpoint_info
from tdshap.utility.base import REPEATED_WARNINGS, nested_params, too_few_rows
from tdshap.utility.fast.approximate_search import check_search
from tdshap.utility.metrics import one_per_row
from tdshap.utility.parallel import check_n_jobs
from tdshap.utility.subset_fits import worker_count


def _auto_note(value: Any, rule: str) -> str:
    return rule if value == "auto" else "given"


#: Default share of a stage's fits that may fail (and be scored by the fallback)
#: before the run stops: above it the values mostly measure the fallback.
DEFAULT_MAX_FAILED_FRACTION = 0.05


class TooManyFailures(ParameterError):
    """Too many of a stage's fits raised: the values would describe the fallback."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "max_failed_fraction")


def check_estimator_task(estimator: Any, task: str, label: str) -> None:
    """Refuse an estimator that cannot serve ``task`` (a regressor or clusterer on labels)."""
    try:  # the library's one estimator check: a class given for an instance is named so
        check_estimator(estimator)
    except ValueError as err:  # (find_harmful said "ABCMeta is not a scikit-learn estimator")
        raise ParameterError(str(err), "model") from None
    try:
        classifier, regressor = is_classifier(estimator), is_regressor(estimator)
    except (AttributeError, TypeError):
        raise ParameterError(f"{label} is not a scikit-learn estimator (derive it from "
                             "sklearn.base.BaseEstimator).", "model") from None
    if task == "classification" and not classifier:
        kind = "a regressor" if regressor else "neither a classifier nor a regressor"
        raise ParameterError(f"{label} is {kind}, but the task is classification: choose a "
                             "classifier.", "model", "task")
    if task == "regression" and not regressor:
        kind = "a classifier" if classifier else "neither a classifier nor a regressor"
        raise ParameterError(f"{label} is {kind}, but the task is regression: choose a "
                             "regressor.", "model", "task")


#: the largest share of the training rows a cut may remove (the cleansing grid's top)
CLEANSE_MAX_FRACTION = 0.5


def _neighbours(estimator: Any) -> list[int]:
    """Every ``n_neighbors`` among the estimator's (nested) parameters."""
    return [v for v in nested_params(estimator, "n_neighbors").values() if isinstance(v, int)]


def cleanse_fraction(estimator: Any, n: int) -> float:
    """The cleansing grid's top share of the ``n`` rows: never so deep that a k-NN has fewer
    rows left than neighbours (those fits would fail)."""
    k = max(_neighbours(estimator), default=0)
    if k:  # n - k rows may go (half a row more, so that the grid's floor lands on n - k)
        return min(CLEANSE_MAX_FRACTION, (max(n - k, 0) + 0.5) / n)
    return CLEANSE_MAX_FRACTION


def _check_neighbours(estimator: Any, n: int, n_min: int | None = None) -> None:
    """k-NN asks for more neighbours than a fit has rows: every fit (or prefix) would fail.

    ``n`` is the number of training rows valued; ``n_min``, when given, the rows of
    the smallest prefix TDShap fits on.
    """
    for value in _neighbours(estimator):
        if value > n:
            # the suggestion must itself fit: 5 is not below N when N <= 5
            fix = (f"Choose n_neighbors well below N (e.g. {max(1, min(5, n // 2))}) for "
                   "the model (`params`), or give more training rows." if n >= 2 else
                   "A k-NN needs at least 2 training rows, one judged by the others: use "
                   "more rows.")
            raise ParameterError(
                f"n_neighbors={value} is larger than the N={n} training "
                f"row{'s' if n != 1 else ''} valued: every fit would fail. {fix}",
                "params")
        if n_min is not None and value > n_min:
            raise ParameterError(
                f"n_neighbors={value} is larger than the {n_min} rows (`n_min`) of the smallest "
                f"prefix TDShap fits on: those fits would fail. Raise `n_min` to at least "
                f"{value}, or lower the model's n_neighbors (`params`).", "n_min", "params")


def _check_precomputed(estimator: Any) -> None:
    """Refuse a model told that its rows are distances or kernel values: they are features,
    so a k-NN would be valued by a Euclidean stand-in and never fail where no fit is needed
    (the closed forms), or fail on every fit."""
    for name, other in (("metric", "'manhattan'"), ("kernel", "'rbf'")):
        for key, value in nested_params(estimator, name).items():
            if isinstance(value, str) and value == "precomputed":
                raise ParameterError(
                    f"{key}='precomputed': the model would read each row as its "
                    f"{'distances' if name == 'metric' else 'kernel values'} to the training "
                    f"rows, but the rows are features. Drop `{name}` from `params` (the "
                    f"default works on the features), or choose e.g. {other}.", "params")


#: the most threads or processes a model's own ``n_jobs`` may ask for: joblib starts that
#: many (100,000 failed deep inside it, "'DummyProcess' object has no attribute 'terminate'")
MAX_MODEL_JOBS = 1024


def _check_model_jobs(estimator: Any) -> None:
    """Refuse a model's ``n_jobs`` that asks for more threads than any machine has."""
    for key, value in nested_params(estimator, "n_jobs").items():
        if isinstance(value, int | np.integer) and not isinstance(value, bool) \
                and abs(int(value)) > MAX_MODEL_JOBS:
            raise ParameterError(
                f"{key}={value}: the model would start that many threads or processes; use "
                f"at most {MAX_MODEL_JOBS} (-1: one per core). tdshap's own workers are "
                "`n_jobs` / --jobs.", "params")


def _check_column_names(estimator: Any, encoder: TableEncoder) -> None:
    """Refuse a ColumnTransformer that picks columns by name: the model is given the encoded
    table (:class:`~tdshap.app.tabular.TableEncoder`) as a numeric array without names, so
    every fit would fail with scikit-learn's "only supported for dataframes", which said
    nothing of why (nor that tdshap encodes text columns itself). By position, refuse it
    where the encoding moved the columns (text ones one-hot encoded, after the numbers):
    the positions would pick other columns than the user's, silently."""
    for columns in column_choices(estimator):
        if picks_columns_by_name(columns):
            raise ParameterError(
                f"the model's ColumnTransformer picks columns by name ({columns!r}), but "
                "tdshap encodes the table itself (numeric columns standardised, text "
                "columns one-hot encoded) and gives the model a numeric array without "
                "column names, so every fit would fail. Give the model without the "
                "ColumnTransformer (e.g. the pipeline's last step) and X as it is.",
                "model")
        if list(encoder.feature_names_) != list(encoder.columns_):
            shown = names(encoder.feature_names_, 6)
            raise ParameterError(
                f"the model's ColumnTransformer picks columns by position ({columns!r}), "
                "but tdshap encodes the table itself (numeric columns standardised, text "
                "columns one-hot encoded after them) and gives the model the encoded "
                f"columns, which are not X's ({shown}): the positions would pick other "
                "columns. Give the model without the ColumnTransformer (e.g. the "
                "pipeline's last step) and X as it is.", "model")


def _response_problem(spec: Any, estimator: Any) -> str | None:
    """Why ``estimator`` cannot give what the scorer ``spec`` reads (``predict_proba``,
    ``decision_function``), or None. Checked before the run: every fit of the cut would
    fail only after the valuation, which does not read them."""
    wanted = getattr(spec.scorer, "_response_method", None)
    if wanted is None:
        return None
    methods = (wanted,) if isinstance(wanted, str) else tuple(wanted)
    if any(hasattr(estimator, m) for m in methods):
        return None
    params: dict[str, Any] = getattr(estimator, "get_params", dict)()
    hint = (" (an SVM gives them with probability=True: `params` {\"probability\": true})"
            if "probability" in params else "")
    return (f"needs the model's {' or '.join(methods)}, which {type(estimator).__name__} "
            f"does not have{hint}")


def _unseen_class_problem(spec: Any, data: PreparedData) -> str | None:
    """A probability scorer cannot score validation rows of a class no training row has
    (the model gives it no column), or None; scikit-learn said "y_true contains values
    ... not belonging to the passed labels"."""
    if data.task != "classification" or \
            getattr(spec.scorer, "_response_method", None) != "predict_proba":
        return None
    unseen = np.setdiff1d(np.unique(data.y_val), np.unique(data.y_train))
    if not len(unseen):
        return None
    return (f"scores the probability of each validation row's class, but {len(unseen)} of "
            "their classes are in no training row (e.g. "
            f"{plain_value(unseen[0])!r}), so the model gives them none: give more rows per "
            "class, or a metric of the predicted labels (accuracy)")


def _check_metric(metric: Any, data: PreparedData, estimator: Any = None) -> None:
    """Refuse a metric of the other task, one the model cannot give what it reads, or one
    that cannot score the validation rows."""
    from tdshap.utility.base import scoring_problem
    from tdshap.utility.metrics import metric_task, resolve_metric

    try:
        spec = resolve_metric(metric)
    except ValueError:
        raise ParameterError(f"`metric` {metric!r} is not a known metric: use accuracy, "
                             "neg_mae, neg_mse, r2 or another scikit-learn scorer name "
                             "(sklearn.metrics.get_scorer_names()); from Python also a "
                             "callable f(y_true, y_pred) -> float, higher is better.",
                             "metric") from None
    task = metric_task(spec)
    if task is not None and task != data.task:
        usual = "accuracy" if data.task == "classification" else "neg_mae"
        raise ParameterError(f"`metric` {spec.name!r} is for {task}, but the task is "
                             f"{data.task}: use e.g. {usual}, or leave `metric` out.",
                             "metric", "task")
    problem = _response_problem(spec, estimator) or _unseen_class_problem(spec, data) or \
        scoring_problem(spec, data.y_train, data.X_val, data.y_val,
                        data.task == "classification")
    if problem and spec.name == "roc_auc" and len(np.unique(data.y_train)) > 2:
        problem += " (for more than two classes: roc_auc_ovr or roc_auc_ovo)"
    if problem:
        raise ParameterError(f"`metric` {spec.name!r} {problem}; choose another metric.",
                             "metric", "params")


@dataclass
class CostEstimate:
    """What a run will cost, from a few timed evaluations before it starts."""

    seconds_per_evaluation: float
    evaluations: int  # the valuation's initialisation plus max_iter rounds
    init_evaluations: int
    cleansing_fits: int
    timed: int  # evaluations timed to measure seconds_per_evaluation
    path: str = ""  # which evaluation path the valuation takes, and why
    setup_seconds: float = 0.0  # paid once before the first evaluation (a neighbour search)
    cleansing_seconds: float | None = None  # None: cleansing_fits x seconds_per_evaluation
    refit_seconds: float | None = None  # what refitting every evaluation would cost instead
    setup_what: str = "a neighbour search"  # what the setup seconds pay for
    #: where a resumed run takes up its checkpoint ("" for a fresh run): the evaluations
    #: are then those left, and the line says so
    resumed: str = ""

    @property
    def seconds(self) -> float:
        cleansing = (self.cleansing_fits * self.seconds_per_evaluation
                     if self.cleansing_seconds is None else self.cleansing_seconds)
        return self.setup_seconds + self.evaluations * self.seconds_per_evaluation + cleansing

    def line(self, time_budget: float | None) -> str:
        per = self.seconds_per_evaluation
        budget = f", stopped by the time budget of {time_budget:g} s" if time_budget else ""
        setup = (f"{self.setup_what} ({_duration(self.setup_seconds)}) + "
                 if self.setup_seconds else "")
        cuts = self.cleansing_seconds
        cleansing = (f"{self.cleansing_fits:,} cleansing fits x {per * 1e3:.3g} ms each"
                     if cuts is None else
                     f"{self.cleansing_fits:,} cleansing cuts ({_duration(cuts)})")
        if setup and not self.evaluations:  # a closed form: the search is the valuation
            line = (f"cost estimate: about {setup}{cleansing} = "
                    f"{_duration(self.seconds)}{budget}")
        elif setup or self.cleansing_seconds is not None:
            line = (f"cost estimate: about {setup}{self.evaluations:,} evaluations x "
                    f"{per * 1e3:.3g} ms + {cleansing} (timed on {self.timed} evaluations) = "
                    f"{_duration(self.seconds)}{budget}")
        else:
            line = (f"cost estimate: about {self.evaluations:,} evaluations + {cleansing} "
                    f"(timed on {self.timed} evaluations) = {_duration(self.seconds)}{budget}")
        if self.resumed:
            line = line.replace("cost estimate:",
                                f"cost estimate of what is left ({self.resumed}):", 1)
        if self.path:
            line += f"\npath: {self.path}"
        if self.refit_seconds is not None:
            line += f"; refitting every bag instead: {_duration(self.refit_seconds)}"
        return line


#: Seconds in a (Julian) year.
YEAR_S = 365.25 * 24 * 3600
#: A run estimated longer than this with no time budget is refused: it is a slip
#: (--max-iter 1e23 ran for ever), not a plan; a time budget of any length lifts it.
UNBUDGETED_RUN_S = YEAR_S


def _duration(seconds: float) -> str:
    if seconds < 1:
        return "under 1 s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    if seconds < 2 * YEAR_S:
        return f"{seconds / 86400:.0f} days"
    return f"{seconds / YEAR_S:.3g} years"


@dataclass
class RunPlan:
    """A checked run, not yet started: everything :func:`execute` needs."""

    data: PreparedData
    estimator: Any
    model_name: str
    model_about: str
    params: dict[str, Any]
    metric: str
    options: TDShapOptions
    valuer: Any  # TDShap or ThresholdingOOB, not fitted yet
    method: str
    method_why: str
    valuation_metric: str
    cut: str
    seed: int
    do_cleanse: bool
    given: set[str]
    max_failed_fraction: float
    estimate: CostEstimate
    #: settings the user chose that the method does not use, and why (``method`` "auto")
    ignored: dict[str, str] = field(default_factory=dict)
    #: the cleansing curve's workers (:func:`tdshap.cleansing.cleanse`'s ``n_jobs``)
    n_jobs: int | None = None


def _shared_refits(fits: int, per_fit: float, workers: int) -> tuple[float, str]:
    """Seconds of ``fits`` refits of ``per_fit`` seconds each, shared among ``workers`` as
    :class:`~tdshap.utility.subset_fits.SubsetFitter` shares them (where they pay), and
    " on N workers" where more than one takes them ("" otherwise)."""
    share = worker_count(workers, fits, fits * per_fit)
    return fits * per_fit / share, (f" on {share} workers" if share > 1 else "")


def _estimate(utility: Any, tdshap: TDShap, data: PreparedData, do_cleanse: bool,
              seed: int, done: dict[str, Any] | None = None,
              n_jobs: int | None = None) -> CostEstimate:
    """Time a few evaluations of chains like the run's; fail if every fit fails.

    ``done`` is the :func:`checkpoint_info` of the checkpoint a resumed run continues:
    only what it has left is estimated (the cleansing is never checkpointed). The cut's
    refits are shared among ``n_jobs`` workers where they pay (as
    :class:`~tdshap.utility.subset_fits.SubsetFitter` shares them).
    """
    from tdshap.cleansing import removal_grid
    from tdshap.utility.base import Chain

    n, k, n_min = len(data.y_train), tdshap.k_, tdshap.n_min_
    rng = np.random.default_rng(seed)
    size = n_min + (n - k - n_min) // 2  # the middle of the prefix sizes drawn

    def timed_chain(length: int) -> float:
        order = rng.permutation(n)
        chain = Chain(order[:size], order[size : size + length], int(rng.integers(2**32)))
        start = time.perf_counter()
        utility.evaluate_chains([chain])
        return (time.perf_counter() - start) / (length + 1)

    # a short chain first (two fits); then, when affordable, a whole chain of k + 1, which
    # is what the run evaluates (an incremental fast path is cheap only along a chain)
    per, timed = timed_chain(1), 2
    if k > 1 and per * (k + 1) < 1.0 and utility.n_failed_fits < utility.n_fits:
        per, timed = timed_chain(k), timed + k + 1
    if utility.n_fits and utility.n_failed_fits == utility.n_fits:
        # a tree on a held-out 1e39 (float32's range passed): "fix the model or its
        # parameters" named the wrong culprit, where the run's own check names the data
        fix = float32_fix(utility.first_error, data.X_train, data.X_val) or \
            utility.too_few_rows()
        raise TooManyFailures(
            f"the model failed on every one of {utility.n_fits} trial fits before the run "
            f"({utility.first_error}): {fix or 'fix the model or its parameters'}.")
    blocks, max_iter = -(-n // k), tdshap.max_iter
    blocks_done, rounds_done, resumed = 0, 0, ""
    if done is not None:  # check_resume has checked these counts against N, k and max_iter
        blocks_done, rounds_done = int(done["init_done"] or 0), int(done["rounds"] or 0)
        of = "no limit on rounds" if max_iter is None else f"of {max_iter:,}"
        resumed = (f"resuming from round {rounds_done:,} {of}" if blocks_done >= blocks else
                   f"resuming in the first pass, {blocks_done:,} of {blocks:,} blocks done")
    init = max(blocks - blocks_done, 0) * (k + 1)
    rounds = 0 if max_iter is None else \
        max(max_iter - rounds_done, 0) * tdshap.n_blocks * (k + 1)
    grid = len(removal_grid(n, None, cleanse_fraction(tdshap.estimator, n))) if do_cleanse else 0
    cuts_s, on = _shared_refits(grid, per, effective_n_jobs(n_jobs))
    return CostEstimate(per, init + rounds, init, grid, timed, resumed=resumed,
                        path=utility.path_note + (f"; the cut's refits{on}" if on else ""),
                        cleansing_seconds=cuts_s if on else None)


#: rows predicted (and searched) when timing a bag before the run; the per-row cost is
#: extrapolated to N, so a few hundred rows time it while costing little on small data
ESTIMATE_SAMPLE = 256
#: rows an approximate search is timed on before the run (its graph's cost is scaled to
#: N by N log N)
APPROXIMATE_SAMPLE = 4096
#: an exact search estimated longer than this suggests the approximate one
SUGGEST_APPROXIMATE_S = 60.0
#: share of rows a bootstrap bag leaves out (1/e)
OUT_OF_BAG = 0.368


def _name(estimator: Any) -> str:
    return type(estimator).__name__


def _closed_shapley_seconds(knn: Any, X: np.ndarray, y: np.ndarray,
                            sample: np.ndarray, n_queries: int) -> float:
    """Exact k-NN Shapley (``knn``'s k and task): one sort of the N rows per query, timed
    on a few of ``sample``'s queries and scaled by the ``n_queries``."""
    from tdshap.methods.knn_oob import knn_step
    from tdshap.methods.knn_shapley import KNNShapley, knn_shapley_task

    few = sample[:min(len(sample), 64)]
    task = knn_shapley_task(knn)
    target = y if task == "classification" else np.asarray(y, dtype=float)
    t0 = time.perf_counter()
    KNNShapley._chunk(X, target, X[few], target[few], int(knn_step(knn).n_neighbors), task,
                      few)
    return (time.perf_counter() - t0) / len(few) * n_queries


def _estimate_bags(valuer: Any, estimator: Any, data: PreparedData, do_cleanse: bool,
                   seed: int, n_jobs: int | None = None) -> CostEstimate:
    """Time thresholding Data-OOB's bags on a sample of rows and extrapolate to N.

    A bag's cost is a fit on N rows and a prediction of its out-of-bag rows. With the
    k-NN neighbour lists (:mod:`tdshap.utility.fast.neighbor_lists`) it is a search
    paid once (timed on a sample of queries, scaled by N / sample) and then a few array
    operations per bag; the estimate says which path the run takes, why, and what
    refitting every bag would cost instead.
    """
    from sklearn.base import clone

    from tdshap.cleansing import removal_grid
    from tdshap.methods.knn_oob import knn_step
    from tdshap.methods.knn_shapley import knn_shapley_problem, knn_shapley_task
    from tdshap.utility.base import describe_error
    from tdshap.utility.fast.approximate_search import INSTALL_HINT
    from tdshap.utility.fast.base import one_thread_if_small
    from tdshap.utility.fast.neighbor_lists import NeighborLists, oob_path_problem

    X, y = data.X_train, data.y_train
    n = len(y)
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(n, size=min(n, ESTIMATE_SAMPLE), replace=False))
    # a closed form (the bags' average, or exact k-NN Shapley): no bag
    closed = valuer.algorithm in ("knn_oob", "knn_shapley")
    shapley = valuer.algorithm == "knn_shapley"
    k = 1 if closed else valuer.k_
    init = 0 if closed else -(-n // k)
    bags = 0 if closed else init + (valuer.max_iter or 0)
    out_rows = min(n, int(OUT_OF_BAG * n) + k)
    held = len(data.y_val) + (0 if data.y_test is None else len(data.y_test))
    # the closed forms' queries: the training rows, and for "both" the validation rows too
    queries = n + (len(data.y_val) if getattr(valuer, "queries", None) == "both" else 0)
    # who sorts the training rows, and the cut's extra fits (one per validation fold)
    sorters = (f"every one of the {n:,} rows sorts the others" if queries == n else
               f"every one of the {n:,} rows and {len(data.y_val):,} validation rows sorts "
               "the training rows")
    folds = "; the cut's test adds one model per validation fold" if queries > n else ""
    grid = len(removal_grid(n, None, cleanse_fraction(estimator, n))) if do_cleanse else 0
    # the cross-fitted test's models (tdshap.cross_fit), one per fold
    fold_fits = min(int(getattr(valuer, "n_folds", 0)), len(data.y_val)) \
        if queries > n and grid else 0
    errors: list[str] = []
    fit_s = predict_s = 0.0
    # the closed form with no cut fits no model: nothing to time
    for _ in range(2 if grid or not shapley else 0):
        bag = rng.choice(n, size=n, replace=True)
        try:
            t0 = time.perf_counter()
            model = clone(estimator)
            model.fit(X[bag], y[bag])  # not fit's return: None from one without "return self"
            t1 = time.perf_counter()
            if not predict_s:  # one timed prediction is enough; both fits check the model
                with one_thread_if_small(len(sample) * X.size):
                    one_per_row(model.predict(X[sample]), len(sample))
                predict_s = (time.perf_counter() - t1) / len(sample)
            fit_s = t1 - t0
        except Exception as err:
            errors.append(describe_error(err))
    if len(errors) == 2:
        fix = too_few_rows(estimator, X, y, lambda model: model.predict(X[sample]))
        raise TooManyFailures(f"the model failed on every one of 2 trial fits before the run "
                              f"({errors[0]}): {fix or 'fix the model or its parameters'}.")
    refit_bag = fit_s + predict_s * out_rows
    per_cut = fit_s + predict_s * held
    workers = effective_n_jobs(n_jobs)
    refit_cleansing, on = _shared_refits(grid, per_cut, workers)
    workers_note = f" ({on.strip()})" if on else ""
    if shapley and knn_shapley_problem(estimator) is not None:
        # a k-NN proxy values the rows of another model: the closed form, then a refit of
        # the user's model per cut; where the paper's larger cut is checked
        # (tdshap.cleansing), each validation fold's own curve refits its cuts too
        folds_s, folds_on = _shared_refits(fold_fits * grid, per_cut, workers)
        check = (f"; checking the paper's larger cut, where it is, refits each of the "
                 f"{fold_fits} folds' own cuts too (up to {fold_fits * grid:,} fits, "
                 f"{_duration(folds_s)} more{folds_on})" if fold_fits else "")
        return CostEstimate(
            0.0, 0, 0, grid, 2, setup_seconds=_closed_shapley_seconds(valuer.estimator, X, y,
                                                                      sample, queries),
            cleansing_seconds=refit_cleansing + _shared_refits(fold_fits, per_cut, workers)[0],
            setup_what="the closed form",
            path=(f"exact {knn_step(valuer.estimator).n_neighbors}-NN Shapley of the "
                  f"standardised rows in closed form, a proxy that fits no {_name(estimator)} "
                  f"({sorters}: cost grows with N squared log N)"
                  + (f"; cleansing refits the {_name(estimator)} per cut{workers_note}"
                     + folds + check if grid else "")))
    # a k-NN classifier's cut checks the paper's larger cut fold by fold too
    # (tdshap.cleansing.check_level): its folds' curves cost no refit
    knn_check = ("; where the paper's cut removes more, each fold's own cuts are checked "
                 "too, from the same neighbour lists" if queries > n and is_classifier(estimator)
                 else "")
    closed_path = (f"exact k-NN Shapley in closed form: {sorters} (cost grows with N "
                   "squared log N), no model fitted" + (folds + knn_check if grid else ""))
    if shapley and not grid:
        # no cut to estimate: the neighbour search below would time only the cleansing
        return CostEstimate(
            0.0, 0, 0, 0, 2, path=closed_path, setup_what="the closed form",
            setup_seconds=_closed_shapley_seconds(estimator, X, y, sample, queries))
    search = getattr(valuer, "neighbor_search", "exact")
    problem = None if closed else oob_path_problem(estimator, n, valuer.fast_path,
                                                    X.shape[1], search)
    if problem is not None:
        return CostEstimate(refit_bag, bags, init, grid, 2,
                            path=f"refit every bag: {problem}" + (
                                f"; the cut's refits{workers_note}" if workers_note else ""),
                            cleansing_seconds=refit_cleansing)
    # the closed form takes a Pipeline ending in a k-NN (its steps transform X first):
    # timed on its k-NN and the raw rows
    searched = knn_step(estimator) if closed else estimator
    # the exact search, timed on a sample of queries: the valuation's (unless it is
    # approximate) and always the cleansing cuts' (their scores are the user's model's)
    t0 = time.perf_counter()
    lists = NeighborLists(searched, X, y, queries=X[sample])
    exact_per_row = (time.perf_counter() - t0) / len(sample)
    search_s = exact_per_row * n
    scored, truth, drawn = np.arange(len(sample)), y[sample], n
    approximate = search == "approximate"
    if shapley:
        search_s = _closed_shapley_seconds(estimator, X, y, sample, queries)
    elif approximate:
        # a graph over a sample of rows, scaled by N log N (the graph's cost): the
        # queries' lists index the sample, so the bag below is drawn over it
        part = np.sort(rng.choice(n, size=min(n, APPROXIMATE_SAMPLE), replace=False))
        m = len(part)
        t0 = time.perf_counter()
        lists = NeighborLists(searched, X[part], y[part], search="approximate")
        growth = n * np.log(max(n, 2)) / (m * np.log(max(m, 2)))
        search_s = (time.perf_counter() - t0) * growth
        scored, truth, drawn = np.arange(min(m, len(sample))), y[part], m
    counts = np.bincount(rng.choice(drawn, size=drawn, replace=True), minlength=drawn)
    t0 = time.perf_counter()
    closed_metric = ("neg_mse" if shapley and knn_shapley_task(estimator) == "regression"
                     else "true_class_proba")
    lists.row_scores(counts, scored, truth[scored],
                     closed_metric if closed else valuer.row_metric())
    per_row = (time.perf_counter() - t0) / len(scored)
    cleansing = grid * per_row * held + exact_per_row * held
    then = ("the out-of-bag values in closed form, no bag" if closed
            else "no refit per bag")
    how = ("approximate: a graph index, cost grows about N log N" if approximate
           else "brute force, cost grows with N squared")
    hint = ""
    if not approximate and search_s > SUGGEST_APPROXIMATE_S:
        hint = f" (`neighbor_search` 'approximate' grows about N log N; {INSTALL_HINT})"
    path = (f"k-NN neighbour lists, searched once for the {n:,} rows ({how}){hint}, "
            f"then {then}")
    if shapley:
        path = closed_path
    return CostEstimate(
        per_row * out_rows, bags, init, grid, 2,
        path=path,
        setup_seconds=search_s, cleansing_seconds=cleansing,
        refit_seconds=None if closed else bags * refit_bag + refit_cleansing,
        setup_what="the closed form" if shapley else "a neighbour search")


_CLOSED_FORMS = ("knn_oob", "knn_shapley", "knn_shapley_train", "knn_shapley_proxy")


def unused_settings(method: str) -> dict[str, str]:
    """The settings ``method`` does not use, each with why."""
    if method in _CLOSED_FORMS:
        why = ("the out-of-bag values are in closed form" if method == "knn_oob" else
               "the Shapley values are exact")
        return {**dict.fromkeys(("eps", "k", "n_min", "max_iter"), why),
                "checkpoint_every": "only TDShap runs are checkpointed"}
    if method == "tdoob":
        return {"n_min": "thresholding Data-OOB values rows on bags, not on prefixes",
                "checkpoint_every": "only TDShap runs are checkpointed"}
    return {}


def _ignored(method: str, explicit: bool, options: TDShapOptions,
             given: set[str]) -> dict[str, str]:
    """The settings the user chose that ``method`` would drop without a word: refused
    when the user named the method too (``explicit``: the two contradict each other),
    else returned to be noted. ``given`` misses the library's eps, k and n_min ("auto"
    is their default)."""
    chosen = {name for name in ("eps", "k", "n_min") if getattr(options, name) != "auto"}
    chosen |= given & {"max_iter", "checkpoint_every"}
    ignored = {name: why for name, why in unused_settings(method).items() if name in chosen}
    if ignored and explicit:
        names = " and ".join(f"`{name}`" for name in ignored)
        raise ParameterError(
            f"{names} {'is' if len(ignored) == 1 else 'are'} not used by `method` {method!r} "
            f"({next(iter(ignored.values()))}): leave {names} out, or choose `method` "
            "'tdshap'.", *ignored, "method")
    return ignored


def plan(
    data: PreparedData,
    model: Any = None,
    *,
    params: dict[str, Any] | None = None,
    metric: str | None = None,
    options: TDShapOptions | None = None,
    seed: int = 0,
    do_cleanse: bool = True,
    progress: bool = False,
    given: set[str] | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    checkpoint_every: float = 10.0,
    resume: bool = False,
    allow_import: tuple[str, ...] = (),
    max_failed_fraction: float = DEFAULT_MAX_FAILED_FRACTION,
    method: str = "auto",
    cut: str = "one_se",
    neighbor_search: str = "exact",
    origin: dict[str, Any] | None = None,
    n_jobs: int | None = None,
) -> RunPlan:
    """Check everything a run needs, time a few fits, and start nothing.

    Every setting is checked here (the model, its task, its parameters, the
    TDShap settings against N, the time budget against the estimated cost
    of the first pass), so that a caller can refuse bad input before it
    creates any output. See :func:`run` for the parameters. ``origin`` is what the
    caller records in the checkpoint about where the data came from (see
    :func:`_other_data`).
    """
    from tdshap.utility.fast import make_utility

    check_number(max_failed_fraction, "max_failed_fraction", low=0)
    if max_failed_fraction > 1:
        raise ParameterError(f"max_failed_fraction={max_failed_fraction} must be in [0, 1].",
                             "max_failed_fraction")
    given = set(given or ())
    for package in allow_import:  # models.import_class trusts a top-level package by name
        if not (isinstance(package, str) and package.isidentifier()):
            raise ParameterError(f"`allow_import` {package!r} is not a package's name: give "
                                 "the top-level package whose models you trust (e.g. "
                                 "mypackage for mypackage.models:MyModel).", "allow_import")
    o = options or TDShapOptions()
    n = len(data.y_train)
    if model is None or isinstance(model, str):
        model_name = DEFAULT_MODEL if model is None else model
        estimator = build_model(model_name, data.task, params, n, allow_import)
        model_about = describe(model_name)
    else:
        estimator, model_name, model_about = model, type(model).__name__, "given estimator"
    check_estimator_task(estimator, data.task, model_name)
    _check_neighbours(estimator, n)
    _check_precomputed(estimator)
    _check_model_jobs(estimator)
    _check_column_names(estimator, data.encoder)
    if metric is None:
        metric = "accuracy" if data.task == "classification" else "neg_mae"
    _check_metric(metric, data, estimator)
    check_rule(cut, "cut")  # find_harmful's name for it (its error said rule='one-se')
    try:
        check_n_jobs(n_jobs, optional=True)
    except ValueError as err:
        raise ParameterError(str(err).replace("n_jobs=", "`n_jobs` "), "n_jobs") from None
    try:
        check_search(neighbor_search)
    except ValueError as err:
        raise ParameterError(str(err).replace("neighbor_search=", "`neighbor_search` "),
                             "neighbor_search") from None
    o.check()
    valuer = make_valuer(estimator, metric, given, method, o, seed, progress,
                         {"checkpoint": checkpoint, "checkpoint_every": checkpoint_every,
                          "resume": True if resume else None}, neighbor_search, n,
                         (data.X_train, data.y_train, data.X_val, data.y_val))
    ignored = _ignored(valuer.method, method != "auto", o, given)
    done: dict[str, Any] | None = None  # what a resumed checkpoint has done
    if valuer.method != "tdshap":
        if resume:
            # it said "(a thresholding Data-OOB run is short)" whatever the method: auto's
            # k-NN Shapley for a k-NN too
            chosen = ", chosen by auto" if method == "auto" else ""
            raise ParameterError(f"`resume`: only TDShap runs are checkpointed, and this run "
                                 f"values the rows by {METHOD_LABELS[valuer.method]} "
                                 f"(`method` {valuer.method!r}{chosen}), which saves none; "
                                 "rerun without `resume`, or choose `method` 'tdshap'.",
                                 "resume", "method")
        bagging = valuer.estimator
        if valuer.method == "tdoob":
            bagging._check_params(n)
        estimate = _estimate_bags(bagging, estimator, data, do_cleanse, seed, n_jobs)
    else:
        tdshap = valuer.estimator
        k_used, n_min_used = tdshap.block_sizes(n)
        try:
            check_block_size(n, k_used, n_min_used)
        except ValueError:
            raise ParameterError(
                f"the training part has N={n} rows, too few for `n_min` {n_min_used} and "
                f"`k` {k_used} (needs N >= `n_min` + `k` = {n_min_used + k_used}): lower "
                "`n_min` or `k`, or use more rows.", "n_min", "k"
            ) from None
        tdshap._check_params(n)
        _check_neighbours(estimator, n, n_min_used)
        utility = make_utility(estimator, valuer.metric, data.X_train, data.y_train,
                               data.X_val, data.y_val, run_seed=seed)
        tdshap.checkpoint_origin = origin
        if resume:  # a checkpoint it cannot continue is refused before the plan is shown
            try:
                tdshap.check_resume(utility)
            except CheckpointDataError as err:
                raise _other_data(err, Path(tdshap.checkpoint), origin) from None
        done = checkpoint_info(tdshap.checkpoint) if resume else None
        estimate = _estimate(utility, tdshap, data, do_cleanse, seed, done, n_jobs)
    init_seconds = estimate.init_evaluations * estimate.seconds_per_evaluation
    if (o.time_budget is not None and not estimate.evaluations
            and estimate.setup_seconds > o.time_budget):
        raise ParameterError(
            f"the valuation ({valuer.method}, a closed form that cannot stop part-way) needs "
            f"about {estimate.setup_seconds:.2g} s, more than `time_budget` of "
            f"{o.time_budget:g} s: raise the budget, or choose `method` 'tdoob' (a bandit "
            "that stops at the budget).", "time_budget", "method")
    if o.time_budget is None and estimate.evaluations and estimate.seconds > UNBUDGETED_RUN_S:
        raise ParameterError(
            f"the run would take about {_duration(estimate.seconds)} "
            f"({estimate.evaluations:,} evaluations x "
            f"{estimate.seconds_per_evaluation * 1e3:.3g} ms): lower `max_iter`, or give "
            "`time_budget` in seconds to stop it when the time is up (a run estimated "
            "beyond a year needs one).", "max_iter", "time_budget")
    # the budget counts the seconds before the checkpoint too, and the first pass cannot
    # stop part-way: a resumed run in its first pass is checked on what is left of both
    spent = float(done.get("elapsed") or 0.0) if done else 0.0
    if o.time_budget is not None and init_seconds > max(o.time_budget - spent, 0.0):
        what = (f"the first pass over the N={n} rows ({estimate.init_evaluations:,} "
                "evaluations, every row valued once)" if not done else
                f"what is left of the first pass ({estimate.init_evaluations:,} evaluations: "
                f"{estimate.resumed})")
        left = (f"`time_budget` of {o.time_budget:g} s" if not done else
                f"the {max(o.time_budget - spent, 0.0):.3g} s left of `time_budget` "
                f"{o.time_budget:g} s ({spent:.3g} s were spent before the checkpoint)")
        raise ParameterError(
            f"{what} needs {_duration(init_seconds)}, more than {left}: "
            "raise the budget, value fewer rows, or choose a faster model.", "time_budget")
    return RunPlan(data, estimator, model_name, model_about, dict(params or {}), metric, o,
                   valuer.estimator, valuer.method, valuer.why, valuer.metric, cut, seed,
                   do_cleanse, given, max_failed_fraction, estimate, ignored, n_jobs)


def _other_data(err: CheckpointDataError, path: Path,
                origin: dict[str, Any] | None) -> CheckpointDataError:
    """``err`` (the arrays differ) told in the caller's terms where both runs recorded an
    ``origin``: ``{"files": fingerprint of the input files, "options": how they were read
    and split}``. The same files split by another seed give other arrays, and "different
    data" sent the user looking for a changed file."""
    try:
        saved = checkpoint_info(path).get("origin")
    except CheckpointError:  # read a moment ago; a file replaced since is told as it was
        return err
    if not isinstance(saved, dict) or not isinstance(origin, dict):
        return err  # a checkpoint from before origins were recorded: the arrays alone
    which = f"`resume`: checkpoint {str(path)!r}"
    if saved.get("files") != origin.get("files"):
        return CheckpointDataError(
            f"{which} was made from other data (the training, validation or test file "
            "differs): resume with the files it was made from, or start a new run without "
            "`resume`.", "resume")
    was, now = saved.get("options"), origin.get("options")
    if not isinstance(was, dict) or not isinstance(now, dict):
        return err
    # this run's names only: the file's record is shown, never trusted for what to name
    differ = sorted(k for k in now if was.get(k) != now.get(k))
    if not differ:  # same files, same options: the arrays alone tell
        return err
    how = "split" if set(differ) <= SPLIT_OPTIONS else "read or split"
    detail = "; ".join(f"`{k}`: checkpoint {reprlib.repr(was.get(k))}, now {now.get(k)!r}"
                       for k in differ)
    names = " and ".join(f"`{k}`" for k in differ)
    return CheckpointDataError(
        f"{which} was made from the same files {how} differently ({detail}), so its rows "
        f"are not this run's: put back the checkpoint's {names}, or start a new run without "
        "`resume`.", "resume", *differ)


#: the options of ``origin`` that decide which rows are held out
SPLIT_OPTIONS = frozenset({"seed", "val_fraction", "test_fraction"})


def _check_failures(stage: str, failed: int, fits: int, first: str | None,
                    p: RunPlan) -> None:
    from tdshap.utility.metrics import resolve_metric

    limit = p.max_failed_fraction
    if fits and failed / fits > limit:
        # the data, where the model fits all the rows: tiny data's subsets of one class
        data = p.data
        spec = resolve_metric(p.metric)
        fix = too_few_rows(p.estimator, data.X_train, data.y_train,
                           lambda model: spec.score(model, data.X_val, data.y_val),
                           every_fit_failed=False)
        raise TooManyFailures(
            f"the model failed on {failed:,} of {fits:,} fits during {stage} "
            f"({failed / fits:.1%}, more than `max_failed_fraction` {limit:.0%}); the first "
            f"error was {first or 'not recorded'}: " + (
                f"{fix} (or raise `max_failed_fraction`: the fallback scores those fits)."
                if fix else "fix the model or its parameters."))


def execute(p: RunPlan) -> HarmfulRun:
    """Run a :func:`plan`: value the training rows, check the failed fits, cleanse."""
    start = time.perf_counter()
    data, valuer, o = p.data, p.valuer, p.options
    if getattr(valuer, "checkpoint", None) is not None:
        Path(valuer.checkpoint).parent.mkdir(parents=True, exist_ok=True)
    # prepare warned of these given rows already (the valuation and the cut would again);
    # failed fits are checked below (TooManyFailures) and the report names them and the
    # first error: the valuation's and the cut's warnings of them would say it twice more
    with said_already(*REPEATED_WARNINGS):
        valuer.fit(data.X_train, data.y_train, data.X_val, data.y_val)
        result = valuer.result_
        extra = result.extra
        _check_failures("valuation", int(extra.get("n_failed_fits", 0)), result.n_fits,
                        extra.get("first_error"), p)
        cleansing = None
        if p.do_cleanse:
            cleansing = cleanse(result, p.estimator, data.X_train, data.y_train, data.X_val,
                                data.y_val, data.X_test, data.y_test, metric=p.metric,
                                random_state=p.seed, rule=p.cut,
                                n_bootstrap=DEFAULT_N_BOOTSTRAP,
                                max_fraction=cleanse_fraction(p.estimator, len(data.y_train)),
                                n_jobs=p.n_jobs)
            c = cleansing.extra
            _check_failures("cleansing", c["n_failed_fits"], c["n_fits"], c["first_error"], p)
    given = p.given
    settings = {
        "task": Setting(data.task, data.task_given, data.task_reason),
        "model": Setting(p.model_name, "model" in given, p.model_about if "model" in given else
                         f"default: {p.model_about}"),
        "params": Setting(p.params, bool(p.params), ""),
        "estimator": Setting(" ".join(repr(p.estimator).split()), "model" in given,
                             "what is fitted, defaults resolved"),
        "metric": Setting(p.metric, "metric" in given,
                          "given" if "metric" in given else f"default for {data.task}"),
        "method": Setting(p.method, "method" in given, p.method_why),
        "valuation_metric": Setting(p.valuation_metric, "metric" in given,
                                    "the rows are valued with it; cleansing and scores use "
                                    "the metric above"),
        **_method_settings(p.method, valuer, o, given, p.ignored),
        "neighbor_search": Setting(getattr(valuer, "neighbor_search", None),
                                   "neighbor_search" in given,
                                   "k-NN neighbour lists: exact (brute force) or approximate "
                                   "(a graph index)"),
        "time_budget": Setting(o.time_budget, o.time_budget is not None, "seconds, then stop"),
        "max_failed_fraction": Setting(p.max_failed_fraction, "max_failed_fraction" in given,
                                       "share of a stage's fits that may fail"),
        "seed": Setting(p.seed, "seed" in given, ""),
    }
    if p.do_cleanse:
        settings["cut"] = Setting(p.cut, "cut" in given, "given" if "cut" in given else
                                  "default: remove rows only when the validation gain beats "
                                  "two bootstrap SEs, and only rows credibly below tau")
    return HarmfulRun(data, p.model_name, p.estimator, p.metric, settings, result, cleansing,
                      time.perf_counter() - start, extra={"estimate": p.estimate})


def _unused(name: str, why: str, ignored: dict[str, str]) -> Setting:
    return Setting(None, name in ignored, f"{'given but ' if name in ignored else ''}"
                   f"not used: {why}", used=False)


def _method_settings(method: str, valuer: Any, o: TDShapOptions, given: set[str],
                     ignored: dict[str, str]) -> dict[str, Setting]:
    """tau, eps, k, n_min and max_iter as the chosen method used them, and why."""
    unused = unused_settings(method)
    if method in _CLOSED_FORMS:
        auto = ("auto: chance (1 / classes)" if method == "knn_oob" else
                "auto: 0, a row whose removal helps the other rows' predictions")
        return {
            "tau": Setting(valuer.result_.threshold, o.tau != "auto", _auto_note(o.tau, auto)),
            **{name: _unused(name, unused[name], ignored)
               for name in ("eps", "k", "n_min", "max_iter")},
        }
    if method == "tdoob":
        return {
            "tau": Setting(valuer.tau_, o.tau != "auto", _auto_note(
                o.tau, "auto: chance (1 / classes) for classifiers; for regression 2 robust "
                "sd below the median out-of-bag score")),
            "eps": Setting(valuer.eps_, o.eps != "auto", _auto_note(
                o.eps, "auto: 0.3 x the robust spread of the first out-of-bag scores")),
            "k": Setting(valuer.k_, o.k != "auto", _auto_note(
                o.k, "auto: min(50, N // 10), N // 20 from 1,000 rows: held out of every "
                "bag")),
            "n_min": _unused("n_min", unused["n_min"], ignored),
            "max_iter": Setting(valuer.max_iter, "max_iter" in given, "given"
                                if "max_iter" in given else "default: bags after the first "
                                "pass"),
        }
    return {
        "tau": Setting(valuer.tau_, o.tau != "auto", _auto_note(
            o.tau, "auto: -eps, so a row is harmful only when its value is below 0 by eps")),
        "eps": Setting(valuer.eps_, o.eps != "auto", _auto_note(
            o.eps, f"auto: {DEFAULT_EPS_FACTOR:g} x the robust spread (1.4826 MAD) of the "
            "first marginals")),
        "k": Setting(valuer.k_, o.k != "auto", _auto_note(
            o.k, "auto: min(50, N // 3) rows valued per chain of k + 1 fits")),
        "n_min": Setting(valuer.n_min_, o.n_min != "auto", _auto_note(
            o.n_min, "auto: min(100, N // 3), the smallest prefix a marginal is measured on")),
        "max_iter": Setting(o.max_iter, "max_iter" in given,
                            "given" if "max_iter" in given else "default: the paper's 50 rounds"),
    }


def run(data: PreparedData, model: Any = None, **kwargs: Any) -> HarmfulRun:
    """Value ``data``'s training rows (``method``, :mod:`tdshap.app.valuer`) and cleanse.

    ``model`` is a registry name, an import path or an estimator (``None``:
    the registry's default); ``params`` its parameters (JSON values);
    ``given`` names the settings the user chose (the report marks the others
    as defaults). ``checkpoint`` is a file the valuation saves its state to
    every ``checkpoint_every`` seconds; ``resume=True`` continues the run
    saved there (see :class:`tdshap.TDShap`). ``allow_import`` adds packages
    an import path may name. A stage whose share of failed fits exceeds
    ``max_failed_fraction`` stops the run with :class:`TooManyFailures`.
    ``method`` picks the valuation (``"auto"``, ``"tdshap"``, ``"tdoob"``) and
    ``cut`` the cleansing rule (``"one_se"``: only on evidence beyond the
    validation noise; ``"paper"``: the best validation score).
    """
    return execute(plan(data, model, **kwargs))
