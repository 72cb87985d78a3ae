"""The command layer: one module per `hloprobe` command, the only library
modules that print.

Each (as jax's `jax_to_ir.py`) has a frozen args record whose fields are
named after the flags it reads, a library function that returns data, and
`main(args) -> int` that prints and returns the exit status: sweep,
explain, verify, golden (check, update), listings (targets, cases,
experiments), versions, bisect, cache, view; gpu_check is `make
gpu-check`'s script. `common` holds what they share, `shards` a `--shard`
run's files (written by sweep, joined by merge). `hloprobe.cli` reads
the flags, builds the records, dispatches (`COMMANDS`: command -> its
args record and `main`) and handles signals.

The face is what `hloprobe.cli` uses: `COMMANDS`, the exit statuses
(`ExitStatus`) and the shared flags' record `SweepWords` (the signal a
command stops on is `api.Interrupted`). Importing this package imports
none of its modules: each name is imported on first use (PEP 562), so
`python -m hloprobe.commands.gpu_check` loads only its own module.
"""

from __future__ import annotations

import importlib

__all__ = [
  "COMMANDS",
  "ExitStatus",
  "SweepWords",
]

# Public name -> the module behind the face that defines it.
_WHERE = {
  "COMMANDS": "_table",
  "ExitStatus": "common",
  "SweepWords": "common",
}


def __getattr__(name: str):
  """Imports `name`'s module on first use; AttributeError for other names."""
  if name not in _WHERE:
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
  return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
