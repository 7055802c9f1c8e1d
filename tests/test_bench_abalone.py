"""``python -m experiments bench abalone`` end to end on a small synthetic Abalone file."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from experiments import abalone as study
from experiments.__main__ import main

ALL = ("baseline,random,loo100,loo1,tmc,tdshap,tdshap-auto,tdshap-no-i,tdshap-no-ii,"
       "tdshap-seq")


@pytest.fixture
def fake_abalone(tmp_path):
    """150 rows in the UCI format, Rings driven by the weights, five corrupted rows."""
    rng = np.random.default_rng(0)
    n = 150
    measures = rng.uniform(0.05, 0.8, size=(n, 7))
    rings = np.clip(np.round(3 + 15 * measures[:, 3] + rng.normal(0, 1, n)), 1, 29)
    rings[:5] = 29
    sex = rng.choice(["M", "F", "I"], size=n)
    lines = [",".join([s, *(f"{v:.4f}" for v in m), str(int(r))])
             for s, m, r in zip(sex, measures, rings, strict=True)]
    path = tmp_path / "abalone.data"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(args):
    result = CliRunner().invoke(main, ["bench", "abalone", *args])
    assert result.exit_code == 0, result.output
    return result.output


def _error_line(result) -> str:
    """The one ``Error:`` line of a failure that is not a usage mistake: no usage block above
    it (click's UsageError prints one and exits 2), as the deep benches fail."""
    assert result.exit_code == 1, result.output
    assert "Usage:" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.output
    return errors[0]


@pytest.mark.slow
def test_every_method_runs_writes_cells_and_resumes(fake_abalone, tmp_path, monkeypatch):
    out = tmp_path / "out"
    args = ["--models", "ridge", "--methods", ALL, "--trials", "1", "--sizes", "50,50,50",
            "--data", str(fake_abalone), "--out", str(out), "--tmc-budget", "1"]
    printed = _run(args)
    cells = sorted(p.name for p in (out / "cells").glob("*.json"))
    assert cells == sorted(f"t00_ridge_{m}.json" for m in ALL.split(","))
    assert not list((out / "cells").glob("*.tdshap"))  # TMC's checkpoint goes with its cell
    for method in ALL.split(","):
        assert f"ridge  {method}" in printed
    loaded = {c["method"]: c for c in study.all_cells(out)}
    # one baseline for every method: the grid's first model is the full-data model
    base = loaded["baseline"]["test_mae"]
    assert all(c["baseline_test_mae"] == pytest.approx(base) for c in loaded.values())
    # equal-time cells are budgeted by TDShap's wall time on the same trial
    for method in study.EQUAL_TIME:
        assert loaded[method]["time_budget"] == pytest.approx(loaded["tdshap"]["seconds"])
    assert loaded["loo1"]["n_remove"] <= 25 and loaded["loo1"]["max_remove"] == 25
    assert loaded["tdshap"]["k"] == 5 and loaded["tdshap"]["n_min"] == 45  # ridge: 900 / 1000
    assert loaded["tdshap-seq"]["stages"] == 3 and loaded["tdshap-seq"]["step"] == 10  # 25 rows
    report = (out / "report.md").read_text()
    assert "Table 2" in report and "| ridge |" in report and "Spread of TDShap" in report
    assert (out / "curves" / "curves_ridge_t00.png").stat().st_size > 0

    # a rerun computes nothing: every cell is read back from disk
    def refuse(*_args, **_kwargs):
        raise AssertionError("a finished cell was recomputed")

    monkeypatch.setattr(study, "run_cell", refuse)
    _run(args)
    assert json.loads((out / "cells" / "t00_ridge_tdshap.json").read_text()) == loaded["tdshap"]


@pytest.mark.slow
def test_equal_time_cells_bring_their_tdshap_cell(fake_abalone, tmp_path, monkeypatch):
    from sklearn.tree import DecisionTreeRegressor

    # a tree whose fit depends on its seed, so an unseeded baseline would differ
    monkeypatch.setattr(study, "paper_model",
                        lambda name: DecisionTreeRegressor(max_features=1, max_depth=4))
    out = tmp_path / "out"
    _run(["--models", "dtree", "--methods", "baseline,tdshap-no-ii", "--trials", "1", "--sizes",
          "40,40,40", "--data", str(fake_abalone), "--out", str(out)])
    assert (out / "cells" / "t00_dtree_tdshap.json").is_file()
    cells = {c["method"]: c for c in study.all_cells(out)}
    assert set(cells) == {"baseline", "tdshap", "tdshap-no-ii"}
    # a seeded model: the baseline cell is seeded like cleanse's full-data model
    assert cells["baseline"]["test_mae"] == pytest.approx(cells["tdshap"]["baseline_test_mae"])


def test_unknown_names_are_rejected(fake_abalone, tmp_path):
    result = CliRunner().invoke(main, ["bench", "abalone", "--models", "forest", "--out",
                                       str(tmp_path)])
    assert result.exit_code != 0 and "forest" in result.output
    with pytest.raises(ValueError, match="knn"):
        study.parse_list("dtree,knn", study.PAPER_MODELS, "--models")


def test_a_folder_of_the_users_is_refused_and_left_alone(fake_abalone, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.md").write_text("the user's own")
    result = CliRunner().invoke(main, ["bench", "abalone", "--models", "ridge", "--methods",
                                       "baseline", "--trials", "1", "--sizes", "40,40,40",
                                       "--data", str(fake_abalone), "--out", str(mine)])
    # its report.md was replaced by the study's, a cells/ folder added
    assert "holds files this study did not write" in _error_line(result)
    assert sorted(p.name for p in mine.iterdir()) == ["report.md"]
    assert (mine / "report.md").read_text() == "the user's own"


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", "null"])
def test_an_edited_cell_is_refused_by_name(fake_abalone, tmp_path, content):
    args = ["--models", "ridge", "--methods", "baseline", "--trials", "1", "--sizes",
            "40,40,40", "--data", str(fake_abalone), "--out", str(tmp_path / "out")]
    _run(args)
    cell = tmp_path / "out" / "cells" / "t00_ridge_baseline.json"
    cell.write_text(content)
    for extra in ([], ["--report-only"]):
        result = CliRunner().invoke(main, ["bench", "abalone", *args, *extra])
        # json's bare message, or a TypeError traceback for a list
        assert "t00_ridge_baseline.json is not a JSON object" in _error_line(result)


def test_no_data_is_one_error_before_out_is_made(tmp_path, monkeypatch):
    from experiments import datasets

    def offline(url, target):
        raise OSError("offline")

    monkeypatch.setattr(datasets, "_download", offline)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["bench", "abalone", "--models", "ridge", "--methods",
                                       "baseline", "--trials", "1", "--data",
                                       str(tmp_path / "missing"), "--out", str(out)])
    # a FileNotFoundError traceback, after out/cells was made
    assert "Abalone data not found" in _error_line(result)
    assert not out.exists()



@pytest.mark.parametrize("args", [["--sizes", "40,40"], ["--models", "knn"],
                                  ["--trials", "0"], ["--seed", "4294967290", "--trials", "9"]],
                         ids=["sizes", "models", "trials", "seed-span"])
def test_bad_flag_values_still_show_the_usage(tmp_path, args):
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["bench", "abalone", *args, "--out", str(out)])
    assert result.exit_code == 2 and "Usage:" in result.output, result.output
    assert not out.exists()

