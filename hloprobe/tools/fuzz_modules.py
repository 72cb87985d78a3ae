"""A seeded fuzz of the module-file readers: `make fuzz` (100,000
mutations, about 100 a second on 2 cores; `make test` runs the first
2,000 of seed 0 and checks its seeds and replay,
tests/tools/fuzz_modules_test.py).

Seeds: one small program (two dots, a reduction, a tuple result) lowered
here and written as every kind of module file hloprobe reads
(`compile.MODULE_KINDS`): HLO text, a binary HloModuleProto, an
HloSnapshot with its arguments, the HloModuleProto in protobuf text
format, StableHLO text, MLIR bytecode, a StableHLO portable artifact and a
`jax.export` artifact (lowered, never compiled). Mutation `i` of run seed
`s` is a pure function of (s, i) (`mutate`): 1 to 4 edits drawn from
`random.Random` (bit flips, interesting bytes, inserted, deleted,
repeated and spliced spans, numbers made huge or negative, brackets and
bad UTF-8 inserted in text, a truncation), so a finding is replayed from
its index alone (`--replay=I`).

Each mutation is written to a file and given to `READER` (the module-file
entry point `explain --case=FILE`, `merge` and `golden` go through; one
line to change when a guarded reader replaces it). Its outcome:

  read      the reader returned a module
  refused   it raised `HloprobeError` (ModuleFileError) of one line
  finding   anything else: another exception (a traceback for a user), a
            message of several lines, the reader's process killed by a
            signal (segfault, abort), or over `--timeout_s` seconds (a
            hang; the process is then killed)

Mutations run in batches in worker processes (`--jobs`), in process
against the reader: a worker that dies or hangs costs its mutation only,
the next worker going on from the one after. Findings are printed one a
line (index, kind, what), and their inputs kept in `--keep_dir`; the
exit status is 1 when there is one.

    python -m hloprobe.tools.fuzz_modules --count=100000 --jobs=2
    python -m hloprobe.tools.fuzz_modules --replay=1234
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time

__all__ = [
  "Finding",
  "READER",
  "Outcome",
  "fuzz",
  "mutate",
  "read_outcome",
  "seed_files",
]

# The reader under test, "module:function": given a path, it returns a
# module or raises `HloprobeError` of one line.
READER = "hloprobe.compile.module_files:read_module_file"

# This module's name, also when it runs as __main__.
_MODULE = "hloprobe.tools.fuzz_modules"
# Seconds one mutation may take in the reader before it counts as a hang.
DEFAULT_TIMEOUT_S = 20.0
# Mutations one worker is given at a time.
_BATCH = 200
# Seconds a worker may take to start (import jax, lower the seeds).
_START_S = 180.0


def _reader():
  module, name = READER.split(":")
  import importlib

  return getattr(importlib.import_module(module), name)


# The seed program (see `seed_files`), and the file name its locations name.
_SEED_PROGRAM = """
def f(x, w, v):
  h = jnp.tanh(x @ w)
  return h @ v, jnp.sum(x * x, axis=1)

def lower(args):
  return jax.jit(f).lower(*args)

def export(args):
  return jax.export.export(jax.jit(f))(*args)
"""
_SEED_FILE = "fuzz_seed.py"


def seed_files() -> dict[str, bytes]:
  """name -> bytes of each seed module file (see the module docstring);
  lowering only, no XLA compile. Names end with the file's extension."""
  import jax
  import jax.export
  import jax.numpy as jnp

  # The program's source (its lowering and export calls too) is compiled
  # under a fixed file name, and only the innermost frame is a location:
  # the seeds (MLIR bytecode and jax.export artifacts carry locations) do
  # not depend on the checkout's path nor on who calls this (`fuzz`,
  # `--replay`), so neither do mutations.
  scope = {"jax": jax, "jnp": jnp}
  exec(compile(_SEED_PROGRAM, _SEED_FILE, "exec"), scope)
  full_tracebacks = jax.config.jax_include_full_tracebacks_in_locations
  jax.config.update("jax_include_full_tracebacks_in_locations", False)
  try:
    return _seed_files(scope["lower"], scope["export"])
  finally:
    jax.config.update(
      "jax_include_full_tracebacks_in_locations", full_tracebacks
    )


