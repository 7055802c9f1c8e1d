"""Do ``find_harmful``'s defaults work on data nobody tuned for?

Datasets the paper does not use, with planted noise in the training rows
only (validation and test stay clean): scikit-learn's wine (labels moved to
another class), diabetes (targets shifted by 3 standard deviations) and a
``make_classification`` problem (labels flipped). Everything else is the
default: ``tau="auto"``, ``eps="auto"``, ``k``/``n_min`` auto, 50 rounds, the
default model (``knn``; or ``--model``). Prints, per dataset, the mean over seeds
of: rows flagged, the noise rate among flagged rows beside the base rate
(enrichment = their ratio), the recall of the planted rows, the noise rate
among the lowest-valued rows (as many as were planted), and the test score
before and after cleansing.

    .venv/bin/python benchmarks/defaults_unseen.py [--seeds 5] [--model knn] [--datasets wine ...]
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable

import numpy as np
from sklearn.datasets import load_diabetes, load_wine, make_classification

from tdshap.app.harmful import find_harmful

NOISE = 0.1


def _split(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    perm = rng.permutation(n)
    a, b = n // 2, n // 2 + n // 4
    return perm[:a], perm[a:b], perm[b:]


def plant_labels(y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Move ``NOISE`` of the labels to another class; return (y, planted positions)."""
    y = y.copy()
    planted = rng.choice(len(y), round(NOISE * len(y)), replace=False)
    classes = np.unique(y)
    for i in planted:
        y[i] = rng.choice(classes[classes != y[i]])
    return y, planted


def plant_targets(y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Shift ``NOISE`` of the targets by +-3 standard deviations."""
    y = y.astype(float)
    planted = rng.choice(len(y), round(NOISE * len(y)), replace=False)
    y[planted] += 3 * y.std() * rng.choice([-1.0, 1.0], len(planted))
    return y, planted


def synthetic() -> tuple[np.ndarray, np.ndarray]:
    return make_classification(n_samples=600, n_features=8, n_informative=5, random_state=0)


DATASETS: dict[str, tuple[Callable[[], tuple[np.ndarray, np.ndarray]], Callable]] = {
    "wine": (lambda: load_wine(return_X_y=True), plant_labels),
    "diabetes": (lambda: load_diabetes(return_X_y=True), plant_targets),
    "make_classification": (synthetic, plant_labels),
}


def one(name: str, seed: int, model: str) -> dict[str, float]:
    load, plant = DATASETS[name]
    X, y = load()
    rng = np.random.default_rng(seed)
    tr, va, te = _split(len(y), rng)
    y_tr, planted = plant(y[tr], rng)
    start = time.perf_counter()
    rows = find_harmful(X[tr], y_tr, model, X_val=X[va], y_val=y[va], X_test=X[te],
                        y_test=y[te], random_state=seed)
    seconds = time.perf_counter() - start
    is_noise = np.zeros(len(tr), dtype=bool)
    is_noise[planted] = True
    flagged = rows["is_harmful"].to_numpy()
    lowest = np.argsort(rows["value"].to_numpy(), kind="stable")[: len(planted)]
    c = rows.run.cleansing
    return {
        "flagged": float(flagged.sum()),
        "noise_in_flagged": float(is_noise[flagged].mean()) if flagged.any() else 0.0,
        "recall": float(flagged[is_noise].mean()),
        "noise_in_lowest": float(is_noise[lowest].mean()),
        "removed": float(c.n_remove),
        "test_before": float(c.baseline_test),
        "test_after": float(c.cleaned_test),
        "seconds": seconds,
        "n": float(len(tr)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--model", default=None, help="registry name; default: find_harmful's")
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    args = parser.parse_args()
    print(f"# {platform.machine()} {platform.python_version()}, model {args.model or 'default'}, "
          f"{args.seeds} seeds, {NOISE:.0%} planted noise in the training rows")
    print("| dataset | N train | flagged | noise in flagged (base 0.10) | recall | "
          "noise in lowest | removed | test before → after | s/run |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        runs = [one(name, s, args.model) for s in range(args.seeds)]
        m = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
        print(f"| {name} | {m['n']:.0f} | {m['flagged']:.1f} | {m['noise_in_flagged']:.2f} | "
              f"{m['recall']:.2f} | {m['noise_in_lowest']:.2f} | {m['removed']:.1f} | "
              f"{m['test_before']:.3f} → {m['test_after']:.3f} | {m['seconds']:.1f} |")


if __name__ == "__main__":
    main()
