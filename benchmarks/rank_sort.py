"""How exact k-NN Shapley orders each query's training rows: the stable sort against
``_rank`` (one SIMD sort of integer keys, each a distance's bits with its column in the
lowest ones, then a check of the rows where two keys' distances may differ).

Distances of random queries to random training rows (digits-sized by default:
1,348 queries, the training and validation rows of ``benchmarks/detection.py``'s
digits split, against 898 rows), with a share of the rows given ties (their first
half of distances rounded to one decimal). For each share it prints the best of
``--repeats`` wall seconds of ``np.argsort(kind="stable")``, the plain unstable
``np.argsort``, numpy's sort of as many 64-bit integers (what ``_rank`` sorts) and
``_rank``, and checks that ``_rank`` equals the stable sort.

    PYTHONPATH=src .venv/bin/python benchmarks/rank_sort.py
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable, Sequence
from datetime import date
from functools import partial

import numpy as np

from tdshap.methods.knn_shapley import _rank


def print_table_start(title: str, columns: Sequence[str]) -> None:
    """A timing script's first lines: what it measured, with date, machine and numpy, then
    the header of its Markdown table."""
    print(f"# {title}, {date.today()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"numpy {np.__version__}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))


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
    print_table_start(f"rank_sort, {args.queries} x {args.rows} distances, best of "
                      f"{args.repeats}", ["rows with a tie", "stable s", "unstable s",
                                          "64-bit integer sort s", "`_rank` s",
                                          "stable / `_rank`"])
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
        # what _rank's keys cost to sort: the same bits as integers, no columns in them
        keys = best_seconds(partial(np.sort, dist.view(np.uint64), axis=1), args.repeats)
        ranked = best_seconds(partial(_rank, dist), args.repeats)
        print(f"| {tied.mean():.0%} | {stable:.4f} | {plain:.4f} | {keys:.4f} | "
              f"{ranked:.4f} | {stable / ranked:.2f} |")


if __name__ == "__main__":
    main()
