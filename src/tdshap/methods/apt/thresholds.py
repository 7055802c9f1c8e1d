"""Thresholds that threshold: ``tau`` and ``eps`` set from the data.

``tau`` and ``eps`` are in units of the metric, but the size of one row's
marginal contribution depends on N, the model and the metric: on Abalone a
marginal -MAE is about 1e-3, so the paper's (tau, eps) = (-0.1, 0.1) makes
APT spread its pulls almost uniformly. With ``"auto"``, TDShap sets them
after initialisation (every arm pulled once) from the observed marginals Φ:

* ``scale`` = robust spread of the initial Φ: ``1.4826 * MAD`` (the standard
  deviation for normal data), falling back to the standard deviation, then to
  the mean ``|Φ|`` when most marginals are exactly zero (trees);
* ``eps = eps_factor * scale`` (default ``eps_factor = 0.3``, tuned below);
* ``tau = -eps`` (the paper's convention ``tau + eps = 0``: a row is harmful
  only when its value is negative with margin ``eps``).

A numeric ``tau`` or ``eps`` given by the user is kept as it is.

``eps_factor = 0.3`` was chosen on Abalone seeds never used for reported
figures; docs/results.md ("auto" thresholds) holds that study.
"""

from __future__ import annotations

import numpy as np

DEFAULT_EPS_FACTOR = 0.3


def marginal_scale(phi: np.ndarray) -> float:
    """Robust spread of the observed marginals (see the module docstring)."""
    phi = np.asarray(phi, dtype=float)
    phi = phi[np.isfinite(phi)]
    if len(phi) == 0:
        return 0.0
    mad = 1.4826 * float(np.median(np.abs(phi - np.median(phi))))
    if mad > 0:
        return mad
    std = float(np.std(phi))
    if std > 0:
        return std
    return float(np.mean(np.abs(phi)))


def auto_thresholds(
    phi: np.ndarray,
    tau: float | str,
    eps: float | str,
    eps_factor: float = DEFAULT_EPS_FACTOR,
) -> tuple[float, float]:
    """Resolve ``"auto"`` in ``tau``/``eps`` from the initial marginals ``phi``."""
    scale = marginal_scale(phi)
    if eps == "auto":
        eps_v = eps_factor * scale
        if eps_v <= 0:
            eps_v = 1e-12  # every marginal was 0: any positive precision is as good
    else:
        eps_v = float(eps)
    tau_v = -eps_v if tau == "auto" else float(tau)
    return tau_v, eps_v
