"""Enhancements (i) and (ii): restricted permutations are sampled uniformly."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

from tdshap.methods.apt.sampling import check_block_size, initial_blocks, sample_chain


def test_prefix_respects_n_min_and_excludes_block():
    rng = np.random.default_rng(0)
    n, n_min = 30, 12
    for _ in range(500):
        block = rng.choice(n, size=4, replace=False)
        prefix, ordered = sample_chain(rng, n, block, n_min)
        assert n_min <= len(prefix) <= n - 4
        assert len(np.unique(prefix)) == len(prefix)
        assert not set(prefix) & set(block)
        assert sorted(ordered) == sorted(block)


def test_prefix_sizes_block_orders_and_members_are_uniform():
    rng = np.random.default_rng(1)
    n, n_min, block = 12, 3, np.array([2, 5, 7])
    draws = 6000
    sizes = np.zeros(n - len(block) - n_min + 1)
    orders = dict.fromkeys(itertools.permutations(block.tolist()), 0)
    members = np.zeros(n)
    for _ in range(draws):
        prefix, ordered = sample_chain(rng, n, block, n_min)
        sizes[len(prefix) - n_min] += 1
        orders[tuple(ordered.tolist())] += 1
        members[prefix] += 1
    assert chisquare(sizes).pvalue > 1e-3
    assert chisquare(list(orders.values())).pvalue > 1e-3
    others = np.setdiff1d(np.arange(n), block)
    assert members[block].sum() == 0
    assert chisquare(members[others]).pvalue > 1e-3


def test_initial_blocks_cover_every_arm_once():
    blocks = initial_blocks(np.random.default_rng(0), 23, 5)
    assert [len(b) for b in blocks] == [5, 5, 5, 5, 3]
    assert sorted(np.concatenate(blocks).tolist()) == list(range(23))


@pytest.mark.parametrize(("n", "k", "n_min", "word"), [
    (10, 0, 0, "k=0"), (10, 11, 0, "k=11"), (10, 3, 8, "n_min=8"), (10, 2, -1, "n_min=-1"),
])
def test_bad_block_sizes_are_named(n, k, n_min, word):
    with pytest.raises(ValueError, match=word):
        check_block_size(n, k, n_min)
