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
from hloprobe.versions.gpu_check import output_path as output_path
from hloprobe.versions.gpu_check import render_check as render_check
from hloprobe.versions.gpu_check import run_gpu_check as run_gpu_check
from hloprobe.versions.pythons import survey as survey
from hloprobe.versions.run import spec_request as spec_request
from hloprobe.versions.venvs import VenvError as VenvError
from hloprobe.versions.venvs import cached_venvs as cached_venvs
from hloprobe.versions.venvs import default_cache_dir as default_cache_dir
from hloprobe.versions.venvs import version_key as version_key

__all__ = [
  "DEFAULT_OUTPUT_DIR",
  "VenvError",
  "bisect_releases",
  "cached_venvs",
  "default_cache_dir",
  "output_path",
  "plan",
  "releases_between",
  "render_bisect",
  "render_check",
  "render_versions",
  "run_gpu_check",
  "run_versions",
  "spec_request",
  "survey",
  "version_key",
  "versions_json",
]
