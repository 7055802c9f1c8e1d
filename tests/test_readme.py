"""The README's first examples print what the README says they print.

A new user's first contact is the README's wine example; when the code moves on and the
README does not, the user reads one thing and sees another. Seconds are masked: they are
the machine's, not the code's.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SECONDS = re.compile(r"(under |about )?\d+(\.\d+)? s\b")


def blocks(kind: str) -> list[str]:
    """The README's fenced blocks of one kind (```console, ```python, ```text), in order."""
    return re.findall(rf"^```{kind}\n(.*?)^```", README.read_text(encoding="utf-8"),
                      flags=re.MULTILINE | re.DOTALL)


def masked(text: str) -> list[str]:
    return [SECONDS.sub("<seconds>", line.rstrip()) for line in text.strip().splitlines()]


def run(command: str, cwd: Path) -> str:
    """One ``$`` line of the console block, with this interpreter standing in for the tools."""
    words = shlex.split(command)
    if words[0] == "python":
        words[0] = sys.executable
    elif words[0] == "tdshap":
        words[:1] = [sys.executable, "-m", "tdshap.app.cli"]
    done = subprocess.run(words, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@pytest.mark.slow
def test_the_console_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    shown = blocks("console")[0]
    commands = [line[2:] for line in shown.splitlines() if line.startswith("$ ")]
    expected = [line for line in shown.splitlines() if not line.startswith("$ ")]
    printed = "".join(run(command, tmp_path) for command in commands)
    # the tool names the folder it wrote by its whole path; the README by the name typed
    printed = printed.replace(str(tmp_path.resolve() / "wine-out"), "wine-out")
    assert masked(printed) == masked("\n".join(expected))


@pytest.mark.slow
def test_the_python_example_prints_what_the_readme_shows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = next(block for block in blocks("python") if "find_harmful(X, y)" in block)
    shown = next(block for block in blocks("text") if block.startswith("exact k-NN Shapley"))
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(code, str(README), "exec"), scope)  # our own README, not user input
    assert masked(out.getvalue()) == masked(shown)
    # the comment beside the call lists the table's columns
    listed = re.search(r"rows\.table: (.*)$", code, flags=re.MULTILINE)
    assert listed is not None
    columns = [name.strip() for name in listed.group(1).split(",")]
    assert columns == list(scope["rows"].table.columns)  # type: ignore[attr-defined]
