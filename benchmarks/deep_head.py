"""Head valuation against full subset training on a Fashion-MNIST slice (issue 16, item 1).

On a slice small enough to train the paper's CNN for every subset on this
CPU, with planted label noise, one TDShap run per valuation:

``full``          the CNN trained on every subset (warm start from the network
                  trained on all of D, ``--epochs`` epochs per subset), V = accuracy
                  (the paper's setting);
``knn``           ``valuation_head="knn"``: a 10-NN head on the embeddings of that
                  same full-data network (exact k-NN fast path), V = accuracy;
``knn_proba``     the same head, V = mean validation probability of the true class
                  (``"true_class_proba"``: a k-NN's accuracy rarely moves by one row);
``logreg_proba``  ``valuation_head="logreg"`` with V = ``"true_class_proba"``.

All three share the trial's seed, so the head runs see the very network the
full run starts its subset fits from. Per trial and method it records the
ranking's Spearman correlation with ``full``'s values, the AUROC of the
ranking (lowest value first) for the flipped labels, the valuation's wall
time, and the CNN cleansing (the SPEC §4 protocol with the network trained
from scratch for ``--clean-epochs`` epochs): test accuracy before and after.
Each (trial, method) is written to ``<out>/cells/`` with its values as it
finishes and skipped on rerun (``full`` first: the others need its values).

    TDSHAP_DATA_DIR=... python benchmarks/deep_head.py --trials 3 --out tdshap-out/deep-head
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score
from threadpoolctl import threadpool_limits

from experiments.cells import CellStore
from experiments.deep_data import fashion_mnist
from tdshap import TDShap
from tdshap.cleansing import cleanse
from tdshap.torch.estimators import TorchClassifier
from tdshap.torch.modules import fashion_cnn

METHODS = {"full": (None, "accuracy"), "knn": ("knn", "accuracy"),
           "knn_proba": ("knn", "true_class_proba"),
           "logreg_proba": ("logreg", "true_class_proba")}


def flip(y: np.ndarray, share: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``y`` with ``share`` of its labels moved to another class; the mask of moved rows."""
    n_flip = round(share * len(y))
    rows = rng.choice(len(y), n_flip, replace=False)
    noisy = y.copy()
    noisy[rows] = (y[rows] + rng.integers(1, 10, n_flip)) % 10
    mask = np.zeros(len(y), dtype=bool)
    mask[rows] = True
    return noisy, mask


def cell(args: argparse.Namespace, t: int, method: str,
         full_values: np.ndarray | None) -> dict[str, Any]:
    seed = args.seed + t
    split = fashion_mnist(seed, tuple(args.sizes))
    y, noisy = flip(split.y_train, args.noise, np.random.default_rng(seed))
    head, metric = METHODS[method]
    learner = TorchClassifier(module=fashion_cnn, epochs=args.epochs,
                              pretrain_epochs=args.pretrain_epochs, batch_size=64,
                              batched=False, device="cpu", random_state=seed,
                              valuation_head=head)
    clean = TorchClassifier(module=fashion_cnn, epochs=args.clean_epochs, warm_start=False,
                            batched=False, device="cpu", random_state=seed)
    start = time.perf_counter()
    run = TDShap(learner, metric, tau=-0.01, eps=0.01, k=args.k, n_min=args.n_min,
                 max_iter=args.n_iter, random_state=seed).fit(
        split.X_train, y, split.X_val, split.y_val)
    seconds = time.perf_counter() - start
    values = run.values_ if full_values is None else full_values
    cleaned = cleanse(run.result_, clean, split.X_train, y, split.X_val, split.y_val,
                      split.X_test, split.y_test, metric="accuracy", step=args.clean_step,
                      max_fraction=args.clean_max_fraction, random_state=seed)
    out = {
        "trial": t, "seed": seed, "method": method, "n_noisy": int(noisy.sum()),
        "seconds": seconds, "fits": int(run.result_.n_fits),
        "evaluations": int(run.result_.n_evaluations),
        "auroc": float(roc_auc_score(noisy, -run.values_)),
        "spearman": float(spearmanr(run.values_, values).statistic),
        "baseline_test": cleaned.baseline_test, "cleaned_test": cleaned.cleaned_test,
        "n_remove": int(cleaned.n_remove), "noisy_removed": int(noisy[cleaned.removed].sum()),
    }
    print(f"trial {t} {method}: {json.dumps(out)}", flush=True)
    return {**out, "values": run.values_.tolist()}


def summary(cells: list[dict[str, Any]]) -> str:
    rows = []
    done = pd.DataFrame(cells)
    for method in METHODS:
        df = done[done["method"] == method] if len(done) else done
        if not len(df):
            continue
        gain = df["cleaned_test"] - df["baseline_test"]

        def ms(x: pd.Series, digits: int = 3) -> str:
            return f"{x.mean():.{digits}f} ± {x.std(ddof=0):.{digits}f}"

        rows.append(f"| {method} | {ms(df['spearman'], 2)} | {ms(df['auroc'])} | "
                    f"{ms(df['baseline_test'])} | {ms(df['cleaned_test'])} | {ms(gain)} | "
                    f"{df['n_remove'].mean():.0f} ({df['noisy_removed'].mean():.0f} noisy) | "
                    f"{df['seconds'].mean():.1f} s, {df['fits'].mean():.0f} fits |")
    head = ("| valuation | Spearman vs full | AUROC (flipped labels) | baseline test | "
            "cleaned test | gain | rows removed | valuation time |\n" + "|---" * 8 + "|")
    trials = sorted(set(done["trial"])) if len(done) else []
    return f"trials {trials}\n\n{head}\n" + "\n".join(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--seed", type=int, default=0, help="seed of trial 0 (trial t: seed + t)")
    p.add_argument("--first-trial", type=int, default=0)
    p.add_argument("--sizes", type=int, nargs=3, default=(200, 200, 1000))
    p.add_argument("--noise", type=float, default=0.1, help="share of flipped labels")
    p.add_argument("--epochs", type=int, default=2, help="epochs per subset fit (full)")
    p.add_argument("--pretrain-epochs", type=int, default=20)
    p.add_argument("--clean-epochs", type=int, default=20)
    p.add_argument("--n-iter", type=int, default=20)
    p.add_argument("--k", type=int, default=20)
    p.add_argument("--n-min", type=int, default=50)
    p.add_argument("--clean-step", type=int, default=10)
    p.add_argument("--clean-max-fraction", type=float, default=0.3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("tdshap-out/deep-head"))
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)  # BLAS threads too: oversubscribed, lbfgs crawls
    setting = {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(args).items()
               if k not in ("trials", "first_trial", "threads", "out")}
    store = CellStore(args.out, setting)
    for t in range(args.first_trial, args.first_trial + args.trials):
        for method in METHODS:
            if store.get(f"{method}_trial{t}") is None:
                full = store.get(f"full_trial{t}")
                store.put(f"{method}_trial{t}", cell(
                    args, t, method, None if full is None else np.asarray(full["values"])))
    text = summary(store.all())
    (args.out / "summary.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
