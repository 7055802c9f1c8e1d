"""The detection benchmark's helpers: its scores and its noise planting."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "detection.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("detection_bench", PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_auroc_matches_sklearn_with_ties_and_nan(bench):
    rng = np.random.default_rng(0)
    planted = rng.random(200) < 0.2
    values = np.round(rng.normal(size=200) - planted, 1)  # ties on purpose
    assert bench.auroc(values, planted) == pytest.approx(roc_auc_score(planted, -values))
    assert bench.auroc(-planted.astype(float), planted) == 1.0
    assert bench.auroc(planted.astype(float), planted) == 0.0
    assert bench.auroc(np.zeros(200), planted) == 0.5
    # NaN means "no information": ranked as the most valuable
    with_nan = np.where(planted, np.nan, 0.0)
    assert bench.auroc(with_nan, planted) == 0.0
    assert np.isnan(bench.auroc(values, np.zeros(200, dtype=bool)))


def test_precision_at_n_and_flag_scores(bench):
    values = np.array([5.0, -1.0, 0.5, -3.0, 2.0, 0.0])
    planted = np.array([False, True, False, True, True, False])
    # the three lowest are rows 3, 1, 5: two of them planted
    assert bench.precision_at(values, planted) == pytest.approx(2 / 3)
    assert bench.precision_at(values, planted, k=2) == 1.0
    assert set(bench.lowest(values, 3)) == {1, 3, 5}
    # ties are broken by the seed, the same way every time
    tied = np.zeros(6)
    assert list(bench.lowest(tied, 3, seed=1)) == list(bench.lowest(tied, 3, seed=1))
    flagged = np.array([True, True, False, False, True, False])
    precision, recall, n = bench.flag_scores(flagged, planted)
    assert (precision, recall, n) == (pytest.approx(2 / 3), pytest.approx(2 / 3), 3)
    precision, recall, n = bench.flag_scores(np.zeros(6, dtype=bool), planted)
    assert np.isnan(precision) and recall == 0.0 and n == 0


@pytest.mark.parametrize("name", ["wine", "diabetes"])
@pytest.mark.parametrize("seed", [0, 3])
def test_noise_is_planted_in_training_rows_only(bench, name, seed):
    load, task = bench.DATASETS[name]
    X, y = load()
    split = bench.make_split(name, X, y, task, seed, noise=0.1)
    tr, va, te = split.rows["train"], split.rows["val"], split.rows["test"]
    assert len(set(tr) | set(va) | set(te)) == len(y) == len(tr) + len(va) + len(te)
    assert len(split.planted) == round(0.1 * len(tr)) == split.is_planted.sum()
    changed = np.flatnonzero(split.y != y[tr])
    np.testing.assert_array_equal(changed, split.planted)  # every planted row, no other
    np.testing.assert_array_equal(split.y_clean, y[tr])
    np.testing.assert_array_equal(split.y_val, y[va])  # validation and test untouched
    np.testing.assert_array_equal(split.y_test, y[te])
    if task == "classification":
        assert set(np.unique(split.y)) <= set(np.unique(y))
    else:
        shift = np.abs(split.y[split.planted] - y[tr][split.planted])
        np.testing.assert_allclose(shift, 3 * y[tr].std())
    # features standardised on the training rows only
    np.testing.assert_allclose(split.X.mean(0), 0, atol=1e-9)
    again = bench.make_split(name, X, y, task, seed, noise=0.1)
    np.testing.assert_array_equal(again.planted, split.planted)


def test_the_dataset_groups_name_sets_that_load_for_their_task(bench):
    for group, names in bench.GROUPS.items():
        assert group not in bench.DATASETS and names, group
        for name in names:
            load, task = bench.DATASETS[name]
            X, y = load()
            # at least the rehearsal's two tiny sets (100 rows: 50 training rows)
            assert X.ndim == 2 and len(X) == len(y) >= 100, name
            # classes as at most ten whole numbers; a regression target as floats, with many
            # values or a few levels (the 1-5 ratings)
            if task == "classification":
                assert np.issubdtype(y.dtype, np.integer) and len(np.unique(y)) <= 10, name
            else:
                assert np.issubdtype(y.dtype, np.floating) and len(np.unique(y)) >= 5, name


@pytest.mark.parametrize("name", ["iris", "diabetes"])
def test_validation_noise_leaves_the_training_rows_and_the_test_rows_as_without_it(bench, name):
    load, task = bench.DATASETS[name]
    X, y = load()
    plain = bench.make_split(name, X, y, task, 3, noise=0.1)
    noisy = bench.make_split(name, X, y, task, 3, noise=0.1, val_noise=0.2)
    np.testing.assert_array_equal(noisy.y, plain.y)
    np.testing.assert_array_equal(noisy.planted, plain.planted)
    np.testing.assert_array_equal(noisy.y_test, plain.y_test)
    moved = np.flatnonzero(noisy.y_val != plain.y_val)
    assert len(moved) == round(0.2 * len(plain.y_val))


@pytest.mark.parametrize("labels", [np.repeat([0, 1, 2], 40), np.repeat(["b", "c", "a"], 40)])
def test_pair_noise_moves_each_planted_label_to_the_next_class(bench, labels):
    y, planted = bench.plant_labels(labels, 0.25, np.random.default_rng(1), kind="pair")
    classes = np.unique(labels)
    moved = np.flatnonzero(y != labels)
    np.testing.assert_array_equal(moved, planted)
    assert len(planted) == 30
    nxt = {c: classes[(i + 1) % len(classes)] for i, c in enumerate(classes)}
    assert all(y[i] == nxt[labels[i]] for i in planted)  # the last class wraps to the first
    # the same planted rows as uniform noise from the same seed: only the labels differ
    _, uniform = bench.plant_labels(labels, 0.25, np.random.default_rng(1))
    np.testing.assert_array_equal(planted, uniform)


def test_one_evaluation_and_the_tables(bench, monkeypatch, tmp_path):
    load, task = bench.DATASETS["iris"]
    split = bench.make_split("iris", *load(), task, 0)
    budget = bench.Budget(seconds=0.5, long_rounds=5, oob_bags=10)
    rows = [bench.evaluate(split, m, "knn", 0, budget) for m in ("knn_shapley", "random")]
    good, rand = rows
    assert good["n_planted"] == 8 and good["auroc"] > 0.8
    assert 0 <= rand["auroc"] <= 1 and rand["n_flagged"] == 0
    assert good["metric"] == "accuracy" and 0 <= good["test_after"] <= 1
    table = bench.dataset_table(rows)
    assert table.index("knn_shapley") < table.index("random")  # best AUROC first
    assert "| knn_shapley | 1 |" in bench.aggregate_table(rows)
    bench.write_csv(rows, tmp_path / "runs.csv")  # --tables-from reprints the same tables
    again = bench.read_csv(tmp_path / "runs.csv")
    assert bench.dataset_table(again) == table
    assert bench.aggregate_table(again) == bench.aggregate_table(rows)

    def boom(*args):
        raise RuntimeError("no luck")

    # a method that fails is a row with its error, not the end of the run
    monkeypatch.setitem(bench.METHODS, "boom", bench.Method(boom, "fails"))
    failed = bench.evaluate(split, "boom", "knn", 0, budget)
    assert failed["error"] == "RuntimeError: no luck" and "auroc" not in failed
    assert "| boom | error: RuntimeError: no luck" in bench.dataset_table([*rows, failed])


def test_oracle_scores_the_given_label_with_the_clean_model(bench):
    from sklearn.datasets import load_iris
    from sklearn.neighbors import KNeighborsClassifier

    X, y = load_iris(return_X_y=True)
    split = bench.make_split("iris", X, y, "classification", 0)
    out = bench.run_oracle(split, KNeighborsClassifier(5), 0, None)
    assert out.values.shape == (len(split.y),) and np.all((out.values >= 0) & (out.values <= 1))
    # iris is easy: a clean 5-NN finds almost every moved label unlikely
    assert bench.auroc(out.values, split.is_planted) > 0.95
    # an unplanted row's score is its clean label's probability
    keep = ~split.is_planted
    assert np.mean(out.values[keep]) > 0.8


@pytest.mark.skipif(not os.environ.get("TDSHAP_DATA_DIR"), reason="needs TDSHAP_DATA_DIR")
def test_the_papers_data_load_as_planted_noise_sets(bench):
    X, y = bench.DATASETS["fashion"][0]()
    assert X.shape == (2000, 784) and 0 <= X.min() and X.max() <= 1
    assert set(np.unique(y)) == set(range(10))
    X, y = bench.DATASETS["abalone"][0]()
    assert X.shape == (2000, 10) and bench.DATASETS["abalone"][1] == "regression"
    X3, y3 = bench.DATASETS["abalone3"][0]()
    np.testing.assert_array_equal(X3, X)  # the same rows
    assert np.array_equal(y3, (y > 8.5).astype(int) + (y > 10.5))
    assert np.bincount(y3).min() > 300  # three groups of some size


def test_the_own_label_rows_value_with_it_and_leave_the_default_as_it_was(bench):
    from sklearn.neighbors import KNeighborsClassifier

    import tdshap.app.valuer as valuer
    from tdshap.methods import KNNShapley

    load, task = bench.DATASETS["wine"]
    split = bench.make_split("wine", *load(), task, 0)
    default = valuer.OWN_LABEL
    run = bench.METHODS["find_harmful-own"].run
    got = run(split, KNeighborsClassifier(5), 0, bench.Budget())
    assert valuer.OWN_LABEL == default
    own = KNNShapley(KNeighborsClassifier(5), queries="both", own_label=True,
                     random_state=0).fit(split.X, split.y, split.X_val, split.y_val)
    np.testing.assert_allclose(got.values, own.values_, atol=1e-12)
    plain = bench.METHODS["find_harmful"].run(split, KNeighborsClassifier(5), 0, bench.Budget())
    assert not np.allclose(plain.values, own.values_)


def test_the_cross_fitted_level_flag_reaches_the_cut(bench, monkeypatch, tmp_path):
    import tdshap.cleansing

    monkeypatch.setattr(tdshap.cleansing, "CROSS_FIT_N_SE", tdshap.cleansing.CROSS_FIT_N_SE)
    load, task = bench.DATASETS["iris"]
    split = bench.make_split("iris", *load(), task, 0)
    rows = [bench.evaluate(split, "random", "knn", 0, bench.Budget(0.5, 5, 10))]
    bench.write_csv(rows, tmp_path / "runs.csv")
    bench.main(["--tables-from", str(tmp_path / "runs.csv"), "--cross-fit-n-se", "7.5"])
    assert tdshap.cleansing.CROSS_FIT_N_SE == 7.5  # the name cleanse reads when it runs


def test_the_paired_table_differences_each_run_against_the_first_method(bench):
    def row(method, dataset, task, seed, before, after):
        return {"method": method, "dataset": dataset, "task": task, "seed": seed,
                "test_before": before, "test_after": after}

    rows = [row("a", "c", "classification", 0, 0.80, 0.82),
            row("a", "c", "classification", 1, 0.70, 0.70),
            row("b", "c", "classification", 0, 0.80, 0.85),
            row("b", "c", "classification", 1, 0.70, 0.74),
            row("b", "c", "classification", 2, 0.70, 0.99),  # no run of "a" to pair with
            row("a", "r", "regression", 0, 2.0, 1.0),
            row("b", "r", "regression", 0, 2.0, 1.5),
            {"method": "b", "dataset": "r", "task": "regression", "seed": 1, "error": "x"}]
    table = bench.paired_table(rows)
    # differences +0.03 and +0.04: mean +0.035, SE 0.005; regression -25% vs -50%: +25.0
    assert "| b | +0.0350 ± 0.0050 (2) | +25.0 ± — (1) |" in table
    assert table.splitlines()[0].startswith("| method − a |")


def test_the_clip_and_own_label_rows_act_on_the_regressors_closed_form(bench):
    # auto values a regressor by thresholding Data-OOB since session 34: these rows name
    # the closed form, or they would measure the bandit under another name
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.neighbors import KNeighborsRegressor

    load, task = bench.DATASETS["tiny_reg"]
    split = bench.make_split("tiny_reg", *load(), task, 0)
    budget = bench.Budget()
    for name, clip in (("find_harmful-noclip", None), ("find_harmful-clip3", 3.0)):
        extra = bench.METHODS[name].run(split, KNeighborsRegressor(5), 0, budget).result.extra
        assert extra["queries"] == "training" and extra.get("query_clip") == clip
    own = bench.METHODS["find_harmful-own"].run(split, KNeighborsRegressor(5), 0, budget)
    assert own.result.extra["own_label"] is True
    forest = bench.METHODS["find_harmful-clip2"].run(
        split, RandomForestRegressor(5, random_state=0), 0, budget).result.extra
    assert forest["queries"] == "training" and forest["query_clip"] == 2.0  # the 5-NN proxy
