"""`make gpu-check`: the seed sweep on an attached GPU beside its
compile-only description (`versions.gpu_check`), printed as a table and
written as JSON test data.

Runs from the source tree with the machine's own jax and nothing installed:
`PYTHONPATH=. python -m hloprobe.commands.gpu_check [--flags]`. Its flags
are its own (absl, defined when run as a script), not `hloprobe`'s.
"""

from __future__ import annotations

import os
import sys

from hloprobe.errors import InvalidArgumentError
from hloprobe.ir import DEFAULT_PRECISIONS
from hloprobe.versions import (
  DEFAULT_OUTPUT_DIR,
  output_path,
  render_check,
  run_gpu_check,
)

__all__ = ["main"]


def main(argv: list[str]) -> int:
  """absl main: run, print the table, write the JSON file."""
  from absl import flags

  from hloprobe.engine import parse_batch_sizes
  from hloprobe.report import atomic_write, dumps_json

  f = flags.FLAGS
  del argv
  try:
    doc = run_gpu_check(
      f.device_target,
      f.compile_only_target,
      parse_batch_sizes(f.batch_sizes),
      tuple(f.precisions),
      # On a GPU: its target config and autotune results, beside the JSON.
      record_dir=os.path.dirname(f.output or "") or DEFAULT_OUTPUT_DIR,
    )
  except InvalidArgumentError as e:
    print(f"hloprobe: error: {e}", file=sys.stderr)
    return 2
  for line in (doc["warning"], doc.get("recording_note")):
    if line:
      print(line, file=sys.stderr)
  print(render_check(doc))
  path = output_path(doc, f.output)
  atomic_write(path, dumps_json(doc) + "\n")
  print(f"wrote {path}", file=sys.stderr)
  observed = [c for c in doc["configs"] if c["observed"]["status"] == "ok"]
  return 0 if observed and len(observed) == len(doc["configs"]) else 1


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
    f"The JSON file (default {DEFAULT_OUTPUT_DIR}/<device>-jaxlib<V>.json).",
  )


if __name__ == "__main__":
  from absl import app

  _define_flags()
  app.run(lambda argv: sys.exit(main(argv)))
