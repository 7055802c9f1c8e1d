"""k-NN predictions for many subsets from one neighbour search: no refit per subset.

Out-of-bag methods (:class:`~tdshap.methods.tdoob.ThresholdingOOB`,
:class:`~tdshap.methods.data_oob.DataOOB`) fit one k-NN per bootstrap bag and
predict the rows left out; the cleansing protocol fits one per removal cut and
predicts the validation and test rows. Each of those fits is a new search
structure and each prediction a new search over up to N rows, so at 100,000
rows a bag costs tens of seconds.

A subset's k nearest rows to a query are the first members of the subset in
the query's own list of training rows sorted by distance. So the lists are
searched once (:class:`NeighborLists`: the ``depth`` nearest training rows of
every query, by scikit-learn's brute-force search in blocks of query rows, the
distances then recomputed exactly), and a subset, given as a count per
training row (a bootstrap bag repeats rows; a removal cut keeps them 0/1),
predicts every query from its list: the first ``k`` slots, a row with ``c``
copies filling up to ``c`` of them, as scikit-learn's k-NN fitted on the
repeated rows does.

Agreeing with scikit-learn exactly
----------------------------------
The prediction depends on which rows fill the k slots only. It is taken from
the list when that multiset is unambiguous: the k-th slot's row is nearer than
the next subset row by more than ``TIE_MARGIN`` times the bound on a squared
distance's rounding error (:mod:`tdshap.utility.fast.neighbors`) and nearer
than the list's last entry by as much (a row beyond the list is never nearer
than that), and, when copies of it are left over, farther than the previous
subset row by as much (else that row and a copy could swap).

A query whose list holds fewer than k slots of the subset, or whose k-th slot
is tied, is *declined*: the caller fits scikit-learn's model on the subset and
predicts those queries in a call of their own (the refit path, on a few rows),
and counts them. At a tie scikit-learn's own answer depends on which other
rows share its call (the order of its search chunks breaks the tie), so on
tied data a declined row can differ from what one refit predicting all rows at
once gives; without ties, and for every row the lists decide, predictions are
those of refitting. Uniform weights only. Classification is bit for bit (a
class probability is a count divided by k, as scikit-learn computes it);
regression to rounding (the mean of the k targets in distance order, but rows
at exactly the same distance inside the k slots may be summed in another order
than scikit-learn's search leaves them, which moves the last bits).

Approximate lists (``search="approximate"``, opt-in) take their candidates from a
graph index instead of brute force, so their cost grows about as N log N, not N
squared; a list may then miss a true neighbour, and predictions are a k-NN's on
the rows found rather than always a refit's
(:mod:`tdshap.utility.fast.approximate_search`).

Memory: ``12 x queries x depth`` bytes for the lists (int32 rows, float64
distances), checked against the memory budget
(:mod:`tdshap.utility.fast.budget`) before the search starts; the search
holds one block of query rows at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn import config_context
from sklearn.base import clone, is_classifier
from sklearn.neighbors import NearestNeighbors

from tdshap.utility.fast.approximate_search import (
    CANDIDATE_MARGIN,
    CandidateGraph,
    check_search,
    index_bytes,
    locality_order,
)
from tdshap.utility.fast.base import NotEligible, one_thread_if_small
from tdshap.utility.fast.budget import memory_budget, over_budget
from tdshap.utility.fast.neighbors import EPS, TIE_MARGIN, neighbors_parameters
from tdshap.utility.metrics import ROW_METRICS, TRUE_CLASS_PROBA

#: query rows searched per block (each block's search holds block x N distances in
#: scikit-learn's chunks of ``working_memory``)
SEARCH_BLOCK = 4096
#: The most bytes the exact re-sort of a block's lists holds in differences at once.
EXACT_ORDER_BYTES = 64 * 2**20
#: bytes one (query, list entry) pair holds: an int32 row and a float64 distance
ENTRY_BYTES = 12


def oob_depth(k: int) -> int:
    """List length for bootstrap bags: a bag holds about 0.95 of a list's rows (held-out
    arms aside), so the slots found in ``4k + 16`` entries are short of k with a
    probability far below one in a million."""
    return 4 * k + 16


def removal_depth(k: int) -> int:
    """List length for removal cuts of up to half the rows."""
    return 8 * k + 32


def check_eligible(estimator: Any) -> int:
    """``n_neighbors`` of a model the lists can predict for, else :class:`NotEligible`."""
    k, weights = neighbors_parameters(estimator)
    if weights != "uniform":
        raise NotEligible("the k-NN neighbour lists support weights='uniform' only "
                          f"(this model has weights={weights!r}).")
    if getattr(estimator, "outputs_2d_", False):
        raise NotEligible("multi-output k-NN is not supported by the neighbour lists.")
    return k


class NeighborLists:
    """Every query's ``depth`` nearest training rows, sorted by exact distance.

    Parameters
    ----------
    estimator:
        A ``KNeighborsClassifier`` / ``KNeighborsRegressor`` (Euclidean, uniform
        weights); anything else raises :class:`NotEligible` with the reason.
    X, y:
        The training rows (the subsets are drawn from them) and their targets.
    queries:
        The rows to predict; ``None``: the training rows themselves, each
        without itself in its list (out-of-bag predictions).
    depth:
        Entries per list; ``None``: :func:`oob_depth` for ``queries=None``,
        :func:`removal_depth` otherwise. Capped at the rows available.
    budget:
        Bytes the lists may take (``None``: :func:`memory_budget`); lists that
        would take more raise :class:`NotEligible` before anything is searched.
    client:
        A ``dask.distributed.Client``: the blocks of query rows are searched on
        its workers (the training rows are scattered once); ``None``: here.
        The lists are the same either way (each block is the same computation).
    search:
        ``"exact"`` (brute force: predictions are a refit's, cost grows with N
        squared) or ``"approximate"`` (a graph index, cost about N log N, a true
        neighbour now and then missed; always in this process: see
        :mod:`tdshap.utility.fast.approximate_search`).
    """

    def __init__(self, estimator: Any, X: np.ndarray, y: np.ndarray,
                 queries: np.ndarray | None = None, depth: int | None = None,
                 budget: int | None = None, client: Any = None,
                 search: str = "exact") -> None:
        self.search = check_search(search)
        self.k = check_eligible(estimator)
        self.estimator = estimator
        self.classifier = is_classifier(estimator)
        X = np.asarray(X, dtype=float)
        if X.ndim != 2:
            raise NotEligible("the neighbour lists need a 2-D numeric X.")
        self.exclude_self = queries is None
        self.n_train = len(X)
        Q = X if queries is None else np.asarray(queries, dtype=float)
        n, m = len(X), len(Q)
        available = n - (1 if self.exclude_self else 0)
        wanted = (oob_depth(self.k) if self.exclude_self else removal_depth(self.k)) \
            if depth is None else int(depth)
        self.depth = max(1, min(wanted, available))
        self.budget = memory_budget() if budget is None else int(budget)
        self.bytes = ENTRY_BYTES * m * self.depth
        why = _memory_problem(m, n, self.depth, X.shape[1], search, self.budget)
        if why:
            raise NotEligible(why + ".")
        if self.classifier:
            self.classes, self.codes = np.unique(y, return_inverse=True)
            self.label: np.ndarray = self.codes
        else:
            if np.asarray(y).dtype.kind not in "biuf":
                raise NotEligible("k-NN regression needs a numeric target.")
            self.target = np.asarray(y, dtype=float)
            self.label = self.target
        started = time.perf_counter()
        self.index, self.dist2 = self._search(X, Q, client)
        # a squared distance's rounding bound (see tdshap.utility.fast.neighbors)
        norms = np.einsum("ij,ij->i", Q, Q) + float(np.max(np.einsum("ij,ij->i", X, X)))
        self.tie = TIE_MARGIN * 2 * (X.shape[1] + 2) * EPS * norms
        # no row beyond a list is nearer than its last entry (less the search's rounding)
        self.sentinel = (self.dist2[:, -1].copy() if self.depth < available
                         else np.full(m, np.inf))
        self.search_seconds = time.perf_counter() - started

    def _search(self, X: np.ndarray, Q: np.ndarray,
                client: Any = None) -> tuple[np.ndarray, np.ndarray]:
        m = len(Q)
        # scikit-learn chunks each block's distances by working_memory (MiB)
        working = max(16, min(1024, self.budget // 4 // 2**20))
        if self.search == "approximate":
            return _approximate_lists(X, Q, self.depth, self.exclude_self, working)
        blocks = [(lo, min(m, lo + SEARCH_BLOCK)) for lo in range(0, m, SEARCH_BLOCK)]
        if client is None:
            parts = [_search_block(X, Q, lo, hi, self.depth, self.exclude_self, working)
                     for lo, hi in blocks]
        else:  # the blocks are independent: the cluster's workers search them
            x_future = client.scatter(X, broadcast=True, hash=False)
            q_future = x_future if Q is X else client.scatter(Q, broadcast=True, hash=False)
            futures = [client.submit(_search_block, x_future, q_future, lo, hi, self.depth,
                                     self.exclude_self, working, pure=False)
                       for lo, hi in blocks]
            parts = client.gather(futures)
            for f in (x_future, q_future):
                f.release()
        index = np.concatenate([p[0] for p in parts]) if parts else np.empty((0, self.depth),
                                                                             dtype=np.int32)
        dist2 = np.concatenate([p[1] for p in parts]) if parts else np.empty((0, self.depth))
        return index, dist2

    def describe(self, where: str = "") -> str:
        """The lists in words, for a run's path note (``where``: where they were searched)."""
        how = ("approximate: a graph index's candidates re-sorted by exact distance, "
               if self.search == "approximate" else "")
        return (f"k-NN neighbour lists ({how}{self.depth} nearest rows of each row, searched "
                f"once{where} in {self.search_seconds:.1f} s, {self.bytes / 2**20:.0f} MiB)")

    # -- predictions --------------------------------------------------------
    def neighbours(self, counts: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(nbr, ok)``: the training rows filling the k slots of each query in ``rows``
        (nearest first) for the subset with ``counts[t]`` copies of row ``t``, and
        whether the list decides them exactly (``False``: refit those)."""
        k = self.k
        idx, d2 = self.index[rows], self.dist2[rows]
        c = counts[idx]
        cum = np.cumsum(c, axis=1)
        at = np.arange(len(rows))
        reach = cum >= k
        full = reach[:, -1]
        p = np.argmax(reach, axis=1)  # the position that fills the k-th slot
        dp = d2[at, p]
        cols = np.arange(idx.shape[1])
        later = (c > 0) & (cols > p[:, None])
        q = np.argmax(later, axis=1)  # the next subset row after it
        sentinel, tie = self.sentinel[rows], self.tie[rows]
        dq = np.where(later.any(axis=1), d2[at, q], sentinel)
        # the previous subset row: when the k-th slot's row has copies left over, a row
        # as near as it could take one of its slots instead
        earlier = (c > 0) & (cols < p[:, None])
        r = idx.shape[1] - 1 - np.argmax(earlier[:, ::-1], axis=1)
        dr = np.where(earlier.any(axis=1), d2[at, r], -np.inf)
        inside = full & (dp < sentinel - tie)
        ok = inside & (dq - dp > tie) & ((cum[at, p] == k) | (dp - dr > tie))
        tied = np.flatnonzero(inside & ~ok)
        if len(tied):
            # Rows within the margin of the k-th slot may take it in any order, but when
            # they all carry one label every order gives the same votes (or targets):
            # decided here, not refitted (duplicated rows make such ties common).
            window = (c[tied] > 0) & (np.abs(d2[tied] - dp[tied, None]) <= tie[tied, None])
            label = self.label[idx[tied]]
            ok[tied] = np.all(~window | (label == label[np.arange(len(tied)), p[tied], None]),
                              axis=1)
        nbr = np.empty((len(rows), k), dtype=np.intp)
        last = idx.shape[1] - 1
        for s in range(k):  # slot s is filled by the first position whose running count > s
            pos = np.minimum(np.count_nonzero(cum <= s, axis=1), last)
            nbr[:, s] = idx[at, pos]
        return nbr, ok

    def votes(self, nbr: np.ndarray) -> np.ndarray:
        """Per query and class (of all training rows): how many of its k slots carry it."""
        n_classes = len(self.classes)
        flat = (np.arange(len(nbr))[:, None] * n_classes + self.codes[nbr]).ravel()
        return np.bincount(flat, minlength=len(nbr) * n_classes).reshape(len(nbr), n_classes)

    def regress(self, nbr: np.ndarray) -> np.ndarray:
        """The mean target of the k slots, in distance order (as scikit-learn sums them)."""
        return np.mean(self.target[nbr], axis=1)

    def row_scores(self, counts: np.ndarray, rows: np.ndarray, y_rows: np.ndarray,
                   metric: str) -> tuple[np.ndarray, np.ndarray]:
        """Each query's own score (:func:`tdshap.utility.metrics.row_scores`) where the list
        decides it, and the mask of the queries it declined (their scores are NaN)."""
        if metric not in ROW_METRICS:
            raise ValueError(f"metric={metric!r} has no per-row score: use one of "
                             f"{ROW_METRICS}.")
        nbr, ok = self.neighbours(counts, rows)
        if self.classifier:
            votes = self.votes(nbr)
            if metric == TRUE_CLASS_PROBA:
                pos = np.clip(np.searchsorted(self.classes, y_rows), 0, len(self.classes) - 1)
                known = self.classes[pos] == y_rows
                mine = votes[np.arange(len(rows)), pos]
                scores = np.where(known, mine / votes.sum(axis=1), 0.0)
            elif metric == "accuracy":
                # ties: the lowest class, as scikit-learn's argmax and mode choose
                scores = np.asarray(self.classes[np.argmax(votes, axis=1)] == y_rows,
                                    dtype=float)
            else:
                raise ValueError(f"metric={metric!r} is a regression metric; this k-NN is a "
                                 "classifier.")
        else:
            if metric not in ("neg_mae", "neg_mse"):
                raise ValueError(f"metric={metric!r} is a classification metric; this k-NN "
                                 "is a regressor.")
            err = np.asarray(y_rows, dtype=float) - self.regress(nbr)
            scores = -np.abs(err) if metric == "neg_mae" else -(err * err)
        return np.where(ok, scores, np.nan), ~ok


def oob_path_problem(estimator: Any, n: int, fast_path: Any, d: int = 0,
                     search: str = "exact") -> str | None:
    """Why a bagging run on ``n`` rows of ``d`` features would refit every bag, or None
    when the out-of-bag neighbour lists apply (checked without searching)."""
    if not fast_path:
        return "fast_path=False"
    try:
        k = check_eligible(estimator)
    except NotEligible as why:
        return str(why)
    depth = max(1, min(oob_depth(k), n - 1))
    return _memory_problem(n, n, depth, d, search)


def _memory_problem(m: int, n: int, depth: int, d: int, search: str,
                    budget: int | None = None) -> str | None:
    """Why the lists of ``m`` queries (and, searched approximately, the graph of the ``n``
    training rows) cannot be held, or None."""
    graph = search == "approximate"
    held = ENTRY_BYTES * m * depth + (index_bytes(n, d) if graph else 0)
    return over_budget(f"the neighbour lists of {m:,} rows x {depth} entries"
                       + (" and their search graph" if graph else ""), held, budget)


def oob_lists(estimator: Any, X: np.ndarray, y: np.ndarray, fast_path: Any,
              executor: Any = None, search: str = "exact") -> tuple[NeighborLists | None, str]:
    """Out-of-bag neighbour lists when ``fast_path`` is on and they apply, and a line
    saying which path a bagging method takes and why (never a silent refit).
    ``executor``: a :class:`~tdshap.utility.parallel.DaskExecutor` searches the
    blocks of rows on its cluster's workers (exact search only); anything else
    searches here. ``search``: see :class:`NeighborLists`."""
    from tdshap.utility.parallel import DaskExecutor

    if not isinstance(fast_path, bool | np.bool_):
        raise ValueError(f"fast_path={fast_path!r} must be True or False.")
    if not fast_path:
        return None, "refit every bag (fast_path=False)"
    dask = executor if isinstance(executor, DaskExecutor) else None
    on_workers = dask is not None and search == "exact"
    try:
        lists = NeighborLists(estimator, X, y, client=dask.client if dask and on_workers
                              else None, search=search)
    except NotEligible as why:
        return None, f"refit every bag: {why}"
    where = ("" if dask is None else f" on {dask.n_workers} Dask workers" if on_workers
             else " in this process (the approximate search does not use the Dask workers)")
    return lists, f"{lists.describe(where)}: no refit per bag"


class ListedModel:
    """A k-NN "fitted" on the rows ``keep`` whose ``predict`` answers the registered query
    sets from their neighbour lists (the queries the lists decline, and any other input,
    by scikit-learn's model fitted on ``keep`` when first needed)."""

    def __init__(self, owner: RemovalFits, keep: np.ndarray, fit: Callable[[], Any]) -> None:
        self._owner, self._fit = owner, fit
        self._counts = np.bincount(keep, minlength=owner.n_train)

    @property
    def classes_(self) -> np.ndarray:
        """The classes of all training rows (a refit on ``keep`` may lack some)."""
        return self._owner.sets[0][1].classes

    def predict_proba(self, X: Any) -> np.ndarray:
        """The vote shares of the k slots, over the classes of all training rows."""
        lists = next((lst for arr, lst in self._owner.sets if arr is X), None)
        if lists is None or not lists.classifier:
            raise AttributeError("predict_proba: only for the registered queries of a "
                                 "classifier")
        nbr, ok = lists.neighbours(self._counts, np.arange(len(X)))
        votes = lists.votes(nbr).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):  # declined rows: refit below
            proba = votes / votes.sum(axis=1, keepdims=True)
        if not ok.all():
            fitted = self._fit()
            proba[~ok] = 0.0
            cols = np.searchsorted(lists.classes, fitted.classes_)
            proba[np.ix_(np.flatnonzero(~ok), cols)] = fitted.predict_proba(X[~ok])
            self._owner.refit_rows += int(np.count_nonzero(~ok))
        return proba

    def predict(self, X: Any) -> np.ndarray:
        lists = next((lst for arr, lst in self._owner.sets if arr is X), None)
        if lists is None:
            return np.asarray(self._fit().predict(X))
        nbr, ok = lists.neighbours(self._counts, np.arange(len(X)))
        if lists.classifier:
            pred = lists.classes[np.argmax(lists.votes(nbr), axis=1)]
        else:
            pred = lists.regress(nbr)
        if not ok.all():
            pred[~ok] = self._fit().predict(X[~ok])
            self._owner.refit_rows += int(np.count_nonzero(~ok))
        return pred


class RemovalFits:
    """The models of the cleansing protocol's cuts: ``fits(keep, seed_params)`` is a model
    trained on ``X[keep]`` whose ``predict`` on each array of ``queries`` (the very
    objects) equals a refit's. For a k-NN scored from its predictions
    (``by_predictions``) the queries' neighbour lists are searched once here and no cut
    refits (but for the queries the lists decline: ``refit_rows``); otherwise every
    cut refits. ``note`` says which path is taken and why."""

    def __init__(self, estimator: Any, X: np.ndarray, y: np.ndarray,
                 queries: list[np.ndarray], by_predictions: bool) -> None:
        self.estimator, self.X, self.y = estimator, X, y
        self.n_train, self.refit_rows = len(X), 0
        self.sets: list[tuple[np.ndarray, NeighborLists]] = []
        if not by_predictions:
            self.note = "refit every cut: the metric needs more than the model's predictions"
            return
        try:
            self.sets = [(q, NeighborLists(estimator, X, y, queries=q)) for q in queries]
        except NotEligible as why:
            self.note = f"refit every cut: {why}"
            return
        seconds = sum(lst.search_seconds for _, lst in self.sets)
        self.note = (f"k-NN neighbour lists ({self.sets[0][1].depth} nearest training rows "
                     f"of each validation/test row, searched once in {seconds:.1f} s): no "
                     "refit per cut")

    def __call__(self, keep: np.ndarray, seed_params: dict[str, int]) -> Any:
        fit = subset_model(self.estimator, self.X, self.y, keep, seed_params)
        return ListedModel(self, keep, fit) if self.sets else fit()


def subset_model(estimator: Any, X: np.ndarray, y: np.ndarray, bag: np.ndarray,
                 seed_params: dict[str, int] | None = None) -> Callable[[], Any]:
    """A function fitting ``estimator`` on ``X[bag]`` once, when first called (the refit
    of the queries the lists decline)."""
    fitted: list[Any] = []

    def fit() -> Any:
        if not fitted:
            model = clone(estimator)
            if seed_params:
                model.set_params(**seed_params)
            fitted.append(model.fit(X[bag], y[bag]))
        return fitted[0]

    return fit


def _search_block(X: np.ndarray, Q: np.ndarray, lo: int, hi: int, depth: int,
                  exclude_self: bool, working: int) -> tuple[np.ndarray, np.ndarray]:
    """The sorted lists of the query rows ``Q[lo:hi]`` (row numbers, exact squared
    distances; ties by row number). Runs in this process or on a Dask worker."""
    return _search_rows(X, Q, np.arange(lo, hi), depth, exclude_self, working)


def _search_rows(X: np.ndarray, Q: np.ndarray, rows: np.ndarray, depth: int,
                 exclude_self: bool, working: int) -> tuple[np.ndarray, np.ndarray]:
    extra = 1 if exclude_self else 0
    search = NearestNeighbors(n_neighbors=depth + extra, algorithm="brute").fit(X)
    with config_context(working_memory=working), one_thread_if_small(len(rows) * X.size):
        found = search.kneighbors(Q[rows], return_distance=False)
    if extra:
        found = _drop_self(found, rows)
    return _exact_order(X, Q[rows], found, depth)


def _approximate_lists(X: np.ndarray, Q: np.ndarray, depth: int, exclude_self: bool,
                       working: int) -> tuple[np.ndarray, np.ndarray]:
    """The lists from a graph index's candidates, re-sorted by exact distance; the rows
    it found too few candidates for, by exact search (see
    :mod:`tdshap.utility.fast.approximate_search`)."""
    extra = 1 if exclude_self else 0
    m = len(Q)
    graph = CandidateGraph(X)
    wanted = min(len(X), depth + extra + CANDIDATE_MARGIN)
    index = np.empty((m, depth), dtype=np.int32)
    dist2 = np.empty((m, depth))
    order = locality_order(Q)
    for lo in range(0, m, SEARCH_BLOCK):
        rows = order[lo : lo + SEARCH_BLOCK]
        found = graph.search(Q[rows], wanted)
        block = _drop_self(found, rows) if extra else found
        short = (block < 0).any(axis=1)
        ok = rows[~short]
        index[ok], dist2[ok] = _exact_order(X, Q[ok], block[~short], depth)
        if short.any():
            bad = rows[short]
            index[bad], dist2[bad] = _search_rows(X, Q, bad, depth, exclude_self, working)
    return index, dist2


def _exact_order(X: np.ndarray, Qb: np.ndarray, found: np.ndarray,
                 depth: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``depth`` of each row's ``found`` training rows by exact squared
    distance to its query (ties by row number)."""
    d2 = np.empty(found.shape)
    # the differences of a block of rows hold rows x depth x features floats (4,096 x 72 x
    # 1,000 features: 2.4 GB); a few at a time they stay within EXACT_ORDER_BYTES
    step = max(1, EXACT_ORDER_BYTES // (8 * max(1, found.shape[1] * X.shape[1])))
    for lo in range(0, len(found), step):
        diff = X[found[lo : lo + step]] - Qb[lo : lo + step, None, :]
        d2[lo : lo + step] = np.einsum("ijk,ijk->ij", diff, diff)
    order = np.lexsort((found, d2), axis=-1)[:, :depth]
    return (np.take_along_axis(found, order, axis=1).astype(np.int32),
            np.take_along_axis(d2, order, axis=1))


def _drop_self(found: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Each row of ``found`` without the query itself (or its last entry, when duplicates
    of the query pushed it out of the list)."""
    is_self = found == rows[:, None]
    missing = ~is_self.any(axis=1)
    is_self[missing, -1] = True
    return found[~is_self].reshape(len(found), found.shape[1] - 1)
