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
``method="auto"`` was thresholding Data-OOB for every model; it still is but for two
cases:

For a k-NN classifier (uniform weights, Euclidean distance) on at most
:data:`KNN_SHAPLEY_MAX_ROWS` rows, ``"auto"`` is exact k-NN Shapley in closed
form, the training and validation rows as queries, half the weight each
(``method="knn_shapley"``; :class:`~tdshap.methods.KNNShapley` with
``queries="both"``): every row valued by what it does to the k-NN's predictions
of the other rows and of the validation rows, whose clean labels sharpen the
ranking (eight classification sets, 20 seeds: mean AUROC 0.966 vs 0.963 for the
training rows alone) and the cut, whose named comparison is then cross-fitted
(:mod:`tdshap.cross_fit`), gained more (accuracy +0.0107 vs +0.0084; exact k-NN
Shapley +0.0115, which lowers more runs: docs/benchmarks.md). The cost grows as
N² log N, so larger sets (or ``neighbor_search="approximate"``) keep
thresholding Data-OOB.

A k-NN regressor takes thresholding Data-OOB at every size (since session 34).
The closed form on the training rows (``method="knn_shapley_train"``, each target
clipped as a query: :data:`QUERY_CLIP`) ranked and cut as well where the planted
targets are 3 standard deviations off (23 regression sets, 10 seeds: AUROC 0.988
against 0.991, test MAE -22.9% against -22.7%, Data-OOB 0.991 / -21.8%), but a row's
effect on its neighbours' predictions is a weak witness of a subtler error: at 1 SD
it ranked the planted rows at mean AUROC 0.760 against the bandit's 0.819 (Data-OOB
0.824; 18 of the 23 sets beyond 0.02 of Data-OOB, the bandit 3) and cut less (-3.1%
against -4.7%); at 2 SD it was beyond 0.02 on four sets, the bandit on none. With
nothing planted it removed 8.7% of real diabetes and make_friedman1 rows through the
command's split (up to 45% in a run; the bandit 0.3%). docs/benchmarks.md, "Eight more
shapes (fresh2, session 34), and subtler target noise".

