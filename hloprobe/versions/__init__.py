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

from hloprobe.versions.bisect import bisect_releases as bisect_releases
from hloprobe.versions.bisect import releases_between as releases_between
from hloprobe.versions.bisect import render_bisect as render_bisect
from hloprobe.versions.compare import render_versions as render_versions
from hloprobe.versions.compare import versions_json as versions_json
from hloprobe.versions.driver import plan as plan
from hloprobe.versions.driver import run_versions as run_versions
from hloprobe.versions.gpu_check import DEFAULT_OUTPUT_DIR as DEFAULT_OUTPUT_DIR
from hloprobe.versions.gpu_check import (
  autotune_record_flags as autotune_record_flags,
)
from hloprobe.versions.gpu_check import output_path as output_path
from hloprobe.versions.gpu_check import recording_note as recording_note
from hloprobe.versions.gpu_check import render_check as render_check
from hloprobe.versions.gpu_check import run_gpu_check as run_gpu_check
from hloprobe.versions.gpu_check import stamp_results as stamp_results
from hloprobe.versions.pythons import survey as survey
from hloprobe.versions.run import spec_from_request as spec_from_request
from hloprobe.versions.run import spec_request as spec_request
from hloprobe.versions.venvs import VenvError as VenvError
from hloprobe.versions.venvs import cached_venvs as cached_venvs
from hloprobe.versions.venvs import default_cache_dir as default_cache_dir
from hloprobe.versions.venvs import ensure_venv as ensure_venv
from hloprobe.versions.venvs import this_python as this_python
from hloprobe.versions.venvs import version_key as version_key

__all__ = [
  "DEFAULT_OUTPUT_DIR",
  "VenvError",
  "autotune_record_flags",
  "bisect_releases",
  "cached_venvs",
  "default_cache_dir",
  "ensure_venv",
  "output_path",
  "plan",
  "recording_note",
  "releases_between",
  "render_bisect",
  "render_check",
  "render_versions",
  "run_gpu_check",
  "run_versions",
  "spec_from_request",
  "spec_request",
  "stamp_results",
  "survey",
  "this_python",
  "version_key",
  "versions_json",
]
