"""Tables in, numbers out: reading the user's file, the task, the feature encoding.

Reading
    ``.parquet``/``.pq`` files need the optional ``parquet`` extra (pyarrow);
    ``.tsv`` is tab-separated; anything else is read as comma-separated text.

Task (when not given)
    A target that is not numeric (text, booleans, categories) is
    classification. A numeric target whose values are all whole numbers and
    that has at most ``MAX_CLASSES`` distinct values is classification too
    (class labels 0/1/2...); everything else is regression.

Feature encoding (:class:`TableEncoder`, fitted on the training rows only)
    * numeric and boolean columns are standardised with the training rows'
      mean and standard deviation, once, before valuation: distance- and
      penalty-based models need it, trees are unaffected, and the model stays
      a bare estimator (so :mod:`tdshap.utility.fast` apply to Ridge and k-NN);
    * text/categorical columns are one-hot encoded. A column with at most
      ``MAX_LEVELS`` levels gets one 0/1 column per level; a column with more
      keeps one column for each of its ``MAX_LEVELS - 1`` most frequent levels
      and one ``infrequent`` column shared by all the other levels. A level
      never seen in the training rows is all zeros (or ``infrequent`` when that
      column exists);
    * a text column whose non-missing cells are numbers but for a few (at
      least ``MOSTLY_NUMERIC_PERCENT`` % numbers, e.g. ``3.2, 4.1, 3.9x, 5.0``) is
      refused, naming the cells (every row's, the held-out ones too): a typo would
      otherwise turn a measurement into levels. So is a column of numbers written with
      thousands separators (``3,456``; ``3 456``, ``3'456``, ``3_456``), a decimal comma
      (``3,5``), a typographic minus
      (``−2``, U+2212), non-breaking spaces, a currency or percent sign (``$151.00``,
      ``12%``) or hexadecimal among decimal numbers (``0x1A``: hexadecimal throughout is
      codes, taken as text); one of at least ``PARTLY_NUMERIC_PERCENT`` %
      numbers but fewer than ``MOSTLY_NUMERIC_PERCENT`` % is levels, with a warning.
      Missing-value markers the reader knows (empty, ``NA``, ``n/a``, ``null``...) are
      missing values, not typos; a ``pandas`` category column is taken as text as it is;
    * a text column with a different value in each of more than ``MAX_LEVELS``
      training rows (an id, a name) is not used, with a warning: no row shares its
      level, so it would only set apart the few rows whose level got a column of
      its own (refused where it is the only feature column);
    * date/time and other column types are refused, and so are text columns holding
      dates, times or bytes (a Parquet date32, time or binary column), and text columns
      of dates or times written as text (``2024-01-05 13:00``; at least
      ``MOSTLY_NUMERIC_PERCENT`` % of the cells).

Missing values
    Refused, naming the column, unless ``impute=True`` (``--impute``): then
    numeric columns take the median of the training rows and text columns
    their most frequent level. Rows whose target is missing are always refused.
"""

from __future__ import annotations

import csv
import datetime
import io
import numbers
import re
import warnings
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.impute import SimpleImputer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OneHotEncoder

from tdshap._validation import (
    EXACT_FLOATS,
    SPREAD_SAFE,
    ParameterError,
    check_class_labels,
    check_exact_as_floats,
    check_number,
    check_squarable,
    code_span,
    column_difference,
    column_spread,
    dates_of,
    names,
    plain_labels,
    plain_value,
)

MAX_LEVELS = 20
#: why a text column may hold missing values its file seems not to have
_MISSING_MARKERS = (" (a file's cells NA, N/A, null, None, NaN and empty ones are read as "
                    "missing: a class or level of such a name needs another, e.g. 'N.A.')")
#: why a file's cell may be infinite though it holds no "inf": "1e400" is read as inf
_BEYOND_FLOATS = " (a number beyond floating point's range, such as 1e400, is read as inf)"
#: a regression target whose values differ by less is refused (see check_target)
SMALLEST_TARGET_SPREAD = 1e-60
MAX_CLASSES = 20
MOSTLY_NUMERIC_PERCENT = 90
PARQUET_SUFFIXES = (".parquet", ".pq")


# -- reading ------------------------------------------------------------------
def is_parquet(path: Path) -> bool:
    return path.suffix.lower() in PARQUET_SUFFIXES


def cleaned_name(train: Path) -> str:
    """The cleaned file's name for input ``train``: its rows are written in its format
    (:func:`write_rows_like`), so a .tsv file's are tab-separated, and named .csv they
    were read back as one column ("looks tab-separated ... give it the suffix .tsv")."""
    if is_parquet(train):
        return "cleaned.parquet"
    return "cleaned.tsv" if _separator(train) == "\t" else "cleaned.csv"


#: the first pyarrow that does not run code a Parquet file holds: 0.14 to 14.0.0 unpickle
#: a column's "PyExtensionType" from the file's schema (CVE-2023-47248)
SAFE_PYARROW = (14, 0, 1)


def _require_pyarrow() -> None:
    try:
        import pyarrow
    except ImportError:
        raise ValueError(
            "reading Parquet needs pyarrow: pip install 'tdshap[parquet]' (or save as CSV)."
        ) from None
    found = tuple(int(part) for part in re.findall(r"\d+", pyarrow.__version__)[:3])
    if found < SAFE_PYARROW:
        raise ValueError(
            f"reading Parquet with pyarrow {pyarrow.__version__} would run code that a file "
            "can hold (CVE-2023-47248): pip install -U 'pyarrow>="
            f"{'.'.join(map(str, SAFE_PYARROW))}' (or save the file as CSV).")


def _header_names(path: Path) -> list[str]:
    """The column names exactly as the file has them (pandas renames duplicates)."""
    if is_parquet(path):
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    # utf-8-sig: a spreadsheet's "CSV UTF-8" begins with a byte order mark, which pandas
    # drops; kept, the first name ("\ufeffid") matched no --id-column, read as numbers
    with open(path, newline="", encoding="utf-8-sig") as fh:
        first = next(csv.reader(fh, delimiter=_separator(path)), [])
    return [name.strip() for name in first]


def _separator(path: Path) -> str:
    return "\t" if path.suffix.lower() == ".tsv" else ","


