"""Tiny CNNs and images for the torch tests; import after ``pytest.importorskip("torch")``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tdshap.torch.modules import FashionCNN


def tiny_cnn(n_classes: int) -> FashionCNN:
    return FashionCNN(n_classes, channels=(2, 3), hidden=8, side=8, dropout=0.5)


@pytest.fixture(autouse=True)
def one_torch_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def three_class_images(dtype: type = np.float64):
    """Three classes of 8×8 'images' a tiny CNN can tell apart, plus noise: 60 + 30 rows."""
    rng = np.random.default_rng(0)
    n = 90
    y = np.repeat(np.arange(3), n // 3)
    X = rng.normal(0, 0.5, (n, 1, 8, 8)).astype(dtype)
    X[y == 0, :, :4, :] += 1.0
    X[y == 1, :, 4:, :] += 1.0
    X[y == 2, :, :, :4] += 1.0
    perm = rng.permutation(n)
    return X[perm][:60], y[perm][:60], X[perm][60:], y[perm][60:]
