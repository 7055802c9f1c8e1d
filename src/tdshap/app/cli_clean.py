"""``tdshap clean`` and ``tdshap value``: a user's own table, start to finish.

Bad input ends with one line ``Error: ...`` on stderr and exit status 2,
before any output or folder exists: the options, the files, the model (an
import path must name an estimator class of an allowed package, checked
before it is built), the settings against N, a few timed fits and the
output folder are all checked first. Warnings raised on the way are folded
into that line. The output folder is owned, locked and published as one set
(:mod:`tdshap.app.outdir`).
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from tdshap._io import is_disk_full, os_reason
from tdshap._validation import names, printable
from tdshap.app.every_row import parts_frame, plan_parts
from tdshap.app.harmful import (
    DEFAULT_MAX_ITER,
    DEFAULT_TEST_FRACTION,
    DEFAULT_VAL_FRACTION,
    HarmfulRun,
    PreparedData,
    TDShapOptions,
    check_fractions_apply,
    prepare,
)
from tdshap.app.models import ALLOWED_PACKAGES, DEFAULT_MODEL, MODELS, parse_params
from tdshap.app.outdir import OutputFolder
from tdshap.app.plan import DEFAULT_MAX_FAILED_FRACTION, RunPlan, execute, plan
from tdshap.app.report import parts_markdown, parts_report, plot_values
from tdshap.app.tabular import (
    cleaned_name,
    is_parquet,
    plain_value,
    read_table,
    write_rows_like,
)
from tdshap.app.valuer import METHODS
from tdshap.methods.apt.thresholds import DEFAULT_EPS_FACTOR
from tdshap.methods.checkpoint.files import is_checkpoint_file, read_checkpoint
from tdshap.methods.stopping import MAX_ROUNDS
from tdshap.utility.fast.approximate_search import SEARCHES

VALUES_COLUMNS = ["value", "ci_low", "ci_high", "n_pulls", "is_harmful", "removed", "part"]
#: The library's parameter names and the options that set them (for its error messages).
FLAGS = {
    "params": "--params", "model": "--model", "allow_import": "--allow-import",
    "task": "--task", "metric": "--metric", "n_min": "--n-min", "k": "--k",
    "time_budget": "--time-budget",
    "max_failed_fraction": "--max-failed-fraction", "impute": "--impute",
    "val_fraction": "--val-fraction", "test_fraction": "--test-fraction", "X_val": "--val",
    "X_test": "--test", "X": "TRAIN",
    "eps": "--eps", "tau": "--tau", "max_iter": "--max-iter",
    "checkpoint_every": "--checkpoint-every", "method": "--method", "resume": "--resume",
    "neighbor_search": "--neighbor-search", "every_row": "--every-row",
    # the seed splits the rows and seeds the valuation (the library's random_state)
    "seed": "--seed", "random_state": "--seed", "target": "--target",
    "id_column": "--id-column", "n_jobs": "--jobs",
}


class InputError(click.ClickException):
    """A problem with the user's input: one line on stderr, exit status 2."""

    exit_code = 2


class AutoOr(click.ParamType):
    """``"auto"`` or a finite number (float, or int when ``integer``) of at least ``low``."""

    def __init__(self, integer: bool = False, low: float | None = None) -> None:
        self.integer = integer
        self.low = low
        self.name = "auto|int" if integer else "auto|float"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if value == "auto":
            return value
        try:
            number = value if isinstance(value, int | float) else (
                int(value) if self.integer else float(value))
        except ValueError:
            self.fail(f"{value!r} is not 'auto' or a {'whole ' if self.integer else ''}number",
                      param, ctx)
        # a whole number has no inf/nan (and one beyond float range breaks np.isfinite)
        finite = isinstance(number, int) or bool(np.isfinite(number))
        if not finite or (self.low is not None and number < self.low):
            self.fail(f"{value!r} must be 'auto' or a number >= {self.low:g}"
                      if self.low is not None else f"{value!r} is not a finite number",
                      param, ctx)
        return number


