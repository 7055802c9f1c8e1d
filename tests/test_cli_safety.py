"""Issue 13, case by case, through the real command: nothing runs that the user did not
mean, no user file is touched, outputs appear whole or not at all.

Every refused case asserts the same promise: exit status 2, one ``Error:`` line on
stderr, no traceback, the working folder byte for byte as it was (no file created,
changed or removed), and no ``PWNED`` file.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_wine

from tdshap.methods.checkpoint.files import read_checkpoint, write_checkpoint

# the paper's TDShap (checkpointed); publishing, locks and refusals are one code path
FAST = ["--method", "tdshap", "--max-iter", "1", "--no-progress"]


def tdshap(*args: str | Path, cwd: Path, env: dict[str, str] | None = None,
           launcher: Path | None = None) -> subprocess.CompletedProcess[str]:
    head = [sys.executable, str(launcher)] if launcher else [sys.executable, "-m",
                                                             "tdshap.app.cli"]
    return subprocess.run([*head, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=180, env=env)


def snapshot(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder`` with the hash of its bytes."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def refused(res: subprocess.CompletedProcess[str], *words: str) -> str:
    """Exit status 2, one ``Error:`` line naming the problem, no traceback."""
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2, res.stderr
    assert len(lines) == 1 and lines[0].startswith("Error: "), res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder holding ``wine.csv`` (scikit-learn's wine data) and a ``victim`` folder."""
    load_wine(as_frame=True).frame.to_csv(tmp_path / "wine.csv", index=False)
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "keep.txt").write_text("mine")
    return tmp_path


def check_refused(work: Path, *args: str, words: tuple[str, ...] = ()) -> str:
    before = snapshot(work)
    line = refused(tdshap(*args, cwd=work), *words)
    assert snapshot(work) == before  # nothing created, changed or removed
    assert not (work / "PWNED").exists()
    return line


# -- 1. code execution through --model and --params -----------------------------------
@pytest.mark.parametrize(("model", "params", "words"), [
    ("os:system", '{"command": "touch PWNED"}', ("package 'os' is not one",)),
    ("shutil:rmtree", '{"path": "victim"}', ("package 'shutil'",)),
    ("subprocess:getoutput", '{"cmd": "touch PWNED"}', ("package 'subprocess'",)),
    ("builtins:eval", '{"source": "open(\'PWNED\', \'w\')"}', ("package 'builtins'",)),
    ("sklearn:tree", "{}", ("is a module, not a class",)),
    ("sklearn.datasets:load_iris", '{"return_X_y": true}', ("is a function, not a class",)),
    ("tdshap.app.cli:main", "{}", ("not a class",)),
    ("sklearn.utils:Bunch", '{"a": 1}', ("not a scikit-learn estimator class",)),
    ("tdshap.methods:TDShap", "{}", ("not a scikit-learn estimator class",)),
])
def test_model_import_path_runs_nothing(work: Path, model: str, params: str,
                                        words: tuple[str, ...]) -> None:
    line = check_refused(work, "clean", "wine.csv", "--target", "target", "--model", model,
                         "--params", params, "--out", "out", words=words)
    assert "--model" in line or "estimator" in line


def test_allowing_a_package_still_refuses_its_functions(work: Path) -> None:
    check_refused(work, "clean", "wine.csv", "--target", "target", "--allow-import", "os",
                  "--model", "os:system", "--params", '{"command": "touch PWNED"}',
                  "--out", "out", words=("is a builtin_function_or_method, not a class",))


@pytest.mark.parametrize("params", ['{"n_neighbors": {"__class__": "x"}}',
                                    '{"weights": {"a": 1}}'])
def test_params_are_json_scalars_and_lists_only(work: Path, params: str) -> None:
    check_refused(work, "value", "wine.csv", "--target", "target", "--params", params,
                  "--out", "out", words=("--params", "not accepted"))


@pytest.mark.parametrize(("params", "words"), [
    ('{"n_neighbors": NaN}', ("--params holds NaN",)),
    ('{"max_depth": Infinity}', ("--params holds Infinity",)),
    ('{"n_neighbors": 1e400}', ("'n_neighbors': inf is not a finite number",)),
    ('{"n_neighbors": 3, "n_neighbors": 4}', ("'n_neighbors' 2 times",)),
    # Python's own "Exceeds the limit (4300 digits) for integer string conversion"
    ('{"n_neighbors": 1' + "0" * 5000 + "}", ("--params holds a whole number of 5,001 "
                                              "digits",)),
    ('{"weights": ' + "[" * 5000 + "]" * 5000 + "}", ("too deeply",)),
    ('{"weights": ' + "[" * 30 + "]" * 30 + "}", ("'weights': its lists nest more than 20 "
                                                  "deep",)),
], ids=["nan", "infinity", "overflow", "repeated", "digits", "recursion", "deep"])
def test_params_that_no_model_takes(work: Path, params: str, words: tuple[str, ...]) -> None:
    check_refused(work, "value", "wine.csv", "--target", "target", "--params", params,
                  "--out", "out", *FAST, words=words)


@pytest.mark.parametrize(("params", "message"), [
    ('{"a": [1, {"b": 1}]}', "'a': in its list, dict values are not accepted;"),
    ('{"a": [[1e400]]}', "'a': in its list, inf is not a finite number;"),
    ('{"a": ' + "[" * 21 + "]" * 21 + "}", "'a': its lists nest more than 20 deep;"),
])
def test_a_params_list_is_refused_for_what_it_holds_not_for_being_a_list(
        params: str, message: str) -> None:
    # a list holding a dict or inf, or nested too deep, was refused as "list values are
    # not accepted; give ... or lists of them", which denied what it offered
    from tdshap.app.models import parse_params

    with pytest.raises(ValueError, match=re.escape(message)):
        parse_params(params)
    assert parse_params('{"a": ' + "[" * 20 + "1" + "]" * 20 + "}")  # 20 deep is taken


def test_params_must_be_the_estimators_own(work: Path) -> None:
    check_refused(work, "value", "wine.csv", "--target", "target", "--model",
                  "sklearn.tree:DecisionTreeClassifier", "--params", '{"command": "ls"}',
                  "--out", "out", words=("unknown parameter 'command'", "max_depth"))


# -- 2. the user's input and files are never written over --------------------------------
def test_input_named_like_an_output_in_out_is_refused(work: Path) -> None:
    (work / "cleaned.csv").write_bytes((work / "wine.csv").read_bytes())
    check_refused(work, "clean", "cleaned.csv", "--target", "target", "--out", ".", *FAST,
                  words=("holds files tdshap did not write", "--force"))
    check_refused(work, "clean", "cleaned.csv", "--target", "target", "--out", ".", "--force",
                  *FAST, words=("input file cleaned.csv is inside the output folder",))


def test_values_table_as_input_is_not_replaced(work: Path) -> None:
    frame = pd.read_csv(work / "wine.csv")
    frame.to_csv(work / "values.csv", index=False)
    check_refused(work, "value", "values.csv", "--target", "target", "--out", ".", "--force",
                  *FAST, words=("inside the output folder",))


