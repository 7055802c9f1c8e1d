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

import json
from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from tdshap._io import jsonable
from tdshap.methods.apt.bandit import APTState
from tdshap.methods.checkpoint.files import (
    CheckpointBudgetError,
    CheckpointError,
    check_counters,
    number,
    restore_utility,
    utility_state,
    whole,
)
from tdshap.methods.stopping import StoppingCriterion
from tdshap.utility.base import Utility

#: The bit generators a checkpoint may name: a name is never looked up beyond these.
BIT_GENERATORS: dict[str, type[np.random.BitGenerator]] = {
    "PCG64": np.random.PCG64, "PCG64DXSM": np.random.PCG64DXSM, "Philox": np.random.Philox,
    "SFC64": np.random.SFC64, "MT19937": np.random.MT19937,
}


def saved_generator(meta: dict[str, Any]) -> np.random.Generator:
    """The random generator in ``meta["rng"]``, else a :class:`CheckpointError`.

    Only a bit generator of :data:`BIT_GENERATORS` is made: a name looked up in
    ``np.random`` would let a file call any of its functions (``seed`` resets numpy's
    global generator).
    """
    rng = meta.get("rng")
    name = rng.get("bit_generator") if isinstance(rng, dict) else None
    # a list or record for the name: "unhashable type", a bare TypeError
    if not isinstance(rng, dict) or not isinstance(name, str) or name not in BIT_GENERATORS:
        raise CheckpointError("field 'rng' does not name a numpy bit generator of "
                              f"{', '.join(BIT_GENERATORS)}")
    try:
        bit_generator = BIT_GENERATORS[rng["bit_generator"]]()
        bit_generator.state = rng
        # a state that repeats one number forever hangs numpy's bounded draws
        degenerate = len(np.unique(bit_generator.random_raw(16))) == 1
        bit_generator.state = rng  # the probe's draws taken back
    except (KeyError, TypeError, ValueError, OverflowError) as err:
        raise CheckpointError(f"field 'rng' is not a state of {rng['bit_generator']} "
                              f"({err})") from None
    if degenerate:
        raise CheckpointError("field 'rng' is a degenerate generator state (it draws one "
                              "number over and over)")
    # numpy coerces what it is given (1.5 and true become 1): the run then drew other
    # numbers than the saved one would have, silently; the state must read back as saved,
    # compared as the JSON the writer makes (in Python 1 == 1.0 == True)
    flag = rng.get("has_uint32", 0)  # numpy keeps any int there; only 0 and 1 are its own
    if json.dumps(jsonable(bit_generator.state), sort_keys=True) != \
            json.dumps(jsonable(rng), sort_keys=True) or flag not in (0, 1) or \
            isinstance(flag, bool):
        raise CheckpointError(f"field 'rng' is not a state of {rng['bit_generator']} as "
                              "numpy saves one (a number of the wrong type, or out of range)")
    return np.random.Generator(bit_generator)


def vector(arrays: dict[str, np.ndarray], name: str, n: int, kinds: str = "iuf") -> np.ndarray:
    """``arrays[name]`` if it is 1-D of length ``n`` and a numeric kind, else an error."""
    arr = arrays.get(name)
    if arr is None or arr.ndim != 1 or len(arr) != n or arr.dtype.kind not in kinds:
        shape = None if arr is None else f"{arr.dtype} {arr.shape}"
        raise CheckpointError(f"array {name!r} is {shape}; it must hold {n} numbers")
    return arr


