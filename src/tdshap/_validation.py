"""Input checks that fail early with a message naming the problem and the fix."""

from __future__ import annotations

import datetime
import math
import os
import re
import sys
import warnings
from collections.abc import Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp


def check_unmasked(a: Any, name: str, *, impute: str | None) -> None:
    """Refuse a masked array with masked entries: ``np.asarray`` drops the mask, so the
    values under it would be used as data. ``impute``: how the caller fills missing
    features (None for targets, which are never filled)."""
    if not isinstance(a, np.ma.MaskedArray):
        return
    n = int(np.ma.count_masked(a))
    if not n:  # nothing hidden: its data is what the user means
        return
    fix = (f"drop those rows (a target is never imputed), e.g. keep = "
           f"~np.ma.getmaskarray({name})" if impute is None else
           f"fill them with {name}.filled(np.nan) and {impute}, or drop those rows")
    raise ValueError(f"{name} is a masked array with {n:,} masked "
                     f"entr{'y' if n == 1 else 'ies'}, whose hidden values would be used: "
                     f"{fix}.")


#: where a method takes its estimator: said when one is given where data go
METHOD_USAGE = ("a method takes it in its constructor, e.g. "
                "TDShap(estimator).fit(X, y, X_val, y_val)")


def shown(obj: Any, limit: int = 80) -> str:
    """``obj`` for an error message: an array or table by its type and shape (its repr
    ran to pages), anything else by a repr of at most ``limit`` characters."""
    if isinstance(obj, np.ndarray | pd.DataFrame | pd.Series) or sp.issparse(obj):
        return f"a {type(obj).__name__} of shape {obj.shape}"
    text = repr(obj)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def check_not_estimator(value: Any, name: str, usage: str = METHOD_USAGE) -> None:
    """Refuse an estimator given where data go (the arguments in another order): numpy
    read it as a 0-d object array, and the error said "X must be 2-D, got shape ()" or "X
    must be numeric". ``usage``: how the caller is called, with the estimator in place."""
    if callable(getattr(value, "fit", None)):
        kind = "an estimator class" if isinstance(value, type) else "an estimator"
        raise ValueError(f"{name} is {kind} ({shown(value)}), not data: the arguments are "
                         f"in another order; {usage}.")


def check_not_text(value: Any, name: str, X: Any = None, x_name: str = "X") -> None:
    """Refuse a file's path or a column's name given where data go (``find_harmful(
    "train.csv", "label")``): numpy read it as a 0-d array, and the error said "got shape
    ()". ``X`` (named ``x_name``): the features, when ``value`` stands for targets (a name
    of one of its columns is told so)."""
    if not isinstance(value, str | os.PathLike):
        return
    if isinstance(X, pd.DataFrame) and isinstance(value, str) and value in X.columns:
        raise ValueError(f"{name}={value!r} is the name of a column, not the targets: pass "
                         f"the column's values and the other columns, e.g. "
                         f"{name}={x_name}[{value!r}] and {x_name}={x_name}.drop(columns="
                         f"{value!r}).")
    what = "a path" if isinstance(value, os.PathLike) else "text"
    fix = ("read the file first (e.g. pandas.read_csv or pandas.read_parquet) and pass its "
           "feature columns" if X is None else "give one target per row (a list, a numpy "
           "array or a pandas Series)")
    raise ValueError(f"{name} is {what} ({shown(value)}), not data: {fix}.")


def check_not_records(arr: np.ndarray, name: str) -> None:
    """Refuse a structured (record) array and raw bytes (numpy's void dtype): a table of
    named fields was read as 1-D ("got shape (60,)") or as "non-numeric", and raw bytes
    failed inside pandas ("void() takes at least 1 positional argument")."""
    if arr.dtype.kind != "V":
        return
    if arr.dtype.names:
        fields = ", ".join(arr.dtype.names[:5]) + (", ..." if len(arr.dtype.names) > 5 else "")
        raise ValueError(f"{name} is a structured (record) array with fields {fields}: pass "
                         f"pandas.DataFrame({name}), a table with one column per field.")
    raise ValueError(f"{name} holds raw bytes (numpy dtype {arr.dtype}), not numbers: give "
                     "its values as numbers, one column per feature.")


def check_not_single(arr: np.ndarray, value: Any, name: str, holds: str, table: str) -> None:
    """Refuse what numpy reads as one value (``arr``, from ``value``): None, a generator or
    iterator, a set, a dict, a number. Such an ``X`` was said to hold "non-numeric values"
    (to be one-hot encoded), or to have "shape ()". ``holds``: what ``name`` should hold
    ("rows x features"); ``table``: the pandas type it may be given as."""
    if arr.ndim != 0:
        return
    kind = type(value).__name__
    what = "None" if value is None else f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"
    give = f"give {holds} as a list, a numpy array or a pandas {table}"
    if isinstance(value, Iterator):
        why = f"an iterator, which numpy reads as one value; give list({name})"
    elif isinstance(value, set | frozenset):
        why = "unordered; give a list in the rows' order"
    elif isinstance(value, Mapping):
        why = f"give pandas.{table}({name}) (its keys as row labels) or a list in the rows' order"
    else:
        why = give if value is None else f"one value ({shown(value, 40)}); {give}"
    raise ValueError(f"{name} is {what}: {why}.")


def check_unique_columns(frame: pd.DataFrame, name: str) -> None:
    """Refuse repeated column names: ``frame[c]`` is then a table, not a column, and the
    repeated columns were called "non-numeric" whatever they held."""
    dupes = frame.columns[frame.columns.duplicated()]
    if len(dupes):
        raise ValueError(f"{name} has duplicate column names: "
                         f"{names(dupes.unique()[:5])}; rename them so each "
                         "column has its own name.")


