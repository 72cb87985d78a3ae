"""The public API: every name in __all__ exists; importing registers no flags."""

from __future__ import annotations

from absl import flags
from absl.testing import absltest

import hloprobe


class ApiTest(absltest.TestCase):

  def test_all_names_exist_and_sorted(self):
    self.assertEqual(hloprobe.__all__, sorted(hloprobe.__all__))
    for name in hloprobe.__all__:
      self.assertTrue(hasattr(hloprobe, name), name)

  def test_import_registers_no_flags(self):
    self.assertNotIn("batch_sizes", flags.FLAGS)


if __name__ == "__main__":
  absltest.main()
