"""Network architectures used by the paper's deep experiments, and a dropout whose
mask is drawn by the trainer (so batched and one-by-one training see the same masks)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F


class MaskedDropout(nn.Module):
    """Dropout that takes its mask from the ``mask`` buffer when one is set.

    tdshap's trainers draw every model's masks from that model's own
    generator and hand them in (as a buffer, also under ``torch.func.vmap``),
    so one model gets the same masks whether it is trained alone or stacked
    with others. Without a mask it behaves like :class:`torch.nn.Dropout`.

    ``shape`` is the per-example shape of the input (``(128,)`` after a
    128-unit linear layer); the trainer needs it to draw masks in advance.
    """

    mask: torch.Tensor

    def __init__(self, p: float, shape: Sequence[int]) -> None:
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"p={p!r} must be in [0, 1).")
        self.p = float(p)
        self.shape = tuple(int(s) for s in shape)
        self.register_buffer("mask", torch.empty(0), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if self.mask.numel() == 0:
            return F.dropout(x, self.p, training=True)
        return x * self.mask

    def draw(self, n_steps: int, batch: int, generator: torch.Generator) -> torch.Tensor:
        """Masks for ``n_steps`` minibatches of ``batch`` rows, scaled by 1/(1-p)."""
        keep = torch.full((n_steps, batch, *self.shape), 1.0 - self.p)
        return torch.bernoulli(keep, generator=generator) / (1.0 - self.p)


class FashionCNN(nn.Module):
    """The paper's CNN for 28×28 greyscale images (supplementary Table 7).

    conv3×3 32ch + ReLU, maxpool 2; conv3×3 64ch + ReLU, maxpool 2;
    linear 128 + ReLU + dropout; linear ``n_classes``. Padding 1 keeps the
    28×28 size before pooling, as the paper's output shapes show.
    ``channels``/``hidden``/``side`` shrink it for tests and smoke runs.
    """

    def __init__(
        self,
        n_classes: int = 10,
        *,
        channels: tuple[int, int] = (32, 64),
        hidden: int = 128,
        side: int = 28,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        if side % 4:
            raise ValueError(f"side={side} must be a multiple of 4 (two 2×2 poolings).")
        c1, c2 = channels
        self.conv1 = nn.Conv2d(1, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.fc1 = nn.Linear(c2 * (side // 4) ** 2, hidden)
        self.drop = MaskedDropout(dropout, (hidden,))
        self.fc2 = nn.Linear(hidden, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:  # (batch, side, side): add the channel axis
            x = x.unsqueeze(1)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.drop(F.relu(self.fc1(x.flatten(1))))
        return self.fc2(x)


def fashion_cnn(n_classes: int) -> FashionCNN:
    """Module factory for :class:`~tdshap.torch.estimators.TorchClassifier`: the paper's CNN."""
    return FashionCNN(n_classes)
