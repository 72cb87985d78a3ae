"""The command layer: one module per `hloprobe` command, the only library
modules that print.

Each (as jax's `jax_to_ir.py`) has a frozen args record whose fields are
named after the flags it reads, a library function that returns data, and
`main(args) -> int` that prints and returns the exit status: sweep,
explain, verify, golden (check, update), listings (targets, cases,
experiments), versions, bisect, cache, view; gpu_check is `make
gpu-check`'s script. `common` holds what they share. `hloprobe.cli` reads
the flags, builds the records, dispatches and handles signals.
Importing this package imports none of its modules.
"""

from __future__ import annotations

__all__: list[str] = []
