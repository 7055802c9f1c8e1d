"""Stopping criteria, composable with ``|`` (either) and ``&`` (both).

Each criterion looks at a :class:`RunStatus` after every round and reports
whether to stop and how far along it is (``completion``, for progress bars).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from tdshap._validation import check_number


@dataclass
class RunStatus:
    """What a criterion may look at: rounds done after initialisation, seconds, values."""

    rounds: int
    elapsed: float
    values: np.ndarray


class StoppingCriterion:
    """Base class. Subclasses implement :meth:`check` and :meth:`completion`."""

    def check(self, status: RunStatus) -> bool:
        raise NotImplementedError

    def completion(self, status: RunStatus) -> float:
        raise NotImplementedError

    def reset(self) -> None:
        """Forget any history (called at the start of a run)."""

    def get_state(self, prefix: str = "stop") -> dict[str, np.ndarray]:
        """The history a stateful criterion keeps, as arrays (for checkpoints)."""
        return {}

    def set_state(self, arrays: dict[str, np.ndarray], prefix: str = "stop") -> None:
        """Restore what :meth:`get_state` returned."""

    def __or__(self, other: StoppingCriterion) -> StoppingCriterion:
        return _Either(self, other)

    def __and__(self, other: StoppingCriterion) -> StoppingCriterion:
        return _Both(self, other)

    def fired(self, status: RunStatus) -> list[str]:
        """Names of the leaf criteria that are met now (for the result)."""
        return [repr(self)] if self.check(status) else []


class MaxIterations(StoppingCriterion):
    """Stop after ``n`` rounds (block evaluations after initialisation)."""

    def __init__(self, n: int) -> None:
        self.n = int(n)

    def check(self, status: RunStatus) -> bool:
        return status.rounds >= self.n

    def completion(self, status: RunStatus) -> float:
        return 1.0 if self.n <= 0 else min(1.0, status.rounds / self.n)

    def __repr__(self) -> str:
        return f"MaxIterations({self.n})"


class TimeBudget(StoppingCriterion):
    """Stop once ``seconds`` of wall time have passed (checked between rounds)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)

    def check(self, status: RunStatus) -> bool:
        return status.elapsed >= self.seconds

    def completion(self, status: RunStatus) -> float:
        return min(1.0, status.elapsed / self.seconds) if self.seconds > 0 else 1.0

    def __repr__(self) -> str:
        return f"TimeBudget({self.seconds:g})"


class MaxAbsoluteChange(StoppingCriterion):
    """Stop when no value moved by more than ``atol`` over the last ``window`` rounds.

    The change is the largest ``|v_now - v_then|`` over all values, ``then``
    being ``window`` rounds ago: a rule in the metric's own units, suited to
    thresholding, where what matters is whether a value can still cross tau.
    """

    def __init__(self, atol: float, window: int = 10) -> None:
        self.atol = float(atol)
        self.window = int(window)
        self._history: deque[np.ndarray] = deque(maxlen=self.window + 1)
        self._last_change = np.inf

    def reset(self) -> None:
        self._history.clear()
        self._last_change = np.inf

    def get_state(self, prefix: str = "stop") -> dict[str, np.ndarray]:
        history = np.array(list(self._history)) if self._history else np.zeros((0, 0))
        return {f"{prefix}.history": history, f"{prefix}.last_change": np.array(self._last_change)}

    def set_state(self, arrays: dict[str, np.ndarray], prefix: str = "stop") -> None:
        self.reset()
        self._history.extend(np.array(row) for row in arrays[f"{prefix}.history"])
        self._last_change = float(arrays[f"{prefix}.last_change"])

    def check(self, status: RunStatus) -> bool:
        if not self._history or self._history[-1] is not status.values:
            self._history.append(status.values.copy())
        if len(self._history) <= self.window:
            return False
        self._last_change = float(np.max(np.abs(self._history[-1] - self._history[0])))
        return self._last_change < self.atol

    def completion(self, status: RunStatus) -> float:
        if not np.isfinite(self._last_change) or self._last_change <= 0:
            return 0.0 if not np.isfinite(self._last_change) else 1.0
        return float(min(1.0, self.atol / self._last_change))

    def __repr__(self) -> str:
        return f"MaxAbsoluteChange(atol={self.atol:g}, window={self.window})"


