"""One Fashion-MNIST TDShap trial with the paper's CNN on a CUDA GPU, timed in pieces.

The paper's setting (1000/1000/1000 rows, warm start from 200 epochs on all
of D, 20 epochs per subset fit, K 50, N_min 100, 500 rounds) with
``--n-blocks`` blocks trained as one vmapped stack. The valuation runs for at
most ``--seconds`` per call and checkpoints to ``--out``; a rerun with the same
``--out`` continues it, so the whole trial can be computed in commands of
under ten minutes each. Each call prints the rounds done so far, the rate and
the projected wall time of the whole trial, and times one full-train fit (the
unit of the cleansing step) to project the cleansing cost.

    python -m experiments.gpu_fmnist --seconds 240 --out /tmp/fmnist-gpu
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path

import numpy as np
import torch

from experiments.deep_data import fashion_mnist
from tdshap.methods import TDShap
from tdshap.torch.estimators import TorchClassifier
from tdshap.torch.modules import fashion_cnn

N_ITER = 500  # the paper's rounds after initialisation


def learner(epochs: int, warm: bool, max_models: int, device: str) -> TorchClassifier:
    return TorchClassifier(module=fashion_cnn, epochs=epochs, pretrain_epochs=200,
                           warm_start=warm, batch_size=64, max_models=max_models,
                           device=device, random_state=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=240.0)
    parser.add_argument("--n-blocks", type=int, default=4)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, default=Path("tdshap-out/fmnist-gpu"))
    parser.add_argument("--skip-clean-fit", action="store_true")
    parser.add_argument("--cudnn-benchmark", action="store_true",
                        help="let cuDNN time its convolution algorithms for these shapes")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    args.out.mkdir(parents=True, exist_ok=True)
    where = (torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device")
    print(f"{datetime.date.today()} | {where} | torch {torch.__version__} | "
          f"cudnn.benchmark {args.cudnn_benchmark}", flush=True)
    split = fashion_mnist(0, (1000, 1000, 1000))
    k = 50
    est = TDShap(learner(20, True, args.n_blocks * (k + 1), args.device), "accuracy",
                 tau=-0.01, eps=0.01, k=k, n_min=100, max_iter=N_ITER, n_blocks=args.n_blocks,
                 time_budget=args.seconds, random_state=0, checkpoint=args.out / "run.tdshap",
                 checkpoint_every=30.0, resume=True)
    t0 = time.perf_counter()
    est.fit(split.X_train, split.y_train, split.X_val, split.y_val)
    wall = time.perf_counter() - t0
    result = est.result_
    rounds = int(result.extra.get("rounds") or 0)
    log_file = args.out / "progress.json"
    log = json.loads(log_file.read_text()) if log_file.exists() else []
    log.append({"wall": wall, "rounds": rounds, "fits": int(result.n_fits)})
    log_file.write_text(json.dumps(log))
    total_wall = sum(e["wall"] for e in log)
    print(f"valuation: {rounds} of {N_ITER} rounds after initialisation, {result.n_fits} fits, "
          f"{wall:.0f} s this call, {total_wall:.0f} s over {len(log)} call(s)", flush=True)
    fits_per_s = result.n_fits / total_wall if total_wall else float("nan")
    init_fits = int(np.ceil(1000 / k)) * (k + 1)
    paper_fits = init_fits + N_ITER * args.n_blocks * (k + 1)
    print(f"  rate {fits_per_s:.2f} subset fits/s (20 epochs each, {args.n_blocks} blocks per "
          f"stack); projected valuation of the trial ({paper_fits} fits): "
          f"{paper_fits / fits_per_s / 60:.1f} min", flush=True)
    if not args.skip_clean_fit:
        clean = learner(200, False, 1, args.device)
        t0 = time.perf_counter()
        clean.fit(split.X_train, split.y_train)
        acc = clean.score(split.X_test, split.y_test)
        fit_s = time.perf_counter() - t0
        print(f"  one full-train fit (200 epochs, 1000 rows): {fit_s:.1f} s, test acc {acc:.3f}; "
              f"cleansing grid of 50 cuts one by one: {50 * fit_s / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