def test_input_given_through_a_link_in_out_named_like_an_output_is_not_replaced(
        work: Path) -> None:
    # the link's target lies outside --out, so only the target was checked, and --force
    # replaced the link (the input as the user named it) with the values' plot
    (work / "out").mkdir()
    (work / "out" / "values.png").symlink_to(work / "wine.csv")
    (work / "out" / "notes.txt").write_text("the user's own")
    check_refused(work, "value", "out/values.png", "--target", "target", "--out", "out",
                  "--force", *FAST, words=("input file out/values.png is inside the output "
                                           "folder",))


@pytest.mark.parametrize("name", ["values.csv", "report.md", "run.tdshap"])
def test_a_users_own_file_in_out_is_not_replaced(work: Path, name: str) -> None:
    (work / "out").mkdir()
    (work / "out" / name).write_text("the user's own")
    check_refused(work, "value", "wine.csv", "--target", "target", "--out", "out", *FAST,
                  words=("holds files tdshap did not write", "--force"))


def test_a_manifest_cannot_claim_the_users_files(work: Path,
                                                  first_run: Callable[..., Path]) -> None:
    out = first_run("value")
    (out / "mine.txt").write_text("the user's own")
    manifest = json.loads((out / ".tdshap-manifest.json").read_text())
    manifest["files"].append("mine.txt")  # an edited manifest names the user's file
    (out / ".tdshap-manifest.json").write_text(json.dumps(manifest))
    check_refused(work, "value", "wine.csv", "--target", "target", "--out", "out", *FAST,
                  words=("mine.txt", "--force"))


@pytest.mark.parametrize("content", ["[]", '"files"', "null", "3"])
def test_a_manifest_that_is_not_an_object_is_no_manifest(work: Path, content: str) -> None:
    (work / "out").mkdir()
    (work / "out" / ".tdshap-manifest.json").write_text(content)
    (work / "out" / "mine.txt").write_text("the user's own")
    check_refused(work, "value", "wine.csv", "--target", "target", "--out", "out", *FAST,
                  words=("holds files tdshap did not write", "no tdshap manifest"))


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "deep"])
@pytest.mark.parametrize("name", [".tdshap-manifest.json", ".tdshap.lock"])
def test_a_manifest_or_lock_that_is_no_small_file_is_refused_promptly(
        work: Path, kind: str, name: str) -> None:
    # both were read whole, following links: a FIFO hung the run forever, a link to
    # /dev/zero filled memory ("unexpected MemoryError"), a deeply nested manifest was
    # "unexpected RecursionError"
    out = work / "out"
    out.mkdir()
    (out / "mine.txt").write_text("the user's own")
    path = out / name
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_text("[" * 100_000 + "]" * 100_000)
    args = ["value", "wine.csv", "--target", "target", "--out", "out", *FAST]
    if name == ".tdshap.lock":  # past the manifest check: the lock is read when it exists
        args.append("--force")
    res = subprocess.run([sys.executable, "-m", "tdshap.app.cli", *args], cwd=work,
                         capture_output=True, text=True, timeout=60)
    refused(res, *(("no tdshap manifest",) if name == ".tdshap-manifest.json" else
                   ("another tdshap run", "delete")))
    assert (out / "mine.txt").read_text() == "the user's own"
    assert path.is_symlink() if kind == "dev-zero" else path.exists()


@pytest.mark.parametrize(("option", "words"), [
    (["--jobs", "0"], ("--jobs 0",)),
    (["--jobs", "1000000000"], ("--jobs 1000000000", "more workers than joblib can start")),
    (["--jobs", "-99999"], ("--jobs -99999 counts back past every core",)),
    (["--seed", "-1"], ("--seed",)),
    (["--trials", "100000000000"], ("--trials", "1<=x<=10000")),
    (["--seed", "4294967296"], ("--seed", "0<=x<=4294967295")),
    (["--seed", "4294967295", "--trials", "2"], ("--seed", "at most 4294967294")),
    (["--out", "victim"], ("holds files tdshap did not write", "--force")),
    (["--out", "wine.csv"], ("is a file",)),
    (["--out", "/proc/demo"], ("system folder",)),
], ids=["no-jobs", "a-billion-jobs", "jobs-past-every-core", "negative-seed", "huge-trials",
        "seed-past-2**32",
        "last-seed-past-2**32", "users-folder", "a-file", "proc"])
def test_demo_refuses_in_one_line_before_any_work(work: Path, option: list[str],
                                                  words: tuple[str, ...]) -> None:
    # it wrote into any --out (the user's files of its names replaced) and ended bad options
    # with joblib's or numpy's traceback
    check_refused(work, "demo", "--trials", "1", "--jobs", "1", "--no-progress", *option,
                  words=words)


@pytest.mark.parametrize(("args", "words"), [
    (["nonexist"], ("No such command 'nonexist'",)),
    (["cleen", "wine.csv"], ("No such command 'cleen'", "Did you mean 'clean'?")),
    (["--bogus", "clean"], ("No such option '--bogus'",)),
])
def test_an_unknown_command_or_option_of_the_group_is_one_line(
        work: Path, args: list[str], words: tuple[str, ...]) -> None:
    # the group's own errors came with the usage line and a hint: three lines, not one
    check_refused(work, *args, words=words)


def test_force_writes_beside_other_files_and_keeps_them(work: Path) -> None:
    res = tdshap("value", "wine.csv", "--target", "target", "--out", ".", "--force", *FAST,
                 cwd=work)
    assert res.returncode == 0, res.stderr
    assert (work / "victim" / "keep.txt").read_text() == "mine"
    assert (work / "values.csv").is_file()
    listed = json.loads((work / ".tdshap-manifest.json").read_text())["files"]
    assert "wine.csv" not in listed and "values.csv" in listed


# -- 3. one run at a time per --out ---------------------------------------------------------
@pytest.fixture(scope="module")
def finished_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The ``out`` folders of one ``clean`` and one ``value`` run on the wine data (made once)."""
    base = tmp_path_factory.mktemp("runs")
    load_wine(as_frame=True).frame.to_csv(base / "wine.csv", index=False)
    outs = {}
    for command in ("clean", "value"):
        res = tdshap(command, "wine.csv", "--target", "target", "--out", command, *FAST,
                     cwd=base)
        assert res.returncode == 0, res.stderr
        outs[command] = base / command
    return outs


@pytest.fixture
def first_run(work: Path, finished_runs: dict[str, Path]) -> Callable[..., Path]:
    """Copy a finished run's folder to ``work/out``, as if it had just run there."""

    def copy(command: str = "clean") -> Path:
        shutil.copytree(finished_runs[command], work / "out", symlinks=True)
        return work / "out"

    return copy


def test_a_second_run_refuses_while_the_first_holds_the_lock(
        work: Path, first_run: Callable[..., Path]) -> None:
    out = first_run()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (out / ".tdshap.lock").write_text(str(sleeper.pid))  # a live run's lock
        check_refused(work, "value", "wine.csv", "--target", "target", "--out", "out", *FAST,
                      words=("another tdshap run", str(sleeper.pid)))
    finally:
        sleeper.kill()
        sleeper.wait()
    # the process is gone: its lock is stale and taken over, and a temporary file it left
    # mid-checkpoint, in its marked folder of temporaries, is its own, not the user's
    scratch = out / f".tdshap-new-tmp-{sleeper.pid}"
    scratch.mkdir()
    (scratch / ".tdshap-staging").touch()
    (scratch / f".run.tdshap.tmp-{sleeper.pid}").write_bytes(b"half a checkpoint")
    res = tdshap("value", "wine.csv", "--target", "target", "--out", "out", *FAST, cwd=work)
    assert res.returncode == 0, res.stderr
    assert not (out / ".tdshap.lock").exists()
    assert not scratch.exists()
    assert not [p for p in out.rglob("*") if ".tmp-" in p.name]


