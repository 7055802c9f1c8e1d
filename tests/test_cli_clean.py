"""``tdshap clean`` / ``tdshap value`` through the real command (a subprocess each)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

# the CLI mechanics with the paper's TDShap (it checkpoints); the default method has its own test
FAST = ["--method", "tdshap", "--max-iter", "1", "--no-progress"]


def tdshap(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tdshap.app.cli", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def table(n: int = 40, seed: int = 0, task: str = "classification") -> pd.DataFrame:
    """A small table: two numeric features, one text feature, a target."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    frame = pd.DataFrame({"a": a.round(3), "b": b.round(3),
                          "colour": rng.choice(["red", "green", "blue"], n)})
    if task == "classification":
        frame["y"] = np.where(a + 0.3 * rng.normal(size=n) > 0, "yes", "no")
    else:
        frame["y"] = (2 * a - b + 0.1 * rng.normal(size=n)).round(4)
    return frame


def write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path


def assert_input_error(res: subprocess.CompletedProcess[str], out: Path, *words: str) -> None:
    """Exit status 2, one line on stderr naming the problem, no traceback, no output."""
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2, res.stderr
    assert len(lines) == 1 and lines[0].startswith("Error: "), res.stderr
    assert "Traceback" not in res.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert not out.exists() or not any(out.iterdir())


@pytest.fixture
def train(tmp_path: Path) -> Path:
    return write(table(), tmp_path / "train.csv")


# -- the error corpus -----------------------------------------------------------------
def test_missing_file(tmp_path: Path) -> None:
    res = tdshap("clean", "nope.csv", "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "nope.csv", "does not exist")


@pytest.mark.parametrize("content", ["", "a,b,y\n"], ids=["empty", "header-only"])
def test_empty_file(tmp_path: Path, content: str) -> None:
    (tmp_path / "t.csv").write_text(content)
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "t.csv")
    assert "empty" in res.stderr or "no data rows" in res.stderr


