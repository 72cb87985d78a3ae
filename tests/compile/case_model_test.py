"""compile/case_model.py: a `Case`'s batch rules on numpy inputs made
here (no XLA). Expected values are the slices numpy takes (the first n
elements along each batched argument's axis, shared arguments whole) and
the errors the record's docstrings name, each one line naming the case."""

from __future__ import annotations

import numpy as np
from absl.testing import absltest

from hloprobe.compile.case_model import Case
from hloprobe.errors import CaseError


def _case(**kw) -> Case:
  def inputs():
    return (np.arange(12.0).reshape(4, 3), np.ones((3, 2)))

  kw.setdefault("in_axes", (0, None))
  return Case("c", "a test case", lambda x, w: x @ w, inputs, **kw)


class BatchTest(absltest.TestCase):
  def test_first_n_rows_of_batched_arguments(self):
    case = _case()
    full = case.full_inputs()
    self.assertEqual(case.full_size(full), 4)
    x, w = case.inputs_for(full, 2)
    np.testing.assert_array_equal(x, np.arange(6.0).reshape(2, 3))
    self.assertIs(w, full[1])
    self.assertEqual(case.device_count, 1)

  def test_batch_axis_one(self):
    case = _case(in_axes=(1, None))
    (x, _) = case.inputs_for(case.full_inputs(), 2)
    np.testing.assert_array_equal(x, np.arange(12.0).reshape(4, 3)[:, :2])

  def test_errors_name_the_case(self):
    case = _case()
    with self.assertRaisesRegex(
      CaseError,
      "batch size 5 exceeds the 4 rows \\(batch elements\\) of case 'c'",
    ):
      case.inputs_for(case.full_inputs(), 5)
    with self.assertRaisesRegex(CaseError, "case 'c': no argument is batched"):
      _case(in_axes=(None, None)).full_inputs()
    with self.assertRaisesRegex(CaseError, "in_axes has 1 entries for 2"):
      _case(in_axes=(0,)).full_inputs()
    with self.assertRaisesRegex(CaseError, "disagree on the batch size"):
      _case(in_axes=(0, 0)).full_inputs()
    with self.assertRaisesRegex(CaseError, "given without mesh_shape"):
      _case(mesh_axes=("k",))

  def test_output_axes(self):
    case = _case()
    self.assertEqual(case.output_axes([(4, 2)]), (0,))
    with self.assertRaisesRegex(CaseError, "output axis 0 out of range"):
      case.output_axes([()])


class HostDeviceFlagTest(absltest.TestCase):
  def test_the_flag_follows_the_device_count(self):
    # The flag XLA's CPU client reads (xla/debug_options_flags.cc).
    sharded = _case(mesh_shape=(2, 4), mesh_axes=("a", "b"))
    self.assertEqual(
      sharded.host_device_flag, "--xla_force_host_platform_device_count=8"
    )
    self.assertEqual(_case().host_device_flag, "")


if __name__ == "__main__":
  absltest.main()
