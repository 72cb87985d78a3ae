"""ir/stablehlo_site.py: a site's record from jax's own lowering with
debug info (no XLA compile): its source frame is the line of this file
that holds the matmul (found here with `inspect`, not by hloprobe), its
types, dimension numbers, precision and the entry arguments each operand
depends on, as the function below defines them."""

from __future__ import annotations

import inspect
import os

import jax
import numpy as np
from absl.testing import absltest

from hloprobe.ir import parse_stablehlo_dots, stablehlo_site


def _model(x, w, b):
  h = jax.lax.dot_general(
    x, w, (((1,), (0,)), ((), ())), precision=jax.lax.Precision.HIGH
  )  # the site
  return h + b


def _site_line() -> int:
  lines, first = inspect.getsourcelines(_model)
  return first + next(i for i, l in enumerate(lines) if "dot_general(" in l)


class SiteTest(absltest.TestCase):
  def test_site_from_the_lowering(self):
    args = (
      np.ones((2, 3), np.float32),
      np.ones((3, 4), np.float32),
      np.ones(4, np.float32),
    )
    text = jax.jit(_model).lower(*args).as_text(debug_info=True)
    (site,) = parse_stablehlo_dots(text)
    self.assertEqual(
      (site.lhs.dims, site.rhs.dims, site.result.dims), ((2, 3), (3, 4), (2, 4))
    )
    self.assertEqual((site.lhs_contracting, site.rhs_contracting), ((1,), (0,)))
    self.assertEqual(site.precision, ("HIGH", "HIGH"))
    self.assertEqual(
      (site.lhs_ancestry, site.rhs_ancestry), (frozenset({0}), frozenset({1}))
    )
    self.assertEqual(site.contracting_size, 3)
    here = os.path.basename(__file__)
    file, line, _ = site.frames[0].rsplit(":", 2)
    self.assertEqual((os.path.basename(file), int(line)), (here, _site_line()))
    self.assertEqual(site.location, stablehlo_site.file_line(site.frames))

  def test_file_line_of_no_frames(self):
    self.assertIsNone(stablehlo_site.file_line(()))
    self.assertEqual(stablehlo_site.file_line(("/a:b.py:7:3",)), "/a:b.py:7")


if __name__ == "__main__":
  absltest.main()
