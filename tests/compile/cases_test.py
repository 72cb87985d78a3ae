"""Built-in cases: the seed is the reporter's model; ports run on the CPU.

A --case path that names no file says so, instead of "unknown case".

A new user's first typo in the README's round trip (`--case=dump/module_
0001.jit_f.before_optimizations.txt` for a dump that has module_0000) used
to read "unknown case ...; choose from conv_net, ..." -- the very message
issue 25 starts from. No built-in case name holds "/" or ".", so a word
that does is a path: it does not exist, or is a folder. Nothing compiles.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import testutil
from absl.testing import absltest, parameterized

from hloprobe.compile import INT32_DOTS_FIX, absolute_case_word, cases, get_case
from hloprobe.errors import CaseError
from hloprobe.numerics import reference


def _reference(case, args):
  (out,) = reference.float64_reference(case, args)
  return out


class SeedTest(absltest.TestCase):
  @pytest.mark.compiles  # the seed's inputs come from jax.random
  def test_reporter_model(self):
    case = cases.get_case("seed_mlp")
    xy, (weights, biases, gammas, mus) = case.make_inputs()
    self.assertEqual(xy.shape, (4096, 2))
    np.testing.assert_array_equal(xy[0], [-1.0, -1.0])
    np.testing.assert_array_equal(xy[-1], [1.0, 1.0])
    self.assertEqual(
      [w.shape for w in weights], [(48, 2), (48, 48), (48, 48), (1, 48)]
    )
    self.assertTrue(all(not b.any() for b in biases))
    self.assertEqual([g.shape for g in gammas], [(48,)] * 3)
    self.assertTrue(all(np.all(np.abs(m) <= np.pi) for m in mus))
    # he_uniform(-1, -2) of shape (out, in): fan_in is in, limit sqrt(6/in).
    self.assertLessEqual(np.max(np.abs(weights[1])), np.sqrt(6 / 48))

  @pytest.mark.compiles
  def test_recorded_inputs_are_make_inputs(self):
    # testutil.seed_mlp_inputs: what the XLA-free tests read.
    made = jax.tree_util.tree_leaves(cases.get_case("seed_mlp").make_inputs())
    recorded = jax.tree_util.tree_leaves(testutil.seed_mlp_inputs())
    self.assertLen(recorded, len(made))
    for a, b in zip(made, recorded):
      np.testing.assert_array_equal(a, b, strict=True)

  @pytest.mark.compiles
  def test_inputs_for_cuts_rows(self):
    case = cases.get_case("seed_mlp")
    full = case.make_inputs()
    xs, params = case.inputs_for(full, 3)
    self.assertEqual(xs.shape, (3, 2))
    self.assertIs(params, full[1])
    with self.assertRaisesRegex(CaseError, "exceeds"):
      case.inputs_for(full, 4097)

  def test_unknown(self):
    with self.assertRaisesRegex(
      CaseError, "unknown case 'x'; choose from .*seed_mlp"
    ):
      cases.get_case("x")


@pytest.mark.compiles
class PortedCasesTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("tf_127577", "tf_127577", 2, (2, 512)),
    ("jax_11628", "jax_11628", 2, (2, 1000)),
    ("jax_15362", "jax_15362", 2, (2, 1)),
    ("jax_27188", "jax_27188", 2, (10, 2, 10)),
    ("jax_22557", "jax_22557", 2, (300, 300, 2)),
  )
  def test_float64_reference_shape(self, name, n, shape):
    case = cases.get_case(name)
    ref = _reference(case, case.inputs_for(case.make_inputs(), n))
    self.assertEqual(ref.shape, shape)
    self.assertEqual(ref.dtype, np.float64)

  def test_jacobian_reference_is_the_matrix(self):
    case = cases.get_case("jax_11628")
    mat, x = case.make_inputs()
    ref = _reference(case, (mat, x))
    np.testing.assert_array_equal(ref, mat.astype(np.float64))


@pytest.mark.compiles
class ReferenceDtypeTest(absltest.TestCase):
  def test_bfloat16_inputs_are_widened(self):
    x = (np.arange(8, dtype=np.float32) / 3).astype(jnp.bfloat16)
    case = cases.Case("bf16", "bf16", lambda a: a * a, lambda: (x,))
    ref = _reference(case, (x,))
    exact = np.asarray(x, np.float64) ** 2
    np.testing.assert_array_equal(ref, exact)  # not rounded back to bf16


class CasePathTest(absltest.TestCase):
  def test_missing_module_file(self):
    path = os.path.join(self.create_tempdir().full_path, "m.before.txt")
    with self.assertRaises(CaseError) as e:
      get_case(path)
    self.assertEqual(
      str(e.exception).splitlines(),
      [
        f"module file {path!r} does not exist; give a module file, e.g. an "
        "XLA dump's dump/module_0000.jit_f.before_optimizations.txt"
      ],
    )

  def test_folder(self):
    path = self.create_tempdir().full_path
    with self.assertRaisesRegex(
      CaseError, f"^module file '{path}' is a folder"
    ):
      get_case(path)

  def test_other_words_stay_unknown_cases(self):
    with self.assertRaisesRegex(
      CaseError, r"^unknown case 'seed_mpl'; did you mean 'seed_mlp'\? choose"
    ):
      get_case("seed_mpl")


class AbsoluteCaseWordTest(absltest.TestCase):
  """Printed commands and `versions`' workers run in another folder: a
  case file's path is made absolute against this process's folder
  (expected: os.path.join of the folder and the word)."""

  def test_a_case_file_is_made_absolute(self):
    here = os.getcwd()
    self.assertEqual(
      absolute_case_word("sub/my_case.py:make_case"),
      os.path.join(here, "sub", "my_case.py") + ":make_case",
    )
    self.assertEqual(
      absolute_case_word("my_case.py:make_case" + INT32_DOTS_FIX.case_suffix),
      os.path.join(here, "my_case.py")
      + ":make_case"
      + INT32_DOTS_FIX.case_suffix,
    )

  def test_names_and_modules_stay_as_they_are(self):
    for word in ("seed_mlp", "pkg.mod:make_case", "/abs/c.py:f"):
      self.assertEqual(absolute_case_word(word), word)


if __name__ == "__main__":
  absltest.main()
