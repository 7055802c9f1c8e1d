"""The paper's deep-learning benchmarks (Tables 5 and 6) on Fashion-MNIST and Livedoor.

One *cell* is one method on one trial: value the training rows, cleanse
with the SPEC §4 protocol, record the test accuracy, wall time and fits.
Cells are written to ``<out>/cells/<method>_trial<t>.json`` as they finish
and skipped when a rerun finds them, so a long benchmark proceeds in pieces.
Methods:

``baseline``     the full-train model on all of D (no cleansing);
``loo``          leave-one-out with k = |D| (:class:`~tdshap.methods.loo.LeaveOneOut`);
``tdshap``       TDShap with warm start (enhancement iii);
``tmc_short``    Data Shapley (TMC) stopped at TDShap's wall time of the same trial;
``few_epoch``    TDShap, every fit from a fresh initialisation for the same epochs;
``full_train``   TDShap, every fit from a fresh initialisation for the full epochs;
``tdoob``        thresholding Data-OOB (:class:`~tdshap.methods.ThresholdingOOB`, not in
                 the paper): out-of-bag scores of the same learner (the probability of
                 each row's own label from models fitted on bootstrap bags without it),
                 with the library's defaults (``tau`` chance, ``k="auto"``, 200 bags
                 after the first pass). Its values never see the validation rows.

``rule`` is the cleansing cut (:func:`tdshap.cleansing.cleanse`): ``"paper"``
(the default: the paper's best validation score, which overfits the
validation rows that also valued the rows) or ``"one_se"`` (the library's
default: the smallest credible cut within one SE of the best, and for results
with a threshold only the rows credibly below it). It is part of the setting,
so cells of different rules never share a folder.

With ``valuation_head`` set (``--valuation-head knn|logreg``) every valuation
trains only that head on the embeddings of the network (issue 16, item 1:
:mod:`tdshap.torch.head`): the network trained on all of D for ``loo``,
``tmc_short`` and ``tdshap``, the untrained network for ``few_epoch`` (the
warm start's ablation in that setting: no representation learned from D);
``full_train`` is then refused (it would equal ``few_epoch``). Cleansing still
trains the network. ``metric`` is the valuations' V (the paper: accuracy);
``"true_class_proba"`` (the validation mean probability of the true class)
suits a k-NN head, whose single-row changes of accuracy are mostly zero.
Cleansing always chooses and reports by accuracy.

Every valuation uses the same learner for V (warm start except in the two
ablations, which run the same ``n_iter`` as TDShap: few-epoch then takes
about TDShap's time, as in the paper's Table 6); cleansing always trains the
full-train model. TDShap, TMC (short) and the ablation cells also checkpoint
their run every minute (``<method>_trial<t>.tdshap``) and continue it when
rerun, so a cell longer than a machine's command limit is computed in pieces;
the other cells are recomputed whole when interrupted.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin

from experiments.cells import CellStore
from tdshap.app.splits import Split
from tdshap.cleansing import cleanse
from tdshap.result import ValuationResult

METHODS = ("baseline", "loo", "tdshap", "tmc_short", "few_epoch", "full_train",
           "tdoob")  # run order
VALUATIONS = {"loo", "tmc_short", "tdshap", "few_epoch", "full_train", "tdoob"}
PAPER_METHODS = METHODS[:-1]  # Tables 5 and 6: the default of the commands
RULES = ("paper", "one_se")


@dataclass
class BenchSetting:
    """Everything that decides a cell's numbers (stored beside the cells)."""

    dataset: str
    sizes: tuple[int, int, int]
    epochs: int
    pretrain_epochs: int
    clean_epochs: int
    batch_size: int
    n_iter: int
    k: int
    n_min: int
    n_blocks: int = 1
    tau: float = -0.01
    eps: float = 0.01
    clean_step: int | None = None
    clean_max_fraction: float = 0.5
    max_models: int = 64
    device: str = "auto"
    extra: dict[str, Any] = field(default_factory=dict)
    valuation_head: str | None = None
    metric: str = "accuracy"
    rule: str = "paper"

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"rule={self.rule!r}: choose one of {RULES}.")

    def key(self) -> dict[str, Any]:
        """The setting as JSON (device and batching excluded: they do not change results;
        ``valuation_head``, ``metric`` and ``rule`` only when not the default, so folders
        made before they existed still match)."""
        out = asdict(self)
        out["sizes"] = list(self.sizes)
        for name in ("device", "max_models"):
            out.pop(name)
        for name, default in (("valuation_head", None), ("metric", "accuracy"),
                              ("rule", "paper")):
            if out[name] == default:
                out.pop(name)
        return out


