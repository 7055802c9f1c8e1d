"""Property-based checks (hypothesis) of invariants that must hold for any input."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tdshap.methods.apt.bandit import APTState
from tdshap.methods.apt.sampling import initial_blocks, sample_chain
from tdshap.result import ValuationResult


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 60), data=st.data())
def test_any_sampled_chain_is_a_valid_restricted_permutation(n, data):
    k = data.draw(st.integers(1, n))
    n_min = data.draw(st.integers(0, n - k))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    block = rng.choice(n, size=k, replace=False)
    prefix, ordered = sample_chain(rng, n, block, n_min)
    assert n_min <= len(prefix) <= n - k
    assert len(set(prefix.tolist()) | set(ordered.tolist())) == len(prefix) + k
    assert set(ordered.tolist()) == set(block.tolist())
    blocks = initial_blocks(rng, n, k)
    assert sorted(np.concatenate(blocks).tolist()) == list(range(n))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=30), st.integers(1, 5))
def test_apt_mean_is_the_mean_of_the_pulls_in_any_order(rewards, k):
    state = APTState(1, tau=0.0, eps=0.1)
    for r in rewards:
        state.update(np.array([0]), np.array([r]))
    np.testing.assert_allclose(state.mu[0], np.mean(rewards), rtol=1e-9, atol=1e-9)
    assert state.counts[0] == len(rewards)
    assert len(state.select(1, np.random.default_rng(k))) == 1


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(-10, 10), st.integers(0, 50)), min_size=1, max_size=20))
def test_result_json_round_trip_preserves_everything(rows):
    values = np.array([v for v, _ in rows])
    counts = np.array([c for _, c in rows])
    r = ValuationResult("x", values, counts, np.where(counts >= 2, 0.5, np.nan))
    back = ValuationResult.from_dict(r.to_dict())
    np.testing.assert_array_equal(back.values, r.values)
    np.testing.assert_array_equal(back.counts, r.counts)
    np.testing.assert_array_equal(np.isnan(back.variances), np.isnan(r.variances))
    np.testing.assert_array_equal(back.ranking(), r.ranking())
