"""``python -m tdshap``: the ``tdshap`` command, where the console script is not on PATH
(a virtual environment not activated); without it Python answered "No module named
tdshap.__main__; 'tdshap' is a package and cannot be directly executed"."""

from tdshap.app.cli import main

if __name__ == "__main__":
    main(prog_name="tdshap")
