"""What a run says about itself: the terminal summary, ``report.md`` and ``values.png``."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tdshap._io import image_path
from tdshap._validation import check_number, code_span, printable
from tdshap.app.run import HarmfulRun, Setting
from tdshap.app.tabular import cleaned_name
from tdshap.cleansing import plain_text

GUARANTEE_NOTE = (
    "Theorem 2: with at least the pulls needed, the harmful set is right for every row "
    "further than eps from tau, with the failure probability shown. The metric bound on "
    "the width is safe but loose; the observed width is a lower bound, so a guarantee "
    "from it is optimistic."
)


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool | np.bool_):
        return "yes" if x else "no"
    if isinstance(x, int | np.integer):
        return f"{int(x):,}" if abs(int(x)) < 10**7 else f"{float(x):.3g}"
    if isinstance(x, float | np.floating):
        if not np.isfinite(x):
            return "n/a"
        return f"{x:.{digits}g}"
    return str(x)


METHOD_LABELS = {"tdshap": "TDShap", "tdoob": "Thresholding Data-OOB",
                 "knn_oob": "k-NN out-of-bag values in closed form",
                 "knn_shapley": "exact k-NN Shapley on the training and validation rows",
                 "knn_shapley_train": "exact k-NN Shapley on the training rows",
                 "knn_shapley_proxy": "exact 5-NN Shapley on the training and validation "
                                      "rows, a proxy for the model"}


def _method(run: HarmfulRun) -> str:
    """The valuation method the run recorded (runs without one: TDShap)."""
    method = run.settings.get("method")
    return str(method.value) if method else "tdshap"


def method_label(run: HarmfulRun) -> str:
    """The valuation method's display name (runs without a recorded method: TDShap)."""
    method = _method(run)
    if method == "knn_shapley_proxy" and run.result.extra.get("queries") == "training":
        return "exact 5-NN Shapley on the training rows, a proxy for the model"  # a regressor
    return METHOD_LABELS.get(method, "TDShap")


def headline(run: HarmfulRun) -> str:
    r = run.result
    if r.algorithm in ("knn_oob", "knn_shapley"):
        return (f"{int(r.is_harmful.sum())} of {len(r)} training rows look harmful "
                f"(value <= tau = {_fmt(r.threshold)}; the values are exact)")
    return (f"{int(r.is_harmful.sum())} of {len(r)} training rows look harmful "
            f"(value <= tau = {_fmt(r.threshold)}, eps = {_fmt(run.settings['eps'].value)})")


def certainty_line(run: HarmfulRun) -> str:
    """How sure the harmful flags are: the flagged rows that are credibly harmful.

    "Sure" is :attr:`~tdshap.result.ValuationResult.is_credibly_harmful`: the
    whole interval (:mod:`tdshap.intervals`) is below tau. Rows with a single
    pull have a wide interval from the pooled variance, so they are rarely sure.
    """
    r = run.result
    flagged = r.is_harmful
    if r.algorithm == "knn_oob":
        return ("the values are the k-NN's expected out-of-bag probability of each row's own "
                "label, in closed form (no sampling, so no interval): a flagged row is below "
                "tau exactly; whether removing them helps is the cut's test below")
    if r.algorithm == "knn_shapley":
        sure = int(np.sum(flagged & r.is_credibly_harmful))
        knn = (f"a {r.extra.get('n_neighbors')}-NN of the standardised rows, standing in for "
               "the model," if _method(run) == "knn_shapley_proxy" else "the k-NN")
        both = r.extra.get("queries") == "both"
        queried = ("half for the other training rows, half for the validation rows"
                   if both else f"for the other {len(r) - 1:,}")
        if r.extra.get("query_clip") is not None:  # a far-off target blames its neighbours less
            queried += (f", their targets clipped at {r.extra['query_clip']:g} robust SD "
                        "of what their neighbours predict")
        return (f"the values are exact for these rows (each row's mean effect on what {knn} "
                f"predicts, {queried}); {sure} of the flagged rows stay "
                f"below tau across the whole {100 * r.confidence:g}% interval of that mean "
                "over the rows queried" + ("; whether removing the flagged rows helps is the "
                                          "cut's test below" if run.cleansing else ""))
    sure = int(np.sum(flagged & r.is_credibly_harmful))
    single = int(np.sum(flagged & (r.counts < 2)))
    unknown = int(np.sum(flagged & ~np.isfinite(r.ci_high)))
    pct = f"{100 * r.confidence:g}%"
    line = (f"of the flagged rows, {sure} are credibly harmful (whole {pct} {r.interval} "
            f"interval below tau) and {single} rest on a single pull")
    return line + (f"; {unknown} have no interval (unknown)" if unknown else "")


