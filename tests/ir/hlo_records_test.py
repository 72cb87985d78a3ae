"""ir/hlo_records.py: the parsed module's records, on the recorded a100
compile of the seed at n = 2 (jaxlib 0.12.0.1,
tests/testdata/compiles/seed_a100_n2_bfloat16). The expected stack is the
module's own FileNames / FileLocations / StackFrames tables read by hand:
`dot.4` has stack_frame_id=7, frame 7 is location 7 (builtin_cases.py
line 104, column 8) with parent_frame_id=7, i.e. frame 6 (the printed
parent is the parent's id plus one), and so on down to frame 1."""

from __future__ import annotations

import os

import testutil
from absl.testing import absltest

from hloprobe.errors import HloParseError
from hloprobe.ir import hlo_records, parse_hlo_module

_HLO = os.path.join(
  testutil.ROOT,
  "tests/testdata/compiles/seed_a100_n2_bfloat16/jaxlib0.12.0.1/optimized.hlo",
)
_RECORD = "tests/testdata/compiles/record.py"


class RecordedModuleTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    with open(_HLO, encoding="utf-8") as f:
      cls.module = parse_hlo_module(f.read())
    (cls.dot,) = [
      i for _, i in cls.module.all_instructions() if i.name == "dot.4"
    ]

  def test_source_stack_from_the_tables(self):
    self.assertEqual(
      self.module.source_frames(self.dot),
      (
        "hloprobe/compile/builtin_cases.py:104:8",
        "hloprobe/compile/builtin_cases.py:112:9",
        "hloprobe/compile/compat.py:146:11",
        "hloprobe/compile/lowering.py:235:14",
        f"{_RECORD}:67:7",
        f"{_RECORD}:93:19",
        f"{_RECORD}:98:11",
      ),
    )
    self.assertEqual(
      self.module.source_location(self.dot),
      "hloprobe/compile/builtin_cases.py:104",
    )

  def test_attrs_without_calls(self):
    # Line 165 of the recorded module, read by hand: the fusion's
    # attributes are kind, calls, metadata and backend_config; only
    # calls= names a computation.
    (fusion,) = [
      i
      for _, i in self.module.all_instructions()
      if i.name == "gemm_fusion_dot"
    ]
    self.assertEqual(
      [k for k, _ in fusion.attrs_without_calls],
      ["kind", "metadata", "backend_config"],
    )
    self.assertEqual(
      fusion.called_computations,
      ("fused_computation.1.gemm_fusion_dot_computation",),
    )

  def test_instruction_fields(self):
    d = self.dot
    self.assertEqual((d.opcode, str(d.shape)), ("dot", "f32[2,48]"))
    self.assertEqual(d.dims_attr("lhs_contracting_dims"), (1,))
    self.assertEqual(d.backend_config, {"sizes": ["16"]})
    self.assertEqual(
      d.metadata["op_name"], "jit(_seed_batched)/vmap()/transpose"
    )
    self.assertEqual(
      d.to_text(),
      "%dot.4 = f32[2,48]{1,0} dot(%param_0.4, %param_1.4), "
      "lhs_contracting_dims={1}, rhs_contracting_dims={1}, "
      'metadata={op_name="jit(_seed_batched)/vmap()/transpose" '
      'stack_frame_id=7}, backend_config={"sizes":["16"]}',
    )


def _inst(opcode: str, **attrs: str) -> hlo_records.HloInstruction:
  shape = hlo_records.Shape("f32", (2, 2), None)
  return hlo_records.HloInstruction("i", opcode, shape, (), None, attrs)


class AlgorithmPresetTest(absltest.TestCase):
  """As XLA prints them (xla/service/hlo_instruction.cc PrintAttributes:
  `algorithm=dot_tf32_tf32_f32`; a gemm's backend_config JSON
  precision_config with the PrecisionConfig.Algorithm enum name)."""

  def test_dot_attribute(self):
    self.assertEqual(
      _inst("dot", algorithm="dot_tf32_tf32_f32").algorithm_preset,
      "TF32_TF32_F32",
    )
    self.assertIsNone(_inst("dot").algorithm_preset)

  def test_gemm_backend_config(self):
    config = (
      '{"gemm_backend_config":{"precision_config":{"operand_precision":'
      '["DEFAULT","DEFAULT"],"algorithm":"ALG_DOT_BF16_BF16_F32_X3"}}}'
    )
    call = _inst("custom-call", backend_config=config)
    self.assertEqual(call.algorithm_preset, "BF16_BF16_F32_X3")
    unset = config.replace("ALG_DOT_BF16_BF16_F32_X3", "ALG_UNSET")
    self.assertIsNone(
      _inst("custom-call", backend_config=unset).algorithm_preset
    )


class KernelNamesTest(absltest.TestCase):
  def test_own_then_deduplicated(self):
    # XLA's SanitizeFunctionName: "." -> "_" (xla/service/llvm_ir).
    fusion = _inst("fusion")
    self.assertEqual(fusion.kernel_names, ("i",))
    dedup = hlo_records.HloInstruction(
      "loop_fusion.3",
      "fusion",
      hlo_records.Shape("f32", (2,)),
      (),
      None,
      {"metadata": '{deduplicated_name="loop_fusion.1"}'},
    )
    self.assertEqual(dedup.kernel_names, ("loop_fusion_3", "loop_fusion_1"))


class ScalarsTest(absltest.TestCase):
  def test_braced_fields_and_numbers(self):
    self.assertEqual(
      hlo_records.braced_fields('{op_name="a b" stack_frame_id=7}'),
      {"op_name": "a b", "stack_frame_id": "7"},
    )
    self.assertEqual(hlo_records.hlo_int(" -12 ", "x"), -12)
    with self.assertRaisesRegex(HloParseError, "bad frame id '1e3'"):
      hlo_records.hlo_int("1e3", "frame id")
    with self.assertRaisesRegex(HloParseError, "bad JSON"):
      hlo_records.json_value('{"a":')


if __name__ == "__main__":
  absltest.main()
