"""Sequential removal: value, remove the lowest rows, value what remains, repeat.

A row's value depends on the other rows: once the most harmful rows are
gone, rows that looked harmless may turn harmful, and the reverse. LOO_k
(the paper, Sec. 5.1) accounts for this by recomputing the values after every ``k``
removals; :class:`SequentialRemoval` does the same for any valuation method,
TDShap included: each stage fits a clone of ``method`` on the rows that
remain, removes the ``step`` rows it ranks lowest, and stops once
``max_remove`` rows are ranked. ``SequentialRemoval(LeaveOneOut(), step=k)``
is LOO_k, and runs as :class:`~tdshap.methods.LeaveOneOut` with ``k=step``
(one implementation of LOO_k; it shares the utility's cache across stages,
so each stage's ``V(R)`` is not refitted). That run does not checkpoint.

The result's ``order`` is the removal sequence, then the rows never removed
in the last stage's order, so it is a full ranking for the cleansing
protocol; ``values``, ``counts`` and ``variances`` are each row's figures
from the stage that removed it (or the last stage). Values from different
stages are on different data and are not comparable: rank by ``order``.
Each stage costs one run of ``method``; with ``step = 10`` and
``max_remove = 500`` that is 50 runs.
"""

from __future__ import annotations

import dataclasses
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone

from tdshap._validation import (
    check_data,
    check_flags,
    check_number,
    check_random_state,
    said_already,
)
from tdshap.methods.base import seed_of
from tdshap.methods.checkpoint.files import CheckpointError, data_fingerprint, plan_resume
from tdshap.methods.checkpoint.mixin import Checkpointing
from tdshap.methods.checkpoint.run_state import number, saved_generator, vector, whole
from tdshap.methods.loo import LeaveOneOut
from tdshap.methods.progress import RunProgress
from tdshap.result import ValuationResult
from tdshap.utility.base import REPEATED_WARNINGS


