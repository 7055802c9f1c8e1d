"""Valuation methods. Each is a scikit-learn style estimator returning a ValuationResult."""

from tdshap.methods.base import BaseValuation
from tdshap.methods.tdshap import TDShap

__all__ = ["BaseValuation", "TDShap"]