def read_table(path: str | Path, what: str = "file", text: tuple[str, ...] = ()
               ) -> pd.DataFrame:
    """Read a CSV/TSV/Parquet file; a ``ValueError`` with one line for every failure.

    ``text``: columns of a CSV/TSV file read as the file's text, not as numbers (row ids:
    "00007" is not 7).
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{what} {path} does not exist.")
    if not path.is_file():
        raise ValueError(f"{what} {path} is not a file.")
    if path.stat().st_size == 0:
        raise ValueError(f"{what} {path} is empty.")
    if is_parquet(path):
        _require_pyarrow()
    elif _is_json(path):
        raise ValueError(f"cannot read {what} {path} as CSV: it is JSON: save it as CSV or "
                         "Parquet, e.g. pandas.read_json(path).to_csv('train.csv', index=False) "
                         "(read_json(path, lines=True) for JSON Lines).")
    else:
        _check_text_head(path, what)
    try:
        header = _header_names(path)
        # before the frame: pyarrow cannot read a Parquet file with two columns of one name
        # ("ArrowInvalid: Multiple matches for FieldRef.Name(a)")
        dupes = sorted(name for name, count in Counter(header).items() if count > 1)
        if dupes:
            frame = pd.DataFrame()
        elif is_parquet(path):
            frame = pd.read_parquet(path)
        else:
            # by position: pandas matches dtype's names before the names are stripped
            as_text = {i: str for i, name in enumerate(header) if name in text}
            # compression=None: the text as it is, whatever the name ends in; pandas guessed
            # from it, and a CSV named t.csv.gz, .zip or .zst failed with "Not a gzipped file
            # (b'a,')" or "Import zstandard failed" (a compressed file is refused above)
            frame = pd.read_csv(path, sep=_separator(path), skipinitialspace=True,
                                dtype=as_text or None, compression=None)
    except UnicodeDecodeError as err:
        raise ValueError(f"cannot read {what} {path} as CSV: {_not_text(path, err)}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, OSError) as err:
        kind = "Parquet" if is_parquet(path) else "CSV"
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        if isinstance(err, pd.errors.ParserError) and "Expected" in detail:
            detail += (" (more values on that line than names in the header: quote values "
                       "that hold the separator, or fix the line)")
        raise ValueError(f"cannot read {what} {path} as {kind}: {detail}.") from None
    except Exception as err:  # pyarrow raises its own types for corrupt files
        with open(path, "rb") as fh:
            head = fh.read(4)
        if is_parquet(path) and head != b"PAR1":
            raise ValueError(f"cannot read {what} {path} as Parquet: it does not begin as a "
                             "Parquet file does (if it is CSV text, give it the suffix "
                             ".csv).") from None
        detail = f"{type(err).__name__}: {str(err).strip().rstrip('.')}"
        if is_parquet(path):  # it begins as one: pyarrow's words ("magic bytes not found in
            # footer") name no fix
            raise ValueError(f"cannot read {what} {path} as Parquet ({detail}): the file is "
                             "damaged or cut short; write it again, or save it as CSV.") from None
        raise ValueError(f"cannot read {what} {path}: {detail}.") from None
    if dupes:
        raise ValueError(f"{what} {path} has duplicate column names: {names(dupes, 5)}; "
                         "rename them so each column has its own name.")
    if isinstance(frame.columns, pd.MultiIndex):
        # a Parquet file of a frame with column levels: no --target or --id-column could
        # name a column ("target column 'y' is not in ... (its columns: ('t', 'y'), ...)")
        raise ValueError(f"{what} {path} has column names of {frame.columns.nlevels} levels "
                         f"(e.g. {frame.columns[0]!r}): tdshap takes one name per column; save "
                         "it with one-level names, e.g. frame.columns = ['_'.join(map(str, c)) "
                         "for c in frame.columns].")
    if not is_parquet(path):
        # the names as the duplicate check reads them: pandas keeps spaces after a name and
        # a tab before it ("y "), so --target y was "not in" a file listing "..., y "
        frame.columns = pd.Index([c.strip() if isinstance(c, str) else c
                                  for c in frame.columns])
    if frame.shape[1] == 0 or len(frame) == 0:
        raise ValueError(f"{what} {path} has no data rows.")
    if frame.shape[1] == 1 and not is_parquet(path):
        _check_separator(str(frame.columns[0]), path, what)
    return frame


#: Binary formats a table is often saved in by mistake: their first bytes and what to do.
_BINARY_FORMATS = (
    (b"PK\x03\x04", "a zip archive (an Excel .xlsx file is one too): unzip it, or export "
     "the sheet as CSV"),
    (b"\x1f\x8b", "gzip-compressed: decompress it first (gunzip)"),
    (b"PAR1", "a Parquet file: give it the suffix .parquet"),
    (b"\xd0\xcf\x11\xe0", "an old Excel (.xls) or Office file: export the sheet as CSV"),
)


def _is_json(path: Path) -> bool:
    """Whether the file begins as JSON records or rows do: read as CSV, its first line was
    a header of brackets ("has no data rows", or "target column 't' is not in ... (its
    columns: [)")."""
    with open(path, "rb") as fh:
        head = re.sub(rb"\s", b"", fh.read(256).removeprefix(b"\xef\xbb\xbf"))
    return head.startswith((b"[{", b'{"', b"[["))


def _check_text_head(path: Path, what: str) -> None:
    """Refuse a text file with NUL bytes in its first 64 KiB (UTF-16 without a byte order
    mark is valid UTF-8 to the reader: "its columns: a\\x00, \\x00b\\x00, ..."), or whose
    first line is a spreadsheet's separator hint ("sep=;", which Excel writes and reads):
    read as the header, it named the columns "sep=" and "Unnamed: 1" ("target column 'y'
    is not in ..."), the real header a data row."""
    with open(path, "rb") as fh:
        head = fh.read(2**16)
    known = _known_format(head)
    if known is not None and b"\x00" in head:  # a zip archive, UTF-16 with its mark
        raise ValueError(f"cannot read {what} {path} as CSV: {known}")
    if b"\x00" in head:
        at = head.index(b"\x00")
        utf16 = head[at % 2::2].count(0) > len(head) // 4  # every other byte: UTF-16
        why = ("UTF-16 text without a byte order mark? save it as UTF-8 (e.g. 'CSV UTF-8' in a "
               "spreadsheet)" if utf16 else "a binary or damaged file? save the table as "
               "UTF-8 CSV text")
        raise ValueError(f"cannot read {what} {path} as CSV: it holds NUL bytes (the first at "
                         f"position {at}), which CSV text has not: {why}.")
    first = head.split(b"\n", 1)[0][:64].removeprefix(b"\xef\xbb\xbf").rstrip(b"\r")
    if re.fullmatch(rb"sep=.?", first):
        raise ValueError(f"{what} {path} begins with the line {first.decode(errors='replace')!r},"
                         " a spreadsheet's separator hint, not the header: delete that line so "
                         "that the column names come first.")


def _known_format(head: bytes) -> str | None:
    """What a file beginning with ``head`` is, by its first bytes, and the fix; or None."""
    for magic, fix in _BINARY_FORMATS:
        if head.startswith(magic):
            return f"it is {fix}."
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "it is UTF-32 text: save it as UTF-8 (e.g. 'CSV UTF-8' in a spreadsheet)."
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "it is UTF-16 text: save it as UTF-8 (e.g. 'CSV UTF-8' in a spreadsheet)."
    return None


def _not_text(path: Path, err: UnicodeDecodeError) -> str:
    """Why a file that should be text is not UTF-8, and what to do about it."""
    with open(path, "rb") as fh:
        known = _known_format(fh.read(8))
    if known is not None:
        return known
    return (f"it is not UTF-8 text (byte 0x{err.object[err.start]:02x} at position "
            f"{err.start}): save it as UTF-8 (e.g. 'CSV UTF-8' in a spreadsheet, or "
            "iconv -f latin1 -t utf-8).")


def _check_separator(header: str, path: Path, what: str) -> None:
    """A one-column table whose header holds another separator was split on the wrong one."""
    expected = _separator(path)
    for sep, name in ((";", "semicolon"), ("\t", "tab"), ("|", "pipe"), (",", "comma")):
        if sep != expected and sep in header:
            fix = {"\t": "give it the suffix .tsv", ",": "give it the suffix .csv"}.get(
                sep, "save it comma-separated (.csv) or tab-separated (.tsv)")
            reads = "tab" if expected == "\t" else "comma"
            raise ValueError(
                f"{what} {path} has a single column {header[:60]!r}: it looks {name}-separated, "
                f"but a {path.suffix or 'file without suffix'} file is read as {reads}-separated:"
                f" {fix}.")


def write_rows_like(source: Path, frame: pd.DataFrame, keep: np.ndarray, dest: Path,
                    as_text: tuple[str, ...] = ()) -> None:
    """Write the rows ``keep`` (positions) of the table read from ``source`` to ``dest``.

    ``as_text``: the columns :func:`read_table` read as text (``text``), read back so.

    Same columns, order and format as the input. For text files the kept
    records are copied byte for byte (numbers keep their formatting; a record is
    a line, or several where a quoted field holds line breaks) when they read
    back as the kept rows; otherwise pandas writes them.
    """
    keep = np.sort(np.asarray(keep, dtype=np.int64))
    if is_parquet(source):
        # a non-default index (row ids) is one that DataFrame.to_parquet stored: keep it
        frame.iloc[keep].to_parquet(dest, index=not isinstance(frame.index, pd.RangeIndex))
        return
    with open(source, encoding="utf-8", newline="") as fh:
        records = _records(fh.read(), _separator(source))
    text = None
    if records is not None and len(records) - 1 == len(frame):
        text = records[0] + "".join(records[1 + i] for i in keep)
        if text and not text.endswith(("\n", "\r")):
            text += "\n"
    if text is not None and _reads_as(text, frame.iloc[keep], source, as_text):
        dest.write_text(text, encoding="utf-8", newline="")
    else:  # a file the csv module splits otherwise than pandas
        frame.iloc[keep].to_csv(dest, sep=_separator(source), index=False)


def _records(text: str, sep: str) -> list[str] | None:
    """The raw text of each record of ``text``, header first, without the lines pandas
    skips as blank (spaces and tabs alone); None where the csv module cannot split it."""
    lines = list(io.StringIO(text, newline=""))  # \n, \r\n or \r alone, as csv and pandas
    if '"' not in text:  # no quoted field: a line is a record (10x faster on wide files)
        return [line for line in lines if line.strip(" \t\r\n")] or None
    reader = csv.reader(iter(lines), delimiter=sep, skipinitialspace=True)
    records, start = [], 0
    try:
        for _ in reader:  # line_num: the lines read so far, a quoted line break's too
            raw = "".join(lines[start:reader.line_num])
            start = reader.line_num
            if raw.strip(" \t\r\n"):
                records.append(raw)
    except csv.Error:
        return None
    return records or None


def _reads_as(text: str, rows: pd.DataFrame, source: Path, as_text: tuple[str, ...] = ()
              ) -> bool:
    """Whether the copied lines ``text`` read back as ``rows``: equal line and row counts
    can still pair the wrong lines (a quoted line break in one row and a line of a form
    feed alone, which pandas reads as a row, left a broken quote and shifted rows)."""
    try:
        dtype = {i: str for i, name in enumerate(rows.columns) if name in as_text}
        back = pd.read_csv(io.StringIO(text), sep=_separator(source), skipinitialspace=True,
                           dtype=dtype or None)
        back.columns = rows.columns
        back, rows = back.reset_index(drop=True), rows.reset_index(drop=True)
        # equal dtypes compare block by block; the column-by-column assertion below takes
        # seconds on a file of 100,000 columns, so it is asked only when dtypes differ
        if not back.equals(rows):
            pd.testing.assert_frame_equal(back, rows, check_dtype=False, check_exact=True)
    except (ValueError, AssertionError, pd.errors.ParserError):
        return False
    return True


# -- columns, target, task ----------------------------------------------------
def check_same_columns(train: pd.DataFrame, other: pd.DataFrame, what: str) -> None:
    """Refuse held-out data without the training data's columns (matched by name)."""
    difference = column_difference(train.columns, other.columns)
    if difference:
        raise ValueError(f"the {what} data's columns do not match the training data's: it "
                         f"{difference}.")


def first_fraction(y: pd.Series) -> float | None:
    """The first value of a numeric target column that is not a whole number, if any."""
    if not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y) or \
            pd.api.types.is_complex_dtype(y):  # refused by check_target
        return None
    values = y.to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    fractional = values[np.mod(values, 1) != 0]
    return float(fractional[0]) if len(fractional) else None


