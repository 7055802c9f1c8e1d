"""The cleansing curve's refits on workers: ``find_harmful(..., n_jobs=J)`` against
``n_jobs=1``, side by side in one run, with models whose cut refits (a forest, an MLP,
gradient boosting).

For each dataset and model the two settings alternate (``--repeats`` times each, so that
the machine's noise falls on both) and the script prints the median wall seconds of each,
their ratio, the fits made by workers and whether every answer (the table, the curve,
the cut) was equal:

    OMP_NUM_THREADS=1 PYTHONPATH=src:. python benchmarks/parallel_cut.py --jobs 2

``--min-seconds`` moves the library's bar for starting workers (5 s), to measure where it
pays.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.neural_network import MLPClassifier

from tdshap import find_harmful
from tdshap.utility import subset_fits

DATASETS = {"breast_cancer": load_breast_cancer, "digits": load_digits, "wine": load_wine}
MODELS = {
    "forest": lambda: RandomForestClassifier(n_estimators=100, random_state=0),
    "mlp": lambda: MLPClassifier(max_iter=300, random_state=0),
    "hist_gbdt": lambda: HistGradientBoostingClassifier(max_iter=50, random_state=0),
}


def _answer(rows: Any) -> tuple[Any, ...]:
    c = rows.run.cleansing
    return rows.table, c.val_scores, c.test_scores, c.n_remove


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return bool(a[0].equals(b[0]) and np.array_equal(a[1], b[1])
                and np.array_equal(a[2], b[2]) and a[3] == b[3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=-1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--datasets", nargs="+", default=["breast_cancer", "digits"],
                    choices=sorted(DATASETS))
    ap.add_argument("--models", nargs="+", default=sorted(MODELS), choices=sorted(MODELS))
    ap.add_argument("--min-seconds", type=float, default=subset_fits.MIN_PARALLEL_SECONDS,
                    help="the in-process seconds of fits left before workers start (the "
                    "library's bar, by default)")
    args = ap.parse_args()
    subset_fits.MIN_PARALLEL_SECONDS = args.min_seconds
    print(f"{os.cpu_count()} cores; n_jobs 1 against {args.jobs}; {args.repeats} runs each, "
          "alternating; median wall seconds of find_harmful (valuation + cut); workers where "
          f"the fits left take {args.min_seconds:g} s or more")
    print("| dataset | model | method | fits (grid + folds) | n_jobs=1 s | "
          f"n_jobs={args.jobs} s | ratio | worker fits | same answer |")
    print("|---|---|---|---|---|---|---|---|---|")
    for data in args.datasets:
        X, y = DATASETS[data](return_X_y=True)
        for name in args.models:
            seconds: dict[int, list[float]] = {1: [], args.jobs: []}
            answers: dict[int, tuple[Any, ...]] = {}
            workers = 0
            for _ in range(args.repeats):
                for jobs in (1, args.jobs):
                    start = time.perf_counter()
                    rows = find_harmful(X, y, MODELS[name](), n_jobs=jobs)
                    seconds[jobs].append(time.perf_counter() - start)
                    answers.setdefault(jobs, _answer(rows))
                    if jobs != 1:
                        workers = rows.run.cleansing.extra["n_worker_fits"]
            c = rows.run.cleansing
            one, many = np.median(seconds[1]), np.median(seconds[args.jobs])
            same = _same(answers[1], answers[args.jobs])
            print(f"| {data} | {name} | {rows.run.result.algorithm} | "
                  f"{c.extra['n_fits']} + {c.extra['n_check_fits']} | {one:.1f} | "
                  f"{many:.1f} | {one / many:.2f} | {workers} | {same} |", flush=True)


if __name__ == "__main__":
    main()