def _seed_files(lower, export) -> dict[str, bytes]:
  """`seed_files`, given the seed program's lowering and export."""
  import jax.extend.mlir
  import numpy as np
  from google.protobuf import message_factory, text_format
  from jaxlib.mlir.dialects import stablehlo

  from hloprobe import private_api
  from hloprobe.ir import proto_wire
  from hloprobe.ir.xla_proto import snapshot_bytes

  rng = np.random.default_rng(41)
  args = tuple(
    rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (3, 5), (5, 2))
  )
  lowered = lower(args)
  mlir_text = lowered.as_text()
  hlo_text = lowered.as_text(dialect="hlo")
  buf = io.BytesIO()
  lowered.compiler_ir("stablehlo").operation.write_bytecode(buf)
  pool = proto_wire.xla_schema(private_api.jaxlib_embedded)
  module_class = message_factory.GetMessageClass(
    pool.FindMessageTypeByName("xla.HloModuleProto")
  )
  # The module's id counts the modules this process made: fixed here.
  message = module_class.FromString(private_api.hlo_text_to_proto(hlo_text))
  message.id = 1
  proto = message.SerializeToString(deterministic=True)
  return {
    "module.hlo.txt": hlo_text.encode(),
    "module.hlo.pb": proto,
    "module.snapshot.pb": snapshot_bytes(proto, args),
    "module.pbtxt": text_format.MessageToString(
      module_class.FromString(proto)
    ).encode(),
    "module.mlir": mlir_text.encode(),
    "module.mlirbc": buf.getvalue(),
    "module.vhlo": stablehlo.serialize_portable_artifact_str(
      mlir_text, stablehlo.get_minimum_version()
    ),
    "module.export": bytes(export(args).serialize()),
    "module.hlo_from_stablehlo.mlirbc": jax.extend.mlir.hlo_to_stablehlo(proto),
  }


_INTERESTING = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x0A, 0x22, 0x28, 0x7B)
_NUMBERS = (b"0", b"-1", b"4294967296", b"99999999999999999999", b"-2147483649")
_TEXT_BITS = (
  b"(" * 64,
  b"{" * 64,
  b"tuple(" * 32,
  b"\xff\xfe",
  b"\xc3\x28",
  b"\xed\xa0\x80",
  b"\n}\n",
  b'"',
  b"%",
  b"!",
)


def mutate(seeds: list[tuple[str, bytes]], run_seed: int, i: int):
  """Mutation `i` of run `run_seed`: (the seed's name, the mutated bytes).
  Seeds are taken in turn; edits are drawn from Random((run_seed, i))."""
  name, data = seeds[i % len(seeds)]
  rng = random.Random(f"{run_seed}:{i}")
  out = bytearray(data)
  for _ in range(rng.randint(1, 4)):
    _edit(rng, out, seeds)
  return name, bytes(out)


def _span(rng: random.Random, out: bytearray) -> tuple[int, int]:
  a = rng.randrange(len(out) + 1)
  return a, min(len(out), a + rng.choice((1, 2, 4, 8, 32, 256)))


