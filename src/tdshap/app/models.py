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
import math
from dataclasses import dataclass, field
from typing import Any

from sklearn.base import BaseEstimator, is_classifier, is_regressor

from tdshap._io import repeated_key
from tdshap._validation import ParameterError

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


#: Top-level packages an import path (``--model package.module:Class``) may come from.
#: Importing a module runs its code, so nothing outside this list (extended by
#: ``allow=``, the command's ``--allow-import``) is imported to find out what it is.
ALLOWED_PACKAGES: tuple[str, ...] = ("sklearn", "lightgbm", "xgboost", "catboost", "tdshap")
#: Per package: the parameter that keeps its models from writing files (CatBoost writes a
#: catboost_info/ folder into the working directory on every fit by default: outside the
#: output folder, into the user's), and the parameters that would make them write.
NO_FILES: dict[str, tuple[str, Any, tuple[str, ...]]] = {
    "catboost": ("allow_writing_files", False, ("allow_writing_files", "train_dir")),
}


#: Lists inside lists deeper than this are refused (no estimator parameter needs more).
MAX_PARAM_DEPTH = 20


def _json_problem(value: Any, depth: int = 0) -> str | None:
    """Why ``value`` is not a JSON scalar (text, finite number, true/false, null) or a
    (shallow) list of them, naming the part inside a list that is not; None if it is."""
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a finite number"
    if value is None or isinstance(value, str | bool | int):
        return None
    if not isinstance(value, list):
        return f"{type(value).__name__} values are not accepted"
    if depth >= MAX_PARAM_DEPTH:
        return f"its lists nest more than {MAX_PARAM_DEPTH} deep"
    for item in value:
        problem = _json_problem(item, depth + 1)
        if problem:  # said of the item: "list values are not accepted" denied lists
            return problem if problem.startswith(("its lists", "in its list")) else \
                f"in its list, {problem}"
    return None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = repeated_key(pairs)
    if found is not None:
        raise ParameterError(f"`params` gives {found[0]!r} {found[1]} times: give "
                             "each parameter once.", "params")
    return dict(pairs)


def _not_a_number(word: str) -> Any:
    raise ParameterError(f"`params` holds {word}, which is not a number a model takes (nor "
                         "standard JSON): give a finite number.", "params")


#: Whole numbers longer than this are refused (no estimator parameter needs more digits).
MAX_PARAM_DIGITS = 100


def _whole_number(text: str) -> int:
    # Python itself refuses ints of more than 4,300 digits, in words that named neither
    # --params nor the fix ("Exceeds the limit (4300 digits) for integer string conversion")
    if len(text.lstrip("-")) > MAX_PARAM_DIGITS:
        raise ParameterError(f"`params` holds a whole number of {len(text.lstrip('-')):,} "
                             f"digits, more than any model parameter takes (at most "
                             f"{MAX_PARAM_DIGITS}): give a smaller number.", "params")
    return int(text)


def parse_params(text: str | None) -> dict[str, Any]:
    """The model's parameters as a JSON object of scalars and lists, or a ``ParameterError``."""
    if text is None or not text.strip():
        return {}
    try:
        params = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_not_a_number,
                            parse_int=_whole_number)
    except json.JSONDecodeError as err:
        raise ParameterError(
            f"`params` is not valid JSON ({err.msg} at character {err.pos}): "
            'write an object, e.g. `params` \'{"max_depth": 3}\'.', "params"
        ) from None
    except RecursionError:
        raise ParameterError(f"`params` nests lists or objects too deeply (more than "
                             f"{MAX_PARAM_DEPTH} levels): give numbers, text, true/false, "
                             "null or lists of them.", "params") from None
    if not isinstance(params, dict):
        raise ParameterError(
            f"`params` must be a JSON object of keyword arguments, got {type(params).__name__}: "
            'e.g. `params` \'{"max_depth": 3}\'.', "params"
        )
    check_param_values(params)
    return params


def check_param_values(params: dict[str, Any]) -> None:
    """Each value a JSON scalar or list: nothing that could name code to run."""
    for name, value in params.items():
        what = _json_problem(value)
        if what:
            raise ParameterError(
                f"`params` {name!r}: {what}; give finite numbers, text, true/false, null or "
                f"lists of them (at most {MAX_PARAM_DEPTH} deep).", "params"
            )


class PackageNotAllowed(ParameterError):
    """A model named from a package tdshap does not import from: ``problem`` says so, the
    message adds the fix of a caller that has ``allow_import``; a caller without it (such
    as ``find_harmful``) words its own fix after ``problem``."""

    def __init__(self, problem: str, package: str) -> None:
        super().__init__(f"{problem}; to trust it, allow it with `allow_import` {package}.",
                         "model", "allow_import")
        self.problem = problem
        self.package = package


