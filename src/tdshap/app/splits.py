"""Seeded train/validation/test splits of arrays (the demo and the experiments use them)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
