"""Checkpoint and resume for a valuation method's run (see :mod:`tdshap.methods.checkpoint.files`).

:class:`CheckpointedValuation` holds what TDShap and TMC Shapley share: the
``checkpoint``, ``checkpoint_every`` and ``resume`` parameters, the settings
a checkpoint must agree on, finding and checking the checkpoint to resume,
saving on schedule, and saving the last consistent state when a step is
interrupted by an error or Ctrl-C.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tdshap._validation import check_number
from tdshap.methods.base import BaseValuation
from tdshap.methods.checkpoint.files import (
    CheckpointError,
    CheckpointSchedule,
    check_resumable,
    data_fingerprint,
    read_checkpoint,
    resume_path,
)
from tdshap.methods.checkpoint.run_state import ResumableRun
from tdshap.methods.stopping import StoppingCriterion
from tdshap.utility.base import Utility

#: Parameters that never change the computation: a run may be resumed with others.
FREE_SETTINGS = ("n_jobs", "backend", "progress", "checkpoint", "checkpoint_every", "resume")


class CheckpointedValuation(BaseValuation):
    """A valuation method whose runs checkpoint and resume exactly."""

    #: budget parameters (a run may be extended by resuming with a larger one)
    budget_settings: tuple[str, ...] = ()

    checkpoint: str | os.PathLike[str] | None
    checkpoint_every: float
    resume: str | os.PathLike[str] | bool | None

    def _check_checkpoint_params(self) -> None:
        check_number(self.checkpoint_every, "checkpoint_every", low=0,
                     hint="It is in seconds; 0 saves after every step.")
        resume_path(self.resume, self.checkpoint)  # fails early on a bad combination

    def _settings(self, utility: Utility) -> dict[str, Any]:
        """What a checkpoint must agree on to be resumed."""
        free = FREE_SETTINGS + self.budget_settings
        out = {k: v for k, v in self._config().items() if k not in free}
        if not isinstance(self.random_state, int | np.integer | None):
            out["random_state"] = type(self.random_state).__name__
        out["metric"] = utility.metric.name
        return out

    def _load(self, utility: Utility) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
        """The checkpoint to resume, checked against this data and these settings (or None)."""
        path = resume_path(self.resume, self.checkpoint)
        if path is None:
            return None
        meta, arrays = read_checkpoint(path)
        data = data_fingerprint(utility.X, utility.y, utility.X_val, utility.y_val)
        check_resumable(meta, self.algorithm, data, self._settings(utility), path)
        return meta, arrays

    @staticmethod
    def _restore_error(err: CheckpointError, path: Any) -> CheckpointError:
        """``err`` as one line that names the file and what to do."""
        return CheckpointError(f"checkpoint {str(path)!r} is damaged or was edited: {err}; "
                               "start a new run without resume.")

    def _saver(self, utility: Utility) -> CheckpointSchedule | None:
        if self.checkpoint is None:
            return None
        data = data_fingerprint(utility.X, utility.y, utility.X_val, utility.y_val)
        return CheckpointSchedule(self.checkpoint, self.checkpoint_every, algorithm=self.algorithm,
                                  data=data, settings=self._settings(utility))

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
