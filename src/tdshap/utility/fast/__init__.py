"""Exact fast paths: chains evaluated incrementally for models that allow it.

A block chain's models are trained on nested subsets that differ by one row
each. For some models the next fit follows exactly from the previous one:

* ``Ridge`` / ``LinearRegression`` (:mod:`tdshap.utility.fast.linear`): normal
  equations grown by one rank-one term per row;
* ``KNeighborsClassifier`` / ``KNeighborsRegressor`` with the Euclidean metric
  (:mod:`tdshap.utility.fast.neighbors`): a new row changes only the neighbour
  lists it enters.

Either may sit at the end of a pipeline of stateless steps
(:mod:`tdshap.utility.fast.pipeline`). :func:`make_utility` picks one when the
estimator and a prediction-based metric allow it; every step a fast path
cannot compute exactly (the empty set, too small, ill-conditioned, tied) is
refitted, so values equal those of refitting every subset (to rounding, and
bit for bit for k-NN classification).
"""

from tdshap.utility.fast.base import FastPathUtility, NotEligible
from tdshap.utility.fast.dispatch import FAST_PATHS, fast_path_name, make_utility
from tdshap.utility.fast.linear import LinearChainUtility
from tdshap.utility.fast.neighbors import NeighborsChainUtility

__all__ = [
    "FAST_PATHS",
    "FastPathUtility",
    "LinearChainUtility",
    "NeighborsChainUtility",
    "NotEligible",
    "fast_path_name",
    "make_utility",
]
