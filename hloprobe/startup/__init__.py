"""What XLA and the CUDA plugin write to the process's stderr, and the
command line's filter of the plugin's start-up lines (`_stderr`).

A low package that imports neither JAX nor any stage, so the command line
can enter `quiet_startup` before anything imports jax (a stage face
imports its modules, and with them jax). `hloprobe-quiet-cuda.pth` beside
it is copied into each venv's site-packages by the Makefile (read it for
why).
"""

from __future__ import annotations

from hloprobe.startup._stderr import (
  EscapingStream,
  captured_stderr,
  filter_startup_noise,
  quiet_startup,
)

__all__ = [
  "EscapingStream",
  "captured_stderr",
  "filter_startup_noise",
  "quiet_startup",
]