class FiniteFloatRange(click.FloatRange):
    """A ``click.FloatRange`` that also refuses nan and inf (they pass its comparisons)."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        number = super().convert(value, param, ctx)
        if not np.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class GivenPath(click.Path):
    """A ``click.Path`` that refuses an empty one: ``Path("")`` is ``Path(".")``, so an
    empty --out would silently write into the current folder."""

    def __init__(self) -> None:
        super().__init__(path_type=Path)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str) and not value:
            self.fail(f"{value!r} is an empty path: name a file or folder ('.' is the "
                      "current folder)", param, ctx)
        return super().convert(value, param, ctx)


def _options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options ``clean`` and ``value`` share."""
    opts = [
        click.argument("train", type=GivenPath()),
        click.option("--target", required=True, help="Name of the target column."),
        click.option("--val", "val_path", type=GivenPath(),
                     help="Validation file (same columns). Default: hold out --val-fraction."),
        click.option("--test", "test_path", type=GivenPath(),
                     help="Test file for an honest before/after score (optional)."),
        click.option("--val-fraction", type=FiniteFloatRange(0, 1, min_open=True,
                                                             max_open=True),
                     default=DEFAULT_VAL_FRACTION,
                     show_default=True,
                     help="Without --val: share of TRAIN's rows held out for validation "
                     "(stratified by class for classification)."),
        click.option("--test-fraction", type=FiniteFloatRange(0, 1, max_open=True),
                     default=DEFAULT_TEST_FRACTION,
                     show_default=True,
                     help="Without --val and --test: share of TRAIN's rows held out for the "
                     "test curve and score; 0 values more rows but then the after score is "
                     "measured on validation only. `tdshap value` holds out none unless given."),
        click.option("--every-row", is_flag=True,
                     help="Without --val: value the held-out rows too, in a second part that "
                     "swaps the roles (part 1's rows held out); twice the work. values.csv "
                     "gets a part column; result, values and curve files of part 2 end in "
                     "-part2; cleaned.csv drops what either part removes."),
        click.option("--task", type=click.Choice(["classification", "regression"]),
                     help="Default: inferred from the target (text or <= 20 whole-number "
                     "values: classification), and said so."),
        click.option("--model", default=DEFAULT_MODEL, show_default=True,
                     help=f"One of {', '.join(sorted(MODELS))}, or an estimator class "
                     "package.module:Class from "
                     f"{', '.join(ALLOWED_PACKAGES)} (or --allow-import)."),
        click.option("--params", help='Model parameters as a JSON object of numbers, text, '
                     'true/false, null or lists, e.g. \'{"max_depth": 3}\'.'),
        click.option("--allow-import", "allow_import", multiple=True, metavar="PACKAGE",
                     help="Also allow --model classes from this package (importing it runs "
                     "its code: only for packages you trust). Repeatable."),
        click.option("--metric", help="Default: accuracy (classification), neg_mae "
                     "(regression); or any scikit-learn scorer name."),
        click.option("--method", type=click.Choice(METHODS), default="auto", show_default=True,
                     help="auto: for a k-NN classifier on at most 5,000 rows, exact k-NN "
                     "Shapley "
                     "with the training and validation rows as queries and a cross-fitted "
                     "cut (knn_shapley; knn_shapley_train: the training rows only); for a "
                     "tree, random forest, MLP or linear classifier on at most 5,000 rows, the "
                     "same for a 5-NN "
                     "of the standardised rows standing in for it (knn_shapley_proxy; the "
                     "cut refits your model) when that 5-NN predicts the validation rows about "
                     "as well as your model and its neighbours know the labels; else, and "
                     "for every regressor, thresholding "
                     "Data-OOB (tdoob: the APT bandit "
                     "with out-of-bag rewards); knn_oob: a k-NN classifier's "
                     "out-of-bag values in closed form; tdshap: the paper's TDShap with "
                     "--metric."),
        click.option("--neighbor-search", type=click.Choice(SEARCHES), default="exact",
                     show_default=True,
                     help="k-NN neighbour lists of the valuation: exact (brute force, grows "
                     "with N squared) or approximate (a graph index, grows about N log N; "
                     "for 100,000 rows and more; needs pip install 'tdshap[scale]'). "
                     "Cleansing always searches exactly."),
        click.option("--tau", type=AutoOr(), default="auto", show_default=True,
                     help="Threshold in the valuation's units; auto: 1 / number of "
                     "classes (thresholding Data-OOB, classification), a robust outlier cut "
                     "below the median (regression), -eps (tdshap)."),
        click.option("--eps", type=AutoOr(low=0), default="auto", show_default=True,
                     help=f"Precision in metric units; auto: {DEFAULT_EPS_FACTOR:g} x spread "
                     "of the first pulls."),
        click.option("--k", type=AutoOr(integer=True, low=1), default="auto", show_default=True,
                     help="Rows valued per chain; auto: min(50, N // 3)."),
        click.option("--n-min", type=AutoOr(integer=True, low=0), default="auto",
                     show_default=True,
                     help="Smallest prefix; auto: min(100, N // 3)."),
        click.option("--max-iter", type=click.IntRange(0, MAX_ROUNDS), default=DEFAULT_MAX_ITER,
                     show_default=True, help="Rounds after every row was pulled once."),
        click.option("--time-budget", type=FiniteFloatRange(min=0, min_open=True),
                     help="Stop valuing after this many seconds (refused up front when the "
                     "first pass over the rows alone would take longer; checked between "
                     "fits, so one fit longer than the budget overruns it)."),
        click.option("--max-failed-fraction", type=FiniteFloatRange(0, 1),
                     default=DEFAULT_MAX_FAILED_FRACTION, show_default=True,
                     help="Stop with an error when more than this share of the valuation's "
                     "(or the cleansing's) fits fail."),
        click.option("--checkpoint-every", type=FiniteFloatRange(min=0), default=10.0,
                     show_default=True, metavar="SECONDS",
                     help=f"Save the run's state to OUT/{CHECKPOINT_NAME} this often (0: every "
                     "round); the first save follows the first pass over the rows."),
        click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0,
                     show_default=True),
        click.option("--cut", type=click.Choice(["one-se", "paper"]), default="one-se",
                     show_default=True,
                     help="How many rows cleansing removes. one-se: only when the validation "
                     "gain beats two bootstrap SEs, and only rows credibly below tau (nothing "
                     "when the evidence is not there), or the paper's larger cut where "
                     "cross-validation over the validation rows prefers it (values that "
                     "never saw them, or the proxy's, each fold valued without it; no larger "
                     "than the largest cut a fold chose); paper: the "
                     "best validation score (the paper's rule; "
                     "chases validation noise)."),
        click.option("--jobs", type=int, default=-1, show_default=True,
                     help="Workers for the cleansing curve's refits (-1: every core; 1: "
                     "in-process), started only where the refits left would take 5 s or more "
                     "in-process; the answer is the same whatever --jobs."),
        click.option("--id-column", help="Column that names the rows (not a feature); "
                     "default: the row number in TRAIN, from 0."),
        click.option("--impute", is_flag=True,
                     help="Fill missing feature values: median (numbers), most frequent level "
                     "(text), of the training rows."),
        click.option("--out", type=GivenPath(), default=Path("tdshap-out"),
                     show_default=True, help="Output folder: a new one, or one holding only "
                     "an earlier run's outputs (listed in its .tdshap-manifest.json)."),
        click.option("--force", is_flag=True,
                     help="Write into an --out that holds other files too (outputs replace "
                     "files of the same names; input files are never written)."),
        click.option("--resume", is_flag=True,
                     help=f"Continue the run saved in OUT/{CHECKPOINT_NAME} (a TDShap run "
                     "saves its state there as it goes) with the same data and settings; a larger "
                     "--max-iter or --time-budget extends it."),
        click.option("--progress/--no-progress", default=True, show_default=True),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


