"""The deep benchmark driver (experiments.deep_bench) on a tiny synthetic task."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from experiments.deep_bench import BenchSetting, DeepTask, run_bench, tables  # noqa: E402
from tdshap.app.splits import Split  # noqa: E402
from tdshap.torch.estimators import TorchClassifier  # noqa: E402
from tdshap.torch.modules import FashionCNN  # noqa: E402


def tiny_cnn(n_classes: int) -> FashionCNN:
    return FashionCNN(n_classes, channels=(2, 2), hidden=4, side=8)


def tiny_task(n_iter: int = 1) -> DeepTask:
    setting = BenchSetting(dataset="toy", sizes=(24, 20, 20), epochs=1, pretrain_epochs=2,
                           clean_epochs=2, batch_size=8, n_iter=n_iter, k=4, n_min=8,
                           clean_step=4, device="cpu")

    def load(seed: int) -> Split:
        rng = np.random.default_rng(seed)
        y = rng.integers(0, 2, 64)
        X = rng.normal(0, 1, (64, 1, 8, 8)).astype(np.float32) + y[:, None, None, None]
        return Split(X[:24], y[:24], X[24:44], y[24:44], X[44:], y[44:], name="toy")

    def learner(warm: bool, epochs: int, seed: int) -> TorchClassifier:
        return TorchClassifier(module=tiny_cnn, epochs=epochs, pretrain_epochs=2,
                               warm_start=warm, batch_size=8, device="cpu", random_state=seed)

    return DeepTask(setting, load, learner)


@pytest.mark.slow
def test_cells_are_written_resumed_and_tabulated(tmp_path):
    torch.set_num_threads(1)
    lines: list[str] = []
    methods = ("baseline", "loo", "tdshap", "few_epoch", "full_train")
    cells = run_bench(tiny_task(), tmp_path, trials=1, seed=0, methods=methods,
                      echo=lines.append)
    assert sorted(cells["method"]) == sorted(methods)
    assert (tmp_path / "cells" / "tdshap_trial0.json").exists()
    row = cells.set_index("method")
    assert row.loc["loo", "fits"] == 24 + 1
    assert row.loc["tdshap", "fits"] == (6 + 1) * 5  # 6 initial blocks + 1 round, K + 1 = 5
    assert 0 <= row.loc["tdshap", "test_acc"] <= 1
    # a rerun finds every cell and fits nothing
    lines.clear()
    again = run_bench(tiny_task(), tmp_path, trials=1, seed=0, methods=methods,
                      echo=lines.append)
    assert not [line for line in lines if "test acc" in line]
    assert len(again) == len(cells)
    text = tables(again, "toy")
    assert "| toy |" in text and "Few-epoch" in text and "Data Shapley (short)" in text


def test_another_setting_in_the_same_folder_is_refused(tmp_path):
    run_bench(tiny_task(), tmp_path, trials=1, seed=0, methods=("baseline",), echo=print)
    with pytest.raises(ValueError, match="another setting"):
        run_bench(tiny_task(n_iter=2), tmp_path, trials=1, seed=0, methods=("baseline",),
                  echo=print)
    with pytest.raises(ValueError, match="unknown methods"):
        run_bench(tiny_task(), tmp_path, trials=1, seed=0, methods=("bogus",), echo=print)


def test_data_shapley_short_runs_for_tdshaps_time(tmp_path):
    torch.set_num_threads(1)
    cells = run_bench(tiny_task(), tmp_path, trials=1, seed=0, methods=("tdshap", "tmc_short"),
                      echo=print).set_index("method")
    assert cells.loc["tmc_short", "fits"] > 0
    from experiments.deep_bench import valuer

    tmc = valuer(tiny_task(), "tmc_short", 0, tdshap_seconds=12.5)
    assert tmc.time_budget == 12.5  # Data Shapley (short): TDShap's wall time


def test_an_interrupted_tdshap_cell_continues_from_its_checkpoint(tmp_path):
    import json

    torch.set_num_threads(1)
    first = run_bench(tiny_task(), tmp_path, trials=1, seed=0, methods=("tdshap",),
                      echo=print).set_index("method")
    assert (tmp_path / "cells" / "tdshap_trial0.tdshap").exists()
    (tmp_path / "cells" / "tdshap_trial0.json").unlink()  # as if killed before the cell
    again = run_bench(tiny_task(), tmp_path, trials=1, seed=0, methods=("tdshap",),
                      echo=print).set_index("method")
    for column in ("test_acc", "val_acc", "n_remove", "fits"):
        assert again.loc["tdshap", column] == first.loc["tdshap", column]
    from tdshap.methods.checkpoint.files import checkpoint_info

    cell = json.loads((tmp_path / "cells" / "tdshap_trial0.json").read_text())
    earlier = checkpoint_info(tmp_path / "cells" / "tdshap_trial0.tdshap")["elapsed"]
    assert earlier > 0 and cell["seconds"] > earlier  # the earlier pieces' time counts


def test_cleansing_reuses_the_full_data_fit_of_the_trial(tmp_path):
    from experiments.deep_bench import FitMemo, ReuseFits
    from tdshap.cleansing import cleanse

    torch.set_num_threads(1)
    task = tiny_task()
    split = task.load(0)
    memo = FitMemo()
    learner = ReuseFits(task.learner(False, 2, 0), memo)
    first = learner.fit(split.X_train, split.y_train)
    again = ReuseFits(task.learner(False, 2, 0), memo).fit(split.X_train, split.y_train)
    assert again.estimator_ is first.estimator_ and len(memo) == 1
    plain = task.learner(False, 2, 0).fit(split.X_train, split.y_train)
    np.testing.assert_array_equal(first.predict_proba(split.X_val),
                                  plain.predict_proba(split.X_val))
    values = np.arange(len(split.y_train), dtype=float)
    reused = cleanse(values, learner, *split.train, *split.val, step=4, max_fraction=0.5,
                     random_state=0)
    assert len(memo) == len(reused.grid)  # n_remove = 0 was the fit above
    fresh = cleanse(values, task.learner(False, 2, 0), *split.train, *split.val, step=4,
                    max_fraction=0.5, random_state=0)
    np.testing.assert_array_equal(reused.val_scores, fresh.val_scores)


def test_head_cells_are_a_setting_of_their_own(tmp_path):
    import dataclasses

    task = tiny_task()
    key = task.setting.key()
    assert "valuation_head" not in key and "metric" not in key  # older folders still match
    head = DeepTask(dataclasses.replace(task.setting, valuation_head="knn",
                                        metric="true_class_proba"), task.load, task.learner)
    assert head.setting.key()["valuation_head"] == "knn"
    from experiments.deep_bench import valuer

    tdshap = valuer(head, "tdshap", 0, None)
    assert tdshap.estimator.valuation_head == "knn" and tdshap.metric == "true_class_proba"
    assert valuer(head, "loo", 0, None).metric == "true_class_proba"
    assert valuer(head, "few_epoch", 0, None).estimator.warm_start is False
    with pytest.raises(ValueError, match="few_epoch"):
        valuer(head, "full_train", 0, None)
    cells = run_bench(head, tmp_path, trials=1, seed=0, methods=("tdshap",), echo=print)
    assert cells.loc[0, "evaluations"] > 0 and 0 <= cells.loc[0, "test_acc"] <= 1


def test_tdoob_cells_with_a_valuation_head(tmp_path):
    """Thresholding Data-OOB refits only the head on the network's full-data embeddings."""
    import dataclasses

    from experiments.deep_bench import valuer
    from tdshap.methods import ThresholdingOOB

    torch.set_num_threads(1)
    task = tiny_task()
    head = DeepTask(dataclasses.replace(task.setting, valuation_head="knn", rule="one_se"),
                    task.load, task.learner)
    est = valuer(head, "tdoob", 0, None)
    assert isinstance(est, ThresholdingOOB) and est.estimator.valuation_head == "knn"
    cells = run_bench(head, tmp_path, trials=1, seed=0, methods=("baseline", "tdoob"),
                      echo=print).set_index("method")
    # k-NN head: out-of-bag rows predicted from neighbour lists, so bags without refits
    assert cells.loc["tdoob", "evaluations"] > 0 and 0 <= cells.loc["tdoob", "test_acc"] <= 1
    assert head.setting.key()["rule"] == "one_se"


