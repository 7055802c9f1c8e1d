"""Exact k-NN Shapley's wall time as ``find_harmful`` runs it for a k-NN, against Data-OOB's.

For each training size N (validation N/2, as in ``benchmarks/detection.py``'s split) it
fits, on ``make_classification`` (10 features, 3 classes) and ``make_regression`` (8
features) with 10% of the labels or targets moved:

* ``KNNShapley(queries="both")`` for a 5-NN classifier (``find_harmful``'s choice),
* ``KNNShapley(queries="training", query_clip=1)`` for a 5-NN regressor (its choice),
* ``DataOOB`` with 200 bags of the same 5-NN (the peer of ``benchmarks/detection.py``),

and prints the best of ``--repeats`` wall seconds of each and the ratio of the closed
form to Data-OOB. The values do not depend on the timing; to compare two versions of the
code, run this with each one's ``src`` on ``PYTHONPATH``, one after the other (the
machine's load moves these figures more than small changes do). All fits share one long
process, where the allocator has settled: ``benchmarks/knn_fresh_process.py`` times each
method's first fits in a process of its own, as a user's script meets them.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src:. .venv/bin/python \\
        benchmarks/knn_shapley_speed.py --sizes 300 900 3000
"""

from __future__ import annotations

import argparse
from functools import partial

import numpy as np
from sklearn.datasets import make_classification, make_regression
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

from benchmarks.detection import NOISE, plant_labels, plant_targets
from benchmarks.rank_sort import best_seconds, print_table_start
from tdshap.methods import DataOOB, KNNShapley


def noisy_split(n: int, classification: bool) -> tuple[np.ndarray, ...]:
    """N training rows with 10% of their labels (targets) moved as ``detection.py`` moves
    them, N/2 validation rows."""
    rng = np.random.default_rng(n)
    if classification:
        X, y = make_classification(2 * n, 10, n_informative=5, n_classes=3, random_state=n)
        y_train, _ = plant_labels(y[:n], NOISE, rng)
    else:
        X, y = make_regression(2 * n, 8, noise=10.0, random_state=n)
        y_train, _ = plant_targets(y[:n], NOISE, rng)
    return X[:n], y_train, X[n:n + n // 2], y[n:n + n // 2]


def compared(classification: bool) -> tuple[KNNShapley, DataOOB]:
    """The closed form for a 5-NN of the task (a regressor's: ``method="knn_shapley_train"``,
    auto's until session 34), and Data-OOB's 200 bags of it."""
    knn = KNeighborsClassifier(5) if classification else KNeighborsRegressor(5)
    closed = KNNShapley(knn, queries="both", random_state=0) if classification \
        else KNNShapley(knn, queries="training", query_clip=1.0)
    return closed, DataOOB(knn, n_estimators=200, random_state=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 900, 3000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print_table_start(f"exact k-NN Shapley's wall time, best of {args.repeats}",
                      ["N", "task", "closed form s", "Data-OOB (200 bags) s", "ratio"])
    for n in args.sizes:
        for classification in (True, False):
            data = noisy_split(n, classification)
            closed, oob = compared(classification)
            ours = best_seconds(partial(closed.fit, *data), args.repeats)
            peer = best_seconds(partial(oob.fit, *data), args.repeats)
            task = "classification" if classification else "regression"
            print(f"| {n:,} | {task} | {ours:.3f} | {peer:.3f} | {ours / peer:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
