"""Which valuation ``find_harmful`` runs when the user does not say.

Measured on planted label and target noise (``benchmarks/detection.py``,
docs/benchmarks.md), two pairings find the planted rows as well as the best
tools a practitioner would otherwise pick, at no more wall time:

* a k-NN classifier: TDShap on the true-class-probability utility, computed
  by the exact k-NN fast path without refits. Its values are data Shapley
  values of a smooth game; with 0/1 accuracy one row's marginal is almost
  always exactly zero and 50 rounds say little.
* anything else (models refitted for every subset, and regression):
  :class:`~tdshap.methods.tdoob.ThresholdingOOB`, the same bandit with
  out-of-bag rewards, because a single row's Shapley marginal to a refitted
  tree or linear model is mostly noise at any affordable number of pulls.

``method="tdshap"`` keeps the paper's TDShap with the user's metric.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sklearn.base import is_classifier

from tdshap.methods import TDShap
from tdshap.methods.tdoob import ThresholdingOOB
from tdshap.utility.fast.base import NotEligible
from tdshap.utility.fast.neighbors import neighbors_parameters
from tdshap.utility.fast.pipeline import final_estimator
from tdshap.utility.metrics import TRUE_CLASS_PROBA

METHODS = ("auto", "tdshap", "tdoob")
# bags after the first pass when the user sets no max_iter: on the detection benchmark
# AUROC rose from the first pass to ~100 bags and was flat after
TDOOB_BAGS = 100


@dataclass
class Valuer:
    """The estimator that values the rows, the metric it values them with, and why."""

    estimator: Any
    method: str
    metric: str
    why: str


def _knn_classifier(estimator: Any) -> bool:
    if not (is_classifier(estimator) and hasattr(estimator, "predict_proba")):
        return False
    try:
        neighbors_parameters(final_estimator(estimator))
    except NotEligible:
        return False
    return True


def choose_method(estimator: Any, method: str) -> tuple[str, str]:
    """``(method, why)`` for ``method`` in :data:`METHODS`."""
    if method not in METHODS:
        raise ValueError(f"method={method!r} must be one of {METHODS}.")
    if method != "auto":
        return method, "given"
    if _knn_classifier(estimator):
        return "tdshap", ("auto: TDShap on true-class probabilities (exact k-NN fast path, "
                          "no refits)")
    return "tdoob", ("auto: thresholding Data-OOB (the bandit with out-of-bag rewards), "
                     "since every subset of this model must be refitted")


def make_valuer(estimator: Any, metric: str, given: set[str], method: str,
                options: Any, seed: int, progress: bool, tdshap_extra: dict[str, Any]) -> Valuer:
    """The valuation estimator for ``find_harmful``'s settings.

    ``metric`` is the user's metric (used to cleanse and to report);
    the valuation may use a smoother one, named in :attr:`Valuer.metric`.
    ``given`` names the settings the user chose; ``tdshap_extra`` holds
    TDShap-only parameters (checkpointing).
    """
    metric_given = "metric" in given
    chosen, why = choose_method(estimator, method)
    if chosen == "tdoob":
        row_metric = metric if metric in ("neg_mae", "neg_mse", "accuracy") and metric_given \
            else None
        valuer = ThresholdingOOB(estimator, row_metric, tau=options.tau, eps=options.eps,
                                 max_iter=options.max_iter if "max_iter" in given
                                 else TDOOB_BAGS, time_budget=options.time_budget,
                                 random_state=seed, progress=progress)
        return Valuer(valuer, chosen, valuer._row_metric(), why)
    value_metric = metric
    if method == "auto" and not metric_given and is_classifier(estimator):
        value_metric = TRUE_CLASS_PROBA
    valuer = TDShap(estimator, value_metric, tau=options.tau, eps=options.eps, k=options.k,
                    n_min=options.n_min, max_iter=options.max_iter,
                    time_budget=options.time_budget, random_state=seed, progress=progress,
                    **tdshap_extra)
    return Valuer(valuer, chosen, value_metric, why)