def _kind(y: pd.Series) -> str:
    """What a non-numeric target holds, as the task's reason names it."""
    if pd.api.types.is_bool_dtype(y):
        return "booleans"
    if isinstance(y.dtype, pd.CategoricalDtype):
        return "categories"
    if pd.api.types.is_datetime64_any_dtype(y) or pd.api.types.is_timedelta64_dtype(y):
        # a time read as classes is rarely meant: say how to make it a number instead
        return (f"{y.dtype} values, each distinct one a class (for regression, convert them "
                "to numbers, e.g. days since a date, and set the task to regression)")
    return "text"


def infer_task(y: pd.Series) -> tuple[str, str]:
    """``(task, reason)`` for a target column (rule in the module docstring)."""
    if not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        _check_numeric_text_target(y)
        _check_label_per_row(y)
        return "classification", f"the target is not numeric: {_kind(y)}"
    n_levels = int(y.nunique(dropna=False))  # as floats, 2**62 and 2**62 + 1 were one
    whole = first_fraction(y) is None
    if whole and n_levels <= MAX_CLASSES:
        return "classification", (
            f"the target has {n_levels} distinct whole-number values (<= {MAX_CLASSES})"
        )
    if whole:
        return "regression", f"the target has {n_levels} distinct values (> {MAX_CLASSES})"
    return "regression", "the target has fractional values"


def _all_text(y: pd.Series, present: pd.Series) -> bool:
    """Whether ``y`` is a text column (not categories) whose filled cells are all text: the
    target checks leave other objects (lists, bytes, numbers among text) to
    :func:`check_target`, which names them."""
    return (pd.api.types.is_object_dtype(y.dtype) or pd.api.types.is_string_dtype(y.dtype)) \
        and all(isinstance(v, str) for v in present)


def _check_numeric_text_target(y: pd.Series, regression: bool = False) -> None:
    """Refuse a text target that is numbers but for a few cells (at least
    ``MOSTLY_NUMERIC_PERCENT`` %), or numbers in a notation the reader does not take
    (:func:`_notation`: thousands separators, a decimal comma...), when those numbers are
    a regression target (fractional, or more than ``MAX_CLASSES``
    values; ``regression``: the task says so).

    A file's column of measurements with one typo ("151x") or separators ("3,456") is
    read as text, and text is classification: every distinct value became a class of
    its own, and a k-NN classifier of hundreds of one-row classes was valued and cleansed
    (75 of 221 rows removed) without a word. Feature columns get the same check
    (:func:`_check_typos`); text labels among numbers that make a few classes ("0", "1",
    "other") are left alone, and so are categories and booleans, labels by declaration.
    """
    present = y[y.notna()]
    if not _all_text(y, present):
        return
    foreign, plain, kind = _notations(present.map(lambda v: v.strip(" \t")))
    numbers = pd.to_numeric(plain, errors="coerce")
    bad = numbers.isna().to_numpy()
    n_bad = int(bad.sum())
    if not len(present) or not (n_bad or foreign.any()) or \
            100 * (len(present) - n_bad) < MOSTLY_NUMERIC_PERCENT * len(present):
        return  # text labels (some of them digits), or numbers given as text throughout
    values = numbers[~bad].to_numpy(dtype=float)
    fractional = bool(np.any(np.mod(values[np.isfinite(values)], 1) != 0))
    if not (regression or fractional or len(np.unique(values)) > MAX_CLASSES):
        return  # a few whole numbers and some text: class labels
    name = y.name
    if n_bad:
        cells = _cells(present, bad)
        why = ("a regression target must be numbers" if regression else
               "read as text, each distinct value would be a class of its own")
        raise ParameterError(
            f"target column {name!r} holds numbers except in {n_bad} "
            f"cell{'s' if n_bad > 1 else ''}: {cells}; {why}. Correct those cells or drop "
            "those rows, or give `task` classification if they are class labels.", "task")
    raise _notation_error(f"target column {name!r}", present, str(kind),
                          ", or give `task` classification if they are class labels.")


def check_held_out_labels(train: np.ndarray, y: pd.Series, what: str) -> None:
    """Refuse held-out class labels (``y``, of the ``what``) that are numbers but for a few
    cells where the training labels (``train``) are numbers: a typo ("one") in a held-out
    file's target made its whole column text, and the error said its labels ('one', '0',
    '1') "share no class" with the training labels (0, 1), hiding the cell at fault."""
    if train.dtype.kind not in "iuf":
        return
    present = y[y.notna()]
    if not len(present) or not _all_text(y, present):
        return
    bad = pd.to_numeric(present.map(lambda v: v.strip(" \t")), errors="coerce").isna()
    n_bad = int(bad.sum())
    if n_bad in (0, len(present)):  # all numbers, or text labels: the class checks say so
        return
    raise ValueError(
        f"target column {y.name!r} of the {what} holds numbers except in {n_bad} "
        f"cell{'s' if n_bad > 1 else ''}: {_cells(present, bad.to_numpy())}; so it was read "
        "as text, and no text label equals a training label (numbers). Correct those cells "
        "or drop those rows.")


def _check_label_per_row(y: pd.Series) -> None:
    """Refuse, when the task is inferred, a text target of more than ``MAX_CLASSES``
    labels with fewer than 3 rows each on average (the default split trains on half the
    rows: such a label has one training row or none).

    Such a column is no set of classes: numbers written with a unit or currency ("$151.00",
    "12%"), or a name or id column given as the target. Read as classification, the run
    valued a k-NN classifier of hundreds of one-row classes, which can predict none of them,
    with only scikit-learn's warning that ``y`` "could represent a regression problem".
    ``task`` given as classification keeps them as classes; categories are labels by
    declaration.
    """
    if not _all_text(y, y[y.notna()]):
        return
    n_labels = int(y.nunique())
    if n_labels <= MAX_CLASSES or len(y) >= 3 * n_labels:
        return
    shown = ", ".join(f"{plain_value(v)!r:.30}" for v in pd.unique(y.dropna())[:3])
    raise ParameterError(
        f"target column {y.name!r} has {n_labels:,} different labels in {len(y):,} rows "
        f"({shown}, ...), fewer than 3 rows each on average: as classes, most would have "
        "one training row or none, which no model can learn. If it holds numbers written "
        "with a unit or currency, write them as plain numbers (151.0, not $151.00) for "
        "regression; if it names the rows, choose another "
        "target column; if they are class labels, give `task` classification.", "task")


