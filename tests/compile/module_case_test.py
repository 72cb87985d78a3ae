"""A module file as a `Case`: its size, inputs, notes and twin.

Reads the recorded dump of tests/testdata/modfile (its README: `f(x, w)`
with x f32[2,3], w f32[3,4], two dots, two outputs of 2 rows). Expected
values come from that program as its README writes it and from numpy.
"""

from __future__ import annotations

import os
import shutil

import ml_dtypes
import numpy as np
import pytest
from absl.testing import absltest

from hloprobe.compile import (
  get_case,
  module_case,
  resolvable_elsewhere,
)
from hloprobe.compile.module_case import load_inputs
from hloprobe.compile.module_files import read_module_file
from hloprobe.errors import CaseError
from hloprobe.runtime import CaseKey

pytestmark = pytest.mark.compiles

_DATA = os.path.join(os.path.dirname(__file__), "..", "testdata", "modfile")
_TEXT = os.path.join(_DATA, "jit_f.before_optimizations.txt")
_SNAPSHOT = os.path.join(_DATA, "jit_f.snapshot.pb")
# f's arguments, as the README's program makes them.
_X = np.arange(6, dtype=np.float32).reshape(2, 3)
_W = np.ones((3, 4), np.float32)


class ModuleCaseTest(absltest.TestCase):
  def test_one_size_its_rows_and_notes(self):
    case = get_case(_TEXT)
    self.assertEqual(case.name, "jit_f")
    self.assertEqual(case.fixed_size, 2)
    self.assertEqual(case.output_axis, (0, 0))
    self.assertIn(
      "precision set on 2 contractions of the module (as "
      "jax_default_matmul_precision would set them)",
      case.notes,
    )
    self.assertTrue(any("seeded random" in n for n in case.notes))
    x, w = case.make_inputs()
    self.assertEqual((x.shape, x.dtype, w.shape), ((2, 3), np.float32, (3, 4)))
    np.testing.assert_array_equal(get_case(_TEXT).make_inputs()[0], x)
    self.assertTrue(resolvable_elsewhere(_TEXT))

  def test_fingerprint_at_its_own_size(self):
    case = get_case(_TEXT)
    self.assertLen(CaseKey.of(case, case.full_inputs()).digest, 64)

  def test_inputs_from_npz_in_parameter_order(self):
    path = self.create_tempfile("args.npz").full_path
    np.savez(path, _X, _W)
    case = get_case(_TEXT, inputs=path)
    for got, want in zip(case.make_inputs(), (_X, _W)):
      np.testing.assert_array_equal(got, want)
    self.assertIn(f"inputs from {path}", case.notes)

  def test_inputs_that_do_not_fit(self):
    path = self.create_tempfile("args.npz").full_path
    np.savez(path, _W, _X)
    with self.assertRaisesRegex(CaseError, r"array 0 is float32\[3, 4\]"):
      get_case(_TEXT, inputs=path)
    np.savez(path, _X)
    with self.assertRaisesRegex(CaseError, "1 arrays for the 2 parameters"):
      get_case(_TEXT, inputs=path)

  def test_64_bit_integers_that_do_not_fit_32_bits(self):
    # jax without x64 cuts 2**33 + 5 to 5 (u32) silently: refused.
    path = self.create_tempfile("u.npy").full_path
    np.save(path, np.array([1, 2**33 + 5], np.uint64))
    with self.assertRaisesRegex(CaseError, r"holds 8589934597, outside uint32"):
      load_inputs(path, (((2,), np.dtype(np.uint64)),), "m")
    np.save(path, np.array([-(2**31), 2**31 - 1], np.int64))
    (got,) = load_inputs(path, (((2,), np.dtype(np.int64)),), "m")
    self.assertEqual(got.tolist(), [-(2**31), 2**31 - 1])

  def test_npz_member_that_is_not_npy_is_one_line(self):
    import zipfile

    path = self.create_tempfile("m.npz").full_path
    with zipfile.ZipFile(path, "w") as z:
      z.writestr("x.npy", b"")
      z.writestr("notes.txt", b"not an array")
    with self.assertRaises(CaseError) as cm:
      load_inputs(path, (((2, 3), np.dtype(np.float32)),), "m")
    self.assertIn("member 'notes.txt' is not an .npy array", str(cm.exception))
    self.assertNotIn("\n", str(cm.exception))

  def test_npz_zip_bomb_is_refused_before_it_expands(self):
    # 24 MiB of zeros compress to about 24 KB; the limit is lowered to
    # 16 MiB here, so the bomb expands past it (a 2 MB file of zeros
    # expands past the real 2 GiB the same way).
    path = self.create_tempfile("bomb.npz").full_path
    np.savez_compressed(path, np.zeros(3 << 20, np.float64))
    self.assertLess(os.path.getsize(path), 1 << 20)
    limit = module_case.MAX_ARGUMENT_BYTES
    module_case.MAX_ARGUMENT_BYTES = 16 << 20
    try:
      with self.assertRaisesRegex(
        CaseError, r"expand to 25,165,\d+ bytes \(at most 16,777,216\)"
      ):
        load_inputs(path, (((3 << 20,), np.dtype(np.float64)),), "m")
    finally:
      module_case.MAX_ARGUMENT_BYTES = limit

  def test_40_gb_parameter_is_one_line(self):
    params = (
      ((2, 3), np.dtype(np.float32)),
      ((10_000, 1_000_000), np.dtype(np.float32)),
    )
    with self.assertRaises(CaseError) as cm:
      module_case._check_argument_bytes(params, "big.hlo")
    # 10^10 float32: 4 * 10^10 bytes, plus the 24 of the first.
    self.assertIn("take 40,000,000,024 bytes", str(cm.exception))
    self.assertIn("parameter 1 is float32[10000, 1000000]", str(cm.exception))

  def test_bfloat16_npy_read_as_the_parameter(self):
    path = self.create_tempfile("a.npy").full_path
    a = np.array([1.5, -2.0], ml_dtypes.bfloat16)
    np.save(path, a)
    (got,) = load_inputs(path, (((2,), np.dtype(ml_dtypes.bfloat16)),), "m")
    np.testing.assert_array_equal(got, a)

  def test_snapshot_runs_as_its_twin_on_its_arguments(self):
    folder = self.create_tempdir().full_path
    snapshot = os.path.join(folder, "module_0000.jit_f.snapshot.7.pb")
    shutil.copy(_SNAPSHOT, snapshot)
    with self.assertRaisesRegex(CaseError, "before_optimizations"):
      get_case(snapshot)
    twin = os.path.join(folder, "module_0000.jit_f.before_optimizations.txt")
    shutil.copy(_TEXT, twin)
    case = get_case(snapshot)
    self.assertIn(
      f"{snapshot} is an optimized module: the program is its unoptimized "
      f"twin {twin}",
      case.notes,
    )
    for got, want in zip(case.make_inputs(), (_X, _W)):
      np.testing.assert_array_equal(got, want)
    self.assertEqual(
      read_module_file(snapshot).arguments[0].tolist(), _X.tolist()
    )


if __name__ == "__main__":
  absltest.main()
