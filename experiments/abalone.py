"""The paper's Abalone study (SPEC §5, §6): every method judged by the cleansing protocol.

One *cell* is one (trial, model, method): split Abalone 1000/1000/1000 with
the trial's seed, value the training rows with the method, cleanse
(:func:`tdshap.cleansing.cleanse`, grid step 10 up to 500 rows), and write
the numbers to ``<out>/cells/<trial>_<model>_<method>.json`` atomically the
moment the cell is done. A rerun skips every cell already on disk, so a
crash loses at most the running cell.

Methods
-------
``baseline``      no removal (one fit on all of D);
``random``        :class:`~tdshap.methods.RandomRemoval`;
``loo100``/``loo1``  sequential LOO_k, k = 100 / 1, ranking the 500 rows the grid can remove;
``tmc``           :class:`~tdshap.methods.TMCShapley`, original truncation, run to the
                  original convergence rule or ``tmc_budget`` seconds, whichever first;
``tdshap``        the paper's settings: (τ, ε) = (−0.1, 0.1), 50 iterations, K = 100,
                  N_min = 900 for SVR and Ridge, 100 otherwise;
``tdshap-auto``   τ, ε = "auto" (:mod:`tdshap.methods.apt.thresholds`, ``eps_factor``),
                  same K and N_min;
``tdshap-no-i``   without enhancement (i): N_min = 0;
``tdshap-no-ii``  without enhancement (ii): K = 1;
``tdshap-warm``   the paper's TDShap with enhancement (iii) for the iteratively trained models
                  (MLP, GBDT; :class:`~tdshap.utility.warm_sklearn.WarmStarted`): trained once on
                  all of D, each subset model continues for a tenth of the full training
                  (100 of MLP's 1000 iterations, 10 of LightGBM's 100 rounds), as the paper's
                  20 of 200 CNN epochs; cleansing still trains every model in full;
``tdshap-seq``    :class:`~tdshap.methods.SequentialRemoval` of the paper's TDShap (N_min as
                  the same share of the rows that remain): value, remove the ``seq_step``
                  lowest, revalue, until 500 rows are ranked (50 TDShap runs at step 10).

The last three stop at the wall time TDShap took on the same trial and
model (equal time, as the paper's Table 4), so the ``tdshap`` cell is run
first when they need it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from experiments.cells import CellStore
from experiments.datasets import abalone, abalone_path
from tdshap.app.splits import Split
from tdshap.cleansing import cleanse
from tdshap.methods.apt.thresholds import DEFAULT_EPS_FACTOR
from tdshap.result import ValuationResult
from tdshap.utility.base import random_state_params
from tdshap.utility.metrics import resolve_metric

#: The paper's own Abalone models (Sec. 5), as the paper set them up. Not the library's
#: registry (``tdshap.app.models.MODELS``, behind ``--model`` and ``find_harmful``): there
#: "gbdt" is scikit-learn's histogram boosting and the tree's leaves scale with N, while the
#: paper used LightGBM and leaves of 64 rows.
PAPER_MODELS: tuple[str, ...] = ("dtree", "svr", "ridge", "mlp", "gbdt")
METHODS: tuple[str, ...] = ("baseline", "random", "loo100", "loo1", "tmc", "tdshap",
                            "tdshap-auto", "tdshap-no-i", "tdshap-no-ii", "tdshap-seq",
                            "tdshap-warm")
EQUAL_TIME = ("tdshap-auto", "tdshap-no-i", "tdshap-no-ii")
PAPER_TDSHAP = {"tau": -0.1, "eps": 0.1, "max_iter": 50, "k": 100}
METRIC = "neg_mae"
GRID_STEP = None  # cleanse's default: 1% of N (10 rows at N = 1000), up to half of N
MAX_FRACTION = 0.5


def paper_model(name: str) -> Any:
    """The paper's estimator for ``name`` of :data:`PAPER_MODELS` (defaults otherwise)."""
    if name == "dtree":
        from sklearn.tree import DecisionTreeRegressor

        return DecisionTreeRegressor(max_depth=5, min_samples_leaf=64)
    if name == "svr":
        from sklearn.svm import SVR

        return SVR()
    if name == "ridge":
        from sklearn.linear_model import Ridge

        return Ridge()
    if name == "mlp":
        from sklearn.neural_network import MLPRegressor

        return MLPRegressor(max_iter=1000, batch_size=1000)  # full batch
    if name == "gbdt":
        try:
            from lightgbm import LGBMRegressor
        except ImportError:
            raise ValueError(
                "model 'gbdt' needs lightgbm: pip install 'tdshap[lightgbm]'."
            ) from None
        # one thread: the same predictions (tests/test_bench_abalone.py), while the default
        # OpenMP pool spins on a busy machine (one timing here: 102 ms per fit, 27 ms single)
        return LGBMRegressor(verbose=-1, n_jobs=1)
    raise ValueError(f"model {name!r} is not known; use some of {', '.join(PAPER_MODELS)}.")


