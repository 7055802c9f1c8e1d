"""Do no harm, through the real command: ``tdshap clean`` on clean data and on planted noise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_wine

from tdshap.app.cli import main

# k-NN's neighbour search wakes OpenMP threads per predict: on a busy machine that costs
# far more than the search itself
pytestmark = pytest.mark.usefixtures("single_threaded")

LOADERS = {
    "digits": (load_digits, 400),
    "diabetes": (load_diabetes, None),
    "wine": (load_wine, None),
    "breast_cancer": (load_breast_cancer, 300),
}


def _clean(path: Path, out: Path, *args: str) -> tuple[pd.DataFrame, str]:
    res = CliRunner().invoke(main, ["clean", str(path), "--target", "target", "--out", str(out),
                                    "--no-progress", *args])
    assert res.exit_code == 0, res.output
    return pd.read_csv(out / "values.csv"), res.output


def _test_scores(output: str) -> tuple[float, float]:
    """``(before, after)`` of the summary's ``test <metric>`` row."""
    row = next(line.split() for line in output.splitlines()
               if line.strip().startswith("test ") and len(line.split()) >= 4)
    return float(row[2]), float(row[3])


def test_clean_data_keeps_almost_every_row(tmp_path):
    """The README's promise on clean data, at the 20 seeds of ``benchmarks/clean_data.py
    --seeds 20``: over the sets and seeds the default cut removes at most 5% of the rows,
    no run removes half of them, and no set's mean test score falls.

    Real diabetes (noisy targets) is where the cut removes most: some seeds remove a fifth
    to nearly half of its rows on cross-validated evidence, and which seeds do moved with
    the regressor's query clip (session 30, ``benchmarks/clean_data.py --seeds 20
    --datasets diabetes --no-noisy [--query-clip 3]``: width 3 removed a fifth or more at
    seeds 10, 11, 13 and 16, width 1 at seeds 4, 6, 7 and 15; their means 7.9% and 6.5%),
    so the promise is checked over all 20 seeds, not per seed.
    """
    removed, runs = [], 0
    for name, (load, n_rows) in sorted(LOADERS.items()):
        frame = load(as_frame=True).frame
        if n_rows is not None:
            frame = frame.sample(n_rows, random_state=0)
        path = tmp_path / f"{name}.csv"
        frame.to_csv(path, index=False)
        gains = []
        for seed in range(20):
            out = tmp_path / f"{name}{seed}"
            values, output = _clean(path, out, "--seed", str(seed))
            assert values["removed"].mean() < 0.5, output
            removed.append(values["removed"].mean())
            before, after = _test_scores(output)
            gains.append(after - before)
            report = (out / "report.md").read_text()
            assert "removed (chosen)" in report and "one_se" in report
            if not values["removed"].any():
                assert "cleansing removes no rows: " in output
            runs += 1
        assert np.mean(gains) >= 0, name
    assert runs == 20 * len(LOADERS)
    assert np.mean(removed) <= 0.05


def test_the_paper_cut_is_shown_and_kept_on_request(tmp_path):
    frame = load_diabetes(as_frame=True).frame
    path = tmp_path / "diabetes.csv"
    frame.to_csv(path, index=False)
    default, output = _clean(path, tmp_path / "a")
    paper, paper_output = _clean(path, tmp_path / "b", "--cut", "paper")
    assert paper["removed"].sum() > default["removed"].sum()
    n_paper = int(paper["removed"].sum())
    assert f"the paper's rule (best validation score) would remove {n_paper}" in output
    assert f"{n_paper} removed (best validation)" in output
    assert "the paper's rule, --cut paper" in paper_output
    assert np.array_equal(default["value"], paper["value"])  # the cut does not touch values


def test_planted_flips_are_still_removed_and_the_test_score_rises(tmp_path):
    frame = load_breast_cancer(as_frame=True).frame
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(frame))
    parts = {"train": perm[:280], "val": perm[280:420], "test": perm[420:]}
    paths = {k: tmp_path / f"{k}.csv" for k in parts}
    for k, rows in parts.items():
        frame.iloc[rows].to_csv(paths[k], index=False)
    gains, removed, planted = [], [], []
    for seed in (0, 1, 2):
        train = frame.iloc[parts["train"]].copy()
        flip = np.random.default_rng(seed).choice(len(train), len(train) // 5, replace=False)
        train.iloc[flip, train.columns.get_loc("target")] ^= 1
        train.to_csv(paths["train"], index=False)
        values, output = _clean(paths["train"], tmp_path / f"out{seed}", "--val",
                                str(paths["val"]), "--test", str(paths["test"]), "--seed",
                                str(seed), "--max-iter", "500")
        before, after = _test_scores(output)
        gains.append(after - before)
        rows = values.loc[values["removed"], "row"].to_numpy()
        removed.append(len(rows))
        planted += np.isin(rows, flip).tolist()
    assert sum(n > 0 for n in removed) >= 2 and np.mean(gains) > 0
    assert np.mean(planted) >= 0.6  # three times the base rate of 0.2
