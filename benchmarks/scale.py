"""Scale benchmark: the default against exact k-NN Shapley and Data-OOB, from 1k to 100k rows.

Data: ``make_classification`` (20 features, 8 informative, 3 classes), ``2 N`` rows
split 50/25/25 into N training rows, N/2 validation and N/2 test rows
(``tdshap clean``'s default split), standardised on the training rows; 10% of
the training labels moved to another class (the planted rows). k-NN with 5
neighbours throughout, one process, BLAS/OpenMP on one thread.

Methods (each cell runs in a fresh subprocess, so its peak RSS is its own):

* ``default``: ``tdshap.find_harmful`` with ``method="tdoob"`` (thresholding Data-OOB:
  auto's choice for a k-NN beyond 5,000 rows; below, auto takes the closed-form exact
  k-NN Shapley on the training rows, so the method is fixed here to measure one
  method's growth) and the one-SE cut, given the split above; the valuation's wall
  time is reported apart from the whole call's.
* ``default_approx``: the same with ``neighbor_search="approximate"`` (the valuation's
  neighbour lists from a faiss HNSW graph instead of brute force; cleansing still
  exact); its ``recall`` is the share of the exact 36-row lists found, on
  ``RECALL_SAMPLE`` rows, measured after the timing.
* ``knn_shapley``: exact k-NN Shapley (:class:`~tdshap.methods.KNNShapley`) on all
  N/2 validation rows, when its time, extrapolated from a timed slice, fits
  ``--cap`` seconds.
* ``knn_shapley_eq``: the same on the first m validation rows, m chosen so that
  its time (extrapolated from the timed slice) equals the default's valuation
  time at this N ("at equal time").
* ``data_oob``: :class:`~tdshap.methods.DataOOB` (200 bags).
* ``knn_shapley_train``: exact k-NN Shapley with the training rows as queries
  (``KNNShapley(queries="training")``, ``find_harmful``'s k-NN default up to 5,000 rows):
  N sorts of N rows, so skipped when its time, extrapolated from 64 timed queries,
  exceeds ``--cap`` seconds.
* ``knn_shapley_both``: the same with the validation rows as queries too
  (``KNNShapley(queries="both")``, ``find_harmful``'s k-NN classifier default up to 5,000
  rows): N + N/2 sorts of N rows, skipped likewise.

Per cell: wall and CPU seconds, peak RSS (``ru_maxrss`` of the cell's process),
AUROC of "lower value = planted", precision at n_planted, and for the default
the path it took. The growth of each method's wall time from the smallest to
the largest N is compared with N log N. Results go to ``--out`` (CSV, JSON,
Markdown table) and a log-log plot of wall time against N.

    PYTHONPATH=src:. nice -n 5 .venv/bin/python benchmarks/scale.py --sizes 1000 10000 100000 \
        --plot docs/scale.png

Single checks instead of the table (each prints JSON lines): ``--refit-check N``
(neighbour lists against refitting every bag), ``--dask-check N`` (one process
against a Dask ``LocalCluster``), ``--locality-check N`` (the approximate search's
graph: build, queries in the rows' order and region by region), ``--clean-csv N``
(``tdshap clean`` on an N-row CSV in a subprocess, exact and approximate).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.detection import auroc, precision_at

METHODS = ("default", "default_approx", "knn_shapley", "knn_shapley_eq", "data_oob",
           "knn_shapley_train", "knn_shapley_both")
#: methods whose valuation time is reported apart from the whole call's
FIND_HARMFUL = ("default", "default_approx")
#: training rows whose exact lists check the approximate ones' recall
RECALL_SAMPLE = 1000
NOISE = 0.1
N_FEATURES = 20


def make_data(n: int, seed: int, held: int | None = None) -> dict[str, np.ndarray]:
    """N training rows (10% labels moved), ``held`` (default N/2) validation and as many
    test rows."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    held = n // 2 if held is None else held
    X, y = make_classification(n + 2 * held, n_features=N_FEATURES, n_informative=8,
                               n_classes=3, random_state=seed)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n + 2 * held)
    tr, va, te = perm[:n], perm[n : n + held], perm[n + held :]
    scaler = StandardScaler().fit(X[tr])
    y_tr = y[tr].copy()
    planted = np.sort(rng.choice(n, round(NOISE * n), replace=False))
    y_tr[planted] = (y_tr[planted] + rng.integers(1, 3, len(planted))) % 3
    is_planted = np.zeros(n, dtype=bool)
    is_planted[planted] = True
    return {"X": scaler.transform(X[tr]), "y": y_tr, "X_val": scaler.transform(X[va]),
            "y_val": y[va], "X_test": scaler.transform(X[te]), "y_test": y[te],
            "planted": is_planted}


