"""``find_harmful``: data to harmful rows in one call (the CLI's engine too).

::

    rows = tdshap.find_harmful(X, y)        # one row per training row, user's index
    rows.report()                           # settings, scores, worst rows, guarantee

Underneath: encode the table (:mod:`tdshap.app.tabular`), hold out validation
(and test) rows when none are given, value the training rows (the method
``"auto"`` chooses, :mod:`tdshap.app.valuer`), then run the cleansing protocol
(:func:`~tdshap.cleanse`) to choose how many of the lowest-valued rows to
remove; without validation rows, ``every_row=True`` does the same for the
held-out rows in a second part (:mod:`tdshap.app.every_row`). ``TDShap`` and
``cleanse`` stay available for full control.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import is_classifier, is_regressor

from tdshap._validation import (
    ParameterError,
    check_flags,
    check_not_estimator,
    check_not_records,
    check_not_single,
    check_not_text,
    check_random_state,
    check_same_index,
    check_target_not_a_feature,
    check_unique_columns,
    check_unique_labels,
    check_unmasked,
    listed,
    names,
    one_feature,
    unseen_classes,
    warn_one_class,
    warn_target_copies,
    warn_unseen_classes,
)
from tdshap.app.every_row import check_every_row, parts_frame, plan_parts
from tdshap.app.models import PackageNotAllowed
from tdshap.app.plan import RunPlan, execute, plan
from tdshap.app.report import parts_report
from tdshap.app.run import DEFAULT_MAX_ITER, HarmfulRun, PreparedData, TDShapOptions
from tdshap.app.tabular import (
    TableEncoder,
    check_held_out_labels,
    check_same_columns,
    check_target,
    first_fraction,
    holdout_split,
    infer_task,
    plain_value,
    swapped_split,
    typed_target,
)

DEFAULT_VAL_FRACTION = 0.25
DEFAULT_TEST_FRACTION = 0.25


def _records(X: Any) -> bool:
    """Rows as mappings (``[{"a": 1, ...}, ...]``) or columns as one (``{"a": [...]}``)."""
    if isinstance(X, Mapping):
        return True
    return isinstance(X, list | tuple) and len(X) > 0 and all(isinstance(r, Mapping) for r in X)


def _numbers_from_text(col: np.ndarray) -> np.ndarray:
    """An array's column of numbers written as text (``"1.5"``) as floats, as the valuation
    methods read it; any other column as it is (text, or numbers already)."""
    if col.dtype.kind == "O" and not any(isinstance(v, str | bytes) for v in col):
        return col
    try:
        return col.astype(float)
    except (TypeError, ValueError):  # text of its own: a text column, one-hot encoded
        return col


def _array_frame(arr: np.ndarray) -> pd.DataFrame:
    """A 2-D array as a table of columns x0, x1, ...: a text array's columns of numbers
    (``np.array([["1.5", "red"], ...])``, or a whole array of them) are numbers, as the
    methods read them, not text columns of a level per value (or row names, dropped)."""
    columns = [f"x{i}" for i in range(arr.shape[1])]
    if arr.dtype.kind not in "OSU":
        return pd.DataFrame(arr, columns=columns)
    return pd.DataFrame({c: _numbers_from_text(arr[:, i]) for i, c in enumerate(columns)})


def _as_frame(X: Any, name: str) -> pd.DataFrame:
    if isinstance(X, pd.DataFrame):
        frame = X
    elif _records(X):
        try:
            frame = pd.DataFrame(X)
        except ValueError as err:  # e.g. columns of different lengths
            raise ValueError(f"{name} cannot be read as a table: {err}.") from None
    else:
        check_unmasked(X, name, impute="pass impute=True (the median or most frequent value "
                       "of the training rows)")
        if sp.issparse(X):
            raise ValueError(f"{name} is a sparse matrix: pass {name}.toarray() (the rows are "
                             "valued as dense arrays).")
        try:
            arr = np.asarray(X)
        except ValueError:  # rows of different lengths
            raise ValueError(f"{name} must be 2-D (rows x features) with the same number of "
                             "features in every row; its rows differ in length.") from None
        check_not_records(arr, name)
        check_not_single(arr, X, name, "rows x features", "DataFrame")
        if arr.ndim != 2:
            fix = f"; {one_feature(X, name)}" if arr.ndim == 1 else ""
            raise ValueError(f"{name} must be 2-D (rows x features), got shape {arr.shape}"
                             f"{fix}.")
        frame = _array_frame(arr)
    if len(frame) == 0 or frame.shape[1] == 0:
        raise ValueError(f"{name} has {len(frame)} rows and {frame.shape[1]} columns: it needs "
                         "at least one of each.")
    check_unique_columns(frame, name)
    return frame


def _as_series(y: Any, name: str, index: pd.Index) -> pd.Series:
    check_unmasked(y, name, impute=None)
    arr = np.asarray(y.to_numpy() if isinstance(y, pd.Series) else y)
    check_not_single(arr, y, name, "one target per row", "Series")
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr.ravel()
    if arr.ndim != 1 or len(arr) != len(index):
        raise ValueError(f"{name} must be 1-D with one target per row of X "
                         f"({len(index)}), got shape {arr.shape}.")
    label = (y.name or name) if isinstance(y, pd.Series) else name
    series = pd.Series(arr, index=index, name=label)
    # numbers in an object array (e.g. [1, 2.0]) are numbers: the task is inferred from them
    return series.infer_objects() if series.dtype == object else series


def _as_pair(X: Any, y: Any, x_name: str, y_name: str) -> tuple[pd.DataFrame, pd.Series]:
    """One set of rows as a table and its targets, checked to be the same rows."""
    check_not_text(X, x_name)
    frame = _as_frame(X, x_name)
    check_not_text(y, y_name, X, x_name)
    series = _as_series(y, y_name, frame.index)
    check_same_index(X, y, x_name, y_name)
    check_target_not_a_feature(X, y, x_name, y_name)
    return frame, series


def _named(X: Any) -> bool:
    """Whether ``X``'s columns have names (a table or records), not positions (an array)."""
    return isinstance(X, pd.DataFrame) or _records(X)


