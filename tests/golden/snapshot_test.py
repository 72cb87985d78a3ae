"""golden/snapshot.py: the golden files of a sweep's results, on the
recorded a100 compile of the seed at n = 2 (jaxlib 0.12.0.1; no XLA).
Expected: the layout the README's golden section gives (TARGET/CASE/
nN-PRECISION.{dots.json,hlo} and stablehlo/CASE/...), each file opening
with its header line, the files of a config in its scope only, and a
planned config that reported nothing counted, not dropped."""

from __future__ import annotations

import recorded
from absl.testing import absltest

from hloprobe.golden import snapshot
from hloprobe.records import Config

_VERSIONS = {"jax": "0.12.0", "jaxlib": "0.12.0.1"}


class SnapshotTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.result = recorded.config_result(
      recorded.load("seed_a100_n2_bfloat16", "0.12.0.1")
    )

  def test_files_and_headers(self):
    snap = snapshot.take_snapshot([self.result], _VERSIONS, date="2026-12-05")
    self.assertEqual(
      sorted(snap.files),
      [
        "a100/seed_mlp/n2-bfloat16.dots.json",
        "a100/seed_mlp/n2-bfloat16.hlo",
        "stablehlo/seed_mlp/n2-bfloat16.stablehlo.mlir",
      ],
    )
    header = snap.files["stablehlo/seed_mlp/n2-bfloat16.stablehlo.mlir"]
    self.assertTrue(
      header.startswith(
        "// hloprobe-golden v1 kind=stablehlo case=seed_mlp n=2 "
        "precision=bfloat16 jax=0.12.0 jaxlib=0.12.0.1 date=2026-12-05\n"
      )
    )
    self.assertEqual((snap.failed, snap.unreported), ((), ()))

  def test_scope(self):
    rel = "a100/seed_mlp/n2-bfloat16.hlo"
    self.assertTrue(
      snapshot.in_scope(rel, {("a100", "seed_mlp", 2, "bfloat16")})
    )
    self.assertFalse(
      snapshot.in_scope(rel, {("cpu", "seed_mlp", 2, "bfloat16")})
    )
    self.assertTrue(snapshot.in_scope(rel, None))

  def test_a_planned_config_without_a_result_is_counted(self):
    c = self.result.config
    other = Config("seed_mlp", c.target, 9, c.precision)
    snap = snapshot.take_snapshot(
      [self.result], _VERSIONS, planned=[self.result.config, other]
    )
    self.assertEqual(snap.planned, 2)
    self.assertEqual(snap.unreported, ("a100 seed_mlp n=9 bfloat16",))


if __name__ == "__main__":
  absltest.main()