def _knn_shapley(d: dict[str, np.ndarray], m: int) -> Any:
    from sklearn.neighbors import KNeighborsClassifier

    from tdshap.methods import KNNShapley

    return KNNShapley(KNeighborsClassifier(5)).fit(d["X"], d["y"], d["X_val"][:m],
                                                   d["y_val"][:m])


def knn_shapley_seconds_per_val_row(d: dict[str, np.ndarray], rows: int = 64) -> float:
    start = time.perf_counter()
    _knn_shapley(d, rows)
    return (time.perf_counter() - start) / rows


def run_cell(method: str, n: int, seed: int, budget_s: float | None, cap: float,
             max_iter: int | None) -> dict[str, Any]:
    """One method at one N, in this process: timings, memory and detection quality."""
    from sklearn.neighbors import KNeighborsClassifier
    from threadpoolctl import threadpool_limits

    from tdshap import find_harmful
    from tdshap.methods import DataOOB

    d = make_data(n, seed)
    out: dict[str, Any] = {"method": method, "n": n, "seed": seed}
    with threadpool_limits(1):
        wall, cpu = time.perf_counter(), time.process_time()
        if method in FIND_HARMFUL:
            # thresholding Data-OOB at every size (auto's k-NN default up to 5,000 rows is
            # exact k-NN Shapley on the training rows, a closed form of N^2 log N)
            kwargs: dict[str, Any] = {"method": "tdoob"}
            if max_iter is not None:
                kwargs["max_iter"] = max_iter
            if method == "default_approx":
                kwargs["neighbor_search"] = "approximate"
            rows = find_harmful(d["X"], d["y"], X_val=d["X_val"], y_val=d["y_val"],
                                X_test=d["X_test"], y_test=d["y_test"], random_state=seed,
                                **kwargs)
            assert rows.run is not None
            result = rows.run.result
            values = np.asarray(result.values)
            out["valuation_wall"] = result.wall_seconds
            c = rows.run.cleansing
            out["path"] = result.extra.get("path_note")
            out["cleansing_path"] = None if c is None else c.extra.get("path_note")
            out["removed"] = 0 if c is None else int(c.n_remove)
            out["bags"] = result.n_evaluations
            out["test_before"] = None if c is None else c.baseline_test
            out["test_after"] = None if c is None else c.cleaned_test
        elif method in ("knn_shapley", "knn_shapley_eq"):
            per_row = knn_shapley_seconds_per_val_row(d)
            m_all = len(d["y_val"])
            if method == "knn_shapley":
                m = m_all
                if per_row * m > cap:
                    return {**out, "skipped": f"needs about {per_row * m:.0f} s > cap {cap:g} s"}
            else:
                if budget_s is None:
                    return {**out, "skipped": "no default time to match"}
                m = max(1, min(m_all, int(budget_s / per_row)))
            wall, cpu = time.perf_counter(), time.process_time()
            values = np.asarray(_knn_shapley(d, m).values_)
            out["val_rows"] = m
        elif method in ("knn_shapley_train", "knn_shapley_both"):
            from tdshap.app.plan import _closed_shapley_seconds
            from tdshap.methods import KNNShapley

            knn = KNeighborsClassifier(5)
            both = method == "knn_shapley_both"
            queries = n + len(d["y_val"]) if both else n
            guess = _closed_shapley_seconds(knn, d["X"], d["y"], np.arange(min(n, 64)),
                                            queries)
            if guess > cap:
                return {**out, "skipped": f"needs about {guess:.0f} s > cap {cap:g} s"}
            wall, cpu = time.perf_counter(), time.process_time()
            exact = KNNShapley(knn, queries="both" if both else "training", random_state=seed)
            values = np.asarray(exact.fit(d["X"], d["y"], d["X_val"], d["y_val"]).values_)
        elif method == "data_oob":
            model = DataOOB(KNeighborsClassifier(5), n_estimators=200, random_state=seed)
            values = np.asarray(model.fit(d["X"], d["y"]).values_)
            out["path"] = model.result_.extra.get("path_note")
        else:
            raise ValueError(f"unknown method {method!r}")
        out["wall"] = time.perf_counter() - wall
        out["cpu"] = time.process_time() - cpu
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if method == "default_approx":
        out["recall"] = list_recall(d["X"], d["y"], seed)
    out["auroc"] = auroc(values, d["planted"])
    out["precision_at_planted"] = precision_at(values, d["planted"])
    return out


