"""Datasets and seeded splits used by the demo and the benchmarks.

Files that cannot ship with the package are found under a given path or the
environment variable ``TDSHAP_DATA_DIR``; nothing is bundled.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from tdshap.app.splits import Split, split

DATA_DIR_VAR = "TDSHAP_DATA_DIR"


def data_dir(path: str | os.PathLike[str] | None = None) -> Path | None:
    """``path`` if given, else ``$TDSHAP_DATA_DIR`` if set, else None."""
    if path is not None:
        return Path(path)
    env = os.environ.get(DATA_DIR_VAR)
    return Path(env) if env else None


# -- Abalone (UCI) -------------------------------------------------------------

ABALONE_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/abalone/abalone.data"
ABALONE_FILE = Path("abalone") / "abalone.data"
ABALONE_COLUMNS = ("Sex", "Length", "Diameter", "Height", "Whole weight", "Shucked weight",
                   "Viscera weight", "Shell weight", "Rings")
ABALONE_SEXES = ("F", "I", "M")


def cache_dir() -> Path:
    """Where downloads go: ``$XDG_CACHE_HOME/tdshap`` or ``~/.cache/tdshap``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tdshap"


def _download(url: str, target: Path) -> None:
    """Fetch ``url`` into ``target`` atomically (a failed download leaves nothing)."""
    import urllib.request

    from tdshap._io import atomic_write_bytes

    target.parent.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(url, timeout=60) as response:
        atomic_write_bytes(target, response.read())


def abalone_path(
    path: str | os.PathLike[str] | None = None, download: bool = True, url: str = ABALONE_URL
) -> Path:
    """Find ``abalone/abalone.data``; download it into :func:`cache_dir` when missing.

    Looked for, in order: ``path`` (the file itself, or a folder holding
    ``abalone/abalone.data`` or ``abalone.data``), ``$TDSHAP_DATA_DIR``, the
    cache folder. ``download=True`` fetches ``url`` into the cache when none
    has it.
    """
    candidates: list[Path] = []
    root = data_dir(path)
    if root is not None:
        candidates += [root, root / ABALONE_FILE, root / ABALONE_FILE.name]
    cached = cache_dir() / ABALONE_FILE
    candidates.append(cached)
    for c in candidates:
        if c.is_file():
            return c
    where = f"{path}" if path is not None else f"${DATA_DIR_VAR}={os.environ.get(DATA_DIR_VAR)}"
    hint = (
        f"Abalone data not found (looked in {where} and {cached}). Set {DATA_DIR_VAR} to a "
        f"folder holding {ABALONE_FILE}, pass path=, or allow the download from {url}"
    )
    if not download:
        raise FileNotFoundError(hint + " (download=True).")
    try:
        _download(url, cached)
    except OSError as err:  # URLError is an OSError: no network, or a bad URL
        raise FileNotFoundError(f"{hint}: the download failed ({err}).") from err
    return cached


def load_abalone(
    path: str | os.PathLike[str] | None = None, download: bool = True, url: str = ABALONE_URL
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Abalone as ``(X, y, feature_names)``: Sex one-hot (F, I, M), 7 measurements; y = Rings."""
    import pandas as pd

    file = abalone_path(path, download, url)
    frame = pd.read_csv(file, header=None, names=list(ABALONE_COLUMNS))
    if frame.isna().any().any() or not set(frame["Sex"]).issubset(ABALONE_SEXES):
        raise ValueError(
            f"{file} is not the UCI abalone.data file: expected 9 comma-separated fields per "
            f"row with Sex in {ABALONE_SEXES}."
        )
    sex = np.stack([(frame["Sex"] == s).to_numpy(float) for s in ABALONE_SEXES], axis=1)
    measures = frame[list(ABALONE_COLUMNS[1:-1])].to_numpy(float)
    names = [f"Sex_{s}" for s in ABALONE_SEXES] + list(ABALONE_COLUMNS[1:-1])
    return np.hstack([sex, measures]), frame["Rings"].to_numpy(float), names


def abalone(
    seed: int,
    sizes: tuple[int, int, int] = (1000, 1000, 1000),
    path: str | os.PathLike[str] | None = None,
    download: bool = True,
) -> Split:
    """The paper's Abalone regression split (1000/1000/1000 by default) for ``seed``."""
    X, y, _ = load_abalone(path, download)
    return split(X, y, sizes, seed, name="abalone")
