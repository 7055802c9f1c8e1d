"""``find_harmful`` (the two-line Python use), the model registry and the table encoding."""

from __future__ import annotations

import datetime
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import tdshap
from tdshap.app.models import MODELS, build_model, parse_params
from tdshap.app.tabular import MAX_LEVELS, TableEncoder, holdout_split, infer_task


# -- the façade ---------------------------------------------------------------------
def test_find_harmful_keeps_the_users_index_and_reports(capsys: pytest.CaptureFixture) -> None:
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=80), "b": rng.normal(size=80),
                      "kind": rng.choice(["p", "q"], 80)},
                     index=pd.Index([f"id{i}" for i in range(80)], name="key"))
    y = pd.Series((X["a"] > 0).astype(int), index=X.index)
    rows = tdshap.find_harmful(X, y, max_iter=2, method="tdshap")
    assert list(rows.columns) == ["value", "ci_low", "ci_high", "stderr", "n_pulls",
                                  "is_harmful", "credibly_harmful", "removed"]
    assert len(rows) == 40 and rows.index.name == "key"
    assert set(rows.index) <= set(X.index)
    result = rows.run.result
    np.testing.assert_array_equal(rows["value"].to_numpy(), result.values)
    np.testing.assert_array_equal(rows["is_harmful"].to_numpy(), result.values <= result.threshold)
    assert result.threshold == rows.run.settings["tau"].value < 0  # tau="auto" -> -eps
    assert rows["removed"].sum() == rows.run.cleansing.n_remove
    rows.report()
    printed = capsys.readouterr().out
    assert "training rows look harmful" in printed and "inferred" in printed
    assert "test accuracy" in printed  # a test part was held out too


def test_find_harmful_numpy_arrays_and_given_validation() -> None:
    X, y = make_classification(n_samples=90, n_features=4, random_state=1)
    rows = tdshap.find_harmful(X[:60], y[:60], Ridge(), X_val=X[60:], y_val=y[60:],
                               task="regression", max_iter=1, cleanse=False)
    assert list(rows.index) == list(range(60)) and "removed" not in rows.columns
    assert rows.run.data.X_test is None and rows.run.model_name == "Ridge"
    # the table is a plain DataFrame; the run stays with the HarmfulRows object
    assert type(rows.table) is pd.DataFrame and type(rows.sort_values("value")) is pd.DataFrame
    assert rows.run.result.values.shape == (60,)


def _flipped_labels(**settings: Any) -> tuple[tdshap.HarmfulRows, np.ndarray]:
    """find_harmful's defaults on 200 rows of which 20 have their label flipped."""
    X, y = make_classification(n_samples=400, n_features=6, n_informative=4, class_sep=1.5,
                               random_state=0)
    y_train = y[:200].copy()
    noisy = np.random.default_rng(0).choice(200, 20, replace=False)
    y_train[noisy] = 1 - y_train[noisy]
    rows = tdshap.find_harmful(X[:200], y_train, X_val=X[200:300], y_val=y[200:300],
                               X_test=X[300:], y_test=y[300:], random_state=0, **settings)
    return rows, np.isin(np.arange(200), noisy)


def test_find_harmful_flags_planted_label_noise() -> None:
    """With the defaults only, flagged rows are enriched in flipped labels."""
    rows, is_noise = _flipped_labels()
    flagged = rows["is_harmful"].to_numpy()
    assert is_noise[flagged].mean() >= 2 * is_noise.mean()
    assert flagged[is_noise].mean() >= 0.4


@pytest.mark.parametrize(("method", "algorithm"), [("auto", "knn_shapley"),
                                                  ("tdoob", "tdoob")])
def test_find_harmful_ranks_flipped_labels(method: str, algorithm: str) -> None:
    # auto: exact k-NN Shapley on the training and validation rows (a k-NN of a few
    # hundred rows)
    rows, is_noise = _flipped_labels(method=method)
    assert rows.run.settings["method"].value == (
        "knn_shapley" if method == "auto" else method)
    assert rows.run.result.algorithm == algorithm
    # the 20 lowest values are mostly the flipped rows
    lowest = np.argsort(rows["value"].to_numpy())[:20]
    assert is_noise[lowest].mean() >= 0.7


def test_find_harmful_with_the_knn_closed_form_ranks_and_reports_it() -> None:
    rows, is_noise = _flipped_labels(method="knn_oob")
    assert rows.run.result.algorithm == "knn_oob"
    lowest = np.argsort(rows["value"].to_numpy())[:20]
    assert is_noise[lowest].mean() >= 0.7
    assert "closed form" in rows.run.result.extra["path_note"]
    report = rows.run.extra["estimate"].line(None)
    assert "evaluations" not in report and "closed form" in report
    assert "the values are exact" in tdshap.app.report.headline(rows.run)


def test_find_harmful_refuses_mismatched_validation_columns() -> None:
    X = pd.DataFrame({"a": np.arange(40.0), "b": np.arange(40.0) % 3})
    with pytest.raises(ValueError, match=r"validation data's columns .* lacks the column 'b'"):
        tdshap.find_harmful(X, np.arange(40) % 2, X_val=X[["a"]], y_val=np.arange(40) % 2)


def test_a_column_difference_quotes_the_names() -> None:
    # a column named "extra" read "has extra extra"
    X = pd.DataFrame({"a": np.arange(40.0), "b": np.arange(40.0) % 3, "c": np.ones(40)})
    other = X.rename(columns={"b": "extra", "c": "and"})
    with pytest.raises(ValueError, match=r"it lacks the columns 'b', 'c' and has the extra "
                       r"columns 'extra', 'and'\.$"):
        tdshap.find_harmful(X, np.arange(40) % 2, X_val=other, y_val=np.arange(40) % 2)


@pytest.mark.parametrize("cut", ["one-se", "Paper", None])
def test_find_harmful_names_its_own_cut_parameter(cut) -> None:
    # the error named `rule`, a parameter find_harmful does not have
    X = pd.DataFrame({"a": np.arange(40.0), "b": np.arange(40.0) % 3})
    with pytest.raises(ValueError, match=rf"^cut={cut!r} is not a cut rule: use 'one_se'"):
        tdshap.find_harmful(X, np.arange(40) % 2, cut=cut)


def test_find_harmful_says_a_time_budget_must_be_finite() -> None:
    # inf was refused as "must be > 0 seconds", which it is
    X = pd.DataFrame({"a": np.arange(40.0), "b": np.arange(40.0) % 3})
    with pytest.raises(ValueError, match=r"time_budget=inf must be a finite number of seconds "
                       r"> 0, or None for no limit"):
        tdshap.find_harmful(X, np.arange(40) % 2, time_budget=float("inf"))


def test_find_harmful_names_a_model_class_given_for_a_model() -> None:
    # the class itself (no parentheses) was "ABCMeta is not a scikit-learn estimator"
    from sklearn.neighbors import KNeighborsClassifier

    X = pd.DataFrame({"a": np.arange(40.0), "b": np.arange(40.0) % 3})
    with pytest.raises(ValueError, match=r"got the class KNeighborsClassifier: pass "
                       r"KNeighborsClassifier\(\)"):
        tdshap.find_harmful(X, np.arange(40) % 2, KNeighborsClassifier)


def test_report_needs_a_run() -> None:
    with pytest.raises(ValueError, match="no run attached"):
        tdshap.HarmfulRows({"value": [0.0]}).report()


@pytest.mark.parametrize("n_worst", [-1, 2.5, float("nan"), "3", True],
                         ids=["negative", "fraction", "nan", "text", "bool"])
def test_report_refuses_a_count_of_rows_that_is_not_one(n_worst, capsys) -> None:
    # -1 printed "worst -1 rows:" and every row but the last; 2.5 ended in Python's
    # "slice indices must be integers"
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    rows = tdshap.find_harmful(X, y, cleanse=False)
    with pytest.raises(ValueError, match=r"n_worst=.* must be a whole number >= 0"):
        rows.report(n_worst=n_worst)
    assert capsys.readouterr().out == ""
    rows.report(n_worst=10**9)  # more than there are: all of them, and the header says so
    assert f"worst {len(rows)} rows:" in capsys.readouterr().out


# -- models -------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_every_registry_model_fits(name: str, task: str) -> None:
    X, y = make_classification(n_samples=40, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    if MODELS[name].target(task) is None:
        with pytest.raises(ValueError, match="only"):
            build_model(name, task)
        return
    model = build_model(name, task, {"max_iter": 50} if name == "mlp" else None)
    assert not isinstance(model, Pipeline)  # scaling is the encoder's job
    assert model.fit(X, y).predict(X).shape == (40,)


def test_params_override_defaults_and_reach_the_model() -> None:
    tree = build_model("dtree", "regression", {"max_depth": 2}, n_rows=1000)
    assert tree.get_params()["max_depth"] == 2 and tree.get_params()["min_samples_leaf"] == 64
    assert build_model("dtree", "regression", n_rows=40).min_samples_leaf == 5
    assert build_model("dtree", "regression", n_rows=221).min_samples_leaf == 14
    assert build_model("dtree", "regression", n_rows=5000).min_samples_leaf == 64
    assert build_model("ridge", "regression", parse_params('{"alpha": 3.5}')).alpha == 3.5
    imported = build_model("sklearn.neighbors:KNeighborsRegressor", "regression",
                           {"n_neighbors": 2})
    assert imported.n_neighbors == 2
    with pytest.raises(ValueError, match="JSON object"):
        parse_params("[1, 2]")


class _WritesFiles(ClassifierMixin, BaseEstimator):
    """A stand-in for CatBoost (not installed here): it writes beside each fit unless told
    not to, as CatBoost's catboost_info/ folder."""

    def __init__(self, depth: int = 6, allow_writing_files: bool = True,
                 train_dir: str | None = None) -> None:
        self.depth = depth
        self.allow_writing_files = allow_writing_files
        self.train_dir = train_dir

    def fit(self, X: Any, y: Any) -> _WritesFiles:
        self.classes_ = np.unique(y)
        return self

    def predict(self, X: Any) -> np.ndarray:
        return np.full(len(X), self.classes_[0])


def test_a_model_that_writes_files_by_default_is_built_not_to(monkeypatch) -> None:
    fake = types.ModuleType("catboost")
    fake.CatBoostClassifier = _WritesFiles  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "catboost", fake)
    model = build_model("catboost:CatBoostClassifier", "classification", {"depth": 4})
    assert model.allow_writing_files is False and model.depth == 4
    assert build_model("catboost:CatBoostClassifier", "classification",
                       {"allow_writing_files": False}).allow_writing_files is False
    for params in ({"train_dir": "/tmp/elsewhere"}, {"allow_writing_files": True}):
        with pytest.raises(ValueError, match=r"makes catboost:CatBoostClassifier write files "
                           r"beside its fits, outside the output folder"):
            build_model("catboost:CatBoostClassifier", "classification", params)


