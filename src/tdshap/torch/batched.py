"""Batched subset training: the utility that trains many subset models as one computation.

A TDShap block needs K+1 models on nested prefixes, LOO needs N+1 models,
TMC a whole permutation's worth: independent fits of one architecture on
different rows. :class:`BatchedTorchUtility` gathers every fit that a call
to :meth:`evaluate_chains` needs (after the cache), trains them in stacks of
up to ``max_models`` with :func:`~tdshap.torch.training.train_stacked`
(each model on exactly its own rows, with its own row order and dropout
masks) and scores them all with one vmapped forward pass.
:class:`~tdshap.torch.estimators.TorchClassifier` selects it through its
``utility_class`` (``batched=True``).

It overrides :meth:`evaluate_chains` itself, so a parallel ``executor``
(``n_jobs``) passed to it is not used: the stacks run in this process, on its device.
Counters (``n_fits``, ``n_evaluations``, ``n_cache_hits``, ``fit_seconds``)
mean what they mean for :class:`~tdshap.utility.base.Utility`. TMC truncation is
applied after the fact (:meth:`~tdshap.utility.base.Truncation.apply`): a chain
is trained whole, then its scores past the point where the sequential scan
would have stopped take the last score, so values equal the sequential ones
(the fits are still counted).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tdshap.torch.training import (
    FitSeeds,
    predict_stacked,
    resolve_device,
    stack_states,
    train_stacked,
)
from tdshap.utility.base import Chain, ChainExecutor, Truncation, Utility


@dataclass
class _Job:
    """One subset model to train: its rows, seed and cache key."""

    rows: np.ndarray
    seed: int
    key: bytes


class BatchedTorchUtility(Utility):
    """A :class:`~tdshap.utility.base.Utility` for ``TorchClassifier`` that trains in stacks."""

    def __init__(self, estimator: Any, metric: Any, X: np.ndarray, y: np.ndarray,
                 X_val: np.ndarray, y_val: np.ndarray, **kwargs: Any) -> None:
        super().__init__(estimator, metric, X, y, X_val, y_val, **kwargs)
        est = estimator
        self.device = resolve_device(est.device)
        self.classes = est._classes_for(y)
        self.X_t = est.input_tensor(X, self.device)
        self.y_t = torch.as_tensor(np.searchsorted(self.classes, y), device=self.device)
        self.Xv_t = est.input_tensor(X_val, self.device)
        self.schedule = est.schedule()
        self.template = est.build_module(
            len(self.classes), est.fresh_state(len(self.classes), FitSeeds.from_seed(0)),
            self.device,
        )
        est.check_output(self.template, self.X_t, len(self.classes))

    def evaluate_chain(self, prefix: np.ndarray, block: np.ndarray, seed: int,
                       truncation: Truncation | None = None) -> np.ndarray:
        return self.evaluate_chains([Chain(prefix, block, seed, truncation)])[0]

    def evaluate_chains(
        self, chains: Sequence[Chain], executor: ChainExecutor | None = None
    ) -> list[np.ndarray]:
        """Every chain's scores, its fits trained in stacks here (``executor`` is not used)."""
        if self.metric.from_predictions is None:  # the metric needs the model itself
            return [Utility.evaluate_chain(self, c.prefix, c.block, c.seed, c.truncation)
                    for c in chains]
        outs: list[np.ndarray] = []
        jobs: list[_Job] = []
        job_of: dict[Any, int] = {}  # one job per distinct (subset, seed) in this call
        where: list[tuple[int, int, int]] = []  # (chain, position, job)
        for c in chains:
            idx = np.concatenate([np.asarray(c.prefix, dtype=np.intp),
                                  np.asarray(c.block, dtype=np.intp)])
            out = np.empty(len(c.block) + 1)
            for j in range(len(out)):
                # sorted, as Utility fits them: V is a function of the set, not of the
                # order the chain reached it in (the row order seeds the shuffling)
                rows = np.sort(idx[: len(c.prefix) + j])
                seed = self._fit_seed(c.seed, j)
                self.n_evaluations += 1
                key = self._key(rows, seed) if self.use_cache else b""
                job_id = key if self.use_cache else (len(outs), j)
                if self.use_cache and (hit := self._cache.get(key)) is not None:
                    self.n_cache_hits += 1
                    out[j] = hit
                elif len(rows) == 0:
                    out[j] = self._fit_score(None, rows)  # the empty set: fallback or raise
                elif job_id in job_of:
                    self.n_cache_hits += 1
                    where.append((len(outs), j, job_of[job_id]))
                else:
                    job_of[job_id] = len(jobs)
                    where.append((len(outs), j, len(jobs)))
                    jobs.append(_Job(rows, seed, key))
            outs.append(out)
        scores = self._train_and_score(jobs)
        for i, j, k in where:
            outs[i][j] = scores[k]
        for c, out in zip(chains, outs, strict=True):
            if c.truncation is not None:
                self.n_truncated += c.truncation.apply(out)
        return outs

    def _initial_stack(self, jobs: list[_Job]) -> dict[str, torch.Tensor]:
        est, n_classes = self.estimator, len(self.classes)
        states = [est.initial_state(n_classes, FitSeeds.from_seed(job.seed)) for job in jobs]
        return stack_states(states, self.device)

    def _train_and_score(self, jobs: list[_Job]) -> list[float]:
        """Train every job (in stacks of ``max_models``) and score it on the validation set."""
        scores: list[float] = []
        size = self.estimator.max_models
        score_of = self.metric.from_predictions
        assert score_of is not None  # evaluate_chains refits when the metric needs the model
        for start in range(0, len(jobs), size):
            group = jobs[start : start + size]
            t0 = time.perf_counter()
            params = train_stacked(
                self.template, self._initial_stack(group), self.X_t, self.y_t,
                [job.rows for job in group], self.schedule,
                [FitSeeds.from_seed(job.seed) for job in group],
            )
            pred = predict_stacked(self.template, params, self.Xv_t).cpu().numpy()
            for job, p in zip(group, pred, strict=True):
                score = float(score_of(self.y_val, self.classes[p]))
                if self.use_cache:
                    self._cache[job.key] = score
                scores.append(score)
            self.fit_seconds += time.perf_counter() - t0
            self.n_fits += len(group)
        return scores
