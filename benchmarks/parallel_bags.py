"""Thresholding Data-OOB's bags on workers: ``ThresholdingOOB(bags_per_round=B,
n_jobs=J)`` against one bag a look in one process, side by side in one run.

Data: ``make_classification`` (20 features, 8 informative, 2 classes), N training rows,
10% of the labels flipped (the planted rows); the model refits every bag (gradient
boosting by default: no neighbour lists). For each setting the runs alternate
(``--repeats`` times each, so that the machine's noise falls on all) and the script
prints the median wall seconds, the ratio to one bag a look in one process, the AUROC
of "lower value = planted", and whether the values equal those of the same
``bags_per_round`` in one process (they must: every bag is drawn in the main process):

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/parallel_bags.py --jobs 2
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from sklearn.datasets import make_classification
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score

from tdshap.methods.tdoob import ThresholdingOOB

MODELS = {
    "gbdt": lambda: GradientBoostingClassifier(n_estimators=50, random_state=0),
    "hist_gbdt": lambda: HistGradientBoostingClassifier(max_iter=50, random_state=0),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--model", choices=sorted(MODELS), default="gbdt")
    ap.add_argument("--jobs", type=int, default=-1)
    ap.add_argument("--bags-per-round", type=int, default=8)
    ap.add_argument("--max-iter", type=int, default=100, help="bags after the first pass")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    X, y = make_classification(args.rows, 20, n_informative=8, random_state=args.seed)
    rng = np.random.default_rng(args.seed)
    planted = rng.choice(args.rows, args.rows // 10, replace=False)
    y[planted] = 1 - y[planted]
    is_planted = np.zeros(args.rows, dtype=bool)
    is_planted[planted] = True

    b = args.bags_per_round
    settings = [(1, 1), (b, 1), (b, args.jobs)]
    seconds: dict[tuple[int, int], list[float]] = {s: [] for s in settings}
    values: dict[tuple[int, int], np.ndarray] = {}
    for _ in range(args.repeats):
        for per_round, jobs in settings:
            est = ThresholdingOOB(MODELS[args.model](), max_iter=args.max_iter,
                                  bags_per_round=per_round, n_jobs=jobs,
                                  random_state=args.seed)
            start = time.perf_counter()
            est.fit(X, y)
            seconds[(per_round, jobs)].append(time.perf_counter() - start)
            values.setdefault((per_round, jobs), est.result_.values)
    print(f"{os.cpu_count()} cores; {args.model}, N={args.rows}, {args.max_iter} bags after "
          f"the first pass; median wall seconds of {args.repeats} alternating runs each")
    print("| bags_per_round | n_jobs | wall s | ratio to 1 / 1 | AUROC | values equal "
          "to n_jobs=1's |")
    print("|---|---|---|---|---|---|")
    base = float(np.median(seconds[(1, 1)]))
    for per_round, jobs in settings:
        wall = float(np.median(seconds[(per_round, jobs)]))
        v = values[(per_round, jobs)]
        auroc = roc_auc_score(is_planted, -v)
        same = bool(np.array_equal(v, values[(per_round, 1)]))
        print(f"| {per_round} | {jobs} | {wall:.1f} | {base / wall:.2f} | {auroc:.3f} | "
              f"{same} |", flush=True)


if __name__ == "__main__":
    main()
