"""Tests of the HLO text parser, on fixtures and on real XLA output."""

from __future__ import annotations

import os

import pytest
from absl.testing import absltest, parameterized

from hloprobe.compile import cases, lowering, targets
from hloprobe.errors import HloParseError
from hloprobe.ir.hlo import parse_hlo_module, parse_instruction, parse_shape

_TESTDATA = os.path.join(os.path.dirname(__file__), "testdata")


def _fixture(name: str) -> str:
  with open(os.path.join(_TESTDATA, name)) as f:
    return f.read()


class ShapeTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("matrix", "f32[2,48]{1,0}", "f32", (2, 48), "{1,0}"),
    ("scalar", "f32[]", "f32", (), None),
    ("bf16", "bf16[8,128]{1,0}", "bf16", (8, 128), "{1,0}"),
    ("pred", "pred[3]{0}", "pred", (3,), "{0}"),
  )
  def test_array(self, text, dtype, dims, layout):
    shape = parse_shape(text)
    self.assertEqual(
      (shape.dtype, shape.dims, shape.layout), (dtype, dims, layout)
    )

  def test_tuple_with_index_comment(self):
    shape = parse_shape("(f32[2]{0}, /*index=1*/s32[])")
    self.assertTrue(shape.is_tuple)
    self.assertEqual([str(e) for e in shape.elements], ["f32[2]", "s32[]"])

  def test_bad_shape_names_the_text(self):
    with self.assertRaisesRegex(HloParseError, "bad shape 'q7\\[2\\]'"):
      parse_shape("q7[2]")


class InstructionTest(absltest.TestCase):
  def test_dot_attributes(self):
    inst = parse_instruction(
      "%dot.5 = f32[2,48]{1,0} dot(%a, %b), lhs_contracting_dims={1}, "
      "rhs_contracting_dims={1}, operand_precision={high,high}, "
      'metadata={op_name="jit(f)/dot_general" stack_frame_id=3}'
    )
    self.assertEqual(inst.opcode, "dot")
    self.assertEqual(inst.operands, ("a", "b"))
    self.assertEqual(inst.dims_attr("lhs_contracting_dims"), (1,))
    self.assertEqual(inst.attrs["operand_precision"], "{high,high}")
    self.assertEqual(inst.metadata["op_name"], "jit(f)/dot_general")

  def test_round_trips_through_printer(self):
    line = (
      "ROOT %c = f32[2]{0} custom-call(%a, %b), "
      'custom_call_target="__cublas$lt$matmul", '
      'backend_config={"gemm_backend_config":{"epilogue":"BIAS"}}'
    )
    inst = parse_instruction(line)
    self.assertEqual(inst.to_text(), line)
    self.assertEqual(
      inst.backend_config["gemm_backend_config"]["epilogue"], "BIAS"
    )

  def test_constant_literal(self):
    inst = parse_instruction("%c = f32[] constant(16)")
    self.assertEqual((inst.operands, inst.literal), ((), "16"))


class ModuleTest(absltest.TestCase):
  def test_a100_fixture(self):
    module = parse_hlo_module(_fixture("seed_a100_n2_default.hlo"))
    self.assertEqual(module.entry_name, "main.2")
    self.assertLen(module.entry.parameters(), 15)
    kinds = [
      i.backend_config["fusion_backend_config"]["kind"]
      for i in module.entry.instructions
      if i.backend_config.get("fusion_backend_config")
    ]
    self.assertEqual(kinds, ["__triton_nested_gemm_fusion"] * 3)
    dot = module.computations["gemm_fusion_dot_computation"].by_name()["dot.4"]
    self.assertEqual(module.source_location(dot), "<string>:16")

  @pytest.mark.compiles
  def test_instruction_counts_match_xla(self):
    """Every computation of a real optimized module has XLA's own count."""
    case = cases.get_case("seed_mlp")
    args = case.inputs_for(case.make_inputs(), 2)
    compiled = lowering.compile_case(
      case, args, "float32", targets.get_target("cpu")
    )
    xla_counts = lowering.xla_instruction_counts(compiled)
    if xla_counts is None:
      self.skipTest("this jaxlib does not expose HloModule.computations()")
    module = parse_hlo_module(compiled.optimized_hlo)
    ours = {c.name: len(c.instructions) for c in module.computations.values()}
    self.assertEqual(ours, xla_counts)
    # Printing every instruction back and parsing it again keeps the counts.
    for comp in module.computations.values():
      again = [parse_instruction(i.to_text()) for i in comp.instructions]
      self.assertEqual(
        [i.opcode for i in again], [i.opcode for i in comp.instructions]
      )


