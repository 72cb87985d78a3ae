"""invariance/pin_file.py's flags (the kernels stage's `pin_flags`): the pinned-gemm file is made and
replayed with split-K forced to 1 and one --xla_disable_hlo_passes naming
every pass to keep off (XLA keeps the last of a repeated flag:
xla/debug_options_flags.cc parses flags in order, each setting the
field). Expected words are XLA's flag names as the module docstring and
the kernels stage give them."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe import kernels


class PinFlagsTest(absltest.TestCase):
  def test_one_disable_flag_with_every_pass(self):
    flags = kernels.pin_flags()
    self.assertIn("--xla_gpu_experimental_force_split_k=1", flags)
    disables = [f for f in flags if f.startswith("--xla_disable_hlo_passes=")]
    self.assertLen(disables, 1)
    passes = disables[0].split("=", 1)[1].split(",")
    self.assertCountEqual(
      passes, ["triton-softmax-rewriter", "dot-strength-reduction"]
    )


if __name__ == "__main__":
  absltest.main()
