"""``find_harmful``: data to harmful rows in one call (the CLI's engine too).

::

    rows = tdshap.find_harmful(X, y)        # one row per training row, user's index
    rows.report()                           # settings, scores, worst rows, guarantee

Underneath: encode the table (:mod:`tdshap.app.tabular`), hold out validation
(and test) rows when none are given, value the training rows with
:class:`~tdshap.TDShap` (``tau="auto"``, ``eps="auto"``), then run the
cleansing protocol (:func:`~tdshap.cleanse`) to choose how many of the
lowest-valued rows to remove. ``TDShap`` and ``cleanse`` stay available for
full control.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tdshap.app.models import DEFAULT_MODEL, build_model, describe
from tdshap.app.report import text_report
from tdshap.app.run import DEFAULT_MAX_ITER, HarmfulRun, PreparedData, Setting, TDShapOptions
from tdshap.app.tabular import (
    TableEncoder,
    check_same_columns,
    check_target,
    holdout_split,
    infer_task,
)
from tdshap.app.valuer import make_valuer
from tdshap.cleansing import cleanse
from tdshap.cut import DEFAULT_N_BOOTSTRAP, check_rule
from tdshap.methods.apt.sampling import check_block_size
from tdshap.methods.apt.thresholds import DEFAULT_EPS_FACTOR

DEFAULT_VAL_FRACTION = 0.25
DEFAULT_TEST_FRACTION = 0.25


def _as_frame(X: Any, name: str) -> pd.DataFrame:
    if isinstance(X, pd.DataFrame):
        return X
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows x features), got shape {arr.shape}.")
    return pd.DataFrame(arr, columns=[f"x{i}" for i in range(arr.shape[1])])


def _as_series(y: Any, name: str, index: pd.Index) -> pd.Series:
    if isinstance(y, pd.Series):
        return pd.Series(y.to_numpy(), index=index, name=y.name or name)
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr.ravel()
    if arr.ndim != 1 or len(arr) != len(index):
        raise ValueError(f"{name} must be 1-D with one target per row of X "
                         f"({len(index)}), got shape {arr.shape}.")
    return pd.Series(arr, index=index, name=name)


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
) -> PreparedData:
    """Check the target, hold rows out if needed, fit the encoder on the training rows."""
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} rows but y has {len(y)}: they must match.")
    if task is None:
        task, reason = infer_task(y)
    elif task in ("classification", "regression"):
        reason = "given"
    else:
        raise ValueError(f"task={task!r} must be 'classification' or 'regression'.")
    y_all = check_target(y, task)
    if (X_val is None) != (y_val is None) or (X_test is None) != (y_test is None):
        raise ValueError("give X_val with y_val (and X_test with y_test), or neither.")
    if X_val is not None:
        train = np.arange(len(X))
        split_note = "validation rows given"
        val_rows = test_rows = None
        if X_test is None:
            split_note += "; no test rows (the report's after-cleaning score is on validation)"
    else:
        tf = 0.0 if X_test is not None else test_fraction
        train, val_rows, test_rows, strat = holdout_split(
            y_all, (val_fraction, tf), task == "classification", seed)
        split_note = (f"held out {len(val_rows)} rows for validation"
                      + (f" and {len(test_rows)} for test" if len(test_rows) else "")
                      + (" (stratified by class)" if strat else " (random)"))
    for other, what in ((X_val, "validation"), (X_test, "test")):
        if other is not None:
            check_same_columns(X, other, what)
    encoder = TableEncoder(impute=impute).fit(X.iloc[train])
    Xa = encoder.transform(X)
    if X_val is None or y_val is None:
        Xv, yv = Xa[val_rows], y_all[val_rows]
    else:
        Xv, yv = encoder.transform(X_val), check_target(y_val, task)
    Xt: np.ndarray | None
    yt: np.ndarray | None
    if X_test is not None and y_test is not None:
        Xt, yt = encoder.transform(X_test), check_target(y_test, task)
    elif test_rows is not None and len(test_rows):
        Xt, yt = Xa[test_rows], y_all[test_rows]
    else:
        Xt = yt = None
    if task == "classification" and len(np.unique(y_all[train])) < 2:
        raise ValueError("the training rows hold a single class: classification needs two.")
    return PreparedData(
        Xa[train], y_all[train], Xv, yv, Xt, yt, train, X.index[train],
        task, reason, reason == "given", encoder, split_note,
    )


def _auto_note(value: Any, rule: str) -> str:
    return rule if value == "auto" else "given"


def run(
    data: PreparedData,
    model: Any = None,
    *,
    params: dict[str, Any] | None = None,
    metric: str | None = None,
    options: TDShapOptions | None = None,
    seed: int = 0,
    do_cleanse: bool = True,
    progress: bool = False,
    given: set[str] | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    resume: bool = False,
    method: str = "auto",
    cut: str = "one_se",
) -> HarmfulRun:
    """Value ``data``'s training rows (``method``: see :mod:`tdshap.app.valuer`) and cleanse.

    ``model`` is a registry name, an import path or an estimator (``None``:
    the registry's default); ``given`` names the settings the user chose
    (the report marks the others as defaults). ``checkpoint`` is a file the
    valuation saves its state to as it goes; ``resume=True`` continues the
    run saved there (see :class:`tdshap.TDShap`). ``cut`` is the cleansing
    rule (:func:`~tdshap.cleanse`): ``"one_se"`` removes rows only on evidence
    beyond the validation noise, ``"paper"`` takes the best validation score.
    """
    check_rule(cut)
    start = time.perf_counter()
    given = set(given or ())
    o = options or TDShapOptions()
    if model is None or isinstance(model, str):
        model_name = model or DEFAULT_MODEL
        estimator = build_model(model_name, data.task, params, len(data.y_train))
        model_about = describe(model_name)
    else:
        estimator, model_name, model_about = model, type(model).__name__, "given estimator"
    if metric is None:
        metric = "accuracy" if data.task == "classification" else "neg_mae"
    n = len(data.y_train)
    valuer = make_valuer(estimator, metric, given, method, o, seed, progress,
                         {"checkpoint": checkpoint, "resume": True if resume else None})
    tdshap = valuer.estimator
    if resume and valuer.method != "tdshap":
        raise ValueError("resume: only TDShap runs are checkpointed (a thresholding Data-OOB "
                         "run is short); rerun without resume, or choose method 'tdshap'.")
    k_used = n_min_used = None
    if valuer.method == "tdshap":
        k_used, n_min_used = tdshap.block_sizes(n)
        try:
            check_block_size(n, k_used, n_min_used)
        except ValueError:
            raise ValueError(
                f"the training part has N={n} rows, too few for n_min={n_min_used} and "
                f"k={k_used} (needs N >= n_min + k = {n_min_used + k_used}): lower "
                "--n-min/--k or use more rows."
            ) from None
        if checkpoint is not None:
            Path(checkpoint).parent.mkdir(parents=True, exist_ok=True)
    tdshap.fit(data.X_train, data.y_train, data.X_val, data.y_val)
    result = tdshap.result_
    if k_used is None:  # thresholding Data-OOB: K held-out arms per bag, no prefixes
        k_used = tdshap.k_
    cleansing = None
    if do_cleanse:
        cleansing = cleanse(result, estimator, data.X_train, data.y_train, data.X_val,
                            data.y_val, data.X_test, data.y_test, metric=metric,
                            random_state=seed, rule=cut, n_bootstrap=DEFAULT_N_BOOTSTRAP)
    settings = {
        "task": Setting(data.task, data.task_given, data.task_reason),
        "model": Setting(model_name, "model" in given, model_about if "model" in given else
                         f"default: {model_about}; exact fast path (no refits), and on "
                         "untuned data better than the tree (docs/benchmarks.md)"),
        "params": Setting(params or {}, bool(params), ""),
        "estimator": Setting(" ".join(repr(estimator).split()), "model" in given,
                             "what is fitted, defaults resolved"),
        "metric": Setting(metric, "metric" in given,
                          "given" if "metric" in given else f"default for {data.task}"),
        "method": Setting(valuer.method, method != "auto", valuer.why),
        "valuation_metric": Setting(valuer.metric, "metric" in given,
                                    "the rows are valued with it; cleansing and scores use "
                                    "the metric above"),
        **_method_settings(valuer.method, tdshap, o, given, k_used, n_min_used),
        "time_budget": Setting(o.time_budget, o.time_budget is not None, "seconds, then stop"),
        "seed": Setting(seed, "seed" in given, ""),
    }
    if do_cleanse:
        settings["cut"] = Setting(cut, "cut" in given, "given" if "cut" in given else
                                  "default: remove rows only when the validation gain beats "
                                  "two bootstrap SEs, and only rows credibly below tau")
    return HarmfulRun(data, model_name, estimator, metric, settings, result, cleansing,
                      time.perf_counter() - start)


def _method_settings(method: str, valuer: Any, o: TDShapOptions, given: set[str],
                     k_used: int, n_min_used: int | None) -> dict[str, Setting]:
    """tau, eps, k, n_min and max_iter as the chosen method used them, and why."""
    if method == "tdoob":
        return {
            "tau": Setting(valuer.tau_, o.tau != "auto", _auto_note(
                o.tau, "auto: chance (1 / classes) for classifiers; for regression 2 robust "
                "sd below the median out-of-bag score")),
            "eps": Setting(valuer.eps_, o.eps != "auto", _auto_note(
                o.eps, "auto: 0.3 x the robust spread of the first out-of-bag scores")),
            "k": Setting(k_used, o.k != "auto", _auto_note(
                o.k, "auto: min(50, N // 10) rows held out of every bag")),
            "n_min": Setting(None, False, "not used by thresholding Data-OOB"),
            "max_iter": Setting(valuer.max_iter, "max_iter" in given, "given"
                                if "max_iter" in given else "default: bags after the first "
                                "pass"),
        }
    return {
        "tau": Setting(valuer.tau_, o.tau != "auto", _auto_note(
            o.tau, "auto: -eps, so a row is harmful only when its value is below 0 by eps")),
        "eps": Setting(valuer.eps_, o.eps != "auto", _auto_note(
            o.eps, f"auto: {DEFAULT_EPS_FACTOR:g} x the robust spread (1.4826 MAD) of the "
            "first marginals")),
        "k": Setting(k_used, o.k != "auto", _auto_note(
            o.k, "auto: min(50, N // 3) rows valued per chain of k + 1 fits")),
        "n_min": Setting(n_min_used, o.n_min != "auto", _auto_note(
            o.n_min, "auto: min(100, N // 3), the smallest prefix a marginal is measured on")),
        "max_iter": Setting(o.max_iter, "max_iter" in given,
                            "given" if "max_iter" in given else "default: the paper's 50 rounds"),
    }


class HarmfulRows(pd.DataFrame):
    """The per-row table ``find_harmful`` returns: a DataFrame with :meth:`report`.

    Columns: ``value`` (estimated data Shapley value, metric units),
    ``ci_low``/``ci_high`` (95% interval), ``stderr``, ``n_pulls``,
    ``is_harmful`` (value <= tau) and ``removed`` (dropped by the cleansing
    protocol). The index is the user's. ``.run`` holds the
    :class:`HarmfulRun` (the ``ValuationResult`` is ``.run.result``).
    """

    _metadata = ["run"]  # noqa: RUF012 (pandas' subclassing protocol)
    run: HarmfulRun

    @property
    def _constructor(self) -> type[HarmfulRows]:
        return HarmfulRows

    def report(self, n_worst: int = 10) -> None:
        """Print the summary: settings, scores, the worst rows, fits and time, guarantee."""
        run_ = getattr(self, "run", None)
        if run_ is None:
            raise ValueError("this table has no run attached: call report() on the table "
                             "find_harmful returned.")
        print(text_report(run_, n_worst=n_worst))


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
    val_fraction: float = DEFAULT_VAL_FRACTION,
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
    random_state: int = 0,
    progress: bool = False,
) -> HarmfulRows:
    """Which training rows hurt the model? One row of answers per row of ``X``.

    Parameters
    ----------
    X, y:
        A pandas DataFrame (text columns are one-hot encoded, see
        :mod:`tdshap.app.tabular`) or a numpy array, and the targets.
    estimator:
        A scikit-learn estimator, a registry name (``"knn"``, ``"dtree"``, ``"rf"``,
        ``"gbdt"``, ``"logreg"``, ``"ridge"``, ``"svr"``, ``"knn"``, ``"mlp"``)
        or ``None`` for ``"knn"`` (5 nearest neighbours).
    X_val, y_val, X_test, y_test:
        Validation (and test) data. Without validation data,
        ``val_fraction`` of the rows are held out for validation and
        ``test_fraction`` (default 0.25 with ``cleanse``, else 0) for an
        honest before/after score (stratified for classification); only the
        remaining rows are valued and returned.
    task:
        ``"classification"`` or ``"regression"``; inferred from ``y`` if None.
    metric, tau, eps, k, n_min, max_iter, time_budget:
        As in :class:`~tdshap.TDShap`; ``tau``/``eps`` default to ``"auto"``.
    impute:
        Fill missing feature values (median / most frequent level of the
        training rows) instead of refusing them.
    cleanse:
        Also run the cleansing protocol (adds the ``removed`` column).
    method:
        ``"auto"``: TDShap on true-class probabilities for k-NN classifiers
        (exact fast path), thresholding Data-OOB
        (:class:`~tdshap.methods.tdoob.ThresholdingOOB`) for everything else;
        ``"tdshap"``: the paper's TDShap with ``metric``; ``"tdoob"``. See
        :mod:`tdshap.app.valuer` for the measurements behind the choice.
    cut:
        How many rows cleansing removes: ``"one_se"`` (default) only when the
        validation gain beats its bootstrap noise, and only rows whose value
        is credibly below tau; ``"paper"`` the best validation score (the
        paper's protocol, which on clean data removes many rows).

    Returns
    -------
    HarmfulRows
        A DataFrame indexed like ``X``'s training rows; call ``.report()``.
    """
    Xf = _as_frame(X, "X")
    yf = _as_series(y, "y", Xf.index)
    frames: dict[str, Any] = {}
    for name, Xo, yo in (("val", X_val, y_val), ("test", X_test, y_test)):
        if Xo is not None:
            xo = _as_frame(Xo, f"X_{name}")
            frames[f"X_{name}"] = xo
            frames[f"y_{name}"] = None if yo is None else _as_series(yo, f"y_{name}", xo.index)
    if test_fraction is None:  # test rows only serve the after-cleansing score
        test_fraction = DEFAULT_TEST_FRACTION if cleanse else 0.0
    data = prepare(Xf, yf, frames.get("X_val"), frames.get("y_val"), frames.get("X_test"),
                   frames.get("y_test"), task=task, val_fraction=val_fraction,
                   test_fraction=test_fraction, impute=impute, seed=random_state)
    given = {"model"} if estimator is not None else set()
    if metric is not None:
        given.add("metric")
    if max_iter != DEFAULT_MAX_ITER:
        given.add("max_iter")
    if method != "auto":
        given.add("method")
    if cut != "one_se":
        given.add("cut")
    options = TDShapOptions(tau, eps, k, n_min, max_iter, time_budget)
    result = run(data, estimator, metric=metric, options=options, seed=random_state,
                 do_cleanse=cleanse, progress=progress, given=given, method=method, cut=cut)
    rows = HarmfulRows(result.frame())
    rows.run = result
    return rows
