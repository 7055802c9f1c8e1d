"""Deep learning for tdshap: warm-start learners (enhancement iii), PyTorch estimators
and batched subset training.

Importing this package does not import torch; its modules that need torch
(``tdshap.torch.estimators``, ``tdshap.torch.training``, ``tdshap.torch.batched``,
``tdshap.torch.modules``, ``tdshap.torch.text``) do, and need the ``torch`` extra.
"""
