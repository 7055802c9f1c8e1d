"""``python -m experiments bench ...``: the paper's studies, rerunnable and resumable."""

from __future__ import annotations

import click

from experiments.abalone_cli import bench
from experiments.deep_cli import bench_fmnist, bench_livedoor

bench.add_command(bench_fmnist, "fmnist")
bench.add_command(bench_livedoor, "livedoor")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """The paper's experiments (outside the tdshap package)."""


main.add_command(bench)

if __name__ == "__main__":
    main()