For a decision tree, a random forest or extra trees, an MLP or a linear classifier (a
linear SVM too; or a k-NN without
the closed form) on at most :data:`KNN_SHAPLEY_MAX_ROWS` rows, ``"auto"`` is the same closed form
(``queries="both"``) for a 5-NN of the standardised training rows standing in for the
model (``method="knn_shapley_proxy"``, open to any classifier); the cut refits the
model itself along that ranking. With a depth-5 tree (9 seeds, eight sets) it ranked
best (mean AUROC 0.967; Data-OOB 0.963, thresholding Data-OOB 0.960) and its cut
gained the most of all (+0.0396 at 9 seeds with session 14's check of the paper's
cut, +0.0314 before session 13's; Data-OOB +0.0338, thresholding Data-OOB +0.0293; at
20 seeds +0.0329 against Data-OOB's +0.0315); with logistic regression it
ranked best (0.967; Data-OOB 0.928) and gained +0.0239 (+0.0236 before session 13;
thresholding Data-OOB +0.0183, exact k-NN Shapley +0.0253), in a tenth of the time
(docs/benchmarks.md); in session 10, before either cut was checked for the paper's
larger cut: with a random forest (50 trees, 9 seeds) it ranked as well
(0.967 vs 0.969) and gained more (+0.0071 vs +0.0032), 44 times faster; with an MLP (3
seeds, four small sets) it ranked better (0.987 vs 0.981) and gained more (+0.0241 vs
+0.0159; on clean data +0.0017 vs -0.0006), about 50 times faster. With gradient
boosting (3 seeds, five sets) it ranked as well (0.974 vs 0.973) but its cut gained far
less (+0.0050 vs +0.0219: a boosted model is hurt by rows a 5-NN does not find out of
place); with an RBF support vector machine (3 seeds, eight sets) thresholding Data-OOB
lowered no set and the proxy one; with Gaussian naive Bayes (9 seeds) the proxy ranked
and cut better but lowered a set with nothing planted that the bandit did not (AdaBoost,
unlike gradient boosting, gained more with the proxy and takes it). So other classifiers
keep thresholding Data-OOB, and
so do all regressors (the proxy ranked and cut a tree's targets worse). Forest
regressors (random forest, extra trees) took a 5-NN regressor's values on the training
rows alone from session 17 to 33 (3 seeds, six regression sets: test MAE -20.8% / -25.6%
against thresholding Data-OOB's -19.6% / -23.4%); in session 34, on fifteen sets with the
random forest, it cut as the bandit does (-18.8% against -18.2%, 3 seeds) but with targets
1 SD off it ranked at AUROC 0.724 against 0.850 and raised the test MAE (+0.3% against
-4.9%, six sets), as the k-NN regressor's own closed form did. The proxy stands in
only where it predicts the validation rows about as well as the model
(:func:`check_proxy`): with many features that do not decide the class (a tree or a
linear model ignores them, the 5-NN's distances do not) it predicted them 0.05-0.28
worse and ranked a tree's planted rows at AUROC 0.87 and 0.76 where thresholding
Data-OOB reached 0.92 and 0.86 (5 seeds), so there ``"auto"`` keeps thresholding Data-OOB; so too
where the 5-NN's neighbours hardly know the labels (one-hot columns whose parity decides
the class: proxy 0.59, thresholding Data-OOB 0.95).

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

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.ensemble import (
    AdaBoostClassifier,
    ExtraTreesClassifier,
    RandomForestClassifier,
)
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from tdshap._validation import ParameterError
from tdshap.methods import KNNOutOfBag, KNNShapley, TDShap
from tdshap.methods.knn_oob import closed_form_problem
from tdshap.methods.knn_shapley import knn_shapley_problem, knn_shapley_task
from tdshap.methods.tdoob import ThresholdingOOB
from tdshap.utility.base import random_state_params

METHODS = ("auto", "tdshap", "tdoob", "knn_oob", "knn_shapley", "knn_shapley_train",
           "knn_shapley_proxy")
#: the closed forms: exact k-NN Shapley and the queries each takes
KNN_SHAPLEY_QUERIES = {"knn_shapley": "both", "knn_shapley_train": "training",
                       "knn_shapley_proxy": "both"}
#: the (method, task) pairs whose exact k-NN Shapley values credit each row with its own
#: query too (:class:`~tdshap.methods.KNNShapley`'s ``own_label``): none by default. It
#: ranked planted noise better for k-NN classifiers and regressors alike, but the
#: classifier's cut gained less (planted digits' test accuracy fell on average) and the
#: regressor's removed 12% of real diabetes, beyond the do-no-harm promise
#: (docs/benchmarks.md, "A row's own query"); ``benchmarks/detection.py`` sets it for its
#: ``find_harmful-own`` rows
OWN_LABEL: frozenset[tuple[str, str]] = frozenset()
#: every exact k-NN Shapley method for both tasks: what the benchmarks' own-label rows set
EVERY_OWN_LABEL = frozenset((m, t) for m in KNN_SHAPLEY_QUERIES
                            for t in ("classification", "regression"))
#: exact k-NN Shapley's ``query_clip`` for a regressor's training queries (None: the
#: targets as given). Each row's target as a query moved to within 1 robust SD of what
#: its neighbours predict ranked planted target noise better than the targets as given and
#: than 3 robust SD (session 29's width) on every one of the detection benchmark's fifteen
#: regression sets (20 seeds, 5-NN: AUROC 0.977 / 0.984 -> 0.991, every set within 0.02
#: of Data-OOB's; random forests' 5-NN proxy 0.987 -> 0.993). Its cut removes fewer rows:
#: the 5-NN's gains 1.0 +- 0.2 points of MAE less than at 3 SD (-22.0% against -22.9%,
#: Data-OOB -19.0%), the forests' as much; with nothing planted it lowered no more sets.
#: docs/benchmarks.md, "A regressor's queries clipped at 1 robust SD";
#: ``benchmarks/detection.py`` sets None, 2 and 3 for its ``find_harmful-noclip``,
#: ``-clip2`` and ``-clip3`` rows
QUERY_CLIP: float | None = 1.0

#: the most rows "auto" values with exact k-NN Shapley (a k-NN classifier, or the proxy):
#: N + M sorts of N rows, 0.43 s at 5,000 rows with 2,500 validation rows on one core
#: (benchmarks/knn_fresh_process.py, session 33; thresholding Data-OOB's lists grow slower)
KNN_SHAPLEY_MAX_ROWS = 5000
#: k of the k-NN whose exact Shapley values stand in for another classifier's
PROXY_NEIGHBORS = 5

# bags after the first pass when the user sets no max_iter: on the detection benchmark
# AUROC rose from the first pass to ~100 bags and was flat after
TDOOB_BAGS = 100
#: bags thresholding Data-OOB fits from one look at its bandit (``bags_per_round``): one,
#: the paper's bandit. Eight ranked and cut planted noise as well but removed rows of clean
#: diabetes in more runs (docs/benchmarks.md, "Thresholding Data-OOB's bags on workers";
#: ``benchmarks/detection.py``'s ``find_harmful-round8`` rows set it)
TDOOB_BAGS_PER_ROUND = 1


@dataclass
class Valuer:
    """The estimator that values the rows, the metric it values them with, and why."""

    estimator: Any
    method: str
    metric: str
    why: str


#: the classifier families whose rows the k-NN proxy was measured to value better than
#: thresholding Data-OOB (docs/benchmarks.md); with gradient boosting its cut gained less,
#: with an RBF support vector machine too (it is hardly hurt by the noise)
PROXY_FAMILIES = ("sklearn.tree", "sklearn.linear_model", "sklearn.neighbors")
#: single classifiers of other families measured the same way: the random forest (9 seeds,
#: eight sets: gain +0.0071 against +0.0032, 44 times faster), the MLP (3 seeds, four
#: small sets: +0.0241 against +0.0159, on clean data +0.0017 against -0.0006, about 50 times
#: faster), the linear SVM, a linear classifier outside linear_model (9 seeds, eight
#: sets: AUROC 0.967 against 0.918, gain +0.0268 against +0.0178, 60 times faster) and
#: extra trees, randomised forests (3 seeds, seven sets: +0.0100 against +0.0088, no set
#: lowered against one, AUROC 0.963 against 0.970, 170 times faster) and AdaBoost (3 seeds,
#: seven sets: AUROC 0.963 against 0.928, +0.0228 against +0.0192, no set lowered against
#: one; docs/benchmarks.md). Gradient boosting keeps the bandit: its cut gained more there
PROXY_CLASSES = (RandomForestClassifier, ExtraTreesClassifier, AdaBoostClassifier,
                 MLPClassifier, LinearSVC)


def proxy_model(classifier: bool) -> Pipeline:
    """The 5-NN of the standardised rows that stands in for a classifier or a regressor."""
    knn = KNeighborsClassifier if classifier else KNeighborsRegressor
    return make_pipeline(StandardScaler(), knn(PROXY_NEIGHBORS))


def proxy_queries(method: str, estimator: Any) -> str:
    """The closed form's queries: a regressor's proxy takes the training rows alone, as a
    k-NN regressor's own values do (validation queries cut clean rows: module docstring)."""
    if method == "knn_shapley_proxy" and not is_classifier(estimator):
        return "training"
    return KNN_SHAPLEY_QUERIES[method]


def proxy_measured(estimator: Any) -> bool:
    """Whether ``"auto"`` values ``estimator``'s rows by the k-NN proxy: a classifier of a
    family in :data:`PROXY_FAMILIES` or in :data:`PROXY_CLASSES` (a Pipeline's last step
    decides); no regressor (module docstring)."""
    model = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
    if not is_classifier(estimator):
        return False
    return (type(model).__module__.startswith(PROXY_FAMILIES)
            or isinstance(model, PROXY_CLASSES))


#: the proxy stands in for a model only where it predicts the validation rows about as well:
#: "auto" leaves it when the model's validation accuracy is higher by more than this ...
#: (a forest on hard_binary: 0.03-0.07 higher, the proxy ranked within 0.02 of the bandit
#: and cut better, so it stays; 0.10-0.28 higher on the wide sets, where it ranked far
#: worse; benchmarks/detection.py, docs/benchmarks.md)
PROXY_MAX_SHORTFALL = 0.08
#: ... and by more than this many standard errors of the paired difference (not by chance)
PROXY_SHORTFALL_N_SE = 2.0
#: and it leaves a proxy whose neighbours hardly know the labels: the 5-NN's probability of
#: each validation row's class, above that class's share of the training rows (averaged
#: within classes, then over them), not higher than this and 2 standard errors
PROXY_MIN_SKILL = 0.05


@dataclass
class ProxyCheck:
    """How well the 5-NN proxy and the model predict the validation rows, both fitted on
    the training rows (:func:`check_proxy`)."""

    model_accuracy: float
    #: of the proxy fitted on the rows Wilson's editing keeps (:func:`check_proxy`)
    proxy_accuracy: float
    #: standard error of the paired difference of the two accuracies
    accuracy_se: float
    #: the proxy's probability of each row's class minus the class's training share,
    #: averaged within classes, then over them (0: it knows no more than the shares)
    proxy_skill: float
    skill_se: float

    def problem(self) -> str | None:
        """Why the proxy should not stand in for the model here, or None."""
        gap = self.model_accuracy - self.proxy_accuracy
        if gap > max(PROXY_MAX_SHORTFALL, PROXY_SHORTFALL_N_SE * self.accuracy_se):
            return (f"the proxy predicted the validation rows worse than the model, even "
                    f"without the rows its neighbours outvote ({self.proxy_accuracy:.3f} "
                    f"against {self.model_accuracy:.3f} accuracy)")
        if self.proxy_skill <= max(PROXY_MIN_SKILL, PROXY_SHORTFALL_N_SE * self.skill_se):
            return (f"the proxy's neighbours hardly know the labels (its probability of a "
                    f"validation row's class is {self.proxy_skill:+.3f} above the class's "
                    "share)")
        return None


def _nearest_others(proxy: Pipeline, X: Any) -> np.ndarray:
    """Each training row's :data:`PROXY_NEIGHBORS` nearest other rows, by the fitted proxy
    (the nearest of all is the row itself)."""
    Z = proxy[:-1].transform(X)
    return proxy[-1].kneighbors(Z, PROXY_NEIGHBORS + 1, return_distance=False)[:, 1:]


def _unedited_rows(proxy: Any, X: Any, y: np.ndarray) -> np.ndarray | None:
    """Wilson's editing of the proxy's training rows: the rows whose nearest other rows
    mostly carry their label (None: too few rows, or the edit would leave one class)."""
    if len(y) <= PROXY_NEIGHBORS:
        return None
    near = _nearest_others(proxy, X)
    keep = (y[near] == y[:, None]).sum(axis=1) > PROXY_NEIGHBORS // 2
    return keep if len(np.unique(y[keep])) >= 2 else None


def check_proxy(estimator: Any, data: tuple[Any, Any, Any, Any],
                seed: int = 0) -> ProxyCheck | None:
    """The 5-NN proxy against the model and against the class shares on the validation
    rows of ``data = (X, y, X_val, y_val)``; None when the model cannot be fitted here
    (the run then says why) or there are too few validation rows. The model's
    ``random_state`` parameters are set to ``seed``, as for the cleansing fits: the same
    seed, the same choice.

    A 5-NN of the standardised rows is a fair stand-in where the classes are local in
    every feature; with many features that do not matter (a tree or a linear model
    ignores them, the distances do not) it predicts the labels far worse than the model
    and its values rank the model's harmful rows worse (docs/benchmarks.md, "wide" data);
    where its neighbours do not know the labels at all, its values are noise. Probabilities,
    not predicted labels, say the latter: with a rare class the 5-NN may predict the
    majority everywhere and still rank well. The 5-NN's accuracy is that of the 5-NN
    after Wilson's editing (each training row whose 5 nearest other rows mostly carry
    another label left out): with many wrong labels a 5-NN predicts worse than a model
    that averages them away (a linear model with 30% planted: 0.08-0.16 worse), while
    its values rank those very labels well; the edit takes that handicap away, and
    distances that mislead still mislead (docs/benchmarks.md, "The proxy check on an
    edited 5-NN").
    """
    X, y, X_val, y_val = data
    if X_val is None or len(y_val) < 2 or not is_classifier(estimator):
        return None
    proxy = proxy_model(classifier=True)
    try:
        model = clone(estimator).set_params(
            **dict.fromkeys(random_state_params(estimator), int(seed)))
        right_model = np.asarray(model.fit(X, y).predict(X_val) == y_val, float)
        proxy.fit(X, y)
        proba = np.asarray(proxy.predict_proba(X_val), dtype=float)
        Xa, ya = np.asarray(X), np.asarray(y)
        keep = _unedited_rows(proxy, Xa, ya)
        edited = proxy if keep is None else proxy_model(classifier=True).fit(Xa[keep], ya[keep])
        right_proxy = np.asarray(edited.predict(X_val) == y_val, float)
    except Exception:  # a model that fails here fails in the run, which says why
        return None
    diff = right_model - right_proxy
    labels = list(proxy.classes_)
    known = np.isin(y_val, labels)
    col = np.array([labels.index(v) if k else 0 for v, k in zip(y_val, known, strict=True)])
    own = np.where(known, proba[np.arange(len(y_val)), col], 0.0)
    counts = dict(zip(*np.unique(y, return_counts=True), strict=True))
    share = np.array([counts.get(v, 0) for v in y_val]) / len(y)
    skill = own - share
    groups = [skill[y_val == c] for c in np.unique(y_val)]
    spread = sum(g.var(ddof=1) / len(g) for g in groups if len(g) > 1)
    return ProxyCheck(
        float(right_model.mean()), float(right_proxy.mean()),
        float(np.std(diff, ddof=1) / np.sqrt(len(diff))),
        float(np.mean([g.mean() for g in groups])), float(np.sqrt(spread) / len(groups)))


def choose_method(estimator: Any, method: str, n_rows: int | None = None,
                  neighbor_search: str = "exact",
                  data: tuple[Any, Any, Any, Any] | None = None,
                  seed: int = 0) -> tuple[str, str]:
    """``(method, why)`` for ``method`` in :data:`METHODS` (``n_rows``: the training rows;
    ``data``: ``(X, y, X_val, y_val)``, to check that the k-NN proxy predicts the
    validation rows about as well as the model, and knows the labels, before ``"auto"``
    takes it: :func:`check_proxy`, its model seeded by ``seed``)."""
    if method not in METHODS:
        raise ValueError(f"method={method!r} must be one of {METHODS}.")
    if method == "knn_oob":
        problem = closed_form_problem(estimator)
        if problem:
            raise ValueError(f"method='knn_oob' values k-NN classifiers only ({problem}): "
                             "use method 'auto' or 'tdoob'.")
    if method in ("knn_shapley", "knn_shapley_train"):
        problem = knn_shapley_problem(estimator)
        if problem:
            raise ValueError(f"method={method!r} values k-NN models only ({problem}): "
                             "use method 'auto', 'knn_shapley_proxy' or 'tdoob'.")
    if method != "auto":
        return method, "given"
    small = (n_rows is not None and n_rows <= KNN_SHAPLEY_MAX_ROWS
             and neighbor_search == "exact")
    if small and knn_shapley_problem(estimator) is None and is_classifier(estimator):
        return "knn_shapley", (
            "auto: exact k-NN Shapley with the training and validation rows as queries, the "
            f"cut cross-fitted (a k-NN classifier on at most {KNN_SHAPLEY_MAX_ROWS:,} rows; "
            "best cut on the detection benchmark, docs/benchmarks.md)")
    if small and proxy_measured(estimator):
        check = None if data is None else check_proxy(estimator, data, seed)
        problem = None if check is None else check.problem()
        if problem is not None:
            return "tdoob", (
                "auto: thresholding Data-OOB (the APT bandit with out-of-bag rewards), not "
                f"the {PROXY_NEIGHBORS}-NN proxy: {problem}, so its values would not be the "
                "model's")
        # a k-NN here has no closed form (e.g. another metric): the proxy's Euclidean
        # distances are not its own, so say so rather than call it a tree or the like
        model = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
        kind = (f"a k-NN without the closed form: {knn_shapley_problem(estimator)}".rstrip(".")
                if isinstance(model, KNeighborsClassifier) else
                "a tree, forest, MLP or linear classifier, or AdaBoost")
        return "knn_shapley_proxy", (
            f"auto: exact {PROXY_NEIGHBORS}-NN Shapley of the standardised rows, training and "
            f"validation rows as queries, a proxy for the model ({kind}; on at most "
            f"{KNN_SHAPLEY_MAX_ROWS:,} rows; its cut, refitting the model and cross-fitted, "
            "gained more on the detection benchmark, docs/benchmarks.md)")
    best = ("for every regressor: it ranked targets 1-2 SD off best" if not
            is_classifier(estimator) else "best")
    return "tdoob", ("auto: thresholding Data-OOB (the APT bandit with out-of-bag rewards; "
                     f"{best} on the detection benchmark, docs/benchmarks.md)")


def make_valuer(estimator: Any, metric: str, given: set[str], method: str,
                options: Any, seed: int, progress: bool, tdshap_extra: dict[str, Any],
                neighbor_search: str = "exact", n_rows: int | None = None,
                data: tuple[Any, Any, Any, Any] | None = None) -> Valuer:
    """The valuation estimator for ``find_harmful``'s settings.

    ``metric`` is the user's metric (used to cleanse and to report);
    the valuation may use a smoother one, named in :attr:`Valuer.metric`.
    ``given`` names the settings the user chose; ``tdshap_extra`` holds
    TDShap-only parameters (checkpointing). ``neighbor_search`` is the bagging
    methods' k-NN neighbour search (``"exact"`` or ``"approximate"``); ``n_rows``
    the training rows (``"auto"`` chooses by it); ``data`` the rows ``(X, y, X_val,
    y_val)`` (:func:`choose_method`).
    """
    metric_given = "metric" in given
    chosen, why = choose_method(estimator, method, n_rows, neighbor_search, data, seed)
    if chosen in KNN_SHAPLEY_QUERIES:
        if neighbor_search != "exact":
            raise ParameterError("`neighbor_search` 'approximate' serves the bagging methods "
                                 "(`method` 'auto', 'tdoob' or 'knn_oob'); exact k-NN Shapley "
                                 "sorts every row: leave `neighbor_search` 'exact'.",
                                 "neighbor_search", "method")
        # the proxy: a k-NN on the standardised rows values them for another model
        knn = estimator if chosen != "knn_shapley_proxy" else proxy_model(
            is_classifier(estimator))
        task, queries = knn_shapley_task(knn), proxy_queries(chosen, estimator)
        exact = KNNShapley(knn, tau=0.0 if options.tau == "auto" else options.tau,
                           queries=queries, random_state=seed, progress=progress,
                           own_label=(chosen, task) in OWN_LABEL and queries != "validation",
                           query_clip=QUERY_CLIP if task == "regression"
                           and queries != "validation" else None)
        proba = task == "classification"
        return Valuer(exact, chosen, "true_class_proba" if proba else "neg_mse", why)
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
                                 neighbor_search=neighbor_search,
                                 bags_per_round=TDOOB_BAGS_PER_ROUND)
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
