# The README's two commands: `make run` and `make test`. Each creates .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

## install costopt and plan a job on the bundled price snapshot
run: $(BIN)/python
	$(BIN)/python -m pip install --quiet .
	$(BIN)/costopt plan --model 8B --tokens 100B

## install costopt with its test extra and run the whole test suite
test: $(BIN)/python
	$(BIN)/python -m pip install --quiet ".[test]"
	$(BIN)/python -m pytest

lint: $(BIN)/python
	$(BIN)/python -m pip install --quiet ruff
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: $(BIN)/python
	$(BIN)/python -m pip install --quiet ".[test]"
	for script in bench/*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) build dist bench/out
