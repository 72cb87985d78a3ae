"""ir/precisions.py: the precision vocabulary against JAX's own.

The expected names come from the installed jax itself
(`jax.lax.DotAlgorithmPreset`, and `jax.default_matmul_precision`
accepting each name: jax/_src/config.py), not from hloprobe's tables.
Nothing here compiles: setting the config starts no backend.
"""

from __future__ import annotations

import jax
import pytest
from absl.testing import absltest

from hloprobe.errors import InvalidArgumentError
from hloprobe.ir import precisions


# JAX's presets are the release's: `make test-old` reruns it under 0.10.2.
@pytest.mark.release_rules
class VocabularyTest(absltest.TestCase):
  def test_every_jax_preset_is_a_precision_name(self):
    presets = {p.name for p in jax.lax.DotAlgorithmPreset}
    # DEFAULT is the config's "default"; every other preset by its name.
    self.assertEqual(
      presets - {"DEFAULT"},
      set(precisions.ALGORITHMS) | set(precisions._OTHER_PRESETS),
    )
    self.assertContainsSubset(presets, precisions.PRECISION_NAMES)

  def test_jax_config_takes_every_jax_name(self):
    for name in precisions.PRECISION_NAMES:
      jax_name = precisions.parse_precision(name)
      with jax.default_matmul_precision(jax_name):
        self.assertEqual(jax.config.jax_default_matmul_precision, jax_name)
    self.assertEqual(precisions.parse_precision("DEFAULT"), "default")

  def test_unknown_names_one_suggestion(self):
    with self.assertRaisesRegex(
      InvalidArgumentError, r"unknown precision 'tf32'; .*tensorfloat32"
    ):
      precisions.as_precision("tf32")
    p = precisions.as_precision("TF32_TF32_F32")
    self.assertIs(precisions.as_precision(p), p)


class AlgorithmNamesTest(absltest.TestCase):
  def test_stablehlo_fields_and_hlo_spelling_name_the_preset(self):
    fields = {
      "lhs_precision_type": "bf16",
      "rhs_precision_type": "bf16",
      "accumulation_type": "f32",
      "num_primitive_operations": "3",
    }
    self.assertEqual(
      precisions.algorithm_from_fields(fields), "BF16_BF16_F32_X3"
    )
    self.assertEqual(
      precisions.algorithm_from_hlo("dot_tf32_tf32_f32"), "TF32_TF32_F32"
    )
    # No preset: the text itself, never a guess.
    self.assertEqual(precisions.algorithm_from_hlo("dot_x"), "dot_x")
    self.assertEqual(
      precisions.algorithm_from_fields({"accumulation_type": "f8"}),
      "accumulation_type=f8",
    )


if __name__ == "__main__":
  absltest.main()
