"""The deep benches' cleansing cut (``--rule``) and thresholding Data-OOB cells (``tdoob``),
on a tiny logistic-regression task (no torch needed)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import experiments.deep_bench as deep_bench
from experiments.deep_bench import BenchSetting, DeepTask, run_bench, tables, valuer
from tdshap.app.splits import Split
from tdshap.methods import ThresholdingOOB


def load(seed: int) -> Split:
    """Two Gaussian classes, 6 of the 40 training labels flipped."""
    rng = np.random.default_rng(seed)
    y = np.arange(100) % 2
    X = rng.normal(0, 1, (100, 3)) + 1.5 * y[:, None]
    y_train = y[:40].copy()
    y_train[:6] = 1 - y_train[:6]
    return Split(X[:40], y_train, X[40:70], y[40:70], X[70:], y[70:], name="toy")


def task(rule: str = "paper") -> DeepTask:
    setting = BenchSetting(dataset="toy", sizes=(40, 30, 30), epochs=1, pretrain_epochs=1,
                           clean_epochs=1, batch_size=8, n_iter=2, k=5, n_min=10,
                           clean_step=2, rule=rule, extra={"encoder": "toy"})
    return DeepTask(setting, load, lambda warm, epochs, seed: LogisticRegression(C=1.0))


def test_the_rule_is_part_of_the_setting_only_when_not_the_papers():
    assert "rule" not in task().setting.key()  # folders made before the option still match
    assert task("one_se").setting.key()["rule"] == "one_se"
    with pytest.raises(ValueError, match="rule"):
        task("best")


def test_cells_of_another_rule_are_refused_in_the_same_folder(tmp_path):
    run_bench(task(), tmp_path, trials=1, seed=0, methods=("baseline",), echo=print)
    with pytest.raises(ValueError, match="another setting"):
        run_bench(task("one_se"), tmp_path, trials=1, seed=0, methods=("baseline",),
                  echo=print)
    assert "rule" not in json.loads((tmp_path / "setting.json").read_text())


@pytest.mark.parametrize("rule", ["paper", "one_se"])
def test_the_rule_reaches_the_cleansing(tmp_path, monkeypatch, rule):
    seen: list[str] = []
    real = deep_bench.cleanse

    def spy(*args, **kw):
        seen.append(kw["rule"])
        return real(*args, **kw)

    monkeypatch.setattr(deep_bench, "cleanse", spy)
    cells = run_bench(task(rule), tmp_path, trials=1, seed=0,
                      methods=("baseline", "loo", "tdoob"), echo=print).set_index("method")
    assert seen == [rule, rule]  # loo and tdoob; the baseline cell cleanses nothing
    if rule == "one_se":  # the eligible rows of a result with a threshold are recorded
        assert cells.loc["tdoob", "n_eligible"] >= 0 and cells.loc["tdoob", "cut_reason"]
        if cells.loc["tdoob", "n_eligible"] > 0:
            assert 0 <= cells.loc["tdoob", "test_at_eligible"] <= 1
        assert "credible rows" in tables(cells.reset_index(), "toy")
    else:
        assert "n_eligible" not in cells


def test_tdoob_values_out_of_bag_with_the_same_learner(tmp_path):
    est = valuer(task(), "tdoob", 3, None)
    assert isinstance(est, ThresholdingOOB) and isinstance(est.estimator, LogisticRegression)
    assert est.random_state == 3
    cells = run_bench(task("one_se"), tmp_path, trials=2, seed=0,
                      methods=("baseline", "tdoob"), echo=print)
    oob = cells[cells["method"] == "tdoob"]
    assert len(oob) == 2 and (oob["fits"] > 0).all()
    assert ((0 <= oob["test_acc"]) & (oob["test_acc"] <= 1)).all()
    assert not list((tmp_path / "cells").glob("*.tdshap"))  # no checkpoint: a short run
    # the same valuation, seeded: the flipped rows are found out of bag
    split = load(0)
    fitted = valuer(task(), "tdoob", 0, None).fit(split.X_train, split.y_train,
                                                  split.X_val, split.y_val)
    assert fitted.result_.extra["validation_free"] is True
    assert set(np.argsort(fitted.result_.values)[:6]) & set(range(6))
    text = tables(cells, "toy")
    assert "Thresholding Data-OOB" in text and "Paired gain" in text
    # without tdoob cells the paper's Table 5 keeps its four columns
    assert "Thresholding Data-OOB |" not in tables(cells[cells["method"] == "baseline"], "toy")


def test_gains_are_paired_by_trial():
    import pandas as pd

    cells = pd.DataFrame([
        {"method": "baseline", "trial": 0, "test_acc": 0.80, "n_remove": 0, "seconds": 0,
         "fits": 1},
        {"method": "baseline", "trial": 1, "test_acc": 0.90, "n_remove": 0, "seconds": 0,
         "fits": 1},
        {"method": "tdoob", "trial": 0, "test_acc": 0.84, "n_remove": 4, "seconds": 1,
         "fits": 9},
        {"method": "tdoob", "trial": 1, "test_acc": 0.90, "n_remove": 0, "seconds": 1,
         "fits": 9},
    ])
    row = next(r for r in deep_bench.gains(cells) if r.startswith("| Thresholding"))
    assert "+0.020 ± 0.020" in row and "2.0 (1) |" in row


def test_the_paper_commands_default_to_the_papers_methods():
    from experiments.deep_cli import bench_fmnist

    methods = next(p for p in bench_fmnist.params if p.name == "methods")
    assert "tdoob" not in methods.default and "tdshap" in methods.default
    rule = next(p for p in bench_fmnist.params if p.name == "rule")
    assert rule.default == "paper"
    assert dataclasses.replace(task().setting).rule == "paper"