def overfit_warning(run: HarmfulRun) -> str | None:
    """Said when the cut helped the validation rows but not the test rows."""
    c = run.cleansing
    if c is None or c.baseline_test is None or c.n_remove == 0:
        return None
    if c.cleaned_test is not None and c.cleaned_test <= c.baseline_test:
        return (f"warning: removing {c.n_remove} rows improved the validation score but not "
                "the test score: the cut fits the validation rows; check curve.png before "
                "dropping them")
    return None


def _signed(x: float) -> str:
    return f"{x:+.4g}"


def cut_summary(run: HarmfulRun) -> str | None:
    """What cleansing removed and on what evidence; both cuts when they differ."""
    c = run.cleansing
    if c is None:
        return None
    e = c.evidence
    if e is None or e.rule == "paper":
        noise = ("" if e is None or not np.isfinite(e.se_best) else
                 f"; validation gain {_signed(e.gain_best)}, one SE {e.se_best:.4g}")
        return (f"cleansing removes the {c.n_remove} lowest-valued rows: the best validation "
                f"score (the paper's rule, --cut paper{noise})")
    paper = (f"the paper's rule (best validation score) would remove {e.n_best}"
             if e.n_best != c.n_remove else "the paper's rule agrees")
    if c.n_remove == 0:
        return f"cleansing removes no rows: {e.reason}; {paper}"
    return f"cleansing removes the {c.n_remove} lowest-valued rows: {e.reason}; {paper}"


def score_header(run: HarmfulRun) -> list[str]:
    """Columns of the before/after table: all rows, the chosen cut, the paper's if different."""
    c = run.cleansing
    if c is None:
        return []
    head = ["score", "all rows", f"{c.n_remove} removed (chosen)"]
    if c.n_best != c.n_remove:
        head.append(f"{c.n_best} removed (best validation)")
    return head


def score_rows(run: HarmfulRun) -> list[tuple[str, ...]]:
    """``(set, before, after[, after the paper's cut])`` rows of the before/after table."""
    c = run.cleansing
    if c is None:
        return []
    best_val, best_test = c.scores_at(c.n_best)
    both = c.n_best != c.n_remove
    rows = [(f"validation {c.metric}", _fmt(c.baseline_val), _fmt(c.cleaned_val))
            + ((_fmt(best_val),) if both else ())]
    if c.baseline_test is not None:
        rows.append((f"test {c.metric}", _fmt(c.baseline_test), _fmt(c.cleaned_test))
                    + ((_fmt(best_test),) if both else ()))
    return rows


def _stopped_by(r: Any) -> str:
    fired = r.extra.get("stopped_by")
    return ", ".join(map(str, fired)) if isinstance(fired, list) else str(fired)