@pytest.mark.parametrize("seed", ["-1", "4294967296"])
def test_a_seed_numpy_cannot_take_is_refused_as_the_flag(fake_abalone, tmp_path, seed):
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["bench", "abalone", "--models", "ridge", "--methods",
                                       "baseline", "--trials", "1", "--data", str(fake_abalone),
                                       "--seed", seed, "--out", str(out)])
    # numpy's "expected non-negative integer" or Ridge's random_state, after out/ was made
    assert result.exit_code == 2 and "'--seed'" in result.output, result.output
    assert not out.exists()


def test_trial_seeds_past_2_32_are_refused_before_out_is_made(fake_abalone, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["bench", "abalone", "--models", "ridge", "--methods",
                                       "baseline", "--trial-start", "3", "--trials", "4",
                                       "--sizes", "40,40,40", "--data", str(fake_abalone),
                                       "--seed", "4294967290",
                                       "--out", str(out)])
    # trials 3-5 ran and wrote their cells, then trial 6 (seed + 6) failed inside numpy
    assert result.exit_code == 2 and "give --seed at most 4294967289" in result.output, \
        result.output
    assert not out.exists()


@pytest.mark.slow
def test_no_fast_path_refits_and_gives_the_same_cleansing(fake_abalone, tmp_path):
    runs = {}
    for flag in ("--fast-path", "--no-fast-path"):
        out = tmp_path / flag
        _run(["--models", "ridge", "--methods", "tdshap,loo100", "--trials", "1", "--sizes",
              "50,50,50", "--data", str(fake_abalone), "--out", str(out), flag])
        runs[flag] = {c["method"]: c for c in study.all_cells(out)}
    fast, slow = runs["--fast-path"], runs["--no-fast-path"]
    assert fast["tdshap"]["fast_path"] is not None and slow["tdshap"]["fast_path"] is None
    assert slow["tdshap"]["n_fits"] > fast["tdshap"]["n_fits"]
    for method in ("tdshap", "loo100"):  # the fast path is exact: same ranking, same cleansing
        assert fast[method]["n_remove"] == slow[method]["n_remove"]
        assert fast[method]["test_mae"] == pytest.approx(slow[method]["test_mae"])