class SequentialRemoval(Checkpointing, BaseEstimator):
    """Rank rows by repeated valuation and removal (see the module docstring).

    Parameters
    ----------
    method:
        A valuation method (:class:`~tdshap.methods.TDShap`,
        :class:`~tdshap.methods.TMCShapley`, ...), cloned for every stage.
        Counts in it that must fit the shrinking data should be fractions
        (TDShap's ``n_min=0.9``).
    step:
        Rows removed per stage.
    max_remove:
        Rows to rank by removal (``None``: half of N, what the cleansing
        grid removes at most by default).
    random_state:
        Seeds every stage's ``method`` (its own ``random_state`` is replaced)
        and the tie-breaking of rankings.
    progress:
        Show a progress bar over the stages.
    checkpoint, resume:
        Save the run to the file ``checkpoint`` after every stage (atomically,
        see :mod:`tdshap.methods.checkpoint.files`); ``resume`` continues a
        saved run, which then ends as the uninterrupted run would, with the
        meaning every method gives it
        (:class:`~tdshap.methods.checkpoint.mixin.Checkpointing`). A killed
        run loses at most the stage in progress; a damaged or edited
        checkpoint is refused before any stage runs.

    Attributes
    ----------
    values_, order_, result_:
        Each row's value in the stage that removed it, the removal order,
        the full result (fits and seconds summed over stages).
    n_stages_:
        Stages run.
    """

    #: a checkpoint after every stage: a stage is a whole run of ``method``
    checkpoint_every = 0.0

    def __init__(self, method: Any = None, step: int = 10, max_remove: int | None = None,
                 random_state: Any = None, progress: bool = False,
                 checkpoint: str | os.PathLike[str] | None = None,
                 resume: str | os.PathLike[str] | bool | None = None) -> None:
        self.method = method
        self.step = step
        self.max_remove = max_remove
        self.random_state = random_state
        self.progress = progress
        self.checkpoint = checkpoint
        self.resume = resume

    @property
    def algorithm(self) -> str:
        return f"sequential_{getattr(self.method, 'algorithm', 'method')}"

    def _check_params(self, n: int) -> int:
        if isinstance(self.method, type):  # its get_params wanted self: a TypeError
            raise ValueError(f"method must be a valuation method's instance, got the class "
                             f"{self.method.__name__}: pass {self.method.__name__}(estimator) "
                             "(with its parameters).")
        # the class's algorithm: a k-NN model's own algorithm='auto' (its neighbour search)
        # passed, and its fit failed inside scikit-learn ("takes 3 positional arguments")
        if not (all(hasattr(self.method, a) for a in ("fit", "get_params"))
                and hasattr(type(self.method), "algorithm")):
            raise ValueError("method must be a tdshap valuation method such as TDShap(Ridge()), "
                             f"not the model itself: got {self.method!r}.")
        inner = self.method.get_params(deep=False)
        # every stage is a clone on other rows: one file would be overwritten by each stage,
        # or resumed by the next one and refused for its data after a stage's work
        if inner.get("checkpoint") is not None or inner.get("resume") not in (None, False):
            raise ValueError("the method's own checkpoint= and resume= would be shared by "
                             "every stage: drop them from the method and use checkpoint= "
                             "and resume= of SequentialRemoval, which save the whole run.")
        check_random_state(self.random_state)  # its own generator comes before any stage's
        check_flags(progress=self.progress)
        check_number(self.step, "step", low=1, integer=True, hint="Rows removed per stage.")
        self._check_checkpoint_params()
        if self.max_remove is None:
            return max(1, n // 2)
        check_number(self.max_remove, "max_remove", low=1, integer=True,
                     hint=f"Use at most N - 1 = {n - 1}, or None for half of N "
                     f"({max(1, n // 2)}).")
        if self.max_remove > n - 1:
            raise ValueError(f"max_remove={self.max_remove} must be at most N - 1 = {n - 1}.")
        return int(self.max_remove)

    # -- checkpoints: one after every stage ------------------------------------
    def _settings(self, max_remove: int) -> dict[str, Any]:
        return {"method": repr(self.method), "step": int(self.step), "max_remove": max_remove,
                "random_state": seed_of(self.random_state)}

    def _loo_k(self) -> LeaveOneOut | None:
        """``method`` as LOO_k (``LeaveOneOut(k=step)``) when it is plain leave-one-out."""
        if not isinstance(self.method, LeaveOneOut) or self.method.k is not None:
            return None
        if self.checkpoint is not None or self.resume not in (None, False):
            raise ValueError(
                "SequentialRemoval(LeaveOneOut()) runs as LeaveOneOut(k=step), which does not "
                "checkpoint: drop checkpoint= and resume=, or value with another method."
            )
        return clone(self.method).set_params(k=int(self.step), random_state=self.random_state)

    def fit(self, X: Any, y: Any, X_val: Any, y_val: Any) -> SequentialRemoval:
        """Rank the rows of ``(X, y)`` by sequential valuation and removal."""
        Xa, ya, Xv, yv = check_data(X, y, X_val, y_val)
        n = len(ya)
        max_remove = self._check_params(n)
        loo = self._loo_k()
        if loo is not None:
            return self._fit_loo_k(loo.set_params(max_remove=max_remove), X, y, X_val, y_val)
        data = data_fingerprint(Xa, ya, Xv, yv)
        settings = self._settings(max_remove)
        run = _SequentialRun.fresh(n, np.random.default_rng(self.random_state))
        saved = self._resume_from(data, settings)
        if saved is not None:
            try:
                run = _SequentialRun.restore(*saved, n, int(self.step), max_remove)
            except CheckpointError as err:
                raise self._restore_error(err, plan_resume(self.resume, self.checkpoint).path) \
                    from None
        saver = self._schedule(data, settings)
        start = time.perf_counter() - run.elapsed
        bar = RunProgress(self.progress, desc=f"sequential {self.method.__class__.__name__}")
        try:
            told = False  # the first stage run here warns of the user's rows; later ones again
            while run.done < max_remove:
                take = min(int(self.step), max_remove - run.done)
                with said_already(*REPEATED_WARNINGS) if told else nullcontext():
                    self._stage(run, Xa, ya, Xv, yv, take)
                told = True
                run.elapsed = time.perf_counter() - start
                if saver is not None:
                    saver.write({**run.meta(), "finished": run.done >= max_remove}, run.arrays())
                bar.update(run.done / max_remove, removed=run.done, fits=run.totals["n_fits"])
        finally:
            bar.close()
        order = np.concatenate([run.removed, run.rest])
        self.values_, self.order_, self.n_stages_ = run.values, order, len(run.stage_fits)
        self.result_ = ValuationResult(
            algorithm=self.algorithm,
            values=run.values,
            counts=run.counts,
            variances=run.variances,
            n_fits=int(run.totals["n_fits"]),
            n_evaluations=int(run.totals["n_evaluations"]),
            wall_seconds=time.perf_counter() - start,
            fit_seconds=float(run.totals["fit_seconds"]),
            seed=seed_of(self.random_state),
            config=settings,
            extra={"stages": self.n_stages_, "max_remove": max_remove, "step": int(self.step),
                   "inner_algorithm": getattr(self.method, "algorithm", None),
                   "stage_fits": list(run.stage_fits), **self._resume_extra()},
            order=order,
            index=X.index.to_numpy() if isinstance(X, pd.DataFrame) else None,
        )
        return self

    def _fit_loo_k(self, loo: LeaveOneOut, X: Any, y: Any, X_val: Any,
                   y_val: Any) -> SequentialRemoval:
        inner = loo.fit(X, y, X_val, y_val).result_
        self.values_, self.order_ = inner.values, loo.order_
        self.n_stages_ = int(inner.extra["rounds"])
        self.result_ = dataclasses.replace(
            inner,
            algorithm=self.algorithm,
            config=self._settings(loo.max_remove_),
            extra={"stages": self.n_stages_, "max_remove": loo.max_remove_,
                   "step": int(self.step), "inner_algorithm": loo.algorithm,
                   "stage_fits": list(inner.extra["round_fits"]), "runs_as": repr(loo)},
        )
        return self

    def _stage(self, run: _SequentialRun, X: np.ndarray, y: np.ndarray, X_val: np.ndarray,
               y_val: np.ndarray, take: int) -> None:
        """Value the rows that remain with a clone of ``method``; remove its ``take`` lowest."""
        remaining = np.sort(run.rest)
        stage = clone(self.method)
        stage._uniform_target_ok = run.done > 0  # the caller's rows are checked, not what is left
        if "random_state" in stage.get_params():
            stage.set_params(random_state=int(run.rng.integers(2**31 - 1)))
        stage.fit(X[remaining], y[remaining], X_val, y_val)
        result: ValuationResult = stage.result_
        ranking = result.ranking(run.rng)
        run.values[remaining] = result.values
        run.counts[remaining] = result.counts
        run.variances[remaining] = result.variances
        for key in run.totals:
            run.totals[key] += getattr(result, key)
        run.removed = np.concatenate([run.removed, remaining[ranking[:take]]])
        run.rest = remaining[ranking[take:]]  # the last stage's order for the others
        run.stage_fits.append(int(result.n_fits))


#: what a run sums over its stages (the result's counters of the same names)
_TOTALS = ("n_fits", "n_evaluations", "fit_seconds")


@dataclass
class _SequentialRun:
    """What a sequential run has done so far (and what its checkpoint holds)."""

    rng: np.random.Generator
    values: np.ndarray
    counts: np.ndarray
    variances: np.ndarray
    removed: np.ndarray
    rest: np.ndarray
    totals: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_TOTALS, 0))
    stage_fits: list[int] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def done(self) -> int:
        return len(self.removed)

    @classmethod
    def fresh(cls, n: int, rng: np.random.Generator) -> _SequentialRun:
        return cls(rng, np.zeros(n), np.zeros(n, dtype=np.int64), np.full(n, np.nan),
                   np.empty(0, dtype=np.intp), np.arange(n))

    def meta(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "totals": self.totals,
                "stage_fits": self.stage_fits, "elapsed": self.elapsed,
                "rounds": len(self.stage_fits)}

    def arrays(self) -> dict[str, np.ndarray]:
        return {"values": self.values, "counts": self.counts, "variances": self.variances,
                "removed": self.removed, "rest": self.rest}

    @classmethod
    def restore(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], n: int, step: int,
                max_remove: int) -> _SequentialRun:
        """The run a checkpoint holds, if it fits a run on ``n`` rows with these settings.

        Everything is checked before a stage runs (else a :class:`CheckpointError`): an
        edited file resumed into an order that lists a row twice or never, into more
        removals than ``max_remove``, or into an error deep inside a stage.
        """
        # every stage but the last removes ``step`` rows, and a run stops at max_remove
        rounds = whole(meta, "rounds", 0, -(-max_remove // step))
        done = min(rounds * step, max_remove)
        removed = vector(arrays, "removed", done, "iu")
        rest = vector(arrays, "rest", n - done, "iu")
        if not np.array_equal(np.sort(np.concatenate([removed, rest])), np.arange(n)):
            raise CheckpointError(f"arrays 'removed' and 'rest' do not split the {n} rows (a "
                                  "row is missing, repeated or not one of them)")
        if meta.get("finished") is not (done >= max_remove):
            raise CheckpointError(f"field 'finished' is {meta.get('finished')!r}, but {done} of "
                                  f"max_remove={max_remove} rows are removed")
        stage_fits = meta.get("stage_fits")
        if not isinstance(stage_fits, list) or len(stage_fits) != rounds or not all(
                isinstance(f, int) and not isinstance(f, bool) and f >= 0 for f in stage_fits):
            raise CheckpointError(f"field 'stage_fits' is not {rounds} whole numbers, one per "
                                  "stage")
        totals = meta.get("totals")
        if not isinstance(totals, dict) or set(totals) != set(_TOTALS):
            raise CheckpointError(f"field 'totals' does not hold {', '.join(_TOTALS)}")
        if whole(totals, "n_fits") != sum(stage_fits):
            raise CheckpointError(f"field 'totals' counts {totals['n_fits']} fits, but the "
                                  f"stages made {sum(stage_fits)}")
        whole(totals, "n_evaluations")
        number(totals, "fit_seconds", 0.0)
        counts = vector(arrays, "counts", n, "iu")
        values, variances = (vector(arrays, name, n, "f") for name in ("values", "variances"))
        if counts.min(initial=0) < 0:
            raise CheckpointError("array 'counts' holds negative pull counts")
        # a value is NaN only for a row its stage never measured (DataOOB's row in every bag)
        if np.isinf(values).any() or np.isnan(values[counts > 0]).any():
            raise CheckpointError("array 'values' holds infinite values, or NaN for rows "
                                  "that were valued")
        if (variances < 0).any():
            raise CheckpointError("array 'variances' holds negative variances")
        return cls(saved_generator(meta), values, counts, variances, removed, rest,
                   dict(totals), list(stage_fits), number(meta, "elapsed", 0.0))
