"""The paper's deep benchmarks: ``python -m experiments bench fmnist`` and ``... livedoor``.

Defaults are the paper's settings (SPEC §5); every size can be shrunk so a
CPU smoke run finishes in minutes, e.g.::

    python -m experiments bench fmnist --sizes 150 150 150 --epochs 1 --pretrain-epochs 3 \\
        --n-iter 1 --k 10 --n-min 30 --clean-step 15 --out tdshap-out/fmnist-smoke
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from experiments.deep_bench import (
    METHODS,
    PAPER_METHODS,
    RULES,
    BenchSetting,
    DeepTask,
    run_bench,
    tables,
)
from tdshap._validation import MAX_SEED, check_seed_span


def _common(defaults: dict[str, Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The options both commands share, with each dataset's paper defaults."""
    options = [
        click.option("--trials", type=click.IntRange(min=1), default=10, show_default=True),
        click.option("--seed", type=click.IntRange(0, MAX_SEED), default=0, show_default=True,
                     help="Seed of trial 0 (trial t uses seed + t)."),
        click.option("--methods", default=",".join(PAPER_METHODS), show_default=True,
                     help=f"Comma-separated subset of {', '.join(METHODS)} (tdoob: "
                     "thresholding Data-OOB, not in the paper)."),
        click.option("--sizes", nargs=3, type=click.IntRange(min=1),
                     default=defaults["sizes"], show_default=True, help="train val test"),
        click.option("--epochs", type=click.IntRange(min=1), default=defaults["epochs"],
                     show_default=True, help="Epochs of every subset fit."),
        click.option("--pretrain-epochs", type=click.IntRange(min=1),
                     default=defaults["pretrain_epochs"], show_default=True,
                     help="Epochs on all of D (warm start) and of full-train fits."),
        click.option("--clean-epochs", type=click.IntRange(min=1), default=None,
                     help="Epochs of the cleansing models [default: --pretrain-epochs]."),
        click.option("--batch-size", type=click.IntRange(min=1),
                     default=defaults["batch_size"], show_default=True),
        click.option("--n-iter", type=click.IntRange(min=0), default=defaults["n_iter"],
                     show_default=True, help="TDShap rounds after initialisation."),
        click.option("--k", type=click.IntRange(min=1), default=50, show_default=True),
        click.option("--n-min", type=click.IntRange(min=0), default=100, show_default=True),
        click.option("--n-blocks", type=click.IntRange(min=1), default=1, show_default=True,
                     help="TDShap blocks per round (M): M (K + 1) models per stack on a GPU."),
        click.option("--clean-step", type=click.IntRange(min=1), default=None,
                     help="Removal grid step [default: 1% of the training set]."),
        click.option("--clean-max-fraction", type=click.FloatRange(0, 1, min_open=True,
                     max_open=True), default=0.5, show_default=True,
                     help="Largest share of the training set the removal grid removes."),
        click.option("--valuation-head", type=click.Choice(["knn", "logreg"]), default=None,
                     help="Value rows with this head on the embeddings of the network "
                     "trained on all of D (cleansing still trains the network) [default: "
                     "train the network on every subset]."),
        click.option("--metric", type=click.Choice(["accuracy", "true_class_proba"]),
                     default="accuracy", show_default=True,
                     help="The valuations' V (cleansing is judged by accuracy either way)."),
        click.option("--rule", type=click.Choice(list(RULES)), default="paper",
                     show_default=True,
                     help="The cleansing cut: paper (best validation score, the paper's "
                     "tables) or one_se (the library's default: smallest credible cut within "
                     "one SE of the best). Part of the setting: another rule needs another "
                     "--out."),
        click.option("--max-models", type=click.IntRange(min=1), default=64,
                     show_default=True, help="Subset models trained together in one stack."),
        click.option("--device", default="auto", show_default=True),
        click.option("--threads", type=click.IntRange(min=1), default=None,
                     help="torch and BLAS CPU threads (default: their choice)."),
        click.option("--out", type=click.Path(file_okay=False, path_type=Path),
                     default=Path(f"tdshap-out/bench-{defaults['name']}"), show_default=True),
    ]

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return wrap


