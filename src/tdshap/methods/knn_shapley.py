"""Exact data Shapley values of the k-nearest-neighbour utility (Jia et al., VLDB 2019).

Jia, Dao, Wang, Hubis, Gürel, Li, Zhang, Spanos: "Efficient task-specific
data valuation for nearest neighbor algorithms". For one validation point
``v`` let ``α_1, ..., α_N`` be the training rows by increasing distance to
``v`` (ties by row position) and ``top(S)`` the ``min(K, |S|)`` rows of a
subset ``S`` nearest to ``v``.

Classification
    ``U_v(S) = (1/K) #{i in top(S): y_i = y_v}`` (the k-NN's probability of
    the right label; 0 for the empty set). With ``w_i = 1[y_{α_i} = y_v]``
    the Shapley values follow from one backward recursion (their Theorem 1):
    ``s_N = w_N min(K, N) / (K N)`` (``w_N / N`` when ``N >= K``) and
    ``s_i = s_{i+1} + (w_i - w_{i+1}) min(K, i) / (K i)``.

Regression
    ``U_v(S) = -((1/K) Σ_{i in top(S)} y_i - y_v)²`` (the negative squared
    error of the k-NN mean, with the sum divided by K even when ``|S| < K``,
    as in the paper; ``U_v(∅) = -y_v²``). Expanding the square leaves the
    linear game above with weights ``y`` and ``y²`` and a pair game
    ``P(S) = Σ_{i<j in top(S)} y_i y_j``. A pair ``(i, j)`` (``i`` nearer) is in
    ``top(S)`` when both are in ``S`` and at most ``K - 2`` of the ``j - 2`` other
    rows nearer than ``j`` are; in that game of ``j`` players each of the two
    has Shapley value ``1/2`` if ``j <= K`` else ``K(K-1) / (2 j (j-1))``, each
    nearer row ``-K(K-1) / (j (j-1) (j-2))`` if ``j > K`` else 0, and farther
    rows 0. Prefix and suffix sums give all N values in O(N). (Our
    derivation; the tests check it against enumeration.)

    With ``center=True`` (the default) the targets are first centred on the
    training mean, so that the empty set and subsets of fewer than K rows
    shrink towards the mean, not towards 0 (the constant the library's
    other methods score the empty set with). On the detection benchmark
    (``benchmarks/detection.py``) this raised the AUROC of planted target
    noise from about 0.8 to about 0.97; ``center=False`` is the paper's
    utility as written, which favours rows with large targets on any data
    whose mean is far from 0.

Each validation point costs one sort, O(N log N); the value of a row is
the mean over validation points (the utility is their mean). Validation
points are processed in chunks so that no array bigger than about
``MAX_CHUNK_ENTRIES`` entries is held (but for the training rows' distances to each
other, computed once up to ``MAX_SQUARE_ENTRIES`` entries).

The training rows as queries (``queries="training"``)
    Every training row ``j`` is a query for the others, its own label the
    target: the utility is ``U(S) = (1/N) Σ_j U_j(S \\ {j})``. Row ``j`` is a
    null player of its own query's game, so a row's value is the mean over
    the *other* rows' queries of its exact value in their games (each from
    the recursions above on the N - 1 other rows), and 0 from its own. The
    values never see the validation rows, so the validation rows judge the
    cut without the optimism of having chosen the rows
    (``extra["validation_free"]``), as out-of-bag values do. A row is valued
    by what it does to its neighbours' predictions: a wrong label lowers
    the k-NN's probability of every neighbour's own label. On the detection
    benchmark's eleven sets with a 5-NN (``benchmarks/detection.py``,
    docs/benchmarks.md) it ranks planted noise as well as thresholding
    Data-OOB on classification and its cut gains more. Cost: N sorts of N - 1
    rows, O(N² log N) (about 0.6 s at 5,000 rows on one core).
    ``variances`` are the spread of a row's contributions over the N
    queries, so the intervals say how much the value rests on which rows
    were sampled; the values themselves are exact for these rows, and the
    cut takes the rows below ``tau`` as they are (``extra["eligible_by"]``).

    With ``own_label=True`` a row's own query counts for it too (a variant, not a
    Shapley value): in place of the 0 it has as a null player of its own game, the row
    is credited with how well its K nearest other rows, the k-NN without it, back its
    own label. Classification: their votes for its label less those for the likeliest
    other label, over K (in [-1, 1]; below 0 where the k-NN without the row predicts
    another label). Regression: the mean squared error of the k-NN without each row on
    its own target less the row's own (centred, so the own terms sum to 0 and only
    move value between rows). A wrong label both lowers the neighbours' predictions
    (the Shapley part) and is contradicted by them (this part); the Shapley part
    alone blames a right label for the wrong labels near it, which its own query then
    answers. It ranks planted noise better, but a cut along it gained less and removed
    more of a real noisy target, so ``find_harmful`` does not use it (docs/benchmarks.md,
    "A row's own query").

    With ``query_clip=c`` (regression) each row's target, as the target of its own
    query, is first moved to within ``c`` robust standard deviations of what its K
    nearest other rows predict (the residuals' 1.4826 x median absolute deviation over
    all rows); as a neighbour the row keeps its target. A far-off target, planted noise
    or a heavy tail, then still lowers its neighbours' predictions of their targets, but
    as a query it no longer blames its right neighbours, by the square of its error, for
    not predicting it. The values are the exact Shapley values of that game (the tests
    enumerate it).

Both (``queries="both"``)
    ``U(S) = ½ (1/N) Σ_j U_j(S \\ {j}) + ½ (1/M) Σ_v U_v(S)``: the training
    rows' game above and the validation rows' (Jia et al.), weighing equally,
    so the value is the mean of the two modes' values. The validation rows'
    labels are clean where training labels may not be; on the detection
    benchmark this ranked planted noise best and its cut gained most
    (docs/benchmarks.md). The values have seen the validation rows, so they
    also carry a cross-fit (:mod:`tdshap.cross_fit`, ``n_folds`` folds of the
    validation rows; ``extra["cross_fit"]``): for each fold, the rows below
    ``tau`` when that fold's queries are left out, and every row's value
    then, so that the cut's named comparison, and its check of the paper's
    larger cut, are made on validation rows that had no part in choosing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial.distance import cdist, pdist, squareform
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import Pipeline

from tdshap._validation import (
    check_columns_by_position,
    check_columns_in_order,
    check_data,
    check_flags,
    check_number,
    check_shared_classes,
    check_squarable,
    warn_one_class,
    warn_unseen_classes,
)
from tdshap.cross_fit import DEFAULT_FOLDS, CrossFit, make_folds
from tdshap.methods.direct import DirectValuation
from tdshap.utility.fast.pipeline import head_features

#: entries of one chunk's queries x training rows arrays: 1 MiB each as float64, so that
#: the few a chunk's sums pass over again and again stay in a core's cache (L2 is 1 MiB
#: a core on the development machine); 2**20 (8 MiB) streamed them from memory and took
#: 1.2-1.4x as long at 3,000 rows (benchmarks/knn_shapley_speed.py, docs/benchmarks.md)
MAX_CHUNK_ENTRIES = 2**17
#: up to this many entries (32 MiB; 2,048 training rows), the training rows' squared
#: distances to each other are computed once, as the symmetric half, and read chunk by chunk
MAX_SQUARE_ENTRIES = 2**22
DEFAULT_NEIGHBORS = 5
#: regression targets (as centred) below this have squares near float64's smallest
#: normal number (1e-280 against 2e-308), with no room for the division by K² and N
SMALLEST_TARGETS = 1e-140
#: the closed form multiplies K by ranks up to N in numpy's int64: K at most 2**31 - 1 keeps
#: that exact for any N below 2**32 (beyond, 1e300 raised an OverflowError from deep inside
#: and 10**18 wrapped round to wrong values); every K >= N values the rows as K = N does,
#: divided by K, so no larger K says more
MAX_NEIGHBORS = 2**31 - 1
#: _rank's integer keys give a distance's lowest bits to its column: past this many
#: (columns beyond 2**24), two distances 2**-28 apart would share most keys and be
#: checked one row at a time, so argsort is used instead
_KEY_MAX_BITS = 24
_INF_BITS = int(np.array(np.inf).view(np.uint64))
#: from this many features on, squared distances come from one matrix product
#: (``|a|² + |b|² - 2 a·b``, as scikit-learn's brute-force neighbours compute them)
#: instead of scipy's feature-by-feature sums: about 2x faster at 20 features, 6x at 784
#: (benchmarks/knn_distances.py). Whole-number features give exact distances either way.
_PRODUCT_MIN_FEATURES = 16
_METRICS = {"classification": ("accuracy",), "regression": ("neg_mse", "neg_mean_squared_error")}
#: who queries the training rows: the validation rows (Jia et al.), the training rows, or
#: both, weighing equally
QUERIES = ("validation", "training", "both")


def _steps(n: int, k: int) -> np.ndarray:
    """``min(K, i) / (K i)`` for the ranks ``i = 1..n``: the linear game's weight of a
    change of ``w`` between ranks ``i`` and ``i + 1``."""
    rank = np.arange(1, n + 1)
    return np.minimum(k, rank) / (k * rank)


def _far_steps(w: np.ndarray, k: int, out: np.ndarray) -> np.ndarray:
    """The linear game's steps ``(w_i - w_{i+1}) min(K, i) / (K i)`` written into
    ``out[:, :-1]``, returned as seen from the far end (a view): summed along it in
    place, they are the values less the last rank's, with no temporaries."""
    far_first = out[:, -2::-1]
    np.subtract(w[:, -2::-1], w[:, :0:-1], out=far_first, dtype=float)
    far_first *= _steps(w.shape[1] - 1, k)[::-1]
    return far_first


