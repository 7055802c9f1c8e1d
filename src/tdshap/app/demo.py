"""``tdshap demo``: the paper's Breast Cancer setting, end to end (the paper, Sec. 5.3).

150/150/269 split, ``DecisionTreeClassifier(max_depth=5, min_samples_leaf=2)``,
accuracy, (tau, eps) = (-0.01, 0.01), 50 iterations, K = 50, N_min = 100.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.tree import DecisionTreeClassifier

from tdshap.app.splits import Split, split
from tdshap.cleansing import CleansingResult, cleanse
from tdshap.methods import TDShap
from tdshap.result import ValuationResult

DEMO_SETTINGS: dict[str, Any] = {"tau": -0.01, "eps": 0.01, "max_iter": 50, "k": 50, "n_min": 100}


def breast_cancer(seed: int, sizes: tuple[int, int, int] = (150, 150, 269)) -> Split:
    """scikit-learn's Breast Cancer Wisconsin, split 150/150/269 as in the paper."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return split(X, y, sizes, seed, name="breast_cancer")


@dataclass
class DemoTrial:
    seed: int
    cleansing: CleansingResult
    n_harmful: int
    n_fits: int
    seconds: float
    result: ValuationResult


#: Every name a demo writes to its folder (one set per seed, and the summary).
DEMO_OUTPUTS = r"(values_seed\d+\.csv|result_seed\d+\.json|curve_seed\d+\.png|summary\.csv)"


def demo_estimator() -> DecisionTreeClassifier:
    return DecisionTreeClassifier(max_depth=5, min_samples_leaf=2)


def run_trial(seed: int, progress: bool) -> DemoTrial:
    """One trial: split with ``seed``, value with TDShap, cleanse (:func:`write_trial`
    writes its outputs)."""
    data = breast_cancer(seed)
    model = TDShap(demo_estimator(), "accuracy", random_state=seed, progress=progress,
                   **DEMO_SETTINGS)
    model.fit(data.X_train, data.y_train, data.X_val, data.y_val)
    result = model.result_
    cleaned = cleanse(result, demo_estimator(), *data.train, *data.val, *data.test,
                      metric="accuracy", random_state=seed)
    return DemoTrial(seed, cleaned, int(result.is_harmful.sum()), result.n_fits,
                     result.wall_seconds, result)


def write_trial(trial: DemoTrial, folder: Path) -> list[str]:
    """Write one trial's values CSV, result JSON and curve PNG to ``folder``; their names."""
    seed, result, cleaned = trial.seed, trial.result, trial.cleansing
    frame = result.to_dataframe()
    frame["removed"] = False
    frame.loc[cleaned.removed, "removed"] = True
    names = [f"values_seed{seed}.csv", f"result_seed{seed}.json", f"curve_seed{seed}.png"]
    frame.to_csv(folder / names[0], index_label="row")
    result.save(folder / names[1])
    cleaned.plot(folder / names[2], title=f"Breast Cancer, seed {seed}")
    return names


def summarize(trials: list[DemoTrial]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "seed": [t.seed for t in trials],
            "baseline_acc": [t.cleansing.baseline_test for t in trials],
            "cleaned_acc": [t.cleansing.cleaned_test for t in trials],
            "n_remove": [t.cleansing.n_remove for t in trials],
            "harmful": [t.n_harmful for t in trials],
            "fits": [t.n_fits for t in trials],
            "seconds": [t.seconds for t in trials],
        }
    )


def mean_std(values: pd.Series) -> str:
    arr = np.asarray(values, dtype=float)
    return f"{arr.mean():.3f} ± {arr.std(ddof=0):.3f}"
