"""Exact k-NN Shapley and Data-OOB as a user's script meets them: each in a fresh process.

``benchmarks/knn_shapley_speed.py`` times best-of-N fits in one long process, where the
allocator has long since settled; a user's first ``find_harmful`` runs in a process that
has done little else, where freed memory may be handed back to the system and paged in
again (page faults). For each training size N and task this starts one process per
method, which builds ``knn_shapley_speed.noisy_split``'s data, fits three times, and
reports the first fit's seconds and minor page faults and the best of the three:

* ``KNNShapley(queries="both")`` for a 5-NN classifier (``find_harmful``'s choice),
  ``KNNShapley(queries="training", query_clip=1)`` for a 5-NN regressor (its choice
  until session 34, now ``method="knn_shapley_train"``),
* ``DataOOB`` with 200 bags of the same 5-NN.

To compare two versions of the code, run this with each one's ``src`` on ``PYTHONPATH``.
Page faults are counted on Linux (``resource``'s ``ru_minflt``).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src:. .venv/bin/python \\
        benchmarks/knn_fresh_process.py --sizes 1500 3000
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

from benchmarks.knn_shapley_speed import compared, noisy_split
from benchmarks.rank_sort import print_table_start
from tdshap.methods import DataOOB, KNNShapley

FITS = 3


def one(n: int, classification: bool, method: str) -> str:
    """``first seconds, first faults, best seconds`` of ``FITS`` fits in this process."""
    data = noisy_split(n, classification)
    closed, oob = compared(classification)
    model: KNNShapley | DataOOB = oob if method == "oob" else closed
    seconds, faults = [], []
    for _ in range(FITS):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        model.fit(*data)
        seconds.append(time.perf_counter() - start)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return f"{seconds[0]:.3f} {faults[0]} {min(seconds):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1500, 3000])
    parser.add_argument("--one", nargs=3, metavar=("N", "TASK", "METHOD"),
                        help=argparse.SUPPRESS)  # the child process's part
    args = parser.parse_args()
    if args.one:
        n, task, method = args.one
        print(one(int(n), task == "classification", method))
        return
    print_table_start(f"fresh processes, first fit and best of {FITS}",
                      ["N", "task", "closed form: first s (page faults)", "best s",
                       "Data-OOB: first s (page faults)", "best s"])
    for n in args.sizes:
        for task in ("classification", "regression"):
            cells = []
            for method in ("closed", "oob"):
                out = subprocess.run([sys.executable, __file__, "--one", str(n), task, method],
                                     capture_output=True, text=True, check=True).stdout
                first, faults, best = out.split()
                cells += [f"{first} ({int(faults):,})", best]
            print(f"| {n:,} | {task} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
