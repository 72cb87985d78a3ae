"""Worker processes: sweep stages run under their own XLA_FLAGS.

XLA reads XLA_FLAGS once per process (xla/debug_options_flags.cc,
ParseDebugOptionsFlagsFromEnv), so a config that needs other flags runs in a
fresh `python -m hloprobe.worker`. The request and the records travel as
pickles through files, never as text to re-parse. XLA aborts the process
on a flag it does not know (`parse_flags_from_env.cc: Unknown flag in
XLA_FLAGS: --xla_...`, jaxlib 0.10.2): that death becomes one `WorkerError`
line naming the flag.
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
import tempfile

from hloprobe.errors import HloprobeError

__all__ = ["WorkerError", "call_in_worker"]

_UNKNOWN_FLAG_RE = re.compile(r"Unknown flag in XLA_FLAGS: (\S+)")
# Functions a worker may run, by name: (module, attribute).
_FUNCTIONS = {
  "run_sweep": ("hloprobe.sweep", "run_sweep"),
}


class WorkerError(HloprobeError):
  """Raised when a worker process dies or XLA rejects its flags."""


def _explain_death(returncode: int, stderr: str, xla_flags: str) -> str:
  m = _UNKNOWN_FLAG_RE.search(stderr)
  if m:
    return f"XLA rejected flag {m.group(1)} (XLA_FLAGS={xla_flags!r})"
  lines = [l for l in stderr.strip().splitlines() if l.strip()]
  last = lines[-1] if lines else "no output"
  return f"worker exited with status {returncode}: {last}"


def call_in_worker(
  function: str, kwargs: dict, xla_flags: str, timeout_s: float = 1800.0
):
  """Runs `function(**kwargs)` in a fresh process with XLA_FLAGS set.

  Args:
    function: a name in `_FUNCTIONS` ("run_sweep").
    kwargs: picklable keyword arguments.
    xla_flags: the XLA_FLAGS value for the worker ("" for none).
    timeout_s: wall-clock limit in seconds.

  Returns:
    The function's return value, unpickled.

  Raises:
    WorkerError: the worker died (e.g. XLA rejected a flag) or timed out.
  """
  if function not in _FUNCTIONS:
    raise ValueError(
      f"unknown worker function {function!r}; choose from {sorted(_FUNCTIONS)}"
    )
  with tempfile.TemporaryDirectory(prefix="hloprobe-worker-") as tmp:
    request, reply = (
      os.path.join(tmp, "request.pkl"),
      os.path.join(tmp, "reply.pkl"),
    )
    with open(request, "wb") as f:
      pickle.dump((function, kwargs), f)
    env = dict(os.environ, XLA_FLAGS=xla_flags)
    platforms = _jax_platforms()
    if platforms:  # the worker starts the same backends as this process
      env["JAX_PLATFORMS"] = platforms
    try:
      proc = subprocess.run(
        [sys.executable, "-m", "hloprobe.worker", request, reply],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
      )
    except subprocess.TimeoutExpired as e:
      raise WorkerError(f"worker timed out after {timeout_s:.0f} s") from e
    if proc.returncode != 0 or not os.path.exists(reply):
      raise WorkerError(_explain_death(proc.returncode, proc.stderr, xla_flags))
    with open(reply, "rb") as f:
      return pickle.load(f)


def _jax_platforms() -> str | None:
  import jax

  return jax.config.jax_platforms


def _serve(request: str, reply: str) -> None:
  import importlib

  with open(request, "rb") as f:
    function, kwargs = pickle.load(f)
  module, attr = _FUNCTIONS[function]
  result = getattr(importlib.import_module(module), attr)(**kwargs)
  with open(reply + ".tmp", "wb") as f:
    pickle.dump(result, f)
  os.replace(reply + ".tmp", reply)


if __name__ == "__main__":
  _serve(sys.argv[1], sys.argv[2])
