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

The values are exact; what a sampled run would add is a verdict on how
*clearly* a row sits below ``tau``. A value just below ``tau`` can come from
bags that give the label everything or nothing, or from bags that all give it
a little less than chance, and only the second is a row the models agree
against. So the result's intervals are those of the mean of the out-of-bag
draws that ``evidence_bags`` sampled bags would give each row (``B / e`` of
them), with each row's own bag-to-bag variance, computed exactly
(:func:`bag_reward_moments`: the reward is a weighted count of the slots
that carry the row's label, and the joint moments of the slots each list
position holds are the same for every row). "Credibly below tau"
(``is_credibly_harmful``, the cut's eligible rows) then means what it means
for thresholding Data-OOB with that many bags, without its sampling noise.
The values never see the validation
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

from tdshap._validation import (
    check_bag_rows,
    check_columns_by_position,
    check_number,
    check_target_varies,
)
from tdshap.methods.direct import DirectValuation
from tdshap.methods.stopping import MAX_ROUNDS
from tdshap.utility.fast.approximate_search import check_search
from tdshap.utility.fast.base import NotEligible
from tdshap.utility.fast.budget import over_budget
from tdshap.utility.fast.neighbor_lists import NeighborLists, check_eligible
from tdshap.utility.fast.pipeline import head_features

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


def slot_count_moments(k: int, depth: int) -> np.ndarray:
    """``Q[m, m'] = E[N_m N_m']``, ``N_m`` the number of the k slots held by list position m.

    Position m enters a bag ``c ~ Poisson(1)`` times and fills
    ``min(c, k - filled)`` slots, so the filled count is a Markov chain along
    the list; ``Q`` follows it once from each position. It does not depend on
    the row: a row's reward is ``sum_m N_m a_m / k`` (``a_m``: position m
    carries its label), whose second moment is ``a' Q a / k^2``.
    """
    pmf = poisson.pmf(np.arange(k + 1), 1.0)
    at_least = poisson.sf(np.arange(-1, k), 1.0)  # at_least[d] = P(c >= d)
    step = np.zeros((k + 1, k + 1, k + 1))  # step[filled, added, filled after]
    for f in range(k):
        for d in range(k - f + 1):
            step[f, d, f + d] = pmf[d] if f + d < k else at_least[d]
    step[k, 0, k] = 1.0
    move = step.sum(axis=1)  # the chain's transition matrix
    added = np.arange(k + 1)
    mean_added = step.sum(axis=2) @ added  # E[N | filled before]
    Q = np.zeros((depth, depth))
    before = np.zeros(k + 1)
    before[0] = 1.0
    for m in range(depth):
        joint = before[:, None, None] * step  # [filled, N_m, filled after]
        Q[m, m] = joint.sum(axis=(0, 2)) @ added**2
        carried = np.einsum("fag,a->g", joint, added)  # E[N_m; filled after = g]
        for later in range(m + 1, depth):
            Q[m, later] = Q[later, m] = carried @ mean_added
            carried = carried @ move
        before = before @ move
    return Q


def bag_reward_moments(same: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """``(mean, variance, tail)`` over Poissonized bags of each row's out-of-bag reward.

    ``same[i, m]``: the (m+1)-th nearest other row of row ``i`` carries row
    ``i``'s label. Bags whose k slots are not all filled within the list
    (probability ``tail`` of :func:`slot_weights`) are scaled out.
    """
    depth = same.shape[1]
    W, tail = slot_weights(k, depth)
    a = same.astype(float)
    mean = a @ W / W.sum()
    second = ((a @ slot_count_moments(k, depth)) * a).sum(axis=1) / k**2 / W.sum()
    return mean, np.maximum(second - mean**2, 0.0), tail


class KNNOutOfBag(DirectValuation):
    """Closed-form Data-OOB values of a k-NN classifier (module docstring).

    Parameters
    ----------
    estimator:
        A ``KNeighborsClassifier`` (uniform weights, Euclidean, at most N
        neighbours, as a bag holds N rows), or a ``Pipeline`` ending in one;
        ``None``: 5 neighbours.
    metric:
        ``None`` or ``"true_class_proba"`` (the only one).
    tau:
        Threshold of ``is_harmful``; ``"auto"``: 1 / the number of classes.
    evidence_bags:
        The intervals are those of the mean over this many sampled bags
        (each row out of ``evidence_bags / e`` of them; module docstring);
        200, thresholding Data-OOB's default budget. More bags: narrower
        intervals, more rows credibly below ``tau``.
    neighbor_search:
        ``"exact"`` (the default; values exact) or ``"approximate"`` (a graph
        index, for 100,000 rows and more: each row's list may miss a true
        neighbour now and then; :mod:`tdshap.utility.fast.approximate_search`).
    random_state:
        Accepted for a common interface; the values are exact and deterministic.

    Attributes
    ----------
    values_, harmful_, result_:
        Each row's expected out-of-bag probability of its own label,
        ``values_ <= tau_``, and the :class:`~tdshap.result.ValuationResult`
        (``variances``: each row's bag-to-bag variance; ``counts``: the
        out-of-bag draws of ``evidence_bags`` bags; a normal interval).
    n_neighbors_, tau_:
        What was used.
    """

    algorithm = "knn_oob"

    def __init__(self, estimator: Any = None, metric: Any = None, tau: float | str = "auto",
                 evidence_bags: int = 200, random_state: Any = None,
                 progress: bool = False, neighbor_search: str = "exact") -> None:
        self.estimator = estimator
        self.metric = metric
        self.tau = tau
        self.evidence_bags = evidence_bags
        self.random_state = random_state
        self.progress = progress
        self.neighbor_search = neighbor_search

    def _threshold(self, values: np.ndarray) -> float:
        if self.tau == "auto":
            return 1.0 / self.n_classes_
        return super()._threshold(values)

    def fit(self, X: Any, y: Any, X_val: Any = None, y_val: Any = None) -> KNNOutOfBag:
        """Value every row of ``(X, y)``; ``X_val``/``y_val`` are accepted and unused."""
        Xa, ya = self._start(X, y)
        # the draws are an int64 count per row: 10**30 was numpy's OverflowError
        check_number(self.evidence_bags, "evidence_bags", low=3, high=MAX_ROUNDS, integer=True)
        check_search(self.neighbor_search)
        estimator = KNeighborsClassifier(5) if self.estimator is None else self.estimator
        problem = closed_form_problem(estimator)
        if problem:
            raise ValueError(f"KNNOutOfBag values a KNeighborsClassifier with uniform weights "
                             f"(or a Pipeline ending in one): {problem}; use ThresholdingOOB "
                             "or DataOOB for other models.")
        check_columns_by_position(estimator)
        (Xa,) = head_features(estimator, Xa, ya, method="KNNOutOfBag")
        model = knn_step(estimator)
        # a bag holds N rows (with repeats) and scikit-learn's k-NN refuses more neighbours
        # than it was fitted on, so DataOOB's every bag fails beyond N; the closed form would
        # value that model anyway, in (k+1)^3 slot tables (k = 500 for 50 rows: seconds and
        # gigabytes). A huge k (10**18) was a MemoryError from deep inside numpy; below N,
        # k is bounded by the budget
        n = len(ya)
        check_number(model.n_neighbors, "n_neighbors", low=1, high=n, integer=True,
                     hint=f"It is the KNeighborsClassifier's number of neighbours, e.g. "
                          f"{min(5, n)}: a bag holds the N={n} training rows (with repeats), "
                          "and a k-NN cannot ask for more neighbours than it has rows.")
        tables = over_budget(f"the bag tables of n_neighbors={model.n_neighbors}",
                             2 * 8 * (int(model.n_neighbors) + 1) ** 3)
        if tables:
            raise ValueError(f"KNNOutOfBag: {tables}; use fewer neighbours (e.g. 5).")
        self._check_fixed_metric("classification", _METRICS)
        check_target_varies(ya)
        classes = np.unique(ya)
        self.n_classes_ = len(classes)
        check_bag_rows(n, "KNNOutOfBag")
        try:
            lists = NeighborLists(model, Xa, ya, search=self.neighbor_search)
        except NotEligible as why:
            raise ValueError(f"KNNOutOfBag cannot use this model: {why}") from None
        k = lists.k
        same = lists.codes[lists.index] == lists.codes[:, None]
        values, variances, tail = bag_reward_moments(same, k)
        self.n_neighbors_ = k
        draws = max(2, round(self.evidence_bags * np.exp(-1.0)))
        self._finish(values=values, counts=np.full(n, draws, dtype=np.int64),
                     variances=variances, interval="normal",
                     extra={"n_neighbors": k, "evidence_bags": int(self.evidence_bags),
                            "task": "classification", "depth": lists.depth,
                            "tail_weight": tail, "validation_free": True,
                            "search_seconds": lists.search_seconds,
                            "neighbor_search": self.neighbor_search,
                            "path_note": f"{lists.describe()}: the out-of-bag values in "
                                         "closed form, no bag"})
        return self
