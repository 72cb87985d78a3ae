"""kernels/differences.py: kernels matched by what they compute and
compared by signature, on records made here (the fields a gemm's rule
reads: split_k and k). Expected records hold the values written here:
the differing field named with both values, a kernel on one side only
with the other side None, and sizes with equal kernels one class (their
words: tests/report/invariance_causes_test.py)."""

from __future__ import annotations

import dataclasses

from absl.testing import absltest

from hloprobe.kernels import records
from hloprobe.kernels.differences import compare_kernels, kernel_classes


def _gemm(
  split_k: str, name: str = "gemm_fusion_dot.1"
) -> records.KernelRecord:
  arithmetic = (
    ("algorithm", "TF32_TF32_F32"),
    ("k", "256"),
    ("split_k", split_k),
  )
  return records.KernelRecord(
    name=name,
    kernel=name.replace(".", "_"),
    role=records.Role.CONTRACTION,
    emitter="Triton gemm (__triton_nested_gemm_fusion)",
    ops=("dot_general",),
    source=("/u/model.py:7",),
    row_shape="f32[N,64]",
    arithmetic=arithmetic,
    config=(("num_stages", "3"),),
    signature=f"contraction Triton gemm {arithmetic}",
    row_count=records.RowCount.DEPENDS,
    row_count_why=records.RowCountWhy(records.RowCountRule.TRITON_GEMM),
  )


def _reduce() -> records.KernelRecord:
  return records.KernelRecord(
    name="input_reduce_fusion",
    kernel="input_reduce_fusion",
    role=records.Role.REDUCTION,
    emitter="XLA reduction emitter, row reduction",
    ops=("reduce_sum",),
    source=("/u/model.py:9",),
    row_shape="f32[N]",
    arithmetic=(("reduce", "dims={1} of 64, add"),),
    config=(),
    signature="reduction row dims={1} of 64, add",
    row_count=records.RowCount.INDEPENDENT,
    row_count_why=records.RowCountWhy(records.RowCountRule.ROW, length=64),
  )


class CompareTest(absltest.TestCase):
  def test_equal_signatures_no_difference(self):
    self.assertEqual(
      compare_kernels([_gemm("1"), _reduce()], [_gemm("1"), _reduce()]), ()
    )

  def test_a_field_that_differs_is_named(self):
    (d,) = compare_kernels([_gemm("1"), _reduce()], [_gemm("4"), _reduce()])
    self.assertEqual(d.fields, (("split_k", "1", "4"),))
    self.assertEqual(d.config, ())
    self.assertFalse(d.ptx_only)

  def test_config_values_that_differ_are_named_but_not_the_ptx(self):
    x, y = _gemm("1"), _gemm("4")
    y = dataclasses.replace(y, config=(("num_stages", "4"), ("ptx", "ab")))
    (d,) = compare_kernels([x], [y])
    self.assertEqual(d.config, (("num_stages", "3", "4"),))

  def test_only_the_ptx_fields_differ(self):
    x = dataclasses.replace(_reduce(), arithmetic=(("ptx", "a1"),))
    y = dataclasses.replace(x, arithmetic=(("ptx", "b2"),), signature="other")
    (d,) = compare_kernels([x], [y])
    self.assertEqual(d.fields, (("ptx", "a1", "b2"),))
    self.assertTrue(d.ptx_only)

  def test_a_kernel_on_one_side_only(self):
    (d,) = compare_kernels([_gemm("1")], [_gemm("1"), _reduce()])
    self.assertIsNone(d.a)
    self.assertEqual(d.b, _reduce())
    self.assertEqual(d.fields, ())

  def test_classes_by_kernel_identity(self):
    configs = {
      1: [_gemm("1")],
      8: [_gemm("1")],
      64: [_gemm("4")],
      2: [_gemm("1")],
    }
    self.assertEqual(kernel_classes(configs), ((1, 2, 8), (64,)))


if __name__ == "__main__":
  absltest.main()
