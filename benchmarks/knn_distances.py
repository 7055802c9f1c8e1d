"""Exact k-NN Shapley's squared distances: scipy's feature-by-feature sums against one
matrix product (``|a|² + |b|² - 2 a·b``, scikit-learn's ``euclidean_distances``).

For each feature count it prints the best of ``--repeats`` wall seconds of both ways
for ``--queries`` x ``--rows`` Gaussian rows and whether they order every query's rows
the same (the only thing k-NN Shapley takes from a distance), then the whole
``KNNShapley(queries="both").fit`` with the matrix product switched off
(``_PRODUCT_MIN_FEATURES`` past the feature count) and on, side by side in one
process, and the largest difference of their values. BLAS on one thread.

    PYTHONPATH=src .venv/bin/python benchmarks/knn_distances.py
"""

from __future__ import annotations

import argparse
import os
import platform
import timeit
from collections.abc import Callable
from datetime import date

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.metrics.pairwise import euclidean_distances
from threadpoolctl import threadpool_limits

from tdshap.methods import knn_shapley
from tdshap.methods.knn_shapley import KNNShapley


def best_seconds(work: Callable[[], object], repeats: int) -> float:
    return min(timeit.repeat(work, number=1, repeat=repeats))


def fit_values(X: np.ndarray, y: np.ndarray, Xv: np.ndarray, yv: np.ndarray,
               min_features: int) -> np.ndarray:
    knn_shapley._PRODUCT_MIN_FEATURES = min_features
    return KNNShapley(queries="both").fit(X, y, Xv, yv).result_.values


def measure(d: int, queries: int, rows: int, repeats: int, rng: np.random.Generator) -> str:
    """One table row for ``d`` features."""
    Q, X = rng.normal(size=(queries, d)), rng.normal(size=(rows, d))
    y = rng.integers(0, 3, rows)
    Xv, yv = Q[: queries // 3], rng.integers(0, 3, queries // 3)
    plain = best_seconds(lambda: cdist(Q, X, "sqeuclidean"), repeats)
    product = best_seconds(lambda: euclidean_distances(Q, X, squared=True), repeats)
    same = np.array_equal(
        np.argsort(cdist(Q, X, "sqeuclidean"), axis=1, kind="stable"),
        np.argsort(euclidean_distances(Q, X, squared=True), axis=1, kind="stable"))
    off = best_seconds(lambda: fit_values(X, y, Xv, yv, d + 1), repeats)
    on = best_seconds(lambda: fit_values(X, y, Xv, yv, 0), repeats)
    gap = np.abs(fit_values(X, y, Xv, yv, d + 1) - fit_values(X, y, Xv, yv, 0)).max()
    return (f"| {d} | {plain:.4f} | {product:.4f} | {plain / product:.1f} | {same} | "
            f"{off:.4f} | {on:.4f} | {off / on:.2f} | {gap:.1e} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=1500)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--features", type=int, nargs="+", default=[5, 10, 16, 20, 64, 200, 784])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"# knn_distances, {date.today()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"numpy {np.__version__}; {args.queries} queries x {args.rows} rows, BLAS 1 thread; "
          f"the product from {knn_shapley._PRODUCT_MIN_FEATURES} features on\n")
    print("| features | scipy s | product s | scipy / product | same order | fit s, scipy "
          "| fit s, product | fit ratio | max value difference |")
    print("|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    switch = knn_shapley._PRODUCT_MIN_FEATURES
    try:
        with threadpool_limits(1):
            for d in args.features:
                print(measure(d, args.queries, args.rows, args.repeats, rng))
    finally:  # fit_values sets the module's switch: put it back
        knn_shapley._PRODUCT_MIN_FEATURES = switch


if __name__ == "__main__":
    main()
