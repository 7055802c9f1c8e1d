"""The ``tdshap`` command line."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import click

from tdshap.app.cli_clean import clean, value


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("tdshap"), prog_name="tdshap")
def main() -> None:
    """Find the training rows that hurt a model, fast (Thresholding Data Shapley)."""


@main.command()
@click.option("--trials", type=click.IntRange(min=1), default=1, show_default=True,
              help="Repeat with different seeds and splits; prints mean ± std.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the first trial.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              default=Path("tdshap-out/demo"), show_default=True,
              help="Folder for the values CSV, result JSON and curve PNG.")
@click.option("--progress/--no-progress", default=True, show_default=True)
def demo(trials: int, seed: int, out: Path, progress: bool) -> None:
    """The paper's Breast Cancer setting: value, cleanse, report."""
    from tdshap.app.demo import DEMO_SETTINGS, mean_std, run_trial, summarize

    click.echo(
        "TDShap on Breast Cancer (150/150/269), DecisionTreeClassifier(max_depth=5, "
        f"min_samples_leaf=2), accuracy, {DEMO_SETTINGS}"
    )
    done = []
    for t in range(trials):
        trial = run_trial(seed + t, out, progress)
        c = trial.cleansing
        click.echo(
            f"seed {trial.seed}: test accuracy {c.baseline_test:.3f} -> {c.cleaned_test:.3f} "
            f"(removed {c.n_remove}, harmful {trial.n_harmful}, {trial.n_fits} fits, "
            f"{trial.seconds:.1f} s)"
        )
        done.append(trial)
    table = summarize(done)
    if trials > 1:
        click.echo(
            f"\nmean ± std over {trials} trials: baseline {mean_std(table.baseline_acc)}, "
            f"TDShap {mean_std(table.cleaned_acc)}, {table.seconds.mean():.1f} s per trial"
        )
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "summary.csv", index=False)
    click.echo(f"outputs written to {out.resolve()}")


main.add_command(clean)
main.add_command(value)

if __name__ == "__main__":
    main()
