"""`python -m hloprobe` and the installed `hloprobe` console script
(pyproject.toml `[project.scripts]`) both enter here, at `main`, and run
the command line (see hloprobe/cli/)."""

from __future__ import annotations

import signal
import sys

__all__ = ["main"]

# Commands that sweep, whose workers are forks of a server that imports
# the sweep's stages once (`runtime.forked`; `engine.shell.FORK_PRELOAD`):
# started here, before this process imports the command line, so that
# the two imports run side by side (issue 37: about 1.2 CPU-s each, one
# core idle while this process alone imported them).
_SWEEPING = frozenset({"sweep", "explain", "bisect", "golden", "verify"})


def main() -> None:
  """Runs the command line (`cli.run`), SIGINT/SIGTERM blocked until then.

  They wait, blocked, until `run` has set its handlers, then arrive there:
  while the command line imports jax, fd 2 is redirected
  (startup.quiet_startup) and a handler may run inside a callback of
  jax's that drops exceptions (`_xla_gc_callback`) or of C++ code that
  aborts on them. The block is set before `hloprobe.cli` is imported, so
  this module imports nothing of jax itself.
  """
  signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
  if sys.argv[1:2] and sys.argv[1] in _SWEEPING:
    _start_fork_server()
  from hloprobe.cli import run

  run()


def _start_fork_server() -> None:
  """The server of the sweep's forked workers, started (its imports go on
  in the background; `WorkerPool.start_fork_server`)."""
  from hloprobe.runtime import WorkerPool

  WorkerPool.start_fork_server(("hloprobe.engine",))


if __name__ == "__main__":
  main()
