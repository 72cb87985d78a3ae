"""Issue 39 item 6: a module file's batch is the parameter that shares the
output's leading axis, not its first parameter.

The HLO text is written by hand in the form `XLA_FLAGS=--xla_dump_to`
gives a jitted `x @ w` whose weight comes first: `w` f32[128,256] is
parameter 0, `x` f32[8,128] parameter 1, the output f32[8,256]. Its batch
is 8 rows of `x` (the output's axis 0 has 8), not 128; --batch_arg names
a parameter by number or name. Nothing compiles: the case is only looked
up (traced for its output shapes).
"""

from __future__ import annotations

import os

import pytest
from absl.testing import absltest
from testutil import run_hloprobe_here

from hloprobe.compile import get_case
from hloprobe.compile.module_case import batch_parameter
from hloprobe.errors import CaseError

_WEIGHT_FIRST = """\
HloModule jit_f, entry_computation_layout={(f32[128,256]{1,0}, f32[8,128]{1,0})->f32[8,256]{1,0}}

ENTRY %main.1 (w.1: f32[128,256], x.1: f32[8,128]) -> f32[8,256] {
  %w.1 = f32[128,256]{1,0} parameter(0)
  %x.1 = f32[8,128]{1,0} parameter(1)
  ROOT %dot.1 = f32[8,256]{1,0} dot(%x.1, %w.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


class BatchAxisTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.path = os.path.join(self.create_tempdir().full_path, "m.txt")
    with open(self.path, "w") as f:
      f.write(_WEIGHT_FIRST)

  def test_the_weight_first_dump_has_the_true_batch(self):
    case = get_case(self.path)
    self.assertEqual(case.fixed_size, 8)
    self.assertEqual(case.batch_arg, 1)
    said = [n for n in case.notes if n.startswith("batch:")]
    self.assertLen(said, 1)
    self.assertIn("parameter 1 (x.1, [8,128])", said[0])
    self.assertIn("the output's leading axis", said[0])

  def test_batch_arg_by_number_and_by_name(self):
    for word in ("0", "w", "w.1"):
      with self.subTest(word):
        case = get_case(self.path, batch_arg=word)
        self.assertEqual((case.fixed_size, case.batch_arg), (128, 0))

  # Reads a module file: HLO text is parsed in module_guard's child first.
  @pytest.mark.compiles
  def test_an_unknown_batch_arg_is_one_line(self):
    with self.assertRaises(CaseError) as e:
      get_case(self.path, batch_arg="y")
    line = str(e.exception)
    self.assertNotIn("\n", line)
    self.assertIn("--batch_arg=y names no parameter", line)
    self.assertIn("0 w.1, 1 x.1", line)

  def test_no_parameter_shares_the_leading_axis(self):
    index, said = batch_parameter(
      [(3, 4), (5, 4)], ["a", "b"], [(7,)], None, "m"
    )
    self.assertEqual(index, 0)
    self.assertIn("no parameter shares the output's leading axis", said)


class BatchArgFlagTest(absltest.TestCase):
  def test_without_a_module_case_is_one_usage_line(self):
    proc = run_hloprobe_here("sweep", "--batch_arg=w")
    self.assertEqual(proc.returncode, 2, proc.stderr)
    self.assertLen(proc.stderr.splitlines(), 1, proc.stderr)
    self.assertIn("no --case is a module file", proc.stderr)


if __name__ == "__main__":
  absltest.main()
