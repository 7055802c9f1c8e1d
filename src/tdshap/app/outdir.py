"""The output folder of ``tdshap clean``/``value``: owned, locked, published as one set.

Ownership
    ``--out`` is a folder the tool owns: one it creates, or one that holds
    only what an earlier run wrote there, as listed in its manifest
    (:data:`MANIFEST`). A folder holding anything else is refused unless the
    user passes ``force``; an input file inside ``--out`` is refused (the
    next set of outputs would replace or remove it). A run that claims the
    folder lists the files there and names apart, as ``writing``, the
    checkpoint it saves as it goes: a run killed after saving it leaves a
    folder a later run resumes or replaces, and a file put at that name after
    the crash counts as the tool's only if it is a checkpoint.

Lock
    While a run works, ``--out`` holds :data:`LOCK`, created exclusively with
    the run's process id; a second run refuses to start. The lock of a process
    that no longer exists is taken over.

Publishing
    All outputs are written to a staging folder on the same file system and
    swapped in: the staging folder and ``--out`` are exchanged in one
    ``renameat2(RENAME_EXCHANGE)`` where Linux offers it (else two renames,
    between which ``--out`` is briefly absent), so a reader sees the old set
    or the new set, never a mix; files of the old set that the new run does
    not produce go with the old folder. Where ``--out`` cannot be swapped
    (``force`` with other files in it, or ``--out`` is the working directory),
    the files are renamed in one by one from a staging folder inside it, under a
    manifest that lists old and new and marks the set incomplete, replaced by the
    new manifest last; so they are too when a file appeared in
    ``--out`` while the run worked (the swap would delete it with the old set),
    and one that has an output's name is refused without ``force``. A failure
    while writing (a full disk) removes the staging folder and leaves the
    previous outputs as they were; renamed in one by one, each file replaced is
    moved aside first and put back if a later rename fails. ``force`` replaces
    files with the outputs' names, never a folder (refused).

Temporary files
    A file written into ``--out`` itself as the run works (the manifest, the
    checkpoint) is written whole to a temporary file and renamed into place; the
    temporary is made in a folder of the run's own inside ``--out``
    (:data:`TEMPORARIES` and the process id, marked like a staging folder), never
    beside its target: there it would have a name a user's file may have, and a
    file the run cannot prove its own is never removed. A killed run's folder of
    temporaries is swept away with its staging folders.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tdshap._io import atomic_write_bytes, os_reason, read_small_file, temporaries_in

MANIFEST = ".tdshap-manifest.json"
LOCK = ".tdshap.lock"
STAGING = ".tdshap-new-"
#: a file a staging folder holds from its first moment: a folder named like one but without
#: it (or the manifest or lock of the set swapped out into such a name) is not this tool's,
#: so never swept away as a killed run's leftover, and counts as the user's
STAGE_MARK = ".tdshap-staging"
#: the folder in --out (and the process id) where a run makes the temporary files of what
#: it writes into --out itself; named and marked as a staging folder, so swept as one
TEMPORARIES = f"{STAGING}tmp-"
MANIFEST_FORMAT = "tdshap.OutputManifest"
#: Places where a folder of results cannot live (kernel and device file systems).
SPECIAL_ROOTS = ("/proc", "/sys", "/dev")
#: The largest manifest read (a demo of 10,000 trials lists 30,000 names, about 1 MB).
MAX_MANIFEST_BYTES = 16 * 2**20


class OutputError(ValueError):
    """The output folder cannot be used or written; nothing of the user's was changed."""


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _names(value: Any) -> list[str] | None:
    """``value`` if it is a list of plain file names (no folders), else None."""
    if not isinstance(value, list) or not all(
        isinstance(f, str) and f and os.sep not in f and f not in (".", "..") for f in value
    ):
        return None
    return value


def _read_manifest(folder: Path) -> tuple[list[str], list[str]] | None:
    """``(files, writing)`` of the manifest in ``folder``, or None when there is no valid one.

    ``writing`` (absent before it was recorded) names the files a run that claimed the
    folder was to write as it worked (its checkpoint), not there when it claimed it.
    """
    raw = read_small_file(folder / MANIFEST, MAX_MANIFEST_BYTES)
    try:
        data = json.loads(raw.decode("utf-8")) if raw is not None else None
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(data, dict):  # valid JSON of another shape (a list, a string)
        return None
    files, writing = _names(data.get("files")), _names(data.get("writing", []))
    if data.get("format") != MANIFEST_FORMAT or files is None or writing is None:
        return None
    return files, writing


