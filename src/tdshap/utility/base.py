"""The utility V(S): train a model on a subset S of the training set and score it.

One :class:`Utility` object serves a whole valuation run. It

* clones the user's estimator (the original is never fitted),
* counts fits and the seconds spent inside ``fit``/``predict``/scoring,
* remembers every score it computed in this run, so that no subset (``V(D)``
  included) is fitted twice with the same seed,
* scores subsets a model cannot be fitted on by a documented fallback
  (``on_error="fallback"``) or raises (``on_error="raise"``),
* evaluates a whole block chain ``V(P), V(P+b1), ..., V(P+b1..bK)`` in one call
  (:meth:`Utility.evaluate_chain`): the single method that incremental fast
  paths and batched GPU training override.

Fallback score
--------------
``V(S)`` for a subset that cannot be fitted (empty, or an estimator raising
on it, typically a classifier given a single class) is the score of the best
constant prediction for ``S``: its most frequent label (classification) or its
mean target (regression). For the empty set, which has no labels, the constant
is that of the whole training set: the score of a model that learned nothing
about the inputs.

Seeds (common random numbers)
-----------------------------
For estimators with a ``random_state`` parameter (anywhere in a pipeline),
``seed_mode`` says which seed each fit gets:

``"chain"`` (default)
    every fit of one chain shares the chain's seed, so the K marginals of a
    block differ only by the added rows, not by the model's randomness;
``"run"``
    every fit in the run uses one seed: V becomes a deterministic set function;
``"fit"``
    every fit gets its own seed (independent noise).
"""

from __future__ import annotations

import copy
import hashlib
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, Self

import numpy as np
from sklearn.base import BaseEstimator, clone, is_classifier

from tdshap._validation import (
    ONE_CLASS,
    UNSEEN_CLASSES,
    check_estimator,
    check_random_state,
    shown,
    user_stacklevel,
)
from tdshap.utility.metrics import MetricSpec, check_metric_for_model, resolve_metric

OnError = Literal["raise", "fallback"]
#: Per-run counters; a parallel executor adds its workers' counts to these and a
#: checkpoint saves them. Subclasses with counters of their own extend
#: :attr:`Utility.counter_names`.
COUNTERS: tuple[str, ...] = (
    "n_fits", "n_evaluations", "n_cache_hits", "n_fallbacks", "n_truncated", "fit_seconds",
    "n_failed_fits",
)
SeedMode = Literal["chain", "run", "fit"]
SEED_MODES: tuple[str, ...] = ("chain", "run", "fit")


@dataclass(frozen=True)
class Truncation:
    """Stop scanning a chain once its scores have settled near a target (TMC).

    After each evaluation, a score within ``tolerance * |target|`` of
    ``target`` (usually V(D)) counts one step; once more than ``patience``
    consecutive steps counted, the rest of the chain is not fitted and takes
    the last score (so the remaining marginals are 0), as in Ghorbani & Zou's
    original code (``tolerance=0.01, patience=5``).
    """

    target: float
    tolerance: float = 0.01
    patience: int = 5

    def settled(self, score: float) -> bool:
        return abs(score - self.target) <= self.tolerance * abs(self.target)

    def scan(self) -> TruncationScan:
        """A fresh scan of one chain, for evaluations that stop as soon as it settles."""
        return TruncationScan(self)

    def apply(self, scores: np.ndarray) -> int:
        """Truncate a chain evaluated whole, in place; return how many scores were cut.

        The scores end as those of a scan that stopped where this rule stops it.
        """
        scan = self.scan()
        for j in range(len(scores)):
            if cut := scan.cut(scores, j):
                return cut
        return 0


class TruncationScan:
    """:class:`Truncation` applied step by step while one chain is evaluated.

    After writing ``out[j]``, call :meth:`cut`: a positive answer means the
    chain stops here, and ``out[j + 1:]`` already holds the last score. Every
    chain evaluation (the base class, fast paths, batched training) truncates
    through this one method, so all give the same values.
    """

    def __init__(self, rule: Truncation | None) -> None:
        self.rule = rule
        self._settled = 0

    def cut(self, out: np.ndarray, j: int) -> int:
        """Steps cut after step ``j`` (``out[j + 1:]`` then equals ``out[j]``); 0: go on."""
        if self.rule is None:
            return 0
        self._settled = self._settled + 1 if self.rule.settled(out[j]) else 0
        if self._settled <= self.rule.patience:
            return 0
        out[j + 1 :] = out[j]
        return len(out) - 1 - j


