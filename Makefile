# hloprobe: `make run`, `make full` and `make test` each set up .venv from
# scratch if needed. `make run` installs the core (jax, jaxlib, the CUDA
# PJRT plugin and ptxas for compile-only GPU targets) and matplotlib: about
# 1.3 GB. `make full` adds the extras a first answer needs none of (cuDNN
# for cuDNN attention, Model Explorer, Ray: pyproject.toml's `full`, 2.8
# GB more); `make test` adds those and the test tools.
#
# The interpreter: the newest Python >= 3.12 this machine has (jax 0.11.0 and
# later require it; hloprobe's default is jax 0.12.0.1), looked up as
# python3.N on PATH and in pyenv's versions/ folder (pyenv's shims answer
# only for the selected version); else python3, which gets jax 0.10.2 (the
# newest release for Python 3.11: pyproject.toml's markers) and a one-line
# note. `make PYTHON=/path/to/python3.12 ...` chooses one.
PYTHON ?= $(shell \
  for p in python3.15 python3.14 python3.13 python3.12 \
      $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.1[2-9]*/bin/python3; do \
    $$p -c 'import sys; assert sys.version_info >= (3, 12); \
      print("%d.%03d %s" % (sys.version_info[1], sys.version_info[2], sys.executable))' \
      2>/dev/null; \
  done | sort -n | tail -1 | cut -d' ' -f2)
ifeq ($(strip $(PYTHON)),)
override PYTHON := python3
endif
VENV := .venv
BIN := $(VENV)/bin
# One stamp per set of extras installed (each later set holds the earlier).
STAMP := $(VENV)/.installed-stamp
FULL_STAMP := $(VENV)/.full-stamp
TEST_STAMP := $(VENV)/.test-stamp
CORE_EXTRAS := plot
FULL_EXTRAS := plot,full
TEST_EXTRAS := plot,full,test,dev
# Where `make run` writes report.html, row0_error.png and results.json.
OUT ?= out
# The second release CI tests on (version-sensitive and cpu_numerics tests):
# jax 0.10.2 in its own venv, under a Python 3.11 (the newest jax that
# Python can have, by pyproject.toml's markers).
OLD_PYTHON ?= python3.11
OLD_VENV := .venv-jax0.10.2

.PHONY: run full test test-fast test-slow test-isa test-old bench fuzz lint golden golden-update clean gpu-check

# hloprobe/startup/hloprobe-quiet-cuda.pth (read there why) goes into
# every venv's site-packages: no "Jax plugin configuration error"
# traceback, and the CUDA plugin registered for compile-only targets, on
# a machine without an NVIDIA driver.
QUIET_CUDA_PTH := hloprobe/startup/hloprobe-quiet-cuda.pth

# A venv made by another Python (an older checkout's 3.11 .venv) is made
# again: pyproject.toml's markers pick jax by the interpreter.
# $(call make_venv,VENV,PYTHON,EXTRAS,STAMP)
define make_venv
	@want=$$($(2) -c 'import sys; print(sys.version_info[:2])'); \
	have=$$($(1)/bin/python -c 'import sys; print(sys.version_info[:2])' 2>/dev/null); \
	if [ "$$want" != "$$have" ]; then rm -rf $(1) && $(2) -m venv $(1); fi
	$(1)/bin/python -m pip install -q --upgrade pip
	$(1)/bin/python -m pip install -q -e '.[$(3)]'
	cp $(QUIET_CUDA_PTH) "$$($(1)/bin/python -c \
	  'import sysconfig; print(sysconfig.get_path("purelib"))')"
	@$(1)/bin/python -c 'import sys; from importlib.metadata import version; \
	  sys.version_info >= (3, 12) or print( \
	  "hloprobe: Python %d.%d has no jax 0.11+ (they need Python >= 3.12): " \
	  "installed jax %s, the newest it can have; install a Python 3.12+ for " \
	  "the default jax 0.12.0.1" % (*sys.version_info[:2], version("jax")))'
	touch $(4)
endef

$(STAMP): pyproject.toml
	$(call make_venv,$(VENV),$(PYTHON),$(CORE_EXTRAS),$(STAMP))

$(FULL_STAMP): pyproject.toml
	$(call make_venv,$(VENV),$(PYTHON),$(FULL_EXTRAS),$(FULL_STAMP))

$(TEST_STAMP): pyproject.toml
	$(call make_venv,$(VENV),$(PYTHON),$(TEST_EXTRAS),$(TEST_STAMP))

$(OLD_VENV)/.installed-stamp: pyproject.toml
	$(call make_venv,$(OLD_VENV),$(OLD_PYTHON),$(TEST_EXTRAS),$@)

# The diagnosis in words, the answer first (not echoed: the first lines
# are the worst finding and the first fix that passes, with its verify
# command); the table, the plot and the HTML report go to $(OUT), named
# on the last line.
# $(OUT) is make run's own folder: a rerun replaces its results
# (--overwrite; hloprobe refuses a folder holding a sweep's otherwise).
run: $(STAMP)
	@$(BIN)/hloprobe explain --targets=cpu,a100,t4 --output_dir=$(OUT) \
	  --overwrite --plot=$(OUT)/row0_error.png

