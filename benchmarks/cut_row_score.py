"""The eligible cut's per-row score for classifiers: Brier score or true-class probability.

``cleanse(rule="one_se")`` removes the rows below tau when one named comparison
says their removal helps (:class:`tdshap.cut.EligibleTest`); for a classifier
with probabilities each validation row's gain is judged on minus its Brier
score. Session 26 measured the true-class probability in its place (linear in
the support for the right label, where the Brier score squares it and weighs
the rows the model gets wrong most). This script runs ``benchmarks/detection.py``
's ``find_harmful`` rows once per score, the score swapped for the run
(``tdshap.cleansing._row_brier``, the one function that computes it), and
prints per set and over sets: the mean test gain of the default cut, the runs
and sets (means over seeds) it lowered, and the rows removed.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src:. .venv/bin/python \\
        benchmarks/cut_row_score.py --model knn --datasets unseen rehearsal --seeds 20 \\
        [--noise 0]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np

import tdshap.cleansing
from benchmarks import detection
from benchmarks.detection import DATASETS, GROUPS, MODELS, NOISE
from tdshap.utility.metrics import TRUE_CLASS_PROBA, row_scores

SCORES = ("brier", "true_class_proba")


def row_true_class_proba(model: Any, X: np.ndarray, y: np.ndarray, classes: np.ndarray
                         ) -> np.ndarray | None:
    """Each row's predicted probability of its label (0 for a class the model never saw;
    higher is better); None for a model without usable probabilities, as the Brier score."""
    try:
        return row_scores(model, X, y, TRUE_CLASS_PROBA)
    except Exception:  # the test then uses the metric, as for the Brier score
        return None


_ROW_BRIER = tdshap.cleansing._row_brier


@contextlib.contextmanager
def row_score(name: str) -> Iterator[None]:
    """The eligible cut judged on ``name`` for the duration."""
    if name == "brier":
        yield
        return
    tdshap.cleansing._row_brier = row_true_class_proba
    try:
        yield
    finally:
        tdshap.cleansing._row_brier = _ROW_BRIER


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per dataset (classification only): mean gain, runs lowered, rows removed."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        if "error" in r or r["task"] != "classification":
            continue
        s = out.setdefault(r["dataset"], {"gain": 0.0, "lowered": 0, "removed": 0.0, "n": 0})
        gain = float(r["test_after"]) - float(r["test_before"])
        s["gain"] += gain
        s["lowered"] += gain < -1e-12
        s["removed"] += float(r["n_removed"])
        s["n"] += 1
    for s in out.values():
        s["gain"] /= s["n"]
        s["removed"] /= s["n"]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=list(MODELS), default="knn")
    parser.add_argument("--datasets", nargs="+", choices=[*DATASETS, *GROUPS],
                        default=["unseen", "rehearsal"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--noise", type=float, default=NOISE)
    args = parser.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in SCORES:
            csv = os.path.join(tmp, f"{name}.csv")
            with row_score(name):
                detection.main(["--model", args.model, "--datasets", *args.datasets,
                                "--methods", "find_harmful", "--seeds", str(args.seeds),
                                "--noise", str(args.noise), "--csv", csv])
            results[name] = summary(detection.read_csv(csv))
    sets = sorted(set.intersection(*(set(r) for r in results.values())))
    print(f"\n# the eligible cut's row score, model {args.model}, {args.seeds} seeds, "
          f"{args.noise:.0%} planted: test gain / runs lowered / rows removed")
    print("| dataset | " + " | ".join(SCORES) + " |")
    print("|---" * (len(SCORES) + 1) + "|")
    for d in sets:
        print(f"| {d} | " + " | ".join(
            f"{results[s][d]['gain']:+.4f} / {results[s][d]['lowered']:.0f} / "
            f"{results[s][d]['removed']:.1f}" for s in SCORES) + " |")
    for s in SCORES:
        per = [results[s][d] for d in sets]
        print(f"{s}: mean gain {np.mean([p['gain'] for p in per]):+.4f}, runs lowered "
              f"{sum(p['lowered'] for p in per):.0f} of {sum(p['n'] for p in per):.0f}, sets "
              f"lowered {sum(p['gain'] < -1e-12 for p in per)} of {len(per)}, rows removed "
              f"{np.mean([p['removed'] for p in per]):.1f}")


if __name__ == "__main__":
    main()
