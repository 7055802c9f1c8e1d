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
import numbers
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tdshap._io import (
    atomic_write_bytes,
    check_folder_of,
    jsonable,
    unique_keys,
    unpacked_size_problem,
)
from tdshap._validation import check_number, check_random_state, repeated_label
from tdshap.cross_fit import CrossFit
from tdshap.intervals import (
    DEFAULT_INTERVAL,
    INTERVAL_METHODS,
    check_method,
    half_widths,
    standard_errors,
)

FORMAT = "tdshap.ValuationResult"
FORMAT_VERSION = 1
_ARRAYS = ("values", "counts", "variances", "harmful", "order", "index")


#: What a saved array's cells must be, by the dtype it is read as.
_CELL_KINDS: dict[Any, str] = {float: "numbers", np.int64: "whole numbers", bool: "true/false"}


def _cell_fits(cell: Any, dtype: Any) -> bool:
    """Whether one cell of a saved array is of its field's type (None: a NaN number)."""
    # numpy's scalars too: list(result.counts) holds np.int64, which was refused
    if dtype is bool:
        return isinstance(cell, bool | np.bool_)
    if cell is None:
        return dtype is float
    if isinstance(cell, bool | np.bool_) or not isinstance(
            cell, int | float | np.integer | np.floating):
        return False
    return dtype is float or isinstance(cell, int | np.integer) or float(cell).is_integer()


def _column(name: str, data: Any, dtype: Any, n: int | None = None) -> np.ndarray:
    """``data`` as a 1-D array of ``dtype`` with ``n`` entries, or an error naming ``name``.

    numpy alone cut 2.7 pulls to 2, read the text 'no' as a true flag, and left a 2-D table
    or a scalar to fail later in a broadcast or ``len()``.
    """
    kind = _CELL_KINDS.get(dtype, np.dtype(dtype).name)
    if data is None:
        raise TypeError(f"{name} is missing: it must be a 1-D list of {kind}.")
    if isinstance(data, list | tuple):
        # numpy would turn "1.5" and true into numbers and cut 2.7 pulls to 2 (a result
        # file's cells, or a list built by hand): one of the wrong type is refused
        odd = [x for x in data if not _cell_fits(x, dtype)]
        if odd:
            raise TypeError(f"{name} must be {kind}, not {odd[0]!r:.40}.")
        data = [np.nan if x is None else x for x in data]  # JSON's null: a NaN number
    try:
        raw = np.asarray(data)
    except (TypeError, ValueError, OverflowError):  # ragged, or a number past int64
        raw = np.asarray(data, dtype=object)
    if raw.ndim != 1:
        raise ValueError(f"{name} must be a 1-D list of {kind}, not of shape {raw.shape}.")
    if n is not None and len(raw) != n:
        raise ValueError(f"{name} has {len(raw)} entries for {n} values: values, counts, "
                         "variances, harmful and order must have the same length.")
    if dtype is bool:
        ok = raw.dtype == bool
    elif raw.dtype == bool or raw.dtype.kind not in "iuf":
        ok = raw.size == 0 and raw.dtype.kind not in "SUO"
    else:
        ok = dtype is float or raw.dtype.kind in "iu" or bool(
            np.isfinite(raw).all() and (raw == np.round(raw)).all())
    if not ok:
        raise TypeError(f"{name} must be {kind}, not {raw.dtype} values.")
    return raw.astype(dtype)


def _are_labels(index: Any, n: int) -> bool:
    """Whether ``index`` is ``n`` row labels (text or numbers; a list is none: pandas
    cannot index rows by it)."""
    try:
        arr = np.asarray(index)
    except ValueError:  # nested lists of unequal lengths
        return False
    return arr.ndim == 1 and len(arr) == n and not (arr.dtype == object and any(
        isinstance(x, list | dict | np.ndarray) for x in arr))


def _saved_index(index: np.ndarray) -> np.ndarray:
    """``index`` as both file formats keep it: text, real numbers, booleans and None as they
    are, other row labels (a DatetimeIndex's times, a MultiIndex's tuples, periods) as
    their text. JSON has no type for those: the result of a table indexed by time failed to
    save with json's "Object of type datetime is not JSON serializable", a tuple was
    written as a list that load refused, and .npz failed on it with numpy's "setting an
    array element with a sequence"."""
    if index.dtype.kind in "biufU" or (index.dtype == object and all(
            v is None or isinstance(v, str | numbers.Real) for v in index)):
        return index
    return pd.Index(index, tupleize_cols=False).astype(str).to_numpy()


