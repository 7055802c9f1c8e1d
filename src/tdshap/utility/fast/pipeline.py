"""Which pipelines a fast path may see through: stateless steps before the model.

A step that learns from the data it is fitted on (a scaler, an imputer)
changes with every subset, so the model of ``S`` is not the model of
``S ∪ {x}`` plus one row: such pipelines are not eligible. Steps that learn
nothing (``"passthrough"``, ``Normalizer``, ``FunctionTransformer``: their
scikit-learn tag ``requires_fit`` is False) transform each row on its own,
so they are applied once to the whole training and validation sets.
``FunctionTransformer`` is trusted to act row by row, as its tag says.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from tdshap.utility.fast.base import NotEligible


def _stateless(step: Any) -> bool:
    if step is None or step == "passthrough":
        return True
    try:
        from sklearn.utils import get_tags
    except ImportError:  # scikit-learn < 1.6 keeps the old tag dictionary
        tags: dict[str, Any] = getattr(step, "_get_tags", dict)()
        return bool(tags.get("stateless", False))
    return not get_tags(step).requires_fit


def final_estimator(estimator: Any) -> Any:
    """The model at the end of ``estimator`` (itself unless it is a Pipeline)."""
    return estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator


def stateless_transforms(estimator: Any) -> list[Any]:
    """The steps before the model; raises :class:`NotEligible` if any of them learns."""
    if not isinstance(estimator, Pipeline):
        return []
    steps = [step for _, step in estimator.steps[:-1]]
    for step in steps:
        if not _stateless(step):
            raise NotEligible(
                f"pipeline step {step!r} is refitted on every subset; only stateless "
                "steps may precede the model (standardise the data beforehand instead)."
            )
    return [step for step in steps if step is not None and step != "passthrough"]


def transform_once(
    estimator: Any, X: np.ndarray, X_val: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Training and validation features as the model at the end of ``estimator`` sees them."""
    for step in stateless_transforms(estimator):
        fitted = clone(step).fit(X)
        X, X_val = fitted.transform(X), fitted.transform(X_val)
    X, X_val = np.asarray(X), np.asarray(X_val)
    if X.ndim != 2 or X.dtype != np.float64 or X_val.dtype != np.float64:
        raise NotEligible(
            "fast paths need 2-D float64 features (float32 models round differently)."
        )
    return X, X_val


def head_features(estimator: Any, X: np.ndarray, y: np.ndarray, *others: np.ndarray,
                  method: str) -> tuple[np.ndarray, ...]:
    """``X`` and ``others`` as the model at the end of the Pipeline ``estimator`` sees them:
    its steps before the model fitted on ``(X, y)`` (unchanged for a bare model), as dense
    finite float arrays, for a closed form (``method``) that measures distances on them.

    A sparse output (a OneHotEncoder's default) is made dense: numpy read it as one object
    ("setting an array element with a sequence"). A step that fails (a PCA of more
    components than features) or gives NaN or infinite values is named, with the fix.
    """
    if not isinstance(estimator, Pipeline) or len(estimator.steps) < 2:
        return (X, *others)
    try:
        head = Pipeline(estimator.steps[:-1]).fit(X, y)
        out = [head.transform(a) for a in (X, *others)]
        arrays = tuple(np.asarray(a.toarray() if sp.issparse(a) else a, dtype=float)
                       for a in out)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{method}: the Pipeline's steps before the k-NN failed "
                         f"({type(err).__name__}: {err}); fix those steps, or give X "
                         "transformed and the k-NN alone.") from None
    # a step that drops or adds rows (a FunctionTransformer of a slice): each row's
    # neighbours were then another row's, or the closed form failed on its index
    changed = next(((a.shape, b.shape) for a, b in zip(arrays, (X, *others), strict=True)
                    if a.ndim != 2 or len(a) != len(b)), None)
    if changed is not None:
        raise ValueError(f"{method}: the Pipeline's steps before the k-NN turn "
                         f"{changed[1][0]} rows into an array of shape {changed[0]}: each "
                         "step must keep one row per row (fix those steps, or give X "
                         "transformed and the k-NN alone).")
    if not all(np.isfinite(a).all() for a in arrays):
        raise ValueError(f"{method}: the Pipeline's steps before the k-NN give NaN or "
                         "infinite values, and distances to them say nothing: fix those "
                         "steps (e.g. impute, or clip before a logarithm).")
    return arrays