@dataclass
class DeepTask:
    """How to get a trial's data and learners for one dataset."""

    setting: BenchSetting
    load: Callable[[int], Split]  # trial seed -> split with numeric X
    learner: Callable[[bool, int, int], Any]  # (warm_start, epochs, seed) -> estimator


class FitMemo(dict[Any, Any]):
    """Fitted models of one trial by data and parameters, and the trial's pretraining on
    all of D (key ``"pretrained"``); shared, not copied, by clones."""

    def __deepcopy__(self, memo: dict[int, Any]) -> FitMemo:
        return self


class ReuseFits(ClassifierMixin, BaseEstimator):
    """The cleansing learner of one trial: a fit on the same rows with the same parameters
    is done once (every method's cleansing starts with the full-data model, n_remove = 0,
    which is also the baseline cell's model). Training is seeded, so reusing changes nothing.
    """

    def __init__(self, estimator: Any = None, memo: FitMemo | None = None) -> None:
        self.estimator = estimator
        self.memo = memo

    def fit(self, X: Any, y: Any) -> ReuseFits:
        h = hashlib.blake2b(np.ascontiguousarray(X, dtype=np.float32).tobytes(), digest_size=16)
        h.update(np.ascontiguousarray(y).tobytes())
        h.update(repr(sorted(self.estimator.get_params(deep=False).items())).encode())
        key = h.digest()
        memo = self.memo if self.memo is not None else FitMemo()
        if key not in memo:
            from sklearn.base import clone

            memo[key] = clone(self.estimator).fit(X, y)
        self.estimator_ = memo[key]
        self.classes_ = self.estimator_.classes_
        return self

    def predict(self, X: Any) -> Any:
        return self.estimator_.predict(X)

    def predict_proba(self, X: Any) -> Any:
        return self.estimator_.predict_proba(X)


def _cell(method: str, trial: int) -> str:
    return f"{method}_trial{trial}"


def _resumable(checkpoint: Path | None) -> dict[str, Any]:
    """Parameters that checkpoint a run every minute and continue it when rerun."""
    if checkpoint is None:
        return {}
    return {"checkpoint": checkpoint, "resume": True, "checkpoint_every": 60.0}


def _tmc(estimator: Any, seconds: float, seed: int, checkpoint: Path | None = None,
         metric: str = "accuracy") -> Any:
    """Data Shapley (short): TMC stopped at TDShap's wall time (or its own convergence)."""
    from tdshap.methods.tmc import TMCShapley

    return TMCShapley(estimator, metric, time_budget=seconds, random_state=seed,
                      **_resumable(checkpoint))


def valuer(task: DeepTask, method: str, seed: int, tdshap_seconds: float | None,
           checkpoint: Path | None = None, pretrained: Any = None) -> Any:
    """The valuation estimator of ``method`` for one trial.

    TDShap, TMC (short) and the two ablations save their state to
    ``checkpoint`` every minute and resume from it, so one cell can be
    computed in pieces. ``pretrained`` (the trial's training on all of D) is
    given to the warm-start learners instead of training again.
    """
    from tdshap.methods import TDShap, ThresholdingOOB
    from tdshap.methods.loo import LeaveOneOut

    s = task.setting
    if s.valuation_head is not None and method == "full_train":
        raise ValueError("full_train with a valuation head would equal few_epoch (the head on "
                         "the untrained network): leave it out.")

    def learner(warm: bool, epochs: int) -> Any:
        est = task.learner(warm, epochs, seed)
        if warm and pretrained is not None:
            est.set_params(init_from=pretrained)
        return est if s.valuation_head is None else est.set_params(
            valuation_head=s.valuation_head)

    if method == "loo":
        # all N + 1 subsets in one call, so a batched utility trains them as stacks
        return LeaveOneOut(learner(True, s.epochs), s.metric, k=None,
                           batch_size=1_000_000, random_state=seed)
    if method == "tdoob":
        # its own per-row metric (the probability of the row's label), never V's subset metric
        return ThresholdingOOB(learner(True, s.epochs), random_state=seed)
    if method == "tmc_short":
        assert tdshap_seconds is not None
        return _tmc(learner(True, s.epochs), tdshap_seconds, seed, checkpoint, s.metric)
    warm, epochs = {"tdshap": (True, s.epochs), "few_epoch": (False, s.epochs),
                    "full_train": (False, s.pretrain_epochs)}[method]
    return TDShap(learner(warm, epochs), s.metric, tau=s.tau, eps=s.eps, k=s.k,
                  n_min=s.n_min, max_iter=s.n_iter, n_blocks=s.n_blocks, random_state=seed,
                  **_resumable(checkpoint))


