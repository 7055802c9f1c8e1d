"""Training loops for torch classifiers: one model at a time, or many stacked.

Both loops draw a model's randomness the same way from its own seeds: the
order of the rows in each epoch from a numpy generator (``order_seed``) and
the dropout masks of every :class:`~tdshap.torch.modules.MaskedDropout` from a
torch generator (``mask_seed``), epoch by epoch. So a model trained in a
stack with others follows exactly the path it would follow alone, and the
two loops agree up to floating-point rounding (tested).

:func:`train_single` is the ordinary loop (``torch.optim`` and ``backward``);
:func:`train_stacked` trains M models as one computation: parameters
stacked along a new first axis, one ``torch.func.vmap`` of
``grad(functional_call(...))`` per step, and the optimiser written as
tensor operations so that every model keeps its own state. Models whose
subsets need fewer minibatches per epoch sit out the extra steps (their
update is masked), and partial minibatches are padded with zero-weight rows.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap
from torch.nn import functional as F

from tdshap._validation import check_count
from tdshap.torch.modules import MaskedDropout

OPTIMIZERS = ("adam", "adamw", "sgd")
LR_SCHEDULES = ("constant", "linear")
_BETAS = (0.9, 0.999)
_ADAM_EPS = 1e-8


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"``: CUDA when present, else the CPU; anything else as given.

    A device that is not one (``"garbage"``, ``None``), or one this machine lacks
    (``"cuda"`` without a GPU, ``"cuda:3"`` with one, ``"mps"`` off a Mac), is refused
    here: torch failed later, after the module was built, with an assertion or a
    RuntimeError that did not say which parameter to change.
    """
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    fix = ("device must be 'auto' (CUDA when available), 'cpu', 'cuda', 'cuda:<index>' or "
           "a torch.device")
    if not isinstance(device, str | torch.device):
        raise ValueError(f"device={device!r} is not a device: {fix}.")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise ValueError(f"device={device!r} is not a device: {fix}.") from None
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"device={device!r}, but torch finds no CUDA GPU here: use "
                             "device='cpu' (or 'auto', which takes a GPU when there is one).")
        if dev.index is not None and dev.index >= count:
            raise ValueError(f"device={device!r}, but torch finds {count} CUDA GPU(s) "
                             f"(cuda:0 to cuda:{count - 1}): pick one of them, or 'auto'.")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device={device!r}, but Apple's MPS backend is not available "
                         "here: use device='cpu' or 'auto'.")
    return dev


@dataclass(frozen=True)
class FitSeeds:
    """The three independent streams of one fit, derived from one integer seed."""

    init: int
    order: int
    mask: int

    @classmethod
    def from_seed(cls, seed: int) -> FitSeeds:
        init, order, mask = np.random.SeedSequence(int(seed)).generate_state(3)
        return cls(int(init), int(order), int(mask))


