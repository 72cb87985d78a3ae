"""ir/fused_attention.py: cuDNN attention calls named and their q k^T
dims read, from the recorded a100 compile of `cudnn_attention` (jaxlib
0.12.0.1, tests/testdata/compiles/cudnn_attention_a100_n2_bfloat16). The
expected dims are the recorded backend_config read by hand: BTNH, so q
k^T contracts the head dim 3 with batch dims 0 (B) and 2 (N)."""

from __future__ import annotations

import json
import os
import re

import testutil
from absl.testing import absltest

from hloprobe.errors import HloParseError
from hloprobe.ir import fused_attention

_HLO = os.path.join(
  testutil.ROOT,
  "tests/testdata/compiles/cudnn_attention_a100_n2_bfloat16",
  "jaxlib0.12.0.1/optimized.hlo",
)


def _recorded_call() -> tuple[str, dict]:
  """The one fused attention call's target and backend_config."""
  with open(_HLO, encoding="utf-8") as f:
    for line in f:
      target = re.search(r'custom_call_target="([^"]+)"', line)
      if target and "cudnn_fmha_backend_config" in line:
        config = line.split("backend_config=", 1)[1]
        return target[1], json.JSONDecoder().raw_decode(config)[0]
  raise AssertionError("no cuDNN attention call recorded")


class FusedAttentionTest(absltest.TestCase):
  def test_recorded_call_is_attention_with_btnh_dims(self):
    target, config = _recorded_call()
    self.assertEqual(target, "__cudnn$fmhaSoftmax")
    self.assertTrue(fused_attention.is_attention_target(target))
    self.assertEqual(
      fused_attention.attention_dims(config, target),
      ((0, 2), (0, 2), (3,), (3,)),
    )

  def test_other_targets_are_not_attention(self):
    for target in ("__cublas$lt$matmul", "", None):
      self.assertFalse(fused_attention.is_attention_target(target))

  def test_a_config_without_dims_is_one_error(self):
    with self.assertRaisesRegex(
      HloParseError, r"__cudnn\$fmhaSoftmax: backend_config has none of"
    ):
      fused_attention.attention_dims({}, "__cudnn$fmhaSoftmax")


if __name__ == "__main__":
  absltest.main()
