"""Do the intervals of exact k-NN Shapley on the training rows cover what they claim?

``KNNShapley(queries="training")`` (``find_harmful``'s default for a k-NN up to 5,000
rows) values a row by the mean, over the other training rows as queries, of its exact
Shapley value in each query's k-NN game. Its interval is that mean's: it says how much
the value rests on which rows happened to be sampled as queries. The quantity it
estimates is the mean over the *population* of queries: fresh rows drawn as the
training rows were (labels or targets noised the same way), each playing the game on
the same N training rows.

Per setting: draw N training rows and ``--fresh`` more from one distribution, plant 10%
label (or target) noise in both, value the training rows, and compute every row's
population value from the fresh queries (their own Monte Carlo error is ``--fresh``
times smaller in variance than the interval's, so a row counts as covered when the
interval holds it). Prints the share of rows covered by the 95% interval (mean and
worst over seeds), the interval's median half-width, and the share of rows the cut
would take (below 0) whose population value is not below 0.

    PYTHONPATH=src:. OMP_NUM_THREADS=1 .venv/bin/python benchmarks/query_coverage.py \\
        [--sizes 100 300 1000] [--seeds 10] [--fresh 50000]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

import numpy as np
from sklearn.datasets import make_classification, make_friedman1
from sklearn.preprocessing import StandardScaler

from tdshap.methods import KNNShapley

K = 5
NOISE = 0.1


def draw(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """``n`` rows of one fixed distribution (its shape fixed by ``random_state=0``)."""
    rng = np.random.default_rng(seed)
    if kind == "friedman1":
        X, y = make_friedman1(n, noise=1.0, random_state=int(rng.integers(2**31)))
        moved = rng.random(n) < NOISE
        y = y + moved * 3 * y.std() * rng.choice([-1.0, 1.0], n)
        return X, y, "regression"
    # make_classification draws its clusters from random_state: the same distribution for
    # every seed needs one draw, sliced by the seed
    X, y = make_classification(n_samples=200_000, n_features=8, n_informative=5,
                               n_classes=3, flip_y=0.0, class_sep=1.0, random_state=0)
    rows = rng.choice(len(y), size=n, replace=False)
    X, y = X[rows], y[rows]
    moved = rng.random(n) < NOISE
    y = np.where(moved, (y + rng.integers(1, 3, n)) % 3, y)
    return X, y, "classification"


def one(kind: str, n: int, fresh: int, seed: int) -> dict[str, float]:
    X, y, task = draw(kind, n + fresh, seed)
    X = StandardScaler().fit(X[:n]).transform(X)
    Xt, yt, Xq, yq = X[:n], y[:n], X[n:], y[n:]
    r = KNNShapley(n_neighbors=K, task=task, queries="training").fit(Xt, yt).result_
    # the population value: fresh queries on the same N rows (centred as the fit did)
    shift = float(np.mean(yt)) if task == "regression" else 0.0
    target, queries = (yt - shift, yq - shift) if task == "regression" else (yt, yq)
    total = np.zeros(n)
    step = max(1, 2**20 // n)
    for lo in range(0, fresh, step):
        total += KNNShapley._chunk(Xt, target, Xq[lo:lo + step], queries[lo:lo + step], K,
                                   task).sum(axis=0)
    truth = total / fresh
    covered = (r.ci_low <= truth) & (truth <= r.ci_high)
    below = r.values < 0
    false = below & (truth >= 0)
    return {"coverage": float(covered.mean()),
            "half_width": float(np.median((r.ci_high - r.ci_low) / 2)),
            "below": float(below.mean()),
            "false_below": float(false.sum() / max(1, below.sum()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", nargs="+", default=["classification", "friedman1"],
                        choices=["classification", "friedman1"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[100, 300, 1000])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--fresh", type=int, default=50_000)
    args = parser.parse_args()
    print(f"# query coverage, {datetime.date.today()}, {platform.machine()}, {K}-NN, "
          f"{NOISE:.0%} noise, {args.seeds} seeds, {args.fresh:,} fresh queries\n")
    print("| data | N | 95% coverage: mean (worst seed) | median half-width | rows below 0 "
          "| of them not below 0 in the population | s |")
    print("|---|---|---|---|---|---|---|")
    for kind in args.kinds:
        for n in args.sizes:
            start = time.perf_counter()
            runs = [one(kind, n, args.fresh, seed) for seed in range(args.seeds)]
            cov = [r["coverage"] for r in runs]
            print(f"| {kind} | {n} | {np.mean(cov):.3f} ({min(cov):.3f}) | "
                  f"{np.median([r['half_width'] for r in runs]):.3g} | "
                  f"{np.mean([r['below'] for r in runs]):.1%} | "
                  f"{np.mean([r['false_below'] for r in runs]):.1%} | "
                  f"{time.perf_counter() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