@dataclass(frozen=True)
class Schedule:
    """What one fit does: epochs, minibatch size, optimiser and learning-rate schedule.

    ``lr_schedule="linear"`` with ``warmup_steps`` is the schedule of Hugging
    Face's Trainer (used by the paper for BERT): the factor rises linearly
    from 0 over the warm-up steps, then falls linearly to 0 at the last step;
    ``"constant"`` stays at 1 after the warm-up.
    """

    epochs: int
    batch_size: int
    optimizer: str = "adam"
    lr: float = 1e-3
    weight_decay: float = 0.0
    warmup_steps: int = 0
    lr_schedule: str = "constant"

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer={self.optimizer!r} must be one of {OPTIMIZERS}.")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule={self.lr_schedule!r} must be one of {LR_SCHEDULES}.")
        for name in ("epochs", "batch_size", "warmup_steps"):
            check_count(getattr(self, name), name, low=1 if name == "batch_size" else 0)
        for name in ("lr", "weight_decay"):
            value = getattr(self, name)
            # inf passed "> 0" and trained to NaN weights; a string failed on the comparison
            finite = isinstance(value, int | float | np.integer | np.floating) and not \
                isinstance(value, bool) and bool(np.isfinite(value))
            if not finite or not (value > 0 if name == "lr" else value >= 0):
                bound = "> 0" if name == "lr" else ">= 0"
                raise ValueError(f"{name}={value!r} must be a finite number {bound}.")

    def steps_per_epoch(self, n_rows: int) -> int:
        return math.ceil(n_rows / self.batch_size)

    def lr_factor(self, step: int, total: int) -> float:
        """Multiplier of ``lr`` for the update after ``step`` updates (of ``total``)."""
        if step < self.warmup_steps:
            return step / max(1, self.warmup_steps)
        if self.lr_schedule == "constant":
            return 1.0
        return max(0.0, (total - step) / max(1, total - self.warmup_steps))

    def lr_factor_tensor(self, step: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
        """:meth:`lr_factor` as tensor operations (per model, under vmap)."""
        warm = step / max(1, self.warmup_steps)
        if self.lr_schedule == "constant":
            after = torch.ones_like(step)
        else:
            after = torch.clamp((total - step) / torch.clamp(total - self.warmup_steps, min=1), 0)
        return torch.where(step < self.warmup_steps, warm, after)

    def make_optimizer(self, params: Any) -> torch.optim.Optimizer:
        if self.optimizer == "adam":
            return torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)
        if self.optimizer == "adamw":
            return torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)
        return torch.optim.SGD(params, lr=self.lr, weight_decay=self.weight_decay)


def mask_modules(module: nn.Module) -> list[tuple[str, MaskedDropout]]:
    """The module's :class:`MaskedDropout` layers, in a fixed (registration) order."""
    return [(name, m) for name, m in module.named_modules() if isinstance(m, MaskedDropout)]


def _epoch_draws(
    n_rows: int,
    schedule: Schedule,
    order_rng: np.random.Generator,
    mask_gen: torch.Generator,
    masks: list[tuple[str, MaskedDropout]],
) -> tuple[np.ndarray, dict[str, torch.Tensor]]:
    """One epoch's row order and dropout masks for one model (the shared random path)."""
    perm = order_rng.permutation(n_rows)
    steps = schedule.steps_per_epoch(n_rows)
    drawn = {name: m.draw(steps, schedule.batch_size, mask_gen) for name, m in masks}
    return perm, drawn


def train_single(
    module: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    rows: np.ndarray,
    schedule: Schedule,
    seeds: FitSeeds,
) -> int:
    """Train ``module`` in place on ``X[rows], y[rows]``; return the number of updates."""
    n = len(rows)
    if n == 0:
        return 0
    device = X.device
    opt = schedule.make_optimizer(module.parameters())
    total = schedule.epochs * schedule.steps_per_epoch(n)
    lr_sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: schedule.lr_factor(s, total))
    order_rng = np.random.default_rng(seeds.order)
    mask_gen = torch.Generator().manual_seed(seeds.mask)
    masks = mask_modules(module)
    rows_t = torch.as_tensor(rows, device=device)
    module.train()
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        # plain nn.Dropout layers draw from the global generator: seed it per fit
        torch.manual_seed(seeds.mask)
        _single_epochs(module, opt, lr_sched, X, y, rows_t, schedule, order_rng, mask_gen, masks)
    for _, m in masks:
        m.mask = torch.empty(0, device=device)
    module.eval()
    return total


def _single_epochs(module: nn.Module, opt: torch.optim.Optimizer, lr_sched: Any,
                   X: torch.Tensor, y: torch.Tensor, rows_t: torch.Tensor, schedule: Schedule,
                   order_rng: np.random.Generator, mask_gen: torch.Generator,
                   masks: list[tuple[str, MaskedDropout]]) -> None:
    n, bs, device = len(rows_t), schedule.batch_size, X.device
    for _ in range(schedule.epochs):
        perm, drawn = _epoch_draws(n, schedule, order_rng, mask_gen, masks)
        drawn = {name: mk.to(device) for name, mk in drawn.items()}  # one copy per epoch
        perm_t = torch.as_tensor(perm, device=device)
        for s in range(schedule.steps_per_epoch(n)):
            batch = rows_t[perm_t[s * bs : (s + 1) * bs]]
            for name, m in masks:
                m.mask = drawn[name][s, : len(batch)]
            loss = F.cross_entropy(module(X[batch]), y[batch])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            lr_sched.step()


