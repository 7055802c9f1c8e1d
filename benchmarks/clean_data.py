"""Do no harm: how many rows does the cut remove on clean data, and on planted noise?

``find_harmful`` with every default (``tdshap clean``'s engine: 25% of the rows
held out for validation and 25% for test, k-NN, 50 rounds) on data with
nothing planted: scikit-learn's digits, diabetes, wine and breast cancer, a
``make_classification`` and a ``make_friedman1`` set. Then on planted noise,
10% of the training labels moved to another class (validation and test stay
clean): digits, wine, ``make_classification``. For each run the same valuation
is cut twice: by the default rule (``one_se``: remove only on evidence beyond
the validation noise, only rows credibly below tau) and by the paper's rule
(best validation score). Prints, per dataset, the means over seeds of the
rows removed (% of the valued rows; the largest share in brackets) and the
clean test score before → after, for both rules.

    PYTHONPATH=src:. .venv/bin/python benchmarks/clean_data.py [--seeds 3] [--datasets ...]
        [--max-iter 50] [--no-clean] [--no-noisy] [--by-seed] [--query-clip 1]
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
from sklearn.datasets import (
    load_breast_cancer,
    load_diabetes,
    load_digits,
    load_wine,
    make_classification,
    make_friedman1,
)

import tdshap.app.valuer as valuer
import tdshap.cut
from benchmarks.defaults_unseen import _split, plant_labels
from tdshap.app.harmful import DEFAULT_MAX_ITER, find_harmful
from tdshap.cleansing import cleanse
from tdshap.cut import CONTROLS, ELIGIBILITY_CONTROL

Loader = Callable[[], tuple[np.ndarray, np.ndarray]]


def _classification() -> tuple[np.ndarray, np.ndarray]:
    return make_classification(n_samples=600, n_features=8, n_informative=5, random_state=0)


def _friedman() -> tuple[np.ndarray, np.ndarray]:
    return make_friedman1(n_samples=600, noise=1.0, random_state=0)


CLEAN: dict[str, Loader] = {
    "digits": lambda: load_digits(return_X_y=True),
    "diabetes": lambda: load_diabetes(return_X_y=True),
    "wine": lambda: load_wine(return_X_y=True),
    "breast_cancer": lambda: load_breast_cancer(return_X_y=True),
    "make_classification": _classification,
    "make_friedman1": _friedman,
}
NOISY: dict[str, Loader] = {name: CLEAN[name] for name in ("digits", "wine",
                                                             "make_classification")}


def one(name: str, seed: int, noisy: bool, max_iter: int = DEFAULT_MAX_ITER,
        method: str = "auto") -> dict[str, float]:
    """Both cuts of one default ``find_harmful`` run."""
    X, y = (NOISY if noisy else CLEAN)[name]()
    start = time.perf_counter()
    if noisy:
        rng = np.random.default_rng(seed)
        tr, va, te = _split(len(y), rng)
        y_tr, _ = plant_labels(y[tr], rng)
        rows = find_harmful(X[tr], y_tr, X_val=X[va], y_val=y[va], X_test=X[te], y_test=y[te],
                            random_state=seed, max_iter=max_iter, method=method)
    else:
        rows = find_harmful(pd.DataFrame(X), pd.Series(y), random_state=seed, max_iter=max_iter,
                            method=method)
    seconds = time.perf_counter() - start
    run, c = rows.run, rows.run.cleansing
    d = run.data
    paper = cleanse(run.result, run.estimator, d.X_train, d.y_train, d.X_val, d.y_val,
                    d.X_test, d.y_test, metric=run.metric, random_state=seed, rule="paper")
    n = len(d.y_train)
    return {
        "n": n, "removed": 100 * c.n_remove / n, "paper_removed": 100 * paper.n_remove / n,
        "before": c.baseline_test, "after": c.cleaned_test, "paper_after": paper.cleaned_test,
        "seconds": seconds,
    }


def table(datasets: list[str], seeds: int, noisy: bool,
          max_iter: int = DEFAULT_MAX_ITER, method: str = "auto",
          by_seed: bool = False) -> list[dict[str, float]]:
    print("| data | N valued | one_se: removed % (max) | test before → after | "
          "paper: removed % (max) | test before → after | s/run |")
    print("|---|---|---|---|---|---|---|")
    out = []
    for name in datasets:
        runs = [one(name, s, noisy, max_iter, method) for s in range(seeds)]
        m = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
        top = max(r["removed"] for r in runs)
        top_paper = max(r["paper_removed"] for r in runs)
        print(f"| {name} | {m['n']:.0f} | {m['removed']:.1f} ({top:.1f}) | "
              f"{m['before']:.4g} → {m['after']:.4g} | {m['paper_removed']:.1f} "
              f"({top_paper:.1f}) | {m['before']:.4g} → {m['paper_after']:.4g} | "
              f"{m['seconds']:.1f} |", flush=True)
        if by_seed:  # which seeds the cut removes much at: the mean hides them
            shares = " ".join(f"{r['removed']:.0f}" for r in runs)
            print(f"|  {name}: % removed by seed 0..{seeds - 1}: {shares} | | | | | |")
        out += runs
    return out


def _summary(runs: list[dict[str, float]]) -> str:
    # gains in score units (higher is better); "lowered" counts runs that lost test score
    gain = np.array([r["after"] - r["before"] for r in runs])
    paper = np.array([r["paper_after"] - r["before"] for r in runs])
    return (f"one_se: {np.mean([r['removed'] for r in runs]):.1f}% removed on average, "
            f"test lowered in {int(np.sum(gain < 0))} of {len(runs)} runs; paper: "
            f"{np.mean([r['paper_removed'] for r in runs]):.1f}% removed, test lowered in "
            f"{int(np.sum(paper < 0))} of {len(runs)} runs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--datasets", nargs="*", default=list(CLEAN), choices=list(CLEAN))
    parser.add_argument("--no-clean", action="store_true", help="skip the clean part")
    parser.add_argument("--no-noisy", action="store_true", help="skip the planted-noise part")
    parser.add_argument("--max-iter", type=int, default=DEFAULT_MAX_ITER,
                        help="TDShap rounds (default: find_harmful's)")
    parser.add_argument("--method", default="auto",
                        help="find_harmful's method (knn_oob: with --datasets of "
                        "classification only)")
    parser.add_argument("--eligibility", choices=CONTROLS, default=ELIGIBILITY_CONTROL,
                        help="how the default cut's credibly-harmful rows control false ones "
                        "(tdshap.cut.ELIGIBILITY_CONTROL)")
    parser.add_argument("--own-label", action="store_true",
                        help="exact k-NN Shapley credits each row with its own query "
                        "(KNNShapley's own_label; tdshap.app.valuer.OWN_LABEL)")
    parser.add_argument("--by-seed", action="store_true",
                        help="also print each seed's share of rows removed")
    parser.add_argument("--query-clip", type=float, default=valuer.QUERY_CLIP,
                        help="the width, in robust SD, of a regressor's training queries' "
                        "clip (tdshap.app.valuer.QUERY_CLIP; default %(default)s)")
    args = parser.parse_args()
    tdshap.cut.ELIGIBILITY_CONTROL = args.eligibility
    valuer.QUERY_CLIP = args.query_clip
    if args.own_label:
        valuer.OWN_LABEL = valuer.EVERY_OWN_LABEL
    print(f"# {platform.machine()} Python {platform.python_version()}, {args.seeds} seeds, "
          f"max_iter {args.max_iter}, method {args.method}"
          f"{' with own_label' if args.own_label else ''}, query clip {args.query_clip}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if not args.no_clean:
        rounds = "" if args.max_iter == DEFAULT_MAX_ITER else f" but max_iter={args.max_iter}"
        print(f"\n## Clean data (nothing planted), find_harmful defaults{rounds}\n")
        clean = table(args.datasets, args.seeds, False, args.max_iter, args.method,
                      args.by_seed)
        print(f"\n{_summary(clean)}")
    if not args.no_noisy:
        print("\n## 10% of the training labels moved to another class\n")
        noisy = table([n for n in args.datasets if n in NOISY], args.seeds, True, args.max_iter,
                      args.method, args.by_seed)
        print(f"\n{_summary(noisy)}")


if __name__ == "__main__":
    main()