_PASS_DUMPS = os.path.join(
  os.path.dirname(__file__), "..", "sites", "testdata", "passes"
)
_COMPACT = """HloModule m

%body (p: (s32[], (f32[2]{0}, f32[3]{0}))) -> f32[2] {
  %p = (s32[], (f32[2]{0}, f32[3]{0})) parameter(0)
  %n = f32[2]{0} negate(%p#1#0)
  ROOT %a = f32[2]{0} add(%n, %p#1#0)
}

ENTRY %main (x: f32[2]) -> f32[2] {
  ROOT %x = f32[2]{0} parameter(0)
}
"""


class CompactGteTest(absltest.TestCase):
  """`%t#i` operands (xla_dump_compact_gte): jaxlib 0.12.0.1's pass dumps."""

  def test_nested_operand_gets_its_get_tuple_elements(self):
    body = parse_hlo_module(_COMPACT).computations["body"]
    self.assertEqual(
      [(i.name, i.opcode, i.operands) for i in body.instructions[:3]],
      [
        ("p", "parameter", ()),
        ("p#1", "get-tuple-element", ("p",)),
        ("p#1#0", "get-tuple-element", ("p#1",)),
      ],
    )
    gte = body.by_name()["p#1#0"]
    self.assertEqual((str(gte.shape), gte.attrs["index"]), ("f32[2]", "0"))
    self.assertLen(body.instructions, 5)  # one instruction per element

  def test_index_out_of_range_is_an_error(self):
    text = _COMPACT.replace("%p#1#0)", "%p#1#7)", 1)
    with self.assertRaisesRegex(HloParseError, "operand %p#1#7 is no element"):
      parse_hlo_module(text)

  def test_scan_body_of_jaxlib_0_12_0_1_dump(self):
    """The first pass dump of a scan: both dots read tuple elements."""
    folder = os.path.join(_PASS_DUMPS, "jaxlib01201_euler_scan_cpu_n2")
    (name,) = [n for n in os.listdir(folder) if ".0000." in n]
    with open(os.path.join(folder, name)) as f:
      text = f.read()
    self.assertIn("dot(%arg_tuple.1#1, %arg_tuple.1#2)", text)
    body = parse_hlo_module(text).computations["region_0.1"]
    dots = [i for i in body.instructions if i.opcode == "dot"]
    self.assertEqual(
      [d.operands for d in dots],
      [("arg_tuple.1#1", "arg_tuple.1#2"), ("mul.1", "arg_tuple.1#3")],
    )
    by_name = body.by_name()
    self.assertEqual(
      [str(by_name[f"arg_tuple.1#{i}"].shape) for i in (1, 2, 3)],
      ["f32[2,64]", "f32[64,64]", "f32[64,64]"],
    )


class MalformedTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("no_header", "ENTRY %m {\n}\n", "not an HLO module"),
    (
      "truncated",
      "HloModule m\n\nENTRY %main {\n  %p = f32[] parameter(0)\n",
      "not closed",
    ),
    (
      "no_entry",
      "HloModule m\n\n%c {\n  ROOT %p = f32[] parameter(0)\n}\n",
      "no ENTRY",
    ),
    (
      "garbage_line",
      "HloModule m\n\nENTRY %main {\n  what is this\n}\n",
      "line 4",
    ),
    (
      "bad_shape",
      "HloModule m\n\nENTRY %main {\n  ROOT %p = f99[] parameter(0)\n}\n",
      "bad shape",
    ),
  )
  def test_clear_error(self, text, message):
    with self.assertRaisesRegex(HloParseError, message):
      parse_hlo_module(text)


if __name__ == "__main__":
  absltest.main()
