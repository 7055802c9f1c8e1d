"""Which valuation ``find_harmful`` runs when the user does not say.

On planted label and target noise (``benchmarks/detection.py``, six datasets,
k-NN and a depth-5 tree; docs/benchmarks.md) the paper's TDShap on 0/1
accuracy or -MAE ranks the planted rows at AUROC 0.58-0.80: one row's Shapley
marginal is almost always exactly zero (accuracy) or tiny beside the noise of
refitting, so 50 rounds say little. Thresholding Data-OOB
(:class:`~tdshap.methods.tdoob.ThresholdingOOB`: the same APT bandit, its
rewards the out-of-bag scores of bagged models) reached the best or within 0.01
of the best peer's AUROC on every dataset with k-NN (mean 0.987), in less wall
time than Data-OOB; TDShap on the smooth true-class-probability utility (exact
k-NN fast path) came second (mean 0.94 on the four classification sets). So
``method="auto"`` is thresholding Data-OOB for every model.

``method="tdshap"`` is the paper's TDShap with the user's metric (pass
``metric="true_class_proba"`` for its smooth variant).

For a k-NN classifier the bags need no sampling at all: their average has a
closed form (:class:`~tdshap.methods.KNNOutOfBag`, the limit of infinitely
many bags; ``method="knn_oob"``). On the detection benchmark's eight
classification sets it ranked the planted rows as well as thresholding
Data-OOB (mean AUROC 0.966 vs 0.964) in a tenth of the time (0.00-0.03 s, as
fast as exact k-NN Shapley). It is not ``"auto"``'s choice: with intervals
of 200 bags' evidence its default cut gains as much as thresholding
Data-OOB's on those sets, but it lowered one clean run of 32 on
``benchmarks/clean_data.py`` where the bandit lowered none
(docs/benchmarks.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tdshap._validation import ParameterError
from tdshap.methods import KNNOutOfBag, TDShap
from tdshap.methods.knn_oob import closed_form_problem
from tdshap.methods.tdoob import ThresholdingOOB

METHODS = ("auto", "tdshap", "tdoob", "knn_oob")

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


def choose_method(estimator: Any, method: str) -> tuple[str, str]:
    """``(method, why)`` for ``method`` in :data:`METHODS`."""
    if method not in METHODS:
        raise ValueError(f"method={method!r} must be one of {METHODS}.")
    if method == "knn_oob":
        problem = closed_form_problem(estimator)
        if problem:
            raise ValueError(f"method='knn_oob' values k-NN classifiers only ({problem}): "
                             "use method 'auto' or 'tdoob'.")
    if method != "auto":
        return method, "given"
    return "tdoob", ("auto: thresholding Data-OOB (the APT bandit with out-of-bag rewards; "
                     "best on the detection benchmark, docs/benchmarks.md)")


def make_valuer(estimator: Any, metric: str, given: set[str], method: str,
                options: Any, seed: int, progress: bool, tdshap_extra: dict[str, Any],
                neighbor_search: str = "exact") -> Valuer:
    """The valuation estimator for ``find_harmful``'s settings.

    ``metric`` is the user's metric (used to cleanse and to report);
    the valuation may use a smoother one, named in :attr:`Valuer.metric`.
    ``given`` names the settings the user chose; ``tdshap_extra`` holds
    TDShap-only parameters (checkpointing). ``neighbor_search`` is the bagging
    methods' k-NN neighbour search (``"exact"`` or ``"approximate"``).
    """
    metric_given = "metric" in given
    chosen, why = choose_method(estimator, method)
    if chosen == "knn_oob":
        closed = KNNOutOfBag(estimator, tau=options.tau, random_state=seed, progress=progress,
                             neighbor_search=neighbor_search)
        return Valuer(closed, chosen, "true_class_proba", why)
    if chosen == "tdoob":
        row_metric = metric if metric in ("neg_mae", "neg_mse", "accuracy") and metric_given \
            else None
        valuer = ThresholdingOOB(estimator, row_metric, tau=options.tau, eps=options.eps,
                                 k=options.k, max_iter=options.max_iter if "max_iter" in given
                                 else TDOOB_BAGS, time_budget=options.time_budget,
                                 random_state=seed, progress=progress,
                                 neighbor_search=neighbor_search)
        return Valuer(valuer, chosen, valuer.row_metric(), why)
    if neighbor_search != "exact":
        raise ParameterError("`neighbor_search` 'approximate' serves the bagging methods "
                             "(`method` 'auto', 'tdoob' or 'knn_oob'); TDShap's k-NN fast "
                             "path is exact: leave `neighbor_search` 'exact'.",
                             "neighbor_search", "method")
    value_metric = metric
    valuer = TDShap(estimator, value_metric, tau=options.tau, eps=options.eps, k=options.k,
                    n_min=options.n_min, max_iter=options.max_iter,
                    time_budget=options.time_budget, random_state=seed, progress=progress,
                    **tdshap_extra)
    return Valuer(valuer, chosen, value_metric, why)
