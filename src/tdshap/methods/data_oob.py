"""Data-OOB: a row's value is how well the models that never saw it predict it.

Kwon & Zou, "Data-OOB: Out-of-bag estimate as a simple and efficient data
value", ICML 2023. Fit the estimator on ``n_estimators`` bootstrap samples
(bags) of the training rows; a row's value is the mean, over the bags it is
out of, of the bag model's correctness on it: ``1[prediction == y_i]`` for
classification, ``-(prediction - y_i)²`` for regression. A mislabelled row
is predicted "wrong" by models that did not see it, so its value is low.

No validation set is used: the value measures agreement with the rest of
the training data, not the validation score. Each bag's rows and its
estimator seed come from one integer drawn from ``random_state`` in the
main process, so the values do not depend on ``n_jobs``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone

from tdshap._validation import (
    check_bag_rows,
    check_columns_by_position,
    check_estimator,
    check_number,
    float32_fix,
)
from tdshap.methods.direct import DirectValuation
from tdshap.utility.base import (
    check_some_fit_worked,
    describe_error,
    fallback_model,
    full_fit_error,
    random_state_params,
    warn_rows_break_the_model,
)
from tdshap.utility.fast.approximate_search import check_search
from tdshap.utility.fast.base import one_thread_if_small
from tdshap.utility.fast.budget import check_count
from tdshap.utility.fast.neighbor_lists import NeighborLists, oob_lists
from tdshap.utility.metrics import row_scores
from tdshap.utility.parallel import check_n_jobs
from tdshap.utility.warm_start import prepare_estimator

_METRICS = {"classification": ("accuracy",), "regression": ("neg_mse", "neg_mean_squared_error")}
#: tau="auto" for regression flags rows whose out-of-bag error exceeds this many robust sigmas
AUTO_SIGMAS = 2.5


def _bag_scores(estimator: Any, X: np.ndarray, y: np.ndarray, seed: int, classifier: bool,
                on_error: str, lists: NeighborLists | None = None
                ) -> tuple[np.ndarray, np.ndarray, bool, int, str | None]:
    """One bag: ``(out-of-bag rows, their correctness, whether the model fell back, rows
    refitted, the error of a fit that failed)``; with ``lists``, the rows are predicted
    from the k-NN neighbour lists and only those they decline are refitted."""
    rng = np.random.default_rng(seed)
    n = len(y)
    bag = rng.integers(0, n, n)
    counts = np.bincount(bag, minlength=n)
    oob = np.flatnonzero(counts == 0)
    if len(oob) == 0:
        return oob, np.empty(0), False, 0, None
    fallback = classifier and len(np.unique(y[bag])) < 2
    error = None
    metric = "accuracy" if classifier else "neg_mse"
    if not fallback:
        model = clone(estimator)
        params = random_state_params(model)
        if params:
            model.set_params(**dict.fromkeys(params, int(rng.integers(2**31))))
        try:
            # the model itself, not what fit returns (None from a fit without
            # "return self": "'NoneType' object has no attribute 'predict'")
            if lists is None:
                model.fit(X[bag], y[bag])
                return oob, row_scores(model, X[oob], y[oob], metric), False, len(oob), None
            scores, declined = lists.row_scores(counts, oob, y[oob], metric)
            rows = oob[declined]
            if len(rows):
                with one_thread_if_small(len(rows) * X.size):
                    model.fit(X[bag], y[bag])
                    scores[declined] = row_scores(model, X[rows], y[rows], metric)
            return oob, scores, False, len(rows), None
        except Exception as err:
            if on_error == "raise":
                raise
            error = describe_error(err)
    # one class in the bag, or a failed fit: predict the bag's constant
    constant = fallback_model(y[bag], np.unique(y) if classifier else None)
    return oob, row_scores(constant, X[oob], y[oob], metric), True, 0, error


class DataOOB(DirectValuation):
    """Data-OOB values: mean out-of-bag correctness over bootstrap bags.

    Parameters
    ----------
    estimator:
        Any scikit-learn style estimator (cloned for every bag). A
        ``TorchClassifier(valuation_head=...)`` is trained once on all rows and
        only its head is fitted per bag, on the network's representation
        (:mod:`tdshap.torch.head`).
    metric:
        ``None``: correctness is fixed (``1[pred == y]`` for classification,
        ``-(pred - y)²`` for regression); ``"accuracy"`` / ``"neg_mse"``
        are accepted for those, other metrics raise.
    n_estimators:
        Bootstrap bags B (Kwon & Zou use 1000 trees; 200 is plenty for
        ranking). A row is out of a bag with probability about 1/e.
    task:
        ``"classification"`` or ``"regression"``; ``None``: the estimator's kind.
    tau:
        ``is_harmful`` is ``value <= tau``. ``"auto"``: 0.5 for classification
        (most models that never saw the row disagree with its label); for
        regression ``-(2.5 σ)²`` with ``σ = 1.4826 median(sqrt(-value))``, the
        robust spread of the out-of-bag errors, so a row is flagged when
        its root-mean-square out-of-bag error exceeds 2.5 sigmas (about 1%
        of rows with Gaussian errors; this σ runs high, because bag models
        are noisier than one model and noisy rows spoil their neighbours'
        predictions, so the cut is conservative: on the detection
        benchmark's regression sets 3 sigmas found a quarter of the planted
        rows, 2.5 about half, both with precision 1).
    on_error:
        ``"fallback"`` (default): a bag whose fit fails, or a classification
        bag with a single class, predicts its most frequent label (mean
        target); ``"raise"``: the error propagates.
    n_jobs:
        Bags fitted in parallel by joblib (same values whatever ``n_jobs``).
    random_state:
        Seed (int) or ``numpy.random.Generator``; same seed, same values.
    fast_path:
        For a k-NN (Euclidean, uniform weights), predict the out-of-bag rows
        from neighbour lists searched once
        (:mod:`tdshap.utility.fast.neighbor_lists`; the bags then run in this
        process) instead of refitting every bag: the same values (bit for
        bit for classification). ``extra["fast_path"]`` / ``extra["path_note"]``
        say which path ran and why. ``False``: always refit.
    neighbor_search:
        ``"exact"`` or ``"approximate"`` (a graph index, for 100,000 rows and
        more): see :class:`~tdshap.methods.tdoob.ThresholdingOOB`.

    Attributes
    ----------
    values_, counts_, harmful_, result_:
        Values, bags each row was out of, ``values_ <= tau_``, and the
        :class:`~tdshap.result.ValuationResult` (its variances are those of a
        row's out-of-bag scores, so ``stderr`` is a Monte Carlo error). A row
        that was in every bag (probability about ``e^-B``) has value NaN.

    Notes
    -----
    ``fit(X, y, X_val=None, y_val=None)`` accepts a validation set for the
    common interface and ignores it.
    """

    algorithm = "data_oob"

    def __init__(
        self,
        estimator: Any = None,
        metric: Any = None,
        n_estimators: int = 200,
        task: str | None = None,
        tau: float | str = "auto",
        on_error: str = "fallback",
        n_jobs: int | None = 1,
        random_state: Any = None,
        progress: bool = False,
        fast_path: bool = True,
        neighbor_search: str = "exact",
    ) -> None:
        self.estimator = estimator
        self.metric = metric
        self.n_estimators = n_estimators
        self.task = task
        self.tau = tau
        self.on_error = on_error
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.progress = progress
        self.fast_path = fast_path
        self.neighbor_search = neighbor_search

    def _threshold(self, values: np.ndarray) -> float:
        if self.tau != "auto":
            return super()._threshold(values)
        if self.task_ == "classification":
            return 0.5
        sigma = 1.4826 * float(np.nanmedian(np.sqrt(np.maximum(-values, 0.0))))
        return -((AUTO_SIGMAS * sigma) ** 2)

    def fit(self, X: Any, y: Any, X_val: Any = None, y_val: Any = None) -> DataOOB:
        """Value every row of ``(X, y)``; ``X_val`` and ``y_val`` are ignored."""
        Xa, ya = self._start(X, y)
        check_bag_rows(len(ya), "DataOOB")
        check_estimator(self.estimator)
        check_columns_by_position(self.estimator)
        if self.on_error not in ("raise", "fallback"):
            raise ValueError(f"on_error={self.on_error!r} must be 'raise' or 'fallback'.")
        check_number(self.n_estimators, "n_estimators", low=1, integer=True)
        check_n_jobs(self.n_jobs, optional=True)  # was joblib's "n_jobs == 0 ... no meaning"
        # every bag's out-of-bag rows and scores (about 0.37 N of each, 16 bytes a row) are
        # kept until summed, and its seed drawn up front (8 bytes): 10**12 bags was
        # numpy's MemoryError "Unable to allocate 7.28 TiB"
        check_count("n_estimators", self.n_estimators, 8 + 6 * len(ya),
                    f"bags of N={len(ya)} rows", 1000)
        check_search(self.neighbor_search)
        task = self._resolve_task(ya, self.estimator)
        self._check_fixed_metric(task, _METRICS)
        if task == "regression" and ya.dtype.kind not in "biuf":
            raise ValueError("regression needs a numeric target y.")
        self.task_ = task
        rng = np.random.default_rng(self.random_state)
        seeds = rng.integers(2**63, size=int(self.n_estimators))
        classifier = task == "classification"
        self._check_target_varies(ya, classifier)
        estimator = self.estimator
        if getattr(estimator, "valuation_head", None) is not None:
            # a network valued by a light head on its full-data representation
            # (tdshap.torch.head): trained once here, every bag refits the head only,
            # on the embeddings its utility holds (no validation rows: X stands in)
            prepared = prepare_estimator(estimator, Xa, ya, int(rng.integers(2**31)))
            head = prepared.utility_class(prepared, "accuracy", Xa, ya, Xa, ya)
            estimator, Xa = head.estimator, head.X
        lists, note = oob_lists(estimator, Xa, ya, self.fast_path,
                                search=self.neighbor_search)
        if lists is not None:  # a bag is a few array operations: no worker would pay
            bags = [_bag_scores(estimator, Xa, ya, int(s), classifier, self.on_error,
                                lists) for s in seeds]
        else:
            bags = Parallel(n_jobs=self.n_jobs)(
                delayed(_bag_scores)(estimator, Xa, ya, int(s), classifier,
                                     self.on_error) for s in seeds)
        n = len(ya)
        counts = np.zeros(n, dtype=np.int64)
        total = np.zeros(n)
        squares = np.zeros(n)
        for oob, scores, *_ in bags:
            counts[oob] += 1
            total[oob] += scores
            squares[oob] += scores * scores
        with np.errstate(invalid="ignore", divide="ignore"):
            values = total / counts
            variances = np.where(counts >= 2, (squares - counts * values**2) / (counts - 1),
                                 np.nan)
        never = int(np.sum(counts == 0))
        if never:
            warnings.warn(f"{never} rows were in every one of the {self.n_estimators} bags: "
                          "their value is NaN (use more bags).", RuntimeWarning, stacklevel=2)
        fallbacks = sum(int(f) for _, _, f, *_ in bags)
        errors = [e for *_, e in bags if e is not None]
        # every bag's fit failed: the values would be the fallback's, describing no model
        check_some_fit_worked(len(errors), len(bags) - fallbacks,
                              errors[0] if errors else None, "this data_oob run",
                              lambda: float32_fix(errors[0] if errors else None, Xa))
        if errors:
            warn_rows_break_the_model(len(errors), len(bags), full_fit_error(
                self.estimator, Xa, ya), len(ya), "this data_oob run",
                lambda: float32_fix(errors[0], Xa))
        self._finish(values=values, counts=counts, variances=np.maximum(variances, 0.0),
                     n_fits=len(bags) - fallbacks,
                     extra={"task": task, "n_estimators": int(self.n_estimators),
                            "fallback_bags": fallbacks, "n_failed_fits": len(errors),
                            "first_error": errors[0] if errors else None,
                            "fast_path": None if lists is None else "kneighbors lists",
                            "path_note": note,
                            "neighbor_search": None if lists is None else self.neighbor_search,
                            "refit_rows": None if lists is None else sum(
                                b[3] for b in bags),
                            # out-of-bag scores: the validation rows judge the cut unbiased
                            "validation_free": True})
        return self
