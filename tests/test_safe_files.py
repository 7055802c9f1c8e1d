"""Result files, checkpoints and the cleansing fallback, in the library: a damaged or
edited file is one clear error (never a hang, a traceback from deep inside, or a
call chosen by the file); a grid model that cannot be fitted is scored as the
valuation scores one."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.tree import DecisionTreeClassifier

from tdshap import TDShap, ValuationResult, cleanse
from tdshap.methods.checkpoint.files import CheckpointError, read_checkpoint, write_checkpoint
from tdshap.result import ResultFileError


def _result() -> ValuationResult:
    return ValuationResult("tdshap", np.array([0.1, -0.2, 0.3]), np.array([2, 3, 1]),
                           np.array([0.01, 0.02, np.nan]), threshold=-0.1, n_fits=9,
                           index=np.array(["a", "b", "c"]))


@pytest.mark.parametrize("edit", [
    lambda d: d.pop("algorithm"), lambda d: d.pop("values"),
    lambda d: d.update(counts=[1, 2]), lambda d: d.update(counts=[1, -2, 3]),
    lambda d: d.update(values="abc"), lambda d: d.update(config=[1]),
    lambda d: d.update(n_fits="many"), lambda d: d.update(order=[0, 0, 1]),
    lambda d: d.update(confidence=2), lambda d: d.update(index=["a"]),
    lambda d: d.update(variances=[[1], [2], [3]]),
    lambda d: d.update(extra={"eligibility_interval": "bernstein"}),
    lambda d: d.update(extra={"eligibility_interval": ["pooled"]}),
    # cells numpy would read as something else: text, true/false, fractional counts
    lambda d: d.update(values=["0.1", -0.2, 0.3]), lambda d: d.update(values=[True, 0, 1]),
    lambda d: d.update(counts=[2, 2.7, 1]), lambda d: d.update(variances=[0.1, "x", 0.2]),
    lambda d: d.update(order=[0, 1.5, 2]), lambda d: d.update(harmful=[0, 1, 0]),
])
def test_an_edited_result_file_is_a_result_file_error(tmp_path: Path, edit) -> None:
    path = _result().save(tmp_path / "r.json")
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ResultFileError, match=r"r\.json"):
        ValuationResult.load(path)


def test_saving_into_a_missing_folder_names_the_file_asked_for(tmp_path: Path) -> None:
    # not the hidden ".r.json.tmp-<pid>" of a bare FileNotFoundError: the file asked for,
    # the folder missing and the fix, before anything is made
    target = tmp_path / "missing" / "r.json"
    with pytest.raises(ValueError, match=f"cannot save {target}: folder {target.parent} does "
                       "not exist; create it first"):
        _result().save(target)
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("content", [b"", b"{", b"[1, 2]", b"null"])
def test_a_damaged_json_result(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "r.json").write_bytes(content)
    with pytest.raises(ResultFileError):
        ValuationResult.load(tmp_path / "r.json")


def test_a_damaged_npz_result(tmp_path: Path) -> None:
    path = _result().save(tmp_path / "r.npz")
    np.testing.assert_array_equal(ValuationResult.load(path).values, _result().values)
    (tmp_path / "bad.npz").write_bytes(path.read_bytes()[:40])
    with pytest.raises(ResultFileError):
        ValuationResult.load(tmp_path / "bad.npz")
    with zipfile.ZipFile(tmp_path / "nometa.npz", "w") as z:
        z.writestr("values.npy", b"x")
    with pytest.raises(ResultFileError):
        ValuationResult.load(tmp_path / "nometa.npz")
    with pytest.raises(ResultFileError, match="does not exist"):
        ValuationResult.load(tmp_path / "missing.json")


@pytest.fixture
def data() -> tuple[np.ndarray, ...]:
    X, y = make_classification(n_samples=90, n_features=4, random_state=0)
    return X[:60], y[:60], X[60:], y[60:]


def _tdshap(path: Path, **kw) -> TDShap:
    return TDShap(DecisionTreeClassifier(max_depth=2, random_state=0), "accuracy", k=5,
                  n_min=5, max_iter=3, random_state=0, checkpoint=path, **kw)


@pytest.mark.parametrize(("field", "value", "words"), [
    ("init_done", -3, "init_done"), ("rounds", 10**9, "rounds"),
    ("rng", {"bit_generator": "seed"}, "bit generator"), ("k", 7, "'k'"),
    # a list or record where the name goes: "unhashable type: 'list'", a bare TypeError
    ("rng", {"bit_generator": ["PCG64"]}, "bit generator"),
    ("rng", {"bit_generator": {}}, "bit generator"),
    ("counters", {"n_fits": 1.5}, "n_fits"), ("elapsed", float("nan"), "elapsed"),
])
def test_an_edited_checkpoint_is_refused_not_followed(tmp_path: Path, data, field: str,
                                                      value: object, words: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.tdshap"
    _tdshap(path).fit(*data)
    meta, arrays = read_checkpoint(path)
    meta[field] = value
    write_checkpoint(path, {k: v for k, v in meta.items() if k not in ("format", "version")},
                     arrays)
    seeded = []
    monkeypatch.setattr(np.random, "seed", lambda *a: seeded.append(a))
    with pytest.raises(CheckpointError, match=words):
        _tdshap(path, resume=True).fit(*data)
    assert not seeded  # nothing the file names is called


def test_the_cleansing_falls_back_like_the_valuation(data) -> None:
    class Flaky(DecisionTreeClassifier):
        def fit(self, X, y, *args, **kwargs):  # type: ignore[override]
            if len(X) % 4 == 0:
                raise RuntimeError(f"no fit on {len(X)} rows")
            return super().fit(X, y, *args, **kwargs)

    X, y, Xv, yv = data
    values = np.arange(len(y), dtype=float)
    c = cleanse(values, Flaky(max_depth=2), X, y, Xv, yv, step=1, max_fraction=0.3)
    failed = [n for n in c.grid if (len(y) - n) % 4 == 0]
    assert c.extra["n_failed_fits"] == len(failed) > 0
    assert c.extra["first_error"] == f"RuntimeError: no fit on {len(y) - failed[0]} rows"
    majority = np.mean(yv == np.bincount(y[np.sort(np.argsort(values)[failed[0]:])]).argmax())
    assert c.val_scores[list(c.grid).index(failed[0])] == pytest.approx(majority)
    with pytest.raises(RuntimeError):
        cleanse(values, Flaky(max_depth=2), X, y, Xv, yv, step=1, max_fraction=0.3,
                on_error="raise")


def test_a_named_eligibility_interval_survives_a_round_trip(tmp_path: Path) -> None:
    r = _result()
    r.extra["eligibility_interval"] = "moderated"
    back = ValuationResult.load(r.save(tmp_path / "r.json"))
    assert back.extra["eligibility_interval"] == "moderated"


@pytest.mark.parametrize(("labels", "saved"), [
    (pd.date_range("2020-01-01", periods=3, freq="D"),
     ["2020-01-01", "2020-01-02", "2020-01-03"]),
    (pd.MultiIndex.from_arrays([[1, 2, 3], ["x", "y", "z"]]), ["(1, 'x')", "(2, 'y')",
                                                               "(3, 'z')"]),
    (pd.period_range("2020-01", periods=3, freq="M"), ["2020-01", "2020-02", "2020-03"]),
], ids=["times", "tuples", "periods"])
@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_row_labels_that_are_no_text_or_number_are_saved_as_their_text(
        tmp_path: Path, labels: pd.Index, saved: list[str], suffix: str) -> None:
    # a method fitted on a table indexed by time keeps its times: .json failed with json's
    # "Object of type datetime is not JSON serializable"; a MultiIndex's tuples were saved
    # as lists that load refused (.json) or failed numpy's "setting an array element with
    # a sequence" (.npz)
    r = _result()
    r.index = labels.to_numpy()
    back = ValuationResult.load(r.save(tmp_path / f"r{suffix}"))
    assert back.index.tolist() == saved
    np.testing.assert_array_equal(back.values, r.values)


def test_a_link_at_the_temporary_name_is_not_written_through(tmp_path: Path) -> None:
    import os

    users = tmp_path / "users.csv"
    users.write_text("a,b\n1,2\n")
    # the atomic write's temporary name is predictable: a link planted there must not
    # carry the write to the file it names
    (tmp_path / f".r.json.tmp-{os.getpid()}").symlink_to(users)
    path = _result().save(tmp_path / "r.json")
    assert users.read_text() == "a,b\n1,2\n"
    assert ValuationResult.load(path).values.shape == _result().values.shape
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "users.csv"]


@pytest.mark.parametrize("suffix", [".json", ".npz"])
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder"])
def test_a_result_path_that_is_no_regular_file_is_refused(tmp_path: Path, suffix: str,
                                                         kind: str) -> None:
    # a FIFO hung load() forever and a link to /dev/zero read until memory ran out
    import os
    import threading

    path = tmp_path / f"r{suffix}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    raised: list[BaseException] = []
    # a thread, so that a hang fails the test instead of stopping the suite
    worker = threading.Thread(target=lambda: raised.extend(
        [_catch(lambda: ValuationResult.load(path))]), daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "load() hung"
    assert isinstance(raised[0], ResultFileError)
    assert "is not a regular file" in str(raised[0])


def _catch(fn: Any) -> BaseException | None:
    try:
        fn()
    except BaseException as err:  # the test inspects it
        return err
    return None


def test_a_full_disk_names_the_file_and_leaves_the_old_one_whole(tmp_path: Path,
                                                                 monkeypatch) -> None:
    import errno
    import os

    path = _result().save(tmp_path / "r.json")
    before = path.read_bytes()

    def full(fd: int) -> None:  # the data written so far never reach the disk
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    # a write's error names no file: the message said "No space left on device" alone
    for save in (lambda: _result().save(path),
                 lambda: write_checkpoint(tmp_path / "run.tdshap", {"format": "x"}, {})):
        with pytest.raises(OSError, match="No space left on device") as err:
            save()
        assert err.value.errno == errno.ENOSPC and err.value.filename in (
            str(path), str(tmp_path / "run.tdshap"))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