def _edit(rng: random.Random, out: bytearray, seeds) -> None:
  """One edit of `out`, in place."""
  op = rng.randrange(10)
  if not out:
    out.extend(rng.randbytes(rng.randint(1, 16)))
    return
  pos = rng.randrange(len(out))
  if op == 0:  # a bit flipped
    out[pos] ^= 1 << rng.randrange(8)
  elif op == 1:  # an interesting byte
    out[pos] = rng.choice(_INTERESTING)
  elif op == 2:  # random bytes inserted
    out[pos:pos] = rng.randbytes(rng.randint(1, 16))
  elif op == 3:  # a span deleted
    a, b = _span(rng, out)
    del out[a:b]
  elif op == 4:  # a span repeated
    a, b = _span(rng, out)
    out[b:b] = out[a:b] * rng.choice((2, 16, 256))
  elif op == 5:  # a span of another seed spliced in
    other = rng.choice(seeds)[1]
    a = rng.randrange(len(other) + 1)
    out[pos:pos] = other[a : a + rng.randint(1, 512)]
  elif op == 6:  # a digit run made another number
    digits = [j for j in range(len(out)) if 0x30 <= out[j] <= 0x39]
    if digits:
      j = rng.choice(digits)
      k = j
      while k < len(out) and 0x30 <= out[k] <= 0x39:
        k += 1
      out[j:k] = rng.choice(_NUMBERS)
  elif op == 7:  # text that nests or does not decode
    out[pos:pos] = rng.choice(_TEXT_BITS)
  elif op == 8:  # truncated
    del out[rng.randrange(len(out)) :]
  else:  # a random byte
    out[pos] = rng.randrange(256)


@dataclasses.dataclass(frozen=True)
class Outcome:
  """What the reader made of one input.

  Attributes:
    kind: "read", "refused" or "finding".
    what: the message (refused) or the finding's description.
  """

  kind: str
  what: str = ""


def read_outcome(path: str, reader=None) -> Outcome:
  """`reader(path)` (default `READER`) classified, in this process."""
  from hloprobe.errors import HloprobeError

  reader = reader or _reader()
  try:
    reader(path)
  except HloprobeError as e:
    message = str(e)
    if "\n" in message.strip():
      return Outcome("finding", f"a message of several lines: {message!r}")
    return Outcome("refused", message)
  except Exception as e:  # noqa: BLE001 (what the fuzz looks for)
    return Outcome(
      "finding", f"{type(e).__name__}: {str(e).strip()[:300]!r} (a traceback)"
    )
  return Outcome("read")


@dataclasses.dataclass(frozen=True)
class Finding:
  """A mutation the reader failed on.

  Attributes:
    index: the mutation's index (`mutate`, `--replay`).
    seed: the seed file it was made from.
    what: what went wrong.
    path: where its input was kept, or "".
  """

  index: int
  seed: str
  what: str
  path: str = ""


def _read_seeds(folder: str) -> list[tuple[str, bytes]]:
  """The seeds `_write_seeds` wrote, sorted by name."""
  seeds = []
  for name in sorted(os.listdir(folder)):
    with open(os.path.join(folder, name), "rb") as f:
      seeds.append((name, f.read()))
  return seeds


def _write_seeds(folder: str) -> list[tuple[str, bytes]]:
  """`seed_files` written into `folder`; returns them sorted by name."""
  seeds = sorted(seed_files().items())
  for name, data in seeds:
    with open(os.path.join(folder, name), "wb") as f:
      f.write(data)
  return seeds


def _worker_main(seed_folder: str) -> None:
  """A worker: reads "run_seed start stop" lines on stdin, answers one
  JSON line per mutation on stdout ({"i", "kind", "what"}), then "done"."""
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  seeds = _read_seeds(seed_folder)
  reader = _reader()
  folder = tempfile.mkdtemp(prefix="hloprobe-fuzz-")
  out = sys.stdout
  out.write("ready\n")
  out.flush()
  try:
    for line in sys.stdin:
      run_seed, start, stop = map(int, line.split())
      for i in range(start, stop):
        name, data = mutate(seeds, run_seed, i)
        path = os.path.join(folder, f"m{i}.{name.split('.', 1)[1]}")
        with open(path, "wb") as f:
          f.write(data)
        out.write(f"start {i}\n")
        out.flush()
        o = read_outcome(path, reader)
        os.unlink(path)
        out.write(json.dumps({"i": i, "kind": o.kind, "what": o.what}) + "\n")
        out.flush()
      out.write("done\n")
      out.flush()
  finally:
    shutil.rmtree(folder, ignore_errors=True)