@pytest.mark.slow
def test_a_killed_tmc_cell_continues_from_its_checkpoint(fake_abalone, tmp_path, monkeypatch):
    from tdshap import Utility

    def args(out):
        return ["--models", "ridge", "--methods", "tmc", "--trials", "1", "--sizes", "40,40,40",
                "--data", str(fake_abalone), "--out", str(out), "--no-fast-path"]

    out = tmp_path / "out"
    _run(args(tmp_path / "ref"))
    expected = study.all_cells(tmp_path / "ref")[0]
    calls = []
    original = Utility.evaluate_chain

    def interrupted(self, *a, **kw):
        calls.append(1)
        if len(calls) == 20:
            raise KeyboardInterrupt
        return original(self, *a, **kw)

    monkeypatch.setattr(Utility, "evaluate_chain", interrupted)
    CliRunner().invoke(main, ["bench", "abalone", *args(out)])
    monkeypatch.setattr(Utility, "evaluate_chain", original)
    assert (out / "cells" / "t00_ridge_tmc.tdshap").is_file()
    _run(args(out))
    cell = study.all_cells(out)[0]
    for key in ("n_permutations", "n_fits", "test_mae", "n_remove"):
        assert cell[key] == expected[key]


def test_report_only_computes_nothing(fake_abalone, tmp_path, monkeypatch):
    out = tmp_path / "out"
    empty = CliRunner().invoke(main, ["bench", "abalone", "--report-only", "--out", str(out)])
    assert "no cells" in _error_line(empty)
    assert not out.exists()  # it made out/cells/ to find none there
    _run(["--models", "ridge", "--methods", "baseline", "--trials", "1", "--sizes", "40,40,40",
          "--data", str(fake_abalone), "--out", str(out)])
    (out / "report.md").unlink()

    def refuse(*_args, **_kwargs):
        raise AssertionError("--report-only computed a cell")

    monkeypatch.setattr(study, "run_cell", refuse)
    _run(["--models", "dtree", "--methods", "tdshap", "--report-only", "--out", str(out)])
    assert "| ridge |" in (out / "report.md").read_text()


def test_tdshap_warm_values_with_a_warm_started_model_and_refuses_others(fake_abalone,
                                                                         tmp_path):
    from tdshap.utility.warm_sklearn import WarmStarted

    out = tmp_path / "out"
    _run(["--models", "gbdt", "--methods", "tdshap-warm", "--trials", "1", "--sizes",
          "50,50,50", "--data", str(fake_abalone), "--out", str(out)])
    cell = study.all_cells(out)[0]
    assert cell["method"] == "tdshap-warm" and cell["n_fits"] > 0
    assert (cell["k"], cell["n_min"]) == (5, 5)  # the paper's K and N_min, scaled to N = 50
    cfg = study.StudyConfig(out=tmp_path / "unused", sizes=(50, 50, 50))
    valuer = study.valuation("tdshap-warm", "gbdt", 0, None, cfg)
    warm = valuer.estimator  # V(S) continues from the model trained on all of D
    assert isinstance(warm, WarmStarted) and warm.warm_start
    assert (warm.pretrain_steps, warm.steps) == (100, 10)
    bad = CliRunner().invoke(main, ["bench", "abalone", "--models", "ridge", "--methods",
                                    "tdshap-warm", "--out", str(tmp_path / "bad")])
    # a usage mistake (flags that cannot go together) still shows the usage
    assert bad.exit_code == 2 and "iteratively trained" in bad.output and "Usage:" in bad.output
    assert not (tmp_path / "bad" / "cells").exists() or not list(
        (tmp_path / "bad" / "cells").glob("*.json"))


def test_single_threaded_lightgbm_predicts_as_a_threaded_one(fake_abalone):
    from lightgbm import LGBMRegressor

    from experiments.datasets import abalone

    data = abalone(0, (50, 50, 50), path=str(fake_abalone))
    ours = study.paper_model("gbdt").fit(*data.train).predict(data.X_test)
    default = LGBMRegressor(verbose=-1, n_jobs=2).fit(*data.train).predict(data.X_test)
    np.testing.assert_array_equal(ours, default)
