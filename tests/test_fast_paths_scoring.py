"""Batched scoring agrees with the metrics' own functions; the k-NN memory cap."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from tdshap.utility.base import Utility
from tdshap.utility.fast import make_utility, neighbors
from tdshap.utility.fast.scoring import row_scorer
from tdshap.utility.metrics import resolve_metric


def _max_abs_error(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    return -float(np.max(np.abs(y_true - y_pred)))


@pytest.mark.parametrize("metric", ["neg_mae", "neg_mse", "r2", "mae", _max_abs_error])
def test_row_scores_equal_the_metric_on_each_row(metric):
    rng = np.random.default_rng(0)
    y = rng.normal(size=40)
    P = rng.normal(size=(7, 40))
    spec = resolve_metric(metric)
    expected = [spec.from_predictions(y, p) for p in P]
    np.testing.assert_allclose(row_scorer(spec)(y, P.copy()), expected, rtol=1e-14)


def test_accuracy_rows_are_bit_identical_for_any_label_type():
    rng = np.random.default_rng(1)
    names = np.array(["a", "b", "c"], dtype=object)
    y, P = names[rng.integers(0, 3, 50)], names[rng.integers(0, 3, (5, 50))]
    spec = resolve_metric("accuracy")
    assert list(row_scorer(spec)(y, P)) == [spec.from_predictions(y, p) for p in P]


def test_constant_validation_target_gives_r2_zero_as_the_metric():
    spec = resolve_metric("r2")
    y, P = np.ones(10), np.random.default_rng(2).normal(size=(3, 10))
    assert list(row_scorer(spec)(y, P)) == [spec.from_predictions(y, p) for p in P] == [0.0] * 3


def test_distance_matrix_over_the_memory_budget_refits_and_says_why(monkeypatch):
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(30, 2)), rng.integers(0, 2, 30)
    budget = neighbors.BYTES_PER_ENTRY * 30 * 30
    monkeypatch.setenv("TDSHAP_MEMORY_BUDGET_GB", str((budget - 1) / 2**30))
    utility = make_utility(KNeighborsClassifier(3), "accuracy", X, y, X, y)
    assert type(utility) is Utility
    assert "memory budget" in utility.path_note and "30 x 30" in utility.path_note
    monkeypatch.setenv("TDSHAP_MEMORY_BUDGET_GB", str((budget + 64) / 2**30))
    fast = make_utility(KNeighborsClassifier(3), "accuracy", X, y, X, y)
    assert type(fast) is not Utility and "kneighbors" in fast.path_note
