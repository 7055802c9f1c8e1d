"""Datasets and seeded splits used by the demo and the benchmarks.

Files that cannot ship with the package are found under a given path or the
environment variable ``TDSHAP_DATA_DIR``; nothing is bundled.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA_DIR_VAR = "TDSHAP_DATA_DIR"


@dataclass
class Split:
    """A train/validation/test split of one dataset."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    name: str = ""

    @property
    def train(self) -> tuple[np.ndarray, np.ndarray]:
        return self.X_train, self.y_train

    @property
    def val(self) -> tuple[np.ndarray, np.ndarray]:
        return self.X_val, self.y_val

    @property
    def test(self) -> tuple[np.ndarray, np.ndarray]:
        return self.X_test, self.y_test


def split(
    X: np.ndarray, y: np.ndarray, sizes: tuple[int, int, int], seed: int, name: str = ""
) -> Split:
    """Shuffle rows with ``seed`` and cut ``sizes = (train, val, test)`` rows."""
    n_train, n_val, n_test = sizes
    if n_train + n_val + n_test > len(y):
        raise ValueError(
            f"split sizes {sizes} need {sum(sizes)} rows but the data has {len(y)}."
        )
    perm = np.random.default_rng(seed).permutation(len(y))
    a, b = n_train, n_train + n_val
    tr, va, te = perm[:a], perm[a:b], perm[b : b + n_test]
    return Split(X[tr], y[tr], X[va], y[va], X[te], y[te], name=name)


def breast_cancer(seed: int, sizes: tuple[int, int, int] = (150, 150, 269)) -> Split:
    """scikit-learn's Breast Cancer Wisconsin, split 150/150/269 as in the paper."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return split(X, y, sizes, seed, name="breast_cancer")


def data_dir(path: str | os.PathLike[str] | None = None) -> Path | None:
    """``path`` if given, else ``$TDSHAP_DATA_DIR`` if set, else None."""
    if path is not None:
        return Path(path)
    env = os.environ.get(DATA_DIR_VAR)
    return Path(env) if env else None
