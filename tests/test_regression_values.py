"""Same seed, same values: figures pinned from main before the issue-11 refactors.

Each case runs a method with its default settings (plus a small budget) on
tiny data and compares a few values, their sum and the largest |value| with
what the code gave before truncation, stopping, caching and resume were
reorganised. A refactor that changes any of them changes the results of
existing runs (and so docs/results.md).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.neighbors import KNeighborsClassifier
from sklearn.tree import DecisionTreeClassifier

from tdshap.methods import LeaveOneOut, TDShap, TMCShapley


def _split(X, y):
    return X[:50], y[:50], X[50:], y[50:]


@pytest.fixture(scope="module")
def classification():
    return _split(*make_classification(n_samples=90, n_features=5, random_state=0))


@pytest.fixture(scope="module")
def regression():
    return _split(*make_regression(n_samples=90, n_features=5, noise=5.0, random_state=0))


def _check(values, total, first, largest):
    np.testing.assert_allclose(values.sum(), total, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(values[:3], first, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.abs(values).max(), largest, rtol=1e-9)


def test_tdshap_fast_path(regression):
    m = TDShap(Ridge(), random_state=0, max_iter=5).fit(*regression)
    _check(m.values_, 1.533804358074811,
           [0.012855365023695064, 0.15290461738769245, 0.1037695982341947], 0.5204399664591417)


def test_tdshap_refits_auto_thresholds(classification):
    m = TDShap(DecisionTreeClassifier(random_state=0), tau="auto", eps="auto", random_state=1,
               max_iter=3).fit(*classification)
    _check(m.values_, 0.03749999999999998, [0.0, 0.0, 0.0], 0.125)


def test_tdshap_convergence(classification):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = TDShap(LogisticRegression(), random_state=2, max_iter=None, atol=0.05,
                   fast_path=False).fit(*classification)
    _check(m.values_, 0.10178571428571428, [0.0, 0.012500000000000011, 0.0],
           0.04999999999999993)


def test_tmc_fast_path_truncated(classification):
    m = TMCShapley(KNeighborsClassifier(3), random_state=0,
                   max_permutations=20).fit(*classification)
    _check(m.values_, 0.475, [0.010000000000000002, 0.022500000000000003, 0.03624999999999999],
           0.04000000000000001)


def test_tmc_refits_truncated(classification):
    m = TMCShapley(DecisionTreeClassifier(random_state=0), random_state=0, max_permutations=10,
                   fast_path=False).fit(*classification)
    _check(m.values_, 0.5249999999999999, [0.0, 0.0, 0.012499999999999999], 0.0775)


def test_tmc_original_convergence_rule(regression):
    m = TMCShapley(Ridge(), random_state=3, rtol=0.5, rtol_window=20,
                   max_permutations=400).fit(*regression)
    assert m.n_permutations_ == 112
    _check(m.values_, 43.92877973840542,
           [2.1727675213852424, 2.3819131525809696, 1.3301856198273023], 3.8975206285718693)


def test_loo_k_and_plain_loo(classification, regression):
    m = LeaveOneOut(LogisticRegression(), k=5, max_remove=20,
                    random_state=0).fit(*classification)
    assert m.order_[:12].tolist() == [10, 2, 19, 12, 1, 46, 11, 4, 15, 23, 26, 24]
    _check(m.values_, 0.025000000000000022, [0.0, 0.0, 0.0], 0.025000000000000022)
    m = LeaveOneOut(Ridge(), random_state=0).fit(*regression)
    assert m.order_[:12].tolist() == [28, 33, 41, 9, 16, 44, 10, 20, 48, 24, 5, 39]
    _check(m.values_, 0.2125951802060566,
           [0.013305723125836444, 0.1758490087831701, 0.02461822036614425], 0.2012836587194391)
