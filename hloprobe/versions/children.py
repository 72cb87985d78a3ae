"""The child processes (pip, venv workers) of versions run side by side.

`hloprobe versions --jobs=N` runs up to N versions at once, each in a
thread that waits on its own child processes. A signal reaches only the
main thread, so `Children.stop` ends every child the threads started and
lets no new one start; the threads then finish at once with an error.

Private in intent: use the package, `hloprobe.versions`.
"""

from __future__ import annotations

import signal
import subprocess
import threading

__all__ = ["Children"]


class Children:
  """Runs child processes, any number of threads at once; `stop` ends all."""

  def __init__(self):
    self._lock = threading.Lock()
    self._running: set[subprocess.Popen] = set()
    self._stopped = False

  def run(
    self, argv: list[str], timeout: float, **popen_kwargs
  ) -> subprocess.CompletedProcess:
    """As `subprocess.run(argv, capture_output=True, text=True,
    timeout=timeout)`; after `stop`, a child killed by SIGKILL (returncode
    -9, stderr "interrupted") without starting one.

    Args:
      argv: the command.
      timeout: wall-clock limit, in seconds.
      popen_kwargs: more `subprocess.Popen` arguments (env, cwd).

    Raises:
      subprocess.TimeoutExpired: the child ran past `timeout` (it is
        killed first).
    """
    with self._lock:
      if self._stopped:
        return subprocess.CompletedProcess(
          argv, -signal.SIGKILL, "", "interrupted"
        )
      proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen_kwargs,
      )
      self._running.add(proc)
    try:
      out, err = proc.communicate(timeout=timeout)
    except BaseException:  # a timeout, or an interrupt of this thread
      proc.kill()
      proc.wait()
      # Not drained (a grandchild may still hold the pipes): closed.
      for pipe in (proc.stdout, proc.stderr):
        pipe.close()
      raise
    finally:
      with self._lock:
        self._running.discard(proc)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)

  def stop(self) -> None:
    """Kills every running child; later `run` calls start none."""
    with self._lock:
      self._stopped = True
      for proc in self._running:
        proc.kill()
