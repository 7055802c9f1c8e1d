"""Rows that break the model: some fits fail, the subsets holding those rows are scored by
the fallback, and every method (and the cleansing curve) says so once, at the user's line;
small subsets that fail by design (one class, too few rows) are not worth a word."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from tdshap import LeaveOneOut, TDShap, TMCShapley, cleanse
from tdshap.methods import DataOOB, SequentialRemoval, ThresholdingOOB
from tdshap.utility.base import ROWS_BREAK_THE_MODEL


class _BreaksOnSeven(DecisionTreeClassifier):
    """A tree whose fit fails on any rows that hold the value 7 (predict does not)."""

    def fit(self, X, y, *args, **kwargs):
        if np.any(np.asarray(X) == 7.0):
            raise ValueError("row 3 breaks this model")
        return super().fit(X, y, *args, **kwargs)


def _breaks():
    return _BreaksOnSeven(max_depth=3, random_state=0)


def _data(seed=0, n=30):
    rng = np.random.default_rng(seed)
    X, Xv = rng.normal(size=(n, 2)), rng.normal(size=(20, 2))
    return X, (X[:, 0] > 0).astype(int), Xv, (Xv[:, 0] > 0).astype(int)


METHODS = {
    "tdshap": lambda est: TDShap(est, k=5, n_min=0.5, max_iter=3, random_state=0),
    "tmc": lambda est: TMCShapley(est, max_permutations=3, random_state=0),
    "loo": lambda est: LeaveOneOut(est),
    "tdoob": lambda est: ThresholdingOOB(est, max_iter=3, random_state=0),
    "data_oob": lambda est: DataOOB(est, n_estimators=20, random_state=0),
    "sequential": lambda est: SequentialRemoval(TDShap(est, k=5, n_min=0.5, max_iter=2),
                                                step=5, max_remove=10, random_state=0),
}


def _broken_warnings(caught):
    return [w for w in caught if str(w.message).startswith(ROWS_BREAK_THE_MODEL)]


@pytest.mark.parametrize("name", METHODS)
def test_a_row_that_breaks_the_model_is_warned_of_once_a_run(name):
    X, y, Xv, yv = _data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        METHODS[name](_breaks()).fit(X, y, Xv, yv)
        assert not _broken_warnings(caught)  # no row breaks it: no word
        X[3, 1] = 7.0
        result = METHODS[name](_breaks()).fit(X, y, Xv, yv).result_
    found = _broken_warnings(caught)
    assert [w.filename for w in found] == [__file__]  # one, at the user's line
    message = str(found[0].message)
    assert message.startswith(f"{ROWS_BREAK_THE_MODEL} 30 training rows (ValueError: row 3 "
                              "breaks this model)")
    assert "scored as the fallback's constant prediction" in message
    if name != "sequential":  # its stages' counts are summed, the first stage's said
        assert f"on {result.extra['n_failed_fits']:,} of" in message


def test_small_subsets_that_fail_by_design_are_not_warned_of():
    # TMC's first prefixes hold one class: a logistic regression refuses them, and the
    # fallback stands for them as designed; the model fits all the rows
    X, y, Xv, yv = _data(1, n=40)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = TMCShapley(LogisticRegression(), max_permutations=5,
                            random_state=0).fit(X, y, Xv, yv).result_
    assert result.extra["n_failed_fits"] > 0  # the case is the one meant
    assert not _broken_warnings(caught)


def test_the_cleansing_curve_says_its_starting_score_is_the_fallbacks():
    X, y, Xv, yv = _data()
    X[3, 1] = 7.0
    values = np.arange(30.0)
    values[3] = -1.0  # the first row cut: only the model on all rows fails
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cleanse(values, _breaks(), X, y, Xv, yv, step=3)
    found = _broken_warnings(caught)
    assert len(found) == 1 and "the cleansing curve" in str(found[0].message)
    assert found[0].filename == __file__


class _BreaksOnLarge(DecisionTreeClassifier):
    """A tree whose fit fails on any rows holding a feature past 5 (after any scaling)."""

    def fit(self, X, y, *args, **kwargs):
        if np.abs(np.asarray(X)).max() > 5:
            raise ValueError("a large row breaks this model")
        return super().fit(X, y, *args, **kwargs)


def test_find_harmful_says_the_failed_fits_once_not_also_as_the_methods_warning():
    # its own check of the failed fits names them and the first error (and the report
    # does where they are few): the valuation's warning repeated it
    from tdshap import find_harmful
    from tdshap.app.plan import TooManyFailures

    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(120, 2)), rng.normal(size=(40, 2))
    y, yv = (X[:, 0] > 0).astype(int), (Xv[:, 0] > 0).astype(int)
    X[7, 1] = 500.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(TooManyFailures, match="a large row breaks this model"):
            find_harmful(X, y, _BreaksOnLarge(max_depth=3, random_state=0), X_val=Xv[:20],
                         y_val=yv[:20], X_test=Xv[20:], y_test=yv[20:], method="tdshap",
                         max_iter=3, random_state=0)
    assert not _broken_warnings(caught)


class _WarnsAndBreaks(_BreaksOnSeven):
    """Warns on every fit, then breaks on the rows that hold 7."""

    def fit(self, X, y, *args, **kwargs):
        warnings.warn("a warning of the model's own", UserWarning, stacklevel=2)
        return super().fit(X, y, *args, **kwargs)


def test_the_check_on_all_rows_does_not_repeat_the_models_own_warnings():
    X, y, Xv, yv = _data()
    X[3, 1] = 7.0
    model = _WarnsAndBreaks(max_depth=3, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = LeaveOneOut(model).fit(X, y, Xv, yv).result_
    own = [w for w in caught if str(w.message) == "a warning of the model's own"]
    assert len(own) == result.n_fits  # one per fit the run made, none from the check
    assert len(_broken_warnings(caught)) == 1