CHECKPOINT_NAME = "run.tdshap"
#: the checkpoint of each part of --every-row (part 1's is the usual one)
CHECKPOINT_NAMES = (CHECKPOINT_NAME, "run-part2.tdshap")


def _part_name(name: str, part: int) -> str:
    """Part 2's copy of an output (``values.png`` -> ``values-part2.png``)."""
    if part == 1:
        return name
    stem, dot, ext = name.partition(".")
    return f"{stem}-part{part}{dot}{ext}"


#: pandas' name for a first column without a header: the index DataFrame.to_csv writes.
UNNAMED_INDEX = "Unnamed: 0"
#: An id that reads as the same whole number it is written as ("7", not "007", "7.0" or "+7").
_WHOLE = re.compile(r"0|-?[1-9][0-9]*")
#: CSV values are read without the spaces that follow a separator (" 007" is "007")
_SPACES_NOTE = " (a CSV value's leading spaces are not part of it: ' 007' reads as '007')"
#: why a CSV file's id may be missing though its cell is not empty: "NA" (Namibia's code)
_MISSING_IDS_NOTE = (" (a CSV file's cells NA, N/A, null, None, NaN and empty ones are read as "
                     "missing: an id of such a name needs another, e.g. 'N.A.')")


def _near_name(columns: pd.Index, name: str, label: str) -> str:
    """The column ``name`` was likely meant for, differing only in case or in spaces at its
    ends, for an error: a Parquet file keeps such spaces ("y "), and the list of columns
    showed none of them."""
    key = name.strip().casefold()
    near = [c for c in columns if isinstance(c, str) and c.strip().casefold() == key]
    if not near:
        return ""
    flag = "--target" if label == "target" else "--id-column"
    return f"; its column {near[0]!r} differs only in case or spaces: pass {flag} {near[0]!r}"