@pytest.mark.parametrize("name", ["t.csv", "t.parquet"])
def test_unreadable_format(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x00garbage\xff" * 20)
    res = tdshap("clean", name, "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", name)


def _zipped(text: str) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("t.csv", text)
    return buf.getvalue()


def _parquet(frame: pd.DataFrame) -> bytes:
    import io

    buf = io.BytesIO()
    frame.to_parquet(buf)
    return buf.getvalue()


def _text(frame: pd.DataFrame, **kwargs: str) -> str:
    return frame.to_csv(index=False, **kwargs)


@pytest.mark.parametrize(("name", "content", "words"), [
    ("t.csv", lambda: _text(table().replace("red", "ros\xe9")).encode("latin-1"),
     ("not UTF-8 text (byte 0xe9", "save it as UTF-8")),
    ("t.csv", lambda: _text(table()).encode("utf-16"), ("UTF-16", "save it as UTF-8")),
    # without a byte order mark it is valid UTF-8: "its columns: a\x00, \x00b\x00, ..."
    ("t.csv", lambda: _text(table()).encode("utf-16-le"),
     ("holds NUL bytes (the first at position 1)", "UTF-16 text without a byte order mark?")),
    ("t.csv", lambda: _text(table()).encode("utf-32"), ("it is UTF-32 text",)),
    ("t.csv", lambda: _text(table()).replace("\n", "\x00\n", 1).encode(),
     ("holds NUL bytes", "a binary or damaged file?")),
    ("t.csv", lambda: _zipped(_text(table())), ("zip archive", "export the sheet as CSV")),
    ("t.csv", lambda: __import__("gzip").compress(_text(table()).encode()),
     ("gzip-compressed",)),
    ("t.csv", lambda: _text(table(), sep=";").encode(),
     ("single column 'a;b;colour;y'", "semicolon-separated")),
    ("t.tsv", lambda: _text(table()).encode(), ("comma-separated", "suffix .csv")),
    ("t.parquet", lambda: _text(table()).encode(), ("does not begin as a Parquet file",
                                                    "suffix .csv")),
    # pyarrow's words alone, with two full stops: "... not a parquet file.."
    ("t.parquet", lambda: _parquet(table())[:300], ("as Parquet (ArrowInvalid",
                                                    "damaged or cut short", "save it as CSV")),
    ("t.csv", lambda: (_text(table()) + "1,2,red,0,9,9\n").encode(),
     ("Expected 4 fields", "quote values that hold the separator")),
    # read as CSV, its header was "[": "target column 'y' is not in ... (its columns: [)"
    ("t.json", lambda: table().to_json(orient="records", indent=1).encode(),
     ("it is JSON", "pandas.read_json(path).to_csv")),
    ("t.jsonl", lambda: table().to_json(orient="records", lines=True).encode(),
     ("it is JSON", "lines=True")),
], ids=["latin-1", "utf-16", "utf-16-unmarked", "utf-32", "nul", "zip", "gzip", "semicolons",
        "commas-in-tsv", "csv-as-parquet",
        "cut-short-parquet", "extra-fields", "json", "json-lines"])
def test_a_file_that_is_not_the_text_expected_says_what_it_is(
        tmp_path: Path, name: str, content: Any, words: tuple[str, ...]) -> None:
    (tmp_path / name).write_bytes(content())
    res = tdshap("clean", name, "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", name, *words)


@pytest.mark.parametrize("suffix", [".gz", ".zip", ".zst", ".tar"])
def test_a_text_file_named_like_an_archive_is_read_as_the_text_it_is(
        tmp_path: Path, suffix: str) -> None:
    # pandas guessed a compression from the name: "Not a gzipped file (b'a,')", "BadZipFile",
    # "Import zstandard failed" (a fix that fixed nothing), "method tar: ReadError"
    name = f"t.csv{suffix}"
    (tmp_path / name).write_text(_text(table()))
    res = tdshap("value", name, "--target", "y", "--out", "out", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert len(pd.read_csv(tmp_path / "out" / "values.csv")) > 0


@pytest.mark.parametrize(("files", "fraction", "words"), [
    (["--val"], ["--val-fraction", "0.5"], "--val-fraction 0.5 has no effect with --val"),
    (["--test"], ["--test-fraction", "0.5"], "--test-fraction 0.5 has no effect with --test"),
    (["--val"], ["--test-fraction", "0.3"], "--test-fraction 0.3 has no effect with --val"),
])
def test_a_fraction_of_train_beside_the_file_of_those_rows_is_refused(
        tmp_path: Path, files: list[str], fraction: list[str], words: str) -> None:
    # the fraction was ignored without a word: --val-fraction 0.5 beside --val held out none
    write(table(), tmp_path / "t.csv")
    write(table(seed=1), tmp_path / "other.csv")
    res = tdshap("clean", "t.csv", "--target", "y", *files, "other.csv", *fraction, "--out",
                 "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", words, "a share of TRAIN is held out only "
                       "without it; leave out")


def test_a_target_named_with_other_spaces_or_case_names_the_column_meant(
        tmp_path: Path) -> None:
    # a Parquet file keeps spaces at a name's end: "target column 'y' is not in t.parquet
    # (its columns: a, b, colour, y )", the space invisible
    table().rename(columns={"y": "y "}).to_parquet(tmp_path / "t.parquet")
    res = tdshap("clean", "t.parquet", "--target", "Y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "target column 'Y' is not in",
                       "its column 'y ' differs only in case or spaces: pass --target 'y '")


def test_control_characters_in_a_files_names_are_shown_escaped(tmp_path: Path) -> None:
    # a column named "\x1b]0;...\x07" (an escape that sets the terminal's title; click
    # strips only colour codes) or holding a right-to-left override was echoed raw into the
    # error line
    title, flip = "\x1b]0;owned\x07b", "c\u202ed"
    write(table().rename(columns={"b": title, "colour": flip}), tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "z", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "target column 'z' is not in",
                       "(its columns: a, \\x1b]0;owned\\x07b, c\\u202ed, y)")
    assert "\x1b" not in res.stderr and "\u202e" not in res.stderr


def test_a_very_long_column_name_is_cut_short_in_the_list_of_columns(tmp_path: Path) -> None:
    # the list of columns showed a 100,000-character name whole: an Error line of 100 kB
    write(table().rename(columns={"b": "b" * 100_000}), tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "z", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", f"(its columns: a, {'b' * 57}..., colour, y)")
    assert len(res.stderr) < 300
    # and thousands of repeated names were all listed
    header = ",".join(f"c{i % 2000}" for i in range(4000)) + ",y"
    (tmp_path / "wide.csv").write_text(header + "\n" + ",".join(["1"] * 4001) + "\n")
    res = tdshap("clean", "wide.csv", "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "has duplicate column names: c0, c1, c10, c100, "
                       "c1000, ...; rename them")
    assert len(res.stderr) < 300


def test_ids_and_names_with_control_characters_stay_escaped_in_the_summary_and_report(
        tmp_path: Path) -> None:
    # a row id holding an escape and a line break was printed raw in the worst rows, and
    # split report.md's table row in two; a column name with a backtick ended its code span
    frame = table()
    frame.insert(0, "id", [f"\x1b]0;r{i}\x07\nx|" for i in range(len(frame))])
    frame = frame.rename(columns={"colour": "col`our\n# heading"})
    frame.to_csv(tmp_path / "t.csv", index=False)
    res = tdshap("clean", "t.csv", "--target", "y", "--id-column", "id", "--out", "out",
                 *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout and "\\x1b]0;r" in res.stdout, res.stdout
    report = (tmp_path / "out" / "report.md").read_text()
    assert "\x1b" not in report and "\n# heading" not in report
    assert "``col`our\\n# heading``: one-hot, 3 levels" in report
    rows = [line for line in report.splitlines() if line.startswith("| \\x1b]0;r")]
    assert len(rows) == 20 and all(line.endswith(" |") for line in rows), rows
    assert "\\nx\\|" in rows[0]


@pytest.mark.parametrize("old", ["14.0.0", "12.0.1"])
def test_a_pyarrow_that_runs_a_files_code_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str) -> None:
    # pyarrow 0.14 to 14.0.0 unpickle a column type from the file (CVE-2023-47248), and
    # the parquet extra asked only for pyarrow>=14: a file could make the run execute code
    import pyarrow

    from tdshap.app.tabular import read_table

    table().to_parquet(tmp_path / "t.parquet")
    monkeypatch.setattr(pyarrow, "__version__", old)
    with pytest.raises(ValueError, match=rf"reading Parquet with pyarrow {old} would run code "
                       r"that a file can hold \(CVE-2023-47248\): pip install -U "
                       r"'pyarrow>=14\.0\.1'"):
        read_table(tmp_path / "t.parquet", "training file")
    monkeypatch.undo()
    assert len(read_table(tmp_path / "t.parquet", "training file")) == len(table())


def test_no_feature_columns(tmp_path: Path) -> None:
    write(table()[["y"]], tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "no feature columns besides the target 'y'")


@pytest.mark.parametrize("task", [[], ["--task", "classification"]])
def test_an_infinite_label_is_named_without_warnings(tmp_path: Path, task: list[str]) -> None:
    frame = table()
    frame["y"] = (frame["a"] > 0).astype(float)
    frame.loc[3, "y"] = np.inf
    write(frame, tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "y", *task, "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "target column 'y' has inf in row 3")
    assert "warnings on the way" not in res.stderr


def test_a_number_beyond_the_float_range_says_why_it_is_inf(tmp_path: Path) -> None:
    # the file says 1e400; the message said only "column 'a' has inf in row 5"
    text = table().to_csv(index=False).splitlines()
    cells = text[6].split(",")
    text[6] = ",".join(["1e400", *cells[1:]])
    (tmp_path / "t.csv").write_text("\n".join(text) + "\n")
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "column 'a' has inf in row 5: replace it with a "
                       "finite value or drop the row (a number beyond floating point's range, "
                       "such as 1e400, is read as inf)")


def test_a_validation_value_past_float32_for_a_tree_names_the_data(tmp_path: Path,
                                                                    train: Path) -> None:
    # 1e39 is finite and standardises, but a tree computes in float32: the trial fits before
    # a TDShap run said "fix the model or its parameters"
    write(table(seed=1).assign(a=lambda v: np.where(v.index == 4, 1e39, v["a"])),
          tmp_path / "val.csv")
    res = tdshap("clean", train, "--target", "y", "--val", "val.csv", "--model", "dtree",
                 "--out", "out", *FAST, cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "failed on every one of 2 trial fits",
                       "past the float32 range", "so the problem is the data")
    assert "fix the model" not in res.stderr


def test_a_held_out_row_too_large_to_standardise_is_named_by_column_and_row(
        tmp_path: Path) -> None:
    # a row of TRAIN held out for validation or test: "X_val's column 0 has values too large
    # to standardise" (or X_test's), an argument and an encoded column the command has not
    frame = table()
    for row in range(len(frame)):
        frame["a"] = table()["a"].where(frame.index != row, 1e307)
        write(frame, tmp_path / "t.csv")
        res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", cwd=tmp_path)
        assert res.returncode == 2
        if "X_" in res.stderr or "has a value too large" in res.stderr:
            break  # a held-out row (the training rows' own is refused by its spread)
    assert_input_error(res, tmp_path / "out", f"column 'a' has a value too large to "
                       f"standardise in row {row} (1e+307): rescale the column")


@pytest.mark.parametrize(("change", "words"), [
    (lambda v: v.assign(a="x"),
     ("column 'a' of the validation data holds 'x' in row 0", "numeric in the training")),
    (lambda v: v.assign(y=(v["a"] > 0).astype(int)),
     ("validation labels (", "share no class with the training labels ('no', 'yes')")),
    # "column 'a' has inf in row 4" named no file: TRAIN's row 4 read as the one meant
    (lambda v: v.assign(a=np.where(v.index == 4, np.inf, v["a"])),
     ("column 'a' of the validation data has inf in row 4",)),
    # finite with the training rows' spread, too large for the validation rows' own: it was
    # "X_val's column 0 has values too large to standardise", an argument the command has not
    (lambda v: v.assign(a=np.where(v.index == 4, 1e307, v["a"])),
     ("column 'a' of the validation data has a value too large to standardise in row 4 "
      "(1e+307): rescale the column",)),
], ids=["text-in-numbers", "other-labels", "inf", "beyond-its-spread"])
def test_validation_data_unlike_the_training_data(tmp_path: Path, train: Path, change: Any,
                                                  words: tuple[str, ...]) -> None:
    write(change(table(seed=1)), tmp_path / "val.csv")
    res = tdshap("clean", train, "--target", "y", "--val", "val.csv", "--out", "out", *FAST,
                 cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", *words)


def test_a_column_filled_in_the_validation_rows_only_is_in_the_report(
        tmp_path: Path, train: Path) -> None:
    # --impute filled a validation column with the training median and report.md, which
    # listed the training rows' imputed columns alone, did not say so
    val = table(seed=1)
    val.loc[[2, 5], "a"] = np.nan
    write(val, tmp_path / "val.csv")
    res = tdshap("clean", train, "--target", "y", "--val", "val.csv", "--impute", "--out",
                 "out", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "- imputed in held-out rows only: {'a': " in (tmp_path / "out" / "report.md").read_text()


def test_an_unnamed_index_column_names_the_rows_not_a_feature(tmp_path: Path) -> None:
    # DataFrame.to_csv's default writes the row index as a first column with no name: it was
    # read as a feature "Unnamed: 0" (the row number, standardised) and the k-NN's distances
    # silently mixed it in; it now names the rows, as read_csv(index_col=0) reads it
    frame = table()
    frame.index = frame.index + 100
    frame.to_csv(tmp_path / "train.csv")
    res = tdshap("clean", "train.csv", "--target", "y", "--out", "out", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "named by the unnamed first column of train.csv" in res.stdout
    values = pd.read_csv(tmp_path / "out" / "values.csv")
    assert values.columns[0] == "row" and set(values["row"]) <= set(frame.index)
    assert (tmp_path / "out" / "cleaned.csv").read_text().startswith(",a,b,colour,y\n")
    # the same rows without the index column value the same: it was no feature
    frame.to_csv(tmp_path / "plain.csv", index=False)
    res = tdshap("clean", "plain.csv", "--target", "y", "--out", "out2", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    plain = pd.read_csv(tmp_path / "out2" / "values.csv")
    np.testing.assert_array_equal(values["value"], plain["value"])
    np.testing.assert_array_equal(values["row"] - 100, plain["row"])


def test_a_validation_file_with_or_without_a_pandas_index(tmp_path: Path) -> None:
    table().to_csv(tmp_path / "train.csv")
    table(seed=1).to_csv(tmp_path / "val.csv", index=False)
    res = tdshap("clean", "train.csv", "--target", "y", "--val", "val.csv", "--out", "out",
                 *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    table().to_csv(tmp_path / "train.csv", index=False)
    table(seed=1).to_csv(tmp_path / "val.csv")
    res = tdshap("clean", "train.csv", "--target", "y", "--val", "val.csv", "--out", "out2",
                 *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("lines", ["every line", "the header"])
def test_a_separator_ending_the_lines_names_it_not_a_row_index(tmp_path: Path,
                                                               lines: str) -> None:
    # an empty column without a name was called pandas' row index: "pass --id-column
    # 'Unnamed: 4' to name the rows by it", whose every id is missing
    text = table().to_csv(index=False)
    text = (text.replace("\n", ",\n") if lines == "every line" else
            text.replace("\n", ",\n", 1))
    (tmp_path / "t.csv").write_text(text)
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "column 5 of training file t.csv has no name "
                       "and no values (a separator at the end of the lines?): remove the "
                       "trailing separators")


def test_a_spreadsheets_separator_line_before_the_header_is_named(tmp_path: Path) -> None:
    # "sep=," (Excel's hint) was read as the header: "target column 'y' is not in t.csv
    # (its columns: sep=, Unnamed: 1)"
    (tmp_path / "t.csv").write_text("sep=,\n" + table().to_csv(index=False))
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "training file t.csv begins with the line "
                       "'sep=,', a spreadsheet's separator hint, not the header: delete that line")


def test_an_unnamed_column_that_is_no_index_is_refused(tmp_path: Path) -> None:
    frame = table()
    frame.insert(0, "", 1)  # repeats: no row index
    frame.to_csv(tmp_path / "train.csv", index=False)
    res = tdshap("clean", "train.csv", "--target", "y", "--out", "out", *FAST, cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "column 1 of training file train.csv has no name",
                       "--id-column 'Unnamed: 0'")
    res = tdshap("clean", "train.csv", "--target", "y", "--id-column", "Unnamed: 0",
                 "--out", "out", *FAST, cwd=tmp_path)
    assert res.returncode == 2 and "repeats ids" in res.stderr
    # a later column without a name is no row index: pandas writes that one first
    frame = table().rename(columns={"b": " "})
    frame.to_csv(tmp_path / "later.csv", index=False)
    res = tdshap("clean", "later.csv", "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "column 2 of training file later.csv has no name "
                       "(its header cell is empty or blank): pass --id-column 'Unnamed: 1'")
    assert "row index" not in res.stderr


def test_ids_that_differ_by_leading_spaces_are_repeats_and_the_message_says_why(
        tmp_path: Path) -> None:
    frame = table()
    frame.insert(0, "id", [f"{' ' * (i % 2)}{i // 2:03d}" for i in range(len(frame))])
    frame.to_csv(tmp_path / "train.csv", index=False)
    res = tdshap("clean", "train.csv", "--target", "y", "--id-column", "id", "--out", "out",
                 *FAST, cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "repeats ids (e.g. '000'", "leading spaces")


@pytest.mark.parametrize("name", ["value", "removed"])
def test_an_id_column_named_like_a_values_csv_column_is_refused(tmp_path: Path,
                                                                name: str) -> None:
    # values.csv began "value,value,ci_low,..." and pandas read the ids as values["value"]
    frame = table()
    frame.insert(0, name, [f"r{i}" for i in range(len(frame))])
    frame.to_csv(tmp_path / "train.csv", index=False)
    res = tdshap("clean", "train.csv", "--target", "y", "--id-column", name, "--out", "out",
                 *FAST, cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", f"id column {name!r} of training file",
                       "values.csv would hold two columns of that name", "rename the id column")


def test_an_id_column_named_like_a_column_values_csv_lacks_keeps_its_name(
        tmp_path: Path) -> None:
    # the library's table renames an index named like one of its columns ("stderr_index");
    # values.csv holds no stderr column, so its ids keep the name the file gives them
    frame = table()
    frame.insert(0, "stderr", [f"r{i}" for i in range(len(frame))])
    frame.to_csv(tmp_path / "train.csv", index=False)
    res = tdshap("clean", "train.csv", "--target", "y", "--id-column", "stderr", "--out",
                 "out", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    values = pd.read_csv(tmp_path / "out" / "values.csv")
    assert values.columns[0] == "stderr" and values["stderr"].str.startswith("r").all()


def test_a_text_column_of_row_names_is_not_used_and_names_the_rows_when_asked(
        tmp_path: Path) -> None:
    # a customer id read as a feature: one-hot levels of their own for a few rows at
    # random, so those rows stood apart in every k-NN distance, without a word
    frame = table(n=60)
    frame.insert(0, "customer", [f"C{i:04d}" for i in range(60)])
    frame.to_csv(tmp_path / "train.csv", index=False)
    res = tdshap("clean", "train.csv", "--target", "y", "--out", "out", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "warning: UserWarning: column 'customer' holds a different text in every " \
        "training row (a row id or name?): not used as a feature" in res.stderr, res.stderr
    assert "`customer`: not used" in (tmp_path / "out" / "report.md").read_text()
    res = tdshap("clean", "train.csv", "--target", "y", "--id-column", "customer",
                 "--out", "out2", *FAST, cwd=tmp_path)
    assert res.returncode == 0 and "customer" not in res.stderr, res.stderr
    assert pd.read_csv(tmp_path / "out2" / "values.csv")["customer"].str.startswith("C").all()


def test_a_validation_class_no_training_row_has_is_a_warning(tmp_path: Path,
                                                             train: Path) -> None:
    val = table(seed=1)
    val.loc[0, "y"] = "maybe"
    write(val, tmp_path / "val.csv")
    res = tdshap("value", train, "--target", "y", "--val", "val.csv", "--out", "out", *FAST,
                 cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip().splitlines() == [
        "warning: UserWarning: the validation labels include 1 class(es) no training row has "
        "('maybe'; 1 row): no model can predict them, so those rows count as errors for every "
        "model."]


@pytest.mark.parametrize("flag", ["--val", "--test"])
def test_a_typo_in_a_held_out_files_number_labels_names_the_cell(tmp_path: Path,
                                                                  flag: str) -> None:
    # "one" among 0/1 made the held-out column text: "the validation labels ('one', '0',
    # '1') share no class with the training labels (0, 1)", the typo hidden among them
    frame = table(n=60).assign(y=lambda f: (f["a"] > 0).astype(int))
    write(frame.iloc[:40], tmp_path / "t.csv")
    held = frame.iloc[40:].astype({"y": object}).reset_index(drop=True)
    held.loc[3, "y"] = "one"
    write(held, tmp_path / "held.csv")
    res = tdshap("clean", "t.csv", "--target", "y", flag, "held.csv", "--out", "out",
                 cwd=tmp_path)
    what = "validation" if flag == "--val" else "test"
    assert_input_error(res, tmp_path / "out", f"target column 'y' of the {what} data holds "
                       "numbers except in 1 cell: 'one' (row 3); so it was read as text")


def test_a_tau_far_from_every_value_plots_without_overflow(tmp_path: Path, train: Path) -> None:
    res = tdshap("value", train, "--target", "y", "--tau", "1e308", "--out", "out", *FAST,
                 cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""  # no numpy overflow warnings from drawing tau
    assert (tmp_path / "out" / "values.png").exists()


def test_an_eps_near_the_float_range_plots_without_overflow(tmp_path: Path,
                                                           train: Path) -> None:
    # tau = -eps and tau - eps overflowed: the finished run ended in matplotlib's "Axis limits
    # cannot be NaN or Inf", after numpy's overflow warnings from the APT index every round
    res = tdshap("value", train, "--target", "y", "--eps", "1e308", "--out", "out", *FAST,
                 cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    assert (tmp_path / "out" / "values.png").exists()


def test_target_missing(tmp_path: Path, train: Path) -> None:
    res = tdshap("clean", train, "--target", "label", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "target column 'label'", "a, b, colour, y")


def test_non_numeric_regression_target(tmp_path: Path, train: Path) -> None:
    res = tdshap("clean", train, "--target", "y", "--task", "regression", "--out", "out",
                 cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "not numeric", "--task classification")


def test_single_class(tmp_path: Path) -> None:
    frame = table()
    frame["y"] = "yes"
    write(frame, tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "single class")


def test_single_class_names_the_value_as_written() -> None:
    from tdshap.app.tabular import check_target

    with pytest.raises(ValueError, match=r"single class \(1\): classification"):
        check_target(pd.Series(np.ones(5, dtype=np.int64), name="y"), "classification")


def test_nan_names_column_and_offers_impute(tmp_path: Path) -> None:
    frame = table()
    frame.loc[[3, 7], "b"] = np.nan
    write(frame, tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "column 'b'", "2 missing", "--impute")


@pytest.mark.parametrize(("column", "words"), [
    ("b", ("column 'b' has 2 missing values in the validation data", "--impute")),
    ("y", ("target column 'y' has 2 missing values in the validation data",))])
def test_missing_values_of_a_held_out_file_name_that_file(tmp_path: Path, column: str,
                                                         words: tuple[str, ...]) -> None:
    # the message named the column and a row number but not the file it was in
    write(table(), tmp_path / "t.csv")
    held = table(seed=1)
    held.loc[[3, 7], column] = np.nan
    write(held, tmp_path / "v.csv")
    res = tdshap("clean", "t.csv", "--target", "y", "--val", "v.csv", "--out", "out",
                 cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", *words)


@pytest.mark.parametrize("flags, words", [
    (("--val", "t.csv"), ("--val", "is the training file itself")),
    (("--test", "./t.csv", "--val", "v.csv"), ("--test", "is the training file itself")),
    (("--val", "v.csv", "--test", "v.csv"), ("--val and --test name the same file",)),
])
def test_held_out_files_that_are_the_training_file_are_refused(
        tmp_path: Path, flags: tuple[str, ...], words: tuple[str, ...]) -> None:
    # the rows would judge the model fitted to them: validation and test leak nothing
    write(table(), tmp_path / "t.csv")
    write(table(seed=1), tmp_path / "v.csv")
    res = tdshap("clean", "t.csv", "--target", "y", *flags, "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", *words)


def test_a_date_target_is_classes_however_the_file_holds_it(tmp_path: Path) -> None:
    # a Parquet date32 target was refused ("a label of type date") while the same dates as
    # a timestamp column, or as CSV text, were classes, one per date
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = table(n=48).drop(columns=["colour"])
    days = pd.Series(pd.to_datetime("2024-01-05") + pd.to_timedelta(
        (frame["y"] == "yes").astype(int), unit="D"))
    frame.assign(y=days.dt.date).to_parquet(tmp_path / "d.parquet", index=False)
    assert pq.read_schema(tmp_path / "d.parquet").field("y").type == pa.date32()
    frame.assign(y=days).to_parquet(tmp_path / "t.parquet", index=False)
    write(frame.assign(y=days.dt.strftime("%Y-%m-%d")), tmp_path / "t.csv")
    values = {}
    for name in ("d.parquet", "t.parquet", "t.csv"):
        res = tdshap("clean", name, "--target", "y", "--out", f"out-{name}", *FAST,
                     cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        values[name] = pd.read_csv(tmp_path / f"out-{name}" / "values.csv")
    pd.testing.assert_frame_equal(values["d.parquet"], values["t.parquet"])
    pd.testing.assert_frame_equal(values["d.parquet"], values["t.csv"])


@pytest.mark.parametrize("dates", [
    pd.date_range("2024-01-05", periods=40).strftime("%Y-%m-%d"),
    pd.date_range("2024-01-05 13:00", periods=40, freq="h").strftime("%Y-%m-%d %H:%M"),
    pd.date_range("2024-01-05", periods=40).strftime("%d/%m/%Y"),
    np.tile(["2024-01-05", "2024-01-06", "2024-01-07", "2024-01-08"], 10),
], ids=["day-per-row", "hours", "day-first", "four-days"])
def test_a_column_of_dates_written_as_text_is_refused_like_a_date_column(
        tmp_path: Path, dates: Any) -> None:
    # it was set aside as row names with a warning (a different date in every row), or
    # one-hot levels of one date each, while a datetime64 or Parquet date column is refused
    frame = table().assign(when=dates)
    write(frame, tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", *FAST, cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "column 'when' of the training data holds "
                       "dates or times written as text (", "' in row",
                       "convert the column to numbers (e.g. days since a date")
    # a date per row names the rows where asked to
    if len(set(dates)) == len(dates):
        res = tdshap("value", "t.csv", "--target", "y", "--id-column", "when", "--out", "ok",
                     *FAST, cwd=tmp_path)
        assert res.returncode == 0, res.stderr


def test_hexadecimal_numbers_among_decimal_ones_are_refused_and_hex_codes_are_levels(
        tmp_path: Path) -> None:
    # "0x1A" among decimals was called a typo to correct, without saying what it is
    frame = table().astype({"b": object})
    frame.loc[4, "b"], frame.loc[9, "b"] = "0x1A", "0X10"
    write(frame, tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", *FAST, cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "column 'b' of the training data holds numbers "
                       "written in hexadecimal ('0x1A' in row 4, and ",
                       "write them as decimal numbers (26, not 0x1A)")
    # hexadecimal throughout: codes, one-hot levels like any text
    frame["b"] = [hex(v) for v in np.arange(40) % 4]
    write(frame, tmp_path / "t.csv")
    res = tdshap("value", "t.csv", "--target", "y", "--out", "ok", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "`b`: one-hot, 4 levels" in (tmp_path / "ok" / "report.md").read_text()


def test_a_numeric_column_with_a_typo_names_the_cells_not_missing_markers(
        tmp_path: Path) -> None:
    frame = table().astype({"b": object})
    frame.loc[4, "b"], frame.loc[9, "b"], frame.loc[12, "b"] = "0.3x", "NA", None
    write(frame, tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", *FAST, cwd=tmp_path)
    # 'NA' and the empty cell are missing values, not typos; b was one-hot encoded
    assert_input_error(res, tmp_path / "out", "column 'b'", "except in 1 cell: '0.3x' (row 4)",
                       "--impute")
    frame.loc[4, "b"] = None  # blanked: a missing value like the others
    write(frame, tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "y", "--impute", "--out", "out", *FAST,
                 cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "`colour`: one-hot, 3 levels" in (tmp_path / "out" / "report.md").read_text()
    assert "`b`: one-hot" not in (tmp_path / "out" / "report.md").read_text()


def test_train_val_column_mismatch(tmp_path: Path, train: Path) -> None:
    write(table(seed=1).rename(columns={"b": "bee"}), tmp_path / "val.csv")
    res = tdshap("clean", train, "--target", "y", "--val", "val.csv", "--out", "out",
                 cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "validation", "lacks the column 'b'",
                       "has the extra column 'bee'")


def test_duplicate_column_names(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("a,a,y\n1,2,0\n3,4,1\n5,6,0\n")
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "duplicate column names: a")


def test_duplicate_column_names_in_parquet(tmp_path: Path) -> None:
    # pyarrow's "ArrowInvalid: Multiple matches for FieldRef.Name(a)" came first, without
    # the fix
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0, 1, 0]], names=["a", "a", "y"]),
                   tmp_path / "t.parquet")
    res = tdshap("clean", "t.parquet", "--target", "y", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "duplicate column names: a", "rename them")


def test_parquet_with_column_levels_is_refused_with_the_fix(tmp_path: Path) -> None:
    # a frame with two levels of column names saved to Parquet: --target y was "not in"
    # the file, whose columns were listed as ('f', 'a'), ..., ('t', 'y'), nor was "('t', 'y')"
    pytest.importorskip("pyarrow")
    from tdshap.app.tabular import read_table

    frame = table()
    frame.columns = pd.MultiIndex.from_tuples([("f", "a"), ("f", "b"), ("f", "colour"),
                                               ("t", "y")])
    frame.to_parquet(tmp_path / "t.parquet")
    with pytest.raises(ValueError, match=r"training file .*t.parquet has column names of 2 "
                       r"levels \(e.g. \('f', 'a'\)\): tdshap takes one name per column; "
                       r"save it with one-level names"):
        read_table(tmp_path / "t.parquet", "training file")


def test_spaces_around_a_header_name_are_not_part_of_it(tmp_path: Path) -> None:
    # pandas kept "y " (and a tab before "b"): --target y was "not in" a file whose column
    # list showed "a, b, colour, y "; the duplicate check already read the names stripped
    frame = table()
    text = frame.to_csv(index=False).replace("a,b,colour,y", "a ,\tb, colour , y ", 1)
    (tmp_path / "t.csv").write_text(text)
    res = tdshap("value", "t.csv", "--target", "y", "--id-column", "colour", "--out", "out",
                 *FAST, cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "repeats ids")  # found the id column by name
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "cleaned.csv").read_text().splitlines()[0] == \
        "a ,\tb, colour , y "  # the user's header, as written
    # the name as the header writes it, spaces included, is the same column
    res = tdshap("clean", "t.csv", "--target", " y ", "--out", "out2", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    res = tdshap("value", "t.csv", "--target", "y", "--id-column", " colour ", "--out", "out3",
                 *FAST, cwd=tmp_path)
    assert_input_error(res, tmp_path / "out3", "repeats ids")


def test_a_file_name_with_dollar_signs_is_not_typeset(tmp_path: Path) -> None:
    # the curve's title is the file name: matplotlib read "$...$" as TeX, and "a$\\foo{$.csv"
    # ended the finished run in "Error: \\foo{ ^ ParseFatalException: Unknown symbol"
    name = "a$\\foo{$.csv"
    write(table(), tmp_path / name)
    res = tdshap("clean", name, "--target", "y", "--out", "out", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "curve.png").is_file()


@pytest.mark.parametrize(
    ("model", "words"),
    [("forest", ("unknown model 'forest'", "dtree")),
     ("sklearn.nosuchmod:Model", ("cannot import module 'sklearn.nosuchmod'",)),
     ("nosuchpkg.mod:Model", ("package 'nosuchpkg' is not one", "--allow-import")),
     ("sklearn.tree:NoSuchTree", ("has no class 'NoSuchTree'",))],
)
def test_unknown_model(tmp_path: Path, train: Path, model: str, words: tuple[str]) -> None:
    res = tdshap("clean", train, "--target", "y", "--model", model, "--out", "out",
                 cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", *words)


def test_invalid_params_json(tmp_path: Path, train: Path) -> None:
    res = tdshap("clean", train, "--target", "y", "--params", "{max_depth: 3}", "--out",
                 "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "--params is not valid JSON")


def test_unknown_model_parameter(tmp_path: Path, train: Path) -> None:
    res = tdshap("clean", train, "--target", "y", "--model", "dtree", "--params",
                 '{"depth": 3}', "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "unknown parameter 'depth'", "max_depth")


@pytest.mark.parametrize("params", ['{"n_neighbors": -1}', '{"n_neighbors": 1e300}',
                                    '{"n_neighbors": [5]}'])
def test_model_parameter_of_the_wrong_type_or_range(tmp_path: Path, train: Path,
                                                    params: str) -> None:
    # the default k-NN is valued in closed form and never fitted: scikit-learn's own check
    # of the values must run when the model is built (these ran, or crashed "unexpected")
    res = tdshap("clean", train, "--target", "y", "--params", params, "--out", "out",
                 cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "--params", "'n_neighbors' parameter",
                       "range [1, inf)")
    assert "unexpected" not in res.stderr


def test_n_too_small_for_n_min_and_k(tmp_path: Path, train: Path) -> None:
    res = tdshap("clean", train, "--target", "y", "--method", "tdshap", "--n-min", "100",
                 "--k", "10", "--out",
                 "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "N=20", "--n-min 100", "--k 10",
                       "lower --n-min or --k")


def test_output_folder_not_writable(tmp_path: Path, train: Path) -> None:
    (tmp_path / "afile").write_text("not a folder")
    res = tdshap("clean", train, "--target", "y", "--out", "afile/out", *FAST, cwd=tmp_path)
    assert_input_error(res, tmp_path / "nothing", "not writable")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permissions")
def test_output_folder_without_permission(tmp_path: Path, train: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    res = tdshap("clean", train, "--target", "y", "--out", "locked/out", *FAST, cwd=tmp_path)
    assert_input_error(res, locked / "out", "not writable")


@pytest.mark.parametrize("args", [
    ["clean", "train.csv", "--target", "y", "--out", "", *FAST],
    ["value", "", "--target", "y", "--out", "out", *FAST],
    ["demo", "--out", "", "--trials", "1"],
], ids=["clean-out", "train", "demo-out"])
def test_an_empty_path_is_refused_not_read_as_the_current_folder(
        tmp_path: Path, train: Path, args: list[str]) -> None:
    # Path("") is Path("."): --out "" wrote the outputs into the working directory
    before = set(tmp_path.iterdir())
    res = tdshap(*args, cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "'' is an empty path: name a file or folder")
    assert set(tmp_path.iterdir()) == before


@pytest.mark.parametrize(("max_iter", "words"), [
    ("100000000000000000000000", ("--max-iter", "100000000000000000000000 is not in the "
                                  "range 0<=x<=9223372036854775807",)),
    ("1000000000000000000", ("the run would take about", "years", "lower --max-iter, or "
                             "give --time-budget")),
])
def test_a_run_that_would_never_end_is_refused_up_front(tmp_path: Path, train: Path,
                                                       max_iter: str,
                                                       words: tuple[str, ...]) -> None:
    # --max-iter 10**23 was accepted, printed an estimate of 1912609570354106880.0 h and ran
    res = tdshap("value", train, "--target", "y", "--method", "tdshap", "--max-iter", max_iter,
                 "--no-progress", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", *words)
    assert res.stdout == ""


def test_a_time_budget_lets_a_long_max_iter_run(tmp_path: Path, train: Path) -> None:
    res = tdshap("value", train, "--target", "y", "--method", "tdshap", "--max-iter",
                 "1000000000000000000", "--time-budget", "1", "--no-progress", "--out", "out",
                 cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "years, stopped by the time budget of 1 s" in res.stdout


def test_resume_without_a_checkpoint(tmp_path: Path, train: Path) -> None:
    res = tdshap("clean", train, "--target", "y", "--resume", "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "--resume", "no checkpoint")
    # a thresholding Data-OOB run saves none: "every run saves one" sent the user back to it
    res = tdshap("value", train, "--target", "y", "--method", "tdoob", "--resume", "--out",
                 "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "no checkpoint", "only a TDShap run")


def test_resume_of_a_method_that_saves_no_checkpoint_names_that_method(
        tmp_path: Path, train: Path) -> None:
    # beside a TDShap run's checkpoint, auto's k-NN Shapley said "(a thresholding Data-OOB
    # run is short)", and "resume:" where every other refusal says "--resume:"
    res = tdshap("clean", train, "--target", "y", "--out", "out", *FAST, "--checkpoint-every",
                 "0", cwd=tmp_path)
    assert res.returncode == 0 and (tmp_path / "out" / "run.tdshap").is_file(), res.stderr
    res = tdshap("clean", train, "--target", "y", "--out", "out", "--resume", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip() == (
        "Error: --resume: only TDShap runs are checkpointed, and this run values the rows by "
        "exact k-NN Shapley on the training and validation rows (--method 'knn_shapley', "
        "chosen by auto), which saves none; rerun without --resume, or choose --method "
        "'tdshap'."), res.stderr


def test_resume_when_the_checkpoint_is_a_folder_says_so(tmp_path: Path, train: Path) -> None:
    # it said "there is no checkpoint out/run.tdshap to continue"
    (tmp_path / "out" / "run.tdshap").mkdir(parents=True)
    res = tdshap("clean", train, "--target", "y", "--resume", "--out", "out", "--force",
                 cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip() == (f"Error: --resume: {Path('out') / 'run.tdshap'} is a folder, "
                                  "not a checkpoint (the file a run saves there): move or "
                                  "rename the folder, then run without --resume.")
    assert os.listdir(tmp_path / "out") == ["run.tdshap"]


def test_a_resume_refusal_names_the_options(tmp_path: Path, train: Path) -> None:
    # it read "resume='.../run.tdshap' was made with different settings (eps: ...)": the
    # library's spelling, not the options of the command
    base = ("clean", train, "--target", "y", "--out", "out", *FAST)
    assert tdshap(*base, cwd=tmp_path).returncode == 0
    res = tdshap(*base, "--resume", "--eps", "0.5", "--k", "4", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    line = res.stderr.strip()
    assert line.startswith("Error: --resume: checkpoint ") and "\n" not in line, line
    assert "(--eps: checkpoint 'auto', now 0.5; --k: checkpoint 6, now 4)" in line, line
    assert line.endswith("start a new run without --resume."), line
    assert "resume=" not in line and "`" not in line


@pytest.mark.parametrize("change", [["--eps", "0.5"], ["--max-iter", "0"], ["--seed", "3"]])
def test_a_checkpoint_that_cannot_be_resumed_is_refused_before_the_plan_is_shown(
        tmp_path: Path, train: Path, change: list[str]) -> None:
    # the cost estimate was printed (and fits timed) first, then the run refused the file
    base = ("value", train, "--target", "y", "--out", "out", *FAST)
    assert tdshap(*base, cwd=tmp_path).returncode == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    res = tdshap(*base, "--resume", *change, cwd=tmp_path)
    assert res.returncode == 2 and res.stdout == "", res.stdout
    assert len(res.stderr.splitlines()) == 1 and res.stderr.startswith("Error: "), res.stderr
    assert "run.tdshap" in res.stderr and "without --resume" in res.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before


def test_a_resume_of_another_split_names_the_option_that_changed(
        tmp_path: Path, train: Path) -> None:
    # --seed 1 --resume read "was made with different data (X, y, X_val or y_val differ)":
    # the file was the same, the seed split it into other rows
    base = ("value", train, "--target", "y", "--out", "out", *FAST)
    assert tdshap(*base, cwd=tmp_path).returncode == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    for change, detail in ((["--seed", "1"], "(--seed: checkpoint 0, now 1)"),
                           (["--val-fraction", "0.3"], "(--val-fraction: checkpoint 0.25, "
                            "now 0.3)")):
        res = tdshap(*base, "--resume", *change, cwd=tmp_path)
        assert res.returncode == 2 and res.stdout == "", res.stdout
        line = res.stderr.strip()
        assert line.startswith("Error: --resume: checkpoint ") and "\n" not in line, line
        assert "was made from the same files split differently " + detail in line, line
        assert line.endswith(f"put back the checkpoint's {change[0]}, or start a new run "
                             "without --resume."), line
        assert "different data" not in line and "`" not in line, line
    # the file itself changed: said so, and not as a changed option
    write(table(seed=1), train)
    res = tdshap(*base, "--resume", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "was made from other data (the training, validation or test file differs)" in \
        res.stderr and "--seed" not in res.stderr, res.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before


def test_a_resume_with_another_seed_beside_a_validation_file_names_seed(
        tmp_path: Path, train: Path) -> None:
    # with --val the seed splits nothing, but it seeds the valuation: the refusal named
    # the library's random_state, which the command has no option for
    val = write(table(seed=2), tmp_path / "val.csv")
    base = ("value", train, "--val", val, "--target", "y", "--out", "out", *FAST)
    assert tdshap(*base, cwd=tmp_path).returncode == 0
    res = tdshap(*base, "--resume", "--seed", "4", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "(--seed: checkpoint 0, now 4)" in res.stderr and "random_state" not in \
        res.stderr, res.stderr


def test_a_resumed_run_estimates_what_it_has_left(tmp_path: Path, train: Path) -> None:
    # the cost line of a resumed run estimated the whole run, rounds already done included
    base = ("value", train, "--target", "y", "--method", "tdshap", "--k", "5", "--n-min", "5",
            "--no-progress")

    def evaluations(res: subprocess.CompletedProcess[str]) -> int:
        assert res.returncode == 0, res.stderr
        return int(res.stdout.split(": about ", 1)[1].split(" evaluations", 1)[0])

    first = tdshap(*base, "--max-iter", "2", "--out", "out", cwd=tmp_path)
    assert first.stdout.startswith("cost estimate: about "), first.stdout
    resumed = tdshap(*base, "--max-iter", "5", "--resume", "--out", "out", cwd=tmp_path)
    assert resumed.stdout.startswith("cost estimate of what is left (resuming from round 2 "
                                     "of 5): about "), resumed.stdout
    whole = tdshap(*base, "--max-iter", "5", "--out", "fresh", cwd=tmp_path)
    assert evaluations(resumed) == evaluations(whole) - evaluations(first) > 0
    done = tdshap(*base, "--max-iter", "5", "--resume", "--out", "out", cwd=tmp_path)
    assert "(resuming from round 5 of 5): about 0 evaluations" in done.stdout, done.stdout


@pytest.mark.slow
def test_resume_extends_a_finished_run(tmp_path: Path, train: Path) -> None:
    base = ("value", train, "--target", "y", "--method", "tdshap", "--k", "5", "--n-min", "5",
            "--no-progress")
    first = tdshap(*base, "--max-iter", "2", "--out", "out", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "out" / "run.tdshap").is_file()
    again = tdshap(*base, "--max-iter", "5", "--resume", "--out", "out", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    fresh = tdshap(*base, "--max-iter", "5", "--out", "fresh", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    resumed = json.loads((tmp_path / "out" / "result.json").read_text())
    direct = json.loads((tmp_path / "fresh" / "result.json").read_text())
    assert resumed["extra"]["rounds"] == direct["extra"]["rounds"] == 5
    assert resumed["values"] == direct["values"] and resumed["counts"] == direct["counts"]
    # a different setting is refused rather than silently mixed in
    other = tdshap(*base, "--max-iter", "5", "--k", "4", "--resume", "--out", "out",
                   cwd=tmp_path)
    assert other.returncode == 2 and "Traceback" not in other.stderr


# -- runs that work -------------------------------------------------------------------
def test_values_csv_ids_cannot_run_as_spreadsheet_formulas(tmp_path: Path) -> None:
    # ids are the user's text; values.csv is the tool's file: no cell starts a formula
    frame = table(n=60)
    evil = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(1)"]
    frame.insert(0, "=HYPERLINK(1)", [f"{evil[i % 4]}{i}" if i % 5 else f"r{i}"
                                      for i in range(len(frame))])
    write(frame, tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "y", "--id-column", "=HYPERLINK(1)",
                 "--out", "out", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    lines = (tmp_path / "out" / "values.csv").read_text().splitlines()
    assert lines[0].startswith("'=HYPERLINK(1),value,")
    cells = [line.split(",")[0] for line in lines[1:]]
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@"))]
    assert any(c.startswith("'=cmd|") for c in cells) and any(c[0] == "r" for c in cells)
    # cleaned.csv is the user's own file, copied byte for byte
    source = (tmp_path / "t.csv").read_text().splitlines()
    assert set((tmp_path / "out" / "cleaned.csv").read_text().splitlines()) <= set(source)


def test_clean_writes_every_output(tmp_path: Path) -> None:
    frame = table(n=60)
    frame.insert(0, "id", [f"r{i}" for i in range(len(frame))])
    frame.loc[[2, 5], "b"] = np.nan
    write(frame, tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "y", "--id-column", "id", "--impute",
                 "--out", "out", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        ".tdshap-manifest.json", "cleaned.csv", "curve.png", "report.md", "result.json",
        "run.tdshap", "values.csv", "values.png"]
    assert "task classification (inferred: the target is not numeric: text)" in res.stdout
    values = pd.read_csv(out / "values.csv")
    assert list(values.columns) == ["id", "value", "ci_low", "ci_high", "n_pulls",
                                    "is_harmful", "removed"]
    # 25% + 25% held out: 30 of 60 rows valued, each pulled at least once
    assert len(values) == 30 and values["id"].str.startswith("r").all()
    assert (values["n_pulls"] >= 1).all()
    result = json.loads((out / "result.json").read_text())
    tau = result["threshold"]
    assert (values["is_harmful"] == (values["value"] <= tau)).all()
    # the removed rows are the lowest-valued ones
    n_removed = int(values["removed"].sum())
    if n_removed:
        assert values.loc[values["removed"], "value"].max() <= \
            values.loc[~values["removed"], "value"].min()
    # cleaned.csv: the input's lines minus the removed rows, byte for byte, in order
    lines = (tmp_path / "t.csv").read_text().splitlines()
    gone = set(values.loc[values["removed"], "id"])
    kept = [lines[0]] + [line for line in lines[1:] if line.split(",")[0] not in gone]
    assert (out / "cleaned.csv").read_text().splitlines() == kept
    report = (out / "report.md").read_text()
    for section in ("## Settings", "## Before and after cleansing", "lowest-valued rows",
                    "## Fits and time", "## Guarantee", "imputed: {'b':"):
        assert section in report
    assert f"`{tau:.6g}`" in report  # the tau actually used


def test_the_demo_then_clean_both_with_their_default_folders(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the demo's default folder sat inside clean's: clean then refused its own default --out
    from click.testing import CliRunner

    from tdshap.app.cli import main
    from tdshap.app.demo import DEMO_SETTINGS

    monkeypatch.setitem(DEMO_SETTINGS, "max_iter", 1)  # the folders are the point, not values
    monkeypatch.chdir(tmp_path)
    write(table(), tmp_path / "train.csv")
    runner = CliRunner()
    demo = runner.invoke(main, ["demo", "--trials", "1", "--jobs", "1", "--no-progress"])
    assert demo.exit_code == 0, demo.output
    clean = runner.invoke(main, ["clean", "train.csv", "--target", "y", *FAST])
    assert clean.exit_code == 0, clean.output
    demo_files = {p.name for p in (tmp_path / "tdshap-demo").iterdir()}
    assert "summary.csv" in demo_files and "values_seed0.csv" in demo_files
    assert (tmp_path / "tdshap-out" / "cleaned.csv").is_file()
    # each run's folder holds its own outputs only
    assert not (tmp_path / "tdshap-out" / "demo").exists()
    assert "cleaned.csv" not in demo_files


def test_value_holds_out_no_test_rows(tmp_path: Path) -> None:
    write(table(), tmp_path / "train.csv")
    res = tdshap("value", "train.csv", "--target", "y", "--out", "out", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "held out 10 rows for validation (stratified by class)" in res.stdout
    assert len(pd.read_csv(tmp_path / "out" / "values.csv")) == 30


def test_value_refuses_a_cut_it_would_not_make(tmp_path: Path) -> None:
    write(table(), tmp_path / "train.csv")
    res = tdshap("value", "train.csv", "--target", "y", "--out", "out", "--cut", "paper",
                 *FAST, cwd=tmp_path)
    assert res.returncode != 0
    assert res.stderr.strip().splitlines() == [
        "Error: --cut paper chooses how many rows tdshap clean removes; tdshap value "
        "removes none: leave --cut out, or run tdshap clean."]
    assert not (tmp_path / "out").exists()


def test_value_stops_after_valuation(tmp_path: Path) -> None:
    write(table(task="regression"), tmp_path / "train.csv")
    write(table(seed=1, task="regression"), tmp_path / "val.csv")
    res = tdshap("value", "train.csv", "--target", "y", "--val", "val.csv", "--out", "out",
                 *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "task regression (inferred: the target has fractional values)" in res.stdout
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        ".tdshap-manifest.json", "report.md", "result.json", "run.tdshap", "values.csv",
        "values.png"]
    values = pd.read_csv(out / "values.csv")
    assert len(values) == 40 and "removed" not in values.columns
    assert list(values["row"]) == list(range(40))


def test_parquet_in_parquet_out(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    frame = table(n=48)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    res = tdshap("clean", "t.parquet", "--target", "y", "--out", "out",
                 *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    cleaned = pd.read_parquet(tmp_path / "out" / "cleaned.parquet")
    values = pd.read_csv(tmp_path / "out" / "values.csv")
    assert list(cleaned.columns) == list(frame.columns)
    kept = sorted(set(range(len(frame))) - set(values.loc[values["removed"], "row"]))
    pd.testing.assert_frame_equal(cleaned.reset_index(drop=True),
                                  frame.iloc[kept].reset_index(drop=True))


def test_tsv_in_tsv_out(tmp_path: Path) -> None:
    # the tab-separated rows were named cleaned.csv, which tdshap read back as one column
    # ("looks tab-separated ... give it the suffix .tsv")
    (tmp_path / "t.tsv").write_text(_text(table(n=48), sep="\t"))
    res = tdshap("clean", "t.tsv", "--target", "y", "--out", "out", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out"
    assert (out / "cleaned.tsv").is_file() and not (out / "cleaned.csv").exists()
    assert "`cleaned.tsv` drops them" in (out / "report.md").read_text()
    values = pd.read_csv(out / "values.csv")
    cleaned = pd.read_csv(out / "cleaned.tsv", sep="\t")
    assert len(cleaned) == 48 - int(values["removed"].sum())
    res = tdshap("value", "out/cleaned.tsv", "--target", "y", "--out", "again", *FAST,
                 cwd=tmp_path)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("id_args", [[], ["--id-column", "key"]], ids=["row-numbers", "index-ids"])
def test_a_parquet_files_own_index_is_kept(tmp_path: Path, id_args: list[str]) -> None:
    pytest.importorskip("pyarrow")
    frame = table(n=48).set_axis(pd.Index([f"r{i}" for i in range(48)], name="key"))
    frame.to_parquet(tmp_path / "t.parquet")  # the index is stored, read back as the index
    res = tdshap("clean", "t.parquet", "--target", "y", "--out", "out", "--cut", "paper",
                 *id_args, *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    cleaned = pd.read_parquet(tmp_path / "out" / "cleaned.parquet")
    values = pd.read_csv(tmp_path / "out" / "values.csv", index_col=0)
    removed = values.index[values["removed"]]
    if id_args:  # --id-column may name it: the values are keyed by the file's own ids
        assert values.index.name == "key" and set(values.index) <= set(frame.index)
    else:  # the row numbers in the file
        removed = frame.index[removed]
    assert len(removed) > 0  # the paper's cut removes some rows here: the test can fail
    # the ids were dropped from cleaned.parquet (written with index=False)
    pd.testing.assert_frame_equal(cleaned, frame.drop(index=removed))


def test_a_parquet_index_named_as_a_column_is_an_ambiguous_id_column(tmp_path: Path) -> None:
    # --id-column key with a column "key" and a saved pandas index "key": the column was
    # used, silently, and the index the user may have meant was not
    pytest.importorskip("pyarrow")
    frame = table(n=48).assign(key=[f"c{i}" for i in range(48)])
    frame.set_axis(pd.Index([f"r{i}" for i in range(48)], name="key")).to_parquet(
        tmp_path / "t.parquet")
    res = tdshap("clean", "t.parquet", "--target", "y", "--id-column", "key", "--out", "out",
                 *FAST, cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "id column 'key' of training file",
                       "both a column and the pandas row index", "rename one of them")
    res = tdshap("clean", "t.parquet", "--target", "y", "--out", "out", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr  # without --id-column: the column, a feature


def test_id_column_ids_are_the_files_text(tmp_path: Path) -> None:
    # ids were read as numbers: values.csv named the row "00007" as 7 (no match in the file's
    # text), and "1.0" and "1" were refused as repeats; plain whole numbers stay numbers
    frame = table().assign(key=[f"{i:05d}" for i in range(39)] + ["1.0"])
    write(frame.assign(a=frame["a"].map("{:.4f}".format)), tmp_path / "t.csv")  # 0.1230
    res = tdshap("clean", "t.csv", "--target", "y", "--id-column", "key", "--out", "out",
                 "--cut", "paper", *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    values = pd.read_csv(tmp_path / "out" / "values.csv", dtype={"key": str})
    assert set(values["key"]) <= set(frame["key"]) and len(values) == 20
    ids = pd.read_csv(tmp_path / "t.csv", dtype={"key": str})["key"]
    kept = pd.read_csv(tmp_path / "out" / "cleaned.csv", dtype={"key": str})["key"]
    assert values["removed"].any()
    assert list(kept) == [k for k in ids if k not in set(values.loc[values["removed"], "key"])]
    lines = (tmp_path / "t.csv").read_text().splitlines()  # still copied byte for byte
    assert (tmp_path / "out" / "cleaned.csv").read_text().splitlines() == \
        lines[:1] + [line for line in lines[1:] if line.split(",")[-1] in set(kept)]
    write(table().assign(key=range(100, 140)), tmp_path / "n.csv")
    res = tdshap("clean", "n.csv", "--target", "y", "--id-column", "key", "--out", "out2",
                 *FAST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out2" / "values.csv").read_text().splitlines()[1].split(",")[0] \
        in {str(i) for i in range(100, 140)}


def test_parquet_without_pyarrow_says_how_to_install(tmp_path: Path) -> None:
    blocker = tmp_path / "blocked" / "pyarrow"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('pyarrow blocked for this test')\n")
    (tmp_path / "t.parquet").write_bytes(b"PAR1")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "blocked")}
    res = subprocess.run([sys.executable, "-m", "tdshap.app.cli", "clean", "t.parquet", "--target",
                          "y", "--out", "out"], cwd=tmp_path, capture_output=True, text=True,
                         env=env, timeout=120)
    assert_input_error(res, tmp_path / "out", "pip install 'tdshap[parquet]'")


@pytest.mark.parametrize(("model", "task", "label", "method"), [
    ("knn", "regression", "Thresholding Data-OOB", "tdoob"),
    ("knn", "classification", "exact k-NN Shapley on the training and validation rows",
     "knn_shapley"),
    ("dtree", "regression", "Thresholding Data-OOB", "tdoob"),
])
def test_default_method_is_knn_shapley_for_a_knn_else_thresholding_data_oob(
        tmp_path: Path, model: str, task: str, label: str, method: str) -> None:
    write(table(task=task), tmp_path / "train.csv")
    res = tdshap("clean", "train.csv", "--target", "y", "--model", model, "--out", "out",
                 "--no-progress", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert f"\n{label}:" in res.stdout and f"valued by {method}" in res.stdout
    out = tmp_path / "out"
    # short runs, not checkpointed: no run.tdshap
    assert {"cleaned.csv", "values.csv", "report.md"} <= {p.name for p in out.iterdir()}
    assert not (out / "run.tdshap").exists()
    again = tdshap("clean", "train.csv", "--target", "y", "--out", "out", "--resume",
                   "--no-progress", cwd=tmp_path)
    assert again.returncode == 2 and "resume" in again.stderr


@pytest.mark.parametrize(("method", "task", "words"), [
    ("knn_oob", "classification", "k-NN classifiers only"),
    ("knn_shapley", "classification", "k-NN models only"),
    ("knn_shapley_train", "classification", "k-NN models only"),
])
def test_the_closed_forms_refuse_other_models_before_writing(
        tmp_path: Path, method: str, task: str, words: str) -> None:
    write(table(task=task), tmp_path / "train.csv")
    res = tdshap("clean", "train.csv", "--target", "y", "--model", "dtree", "--method",
                 method, "--out", "out", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", method, words)


@pytest.mark.parametrize(("flags", "method", "words"), [
    (["--k", "5"], "knn_shapley", ("--k is not used", "the Shapley values are exact")),
    (["--k", "5", "--max-iter", "3"], "knn_oob", ("--k and --max-iter are not used",)),
    (["--n-min", "5"], "tdoob", ("--n-min is not used", "--method 'tdshap'")),
    (["--checkpoint-every", "5"], "knn_shapley_proxy", ("--checkpoint-every is not used",)),
])
def test_a_setting_the_named_method_does_not_use_is_refused_before_writing(
        tmp_path: Path, train: Path, flags: list[str], method: str,
        words: tuple[str, ...]) -> None:
    res = tdshap("value", train, "--target", "y", "--model", "knn", "--method", method,
                 *flags, "--out", "out", "--no-progress", cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", method, *words)


def test_a_setting_the_auto_method_does_not_use_is_noted(tmp_path: Path, train: Path) -> None:
    res = tdshap("value", train, "--target", "y", "--model", "knn", "--k", str(10**20),
                 "--out", "out", "--no-progress", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert ("note: --k is not used by knn_shapley (the Shapley values are exact); it was "
            "ignored.") in res.stderr
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| k | `n/a` | given | given but not used: the Shapley values are exact |" in report


@pytest.mark.parametrize(("model", "refits"), [("dtree", True), ("knn", False)])
def test_the_plan_names_the_folds_check_of_the_papers_cut(
        tmp_path: Path, model: str, refits: bool) -> None:
    # the proxy's cut may refit each validation fold's own curve: the plan says so and
    # what it costs; a k-NN's folds' curves come from its neighbour lists
    write(table(task="classification"), tmp_path / "train.csv")
    res = tdshap("clean", "train.csv", "--target", "y", "--model", model, "--out", "out",
                 "--no-progress", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    plan = res.stdout.split("\n\n")[0]
    assert ("checking the paper's larger cut" in plan) == refits
    assert ("folds' own cuts too (up to " in plan) == refits
    assert ("own cuts are checked too, from the same neighbour lists" in plan) == (not refits)


def test_a_closed_output_pipe_is_said_plainly(tmp_path: Path, train: Path) -> None:
    # `tdshap clean ... | head -1`: the line said "cannot read or write: Broken pipe"
    run = subprocess.Popen([sys.executable, "-m", "tdshap.app.cli", "clean", str(train),
                            "--target", "y", "--out", "out", *FAST], cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert run.stdout is not None and run.stderr is not None
    run.stdout.close()  # the reader is gone before the first line
    err = run.stderr.read()
    assert run.wait(timeout=120) == 2
    assert err.startswith("Error: the output was closed while the run printed to it")
    assert err.count("\n") == 1


def test_an_error_line_is_cut_where_a_name_is_huge(tmp_path: Path) -> None:
    # a 100,000-character column name quoted whole (a column with missing values, not
    # a list of names, which are cut) made an Error line of 100 kB
    from tdshap.app.cli_clean import LONGEST_LINE, one_line

    frame = table()
    frame.insert(0, "n" * 100_000, frame["a"])
    frame.iloc[3, 0] = np.nan
    write(frame, tmp_path / "t.csv")
    res = tdshap("clean", "t.csv", "--target", "y", "--out", "out", *FAST, cwd=tmp_path)
    assert_input_error(res, tmp_path / "out", "has 1 missing value", "pass --impute")
    assert len(res.stderr) < 600
    long = one_line("a " * 3000 + "fix it.")
    assert len(long) < LONGEST_LINE + 10 and long.endswith("a a fix it.")
