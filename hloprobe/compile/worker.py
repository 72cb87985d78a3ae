"""Worker processes: sweep stages run under their own XLA_FLAGS.

XLA reads XLA_FLAGS once per process (xla/debug_options_flags.cc,
ParseDebugOptionsFlagsFromEnv), so a config that needs other flags runs in a
fresh `python -m hloprobe.compile.worker`. The request and the records travel as
pickles through files, never as text to re-parse. XLA aborts the process
on a flag it does not know (`parse_flags_from_env.cc: Unknown flag in
XLA_FLAGS: --xla_...`, jaxlib 0.10.2): that death becomes one `WorkerError`
line naming the flag.

A worker runs with the user's own XLA_FLAGS (as the baseline does, in this
process) followed by the experiment's. XLA reads the words left to right and
the last value of a flag wins (checked on jaxlib 0.10.2 with two
--xla_dump_to), so an experiment overrides the user where both set a flag.
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
import tempfile

from hloprobe.errors import HloprobeError

__all__ = ["WorkerError", "call_in_worker", "worker_xla_flags"]

_UNKNOWN_FLAG_RE = re.compile(r"Unknown flag in XLA_FLAGS: (\S+)")
# A flag XLA knows with a value it cannot read (command_line_flags.cc).
_BAD_VALUE_RE = re.compile(
  r"Couldn't interpret value (.*) for flag (\S+?)\.?$", re.M
)
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
  m = _BAD_VALUE_RE.search(stderr)
  if m:
    return (
      f"XLA rejected flag --{m.group(2)}: cannot read the value {m.group(1)!r} "
      f"(XLA_FLAGS={xla_flags!r})"
    )
  lines = [l for l in stderr.strip().splitlines() if l.strip()]
  last = lines[-1] if lines else "no output"
  return f"worker exited with status {returncode}: {last}"


def worker_xla_flags(user_flags: str, experiment_flags: str) -> str:
  """The XLA_FLAGS of a worker: the user's words, then the experiment's.

  E.g. ("--xla_dump_to=/tmp/d", "--xla_cpu_enable_fast_math=false") ->
  "--xla_dump_to=/tmp/d --xla_cpu_enable_fast_math=false".
  """
  return " ".join(
    w for w in (user_flags.strip(), experiment_flags.strip()) if w
  )


def call_in_worker(
  function: str, kwargs: dict, xla_flags: str, timeout_s: float = 1800.0
):
  """Runs `function(**kwargs)` in a fresh process with extra XLA_FLAGS.

  Args:
    function: a name in `_FUNCTIONS` ("run_sweep").
    kwargs: picklable keyword arguments.
    xla_flags: the experiment's XLA_FLAGS words ("" for none); the worker
      gets the XLA_FLAGS of this process's environment, then these.
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
    flags = worker_xla_flags(os.environ.get("XLA_FLAGS", ""), xla_flags)
    env = dict(os.environ, XLA_FLAGS=flags)
    platforms = _jax_platforms()
    if platforms:  # the worker starts the same backends as this process
      env["JAX_PLATFORMS"] = platforms
    try:
      proc = subprocess.run(
        [sys.executable, "-m", "hloprobe.compile.worker", request, reply],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
      )
    except subprocess.TimeoutExpired as e:
      raise WorkerError(f"worker timed out after {timeout_s:.0f} s") from e
    if proc.returncode != 0 or not os.path.exists(reply):
      raise WorkerError(_explain_death(proc.returncode, proc.stderr, flags))
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
  from hloprobe.compile import toolchain

  with toolchain.quiet_startup():  # as the command line does
    import jax  # noqa: F401
  _serve(sys.argv[1], sys.argv[2])
