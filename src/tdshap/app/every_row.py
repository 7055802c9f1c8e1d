"""Every row of one file valued: two parts that swap the training and held-out rows.

Without validation rows, ``find_harmful`` and ``tdshap clean`` hold a share of the
rows out to judge the others (:func:`~tdshap.app.tabular.holdout_split`), so those
rows were never examined: half the file at the defaults, noise included, kept in the
cleaned file. Part 2 swaps the roles (:func:`~tdshap.app.tabular.swapped_split`):
the rows part 1 held out are valued and cleansed, part 1's rows held out to judge
them. Each row's flags come from the part that valued it; the parts' values come
from models trained on other rows, so they are compared within a part.

``every_row=True`` values both parts or says why part 2 cannot be planned (it trains
on fewer rows when the held-out share is below half: a class may be missing or a
setting too large for it); ``"auto"`` then values part 1 alone and its data line says
so; ``False`` (the default) is part 1 alone, and its data line says how to value the
rest. Off by default because on data with nothing wrong it also doubles what the cut
removes (``benchmarks/one_file.py --noise 0``; docs/benchmarks.md, "One noisy file").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from tdshap._validation import ParameterError
from tdshap.app.plan import RunPlan
from tdshap.app.run import HarmfulRun, PreparedData
from tdshap.result import unclashed_index

#: what part 1's data line adds when its held-out rows stay unvalued
NOT_ASKED = ", not valued (every_row=True, --every-row, values them too)"
TOO_FEW = (", not valued (too few rows to value them in a second part: every_row=True, "
           "--every-row, says why)")
#: what the data line says where every_row was asked for with validation rows given
WITH_VAL = ("; every_row / --every-row adds nothing here: with validation rows given, every "
            "row is valued")


def check_every_row(every_row: Any) -> bool | str:
    """``every_row`` as True, False or "auto"; anything else refused (``"no"`` would be
    truthy)."""
    if isinstance(every_row, bool | np.bool_):
        return bool(every_row)
    if isinstance(every_row, str) and every_row == "auto":
        return "auto"
    raise ParameterError(f"`every_row` {every_row!r} must be True, False or 'auto'.",
                         "every_row")


def plan_parts(every_row: bool | str, has_val: bool,
               prepare_part: Callable[[bool], PreparedData],
               plan_part: Callable[[PreparedData, int], RunPlan]) -> list[RunPlan]:
    """The checked plan of each part, all before any work: part 1 (``prepare_part(False)``),
    and part 2 (``prepare_part(True)``, the roles swapped) when ``every_row`` asks for it
    and no validation rows were given."""
    every_row = check_every_row(every_row)
    first = plan_part(prepare_part(False), 1)
    if has_val:  # every row is a training row already
        if every_row:
            first.data.split_note += WITH_VAL
        return [first]
    if not every_row:
        first.data.split_note += NOT_ASKED
        return [first]
    try:
        second = plan_part(prepare_part(True), 2)
    except ValueError as err:
        if every_row == "auto":
            first.data.split_note += TOO_FEW
            return [first]
        message = f"`every_row`: the held-out rows cannot be valued in a second part: {err}"
        raise ParameterError(message, "every_row", *getattr(err, "params", ())) from None
    return [first, second]


def parts_frame(parts: tuple[HarmfulRun, ...]) -> pd.DataFrame:
    """One table of every part's rows, in the input's row order; with more than one
    part, a ``part`` column (1, 2, ...) says which valued each row."""
    if len(parts) == 1:
        return parts[0].frame()
    tables = [p.frame().assign(part=i) for i, p in enumerate(parts, 1)]
    positions = np.concatenate([p.data.train_rows for p in parts])
    return unclashed_index(pd.concat(tables).iloc[np.argsort(positions, kind="stable")])