def linear_knn_shapley(w: np.ndarray, k: int) -> np.ndarray:
    """Shapley values of ``(1/k) Σ_{i in top(S)} w_i``, rows sorted by distance (row-wise)."""
    n = w.shape[1]
    out = np.empty_like(w, dtype=float)
    if w.dtype == bool:  # 0/1 weights (a label's matches) need not be made floats first
        w = w.view(np.int8)
    far_first = _far_steps(w, k, out)
    np.cumsum(far_first, axis=1, out=far_first)
    out[:, -1] = w[:, -1] * min(k, n) / (k * n)
    out[:, :-1] += out[:, -1:]
    return out


def squared_error_knn_shapley(w: np.ndarray, t: np.ndarray, k: int) -> np.ndarray:
    """Shapley values of ``-((1/k) Σ_{i in top(S)} w_i - t)²`` (each row's target ``t``,
    shape ``(queries, 1)``), rows of ``w`` sorted by distance (row-wise).

    The square is a linear game in ``g = 2 t w - w² / k`` less ``2 / k²`` times the pair
    game ``Σ_{i<j in top(S)} w_i w_j`` (module docstring). With ``B_i`` the sum of ``w``
    nearer than rank ``i``, ``e_j`` the value of each row of a pair whose farther row
    has rank ``j`` and ``b_j`` that of each row nearer than it, a row's pair value is
    ``w_i e_i B_i + w_i Σ_{j>i} w_j (e_j - b_j) + Σ_{j>i} w_j b_j B_j``. The last sum
    and the linear game's both run from the far end, so they are one running sum: three
    in all (``B``, that one, and the middle sum). Each is a pass of ``np.cumsum``, about
    3 ns an entry (each addition waits for the one before), most of the time after the
    sort.
    """
    n = w.shape[1]
    rank = np.arange(1, n + 1, dtype=float)
    far = rank > k
    with np.errstate(divide="ignore", invalid="ignore"):
        ends = np.where(far, k * (k - 1) / (2 * rank * (rank - 1)), 0.5)
        # (k = 1 has no pairs: 0/0 at rank 2)
        nearer = np.where(rank > max(k, 2), -k * (k - 1) / (rank * (rank - 1) * (rank - 2)),
                          0.0)
    # the pair game's coefficients times its weight in the square, 2 / k²
    ends, nearer = ends * (2.0 / k**2), nearer * (2.0 / k**2)
    g = w * (2 * t - w / k)
    before = np.empty_like(w)  # B: Σ of w over the rows nearer than each rank
    before[:, 0] = 0.0
    np.cumsum(w[:, :-1], axis=1, out=before[:, 1:])
    out = np.empty_like(w)
    # out[:, i] (i < n - 1): the linear game's step after rank i less the pair sum's term
    # of rank i + 1, summed from the far end in place
    far_first = _far_steps(g, k, out)
    term = w * nearer
    term *= before
    out[:, :-1] -= term[:, 1:]
    np.cumsum(far_first, axis=1, out=far_first)
    out[:, -1] = 0.0
    out += g[:, -1:] * (min(k, n) / (k * n))
    # Σ_{j>i} w_j (e_j - b_j): each rank's term one rank nearer, summed from the far end
    after = np.multiply(w[:, 1:], (ends - nearer)[1:], out=term[:, :-1])
    np.cumsum(after[:, ::-1], axis=1, out=after[:, ::-1])
    term[:, -1] = 0.0
    term += np.multiply(before, ends, out=before)
    term *= w
    out -= term
    return out


