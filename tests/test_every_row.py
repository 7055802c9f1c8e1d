"""``find_harmful(every_row=True)``: without validation rows, every row valued in two parts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification, make_regression

import tdshap
from tdshap.app.every_row import WITH_VAL
from tdshap.app.tabular import holdout_split, swapped_split


@pytest.mark.parametrize(("fractions", "classification"),
                         [((0.25, 0.25), True), ((0.2, 0.1), True), ((0.3, 0.0), False),
                          ((0.1, 0.3), False)])
def test_the_swap_trains_on_the_held_out_rows_and_holds_out_the_rest(
        fractions: tuple[float, float], classification: bool) -> None:
    y = np.repeat(np.arange(3), 40) if classification else np.arange(120.0)
    kept, val, test, _ = holdout_split(y, fractions, classification, seed=3)
    train2, val2, test2, _ = swapped_split(y, fractions, classification, seed=3)
    np.testing.assert_array_equal(train2, np.union1d(val, test))
    np.testing.assert_array_equal(np.union1d(val2, test2), kept)
    assert not np.intersect1d(val2, test2).size
    # every row is valued (a training row) in exactly one of the two splits
    np.testing.assert_array_equal(np.sort(np.concatenate([kept, train2])), np.arange(len(y)))
    if fractions[1] == 0:
        assert test2.size == 0
    else:  # the held-out share follows val : test
        assert abs(len(test2) / len(kept) - fractions[1] / sum(fractions)) < 0.02
        assert len(val2) >= 1 and len(test2) >= 1
    if classification:  # stratified: each class in proportion in part 2's roles
        assert set(np.unique(y[val2])) == set(np.unique(y[test2])) == {0, 1, 2}


def _noisy(n: int = 240, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    X, y = make_classification(n_samples=n, n_features=6, n_informative=4, class_sep=1.5,
                               random_state=seed)
    flipped = np.random.default_rng(seed).choice(n, n // 10, replace=False)
    y = y.copy()
    y[flipped] = 1 - y[flipped]
    index = pd.Index([f"r{i}" for i in range(n)], name="id")
    return pd.DataFrame(X, index=index), y, flipped


def test_every_row_with_validation_rows_says_it_adds_nothing() -> None:
    X, y, _ = _noisy()
    given = {"X_val": X.iloc[:60], "y_val": y[:60], "cleanse": False}
    asked = tdshap.find_harmful(X.iloc[60:], y[60:], every_row=True, **given)
    plain = tdshap.find_harmful(X.iloc[60:], y[60:], **given)
    assert len(asked.parts) == 1
    pd.testing.assert_frame_equal(asked.table, plain.table)
    assert asked.run.data.split_note == plain.run.data.split_note + WITH_VAL


def test_every_row_values_each_row_once_in_the_inputs_order() -> None:
    X, y, flipped = _noisy()
    rows = tdshap.find_harmful(X, y, every_row=True)
    one = tdshap.find_harmful(X, y)
    assert list(rows.index) == list(X.index)  # every row, in the input's order
    assert len(rows.parts) == 2 and rows.run is rows.parts[0]
    part1, part2 = rows.parts
    # a run of its own says what it left unvalued; the parts do not
    assert "not valued (every_row=True" in one.run.data.split_note
    assert not any("not valued" in p.data.split_note for p in rows.parts)
    # part 1 is the usual run: the same rows and values as every_row=False
    np.testing.assert_array_equal(part1.data.train_rows, one.run.data.train_rows)
    pd.testing.assert_frame_equal(rows.table[rows["part"] == 1].drop(columns="part"), one.table)
    # part 2 values the rows part 1 held out, and holds out part 1's rows
    np.testing.assert_array_equal(
        np.sort(np.concatenate([part1.data.train_rows, part2.data.train_rows])),
        np.arange(len(X)))
    assert len(part2.data.y_val) + len(part2.data.y_test) == len(part1.data.y_train)
    for i, part in enumerate(rows.parts, 1):
        mine = rows.table[rows["part"] == i]
        assert list(mine.index) == list(X.index[part.data.train_rows])
        np.testing.assert_array_equal(mine["value"].to_numpy(), part.result.values)
        assert mine["removed"].sum() == part.cleansing.n_remove
    # the planted rows are found on both sides
    planted = X.index[flipped]
    worst = rows.table.groupby("part")["value"].rank() <= 0.1 * len(X) / 2
    assert worst[planted].mean() > 0.5


def test_every_row_reports_both_parts(capsys: pytest.CaptureFixture) -> None:
    X, y, _ = _noisy(120, seed=1)
    rows = tdshap.find_harmful(X, y, every_row=True, cleanse=False, estimator="dtree")
    assert "removed" not in rows.columns and set(rows["part"]) == {1, 2}
    # without a test share part 2 holds all of part 1's rows out for validation
    assert len(rows.parts[1].data.y_val) == len(rows.parts[0].data.y_train)
    assert rows.parts[1].data.y_test is None
    rows.report(n_worst=2)
    out = capsys.readouterr().out
    assert out.startswith("every row valued in 2 parts (90 + 30 rows)")
    assert "== part 1 of 2 ==" in out and "== part 2 of 2 ==" in out


def test_every_row_with_validation_rows_is_one_part() -> None:
    X, y = make_regression(n_samples=90, n_features=3, noise=5.0, random_state=0)
    rows = tdshap.find_harmful(X[:60], y[:60], "ridge", X_val=X[60:], y_val=y[60:],
                               every_row=True, cleanse=False)
    assert len(rows.parts) == 1 and "part" not in rows.columns and len(rows) == 60


def test_every_row_must_be_a_switch() -> None:
    X, y, _ = _noisy(60)
    with pytest.raises(ValueError, match="every_row` 'yes' must be True, False or 'auto'"):
        tdshap.find_harmful(X, y, every_row="yes")  # type: ignore[arg-type]


# -- the CLI's --every-row ----------------------------------------------------------
def _cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tdshap.app.cli", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_cli_every_row_writes_both_parts_and_drops_what_either_removes(tmp_path: Path) -> None:
    X, y, _ = _noisy(200, seed=2)
    X.assign(label=y).to_csv(tmp_path / "train.csv", index=False)
    res = _cli("clean", "train.csv", "--target", "label", "--every-row", "--out", "out",
               "--no-progress", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out"
    values = pd.read_csv(out / "values.csv", index_col=0)
    assert list(values.index) == list(range(200)) and set(values["part"]) == {1, 2}
    removed = values.index[values["removed"]]
    cleaned = pd.read_csv(out / "cleaned.csv")
    assert len(cleaned) == 200 - len(removed)
    kept = X.drop(index=X.index[removed]).to_numpy()
    np.testing.assert_allclose(cleaned.drop(columns="label").to_numpy(), kept)
    for part in (1, 2):  # each part's own result file holds its rows' values
        saved = tdshap.ValuationResult.load(out / ("result.json" if part == 1 else
                                                   "result-part2.json"))
        np.testing.assert_allclose(saved.values, values.loc[values["part"] == part, "value"])
    assert {"values-part2.png", "curve-part2.png"} <= {p.name for p in out.iterdir()}
    report = (out / "report.md").read_text()
    assert "# Part 1 of 2" in report and "# Part 2 of 2" in report
    assert res.stdout.count("cost estimate") == 2


def test_cli_every_row_resumes_each_part_from_its_checkpoint(tmp_path: Path) -> None:
    X, y, _ = _noisy(90, seed=3)
    X.assign(label=y).to_csv(tmp_path / "train.csv", index=False)
    slow = ["value", "train.csv", "--target", "label", "--every-row", "--out", "out",
            "--model", "dtree", "--method", "tdshap", "--no-progress"]
    assert _cli(*slow, "--max-iter", "2", cwd=tmp_path).returncode == 0
    out = tmp_path / "out"
    assert {"run.tdshap", "run-part2.tdshap"} <= {p.name for p in out.iterdir()}
    res = _cli(*slow, "--max-iter", "4", "--resume", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    fresh = _cli(*slow, "--max-iter", "4", "--out", "fresh", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    # the resumed parts went on to 4 rounds: the same values as 4 rounds at once
    for name in ("result.json", "result-part2.json"):
        a = tdshap.ValuationResult.load(out / name)
        b = tdshap.ValuationResult.load(tmp_path / "fresh" / name)
        np.testing.assert_allclose(a.values, b.values)
        np.testing.assert_array_equal(a.counts, b.counts)
    # part 2 reads its own checkpoint: part 1's state put there is refused
    (out / "run-part2.tdshap").write_bytes((out / "run.tdshap").read_bytes())
    res = _cli(*slow, "--max-iter", "6", "--resume", cwd=tmp_path)
    assert res.returncode == 2 and "run-part2.tdshap" in res.stderr
    assert "different data" in res.stderr


def test_auto_values_part_one_alone_where_part_two_cannot_be_planned() -> None:
    # 6 rows held out for validation, no test share: chains of k=10 rows need more
    X, y, _ = _noisy(24, seed=4)
    settings = {"method": "tdshap", "k": 10, "max_iter": 1, "cleanse": False}
    rows = tdshap.find_harmful(X, y, "dtree", every_row="auto", **settings)
    assert len(rows.parts) == 1 and "part" not in rows.columns and len(rows) == 18
    assert "too few rows to value them in a second part" in rows.run.data.split_note
    with pytest.raises(ValueError, match="every_row`: the held-out rows cannot be valued"):
        tdshap.find_harmful(X, y, "dtree", every_row=True, **settings)


def test_cli_every_row_that_cannot_be_planned_is_one_error_line(tmp_path: Path) -> None:
    X, y, _ = _noisy(24, seed=4)
    X.assign(label=y).to_csv(tmp_path / "train.csv", index=False)
    res = _cli("value", "train.csv", "--target", "label", "--every-row", "--out", "out",
               "--model", "dtree", "--method", "tdshap", "--k", "10", "--no-progress",
               cwd=tmp_path)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].startswith("Error: --every-row: the held-out rows cannot be valued")
    assert "Traceback" not in res.stderr and not (tmp_path / "out").exists()
