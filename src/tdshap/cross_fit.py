"""Cross-fitting: an honest test of a cut whose values used the validation rows.

Values made on the validation rows (exact k-NN Shapley with the validation
rows among its queries) rank planted noise better than values that never see
them, but the rows they flag were chosen for hurting those very validation
rows, so the validation gain of removing them is optimistic. Cross-fitting
removes that bias: the validation rows are split into folds; for each fold the
method names the rows it would flag *without* that fold's queries, and the
fold's rows judge the model trained without those. Every validation row then
scores a removal it had no part in choosing, and the mean of those paired
differences is an unbiased estimate of what the procedure's removal gains
(:func:`tdshap.cleansing.cleanse` makes this the cut's one named comparison).

Each fold's values travel too (``values``): with them the cut can also ask,
honestly, whether the paper's larger cut suits the model (each fold's own
ranking, its own grid of models, judged by that fold's rows:
:func:`tdshap.cut.cross_validated_rules`).

The folds and each fold's flagged rows travel in the result's
``extra["cross_fit"]`` (:meth:`CrossFit.to_extra`), with what identifies the
validation rows they were made for (a hash of the labels in order, and each
fold's mean feature row, compared to rounding: ``find_harmful`` prepares the
rows it is given, which may move their last bits): a cut given other
validation rows does not use them. A result file's copy is checked field by field
(:meth:`CrossFit.from_extra`); it only ever selects training rows to leave out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

#: folds of the validation rows (fewer when there are fewer rows)
DEFAULT_FOLDS = 5


#: how close each fold's mean feature row must be to the one recorded (relative)
MEANS_RTOL = 1e-7


def label_fingerprint(y_val: np.ndarray) -> str:
    """A SHA-256 of the validation labels, in order."""
    labels = np.asarray(y_val).tolist()
    return hashlib.sha256(f"{len(labels)}\x00{labels!r}".encode()).hexdigest()


def fold_means(X_val: np.ndarray, folds: np.ndarray, n_folds: int) -> np.ndarray:
    """``(n_folds, features)``: each fold's mean validation row."""
    X = np.asarray(X_val, dtype=float).reshape(len(X_val), -1)
    counts = np.maximum(np.bincount(folds, minlength=n_folds), 1)
    sums = np.zeros((n_folds, X.shape[1]))
    np.add.at(sums, folds, X)
    return sums / counts[:, None]


def make_folds(y_val: np.ndarray, n_folds: int, rng: np.random.Generator,
               stratify: bool) -> np.ndarray:
    """A fold number in ``0..n_folds-1`` for each validation row, at random; ``stratify``
    deals each class's rows round the folds in turn, so every fold holds each class as
    evenly as its count allows."""
    n = len(y_val)
    folds = np.empty(n, dtype=np.int64)
    groups = [np.flatnonzero(y_val == c) for c in np.unique(y_val)] if stratify \
        else [np.arange(n)]
    start = 0
    for rows in groups:
        # each group continues the deal where the last stopped: fold sizes stay even
        folds[rng.permutation(rows)] = (start + np.arange(len(rows))) % n_folds
        start += len(rows)
    return folds