def check_target(y: pd.Series, task: str, min_classes: int = 2,
                 what: str = "training data") -> np.ndarray:
    """The target as an array, or a ``ValueError`` for the cases that cannot work.

    ``min_classes``: the classes a classification target needs (held-out rows may
    all be of one class; the training rows need two). ``what`` names the rows in the
    messages that point at a row (``"validation data"``: which file to correct).
    """
    name = y.name
    if y.isna().any():
        first, n = int(np.flatnonzero(y.isna().to_numpy())[0]), int(y.isna().sum())
        raise ParameterError(
            f"target column {name!r} has {n} missing value{'s' if n != 1 else ''} in the {what} "
            f"(first at data row {first}); drop those rows (`impute` never fills the "
            f"target){_MISSING_MARKERS if _is_text(y.dtype) else ''}.", "impute"
        )
    numeric = pd.api.types.is_numeric_dtype(y) and not pd.api.types.is_bool_dtype(y)
    if numeric and not pd.api.types.is_complex_dtype(y):
        values = y.to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise ValueError(f"target column {name!r} has {values[bad[0]]} in row "
                             f"{y.index[bad[0]]} of the {what}: drop that row or give a "
                             f"finite value{_BEYOND_FLOATS}.")
    if task == "regression":
        if pd.api.types.is_complex_dtype(y):  # to_numpy(dtype=float) keeps the real parts
            raise ValueError(f"target column {name!r} holds complex numbers: a regression "
                             "target must be real; value its real part (np.real) or its "
                             "magnitude (np.abs), or each in a run of its own.")
        if not numeric:
            _check_numeric_text_target(y, regression=True)
            # the first cell that is no number: the first row's could be one ("151.0")
            odd = pd.to_numeric(y.astype(object), errors="coerce").isna().to_numpy()
            example = y.iloc[int(np.argmax(odd))]
            raise ParameterError(
                f"target column {name!r} is not numeric (e.g. {plain_value(example)!r}) but "
                "the task is regression: use `task` classification or a numeric target.",
                "task"
            )
        values = y.to_numpy(dtype=float)
        check_exact_as_floats(y, pd.Series(values), f"target column {name!r}")
        check_squarable(values, f"target column {name!r}")
        # at the other end: the variance of a squared error is the spread to the fourth
        # power, below the smallest float from about 1e-77 on: every interval was then a
        # point and every lead "inf SE" (a 1e-90 target removed rows a 1.0 target kept)
        spread = float(np.ptp(values)) if len(values) else 0.0
        if 0 < spread < SMALLEST_TARGET_SPREAD:
            raise ValueError(f"target column {name!r} has values that differ by at most "
                             f"{spread:.3g}, too little to square twice in floating point: "
                             "rescale it, e.g. to other units (multiply it by "
                             f"1e{int(np.ceil(-np.log10(spread)))}, say).")
        return values
    cells = y.to_numpy()
    # by its values, not its dtype: a categorical (pandas.cut's intervals), period or
    # interval column holds Python objects too
    if cells.dtype == object:
        y = pd.Series(plain_labels(cells, f"target column {name!r}"), index=y.index, name=name)
    if pd.api.types.is_complex_dtype(y):
        raise ValueError(f"target column {name!r} holds complex numbers: it cannot be a label.")
    check_class_labels(y.to_numpy(), f"target column {name!r}")
    if y.nunique() < min_classes:
        # labels a file gave as digits are read as numbers: "007" and "7" are one class
        merged = (" (a file's labels are read as numbers where they all are: '007' and '7', "
                  "or two integers beyond 2**64, are one; prefix codes with a letter to keep "
                  "them apart)" if pd.api.types.is_numeric_dtype(y) else "")
        raise ValueError(
            f"target column {name!r} has a single class ({plain_value(y.iloc[0])!r}): "
            f"classification needs at least two{merged}."
        )
    _warn_spaced_labels(y, what)
    return y.to_numpy()


def _spaced(levels: Any) -> list[str] | None:
    """The first text ``levels`` (distinct values) that differ only in spaces at their ends
    ("yes", "yes "), or None."""
    spellings: dict[str, list[str]] = {}
    for level in levels:
        if isinstance(level, str):
            spellings.setdefault(level.strip(), []).append(level)
    return next((found for found in spellings.values() if len(found) > 1), None)


def _warn_spaced_labels(y: pd.Series, what: str) -> None:
    """Warn of text labels that differ only in spaces at their ends ("yes" and "yes "): a
    CSV reader drops the spaces before a value, not after it, so a stray space made a class
    of its own, silently."""
    if pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        return
    split = _spaced(pd.unique(y.to_numpy()))
    if split is not None:
        warnings.warn(f"target column {y.name!r} of the {what} holds labels that differ only "
                      f"in spaces at their ends ({', '.join(repr(v) for v in split[:3])}): "
                      "each is a class of its own; strip the spaces (e.g. y.str.strip() or "
                      "in the file) if they are one class.", UserWarning, stacklevel=3)


# -- features -----------------------------------------------------------------
def _numbers_as_objects(col: pd.Series) -> bool:
    """A column of Python objects that are all numbers (``X.astype(object)``, Decimals, ints
    too large for int64): numbers, not text, whose every value would be a level of its own
    (or the column dropped as row names)."""
    values = col.dropna().to_numpy()
    # numpy's timedelta64 is an integer type, so a numbers.Real: taken for numbers, such a
    # column failed deep inside (int() of a datetime.timedelta)
    return len(values) > 0 and all(
        isinstance(v, numbers.Real | Decimal)
        and not isinstance(v, bool | np.bool_ | np.timedelta64) for v in values)


def typed_target(y: pd.Series) -> pd.Series:
    """A target of Python objects that pandas has a type for, as that type.

    Numbers (a Parquet decimal column reads as Decimals): as objects the target was "not
    numeric", so every distinct amount became a class of its own (a regression target
    refused as "80 classes in 80 rows"); integers beyond int64 stay objects
    (``pd.to_numeric`` keeps them so). Dates (a Parquet date32 column's): datetime64, as
    a timestamp column's are (see :func:`dates_of`). Anything else is returned as it is.
    """
    if y.dtype != object:
        return y
    if _numbers_as_objects(y):
        return pd.Series(pd.to_numeric(y), index=y.index, name=y.name)
    dates = dates_of(y.to_numpy())
    return y if dates is None else pd.Series(dates.array, index=y.index, name=y.name)


def _is_text(dtype: Any) -> bool:
    return (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
            or isinstance(dtype, pd.CategoricalDtype))


