"""Wide data: time and peak memory of ``tdshap clean`` on a file of many columns, and of
TDShap's exact Ridge chains with many features.

Each case runs in a child process of its own (its peak resident memory is the child's
``ru_maxrss``), once per source tree given with ``--src``, so that two versions of the
code are measured side by side in one run on the same machine:

    PYTHONPATH=src:. python benchmarks/wide.py --src OLD/src --src src

Cases: ``clean``: a CSV of ``--rows`` rows and ``--columns`` numeric columns and a binary
target through ``tdshap clean`` with its defaults (exact k-NN Shapley); ``ridge``: TDShap
with ``Ridge`` on ``neg_mae`` (the normal-equation fast path), 300 rows, 100 validation
rows, ``--features`` features, 2 rounds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RIDGE = """
import numpy as np
from sklearn.linear_model import Ridge
from tdshap import TDShap
d = {features}
rng = np.random.default_rng(0)
X = rng.normal(size=(300, d)); y = X[:, 0] + rng.normal(size=300)
Xv = rng.normal(size=(100, d)); yv = Xv[:, 0]
m = TDShap(Ridge(), "neg_mae", max_iter=2, random_state=0).fit(X, y, Xv, yv)
print(m.result_.extra.get("fast_path"))
"""


def write_wide_csv(path: Path, rows: int, columns: int) -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(size=(rows, columns)).round(3)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(",".join(f"c{i}" for i in range(columns)) + ",y\n")
        for r in range(rows):
            fh.write(",".join(map(str, values[r])) + f",{int(values[r, 0] > 0)}\n")


def measure(command: list[str], src: str, cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, peak resident GiB and the last output line of one child process."""
    env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    out = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    last = out.strip().splitlines()[-1] if out.strip() else ""
    if child.returncode:
        last = f"exit {child.returncode}: {last}"
    return seconds, usage.ru_maxrss / 2**20, last  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", action="append", help="a source tree to run (repeatable)")
    parser.add_argument("--rows", type=int, default=60)
    parser.add_argument("--columns", type=int, default=100_000)
    parser.add_argument("--features", type=int, nargs="+", default=[1000, 2000])
    args = parser.parse_args()
    sources = [str(Path(s).resolve()) for s in (args.src or ["src"])]
    print(f"# wide data, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print("| case | source | wall s | peak GiB | last line |\n|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_wide_csv(work / "wide.csv", args.rows, args.columns)
        for src in sources:
            out = work / f"out-{abs(hash(src))}"
            seconds, gib, last = measure(
                [sys.executable, "-m", "tdshap.app.cli", "clean", "wide.csv", "--target", "y",
                 "--out", str(out), "--no-progress"], src, work)
            print(f"| clean {args.rows} x {args.columns:,} | {src} | {seconds:.1f} | "
                  f"{gib:.2f} | {last[:60]} |", flush=True)
        for features in args.features:
            for src in sources:
                seconds, gib, last = measure(
                    [sys.executable, "-c", RIDGE.format(features=features)], src, work)
                print(f"| ridge 300 x {features:,} | {src} | {seconds:.1f} | {gib:.2f} | "
                      f"{last[:60]} |", flush=True)


if __name__ == "__main__":
    main()
