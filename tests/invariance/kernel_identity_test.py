"""Classes by kernel identity through the `KernelReader` protocol (the
interface `hloprobe.kernels` fills), from hand-made kernels: no compile.

Expected classes and verdicts follow from the signatures given here: equal
complete signatures are one class (invariant), a differing signature a
boundary naming that kernel, an incomplete one "unknown".
"""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.compile import get_target
from hloprobe.invariance import invariance_of
from hloprobe.invariance.kernel_identity import RowKernel
from hloprobe.ir import as_precision
from hloprobe.records import Config, ConfigResult

_SIZES = (1, 2, 8, 64)


def _results():
  a100 = get_target("a100")
  return [
    ConfigResult(Config("m", a100, n, as_precision("float32"))) for n in _SIZES
  ]


def _reader(signatures, why=None):
  def read(r):
    n = r.config.n
    return (
      RowKernel("ln", "reduction", (), signatures[n], f"tile {signatures[n]}"),
      RowKernel("ew", "elementwise", (), "same", "loop", why),
    )

  return read


class KernelIdentityTest(absltest.TestCase):
  def test_equal_complete_signatures_are_invariant(self):
    (a,) = invariance_of(_results(), reader=_reader(dict.fromkeys(_SIZES, "t")))
    self.assertIs(a.invariant, True)
    self.assertEqual(a.basis, "kernel identity")
    self.assertEqual(a.rows[0].classes, (_SIZES,))

  def test_a_differing_kernel_is_a_boundary(self):
    sig = {1: "t", 2: "t", 8: "t", 64: "u"}
    (a,) = invariance_of(_results(), reader=_reader(sig))
    self.assertIs(a.invariant, False)
    self.assertEqual(a.rows[0].classes, ((1, 2, 8), (64,)))
    (b,) = a.boundaries
    self.assertEqual((b.n, b.against), (64, 8))  # the nearest member
    self.assertEqual(b.causes, ("ln tile u",))

  def test_incomplete_signatures_prove_nothing(self):
    reader = _reader(dict.fromkeys(_SIZES, "t"), why="PTX not read")
    (a,) = invariance_of(_results(), reader=reader)
    self.assertIsNone(a.invariant)
    self.assertEqual(a.basis, "unknown")
    self.assertEqual(a.why, "PTX not read")

  def test_one_batch_size_asks_nothing(self):
    self.assertEqual(
      invariance_of(_results()[:1], reader=_reader({1: "t"})), ()
    )


if __name__ == "__main__":
  absltest.main()
