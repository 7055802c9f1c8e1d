"""Loaders for the paper's deep-learning datasets (SPEC §5, §7): Fashion-MNIST and Livedoor.

The files are not shipped: they are read from ``path`` or ``$TDSHAP_DATA_DIR``
(``fashion_mnist/fashion_mnist_{train,test}.npz``, ``livedoor/livedoor.jsonl.gz``;
see the datasets README for how they were made). Both files are sorted by
class, so every split shuffles with its seed before cutting (``experiments.datasets.split``).
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from pathlib import Path

import numpy as np

from experiments.datasets import data_dir
from tdshap.app.splits import Split, split

FASHION_SIZES = (1000, 1000, 1000)
LIVEDOOR_SIZES = (250, 250, 500)


def _find(relative: str, path: str | os.PathLike[str] | None) -> Path:
    root = data_dir(path)
    if root is None:
        raise FileNotFoundError(
            f"no data folder: pass path=... or set TDSHAP_DATA_DIR to the folder holding "
            f"{relative}."
        )
    file = root / relative
    if not file.is_file():
        raise FileNotFoundError(f"{file} not found: is TDSHAP_DATA_DIR={root} the data folder?")
    return file


def fashion_mnist_file(path: str | os.PathLike[str] | None = None, part: str = "train") -> Path:
    """Fashion-MNIST's ``part`` file, or a ``FileNotFoundError`` saying what to set."""
    return _find(f"fashion_mnist/fashion_mnist_{part}.npz", path)


def livedoor_file(path: str | os.PathLike[str] | None = None) -> Path:
    """The Livedoor corpus file, or a ``FileNotFoundError`` saying what to set."""
    return _find("livedoor/livedoor.jsonl.gz", path)


@functools.lru_cache(maxsize=2)
def _fashion_arrays(file: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(file) as z:
        images, labels = z["images"], z["labels"]
    return images[:, None].astype(np.float32) / 255.0, labels.astype(np.int64)


def fashion_mnist(
    seed: int,
    sizes: tuple[int, int, int] = FASHION_SIZES,
    path: str | os.PathLike[str] | None = None,
    part: str = "train",
) -> Split:
    """A seeded train/val/test draw (default 1000/1000/1000) from Fashion-MNIST's ``part``.

    Images are ``float32`` in [0, 1] with shape ``(n, 1, 28, 28)``; labels 0..9.
    """
    if part not in ("train", "test"):
        raise ValueError(f"part={part!r} must be 'train' or 'test'.")
    X, y = _fashion_arrays(fashion_mnist_file(path, part))
    return split(X, y, sizes, seed, name="fashion_mnist")


@functools.lru_cache(maxsize=1)
def _livedoor_docs(file: Path) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    with gzip.open(file, "rt", encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    categories = tuple(sorted({d["category"] for d in docs}))
    texts = np.array([f"{d['title']}\n{d['body']}" for d in docs], dtype=object)
    labels = np.array([categories.index(d["category"]) for d in docs], dtype=np.int64)
    return texts, labels, categories


def livedoor_corpus(path: str | os.PathLike[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """All 7367 articles: texts (title, newline, body) and category indices."""
    texts, labels, _ = _livedoor_docs(livedoor_file(path))
    return texts, labels


def livedoor_categories(path: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """The 9 category names, in label order."""
    return _livedoor_docs(livedoor_file(path))[2]


def livedoor(
    seed: int,
    sizes: tuple[int, int, int] = LIVEDOOR_SIZES,
    path: str | os.PathLike[str] | None = None,
) -> Split:
    """A seeded draw (default 250/250/500) of Livedoor articles: X holds the texts
    (title, newline, body; an object array), y the category index (0..8)."""
    texts, labels = livedoor_corpus(path)
    return split(texts, labels, sizes, seed, name="livedoor")