# -- tables -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("values", "task"),
    [(["a", "b"], "classification"), ([0, 1, 2, 1], "classification"),
     ([0.5, 1.0], "regression"), (list(range(MAX_LEVELS + 1)), "regression"),
     ([True, False], "classification")],
)
def test_infer_task(values: list, task: str) -> None:
    assert infer_task(pd.Series(values))[0] == task


def test_infer_task_counts_large_whole_numbers_exactly() -> None:
    # counted as floats, two labels beyond 2**53 were "1 distinct whole-number values"
    task, reason = infer_task(pd.Series([2**62, 2**62 + 1] * 10))
    assert task == "classification" and reason.startswith("the target has 2 distinct")


def test_a_missing_time_among_text_is_a_missing_value_not_a_time() -> None:
    # pd.NaT is a datetime to isinstance: the check that refuses dates in a text column
    # must leave it to impute, as NaN and None are
    X = pd.DataFrame({"a": _X[:, 0], "c": np.array(["x", "y", pd.NaT] * 20, dtype=object)})
    with pytest.raises(ValueError, match=r"column 'c' has \d+ missing values"):
        tdshap.find_harmful(X, _Y, cleanse=False)
    rows = tdshap.find_harmful(X, _Y, cleanse=False, impute=True)
    assert set(rows.run.data.encoder.imputed_) == {"c"}


def test_a_target_of_decimals_is_numbers() -> None:
    # a Parquet decimal column reads as Decimal objects: "not numeric", so every amount
    # was a class of its own and the run refused with "60 classes in 60 rows"
    from decimal import Decimal

    y = pd.Series([Decimal(f"{v:.2f}") for v in 10 * _X[:, 0]], dtype=object)
    rows = tdshap.find_harmful(_X, y, cleanse=False)
    assert rows.run.data.task == "regression"
    assert rows.run.data.task_reason == "the target has fractional values"
    whole = tdshap.find_harmful(_X, y.map(lambda v: Decimal(int(v > 0))), cleanse=False)
    assert whole.run.data.task == "classification"


def test_a_time_target_is_read_as_classes_and_says_how_to_make_it_a_number() -> None:
    days = pd.Series(pd.to_datetime(["2020-01-01", "2020-01-02"] * 10))
    for y in (days, days - days.min()):
        task, reason = infer_task(y)
        assert task == "classification" and str(y.dtype) in reason and "convert" in reason
    assert infer_task(pd.Series(["a", "b"]))[1] == "the target is not numeric: text"


def test_a_target_of_date_objects_is_read_as_dates() -> None:
    # a Parquet date32 column reads as datetime.date objects: refused ("a label of type
    # date"), while the same dates as datetime64 are classes, each date one
    days = [datetime.date(2020, 1, 1 + int(v > 0)) for v in _X[:, 0]]
    as_objects = tdshap.find_harmful(_X, pd.Series(days, dtype=object), max_iter=20)
    as_times = tdshap.find_harmful(_X, pd.Series(pd.to_datetime(days)), max_iter=20)
    assert as_objects.run.data.task == "classification"
    assert as_objects.run.data.task_reason == as_times.run.data.task_reason
    assert "convert them to numbers" in as_objects.run.data.task_reason
    pd.testing.assert_frame_equal(as_objects.table, as_times.table)


def test_a_regression_target_too_small_to_square_twice_is_refused() -> None:
    from tdshap.app.tabular import check_target

    y = np.random.default_rng(0).normal(size=50)
    # at 1e-90 every interval was a point and every lead "inf SE": rows were removed that
    # the same data in units of 1 kept
    with pytest.raises(ValueError, match=r"differ by at most .*e-90, too little to square "
                       r"twice .*multiply it by 1e90"):
        check_target(pd.Series(y * 1e-90, name="y"), "regression")
    assert np.array_equal(check_target(pd.Series(y * 1e-55), "regression"), y * 1e-55)
    assert np.array_equal(check_target(pd.Series(np.zeros(5)), "regression"), np.zeros(5))


def test_held_out_rows_as_an_array_beside_a_table_are_refused_with_the_fix() -> None:
    # the array's columns were named x0, x1, ...: "the validation data's columns do not
    # match the training data's: it lacks a, b, c and has extra x0, x1, x2"
    frame = pd.DataFrame(_X, columns=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"X_val has no column names \(it is an array\) but "
                       r"X has \(a, b, c\): .*pandas.DataFrame\(X_val, columns=X.columns\)"):
        tdshap.find_harmful(frame, _Y, LogisticRegression(), X_val=_X, y_val=_Y)
    with pytest.raises(ValueError, match=r"X has no column names \(it is an array\) but "
                       "X_test has"):
        tdshap.find_harmful(_X, _Y, LogisticRegression(), X_val=_X, y_val=_Y, X_test=frame,
                            y_test=_Y)


def test_a_column_name_or_a_file_name_given_as_data_is_refused_with_the_fix() -> None:
    # numpy read them as 0-d arrays: "y must be 1-D with one target per row of X (60), got
    # shape ()", "X must be 2-D (rows x features), got shape ()"
    frame = pd.DataFrame(_X, columns=["a", "b", "c"]).assign(t=_Y)
    with pytest.raises(ValueError, match=r"y='t' is the name of a column, not the targets"):
        tdshap.find_harmful(frame, "t")
    with pytest.raises(ValueError, match=r"X is text \('train.csv'\), not data: read the "
                       "file first"):
        tdshap.find_harmful("train.csv", "t")


@pytest.mark.parametrize(("given", "message"), [
    ("X None", r"X is None: give rows x features as a list, a numpy array or a pandas "
     r"DataFrame"),
    ("X generator", r"X is a generator: an iterator, which numpy reads as one value; give "
     r"list\(X\)"),
    ("y None", r"y is None: give one target per row as a list, a numpy array or a pandas "
     r"Series"),
    ("y set", r"y is a set: unordered; give a list in the rows' order"),
    ("y dict", r"y is a dict: give pandas.Series\(y\) \(its keys as row labels\)"),
])
def test_data_numpy_reads_as_one_value_is_refused_naming_its_type(given, message) -> None:
    # numpy read them as 0-d arrays: "X must be 2-D (rows x features), got shape ()", and
    # TDShap(...).fit of a generator said X "holds non-numeric values" to be one-hot encoded
    def data() -> tuple[Any, Any]:
        odd = {"X None": None, "X generator": (row for row in _X), "y None": None,
               "y set": set(_Y), "y dict": dict(enumerate(_Y))}[given]
        return (odd, _Y) if given.startswith("X") else (_X, odd)

    with pytest.raises(ValueError, match=message):
        tdshap.find_harmful(*data())
    with pytest.raises(ValueError, match=message):
        tdshap.TDShap(LogisticRegression()).fit(*data(), _X, _Y)


def test_a_table_that_still_holds_the_target_is_refused() -> None:
    # the model read the answer from the target's own column, silently
    frame = pd.DataFrame(_X, columns=["a", "b", "c"]).assign(t=_Y)
    with pytest.raises(ValueError, match=r"X holds the target column 't' \(y is that "
                       r"column\): every model would read the answer from it"):
        tdshap.find_harmful(frame, frame["t"], LogisticRegression())


def test_a_copy_of_the_target_under_another_name_is_warned_of() -> None:
    # a copy ("label_copy", the target encoded again): every model read the answer from it
    # and every row seemed about as good, with no word
    from tdshap.app.harmful import prepare

    frame = pd.DataFrame(_X, columns=["a", "b", "c"])
    y = pd.Series(_Y, name="t")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prepare(frame, y)  # no copy: no warning
    with pytest.warns(UserWarning, match=r"feature column 'copy' equals the target 't' in "
                      r"every row: every model reads the answer from it"):
        prepare(frame.assign(copy=_Y), y)


