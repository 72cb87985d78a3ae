"""`python -m hloprobe` runs the command line (see hloprobe/cli.py)."""

import signal

if __name__ == "__main__":
  # SIGINT/SIGTERM wait, blocked, until `run` has set its handlers, then
  # arrive there: while the command line imports jax, fd 2 is redirected
  # (toolchain.quiet_startup) and a handler may run inside a callback of
  # jax's that drops exceptions (`_xla_gc_callback`) or of C++ code that
  # aborts on them.
  signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
  from hloprobe.cli import run

  run()