class _Worker:
  """A worker process and its pipes; its stderr goes to a file (XLA and
  MLIR print diagnostics there: a pipe left unread would fill and stop
  it), whose end is kept when it dies."""

  def __init__(self, seed_folder: str):
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(
      filter(None, [root, env.get("PYTHONPATH")])
    )
    self._err = tempfile.TemporaryFile()
    self._buf = bytearray()
    self.proc = subprocess.Popen(
      [
        sys.executable,
        "-c",
        f"import sys, {_MODULE} as m; m._worker_main(sys.argv[1])",
        seed_folder,
      ],
      stdin=subprocess.PIPE,
      stdout=subprocess.PIPE,
      stderr=self._err,
      env=env,
      text=True,
      bufsize=1,
    )
    line = self.readline(_START_S)
    if line != "ready":
      err = self.kill()
      raise RuntimeError(f"a fuzz worker did not start: {line!r} {err[-2000:]}")

  def readline(self, timeout_s: float) -> str | None:
    """The next line (stripped), "" at EOF, None after `timeout_s`. Read
    from the pipe's descriptor into our own buffer: a buffered stream
    holds lines that `select` no longer sees."""
    deadline = time.monotonic() + timeout_s
    fd = self.proc.stdout.fileno()
    while b"\n" not in self._buf:
      left = deadline - time.monotonic()
      if left <= 0:
        return None
      ready, _, _ = select.select([fd], [], [], left)
      if not ready:
        return None
      chunk = os.read(fd, 1 << 16)
      if not chunk:
        return ""
      self._buf += chunk
    line, _, rest = bytes(self._buf).partition(b"\n")
    self._buf = bytearray(rest)
    return line.decode(errors="replace").strip()

  def kill(self) -> str:
    """Kills the worker (if it still runs); the end of its stderr."""
    self.proc.kill()
    self.proc.wait()
    for stream in (self.proc.stdin, self.proc.stdout):
      with contextlib.suppress(OSError, ValueError):
        stream.close()
    self._err.seek(max(0, self._err.seek(0, 2) - 4096))
    tail = self._err.read().decode(errors="replace")
    self._err.close()
    return tail


def _death(proc: subprocess.Popen, err: str) -> str:
  rc = proc.returncode
  tail = " | ".join(err.strip().splitlines()[-2:])[:300]
  how = f"killed by signal {-rc}" if rc and rc < 0 else f"exit status {rc}"
  return f"the reader's process died: {how}; its last words: {tail!r}"