def test_killed_run_leaves_a_stale_lock_and_resumes_identically(work: Path) -> None:
    """SIGKILL once the first checkpoint (after the first pass) exists; resume takes over."""
    import signal
    import time

    # --method tdshap: the default method (thresholding Data-OOB) saves no checkpoint, so the
    # run finished unkilled and the test skipped
    args = ["value", "wine.csv", "--target", "target", "--model", "dtree", "--method", "tdshap",
            "--max-iter", "120", "--checkpoint-every", "0", "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-m", "tdshap.app.cli", *args, "--out", "out"],
                            cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (work / "out" / "run.tdshap").exists() and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if (work / "out" / "values.csv").exists():
        pytest.skip("the run finished before it could be killed")
    assert (work / "out" / ".tdshap.lock").read_text() == str(proc.pid)
    # the manifest the killed run left names its checkpoint only as being written
    manifest = json.loads((work / "out" / ".tdshap-manifest.json").read_text())
    assert manifest["files"] == [] and manifest["writing"] == ["run.tdshap"], manifest
    resumed = tdshap(*args, "--out", "out", "--resume", cwd=work)
    assert resumed.returncode == 0, resumed.stderr
    fresh = tdshap(*args, "--out", "fresh", cwd=work)
    assert fresh.returncode == 0, fresh.stderr
    out, fresh_out = work / "out", work / "fresh"
    assert (out / "values.csv").read_bytes() == (fresh_out / "values.csv").read_bytes()
    assert not (out / ".tdshap.lock").exists()


# -- 4. outputs published as one set ---------------------------------------------------
ENOSPC_LAUNCHER = """
import builtins, errno, sys

_open = builtins.open
MARK = sys.argv.pop(1)

class Full:
    def __init__(self, fh):
        self.fh = fh
    def write(self, data):
        self.fh.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")
    def __getattr__(self, name):
        return getattr(self.fh, name)
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self.fh.close()

def full_open(file, mode="r", *args, **kwargs):
    fh = _open(file, mode, *args, **kwargs)
    if MARK in str(file) and any(c in mode for c in "wax"):
        return Full(fh)
    return fh

builtins.open = full_open
from tdshap.app.cli import main
sys.argv[0] = "tdshap"
main()
"""


@pytest.fixture
def full_disk(tmp_path: Path) -> Path:
    launcher = tmp_path / "full_disk.py"
    launcher.write_text(ENOSPC_LAUNCHER)
    return launcher


def test_full_disk_while_publishing_leaves_the_previous_set(
        work: Path, full_disk: Path, first_run: Callable[..., Path]) -> None:
    first_run()
    before = snapshot(work)
    # the staging folder beside --out: not the run's folder of temporaries inside it
    res = tdshap(".out.tdshap-new-", "clean", "wine.csv", "--target", "target", "--out", "out",
                 "--seed", "1", *FAST, cwd=work, launcher=full_disk)
    refused(res, "cannot write the outputs to out: the disk is full (No space left on "
            "device): free space on it, or write to another disk",
            "previous contents of the folder are unchanged")
    after = snapshot(work)
    # the run's own checkpoint moves on; every published output is as it was
    assert {k: v for k, v in after.items() if k != "out/run.tdshap"} == \
        {k: v for k, v in before.items() if k != "out/run.tdshap"}
    assert not [p for p in work.rglob("*") if "tdshap-new" in p.name or ".tmp-" in p.name]


SLOW_PUBLISH_LAUNCHER = """
import sys, time
from pathlib import Path
import tdshap.app.outdir as outdir

MARK = Path(sys.argv.pop(1))
_exchange = outdir.exchange

def slow(a, b):  # the staging folder is complete beside --out: the moment of publishing
    MARK.write_text("publishing")
    time.sleep(120)
    return _exchange(a, b)

outdir.exchange = slow
from tdshap.app.cli import main
sys.argv[0] = "tdshap"
main()
"""


def test_sigterm_while_publishing_leaves_the_previous_set_and_no_staging(
        work: Path, tmp_path_factory: pytest.TempPathFactory,
        first_run: Callable[..., Path]) -> None:
    """SIGTERM (kill, a scheduler's time limit) ended the process where it stood: the
    complete staging folder stayed beside --out, outside it, and the lock inside it; it now
    ends the run as Ctrl-C does, each of them removed."""
    import signal
    import time

    first_run()
    before = snapshot(work)
    side = tmp_path_factory.mktemp("launcher")
    launcher, mark = side / "slow.py", side / "publishing"
    launcher.write_text(SLOW_PUBLISH_LAUNCHER)
    proc = subprocess.Popen(
        [sys.executable, str(launcher), str(mark), "clean", "wine.csv", "--target", "target",
         "--out", "out", "--seed", "1", *FAST], cwd=work, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):
            if mark.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert mark.exists(), proc.communicate()[1]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode != 0 and "Traceback" not in err, err
    after = snapshot(work)
    assert {k: v for k, v in after.items() if k != "out/run.tdshap"} == \
        {k: v for k, v in before.items() if k != "out/run.tdshap"}


def test_the_command_called_in_process_puts_back_the_callers_sigterm_handler() -> None:
    # main() run by click's CliRunner (or an app) left the caller's SIGTERM raising
    # KeyboardInterrupt after the command had ended
    import signal

    from click.testing import CliRunner

    from tdshap.app.cli import main

    before = signal.getsignal(signal.SIGTERM)
    res = CliRunner().invoke(main, ["demo", "--trials", "0"])
    assert res.exit_code == 2 and "--trials" in res.output
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_writer_that_fails_leaves_no_staging_folder(tmp_path: Path) -> None:
    from tdshap.app.outdir import OutputFolder

    folder = OutputFolder(tmp_path / "out", known=("values.csv",))
    folder.check([], ["values.csv"])
    folder.claim()

    def write(stage: Path) -> list[str]:
        (stage / "values.csv").write_text("half a set")
        raise ValueError("the plot failed")  # not an OSError: it was left beside --out

    with pytest.raises(ValueError, match="the plot failed"):
        folder.publish(write, {})
    folder.release()
    assert list(tmp_path.iterdir()) == []  # neither --out (nothing published) nor a staging


