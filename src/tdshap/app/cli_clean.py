"""``tdshap clean`` and ``tdshap value``: a user's own table, start to finish.

Bad input ends with one line ``Error: ...`` on stderr and exit status 2,
before anything is written. Outputs are written to a temporary folder and
moved into ``--out`` only once all of them are complete.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from tdshap.app.harmful import (
    DEFAULT_MAX_ITER,
    DEFAULT_TEST_FRACTION,
    DEFAULT_VAL_FRACTION,
    HarmfulRun,
    TDShapOptions,
    prepare,
    run,
)
from tdshap.app.models import DEFAULT_MODEL, MODELS, parse_params
from tdshap.app.report import markdown_report, plot_values, text_report
from tdshap.app.tabular import is_parquet, read_table, write_rows_like
from tdshap.app.valuer import METHODS
from tdshap.methods.apt.thresholds import DEFAULT_EPS_FACTOR

VALUES_COLUMNS = ["value", "ci_low", "ci_high", "n_pulls", "is_harmful", "removed"]


class InputError(click.ClickException):
    """A problem with the user's input: one line on stderr, exit status 2."""

    exit_code = 2


class AutoOr(click.ParamType):
    """``"auto"`` or a number (float, or int when ``integer``)."""

    def __init__(self, integer: bool = False) -> None:
        self.integer = integer
        self.name = "auto|int" if integer else "auto|float"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if value == "auto" or isinstance(value, int | float):
            return value
        try:
            return int(value) if self.integer else float(value)
        except ValueError:
            self.fail(f"{value!r} is not 'auto' or a {'whole ' if self.integer else ''}number",
                      param, ctx)


