"""hloprobe under other jax versions.

`compat` bridges jax API differences and says whether the running jaxlib is
the checked one; `venvs` (cached virtualenvs per jaxlib; `install` makes one,
with uv), `run` (a worker
per venv, JSON both ways), `driver`, `compare` (the cross-version table),
`bisect` make `hloprobe versions` / `hloprobe bisect`; `gpu_check` is
`make gpu-check`. The face is one call per command: `versions_runs`
(`hloprobe versions`: the runs and their comparison's text),
`bisect_between` (`hloprobe bisect`: the answer and its text), `check_gpu`
(`make gpu-check`: the table, the JSON file written) and `cached_venvs`
(`hloprobe cache`: the venvs kept).
"""

from __future__ import annotations

from hloprobe.versions.bisect import bisect_between as bisect_between
from hloprobe.versions.driver import versions_runs as versions_runs
from hloprobe.versions.gpu_check import check_gpu as check_gpu
from hloprobe.versions.venvs import cached_venvs as cached_venvs

__all__ = [
  "bisect_between",
  "cached_venvs",
  "check_gpu",
  "versions_runs",
]
