"""Files the library writes: strict-JSON values and atomic writes."""

from __future__ import annotations

import contextlib
import errno
import math
import os
import stat
import zipfile
from collections import Counter
from pathlib import Path
from typing import IO, Any

import numpy as np


def jsonable(obj: Any) -> Any:
    """Make ``obj`` strict JSON: numpy scalars to Python, NaN/inf to None."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def repeated_key(pairs: list[tuple[str, Any]]) -> tuple[str, int] | None:
    """The first key that a JSON object's ``pairs`` give more than once and how often, or
    None: ``json.loads`` keeps the last of them, silently."""
    seen = Counter(key for key, _ in pairs)
    return next(((key, n) for key, n in seen.items() if n > 1), None)


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' ``object_pairs_hook`` for the files this library reads back: a key
    given twice (an edited or merged file) is a ``ValueError``, not the last one's value."""
    found = repeated_key(pairs)
    if found is not None:
        raise ValueError(f"its JSON gives the key {found[0]!r} {found[1]} times in one "
                         "object: each key must appear once")
    return dict(pairs)


def image_path(path: Any) -> Path:
    """``path`` as the file a figure is saved to, checked before anything is drawn: a
    folder or "" was saved beside it as "folder.png" or ".png" (matplotlib adds the
    suffix; "/dev/null" became "/dev/null.png"), a ".txt" or a missing folder failed
    inside matplotlib or Pillow."""
    from matplotlib.backend_bases import FigureCanvasBase

    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a file name such as 'curve.png', got {path!r}.")
    if not os.fspath(path):
        raise ValueError("path is empty: give a file name such as 'curve.png'.")
    out = Path(path)
    formats = FigureCanvasBase.get_supported_filetypes()
    if out.is_dir():
        raise ValueError(f"{out} is a folder: give a file name in it, e.g. {out / 'curve.png'}.")
    if out.suffix.lower().lstrip(".") not in formats:
        raise ValueError(f"{out} does not end in an image format matplotlib writes: use "
                         f"one of {', '.join('.' + f for f in sorted(formats))} (e.g. .png).")
    check_folder_of(out)
    return out


def check_folder_of(out: Path) -> None:
    """Refuse a file ``out`` whose folder is missing (or a file): the write failed with
    the bare ``FileNotFoundError`` or ``NotADirectoryError`` of ``open``."""
    if out.parent.is_dir():
        return
    problem = ("is a file, not a folder; choose another path" if out.parent.exists() else
               "does not exist; create it first or choose another path")
    raise ValueError(f"cannot save {out}: folder {out.parent} {problem}.")


#: a write's errors that mean no room was left: on the disk, or in the user's quota on it
_NO_ROOM = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


def is_disk_full(err: OSError) -> bool:
    """Whether ``err`` is a write that found the disk (or the user's quota) full."""
    return err.errno in _NO_ROOM


def os_reason(err: OSError) -> str:
    """Why a read or write failed, for a message: a full disk in words that name the fix
    ("No space left on device" named none), anything else as the system says it."""
    if is_disk_full(err):
        return (f"the disk is full ({err.strerror or err}): free space on it, or write to "
                "another disk")
    return str(err.strerror or err)


#: folder -> where atomic writes into it make their temporary file (see :func:`temporaries_in`)
_TEMPORARIES_IN: dict[str, Path] = {}


def temporaries_in(folder: Path, scratch: Path | None) -> None:
    """Make the temporary files of this process's atomic writes into ``folder`` in
    ``scratch`` (a folder of the same file system), or again beside their target (None).

    An output folder the program owns (``tdshap.app.outdir``) keeps them in a folder of
    its own that it marks: there a killed run's leftover is known to be the program's.
    Beside the target, ``.values.csv.tmp-123`` could as well be a file of the user's.
    """
    key = os.path.realpath(folder)
    if scratch is None:
        _TEMPORARIES_IN.pop(key, None)
    else:
        _TEMPORARIES_IN[key] = Path(scratch)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file and rename: never half a file."""
    path = Path(path)
    scratch = _TEMPORARIES_IN.get(os.path.realpath(path.parent))
    tmp = (scratch or path.parent) / f".{path.name}.tmp-{os.getpid()}"
    try:
        # the name is predictable: whatever sits there (a dead process's leftover, or a link
        # to a user's file) is removed, and "x" creates the file or fails, never writing
        # through a link put there meanwhile
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        with open(tmp, "xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as err:  # a full disk must not leave a truncated temporary file
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(err, OSError) and err.filename in (str(tmp), None):
            # it names the hidden temporary file (".r.json.tmp-123"), or (a write's, such as a
            # full disk's) no file at all; the caller asked for path
            raise type(err)(err.errno, err.strerror, str(path)) from None
        raise


def read_small_file(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not a link) of at most ``limit``
    bytes, else None. A folder's own small files (a manifest, a lock) are read this way:
    opened without following a link (one to /dev/zero filled memory) and without
    blocking (a FIFO hung the run forever), and only up to ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(
            os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        data = fh.read(limit + 1)  # it may have grown since it was opened
    return data if len(data) <= limit else None


def unpacked_size_problem(fh: IO[bytes]) -> str | None:
    """Why the ``.npz`` archive open in ``fh`` would unpack to more than it holds, or None.

    ``np.savez`` stores its arrays uncompressed, so the members of an archive this
    library wrote add up to less than the file itself. A compressed member, or
    members that share their bytes, could unpack to gigabytes from a small file
    (a "zip bomb"): such an archive is refused before numpy reads any of it.
    ``fh`` is left at its start.
    """
    size = fh.seek(0, os.SEEK_END)
    fh.seek(0)
    try:
        with zipfile.ZipFile(fh) as archive:
            members = archive.infolist()
    finally:
        fh.seek(0)
    packed = [m.filename for m in members if m.compress_type != zipfile.ZIP_STORED]
    if packed:
        return f"member {packed[0]!r} is compressed; tdshap writes its archives uncompressed"
    total = sum(m.file_size for m in members)
    if total > size:
        return f"its members unpack to {total:,} bytes, more than the file's {size:,}"
    return None