def test_a_complex_regression_target_is_refused() -> None:
    # its imaginary parts were dropped, with only numpy's ComplexWarning
    X, y = _X, np.arange(len(_X), dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning on the way
        with pytest.raises(ValueError, match=r"target column 'y' holds complex numbers: a "
                           "regression target must be real"):
            tdshap.find_harmful(X, y + 1j, Ridge())


def test_labels_that_differ_only_in_spaces_at_their_ends_are_warned_of() -> None:
    from tdshap.app.tabular import check_target

    # a CSV reader drops the spaces before a value, not after it: "yes " was a third class
    # beside "yes" and "no", silently
    y = pd.Series(["yes", "no", "yes ", "no"] * 5, name="t")
    with pytest.warns(UserWarning, match=r"target column 't' of the training data holds "
                      r"labels that differ only in spaces at their ends \('yes', 'yes '\)"):
        check_target(y, "classification")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_target(y.str.strip(), "classification")
        check_target(y.str.strip().astype("category"), "classification")


def test_labels_a_file_reader_changes_are_named_in_the_error() -> None:
    from tdshap.app.tabular import check_target

    # pandas reads a class "NA" as missing: "drop those rows" alone would drop a class
    with pytest.raises(ValueError, match=r"missing values .* NA, N/A, null, None, NaN .* "
                       r"e\.g\. 'N\.A\.'"):
        check_target(pd.Series(["EU", None] * 5, name="y"), "classification")
    with pytest.raises(ValueError, match=r"missing values .* NA, N/A"):
        TableEncoder().fit(pd.DataFrame({"region": ["EU", None] * 5, "x": range(10)}))
    # "00123" and "123" were one class, with no word of why
    with pytest.raises(ValueError, match=r"single class \(123\).*prefix codes with a letter"):
        check_target(pd.Series([123, 123] * 5, name="y"), "classification")
    with pytest.raises(ValueError, match=r"single class \('a'\): classification needs at "
                       r"least two\.$"):
        check_target(pd.Series(["a"] * 10, name="y"), "classification")


def test_numbers_held_as_python_objects_are_numbers() -> None:
    # X.astype(object) (or Decimals) made every number a text level: the columns were
    # dropped as "a different text in every row" and the rows valued without them
    from decimal import Decimal

    rng = np.random.default_rng(0)
    num = pd.DataFrame({"a": rng.normal(size=40), "b": np.arange(40.0)})
    num.loc[3, "a"] = np.nan  # a missing cell leaves the column numeric
    train = num.astype(object)
    train["d"] = [Decimal(i) / 4 for i in range(40)]
    # beyond int64: Python ints (2**20 apart: 2**70 + 1 and 2**70 + 2 are one float, refused)
    train["big"] = [2**70 + i * 2**20 for i in range(40)]
    train["t"] = ["x", "y"] * 20
    enc = TableEncoder(impute=True).fit(train)
    assert enc.numeric_ == ["a", "b", "d", "big"] and enc.categorical_ == ["t"]
    plain = TableEncoder(impute=True).fit(num.assign(d=np.arange(40) / 4, t=train["t"]))
    np.testing.assert_allclose(enc.transform(train)[:, [0, 1, 2]],
                               plain.transform(num.assign(d=np.arange(40) / 4,
                                                          t=train["t"]))[:, [0, 1, 2]])
    # booleans held as objects stay what they were (levels)
    assert TableEncoder().fit(pd.DataFrame({"f": [True, False] * 5},
                                           dtype=object)).categorical_ == ["f"]


def test_encoder_one_hot_rule_and_unseen_levels() -> None:
    many = [f"L{i:02d}" for i in range(30)]
    train = pd.DataFrame({"num": np.arange(60.0), "few": ["a", "b", "c"] * 20,
                          "many": many + many[:25] + ["L00"] * 5})
    enc = TableEncoder().fit(train)
    assert enc.numeric_ == ["num"] and enc.categorical_ == ["few", "many"]
    names = enc.feature_names_
    assert [n for n in names if n.startswith("few_")] == ["few_a", "few_b", "few_c"]
    many_cols = [n for n in names if n.startswith("many_")]
    assert len(many_cols) == MAX_LEVELS and "many_infrequent_sklearn" in many_cols
    new = pd.DataFrame({"num": [1.0], "few": ["zzz"], "many": ["never-seen"]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        row = enc.transform(new, "test data")[0]
    said = [str(w.message) for w in caught]
    assert len(said) == 2 and said[0].startswith(
        "column 'few' of the test data holds no value the training rows have ('zzz'")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one known value in each column: nothing to say
        enc.transform(pd.DataFrame({"num": [1.0, 2.0], "few": ["zzz", "a"],
                                    "many": ["never-seen", "L01"]}))
    assert row[0] == pytest.approx((1.0 - 29.5) / np.arange(60.0).std())  # standardised
    assert row[1:4].sum() == 0  # unseen few-level: all zeros
    assert row[names.index("many_infrequent_sklearn")] == 1.0  # unseen many-level: infrequent


def test_encoder_impute_uses_training_rows() -> None:
    train = pd.DataFrame({"x": [1.0, np.nan, 3.0, 10.0], "c": ["u", None, "u", "v"]})
    with pytest.raises(ValueError, match="column 'x' has 1 missing"):
        TableEncoder().fit(train)
    enc = TableEncoder(impute=True).fit(train)
    assert enc.imputed_ == {"x": 3.0, "c": "u"}
    out = enc.transform(train)
    filled = np.array([1.0, 3.0, 3.0, 10.0])
    np.testing.assert_allclose(out[:, 0], (filled - filled.mean()) / filled.std())
    assert list(out[1, 1:]) == [1.0, 0.0]
    held_out = enc.transform(pd.DataFrame({"x": [np.nan], "c": [None]}))
    assert held_out[0, 0] == out[1, 0] and list(held_out[0, 1:]) == [1.0, 0.0]
    assert enc.imputed_held_out_ == {}  # those columns are the training rows' imputed ones


def test_encoder_names_columns_filled_in_held_out_rows_only() -> None:
    # the report listed imputed_, the training rows' columns, alone: a validation column
    # filled in with the training median went unsaid
    enc = TableEncoder(impute=True).fit(pd.DataFrame({"x": [1.0, np.nan, 3.0],
                                                      "z": [5.0, 7.0, 6.0],
                                                      "c": ["u", "v", "v"]}))
    enc.transform(pd.DataFrame({"x": [np.nan], "z": [np.nan], "c": [None]}), "validation data")
    assert enc.imputed_ == {"x": 2.0}
    assert enc.imputed_held_out_ == {"z": 6.0, "c": "v"}


def _heights(n: int = 40) -> list[str]:
    """A numeric column as a file's reader sees it once one cell is not a number: text."""
    return [f"{v:.1f}" for v in np.random.default_rng(0).normal(170, 8, n)]


def test_a_numeric_column_with_a_few_typos_is_refused_naming_the_cells() -> None:
    cells = _heights()
    cells[3], cells[17] = "n/a-ish typo", "?"
    train = pd.DataFrame({"height": cells, "colour": ["red", "blue"] * 20})
    # it was one-hot encoded as 40 text levels, silently
    with pytest.raises(ValueError, match=r"column 'height' of the training data holds numbers "
                       r"except in 2 cells: 'n/a-ish typo' \(row 3\), '\?' "
                       r"\(row 17\)\. Correct those cells, or blank them .* `impute` fills"):
        TableEncoder().fit(train)


@pytest.mark.parametrize("distinct", [True, False])
def test_numbers_with_thousands_separators_are_refused(distinct: bool) -> None:
    # a different one in every row: set aside as "row names"; else one-hot levels; silently
    cells = [f"{1000 + 7 * i if distinct else 1000 + i % 3:,}" for i in range(40)]
    cells[5] = "999"
    train = pd.DataFrame({"income": cells, "colour": ["red", "blue"] * 20})
    with pytest.raises(ValueError, match=r"column 'income' of the training data holds numbers "
                       r"written with thousands separators \('1,0\d\d' in row 0, and 38 more\)"
                       r": remove the separators"):
        TableEncoder().fit(train)
    # text that merely holds commas is text
    TableEncoder().fit(pd.DataFrame({"name": [f"Doe, J{i % 5}" for i in range(40)]}))


@pytest.mark.parametrize(("cell", "words"), [
    (lambda v: f"{v:.2f}".replace(".", ","), r"a decimal comma \('1\d\d,\d\d' in row 0"),
    # three decimals read like thousands: only "remove the separators" was said
    (lambda v: f"{v:.3f}".replace(".", ","), r"thousands separators \('1\d\d,\d\d\d' in row "
     r"0, and 39 more\): remove the separators \(3456, not 3,456\), or if the commas are "
     r"decimal commas, write a decimal point"),
    (lambda v: f"{v - 170:.3f}".replace(".", ","), r"a decimal comma \('-?\d+,\d\d\d' in row \d+"),
    (lambda v: f"{v - 170:.1f}".replace("-", "\u2212"), r"a minus sign other than '-'"),
    (lambda v: f"\xa0{v:.1f}\xa0", r"non-breaking or other non-ASCII spaces"),
    # a currency or percent sign: text to the reader, a price or a share became levels
    (lambda v: f"${v:,.2f}", r"a currency or percent sign \('\$1\d\d\.\d\d' in row 0, "
     r"and 39 more\): write them as plain numbers"),
    (lambda v: f"-${v:.2f}", r"a currency or percent sign \('-\$1\d\d\.\d\d' in row 0"),
    (lambda v: f"{v:.1f} %", r"a currency or percent sign \('1\d\d\.\d %' in row 0"),
    (lambda v: f"{v:.2f} \u20ac".replace(".", ","), r"a currency or percent sign"),
    # digit groups set apart by a space (French), an apostrophe (Swiss) or an underscore:
    # row names with a warning that called the measurement an id
    (lambda v: f"{100 * v:,.0f}".replace(",", " "), r"spaces, apostrophes or underscores "
     r"between digit groups \('1\d \d\d\d' in row 0, and 39 more\): remove them"),
    (lambda v: f"{100 * v:,.1f}".replace(",", " ").replace(".", ","), r"spaces, apostrophes"),
    (lambda v: f"{100 * v:,.0f}".replace(",", "'"), r"spaces, apostrophes"),
    (lambda v: f"{100 * v:_.0f}", r"spaces, apostrophes or underscores"),
], ids=["decimal-comma", "comma-or-thousands", "decimal-comma-1,234", "minus-sign", "nbsp",
        "dollars", "minus-dollars", "percent", "euros-decimal-comma", "space-groups",
        "space-groups-decimal-comma", "apostrophe-groups", "underscore-groups"])
def test_numbers_in_another_notation_are_refused_naming_it(cell: Any, words: str) -> None:
    # read as text, a different one in every row: set aside as "row names" with a warning
    # that called the measurement an id, or (repeated) one-hot levels without a word
    cells = [cell(v) for v in np.random.default_rng(0).normal(170, 8, 40)]
    train = pd.DataFrame({"height": cells, "colour": ["red", "blue"] * 20})
    with pytest.raises(ValueError, match=r"column 'height' of the training data holds "
                       rf"numbers written with {words}"):
        TableEncoder().fit(train)
    with pytest.raises(ValueError, match=rf"target column 'height' holds numbers written "
                       rf"with {words}.* or give `task` classification"):
        infer_task(train["height"])


def test_a_column_constant_in_training_but_not_held_out_is_warned_of() -> None:
    # no model learns from it, yet an RBF SVM's validation accuracy fell from 0.90 to 0.58
    # on its held-out values, and the rows were valued on those predictions, silently
    train = pd.DataFrame({"a": np.arange(40.0), "k": 1.0})
    encoder = TableEncoder().fit(train)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoder.transform(train.iloc[:5], "validation data")  # the same constant: quiet
        encoder.transform(train.assign(k=[1.0, 2.0] * 20), "training data")  # its own rows
    with pytest.warns(UserWarning, match=r"column 'k' is constant in the training rows \(1\) "
                      r"but not in the validation data \(20 rows differ, e\.g\. 2 in row 1\)"
                      r".*drop the column"):
        encoder.transform(train.assign(k=[1.0, 2.0] * 20), "validation data")


def test_feature_levels_that_differ_only_in_spaces_at_their_ends_are_warned_of() -> None:
    # a CSV reader drops the spaces before a value, not after it: "red " was a level of its
    # own in training, and an unknown level (all zeros) in validation, silently
    train = pd.DataFrame({"a": np.arange(40.0), "colour": ["red", "blue"] * 20})
    with pytest.warns(UserWarning, match=r"column 'colour' of the training data holds levels "
                      r"that differ only in spaces at their ends \('red', 'red '\)"):
        TableEncoder().fit(train.assign(colour=["red", "blue", "red "] * 13 + ["red"]))
    encoder = TableEncoder().fit(train)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoder.transform(train, "validation data")  # the same spellings: quiet
    with pytest.warns(UserWarning, match=r"column 'colour' of the validation data holds "
                      r"'red ', which the training rows spell 'red' \(and 0 more such\)"):
        encoder.transform(train.assign(colour=["red ", "blue"] * 20), "validation data")


def test_a_held_out_number_in_another_notation_is_named_as_such() -> None:
    # "holds '−0.5' in row 1, but it is numeric in the training rows": the minus sign, not
    # a typo, was what made it text
    encoder = TableEncoder().fit(pd.DataFrame({"a": np.linspace(-1, 1, 40)}))
    held = pd.DataFrame({"a": ["0.5", "\u22120.5"]})
    with pytest.raises(ValueError, match=r"holds '−0.5' in row 1, but it is numeric in the "
                       r"training rows: .*; it is a number written with a minus sign other "
                       r"than '-'"):
        encoder.transform(held, "validation data")
    with pytest.raises(ValueError, match=r"holds '50%' in row 1, .*; it is a number written "
                       r"with a currency or percent sign: write them as plain numbers"):
        encoder.transform(pd.DataFrame({"a": ["0.5", "50%"]}), "validation data")


def test_a_numeric_target_with_a_typo_is_refused_not_made_classes() -> None:
    # read as text, the target was classification: every height a class of its own, and
    # the run valued (and cleansed) a classifier of 40 one-row classes without a word
    cells = _heights()
    cells[3] = "171.2x"
    with pytest.raises(ValueError, match=r"target column 'y' holds numbers except in 1 cell: "
                       r"'171.2x' \(row 3\); read as text, each distinct value would be a "
                       r"class of its own\. Correct those cells .* `task` classification"):
        infer_task(pd.Series(cells, name="y"))
    # the task given as regression: the cell is named, not the first row's number
    with pytest.raises(ValueError, match=r"'171.2x' \(row 3\); a regression target must be "
                       "numbers"):
        tdshap.find_harmful(np.arange(80.0).reshape(40, 2), pd.Series(cells, name="y"),
                            task="regression")
    separated = pd.Series([f"{1000 + 7 * i:,}" for i in range(40)], name="income")
    with pytest.raises(ValueError, match=r"target column 'income' holds numbers written with "
                       r"thousands separators \('1,000' in row 0, and 39 more\)"):
        infer_task(separated)


def test_a_text_target_of_a_label_per_row_or_two_is_refused_unless_the_task_is_given() -> None:
    # "$151.00": read as text, 30 one- or two-row classes valued as a classifier, with
    # only scikit-learn's warning that y "could represent a regression problem"
    prices = pd.Series([f"${100 + i % 30}.00" for i in range(40)], name="price")
    with pytest.raises(ValueError, match=r"target column 'price' holds numbers written with "
                       r"a currency or percent sign \('\$100.00' in row 0, and 39 more\): "
                       r"write them as plain numbers .* `task` classification"):
        infer_task(prices)
    names = pd.Series([f"name{i % 30}" for i in range(40)], name="who")
    with pytest.raises(ValueError, match=r"target column 'who' has 30 different labels in "
                       r"40 rows \('name0', 'name1', 'name2', ...\), fewer than 3 rows each.*"
                       r"`task` classification"):
        infer_task(names)
    X = np.random.default_rng(0).normal(size=(40, 2))
    rows = tdshap.find_harmful(X, prices, task="classification", cleanse=False)
    assert len(rows) and rows.run.data.task == "classification"
    # many classes of a few rows each, and categories, stay classification
    assert infer_task(pd.Series([f"c{i % 25}" for i in range(75)]))[0] == "classification"
    assert infer_task(prices.astype("category"))[0] == "classification"


def test_text_labels_among_a_few_whole_numbers_stay_classes() -> None:
    # "0", "1", "2" and one "other": labels, not a typo in a measurement
    labels = pd.Series(["0", "1", "2"] * 13 + ["other"], name="y")
    assert infer_task(labels)[0] == "classification"
    assert infer_task(pd.Series(["a", "b"] * 20, dtype="string"))[0] == "classification"
    with pytest.raises(ValueError, match=r"is not numeric \(e.g. 'a'\) but the task is "
                       "regression"):
        tdshap.find_harmful(np.arange(80.0).reshape(40, 2),
                            pd.Series(["a", "b"] * 20, name="y"), task="regression")


def test_a_text_column_mostly_of_numbers_is_levels_with_a_warning() -> None:
    cells = [str(i) if i % 7 else "abc" for i in range(40)]  # 85% numbers: below the typo rule
    with pytest.warns(UserWarning, match=r"column 'm' is 85% numbers and the rest text: it is "
                      "encoded as levels"):
        enc = TableEncoder().fit(pd.DataFrame({"m": cells, "x": range(40)}))
    assert enc.categorical_ == ["m"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # codes half numbers, half text: no word
        TableEncoder().fit(pd.DataFrame({"code": ["1", "2", "x", "y"] * 10, "x": range(40)}))


def test_text_id_and_declared_category_columns_are_still_one_hot() -> None:
    cells = _heights()
    cells[3] = "?"
    train = pd.DataFrame({"colour": ["red", "blue"] * 20,
                          # group ids (a different one in every row is left out: a row name)
                          "id": [f"A-{i % 8:03d}" for i in range(40)],
                          "code": ["1", "2", "x", "y"] * 10,  # half numbers: codes, as text
                          "height": pd.Categorical(cells)})  # declared as levels
    enc = TableEncoder().fit(train)
    assert enc.categorical_ == ["colour", "id", "code", "height"] and enc.numeric_ == []


@pytest.mark.parametrize("digits", [1, 6])
def test_a_typo_in_a_held_out_row_is_refused_too(digits: int) -> None:
    # the training rows' cells are all numbers then: only the whole column shows the typo;
    # with a different number in every training row the column was set aside as row names
    # and the typo dropped it silently, or not, as the seed split the rows
    y = np.array([0, 1] * 40)
    _, val, _, _ = holdout_split(y, (0.25, 0.25), True, seed=0)
    cells = [f"{v:.{digits}f}" for v in np.random.default_rng(0).normal(170, 8, 80)]
    cells[val[0]] = "5..1"
    X = pd.DataFrame({"height": cells, "colour": ["red", "blue"] * 40})
    with pytest.raises(ValueError, match=rf"column 'height' of the training data holds numbers "
                       rf"except in 1 cell: '5\.\.1' \(row {val[0]}\)"):
        tdshap.find_harmful(X, y)


@pytest.mark.parametrize(("names", "unused"), [
    ([f"n{i}" for i in range(60)], True),  # 30 training rows, each its own name
    ([f"n{i}" for i in range(59)] + [None], True),  # missing cells aside
    ([f"n{i % 25}" for i in range(60)], False),  # 25 levels: 30 training rows share some
])
def test_a_text_column_of_row_names_is_not_used_and_said_so(names: list[Any],
                                                           unused: bool) -> None:
    # it was one-hot encoded: a few rows at random got a level column of their own and stood
    # apart in every k-NN distance, without a word
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=60), "name": names})
    y = np.where(X["a"] > 0, "yes", "no")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rows = tdshap.find_harmful(X, y, cleanse=False, impute=True)
    said = [str(w.message) for w in seen if "different text in every training row" in
            str(w.message)]
    encoder = rows.run.data.encoder
    if not unused:
        assert not said and "name" in encoder.categorical_
        return
    assert said == ["column 'name' holds a different text in every training row (a row id or "
                    "name?): not used as a feature (it would only set a few rows apart at "
                    "random); name the rows by it with the command's --id-column or X's "
                    "index, or turn it into numbers (a date into days, say) to use it as one."]
    assert encoder.feature_names_ == ["a"] and encoder.unused_ == ["name"]
    assert "`name`: not used" in encoder.describe()
    # the only feature column: refused, saying so
    with pytest.raises(ValueError, match=r"column 'name' holds .* and there is no other "
                       r"feature column"):
        tdshap.find_harmful(X[["name"]], y, cleanse=False, impute=True)


def test_a_frame_with_number_column_names_and_a_text_column_is_encoded() -> None:
    # pd.DataFrame(array) names its columns 0, 1, ...: with a text column, scikit-learn's
    # get_feature_names_out ended in "unsupported operand type(s) for +: 'int' and 'str'"
    rng = np.random.default_rng(0)
    X = pd.DataFrame({0: rng.normal(size=60), 1: rng.choice(["u", "v"], 60), "z": 1.0})
    y = np.where(X[0] > 0, "yes", "no")
    rows = tdshap.find_harmful(X, y, cleanse=False)
    assert rows.run.data.encoder.feature_names_ == [0, "z", "1_u", "1_v"]


@pytest.mark.parametrize(("text", "copied"), [
    ("y,a,c\nno,1.50,p\nyes,2.50,q\nno,3.50,r\n", "y,a,c\nno,1.50,p\nno,3.50,r\n"),
    # a quoted line break (two lines, one row) and a line of a form feed alone (one row to
    # pandas): copying lines paired the wrong ones (a broken quote, the rows shifted), and
    # then pandas rewrote the whole file; records are copied now
    ('y,a,c\nno,1,"x\ny"\nyes,2,p\nno,3,q\nyes,4,r\n\x0c\n',
     'y,a,c\nno,1,"x\ny"\nno,3,q\n\x0c\n'),
    ('y,a,c\r\nno,1.50,"x\r\ny"\r\nyes,2.50,p\r\n\r\nno,3.50,q',
     'y,a,c\r\nno,1.50,"x\r\ny"\r\nno,3.50,q\n'),
    ("y,a,c\nno,1.50,p\nyes,2.50,q\nno,3.50,r\n", None),  # not read back as written: pandas
])
def test_the_cleaned_file_reads_back_as_the_kept_rows(tmp_path: Path, text: str,
                                                      copied: str | None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from tdshap.app import tabular
    from tdshap.app.tabular import read_table, write_rows_like

    if copied is None:
        monkeypatch.setattr(tabular, "_reads_as", lambda *args: False)
    (tmp_path / "t.csv").write_text(text, newline="")
    frame = read_table(tmp_path / "t.csv")
    keep = np.arange(0, len(frame), 2)
    write_rows_like(tmp_path / "t.csv", frame, keep, tmp_path / "cleaned.csv")
    back = pd.read_csv(tmp_path / "cleaned.csv", skipinitialspace=True)
    pd.testing.assert_frame_equal(back, frame.iloc[keep].reset_index(drop=True),
                                  check_dtype=False)
    with open(tmp_path / "cleaned.csv", newline="") as fh:
        written = fh.read()
    assert written == (copied or "y,a,c\nno,1.5,p\nno,3.5,r\n")


def test_a_file_with_a_byte_order_mark_reads_its_first_column_by_name(tmp_path: Path) -> None:
    # a spreadsheet's "CSV UTF-8" begins with a byte order mark: the header check read the
    # first name as "\ufeffid", so --id-column id was read as numbers ("007" as 7, in
    # values.csv and in cleaned.csv, which pandas rewrote), and "\ufeffa,a" was no repeat
    from tdshap.app.tabular import read_table, write_rows_like

    bom = b"\xef\xbb\xbf"
    (tmp_path / "t.csv").write_bytes(bom + b"id,a,y\n007,1.50,p\n008,2.50,q\n009,3.50,p\n")
    frame = read_table(tmp_path / "t.csv", text=("id",))
    assert list(frame["id"]) == ["007", "008", "009"]
    write_rows_like(tmp_path / "t.csv", frame, np.array([0, 2]), tmp_path / "cleaned.csv",
                    as_text=("id",))
    assert (tmp_path / "cleaned.csv").read_bytes() == bom + b"id,a,y\n007,1.50,p\n009,3.50,p\n"
    (tmp_path / "d.csv").write_bytes(bom + b"a,a,y\n1,2,p\n")
    with pytest.raises(ValueError, match="duplicate column names: a;"):
        read_table(tmp_path / "d.csv")


def test_holdout_split_is_stratified_and_disjoint() -> None:
    y = np.array([0] * 60 + [1] * 20)
    train, val, test, strat = holdout_split(y, (0.25, 0.25), True, seed=0)
    assert strat and len(val) == 20 and len(test) == 20 and len(train) == 40
    assert len(np.unique(np.concatenate([train, val, test]))) == 80
    assert (y[val] == 1).sum() == 5 and (y[test] == 1).sum() == 5


@pytest.mark.parametrize("X, y, message", [
    (np.ones((6, 2), dtype=complex), np.arange(6) % 2, "complex numbers"),
    (np.ones((0, 2)), np.ones(0), "0 rows"),
    (np.ones((6, 2)), np.array([1, "a"] * 3, dtype=object), "mixes text and numbers"),
])
def test_hostile_arrays_get_one_clear_error(X: Any, y: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tdshap.find_harmful(X, y)


def test_an_estimator_given_where_data_go_names_the_order_of_the_arguments() -> None:
    # find_harmful(model, X, y) said "X must be 2-D (rows x features), got shape ()",
    # TDShap(...).fit(model, ...) "X must be numeric", and cleanse an estimator "got
    # array([[...]])" with every number of the array
    from sklearn.tree import DecisionTreeClassifier

    model = DecisionTreeClassifier()
    for args in ((model, _X, _Y), (_X, model, _Y)):
        with pytest.raises(ValueError, match=r"(X|y) is an estimator \(DecisionTreeClassifier"
                           r"\(\)\), not data: .*goes third: find_harmful\(X, y, estimator\)"):
            tdshap.find_harmful(*args)
    with pytest.raises(ValueError, match=r"X is an estimator class .*TDShap\(estimator\)"
                       r"\.fit\(X, y, X_val, y_val\)"):
        tdshap.TDShap(model).fit(DecisionTreeClassifier, _X, _Y, _X)
    with pytest.raises(ValueError, match=r"y is an estimator .*goes second: cleanse\(values, "
                       r"estimator, X, y, X_val, y_val\)"):
        tdshap.cleanse(np.zeros(60), _X, _Y, model, _X, _Y)
    with pytest.raises(ValueError, match=r"with fit/predict, got a ndarray of shape \(60, 3\)\.$"):
        tdshap.cleanse(np.zeros(60), _X, _X, _Y, _X, _Y)


def test_a_record_array_or_raw_bytes_is_refused_with_the_fix() -> None:
    # a structured array was "must be 2-D, got shape (60,)" (find_harmful) or "must be
    # numeric" (a method's fit); raw bytes a TypeError from inside pandas
    records = np.zeros(60, dtype=[("a", float), ("b", float), ("c", float)])
    for i, field in enumerate("abc"):
        records[field] = _X[:, i]
    for call in (lambda X: tdshap.find_harmful(X, _Y),
                 lambda X: tdshap.TDShap(_classifier(), max_iter=1).fit(X, _Y, _X, _Y)):
        with pytest.raises(ValueError, match=r"X is a structured \(record\) array with fields "
                           r"a, b, c: pass pandas.DataFrame\(X\)"):
            call(records)
        with pytest.raises(ValueError, match=r"X holds raw bytes \(numpy dtype \|V8\)"):
            call(np.zeros((60, 3), dtype="V8"))
    assert len(tdshap.find_harmful(pd.DataFrame(records), _Y, cleanse=False)) == 45  # the fix


def test_a_sparse_matrix_is_refused_with_the_fix() -> None:
    import scipy.sparse as sp

    with pytest.raises(ValueError, match=r"sparse matrix: pass X.toarray\(\)"):
        tdshap.find_harmful(sp.csr_matrix(np.eye(6)), np.arange(6) % 2)


_X = np.random.default_rng(0).normal(size=(60, 3))
_Y = (_X[:, 0] > 0).astype(int)


def _classifier() -> Any:
    from sklearn.neighbors import KNeighborsClassifier

    return KNeighborsClassifier(5)


def test_a_regressor_makes_whole_number_targets_a_regression() -> None:
    # five whole-number levels alone would be classes; the model says otherwise
    y = np.clip(np.round(2 * _X[:, 0] + 2), 0, 4)
    rows = tdshap.find_harmful(_X, y, Ridge(), cleanse=False)
    assert rows.run.data.task == "regression"
    assert rows.run.data.task_reason == "the model is a regressor"
    assert tdshap.find_harmful(_X, y, cleanse=False).run.data.task == "classification"


def test_a_knn_on_few_rows_is_never_cut_below_its_neighbours() -> None:
    # the grid's top would leave 4 of 8 rows for a 5-NN: every such fit fails
    rows = tdshap.find_harmful(_X[:8], _Y[:8], _classifier(), X_val=_X[8:], y_val=_Y[8:],
                               X_test=_X[8:], y_test=_Y[8:])
    curve = rows.run.cleansing
    assert curve is not None
    assert max(curve.grid) == 3 and curve.extra["n_failed_fits"] == 0
    # as many rows as neighbours: nothing can go (the grid is the model on every row)
    rows = tdshap.find_harmful(_X[:5], _Y[:5], _classifier(), X_val=_X[8:], y_val=_Y[8:],
                               X_test=_X[8:], y_test=_Y[8:])
    assert rows.run.cleansing is not None and list(rows.run.cleansing.grid) == [0]


@pytest.mark.parametrize("method", ["tdshap", "tdoob"])
def test_every_trial_fit_failing_on_tiny_data_names_the_data_not_the_model(method: str) -> None:
    # 3 training rows: every subset a trial fitted held one class, which LogisticRegression
    # refuses, and the error said "fix the model or its parameters"
    X, y = np.arange(12.0).reshape(6, 2), np.array([0, 1] * 3)
    with pytest.raises(ValueError, match=r"failed on every one of 2 trial fits .*: it fits "
                       r"all 3 training rows but not rows of a single class, .* so the problem "
                       r"is the data: give more training rows of each class\.$"):
        tdshap.find_harmful(X, y, "logreg", method=method)


@pytest.mark.parametrize("method", ["tdshap", "tdoob"])
def test_many_fits_failing_on_tiny_data_names_the_data_not_the_model(method: str) -> None:
    # 4 training rows: a third of the subsets held one class, past max_failed_fraction, and
    # the error said "fix the model or its parameters"
    X, y = np.random.default_rng(1).normal(size=(8, 2)), np.array([0, 1] * 4)
    with pytest.raises(ValueError, match=r"failed on \d+ of \d+ fits during valuation .*: "
                       r"it fits all 4 training rows but not rows of a single class, .* give "
                       r"more training rows of each class \(or raise `max_failed_fraction`"):
        tdshap.find_harmful(X, y, "logreg", method=method)


def test_an_estimator_named_from_another_package_says_how_to_pass_it() -> None:
    # the fix named the command's `allow_import` and its `model`, which find_harmful has not
    with pytest.raises(ValueError, match=r"^estimator 'os:system': package 'os' is not one "
                       r"tdshap imports models from \(.*\); to use a class of another package, "
                       r"import it yourself and pass an instance: estimator=Class\(\)\.$") as err:
        tdshap.find_harmful(_X, _Y, "os:system")
    assert err.value.params == ("estimator",)
    with pytest.raises(ValueError, match=r"^estimator 'tdshap:find_harmful' is a function"):
        tdshap.find_harmful(_X, _Y, "tdshap:find_harmful")


def test_a_refused_package_carries_the_problem_apart_from_the_fix() -> None:
    # find_harmful, which has no `allow_import`, cut the command's fix off the message by
    # splitting it at "; to trust it": a rewording there would have kept it, silently
    from tdshap.app.models import PackageNotAllowed, import_class

    with pytest.raises(PackageNotAllowed) as err:
        import_class("os:system")
    assert (err.value.package, err.value.params) == ("os", ("model", "allow_import"))
    assert err.value.problem.startswith("`model` 'os:system': package 'os' is not one")
    assert str(err.value) == f"{err.value.problem}; to trust it, allow it with " \
        "`allow_import` os."


def test_too_many_neighbours_suggests_a_count_below_n() -> None:
    from sklearn.neighbors import KNeighborsClassifier

    from tdshap.app.plan import _check_neighbours

    # the suggestion was always "e.g. 5", itself not below N for N <= 5; find_harmful has no
    # `params` (the command's --params): the estimator's parameters are named instead
    with pytest.raises(ValueError, match=r"the N=4 training rows valued: every fit would fail. "
                       r"Choose n_neighbors well below N \(e.g. 2\) for the model "
                       r"\(the estimator's parameters\), or give more training rows") as err:
        tdshap.find_harmful(_X[:4], _Y[:4], KNeighborsClassifier(n_neighbors=5),
                            X_val=_X[8:], y_val=_Y[8:], cleanse=False)
    assert "`params`" not in str(err.value)
    with pytest.raises(ValueError, match=r"the N=1 training row valued: .* A k-NN needs at "
                       "least 2 training rows"):
        _check_neighbours(KNeighborsClassifier(n_neighbors=5), 1)


@pytest.mark.parametrize(("X", "y", "kwargs", "message"), [
    (pd.DataFrame(_X, columns=["a", "a", "b"]), _Y, {}, "duplicate column names: a"),
    (pd.DataFrame(_X), pd.Series(_Y[:-1]), {}, r"one target per row of X \(60\)"),
    ([[1.0, 2.0], [3.0]] * 30, _Y, {}, "rows differ in length"),
    (_X, _Y, {"y_val": _Y}, "give X_val with y_val"),
    (_X, _Y, {"X_val": _X, "y_val": np.where(_Y, "a", "b")}, "share no class"),
    (_X, _Y, {"val_fraction": "0.2"}, "val_fraction='0.2' must be a number"),
    # a share of X to hold out beside the rows it would hold out: ignored, silently
    (_X, _Y, {"X_val": _X, "y_val": _Y, "val_fraction": 0.5},
     r"`val_fraction` 0.5 has no effect with `X_val`: a share of `X` is held out only "
     r"without it"),
    (_X, _Y, {"X_test": _X, "y_test": _Y, "test_fraction": 0.3},
     r"`test_fraction` 0.3 has no effect with `X_test`"),
    (_X, _Y, {"X_val": _X, "y_val": _Y, "test_fraction": 0.3},
     r"`test_fraction` 0.3 has no effect with `X_val`"),
    (_X, _Y, {"random_state": -1}, "random_state=-1 must be a whole number >= 0"),
    (_X, _Y, {"metric": "r2"}, "'r2' is for regression"),
    (_X, _X[:, 0], {"estimator": _classifier()}, r"fractional values \(e.g. .*\) but the "
     "model is a classifier"),
    (_X, np.full(60, 3.0), {"estimator": Ridge()}, r"target is constant \(3\)"),
    (_X, np.where(np.arange(60) < 58, "a", "b"), {}, r"single class \('a'\) once validation "
     r"and test rows are held out; the other classes have too few rows \('b' has 2 rows\)"),
    (_X, _Y, {"max_iter": -1}, r"max_iter=-1 must be a whole number from 0 to 2\*\*63 - 1"),
    (_X, _Y, {"k": 0}, r"k=0 must be a whole number >= 1"),
    (_X, _Y, {"eps": "x"}, r"eps='x' must be a finite number >= 0"),
    (_X, _Y, {"n_min": -5}, r"n_min=-5 must be a whole number >= 0"),
    (_X, [f"id{i}" for i in range(60)], {}, r"target column 'y' has 60 different labels in "
     r"60 rows \('id0', 'id1', 'id2', ...\), fewer than 3 rows each on average"),
    (_X, [f"id{i}" for i in range(60)], {"task": "classification"}, "no held-out validation "
     "row has a class the training rows have: 60 classes in 60 rows"),
    (pd.DataFrame({"a": _X[:, 0], "tags": [["x"], ["y", "z"]] * 30}), _Y, {},
     r"column 'tags' of the training data holds a list in row \d+ .*one number or text"),
    # a Parquet binary column: levels where ASCII, "'ascii' codec can't decode byte 0xff"
    (pd.DataFrame({"a": _X[:, 0], "raw": [b"\xff", b"u"] * 30}), _Y, {},
     r"column 'raw' of the training data holds bytes in row \d+ \(b'\\xff'\), not text: "
     r"decode the column to text \(e.g. X\[col\].str.decode\('utf-8'\)\)"),
    # a Parquet date32 column: one level per date, silently (a datetime64 one is refused)
    (pd.DataFrame({"a": _X[:, 0], "day": [datetime.date(2020, 1, 1 + i % 5) for i in
                                          range(60)]}), _Y, {},
     r"column 'day' of the training data holds a date in row \d+ \(datetime.date\(2020, 1, "
     r"\d\)\), which cannot be used as a feature: convert the column to numbers"),
    # numpy's datetime64 and complex cells were one-hot levels, silently; timedelta64 cells
    # (an integer type to numbers.Real) failed inside with int()'s TypeError
    (pd.DataFrame({"a": _X[:, 0], "day": pd.Series([np.datetime64(f"2020-01-0{1 + i % 5}")
                                                    for i in range(60)], dtype=object)}),
     _Y, {}, r"column 'day' of the training data holds a datetime64 in row \d+ "
     r"\(np.datetime64\('2020-01-0\d'\)\), which cannot be used as a feature: convert"),
    (pd.DataFrame({"a": _X[:, 0], "span": pd.Series([np.timedelta64(i % 5, "D")
                                                     for i in range(60)], dtype=object)}),
     _Y, {}, r"column 'span' of the training data holds a timedelta64 in row \d+ .*, which "
     r"cannot be used as a feature: convert"),
    (pd.DataFrame({"a": _X[:, 0], "z": pd.Series([complex(i % 3, 1) for i in range(60)],
                                                  dtype=object)}),
     _Y, {}, r"column 'z' of the training data holds a complex in row \d+ .*, which cannot "
     r"be used as a feature: split the column into real and imaginary columns"),
    (pd.DataFrame({"a": _X[:, 0], "h": ["0x1A", *(f"{v:.2f}" for v in _X[1:, 0])]}), _Y, {},
     r"column 'h' of the \w+ data holds numbers written in hexadecimal \('0x1A' in row "
     r"0, and \d more\): write them as decimal numbers \(26, not 0x1A\)"),
    # its decimal text passed Python's 4,300 digits: int's own "Exceeds the limit" error
    (pd.DataFrame({"a": _X[:, 0], "h": ["0x" + "f" * 5000, *(f"{v:.2f}" for v in _X[1:, 0])]}),
     _Y, {}, r"column 'h' of the \w+ data holds numbers except in 1 cell: '0xfff"),
    # as text: row names with a warning, or one level per date
    (pd.DataFrame({"a": _X[:, 0], "day": [f"2020-01-{1 + i % 5:02d}" for i in range(60)]}),
     _Y, {}, r"column 'day' of the training data holds dates or times written as text "
     r"\('2020-01-0\d' in row \d+, and \d+ more\): as text each is a level of its own, not "
     r"a point in time; convert the column to numbers \(e.g. days since a date, or hours "
     r"since a time\), or drop it\.$"),
    (pd.DataFrame({"a": _X[:, 0], "day": pd.date_range("2020-01-01", periods=60)}), _Y, {},
     r"column 'day' has type datetime64\[\w+\], which cannot be used as a feature: convert "
     r"the column to numbers \(e.g. days since a date"),
    # 2**63 + i are one float: a constant feature silently, a target "constant
    # (9.22337e+18): give a target that varies"
    (pd.DataFrame({"a": _X[:, 0], "n": np.arange(60, dtype=np.uint64) + np.uint64(2**63)}),
     _Y, {}, r"column 'n' holds whole numbers too large for floating point to tell apart "
     r"\(up to 92233720368547758\d\d; its \d+ different values are 1 as floats\): subtract an "
     r"offset"),
    (_X, np.arange(60, dtype=np.uint64) + np.uint64(2**63), {}, r"target column 'y' holds "
     r"whole numbers too large for floating point to tell apart"),
    (_X, pd.Series([[0], [1]] * 30), {}, r"holds a label of type list \(\[0\]\)"),
    (_X, np.array([b"a", b"b"] * 30, dtype=object), {}, r"label of type bytes"),
    (_X, _Y, {"metric": lambda y_true, y_pred: float("nan")}, r"scores the validation rows "
     r"nan .* must give a finite number"),
    (_X, _X[:, 0] * 1e300, {}, r"target column 'y' has values too large to square \(up to"),
], ids=["duplicate-columns", "short-y-series", "ragged", "y_val-alone", "other-labels",
        "fraction-text", "val-fraction-beside-X_val", "test-fraction-beside-X_test",
        "test-fraction-beside-X_val", "negative-seed", "metric-of-other-task",
        "classifier-on-fractions",
        "constant-target", "rare-class", "bad-max-iter", "bad-k", "bad-eps", "bad-n-min",
        "one-row-per-class", "one-row-per-class-given", "list-cells", "bytes-cells",
        "date-cells", "datetime64-cells", "timedelta64-cells", "complex-cells", "hex-cell",
        "long-hex-cell", "date-text", "datetime64", "huge-whole-feature",
        "huge-whole-target",
        "list-labels", "bytes-labels", "nan-metric",
        "huge-target"])
def test_hostile_inputs_get_one_clear_error(X: Any, y: Any, kwargs: dict[str, Any],
                                            message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tdshap.find_harmful(X, y, **kwargs)


@pytest.mark.parametrize("flag", ["impute", "cleanse", "progress"])
def test_a_switch_that_is_not_true_or_false_is_refused(flag: str) -> None:
    with pytest.raises(TypeError, match=f"{flag}='no' must be True or False"):
        tdshap.find_harmful(_X, _Y, **{flag: "no"})  # "no" is truthy: it would switch it on


def test_a_float_seed_is_refused_as_everywhere_and_a_numpy_int_taken() -> None:
    # one seed policy (tdshap._validation.check_random_state): an int, as numpy and
    # scikit-learn take it; find_harmful alone used to turn 3.0 into 3
    with pytest.raises(ValueError, match=r"random_state=3.0 must be a whole number >= 0 below "
                       r"2\*\*32 \(an int\); pass 3: numpy and scikit-learn take a seed as an int"):
        tdshap.find_harmful(_X, _Y, random_state=3.0, cleanse=False)
    rows = tdshap.find_harmful(_X, _Y, random_state=np.int64(3), cleanse=False)
    pd.testing.assert_frame_equal(rows.table,
                                  tdshap.find_harmful(_X, _Y, random_state=3, cleanse=False).table)


_FRAME = pd.DataFrame(_X, columns=["a", "b", "c"], index=[f"r{i}" for i in range(60)])
_SERIES = pd.Series(_Y, index=_FRAME.index, name="y")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"y": _SERIES.sample(frac=1, random_state=0)},
     r"X and y have the same row labels in a different order .* y = y.loc\[X.index\], or "
     r"pass y.to_numpy\(\)"),
    ({"y": _SERIES.reset_index(drop=True)},
     r"X and y have different row labels \(60 of X's are not in y's, e.g. 'r0'"),
    ({"X_val": _FRAME, "y_val": _SERIES[::-1]}, r"X_val and y_val have the same row labels in "
     r"a different order .* y_val = y_val.loc\[X_val.index\]"),
], ids=["shuffled-y", "other-labels", "reversed-y_val"])
def test_a_pandas_y_with_other_row_labels_than_X_is_refused(kwargs: dict[str, Any],
                                                             message: str) -> None:
    # the rows were paired by position: a shuffled y gave every row another row's target
    given = {"X": _FRAME, "y": _SERIES, **kwargs}
    with pytest.raises(ValueError, match=message):
        tdshap.find_harmful(given.pop("X"), given.pop("y"), **given)


