"""A scikit-learn classifier around a PyTorch module, with warm start (enhancement iii).

``TorchClassifier(module=fashion_cnn, epochs=20, pretrain_epochs=200)`` used as
the estimator of any valuation method:

1. ``prepare(X, y)`` (called once per run by ``BaseValuation``) fixes the
   classes to those of the whole training set and, with ``warm_start=True``,
   trains one model for ``pretrain_epochs`` on all of D;
2. every subset fit ``fit(X[S], y[S])`` then starts from those weights and
   trains ``epochs`` more epochs on ``S`` only.

``warm_start=False`` starts every fit from a fresh random initialisation
instead: with ``epochs=20`` that is the paper's "few-epoch" ablation, with
``epochs=200`` its "full-train" one (Table 6).

``valuation_head="knn"`` (or ``"logreg"``) values rows in the representation
of the network trained on all of D instead: valuations refit only a light
head on the embeddings for every subset (:mod:`tdshap.torch.head`), while
``fit`` (and so cleansing) still trains the network.

Every fit is reproducible: ``random_state`` (an int; the valuation sets it
per fit) seeds the initialisation, the order of the rows and the dropout
masks through :class:`~tdshap.torch.training.FitSeeds`. The valuation then
evaluates subsets through :class:`~tdshap.torch.batched.BatchedTorchUtility`
(``batched=True``, or ``"auto"`` on a GPU), which trains many subset models
as one computation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from torch import nn

from tdshap._validation import (
    as_features,
    as_pair,
    check_count,
    check_flags,
    check_random_state,
)
from tdshap.torch.head import check_head, representation
from tdshap.torch.training import FitSeeds, Schedule, resolve_device, train_single
from tdshap.utility.warm_start import Pretrained, Stopwatch

ModuleFactory = Callable[[int], nn.Module]
_DTYPES = {"float32": torch.float32, "long": torch.long}


def _seed_of(random_state: Any) -> int:
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(random_state, np.random.BitGenerator | np.random.SeedSequence):
        random_state = np.random.default_rng(random_state)  # taken by check_random_state
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**32))
    return int(random_state)


class TorchClassifier(ClassifierMixin, BaseEstimator):
    """Train a torch module with cross-entropy; predict its argmax class.

    Parameters
    ----------
    module:
        Factory ``module(n_classes) -> torch.nn.Module`` mapping a batch of
        inputs to class scores (e.g. :func:`tdshap.torch.modules.fashion_cnn`).
        For batched training and exact reproducibility use
        :class:`~tdshap.torch.modules.MaskedDropout` for dropout and no
        batch-norm.
    epochs:
        Epochs of every subset fit (20 for the paper's CNN, 5 for BERT).
    pretrain_epochs:
        Epochs of the one training on all of D (``warm_start=True`` only).
    warm_start:
        Start subset fits from the model pretrained on all of D (``True``) or
        from a fresh random initialisation (``False``).
    batch_size, optimizer, lr, weight_decay:
        Minibatch size; ``"adam"``, ``"adamw"`` or ``"sgd"``; learning rate;
        weight decay (L2 for adam/sgd, decoupled for adamw).
    warmup_steps, lr_schedule:
        Linear learning-rate warm-up over the first steps of the pretraining
        and of every fit from a fresh initialisation (not of fits that start
        from the pretrained weights), then ``"constant"`` or ``"linear"``
        decay to 0 (Hugging Face's default schedule).
    batched, max_models:
        Let valuations train up to ``max_models`` subset models at once
        (:mod:`tdshap.torch.batched`); ``False`` trains them one by one;
        ``"auto"`` batches on a GPU only (on the CPU stacking is slower than
        training one by one; ``benchmarks/deep.py`` measures both).
    device:
        ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...
    random_state:
        Integer seed of the fit (``None``: fresh entropy).
    input_dtype:
        dtype of the module's input: ``"float32"``, or ``"long"`` for token ids.
        After fit, rows must be shaped as in fit; token ids may have another
        sequence length (the last axis) when the module takes it.
    classes:
        All class labels, fixed by :meth:`prepare`; ``None``: those in ``y``.
    init_from:
        Set by :meth:`prepare`: the weights trained on all of D.
    valuation_head:
        ``None``: valuations train the network on every subset. ``"knn"``,
        ``"logreg"`` or a scikit-learn classifier: valuations train only that
        head on the embeddings (:meth:`embed`) of the network trained on all
        of D (:mod:`tdshap.torch.head`; the untrained network's with
        ``warm_start=False``); ``fit`` is unchanged.

    Attributes
    ----------
    classes_, module_, n_steps_:
        Class labels, the trained module (on ``device``), optimiser steps taken.
    """

    def __init__(
        self,
        module: ModuleFactory | None = None,
        *,
        epochs: int = 20,
        pretrain_epochs: int = 200,
        warm_start: bool = True,
        batch_size: int = 64,
        optimizer: str = "adam",
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        warmup_steps: int = 0,
        lr_schedule: str = "constant",
        batched: bool | str = "auto",
        max_models: int = 64,
        device: str = "auto",
        random_state: int | None = None,
        input_dtype: str = "float32",
        classes: Any = None,
        init_from: Pretrained | None = None,
        valuation_head: Any = None,
    ) -> None:
        self.module = module
        self.epochs = epochs
        self.pretrain_epochs = pretrain_epochs
        self.warm_start = warm_start
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.lr = lr
        self.weight_decay = weight_decay
        self.warmup_steps = warmup_steps
        self.lr_schedule = lr_schedule
        self.batched = batched
        self.max_models = max_models
        self.device = device
        self.random_state = random_state
        self.input_dtype = input_dtype
        self.classes = classes
        self.init_from = init_from
        self.valuation_head = valuation_head

    # -- configuration ---------------------------------------------------
    def _factory(self) -> ModuleFactory:
        """``module``, checked to be a factory ``module(n_classes) -> torch.nn.Module``."""
        if isinstance(self.module, nn.Module):  # callable, but its call is the forward pass
            raise ValueError(
                f"module is a built network ({type(self.module).__name__} instance), not a "
                "factory: pass its class or a function module(n_classes) -> torch.nn.Module "
                f"(e.g. module=lambda n: My{type(self.module).__name__}(n)), as every fit "
                "builds its own network."
            )
        if self.module is None or not callable(self.module):
            raise ValueError(
                "module must be a factory module(n_classes) -> torch.nn.Module, "
                f"got {self.module!r}; e.g. module=tdshap.torch.modules.fashion_cnn."
            )
        return self.module

    def _new_module(self, n_classes: int) -> nn.Module:
        """``module(n_classes)``, checked to be a ``torch.nn.Module``."""
        module = self._factory()(n_classes)
        if not isinstance(module, nn.Module):
            raise ValueError(f"module({n_classes}) returned {type(module).__name__}, not a "
                             "torch.nn.Module: the factory must build and return the network.")
        return module

    def _check(self) -> None:
        """Every parameter, checked before any data are touched or any training starts."""
        self._factory()
        check_flags(warm_start=self.warm_start)
        check_random_state(self.random_state)
        if self.input_dtype not in _DTYPES:
            raise ValueError(f"input_dtype={self.input_dtype!r} must be one of {list(_DTYPES)}.")
        resolve_device(self.device)
        # the pretraining's Schedule calls its epochs "epochs": named as the user set them
        check_count(self.pretrain_epochs, "pretrain_epochs")
        self.schedule(pretrain=True)  # Schedule checks epochs, lr, ...: a bad fit's epochs
        self.schedule(pretrain=False)  # failed only after the whole pretraining
        if self.init_from is not None and not isinstance(self.init_from, Pretrained):
            raise ValueError("init_from must be None or a Pretrained (set by prepare()).")
        # 1 and 0.0 are "in" (True, False): equal to them, yet not a choice the user wrote
        if not (isinstance(self.batched, bool | np.bool_) or (
                isinstance(self.batched, str) and self.batched == "auto")):
            raise ValueError(f"batched={self.batched!r} must be True, False or 'auto'.")
        check_count(self.max_models, "max_models", low=1)
        check_head(self.valuation_head)

    @property
    def warm(self) -> bool:
        """True when fits start from pretrained weights."""
        return bool(self.warm_start) and self.init_from is not None

    def schedule(self, pretrain: bool = False) -> Schedule:
        """The training schedule of the pretraining or of one fit."""
        warmup = 0 if (self.warm and not pretrain) else self.warmup_steps
        return Schedule(
            epochs=self.pretrain_epochs if pretrain else self.epochs,
            batch_size=self.batch_size, optimizer=self.optimizer, lr=self.lr,
            weight_decay=self.weight_decay, warmup_steps=warmup, lr_schedule=self.lr_schedule,
        )

    def _classes_for(self, y: np.ndarray) -> np.ndarray:
        classes = np.unique(y) if self.classes is None else np.asarray(self.classes)
        unknown = np.setdiff1d(np.unique(y), classes)
        if len(unknown):
            raise ValueError(f"y has labels {unknown[:5].tolist()} not in classes={classes!r}.")
        # a subset fit may see one label (classes fixed by prepare hold them all), but a
        # model of one class would predict it everywhere with probability 1
        if len(classes) < 2:
            where = "y holds" if self.classes is None else "classes lists"
            raise ValueError(f"{where} a single class ({classes.tolist()}): a classifier "
                             "needs at least 2; pass rows of several classes.")
        return classes

    @staticmethod
    def _rows(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """``X`` and ``y`` checked as the scikit-learn path checks them (same length, finite,
        y 1-D, X at least 2-D: images N x C x H x W are taken): torch would otherwise train
        on the first len(y) rows, or to NaN weights, without a word."""
        Xa, ya = as_pair(X, y, "X", "y")
        if len(ya) == 0:
            raise ValueError("cannot fit on zero rows.")
        return Xa, ya

    def _inputs(self, X: Any) -> np.ndarray:
        """``X`` of a call after fit, checked as fit checks it (one pass) and against the
        shape of the fitted rows: torch would otherwise fail deep inside the module (a
        matmul of the wrong size) or return NaN probabilities for a NaN row."""
        Xa = as_features(X, "X")
        fitted = getattr(self, "input_shape_", None)
        if fitted is not None and Xa.shape[1:] != fitted and not self._other_length(Xa):
            raise ValueError(f"X has rows of shape {Xa.shape[1:]} but the classifier was fitted "
                             f"on rows of shape {fitted}: pass rows shaped as in fit (e.g. "
                             "images of the same size), or fit again on the new shape.")
        return Xa

    def _other_length(self, X: np.ndarray) -> bool:
        """``X`` is token ids shaped as in fit but for the sequence length (the last axis).

        A text model pads and masks, so the same texts tokenised to another
        ``max_length`` are the same input (the MiniLM model of
        :mod:`tdshap.torch.text` gives the same probabilities for 8 or 16); whether
        the module takes the length is for it to say (:meth:`_module_takes`).
        """
        fitted = getattr(self, "input_shape_", None)
        return (self.input_dtype == "long" and fitted is not None and len(fitted) >= 1
                and X.shape[1:-1] == fitted[:-1] and X.shape[1:] != fitted)

    @contextmanager
    def _module_takes(self, X: np.ndarray) -> Iterator[None]:
        """Around the module's calls on ``X``: token ids of another length that the module
        cannot take (a head sized for fit's length, more tokens than its position
        embeddings) fail in one line naming both lengths, not from deep inside torch."""
        if not self._other_length(X):
            yield
            return
        length, fitted = X.shape[-1], self.input_shape_[-1]
        try:
            yield
        except torch.cuda.OutOfMemoryError:
            raise  # a longer input may not fit on the device: that is not about the module
        except (RuntimeError, IndexError) as err:
            detail = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise ValueError(
                f"X has token sequences of length {length}, but the classifier was fitted on "
                f"length {fitted} and its module cannot take {length} ({detail}): pad or "
                f"truncate the ids to {fitted} (tokenize(..., max_length={fitted})), or fit "
                "again on the new length.") from None

    # -- tensors and modules ---------------------------------------------
    def input_tensor(self, X: Any, device: torch.device) -> torch.Tensor:
        """``X`` as the module's input tensor, of ``input_dtype``."""
        if self.input_dtype not in _DTYPES:
            raise ValueError(f"input_dtype={self.input_dtype!r} must be one of {list(_DTYPES)}.")
        arr = np.asarray(X)
        if self.input_dtype == "long" and arr.size:
            # the cast truncated 2.7 to id 2 without a word; a negative id indexed from the end
            if arr.dtype.kind == "f" and not np.array_equal(arr, np.floor(arr)):
                raise ValueError("X holds fractional values, but input_dtype='long' takes "
                                 "token ids (whole numbers): pass the ids of tokenize().")
            if arr.min() < 0:
                raise ValueError(f"X holds a negative token id ({arr.min():g}): token ids "
                                 "are >= 0; pass the ids of tokenize().")
        return torch.as_tensor(arr, device=device).to(_DTYPES[self.input_dtype])

    @torch.no_grad()
    def check_output(self, module: nn.Module, Xt: torch.Tensor, n_classes: int) -> None:
        """Run ``module`` (eval mode) on a row or three of ``Xt``: rows the module cannot
        take (images of another size or number of channels, token ids past its vocabulary)
        and outputs that are not ``n_classes`` class scores are refused here, in one line
        naming the fix. Otherwise they failed from deep inside torch at the first training
        step or, with too many outputs, trained and predicted classes that do not exist."""
        if len(Xt) == 0:
            return
        rows = [0]
        if self.input_dtype == "long":  # the rows holding the smallest and largest id
            flat = Xt.reshape(len(Xt), -1)
            rows += [int(flat.min(1).values.argmin()), int(flat.max(1).values.argmax())]
        shape = tuple(Xt.shape[1:])
        was_training = module.training
        module.eval()
        try:
            with torch.random.fork_rng(devices=[]):
                out = module(Xt[rows])
        except torch.cuda.OutOfMemoryError:
            raise
        except (RuntimeError, IndexError) as err:
            detail = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise ValueError(
                f"the module cannot take rows of shape {shape} ({detail}): pass X shaped as "
                "the module expects (e.g. N x C x H x W images of its size and number of "
                "channels, token ids within its vocabulary), or a module built for these "
                "rows.") from None
        finally:
            module.train(was_training)
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (len(rows), n_classes):
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ValueError(
                f"the module returned {got} for {len(rows)} row(s), not class scores of shape "
                f"({len(rows)}, {n_classes}): y has {n_classes} classes, so module(n_classes) "
                f"must build a network with {n_classes} outputs (module({n_classes}) was "
                "called).")

    def fresh_state(self, n_classes: int, seeds: FitSeeds) -> dict[str, torch.Tensor]:
        """A fresh random initialisation, seeded by ``seeds.init`` (global RNG untouched)."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seeds.init)
            return {k: t.detach() for k, t in self._new_module(n_classes).state_dict().items()}

    def initial_state(self, n_classes: int, seeds: FitSeeds) -> dict[str, torch.Tensor]:
        """Where a fit starts: the pretrained weights, or a fresh initialisation."""
        if self.warm:
            assert self.init_from is not None
            return self.init_from.payload
        return self.fresh_state(n_classes, seeds)

    def build_module(self, n_classes: int, state: dict[str, torch.Tensor],
                     device: torch.device) -> nn.Module:
        with torch.random.fork_rng(devices=[]):  # the factory's own init is overwritten
            module = self._new_module(n_classes)
        module.load_state_dict(state)
        return module.to(device)

    def _train(self, X: Any, y: Any, classes: np.ndarray, seed: int,
               pretrain: bool) -> tuple[nn.Module, int]:
        device = resolve_device(self.device)
        seeds = FitSeeds.from_seed(seed)
        n_classes = len(classes)
        state = self.fresh_state(n_classes, seeds) if pretrain else self.initial_state(
            n_classes, seeds)
        module = self.build_module(len(classes), state, device)
        Xt = self.input_tensor(X, device)
        self.check_output(module, Xt, n_classes)
        yt = torch.as_tensor(np.searchsorted(classes, np.asarray(y)), device=device)
        steps = train_single(module, Xt, yt, np.arange(len(yt)), self.schedule(pretrain), seeds)
        return module, steps

    # -- the warm-start protocol -----------------------------------------
    def prepare(self, X: Any, y: Any) -> TorchClassifier:
        """A copy with the classes of ``y`` fixed and, if ``warm_start``, pretrained on (X, y).

        An ``init_from`` already set (the weights of an earlier ``prepare`` on the
        same rows, e.g. shared by several valuations of one data set) is kept
        instead of training again; it must come from as many rows as ``y`` has.
        """
        self._check()
        X, y = self._rows(X, y)
        classes = self._classes_for(y)
        if self.warm_start and self.init_from is not None:
            if self.init_from.n_rows != len(y):
                raise ValueError(f"init_from was trained on {self.init_from.n_rows} rows, "
                                 f"not the {len(y)} given: leave it None to pretrain here.")
            return clone(self).set_params(classes=classes)
        prepared = clone(self).set_params(classes=classes, init_from=None)
        if not self.warm_start:
            return prepared
        with Stopwatch() as watch:
            module, steps = prepared._train(X, y, classes, _seed_of(self.random_state), True)
        weights = {k: t.detach().cpu().clone() for k, t in module.state_dict().items()}
        return prepared.set_params(
            init_from=Pretrained(weights, n_rows=len(y), steps=steps, seconds=watch.seconds)
        )

    def embed(self, X: Any) -> np.ndarray:
        """The representation of ``X``: the input of the network's last linear layer (eval mode).

        The network is the fitted ``module_`` after :meth:`fit`; before it, the one
        valuations start from (the weights of :meth:`prepare`, or with
        ``warm_start=False`` the initialisation seeded by ``random_state``).
        """
        X = self._inputs(X)
        if hasattr(self, "module_"):
            module = self.module_
        else:
            if self.classes is None:
                raise ValueError("embed needs a fitted or prepared classifier (call prepare).")
            n_classes = len(self.classes)
            state = self.initial_state(n_classes, FitSeeds.from_seed(_seed_of(self.random_state)))
            module = self.build_module(n_classes, state, resolve_device(self.device))
        device = next(module.parameters()).device
        Xt = self.input_tensor(X, device)
        with self._module_takes(X):
            if not hasattr(self, "module_"):  # fitted rows were checked by fit and _inputs
                self.check_output(module, Xt, len(self.classes))
            return representation(module, Xt)

    @property
    def utility_class(self) -> Callable[..., Any]:
        """What valuations build their :class:`~tdshap.utility.base.Utility` with."""
        if self.valuation_head is not None:
            from tdshap.torch.head import head_utility

            return head_utility
        batched = self.batched
        if batched == "auto":
            batched = resolve_device(self.device).type == "cuda"
        if batched:
            from tdshap.torch.batched import BatchedTorchUtility

            return BatchedTorchUtility
        from tdshap.utility.base import Utility

        return Utility

    # -- scikit-learn API ------------------------------------------------
    def fit(self, X: Any, y: Any) -> TorchClassifier:
        """Train ``epochs`` epochs on (X, y) from the pretrained or a fresh initialisation."""
        self._check()
        X, y = self._rows(X, y)  # unbatched subset fits come here too: a pass over X[S]
        self.classes_ = self._classes_for(y)
        self.input_shape_ = X.shape[1:]  # what predict_proba and embed take after fit
        self.module_, self.n_steps_ = self._train(
            X, y, self.classes_, _seed_of(self.random_state), False
        )
        return self

    @torch.no_grad()
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of the rows of ``X`` (columns in the order of ``classes_``)."""
        if not hasattr(self, "module_"):
            raise ValueError("predict_proba needs a fitted classifier: call fit(X, y) first.")
        X = self._inputs(X)
        if len(X) == 0:  # torch.cat of no batches would fail
            return np.empty((0, len(self.classes_)))
        device = next(self.module_.parameters()).device
        self.module_.eval()
        Xt = self.input_tensor(X, device)
        with self._module_takes(X):
            out = [torch.softmax(self.module_(Xt[i : i + 512]), -1)
                   for i in range(0, len(Xt), 512)]
        return torch.cat(out).cpu().numpy().astype(float)

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class of every row of ``X`` (checked by :meth:`predict_proba`)."""
        proba = self.predict_proba(X)  # first: before fit it says so, not AttributeError
        return self.classes_[np.argmax(proba, axis=1)]
