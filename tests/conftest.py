"""pytest glue: absltest helpers (create_tempdir) need parsed absl flags."""

import os

from absl import flags

if not flags.FLAGS.is_parsed():
  flags.FLAGS.mark_as_parsed()

# Compile-only GPU targets need the CUDA plugin registered although no CUDA
# runtime is present; its version check would unregister it. Must be set
# before any test starts a JAX backend (see hloprobe.cli._start_jax).
os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
