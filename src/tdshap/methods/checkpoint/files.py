"""Checkpoint files: a run's full state, saved atomically, resumed exactly.

A checkpoint is one ``.npz`` file (no pickle: it is read with
``allow_pickle=False``): numeric arrays as they are, plus one entry holding
UTF-8 JSON metadata (format, version, algorithm, fingerprints of the data and
of the settings, counters, RNG state, progress). It is written to a temporary
file and renamed, so a crash (even ``SIGKILL``) mid-write leaves the previous
checkpoint intact.

A run may only be resumed with the same data and the same settings: both are
fingerprinted, and :func:`check_resumable` refuses a mismatch, naming the
settings that differ. Settings that do not change the computation (workers,
progress bar, checkpoint path and period) and the budget (``max_iter``,
``time_budget``) are not part of the fingerprint, so a run can be resumed
with more workers or extended with a larger budget.

:func:`checkpoint_info` reads what an application shows before it resumes a run.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import reprlib
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from tdshap._io import atomic_write_bytes, jsonable, unique_keys, unpacked_size_problem
from tdshap._validation import ParameterError
from tdshap.utility.base import Utility

FORMAT = "tdshap.Checkpoint"
FORMAT_VERSION = 1
_META = "__meta__"
_ZIP_MAGIC = b"PK\x03\x04"  # an .npz file is a zip archive


class CheckpointError(ParameterError):
    """A checkpoint that cannot be resumed: not one, damaged, edited, or of another run.

    ``params`` names the parameters its message refers to (``resume``, the settings that
    differ), so an application can show its own names for them.
    """


class CheckpointBudgetError(CheckpointError):
    """A sound checkpoint that has done more than the resuming run's budget allows."""


class CheckpointDataError(CheckpointError):
    """A sound checkpoint of other data: an application that made the arrays (a split of
    a file) can say which of its own options changed them (see ``origin`` in
    :func:`checkpoint_info`)."""


def data_fingerprint(*arrays: np.ndarray) -> str:
    """A hash of the arrays' shapes, dtypes and bytes."""
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.shape}{a.dtype.str};".encode())
        h.update(a.tobytes() if a.dtype != object else repr(a.tolist()).encode())
    return h.hexdigest()


def write_checkpoint(
    path: str | os.PathLike[str], meta: dict[str, Any], arrays: dict[str, np.ndarray]
) -> Path:
    """Write ``meta`` (JSON-able) and ``arrays`` to ``path`` atomically (creating its folder)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"format": FORMAT, "version": FORMAT_VERSION, **meta}
    blob = np.frombuffer(json.dumps(jsonable(header)).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    # numpy's stub lets **arrays match savez's allow_pickle: bool; the keys are array names
    np.savez(buf, **{_META: blob}, **arrays)  # type: ignore[arg-type]
    atomic_write_bytes(path, buf.getvalue())
    return path


def _archive_problem(fh: IO[bytes]) -> str | None:
    """Why the file open in ``fh`` is not an archive a checkpoint could be, or None.

    Only its first bytes and the zip directory are read; ``fh`` is left at its start.
    """
    magic = fh.read(4)
    fh.seek(0)
    return "not an .npz archive" if magic != _ZIP_MAGIC else unpacked_size_problem(fh)


def _meta_of(npz: Any) -> Any:
    """The JSON metadata entry of an open checkpoint archive (``KeyError`` if it has none)."""
    return json.loads(npz[_META].tobytes().decode(), object_pairs_hook=unique_keys)


def _is_checkpoint(path: Path) -> bool:
    """Whether ``path`` carries a checkpoint's signature; of its arrays only the metadata is read.

    Any format version counts: an older run's checkpoint is the library's file, not the user's.
    """
    try:
        with open(path, "rb") as fh:
            if _archive_problem(fh):
                return False
            with np.load(fh, allow_pickle=False) as npz:  # members are read when asked for
                meta = _meta_of(npz)
    except Exception:  # unreadable, damaged, no metadata entry: not a checkpoint
        return False
    return isinstance(meta, dict) and meta.get("format") == FORMAT


def _path_problem(path: Path) -> tuple[str, str] | None:
    """``(what is at path, what saving there would do to it)`` if that is harm, else None."""
    if path.is_symlink():
        what, fate = "symbolic link", "the link would be replaced"
    elif path.is_dir():
        what, fate = "directory", "a checkpoint cannot be saved there"
    elif not path.exists() or (path.is_file() and _is_checkpoint(path)):
        return None  # is_file first: opening a named pipe to read it would block
    else:
        what, fate = "file", "it would be overwritten"
    return what, fate


def _folder_problem(path: Path) -> str | None:
    """Why no checkpoint can be saved in ``path``'s folder (made when missing), or None.

    The nearest folder that exists must be one the run may write in: a file on the way
    ("x.txt/run.tdshap") or a folder without write permission failed inside pathlib or
    the first save, with an ``OSError`` and after the run's first pass.
    """
    probe = Path(os.path.abspath(path)).parent
    while not probe.exists() and probe != probe.parent:
        if probe.is_symlink():
            return f"{probe} is a link to {os.readlink(probe)}, which does not exist"
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"there is no write permission on the folder {probe}"
    return None


def is_checkpoint_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a checkpoint file itself (not a link, not a user's file)."""
    path = Path(path)
    return path.is_file() and _path_problem(path) is None


