"""Helpers for the fast-path tests: run the same chains through two utilities."""

from __future__ import annotations

import numpy as np

from tdshap.utility.base import Truncation, Utility


def random_chains(n: int, sizes: list[tuple[int, int]], seed: int) -> list[tuple[np.ndarray,
                                                                                 np.ndarray]]:
    """``(prefix, block)`` pairs with the given ``(prefix size, block size)``, disjoint rows."""
    rng = np.random.default_rng(seed)
    out = []
    for p, k in sizes:
        perm = rng.permutation(n)
        out.append((perm[:p], perm[p : p + k]))
    return out


def compare_chains(
    reference: Utility,
    fast: Utility,
    chains: list[tuple[np.ndarray, np.ndarray]],
    truncation: Truncation | None = None,
) -> float:
    """Largest relative difference between the two utilities' chain values."""
    worst = 0.0
    for i, (prefix, block) in enumerate(chains):
        a = reference.evaluate_chain(prefix, block, i, truncation)
        b = fast.evaluate_chain(prefix, block, i, truncation)
        assert a.shape == b.shape
        scale = np.maximum(np.abs(a), 1e-12)
        worst = max(worst, float(np.max(np.abs(a - b) / scale)))
    return worst
