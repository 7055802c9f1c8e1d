"""Checkpoint and resume: exact continuation, refusal of mismatches, survival of SIGKILL."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import zipfile

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from tdshap import TDShap
from tdshap.methods.checkpoint.files import checkpoint_info, read_checkpoint


def _model(**kw):
    settings = dict(n_min=10, k=5, max_iter=12, atol=1e-9, atol_window=4, random_state=5)
    settings.update(kw)
    return TDShap(DecisionTreeClassifier(max_depth=3, random_state=0), "accuracy", **settings)


def _fit(d, **kw):
    return _model(**kw).fit(d.X_train, d.y_train, d.X_val, d.y_val)


def _same_run(a: TDShap, b: TDShap) -> None:
    np.testing.assert_array_equal(a.values_, b.values_)
    np.testing.assert_array_equal(a.counts_, b.counts_)
    np.testing.assert_array_equal(a.result_.variances, b.result_.variances)
    for key in ("n_fits", "n_evaluations"):
        assert getattr(a.result_, key) == getattr(b.result_, key)
    assert a.result_.extra["rounds"] == b.result_.extra["rounds"]


def test_resuming_a_finished_run_with_a_larger_budget_equals_one_long_run(
        breast_cancer_small, tmp_path):
    d = breast_cancer_small
    path = tmp_path / "run.tdshap"
    short = _fit(d, max_iter=5, checkpoint=path, checkpoint_every=0)
    info = checkpoint_info(path)
    assert info["finished"] and info["rounds"] == 5
    assert info["counters"]["n_fits"] == short.result_.n_fits
    # the result's settings name the file as a path (it was "PosixPath('...')")
    assert short.result_.config["checkpoint"] == str(path)
    with pytest.warns(UserWarning, match="n_blocks=1"):  # more workers than chains per round
        longer = _fit(d, max_iter=12, checkpoint=path, resume=True, n_jobs=2,
                      backend="threading")
    _same_run(longer, _fit(d, max_iter=12))
    assert checkpoint_info(path)["rounds"] == 12
    assert [p.name for p in tmp_path.iterdir()] == ["run.tdshap"]  # no temporary left


def test_resuming_with_a_smaller_budget_says_so_not_that_the_file_was_edited(
        breast_cancer_small, tmp_path):
    # max_iter=3 on a 5-round checkpoint was "damaged or was edited: field 'rounds' is 5"
    d = breast_cancer_small
    path = tmp_path / "run.tdshap"
    _fit(d, max_iter=5, checkpoint=path)
    with pytest.raises(ValueError, match=r"^checkpoint .*: it has done 5 rounds, more than "
                       r"`max_iter` 3 allows: resume with `max_iter` 5 or more") as caught:
        _fit(d, max_iter=3, resume=path)
    assert "damaged" not in str(caught.value) and caught.value.params == ("max_iter", "resume")


def test_checkpoint_holds_the_bandit_and_no_pickle(breast_cancer_small, tmp_path):
    d = breast_cancer_small
    path = tmp_path / "run.tdshap"
    m = _fit(d, tau="auto", eps="auto", max_iter=3, checkpoint=path)
    meta, arrays = read_checkpoint(path)
    np.testing.assert_array_equal(arrays["mu"], m.values_)
    np.testing.assert_array_equal(arrays["counts"], m.counts_)
    assert meta["tau"] == m.tau_ and meta["eps"] == m.eps_
    assert meta["rng"]["bit_generator"] == "PCG64"
    with zipfile.ZipFile(path) as z:  # every member is a plain npy array, none of dtype object
        assert all(name.endswith(".npy") for name in z.namelist())
    with np.load(path, allow_pickle=False) as npz:
        assert all(npz[k].dtype != object for k in npz.files)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"k": 6}, "resume`: checkpoint .* different settings.*`k`: checkpoint 5, now 6"),
        ({"n_blocks": 2}, "n_blocks"),
        ({"random_state": 6}, "random_state"),
        ({"y": True}, "different data"),
    ],
)
def test_resume_refuses_other_settings_or_data(breast_cancer_small, tmp_path, change, match):
    d = breast_cancer_small
    path = tmp_path / "run.tdshap"
    _fit(d, max_iter=2, checkpoint=path)
    y = d.y_train.copy()
    if change.pop("y", False):
        y[0] = 1 - y[0]
    with pytest.raises(ValueError, match=match):
        _model(max_iter=4, resume=path, **change).fit(d.X_train, y, d.X_val, d.y_val)


def test_resume_refuses_thresholds_the_settings_do_not_give(breast_cancer_small, tmp_path):
    from tdshap.methods.checkpoint.files import write_checkpoint

    # the resumed run used the file's tau and eps, not the ones it was given: tau=5 flagged
    # every row
    d = breast_cancer_small
    path = tmp_path / "run.tdshap"
    _fit(d, tau=-0.01, eps=0.01, max_iter=2, checkpoint=path)
    meta, arrays = read_checkpoint(path)
    meta = {k: v for k, v in meta.items() if k not in ("format", "version")}
    write_checkpoint(path, {**meta, "tau": 5.0, "eps": 3.0}, arrays)
    with pytest.raises(ValueError, match=r"fields 'tau', 'eps' are 5.0, 3.0, but the run's "
                       r"settings \(tau=-0.01, eps=0.01\) give -0.01, 0.01"):
        _fit(d, tau=-0.01, eps=0.01, max_iter=4, resume=path)
    write_checkpoint(path, meta, arrays)  # as saved: resumed
    assert _fit(d, tau=-0.01, eps=0.01, max_iter=4, resume=path).tau_ == -0.01


def _move_pulls(counts, m2, spread):
    """Pulls of the most spread row moved to the least pulled one (or all of them)."""
    counts = counts.copy()
    i = int(np.argmax(m2))
    j = int(np.argmin(np.where(np.arange(len(counts)) == i, np.inf, counts)))
    if spread == "swap":
        counts[i], counts[j] = counts[j], counts[i]
    else:
        counts[j], counts[i] = counts[j] + counts[i], 0
    return counts


@pytest.mark.parametrize("spread", ["swap", "zero"])
def test_resume_refuses_pull_counts_moved_between_rows(breast_cancer_small, tmp_path, spread):
    from tdshap.methods.checkpoint.files import write_checkpoint

    # the total still matches the rounds, but a row's rewards spread over [low, high] with
    # sum of squares m2 took more pulls than its edited count; resumed, its mean weighed
    # as if from other pulls and its interval narrowed by pulls it never had
    d = breast_cancer_small
    path = tmp_path / "run.tdshap"
    _fit(d, max_iter=6, checkpoint=path)
    meta, arrays = read_checkpoint(path)
    meta = {k: v for k, v in meta.items() if k not in ("format", "version")}
    moved = _move_pulls(arrays["counts"], arrays["m2"], spread)
    assert moved.sum() == arrays["counts"].sum() and arrays["m2"].max() > 0
    write_checkpoint(path, meta, {**arrays, "counts": moved})
    with pytest.raises(ValueError, match=r"run.tdshap' is damaged or was edited: .*'counts'"):
        _fit(d, max_iter=8, resume=path)
    write_checkpoint(path, meta, arrays)  # as saved: resumed
    _same_run(_fit(d, max_iter=8, resume=path), _fit(d, max_iter=8))


def test_resume_input_errors(breast_cancer_small, tmp_path):
    d = breast_cancer_small
    args = (d.X_train, d.y_train, d.X_val, d.y_val)
    with pytest.raises(ValueError, match=r"resume=.*no such checkpoint"):
        _model(resume=tmp_path / "missing.tdshap").fit(*args)
    with pytest.raises(ValueError, match="checkpoint="):
        _model(resume=True).fit(*args)
    # a folder, a pipe, a link to nothing: there, but "no such checkpoint file" said not
    pipe, dangling = tmp_path / "pipe.tdshap", tmp_path / "dangling.tdshap"
    os.mkfifo(pipe)
    dangling.symlink_to(tmp_path / "nowhere")
    for odd in (tmp_path, pipe, dangling):
        with pytest.raises(ValueError, match=r"is not a regular file \(a folder, a pipe"):
            _model(resume=odd).fit(*args)
    junk = tmp_path / "junk.tdshap"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a tdshap checkpoint"):
        _model(resume=junk).fit(*args)
    with pytest.raises(ValueError, match="checkpoint_every"):
        _model(checkpoint=junk, checkpoint_every=-1).fit(*args)
    # pathlib's "expected str, bytes or os.PathLike object, not int"; "" was the working
    # folder ("is an existing directory")
    for odd in (3, b"run.tdshap", ""):
        with pytest.raises(ValueError, match=rf"checkpoint={odd!r} must be a file's path "
                                             r"\(a str or a Path"):
            _model(checkpoint=odd).fit(*args)
    # resume=True without a file yet starts afresh, says so, and creates the folder
    path = tmp_path / "new" / "run.tdshap"
    fresh = _fit(d, max_iter=3, checkpoint=path, resume=True)
    _same_run(fresh, _fit(d, max_iter=3))
    assert fresh.result_.extra["resume"] == f"started afresh: no checkpoint at {path} yet"
    assert "resume" not in _fit(d, max_iter=3).result_.extra  # not asked: not reported
    again = _fit(d, max_iter=3, checkpoint=path, resume=True)
    assert again.result_.extra["resume"] == f"continued from {path}"
    assert _fit(d, max_iter=3, resume=path).result_.extra["resume"] == f"continued from {path}"


_CHILD = textwrap.dedent("""
    import sys
    from sklearn.tree import DecisionTreeClassifier
    from tdshap import TDShap
    from tdshap.app.demo import breast_cancer

    d = breast_cancer(seed=0, sizes=(60, 60, 100))
    TDShap(DecisionTreeClassifier(max_depth=3, random_state=0), "accuracy", n_min=10, k=5,
           max_iter={max_iter}, random_state=5, checkpoint=sys.argv[1],
           checkpoint_every=0).fit(d.X_train, d.y_train, d.X_val, d.y_val)