def _check_pulls(counts: np.ndarray, mu: np.ndarray, m2: np.ndarray, low: np.ndarray,
                 high: np.ndarray) -> None:
    """Each row's count fits its own saved moments (:class:`APTState`'s update gives them).

    Pull counts moved between rows keep the total that the subclasses check, so only what
    a row's moments imply is left: a row never pulled holds the initial moments, one pulled
    once has no spread, and ``c`` rewards within ``[low, high]`` have a sum of squared
    deviations of at most ``c * (high - low)**2 / 4`` (Popoviciu's inequality). Pulls moved
    onto a row cannot be told from its moments: what is refused is a row left with fewer
    pulls than its rewards took.
    """
    unpulled = counts == 0
    odd = unpulled & ((mu != 0) | (m2 != 0) | (low != np.inf) | (high != -np.inf))
    if odd.any():
        row = int(np.flatnonzero(odd)[0])
        raise CheckpointError(f"array 'counts' holds no pull for row {row}, which holds "
                              "rewards in 'mu', 'm2', 'low' and 'high'")
    pulled = ~unpulled
    spread = np.where(pulled, high - low, 0.0)
    # the relative slack covers the rounding of Welford's running sum (exact for equal rewards)
    short = pulled & (((counts == 1) & (spread > 0)) |
                      (4 * m2 > counts * spread**2 * (1 + 1e-9)))
    if short.any():
        row = int(np.flatnonzero(short)[0])
        raise CheckpointError(
            f"array 'counts' gives row {row} {int(counts[row])} pull(s), fewer than its "
            f"rewards took (they spread over [{low[row]:.6g}, {high[row]:.6g}] with a sum "
            f"of squares of {m2[row]:.6g})")


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
    def validate(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], n: int,
                 expect: dict[str, Any]) -> None:
        """Raise :class:`CheckpointError` unless the saved state fits a run on ``n`` rows.

        Types, ranges and array lengths are checked before anything is used,
        so an edited or damaged file is refused instead of hanging a run or
        failing deep inside it. ``expect`` holds settings of the run resuming
        it (``max_iter``: the most rounds the saved state may hold).
        """
        if not isinstance(meta.get("finished"), bool):
            raise CheckpointError(f"field 'finished' is {meta.get('finished')!r}, not true/false")
        number(meta, "elapsed", 0.0)
        max_iter = expect.get("max_iter")
        rounds = whole(meta, "rounds", 0)
        if max_iter is not None and rounds > max_iter:
            # a smaller budget than the saved run's is the user's choice, not damage
            raise CheckpointBudgetError(
                f"it has done {rounds} rounds, more than `max_iter` {max_iter} allows: resume "
                f"with `max_iter` {rounds} or more, or start a new run without `resume`",
                "max_iter", "resume")
        number(meta, "tau")
        number(meta, "eps", 0.0)
        whole(meta, "run_seed", 0, 2**64 - 1)
        saved_generator(meta)
        check_counters(meta.get("counters"))
        counts = vector(arrays, "counts", n, "iu")
        if counts.min(initial=0) < 0:
            raise CheckpointError("array 'counts' holds negative pull counts")
        for name in ("mu", "m2"):
            if not np.isfinite(vector(arrays, name, n, "f")).all():
                raise CheckpointError(f"array {name!r} holds NaN or infinite values")
        if (arrays["m2"] < 0).any():  # sums of squares: a negative one has no variance
            raise CheckpointError("array 'm2' holds negative sums of squares")
        low, high = (vector(arrays, name, n, "f") for name in ("low", "high"))
        # a pulled row's smallest and largest reward bound its mean (unpulled: +-inf)
        pulled = counts > 0
        mu, lo, hi = arrays["mu"][pulled], low[pulled], high[pulled]
        slack = 1e-9 * np.maximum(1.0, np.abs(mu))  # the running mean's rounding
        if np.isnan(low).any() or np.isnan(high).any() or not (
                np.isfinite(lo).all() and np.isfinite(hi).all()) or \
                ((lo > mu + slack) | (mu > hi + slack)).any():
            raise CheckpointError("arrays 'low' and 'high' are not the smallest and largest "
                                  "rewards of the rows' means 'mu'")
        _check_pulls(counts, arrays["mu"], arrays["m2"], low, high)
        keys, values = arrays.get("cache_keys"), arrays.get("cache_values")
        if keys is None or values is None or keys.ndim != 2 or keys.shape[1] != 16 or \
                keys.dtype != np.uint8 or values.shape != (len(keys),) or \
                values.dtype.kind != "f":
            raise CheckpointError("the cache arrays are damaged")
        # a score is finite (a fit that scores NaN is given the fallback's): a NaN V(D)
        # resumed became the truncation target, so no chain was cut and full_score was NaN
        if not np.isfinite(values).all():
            raise CheckpointError("array 'cache_values' holds NaN or infinite scores")

    @classmethod
    def restore(
        cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], utility: Utility,
        stop: StoppingCriterion, expect: dict[str, Any] | None = None,
    ) -> Self:
        """The run a checkpoint holds; ``utility`` and ``stop`` get their saved state back.

        The file is validated first (:meth:`validate`); anything else wrong
        with it surfaces as a :class:`CheckpointError` too.
        """
        cls.validate(meta, arrays, utility.n, expect or {})
        try:
            rng = saved_generator(meta)
            utility.run_seed = int(meta["run_seed"])
            restore_utility(utility, meta["counters"], arrays)
            stop.set_state(arrays)
            state = APTState.from_arrays(meta["tau"], meta["eps"], arrays)
            run = cls.from_saved(state, rng, meta, arrays)
        except CheckpointError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) \
                as err:
            raise CheckpointError(f"its saved state cannot be restored ({err})") from None
        run.elapsed = float(meta["elapsed"])
        return run
