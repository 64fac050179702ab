# Two entry points that do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast lint bench tools venv clean

tools:
	@bash scripts/install-tools.sh

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev,ast]"
	touch $(STAMP)

venv: $(STAMP)

demo: tools venv
	$(BIN)/rtlforge eval examples/samples/suite-samples.jsonl --tasks examples/tasks \
		-k 1,3 --out runs/demo/results.jsonl

test: tools venv
	$(BIN)/ruff check rtlforge tests benchmarks plugins-contrib
	$(BIN)/pytest -q

test-fast: venv
	$(BIN)/pytest -q -m "not tools and not shared and not slow"

lint: venv
	$(BIN)/ruff check rtlforge tests benchmarks plugins-contrib

bench: tools venv
	$(BIN)/python benchmarks/validation_throughput.py

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache
