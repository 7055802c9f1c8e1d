"""Checkpoint and resume for a valuation method's run (see :mod:`tdshap.methods.checkpoint.files`).

:class:`Checkpointing` holds what every method that checkpoints shares
(TDShap, TMC Shapley, :class:`~tdshap.methods.SequentialRemoval`): the
``checkpoint``, ``checkpoint_every`` and ``resume`` parameters, what
``resume`` means (decided once, by
:func:`~tdshap.methods.checkpoint.files.plan_resume`), finding and checking
the checkpoint to resume against the data and settings, and saving on
schedule. :class:`CheckpointedValuation` adds what the methods built on a
:class:`~tdshap.utility.base.Utility` need: the settings a checkpoint must
agree on, saving a :class:`~tdshap.methods.checkpoint.run_state.ResumableRun`,
and saving the last consistent state when a step is interrupted by an error
or Ctrl-C.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from tdshap._validation import check_number
from tdshap.methods.base import BaseValuation
from tdshap.methods.checkpoint.files import (
    CheckpointBudgetError,
    CheckpointError,
    CheckpointSchedule,
    ResumePlan,
    check_checkpoint_path,
    check_resumable,
    data_fingerprint,
    plan_resume,
    read_checkpoint,
)
from tdshap.methods.checkpoint.run_state import ResumableRun
from tdshap.methods.stopping import StoppingCriterion
from tdshap.result import ValuationResult
from tdshap.utility.base import Utility

#: Parameters that never change the computation: a run may be resumed with others.
FREE_SETTINGS = ("n_jobs", "backend", "progress", "checkpoint", "checkpoint_every", "resume")

Saved = tuple[dict[str, Any], dict[str, np.ndarray]]


class Checkpointing:
    """The ``checkpoint``, ``checkpoint_every`` and ``resume`` parameters of a method.

    ``resume=True`` continues the ``checkpoint`` file when it exists and
    starts afresh otherwise; ``resume=PATH`` continues that file, which must
    exist. The result's ``extra["resume"]`` says what happened (only when
    ``resume`` was set).
    """

    checkpoint: str | os.PathLike[str] | None
    checkpoint_every: float
    resume: str | os.PathLike[str] | bool | None
    #: JSON-able record an application saves with each checkpoint (where the data came
    #: from, e.g. the file and the seed of its split): not a parameter and not compared on
    #: resume, so that it can explain a refused checkpoint in the application's terms
    checkpoint_origin: dict[str, Any] | None = None

    if TYPE_CHECKING:  # a class attribute or a property of the method (SequentialRemoval's)
        @property
        def algorithm(self) -> str: ...

    def _check_checkpoint_params(self) -> ResumePlan:
        check_number(self.checkpoint_every, "checkpoint_every", low=0,
                     hint="It is in seconds; 0 saves after every step.")
        plan = plan_resume(self.resume, self.checkpoint)  # fails early on a bad combination
        if self.checkpoint is not None:  # the first save would replace what is there
            check_checkpoint_path(self.checkpoint)
        return plan

    def _resume_from(self, data: str, settings: dict[str, Any]) -> Saved | None:
        """The checkpoint to resume, checked against ``data`` and ``settings`` (or None)."""
        plan = plan_resume(self.resume, self.checkpoint)
        self._resume_note = plan.note
        if plan.path is None:
            return None
        meta, arrays = read_checkpoint(plan.path)
        check_resumable(meta, self.algorithm, data, settings, plan.path)
        return meta, arrays

    @staticmethod
    def _restore_error(err: CheckpointError, path: Any) -> CheckpointError:
        """``err`` as one line that names the file and what to do."""
        if isinstance(err, CheckpointBudgetError):  # sound, only beyond this run's budget
            return CheckpointBudgetError(f"checkpoint {str(path)!r}: {err}.", *err.params)
        return CheckpointError(f"checkpoint {str(path)!r} is damaged or was edited: {err}; "
                               "start a new run without `resume`.", *err.params, "resume")

    def _schedule(self, data: str, settings: dict[str, Any]) -> CheckpointSchedule | None:
        """Where and how often this run saves (None: it does not)."""
        if self.checkpoint is None:
            return None
        origin = {} if self.checkpoint_origin is None else {"origin": self.checkpoint_origin}
        return CheckpointSchedule(self.checkpoint, self.checkpoint_every,
                                  algorithm=self.algorithm, data=data, settings=settings,
                                  **origin)

    def _resume_extra(self) -> dict[str, Any]:
        """``{"resume": note}`` for the result when resuming was asked for."""
        note = getattr(self, "_resume_note", None)
        return {} if note is None else {"resume": note}


class CheckpointedValuation(BaseValuation, Checkpointing):
    """A valuation method whose runs checkpoint and resume exactly."""

    #: budget parameters (a run may be extended by resuming with a larger one)
    budget_settings: tuple[str, ...] = ()

    def _settings(self, utility: Utility) -> dict[str, Any]:
        """What a checkpoint must agree on to be resumed."""
        free = FREE_SETTINGS + self.budget_settings
        # object addresses in reprs (``<function f at 0x7f...>``) differ between processes
        out = {k: re.sub(r" at 0x[0-9a-fA-F]+", "", v) if isinstance(v, str) else v
               for k, v in self._config().items() if k not in free}
        if not isinstance(self.random_state, int | np.integer | None):
            out["random_state"] = type(self.random_state).__name__
        out["metric"] = utility.metric.name
        return out

    @staticmethod
    def _fingerprint(utility: Utility) -> str:
        return data_fingerprint(utility.X, utility.y, utility.X_val, utility.y_val)

    def _load(self, utility: Utility) -> Saved | None:
        """The checkpoint to resume, checked against this data and these settings (or None)."""
        return self._resume_from(self._fingerprint(utility), self._settings(utility))

    def _saver(self, utility: Utility) -> CheckpointSchedule | None:
        return self._schedule(self._fingerprint(utility), self._settings(utility))

    def _result(self, utility: Utility, start: float, **kwargs: Any) -> ValuationResult:
        result = super()._result(utility, start, **kwargs)
        result.extra.update(self._resume_extra())
        return result

    @staticmethod
    def _save(saver: CheckpointSchedule | None, utility: Utility, run: ResumableRun,
              stop: StoppingCriterion, finished: bool = False, now: bool = False) -> None:
        if saver is not None and (finished or now or saver.due()):
            saver.write(*run.snapshot(utility, stop, finished))

    def _save_interrupted(self, saver: CheckpointSchedule | None, utility: Utility,
                          run: ResumableRun, stop: StoppingCriterion) -> None:
        """On an error or Ctrl-C mid-step, checkpoint the state just before that step."""
        if saver is None:
            return
        run.rewind(utility, stop)
        try:
            self._save(saver, utility, run, stop, now=True)
        except Exception:  # never hide the original error behind a failed save
            pass
