"""How much does TDShap's cleansing gain on Abalone depend on the split? Many splits, Ridge.

The paper reports its gains over 10 random 1000/1000/1000 splits. Ridge has an
exact fast path, so here each method runs on many splits in minutes, which
shows the spread of a 10-trial mean, whether the gain depends on the baseline
MAE, and paired differences between methods on the same splits:

* ``tdshap``: the paper's settings ((tau, eps) = (-0.1, 0.1), 50 iterations,
  K = 100, N_min = 900);
* ``seq``: :class:`tdshap.SequentialRemoval` of the same TDShap (N_min = 90% of
  the rows that remain), ``--step`` rows removed per stage, 500 ranked;
* ``loo100``: sequential LOO_100.

Every ranking is judged by ``tdshap.cleanse`` (grid 0, 10, ..., 500). Splits use
seeds ``--first`` .. ``--first + --splits - 1``; the study in docs/results.md
uses seeds 0-9, so ``--first 1000`` keeps the two apart.

    TDSHAP_DATA_DIR=/work/shared/datasets .venv/bin/python benchmarks/abalone_splits.py
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from scipy import stats
from sklearn.linear_model import Ridge
from threadpoolctl import threadpool_limits

from experiments import datasets
from tdshap import LeaveOneOut, SequentialRemoval, TDShap, cleanse

PAPER_GAIN = 0.055  # Ridge, TDShap: 1.617 - 1.562 (SPEC §6, Table 2)


def valuation(method: str, seed: int, step: int) -> object:
    tdshap = TDShap(Ridge(), "neg_mae", tau=-0.1, eps=0.1, max_iter=50, k=100, n_min=900,
                    random_state=seed)
    if method == "tdshap":
        return tdshap
    if method == "seq":
        return SequentialRemoval(tdshap.set_params(n_min=0.9), step=step, max_remove=500,
                                 random_state=seed)
    return LeaveOneOut(Ridge(), "neg_mae", k=100, max_remove=500, random_state=seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=100)
    ap.add_argument("--first", type=int, default=1000)
    ap.add_argument("--step", type=int, default=10)
    ap.add_argument("--methods", default="tdshap,seq,loo100")
    args = ap.parse_args()
    methods = args.methods.split(",")
    gains: dict[str, list[float]] = {m: [] for m in methods}
    baselines: list[float] = []
    seconds = dict.fromkeys(methods, 0.0)
    with threadpool_limits(1):
        for seed in range(args.first, args.first + args.splits):
            data = datasets.abalone(seed, download=False)
            for method in methods:
                start = time.perf_counter()
                result = valuation(method, seed, args.step).fit(*data.train, *data.val).result_
                seconds[method] += time.perf_counter() - start
                cleaned = cleanse(result, Ridge(), *data.train, *data.val, *data.test,
                                  metric="neg_mae", random_state=seed)
                gains[method].append(cleaned.cleaned_test - cleaned.baseline_test)
            baselines.append(-cleaned.baseline_test)
    print(f"Abalone, Ridge, {args.splits} splits (seeds {args.first}-"
          f"{args.first + args.splits - 1}); {platform.machine()}, "
          f"{time.strftime('%Y-%m-%d')}")
    ref = np.array(gains[methods[0]])
    for method in methods:
        g = np.array(gains[method])
        line = (f"{method:7s} gain {g.mean():+.4f} ± {g.std(ddof=1) / np.sqrt(len(g)):.4f} "
                f"(split sd {g.std(ddof=1):.4f}), {seconds[method] / len(g):.2f} s per split")
        if method != methods[0]:
            d = g - ref
            line += (f"; minus {methods[0]}: {d.mean():+.4f} ± "
                     f"{d.std(ddof=1) / np.sqrt(len(d)):.4f}, better on {np.mean(d > 0):.0%}")
        print(line)
    g = ref
    sd10 = g.std(ddof=1) / np.sqrt(10)
    fit = stats.linregress(baselines, g)
    print(f"{methods[0]}: sd of a 10-split mean {sd10:.4f}; the paper's +{PAPER_GAIN:.3f} is "
          f"{(PAPER_GAIN - g.mean()) / sd10:.1f} of those above our mean; "
          f"{np.mean([g[i:i + 10].mean() >= PAPER_GAIN for i in range(0, len(g) - 9, 10)]):.0%} "
          f"of disjoint 10-split blocks reach it")
    print(f"gain vs baseline MAE: slope {fit.slope:+.3f} ± {fit.stderr:.3f} "
          f"(r = {fit.rvalue:+.2f})")


if __name__ == "__main__":
    main()