def check_checkpoint_path(path: str | os.PathLike[str]) -> None:
    """Refuse ``path`` as a run's checkpoint unless it is new or an earlier checkpoint.

    A run saves by renaming a new file onto ``path``, so whatever is there is replaced:
    a fresh run may start an earlier checkpoint anew, but a user's file is refused
    before the run does any work. So is a symbolic link, even to a checkpoint: the
    rename would replace the link, not the file it names (tdshap never makes links).
    """
    problem = _path_problem(Path(path))
    if problem is not None:
        what, fate = problem
        raise CheckpointError(f"checkpoint {str(path)!r} is an existing {what} that is not a "
                              f"tdshap checkpoint: choose a new path, or move it away ({fate}).")
    folder = _folder_problem(Path(path))
    if folder is not None:
        raise CheckpointError(f"checkpoint {str(path)!r} cannot be saved: {folder}; choose "
                              "another path.", "checkpoint")


def read_checkpoint(path: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(meta, arrays)`` of a checkpoint; ``ValueError`` if it is not one."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}.")
    try:
        with open(path, "rb") as fh:  # closed even when numpy gives up half way
            problem = _archive_problem(fh)
            if problem:
                raise CheckpointError(f"{path} is not a tdshap checkpoint ({problem}).")
            with np.load(fh, allow_pickle=False) as npz:
                meta = _meta_of(npz)
                arrays = {k: npz[k] for k in npz.files if k != _META}
    except CheckpointError:
        raise
    except Exception as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CheckpointError(f"{path} is not a tdshap checkpoint (damaged: {detail}).") \
            from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise CheckpointError(f"{path} is not a tdshap checkpoint (format {found!r}).")
    if meta.get("version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{path} is a checkpoint of format version {meta.get('version')}; this tdshap "
            f"reads version {FORMAT_VERSION}. Resume it with the tdshap that wrote it."
        )
    return meta, arrays


#: The largest count a checkpoint may hold: pull counts are saved as 64-bit integers.
MAX_COUNT = 2**63 - 1


def whole(meta: dict[str, Any], name: str, low: int = 0, high: float = MAX_COUNT) -> int:
    """``meta[name]`` if it is a whole number in ``[low, high]``, else an error."""
    value = meta.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        bound = "2**63 - 1 (a 64-bit count)" if high == MAX_COUNT else f"{high}"
        raise CheckpointError(f"field {name!r} is {reprlib.repr(value)}; it must be a whole "
                              f"number from {low} to {bound}")
    return value


def number(meta: dict[str, Any], name: str, low: float = -math.inf) -> float:
    """``meta[name]`` if it is a finite number ``>= low``, else a :class:`CheckpointError`."""
    value = meta.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or value < low:
        raise CheckpointError(f"field {name!r} is {reprlib.repr(value)}; it must be a finite "
                              f"number >= {low}")
    return float(value)


