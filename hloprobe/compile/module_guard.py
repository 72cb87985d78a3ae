"""Module files are untrusted: what reaches jaxlib's parsers is checked
first, and what cannot be checked is parsed in a guarded child process.

jaxlib's parsers (XLA's HLO parser, MLIR's text and bytecode readers,
`jax.export.deserialize`) are native code: a file can crash them
(100,000 nested HLO tuples or 20,000 nested MLIR regions overflow their
recursive descent: SIGSEGV; a StableHLO bytecode whose producer string
is not UTF-8 throws through nanobind: SIGABRT) or spin in them (MLIR's
bytecode reader, on an attribute that refers to itself: a one-byte change
of a 936-byte `jax.export` artifact, tests/testdata/fuzz/
spin-sin.export), and a native loop ignores SIGINT and SIGTERM. So:

  text (HLO, MLIR, proto text)  `nesting_problem`: its bracket nesting,
                                strings and comments left out, is at most
                                `MAX_NESTING` deep, checked in numpy
                                before any parser sees it; MLIR text's
                                strings are UTF-8 (`strings_problem`)
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

The child process (`python -c`, its own session, kept between reads:
stdin the files' bytes, stdout their text) runs under `GUARD_TIMEOUT_S`
seconds of wall time and `GUARD_MAX_MB` MiB of resident memory, polled
from here, and each read under a CPU budget (`cpu_budget_s`: 1 s and 4 s
per MiB; RLIMIT_CPU, set in the child, whose SIGXCPU ends it inside native
code); a crash, an abort, a spin, a hang or a memory blow-up ends it, and
the caller gets one line naming what happened. This process waits in
Python, so SIGINT and SIGTERM are handled throughout, and the child is
killed on the way out.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

__all__ = [
  "GUARD_CPU_S",
  "GUARD_CPU_S_PER_MIB",
  "GUARD_MAX_MB",
  "GUARD_TIMEOUT_S",
  "MAX_NESTING",
  "GuardError",
  "bytecode_problem",
  "cpu_budget_s",
  "guarded_text",
  "nesting_problem",
  "strings_problem",
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
# Each read's CPU budget, in seconds: GUARD_CPU_S and GUARD_CPU_S_PER_MIB
# for each MiB of its input (`cpu_budget_s`). Measured here (jaxlib
# 0.12.0.1, one core): a 1-2 KB module reads in under 0.12 s, its first
# read included (the child's imports and XLA's library load are outside
# the budget, which starts after them; the budget is whole seconds, 1 to
# 2 s here), and a large one at 0.06-0.55 s per MiB (HLO text and protos
# about 0.1, a jax.export artifact or MLIR bytecode, which is compact,
# 0.4-0.55): 8x and 7x margins at least. MLIR's bytecode reader spins
# without end on an attribute that refers to itself (`AttrTypeReader::
# resolveEntry`'s deferred worklist, mlir/lib/Bytecode/Reader/
# BytecodeReader.cpp; seen in gdb, jaxlib 0.12.0.1): a one-byte change of
# a 936-byte jax.export artifact does it. CPU time, not wall time, so that
# a loaded machine does not refuse good files.
GUARD_CPU_S = 1.0
GUARD_CPU_S_PER_MIB = 4.0
# How often the child's memory is read, in seconds.
_POLL_S = 0.05
# Seconds past a read's limit after which the child ends itself (SIGALRM):
# the parent kills it at the limit, unless the parent is gone.
_ORPHAN_GRACE_S = 10
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


# An MLIR string literal, and the escapes MLIR's printer writes in one
# (mlir/lib/IR/AsmPrinter.cpp, `printEscapedString`: a byte that is not
# printable ASCII, `"` or `\\` as `\\XX`, two hex digits).
_MLIR_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_MLIR_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2}|.)")


def strings_problem(text: str) -> str | None:
  """Why MLIR text `text` is refused for its strings, or None: a string
  literal whose bytes, its escapes undone, are not UTF-8. jaxlib's MLIR
  bindings turn a string attribute into a Python str with nanobind, which
  raises (or, in some bindings, aborts: SIGABRT) on such bytes (`make
  fuzz` seed 0 mutations 3024 and 3951: jax.export artifacts whose module
  name became `"jit_\\E6"` and `"\\EFit_f"`). Linear in the text.
  """
  for m in _MLIR_STRING.finditer(text):
    body = m[1]
    if "\\" not in body:
      continue  # printable ASCII only
    raw = bytearray()
    pos = 0
    for e in _MLIR_ESCAPE.finditer(body):
      raw += body[pos : e.start()].encode("utf-8", "surrogatepass")
      code = e[1]
      raw += bytes([int(code, 16)]) if len(code) == 2 else code.encode()
      pos = e.end()
    raw += body[pos:].encode("utf-8", "surrogatepass")
    try:
      raw.decode("utf-8")
    except UnicodeDecodeError:
      line = text.count("\n", 0, m.start()) + 1
      return (
        f"a string at line {line} is not UTF-8 ({body[:40]!r}); jaxlib's "
        "MLIR bindings cannot read it"
      )
  return None


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


# The child: a loop that reads "KIND LENGTH\n" and LENGTH bytes on stdin
# and writes one JSON line, {"text": ...} or {"error": ...}, on stdout,
# until stdin ends. Imports only what the kind needs.
_CHILD = r"""
import json, math, resource, signal, sys
inp = sys.stdin.buffer
# A read past its CPU budget ends by SIGXCPU (RLIMIT_CPU): no core file.
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
_, cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)


