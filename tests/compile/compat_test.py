"""compile/compat.py: the JAX/jaxlib differences hloprobe reads through
one place, checked on the installed release (and under jax 0.10.2 by
`make test-old`: release_rules). Expected values come from the installed
packages themselves (`jaxlib.__version__`, `jax.errors`), a scan's jaxpr
made here (`jax.make_jaxpr`, no XLA compile: one constant, one carry, one
scanned input) and XLA's own message wording, quoted."""

from __future__ import annotations

from unittest import mock

import jax
import jaxlib
import numpy as np
import pytest
from absl.testing import absltest

from hloprobe.compile import compat


@pytest.mark.release_rules
class ReleaseTest(absltest.TestCase):
  def test_versions_and_warning(self):
    self.assertEqual(compat.installed_jaxlib(), jaxlib.__version__)
    self.assertEqual(
      compat.jaxlib_release().versions,
      {"jax": jax.__version__, "jaxlib": jaxlib.__version__},
    )
    self.assertEqual(compat.checked_words(), "0.12.0.1 and 0.10.2")
    self.assertEqual(
      compat.rules_checked(), jaxlib.__version__ in ("0.12.0.1", "0.10.2")
    )
    with mock.patch.object(compat, "installed_jaxlib", return_value="0.4.38"):
      self.assertRegex(
        compat.version_warning(),
        r"^hloprobe: warning: jaxlib 0.4.38 is not 0.12.0.1",
      )
      self.assertEqual(
        compat.unchecked_note(),
        "jaxlib 0.4.38: rules checked on 0.12.0.1 and 0.10.2 only",
      )

  def test_scan_counts_from_a_jaxpr(self):
    w = np.float32(2)

    def f(c, xs):
      return jax.lax.scan(lambda c, x: (c * w + x, c), c, xs)

    jaxpr = jax.make_jaxpr(f)(np.float32(1), np.ones(3, np.float32))
    (scan,) = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
    consts, carry = compat.JAXPR_API.scan_counts(scan.params)
    self.assertEqual(carry, 1)
    self.assertEqual(consts + carry + 1, len(scan.invars))

  def test_runtime_error_type_is_jaxs(self):
    self.assertTrue(issubclass(compat.runtime_error_type(), Exception))
    found = getattr(jax.errors, "JaxRuntimeError", None)
    if found is not None:
      self.assertIs(compat.runtime_error_type(), found)


class MessagesTest(absltest.TestCase):
  def test_unknown_compile_option_in_xlas_words(self):
    e = RuntimeError("INVALID_ARGUMENT: No such compile option: 'xla_nope'")
    self.assertEqual(compat.unknown_compile_option(e), "xla_nope")
    self.assertIsNone(compat.unknown_compile_option(RuntimeError("other")))


if __name__ == "__main__":
  absltest.main()