class _Either(StoppingCriterion):
    def __init__(self, a: StoppingCriterion, b: StoppingCriterion) -> None:
        self.a, self.b = a, b

    def check(self, status: RunStatus) -> bool:
        # both are evaluated so that stateful criteria see every round
        first, second = self.a.check(status), self.b.check(status)
        return first or second

    def completion(self, status: RunStatus) -> float:
        return max(self.a.completion(status), self.b.completion(status))

    def reset(self) -> None:
        self.a.reset()
        self.b.reset()

    def get_state(self, prefix: str = "stop") -> dict[str, np.ndarray]:
        return {**self.a.get_state(f"{prefix}.a"), **self.b.get_state(f"{prefix}.b")}

    def set_state(self, arrays: dict[str, np.ndarray], prefix: str = "stop") -> None:
        self.a.set_state(arrays, f"{prefix}.a")
        self.b.set_state(arrays, f"{prefix}.b")

    def fired(self, status: RunStatus) -> list[str]:
        return self.a.fired(status) + self.b.fired(status)

    def __repr__(self) -> str:
        return f"({self.a!r} | {self.b!r})"


class _Both(_Either):
    def check(self, status: RunStatus) -> bool:
        first, second = self.a.check(status), self.b.check(status)
        return first and second

    def completion(self, status: RunStatus) -> float:
        return min(self.a.completion(status), self.b.completion(status))

    def fired(self, status: RunStatus) -> list[str]:
        fired = self.a.fired(status) + self.b.fired(status)
        return fired if self.check(status) else []

    def __repr__(self) -> str:
        return f"({self.a!r} & {self.b!r})"


#: The most rounds a run may be asked for: they are counted (and checkpointed, and a row's
#: pulls with them) in 64-bit integers; a count past it (max_iter=10**23) is no plan either.
MAX_ROUNDS = 2**63 - 1


def _positive_finite(value: Any) -> bool:
    """A number > 0 that is finite and not a bool (True is an int: a limit of 1, silently)."""
    return bool(not isinstance(value, bool | np.bool_) and isinstance(
        value, int | float | np.number) and value > 0 and (
        # a Python int is finite, and may exceed what numpy's isfinite takes
        # (10**30: "ufunc 'isfinite' not supported for the input types")
        isinstance(value, int) or np.isfinite(value)))


def check_stopping_limits(
    *,
    max_rounds: Any = None,
    time_budget: Any = None,
    atol: Any = None,
    atol_window: Any = 10,
    rtol: Any = None,
    rtol_window: Any = 100,
    rounds_name: str = "max_iter",
    min_rounds: int = 0,
) -> None:
    """Raise ``ValueError`` for a limit :func:`build_stopping` would refuse (its arguments);
    a method given ``stopping=`` checks its own limits here too, so ``max_iter="abc"`` is
    refused whether or not the limits are used."""
    # a deque holds a window: 10**30 was "OverflowError: Python int too large to convert
    # to C ssize_t". Checked whether or not its rule is on: without atol (or rtol) a
    # window of -3, "x" or 2.5 was taken silently, and failed only once the rule was set
    check_number(rtol_window, "rtol_window", low=1, high=MAX_ROUNDS, integer=True)
    check_number(atol_window, "atol_window", low=1, high=MAX_ROUNDS, integer=True)
    if rtol is not None:
        check_number(rtol, "rtol", low=0, hint="Ghorbani & Zou's TMC rule uses rtol=0.05.")
    if max_rounds is not None:
        check_number(max_rounds, rounds_name, low=min_rounds, high=MAX_ROUNDS, integer=True,
                     hint="Or None for no limit on rounds (with time_budget=SECONDS to stop "
                     "when the time is up).")
    # True is an int: it was a budget of 1 second, silently
    # inf passed for a limit and, with max_iter=None, ran forever
    if time_budget is not None and not _positive_finite(time_budget):
        raise ValueError(f"time_budget={time_budget!r} must be a finite number of "
                         "seconds > 0, or None for no limit on time.")
    # True was a tolerance of 1, and inf stopped at the first check, silently
    if atol is not None and not _positive_finite(atol):
        raise ValueError(f"atol={atol!r} must be a finite number > 0 (in units of the "
                         "metric), or None not to stop on small changes.")