def check_squarable(values: np.ndarray, what: str, n_terms: int | None = None,
                    power: int = 2) -> None:
    """Refuse regression targets too large to square and sum: the largest error of a
    prediction is twice the largest ``|y|``, and its square summed over ``n_terms`` rows
    (default: one per value; neg_mse, the k-NN values) must not overflow, or the values
    are NaN, silently. ``power`` 4: the squares of values that are squares themselves
    (the k-NN values' spread over queries) must not either."""
    largest = float(np.abs(values).max(initial=0.0))
    n = len(values) if n_terms is None else n_terms
    if largest > (np.finfo(float).max / max(n, 1)) ** (1 / power) / 2:
        raise ValueError(f"{what} has values too large to square (up to {largest:.3g}): "
                         "rescale it, e.g. to other units or a logarithm.")


def column_spread(values: np.ndarray, names: Sequence[Any],
                  fix: str = "rescale it, e.g. to other units or a logarithm"
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Each column's mean and standard deviation, refusing a column for which they
    overflow (values near 1e154 and up, whose squares pass float64's range: the squared
    distances, the gradients and the standardisation of every model would be infinite or
    NaN). ``names``: how each column is called in the message ("column 'a'", "X's column
    0"); ``fix``: what to do with it."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean = values.mean(axis=0)
        std = values.std(axis=0)
    for j, (label, m, sd) in enumerate(zip(names, mean, std, strict=True)):
        if not (np.isfinite(m) and np.isfinite(sd)):
            largest = float(np.nanmax(np.abs(values[:, j])))
            raise ValueError(f"{label} has values too large to standardise (up to "
                             f"{largest:.3g}): {fix}.")
    return mean, std


#: features no larger than this cannot overflow a column's mean or spread (squares 1e200)
SPREAD_SAFE = 1e100


#: the largest value a float32 holds: models that compute in it (scikit-learn's trees and
#: forests) fail on features past it ("a value too large for dtype('float32')")
FLOAT32_MAX = float(np.finfo(np.float32).max)


def float32_fix(first_error: str | None, *arrays: np.ndarray | None) -> str | None:
    """The fix when every fit failed because the features pass float32's range (a tree on
    1e39), which said "fix the estimator" though the data are the problem; None otherwise
    (the features fit, or the error is another). Asked only on the error path."""
    if not first_error or "float32" not in first_error:
        return None
    largest = max((float(np.abs(a).max(initial=0.0)) for a in arrays
                   if isinstance(a, np.ndarray) and a.dtype.kind in "iuf"), default=0.0)
    if largest <= FLOAT32_MAX:
        return None
    return (f"the features hold values up to {largest:.3g}, past the float32 range "
            f"(about {FLOAT32_MAX:.3g}) this estimator computes in, so the problem is the "
            "data: rescale those columns (e.g. to other units or a logarithm) or "
            "standardise them")


#: whole numbers beyond this one are not all floating point numbers (2**53 + 1 is not)
EXACT_FLOATS = 2**53


def check_exact_as_floats(column: pd.Series, floats: pd.Series, what: str) -> None:
    """Refuse whole numbers (``column``) that floating point cannot tell apart (``floats``,
    the same as floats): ``2**63 + 1`` and ``2**63 + 2`` are one float, so a column of
    such ids or counts was constant (a target "constant (9.22337e+18)": "give a target that
    varies", which it did), or fewer values than it held, silently."""
    if not (pd.api.types.is_integer_dtype(column.dtype) or column.dtype == object):
        return
    values = column.dropna()
    if not len(values) or max(abs(int(values.max())), abs(int(values.min()))) <= EXACT_FLOATS:
        return
    n_whole, n_float = values.nunique(), floats.dropna().nunique()
    if n_float < n_whole:
        raise ValueError(
            f"{what} holds whole numbers too large for floating point to tell apart (up to "
            f"{max(values, key=abs)}; its {n_whole:,} different values are {n_float:,} as "
            "floats): subtract an offset (e.g. the column's smallest value) or rescale it; if "
            "it is a code, write it as text (e.g. with a letter before it).")


def one_feature(X: Any, name: str) -> str:
    """The fix for a 1-D ``X`` (named ``name``): a pandas Series has no ``reshape``."""
    single = f"{name}.to_frame()" if isinstance(X, pd.Series) else f"{name}.reshape(-1, 1)"
    return f"use {single} for a single feature"


def as_features(X: Any, name: str) -> np.ndarray:
    """``X`` as a finite numeric 2-D float array, or a ``ValueError`` that says why not."""
    check_not_estimator(X, name)
    check_not_text(X, name)
    check_unmasked(X, name, impute="impute them (e.g. sklearn.impute.SimpleImputer)")
    if sp.issparse(X):  # np.asarray makes it a 0-d object array: "non-numeric" would mislead
        raise ValueError(f"{name} is a sparse matrix: pass {name}.toarray() (the rows are "
                         "valued as dense arrays).")
    if isinstance(X, pd.DataFrame):
        check_unique_columns(X, name)
        bad = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
        if bad:
            raise ValueError(
                f"{name} has non-numeric columns {bad[:5]}: encode them first "
                "(e.g. sklearn.preprocessing.OneHotEncoder or pandas.get_dummies)."
            )
        # to_numpy(dtype=float) keeps their real parts, with only numpy's ComplexWarning
        complex_ = [c for c in X.columns if pd.api.types.is_complex_dtype(X[c])]
        if complex_:
            raise ValueError(f"{name} has complex-valued columns {complex_[:5]}: split each "
                             "into a real and an imaginary column (np.real, np.imag).")
        X = X.to_numpy(dtype=float)
    try:
        arr = np.asarray(X)
    except ValueError:  # numpy's "setting an array element with a sequence ... inhomogeneous"
        raise ValueError(f"{name} must be 2-D (rows x features) with the same number of "
                         "features in every row; its rows differ in length.") from None
    check_not_records(arr, name)
    check_not_single(arr, X, name, "rows x features", "DataFrame")
    if arr.dtype == object or arr.dtype.kind in "US":
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name} must be numeric; it holds non-numeric values. Encode categorical "
                "columns first (e.g. sklearn.preprocessing.OneHotEncoder)."
            ) from None
    elif arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}.")
    if arr.ndim == 1:
        raise ValueError(f"{name} must be 2-D (rows x features), got a 1-D array; "
                         f"{one_feature(X, name)}.")
    if arr.ndim < 2:
        raise ValueError(f"{name} must be 2-D (rows x features), got {arr.ndim}-D.")
    if 0 in arr.shape[1:]:  # every row alike: nothing to learn from or measure distances on
        raise ValueError(f"{name} has no feature columns (shape {arr.shape}): each row needs "
                         "at least one feature.")
    if arr.dtype.kind in "iu" and arr.size:  # int64 ids or counts near 2**63: one float
        flat = arr.reshape(len(arr), -1)
        for j in np.flatnonzero((flat.max(axis=0) > EXACT_FLOATS)
                                | (flat.min(axis=0) < -EXACT_FLOATS)):
            check_exact_as_floats(pd.Series(flat[:, j]), pd.Series(flat[:, j].astype(float)),
                                  f"{name}'s column {j}")
    arr = arr.astype(float, copy=False) if arr.dtype.kind != "f" else arr
    if not np.isfinite(arr).all():
        rows, cols = np.nonzero(~np.isfinite(arr.reshape(len(arr), -1)))
        raise ValueError(
            f"{name} contains NaN or infinite values (first at row {rows[0]}, column {cols[0]}); "
            "impute or drop them first (e.g. sklearn.impute.SimpleImputer)."
        )
    return arr


