"""`make bench`'s venv line: `hloprobe versions`' venv made by uv against
venv + pip (issue 26: "at least 5x faster than today").

One release's venv (jaxlib 0.10.2 with the CUDA plugin and nvcc, as for
compile-only GPU targets) is made by venv + pip (hloprobe before issue 26)
and by uv, first with empty caches of their own (all downloaded), then
again with those caches warm (a new release's venv shares most wheels
with the venvs made before it). It downloads about 1 GB. Alone:
`.venv/bin/python -m hloprobe.tools.bench_venv`.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from hloprobe.tools import bench, bench_clock

__all__ = ["venv"]


def _made_venv(installer: str, folder: str, caches: str) -> bench_clock.Clock:
  """One venv of `_VENV_RELEASE` made by `installer` under `folder`, with
  pip's and uv's caches under `caches` (restored after)."""
  from hloprobe.versions.venvs import ensure_venv, this_python

  saved = {k: os.environ.get(k) for k in ("PIP_CACHE_DIR", "UV_CACHE_DIR")}
  os.environ.update(PIP_CACHE_DIR=f"{caches}/pip", UV_CACHE_DIR=f"{caches}/uv")
  start, cpu = time.perf_counter(), bench_clock.children_cpu()
  try:
    ensure_venv(
      _VENV_RELEASE,
      folder,
      sys.executable,
      this_python(),
      installer=installer,
    )
  finally:
    for k, v in saved.items():
      os.environ.pop(k) if v is None else os.environ.update({k: v})
  return bench_clock.Clock(
    time.perf_counter() - start, bench_clock.children_cpu() - cpu
  )


_VENV_RELEASE = "0.10.2"


def venv() -> None:
  """Prints venv + pip / uv for one release's venv, caches cold then warm."""
  with tempfile.TemporaryDirectory(prefix="hloprobe-bench-") as top:
    for state in ("cold", "warm"):
      pip, uv = (
        _made_venv(i, f"{top}/{state}-{i}", top) for i in ("pip", "uv")
      )
      bench_clock.report(
        f"versions venv, pip / uv (jaxlib {_VENV_RELEASE}, {state} caches)",
        pip.wall / uv.wall,
        ">= 5x",
        pip.wall >= 5 * uv.wall,
        bench._seconds(pip, uv),
      )


if __name__ == "__main__":
  venv()