def _options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options ``clean`` and ``value`` share."""
    opts = [
        click.argument("train", type=click.Path(path_type=Path)),
        click.option("--target", required=True, help="Name of the target column."),
        click.option("--val", "val_path", type=click.Path(path_type=Path),
                     help="Validation file (same columns). Default: hold out --val-fraction."),
        click.option("--test", "test_path", type=click.Path(path_type=Path),
                     help="Test file for an honest before/after score (optional)."),
        click.option("--val-fraction", type=float, default=DEFAULT_VAL_FRACTION,
                     show_default=True,
                     help="Without --val: share of TRAIN's rows held out for validation "
                     "(stratified by class for classification)."),
        click.option("--test-fraction", type=float, default=DEFAULT_TEST_FRACTION,
                     show_default=True,
                     help="Without --val and --test: share of TRAIN's rows held out for the "
                     "test curve and score; 0 values more rows but then the after score is "
                     "measured on validation only. `tdshap value` holds out none unless given."),
        click.option("--task", type=click.Choice(["classification", "regression"]),
                     help="Default: inferred from the target (text or <= 20 whole-number "
                     "values: classification), and said so."),
        click.option("--model", default=DEFAULT_MODEL, show_default=True,
                     help=f"One of {', '.join(sorted(MODELS))}, or package.module:Class."),
        click.option("--params", help='Model parameters as JSON, e.g. \'{"max_depth": 3}\'.'),
        click.option("--metric", help="Default: accuracy (classification), neg_mae "
                     "(regression); or any scikit-learn scorer name."),
        click.option("--method", type=click.Choice(METHODS), default="auto", show_default=True,
                     help="auto: TDShap on true-class probabilities for k-NN classifiers, "
                     "thresholding Data-OOB otherwise; tdshap: the paper's TDShap with "
                     "--metric; tdoob: thresholding Data-OOB."),
        click.option("--tau", type=AutoOr(), default="auto", show_default=True,
                     help="Threshold in metric units; auto: -eps."),
        click.option("--eps", type=AutoOr(), default="auto", show_default=True,
                     help=f"Precision in metric units; auto: {DEFAULT_EPS_FACTOR:g} x spread "
                     "of the first pulls."),
        click.option("--k", type=AutoOr(integer=True), default="auto", show_default=True,
                     help="Rows valued per chain; auto: min(50, N // 3)."),
        click.option("--n-min", type=AutoOr(integer=True), default="auto", show_default=True,
                     help="Smallest prefix; auto: min(100, N // 3)."),
        click.option("--max-iter", type=click.IntRange(min=0), default=DEFAULT_MAX_ITER,
                     show_default=True, help="Rounds after every row was pulled once."),
        click.option("--time-budget", type=click.FloatRange(min=0),
                     help="Stop valuing after this many seconds."),
        click.option("--seed", type=int, default=0, show_default=True),
        click.option("--cut", type=click.Choice(["one-se", "paper"]), default="one-se",
                     show_default=True,
                     help="How many rows cleansing removes. one-se: only when the validation "
                     "gain beats two bootstrap SEs, and only rows credibly below tau (nothing "
                     "when the evidence is not there); paper: the best validation score (the "
                     "paper's rule; chases validation noise)."),
        click.option("--id-column", help="Column that names the rows (not a feature); "
                     "default: the row number in TRAIN, from 0."),
        click.option("--impute", is_flag=True,
                     help="Fill missing feature values: median (numbers), most frequent level "
                     "(text), of the training rows."),
        click.option("--out", type=click.Path(path_type=Path), default=Path("tdshap-out"),
                     show_default=True, help="Output folder."),
        click.option("--resume", is_flag=True,
                     help=f"Continue the run saved in OUT/{CHECKPOINT_NAME} (every run saves "
                     "its state there as it goes) with the same data and settings; a larger "
                     "--max-iter or --time-budget extends it."),
        click.option("--progress/--no-progress", default=True, show_default=True),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


CHECKPOINT_NAME = "run.tdshap"


def _check_out(out: Path) -> None:
    """Fail before any work when ``out`` could not be written."""
    if out.exists():
        if not out.is_dir():
            raise ValueError(f"output folder {out} is a file: choose another --out.")
        probe = out
    else:
        probe = out.parent
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not probe.is_dir():
            raise ValueError(f"output folder {out} is not writable: {probe} is a file.")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"output folder {out} is not writable (no write permission on "
                         f"{probe}): choose another --out.")


def _publish(tmp: Path, out: Path) -> None:
    """Move complete outputs into ``out``: each file appears whole or not at all."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        for f in sorted(tmp.iterdir()):
            part = out / f".{f.name}.partial"
            shutil.copyfile(f, part)
            os.replace(part, out / f.name)
    except OSError as err:
        raise ValueError(f"output folder {out} is not writable: {err.strerror}.") from None


def _split_columns(frame: pd.DataFrame, target: str, id_column: str | None, what: str,
                   path: Path) -> tuple[pd.DataFrame, pd.Series]:
    for col, label in ((target, "target"), (id_column, "id")):
        if col is not None and col not in frame.columns:
            shown = ", ".join(map(str, frame.columns[:10]))
            raise ValueError(f"{label} column {col!r} is not in {what} {path} "
                             f"(its columns: {shown}{', ...' if frame.shape[1] > 10 else ''}).")
    if id_column is not None:
        frame = frame.set_index(id_column)
    else:
        frame = frame.set_axis(pd.RangeIndex(len(frame), name="row"))
    return frame.drop(columns=[target]), frame[target]


