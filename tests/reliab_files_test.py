"""Issue 27 items 11 and 12: a golden folder given as a symlink is updated
through it, and nothing is left behind."""

from __future__ import annotations

import json
import os

from absl.testing import absltest

from hloprobe.golden import update
from hloprobe.golden.snapshot import Snapshot

_SWEEP = {
  "cases": ["seed_mlp"],
  "targets": ["cpu"],
  "batch_sizes": [1],
  "precisions": ["float32"],
}


def _snap(jaxlib: str) -> Snapshot:
  return Snapshot({}, {"jax": jaxlib, "jaxlib": jaxlib})


class GoldenSymlinkTest(absltest.TestCase):
  def test_update_through_a_link_updates_its_target(self):
    parent = self.create_tempdir().full_path
    real = os.path.join(parent, "real")
    link = os.path.join(parent, "link")
    update.update_goldens(real, _snap("0.10.2"), _SWEEP)
    os.symlink("real", link)
    result = update.update_goldens(link, _snap("0.12.0"), _SWEEP)
    self.assertEqual(result.golden_dir, link)
    self.assertTrue(os.path.islink(link))
    self.assertEqual(os.readlink(link), "real")
    with open(os.path.join(real, "MANIFEST.json")) as f:
      self.assertEqual(json.load(f)["jaxlib"], "0.12.0")
    # No staging folder, backup or lock file left beside them.
    self.assertEqual(sorted(os.listdir(parent)), ["link", "real"])


if __name__ == "__main__":
  absltest.main()
