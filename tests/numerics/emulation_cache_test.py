"""emulation_cache: one compile per config, guesses at the next sizes.

A guess only changes when an emulation is made, never its bits: each
guessed output equals the emulation of that size alone, and a sweep's
predictions equal those of a predictor that guesses nothing.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import recorded
from absl.testing import absltest

from hloprobe.compile import cases
from hloprobe.numerics import emulate, emulation_cache, predict, reference

# Compiles with XLA (`make test-fast` skips it).
pytestmark = [pytest.mark.cpu_numerics, pytest.mark.compiles]

_T, _F = "TF32_TF32_F32", "F32_F32_F32"
_TF32_FIRST = (_T, _F, _F, _F)
_F32 = (_F,) * 4


class GuessTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.case = cases.get_case("seed_mlp")
    cls.full = cls.case.make_inputs()

  def _cache(self, limit=emulation_cache.SPECULATION_LIMIT):
    return emulation_cache.EmulationCache(
      self.case, self.full, (2, 3, 4), limit
    )

  def test_guessed_sizes_have_the_bits_of_one_emulation_alone(self):
    cache = self._cache()
    asked = [(2, a, "xla") for a in (_TF32_FIRST, _F32)]
    cache.fetch(asked, ahead_of=2)
    self.assertEqual(cache.guessed, 4)  # 2 assignments at sizes 3 and 4
    for n in (2, 3, 4):
      for a in (_TF32_FIRST, _F32):
        alone = emulate.emulate_case(
          self.case.fn, self.case.inputs_for(self.full, n), a
        )
        (leaf,) = cache.get(n, a)
        np.testing.assert_array_equal(leaf, alone, err_msg=f"{n} {a}")
    self.assertEqual(cache.guessed, 0)  # every guess was asked for
    # and the assignments differ, so the check can fail
    self.assertFalse(
      np.array_equal(cache.get(4, _F32)[0], cache.get(4, _TF32_FIRST)[0])
    )

  def test_limit_bounds_the_guesses_held(self):
    cache = self._cache(limit=3)
    asked = [(2, a, "xla") for a in (_TF32_FIRST, _F32)]
    cache.fetch(asked, ahead_of=2)
    self.assertEqual(cache.guessed, 2)  # size 3 fits the limit, 4 does not
    # a config at size 3 asking for two others: no room at size 4
    others = [(_F, _T, _F, _F), (_F, _F, _T, _F)]
    cache.fetch([(3, a, "xla") for a in others], ahead_of=3)
    self.assertEqual(cache.guessed, 2)

  def test_no_sizes_no_guess(self):
    cache = emulation_cache.EmulationCache(self.case, self.full)
    cache.fetch([(2, _F32, "xla")], ahead_of=2)
    self.assertEqual(cache.guessed, 0)


class SweepGuessTest(absltest.TestCase):
  def test_sweep_predictions_equal_one_size_alone(self):
    # A predictor told a sweep's sizes guesses at sizes 2 and 9 from sizes
    # 1 and 2 (on an A100 under bfloat16 sizes >= 2 have TF32 sites); one
    # that guesses nothing, given one config alone, predicts the same. The
    # fates are recorded compiles (tests/testdata/compiles).
    sizes = (1, 2, 9)
    case = cases.get_case("seed_mlp")
    full = case.full_inputs()
    refs = reference.References(case, full, sizes)
    guessing = predict.Predictor(case, full, refs, sizes)
    fates = {
      n: tuple(recorded.fates(recorded.load(f"seed_a100_n{n}_bfloat16")))
      for n in sizes
    }
    swept = {n: guessing.predict(n, fates[n], None) for n in sizes}
    self.assertIn("TF32_TF32_F32", swept[9].site_algorithms)
    for n in sizes:
      alone = predict.Predictor(case, full, refs).predict(n, fates[n], None)
      np.testing.assert_equal(
        dataclasses.asdict(alone), dataclasses.asdict(swept[n]), err_msg=str(n)
      )


if __name__ == "__main__":
  absltest.main()
