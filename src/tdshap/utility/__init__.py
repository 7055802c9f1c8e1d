"""The utility and how it is computed: u(S) = metric of a model fitted on S.

``base`` holds :class:`Utility`, chains and truncation; ``metrics`` the
scorers; ``parallel`` the executors that evaluate chains in workers;
``warm_start`` and ``warm_sklearn`` the learners that train once on all of D
(enhancement iii); ``fast`` the exact incremental fast paths.
"""

from tdshap.utility.base import Chain, Truncation, Utility

__all__ = ["Chain", "Truncation", "Utility"]
