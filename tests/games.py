"""Toy games with known Shapley values: oracles for tests and sanity checks.

* :class:`AdditiveModel` with :func:`first_prediction` as the metric makes
  ``V(S) = sum of y over S``: every marginal of row ``n`` is exactly ``y_n``.
* :func:`exact_shapley` enumerates every subset of a small game for the exact
  (optionally size-restricted, SPEC §2 enhancement (i)) values.
* :func:`coverage_games`, :func:`marginal_law` and :class:`Law` give the
  exact law of one pull of every row of a small game, and :func:`iid_pulls` /
  :func:`apt_pulls` draw many runs' pulls from it at once, for measuring how
  often intervals cover the exact values (``test_coverage.py``,
  ``benchmarks/coverage.py``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from tdshap.methods.apt.thresholds import auto_thresholds


class AdditiveModel(RegressorMixin, BaseEstimator):
    """V(S) = sum of y over S when scored with :func:`first_prediction`.

    The training targets carry each row's weight ``a_n``; the model predicts
    their sum everywhere, so the marginal of every row is exactly ``a_n``.
    """

    def fit(self, X: np.ndarray, y: np.ndarray) -> AdditiveModel:
        self.total_ = float(np.sum(y))
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.full(len(X), self.total_)


class TableModel(RegressorMixin, BaseEstimator):
    """V(S) = ``table[bitmask of S]`` when scored with :func:`first_prediction`.

    The training inputs' first column holds the row numbers, so TDShap itself
    can run on any subset table (its fallback for the empty set predicts the
    mean target: give every row the target ``table[0]``).
    """

    def __init__(self, table: np.ndarray | None = None) -> None:
        self.table = table

    def fit(self, X: np.ndarray, y: np.ndarray) -> TableModel:
        assert self.table is not None
        self.value_ = float(self.table[sum(1 << int(i) for i in X[:, 0])])
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.full(len(X), self.value_)


def first_prediction(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    return float(y_pred[0])


def exact_shapley(value: Callable[[tuple[int, ...]], float], n: int, n_min: int = 0
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Size-restricted Shapley values and the variance of one marginal, by enumeration.

    Prefix size p uniform on {n_min..n-1}; prefix a uniform p-subset of the others.
    ``n_min = 0`` gives the ordinary Shapley value.
    """
    cache: dict[tuple[int, ...], float] = {}

    def v(s: tuple[int, ...]) -> float:
        key = tuple(sorted(s))
        if key not in cache:
            cache[key] = value(key)
        return cache[key]

    phi = np.zeros(n)
    second = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for p in range(n_min, n):
            weight = 1.0 / ((n - n_min) * math.comb(n - 1, p))
            for s in itertools.combinations(others, p):
                d = v((*s, i)) - v(s)
                phi[i] += weight * d
                second[i] += weight * d * d
    return phi, second - phi**2


# -- enumerable games for interval coverage (benchmarks/coverage.py, test_coverage.py) --

def subset_table(value: Callable[[tuple[int, ...]], float], n: int) -> np.ndarray:
    """``V(S)`` for every subset of ``n`` rows, indexed by the bitmask of ``S``."""
    table = np.empty(2**n)
    for mask in range(2**n):
        table[mask] = value(tuple(j for j in range(n) if mask >> j & 1))
    return table