def _elapsed_before(checkpoint: Path | None) -> float:
    """Seconds a checkpointed run had already spent in earlier pieces."""
    if checkpoint is None or not Path(checkpoint).exists():
        return 0.0
    from tdshap.methods.checkpoint.files import checkpoint_info

    return float(checkpoint_info(checkpoint).get("elapsed") or 0.0)


def run_cell(task: DeepTask, method: str, trial: int, seed: int, split: Split,
             tdshap_seconds: float | None = None,
             checkpoint: Path | None = None, memo: FitMemo | None = None) -> dict[str, Any]:
    """Value (unless baseline), cleanse and score one method on one trial.

    ``seconds`` is the valuation's wall time, pretraining on all of D
    included, summed over the pieces of a checkpointed run. Cells of one
    trial that share ``memo`` fit the full-data cleansing model once.
    """
    s = task.setting
    clean = ReuseFits(task.learner(False, s.clean_epochs, seed), memo)
    cell: dict[str, Any] = {"method": method, "trial": trial, "seed": seed}
    start = time.perf_counter()
    if method == "baseline":
        model = clean.fit(split.X_train, split.y_train)
        cell.update(test_acc=float(model.score(split.X_test, split.y_test)),
                    val_acc=float(model.score(split.X_val, split.y_val)),
                    seconds=time.perf_counter() - start, fits=1, n_remove=0)
        return cell
    checkpoint = checkpoint if method not in ("loo", "tdoob") else None
    before = _elapsed_before(checkpoint)
    pretrained = memo.get("pretrained") if memo is not None else None
    if pretrained is None and method != "few_epoch" and hasattr(
            task.learner(True, s.epochs, seed), "prepare"):
        # one training on all of D per trial, for every warm-start valuation
        pretrained = task.learner(True, s.epochs, seed).prepare(
            split.X_train, split.y_train).init_from
        if memo is not None:
            memo["pretrained"] = pretrained
    pre = pretrained.seconds if pretrained is not None and method != "few_epoch" else 0.0
    budget = None if tdshap_seconds is None else max(tdshap_seconds - pre, 1.0)
    start = time.perf_counter()
    est = valuer(task, method, seed, budget, checkpoint,
                 pretrained if method != "few_epoch" else None)
    est.fit(split.X_train, split.y_train, split.X_val, split.y_val)
    # pretraining on all of D included (done once per trial, counted in every cell)
    seconds = before + pre + time.perf_counter() - start
    valued = time.perf_counter()
    result: ValuationResult = est.result_
    cleaned = cleanse(result, clean, *split.train, *split.val, *split.test, metric="accuracy",
                      step=s.clean_step, max_fraction=s.clean_max_fraction, random_state=seed,
                      rule=s.rule)
    cell.update(test_acc=cleaned.cleaned_test, val_acc=cleaned.cleaned_val,
                baseline_test=cleaned.baseline_test, n_remove=cleaned.n_remove,
                seconds=seconds, fits=int(result.n_fits),
                n_harmful=int(np.sum(result.is_harmful)),
                evaluations=int(result.n_evaluations), pretrain_seconds=pre,
                rounds=result.extra.get("rounds"), clean_seconds=time.perf_counter() - valued)
    ev = cleaned.evidence
    if ev is not None and ev.n_eligible is not None:  # rule one_se, a result with a threshold
        # the credible rows, why the cut was chosen, and (a diagnostic, never used to
        # choose) the scores had exactly those rows been removed
        cell.update(n_eligible=int(ev.n_eligible), cut_reason=ev.reason)
        at = np.flatnonzero(cleaned.grid == ev.n_eligible)
        if ev.n_eligible > 0 and len(at) and cleaned.test_scores is not None:
            cell.update(val_at_eligible=float(cleaned.val_scores[at[0]]),
                        test_at_eligible=float(cleaned.test_scores[at[0]]))
    return cell


def run_bench(task: DeepTask, out: Path, trials: int, seed: int, methods: tuple[str, ...],
              echo: Callable[[str], None] = print) -> pd.DataFrame:
    """Every missing cell of ``methods`` × ``trials``; returns all cells of ``out``."""
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}: choose from {METHODS}.")
    store = CellStore(out, task.setting.key())
    order = [m for m in METHODS if m in methods]
    for t in range(trials):
        trial_seed = seed + t
        split = None
        memo = FitMemo()
        for method in order:
            if store.get(_cell(method, t)) is not None:
                continue
            tdshap_cell = store.get(_cell("tdshap", t))
            if method == "tmc_short" and tdshap_cell is None:
                echo(f"trial {t}: tmc_short needs the tdshap cell first (add tdshap).")
                continue
            split = split or task.load(trial_seed)
            cell = run_cell(task, method, t, trial_seed, split,
                            tdshap_cell["seconds"] if tdshap_cell else None,
                            store.checkpoint(_cell(method, t)), memo)
            store.put(_cell(method, t), cell)
            echo(f"trial {t} {method}: test acc {cell['test_acc']:.3f}, "
                 f"{cell['seconds']:.1f} s, {cell['fits']} fits")
    return pd.DataFrame(store.all())