@pytest.mark.parametrize("args", [["fmnist"], ["livedoor"], ["livedoor", "--encoder", "tfidf"]],
                         ids=["fmnist", "livedoor", "livedoor-tfidf"])
def test_no_data_is_one_error_before_out_is_made(tmp_path, monkeypatch, args):
    from click.testing import CliRunner

    from experiments.__main__ import main

    monkeypatch.setenv("TDSHAP_DATA_DIR", str(tmp_path))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["bench", *args, "--out", str(out)])
    # a FileNotFoundError traceback, after out/cells and setting.json were made
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1 and "not found: is TDSHAP_DATA_DIR=" in lines[0], result.output
    assert not out.exists()



@pytest.mark.parametrize(("args", "folder"), [(["fmnist"], "fashion_mnist"),
                                              (["livedoor"], "livedoor"),
                                              (["livedoor", "--encoder", "tfidf"], "livedoor")],
                         ids=["fmnist", "livedoor", "livedoor-tfidf"])
def test_no_data_folder_names_the_variable_not_a_path_argument(tmp_path, monkeypatch, args,
                                                                folder):
    from click.testing import CliRunner

    from experiments.__main__ import main

    monkeypatch.delenv("TDSHAP_DATA_DIR", raising=False)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["bench", *args, "--out", str(out)])
    # the loaders' message said "pass path=...", which no flag of the bench sets
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert errors == [
        f"Error: no data folder: set TDSHAP_DATA_DIR to the folder holding {folder}/ (e.g. "
        "export TDSHAP_DATA_DIR=/path/to/data), then run the bench again."], result.output
    assert not out.exists()

def test_trial_seeds_past_2_32_are_refused_before_out_is_made(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from experiments.__main__ import main

    monkeypatch.setenv("TDSHAP_DATA_DIR", str(tmp_path))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["bench", "fmnist", "--seed", "4294967290", "--trials",
                                       "10", "--out", str(out)])
    # trial t takes seed + t: the last ones were past what the --seed flag itself allows
    assert result.exit_code == 1 and "Error: --seed 4294967290 with --trials 10 goes past " \
        "the largest seed, 4294967295: give --seed at most 4294967286." in result.output
    assert not out.exists()
