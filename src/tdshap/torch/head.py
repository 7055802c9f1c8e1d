"""Valuation in the representation of the full-data model (issue 16, item 1).

``TorchClassifier(..., valuation_head="knn")`` keeps the network for
everything a user fits, predicts and cleanses with, but changes what a
valuation refits for every subset: the network is trained once on all of D
(the warm start's pretraining, enhancement iii), every training and
validation row is mapped to its *representation* (the input of the
network's last ``nn.Linear`` layer, in eval mode: for the paper's CNN the
128 ReLU units before the output layer), and only a light head is trained on
those embeddings for each subset:

``"knn"``
    ``KNeighborsClassifier(n_neighbors=10)`` (Euclidean): the exact k-NN
    fast path (:mod:`tdshap.utility.fast.neighbors`) computes a chain one
    row at a time, so a TDShap run costs seconds instead of hours;
``"logreg"``
    ``LogisticRegression(C=1.0, max_iter=1000)`` (multinomial, lbfgs);
    about tens of milliseconds a fit, no fast path;
an estimator
    any scikit-learn classifier, cloned per fit (e.g. another k).

The embeddings are standardised by the mean and standard deviation of the
whole training set's embeddings (one fixed map, the same for every
subset, so a head's fast path stays exact). With ``warm_start=False`` the
representation is that of the untrained network (its seeded random
initialisation): nothing learned from D enters it, the ablation of the
warm start in this setting.

The valuation methods need nothing new: the estimator's ``utility_class``
(see :class:`~tdshap.methods.base.BaseValuation`) builds the head's utility
over the embeddings with :func:`tdshap.utility.fast.make_utility`, and the
result is the same :class:`~tdshap.result.ValuationResult`, its fits being
head fits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sklearn.base import clone, is_classifier
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from torch import nn

from tdshap.utility.base import Utility
from tdshap.utility.fast import make_utility

HEADS = ("knn", "logreg")
KNN_NEIGHBORS = 10


def check_head(head: Any) -> None:
    """Raise ``ValueError`` unless ``head`` is None, a name in :data:`HEADS` or a classifier."""
    if head is None or (isinstance(head, str) and head in HEADS):
        return
    if isinstance(head, str | type) or not (hasattr(head, "fit") and is_classifier(head)):
        raise ValueError(
            f"valuation_head={head!r} must be None (train the network on every subset), "
            f"one of {list(HEADS)} or a scikit-learn classifier."
        )


def head_estimator(head: Any) -> Any:
    """A fresh (unfitted) head for ``valuation_head``."""
    check_head(head)
    if head == "knn":
        return KNeighborsClassifier(n_neighbors=KNN_NEIGHBORS)
    if head == "logreg":
        return LogisticRegression(C=1.0, max_iter=1000)
    if head is None:
        raise ValueError("valuation_head is None: there is no head.")
    return clone(head)


def last_linear(module: nn.Module) -> nn.Linear:
    """The module's last ``nn.Linear`` (in registration order): its classifier layer."""
    linears = [m for m in module.modules() if isinstance(m, nn.Linear)]
    if not linears:
        raise ValueError(
            f"{type(module).__name__} has no nn.Linear layer: valuation_head needs the "
            "network to end in one (its input is the representation)."
        )
    return linears[-1]


@torch.no_grad()
def representation(module: nn.Module, X: torch.Tensor, batch: int = 512) -> np.ndarray:
    """The input of ``module``'s last linear layer for every row of ``X`` (eval mode), float64."""
    layer = last_linear(module)
    captured: list[torch.Tensor] = []

    def hook(_: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
        captured.append(inputs[0].detach().flatten(1).cpu())

    was_training = module.training
    module.eval()
    handle = layer.register_forward_pre_hook(hook)
    try:
        for i in range(0, len(X), batch):
            module(X[i : i + batch])
    finally:
        handle.remove()
        module.train(was_training)
    if not captured:
        return np.empty((0, layer.in_features))
    return torch.cat(captured).numpy().astype(np.float64)


def standardiser(E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and scale of the training embeddings (scale 1 for constant features)."""
    mean = E.mean(axis=0)
    scale = E.std(axis=0)
    return mean, np.where(scale > 0, scale, 1.0)


def head_utility(estimator: Any, metric: Any, X: np.ndarray, y: np.ndarray,
                 X_val: np.ndarray, y_val: np.ndarray, **kwargs: Any) -> Utility:
    """The utility of ``estimator.valuation_head`` on the prepared network's embeddings.

    ``estimator`` is the prepared ``TorchClassifier`` (``prepare`` set its classes and,
    with warm start, its pretrained weights); ``kwargs`` go to the utility.
    """
    both = estimator.embed(np.concatenate([X, X_val]))  # one network for both, even unseeded
    E, E_val = both[: len(X)], both[len(X) :]
    mean, scale = standardiser(E)
    return make_utility(head_estimator(estimator.valuation_head), metric,
                        (E - mean) / scale, np.asarray(y), (E_val - mean) / scale,
                        np.asarray(y_val), **kwargs)
