"""Module files are untrusted: what reaches jaxlib's parsers is checked
first, and what cannot be checked is parsed in a guarded child process.

jaxlib's parsers (XLA's HLO parser, MLIR's text and bytecode readers,
`jax.export.deserialize`) are native code: a file can crash them
(100,000 nested HLO tuples or 20,000 nested MLIR regions overflow their
recursive descent: SIGSEGV; a StableHLO bytecode whose producer string
is not UTF-8 throws through nanobind: SIGABRT) or spin in them (a
914-byte `jax.export` artifact), and a native loop ignores SIGINT and
SIGTERM. So:

  text (HLO, MLIR, proto text)  `nesting_problem`: its bracket nesting,
                                strings and comments left out, is at most
                                `MAX_NESTING` deep, checked in numpy
                                before any parser sees it
  MLIR bytecode                 `bytecode_problem`: its header (magic,
                                version, producer string: UTF-8) checked
                                here; then read in a child process
                                (`guarded_text`), whose MLIR text is
                                checked as text
  jax.export artifact           read in a child process only
                                (`guarded_text`): a flatbuffer is only
                                known to be one by reading it
  HloModuleProto (binary, in    printed as HLO text in a child process
  an HloSnapshot, or from       (`guarded_text`, "hlo_proto"); that text
  proto text)                   is checked as text and parsed here

Mutated bytecode whose header is fine still aborts jaxlib 0.12.0.1 in
process (a string attribute that is not UTF-8: "nanobind::str():
conversion error!", SIGABRT; `make fuzz` seed 0, mutations 66 and 120),
so bytecode is only ever read in the child.

The child process (`python -c`, its own session, stdin the file's bytes,
stdout its text) runs under `GUARD_TIMEOUT_S` seconds of wall time and
`GUARD_MAX_MB` MiB of resident memory, polled from here; a crash, an
abort, a hang or a memory blow-up ends it, and the caller gets one line
naming what happened. This process waits in Python, so SIGINT and
SIGTERM are handled throughout, and the child is killed on the way out.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np

__all__ = [
  "GUARD_MAX_MB",
  "GUARD_TIMEOUT_S",
  "MAX_NESTING",
  "GuardError",
  "bytecode_problem",
  "guarded_text",
  "nesting_problem",
]

# The deepest bracket nesting a module text may have. XLA's HLO parser
# and MLIR's parser recurse once per level (xla/hlo/parser/hlo_parser.cc,
# `HloParserImpl::ParseShape` for tuple shapes; mlir/lib/AsmParser/
# Parser.cpp, `OperationParser::parseRegion`), on a native stack; the
# deepest real module seen (a 12-layer model's while loops, nested
# tuples of its state) is under 40 levels.
MAX_NESTING = 256
# The guarded child's limits: wall seconds and resident MiB.
GUARD_TIMEOUT_S = 60.0
GUARD_MAX_MB = 4096
# How often the child's memory is read, in seconds.
_POLL_S = 0.05
_MLIR_MAGIC = b"ML\xefR"

# Strings and comments, which may hold any bracket, and MLIR's `->`.
_SKIPPED = re.compile(rb'"(?:[^"\\\n]|\\.)*"|//[^\n]*|->')
_OPEN = {"text": b"([{", "mlir": b"([{<"}
_CLOSE = {"text": b")]}", "mlir": b")]}>"}


class GuardError(Exception):
  """The guarded child could not read the file: it crashed, aborted, ran
  past its time or memory (`died` True), or its reader refused the bytes
  (`died` False); the message says which, in one line."""

  def __init__(self, message: str, died: bool = False):
    super().__init__(message)
    self.died = died


def nesting_problem(data: bytes, mlir: bool) -> str | None:
  """Why `data` (a module's text) nests too deep for jaxlib's parsers, or
  None where it does not.

  The depth is the running count of opening less closing brackets (never
  below 0), outside strings and `//` comments: `( [ {` for HLO text and
  protobuf text, and `<` too for MLIR (`tuple<tuple<...>>`, its `->`
  left out). Linear time, in numpy.

  Args:
    data: the text's bytes (UTF-8).
    mlir: MLIR text (`<` and `>` count).
  """
  flat = _SKIPPED.sub(b" ", data)
  kind = "mlir" if mlir else "text"
  step = np.zeros(256, np.int32)
  step[list(_OPEN[kind])] = 1
  step[list(_CLOSE[kind])] = -1
  deltas = step[np.frombuffer(flat, np.uint8)]
  if not deltas.size:
    return None
  running = np.cumsum(deltas, dtype=np.int64)
  floor = np.minimum(np.minimum.accumulate(running), 0)
  depth = int((running - floor).max())
  if depth <= MAX_NESTING:
    return None
  return (
    f"it nests {depth} brackets deep (at most {MAX_NESTING}); XLA's and "
    "MLIR's parsers would overflow their stack on it"
  )


def _varint(data: bytes, pos: int) -> tuple[int, int] | None:
  """MLIR bytecode's prefix varint at `pos` (mlir/lib/Bytecode/Reader/
  BytecodeReader.cpp, `EncodingReader::parseVarInt`): (value, next pos),
  or None where it runs past the end."""
  if pos >= len(data):
    return None
  first = data[pos]
  if first & 1:
    return first >> 1, pos + 1
  if first == 0:
    if pos + 9 > len(data):
      return None
    return int.from_bytes(data[pos + 1 : pos + 9], "little"), pos + 9
  count = (first & -first).bit_length()  # trailing zeros + 1 bytes
  if pos + count > len(data):
    return None
  value = int.from_bytes(data[pos : pos + count], "little")
  return value >> count, pos + count


def bytecode_problem(data: bytes) -> str | None:
  """Why MLIR bytecode `data` is refused before any reader sees it, or None.

  The header is read as MLIR's reader reads it (mlir/lib/Bytecode/Reader/
  BytecodeReader.cpp, `BytecodeReader::Impl::read`: the magic "ML\\xefR",
  a varint version, then the producer string up to its NUL): a producer
  that is not UTF-8 makes jaxlib's nanobind binding throw while
  converting it (SIGABRT, jaxlib 0.12.0.1), so it is refused here.
  """
  if not data.startswith(_MLIR_MAGIC):
    return "no MLIR bytecode magic"
  version = _varint(data, len(_MLIR_MAGIC))
  if version is None:
    return "MLIR bytecode cut off in its version"
  end = data.find(b"\0", version[1])
  if end < 0:
    return "MLIR bytecode cut off in its producer string"
  try:
    data[version[1] : end].decode("utf-8")
  except UnicodeDecodeError as e:
    return (
      f"MLIR bytecode whose producer string is not UTF-8 (byte "
      f"0x{data[version[1] + e.start]:02x} at offset {version[1] + e.start})"
    )
  return None


# The child: reads the file's bytes on stdin, writes {"text": ...} or
# {"error": ...} as JSON on stdout. Imports only what the kind needs.
_CHILD = r"""
import json, sys
data = sys.stdin.buffer.read()
kind = sys.argv[1]
try:
  if kind == "jax_export":
    import jax.export
    text = jax.export.deserialize(bytearray(data)).mlir_module()
  elif kind == "hlo_proto":
    from hloprobe import private_api
    text = private_api.hlo_proto_to_text(data)
    if text is None:
      raise ValueError("this jaxlib cannot read HloModuleProto files")
  else:
    from hloprobe.ir import read_stablehlo_module
    text = read_stablehlo_module(data).text
  out = {"text": text}
