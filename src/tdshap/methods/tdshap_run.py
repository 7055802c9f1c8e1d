"""The state of one TDShap run between two rounds: what a checkpoint holds.

Everything the rest of a run depends on is here, so that a run resumed from
a checkpoint draws the same chains and reaches the same result as one never
interrupted: the bandit (mu, T, m2, low, high, tau, eps), the random
generator's state, the initial blocks and how many are done, the rounds done,
the elapsed seconds, the stopping criterion's history, and the utility's
counters and cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tdshap.bandit import APTState
from tdshap.checkpoint import restore_utility, utility_state
from tdshap.stopping import StoppingCriterion
from tdshap.utility import Utility


@dataclass
class TDShapRun:
    """A TDShap run in progress (see the module docstring)."""

    state: APTState
    rng: np.random.Generator
    init_order: np.ndarray
    k: int
    init_done: int = 0
    rounds: int = 0
    elapsed: float = 0.0
    thresholds_set: bool = False

    def __post_init__(self) -> None:
        self._mark: dict[str, Any] | None = None

    def mark(self, utility: Utility, stop: StoppingCriterion) -> None:
        """Remember this point between two steps; :meth:`rewind` returns to it."""
        self._mark = {
            "rng": self.rng.bit_generator.state,
            "counters": utility.counters(),
            "cache_size": len(utility._cache),
            "arrays": {k: v.copy() for k, v in self.state.arrays().items()},
            "stop": stop.get_state(),
            "fields": (self.init_done, self.rounds, self.thresholds_set, self.state.tau,
                       self.state.eps),
        }

    def commit(self) -> None:
        """The step since :meth:`mark` is complete: nothing to rewind."""
        self._mark = None

    def rewind(self, utility: Utility, stop: StoppingCriterion) -> None:
        """Undo a step interrupted before :meth:`commit` (to checkpoint a consistent state).

        Random draws, counters, cache entries, bandit and stopping history of
        the step are taken back, so a run resumed from here is the
        uninterrupted run.
        """
        mark, self._mark = self._mark, None
        if mark is None:
            return
        self.rng.bit_generator.state = mark["rng"]
        for name, value in mark["counters"].items():
            setattr(utility, name, value)
        for key in list(utility._cache)[mark["cache_size"] :]:  # dicts keep insertion order
            del utility._cache[key]
        for name, saved in mark["arrays"].items():
            getattr(self.state, name)[...] = saved
        stop.set_state(mark["stop"])
        (self.init_done, self.rounds, self.thresholds_set, self.state.tau,
         self.state.eps) = mark["fields"]

    @property
    def init_blocks(self) -> list[np.ndarray]:
        """The initial blocks: the shuffled arms cut into groups of ``k``."""
        return [self.init_order[i : i + self.k] for i in range(0, len(self.init_order), self.k)]

    def snapshot(
        self, utility: Utility, stop: StoppingCriterion, finished: bool
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """``(meta, arrays)`` for :func:`tdshap.checkpoint.write_checkpoint`."""
        counters, cache = utility_state(utility)
        meta = {
            "finished": finished,
            "rounds": self.rounds,
            "elapsed": self.elapsed,
            "init_done": self.init_done,
            "n_init_blocks": len(self.init_blocks),
            "thresholds_set": self.thresholds_set,
            "tau": self.state.tau,
            "eps": self.state.eps,
            "k": self.k,
            "rng": self.rng.bit_generator.state,
            "run_seed": utility.run_seed,
            "counters": counters,
        }
        arrays = {**self.state.arrays(), "init_order": self.init_order, **cache,
                  **stop.get_state()}
        return meta, arrays

    @classmethod
    def restore(
        cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], utility: Utility,
        stop: StoppingCriterion,
    ) -> TDShapRun:
        """The run a checkpoint holds; ``utility`` and ``stop`` get their saved state back."""
        bit_generator = getattr(np.random, meta["rng"]["bit_generator"])()
        bit_generator.state = meta["rng"]
        rng = np.random.Generator(bit_generator)
        utility.run_seed = int(meta["run_seed"])
        restore_utility(utility, meta["counters"], arrays)
        stop.set_state(arrays)
        return cls(
            state=APTState.from_arrays(meta["tau"], meta["eps"], arrays),
            rng=rng,
            init_order=arrays["init_order"],
            k=int(meta["k"]),
            init_done=int(meta["init_done"]),
            rounds=int(meta["rounds"]),
            elapsed=float(meta["elapsed"]),
            thresholds_set=bool(meta["thresholds_set"]),
        )