@dataclass
class TableEncoder:
    """Turn feature columns into a numeric matrix (rule in the module docstring).

    Attributes (after :meth:`fit`): ``numeric_``, ``categorical_`` (column
    names), ``feature_names_`` (the encoded columns), ``levels_`` (levels per
    categorical column, as kept), ``imputed_`` (column -> value filled in, for the
    columns with missing values in the training rows), ``imputed_held_out_`` (the same,
    for columns whose missing values only rows transformed later had: validation and test
    rows), ``unused_`` (text columns of row names, not encoded).
    """

    impute: bool = False
    max_levels: int = MAX_LEVELS

    def fit(self, X: pd.DataFrame) -> TableEncoder:
        self.columns_ = list(X.columns)
        self.numeric_: list[str] = []
        self.categorical_: list[str] = []
        # by the dtypes alone: X[c] builds a Series per column, seconds on 100,000 columns
        for c, dtype in zip(self.columns_, X.dtypes, strict=True):
            if pd.api.types.is_complex_dtype(dtype):
                raise ValueError(f"column {c!r} holds complex numbers, which cannot be used as "
                                 "a feature: split it into real and imaginary columns.")
            if pd.api.types.is_bool_dtype(dtype) or (
                pd.api.types.is_numeric_dtype(dtype) and not _is_text(dtype)
            ):
                self.numeric_.append(c)
            elif pd.api.types.is_object_dtype(dtype) and _numbers_as_objects(X[c]):
                self.numeric_.append(c)
            elif _is_text(dtype):
                self.categorical_.append(c)
            else:
                when = pd.api.types.is_datetime64_any_dtype(dtype) or \
                    pd.api.types.is_timedelta64_dtype(dtype)
                raise ValueError(
                    f"column {c!r} has type {dtype}, which cannot be used as a feature: "
                    f"{_TIME_FIX if when else 'convert it to numbers or text, or drop it'}."
                )
        _check_cells(X, self.categorical_, "training data")
        _check_typos(X, self.categorical_, "training data", warn_partly=True)
        self.unused_ = _row_names(X, self.categorical_, self.max_levels)
        if self.unused_:
            self.categorical_ = [c for c in self.categorical_ if c not in self.unused_]
            _warn_row_names(self.unused_, not (self.numeric_ or self.categorical_))
        self._check_missing(X, "training data")
        self.imputed_held_out_: dict[str, Any] = {}
        self._num_imputer = self._cat_imputer = None
        if self.numeric_:
            num = X[self.numeric_].astype(float)
            _check_finite(num)
            for c in _large_whole(X, self.numeric_):
                check_exact_as_floats(X[c], num[c], f"column {c!r}")
            if self.impute:  # fitted even without NaN here: held-out rows may have some
                self._num_imputer = SimpleImputer(strategy="median", keep_empty_features=True)
                self._num_imputer.fit(num.to_numpy())
            filled = self._fill_numbers(num.to_numpy())
            self.mean_, std = column_spread(filled, [f"column {c!r}" for c in self.numeric_])
            self.scale_ = np.where(std > 0, std, 1.0)  # a constant column stays constant
            self.constant_ = std == 0
        if self.categorical_:
            cat = X[self.categorical_].astype(object)
            if self.impute:
                self._cat_imputer = SimpleImputer(strategy="most_frequent",
                                                  keep_empty_features=True)
                self._cat_imputer.fit(cat.where(cat.notna(), np.nan).to_numpy())
            self._onehot = OneHotEncoder(
                max_categories=self.max_levels, handle_unknown="infrequent_if_exist",
                sparse_output=False, dtype=float,
            )
            self._onehot.fit(self._filled_text(cat))
            for c, cats in zip(self.categorical_, self._onehot.categories_, strict=True):
                _warn_spaced_levels(c, _spaced(cats))
            self.levels_ = {
                c: [str(v) for v in cats] for c, cats in
                zip(self.categorical_, self._onehot.categories_, strict=True)
            }
            # as text: scikit-learn joins name + "_" + level, and pd.DataFrame(array) names
            # its columns 0, 1, ... ("unsupported operand type(s) for +: 'int' and 'str'")
            cat_names = list(self._onehot.get_feature_names_out(
                [str(c) for c in self.categorical_]))
        else:
            self.levels_ = {}
            cat_names = []
        self.feature_names_ = list(self.numeric_) + cat_names
        self.imputed_: dict[str, Any] = self._filled(X)
        return self

    def _check_missing(self, X: pd.DataFrame, what: str) -> None:
        if self.impute:
            return
        missing = (X.drop(columns=self.unused_) if self.unused_ else X).isna().sum()
        bad = missing[missing > 0]
        if len(bad):
            col, n = bad.index[0], int(bad.iloc[0])
            more = (f" (and {len(bad) - 1} more column{'s' if len(bad) > 2 else ''})"
                    if len(bad) > 1 else "")
            raise ParameterError(
                f"column {col!r} has {n} missing value{'s' if n != 1 else ''} in the "
                f"{what}{more}: "
                "fill them, or pass `impute` (median for numbers, most frequent level for "
                f"text){_MISSING_MARKERS if _is_text(X[col].dtype) else ''}.", "impute"
            )

    def _filled(self, X: pd.DataFrame) -> dict[str, Any]:
        """Column -> the value ``impute`` fills in, for the columns where ``X`` misses one."""
        filled: dict[str, Any] = {}
        for imputer, columns in ((self._num_imputer, self.numeric_),
                                 (self._cat_imputer, self.categorical_)):
            if imputer is not None:
                missing = X[columns].isna().any()
                filled.update({c: float(v) if imputer is self._num_imputer else v
                               for c, v in zip(columns, imputer.statistics_, strict=True)
                               if missing[c]})
        return filled

    def _fill_numbers(self, num: np.ndarray) -> np.ndarray:
        return num if self._num_imputer is None else self._num_imputer.transform(num)

    def _filled_text(self, cat: pd.DataFrame) -> np.ndarray:
        # None, NaN, pd.NA: all one "missing" for the imputer
        arr = cat.where(cat.notna(), np.nan).to_numpy(dtype=object)
        if self._cat_imputer is not None:
            arr = self._cat_imputer.transform(arr)
        return arr.astype(str)

    def transform(self, X: pd.DataFrame, what: str = "data") -> np.ndarray:
        """The encoded matrix of ``X``; ``what`` names ``X`` in error messages."""
        self._check_missing(X, what)
        # the report named the training rows' imputed columns alone: a held-out column
        # filled in went unsaid
        self.imputed_held_out_.update({c: v for c, v in self._filled(X).items()
                                       if c not in self.imputed_})
        parts = []
        if self.numeric_:
            raw = _numbers(X, self.numeric_, what)
            _check_finite(raw, what)
            num = self._fill_numbers(raw.to_numpy())
            with np.errstate(over="ignore", invalid="ignore"):
                scaled = (num - self.mean_) / self.scale_
            at = _too_large(scaled)
            if at is not None:
                pos, col = at
                raise ValueError(
                    f"column {self.numeric_[col]!r}{_of_held_out(what)} has a value too large "
                    f"to standardise in row {X.index[pos]} ({num[pos, col]:.3g}): rescale the "
                    "column.")
            if what != "training data":  # the file's own held-out rows are training data
                self._warn_constant(num, X.index, what)
            parts.append(scaled)
        # all rows: a typo in a held-out row left the training rows' cells all numbers
        # (and a column of distinct numbers read as text is set aside as row names: the
        # typo would drop a measurement silently, depending on the seed's split)
        _check_cells(X, self.categorical_ + self.unused_, what)
        _check_typos(X, self.categorical_ + self.unused_, what)
        if self.categorical_:
            text = self._filled_text(X[self.categorical_].astype(object))
            self._warn_unseen(text, what)
            if what != "training data":
                self._warn_respelled(text, what)
            parts.append(self._onehot.transform(text))
        return np.hstack(parts) if parts else np.empty((len(X), 0))

    def _warn_constant(self, num: np.ndarray, index: pd.Index, what: str) -> None:
        """Warn of a numeric column constant in the training rows but not in ``what``: no
        model learns from it, yet its held-out values move the predictions of distance-,
        kernel- and weight-based models (an SVM's validation accuracy fell from 0.90 to
        0.58 on one such column), and every row was valued on those predictions."""
        for j in np.flatnonzero(self.constant_):
            differ = np.flatnonzero(num[:, j] != self.mean_[j])
            if len(differ):
                pos = int(differ[0])
                warnings.warn(
                    f"column {self.numeric_[j]!r} is constant in the training rows "
                    f"({self.mean_[j]:g}) but not in the {what} ({len(differ)} rows differ, "
                    f"e.g. {num[pos, j]:g} in row {index[pos]}): no model learns from it, yet "
                    "its other values there move the predictions of some (an RBF SVM, an "
                    "MLP) on every row; drop the column.", UserWarning, stacklevel=3)

    def _warn_respelled(self, text: np.ndarray, what: str) -> None:
        """Warn of held-out levels that are a training level but for spaces at their ends
        ("red " for "red"): each was encoded as an unknown level, silently."""
        for j, c in enumerate(self.categorical_):
            known = set(self.levels_[c])
            stripped = {level.strip(): level for level in self.levels_[c]}
            respelled = [(str(v), stripped[v.strip()]) for v in pd.unique(text[:, j])
                         if v not in known and v.strip() in stripped]
            if respelled:
                held, trained = respelled[0]
                warnings.warn(f"column {c!r} of the {what} holds {held!r}, which the training "
                              f"rows spell {trained!r} (and {len(respelled) - 1} more such): "
                              "a level the training rows lack, encoded as unknown; strip the "
                              "spaces at the ends of the levels (in the files, or "
                              "X[col].str.strip()).", UserWarning, stacklevel=3)

    def _warn_unseen(self, text: np.ndarray, what: str) -> None:
        """Warn of a text column none of whose values the training rows have (every row
        of it encoded as an unknown level: zeros, or the shared rare-level column)."""
        for j, c in enumerate(self.categorical_):
            column = text[:, j]
            if len(column) and not np.isin(column, self.levels_[c]).any():
                shown = ", ".join(repr(str(v)) for v in pd.unique(column)[:3])
                warnings.warn(f"column {c!r} of the {what} holds no value the training rows "
                              f"have ({shown}, ...; training: "
                              f"{', '.join(repr(v) for v in self.levels_[c][:3])}, ...): "
                              "every row of it is encoded as an unknown level.",
                              UserWarning, stacklevel=3)

    def describe(self) -> str:
        """One line per categorical column: how it was encoded (or why not)."""
        unused = [f"{code_span(c)}: not used (a different text in every training row)"
                  for c in self.unused_]
        if not self.categorical_:
            return "; ".join(["all feature columns are numeric: used as they are", *unused])
        lines = []
        for c in self.categorical_:
            levels = self.levels_[c]
            lines.append(f"{code_span(c)}: one-hot, {len(levels)} levels"
                         + (" (rare levels share the `infrequent` column)"
                            if self._onehot.infrequent_categories_[
                                self.categorical_.index(c)] is not None else ""))
        return "; ".join(lines + unused)