@pytest.mark.parametrize("columns", [["kind"], "kind", slice("a", "b"),
                                     make_column_selector(dtype_include=object)],
                         ids=["list", "name", "slice", "selector"])
def test_a_column_transformer_picking_columns_by_name_is_refused_up_front(columns: Any) -> None:
    # the model is given the encoded table as a numeric array: every fit failed with
    # scikit-learn's "Specifying the columns using strings is only supported for
    # dataframes" under a "fix the model or its parameters" that did not say why
    X = _FRAME.assign(kind=np.where(_Y == 1, "p", "q"))
    model = make_pipeline(ColumnTransformer([("enc", OneHotEncoder(), columns)],
                                            remainder="passthrough"), LogisticRegression())
    with pytest.raises(ValueError, match=r"the model's ColumnTransformer picks columns by "
                       r"name .*a numeric array without column names.*without the "
                       r"ColumnTransformer"):
        tdshap.find_harmful(X, _SERIES, model)


def test_a_column_transformer_picking_columns_by_position_of_a_reencoded_table_is_refused(
        ) -> None:
    # the model is given the encoded columns (numbers first, then one 0/1 column per text
    # level): position 0 is "a" there, not the text column "kind", and the OneHotEncoder
    # silently encoded a's values as levels
    X = _FRAME.assign(kind=np.where(_Y == 1, "p", "q"))[["kind", "a", "b", "c"]]
    model = make_pipeline(ColumnTransformer([("enc", OneHotEncoder(), [0])],
                                            remainder="passthrough"), LogisticRegression())
    with pytest.raises(ValueError, match=r"the model's ColumnTransformer picks columns by "
                       r"position \(\[0\]\), but .*columns, which are not X's \(a, b, c, "
                       r"kind_p, kind_q\)"):
        tdshap.find_harmful(X, _SERIES, model)


