"""Data-OOB of a k-NN classifier in closed form: the limit of infinitely many bags.

Data-OOB (:class:`~tdshap.methods.DataOOB`) and thresholding Data-OOB
(:class:`~tdshap.methods.ThresholdingOOB`) value a row by the score the models
of bootstrap bags that left it out give its label, averaged over sampled bags.
For a k-NN classifier that average has a closed form, so no bag needs sampling.

Take the *Poissonized* bootstrap: every other training row enters the bag
``c_j ~ Poisson(1)`` times, independently (the multinomial bootstrap's counts
in the limit of many rows; a bag's size is then random), and row ``i`` itself
is left out. Let ``j_1, j_2, ...`` be the other rows by increasing distance to
``x_i`` (ties by row number, as in :class:`~tdshap.methods.KNNShapley`) and
``C_m = c_{j_1} + ... + c_{j_m}``, which is ``Poisson(m)``. Slot ``s`` of the k
nearest (``s = 0..k-1``, copies filling one slot each, as scikit-learn's k-NN
on repeated rows does) holds ``j_m`` exactly when ``C_{m-1} <= s < C_m``, with
probability ``F_{m-1}(s) - F_m(s)`` (``F_m`` the ``Poisson(m)`` distribution
function, ``F_0 = 1``). The k-NN's probability of row ``i``'s own label is the
share of its slots that carry it, so its expectation is

    v_i = sum_m W_m [y_{j_m} = y_i],   W_m = (1/k) sum_{s<k} (F_{m-1}(s) - F_m(s)),

the same weights ``W`` for every row. ``v_i`` is what
``ThresholdingOOB``'s and ``DataOOB``'s true-class-probability rewards average
to without the bandit's held-out arms (tested against Monte Carlo bags). The
sum runs over each row's neighbour list
(:class:`~tdshap.utility.fast.neighbor_lists.NeighborLists`, ``4k + 16``
entries: the weight beyond it is below one in a million for k = 5 and is
reported as ``extra["tail_weight"]``; the values are normalised by the weight
inside the list). One search, then one matrix product: milliseconds where
sampled bags take a tenth of a second.

The values are exact, so the result's variances are 0 and its intervals have
no width: ``is_harmful`` (value <= tau) and "credibly below tau" (value < tau)
coincide. ``tau="auto"`` is 1 / the number of classes, as for thresholding
Data-OOB on the true-class probability. The values never see the validation
rows (``extra["validation_free"]``), so the cut's named comparison is judged at
1.645 SE (:mod:`tdshap.cut`). Classification only; uniform weights, Euclidean
distance (a ``Pipeline`` ending in the k-NN is applied to ``X`` first).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import poisson
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline

from tdshap.methods.direct import DirectValuation
from tdshap.utility.fast.base import NotEligible
from tdshap.utility.fast.neighbor_lists import NeighborLists, check_eligible

_METRICS: dict[str, tuple[str, ...]] = {"classification": ("true_class_proba",)}


def knn_step(estimator: Any) -> Any:
    """The k-NN a ``Pipeline`` ends in, or ``estimator`` itself."""
    return estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator


def closed_form_problem(estimator: Any) -> str | None:
    """Why :class:`KNNOutOfBag` cannot value ``estimator`` (None: it can)."""
    model = knn_step(estimator)
    if not isinstance(model, KNeighborsClassifier):
        return f"{type(model).__name__} is not a KNeighborsClassifier"
    try:
        check_eligible(model)
    except NotEligible as why:
        return str(why)
    return None


def slot_weights(k: int, depth: int) -> tuple[np.ndarray, float]:
    """``(W, tail)``: the expected share of the k slots held by list position m = 1..depth
    under the Poissonized bootstrap, and the share beyond the list."""
    m = np.arange(depth + 1)[:, None]
    s = np.arange(k)[None, :]
    F = poisson.cdf(s, m)  # F[m, s] = P(Poisson(m) <= s); row 0 is all ones
    W = (F[:-1] - F[1:]).sum(axis=1) / k
    return W, float(F[-1].sum() / k)


class KNNOutOfBag(DirectValuation):
    """Closed-form Data-OOB values of a k-NN classifier (module docstring).

    Parameters
    ----------
    estimator:
        A ``KNeighborsClassifier`` (uniform weights, Euclidean), or a
        ``Pipeline`` ending in one; ``None``: 5 neighbours.
    metric:
        ``None`` or ``"true_class_proba"`` (the only one).
    tau:
        Threshold of ``is_harmful``; ``"auto"``: 1 / the number of classes.
    random_state:
        Accepted for a common interface; the values are exact and deterministic.

    Attributes
    ----------
    values_, harmful_, result_:
        Each row's expected out-of-bag probability of its own label,
        ``values_ <= tau_``, and the :class:`~tdshap.result.ValuationResult`
        (variances 0; ``counts``: the list positions each value sums over).
    n_neighbors_, tau_:
        What was used.
    """

    algorithm = "knn_oob"

    def __init__(self, estimator: Any = None, metric: Any = None, tau: float | str = "auto",
                 random_state: Any = None, progress: bool = False) -> None:
        self.estimator = estimator
        self.metric = metric
        self.tau = tau
        self.random_state = random_state
        self.progress = progress

    def _threshold(self, values: np.ndarray) -> float:
        if self.tau == "auto":
            return 1.0 / self.n_classes_
        return super()._threshold(values)

    def fit(self, X: Any, y: Any, X_val: Any = None, y_val: Any = None) -> KNNOutOfBag:
        """Value every row of ``(X, y)``; ``X_val``/``y_val`` are accepted and unused."""
        Xa, ya = self._start(X, y)
        estimator = KNeighborsClassifier(5) if self.estimator is None else self.estimator
        problem = closed_form_problem(estimator)
        if problem:
            raise ValueError(f"KNNOutOfBag values a KNeighborsClassifier with uniform weights "
                             f"(or a Pipeline ending in one): {problem}; use ThresholdingOOB "
                             "or DataOOB for other models.")
        if isinstance(estimator, Pipeline) and len(estimator.steps) > 1:
            Xa = np.asarray(Pipeline(estimator.steps[:-1]).fit(Xa, ya).transform(Xa), float)
        model = knn_step(estimator)
        self._check_fixed_metric("classification", _METRICS)
        classes = np.unique(ya)
        if len(classes) < 2:
            raise ValueError("y has a single class: there is nothing to tell apart.")
        self.n_classes_ = len(classes)
        if len(ya) < 2:
            raise ValueError("KNNOutOfBag needs at least two rows (each is valued by the others).")
        try:
            lists = NeighborLists(model, Xa, ya)
        except NotEligible as why:
            raise ValueError(f"KNNOutOfBag cannot use this model: {why}") from None
        k = lists.k
        W, tail = slot_weights(k, lists.depth)
        same = lists.codes[lists.index] == lists.codes[:, None]
        values = same @ W / W.sum()
        self.n_neighbors_ = k
        self._finish(values=values, counts=np.full(len(ya), lists.depth, dtype=np.int64),
                     variances=np.zeros(len(ya)),
                     extra={"n_neighbors": k, "task": "classification", "depth": lists.depth,
                            "tail_weight": tail, "validation_free": True,
                            "search_seconds": lists.search_seconds,
                            "path_note": (f"k-NN neighbour lists ({lists.depth} nearest rows "
                                          f"of each row, searched once in "
                                          f"{lists.search_seconds:.1f} s): the out-of-bag "
                                          "values in closed form, no bag")})
        return self