def _setting(name: str, kw: dict[str, Any], **extra: Any) -> BenchSetting:
    return BenchSetting(
        dataset=name, sizes=tuple(kw["sizes"]), epochs=kw["epochs"],
        pretrain_epochs=kw["pretrain_epochs"],
        clean_epochs=kw["clean_epochs"] or kw["pretrain_epochs"], batch_size=kw["batch_size"],
        n_iter=kw["n_iter"], k=kw["k"], n_min=kw["n_min"], n_blocks=kw["n_blocks"],
        clean_step=kw["clean_step"], clean_max_fraction=kw["clean_max_fraction"],
        max_models=kw["max_models"], device=kw["device"], extra=extra,
        valuation_head=kw["valuation_head"], metric=kw["metric"], rule=kw["rule"],
    )


def _run(task: DeepTask, kw: dict[str, Any], find_data: Callable[[], Path],
         folder: str) -> None:
    """Run the bench; the seeds are checked and ``find_data`` finds its data file (in
    ``folder`` of the data folder) before --out is made (by run_bench): one error line, not
    a traceback mid-trial."""
    from experiments.datasets import DATA_DIR_VAR, data_dir

    try:
        check_seed_span(kw["seed"], kw["trials"])
        if data_dir() is None:  # find_data's own message offers path=, which no flag sets
            raise ValueError(f"no data folder: set {DATA_DIR_VAR} to the folder holding "
                             f"{folder}/ (e.g. export {DATA_DIR_VAR}=/path/to/data), then "
                             "run the bench again.")
        find_data()
    except (ValueError, FileNotFoundError) as err:
        raise click.ClickException(str(err)) from None
    import torch

    if kw["threads"]:
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(kw["threads"])
        threadpool_limits(kw["threads"])  # BLAS too (heads, k-NN): oversubscribed, it crawls
    methods = tuple(m.strip() for m in kw["methods"].split(",") if m.strip())
    s = task.setting
    head = f"; {s.valuation_head} head on the embeddings" if s.valuation_head else ""
    click.echo(f"{s.dataset}: sizes {s.sizes}, {s.epochs} epochs per fit, {s.pretrain_epochs} "
               f"on all of D, n_iter {s.n_iter}, K {s.k}, N_min {s.n_min}{head}; "
               f"cut {s.rule}; "
               f"out {kw['out']}")
    try:
        cells = run_bench(task, kw["out"], kw["trials"], kw["seed"], methods, click.echo)
    except ValueError as err:
        raise click.ClickException(str(err)) from None
    text = tables(cells, s.dataset)
    (kw["out"] / "summary.md").write_text(text + "\n")
    cells.to_csv(kw["out"] / "cells.csv", index=False)
    click.echo("\n" + text)


def _fmnist_learner(s: BenchSetting, warm: bool, epochs: int, seed: int) -> Any:
    from tdshap.torch.estimators import TorchClassifier
    from tdshap.torch.modules import fashion_cnn

    return TorchClassifier(module=fashion_cnn, epochs=epochs, pretrain_epochs=s.pretrain_epochs,
                           warm_start=warm, batch_size=s.batch_size, max_models=s.max_models,
                           device=s.device, random_state=seed)


@click.command("fmnist")
@_common({"name": "fmnist", "sizes": (1000, 1000, 1000), "epochs": 20, "pretrain_epochs": 200,
          "batch_size": 64, "n_iter": 500})
def bench_fmnist(**kw: Any) -> None:
    """Fashion-MNIST with the paper's CNN: Tables 5 and 6 (needs TDSHAP_DATA_DIR)."""
    from experiments.deep_data import fashion_mnist, fashion_mnist_file

    s = _setting("fashion_mnist", kw)
    _run(DeepTask(s, lambda seed: fashion_mnist(seed, s.sizes),
                  functools.partial(_fmnist_learner, s)), kw, fashion_mnist_file,
         "fashion_mnist")


def _livedoor_split(s: BenchSetting, seed: int) -> Any:
    from experiments.deep_data import livedoor
    from tdshap.app.splits import Split
    from tdshap.torch.text import tokenize

    d = livedoor(seed, s.sizes)
    n = s.extra["max_length"]
    return Split(tokenize(d.X_train, n), d.y_train, tokenize(d.X_val, n), d.y_val,
                 tokenize(d.X_test, n), d.y_test, name="livedoor")