# -- stacked training ----------------------------------------------------------


def _optimizer_update(
    schedule: Schedule,
    p: torch.Tensor,
    g: torch.Tensor,
    m: torch.Tensor,
    v: torch.Tensor,
    t: torch.Tensor,
    lr: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One update of one tensor, as ``torch.optim`` (single-tensor code) computes it."""
    wd = schedule.weight_decay
    if schedule.optimizer == "sgd":
        return p - lr * (g + wd * p), m, v
    if schedule.optimizer == "adam" and wd:
        g = g + wd * p
    if schedule.optimizer == "adamw" and wd:
        p = p * (1 - lr * wd)
    b1, b2 = _BETAS
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    step = t + 1
    bc1 = 1 - torch.pow(b1, step)
    bc2_sqrt = torch.sqrt(1 - torch.pow(b2, step))
    denom = torch.sqrt(v) / bc2_sqrt + _ADAM_EPS
    return p - (lr / bc1) * m / denom, m, v


def _stacked_step(module: nn.Module, schedule: Schedule) -> Callable[..., Any]:
    """The vmapped update of all models: gradient, optimiser, masking of idle models."""

    def loss(params: dict[str, torch.Tensor], masks: dict[str, torch.Tensor],
             xb: torch.Tensor, yb: torch.Tensor, wb: torch.Tensor) -> torch.Tensor:
        logits = functional_call(module, {**params, **masks}, (xb,))
        ce = F.cross_entropy(logits, yb, reduction="none")
        return (ce * wb).sum() / wb.sum().clamp(min=1.0)

    grad_fn = grad(loss)

    def step(params: dict[str, torch.Tensor], m: dict[str, torch.Tensor],
             v: dict[str, torch.Tensor], t: torch.Tensor, total: torch.Tensor,
             masks: dict[str, torch.Tensor], xb: torch.Tensor, yb: torch.Tensor,
             wb: torch.Tensor, active: torch.Tensor) -> tuple[Any, Any, Any, torch.Tensor]:
        grads = grad_fn(params, masks, xb, yb, wb)
        lr = schedule.lr * schedule.lr_factor_tensor(t, total)
        new_p, new_m, new_v = {}, {}, {}
        for k, p in params.items():
            up, um, uv = _optimizer_update(schedule, p, grads[k], m[k], v[k], t, lr)
            new_p[k] = torch.where(active, up, p)
            new_m[k] = torch.where(active, um, m[k])
            new_v[k] = torch.where(active, uv, v[k])
        return new_p, new_m, new_v, t + active.to(t.dtype)

    return vmap(step, randomness="different")


def train_stacked(
    module: nn.Module,
    params: dict[str, torch.Tensor],
    X: torch.Tensor,
    y: torch.Tensor,
    rows: list[np.ndarray],
    schedule: Schedule,
    seeds: list[FitSeeds],
    cuda_graph: bool | None = None,
) -> dict[str, torch.Tensor]:
    """Train M models at once; ``params`` are stacked ``[M, ...]`` on ``X``'s device.

    Model ``j`` trains on ``X[rows[j]]`` with ``seeds[j]``, exactly as
    :func:`train_single` would train it alone. ``module`` only supplies the
    architecture (its own parameters are not used). Returns the trained
    stacked parameters.

    ``cuda_graph`` (default: on a CUDA device) records one epoch's steps as a
    CUDA graph once and replays it every epoch: the steps are the same
    kernels on the same buffers, without a Python dispatch of each of the
    few hundred small operations per step. A graph that cannot be recorded
    (a module whose forward pass synchronises with the host, say) falls
    back to running the steps one by one, with a warning. On the CPU,
    ``True`` runs the same fixed-buffer epochs without a graph (for tests).
    """
    n_models, device = len(rows), X.device
    masks = mask_modules(module)
    sizes = np.array([len(r) for r in rows])
    steps = np.array([schedule.steps_per_epoch(n) for n in sizes])
    n_steps = int(steps.max(initial=0))
    order_rngs = [np.random.default_rng(s.order) for s in seeds]
    mask_gens = [torch.Generator().manual_seed(s.mask) for s in seeds]
    state = _StackState(
        params={k: p.detach().clone() for k, p in params.items()},
        m={k: torch.zeros_like(p) for k, p in params.items()},
        v={k: torch.zeros_like(p) for k, p in params.items()},
        t=torch.zeros(n_models, device=device),
    )
    total = torch.as_tensor(schedule.epochs * steps, dtype=torch.float32, device=device)
    active = torch.as_tensor(np.arange(n_steps)[:, None] < steps[None, :], device=device)
    step = _stacked_step(module, schedule)
    if cuda_graph is None:
        cuda_graph = USE_CUDA_GRAPHS and device.type == "cuda"
    runner: _EpochRunner | None = None
    module.train()
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        # plain nn.Dropout layers (vmap randomness="different") draw from the global
        # generator: seed it from the stack's seeds so that reruns are identical
        torch.manual_seed(int(np.random.SeedSequence([s.mask for s in seeds]).generate_state(1)[0]))
        for _ in range(schedule.epochs if n_steps else 0):
            epoch = _draw_stacked_epoch(rows, sizes, steps, schedule, order_rngs, mask_gens,
                                        masks, device)
            if runner is None:
                runner = _EpochRunner(step, state, total, active, X, y, epoch, cuda_graph)
            runner.run(epoch)
    module.eval()
    return state.params


USE_CUDA_GRAPHS = True  # module switch, so a benchmark can time the plain loop beside it


@dataclass
class _StackState:
    """What the stacked optimiser carries from step to step."""

    params: dict[str, torch.Tensor]
    m: dict[str, torch.Tensor]
    v: dict[str, torch.Tensor]
    t: torch.Tensor

    def tensors(self) -> list[torch.Tensor]:
        return [*self.params.values(), *self.m.values(), *self.v.values(), self.t]


@dataclass
class _StackedEpoch:
    """One epoch of every stacked model: rows per step, their loss weights, dropout masks."""

    idx: torch.Tensor  # [n_steps, M, batch] row numbers into X (padding: row 0)
    weight: torch.Tensor  # [n_steps, M, batch] 1 for a real row, 0 for padding
    masks: dict[str, torch.Tensor]  # "<module>.mask": [n_steps, M, batch, *shape]

    def tensors(self) -> list[torch.Tensor]:
        return [self.idx, self.weight, *self.masks.values()]


def _draw_stacked_epoch(rows: list[np.ndarray], sizes: np.ndarray, steps: np.ndarray,
                        schedule: Schedule, order_rngs: list[np.random.Generator],
                        mask_gens: list[torch.Generator], masks: list[tuple[str, MaskedDropout]],
                        device: torch.device) -> _StackedEpoch:
    """Every model's row order and masks for one epoch, drawn as it would draw them alone."""
    n_models, bs = len(rows), schedule.batch_size
    n_steps = int(steps.max())
    idx = np.zeros((n_steps, n_models, bs), dtype=np.int64)
    weight = np.zeros((n_steps, n_models, bs), dtype=np.float32)
    stacked_masks = {name: torch.ones(n_steps, n_models, bs, *mm.shape) for name, mm in masks}
    for j in range(n_models):
        perm, drawn = _epoch_draws(int(sizes[j]), schedule, order_rngs[j], mask_gens[j], masks)
        order = rows[j][perm]
        padded = np.zeros(n_steps * bs, dtype=np.int64)
        padded[: len(order)] = order
        idx[:, j] = padded.reshape(n_steps, bs)
        real = np.zeros(n_steps * bs, dtype=np.float32)
        real[: len(order)] = 1.0  # padding rows weigh nothing in the loss
        weight[:, j] = real.reshape(n_steps, bs)
        for name, _ in masks:
            stacked_masks[name][: steps[j], j] = drawn[name]
    return _StackedEpoch(
        idx=_to_device(torch.from_numpy(idx), device),
        weight=_to_device(torch.from_numpy(weight), device),
        masks={f"{name}.mask": _to_device(mk, device) for name, mk in stacked_masks.items()},
    )


def _to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A copy on ``device`` that does not wait for the device's queued work.

    A copy from ordinary (pageable) host memory to a GPU waits until the work
    queued before it is done, so the next epoch's draws would only begin once
    this epoch's training has ended; from pinned memory the copy is queued
    behind that work and the host goes on drawing.
    """
    if device.type != "cuda":
        return t.to(device)
    return t.pin_memory().to(device, non_blocking=True)


class _EpochRunner:
    """Runs one epoch's steps on the stack's state, eagerly or as a replayed CUDA graph.

    With a graph, the state and the epoch's draws live in fixed buffers: each
    epoch copies its draws in and replays the recorded steps, which leave the
    new state in the state's buffers.
    """

    def __init__(self, step: Callable[..., Any], state: _StackState, total: torch.Tensor,
                 active: torch.Tensor, X: torch.Tensor, y: torch.Tensor,
                 first: _StackedEpoch, cuda_graph: bool) -> None:
        self.step, self.state, self.total, self.active, self.X, self.y = (
            step, state, total, active, X, y)
        self.replay: Callable[[], None] | None = None
        if cuda_graph:
            self.replay = self._record(first)

    def _steps(self, epoch: _StackedEpoch, n_steps: int | None = None) -> _StackState:
        s = self.state
        params, m, v, t = s.params, s.m, s.v, s.t
        for i in range(epoch.idx.shape[0] if n_steps is None else n_steps):
            batch = epoch.idx[i]
            params, m, v, t = self.step(
                params, m, v, t, self.total, {k: mk[i] for k, mk in epoch.masks.items()},
                self.X[batch], self.y[batch], epoch.weight[i], self.active[i],
            )
        return _StackState(params, m, v, t)

    def _record(self, first: _StackedEpoch) -> Callable[[], None] | None:
        """A call that runs one epoch from the buffers into the state's buffers.

        On a CUDA device it replays a recorded graph; elsewhere (the tests of
        this buffer handling) it runs the same steps eagerly.
        """
        self.buffers = _StackedEpoch(first.idx.clone(), first.weight.clone(),
                                     {k: mk.clone() for k, mk in first.masks.items()})

        def epoch() -> None:
            new = self._steps(self.buffers)
            torch._foreach_copy_(self.state.tensors(), new.tensors())

        if self.X.device.type != "cuda":
            return epoch
        try:
            # one step off the graph first: lazy initialisation (cuBLAS handles, cuDNN
            # algorithm choice) must not happen while recording
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self._steps(self.buffers, n_steps=1)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                epoch()
        except RuntimeError as exc:
            warnings.warn(f"Could not record the stacked training step as a CUDA graph "
                          f"({exc}); training step by step instead.", RuntimeWarning,
                          stacklevel=4)
            return None
        return graph.replay

    def run(self, epoch: _StackedEpoch) -> None:
        if self.replay is None:
            new = self._steps(epoch)
            self.state.params, self.state.m, self.state.v, self.state.t = (
                new.params, new.m, new.v, new.t)
            return
        torch._foreach_copy_(self.buffers.tensors(), epoch.tensors())
        self.replay()


def stack_states(states: list[dict[str, torch.Tensor]], device: torch.device) -> dict[str, Any]:
    """Stack per-model parameter dicts into one dict of ``[M, ...]`` tensors on ``device``."""
    return {k: torch.stack([s[k] for s in states]).to(device) for k in states[0]}


@torch.no_grad()
def predict_stacked(
    module: nn.Module, params: dict[str, torch.Tensor], X: torch.Tensor, chunk: int = 256
) -> torch.Tensor:
    """Class indices predicted by each of the M stacked models: ``[M, len(X)]``."""
    module.eval()
    n_models = next(iter(params.values())).shape[0]
    rows = max(1, chunk * 16 // max(1, n_models))  # bound activation memory by M × rows
    forward = vmap(lambda p, x: functional_call(module, p, (x,)), in_dims=(0, None))
    out = [forward(params, X[i : i + rows]).argmax(-1) for i in range(0, len(X), rows)]
    return torch.cat(out, dim=1)