def _split_columns(frame: pd.DataFrame, target: str, id_column: str | None, what: str,
                   path: Path) -> tuple[pd.DataFrame, pd.Series]:
    if id_column is not None and id_column in frame.index.names:
        # the row ids a Parquet file stores as its index; beside a column of the same name
        # the column was taken, silently, where the user may have meant the index
        if id_column in frame.columns:
            raise ValueError(f"id column {id_column!r} of {what} {path} is ambiguous: it names "
                             "both a column and the pandas row index saved in the file: rename "
                             "one of them (e.g. df.rename_axis('row_id') before to_parquet) "
                             "and pass --id-column with the name of the one that holds the "
                             "ids.")
        frame = frame.reset_index(level=id_column)
    for col, label in ((target, "target"), (id_column, "id")):
        if col is not None and col not in frame.columns:
            raise ValueError(f"{label} column {col!r} is not in {what} {path} "
                             f"(its columns: {names(frame.columns, 10)})"
                             f"{_near_name(frame.columns, col, label)}.")
    if id_column in VALUES_COLUMNS:
        # values.csv names its first column by the ids' column: "value,value,ci_low,...",
        # and values["value"] read the ids
        raise ValueError(f"id column {id_column!r} of {what} {path} has the name of a column "
                         f"tdshap writes beside it in values.csv ({', '.join(VALUES_COLUMNS)}):"
                         " values.csv would hold two columns of that name; rename the id "
                         "column (e.g. to 'id') and pass --id-column with the new name.")
    auto = (_has_row_index(frame, id_column) and target != UNNAMED_INDEX
            and not frame[UNNAMED_INDEX].isna().any()
            and not frame[UNNAMED_INDEX].duplicated().any())
    if auto:
        # the row index DataFrame.to_csv writes by default: the rows' own names, as
        # read_csv(index_col=0) reads them; as a feature it would be the row number
        id_column = UNNAMED_INDEX
    for i, col in enumerate(frame.columns):
        # pandas names a column without a header "Unnamed: <position>": mostly the row index
        # that DataFrame.to_csv writes by default, which as a feature would be the row number
        if col == f"Unnamed: {i}" and col not in (target, id_column):
            if frame[col].isna().all():  # not a row index: a separator that ends every line
                raise ValueError(f"column {i + 1} of {what} {path} has no name and no values (a "
                                 "separator at the end of the lines?): remove the trailing "
                                 "separators, or give the column a name and values.")
            # pandas writes its row index first; a later column is one whose name is blank
            why = (" (pandas writes its row index so; to_csv(index=False) leaves it out)"
                   if i == 0 else " (its header cell is empty or blank)")
            raise ValueError(f"column {i + 1} of {what} {path} has no name{why}: pass "
                             f"--id-column {col!r} to name the rows by it, or give it a name "
                             "to use it as a feature.")
    if id_column is not None:
        ids = frame[id_column]
        if ids.isna().any():
            row = int(np.flatnonzero(ids.isna().to_numpy())[0])
            raise ValueError(f"id column {id_column!r} of {what} {path} has {int(ids.isna().sum())}"
                             f" missing ids (first at data row {row}): give every row an id"
                             f"{_MISSING_IDS_NOTE if not is_parquet(path) else ''}.")
        if ids.duplicated().any():
            dup = plain_value(ids[ids.duplicated()].iloc[0])
            raise ValueError(f"id column {id_column!r} of {what} {path} repeats ids (e.g. "
                             f"{dup!r}, {int(ids.duplicated().sum())} repeats): ids must be "
                             f"unique{_SPACES_NOTE if not is_parquet(path) else ''}.")
        if not is_parquet(path) and ids.map(
                lambda v: isinstance(v, str) and _WHOLE.fullmatch(v) is not None).all():
            ids = pd.to_numeric(ids)  # read as text (tabular.read_table): plain numbers stay so
        frame = frame.set_axis(pd.Index(ids, name="row" if auto else id_column)).drop(
            columns=[id_column])
    else:
        frame = frame.set_axis(pd.RangeIndex(len(frame), name="row"))
    if frame.shape[1] < 2:
        also = (" and its unnamed first column (the row index)" if auto else
                f" and the id column {id_column!r}" if id_column is not None else "")
        raise ValueError(f"{what} {path} has no feature columns besides the target {target!r}"
                         f"{also}: the model needs at least one column to learn from.")
    return frame.drop(columns=[target]), frame[target]