def test_a_column_transformer_picking_columns_by_position_still_runs() -> None:
    model = make_pipeline(ColumnTransformer([("scale", StandardScaler(), [0, 1])],
                                            remainder="passthrough"), LogisticRegression())
    rows = tdshap.find_harmful(_FRAME, _SERIES, model, cleanse=False)
    assert np.isfinite(rows["value"]).all()


def test_validation_rows_of_a_single_class_are_warned_about() -> None:
    # their accuracy rewards predicting that class everywhere: the cut silently removed 72
    # of the other class's 78 training rows (and every one of that class it removed)
    X, y = make_classification(n_samples=200, n_features=4, random_state=1)
    y_val = np.ones(50, dtype=int)
    with pytest.warns(UserWarning, match=r"the validation rows hold a single class \(1\): a "
                      r"model that predicts it for every row scores best on them, .*give "
                      r"validation rows of every class") as seen:
        tdshap.find_harmful(X[:150], y[:150], X_val=X[150:], y_val=y_val)
    # once, before any work: not again by the method that values the rows, nor the cut
    assert sum("single class" in str(w.message) for w in seen) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # two classes: no warning
        tdshap.find_harmful(X[:150], y[:150], X_val=X[150:], y_val=y[150:], cleanse=False)


@pytest.mark.parametrize("estimator", [None, "dtree"])
def test_validation_classes_no_training_row_has_are_warned_about_once(estimator) -> None:
    # before any work, and not again by the method that values the rows
    X, y = make_classification(n_samples=200, n_features=4, random_state=1)
    y_val = np.where(np.arange(50) < 4, 2, y[150:])
    with pytest.warns(UserWarning, match=r"the validation labels include 1 class\(es\) no "
                      r"training row has \(2; 4 rows\)") as seen:
        tdshap.find_harmful(X[:150], y[:150], estimator, X_val=X[150:], y_val=y_val,
                            max_iter=20)
    assert sum("no training row has" in str(w.message) for w in seen) == 1  # nor the cut


