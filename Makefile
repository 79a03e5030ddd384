# The README's commands. Each target does its own set-up on a fresh clone.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# AIPerf, a third-party load generator that the reference server's tests drive: in its own
# environment, because it pins typer and rich versions fabriclens cannot use and weighs ~1 GB
LOADGEN := .venv-aiperf

SYSTOOLS := ip tc iperf3 ping ethtool mtr

.PHONY: demo demo-fabric test lint bench sysdeps readme loadgen clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch for bench collective/p2p: pinned, the CPU build (a plain `torch` resolves to a multi-GB CUDA build)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[test,bench,ui]'
	touch $(STAMP)

$(LOADGEN)/.installed:
	$(PYTHON) -m venv $(LOADGEN)
	$(LOADGEN)/bin/pip install --quiet aiperf==0.13.0
	touch $@

loadgen: $(LOADGEN)/.installed

demo: $(STAMP)
	$(BIN)/fabriclens plan llama-3.1-70b --workload full-finetune --gpu h100-sxm --gpus 32 \
		--network 10gbe,25gbe,100gbe,100g-roce,200g-roce,ndr-ib --nics-per-node 1
	@echo
	@echo "One box: does one RTX 4090 serve a team of 10 the Ollama model llama3.1:8b?"
	$(BIN)/fabriclens capacity llama3.1:8b --team 10 --gpu rtx-4090 --engine ollama
	@echo
	@echo "Next, the same plan in the browser (charts, reports, a live watch):"
	@echo "  $(BIN)/fabriclens ui --open    # then http://127.0.0.1:8471/plan?model=llama-3.1-70b&workload=full-finetune&gpus=32&network=10gbe,25gbe,100gbe,100g-roce,200g-roce,ndr-ib&nics-per-node=1"

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples tools
	$(BIN)/ruff format --check src tests benchmarks examples tools
	$(BIN)/mypy
	$(BIN)/lint-imports

# System tools the lab tests use, and the browser and Prometheus server the dashboard's tests
# drive; installed when missing and run as root (CI is root).
sysdeps:
	@missing=""; for t in $(SYSTOOLS); do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing system tools:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      iproute2 iperf3 iputils-ping ethtool mtr-tiny >/dev/null; \
	  else \
	    echo "missing:$$missing — lab tests will skip (run make test as root to install them)"; \
	  fi; \
	fi
	@missing=""; [ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v prometheus >/dev/null 2>&1 || missing="$$missing prometheus"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "missing:$$missing — the browser and Prometheus tests will skip (run make test as root)"; \
	  fi; \
	fi

# The set-up steps run side by side (the load generator's install is mostly download, the
# linters mostly CPU). Then the tests that time nothing run on every CPU (pytest-xdist, a module
# per worker at a time); then those that time something real, or use the host's lab, run alone
# (`serial`, tests/conftest.py). Both parts always run; either failing fails the target.
test:
	@$(MAKE) --no-print-directory -j3 --output-sync=target lint sysdeps loadgen
	@status=0; \
	$(BIN)/pytest -n auto --dist loadfile -m "not serial" || status=1; \
	$(BIN)/pytest -m serial || status=1; \
	exit $$status

# Benchmarks report; they are not gates (each still exits 1 when it misses a target, and make
# carries on so that every table is printed).
bench: $(STAMP) sysdeps
	-$(BIN)/python benchmarks/calibrate_frameworks.py
	-$(BIN)/python benchmarks/host_time.py
	-$(BIN)/python benchmarks/calibrate_engines.py
	-$(BIN)/python benchmarks/accuracy.py
	-$(BIN)/python benchmarks/scale_curve.py
	-$(BIN)/python benchmarks/simulate.py
	-$(BIN)/python benchmarks/speed.py
	-$(BIN)/python benchmarks/lab.py
	-$(BIN)/python benchmarks/serve.py
	-$(BIN)/python benchmarks/bench.py
	-$(BIN)/python benchmarks/doctor.py
	-$(BIN)/python benchmarks/ui.py
	-$(BIN)/python benchmarks/nccl_warns.py

# Rewrite the README's offline example outputs from the commands themselves (after a change to
# the planner or a report); `make test` checks they match.
readme: $(STAMP)
	$(BIN)/python tools/readme_examples.py --write

clean:
	rm -rf $(VENV) $(LOADGEN) .pytest_cache .mypy_cache .ruff_cache

# Fabric design and the flow simulator: 64 and 1,024 H100s, their cost, and the simulated
# all_reduce beside the planner's (README, "Design and simulate a fabric").
demo-fabric: $(STAMP)
	$(BIN)/fabriclens topo --gpus 64
	$(BIN)/fabriclens simulate all_reduce 1GB --gpus 64 --no-effects
	$(BIN)/fabriclens topo --gpus 1024
	$(BIN)/fabriclens simulate all_reduce 1GB --gpus 1024 --placement random