def list_recall(X: np.ndarray, y: np.ndarray, seed: int) -> float:
    """Share of the exact out-of-bag lists' rows that the approximate lists hold, on a
    sample of rows."""
    from sklearn.neighbors import KNeighborsClassifier

    from tdshap.utility.fast.neighbor_lists import NeighborLists

    approx = NeighborLists(KNeighborsClassifier(5), X, y, search="approximate")
    rows = np.random.default_rng(seed).choice(len(X), min(len(X), RECALL_SAMPLE),
                                              replace=False)
    exact = NeighborLists(KNeighborsClassifier(5), X, y, queries=X[rows],
                          depth=approx.depth + 1)
    found = [len(np.intersect1d(approx.index[r], e[e != r][: approx.depth]))
             for r, e in zip(rows, exact.index, strict=True)]
    return float(np.mean(found)) / approx.depth


def clean_csv_check(n: int, seed: int, search: str) -> dict[str, Any]:
    """``tdshap clean`` with its defaults on an N-row CSV (``make_classification``, 20
    features, 3 classes, 10% of the labels moved, so the command values N/2 rows), run
    as a user would, in a subprocess: wall seconds, the subprocess's peak RSS, AUROC of
    the valued rows and the cleansing result read back from the output folder."""
    import tempfile

    import pandas as pd
    from sklearn.datasets import make_classification

    X, y = make_classification(n, n_features=N_FEATURES, n_informative=8, n_classes=3,
                               random_state=seed)
    rng = np.random.default_rng(seed)
    planted = rng.choice(n, round(NOISE * n), replace=False)
    y[planted] = (y[planted] + rng.integers(1, 3, len(planted))) % 3
    with tempfile.TemporaryDirectory() as folder:
        data, out = Path(folder) / "rows.csv", Path(folder) / "out"
        frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(N_FEATURES)])
        frame.assign(target=y).to_csv(data, index=False)
        tdshap = Path(sys.executable).with_name("tdshap")
        cmd = [str(tdshap), "clean", str(data), "--target", "target", "--out", str(out),
               "--no-progress", "--neighbor-search", search]
        start = time.perf_counter()
        with open(Path(folder) / "stdout.txt", "w+") as stdout:
            child = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(child.pid, 0)  # this child's own peak RSS
            child.returncode = os.waitstatus_to_exitcode(status)
            wall = time.perf_counter() - start
            stdout.seek(0)
            printed = stdout.read()
        if child.returncode:
            raise RuntimeError(f"tdshap clean failed: {printed[-2000:]}")
        values = pd.read_csv(out / "values.csv")
        report = (out / "report.md").read_text()
    is_planted = np.isin(values.iloc[:, 0].to_numpy(), planted)
    test = next((line for line in report.splitlines() if line.startswith("| test ")), "")
    return {"n": n, "search": search, "wall": wall,
            "peak_rss_mb": usage.ru_maxrss / 1024,
            "estimate": printed.splitlines()[0], "valued": len(values),
            "auroc": auroc(values["value"].to_numpy(), is_planted),
            "removed": int(values["removed"].sum()), "test_row": test}


def locality_check(n: int, seed: int) -> dict[str, Any]:
    """The approximate search's graph on N training rows: seconds to build it, to search
    every row's candidates in the rows' own order and region by region
    (``locality_order``), and whether both orders found the same candidates."""
    from threadpoolctl import threadpool_limits

    from tdshap.utility.fast.approximate_search import (
        CANDIDATE_MARGIN,
        CandidateGraph,
        locality_order,
    )
    from tdshap.utility.fast.neighbor_lists import SEARCH_BLOCK, oob_depth

    wanted = oob_depth(5) + 1 + CANDIDATE_MARGIN  # as the 5-NN lists ask (self dropped)

    X = make_data(n, seed)["X"]
    with threadpool_limits(1):
        start = time.perf_counter()
        graph = CandidateGraph(X)
        out: dict[str, Any] = {"n": n, "build_s": time.perf_counter() - start}
        found = {}
        for name, order in (("row_order", np.arange(n)), ("region_order", None)):
            start = time.perf_counter()
            if order is None:
                order = locality_order(X)
            got = np.empty((n, wanted), dtype=np.int64)
            for lo in range(0, n, SEARCH_BLOCK):
                rows = order[lo : lo + SEARCH_BLOCK]
                got[rows] = graph.search(X[rows], wanted)
            out[f"{name}_s"] = time.perf_counter() - start
            found[name] = got
    out["same_candidates"] = bool(np.array_equal(found["row_order"], found["region_order"]))
    return out


