"""Tests of hloprobe/compile/module_guard.py: the checks made before any
jaxlib parser sees an untrusted module file (issue 41 item 2)."""

import time
import unittest

from hloprobe.compile import module_guard


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