def marginal_law(table: np.ndarray, n: int, n_min: int = 0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Every marginal one pull of TDShap (``k = 1``) can draw, with its probability.

    Returns ``(atoms, probs)`` of shape ``(n, n_atoms)``: row ``i`` holds
    ``V(S + i) - V(S)`` for every prefix ``S`` of the other rows with
    ``n_min <= |S| <= n - 1``, and the probability the sampler
    (:func:`tdshap.methods.apt.sampling.sample_chain`: size uniform, then a
    uniform subset of that size) draws ``S``. ``(atoms * probs).sum(1)`` is
    the exact size-restricted Shapley value.
    """
    masks = np.arange(2**n)
    sizes = np.array([bin(m).count("1") for m in masks])
    atoms, probs = [], []
    for i in range(n):
        bit = 1 << i
        prefixes = masks[((masks & bit) == 0) & (sizes >= n_min)]
        p = sizes[prefixes]
        atoms.append(table[prefixes | bit] - table[prefixes])
        probs.append(1.0 / ((n - n_min) * np.array([math.comb(n - 1, int(s)) for s in p])))
    return np.array(atoms), np.array(probs)


def utility_game(estimator: object, metric: str, X: np.ndarray, y: np.ndarray,
                 X_val: np.ndarray, y_val: np.ndarray) -> np.ndarray:
    """The subset table of a real model through tdshap's own ``Utility`` (fallbacks included)."""
    from tdshap.utility.base import Utility

    u = Utility(estimator, metric, X, y, X_val, y_val)
    return subset_table(lambda s: u(list(s)), len(y))


def nearest_neighbour_game(X: np.ndarray, y: np.ndarray, X_val: np.ndarray,
                           y_val: np.ndarray) -> np.ndarray:
    """Subset table of 1-NN validation accuracy, without refitting anything.

    ``V(S)`` is the share of validation rows whose nearest row of ``S`` has
    their label; ``V(empty)`` predicts the majority label of all of ``y``
    (the utility's fallback). Marginals are 0 unless the row becomes some
    validation row's nearest neighbour: mostly exactly 0.
    """
    order = np.argsort(((X_val[:, None, :] - X[None, :, :]) ** 2).sum(-1), axis=1)
    labels, freq = np.unique(y, return_counts=True)
    majority = float(np.mean(y_val == labels[np.argmax(freq)]))

    def value(s: tuple[int, ...]) -> float:
        if not s:
            return majority
        inside = np.isin(order, s)
        nearest = order[np.arange(len(order)), np.argmax(inside, axis=1)]
        return float(np.mean(y[nearest] == y_val))

    return subset_table(value, len(y))


def coverage_games(n: int = 9, seed: int = 0) -> dict[str, np.ndarray]:
    """Subset tables of the games interval coverage is measured on.

    * ``ridge_mae``: Ridge, -MAE, two training targets corrupted;
    * ``knn_accuracy``: 3-NN, accuracy, two labels flipped: many marginals
      are exactly 0 and the rest are multiples of 1 / n_val (the hard case);
    * ``nn1_accuracy``: the same rows under 1-NN (:func:`nearest_neighbour_game`);
    * ``additive``: every marginal of row i is a_i (zero variance);
    * ``ridge_outlier_mse``: Ridge, -MSE, one target 30 standard deviations
      off: rare, huge marginals (heavy tails);
    * ``voting``: a weighted majority game; a marginal is 1 when the row is
      pivotal and 0 otherwise, so it is 0 most of the time.
    """
    from sklearn.datasets import make_classification, make_regression
    from sklearn.linear_model import Ridge
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(seed)
    X, y = make_regression(n + 40, 3, noise=20.0, random_state=seed)
    y = y.copy()
    y[:2] += rng.choice([-1, 1], 2) * 3 * np.std(y)
    games = {"ridge_mae": utility_game(Ridge(1.0), "neg_mae", X[:n], y[:n], X[n:], y[n:])}
    Xc, yc = make_classification(n + 40, 4, n_informative=3, n_redundant=0,
                                 random_state=seed)
    yc = yc.copy()
    yc[:2] = 1 - yc[:2]
    games["knn_accuracy"] = utility_game(KNeighborsClassifier(3), "accuracy",
                                         Xc[:n], yc[:n], Xc[n:], yc[n:])
    games["nn1_accuracy"] = nearest_neighbour_game(Xc[:n], yc[:n], Xc[n:], yc[n:])
    a = rng.normal(size=n)
    games["additive"] = subset_table(lambda s: float(sum(a[j] for j in s)), n)
    yo = y.copy()
    yo[:2] -= yo[:2] - np.mean(y)  # only the outlier below is off
    yo[0] += 30 * np.std(y)
    games["ridge_outlier_mse"] = utility_game(Ridge(1.0), "neg_mse", X[:n], yo[:n],
                                              X[n:], y[n:])
    weights = rng.integers(1, 6, size=n)
    quota = weights.sum() // 2 + 1
    games["voting"] = subset_table(lambda s: float(sum(weights[j] for j in s) >= quota), n)
    return games


class Law:
    """The marginal law of every row of one game: draws pulls by inverse CDF."""

    def __init__(self, table: np.ndarray, n: int, n_min: int) -> None:
        self.atoms, probs = marginal_law(table, n, n_min)
        self.cdf = np.cumsum(probs, axis=1)
        self.cdf[:, -1] = 1.0
        self.exact = (self.atoms * probs).sum(axis=1)
        self.range = float(self.atoms.max() - self.atoms.min())

    def draw(self, rng: np.random.Generator, arms: np.ndarray) -> np.ndarray:
        """One marginal for each entry of ``arms`` (any shape)."""
        u = rng.random(arms.shape)
        out = np.empty(arms.shape)
        last = self.atoms.shape[1] - 1
        for i in np.unique(arms):
            chosen = arms == i
            idx = np.searchsorted(self.cdf[i], u[chosen])
            out[chosen] = self.atoms[i, np.minimum(idx, last)]
        return out


class Moments:
    """Counts, means and Welford sums of ``runs`` independent bandits at once."""

    def __init__(self, runs: int, n: int) -> None:
        self.counts = np.zeros((runs, n))
        self.mu = np.zeros((runs, n))
        self.m2 = np.zeros((runs, n))

    def add(self, rows: np.ndarray, arms: np.ndarray, x: np.ndarray) -> None:
        self.counts[rows, arms] += 1
        delta = x - self.mu[rows, arms]
        self.mu[rows, arms] += delta / self.counts[rows, arms]
        self.m2[rows, arms] += delta * (x - self.mu[rows, arms])

    def variances(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.counts >= 2, self.m2 / (self.counts - 1), np.nan)


def iid_pulls(law: Law, runs: int, rng: np.random.Generator, pulls: Sequence[int]
              ) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """``(n, counts, means, variances, samples)`` with every row pulled ``n`` times."""
    n_rows = len(law.exact)
    arms = np.broadcast_to(np.arange(n_rows)[None, :, None], (runs, n_rows, max(pulls)))
    samples = law.draw(rng, np.ascontiguousarray(arms))
    for n in pulls:
        x = samples[..., :n]
        counts = np.full((runs, n_rows), float(n))
        yield n, counts, x.mean(-1), x.var(-1, ddof=1), x


def apt_pulls(law: Law, runs: int, rng: np.random.Generator, pulls: Sequence[int]
              ) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray, None]]:
    """``(n, counts, means, variances, None)`` when the bandit has made ``n * N`` pulls.

    TDShap's loop with ``k = 1``: initialisation pulls every row once, then
    ``tau``/``eps`` are set by :func:`auto_thresholds`, then each round pulls
    the arm with the smallest ``B = sqrt(T) (|mu - tau| + eps)``, ties broken
    uniformly at random (:meth:`APTState.select`).
    """
    n_rows = len(law.exact)
    m = Moments(runs, n_rows)
    every = np.arange(runs)
    for arm in range(n_rows):
        m.add(every, np.full(runs, arm), law.draw(rng, np.full(runs, arm)))
    tau, eps = np.array([auto_thresholds(mu, "auto", "auto") for mu in m.mu]).T
    done = n_rows
    for n in pulls:
        while done < n * n_rows:
            index = np.sqrt(m.counts) * (np.abs(m.mu - tau[:, None]) + eps[:, None])
            tied = index == index.min(axis=1, keepdims=True)
            arms = np.argmax(np.where(tied, rng.random(index.shape), -1.0), axis=1)
            m.add(every, arms, law.draw(rng, arms))
            done += 1
        yield n, m.counts.copy(), m.mu.copy(), m.variances(), None


def knn_per_query(X: np.ndarray, y: np.ndarray, Xq: np.ndarray, yq: np.ndarray, k: int,
                  task: str, own: np.ndarray | None = None) -> np.ndarray:
    """``(queries, N)``: every training row's exact k-NN Shapley value in each query's
    game (0 for a row left out of its own query's game)."""
    from tdshap.methods.knn_shapley import KNNShapley

    order, phi = KNNShapley._chunk(X, y, Xq, yq, k, task, own)
    out = np.zeros((len(Xq), len(X)))
    np.put_along_axis(out, order, phi, axis=1)
    return out
