"""Approximate neighbour lists: a graph index instead of brute force, opt-in.

Exact nearest-neighbour search in 20 or more dimensions is brute force here:
every query against every training row, so the neighbour lists of N rows cost
N x N distances and grow with N squared (at 100,000 rows they are 80% of a
thresholding Data-OOB run; scikit-learn's ball and KD trees are slower still
in 20 dimensions, docs/benchmarks.md). A hierarchical navigable small-world
graph (HNSW, Malkov & Yashunin 2018; faiss's ``IndexHNSWFlat``) is built in
about N log N and answers a query in about log N, at the price of now and
then missing a true neighbour.

What that costs and how it is bounded:

* The graph proposes ``depth + CANDIDATE_MARGIN`` candidates in float32; their
  distances are then recomputed exactly in float64 and the lists sorted by
  them (ties by row number), as the exact search's are. So a list holds true
  distances in the true order; what it may lack is a row that the graph did
  not reach. On ``make_classification`` (20 features) the lists held 99.99%,
  99.79% and 99.40% of the exact 36-row lists' rows at 1,000, 10,000 and 100,000
  rows (``benchmarks/scale.py``, the ``default_approx`` cells' list recall).
* A model "fitted" on a subset predicts from those lists, so its predictions
  are those of a k-NN on approximately nearest rows, not always scikit-learn's
  refit: the run's path note says "approximate". Valuations use it (a ranking
  of rows tolerates a neighbour missed now and then); the cleansing protocol's
  scores, what the user reads as their model's accuracy, never do.
* The graph is built on one thread with faiss's fixed level seed and the rows
  inserted in order, so the same rows give the same graph and the same lists
  on every run (queries are independent, so they may use every thread).
* A query for which the graph returns fewer candidates than asked (tiny or
  degenerate data) is searched exactly instead.
* From 20,000 queries on, they are searched region by region (k-means clusters
  of a sample): the same candidates in less time, because queries from one region
  reuse the part of the graph already in the caches (``benchmarks/scale.py
  --locality-check N`` times both orders and checks the candidates are equal).

faiss is an optional dependency: ``pip install 'tdshap[scale]'``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

#: neighbours per node of the graph (faiss's ``M``; level 0 keeps twice as many)
HNSW_M = 24
#: candidates kept while building (faiss's ``efConstruction``)
EF_CONSTRUCTION = 64
#: candidates kept while searching (faiss's ``efSearch``), at least the list length
EF_SEARCH = 96
#: candidates asked for beyond the list's length, re-sorted by exact distance
CANDIDATE_MARGIN = 8
#: queries from which they are searched region by region (see locality_order)
LOCALITY_FROM = 20_000
#: rows the regions are learned from, and rows per region
LOCALITY_SAMPLE = 50_000
LOCALITY_REGION = 1_000
#: what to tell a user without faiss
INSTALL_HINT = "pip install 'tdshap[scale]' (or pip install faiss-cpu)"

SEARCHES = ("exact", "approximate")


def check_search(search: Any) -> str:
    """``search`` if it is one of :data:`SEARCHES` and usable here, else ``ValueError``."""
    if not isinstance(search, str) or search not in SEARCHES:
        raise ValueError(f"neighbor_search={search!r} must be one of {SEARCHES}.")
    if search == "approximate":
        load_faiss()
    return search


def load_faiss() -> Any:
    """The faiss module, or a ``ValueError`` saying how to install it."""
    try:
        import faiss
    except ImportError:
        raise ValueError("neighbor_search='approximate' needs faiss, which is not "
                         f"installed: {INSTALL_HINT}; or use neighbor_search='exact'.") from None
    return faiss


def index_bytes(n: int, d: int) -> int:
    """Bytes the graph of ``n`` rows in ``d`` dimensions holds (float32 rows, int32 links:
    ``2 M`` at level 0 and about ``M / (M - 1)`` above)."""
    return n * (4 * d + 4 * (2 * HNSW_M + 2))


@contextmanager
def _threads(faiss: Any, n: int) -> Iterator[None]:
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def locality_order(Q: np.ndarray) -> np.ndarray:
    """An order of the query rows that takes them region by region (k-means clusters
    learned on a sample), or their own order below :data:`LOCALITY_FROM` rows.

    Each query is searched on its own, so its candidates do not depend on the order;
    but queries from one region walk the same part of the graph, which then stays in
    the caches (measured by ``benchmarks/scale.py --locality-check``).
    """
    m = len(Q)
    if m < LOCALITY_FROM:
        return np.arange(m)
    from sklearn.cluster import MiniBatchKMeans

    rng = np.random.default_rng(0)
    sample = Q[rng.choice(m, size=min(m, LOCALITY_SAMPLE), replace=False)]
    regions = MiniBatchKMeans(n_clusters=min(1024, max(8, m // LOCALITY_REGION)),
                              batch_size=4096, n_init=1, random_state=0).fit(sample)
    return np.argsort(regions.predict(Q), kind="stable")


class CandidateGraph:
    """The graph of the training rows ``X``; :meth:`search` gives, for query rows, the
    ``wanted`` training rows it finds nearest (int64, ``-1`` where it found fewer).
    Queries are searched as they come, so a caller holds one block's candidates at a
    time."""

    def __init__(self, X: np.ndarray) -> None:
        faiss = load_faiss()
        # float32 keeps 7 digits: rows far from the origin (a column around 1e7) or
        # beyond its range (1e39, 1e-46) would lose their differences, so the rows are
        # centred and scaled by a power of two first (distances keep their order; the
        # lists' distances are recomputed from the original rows)
        self.centre = X.mean(axis=0) if len(X) else np.zeros(X.shape[1])
        # the largest |x - centre| from the columns' ends (no copy of X)
        spread = float(np.max(np.maximum(X.max(axis=0) - self.centre,
                                         self.centre - X.min(axis=0)))) if X.size else 0.0
        self.scale = 2.0 ** -np.floor(np.log2(spread)) if spread > 0 else 1.0
        self.graph = faiss.IndexHNSWFlat(X.shape[1], HNSW_M)
        self.graph.hnsw.efConstruction = EF_CONSTRUCTION
        # several threads insert rows in a racy order: one thread gives one graph
        with _threads(faiss, 1):
            self.graph.add(self._float32(X))

    def _float32(self, rows: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.clip((rows - self.centre) * self.scale, -1e30, 1e30),
                                    dtype=np.float32)

    def search(self, Q: np.ndarray, wanted: int) -> np.ndarray:
        self.graph.hnsw.efSearch = max(EF_SEARCH, wanted)
        _, found = self.graph.search(self._float32(Q), wanted)
        return np.asarray(found, dtype=np.int64)
