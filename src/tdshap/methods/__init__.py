"""Valuation methods. Each is a scikit-learn style estimator returning a ValuationResult."""

from tdshap.methods.base import BaseValuation
from tdshap.methods.data_oob import DataOOB
from tdshap.methods.knn_oob import KNNOutOfBag
from tdshap.methods.knn_shapley import KNNShapley
from tdshap.methods.loo import LeaveOneOut
from tdshap.methods.random_removal import RandomRemoval
from tdshap.methods.sequential import SequentialRemoval
from tdshap.methods.tdoob import ThresholdingOOB
from tdshap.methods.tdshap import TDShap
from tdshap.methods.tmc import TMCShapley

__all__ = [
    "BaseValuation", "DataOOB", "KNNOutOfBag", "KNNShapley", "LeaveOneOut", "RandomRemoval",
    "SequentialRemoval", "TDShap", "TMCShapley", "ThresholdingOOB",
]
