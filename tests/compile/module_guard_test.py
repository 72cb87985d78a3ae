"""Tests of hloprobe/compile/module_guard.py: the checks made before any
jaxlib parser sees an untrusted module file (issue 41 item 2)."""

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
import unittest

import pytest
from absl import flags
from absl.testing import flagsaver

from hloprobe.cli import _main as cli
from hloprobe.compile import module_guard
from hloprobe.compile.module_files import read_module_file

_FUZZ = os.path.join(os.path.dirname(__file__), "..", "testdata", "fuzz")
_MODFILE = os.path.join(os.path.dirname(__file__), "..", "testdata", "modfile")


class NestingTest(unittest.TestCase):
  def test_deep_hlo_tuples_are_refused_fast(self):
    depth = 100_000
    shape = "(" * depth + "f32[]" + ")" * depth
    text = f"HloModule m\nENTRY e {{ p = {shape} parameter(0) }}".encode()
    start = time.monotonic()
    problem = module_guard.nesting_problem(text, mlir=False)
    self.assertLess(time.monotonic() - start, 5.0)
    self.assertIsNotNone(problem)
    # The depth, counted by hand: the ENTRY's `{`, the tuples' `(`, and
    # the `[` of `f32[]` innermost.
    self.assertIn(f"nests {depth + 2} brackets deep", problem)
    self.assertNotIn("\n", problem)

  def test_brackets_in_strings_and_comments_do_not_count(self):
    text = b'HloModule m // ((((((((\nx = "((((((((((" (f32[])\n'
    self.assertIsNone(module_guard.nesting_problem(text * 1, mlir=False))

  def test_mlir_angle_brackets_count_and_arrows_do_not(self):
    deep = b"tuple<" * 300 + b"f32" + b">" * 300
    self.assertIsNotNone(module_guard.nesting_problem(deep, mlir=True))
    self.assertIsNone(module_guard.nesting_problem(deep, mlir=False))
    arrows = b"func.func @f() -> () " * 1000
    self.assertIsNone(module_guard.nesting_problem(arrows, mlir=True))


class BytecodeTest(unittest.TestCase):
  def test_mlir_strings_that_are_not_utf8(self):
    # MLIR's printer writes a byte that is not printable ASCII as \XX.
    self.assertIsNone(module_guard.strings_problem('module @"a\\C3\\A9" {}'))
    self.assertIsNone(module_guard.strings_problem('"\u00e9" "\\22" "\\\\"'))
    problem = module_guard.strings_problem('\n\nmodule @"jit_\\E6" {}')
    self.assertIn("a string at line 3 is not UTF-8", problem)
    self.assertIn("jit_", problem)
    # A lone continuation byte, and a cut two-byte sequence.
    self.assertIsNotNone(module_guard.strings_problem('"\\80"'))
    self.assertIsNotNone(module_guard.strings_problem('"\\C3x"'))

  def test_producer_not_utf8_is_refused(self):
    data = b"ML\xefR" + bytes([(6 << 1) | 1]) + b"Stable\xffHLO\0rest"
    problem = module_guard.bytecode_problem(data)
    self.assertIn("not UTF-8", problem)
    self.assertIn("0xff", problem)

  def test_header_checks(self):
    self.assertEqual(
      module_guard.bytecode_problem(b"MLIR"), "no MLIR bytecode magic"
    )
    self.assertIn("version", module_guard.bytecode_problem(b"ML\xefR"))
    cut = b"ML\xefR" + bytes([3]) + b"producer"
    self.assertIn("producer", module_guard.bytecode_problem(cut))
    good = b"ML\xefR" + bytes([3]) + b"MLIR19.0.0git\0"
    self.assertIsNone(module_guard.bytecode_problem(good))

  def test_guarded_text_refuses_bad_producer_without_a_child(self):
    data = b"ML\xefR" + bytes([3]) + b"\xc3\x28\0"
    with self.assertRaises(module_guard.GuardError) as cm:
      module_guard.guarded_text(data, "stablehlo_bytecode")
    self.assertFalse(cm.exception.died)


def _explain_case(path: str) -> tuple[int, str]:
  """`hloprobe explain --case=PATH`, in process: (exit status, stderr)."""
  err = io.StringIO()
  with flagsaver.flagsaver(), contextlib.redirect_stderr(err):
    flags.FLAGS.unparse_flags()
    flags.FLAGS(["hloprobe", f"--case={path}"])
    status = cli.main(["hloprobe", "explain"])
  return status, err.getvalue()


