"""Progress bars: silent unless asked for; when asked, they say how far and how sure."""

from __future__ import annotations

from sklearn.tree import DecisionTreeClassifier

from tdshap import TDShap


def _fit(d, tmp_path, **kw):
    TDShap(DecisionTreeClassifier(max_depth=3, random_state=0), "accuracy", n_min=10, k=5,
           n_blocks=2, max_iter=6, random_state=0, checkpoint=tmp_path / "run.tdshap",
           checkpoint_every=0, **kw).fit(d.X_train, d.y_train, d.X_val, d.y_val)


def test_nothing_is_printed_by_default(breast_cancer_small, tmp_path, capfd):
    _fit(breast_cancer_small, tmp_path)
    _fit(breast_cancer_small, tmp_path, n_jobs=2, backend="threading", resume=True)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_progress_bar_shows_budget_speed_and_sides_of_tau(breast_cancer_small, tmp_path, capfd):
    _fit(breast_cancer_small, tmp_path, progress=True)
    out, err = capfd.readouterr()
    assert out == ""
    assert "TDShap N=60 K=5 M=2" in err and "100%" in err
    for field in ("round=6", "pulls=", "fits_per_s=", "below=", "above=", "undecided="):
        assert field in err, field
