"""Loaders for Fashion-MNIST and Livedoor: skip without the data."""

from __future__ import annotations

import numpy as np
import pytest

from experiments import deep_data as data
from experiments.datasets import data_dir


def _need(relative: str):
    root = data_dir()
    if root is None or not (root / relative).is_file():
        pytest.skip(f"set TDSHAP_DATA_DIR to a folder with {relative}")


def test_missing_data_folder_says_what_to_set(tmp_path, monkeypatch):
    monkeypatch.delenv("TDSHAP_DATA_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match="TDSHAP_DATA_DIR"):
        data.fashion_mnist(0)
    with pytest.raises(FileNotFoundError, match="not found"):
        data.livedoor(0, path=tmp_path)


def test_fashion_mnist_draw_is_seeded_shuffled_and_disjoint():
    _need("fashion_mnist/fashion_mnist_train.npz")
    a, b, c = data.fashion_mnist(0), data.fashion_mnist(0), data.fashion_mnist(1)
    assert a.X_train.shape == (1000, 1, 28, 28) and a.X_train.dtype == np.float32
    assert 0.0 <= a.X_train.min() and a.X_train.max() <= 1.0
    np.testing.assert_array_equal(a.y_train, b.y_train)
    assert not np.array_equal(a.y_train, c.y_train)
    assert len(np.unique(a.y_train)) == 10  # shuffled: the sorted file would give one class
    flat = lambda X: {x.tobytes() for x in X}  # noqa: E731
    assert not flat(a.X_train) & flat(a.X_test) and not flat(a.X_val) & flat(a.X_test)


def test_livedoor_draw_has_texts_and_nine_categories():
    _need("livedoor/livedoor.jsonl.gz")
    s = data.livedoor(0)
    assert (len(s.y_train), len(s.y_val), len(s.y_test)) == (250, 250, 500)
    assert isinstance(s.X_train[0], str) and len(s.X_train[0]) > 20
    assert len(data.livedoor_categories()) == 9 and set(np.unique(s.y_test)) <= set(range(9))