@pytest.mark.compiles  # starts the guarded child (a Python)
class FuzzFindingsTest(unittest.TestCase):
  """The inputs `make fuzz` found (hloprobe/tools/fuzz_modules.py, run seed
  0, replayed with --replay=I): each is one line, exit 2, and this
  process lives on."""

  def _refused(self, name: str, why: str) -> None:
    path = os.path.join(_FUZZ, name)
    start = time.monotonic()
    status, err = _explain_case(path)
    self.assertLess(time.monotonic() - start, 20.0)
    self.assertEqual(status, 2)
    lines = err.strip().splitlines()
    self.assertEqual(len(lines), 1, err)
    self.assertIn(name, lines[0])
    self.assertIn(why, lines[0])

  def test_mutation_66_bytecode_abort_is_one_line(self):
    # Bytecode converted from HLO, mutated: jaxlib 0.12.0.1 aborts in
    # process on it (nanobind str() of a string that is not UTF-8).
    self._refused(
      "mutation-0-66.mlirbc", "SIGABRT (jaxlib's native code): nanobind"
    )

  def test_mutation_120_bytecode_abort_is_one_line(self):
    self._refused(
      "mutation-0-120.mlirbc", "SIGABRT (jaxlib's native code): nanobind"
    )

  def test_mutation_565_snapshot_literal_is_one_line(self):
    # A snapshot whose first argument's literal lost its values: was a
    # ValueError traceback from the sniffer.
    self._refused("mutation-0-565.snapshot.pb", "has 0 values, not 12")

  def test_mutation_12080_hlo_text_check_failure_is_one_line(self):
    # `parameter(4294967296)`: a CHECK in XLA's HloComputation (SIGABRT)
    # when parsed in process; the guarded child parses HLO text first.
    self._refused("mutation-0-12080.hlo.txt", "died of SIGABRT")

  def test_mutation_2495_hlo_to_stablehlo_abort_is_one_line(self):
    # Parses, then XLA's translation to StableHLO aborts in process.
    self._refused("mutation-0-2495.hlo.txt", "died of SIGABRT")

  def test_mutation_5527_binary_proto_abort_is_one_line(self):
    # A binary HloModuleProto XLA aborts on: printed in the child only.
    self._refused("mutation-0-5527.hlo.pb", "died of SIGABRT")

  def test_mutation_121_mlir_hang_is_one_line(self):
    # Was a hang over 20 s; not UTF-8 past its `module @` start, it is
    # refused before any parser.
    self._refused("mutation-0-121.mlir", "not a module file of any kind")

  # Three mutations of make fuzz's seeds (as they were before the seeds
  # were made independent of the checkout's path; the files are the
  # inputs) on which MLIR's bytecode reader spins without end: a location
  # or string attribute changed to refer to itself. Each ran into the
  # guard's 60 s limit; now its CPU budget, 1-2 s, ends it.
  def test_mutation_11894_bytecode_spin_is_one_line(self):
    self._refused("mutation-0-11894.mlirbc", "s of CPU time")

  def test_mutation_12690_export_spin_is_one_line(self):
    self._refused("mutation-0-12690.export", "s of CPU time")

  def test_mutation_6255_export_spin_is_one_line(self):
    self._refused("mutation-0-6255.export", "s of CPU time")

  def test_mutation_3024_export_name_not_utf8_is_one_line(self):
    # A jax.export artifact whose module name became "jit_\E6": its text
    # parsed here, the name's str() raised a RuntimeError (a traceback).
    self._refused("mutation-0-3024.export", "is not UTF-8 ('jit_\\\\E6')")

  def test_mutation_3951_export_name_not_utf8_is_one_line(self):
    self._refused("mutation-0-3951.export", "is not UTF-8")

  def test_mutation_13254_huge_instruction_id_is_one_line(self):
    # An HloModuleProto in text format whose constant's id became
    # 4294964294967296: XLA's reader sized a vector by its local part
    # (10 GB, 40 s); refused before any reader, from the id alone.
    start = time.monotonic()
    self._refused("mutation-0-13254.pbtxt", "local id 1293934592, over")
    self.assertLess(time.monotonic() - start, 10.0)


def _one_byte_apart(a: bytes, b: bytes) -> list[int]:
  """The offsets where two byte strings of one length differ."""
  return [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]