def _warn_spaced_levels(column: Any, split: list[str] | None) -> None:
    """Warn that training levels of a text feature differ only in spaces at their ends
    (``split``, from :func:`_spaced`): a CSV reader drops the spaces before a value, not
    after it, so a stray space made a level of its own, silently."""
    if split is not None:
        warnings.warn(f"column {column!r} of the training data holds levels that differ only "
                      f"in spaces at their ends ({', '.join(repr(str(v)) for v in split[:3])}"
                      "): each is a level of its own; strip the spaces (in the file, or "
                      "X[col].str.strip()) if they are one level.", UserWarning, stacklevel=4)


def _numbers(X: pd.DataFrame, columns: list[str], what: str) -> pd.DataFrame:
    """``X[columns]`` as floats; text where the training rows had numbers names its cell."""
    try:
        return X[columns].astype(float)
    except (TypeError, ValueError):
        for c in columns:
            col = X[c]
            bad = (pd.to_numeric(col, errors="coerce").isna() & col.notna()).to_numpy()
            if bad.any():
                pos = int(np.flatnonzero(bad)[0])
                found = _notation(col.iloc[pos])  # "−0.5", "0,5": say which way it is off
                how = "" if found is None else (
                    f"; it is a number {_NOTATIONS[found[0]][0]}: {_NOTATIONS[found[0]][1]}")
                raise ValueError(
                    f"column {c!r} of the {what} holds {plain_value(col.iloc[pos])!r} in row "
                    f"{X.index[pos]}, but it is numeric in the training rows: give numbers "
                    f"there too (or text in both){how}.") from None
        raise


#: the fix for a date or time column, however it is given (a datetime64 or Parquet date32
#: column, or text): as text (the fix the dtype's message once gave) it is refused too
_TIME_FIX = ("convert the column to numbers (e.g. days since a date, or hours since a time), "
             "or drop it")


#: cells of a text column that are not text: dates and times (a Parquet date32 or time
#: column), read as levels one per value, while a datetime64 column is refused; bytes (a
#: Parquet binary column), levels where they were ASCII and "'ascii' codec can't decode
#: byte 0xff" where not
_NOT_TEXT = (bytes, datetime.date, datetime.time, datetime.timedelta, np.datetime64,
             np.timedelta64, complex, np.complexfloating)


def _not_text_cell(value: Any) -> bool:
    """Whether a scalar cell is one of :data:`_NOT_TEXT` (a NaT of either kind is a missing
    value, not a date)."""
    if isinstance(value, np.datetime64 | np.timedelta64):
        return not np.isnat(value)
    return isinstance(value, _NOT_TEXT) and value is not pd.NaT


def _check_cells(X: pd.DataFrame, columns: list[str], what: str) -> None:
    """Refuse a text column with a cell that is not one value (a list, a dict, an array),
    or that is bytes, a date or a time, or a complex number (:data:`_NOT_TEXT`): numpy's
    datetime64 and complex cells were one-hot levels, silently, where a Timestamp cell or a
    complex column is refused."""
    for c in columns:
        col = X[c]
        if col.dtype != object:
            continue
        bad = col.map(lambda v: not pd.api.types.is_scalar(v) or _not_text_cell(v)).to_numpy(
            dtype=bool)
        if not bad.any():
            continue
        pos = int(np.flatnonzero(bad)[0])
        cell = col.iloc[pos]
        kind = "bytes" if isinstance(cell, bytes) else f"a {type(cell).__name__}"
        where = f"column {c!r} of the {what} holds {kind} in row {X.index[pos]} ({cell!r:.60})"
        if isinstance(cell, bytes):
            raise ValueError(f"{where}, not text: decode the column to text (e.g. "
                             "X[col].str.decode('utf-8')) or drop it.")
        if isinstance(cell, complex | np.complexfloating):
            raise ValueError(f"{where}, which cannot be used as a feature: split the column "
                             "into real and imaginary columns.")
        if isinstance(cell, _NOT_TEXT):
            raise ValueError(f"{where}, which cannot be used as a feature: {_TIME_FIX}.")
        raise ValueError(f"{where}: a feature cell must be one number or text; split it into "
                         "columns or join it into text.")


def _row_names(X: pd.DataFrame, columns: list[str], max_levels: int) -> list[str]:
    """The text columns with a different value in each of their (more than ``max_levels``)
    filled training rows: an id, a name. No two rows share a level, so as a feature such a
    column only sets apart the few rows whose level got a one-hot column of its own."""
    if not columns:
        return []
    filled = X[columns].notna().sum()
    distinct = X[columns].nunique()
    return [c for c in columns if filled[c] > max_levels and distinct[c] == filled[c]]


def _warn_row_names(columns: list[str], alone: bool) -> None:
    """Say that ``columns`` (:func:`_row_names`) are not used; refuse them where they are
    the only feature columns."""
    many = len(columns) > 1
    what = (f"column{'s' if many else ''} {', '.join(repr(c) for c in columns)} "
            f"hold{'' if many else 's'} a different text in every training row (a row id or "
            "name?)")
    if alone:
        raise ParameterError(
            f"{what} and there is no other feature column: as a feature it says nothing of "
            "any other row. Name the rows by it (the command's --id-column, or X's index in "
            "Python) and give feature columns, or turn it into numbers (a date into days, "
            "say).", "X")
    warnings.warn(f"{what}: not used as a feature (it would only set a few rows apart at "
                  "random); name the rows by it with the command's --id-column or X's index, "
                  "or turn it into numbers (a date into days, say) to use it as one.",
                  UserWarning, stacklevel=4)


#: a text column with at least this share of numbers (but fewer than
#: MOSTLY_NUMERIC_PERCENT) is encoded as levels with a warning
PARTLY_NUMERIC_PERCENT = 75


def _check_typos(X: pd.DataFrame, columns: list[str], what: str,
                 warn_partly: bool = False) -> None:
    """Refuse a text column that is numbers but for a few cells: likely typos, which
    would silently make the column one-hot levels instead of a number. ``warn_partly``
    (at fit): warn of one of ``PARTLY_NUMERIC_PERCENT`` % numbers or more, whose numbers
    become levels (a measurement with many text cells, or codes? only the user knows)."""
    for c in columns:
        col = X[c]
        if isinstance(col.dtype, pd.CategoricalDtype):  # declared as levels by the user
            continue
        present = col[col.notna()]
        bad = pd.to_numeric(present, errors="coerce").isna().to_numpy()
        n_bad = int(bad.sum())
        _check_dates(c, present, bad, what)
        _check_notation(c, present, bad, what)
        if not n_bad:  # all numbers (or none present): nothing to say
            continue
        share = 100 * (len(present) - n_bad) / len(present)
        if share < MOSTLY_NUMERIC_PERCENT:
            if warn_partly and share >= PARTLY_NUMERIC_PERCENT:
                warnings.warn(f"column {c!r} is {share:.0f}% numbers and the rest text: it is "
                              "encoded as levels, one per value, not as a number; if it is a "
                              "measurement, correct or blank its text cells.", UserWarning,
                              stacklevel=3)
            continue
        cells = _cells(present, bad)
        raise ParameterError(
            f"column {c!r} of the {what} holds numbers except in {n_bad} "
            f"cell{'s' if n_bad > 1 else ''}: {cells}. Correct those cells, or blank them (NaN "
            "in a DataFrame) to make them missing values, which `impute` fills; a column "
            "meant as text must be text throughout (e.g. prefix codes with a letter, or in "
            "Python give it as a pandas category).", "impute")


