"""tdshap: find the training instances that hurt a model, fast.

Thresholding Data Shapley (TDShap): data Shapley values estimated by a
thresholding multi-armed bandit, its baselines, and the validation-driven
cleansing protocol.
"""

from tdshap.app.harmful import HarmfulRows, find_harmful
from tdshap.cleansing import CleansingResult, cleanse
from tdshap.methods import (
    LeaveOneOut,
    RandomRemoval,
    SequentialRemoval,
    TDShap,
    ThresholdingOOB,
    TMCShapley,
)
from tdshap.result import ValuationResult
from tdshap.utility.base import Utility

__all__ = [
    "CleansingResult", "HarmfulRows", "LeaveOneOut", "RandomRemoval", "SequentialRemoval",
    "TDShap", "TMCShapley", "ThresholdingOOB", "Utility", "ValuationResult", "cleanse",
    "find_harmful",
]
__version__ = "0.1.0"