def test_a_file_put_into_out_during_the_run_is_kept(tmp_path: Path) -> None:
    """The folder was swapped whole at publish time: a file the user saved into --out while
    the run worked went with the old set and was deleted."""
    from tdshap.app.outdir import OutputError, OutputFolder

    def write(stage: Path) -> list[str]:
        (stage / "values.csv").write_text("new")
        return ["values.csv"]

    out = tmp_path / "out"
    for fresh in (True, False):  # a folder this run creates, and an earlier run's
        folder = OutputFolder(out, known=("values.csv",))
        folder.check([], ["values.csv"])
        folder.claim()
        (out / "notes.txt").write_text("mine")
        folder.publish(write, {})
        folder.release()
        assert (out / "notes.txt").read_text() == "mine", fresh
        assert (out / "values.csv").read_text() == "new"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging left
        (out / "notes.txt").unlink()
    # one with an output's name is not replaced without --force: nothing is written
    folder = OutputFolder(out, known=("values.csv", "report.md"))
    folder.check([], ["values.csv", "report.md"])
    folder.claim()
    (out / "report.md").write_text("my report")

    def write_both(stage: Path) -> list[str]:
        (stage / "report.md").write_text("tdshap's")
        return [*write(stage), "report.md"]

    with pytest.raises(OutputError, match=r"report\.md appeared in the output folder"):
        folder.publish(write_both, {})
    folder.release()
    assert (out / "report.md").read_text() == "my report"
    assert (out / "values.csv").read_text() == "new"  # the previous set, unchanged
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_users_file_at_the_checkpoint_path_is_not_listed_as_ours(tmp_path: Path) -> None:
    """The run stops checkpointing when a file not its own appears at run.tdshap; the
    manifest still listed it as the run's, so a later run could replace or remove it."""
    from tdshap.app.outdir import MANIFEST, OutputError, OutputFolder, read_manifest
    from tdshap.methods.checkpoint.files import is_checkpoint_file, write_checkpoint

    def write(stage: Path) -> list[str]:
        (stage / "values.csv").write_text("new")
        return ["values.csv"]

    def run(users: bool) -> None:
        folder = OutputFolder(out, keep=("run.tdshap",),
                              known=("values.csv", "run.tdshap"), kept_is_ours=is_checkpoint_file)
        folder.check([], ["values.csv"])
        folder.claim()
        (out / "run.tdshap").unlink(missing_ok=True)
        if users:
            (out / "run.tdshap").write_text("my notes")
        else:  # the run's own checkpoint is listed and kept
            write_checkpoint(out / "run.tdshap", {"algorithm": "test"}, {})
        folder.publish(write, {})
        folder.release()
        listed = read_manifest(out)
        assert listed is not None and ("run.tdshap" in listed) is not users, listed
        assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "run.tdshap", "values.csv"]

    out = tmp_path / "out"
    run(users=True)  # a folder the run creates
    assert (out / "run.tdshap").read_text() == "my notes"
    with pytest.raises(OutputError, match=r"not outputs of an earlier run: run\.tdshap"):
        OutputFolder(out, keep=("run.tdshap",), known=("values.csv", "run.tdshap")).check(
            [], ["values.csv"])  # it is the user's now: a next run does not take it
    (out / "run.tdshap").unlink()
    run(users=False)
    assert is_checkpoint_file(out / "run.tdshap")
    run(users=True)  # an earlier run's folder, its checkpoint replaced
    assert (out / "run.tdshap").read_text() == "my notes"


def test_the_manifest_at_claim_lists_only_what_is_there(tmp_path: Path) -> None:
    """It listed run.tdshap among the files as the run claimed the folder, before any
    checkpoint existed (and for runs that never write one). The checkpoint is named as
    what the run is writing: a run killed after saving it leaves a folder a later run
    takes up, and a user's file put at that name after the crash is not counted as ours."""
    from tdshap.app.outdir import LOCK, MANIFEST, OutputError, OutputFolder, read_manifest
    from tdshap.methods.checkpoint.files import is_checkpoint_file, write_checkpoint

    out = tmp_path / "out"

    def folder() -> OutputFolder:
        f = OutputFolder(out, keep=("run.tdshap",), known=("values.csv", "run.tdshap"),
                         kept_is_ours=is_checkpoint_file)
        f.check([], ["values.csv"])
        return f

    def killed(f: OutputFolder) -> None:  # SIGKILL: no publish, no release; its pid is gone
        (out / LOCK).write_text(str(2**22 + 1))
        f.locked = False

    first = folder()
    first.claim()
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["files"] == [] and manifest["writing"] == ["run.tdshap"], manifest
    assert not manifest["complete"] and read_manifest(out) == []
    write_checkpoint(out / "run.tdshap", {"algorithm": "test"}, {})
    killed(first)
    again = folder()  # the checkpoint the killed run saved is ours: taken up, not refused
    assert again.old_files == ["run.tdshap"]
    again.claim()
    assert json.loads((out / MANIFEST).read_text())["files"] == ["run.tdshap"]
    killed(again)
    (out / "run.tdshap").unlink()
    first = folder()
    first.claim()  # listed by the last claim, gone since: named as being written again
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["files"] == [] and manifest["writing"] == ["run.tdshap"], manifest
    (out / "run.tdshap").write_text("my notes")  # the run never saved one: not ours either
    killed(first)
    with pytest.raises(OutputError, match=r"not outputs of an earlier run: run\.tdshap"):
        folder()
    assert (out / "run.tdshap").read_text() == "my notes"


def test_full_disk_while_checkpointing_is_one_line(work: Path, full_disk: Path) -> None:
    before = snapshot(work)
    res = tdshap("run.tdshap", "value", "wine.csv", "--target", "target", "--out", "out",
                 *FAST, cwd=work, launcher=full_disk)
    # it said "cannot read or write: No space left on device": which file, and why not?
    refused(res, f"cannot write {work.resolve() / 'out' / 'run.tdshap'}: the disk is full (No "
            "space left on device): free space on it, or write to another disk.")
    leftovers = [p.name for p in (work / "out").iterdir()] if (work / "out").exists() else []
    assert not [n for n in leftovers if ".tmp-" in n or n == "run.tdshap"]
    assert {k: v for k, v in snapshot(work).items() if not k.startswith("out")} == before


def test_a_new_set_replaces_the_old_one_whole(work: Path,
                                              first_run: Callable[..., Path]) -> None:
    out = first_run("clean")
    assert (out / "cleaned.csv").exists() and (out / "curve.png").exists()
    res = tdshap("value", "wine.csv", "--target", "target", "--out", "out", *FAST, cwd=work)
    assert res.returncode == 0, res.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == [".tdshap-manifest.json", "report.md", "result.json", "run.tdshap",
                     "values.csv", "values.png"]  # no cleaned.csv or curve.png of the old set
    manifest = json.loads((out / ".tdshap-manifest.json").read_text())
    assert manifest["complete"] and sorted(manifest["files"]) == names[1:]
    assert not [p for p in work.iterdir() if "tdshap-new" in p.name]


# -- 5. checkpoints and result files are validated ----------------------------------------
def edit_checkpoint(path: Path, **changes: object) -> None:
    meta, arrays = read_checkpoint(path)
    for key, value in changes.items():
        if key.startswith("array_"):
            arrays[key[6:]] = value  # type: ignore[assignment]
        else:
            meta[key] = value
    meta = {k: v for k, v in meta.items() if k not in ("format", "version")}
    write_checkpoint(path, meta, arrays)


