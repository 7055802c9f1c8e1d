"""Tables and figures of the Abalone study from its cells (see :mod:`experiments.abalone`).

Markdown shaped like the paper's Table 2 (test MAE mean ± std), Table 3
(seconds and fits), Table 4 (equal-time ablation), plus the gain over the
baseline, the spread of TDShap's pull counts T_n, and the speed ratios of
TDShap against TMC and LOO_1 measured on the same trials. PNG removal
curves like the paper's Figures 1–2.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from experiments.abalone import METHODS, PAPER_MODELS
from tdshap.cleansing import CleansingResult, plot_curves

# SPEC §6: the paper's Table 2 (test MAE mean, std) and Table 3 (seconds)
PAPER_MAE: dict[str, dict[str, tuple[float, float]]] = {
    "dtree": {"baseline": (1.739, 0.052), "random": (1.740, 0.055), "loo100": (1.689, 0.053),
              "loo1": (1.678, 0.031), "tmc": (1.684, 0.047), "tdshap": (1.678, 0.046)},
    "svr": {"baseline": (1.626, 0.051), "random": (1.625, 0.051), "loo100": (1.596, 0.046),
            "loo1": (1.577, 0.028), "tmc": (1.595, 0.042), "tdshap": (1.595, 0.041)},
    "ridge": {"baseline": (1.617, 0.055), "random": (1.616, 0.056), "loo100": (1.567, 0.032),
              "loo1": (1.563, 0.033), "tmc": (1.568, 0.049), "tdshap": (1.562, 0.048)},
    "mlp": {"baseline": (1.708, 0.066), "random": (1.687, 0.065), "loo100": (1.615, 0.053),
            "tmc": (1.604, 0.055), "tdshap": (1.610, 0.040)},
    "gbdt": {"baseline": (1.645, 0.043), "random": (1.654, 0.042), "loo100": (1.627, 0.033),
             "loo1": (1.619, 0.030), "tmc": (1.595, 0.050), "tdshap": (1.595, 0.041)},
}
PAPER_SECONDS: dict[str, dict[str, float]] = {
    "dtree": {"loo100": 21, "loo1": 3400, "tmc": 200, "tdshap": 9.0},
    "svr": {"loo100": 350, "loo1": 16000, "tmc": 1200, "tdshap": 84},
    "ridge": {"loo100": 17, "loo1": 3100, "tmc": 88, "tdshap": 9.3},
    "mlp": {"loo100": 6200, "tmc": 48000, "tdshap": 4800},
    "gbdt": {"loo100": 260, "loo1": 23000, "tmc": 1000, "tdshap": 100},
}
PAPER_ABLATION: dict[str, tuple[float, float, float]] = {
    "dtree": (1.678, 1.697, 1.696), "svr": (1.595, 1.602, 1.596), "ridge": (1.562, 1.571, 1.571),
    "mlp": (1.610, 1.628, 1.618), "gbdt": (1.595, 1.611, 1.604),
}
LABELS = {"baseline": "baseline", "random": "random", "loo100": "LOO_100", "loo1": "LOO_1",
          "tmc": "Data Shapley (TMC)", "tdshap": "TDShap", "tdshap-auto": "TDShap auto",
          "tdshap-no-i": "TDShap w/o (i)", "tdshap-no-ii": "TDShap w/o (ii)",
          "tdshap-seq": "TDShap sequential", "tdshap-warm": "TDShap warm start"}


def _index(cells: list[dict[str, Any]]) -> dict[tuple[str, str], dict[int, dict[str, Any]]]:
    table: dict[tuple[str, str], dict[int, dict[str, Any]]] = defaultdict(dict)
    for c in cells:
        table[(c["model"], c["method"])][c["trial"]] = c
    return table


def _present(cells: list[dict[str, Any]], key: str, order: tuple[str, ...]) -> list[str]:
    seen = {c[key] for c in cells}
    return [x for x in order if x in seen]


def _mean_std(xs: list[float], digits: int = 3) -> str:
    a = np.asarray(xs, dtype=float)
    return f"{a.mean():.{digits}f}±{a.std(ddof=0):.{digits}f}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _header(cols: list[str]) -> list[str]:
    return [_row(cols), _row(["---"] * len(cols))]


def mae_table(cells: list[dict[str, Any]]) -> list[str]:
    """Table 2: test MAE mean ± std (trials), ours over the paper's."""
    idx = _index(cells)
    models, methods = _present(cells, "model", PAPER_MODELS), _present(cells, "method", METHODS)
    lines = _header(["model"] + [LABELS[m] for m in methods])
    for model in models:
        row = [model]
        for method in methods:
            got = idx.get((model, method), {})
            if not got:
                row.append("–")
                continue
            text = f"{_mean_std([c['test_mae'] for c in got.values()])} (n={len(got)})"
            paper = PAPER_MAE.get(model, {}).get(method)
            row.append(text + (f"<br>paper {paper[0]:.3f}±{paper[1]:.3f}" if paper else ""))
        lines.append(_row(row))
    return lines