def _read(path: Path, target: str, id_column: str | None, what: str,
          reference: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    from tdshap.app.tabular import check_same_columns

    frame = read_table(path, what, text=(id_column,) if id_column is not None else ())
    if reference is not None:
        # a pandas row index names the rows of its own file: one file may have it, one not
        check_same_columns(_without_row_index(reference, id_column),
                           _without_row_index(frame, id_column), what)
    X, y = _split_columns(frame, target, id_column, what, path)
    return frame, X, y


def _has_row_index(frame: pd.DataFrame, id_column: str | None) -> bool:
    """Whether ``frame``'s first column is pandas' unnamed row index (``UNNAMED_INDEX``) and
    no ``--id-column`` was given: it then names the rows (:func:`_split_columns`)."""
    return id_column is None and frame.shape[1] > 0 and frame.columns[0] == UNNAMED_INDEX


def _without_row_index(frame: pd.DataFrame, id_column: str | None) -> pd.DataFrame:
    """``frame`` without the unnamed first column that names its rows, if it has one."""
    return frame.iloc[:, 1:] if _has_row_index(frame, id_column) else frame


#: First characters that make a spreadsheet read a cell as a formula (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(cell: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula, prefixed with ``'`` (as
    OWASP advises); anything else as it is."""
    return "'" + cell if isinstance(cell, str) and cell.startswith(FORMULA_STARTS) else cell


def _write_outputs(runs: tuple[HarmfulRun, ...], tmp: Path, train_path: Path,
                   frame: pd.DataFrame, inputs: dict[str, str],
                   id_column: str | None = None) -> list[str]:
    table = parts_frame(runs)
    cols = [c for c in VALUES_COLUMNS if c in table]
    values = table[cols]
    if not pd.api.types.is_numeric_dtype(values.index):  # --id-column's ids: the user's text
        values = values.set_axis(values.index.map(spreadsheet_safe))
    # the ids' column as the input names it (the table's index may be renamed, e.g.
    # "stderr_index" beside its column "stderr", which values.csv does not hold)
    label = runs[0].data.train_index.name
    values.to_csv(tmp / "values.csv", index_label=spreadsheet_safe(str(label or "row")))
    written = ["values.csv"]
    for part, run_ in enumerate(runs, 1):
        names = [_part_name(n, part) for n in ("result.json", "values.png", "curve.png")]
        run_.result.save(tmp / names[0])
        plot_values(run_, tmp / names[1])
        written += names[:2]
        if run_.cleansing is not None:
            # the plot shows it as text, not TeX (tdshap.cleansing.plain_text)
            title = f"{train_path.name}: {run_.model_name}, {run_.data.task}" + (
                f" (part {part} of {len(runs)})" if len(runs) > 1 else "")
            run_.cleansing.plot(tmp / names[2], title=title)
            written.append(names[2])
    removals = [r.data.train_rows[r.cleansing.removed] for r in runs
                if r.cleansing is not None]
    if removals:  # every part cleanses, or none does
        removed = np.concatenate(removals)
        keep = np.setdiff1d(np.arange(len(frame)), removed)
        name = cleaned_name(train_path)
        write_rows_like(train_path, frame, keep, tmp / name,
                        (id_column,) if id_column is not None else ())
        written.append(name)
    (tmp / "report.md").write_text(parts_markdown(runs, inputs), encoding="utf-8")
    return [*written, "report.md"]


def _usage_error(err: click.UsageError) -> InputError:
    """click's usage error as one ``Error:`` line (:func:`one_line`)."""
    return InputError(one_line(f"{err.format_message()} (see --help)"))