@dataclass(frozen=True)
class Chain:
    """One block evaluation: ``V(prefix)``, then each ``block`` row added in turn.

    ``truncation``, when set, lets the evaluation stop early (see
    :class:`Truncation`); implementations that cannot truncate must evaluate
    the whole chain, which gives the same values up to the truncation itself.
    """

    prefix: np.ndarray
    block: np.ndarray
    seed: int
    truncation: Truncation | None = None


class ChainExecutor(Protocol):
    """Evaluates chains somewhere else (workers, a cluster); see :mod:`tdshap.utility.parallel`.

    ``evaluate`` returns the chains' scores in order and merges the workers'
    counters and cache entries into ``utility`` (:meth:`Utility.merge`).
    """

    n_workers: int

    def evaluate(self, utility: Utility, chains: Sequence[Chain]) -> list[np.ndarray]: ...


def nested_params(estimator: Any, name: str) -> dict[str, Any]:
    """Every parameter of ``estimator`` called ``name``, nested ones too (``step__name``);
    none for an object without ``get_params``."""
    try:
        params = estimator.get_params(deep=True)
    except AttributeError:
        return {}
    return {k: v for k, v in params.items() if k.rsplit("__", 1)[-1] == name}


def random_state_params(estimator: Any) -> list[str]:
    """Names of every ``random_state`` parameter of ``estimator`` (nested too)."""
    return sorted(nested_params(estimator, "random_state"))


def _constant_prediction(y: np.ndarray, classifier: bool) -> Any:
    if classifier:
        labels, counts = np.unique(y, return_counts=True)
        return labels[int(np.argmax(counts))]
    return float(np.mean(np.asarray(y, dtype=float)))


class _ConstantModel(BaseEstimator):
    """Predicts one value; lets any scorer score the fallback.

    A scikit-learn estimator (with its tags) because scikit-learn's scorers for
    probabilities ask the estimator for its type before calling it.
    """

    def __init__(self, value: Any = None, classes: np.ndarray | None = None) -> None:
        self.value = value
        self.classes = classes
        self.classes_ = classes

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier" if self.classes is not None else "regressor"
        return tags

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.full(len(X), self.value)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        assert self.classes_ is not None
        proba = np.zeros((len(X), len(self.classes_)))
        proba[:, int(np.searchsorted(self.classes_, self.value))] = 1.0
        return proba

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        assert self.classes_ is not None
        positive = self.classes_[-1] == self.value
        return np.full(len(X), 1.0 if positive else -1.0)


def fallback_model(labels: np.ndarray, classes: np.ndarray | None) -> Any:
    """The fallback's best constant predictor for ``labels`` (``classes`` for classifiers)."""
    return _ConstantModel(_constant_prediction(labels, classes is not None), classes)