def check_counters(counters: Any) -> None:
    """Refuse a saved ``counters`` record that is not the utility's (numbers, first error)."""
    if not isinstance(counters, dict):
        raise CheckpointError(f"field 'counters' is {reprlib.repr(counters)}, not a record")
    for name in counters:
        if name == "fit_seconds":
            number(counters, name, 0.0)
        elif name == "first_error":
            if not isinstance(counters[name], str | None):
                raise CheckpointError(f"counter 'first_error' is {reprlib.repr(counters[name])}"
                                      ", not a message")
        else:
            whole(counters, name)


#: What :func:`checkpoint_info` shows, and the check of each (a field a method does not
#: save is None).
_INFO: dict[str, Any] = {
    "algorithm": None, "finished": None, "rounds": whole, "elapsed": number,
    "init_done": whole, "n_init_blocks": whole, "settings": None, "counters": None,
    "saved_at": number, "origin": None,
}


def checkpoint_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What a checkpoint holds, without its arrays: algorithm, rounds, elapsed, settings.

    ``origin`` is what the application that saved it recorded about where the data came
    from (the ``checkpoint_origin`` of the method; None in a checkpoint without one).

    Every field is checked to be of its kind, so that what an application shows or
    computes from it is never an edited file's string, list or huge number.
    """
    meta, _ = read_checkpoint(path)
    try:
        if not isinstance(meta.get("algorithm"), str):
            raise CheckpointError(f"field 'algorithm' is {reprlib.repr(meta.get('algorithm'))}"
                                  ", not a method's name")
        if not isinstance(meta.get("finished"), bool | None):
            raise CheckpointError(f"field 'finished' is {reprlib.repr(meta.get('finished'))}, "
                                  "not true/false")
        for name in ("settings", "origin"):
            if not isinstance(meta.get(name), dict | None):
                raise CheckpointError(f"field {name!r} is {reprlib.repr(meta.get(name))}, "
                                      "not a record")
        if meta.get("counters") is not None:
            check_counters(meta["counters"])
        for name, check in _INFO.items():
            if check is not None and meta.get(name) is not None:
                check(meta, name, 0)
    except CheckpointError as err:
        raise CheckpointError(f"checkpoint {str(path)!r} is damaged or was edited: {err}.") \
            from None
    return {k: meta.get(k) for k in _INFO}


@dataclass(frozen=True)
class ResumePlan:
    """What a method's ``resume`` parameter means for this run (see :func:`plan_resume`).

    ``path`` is the checkpoint to continue (None: a fresh run); ``note`` says
    what was decided, for the result's ``extra["resume"]`` (None when resuming
    was not asked for).
    """

    path: Path | None
    note: str | None


def plan_resume(resume: Any, checkpoint: Any) -> ResumePlan:
    """The one place that decides what ``resume`` means, for every method.

    * ``None`` or ``False``: a fresh run.
    * ``True``: continue the ``checkpoint`` file if a previous run left one,
      else start afresh (the note says which); ``checkpoint`` must be set.
    * a path: continue that file, which must exist.
    """
    # 3 or b"run.tdshap" failed inside pathlib, and "" was taken as the working folder
    if checkpoint is not None and (not isinstance(checkpoint, str | os.PathLike)
                                   or not os.fspath(checkpoint)):
        raise ValueError(f"checkpoint={checkpoint!r} must be a file's path (a str or a Path, "
                         "e.g. 'run.tdshap'), or None not to save the run.")
    if resume is None or resume is False:
        return ResumePlan(None, None)
    if resume is True:
        if checkpoint is None:
            raise ValueError("resume=True continues the file given as checkpoint=: set "
                             "checkpoint='run.tdshap', or pass the file as resume=.")
        path = Path(checkpoint)
        if path.is_file():
            return ResumePlan(path, f"continued from {path}")
        return ResumePlan(None, f"started afresh: no checkpoint at {path} yet")
    if not isinstance(resume, str | os.PathLike):
        raise ValueError(f"resume={resume!r} must be True, a checkpoint file's path, or None.")
    path = Path(resume)
    if os.path.lexists(path) and not path.is_file():  # a folder, a pipe, a dangling link
        raise ValueError(f"resume={str(resume)!r} is not a regular file (a folder, a pipe or a "
                         "link to nothing): give the path of a checkpoint file.")
    if not path.is_file():
        raise ValueError(
            f"resume={str(resume)!r}: no such checkpoint file. Pass resume=True to continue "
            "the checkpoint= file when it exists and start afresh otherwise."
        )
    return ResumePlan(path, f"continued from {path}")


def check_resumable(
    meta: dict[str, Any], algorithm: str, data: str, settings: dict[str, Any], path: Any
) -> None:
    """Raise :class:`CheckpointError` unless this algorithm, data and settings made it."""
    which = f"`resume`: checkpoint {str(path)!r}"
    if meta.get("algorithm") != algorithm:
        raise CheckpointError(
            f"{which} was written by {meta.get('algorithm')!r}, not {algorithm!r}.", "resume")
    if meta.get("data") != data:
        raise CheckpointDataError(
            f"{which} was made with different data (X, y, X_val or y_val differ): resume "
            "with the same data, or start a new run without `resume`.", "resume")
    saved = meta.get("settings")
    if not isinstance(saved, dict):
        raise CheckpointError(f"{which} has no settings record: it is damaged.", "resume")
    wanted = jsonable(settings)
    differ = sorted(k for k in set(saved) | set(wanted) if saved.get(k) != wanted.get(k))
    if differ:
        detail = "; ".join(f"`{k}`: checkpoint {saved.get(k)!r}, now {wanted.get(k)!r}"
                           for k in differ)
        raise CheckpointError(
            f"{which} was made with different settings ({detail}). Use the checkpoint's "
            "settings, or start a new run without `resume`.", "resume", *differ)


# -- the utility's part of a run's state ---------------------------------------
def utility_state(utility: Utility) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Counters (JSON) and cache (arrays) of ``utility``, to be saved."""
    counters = utility.counters()
    items = utility.cache_items()
    keys = [k for k, _ in items]
    arrays = {
        "cache_keys": np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), -1)
        if keys else np.zeros((0, 16), dtype=np.uint8),
        "cache_values": np.fromiter((v for _, v in items), dtype=float, count=len(keys)),
    }
    return counters, arrays