def test_an_array_of_numbers_as_text_is_numbers_as_in_the_methods() -> None:
    # np.array([["1.5", "2"], ...]) was a table of text columns ("a row id or name?"),
    # while the valuation methods read it as numbers; a column of words stays text
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    X = np.round(X, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        as_text = tdshap.find_harmful(X.astype(str), y, cleanse=False)
    np.testing.assert_allclose(as_text["value"], tdshap.find_harmful(X, y, cleanse=False)[
        "value"])
    mixed = np.column_stack([X.astype(str), np.where(y == 1, "red", "blue")])
    encoder = tdshap.find_harmful(mixed, y, cleanse=False).run.data.encoder
    assert (encoder.numeric_, encoder.categorical_) == (["x0", "x1", "x2", "x3"], ["x4"])


def test_the_paths_line_joins_its_notes_without_a_stray_full_stop(
        capsys: pytest.CaptureFixture) -> None:
    rows = tdshap.find_harmful(_X, _X[:, 0] + _Y, Ridge(), method="tdoob", max_iter=1)
    rows.report()
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("paths taken"))
    assert ".;" not in line and "; cleansing: " in line, line


def test_an_X_whose_row_labels_repeat_is_refused() -> None:
    # the table is indexed by X's labels: two rows labelled "r1" could not be told apart
    # (rows.index[rows.removed] named both, X.drop of it dropped a kept row too), as the
    # CLI refuses an --id-column that repeats ids
    X = _FRAME.set_axis([f"r{i // 2}" for i in range(60)])
    with pytest.raises(ValueError, match=r"X's row labels repeat \(e.g. 'r0', 30 repeats\): "
                       r"the table names rows by them.*X.reset_index\(drop=True\)"):
        tdshap.find_harmful(X, _SERIES.set_axis(X.index))


