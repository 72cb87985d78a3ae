"""pytest setup shared by the absltest-based tests."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from absl import flags

# Compile-only GPU targets need the CUDA plugin registered although no CUDA
# runtime is present; its version check would unregister it. Must be set
# before any test starts a JAX backend (see hloprobe.cli._start_jax).
os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")

# The command line caches records under $XDG_CACHE_HOME/hloprobe by default;
# tests (and the processes they start) get an empty one of their own.
_CACHE_HOME = tempfile.mkdtemp(prefix="hloprobe-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE_HOME
atexit.register(shutil.rmtree, _CACHE_HOME, ignore_errors=True)


def pytest_configure(config):
  """Marks absl flags parsed, so absltest helpers (create_tempdir) work."""
  del config
  if not flags.FLAGS.is_parsed():
    flags.FLAGS.mark_as_parsed()
