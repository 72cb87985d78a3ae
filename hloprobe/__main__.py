"""`python -m hloprobe` and the installed `hloprobe` console script
(pyproject.toml `[project.scripts]`) both enter here, at `main`, and run
the command line (see hloprobe/cli/)."""

from __future__ import annotations

import signal

__all__ = ["main"]


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
  from hloprobe.cli import run

  run()


if __name__ == "__main__":
  main()
