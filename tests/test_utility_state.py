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