def as_target(y: Any, name: str, n_rows: int, x_name: str) -> np.ndarray:
    """``y`` as a 1-D array with ``n_rows`` entries and no NaN."""
    check_not_estimator(y, name)
    check_unmasked(y, name, impute=None)
    try:
        arr = np.asarray(y.to_numpy() if isinstance(y, pd.Series | pd.DataFrame) else y)
    except ValueError:  # numpy's "setting an array element with a sequence ... inhomogeneous"
        raise ValueError(f"{name} must be 1-D with one target per row; its entries are "
                         "sequences of different lengths.") from None
    check_not_single(arr, y, name, "one target per row", "Series")
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D with one target per row, got shape {arr.shape}.")
    odd = next((v for v in arr if not isinstance(v, Hashable)), None) \
        if arr.dtype == object else None
    if odd is not None:  # the classes are counted by hashing: "unhashable type: 'list'"
        raise ValueError(f"{name} holds a label of type {type(odd).__name__} ({shown(odd)}): "
                         "a label must be one number or text.")
    if len(arr) != n_rows:
        raise ValueError(
            f"{x_name} has {n_rows} rows but {name} has {len(arr)}: they must have the same length."
        )
    if arr.dtype == object and pd.isna(arr).any():
        raise ValueError(f"{name} contains missing values; drop those rows first.")
    # bytes as given: check_label_kinds names them beside text labels (b"0" != "0")
    arr = plain_labels(arr, name, keep_bytes=True)
    if arr.dtype.kind == "c":  # scikit-learn's "Complex data not supported" on every fit
        raise ValueError(f"{name} holds complex numbers: a target must be real numbers or "
                         f"labels; give its real part (np.real({name})) or its magnitude "
                         f"(np.abs({name})).")
    if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values; drop those rows first.")
    return arr


def dates_of(values: np.ndarray) -> pd.Series | None:
    """Labels that are all Python dates or datetimes (a Parquet date32 column reads as
    ``datetime.date`` cells) as pandas' datetime64, or None for any other labels: as
    objects they were refused ("a label of type date") where the same dates as datetime64
    are classes, one per distinct date or time."""
    if values.dtype != object or not len(values) or not all(
            isinstance(v, datetime.date) for v in values):
        return None
    try:
        return pd.Series(pd.to_datetime(pd.Series(values, dtype=object)))
    except (ValueError, TypeError, OverflowError):  # mixed time zones: refused as objects
        return None


def plain_labels(values: np.ndarray, what: str, *, keep_bytes: bool = False) -> np.ndarray:
    """Targets held as Python objects (``values``, none missing) as scikit-learn takes
    them: text as it is, numbers (Python ints, Decimals, a table's object column, a
    nullable column's values) as a numeric array. scikit-learn calls an object array whose
    first value is no text "unknown": every classifier's fit failed, and the error said
    to fix the model. Other values (``pandas.cut``'s intervals, periods) are refused for
    that reason, and bytes (read as numbers where they are digits) unless ``keep_bytes``.
    ``what``: the targets in the message ("y", "target column 'y'")."""
    if values.dtype != object:
        return values
    dates = dates_of(values)
    if dates is not None:  # as numpy holds them: in UTC where they have a time zone
        return (dates.dt.tz_convert(None) if dates.dt.tz is not None else dates).to_numpy()
    kinds = {isinstance(v, str) for v in values}
    if len(kinds) > 1:
        # np.unique (the classes) sorts them: "'<' not supported between 'str' and 'int'"
        raise ValueError(f"{what} mixes text and numbers as labels: give every label the "
                         "same type (e.g. all text).")
    if kinds != {False}:
        return values
    if keep_bytes and all(isinstance(v, bytes) for v in values):
        return values
    numbers = pd.to_numeric(pd.Series(values), errors="coerce")
    if numbers.isna().any():
        odd = values[int(np.flatnonzero(numbers.isna().to_numpy())[0])]
        bins = (" (pandas.cut(..., labels=False) numbers its bins)"
                if isinstance(odd, pd.Interval) else "")
        raise ValueError(f"{what} holds a label of type {type(odd).__name__} "
                         f"({shown(odd, 60)}): give labels as text or numbers{bins}.")
    if numbers.dtype.kind == "c":  # Python complex numbers: refused by the caller, by name
        # (their max() in the check below failed inside: "'>=' not supported")
        return numbers.to_numpy()
    # Python ints past 2**53 as floats: 2**70 and 2**70 + 1 would be one class, silently
    check_exact_as_floats(pd.Series(values), numbers, what)
    return numbers.to_numpy()


