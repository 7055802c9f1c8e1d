"""Coverage of TDShap's 95% intervals on games small enough to enumerate.

For each game of ``tests/games.py:coverage_games`` (N = 9 rows) the exact
size-restricted Shapley value of every row is computed by enumeration, with
prefix sizes uniform on ``{n_min, ..., N - 1}`` (TDShap with ``k = 1``: the
paper, Sec. 3.3, enhancement (i); ``n_min`` defaults to TDShap's ``"auto"``,
``N // 3 = 3``). With ``k = 1`` a pull is an unbiased draw of that value; with
``k > 1`` a row's block mates enter its prefix with another probability than other
rows, so the target shifts and is not measured here. Three ways of spending
the pulls:

* ``iid``: every row gets exactly ``n`` pulls, drawn from the exact law of
  one pull (:func:`tdshap.methods.apt.sampling.sample_chain`), many runs at
  once: no model is refitted and thousands of runs take seconds;
* ``apt``: the same draws spread by TDShap's bandit rule
  (:class:`tdshap.methods.apt.bandit.APTState`: initialisation, ``tau``/``eps``
  ``"auto"`` from the initial pulls, then the arm with the smallest ``B``)
  until the pulls average ``n`` per row; rows near ``tau`` get more, rows far
  from it as few as one;
* ``tdshap``: :class:`tdshap.TDShap` itself (``k = 1``, ``"auto"``
  thresholds, ``max_iter`` for an average of ``n`` pulls) on the game's table
  through a lookup model: slower, and a check on ``apt``.

For every interval method (:mod:`tdshap.intervals`), pull count and game it
prints the coverage (share of runs x rows whose interval holds the exact
value; a row without an interval counts as a miss) and the mean width over
rows with two pulls or more relative to the normal interval's. Methods:
``pooled`` (the default), ``moderated``, ``t``, ``normal`` (tdshap before
this benchmark), ``bernstein`` (empirical Bernstein with the game's true
marginal range, an oracle a user does not have), ``bootstrap`` (percentile,
200 resamples; ``iid`` only: it needs every pull, which a result does not
keep).

    PYTHONPATH=src:. .venv/bin/python benchmarks/coverage.py            # iid + apt, n_min 3
    PYTHONPATH=src:. .venv/bin/python benchmarks/coverage.py --n-min 0
    PYTHONPATH=src:. .venv/bin/python benchmarks/coverage.py --drivers tdshap
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Iterator, Sequence

import numpy as np

from tdshap import TDShap
from tdshap.intervals import INTERVAL_METHODS, half_widths
from tests.games import Law, TableModel, apt_pulls, coverage_games, first_prediction, iid_pulls

PULLS = (5, 10, 20, 50, 100, 200)
N_ROWS = 9


def bootstrap_half(x: np.ndarray, means: np.ndarray, rng: np.random.Generator,
                   resamples: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap 95% bounds (as distances below/above the mean)."""
    n = x.shape[-1]
    boots = np.empty((resamples, *x.shape[:-1]))
    for b in range(resamples):
        idx = rng.integers(0, n, size=x.shape)
        boots[b] = np.take_along_axis(x, idx, axis=-1).mean(-1)
    lo, hi = np.quantile(boots, [0.025, 0.975], axis=0)
    return means - lo, hi - means


def tdshap_pulls(law: Law, table: np.ndarray, runs: int, n_min: int, pulls: Sequence[int],
                 seed: int) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray, None]]:
    """TDShap itself (``k = 1``, ``tau``/``eps`` ``"auto"``) on the game's table.

    One run per seed and pull count, ``max_iter`` set so that the pulls
    average ``n`` per row; checks that the ``apt`` replica draws what TDShap
    does.
    """
    n = len(law.exact)
    X = np.arange(n, dtype=float)[:, None]
    y = np.full(n, table[0])
    for target in pulls:
        out = []
        for run in range(runs):
            est = TDShap(TableModel(table), metric=first_prediction, tau="auto", eps="auto",
                         k=1, n_min=n_min, max_iter=(target - 1) * n,
                         random_state=seed * 100_003 + run)
            r = est.fit(X, y, X[:1], y[:1]).result_
            out.append((r.counts, r.values, r.variances))
        counts, values, var = (np.array(a, dtype=float) for a in zip(*out, strict=True))
        yield target, counts, values, var, None


