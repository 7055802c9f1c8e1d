"""A user's model whose predictions are not one per row: refused as failed fits with an
error that names the shape, never scored by numpy broadcasting (session 30's audit)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.datasets import load_diabetes, load_wine
from sklearn.linear_model import LogisticRegression, Ridge

from tdshap import cleanse, find_harmful

X_REG, Y_REG = (a[:150] for a in load_diabetes(return_X_y=True))
X_CLS, Y_CLS = load_wine(return_X_y=True)


class ColumnRegressor(RegressorMixin, BaseEstimator):
    """A ridge whose predict gives a column, shape (n, 1), as wrapped networks often do."""

    def fit(self, X: Any, y: Any) -> ColumnRegressor:
        self.model_ = Ridge().fit(X, y)
        return self

    def predict(self, X: Any) -> np.ndarray:
        return self.model_.predict(X)[:, None]


class ExtraColumns(ClassifierMixin, BaseEstimator):
    """A classifier whose predict_proba has more columns than it has classes_."""

    def fit(self, X: Any, y: Any) -> ExtraColumns:
        self.model_ = LogisticRegression(max_iter=500).fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X: Any) -> np.ndarray:
        return self.model_.predict(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        proba = self.model_.predict_proba(X)
        return np.hstack([proba, np.zeros((len(X), 4))])


def test_a_column_of_predictions_is_refused_by_the_cleansing_curve() -> None:
    # broadcast against the (n,) targets it scored every pair's error: the curve was
    # another one (42 rows of 100 removed where the 1-D predictions removed 5)
    values = np.random.default_rng(0).normal(size=100)
    with pytest.raises(ValueError, match=r"predict returned an array of shape \(50, 1\) "
                       r"for 50 rows.*np.ravel"):
        cleanse(values, ColumnRegressor(), X_REG[:100], Y_REG[:100], X_REG[100:],
                Y_REG[100:], metric="neg_mae")


@pytest.mark.parametrize("method", ["auto", "tdshap"])
def test_a_column_of_predictions_is_refused_by_find_harmful(method: str) -> None:
    # auto's out-of-bag run stopped on an IndexError inside its rewards; the paper's TDShap
    # on a broadcasting error: both now on the model's trial fits, before the run
    with pytest.raises(ValueError, match=r"shape \(\d+, 1\).*one value per row"):
        find_harmful(X_REG, Y_REG, ColumnRegressor(), method=method, max_iter=1)


def test_probabilities_with_columns_not_those_of_the_classes_are_refused() -> None:
    with pytest.raises(ValueError, match=r"predict_proba returned 7 columns for its 3 "
                       "classes_"):
        find_harmful(X_CLS, Y_CLS, ExtraColumns(), method="tdoob", max_iter=1)


def test_one_per_row_takes_the_shapes_of_one_prediction_per_row() -> None:
    from tdshap.utility.metrics import one_per_row

    assert one_per_row(np.zeros(3), 3) is not None
    assert one_per_row(np.zeros((3, 2)), 3, "predict_proba") is not None
    for pred, method in ((np.zeros((3, 1)), "predict"), (np.zeros(4), "predict"),
                         (np.zeros(3), "predict_proba"), (np.float64(1.0), "predict")):
        with pytest.raises(ValueError, match="must return"):
            one_per_row(pred, 3, method)
