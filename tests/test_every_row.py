"""``find_harmful(every_row=True)``: without validation rows, every row valued in two parts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification, make_regression

import tdshap
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


def test_every_row_values_each_row_once_in_the_inputs_order() -> None:
    X, y, flipped = _noisy()
    rows = tdshap.find_harmful(X, y, every_row=True)
    one = tdshap.find_harmful(X, y)
    assert list(rows.index) == list(X.index)  # every row, in the input's order
    assert len(rows.parts) == 2 and rows.run is rows.parts[0]
    part1, part2 = rows.parts
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
    with pytest.raises(TypeError, match="every_row='yes' must be True or False"):
        tdshap.find_harmful(X, y, every_row="yes")  # type: ignore[arg-type]