def _check_both_named(X: Any, columns: pd.Index, other: Any, other_columns: pd.Index,
                      name: str) -> None:
    """Refuse held-out rows without column names beside a table's (or the other way): the
    columns are matched by name, and an array's are called x0, x1, ..., so the error
    said the held-out data "lacks a, b, c and has extra x0, x1, x2"."""
    if _named(X) == _named(other) or set(columns) == set(other_columns):
        return
    if _named(X):
        shown = names(columns, 5)
        raise ValueError(f"{name} has no column names (it is an array) but X has ({shown}): "
                         f"give {name} as a table of X's columns, e.g. "
                         f"pandas.DataFrame({name}, columns=X.columns).")
    raise ValueError(f"X has no column names (it is an array) but {name} has: give both as "
                     "tables with the same columns, or both as arrays.")


def _check_pairs(X_val: Any, y_val: Any, X_test: Any, y_test: Any) -> None:
    if (X_val is None) != (y_val is None) or (X_test is None) != (y_test is None):
        raise ValueError("give X_val with y_val (and X_test with y_test), or neither.")


def _check_labels(train: np.ndarray, other: np.ndarray, what: str) -> None:
    """Held-out labels the training rows never have: none shared is an error, some a warning."""
    unseen, levels = unseen_classes(train, other)
    if unseen and len(unseen) == len(levels):
        known = sorted(pd.unique(train).tolist(), key=str)
        raise ValueError(f"the {what} labels ({listed(unseen)}) share no class with the "
                         f"training labels ({listed(known)}): give {what} rows with the same "
                         "target column and the same label spelling.")
    warn_unseen_classes(train, other, what)