def knn_shapley_problem(estimator: Any) -> str | None:
    """Why :class:`KNNShapley` cannot value ``estimator`` (None: it can)."""
    model = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
    if not isinstance(model, KNeighborsClassifier | KNeighborsRegressor):
        return f"{type(model).__name__} is not a KNeighborsClassifier / KNeighborsRegressor"
    try:
        _knn_model(estimator)
    except ValueError as why:
        return str(why)
    return None


def knn_shapley_task(estimator: Any) -> str:
    """``"classification"`` or ``"regression"``: the kind of the k-NN ``estimator`` ends in."""
    return ("classification" if isinstance(_knn_model(estimator), KNeighborsClassifier)
            else "regression")


def _knn_model(estimator: Any) -> Any:
    """The k-NN at the end of ``estimator`` (a Pipeline or not), checked."""
    model = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
    if not isinstance(model, KNeighborsClassifier | KNeighborsRegressor):
        raise ValueError(
            f"estimator={estimator!r}: KNNShapley values rows for a k-nearest-neighbour "
            "model; give a KNeighborsClassifier / KNeighborsRegressor (or a Pipeline ending in "
            "one), or None and n_neighbors."
        )
    # scikit-learn checks it only when fitting; the closed form never fits the model
    check_number(model.n_neighbors, "n_neighbors", low=1, high=MAX_NEIGHBORS, integer=True,
                 hint=f"It is the {type(model).__name__}'s number of neighbours, e.g. 5.")
    if model.weights != "uniform":
        raise ValueError(f"weights={model.weights!r}: the closed form is for weights='uniform'.")
    euclidean = model.metric in ("euclidean", "l2") or (
        model.metric == "minkowski" and model.p == 2 and not model.metric_params)
    if not euclidean:  # p and metric_params shown too: metric='minkowski' alone may be l2
        shown = f"metric={model.metric!r}" + (
            f", p={model.p!r}" if model.metric == "minkowski" else "") + (
            f", metric_params={model.metric_params!r}" if model.metric_params else "")
        raise ValueError(f"{shown}: KNNShapley uses the Euclidean distance.")
    return model


