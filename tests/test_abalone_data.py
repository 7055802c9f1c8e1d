"""The Abalone loader: lookup order, one-hot Sex, download from a URL, clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from experiments.datasets import DATA_DIR_VAR, abalone, abalone_path, load_abalone

ROWS = "M,0.455,0.365,0.095,0.514,0.2245,0.101,0.15,15\nF,0.53,0.42,0.135,0.677,0.2565,0.1415,0.21,9\nI,0.33,0.255,0.08,0.205,0.0895,0.0395,0.055,7\n"  # noqa: E501
REAL = Path(os.environ.get(DATA_DIR_VAR) or "/work/shared/datasets") / "abalone" / "abalone.data"


@pytest.fixture
def no_data(monkeypatch, tmp_path):
    """No data dir and an empty cache: only what a test provides exists."""
    monkeypatch.delenv(DATA_DIR_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def _write(folder: Path) -> Path:
    file = folder / "abalone" / "abalone.data"
    file.parent.mkdir(parents=True)
    file.write_text(ROWS)
    return file


def test_one_hot_sex_and_target(no_data):
    X, y, names = load_abalone(_write(no_data / "data"), download=False)
    assert names[:3] == ["Sex_F", "Sex_I", "Sex_M"]
    np.testing.assert_array_equal(X[:, :3], [[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(y, [15, 9, 7])
    assert X[1, 3] == pytest.approx(0.53)


def test_found_under_the_data_dir_variable(no_data, monkeypatch):
    file = _write(no_data / "data")
    monkeypatch.setenv(DATA_DIR_VAR, str(no_data / "data"))
    assert abalone_path(download=False) == file


def test_downloads_into_the_cache_from_a_url(no_data):
    source = no_data / "remote.data"
    source.write_text(ROWS)
    got = abalone_path(url=source.as_uri())
    assert got == no_data / "cache" / "tdshap" / "abalone" / "abalone.data"
    assert got.read_text() == ROWS
    assert abalone_path(download=False) == got  # the cache is used next time


def test_missing_file_names_the_variable_and_the_download(no_data):
    with pytest.raises(FileNotFoundError, match=DATA_DIR_VAR) as err:
        abalone_path(download=False)
    assert "download" in str(err.value)
    with pytest.raises(FileNotFoundError, match="download failed"):
        abalone_path(url=(no_data / "nowhere.data").as_uri())
    assert not (no_data / "cache" / "tdshap" / "abalone" / "abalone.data").exists()


def test_not_the_abalone_file_is_a_value_error(no_data):
    bad = no_data / "bad.data"
    bad.write_text("X,1,2,3,4,5,6,7,8\n")
    with pytest.raises(ValueError, match=r"not the UCI abalone\.data"):
        load_abalone(bad)


@pytest.mark.skipif(not REAL.is_file(), reason="real Abalone data not available")
def test_real_abalone_split():
    data = abalone(seed=0, path=REAL)
    assert data.X_train.shape == (1000, 10) and len(data.y_val) == 1000 and len(data.y_test) == 1000
    X, y, _ = load_abalone(REAL)
    assert X.shape == (4177, 10) and y.sum() == 41493  # the checks in abalone.names
    assert np.all(X[:, :3].sum(axis=1) == 1)
