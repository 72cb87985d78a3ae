"""`python -m hloprobe` runs the command line."""

from hloprobe.cli import run

if __name__ == "__main__":
  run()
