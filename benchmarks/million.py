"""One million training rows: the default valuation with its search on a Dask LocalCluster.

docs/scale.md plans a 1,000,000-row run: 1M training rows, 50,000 validation and
50,000 test rows (a validation score's standard error is then about 0.002), the
exact neighbour search of the training rows on a Dask cluster, then the default
cut. This script runs that plan on a multi-process ``LocalCluster`` of this
machine (``--workers`` single-threaded processes):

1. data: ``make_classification`` (20 features, 8 informative, 3 classes) as
   ``benchmarks/scale.py`` makes it, standardised on the training rows, 10% of
   the training labels moved to another class (the planted rows);
2. ``ThresholdingOOB(KNeighborsClassifier(5), backend=client)`` with
   ``find_harmful``'s 100 bags after the first pass (the default valuation),
   timed, with its AUROC of "lower value = planted";
3. ``cleanse(rule="one_se")`` on the validation and test rows (their neighbour
   lists are searched in this process), timed, with the test accuracy before
   and after and the rows removed.

Each step prints a line with wall seconds and this process's peak RSS as it
ends, and the results go to ``--out`` as JSON (written after each step, so a run
cut short keeps what it finished). The Dask workers' memory is reported by the
cluster (``--workers`` x the training rows scattered once).

    PYTHONPATH=src:. .venv/bin/python benchmarks/million.py [--n 1000000] [--workers 2]

``--neighbor-search approximate`` runs step 2 in this one process with the
approximate neighbour lists instead (a faiss HNSW graph, no cluster;
``tdshap.utility.fast.approximate_search``), and step 3 as before (its search stays
exact).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import platform
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.detection import auroc
from benchmarks.scale import make_data


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextlib.contextmanager
def _cluster(workers: int, wanted: bool) -> Iterator[Any]:
    """A client of a ``LocalCluster`` of ``workers`` single-threaded processes, or None."""
    if not wanted:
        yield None
        return
    import distributed

    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from sklearn.neighbors import KNeighborsClassifier
    from threadpoolctl import threadpool_limits

    from tdshap.app.valuer import TDOOB_BAGS
    from tdshap.cleansing import cleanse
    from tdshap.methods.tdoob import ThresholdingOOB

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--held", type=int, default=50_000, help="validation rows (and test rows)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--neighbor-search", choices=("exact", "approximate"), default="exact")
    p.add_argument("--out", type=Path, default=None,
                   help="default: benchmarks/results/scale/million[_approximate].json")
    args = p.parse_args(argv)
    approximate = args.neighbor_search == "approximate"
    if args.out is None:
        args.out = Path("benchmarks/results/scale/"
                        f"million{'_approximate' if approximate else ''}.json")
    out: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).isoformat(
        timespec="minutes"), "machine": f"{platform.machine()}, {platform.node()}",
        "n": args.n, "held": args.held, "workers": 0 if approximate else args.workers,
        "seed": args.seed, "neighbor_search": args.neighbor_search}

    def step(name: str, **values: Any) -> None:
        out[name] = {**values, "peak_rss_mb": peak_rss_mb()}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1, default=str))
        print(f"{name}: " + ", ".join(f"{k}={v}" for k, v in out[name].items()), flush=True)

    start = time.perf_counter()
    d = make_data(args.n, args.seed, args.held)
    step("data", seconds=round(time.perf_counter() - start, 1))
    with _cluster(args.workers, not approximate) as client, threadpool_limits(1):
        wall, cpu = time.perf_counter(), time.process_time()
        m = ThresholdingOOB(KNeighborsClassifier(5), max_iter=TDOOB_BAGS,
                            random_state=args.seed, backend="loky" if client is None
                            else client, neighbor_search=args.neighbor_search
                            ).fit(d["X"], d["y"])
        r = m.result_
        workers = {} if client is None else client.run(
            lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        step("valuation", wall_s=round(time.perf_counter() - wall, 1),
             cpu_s_this_process=round(time.process_time() - cpu, 1),
             auroc=round(auroc(np.asarray(r.values), d["planted"]), 4),
             path=r.extra["path_note"], rounds=r.extra["rounds"], bags=r.n_evaluations,
             worker_peak_rss_mb=[round(v / 1024) for v in workers.values()])
    wall = time.perf_counter()
    with threadpool_limits(1):
        c = cleanse(r, KNeighborsClassifier(5), d["X"], d["y"], d["X_val"], d["y_val"],
                    d["X_test"], d["y_test"], random_state=args.seed, rule="one_se")
    removed = np.zeros(args.n, dtype=bool)
    removed[c.removed] = True
    step("cleansing", wall_s=round(time.perf_counter() - wall, 1), n_removed=int(c.n_remove),
         removed_planted=int((removed & d["planted"]).sum()),
         test_before=round(float(c.baseline_test or 0), 4),
         test_after=round(float(c.cleaned_test or 0), 4), path=c.extra["path_note"],
         reason=c.evidence.reason if c.evidence is not None else None)
    step("total", wall_s=round(time.perf_counter() - start, 1))
    return out


if __name__ == "__main__":
    main()
