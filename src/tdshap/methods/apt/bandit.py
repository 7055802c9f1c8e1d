"""State of the APT thresholding bandit (Locatelli et al. 2016; the paper, Sec. 3.2)."""

from __future__ import annotations

import numpy as np


class APTState:
    """Running means, pull counts and variances of N arms, and the APT index.

    ``B_n = sqrt(T_n) * (|mu_n - tau| + eps)``; the arms to pull next are those
    with the smallest ``B_n``, ties broken uniformly at random.
    """

    def __init__(self, n: int, tau: float, eps: float) -> None:
        self.tau = float(tau)
        self.eps = float(eps)
        self.mu = np.zeros(n)
        self.counts = np.zeros(n, dtype=np.int64)
        self.m2 = np.zeros(n)  # sum of squared deviations (Welford)
        self.low = np.full(n, np.inf)
        self.high = np.full(n, -np.inf)

    @property
    def n(self) -> int:
        return len(self.mu)

    def update(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Add one pull to each of ``arms`` (distinct) with the given rewards."""
        arms = np.asarray(arms, dtype=np.intp)
        rewards = np.asarray(rewards, dtype=float)
        if len(np.unique(arms)) != len(arms):
            raise ValueError("arms of one update must be distinct")
        self.counts[arms] += 1
        delta = rewards - self.mu[arms]
        self.mu[arms] += delta / self.counts[arms]
        self.m2[arms] += delta * (rewards - self.mu[arms])
        self.low[arms] = np.minimum(self.low[arms], rewards)
        self.high[arms] = np.maximum(self.high[arms], rewards)

    def index(self, pending: np.ndarray | None = None) -> np.ndarray:
        """The APT index B_n of every arm; ``pending``: pulls of each arm already chosen
        but not yet rewarded, counted as made (a batch's earlier picks)."""
        # a tau or eps near the float range (--eps 1e308) overflowed this to inf, with numpy's
        # "overflow encountered" warning on every round: the gap is capped at the largest
        # float and the product may be inf, so an arm never pulled stays first (0, not
        # 0 * inf = NaN) and the rest go by pulls, as APT does when eps dwarfs every gap
        with np.errstate(over="ignore"):
            gap = np.minimum(np.abs(self.mu - self.tau) + self.eps, np.finfo(float).max)
            counts = self.counts if pending is None else self.counts + pending
            return np.sqrt(counts) * gap

    def select(self, k: int, rng: np.random.Generator,
               pending: np.ndarray | None = None) -> np.ndarray:
        """The ``k`` arms with the smallest ``B_n``, ties broken uniformly at random
        (``pending``: see :meth:`index`)."""
        tiebreak = rng.random(self.n)
        index = self.index(pending)
        if not 0 < k < self.n or np.isnan(index).any():
            return np.lexsort((tiebreak, index))[:k]
        # only the arms up to the k-th smallest index are sorted: the same k arms in the
        # same order as sorting all N (the sort is stable), without sorting 20,000 arms
        # every round for the few pulled
        candidates = np.flatnonzero(index <= np.partition(index, k - 1)[k - 1])
        return candidates[np.lexsort((tiebreak[candidates], index[candidates]))][:k]

    def variances(self) -> np.ndarray:
        """Sample variance of each arm's pulls (NaN below two pulls)."""
        out = np.full(self.n, np.nan)
        ok = self.counts >= 2
        out[ok] = self.m2[ok] / (self.counts[ok] - 1)
        return out

    def observed_width(self) -> float:
        """Largest observed ``max - min`` of one arm's pulls (0 before two pulls)."""
        pulled = self.counts > 0
        if not pulled.any():
            return 0.0
        return float(np.max(self.high[pulled] - self.low[pulled]))

    # -- (de)serialisation for checkpoints and results -------------------
    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "mu": self.mu,
            "counts": self.counts,
            "m2": self.m2,
            "low": self.low,
            "high": self.high,
        }

    @classmethod
    def from_arrays(cls, tau: float, eps: float, arrays: dict[str, np.ndarray]) -> APTState:
        state = cls(len(arrays["mu"]), tau, eps)
        for name in ("mu", "counts", "m2", "low", "high"):
            getattr(state, name)[...] = arrays[name]
        return state