def describe_error(err: BaseException) -> str:
    """One line naming an estimator's error: its type and the first line of its message."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


def scoring_problem(spec: MetricSpec, y: np.ndarray, X_val: np.ndarray, y_val: np.ndarray,
                    classification: bool) -> str | None:
    """Why ``spec`` cannot score the validation rows, or None.

    The constant prediction every failed fit falls back to is scored: a metric that raises
    on it, or gives NaN or inf, makes every mean, gain and cut built on it meaningless.
    """
    classes = np.unique(y) if classification else None
    try:
        score = float(spec.score(fallback_model(y, classes), X_val, y_val))
    except Exception as err:
        return f"cannot score the validation rows ({describe_error(err)})"
    if not np.isfinite(score):
        return (f"scores the validation rows {score} (for the constant prediction a failed "
                "fit falls back to): it must give a finite number")
    return None


def check_scoring(spec: MetricSpec, estimator: Any, y: np.ndarray, X_val: np.ndarray,
                  y_val: np.ndarray) -> None:
    """Refuse, before any fit, a metric the model cannot serve (accuracy of a regressor) or
    one that cannot score the validation rows (:func:`scoring_problem`)."""
    check_metric_for_model(spec, estimator)
    problem = scoring_problem(spec, y, X_val, y_val, is_classifier(estimator))
    if problem:
        raise ValueError(f"metric {spec.name!r} {problem}; choose another metric.")


def too_few_rows(estimator: Any, X: np.ndarray, y: np.ndarray,
                 check: Callable[[Any], Any] | None = None, *,
                 every_fit_failed: bool = True) -> str | None:
    """Why ``estimator`` failed on subsets of ``(X, y)``, when the data are the problem
    (a tiny training set said "fix the model"); None when the model is.

    The model is the problem when it fails on all the rows too (or ``check`` of that
    model, e.g. scoring it, raises or gives NaN). Else a classifier that cannot fit rows
    of a single class (scikit-learn's "needs samples of at least 2 classes") failed on the
    subsets of one class that a few rows often give; and where ``every_fit_failed``, any
    model's subsets were too small for it. A model that fails now and then (only some
    fits, and it fits one class) is its own problem. At most two fits, paid only on the
    error path.
    """
    try:
        model = clone(estimator)
        model.fit(X, y)  # not fit's return: None from one without "return self"
        checked = None if check is None else check(model)
        if isinstance(checked, float) and not np.isfinite(checked):
            return None
    except Exception:  # the model's own problem: the caller says so
        return None
    one_class = False
    if is_classifier(estimator):
        try:
            clone(estimator).fit(X[y == y[0]], y[y == y[0]])
        except Exception:
            one_class = True
    n = f"{len(y):,} training row{'s' if len(y) != 1 else ''}"
    if one_class:
        return (f"it fits all {n} but not rows of a single class, which subsets of so few "
                "rows often are, so the problem is the data: give more training rows of "
                "each class")
    if not every_fit_failed:
        return None
    return (f"it fits all {n}, so the problem is the data: the subsets of them it was "
            "fitted on were too small for it; give more training rows")


def check_some_fit_worked(failed: int, scored: int, first_error: str | None, what: str,
                          data_fix: Callable[[], str | None] | None = None) -> None:
    """Refuse numbers for which no score came from the estimator: its ``failed`` fits were
    all there was (``scored``: the scores a fitted model gave), so each score was the
    fallback's constant prediction and the numbers describe no model (values all 0, a
    flat cleansing curve). ``data_fix``: the fix when the data are the problem
    (:func:`too_few_rows`), asked only when refusing."""
    if failed and scored <= 0:
        fix = (data_fix() if data_fix is not None else None) or (
            "fix the estimator or its parameters (on_error='raise' shows the error where "
            "it happens)")
        raise ValueError(
            f"the estimator failed on every one of its {failed:,} fits in {what} (the first "
            f"error: {first_error or 'not recorded'}), so every score would be the fallback's "
            f"constant prediction, not the estimator's: {fix}.")


#: how the warning of a run whose estimator cannot fit the training rows begins
ROWS_BREAK_THE_MODEL = "the estimator fails on all"


def full_fit_error(estimator: Any, X: np.ndarray, y: np.ndarray) -> str | None:
    """:func:`describe_error` of ``estimator`` fitted on all of ``(X, y)``; None: it fits.
    The fit's own warnings are not repeated: the run's fits gave them already."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clone(estimator).fit(X, y)
    except Exception as err:
        return describe_error(err)
    return None


def warn_rows_break_the_model(failed: int, fits: int, full_error: str | None, n_rows: int,
                              what: str, data_fix: Callable[[], str | None] | None = None
                              ) -> None:
    """Warn, once a run, that ``failed`` of ``fits`` fits raised and the estimator fails on
    all ``n_rows`` training rows too (``full_error``; None: it fits them, so the failures
    were of small subsets, of one class or too few rows, which the fallback stands for by
    design). Then rows among them break the model (a feature past float32 for a tree):
    the subsets that hold them were scored as the fallback's constant prediction, and the
    numbers mix that in, which went unsaid while some fits worked."""
    if not (0 < failed < fits) or full_error is None:
        return
    fix = (data_fix() if data_fix is not None else None) or (
        "find and fix the rows that break it, or the estimator (on_error='raise' shows the "
        "error where it happens)")
    warnings.warn(
        f"{ROWS_BREAK_THE_MODEL} {n_rows:,} training rows ({full_error}) and on {failed:,} "
        f"of {fits:,} fits in {what}: the subsets holding the rows that break it were "
        f"scored as the fallback's constant prediction, so the numbers mix that in; {fix}.",
        UserWarning, stacklevel=user_stacklevel())


