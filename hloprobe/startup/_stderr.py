"""What XLA and the CUDA plugin write to the process's stderr, and the
command line's filter of the plugin's start-up lines.

The CUDA plugin logs "Could not find cuda drivers" from each of its
libraries at import and backend start-up (jaxlib 0.10.2 with
jax-cuda12-plugin 0.10.2; 0.12.0.1 prints none), before absl logging is
initialised, so TF_CPP_MIN_LOG_LEVEL does not hide them.
`captured_stderr` redirects file descriptor 2 for a block and returns what
was written; `filter_startup_noise` drops the known start-up lines;
`quiet_startup` runs a block (the command line's first `import jax`)
without them. `EscapingStream` is what the command line prints through:
control characters (ANSI escapes in a case name) are written escaped.

It imports neither JAX nor any stage (see the package's docstring).
Private in intent: use the package, `hloprobe.startup`.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import tempfile
from collections.abc import Iterator

__all__ = [
  "EscapingStream",
  "STARTUP_NOISE",
  "captured_stderr",
  "filter_startup_noise",
  "printable",
  "quiet_startup",
]


@contextlib.contextmanager
def captured_stderr() -> Iterator[list[str]]:
  """Redirects file descriptor 2 for a block: what native code writes there
  (and Python's sys.stderr, when that is fd 2 as in the command line).

  Yields a list that holds, once the block ends, the captured text as one
  string. The original descriptor is restored in `finally`. Where the
  process has no descriptor 2 (the shell closed it: `2>&-`), nothing is
  redirected and the text is "".
  """
  out: list[str] = []
  if sys.stderr is not None:
    sys.stderr.flush()
  try:
    saved = os.dup(2)
  except OSError:  # no stderr to capture
    yield out
    out.append("")
    return
  # A named file: if native code kills the process inside the block, a
  # worker's parent reads what it wrote (see `worker`).
  with tempfile.NamedTemporaryFile(prefix="hloprobe-stderr-") as tmp:
    os.dup2(tmp.fileno(), 2)
    try:
      yield out
    finally:
      if sys.stderr is not None:
        sys.stderr.flush()
      os.dup2(saved, 2)
      os.close(saved)
      tmp.seek(0)
      out.append(tmp.read().decode("utf-8", errors="replace"))


# Lines the CUDA plugin writes at import and start-up on a machine without a
# CUDA driver (jaxlib 0.10.2, jax-cuda12-plugin 0.10.2), and the line Model
# Explorer's MLIR adapter (ai_edge_model_explorer_adapter 0.2.1, its
# TensorFlow `port.cc`) writes at its first conversion, after absl's.
STARTUP_NOISE = (
  re.compile(
    r"^WARNING: All log messages before absl::InitializeLog\(\) is called"
  ),
  re.compile(r"^[IW]\d{4} [\d:. ]+\s+\d+ cudart_stub\.cc:\d+\] "),
  re.compile(r"^I\d{4} [\d:. ]+\s+\d+ port\.cc:\d+\] oneDNN custom operations"),
)


def filter_startup_noise(text: str) -> str:
  """`text` without the lines matching `STARTUP_NOISE`."""
  return "".join(
    line
    for line in text.splitlines(keepends=True)
    if not any(p.search(line) for p in STARTUP_NOISE)
  )


@contextlib.contextmanager
def quiet_startup() -> Iterator[None]:
  """Runs a block with the plugin's start-up lines removed from stderr.

  Everything else written to stderr in the block is written back after it.
  """
  log: list[str] = []
  try:
    with captured_stderr() as log:
      yield
  finally:
    rest = filter_startup_noise(log[0] if log else "")
    if rest:
      sys.stderr.write(rest)
      sys.stderr.flush()


# C0 controls but newline, tab and carriage return; DEL; C1 controls.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
  """`text` with each control character but newline, tab and carriage
  return written as Python writes it escaped (ESC as `\\x1b`), so a name
  holding an ANSI escape cannot move the cursor or recolour a terminal."""
  return _CONTROL_RE.sub(lambda m: repr(m.group())[1:-1], text)


class EscapingStream:
  """A text stream that writes through `printable` to another one.

  Where its reader has gone (`hloprobe sweep | head`), a write or flush
  ends the process as SIGPIPE's default action would (`_end_as_sigpipe`),
  quietly, with the status a shell reads as 141. The command line leaves
  SIGPIPE ignored, as Python sets it, for the other pipes it writes: a
  worker's stdin whose process has ended raises BrokenPipeError there,
  which the pool handles (`runtime.process.Worker.call_pickled`: a fork
  that could not take its environment is started again as `python -c`).
  With SIGPIPE at its default for the whole process, that write killed
  the command silently (exit 141, nothing printed: the README's pin
  search on tm_mm at a100, whose pin-file worker asks for another
  TF_CPP_MIN_LOG_LEVEL than the fork server's; found following the
  README on a clean clone, 2026-12-08).

  Args:
    stream: the stream written to (sys.stdout, sys.stderr); every other
      attribute is read from it.
  """

  def __init__(self, stream):
    self._stream = stream

  def write(self, text: str) -> int:
    try:
      self._stream.write(printable(text))
    except BrokenPipeError:
      _end_as_sigpipe()
    return len(text)

  def flush(self) -> None:
    try:
      self._stream.flush()
    except BrokenPipeError:
      _end_as_sigpipe()

  def __getattr__(self, name: str):
    return getattr(self._stream, name)


def _end_as_sigpipe() -> None:
  """Ends this process by SIGPIPE at its default action: at once, no
  `finally` block run, the status 128 + 13 (what a write to a pipe
  without a reader does where SIGPIPE is not ignored)."""
  signal.signal(signal.SIGPIPE, signal.SIG_DFL)
  signal.raise_signal(signal.SIGPIPE)
