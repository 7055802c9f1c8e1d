"""Whole TDShap runs with and without the exact fast paths, side by side.

Two tasks, each run twice with the same seed (``fast_path=True`` / ``False``):

* Abalone regression, ``Ridge()``, -MAE, the paper's settings (split
  1000/1000/1000, tau = -0.1, eps = 0.1, K = 100, N_min = 900, 50 iterations);
  needs ``$TDSHAP_DATA_DIR/abalone/abalone.data`` (skipped when absent);
* k-NN classification, ``KNeighborsClassifier(5)``, accuracy, on
  ``make_classification`` (20 features, split 1000/1000/1000) with the
  paper's classification settings (tau = -0.01, eps = 0.01, K = 50,
  N_min = 100, 50 iterations).

Prints wall seconds, the speed-up, and the largest difference between the two
runs' values. BLAS/OpenMP run on ``--threads`` threads for both runs (default
1: the dev machine has 2 shared cores, where threads oversubscribe).

    TDSHAP_DATA_DIR=/work/shared/datasets .venv/bin/python benchmarks/fast_paths.py
"""

from __future__ import annotations

import argparse
import platform
import time
from typing import Any

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsClassifier
from threadpoolctl import threadpool_limits

from tdshap import TDShap, datasets
from tdshap.app.splits import Split


def abalone(seed: int) -> Split | None:
    """Abalone (Sex one-hot, target Rings) split 1000/1000/1000, or None if absent."""
    try:
        return datasets.abalone(seed, download=False)
    except FileNotFoundError:
        return None


def classification(seed: int) -> Split:
    X, y = make_classification(n_samples=3000, n_features=20, n_informative=8, flip_y=0.05,
                               random_state=seed)
    return datasets.split(X, y, (1000, 1000, 1000), seed, name="make_classification")


def compare(name: str, data: Split, estimator: Any, metric: str, seed: int,
            **settings: Any) -> dict[str, Any]:
    runs = {}
    for fast in (True, False):
        model = TDShap(estimator, metric, random_state=seed, fast_path=fast, **settings)
        start = time.perf_counter()
        model.fit(data.X_train, data.y_train, data.X_val, data.y_val)
        runs[fast] = (time.perf_counter() - start, model.result_)
    (t_fast, fast_r), (t_slow, slow_r) = runs[True], runs[False]
    diff = np.abs(fast_r.values - slow_r.values)
    scale = float(np.max(np.abs(slow_r.values)))
    row = {
        "task": name,
        "fast path": fast_r.extra["fast_path"],
        "wall s (fast)": round(t_fast, 3),
        "wall s (refit)": round(t_slow, 3),
        "speed-up": round(t_slow / t_fast, 1),
        "max |dV|": float(diff.max()),
        "max |dV| / max |V|": float(diff.max()) / scale if scale else 0.0,
        "same counts": bool(np.array_equal(fast_r.counts, slow_r.counts)),
        "same harmful": bool(np.array_equal(fast_r.harmful, slow_r.harmful)),
        "fits (fast/refit)": f"{fast_r.n_fits}/{slow_r.n_fits}",
        "evaluations": f"{fast_r.n_evaluations}/{slow_r.n_evaluations}",
    }
    for k, v in row.items():
        print(f"  {k:20s} {v}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=50)
    args = parser.parse_args()
    print(f"machine: {platform.machine()} {platform.processor()}, python "
          f"{platform.python_version()}, threads {args.threads}, seed {args.seed}")
    with threadpool_limits(args.threads):
        data = abalone(args.seed)
        if data is None:
            print("Abalone: skipped ($TDSHAP_DATA_DIR/abalone/abalone.data not found)")
        else:
            print("Abalone, Ridge(), -MAE, K=100, N_min=900:")
            compare("abalone ridge", data, Ridge(), "neg_mae", args.seed, tau=-0.1, eps=0.1,
                    k=100, n_min=900, max_iter=args.iterations)
        print("make_classification, KNeighborsClassifier(5), accuracy, K=50, N_min=100:")
        compare("knn classification", classification(args.seed), KNeighborsClassifier(5),
                "accuracy", args.seed, tau=-0.01, eps=0.01, k=50, n_min=100,
                max_iter=args.iterations)


if __name__ == "__main__":
    main()
