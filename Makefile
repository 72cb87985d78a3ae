# hloprobe: `make run` and `make test` each set up .venv from scratch if needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# Where `make run` writes report.html, row0_error.png and results.json.
OUT ?= out

.PHONY: run test test-fast test-isa bench lint golden golden-update clean gpu-check

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,dev,plot,explorer]'
	touch $(STAMP)

# The diagnosis in words; the table, the plot and the HTML report go to
# $(OUT), named on the last line.
run: $(STAMP)
	$(BIN)/hloprobe explain --targets=cpu,a100,t4 --output_dir=$(OUT) \
	  --plot=$(OUT)/row0_error.png

test: $(STAMP)
	$(BIN)/python -m pytest -q tests

# The tests that compile nothing with XLA (parsers, formats, the layering
# rule, flags): under a minute.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not compiles" tests

# The tests that assert CPU-computed floats, again under older x86 ISAs
# (XLA's CPU sum order and FMA use follow the ISA; not SSE4_2: XLA cannot
# compile f16 conversions there). CI runs this after `make test`.
ISAS ?= AVX AVX2
test-isa: $(STAMP)
	set -e; for isa in $(ISAS); do \
	  echo "== XLA_FLAGS=--xla_cpu_max_isa=$$isa"; \
	  XLA_FLAGS="$$XLA_FLAGS --xla_cpu_max_isa=$$isa" \
	    $(BIN)/python -m pytest -q -m cpu_numerics tests; \
	done

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
	$(BIN)/python -m hloprobe.tools.bench

clean:
	rm -rf $(VENV) build *.egg-info

# ruff is pinned in pyproject.toml's `dev` extra, which $(STAMP) installs.
lint: $(STAMP)
	$(BIN)/ruff check hloprobe tests
	$(BIN)/ruff format --check hloprobe tests
