# The README's two commands: `make run` and `make test`. Each creates .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: run test lint bench clean iceberg-readers

# DuckDB's Iceberg reader for the publish tests: the DuckDB CLI and its iceberg/avro extensions from
# PyPI, in a folder of their own (they pin a DuckDB of their own; `INSTALL iceberg` needs the network).
# Best effort: without them those tests skip and say why.
READERS = $(VENV)/iceberg-readers
READER_PACKAGES = duckdb-cli==1.5.5 duckdb-extension-iceberg==1.5.5 duckdb-extension-avro==1.5.5

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
	-@$(MAKE) --no-print-directory iceberg-readers
	$(BIN)/python -m pytest

iceberg-readers: $(BIN)/python
	@test -x $(READERS)/duckdb_cli/duckdb || $(BIN)/python -m pip install --quiet --no-deps --upgrade --target $(READERS) \
		$(READER_PACKAGES) || echo "iceberg-readers: not installed; the DuckDB Iceberg read-back tests will skip"

lint: $(BIN)/python
	$(BIN)/python -m pip install --quiet ruff
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: $(BIN)/python
	$(BIN)/python -m pip install --quiet ".[test]"
	for script in bench/*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) build dist bench/out