def intervals(counts: np.ndarray, means: np.ndarray, var: np.ndarray, x: np.ndarray | None,
              law: Law, rng: np.random.Generator) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Distances ``(below, above)`` of each method's bounds from the means."""
    out = {}
    for method in INTERVAL_METHODS:
        h = half_widths(counts, var, method=method, width=law.range)
        out[method] = (h, h)
    if x is not None:
        out["bootstrap"] = bootstrap_half(x, means, rng)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=400, help="runs per game and driver")
    parser.add_argument("--n-min", type=int, default=N_ROWS // 3)
    parser.add_argument("--seed", type=int, default=0, help="seed of the games' data and draws")
    parser.add_argument("--games", nargs="*", default=None)
    parser.add_argument("--drivers", nargs="*", default=["iid", "apt"],
                        choices=["iid", "apt", "tdshap"])
    parser.add_argument("--tdshap-runs", type=int, default=100,
                        help="runs of the (slower) tdshap driver")
    args = parser.parse_args()
    start = time.perf_counter()
    games = coverage_games(N_ROWS, seed=args.seed)
    print(f"# interval coverage: N={N_ROWS}, n_min={args.n_min}, data seed {args.seed}, "
          f"{args.runs} runs per setting ({args.tdshap_runs} for tdshap), 95% nominal; "
          f"{platform.machine()}, "
          f"Python {platform.python_version()}")
    print("# cell: coverage / mean width over rows with >= 2 pulls relative to normal's "
          "(- : zero width); a row without an interval counts as not covered")
    worst: dict[tuple[str, str], float] = {}
    ratios: dict[tuple[str, str, int], list[float]] = {}
    for name, table in games.items():
        if args.games and name not in args.games:
            continue
        law = Law(table, N_ROWS, args.n_min)
        tol = 1e-9 * max(1.0, float(np.abs(law.atoms).max()))
        for driver in args.drivers:
            rng = np.random.default_rng(args.seed)
            if driver == "tdshap":
                runs = tdshap_pulls(law, table, args.tdshap_runs, args.n_min, PULLS, args.seed)
            else:
                runs = (iid_pulls if driver == "iid" else apt_pulls)(law, args.runs, rng, PULLS)
            rows: dict[str, list[str]] = {}
            single: list[str] = []
            for n, counts, means, var, x in runs:
                found = intervals(counts, means, var, x, law, rng)
                multi = counts >= 2
                single.append(f"{np.mean(~multi):.2f}")
                ref = 2 * float(np.mean(found["normal"][0][multi]))
                err = law.exact[None, :] - means
                for method, (below, above) in found.items():
                    ok = (err >= -below - tol) & (err <= above + tol)
                    cov = float(np.mean(ok & np.isfinite(below) & np.isfinite(above)))
                    width = float(np.mean((below + above)[multi]))
                    if ref > tol:
                        rel = f"{width / ref:.2f}"
                        ratios.setdefault((driver, method, n), []).append(width / ref)
                    else:
                        rel = "-"
                    rows.setdefault(method, []).append(f"{cov:.3f}/{rel}")
                    worst[driver, method] = min(worst.get((driver, method), 1.0), cov)
            print(f"\n## {name} ({driver}); exact values "
                  + " ".join(f"{v:.3g}" for v in law.exact))
            print(f"{'method':<11}" + "".join(f"{'n=' + str(n):>12}" for n in PULLS))
            for method, cells in rows.items():
                print(f"{method:<11}" + "".join(f"{c:>12}" for c in cells))
            if driver != "iid":
                print(f"{'1-pull rows':<11}" + "".join(f"{c:>12}" for c in single))
    print("\n## summary: worst coverage over the games and pull counts; median width "
          "relative to normal")
    print(f"{'driver':<7}{'method':<11}{'worst':>7}" + "".join(f"{'n=' + str(n):>8}"
                                                           for n in PULLS))
    for (driver, method), cov in worst.items():
        meds = [np.median(ratios.get((driver, method, n), [np.nan])) for n in PULLS]
        print(f"{driver:<7}{method:<11}{cov:>7.3f}" + "".join(f"{m:>8.2f}" for m in meds))
    print(f"# {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
