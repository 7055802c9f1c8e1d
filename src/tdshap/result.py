"""``ValuationResult``: what every valuation method returns.

Per instance: value, pull count, variance, standard error, confidence
interval (:mod:`tdshap.intervals`), harmful and credibly-harmful flags. Per
run: fits, utility evaluations, wall time, seed, configuration, algorithm
name, and (for TDShap) the guarantee figures.
Saved as JSON or ``.npz`` with a format version; never pickled.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tdshap._io import atomic_write_bytes, jsonable
from tdshap.intervals import DEFAULT_INTERVAL, check_method, half_widths, standard_errors

FORMAT = "tdshap.ValuationResult"
FORMAT_VERSION = 1
_ARRAYS = ("values", "counts", "variances", "harmful", "order", "index")


@dataclass
class ValuationResult:
    """Values of the training instances and how they were obtained.

    ``order``, when set, is the removal order a method produced directly
    (sequential LOO); otherwise the order is by ascending value.
    ``index`` holds the user's row labels, when known, for joining back.

    ``interval`` names how :attr:`stderr`, :attr:`ci_low` and :attr:`ci_high`
    are computed from ``counts`` and ``variances`` (see
    :mod:`tdshap.intervals`): ``"pooled"`` by default, a Student t interval
    whose variance is never below the variance pooled over all rows, which
    covered the exact values at >= 0.958 from 5 to 200 pulls per row in
    ``benchmarks/coverage.py``; ``"normal"`` reproduces the intervals of
    results saved before it existed. Files without the key load with the
    default: nothing else is needed.
    """

    algorithm: str
    values: np.ndarray
    counts: np.ndarray
    variances: np.ndarray
    harmful: np.ndarray | None = None
    threshold: float | None = None
    n_fits: int = 0
    n_evaluations: int = 0
    wall_seconds: float = 0.0
    fit_seconds: float = 0.0
    seed: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    guarantee: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    order: np.ndarray | None = None
    index: np.ndarray | None = None
    confidence: float = 0.95
    interval: str = DEFAULT_INTERVAL

    def __post_init__(self) -> None:
        if check_method(self.interval) == "bernstein":
            raise ValueError("interval='bernstein' needs the range of one marginal, which a "
                             "result does not hold: use 'pooled' (the default) or 't'.")
        self.values = np.asarray(self.values, dtype=float)
        self.counts = np.asarray(self.counts, dtype=np.int64)
        self.variances = np.asarray(self.variances, dtype=float)
        n = len(self.values)
        if len(self.counts) != n or len(self.variances) != n:
            raise ValueError("values, counts and variances must have the same length")
        if self.harmful is not None:
            self.harmful = np.asarray(self.harmful, dtype=bool)
        if self.order is not None:
            self.order = np.asarray(self.order, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.values)

    # -- uncertainty -----------------------------------------------------
    @property
    def stderr(self) -> np.ndarray:
        """Standard error of each value, with the variance :attr:`interval` uses."""
        return standard_errors(self.counts, self.variances, self.interval)

    def _half_widths(self) -> np.ndarray:
        return half_widths(self.counts, self.variances, self.confidence, self.interval)

    @property
    def ci_low(self) -> np.ndarray:
        """Lower end of each value's ``confidence`` interval (NaN: no interval)."""
        return self.values - self._half_widths()

    @property
    def ci_high(self) -> np.ndarray:
        """Upper end of each value's ``confidence`` interval (NaN: no interval)."""
        return self.values + self._half_widths()

    @property
    def is_harmful(self) -> np.ndarray:
        """The method's harmful flags, or ``value < 0`` for methods without a threshold.

        For TDShap: ``value <= tau``, the paper's answer (Sec. 3, Algorithm 1), which the
        bandit's guarantee is about; a flag may rest on a handful of pulls.
        """
        if self.harmful is not None:
            return self.harmful
        return self.values < (0.0 if self.threshold is None else self.threshold)

    @property
    def is_credibly_harmful(self) -> np.ndarray:
        """Rows whose whole interval lies below the threshold (0 without one).

        Stricter than :attr:`is_harmful` (``value <= tau``, a point estimate
        that may rest on one pull): the row is below ``tau`` at the interval's
        ``confidence``. A row without an interval is never credibly harmful.
        """
        tau = 0.0 if self.threshold is None else self.threshold
        high = self.ci_high
        return np.isfinite(high) & (high < tau)

    def ranking(self, random_state: int | np.random.Generator | None = 0) -> np.ndarray:
        """Row positions, most harmful first; ties broken by a seeded shuffle."""
        if self.order is not None:
            return self.order.copy()
        rng = np.random.default_rng(random_state)
        return np.lexsort((rng.random(len(self)), self.values))

    def to_dataframe(self) -> pd.DataFrame:
        """One row per training instance, indexed like the user's data."""
        index = pd.Index(self.index) if self.index is not None else pd.RangeIndex(len(self))
        return pd.DataFrame(
            {
                "value": self.values,
                "ci_low": self.ci_low,
                "ci_high": self.ci_high,
                "stderr": self.stderr,
                "n_pulls": self.counts,
                "is_harmful": self.is_harmful,
                "credibly_harmful": self.is_credibly_harmful,
            },
            index=index,
        )

    # -- persistence -----------------------------------------------------
    def _meta(self) -> dict[str, Any]:
        return jsonable(
            {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "algorithm": self.algorithm,
                "threshold": self.threshold,
                "n_fits": self.n_fits,
                "n_evaluations": self.n_evaluations,
                "wall_seconds": self.wall_seconds,
                "fit_seconds": self.fit_seconds,
                "seed": self.seed,
                "config": self.config,
                "guarantee": self.guarantee,
                "extra": self.extra,
                "confidence": self.confidence,
                "interval": self.interval,
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """A strict-JSON dictionary (NaN written as null)."""
        out = self._meta()
        for name in _ARRAYS:
            arr = getattr(self, name)
            out[name] = None if arr is None else jsonable(np.asarray(arr))
        return out

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write to ``path``: ``.json`` or ``.npz`` by suffix, atomically."""
        path = Path(path)
        if path.suffix == ".json":
            atomic_write_bytes(path, json.dumps(self.to_dict(), indent=1).encode())
        elif path.suffix == ".npz":
            arrays = {
                n: np.asarray(getattr(self, n)) for n in _ARRAYS if getattr(self, n) is not None
            }
            if "index" in arrays and arrays["index"].dtype == object:
                arrays["index"] = arrays["index"].astype(str)
            buf = io.BytesIO()
            # numpy's stub lets **arrays match savez's allow_pickle: bool; keys are field names
            np.savez(buf, meta=np.array(json.dumps(self._meta())), **arrays)  # type: ignore[arg-type]
            atomic_write_bytes(path, buf.getvalue())
        else:
            raise ValueError(f"cannot save to {path}: use a .json or .npz file name.")
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ValuationResult:
        if data.get("format") != FORMAT:
            raise ValueError("not a tdshap ValuationResult file (missing 'format').")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise ValueError(
                f"ValuationResult format version {version} is not supported "
                f"(this tdshap reads version {FORMAT_VERSION})."
            )

        def arr(name: str, dtype: Any) -> np.ndarray | None:
            v = data.get(name)
            if v is None:
                return None
            return np.array([np.nan if x is None else x for x in v], dtype=dtype)

        def required(name: str, dtype: Any) -> np.ndarray:
            out = arr(name, dtype)
            if out is None:
                raise ValueError(f"not a complete tdshap ValuationResult file (no {name!r}).")
            return out

        index = data.get("index")
        return cls(
            algorithm=data["algorithm"],
            values=required("values", float),
            counts=required("counts", np.int64),
            variances=required("variances", float),
            harmful=arr("harmful", bool),
            threshold=data.get("threshold"),
            n_fits=int(data.get("n_fits", 0)),
            n_evaluations=int(data.get("n_evaluations", 0)),
            wall_seconds=float(data.get("wall_seconds", 0.0)),
            fit_seconds=float(data.get("fit_seconds", 0.0)),
            seed=data.get("seed"),
            config=data.get("config") or {},
            guarantee=data.get("guarantee"),
            extra=data.get("extra") or {},
            order=arr("order", np.int64),
            index=None if index is None else np.asarray(index),
            confidence=float(data.get("confidence", 0.95)),
            interval=str(data.get("interval", DEFAULT_INTERVAL)),
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ValuationResult:
        """Read a result written by :meth:`save`."""
        path = Path(path)
        if path.suffix == ".json":
            return cls.from_dict(json.loads(path.read_text()))
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                data = json.loads(str(z["meta"]))
                for name in _ARRAYS:
                    if name in z.files:
                        data[name] = z[name].tolist()
            return cls.from_dict(data)
        raise ValueError(f"cannot load {path}: expected a .json or .npz file.")