@pytest.mark.parametrize("changes", [
    {"init_done": -3}, {"init_done": 10**6}, {"rounds": 10**9}, {"rounds": -1},
    {"rng": {"bit_generator": "seed", "state": {}}},
    {"rng": {"bit_generator": "PCG64", "state": "x"}},
    {"elapsed": "soon"}, {"k": 0}, {"tau": None}, {"counters": {"n_fits": -5}},
    {"thresholds_set": "yes"}, {"array_counts": np.zeros(3, dtype=np.int64)},
    {"array_mu": np.full(134, np.nan)}, {"array_init_order": np.zeros(134, dtype=np.int64)},
    {"array_counts": np.full(134, 7, dtype=np.int64)},
    # degenerate generator states: numpy's bounded draws would loop forever on them
    {"rng": {"bit_generator": "PCG64", "state": {"state": 0, "inc": 0}, "has_uint32": 0,
             "uinteger": 0}},
    {"rng": {"bit_generator": "MT19937", "state": {"key": [0] * 624, "pos": 624}}},
    {"array_m2": np.full(134, -1.0)},
    # a pulled row's mean lies between its smallest and largest reward (NaN there ended in
    # "cannot convert float NaN to integer"; a range below the means was resumed)
    {"array_low": np.full(134, np.nan)}, {"array_high": np.full(134, -5.0)},
    # the auto tau is -eps: an edited one flagged rows by a threshold no setting gives
    {"tau": 5.0},
], ids=lambda c: "-".join(c))
def test_an_edited_checkpoint_is_refused_in_one_line(
        work: Path, changes: dict, first_run: Callable[..., Path]) -> None:
    first_run("value")
    edit_checkpoint(work / "out" / "run.tdshap", **changes)
    check_refused(work, "value", "wine.csv", "--target", "target", "--out", "out",
                  "--resume", "--method", "tdshap", "--max-iter", "2", "--no-progress",
                  words=("run.tdshap",))


class _Payload:
    def __reduce__(self) -> tuple:
        return (os.system, ("touch PWNED",))


def _deflated(b: bytes) -> bytes:
    """The same archive with its members compressed: what a zip bomb looks like."""
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(b)) as src, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    return out.getvalue()


@pytest.mark.parametrize("damage", [
    lambda b: b"", lambda b: b"PK\x03\x04 not a zip", lambda b: b"\x00" * 100,
    lambda b: b[: len(b) // 2], lambda b: pickle.dumps(_Payload()),
    lambda b: b'{"format": "tdshap.Checkpoint"}', _deflated,
], ids=["empty", "zip-magic", "zeros", "truncated", "pickle", "json", "deflated"])
def test_a_damaged_checkpoint_is_refused_in_one_line(
        work: Path, damage: Callable[[bytes], bytes], first_run: Callable[..., Path]) -> None:
    first_run("value")
    path = work / "out" / "run.tdshap"
    path.write_bytes(damage(path.read_bytes()))
    line = check_refused(work, "value", "wine.csv", "--target", "target", "--out", "out",
                         "--resume", *FAST, words=("not a tdshap checkpoint",))
    # neither numpy's advice to unpickle it nor a file left open
    assert "pickle" not in line and "warnings on the way" not in line


def test_checkpoint_every_and_the_first_checkpoint_after_initialisation(work: Path) -> None:
    from sklearn.neighbors import KNeighborsClassifier

    from tdshap import TDShap
    from tdshap.methods.stopping import MaxIterations, RunStatus

    path = work / "run.tdshap"

    class Watch(MaxIterations):
        def __init__(self, n: int) -> None:
            super().__init__(n)
            self.seen: list[bool] = []

        def check(self, status: RunStatus) -> bool:
            self.seen.append(path.exists())
            return super().check(status)

    X, y = load_wine(return_X_y=True)
    watch = Watch(2)
    TDShap(KNeighborsClassifier(), stopping=watch, checkpoint=path, checkpoint_every=1e9,
           random_state=0).fit(X[:120], y[:120], X[120:], y[120:])
    assert watch.seen[0]  # already saved when the first round is about to start
    help_text = tdshap("value", "--help", cwd=work).stdout
    assert "--checkpoint-every" in help_text


# -- 6. one line instead of a traceback ------------------------------------------------
FLAKY = """
import numpy as np
from sklearn.tree import DecisionTreeClassifier


class Flaky(DecisionTreeClassifier):
    '''Fails on one subset size in seven.'''

    def fit(self, X, y, *args, **kwargs):
        if len(X) % 7 == 3:
            raise RuntimeError(f"flaky on {len(X)} rows")
        return super().fit(X, y, *args, **kwargs)


class NaNSometimes(DecisionTreeClassifier):
    '''Predicts NaN after a fit on one subset size in seven.'''

    def fit(self, X, y, *args, **kwargs):
        self.nan_ = len(X) % 7 == 3
        return super().fit(X, y, *args, **kwargs)

    def predict(self, X):
        return np.full(len(X), np.nan) if self.nan_ else super().predict(X)


class NotSklearn:
    def fit(self, X, y):
        return self

    def predict(self, X):
        return np.zeros(len(X))
"""


@pytest.fixture
def flaky(work: Path) -> dict[str, str]:
    (work / "flaky_models.py").write_text(textwrap.dedent(FLAKY))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(work), *os.environ.get("PYTHONPATH", "").split(os.pathsep)])}


def test_failed_fits_are_counted_and_cleansing_falls_back(work: Path,
                                                           flaky: dict[str, str]) -> None:
    res = tdshap("clean", "wine.csv", "--target", "target", "--allow-import", "flaky_models",
                 "--model", "flaky_models:Flaky", "--max-failed-fraction", "0.5", "--out",
                 "out", *FAST, cwd=work, env=flaky)
    assert res.returncode == 0, res.stderr
    assert "failed fits (scored by the fallback): valuation" in res.stdout
    assert "cleansing" in res.stdout and "flaky on" in res.stdout
    report = (work / "out" / "report.md").read_text()
    assert "failed fits (scored by the fallback)" in report and "cost estimate" in report


def test_too_many_failed_fits_stop_the_run(work: Path, flaky: dict[str, str]) -> None:
    before = snapshot(work)
    res = tdshap("value", "wine.csv", "--target", "target", "--allow-import", "flaky_models",
                 "--model", "flaky_models:Flaky", "--max-failed-fraction", "0.01", "--out",
                 "out", *FAST, cwd=work, env=flaky)
    # a model that fails now and then (it fits one class) is the model's problem, not tiny
    # data's
    refused(res, "failed on", "during valuation", "--max-failed-fraction",
            "RuntimeError: flaky on", "fix the model or its parameters")
    assert {k: v for k, v in snapshot(work).items() if not k.startswith("out")} == before
    assert not (work / "out" / "values.csv").exists()


def test_nan_predictions_are_failed_fits(work: Path, flaky: dict[str, str]) -> None:
    # scored as they were, NaN predictions matched no label: accuracy 0, counted as nothing
    res = tdshap("value", "wine.csv", "--target", "target", "--allow-import", "flaky_models",
                 "--model", "flaky_models:NaNSometimes", "--max-failed-fraction", "0.01",
                 "--out", "out", *FAST, cwd=work, env=flaky)
    refused(res, "failed on", "during valuation", "--max-failed-fraction",
            "predict returned NaN or infinite values")
    assert not (work / "out" / "values.csv").exists()


