# Set-up and everyday commands. `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: demo test lint install install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(PIP) install -e '.[dev,torch,text]'
	@# the paper's experiments live outside the package: make them importable in this venv
	$(BIN)/python -c "import site, sys; open(site.getsitepackages()[0] + '/tdshap-experiments.pth', 'w').write(sys.argv[1] + '\\n')" "$(CURDIR)"
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

demo: install
	$(BIN)/tdshap demo

lint: install-dev
	$(BIN)/ruff check src tests benchmarks experiments
	$(BIN)/mypy

test: install-dev lint
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) tdshap-out tdshap-demo .pytest_cache .ruff_cache
