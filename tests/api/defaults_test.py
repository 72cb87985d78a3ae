"""api/defaults.py: the one table of defaults, and the command line's flags
taking theirs from it (issue 36 item 3: one sweep asked the same way from
any entry point is the same sweep). Expected values are the README's (the
host CPU only, batch sizes 1-9, the seed report's three precisions) and
the process's own CPU affinity for --jobs."""

from __future__ import annotations

import os

from absl import flags
from absl.testing import absltest

from hloprobe.api.defaults import DEFAULTS
from hloprobe.cli import _flags  # noqa: F401 (registers the flags read here)


class DefaultsTest(absltest.TestCase):
  def test_the_table(self):
    self.assertEqual(DEFAULTS.targets, ("cpu",))
    self.assertEqual(DEFAULTS.batch_sizes, "1-9")
    self.assertEqual(
      DEFAULTS.precisions, ("bfloat16", "tensorfloat32", "float32")
    )
    self.assertEqual(DEFAULTS.jobs(), len(os.sched_getaffinity(0)))

  def test_command_line_flags_default_to_it(self):
    f = flags.FLAGS
    self.assertEqual(f["targets"].default, list(DEFAULTS.targets))
    self.assertEqual(f["batch_sizes"].default, DEFAULTS.batch_sizes)
    self.assertEqual(f["precisions"].default, list(DEFAULTS.precisions))
    self.assertEqual(f["cache_max_mb"].default, DEFAULTS.cache_max_mb)
    self.assertEqual(f["case_timeout"].default, DEFAULTS.case_timeout_s)
    self.assertEqual(f["jobs"].default, DEFAULTS.jobs())


if __name__ == "__main__":
  absltest.main()