class OneLineCommand(click.Command):
    """A command whose option errors are one ``Error:`` line too (no usage text)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as err:
            raise _usage_error(err) from None


class OneLineGroup(click.Group):
    """The ``tdshap`` group: an unknown command or option is one ``Error:`` line too (it
    printed the usage and a hint around it); no command at all still prints the help."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as err:
            raise _usage_error(err) from None

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as err:
            raise _usage_error(err) from None


def _outputs(do_cleanse: bool, train: Path, parts: int = 1) -> list[str]:
    names = ["values.csv", "result.json", "values.png", "report.md"]
    if do_cleanse:
        names += [cleaned_name(train), "curve.png"]
    per_part = ("result.json", "values.png", "curve.png")
    return names + [_part_name(n, p) for p in range(2, parts + 1) for n in per_part
                    if n in names]


def _same_file(a: Path | None, b: Path | None) -> bool:
    try:
        return a is not None and b is not None and a.samefile(b)
    except OSError:  # a path that cannot be read is reported when it is read
        return False


def _check_options(opts: dict[str, Any], given: set[str]) -> None:
    if opts["id_column"] is not None and opts["id_column"] == opts["target"]:
        raise ValueError(f"--id-column {opts['id_column']!r} is also the --target: the ids "
                         "name the rows, the target is what the model learns; give two columns.")
    # held-out rows that are the training rows judge nothing: the cut and the after
    # score would be measured on the rows the model was fitted to
    train, val, test = opts["train"], opts["val_path"], opts["test_path"]
    for flag, path in (("--val", val), ("--test", test)):
        if _same_file(train, path):
            raise ValueError(f"{flag} {path} is the training file itself: its rows would judge "
                             "the model fitted to them; give a file of other rows, or leave "
                             f"{flag} out to hold out a share of TRAIN.")
    if _same_file(val, test):
        raise ValueError(f"--val and --test name the same file ({val}): the cut would be "
                         "chosen and judged on the same rows; give two files, or leave --test "
                         "out to hold out a share of TRAIN.")
    # a share of TRAIN beside the file of those rows: the library's check, in options
    val_f, test_f = (opts[key] if key in given else None
                     for key in ("val_fraction", "test_fraction"))
    check_fractions_apply(val_f, test_f, opts["val_path"] is not None,
                          opts["test_path"] is not None)


def _origin(opts: dict[str, Any], test_fraction: float) -> dict[str, Any]:
    """Where a run's rows come from, saved in its checkpoint: a fingerprint of the input
    files' bytes and the options that read and split them. A resume of other rows is
    then told as the option that changed (``--seed``), not as "different data"."""
    h = hashlib.blake2b(digest_size=16)
    for role in ("train", "val_path", "test_path"):
        h.update(f"{role}:".encode())  # a --val given in one run only changes the print
        if opts[role] is not None:
            with open(opts[role], "rb") as fh:
                for block in iter(lambda: fh.read(2**20), b""):
                    h.update(block)
                h.update(f";{fh.tell()};".encode())  # where one file ends, the next begins
    options: dict[str, Any] = {"target": opts["target"], "id_column": opts["id_column"],
                               "task": opts["task"], "impute": opts["impute"]}
    if opts["val_path"] is None:  # the fractions and the seed split TRAIN only without --val
        options.update(seed=opts["seed"], val_fraction=opts["val_fraction"],
                       test_fraction=0.0 if opts["test_path"] else test_fraction)
    return {"files": h.hexdigest(), "options": options}


