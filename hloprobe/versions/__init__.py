"""hloprobe under other jax versions.

`compat` bridges jax API differences and says whether the running jaxlib is
the checked one; `venvs` (cached virtualenvs per jaxlib; `install` makes one,
with uv), `run` (a worker
per venv, JSON both ways), `driver`, `compare` (the cross-version table),
`bisect` and `commands` make `hloprobe versions` / `hloprobe bisect`;
`gpu_check` is `make gpu-check`. Importing this package imports no module
of it.
"""

from __future__ import annotations

from hloprobe.versions.bisect import bisect_between as bisect_between
from hloprobe.versions.bisect import render_bisect as render_bisect
from hloprobe.versions.compare import render_versions as render_versions
from hloprobe.versions.driver import versions_runs as versions_runs
from hloprobe.versions.gpu_check import DEFAULT_OUTPUT_DIR as DEFAULT_OUTPUT_DIR
from hloprobe.versions.gpu_check import output_path as output_path
from hloprobe.versions.gpu_check import render_check as render_check
from hloprobe.versions.gpu_check import run_gpu_check as run_gpu_check
from hloprobe.versions.venvs import cached_venvs as cached_venvs

__all__ = [
  "DEFAULT_OUTPUT_DIR",
  "bisect_between",
  "cached_venvs",
  "output_path",
  "render_bisect",
  "render_check",
  "render_versions",
  "run_gpu_check",
  "versions_runs",
]