def gain_table(cells: list[dict[str, Any]]) -> list[str]:
    """Gain over the baseline, baseline MAE − method MAE, mean over trials (higher is better)."""
    idx = _index(cells)
    models = _present(cells, "model", PAPER_MODELS)
    methods = [m for m in _present(cells, "method", METHODS) if m != "baseline"]
    lines = _header(["model"] + [LABELS[m] for m in methods] + ["paper TDShap"])
    for model in models:
        row = [model]
        for method in methods:
            got = idx.get((model, method), {})
            gains = [c["baseline_test_mae"] - c["test_mae"] for c in got.values()]
            row.append(f"{np.mean(gains):+.3f} (n={len(gains)})" if gains else "–")
        paper = PAPER_MAE.get(model, {})
        ref = paper["baseline"][0] - paper["tdshap"][0] if "tdshap" in paper else None
        row.append("–" if ref is None else f"{ref:+.3f}")
        lines.append(_row(row))
    return lines


def time_table(cells: list[dict[str, Any]]) -> list[str]:
    """Table 3: valuation wall seconds and fits per trial (mean), the paper's seconds beside."""
    idx = _index(cells)
    models = _present(cells, "model", PAPER_MODELS)
    methods = [m for m in _present(cells, "method", METHODS) if m not in ("baseline", "random")]
    lines = _header(["model"] + [LABELS[m] for m in methods])
    for model in models:
        row = [model]
        for method in methods:
            got = list(idx.get((model, method), {}).values())
            if not got:
                row.append("–")
                continue
            secs = np.mean([c["seconds"] for c in got])
            fits = np.mean([c["n_fits"] for c in got])
            paper = PAPER_SECONDS.get(model, {}).get(method)
            row.append(f"{secs:.1f} s, {fits:,.0f} fits (n={len(got)})"
                       + (f"<br>paper {paper:g} s" if paper is not None else ""))
        lines.append(_row(row))
    return lines


def ablation_table(cells: list[dict[str, Any]]) -> list[str]:
    """Table 4: test MAE at equal time, ours then the paper's."""
    idx = _index(cells)
    cols = ["tdshap", "tdshap-no-i", "tdshap-no-ii", "tdshap-auto"]
    lines = _header(["model"] + [LABELS[m] for m in cols] + ["paper TDShap / w/o (i) / w/o (ii)"])
    for model in _present(cells, "model", PAPER_MODELS):
        row = [model]
        for method in cols:
            got = idx.get((model, method), {})
            row.append(f"{np.mean([c['test_mae'] for c in got.values()]):.3f} (n={len(got)})"
                       if got else "–")
        paper = PAPER_ABLATION.get(model)
        row.append("–" if paper is None else " / ".join(f"{p:.3f}" for p in paper))
        lines.append(_row(row))
    return lines


def spread_table(cells: list[dict[str, Any]]) -> list[str]:
    """How TDShap spread its pulls T_n over the rows (means over trials), and its (τ, ε)."""
    lines = _header(["model", "method", "τ", "ε", "T_n min", "q25", "median", "q75", "max",
                     "rows ≤ τ"])
    idx = _index(cells)
    for model in _present(cells, "model", PAPER_MODELS):
        for method in ("tdshap", "tdshap-auto", "tdshap-no-i", "tdshap-no-ii"):
            got = [c for c in idx.get((model, method), {}).values() if "pulls_spread" in c]
            if not got:
                continue
            s = {k: np.mean([c["pulls_spread"][k] for c in got])
                 for k in ("min", "q25", "median", "q75", "max")}
            tau, eps = np.mean([c["tau"] for c in got]), np.mean([c["eps"] for c in got])
            harmful = np.mean([c["n_harmful"] for c in got])
            lines.append(_row([model, LABELS[method], f"{tau:.2g}", f"{eps:.2g}",
                               *(f"{s[k]:.1f}" for k in s), f"{harmful:.0f}"]))
    return lines


