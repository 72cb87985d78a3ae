"""hloprobe's command line, one package: `run` parses `sys.argv` and runs
the command (`hloprobe.__main__.main` and the `hloprobe` console script
enter here).

Behind the face, lowest first: `_rules` (a closed-vocabulary list flag and
why a command refuses another's flag), `_flags` (the absl flags),
`_help` (`--help` and `--version`) and `_main` (the dispatch to
`hloprobe.commands`, the signals, the exit status; its docstring is the
command list `--help` prints). Importing this package imports jax, with
the CUDA plugin's start-up lines dropped (`hloprobe.startup`).
"""

from __future__ import annotations

from hloprobe.cli._main import run

__all__ = ["run"]