def label_text(index: Any) -> np.ndarray:
    """Row labels as the text a saved result holds for them: a table's labels and a loaded
    result's compare alike (a DatetimeIndex's numpy text, '2020-01-01T00:00:00.000000',
    was not the saved '2020-01-01')."""
    return _saved_index(np.asarray(index)).astype(str)


def unclashed_index(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with each level of its index that is named like one of its columns renamed
    ``<name>_index`` (the user's ``X`` indexed by a "value" column): pandas calls such a
    name ambiguous, so ``table.sort_values("value")`` raised and ``table.reset_index()``
    found the column "already exists"."""
    names = list(table.index.names)
    for i, name in enumerate(names):
        if name is None or name not in table.columns:
            continue
        new = f"{name}_index"
        while new in table.columns or new in names:  # a level of that name too
            new += "_index"
        names[i] = new
    if names == list(table.index.names):
        return table
    return table.set_axis(table.index.set_names(names))


def _removed_flags(removed: Any, n: int) -> np.ndarray:
    """One flag per row from ``removed``: row positions in ``[0, n)``, or ``n`` true/false flags.

    As positions cast to int, a mask [True, False, True] flagged rows 1, 0, 1 (not 0 and 2),
    -1 the last row and 1.5 row 1, with no word; 5 of 3 rows was numpy's IndexError.
    """
    raw = np.asarray(removed)
    if raw.dtype == bool and raw.shape == (n,):
        return raw.copy()
    whole = raw.dtype.kind in "iu" or (raw.dtype.kind == "f" and bool(
        np.isfinite(raw).all() and (raw == np.round(raw)).all()))
    if raw.ndim != 1 or not whole or (raw.size and (raw.min() < 0 or raw.max() >= n)):
        raise ValueError(f"removed must be row positions from 0 to {n - 1} or {n} true/false "
                         "flags (a cleansing's removed rows).")
    flags = np.zeros(n, dtype=bool)
    flags[raw.astype(np.intp)] = True
    return flags


class ResultFileError(ValueError):
    """A file that is not a readable :class:`ValuationResult` (damaged, edited or other)."""


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
        # the invariants load() checks: a result built by hand that broke one saved fine and
        # then failed to load, or ended in numpy's broadcast errors in to_dataframe
        if not isinstance(self.algorithm, str):
            raise TypeError(f"algorithm={self.algorithm!r} must be a name (a str).")
        self.values = _column("values", self.values, float)
        n = len(self.values)
        self.counts = _column("counts", self.counts, np.int64, n)
        self.variances = _column("variances", self.variances, float, n)
        if (self.counts < 0).any() or (self.variances < 0).any():
            raise ValueError("counts and variances must not be negative (they are pull "
                             "counts and variances of the pulls).")
        if self.harmful is not None:
            self.harmful = _column("harmful", self.harmful, bool, n)
        if self.order is not None:
            self.order = _column("order", self.order, np.int64, n)
            if not np.array_equal(np.sort(self.order), np.arange(n)):
                raise ValueError("order must hold each row position 0..n-1 once.")
        if self.index is not None:
            if not _are_labels(self.index, n):
                raise ValueError(f"index must hold one row label per value ({n}), each text "
                                 "or a number.")
            if isinstance(self.index, list | tuple):
                self.index = np.asarray(self.index)
            # a row label names one row: to_dataframe's table of repeated labels joined each
            # value to every row of its label (X.drop(removed) dropped them all)
            repeat = repeated_label(self.index)
            if repeat is not None:
                raise ValueError(f"index repeats row labels (e.g. {repeat[0]!r}, {repeat[1]} "
                                 "repeats): each value's label must name one row; give "
                                 "each row its own label (or index=None for positions).")
        # the metadata is JSON in both formats: a NaN or infinite threshold came back as
        # none (so 0), flipping the harmful flags of every row between the two
        if self.threshold is not None and (
                isinstance(self.threshold, bool) or not isinstance(self.threshold, numbers.Real)
                or not np.isfinite(self.threshold)):
            raise ValueError(f"threshold={self.threshold!r} must be a finite number or None.")
        # the run's record, as load() reads it back (each of these saved, then failed to load)
        for name in ("config", "extra"):
            if not isinstance(getattr(self, name), dict):
                raise TypeError(f"{name} must be a dict, not {type(getattr(self, name)).__name__}.")
        if self.guarantee is not None and not isinstance(self.guarantee, dict):
            raise TypeError(f"guarantee must be a dict or None, not "
                            f"{type(self.guarantee).__name__}.")
        if self.seed is not None and (isinstance(self.seed, bool)
                                      or not isinstance(self.seed, int | np.integer)):
            raise TypeError(f"seed={self.seed!r} must be a whole number (an int) or None.")
        for name in ("n_fits", "n_evaluations"):
            check_number(getattr(self, name), name, low=0, integer=True)
            setattr(self, name, int(getattr(self, name)))  # a file's 9.0 fits
        for name in ("wall_seconds", "fit_seconds"):  # NaN: not recorded (a file's null)
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or v < 0:
                raise ValueError(f"{name}={v!r} must be a number of seconds >= 0.")
        if isinstance(self.confidence, bool) or not isinstance(self.confidence, numbers.Real) \
                or not 0 < self.confidence < 1:
            raise ValueError(f"confidence={self.confidence!r} must be a number in (0, 1), "
                             "e.g. 0.95.")

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
        # numpy's own refusal of random_state=-1 or 1.5 came from inside SeedSequence
        check_random_state(random_state)
        if self.order is not None:
            return self.order.copy()
        rng = np.random.default_rng(random_state)
        return np.lexsort((rng.random(len(self)), self.values))

    def to_dataframe(self, index: Any = None, removed: Any = None) -> pd.DataFrame:
        """One row per training instance: the one place this table is built.

        Indexed like the user's data (``index``, else the saved ``index``,
        else row numbers; an index named like a column, e.g. ``value``, is
        named ``value_index``: see :func:`unclashed_index`). ``removed``
        (positions dropped by a cleansing) adds a boolean ``removed`` column.
        """
        if index is None:
            index = self.index if self.index is not None else pd.RangeIndex(len(self))
        elif np.ndim(index) != 1 or len(index) != len(self):
            raise ValueError(f"index must hold one row label per value ({len(self)}).")
        out = pd.DataFrame(
            {
                "value": self.values,
                "ci_low": self.ci_low,
                "ci_high": self.ci_high,
                "stderr": self.stderr,
                "n_pulls": self.counts,
                "is_harmful": self.is_harmful,
                "credibly_harmful": self.is_credibly_harmful,
            },
            index=pd.Index(index) if not isinstance(index, pd.Index) else index,
        )
        if removed is not None:
            out["removed"] = _removed_flags(removed, len(self))
        return unclashed_index(out)

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
            if arr is not None and name == "index":
                arr = _saved_index(np.asarray(arr))
            out[name] = None if arr is None else jsonable(np.asarray(arr))
        return out

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write to ``path``: ``.json`` or ``.npz`` by suffix, atomically."""
        path = _file_path(path)
        if path.is_dir():  # the rename onto it failed with a bare IsADirectoryError
            raise ValueError(f"cannot save to {path}: it is a folder; give a file name in it, "
                             f"e.g. {path / 'result.json'}.")
        if path.suffix in (".json", ".npz"):
            check_folder_of(path)
        if path.suffix == ".json":
            # strict JSON writes NaN and inf as null, read back as NaN: a value of -inf (a
            # harmful row) came back as NaN (not harmful), a threshold of -inf as none (0)
            infinite = [name for name, arr in (("values", self.values),
                                               ("variances", self.variances))
                        if np.isinf(arr).any()]
            if infinite:
                raise ValueError(f"cannot save to {path}: {' and '.join(infinite)} hold "
                                 "infinite numbers, which JSON reads back as NaN; save to a "
                                 ".npz file, which keeps them.")
            atomic_write_bytes(path, json.dumps(self.to_dict(), indent=1).encode())
        elif path.suffix == ".npz":
            arrays = {
                n: np.asarray(getattr(self, n)) for n in _ARRAYS if getattr(self, n) is not None
            }
            if "index" in arrays:
                arrays["index"] = _saved_index(arrays["index"])
                if arrays["index"].dtype == object:  # saved without pickle: as text
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
        """The result a :meth:`to_dict` dictionary holds, checked field by field.

        A damaged or edited dictionary raises :class:`ResultFileError` naming
        the field, never a ``KeyError`` or ``TypeError`` from deep inside.
        """
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ResultFileError("not a tdshap ValuationResult file (missing 'format').")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise ResultFileError(
                f"ValuationResult format version {version!r} is not supported "
                f"(this tdshap reads version {FORMAT_VERSION})."
            )

        # the fields are checked once, by the constructor (a result built by hand is held
        # to the same rules); here only what a file adds: defaults and JSON's nulls
        fields: dict[str, Any] = {name: data.get(name) for name in _ARRAYS}
        fields.update({name: np.nan if data.get(name, 0.0) is None else data.get(name, 0.0)
                       for name in ("wall_seconds", "fit_seconds")})  # null: not recorded
        fields.update(
            algorithm=data.get("algorithm"),
            threshold=data.get("threshold"),
            n_fits=data.get("n_fits", 0),
            n_evaluations=data.get("n_evaluations", 0),
            seed=data.get("seed"),
            config=data.get("config") or {},
            guarantee=data.get("guarantee"),
            extra=data.get("extra") or {},
            confidence=data.get("confidence", 0.95),
            interval=data.get("interval", DEFAULT_INTERVAL),
        )
        try:
            result = cls(**fields)
        except (TypeError, ValueError) as err:
            raise ResultFileError(str(err)) from None
        extra = result.extra
        # the interval a method names for its credibly-harmful test (tdshap.cut.eligible_rows)
        named = extra.get("eligibility_interval", result.interval)
        if not isinstance(named, str) or named == "bernstein" or named not in INTERVAL_METHODS:
            raise ResultFileError(f"field 'extra.eligibility_interval' is {named!r}: use one of "
                                  f"{tuple(m for m in INTERVAL_METHODS if m != 'bernstein')}.")
        if "cross_fit" in extra:  # the cut's folds and flagged rows (tdshap.cross_fit)
            try:
                CrossFit.from_extra(extra["cross_fit"], len(result))
            except ValueError as err:
                raise ResultFileError(f"field 'extra.cross_fit' {err}.") from None
        return result

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ValuationResult:
        """Read a result written by :meth:`save` (:class:`ResultFileError` if it is not one)."""
        path = _file_path(path)
        if path.suffix not in (".json", ".npz"):
            raise ValueError(f"cannot load {path}: expected a .json or .npz file.")
        if path.exists() and not path.is_file():
            # a FIFO hung the read forever, a link to /dev/zero read until memory ran out
            raise ResultFileError(f"{path} is not a regular file (a folder, a device or a "
                                  "pipe): give the path of a saved result.")
        try:
            if path.suffix == ".json":
                data = json.loads(path.read_text(encoding="utf-8"),
                                  object_pairs_hook=unique_keys)
            else:
                with open(path, "rb") as fh:
                    problem = unpacked_size_problem(fh)
                if problem:
                    raise ResultFileError(problem + ".")
                with np.load(path, allow_pickle=False) as z:
                    data = json.loads(str(z["meta"]), object_pairs_hook=unique_keys)
                    if not isinstance(data, dict):
                        raise ResultFileError("its metadata is not an object.")
                    for name in _ARRAYS:
                        if name in z.files:
                            data[name] = z[name].tolist()
            return cls.from_dict(data)
        except ResultFileError as err:
            raise ResultFileError(f"{path} is not a readable tdshap result: {err}") from None
        except FileNotFoundError:
            raise ResultFileError(f"{path} does not exist.") from None
        except RecursionError:
            raise ResultFileError(f"{path} is not a readable tdshap result (nested too deep "
                                  "to parse).") from None
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:
            raise ResultFileError(
                f"{path} is not a readable tdshap result ({type(err).__name__}: {err})."
            ) from None


def _file_path(path: Any) -> Path:
    """``path`` as a Path, or a ``TypeError``: Path(3) and Path(b"r.json") raise pathlib's
    bare "expected str, bytes or os.PathLike object, not int"."""
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path={path!r} must be a file's path (a str or a Path).")
    return Path(path)