def test_a_class_not_derived_from_base_estimator(work: Path, flaky: dict[str, str]) -> None:
    before = snapshot(work)
    res = tdshap("value", "wine.csv", "--target", "target", "--allow-import", "flaky_models",
                 "--model", "flaky_models:NotSklearn", "--out", "out", *FAST, cwd=work,
                 env=flaky)
    refused(res, "not a scikit-learn estimator class")
    assert snapshot(work) == before


def test_id_column_equal_to_target(work: Path) -> None:
    check_refused(work, "value", "wine.csv", "--target", "target", "--id-column", "target",
                  "--out", "out", *FAST, words=("--id-column", "also the --target"))


def test_out_a_dangling_symlink(work: Path) -> None:
    (work / "out").symlink_to(work / "nowhere")
    check_refused(work, "value", "wine.csv", "--target", "target", "--out", "out", *FAST,
                  words=("does not exist",))


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs /proc")
def test_an_out_name_too_long_for_the_staging_folder_is_refused_up_front(work: Path) -> None:
    # 250 characters passed every check; the run did all its work, then publishing through
    # ".<name>.tdshap-new-<pid>" beside it failed with "File name too long"
    check_refused(work, "value", "wine.csv", "--target", "target", "--out", "b" * 250, *FAST,
                  words=("output folder name 'bbbb", "is too long (250 bytes)", "at most"))


def test_out_under_proc(work: Path) -> None:
    check_refused(work, "value", "wine.csv", "--target", "target", "--out", "/proc/tdshap",
                  *FAST, words=("system folder",))


def test_out_the_root_of_the_file_system_even_with_force() -> None:
    from tdshap.app.outdir import OutputError, OutputFolder

    # checked without writing: --force into "/" would scatter the outputs there
    with pytest.raises(OutputError, match="root of the file system"):
        OutputFolder(Path("/"), force=True, known=("values.csv",)).check([], ["values.csv"])


# -- 7. no silent meaningless results -----------------------------------------------------
def test_every_fit_failing_is_an_error(work: Path) -> None:
    # valid values (each passes scikit-learn's check when the model is built) that no fit
    # can use: n_neighbors "five" is refused before any fit now
    check_refused(work, "value", "wine.csv", "--target", "target", "--params",
                  '{"metric": "mahalanobis"}', "--out", "out", *FAST,
                  words=("failed on every one", "Mahalanobis"))



def test_every_fit_failing_on_tiny_data_names_the_data(work: Path) -> None:
    # 6 rows leave 3 to value: every trial subset held one class, which LogisticRegression
    # refuses, and the line said "fix the model or its parameters"
    (work / "tiny.csv").write_text("a,b,label\n" + "".join(
        f"{i},{i + 1},{'xy'[i % 2]}\n" for i in range(6)))
    check_refused(work, "clean", "tiny.csv", "--target", "label", "--model", "logreg",
                  "--out", "out", "--no-progress",
                  words=("it fits all 3 training rows but not rows of a single class",
                         "so the problem is the data: give more training rows of each class"))

@pytest.mark.parametrize(("params", "words"), [
    ('{"metric": "precomputed"}', ("metric='precomputed'", "the rows are features",
                                   "Drop metric from --params")),
    ('{"kernel": "precomputed"}', ("kernel='precomputed'", "kernel values")),
])
def test_precomputed_distances_are_refused(work: Path, params: str,
                                           words: tuple[str, ...]) -> None:
    # the default k-NN was valued by its Euclidean proxy, which never fits the model, so a
    # k-NN told that the feature rows were distances ran and wrote its results
    model = [] if "metric" in params else ["--model", "sklearn.svm:SVC"]
    check_refused(work, "value", "wine.csv", "--target", "target", *model, "--params",
                  params, "--out", "out", "--no-progress", words=words)


def test_more_neighbours_than_rows_refused_up_front(work: Path) -> None:
    check_refused(work, "value", "wine.csv", "--target", "target", "--params",
                  '{"n_neighbors": 100000}', "--out", "out", *FAST,
                  words=("n_neighbors=100000 is larger than the N=134",))


@pytest.mark.parametrize("model", ["sklearn.linear_model:Ridge", "sklearn.cluster:KMeans",
                                   "sklearn.svm:SVR"])
def test_a_non_classifier_for_a_classification_target(work: Path, model: str) -> None:
    check_refused(work, "value", "wine.csv", "--target", "target", "--model", model,
                  "--out", "out", *FAST, words=("but the task is classification",))


def test_a_classifier_for_a_regression_target(work: Path) -> None:
    check_refused(work, "value", "wine.csv", "--target", "target", "--task", "regression",
                  "--model", "sklearn.tree:DecisionTreeClassifier", "--out", "out", *FAST,
                  words=("but the task is regression",))


@pytest.mark.parametrize(("ids", "words"), [
    (lambda n: [f"r{i % 50}" for i in range(n)], ("repeats ids", "'r0'")),
    (lambda n: [None] + [f"r{i}" for i in range(1, n)], ("missing ids",)),
    # an id "NA" (Namibia's code) is read as missing: the message named no cell that was
    (lambda n: ["NA"] + [f"r{i}" for i in range(1, n)],
     ("missing ids (first at data row 0)", "cells NA, N/A, null", "an id of such a name")),
])
def test_duplicate_or_missing_ids(work: Path, ids, words: tuple[str, ...]) -> None:
    frame = pd.read_csv(work / "wine.csv")
    frame.insert(0, "id", ids(len(frame)))
    frame.to_csv(work / "wine_ids.csv", index=False)
    check_refused(work, "value", "wine_ids.csv", "--target", "target", "--id-column", "id",
                  "--out", "out", *FAST, words=words)


# -- 8. checked before anything exists; the user's names; the cost -----------------------
@pytest.mark.parametrize(("option", "words"), [
    (["--eps", "-1"], ("--eps",)), (["--time-budget", "0"], ("--time-budget",)),
    (["--k", "0"], ("--k",)), (["--n-min", "-2"], ("--n-min",)),
    # beyond float range: a whole number, not a traceback from numpy
    (["--method", "tdshap", "--k", "9" * 30], ("--k", "too few")),
    (["--method", "tdshap", "--n-min", "9" * 400], ("--n-min", "too few")),
    (["--val-fraction", "1.5"], ("--val-fraction",)),
    (["--max-failed-fraction", "2"], ("--max-failed-fraction",)),
    (["--checkpoint-every", "-1"], ("--checkpoint-every",)),
    (["--tau", "nan"], ("--tau",)),
    (["--time-budget", "nan"], ("--time-budget", "not a finite number")),
    (["--time-budget", "inf"], ("--time-budget", "not a finite number")),
    (["--val-fraction", "nan"], ("--val-fraction", "not a finite number")),
    (["--checkpoint-every", "nan"], ("--checkpoint-every", "not a finite number")),
    (["--max-failed-fraction", "nan"], ("--max-failed-fraction", "not a finite number")),
    (["--model", ""], ("unknown model ''",)),
    (["--metric", "r2"], ("--metric 'r2' is for regression", "task is classification")),
    (["--metric", "roc_auc"], ("--metric 'roc_auc' cannot score", "multi_class")),
    (["--metric", "nonsense"], ("--metric 'nonsense' is not a known metric",
                                "get_scorer_names")),
    (["--method", "tdshap", "--n-min", "0"], ("than the 0 rows (--n-min)",
                                              "--n-min to at least 5")),
    # the bandit's first pass (a closed form has none: auto's k-NN Shapley is one step)
    (["--time-budget", "0.001", "--method", "tdoob"], ("first pass", "--time-budget")),
    (["--jobs", "0"], ("--jobs 0 must be a non-zero integer",)),
    (["--jobs", "1000000000"], ("--jobs 1000000000", "more workers than joblib can start")),
    (["--jobs", "-99999"], ("--jobs -99999 counts back past every core",)),
])
def test_settings_refused_before_any_folder_exists(work: Path, option: list[str],
                                                   words: tuple[str, ...]) -> None:
    check_refused(work, "clean", "wine.csv", "--target", "target", *option, "--out", "out",
                  "--no-progress", words=words)


