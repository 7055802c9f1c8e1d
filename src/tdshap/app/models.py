"""Models by name: the registry behind ``--model`` and ``find_harmful(estimator=None)``.

Each name maps to a classifier and a regressor (a name without one for a task
is an error for that task). The models that depend on the scale of the
features (``logreg``, ``ridge``, ``svr``, ``knn``, ``mlp``) get standardised
columns from :class:`tdshap.app.tabular.TableEncoder`, so none needs a scaler of
its own (and Ridge and k-NN stay eligible for :mod:`tdshap.utility.fast`).

Any other estimator is named by an import path ``package.module:Class``.
Defaults are small and fast, because one valuation fits the model thousands
of times: the tree has the paper's depth 5 and, for regression, its leaves
of 64 rows scaled down below N = 1000 (6.4% of N, at least 5: a fixed 64
leaves a tree of 2-4 leaves on a few hundred rows, which no single row can
change), the forest has 50 trees, the
gradient boosting is scikit-learn's histogram version (no LightGBM needed).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sklearn.base import is_classifier

TASKS = ("classification", "regression")
# k-NN: on data nobody tuned (benchmarks/defaults_unseen.py) it scored better than the tree,
# found more planted noise, and its exact fast path values rows without refitting
DEFAULT_MODEL = "knn"


@dataclass(frozen=True)
class ModelEntry:
    """One registry name: ``"module:Class"`` per task and its defaults."""

    classifier: str | None
    regressor: str | None
    # per task: parameter -> value, or a function of the number of training rows
    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    about: str = ""

    def target(self, task: str) -> str | None:
        return self.classifier if task == "classification" else self.regressor


def _leaf_rows(n: int) -> int:
    """Regression tree leaf size: the paper's 64 at N >= 1000, 6.4% of N below, >= 5."""
    return min(64, max(5, round(0.064 * n)))


def _sk(module: str, classifier: str | None, regressor: str | None
        ) -> tuple[str | None, str | None]:
    """``sklearn.<module>:<Class>`` for each task (None: not for that task)."""
    def path(c: str | None) -> str | None:
        return None if c is None else f"sklearn.{module}:{c}"

    return path(classifier), path(regressor)


_MAX_ITER = {"classification": {"max_iter": 1000}, "regression": {"max_iter": 1000}}
MODELS: dict[str, ModelEntry] = {
    "dtree": ModelEntry(
        *_sk("tree", "DecisionTreeClassifier", "DecisionTreeRegressor"),
        {"classification": {"max_depth": 5, "min_samples_leaf": 2},
         "regression": {"max_depth": 5, "min_samples_leaf": _leaf_rows}},
        about="decision tree, depth 5; leaves of >= 2 rows (classification) or "
        "min(64, max(5, 6.4% of N)) rows (regression; the paper's 64 from N = 1000)",
    ),
    "rf": ModelEntry(
        *_sk("ensemble", "RandomForestClassifier", "RandomForestRegressor"),
        {"classification": {"n_estimators": 50}, "regression": {"n_estimators": 50}},
        about="random forest, 50 trees",
    ),
    "gbdt": ModelEntry(
        *_sk("ensemble", "HistGradientBoostingClassifier", "HistGradientBoostingRegressor"),
        about="histogram gradient boosting (scikit-learn; LightGBM not needed)",
    ),
    "logreg": ModelEntry(*_sk("linear_model", "LogisticRegression", None), _MAX_ITER,
                         about="logistic regression (classification only)"),
    "ridge": ModelEntry(*_sk("linear_model", "RidgeClassifier", "Ridge"),
                        about="ridge regression / ridge classifier"),
    "svr": ModelEntry(*_sk("svm", "SVC", "SVR"), about="support vector machine, RBF kernel"),
    "knn": ModelEntry(*_sk("neighbors", "KNeighborsClassifier", "KNeighborsRegressor"),
                      about="5 nearest neighbours"),
    "mlp": ModelEntry(*_sk("neural_network", "MLPClassifier", "MLPRegressor"), _MAX_ITER,
                      about="one hidden layer of 100 units (slow: thousands of fits)"),
}
MODELS["svm"] = MODELS["svr"]


def parse_params(text: str | None) -> dict[str, Any]:
    """``--params`` JSON: an object of keyword arguments, or a ``ValueError``."""
    if text is None or not text.strip():
        return {}
    try:
        params = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(
            f"--params is not valid JSON ({err.msg} at character {err.pos}): "
            'write an object, e.g. --params \'{"max_depth": 3}\'.'
        ) from None
    if not isinstance(params, dict):
        raise ValueError(
            f"--params must be a JSON object of keyword arguments, got {type(params).__name__}: "
            'e.g. --params \'{"max_depth": 3}\'.'
        )
    return params


def import_class(path: str) -> Callable[..., Any]:
    """``package.module:Class`` (or ``package.module.Class``) imported, or a ``ValueError``."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"model {path!r} is not an import path: write package.module:Class.")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"cannot import module {module_name!r} for model {path!r}: {err}.") \
            from None
    cls = getattr(module, attr, None)
    if cls is None or not callable(cls):
        raise ValueError(f"module {module_name!r} has no class {attr!r} (model {path!r}).")
    return cls


def _instantiate(cls: Callable[..., Any], params: dict[str, Any], label: str) -> Any:
    """``cls(**params)`` after checking each name against the estimator's parameters."""
    try:
        known = set(cls().get_params(deep=False)) if hasattr(cls, "get_params") else None
    except TypeError:  # a class that needs arguments: let it check its own
        known = None
    if known is not None:
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(
                f"unknown parameter {unknown[0]!r} for {label}; its parameters are: "
                f"{', '.join(sorted(known))}."
            )
    try:
        model = cls(**params)
    except TypeError as err:
        raise ValueError(f"cannot build {label} with --params {params}: {err}.") from None
    if not hasattr(model, "fit") or not hasattr(model, "predict"):
        raise ValueError(f"{label} is not an estimator: it needs fit and predict methods.")
    return model


def describe(name: str) -> str:
    """One line about a registry name or an import path."""
    entry = MODELS.get(name)
    return entry.about if entry is not None else f"imported from {name}"


def build_model(
    name: str, task: str, params: dict[str, Any] | None = None, n_rows: int = 1000
) -> Any:
    """The estimator for ``name`` (registry name or import path) and ``task``.

    ``params`` override the registry's defaults; an unknown parameter is a
    ``ValueError`` that lists the valid ones. ``n_rows``: the number of
    training rows, for defaults that scale with it.
    """
    if task not in TASKS:
        raise ValueError(f"task={task!r} must be one of {TASKS}.")
    params = dict(params or {})
    entry = MODELS.get(name)
    if entry is None:
        if ":" not in name and "." not in name:
            raise ValueError(
                f"unknown model {name!r}: use one of {', '.join(sorted(MODELS))} "
                "or an import path package.module:Class."
            )
        model = _instantiate(import_class(name), params, name)
        if task == "classification" and not is_classifier(model):
            # a regressor on labels would score nonsense: say so rather than run
            if getattr(model, "_estimator_type", None) == "regressor":
                raise ValueError(f"{name} is a regressor but the task is classification.")
        return model
    target = entry.target(task)
    if target is None:
        other = "regression" if task == "classification" else "classification"
        raise ValueError(f"model {name!r} is for {other} only; the task is {task}.")
    defaults = {k: v(n_rows) if callable(v) else v
                for k, v in entry.defaults.get(task, {}).items()}
    merged = {**defaults, **params}
    model = _instantiate(import_class(target), merged, f"{name} ({target.split(':')[1]})")
    return model