def speed_table(cells: list[dict[str, Any]]) -> list[str]:
    """TDShap against TMC and LOO_1 on the same (trial, model): time ratio and MAE."""
    idx = _index(cells)
    lines = _header(["model", "trial", "other", "other s", "TDShap s", "speed-up",
                     "fits ratio", "other MAE", "TDShap MAE", "TDShap auto MAE", "note"])
    for model in _present(cells, "model", PAPER_MODELS):
        mine = idx.get((model, "tdshap"), {})
        auto = idx.get((model, "tdshap-auto"), {})
        for other in ("tmc", "loo1"):
            for trial, c in sorted(idx.get((model, other), {}).items()):
                if trial not in mine:
                    continue
                t = mine[trial]
                note = ""
                if other == "tmc":
                    converged = any("MeanRelativeChange" in s for s in c.get("stopped_by", []))
                    err = c.get("convergence_error")
                    note = (f"{c.get('n_permutations')} permutations, "
                            + ("converged" if converged else "stopped by the time budget")
                            + ("" if err is None else f" (mean relative change {err:.3g})"))
                a = auto.get(trial)
                lines.append(_row([model, str(trial), LABELS[other], f"{c['seconds']:.0f}",
                                   f"{t['seconds']:.3g}", _ratio(c["seconds"], t["seconds"]),
                                   _ratio(c["n_fits"], t["n_fits"]),
                                   f"{c['test_mae']:.3f}", f"{t['test_mae']:.3f}",
                                   "–" if a is None else f"{a['test_mae']:.3f}", note]))
    return lines


def _ratio(other: float, mine: float) -> str:
    """``other / mine`` as ``"N×"``; "–" when TDShap fitted nothing (an exact fast path)."""
    return f"{other / mine:.0f}×" if mine > 0 else "–"


def markdown(cells: list[dict[str, Any]], header: str = "") -> str:
    """The whole report as markdown."""
    parts = [header] if header else []
    sections = [
        ("Test MAE (Table 2), mean ± std over trials", mae_table),
        ("Gain over the baseline (baseline MAE − MAE), mean over trials", gain_table),
        ("Computation (Table 3): valuation seconds and fits per trial", time_table),
        ("Equal-time ablation (Table 4): test MAE", ablation_table),
        ("Spread of TDShap's pull counts T_n", spread_table),
        ("Speed, measured side by side on the same trial", speed_table),
    ]
    for title, make in sections:
        body = make(cells)
        if len(body) > 2:
            parts += [f"### {title}", "", *body, ""]
    return "\n".join(parts)


def _curve(cell: dict[str, Any]) -> CleansingResult:
    c = cell["curve"]
    return CleansingResult(
        method=LABELS[cell["method"]], metric="neg_mae", grid=np.asarray(c["grid"]),
        val_scores=np.asarray(c["val"], dtype=float), test_scores=np.asarray(c["test"],
                                                                             dtype=float),
        n_remove=cell["n_remove"], removed=np.empty(0, dtype=np.int64),
        baseline_val=float(c["val"][0]), cleaned_val=-cell["val_mae"],
        baseline_test=float(c["test"][0]), cleaned_test=-cell["test_mae"])


def plot_figures(cells: list[dict[str, Any]], folder: Path) -> list[Path]:
    """One PNG per model: every method's removal curves on the trial with the most methods."""
    folder.mkdir(parents=True, exist_ok=True)
    idx = _index(cells)
    paths = []
    for model in _present(cells, "model", PAPER_MODELS):
        by_trial: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for method in METHODS:
            for trial, c in idx.get((model, method), {}).items():
                if "curve" in c:
                    by_trial[trial].append(c)
        if not by_trial:
            continue
        trial = max(sorted(by_trial), key=lambda t: len(by_trial[t]))
        curves = [_curve(c) for c in by_trial[trial]]
        paths.append(plot_curves(curves, folder / f"curves_{model}_t{trial:02d}.png",
                                 title=f"Abalone, {model}, trial {trial}"))
    return paths