def build_stopping(
    *,
    max_rounds: int | None = None,
    time_budget: float | None = None,
    atol: float | None = None,
    atol_window: int = 10,
    rtol: float | None = None,
    rtol_window: int = 100,
    rounds_name: str = "max_iter",
    min_rounds: int = 0,
) -> StoppingCriterion:
    """The criterion that stops at whichever of the given limits comes first.

    Every method builds its stopping rule here, so a parameter name means the
    same thing in every method:

    ``max_rounds``
        rounds after initialisation (TDShap's ``max_iter``, TMC's
        ``max_permutations``: ``rounds_name`` is the name errors use, and
        ``min_rounds`` the smallest allowed);
    ``time_budget``
        wall-clock seconds, checked between rounds;
    ``atol``, ``atol_window``
        :class:`MaxAbsoluteChange`: no value moved by more than ``atol`` (in
        metric units) over the last ``atol_window`` rounds;
    ``rtol``, ``rtol_window``
        :class:`MeanRelativeChange`: Ghorbani & Zou's rule for TMC Shapley,
        the mean relative change over the last ``rtol_window`` rounds below
        ``rtol``.

    ``None`` leaves a limit out; at least one must be set.
    """
    check_stopping_limits(max_rounds=max_rounds, time_budget=time_budget, atol=atol,
                          atol_window=atol_window, rtol=rtol, rtol_window=rtol_window,
                          rounds_name=rounds_name, min_rounds=min_rounds)
    parts: list[StoppingCriterion] = []
    # this order (rtol first, atol last) keeps ``stopped_by`` as each method listed it
    if rtol is not None:
        parts.append(MeanRelativeChange(rtol, int(rtol_window)))
    if max_rounds is not None:
        parts.append(MaxIterations(int(max_rounds)))
    if time_budget is not None:
        parts.append(TimeBudget(time_budget))
    if atol is not None:
        parts.append(MaxAbsoluteChange(atol, int(atol_window)))
    if not parts:
        raise ValueError(
            f"No stopping criterion: set at least one of {rounds_name}, time_budget, atol "
            "or rtol (or pass stopping=)."
        )
    crit = parts[0]
    for p in parts[1:]:
        crit = crit | p
    return crit


def leaves(criterion: StoppingCriterion) -> list[StoppingCriterion]:
    """The criteria that ``criterion`` combines with ``|`` and ``&`` (itself if none)."""
    if isinstance(criterion, _Either):
        return leaves(criterion.a) + leaves(criterion.b)
    return [criterion]


class MeanRelativeChange(StoppingCriterion):
    """Ghorbani & Zou's convergence rule for TMC Shapley.

    Over the last ``window`` rounds (the current one included), the mean over
    values of ``|v_t - v_now| / (|v_now| + 1e-12)``; stop when its largest
    value is below ``rtol``. Never fires before ``window`` rounds. The original
    code uses ``rtol = 0.05`` and ``window = 100`` permutations.
    """

    def __init__(self, rtol: float, window: int = 100) -> None:
        self.rtol = float(rtol)
        self.window = int(window)
        self._history: deque[np.ndarray] = deque(maxlen=self.window)
        self._rounds = -1
        self._error = np.inf

    def reset(self) -> None:
        self._history.clear()
        self._rounds = -1
        self._error = np.inf

    def get_state(self, prefix: str = "stop") -> dict[str, np.ndarray]:
        history = np.array(list(self._history)) if self._history else np.zeros((0, 0))
        return {f"{prefix}.history": history,
                f"{prefix}.rounds_error": np.array([self._rounds, self._error])}

    def set_state(self, arrays: dict[str, np.ndarray], prefix: str = "stop") -> None:
        self.reset()
        self._history.extend(np.array(row) for row in arrays[f"{prefix}.history"])
        rounds, error = arrays[f"{prefix}.rounds_error"]
        self._rounds, self._error = int(rounds), float(error)

    def check(self, status: RunStatus) -> bool:
        if status.rounds != self._rounds:  # a round is recorded once, however often checked
            self._rounds = status.rounds
            self._history.append(np.array(status.values, dtype=float))
            if len(self._history) >= self.window:
                now = self._history[-1]
                scale = np.abs(now) + 1e-12
                self._error = max(float(np.mean(np.abs(h - now) / scale)) for h in self._history)
        return self._error < self.rtol

    @property
    def error(self) -> float:
        """The last computed change (inf before ``window`` rounds)."""
        return self._error

    def completion(self, status: RunStatus) -> float:
        if not np.isfinite(self._error):
            return min(1.0, len(self._history) / self.window) * 0.5
        return float(min(1.0, self.rtol / self._error)) if self._error > 0 else 1.0

    def __repr__(self) -> str:
        return f"MeanRelativeChange(rtol={self.rtol:g}, window={self.window})"