# `make run`'s venv and answer, with the extras: cuDNN (cuDNN attention
# cases), Model Explorer (--model_explorer, `hloprobe view`), Ray
# (--executor=ray).
full: $(FULL_STAMP)
	@$(BIN)/hloprobe explain --targets=cpu,a100,t4 --output_dir=$(OUT) \
	  --overwrite --plot=$(OUT)/row0_error.png

# Three pytest workers (pytest-xdist, in the test extra) on CI's two
# cores: many tests wait on worker processes and --case_timeout, so a
# third keeps both cores busy (measured on 2 cores, 2026-12-02: 557 s with
# two, 525 s with three). Each is given whole
# files (--dist loadfile), so a file's compiles cached in setUpClass and
# functools.cache are made once; each test has temp folders, and the
# workers share one record cache (tests/conftest.py). Files are handed
# out in collection order (--no-loadscope-reorder), which
# tests/conftest.py's LONGEST_FIRST begins with the longest files, so the
# workers end together. The venv of tests/commands/versions_test.py's
# older jaxlib (about 150 MB) is made once under build/ (`make clean` removes it) and
# reused by later runs. Tests marked `downloads` (a uv-made venv in a fresh
# folder) are left out: `pytest -m downloads tests` runs them. At the end
# it prints the ten slowest files and fails above 1.25x the budget in
# tests/conftest.py (SUITE_BUDGET_S, for 2 idle cores), scaled by the
# machine's load at the start (--suite-budget; tests/suite_clock.py).
TEST_JOBS ?= 3
HLOPROBE_VERSIONS_TEST_CACHE ?= $(CURDIR)/build/test-venvs
test: $(TEST_STAMP)
	HLOPROBE_VERSIONS_TEST_CACHE=$(HLOPROBE_VERSIONS_TEST_CACHE) \
	  $(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadfile \
	  --no-loadscope-reorder --suite-budget -m "not downloads and not slow" tests

# The tests too slow for `make test`'s budget (marker `slow`): a local Ray
# cluster started under the command line, then SIGKILLed and SIGTERMed
# (tests/runtime/ray_watchdog_test.py, about 35 s), and sweeps run on a
# local Ray cluster (tests/runtime/ray_pool_test.py, about 25 s). CI runs
# it after `make test`.
test-slow: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m slow tests

# The seeded fuzz of the module-file readers, 100,000 mutations
# (hloprobe/tools/fuzz_modules.py, about 100 a second on 2 cores; `make
# test` runs its first 2,000, tests/tools/fuzz_modules_test.py):
# findings are printed one a line, their inputs kept in build/fuzz-findings.
FUZZ_COUNT ?= 100000
fuzz: $(TEST_STAMP)
	$(BIN)/python -m hloprobe.tools.fuzz_modules --count=$(FUZZ_COUNT)

# The tests that start neither XLA nor a Python process (parsers, formats,
# recorded compiles, the layering rule, flags in process): under a minute.
# tests/conftest.py fails a test that does either unmarked `compiles`.
test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m "not compiles" tests

# The tests that assert CPU-computed floats, again under older x86 ISAs
# (XLA's CPU sum order and FMA use follow the ISA; not SSE4_2: XLA cannot
# compile f16 conversions there). CI runs this after `make test`.
ISAS ?= AVX AVX2
test-isa: $(TEST_STAMP)
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

# The release-sensitive tests (marker `release_rules`) and the tests that
# assert CPU-computed floats (`cpu_numerics`) again under jax 0.10.2, the
# other release hloprobe's rules are checked on. CI runs it after `make test`.
test-old: $(OLD_VENV)/.installed-stamp
	$(OLD_VENV)/bin/python -m pytest -q -m "release_rules or cpu_numerics" tests

# On a machine with a GPU: the seed sweep on it beside its compile-only
# twin, observed row 0 against the predicted band; writes the figures to
# tests/testdata/gpu_check/. Uses the machine's own jax, installs nothing.
gpu-check:
	PYTHONPATH=. $(PYTHON) -m hloprobe.commands.gpu_check $(GPU_CHECK_FLAGS)

# Then `hloprobe versions`' venv made by uv against venv + pip (downloads
# about 1 GB; hloprobe/tools/bench_venv.py), and the real-size lines
# (hloprobe/tools/bench_scale.py: GPT-2-small stacks, a ResNet-ish net, a
# decode layer; long: an hour or more on 2 cores), and the bitwise answer's
# line (hloprobe/tools/bench_invariance.py: a GPT-2 block, n = 1-64, a100).
bench: $(TEST_STAMP)
	$(BIN)/python -m hloprobe.tools.bench
	$(BIN)/python -m hloprobe.tools.bench_venv
	$(BIN)/python -m hloprobe.tools.bench_memory
	$(BIN)/python -m hloprobe.tools.bench_ray
	$(BIN)/python -m hloprobe.tools.bench_scale
	$(BIN)/python -m hloprobe.tools.bench_invariance

clean:
	rm -rf $(VENV) $(OLD_VENV) build *.egg-info

# ruff is pinned in pyproject.toml's `dev` extra, which $(TEST_STAMP) installs.
lint: $(TEST_STAMP)
	$(BIN)/ruff check hloprobe tests
	$(BIN)/ruff format --check hloprobe tests
