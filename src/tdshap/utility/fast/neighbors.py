"""Exact chains for k-nearest neighbours: one training row at a time.

Adding a training row ``b`` to the subset changes the prediction for a
validation point ``v`` only if ``b`` is nearer to ``v`` than ``v``'s current
k-th neighbour. The chain keeps, for every validation point, its ``k + 1``
nearest subset rows sorted by distance; a step inserts ``b`` into the lists
it enters and recomputes the predictions of those points only.

Agreeing with scikit-learn exactly
----------------------------------
The set of the k nearest rows is unique unless the k-th and (k+1)-th are at
the same distance, and the prediction depends on the set only (the order
among equally distant neighbours changes no vote and no weight). The order
scikit-learn gives tied rows depends on its search structure (heap order in
a KD-tree, chunk order in brute force), and brute force computes squared
distances as ``|v|² - 2 v·t + |t|²``, off by up to about
``2 (d + 2) eps (|v|² + |t|²)`` (``d`` features). So a step is computed here
only when every validation point's k-th and (k+1)-th neighbours are apart by
more than ``TIE_MARGIN`` times that bound; with distance weights, also when
no neighbour is so close that the bound moves its weight ``1/distance`` by
more than ``WEIGHT_RTOL`` (this covers duplicates, which scikit-learn weighs
by a special rule once rounding makes their distance exactly zero), and the
two best classes' weights are not within ``VOTE_RTOL`` of each other. Any
other step (a tie) is refitted by scikit-learn, as is any subset with fewer
than k rows (scikit-learn raises there, and the base class's fallback applies).

True-class probabilities
------------------------
With the metric ``"true_class_proba"`` each validation point's prediction is
the (weighted) share of its k nearest subset rows that carry its label, and
equally distant rows are ranked by row number, so the utility is a function
of the subset alone (the game of exact k-NN Shapley, Jia et al. 2019). That
game is computed here without refits at ties; scikit-learn may rank tied
rows otherwise, so values with ``fast_path=False`` can differ at ties.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

from tdshap.utility.fast.base import FastPathUtility, NotEligible
from tdshap.utility.fast.budget import over_budget
from tdshap.utility.fast.pipeline import final_estimator, transform_once

EPS = float(np.finfo(float).eps)
# squared distances closer than TIE_MARGIN x their rounding bound count as tied
TIE_MARGIN = 16.0
# largest relative error of a distance weight that is accepted
WEIGHT_RTOL = 1e-10
# distance-weighted class scores this close count as tied
VOTE_RTOL = 1e-9
# bytes per validation x training entry: float64 distance and int32 rank kept, and the
# int64 argsort while ranking
BYTES_PER_ENTRY = 20


def neighbors_parameters(model: Any) -> tuple[int, str]:
    """``(n_neighbors, weights)`` of an eligible k-NN model, or :class:`NotEligible`."""
    if type(model) not in (KNeighborsClassifier, KNeighborsRegressor):
        raise NotEligible(f"{type(model).__name__} is not KNeighborsClassifier/Regressor.")
    euclidean = model.metric in ("euclidean", "l2") or (
        model.metric == "minkowski" and model.p == 2
    )
    if not euclidean or model.metric_params:
        raise NotEligible("the k-NN fast path supports the Euclidean metric (minkowski, p=2).")
    if model.weights not in ("uniform", "distance"):
        raise NotEligible("the k-NN fast path supports weights='uniform' or 'distance'.")
    k = model.n_neighbors
    if not isinstance(k, int | np.integer) or isinstance(k, bool) or k < 1:
        raise NotEligible(f"n_neighbors={k!r} is not a positive integer.")
    return int(k), str(model.weights)


class _NeighborLists:
    """Per validation point: the k+1 nearest subset rows (distances², indices), predictions."""

    def __init__(self, dist2: np.ndarray, index: np.ndarray, size: int) -> None:
        self.dist2, self.index, self.size = dist2, index, size
        self.pred: np.ndarray = np.empty(0)
        self.tied = np.zeros(len(dist2), dtype=bool)


class NeighborsChainUtility(FastPathUtility):
    """Utility for ``KNeighborsClassifier`` / ``KNeighborsRegressor`` (Euclidean)."""

    name: ClassVar[str] = "kneighbors"
    proba_capable: ClassVar[bool] = True

    def __init__(self, estimator: Any, metric: Any, X: np.ndarray, y: np.ndarray,
                 X_val: np.ndarray, y_val: np.ndarray, **kwargs: Any) -> None:
        super().__init__(estimator, metric, X, y, X_val, y_val, **kwargs)
        self.k, self.weights = neighbors_parameters(final_estimator(estimator))
        why = over_budget(f"the {len(X_val):,} x {len(X):,} validation x training distances "
                          "and ranks", BYTES_PER_ENTRY * len(X) * len(X_val))
        if why:
            raise NotEligible(why + ".")
        if not self.classifier and np.asarray(y).dtype.kind not in "biuf":
            raise NotEligible("regression needs a numeric target.")
        Xf, Xvf = transform_once(estimator, X, X_val)
        # row t: squared distances from training row t to every validation point
        self._dist2 = cdist(Xf, Xvf, "sqeuclidean")
        # row v: training rows by increasing distance to validation point v, so that a
        # prefix's nearest rows are found near the front instead of partitioning it all
        self._by_distance = np.argsort(self._dist2.T, axis=1, kind="stable").astype(np.int32)
        norms = np.einsum("ij,ij->i", Xvf, Xvf) + float(np.max(np.einsum("ij,ij->i", Xf, Xf)))
        rounding = 2 * (Xf.shape[1] + 2) * EPS * norms  # bound on a squared distance's error
        self._tie = TIE_MARGIN * rounding
        # a weight 1/sqrt(d²) moves by about rounding / (2 d²) relative
        self._zero = rounding / (2 * WEIGHT_RTOL)
        if self.classifier:
            self._labels, self._codes = np.unique(y, return_inverse=True)
            # validation rows' classes as training codes (-1: a class no training row has)
            pos = np.clip(np.searchsorted(self._labels, y_val), 0, len(self._labels) - 1)
            self._val_codes = np.where(self._labels[pos] == y_val, pos, -1)
        else:
            self._target = np.asarray(y, dtype=float)

    # -- predictions -----------------------------------------------------
    def _update(self, state: _NeighborLists, rows: np.ndarray) -> None:
        """Predictions and tie flags of the validation points ``rows``.

        Called under ``np.errstate(divide="ignore", invalid="ignore")``: ``inf - inf``
        while the subset has fewer than k rows, ``1/0`` for duplicates; both are
        flagged as not exact.
        """
        k = self.k
        d2, nbr = state.dist2[rows], state.index[rows, :k]
        if self.true_class_proba:
            # true-class probabilities define their own k-NN game, in which equally
            # distant rows are ranked by row number (as exact k-NN Shapley ranks them):
            # a tie at the k-th neighbour is then no reason to refit
            tied = np.zeros(len(rows), dtype=bool)
        else:
            tied = d2[:, k] - d2[:, k - 1] <= self._tie[rows]
        weights = None
        if self.weights == "distance":
            tied |= d2[:, 0] <= self._zero[rows]
            weights = 1.0 / np.sqrt(d2[:, :k])
        if self.classifier:
            onehot = self._codes[nbr][:, :, None] == np.arange(len(self._labels))
            votes = (onehot.sum(axis=1) if weights is None
                     else (onehot * weights[:, :, None]).sum(axis=1))
            if self.true_class_proba:  # probabilities do not depend on who wins a vote
                code = self._val_codes[rows]
                mine = votes[np.arange(len(rows)), np.maximum(code, 0)]
                state.pred[rows] = np.where(code >= 0, mine / votes.sum(axis=1), 0.0)
                state.tied[rows] = tied
                return
            best = np.argmax(votes, axis=1)  # ties: the smallest label, as scikit-learn
            if weights is not None and votes.shape[1] > 1:  # integer votes tie exactly
                top2 = np.sort(votes, axis=1)[:, -2:]
                tied |= top2[:, 1] - top2[:, 0] <= VOTE_RTOL * top2[:, 1]
            state.pred[rows] = self._labels[best]
        elif weights is None:
            state.pred[rows] = np.mean(self._target[nbr], axis=1)
        else:
            state.pred[rows] = np.sum(self._target[nbr] * weights, axis=1) / np.sum(weights,
                                                                                 axis=1)
        state.tied[rows] = tied

    def _exact(self, state: _NeighborLists) -> bool:
        return state.size >= self.k and not state.tied.any()

    # -- the chain -------------------------------------------------------
    def _nearest(self, prefix: np.ndarray) -> np.ndarray:
        """Per validation point, its ``k + 1`` nearest rows of ``prefix`` (-1: none), nearest
        first: the first members of ``prefix`` in its distance order, searched in a window
        that doubles for the points that need more."""
        n, m, k1 = self.n, len(self._by_distance), self.k + 1
        member = np.zeros(n, dtype=bool)
        member[prefix] = True
        index = np.full((m, k1), -1, dtype=np.intp)
        points = np.arange(m)
        width = min(n, 2 * k1 * n // max(len(prefix), 1) + 16)
        while len(points):
            cand = self._by_distance[points, :width]
            inside = member[cand]
            rank = np.cumsum(inside, axis=1)
            done = rank[:, -1] >= k1 if width < n else np.ones(len(points), dtype=bool)
            rows, cols = np.nonzero(inside[done] & (rank[done] <= k1))
            index[points[done][rows], rank[done][rows, cols] - 1] = cand[done][rows, cols]
            points, width = points[~done], min(n, 2 * width)
        return index

    def _start_chain(self, prefix: np.ndarray) -> tuple[_NeighborLists, np.ndarray | None]:
        m = len(self._by_distance)
        index = self._nearest(prefix)
        dist2 = np.where(index >= 0, self._dist2[index, np.arange(m)[:, None]], np.inf)
        state = _NeighborLists(dist2, index, len(prefix))
        classes = self.classifier and not self.true_class_proba
        state.pred = np.empty(m, dtype=self._labels.dtype if classes else float)
        with np.errstate(divide="ignore", invalid="ignore"):
            self._update(state, np.arange(m))
        return state, state.pred.copy() if self._exact(state) else None

    def _extend_chain(
        self, state: _NeighborLists, rows: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        cols = np.arange(self.k + 1)
        preds = np.empty((len(rows), len(state.pred)), dtype=state.pred.dtype)
        exact = np.empty(len(rows), dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            for i, b in enumerate(rows):
                self._add(state, b, cols)
                preds[i] = state.pred
                exact[i] = self._exact(state)
        return preds, exact

    def _add(self, state: _NeighborLists, b: int, cols: np.ndarray) -> None:
        """Add training row ``b`` to the subset (``cols``: ``arange(k + 1)``)."""
        d = self._dist2[b]
        last = state.dist2[:, -1]
        if self.true_class_proba:
            hit = np.flatnonzero((d < last) | ((d == last) & (b < state.index[:, -1])))
        else:
            hit = np.flatnonzero(d < last)
        if len(hit):
            # insert b into each sorted list it enters (after equal distances); the last
            # entry drops out
            near, dh = state.dist2[hit], d[hit, None]
            if self.true_class_proba:  # equal distances: the lower row number first
                before = (near < dh) | ((near == dh) & (state.index[hit] < b))
            else:
                before = near <= dh
            pos = np.count_nonzero(before, axis=1)[:, None]
            src = (hit[:, None], cols - (cols > pos))
            at = cols == pos
            state.dist2[hit] = np.where(at, dh, state.dist2[src])
            state.index[hit] = np.where(at, b, state.index[src])
            self._update(state, hit)
        state.size += 1
