"""Overhead of the TDShap engine on the demo setting.

Prints wall time ÷ time spent inside the estimator's fit and predict (and
scoring). 1.00 means the engine costs nothing beyond the model itself.

    .venv/bin/python benchmarks/overhead.py [--trials 5]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from tdshap import TDShap
from tdshap.app.demo import DEMO_SETTINGS, breast_cancer, demo_estimator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    ratios = []
    for seed in range(args.trials):
        d = breast_cancer(seed)
        t0 = time.perf_counter()
        m = TDShap(demo_estimator(), "accuracy", random_state=seed, **DEMO_SETTINGS)
        m.fit(d.X_train, d.y_train, d.X_val, d.y_val)
        wall = time.perf_counter() - t0
        r = m.result_
        ratios.append(wall / r.fit_seconds)
        print(f"seed {seed}: wall {wall:.3f} s, inside fit/predict {r.fit_seconds:.3f} s, "
              f"fits {r.n_fits}, ratio {ratios[-1]:.3f}")
    machine = platform.processor() or platform.machine()
    print(f"machine: {machine}, python {platform.python_version()}")
    print(f"overhead ratio (wall / fit+predict): mean {np.mean(ratios):.3f}, "
          f"median {np.median(ratios):.3f} over {args.trials} trials")


if __name__ == "__main__":
    main()
