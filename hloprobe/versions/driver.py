"""One sweep under each of several jaxlib versions: venv, then worker.

`run_versions` is what `hloprobe versions` and `hloprobe bisect` share: for
each version the cached venv (`venvs.ensure_venv`, made on first use; the
running interpreter for its own jaxlib; CPU-only when every target is the
CPU) and
a worker run of the same sweep in it (`run.run_version`). A version whose
venv cannot be made (no wheel for this Python, pip failed) becomes a
`VersionRun` with that error; the others still run.

Versions are independent, so `run_versions` runs up to `jobs` of them at
once (threads, each waiting on its own pip and worker processes); the runs
come back in the order asked, whichever finishes first.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable, Sequence

from hloprobe.compile import compat
from hloprobe.versions import run, venvs
from hloprobe.versions.children import Children

__all__ = ["plugin_versions", "run_one", "run_versions"]


def plugin_versions(
  versions: Sequence[str], request: dict, cache_dir: str
) -> tuple[str, ...] | None:
  """The index's `jax-cuda12-plugin` versions, asked once for many runs.

  Args:
    versions: the jaxlib releases about to run.
    request: `run.spec_request(spec)` (its targets say whether CUDA is
      needed).
    cache_dir: the venv cache folder.

  Returns:
    None when no venv with CUDA must be made (every target is the CPU, or
    every version's venv is cached); () when the index cannot be asked
    (the venvs are then made without the plugin); else its versions.
  """
  cuda = any(t != "cpu" for t in request["targets"])
  if not cuda or all(
    venvs.find_venv(v, cache_dir) is not None for v in versions
  ):
    return None
  try:
    return venvs.index_versions("jax-cuda12-plugin")
  except venvs.VenvError:
    return ()


def run_one(
  jaxlib: str,
  request: dict,
  cache_dir: str,
  requirements: tuple[str, ...] = (),
  plugin_versions: tuple[str, ...] | None = None,
  log: Callable[[str], None] = lambda line: None,
  children: Children | None = None,
) -> run.VersionRun:
  """One version's sweep; its failure is recorded, never raised.

  Args:
    jaxlib: e.g. "0.4.38".
    request: `run.spec_request(spec)`.
    cache_dir: the venv cache folder.
    requirements: for `verify.judge` in the worker.
    plugin_versions: the index's `jax-cuda12-plugin` versions (None: ask
      it when a venv must be made).
    log: called with one progress line at a time (e.g. print to stderr).
    children: runs pip and the worker (`Children.stop` ends them).
  """
  start = time.perf_counter()
  cuda = any(t != "cpu" for t in request["targets"])
  try:
    if jaxlib == compat.installed_jaxlib():
      venv = venvs.running_venv()
    else:
      venv = venvs.ensure_venv(
        jaxlib, cache_dir, plugin_versions, cuda=cuda, children=children
      )
  except venvs.VenvError as e:
    log(f"jaxlib {jaxlib}: {e}")
    return run.VersionRun(jaxlib, error=str(e))
  made = "made" if venv.created else "reused"
  log(
    f"jaxlib {jaxlib}: venv {made} ({venv.path}, "
    f"{time.perf_counter() - start:.0f} s); sweeping"
  )
  result = run.run_version(venv, request, requirements, children=children)
  if result.error:
    log(f"jaxlib {jaxlib}: {result.error}")
  return result


def run_versions(
  versions: Sequence[str],
  request: dict,
  cache_dir: str,
  requirements: tuple[str, ...] = (),
  log: Callable[[str], None] = lambda line: None,
  jobs: int = 1,
) -> list[run.VersionRun]:
  """`run_one` for each version, up to `jobs` at once; in `versions` order.

  A version that fails in any way is a `VersionRun` with its error; the
  others still run. An interrupt (KeyboardInterrupt) kills every pip and
  worker process started, then propagates.
  """
  plugins = plugin_versions(versions, request, cache_dir)
  children = Children()

  def one(jaxlib: str) -> run.VersionRun:
    try:
      return run_one(
        jaxlib, request, cache_dir, requirements, plugins, log, children
      )
    except Exception as e:  # e.g. a full disk: this version's error only
      log(f"jaxlib {jaxlib}: {type(e).__name__}: {e}")
      return run.VersionRun(jaxlib, error=f"{type(e).__name__}: {e}")

  if jobs <= 1 or len(versions) <= 1:
    return [one(v) for v in versions]
  pool = concurrent.futures.ThreadPoolExecutor(
    min(jobs, len(versions)), thread_name_prefix="hloprobe-version"
  )
  try:
    futures = [pool.submit(one, v) for v in versions]
    return [f.result() for f in futures]
  except BaseException:
    children.stop()
    raise
  finally:
    pool.shutdown(wait=True, cancel_futures=True)
