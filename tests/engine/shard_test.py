"""--shard: its words, the index from the environment, and the split.

Nothing here compiles: the split is checked on plain cost lists and on
plans (cases and targets looked up, never compiled). Expected values are
counted by hand.
"""

from __future__ import annotations

from absl.testing import absltest, parameterized

from hloprobe.engine import plan_sweep, spec_from_words
from hloprobe.engine import shard as shard_module
from hloprobe.engine.shard import Shard, parse_shard
from hloprobe.errors import InvalidArgumentError


class ParseShardTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("first", "0/3", {}, Shard(0, 3)),
    ("last", "2/3", {}, Shard(2, 3)),
    ("one", "0/1", {}, Shard(0, 1)),
    ("spaces", " 1/2 ", {}, Shard(1, 2)),
    ("kubernetes", "auto/4", {"JOB_COMPLETION_INDEX": "3"}, Shard(3, 4)),
    ("slurm", "auto/4", {"SLURM_ARRAY_TASK_ID": "0"}, Shard(0, 4)),
    ("ci_matrix", "auto/2", {"HLOPROBE_SHARD_INDEX": "1"}, Shard(1, 2)),
    (
      "hloprobe_variable_first",
      "auto/4",
      {"HLOPROBE_SHARD_INDEX": "2", "SLURM_ARRAY_TASK_ID": "1"},
      Shard(2, 4),
    ),
    (
      "kubernetes_before_slurm",
      "auto/4",
      {"JOB_COMPLETION_INDEX": "1", "SLURM_ARRAY_TASK_ID": "3"},
      Shard(1, 4),
    ),
  )
  def test_parses(self, text, environ, want):
    self.assertEqual(parse_shard(text, environ), want)

  @parameterized.named_parameters(
    ("no_slash", "3", {}, "write I/N"),
    ("negative", "-1/3", {}, "write I/N"),
    ("index_is_count", "3/3", {}, "must be 0 to 2"),
    ("zero_count", "0/0", {}, "count must be 1 to 4096"),
    ("huge_count", "0/5000", {}, "count must be 1 to 4096"),
    ("auto_unset", "auto/3", {}, "none is set"),
    (
      "slurm_one_based",
      "auto/3",
      {"SLURM_ARRAY_TASK_ID": "3"},
      r"SLURM_ARRAY_TASK_ID='3'.*0 to 2.*--array=0-2",
    ),
    (
      "variable_not_a_number",
      "auto/3",
      {"JOB_COMPLETION_INDEX": "x"},
      "0 to 2",
    ),
    ("non_ascii_digit", "auto/3", {"HLOPROBE_SHARD_INDEX": "\u0661"}, "0 to 2"),
  )
  def test_refuses(self, text, environ, message):
    with self.assertRaisesRegex(InvalidArgumentError, message):
      parse_shard(text, environ)


class ShardMembersTest(parameterized.TestCase):
  def _split(self, costs, count):
    return [
      shard_module.shard_members(costs, Shard(i, count)) for i in range(count)
    ]

  @parameterized.named_parameters(
    ("even", [1.0] * 9, 3, [[0, 1, 2], [3, 4, 5], [6, 7, 8]]),
    ("uneven", [1.0] * 7, 3, [[0, 1], [2, 3, 4], [5, 6]]),
    # The GPU configs (cost 2) weigh twice: 4 CPU then 4 GPU configs, total
    # 12, split 6 / 6: the 4 CPU and one GPU config, then 3 GPU configs.
    (
      "gpu_weighs_twice",
      [1.0] * 4 + [2.0] * 4,
      2,
      [[0, 1, 2, 3, 4], [5, 6, 7]],
    ),
    ("more_shards_than_configs", [1.0, 1.0], 4, [[], [0], [], [1]]),
    ("one_shard", [1.0, 2.0, 1.0], 1, [[0, 1, 2]]),
  )
  def test_split(self, costs, count, want):
    self.assertEqual(self._split(costs, count), want)

  def test_every_config_once_contiguous_balanced(self):
    costs = [1.0 + (i % 3 == 0) for i in range(100)]
    for count in (2, 3, 7, 16):
      parts = self._split(costs, count)
      flat = [i for p in parts for i in p]
      self.assertEqual(flat, list(range(100)))  # each once, in order
      loads = [sum(costs[i] for i in p) for p in parts]
      # Balanced to within one config's cost (2) of the mean.
      mean = sum(costs) / count
      self.assertLessEqual(max(abs(x - mean) for x in loads), 2.0, loads)


class PlanShardTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.plan = spec_from_words(
      cases=["seed_mlp"],
      batch_sizes="1-3",
      precisions=["bfloat16", "float32"],
      targets=["cpu", "a100"],
      experiment_words=[
        "nodsr:--xla_disable_hlo_passes=dot-strength-reduction"
      ],
    )

  def test_shards_cover_the_plan_once(self):
    every = [c.config for c in self.plan.all_configs()]
    self.assertLen(every, 24)  # 2 flag sets x 2 targets x 2 precisions x 3
    got = []
    for i in range(3):
      got += [
        c.config for c in plan_sweep(self.plan, shard=Shard(i, 3)).configs()
      ]
    self.assertCountEqual(got, every)
    self.assertEqual(got, every)  # contiguous, in plan order

  def test_gpu_configs_cost_more(self):
    # Per flag set: 6 cpu configs (cost 6) then 6 a100 (cost 2.5 each:
    # 15); total 42, halves of 21: the baseline's 12, then the experiment's.
    self.assertEqual(shard_module.config_cost("cuda"), 2.5)
    first = plan_sweep(self.plan, shard=Shard(0, 2)).configs()
    self.assertEqual({c.config.experiment for c in first}, {"baseline"})
    self.assertLen(first, 12)

  def test_unsharded_plan_is_all(self):
    self.assertEqual(self.plan.configs(), self.plan.all_configs())
    self.assertEqual(self.plan.shard_indices(), list(range(24)))

  def test_words_make_the_plan_again(self):
    words = self.plan.words()
    again = spec_from_words(
      cases=words["cases"],
      batch_sizes=",".join(map(str, words["batch_sizes"])),
      precisions=words["precisions"],
      targets=words["targets"],
      experiment_words=words["experiments"],
      explain_passes=words["explain_passes"],
    )
    identity = {"hloprobe_source": "x", "jax": "j", "XLA_FLAGS": ""}
    self.assertEqual(
      again.fingerprint(identity), self.plan.fingerprint(identity)
    )

  def test_fingerprint_differs_by_plan_and_identity(self):
    identity = {"hloprobe_source": "x", "jax": "j", "XLA_FLAGS": ""}
    other = plan_sweep(self.plan, batch_sizes=(1, 2))
    self.assertNotEqual(
      other.fingerprint(identity), self.plan.fingerprint(identity)
    )
    flags = {**identity, "XLA_FLAGS": "--xla_cpu_max_isa=AVX2"}
    self.assertNotEqual(
      self.plan.fingerprint(flags), self.plan.fingerprint(identity)
    )
    # The shard is not part of it: every shard of a plan has one.
    cut = plan_sweep(self.plan, shard=Shard(1, 3))
    self.assertEqual(cut.fingerprint(identity), self.plan.fingerprint(identity))


if __name__ == "__main__":
  absltest.main()
