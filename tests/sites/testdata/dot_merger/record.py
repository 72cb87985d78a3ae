"""Records the dot-merger fixtures beside this file (issue 21).

Run once per release, from the repository root, with that release's
interpreter:

  PYTHONPATH=.:tests .venv/bin/python tests/sites/testdata/dot_merger/record.py
  PYTHONPATH=.:tests .venv-jax0.10.2/bin/python \
    tests/sites/testdata/dot_merger/record.py

Each program of `program_cases.merged_dots` is compiled for a compile-only
A100 at n = 2 under bfloat16; the StableHLO (with its locations) and the
optimized HLO are written as `<case>-jaxlib<V>.stablehlo.mlir` / `.hlo`,
with the repository's absolute path cut from the source locations of both,
so they name `tests/program_cases.py`. The tests read the text only.
"""

from __future__ import annotations

import os
import sys

import program_cases

from hloprobe.compile import compat, targets
from hloprobe.engine.measure import run_config

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.abspath(os.path.join(_HERE, *[os.pardir] * 4)) + os.sep


def main() -> int:
  # As tests/conftest.py: before any JAX backend starts.
  os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
  version = compat.installed_jaxlib()
  for cross in (False, True):
    case = program_cases.merged_dots(cross)
    r = run_config(
      case, case.make_inputs(), None, targets.get_target("a100"), "bfloat16", 2
    )
    if not r.ok:
      print(f"{case.name}: {r.failure}", file=sys.stderr)
      return 1
    stem = os.path.join(_HERE, f"{case.name}-jaxlib{version}")
    for ext, text in (
      ("stablehlo.mlir", r.compilation.stablehlo),
      ("hlo", r.compilation.optimized_hlo),
    ):
      with open(f"{stem}.{ext}", "w") as f:
        f.write(text.replace(_ROOT, ""))
    print(f"wrote {stem}.*")
  return 0


if __name__ == "__main__":
  sys.exit(main())