def cost_line(run: HarmfulRun) -> str:
    r = run.result
    grid = 0 if run.cleansing is None else len(run.cleansing.grid)
    fast = r.extra.get("fast_path")
    kind = "approximate" if r.extra.get("neighbor_search") == "approximate" else "exact"
    how = (f"{r.n_evaluations:,} evaluations by the {kind} {fast} fast path, {r.n_fits:,} "
           "refits" if fast else f"{r.n_fits:,} fits")
    listed = run.cleansing is not None and "neighbour lists" in str(
        run.cleansing.extra.get("path_note"))
    cuts = f"{grid} cuts from the k-NN neighbour lists" if listed else f"{grid} fits"
    checked = 0 if run.cleansing is None else int(run.cleansing.extra.get("n_check_fits", 0))
    if checked:  # each validation fold's own curve, checking the paper's larger cut
        cuts += f" (+{checked:,} for the folds' own curves)"
    workers = 0 if run.cleansing is None else int(run.cleansing.extra.get("n_worker_fits", 0))
    if workers:
        cuts += f", {workers:,} of them on parallel workers"
    if r.algorithm == "knn_shapley":
        return (f"valuation in closed form (every row's neighbours sorted, no model fitted) "
                f"in {r.wall_seconds:.2f} s; cleansing {cuts}; total {run.seconds:.1f} s")
    if r.algorithm == "knn_oob":
        return (f"valuation in closed form (one neighbour search, no bag) in "
                f"{r.wall_seconds:.2f} s; cleansing {cuts}; total {run.seconds:.1f} s")
    return (f"valuation {how} in {r.wall_seconds:.1f} s "
            f"({r.fit_seconds:.1f} s inside fit/score), "
            f"{r.extra.get('rounds', 0)} rounds after initialisation, stopped by "
            f"{_stopped_by(r)}; cleansing {cuts}; total {run.seconds:.1f} s")


def path_line(run: HarmfulRun) -> str | None:
    """Which path the valuation and the cleansing took, and why (None if not recorded)."""
    parts = []
    note = run.result.extra.get("path_note")
    if note:  # a note's own full stop read "Regressor.; cleansing: ..." before the next
        parts.append(f"valuation: {str(note).rstrip('.')}")
    if run.cleansing is not None and run.cleansing.extra.get("path_note"):
        parts.append(f"cleansing: {str(run.cleansing.extra['path_note']).rstrip('.')}")
    return ("paths taken: " + "; ".join(parts)) if parts else None


def failures_line(run: HarmfulRun) -> str:
    """Fits that raised and were scored by the fallback, per stage, and the first error."""
    r, c = run.result, run.cleansing
    parts = [f"valuation {int(r.extra.get('n_failed_fits', 0)):,} of {r.n_fits:,} fits"]
    first = r.extra.get("first_error")
    if c is not None:
        parts.append(f"cleansing {c.extra.get('n_failed_fits', 0):,} of "
                     f"{c.extra.get('n_fits', len(c.grid)):,} fits")
        first = first or c.extra.get("first_error")
    return ("failed fits (scored by the fallback): " + ", ".join(parts)
            + (f"; first error: {first}" if first else ""))


def estimate_line(run: HarmfulRun) -> str | None:
    """The cost estimate printed before the run, if one was made."""
    estimate = run.extra.get("estimate")
    return None if estimate is None else estimate.line(run.settings["time_budget"].value)


def guarantee_rows(run: HarmfulRun) -> list[tuple[str, str, str, str, str]]:
    """``(width from, width, pulls needed, met, failure bound)``."""
    g = run.result.guarantee or {}
    out = []
    for key, label in (("from_metric_bound", "metric bound"),
                       ("from_observed_width", "observed width")):
        part = g.get(key) or {}
        out.append((label, _fmt(part.get("width")), _fmt(part.get("pulls_needed")),
                    _fmt(part.get("met")), _fmt(part.get("failure_bound"))))
    return out


def worst_rows(run: HarmfulRun, n: int) -> pd.DataFrame:
    """The ``n`` lowest-valued rows (all of them when there are fewer)."""
    # a slice took -1 as "all but the last row" and 2.5 as Python's 'slice indices must be
    # integers': the count is checked here, where every report takes it
    check_number(n, "n_worst", low=0, integer=True,
                 hint="It is how many of the lowest-valued rows to show, e.g. 10.")
    frame = run.frame()
    cols = [c for c in ("value", "ci_low", "ci_high", "n_pulls", "is_harmful", "removed")
            if c in frame]
    order = np.lexsort((np.arange(len(frame)), frame["value"].to_numpy()))
    return frame.iloc[order[:int(n)]][cols]


