"""A `jax_enable_x64` program's module (f64 values) is refused by name.

hloprobe translates a module to `jax.lax` calls without x64 enabled, where
jax runs an f64 parameter and dot in f32: before this refusal a sweep of
such a module showed its f64 dot as `F32_F32_F32` and its executed module
failed on a dtype mismatch. The HLO text here is written by hand in the
form `XLA_FLAGS=--xla_dump_to` gives a jitted `(x @ w).astype(f32)` of f64
arguments; a u64 iota (jax's own x32 lowering of `jax.random` has one)
is still read. Nothing compiles: the case is only looked up.
"""

from __future__ import annotations

import os

from absl.testing import absltest

from hloprobe.compile import get_case
from hloprobe.errors import CaseError

_F64 = """\
HloModule jit_f, entry_computation_layout={(f64[4,8]{1,0}, f64[8,3]{1,0})->f32[4,3]{1,0}}

ENTRY %main.1 (x.1: f64[4,8], w.1: f64[8,3]) -> f32[4,3] {
  %x.1 = f64[4,8]{1,0} parameter(0)
  %w.1 = f64[8,3]{1,0} parameter(1)
  %dot.1 = f64[4,3]{1,0} dot(%x.1, %w.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %convert.1 = f32[4,3]{1,0} convert(%dot.1)
}
"""

_U64 = """\
HloModule jit_g, entry_computation_layout={(f32[4,8]{1,0}, f32[8,3]{1,0})->f32[4,3]{1,0}}

ENTRY %main.1 (x.1: f32[4,8], w.1: f32[8,3]) -> f32[4,3] {
  %x.1 = f32[4,8]{1,0} parameter(0)
  %w.1 = f32[8,3]{1,0} parameter(1)
  %iota.1 = u64[4,3]{1,0} iota(), iota_dimension=0
  %convert.1 = f32[4,3]{1,0} convert(%iota.1)
  %dot.1 = f32[4,3]{1,0} dot(%x.1, %w.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %add.1 = f32[4,3]{1,0} add(%dot.1, %convert.1)
}
"""


class ModuleX64Test(absltest.TestCase):
  def _file(self, text: str) -> str:
    path = os.path.join(self.create_tempdir().full_path, "m.txt")
    with open(path, "w") as f:
      f.write(text)
    return path

  def test_f64_module_is_refused_in_one_line(self):
    path = self._file(_F64)
    with self.assertRaises(CaseError) as e:
      get_case(path)
    message = str(e.exception)
    self.assertNotIn("\n", message)
    self.assertIn(path, message)
    self.assertIn("x.1 in main.1 is f64", message)

  def test_u64_values_are_still_read(self):
    case = get_case(self._file(_U64))
    self.assertEqual(case.fixed_size, 4)


if __name__ == "__main__":
  absltest.main()
