"""Finished benchmark cells on disk: one JSON file per cell, written atomically.

A long study writes each cell as it finishes, so a crash loses at most the
running cell and a rerun skips what is done. A store may pin the setting its
cells were made with (``setting.json``) and refuses cells of another setting
in the same folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tdshap._io import atomic_write_bytes, jsonable


class CellStore:
    """Cells under ``out/cells/<name>.json``; ``setting`` pins the folder to one setting."""

    def __init__(self, out: str | Path, setting: dict[str, Any] | None = None) -> None:
        self.out = Path(out)
        # a folder of the user's would have its report.md, summary.md or curves/ replaced
        if self.out.is_dir() and any(self.out.iterdir()) and not (self.out / "cells").is_dir():
            raise ValueError(f"--out {self.out} holds files this study did not write (it has no "
                             "cells/ folder): pass a new or empty --out.")
        (self.out / "cells").mkdir(parents=True, exist_ok=True)
        if setting is None:
            return
        file = self.out / "setting.json"
        key = jsonable(setting)
        if file.exists():
            if _read(file) != key:
                raise ValueError(
                    f"{self.out} holds cells of another setting ({file}); pass another --out "
                    "or delete that folder."
                )
        else:
            atomic_write_bytes(file, json.dumps(key, indent=1).encode())

    def path(self, name: str) -> Path:
        return self.out / "cells" / f"{name}.json"

    def checkpoint(self, name: str) -> Path:
        """Where an unfinished valuation of this cell keeps its state."""
        return self.out / "cells" / f"{name}.tdshap"

    def get(self, name: str) -> dict[str, Any] | None:
        path = self.path(name)
        return _read(path) if path.is_file() else None

    def put(self, name: str, cell: dict[str, Any]) -> None:
        atomic_write_bytes(self.path(name), json.dumps(jsonable(cell), indent=1).encode())

    def all(self) -> list[dict[str, Any]]:
        """Every cell in the folder (from this and earlier runs), by file name."""
        return [_read(p) for p in sorted((self.out / "cells").glob("*.json"))]


def _read(path: Path) -> dict[str, Any]:
    """A cell's (or the setting's) JSON object; an edited or damaged file is refused by name
    (it ended in json's bare message, or in a TypeError traceback when not an object)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object as this study writes: it was edited or "
                         "damaged; delete it to compute that cell again.")
    return data