def _read(path: Path, target: str, id_column: str | None, what: str,
          reference: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    from tdshap.app.tabular import check_same_columns

    frame = read_table(path, what)
    if reference is not None:
        check_same_columns(reference, frame, what)
    X, y = _split_columns(frame, target, id_column, what, path)
    return frame, X, y


def _write_outputs(run_: HarmfulRun, tmp: Path, train_path: Path, frame: pd.DataFrame,
                   inputs: dict[str, str]) -> list[str]:
    table = run_.frame()
    cols = [c for c in VALUES_COLUMNS if c in table]
    table[cols].to_csv(tmp / "values.csv", index_label=str(table.index.name or "row"))
    run_.result.save(tmp / "result.json")
    plot_values(run_, tmp / "values.png")
    written = ["values.csv", "result.json", "values.png"]
    if run_.cleansing is not None:
        removed = run_.data.train_rows[run_.cleansing.removed]
        keep = np.setdiff1d(np.arange(len(frame)), removed)
        name = "cleaned" + (".parquet" if is_parquet(train_path) else ".csv")
        write_rows_like(train_path, frame, keep, tmp / name)
        title = f"{train_path.name}: {run_.model_name}, {run_.data.task}"
        run_.cleansing.plot(tmp / "curve.png", title=title)
        written += [name, "curve.png"]
    (tmp / "report.md").write_text(markdown_report(run_, inputs), encoding="utf-8")
    return [*written, "report.md"]


def _execute(do_cleanse: bool, opts: dict[str, Any]) -> None:
    ctx = click.get_current_context()
    given = {name for name in opts
             if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT}
    out: Path = opts["out"]
    _check_out(out)
    checkpoint = out / CHECKPOINT_NAME
    if opts["resume"] and not checkpoint.is_file():
        raise ValueError(f"--resume: there is no checkpoint {checkpoint} to continue; run "
                         "without --resume first (every run saves one in --out).")
    params = parse_params(opts["params"])
    target, id_col = opts["target"], opts["id_column"]
    frame, X, y = _read(opts["train"], target, id_col, "training file", None)
    others: dict[str, Any] = {}
    for key in ("val", "test"):
        path = opts[f"{key}_path"]
        if path is not None:
            _, others[f"X_{key}"], others[f"y_{key}"] = _read(
                path, target, id_col, f"{'validation' if key == 'val' else 'test'}", frame)
    data = prepare(X, y, others.get("X_val"), others.get("y_val"), others.get("X_test"),
                   others.get("y_test"), task=opts["task"], val_fraction=opts["val_fraction"],
                   test_fraction=opts["test_fraction"] if do_cleanse or "test_fraction" in given
                   else 0.0, impute=opts["impute"],
                   seed=opts["seed"])
    options = TDShapOptions(opts["tau"], opts["eps"], opts["k"], opts["n_min"],
                            opts["max_iter"], opts["time_budget"])
    run_ = run(data, opts["model"], params=params, metric=opts["metric"], options=options,
               seed=opts["seed"], do_cleanse=do_cleanse, progress=opts["progress"], given=given,
               checkpoint=checkpoint, resume=opts["resume"], method=opts["method"],
               cut=opts["cut"].replace("-", "_"))
    inputs = {"command": f"tdshap {'clean' if do_cleanse else 'value'}",
              "train": str(opts["train"]), "target": target}
    inputs.update({k: str(opts[f"{k}_path"]) for k in ("val", "test") if opts[f"{k}_path"]})
    with tempfile.TemporaryDirectory(prefix="tdshap-out-") as tmp:
        written = _write_outputs(run_, Path(tmp), opts["train"], frame, inputs)
        _publish(Path(tmp), out)
    click.echo(text_report(run_, n_worst=5))
    click.echo(f"wrote {', '.join(written)} to {out.resolve()}")


def _command(do_cleanse: bool) -> Callable[..., None]:
    def body(**opts: Any) -> None:
        try:
            _execute(do_cleanse, opts)
        except ValueError as err:
            # the message already names the problem and the fix; no traceback
            raise InputError(" ".join(str(err).split())) from None

    return body


clean = click.command(
    "clean",
    help="Value every training row of TRAIN, remove the ones that hurt, write the cleaned file.\n\n"
    "Writes values.csv, cleaned.csv (cleaned.parquet for Parquet input), curve.png, values.png, "
    "report.md and result.json to --out.",
)(_options(_command(True)))

value = click.command(
    "value",
    help="Value every training row of TRAIN (no cleansing): values.csv, values.png, report.md, "
    "result.json in --out.",
)(_options(_command(False)))