def _row_hashes(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """One 64-bit hash per row of features and target (equal rows, equal hashes)."""
    return pd.util.hash_pandas_object(pd.DataFrame(X).assign(_target=y), index=False).to_numpy()


def _warn_training_rows_held_out(Xa: np.ndarray, ya: np.ndarray,
                                 given: list[tuple[np.ndarray, np.ndarray, str]]) -> None:
    """Given rows (``(X, y, what)``) most of which are training rows too (a copy of the
    training file given as ``--val``): the cut would be judged on rows the models were
    trained on. Only where the training rows are themselves nearly all distinct: in a
    table of a few discrete features, rows repeat by nature."""
    train = _row_hashes(Xa, ya)
    if len(np.unique(train)) < 0.9 * len(train):
        return
    for Xo, yo, what in given:
        shared = int(np.isin(_row_hashes(Xo, yo), train).sum())
        if shared > len(yo) / 2:
            warnings.warn(f"{shared:,} of the {len(yo):,} {what} rows are training rows too "
                          "(the same features and target): the cut is judged on rows the "
                          f"models were trained on, so its gain is optimistic; give {what} "
                          "rows held out from the training rows.", UserWarning, stacklevel=3)


def check_fractions_apply(val_fraction: float | None, test_fraction: float | None,
                          has_val: bool, has_test: bool) -> None:
    """Refuse a share of ``X`` to hold out (a fraction given, None: not) where the rows it
    would hold out are given (``has_val``, ``has_test``): it was ignored without a word
    (``val_fraction=0.5`` beside ``X_val``, ``--val-fraction 0.5`` beside ``--val``, held
    out none). Names in backticks: the command shows its own options for them."""
    given = " and ".join(f"`{name}`" for name, on in (("X_val", has_val), ("X_test", has_test))
                         if on)
    for name, value, without in (("val_fraction", val_fraction, has_val),
                                 ("test_fraction", test_fraction, has_val or has_test)):
        if value is not None and without:
            raise ParameterError(f"`{name}` {value!r} has no effect with {given}: a share of "
                                 f"`X` is held out only without it; leave out `{name}`, or "
                                 f"{given}.", name, "X_val", "X_test", "X")


def _checked_seed(seed: Any) -> int:
    """``random_state`` checked (it reaches scikit-learn's splits: no None, no Generator)
    and as a Python ``int`` (a numpy integer is not one for JSON)."""
    check_random_state(seed, generator=False, optional=False)
    return int(seed)


def _model_task(estimator: Any) -> str | None:
    """The task a scikit-learn classifier or regressor serves; None for anything else (a
    registry name, whose entry has a model per task)."""
    if estimator is None or isinstance(estimator, str):
        return None
    try:
        classifier, regressor = is_classifier(estimator), is_regressor(estimator)
    except (AttributeError, TypeError):  # not a scikit-learn estimator: the plan refuses it
        return None
    return "classification" if classifier else "regression" if regressor else None


def prepare(
    X: pd.DataFrame,
    y: pd.Series,
    X_val: pd.DataFrame | None = None,
    y_val: pd.Series | None = None,
    X_test: pd.DataFrame | None = None,
    y_test: pd.Series | None = None,
    *,
    task: str | None = None,
    val_fraction: float = DEFAULT_VAL_FRACTION,
    test_fraction: float = DEFAULT_TEST_FRACTION,
    impute: bool = False,
    seed: int = 0,
    model_task: str | None = None,
    swap: bool = False,
) -> PreparedData:
    """Check the target, hold rows out if needed, fit the encoder on the training rows.

    ``model_task``: the task of the user's model, which decides when ``task`` is None
    (a regressor on whole-number targets is not a classifier). ``swap``: without
    validation rows, train on the rows held out otherwise and hold out the rows trained
    on otherwise (part 2 of ``every_row``: :func:`~tdshap.app.tabular.swapped_split`).
    """
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} rows but y has {len(y)}: they must match.")
    seed = _checked_seed(seed)
    y = typed_target(y)
    y_val, y_test = (None if t is None else typed_target(t) for t in (y_val, y_test))
    fraction = first_fraction(y)
    if task is None and model_task == "classification" and fraction is not None:
        raise ValueError(f"target column {y.name!r} has fractional values (e.g. {fraction!r}) "
                         "but the model is a classifier: give class labels, or a regressor "
                         "for a numeric target.")
    if task is None and model_task is not None:
        task, reason = model_task, ("the model is a classifier" if model_task ==
                                    "classification" else "the model is a regressor")
    elif task is None:
        task, reason = infer_task(y)
    elif task in ("classification", "regression"):
        reason = "given"
    else:
        raise ValueError(f"task={task!r} must be 'classification' or 'regression'.")
    y_all = check_target(y, task)
    warn_target_copies(X, y)
    _check_pairs(X_val, y_val, X_test, y_test)
    if X_val is not None:
        train = np.arange(len(X))
        split_note = "validation rows given"
        val_rows = test_rows = None
        if X_test is None:
            split_note += "; no test rows (the report's after-cleaning score is on validation)"
    else:
        tf = 0.0 if X_test is not None else test_fraction
        train, val_rows, test_rows, strat = (swapped_split if swap else holdout_split)(
            y_all, (val_fraction, tf), task == "classification", seed)
        split_note = (("the rows part 1 held out; part 1's rows held out: "
                       f"{len(val_rows)} for validation" if swap else
                       f"held out {len(val_rows)} rows for validation")
                      + (f" and {len(test_rows)} for test" if len(test_rows) else "")
                      + (" (stratified by class)" if strat else " (random)"))
    for other, what in ((X_val, "validation"), (X_test, "test")):
        if other is not None:
            check_same_columns(X, other, what)
    encoder = TableEncoder(impute=impute).fit(X.iloc[train])
    Xa = encoder.transform(X, "training data")
    if X_val is None or y_val is None:
        Xv, yv = Xa[val_rows], y_all[val_rows]
        if task == "classification" and not np.isin(yv, y_all[train]).any():
            n_classes = len(pd.unique(y_all))
            raise ValueError(
                f"no held-out validation row has a class the training rows have: "
                f"{n_classes:,} classes in {len(y_all):,} rows leave too few rows per class "
                "to hold some out. If the target is a number or an identifier, use task "
                "regression or another target column; else give more rows per class.")
    else:
        Xv = encoder.transform(X_val, "validation data")
        yv = check_target(y_val, task, 1, "validation data")
        if task == "classification":
            check_held_out_labels(y_all[train], y_val, "validation data")
            _check_labels(y_all[train], yv, "validation")
            warn_one_class(yv)
    Xt: np.ndarray | None
    yt: np.ndarray | None
    if X_test is not None and y_test is not None:
        Xt, yt = encoder.transform(X_test, "test data"), check_target(y_test, task, 1, "test data")
        if task == "classification":
            check_held_out_labels(y_all[train], y_test, "test data")
            _check_labels(y_all[train], yt, "test")
    elif test_rows is not None and len(test_rows):
        Xt, yt = Xa[test_rows], y_all[test_rows]
    else:
        Xt = yt = None
    X_train, y_train = Xa[train], y_all[train]  # copies: made once
    given = [(Xv, yv, "validation")] if X_val is not None else []
    if X_test is not None and Xt is not None and yt is not None:
        given.append((Xt, yt, "test"))
    if given:
        _warn_training_rows_held_out(X_train, y_train, given)
    if task == "classification" and len(np.unique(y_train)) < 2:
        only = plain_value(y_train[0])
        if X_val is not None:
            raise ValueError(f"the training rows hold a single class ({only!r}): "
                             "classification needs two.")
        counts = pd.Series(y_all).value_counts()
        rest = [(plain_value(c), n) for c, n in counts.items() if c != only]
        others = ", ".join(f"{c!r} has {n} row{'s' if n != 1 else ''}" for c, n in rest[:5]) \
            + (", ..." if len(rest) > 5 else "")
        raise ValueError(f"the training rows hold a single class ({only!r}) once validation "
                         f"and test rows are held out; the other classes have too few rows "
                         f"({others}): give more rows of each class, or your own validation "
                         "and test rows. Classification needs two classes.")
    if task == "regression" and len(np.unique(y_train)) < 2:
        raise ValueError(f"the training rows' target is constant ({y_train[0]:g}): every "
                         "model predicts it whatever rows it keeps, so no row can help or hurt. "
                         "Give a target that varies.")
    return PreparedData(
        X_train, y_train, Xv, yv, Xt, yt, train, X.index[train],
        task, reason, reason == "given", encoder, split_note,
    )


