"""The answer in words and JSON, from hand-built records (no compile).

Expected strings are written here from the records' fields, as the issue
words the answer ("row 0 is not batch-invariant on a100 under float32:
identical for n = 2-8; n = 1 differs (...); n = 64 differs (...)").
"""

from __future__ import annotations

import jsonschema
from absl.testing import absltest

from hloprobe.invariance import (
  Invariance,
  answer_lines,
  first_lines,
  invariance_json,
)
from hloprobe.invariance.answer import Boundary
from hloprobe.invariance.kernel_identity import RowKernel
from hloprobe.invariance.pin import Pin, PinCandidate
from hloprobe.invariance.rows import ROW0, RowClasses
from hloprobe.invariance.words import pin_lines
from hloprobe.report import schema_document

_SIZES = (1, 2, 8, 64)


def _gpu() -> Invariance:
  classes = ((2, 8), (1,), (64,))
  return Invariance(
    "m",
    "a100",
    "float32",
    "baseline",
    "kernel identity",
    (RowClasses(ROW0, classes),),
    (
      Boundary(
        1, 2, ("sites 0-1 multiply+reduce after dot strength reduction",)
      ),
      Boundary(64, 2, ("site 1 Triton gemm split-K 2",)),
    ),
    {
      n: (
        RowKernel("triton_softmax.1", "reduction", (), "s", f"tile 1x256 n{n}"),
      )
      for n in _SIZES
    },
    False,
    None,
    _SIZES,
  )


class WordsTest(absltest.TestCase):
  def test_gpu_answer_first_line(self):
    (line,) = answer_lines([_gpu()])
    self.assertEqual(
      line,
      "row 0 (every row alike) is not batch-invariant on a100 under float32 "
      "(by kernel identity): same per-row arithmetic for n = 2-8; n = 1 "
      "differs (sites 0-1 multiply+reduce after dot strength reduction); "
      "n = 64 differs (site 1 Triton gemm split-K 2)",
    )

  def test_cpu_answer_with_ulps_and_invariant_anchor(self):
    a = Invariance(
      "m",
      "cpu",
      "float32",
      "baseline",
      "run",
      (
        RowClasses(ROW0, ((2, 8), (1,), (64,)), (0, 31, 9)),
        RowClasses("anchor row", (_SIZES,), (0,)),
      ),
      (Boundary(1, 2, (), "why one"), Boundary(64, 2, (), "why 64")),
      invariant=False,
      sizes=_SIZES,
    )
    row0, anchor = answer_lines([a])
    self.assertEqual(
      row0,
      "row 0 is not batch-invariant on cpu under float32 (bits compared): "
      "identical for n = 2-8; n = 1 differs by 31 ULP (why one); n = 64 "
      "differs by 9 ULP (why 64)",
    )
    self.assertTrue(anchor.startswith("the anchor row (at the first, middle"))
    self.assertIn("is batch-invariant on cpu", anchor)

  def test_unknown_says_why(self):
    a = Invariance(
      "m",
      "t4",
      "float32",
      "baseline",
      "unknown",
      (),
      invariant=None,
      why="cuBLAS: unknown without a device",
      sizes=(1, 2),
    )
    self.assertEqual(
      answer_lines([a]),
      [
        "whether row 0 is batch-invariant on t4 under float32 is unknown: "
        "cuBLAS: unknown without a device"
      ],
    )

  def test_pin_lines_passing_first(self):
    c = PinCandidate(
      "no_split_k",
      ("--xla_gpu_experimental_force_split_k=1",),
      words="one split",
    )
    bad = PinCandidate("float32", precision="float32", words="f32")
    pins = (
      Pin(
        "m",
        "a100",
        "float32",
        "baseline",
        bad,
        False,
        "still split",
        "",
        "cmd0",
      ),
      Pin(
        "m",
        "a100",
        "float32",
        "baseline",
        c,
        True,
        "one class",
        "site 1",
        "cmd1",
      ),
    )
    lines = pin_lines(pins)
    self.assertEqual(
      lines[0],
      "Do: pin m on a100 under float32 with "
      "XLA_FLAGS='--xla_gpu_experimental_force_split_k=1' (in JAX: "
      "jax.jit(f).lower(*args).compile(compiler_options="
      "{'xla_gpu_experimental_force_split_k': '1'})) (one split; cost: "
      "site 1): cmd1",
    )
    self.assertEqual(lines[1:], ["  fails: float32: still split"])

  def test_first_lines_empty_when_not_asked(self):
    self.assertEqual(first_lines(()), [])

  def test_json_validates_in_results_schema(self):
    c = PinCandidate("no_split_k", ("--x=1",))
    pin = Pin("m", "a100", "float32", "baseline", c, None, "r", "", "cmd")
    doc = {
      "schema": "hloprobe.results",
      "schema_version": 3,
      "created": "2026-12-05T09:00:00",
      "jax": "0.12.0",
      "jaxlib": "0.12.0.1",
      "host": None,
      "configs": [],
      "invariance": invariance_json([_gpu()], [pin]),
    }
    jsonschema.validate(doc, schema_document())
    group = doc["invariance"]["groups"][0]
    self.assertIs(group["invariant"], False)
    self.assertEqual(group["rows"][0]["classes"], [[2, 8], [1], [64]])
    doc["invariance"]["groups"][0]["basis"] = "guess"
    with self.assertRaises(jsonschema.ValidationError):
      jsonschema.validate(doc, schema_document())


if __name__ == "__main__":
  absltest.main()
