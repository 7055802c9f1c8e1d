"""How exact k-NN Shapley orders each query's training rows: the stable sort against
``_rank`` (one SIMD sort of integer keys, each a distance's bits with its column in the
lowest ones, then a check of the rows where two keys' distances may differ).

Distances of random queries to random training rows (digits-sized by default:
1,348 queries, the training and validation rows of ``benchmarks/detection.py``'s
digits split, against 898 rows), with a share of the rows given ties (their first
half of distances rounded to one decimal). For each share it prints the best of
``--repeats`` wall seconds of ``np.argsort(kind="stable")``, the plain unstable
``np.argsort`` and ``_rank``, and checks that ``_rank`` equals the stable sort.

    PYTHONPATH=src .venv/bin/python benchmarks/rank_sort.py
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from datetime import date
from functools import partial

import numpy as np

from tdshap.methods.knn_shapley import _rank


def best_seconds(sort: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        sort()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=1348)
    parser.add_argument("--rows", type=int, default=898)
    parser.add_argument("--shares", type=float, nargs="+", default=[0.0, 0.2, 0.5, 1.0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"# rank_sort, {date.today()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"numpy {np.__version__}; {args.queries} x {args.rows} distances\n")
    print("| rows with a tie | stable s | unstable s | `_rank` s | stable / `_rank` |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for share in args.shares:
        dist = rng.random((args.queries, args.rows))
        tied = rng.random(args.queries) < share
        half = args.rows // 2
        dist[tied, :half] = np.round(dist[tied, :half], 1)
        if not np.array_equal(_rank(dist), np.argsort(dist, axis=1, kind="stable")):
            raise SystemExit(f"_rank differs from the stable sort at share {share}")
        stable = best_seconds(partial(np.argsort, dist, axis=1, kind="stable"), args.repeats)
        plain = best_seconds(partial(np.argsort, dist, axis=1), args.repeats)
        ranked = best_seconds(partial(_rank, dist), args.repeats)
        print(f"| {tied.mean():.0%} | {stable:.4f} | {plain:.4f} | {ranked:.4f} | "
              f"{stable / ranked:.2f} |")


if __name__ == "__main__":
    main()