def settings_line(s: dict[str, Setting]) -> str:
    """The budget settings the method took (k, n_min, max_iter; a time budget when given)
    and the seed: a closed form's line said k=None, n_min=None, max_iter=None."""
    shown = [f"{name}={s[name].value}" for name in ("k", "n_min", "max_iter") if s[name].used]
    if s["time_budget"].value is not None:
        shown.append(f"time_budget={s['time_budget'].value}")
    return "settings: " + ", ".join([*shown, f"seed={s['seed'].value}"])


def text_report(run: HarmfulRun, n_worst: int = 10) -> str:
    """The summary printed by ``HarmfulRows.report()`` and the CLI."""
    d, s = run.data, run.settings
    task_how = "given" if d.task_given else f"inferred: {d.task_reason}"
    lines = [
        f"{method_label(run)}: {headline(run)}",
        certainty_line(run),
        f"task {d.task} ({task_how}); model {run.model_name}; metric {run.metric}; "
        f"valued by {s['method'].value} on {s['valuation_metric'].value} "
        f"({s['method'].why})",
        f"data: {len(d.y_train)} training rows valued; {d.split_note}",
        settings_line(s),
    ]
    if run.cleansing is not None:
        lines.append(f"{cut_summary(run)}:")
        rows = score_rows(run)
        head = score_header(run)[1:]
        widths = [max(len(rows[0][0]), 1)] + [max(len(h), 9) for h in head]
        lines.append("  " + "  ".join([" " * widths[0]]
                                      + [f"{h:>{w}}" for h, w in zip(head, widths[1:],
                                                                        strict=True)]))
        lines += ["  " + "  ".join([f"{r[0]:{widths[0]}}"]
                                   + [f"{v:>{w}}" for v, w in zip(r[1:], widths[1:],
                                                                  strict=True)])
                  for r in rows]
        if overfit_warning(run):
            lines.append(str(overfit_warning(run)))
    lines.append(cost_line(run))
    paths = path_line(run)
    if paths:
        lines.append(paths)
    lines.append(failures_line(run))
    if run.result.guarantee:  # Theorem 2 is about Shapley marginals: TDShap only
        pulls = run.result.guarantee.get("pulls", 0)
        lines.append(f"guarantee (Theorem 2), {pulls:,} pulls made:")
        for label, w, need, met, fail in guarantee_rows(run):
            lines.append(f"  width from {label}: w={w}, pulls needed {need}, met: {met}"
                         + (f", P(fail) <= {fail}" if met == "yes" else ""))
    worst = worst_rows(run, n_worst)
    lines.append(f"worst {len(worst)} rows:")
    lines.append(worst.to_string(float_format=lambda v: f"{v:.4g}"))
    return "\n".join(lines)


def parts_line(parts: Sequence[HarmfulRun]) -> str:
    """What two parts did together (``find_harmful(every_row=True)``)."""
    sizes = " + ".join(str(len(p.data.y_train)) for p in parts)
    line = (f"every row valued in {len(parts)} parts ({sizes} rows), each part's rows held "
            "out by the other")
    removed = [p.cleansing.n_remove for p in parts if p.cleansing is not None]
    if len(removed) == len(parts):
        line += f"; cleansing removes {' + '.join(map(str, removed))} = {sum(removed)} rows"
    return line


def parts_report(parts: Sequence[HarmfulRun], n_worst: int = 10) -> str:
    """:func:`text_report` of one run, or of each part after :func:`parts_line`."""
    if len(parts) == 1:
        return text_report(parts[0], n_worst=n_worst)
    return "\n\n".join([parts_line(parts)] + [
        f"== part {i} of {len(parts)} ==\n" + text_report(p, n_worst=n_worst)
        for i, p in enumerate(parts, 1)])


def parts_markdown(parts: Sequence[HarmfulRun], inputs: dict[str, str],
                   n_worst: int = 20) -> str:
    """:func:`markdown_report` of one run, or of each part after :func:`parts_line`."""
    if len(parts) == 1:
        return markdown_report(parts[0], inputs, n_worst=n_worst)
    return "\n\n".join([f"# tdshap report\n\n**{parts_line(parts)}.**"] + [
        markdown_report(p, inputs, n_worst=n_worst, title=f"Part {i} of {len(parts)}")
        for i, p in enumerate(parts, 1)])


