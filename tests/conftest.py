"""pytest glue: absltest helpers (create_tempdir) need parsed absl flags."""

from absl import flags

if not flags.FLAGS.is_parsed():
  flags.FLAGS.mark_as_parsed()