@pytest.mark.parametrize(("value", "words"), [
    ("inf", ("column 'alcohol' has inf in row 0",)),
    ("-inf", ("column 'alcohol' has -inf in row 0",)),
    ("1e308", ("column 'alcohol'", "too large")),
])
def test_bad_numbers_name_the_users_column(work: Path, value: str,
                                           words: tuple[str, ...]) -> None:
    frame = pd.read_csv(work / "wine.csv")
    frame["alcohol"] = frame["alcohol"].astype(object)
    frame.loc[0, "alcohol"] = value
    if value == "1e308":
        frame.loc[1:5, "alcohol"] = value
    frame.to_csv(work / "bad.csv", index=False)
    line = check_refused(work, "value", "bad.csv", "--target", "target", "--out", "out",
                         *FAST, words=words)
    assert "X_val" not in line and "column 1" not in line


def test_the_cost_estimate_comes_first_and_reaches_the_report(work: Path) -> None:
    res = tdshap("value", "wine.csv", "--target", "target", "--out", "out", *FAST, cwd=work)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("cost estimate: about ")
    assert "evaluations" in res.stdout.splitlines()[0]
    assert "cost estimate" in (work / "out" / "report.md").read_text()


def _claimed_in_place(tmp_path: Path) -> tuple[Path, Any, Callable[[Path], list[str]]]:
    """A claimed --out holding the user's files (so outputs are renamed in one by one,
    force), the folder, and a writer of three new outputs."""
    import tdshap.app.outdir as outdir

    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "values.csv").write_text("the user's")
    names = ["values.csv", "result.json", "report.md"]
    folder = outdir.OutputFolder(out, force=True, known=tuple(names))
    folder.check([], names)
    folder.claim()

    def write(stage: Path) -> list[str]:
        for name in names:
            (stage / name).write_text("new")
        return names

    return out, folder, write