class KNNShapley(DirectValuation):
    """Exact data Shapley values for the k-nearest-neighbour utility (closed form).

    Parameters
    ----------
    estimator:
        ``None``, or a ``KNeighborsClassifier`` / ``KNeighborsRegressor`` (or a
        ``Pipeline`` ending in one) whose ``n_neighbors`` and task are used.
        A pipeline's earlier steps are fitted once on all training rows and
        applied to both sets. Only uniform weights and the Euclidean
        distance have the closed form; others are a ``ValueError``.
    metric:
        ``None``: the utility is fixed, the k-NN's probability of the right
        label (classification) or its negative squared error (regression).
        ``"accuracy"`` / ``"neg_mse"`` are accepted for those; others raise.
    n_neighbors:
        K; ``None`` takes the estimator's, or 5.
    task:
        ``"classification"`` or ``"regression"``; ``None``: the estimator's
        kind, or regression when ``y`` holds fractional floats.
    center:
        Regression only: centre ``y`` and ``y_val`` on the mean of ``y``
        first (see the module docstring); values are then unchanged when a
        constant is added to every target.
    tau:
        ``is_harmful`` is ``value <= tau``. The default 0: a row of value 0
        adds nothing on average over subsets and a negative one lowers the
        k-NN's utility, so both are rows the model is at least as well
        without. For noisy labels the most useful rows to inspect are the
        most negative; ``result_.ranking()`` orders them.
    queries:
        ``"validation"`` (Jia et al.): the values are means over the
        validation rows. ``"training"``: over the training rows, each a query
        for the others (see the module docstring); ``X_val``/``y_val`` are
        then not used and may be omitted. ``"both"``: half of each, with a
        cross-fit of the validation rows for an honest cut.
    n_folds:
        ``queries="both"``: folds of the validation rows for the cross-fit
        (fewer when there are fewer validation rows; none below 2 rows).
    batch_size:
        Query points per chunk; ``None`` keeps a chunk's arrays under
        ``MAX_CHUNK_ENTRIES`` entries.
    own_label:
        With training queries (``"training"`` or ``"both"``): each row's own
        query adds its k-NN's support for the row's label (see the module
        docstring); ``False``: exact Shapley values.
    query_clip:
        Regression with training queries: each training row's target, as the
        target of its own query, is first moved to within this many robust
        standard deviations of what its K nearest other rows predict (see the
        module docstring); the rows' targets as neighbours are not changed.
        ``None``: the targets as given.
    random_state:
        Accepted for a common interface; the values are exact and
        deterministic.

    Attributes
    ----------
    values_, harmful_, result_:
        Values (mean over validation points), ``values_ <= tau``, and the
        :class:`~tdshap.result.ValuationResult`. Its ``counts`` are the number
        of query points; with validation queries its variances are 0 (the
        values are exact for this validation set), with training queries
        they are the spread of each row's contributions over the queries.
    n_neighbors_, task_:
        What was used.
    """

    algorithm = "knn_shapley"

    def __init__(
        self,
        estimator: Any = None,
        metric: Any = None,
        n_neighbors: int | None = None,
        task: str | None = None,
        center: bool = True,
        tau: float = 0.0,
        queries: str = "validation",
        n_folds: int = DEFAULT_FOLDS,
        batch_size: int | None = None,
        random_state: Any = None,
        progress: bool = False,
        own_label: bool = False,
        query_clip: float | None = None,
    ) -> None:
        self.estimator = estimator
        self.metric = metric
        self.n_neighbors = n_neighbors
        self.task = task
        self.center = center
        self.tau = tau
        self.queries = queries
        self.n_folds = n_folds
        self.batch_size = batch_size
        self.random_state = random_state
        self.progress = progress
        self.own_label = own_label
        self.query_clip = query_clip

    def _resolve_k(self) -> int:
        if self.n_neighbors is not None:
            check_number(self.n_neighbors, "n_neighbors", low=1, high=MAX_NEIGHBORS,
                         integer=True, hint="It is the k-NN's number of neighbours, e.g. 5.")
            return int(self.n_neighbors)
        if self.estimator is not None:
            return int(_knn_model(self.estimator).n_neighbors)
        return DEFAULT_NEIGHBORS

    def fit(self, X: Any, y: Any, X_val: Any = None, y_val: Any = None) -> KNNShapley:
        """Value every row of ``(X, y)`` by its exact k-NN Shapley value on the queries
        (``(X_val, y_val)``, the training rows themselves, or both: ``queries``)."""
        if self.queries not in QUERIES:
            raise ValueError(f"queries={self.queries!r} must be one of {QUERIES}: the "
                             "validation rows (Jia et al.), the training rows, or both.")
        training = self.queries in ("training", "both")
        validation = self.queries in ("validation", "both")
        # "no" was truthy: the targets centred
        check_flags(center=self.center, own_label=self.own_label)
        if self.query_clip is not None:
            check_number(self.query_clip, "query_clip", low=0.0, hint="It is a number of "
                         "robust standard deviations, e.g. 3; None clips nothing.")
            if not training:
                raise ValueError("query_clip clips the training rows' targets as queries: it "
                                 "needs queries 'training' or 'both' (or query_clip=None).")
        if self.own_label and not training:
            raise ValueError("own_label=True credits each row with its own query: it needs "
                             "the training rows as queries (queries 'training' or 'both').")
        Xa, ya = self._start(X, y)
        if not validation and (X_val is None or y_val is None):
            Xv, yv = Xa[:1], ya[:1]  # checked for shape only: not used
        elif X_val is None or y_val is None:
            raise ValueError(f"KNNShapley with queries={self.queries!r} needs X_val and y_val; "
                             "give them, or queries='training' to value the rows on each "
                             "other.")
        else:
            _, _, Xv, yv = check_data(Xa, ya, X_val, y_val)
            check_columns_in_order(X, X_val, "X", "X_val")  # Xa has no column names
        Xv_given, yv_given = Xv, yv  # the cut recognises the validation rows as given
        if self.estimator is not None:
            _knn_model(self.estimator)
            check_columns_by_position(self.estimator)
            Xa, Xv = head_features(self.estimator, Xa, ya, Xv, method="KNNShapley")
        if Xa.ndim != 2:  # scipy's distances would refuse it from deep inside
            raise ValueError(f"KNNShapley measures distances between rows of features: X must "
                             f"be 2-D (rows x features), got shape {Xa.shape}; flatten it "
                             "(X.reshape(len(X), -1)), or in a Pipeline step before the k-NN.")
        k = self._resolve_k()
        task = self._resolve_task(ya, self.estimator)
        self._check_fixed_metric(task, _METRICS)
        if task == "classification" and validation:
            check_shared_classes(ya, yv)
            warn_one_class(yv)
            warn_unseen_classes(ya, yv)
        if training and len(ya) < 2:
            raise ValueError(f"queries={self.queries!r} needs at least 2 training rows: each "
                             "row is valued by what it does to the others.")
        self._check_target_varies(ya, task == "classification")
        if task == "regression":
            if ya.dtype.kind not in "biuf" or yv.dtype.kind not in "biuf":
                raise ValueError("regression needs numeric targets in y and y_val.")
            # each query's squared errors are summed over the training rows; with training
            # queries the values' squares too, for their spread (else NaN variances)
            check_squarable(np.concatenate([ya, yv]).astype(float), "y (with y_val)",
                            len(ya) + len(yv), power=4 if training else 2)
            shift = float(np.mean(ya)) if self.center else 0.0
            ya, yv = ya.astype(float) - shift, yv.astype(float) - shift
            # the values are in squared units: targets of 1e-200 gave values of 0, and so
            # every row harmful at tau=0, silently
            scale = float(np.abs(ya).max())
            if 0 < scale < SMALLEST_TARGETS:
                raise ValueError(f"y's targets are too small to square (at most {scale:.3g}"
                                 f"{' from their mean' if self.center else ''}): the values "
                                 "would underflow to 0; rescale y, e.g. to other units.")
        if self.batch_size is not None:
            check_number(self.batch_size, "batch_size", low=1, integer=True)
        check_number(self.n_folds, "n_folds", low=2, integer=True)
        self.n_neighbors_, self.task_ = k, task
        n = len(ya)
        extra: dict[str, Any] = {"n_neighbors": k, "task": task, "center": bool(self.center),
                                 "queries": self.queries, "own_label": bool(self.own_label)}
        if task == "classification":
            # small integer codes in place of the labels, whatever their type (in the labels'
            # sorted order, so the folds below are the same): each chunk gathers and
            # compares N labels a query
            codes = np.unique(np.concatenate([ya, yv]), return_inverse=True)[1].ravel()
            codes = codes.astype(np.min_scalar_type(codes.max()))
            ya, yv = codes[:n], codes[n:]
        _keep_freed_memory()
        modes = []  # (value sums per group of queries, squares, queries per group)
        if training:
            if self.query_clip is not None and task != "regression":
                # whole-number targets (counts, 1e70) are read as classes when nothing says
                # the task: the fix is then the task, not dropping the clip
                read = self.task is None and self.estimator is None
                raise ValueError("query_clip is for regression targets; a class label cannot "
                                 "be clipped: " + (
                                     "y holds whole numbers, read as class labels; give "
                                     "task='regression' if it is a quantity, or "
                                     "query_clip=None." if read else "give query_clip=None."))
            yq = ya
            # the training rows against themselves, once for all that use them: the
            # symmetric half suffices (the same sums of squared differences, half the time)
            square = squared_distances(Xa) if n * n <= MAX_SQUARE_ENTRIES else None
            if self.query_clip is not None:
                predicted = self._others_predict(Xa, ya, k, square)
                yq = clipped_targets(ya, predicted, float(self.query_clip))
                extra.update(query_clip=float(self.query_clip))
            modes.append(self._sums(Xa, ya, Xa, yq, k, task, np.zeros(n, dtype=np.int64), 1,
                                    own=True, spread=True, own_label=bool(self.own_label),
                                    square=square))
        folds = np.zeros(len(yv), dtype=np.int64)
        n_folds = 1
        if validation:
            if self.queries == "both" and len(yv) >= 2:
                n_folds = min(int(self.n_folds), len(yv))
                rng = np.random.default_rng(self.random_state)
                folds = make_folds(yv, n_folds, rng, stratify=task == "classification")
            modes.append(self._sums(Xa, ya, Xv, yv, k, task, folds, n_folds, own=False,
                                    spread=training))
        values, variances, counts = _mix([(t.sum(0), q, c.sum()) for t, q, c in modes])
        if not training:
            variances = np.zeros(n)  # exact for this validation set
        else:
            # the spread over queries; the values are exact for these rows, so the cut
            # takes the rows below tau as they are (tdshap.cut.eligible_rows)
            extra.update(eligible_by="value")
            if not validation:
                extra.update(validation_free=True)
        if self.queries == "both" and n_folds > 1:
            (t_sum, _, t_n), (v_sums, _, v_n) = modes
            train = t_sum[0] / t_n[0]
            # each fold's values: the same mean with that fold's validation queries left out
            rest = [np.arange(n_folds) != f for f in range(n_folds)]
            fold_values = tuple(0.5 * train + 0.5 * v_sums[r].sum(0) / v_n[r].sum()
                                for r in rest)
            flagged = tuple(np.flatnonzero(v < self.tau) for v in fold_values)
            extra["cross_fit"] = CrossFit.made(Xv_given, yv_given, folds, flagged,
                                               fold_values).to_extra()
        self._finish(values=values, counts=np.full(n, counts, dtype=np.int64),
                     variances=variances, extra=extra)
        return self

    def _sums(self, Xa: np.ndarray, ya: np.ndarray, Xq: np.ndarray, yq: np.ndarray, k: int,
              task: str, groups: np.ndarray, n_groups: int, own: bool, spread: bool,
              own_label: bool = False, square: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every row's values summed over the queries of each group ``(n_groups, N)``, their
        squares summed over all queries ``(N,)`` (zeros unless ``spread``: only intervals
        need them), and the queries per group.

        ``own``: the queries are the training rows, each left out of its own game;
        ``own_label`` (with ``own``): each row's own query adds :func:`own_label_terms`.
        ``square`` (with ``own``): the training rows' squared distances to each other,
        when computed once (each chunk's rows are changed in place).
        """
        n = len(ya)
        support = np.zeros(n) if own_label else None
        # the queries are the training rows: their labels as class codes, found once
        codes = np.unique(ya, return_inverse=True)[1].ravel() \
            if own_label and task == "classification" else None
        chunk = self._chunk_rows(n)
        total, squares = np.zeros((n_groups, n)), np.zeros(n)
        # each chunk's values put back in their rows' columns, one write an entry, then
        # summed down the columns (bincount's read-add-write an entry took twice as long)
        placed = np.empty((min(chunk, len(yq)), n))
        starts = np.arange(len(placed))[:, None] * n
        for lo in range(0, len(yq), chunk):
            rows = np.arange(lo, min(lo + chunk, len(yq)))
            order, phi = self._chunk(Xa, ya, Xq[rows], yq[rows], k, task, rows if own else None,
                                     dist=None if square is None else square[lo:lo + len(rows)])
            if support is not None:
                support[rows] = own_label_support(order[:, :k], ya, rows, k, codes)
            block = placed[:len(rows)]
            block.ravel()[(order + starts[:len(rows)]).ravel()] = phi.ravel()
            if own:  # a row is no player of its own query's game (and not in its order)
                block[np.arange(len(rows)), rows] = 0.0
            if n_groups == 1:
                total[0] += block.sum(axis=0)
            else:  # each query's values to its group's sums
                total += np.equal.outer(np.arange(n_groups), groups[rows]).astype(float) @ block
            if spread:
                squares += np.einsum("ij,ij->j", block, block)
        if support is not None:
            terms = own_label_terms(support, task)
            total[0] += terms  # one group: every training row is a query of group 0
            squares += np.square(terms) if spread else 0.0
        return total, squares, np.bincount(groups, minlength=n_groups)

    def _chunk_rows(self, n: int) -> int:
        """Queries per chunk: ``batch_size``, or as many as keep a chunk's arrays (queries x
        ``n`` rows) under :data:`MAX_CHUNK_ENTRIES` entries."""
        return int(self.batch_size or max(1, MAX_CHUNK_ENTRIES // n))

    def _others_predict(self, Xa: np.ndarray, ya: np.ndarray, k: int,
                        square: np.ndarray | None = None) -> np.ndarray:
        """Each training row's k-NN prediction by its ``k`` nearest other rows (ties by row
        position; the sum over K, as the utility's), in chunks as :meth:`_sums` (``square``:
        all the rows' squared distances, when computed once; changed in place)."""
        n = len(ya)
        chunk = self._chunk_rows(n)
        predicted = np.empty(n)
        for lo in range(0, n, chunk):
            rows = np.arange(lo, min(lo + chunk, n))
            dist = squared_distances(Xa[rows], Xa) if square is None else square[lo:lo + len(rows)]
            dist[np.arange(len(rows)), rows] = np.inf  # never among the others (as _chunk)
            predicted[rows] = nearest_sums(dist, ya, min(k, n - 1)) / k
        return predicted

    @staticmethod
    def _chunk(X: np.ndarray, y: np.ndarray, Xv: np.ndarray, yv: np.ndarray, k: int,
               task: str, own: np.ndarray | None = None, dist: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Each query's training rows from nearest to farthest ``(queries, N)``, and their
        values in that query's game, in that order.

        ``own``: the training row each query is (training queries); that row
        is left out of its own query's game (and of the order). ``dist``: the squared
        distances of these queries, when already computed.
        """
        if dist is None:
            dist = squared_distances(Xv, X)
        if own is not None:
            dist[np.arange(len(own)), own] = np.inf  # last in the order, then dropped
        order = _rank(dist)
        if own is not None:
            order = order[:, :-1]
        if task == "classification":
            phi = linear_knn_shapley(y[order] == yv[:, None], k)
        else:
            phi = squared_error_knn_shapley(np.asarray(y, dtype=float)[order],
                                            np.asarray(yv, dtype=float)[:, None], k)
        return order, phi


def clipped_targets(y: np.ndarray, predicted: np.ndarray, width: float) -> np.ndarray:
    """``y`` moved to within ``width`` robust standard deviations of ``predicted`` (each
    row's k-NN prediction by the other rows): the residuals clipped at ``width`` x 1.4826 x
    their median absolute deviation (the standard deviation for normal residuals, unmoved
    by a few outliers; their standard deviation where more than half are equal). Around
    the prediction, not the targets' median: a skewed target's long tail is no outlier
    where its neighbours share it."""
    residuals = y - predicted
    spread = 1.4826 * float(np.median(np.abs(residuals - np.median(residuals)))) \
        or float(np.std(residuals))
    return predicted + np.clip(residuals, -width * spread, width * spread)


def own_label_support(nearest: np.ndarray, y: np.ndarray, rows: np.ndarray, k: int,
                      codes: np.ndarray | None) -> np.ndarray:
    """How the K nearest other rows (``nearest``, positions, nearest first) of the training
    rows ``rows`` back each row's own label: with class ``codes`` (classification), their
    votes for it less those for the likeliest other label, over K; without (regression),
    minus the squared error of their mean (the sum over K, as the utility's) on ``y``."""
    if codes is None:
        return -np.square(y[nearest].sum(axis=1) / k - y[rows])
    m, n_classes = len(rows), int(codes.max()) + 1
    votes = np.bincount((np.arange(m)[:, None] * n_classes + codes[nearest]).ravel(),
                        minlength=m * n_classes).reshape(m, n_classes)
    own = codes[rows]
    backing = votes[np.arange(m), own]
    votes[np.arange(m), own] = 0
    return (backing - votes.max(axis=1)) / k


def own_label_terms(support: np.ndarray, task: str) -> np.ndarray:
    """The own queries' terms: the support itself (classification: 0 is a tie with another
    label), or centred on its mean (regression: no error is neutral by itself, so the terms
    move value between rows and add none)."""
    return support - support.mean() if task == "regression" else support


def squared_distances(Xq: np.ndarray, X: np.ndarray | None = None) -> np.ndarray:
    """Squared Euclidean distances ``(queries, rows)``; of ``Xq`` to itself without ``X``
    (the symmetric half computed once, zeros on the diagonal)."""
    if Xq.shape[1] >= _PRODUCT_MIN_FEATURES:
        return euclidean_distances(Xq, Xq if X is None else X, squared=True)
    return squareform(pdist(Xq, "sqeuclidean")) if X is None else cdist(Xq, X, "sqeuclidean")


def nearest_mask(dist: np.ndarray, k: int) -> np.ndarray:
    """Each row's ``k`` smallest columns of ``dist`` as a 0/1 float mask, ties in column
    order: the first ``k`` of :func:`_rank`'s order, from a partition (no full sort)."""
    kth = np.partition(dist, k - 1, axis=1)[:, k - 1:k]
    nearer = dist < kth
    tied = dist == kth
    # the tied columns fill what the nearer ones leave, lowest positions first
    room = k - nearer.sum(axis=1, keepdims=True)
    mask = nearer | tied
    # a row whose k-th distance is its own (no other column ties it) keeps the whole mask
    crowded = np.flatnonzero(tied.sum(axis=1) > 1)
    if crowded.size:
        ties = tied[crowded]
        mask[crowded] = nearer[crowded] | (ties & (np.cumsum(ties, axis=1) <= room[crowded]))
    return mask.astype(float)


def nearest_sums(dist: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    """Each row's sum of ``values`` over its ``k`` smallest columns of ``dist``, ties in
    column order (the first ``k`` of :func:`_rank`'s order; ``k`` below the columns).

    From one partition: the ``k`` smallest columns in some order are the right ones
    unless the ``k``-th smallest distance is shared with a column left out; only those
    rows take :func:`nearest_mask` (several passes over the row).
    """
    part = np.argpartition(dist, k, axis=1)
    near = part[:, :k]
    inside = np.take_along_axis(dist, near, axis=1).max(axis=1)
    outside = np.take_along_axis(dist, part[:, k:k + 1], axis=1)[:, 0]
    sums = values[near].sum(axis=1)
    tied = np.flatnonzero(inside == outside)
    if tied.size:
        sums[tied] = nearest_mask(dist[tied], k) @ values
    return sums


def _rank(dist: np.ndarray) -> np.ndarray:
    """Each row's columns from nearest to farthest, ties in column order.

    The exact values need ties broken by row position (as a stable sort). numpy's
    argsort of float64 is several times slower than its sort of 64-bit integers (SIMD;
    benchmarks/rank_sort.py), so each distance's bits, with the lowest ones replaced by
    its column, are sorted as one integer key: a nonnegative float's bits order as it
    does, and equal distances then order by column. Where the dropped bits leave two
    different distances with one key (a relative gap below about ``n / 2**52``), the
    row is checked against the full distances and, out of order, sorted stably.
    """
    n = dist.shape[1]
    bits = max(1, (n - 1).bit_length())
    if bits > _KEY_MAX_BITS or dist.size == 0:
        return _rank_argsort(dist)
    low = np.uint64((1 << bits) - 1)
    # + 0.0 makes a copy, as float64, with any -0.0 as +0.0 (whose bits sort first)
    keys = np.add(dist, 0.0, dtype=np.float64).view(np.uint64)
    keys &= ~low
    keys |= np.arange(n, dtype=np.uint64)
    keys.sort(axis=1)
    # a distance below 0 (its sign bit) or NaN has bits above infinity's, so sorts last
    if (keys[:, -1] >> np.uint64(bits) > _INF_BITS >> bits).any():
        return _rank_argsort(dist)
    columns = np.bitwise_and(keys, low)
    # columns below 2**24: the same bits as a 64-bit intp (a copy where intp is 32-bit)
    order = columns.view(np.intp) if np.dtype(np.intp).itemsize == 8 else \
        columns.astype(np.intp)
    keys >>= np.uint64(bits)
    shared = keys[:, 1:] == keys[:, :-1]
    if shared.any():
        rows, cols = np.nonzero(shared)
        # a shared key orders by column: right where the full distances are equal too
        swapped = dist[rows, order[rows, cols]] > dist[rows, order[rows, cols + 1]]
        redo = np.unique(rows[swapped])
        if redo.size:
            order[redo] = np.argsort(dist[redo], axis=1, kind="stable")
    return order


def _rank_argsort(dist: np.ndarray) -> np.ndarray:
    """:func:`_rank` by argsort (past :data:`_KEY_MAX_BITS` columns' bits, or distances
    below 0): the unstable sort, then a stable one of the rows with a tie."""
    order = np.argsort(dist, axis=1)
    ranked = np.take_along_axis(dist, order, axis=1)
    redo = np.flatnonzero((ranked[:, 1:] == ranked[:, :-1]).any(axis=1))
    if redo.size:
        order[redo] = np.argsort(dist[redo], axis=1, kind="stable")
    return order


def _keep_freed_memory() -> None:
    """Let the chunks' arrays be reused, not paged in afresh, where the allocator is glibc's.

    glibc gives freed heap memory back to the system once more than its trim threshold
    (at first 128 KiB) is free at the top, so a chunk's dozen fresh 1 MiB arrays were
    paged in again chunk after chunk: 10,000-64,000 page faults in a 3,000-row fit, 10-30%
    of its time in a fresh process (``benchmarks/knn_fresh_process.py``). Freeing one
    memory-mapped block raises both thresholds to its size and twice that (mallopt(3),
    "dynamic mmap threshold"); a block of 16 chunks' entries, never touched, costs no
    more than a system call. Other allocators ignore it.
    """
    np.empty(16 * MAX_CHUNK_ENTRIES)


def _mix(modes: list[tuple[np.ndarray, np.ndarray, int]]) -> tuple[np.ndarray, np.ndarray, int]:
    """Values, variances and count of the equal-weight mean of the query modes' means.

    Each mode is ``(sum, sum of squares, queries)`` per row. The variances are
    per query at the total count, so that ``variances / counts`` is the
    variance of the mixed mean (their intervals: the spread over queries).
    """
    w = 1.0 / len(modes)
    values = sum(w * t / m for t, _, m in modes)
    # validation queries alone keep no squares (their spread is unused): a value's square
    # may overflow there, to a spread of 0
    with np.errstate(over="ignore"):
        spread = sum(w * w * np.maximum(q / m - (t / m) ** 2, 0.0) / max(m - 1, 1)
                     for t, q, m in modes)
    count = sum(m for _, _, m in modes)
    return np.asarray(values, dtype=float), np.asarray(spread) * count, int(count)
