"""Where a sweep's workers run (--executor): local processes or a Ray
cluster's actors, behind one interface (`worker_pool`).

Private in intent: use the package, `hloprobe.engine`.
"""

from __future__ import annotations

import os

from hloprobe.engine.compiled import CompileRequest, LoadTargetRequest
from hloprobe.engine.plan import SweepPlan, plan_sweep
from hloprobe.engine.shell import FORK_PRELOAD
from hloprobe.engine.spec import EXECUTORS, SweepSpec
from hloprobe.errors import InvalidArgumentError
from hloprobe.runtime import RayPool, WorkerPool

__all__ = ["worker_pool"]

# What a sweep's own workers import as they start (`WorkerPool` preload):
# the module of these requests, and jax with it.
_PRELOAD = (CompileRequest, LoadTargetRequest)


def worker_pool(spec: SweepSpec | SweepPlan) -> WorkerPool | RayPool:
  """A pool of workers fit for `spec`'s targets and executor, for several
  `run_sweep` calls to share (`run_sweep(..., pool=)`; `explain` runs its
  candidate fixes on the workers its sweep started): local processes, or
  a Ray cluster's actors (`spec.executor == "ray"`, `runtime.RayPool`;
  same interface, same results). Use it as a context manager. Either
  pool's workers are bounded by `spec.max_worker_mb` (by default a
  quarter of the memory of the machine or Ray node each runs on).

  Raises:
    InvalidArgumentError: an unknown executor, or "ray" without Ray.
  """
  spec = plan_sweep(spec)
  if spec.executor == "ray":
    return RayPool(
      _worker_platforms(spec),
      _PRELOAD,
      address=spec.ray_address,
      num_cpus=spec.jobs,
      max_worker_mb=spec.max_worker_mb,
    )
  if spec.executor != "local":
    raise InvalidArgumentError(
      f"unknown executor {spec.executor!r}; choose from {', '.join(EXECUTORS)}"
    )
  return WorkerPool(
    _worker_platforms(spec),
    _PRELOAD,
    max_worker_mb=spec.max_worker_mb,
    kept_heap=True,  # its compile lanes run XLA:CPU's programs
    forked=FORK_PRELOAD,  # jax and the stages imported once
  )


def _worker_platforms(spec: SweepPlan) -> str | None:
  """JAX_PLATFORMS for a sweep's workers: with an attached GPU target the
  user's JAX_PLATFORMS or JAX's own choice (""), else this process's."""
  if any(t.platform == "cuda" and not t.compile_only for t in spec.targets):
    return os.environ.get("JAX_PLATFORMS", "")
  return None