@pytest.mark.compiles  # starts the guarded child and `python -m hloprobe`
class SpinningExportTest(unittest.TestCase):
  """Issue 41's spinning jax.export artifact. spin-sin.export (936 bytes)
  is sin.export, `jax.export.export(jax.jit(jnp.sin))(np.float32(1))
  .serialize()`, with one byte changed (offset 342, 0x11 -> 0x09: in its
  StableHLO bytecode, attribute 1, an IntegerAttr, becomes a
  FlatSymbolRefAttr naming attribute 1: itself). MLIR's bytecode reader
  then spins without end in `AttrTypeReader::resolveEntry` (seen in gdb),
  at full CPU, ignoring SIGINT and SIGTERM when read in process."""

  def test_the_artifacts_are_one_byte_apart(self):
    with open(os.path.join(_FUZZ, "sin.export"), "rb") as f:
      good = f.read()
    with open(os.path.join(_FUZZ, "spin-sin.export"), "rb") as f:
      spin = f.read()
    self.assertEqual(len(spin), 936)
    self.assertEqual(_one_byte_apart(good, spin), [342])

  def test_the_valid_artifact_is_read(self):
    mf = read_module_file(os.path.join(_FUZZ, "sin.export"))
    self.assertEqual(mf.kind, "jax_export")
    self.assertIn("stablehlo.sine", mf.stablehlo)
    self.assertEqual(mf.parameters, (((), "f32"),))

  def test_the_spinning_artifact_is_one_line_within_its_cpu_budget(self):
    path = os.path.join(_FUZZ, "spin-sin.export")
    start = time.monotonic()
    status, err = _explain_case(path)
    self.assertLess(time.monotonic() - start, 30.0)  # its limit: 60 s
    self.assertEqual(status, 2)
    lines = err.strip().splitlines()
    self.assertEqual(len(lines), 1, err)
    self.assertIn("spin-sin.export", lines[0])
    self.assertIn("ran past its 1 s of CPU time", lines[0])

  def test_sigint_while_it_spins_exits_130_in_one_line(self):
    # `python -m hloprobe explain` on the spinning artifact, interrupted
    # once its guarded child has used 1 s of CPU: its imports take about
    # 0.6 s here, so it is in jax.export's reader, whose budget ends at 2
    # s at the earliest. The parent waits in Python: exit 130, one line,
    # and the child is gone.
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.Popen(
      [
        sys.executable,
        "-m",
        "hloprobe",
        "explain",
        f"--case={os.path.join(_FUZZ, 'spin-sin.export')}",
      ],
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      env=env,
    )
    try:
      child = None
      deadline = time.monotonic() + 60
      while child is None and time.monotonic() < deadline:
        child = next(
          (pid for pid, cpu in _children(proc.pid) if cpu >= 1.0), None
        )
        time.sleep(0.02)
      self.assertIsNotNone(child, "the guarded child never ran 1 s")
      proc.send_signal(signal.SIGINT)
      out, err = proc.communicate(timeout=30)
    finally:
      if proc.poll() is None:
        proc.kill()
        proc.wait()
    self.assertEqual(proc.returncode, 130, err)
    self.assertEqual(
      err.decode().strip().splitlines(), ["hloprobe: interrupted"]
    )
    self.assertEqual(out, b"")
    self.assertFalse(os.path.exists(f"/proc/{child}"), "the child is left")


def _children(pid: int) -> list[tuple[int, float]]:
  """The processes whose parent is `pid`: (pid, CPU seconds used)."""
  found = []
  tick = os.sysconf("SC_CLK_TCK")
  for name in os.listdir("/proc"):
    if not name.isdigit():
      continue
    try:
      with open(f"/proc/{name}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
      continue
    if int(fields[1]) == pid:
      found.append((int(name), (int(fields[11]) + int(fields[12])) / tick))
  return found


@pytest.mark.compiles  # starts the guarded child (a Python)
class GuardedProtoTest(unittest.TestCase):
  """Binary HloModuleProtos and HloSnapshots are printed in the child."""

  def test_recorded_proto_and_snapshot_still_read(self):
    proto = read_module_file(
      os.path.join(_MODFILE, "jit_f.before_optimizations.hlo.pb")
    )
    self.assertEqual(proto.kind, "hlo_proto")
    self.assertIn("ENTRY", proto.hlo_text)
    snap = read_module_file(os.path.join(_MODFILE, "jit_f.snapshot.pb"))
    self.assertEqual(snap.kind, "hlo_snapshot")
    self.assertIsNotNone(snap.arguments)

  def test_cpu_budget_grows_with_the_input(self):
    # 1 s, and 4 s per MiB, in whole seconds.
    self.assertEqual(module_guard.cpu_budget_s(0), 1)
    self.assertEqual(module_guard.cpu_budget_s(936), 1)
    self.assertEqual(module_guard.cpu_budget_s(1 << 20), 5)
    self.assertEqual(module_guard.cpu_budget_s(256 << 20), 1025)
    self.assertEqual(
      module_guard._death(-signal.SIGXCPU, b"", 5),
      "its reader ran past its 5 s of CPU time (jaxlib's native code spun "
      "on it); stopped",
    )

  def test_child_death_names_the_cause(self):
    err = b"terminate called\n  what():  nanobind::str(): conversion error!\n"
    self.assertEqual(
      module_guard._death(-6, err),
      "its reader died of SIGABRT (jaxlib's native code): "
      "nanobind::str(): conversion error!",
    )


class OrphanTest(unittest.TestCase):
  # Starts module_guard's reader child (a Python): marked as the suite's
  # process starters are.
  @pytest.mark.compiles
  def test_a_read_past_its_limit_ends_the_child_without_its_parent(self):
    child = module_guard._Child()
    try:
      # A read whose data never comes, with a 1 s limit: the child's own
      # SIGALRM ends it, as it would with no parent to kill it.
      child.proc.stdin.write(b"hlo_text 100 1 1\n")
      child.proc.stdin.flush()
      self.assertEqual(child.proc.wait(timeout=30), -signal.SIGALRM)
    finally:
      child.kill()
