"""`python -m hloprobe` runs the command line (see hloprobe/cli.py)."""

from hloprobe.cli import run

if __name__ == "__main__":
  run()
