"""Which rows are credibly harmful? The false share of thresholding Data-OOB's eligible rows.

The default cut (:mod:`tdshap.cut`) removes only rows whose interval lies
wholly below tau with every row tested at once (Bonferroni). Whether a row is
"really" below tau is judged against a long run: ``ThresholdingOOB`` with
``--truth-bags`` bags (every row pulled over a thousand times) gives each row's
mean out-of-bag score. Then ``--runs`` default runs (100 bags after the first
pass, other seeds) are tested with each interval method, and the script
prints how many runs made any false eligible row (a row whose long-run mean
is not below this run's tau), the false share of all eligible rows, how many
of the planted rows became eligible, and the coverage of each row's 95%
interval of the long-run mean.

    PYTHONPATH=src:. .venv/bin/python benchmarks/eligibility.py \\
        [--cases tree:digits knn:make_classification tree:diabetes logreg:wine] [--runs 20]
        [--per-row-bags]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import platform
import sys
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.detection import DATASETS, build_estimator, make_split
from tdshap.cut import eligible_rows
from tdshap.methods import ThresholdingOOB

METHODS = ("pooled", "moderated", "t")


def one_case(model: str, name: str, noise: float, runs: int, truth_bags: int,
             per_row_bags: bool = False) -> None:
    load, task = DATASETS[name]
    X, y = load()
    split = make_split(name, X, y, task, 0, noise)
    est = build_estimator(model, task, len(split.y))
    start = time.perf_counter()
    truth = ThresholdingOOB(est, max_iter=truth_bags, random_state=999,
                            per_row_bags=per_row_bags).fit(split.X, split.y)
    mu = truth.result_.values
    print(f"\n{model} on {name}, {noise:.0%} planted, N = {len(split.y)}: long run of "
          f"{truth_bags} bags in {time.perf_counter() - start:.0f} s, every row pulled >= "
          f"{truth.result_.counts.min()} times\n")
    print("| interval | runs with a false eligible row | false / eligible rows | "
          "planted rows eligible (mean) | 95% coverage (mean, worst run) |")
    print("|---|---|---|---|---|")
    stats: dict[str, list[list[float]]] = {m: [] for m in METHODS}
    errors = []  # (run mean - long-run mean) / the row's own standard error, per run and row
    for seed in range(runs):
        r = ThresholdingOOB(est, max_iter=100, random_state=seed,
                            per_row_bags=per_row_bags).fit(split.X, split.y).result_
        own = dataclasses.replace(r, interval="normal")
        se = (own.ci_high - own.values) / 1.959964
        with np.errstate(invalid="ignore", divide="ignore"):
            errors.append(np.where(se > 0, (r.values - mu) / se, np.nan))
        for m in METHODS:
            named = dataclasses.replace(r, extra={**r.extra, "eligibility_interval": m})
            eligible = eligible_rows(named)
            assert eligible is not None
            false = eligible & (mu >= r.threshold)
            shown = dataclasses.replace(r, interval=m)
            cover = float(np.mean((shown.ci_low <= mu) & (mu <= shown.ci_high)))
            stats[m].append([float(false.any()), float(false.sum()), float(eligible.sum()),
                             float((eligible & split.is_planted).sum()), cover])
    for m in METHODS:
        a = np.array(stats[m])
        share = a[:, 1].sum() / max(a[:, 2].sum(), 1.0)
        print(f"| {m} | {int(a[:, 0].sum())} of {runs} | {int(a[:, 1].sum())} / "
              f"{int(a[:, 2].sum())} ({share:.1%}) | {a[:, 3].mean():.1f} of "
              f"{len(split.planted)} | {a[:, 4].mean():.3f}, {a[:, 4].min():.3f} |", flush=True)
    # Why the intervals miss: a row's error in SE units has spread 1 and mean 0 over runs
    # when its pulls are independent draws of one law. A persistent per-row mean (the
    # same sign in every run: which rows the bandit held out with it) is bias; a spread
    # above 1 around it is variance the row's own samples do not show.
    z = np.array(errors)
    per_row = np.nanmean(z, axis=0)
    print(f"\nerror in SE units: spread {np.nanstd(z):.2f} (1 if honest); per-row mean over "
          f"runs: spread {np.nanstd(per_row):.2f} across rows (noise alone "
          f"{1 / np.sqrt(runs):.2f}); spread around it {np.nanstd(z - per_row):.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=["tree:digits", "knn:make_classification",
                                                       "tree:diabetes", "logreg:wine"],
                        help="model:dataset (models and datasets of benchmarks/detection.py)")
    parser.add_argument("--noise", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--truth-bags", type=int, default=4000)
    parser.add_argument("--per-row-bags", action="store_true",
                        help="ThresholdingOOB(per_row_bags=True): k-NN list bags over all "
                             "rows, each row scored by the bag without it")
    args = parser.parse_args(argv)
    print(f"# eligibility benchmark, {datetime.date.today()}, {platform.machine()}, Python "
          f"{platform.python_version()}; {args.runs} runs per case")
    warnings.simplefilter("ignore")
    with threadpool_limits(1):
        for case in args.cases:
            model, _, name = case.partition(":")
            one_case(model, name, args.noise, args.runs, args.truth_bags,
                     args.per_row_bags)


if __name__ == "__main__":
    sys.exit(main())
