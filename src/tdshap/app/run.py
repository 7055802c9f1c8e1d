"""What one ``find_harmful`` run holds: its data, settings with their source, results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tdshap._validation import ParameterError, check_number
from tdshap.app.tabular import TableEncoder
from tdshap.cleansing import CleansingResult
from tdshap.methods.stopping import MAX_ROUNDS
from tdshap.result import ValuationResult

DEFAULT_MAX_ITER = 50


@dataclass
class Setting:
    """One setting of a run: the value used, whether it was given, and why."""

    value: Any
    given: bool
    why: str = ""
    used: bool = True  # False: a setting the chosen method does not take (value None)


@dataclass(frozen=True)
class TDShapOptions:
    """The :class:`~tdshap.TDShap` settings the façade and the CLI expose, with their defaults."""

    tau: float | str = "auto"
    eps: float | str = "auto"
    k: int | str = "auto"
    n_min: int | str = "auto"
    max_iter: int | None = DEFAULT_MAX_ITER
    time_budget: float | None = None

    def check(self) -> None:
        """Refuse a value no method takes, whichever method runs: a closed form ignores
        these settings, but a wrong one is still the user's mistake to hear about. (Limits
        that depend on N are the methods' own checks.)"""
        # each says what the skipped default means too: None is offered only where it is
        # taken (tau=None read "must be a number ..., or 'auto'" and nothing more was wrong)
        rules: tuple[tuple[str, Any, dict[str, Any], str], ...] = (
            ("tau", "auto", {}, "a finite number in units of the values, or 'auto'"),
            ("eps", "auto", {"low": 0}, "a finite number >= 0 in units of the values, or "
             "'auto'"),
            ("k", "auto", {"low": 1, "integer": True}, "a whole number >= 1, or 'auto'"),
            ("n_min", "auto", {"low": 0, "integer": True},
             "a whole number >= 0, a share of N strictly between 0 and 1 (such as 0.9), or "
             "'auto'"),
            ("max_iter", None, {"low": 0, "high": MAX_ROUNDS, "integer": True},
             "a whole number from 0 to 2**63 - 1 (a 64-bit count), or None for no limit on "
             "rounds (with a time_budget to stop the run)"),
        )
        for name, default, bounds, what in rules:
            value = getattr(self, name)
            if value is default or (isinstance(value, str) and value == default):
                continue
            if name == "n_min" and isinstance(value, float) and 0 < value < 1:
                continue
            try:
                check_number(value, name, **bounds)
            except ValueError:
                raise ParameterError(f"{name}={value!r} must be {what}.", name) from None
        if self.time_budget is not None:
            try:
                check_number(self.time_budget, "time_budget", low=0)
                positive = self.time_budget > 0
            except ValueError:
                positive = False
            if not positive:
                # inf is > 0: the message says what is refused (a finite number is needed)
                raise ParameterError(f"time_budget={self.time_budget!r} must be a finite number "
                                     "of seconds > 0, or None for no limit on time.",
                                     "time_budget")
        if self.max_iter is None and self.time_budget is None:
            # the run then failed at its start naming atol, rtol and stopping=, which the
            # façade does not take: None is "no limit on rounds" only beside a time budget
            raise ParameterError("max_iter=None (no limit on rounds) needs a time_budget in "
                                 "seconds to stop the run: give time_budget, or a whole number "
                                 "of rounds for max_iter.", "max_iter", "time_budget")


@dataclass
class PreparedData:
    """Encoded training/validation/test arrays and where the training rows came from."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray | None
    y_test: np.ndarray | None
    train_rows: np.ndarray  # positions of the training rows in the input table
    train_index: pd.Index  # their labels (the user's index, or ids)
    task: str
    task_reason: str
    task_given: bool
    encoder: TableEncoder
    split_note: str


@dataclass
class HarmfulRun:
    """Everything one run produced; :mod:`tdshap.app.report` turns it into text."""

    data: PreparedData
    model_name: str
    estimator: Any
    metric: str
    settings: dict[str, Setting]
    result: ValuationResult
    cleansing: CleansingResult | None
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)

    def frame(self) -> pd.DataFrame:
        """One row per training row (:meth:`ValuationResult.to_dataframe`), the user's index."""
        return self.result.to_dataframe(
            index=self.data.train_index,
            removed=None if self.cleansing is None else self.cleansing.removed,
        )
