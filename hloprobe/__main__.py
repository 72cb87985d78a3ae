"""`python -m hloprobe` runs the command line (see hloprobe/cli.py)."""

import signal
import sys


def _early_interrupt(signum, frame):
  """An interrupt while the command line is still being imported."""
  del frame
  print("hloprobe: interrupted", file=sys.stderr)
  sys.exit(128 + signum)


if __name__ == "__main__":
  for _s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(_s, _early_interrupt)
  from hloprobe.cli import run

  run()
