"""pytest setup shared by the absltest-based tests."""

from __future__ import annotations

from absl import flags


def pytest_configure(config):
  """Marks absl flags parsed, so absltest helpers (create_tempdir) work."""
  del config
  if not flags.FLAGS.is_parsed():
    flags.FLAGS.mark_as_parsed()