@dataclass(frozen=True)
class CrossFit:
    """Validation folds and, for each, the training rows flagged without its queries."""

    folds: np.ndarray  # (n_val,) fold of each validation row
    flagged: tuple[np.ndarray, ...]  # per fold: sorted training rows flagged without it
    labels: str  # label_fingerprint of the validation rows they were made for
    means: np.ndarray  # fold_means of those rows
    values: tuple[np.ndarray, ...] | None = None  # per fold: every row's value without it

    @classmethod
    def made(cls, X_val: np.ndarray, y_val: np.ndarray, folds: np.ndarray,
             flagged: tuple[np.ndarray, ...],
             values: tuple[np.ndarray, ...] | None = None) -> CrossFit:
        return cls(folds, flagged, label_fingerprint(y_val),
                   fold_means(X_val, folds, len(flagged)), values)

    @property
    def n_folds(self) -> int:
        return len(self.flagged)

    def matches(self, X_val: np.ndarray, y_val: np.ndarray) -> bool:
        """Whether ``(X_val, y_val)`` are the validation rows this was made for."""
        if len(y_val) != len(self.folds) or label_fingerprint(y_val) != self.labels:
            return False
        means = fold_means(X_val, self.folds, self.n_folds)
        scale = max(float(np.max(np.abs(self.means), initial=0.0)), 1.0)
        return means.shape == self.means.shape and bool(
            np.allclose(means, self.means, rtol=MEANS_RTOL, atol=MEANS_RTOL * scale))

    def to_extra(self) -> dict[str, Any]:
        out: dict[str, Any] = {"folds": self.folds.tolist(),
                               "flagged": [f.tolist() for f in self.flagged],
                               "labels": self.labels, "means": self.means.tolist()}
        if self.values is not None:
            out["values"] = [v.tolist() for v in self.values]
        return out

    @classmethod
    def from_extra(cls, data: Any, n_rows: int) -> CrossFit:
        """The cross-fit a result's ``extra["cross_fit"]`` holds, for ``n_rows`` training
        rows; ``ValueError`` naming what is wrong with it."""
        if not isinstance(data, dict) or not _KEYS <= set(data) <= _KEYS | {"values"}:
            raise ValueError("is not an object with 'folds', 'flagged', 'labels' and 'means' "
                             "(and optionally 'values')")
        folds, flagged, labels = data["folds"], data["flagged"], data["labels"]
        if not isinstance(labels, str) or len(labels) != 64 or \
                any(c not in "0123456789abcdef" for c in labels):
            raise ValueError("has 'labels' that is not a SHA-256 hex digest")
        if not isinstance(flagged, list) or not flagged:
            raise ValueError("has no list of flagged rows per fold")
        k = len(flagged)
        means = data["means"]
        if not isinstance(means, list) or len(means) != k or any(
                not isinstance(m, list) or len(m) != len(means[0]) or any(
                    isinstance(x, bool) or not isinstance(x, int | float) for x in m)
                for m in means):
            raise ValueError(f"has 'means' that are not {k} rows of numbers")
        mean_rows = np.asarray(means, dtype=float)
        if not np.all(np.isfinite(mean_rows)):
            raise ValueError("has 'means' that are not finite")
        f = _whole_numbers(folds, "folds")
        if len(f) < k or f.min() < 0 or f.max() >= k:
            raise ValueError(f"has 'folds' that are not fold numbers 0..{k - 1}")
        rows = tuple(_whole_numbers(r, "flagged") for r in flagged)
        for r in rows:
            if len(r) and (r.min() < 0 or r.max() >= n_rows or np.any(np.diff(r) <= 0)):
                raise ValueError(f"has 'flagged' rows that are not sorted distinct rows of "
                                 f"the {n_rows} training rows")
        values = None
        if "values" in data:
            given = data["values"]
            if not isinstance(given, list) or len(given) != k or any(
                    not isinstance(v, list) or len(v) != n_rows or any(
                        isinstance(x, bool) or not isinstance(x, int | float) for x in v)
                    for v in given):
                raise ValueError(f"has 'values' that are not {k} lists of {n_rows} numbers")
            values = tuple(np.asarray(v, dtype=float) for v in given)
            if not all(np.all(np.isfinite(v)) for v in values):
                raise ValueError("has 'values' that are not finite")
        return cls(f, rows, labels, mean_rows, values)


_KEYS = {"folds", "flagged", "labels", "means"}


def _whole_numbers(v: Any, name: str) -> np.ndarray:
    if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int)
                                      for x in v):
        raise ValueError(f"has {name!r} that is not a list of whole numbers")
    return np.asarray(v, dtype=np.int64)