def _cells(present: pd.Series, bad: np.ndarray) -> str:
    """The first three ``bad`` cells of a column, with their rows, for an error."""
    n_bad = int(bad.sum())
    return ", ".join(f"{plain_value(present.iloc[i])!r:.40} (row {present.index[i]})"
                     for i in np.flatnonzero(bad)[:3]) + (", ..." if n_bad > 3 else "")


#: a number written with thousands separators: "3,456", "-1,234,567.5"
_GROUPED = re.compile(r"[+-]?[0-9]{1,3}(,[0-9]{3})+(\.[0-9]*)?")
#: digit groups set apart by a space, an apostrophe or an underscore ("12 573", "12'573,5"
#: in French or Swiss locales; "12_573"), each group of three digits, a decimal point or
#: comma after them
_SPACED = re.compile(r"[+-]?[0-9]{1,3}(?P<sep>[ '\u2019_])[0-9]{3}((?P=sep)[0-9]{3})*([.,][0-9]*)?")
#: a number with one comma and three digits after it: "171,006" could be either
_ONE_GROUP = re.compile(r"[+-]?[1-9][0-9]{0,2},[0-9]{3}")
#: a number written with a decimal comma: "3,5", "-0,126"
_DECIMAL_COMMA = re.compile(r"[+-]?[0-9]*,[0-9]+([eE][+-]?[0-9]+)?")
#: a number as the reader takes it
_PLAIN_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
#: signs a word processor or a locale writes for minus: minus sign, figure and en dash,
#: small and full-width hyphen-minus
_MINUS_SIGNS = "\u2212\u2012\u2013\ufe63\uff0d"
#: signs written beside a number that make it text to the reader: currencies before or
#: after it, percent after it ("$151.00", "3,50 €", "12%")
_CURRENCIES = "$\u20ac\u00a3\u00a5"
#: the characters a number of :data:`_NOTATIONS` is written with (a quick first test)
_NUMBERISH = re.compile(rf"[\d\s,.+\-eE'\u2019_{_MINUS_SIGNS}{re.escape(_CURRENCIES)}%]{{1,64}}")
#: each notation the reader does not take: how it writes numbers, and the fix
_NOTATIONS = {
    "grouped": ("written with thousands separators", "remove the separators (3456, not 3,456)"),
    "spaced": ("written with spaces, apostrophes or underscores between digit groups",
               "remove them (3456, not 3 456 or 3'456)"),
    # "171,006": 171006, or 171.006 with a decimal comma; only the user knows
    "grouped?": ("written with thousands separators", "remove the separators (3456, not "
                 "3,456), or if the commas are decimal commas, write a decimal point (3.456)"),
    "comma": ("written with a decimal comma", "write them with a decimal point (3.5, not 3,5)"),
    "minus": ("written with a minus sign other than '-' (U+2212 or a dash)",
              "replace it with the plain '-' (hyphen-minus)"),
    "space": ("written with non-breaking or other non-ASCII spaces",
              "remove those spaces (a spreadsheet's thousands or padding spaces)"),
    "unit": ("written with a currency or percent sign",
             "write them as plain numbers (151.0, not $151.00; 12, not 12%)"),
    "hex": ("written in hexadecimal", "write them as decimal numbers (26, not 0x1A)"),
}
#: a whole number in hexadecimal, as Python and C write it: "0x1A", "-0X10"; at most 64
#: digits, whose decimal text stays within Python's 4,300 (a longer one raised its own error)
_HEX = re.compile(r"[+-]?0[xX][0-9a-fA-F]{1,64}")


def _without_unit(text: str) -> tuple[str, bool]:
    """``text`` without a currency sign before or after its number or a percent sign after
    it (a sign before either kept: "-$5" is "-5"), and whether it had one."""
    sign, rest = (text[0], text[1:]) if text[:1] in "+-" + _MINUS_SIGNS else ("", text)
    if rest[:1] in _CURRENCIES:
        return sign + rest[1:].lstrip(" "), True
    if rest[-1:] and rest[-1] in _CURRENCIES + "%":
        return sign + rest[:-1].rstrip(" "), True
    return text, False


def _notation(cell: Any) -> tuple[str, str] | None:
    """``(notation, the number as the reader takes it)`` for a text cell that is a number
    in a notation of :data:`_NOTATIONS` (the first problem it has), else None: read as
    text, a column of them became one-hot levels, or row names that were dropped."""
    if isinstance(cell, str) and _HEX.fullmatch(cell.strip(" \t")):
        return "hex", str(int(cell.strip(" \t"), 16))
    if not isinstance(cell, str) or not _NUMBERISH.fullmatch(cell):  # text: ruled out fast
        return None
    text, unit = _without_unit(cell.strip(" \t"))
    if _GROUPED.fullmatch(text) and not re.match(r"[+-]?0,", text):  # "0,126": a comma
        return "unit" if unit else "grouped", text.replace(",", "")
    if _SPACED.fullmatch(text):
        return "unit" if unit else "spaced", re.sub(r"[ '\u2019_]", "", text).replace(",", ".")
    kind = "unit" if unit else None
    # non-breaking and other non-ASCII spaces, at the ends or grouping digits ("3\u202f456")
    plain = "".join(ch for ch in text if ch in " \t" or not ch.isspace())
    if plain != text:
        kind = "space"
    if plain[:1] in _MINUS_SIGNS:
        plain, kind = "-" + plain[1:], kind or "minus"
    if _DECIMAL_COMMA.fullmatch(plain):
        plain, kind = plain.replace(",", "."), kind or "comma"
    return (kind, plain) if kind and _PLAIN_NUMBER.fullmatch(plain) else None


def _notations(cells: pd.Series) -> tuple[np.ndarray, pd.Series, str | None]:
    """For text cells of one column: which are numbers in a notation of :data:`_NOTATIONS`,
    the cells as the reader would take them (the others unchanged), and the column's
    notation (a decimal comma where any cell has one: "1,234" among "0,5" is one too)."""
    found = [_notation(v) for v in cells]
    foreign = np.array([k is not None for k in found], dtype=bool)
    plain = pd.Series([v if k is None else k[1] for v, k in zip(cells, found, strict=True)],
                      index=cells.index, dtype=object)
    kinds = {k[0] for k in found if k is not None}
    kind = "comma" if "comma" in kinds else next((k[0] for k in found if k is not None), None)
    if kind == "grouped" and all(_ONE_GROUP.fullmatch(v.strip(" \t")) for v in cells[foreign]):
        kind = "grouped?"
    return foreign, plain, kind


def _notation_error(subject: str, cells: pd.Series, kind: str, tail: str) -> ParameterError:
    """The error for ``cells`` (text cells of one column) written in the notation ``kind``."""
    written, fix = _NOTATIONS[kind]
    found = [_notation(v) for v in cells]
    first = next(i for i, k in enumerate(found) if k is not None and k[0] == kind.rstrip("?"))
    n_more = sum(k is not None for k in found) - 1
    return ParameterError(
        f"{subject} holds numbers {written} ({cells.iloc[first]!r:.40} in row "
        f"{cells.index[first]}, and {n_more} more): {fix} so that they are read as numbers"
        f"{tail}", "X" if subject.startswith("column") else "task")


def _check_notation(c: Any, present: pd.Series, bad: np.ndarray, what: str) -> None:
    """Refuse a text column of numbers written in a notation the reader does not take
    (:func:`_notation`: thousands separators, a decimal comma, a typographic minus,
    non-breaking spaces): read as text, it became levels, or (a different one in every
    row) was set aside as row names, with a warning that called it an id."""
    if not bad.any():
        return
    foreign, _, kind = _notations(present[bad])
    if kind is None or \
            100 * (len(present) - int((~foreign).sum())) < MOSTLY_NUMERIC_PERCENT * len(present):
        return
    if kind == "hex" and bad.all():  # hexadecimal throughout: codes (0x80070005), as levels
        return
    raise _notation_error(f"column {c!r} of the {what}", present[bad], kind,
                          "; a column meant as text must be text throughout.")


#: a date, a date and time, or a time of day as a CSV holds it: 2024-01-05, 2024/1/5,
#: 05.01.2024, 1/5/2024, 2024-01-05 13:00, 2024-01-05T13:00:00.5+01:00, 13:00:05, 1:05 PM
_DATE_TEXT = re.compile(
    r"(?:(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4})"
    r"(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?: ?[AaPp][Mm])?)?"
    r"|\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?: ?[AaPp][Mm])?)"
    r"(?: ?(?:Z|UTC|[+-]\d{2}:?\d{2}))?")


