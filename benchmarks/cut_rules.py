"""The default cut against two others on the same valuations: is the eligibility cap worth it?

The default cut (``cleanse(rule="one_se")`` on a result with intervals) may only remove
rows credibly below tau and takes the named comparison of removing exactly them
(:mod:`tdshap.cut`). This script values each split of ``benchmarks/detection.py`` once
with ``find_harmful``'s defaults and cuts the ranking three ways:

* ``default``: the library's cut;
* ``nocap``: the same one-SE rule (2-SE evidence, smallest cut within one SE of the best)
  on the bare values, so without the eligibility cap and without the named comparison;
* ``paper``: the best validation score.

Per dataset: the mean test gain over seeds (higher is better: accuracy, or minus the
MAE), its standard error, the runs whose test score fell, and the mean rows removed.
``--noise 0`` runs it on clean data.

    PYTHONPATH=src:. OMP_NUM_THREADS=1 .venv/bin/python benchmarks/cut_rules.py --model tree \\
        --seeds 20 --noise 0.1 --datasets make_classification digits wine iris breast_cancer
"""

from __future__ import annotations

import argparse
import datetime
import platform
import warnings

import numpy as np

from benchmarks.detection import DATASETS, add_split_arguments, build_estimator, make_split
from tdshap.app.harmful import find_harmful
from tdshap.cleansing import cleanse

RULES = ("default", "nocap", "paper")


def gains(name: str, model: str, noise: float, seeds: int,
          method: str = "auto") -> dict[str, np.ndarray]:
    """``(test gain, rows removed)`` per seed for each rule of :data:`RULES`."""
    load, task = DATASETS[name]
    X, y = load()
    out: dict[str, list[tuple[float, int]]] = {rule: [] for rule in RULES}
    for seed in range(seeds):
        s = make_split(name, X, y, task, seed, noise)
        est = build_estimator(model, task, len(s.y))
        rows = find_harmful(s.X, s.y, est, X_val=s.X_val, y_val=s.y_val, task=task,
                            cleanse=False, random_state=seed, method=method)
        assert rows.run is not None
        result = rows.run.result
        bare = np.asarray(result.values)
        for rule, values, how in (("default", result, "one_se"), ("nocap", bare, "one_se"),
                                  ("paper", bare, "paper")):
            c = cleanse(values, est, s.X, s.y, s.X_val, s.y_val, s.X_test, s.y_test,
                        random_state=seed, rule=how)
            assert c.cleaned_test is not None and c.baseline_test is not None
            out[rule].append((c.cleaned_test - c.baseline_test, int(c.n_remove)))
    return {rule: np.array(v, dtype=float) for rule, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_split_arguments(parser, ["make_classification", "digits", "wine", "iris"], 20)
    args = parser.parse_args()
    print(f"# cut rules, {datetime.date.today()}, {platform.machine()}, model {args.model}, "
          f"method {args.method}, {args.seeds} seeds, noise {args.noise:g}\n")
    print("| dataset | " + " | ".join(f"{r}: gain ± SE (lowered; removed)" for r in RULES)
          + " |\n|---|" + "---|" * len(RULES))
    warnings.filterwarnings("ignore")
    for name in args.datasets:
        cells = []
        for a in gains(name, args.model, args.noise, args.seeds, args.method).values():
            se = a[:, 0].std(ddof=1) / np.sqrt(len(a)) if len(a) > 1 else float("nan")
            cells.append(f"{a[:, 0].mean():+.4f} ± {se:.4f} ({int((a[:, 0] < 0).sum())}; "
                         f"{a[:, 1].mean():.0f})")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