def test_a_pandas_y_aligned_by_label_or_given_by_position_is_used() -> None:
    shuffled = _SERIES.sample(frac=1, random_state=0)
    expected = tdshap.find_harmful(_FRAME, _SERIES, cleanse=False).table
    pd.testing.assert_frame_equal(
        tdshap.find_harmful(_FRAME, shuffled.loc[_FRAME.index], cleanse=False).table, expected)
    pd.testing.assert_frame_equal(
        tdshap.find_harmful(_FRAME, _SERIES.to_numpy(), cleanse=False).table, expected)


_MASKED_X = np.ma.masked_array(_X, mask=np.eye(60, 3, dtype=bool))  # 3 entries, 3 rows


@pytest.mark.parametrize(("X", "y", "message"), [
    (_MASKED_X, _Y, r"X is a masked array with 3 masked entries, whose hidden values would "
     r"be used: fill them with X.filled\(np.nan\) and pass impute=True"),
    (_X, np.ma.masked_array(_Y, mask=np.arange(60) == 7), r"y is a masked array with 1 "
     r"masked entry, .*drop those rows \(a target is never imputed\)"),
], ids=["masked-X", "masked-y"])
def test_a_masked_array_with_masked_entries_is_refused(X: Any, y: Any, message: str) -> None:
    # np.asarray drops the mask: the values under it were used as if they were data
    with pytest.raises(ValueError, match=message):
        tdshap.find_harmful(X, y)


def test_a_masked_array_filled_with_nan_is_imputed_and_one_without_masked_entries_used() -> None:
    rows = tdshap.find_harmful(_MASKED_X.filled(np.nan), _Y, impute=True, cleanse=False)
    assert rows.run.data.encoder.imputed_  # the masked entries became missing values
    unmasked = np.ma.masked_array(_X, mask=False)
    pd.testing.assert_frame_equal(tdshap.find_harmful(unmasked, _Y, cleanse=False).table,
                                  tdshap.find_harmful(_X, _Y, cleanse=False).table)


def test_rows_as_mappings_are_a_table() -> None:
    records = [{"a": float(v), "colour": "red" if v > 0 else "blue"} for v in _X[:, 0]]
    rows = tdshap.find_harmful(records, _Y, cleanse=False)
    columns = tdshap.find_harmful({"a": list(_X[:, 0]), "colour": [r["colour"] for r in records]},
                                  _Y, cleanse=False)
    pd.testing.assert_frame_equal(rows.table, columns.table)
    assert rows.run.data.encoder.categorical_ == ["colour"]


def test_a_python_int_beyond_numpys_is_a_whole_number() -> None:
    from tdshap._validation import check_number

    check_number(10**30, "max_iter", low=0, integer=True)  # no TypeError from numpy
    with pytest.raises(ValueError, match="must be a whole number"):
        check_number(float("inf"), "max_iter", low=0, integer=True)


