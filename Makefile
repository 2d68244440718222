# The commands of the Quick start: `make demo`, `make test` and `make test-examples`. Each creates
# .venv when missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TORCH_INDEX ?=
STAMP := $(VENV)/.installed

.PHONY: demo test test-examples lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first, from TORCH_INDEX when set (the CPU build: make test
	# TORCH_INDEX=https://download.pytorch.org/whl/cpu), else from pip's own configuration.
	$(PY) -m pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) "torch==2.13.0" || \
		$(PY) -m pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) "torch<=2.14.1"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m manibo demo

# Two pytest workers on two cores: one BLAS/OpenMP thread each, or they oversubscribe the CPU.
test: $(STAMP)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -q -n 2 --dist loadfile

# Every script in examples/ at full size, as shipped, each asserting its own result (many minutes).
test-examples: $(STAMP)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -q -n 2 --dist load -m full_size tests/test_examples.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# Every benchmark figure, JSON and table of the docs (hours); e.g. BENCH_ARGS="--only kernel_so3".
bench: $(STAMP)
	$(PY) benchmarks/run_all.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
