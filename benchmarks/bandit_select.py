"""The APT bandit's choice of the next arms: ``APTState.select`` against sorting every arm.

For each number of arms N it fills a bandit with random means and pull counts, times
``select(k)`` (the arms up to the k-th smallest index sorted) and the full
``np.lexsort`` that it replaced (best of ``--repeats``, each the mean of 20 calls),
checks that both give the same arms in the same order, and prints the ratio. Thresholding
Data-OOB looks once a bag; at 20,000 rows the full sort was 0.5 s of a 4.5 s valuation.

    PYTHONPATH=src:. .venv/bin/python benchmarks/bandit_select.py --arms 1000 20000 100000
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial

import numpy as np

from benchmarks.rank_sort import best_seconds, print_table_start
from tdshap.methods.apt.bandit import APTState


def mean_seconds(call: Callable[[], np.ndarray], repeats: int) -> float:
    """A call's seconds: the best of ``repeats`` means over 20 calls (one is ~0.1 ms)."""
    return best_seconds(lambda: [call() for _ in range(20)], repeats) / 20


def full_sort(state: APTState, k: int, rng: np.random.Generator) -> np.ndarray:
    """What ``select`` did before: every arm sorted by (index, a random tie-break)."""
    return np.lexsort((rng.random(state.n), state.index()))[:k]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arms", type=int, nargs="+", default=[1000, 20000, 100000])
    parser.add_argument("--pulls", type=int, default=100, help="k, the arms chosen per look")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print_table_start(f"bandit_select, k = {args.pulls}, best of {args.repeats}",
                      ["arms", "full sort s", "select s", "ratio"])
    for n in args.arms:
        rng = np.random.default_rng(n)
        state = APTState(n, 0.0, 0.01)
        state.mu[:] = np.round(rng.normal(size=n), 2)  # ties among the indices too
        state.counts[:] = rng.integers(1, 6, n)
        chosen = state.select(args.pulls, np.random.default_rng(1))
        tiebreak = np.random.default_rng(1).random(n)
        assert np.array_equal(chosen, np.lexsort((tiebreak, state.index()))[:args.pulls])
        draw = np.random.default_rng(2)
        full = mean_seconds(partial(full_sort, state, args.pulls, draw), args.repeats)
        fast = mean_seconds(partial(state.select, args.pulls, draw), args.repeats)
        print(f"| {n:,} | {full:.5f} | {fast:.5f} | {full / fast:.1f} |", flush=True)


if __name__ == "__main__":
    main()
