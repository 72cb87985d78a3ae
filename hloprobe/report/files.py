"""The report's files: written whole or not at all.

results.json and each config's `stablehlo.mlir` / `optimized.hlo` (and
the PTX its sites' algorithms were read from) under
--output_dir (`write_outputs`), results.jsonl as configs finish
(`append_result_line`), and `atomic_write` for every other file (the HTML
page, the plot, the Model Explorer overlay).

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import json
import os

from hloprobe.ir import write_whole
from hloprobe.records import ConfigResult
from hloprobe.report.invariance_words import invariance_json
from hloprobe.report.results_schema import (
  config_dir,
  config_json,
  dumps_json,
  finite,
  ptx_files,
  results_json,
)

__all__ = [
  "RESULTS_STREAM",
  "append_result_line",
  "atomic_write",
  "config_dir",
  "write_outputs",
]


def atomic_write(path: str, text: str | bytes) -> None:
  """Writes a file whole or not at all (`textfile.write_whole`, mode as
  `open()` makes it); bytes are written as they are, text as UTF-8."""
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  data = text if isinstance(text, bytes) else text.encode("utf-8")
  write_whole(path, lambda f: f.write(data))


RESULTS_STREAM = "results.jsonl"


def append_result_line(output_dir: str, r: ConfigResult) -> None:
  """Appends one config as one JSON line to `<output_dir>/results.jsonl`.

  Called as each config finishes, so an interrupted sweep keeps the
  configs it finished; each line is one `config_json` record, handed to
  the kernel by one `os.write` on an O_APPEND descriptor, so an interrupt
  never leaves part of a line (a reader polling the file may still, for a
  moment, see the end of a line being copied in). A buffered text file
  wrote a line longer than its 8 KiB chunk in two writes, and a reader
  polling the file saw the first half between them (CI, 2026-12-06).

  Raises:
    OSError: the line could not be written, or only part of it (a full
      disk); `report.stream`'s `Progress` then stops the stream, not the
      sweep.
  """
  os.makedirs(output_dir, exist_ok=True)
  data = (json.dumps(finite(config_json(r)), allow_nan=False) + "\n").encode()
  fd = os.open(
    os.path.join(output_dir, RESULTS_STREAM),
    os.O_WRONLY | os.O_APPEND | os.O_CREAT,
    0o666,  # as `open`'s, less the umask
  )
  try:
    written = os.write(fd, data)
  finally:
    os.close(fd)
  if written != len(data):  # a full disk; never seen on a regular file
    raise OSError(f"results.jsonl: wrote {written} of {len(data)} bytes")


def write_outputs(
  results: list[ConfigResult],
  output_dir: str,
  versions: dict[str, str],
  host=None,
  shard=None,
  answer=None,
  plan: dict | None = None,
) -> list[str]:
  """Writes per-config `stablehlo.mlir` / `optimized.hlo`, the PTX of each
  kernel a site's algorithm was read from (`ptx/<kernel>.ptx`, named in
  results.json's "ptx_files") and `results.json`.

  `versions`, `host`, a `--shard` run's plan (`shard`: its "shard"
  entry), explain's `answer` (its batch-invariance groups and pins, where asked) and the sweep's `plan` words go
  into results.json (see `results_json`).

  Returns the paths written. Each file is written atomically.
  """
  written = []
  for r in results:
    comp = r.compilation
    for name, text in (
      ("stablehlo.mlir", comp and comp.stablehlo),
      ("optimized.hlo", comp and comp.optimized_hlo),
    ):
      if text is not None:
        path = os.path.join(output_dir, config_dir(r), name)
        atomic_write(path, text)
        written.append(path)
    for kernel, rel in ptx_files(r).items():  # each "ptx" claim's evidence
      path = os.path.join(output_dir, rel)
      atomic_write(path, comp.ptx[kernel])
      written.append(path)
  invariance = (
    invariance_json(answer.invariance, answer.pins)
    if answer is not None and answer.invariance
    else None
  )
  path = os.path.join(output_dir, "results.json")
  atomic_write(
    path,
    dumps_json(results_json(results, versions, host, shard, invariance, plan))
    + "\n",
  )
  return written + [path]
