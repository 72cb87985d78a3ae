"""The command line under bad environments, bad inputs and interrupts
(issue 13): one line and exit 2 for bad input, nothing lost, nothing left."""

from __future__ import annotations

from absl.testing import absltest, parameterized
from testutil import run_hloprobe


def _error_lines(proc) -> list[str]:
  return [l for l in proc.stderr.splitlines() if l.startswith("hloprobe:")]


class BadInputCase(parameterized.TestCase):
  """Asserts one `hloprobe: error:` line, exit 2 and no output."""

  def assertUsageError(self, proc, message: str) -> None:
    self.assertEqual(proc.returncode, 2, proc.stderr)
    errors = _error_lines(proc)
    self.assertLen(errors, 1, proc.stderr)
    self.assertIn(message, errors[0])
    self.assertNotIn("Traceback", proc.stderr)
    self.assertEqual(proc.stdout, "")


class EnvironmentXlaFlagsTest(BadInputCase):
  @parameterized.named_parameters(
    (
      "unknown_flag",
      "--xla_cpu_enabel_fast_math=false",
      "XLA rejected flag --xla_cpu_enabel_fast_math=false",
    ),
    (
      "bad_value",
      "--xla_cpu_enable_fast_math=maybe",
      "XLA rejected flag --xla_cpu_enable_fast_math: cannot read the value "
      "'maybe'",
    ),
  )
  def test_named_in_one_line(self, xla_flags, message):
    proc = run_hloprobe(
      "sweep", "--batch_sizes=1", env={"XLA_FLAGS": xla_flags}
    )
    self.assertUsageError(proc, message)
    self.assertIn("XLA_FLAGS of the environment", proc.stderr)


if __name__ == "__main__":
  absltest.main()
