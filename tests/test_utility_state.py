"""The utility's public run state: counters and cache, as checkpoints and workers use them."""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import Ridge

from tdshap.utility.base import Chain, Utility


def _utility() -> Utility:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(scale=0.1, size=40)
    return Utility(Ridge(), "neg_mae", X[:30], y[:30], X[30:], y[30:])


def test_cache_round_trip_and_forgetting_a_step():
    u = _utility()
    u(np.arange(10))
    size = u.cache_size
    u(np.arange(12))
    u(np.arange(14))
    items = u.cache_items()
    assert [k for k, _ in items] == [k for k, _ in u.cache_items()]  # oldest first
    u.forget_since(size)
    assert u.cache_items() == items[:size]
    other = _utility()
    other.load_cache(items)
    assert other.cache_items() == items
    fits = other.n_fits
    assert other(np.arange(14)) == dict(items)[items[-1][0]] and other.n_fits == fits


def test_counters_set_and_merge():
    u = _utility()
    u(np.arange(10))
    saved = u.counters()
    u(np.arange(11))
    u.set_counters(saved)
    assert u.counters() == saved
    u.set_counters({})
    assert all(v == 0 for v in u.counters().values())


def test_a_fresh_copy_evaluates_alone_and_merges_back_like_a_serial_run():
    serial, u = _utility(), _utility()
    chain = Chain(np.arange(5), np.arange(5, 9), 0)
    expected = serial.evaluate_chains([chain])[0]
    worker = u.fresh_copy()
    got = worker.evaluate_chains([chain])[0]
    assert u.cache_size == 0 and u.n_fits == 0  # the copy's work is its own until merged
    u.merge(worker.counters(), dict(worker.cache_items()))
    np.testing.assert_array_equal(got, expected)
    counts = [name for name in u.counter_names if name != "fit_seconds"]  # seconds vary
    assert [u.counters()[c] for c in counts] == [serial.counters()[c] for c in counts]
    assert u.fit_seconds == worker.fit_seconds > 0
    assert u.cache_items() == serial.cache_items()


def test_a_utility_made_by_hand_refuses_what_a_methods_fit_would() -> None:
    # a DataFrame was a KeyError from pandas, None scikit-learn's AttributeError, a short y
    # silently paired rows with other rows' targets
    import pandas as pd
    import pytest

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    for args, words in [
        ((Ridge(), "neg_mae", pd.DataFrame(X), y, X, y), "X must be a numpy array, got "
                                                         "DataFrame"),
        ((Ridge(), "neg_mae", X.tolist(), y, X, y), "X must be a numpy array, got list"),
        ((None, "neg_mae", X, y, X, y), "estimator must be a scikit-learn style estimator"),
        ((Ridge(), "neg_mae", X, y[:5], X, y), "X has 20 rows but y has 5"),
        ((Ridge(), "neg_mae", X, y, X[:, :2], y), r"X has \(3,\) features per row but X_val "
                                                  r"has \(2,\)"),
    ]:
        with pytest.raises((TypeError, ValueError), match=words):
            Utility(*args)
    with pytest.raises(ValueError, match="run_seed=-5 must be a whole number >= 0"):
        Utility(Ridge(), "neg_mae", X, y, X, y, run_seed=-5)


def test_a_subset_must_be_row_positions() -> None:
    # a true/false mask was read as positions 0 and 1, a fraction truncated, -1 the last row
    # and 100 an IndexError; a negative seed numpy's OverflowError
    import pytest

    u = _utility()
    with pytest.raises(ValueError, match=r"subset is a true/false mask: .*np.flatnonzero"):
        u(np.ones(30, bool))
    for subset in ([0.5, 1.5], [-1, 2], [100], np.arange(4).reshape(2, 2), "abc"):
        with pytest.raises(ValueError, match="subset must be a 1-D list of row positions "
                                             "from 0 to 29"):
            u(subset)
    with pytest.raises(ValueError, match="seed=-1 must be a whole number >= 0"):
        u(np.arange(5), seed=-1)
    assert u([]) == u(np.array([], dtype=int))  # the empty set: the fallback's score
    assert u([0.0, 1.0, 2.0]) == u([0, 1, 2])  # whole numbers as floats are positions
