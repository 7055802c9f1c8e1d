"""One noisy file and nothing else: what ``find_harmful(X, y)`` cleans, with and without
``every_row``.

A user who hands over one file gives no validation rows, so ``find_harmful`` holds a
share of the file out; without ``every_row`` those rows are never valued and stay in
the cleaned file, noise included. Per dataset and seed: 25% of the rows are set aside
as a clean test set the tool never sees, 10% of the rest (the "file") get planted
noise (as ``detection.py``), and ``find_harmful`` runs on the file with its defaults.
Printed per mode: the share of the file valued, AUROC of "lowest value = planted" over
the valued rows (values of both parts pooled), the share of all planted rows removed,
the rows removed that were clean, and the clean test score of the model refitted on
the whole file and on the cleaned file (what a user gets from ``cleaned.csv``), with
wall seconds.

    PYTHONPATH=src:. python benchmarks/one_file.py --models knn tree logreg --seeds 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.base import clone
from sklearn.metrics import accuracy_score, mean_absolute_error
from sklearn.preprocessing import StandardScaler

import tdshap
from benchmarks.detection import DATASETS, auroc, build_estimator, plant_labels, plant_targets

SETS = ("digits", "wine", "breast_cancer", "make_classification", "moons", "diabetes",
        "friedman1", "linear")
TEST_SHARE = 0.25
NOISE = 0.1


def one(name: str, model: str, seed: int, every_row: bool,
        noise: float = NOISE) -> dict[str, float]:
    X, y = DATASETS[name][0]()
    task = DATASETS[name][1]
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    n_test = int(TEST_SHARE * len(y))
    test, file_rows = perm[:n_test], perm[n_test:]
    plant = plant_labels if task == "classification" else plant_targets
    y_file, planted = plant(y[file_rows], noise, rng)
    # standardised on the file's rows, as detection.py does on its training rows
    scaler = StandardScaler().fit(X[file_rows])
    X, X_file = scaler.transform(X), scaler.transform(X[file_rows])
    estimator = build_estimator(model, task, len(file_rows))
    start = time.perf_counter()
    rows = tdshap.find_harmful(X_file, y_file, clone(estimator), random_state=seed,
                               every_row=every_row)
    seconds = time.perf_counter() - start
    table = rows.table
    valued = table.index.to_numpy()
    is_planted = np.isin(np.arange(len(y_file)), planted)
    removed = valued[table["removed"].to_numpy()]

    def score(keep: np.ndarray) -> float:
        fitted = clone(estimator).fit(X_file[keep], y_file[keep])
        pred = fitted.predict(X[test])
        if task == "classification":
            return float(accuracy_score(y[test], pred))
        return -float(mean_absolute_error(y[test], pred))

    everything = np.arange(len(y_file))
    return {"valued": len(valued) / len(y_file),
            "auroc": auroc(table["value"].to_numpy(), is_planted[valued]),
            "found": float(is_planted[removed].sum() / max(len(planted), 1)),
            "removed": len(removed) / len(y_file),
            "clean_removed": float((~is_planted[removed]).sum()),
            "before": score(everything),
            "after": score(np.setdiff1d(everything, removed)),
            "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", choices=sorted(DATASETS), default=SETS)
    parser.add_argument("--models", nargs="+", default=["knn", "tree", "logreg"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--noise", type=float, default=NOISE,
                        help="share of the file's rows given a wrong label or target "
                        "(0: nothing planted, do no harm)")
    args = parser.parse_args()
    keys = ("valued", "auroc", "found", "removed", "clean_removed", "before", "after",
            "seconds")
    print(f"{'dataset':20} {'model':7} {'every_row':9} " + " ".join(f"{k:>13}" for k in keys))
    means: dict[tuple[str, bool], list[dict[str, float]]] = {}
    for name in args.datasets:
        task = DATASETS[name][1]
        for model in args.models:
            for every_row in (False, True):
                runs = [one(name, model, seed, every_row, args.noise)
                        for seed in range(args.seeds)]
                mean = {k: float(np.mean([r[k] for r in runs])) for k in keys}
                # accuracy points, or the relative change of the test MAE (negative: better)
                mean["gain"] = (mean["after"] - mean["before"] if task == "classification"
                                else mean["after"] / mean["before"] - 1)
                means.setdefault((task, every_row), []).append(mean)
                print(f"{name:20} {model:7} {every_row!s:9} "
                      + " ".join(f"{mean[k]:13.4f}" for k in keys), flush=True)
    print("\nmeans over datasets and models (gain: test accuracy points; regression: the "
          "test MAE's relative change, negative is better):")
    for (task, every_row), rows in means.items():
        agg = {k: float(np.mean([m[k] for m in rows])) for k in (*keys, "gain")}
        lowered = sum(m["gain"] < 0 if task == "classification" else m["gain"] > 0
                      for m in rows)
        gain = f"{agg['gain']:+.4f}" if task == "classification" else f"{agg['gain']:+.1%}"
        print(f"  {task:14} every_row={every_row!s:5}: valued {agg['valued']:.2f}, AUROC "
              f"{agg['auroc']:.3f}, removed {agg['removed']:.3f} of the rows, planted "
              f"removed {agg['found']:.3f}, clean rows removed "
              f"{agg['clean_removed']:.1f}, test gain {gain} (lowered {lowered} of "
              f"{len(rows)}), {agg['seconds']:.2f} s")


if __name__ == "__main__":
    main()
