"""Subset models trained per second: one by one versus batched (tdshap.torch).

One TDShap block (``--blocks M``: M blocks, a parallel round) of the paper's
Fashion-MNIST setting: K + 1 CNNs
(``FashionCNN``, 421k parameters) on nested prefixes P, P+b1, ..., P+b1..bK,
each trained ``--epochs`` epochs with batch 64 from the same warm start,
then scored on the validation rows. The one-by-one path is the ordinary
``Utility`` (a ``torch.optim`` loop per model); the batched path is
``BatchedTorchUtility`` (all K + 1 models in one vmapped computation).
Both get the same chain and seed; the script prints models per second,
the speed-up, the largest score difference, and an estimate of one full
paper trial (n_iter 500, K 50, N_min 100, 20 epochs, 1000 rows) from the
measured cost per trained image.

    .venv/bin/python benchmarks/deep.py [--prefix 100 --k 10 --epochs 1 --threads 1]
    .venv/bin/python benchmarks/deep.py --prefix 500 --k 50 --blocks 4 --device cuda   # GPU
    python benchmarks/deep.py --prefix 500 --k 50 --epochs 3 --device cuda --levers

Real Fashion-MNIST when ``TDSHAP_DATA_DIR`` is set, else random images
(the speed does not depend on the pixels).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import math
import platform
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from tdshap.torch import training
from tdshap.torch.batched import BatchedTorchUtility
from tdshap.torch.estimators import TorchClassifier
from tdshap.torch.modules import fashion_cnn
from tdshap.utility.base import Chain, Utility


def images(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        from experiments.deep_data import fashion_mnist

        d = fashion_mnist(seed, (n, n, 1))
        return np.concatenate([d.X_train, d.X_val]), np.concatenate([d.y_train, d.y_val])
    except FileNotFoundError:
        rng = np.random.default_rng(seed)
        return rng.random((2 * n, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, 2 * n)


@dataclass(frozen=True)
class Lever:
    """A speed setting to time: the CUDA graph of the stacked step, cuDNN's own timing
    of its algorithms, bf16 autocast of the products and convolutions."""

    graph: bool = True
    cudnn_benchmark: bool = False
    bf16: bool = False

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        old = (training.USE_CUDA_GRAPHS, torch.backends.cudnn.benchmark)
        training.USE_CUDA_GRAPHS = self.graph
        torch.backends.cudnn.benchmark = self.cudnn_benchmark
        autocast = (torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False)
                    if self.bf16 else contextlib.nullcontext())
        try:
            with autocast:
                yield
        finally:
            training.USE_CUDA_GRAPHS, torch.backends.cudnn.benchmark = old


def paper_trial_images(n: int = 1000, k: int = 50, n_min: int = 100, n_iter: int = 500,
                       epochs: int = 20) -> tuple[int, float]:
    """Fits and trained images of one paper trial (initialisation + rounds)."""
    blocks = math.ceil(n / k) + n_iter
    mean_prefix = (n_min + n - k) / 2  # prefix size is uniform on {N_min..N-K}
    per_block = sum(mean_prefix + j for j in range(k + 1))
    return blocks * (k + 1), blocks * per_block * epochs


def profile_batched(prepared: TorchClassifier, X_tr: np.ndarray, y_tr: np.ndarray,
                    X_val: np.ndarray, y_val: np.ndarray, chains: list[Chain]) -> None:
    """Where a batched call spends its time: the top operations by device (or CPU) time."""
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    utility = BatchedTorchUtility(prepared, "accuracy", X_tr, y_tr, X_val, y_val, cache=False)
    with Lever(graph=False, cudnn_benchmark=True).applied():  # a graph hides its kernels
        utility.evaluate_chains(chains)  # warm: cuDNN's algorithm search
        with profile(activities=activities) as prof:
            utility.evaluate_chains(chains)
            if cuda:
                torch.cuda.synchronize()
    key = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    print(prof.key_averages().table(sort_by=key, row_limit=18, max_name_column_width=60))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefix", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--blocks", type=int, default=1,
                        help="M blocks per call: M (K + 1) models (a parallel round)")
    parser.add_argument("--n-val", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--profile", action="store_true",
                        help="after the timings, profile one batched call and print the "
                             "operations that took the most device time")
    parser.add_argument("--levers", action="store_true",
                        help="also time: without the CUDA graph, with cuDNN's algorithm "
                             "search (torch.backends.cudnn.benchmark), with bf16 autocast")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    n = args.prefix + args.k
    X, y = images(max(n, args.n_val), 0)
    X_tr, y_tr, X_val, y_val = X[:n], y[:n], X[-args.n_val:], y[-args.n_val:]
    est = TorchClassifier(module=fashion_cnn, epochs=args.epochs, pretrain_epochs=1,
                          device=args.device, max_models=args.blocks * (args.k + 1),
                          random_state=0)
    prepared = est.prepare(X_tr, y_tr)
    rng = np.random.default_rng(1)
    chains = []
    for b in range(args.blocks):  # each block: its own rows in its own order, its own seed
        order = rng.permutation(n)
        chains.append(Chain(order[: args.prefix], order[args.prefix :], 7 + b))
    n_models = args.blocks * (args.k + 1)
    trained = args.blocks * sum(args.prefix + j for j in range(args.k + 1)) * args.epochs
    paths = [("one-by-one", Utility, Lever()), ("batched", BatchedTorchUtility, Lever())]
    if args.levers:  # the same chains under each speed lever, side by side in this run
        paths = [("one-by-one", Utility, Lever()),
                 ("one-by-one +cudnn-bench", Utility, Lever(cudnn_benchmark=True)),
                 ("batched, no graph", BatchedTorchUtility, Lever(graph=False)),
                 ("batched", BatchedTorchUtility, Lever()),
                 ("batched +cudnn-bench", BatchedTorchUtility, Lever(cudnn_benchmark=True)),
                 ("batched +cudnn-bench +bf16", BatchedTorchUtility,
                  Lever(cudnn_benchmark=True, bf16=True))]
    timings: dict[str, list[float]] = {name: [] for name, _, _ in paths}
    scores = {}
    for _ in range(args.repeats):
        for name, cls, lever in paths:
            with lever.applied():
                utility = cls(prepared, "accuracy", X_tr, y_tr, X_val, y_val, cache=False)
                if cls is BatchedTorchUtility:  # first call compiles vmap's plan: warm it up
                    utility.evaluate_chains([Chain(np.arange(4), np.arange(4, 6), 1)])
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                scores[name] = np.concatenate(utility.evaluate_chains(chains))
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                timings[name].append(time.perf_counter() - t0)
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available()
                          else ("cpu" if args.device == "auto" else args.device))
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else (
        f"{platform.processor() or platform.machine()} CPU, {args.threads} thread(s)")
    print(f"{datetime.date.today()} | {where} | torch {torch.__version__} | "
          f"{args.blocks} block(s) of K+1={args.k + 1} CNNs on prefixes {args.prefix}..{n}, "
          f"{args.epochs} epoch(s), "
          f"batch 64, val {args.n_val}")
    best = {k: min(v) for k, v in timings.items()}
    for name, sec in best.items():
        gap = np.max(np.abs(scores[name] - scores["one-by-one"]))
        print(f"  {name:27s}: {sec:7.2f} s, {n_models / sec:7.3f} models/s, "
              f"{trained / sec:8.0f} trained images/s, {best['one-by-one'] / sec:5.2f}x "
              f"one-by-one, largest score gap {gap:.4f}")
    if args.profile:
        profile_batched(prepared, X_tr, y_tr, X_val, y_val, chains)
    fits, paper_images = paper_trial_images()
    for name, sec in best.items():
        hours = paper_images / (trained / sec) / 3600
        print(f"  paper trial ({fits} fits, {paper_images:.3g} trained images) at the {name} "
              f"rate: {hours:.1f} h (TDShap fits only; pretraining and cleansing extra)")


if __name__ == "__main__":
    main()