WARM_UP = "HloModule m\nENTRY e {\n  ROOT c = f32[] constant(0)\n}\n"
readers = {}


def reader(kind):
  # The kind's reader, its imports and one-time set-up done here, once,
  # outside any read's CPU budget.
  if kind == "jax_export":
    import jax.export
    return lambda data: jax.export.deserialize(bytearray(data)).mlir_module()
  if kind in ("hlo_text", "hlo_proto"):
    from hloprobe import private_api
    private_api.hlo_text_to_proto(WARM_UP)  # loads XLA's client library
  if kind == "hlo_text":

    def parse(data):
      private_api.hlo_text_to_proto(data.decode())
      return ""

    return parse
  if kind == "hlo_to_stablehlo":
    import jax.extend.mlir
    from hloprobe.ir import read_stablehlo_module
    return lambda data: read_stablehlo_module(
      jax.extend.mlir.hlo_to_stablehlo(data)
    ).text
  if kind == "hlo_proto":

    def read(data):
      text = private_api.hlo_proto_to_text(data)
      if text is None:
        raise ValueError("this jaxlib cannot read HloModuleProto files")
      return text

    return read
  from hloprobe.ir import read_stablehlo_module
  return lambda data: read_stablehlo_module(data).text


def cpu_s():
  use = resource.getrusage(resource.RUSAGE_SELF)
  return use.ru_utime + use.ru_stime


while True:
  head = inp.readline()
  if not head:
    break
  kind, size, limit_s, budget_s = head.decode().split()
  # SIGALRM's default action ends this process even inside native code: a
  # read past its limit ends here too when the parent that would kill it
  # is gone (an orphan spun for 30 minutes at 40% CPU after `make fuzz`
  # was stopped).
  signal.alarm(int(limit_s))
  data = inp.read(int(size))
  try:
    read = readers.get(kind) or readers.setdefault(kind, reader(kind))
    # SIGXCPU's default action ends this process inside native code too,
    # once the read took its CPU budget (a parser that spins).
    soft = math.ceil(cpu_s()) + int(budget_s)
    if cpu_hard != resource.RLIM_INFINITY:
      soft = min(soft, cpu_hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, cpu_hard))
    try:
      out = {"text": read(data)}
    finally:
      resource.setrlimit(resource.RLIMIT_CPU, (cpu_hard, cpu_hard))
  except Exception as e:
    lines = str(e).strip().splitlines() or [type(e).__name__]
    out = {"error": " ".join(lines[0].split())}
  signal.alarm(0)
  sys.stdout.write(json.dumps(out) + "\n")
  sys.stdout.flush()