def _execute(do_cleanse: bool, opts: dict[str, Any]) -> None:
    ctx = click.get_current_context()
    given = {name for name in opts
             if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT}
    _check_options(opts, given)
    if not do_cleanse and "cut" in given:  # silently dropped, the user thought it applied
        raise ValueError(f"--cut {opts['cut']} chooses how many rows tdshap clean removes; "
                         "tdshap value removes none: leave --cut out, or run tdshap clean.")
    train: Path = opts["train"]
    inputs = [p for p in (train, opts["val_path"], opts["test_path"]) if p is not None]
    every_row = opts["every_row"]
    n_parts = 2 if every_row and opts["val_path"] is None else 1
    known = (*_outputs(True, Path("t.csv"), 2), "cleaned.parquet", "cleaned.tsv",
             *CHECKPOINT_NAMES)
    # a part 2 checkpoint of an earlier --every-row run goes with its outputs
    folder = OutputFolder(opts["out"], force=opts["force"], keep=CHECKPOINT_NAMES[:n_parts],
                          known=known, kept_is_ours=is_checkpoint_file)
    folder.check(inputs, _outputs(do_cleanse, train, n_parts))
    checkpoints = [folder.real / name for name in folder.keep]
    if opts["resume"]:
        for checkpoint in checkpoints:  # was "there is no checkpoint ... to continue"
            if checkpoint.is_dir():
                raise ValueError(f"--resume: {opts['out'] / checkpoint.name} is a folder, not "
                                 "a checkpoint (the file a run saves there): move or rename "
                                 "the folder, then run without --resume.")
        if not checkpoints[0].is_file():
            # "every run saves one" sent the user of a thresholding Data-OOB run or a closed
            # form (auto's k-NN Shapley), which save none, back to the run they had made
            raise ValueError(f"--resume: there is no checkpoint {opts['out'] / CHECKPOINT_NAME} "
                             "to continue; run without --resume (only a TDShap run, --method "
                             "tdshap, saves one in --out as it goes: the other methods' runs "
                             "are short).")
        for checkpoint in checkpoints:  # not a checkpoint at all: refused before any work
            if checkpoint.is_file():
                read_checkpoint(checkpoint)
    params = parse_params(opts["params"])
    target, id_col = opts["target"], opts["id_column"]
    if not is_parquet(train):  # a text file's names are read without spaces around them
        target, id_col = target.strip(), None if id_col is None else id_col.strip()
    frame, X, y = _read(train, target, id_col, "training file", None)
    if _has_row_index(frame, id_col):
        click.echo(f"rows: named by the unnamed first column of {train.name} (the row index "
                   "that pandas' to_csv writes), not used as a feature; --id-column names "
                   "another")
    others: dict[str, Any] = {}
    for key in ("val", "test"):
        path = opts[f"{key}_path"]
        if path is not None:
            _, others[f"X_{key}"], others[f"y_{key}"] = _read(
                path, target, id_col, f"{'validation' if key == 'val' else 'test'}", frame)
    options = TDShapOptions(opts["tau"], opts["eps"], opts["k"], opts["n_min"],
                            opts["max_iter"], opts["time_budget"])
    test_fraction = opts["test_fraction"] if do_cleanse or "test_fraction" in given else 0.0
    origin = _origin(opts, test_fraction)

    def prepared(swap: bool) -> PreparedData:
        return prepare(X, y, others.get("X_val"), others.get("y_val"), others.get("X_test"),
                       others.get("y_test"), task=opts["task"],
                       val_fraction=opts["val_fraction"], test_fraction=test_fraction,
                       impute=opts["impute"], seed=opts["seed"], swap=swap)

    def planned(data: PreparedData, part: int) -> RunPlan:
        checkpoint = checkpoints[part - 1]
        return plan(
            data, opts["model"], params=params, metric=opts["metric"], options=options,
            seed=opts["seed"], do_cleanse=do_cleanse, progress=opts["progress"], given=given,
            checkpoint=checkpoint, checkpoint_every=opts["checkpoint_every"],
            # a part whose run never saved a state starts afresh
            resume=opts["resume"] and checkpoint.is_file(),
            allow_import=tuple(opts["allow_import"]),
            max_failed_fraction=opts["max_failed_fraction"], method=opts["method"],
            cut=opts["cut"].replace("-", "_"), neighbor_search=opts["neighbor_search"],
            origin=origin, n_jobs=opts["jobs"])

    plans = plan_parts(every_row, opts["val_path"] is not None, prepared, planned)
    for part, checked in enumerate(plans, 1):
        line = checked.estimate.line(opts["time_budget"])
        click.echo(_as_options(line if len(plans) == 1 else f"part {part}: {line}",
                               ("neighbor_search",)))
    # --method auto chose a method without it (each part chooses for its own rows)
    ignored = {(name, p.method): why for p in plans for name, why in p.ignored.items()}
    for (name, method), why in ignored.items():
        click.echo(_as_options(f"note: `{name}` is not used by {method} ({why}); "
                               "it was ignored.", (name,)), err=True)
    about = {"command": f"tdshap {'clean' if do_cleanse else 'value'}",
             "train": str(train), "target": target}
    about.update({k: str(opts[f"{k}_path"]) for k in ("val", "test") if opts[f"{k}_path"]})
    folder.claim()
    try:
        runs = tuple(execute(checked) for checked in plans)
        written = folder.publish(
            lambda tmp: _write_outputs(runs, tmp, train, frame, about, id_col), about)
    finally:
        folder.release()
    # the worst rows' ids are the user's text: a control character in one is shown escaped
    click.echo(printable(parts_report(runs, n_worst=5), keep="\n"))
    click.echo(f"wrote {', '.join(written)} to {folder.real}")