def restore_utility(utility: Utility, counters: dict[str, Any],
                    arrays: dict[str, np.ndarray]) -> None:
    """Put saved counters and cache entries back into ``utility``."""
    utility.set_counters(counters)
    utility.load_cache(zip(arrays["cache_keys"], arrays["cache_values"], strict=True))


class CheckpointSchedule:
    """Writes a run's checkpoints to ``path``, due every ``every`` seconds (0: always).

    ``fixed`` is metadata that every checkpoint of the run carries (the
    algorithm, the data and settings fingerprints), computed once.
    """

    def __init__(self, path: str | os.PathLike[str], every: float, **fixed: Any) -> None:
        self.path = Path(path)
        self.every = float(every)
        self.fixed = fixed
        self._last = time.monotonic()
        self.stopped = False  # a file not ours took the path during the run

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.every

    def write(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Save now, unless something not ours appeared at the path since the run began.

        The path was checked before the run's work; a long run checks again before
        every save, so a file put there meanwhile is kept: the run warns once and goes
        on without saving (its result is unaffected; only resuming it is lost).
        """
        self._last = time.monotonic()
        if self.stopped:
            return
        problem = _path_problem(self.path)
        if problem is not None:
            self.stopped = True
            warnings.warn(f"checkpoint {str(self.path)!r} is now a {problem[0]} that is not a "
                          "tdshap checkpoint: it appeared during the run and is left as it "
                          "is; this run saves no more checkpoints (its result is unaffected, "
                          "but it cannot be resumed).", RuntimeWarning, stacklevel=2)
            return
        write_checkpoint(self.path, {**meta, **self.fixed, "saved_at": time.time()}, arrays)
        self._last = time.monotonic()
