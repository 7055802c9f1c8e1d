"""Independent cross-check of our TMC Shapley and LOO against pyDVL 0.10.0.

pyDVL 0.10.0 pins ``numpy<2``, so it cannot be a test dependency of this
project (numpy 2); this script runs in a separate environment instead:

    python3 -m venv /tmp/pydvl-venv
    /tmp/pydvl-venv/bin/pip install pydvl==0.10.0 scikit-learn click tqdm threadpoolctl
    /tmp/pydvl-venv/bin/pip install --no-deps -e .
    /tmp/pydvl-venv/bin/python benchmarks/pydvl_crosscheck.py

It prints the largest |ours - pyDVL| of plain LOO (expected: float
precision) and, for permutation Monte Carlo Shapley without truncation, the
rank correlation and how many values differ by more than two combined
standard errors (expected: about 5% or fewer).
"""

from __future__ import annotations

import argparse

import numpy as np
from pydvl.valuation import Dataset, ModelUtility, SupervisedScorer
from pydvl.valuation.methods import LOOValuation, TMCShapleyValuation
from pydvl.valuation.samplers.truncation import NoTruncation
from pydvl.valuation.stopping import MinUpdates
from scipy.stats import spearmanr
from sklearn.linear_model import Ridge

from tdshap.methods import LeaveOneOut, TMCShapley
from tdshap.utility.base import Utility


def problem(n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * n, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.5 * rng.normal(size=2 * n)
    y[:3] += 5.0
    return X[:n], y[:n], X[n:], y[n:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--permutations", type=int, default=400)
    args = parser.parse_args()
    X, y, Xv, yv = problem(args.n, 0)
    v_empty = Utility(Ridge(), "neg_mae", X, y, Xv, yv).fallback_score(np.empty(0, dtype=int))
    train, test = Dataset(X, y), Dataset(Xv, yv)
    scorer = SupervisedScorer("neg_mean_absolute_error", test, default=v_empty)
    utility = ModelUtility(Ridge(), scorer)

    loo_theirs = LOOValuation(utility).fit(train).result
    loo_ours = LeaveOneOut(Ridge(), "neg_mae", random_state=0).fit(X, y, Xv, yv)
    theirs = np.empty(args.n)
    theirs[loo_theirs.indices] = loo_theirs.values
    print(f"LOO: max |ours - pyDVL| = {np.max(np.abs(loo_ours.values_ - theirs)):.3g}")

    tmc = TMCShapleyValuation(utility, truncation=NoTruncation(),
                              is_done=MinUpdates(args.permutations), seed=1,
                              show_warnings=False).fit(train).result
    mc_theirs = np.empty(args.n)
    se_theirs = np.empty(args.n)
    mc_theirs[tmc.indices] = tmc.values
    se_theirs[tmc.indices] = tmc.stderr
    ours = TMCShapley(Ridge(), "neg_mae", truncation=None, rtol=None,
                      max_permutations=args.permutations, random_state=2).fit(X, y, Xv, yv)
    se = np.sqrt(ours.result_.stderr ** 2 + se_theirs ** 2)
    outside = int(np.sum(np.abs(ours.values_ - mc_theirs) > 2 * se))
    print(f"TMC ({args.permutations} permutations, no truncation): Spearman "
          f"{spearmanr(ours.values_, mc_theirs).statistic:.3f}, "
          f"{outside}/{args.n} values differ by more than 2 combined standard errors, "
          f"max |diff| {np.max(np.abs(ours.values_ - mc_theirs)):.4f}, "
          f"median combined stderr {np.median(se):.4f}; sums (efficiency: V(D) - V(empty)) "
          f"ours {ours.values_.sum():.6f}, pyDVL {mc_theirs.sum():.6f}")


if __name__ == "__main__":
    main()
