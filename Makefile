# hloprobe: `make run` and `make test` each set up .venv from scratch if needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test bench lint golden golden-update clean gpu-check

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/hloprobe sweep --targets=cpu,a100,t4

test: $(STAMP)
	$(BIN)/python -m pytest -q tests

# Re-runs the sweep in golden/MANIFEST.json and compares; exit 1 on a change.
golden: $(STAMP)
	$(BIN)/hloprobe golden check

# The only target that rewrites golden/ (e.g. add GPU targets with
# `make golden-update GOLDEN_FLAGS=--targets=cpu,a100,t4,h100`).
golden-update: $(STAMP)
	$(BIN)/hloprobe golden update $(GOLDEN_FLAGS)

# On a machine with a GPU: the seed sweep on it beside its compile-only
# twin, observed row 0 against the predicted band; writes the figures to
# tests/testdata/gpu_check/. Uses the machine's own jax, installs nothing.
gpu-check:
	PYTHONPATH=. $(PYTHON) -m hloprobe.versions.gpu_check $(GPU_CHECK_FLAGS)

bench: $(STAMP)
	$(BIN)/python -m hloprobe.bench

clean:
	rm -rf $(VENV) build *.egg-info

lint: $(STAMP)
	$(BIN)/python -m pip install -q ruff
	$(BIN)/ruff check hloprobe tests
	$(BIN)/ruff format --check hloprobe tests