class HarmfulRows:
    """What ``find_harmful`` returns: the per-row table, the run behind it, a report.

    ``table`` is a plain DataFrame, one row per training row, indexed like
    the user's data (an index named like a column, e.g. ``value``, is named
    ``value_index``): ``value`` (lower = more harmful: the mean out-of-bag
    score of the row's label under the default method, the data Shapley
    value with ``method="tdshap"``), ``credibly_harmful`` (interval wholly below tau),
    ``ci_low``/``ci_high`` (95% interval), ``stderr``, ``n_pulls``,
    ``is_harmful`` (value <= tau) and ``removed`` (dropped by the cleansing
    protocol); with ``every_row=True`` also ``part`` (1 or 2: which run valued
    the row). ``run`` holds the :class:`HarmfulRun` (the ``ValuationResult``
    is ``run.result``); ``parts`` every run (the two parts of ``every_row=True``,
    else ``(run,)``). Column access (``rows["value"]``), ``len`` and the
    table's attributes (``rows.index``, ``rows.sort_values(...)``) reach
    ``table``, so code written for the earlier DataFrame subclass keeps
    working; what they return is a plain pandas object.
    """

    def __init__(self, table: pd.DataFrame, run: HarmfulRun | None = None,
                 parts: tuple[HarmfulRun, ...] = ()) -> None:
        self.table = table
        self.run = run
        self.parts = parts or ((run,) if run is not None else ())

    def report(self, n_worst: int = 10) -> None:
        """Print the summary: settings, scores, the worst rows, fits and time, guarantee."""
        if self.run is None:
            raise ValueError("these rows have no run attached: call report() on what "
                             "find_harmful returned.")
        print(parts_report(self.parts, n_worst=n_worst))

    def __getitem__(self, key: Any) -> Any:
        return self.table[key]

    def __len__(self) -> int:
        return len(self.table)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("table", "run", "parts"):
            raise AttributeError(name)
        return getattr(self.table, name)

    def __repr__(self) -> str:
        return f"HarmfulRows({len(self.table)} rows; .table, .run, .report())\n{self.table!r}"