def _is_date_text(cell: Any) -> bool:
    """Whether ``cell`` is a date or time written as text (:data:`_DATE_TEXT`) that names a
    real one (not 2024-13-45)."""
    if not isinstance(cell, str) or not _DATE_TEXT.fullmatch(cell.strip()):
        return False
    with warnings.catch_warnings():  # "Could not infer format": a date anyway
        warnings.simplefilter("ignore")
        return pd.notna(pd.to_datetime(cell.strip(), errors="coerce", format="mixed"))


def _check_dates(c: Any, present: pd.Series, bad: np.ndarray, what: str) -> None:
    """Refuse a text column of dates or times (``MOSTLY_NUMERIC_PERCENT`` % of its cells or
    more; ``bad``: its cells that are not numbers): read as text, each date was a level of
    its own, or (a different one in every row) the column was set aside as row names,
    never a point in time, while a datetime64 or Parquet date column is refused."""
    cells = present[bad]
    if not any(_is_date_text(v) for v in cells.iloc[:20]):
        return  # the first cells that are not numbers are no dates: another column's kind
    # the rest by their form alone: parsing each took seconds on 100,000 rows
    dates = cells.map(lambda v: isinstance(v, str) and _DATE_TEXT.fullmatch(v.strip())
                      is not None).to_numpy(dtype=bool)
    if 100 * int(dates.sum()) < MOSTLY_NUMERIC_PERCENT * len(present):
        return
    first = int(np.flatnonzero(dates)[0])
    ids = (" (or name the rows by it: the command's --id-column, X's index in Python)"
           if present.is_unique else "")
    raise ValueError(
        f"column {c!r} of the {what} holds dates or times written as text "
        f"({cells.iloc[first]!r:.40} in row {cells.index[first]}, and "
        f"{int(dates.sum()) - 1} more): as text each is a level of its own, not a point in "
        f"time; {_TIME_FIX}{ids}.")


def _large_whole(X: pd.DataFrame, columns: list[Any]) -> list[Any]:
    """The ``columns`` of ``X`` that may hold whole numbers beyond ``EXACT_FLOATS``: integer
    columns that do, found at once (one Series per column took seconds on wide files), and
    columns of number objects."""
    dtypes = X[columns].dtypes if columns else pd.Series(dtype=object)
    ints = [c for c, d in zip(columns, dtypes, strict=True) if pd.api.types.is_integer_dtype(d)]
    large: list[Any] = []
    if ints:
        part = X[ints]
        beyond = (part.max() > EXACT_FLOATS) | (part.min() < -EXACT_FLOATS)
        large = [c for c, b in zip(ints, beyond.to_numpy(), strict=True) if b]
    return large + [c for c, d in zip(columns, dtypes, strict=True)
                    if pd.api.types.is_object_dtype(d)]


def _check_finite(num: pd.DataFrame, what: str = "training data") -> None:
    """Refuse inf in a numeric column, naming the column, the row (its label) and, for
    held-out data (``what``), its file: "in row 3" of a --val file read as TRAIN's row 3."""
    values = num.to_numpy()
    bad = np.isinf(values)
    if bad.any():
        pos, col = (int(v[0]) for v in np.nonzero(bad))
        raise ValueError(
            f"column {num.columns[col]!r}{_of_held_out(what)} has {values[pos, col]} in row "
            f"{num.index[pos]}: "
            f"replace it with a finite value or drop the row{_BEYOND_FLOATS}.")


def _too_large(scaled: np.ndarray) -> tuple[int, int] | None:
    """``(row, column)`` of a standardised value that is not finite, or the largest of a
    column whose own spread overflows (values near 1e154 and up), or None. The training
    rows' spread can leave a held-out row's 1e307 finite; the valuation measures each set
    of rows' spread again and refused it as "X_val's column 0" (an encoded column, of an
    argument the command has not)."""
    bad = ~np.isfinite(scaled)
    if bad.any():
        rows, cols = np.nonzero(bad)
        return int(rows[0]), int(cols[0])
    large = np.flatnonzero(np.maximum(scaled.max(axis=0, initial=0.0),
                                      -scaled.min(axis=0, initial=0.0)) > SPREAD_SAFE)
    for col in large:
        try:
            column_spread(scaled[:, [col]], [col])
        except ValueError:
            return int(np.argmax(np.abs(scaled[:, col]))), int(col)
    return None


def _of_held_out(what: str) -> str:
    """" of the validation data" after a column's name for held-out rows (``what``) given
    apart from TRAIN; "" for the training data (TRAIN's own held-out rows included)."""
    return "" if what == "training data" else f" of the {what}"


# -- holding rows out ---------------------------------------------------------
def holdout_split(
    y: np.ndarray, fractions: tuple[float, float], classification: bool, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """``(train, val, test, stratified)`` row positions.

    ``fractions = (val, test)`` of all rows; ``test`` may be 0. Stratified by
    class for classification when every class has enough rows, else random.
    """
    val_f, test_f = fractions
    for value, name in ((val_f, "val_fraction"), (test_f, "test_fraction")):
        check_number(value, name, hint="It is a share of the rows, e.g. 0.25.")
    if not 0 < val_f < 1 or not 0 <= test_f < 1 or val_f + test_f >= 1:
        raise ParameterError(
            f"`val_fraction` {val_f} and `test_fraction` {test_f} must be in (0, 1) and [0, 1) "
            "with a sum below 1.", "val_fraction", "test_fraction"
        )
    rows = np.arange(len(y))
    n_hold = round((val_f + test_f) * len(y))
    n_val = round(val_f * len(y))
    if n_val < 1 or len(y) - n_hold < 2 or (test_f > 0 and n_hold - n_val < 1):
        raise ParameterError(
            f"{len(y)} rows are too few to hold out {val_f:g} for validation"
            + (f" and {test_f:g} for test" if test_f else "")
            + ": use more rows or give validation rows (`X_val`).", "X_val"
        )
    stratify = _stratifies(y, classification)
    train, held = _cut(y, rows, n_hold, seed, stratify)
    if test_f > 0:
        val_idx, test_idx = _cut(y, held, n_hold - n_val, seed + 1, stratify)
    else:
        val_idx, test_idx = held, np.empty(0, dtype=np.int64)
    return train, val_idx, test_idx, stratify


def swapped_split(
    y: np.ndarray, fractions: tuple[float, float], classification: bool, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """:func:`holdout_split` with the roles swapped: the rows it holds out are the
    training rows, and the rows it keeps are held out, shared between validation and
    test in the proportion ``val : test`` (all validation when ``test`` is 0).

    Together with :func:`holdout_split` every row is a training row of exactly one of
    the two splits (``find_harmful(every_row=True)``).
    """
    kept, val_idx, test_idx, stratify = holdout_split(y, fractions, classification, seed)
    train = np.sort(np.concatenate([val_idx, test_idx]))
    val_f, test_f = fractions
    if len(train) < 2:  # holdout_split keeps >= 2 rows and holds out >= 1 per role
        raise ParameterError(
            f"{len(y)} rows hold out {len(train)} for validation, too few to value them "
            "as training rows too: use more rows, or every_row=False.", "every_row")
    if test_f == 0:
        return train, kept, np.empty(0, dtype=np.int64), stratify
    # kept >= 2 rows: one at least for each role
    n_test = min(max(1, round(len(kept) * test_f / (val_f + test_f))), len(kept) - 1)
    new_val, new_test = _cut(y, kept, n_test, seed + 2, stratify)
    return train, new_val, new_test, stratify


def _stratifies(y: np.ndarray, classification: bool) -> bool:
    """Stratify by class when every class has a few rows (else a split may fail)."""
    return classification and bool(np.min(np.unique(y, return_counts=True)[1]) >= 3)


def _cut(y: np.ndarray, idx: np.ndarray, size: int, seed: int,
         stratify: bool) -> tuple[np.ndarray, np.ndarray]:
    """``idx`` split into the rest and ``size`` rows, both sorted."""
    strat = y[idx] if stratify else None
    try:
        a, b = train_test_split(idx, test_size=size, random_state=seed, stratify=strat)
    except ValueError:  # a class too small for this cut: random instead
        a, b = train_test_split(idx, test_size=size, random_state=seed)
    return np.sort(a), np.sort(b)
