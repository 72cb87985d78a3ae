"""commands/shards.py: a shard's folder written and read back, and shards
joined in plan order or refused with one line. Records are made by hand;
what is expected is the plan order the shards' config indices give and
the refusals the module names (different plans, a shard twice, missing
shards, different CPUs)."""

from __future__ import annotations

import json
import os

from absl.testing import absltest

from hloprobe.commands import shards
from hloprobe.compile import get_target
from hloprobe.errors import InvalidArgumentError
from hloprobe.ir import Precision
from hloprobe.records import Config, ConfigResult

_FP = "ab" * 32


def _result(n: int) -> ConfigResult:
  return ConfigResult(
    Config("seed_mlp", get_target("cpu"), n, Precision.float32)
  )


class ShardFolderTest(absltest.TestCase):
  def _shard(self, index: int, configs, fingerprint=_FP, host=None):
    folder = self.create_tempdir().full_path
    doc = {
      "shard": {
        "index": index,
        "count": 2,
        "fingerprint": fingerprint,
        "plan": {"w": 1},
        "configs": configs,
      }
    }
    if host is not None:
      doc["host"] = host
    with open(os.path.join(folder, "results.json"), "w") as f:
      json.dump(doc, f)
    shards.write_records(folder, [_result(n + 1) for n in configs])
    return shards.read_shard(folder)

  def test_written_read_and_joined_in_plan_order(self):
    s0, s1 = self._shard(0, [0, 2]), self._shard(1, [1, 3])
    self.assertEqual(s1.label, f"shard 1/2 ({s1.folder})")
    joined = shards.join_shards([s1, s0])
    self.assertEqual([r.config.n for r in joined], [1, 2, 3, 4])

  def test_refusals(self):
    s0 = self._shard(0, [0])
    with self.assertRaisesRegex(
      InvalidArgumentError, "missing shard 1/2 of plan abababababab"
    ):
      shards.join_shards([s0])
    with self.assertRaisesRegex(InvalidArgumentError, "shard 0/2 given twice"):
      shards.join_shards([s0, s0])
    other = self._shard(1, [1], fingerprint="cd" * 32)
    with self.assertRaisesRegex(
      InvalidArgumentError, "shards of different plans"
    ):
      shards.join_shards([s0, other])
    cpu = self._shard(1, [1], host={"model": "EPYC", "isa": "AVX2"})
    with self.assertRaisesRegex(InvalidArgumentError, "ran on different CPUs"):
      shards.join_shards([s0, cpu])
    with self.assertRaisesRegex(
      InvalidArgumentError, "`merge` takes the shards' folders"
    ):
      shards.join_shards([])

  def test_a_folder_without_a_shard(self):
    empty = self.create_tempdir().full_path
    with self.assertRaisesRegex(
      InvalidArgumentError, "is not a shard's --output_dir"
    ):
      shards.read_shard(empty)
    with self.assertRaisesRegex(InvalidArgumentError, "cannot read"):
      shards.read_records(empty)


if __name__ == "__main__":
  absltest.main()