def _mean_std(x: pd.Series) -> str:
    a = np.asarray(x, dtype=float)
    return f"{a.mean():.3f} ± {a.std(ddof=0):.3f} (n={len(a)})" if len(a) else "n/a"


TABLE5 = ("Table 5 shape: test accuracy, mean ± std over trials (wall time, fits per trial)",
          {"baseline": "baseline", "loo": "LOO", "tmc_short": "Data Shapley (short)",
           "tdshap": "TDShap"})
TABLE6 = ("Table 6 shape: warm start ablation",
          {"tdshap": "TDShap (warm start)", "few_epoch": "Few-epoch", "full_train": "Full-train"})


def _table(cells: pd.DataFrame, dataset: str, title: str, columns: dict[str, str]) -> list[str]:
    acc, cost = [], []
    for method in columns:
        c = cells[cells["method"] == method] if len(cells) else cells
        acc.append(_mean_std(c["test_acc"]) if len(c) else "n/a")
        subsets = ""
        if len(c) and "evaluations" in c and c["evaluations"].notna().any():
            subsets = f", {c['evaluations'].mean():.0f} subsets valued"
        cost.append(f"{c['seconds'].mean():.0f} s, {c['fits'].mean():.0f} fits{subsets}"
                    if len(c) else "")
    return [title, "", "| dataset | " + " | ".join(columns.values()) + " |",
            "|---" * (len(columns) + 1) + "|", f"| {dataset} | " + " | ".join(acc) + " |",
            "| time | " + " | ".join(cost) + " |"]


NAMES = {**TABLE6[1], **TABLE5[1], "tdoob": "Thresholding Data-OOB"}


def gains(cells: pd.DataFrame) -> list[str]:
    """Each method's paired gain over the baseline cell of the same trial, and its cut."""
    if not len(cells) or "baseline" not in set(cells["method"]):
        return []
    base = cells[cells["method"] == "baseline"].set_index("trial")["test_acc"]
    eligible = "n_eligible" in cells and cells["n_eligible"].notna().any()
    rows = ["Paired gain over the baseline (test accuracy, same trial), mean ± std over "
            "trials; rows removed by the cut (trials removing none)"
            + ("; one_se: rows credibly below the threshold, and the gain had exactly those "
               "been removed (a diagnostic: the cut did not choose it)" if eligible else ""),
            "", "| method | test accuracy | gain | rows removed |"
            + (" credible rows | gain removing them |" if eligible else ""),
            "|---" * (6 if eligible else 4) + "|"]
    for method in [m for m in METHODS if m != "baseline"]:
        c = cells[(cells["method"] == method) & cells["trial"].isin(base.index)]
        if not len(c):
            continue
        before = base.loc[c["trial"]].to_numpy(float)
        gain = c["test_acc"].to_numpy(float) - before
        removed = c["n_remove"].to_numpy(float)
        row = (f"| {NAMES[method]} | {_mean_std(c['test_acc'])} | "
               f"{gain.mean():+.3f} ± {gain.std(ddof=0):.3f} | "
               f"{removed.mean():.1f} ({int(np.sum(removed == 0))}) |")
        if eligible:
            n = c["n_eligible"].to_numpy(float) if "n_eligible" in c else np.full(len(c), np.nan)
            at = c["test_at_eligible"].to_numpy(float) if "test_at_eligible" in c \
                else np.full(len(c), np.nan)
            at = np.where(n == 0, before, at) - before  # no credible row: nothing removed
            row += (f" {np.nanmean(n):.1f} |" if np.isfinite(n).any() else " n/a |")
            row += (f" {np.nanmean(at):+.3f} ± {np.nanstd(at):.3f} |"
                    if np.isfinite(at).any() else " n/a |")
        rows.append(row)
    return rows if len(rows) > 4 else []


def tables(cells: pd.DataFrame, dataset: str) -> str:
    """Markdown tables shaped like the paper's Tables 5 and 6 (TDOOB's column only when it
    was run), then the paired gains over the baseline."""
    table5 = TABLE5
    if len(cells) and "tdoob" in set(cells["method"]):
        table5 = (TABLE5[0], {**TABLE5[1], "tdoob": NAMES["tdoob"]})
    extra = gains(cells)
    return "\n".join([*_table(cells, dataset, *table5), "", *_table(cells, dataset, *TABLE6),
                      *(["", *extra] if extra else [])])
