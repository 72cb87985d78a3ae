"""commands/listings.py: `hloprobe targets`, `cases` and `experiments`
through the command line in this process (`testutil.run_hloprobe_here`;
no XLA): exit 0, and the text `report.listings` makes, printed whole."""

from __future__ import annotations

import testutil
from absl.testing import absltest, parameterized

from hloprobe.report import listings


class ListingCommandsTest(parameterized.TestCase):
  @parameterized.parameters(
    ("cases", listings.cases_listing),
    ("experiments", listings.experiments_listing),
    ("targets", listings.targets_listing),
  )
  def test_prints_the_listing(self, command, listing):
    proc = testutil.run_hloprobe_here(command)
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertEqual(proc.stdout, listing() + "\n")
    self.assertEqual(proc.stderr, "")


if __name__ == "__main__":
  absltest.main()