#: how the warnings of the user's rows begin that every further stage or cut of the same
#: rows would repeat (:func:`~tdshap._validation.said_already` them there): validation rows
#: of one class, of classes no training row has, and rows that break the model
REPEATED_WARNINGS = (f"the validation {ONE_CLASS}", f"the validation {UNSEEN_CLASSES}",
                     ROWS_BREAK_THE_MODEL)


def _check_arrays(estimator: Any, X: Any, y: Any, X_val: Any, y_val: Any) -> None:
    """Refuse what the methods' checks (:func:`tdshap._validation.check_data`) never let
    through, for a Utility made by hand: a table (rows picked by label: a KeyError), or
    rows and targets of different lengths (a subset took other rows' targets)."""
    check_estimator(estimator)  # None: scikit-learn's AttributeError on __sklearn_tags__
    for name, a in (("X", X), ("y", y), ("X_val", X_val), ("y_val", y_val)):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"{name} must be a numpy array, got {type(a).__name__}: a Utility "
                            "takes checked arrays (a method's fit checks and converts them), "
                            f"e.g. np.asarray({name}) or {name}.to_numpy().")
    for (xn, xa), (yn, ya) in ((("X", X), ("y", y)), (("X_val", X_val), ("y_val", y_val))):
        if len(xa) != len(ya):
            raise ValueError(f"{xn} has {len(xa)} rows but {yn} has {len(ya)}: they must have "
                             "the same length.")
    if X.shape[1:] != X_val.shape[1:]:
        raise ValueError(f"X has {X.shape[1:]} features per row but X_val has "
                         f"{X_val.shape[1:]}: they must match.")


def _positions(subset: Any, n: int) -> np.ndarray:
    """``subset`` as row positions from 0 to n - 1: a true/false mask was read as positions
    0 and 1, a fraction truncated, and -1 taken as the last row, silently."""
    idx = np.asarray(subset)
    if idx.dtype == bool:
        raise ValueError("subset is a true/false mask: give the rows' positions, e.g. "
                         "np.flatnonzero(mask).")
    whole = idx.dtype.kind in "iu" or (idx.dtype.kind == "f" and bool(np.all(idx % 1 == 0)))
    if idx.ndim != 1 or not (whole or idx.size == 0) or (
            idx.size and (idx.min() < 0 or idx.max() >= n)):
        raise ValueError(f"subset must be a 1-D list of row positions from 0 to {n - 1}, got "
                         f"{shown(subset)}.")
    return idx.astype(np.intp)


