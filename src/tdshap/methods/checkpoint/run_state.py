"""The state of a resumable run between two steps: what a checkpoint holds.

Every method that checkpoints (TDShap, TMC Shapley) keeps its running
estimates in an :class:`~tdshap.methods.apt.bandit.APTState` (means, counts, variances)
and draws from one random generator. A checkpoint of a run holds those, the
steps done, the elapsed seconds, the stopping criterion's history and the
utility's counters and cache, so that a run resumed from it draws the same
chains and reaches the same result as one never interrupted.
Subclasses add their own scalar fields (:meth:`ResumableRun.fields`) and
arrays (:meth:`ResumableRun.saved_arrays`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from tdshap.methods.apt.bandit import APTState
from tdshap.methods.checkpoint.files import restore_utility, utility_state
from tdshap.methods.stopping import StoppingCriterion
from tdshap.utility.base import Utility


@dataclass
class ResumableRun:
    """A run in progress: running estimates, random generator, steps done, elapsed seconds."""

    state: APTState
    rng: np.random.Generator
    rounds: int = 0
    elapsed: float = 0.0

    def __post_init__(self) -> None:
        self._mark: dict[str, Any] | None = None

    # -- what a subclass adds ---------------------------------------------
    def fields(self) -> dict[str, Any]:
        """Scalar fields (JSON-able) that a step may change; restored by :meth:`set_fields`."""
        return {"rounds": self.rounds}

    def set_fields(self, fields: dict[str, Any]) -> None:
        self.rounds = int(fields["rounds"])

    def saved_arrays(self) -> dict[str, np.ndarray]:
        """Arrays a checkpoint holds besides the estimates (fixed for the run)."""
        return {}

    @classmethod
    def from_saved(cls, state: APTState, rng: np.random.Generator, meta: dict[str, Any],
                   arrays: dict[str, np.ndarray]) -> Self:
        run = cls(state, rng)
        run.set_fields(meta)
        return run

    # -- steps that can be taken back -------------------------------------
    def mark(self, utility: Utility, stop: StoppingCriterion) -> None:
        """Remember this point between two steps; :meth:`rewind` returns to it."""
        self._mark = {
            "rng": self.rng.bit_generator.state,
            "counters": utility.counters(),
            "cache_size": utility.cache_size,
            "arrays": {k: v.copy() for k, v in self.state.arrays().items()},
            "stop": stop.get_state(),
            "fields": self.fields(),
            "thresholds": (self.state.tau, self.state.eps),
        }

    def commit(self) -> None:
        """The step since :meth:`mark` is complete: nothing to rewind."""
        self._mark = None

    def rewind(self, utility: Utility, stop: StoppingCriterion) -> None:
        """Undo a step interrupted before :meth:`commit` (to checkpoint a consistent state).

        Random draws, counters, cache entries, estimates and stopping history
        of the step are taken back, so a run resumed from here is the
        uninterrupted run.
        """
        mark, self._mark = self._mark, None
        if mark is None:
            return
        self.rng.bit_generator.state = mark["rng"]
        utility.set_counters(mark["counters"])
        utility.forget_since(mark["cache_size"])
        for name, saved in mark["arrays"].items():
            getattr(self.state, name)[...] = saved
        stop.set_state(mark["stop"])
        self.set_fields(mark["fields"])
        self.state.tau, self.state.eps = mark["thresholds"]

    # -- checkpoints ------------------------------------------------------
    def snapshot(
        self, utility: Utility, stop: StoppingCriterion, finished: bool
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """``(meta, arrays)`` for :func:`tdshap.methods.checkpoint.files.write_checkpoint`."""
        counters, cache = utility_state(utility)
        meta = {
            "finished": finished,
            "elapsed": self.elapsed,
            **self.fields(),
            "tau": self.state.tau,
            "eps": self.state.eps,
            "rng": self.rng.bit_generator.state,
            "run_seed": utility.run_seed,
            "counters": counters,
        }
        arrays = {**self.state.arrays(), **self.saved_arrays(), **cache, **stop.get_state()}
        return meta, arrays

    @classmethod
    def restore(
        cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], utility: Utility,
        stop: StoppingCriterion,
    ) -> Self:
        """The run a checkpoint holds; ``utility`` and ``stop`` get their saved state back."""
        bit_generator = getattr(np.random, meta["rng"]["bit_generator"])()
        bit_generator.state = meta["rng"]
        utility.run_seed = int(meta["run_seed"])
        restore_utility(utility, meta["counters"], arrays)
        stop.set_state(arrays)
        state = APTState.from_arrays(meta["tau"], meta["eps"], arrays)
        run = cls.from_saved(state, np.random.Generator(bit_generator), meta, arrays)
        run.elapsed = float(meta["elapsed"])
        return run