def find_harmful(
    X: Any,
    y: Any,
    estimator: Any = None,
    *,
    X_val: Any = None,
    y_val: Any = None,
    X_test: Any = None,
    y_test: Any = None,
    task: str | None = None,
    metric: str | None = None,
    val_fraction: float | None = None,
    test_fraction: float | None = None,
    tau: float | str = "auto",
    eps: float | str = "auto",
    k: int | str = "auto",
    n_min: int | str = "auto",
    max_iter: int | None = DEFAULT_MAX_ITER,
    time_budget: float | None = None,
    impute: bool = False,
    cleanse: bool = True,
    method: str = "auto",
    cut: str = "one_se",
    neighbor_search: str = "exact",
    random_state: int = 0,
    progress: bool = False,
    every_row: bool | str = False,
    n_jobs: int | None = None,
) -> HarmfulRows:
    """Which training rows hurt the model? One row of answers per valued row of ``X``.

    Parameters
    ----------
    X, y:
        A pandas DataFrame (text columns are one-hot encoded, see
        :mod:`tdshap.app.tabular`) or a numpy array, and the targets. A pandas
        ``y`` must have the DataFrame ``X``'s index (rows are paired by position):
        ``y.loc[X.index]`` aligns it, ``y.to_numpy()`` pairs it by position.
    estimator:
        A scikit-learn estimator, a registry name (``"knn"``, ``"dtree"``, ``"rf"``,
        ``"gbdt"``, ``"logreg"``, ``"ridge"``, ``"svr"``, ``"knn"``, ``"mlp"``)
        or ``None`` for ``"knn"`` (5 nearest neighbours). It is given the encoded table
        (a numeric array: numbers standardised, then text one-hot encoded), so a
        ``Pipeline`` needs no encoder of its own; a ``ColumnTransformer`` that picks
        columns by name (or by position, where text columns moved them) is refused.
    X_val, y_val, X_test, y_test:
        Validation (and test) data. Without validation data,
        ``val_fraction`` (default 0.25) of the rows are held out for validation and
        ``test_fraction`` (default 0.25 with ``cleanse``, else 0) for an
        honest before/after score (stratified for classification); the
        remaining rows are valued, and with ``every_row`` the held-out ones
        too, in a second part. A fraction given beside the rows it would hold out
        (``val_fraction`` with ``X_val``; ``test_fraction`` with ``X_val`` or
        ``X_test``) is refused: it would have no effect.
    task:
        ``"classification"`` or ``"regression"``; if None, the task of ``estimator``
        (a scikit-learn classifier or regressor), else inferred from ``y``.
    metric, tau, eps, k, n_min, max_iter, time_budget:
        As in :class:`~tdshap.TDShap`; ``tau``/``eps`` default to ``"auto"``.
    impute:
        Fill missing feature values (median / most frequent level of the
        training rows) instead of refusing them.
    cleanse:
        Also run the cleansing protocol (adds the ``removed`` column).
    method:
        ``"auto"``: for a k-NN classifier on at most 5,000 rows (exact neighbour
        search), exact k-NN Shapley with the training and validation rows as queries
        (``"knn_shapley"``: :class:`~tdshap.methods.KNNShapley` with
        ``queries="both"``, in closed form; the cut's test is cross-fitted, each
        validation fold judging rows chosen without it: :mod:`tdshap.cross_fit`;
        ``"knn_shapley_train"``: the training rows alone, validation-free); for a
        tree, random forest, MLP or linear classifier on at most 5,000 rows, the same values of a
        5-NN of the standardised rows standing in for it (``"knn_shapley_proxy"``;
        the cut refits the model itself) when that 5-NN predicts the validation rows
        about as well as the model and its neighbours know the labels
        (:func:`tdshap.app.valuer.check_proxy`); otherwise, and for every regressor,
        thresholding Data-OOB
        (:class:`~tdshap.methods.tdoob.ThresholdingOOB`: the APT bandit with
        out-of-bag rewards, ``"tdoob"``), k-NN through its neighbour lists;
        ``"knn_oob"``: a k-NN classifier's out-of-bag values in closed form
        (:class:`~tdshap.methods.KNNOutOfBag`); ``"tdshap"``: the paper's TDShap
        with ``metric``. See
        :mod:`tdshap.app.valuer` for the measurements behind the choice.
    cut:
        How many rows cleansing removes: ``"one_se"`` (default) only when the
        validation gain beats its bootstrap noise, and only rows whose value
        is credibly below tau, unless (for values that never saw the
        validation rows, or the proxy's, each fold valued without it)
        cross-validation over the validation rows says the model gains more
        from the paper's larger cut (then its best validation score among cuts
        no larger than the largest one a fold chose);
        ``"paper"`` the best validation score (the paper's protocol, which on
        clean data removes many rows).
    neighbor_search:
        For a k-NN valued by ``"auto"``/``"tdoob"``/``"knn_oob"``: ``"exact"``
        (default: brute force, grows with N squared) or ``"approximate"`` (a
        graph index, grows about N log N; for 100,000 rows and more; needs
        ``pip install 'tdshap[scale]'``; ``"auto"`` then takes thresholding
        Data-OOB). Cleansing always searches exactly.
    every_row:
        Without ``X_val``, value every row of ``X`` in two parts (cross-fitting):
        part 1 as above; part 2 swaps the roles, valuing the rows part 1 held out
        with part 1's rows held out instead (shared between validation and test in
        the same proportion), and cleanses them on its own (:mod:`tdshap.app.every_row`).
        Each row's flags and ``removed`` come from the part that valued it (``part``
        column); values of the two parts come from models trained on different rows,
        so compare them within a part. Twice the work (``time_budget`` holds for each
        part). ``True``: both parts, or an error saying why part 2 cannot be planned;
        ``"auto"``: both where part 2 can be planned, else part 1 alone (the report's data
        line says so); ``False`` (default): part 1 alone, as the report's data line says.
        Off by default: on data with nothing planted it also doubles what the cut removes
        (docs/benchmarks.md, "One noisy file"). With ``X_val`` every row is valued anyway.
    n_jobs:
        Workers for the cleansing curve's refits (joblib's count: None or 1 in-process,
        -1 every core), started only where the refits left would take 5 s or more
        in-process (a forest, an MLP, boosting; never a k-NN, whose cuts need no refit).
        The answer is the same whatever ``n_jobs``.

    Returns
    -------
    HarmfulRows
        ``.table``: a DataFrame indexed like ``X``'s training rows; ``.run``:
        the run; ``.report()`` prints the summary.
    """
    check_flags(impute=impute, cleanse=cleanse, progress=progress)
    for name, data in (("X", X), ("y", y), ("X_val", X_val), ("y_val", y_val),
                       ("X_test", X_test), ("y_test", y_test)):
        check_not_estimator(data, name, "the estimator goes third: find_harmful(X, y, "
                            "estimator)")
    check_every_row(every_row)  # before the data are read
    random_state = _checked_seed(random_state)
    Xf, yf = _as_pair(X, y, "X", "y")
    check_unique_labels(Xf, "X")  # validation and test rows are not in the table
    _check_pairs(X_val, y_val, X_test, y_test)
    frames: dict[str, Any] = {}
    for name, Xo, yo in (("val", X_val, y_val), ("test", X_test, y_test)):
        if Xo is not None:  # _check_pairs: yo is given too
            frames[f"X_{name}"], frames[f"y_{name}"] = _as_pair(Xo, yo, f"X_{name}", f"y_{name}")
            _check_both_named(X, Xf.columns, Xo, frames[f"X_{name}"].columns, f"X_{name}")
    check_fractions_apply(val_fraction, test_fraction, X_val is not None, X_test is not None)
    if val_fraction is None:
        val_fraction = DEFAULT_VAL_FRACTION
    if test_fraction is None:  # test rows only serve the after-cleansing score
        test_fraction = DEFAULT_TEST_FRACTION if cleanse else 0.0
    given = {"model"} if estimator is not None else set()
    if metric is not None:
        given.add("metric")
    if max_iter != DEFAULT_MAX_ITER:
        given.add("max_iter")
    if method != "auto":
        given.add("method")
    if cut != "one_se":
        given.add("cut")
    if neighbor_search != "exact":
        given.add("neighbor_search")
    options = TDShapOptions(tau, eps, k, n_min, max_iter, time_budget)

    def prepared(swap: bool) -> PreparedData:
        return prepare(Xf, yf, frames.get("X_val"), frames.get("y_val"), frames.get("X_test"),
                       frames.get("y_test"), task=task, val_fraction=val_fraction,
                       test_fraction=test_fraction, impute=impute, seed=random_state,
                       model_task=_model_task(estimator), swap=swap)

    def planned(data: PreparedData, part: int) -> RunPlan:
        return plan(data, estimator, metric=metric, options=options, seed=random_state,
                    do_cleanse=cleanse, progress=progress, given=given, method=method,
                    cut=cut, neighbor_search=neighbor_search, n_jobs=n_jobs)

    try:
        plans = plan_parts(every_row, X_val is not None, prepared, planned)
    except ParameterError as err:
        if not {"params", "model", "allow_import"} & set(err.params):
            raise
        # the command's --params, --model and --allow-import; here the estimator's own
        # parameters and the estimator (find_harmful has no `params`, `model`, `allow_import`)
        if isinstance(err, PackageNotAllowed):  # "allow it with `allow_import` os" named no fix
            message = (f"{err.problem}; to use a class of another package, import it "
                       "yourself and pass an instance: estimator=Class().")
        else:
            message = str(err)
        message = message.replace("`params`", "the estimator's parameters").replace(
            "`model`", "estimator")
        raise ParameterError(message, *("estimator" if p == "model" else p for p in err.params
                                        if p not in ("params", "allow_import"))) from None
    parts = tuple(execute(p) for p in plans)
    return HarmfulRows(parts_frame(parts), parts[0], parts)
