"""The state of one TDShap run between two rounds (see :mod:`tdshap.methods.checkpoint.run_state`).

Besides what every resumable run holds, TDShap's run keeps its initial
blocks and how many are done, and whether the ``"auto"`` thresholds are set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np

from tdshap.methods.apt.bandit import APTState
from tdshap.methods.checkpoint.files import CheckpointError
from tdshap.methods.checkpoint.run_state import ResumableRun, whole


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
    def validate(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], n: int,
                 expect: dict[str, Any]) -> None:
        """Also: the initial order is a permutation, progress and pulls agree with the settings.

        Every arm is pulled once by the initial blocks and every round pulls
        ``min(n_blocks * k, N)`` arms, so the pull counts must add up to
        ``min(init_done * k, N) + rounds * min(n_blocks * k, N)``.
        """
        super().validate(meta, arrays, n, expect)
        k = whole(meta, "k", 1, n)
        if "k" in expect and k != expect["k"]:
            raise CheckpointError(f"field 'k' is {k}, but the run uses k={expect['k']}")
        blocks = math.ceil(n / k)
        if whole(meta, "n_init_blocks", blocks, blocks) != blocks:
            raise CheckpointError("field 'n_init_blocks' does not match N and k")
        done = whole(meta, "init_done", 0, blocks)
        rounds = int(meta["rounds"])
        if not isinstance(meta.get("thresholds_set"), bool):
            raise CheckpointError("field 'thresholds_set' is not true/false")
        _check_thresholds(meta, expect)
        order = arrays.get("init_order")
        if order is None or order.ndim != 1 or order.dtype.kind not in "iu" or \
                not np.array_equal(np.sort(order), np.arange(n)):
            raise CheckpointError(f"array 'init_order' is not an order of the {n} rows")
        if rounds and done < blocks:
            raise CheckpointError(f"{rounds} rounds saved before the initial blocks were done")
        per_round = min(int(expect.get("n_blocks", 1)) * k, n)
        pulls = min(done * k, n) + rounds * per_round
        total = int(np.sum(arrays["counts"]))
        if total != pulls:
            raise CheckpointError(f"the pull counts add up to {total}, but {done} initial "
                                  f"blocks and {rounds} rounds make {pulls}")

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


def _check_thresholds(meta: dict[str, Any], expect: dict[str, Any]) -> None:
    """The saved ``tau``/``eps`` are the ones the run's settings give: a resumed run uses the
    file's, so an edited ``tau`` flagged rows by a threshold the user never set.

    ``expect`` holds the settings ``tau`` and ``eps`` (a number or ``"auto"``). An
    ``"auto"`` eps comes from the first marginals, which the file no longer holds, so only
    what follows from it is checked: an ``"auto"`` tau is ``-eps``.
    """
    if "tau" not in expect or "eps" not in expect:
        return
    tau, eps = float(meta["tau"]), float(meta["eps"])
    given_tau, given_eps = expect["tau"], expect["eps"]
    if not meta["thresholds_set"]:  # the placeholders of a run still in its first pass
        if "auto" not in (given_tau, given_eps):
            raise CheckpointError("field 'thresholds_set' is false, but the run's tau and eps "
                                  "are given")
        want = (0.0, 0.0)
    else:
        want_eps = eps if given_eps == "auto" else float(given_eps)
        want = (-want_eps if given_tau == "auto" else float(given_tau), want_eps)
    if (tau, eps) != want:
        raise CheckpointError(f"fields 'tau', 'eps' are {tau!r}, {eps!r}, but the run's "
                              f"settings (tau={given_tau!r}, eps={given_eps!r}) give "
                              f"{want[0]!r}, {want[1]!r}")