def _md_table(header: list[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells: Sequence[Any]) -> str:
        # a cell may be the user's text (a row id, the id column's name): a line break in
        # it ended the table, a "|" split the cell
        return "| " + " | ".join(printable(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *map(line, rows)])


def _source(name: str, setting: Any) -> str:
    if setting.given:
        return "given"
    return "inferred" if name == "task" else "default"


def markdown_report(run: HarmfulRun, inputs: dict[str, str], n_worst: int = 20,
                    title: str = "tdshap report") -> str:
    """``report.md``: settings and why, scores, worst rows, fits and time, guarantee."""
    d, r = run.data, run.result
    settings = [[name, code_span(_fmt(s.value, 6)), _source(name, s), s.why]
                for name, s in run.settings.items()]
    parts = [
        f"# {title}",
        f"**{headline(run)}.** {certainty_line(run).capitalize()}.",
        "## Inputs\n" + "\n".join(f"- {k}: {code_span(v)}" for k, v in inputs.items()),
        "## Data\n" + "\n".join([
            f"- task: **{d.task}** ({'given' if d.task_given else 'inferred: ' + d.task_reason})",
            f"- {len(d.y_train)} training rows valued; {d.split_note}",
            f"- {len(d.encoder.feature_names_)} encoded features; {d.encoder.describe()}",
        ] + ([f"- imputed: {d.encoder.imputed_}"] if d.encoder.imputed_ else [])
          + ([f"- imputed in held-out rows only: {d.encoder.imputed_held_out_}"]
             if d.encoder.imputed_held_out_ else [])),
        "## Settings\n" + _md_table(["setting", "value", "source", "why"], settings),
    ]
    if run.cleansing is not None:
        c = run.cleansing
        summary = str(cut_summary(run))
        e = c.evidence
        evidence = ""
        if e is not None and e.rule != "paper":
            exact = r.extra.get("eligible_by") == "value"
            credible = ("" if e.n_eligible is None else
                        f" {e.n_eligible} rows are " + (
                            "below tau (exact values)" if exact else
                            "credibly below tau (interval below tau with all rows tested at "
                            "once, Bonferroni)") + " and are ranked first; only they may be "
                        "removed.")
            named = "" if e.eligible is None else (
                " One cut was named before any score was seen, removing exactly those rows; "
                f"it is taken when it beats its own noise: {e.eligible.describe()} "
                f"({'passed' if e.eligible.passed else 'not passed'}).")
            cv = e.cross_validated
            suits = "" if cv is None else (
                " Whether this model gains more from the paper's larger cut was asked of the "
                f"validation rows by cross-validation: {cv.describe()} "
                f"({'taken' if cv.prefers_paper else 'not taken'}).")
            crossed = e.eligible is not None and e.eligible.cross_fitted
            optimistic = (" The values did not use the validation rows (out of bag), so the "
                          "validation gains are not inflated by the valuation."
                          if r.extra.get("validation_free") else
                          " The same validation rows valued the rows, so the curve's "
                          "validation gains are optimistic" + (
                              "; the named cut's test is not: cross-fitted, each validation "
                              "row judged rows chosen without its fold" if crossed else "")
                          + "; the test score is the honest one.")
            evidence = (f" Evidence: the gain of each cut over keeping all rows, with its "
                        f"standard error from {e.n_bootstrap} paired bootstrap resamples of the "
                        f"validation rows; a cut counts only when its gain exceeds "
                        f"{e.n_se:g} SE.{credible}{named}{suits}{optimistic}")
        parts.append(
            "## Before and after cleansing\n"
            f"Training rows ranked by value, lowest first; the model was refitted without the "
            f"lowest 0, {c.grid[1] if len(c.grid) > 1 else 0}, ... {c.grid[-1]} rows; the "
            f"rule `{c.rule}` chose **{c.n_remove} rows removed** (the `removed` column; "
            f"`{cleaned_name(Path(inputs.get('train', 'train.csv')))}` drops them).\n\n"
            f"**{summary[0].upper()}{summary[1:]}.**{evidence}"
            + ("" if c.baseline_test is not None else
               " No test rows: the after-cleaning validation score is optimistic.")
            + "\n\n" + _md_table(score_header(run), score_rows(run))
            + (f"\n\n**{overfit_warning(run)}.**" if overfit_warning(run) else "")
        )
    worst = worst_rows(run, n_worst)
    parts.append(
        f"## The {len(worst)} lowest-valued rows\n"
        + _md_table([str(worst.index.name or "row"), *worst.columns],
                    [[str(i), *(_fmt(v) for v in row)]
                     for i, row in zip(worst.index, worst.itertuples(index=False),
                                       strict=True)])
    )
    parts.append(
        "## Fits and time\n" + cost_line(run) + ".\n\n"
        + (f"{path_line(run)}.\n\n" if path_line(run) else "") + failures_line(run) + ".\n\n"
        + (f"Before the run, {estimate_line(run)}.\n\n" if estimate_line(run) else "")
        + "Pulls per row: "
        + ", ".join(f"{k} {_fmt(v, 3)}" for k, v in (r.extra.get("pulls_spread") or {}).items())
    )
    if r.guarantee:
        pulls = r.guarantee.get("pulls", 0)
        parts.append(
            f"## Guarantee\n{pulls:,} pulls made, N = {len(r)}, "
            f"eps = {_fmt(run.settings['eps'].value)}.\n\n"
            + _md_table(["width from", "w", "pulls needed", "met", "P(fail) <="],
                        guarantee_rows(run))
            + "\n\n" + GUARANTEE_NOTE
        )
    return "\n\n".join(parts) + "\n"


def plot_values(run: HarmfulRun, path: str | os.PathLike[str]) -> Path:
    """Sorted values with their 95% intervals, tau and the band tau +- eps."""
    path = image_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = run.result
    order = np.argsort(r.values, kind="stable")
    x = np.arange(len(order))
    fig, ax = plt.subplots(figsize=(7, 4))
    low, high = r.ci_low[order], r.ci_high[order]
    ax.fill_between(x, np.where(np.isfinite(low), low, r.values[order]),
                    np.where(np.isfinite(high), high, r.values[order]),
                    color="tab:blue", alpha=0.25, linewidth=0, label="95% interval")
    harmful = r.is_harmful[order]
    ax.plot(x[~harmful], r.values[order][~harmful], ".", ms=3, color="tab:blue", label="value")
    ax.plot(x[harmful], r.values[order][harmful], ".", ms=3, color="tab:red", label="harmful")
    # a closed-form valuation has no precision eps (its values are exact)
    given_eps = run.settings["eps"].value
    tau, eps = float(r.threshold or 0.0), float(given_eps or 0.0)
    # a few extreme rows would squash the band around tau: show the middle 98%
    lo, hi = np.percentile(r.values, [1, 99])
    # a tau far from every value (--tau 1e308) would squash the values instead: not drawn
    reach = 100 * max(hi - lo, eps, 1e-9)
    # an eps near the float range (--eps 1e308) made tau +- eps, or the span of the axis,
    # inf: "Axis limits cannot be NaN or Inf" ended the finished run; such a band is off too
    span = max(hi, tau + eps) - min(lo, tau - eps)
    if lo - reach <= tau <= hi + reach and math.isfinite(1.2 * span):
        ax.axhline(tau, color="black", linewidth=1, label=f"tau = {tau:.3g}")
        if given_eps is not None:
            ax.axhspan(tau - eps, tau + eps, color="gray", alpha=0.2,
                       label=f"tau ± eps ({eps:.3g})")
        lo, hi = min(lo, tau - eps), max(hi, tau + eps)
    else:
        ax.plot([], [], color="black", linewidth=1, label=f"tau = {tau:.3g} (off the chart)")
    pad = 0.1 * (hi - lo) if hi > lo else 1e-9
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlabel("training rows, sorted by value (y axis: 1st-99th percentile)")
    ax.set_ylabel(plain_text(f"value ({run.metric} units)"))
    ax.set_title(plain_text(headline(run)), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
