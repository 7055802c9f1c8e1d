"""Warm start (enhancement iii) for scikit-learn's MLP and for LightGBM.

:class:`WarmStarted` wraps an ``MLPClassifier``/``MLPRegressor`` or an
``LGBMClassifier``/``LGBMRegressor``. ``prepare(X, y)`` trains it once on all
of D for ``pretrain_steps`` (epochs, or boosting rounds); every later ``fit``
on a subset continues from that model for ``steps`` more:

* MLP: a copy of the pretrained network refitted with the estimator's own
  ``warm_start=True`` and ``max_iter=steps`` (its weights are kept; the
  optimiser restarts). scikit-learn refuses a warm start on a subset that
  lacks one of D's classes; the valuation then scores that subset by its
  fallback.
* LightGBM: a new booster of ``steps`` rounds fitted with
  ``init_model=`` the pretrained booster, i.e. ``steps`` trees grown on the
  subset on top of the trees grown on D. A multi-class subset missing one of
  D's classes cannot continue D's booster either (fallback score).

``warm_start=False`` fits a fresh model for ``steps`` (the "few-epoch"
ablation; set ``steps`` to the full count for "full-train").
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import get_tags

from tdshap._validation import check_count
from tdshap.utility.warm_start import Pretrained, Stopwatch


def _kind(estimator: Any) -> str:
    """``"mlp"`` or ``"lightgbm"``, or a ValueError naming what is supported."""
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    if isinstance(estimator, MLPClassifier | MLPRegressor):
        return "mlp"
    if type(estimator).__module__.startswith("lightgbm"):
        return "lightgbm"
    raise ValueError(
        "estimator must be scikit-learn's MLPClassifier/MLPRegressor or LightGBM's "
        f"LGBMClassifier/LGBMRegressor, got {type(estimator).__name__}. For PyTorch "
        "modules use tdshap.torch.estimators.TorchClassifier."
    )


class WarmStarted(BaseEstimator):
    """Train once on all of D, then continue on each subset (see the module docstring).

    Parameters
    ----------
    estimator:
        An MLP or LightGBM estimator (cloned; its ``max_iter`` / ``n_estimators``
        is replaced by ``steps`` or ``pretrain_steps``).
    steps:
        Epochs (MLP) or boosting rounds (LightGBM) of every subset fit.
    pretrain_steps:
        Epochs or rounds of the one fit on all of D.
    warm_start:
        Continue from the pretrained model (``True``) or fit from scratch.
    random_state:
        Seed of every fit (the valuation sets it per fit).
    init_from:
        Set by :meth:`prepare`: the model fitted on all of D.
    """

    def __init__(self, estimator: Any = None, *, steps: int = 20, pretrain_steps: int = 200,
                 warm_start: bool = True, random_state: int | None = None,
                 init_from: Pretrained | None = None) -> None:
        self.estimator = estimator
        self.steps = steps
        self.pretrain_steps = pretrain_steps
        self.warm_start = warm_start
        self.random_state = random_state
        self.init_from = init_from

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        if self.estimator is not None:
            tags.estimator_type = get_tags(self.estimator).estimator_type
        return tags

    def _fresh(self, steps: int) -> Any:
        kind = _kind(self.estimator)
        model = clone(self.estimator)
        model.set_params(**{"max_iter" if kind == "mlp" else "n_estimators": int(steps)})
        if "random_state" in model.get_params():
            model.set_params(random_state=self.random_state)
        return model

    def _check(self) -> None:
        _kind(self.estimator)
        for name in ("steps", "pretrain_steps"):
            check_count(getattr(self, name), name, low=1)

    def prepare(self, X: Any, y: Any) -> WarmStarted:
        """A copy that continues from a model fitted on all of (X, y) (if ``warm_start``)."""
        self._check()
        prepared = clone(self).set_params(init_from=None)
        if not self.warm_start:
            return prepared
        with Stopwatch() as watch, warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = self._fresh(self.pretrain_steps).fit(X, y)
        return prepared.set_params(init_from=Pretrained(
            model, n_rows=len(y), steps=self.pretrain_steps, seconds=watch.seconds))

    def fit(self, X: Any, y: Any) -> WarmStarted:
        self._check()
        with warnings.catch_warnings():
            # a fixed number of epochs is the point here, not convergence
            warnings.simplefilter("ignore", ConvergenceWarning)
            if not (self.warm_start and self.init_from is not None):
                self.model_ = self._fresh(self.steps).fit(X, y)
            elif _kind(self.estimator) == "mlp":
                model = copy.deepcopy(self.init_from.payload)
                model.set_params(warm_start=True, max_iter=int(self.steps),
                                 random_state=self.random_state)
                self.model_ = model.fit(X, y)
            else:
                model = self._fresh(self.steps)
                self.model_ = model.fit(X, y, init_model=self.init_from.payload.booster_)
        if hasattr(self.model_, "classes_"):
            self.classes_ = self.model_.classes_
        return self

    def predict(self, X: Any) -> np.ndarray:
        return self.model_.predict(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        return self.model_.predict_proba(X)
