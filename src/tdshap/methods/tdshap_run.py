"""The state of one TDShap run between two rounds (see :mod:`tdshap.methods.checkpoint.run_state`).

Besides what every resumable run holds, TDShap's run keeps its initial
blocks and how many are done, and whether the ``"auto"`` thresholds are set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np

from tdshap.methods.apt.bandit import APTState
from tdshap.methods.checkpoint.run_state import ResumableRun


@dataclass
class TDShapRun(ResumableRun):
    """A TDShap run in progress."""

    init_order: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    k: int = 1
    init_done: int = 0
    thresholds_set: bool = False

    def fields(self) -> dict[str, Any]:
        return {**super().fields(), "init_done": self.init_done, "k": self.k,
                "n_init_blocks": len(self.init_blocks), "thresholds_set": self.thresholds_set}

    def set_fields(self, fields: dict[str, Any]) -> None:
        super().set_fields(fields)
        self.init_done = int(fields["init_done"])
        self.k = int(fields["k"])
        self.thresholds_set = bool(fields["thresholds_set"])

    def saved_arrays(self) -> dict[str, np.ndarray]:
        return {"init_order": self.init_order}

    @classmethod
    def from_saved(cls, state: APTState, rng: np.random.Generator, meta: dict[str, Any],
                   arrays: dict[str, np.ndarray]) -> Self:
        run = cls(state, rng, init_order=arrays["init_order"])
        run.set_fields(meta)
        return run

    @property
    def init_blocks(self) -> list[np.ndarray]:
        """The initial blocks: the shuffled arms cut into groups of ``k``."""
        return [self.init_order[i : i + self.k] for i in range(0, len(self.init_order), self.k)]
