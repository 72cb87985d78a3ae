"""emulate_many: several site assignments in one compile, each as alone."""

from __future__ import annotations

import numpy as np
import pytest
from absl.testing import absltest

from hloprobe.compile import cases
from hloprobe.numerics import emulate

# Compiles with XLA (`make test-fast` skips it).
pytestmark = [pytest.mark.cpu_numerics, pytest.mark.compiles]

_T, _F, _B = "TF32_TF32_F32", "F32_F32_F32", "BF16_BF16_F32_X3"


class EmulateManyTest(absltest.TestCase):
  def test_same_bits_as_one_emulation_per_assignment(self):
    # The predictor's speed-up must not change a prediction: each output of
    # the shared compile equals the one-by-one emulation bit for bit (the
    # same ops on the same CPU, so this holds under any ISA).
    case = cases.get_case("seed_mlp")
    args = case.inputs_for(case.make_inputs(), 5)
    assignments = [(_T, _F, _F, _F), (_F, _T, _T, _F), (_B, _B, _B, _F), _F]
    together = emulate.emulate_many(case.fn, args, assignments)
    self.assertLen(together, len(assignments))
    for assignment, out in zip(assignments, together):
      alone = emulate.emulate_case(case.fn, args, assignment)
      (leaf,) = out
      np.testing.assert_array_equal(leaf, alone, err_msg=str(assignment))
    # and the assignments do differ, so the check can fail
    self.assertFalse(np.array_equal(together[0][0], together[3][0]))


if __name__ == "__main__":
  absltest.main()
