"""The ``tdshap`` command line."""

from __future__ import annotations

import signal
from importlib.metadata import version
from pathlib import Path
from types import FrameType

import click

from tdshap._validation import MAX_SEED, check_seed_span
from tdshap.app.cli_clean import (
    GivenPath,
    OneLineCommand,
    OneLineGroup,
    clean,
    one_line_errors,
    value,
)
from tdshap.app.outdir import OutputFolder
from tdshap.utility.parallel import check_n_jobs

#: a trial takes seconds, so this many are a day's work; 10**11 filled memory with the names
#: of their outputs before any trial ran ("unexpected MemoryError ... please report")
MAX_TRIALS = 10_000


@click.group(cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("tdshap"), prog_name="tdshap")
def main() -> None:
    """Find the training rows that hurt a model, fast (Thresholding Data Shapley)."""
    _stop_on_sigterm()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _stop_on_sigterm() -> None:
    """End the run on SIGTERM (kill, a scheduler's time limit) as on Ctrl-C: by default it
    ended the process where it stood, leaving a complete staging folder beside --out (outside
    it), the lock, and half a set where files are renamed in one by one; as Ctrl-C the
    checkpoint is saved and every one of those is cleaned up."""
    try:
        previous = signal.signal(signal.SIGTERM, _interrupt)
    except ValueError:  # main() called from a thread (an embedding app): left as it is
        return
    # put back when the command ends: main() called in-process (click's CliRunner, an app)
    # must not leave the caller's SIGTERM raising KeyboardInterrupt
    click.get_current_context().call_on_close(
        lambda: signal.signal(signal.SIGTERM, previous))


@main.command(cls=OneLineCommand)
@click.option("--trials", type=click.IntRange(1, MAX_TRIALS), default=5, show_default=True,
              help="Seeds (each its own split); the summary shows their mean ± std.")
@click.option("--seed", type=click.IntRange(0, MAX_SEED), default=0, show_default=True,
              help="Seed of the first trial.")
@click.option("--jobs", type=int, default=-1, show_default=True,
              help="Trials run side by side (joblib; -1: one per core).")
@click.option("--out", type=GivenPath(),
              # not inside clean's default --out (tdshap-out), which would then hold a
              # folder it did not write and refuse to be used without --force
              default=Path("tdshap-demo"), show_default=True,
              help="Folder for the values CSV, result JSON and curve PNG of every trial: a new "
              "one, or one holding only an earlier demo's outputs.")
@click.option("--force", is_flag=True,
              help="Write into an --out that holds other files too (outputs replace files of "
              "the same names).")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Progress bar (with --jobs 1 only).")
def demo(trials: int, seed: int, jobs: int, out: Path, force: bool, progress: bool) -> None:
    """The paper's Breast Cancer setting: value, cleanse, report, over several seeds.

    One seed can lose accuracy by chance (a 269-row test set moves by 0.004 per
    row), so the first line is the mean over the seeds, then each seed.
    """
    one_line_errors(lambda: _demo(trials, seed, jobs, out, force, progress))


def _demo(trials: int, seed: int, jobs: int, out: Path, force: bool, progress: bool) -> None:
    from joblib import Parallel, delayed

    from tdshap.app.demo import (
        DEMO_OUTPUTS,
        DEMO_SETTINGS,
        mean_std,
        run_trial,
        summarize,
        write_trial,
    )

    try:  # joblib's own errors are tracebacks; the library's check, in this command's words
        check_n_jobs(jobs)
    except ValueError as err:
        raise ValueError(str(err).replace(f"n_jobs={jobs!r}", f"--jobs {jobs}")) from None
    check_seed_span(seed, trials)
    seeds = range(seed, seed + trials)
    # --out is checked before any work, and written as one set like clean's (outdir)
    folder = OutputFolder(out, force=force, known_pattern=DEMO_OUTPUTS)
    folder.check([], [f"{kind}_seed{s}.{ext}" for s in seeds for kind, ext in
                      (("values", "csv"), ("result", "json"), ("curve", "png"))]
                 + ["summary.csv"])
    click.echo(
        "TDShap on Breast Cancer (150/150/269), DecisionTreeClassifier(max_depth=5, "
        f"min_samples_leaf=2), accuracy, {DEMO_SETTINGS}; {trials} seed(s)"
    )
    if jobs == 1:
        done = [run_trial(s, progress) for s in seeds]
    else:
        # loky starts every worker it is given at once, busy or not: --jobs 1000000 started a
        # million processes for 5 trials
        workers = min(jobs, trials) if jobs > 0 else jobs
        done = Parallel(n_jobs=workers)(delayed(run_trial)(s, False) for s in seeds)
    table = summarize(done)
    gain = table.cleaned_acc - table.baseline_acc
    if trials > 1:
        click.echo(
            f"mean ± std over {trials} seeds: test accuracy {mean_std(table.baseline_acc)} -> "
            f"{mean_std(table.cleaned_acc)} (gain {gain.mean():+.3f}; better in "
            f"{int((gain > 0).sum())}, worse in {int((gain < 0).sum())} of {trials}); "
            f"{table.seconds.mean():.1f} s per trial"
        )
    for trial in done:
        c = trial.cleansing
        click.echo(
            f"  seed {trial.seed}: test accuracy {c.baseline_test:.3f} -> {c.cleaned_test:.3f} "
            f"(removed {c.n_remove}, harmful {trial.n_harmful}, {trial.n_fits} fits, "
            f"{trial.seconds:.1f} s)"
        )

    def write(tmp: Path) -> list[str]:
        names = [name for trial in done for name in write_trial(trial, tmp)]
        table.to_csv(tmp / "summary.csv", index=False)
        return [*names, "summary.csv"]

    folder.claim()
    try:
        folder.publish(write, {"command": "tdshap demo", "seeds": list(seeds)})
    finally:
        folder.release()
    click.echo(f"outputs written to {folder.real}")


main.add_command(clean)
main.add_command(value)

if __name__ == "__main__":
    main()
