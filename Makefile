# The README's commands. Each target does its own set-up on a fresh clone.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/fabriclens plan llama-3.1-70b --workload full-finetune --gpu h100-sxm --gpus 32 \
		--network 10gbe,25gbe,100gbe,100g-roce,200g-roce,ndr-ib --nics-per-node 1

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/accuracy.py
	$(BIN)/python benchmarks/speed.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