def check_same_index(X: Any, y: Any, x_name: str, y_name: str) -> None:
    """Refuse a pandas ``X`` and ``y`` whose row labels differ: the rows are paired by
    position, so a shuffled or filtered ``y`` would silently take other rows' targets."""
    if not isinstance(X, pd.DataFrame) or not isinstance(y, pd.Series | pd.DataFrame):
        return
    if X.index.equals(y.index):
        return
    fix = (f"align them by label with {y_name} = {y_name}.loc[{x_name}.index], or pass "
           f"{y_name}.to_numpy() to pair the rows by position")
    missing = X.index.difference(y.index)
    if len(X.index) == len(y.index) and not len(missing):
        raise ValueError(f"{x_name} and {y_name} have the same row labels in a different "
                         f"order (rows are paired by position): {fix}.")
    shown = ", ".join(repr(v) for v in missing[:3].tolist()) if len(missing) else "none"
    raise ValueError(f"{x_name} and {y_name} have different row labels ({len(missing)} of "
                     f"{x_name}'s are not in {y_name}'s, e.g. {shown}; rows are paired by "
                     f"position): {fix}.")


def repeated_label(labels: Any) -> tuple[Any, int] | None:
    """The first label that ``labels`` (row labels) repeats and how many repeats there are,
    or None when each is its own."""
    index = pd.Index(labels)
    repeats = index.duplicated()
    if not repeats.any():
        return None
    return plain_value(index[repeats][0]), int(repeats.sum())


def check_unique_labels(X: Any, name: str) -> None:
    """Refuse a table ``X`` whose row labels repeat: the values are indexed by them, so two
    rows of one label could not be told apart (``X.drop(rows.index[rows["removed"]])``
    drops both), and a result saved with them is refused when loaded."""
    found = repeated_label(X.index) if isinstance(X, pd.DataFrame) else None
    if found is not None:
        raise ValueError(f"{name}'s row labels repeat (e.g. {found[0]!r}, {found[1]} "
                         "repeats): the table names rows by them, so those rows could not be "
                         f"told apart; give each row its own label ({name} = "
                         f"{name}.reset_index(drop=True), and the same for y, numbers them "
                         "0, 1, ...).")


def check_target_not_a_feature(X: Any, y: Any, x_name: str, y_name: str) -> None:
    """Refuse a table ``X`` that still holds the target column (``y`` named and equal to
    one of its columns): every model then reads the answer from it, so every row seemed
    equally good and the values said nothing, silently."""
    if not isinstance(X, pd.DataFrame):
        return
    if isinstance(y, pd.DataFrame) and y.shape[1] == 1:
        y = y.iloc[:, 0]
    if not isinstance(y, pd.Series) or y.name is None or not X.columns.is_unique:
        return
    try:
        found = y.name in X.columns
    except TypeError:  # an unhashable name
        return
    if found and len(X) == len(y) and np.array_equal(X[y.name].to_numpy(), y.to_numpy()):
        raise ValueError(f"{x_name} holds the target column {y.name!r} ({y_name} is that "
                         f"column): every model would read the answer from it; drop it from "
                         f"the features, e.g. {x_name}.drop(columns={y.name!r}).")


def _equal(a: Any, b: Any) -> bool:
    """``a == b`` for two single values, False where they cannot be compared (pd.NA)."""
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _same_cells(column: pd.Series, target: pd.Series) -> bool:
    """Whether ``column`` holds ``target``'s values, row by row (numbers compared as
    numbers; False where a cell is missing or no single value, such as a list)."""
    try:
        if pd.api.types.is_numeric_dtype(column.dtype) and \
                pd.api.types.is_numeric_dtype(target.dtype):
            return bool(np.array_equal(column.to_numpy(dtype=float, na_value=np.nan),
                                       target.to_numpy(dtype=float, na_value=np.nan)))
        if pd.api.types.is_numeric_dtype(column.dtype) or column.hasnans:
            return False
        return all(pd.api.types.is_scalar(a) and _equal(a, b)
                   for a, b in zip(column.tolist(), target.tolist(), strict=True))
    except (TypeError, ValueError):
        return False


def warn_target_copies(X: pd.DataFrame, y: pd.Series) -> None:
    """Warn of feature columns equal to the target ``y`` in every row under another name (a
    copy, or the target encoded again): every model reads the answer from it, so every row
    seemed about as good and the values said little, with no word. A warning, not an
    error: a real feature may predict the target exactly."""
    if len(y) < 2:
        return
    # the first rows of every column at once (a Series per column took seconds on 100,000
    # columns), then in full only the columns that match there
    numeric = np.array([pd.api.types.is_numeric_dtype(d) for d in X.dtypes], dtype=bool)
    top, labels = X.iloc[:8].to_numpy(dtype=object), y.iloc[:8].tolist()
    maybe = [int(i) for i in np.flatnonzero(~numeric) if all(
        pd.api.types.is_scalar(a) and _equal(a, b)
        for a, b in zip(top[:, i], labels, strict=True))]
    if pd.api.types.is_numeric_dtype(y.dtype) and numeric.any():
        positions = np.flatnonzero(numeric)
        head = X.iloc[:8, positions].to_numpy(dtype=float, na_value=np.nan)
        first = y.iloc[:8].to_numpy(dtype=float)[:, None]
        maybe += [int(i) for i in positions[(head == first).all(axis=0)]]
    copies = [str(X.columns[i]) for i in sorted(maybe) if _same_cells(X.iloc[:, i], y)]
    if copies:
        many = len(copies) > 1
        warnings.warn(f"feature column{'s' if many else ''} {listed(copies)} "
                      f"equal{'' if many else 's'} the target {y.name!r} in every row: every "
                      "model reads the answer from it, so the rows' values say little; drop "
                      f"{'them' if many else 'it'} from the features unless "
                      f"{'they are measurements' if many else 'it is a measurement'} known "
                      "before the target.", UserWarning, stacklevel=user_stacklevel())


