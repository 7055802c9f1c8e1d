"""Livedoor baseline with the offline MiniLM: what the English vocabulary costs.

Prints the share of [UNK] tokens over the whole corpus, then fine-tunes the
text classifier from the pretrained encoder on one trial's training rows
(the paper's "baseline" cell: no cleansing) and prints validation and test
accuracy with the time taken. The paper's Japanese BERT reaches 0.732 ± 0.016.

    TDSHAP_DATA_DIR=... .venv/bin/python benchmarks/livedoor_baseline.py \\
        [--sizes 250 250 500 --epochs 15 --max-length 128 --threads 1]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from experiments.deep_data import livedoor, livedoor_corpus
from tdshap.torch.text import text_classifier, tokenize, unknown_fraction


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs=3, default=(250, 250, 500))
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--warmup-steps", type=int, default=500)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts, _ = livedoor_corpus()
    t0 = time.perf_counter()
    corpus = tokenize(texts, 512)
    print(f"[UNK] share over all {len(texts)} articles (first 512 tokens): "
          f"{unknown_fraction(corpus):.3f} ({time.perf_counter() - t0:.0f} s to tokenize)")
    d = livedoor(args.seed, tuple(args.sizes))
    X_tr, X_val, X_te = (tokenize(x, args.max_length) for x in (d.X_train, d.X_val, d.X_test))
    print(f"[UNK] share in this trial's training rows (first {args.max_length} tokens): "
          f"{unknown_fraction(X_tr):.3f}")
    est = text_classifier(warm_start=False, epochs=args.epochs, warmup_steps=args.warmup_steps,
                          device="auto", random_state=args.seed)
    t0 = time.perf_counter()
    est.fit(X_tr, d.y_train)
    fit_s = time.perf_counter() - t0
    val, test = est.score(X_val, d.y_val), est.score(X_te, d.y_test)
    print(f"{datetime.date.today()} | {platform.machine()} CPU, {args.threads} thread(s) | "
          f"sizes {tuple(args.sizes)}, {args.epochs} epochs, batch 8, warm-up "
          f"{args.warmup_steps}, max_length {args.max_length}, seed {args.seed}")
    print(f"  fit {fit_s:.0f} s ({est.n_steps_} steps); val acc {val:.3f}; test acc {test:.3f}; "
          f"majority class {np.mean(d.y_test == np.bincount(d.y_train).argmax()):.3f}")


if __name__ == "__main__":
    main()
