"""Deep learning for tdshap: warm-start learners (enhancement iii), PyTorch estimators
and batched subset training.

Importing this package does not import torch; its modules that need torch
(``tdshap.deep.torch_estimator``, ``tdshap.deep.training``, ``tdshap.deep.batched``,
``tdshap.deep.models``, ``tdshap.deep.text``) do, and need the ``torch`` extra.
"""
