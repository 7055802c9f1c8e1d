"""Stopping rules: one builder, one meaning per parameter name in every method."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from tdshap.methods import TDShap, TMCShapley
from tdshap.methods.stopping import (
    MaxAbsoluteChange,
    MaxIterations,
    MeanRelativeChange,
    RunStatus,
    TimeBudget,
    build_stopping,
    leaves,
)


def _kinds(crit):
    return [type(c) for c in leaves(crit)]


def test_each_name_builds_its_own_rule():
    crit = build_stopping(max_rounds=5, time_budget=2.0, atol=0.1, atol_window=3, rtol=0.05,
                          rtol_window=7)
    assert _kinds(crit) == [MeanRelativeChange, MaxIterations, TimeBudget, MaxAbsoluteChange]
    rel, _, _, ab = leaves(crit)
    assert (rel.rtol, rel.window, ab.atol, ab.window) == (0.05, 7, 0.1, 3)


@pytest.mark.parametrize("method", [TDShap(), TMCShapley()])
def test_the_methods_mean_the_same_by_the_same_name(method):
    method.set_params(atol=0.2, atol_window=4, rtol=0.3, rtol_window=6, time_budget=None)
    if isinstance(method, TMCShapley):
        method.set_params(max_permutations=9)
    else:
        method.set_params(max_iter=9)
    method._check_params(30)
    rules = {type(c): c for c in leaves(method._stop)}
    assert (rules[MaxAbsoluteChange].atol, rules[MaxAbsoluteChange].window) == (0.2, 4)
    assert (rules[MeanRelativeChange].rtol, rules[MeanRelativeChange].window) == (0.3, 6)
    assert rules[MaxIterations].n == 9


def test_defaults_are_the_papers():
    tdshap, tmc = TDShap(), TMCShapley()
    tdshap._check_params(300)
    tmc._check_params(300)
    assert repr(tdshap._stop) == "MaxIterations(50)"  # the paper's 50 rounds
    assert repr(tmc._stop) == "MeanRelativeChange(rtol=0.05, window=100)"  # Ghorbani & Zou


def test_absolute_rule_fires_once_values_stop_moving():
    rule = MaxAbsoluteChange(atol=0.1, window=2)
    values = [np.array([0.0, 1.0]), np.array([0.5, 1.0]), np.array([0.55, 1.0]),
              np.array([0.56, 1.0])]
    fired = [rule.check(RunStatus(t, 0.0, v)) for t, v in enumerate(values)]
    assert fired == [False, False, False, True]  # |0.56 - 0.5| < 0.1 over two rounds


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"atol": 0.0}, "atol=0.0 must be a finite number > 0"),
    # was a tolerance of 1, and a rule met at its first check: silently
    ({"atol": True}, "atol=True must be a finite number > 0"),
    ({"atol": float("inf")}, "atol=inf must be a finite number > 0"),
    ({"atol": float("nan")}, "atol=nan must be a finite number > 0"),
    ({"rtol": -1.0}, "rtol=-1.0 must be a number >= 0"),
    ({"max_rounds": 2.5}, "max_iter=2.5 must be a whole number"),
    ({"time_budget": 0}, "time_budget=0 must be a finite number of seconds > 0"),
    # was a 1-second budget
    ({"time_budget": True}, "time_budget=True must be a finite number of seconds > 0"),
    # with max_iter=None it ran forever
    ({"time_budget": float("inf"), "max_rounds": None}, "time_budget=inf must be a finite"),
    ({"atol": 0.1, "atol_window": 0}, "atol_window=0"),
    # numpy's "ufunc 'isfinite' not supported for the input types" (a Python int is finite)
    ({"time_budget": -10**30}, r"time_budget=-1000000000000000000000000000000 must be a finite"),
    # the deque of the window: "OverflowError: Python int too large to convert to C ssize_t"
    ({"rtol": 0.05, "rtol_window": 10**30}, r"rtol_window=10+ must be a whole number from 1 "
     r"to 9223372036854775807"),
    ({"atol": 0.1, "atol_window": 10**30}, r"atol_window=10+ must be a whole number from 1"),
    # without atol (or rtol) any window was taken, silently
    ({"max_rounds": 5, "atol_window": -3}, r"atol_window=-3 must be a whole number from 1"),
    ({"max_rounds": 5, "atol_window": "x"}, r"atol_window='x' must be a whole number"),
    ({"max_rounds": 5, "rtol_window": 2.5}, r"rtol_window=2.5 must be a whole number"),
    ({"atol": 0.1, "rtol_window": 0}, r"rtol_window=0 must be a whole number from 1"),
    ({}, "No stopping criterion: set at least one of max_iter, time_budget, atol or rtol"),
])
def test_bad_limits_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_stopping(**kwargs)


def test_a_time_budget_beyond_numpys_numbers_is_a_budget() -> None:
    # a Python int is finite: 10**30 seconds was numpy's TypeError from isfinite
    assert build_stopping(time_budget=10**30) is not None


_TREE = DecisionTreeClassifier(random_state=0)


@pytest.mark.parametrize(("method", "name"), [
    (lambda: TDShap(_TREE, max_iter=1, atol_window=-3), "atol_window=-3"),
    (lambda: TDShap(_TREE, max_iter=1, rtol_window=2.5), "rtol_window=2.5"),
    (lambda: TMCShapley(_TREE, max_permutations=1, rtol=None, rtol_window="x"), "rtol_window='x'"),
    (lambda: TMCShapley(_TREE, max_permutations=1, atol_window=0), "atol_window=0"),
])
def test_methods_refuse_a_bad_window_without_its_rule(method, name) -> None:
    # atol (and TDShap's rtol) default to None: their windows went unchecked
    X = np.arange(20.0).reshape(-1, 1)
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match=rf"^{name} must be a whole number from 1"):
        method().fit(X, y, X, y)


@pytest.mark.parametrize(("method", "match"), [
    (lambda: TDShap(_TREE, max_iter="abc"), r"^max_iter='abc' must be a whole number"),
    (lambda: TDShap(_TREE, atol=-1), r"^atol=-1 must be a finite number > 0"),
    (lambda: TDShap(_TREE, rtol_window=0), r"^rtol_window=0 must be a whole number"),
    (lambda: TMCShapley(_TREE, max_permutations=0), r"^max_permutations=0 must be a whole"),
    (lambda: TMCShapley(_TREE, time_budget=True), r"^time_budget=True must be a finite"),
])
def test_limits_are_checked_beside_a_stopping_criterion(method, match) -> None:
    # stopping= replaces the limits, but a bad one was taken silently beside it
    X = np.arange(20.0).reshape(-1, 1)
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match=match):
        method().set_params(stopping=MaxIterations(1)).fit(X, y, X, y)