def check_columns_in_order(X: Any, other: Any, x_name: str, other_name: str) -> None:
    """Refuse two tables whose column names differ: the features are paired by position,
    so a reordered or renamed ``other`` would silently score models on other features."""
    if not isinstance(X, pd.DataFrame) or not isinstance(other, pd.DataFrame):
        return
    if X.columns.equals(other.columns):
        return
    if X.columns.size == other.columns.size and set(X.columns) == set(other.columns):
        raise ValueError(f"{other_name} has {x_name}'s columns in a different order (features "
                         f"are paired by position): pass {other_name}[{x_name}.columns].")
    if isinstance(other.columns, pd.RangeIndex) and X.columns.size == other.columns.size:
        raise ValueError(f"{other_name}'s columns are unnamed (0, 1, ...) but {x_name}'s "
                         f"are named: name them, e.g. {other_name} = {other_name}.set_axis("
                         f"{x_name}.columns, axis=1) if they are in {x_name}'s order.")
    raise ValueError(f"{other_name}'s columns do not match {x_name}'s: it "
                     f"{column_difference(X.columns, other.columns) or 'repeats some'}; give "
                     f"it the same columns (e.g. {other_name}[{x_name}.columns]).")


def column_difference(columns: pd.Index, other: pd.Index) -> str | None:
    """How ``other`` differs from ``columns`` by name ("lacks the columns 'a', 'b' and has
    the extra column 'c'", five names of each at most), or None when they hold the same
    names. Quoted: a column named "extra" read "has extra extra", one named "and" worse."""
    missing = [c for c in columns if c not in other]
    extra = [c for c in other if c not in columns]

    def columns_(found: list[Any]) -> str:
        return f"column{'s' if len(found) > 1 else ''} {names(found, 5, quote=True)}"

    parts = ([f"lacks the {columns_(missing)}"] if missing else []) + (
        [f"has the extra {columns_(extra)}"] if extra else [])
    return " and ".join(parts) or None


