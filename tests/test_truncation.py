"""One truncation rule: the base class, a fast path and after-the-fact truncation agree."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from tdshap.utility.base import Truncation, TruncationScan, Utility
from tdshap.utility.fast.linear import LinearChainUtility

pytestmark = pytest.mark.usefixtures("single_threaded")


class _Scripted(Utility):
    """V(S) = script[|S|]: a chain's scores are known before it is evaluated."""

    script = np.array([0.1, 0.5, 0.79, 0.8, 0.81, 0.8, 0.3, 0.9])

    def _fit_score(self, model, idx):
        self.n_fits += 1
        return float(self.script[len(idx)])


def test_the_rule_on_a_known_chain():
    rule = Truncation(target=0.8, tolerance=0.02, patience=2)
    z = np.zeros((8, 1))
    scripted = _Scripted(Ridge(), "neg_mae", z, np.arange(8.0), z[:2], np.zeros(2))
    scanned = scripted.evaluate_chain(np.empty(0, dtype=np.intp), np.arange(7), 0, rule)
    whole = _Scripted.script.copy()
    # 0.79, 0.8, 0.81 are within 0.016 of 0.8: the third settled step (> patience) stops
    assert rule.apply(whole) == 3 == scripted.n_truncated
    np.testing.assert_array_equal(whole, [0.1, 0.5, 0.79, 0.8, 0.81, 0.81, 0.81, 0.81])
    np.testing.assert_array_equal(scanned, whole)
    assert scripted.n_fits == 5  # the scan stopped fitting where the rule cut
    assert TruncationScan(None).cut(whole, 0) == 0


def test_base_class_fast_path_and_after_the_fact_give_identical_chains():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    y = X @ rng.normal(size=4) + rng.normal(scale=0.5, size=300)
    data = (X[:200], y[:200], X[200:], y[200:])
    ref = Utility(Ridge(), "neg_mae", *data)
    fast = LinearChainUtility(Ridge(), "neg_mae", *data)
    untruncated = Utility(Ridge(), "neg_mae", *data)
    rule = Truncation(ref(np.arange(200)), tolerance=0.05, patience=3)
    cut = 0
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(200)
        empty = np.empty(0, dtype=np.intp)
        a = ref.evaluate_chain(empty, perm, seed, rule)
        b = fast.evaluate_chain(empty, perm, seed, rule)
        c = untruncated.evaluate_chain(empty, perm, seed)
        cut += rule.apply(c)
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(c, a)
    assert ref.n_truncated == fast.n_truncated == cut > 0
