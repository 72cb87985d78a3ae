# hloprobe: `make run` and `make test` each set up .venv from scratch if needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# Where `make run` writes report.html, row0_error.png and results.json.
OUT ?= out

.PHONY: run test bench lint golden golden-update clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,plot,explorer]'
	touch $(STAMP)

# The diagnosis in words; the table, the plot and the HTML report go to
# $(OUT), named on the last line.
run: $(STAMP)
	$(BIN)/hloprobe explain --targets=cpu,a100,t4 --output_dir=$(OUT) \
	  --plot=$(OUT)/row0_error.png

test: $(STAMP)
	$(BIN)/python -m pytest -q tests

# Re-runs the sweep in golden/MANIFEST.json and compares; exit 1 on a change.
golden: $(STAMP)
	$(BIN)/hloprobe golden check

# The only target that rewrites golden/ (e.g. add GPU targets with
# `make golden-update GOLDEN_FLAGS=--targets=cpu,a100,t4,h100`).
golden-update: $(STAMP)
	$(BIN)/hloprobe golden update $(GOLDEN_FLAGS)

bench: $(STAMP)
	$(BIN)/python -m hloprobe.bench

clean:
	rm -rf $(VENV) build *.egg-info

lint: $(STAMP)
	$(BIN)/python -m pip install -q ruff
	$(BIN)/ruff check hloprobe tests
	$(BIN)/ruff format --check hloprobe tests