def test_a_rename_failing_part_way_in_place_puts_everything_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Renamed in one by one (force beside the user's files), a failure after the first
    outputs went in left them there, over the user's file of the same name, and the error
    said the folder was unchanged."""
    import tdshap.app.outdir as outdir

    out, folder, write = _claimed_in_place(tmp_path)
    before = snapshot(out)
    real_replace = os.replace

    def failing(src: Any, dst: Any) -> None:
        if Path(src).name == "report.md" and outdir.STAGING in str(src):
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(outdir.os, "replace", failing)
    with pytest.raises(outdir.OutputError, match="previous contents of the folder are unchanged"):
        folder.publish(write, {})
    assert snapshot(out) == before
    assert (out / "values.csv").read_text() == "the user's"
    monkeypatch.setattr(outdir.os, "replace", real_replace)
    folder.publish(write, {})  # and the same set goes in whole once renames work
    assert (out / "values.csv").read_text() == "new" and (out / "notes.txt").exists()
    assert "report.md" in json.loads((out / ".tdshap-manifest.json").read_text())["files"]
    folder.release()


def test_ctrl_c_while_renaming_in_place_puts_everything_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or SIGTERM, which the command turns into the same exit) between two renames
    in place was no OSError: nothing was put back, the new values.csv stayed beside the old
    report, and the user's file moved aside was deleted with the staging folder."""
    import tdshap.app.outdir as outdir

    out, folder, write = _claimed_in_place(tmp_path)
    before = snapshot(out)
    real_replace = os.replace

    def interrupted(src: Any, dst: Any) -> None:
        if Path(src).name == "report.md" and outdir.STAGING in str(src):
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(outdir.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        folder.publish(write, {})
    assert snapshot(out) == before
    assert (out / "values.csv").read_text() == "the user's"
    folder.release()  # the run's folder of temporaries stays until the run ends
    assert not [p for p in out.iterdir() if outdir.STAGING in p.name]


def test_ctrl_c_between_the_two_renames_of_a_swap_puts_the_old_set_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the folders cannot be exchanged in one step, --out is renamed aside and the
    staging folder into its place: Ctrl-C between the two left no --out, and the old set
    aside under a name the next run's sweep deletes."""
    import tdshap.app.outdir as outdir

    out = tmp_path / "out"
    folder = outdir.OutputFolder(out, known=("values.csv",))
    folder.check([], ["values.csv"])
    folder.claim()

    def write(stage: Path) -> list[str]:
        (stage / "values.csv").write_text("old")
        return ["values.csv"]

    folder.publish(write, {})
    folder.release()
    before = snapshot(out)
    folder = outdir.OutputFolder(out, known=("values.csv",))
    folder.check([], ["values.csv"])
    folder.claim()
    real_rename = os.rename

    def interrupted(src: Any, dst: Any) -> None:
        if Path(src).name.endswith(f"{outdir.STAGING}{os.getpid()}"):  # not the way back
            raise KeyboardInterrupt
        real_rename(src, dst)

    monkeypatch.setattr(outdir, "exchange", lambda a, b: False)
    monkeypatch.setattr(outdir.os, "rename", interrupted)
    def write_new(stage: Path) -> list[str]:
        (stage / "values.csv").write_text("new")
        return ["values.csv"]

    with pytest.raises(KeyboardInterrupt):
        folder.publish(write_new, {})
    monkeypatch.setattr(outdir.os, "rename", real_rename)
    folder.release()
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_force_never_replaces_a_folder_named_as_an_output(work: Path) -> None:
    (work / "victim" / "values.csv").mkdir()
    (work / "victim" / "values.csv" / "inside.txt").write_text("mine too")
    check_refused(work, "value", "wine.csv", "--target", "target", "--out", "victim",
                  "--force", *FAST, words=("values.csv", "a folder named as an output"))


def test_a_models_n_jobs_beyond_any_machine_is_refused_in_a_line(work: Path) -> None:
    # joblib tried to start 100,000 threads and failed deep inside ('DummyProcess' object
    # has no attribute 'terminate'), reported as the trial fits' failure
    check_refused(work, "clean", "wine.csv", "--target", "target", "--out", "out",
                  "--model", "rf", "--params", '{"n_jobs": 100000}', "--no-progress",
                  words=("n_jobs=100000", "at most 1024"))


def test_another_commands_outputs_are_named_as_such(
        work: Path, first_run: Callable[..., Path]) -> None:
    # demo given a clean run's folder said it "holds files tdshap did not write"
    first_run("clean")
    line = check_refused(work, "demo", "--trials", "1", "--out", "out", "--no-progress",
                         words=("files this command does not write", "another tdshap "
                                "command's outputs?", "--force"))
    assert "did not write" not in line


@pytest.mark.parametrize("package", ["", "..", "sklearn.ensemble"])
def test_allow_import_names_a_package(work: Path, package: str) -> None:
    # '' and '..' were accepted (and trusted nothing); a module path never matched
    check_refused(work, "clean", "wine.csv", "--target", "target", "--out", "out",
                  "--allow-import", package, "--no-progress",
                  words=("--allow-import", "is not a package's name"))


def test_python_dash_m_tdshap_is_the_command(work: Path) -> None:
    # without tdshap/__main__.py: "No module named tdshap.__main__", a traceback-like
    # line and exit status 1 instead of the command's own error
    before = snapshot(work)
    res = subprocess.run([sys.executable, "-m", "tdshap", "clean", "missing.csv", "--target",
                          "target"], cwd=work, capture_output=True, text=True, timeout=180)
    refused(res, "training file missing.csv does not exist")
    assert snapshot(work) == before
    usage = subprocess.run([sys.executable, "-m", "tdshap", "--help"], cwd=work,
                           capture_output=True, text=True, timeout=180)
    assert usage.returncode == 0 and usage.stdout.startswith("Usage: tdshap ")


def test_renamed_in_place_the_set_is_marked_incomplete_until_the_last_rename(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run killed (SIGKILL: nothing put back) while renaming in place left the old
    manifest, still saying 'complete', over a mix of old and new outputs."""
    import tdshap.app.outdir as outdir

    out, folder, write = _claimed_in_place(tmp_path)
    real_replace = os.replace
    seen: list[dict[str, Any]] = []

    def watched(src: Any, dst: Any) -> None:
        if Path(src).name == "report.md" and outdir.STAGING in str(src):
            seen.append(json.loads((out / outdir.MANIFEST).read_text()))
        real_replace(src, dst)

    monkeypatch.setattr(outdir.os, "replace", watched)
    folder.publish(write, {"run": "new"})
    # mid-way (values.csv already new, report.md not yet in), as a kill would leave it
    assert (seen[0]["complete"], seen[0]["files"]) == (
        False, ["report.md", "result.json", "values.csv"])
    final = json.loads((out / outdir.MANIFEST).read_text())
    assert final["complete"] and final["run"] == "new"
    folder.release()


def _dead_pid() -> int:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    return int(child.stdout)


def test_a_users_folders_named_like_staging_are_kept_and_a_killed_runs_are_swept(
        work: Path, first_run: Callable[..., Path]) -> None:
    # a folder named as a killed run's staging folder, of a process that is gone, was swept
    # away whatever it held; only one holding the tool's mark (or manifest, or lock) is its
    out = first_run()
    pid = _dead_pid()
    inside = out / f".tdshap-new-{pid}"
    beside = work / f".out.tdshap-new-{pid + 1}"
    killed = work / f".out.tdshap-new-{pid}"
    for folder in (inside, beside, killed):
        folder.mkdir()
        (folder / "notes.txt").write_text("mine")
    (killed / ".tdshap-staging").touch()
    # inside --out, the user's folder is the user's: refused as any other file of theirs
    res = tdshap("clean", "wine.csv", "--target", "target", "--out", "out", *FAST, cwd=work)
    refused(res, "files tdshap did not write", f".tdshap-new-{pid}")
    res = tdshap("clean", "wine.csv", "--target", "target", "--out", "out", "--force", *FAST,
                 cwd=work)
    assert res.returncode == 0, res.stderr
    for folder in (inside, beside):
        assert (folder / "notes.txt").read_text() == "mine"
    assert not killed.exists()
    assert not (out / ".tdshap-staging").exists()


def test_publishing_beside_a_users_folder_of_the_staging_name_leaves_it(tmp_path: Path) -> None:
    # the staging folder's name taken by a user's folder: it was removed before (and after)
    # the failed attempt to make the staging folder there
    from tdshap.app import outdir

    out = tmp_path / "out"
    theirs = tmp_path / f".out{outdir.STAGING}{os.getpid()}"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    folder = outdir.OutputFolder(out, known=("a.txt",))
    folder.check([], ["a.txt"])
    folder.claim()
    try:
        with pytest.raises(outdir.OutputError, match="cannot write the outputs"):
            folder.publish(lambda stage: [(stage / "a.txt").write_text("new") and "a.txt"], {})
    finally:
        folder.release()
    assert (theirs / "notes.txt").read_text() == "mine"
    assert not (out / "a.txt").exists()


def test_a_users_file_named_like_a_temporary_is_never_swept(tmp_path: Path) -> None:
    # a file of the user's in --out named as an atomic write's temporary of a process that is
    # gone (".values.csv.tmp-<pid>") counted as a killed run's leftover: swept away, or
    # deleted with the old set when the folder was swapped
    from tdshap.app.outdir import OutputError, OutputFolder

    out = tmp_path / "out"

    def run(force: bool = False) -> None:
        folder = OutputFolder(out, force=force, known=("values.csv",))
        folder.check([], ["values.csv"])
        folder.claim()
        try:
            folder.publish(lambda stage: [(stage / "values.csv").write_text("new") and
                                          "values.csv"], {})
        finally:
            folder.release()

    run()
    theirs = out / f".values.csv.tmp-{_dead_pid()}"
    theirs.write_text("mine")
    with pytest.raises(OutputError, match=re.escape(theirs.name)):
        run()  # a file tdshap did not write, refused as any other
    run(force=True)
    assert theirs.read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == [".tdshap-manifest.json", theirs.name,
                                                      "values.csv"]


def test_a_runs_own_temporaries_are_made_in_its_marked_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # made beside the file they replace, they had a name a user's file could have: a killed
    # run's leftover in a folder holding the tool's mark is its own, whatever its name
    from tdshap.app import outdir

    out = tmp_path / "out"
    renamed: list[tuple[Path, Path]] = []
    replace = os.replace

    def spy(src: Any, dst: Any) -> None:
        renamed.append((Path(src), Path(dst)))
        replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    for force in (False, True):  # the folder swapped whole, and the outputs renamed in
        folder = outdir.OutputFolder(out, force=force, keep=("run.tdshap",),
                                     known=("values.csv", "run.tdshap"))
        folder.check([], ["values.csv"])
        folder.claim()
        scratch = out / f"{outdir.STAGING}tmp-{os.getpid()}"
        assert (scratch / outdir.STAGE_MARK).is_file()
        write_checkpoint(out / "run.tdshap", {"algorithm": "test"}, {})
        folder.publish(lambda stage: [(stage / "values.csv").write_text("new") and
                                      "values.csv"], {})
        folder.release()
        into_out = [src for src, dst in renamed if dst.parent == out and ".tmp-" in src.name]
        assert into_out and all(src.parent == scratch for src in into_out), renamed
        assert sorted(p.name for p in out.iterdir()) == [outdir.MANIFEST, "run.tdshap",
                                                          "values.csv"]
        renamed.clear()
