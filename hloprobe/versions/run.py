"""Running this hloprobe source tree under another jax: one worker per venv.

The parent (`run_version`) writes a JSON request, starts the venv's Python
on `python -m hloprobe.versions.run REQUEST REPLY` with only this source
tree's `hloprobe` package on PYTHONPATH (a symbolic link in a temporary
folder, so nothing else of the parent's environment comes along), and
reads a JSON reply: strict JSON both ways, never pickles, because the two
sides run different numpy and jax.

The worker (`_serve`) starts JAX on the CPU (compile-only GPU targets need
no CUDA backend; an attached `gpu` target lets JAX choose), runs the
sweep, judges the requested requirements (`verify.judge`) and replies

  {"jax": str, "jaxlib": str, "python": str, "warning": str | null,
   "jax_commit": str | null (the JAX commit jaxlib was built from, its
     `jaxlib/version.py` `_git_hash`; null where the wheel records none),
   "capabilities": {"dot_algorithm_preset": bool,
                    "threefry_partitionable": bool | null},
   "results": <results.json document, see report/results_schema.py>,
   "requirements": [{"name": str, "passed": bool, "evidence": [str]}]}

Private in intent: use the package, `hloprobe.versions`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile

from hloprobe.versions.children import Children
from hloprobe.versions.venvs import MARKER, Venv, last_line

__all__ = ["VersionRun", "run_version", "spec_from_request", "spec_request"]


@dataclasses.dataclass(frozen=True)
class VersionRun:
  """One jaxlib version's sweep, as its worker replied.

  Attributes:
    jaxlib: the version asked for, e.g. "0.4.38".
    reply: the worker's reply (module docstring), or None when it failed.
    error: one line saying why there is no reply, else None: "not
      installed: <why>" (no wheel for any Python found, pip failed) or
      the worker's failure.
    venv_created: whether this run made the version's venv.
    installed: False when the version has no venv (nothing ran; its
      cells never count as a change).
    python_version: the "major.minor" of the Python its venv runs, or
      None when it has none.
  """

  jaxlib: str
  reply: dict | None = None
  error: str | None = None
  venv_created: bool = False
  installed: bool = True
  python_version: str | None = None

  @property
  def ok(self) -> bool:
    return self.reply is not None


def spec_request(spec) -> dict:
  """An `engine.SweepSpec` as JSON-able fields, its XLA_FLAGS experiments as
  {"name", "xla_flags"} (the worker sweeps them beside the baseline);
  every path in it resolved against this process's folder (the worker
  runs in a folder of its own): a case file's (`path.py:factory`) and a
  module file's (`absolute_case_word`), a --target_config file's
  and --inputs (--autotune_results is in its experiment's flags,
  absolute already: `compile.autotune_experiment`)."""
  from hloprobe.compile import absolute_case_word, is_config_path

  inputs = getattr(spec, "inputs", None)
  return {
    "cases": [absolute_case_word(w) for w in spec.case_names],
    "batch_sizes": list(spec.batch_sizes),
    "precisions": list(spec.precisions),
    "targets": [
      os.path.abspath(w) if is_config_path(w) else w for w in spec.target_names
    ],
    "explain_passes": spec.explain_passes,
    "inputs": os.path.abspath(inputs) if inputs else None,
    "batch_arg": getattr(spec, "batch_arg", None),
    "experiments": [
      {"name": e.name, "xla_flags": list(e.xla_flags)} for e in spec.experiments
    ],
  }


def spec_from_request(fields: dict):
  """The `engine.SweepSpec` a worker sweeps, from `spec_request`'s fields."""
  from hloprobe import engine
  from hloprobe.compile import Experiment

  return engine.SweepSpec(
    cases=tuple(fields["cases"]),
    batch_sizes=tuple(fields["batch_sizes"]),
    precisions=tuple(fields["precisions"]),
    targets=tuple(fields["targets"]),
    explain_passes=bool(fields["explain_passes"]),
    inputs=fields.get("inputs"),
    batch_arg=fields.get("batch_arg"),
    experiments=tuple(
      Experiment(e["name"], tuple(e["xla_flags"]))
      for e in fields.get("experiments", ())
    ),
  )


def _package_dir() -> str:
  import hloprobe

  return os.path.dirname(os.path.abspath(hloprobe.__file__))


def _worker_env(path_dir: str, targets: list[str]) -> dict[str, str]:
  env = {
    k: v
    for k, v in os.environ.items()
    if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
  }
  env["PYTHONPATH"] = path_dir
  env.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
  if "gpu" not in targets:
    env.setdefault("JAX_PLATFORMS", "cpu")
  return env


# How long a venv's python may take to start and exit before it counts as
# broken (a cold disk, a loaded machine).
_START_TIMEOUT_S = 60.0