class Utility:
    """V(S) for one estimator, metric, training set and validation set.

    Parameters
    ----------
    estimator:
        Any scikit-learn style estimator; cloned for every chain.
    metric:
        A metric name, callable or :class:`~tdshap.utility.metrics.MetricSpec`
        (see :func:`tdshap.utility.metrics.resolve_metric`).
    X, y, X_val, y_val:
        Training and validation data as numpy arrays (already validated).
    on_error:
        ``"fallback"`` scores unfittable subsets by the fallback above;
        ``"raise"`` re-raises the estimator's error (and refuses the empty set).
    seed_mode:
        ``"chain"``, ``"run"`` or ``"fit"``; see the module docstring.
    run_seed:
        The seed used by ``seed_mode="run"`` and for single evaluations.
    cache:
        Remember scores by (subset, seed) so nothing is refitted.
    """

    counter_names: ClassVar[tuple[str, ...]] = COUNTERS
    #: which evaluation path this utility takes and why (set by ``make_utility``)
    path_note: str = "refit every subset"

    def __init__(
        self,
        estimator: Any,
        metric: Any,
        X: np.ndarray,
        y: np.ndarray,
        X_val: np.ndarray,
        y_val: np.ndarray,
        *,
        on_error: OnError = "fallback",
        seed_mode: SeedMode = "chain",
        run_seed: int = 0,
        cache: bool = True,
    ) -> None:
        if on_error not in ("raise", "fallback"):
            raise ValueError(f"on_error must be 'raise' or 'fallback', got {on_error!r}.")
        _check_arrays(estimator, X, y, X_val, y_val)
        check_random_state(run_seed, generator=False, optional=False, name="run_seed")
        if seed_mode not in SEED_MODES:
            raise ValueError(f"seed_mode must be one of {SEED_MODES}, got {seed_mode!r}.")
        self.estimator = estimator
        self.metric: MetricSpec = resolve_metric(metric)
        self.X, self.y, self.X_val, self.y_val = X, y, X_val, y_val
        self.on_error = on_error
        self.seed_mode = seed_mode
        self.run_seed = int(run_seed)
        self.use_cache = cache
        self.classifier = is_classifier(estimator)
        self._seed_params = random_state_params(estimator)
        self._classes = np.unique(y) if self.classifier else None
        self._cache: dict[bytes, float] = {}
        self.n_fits = 0
        self.n_fallbacks = 0
        self.n_evaluations = 0
        self.n_cache_hits = 0
        self.n_truncated = 0
        self.fit_seconds = 0.0
        # fits that raised (scored by the fallback): an application may stop a run with many
        self.n_failed_fits = 0
        self.first_error: str | None = None
        # as cleanse and find_harmful check it: a metric that cannot score these rows (f1
        # or roc_auc of more than two classes) raised from deep inside the run's first fit
        check_scoring(self.metric, estimator, y, X_val, y_val)

    @property
    def n(self) -> int:
        return len(self.y)

    @property
    def seeded(self) -> bool:
        """True when the estimator has a ``random_state`` that seeds control."""
        return bool(self._seed_params)

    # -- seeds and cache -------------------------------------------------
    def _fit_seed(self, chain_seed: int, position: int) -> int:
        if self.seed_mode == "run":
            return self.run_seed
        if self.seed_mode == "chain":
            return chain_seed
        return int(np.random.SeedSequence([chain_seed, position]).generate_state(1)[0])

    def _key(self, sorted_idx: np.ndarray, seed: int) -> bytes:
        h = hashlib.blake2b(sorted_idx.astype(np.int64, copy=False).tobytes(), digest_size=16)
        if self.seeded:
            h.update(seed.to_bytes(8, "little", signed=False))
        return h.digest()

    # -- scoring ---------------------------------------------------------
    def fallback_score(self, idx: np.ndarray) -> float:
        """Score of the best constant prediction for subset ``idx`` (see module doc)."""
        labels = self.y[idx] if len(idx) else self.y
        return self.metric.score(fallback_model(labels, self._classes), self.X_val, self.y_val)

    def too_few_rows(self) -> str | None:
        """:func:`too_few_rows` of this utility's estimator, rows and validation score."""
        return too_few_rows(self.estimator, self.X, self.y,
                            lambda model: self.metric.score(model, self.X_val, self.y_val))

    def record_failure(self, err: Exception) -> None:
        """Count a fit that raised and keep the first error (scored by the fallback)."""
        self.n_failed_fits += 1
        if self.first_error is None:
            self.first_error = describe_error(err)

    def _fit_score(self, model: Any, idx: np.ndarray) -> float:
        if len(idx) == 0:
            if self.on_error == "raise":
                raise ValueError("cannot fit a model on the empty set (on_error='raise').")
            self.n_fallbacks += 1
            return self.fallback_score(idx)
        X, y = self.X[idx], self.y[idx]
        start = time.perf_counter()
        try:
            model.fit(X, y)
            score = self.metric.score(model, self.X_val, self.y_val)
        except Exception as err:
            self.fit_seconds += time.perf_counter() - start
            self.n_fits += 1
            if self.on_error == "raise":
                raise
            self.record_failure(err)
            self.n_fallbacks += 1
            return self.fallback_score(idx)
        self.fit_seconds += time.perf_counter() - start
        self.n_fits += 1
        if not np.isfinite(score):  # no score of the model: a failed fit, counted as one
            failure = ValueError(f"metric {self.metric.name!r} returned {score} on a subset.")
            if self.on_error == "raise":
                raise failure
            self.record_failure(failure)
            self.n_fallbacks += 1
            return self.fallback_score(idx)
        return float(score)

    def _evaluate(self, model: Any, idx: np.ndarray, seed: int) -> float:
        """V(idx) with ``seed``; ``model`` is a clone that may be refitted."""
        self.n_evaluations += 1
        # Fit on the rows in sorted order: V is a function of the *set*, and
        # order-sensitive learners (libsvm, SGD) would otherwise give a cached
        # V(S) that differs in the last digits from a refit of S reached in
        # another order, so values would depend on the cache (and on n_jobs).
        idx = np.sort(idx)
        key = self._key(idx, seed) if self.use_cache else b""
        if self.use_cache and (hit := self._cache.get(key)) is not None:
            self.n_cache_hits += 1
            return hit
        if self._seed_params and getattr(model, "_tdshap_seed", None) != seed:
            model.set_params(**dict.fromkeys(self._seed_params, seed))
            model._tdshap_seed = seed  # a chain's clone keeps its seed: set it once
        score = self._fit_score(model, idx)
        if self.use_cache:
            self._cache[key] = score
        return score

    def __call__(self, subset: Sequence[int] | np.ndarray, seed: int | None = None) -> float:
        """V(subset), with ``seed`` (default: the run seed) for seeded estimators."""
        idx = _positions(subset, self.n)
        check_random_state(seed, generator=False, name="seed")
        s = self.run_seed if seed is None else self._fit_seed(int(seed), 0)
        return self._evaluate(clone(self.estimator), idx, s)

    def evaluate_chain(
        self,
        prefix: np.ndarray,
        block: np.ndarray,
        seed: int,
        truncation: Truncation | None = None,
    ) -> np.ndarray:
        """Return ``[V(P), V(P+b1), ..., V(P+b1..bK)]`` (length ``len(block) + 1``).

        Override this one method to evaluate a chain faster (incremental
        updates, batched training); the rest of the library only calls it
        through :meth:`evaluate_chains`.
        """
        model = clone(self.estimator)
        idx = np.concatenate([np.asarray(prefix, dtype=np.intp), np.asarray(block, dtype=np.intp)])
        p = len(prefix)
        out = np.empty(len(block) + 1)
        scan = TruncationScan(truncation)
        for j in range(len(block) + 1):
            out[j] = self._evaluate(model, idx[: p + j], self._fit_seed(seed, j))
            if cut := scan.cut(out, j):
                self.n_truncated += cut
                break
        return out

    def evaluate_chains(
        self, chains: Sequence[Chain], executor: ChainExecutor | None = None
    ) -> list[np.ndarray]:
        """Evaluate several chains; results in the order given.

        Every method evaluates through this one call, so that a parallel or
        distributed backend only has to replace it: with an ``executor``
        (:func:`tdshap.utility.parallel.make_executor`) the chains run on its
        workers, which merge their counters and cache entries back in order.
        """
        if executor is not None and len(chains) > 1:
            return executor.evaluate(self, chains)
        return [self.evaluate_chain(c.prefix, c.block, c.seed, c.truncation) for c in chains]

    # -- the run's state: counters and cache -------------------------------
    # Checkpoints save and restore it, a rewound step takes its part back, and
    # parallel workers evaluate on fresh copies whose state is merged back.
    def counters(self) -> dict[str, Any]:
        """The current value of every counter in :attr:`counter_names`."""
        return {name: getattr(self, name) for name in self.counter_names}

    def set_counters(self, counters: Mapping[str, Any]) -> None:
        """Set every counter to its value in ``counters`` (0 when missing)."""
        for name in self.counter_names:
            setattr(self, name, type(getattr(self, name))(counters.get(name, 0)))

    @property
    def cache_size(self) -> int:
        """How many scores the cache holds."""
        return len(self._cache)

    def cache_items(self) -> list[tuple[bytes, float]]:
        """The cached ``(key, score)`` pairs, oldest first."""
        return list(self._cache.items())

    def load_cache(self, items: Iterable[tuple[bytes, float]]) -> None:
        """Replace the cache by ``items`` (as :meth:`cache_items` returned them)."""
        self._cache = {bytes(k): float(v) for k, v in items}

    def forget_since(self, size: int) -> None:
        """Drop the cache entries added after it held ``size`` (dicts keep insertion order)."""
        for key in list(self._cache)[size:]:
            del self._cache[key]

    def merge(self, counters: Mapping[str, Any], cache: Mapping[bytes, float]) -> None:
        """Add a worker's counters and (when caching) its cache entries to this utility's."""
        for name, value in counters.items():
            setattr(self, name, getattr(self, name) + value)
        if self.use_cache:
            self._cache.update(cache)

    def fresh_copy(self) -> Self:
        """A copy sharing the data and estimator, with zero counters and an empty cache."""
        local = copy.copy(self)
        local._cache = {}
        local.set_counters({})
        return local

    def stats(self) -> dict[str, Any]:
        """Counters for the result (fits, evaluations, cache hits, seconds) and the seed mode."""
        return {
            **self.counters(),
            "first_error": self.first_error,
            "seed_mode": self.seed_mode if self.seeded else "none (estimator has no random_state)",
        }
