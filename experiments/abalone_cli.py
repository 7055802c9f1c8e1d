"""``python -m experiments bench``: the paper's studies, rerunnable and resumable."""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

import click

from experiments.abalone import METHODS, PAPER_MODELS
from tdshap._validation import MAX_SEED, check_seed_span
from tdshap.methods.apt.thresholds import DEFAULT_EPS_FACTOR


@click.group()
def bench() -> None:
    """Reproduce the paper's experiments (cells written as they finish; reruns resume)."""


@bench.command("abalone")
@click.option("--models", default="dtree,svr,ridge", show_default=True,
              help=f"Comma-separated, from {','.join(PAPER_MODELS)}.")
@click.option("--methods", default="baseline,random,loo100,tdshap,tdshap-auto",
              show_default=True, help=f"Comma-separated, from {','.join(METHODS)}.")
@click.option("--trials", type=click.IntRange(min=1), default=10, show_default=True,
              help="Trials 0..N-1 (or --trial-start..); trial t splits with seed --seed + t.")
@click.option("--trial-start", type=click.IntRange(min=0), default=0, show_default=True)
# trial t's split and models take --seed + t, which numpy needs in 0..2**32 - 1 (-1 ended in
# numpy's bare "expected non-negative integer" after --out was made)
@click.option("--seed", type=click.IntRange(0, MAX_SEED), default=0, show_default=True,
              help="Seed of trial 0.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              default=Path("tdshap-out/abalone"), show_default=True,
              help="Folder for cells/*.json, values/*.json, report.md and curves/*.png.")
@click.option("--data", type=click.Path(path_type=Path), default=None,
              help="abalone.data or a folder holding abalone/abalone.data "
                   "(default: $TDSHAP_DATA_DIR, the cache, then a download).")
@click.option("--tmc-budget", type=float, default=600.0, show_default=True,
              help="Seconds after which TMC stops if it has not converged.")
@click.option("--eps-factor", type=float, default=DEFAULT_EPS_FACTOR, show_default=True,
              help="eps_factor of tdshap-auto (see tdshap.methods.apt.thresholds).")
@click.option("--sizes", default="1000,1000,1000", show_default=True,
              help="train,val,test rows; K, N_min and LOO's k scale with train/1000.")
@click.option("--fast-path/--no-fast-path", default=True, show_default=True,
              help="Exact incremental fits for Ridge; --no-fast-path refits every subset "
                   "(the paper's cost model).")
@click.option("--seq-step", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rows removed per stage by tdshap-seq.")
@click.option("--report-only", is_flag=True,
              help="Compute nothing: rewrite report.md and the figures from the cells in --out.")
@click.option("--progress/--no-progress", default=False, show_default=True)
def abalone_command(models: str, methods: str, trials: int, trial_start: int, seed: int,
                    out: Path, data: Path | None, tmc_budget: float, eps_factor: float,
                    sizes: str, fast_path: bool, seq_step: int, report_only: bool,
                    progress: bool) -> None:
    """The paper's Abalone study (Tables 2-4, Figures 1-2)."""
    from experiments.abalone import StudyConfig, all_cells, check_warm, parse_list, run_study
    from experiments.abalone_report import markdown, plot_figures

    try:
        model_list = parse_list(models, PAPER_MODELS, "--models")
        method_list = parse_list(methods, METHODS, "--methods")
        size_tuple = tuple(int(x) for x in sizes.split(","))
        if len(size_tuple) != 3 or min(size_tuple) < 1:
            raise ValueError(f"--sizes {sizes!r} must be three positive counts (1000,1000,1000)")
    except ValueError as err:
        raise click.BadParameter(str(err)) from None
    try:  # the last trial, trial_start + trials - 1, takes seed + that
        check_seed_span(seed, trial_start + trials, "--seed", "--trial-start + --trials")
        for model in model_list if "tdshap-warm" in method_list else []:
            check_warm(model)  # flags that cannot go together: a usage mistake
    except ValueError as err:
        raise click.UsageError(str(err)) from None
    # from here on the flags are well formed: what fails (no data, a missing dependency, an
    # --out of the user's, an edited cell) is not a usage mistake, so it is one "Error:" line
    # (click.ClickException, exit 1) as in the deep benches, without the usage block
    cfg = StudyConfig(out=out, first_seed=seed, data_path=None if data is None else str(data),
                      tmc_budget=tmc_budget, eps_factor=eps_factor, progress=progress,
                      sizes=size_tuple, fast_path=fast_path,  # type: ignore[arg-type]
                      seq_step=seq_step)
    start = time.perf_counter()
    if not report_only:
        try:
            run_study(model_list, method_list, range(trial_start, trial_start + trials), cfg,
                      echo=click.echo)
        # settings that cannot work, or no data (a FileNotFoundError that says where it
        # looked), found before any cell runs
        except (ValueError, FileNotFoundError) as err:
            raise click.ClickException(str(err)) from None
    if report_only and not (out / "cells").is_dir():  # reading cells would make out/cells
        raise click.ClickException(f"no cells in {out}: run some first (without "
                                   "--report-only).")
    try:
        cells = all_cells(out)
    except ValueError as err:  # --report-only on a folder of the user's, or an edited cell
        raise click.ClickException(str(err)) from None
    if not cells:
        raise click.ClickException(f"no cells in {out}: run some first (without --report-only).")
    header = (f"Abalone study: {len(cells)} cells in {out} "
              f"(machine {platform.machine()}, Python {platform.python_version()}, "
              f"written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
              f"command: tdshap {' '.join(sys.argv[1:])})\n")
    (out / "report.md").write_text(markdown(cells, header))
    plot_figures(cells, out / "curves")
    click.echo(f"{len(cells)} cells; this run {time.perf_counter() - start:.0f} s; "
               f"report in {out / 'report.md'}")