def _broken_python(venv: Venv, children: Children) -> str:
  """After a failed worker: "" when the venv's python starts and exits 0
  (`python -I -c pass`), else "; " and one line saying it cannot, the
  cached venv's marker removed so that the next run rebuilds it
  (`venvs.find_venv` reuses only a folder with its marker); before this,
  such a venv was reused by every run, its worker failing with "no
  output" (issue 27 item 12)."""
  try:
    proc = children.run(
      [venv.python, "-I", "-c", "pass"], timeout=_START_TIMEOUT_S
    )
    status = proc.returncode
  except subprocess.TimeoutExpired:
    status = f"no exit in {_START_TIMEOUT_S:.0f} s"
  except OSError as e:
    status = e.strerror or type(e).__name__
  if status == 0 or (isinstance(status, int) and status < 0):
    return ""  # it starts (or the run was interrupted): the worker failed
  marker = os.path.join(venv.path, MARKER)
  if not os.path.isfile(marker):  # not a cached venv (the running one)
    return f"; its python cannot start ({venv.python}: {status})"
  try:
    os.remove(marker)
  except OSError:
    pass
  return (
    f"; its python cannot start ({venv.python}: {status}): the venv will "
    "be made again by the next run"
  )


def run_version(
  venv: Venv,
  request: dict,
  requirements: tuple[str, ...] = (),
  timeout_s: float = 1800.0,
  children: Children | None = None,
) -> VersionRun:
  """Runs a sweep in a version's venv; never raises for the worker's failure.

  Args:
    venv: the version's venv (`venvs.ensure_venv`).
    request: `spec_request(spec)`.
    requirements: names `verify.judge` takes ("consistent", "accurate").
    timeout_s: wall-clock limit, in seconds.
    children: runs the worker (`Children.stop` ends it); None: a private one.

  Returns:
    A `VersionRun` with the reply, or with the error in one line.
  """
  with tempfile.TemporaryDirectory(prefix="hloprobe-versions-") as tmp:
    os.symlink(_package_dir(), os.path.join(tmp, "hloprobe"))
    req_path, reply_path = (
      os.path.join(tmp, "request.json"),
      os.path.join(tmp, "reply.json"),
    )
    with open(req_path, "w", encoding="utf-8") as f:
      json.dump({"spec": request, "requirements": list(requirements)}, f)
    try:
      proc = (children or Children()).run(
        [
          venv.python,
          "-s",
          "-m",
          "hloprobe.versions.run",
          req_path,
          reply_path,
        ],
        timeout=timeout_s,
        cwd=tmp,
        env=_worker_env(tmp, request["targets"]),
      )
    except subprocess.TimeoutExpired:
      return VersionRun(
        venv.jaxlib,
        error=f"worker timed out after {timeout_s:.0f} s",
        venv_created=venv.created,
        python_version=venv.python_version,
      )
    if proc.returncode != 0 or not os.path.exists(reply_path):
      broken = ""
      if proc.returncode > 0:
        broken = _broken_python(venv, children or Children())
      return VersionRun(
        venv.jaxlib,
        error=f"worker exited with status {proc.returncode}: "
        f"{last_line(proc.stderr)}{broken}",
        venv_created=venv.created,
        python_version=venv.python_version,
      )
    with open(reply_path, encoding="utf-8") as f:
      reply = json.load(f)
  return VersionRun(
    venv.jaxlib,
    reply=reply,
    venv_created=venv.created,
    python_version=venv.python_version,
  )


def _serve(request_path: str, reply_path: str) -> None:
  """The worker: sweep, judge, reply (runs under the venv's jax)."""
  import platform

  import jax

  from hloprobe import engine, verify
  from hloprobe.compile import jaxlib_release, start_backends
  from hloprobe.report import (
    atomic_write,
    dumps_json,
    requirement_lines,
    results_json,
  )

  with open(request_path, encoding="utf-8") as f:
    request = json.load(f)
  spec = spec_from_request(request["spec"])
  start_backends(None)
  results = engine.run_sweep(spec)
  judged = verify.judge(results, request["requirements"])
  release = jaxlib_release()
  reply = {
    **release.versions,
    "python": platform.python_version(),
    "warning": release.warning,
    "jax_commit": release.git_hash,
    "capabilities": {
      "dot_algorithm_preset": hasattr(jax.lax, "DotAlgorithmPreset"),
      # jax 0.5.0 made it True by default: the same PRNGKey then draws
      # other random numbers, so the cases' inputs differ across 0.5.0.
      "threefry_partitionable": getattr(
        jax.config, "jax_threefry_partitionable", None
      ),
    },
    "results": results_json(results, release.versions),
    "requirements": [
      {
        "name": r.name,
        "passed": r.passed,
        "evidence": requirement_lines(r),
      }
      for r in judged
    ],
  }
  atomic_write(reply_path, dumps_json(reply))


if __name__ == "__main__":
  _serve(sys.argv[1], sys.argv[2])