def read_manifest(folder: Path) -> list[str] | None:
    """The file names a manifest in ``folder`` lists, or None when there is no valid one."""
    record = _read_manifest(folder)
    return None if record is None else record[0]


def _manifest_bytes(files: Iterable[str], complete: bool, about: dict[str, Any],
                    writing: Iterable[str] = ()) -> bytes:
    body: dict[str, Any] = {"format": MANIFEST_FORMAT, "version": 1,
                            "files": sorted(set(files)), "complete": complete}
    if writing:
        body["writing"] = sorted(set(writing))
    return (json.dumps({**body, **about}, indent=1) + "\n").encode()


def _staged(path: Path) -> bool:
    """Whether ``path``, named like a staging folder, is one of this tool's (see
    :data:`STAGE_MARK`; a set swapped out holds its manifest, or the new folder's lock)."""
    return any(os.path.isfile(path / name) for name in (STAGE_MARK, MANIFEST, LOCK))


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def _pid_of(name: str) -> int | None:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one atomic step (Linux ``renameat2``); False where unsupported."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError, TypeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))


@dataclass
class OutputFolder:
    """``--out`` checked, then claimed and published (see the module docstring).

    :meth:`check` has no side effects and runs with the other input checks;
    :meth:`claim` creates and locks the folder just before the work starts;
    :meth:`publish` swaps in a complete set of outputs; :meth:`release`
    drops the lock (and a folder this run created but never filled).
    """

    out: Path
    force: bool = False
    keep: tuple[str, ...] = ()  # files a run keeps in --out as it goes (its checkpoint)
    #: whether the file at a ``keep`` path is still the run's own at publish time: a user's
    #: file may take its place during the run (the run then stops writing it)
    kept_is_ours: Callable[[Path], bool] | None = None
    known: tuple[str, ...] = ()  # every name a run of this tool may write there
    known_pattern: str | None = None  # or a regular expression of them (names with a seed)
    real: Path = field(init=False)
    exists: bool = field(init=False, default=False)
    old_files: list[str] = field(init=False, default_factory=list)
    in_place: bool = field(init=False, default=False)
    created: bool = field(init=False, default=False)
    locked: bool = field(init=False, default=False)
    #: this run's folder of temporary files in --out (see :data:`TEMPORARIES`), once made
    scratch: Path | None = field(init=False, default=None)

    # -- before anything is written ---------------------------------------
    def check(self, inputs: Iterable[Path], outputs: Iterable[str]) -> None:
        """Raise :class:`OutputError` unless ``--out`` can be used for ``outputs``."""
        out, outputs = self.out, list(outputs)
        if out.is_symlink() and not out.exists():
            raise OutputError(f"output folder {out} is a link to {os.readlink(out)}, which "
                              "does not exist: choose another --out.")
        self.real = Path(os.path.realpath(out))
        real = str(self.real)
        if self.real == self.real.parent:  # "/": even --force must not scatter files there
            raise OutputError(f"output folder {out} is the root of the file system: choose a "
                              "folder of your own for --out.")
        if any(_inside(real, root) for root in SPECIAL_ROOTS):
            raise OutputError(f"output folder {out} is under a system folder ({real}): choose "
                              "a folder of your own for --out.")
        self.exists = self.real.exists()
        if self.exists and not self.real.is_dir():
            raise OutputError(f"output folder {out} is a file: choose another --out.")
        probe = self.real
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not probe.is_dir():
            raise OutputError(f"output folder {out} is not writable: {probe} is a file.")
        if not os.access(probe, os.W_OK | os.X_OK):
            raise OutputError(f"output folder {out} is not writable (no write permission on "
                              f"{probe}): choose another --out.")
        self._check_name_length(probe)
        names = set(outputs) | set(self.keep) | {MANIFEST, LOCK}
        foreign = self._foreign() if self.exists else []
        for path in inputs:
            # the file it names and, for a link, the link itself: a link in --out named
            # like an output (values.png -> ../train.csv) was replaced by --force
            link = os.path.join(os.path.realpath(os.path.dirname(path) or "."),
                                os.path.basename(path))
            inside = [os.path.relpath(p, real) for p in {os.path.realpath(path), link}
                      if _inside(p, real)]
            if inside and (not foreign or any(
                    name in names or name in self.old_files for name in inside)):
                raise OutputError(
                    f"input file {path} is inside the output folder {out}, where the outputs "
                    "of this run would replace or remove it: copy it elsewhere, or choose "
                    "another --out."
                )
        if self.exists:
            self._refuse_folders(outputs)
        cwd = os.path.realpath(os.getcwd())
        self.in_place = bool(foreign) or (self.exists and _inside(cwd, real)) or (
            self.exists and not os.access(self.real.parent, os.W_OK | os.X_OK))

    def _check_name_length(self, probe: Path) -> None:
        """Refuse a name too long for the staging folder published beside ``--out`` (its
        name plus :data:`STAGING` and a process id): a name of 250 characters passed every
        check, and the run did all its work before publishing failed ("File name too
        long")."""
        try:
            limit = os.pathconf(probe, "PC_NAME_MAX")
        except (OSError, ValueError, AttributeError):  # no such limit to ask for
            return
        name = len(os.fsencode(self.real.name))
        longest = len(os.fsencode(f".{self.real.name}{STAGING}old-{os.getpid()}"))
        if longest > limit:
            raise OutputError(
                f"output folder name {self.real.name[:40]!r}... is too long ({name} bytes): "
                f"the outputs are published through a folder beside it whose name is "
                f"{longest - name} bytes longer, past this file system's {limit}; choose a "
                f"name of at most {limit - (longest - name)} bytes for --out.")

    def _refuse_folders(self, outputs: Iterable[str]) -> None:
        """A folder with an output's name is the user's: ``force`` replaces files, and
        removing a folder with what it holds would lose them."""
        folders = [n for n in outputs
                   if (self.real / n).is_dir() and not (self.real / n).is_symlink()]
        if folders:
            raise OutputError(
                f"the output folder {self.out} holds a folder named as an output "
                f"({', '.join(folders)}): nothing was written; rename or move it, or choose "
                "another --out.")

    def _foreign(self) -> list[str]:
        """What ``--out`` holds besides an earlier run's outputs (refused without ``force``)."""
        record = _read_manifest(self.real)
        listed, writing = record if record is not None else (None, [])
        # only names this tool writes count as its own, whatever an edited manifest lists
        self.old_files = [n for n in listed or [] if self._known(n)]
        # a run killed after it saved its checkpoint left it there, named only as what the
        # run was writing: ours when it is a checkpoint, else a user's file put there after
        # the crash (a listed one was the tool's: damaged, it is refused as a checkpoint)
        self.old_files += [n for n in writing if n in self.keep and n not in self.old_files
                           and self._kept_ours(self.real / n)]
        ours = set(self.old_files) | {MANIFEST, LOCK}
        foreign = sorted(n for n in os.listdir(self.real)
                         if n not in ours and not self._staging(n))
        if foreign and not self.force:
            shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
            if listed is None:
                why = "files tdshap did not write (it has no tdshap manifest)"
            elif set(foreign) <= set(listed):  # a clean run's folder given to demo, say
                why = (f"files this command does not write ({shown}; its manifest lists them: "
                       "another tdshap command's outputs?)")
            else:
                why = f"files tdshap did not write (not outputs of an earlier run: {shown})"
            raise OutputError(
                f"output folder {self.out} holds {why}: choose "
                "a new or empty folder for --out, or pass --force to write beside them "
                "(files with the names of the outputs are then replaced)."
            )
        return foreign

    def _staging(self, name: str) -> bool:
        """A staging folder of this tool's in ``--out`` (a run's now, or a killed one's)."""
        return name.startswith(STAGING) and _staged(self.real / name)

    def _kept_ours(self, path: Path) -> bool:
        """Whether the file at a ``keep`` path is the run's own (see ``kept_is_ours``)."""
        return path.is_file() and (self.kept_is_ours is None or self.kept_is_ours(path))

    def _known(self, name: str) -> bool:
        """A name that a run of this tool writes (only those may an old manifest claim)."""
        return name in self.known or (
            self.known_pattern is not None and re.fullmatch(self.known_pattern, name) is not None)

    # -- the run ----------------------------------------------------------------
    def claim(self) -> None:
        """Create and lock ``--out``; list the run's own files in its manifest."""
        try:
            self._claim()
        except OutputError:
            self.release()
            raise

    def _claim(self) -> None:
        try:
            try:
                self.real.mkdir(parents=True)
                self.created = True
            except FileExistsError:  # an earlier run's, or one that started meanwhile
                pass
            self._lock()
            if not self.created:
                self._foreign()  # files added since the check are refused too
            self._sweep()
            self._make_scratch()
            # the files are what is there; the checkpoint the run saves as it goes is named
            # apart, so that a run killed after saving it leaves a folder a later run can
            # resume or replace, while the manifest never lists a file that is not there
            self.old_files = [n for n in self.old_files if os.path.lexists(self.real / n)]
            writing = [n for n in self.keep if n not in self.old_files]
            record = _read_manifest(self.real)
            if self.created or record is None or (set(record[0]), set(record[1])) != (
                    set(self.old_files), set(writing)):
                atomic_write_bytes(self.real / MANIFEST,
                                   _manifest_bytes(self.old_files, False, {}, writing))
        except OSError as err:
            self.release()
            raise OutputError(f"cannot use output folder {self.out}: {err.strerror or err}.") \
                from None

    def _lock(self) -> None:
        path = self.real / LOCK
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                raw = read_small_file(path, 64)  # a process id; not a FIFO or a link
                text = raw.decode("ascii", "replace").strip() if raw is not None else ""
                if not text.isdigit() or _pid_alive(int(text)):
                    raise OutputError(
                        f"another tdshap run (process {text or 'starting'}) is writing to "
                        f"{self.out}: wait for it to finish, or choose another --out (if no "
                        f"run is going, delete {path})."
                    ) from None
                path.unlink(missing_ok=True)  # its process is gone: a stale lock
                continue
            with os.fdopen(fd, "w") as fh:
                fh.write(str(os.getpid()))
            self.locked = True
            return
        raise OutputError(f"another tdshap run is writing to {self.out}: wait for it to "
                          "finish, or choose another --out.")

    def _sweep(self) -> None:
        """Remove the staging folders (and folders of temporary files) of killed runs."""
        for folder in (self.real, self.real.parent):
            with contextlib.suppress(OSError):
                for name in os.listdir(folder):
                    if STAGING not in name:
                        continue
                    pid = _pid_of(name)
                    if pid is not None and pid != os.getpid() and not _pid_alive(pid) and (
                        folder == self.real or name.startswith(f".{self.real.name}{STAGING}")
                    ) and _staged(folder / name):
                        shutil.rmtree(folder / name, ignore_errors=True)

    def _make_scratch(self) -> None:
        """Make the marked folder where this run's writes into ``--out`` make their temporary
        files (see :data:`TEMPORARIES`)."""
        scratch = self.real / f"{TEMPORARIES}{os.getpid()}"
        if _staged(scratch):  # a killed run's of this pid; a user's folder is refused below
            shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        self.scratch = scratch
        (scratch / STAGE_MARK).touch()
        temporaries_in(self.real, scratch)

    def _drop_scratch(self, remove: bool = True) -> None:
        """Write into ``--out`` beside the target again; remove this run's folder of
        temporaries unless it is gone already (``remove`` False: with the old set)."""
        if self.scratch is None:
            return
        temporaries_in(self.real, None)
        if remove:
            shutil.rmtree(self.scratch, ignore_errors=True)
        self.scratch = None

    def release(self) -> None:
        """Drop this run's lock; remove ``--out`` if this run created it and wrote nothing."""
        self._drop_scratch()
        lock = self.real / LOCK
        with contextlib.suppress(OSError):
            if self.locked and (read_small_file(lock, 64) or b"").strip() == \
                    str(os.getpid()).encode():
                lock.unlink()
        self.locked = False
        if self.created:
            with contextlib.suppress(OSError):
                left = set(os.listdir(self.real))
                if left <= {MANIFEST}:
                    shutil.rmtree(self.real)

    def publish(self, write: Callable[[Path], list[str]], about: dict[str, Any]) -> list[str]:
        """Write the outputs with ``write(folder) -> names`` and swap them in as one set."""
        stage = (self.real / f"{STAGING}{os.getpid()}" if self.in_place else
                 self.real.parent / f".{self.real.name}{STAGING}{os.getpid()}")
        made = False  # a user's folder of the staging folder's name is never removed
        try:
            if _staged(stage):  # a killed run's of this pid; a user's folder is refused below
                shutil.rmtree(stage, ignore_errors=True)
            stage.mkdir()
            made = True
            (stage / STAGE_MARK).touch()
            written = write(stage)
            kept = [n for n in self.keep if self._kept_ours(self.real / n)]
            # a keep name the user's file took is theirs: never listed, replaced or removed
            self.old_files = [n for n in self.old_files if n not in self.keep or n in kept]
            if not self.in_place:
                for name in kept:
                    try:
                        os.link(self.real / name, stage / name)
                    except OSError:
                        shutil.copy2(self.real / name, stage / name)
            files = [*written, *kept]
            atomic_write_bytes(stage / MANIFEST, _manifest_bytes(files, True, about))
            self._keep_added(written, kept)
            if self.in_place:
                self._rename_in(stage, written, files)
            else:  # the folder becomes --out: without the mark (its manifest marks it now)
                (stage / STAGE_MARK).unlink()
                self._swap(stage)
                self._drop_scratch(remove=False)  # it went with the old set
        except OSError as err:
            if made:
                shutil.rmtree(stage, ignore_errors=True)
            raise OutputError(
                f"cannot write the outputs to {self.out}: {os_reason(err)}; the previous "
                "contents of the folder are unchanged."
            ) from None
        except BaseException:  # a writer's own failure (a plot, Ctrl-C): no staging left over
            if made:
                shutil.rmtree(stage, ignore_errors=True)
            raise
        self.locked = False if not self.in_place else self.locked
        return written

    def _keep_added(self, written: list[str], kept: list[str]) -> None:
        """Keep what the user put into ``--out`` while the run worked: swapping the folder
        would delete it with the old set, so the outputs are renamed in beside it; one that
        has an output's name is refused (replaced only with ``force``)."""
        ours = set(self.old_files) | set(kept) | {MANIFEST, LOCK}
        added = sorted(n for n in os.listdir(self.real) if n not in ours
                       and not self._staging(n))
        clash = [n for n in added if n in written]
        if clash and not self.force:
            raise OutputError(
                f"{', '.join(clash)} appeared in the output folder {self.out} during the run, "
                "with the name of an output: nothing was written and it is unchanged; move it "
                "elsewhere and run again, or pass --force to replace it.")
        if added:
            self.in_place = True

    def _swap(self, stage: Path) -> None:
        if not exchange(stage, self.real):
            old = self.real.parent / f".{self.real.name}{STAGING}old-{os.getpid()}"
            os.rename(self.real, old)
            try:
                os.rename(stage, self.real)
            except BaseException:  # a failure or Ctrl-C between the two: the old set goes
                # back to --out (left aside, a later run's sweep would delete it)
                os.rename(old, self.real)
                raise
            stage = old
        shutil.rmtree(stage, ignore_errors=True)  # the old set (and the old lock)

    def _rename_in(self, stage: Path, written: list[str], files: list[str]) -> None:
        """Rename the outputs in one by one, the manifest last, each file they replace (and
        each old output the new set lacks) moved aside first, so that a failure part-way
        (a folder with an output's name, an I/O error, Ctrl-C) puts every moved file back and
        takes the new ones out: the set is published whole or not at all."""
        self._refuse_folders(written)
        aside = stage / f"{STAGING}replaced"
        aside.mkdir()
        stale = sorted(set(self.old_files) - set(files) - {MANIFEST, LOCK})
        moved: list[str] = []  # names moved aside, in order
        placed: list[str] = []  # names of the new set renamed in
        try:
            for name in [*stale, MANIFEST]:
                if os.path.lexists(self.real / name):
                    os.replace(self.real / name, aside / name)
                    moved.append(name)
            # what a run killed (SIGKILL, power) while renaming leaves: old and new outputs
            # side by side under a manifest that claims every name of the set and says it
            # is not complete (a later run passes over names not there), not the old
            # manifest calling a mix the old set
            atomic_write_bytes(self.real / MANIFEST, _manifest_bytes(files, False, {}))
            placed.append(MANIFEST)
            for name in written:
                if os.path.lexists(self.real / name):
                    os.replace(self.real / name, aside / name)
                    moved.append(name)
                os.replace(stage / name, self.real / name)
                placed.append(name)
            os.replace(stage / MANIFEST, self.real / MANIFEST)
        except BaseException:  # Ctrl-C too: the caller removes the staging folder, and
            # with it each file moved aside that was not put back
            for name in reversed(placed):
                with contextlib.suppress(OSError):
                    (self.real / name).unlink()
            for name in reversed(moved):
                with contextlib.suppress(OSError):
                    os.replace(aside / name, self.real / name)
            raise
        shutil.rmtree(stage, ignore_errors=True)