def refit_check(n: int, seed: int) -> dict[str, Any]:
    """The default valuation at N rows with the neighbour lists and refitting every bag,
    side by side in this process: wall seconds of each and whether the values match."""
    from sklearn.neighbors import KNeighborsClassifier
    from threadpoolctl import threadpool_limits

    from tdshap.methods.tdoob import ThresholdingOOB

    d = make_data(n, seed)
    out: dict[str, Any] = {"n": n}
    results = {}
    with threadpool_limits(1):
        for fast in (True, False):
            start = time.perf_counter()
            m = ThresholdingOOB(KNeighborsClassifier(5), max_iter=100, random_state=seed,
                                fast_path=fast).fit(d["X"], d["y"])
            out["lists_s" if fast else "refit_s"] = time.perf_counter() - start
            results[fast] = m.result_
    out["speed_up"] = out["refit_s"] / out["lists_s"]
    out["same_values"] = bool(np.array_equal(results[True].values, results[False].values))
    out["refit_rows"] = results[True].extra["refit_rows"]
    return out


def dask_check(n: int, workers: int, seed: int) -> dict[str, Any]:
    """The default valuation at N rows in one process and with its neighbour search on a
    multi-process Dask ``LocalCluster``: wall seconds of each, and whether the values match."""
    import distributed
    from sklearn.neighbors import KNeighborsClassifier
    from threadpoolctl import threadpool_limits

    from tdshap.methods.tdoob import ThresholdingOOB

    d = make_data(n, seed)

    def value(backend: Any) -> tuple[float, Any]:
        start = time.perf_counter()
        m = ThresholdingOOB(KNeighborsClassifier(5), max_iter=100, random_state=seed,
                            backend=backend).fit(d["X"], d["y"])
        return time.perf_counter() - start, m.result_

    with threadpool_limits(1):
        here_s, here = value("loky")
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        there_s, there = value(client)
    return {"n": n, "workers": workers, "one_process_s": here_s, "dask_s": there_s,
            "same_values": bool(np.array_equal(here.values, there.values)),
            "same_counts": bool(np.array_equal(here.counts, there.counts)),
            "path_one_process": here.extra["path_note"], "path_dask": there.extra["path_note"],
            "auroc": auroc(np.asarray(there.values), d["planted"])}