def test_numbers_in_an_object_array_are_numeric_labels() -> None:
    # e.g. y built as a Python list that mixes 1 and 2.0: scikit-learn calls it "unknown"
    y = np.array([1, 2.0] * 30, dtype=object)[np.argsort(np.argsort(_X[:, 0]))]
    rows = tdshap.find_harmful(_X, y, cleanse=False)
    assert rows.run.data.task == "classification"
    assert set(np.unique(rows.run.data.y_train)) == {1, 2}


def test_one_feature_as_a_series_is_refused_with_its_own_fix() -> None:
    # "use X.reshape(-1, 1)": a Series has no reshape (find_harmful gave no fix at all), and
    # X_val's message named X
    from sklearn.neighbors import KNeighborsClassifier

    from tdshap.methods import KNNShapley

    with pytest.raises(ValueError, match=r"got shape \(60,\); use X.to_frame\(\) for a "
                       "single feature"):
        tdshap.find_harmful(pd.Series(_X[:, 0]), _Y, cleanse=False)
    with pytest.raises(ValueError, match=r"X_val must be 2-D .*use X_val.reshape\(-1, 1\)"):
        KNNShapley(KNeighborsClassifier(3)).fit(_X[:, :1], _Y, _X[:, 0], _Y)


def test_a_target_of_bins_is_refused_with_the_fix() -> None:
    # pandas.cut's categorical of intervals: every trial fit failed with scikit-learn's
    # "Unknown label type", and the message said to fix the model
    binned = pd.Series(pd.cut(_X[:, 0], bins=[-10, 0, 10]))
    with pytest.raises(ValueError, match=r"target column .* holds a label of type Interval "
                       r".*labels=False"):
        tdshap.find_harmful(_X, binned, cleanse=False)
    # whole numbers past 2**63 as classes: scikit-learn's "Unknown label type: continuous"
    with pytest.raises(ValueError, match=r"target column .* holds class labels too large"):
        tdshap.find_harmful(_X, np.where(_Y == 1, 1e20, -1e20), cleanse=False)


def test_held_out_rows_of_a_single_class_are_valid() -> None:
    # a small validation or test set may hold one class; only the training rows need two
    # (a validation set of one class is warned about: the cut favours that class)
    ones = _Y[40:] == 1
    with pytest.warns(UserWarning, match=r"the validation rows hold a single class \(1\)"):
        rows = tdshap.find_harmful(_X[:40], _Y[:40], X_val=_X[40:][ones], y_val=_Y[40:][ones],
                                   X_test=_X[40:][~ones], y_test=_Y[40:][~ones])
    assert len(rows) == 40 and rows.run.cleansing is not None


@pytest.mark.parametrize(("kwargs", "name", "valid", "none"), [
    # "or None" is offered only where None is taken, and then says what it means
    ({"tau": None}, "tau=None", "a finite number", False),
    ({"tau": float("nan")}, "tau=nan", "a finite number", False),
    ({"eps": float("inf")}, "eps=inf", "a finite number >= 0", False),
    ({"k": None}, "k=None", "a whole number >= 1", False),
    ({"n_min": 1.5}, "n_min=1.5", "a share of N strictly between 0 and 1", False),
    ({"n_min": None}, "n_min=None", "a whole number >= 0", False),
    ({"max_iter": -1}, "max_iter=-1", "from 0 to 2**63 - 1",
     "or None for no limit on rounds (with a time_budget to stop the run)"),
    ({"time_budget": 0}, "time_budget=0", "a finite number of seconds > 0",
     "or None for no limit on time"),
    # None for both was taken here, then the run failed naming atol, rtol and stopping=
    ({"max_iter": None}, "max_iter=None (no limit on rounds) needs a time_budget",
     "a whole number of rounds for max_iter", False),
])
def test_option_messages_name_the_parameter_and_offer_only_what_is_taken(
        kwargs: dict[str, Any], name: str, valid: str, none: str | bool) -> None:
    from tdshap.app.run import TDShapOptions

    with pytest.raises(ValueError) as err:
        TDShapOptions(**kwargs).check()
    message = str(err.value)
    assert message.startswith(name) and valid in message, message
    if none:
        assert none in message, message
    else:
        assert "None" not in message.replace(name, "", 1), message


def test_find_harmful_without_a_limit_on_rounds_or_time_is_refused_up_front() -> None:
    with pytest.raises(ValueError, match=r"^max_iter=None \(no limit on rounds\) needs a "
                       "time_budget") as err:
        tdshap.find_harmful(_X, _Y, max_iter=None, method="tdshap")
    assert "atol" not in str(err.value) and "stopping=" not in str(err.value)


@pytest.mark.parametrize(("check", "said"), [
    (lambda: tdshap.methods.stopping.build_stopping(time_budget=0), "or None for no limit on "
     "time"),
    (lambda: tdshap.methods.stopping.build_stopping(atol=-1), "or None not to stop on small "
     "changes"),
    (lambda: tdshap.methods.LeaveOneOut(Ridge(), max_remove=0)._check_params(10),
     "or None to rank all rows but one"),
    (lambda: tdshap.methods.SequentialRemoval(
        tdshap.methods.LeaveOneOut(Ridge()), max_remove=0)._check_params(10),
     r"or None for half of N \(5\)"),
    (lambda: tdshap.methods.ThresholdingOOB(Ridge(), metric="r2").row_metric(),
     "or None for the task's default"),
])
def test_library_messages_say_what_none_means(check: Any, said: str) -> None:
    # each read "... or None." without saying what None would do
    with pytest.raises(ValueError, match=said):
        check()


def test_the_settings_line_shows_what_the_method_took() -> None:
    # a closed form's line read "settings: k=None, n_min=None, max_iter=None, time_budget=None"
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.tree import DecisionTreeClassifier

    X, y = make_classification(120, 4, random_state=0)

    def line(rows: tdshap.HarmfulRows) -> str:
        from tdshap.app.report import text_report

        return next(s for s in text_report(rows.run).splitlines() if s.startswith("settings: "))

    closed = tdshap.find_harmful(X, y, KNeighborsClassifier(5), cleanse=False)
    assert line(closed) == "settings: seed=0"
    rows = tdshap.find_harmful(X, y, DecisionTreeClassifier(max_depth=3, random_state=0),
                               method="tdshap", max_iter=2, time_budget=60, cleanse=False,
                               random_state=3)
    k, n_min = rows.run.settings["k"].value, rows.run.settings["n_min"].value
    assert line(rows) == f"settings: k={k}, n_min={n_min}, max_iter=2, time_budget=60, seed=3"


def test_validation_rows_that_are_training_rows_are_warned_of() -> None:
    # a copy of the training file given as --val was accepted without a word: the cut was
    # judged on rows the models were trained on
    X, y = make_classification(120, 5, random_state=0)
    frame = pd.DataFrame(X)
    with pytest.warns(UserWarning, match=r"120 of the 120 validation rows are training rows"):
        tdshap.find_harmful(frame, y, X_val=frame.copy(), y_val=y.copy(), cleanse=False)
    held = {"X_val": frame.iloc[:40], "y_val": y[:40], "cleanse": False}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tdshap.find_harmful(frame.iloc[40:], y[40:], **held)  # held out: nothing to say
        # a few discrete features: rows repeat by nature, in validation too
        coarse = pd.DataFrame((X[:, :2] > 0).astype(float))
        tdshap.find_harmful(coarse.iloc[40:], y[40:], X_val=coarse.iloc[:40],
                            y_val=y[:40], cleanse=False)


def test_a_metric_the_model_cannot_give_is_refused_before_the_run() -> None:
    from sklearn.svm import SVC

    X, y = make_classification(120, 5, n_informative=3, n_classes=3, random_state=0)
    # every fit of the cut failed (SVC has no predict_proba), but only after the valuation
    with pytest.raises(ValueError, match=r"`metric` 'neg_log_loss' needs the model's "
                       r"predict_proba, which SVC does not have \(an SVM gives them with "
                       r"probability=True: the estimator's parameters \{\"probability\": "
                       r"true\}\)"):
        tdshap.find_harmful(X, y, SVC(), metric="neg_log_loss")
    # scikit-learn's "multi_class must be in ('ovo', 'ovr')" named no metric that works
    with pytest.raises(ValueError, match=r"roc_auc_ovr or roc_auc_ovo"):
        tdshap.find_harmful(X, y, LogisticRegression(), metric="roc_auc")


def test_a_probability_metric_on_validation_classes_no_training_row_has_is_refused() -> None:
    X, y = make_classification(120, 5, n_informative=3, n_classes=3, random_state=0)
    Xv, yv = X[:30], np.where(np.arange(30) < 5, 7, y[:30])  # class 7: in no training row
    # scikit-learn's "y_true contains values ... not belonging to the passed labels"
    with pytest.raises(ValueError, match=r"1 of their classes are in no training row "
                       r"\(e\.g\. 7\), so the model gives them none"):
        tdshap.find_harmful(X[30:], y[30:], LogisticRegression(), X_val=Xv, y_val=yv,
                            metric="neg_log_loss")


@pytest.mark.parametrize(("name", "every_row", "kept"),
                         [("value", False, False), ("removed", False, False),
                          ("part", True, False), ("part", False, True), ("id", True, True)])
def test_an_index_named_like_a_column_of_the_table_is_renamed(
        name: str, every_row: bool, kept: bool) -> None:
    # X's index named "value": the table had an index level and a column of that name, so
    # rows.sort_values("value") raised "ambiguous" and reset_index() "cannot insert value,
    # already exists"
    X = pd.DataFrame(_X, columns=["a", "b", "c"],
                     index=pd.Index(np.arange(100, 100 + len(_X)), name=name))
    rows = tdshap.find_harmful(X, _Y, max_iter=20, every_row=every_row)
    label = name if kept else f"{name}_index"
    assert rows.table.index.name == label
    assert set(rows.table.index) <= set(X.index)
    assert list(rows.sort_values("value")["value"]) == sorted(rows["value"])
    flat = rows.table.reset_index()
    assert flat.columns[0] == label and list(flat.columns[1:]) == list(rows.table.columns)
    # the result's own table too (without a part or removed column: no clash there)
    plain = rows.run.result.to_dataframe(index=rows.run.data.train_index)
    assert plain.index.name == (f"{name}_index" if name in plain.columns else name)
    assert plain.sort_values("value").index.name == plain.index.name
