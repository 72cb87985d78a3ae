"""`make gpu-check`: the seed sweep on an attached GPU beside its
compile-only description (`versions.gpu_check`), printed as a table and
written as JSON test data.

Runs from the source tree with the machine's own jax and nothing installed:
`PYTHONPATH=. python -m hloprobe.commands.gpu_check [--flags]`. Its flags
are its own (absl, defined when run as a script), not `hloprobe`'s.
"""

from __future__ import annotations

import sys

from hloprobe.errors import InvalidArgumentError
from hloprobe.ir import DEFAULT_PRECISIONS
from hloprobe.versions import check_gpu

__all__ = ["main"]


def main(argv: list[str]) -> int:
  """absl main: run, print the table, write the JSON file."""
  from absl import flags

  f = flags.FLAGS
  del argv
  try:
    check = check_gpu(
      f.device_target,
      f.compile_only_target,
      f.batch_sizes,
      tuple(f.precisions),
      f.output,
    )
  except InvalidArgumentError as e:
    print(f"hloprobe: error: {e}", file=sys.stderr)
    return 2
  for line in check.notes:
    print(line, file=sys.stderr)
  print(check.text)
  print(f"wrote {check.path}", file=sys.stderr)
  return 0 if check.ok else 1


def _define_flags() -> None:
  from absl import flags

  flags.DEFINE_string(
    "device_target", "gpu", "The target that runs: gpu, or cpu standing in."
  )
  flags.DEFINE_string(
    "compile_only_target",
    None,
    "The compile-only twin (default: from the GPU's device kind).",
  )
  flags.DEFINE_string("batch_sizes", "1-9", "Batch sizes, e.g. 1-9.")
  flags.DEFINE_list(
    "precisions", list(DEFAULT_PRECISIONS), "Matmul precisions."
  )
  flags.DEFINE_string(
    "output",
    None,
    "The JSON file (default tests/testdata/gpu_check/<device>-jaxlib<V>.json).",
  )


if __name__ == "__main__":
  from absl import app

  _define_flags()
  app.run(lambda argv: sys.exit(main(argv)))
