"""api/planning.py: a sweep planned from the command line's words, in
this process (no worker, no XLA). Expected: every (experiment, target,
precision, size) of the words given, sizes as --batch_sizes reads them,
the defaults table's precisions, and one line for a bad name."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.api.defaults import DEFAULTS
from hloprobe.api.planning import plan
from hloprobe.errors import InvalidArgumentError


class PlanTest(absltest.TestCase):
  def test_every_config_of_the_words(self):
    p = plan(
      ["seed_mlp"],
      batch_sizes="1,3-4",
      targets=["cpu", "a100"],
      experiments=["no_triton_gemm"],
    )
    configs = [c.config for c in p.configs()]
    self.assertLen(configs, 2 * 2 * len(DEFAULTS.precisions) * 3)
    self.assertEqual(sorted({c.n for c in configs}), [1, 3, 4])
    self.assertEqual(
      sorted({str(c.precision) for c in configs}),
      sorted(DEFAULTS.precisions),
    )
    self.assertEqual(
      {c.experiment for c in configs}, {"baseline", "no_triton_gemm"}
    )
    self.assertEqual(configs[0].label(), "cpu seed_mlp n=1 bfloat16")

  def test_a_bad_name_is_one_line(self):
    with self.assertRaisesRegex(
      InvalidArgumentError, "^unknown precision 'fp32'; did you mean 'float32'"
    ):
      plan(["seed_mlp"], precisions=["fp32"])


if __name__ == "__main__":
  absltest.main()