def _flags(err: ValueError) -> str:
    """The message with the library's parameter names shown as this command's options."""
    return _as_options(str(err), getattr(err, "params", ()))


def _as_options(text: str, names: Any) -> str:
    """``text`` with the parameters ``names`` (written `name`) shown as options."""
    for name in names:
        text = text.replace(f"`{name}`", FLAGS.get(name, name))
    return re.sub(r"`([^`]*)`", r"\1", text)


@contextmanager
def _collected_warnings() -> Iterator[Counter[str]]:
    """Warnings counted by message instead of printed: an error folds them into its line."""
    seen: Counter[str] = Counter()

    def show(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        seen[f"{category.__name__}: {str(message).splitlines()[0] if str(message) else ''}"] += 1

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        yield seen


def _warning_note(seen: Counter[str]) -> str:
    if not seen:
        return ""
    shown = "; ".join(f"{m}{f' ({n} times)' if n > 1 else ''}" for m, n in seen.most_common(3))
    return f" (warnings on the way: {shown}{'; ...' if len(seen) > 3 else ''})"


def one_line_errors(work: Callable[[], None]) -> None:
    """Run a command's ``work``: any failure ends as one ``Error:`` line (exit status 2)
    with the warnings met on the way folded in; after a success they are printed."""
    with _collected_warnings() as seen:
        try:
            work()
        except ValueError as err:
            # the message already names the problem and the fix; no traceback
            message = _flags(err)
        except BrokenPipeError:  # `| head` closed the output: it said "cannot read or
            # write: Broken pipe", also when the outputs had been published whole
            message = ("the output was closed while the run printed to it (a pipe into "
                       "`head`?): it stopped there; an output folder it had written is whole, "
                       "or untouched if it had not.")
        except OSError as err:
            where = f" {err.filename}" if err.filename else ""
            message = (f"cannot {'write' if is_disk_full(err) else 'read or write'}{where}: "
                       f"{os_reason(err)}.")
        except Exception as err:  # never a traceback: say what happened, once
            message = (f"unexpected {type(err).__name__}: {err} (please report this "
                       "with the command that caused it).")
        else:
            for line, n in seen.most_common(5):
                click.echo(printable(f"warning: {line}{f' ({n} times)' if n > 1 else ''}"),
                           err=True)
            return
    # one line, and names from a file (a column "\x1b[2J", a NUL) shown escaped, not run by
    # the terminal
    raise InputError(one_line(printable(message + _warning_note(seen)))) from None


#: the longest word of an Error line, and the longest line (a 100,000-character column name
#: quoted in a message was an Error line of 100 kB)
LONGEST_WORD, LONGEST_LINE = 200, 2000


def one_line(message: str) -> str:
    """``message`` on one line, a word longer than :data:`LONGEST_WORD` cut short, and a line
    longer than :data:`LONGEST_LINE` cut in the middle (its end says the fix)."""
    words = [w if len(w) <= LONGEST_WORD else w[:LONGEST_WORD // 2] + "..." + w[-20:]
             for w in message.split()]
    line = " ".join(words)
    if len(line) > LONGEST_LINE:
        line = line[:LONGEST_LINE * 2 // 3] + " ... " + line[-LONGEST_LINE // 3:]
    return line


def _command(do_cleanse: bool) -> Callable[..., None]:
    def body(**opts: Any) -> None:
        one_line_errors(lambda: _execute(do_cleanse, opts))

    return body


clean = click.command(
    "clean", cls=OneLineCommand,
    help="Value every training row of TRAIN, remove the ones that hurt, write the cleaned file.\n\n"
    "Writes values.csv, cleaned.csv (cleaned.tsv, cleaned.parquet for TSV, Parquet input), "
    "curve.png, values.png, report.md and result.json to --out.",
)(_options(_command(True)))

value = click.command(
    "value", cls=OneLineCommand,
    help="Value every training row of TRAIN (no cleansing): values.csv, values.png, report.md, "
    "result.json in --out.",
)(_options(_command(False)))