def _spawn(method: str, n: int, seed: int, budget_s: float | None, cap: float,
           max_iter: int | None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--cell", method, str(n), str(seed), "--cap", str(cap)]
    if budget_s is not None:
        cmd += ["--budget", str(budget_s)]
    if max_iter is not None:
        cmd += ["--max-iter", str(max_iter)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"method": method, "n": n, "seed": seed,
                "skipped": f"failed: {done.stderr.strip().splitlines()[-1:]}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}" if abs(v) < 100 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| N | method | wall s | valuation s | CPU s | peak RSS MB | AUROC | prec@planted "
            "| notes |\n|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['n']:,} | {r['method']} | – | – | – | – | – | – | "
                         f"skipped: {r['skipped']} |")
            continue
        notes = []
        if "val_rows" in r:
            notes.append(f"{r['val_rows']:,} validation rows")
        if r["method"] in FIND_HARMFUL:
            notes.append(f"{r['bags']} bags, removed {r['removed']:,}, test "
                         f"{_fmt(r['test_before'])} → {_fmt(r['test_after'])}")
        if "recall" in r:
            notes.append(f"list recall {r['recall']:.4f}")
        lines.append(
            f"| {r['n']:,} | {r['method']} | {_fmt(r['wall'], 2)} | "
            f"{_fmt(r.get('valuation_wall', r['wall']), 2)} | {_fmt(r['cpu'], 2)} | "
            f"{r['peak_rss_mb']:,.0f} | {_fmt(r['auroc'])} | "
            f"{_fmt(r['precision_at_planted'])} | {'; '.join(notes)} |")
    return "\n".join(lines)


def growth(rows: list[dict[str, Any]]) -> str:
    """Each method's wall-time ratio from the smallest to the largest N against N log N."""
    out = []
    for method in METHODS:
        done = sorted((r for r in rows if r["method"] == method and "skipped" not in r),
                      key=lambda r: r["n"])
        if len(done) < 2:
            continue
        a, b = done[0], done[-1]
        key = "valuation_wall" if method in FIND_HARMFUL else "wall"
        ratio = b[key] / a[key]
        nlogn = (b["n"] * math.log(b["n"])) / (a["n"] * math.log(a["n"]))
        exponent = math.log(ratio) / math.log(b["n"] / a["n"])
        out.append(f"* {method} ({key}): {a['n']:,} → {b['n']:,} rows: time x{ratio:.1f} "
                   f"(N log N: x{nlogn:.1f}; N²: x{(b['n'] / a['n']) ** 2:,.0f}); "
                   f"fitted exponent {exponent:.2f}")
    return "\n".join(out)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for method in METHODS:
        done = sorted((r for r in rows if r["method"] == method and "skipped" not in r),
                      key=lambda r: r["n"])
        if not done:
            continue
        ns = [r["n"] for r in done]
        if method in FIND_HARMFUL:
            ax.plot(ns, [r["valuation_wall"] for r in done], "o-", label=f"{method}: valuation")
            ax.plot(ns, [r["wall"] for r in done], "o--", label=f"{method}: with cleansing")
        else:
            ax.plot(ns, [r["wall"] for r in done], "s-", label=method)
    ns_all = sorted({r["n"] for r in rows})
    base = [r for r in rows if r["method"] == "default" and "skipped" not in r]
    if base and len(ns_all) > 1:
        first = min(base, key=lambda r: r["n"])
        ref = [first["valuation_wall"] * (n * math.log(n)) / (first["n"] * math.log(first["n"]))
               for n in ns_all]
        ax.plot(ns_all, ref, ":", color="gray", label="N log N from the first point")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training rows N")
    ax.set_ylabel("wall seconds (one thread)")
    ax.set_title("k-NN, 20 features: time against N")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cap", type=float, default=300.0,
                   help="seconds the full exact k-NN Shapley may take (extrapolated)")
    p.add_argument("--max-iter", type=int, default=None,
                   help="bags after the first pass for the default (its default: 100)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/scale"))
    p.add_argument("--plot", type=Path, default=None,
                   help="the plot's file (default: scale.png in --out; docs/scale.png is "
                   "the committed one)")
    p.add_argument("--dask-check", type=int, default=None, metavar="N",
                   help="only compare one process with a Dask LocalCluster at N rows")
    p.add_argument("--refit-check", type=int, default=None, metavar="N",
                   help="only compare the neighbour lists with refitting every bag at N rows")
    p.add_argument("--clean-csv", type=int, default=None, metavar="N",
                   help="only run `tdshap clean` on an N-row CSV, exact and approximate")
    p.add_argument("--locality-check", type=int, default=None, metavar="N",
                   help="only time the approximate search's graph at N rows, queries in "
                   "the rows' order and region by region")
    p.add_argument("--workers", type=int, default=2, help="Dask workers for --dask-check")
    p.add_argument("--cell", nargs=3, metavar=("METHOD", "N", "SEED"), help=argparse.SUPPRESS)
    p.add_argument("--budget", type=float, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.clean_csv:
        for search in ("exact", "approximate"):
            print(json.dumps(clean_csv_check(args.clean_csv, args.seed, search)), flush=True)
        return
    if args.locality_check:
        print(json.dumps(locality_check(args.locality_check, args.seed)))
        return
    if args.refit_check:
        print(json.dumps(refit_check(args.refit_check, args.seed)))
        return
    if args.dask_check:
        print(json.dumps(dask_check(args.dask_check, args.workers, args.seed)))
        return
    if args.cell:
        method, n, seed = args.cell
        print(json.dumps(run_cell(method, int(n), int(seed), args.budget, args.cap,
                                  args.max_iter)))
        return
    print(f"# scale benchmark, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
          f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    rows: list[dict[str, Any]] = []
    for n in args.sizes:
        budget = None
        for method in args.methods:
            r = _spawn(method, n, args.seed, budget, args.cap, args.max_iter)
            if method == "default" and "skipped" not in r:  # the exact default sets "equal time"
                budget = r["valuation_wall"]
            r["load"] = os.getloadavg()[0]
            rows.append(r)
            print(json.dumps(r), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.json").write_text(json.dumps(rows, indent=1))
    md = table(rows) + "\n\n" + growth(rows) + "\n"
    (args.out / "scale.md").write_text(md)
    if args.plot is None:  # nothing outside --out unless asked
        args.plot = args.out / "scale.png"
    args.plot.parent.mkdir(parents=True, exist_ok=True)
    plot(rows, args.plot)
    print(md)
    print(f"wrote {args.out}/scale.json, {args.out}/scale.md, {args.plot}")


if __name__ == "__main__":
    main()