"""


class _Child:
  """The guarded child process, kept between reads (starting one imports
  jax: about 0.5 s, 2 s with jax.export) and started again only after it
  died or was stopped. Its stderr goes to a file (XLA and MLIR print
  diagnostics there), read back when it dies."""

  def __init__(self):
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    path = os.environ.get("PYTHONPATH")
    env = {
      **os.environ,
      "PYTHONPATH": os.pathsep.join(
        [package_parent, *([path] if path else [])]
      ),
      "JAX_PLATFORMS": "cpu",
    }
    self._err = tempfile.TemporaryFile()
    self.proc = subprocess.Popen(
      [sys.executable, "-c", _CHILD],
      env=env,
      stdin=subprocess.PIPE,
      stdout=subprocess.PIPE,
      stderr=self._err,
      start_new_session=True,  # a terminal's SIGINT is ours to pass on
    )

  def ask(
    self, kind: str, data: bytes, timeout_s: float, max_mb: int, cpu_s: int
  ):
    """The child's JSON reply to one read; GuardError (`died`) when it
    crashed or ran past the limits (it is then killed)."""
    err_at = self._err.seek(0, 2)
    proc = self.proc

    def write() -> None:
      with contextlib.suppress(OSError, ValueError):
        # The child's own limit, past ours: it ends an orphaned read.
        limit = math.ceil(timeout_s) + _ORPHAN_GRACE_S
        proc.stdin.write(f"{kind} {len(data)} {limit} {cpu_s}\n".encode())
        proc.stdin.write(data)
        proc.stdin.flush()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout_s
    reply = bytearray()
    while b"\n" not in reply:
      ready, _, _ = select.select([fd], [], [], _POLL_S)
      if ready:
        chunk = os.read(fd, 1 << 20)
        if not chunk:  # it died
          proc.wait()
          self._err.seek(err_at)
          err = self._err.read()
          self.kill()
          raise GuardError(_death(proc.returncode, err, cpu_s), True)
        reply += chunk
        continue
      if time.monotonic() > deadline:
        self.kill()
        raise GuardError(f"its reader ran past {timeout_s:g} s; stopped", True)
      rss = _resident_mb(proc.pid)
      if rss > max_mb:
        self.kill()
        raise GuardError(
          f"its reader took over {max_mb} MiB of memory ({rss} MiB); stopped",
          True,
        )
    writer.join()
    try:
      return json.loads(bytes(reply))
    except ValueError:
      self.kill()
      raise GuardError("its reader wrote no answer", True) from None

  def kill(self) -> None:
    """Ends the child (if it still runs) and closes its pipes."""
    if self.proc.poll() is None:
      self.proc.kill()
    self.proc.wait()
    for stream in (self.proc.stdin, self.proc.stdout):
      with contextlib.suppress(OSError, ValueError):
        stream.close()
    self._err.close()


_child: _Child | None = None
_child_lock = threading.Lock()


@atexit.register
def _end_child() -> None:
  """Ends the kept child with this process."""
  global _child
  if _child is not None:
    _child.kill()
    _child = None


def cpu_budget_s(size: int) -> int:
  """The CPU seconds a read of `size` bytes may take in the child:
  GUARD_CPU_S + GUARD_CPU_S_PER_MIB per MiB, in whole seconds (RLIMIT_CPU
  counts them; the child adds up to one, rounding its own use up)."""
  return max(1, int(GUARD_CPU_S + GUARD_CPU_S_PER_MIB * size / (1 << 20)))


def guarded_text(
  data: bytes,
  kind: str,
  *,
  timeout_s: float = GUARD_TIMEOUT_S,
  max_mb: int = GUARD_MAX_MB,
  cpu_s: int | None = None,
) -> str:
  """The MLIR text of a `jax.export` artifact or an MLIR bytecode, or the
  HLO text of a serialized HloModuleProto, read in a child process under
  a time and memory limit.

  The child is kept for the next read (this process's reads take turns);
  one that crashed or ran past a limit is killed, and the next read
  starts a fresh one.

  Args:
    data: the file's bytes (for "hlo_proto", the module proto's).
    kind: "jax_export", "stablehlo_bytecode" or "hlo_proto"; or
      "hlo_text": HLO text parsed by XLA's parser in the child, "" back
      (a CHECK in XLA's parser, e.g. `parameter(4294967296)`, aborts);
      or "hlo_to_stablehlo": an HloModuleProto translated to StableHLO
      (`jax.extend.mlir.hlo_to_stablehlo`, which aborts on some modules),
      its MLIR text back.
    timeout_s: wall seconds the child may take (its start included).
    max_mb: resident MiB the child may reach.
    cpu_s: CPU seconds the read itself may take in the child (its
      imports not counted; RLIMIT_CPU, SIGXCPU past it); default
      `cpu_budget_s(len(data))`.

  Returns:
    The module's text, as the child printed it.

  Raises:
    GuardError: the child's reader refused the bytes (its first line), or
      the child crashed, aborted (the signal named, with the C++
      exception's what() line where it printed one), ran past `timeout_s`,
      `cpu_s` or `max_mb` (one line each).
    KeyboardInterrupt: SIGINT (the child is killed first).
  """
  global _child
  problem = bytecode_problem(data) if kind == "stablehlo_bytecode" else None
  if problem:
    raise GuardError(problem)
  with _child_lock:
    if _child is None:
      _child = _Child()
    try:
      budget = cpu_budget_s(len(data)) if cpu_s is None else cpu_s
      reply = _child.ask(kind, data, timeout_s, max_mb, budget)
    except BaseException:
      _child.kill()
      _child = None
      raise
  if "error" in reply:
    raise GuardError(str(reply["error"]))
  return str(reply["text"])


def _resident_mb(pid: int) -> int:
  """A process's resident memory in MiB (/proc/PID/statm), 0 if unknown."""
  try:
    with open(f"/proc/{pid}/statm", "rb") as f:
      pages = int(f.read().split()[1])
  except (OSError, ValueError, IndexError):
    return 0
  return pages * os.sysconf("SC_PAGE_SIZE") >> 20


def _death(code: int, err: bytes = b"", cpu_s: int | None = None) -> str:
  """How the child ended, in words, with the cause its stderr names (a C++
  exception's `what():` line, as std::terminate prints it); SIGXCPU is its
  read's CPU budget, `cpu_s` seconds, spent."""
  if code == -signal.SIGXCPU:
    return (
      f"its reader ran past its {cpu_s} s of CPU time (jaxlib's native code "
      "spun on it); stopped"
    )
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