""")


@pytest.mark.slow
def test_sigkill_at_a_random_moment_then_resume_gives_the_uninterrupted_result(
        breast_cancer_small, tmp_path):
    d = breast_cancer_small
    max_iter = 150
    kill_after = int(np.random.default_rng().integers(0, max_iter // 3))  # rounds done
    path = tmp_path / "run.tdshap"
    child = subprocess.Popen([sys.executable, "-c", _CHILD.format(max_iter=max_iter), str(path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while child.poll() is None and time.monotonic() < deadline:
            if path.exists() and checkpoint_info(path)["rounds"] >= kill_after:
                break
            time.sleep(0.005)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL, child.stderr.read().decode()
    info = checkpoint_info(path)
    assert not info["finished"] and info["rounds"] < max_iter
    kw = dict(max_iter=max_iter, atol=None, atol_window=10)
    resumed = _fit(d, checkpoint=path, resume=path, **kw)
    _same_run(resumed, _fit(d, **kw))
    assert checkpoint_info(path)["finished"]


@pytest.mark.parametrize("interrupt_at", [3, 14, 22])  # chains: mid-init, 1st round, 6th
def test_ctrl_c_mid_round_saves_the_state_before_it(breast_cancer_small, tmp_path, monkeypatch,
                                                    interrupt_at):
    from tdshap import Utility

    d = breast_cancer_small
    kw = dict(n_blocks=2, max_iter=12)
    expected = _fit(d, **kw)
    path = tmp_path / "run.tdshap"
    calls = []
    original = Utility.evaluate_chain

    def interrupted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == interrupt_at:  # the chain before it in the batch was fitted
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Utility, "evaluate_chain", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _fit(d, checkpoint=path, checkpoint_every=1e9, **kw)  # only the last-gasp save
    monkeypatch.setattr(Utility, "evaluate_chain", original)
    assert not checkpoint_info(path)["finished"]
    _same_run(_fit(d, checkpoint=path, resume=True, **kw), expected)


# -- the checkpoint path: only a new path or an earlier checkpoint is written -----
def _user_things(tmp_path):
    """What a user may have at the path given as checkpoint=, by name: (path, its bytes)."""
    csv = tmp_path / "data.csv"
    csv.write_bytes(b"a,b\n1,2\n")
    archive = tmp_path / "notes.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("notes.txt", "mine")
    arrays = tmp_path / "arrays.npz"
    np.savez(arrays, x=np.arange(3))
    other = tmp_path / "other.npz"  # a tdshap metadata entry, of another format
    blob = np.frombuffer(b'{"format": "tdshap.ValuationResult"}', dtype=np.uint8)
    np.savez(other, __meta__=blob)
    folder = tmp_path / "folder"
    folder.mkdir()
    link = tmp_path / "link.tdshap"
    link.symlink_to(csv)
    dangling = tmp_path / "dangling.tdshap"
    dangling.symlink_to(tmp_path / "nowhere.csv")
    return {p.name: p for p in (csv, archive, arrays, other, folder, link, dangling)}


def _snapshot(folder):
    return {p.name: (os.readlink(p) if p.is_symlink() else None,
                     p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in folder.iterdir()}


def _quick_methods():
    from sklearn.linear_model import LogisticRegression

    from tdshap import SequentialRemoval, TMCShapley

    return {
        "TDShap": lambda **kw: _model(**kw),
        "TMCShapley": lambda **kw: TMCShapley(LogisticRegression(), "accuracy",
                                              max_permutations=2, random_state=0, **kw),
        "SequentialRemoval": lambda **kw: SequentialRemoval(_model(), step=5, max_remove=5,
                                                            **kw),
    }


@pytest.mark.parametrize("method", ["TDShap", "TMCShapley", "SequentialRemoval"])
@pytest.mark.parametrize("resume", [None, True])
def test_a_checkpoint_path_holding_anything_but_a_checkpoint_is_refused_before_any_work(
        breast_cancer_small, tmp_path, monkeypatch, method, resume):
    from tdshap import SequentialRemoval
    from tdshap.methods.base import BaseValuation

    d = breast_cancer_small
    things = _user_things(tmp_path)
    before = _snapshot(tmp_path)
    for where in (BaseValuation, SequentialRemoval):  # utility built / stage run: work began
        monkeypatch.setattr(where, "_make_utility" if where is BaseValuation else "_stage",
                            lambda *a, **k: pytest.fail("the run began its work"))
    make = _quick_methods()[method]
    for name, path in things.items():
        what = {"folder": "directory", "link.tdshap": "symbolic link",
                "dangling.tdshap": "symbolic link"}.get(name, "file")
        with pytest.raises(ValueError, match=rf"^checkpoint {str(path)!r} is an existing "
                           rf"{what} that is not a tdshap checkpoint: choose a new path"):
            make(checkpoint=path, resume=resume).fit(d.X_train, d.y_train, d.X_val, d.y_val)
    assert _snapshot(tmp_path) == before  # nothing written, replaced or left behind


@pytest.mark.parametrize("method", ["TDShap", "TMCShapley", "SequentialRemoval"])
def test_a_checkpoint_path_whose_folder_cannot_be_made_is_refused_before_any_work(
        breast_cancer_small, tmp_path, monkeypatch, method):
    # a file on the way failed inside pathlib's mkdir (FileExistsError), a link to nothing
    # too, after the checks and from deep inside
    from tdshap import SequentialRemoval
    from tdshap.methods.base import BaseValuation

    d = breast_cancer_small
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    before = _snapshot(tmp_path)
    for where in (BaseValuation, SequentialRemoval):  # utility built / stage run: work began
        monkeypatch.setattr(where, "_make_utility" if where is BaseValuation else "_stage",
                            lambda *a, **k: pytest.fail("the run began its work"))
    make = _quick_methods()[method]
    for path, why in [(tmp_path / "notes.txt" / "sub" / "run.tdshap",
                       f"{tmp_path / 'notes.txt'} is a file, not a folder"),
                      (tmp_path / "gone" / "run.tdshap",
                       f"{tmp_path / 'gone'} is a link to {tmp_path / 'nowhere'}, which does "
                       "not exist")]:
        with pytest.raises(ValueError, match=rf"^checkpoint {re.escape(repr(str(path)))} "
                           rf"cannot be saved: {re.escape(why)}; choose another path\.$"):
            make(checkpoint=path).fit(d.X_train, d.y_train, d.X_val, d.y_val)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("method", ["TDShap", "TMCShapley", "SequentialRemoval"])
def test_a_file_put_at_the_checkpoint_path_during_a_run_is_kept(
        breast_cancer_small, tmp_path, monkeypatch, method):
    from tdshap.methods.checkpoint import files

    d = breast_cancer_small
    path = tmp_path / "run.tdshap"
    user = b"id,label\n1,cat\n"
    saved = files.write_checkpoint
    saves = []

    def save_then_user_moves_in(where, meta, arrays):
        saves.append(where)
        saved(where, meta, arrays)
        if len(saves) == 1:  # between two saves, the user writes their own file there
            (tmp_path / "mine.csv").write_bytes(user)
            os.replace(tmp_path / "mine.csv", where)

    monkeypatch.setattr(files, "write_checkpoint", save_then_user_moves_in)
    make = _quick_methods()[method]
    if method == "SequentialRemoval":  # it saves after every stage: two stages, two saves
        from tdshap import SequentialRemoval

        def make(**kw):
            kw.pop("checkpoint_every", None)
            return SequentialRemoval(_model(), step=5, max_remove=10, random_state=0, **kw)
    with pytest.warns(RuntimeWarning, match=r"is now a file that is not a tdshap checkpoint: "
                      r"it appeared during the run and is left as it is"):
        run = make(checkpoint=path, checkpoint_every=0).fit(d.X_train, d.y_train,
                                                            d.X_val, d.y_val)
    assert len(saves) == 1 and path.read_bytes() == user  # no later save replaced it
    plain = make().fit(d.X_train, d.y_train, d.X_val, d.y_val)
    np.testing.assert_array_equal(run.result_.values, plain.result_.values)


def test_a_fresh_run_overwrites_an_earlier_checkpoint_but_not_through_a_link(
        breast_cancer_small, tmp_path):
    d = breast_cancer_small
    path = tmp_path / "run.tdshap"
    _fit(d, max_iter=3, checkpoint=path)
    _fit(d, max_iter=5, checkpoint=path)  # a fresh run (no resume) starts the file anew
    assert checkpoint_info(path)["rounds"] == 5
    # saving renames a file over the link itself, leaving the file it names stale
    link = tmp_path / "latest.tdshap"
    link.symlink_to(path)
    saved = path.read_bytes()
    with pytest.raises(ValueError, match="symbolic link that is not a tdshap checkpoint"):
        _fit(d, max_iter=5, checkpoint=link, resume=True)
    assert link.is_symlink() and path.read_bytes() == saved


@pytest.mark.parametrize(("field", "value", "words"), [
    ("rounds", "lots", "field 'rounds' is 'lots'; it must be a whole number from 0"),
    ("rounds", -3, "field 'rounds' is -3"),
    ("rounds", 10**40, "it must be a whole number from 0 to 2**63 - 1"),
    ("elapsed", [1, 2], "field 'elapsed' is [1, 2]; it must be a finite number"),
    ("elapsed", float("nan"), "field 'elapsed' is nan"),
    ("saved_at", True, "field 'saved_at' is True"),
    ("finished", "yes", "field 'finished' is 'yes', not true/false"),
    ("algorithm", {"__class__": "os.system"}, "field 'algorithm' is {'__class__': "),
    ("settings", "x" * 10**6, "field 'settings' is 'xxxxxxxxxxxx...xxxxxxxxxxxxx', not"),
    ("counters", {"n_fits": -1}, "field 'n_fits' is -1"),
    ("counters", {"first_error": 7}, "counter 'first_error' is 7, not a message"),
    ("counters", [1], "field 'counters' is [1], not a record"),
    ("origin", "x", "field 'origin' is 'x', not a record"),
])
def test_checkpoint_info_refuses_odd_fields(tmp_path, field, value, words):
    # it returned whatever the file held: a string for rounds, a list for elapsed, a
    # megabyte of text, for the application to show or compute with
    import json

    from tdshap.methods.checkpoint.files import FORMAT, FORMAT_VERSION, CheckpointError

    def crafted(meta: dict) -> None:  # json's own text: NaN and huge numbers as written
        text = json.dumps({"format": FORMAT, "version": FORMAT_VERSION, **meta})
        with open(path, "wb") as fh:
            np.savez(fh, __meta__=np.frombuffer(text.encode(), dtype=np.uint8))

    path = tmp_path / "run.tdshap"
    meta = {"algorithm": "tdshap", "finished": False, "rounds": 2, "elapsed": 1.5,
            "settings": {"k": 5}, "counters": {"n_fits": 3}, "saved_at": 1.0}
    crafted({"algorithm": "tdshap", "rounds": 2})
    assert checkpoint_info(path)["rounds"] == 2  # a sound file (other fields left out)
    crafted({**meta, field: value})
    with pytest.raises(CheckpointError) as caught:
        checkpoint_info(path)
    message = str(caught.value)
    assert message.startswith(f"checkpoint {str(path)!r} is damaged or was edited: ")
    assert words in message and len(message) < 300, message


def test_an_origin_is_saved_beside_the_fingerprints_and_never_compared(
        breast_cancer_small, tmp_path):
    # an application records where the rows came from, to explain a refused resume in its
    # own terms (tdshap clean: the files and the seed of their split); a checkpoint without
    # one (every checkpoint before it) is read and resumed as before
    from tdshap.methods.checkpoint.files import CheckpointDataError

    d = breast_cancer_small
    path = tmp_path / "run.tdshap"
    _fit(d, max_iter=2, checkpoint=path)
    assert checkpoint_info(path)["origin"] is None
    m = _model(max_iter=4, checkpoint=path, resume=True)
    m.checkpoint_origin = {"files": "abc", "options": {"seed": 0}}
    assert "checkpoint_origin" not in m.get_params()  # not a setting: resuming does not compare it
    m.fit(d.X_train, d.y_train, d.X_val, d.y_val)
    _same_run(m, _fit(d, max_iter=4))
    assert checkpoint_info(path)["origin"] == {"files": "abc", "options": {"seed": 0}}
    y = d.y_train.copy()
    y[0] = 1 - y[0]
    with pytest.raises(CheckpointDataError, match="different data"):
        _model(max_iter=6, resume=path).fit(d.X_train, y, d.X_val, d.y_val)


def test_a_resumed_first_pass_is_held_to_what_is_left_of_the_time_budget(tmp_path,
                                                                          monkeypatch):
    # a resume in the first pass skipped the budget check (only fresh runs had it), and the
    # first pass cannot stop part-way: it ran on past the budget
    import pandas as pd
    from sklearn.datasets import make_classification

    from tdshap import Utility
    from tdshap.app.harmful import prepare
    from tdshap.app.plan import plan, run
    from tdshap.app.run import TDShapOptions
    from tdshap.methods.checkpoint.files import write_checkpoint

    X, y = make_classification(160, 5, random_state=0)
    data = prepare(pd.DataFrame(X), pd.Series(y), task="classification", seed=0)
    path = tmp_path / "run.tdshap"
    settings = dict(model=DecisionTreeClassifier(max_depth=3, random_state=0),
                    method="tdshap", checkpoint=path, checkpoint_every=1e9)
    calls = []
    original = Utility.evaluate_chain

    def interrupted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 40:  # the estimate's trial chains and a few first-pass blocks
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Utility, "evaluate_chain", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(data, options=TDShapOptions(k=2, n_min=2, max_iter=2), **settings)
    monkeypatch.setattr(Utility, "evaluate_chain", original)
    info = checkpoint_info(path)
    assert 0 < info["init_done"] < info["n_init_blocks"], info

    def planned(budget: float):
        return plan(data, options=TDShapOptions(k=2, n_min=2, max_iter=2, time_budget=budget),
                    resume=True, **settings)

    with pytest.raises(ValueError, match=r"what is left of the first pass \([\d,]+ "
                       r"evaluations: resuming in the first pass, \d+ of \d+ blocks done\) "
                       r"needs .*, more than the .* s left of `time_budget` 1e-09 s"):
        planned(1e-9)
    assert planned(1e6).estimate.resumed.startswith("resuming in the first pass")
    # the budget counts the seconds spent before the checkpoint
    meta, arrays = read_checkpoint(path)
    meta = {k: v for k, v in meta.items() if k not in ("format", "version")}
    write_checkpoint(path, {**meta, "elapsed": 1e6 - 1e-9}, arrays)
    with pytest.raises(ValueError, match=r"\(1e\+06 s were spent before the checkpoint\)"):
        planned(1e6)