except Exception as e:
  lines = str(e).strip().splitlines() or [type(e).__name__]
  out = {"error": " ".join(lines[0].split())}
sys.stdout.write(json.dumps(out))
"""


def guarded_text(
  data: bytes,
  kind: str,
  *,
  timeout_s: float = GUARD_TIMEOUT_S,
  max_mb: int = GUARD_MAX_MB,
) -> str:
  """The MLIR text of a `jax.export` artifact or an MLIR bytecode, or the
  HLO text of a serialized HloModuleProto, read in a child process under
  a time and memory limit.

  Args:
    data: the file's bytes (for "hlo_proto", the module proto's).
    kind: "jax_export", "stablehlo_bytecode" or "hlo_proto".
    timeout_s: wall seconds the child may take.
    max_mb: resident MiB the child may reach.

  Returns:
    The module's MLIR text (with locations), as the child printed it.

  Raises:
    GuardError: the child's reader refused the bytes (its first line), or
      the child crashed, aborted (the signal named), ran past `timeout_s`
      or `max_mb` (one line each).
    KeyboardInterrupt: SIGINT (the child is killed first).
  """
  problem = bytecode_problem(data) if kind == "stablehlo_bytecode" else None
  if problem:
    raise GuardError(problem)
  package_parent = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
  path = os.environ.get("PYTHONPATH")
  env = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([package_parent, *([path] if path else [])]),
    "JAX_PLATFORMS": "cpu",
  }
  proc = subprocess.Popen(
    [sys.executable, "-c", _CHILD, kind],
    env=env,
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    start_new_session=True,  # a terminal's SIGINT is ours to pass on
  )
  try:
    out, err = _communicate(proc, data, timeout_s, max_mb)
  finally:
    if proc.poll() is None:
      proc.kill()
    proc.wait()
  if proc.returncode != 0:
    raise GuardError(_death(proc.returncode, err), True)
  try:
    reply = json.loads(out)
  except ValueError:
    raise GuardError("its reader wrote no answer", True) from None
  if "error" in reply:
    raise GuardError(str(reply["error"]))
  return str(reply["text"])


def _communicate(
  proc, data: bytes, timeout_s: float, max_mb: int
) -> tuple[bytes, bytes]:
  """The child's stdout and stderr, once it ends; GuardError past the
  limits."""
  deadline = time.monotonic() + timeout_s
  given = data
  while True:
    try:
      out, err = proc.communicate(given, timeout=_POLL_S)
      return out or b"", err or b""
    except subprocess.TimeoutExpired:
      given = None  # communicate keeps what it has sent and read
    if time.monotonic() > deadline:
      raise GuardError(f"its reader ran past {timeout_s:g} s; stopped", True)
    rss = _resident_mb(proc.pid)
    if rss > max_mb:
      raise GuardError(
        f"its reader took over {max_mb} MiB of memory ({rss} MiB); stopped",
        True,
      )


def _resident_mb(pid: int) -> int:
  """A process's resident memory in MiB (/proc/PID/statm), 0 if unknown."""
  try:
    with open(f"/proc/{pid}/statm", "rb") as f:
      pages = int(f.read().split()[1])
  except (OSError, ValueError, IndexError):
    return 0
  return pages * os.sysconf("SC_PAGE_SIZE") >> 20


def _death(code: int, err: bytes = b"") -> str:
  """How the child ended, in words, with the cause its stderr names (a C++
  exception's `what():` line, as std::terminate prints it)."""
  why = ""
  for line in err.decode("utf-8", "replace").splitlines():
    if line.strip().startswith("what():"):
      why = ": " + " ".join(line.strip().removeprefix("what():").split())[:200]
  if code < 0:
    try:
      name = signal.Signals(-code).name
    except ValueError:
      name = f"signal {-code}"
    return f"its reader died of {name} (jaxlib's native code){why}"
  return f"its reader exited with status {code}{why}"
