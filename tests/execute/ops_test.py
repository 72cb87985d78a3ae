"""execute/ops.py: the executor's opcode table, on a module written here
in HLO text. Expected: the values numpy computes for the ops the table
has (an identity custom call passed through, a constant, a convert), and
a custom call it has not named, not guessed."""

from __future__ import annotations

import numpy as np
from absl.testing import absltest

from hloprobe.execute import execute_module
from hloprobe.ir import parse_hlo_module

_KNOWN = """HloModule m

ENTRY %main (x: f32[3]) -> s32[3] {
  %x = f32[3]{0} parameter(0)
  %s = f32[3]{0} custom-call(%x), custom_call_target="Sharding"
  %c = f32[3]{0} constant({0.5, 1.5, -2})
  %y = f32[3]{0} multiply(%s, %c)
  ROOT %i = s32[3]{0} convert(%y)
}
"""

_UNKNOWN = """HloModule m

ENTRY %main (x: f32[3]) -> f32[3] {
  %x = f32[3]{0} parameter(0)
  ROOT %k = f32[3]{0} custom-call(%x), custom_call_target="my_kernel"
}
"""


class OpsTest(absltest.TestCase):
  def test_known_ops_as_numpy(self):
    x = np.float32([2, 2, 2])
    run = execute_module(parse_hlo_module(_KNOWN), [x])
    self.assertTrue(run.complete, run.not_executed)
    want = (x * np.float32([0.5, 1.5, -2])).astype(np.int32)
    np.testing.assert_array_equal(run.outputs[0], want)
    self.assertEqual(run.outputs[0].dtype, np.int32)

  def test_an_unknown_custom_call_is_named(self):
    run = execute_module(parse_hlo_module(_UNKNOWN), [np.ones(3, np.float32)])
    self.assertIsNone(run.outputs)
    (missing,) = run.not_executed
    self.assertEqual((missing.instruction, missing.target), ("k", "my_kernel"))


if __name__ == "__main__":
  absltest.main()