#: full training of the iteratively trained models, and the share a warm-started subset gets
WARM_FULL = {"mlp": 1000, "gbdt": 100}  # MLP iterations (max_iter), LightGBM rounds
WARM_SHARE = 10


def check_warm(model: str) -> None:
    """Refuse tdshap-warm of a model that is not trained iteratively (nothing to continue)."""
    if model not in WARM_FULL:
        raise ValueError(f"tdshap-warm needs an iteratively trained model ({', '.join(WARM_FULL)})"
                         f", not {model!r}.")


def warm_started(model: str, seed: int) -> Any:
    """``model`` trained once on all of D, continued on each subset (enhancement iii)."""
    check_warm(model)
    from tdshap.utility.warm_sklearn import WarmStarted

    full = WARM_FULL[model]
    return WarmStarted(paper_model(model), steps=full // WARM_SHARE, pretrain_steps=full,
                       random_state=seed)


def scaled(count: int, n: int) -> int:
    """A count the paper set for N = 1000, scaled to ``n`` training rows (at least 1)."""
    return max(1, count * n // 1000)


def n_min_for(model: str, n: int = 1000) -> int:
    """The paper's N_min: 900 for SVR and Ridge, 100 otherwise (at N = 1000)."""
    return scaled(900 if model in ("svr", "ridge") else 100, n)


@dataclass
class StudyConfig:
    """What a study run needs besides the cell keys."""

    out: Path
    first_seed: int = 0
    data_path: str | None = None
    tmc_budget: float = 600.0
    eps_factor: float = DEFAULT_EPS_FACTOR
    progress: bool = False
    #: train/val/test rows; K, N_min and LOO's k are scaled from the paper's N = 1000
    sizes: tuple[int, int, int] = (1000, 1000, 1000)
    #: use the exact fast paths (Ridge) where one exists; False refits every subset, as the paper
    fast_path: bool = True
    #: rows removed per stage by ``tdshap-seq``
    seq_step: int = 10


def parse_list(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    """``"a,b"`` -> ``["a", "b"]``, each checked against ``allowed``."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad or not items:
        raise ValueError(f"{what} {bad or text!r} not known; choose from {', '.join(allowed)}.")
    return items


def cell_name(trial: int, model: str, method: str) -> str:
    return f"t{trial:02d}_{model}_{method}"


def valuation(method: str, model: str, seed: int, budget: float | None,
              cfg: StudyConfig, checkpoint: Path | None = None) -> Any:
    """The valuation estimator for ``method`` (None for ``baseline``).

    TMC and sequential TDShap save their state to ``checkpoint`` (when given)
    and resume from it.
    """
    from tdshap.methods import LeaveOneOut, RandomRemoval, SequentialRemoval, TDShap, TMCShapley

    est = paper_model(model)
    common = {"estimator": est, "metric": METRIC, "random_state": seed, "progress": cfg.progress}
    n = cfg.sizes[0]
    if method == "baseline":
        return None
    if method == "random":
        return RandomRemoval(**common)
    common["fast_path"] = cfg.fast_path
    if method in ("loo100", "loo1"):
        k = scaled(100, n) if method == "loo100" else 1
        return LeaveOneOut(k=k, max_remove=int(MAX_FRACTION * n), **common)
    if method == "tmc":  # the longest cells: checkpointed, so a rerun continues a killed one
        return TMCShapley(truncation="original", rtol=0.05, rtol_window=100,
                          time_budget=cfg.tmc_budget, checkpoint=checkpoint, resume=True,
                          checkpoint_every=30.0, **common)
    settings: dict[str, Any] = {**PAPER_TDSHAP, "k": scaled(PAPER_TDSHAP["k"], n),
                                "n_min": n_min_for(model, n)}
    if method in EQUAL_TIME:
        settings.update(max_iter=None, time_budget=budget)
    if method == "tdshap-auto":
        settings.update(tau="auto", eps="auto", eps_factor=cfg.eps_factor)
    elif method == "tdshap-no-i":
        settings.update(n_min=0)
    elif method == "tdshap-no-ii":
        settings.update(k=1)
    elif method == "tdshap-warm":
        return TDShap(**{**settings, **common, "estimator": warm_started(model, seed)})
    elif method == "tdshap-seq":
        settings.update(n_min=settings["n_min"] / n)  # the same share of the rows that remain
        stage = TDShap(**{**settings, **common, "progress": False})
        return SequentialRemoval(stage, step=cfg.seq_step, max_remove=int(MAX_FRACTION * n),
                                 random_state=seed, progress=cfg.progress,
                                 checkpoint=checkpoint, resume=True)
    return TDShap(**settings, **common)


def _baseline_cell(est: Any, data: Split, seed: int) -> dict[str, Any]:
    """The full-data model, seeded as ``cleanse`` seeds its grid models (same numbers)."""
    spec = resolve_metric(METRIC)
    start = time.perf_counter()
    model = clone(est)
    if params := random_state_params(model):
        model.set_params(**dict.fromkeys(params, seed))
    model.fit(*data.train)
    mae_val = -spec.score(model, *data.val)
    mae_test = -spec.score(model, *data.test)
    return {"val_mae": mae_val, "test_mae": mae_test, "baseline_test_mae": mae_test,
            "n_remove": 0, "seconds": time.perf_counter() - start, "n_fits": 1}


def _valuation_summary(result: ValuationResult) -> dict[str, Any]:
    keys = ("pulls_spread", "tau", "eps", "stopped_by", "rounds", "n_permutations",
            "truncation", "n_truncated", "k", "n_min", "max_remove", "full_score",
            "convergence_error", "fast_path", "stages", "step")
    return {"seconds": result.wall_seconds, "fit_seconds": result.fit_seconds,
            "n_fits": result.n_fits, "n_harmful": int(result.is_harmful.sum()),
            **{k: result.extra[k] for k in keys if k in result.extra}}


def run_cell(trial: int, model: str, method: str, data: Split, cfg: StudyConfig) -> dict[str, Any]:
    """Value and cleanse one cell; return its JSON-able record (not yet written)."""
    with warnings.catch_warnings():
        # the paper's MLP (full batch of 1000, 1000 iterations) warns on every subset fit
        # smaller than its batch and every fit that uses all its iterations: expected here
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        warnings.filterwarnings("ignore", message="Got `batch_size` less than 1 or larger")
        return _run_cell(trial, model, method, data, cfg)


def _run_cell(trial: int, model: str, method: str, data: Split,
              cfg: StudyConfig) -> dict[str, Any]:
    seed = cfg.first_seed + trial
    record: dict[str, Any] = {"trial": trial, "seed": seed, "model": model, "method": method,
                              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    est = paper_model(model)
    if method == "baseline":
        return {**record, **_baseline_cell(est, data, seed)}
    budget = None
    if method in EQUAL_TIME:
        ref = CellStore(cfg.out).get(cell_name(trial, model, "tdshap"))
        assert ref is not None, "the tdshap cell runs before the equal-time cells"
        budget = float(ref["seconds"])
        record["time_budget"] = budget
    checkpoint = CellStore(cfg.out).checkpoint(cell_name(trial, model, method))
    method_est = valuation(method, model, seed, budget, cfg, checkpoint)
    method_est.fit(*data.train, *data.val)
    result: ValuationResult = method_est.result_
    cleaned = cleanse(result, est, *data.train, *data.val, *data.test, metric=METRIC,
                      step=GRID_STEP, max_fraction=MAX_FRACTION, random_state=seed)
    values_dir = cfg.out / "values"
    values_dir.mkdir(parents=True, exist_ok=True)
    result.save(values_dir / f"t{trial:02d}_{model}_{method}.json")
    checkpoint.unlink(missing_ok=True)  # the cell is done: its values are saved above
    return {
        **record,
        **_valuation_summary(result),
        "test_mae": -float(cleaned.cleaned_test),
        "val_mae": -float(cleaned.cleaned_val),
        "baseline_test_mae": -float(cleaned.baseline_test),
        "n_remove": cleaned.n_remove,
        "curve": {"grid": cleaned.grid, "val": cleaned.val_scores, "test": cleaned.test_scores},
    }


def _ordered(methods: Iterable[str]) -> list[str]:
    """Run order: ``tdshap`` before the equal-time cells that need its wall time."""
    methods = list(dict.fromkeys(methods))
    if any(m in EQUAL_TIME for m in methods) and "tdshap" not in methods:
        methods.insert(0, "tdshap")
    return sorted(methods, key=lambda m: (m in EQUAL_TIME, METHODS.index(m)))


def run_study(
    models: list[str], methods: list[str], trials: Iterable[int], cfg: StudyConfig,
    echo: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Run every missing cell (trial-major, so early trials finish first); return all cells."""
    for model in models:
        paper_model(model)  # fail before any work when a model's dependency is missing
        if "tdshap-warm" in methods:
            warm_started(model, 0)  # ... or when tdshap-warm is asked of a model it cannot warm
    order = _ordered(methods)
    done: list[dict[str, Any]] = []
    abalone_path(cfg.data_path)  # no data: said before --out is made, not mid-study
    store = CellStore(cfg.out)
    for trial in trials:
        data = abalone(cfg.first_seed + trial, cfg.sizes, path=cfg.data_path)
        for model in models:
            for method in order:
                cell = store.get(cell_name(trial, model, method))
                if cell is None:
                    cell = run_cell(trial, model, method, data, cfg)
                    store.put(cell_name(trial, model, method), cell)
                    echo(f"trial {trial} {model:6s} {method:13s} test MAE {cell['test_mae']:.3f} "
                         f"(baseline {cell['baseline_test_mae']:.3f}, removed {cell['n_remove']}"
                         f", {cell['seconds']:.1f} s, {cell['n_fits']} fits)")
                done.append(cell)
    return done


def all_cells(out: Path) -> list[dict[str, Any]]:
    """Every cell on disk under ``out`` (from this and earlier runs)."""
    return CellStore(out).all()