def import_class(path: str, allow: tuple[str, ...] = ()) -> type:
    """The estimator class named by ``package.module:Class``, or a ``ValueError``.

    Only modules of :data:`ALLOWED_PACKAGES` (and ``allow``) are imported, and
    only a class is returned: never a function or a module, so that naming a
    model can never run anything but an estimator's constructor.
    """
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr or not all(  # a __main__ module runs a program
        part.isidentifier() and part != "__main__" for part in [*module_name.split("."), attr]
    ):
        raise ParameterError(f"model {path!r} is not an import path: write "
                             "package.module:Class.", "model")
    package = module_name.split(".")[0]
    allowed = (*ALLOWED_PACKAGES, *allow)
    if package not in allowed:
        raise PackageNotAllowed(
            f"`model` {path!r}: package {package!r} is not one tdshap imports models from "
            f"({', '.join(allowed)})", package)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"cannot import module {module_name!r} for model {path!r}: {err}.") \
            from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise ValueError(f"module {module_name!r} has no class {attr!r} (model {path!r}).")
    if not isinstance(cls, type):
        raise ParameterError(f"`model` {path!r} is a {type(cls).__name__}, not a class: name a "
                             "scikit-learn estimator class.", "model")
    return cls


def check_estimator_class(cls: type, task: str, label: str) -> None:
    """Refuse ``cls`` unless it is a scikit-learn estimator class for ``task``.

    Checked on the class and on an instance with default parameters (a
    scikit-learn constructor only stores its arguments), before the user's
    parameters are given to it.
    """
    if not (issubclass(cls, BaseEstimator) and callable(getattr(cls, "fit", None))
            and callable(getattr(cls, "predict", None))):
        raise ParameterError(
            f"{label} is not a scikit-learn estimator class (one derived from "
            "sklearn.base.BaseEstimator with fit and predict).", "model")
    try:
        probe = cls()
    except Exception as err:
        raise ValueError(f"{label} cannot be built with its default parameters: {err}.") \
            from None
    wanted = is_classifier if task == "classification" else is_regressor
    if not wanted(probe):
        kind = ("a classifier" if is_classifier(probe) else "a regressor"
                if is_regressor(probe) else "neither a classifier nor a regressor")
        raise ParameterError(
            f"{label} is {kind}, but the task is {task}: choose a "
            f"{'classifier' if task == 'classification' else 'regressor'}.", "model", "task")


def _without_files(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` for the import path ``name`` with its package's switch that stops its
    models writing files (:data:`NO_FILES`); a parameter that would make them write is
    refused: tdshap writes into its output folder only."""
    entry = NO_FILES.get(name.split(":")[0].split(".")[0])
    if entry is None:
        return params
    switch, off, writers = entry
    given = [p for p in writers if p in params and not (p == switch and params[p] == off)]
    if given:
        raise ParameterError(f"`params` gives {given[0]!r}, which makes {name} write files "
                             "beside its fits, outside the output folder: leave it out "
                             f"(tdshap sets {switch}={off!r}).", "params")
    return {**params, switch: off}


def _instantiate(cls: type, params: dict[str, Any], label: str) -> Any:
    """``cls(**params)`` after checking each name against the estimator's parameters, and
    (for a scikit-learn class) each value against its declared types and ranges."""
    check_param_values(params)
    known = set(cls._get_param_names())  # type: ignore[attr-defined]
    unknown = sorted(set(params) - known)
    if unknown:
        raise ParameterError(
            f"unknown parameter {unknown[0]!r} for {label}; its parameters are: "
            f"{', '.join(sorted(known))}.", "params"
        )
    try:
        model = cls(**params)
    except Exception as err:
        raise ParameterError(f"cannot build {label} with `params` {params}: {err}.", "params") \
            from None
    # scikit-learn checks types and ranges only when fitting, and a k-NN valued in closed
    # form is never fitted: n_neighbors=-1 or "5" would pass unnoticed. The check is
    # scikit-learn's own (a private method: skipped where a version lacks it)
    validate = getattr(model, "_validate_params", None)
    if getattr(cls, "_parameter_constraints", None) and callable(validate):
        try:
            validate()
        except (TypeError, ValueError) as err:
            raise ParameterError(f"`params` of {label}: {err}", "params") from None
    return model


def describe(name: str) -> str:
    """One line about a registry name or an import path."""
    entry = MODELS.get(name)
    return entry.about if entry is not None else f"imported from {name}"


def build_model(
    name: str, task: str, params: dict[str, Any] | None = None, n_rows: int = 1000,
    allow: tuple[str, ...] = (),
) -> Any:
    """The estimator for ``name`` (registry name or import path) and ``task``.

    ``params`` override the registry's defaults; an unknown parameter is a
    ``ValueError`` that lists the valid ones. An import path must name an
    estimator class for ``task`` in an allowed package (:func:`import_class`,
    ``allow`` adds packages); it is checked before it is built. ``n_rows``: the number of
    training rows, for defaults that scale with it.
    """
    if task not in TASKS:
        raise ValueError(f"task={task!r} must be one of {TASKS}.")
    params = dict(params or {})
    entry = MODELS.get(name)
    if entry is None:
        if ":" not in name and "." not in name:
            raise ParameterError(
                f"unknown model {name!r}: use one of {', '.join(sorted(MODELS))} "
                "or an import path package.module:Class.", "model"
            )
        cls = import_class(name, allow)
        check_estimator_class(cls, task, name)
        return _instantiate(cls, _without_files(name, params), name)
    target = entry.target(task)
    if target is None:
        other = "regression" if task == "classification" else "classification"
        raise ValueError(f"model {name!r} is for {other} only; the task is {task}.")
    defaults = {k: v(n_rows) if callable(v) else v
                for k, v in entry.defaults.get(task, {}).items()}
    merged = {**defaults, **params}
    return _instantiate(import_class(target), merged, f"{name} ({target.split(':')[1]})")
