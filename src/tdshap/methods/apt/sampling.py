"""Which permutations TDShap evaluates (the paper, Sec. 3.3, enhancements (i) and (ii)).

A block of K arms is evaluated on a permutation in which the K stand
consecutively after a prefix P. Uniform over the permutations allowed by
enhancement (i) (``|P| >= n_min``) means: ``|P|`` uniform on
``{n_min, ..., N - K}``, ``P`` a uniformly random ``|P|``-subset of the other
``N - K`` rows, and the K in uniformly random order. ``K = 1, n_min = 0`` is
a uniformly random permutation, as in the basic algorithm.
"""

from __future__ import annotations

import numpy as np


def check_block_size(n: int, k: int, n_min: int) -> None:
    """Raise ``ValueError`` unless ``1 <= k <= n`` and ``0 <= n_min <= n - k``."""
    if k < 1 or k > n:
        raise ValueError(f"k={k} must be between 1 and the number of training rows N={n}.")
    if n_min < 0:
        raise ValueError(f"n_min={n_min} must be >= 0.")
    if n_min > n - k:
        raise ValueError(
            f"n_min={n_min} is larger than N - k = {n} - {k} = {n - k}: no prefix that "
            f"large leaves room for a block of {k}. Lower n_min or k."
        )


def sample_prefix(
    rng: np.random.Generator, n: int, block: np.ndarray, n_min: int
) -> np.ndarray:
    """A uniformly random prefix for ``block``: size uniform on {n_min..n-len(block)}."""
    k = len(block)
    size = int(rng.integers(n_min, n - k + 1))
    mask = np.ones(n, dtype=bool)
    mask[block] = False
    others = np.flatnonzero(mask)
    return rng.choice(others, size=size, replace=False)


def sample_chain(
    rng: np.random.Generator, n: int, block: np.ndarray, n_min: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(prefix, ordered_block)`` for one block evaluation."""
    prefix = sample_prefix(rng, n, block, n_min)
    return prefix, rng.permutation(block)


def initial_blocks(rng: np.random.Generator, n: int, k: int) -> list[np.ndarray]:
    """Shuffle the arms and cut them into groups of ``k`` (the last may be smaller)."""
    order = rng.permutation(n)
    return [order[i : i + k] for i in range(0, n, k)]