def as_pair(X: Any, y: Any, x_name: str, y_name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features and targets of one set of rows, checked to be the same rows."""
    Xa = as_features(X, x_name)
    if len(Xa):  # no rows: the caller says so; find_harmful's encoder refuses these too
        flat = Xa.reshape(len(Xa), -1)
        # only columns that could overflow are measured: the spread of a whole image set
        # would hold a second copy of it in memory
        large = np.flatnonzero(np.maximum(flat.max(axis=0), -flat.min(axis=0)) > SPREAD_SAFE)
        if len(large):
            column_spread(flat[:, large], [f"{x_name}'s column {j}" for j in large],
                          "rescale that column, e.g. to other units or a logarithm")
    check_not_text(y, y_name, X, x_name)
    ya = as_target(y, y_name, len(Xa), x_name)
    check_same_index(X, y, x_name, y_name)
    check_target_not_a_feature(X, y, x_name, y_name)
    return Xa, ya


def check_data(
    X: Any, y: Any, X_val: Any, y_val: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate a training and a validation set; return numpy arrays."""
    if X_val is None or y_val is None:  # numpy's "X_val must be 2-D ..., got 0-D"
        raise ValueError(f"{'X_val' if X_val is None else 'y_val'} is None: the rows are "
                         "valued by how models trained with them score on validation rows; "
                         "give X_val and y_val (rows held out from the training rows, e.g. "
                         "by sklearn.model_selection.train_test_split).")
    Xa, ya = as_pair(X, y, "X", "y")
    if len(Xa) == 0:
        raise ValueError("X is empty: the training set needs at least one row.")
    check_unique_labels(X, "X")  # the held-out rows' labels are not kept
    Xv, yv = as_pair(X_val, y_val, "X_val", "y_val")
    check_columns_in_order(X, X_val, "X", "X_val")
    if len(Xv) == 0:
        raise ValueError(
            "X_val is empty: the validation set needs at least one row to score models on."
        )
    if Xa.shape[1:] != Xv.shape[1:]:
        raise ValueError(
            f"X has {Xa.shape[1:]} features per row but X_val has {Xv.shape[1:]}: "
            "they must match."
        )
    check_label_kinds(ya, yv)
    return Xa, ya, Xv, yv


def printable(text: Any, keep: str = "") -> str:
    """``str(text)`` with each character a terminal or a Markdown file would not show as
    itself (control characters: an ANSI escape, a line break, a NUL; a bidirectional
    override) written as Python writes it in a string's repr (``\\x1b``), except those in
    ``keep``. Names and ids come from the user's files: a column named "\\x1b[2J" printed
    in a message cleared the terminal, and one holding a line break split a report's line."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else repr(ch)[1:-1] for ch in text)


def code_span(text: Any) -> str:
    """``text`` as Markdown inline code, shown as it is: :func:`printable`, between runs of
    more backticks than it holds (a name with a backtick ended the span early and the rest
    was read as Markdown)."""
    text = printable(text)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


#: the characters of a name a message shows (a 100,000-character column name was an
#: "Error:" line of 100 kB)
NAME_CHARS = 60


def names(columns: Any, limit: int | None = None, quote: bool = False) -> str:
    """Column names for a message, comma-separated, each :func:`printable` and cut to
    ``NAME_CHARS`` characters; the first ``limit`` of them and "..." where there are more.
    ``quote``: each between single quotes, where a bare name could read as a word of the
    sentence."""
    columns = list(columns)
    texts = [printable(c) for c in (columns if limit is None else columns[:limit])]
    mark = "'" if quote else ""
    return ", ".join(f"{mark}{c if len(c) <= NAME_CHARS else c[:NAME_CHARS - 3] + '...'}{mark}"
                     for c in texts) + (", ..." if limit is not None and len(columns) > limit
                                        else "")


def as_texts(texts: Any, name: str = "texts") -> list[str]:
    """``texts`` as a list of ``str``, or a ``ValueError`` naming the first that is not one.

    One string is refused (it was read as a list of its characters), and so is an entry
    that is not a string: ``str()`` made None, a missing NaN and bytes into the texts
    "None", "nan" and "b'...'" and embedded those. A string that UTF-8 cannot hold (a lone
    surrogate, from bytes decoded with ``errors="surrogateescape"``) failed inside the
    hashing or the tokenizer.
    """
    if isinstance(texts, str | bytes):
        raise ValueError(f"{name} is a single text ({shown(texts, 40)}), not a list of texts: "
                         "pass [text] for one.")
    try:
        items = list(texts)
    except TypeError:
        raise ValueError(f"{name} must be a list (or array, or Series) of texts, got "
                         f"{shown(texts)}.") from None
    for i, t in enumerate(items):
        if not isinstance(t, str):
            fix = ("decode it first (t.decode('utf-8', errors='replace'))"
                   if isinstance(t, bytes | bytearray) else "fill in or drop the missing "
                   "texts first (e.g. series.fillna(''))" if t is None or (
                       # pandas.NA: a missing text of a "string" Series
                       pd.api.types.is_scalar(t) and pd.isna(t)) else "convert it to text "
                   "first")
            raise ValueError(f"{name}[{i}] is {shown(t, 40)} ({type(t).__name__}), not a "
                             f"text: {fix}.")
        try:
            t.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ValueError(f"{name}[{i}] holds a character that is not valid Unicode (at "
                             f"position {err.start}, a lone surrogate from bytes decoded with "
                             "errors='surrogateescape'?): decode the bytes with "
                             "errors='replace' instead.") from None
    return items


def plain_value(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (its repr is what a user wrote)."""
    return value.item() if isinstance(value, np.generic) else value


#: scikit-learn takes whole-number float labels as classes only where they fit an int64
LARGEST_FLOAT_CLASS = 2.0**63


def check_class_labels(y: np.ndarray, what: str) -> None:
    """Refuse float class labels past :data:`LARGEST_FLOAT_CLASS` (1e20, a 2**70 id read
    as a number): scikit-learn's classifiers read them as continuous, so every fit failed
    ("Unknown label type: continuous") and the error said to fix the model."""
    if y.dtype.kind != "f" or not len(y):
        return
    largest = float(np.abs(y).max())
    if largest >= LARGEST_FLOAT_CLASS:
        raise ValueError(f"{what} holds class labels too large for scikit-learn's "
                         f"classifiers (up to {largest:.6g}), which read labels past 2**63 "
                         "as continuous numbers: write them as text (e.g. with a letter "
                         "before them) or as smaller codes, or make it a regression.")


def check_target_varies(y: np.ndarray, classification: bool = True, name: str = "y") -> None:
    """Refuse training targets of a single class (or a constant regression target): every
    model predicts it whatever rows it keeps, so every row was worth the same and the
    values (all 0, or all 1) said nothing."""
    if classification:
        check_class_labels(y, name)
    levels = pd.unique(y)
    if len(levels) >= 2:
        return
    what = (f"holds a single class ({plain_value(levels[0])!r})" if classification else
            f"is constant ({plain_value(levels[0])!r})")
    need = ("classification needs training rows of at least two classes" if classification
            else "give a target that varies")
    raise ValueError(f"{name} {what}: every model would predict it, so every row would be "
                     f"worth the same and the values would say nothing; {need}.")


#: how the warning of held-out rows of one class begins, after "the validation"
ONE_CLASS = "rows hold a single class"


def warn_one_class(labels: np.ndarray, what: str = "validation") -> None:
    """Held-out (``what``) classification rows of a single class: their score rewards
    predicting it everywhere, so every other class's training rows seem harmful (a
    warning at the user's line: it may be what is meant)."""
    levels = pd.unique(labels)
    if len(levels) == 1:
        warnings.warn(f"the {what} {ONE_CLASS} ({plain_value(levels[0])!r}): a model that "
                      "predicts it for every row scores best on them, so the other classes' "
                      "training rows are valued as harmful and cleansing favours removing "
                      f"them; give {what} rows of every class.", UserWarning,
                      stacklevel=user_stacklevel())


#: how the warning of held-out labels of classes no training row has begins, after "the
#: validation" (or "the test")
UNSEEN_CLASSES = "labels include"


def listed(values: list[Any], limit: int = 3) -> str:
    """The first ``limit`` of ``values`` for a message, "..." where there are more."""
    return ", ".join(repr(v) for v in values[:limit]) + (", ..." if len(values) > limit else "")


def unseen_classes(train: np.ndarray, other: np.ndarray) -> tuple[list[Any], list[Any]]:
    """The held-out (``other``) classes no training row has, and every held-out class."""
    known = set(pd.unique(train).tolist())
    levels = pd.unique(other).tolist()
    return [v for v in levels if v not in known], levels


def warn_unseen_classes(train: np.ndarray, other: np.ndarray, what: str = "validation"
                        ) -> None:
    """Held-out (``what``) classification rows of classes no training row has (some, not
    all: none shared is the caller's error): no model can predict them, so they count as
    errors for every model (a warning at the user's line: the other rows still value the
    training rows)."""
    unseen, levels = unseen_classes(train, other)
    if not unseen or len(unseen) == len(levels):
        return
    shown = listed(unseen)
    n_rows = int(np.isin(other.astype(object), np.asarray(unseen, dtype=object)).sum())
    rows = f"{n_rows} row{'s' if n_rows != 1 else ''}"
    warnings.warn(f"the {what} {UNSEEN_CLASSES} {len(unseen)} class(es) no training row has "
                  f"({shown}; {rows}): no model can predict them, so those rows count as "
                  "errors for every model.", UserWarning, stacklevel=user_stacklevel())


def user_stacklevel() -> int:
    """The ``stacklevel`` of ``warnings.warn``, called by this function's caller, that
    points at the first frame outside tdshap: the user's line, from whatever depth of the
    library the warning comes."""
    level = 2
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "tdshap":
        frame, level = frame.f_back, level + 1
    return level


@contextmanager
def said_already(*starts: str) -> Iterator[None]:
    """Silence the warnings whose messages begin with one of ``starts``: the user was told
    already, and each further valuation, stage or cut of the same rows would repeat it."""
    with warnings.catch_warnings():
        for start in starts:
            warnings.filterwarnings("ignore", message=start)
        yield


def check_label_kinds(y: np.ndarray, other: np.ndarray, name: str = "y_val") -> None:
    """Refuse text labels against number labels (e.g. one file's labels read as text):
    no held-out label equals a training label, so every model scores 0, silently."""
    kinds = _label_kind(y), _label_kind(other)
    if kinds[0] != kinds[1]:
        fix = ("decode the bytes to text, e.g. [v.decode() for v in labels]"
               if "bytes" in kinds else f"e.g. {name}.astype(str), or numbers in both")
        if _DATES in kinds or _SPANS in kinds:
            fix = (f"e.g. pandas.to_datetime({name}) for dates, pandas.to_timedelta({name}) "
                   "for time spans, or text in both")
        raise ValueError(f"y holds {kinds[0]} ({_shown(y)}) but {name} holds {kinds[1]} "
                         f"({_shown(other)}): no {name} label can equal a training label. "
                         f"Give both the same type ({fix}).")


def _shown(a: np.ndarray) -> str:
    return ", ".join(repr(v) for v in pd.unique(a)[:3].tolist())


def check_shared_classes(y: np.ndarray, other: np.ndarray, name: str = "y_val") -> None:
    """Refuse classification labels of which no held-out one (``name``) is a training one:
    every model then scores 0 on those rows, so every value (or test score) would be 0."""
    if not np.isin(other, y).any():
        what = "validation" if name == "y_val" else "test"
        raise ValueError(f"no {name} label is a y label ({name}: {_shown(other)}; y: "
                         f"{_shown(y)}): every model would score 0 on the {what} rows "
                         f"and every {'value' if what == 'validation' else 'score'} would be "
                         f"0. Give {what} rows of the same classes, with the same label "
                         "spelling.")


def check_numeric_targets(estimator: Any, *targets: tuple[np.ndarray, str]) -> None:
    """Refuse text targets (each ``(values, name)``) for a regressor: the error was the
    metric's "could not convert string to float", with "choose another metric" for a fix."""
    for values, name in targets:
        if _label_kind(values) != "numbers":
            raise ValueError(f"{name} holds {_label_kind(values)} ({_shown(values)}) but "
                             f"{type(estimator).__name__} is a regressor, which predicts "
                             "numbers: give numeric targets, or a classifier for labels.")


#: the kinds of datetime64 and timedelta64 labels: numpy's ``isin`` of either against
#: numbers (or of one against the other) failed from deep inside ("DTypePromotionError")
_DATES, _SPANS = "dates or times", "time spans"


def _label_kind(y: np.ndarray) -> str:
    """``"text labels"``, ``"bytes"``, ``"dates or times"``, ``"time spans"`` or
    ``"numbers"`` (booleans count as numbers: True == 1). Bytes are not text: b"a" != "a",
    though numpy's ``isin`` of many labels says so."""
    if y.dtype.kind in "mM":
        return _SPANS if y.dtype.kind == "m" else _DATES
    if y.dtype.kind == "S" or (y.dtype == object and len(y) and all(
            isinstance(v, bytes) for v in y)):
        return "bytes"
    text = y.dtype.kind == "U" or (y.dtype == object and all(isinstance(v, str) for v in y))
    return "text labels" if text else "numbers"


def check_estimator(estimator: Any) -> None:
    """Refuse what scikit-learn cannot clone and tag, before it fails deep inside with an
    ``AttributeError`` (``__sklearn_tags__``): None, a class, an object with ``fit`` only,
    one that ``clone`` (which every fit uses) cannot copy."""
    from sklearn.base import clone, is_classifier

    if isinstance(estimator, type):
        raise ValueError(f"estimator must be an instance, got the class {estimator.__name__}: "
                         f"pass {estimator.__name__}() (with its parameters).")
    if estimator is None or not hasattr(estimator, "fit"):
        raise ValueError("estimator must be a scikit-learn style estimator with fit/predict, "
                         f"got {shown(estimator)}.")
    try:
        is_classifier(estimator)
    except (AttributeError, TypeError):
        raise ValueError(f"estimator {type(estimator).__name__} is not a scikit-learn estimator "
                         "(derive it from sklearn.base.BaseEstimator).") from None
    try:  # every fit is on a clone: one that cannot be made failed inside scikit-learn
        clone(estimator)
    except Exception as err:  # RuntimeError ("modifies parameter"), or get_params' own
        first = (str(err).strip().splitlines() or [""])[0]
        raise ValueError(f"estimator {type(estimator).__name__} cannot be cloned for each fit "
                         f"(sklearn.base.clone: {type(err).__name__}: {first}): its __init__ "
                         "must store each parameter as given, and get_params return them."
                         ) from None


def picks_columns_by_name(columns: Any) -> bool:
    """A ColumnTransformer's column choice that needs a DataFrame's names: names, a slice
    of names, or a callable (``make_column_selector``) that reads names or dtypes."""
    if isinstance(columns, str) or callable(columns):
        return True
    if isinstance(columns, slice):
        return isinstance(columns.start, str) or isinstance(columns.stop, str)
    return any(isinstance(c, str) for c in np.ravel(np.asarray(columns, dtype=object)))


def column_choices(estimator: Any) -> Iterator[Any]:
    """The column choice of each transformer of every ColumnTransformer in ``estimator``
    (itself, or a step or parameter of it at any depth); none for a non-estimator."""
    from sklearn.compose import ColumnTransformer

    try:
        parts = [estimator, *estimator.get_params(deep=True).values()]
    except (AttributeError, TypeError):  # not an estimator: check_estimator refuses it
        return
    for part in parts:
        if isinstance(part, ColumnTransformer):
            yield from (columns for _, _, columns in part.transformers)


def check_columns_by_position(estimator: Any) -> None:
    """Refuse a ColumnTransformer (anywhere in ``estimator``) that picks columns by name:
    the rows are valued as numeric arrays (a DataFrame's values, without its names), so
    every fit failed with scikit-learn's "only supported for dataframes", after the run
    began (KNNShapley's Pipeline: from deep inside)."""
    for columns in column_choices(estimator):
        if picks_columns_by_name(columns):
            raise ValueError(
                f"the estimator's ColumnTransformer picks columns by name "
                f"({shown(columns)}), but the rows are valued as numeric arrays without "
                "column names (X's values), so every fit would fail: pick them by "
                "position (e.g. [0, 2] for X's first and third columns), or encode the "
                "table first and give the estimator without the ColumnTransformer.")


def check_bag_rows(n: int, method: str) -> None:
    """Out-of-bag values need two rows: a row is scored by the bags that leave it out, and
    one row is in every bag (a k-NN's neighbour lists then failed inside scikit-learn)."""
    if n < 2:
        raise ValueError(f"{method} needs at least two training rows, got {n}: a row is "
                         "valued by the bags that leave it out, and one row is in every bag.")


#: scikit-learn seeds numpy's legacy RandomState, which takes seeds below 2**32 only
MAX_SEED = 2**32 - 1


def check_seed_span(first: int, count: int, first_name: str = "--seed",
                    count_name: str = "--trials") -> None:
    """Refuse ``count`` consecutive seeds from ``first`` (trial t takes ``first + t``) that
    pass :data:`MAX_SEED`: checked before any work, else the early trials ran and a late one
    failed deep inside numpy or scikit-learn. The names are the caller's (e.g. its flags)."""
    if first + count - 1 > MAX_SEED:
        raise ValueError(f"{first_name} {first} with {count_name} {count} goes past the "
                         f"largest seed, {MAX_SEED}: give {first_name} at most "
                         f"{MAX_SEED - count + 1}.")


def check_random_state(random_state: Any, *, generator: bool = True,
                       optional: bool = True, name: str = "random_state") -> None:
    """The library's one seed policy: a seed is an int >= 0, as numpy and scikit-learn
    take it. A float, even a whole one such as 1.0, is refused by name here rather than
    converted: numpy and scikit-learn refuse it from deep inside, and a converted copy
    would disagree with the ``random_state`` an estimator reports (``get_params``).

    ``generator``: a numpy Generator is taken too (the caller draws from it); without it
    the seed itself reaches scikit-learn, which needs it below 2**32. ``optional``: None
    (fresh entropy) is taken. ``name``: the parameter's, for the message.
    """
    is_int = isinstance(random_state, int | np.integer) and not isinstance(random_state, bool)
    if is_int and random_state >= 0 and (generator or random_state <= MAX_SEED):
        return
    if (random_state is None and optional) or (generator and isinstance(
            random_state, np.random.Generator | np.random.BitGenerator | np.random.SeedSequence)):
        return
    kinds = ("None, a whole number >= 0 (an int) or a numpy Generator" if generator else
             "a whole number >= 0 below 2**32 (an int)" + (" or None" if optional else ""))
    # a whole float's int, named as the fix only where it would be taken (not -2, nor 1e30
    # where scikit-learn's seed must stay below 2**32)
    whole_float = isinstance(random_state, float | np.floating) and float(
        random_state).is_integer() and 0 <= random_state <= (math.inf if generator else
                                                             MAX_SEED)
    hint = (f"; pass {int(random_state)}: numpy and scikit-learn take a seed as an int, "
            "not a float" if whole_float else "")
    raise ValueError(f"{name}={random_state!r} must be {kinds}{hint}.")


def check_flags(**flags: Any) -> None:
    """Refuse a switch that is not True/False: ``impute="no"`` or ``progress="yes"`` would be
    truthy and switch it on, ``progress=print`` too."""
    for name, value in flags.items():
        if not isinstance(value, bool | np.bool_):
            raise TypeError(f"{name}={shown(value)} must be True or False.")


def check_number(value: Any, name: str, *, low: float | None = None,
                 high: float | None = None, integer: bool = False, hint: str = "") -> None:
    """Raise ``ValueError`` unless ``value`` is a (whole) number ``>= low`` and ``<= high``."""
    ok = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
    if ok and integer:
        ok = isinstance(value, int | np.integer) or float(value).is_integer()
    if ok:  # a Python int may exceed what numpy's isfinite takes; it is finite anyway
        ok = (isinstance(value, int) or bool(np.isfinite(value))) and (
            low is None or value >= low) and (high is None or value <= high)
    if not ok:
        kind = "a whole number" if integer else "a number"
        bound = (f" from {low} to {high}" if low is not None and high is not None
                 else f" <= {high}" if high is not None
                 else f" >= {low}" if low is not None else "")
        raise ValueError(f"{name}={value!r} must be {kind}{bound}.{(' ' + hint) if hint else ''}")


def check_count(value: Any, name: str, *, low: int = 0) -> None:
    """Raise ``ValueError`` unless ``value`` is an int ``>= low``: a count used as it is
    (``range(epochs)``), where a whole float such as 2.0 fails later and a bool, which
    Python counts as an int, would be taken as 1 or 0 (``epochs=True`` trained one epoch)."""
    check_number(value, name, low=low, integer=True)
    if not isinstance(value, int | np.integer):
        raise ValueError(f"{name}={value!r} must be a whole number >= {low} given as an int: "
                         f"pass {int(value)}.")


class ParameterError(ValueError):
    """A ``ValueError`` about named parameters, worded with their Python names.

    ``params`` lists the parameter names the message refers to, so that an
    application (the ``tdshap`` command) can show its own names for them (its
    flags) without the library knowing them.
    """

    def __init__(self, message: str, *params: str) -> None:
        super().__init__(message)
        self.params = params