def fuzz(
  count: int,
  run_seed: int = 0,
  start: int = 0,
  jobs: int = 1,
  timeout_s: float = DEFAULT_TIMEOUT_S,
  keep_dir: str | None = None,
  progress=None,
) -> tuple[dict[str, int], list[Finding]]:
  """Runs mutations `start` .. `start + count - 1`.

  Args:
    count: how many mutations.
    run_seed: the run's seed (`mutate`).
    start: the first mutation's index.
    jobs: worker processes at once.
    timeout_s: seconds one mutation may take.
    keep_dir: where each finding's input is written (made if needed), or
      None: nowhere.
    progress: called with (done, count) after each batch, or None.

  Returns:
    (counts of "read", "refused", "finding"; the findings, by index).

  Raises:
    BaseException: the first error a lane met outside the mutations'
      reads (an interrupt, a worker that cannot start), after every lane
      stopped.
  """
  seed_folder = tempfile.mkdtemp(prefix="hloprobe-fuzz-seeds-")
  try:
    seeds = _write_seeds(seed_folder)
    counts = {"read": 0, "refused": 0, "finding": 0}
    findings: list[Finding] = []
    lock = threading.Lock()
    todo = [
      (a, min(a + _BATCH, start + count))
      for a in range(start, start + count, _BATCH)
    ]

    def seed_name(i: int) -> str:
      return seeds[i % len(seeds)][0]

    def found(i: int, what: str) -> None:
      path = ""
      if keep_dir:
        path = _keep(keep_dir, seeds, run_seed, i)
      with lock:
        counts["finding"] += 1
        findings.append(Finding(i, seed_name(i), what, path))

    def lane() -> None:
      worker = None
      try:
        while True:
          with lock:
            if not todo:
              return
            a, b = todo.pop(0)
          while a < b:
            if worker is None:
              worker = _Worker(seed_folder)
            worker.proc.stdin.write(f"{run_seed} {a} {b}\n")
            worker.proc.stdin.flush()
            current = None
            while True:
              line = worker.readline(
                timeout_s if current is not None else _START_S
              )
              if line is None or line == "":  # a hang, or the worker died
                err = worker.kill()
                i = current if current is not None else a
                if line is None:
                  what = f"over {timeout_s:g} s in the reader (a hang)"
                else:
                  what = _death(worker.proc, err)
                found(i, what)
                worker, a = None, i + 1
                break
              if line == "done":
                a = b
                break
              if line.startswith("start "):
                current = int(line.split()[1])
                continue
              r = json.loads(line)
              if r["kind"] == "finding":
                found(r["i"], r["what"])
              else:
                with lock:
                  counts[r["kind"]] += 1
              current = None
          if progress:
            with lock:
              progress(sum(counts.values()), count)
      finally:
        if worker is not None:
          worker.kill()

    errors: list[BaseException] = []

    def guarded_lane() -> None:
      try:
        lane()
      except BaseException as e:  # raised below, on the calling thread
        errors.append(e)
        with lock:
          todo.clear()

    threads = [
      threading.Thread(target=guarded_lane) for _ in range(max(1, jobs))
    ]
    for t in threads:
      t.start()
    for t in threads:
      t.join()
    if errors:
      raise errors[0]
    findings.sort(key=lambda f: f.index)
    return counts, findings
  finally:
    shutil.rmtree(seed_folder, ignore_errors=True)


def _keep(folder: str, seeds, run_seed: int, i: int) -> str:
  """Writes mutation `i`'s input under `folder`; returns its path."""
  os.makedirs(folder, exist_ok=True)
  name, data = mutate(seeds, run_seed, i)
  path = os.path.join(
    folder, f"mutation-{run_seed}-{i}.{name.split('.', 1)[1]}"
  )
  with open(path, "wb") as f:
    f.write(data)
  return path


def main(argv: list[str]) -> int:
  import argparse

  parser = argparse.ArgumentParser(
    prog="python -m hloprobe.tools.fuzz_modules", description=__doc__
  )
  parser.add_argument("--count", type=int, default=100_000)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--start", type=int, default=0)
  parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
  parser.add_argument("--timeout_s", type=float, default=DEFAULT_TIMEOUT_S)
  parser.add_argument("--keep_dir", default="build/fuzz-findings")
  parser.add_argument(
    "--replay", type=int, default=None, help="write mutation I and read it here"
  )
  args = parser.parse_args(argv[1:])
  if args.replay is not None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    seeds = sorted(seed_files().items())
    path = _keep(args.keep_dir, seeds, args.seed, args.replay)
    print(f"mutation {args.replay}: {path}", flush=True)
    print(read_outcome(path), flush=True)
    return 0
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  began = time.monotonic()

  def progress(done: int, count: int) -> None:
    if sys.stderr.isatty():
      print(f"\rfuzz: {done} of {count}", end="", file=sys.stderr, flush=True)

  counts, findings = fuzz(
    args.count,
    args.seed,
    args.start,
    args.jobs,
    args.timeout_s,
    args.keep_dir,
    progress,
  )
  if sys.stderr.isatty():
    print(file=sys.stderr)
  for f in findings:
    print(f"finding: mutation {f.index} of {f.seed}: {f.what} ({f.path})")
  print(
    f"fuzz_modules: {args.count} mutations (seed {args.seed}) in "
    f"{time.monotonic() - began:.0f} s: {counts['read']} read, "
    f"{counts['refused']} refused in one line, {counts['finding']} findings"
  )
  return 1 if findings else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