def _livedoor_learner(s: BenchSetting, warm: bool, epochs: int, seed: int) -> Any:
    from tdshap.torch.text import text_classifier

    return text_classifier(epochs=epochs, pretrain_epochs=s.pretrain_epochs, warm_start=warm,
                           batch_size=s.batch_size, warmup_steps=s.extra["warmup_steps"],
                           device=s.device, random_state=seed)


@click.command("livedoor")
@_common({"name": "livedoor", "sizes": (250, 250, 500), "epochs": 5, "pretrain_epochs": 15,
          "batch_size": 8, "n_iter": 50})
@click.option("--max-length", type=click.IntRange(min=8), default=128, show_default=True,
              help="Tokens kept per article.")
@click.option("--warmup-steps", type=click.IntRange(min=0), default=500, show_default=True)
@click.option("--encoder", type=click.Choice(["minilm", "e5", "tfidf"]), default="minilm",
              show_default=True,
              help="minilm: fine-tune the offline English MiniLM (text extra). e5 / tfidf: embed "
                   "once (multilingual-e5-small from the livedoor-ja extra / character n-gram "
                   "LSA) and refit a logistic regression per subset (fixed representation; "
                   "Table 5 methods and tdoob only).")
@click.option("--max-chars", type=click.IntRange(min=1), default=256, show_default=True,
              help="Characters of each article embedded by e5.")
@click.option("--head-c", type=click.FloatRange(min=0, min_open=True), default=None,
              help="C of the logistic-regression head [default: 100 for e5, 10 for tfidf].")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path),
              default=Path("tdshap-out/embeddings"), show_default=True,
              help="Folder of the e5 embedding cache (by text hash; resumable).")
def bench_livedoor(**kw: Any) -> None:
    """Livedoor: fine-tuned MiniLM in place of Japanese BERT, or a fixed Japanese-capable
    representation with a logistic-regression head (--encoder e5|tfidf)."""
    from experiments.deep_data import livedoor_file

    if kw["encoder"] != "minilm":
        _run_fixed(kw)
        return
    s = _setting("livedoor", kw, max_length=kw["max_length"], warmup_steps=kw["warmup_steps"])
    _run(DeepTask(s, functools.partial(_livedoor_split, s),
                  functools.partial(_livedoor_learner, s)), kw, livedoor_file, "livedoor")


def _run_fixed(kw: dict[str, Any]) -> None:
    """``--encoder e5|tfidf``: embed once, a logistic-regression head per subset."""
    from experiments.deep_data import livedoor, livedoor_file
    from experiments.livedoor_ja import FIXED_METHODS, HEAD_C, embedded_split, head

    enc = kw["encoder"]
    c = kw["head_c"] or HEAD_C[enc]
    asked = [m.strip() for m in kw["methods"].split(",") if m.strip()]
    dropped = [m for m in asked if m not in FIXED_METHODS]
    if dropped:
        click.echo(f"--encoder {enc}: {', '.join(dropped)} not run (a convex head has no "
                   "epochs to ablate).")
    kw = {**kw, "methods": ",".join(m for m in asked if m in FIXED_METHODS)}
    extra: dict[str, Any] = {"encoder": enc, "head": f"LogisticRegression(C={c})"}
    if enc == "e5":
        extra["max_chars"] = kw["max_chars"]
    else:
        extra["representation"] = "char 1-3-gram TF-IDF (train texts) + 100-d truncated SVD"
    s = _setting("livedoor", kw, **extra)

    def load(seed: int) -> Any:
        start = time.perf_counter()
        split = embedded_split(livedoor(seed, s.sizes), enc, max_chars=kw["max_chars"],
                               cache=kw["cache"], seed=seed)
        click.echo(f"seed {seed}: {enc} representation of {sum(s.sizes)} articles in "
                   f"{time.perf_counter() - start:.1f} s")
        return split

    _run(DeepTask(s, load, lambda warm, epochs, seed: head(c)), kw, livedoor_file,
         "livedoor")
